/*
 * Optimizer updates through each kind's descriptor (base/optimizer_desc.h,
 * base/optimizers/<file>.c), naming no kind: element by element in double
 * precision (stored back in the variable's dtype), except f32 variables,
 * which the kind's f32 kernel updates in f32 as Keras does (an optimizer
 * without one, FTRL, in double rounded to f32). Called with the shard's
 * lock held; never blocks.
 */
#include "optimizer_apply.h"

#include <math.h>
#include <string.h>

#include "optimizer_desc.h"
#include "util.h"

/* The per-apply scalars of d at the slots' step (none for most). */
static void
scalars_of(const pasci_opt_desc *d, const pasco_optimizer *o,
    const ps_slots *s, double *k)
{
	if (d->scalars != NULL) {
		d->scalars(o, (double) s->step, k);
	}
}

int
pasci_optimizer_check(const pasco_optimizer *o, char *err, size_t errlen)
{
	const pasci_opt_desc *d   = pasci_opt_desc_of((int) o->kind);
	const char           *bad = NULL;
	pasco_optimizer       at0;
	if (d == NULL) {
		pasci_fmt(
		    err, errlen, "unknown optimizer kind %d", (int) o->kind);
		return PASCO_EINVAL;
	}
	if (o->schedule.kind != PASCO_LR_CONSTANT) {
		if ((bad = pasco_lr_schedule_error(&o->schedule)) != NULL) {
			pasci_fmt(err, errlen, "%s: learning_rate: %s",
			    d->title, bad);
			return PASCO_EINVAL;
		}
		at0 = *o; /* the rest checked at its first rate */
		at0.learning_rate =
		    pasco_lr_schedule_at(&o->schedule, 0, o->learning_rate);
		o = &at0;
	}
	if (!(o->learning_rate >= 0) || !isfinite(o->learning_rate)) {
		bad = "learning_rate must be a finite number >= 0";
	} else if (o->epsilon < 0 || o->momentum < 0 || o->momentum > 1) {
		bad = "epsilon must be >= 0 and momentum in [0, 1]";
	} else if (d->check != NULL) {
		bad = d->check(o);
	}
	if (bad != NULL) {
		pasci_fmt(err, errlen, "%s: %s", d->title, bad);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* Sets every element of a new (zero-filled) slot to x. */
static void
fill_slot(pasco_tensor *t, double x)
{
	if (x == 0) {
		return;
	}
	if (t->dtype == PASCO_F32) {
		float *p = t->data;
		for (int64_t i = 0; i < t->count; i++) {
			p[i] = (float) x;
		}
		return;
	}
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, x);
	}
}

static bool
slot_used(const pasci_opt_desc *d, const pasco_optimizer *o, int k)
{
	return d->slot_used == NULL || d->slot_used(o, k);
}

size_t
pasci_slots_need(
    const ps_slots *s, const pasco_optimizer *o, const pasco_tensor *value)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	size_t                n = 0;
	if (d == NULL || (s->kind != 0 && s->kind != o->kind)) {
		return 0; /* prepare refuses it, allocating nothing */
	}
	for (int k = 0; k < d->nslots; k++) {
		n += s->slot[k] == NULL && slot_used(d, o, k) ? value->nbytes
		                                              : 0;
	}
	return n;
}

size_t
pasci_slots_bytes(const ps_slots *s)
{
	size_t n = 0;
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		n += s->slot[k] != NULL ? s->slot[k]->nbytes : 0;
	}
	return n;
}

int
pasci_slots_prepare(ps_slots *s, const pasco_optimizer *o,
    const pasco_tensor *value, char *err, size_t errlen)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	if (s->kind != 0 && s->kind != o->kind) {
		pasci_fmt(err, errlen,
		    "the variable has %s slots; it cannot be "
		    "updated with %s",
		    pasci_opt_desc_of((int) s->kind)->title, d->title);
		return PASCO_EINVAL;
	}
	for (int k = 0; k < d->nslots; k++) {
		if (s->slot[k] == NULL && slot_used(d, o, k)) {
			if (pasco_tensor_alloc(&s->slot[k], value->dtype,
			        value->rank, value->shape) != 0) {
				if (s->kind == 0) {
					pasci_slots_fini(s);
				}
				return PASCO_ENOMEM;
			}
			fill_slot(s->slot[k], d->slot_init(o, k));
		}
	}
	s->kind   = o->kind;
	s->nslots = d->nslots;
	s->step++;
	return PASCO_OK;
}

