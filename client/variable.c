/*
 * Variable handles: lifecycle, accessors, and the dense operations (read,
 * assign, assign_add, SGD), which slice or concatenate along axis 0 across
 * uneven shards; their shard calls travel as client/requests.c sends
 * them. Thread-safe: the only
 * mutable state is the last error, under the handle's lock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clip.h"
#include "optimizer_desc.h"
#include "pasco/optimizer.h"
#include "tensor_impl.h"
#include "util.h"
#include "variable_impl.h"

int
pasci_variable_new(pasco_variable **out, const char *name, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, int64_t timeout_ms)
{
	pasco_variable *v = pasci_calloc(1, sizeof(*v));
	*out              = NULL;
	if (v == NULL || (v->name = pasci_strdup(name)) == NULL) {
		free(v);
		return PASCO_ENOMEM;
	}
	v->dtype = dtype;
	v->rank  = rank;
	for (int32_t i = 0; i < rank; i++) {
		v->shape[i] = shape[i];
	}
	v->timeout_ms = timeout_ms;
	v->seen       = -1;
	pthread_mutex_init(&v->mu, NULL);
	*out = v;
	return PASCO_OK;
}

int
pasci_variable_add_shard(pasco_variable *v, const char *shard_name,
    int32_t ps_task, int64_t offset, int64_t rows, pasci_rpc_client *client)
{
	var_shard *grown =
	    realloc(v->shards, (size_t) (v->nshards + 1) * sizeof(*v->shards));
	char *name = pasci_strdup(shard_name);
	if (grown == NULL || name == NULL) {
		free(name);
		if (grown != NULL) {
			v->shards = grown;
		}
		return PASCO_ENOMEM;
	}
	v->shards = grown;
	v->shards[v->nshards++] =
	    (var_shard){name, ps_task, offset, rows, client};
	return PASCO_OK;
}

int
pasci_variable_check_layout(const pasco_variable *v, char *err, size_t errlen)
{
	int64_t end = 0;
	if (v->nshards < 1 || v->nshards > PASCI_MAX_SHARDS) {
		pasci_fmt(err, errlen, "variable '%s' has %d shards (1 to %d)",
		    v->name, (int) v->nshards, PASCI_MAX_SHARDS);
		return PASCO_EPROTO;
	}
	for (int32_t i = 0; i < v->nshards; i++) {
		const var_shard *s = &v->shards[i];
		if (s->offset != end || s->rows < 0 ||
		    (v->rank == 0 && s->rows != 0) ||
		    (v->rank > 0 && s->rows > v->shape[0] - end)) {
			pasci_fmt(err, errlen,
			    "variable '%s': shard %d ('%s') covers rows "
			    "[%lld, +%lld), which does not continue its "
			    "shards "
			    "at row %lld of %lld",
			    v->name, (int) i, s->name, (long long) s->offset,
			    (long long) s->rows, (long long) end,
			    (long long) (v->rank > 0 ? v->shape[0] : 0));
			return PASCO_EPROTO;
		}
		end += s->rows;
	}
	if (v->rank > 0 && end != v->shape[0]) {
		pasci_fmt(err, errlen,
		    "variable '%s': its shards cover %lld of its %lld rows",
		    v->name, (long long) end, (long long) v->shape[0]);
		return PASCO_EPROTO;
	}
	return PASCO_OK;
}

int
pasci_variable_clone(pasco_variable **out, const pasco_variable *v)
{
	int rv = pasci_variable_new(
	    out, v->name, v->dtype, v->rank, v->shape, v->timeout_ms);
	for (int32_t i = 0; rv == 0 && i < v->nshards; i++) {
		const var_shard *s = &v->shards[i];
		rv                 = pasci_variable_add_shard(
		                    *out, s->name, s->ps_task, s->offset, s->rows, s->client);
	}
	if (rv != 0) {
		pasco_variable_free(*out);
		*out = NULL;
	} else {
		(*out)->sync      = v->sync;
		(*out)->dynamic   = v->dynamic;
		(*out)->find_only = v->find_only;
	}
	return rv;
}

void
pasco_variable_free(pasco_variable *v)
{
	if (v == NULL) {
		return;
	}
	for (int32_t i = 0; i < v->nshards; i++) {
		free(v->shards[i].name);
	}
	free(v->shards);
	pthread_mutex_destroy(&v->mu);
	free(v->name);
	free(v);
}

int
pasci_variable_fail(pasco_variable *v, int err, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&v->mu);
	va_start(ap, fmt);
	vsnprintf(v->error, sizeof(v->error), fmt, ap);
	va_end(ap);
	pasci_error_note(v->error);
	pthread_mutex_unlock(&v->mu);
	return err;
}

size_t
pasci_variable_row_bytes(const pasco_variable *v)
{
	size_t n = pasco_dtype_size(v->dtype);
	for (int32_t i = 1; i < v->rank; i++) {
		n *= (size_t) v->shape[i];
	}
	return n;
}

/* Dense operations. */

