/*
 * Restoring a checkpoint (see checkpoint_impl.h) once checkpoint_read.c
 * has read and verified it: each variable (and its slots) is reassembled
 * whole from its old shards, so any old layout loads into any new one,
 * then assigned (or, for a lost ps, its shards created again); a dynamic
 * table's keys are routed to their new shards (checkpoint_dynamic.c).
 * Every variable is checked before any is written. Runs on the caller's
 * thread.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_impl.h"
#include "optimizer_desc.h"
#include "pasco/checkpoint.h"
#include "tensor_impl.h"
#include "util.h"
#include "variable_impl.h"

#define GLOBAL_STEP "global_step"

static const cJSON *
item(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* How the tensor of slot k (of optimizer d) of a shard is named: the
 * shard's name (the value) for k < 0. */
static void
tensor_name(char *buf, size_t len, const pasci_ckpt *ck, const char *shard,
    const pasci_opt_desc *d, int k)
{
	if (k < 0) {
		pasci_fmt(buf, len, "%s", shard);
	} else if (ck->format == 1) {
		pasci_fmt(buf, len, "%s/.slot/%d", shard, k);
	} else {
		pasci_fmt(buf, len, "%s/%s", shard, d->slots[k]);
	}
}

/* The whole tensor of a manifest variable (its value, or slot k of
 * optimizer d) from its old shards. */
static int
assemble(pasci_ckpt *ck, const cJSON *entry, const pasco_variable *v,
    const pasci_opt_desc *d, int k, pasco_tensor **out, char *err,
    size_t errlen)
{
	const cJSON *sh;
	size_t       row = pasci_variable_row_bytes(v);
	int          rv = pasco_tensor_alloc(out, v->dtype, v->rank, v->shape);
	cJSON_ArrayForEach(sh, item(entry, "shards"))
	{
		const char *name = cJSON_GetStringValue(item(sh, "name"));
		const char *file = cJSON_GetStringValue(item(sh, "file"));
		double      off  = cJSON_GetNumberValue(item(sh, "offset"));
		const pasci_safetensors *f;
		const pasco_tensor      *t;
		char                     tname[1100];
		if (rv != 0) {
			break;
		}
		if (name == NULL || file == NULL ||
		    (f = pasci_ckpt_file(ck, file, err, errlen)) == NULL) {
			rv = PASCO_EPROTO;
			break;
		}
		tensor_name(tname, sizeof(tname), ck, name, d, k);
		t = pasci_safetensors_find(f, tname);
		if (t == NULL || t->dtype != v->dtype || off < 0 ||
		    (size_t) off * row + t->nbytes > (*out)->nbytes) {
			pasci_fmt(err, errlen,
			    "checkpoint %s: %s: '%s' is missing or does not "
			    "fit",
			    ck->path, file, tname);
			rv = PASCO_EPROTO;
			break;
		}
		memcpy((char *) (*out)->data + (size_t) off * row, t->data,
		    t->nbytes);
	}
	if (rv != 0) {
		pasco_tensor_release(*out);
		*out = NULL;
	}
	return rv;
}

static bool
same_spec(const cJSON *entry, const pasco_variable *v)
{
	const cJSON *d;
	const char  *dtype = cJSON_GetStringValue(item(entry, "dtype"));
	int32_t      rank  = 0;
	bool         ok =
	    dtype != NULL && strcmp(dtype, pasco_dtype_name(v->dtype)) == 0;
	cJSON_ArrayForEach(d, item(entry, "shape"))
	{
		ok = ok && rank < v->rank &&
		     (int64_t) d->valuedouble == v->shape[rank];
		rank++;
	}
	return ok && rank == v->rank;
}

/* What a manifest variable's slots are: its optimizer (NULL: no slots
 * to restore) and the newest step of its shards. */
typedef struct slot_plan {
	const pasci_opt_desc *d;
	int64_t               step;
} slot_plan;

/* Checks the slot names sh lists against d's: each known and each once,
 * as many as d has. */
