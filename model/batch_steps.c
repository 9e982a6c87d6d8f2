/*
 * What the library's own steps do with one batch of a compiled model
 * (model_impl.h): a dataset element taken apart into the model's inputs
 * and targets (and sample weights) as Keras takes them, a training step
 * (one read, one mixed apply) and an evaluation, each adding the metrics'
 * counts of the batch.
 * The step functions around them are worker/model_steps.c. Any thread:
 * each call has its own tape.
 */
#include "model_impl.h"
#include "tape_impl.h"

#include <string.h>

static int
input_tensor(const pasco_model *m, size_t k, const pasco_value *v,
    const pasco_tensor **out)
{
	const pasco_tensor *t = pasco_value_as_tensor(v);
	if (t == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "input '%s': the dataset element has no tensor for it",
		    m->inputs[k].name);
	}
	*out = t; /* borrowed from the element, only read */
	return PASCO_OK;
}

/* The sample weights of a triple (x, y, sample_weight) into *sw: a
 * tensor of one number per example or per step (the loss and the metrics
 * check it against the output), or NONE (Keras's None). */
static int
element_weights(const pasco_value *e, const pasco_tensor **sw)
{
	const pasco_value *v = pasco_value_item(e, 2);
	if (pasco_value_kind_of(v) == PASCO_VALUE_NONE) {
		return PASCO_OK;
	}
	if ((*sw = pasco_value_as_tensor(v)) == NULL || (*sw)->rank < 1 ||
	    (*sw)->dtype == PASCO_U8) {
		return pasci_model_fail(PASCO_EINVAL,
		    "a dataset element's sample_weight (its third item) is a "
		    "tensor of one number per example ([batch] or [batch, "
		    "1]) or, for a sequence output, one per step ([batch, "
		    "T]); got %s",
		    *sw != NULL ? PASCI_TSPEC(*sw) : "no tensor");
	}
	return PASCO_OK;
}

int
pasci_model_element(const pasco_model *m, const pasco_value *e, bool need_y,
    const pasco_tensor **inputs, const pasco_tensor **y,
    const pasco_tensor **sw)
{
	const pasco_value  *x = e;
	const pasco_tensor *ignored;
	*y  = NULL;
	sw  = sw != NULL ? sw : &ignored;
	*sw = NULL;
	if (pasco_value_kind_of(e) == PASCO_VALUE_LIST) {
		if (pasco_value_size(e) < 1 || pasco_value_size(e) > 3) {
			return pasci_model_fail(PASCO_EINVAL,
			    "a dataset element for a model is (x, y) or (x, "
			    "y, sample_weight); got a list of %zu",
			    pasco_value_size(e));
		}
		x  = pasco_value_item(e, 0);
		*y = pasco_value_size(e) >= 2
		         ? pasco_value_as_tensor(pasco_value_item(e, 1))
		         : NULL;
		if (pasco_value_size(e) == 3 &&
		    element_weights(e, sw) != PASCO_OK) {
			return PASCO_EINVAL;
		}
	}
	if (need_y && *y == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "a dataset element for training or evaluation is a list "
		    "(x, y) with y a tensor");
	}
	if (pasco_value_kind_of(x) != PASCO_VALUE_DICT) {
		if (m->ninputs != 1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "the model has %zu inputs: x must be a dict of "
			    "them by name",
			    m->ninputs);
		}
		return input_tensor(m, 0, x, &inputs[0]);
	}
	for (size_t k = 0; k < m->ninputs; k++) {
		const pasco_value *v = pasco_value_get(x, m->inputs[k].name);
		if (v == NULL && m->ninputs == 1 && pasco_value_size(x) == 1) {
			v = pasco_value_item(x, 0);
		}
		if (v == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "input '%s' is not in the dataset's dict x",
			    m->inputs[k].name);
		}
		if (input_tensor(m, k, v, &inputs[k]) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

int64_t
pasci_model_batch_size(const pasco_model *m, const pasco_tensor *const *in)
{
	(void) m;
	return in[0]->rank > 0 ? in[0]->shape[0] : 1;
}

/* The loss node, output and its mask (NULL: none) of a batch, variables
 * read onto tp; vars in the tape's arena into *vars. */
static pasco_tnode *
batch_loss(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_tape_var **vars, pasco_tnode **out,
    pasco_tnode **mask)
{
	pasco_tnode **nodes;
	*vars = pasci_tape_mem(tp, (m->nvars + 1) * sizeof(**vars));
	if (*vars == NULL ||
	    (nodes = pasci_model_read(m, tp, inputs, *vars)) == NULL) {
		return NULL;
	}
	return pasci_model_loss_masked(
	    m, tp, inputs, y, sw, m->compile.loss, nodes, out, mask);
}

/* The metrics' counts of the batch into state: a sequence's per step,
 * its masked steps left out where Keras leaves them out. */
static int
add_counts(const pasco_model *m, pasco_tape *tp, pasco_tnode *out,
    pasco_tnode *mask, const pasco_tensor *y, const pasco_tensor *sw,
    double *state)
{
	if (state == NULL || m->compile.nmetrics == 0) {
		return PASCO_OK;
	}
	if (pasci_metric_counts_masked(m, pasco_tnode_value(out), y, sw,
	        mask != NULL ? pasco_tnode_value(mask) : NULL, state) != 0) {
		pasci_tape_fail(
		    tp, PASCO_EINVAL, "%s", pasco_model_last_error());
		return pasco_tape_error(tp);
	}
	return PASCO_OK;
}

int
pasci_model_train_batch(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, const pasco_optimizer *opt, double *loss,
    double *state)
{
	pasco_tape_var *vars;
	pasco_tnode    *l, *out = NULL, *mask = NULL;
	if ((l = batch_loss(m, tp, inputs, y, sw, &vars, &out, &mask)) ==
	        NULL ||
	    pasco_tape_apply(tp, l, m->nvars, vars, opt) != 0) {
		return pasco_tape_error(tp) != 0 ? pasco_tape_error(tp)
		                                 : PASCO_EINVAL;
	}
	*loss = pasco_tensor_get(pasco_tnode_value(l), 0);
	return add_counts(m, tp, out, mask, y, sw, state);
}

int
pasci_model_eval_batch(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, double *sums)
{
	pasco_tape_var *vars;
	pasco_tnode    *l, *out = NULL, *mask = NULL;
	double          n = (double) pasci_model_batch_size(m, inputs);
	if ((l = batch_loss(m, tp, inputs, y, sw, &vars, &out, &mask)) ==
	    NULL) {
		return pasco_tape_error(tp) != 0 ? pasco_tape_error(tp)
		                                 : PASCO_EINVAL;
	}
	sums[0] += pasco_tensor_get(pasco_tnode_value(l), 0) * n;
	sums[1] += n;
	return add_counts(m, tp, out, mask, y, sw, sums + 2);
}
