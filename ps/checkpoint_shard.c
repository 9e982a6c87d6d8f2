/*
 * A ps's checkpoint shard: every variable of its store, with its optimizer
 * slots, and every dynamic table's state (keys, rows, slots, pending
 * counts), written to one safetensors file (CKPT_SAVE). Runs on an RPC
 * handler thread; the copies are taken variable by variable under each
 * variable's lock (pasci_store_var_each; a table's under its own lock), so
 * a variable is never torn though two may be copied between different
 * updates. The file is written after
 * every lock is released. Restoring is the coordinator's: it assigns the
 * values and sends the slots back (pasci_store_set_slots).
 */
#include "checkpoint_shard.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_apply.h"
#include "pasco/tfrecord.h"
#include "safetensors.h"
#include "util.h"

typedef struct snapshot {
	size_t         n, cap;
	char         **names;
	pasco_tensor **tensors;
	cJSON         *slots;
	cJSON         *dynamic; /* table name: its description */
	cJSON         *crcs;    /* tensor name: CRC-32C of its bytes */
} snapshot;

/* Adds t under name, taking the caller's reference to t (released on
 * failure too). */
static int
snapshot_own(snapshot *sn, const char *name, pasco_tensor *t)
{
	if (sn->n == sn->cap) {
		size_t         cap = sn->cap ? sn->cap * 2 : 64;
		char         **nn  = realloc(sn->names, cap * sizeof(*nn));
		pasco_tensor **tt =
		    nn != NULL ? realloc(sn->tensors, cap * sizeof(*tt))
		               : NULL;
		if (nn != NULL) {
			sn->names = nn;
		}
		if (tt == NULL) {
			pasco_tensor_release(t);
			return PASCO_ENOMEM;
		}
		sn->tensors = tt;
		sn->cap     = cap;
	}
	if ((sn->names[sn->n] = pasci_strdup(name)) == NULL) {
		pasco_tensor_release(t);
		return PASCO_ENOMEM;
	}
	sn->tensors[sn->n] = t;
	cJSON_AddNumberToObject(sn->crcs, name,
	    (double) pasco_crc32c(
	        sn->tensors[sn->n]->data, sn->tensors[sn->n]->nbytes));
	sn->n++;
	return PASCO_OK;
}

/* Adds a copy of t under name. */
static int
snapshot_add(snapshot *sn, const char *name, const pasco_tensor *t)
{
	pasco_tensor *copy;
	if (pasco_tensor_copy(&copy, t) != 0) {
		return PASCO_ENOMEM;
	}
	return snapshot_own(sn, name, copy);
}

/* The manifest's record of a variable's slots: {"optimizer": "adam",
 * "step": n, "count": 3, "names": ["m", "v", "vhat"]}. */
static void
describe_slots(snapshot *sn, const char *vname, const pasci_opt_desc *d,
    const ps_slots *slots)
{
	cJSON *e     = cJSON_AddObjectToObject(sn->slots, vname);
	cJSON *names = NULL;
	cJSON_AddStringToObject(e, "optimizer", d->name);
	cJSON_AddNumberToObject(e, "step", (double) slots->step);
	cJSON_AddNumberToObject(e, "count", d->nslots);
	names = cJSON_AddArrayToObject(e, "names");
	for (int k = 0; k < d->nslots; k++) {
		cJSON_AddItemToArray(names, cJSON_CreateString(d->slots[k]));
	}
}

/* Copies one variable and its slots (a pasci_store_visit_fn: called with
 * the variable's lock held), each slot named by its descriptor. */
static int
snapshot_var(void *arg, const char *vname, const pasco_tensor *value,
    const ps_slots *slots)
{
	snapshot             *sn = arg;
	const pasci_opt_desc *d  = pasci_opt_desc_of((int) slots->kind);
	char                  name[1024];
	int                   rv = snapshot_add(sn, vname, value);
	if (slots->kind == 0 || rv != 0) {
		return rv; /* no optimizer applied yet: no slots */
	}
	if (d == NULL || slots->nslots != d->nslots) {
		return PASCO_EPROTO; /* slots no descriptor names */
	}
	for (int k = 0; rv == 0 && k < d->nslots; k++) {
		pasco_tensor *zeros =
		    NULL; /* a slot its optimizer never used */
		pasci_fmt(name, sizeof(name), "%s/%s", vname, d->slots[k]);
		if (slots->slot[k] == NULL &&
		    pasco_tensor_alloc(&zeros, value->dtype, value->rank,
		        value->shape) != 0) {
			return PASCO_ENOMEM;
		}
		rv = snapshot_add(
		    sn, name, zeros != NULL ? zeros : slots->slot[k]);
		pasco_tensor_release(zeros);
	}
	if (rv == 0) {
		describe_slots(sn, vname, d, slots);
	}
	return rv;
}

/* A dynamic table's options as the manifest carries them (a seed as a
 * decimal string: JSON numbers hold 53 bits). */
