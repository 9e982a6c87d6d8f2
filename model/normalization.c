/*
 * Keras's Normalization.adapt: per-feature mean and population variance
 * of data, accumulated batch by batch in f64 (Chan's pairwise update, the
 * combination Keras's update_state makes), kept in the model and written
 * to the layer's variables on the ps (mean, variance, count). Runs on the
 * chief's thread; a model is not shared while it is adapted.
 */
#include "layers_impl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Running statistics: m2 is the sum of squared deviations until the end,
 * when it becomes the variance. */
typedef struct norm_acc {
	int64_t width, count;
	double *mean, *m2, *bmean, *bm2;
} norm_acc;

void
pasci_model_norm_free(pasco_model *m)
{
	for (size_t i = 0; m->norm != NULL && i < m->nlayers; i++) {
		free(m->norm[i].mean);
		pasco_variable_free(m->norm[i].count_var);
	}
	free(m->norm);
	m->norm = NULL;
}

/* Combines the rows of data [n, width] into a. */
static void
acc_add(norm_acc *a, const pasco_tensor *data)
{
	int64_t n = data->count / a->width, tot = a->count + n;
	if (n == 0) {
		return;
	}
	memset(a->bmean, 0, sizeof(double) * (size_t) a->width);
	memset(a->bm2, 0, sizeof(double) * (size_t) a->width);
	for (int64_t r = 0; r < n; r++) {
		for (int64_t j = 0; j < a->width; j++) {
			a->bmean[j] +=
			    pasco_tensor_get(data, r * a->width + j);
		}
	}
	for (int64_t j = 0; j < a->width; j++) {
		a->bmean[j] /= (double) n;
	}
	for (int64_t r = 0; r < n; r++) {
		for (int64_t j = 0; j < a->width; j++) {
			double d = pasco_tensor_get(data, r * a->width + j) -
			           a->bmean[j];
			a->bm2[j] += d * d;
		}
	}
	for (int64_t j = 0; j < a->width; j++) {
		double d = a->bmean[j] - a->mean[j];
		a->mean[j] += d * (double) n / (double) tot;
		a->m2[j] += a->bm2[j] + d * d * (double) a->count *
		                            (double) n / (double) tot;
	}
	a->count = tot;
}

/* data as layer i's input: [n, width], or [n] for width 1. */
static int
check_data(
    const pasco_model *m, size_t i, const pasco_tensor *data, int64_t width)
{
	bool ok = data != NULL && data->dtype != PASCO_U8 &&
	          ((data->rank == 2 && data->shape[1] == width) ||
	              (data->rank == 1 && width == 1));
	if (!ok) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: adapt: data %s%s is not [n, %lld] numbers",
		    m->layers[i].name,
		    data ? pasco_dtype_name(data->dtype) : "(none)",
		    data ? PASCI_SHAPE(data->rank, data->shape) : "",
		    (long long) width);
	}
	return PASCO_OK;
}

/* Layer i's model input, or an error when it is not a Normalization on
 * one. */
static int
norm_input(const pasco_model *m, size_t i, size_t *k)
{
	const pasco_layer *l;
	if (m == NULL || i >= m->nlayers) {
		return pasci_model_fail(
		    PASCO_EINVAL, "adapt: no layer %zu in the model", i);
	}
	l = &m->layers[i];
	if (l->kind != PASCO_LAYER_NORMALIZATION) {
		return pasci_model_fail(PASCO_EINVAL,
		    "adapt: layer %zu ('%s') is not a Normalization", i,
		    l->name);
	}
	if (l->inputs[0] >= 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: adapt: the layer is called on layer '%s', not on a "
		    "model input",
		    l->name, m->layers[l->inputs[0]].name);
	}
	*k = (size_t) (-1 - (int64_t) l->inputs[0]);
	return PASCO_OK;
}

/* The input tensor in a dataset element for model input k. */
static const pasco_tensor *
element_input(const pasco_model *m, size_t k, const pasco_value *e)
{
	if (pasco_value_kind_of(e) == PASCO_VALUE_LIST) {
		e = pasco_value_item(e, 0);
	}
	if (pasco_value_kind_of(e) == PASCO_VALUE_DICT) {
		e = pasco_value_get(e, m->inputs[k].name);
	} else if (m->ninputs != 1) {
		return NULL; /* several inputs: only by name */
	}
	return pasco_value_as_tensor(e);
}

