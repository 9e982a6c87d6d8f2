/*
 * The worker server: runs step functions (RUN) and builds, reads or drops
 * per-worker resources (RESOURCE_CREATE / RESOURCE_READ /
 * RESOURCE_RELEASE): datasets, and per-worker variables. Requests run on
 * the RPC server's handler threads, so several closures run at once; the
 * resource table and the ps clients are shared and thread-safe. A worker
 * holds nothing that cannot be rebuilt.
 */
#include "worker_server.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "bulk.h"
#include "call.h"
#include "dataset_impl.h"
#include "metrics_registry.h"
#include "ops_impl.h"
#include "pasco/server.h"
#include "registry.h"
#include "resources.h"
#include "rpc.h"
#include "tls.h"
#include "util.h"
#include "variable_impl.h"

struct worker_server {
	pasci_call_env env; /* what calls see; set at start, then read only */
	pasci_rpc_server  *rpc;    /* set under rpc_mu: bulk requests wait */
	pasci_bulk_server *bulk;   /* closures from the chief, beside rpc */
	pasci_cancel_mark  cancel; /* env.cancel; its own lock */
	pthread_mutex_t    rpc_mu;
	pthread_cond_t     rpc_cv;   /* rpc was set, or stopping */
	bool               stopping; /* under rpc_mu */
};

static nng_msg *
run_reply(pasco_call *call, const pasci_wire_msg *req)
{
	pasci_wire_builder b;
	nng_msg           *reply;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	if (req->hdr->want_result && call->result != NULL) {
		pasci_wire_add_value(&b, call->result);
	}
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = pasci_wire_status_reply(PASCO_ENOMEM,
		    "out of memory "
		    "encoding the result of '%s'",
		    call->fn_name);
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

/* Why a step function failed: its own message (pasco_call_fail), else
 * what an op or the data layer said on this thread during the call (a
 * step that passes their error on as it is: the op and the shapes it got,
 * the file and what is wrong with it), else the code's name. */
static const char *
run_error(const pasco_call *call, int rv)
{
	return call->error[0] != 0        ? call->error
	       : pasci_ops_error[0] != 0  ? pasci_ops_error
	       : pasci_data_error[0] != 0 ? pasci_data_error
	                                  : pasco_strerror(rv);
}

/* A closure that sums its calls' results (sum_results): sums gets each
 * call's n numbers added in. */
typedef struct run_sums {
	double *v;
	size_t  n;
} run_sums;

/* The number of call's result at i: an element of a tensor, or a list's
 * item that is a scalar tensor. */
static bool
result_number(const pasco_value *v, size_t i, double *x)
{
	const pasco_tensor *t = pasco_value_as_tensor(v);
	if (t == NULL) {
		t = pasco_value_as_tensor(pasco_value_item(v, i));
		i = 0;
		if (t == NULL || t->count != 1) {
			return false;
		}
	}
	*x = pasco_tensor_get(t, (int64_t) i);
	return true;
}

static int
sums_add(pasco_call *call, run_sums *s)
{
	const pasco_value  *v = call->result;
	const pasco_tensor *t = pasco_value_as_tensor(v);
	size_t              n = t != NULL ? (size_t) t->count
	                        : pasco_value_kind_of(v) == PASCO_VALUE_LIST
	                            ? pasco_value_size(v)
	                            : 0;
	if (n == 0 || (s->v != NULL && n != s->n)) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "it returned %zu number%s (%s); a closure that sums its "
		    "calls' results needs the same count of numbers (a tensor "
		    "or a list of scalars) from every call%s",
		    n, n == 1 ? "" : "s",
		    v == NULL   ? "no result"
		    : t != NULL ? "a tensor"
		                : "a list",
		    s->v != NULL ? ", and its first returned more or fewer"
		                 : "");
	}
	if (s->v == NULL && (s->v = pasci_calloc(n, sizeof(*s->v))) == NULL) {
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		double x;
		if (!result_number(v, i, &x)) {
			return pasco_call_fail(call, PASCO_EINVAL,
			    "item %zu of its result is not a scalar tensor; a "
			    "closure that sums its calls' results needs "
			    "numbers",
			    i);
		}
		s->v[i] += x;
	}
	return PASCO_OK;
}

