/*
 * Dynamic embedding tables in checkpoints (see checkpoint_impl.h for the
 * manifest): the manifest entry of a table from what each ps said it
 * wrote, the check of a table's tensors before anything is restored, and
 * the restore itself: every old file's rows, slots and pending counts are
 * routed key by key to the shard pasci_dyn_shard picks among the new shard
 * count, and each new shard gets them in one or more DYN_IMPORT requests
 * (the first clears its table). Runs on the caller's thread (a restore's,
 * or the recovery thread's).
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_impl.h"
#include "optimizer_desc.h"
#include "tensor_impl.h"
#include "util.h"
#include "variable_impl.h"

size_t pasci_ckpt_dyn_request_bytes = (size_t) 64 << 20;

static const cJSON *
item(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* --- saving: the manifest entry --- */

int
pasci_ckpt_dyn_describe(cJSON *e, const pasco_variable *v, const cJSON *tables,
    char *err, size_t len)
{
	cJSON  *shards = cJSON_AddArrayToObject(e, "shards");
	double  total  = 0;
	int64_t dim    = v->shape[1];
	cJSON_AddBoolToObject(e, "dynamic", true);
	cJSON_AddNumberToObject(e, "dim", (double) dim);
	for (int32_t k = 0; k < v->nshards; k++) {
		cJSON       *sh = cJSON_CreateObject(), *mine;
		const cJSON *t;
		char         file[64];
		pasci_fmt(file, sizeof(file), "ps-%d.safetensors",
		    v->shards[k].ps_task);
		t = item(item(tables, file), v->shards[k].name);
		cJSON_AddItemToArray(shards, sh);
		if (!cJSON_IsObject(t) ||
		    cJSON_GetNumberValue(item(t, "dim")) != (double) dim) {
			pasci_fmt(err, len,
			    "ps %d did not write dynamic table '%s' (dim "
			    "%lld) into %s",
			    v->shards[k].ps_task, v->name, (long long) dim,
			    file);
			return PASCO_EPROTO;
		}
		cJSON_AddStringToObject(sh, "name", v->shards[k].name);
		cJSON_AddNumberToObject(sh, "ps_task", v->shards[k].ps_task);
		cJSON_AddNumberToObject(sh, "offset", 0);
		cJSON_AddNumberToObject(sh, "rows", 0);
		cJSON_AddStringToObject(sh, "file", file);
		mine = cJSON_AddObjectToObject(sh, "dynamic");
		cJSON_AddItemToObject(
		    mine, "rows", cJSON_Duplicate(item(t, "rows"), 1));
		cJSON_AddItemToObject(
		    mine, "pending", cJSON_Duplicate(item(t, "pending"), 1));
		if (item(t, "optimizer") != NULL) {
			cJSON_AddItemToObject(mine, "optimizer",
			    cJSON_Duplicate(item(t, "optimizer"), 1));
		}
		cJSON_AddItemToObject(
		    mine, "slots", cJSON_Duplicate(item(t, "slots"), 1));
		total += cJSON_GetNumberValue(item(t, "rows"));
		if (k == 0) { /* the same on every ps */
			cJSON_AddItemToObject(e, "options",
			    cJSON_Duplicate(item(t, "options"), 1));
		}
	}
	cJSON_AddNumberToObject(e, "rows", total);
	return PASCO_OK;
}

/* --- restoring: the plan --- */

/* One old shard's tensors (borrowed from the checkpoint's files). */
typedef struct dyn_src {
	const pasco_tensor   *keys, *values, *last, *pkeys, *pcounts, *meta;
	const pasco_tensor   *init;
	const pasco_tensor   *slot[PASCI_OPT_MAX_SLOTS];
	const pasci_opt_desc *d; /* its slots' optimizer; NULL: none yet */
} dyn_src;

