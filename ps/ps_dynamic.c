/*
 * The ps's requests on dynamic embedding tables (ps/dyn_table.h): made by
 * a VAR_CREATE with Dynamic options, read by VAR_GATHER with keys, updated
 * by VAR_APPLY_SPARSE, filled by DYN_IMPORT (a checkpoint's rows), counted
 * by DYN_STATS. Every other method on a table's name is refused, naming
 * what to do instead. Every request is checked before a table changes.
 */
#include "ps_dynamic.h"

#include <string.h>

#include "tensor_impl.h"
#include "util.h"

static nng_msg *
refuse(int rv, const char *fmt, const char *name)
{
	return pasci_wire_status_reply(rv, fmt, name);
}

/* keys: a 1-D i64 tensor (any 64 bits), whose rows (dim f32 each) would
 * take at most max_bytes, and fit in one message (a reply the client
 * would refuse is not computed); else a reply saying what is wrong. */
static nng_msg *
check_keys(const pasci_wire_msg *req, size_t k, int64_t dim, size_t max_bytes)
{
	const pasco_tensor *keys = k < req->ntensors ? req->tensors[k] : NULL;
	/* a reply's header and framing take a little of the message */
	size_t msg = pasci_max_message_bytes() - ((size_t) 4 << 10);
	max_bytes  = msg < max_bytes ? msg : max_bytes;
	if (keys == NULL || keys->dtype != PASCO_I64 || keys->rank != 1) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "'%s' is a dynamic table: its keys must be a 1-D i64 "
		    "tensor (a key's 64 bits; u64 keys as the same bits), got "
		    "%s",
		    req->hdr->name,
		    keys == NULL ? "none" : pasco_dtype_name(keys->dtype));
	}
	if ((uint64_t) keys->count >
	    max_bytes / sizeof(float) / (uint64_t) dim) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "'%s': %lld keys of %lld floats would take more than the "
		    "%zu bytes one request may take on this ps (the smaller "
		    "of PASCO_MAX_VARIABLE_MB and PASCO_MAX_MESSAGE_MB); "
		    "send fewer keys at once",
		    req->hdr->name, (long long) keys->count, (long long) dim,
		    max_bytes);
	}
	return NULL;
}

static nng_msg *
dyn_create(pasci_dyn_set *set, ps_store *store, const pasci_wire_msg *req,
    size_t max_bytes)
{
	const pasci_wire_dynamic *d        = req->hdr->dynamic;
	pasci_dyn_config          c        = {.dim = d->dim,
	                    .min_count             = d->min_count,
	                    .evict_after           = d->evict_after,
	                    .max_rows              = d->max_rows,
	                    .default_zeros         = d->default_zeros};
	char                      err[512] = "";
	bool                      exists   = false;
	if (req->hdr->init == NULL) {
		return refuse(PASCO_EINVAL,
		    "create '%s': a dynamic table needs an initializer",
		    req->hdr->name);
	}
	c.init = req->hdr->init->init;
	if (c.dim > 0 && (uint64_t) c.dim > max_bytes / sizeof(float)) {
		return refuse(PASCO_EINVAL,
		    "create '%s': one row would pass this ps's limit per "
		    "variable (PASCO_MAX_VARIABLE_MB)",
		    req->hdr->name);
	}
	if (pasci_store_var_exists(store, req->hdr->name, PASCO_F32, 0, NULL,
	        &exists, err, sizeof(err)) != 0 ||
	    exists) {
		return refuse(PASCO_EEXIST,
		    "create '%s': a variable of that name exists on this ps; "
		    "it cannot be a dynamic table too",
		    req->hdr->name);
	}
	return pasci_wire_status_reply(
	    pasci_dyn_add(set, req->hdr->name, &c, err, sizeof(err)), "%s",
	    err);
}

