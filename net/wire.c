/*
 * Wire codec, the decoding half (see wire.h for the layout; building and
 * encoding are in wire_build.c): a message's protobuf header becomes a
 * pasci_wire_header, checked as it is converted, and its tensors view the
 * received message (no copy); and the request kinds tied to the schema's
 * (the end of the file). Stateless; thread-safe.
 */
#include "wire.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lr_schedule.h"
#include "metrics_registry.h"
#include "optimizer_desc.h"
#include "tensor_impl.h"
#include "util.h"
#include "value_impl.h"
#include "wire.pb-c.h"
#include "wire_arena.h"

#define PAD8(n) PASCI_PAD8(n)

uint64_t
pasci_wire_get_incarnation(nng_msg *msg)
{
	if (nng_msg_len(msg) < 8) {
		return 0;
	}
	return pasci_get_be(nng_msg_body(msg), 8);
}

void
pasci_wire_set_incarnation(nng_msg *msg, uint64_t incarnation)
{
	if (nng_msg_len(msg) >= 8) {
		pasci_put_be(nng_msg_body(msg), incarnation, 8);
	}
}

int
pasci_wire_spec_check(const pasci_wire_spec *spec)
{
	int64_t count;
	size_t  nbytes;
	if (spec == NULL) {
		return PASCO_EINVAL;
	}
	return pasci_tensor_check_spec(
	    spec->dtype, spec->rank, spec->shape, &count, &nbytes);
}

/* A spec from a TensorMeta; false when its rank is too big to be one. */
static bool
spec_from_pb(pasci_wire_spec *spec, const Pasco__Wire__TensorMeta *meta)
{
	memset(spec, 0, sizeof(*spec));
	if (meta == NULL || meta->n_shape > PASCO_MAX_RANK) {
		return false;
	}
	spec->dtype = (pasco_dtype) meta->dtype;
	spec->rank  = (int32_t) meta->n_shape;
	if (meta->n_shape > 0) { /* a scalar's shape array is NULL */
		memcpy(
		    spec->shape, meta->shape, sizeof(int64_t) * meta->n_shape);
	}
	return true;
}

static void
msg_free(void *msg)
{
	nng_msg_free(msg);
}

/* Makes the tensors of m, viewing body (owned by st); copies when
 * misaligned. */
static int
decode_tensors(pasci_wire_msg *m, const Pasco__Wire__Header *pb, uint8_t *body,
    size_t len, pasco_storage *st, size_t off, char *err, size_t errlen)
{
	int rv = PASCO_OK;

	m->tensors = pasci_calloc(pb->n_tensors + 1, sizeof(*m->tensors));
	for (size_t i = 0; m->tensors != NULL && i < pb->n_tensors; i++) {
		pasci_wire_spec spec;
		int64_t         count;
		size_t          nbytes;
		if (!spec_from_pb(&spec, pb->tensors[i]) ||
		    pasci_wire_spec_check(&spec) != 0) {
			pasci_fmt(err, errlen,
			    "tensor %zu has an invalid dtype "
			    "or shape",
			    i);
			rv = PASCO_EPROTO;
			break;
		}
		pasci_tensor_check_spec(
		    spec.dtype, spec.rank, spec.shape, &count, &nbytes);
		if (off > len || nbytes > len - off) {
			pasci_fmt(err, errlen,
			    "tensor %zu needs %zu bytes at "
			    "offset %zu; the message has %zu",
			    i, nbytes, off, len);
			rv = PASCO_EPROTO;
			break;
		}
		rv = ((uintptr_t) (body + off) % 8 == 0)
		         ? pasci_tensor_view(&m->tensors[i], spec.dtype,
		               spec.rank, spec.shape, body + off, st)
		         : pasco_tensor_from(&m->tensors[i], spec.dtype,
		               spec.rank, spec.shape, body + off, nbytes);
		if (rv != 0) {
			break;
		}
		m->ntensors++;
		off += PAD8(nbytes);
	}
	if (m->tensors == NULL) {
		rv = PASCO_ENOMEM;
	}
	return rv;
}

/* The schedule of w into s; a count of boundaries or values that does
 * not fit leaves nboundaries -1, which the ps refuses, naming it. */