typedef struct dyn_plan {
	int                   nsrc;
	dyn_src               src[PASCI_MAX_SHARDS];
	int64_t               dim;
	const pasci_opt_desc *d; /* the table's optimizer (NULL: none) */
	bool                  has_slot[PASCI_OPT_MAX_SLOTS];
	double                slot_init[PASCI_OPT_MAX_SLOTS];
	int64_t               step, applies; /* the largest of the files' */
} dyn_plan;

static bool
shaped(const pasco_tensor *t, pasco_dtype dt, int32_t rank, int64_t n0,
    int64_t n1)
{
	return t != NULL && t->dtype == dt && t->rank == rank &&
	       (n0 < 0 || t->shape[0] == n0) &&
	       (rank < 2 || t->shape[1] == n1);
}

/* The tensor "<shard>/<part>" of f, or NULL. */
static const pasco_tensor *
part_of(const pasci_safetensors *f, const char *shard, const char *part)
{
	char name[1200];
	pasci_fmt(name, sizeof(name), "%s/%s", shard, part);
	return pasci_safetensors_find(f, name);
}

/* Reads and checks one old shard sh (of table var) into s. */
static int
load_src(pasci_ckpt *ck, const char *var, const cJSON *sh, int64_t dim,
    dyn_src *s, char *err, size_t len)
{
	const char *name = cJSON_GetStringValue(item(sh, "name"));
	const char *file = cJSON_GetStringValue(item(sh, "file"));
	const char *opt =
	    cJSON_GetStringValue(item(item(sh, "dynamic"), "optimizer"));
	const cJSON             *slot;
	const pasci_safetensors *f;
	int64_t                  n, p;
	memset(s, 0, sizeof(*s));
	if (name == NULL || file == NULL ||
	    !cJSON_IsObject(item(sh, "dynamic"))) {
		pasci_fmt(err, len,
		    "checkpoint %s: a shard of dynamic table '%s' names no "
		    "file or tensors",
		    ck->path, var);
		return PASCO_EPROTO;
	}
	if ((f = pasci_ckpt_file(ck, file, err, len)) == NULL) {
		return PASCO_EPROTO;
	}
	s->keys    = part_of(f, name, "keys");
	s->values  = part_of(f, name, "values");
	s->last    = part_of(f, name, "last_step");
	s->pkeys   = part_of(f, name, "pending_keys");
	s->pcounts = part_of(f, name, "pending_counts");
	s->meta    = part_of(f, name, "meta");
	s->init    = part_of(f, name, "slot_init");
	n = s->keys != NULL && s->keys->rank == 1 ? s->keys->shape[0] : -1;
	p = s->pkeys != NULL && s->pkeys->rank == 1 ? s->pkeys->shape[0] : -1;
	s->d = opt != NULL ? pasci_opt_desc_named(opt) : NULL;
	if (n < 0 || p < 0 || !shaped(s->keys, PASCO_I64, 1, n, 0) ||
	    !shaped(s->values, PASCO_F32, 2, n, dim) ||
	    !shaped(s->last, PASCO_I64, 1, n, 0) ||
	    !shaped(s->pkeys, PASCO_I64, 1, p, 0) ||
	    !shaped(s->pcounts, PASCO_I64, 1, p, 0) ||
	    !shaped(s->meta, PASCO_I64, 1, 6, 0) ||
	    !shaped(s->init, PASCO_F64, 1, -1, 0)) {
		pasci_fmt(err, len,
		    "checkpoint %s: %s: dynamic table '%s' lacks a tensor or "
		    "has one of the wrong dtype or shape (it needs %s/keys "
		    "i64 [n], /values f32 [n, %lld], /last_step i64 [n], "
		    "/pending_keys and /pending_counts i64 [p], /meta i64 "
		    "[6], /slot_init f64)",
		    ck->path, file, var, name, (long long) dim);
		return PASCO_EPROTO;
	}
	if (opt != NULL && s->d == NULL) {
		pasci_fmt(err, len,
		    "checkpoint %s: %s: dynamic table '%s' has slots of "
		    "optimizer '%.40s', which this Pasco does not know",
		    ck->path, file, var, opt);
		return PASCO_EPROTO;
	}
	if (s->init->count != (s->d != NULL ? s->d->nslots : 0)) {
		pasci_fmt(err, len,
		    "checkpoint %s: %s: %s/slot_init has %lld starts; its "
		    "optimizer (%s) has %d slots",
		    ck->path, file, name, (long long) s->init->count,
		    s->d != NULL ? s->d->name : "none",
		    s->d != NULL ? s->d->nslots : 0);
		return PASCO_EPROTO;
	}
	cJSON_ArrayForEach(slot, item(item(sh, "dynamic"), "slots"))
	{
		const char *sn = cJSON_GetStringValue(slot);
		int k = s->d != NULL ? pasci_opt_slot_index(s->d, sn) : -1;
		if (k < 0 || s->slot[k] != NULL ||
		    !shaped(s->slot[k] = part_of(f, name, sn), PASCO_F32, 2, n,
		        dim)) {
			pasci_fmt(err, len,
			    "checkpoint %s: %s: dynamic table '%s' lists slot "
			    "'%.40s': not a slot of its optimizer (%s), "
			    "listed "
			    "twice, or its tensor is missing or not f32 "
			    "[%lld, %lld]",
			    ck->path, file, var, sn != NULL ? sn : "?",
			    s->d != NULL ? s->d->name : "none", (long long) n,
			    (long long) dim);
			return PASCO_EPROTO;
		}
	}
	return PASCO_OK;
}

