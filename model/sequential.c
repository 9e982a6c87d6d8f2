/* The Sequential model on a tape: the forward pass (errors naming the
 * layer and the shapes), Keras's losses and the train step (one read, one
 * mixed apply). */
#include "layer_desc.h"
#include "layers_impl.h"
#include "model_impl.h"
#include "prep.h"
#include "tape_impl.h"
#include "variable_impl.h"

#include <string.h>

pasco_tnode *
pasci_layer_activate(pasco_tape *tp, pasco_tnode *x, pasco_act a)
{
	switch (a) {
	case PASCO_ACT_RELU:
		return pasco_t_relu(tp, x);
	case PASCO_ACT_SIGMOID:
		return pasco_t_sigmoid(tp, x);
	case PASCO_ACT_TANH:
		return pasco_t_tanh(tp, x);
	case PASCO_ACT_SOFTMAX:
		return pasco_t_softmax(tp, x);
	default:
		return x;
	}
}

pasco_tnode *
pasci_layer_var_node(const pasco_model *m, pasco_tape *tp, size_t i, size_t j,
    pasco_tnode *const *nodes)
{
	size_t k = m->first_var[i] + j;
	if (nodes == NULL || nodes[k] == NULL) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: no node for variable '%s'", m->layers[i].name,
		    m->vars[k].name);
	}
	return nodes[k];
}

/* A model input k, or a preprocessing layer r's output at ninputs + r in
 * the inputs the forward pass gives (pasci_prep_inputs). */
size_t
pasci_layer_input_of(const pasco_model *m, size_t i)
{
	int32_t r = m->layers[i].inputs[0];
	return r >= 0 ? m->ninputs + (size_t) r : (size_t) (-1 - (int64_t) r);
}

/* Layer i's input nodes into in; feature inputs made constants once. */
static bool
gather_inputs(const pasco_model *m, pasco_tape *tp, size_t i,
    const pasco_tensor *const *inputs, pasco_tnode **outs, pasco_tnode **feats,
    pasco_tnode **in)
{
	const pasco_layer *l = &m->layers[i];
	for (size_t j = 0; j < l->ninputs; j++) {
		int32_t r = l->inputs[j];
		size_t  k = (size_t) (-1 - (int64_t) r);
		if (r >= 0) {
			in[j] = outs[r];
		} else if (m->inputs[k].ids) {
			in[j] = NULL; /* an any_inputs kind's: call reads it */
			continue;
		} else {
			if (feats[k] == NULL) {
				feats[k] = pasco_tape_constant(tp, inputs[k]);
			}
			in[j] = feats[k];
		}
		if (in[j] == NULL) {
			return false;
		}
	}
	return true;
}

/* Every input present, the preprocessing layers' outputs after them
 * (pasci_prep_inputs: the inputs the rest of the pass reads), and the ids
 * of each Embedding of their dtype and width. NULL with the tape's error
 * set. */
static const pasco_tensor *const *
check_inputs(
    const pasco_model *m, pasco_tape *tp, const pasco_tensor *const *inputs)
{
	for (size_t k = 0; k < m->ninputs; k++) {
		if (inputs == NULL || inputs[k] == NULL) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "input %zu ('%s') is missing", k,
			    m->inputs[k].name);
			return NULL;
		}
	}
	if ((inputs = pasci_prep_inputs(m, tp, inputs)) == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < m->nlayers; i++) {
		if (!pasci_layer_desc_of(m->layers[i].kind)->ids) {
			continue;
		}
		size_t              k     = pasci_layer_input_of(m, i);
		const pasco_tensor *ids   = inputs[k];
		int64_t             width = k < m->ninputs ? m->inputs[k].width
		                                           : m->out_width[k - m->ninputs];
		bool ok = ids->dtype == PASCO_I32 || ids->dtype == PASCO_I64;
		ok      = ok && ((ids->rank == 1 && width == 1) ||
                               (ids->rank == 2 && ids->shape[1] == width));
		if (!ok) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: input %s%s is not ids (i32 or i64) [batch, "
			    "%lld]",
			    m->layers[i].name, pasco_dtype_name(ids->dtype),
			    PASCI_SHAPE(ids->rank, ids->shape),
			    (long long) width);
			return NULL;
		}
	}
	return inputs;
}

