/*
 * The optimizer descriptors (optimizer_desc.h): constant tables, read by
 * any thread.
 */
#include "optimizer_desc.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* The slot names, and their count derived from them. */
#define SLOTS(...)                                                            \
	.slots  = {__VA_ARGS__},                                              \
	.nslots = (int) (sizeof((const char *[]){__VA_ARGS__}) /              \
	                 sizeof(const char *))

/* The config's fields, and their count derived from them. */
#define FIELDS(...)                                                           \
	.fields  = {__VA_ARGS__},                                             \
	.nfields = (int) (sizeof((pasci_opt_field[]){__VA_ARGS__}) /          \
	                  sizeof(pasci_opt_field))

/* A field: Keras's key and the pasco_optimizer member that keeps it (its
 * type says whether it is a bool). */
// clang-format off
#define F(k, member)                                                          \
	{                                                                     \
		.key = (k), .off = offsetof(pasco_optimizer, member),         \
		.is_bool = _Generic(((pasco_optimizer *) 0)->member,          \
		    bool: true, default: false)                               \
	}
// clang-format on

#define LR F("learning_rate", learning_rate)
#define EPS F("epsilon", epsilon)
#define ACC F("initial_accumulator_value", initial_accumulator_value)

/* Keras's defaults (tf.keras.optimizers, TF 2.x). */
static const pasci_opt_desc descs[] = {
    [PASCO_OPT_SGD] = {PASCO_OPT_SGD, "sgd", "SGD", "SGD", SLOTS("momentum"),
        FIELDS(LR, F("momentum", momentum), F("nesterov", nesterov)),
        .defaults = {.kind = PASCO_OPT_SGD, .learning_rate = 0.01}},
    [PASCO_OPT_ADAGRAD] = {PASCO_OPT_ADAGRAD, "adagrad", "Adagrad", "Adagrad",
        SLOTS("accumulator"), FIELDS(LR, EPS, ACC),
        .defaults = {.kind             = PASCO_OPT_ADAGRAD,
            .learning_rate             = 0.001,
            .epsilon                   = 1e-7,
            .initial_accumulator_value = 0.1}},
    [PASCO_OPT_RMSPROP] = {PASCO_OPT_RMSPROP, "rmsprop", "RMSprop", "RMSprop",
        SLOTS("rms", "momentum", "mg"),
        FIELDS(LR, F("momentum", momentum), F("rho", rho),
            F("centered", centered), EPS),
        .defaults = {.kind = PASCO_OPT_RMSPROP,
            .learning_rate = 0.001,
            .rho           = 0.9,
            .epsilon       = 1e-7}},
    [PASCO_OPT_ADAM]    = {PASCO_OPT_ADAM, "adam", "Adam", "Adam",
           SLOTS("m", "v", "vhat"),
           FIELDS(LR, F("beta_1", beta_1), F("beta_2", beta_2),
               F("amsgrad", amsgrad), EPS),
           .defaults = {.kind = PASCO_OPT_ADAM,
               .learning_rate = 0.001,
               .beta_1        = 0.9,
               .beta_2        = 0.999,
               .epsilon       = 1e-7}},
    [PASCO_OPT_FTRL]    = {PASCO_OPT_FTRL, "ftrl", "FTRL", "Ftrl",
           SLOTS("accumulator", "linear"),
           FIELDS(LR, ACC, F("learning_rate_power", learning_rate_power),
               F("l1_regularization_strength", l1),
               F("l2_regularization_strength", l2),
               F("l2_shrinkage_regularization_strength", l2_shrinkage),
               F("beta", beta)),
           .defaults = {.kind             = PASCO_OPT_FTRL,
               .learning_rate             = 0.001,
               .learning_rate_power       = -0.5,
               .initial_accumulator_value = 0.1}},
};

_Static_assert(sizeof(descs) / sizeof(descs[0]) == PASCI_OPT_KINDS,
    "one descriptor per optimizer kind (PASCI_OPT_KINDS)");

const pasci_opt_desc *
pasci_opt_desc_of(int kind)
{
	return kind > 0 && kind < PASCI_OPT_KINDS && descs[kind].name != NULL
	           ? &descs[kind]
	           : NULL;
}

const pasci_opt_desc *
pasci_opt_desc_named(const char *name)
{
	for (int k = 1; name != NULL && k < PASCI_OPT_KINDS; k++) {
		if (descs[k].name != NULL &&
		    strcmp(descs[k].name, name) == 0) {
			return &descs[k];
		}
	}
	return NULL;
}

const pasci_opt_desc *
pasci_opt_desc_of_class(const char *keras)
{
	for (int k = 1; keras != NULL && k < PASCI_OPT_KINDS; k++) {
		if (descs[k].keras != NULL &&
		    strcmp(descs[k].keras, keras) == 0) {
			return &descs[k];
		}
	}
	return NULL;
}

const pasci_opt_field *
pasci_opt_field_named(const pasci_opt_desc *d, const char *key)
{
	for (int k = 0; key != NULL && k < d->nfields; k++) {
		if (strcmp(d->fields[k].key, key) == 0) {
			return &d->fields[k];
		}
	}
	return NULL;
}

int
pasci_opt_slot_index(const pasci_opt_desc *d, const char *slot)
{
	for (int k = 0; slot != NULL && k < d->nslots; k++) {
		if (strcmp(d->slots[k], slot) == 0) {
			return k;
		}
	}
	return -1;
}

void
pasci_opt_slot_list(const pasci_opt_desc *d, char *buf, size_t len)
{
	size_t used = 0;
	if (len > 0) {
		buf[0] = 0;
	}
	for (int k = 0; k < d->nslots && used < len; k++) {
		used += (size_t) snprintf(buf + used, len - used, "%s%s",
		    k > 0 ? ", " : "", d->slots[k]);
	}
}
