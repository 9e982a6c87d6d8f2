/*
 * What a variable's create from an initializer is checked for before any
 * ps is called (coordinator_impl.h): the initializer (an Orthogonal's
 * shape) and Keras's constraint (include/pasco/constraint.h). Stateless
 * but for the strategy's error, written under its lock as strategy.c
 * does.
 */
#include <math.h>

#include "coordinator_impl.h"
#include "util.h"

static bool
constraint_ok(const pasco_constraint *c, int32_t rank)
{
	int32_t axis = c == NULL ? 0 : c->axis < 0 ? c->axis + rank : c->axis;
	return c == NULL || c->kind == PASCO_CONSTRAINT_NONE ||
	       c->kind == PASCO_CONSTRAINT_NON_NEG ||
	       (c->kind == PASCO_CONSTRAINT_MAX_NORM && c->max_value > 0 &&
	           isfinite(c->max_value) &&
	           (rank == 0 || (axis >= 0 && axis < rank)));
}

bool
pasci_constraint_needs_whole(const pasco_constraint *c, int32_t rank)
{
	return c != NULL && c->kind == PASCO_CONSTRAINT_MAX_NORM &&
	       (rank == 1 || c->axis == 0 || c->axis == -rank);
}

int
pasci_variable_create_check(pasco_strategy *s, const char *name, int32_t rank,
    const int64_t *shape, const pasco_initializer *init,
    const pasco_constraint *constraint)
{
	double r = 1, c = rank > 0 ? (double) shape[rank - 1] : 0;
	for (int32_t i = 0; i + 1 < rank; i++) {
		r *= (double) shape[i];
	}
	name = name != NULL ? name : "";
	if (!pasco_initializer_is_valid(init) ||
	    (init->kind == PASCO_INIT_ORTHOGONAL &&
	        (rank < 2 || fmax(r, c) * fmin(r, c) * fmin(r, c) >
	                         PASCO_INIT_ORTHOGONAL_MAX))) {
		pthread_mutex_lock(&s->mu);
		pasci_error_fmt(s->error, sizeof(s->error),
		    init != NULL && init->kind == PASCO_INIT_ORTHOGONAL
		        ? "'%s': Orthogonal takes a shape of rank 2 or more "
		          "whose [rows, columns] has max * min^2 at most 2^32"
		        : "'%s' needs a valid initializer",
		    name);
		pthread_mutex_unlock(&s->mu);
		return PASCO_EINVAL;
	}
	if (!constraint_ok(constraint, rank)) {
		pthread_mutex_lock(&s->mu);
		pasci_error_fmt(s->error, sizeof(s->error),
		    "'%s': the constraint (kind %d) needs a known kind, "
		    "MaxNorm a max_value > 0 and an axis within rank %d",
		    name, (int) constraint->kind, (int) rank);
		pthread_mutex_unlock(&s->mu);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}