/* The f32 case without an f32 kernel: the update in double, element by
 * element, rounded to f32 (FTRL's, pow-bound). */
static void
f32_in_double(const pasci_opt_desc *d, const pasco_optimizer *o,
    const double *k, int nslots, const pasci_opt_rows *r)
{
	for (int64_t j = 0; j < r->nrows; j++) {
		int64_t      at = r->ids != NULL ? r->ids[j] * r->row_elems
		                                 : r->at + j * r->row_elems;
		const float *g  = r->g + j * r->row_elems;
		for (int64_t i = at; i < at + r->row_elems; i++) {
			double wi = r->w[i], sl[PASCI_OPT_MAX_SLOTS] = {0};
			for (int q = 0; q < nslots; q++) {
				sl[q] = r->slot[q] != NULL ? r->slot[q][i] : 0;
			}
			d->update(o, k, &wi, g[i - at], sl);
			r->w[i] = (float) wi;
			for (int q = 0; q < nslots; q++) {
				if (r->slot[q] != NULL) {
					r->slot[q][i] = (float) sl[q];
				}
			}
		}
	}
}

/* Updates n elements from `at` in a dtype other than f32, element by
 * element in double. */
static void
apply_span(const pasci_opt_desc *d, const pasco_optimizer *o, const double *k,
    ps_slots *s, pasco_tensor *value, int64_t at, const pasco_tensor *grad,
    int64_t from, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		double w = pasco_tensor_get(value, at + i);
		double sl[PASCI_OPT_MAX_SLOTS] = {0};
		for (int q = 0; q < s->nslots; q++) {
			if (s->slot[q] != NULL) {
				sl[q] = pasco_tensor_get(s->slot[q], at + i);
			}
		}
		d->update(o, k, &w, pasco_tensor_get(grad, from + i), sl);
		pasco_tensor_set(value, at + i, w);
		for (int q = 0; q < s->nslots; q++) {
			if (s->slot[q] != NULL) {
				pasco_tensor_set(s->slot[q], at + i, sl[q]);
			}
		}
	}
}

/* Rows of a big table are cache misses: the loop asks for the row
 * PREFETCH_AHEAD ahead (value and slots) while it updates this one. */
#define PREFETCH_AHEAD 12

void
pasci_prefetch_elems(
    const pasco_tensor *t, int64_t at, int64_t n, bool for_write)
{
	size_t      esize = pasco_dtype_size(t->dtype);
	size_t      bytes = (size_t) n * esize;
	const char *p     = (const char *) t->data + (size_t) at * esize;
	for (size_t off = 0; off < bytes; off += 64) {
		if (for_write) {
			__builtin_prefetch(p + off, 1);
		} else {
			__builtin_prefetch(p + off, 0);
		}
	}
}

static void
prefetch_rows_of(const ps_slots *s, const pasco_tensor *value, int64_t at,
    int64_t row_elems)
{
	pasci_prefetch_elems(value, at, row_elems, true);
	for (int k = 0; k < s->nslots; k++) {
		if (s->slot[k] != NULL) {
			pasci_prefetch_elems(s->slot[k], at, row_elems, true);
		}
	}
}

pasco_optimizer
pasci_optimizer_at(const pasco_optimizer *o, int64_t step)
{
	pasco_optimizer at = *o;
	if (o->schedule.kind != PASCO_LR_CONSTANT) {
		/* Keras's schedule(iterations): the step before this apply */
		at.learning_rate = pasco_lr_schedule_at(
		    &o->schedule, step - 1, o->learning_rate);
	}
	return at;
}

