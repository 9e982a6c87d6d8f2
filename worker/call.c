/*
 * The call API step functions use (pasco_call_*, include/pasco/function.h):
 * a RUN request's arguments bound to what this worker has (tensors viewing
 * the request, variable handles on its ps clients, its per-worker
 * resources), the result and the error message. A pasco_call lives on the
 * handler thread that runs the function and is touched by no other.
 */
#include "call.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"
#include "variable_impl.h"

/* A closure's ps requests: PASCO_PS_REQUEST_TIMEOUT, else this. */
#define PS_REQUEST_TIMEOUT_MS 20000

/* The deadline of each ps request a closure makes (README, "Failures"):
 * PASCO_PS_REQUEST_TIMEOUT seconds (a fraction allowed), read once; an
 * unusable value is named in a warning and the default kept. */
static int64_t
ps_request_timeout_ms(void)
{
	static int64_t timeout_ms; /* atomic: 0 until read */
	int64_t        ms = __atomic_load_n(&timeout_ms, __ATOMIC_RELAXED);
	const char    *env;
	char          *end;
	double         secs;
	if (ms > 0) {
		return ms;
	}
	ms = PS_REQUEST_TIMEOUT_MS;
	if ((env = getenv("PASCO_PS_REQUEST_TIMEOUT")) != NULL && *env) {
		secs = strtod(env, &end);
		if (*end != 0 || !(secs >= 0.001 && secs <= 86400)) {
			pasci_log(PASCI_LOG_WARN,
			    "PASCO_PS_REQUEST_TIMEOUT='%s' is not a number of "
			    "seconds from 0.001 to 86400: a closure's ps "
			    "requests wait %d s",
			    env, PS_REQUEST_TIMEOUT_MS / 1000);
		} else {
			ms = (int64_t) (secs * 1000);
		}
	}
	__atomic_store_n(&timeout_ms, ms, __ATOMIC_RELAXED);
	return ms;
}

uint32_t
pasco_call_repetition(const pasco_call *call)
{
	return call->repetition;
}

size_t
pasco_call_arg_count(const pasco_call *call)
{
	return call->nargs;
}

int
pasco_call_fail(pasco_call *call, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(call->error, sizeof(call->error), fmt, ap);
	va_end(ap);
	return err;
}

static int
call_arg_check(
    pasco_call *call, size_t i, pasci_arg_kind kind, const char *what)
{
	if (i >= call->nargs) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu "
		    "requested as %s, but only %zu were passed",
		    i, what, call->nargs);
	}
	if (call->args[i].kind != kind) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is "
		    "not %s",
		    i, what);
	}
	return PASCO_OK;
}

int
pasco_call_tensor(pasco_call *call, size_t i, const pasco_tensor **out)
{
	int rv = call_arg_check(call, i, PASCI_ARG_TENSOR, "a tensor");
	*out   = rv == 0 ? call->args[i].tensor : NULL;
	return rv;
}

int
pasco_call_variable(pasco_call *call, size_t i, pasco_variable **out)
{
	int rv = call_arg_check(call, i, PASCI_ARG_VARIABLE, "a variable");
	*out   = rv == 0 ? call->args[i].variable : NULL;
	return rv;
}

int
pasco_call_iterator(pasco_call *call, size_t i, pasco_dataset **out)
{
	int rv = call_arg_check(
	    call, i, PASCI_ARG_RESOURCE, "a per-worker iterator");
	*out = rv == 0 ? pasci_resource_dataset(call->args[i].res) : NULL;
	if (rv == 0 && *out == NULL) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is a per-worker variable, not an iterator",
		    i);
	}
	return rv;
}

/* Argument i as a per-worker variable (a resource without a dataset). */
static int
per_worker_variable(pasco_call *call, size_t i, resource **out)
{
	int rv = call_arg_check(
	    call, i, PASCI_ARG_RESOURCE, "a per-worker variable");
	*out = rv == 0 ? call->args[i].res : NULL;
	if (rv == 0 && pasci_resource_dataset(*out) != NULL) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is a per-worker iterator, not a variable",
		    i);
	}
	return rv;
}

int
pasco_call_per_worker_add(
    pasco_call *call, size_t i, const pasco_tensor *delta)
{
	resource *r;
	char      err[512];
	int       rv;
	if ((rv = per_worker_variable(call, i, &r)) != 0) {
		return rv;
	}
	if (delta == NULL) {
		return pasco_call_fail(
		    call, PASCO_EINVAL, "argument %zu: no tensor to add", i);
	}
	if ((rv = pasci_resource_value_add(r, delta, err, sizeof(err))) != 0) {
		return pasco_call_fail(call, rv, "argument %zu: %s", i, err);
	}
	return PASCO_OK;
}

int
pasco_call_per_worker_read(pasco_call *call, size_t i, pasco_tensor **out)
{
	resource *r;
	int       rv;
	*out = NULL;
	if ((rv = per_worker_variable(call, i, &r)) != 0) {
		return rv;
	}
	if ((rv = pasci_resource_value_read(r, out)) != 0) {
		return pasco_call_fail(call, rv,
		    "argument %zu: out of memory copying a per-worker "
		    "variable",
		    i);
	}
	return PASCO_OK;
}

