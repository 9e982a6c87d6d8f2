/*
 * The model's insides, shared by model/layers.c (descriptions, names,
 * variables, bind), model/sequential.c (the forward pass, losses, the
 * train step) and coordinator/model_vars.c (creating the variables).
 */
#ifndef PASCI_LAYERS_IMPL_H
#define PASCI_LAYERS_IMPL_H

#include "pasco/layers.h"

typedef struct pasci_model_var {
	char              name[PASCO_LAYER_NAME_MAX + 16];
	int32_t           rank;
	int64_t           shape[2];
	pasco_initializer init;
	size_t            layer; /* the layer it belongs to */
	pasco_variable   *handle;
} pasci_model_var;

typedef struct pasci_model_input {
	char    name[PASCO_LAYER_NAME_MAX];
	int64_t width;
	bool    ids;
} pasci_model_input;

/* A Normalization layer's adapted statistics (pasco_model_adapt), f64
 * [width] each, and its count variable (chief: made by
 * create_variables, owned by the model). */
typedef struct pasci_model_norm {
	double         *mean, *variance;
	int64_t         count; /* samples adapted; 0: never adapted */
	pasco_variable *count_var;
} pasci_model_norm;

struct pasco_model {
	uint64_t           seed;
	size_t             ninputs, nlayers, nvars;
	pasci_model_input *inputs;
	pasco_layer       *layers;    /* inputs resolved: ninputs >= 1 */
	int64_t           *out_width; /* per layer */
	size_t            *first_var; /* per layer: its first variable */
	pasci_model_var   *vars;
	bool               owns; /* handles made by create_variables */
	pasci_model_norm  *norm; /* per layer (Normalization only) */
};

/* Writes layer i's adapted statistics to its variables (mean, variance,
 * count) when the model has made them; a no-op otherwise. Blocks. */
int pasci_model_norm_write(pasco_model *m, size_t i);

/* Frees the statistics and count variables of m's Normalization layers. */
void pasci_model_norm_free(pasco_model *m);

/* Records this thread's last model error (pasco_model_last_error) and
 * returns err. */
int pasci_model_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "[32, 63]" into buf. */
const char *pasci_shape_str(
    int32_t rank, const int64_t *shape, char *buf, size_t len);
#define PASCI_SHAPE(r, s) pasci_shape_str((r), (s), (char[96]){0}, 96)

#endif
