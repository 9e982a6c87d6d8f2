/*
 * Per-worker variables: a tensor on every worker, made there by a step
 * function and kept in the worker's resource table. On the coordinator a
 * per-worker variable is a per-worker iterator (per_worker.c) whose
 * resource is that tensor, so it is built, rebuilt on a returning worker,
 * checked as a closure's input and released exactly as an iterator is.
 * Reading every copy takes one RESOURCE_READ tagged closure per worker,
 * completed by the dispatch engine through pasci_per_worker_read_done.
 *
 * Threads: user threads (create, read_all, free) and RPC completions
 * (read_done), which only complete remote values.
 */
#include <stdlib.h>

#include "coordinator_impl.h"
#include "util.h"
#include "wire.h"

int
pasco_per_worker_variable_create(
    pasco_per_worker_variable **out, pasco_coordinator *c, const char *init_fn)
{
	pasco_per_worker_variable *v;
	int                        rv;
	*out = NULL;
	if (c == NULL || init_fn == NULL || *init_fn == 0) {
		return PASCO_EINVAL;
	}
	if ((v = pasci_calloc(1, sizeof(*v))) == NULL) {
		return PASCO_ENOMEM;
	}
	if ((rv = pasci_iterator_create(&v->it, c, init_fn, true)) != 0) {
		free(v);
		return rv;
	}
	*out = v;
	return PASCO_OK;
}

void
pasco_per_worker_variable_free(pasco_per_worker_variable *v)
{
	if (v != NULL) {
		pasci_iterator_release(v->it);
		free(v);
	}
}

void
pasci_per_worker_read_done(
    closure *cl, size_t w, int err, pasci_wire_msg *reply, const char *detail)
{
	char msg[1024];
	if (cl->rv == NULL) {
		return;
	}
	if (err == 0 && reply->hdr->status == 0 && reply->ntensors == 1) {
		pasco_tensor *t = NULL; /* the reply's memory goes with it */
		if (pasco_tensor_copy(&t, reply->tensors[0]) == 0) {
			pasci_remote_value_set(cl->rv, pasco_value_tensor(t));
			return;
		}
		err    = PASCO_ENOMEM;
		detail = "out of memory";
	}
	if (err != 0) {
		pasci_fmt(msg, sizeof(msg),
		    "reading a per-worker variable on worker %zu failed: %s",
		    w, detail);
	} else {
		err = reply->hdr->status != 0 ? reply->hdr->status
		                              : PASCO_EPROTO;
		pasci_fmt(msg, sizeof(msg), "%s",
		    reply->hdr->status != 0
		        ? reply->hdr->error
		        : "a read answered without a value");
	}
	pasci_remote_value_fail(cl->rv, err, msg);
}

/* Queues the read of v's copy on worker w; its remote value in *rv. */
static int
read_one(pasco_per_worker_variable *v, size_t w, pasco_remote_value **rv)
{
	closure *cl = pasci_calloc(1, sizeof(*cl));
	if (cl == NULL || (*rv = pasci_remote_value_new()) == NULL) {
		free(cl);
		return PASCO_ENOMEM;
	}
	if (!pasci_rpc_client_is_up(v->it->coord->s->workers[w])) {
		/* as TensorFlow: a dead worker's value aborts */
		pasci_remote_value_fail(
		    *rv, PASCO_EUNAVAILABLE, "down (not connected)");
		free(cl);
		return PASCO_OK;
	}
	pasci_remote_value_hold(*rv);
	cl->kind     = CLOSURE_RESOURCE_READ;
	cl->resource = v->it->id;
	cl->rv       = *rv;
	pasci_queue_put_tagged(&v->it->coord->q, cl, w);
	return PASCO_OK;
}

/* The tensor of a completed read, or its error (a message in msg): the
 * initializer's, when it failed on w. */
static int
read_result(pasco_per_worker_variable *v, pasco_remote_value *rv, size_t w,
    pasco_tensor **out, char *msg, size_t len)
{
	const pasco_value *val;
	char               why[700];
	int                err = pasco_remote_value_fetch(rv, &val);
	int                init;
	if (err == 0 && pasco_value_as_tensor(val) != NULL) {
		*out = pasco_tensor_hold(
		    (pasco_tensor *) pasco_value_as_tensor(val));
		return PASCO_OK;
	}
	if (err != 0 &&
	    (init = pasci_iterator_status(v->it, w, why, sizeof(why))) != 0) {
		pasci_fmt(msg, len, "worker %zu: %s", w, why);
		return init;
	}
	pasci_fmt(msg, len, "worker %zu: %s", w,
	    err != 0 ? pasco_remote_value_error(rv) : "no tensor");
	return err != 0 ? err : PASCO_EPROTO;
}

int
pasco_per_worker_variable_read_all(
    pasco_per_worker_variable *v, pasco_tensor **out)
{
	pasco_coordinator   *c         = v->it->coord;
	size_t               n         = c->nworkers;
	pasco_remote_value **rv        = pasci_calloc(n + 1, sizeof(*rv));
	char                 msg[1024] = "";
	int                  err       = rv != NULL ? PASCO_OK : PASCO_ENOMEM;

	for (size_t w = 0; w < n; w++) {
		out[w] = NULL;
		if (err == 0) {
			err = read_one(v, w, &rv[w]);
		}
	}
	for (size_t w = 0; w < n && rv != NULL; w++) {
		int e = rv[w] != NULL ? read_result(v, rv[w], w, &out[w], msg,
		                            sizeof(msg))
		                      : PASCO_OK;
		err   = err != 0 ? err : e;
		pasco_remote_value_free(rv[w]);
	}
	for (size_t w = 0; w < n && err != 0; w++) {
		pasco_tensor_release(out[w]);
		out[w] = NULL;
	}
	free(rv);
	pasci_coordinator_set_error(c, err != 0 && msg[0] == 0
	                                   ? "out of memory reading a "
	                                     "per-worker variable"
	                                   : msg);
	return err;
}
