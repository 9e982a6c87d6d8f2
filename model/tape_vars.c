/*
 * A tape and the variables of a step: pasco_tape_read reads them all in
 * one round trip (pasco_variable_read_mixed) and watches each, whole or
 * as the rows its lookups need; pasco_tape_apply computes the gradients
 * and sends them in one pasco_variable_apply_gradients_mixed. The calls
 * block on the ps; the tape stays single-threaded.
 */
#include <stdlib.h>
#include <string.h>

#include "tape_impl.h"
#include "util.h"
#include "variable_impl.h"

/* The distinct ids of ids but padding (negative ids; a dynamic table's
 * keys64: -1 only), ascending, as an i64 tensor. */
static int
distinct_ids(const pasco_tensor *ids, bool keys64, pasco_tensor **out)
{
	int64_t *v = malloc(sizeof(int64_t) * (size_t) (ids->count + 1));
	int64_t  n = 0, u = 0;
	int      rv;
	*out = NULL;
	if (v == NULL) {
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < ids->count; i++) {
		int64_t id = pasci_id_at(ids, i);
		if (keys64 ? id != -1 : id >= 0) {
			v[n++] = id;
		}
	}
	qsort(v, (size_t) n, sizeof(*v), pasci_cmp_i64);
	for (int64_t i = 0; i < n; i++) {
		if (i == 0 || v[i] != v[i - 1]) {
			v[u++] = v[i];
		}
	}
	rv = pasco_tensor_from(out, PASCO_I64, 1, &u, v, (size_t) u * 8);
	free(v);
	return rv;
}

/* The first message among vars (the failing one has it). */
static const char *
var_message(size_t n, pasco_variable *const *vars)
{
	for (size_t k = 0; k < n; k++) {
		if (pasco_variable_error(vars[k])[0] != '\0') {
			return pasco_variable_error(vars[k]);
		}
	}
	return "";
}

/* Checks vars and fills vs and (sparse ones) the distinct ids. */
static int
read_prepare(pasco_tape *tp, size_t n, const pasco_tape_var *vars,
    pasco_variable **vs, pasco_tensor **uids)
{
	for (size_t k = 0; k < n; k++) {
		const pasco_tensor *ids = vars[k].ids;
		if ((vs[k] = vars[k].var) == NULL) {
			pasci_tape_fail(
			    tp, PASCO_EINVAL, "read: variable %zu is NULL", k);
			return PASCO_EINVAL;
		}
		if (ids == NULL) {
			continue;
		}
		if ((ids->dtype != PASCO_I32 && ids->dtype != PASCO_I64) ||
		    pasco_variable_rank(vs[k]) != 2) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "read: '%s' looked up with ids %s: want a table "
			    "of "
			    "rank 2 and i32 or i64 ids",
			    pasco_variable_name(vs[k]), PASCI_TSPEC(ids));
			return PASCO_EINVAL;
		}
		if (distinct_ids(ids, pasco_variable_is_dynamic(vs[k]),
		        &uids[k]) != 0) {
			pasci_tape_fail(
			    tp, PASCO_ENOMEM, "read: out of memory");
			return PASCO_ENOMEM;
		}
	}
	return PASCO_OK;
}

int
pasco_tape_read(pasco_tape *tp, size_t n, pasco_tape_var *vars)
{
	pasco_variable **vs   = pasci_calloc(n + 1, sizeof(*vs));
	pasco_tensor   **uids = pasci_calloc(n + 1, sizeof(*uids));
	pasco_tensor   **outs = pasci_calloc(n + 1, sizeof(*outs));
	int              rv   = pasco_tape_error(tp);
	if (rv == PASCO_OK && (vs == NULL || uids == NULL || outs == NULL)) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "read: out of memory");
	} else if (rv == PASCO_OK &&
	           read_prepare(tp, n, vars, vs, uids) == PASCO_OK) {
		pasci_tape_step *st = pasci_tape_step_of(tp);
		rv                  = st->counter != NULL && !st->taken
		                          ? pasci_variable_read_mixed_step(n, vs,
		                                (const pasco_tensor *const *) uids, outs,
		                                st->counter, &st->t)
		                      : pasci_tape_training(tp)
		                          ? pasco_variable_read_mixed(
		                                n, vs, (const pasco_tensor *const *) uids, outs)
		                          : pasci_variable_read_mixed_find(n, vs,
		                                (const pasco_tensor *const *) uids, outs);
		st->taken           = st->counter != NULL && rv == PASCO_OK;
		if (rv != PASCO_OK) {
			pasci_tape_fail(
			    tp, rv, "read: %s", var_message(n, vs));
		}
	}
	for (size_t k = 0; k < n && pasco_tape_error(tp) == PASCO_OK; k++) {
		vars[k].node =
		    uids[k] == NULL ? pasco_tape_watch(tp, outs[k])
		    : pasco_variable_is_dynamic(vs[k])
		        ? pasco_tape_watch_keys(tp, uids[k], outs[k])
		        : pasco_tape_watch_rows(tp, uids[k], outs[k]);
	}
	for (size_t k = 0; k < n; k++) {
		if (pasco_tape_error(tp) != PASCO_OK) {
			vars[k].node = NULL;
		}
		if (uids != NULL) {
			pasco_tensor_release(uids[k]);
		}
		if (outs != NULL) {
			pasco_tensor_release(
			    outs[k]); /* the tape holds them */
		}
	}
	free(vs);
	free(uids);
	free(outs);
	return pasco_tape_error(tp);
}

