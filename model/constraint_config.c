/*
 * Keras's weight constraints in a layer's config (include/pasco/
 * constraint.h): written as Keras serializes them, read back with its
 * defaults (MaxNorm: max_value 2, axis 0). Stateless: any thread.
 */
#include "model_impl.h"
#include "util.h"

#include <math.h>
#include <string.h>

static const char *const classes[] = {NULL, "MaxNorm", "NonNeg"};

bool
pasci_json_write_constraint(
    cJSON *parent, const char *key, const pasco_constraint *c)
{
	cJSON *o;
	if (c->kind == PASCO_CONSTRAINT_NONE) {
		return cJSON_AddNullToObject(parent, key) != NULL;
	}
	if ((unsigned) c->kind > PASCO_CONSTRAINT_NON_NEG ||
	    (o = pasci_json_class(parent, key, classes[c->kind])) == NULL) {
		return false;
	}
	return c->kind != PASCO_CONSTRAINT_MAX_NORM ||
	       (cJSON_AddNumberToObject(o, "max_value", c->max_value) &&
	           cJSON_AddNumberToObject(o, "axis", c->axis));
}

int
pasci_json_read_constraint(const cJSON *parent, const char *key,
    pasco_constraint *c, const char *where)
{
	static const char *const keys[] = {"max_value", "axis"};
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key), *cc;
	char         at[160];
	int          kind;
	double       axis = 0;
	if (o == NULL || cJSON_IsNull(o)) {
		*c = (pasco_constraint){0};
		return PASCO_OK;
	}
	pasci_fmt(at, sizeof(at), "%s: %s", where, key);
	if (pasci_json_read_class(o, classes, 3, &kind, &cc, at) != 0) {
		return PASCO_EINVAL;
	}
	if (kind == PASCO_CONSTRAINT_NON_NEG) {
		*c = pasco_constraint_non_neg();
		return pasci_json_check_keys(cc, keys, 0, at);
	}
	*c = pasco_constraint_max_norm(2, 0);
	if (pasci_json_check_keys(cc, keys, 2, at) != 0 ||
	    pasci_json_number(cc, "max_value", &c->max_value, false, 0, at) ||
	    pasci_json_number(cc, "axis", &axis, true, -8, at) != 0) {
		return PASCO_EINVAL;
	}
	if (!(c->max_value > 0) || axis > 7) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: MaxNorm: max_value must be > 0 and axis within the "
		    "weight's rank, got %g and %g",
		    at, c->max_value, axis);
	}
	c->axis = (int32_t) axis;
	return PASCO_OK;
}
