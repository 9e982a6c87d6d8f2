/*
 * Keras's Dropout(rate, noise_shape=None, seed=None): zeroes a rate of
 * its inputs, scaling the rest by 1 / (1 - rate), on a training tape
 * only; any shape, its mask passed on. noise_shape: one draw per element
 * of it, broadcast over its dimensions of 1; seed: mixed into the tape's
 * (each seeded layer draws its own masks, the same ones for one tape
 * seed). No variables. Its descriptor (layer_desc.h). Stateless: any
 * thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

static void
dropout_defaults(pasco_layer *l)
{
	l->dropout_seed = -1;
}

pasco_layer
pasco_layer_dropout(double rate)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_DROPOUT);
	l.rate        = rate;
	return pasci_layer_named(l);
}

static int
dropout_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	if (!(l->rate >= 0 && l->rate < 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: rate must be in [0, 1), got %g", l->name, l->rate);
	}
	if (l->dropout_seed < -1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: seed must be >= 0 (or None), got %lld", l->name,
		    (long long) l->dropout_seed);
	}
	return PASCO_OK;
}

/* noise_shape against the input's per-example shape: the batch's
 * dimension None (-1) or 1, each other None, 1 or the input's. */
static int
dropout_shape(const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	bool ok = l->noise_rank == 0 ||
	          (l->noise_rank == in[0].rank + 1 &&
	              (l->noise_shape[0] == -1 || l->noise_shape[0] == 1));
	for (int32_t k = 1; ok && k < l->noise_rank; k++) {
		int64_t d = l->noise_shape[k];
		ok        = d == -1 || d == 1 || d == in[0].dim[k - 1];
	}
	if (!ok) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: noise_shape %s does not fit inputs (batch, %s): one "
		    "dimension each, None (-1), 1 or the input's",
		    l->name, PASCI_SHAPE(l->noise_rank, l->noise_shape),
		    PASCI_ESHAPE(&in[0]) + 1);
	}
	*out = in[0];
	return PASCO_OK;
}

static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* x times a mask of noise_shape (None: x's dimension), each element 0 or
 * 1 / (1 - rate), drawn from the tape's seed, the layer's and its index. */
static pasco_tnode *
noise_dropout(pasci_layer_call *c, const pasco_layer *l)
{
	const pasco_tensor *x = pasco_tnode_value(c->in[0]);
	int64_t             shape[PASCO_LAYER_MAX_SHAPE + 1];
	uint64_t            state;
	pasco_tensor       *mask;
	pasco_tnode        *m;
	for (int32_t k = 0; k < x->rank; k++) {
		shape[k] = l->noise_rank == 0 || l->noise_shape[k] == -1
		               ? x->shape[k]
		               : l->noise_shape[k];
	}
	if (pasco_tensor_alloc(&mask, x->dtype, x->rank, shape) != 0) {
		return pasci_tape_fail(
		    c->tp, PASCO_ENOMEM, "%s: out of memory", l->name);
	}
	state = pasci_tape_seed(c->tp, -1 - (int64_t) c->i) ^
	        mix64((uint64_t) l->dropout_seed + 0x9e3779b97f4a7c15ULL);
	for (int64_t k = 0; k < mask->count; k++) {
		double u =
		    (double) (mix64(state += 0x9e3779b97f4a7c15ULL) >> 11) *
		    0x1.0p-53;
		pasco_tensor_set(
		    mask, k, u >= l->rate ? 1 / (1 - l->rate) : 0);
	}
	m = pasco_tape_constant(c->tp, mask);
	pasco_tensor_release(mask);
	return pasco_t_mul(c->tp, c->in[0], m);
}

static pasco_tnode *
dropout_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	if ((l->noise_rank == 0 && l->dropout_seed < 0) ||
	    !pasci_tape_training(c->tp) || l->rate == 0) {
		return pasco_t_dropout(c->tp, c->in[0], l->rate);
	}
	return noise_dropout(c, l);
}

static bool
dropout_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddNumberToObject(c, "rate", l->rate) != NULL &&
	       pasci_json_write_dims(
	           c, "noise_shape", l->noise_rank, l->noise_shape, true) &&
	       (l->dropout_seed < 0 ? cJSON_AddNullToObject(c, "seed") != NULL
	                            : cJSON_AddNumberToObject(c, "seed",
	                                  (double) l->dropout_seed) != NULL);
}

static int
dropout_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *seed = cJSON_GetObjectItemCaseSensitive(c, "seed");
	(void) part;
	l->dropout_seed = -1;
	return pasci_json_number(c, "rate", &l->rate, false, 0, at) != 0 ||
	               pasci_json_read_dims(c, "noise_shape", &l->noise_rank,
	                   l->noise_shape, PASCO_LAYER_MAX_SHAPE + 1, true,
	                   at) != 0 ||
	               (seed != NULL && !cJSON_IsNull(seed) &&
	                   pasci_json_int(
	                       c, "seed", &l->dropout_seed, 0, at) != 0)
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_dropout_desc = {
    .kind        = PASCO_LAYER_DROPOUT,
    .class_name  = "Dropout",
    .prefix      = "dropout",
    .keys        = {"name", "rate", "noise_shape", "seed"},
    .args        = {"rate"},
    .min_inputs  = 1,
    .keeps_shape = true,
    .defaults    = dropout_defaults,
    .check       = dropout_check,
    .shape       = dropout_shape,
    .call        = dropout_call,
    .write       = dropout_write,
    .read        = dropout_read,
};