static nng_msg *
dyn_gather(pasci_dyn_table *t, const pasci_wire_msg *req, size_t max_bytes)
{
	int64_t       dim = pasci_dyn_config_of(t)->dim;
	nng_msg      *bad = check_keys(req, 0, dim, max_bytes), *reply = NULL;
	pasco_tensor *rows;
	pasci_wire_builder b;
	char               err[512] = "";
	int                rv;
	if (bad != NULL) {
		return bad;
	}
	if (req->ntensors != 1) {
		return refuse(PASCO_EINVAL,
		    "a lookup in '%s' takes one tensor of keys",
		    req->hdr->name);
	}
	if ((rv = pasci_tensor_alloc_raw(&rows, PASCO_F32, 2,
	         (int64_t[]){req->tensors[0]->count, dim})) != 0) {
		return refuse(
		    rv, "out of memory looking up '%s'", req->hdr->name);
	}
	rv = pasci_dyn_lookup(t, req->tensors[0]->data, req->tensors[0]->count,
	    !req->hdr->find_only, rows->data, err, sizeof(err));
	if (rv != 0) {
		pasco_tensor_release(rows);
		return pasci_wire_status_reply(
		    rv, "'%s': %s", req->hdr->name, err);
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_GATHER);
	pasci_wire_add_tensor(&b, rows, NULL);
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(rows);
	return reply;
}

static nng_msg *
dyn_apply(pasci_dyn_table *t, const pasci_wire_msg *req, size_t max_bytes)
{
	int64_t  dim      = pasci_dyn_config_of(t)->dim;
	nng_msg *bad      = check_keys(req, 0, dim, max_bytes);
	char     err[512] = "";
	int      rv;
	if (bad != NULL) {
		return bad;
	}
	if (req->ntensors != 2 || req->hdr->opt == NULL) {
		return refuse(PASCO_EINVAL,
		    "an update of '%s' needs keys, gradient rows and an "
		    "optimizer",
		    req->hdr->name);
	}
	if (req->hdr->sync != NULL && req->hdr->sync->mode == 1) {
		return refuse(PASCO_EINVAL,
		    "'%s' is a dynamic table: it takes ASP and SSP updates, "
		    "not BSP rounds",
		    req->hdr->name);
	}
	rv = pasci_dyn_apply(t, req->hdr->opt, req->tensors[0]->data,
	    req->tensors[0]->count, req->tensors[1], req->hdr->step, err,
	    sizeof(err));
	return pasci_wire_status_reply(rv, "'%s': %s", req->hdr->name, err);
}

/* DYN_IMPORT's tensors as a state (views; nothing copied). */
static nng_msg *
dyn_import(pasci_dyn_table *t, const pasci_wire_msg *req)
{
	pasci_dyn_state       s = {0};
	const pasco_tensor   *meta, *init;
	const pasci_opt_desc *d        = NULL;
	char                  err[512] = "";
	size_t                nslots;
	int                   rv;
	if (req->ntensors < 7) {
		return refuse(PASCO_EINVAL,
		    "an import into '%s' needs keys, values, steps, pending "
		    "keys and counts, meta and slot starts",
		    req->hdr->name);
	}
	meta   = req->tensors[5];
	init   = req->tensors[6];
	nslots = req->ntensors - 7;
	if (req->hdr->opt != NULL && req->hdr->opt->kind != 0 &&
	    (d = pasci_opt_desc_of((int) req->hdr->opt->kind)) == NULL) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "an import into '%s': its slots are of unknown optimizer "
		    "kind %d",
		    req->hdr->name, (int) req->hdr->opt->kind);
	}
	if (meta->dtype != PASCO_I64 || meta->count != 6 ||
	    init->dtype != PASCO_F64 || init->rank != 1 ||
	    (d == NULL && nslots > 0) ||
	    (d != NULL &&
	        ((size_t) d->nslots < nslots || init->count != d->nslots))) {
		return refuse(PASCO_EINVAL,
		    "an import into '%s': bad meta, slot starts or slots for "
		    "its optimizer",
		    req->hdr->name);
	}
	/* counts and steps are never negative (a fuzzed import's were) */
	for (int64_t i = 0; i < meta->count; i++) {
		if (((const int64_t *) meta->data)[i] < 0) {
			return refuse(PASCO_EINVAL,
			    "an import into '%s': negative counts or steps in "
			    "its meta",
			    req->hdr->name);
		}
	}
	if (req->tensors[2]->dtype == PASCO_I64) {
		for (int64_t i = 0; i < req->tensors[2]->count; i++) {
			if (((const int64_t *) req->tensors[2]->data)[i] < 0) {
				return refuse(PASCO_EINVAL,
				    "an import into '%s': a negative step in "
				    "its rows' last steps",
				    req->hdr->name);
			}
		}
	}
	s.keys           = req->tensors[0];
	s.values         = req->tensors[1];
	s.last_step      = req->tensors[2];
	s.pending_keys   = req->tensors[3];
	s.pending_counts = req->tensors[4];
	s.kind           = d != NULL ? d->kind : 0;
	s.nslots         = d != NULL ? d->nslots : 0;
	for (size_t k = 0; k < nslots; k++) {
		/* an empty tensor: a slot its update does not use */
		s.slot[k] =
		    req->tensors[7 + k]->count > 0 || s.keys->count == 0
		        ? req->tensors[7 + k]
		        : NULL;
	}
	for (int k = 0; d != NULL && k < d->nslots; k++) {
		s.slot_init[k] = ((const double *) init->data)[k];
	}
	s.stats.created     = ((const int64_t *) meta->data)[0];
	s.stats.evicted_age = ((const int64_t *) meta->data)[1];
	s.stats.evicted_cap = ((const int64_t *) meta->data)[2];
	s.stats.refused     = ((const int64_t *) meta->data)[3];
	s.stats.step        = ((const int64_t *) meta->data)[4];
	s.applies           = ((const int64_t *) meta->data)[5];
	/* want_result: the first of a table's imports, which replaces it */
	rv = pasci_dyn_import(
	    t, &s, NULL, NULL, req->hdr->want_result, err, sizeof(err));
	return pasci_wire_status_reply(rv, "'%s': %s", req->hdr->name, err);
}