/* The forward pass; *pre gets the last layer's input to its activation
 * and *act that activation (linear when the last layer has none). given
 * (may be NULL): feature inputs already on the tape (pasci_model_forward).
 * added (may be NULL): the sum of what the layers add to the loss
 * (Keras's add_loss, activity_regularizer), or NULL for none; and the
 * output's mask, or NULL. */
typedef struct fwd_losses {
	pasco_tnode *added, *mask;
} fwd_losses;

static pasco_tnode *
forward(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, pasco_tnode *const *given,
    pasco_tnode *const *nodes, pasco_tnode **pre, pasco_act *act,
    fwd_losses *added)
{
	pasco_tnode **outs, **feats, *in[PASCO_LAYER_MAX_INPUTS], *h = NULL;
	pasco_tnode **masks, *in_mask[PASCO_LAYER_MAX_INPUTS];
	*pre = NULL;
	*act = PASCO_ACT_LINEAR;
	if (tp == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return NULL;
	}
	if ((inputs = check_inputs(m, tp, inputs)) == NULL) {
		return NULL;
	}
	outs  = pasci_tape_mem(tp, m->nlayers * sizeof(*outs));
	feats = pasci_tape_mem(tp, m->ninputs * sizeof(*feats));
	masks = pasci_tape_mem(tp, m->nlayers * sizeof(*masks));
	for (size_t k = 0; given != NULL && feats != NULL && k < m->ninputs;
	     k++) {
		feats[k] = given[k];
	}
	for (size_t i = 0;
	     outs != NULL && feats != NULL && masks != NULL && i < m->nlayers;
	     i++) {
		const pasci_layer_desc *d =
		    pasci_layer_desc_of(m->layers[i].kind);
		/* pre stays the last activation's input until a layer with
		 * one sets it; act is the last layer's */
		pasci_layer_call c = {.m = m,
		    .tp                  = tp,
		    .i                   = i,
		    .in                  = in,
		    .inputs              = inputs,
		    .nodes               = nodes,
		    .pre                 = *pre,
		    .act                 = PASCO_ACT_LINEAR,
		    .in_mask             = in_mask};
		if (!d->ids &&
		    !gather_inputs(m, tp, i, inputs, outs, feats, in)) {
			return NULL;
		}
		for (size_t j = 0; j < m->layers[i].ninputs; j++) {
			int32_t r  = m->layers[i].inputs[j];
			in_mask[j] = r >= 0 ? masks[r] : NULL;
		}
		h    = d->call(&c);
		*pre = c.pre;
		*act = c.act;
		if ((outs[i] = h) == NULL) {
			return NULL;
		}
		if (added != NULL) {
			pasco_tnode *a = added->added;
			if (c.loss != NULL) {
				a = a == NULL ? c.loss
				              : pasco_t_add(tp, a, c.loss);
			}
			added->added =
			    pasci_layer_activity_term(tp, a, &m->layers[i], h);
		}
		masks[i] = c.mask != NULL   ? c.mask
		           : d->keeps_shape ? in_mask[0]
		                            : NULL;
		if (added != NULL) {
			added->mask = masks[i];
		}
	}
	return h;
}

pasco_tnode *
pasco_model_call_with(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, pasco_tnode *const *nodes)
{
	pasco_tnode *pre;
	pasco_act    act;
	return forward(m, tp, inputs.c, NULL, nodes, &pre, &act, NULL);
}