static void
get_schedule(pasco_lr_schedule *s, const Pasco__Wire__LrSchedule *w)
{
	*s = (pasco_lr_schedule){
	    .kind = (pasco_lr_schedule_kind) w->kind, .warmup_target = NAN};
	for (size_t i = 0; i < PASCI_LR_WIRE_FIELDS && i < w->n_params; i++) {
		char *at = (char *) s + pasci_lr_wire_fields[i].off;
		if (pasci_lr_wire_fields[i].is_bool) {
			*(bool *) at = w->params[i] != 0;
		} else {
			*(double *) at = w->params[i];
		}
	}
	if (w->n_boundaries == 0 && w->n_values == 0) {
		return;
	}
	if (w->n_boundaries > PASCO_LR_MAX_BOUNDARIES ||
	    w->n_values != w->n_boundaries + 1) {
		s->nboundaries = -1;
		return;
	}
	s->nboundaries = (int32_t) w->n_boundaries;
	memcpy(s->boundaries, w->boundaries, w->n_boundaries * sizeof(double));
	memcpy(s->values, w->values, w->n_values * sizeof(double));
}

/* The optimizer of w: its kind's defaults, then its hyperparameters in
 * the descriptor's field order (one past the last sent keeps its default;
 * params past the kind's fields are ignored). A kind of no optimizer's
 * keeps its number, for the ps to refuse naming it. */
static void
get_optimizer(pasco_optimizer *o, const Pasco__Wire__Optimizer *w)
{
	const pasci_opt_desc *d = pasci_opt_desc_of(w->kind);
	*o      = d != NULL ? d->defaults : (pasco_optimizer){0};
	o->kind = (pasco_optimizer_kind) w->kind;
	for (int i = 0;
	     d != NULL && i < d->nfields && (size_t) i < w->n_params; i++) {
		char *at = (char *) o + d->fields[i].off;
		if (d->fields[i].is_bool) {
			*(bool *) at = w->params[i] != 0;
		} else {
			*(double *) at = w->params[i];
		}
	}
	if (w->schedule != NULL) {
		get_schedule(&o->schedule, w->schedule);
	}
}

static void
get_sync(pasci_wire_sync *s, const Pasco__Wire__Sync *w)
{
	*s = (pasci_wire_sync){.mode = w->mode,
	    .replicas                = w->replicas,
	    .staleness               = w->staleness,
	    .version                 = w->version,
	    .dropped                 = w->dropped,
	    .done                    = w->done};
}

static bool
get_init(pasci_wire_init *in, const Pasco__Wire__Initializer *w)
{
	bool un = w->kind == PASCO_INIT_UNIFORM;
	if (w->n_full_shape > PASCO_MAX_RANK) {
		return false;
	}
	in->init = (pasco_initializer){.kind = (pasco_init_kind) w->kind,
	    .seed                            = w->seed,
	    .value                           = w->value,
	    .minval                          = un ? w->a : 0,
	    .maxval                          = un ? w->b : 0,
	    .mean                            = un ? 0 : w->a,
	    .stddev                          = un ? 0 : w->b,
	    .scale                           = w->scale,
	    .mode                            = (pasco_init_mode) w->mode,
	    .distribution = (pasco_init_distribution) w->distribution};
	in->constraint =
	    (pasco_constraint){.kind = (pasco_constraint_kind) w->constraint,
	        .max_value           = w->max_value,
	        .axis                = w->axis};
	in->full_rank = (int32_t) w->n_full_shape;
	if (w->n_full_shape > 0) {
		memcpy(in->full_shape, w->full_shape,
		    sizeof(int64_t) * w->n_full_shape);
	}
	in->row_offset = w->row_offset;
	return true;
}