shard_call *
pasci_read_calls(pasco_variable *v)
{
	shard_call *calls = pasci_shard_calls_new(v, PASCI_METHOD_VAR_READ);
	for (int32_t i = 0; calls != NULL && i < v->nshards; i++) {
		calls[i].used = true;
	}
	return calls;
}

int
pasci_read_assemble(pasco_variable *v, shard_call *calls, pasco_tensor **out)
{
	size_t row = pasci_variable_row_bytes(v);
	int    rv  = PASCO_OK;
	for (int32_t i = 0; i < v->nshards; i++) {
		if (calls[i].reply.ntensors != 1) {
			rv = pasci_variable_fail(v, PASCO_EPROTO,
			    "ps answered a "
			    "read of '%s' without a value",
			    v->shards[i].name);
			goto out;
		}
	}
	for (int32_t i = 0; i < v->nshards; i++) {
		const pasco_tensor *part = calls[i].reply.tensors[0];
		size_t want      = v->rank == 0 ? pasco_dtype_size(v->dtype)
		                                : (size_t) v->shards[i].rows * row;
		bool   same_rows = part->rank == v->rank;
		for (int32_t d = 1; d < v->rank && same_rows; d++) {
			same_rows = part->shape[d] == v->shape[d];
		}
		if (part->dtype != v->dtype || part->nbytes != want ||
		    !same_rows) {
			rv = pasci_variable_fail(v, PASCO_EPROTO,
			    "ps answered a read of '%s' with %zu bytes of %s; "
			    "the shard holds %zu bytes of %s",
			    v->shards[i].name, part->nbytes,
			    pasco_dtype_name(part->dtype), want,
			    pasco_dtype_name(v->dtype));
			goto out;
		}
	}
	if (v->nshards == 1) { /* the received tensor, no copy */
		*out = pasco_tensor_hold(calls[0].reply.tensors[0]);
		if (v->rank == 0 && v->dtype == PASCO_I64) { /* a counter */
			__atomic_store_n(&v->seen, *(int64_t *) (*out)->data,
			    __ATOMIC_RELEASE);
		}
		goto out;
	}
	if ((rv = pasco_tensor_alloc(out, v->dtype, v->rank, v->shape)) != 0) {
		goto out;
	}
	for (int32_t i = 0; i < v->nshards; i++) {
		const pasco_tensor *part = calls[i].reply.tensors[0];
		memcpy(
		    (char *) (*out)->data + (size_t) v->shards[i].offset * row,
		    part->data, part->nbytes);
	}
out:
	return rv;
}

int
pasco_variable_read(pasco_variable *v, pasco_tensor **out)
{
	shard_call *calls = pasci_read_calls(v);
	int         rv;
	*out = NULL;
	if (calls == NULL) {
		return PASCO_ENOMEM;
	}
	if ((rv = pasci_shard_calls_run(v, calls)) == 0) {
		rv = pasci_read_assemble(v, calls, out);
	}
	pasci_shard_calls_free(v, calls);
	return rv;
}

int
pasco_variable_read_all(
    size_t n, pasco_variable *const *vars, pasco_tensor **outs)
{
	shard_call **calls = pasci_calloc(n + 1, sizeof(*calls));
	int          rv    = calls != NULL ? PASCO_OK : PASCO_ENOMEM;
	for (size_t k = 0; k < n; k++) {
		outs[k] = NULL;
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		rv = (calls[k] = pasci_read_calls(vars[k])) != NULL
		         ? PASCO_OK
		         : PASCO_ENOMEM;
	}
	if (rv == 0) {
		rv = pasci_shard_calls_run_many(n, vars, calls);
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		rv = pasci_read_assemble(vars[k], calls[k], &outs[k]);
	}
	for (size_t k = 0; k < n; k++) {
		if (rv != 0) {
			pasco_tensor_release(outs[k]);
			outs[k] = NULL;
		}
		if (calls != NULL) {
			pasci_shard_calls_free(vars[k], calls[k]);
		}
	}
	free(calls);
	return rv;
}

