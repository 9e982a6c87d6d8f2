/*
 * Dynamic embedding tables from the chief (coordinator.h,
 * pasco_dynamic_variable_create): a handle with one shard per ps, each
 * holding the keys a hash sends it (client/variable_sparse.c routes
 * them), and the table made on every ps with the same options.
 */
#include <stdlib.h>
#include <string.h>

#include "coordinator_impl.h"
#include "util.h"
#include "variable_impl.h"

static int
fail(pasco_strategy *s, int rv, const char *fmt, const char *name,
    const char *detail)
{
	pthread_mutex_lock(&s->mu);
	pasci_error_fmt(s->error, sizeof(s->error), fmt, name, detail);
	pthread_mutex_unlock(&s->mu);
	return rv;
}

/* A handle to name if the strategy made it before: PASCO_ENOTFOUND if
 * not, PASCO_EEXIST if as a fixed variable or with another dim. */
static int
find_made(
    pasco_strategy *s, const char *name, int64_t dim, pasco_variable **out)
{
	int rv = PASCO_ENOTFOUND;
	pthread_mutex_lock(&s->mu);
	for (var_entry *e = s->vars; e != NULL && rv == PASCO_ENOTFOUND;
	     e            = e->next) {
		const pasco_variable *v = e->layout;
		if (strcmp(v->name, name) != 0) {
			continue;
		}
		if (v->dynamic && v->shape[1] == dim) {
			rv = pasci_variable_clone(out, v);
		} else {
			pasci_error_fmt(s->error, sizeof(s->error),
			    "'%s' already exists as %s; cannot create it as a "
			    "dynamic table of dim %lld",
			    name,
			    v->dynamic ? "a dynamic table of another dim"
			               : "a fixed variable",
			    (long long) dim);
			rv = PASCO_EEXIST;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return rv;
}

int
pasco_dynamic_variable_create(pasco_variable **out, pasco_strategy *s,
    const char *name, const pasco_dynamic_options *o)
{
	pasci_wire_dynamic d;
	pasci_wire_init    init = {0};
	shard_call        *calls;
	int                rv;

	*out = NULL;
	if (name == NULL || *name == 0 || o == NULL || o->dim < 1) {
		return fail(s, PASCO_EINVAL,
		    "a dynamic table needs a name and options with dim >= "
		    "1%s%s",
		    "", "");
	}
	if ((rv = find_made(s, name, o->dim, out)) != PASCO_ENOTFOUND) {
		return rv;
	}
	d         = (pasci_wire_dynamic){.dim = o->dim,
	            .min_count                = o->min_count,
	            .evict_after              = o->evict_after,
	            .max_rows                 = o->max_rows_per_ps,
	            .default_zeros            = o->default_zeros};
	init.init = o->initializer.kind != 0
	                ? o->initializer
	                : pasco_init_uniform(-0.05, 0.05, 0);
	if ((rv = pasci_variable_new(out, name, PASCO_F32, 2,
	         (int64_t[]){0, o->dim}, s->call_timeout_ms)) != 0) {
		return rv;
	}
	(*out)->dynamic = true;
	for (size_t i = 0; i < s->nps && rv == 0; i++) {
		rv = pasci_variable_add_shard(
		    *out, name, (int32_t) i, 0, 0, s->ps[i]);
	}
	calls = rv == 0 ? pasci_shard_calls_new(*out, PASCI_METHOD_VAR_CREATE)
	                : NULL;
	if (calls == NULL) {
		pasco_variable_free(*out);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	for (int32_t i = 0; i < (*out)->nshards; i++) {
		calls[i].used          = true;
		calls[i].b.hdr.dynamic = &d;
		calls[i].b.hdr.init    = &init;
	}
	rv = pasci_shard_calls_run(*out, calls);
	pasci_shard_calls_free(*out, calls);
	if (rv != 0) {
		fail(s, rv, "creating dynamic table '%s': %s", name,
		    pasco_variable_error(*out));
		pasco_variable_free(*out);
		*out = NULL;
	} else {
		pasci_strategy_remember(s, *out);
	}
	return rv;
}