static void
describe_options(cJSON *e, const pasci_dyn_config *c)
{
	cJSON *o    = cJSON_AddObjectToObject(e, "options");
	cJSON *init = cJSON_AddObjectToObject(o, "initializer");
	char   seed[32];
	cJSON_AddNumberToObject(o, "min_count", (double) c->min_count);
	cJSON_AddNumberToObject(o, "evict_after", (double) c->evict_after);
	cJSON_AddNumberToObject(o, "max_rows_per_ps", (double) c->max_rows);
	cJSON_AddBoolToObject(o, "default_zeros", c->default_zeros);
	cJSON_AddNumberToObject(init, "kind", (double) c->init.kind);
	cJSON_AddNumberToObject(init, "value", c->init.value);
	cJSON_AddNumberToObject(init, "minval", c->init.minval);
	cJSON_AddNumberToObject(init, "maxval", c->init.maxval);
	cJSON_AddNumberToObject(init, "mean", c->init.mean);
	cJSON_AddNumberToObject(init, "stddev", c->init.stddev);
	pasci_fmt(
	    seed, sizeof(seed), "%llu", (unsigned long long) c->init.seed);
	cJSON_AddStringToObject(init, "seed", seed);
}

/* The manifest's record of a table on this ps: {"dim", "rows", "pending",
 * "optimizer": "adam" (absent before any update), "slots": ["m", "v"]
 * (those its rows hold), "options": {...}}. */
static void
describe_table(snapshot *sn, const char *tname, const pasci_dyn_table *t,
    const pasci_dyn_state *st)
{
	cJSON                *e = cJSON_AddObjectToObject(sn->dynamic, tname);
	cJSON                *names;
	const pasci_opt_desc *d = pasci_opt_desc_of((int) st->kind);
	cJSON_AddNumberToObject(
	    e, "dim", (double) pasci_dyn_config_of(t)->dim);
	cJSON_AddNumberToObject(e, "rows", (double) st->keys->shape[0]);
	cJSON_AddNumberToObject(
	    e, "pending", (double) st->pending_keys->shape[0]);
	if (st->kind != 0 && d != NULL) {
		cJSON_AddStringToObject(e, "optimizer", d->name);
	}
	names = cJSON_AddArrayToObject(e, "slots");
	for (int k = 0; d != NULL && k < d->nslots; k++) {
		if (st->slot[k] != NULL) {
			cJSON_AddItemToArray(
			    names, cJSON_CreateString(d->slots[k]));
		}
	}
	describe_options(e, pasci_dyn_config_of(t));
}

/* Adds the state of one dynamic table (a pasci_dyn_each callback) as
 * "<table>/keys", "/values", "/last_step", "/pending_keys",
 * "/pending_counts", "/meta" (i64 [6]: created, evicted_age, evicted_cap,
 * refused, step, applies), "/slot_init" (f64 [nslots]) and "/<slot>" for
 * each slot its rows hold, by Keras's names. */
static int
snapshot_table(void *arg, const char *tname, pasci_dyn_table *t)
{
	snapshot             *sn = arg;
	pasci_dyn_state       st;
	const pasci_opt_desc *d;
	pasco_tensor         *meta = NULL, *init = NULL;
	char                  name[1100];
	int                   rv      = pasci_dyn_export(t, &st);
	const char           *parts[] = {
	              "keys", "values", "last_step", "pending_keys", "pending_counts"};
	pasco_tensor **own[] = {&st.keys, &st.values, &st.last_step,
	    &st.pending_keys, &st.pending_counts};
	if (rv != 0) {
		return rv;
	}
	d  = pasci_opt_desc_of((int) st.kind);
	rv = pasco_tensor_alloc(&meta, PASCO_I64, 1, (int64_t[]){6});
	rv = rv != 0 ? rv
	             : pasco_tensor_alloc(&init, PASCO_F64, 1,
	                   (int64_t[]){st.kind != 0 ? st.nslots : 0});
	if (rv == 0) {
		memcpy(meta->data,
		    (int64_t[]){st.stats.created, st.stats.evicted_age,
		        st.stats.evicted_cap, st.stats.refused, st.stats.step,
		        st.applies},
		    sizeof(int64_t) * 6);
		memcpy(init->data, st.slot_init,
		    sizeof(double) * (size_t) init->count);
		describe_table(sn, tname, t, &st);
	}
	for (size_t i = 0; rv == 0 && i < 5; i++) {
		pasci_fmt(name, sizeof(name), "%s/%s", tname, parts[i]);
		rv      = snapshot_own(sn, name, *own[i]);
		*own[i] = NULL; /* the snapshot's now, or released */
	}
	if (rv == 0) {
		pasci_fmt(name, sizeof(name), "%s/meta", tname);
		rv   = snapshot_own(sn, name, meta);
		meta = NULL;
	}
	if (rv == 0) {
		pasci_fmt(name, sizeof(name), "%s/slot_init", tname);
		rv   = snapshot_own(sn, name, init);
		init = NULL;
	}
	for (int k = 0; rv == 0 && d != NULL && k < d->nslots; k++) {
		if (st.slot[k] != NULL) {
			pasci_fmt(
			    name, sizeof(name), "%s/%s", tname, d->slots[k]);
			rv         = snapshot_own(sn, name, st.slot[k]);
			st.slot[k] = NULL;
		}
	}
	pasco_tensor_release(meta);
	pasco_tensor_release(init);
	pasci_dyn_state_fini(&st);
	return rv;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A variable named like another's slot ("w/m" beside w's Adam slot m)
 * would make two tensors of one name: refused, naming it. */
