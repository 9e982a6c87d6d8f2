/*
 * A graph's constant nodes (graph_impl.h): read from their "value" into
 * a tensor of the node's spec, each at most 2^24 elements and a graph's
 * at most 2^24 in all, and every graph alive in the process at most 2^26
 * (PASCO_MAX_GRAPH_CONSTANTS): a graph is read from a config a worker is
 * sent, and a shape alone must not make it allocate without bound. Any
 * thread.
 */
#include "graph_impl.h"
#include "layers_impl.h"
#include "model_impl.h"
#include "util.h"

#include <stdatomic.h>

/* The most elements of a constant node, and of a graph's together. */
#define MAX_CONSTANT (1 << 24)

/* The most constant elements of all graphs alive in the process (2^26,
 * or PASCO_MAX_GRAPH_CONSTANTS, read at the first constant): counted by
 * read_constant, given back by pasci_graph_free. */
#define MAX_LIVE_CONSTANTS ((int64_t) 1 << 26)

static int64_t
live_constants_max(void)
{
	static _Atomic int64_t most;
	int64_t                m = atomic_load(&most);
	if (m == 0) {
		m = pasci_env_number("PASCO_MAX_GRAPH_CONSTANTS", 1,
		    (long long) 1 << 40, MAX_LIVE_CONSTANTS, "elements");
		atomic_store(&most, m);
	}
	return m;
}
static _Atomic int64_t live_constants; /* every graph's alive */

/* Fills a constant of the node's spec from value: a number (every
 * element) or nested lists of the node's shape. */
static int
fill_constant(
    const cJSON *v, pasco_tensor *t, int32_t d, int64_t *at_el, const char *at)
{
	const cJSON *it;
	if (cJSON_IsNumber(v) && d == t->rank) {
		pasco_tensor_set(t, (*at_el)++, v->valuedouble);
		return PASCO_OK;
	}
	if (!cJSON_IsArray(v) || d == t->rank ||
	    cJSON_GetArraySize(v) != t->shape[d]) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: value does not match shape %s", at,
		    PASCI_SHAPE(t->rank, t->shape));
	}
	cJSON_ArrayForEach(it, v)
	{
		if (fill_constant(it, t, d + 1, at_el, at) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

int
pasci_graph_read_constant(
    pasci_graph *g, const cJSON *node, graph_node *n, const char *at)
{
	const cJSON *v  = cJSON_GetObjectItemCaseSensitive(node, "value");
	int64_t      el = 0, count = 1;
	for (int32_t d = 0; d < n->a.rank; d++) {
		if (n->a.shape[d] < 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: a constant's shape %s must be known", at,
			    PASCI_SHAPE(n->a.rank, n->a.shape));
		}
		count = n->a.shape[d] > MAX_CONSTANT ? MAX_CONSTANT + 1
		                                     : count * n->a.shape[d];
		count = count > MAX_CONSTANT ? MAX_CONSTANT + 1 : count;
	}
	if (count > MAX_CONSTANT) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a constant of shape %s: at most %d elements", at,
		    PASCI_SHAPE(n->a.rank, n->a.shape), MAX_CONSTANT);
	}
	/* and in all: a scalar fills a constant, so a short config of many
	 * constants must not allocate 2^24 elements each */
	if (count > MAX_CONSTANT - g->constants) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a constant of shape %s: the graph's constants would "
		    "hold %lld elements, at most %d in all",
		    at, PASCI_SHAPE(n->a.rank, n->a.shape),
		    (long long) (g->constants + count), MAX_CONSTANT);
	}
	if (atomic_fetch_add(&live_constants, count) + count >
	    live_constants_max()) {
		atomic_fetch_sub(&live_constants, count);
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a constant of shape %s: the process's op graphs "
		    "would hold more than %lld constant elements in all "
		    "(PASCO_MAX_GRAPH_CONSTANTS sets it)",
		    at, PASCI_SHAPE(n->a.rank, n->a.shape),
		    (long long) live_constants_max());
	}
	g->constants += count;
	if (pasco_tensor_alloc(
	        &n->constant, n->a.dtype, n->a.rank, n->a.shape) != 0) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if (cJSON_IsNumber(v)) {
		for (int64_t k = 0; k < n->constant->count; k++) {
			pasco_tensor_set(n->constant, k, v->valuedouble);
		}
		return PASCO_OK;
	}
	if (v == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: missing attribute 'value'", at);
	}
	return fill_constant(v, n->constant, 0, &el, at);
}

void
pasci_graph_constants_given_back(int64_t count)
{
	atomic_fetch_sub(&live_constants, count);
}