/* Reads and checks every old shard of table entry into p. */
static int
load_plan(pasci_ckpt *ck, const cJSON *entry, const pasco_variable *v,
    dyn_plan *p, char *err, size_t len)
{
	const cJSON *sh;
	int          rv;
	memset(p, 0, sizeof(*p));
	p->dim = v->shape[1];
	if (!cJSON_IsTrue(item(entry, "dynamic")) || !v->dynamic) {
		pasci_fmt(err, len,
		    "checkpoint %s holds '%s' as a %s; here it is a %s",
		    ck->path, v->name,
		    cJSON_IsTrue(item(entry, "dynamic"))
		        ? "dynamic table"
		        : "fixed variable (or a dynamic table saved before "
		          "checkpoints held their rows)",
		    v->dynamic ? "dynamic table" : "fixed variable");
		return PASCO_EINVAL;
	}
	if (cJSON_GetNumberValue(item(entry, "dim")) != (double) p->dim) {
		pasci_fmt(err, len,
		    "checkpoint %s holds dynamic table '%s' with dim %g; here "
		    "its dim is %lld",
		    ck->path, v->name,
		    cJSON_GetNumberValue(item(entry, "dim")),
		    (long long) p->dim);
		return PASCO_EINVAL;
	}
	cJSON_ArrayForEach(sh, item(entry, "shards"))
	{
		dyn_src *s = &p->src[p->nsrc];
		if (p->nsrc == PASCI_MAX_SHARDS) {
			pasci_fmt(err, len,
			    "checkpoint %s: dynamic table '%s' has more than "
			    "%d shards",
			    ck->path, v->name, PASCI_MAX_SHARDS);
			return PASCO_EPROTO;
		}
		if ((rv = load_src(ck, v->name, sh, p->dim, s, err, len)) !=
		    0) {
			return rv;
		}
		p->nsrc++;
		if (s->d != NULL && p->d != NULL && s->d != p->d) {
			pasci_fmt(err, len,
			    "checkpoint %s: the shards of dynamic table '%s' "
			    "have slots of two optimizers, %s and %s",
			    ck->path, v->name, p->d->name, s->d->name);
			return PASCO_EPROTO;
		}
		if (s->d != NULL && p->d == NULL) {
			p->d = s->d;
			for (int k = 0; k < s->d->nslots; k++) {
				p->slot_init[k] =
				    ((const double *) s->init->data)[k];
			}
		}
		for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
			p->has_slot[k] = p->has_slot[k] || s->slot[k] != NULL;
		}
		const int64_t *m = s->meta->data;
		p->step          = m[4] > p->step ? m[4] : p->step;
		p->applies       = m[5] > p->applies ? m[5] : p->applies;
	}
	if (p->nsrc == 0) {
		pasci_fmt(err, len,
		    "checkpoint %s: dynamic table '%s' has no shards",
		    ck->path, v->name);
		return PASCO_EPROTO;
	}
	return PASCO_OK;
}