/* The closure's result: the sums, then the count of calls. */
static int
sums_return(pasco_call *call, run_sums *s, uint32_t calls)
{
	pasco_tensor *t;
	if (pasco_tensor_alloc(
	        &t, PASCO_F64, 1, (int64_t[]){(int64_t) s->n + 1}) != 0) {
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->n; i++) {
		pasco_tensor_set(t, (int64_t) i, s->v[i]);
	}
	pasco_tensor_set(t, (int64_t) s->n, calls);
	pasco_call_return(call, pasco_value_tensor(t));
	return PASCO_OK;
}

/* Runs fn reps times, back to back (a packed closure): the last result is
 * the closure's, or the sum of them all (sum); the first error ends it.
 * *k: the calls made. */
static int
run_calls(
    pasco_call *call, pasco_function fn, uint32_t reps, bool sum, uint32_t *k)
{
	run_sums s  = {0};
	int      rv = PASCO_OK;
	for (*k = 0; *k < reps && rv == 0; (*k)++) {
		call->repetition    = *k;
		pasci_data_error[0] = 0;
		pasci_ops_error[0]  = 0;
		if (pasco_call_is_cancelled(call)) {
			rv = pasco_call_fail(call, PASCO_ECANCELLED,
			    "cancelled by the coordinator (an earlier closure "
			    "failed) before call %u of %u",
			    *k + 1, reps);
		} else if ((rv = fn(call)) == 0 && sum) {
			rv = sums_add(call, &s);
		}
	}
	if (rv == 0 && sum) {
		rv = sums_return(call, &s, reps);
	}
	free(s.v);
	return rv;
}

static nng_msg *
worker_run(worker_server *w, const pasci_wire_msg *req, int *status)
{
	pasco_call     call = {.env = &w->env, .fn_name = req->hdr->name};
	pasco_function fn   = pasci_function_find(req->hdr->name);
	nng_msg       *reply;
	int            rv;

	pasci_metric_add(PASCI_M_WORKER_CLOSURES, 1);
	if (fn == NULL) {
		char names[512];
		*status = PASCO_ENOTFOUND;
		return pasci_wire_status_reply(PASCO_ENOTFOUND,
		    "function '%s' "
		    "is not registered on worker %d (registered: %s)",
		    req->hdr->name, w->env.index,
		    pasci_function_names(names, sizeof(names)));
	}
	uint32_t reps = req->hdr->repeat > 1 ? req->hdr->repeat : 1, k = 0;
	int32_t  lost;
	int      how;
	char     why[256];
	call.closure_id = req->hdr->closure_id;
	pasci_ps_unreachable_take(&how, why, sizeof(why)); /* earlier ones */
	if ((rv = pasci_call_bind(&call, req)) == 0) {
		/* A packed closure: the calls run back to back, the first
		 * error ends it, and so does the coordinator's cancel. */
		rv = run_calls(&call, fn, reps, req->hdr->sum_results, &k);
	}
	if (rv != 0 &&
	    (lost = pasci_ps_unreachable_take(&how, why, sizeof(why))) >= 0) {
		/* the link's failure, or the ps's; not the function's: the
		 * coordinator decides which (docs/guide.md, "When processes
		 * fail") */
		pasci_log(PASCI_LOG_WARN,
		    PASCI_PS_UNREACHABLE_FMT ": %s (closure '%s')", lost,
		    w->env.index, why, req->hdr->name);
		reply = pasci_wire_status_reply(how,
		    PASCI_PS_UNREACHABLE_FMT ": function '%s' failed: %s",
		    lost, w->env.index, req->hdr->name, run_error(&call, rv));
		rv    = how;
	} else if (rv != 0 && reps > 1) {
		reply = pasci_wire_status_reply(rv,
		    "function '%s' failed on worker %d (call %u of %u in its "
		    "closure): %s",
		    req->hdr->name, w->env.index, k, reps,
		    run_error(&call, rv));
	} else if (rv != 0) {
		reply = pasci_wire_status_reply(rv,
		    "function '%s' failed on "
		    "worker %d: %s",
		    req->hdr->name, w->env.index, run_error(&call, rv));
	} else {
		reply = run_reply(&call, req);
	}
	pasci_call_fini(&call);
	*status = rv;
	return reply;
}

