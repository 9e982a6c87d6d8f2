/*
 * The shard calls of one or several variables on their way to the ps:
 * grouped by ps, one request per ps (several calls travel as one
 * VAR_MULTI, each a part), sent over the ps's bulk port whatever their
 * size (nng where it has none: TLS, inproc), every ps's request before
 * any reply is waited for, the replies taken as they come. Each call gets
 * its reply or its error (shard_done); the caller waits for all.
 * Thread-safe: nothing here outlives a run but the calls' replies.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bulk.h"
#include "util.h"
#include "variable_impl.h"

typedef struct fanout {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int             pending; /* protected by mu */
} fanout;

shard_call *
pasci_shard_calls_new(const pasco_variable *v, int method)
{
	shard_call *calls =
	    pasci_calloc((size_t) v->nshards + 1, sizeof(*calls));
	for (int32_t i = 0; calls != NULL && i < v->nshards; i++) {
		pasci_wire_builder_init(&calls[i].b, (pasci_method) method);
	}
	return calls;
}

void
pasci_shard_calls_free(const pasco_variable *v, shard_call *calls)
{
	for (int32_t i = 0; calls != NULL && i < v->nshards; i++) {
		pasci_wire_builder_fini(&calls[i].b);
		if (calls[i].has_reply) {
			pasci_wire_msg_fini(&calls[i].reply);
		}
	}
	free(calls);
}