bool
pasci_tape_add_update(
    pasco_tape *tp, pasco_tnode *var, const pasco_tensor *delta)
{
	pasci_tape_update *u;
	if (pasco_tape_error(tp) != PASCO_OK) {
		return false;
	}
	if (var == NULL || var->leaf != PASCI_WATCHED || delta == NULL ||
	    delta->dtype != var->value.dtype ||
	    delta->count != var->value.count) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "update: %s is not a variable read whole, or delta %s "
		    "does not fit it",
		    var != NULL ? PASCI_SPEC(var) : "(null)",
		    delta != NULL ? PASCI_TSPEC(delta) : "(null)");
		return false;
	}
	/* a constant no op reads: the tape holds delta until it is freed
	 * (the apply sends views of it) */
	if (pasco_tape_constant(tp, delta) == NULL ||
	    (u = pasci_tape_mem(tp, sizeof(*u))) == NULL) {
		return false;
	}
	u->var                          = var;
	u->delta                        = delta;
	u->next                         = pasci_tape_step_of(tp)->updates;
	pasci_tape_step_of(tp)->updates = u;
	return true;
}

/* The recorded updates, each to the variable of vars[0..n) it was read
 * from: *nadd of them into adds and deltas (the tape's arena). */
static bool
updates_of(pasco_tape *tp, size_t n, const pasco_tape_var *vars,
    pasco_variable ***adds, const pasco_tensor ***deltas, size_t *nadd)
{
	size_t m = 0;
	*nadd    = 0;
	for (pasci_tape_update *u = pasci_tape_step_of(tp)->updates; u != NULL;
	     u                    = u->next) {
		m++;
	}
	*adds   = pasci_tape_mem(tp, (m + 1) * sizeof(**adds));
	*deltas = pasci_tape_mem(tp, (m + 1) * sizeof(**deltas));
	if (*adds == NULL || *deltas == NULL) {
		return false;
	}
	for (pasci_tape_update *u = pasci_tape_step_of(tp)->updates; u != NULL;
	     u                    = u->next) {
		size_t k = 0;
		while (k < n && vars[k].node != u->var) {
			k++;
		}
		if (k == n) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "apply: an update recorded in the forward pass (a "
			    "BatchNormalization's moving statistics) is of a "
			    "variable %s not among the %zu given",
			    PASCI_SPEC(u->var), n);
			return false;
		}
		(*adds)[*nadd]   = vars[k].var;
		(*deltas)[*nadd] = u->delta;
		(*nadd)++;
	}
	return true;
}

/* Sends the gradients present in g[0..n), and the tape's updates, in
 * one mixed apply. */
static int
apply_present(pasco_tape *tp, size_t n, const pasco_tape_var *vars,
    const pasco_tape_grad *g, const pasco_optimizer *opt)
{
	pasco_variable     **vs    = pasci_calloc(n + 1, sizeof(*vs));
	const pasco_tensor **ids   = pasci_calloc(n + 1, sizeof(*ids));
	const pasco_tensor **grads = pasci_calloc(n + 1, sizeof(*grads));
	pasco_variable     **adds;
	const pasco_tensor **deltas;
	size_t               m  = 0, nadd;
	int                  rv = PASCO_OK;
	if (vs == NULL || ids == NULL || grads == NULL) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "apply: out of memory");
		goto out;
	}
	if (!updates_of(tp, n, vars, &adds, &deltas, &nadd)) {
		goto out;
	}
	for (size_t k = 0; k < n; k++) {
		if (g[k].dense != NULL || g[k].ids != NULL) {
			vs[m]    = vars[k].var;
			ids[m]   = g[k].ids;
			grads[m] = g[k].dense != NULL ? g[k].dense : g[k].rows;
			m++;
		}
	}
	if (m == 0) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "apply: the loss depends on none of the %zu variables", n);
	} else {
		pasci_tape_step *st = pasci_tape_step_of(tp);
		bool             at =
		    st->taken && opt != NULL && opt->iterations == st->counter;
		rv = pasci_apply_mixed_adds(m, vs, opt, ids, grads, nadd, adds,
		    deltas, at ? &st->t : NULL);
		st->taken   = false;
		st->updates = NULL; /* sent once */
		if (rv != PASCO_OK) {
			pasco_variable *const *bad = vs;
			size_t                 nb  = m;
			if (var_message(m, vs)[0] == '\0') {
				bad = adds;
				nb  = nadd;
			}
			pasci_tape_fail(
			    tp, rv, "apply: %s", var_message(nb, bad));
		}
	}
out:
	free(vs);
	free(ids);
	free(grads);
	return pasco_tape_error(tp);
}

int
pasco_tape_apply(pasco_tape *tp, pasco_tnode *loss, size_t n,
    const pasco_tape_var *vars, const pasco_optimizer *opt)
{
	pasco_tnode    **src = pasci_calloc(n + 1, sizeof(*src));
	pasco_tape_grad *g   = pasci_calloc(n + 1, sizeof(*g));
	if (pasco_tape_error(tp) == PASCO_OK && (src == NULL || g == NULL)) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "apply: out of memory");
	}
	for (size_t k = 0; k < n && pasco_tape_error(tp) == PASCO_OK; k++) {
		src[k] = vars[k].node;
	}
	if (pasco_tape_error(tp) == PASCO_OK &&
	    pasco_tape_gradient(tp, loss, n, src, g) == PASCO_OK) {
		apply_present(tp, n, vars, g, opt);
	}
	if (g != NULL) {
		pasco_tape_grad_fini(g, n);
	}
	free(g);
	free(src);
	return pasco_tape_error(tp);
}