/* RESOURCE_CREATE with want_result: a per-worker variable, the tensor
 * that step function `name` returns, called here with no argument. */
static nng_msg *
worker_create_value(worker_server *w, const pasci_wire_msg *req)
{
	pasco_call     call = {.env = &w->env, .fn_name = req->hdr->name};
	pasco_function fn   = pasci_function_find(req->hdr->name);
	pasco_tensor  *copy = NULL;
	int            rv;
	if (fn == NULL) {
		char names[512];
		return pasci_wire_status_reply(PASCO_ENOTFOUND,
		    "function '%s' (a per-worker variable's initializer) is "
		    "not registered on worker %d (registered: %s)",
		    req->hdr->name, w->env.index,
		    pasci_function_names(names, sizeof(names)));
	}
	if ((rv = fn(&call)) != 0) {
		pasci_call_fini(&call);
		return pasci_wire_status_reply(rv,
		    "per-worker variable initializer '%s' failed on worker "
		    "%d: %s",
		    req->hdr->name, w->env.index,
		    call.error[0] ? call.error : pasco_strerror(rv));
	}
	if (pasco_value_as_tensor(call.result) == NULL) {
		pasci_call_fini(&call);
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "per-worker variable initializer '%s' returned no tensor "
		    "on worker %d",
		    req->hdr->name, w->env.index);
	}
	/* a copy of its own: closures add to it in place */
	rv = pasco_tensor_copy(&copy, pasco_value_as_tensor(call.result));
	pasci_call_fini(&call);
	if (rv == 0) {
		rv = pasci_resource_table_put_value(
		    w->env.resources, req->hdr->resource, copy);
	}
	return pasci_wire_status_reply(rv, "%s", rv ? "out of memory" : "");
}

/* RESOURCE_READ: a copy of a per-worker variable's value. */
static nng_msg *
worker_read_value(worker_server *w, const pasci_wire_msg *req)
{
	resource *r =
	    pasci_resource_table_hold(w->env.resources, req->hdr->resource);
	pasco_tensor      *t = NULL;
	pasci_wire_builder b;
	nng_msg           *reply = NULL;
	if (r == NULL || pasci_resource_value_read(r, &t) != 0) {
		pasci_resource_release(r);
		return pasci_wire_status_reply(PASCO_ENOTFOUND,
		    "per-worker variable %llu does not exist on worker %d",
		    (unsigned long long) req->hdr->resource, w->env.index);
	}
	pasci_resource_release(r);
	pasci_wire_builder_init(&b, PASCI_METHOD_RESOURCE_READ);
	pasci_wire_add_tensor(&b, t, NULL);
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = pasci_wire_status_reply(PASCO_ENOMEM,
		    "out of memory reading a per-worker variable");
	}
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	return reply;
}