pasco_tnode *
pasci_model_forward(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, pasco_tnode *const *feats,
    pasco_tnode *const *nodes)
{
	pasco_tnode *pre;
	pasco_act    act;
	return forward(m, tp, inputs, feats, nodes, &pre, &act, NULL);
}

pasco_tnode **
pasci_model_read(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, pasco_tape_var *vars)
{
	pasco_tnode **nodes;
	if (tp == NULL || pasco_tape_error(tp) != PASCO_OK ||
	    (inputs = check_inputs(m, tp, inputs)) == NULL) {
		return NULL;
	}
	for (size_t k = 0; k < m->nvars; k++) {
		const pasci_model_var *mv = &m->vars[k];
		if (mv->handle == NULL) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: variable '%s' is not created or bound "
			    "(pasco_model_create_variables, pasco_model_bind)",
			    m->layers[mv->layer].name, mv->name);
			return NULL;
		}
		vars[k].var  = mv->handle;
		vars[k].node = NULL;
		vars[k].ids =
		    pasci_layer_desc_of(m->layers[mv->layer].kind)->ids
		        ? inputs[pasci_layer_input_of(m, mv->layer)]
		        : NULL;
	}
	if (m->nvars > 0 && pasco_tape_read(tp, m->nvars, vars) != 0) {
		return NULL;
	}
	nodes = pasci_tape_mem(tp, (m->nvars + 1) * sizeof(*nodes));
	for (size_t k = 0; nodes != NULL && k < m->nvars; k++) {
		nodes[k] = vars[k].node;
	}
	return nodes;
}

pasco_tnode *
pasco_model_call(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, pasco_tape_var *vars)
{
	pasco_tnode **nodes = pasci_model_read(m, tp, inputs.c, vars);
	return nodes == NULL ? NULL
	                     : pasco_model_call_with(m, tp, inputs, nodes);
}

pasco_tnode *
pasco_model_loss(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, const pasco_tensor *y, pasco_loss loss,
    pasco_tnode *const *nodes)
{
	pasco_tnode *out;
	return pasci_model_loss_out(
	    m, tp, inputs.c, y, NULL, loss, nodes, &out);
}

/* A sequence output [batch, steps, ..., dim] and its labels as rows
 * [batch * steps..., dim] and their labels (view, sharing y's data):
 * Keras's loss of a sequence, the per-step losses averaged over the steps
 * and then the batch, is their mean over every step, the loss of the
 * rows. Labels: class ids [batch, steps] (sparse categorical), else
 * [batch, steps, dim] (or [batch, steps] of dim 1). pre (NULL: not
 * used) is reshaped the same. false with the tape's error set naming both
 * shapes. */
static bool
flat_sequence(pasco_tape *tp, const pasco_loss *loss, pasco_tnode **out,
    pasco_tnode **pre, const pasco_tensor **y, pasco_tensor *view)
{
	const pasco_tensor *o = pasco_tnode_value(*out);
	bool sparse = loss->kind == PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
	int64_t d, rows;
	if (loss->kind == PASCO_LOSS_GRAPH || o->rank < 3 ||
	    o->shape[o->rank - 1] < 1) {
		return true; /* a traced loss takes the sequence as it is */
	}
	d    = o->shape[o->rank - 1];
	rows = o->count / d;
	if ((*y)->rank < 1 || (*y)->count != (sparse ? rows : o->count) ||
	    (*y)->shape[0] != o->shape[0]) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "loss: labels %s do not match the sequence output %s "
		    "(%s)",
		    PASCI_SHAPE((*y)->rank, (*y)->shape),
		    PASCI_SHAPE(o->rank, o->shape),
		    sparse ? "class ids [batch, steps]"
		           : "[batch, steps, dim] targets");
		return false;
	}
	*view          = **y;
	view->rank     = sparse ? 1 : 2;
	view->shape[0] = rows;
	view->shape[1] = d;
	*y             = view;
	*out           = pasco_t_reshape(tp, *out, 2, (int64_t[]){rows, d});
	if (pre != NULL && *pre != NULL) {
		*pre = pasco_t_reshape(tp, *pre, 2, (int64_t[]){rows, d});
	}
	return *out != NULL;
}