static int
check_unique(const snapshot *sn, char *err, size_t errlen)
{
	char **sorted = malloc((sn->n + 1) * sizeof(*sorted));
	int    rv     = PASCO_OK;
	if (sorted == NULL) {
		pasci_fmt(err, errlen, "out of memory taking a snapshot");
		return PASCO_ENOMEM;
	}
	if (sn->n > 0) { /* a ps holding nothing has no names array */
		memcpy(sorted, sn->names, sn->n * sizeof(*sorted));
		qsort(sorted, sn->n, sizeof(*sorted), by_name);
	}
	for (size_t i = 1; i < sn->n && rv == 0; i++) {
		if (strcmp(sorted[i - 1], sorted[i]) == 0) {
			pasci_fmt(err, errlen,
			    "two tensors would be named '%s' in the "
			    "checkpoint: a variable has the name of another "
			    "variable's optimizer slot or of a dynamic "
			    "table's tensor (\"<table>/keys\", "
			    "\"<table>/values\", ...)",
			    sorted[i]);
			rv = PASCO_EEXIST;
		}
	}
	free(sorted);
	return rv;
}

int
pasci_checkpoint_shard_save(ps_store *s, pasci_dyn_set *dyn, int root,
    const char *root_name, const char *rel, char **slots_json, char *err,
    size_t errlen)
{
	snapshot sn    = {.slots = cJSON_CreateObject(),
	       .dynamic          = cJSON_CreateObject(),
	       .crcs             = cJSON_CreateObject()};
	cJSON   *reply = cJSON_CreateObject();
	int rv = sn.slots != NULL && sn.dynamic != NULL && sn.crcs != NULL &&
	                 reply != NULL
	             ? PASCO_OK
	             : PASCO_ENOMEM;

	*slots_json = NULL;
	if (rv == 0) {
		rv = pasci_store_var_each(s, snapshot_var, &sn);
	}
	if (rv == 0 && dyn != NULL) {
		rv = pasci_dyn_each(dyn, snapshot_table, &sn);
	}
	if (rv == 0 && (rv = check_unique(&sn, err, errlen)) != 0) {
		/* err says why */
	} else if (rv == 0) {
		rv = pasci_safetensors_write_below(root, root_name, rel, sn.n,
		    (const char *const *) sn.names, sn.tensors, NULL, err,
		    errlen);
	} else if (rv == PASCO_EPROTO) {
		pasci_fmt(err, errlen,
		    "a variable holds optimizer slots that no optimizer "
		    "descriptor names (base/optimizer_desc.h)");
	} else {
		pasci_fmt(err, errlen, "out of memory taking a snapshot");
	}
	if (rv == 0) {
		cJSON_AddItemToObject(reply, "slots", sn.slots);
		cJSON_AddItemToObject(reply, "dynamic", sn.dynamic);
		cJSON_AddItemToObject(reply, "crc32c", sn.crcs);
		sn.slots = sn.dynamic = sn.crcs = NULL;
		if ((*slots_json = cJSON_PrintUnformatted(reply)) == NULL) {
			rv = PASCO_ENOMEM;
		}
	}
	for (size_t i = 0; i < sn.n; i++) {
		free(sn.names[i]);
		pasco_tensor_release(sn.tensors[i]);
	}
	free(sn.names);
	free(sn.tensors);
	cJSON_Delete(sn.slots);
	cJSON_Delete(sn.dynamic);
	cJSON_Delete(sn.crcs);
	cJSON_Delete(reply);
	return rv;
}

int
pasci_checkpoint_path_check(const char *root, const char *path,
    const char **rel, char *err, size_t errlen)
{
	size_t n = strlen(root);

	*rel = NULL;
	if (root[0] == 0) {
		pasci_fmt(err, errlen,
		    "this ps writes no checkpoints (asked for %s): start it "
		    "with --checkpoint-root DIR or PASCO_CHECKPOINT_DIR",
		    path);
		return PASCO_EPRECONDITION;
	}
	if (strcmp(root, "/") == 0) {
		n = 0; /* every absolute path is below "/" */
	}
	if (path[0] != '/' || strncmp(path, root, n) != 0 || path[n] != '/') {
		pasci_fmt(err, errlen,
		    "checkpoint file %s is outside this ps's checkpoint root "
		    "%s",
		    path, root);
		return PASCO_EPERM;
	}
	/* the rest is walked from the root's descriptor, which refuses
	 * "", "." and ".." and every symbolic link on the way */
	*rel = path + n + 1;
	return PASCO_OK;
}