static nng_msg *
worker_create_resource(worker_server *w, const pasci_wire_msg *req)
{
	pasco_dataset_context ctx = {
	    w->env.index, w->env.num_workers, 0, NULL};
	pasco_dataset *ds = NULL;
	int            rv;

	if (req->hdr->want_result) {
		return worker_create_value(w, req);
	}
	if (!pasci_dataset_known(req->hdr->name)) {
		char names[512];
		return pasci_wire_status_reply(PASCO_ENOTFOUND,
		    "dataset "
		    "factory '%s' is not registered on worker %d (registered: "
		    "%s)",
		    req->hdr->name, w->env.index,
		    pasci_dataset_names(names, sizeof(names)));
	}
	ctx.argv            = pasco_program_args(&ctx.argc);
	pasci_data_error[0] = 0; /* what the factory says, if anything */
	if ((rv = pasci_dataset_build(req->hdr->name, &ctx, &ds)) != 0 ||
	    ds == NULL) {
		pasco_dataset_free(ds);
		return pasci_wire_status_reply(rv != 0 ? rv : PASCO_EINVAL,
		    "dataset factory '%.96s%s' failed on worker %d: %s%s%s",
		    req->hdr->name, strlen(req->hdr->name) > 96 ? "..." : "",
		    w->env.index,
		    rv != 0 ? pasco_strerror(rv) : "it returned no dataset",
		    pasci_data_error[0] != 0 ? ": " : "", pasci_data_error);
	}
	rv =
	    pasci_resource_table_put(w->env.resources, req->hdr->resource, ds);
	return pasci_wire_status_reply(rv, "%s", rv ? "out of memory" : "");
}

/* One part of a batch: a whole RUN message, run here; its whole reply.
 * *status: the run's outcome. */
static nng_msg *
batch_part(worker_server *w, const pasco_tensor *part, int *status)
{
	pasci_wire_msg sub;
	nng_msg       *m, *reply;
	char           err[512];
	*status = PASCO_EPROTO;
	if (part->dtype != PASCO_U8 || part->rank != 1) {
		return pasci_wire_status_reply(
		    PASCO_EPROTO, "a part of a batch is not a u8 vector");
	}
	if (nng_msg_alloc(&m, part->nbytes) != 0) {
		*status = PASCO_ENOMEM;
		return pasci_wire_status_reply(PASCO_ENOMEM, "out of memory");
	}
	memcpy(nng_msg_body(m), part->data, part->nbytes);
	if (pasci_wire_decode(&sub, m, err, sizeof(err)) != 0) {
		return pasci_wire_status_reply(
		    PASCO_EPROTO, "bad part of a batch: %s", err);
	}
	reply = sub.hdr->method == PASCI_METHOD_RUN
	            ? worker_run(w, &sub, status)
	            : pasci_wire_status_reply(PASCO_EPROTO,
	                  "a batch may only hold RUN messages, not method %d",
	                  (int) sub.hdr->method);
	pasci_wire_msg_fini(&sub);
	return reply;
}