/* Checks that t has v's dtype and whole shape. */
static int
check_whole(pasco_variable *v, const pasco_tensor *t, const char *op)
{
	char have[64], got[64];
	if (t == NULL) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "%s to '%s': the "
		    "tensor is NULL",
		    op, v->name);
	}
	if (t->dtype == v->dtype && t->rank == v->rank &&
	    memcmp(t->shape, v->shape, sizeof(int64_t) * (size_t) v->rank) ==
	        0) {
		return PASCO_OK;
	}
	return pasci_variable_fail(v, PASCO_EINVAL,
	    "%s to '%s' (%s) with a %s "
	    "tensor: dtype and shape must match",
	    op, v->name,
	    pasco_tensor_spec_string(
	        v->dtype, v->rank, v->shape, have, sizeof(have)),
	    pasco_tensor_spec_string(
	        t->dtype, t->rank, t->shape, got, sizeof(got)));
}

/* The calls giving each shard its rows of t (a view, no copy); opt (when
 * not NULL) must outlive them. */
static int
update_calls(pasco_variable *v, pasci_method m, const pasco_optimizer *opt,
    const pasco_tensor *t, const char *op, shard_call **out)
{
	shard_call *calls;
	size_t      row = pasci_variable_row_bytes(v);
	int         rv;

	*out = NULL;
	if ((rv = check_whole(v, t, op)) != 0) {
		return rv;
	}
	if ((calls = pasci_shard_calls_new(v, m)) == NULL) {
		return PASCO_ENOMEM;
	}
	for (int32_t i = 0; i < v->nshards && rv == 0; i++) {
		pasco_tensor *part;
		int64_t       shape[PASCO_MAX_RANK];
		memcpy(shape, v->shape, sizeof(shape));
		shape[0] = v->shards[i].rows;
		rv       = v->rank == 0
		               ? pasci_tensor_view(
		                     &part, t->dtype, 0, NULL, t->data, t->storage)
		               : pasci_tensor_view(&part, t->dtype, v->rank, shape,
		                     (char *) t->data +
		                         (size_t) v->shards[i].offset * row,
		                     t->storage);
		if (rv == 0) {
			calls[i].used      = true;
			calls[i].b.hdr.opt = opt;
			pasci_wire_add_tensor(&calls[i].b, part, NULL);
			pasco_tensor_release(part);
		}
	}
	if (rv != 0) {
		pasci_shard_calls_free(v, calls);
		return rv;
	}
	*out = calls;
	return PASCO_OK;
}

static int
variable_update(pasco_variable *v, pasci_method m, const pasco_optimizer *opt,
    const pasco_tensor *t, const char *op)
{
	shard_call *calls;
	int         rv;
	if ((rv = update_calls(v, m, opt, t, op, &calls)) == 0) {
		rv = pasci_shard_calls_run(v, calls);
		pasci_shard_calls_free(v, calls);
	}
	return rv;
}

int
pasco_variable_assign(pasco_variable *v, const pasco_tensor *value)
{
	return variable_update(
	    v, PASCI_METHOD_VAR_ASSIGN, NULL, value, "assign");
}

int
pasco_variable_assign_add(pasco_variable *v, const pasco_tensor *delta)
{
	return variable_update(
	    v, PASCI_METHOD_VAR_ASSIGN_ADD, NULL, delta, "assign_add");
}

int
pasco_variable_apply_sgd(
    pasco_variable *v, double learning_rate, const pasco_tensor *grad)
{
	pasco_optimizer sgd = pasco_sgd(learning_rate, 0, false);
	return variable_update(
	    v, PASCI_METHOD_VAR_APPLY, &sgd, grad, "apply_sgd");
}

int
pasco_variable_apply_gradient(
    pasco_variable *v, const pasco_optimizer *opt, const pasco_tensor *grad)
{
	if (opt == NULL) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "apply_gradient to "
		    "'%s': no optimizer",
		    v->name);
	}
	return pasco_variable_apply_gradients(
	    1, &v, opt, (pasco_tensor *const *) &grad);
}

int
pasco_variable_apply_gradients(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, pasco_tensor_array grads)
{
	return pasco_variable_apply_gradients_mixed(n, vars, opt, NULL, grads);
}

/* A step's non-gradient updates (pasci_apply_mixed_adds): vars[k] gets
 * deltas[k] added. */
typedef struct apply_adds {
	size_t                     n;
	pasco_variable *const     *vars;
	const pasco_tensor *const *deltas;
} apply_adds;

