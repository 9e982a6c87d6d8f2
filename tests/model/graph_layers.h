/*
 * A C layer of the graph tests (test_graph.c, test_graph_train.c and
 * their worker program graph_node): Dense's relu(x @ kernel + bias)
 * written by hand, registered by name as "test_c_dense", options
 * {"units": n}, the same weights Dense declares.
 */
#ifndef TESTS_GRAPH_LAYERS_H
#define TESTS_GRAPH_LAYERS_H

#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int
gl_dense_vars(const char *options, size_t n, const int64_t *widths,
    pasco_layer_weight *w, size_t *nw, int64_t *out, char *err, size_t errlen)
{
	const char *u     = strstr(options, "\"units\":");
	int64_t     units = u != NULL ? atoll(u + 8) : 0;
	if (n != 1 || units < 1) {
		snprintf(err, errlen, "one input and {\"units\": n > 0}");
		return PASCO_EINVAL;
	}
	w[0] = (pasco_layer_weight){"kernel", 2, {widths[0], units},
	    pasco_init_glorot_uniform(0), 0, 0, true};
	w[1] = (pasco_layer_weight){
	    "bias", 1, {units}, pasco_init_zeros(), 0, 0, true};
	*nw  = 2;
	*out = units;
	return PASCO_OK;
}

static inline pasco_tnode *
gl_dense_call(pasco_tape *tp, const char *options, size_t n,
    pasco_tnode *const *x, const pasco_tensor *const *ids,
    pasco_tnode *const *w)
{
	(void) options;
	(void) n;
	(void) ids;
	return pasco_t_relu(
	    tp, pasco_t_bias_add(
	            tp, pasco_t_matmul(tp, x[0], w[0], false, false), w[1]));
}

static const pasco_layer_fn gl_dense = {gl_dense_vars, gl_dense_call};

static inline int
gl_register(void)
{
	return pasco_layer_register("test_c_dense", &gl_dense);
}

#endif