/* Argument i of pb into a, its shards carved from *shards. */
static int
get_arg(pasci_wire_arg *a, const Pasco__Wire__Arg *w,
    pasci_wire_shard **shards, size_t i, char *err, size_t errlen)
{
	const Pasco__Wire__VariableRef *v = w->variable;
	a->kind                           = (pasci_arg_kind) w->kind;
	a->tensor                         = w->tensor;
	a->resource                       = w->resource;
	if (a->kind != PASCI_ARG_VARIABLE) {
		return PASCO_OK;
	}
	if (v == NULL || !spec_from_pb(&a->variable.spec, v->meta)) {
		pasci_fmt(err, errlen,
		    "argument %zu: a variable without a valid description", i);
		return PASCO_EPROTO;
	}
	a->variable.name    = v->name;
	a->variable.dynamic = v->dynamic;
	a->variable.nshards = v->n_shards;
	a->variable.shards  = *shards;
	for (size_t k = 0; k < v->n_shards; k++) {
		(*shards)[k] = (pasci_wire_shard){.name = v->shards[k]->name,
		    .ps_task = v->shards[k]->ps_task,
		    .offset  = v->shards[k]->offset,
		    .rows    = v->shards[k]->rows};
	}
	*shards += v->n_shards;
	if (v->sync != NULL) {
		get_sync(&a->variable.sync, v->sync);
	}
	return PASCO_OK;
}

/* The nested parts of a header: one block after the header itself. */
typedef struct header_block {
	pasci_wire_header  h;
	pasci_wire_init    init;
	pasci_wire_spec    spec;
	pasco_optimizer    opt;
	pasci_wire_sync    sync;
	pasci_wire_dynamic dynamic;
} header_block;

static void
get_fields(header_block *hb, const Pasco__Wire__Header *w)
{
	pasci_wire_header *h = &hb->h;
	h->method            = (pasci_method) w->method;
	h->status            = w->status;
	h->error             = w->error;
	h->name              = w->name;
	h->resource          = w->resource;
	h->learning_rate     = w->learning_rate;
	h->want_result       = w->want_result;
	h->worker_index      = w->worker_index;
	h->num_workers       = w->num_workers;
	h->closure_id        = w->closure_id;
	h->stale_incarnation = w->stale_incarnation;
	h->scale             = w->scale;
	h->json              = w->json;
	h->step              = w->step;
	h->repeat            = w->repeat;
	h->not_run           = w->not_run;
	h->sum_results       = w->sum_results;
	h->chief             = w->chief;
	h->chief_incarnation = w->chief_incarnation;
	h->nparts            = w->n_parts;
	h->find_only         = w->find_only;
	if (w->dynamic != NULL) {
		hb->dynamic = (pasci_wire_dynamic){.dim = w->dynamic->dim,
		    .min_count     = w->dynamic->min_count,
		    .evict_after   = w->dynamic->evict_after,
		    .max_rows      = w->dynamic->max_rows,
		    .default_zeros = w->dynamic->default_zeros};
		h->dynamic  = &hb->dynamic;
	}
	if (w->opt != NULL) {
		get_optimizer(&hb->opt, w->opt);
		h->opt = &hb->opt;
	}
	if (w->sync != NULL) {
		get_sync(&hb->sync, w->sync);
		h->sync = &hb->sync;
	}
}

/* The header of m from w: m->hdr, one allocation (from m->arena when it
 * has one), strings into w. */
static int
get_header(
    pasci_wire_msg *m, const Pasco__Wire__Header *w, char *err, size_t errlen)
{
	header_block     *hb;
	pasci_wire_shard *shards;
	size_t            nshards = 0;
	int               rv      = PASCO_OK;

	for (size_t i = 0; i < w->n_args; i++) {
		nshards += w->args[i]->variable != NULL
		               ? w->args[i]->variable->n_shards
		               : 0;
	}
	size_t bytes = sizeof(*hb) + w->n_args * sizeof(pasci_wire_arg) +
	               nshards * sizeof(pasci_wire_shard);
	if ((hb = m->arena != NULL ? pasci_wire_arena_calloc(m->arena, bytes)
	                           : pasci_calloc(1, bytes)) == NULL) {
		return PASCO_ENOMEM;
	}
	m->hdr = &hb->h;
	get_fields(hb, w);
	hb->h.nargs = w->n_args;
	hb->h.args  = (pasci_wire_arg *) (hb + 1);
	shards      = (pasci_wire_shard *) (hb->h.args + w->n_args);
	for (size_t i = 0; i < w->n_args && rv == 0; i++) {
		rv = get_arg(
		    &hb->h.args[i], w->args[i], &shards, i, err, errlen);
	}
	if (rv == 0 && w->init != NULL) {
		hb->h.init = &hb->init;
		rv = get_init(&hb->init, w->init) ? PASCO_OK : PASCO_EPROTO;
	}
	if (rv == 0 && w->spec != NULL) {
		hb->h.spec = &hb->spec;
		rv =
		    spec_from_pb(&hb->spec, w->spec) ? PASCO_OK : PASCO_EPROTO;
	}
	if (rv != 0 && err != NULL && err[0] == 0) {
		pasci_fmt(err, errlen, "the initializer or spec has rank > %d",
		    PASCO_MAX_RANK);
	}
	return rv;
}