void
pasci_cancel_mark_init(pasci_cancel_mark *m)
{
	pthread_mutex_init(&m->mu, NULL);
	m->lo = m->hi = 0;
}

void
pasci_cancel_mark_fini(pasci_cancel_mark *m)
{
	pthread_mutex_destroy(&m->mu);
}

void
pasci_cancel_mark_set(pasci_cancel_mark *m, uint64_t lo, uint64_t hi)
{
	pthread_mutex_lock(&m->mu);
	if (lo != m->lo || hi > m->hi) { /* another coordinator, or later */
		m->lo = lo;
		m->hi = hi;
	}
	pthread_mutex_unlock(&m->mu);
}

bool
pasci_cancel_mark_covers(pasci_cancel_mark *m, uint64_t id)
{
	bool covers;
	if (m == NULL || id == 0) {
		return false;
	}
	pthread_mutex_lock(&m->mu);
	covers = m->hi != 0 && id >= m->lo && id <= m->hi;
	pthread_mutex_unlock(&m->mu);
	return covers;
}

bool
pasco_call_is_cancelled(const pasco_call *call)
{
	return pasci_cancel_mark_covers(call->env->cancel, call->closure_id);
}

int32_t
pasco_call_worker_index(const pasco_call *call)
{
	return call->env->index;
}

int32_t
pasco_call_num_workers(const pasco_call *call)
{
	return call->env->num_workers;
}

void
pasco_call_return(pasco_call *call, pasco_value *value)
{
	pasco_value_free(call->result);
	call->result = value;
}

static int
bind_variable(pasco_call *call, call_arg *a, const pasci_wire_var *v)
{
	int rv;

	if (v->nshards == 0 || pasci_wire_spec_check(&v->spec) != 0) {
		return pasco_call_fail(call, PASCO_EPROTO,
		    "a variable argument "
		    "has no shards or a bad spec");
	}
	rv = pasci_variable_new(&a->variable, v->name, v->spec.dtype,
	    v->spec.rank, v->spec.shape, ps_request_timeout_ms());
	if (rv == 0) { /* a global step's consistency mode */
		a->variable->sync    = v->sync;
		a->variable->dynamic = v->dynamic;
	}
	for (size_t i = 0; rv == 0 && i < v->nshards; i++) {
		const pasci_wire_shard *s = &v->shards[i];
		if (s->ps_task < 0 || (size_t) s->ps_task >= call->env->nps) {
			return pasco_call_fail(call, PASCO_EINVAL,
			    "variable '%s' "
			    "names ps task %d; the cluster has %zu",
			    v->name, s->ps_task, call->env->nps);
		}
		rv = pasci_variable_add_shard(a->variable, s->name, s->ps_task,
		    s->offset, s->rows, call->env->ps[s->ps_task]);
	}
	if (rv == 0) { /* nothing may use geometry that was not checked */
		char err[512];
		if (pasci_variable_check_layout(
		        a->variable, err, sizeof(err)) != 0) {
			return pasco_call_fail(call, PASCO_EPROTO, "%s", err);
		}
	}
	return rv;
}

int
pasci_call_bind(pasco_call *call, const pasci_wire_msg *req)
{
	call->nargs = req->hdr->nargs;
	if ((call->args = pasci_calloc(
	         call->nargs + 1, sizeof(*call->args))) == NULL) {
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < call->nargs; i++) {
		const pasci_wire_arg *w  = &req->hdr->args[i];
		call_arg             *a  = &call->args[i];
		int                   rv = PASCO_OK;
		a->kind                  = w->kind;
		if (w->kind == PASCI_ARG_TENSOR) {
			if (w->tensor >= req->ntensors) {
				return pasco_call_fail(call, PASCO_EPROTO,
				    "argument %zu names tensor %u of %zu", i,
				    w->tensor, req->ntensors);
			}
			a->tensor = req->tensors[w->tensor];
		} else if (w->kind == PASCI_ARG_VARIABLE) {
			rv = bind_variable(call, a, &w->variable);
		} else if (w->kind == PASCI_ARG_RESOURCE) {
			a->res = pasci_resource_table_hold(
			    call->env->resources, w->resource);
			if (a->res == NULL) {
				return pasco_call_fail(call,
				    PASCO_EPRECONDITION,
				    "argument %zu: per-worker resource %llu "
				    "(an iterator or variable) does not "
				    "exist on worker %d",
				    i, (unsigned long long) w->resource,
				    call->env->index);
			}
		} else {
			rv = pasco_call_fail(call, PASCO_EPROTO,
			    "argument %zu "
			    "has unknown kind %d",
			    i, (int) w->kind);
		}
		if (rv != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

void
pasci_call_fini(pasco_call *call)
{
	for (size_t i = 0; i < call->nargs && call->args != NULL; i++) {
		pasco_variable_free(call->args[i].variable);
		pasci_resource_release(call->args[i].res);
	}
	free(call->args);
	pasco_value_free(call->result);
}
