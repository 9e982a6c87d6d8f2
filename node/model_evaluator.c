/*
 * The sidecar evaluator of a compiled model (model.h): the evaluator of
 * evaluator.h with the library's evaluation step, whose shard results are
 * [loss sum, examples, then the metrics' counts] (worker/model_steps.c),
 * summed over the shards and turned into each metric's value as fit's
 * validation does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layers_impl.h"
#include "model_impl.h"
#include "pasco/model.h"
#include "util.h"

#define EVAL_STEP "pasco.model_evaluate"

/* The shards' counts summed, then the loss and each metric. */
static int
model_reduce(void *arg, pasco_value *const *results, int32_t shards,
    double *loss, double *metrics, size_t nmetrics, int64_t *examples,
    char *err, size_t errlen)
{
	const pasco_model *m    = arg;
	int64_t            want = 2 + (int64_t) m->compile.state_len;
	double            *s    = pasci_calloc((size_t) want, sizeof(*s));
	if (s == NULL) {
		pasci_fmt(err, errlen, "out of memory");
		return PASCO_ENOMEM;
	}
	for (int32_t k = 0; k < shards; k++) {
		const pasco_tensor *t = pasco_value_as_tensor(results[k]);
		if (t == NULL || t->count != want) {
			pasci_fmt(err, errlen,
			    "shard %d of %s returned %lld numbers, not the "
			    "%lld of this model's loss and metric counts (is "
			    "the chief's model the one the evaluator has?)",
			    (int) k, EVAL_STEP,
			    t != NULL ? (long long) t->count : -1LL,
			    (long long) want);
			free(s);
			return PASCO_EPROTO;
		}
		for (int64_t i = 0; i < want; i++) {
			s[i] += pasco_tensor_get(t, i);
		}
	}
	*loss     = s[1] > 0 ? s[0] / s[1] : NAN;
	*examples = (int64_t) s[1];
	for (size_t k = 0; k < nmetrics; k++) {
		metrics[k] = pasci_metric_result(m, k, s + 2);
	}
	free(s);
	return PASCO_OK;
}

int
pasco_model_evaluator_run(pasco_model *m, const char *dataset,
    const pasco_evaluator_options *o, int64_t *count, int64_t *last_step)
{
	pasco_evaluator_options eo;
	pasco_evaluator        *e    = NULL;
	pasco_tensor           *name = NULL;
	pasco_arg              *args = NULL;
	const char             *names[PASCI_MAX_METRICS];
	int64_t                 len;
	size_t                  n = 0;
	int                     rv;

	if (m == NULL || dataset == NULL || o == NULL ||
	    !m->compile.compiled) {
		return pasci_model_fail(PASCO_EINVAL,
		    "evaluator: needs a compiled model, a dataset factory "
		    "name and options");
	}
	eo = *o;
	for (size_t k = 0; k < m->compile.nmetrics; k++) {
		names[k] = m->compile.metric_names[k];
	}
	eo.eval_fn      = EVAL_STEP;
	eo.metric_names = names;
	eo.num_metrics  = m->compile.nmetrics;
	eo.num_shards   = o->num_shards > 0 ? o->num_shards : 4;
	eo.reduce       = model_reduce;
	eo.reduce_arg   = m;
	len             = (int64_t) strlen(dataset);
	if ((rv = pasco_evaluator_create(&e, &eo)) != 0) {
		return pasci_model_fail(
		    rv, "evaluator: %s", pasco_evaluator_error(NULL));
	}
	if ((args = pasci_calloc(
	         pasco_model_num_args(m) + 1, sizeof(*args))) == NULL ||
	    pasco_tensor_from(
	        &name, PASCO_U8, 1, &len, dataset, (size_t) len) != 0) {
		rv = pasci_model_fail(PASCO_ENOMEM, "out of memory");
	} else if ((rv = pasco_model_create_variables(
	                m, pasco_evaluator_strategy(e))) == 0 &&
	           (rv = pasco_model_args(
	                m, args, pasco_model_num_args(m) + 1, &n)) == 0) {
		args[n++] = pasco_arg_tensor(name);
		if ((rv = pasco_evaluator_run(e, args, n)) != 0) {
			pasci_model_fail(
			    rv, "evaluator: %s", pasco_evaluator_error(e));
		}
	}
	if (count != NULL) {
		*count = pasco_evaluator_count(e);
	}
	if (last_step != NULL) {
		*last_step = pasco_evaluator_last_step(e);
	}
	pasco_tensor_release(name);
	free(args);
	/* the variables live on the evaluator's strategy: freed first */
	pasci_model_drop_variables(m);
	pasco_evaluator_destroy(e);
	return rv;
}