void
pasci_optimizer_decay_elems(
    const pasco_optimizer *o, pasco_tensor *value, int64_t at, int64_t n)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	if (value->dtype == PASCO_F32) {
		d->decay_f32(o, (float *) value->data + at, n);
		return;
	}
	for (int64_t i = at; i < at + n; i++) {
		double w = pasco_tensor_get(value, i);
		d->decay(o, &w);
		pasco_tensor_set(value, i, w);
	}
}

/* Updates the nrows rows of row_elems elements of value that ids name
 * (NULL: the one span from element at) from consecutive rows of grad
 * from element `from`. A sparse apply of an optimizer with decoupled
 * weight decay (AdamW) decays the whole of value first, as Keras does
 * (O(value) per apply), and its rows are then updated without it. */
static void
apply_rows(const pasco_optimizer *o, ps_slots *s, pasco_tensor *value,
    const int64_t *ids, int64_t nrows, int64_t row_elems, int64_t at,
    const pasco_tensor *grad, int64_t from)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	double                k[PASCI_OPT_MAX_SCALARS] = {0};
	pasco_optimizer       at_step;
	bool                  decay = ids != NULL && pasci_opt_decays(o);
	if (o->schedule.kind != PASCO_LR_CONSTANT || decay) {
		/* copied only then: a dynamic table applies row by row */
		at_step = pasci_optimizer_at(o, s->step);
		o       = &at_step;
	}
	if (decay) {
		pasci_optimizer_decay_elems(o, value, 0, value->count);
		at_step.weight_decay = 0;
	}
	scalars_of(d, o, s, k);
	if (value->dtype == PASCO_F32 && grad->dtype == PASCO_F32) {
		pasci_opt_rows r = {.w = value->data,
		    .g                 = (const float *) grad->data + from,
		    .ids               = ids,
		    .nrows             = nrows,
		    .row_elems         = row_elems,
		    .at                = at};
		/* the configuration says which slots an update uses, not
		 * their presence: a restore sets every slot a checkpoint
		 * holds (Adam's v_hat without amsgrad, a zero one), which
		 * must not turn amsgrad (or RMSprop's centered) on */
		for (int q = 0; q < s->nslots; q++) {
			r.slot[q] = s->slot[q] != NULL && slot_used(d, o, q)
			                ? s->slot[q]->data
			                : NULL;
		}
		if (d->f32_rows != NULL) {
			d->f32_rows(o, k, &r);
		} else {
			f32_in_double(d, o, k, s->nslots, &r);
		}
		return;
	}
	for (int64_t i = 0; i < nrows; i++) {
		if (ids != NULL && i + PREFETCH_AHEAD < nrows) {
			prefetch_rows_of(s, value,
			    ids[i + PREFETCH_AHEAD] * row_elems, row_elems);
		}
		apply_span(d, o, k, s, value,
		    ids != NULL ? ids[i] * row_elems : at + i * row_elems,
		    grad, from + i * row_elems, row_elems);
	}
}

void
pasci_optimizer_apply(const pasco_optimizer *o, ps_slots *s,
    pasco_tensor *value, int64_t at, const pasco_tensor *grad, int64_t from,
    int64_t n)
{
	apply_rows(o, s, value, NULL, 1, n, at, grad, from);
}

void
pasci_optimizer_apply_rows(const pasco_optimizer *o, ps_slots *s,
    pasco_tensor *value, const int64_t *ids, int64_t nids, int64_t row_elems,
    const pasco_tensor *grad)
{
	apply_rows(o, s, value, ids, nids, row_elems, 0, grad, 0);
}

void
pasci_optimizer_apply_row(const pasco_optimizer *o, ps_slots *s,
    pasco_tensor *value, int64_t row, int64_t row_elems,
    const pasco_tensor *grad, int64_t grad_row)
{
	apply_rows(o, s, value, NULL, 1, row_elems, row * row_elems, grad,
	    grad_row * row_elems);
}

double
pasci_slot_init_value(const pasco_optimizer *o, int k)
{
	return pasci_opt_desc_of((int) o->kind)->slot_init(o, k);
}

void
pasci_slots_fini(ps_slots *s)
{
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		pasco_tensor_release(s->slot[k]);
	}
	memset(s, 0, sizeof(*s));
}
