/*
 * Fuzz target: a model config as a worker gets it from its chief
 * (pasco_model_from_json, model/config.c), now with Custom layers holding
 * op graphs (docs/GRAPHS.md) and loss graphs. A config that parses must
 * write back (pasco_model_to_json) to JSON that parses again to the same
 * bytes; and a forward pass on a tape, training and not, of a zero batch
 * of the model's input widths with zero variables must not crash (its
 * errors are fine, but must say what was wrong; tapes are bounded to 1 GiB,
 * below fuzz/run's malloc limit). A refusal must say why.
 */
#include "fuzz_util.h"
#include "layers_impl.h"
#include "pasco/model.h"
#include "pasco/tape.h"
#include "tape_impl.h"

/* The forward pass skips models whose zero inputs and variables together
 * would pass this many elements (the bound is on the fuzzer's memory; a
 * worker's variables come from the ps, which bounds them). */
#define FUZZ_MAX_ELEMS ((int64_t) 1 << 20)
#define FUZZ_BATCH 2

/* count of a shape, or -1 past FUZZ_MAX_ELEMS */
static int64_t
elems(int32_t rank, const int64_t *shape)
{
	int64_t n = 1;
	for (int32_t d = 0; d < rank; d++) {
		if (shape[d] < 0 ||
		    (shape[d] > 0 && n > FUZZ_MAX_ELEMS / shape[d])) {
			return -1;
		}
		n *= shape[d];
	}
	return n;
}

static void
forward(const pasco_model *m, bool training)
{
	size_t         ni    = pasco_model_num_inputs(m);
	size_t         nv    = pasco_model_num_variables(m);
	pasco_tensor **in    = calloc(ni > 0 ? ni : 1, sizeof(*in));
	pasco_tnode  **nodes = calloc(nv > 0 ? nv : 1, sizeof(*nodes));
	pasco_tape    *tp    = NULL;
	int64_t        total = 0;
	if (in == NULL || nodes == NULL ||
	    pasco_tape_alloc(&tp, training, 1) != 0) {
		goto done;
	}
	for (size_t k = 0; k < ni; k++) {
		int64_t shape[2] = {FUZZ_BATCH, m->inputs[k].width};
		int64_t n        = elems(2, shape);
		if (n < 0 || (total += n) > FUZZ_MAX_ELEMS ||
		    pasco_tensor_alloc(&in[k],
		        m->inputs[k].ids ? PASCO_I64 : PASCO_F32, 2,
		        shape) != 0) {
			goto done;
		}
	}
	for (size_t k = 0; k < nv; k++) {
		const int64_t *shape;
		int32_t        r = pasco_model_variable_shape(m, k, &shape);
		int64_t        n = elems(r, shape);
		pasco_tensor  *t;
		if (n < 0 || (total += n) > FUZZ_MAX_ELEMS ||
		    pasco_tensor_alloc(&t, PASCO_F32, r, shape) != 0) {
			goto done;
		}
		nodes[k] =
		    m->layers[m->vars[k].layer].kind == PASCO_LAYER_EMBEDDING
		        ? pasco_tape_watch_table(tp, t)
		        : pasco_tape_watch(tp, t);
		pasco_tensor_release(t);
	}
	if (pasco_model_call_with(m, tp, in, nodes) == NULL) {
		FUZZ_CHECK(pasco_tape_error(tp) != 0 &&
		           pasco_tape_message(tp)[0] != 0);
	}
done:
	pasco_tape_free(tp);
	for (size_t k = 0; in != NULL && k < ni; k++) {
		pasco_tensor_release(in[k]);
	}
	free(in);
	free(nodes);
}

int
fuzz_model_config_one(const uint8_t *data, size_t size)
{
	pasco_model *m = NULL, *back = NULL;
	char        *text = malloc(size + 1), *one = NULL, *two = NULL;
	static bool  bounded;
	if (!bounded) { /* below libFuzzer's -malloc_limit_mb (fuzz/run) */
		bounded = true;
		pasci_tape_set_max_bytes((size_t) 1 << 30);
	}
	if (text == NULL) {
		return 0;
	}
	memcpy(text, data, size);
	text[size] = 0;
	if (pasco_model_from_json(text, &m) != 0) {
		FUZZ_CHECK(m == NULL && pasco_model_last_error()[0] != 0);
		free(text);
		return 0;
	}
	FUZZ_CHECK(m != NULL);
	FUZZ_CHECK(pasco_model_to_json(m, &one) == 0);
	if (pasco_model_from_json(one, &back) != 0) {
		fprintf(stderr, "written back: %s\nrefused: %s\n", one,
		    pasco_model_last_error());
		FUZZ_CHECK(!"a model's own config parses");
	}
	FUZZ_CHECK(pasco_model_to_json(back, &two) == 0);
	if (strcmp(one, two) != 0) {
		fprintf(stderr, "first: %s\nagain: %s\n", one, two);
		FUZZ_CHECK(!"a config written back reads to the same bytes");
	}
	forward(m, true);
	forward(m, false);
	pasco_model_free(back);
	pasco_model_free(m);
	free(one);
	free(two);
	free(text);
	return 0;
}

#ifndef PASCO_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_model_config_one(data, size);
}
#endif