static int apply_clipped(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, const pasco_tensor *const *ids,
    const pasco_tensor *const *grads, const apply_adds *adds,
    const pasci_step *pre);

/* The mixed apply; with *pre, the step it was given (taken with the
 * step's reads), else one admitted here. With clipping (opt's clipnorm,
 * clipvalue or global_clipnorm), of the clipped gradients. adds (may be
 * NULL) travel in the same requests (VAR_ASSIGN_ADD), unstamped: not
 * gradients, no BSP round averages or waits for them, never clipped; a
 * dropped step sends neither. */
static int
apply_mixed(size_t n, pasco_variable *const *vars, const pasco_optimizer *opt,
    const pasco_tensor *const *ids, const pasco_tensor *const *grads,
    const apply_adds *adds, const pasci_step *pre)
{
	pasco_tensor **made;
	const char    *bad;
	int            rv;
	if (opt != NULL && (bad = pasci_opt_clip_error(opt)) != NULL) {
		return n > 0 ? pasci_variable_fail(vars[0], PASCO_EINVAL,
		                   "apply_gradients: %s", bad)
		             : PASCO_EINVAL;
	}
	if (opt == NULL || !pasci_clip_wanted(opt)) {
		return apply_clipped(n, vars, opt, ids, grads, adds, pre);
	}
	if ((made = pasci_calloc(2 * n + 1, sizeof(*made))) == NULL) {
		return PASCO_ENOMEM;
	}
	/* made[0..n): new ids, made[n..2n): new gradients (NULL: as given) */
	rv = pasci_clip_gradients(n, opt, ids, grads, made, made + n);
	if (rv == 0) {
		const pasco_tensor **use =
		    pasci_calloc(2 * n + 1, sizeof(*use));
		for (size_t k = 0; use != NULL && k < n; k++) {
			bool kept  = made[n + k] == NULL;
			use[k]     = kept || made[k] == NULL
			                 ? (ids != NULL ? ids[k] : NULL)
			                 : made[k];
			use[n + k] = kept ? grads[k] : made[n + k];
		}
		rv = use != NULL
		         ? apply_clipped(n, vars, opt, use, use + n, adds, pre)
		         : PASCO_ENOMEM;
		free(use);
		pasci_clip_release(n, made, made + n);
	}
	free(made);
	return rv;
}

static int
apply_clipped(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, const pasco_tensor *const *ids,
    const pasco_tensor *const *grads, const apply_adds *adds,
    const pasci_step *pre)
{
	size_t           nadd  = adds != NULL ? adds->n : 0;
	shard_call     **calls = pasci_calloc(n + nadd + 1, sizeof(*calls));
	pasco_variable **all   = pasci_calloc(n + nadd + 1, sizeof(*all));
	int        rv = calls != NULL && all != NULL ? PASCO_OK : PASCO_ENOMEM;
	pasci_step st = {0};
	if (opt == NULL) {
		free(calls);
		free(all);
		return n > 0 ? pasci_variable_fail(vars[0], PASCO_EINVAL,
		                   "apply_gradients: no optimizer")
		             : PASCO_EINVAL;
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		all[k] = vars[k];
		rv     = ids != NULL && ids[k] != NULL
		             ? pasci_sparse_calls(vars[k], ids[k], grads[k], 0,
		                   opt, "apply_gradients", &calls[k])
		             : update_calls(vars[k], PASCI_METHOD_VAR_APPLY, opt,
		                   grads[k], "apply_gradients", &calls[k]);
	}
	for (size_t k = 0; k < nadd && rv == 0; k++) {
		all[n + k] = adds->vars[k];
		rv = update_calls(adds->vars[k], PASCI_METHOD_VAR_ASSIGN_ADD,
		    NULL, adds->deltas[k], "assign_add", &calls[n + k]);
	}
	/* every gradient checked: now the step (one per call, all vars) */
	if (rv == 0 && n > 0 && pre != NULL) {
		st = *pre;
	} else if (rv == 0 && n > 0) {
		rv = pasci_step_begin(vars[0], opt, &st);
	}
	if (rv == 0 && !st.dropped) {
		for (size_t k = 0; k < n; k++) {
			pasci_step_stamp(&st, vars[k], calls[k]);
		}
		rv = pasci_shard_calls_run_many(n + nadd, all, calls);
	}
	pasci_step_end(&st);
	for (size_t k = 0; k < n + nadd && calls != NULL; k++) {
		if (calls[k] != NULL) {
			pasci_shard_calls_free(all[k], calls[k]);
		}
	}
	free(calls);
	free(all);
	return rv;
}