static void
shard_done(void *arg, int err, pasci_wire_msg *reply, const char *detail)
{
	shard_call *c = arg;
	fanout     *f = c->fan;
	if (reply != NULL && reply->hdr->status != 0) {
		err = reply->hdr->status;
		pasci_fmt(
		    c->detail, sizeof(c->detail), "%s", reply->hdr->error);
		pasci_wire_msg_fini(reply);
		reply = NULL;
	} else if (err != 0) {
		pasci_fmt(c->detail, sizeof(c->detail), "%s", detail);
		c->lost = err == PASCO_ETIMEDOUT || err == PASCO_EUNAVAILABLE;
	}
	c->err = err;
	if (reply != NULL) {
		c->reply     = *reply;
		c->has_reply = true;
	}
	pthread_mutex_lock(&f->mu);
	if (--f->pending == 0) {
		pthread_cond_signal(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
}

/* One request to one ps: its shard calls (several travel as one
 * VAR_MULTI, each a part), sent over the ps's bulk port when it has one
 * (the cheapest per message), else over nng. */
typedef struct ps_request {
	pasci_rpc_client  *client;
	int64_t            timeout_ms;
	shard_call       **calls;
	size_t             n, cap;
	size_t             bytes; /* the calls' tensors, both ways */
	pasci_wire_builder multi; /* n > 1 */
	bool               bulk;  /* pending holds the bulk request sent */
	pasci_bulk_pending pending;
} ps_request;

/* A request to one ps carries at most this many tensor bytes, both ways
 * counted: more calls to that ps go in another request beside it (a ps
 * answers a VAR_MULTI whole, so a big one would hold all its replies at
 * once; it refuses parts past PASCI_MULTI_REPLY_MAX). */
#define REQUEST_MAX_BYTES ((size_t) 256 << 20)

/* What call c (shard i of v) moves: its request's tensors, and for a read
 * the shard, for a gather its rows. */
static size_t
call_bytes(const pasco_variable *v, int32_t i, const shard_call *c)
{
	size_t row   = pasci_variable_row_bytes(v);
	size_t bytes = 0;
	if (c->b.hdr.method == PASCI_METHOD_VAR_READ) {
		bytes = v->rank == 0 ? row : (size_t) v->shards[i].rows * row;
	} else if (c->b.hdr.method == PASCI_METHOD_VAR_GATHER &&
	           c->b.ntensors == 1) {
		bytes = (size_t) c->b.tensors[0]->count * row;
	}
	for (size_t k = 0; k < c->b.ntensors; k++) {
		bytes += c->b.tensors[k]->nbytes;
	}
	return bytes;
}

/* The reply (or failure) of r, given to its calls; reply is taken over.
 * Once its last call is done, r may be gone: nothing of it is read
 * after. */
static void
request_done(void *arg, int err, pasci_wire_msg *reply, const char *detail)
{
	ps_request  *r     = arg;
	size_t       n     = r->n;
	shard_call **calls = r->calls;
	char         why[300];
	if (n == 1) {
		shard_done(calls[0], err, reply, detail);
		return;
	}
	if (err == 0 && reply->hdr->status != 0) {
		err = reply->hdr->status;
		pasci_fmt(why, sizeof(why), "%s", reply->hdr->error);
		detail = why;
	} else if (err == 0 && reply->ntensors != n) {
		err = PASCO_EPROTO;
		pasci_fmt(why, sizeof(why),
		    "%zu requests in one were answered with %zu replies", n,
		    reply->ntensors);
		detail = why;
	}
	for (size_t k = 0; k < n; k++) {
		pasci_wire_msg part;
		int            rv = err;
		if (rv == 0 &&
		    (rv = pasci_wire_decode_part(
		         &part, reply->tensors[k], why, sizeof(why))) != 0) {
			detail = why;
		}
		shard_done(calls[k], rv, rv == 0 ? &part : NULL, detail);
	}
	if (reply != NULL) {
		pasci_wire_msg_fini(reply);
	}
}

/* Sends r: over the ps's bulk port (r->bulk: its reply is then waited for
 * by request_finish), else over nng (request_done runs when it
 * arrives). */
static void
request_send(ps_request *r)
{
	pasci_wire_builder *b = &r->calls[0]->b;
	char                detail[300];
	nng_msg            *msg;
	int                 rv;
	if ((rv = pasci_rpc_client_wait_for_call(r->client, r->timeout_ms)) !=
	    0) {
		/* never reached within the deadline (a cut link, or a ps
		 * not up yet), or its connection lost (a ps gone) */
		if (rv == PASCO_ETIMEDOUT) {
			pasci_fmt(detail, sizeof(detail),
			    "the ps did not answer within %lld ms",
			    (long long) r->timeout_ms);
		} else {
			rv = PASCO_EUNAVAILABLE;
			pasci_fmt(detail, sizeof(detail),
			    "the connection to the ps is lost");
		}
		request_done(r, rv, NULL, detail);
		return;
	}
	if (r->n > 1) {
		b = &r->multi;
		pasci_wire_builder_init(b, PASCI_METHOD_VAR_MULTI);
		for (size_t k = 0; k < r->n; k++) {
			pasci_wire_add_part(b, &r->calls[k]->b);
		}
	}
	rv = pasci_bulk_begin(
	    r->client, b, r->timeout_ms, &r->pending, detail, sizeof(detail));
	if (rv == 0) {
		r->bulk = true;
	} else if (rv != PASCO_ENOTFOUND) {
		request_done(r, rv, NULL, detail);
	} else if (pasci_wire_encode(b, &msg) != 0) { /* no bulk: nng */
		request_done(r, PASCO_ENOMEM, NULL, "out of memory");
	} else {
		pasci_rpc_call_async(
		    r->client, msg, r->timeout_ms, request_done, r);
	}
	if (r->n > 1) {
		pasci_wire_builder_fini(b); /* sent or copied */
	}
}

static void
request_finish(ps_request *r)
{
	pasci_wire_msg reply;
	char           detail[300];
	int            rv =
	    pasci_bulk_finish(&r->pending, &reply, detail, sizeof(detail));
	request_done(r, rv, rv == 0 ? &reply : NULL, detail);
}

/* Adds call c (shard i of v) to the request to its ps, *reqs (of *nreqs)
 * growing. */
static int
request_add(ps_request **reqs, size_t *nreqs, size_t *cap, pasco_variable *v,
    int32_t i, shard_call *c)
{
	ps_request *r     = NULL;
	size_t      bytes = call_bytes(v, i, c);
	for (size_t k = *nreqs; k > 0 && r == NULL; k--) { /* the newest */
		r = (*reqs)[k - 1].client == v->shards[i].client
		        ? &(*reqs)[k - 1]
		        : NULL;
	}
	if (r != NULL && r->bytes + bytes > REQUEST_MAX_BYTES) {
		r = NULL; /* full: another request to that ps */
	}
	if (r == NULL) {
		if (*nreqs == *cap) {
			size_t      want = *cap == 0 ? 4 : 2 * *cap;
			ps_request *grown =
			    realloc(*reqs, want * sizeof(**reqs));
			if (grown == NULL) {
				return PASCO_ENOMEM;
			}
			*reqs = grown;
			*cap  = want;
		}
		r  = &(*reqs)[(*nreqs)++];
		*r = (ps_request){.client = v->shards[i].client,
		    .timeout_ms           = v->timeout_ms};
	}
	if (r->n == r->cap) {
		size_t       want = r->cap == 0 ? 4 : 2 * r->cap;
		shard_call **grown =
		    realloc(r->calls, want * sizeof(*r->calls));
		if (grown == NULL) {
			return PASCO_ENOMEM;
		}
		r->calls = grown;
		r->cap   = want;
	}
	c->b.hdr.name    = v->shards[i].name;
	r->calls[r->n++] = c;
	r->bytes += bytes;
	r->timeout_ms =
	    v->timeout_ms > r->timeout_ms ? v->timeout_ms : r->timeout_ms;
	return PASCO_OK;
}

/* The ps this thread's requests last could not reach, plus 1 (0: none),
 * and why. */
static _Thread_local int32_t unreachable_ps;
static _Thread_local int     unreachable_err;
static _Thread_local char    unreachable_why[256];

int32_t
pasci_ps_unreachable_take(int *err, char *why, size_t len)
{
	int32_t ps     = unreachable_ps - 1;
	unreachable_ps = 0;
	*err           = ps >= 0 ? unreachable_err : 0;
	pasci_fmt(why, len, "%s", ps >= 0 ? unreachable_why : "");
	return ps;
}

bool
pasci_ps_unreachable_parse(const char *msg, int32_t *ps, int32_t *worker)
{
	int p, w;
	if (msg == NULL ||
	    sscanf(msg, PASCI_PS_UNREACHABLE_FMT, &p, &w) != 2 || p < 0 ||
	    w < 0) {
		return false;
	}
	*ps     = p;
	*worker = w;
	return true;
}

/* The first failed call of v, recorded as v's error. */
static int
calls_check(pasco_variable *v, shard_call *calls)
{
	int rv = PASCO_OK;
	for (int32_t i = 0; i < v->nshards && rv == 0; i++) {
		if (calls[i].used && calls[i].lost) {
			unreachable_ps  = v->shards[i].ps_task + 1;
			unreachable_err = calls[i].err;
			pasci_fmt(unreachable_why, sizeof(unreachable_why),
			    "%s", calls[i].detail);
		}
		if (calls[i].used && calls[i].err != 0) {
			rv = pasci_variable_fail(v, calls[i].err,
			    "variable '%s' (%s on "
			    "ps %d): %s",
			    v->name, v->shards[i].name, v->shards[i].ps_task,
			    calls[i].detail);
		}
	}
	return rv;
}

int
pasci_shard_calls_run(pasco_variable *v, shard_call *calls)
{
	return pasci_shard_calls_run_many(1, &v, &calls);
}

int
pasci_shard_calls_run_many(
    size_t n, pasco_variable *const *vars, shard_call **calls)
{
	fanout      f;
	ps_request *reqs  = NULL;
	size_t      nreqs = 0, cap = 0;
	int         rv = PASCO_OK;

	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	f.pending = 0;
	for (size_t k = 0; k < n && rv == 0; k++) {
		for (int32_t i = 0; i < vars[k]->nshards && rv == 0; i++) {
			shard_call *c = &calls[k][i];
			if (c->used) {
				c->fan = &f;
				f.pending++;
				rv = request_add(
				    &reqs, &nreqs, &cap, vars[k], i, c);
			}
		}
	}
	if (rv != 0) { /* nothing sent */
		f.pending = 0;
		rv        = pasci_variable_fail(vars[0], rv, "out of memory");
	}
	/* every request on its way, written together (one system call: the
	 * ps it wakes do not take this thread's CPU between two writes), then
	 * the bulk replies waited for (nng's come on nng's threads): the ps
	 * answer together */
	pasci_bulk_batch_start();
	for (size_t k = 0; k < nreqs && rv == 0; k++) {
		request_send(&reqs[k]);
	}
	{
		/* without memory for the list, the writes are still made; a
		 * failed one is then found by its finish */
		pasci_bulk_pending **sent =
		    pasci_calloc(nreqs + 1, sizeof(*sent));
		size_t ns = 0;
		for (size_t k = 0; sent != NULL && k < nreqs; k++) {
			if (reqs[k].bulk) {
				sent[ns++] = &reqs[k].pending;
			}
		}
		pasci_bulk_batch_send(sent, ns);
		free(sent);
	}
	{ /* one wake-up for all the replies, where it can */
		pasci_bulk_pending *waiting[16];
		size_t              nw = 0;
		for (size_t k = 0; k < nreqs && nw < 16; k++) {
			if (reqs[k].bulk) {
				waiting[nw++] = &reqs[k].pending;
			}
		}
		pasci_bulk_wait_all(waiting, nw);
	}
	for (;;) { /* each reply as it comes, one wake-up for several */
		pasci_bulk_pending *waiting[16];
		ps_request         *owner[16];
		size_t              nw = 0;
		for (size_t k = 0; k < nreqs && rv == 0 && nw < 16; k++) {
			if (reqs[k].bulk) {
				owner[nw]     = &reqs[k];
				waiting[nw++] = &reqs[k].pending;
			}
		}
		if (nw == 0) {
			break;
		}
		ps_request *r = owner[pasci_bulk_wait_any(waiting, nw)];
		r->bulk       = false;
		request_finish(r);
	}
	pthread_mutex_lock(&f.mu);
	while (f.pending > 0) {
		pthread_cond_wait(&f.cv, &f.mu);
	}
	pthread_mutex_unlock(&f.mu);
	pthread_cond_destroy(&f.cv);
	pthread_mutex_destroy(&f.mu);
	for (size_t k = 0; k < nreqs; k++) {
		free(reqs[k].calls);
	}
	free(reqs);
	for (size_t k = 0; k < n && rv == 0; k++) {
		rv = calls_check(vars[k], calls[k]);
	}
	return rv;
}