int
pasci_ckpt_dyn_check(pasci_ckpt *ck, const cJSON *entry,
    const pasco_variable *v, char *err, size_t len)
{
	dyn_plan *p = malloc(sizeof(*p));
	int       rv;
	if (p == NULL) {
		pasci_fmt(err, len, "out of memory reading '%s'", v->name);
		return PASCO_ENOMEM;
	}
	rv = load_plan(ck, entry, v, p, err, len);
	free(p);
	return rv;
}

/* --- restoring: the requests --- */

/* A row or pending key of an old shard: (source, index). */
typedef struct dyn_ref {
	int32_t src;
	int64_t i;
} dyn_ref;

/* What one new shard gets. */
typedef struct dyn_share {
	dyn_ref *rows, *pending;
	int64_t  nrows, npending;
} dyn_share;

static void
share_fini(dyn_share *sh)
{
	free(sh->rows);
	free(sh->pending);
}

/* The rows and pending keys of p that belong to shard j of nshards, in
 * the old shards' order (each lists its rows most recent first). */
static int
share_of(const dyn_plan *p, int32_t j, int32_t nshards, dyn_share *sh)
{
	int64_t nr = 0, np = 0;
	memset(sh, 0, sizeof(*sh));
	for (int s = 0; s < p->nsrc; s++) {
		nr += p->src[s].keys->count;
		np += p->src[s].pkeys->count;
	}
	sh->rows    = malloc(sizeof(dyn_ref) * (size_t) (nr + 1));
	sh->pending = malloc(sizeof(dyn_ref) * (size_t) (np + 1));
	if (sh->rows == NULL || sh->pending == NULL) {
		share_fini(sh);
		return PASCO_ENOMEM;
	}
	for (int s = 0; s < p->nsrc; s++) {
		const int64_t *k  = p->src[s].keys->data;
		const int64_t *pk = p->src[s].pkeys->data;
		for (int64_t i = 0; i < p->src[s].keys->count; i++) {
			if (pasci_dyn_shard((uint64_t) k[i], nshards) == j) {
				sh->rows[sh->nrows++] = (dyn_ref){s, i};
			}
		}
		for (int64_t i = 0; i < p->src[s].pkeys->count; i++) {
			if (pasci_dyn_shard((uint64_t) pk[i], nshards) == j) {
				sh->pending[sh->npending++] = (dyn_ref){s, i};
			}
		}
	}
	return PASCO_OK;
}

/* Copies element-rows of width w (bytes) of the refs [a, b) out of the
 * sources' tensors (which(src)) into a new tensor. */
static int
gather_refs(pasco_tensor **out, pasco_dtype dt, int32_t rank, int64_t dim,
    const dyn_ref *refs, int64_t a, int64_t b, const dyn_plan *p,
    const pasco_tensor *(*which)(const dyn_src *, int), int k, double fill)
{
	size_t w = pasco_dtype_size(dt) * (size_t) (rank == 2 ? dim : 1);
	int    rv =
	    pasci_tensor_alloc_raw(out, dt, rank, (int64_t[]){b - a, dim});
	for (int64_t i = a; rv == 0 && i < b; i++) {
		const pasco_tensor *t = which(&p->src[refs[i].src], k);
		char *dst = (char *) (*out)->data + (size_t) (i - a) * w;
		if (t != NULL) {
			memcpy(dst,
			    (const char *) t->data + (size_t) refs[i].i * w,
			    w);
		} else { /* a slot this row's old shard did not hold */
			for (int64_t j = 0; j < dim; j++) {
				((float *) dst)[j] = (float) fill;
			}
		}
	}
	return rv;
}

