/* graph_node's C layers: registered at program start, as every program
 * of a cluster registers the same ones (include/pasco/graph.h). */
#include "graph_layers.h"

__attribute__((constructor)) static void
gl_register_at_start(void)
{
	if (gl_register() != PASCO_OK) {
		fprintf(stderr, "graph_node: %s\n", pasco_model_last_error());
		abort();
	}
}