static int
acc_init(norm_acc *a, int64_t width)
{
	memset(a, 0, sizeof(*a));
	a->width = width;
	a->mean  = pasci_calloc(4 * (size_t) width, sizeof(double));
	if (a->mean == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	a->m2    = a->mean + width;
	a->bmean = a->m2 + width;
	a->bm2   = a->bmean + width;
	return PASCO_OK;
}

/* Keeps a's result as layer i's statistics (taking its memory) and writes
 * them to the ps when the variables exist. */
static int
acc_finish(pasco_model *m, size_t i, norm_acc *a)
{
	pasci_model_norm *s = &m->norm[i];
	if (a->count == 0) {
		free(a->mean);
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: adapt: the data has no rows", m->layers[i].name);
	}
	int64_t flat = 0, first = -1;
	for (int64_t j = 0; j < a->width; j++) {
		a->m2[j] /= (double) a->count;
		if (a->m2[j] <= 0) {
			first = first < 0 ? j : first;
			flat++;
		}
	}
	if (flat > 0) {
		/* Keras divides by max(sqrt(variance), 1e-7) all the same; a
		 * value there that differs from the mean later comes out huge
		 */
		pasci_log(PASCI_LOG_WARN,
		    "%s: adapt: %lld of %lld features have variance 0 in the "
		    "adapted data (the first is feature %lld, always %g): a "
		    "later input that differs there is scaled by 1e7",
		    m->layers[i].name, (long long) flat, (long long) a->width,
		    (long long) first, a->mean[first]);
	}
	free(s->mean);
	s->mean     = a->mean;
	s->variance = a->m2;
	s->count    = a->count;
	return pasci_model_norm_write(m, i);
}

int
pasco_model_adapt_tensor(
    pasco_model *m, size_t layer, const pasco_tensor *data)
{
	norm_acc a;
	size_t   k = 0;
	int      rv;
	if ((rv = norm_input(m, layer, &k)) != 0 ||
	    (rv = check_data(m, layer, data, m->inputs[k].width)) != 0 ||
	    (rv = acc_init(&a, m->inputs[k].width)) != 0) {
		return rv;
	}
	acc_add(&a, data);
	return acc_finish(m, layer, &a);
}

int
pasco_model_adapt(pasco_model *m, size_t layer, pasco_dataset *ds)
{
	norm_acc     a;
	pasco_value *e;
	size_t       k = 0;
	int          rv;
	if ((rv = norm_input(m, layer, &k)) != 0 ||
	    (rv = acc_init(&a, m->inputs[k].width)) != 0) {
		return rv;
	}
	while ((rv = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		const pasco_tensor *t = element_input(m, k, e);
		if ((rv = check_data(m, layer, t, a.width)) == 0) {
			acc_add(&a, t);
		}
		pasco_value_free(e);
		if (rv != 0) {
			free(a.mean);
			return rv;
		}
	}
	if (rv != PASCO_EOUTOFRANGE) {
		free(a.mean);
		return pasci_model_fail(rv,
		    "%s: adapt: the dataset failed: %s", m->layers[layer].name,
		    pasco_dataset_last_error());
	}
	return acc_finish(m, layer, &a);
}

/* stats[0..width) as an f32 tensor assigned to v. */
static int
assign_f32(pasco_variable *v, const double *stats, int64_t width)
{
	pasco_tensor *t;
	int           rv;
	if (pasco_tensor_alloc(&t, PASCO_F32, 1, &width) != 0) {
		return PASCO_ENOMEM;
	}
	for (int64_t j = 0; j < width; j++) {
		((float *) t->data)[j] = (float) stats[j];
	}
	rv = pasco_variable_assign(v, t);
	pasco_tensor_release(t);
	return rv;
}

int
pasci_model_norm_write(pasco_model *m, size_t i)
{
	pasci_model_norm *s = &m->norm[i];
	pasco_variable   *mv, *vv;
	pasco_tensor     *c;
	int64_t           width = m->vars[m->first_var[i]].shape[0];
	int               rv;
	mv = m->vars[m->first_var[i]].handle;
	vv = m->vars[m->first_var[i] + 1].handle;
	if (s->count == 0 || !m->owns || mv == NULL || s->count_var == NULL) {
		return PASCO_OK;
	}
	if ((rv = assign_f32(mv, s->mean, width)) != 0 ||
	    (rv = assign_f32(vv, s->variance, width)) != 0) {
		const char *e = pasco_variable_error(mv)[0] != 0
		                    ? pasco_variable_error(mv)
		                    : pasco_variable_error(vv);
		return pasci_model_fail(rv,
		    "%s: writing the adapted statistics: %s",
		    m->layers[i].name, e);
	}
	if ((rv = pasco_tensor_scalar(&c, PASCO_I64, 0)) != 0) {
		return pasci_model_fail(rv, "out of memory");
	}
	*(int64_t *) c->data = s->count;
	rv                   = pasco_variable_assign(s->count_var, c);
	pasco_tensor_release(c);
	if (rv != 0) {
		return pasci_model_fail(rv, "%s: writing count: %s",
		    m->layers[i].name, pasco_variable_error(s->count_var));
	}
	return PASCO_OK;
}