/* The reply of a part not run because an earlier one failed. */
static nng_msg *
not_run_reply(void)
{
	pasci_wire_builder b;
	nng_msg           *reply;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.status  = PASCO_ECANCELLED;
	b.hdr.error   = "cancelled: an earlier closure of its batch failed";
	b.hdr.not_run = true;
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

/* RUN_BATCH: the closures run in order, each reply a part of ours; after
 * a failure the rest do not run (answered not_run): the coordinator puts
 * them back on its queue, where the failure's error cancels them, unless
 * the failed one is retried. */
static nng_msg *
worker_run_batch(worker_server *w, const pasci_wire_msg *req)
{
	pasci_wire_builder b;
	nng_msg           *reply  = NULL;
	bool               ok     = true;
	int                status = PASCO_OK;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN_BATCH);
	for (size_t i = 0; i < req->ntensors && ok; i++) {
		nng_msg      *r = status == PASCO_OK
		                      ? batch_part(w, req->tensors[i], &status)
		                      : not_run_reply();
		pasco_tensor *t = NULL;
		ok              = r != NULL && pasci_wire_msg_view(r, &t) == 0;
		if (ok) {
			pasci_wire_add_tensor(&b, t, NULL);
		}
		pasco_tensor_release(t);
	}
	if (!ok || pasci_wire_encode(&b, &reply) != 0) {
		reply = pasci_wire_status_reply(
		    PASCO_ENOMEM, "out of memory answering a batch");
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

static nng_msg *
worker_handle(void *arg, const pasci_wire_msg *req)
{
	worker_server *w = arg;
	int            status;
	switch (req->hdr->method) {
	case PASCI_METHOD_RUN:
		return worker_run(w, req, &status);
	case PASCI_METHOD_RUN_BATCH:
		return worker_run_batch(w, req);
	case PASCI_METHOD_RESOURCE_CREATE:
		return worker_create_resource(w, req);
	case PASCI_METHOD_RESOURCE_READ:
		return worker_read_value(w, req);
	case PASCI_METHOD_CANCEL:
		/* one coordinator's ids, [lo, hi] in its block of 2^32
		 * (coordinator/cancel.c): a wider range would cancel the
		 * next coordinator's closures too */
		if (req->hdr->resource == 0 ||
		    req->hdr->closure_id < req->hdr->resource ||
		    req->hdr->resource >> 32 != req->hdr->closure_id >> 32) {
			return pasci_wire_status_reply(PASCO_EINVAL,
			    "a CANCEL names closure ids of one coordinator "
			    "(one block of 2^32); got %llu to %llu",
			    (unsigned long long) req->hdr->resource,
			    (unsigned long long) req->hdr->closure_id);
		}
		pasci_cancel_mark_set(
		    &w->cancel, req->hdr->resource, req->hdr->closure_id);
		return pasci_wire_status_reply(PASCO_OK, "%s", "");
	case PASCI_METHOD_RESOURCE_RELEASE:
		pasci_resource_table_remove(
		    w->env.resources, req->hdr->resource);
		return pasci_wire_status_reply(PASCO_OK, "%s", "");
	default:
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "a worker does not "
		    "serve method %d",
		    (int) req->hdr->method);
	}
}

/* The RPC server, once pasci_worker_server_start has it: it answers
 * HELLOs (so a chief may send closures here) before its open returns.
 * NULL if it is not there within 10 s, or the worker stops. */
static pasci_rpc_server *
rpc_of(worker_server *w)
{
	pasci_rpc_server *rpc;
	struct timespec   ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&w->rpc_mu);
	while (w->rpc == NULL && !w->stopping &&
	       pthread_cond_timedwait(&w->rpc_cv, &w->rpc_mu, &ts) == 0) {
	}
	rpc = w->rpc;
	pthread_mutex_unlock(&w->rpc_mu);
	return rpc;
}

/* A request over the bulk port: the chief's closures (bulk_async.c)
 * come this way, each naming its chief, which must be the one this
 * worker's RPC server seats (chief.h): a bulk link has no handshake of
 * its own to name it. */
static nng_msg *
worker_bulk_handle(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	worker_server    *w   = arg;
	pasci_rpc_server *rpc = rpc_of(w);
	char              why[400];
	(void) b;
	if (rpc == NULL) {
		return pasci_wire_status_reply(
		    PASCO_EUNAVAILABLE, "%s", "the worker is not serving yet");
	}
	if (!pasci_rpc_server_admits(
	        rpc, req->hdr->chief_incarnation, why, sizeof(why))) {
		return pasci_wire_status_reply(PASCO_EPRECONDITION, "%s", why);
	}
	return worker_handle(w, req);
}

/* The bulk port beside the RPC server, for the chief's closures; none
 * under TLS (it is plain TCP: nng carries them, encrypted). */
static void
bulk_open(worker_server *w, const char *url, uint64_t incarnation,
    const pasci_key *key)
{
	char host[256], port[16];
	if (!pasci_tls_url(url) &&
	    pasci_url_split(url, host, sizeof(host), port, sizeof(port)) ==
	        0 &&
	    pasci_bulk_server_open_as(&w->bulk, host, "PASCO_WORKER_BULK_PORT",
	        incarnation, worker_bulk_handle, w, key) != 0) {
		pasci_log(PASCI_LOG_WARN,
		    "worker at %s: no bulk port, closures come over nng", url);
	}
}