/* A VAR_MULTI request's parts against its tensors: as many as allowed,
 * none with parts of its own, their tensors (each part's metas, in turn)
 * those of the message. */
static int
check_parts(const Pasco__Wire__Header *w, char *err, size_t errlen)
{
	size_t n = 0;
	if (w->n_parts > PASCI_WIRE_MAX_PARTS) {
		pasci_fmt(err, errlen, "%zu parts; at most %d", w->n_parts,
		    PASCI_WIRE_MAX_PARTS);
		return PASCO_EPROTO;
	}
	for (size_t k = 0; k < w->n_parts; k++) {
		const Pasco__Wire__Header *p = w->parts[k];
		if (p->n_parts > 0) {
			pasci_fmt(
			    err, errlen, "part %zu has parts of its own", k);
			return PASCO_EPROTO;
		}
		for (size_t i = 0; i < p->n_tensors; i++, n++) {
			const Pasco__Wire__TensorMeta *a = p->tensors[i];
			const Pasco__Wire__TensorMeta *b =
			    n < w->n_tensors ? w->tensors[n] : NULL;
			if (b == NULL || a->dtype != b->dtype ||
			    a->n_shape != b->n_shape ||
			    (a->n_shape > 0 &&
			        memcmp(a->shape, b->shape,
			            a->n_shape * sizeof(int64_t)) != 0)) {
				pasci_fmt(err, errlen,
				    "part %zu's tensor %zu is not the "
				    "message's tensor %zu",
				    k, i, n);
				return PASCO_EPROTO;
			}
		}
	}
	if (w->n_parts > 0 && n != w->n_tensors) {
		pasci_fmt(err, errlen,
		    "the parts have %zu tensors; the message %zu", n,
		    w->n_tensors);
		return PASCO_EPROTO;
	}
	return PASCO_OK;
}

/* The protobuf field number of Header.parts, the schema's one recursive
 * field (wire.proto). */
#define PARTS_FIELD 28

/* A varint at *p (below end) into *v, *p past it; false if it runs past
 * end or over 10 bytes. */
static bool
scan_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 70; shift += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t) (b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			return true;
		}
	}
	return false;
}

/* Whether the Header encoded in [p, end) nests parts at most `depth`
 * levels down: protobuf-c unpacks a submessage by recursion, without a
 * bound, so a header that nests parts in parts thousands of times (a
 * few dozen kilobytes) would overflow the stack before check_parts could
 * refuse it. Only the nesting is judged: bytes that do not parse are
 * left to the unpacker to refuse. */
static bool
parts_nest_within(const uint8_t *p, const uint8_t *end, int depth)
{
	uint64_t key, len;
	while (p < end && scan_varint(&p, end, &key)) {
		switch (key & 7) {
		case 0: /* varint */
			if (!scan_varint(&p, end, &len)) {
				return true;
			}
			break;
		case 1: /* 64-bit */
			p += (size_t) (end - p) < 8 ? (size_t) (end - p) : 8;
			break;
		case 5: /* 32-bit */
			p += (size_t) (end - p) < 4 ? (size_t) (end - p) : 4;
			break;
		case 2: /* length-delimited */
			if (!scan_varint(&p, end, &len) ||
			    len > (uint64_t) (end - p)) {
				return true;
			}
			if ((key >> 3) == PARTS_FIELD &&
			    (depth == 0 ||
			        !parts_nest_within(p, p + len, depth - 1))) {
				return false;
			}
			p += len;
			break;
		default: /* groups: the unpacker refuses them */
			return true;
		}
	}
	return true;
}

/* Decodes the message body [body, body + len) whose tensors may view it
 * through st (held by each view). */