static const pasco_tensor *
src_keys(const dyn_src *s, int k)
{
	(void) k;
	return s->keys;
}
static const pasco_tensor *
src_values(const dyn_src *s, int k)
{
	(void) k;
	return s->values;
}
static const pasco_tensor *
src_last(const dyn_src *s, int k)
{
	(void) k;
	return s->last;
}
static const pasco_tensor *
src_pkeys(const dyn_src *s, int k)
{
	(void) k;
	return s->pkeys;
}
static const pasco_tensor *
src_pcounts(const dyn_src *s, int k)
{
	(void) k;
	return s->pcounts;
}
static const pasco_tensor *
src_slot(const dyn_src *s, int k)
{
	return s->slot[k];
}

/* The tensors of one DYN_IMPORT: rows [ra, rb) and pending keys [pa, pb)
 * of sh, with meta, added to b. */
static int
build_import(pasci_wire_builder *b, const dyn_plan *p, const dyn_share *sh,
    int64_t ra, int64_t rb, int64_t pa, int64_t pb, const int64_t *meta)
{
	pasco_tensor *t[7 + PASCI_OPT_MAX_SLOTS] = {NULL};
	int           nslots = p->d != NULL ? p->d->nslots : 0, n = 0;
	int rv = gather_refs(&t[n++], PASCO_I64, 1, p->dim, sh->rows, ra, rb,
	    p, src_keys, 0, 0);
	rv     = rv != 0 ? rv
	                 : gather_refs(&t[n++], PASCO_F32, 2, p->dim, sh->rows, ra,
	                       rb, p, src_values, 0, 0);
	rv     = rv != 0 ? rv
	                 : gather_refs(&t[n++], PASCO_I64, 1, p->dim, sh->rows, ra,
	                       rb, p, src_last, 0, 0);
	rv     = rv != 0 ? rv
	                 : gather_refs(&t[n++], PASCO_I64, 1, p->dim, sh->pending,
	                       pa, pb, p, src_pkeys, 0, 0);
	rv     = rv != 0 ? rv
	                 : gather_refs(&t[n++], PASCO_I64, 1, p->dim, sh->pending,
	                       pa, pb, p, src_pcounts, 0, 0);
	rv     = rv != 0 ? rv
	                 : pasco_tensor_from(&t[n++], PASCO_I64, 1, (int64_t[]){6},
	                       meta, sizeof(int64_t) * 6);
	rv     = rv != 0 ? rv
	                 : pasco_tensor_from(&t[n++], PASCO_F64, 1,
	                       (int64_t[]){nslots}, p->slot_init,
	                       sizeof(double) * (size_t) nslots);
	for (int k = 0; rv == 0 && k < nslots; k++) {
		/* an empty tensor: a slot no row holds */
		rv = gather_refs(&t[n++], PASCO_F32, 2, p->dim, sh->rows, ra,
		    p->has_slot[k] ? rb : ra, p, src_slot, k, p->slot_init[k]);
	}
	for (int i = 0; i < n; i++) {
		if (rv == 0) {
			pasci_wire_add_tensor(b, t[i], NULL);
		}
		pasco_tensor_release(t[i]);
	}
	return rv;
}

/* Sends shard j of v its share in requests of at most
 * pasci_ckpt_dyn_request_bytes (about): the least recent rows first, so
 * the table's recency order survives; the first request clears the table
 * and carries the counters. */