int
pasco_variable_apply_gradients_mixed(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, const pasco_tensor *const *ids,
    pasco_tensor_array grads)
{
	return apply_mixed(n, vars, opt, ids, grads.c, NULL, NULL);
}

int
pasci_apply_mixed_adds(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, const pasco_tensor *const *ids,
    const pasco_tensor *const *grads, size_t nadd, pasco_variable *const *adds,
    const pasco_tensor *const *deltas, const int64_t *t)
{
	apply_adds a   = {nadd, adds, deltas};
	pasci_step pre = {.t = t != NULL ? pasci_step_count(opt, *t) : 0};
	return apply_mixed(
	    n, vars, opt, ids, grads, &a, t != NULL ? &pre : NULL);
}

const char *
pasco_variable_name(const pasco_variable *v)
{
	return v->name;
}

int32_t
pasco_variable_ps_task(const pasco_variable *v)
{
	return v->nshards > 0 ? v->shards[0].ps_task : -1;
}

int32_t
pasco_variable_num_shards(const pasco_variable *v)
{
	return v->nshards;
}

int
pasco_variable_shard(const pasco_variable *v, int32_t i, int32_t *ps_task,
    int64_t *offset, int64_t *rows)
{
	if (i < 0 || i >= v->nshards) {
		return PASCO_EINVAL;
	}
	*ps_task = v->shards[i].ps_task;
	*offset  = v->shards[i].offset;
	*rows    = v->shards[i].rows;
	return PASCO_OK;
}

pasco_dtype
pasco_variable_dtype(const pasco_variable *v)
{
	return v->dtype;
}

bool
pasco_variable_is_dynamic(const pasco_variable *v)
{
	return v->dynamic;
}

int
pasco_variable_set_find_only(pasco_variable *v, bool find_only)
{
	if (!v->dynamic) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "'%s' is not a dynamic table: its lookups never insert",
		    v->name);
	}
	v->find_only = find_only;
	return PASCO_OK;
}

int
pasco_variable_dynamic_stats(pasco_variable *v, pasco_dynamic_stats *out)
{
	shard_call *calls;
	int         rv;
	memset(out, 0, sizeof(*out));
	if (!v->dynamic) {
		return pasci_variable_fail(
		    v, PASCO_EINVAL, "'%s' is not a dynamic table", v->name);
	}
	if ((calls = pasci_shard_calls_new(v, PASCI_METHOD_DYN_STATS)) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	for (int32_t i = 0; i < v->nshards; i++) {
		calls[i].used = true;
	}
	rv = pasci_shard_calls_run(v, calls);
	for (int32_t i = 0; rv == 0 && i < v->nshards; i++) {
		const pasci_wire_msg *r = &calls[i].reply;
		const int64_t        *c;
		if (r->ntensors != 1 || r->tensors[0]->dtype != PASCO_I64 ||
		    r->tensors[0]->count != 7) {
			rv = pasci_variable_fail(v, PASCO_EPROTO,
			    "the counts of '%s' from ps %d are malformed",
			    v->name, v->shards[i].ps_task);
			break;
		}
		c = r->tensors[0]->data;
		out->rows += c[0];
		out->pending += c[1];
		out->created += c[2];
		out->evicted_age += c[3];
		out->evicted_cap += c[4];
		out->refused += c[5];
		out->step = c[6] > out->step ? c[6] : out->step;
	}
	pasci_shard_calls_free(v, calls);
	return rv;
}

int32_t
pasco_variable_rank(const pasco_variable *v)
{
	return v->rank;
}

const int64_t *
pasco_variable_shape(const pasco_variable *v)
{
	return v->shape;
}

const char *
pasco_variable_error(const pasco_variable *v)
{
	return v->error;
}

void
pasci_variable_add_arg(pasci_wire_builder *b, const pasco_variable *v)
{
	pasci_wire_add_arg_variable(
	    b, v->name, v->dtype, v->rank, v->shape, v->nshards);
	if (v->sync.mode != 0) {
		pasci_wire_set_arg_sync(b, &v->sync);
	}
	if (v->dynamic && !b->oom && b->hdr.nargs > 0) {
		b->hdr.args[b->hdr.nargs - 1].variable.dynamic = true;
	}
	for (int32_t k = 0; k < v->nshards; k++) {
		const var_shard *s = &v->shards[k];
		pasci_wire_set_arg_shard(
		    b, k, s->name, s->ps_task, s->offset, s->rows);
	}
}
