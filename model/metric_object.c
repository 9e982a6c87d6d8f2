/*
 * Keras 3's metric objects outside a model (include/pasco/metrics.h,
 * "Metric objects"): a metric read as pasco_compile_options.metrics reads
 * it (model/metric_spec.c), its counts made by the compiled metrics'
 * code (model/metric_counts.c) and kept in an f64 variable on a ps, so
 * every worker adds its batches with one assign_add and any task reads
 * the result. It holds a one-layer model (a linear Activation of the
 * predictions' width) compiled with that metric: the metric code's
 * context. Immutable once made: any thread.
 */
#include "model_impl.h"
#include "pasco/metrics.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct pasco_metric {
	pasco_model *m; /* compiled with the one metric */
};

int
pasco_metric_create(
    pasco_metric **out, const char *spec, int64_t width, const char *loss)
{
	pasco_layer   l = pasci_layer_defaults(PASCO_LAYER_ACTIVATION);
	pasco_metric *mt;
	int           rv;
	*out = NULL;
	if (spec == NULL || width < 1) {
		return pasci_model_fail(PASCO_EINVAL, "metric: %s",
		    spec == NULL ? "no spec (a name or a metric object's JSON)"
		                 : "width must be >= 1 (the predictions' "
		                   "columns)");
	}
	if ((mt = pasci_calloc(1, sizeof(*mt))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	snprintf(l.name, sizeof(l.name), "predictions");
	pasco_compile_options o = {.loss = loss != NULL ? loss : "mse",
	    .optimizer                   = pasco_sgd(0.01, 0, false),
	    .metrics                     = &spec,
	    .nmetrics                    = 1,
	    .no_global_step              = true};
	if ((rv = pasco_model_sequential(&mt->m, width, 1, &l, 0)) != 0 ||
	    (rv = pasco_model_compile(mt->m, &o)) != 0) {
		pasco_metric_destroy(mt);
		return rv;
	}
	*out = mt;
	return PASCO_OK;
}

void
pasco_metric_destroy(pasco_metric *mt)
{
	if (mt != NULL) {
		pasco_model_free(mt->m);
		free(mt);
	}
}

const char *
pasco_metric_name(const pasco_metric *mt)
{
	return mt->m->compile.metric_names[0];
}

int64_t
pasco_metric_state_len(const pasco_metric *mt)
{
	return (int64_t) mt->m->compile.state_len;
}

int
pasco_metric_add(pasco_variable *state, const pasco_metric *mt,
    const pasco_tensor *pred, const pasco_tensor *labels)
{
	int64_t       n = (int64_t) mt->m->compile.state_len;
	int64_t       w = mt->m->inputs[0].width;
	pasco_tensor *delta, view;
	int           rv;
	if (pred == NULL || pred->count % w != 0 ||
	    (pred->rank != 2 && !(pred->rank == 1 && w == 1))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: predictions %s are not [batch, %lld]",
		    pasco_metric_name(mt),
		    pred != NULL ? PASCI_SHAPE(pred->rank, pred->shape)
		                 : "NULL",
		    (long long) w);
	}
	view          = *pred; /* [batch] of width 1 as [batch, 1] */
	view.rank     = 2;
	view.shape[0] = pred->count / w;
	view.shape[1] = w;
	if ((rv = pasco_tensor_alloc(&delta, PASCO_F64, 1, &n)) != 0) {
		return pasci_model_fail(rv, "out of memory");
	}
	if ((rv = pasci_metric_counts(mt->m, &view, labels, delta->data)) ==
	    0) {
		rv = pasco_variable_assign_add(state, delta);
	}
	pasco_tensor_release(delta);
	return rv;
}

int
pasco_metric_value(pasco_variable *state, const pasco_metric *mt, double *out)
{
	pasco_tensor *t;
	int           rv;
	*out = NAN;
	if ((rv = pasco_variable_read(state, &t)) != 0) {
		return rv;
	}
	if (t->dtype != PASCO_F64 ||
	    t->count != (int64_t) mt->m->compile.state_len) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: its state is f64 [%zu], the variable is %s%s",
		    pasco_metric_name(mt), mt->m->compile.state_len,
		    pasco_dtype_name(t->dtype),
		    PASCI_SHAPE(t->rank, t->shape));
	} else {
		*out = pasci_metric_result(mt->m, 0, t->data);
	}
	pasco_tensor_release(t);
	return rv;
}
