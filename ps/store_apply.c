/*
 * Optimizer applies on the store's variables (store.h): the gradient
 * checked against the variable, its slots made (and charged to the ps's
 * budget) on first use, then applied under the variable's mutex, or under
 * BSP added to its round and applied as the round's average; counters'
 * fetch_add and the flush of open rounds; slots set by a restore. Runs on
 * the ps's handler threads; the locking is store.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "constraint_impl.h"
#include "optimizer_apply.h"
#include "store_impl.h"
#include "util.h"

/* Checks that the variable is float and opt valid. */
static int
check_apply(
    const ps_var *v, const pasco_optimizer *opt, char *err, size_t errlen)
{
	if (v->value->dtype != PASCO_F32 && v->value->dtype != PASCO_F64) {
		pasci_fmt(err, errlen,
		    "'%s' is %s: optimizers need a float "
		    "variable",
		    v->name, pasco_dtype_name(v->value->dtype));
		return PASCO_EINVAL;
	}
	return pasci_optimizer_check(opt, err, errlen);
}

/* v's slots for opt made, their bytes charged to the budget first. */
static int
slots_ready(ps_store *s, ps_var *v, const pasco_optimizer *opt, char *err,
    size_t errlen)
{
	size_t need = pasci_slots_need(&v->slots, opt, v->value);
	size_t had  = pasci_slots_bytes(&v->slots);
	int    rv;
	if (need > 0 && pasci_budget_charge(s->budget, need) != 0) {
		pasci_budget_explain(s->budget, need, err, errlen,
		    "'%s': the slots of its optimizer", v->name);
		return PASCO_ENOMEM;
	}
	rv = pasci_slots_prepare(&v->slots, opt, v->value, err, errlen);
	/* what it did not allocate (all of it but on a failure: none) */
	pasci_budget_release(
	    s->budget, had + need - pasci_slots_bytes(&v->slots));
	return rv;
}

/* Applies grad (or rows of ids, when ids is not NULL) with opt under the
 * variable's lock: slots prepared, Adam's t the global step when step > 0. */
static int
apply_locked(ps_store *s, ps_var *v, const pasco_optimizer *opt, int64_t step,
    const pasco_tensor *ids, const pasco_tensor *grad, char *err,
    size_t errlen)
{
	int64_t row_elems = ids != NULL ? pasci_store_row_elems(v) : 0;
	int     rv        = pasci_store_value_own(v, err, errlen);
	if (rv != 0 || (rv = slots_ready(s, v, opt, err, errlen)) != 0) {
		return rv;
	}
	if (step > 0) {
		v->slots.step = step;
	}
	if (ids == NULL) {
		pasci_optimizer_apply(
		    opt, &v->slots, v->value, 0, grad, 0, grad->count);
	} else {
		pasci_optimizer_apply_rows(opt, &v->slots, v->value, ids->data,
		    ids->count, row_elems, grad);
	}
	/* Keras's constraint, on the whole variable after its update */
	pasci_constraint_apply(&v->constraint, v->value);
	return PASCO_OK;
}

/* Applies the average of v's BSP round and empties it. */
static int
apply_round(ps_store *s, ps_var *v, char *err, size_t errlen)
{
	ps_accum     *a   = &v->accum;
	pasco_tensor *ids = NULL, *avg = NULL;
	int           rv = a->sum != NULL ? pasci_accum_average_dense(a, &avg)
	                                  : pasci_accum_average_sparse(
	                                        a, pasci_store_row_elems(v), &ids, &avg);
	if (rv == 0) {
		rv = apply_locked(
		    s, v, &a->opt, a->step, ids, avg, err, errlen);
	}
	pasco_tensor_release(ids);
	pasco_tensor_release(avg);
	pasci_accum_reset(a);
	return rv;
}

/* An apply, or under BSP a gradient added to the round, whose average is
 * applied when it has sync->replicas. */
static int
apply_or_accumulate(ps_store *s, ps_var *v, const pasco_optimizer *opt,
    int64_t step, const pasci_wire_sync *sync, const pasco_tensor *ids,
    const pasco_tensor *grad, char *err, size_t errlen)
{
	int rv;
	if (sync != NULL && (rv = pasci_sync_check(sync, err, errlen)) != 0) {
		return rv;
	}
	pthread_mutex_lock(&v->mu);
	if (sync == NULL || sync->mode != PASCO_BSP) {
		rv = apply_locked(s, v, opt, step, ids, grad, err, errlen);
	} else {
		rv = ids == NULL ? pasci_accum_add_dense(
		                       &v->accum, opt, step, grad, err, errlen)
		                 : pasci_accum_add_sparse(&v->accum, opt, step,
		                       ids, grad, err, errlen);
		if (rv == 0 && v->accum.count >= sync->replicas) {
			rv = apply_round(s, v, err, errlen);
		}
	}
	pthread_mutex_unlock(&v->mu);
	return rv;
}

int
pasci_store_var_apply(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *grad, char *err,
    size_t errlen)
{
	return pasci_store_var_apply_at(
	    s, name, opt, grad, 0, NULL, err, errlen);
}