static nng_msg *
dyn_stats(pasci_dyn_table *t)
{
	pasci_dyn_stats    st;
	pasco_tensor      *out;
	pasci_wire_builder b;
	nng_msg           *reply = NULL;
	pasci_dyn_stats_of(t, &st);
	if (pasco_tensor_alloc(&out, PASCO_I64, 1, (int64_t[]){7}) != 0) {
		return refuse(PASCO_ENOMEM, "out of memory%s", "");
	}
	memcpy(out->data,
	    (int64_t[]){st.rows, st.pending, st.created, st.evicted_age,
	        st.evicted_cap, st.refused, st.step},
	    sizeof(int64_t) * 7);
	pasci_wire_builder_init(&b, PASCI_METHOD_DYN_STATS);
	pasci_wire_add_tensor(&b, out, NULL);
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(out);
	return reply;
}

nng_msg *
pasci_ps_dynamic(pasci_dyn_set *set, ps_store *store,
    const pasci_wire_msg *req, size_t max_bytes)
{
	pasci_method     m = req->hdr->method;
	pasci_dyn_table *t;
	if (m == PASCI_METHOD_VAR_CREATE && req->hdr->dynamic != NULL) {
		return dyn_create(set, store, req, max_bytes);
	}
	if ((t = pasci_dyn_find(set, req->hdr->name)) == NULL) {
		return m == PASCI_METHOD_DYN_IMPORT ||
		               m == PASCI_METHOD_DYN_STATS
		           ? refuse(PASCO_ENOTFOUND,
		                 "no dynamic table named '%s' on this ps",
		                 req->hdr->name)
		           : NULL;
	}
	switch (m) {
	case PASCI_METHOD_VAR_GATHER:
		return dyn_gather(t, req, max_bytes);
	case PASCI_METHOD_VAR_APPLY_SPARSE:
		return dyn_apply(t, req, max_bytes);
	case PASCI_METHOD_DYN_IMPORT:
		return dyn_import(t, req);
	case PASCI_METHOD_DYN_STATS:
		return dyn_stats(t);
	case PASCI_METHOD_VAR_CREATE:
		return refuse(PASCO_EEXIST,
		    "create '%s': a dynamic table of that name exists on this "
		    "ps",
		    req->hdr->name);
	default:
		return refuse(PASCO_EINVAL,
		    "'%s' is a dynamic embedding table: look rows up by key "
		    "(gather) and update them with a sparse gradient; it has "
		    "no whole value to read, assign or apply",
		    req->hdr->name);
	}
}