static int
check_slot_names(const pasci_ckpt *ck, const char *var, const char *shard,
    const pasci_opt_desc *d, const cJSON *names, char *err, size_t len)
{
	const cJSON *n;
	bool         seen[PASCI_OPT_MAX_SLOTS] = {false};
	char         list[256];
	pasci_opt_slot_list(d, list, sizeof(list));
	cJSON_ArrayForEach(n, names)
	{
		int k = pasci_opt_slot_index(d, cJSON_GetStringValue(n));
		if (k < 0 || seen[k]) {
			pasci_fmt(err, len,
			    "checkpoint %s: shard %s of '%s' has %s slot "
			    "'%s', %s (its slots: %s)",
			    ck->path, shard, var, d->name,
			    cJSON_IsString(n) ? n->valuestring : "?",
			    k < 0 ? "which that optimizer does not have"
			          : "listed twice",
			    list);
			return PASCO_EPROTO;
		}
		seen[k] = true;
	}
	for (int k = 0; k < d->nslots; k++) {
		if (!seen[k]) {
			pasci_fmt(err, len,
			    "checkpoint %s: shard %s of '%s' lacks %s slot "
			    "'%s' (its slots: %s)",
			    ck->path, shard, var, d->name, d->slots[k], list);
			return PASCO_EPROTO;
		}
	}
	return PASCO_OK;
}

/* The optimizer of one shard's slots (NULL when it has none), its slots
 * checked: an unknown optimizer, an unknown or missing slot name, or a
 * count that is not the optimizer's is an error naming them. */
static int
shard_slots(const pasci_ckpt *ck, const char *var, const cJSON *sh,
    const pasci_opt_desc **out, char *err, size_t len)
{
	const cJSON          *sl    = item(sh, "slots");
	const cJSON          *o     = item(sl, "optimizer");
	const char           *shard = cJSON_GetStringValue(item(sh, "name"));
	const cJSON          *count = item(sl, "count");
	const pasci_opt_desc *d =
	    ck->format == 1 && cJSON_IsNumber(o)
	        ? pasci_opt_desc_of((int) o->valuedouble)
	        : pasci_opt_desc_named(cJSON_GetStringValue(o));
	char what[64];
	*out = NULL;
	if (sl == NULL) {
		return PASCO_OK;
	}
	if (d == NULL) {
		if (cJSON_IsNumber(o)) {
			pasci_fmt(
			    what, sizeof(what), "number %g", o->valuedouble);
		} else {
			pasci_fmt(what, sizeof(what), "'%.40s'",
			    cJSON_IsString(o) ? o->valuestring : "(none)");
		}
		pasci_fmt(err, len,
		    "checkpoint %s: shard %s of '%s' has slots of optimizer "
		    "%s, which this Pasco does not know",
		    ck->path, shard, var, what);
		return PASCO_EPROTO;
	}
	if (!cJSON_IsNumber(count) || (int) count->valuedouble != d->nslots) {
		pasci_fmt(err, len,
		    "checkpoint %s: shard %s of '%s' says it has %g %s slots; "
		    "%s has %d",
		    ck->path, shard, var, cJSON_GetNumberValue(count), d->name,
		    d->title, d->nslots);
		return PASCO_EPROTO;
	}
	*out = d;
	return ck->format == 1 ? PASCO_OK
	                       : check_slot_names(ck, var, shard, d,
	                             item(sl, "names"), err, len);
}

/* The slots of manifest variable entry: every shard's checked, all of one
 * optimizer. When only some shards have slots (no gradient ever reached
 * the others), none are restored; warn says so in the log. */
static int
plan_slots(const pasci_ckpt *ck, const cJSON *entry, bool warn, slot_plan *p,
    char *err, size_t len)
{
	const char  *var  = cJSON_GetStringValue(item(entry, "name"));
	const char  *bare = NULL;
	const cJSON *sh;
	*p = (slot_plan){NULL, 0};
	cJSON_ArrayForEach(sh, item(entry, "shards"))
	{
		const pasci_opt_desc *d;
		double                step =
		    cJSON_GetNumberValue(item(item(sh, "slots"), "step"));
		int rv = shard_slots(ck, var, sh, &d, err, len);
		if (rv != 0) {
			return rv;
		}
		if (d == NULL) {
			bare = cJSON_GetStringValue(item(sh, "name"));
			continue;
		}
		if (p->d != NULL && p->d != d) {
			pasci_fmt(err, len,
			    "checkpoint %s: the shards of '%s' have slots of "
			    "two optimizers, %s and %s",
			    ck->path, var, p->d->name, d->name);
			return PASCO_EPROTO;
		}
		p->d    = d;
		p->step = (int64_t) step > p->step ? (int64_t) step : p->step;
	}
	if (p->d != NULL && bare != NULL) {
		if (warn) {
			pasci_log(PASCI_LOG_WARN,
			    "checkpoint %s: '%s' has %s slots on some shards "
			    "only (%s has none: no gradient reached it); its "
			    "slots are not restored",
			    ck->path, var, p->d->name, bare);
		}
		p->d = NULL;
	}
	return PASCO_OK;
}