static int
decode_buffer(pasci_wire_msg *m, uint8_t *body, size_t len, pasco_storage *st,
    char *err, size_t errlen)
{
	Pasco__Wire__Header *pb;
	size_t               hlen;
	int                  rv;

	memset(m, 0, sizeof(*m));
	if (len < PASCI_WIRE_PREFIX) {
		pasci_fmt(err, errlen,
		    "message of %zu bytes is shorter than "
		    "the %d-byte prefix",
		    len, PASCI_WIRE_PREFIX);
		return PASCO_EPROTO;
	}
	m->incarnation = pasci_get_be(body, 8);
	hlen           = (size_t) pasci_get_be(body + 8, 4);
	if (hlen <= len - PASCI_WIRE_PREFIX &&
	    !parts_nest_within(body + PASCI_WIRE_PREFIX,
	        body + PASCI_WIRE_PREFIX + hlen, 2)) {
		pasci_fmt(err, errlen,
		    "message header (%zu bytes) nests parts in parts: a "
		    "VAR_MULTI's parts have none of their own",
		    hlen);
		return PASCO_EPROTO;
	}
	if ((m->arena = pasci_wire_arena_take()) == NULL) {
		pasci_fmt(err, errlen, "out of memory for a message header");
		return PASCO_ENOMEM;
	}
	if (hlen > len - PASCI_WIRE_PREFIX ||
	    (pb = pasco__wire__header__unpack(
	         pasci_wire_arena_allocator(m->arena), hlen,
	         body + PASCI_WIRE_PREFIX)) == NULL) {
		pasci_wire_arena_give(m->arena);
		m->arena = NULL;
		pasci_fmt(err, errlen,
		    "message header (%zu bytes) does not "
		    "parse",
		    hlen);
		return PASCO_EPROTO;
	}
	m->priv = pb;
	if (err != NULL && errlen > 0) {
		err[0] = 0;
	}
	rv = check_parts(pb, err, errlen);
	if (rv == 0) {
		rv = get_header(m, pb, err, errlen);
	}
	if (rv == 0) {
		rv = decode_tensors(m, pb, body, len, st,
		    PAD8(PASCI_WIRE_PREFIX + hlen), err, errlen);
	}
	if (rv != 0) {
		pasci_wire_msg_fini(m);
		return rv == PASCO_ENOMEM ? rv : PASCO_EPROTO;
	}
	return PASCO_OK;
}

int
pasci_wire_decode(pasci_wire_msg *m, nng_msg *msg, char *err, size_t errlen)
{
	pasco_storage *st = pasci_storage_new(msg_free, msg);
	int            rv;
	if (st == NULL) {
		memset(m, 0, sizeof(*m));
		nng_msg_free(msg);
		return PASCO_ENOMEM;
	}
	rv = decode_buffer(
	    m, nng_msg_body(msg), nng_msg_len(msg), st, err, errlen);
	pasci_storage_release(st); /* the views hold what they need */
	return rv;
}

int
pasci_wire_decode_owned(pasci_wire_msg *m, void *body, size_t len,
    void (*free_fn)(void *), char *err, size_t errlen)
{
	pasco_storage *st = pasci_storage_new(free_fn, body);
	int            rv;
	if (st == NULL) {
		memset(m, 0, sizeof(*m));
		free_fn(body);
		return PASCO_ENOMEM;
	}
	rv = decode_buffer(m, body, len, st, err, errlen);
	pasci_storage_release(st);
	return rv;
}

int
pasci_wire_decode_part(
    pasci_wire_msg *m, const pasco_tensor *part, char *err, size_t errlen)
{
	if (part->dtype != PASCO_U8 || part->rank != 1) {
		memset(m, 0, sizeof(*m));
		pasci_fmt(err, errlen, "a part is not a u8 vector");
		return PASCO_EPROTO;
	}
	return decode_buffer(
	    m, part->data, part->nbytes, part->storage, err, errlen);
}