/* The loss node of output out (pre: before its activation act) against
 * y: as Keras, a sigmoid's or softmax's output is differentiated through
 * its logits. */
static pasco_tnode *
loss_node(const pasco_model *m, pasco_tape *tp, const pasco_loss *loss,
    const pasco_tensor *y, const pasco_tensor *sw, pasco_tnode *out,
    pasco_tnode *pre, pasco_act act)
{
	const pasco_layer *last   = &m->layers[m->nlayers - 1];
	pasco_loss         logits = *loss;
	pasco_tensor       view;
	bool               categorical =
	    loss->kind == PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ||
	    loss->kind == PASCO_LOSS_CATEGORICAL_CROSSENTROPY;
	logits.from_logits = true;
	if (loss->kind == PASCO_LOSS_GRAPH) {
		if (m->compile.loss_graph == NULL) {
			return pasci_tape_fail(tp, PASCO_EINVAL,
			    "loss: the model has no loss graph "
			    "(pasco_compile_options.loss_graph)");
		}
		return pasci_loss_graph_run(
		    m->compile.loss_graph, tp, y, out, sw);
	}
	if (!flat_sequence(tp, loss, &out,
	        act == PASCO_ACT_SIGMOID || act == PASCO_ACT_SOFTMAX ? &pre
	                                                             : NULL,
	        &y, &view)) {
		return NULL;
	}
	if (!loss->from_logits &&
	    ((loss->kind == PASCO_LOSS_BINARY_CROSSENTROPY &&
	         act == PASCO_ACT_SIGMOID) ||
	        (categorical && act == PASCO_ACT_SOFTMAX))) {
		return pasco_t_loss_weighted(tp, &logits, pre, y, sw);
	}
	if (categorical && !loss->from_logits &&
	    last->kind != PASCO_LAYER_CUSTOM) {
		/* a custom layer's probabilities go through Keras's own
		 * logits, log(clip(p / sum p)); another's are refused */
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: the output of '%s' (activation %s) is neither logits "
		    "(from_logits) nor softmax probabilities",
		    loss->kind == PASCO_LOSS_CATEGORICAL_CROSSENTROPY
		        ? "categorical_crossentropy"
		        : "sparse_categorical_crossentropy",
		    last->name, pasco_act_name(act));
	}
	return pasco_t_loss_weighted(tp, loss, out, y, sw);
}

/* A mask (NULL: none) and the weights of a sequence (one per example,
 * or one per step: Keras's [batch, T]) as one weight per step into *sw
 * (pasci_loss_mask_weights; *w owns them, NULL when *sw serves as it
 * is). A Graph loss takes no mask, and its own check refuses weights per
 * step. false with the tape's error set. */
static bool
step_weights(const pasco_model *m, pasco_tape *tp, const pasco_loss *loss,
    pasco_tnode *out, pasco_tnode *mask, const pasco_tensor **sw,
    pasco_tensor **w)
{
	const char *last = m->layers[m->nlayers - 1].name;
	int         rv;
	*w = NULL;
	if (loss->kind == PASCO_LOSS_GRAPH && mask != NULL) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "loss: the output of '%s' is masked (mask_zero), and a "
		    "custom (graph) loss does not take the mask; use a "
		    "built-in loss (docs/sequences.md) or drop mask_zero",
		    last);
		return false;
	}
	if (loss->kind == PASCO_LOSS_GRAPH) {
		return true;
	}
	if ((rv = pasci_loss_mask_weights(pasco_tnode_value(out),
	         mask != NULL ? pasco_tnode_value(mask) : NULL, *sw, last,
	         w)) != 0) {
		pasci_tape_fail(tp, rv, "%s", pasco_model_last_error());
		return false;
	}
	*sw = *w != NULL ? *w : *sw;
	return true;
}