/* Sends each shard of v placed on task (every shard for task < 0) its
 * rows of the count whole tensors: VAR_CREATE (a value) or VAR_SET_SLOTS
 * (with opt and step). */
static int
send_rows(pasco_variable *v, int method, int32_t task,
    pasco_tensor *const *whole, int count, const pasco_optimizer *opt,
    int64_t step)
{
	shard_call *calls = pasci_shard_calls_new(v, method);
	size_t      row   = pasci_variable_row_bytes(v);
	int         rv    = calls != NULL ? PASCO_OK : PASCO_ENOMEM;
	for (int32_t i = 0; rv == 0 && i < v->nshards; i++) {
		int64_t shape[PASCO_MAX_RANK];
		if (task >= 0 && v->shards[i].ps_task != task) {
			continue;
		}
		memcpy(shape, v->shape, sizeof(shape));
		if (v->rank > 0) {
			shape[0] = v->shards[i].rows;
		}
		calls[i].used = true;
		if (opt != NULL) {
			calls[i].b.hdr.opt  = opt;
			calls[i].b.hdr.step = step;
		}
		for (int k = 0; rv == 0 && k < count; k++) {
			pasco_tensor *part;
			rv = pasci_tensor_view(&part, v->dtype, v->rank, shape,
			    (char *) whole[k]->data +
			        (size_t) v->shards[i].offset * row,
			    whole[k]->storage);
			if (rv == 0) {
				pasci_wire_add_tensor(&calls[i].b, part, NULL);
				pasco_tensor_release(part);
			}
		}
	}
	if (rv == 0) {
		rv = pasci_shard_calls_run(v, calls);
	}
	pasci_shard_calls_free(v, calls);
	return rv;
}

/* Restores one variable: whole (assigned) or only its shards on task
 * (created), and its slots. */
static int
restore_variable(pasci_ckpt *ck, const cJSON *entry, pasco_variable *v,
    int32_t task, char *err, size_t errlen)
{
	pasco_tensor   *whole = NULL, *slots[PASCI_OPT_MAX_SLOTS] = {NULL};
	pasco_optimizer opt = {0};
	slot_plan       sp;
	int             rv    = plan_slots(ck, entry, true, &sp, err, errlen);
	int             count = sp.d != NULL ? sp.d->nslots : 0;
	if (rv != 0 || (rv = assemble(ck, entry, v, NULL, -1, &whole, err,
	                    errlen)) != 0) {
		return rv;
	}
	rv = task < 0 ? pasco_variable_assign(v, whole)
	              : send_rows(v, PASCI_METHOD_VAR_CREATE, task, &whole, 1,
	                    NULL, 0);
	if (rv != 0) {
		pasci_fmt(err, errlen, "%s", pasco_variable_error(v));
	}
	for (int k = 0; rv == 0 && k < count; k++) {
		rv = assemble(ck, entry, v, sp.d, k, &slots[k], err, errlen);
	}
	if (rv == 0 && count > 0) {
		opt.kind = sp.d->kind;
		if ((rv = send_rows(v, PASCI_METHOD_VAR_SET_SLOTS, task, slots,
		         count, &opt, sp.step)) != 0) {
			pasci_fmt(err, errlen, "%s", pasco_variable_error(v));
		}
	}
	pasco_tensor_release(whole);
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		pasco_tensor_release(slots[k]);
	}
	return rv;
}

static const cJSON *
manifest_entry(const cJSON *m, const char *name)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, item(m, "variables"))
	{
		const char *n = cJSON_GetStringValue(item(e, "name"));
		if (n != NULL && strcmp(n, name) == 0) {
			return e;
		}
	}
	return NULL;
}

static bool
has_shard_on(const pasco_variable *v, int32_t task)
{
	for (int32_t i = 0; i < v->nshards; i++) {
		if (v->shards[i].ps_task == task) {
			return true;
		}
	}
	return false;
}

/* What restoring v from ck means, into *how: 'w' (whole), 'c' (create
 * its shards on task), or 0 (nothing to do). An error when it cannot be
 * (err says why). */
