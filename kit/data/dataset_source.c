/*
 * Dataset sources: range, from_tensors (rows of a value) and generators
 * (a user callback; the file sources in csv.c and tfrecord.c are
 * generators). A source is iterated by one thread at a time (see
 * kit/data/dataset.c), so its position needs no lock of its own.
 */
#include <stdlib.h>

#include "dataset_impl.h"
#include "util.h"
#include "value_impl.h"

typedef struct range {
	int64_t start, stop, step;
	int64_t next; /* the value of the next element */
} range;

static int
range_next(pasco_dataset *ds, pasco_value **out)
{
	range        *r = ds->state;
	pasco_tensor *t;
	if ((r->step > 0 && r->next >= r->stop) ||
	    (r->step < 0 && r->next <= r->stop)) {
		return PASCO_EOUTOFRANGE;
	}
	if (pasco_tensor_scalar(&t, PASCO_I64, 0) != 0) {
		return PASCO_ENOMEM;
	}
	*(int64_t *) t->data = r->next;
	r->next += r->step;
	*out = pasco_value_tensor(t);
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

static int
range_reset(pasco_dataset *ds)
{
	range *r = ds->state;
	r->next  = r->start;
	return PASCO_OK;
}

static const struct dataset_ops range_ops = {
    .next = range_next, .reset = range_reset, .fini = NULL};

int
pasco_dataset_range(
    pasco_dataset **out, int64_t start, int64_t stop, int64_t step)
{
	int rv;
	if (step == 0) {
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &range_ops, NULL, sizeof(range))) ==
	    0) {
		*(range *) (*out)->state = (range){
		    .start = start, .stop = stop, .step = step, .next = start};
	}
	return rv;
}

/* from_tensors: the rows of a value, sliced one at a time. */
typedef struct tensors {
	pasco_value *value; /* owned: a clone of the caller's */
	int64_t      rows;
	int64_t      next; /* the next row */
} tensors;

static pasco_value *
slice_row(const pasco_value *v, int64_t row)
{
	switch (v->kind) {
	case PASCO_VALUE_TENSOR: {
		const pasco_tensor *t = v->tensor;
		pasco_tensor       *s;
		size_t rowbytes = t->nbytes / (size_t) t->shape[0];
		if (pasco_tensor_from(&s, t->dtype, t->rank - 1, t->shape + 1,
		        (const char *) t->data + rowbytes * (size_t) row,
		        rowbytes) != 0) {
			return NULL;
		}
		return pasco_value_tensor(s);
	}
	case PASCO_VALUE_LIST:
	case PASCO_VALUE_DICT: {
		pasco_value **items = pasci_calloc(v->n + 1, sizeof(*items));
		pasco_value  *out;
		if (items == NULL) {
			return NULL;
		}
		for (size_t i = 0; i < v->n; i++) {
			items[i] = slice_row(v->items[i], row);
		}
		out = v->kind == PASCO_VALUE_LIST
		          ? pasco_value_list_of(v->n, items)
		          : pasci_value_dict_of(
		                v->n, (const char *const *) v->keys, items);
		free(items);
		return out;
	}
	default:
		return pasco_value_none();
	}
}

/* Rows of every tensor under v (all must agree): -1 when they differ or
 * one is a scalar, -2 when v holds no tensor. */
static int64_t
count_rows(const pasco_value *v)
{
	int64_t rows = -2;
	if (v->kind == PASCO_VALUE_TENSOR) {
		return v->tensor->rank > 0 ? v->tensor->shape[0] : -1;
	}
	for (size_t i = 0; i < v->n; i++) {
		int64_t r = count_rows(v->items[i]);
		if (r == -1 || (rows != -2 && r != -2 && r != rows)) {
			return -1;
		}
		rows = r != -2 ? r : rows;
	}
	return rows;
}

static int
tensors_next(pasco_dataset *ds, pasco_value **out)
{
	tensors *ts = ds->state;
	if (ts->next >= ts->rows) {
		return PASCO_EOUTOFRANGE;
	}
	*out = slice_row(ts->value, ts->next++);
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

static int
tensors_reset(pasco_dataset *ds)
{
	tensors *ts = ds->state;
	ts->next    = 0;
	return PASCO_OK;
}

static void
tensors_fini(pasco_dataset *ds)
{
	tensors *ts = ds->state;
	pasco_value_free(ts->value);
}

static const struct dataset_ops tensors_ops = {
    .next = tensors_next, .reset = tensors_reset, .fini = tensors_fini};

int
pasco_dataset_from_tensors(pasco_dataset **out, const pasco_value *value)
{
	int64_t  rows = value != NULL ? count_rows(value) : -1;
	tensors *ts;
	int      rv;
	if (rows < 0) {
		*out = NULL;
		return PASCO_EINVAL; /* scalars, or tensors of unequal rows */
	}
	if ((rv = pasci_dataset_new(
	         out, &tensors_ops, NULL, sizeof(tensors))) != 0) {
		return rv;
	}
	ts       = (*out)->state;
	ts->rows = rows;
	if ((ts->value = pasco_value_clone(value)) == NULL) {
		pasco_dataset_free(*out);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	return PASCO_OK;
}

/* generator: the user's callbacks. */
typedef struct gen {
	pasco_generator_next next;
	void (*reset)(void *);
	void (*free_arg)(void *);
	void *arg;
} gen;

static int
gen_next(pasco_dataset *ds, pasco_value **out)
{
	gen *g = ds->state;
	int  rv;
	*out = NULL; /* callers may pass an uninitialised pointer */
	rv   = g->next(g->arg, out);
	if (rv != 0) {
		pasco_value_free(*out);
		*out = NULL;
	}
	return rv;
}

static int
gen_reset(pasco_dataset *ds)
{
	gen *g = ds->state;
	if (g->reset == NULL) {
		return PASCO_EPRECONDITION; /* cannot repeat without reset */
	}
	g->reset(g->arg);
	return PASCO_OK;
}

static void
gen_fini(pasco_dataset *ds)
{
	gen *g = ds->state;
	if (g->free_arg != NULL) {
		g->free_arg(g->arg);
	}
}

static const struct dataset_ops gen_ops = {
    .next = gen_next, .reset = gen_reset, .fini = gen_fini};

int
pasco_dataset_from_generator(pasco_dataset **out, pasco_generator_next next,
    void (*reset)(void *), void (*free_arg)(void *), void *arg)
{
	int rv;
	if (next == NULL) {
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &gen_ops, NULL, sizeof(gen))) == 0) {
		*(gen *) (*out)->state = (gen){next, reset, free_arg, arg};
	}
	return rv;
}