static pasco_tnode *loss_out(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_loss loss, pasco_tnode *const *nodes,
    pasco_tnode **output, pasco_tnode **mask);

pasco_tnode *
pasci_model_loss_out(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_loss loss, pasco_tnode *const *nodes,
    pasco_tnode **output)
{
	return loss_out(m, tp, inputs, y, sw, loss, nodes, output, NULL);
}

pasco_tnode *
pasci_model_loss_masked(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_loss loss, pasco_tnode *const *nodes,
    pasco_tnode **output, pasco_tnode **mask)
{
	*mask = NULL;
	return loss_out(m, tp, inputs, y, sw, loss, nodes, output, mask);
}

/* The loss of the model's output *output against y; *mask (mask may be
 * NULL) its mask, which weighs the loss as Keras's does. */
static pasco_tnode *
loss_out(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_loss loss, pasco_tnode *const *nodes,
    pasco_tnode **output, pasco_tnode **mask)
{
	pasco_tnode  *pre, *out, *l = NULL;
	fwd_losses    added = {NULL, NULL};
	pasco_act     act;
	pasco_tensor *w = NULL; /* the steps' weights, when made */

	out = *output =
	    forward(m, tp, inputs, NULL, nodes, &pre, &act, &added);
	if (out == NULL) {
		return NULL;
	}
	if (y == NULL) {
		return pasci_tape_fail(tp, PASCO_EINVAL, "loss: no labels");
	}
	if (mask != NULL) {
		*mask = added.mask;
	}
	if (!step_weights(m, tp, &loss, out, added.mask, &sw, &w)) {
		return NULL;
	}
	l = loss_node(m, tp, &loss, y, sw, out, pre, act);
	if (l != NULL && m->compile.has_loss_weight) {
		l = pasco_t_scale(tp, l, m->compile.loss_weight); /* Keras's */
	}
	if (l != NULL && added.added != NULL) {
		l = pasco_t_add(tp, l, added.added);
	}
	for (size_t i = 0; i < m->nlayers && l != NULL; i++) {
		const pasci_layer_desc *d =
		    pasci_layer_desc_of(m->layers[i].kind);
		pasci_layer_call c = {.m = m,
		    .tp                  = tp,
		    .i                   = i,
		    .inputs              = inputs,
		    .nodes               = nodes};
		if (d->penalty != NULL) {
			l = d->penalty(&c, l);
		}
		if (m->layers[i].kind == PASCO_LAYER_DENSE &&
		    m->layers[i].kernel_l2 > 0) {
			l = pasco_t_add(tp, l,
			    pasco_t_l2(tp, nodes[m->first_var[i]],
			        m->layers[i].kernel_l2));
		}
	}
	pasco_tensor_release(w);
	return l;
}

int
pasco_model_train_step(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, const pasco_tensor *y, pasco_loss loss,
    const pasco_optimizer *opt, double *loss_value)
{
	pasco_tape_var *vars;
	pasco_tnode   **nodes, *l;

	if (tp == NULL) {
		return PASCO_EINVAL;
	}
	vars = pasci_tape_mem(tp, (m->nvars + 1) * sizeof(*vars));
	if (opt != NULL && pasci_step_can_prefetch(opt->iterations)) {
		/* the global step with the reads (ASP): one round trip less */
		pasci_tape_step_of(tp)->counter = opt->iterations;
	}
	if (vars == NULL ||
	    (nodes = pasci_model_read(m, tp, inputs.c, vars)) == NULL ||
	    (l = pasco_model_loss(m, tp, inputs, y, loss, nodes)) == NULL ||
	    pasco_tape_apply(tp, l, m->nvars, vars, opt) != 0) {
		return pasco_tape_error(tp);
	}
	if (loss_value != NULL) {
		*loss_value = pasco_tensor_get(pasco_tnode_value(l), 0);
	}
	return PASCO_OK;
}