int
pasci_wire_msg_part(const pasci_wire_msg *m, size_t k, pasci_wire_msg *out,
    char *err, size_t errlen)
{
	const Pasco__Wire__Header *w     = m->priv;
	size_t                     first = 0;
	int                        rv;
	memset(out, 0, sizeof(*out));
	if (w == NULL || k >= w->n_parts) {
		pasci_fmt(err, errlen, "no part %zu", k);
		return PASCO_EPROTO;
	}
	for (size_t j = 0; j < k; j++) {
		first += w->parts[j]->n_tensors;
	}
	out->incarnation = m->incarnation;
	if ((rv = get_header(out, w->parts[k], err, errlen)) == 0 &&
	    (out->tensors = pasci_calloc(
	         w->parts[k]->n_tensors + 1, sizeof(*out->tensors))) == NULL) {
		rv = PASCO_ENOMEM;
	}
	for (size_t i = 0; rv == 0 && i < w->parts[k]->n_tensors; i++) {
		out->tensors[out->ntensors++] =
		    pasco_tensor_hold(m->tensors[first + i]);
	}
	pasci_metric_count(
	    PASCI_MF_PARTS, rv == 0 ? (int) out->hdr->method : -1);
	if (rv != 0) {
		pasci_wire_msg_fini(out);
	}
	return rv;
}

int
pasci_wire_msg_view(nng_msg *msg, pasco_tensor **out)
{
	pasco_storage *st = pasci_storage_new(msg_free, msg);
	int64_t        n  = (int64_t) nng_msg_len(msg);
	int            rv;
	*out = NULL;
	if (st == NULL) {
		nng_msg_free(msg);
		return PASCO_ENOMEM;
	}
	rv = pasci_tensor_view(out, PASCO_U8, 1, &n, nng_msg_body(msg), st);
	pasci_storage_release(st);
	return rv;
}

void
pasci_wire_msg_fini(pasci_wire_msg *m)
{
	if (m->arena != NULL) { /* priv and hdr with it */
		pasci_wire_arena_give(m->arena);
	} else {
		free((void *) m->hdr); /* the header_block it starts */
	}
	for (size_t i = 0; i < m->ntensors; i++) {
		pasco_tensor_release(m->tensors[i]);
	}
	free(m->tensors);
	memset(m, 0, sizeof(*m));
}

/* Rebuilds the value rooted at node *pos; advances *pos. */
static pasco_value *
get_node(const pasci_wire_msg *m, const Pasco__Wire__Header *pb, size_t *pos,
    int depth, int *rv)
{
	const Pasco__Wire__Node *n;
	pasco_value            **items = NULL, *out = NULL;
	const char             **keys = NULL;

	if (*pos >= pb->n_result || depth > 64) {
		*rv = PASCO_EPROTO;
		return NULL;
	}
	n = pb->result[(*pos)++];
	switch (n->kind) {
	case PASCO__WIRE__NODE__KIND__NONE:
		return pasco_value_none();
	case PASCO__WIRE__NODE__KIND__TENSOR:
		if (n->tensor >= m->ntensors) {
			*rv = PASCO_EPROTO;
			return NULL;
		}
		return pasco_value_tensor(
		    pasco_tensor_hold(m->tensors[n->tensor]));
	case PASCO__WIRE__NODE__KIND__LIST:
	case PASCO__WIRE__NODE__KIND__DICT:
		break;
	default:
		*rv = PASCO_EPROTO;
		return NULL;
	}
	if (n->count > pb->n_result - *pos) {
		*rv = PASCO_EPROTO;
		return NULL;
	}
	items = pasci_calloc(n->count + 1, sizeof(*items));
	keys  = pasci_calloc(n->count + 1, sizeof(*keys));
	if (items == NULL || keys == NULL) {
		free(items);
		free(keys);
		*rv = PASCO_ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < n->count && *rv == 0; i++) {
		/* count was checked against the nodes left, but an item
		 * before this one may have taken several */
		if (*pos >= pb->n_result) {
			*rv = PASCO_EPROTO;
			break;
		}
		keys[i]  = pb->result[*pos]->key;
		items[i] = get_node(m, pb, pos, depth + 1, rv);
	}
	if (*rv != 0) {
		for (uint32_t i = 0; i < n->count; i++) {
			pasco_value_free(items[i]);
		}
	} else if (n->kind == PASCO__WIRE__NODE__KIND__LIST) {
		out = pasco_value_list_of(n->count, items);
	} else {
		out = pasci_value_dict_of(n->count, keys, items);
	}
	free(items);
	free(keys);
	if (out == NULL && *rv == 0) {
		*rv = PASCO_EPROTO;
	}
	return out;
}

