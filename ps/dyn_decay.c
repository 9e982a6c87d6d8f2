/*
 * AdamW's decoupled weight decay on a dynamic table, lazily. Keras decays
 * the whole variable on every apply (w -= w * weight_decay * lr); a
 * table's rows are too many to touch on every apply, so the table keeps
 * the product of (1 - weight_decay * lr_t) over its applies (decay) and
 * each row the product when it was last brought up to date (dstamp). A
 * row is brought up to date, multiplied by decay / dstamp, before it is
 * read (lookup), updated (apply) or exported (checkpoints, saving), so
 * every value seen equals the eagerly decayed one to f32 rounding (the
 * product in double, rounded once, against Keras's rounding at each
 * apply). An apply multiplies decay by its factor, and the rows it
 * updates are decayed by the optimizer's own kernel with their update. A
 * row made starts at its initializer's values, up to date: it did not
 * exist before. When the product would fall below DECAY_FLOOR, or a
 * factor is not positive (weight_decay * lr >= 1), every row is brought
 * up to date and the product starts again at 1 (O(rows), once in many
 * applies; each apply, for a factor that is not positive).
 * Everything here runs with the table's lock held.
 */
#include "dyn_table_impl.h"

/* Below it a product of factors is started again (far above underflow:
 * a factor of 0.9 reaches it after about 3000 applies). */
#define DECAY_FLOOR 1e-140

static void
row_scale(pasci_dyn_table *t, uint32_t r, double f)
{
	float *w = row_data(t, r);
	for (int64_t j = 0; j < t->c.dim; j++) {
		w[j] = (float) ((double) w[j] * f);
	}
}

void
pasci_dyn_row_current(pasci_dyn_table *t, uint32_t r)
{
	double *stamp = &LINK(t, r, dstamp);
	if (*stamp != t->decay) {
		row_scale(t, r, t->decay / *stamp);
		*stamp = t->decay;
	}
}

void
pasci_dyn_all_current(pasci_dyn_table *t)
{
	for (uint32_t r = t->head; r != NO_ROW; r = LINK(t, r, next)) {
		pasci_dyn_row_current(t, r);
		LINK(t, r, dstamp) = 1;
	}
	t->decay = 1;
}

bool
pasci_dyn_decay_begin(
    pasci_dyn_table *t, const pasco_optimizer *at, pasco_optimizer *rows_opt)
{
	double f  = 1 - at->weight_decay * at->learning_rate;
	*rows_opt = *at;
	if (f > 0 && t->decay * f >= DECAY_FLOOR) {
		t->decay_next = t->decay * f;
		return true;
	}
	pasci_dyn_all_current(t);
	if (f > 0) {
		t->decay_next = f;
		return true;
	}
	/* eagerly: every row decayed now, the updated ones without it */
	for (uint32_t r = t->head; r != NO_ROW; r = LINK(t, r, next)) {
		pasci_optimizer_decay_elems(at, chunk_of(t, r)->value,
		    (int64_t) (r % t->crows) * t->c.dim, t->c.dim);
	}
	rows_opt->weight_decay = 0;
	t->decay_next          = 1;
	return false;
}

void
pasci_dyn_decay_row(pasci_dyn_table *t, uint32_t r)
{
	double *stamp = &LINK(t, r, dstamp);
	if (*stamp != t->decay_next) { /* not updated yet by this apply */
		pasci_dyn_row_current(t, r);
		*stamp = t->decay_next;
	}
}

void
pasci_dyn_decay_end(pasci_dyn_table *t)
{
	t->decay = t->decay_next;
}