static int
send_share(pasco_variable *v, int32_t j, const dyn_plan *p,
    const dyn_share *sh, const int64_t *meta0)
{
	int    nslots = p->d != NULL ? p->d->nslots : 0;
	size_t rowb = (size_t) p->dim * sizeof(float) * (size_t) (1 + nslots) +
	              2 * sizeof(int64_t);
	int64_t per_row = (int64_t) (pasci_ckpt_dyn_request_bytes / rowb);
	int64_t per_pend =
	    (int64_t) (pasci_ckpt_dyn_request_bytes / (2 * sizeof(int64_t)));
	int64_t         nreq, meta[6];
	pasco_optimizer opt = {0};
	int             rv  = PASCO_OK;
	per_row             = per_row > 0 ? per_row : 1;
	per_pend            = per_pend > 0 ? per_pend : 1;
	nreq                = (sh->nrows + per_row - 1) / per_row;
	if ((sh->npending + per_pend - 1) / per_pend > nreq) {
		nreq = (sh->npending + per_pend - 1) / per_pend;
	}
	nreq     = nreq > 0 ? nreq : 1;
	opt.kind = p->d != NULL ? p->d->kind : 0;
	for (int64_t r = 0; r < nreq && rv == 0; r++) {
		shard_call *calls =
		    pasci_shard_calls_new(v, PASCI_METHOD_DYN_IMPORT);
		int64_t rb = sh->nrows - r * per_row, ra = rb - per_row;
		int64_t pa = r * per_pend, pb = pa + per_pend;
		if (calls == NULL) {
			return pasci_variable_fail(v, PASCO_ENOMEM,
			    "out of memory restoring '%s'", v->name);
		}
		rb = rb > 0 ? rb : 0;
		ra = ra > 0 ? ra : 0;
		pa = pa < sh->npending ? pa : sh->npending;
		pb = pb < sh->npending ? pb : sh->npending;
		/* counters once (each import adds its own), clocks in each */
		memcpy(meta, meta0, sizeof(meta));
		if (r > 0) {
			meta[0] = meta[1] = meta[2] = meta[3] = 0;
		}
		calls[j].used              = true;
		calls[j].b.hdr.want_result = r == 0;
		calls[j].b.hdr.opt         = opt.kind != 0 ? &opt : NULL;
		rv = build_import(&calls[j].b, p, sh, ra, rb, pa, pb, meta);
		rv = rv != 0 ? pasci_variable_fail(v, rv,
		                   "out of memory restoring '%s'", v->name)
		             : pasci_shard_calls_run(v, calls);
		pasci_shard_calls_free(v, calls);
	}
	return rv;
}

/* The table's options from the manifest entry: PASCO_EPROTO when they are
 * missing or make no sense. */
static int
options_of(const pasci_ckpt *ck, const cJSON *entry, pasci_wire_dynamic *d,
    pasci_wire_init *init, char *err, size_t len)
{
	const cJSON *o = item(entry, "options"), *in = item(o, "initializer");
	const char  *seed = cJSON_GetStringValue(item(in, "seed"));
	double       kind = cJSON_GetNumberValue(item(in, "kind"));
	char        *end  = NULL;
	memset(init, 0, sizeof(*init));
	*d = (pasci_wire_dynamic){
	    .dim       = (int64_t) cJSON_GetNumberValue(item(entry, "dim")),
	    .min_count = (int64_t) cJSON_GetNumberValue(item(o, "min_count")),
	    .evict_after =
	        (int64_t) cJSON_GetNumberValue(item(o, "evict_after")),
	    .max_rows =
	        (int64_t) cJSON_GetNumberValue(item(o, "max_rows_per_ps")),
	    .default_zeros = cJSON_IsTrue(item(o, "default_zeros"))};
	if (seed != NULL) {
		init->init.seed = strtoull(seed, &end, 10);
	}
	if (!cJSON_IsObject(o) || seed == NULL || end == seed || *end != 0 ||
	    !(kind >= PASCO_INIT_ZEROS && kind <= PASCO_INIT_GLOROT_UNIFORM) ||
	    !cJSON_IsNumber(item(o, "min_count")) ||
	    !cJSON_IsNumber(item(o, "evict_after")) ||
	    !cJSON_IsNumber(item(o, "max_rows_per_ps"))) {
		pasci_fmt(err, len,
		    "checkpoint %s: dynamic table '%s' has no options (or "
		    "damaged ones) to create it again with",
		    ck->path, cJSON_GetStringValue(item(entry, "name")));
		return PASCO_EPROTO;
	}
	init->init.kind   = (pasco_init_kind) kind;
	init->init.value  = cJSON_GetNumberValue(item(in, "value"));
	init->init.minval = cJSON_GetNumberValue(item(in, "minval"));
	init->init.maxval = cJSON_GetNumberValue(item(in, "maxval"));
	init->init.mean   = cJSON_GetNumberValue(item(in, "mean"));
	init->init.stddev = cJSON_GetNumberValue(item(in, "stddev"));
	return PASCO_OK;
}