static int
plan(pasci_ckpt *ck, const pasco_variable *v, int32_t task, char *how,
    char *err, size_t errlen)
{
	const cJSON *entry = manifest_entry(ck->m, v->name);
	bool         mine  = task >= 0 && has_shard_on(v, task);
	*how               = 0;
	if (entry == NULL && mine) {
		pasci_fmt(err, errlen,
		    "checkpoint %s does not hold '%s', which ps %d held",
		    ck->path, v->name, (int) task);
		return PASCO_ENOTFOUND;
	}
	if (entry == NULL) {
		if (task < 0) {
			pasci_log(PASCI_LOG_WARN,
			    "checkpoint %s does not hold '%s'; left as it is",
			    ck->path, v->name);
		}
		return PASCO_OK;
	}
	if (!same_spec(entry, v)) {
		pasci_fmt(err, errlen,
		    "the checkpoint holds '%s' with another dtype or shape",
		    v->name);
		return PASCO_EINVAL;
	}
	slot_plan sp;
	int       rv = v->dynamic || cJSON_IsTrue(item(entry, "dynamic"))
	                   ? pasci_ckpt_dyn_check(ck, entry, v, err, errlen)
	                   : plan_slots(ck, entry, false, &sp, err, errlen);
	if (rv != 0) {
		return rv;
	}
	if (task < 0 || (!mine && strcmp(v->name, GLOBAL_STEP) == 0)) {
		*how = 'w';
	} else if (mine) {
		*how = 'c';
	}
	return PASCO_OK;
}

int
pasci_ckpt_restore(pasci_ckpt *ck, pasco_variable **vars, size_t n,
    int32_t task, char *restored, size_t rlen, char *err, size_t len)
{
	char  *how  = pasci_calloc(n + 1, 1);
	size_t used = 0;
	int    rv   = how != NULL ? PASCO_OK : PASCO_ENOMEM;

	if (restored != NULL && rlen > 0) {
		restored[0] = 0;
	}
	for (size_t i = 0; i < n && rv == 0;
	     i++) { /* check everything first */
		rv = plan(ck, vars[i], task, &how[i], err, len);
	}
	for (size_t i = 0; i < n && rv == 0; i++) {
		if (how[i] == 0) {
			continue;
		}
		rv = (vars[i]->dynamic ? pasci_ckpt_dyn_restore
		                       : restore_variable)(ck,
		    manifest_entry(ck->m, vars[i]->name), vars[i],
		    how[i] == 'w' ? -1 : task, err, len);
		if (rv == 0 && restored != NULL && used < rlen) {
			used += (size_t) snprintf(restored + used, rlen - used,
			    "%s%s", used > 0 ? ", " : "", vars[i]->name);
		}
	}
	free(how);
	return rv;
}

static int
strategy_fail(
    pasco_strategy *s, int rv, const char *fmt, const char *a, const char *b)
{
	pthread_mutex_lock(&s->mu);
	pasci_error_fmt(s->error, sizeof(s->error), fmt, a, b);
	pthread_mutex_unlock(&s->mu);
	return rv;
}

/* Restores every variable of s that ck holds. */
static int
restore_opened(pasco_strategy *s, pasci_ckpt *ck, int64_t *step)
{
	char             err[1500] = "";
	size_t           n;
	pasco_variable **vars = pasci_checkpoint_directory(s, &n);
	int              rv   = vars != NULL ? pasci_ckpt_restore(
	                                           ck, vars, n, -1, NULL, 0, err, sizeof(err))
	                                     : PASCO_ENOMEM;
	if (rv != 0) {
		strategy_fail(s, rv, "restoring %s: %s", ck->path,
		    vars != NULL ? err : "out of memory");
	} else if (step != NULL) {
		*step = ck->step;
	}
	pasci_checkpoint_directory_free(vars, n);
	pasci_ckpt_close(ck);
	return rv;
}

int
pasco_checkpoint_restore_with(pasco_strategy *s, const char *path,
    const pasco_checkpoint_read_options *opts, int64_t *step)
{
	char       err[1500] = "";
	pasci_ckpt ck;
	int        rv = pasci_ckpt_open(
	           &ck, path, opts != NULL && opts->allow_format_1, err, sizeof(err));
	if (rv != 0) {
		return strategy_fail(s, rv, "restoring %s: %s", path, err);
	}
	return restore_opened(s, &ck, step);
}

int
pasco_checkpoint_restore(pasco_strategy *s, const char *path, int64_t *step)
{
	return pasco_checkpoint_restore_with(s, path, NULL, step);
}

int
pasco_checkpoint_restore_latest(
    pasco_strategy *s, const char *dir, int64_t *step)
{
	char       err[1500];
	pasci_ckpt ck;
	int        rv = pasci_ckpt_open_latest(&ck, dir, err, sizeof(err));
	if (rv != 0) {
		return strategy_fail(s, rv, "%s%s", err, "");
	}
	return restore_opened(s, &ck, step);
}
