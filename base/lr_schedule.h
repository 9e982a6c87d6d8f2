/*
 * Learning-rate schedules (include/pasco/optimizer.h, base/lr_schedule.c):
 * per kind Keras's class name, its default name and its config fields, for
 * the compile config's JSON (model/optimizer_config.c) and the wire
 * (net/wire_build.c, net/wire.c).
 */
#ifndef PASCI_LR_SCHEDULE_H
#define PASCI_LR_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>

#include "pasco/optimizer.h"

/* One more than the last pasco_lr_schedule_kind. */
#define PASCI_LR_KINDS (PASCO_LR_INVERSE_TIME_DECAY + 1)

/* A scalar field: its key in Keras's config and where pasco_lr_schedule
 * keeps it; nullable: NAN is written as null (Keras's None). */
typedef struct pasci_lr_field {
	const char *key;
	size_t      off;
	bool        is_bool, nullable;
} pasci_lr_field;

typedef struct pasci_lr_desc {
	const char    *keras; /* "ExponentialDecay" */
	const char    *name;  /* Keras's default name (its config's "name") */
	bool           piecewise; /* boundaries and values, no scalars */
	int            nfields;
	pasci_lr_field fields[6];
} pasci_lr_desc;

/* The schedule of kind (not PASCO_LR_CONSTANT), or NULL. Thread-safe. */
const pasci_lr_desc *pasci_lr_desc_of(int kind);

/* The schedule whose Keras class name is keras, or NULL. Thread-safe. */
const pasci_lr_desc *pasci_lr_desc_of_class(const char *keras);

/* Every scalar field of pasco_lr_schedule, in the wire's order. */
#define PASCI_LR_WIRE_FIELDS 10
extern const pasci_lr_field pasci_lr_wire_fields[PASCI_LR_WIRE_FIELDS];

#endif