/* Creates the table on the shards of v on task (a ps that came back
 * empty) with the manifest's options; an existing table of the same
 * options is left alone. */
static int
create_on(pasci_ckpt *ck, const cJSON *entry, pasco_variable *v, int32_t task,
    char *err, size_t len)
{
	pasci_wire_dynamic d;
	pasci_wire_init    init;
	shard_call        *calls;
	int                rv = options_of(ck, entry, &d, &init, err, len);
	if (rv != 0) {
		return rv;
	}
	if ((calls = pasci_shard_calls_new(v, PASCI_METHOD_VAR_CREATE)) ==
	    NULL) {
		pasci_fmt(err, len, "out of memory restoring '%s'", v->name);
		return PASCO_ENOMEM;
	}
	for (int32_t i = 0; i < v->nshards; i++) {
		calls[i].used          = v->shards[i].ps_task == task;
		calls[i].b.hdr.dynamic = &d;
		calls[i].b.hdr.init    = &init;
	}
	if ((rv = pasci_shard_calls_run(v, calls)) != 0) {
		pasci_fmt(err, len,
		    "creating dynamic table '%s' again on ps %d: %s", v->name,
		    (int) task, pasco_variable_error(v));
	}
	pasci_shard_calls_free(v, calls);
	return rv;
}

int
pasci_ckpt_dyn_restore(pasci_ckpt *ck, const cJSON *entry, pasco_variable *v,
    int32_t task, char *err, size_t len)
{
	dyn_plan *p = malloc(sizeof(*p));
	int       rv;
	if (p == NULL) {
		pasci_fmt(err, len, "out of memory restoring '%s'", v->name);
		return PASCO_ENOMEM;
	}
	if ((rv = load_plan(ck, entry, v, p, err, len)) == 0 && task >= 0) {
		rv = create_on(ck, entry, v, task, err, len);
	}
	for (int32_t j = 0; rv == 0 && j < v->nshards; j++) {
		dyn_share sh;
		int64_t   meta[6] = {0, 0, 0, 0, p->step, p->applies};
		if (task >= 0 && v->shards[j].ps_task != task) {
			continue;
		}
		if ((rv = share_of(p, j, v->nshards, &sh)) != 0) {
			pasci_fmt(
			    err, len, "out of memory restoring '%s'", v->name);
			break;
		}
		if (p->nsrc == v->nshards) { /* the same routing: its counts */
			memcpy(meta, p->src[j].meta->data, sizeof(meta));
		} else { /* counts cannot be split by key */
			meta[0] = sh.nrows;
		}
		if ((rv = send_share(v, j, p, &sh, meta)) != 0) {
			pasci_fmt(err, len,
			    "restoring dynamic table '%s' on ps %d: %s",
			    v->name, (int) v->shards[j].ps_task,
			    pasco_variable_error(v));
		}
		share_fini(&sh);
	}
	free(p);
	return rv;
}