int
pasci_wire_get_value(
    const pasci_wire_msg *m, pasco_value **out, char *err, size_t errlen)
{
	const Pasco__Wire__Header *pb  = m->priv;
	size_t                     pos = 0;
	int                        rv  = 0;

	if (pb->n_result == 0) {
		*out = pasco_value_none();
		return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
	}
	*out = get_node(m, pb, &pos, 0, &rv);
	if (rv == 0 && pos != pb->n_result) {
		pasco_value_free(*out);
		*out = NULL;
		rv   = PASCO_EPROTO;
	}
	if (rv != 0) {
		pasci_fmt(err, errlen,
		    "the result structure in the message "
		    "is malformed");
	}
	return rv;
}

/* The request kinds: pasci_method tied to the schema's Method number by
 * number at compile time, with each kind's name in the schema and the
 * server that answers it. A pair that disagrees, or a kind of either enum
 * missing from METHODS, does not compile; tests/net/test_wire.c checks
 * that the schema has no value METHODS lacks. See docs/ARCHITECTURE.md,
 * "Adding a request kind". */
/* X(ours, the schema's, who answers it) for every number either enum
 * has. */
#define METHODS(X)                                                            \
	X(NONE, METHOD_NONE, NOBODY)                                          \
	X(HELLO, HELLO, RPC)                                                  \
	X(VAR_CREATE, VAR_CREATE, PS)                                         \
	X(VAR_READ, VAR_READ, PS)                                             \
	X(VAR_ASSIGN, VAR_ASSIGN, PS)                                         \
	X(VAR_ASSIGN_ADD, VAR_ASSIGN_ADD, PS)                                 \
	X(RUN, RUN, WORKER)                                                   \
	X(RESOURCE_CREATE, RESOURCE_CREATE, WORKER)                           \
	X(RESOURCE_RELEASE, RESOURCE_RELEASE, WORKER)                         \
	X(VAR_GATHER, VAR_GATHER, PS)                                         \
	X(VAR_SCATTER_ADD, VAR_SCATTER_ADD, PS)                               \
	X(VAR_APPLY, VAR_APPLY, PS)                                           \
	X(VAR_APPLY_SPARSE, VAR_APPLY_SPARSE, PS)                             \
	X(CKPT_SAVE, CKPT_SAVE, PS)                                           \
	X(VAR_SET_SLOTS, VAR_SET_SLOTS, PS)                                   \
	X(RUN_BATCH, RUN_BATCH, WORKER)                                       \
	X(SHUTDOWN, SHUTDOWN, RPC)                                            \
	X(AUTH, AUTH, RPC)                                                    \
	X(VAR_FETCH_ADD, VAR_FETCH_ADD, PS)                                   \
	X(SYNC_FLUSH, SYNC_FLUSH, PS)                                         \
	X(RESOURCE_READ, RESOURCE_READ, WORKER)                               \
	X(CANCEL, CANCEL, WORKER)                                             \
	X(VAR_MULTI, VAR_MULTI, PS)                                           \
	X(DYN_IMPORT, DYN_IMPORT, PS)                                         \
	X(DYN_STATS, DYN_STATS, PS)

/* The two enums agree, kind by kind. */
#define TIE(ours, wire, by)                                                   \
	_Static_assert(                                                       \
	    (int) PASCI_METHOD_##ours == (int) PASCO__WIRE__METHOD__##wire,   \
	    "pasci_method " #ours " is not the schema's " #wire);
METHODS(TIE)

typedef struct method_desc {
	const char     *name; /* the schema's: "VAR_CREATE" */
	pasci_served_by by;
} method_desc;

#define ROW(ours, wire, by)                                                   \
	[PASCI_METHOD_##ours] = {#wire, PASCI_SERVED_BY_##by},
static const method_desc methods[] = {METHODS(ROW)};

_Static_assert(sizeof(methods) / sizeof(methods[0]) == PASCI_METHOD_COUNT,
    "one row per request kind (PASCI_METHOD_COUNT, wire.h)");

const char *
pasci_method_name(int m)
{
	return m >= 0 && m < PASCI_METHOD_COUNT ? methods[m].name : NULL;
}

pasci_served_by
pasci_method_served_by(int m)
{
	return m >= 0 && m < PASCI_METHOD_COUNT && methods[m].name != NULL
	           ? methods[m].by
	           : PASCI_SERVED_BY_NOBODY;
}