int
pasci_store_var_apply_at(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *grad, int64_t step,
    const pasci_wire_sync *sync, char *err, size_t errlen)
{
	ps_var *v = pasci_store_find(s, name, err, errlen);
	char    have[64], got[64];
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if (!pasco_tensor_same_spec(v->value, grad)) {
		pasci_fmt(err, errlen,
		    "gradient for '%s' (%s) is %s: dtype and "
		    "shape must match",
		    name,
		    pasco_tensor_spec_string(v->value->dtype, v->value->rank,
		        v->value->shape, have, sizeof(have)),
		    pasco_tensor_spec_string(grad->dtype, grad->rank,
		        grad->shape, got, sizeof(got)));
		return PASCO_EINVAL;
	}
	if ((rv = check_apply(v, opt, err, errlen)) != 0) {
		return rv;
	}
	return apply_or_accumulate(
	    s, v, opt, step, sync, NULL, grad, err, errlen);
}

int
pasci_store_var_apply_sparse(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *rows, char *err, size_t errlen)
{
	return pasci_store_var_apply_sparse_at(
	    s, name, opt, ids, rows, 0, NULL, err, errlen);
}

int
pasci_store_var_apply_sparse_at(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *rows, int64_t step, const pasci_wire_sync *sync,
    char *err, size_t errlen)
{
	ps_var *v = pasci_store_find(s, name, err, errlen);
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = pasci_store_check_ids(v, ids, err, errlen)) != 0 ||
	    (rv = check_apply(v, opt, err, errlen)) != 0) {
		return rv;
	}
	if ((rv = pasci_store_check_rows(v, ids, rows, "sparse gradient for",
	         name, err, errlen)) != 0) {
		return rv;
	}
	return apply_or_accumulate(
	    s, v, opt, step, sync, ids, rows, err, errlen);
}

int
pasci_store_var_fetch_add(ps_store *s, const char *name, int64_t delta,
    const pasci_wire_sync *sync, int64_t *out, bool *dropped, char *err,
    size_t errlen)
{
	ps_var *v = pasci_store_find(s, name, err, errlen);
	char    have[64];
	int     rv;
	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if (v->value->rank != 0 ||
	    (v->value->dtype != PASCO_I64 && v->value->dtype != PASCO_I32)) {
		pasci_fmt(err, errlen,
		    "fetch_add on '%s' (%s): a counter is an i64 or i32 "
		    "scalar",
		    name,
		    pasco_tensor_spec_string(v->value->dtype, v->value->rank,
		        v->value->shape, have, sizeof(have)));
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&v->mu);
	rv = pasci_store_value_own(v, err, errlen);
	rv = rv != 0 ? rv
	             : pasci_counter_step(v->value, &v->accum, delta, sync,
	                   out, dropped, err, errlen);
	pthread_mutex_unlock(&v->mu);
	return rv;
}

int
pasci_store_sync_flush(
    ps_store *s, int64_t *napplied, char *err, size_t errlen)
{
	int rv    = PASCO_OK;
	*napplied = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (int i = 0; i < STORE_BUCKETS; i++) {
		for (ps_var *v = s->buckets[i]; v != NULL; v = v->next) {
			int one = PASCO_OK;
			pthread_mutex_lock(&v->mu);
			if (v->accum.count > 0) {
				one = apply_round(s, v, err, errlen);
				*napplied += one == 0;
			} else if ((one = pasci_store_value_own(
			                v, err, errlen)) == 0 &&
			           pasci_counter_flush(v->value, &v->accum)) {
				(*napplied)++;
			}
			pthread_mutex_unlock(&v->mu);
			rv = rv != 0 ? rv : one;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return rv;
}

int
pasci_store_set_slots(ps_store *s, const char *name, pasco_optimizer_kind kind,
    int64_t step, pasco_tensor *const *slots, size_t n, char *err,
    size_t errlen)
{
	ps_var               *v     = pasci_store_find(s, name, err, errlen);
	ps_slots              fresh = {0};
	size_t                need;
	const pasci_opt_desc *d = pasci_opt_desc_of((int) kind);
	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if (d == NULL || n != (size_t) d->nslots) {
		if (d == NULL) {
			pasci_fmt(err, errlen,
			    "'%s': slots of unknown optimizer kind %d", name,
			    (int) kind);
		} else {
			char list[256];
			pasci_opt_slot_list(d, list, sizeof(list));
			pasci_fmt(err, errlen,
			    "'%s': %s has %d slots (%s), %zu were sent", name,
			    d->title, d->nslots, list, n);
		}
		return PASCO_EINVAL;
	}
	for (size_t k = 0; k < n; k++) {
		if (!pasco_tensor_same_spec(slots[k], v->value)) {
			pasci_fmt(err, errlen,
			    "'%s': slot %zu does not match the "
			    "variable's dtype and shape",
			    name, k);
			return PASCO_EINVAL;
		}
	}
	fresh.kind   = kind;
	fresh.nslots = (int) n;
	fresh.step   = step;
	need         = (size_t) n * v->value->nbytes;
	if (pasci_budget_charge(s->budget, need) != 0) {
		pasci_budget_explain(s->budget, need, err, errlen,
		    "'%s': its %s slots", name, d->title);
		return PASCO_ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		if (pasco_tensor_copy(&fresh.slot[k], slots[k]) != 0) {
			pasci_slots_fini(&fresh);
			pasci_budget_release(s->budget, need);
			return PASCO_ENOMEM;
		}
	}
	pthread_mutex_lock(&v->mu);
	pasci_budget_release(s->budget, pasci_slots_bytes(&v->slots));
	pasci_slots_fini(&v->slots);
	v->slots = fresh;
	pthread_mutex_unlock(&v->mu);
	return PASCO_OK;
}