int
pasci_worker_server_start(worker_server **out, const pasco_cluster *cluster,
    int32_t index, const char *url, int nthreads, const pasci_key *key)
{
	worker_server    *w = pasci_calloc(1, sizeof(*w));
	pasci_rpc_server *rpc;
	uint64_t          incarnation;
	int               rv = PASCO_ENOMEM;

	*out = NULL;
	if (w == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&w->rpc_mu, NULL);
	pthread_cond_init(&w->rpc_cv, NULL);
	if (pasci_resource_table_create(&w->env.resources) != 0) {
		goto fail;
	}
	pasci_cancel_mark_init(&w->cancel);
	w->env.cancel = &w->cancel;
	w->env.index  = index;
	w->env.num_workers =
	    (int32_t) pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	w->env.nps = pasco_cluster_count(cluster, PASCO_ROLE_PS);
	if ((w->env.ps = pasci_calloc(w->env.nps + 1, sizeof(*w->env.ps))) ==
	    NULL) {
		goto fail;
	}
	for (size_t i = 0; i < w->env.nps; i++) {
		rv = pasci_rpc_client_open_with(&w->env.ps[i],
		    pasco_cluster_url(cluster, PASCO_ROLE_PS, i), NULL, NULL,
		    key);
		if (rv != 0) {
			goto fail;
		}
	}
	incarnation = pasci_random_u64();
	bulk_open(w, url, incarnation, key);
	rv = pasci_rpc_server_open_with(&rpc, url, nthreads, "pasco-worker",
	    worker_handle, w, incarnation,
	    w->bulk != NULL ? pasci_bulk_server_advert(w->bulk) : NULL, key);
	if (rv != 0) {
		goto fail;
	}
	pthread_mutex_lock(&w->rpc_mu);
	w->rpc = rpc;
	pthread_cond_broadcast(&w->rpc_cv);
	pthread_mutex_unlock(&w->rpc_mu);
	*out = w;
	return PASCO_OK;
fail:
	pasci_worker_server_stop(w);
	return rv;
}

int
pasci_worker_server_create_local(
    worker_server **out, int32_t index, int32_t num_workers, size_t nps)
{
	worker_server *w = pasci_calloc(1, sizeof(*w));

	*out = NULL;
	if (w != NULL) {
		pasci_cancel_mark_init(&w->cancel);
		w->env.cancel = &w->cancel;
		pthread_mutex_init(&w->rpc_mu, NULL);
		pthread_cond_init(&w->rpc_cv, NULL);
	}
	if (w == NULL || pasci_resource_table_create(&w->env.resources) != 0 ||
	    (w->env.ps = pasci_calloc(nps + 1, sizeof(*w->env.ps))) == NULL) {
		pasci_worker_server_stop(w);
		return PASCO_ENOMEM;
	}
	w->env.nps         = nps;
	w->env.index       = index;
	w->env.num_workers = num_workers;
	*out               = w;
	return PASCO_OK;
}

nng_msg *
pasci_worker_server_handle(worker_server *w, const pasci_wire_msg *req)
{
	return worker_handle(w, req);
}

uint64_t
pasci_worker_server_incarnation(const worker_server *w)
{
	return pasci_rpc_server_incarnation(w->rpc);
}

void
pasci_worker_server_stop(worker_server *w)
{
	if (w == NULL) {
		return;
	}
	pthread_mutex_lock(&w->rpc_mu); /* no bulk request waits for rpc */
	w->stopping = true;
	pthread_cond_broadcast(&w->rpc_cv);
	pthread_mutex_unlock(&w->rpc_mu);
	pasci_bulk_server_close(w->bulk); /* its handler reads rpc */
	pasci_rpc_server_close(w->rpc);
	for (size_t i = 0; w->env.ps != NULL && i < w->env.nps; i++) {
		pasci_rpc_client_close(w->env.ps[i]);
	}
	free(w->env.ps);
	pasci_resource_table_destroy(w->env.resources);
	if (w->env.cancel != NULL) {
		pasci_cancel_mark_fini(w->env.cancel);
	}
	pthread_cond_destroy(&w->rpc_cv);
	pthread_mutex_destroy(&w->rpc_mu);
	free(w);
}

const pasci_rpc_server *
pasci_worker_server_rpc(const worker_server *w)
{
	return w->rpc;
}
