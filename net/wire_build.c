/*
 * Wire codec, the building half (see wire.h; decoding is in wire.c): a
 * builder collects a header, tensors (held by reference), arguments and a
 * result; encoding turns them into the protobuf Header of wire.proto in one
 * scratch block and copies tensor bytes into the nng message once, which is
 * what the transport requires. Bulk writers take the head alone and send
 * the tensors from their own memory. Stateless; thread-safe.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lr_schedule.h"
#include "optimizer_desc.h"
#include "tensor_impl.h"
#include "util.h"
#include "value_impl.h"
#include "wire.h"
#include "wire.pb-c.h"

#define PAD8(n) PASCI_PAD8(n)

/* Node kinds of a result, numbered as the schema's Node.Kind. */
enum { NODE_NONE = 0, NODE_TENSOR = 1, NODE_LIST = 2, NODE_DICT = 3 };

/* One node of a result being built, in pre-order. */
struct pasci_wire_node {
	int         kind;
	uint32_t    count; /* LIST, DICT: children that follow */
	const char *key;   /* a DICT child's key */
	uint32_t    tensor;
};

void
pasci_wire_builder_init(pasci_wire_builder *b, pasci_method m)
{
	memset(b, 0, sizeof(*b));
	b->hdr.method = m;
}

void
pasci_wire_builder_fini(pasci_wire_builder *b)
{
	for (size_t i = 0; i < b->ntensors; i++) {
		pasco_tensor_release(b->tensors[i]);
		pasco_tensor_release(
		    (pasco_tensor *) pasci_wire_tensor_tail(b, i));
	}
	free(b->tensors);
	free(b->tails);
	free(b->joined);
	free(b->nodes);
	free(b->hdr.args);
	for (size_t i = 0; i < b->nallocs; i++) {
		free(b->allocs[i]);
	}
	free(b->allocs);
	free(b->parts);
	memset(b, 0, sizeof(*b));
}

/* Grows *arr (of elem-sized items) to hold one more; false on no memory. */
static bool
grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	void  *p;
	size_t want;
	if (n < *cap) {
		return true;
	}
	want = *cap == 0 ? 8 : *cap * 2;
	if ((p = realloc(*arr, want * elem)) == NULL) {
		return false;
	}
	*arr = p;
	*cap = want;
	return true;
}

/* Gives b->tails and b->joined as many entries as b->tensors can hold
 * (the new ones plain). */
static bool
grow_tails(pasci_wire_builder *b)
{
	pasco_tensor **t;
	int64_t       *j;
	if (b->tail_cap >= b->tensor_cap) {
		return true;
	}
	if ((t = realloc(b->tails, b->tensor_cap * sizeof(*t))) == NULL) {
		return false;
	}
	b->tails = t;
	if ((j = realloc(b->joined, b->tensor_cap * sizeof(*j))) == NULL) {
		return false;
	}
	b->joined = j;
	for (size_t k = b->tail_cap; k < b->tensor_cap; k++) {
		b->tails[k]  = NULL;
		b->joined[k] = 0;
	}
	b->tail_cap = b->tensor_cap;
	return true;
}

void
pasci_wire_add_tensor(
    pasci_wire_builder *b, const pasco_tensor *t, uint32_t *index)
{
	if (!grow((void **) &b->tensors, &b->tensor_cap, b->ntensors,
	        sizeof(*b->tensors))) {
		b->oom = true;
		return;
	}
	if (index != NULL) {
		*index = (uint32_t) b->ntensors;
	}
	if (b->tails != NULL && !grow_tails(b)) {
		b->oom = true;
		return;
	}
	b->tensors[b->ntensors++] = pasco_tensor_hold((pasco_tensor *) t);
}

void
pasci_wire_add_joined(
    pasci_wire_builder *b, const pasco_tensor *head, const pasco_tensor *tail)
{
	size_t i = b->ntensors;
	if (head->nbytes % 8 != 0) {
		b->oom = true; /* a misuse, refused by the encoder */
		return;
	}
	pasci_wire_add_tensor(b, head, NULL);
	if (b->oom || !grow_tails(b)) {
		b->oom = true;
		return;
	}
	b->tails[i]  = pasco_tensor_hold((pasco_tensor *) tail);
	b->joined[i] = (int64_t) (head->nbytes + PAD8(tail->nbytes));
}

size_t
pasci_wire_tensor_bytes(const pasci_wire_builder *b, size_t i)
{
	return pasci_wire_tensor_tail(b, i) != NULL ? (size_t) b->joined[i]
	                                            : b->tensors[i]->nbytes;
}

const pasco_tensor *
pasci_wire_tensor_tail(const pasci_wire_builder *b, size_t i)
{
	return b->tails != NULL && i < b->tail_cap ? b->tails[i] : NULL;
}

void
pasci_wire_add_part(pasci_wire_builder *b, pasci_wire_builder *part)
{
	if (part->hdr.nparts > 0 || part->nnodes > 0 || part->hdr.nargs > 0 ||
	    !grow((void **) &b->parts, &b->part_cap, b->hdr.nparts,
	        sizeof(*b->parts))) {
		b->oom = true; /* a misuse, found by the encoder */
		return;
	}
	b->parts[b->hdr.nparts++] = part;
	for (size_t i = 0; i < part->ntensors; i++) {
		pasci_wire_add_tensor(b, part->tensors[i], NULL);
	}
}

static struct pasci_wire_node *
add_node(pasci_wire_builder *b)
{
	struct pasci_wire_node *n;
	if (!grow((void **) &b->nodes, &b->node_cap, b->nnodes,
	        sizeof(*b->nodes))) {
		b->oom = true;
		return NULL;
	}
	n = &b->nodes[b->nnodes++];
	memset(n, 0, sizeof(*n));
	return n;
}

static void
add_value_keyed(pasci_wire_builder *b, const pasco_value *v, const char *key)
{
	struct pasci_wire_node *n = add_node(b);
	if (n == NULL) {
		return;
	}
	n->key = key;
	switch (v->kind) {
	case PASCO_VALUE_NONE:
		n->kind = NODE_NONE;
		break;
	case PASCO_VALUE_TENSOR:
		n->kind = NODE_TENSOR;
		pasci_wire_add_tensor(b, v->tensor, &n->tensor);
		break;
	case PASCO_VALUE_LIST:
	case PASCO_VALUE_DICT:
		n->kind  = v->kind == PASCO_VALUE_LIST ? NODE_LIST : NODE_DICT;
		n->count = (uint32_t) v->n;
		for (size_t i = 0; i < v->n; i++) {
			add_value_keyed(b, v->items[i],
			    v->keys != NULL ? v->keys[i] : NULL);
		}
		break;
	}
}

void
pasci_wire_add_value(pasci_wire_builder *b, const pasco_value *v)
{
	if (v != NULL) {
		add_value_keyed(b, v, NULL);
	}
}

static pasci_wire_arg *
add_arg(pasci_wire_builder *b, pasci_arg_kind kind)
{
	pasci_wire_arg *a;
	if (!grow((void **) &b->hdr.args, &b->arg_cap, b->hdr.nargs,
	        sizeof(*b->hdr.args))) {
		b->oom = true;
		return NULL;
	}
	a = &b->hdr.args[b->hdr.nargs++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	return a;
}

void
pasci_wire_add_arg_tensor(pasci_wire_builder *b, const pasco_tensor *t)
{
	pasci_wire_arg *a = add_arg(b, PASCI_ARG_TENSOR);
	if (a != NULL) {
		pasci_wire_add_tensor(b, t, &a->tensor);
	}
}

/* calloc, freed with the builder. */
static void *
builder_alloc(pasci_wire_builder *b, size_t size)
{
	void *p;
	if (!grow((void **) &b->allocs, &b->alloc_cap, b->nallocs,
	        sizeof(*b->allocs)) ||
	    (p = pasci_calloc(1, size)) == NULL) {
		b->oom = true;
		return NULL;
	}
	b->allocs[b->nallocs++] = p;
	return p;
}

void
pasci_wire_add_arg_variable(pasci_wire_builder *b, const char *name,
    pasco_dtype dtype, int32_t rank, const int64_t *shape, int32_t nshards)
{
	pasci_wire_arg *a = add_arg(b, PASCI_ARG_VARIABLE);
	if (a == NULL) {
		return;
	}
	if (rank < 0 || rank > PASCO_MAX_RANK || nshards < 0) {
		b->oom = true; /* a handle never has these: refuse to encode */
		return;
	}
	a->variable.shards =
	    builder_alloc(b, sizeof(pasci_wire_shard) * (size_t) nshards + 1);
	if (a->variable.shards == NULL) {
		return;
	}
	a->variable.name       = name;
	a->variable.spec.dtype = dtype;
	a->variable.spec.rank  = rank;
	memcpy(a->variable.spec.shape, shape, sizeof(int64_t) * (size_t) rank);
	a->variable.nshards = (size_t) nshards;
}

void
pasci_wire_set_arg_shard(pasci_wire_builder *b, int32_t k, const char *name,
    int32_t ps_task, int64_t offset, int64_t rows)
{
	pasci_wire_var *v;
	if (b->oom || b->hdr.nargs == 0) {
		return;
	}
	v = &b->hdr.args[b->hdr.nargs - 1].variable;
	if (k < 0 || (size_t) k >= v->nshards) {
		return;
	}
	v->shards[k] = (pasci_wire_shard){
	    .name = name, .ps_task = ps_task, .offset = offset, .rows = rows};
}

void
pasci_wire_set_arg_sync(pasci_wire_builder *b, const pasci_wire_sync *sync)
{
	if (b->oom || b->hdr.nargs == 0 ||
	    b->hdr.args[b->hdr.nargs - 1].kind != PASCI_ARG_VARIABLE) {
		return;
	}
	b->hdr.args[b->hdr.nargs - 1].variable.sync = *sync;
}

void
pasci_wire_add_arg_resource(pasci_wire_builder *b, uint64_t resource)
{
	pasci_wire_arg *a = add_arg(b, PASCI_ARG_RESOURCE);
	if (a != NULL) {
		a->resource = resource;
	}
}

/* The protobuf Header of a builder, and the memory its repeated and
 * nested fields live in (one block; see pb_block_size). */
typedef struct pb_header {
	Pasco__Wire__Header      h;
	Pasco__Wire__Optimizer   opt;
	double                   opt_params[PASCI_OPT_MAX_FIELDS];
	Pasco__Wire__LrSchedule  sched;
	double                   sched_params[PASCI_LR_WIRE_FIELDS];
	Pasco__Wire__Initializer init;
	Pasco__Wire__TensorMeta  spec;
	Pasco__Wire__Sync        sync;
	Pasco__Wire__Dynamic     dynamic;
	void                    *block;
	struct pb_header        *parts; /* VAR_MULTI: one per part */
	size_t                   nparts;
} pb_header;

static char *
pb_str(const char *s)
{
	return (char *) (s != NULL ? s : "");
}

static size_t
pb_block_size(const pasci_wire_builder *b, size_t *nshards)
{
	const pasci_wire_header *h = &b->hdr;
	*nshards                   = 0;
	for (size_t i = 0; i < h->nargs; i++) {
		if (h->args[i].kind == PASCI_ARG_VARIABLE) {
			*nshards += h->args[i].variable.nshards;
		}
	}
	return b->ntensors *
	           (sizeof(Pasco__Wire__TensorMeta) + sizeof(void *)) +
	       h->nargs * (sizeof(Pasco__Wire__Arg) + sizeof(void *) +
	                      sizeof(Pasco__Wire__VariableRef) +
	                      sizeof(Pasco__Wire__TensorMeta) +
	                      sizeof(Pasco__Wire__Sync)) +
	       *nshards * (sizeof(Pasco__Wire__Shard) + sizeof(void *)) +
	       b->nnodes * (sizeof(Pasco__Wire__Node) + sizeof(void *)) + 8;
}

/* Carves n items of size from *p. */
static void *
carve(char **p, size_t n, size_t size)
{
	void *out = *p;
	*p += n * size;
	return out;
}

static void
pb_meta(Pasco__Wire__TensorMeta *m, pasco_dtype dtype, int32_t rank,
    const int64_t *shape)
{
	pasco__wire__tensor_meta__init(m);
	m->dtype   = (Pasco__Wire__Dtype) dtype;
	m->n_shape = (size_t) rank;
	m->shape   = (int64_t *) shape;
}

static void
pb_tensors(pb_header *pb, const pasci_wire_builder *b, char **p)
{
	Pasco__Wire__TensorMeta *metas = carve(p, b->ntensors, sizeof(*metas));
	Pasco__Wire__TensorMeta **ptrs = carve(p, b->ntensors, sizeof(*ptrs));
	for (size_t i = 0; i < b->ntensors; i++) {
		if (pasci_wire_tensor_tail(b, i) != NULL) {
			pb_meta(&metas[i], PASCO_U8, 1, &b->joined[i]);
		} else {
			pb_meta(&metas[i], b->tensors[i]->dtype,
			    b->tensors[i]->rank, b->tensors[i]->shape);
		}
		ptrs[i] = &metas[i];
	}
	pb->h.n_tensors = b->ntensors;
	pb->h.tensors   = ptrs;
}

static void
pb_set_sync(Pasco__Wire__Sync *w, const pasci_wire_sync *s)
{
	pasco__wire__sync__init(w);
	w->mode      = s->mode;
	w->replicas  = s->replicas;
	w->staleness = s->staleness;
	w->version   = s->version;
	w->dropped   = s->dropped;
	w->done      = s->done;
}

static void
pb_variable(Pasco__Wire__VariableRef *ref, Pasco__Wire__TensorMeta *meta,
    Pasco__Wire__Sync *sync, const pasci_wire_var *v, char **p)
{
	Pasco__Wire__Shard  *shards = carve(p, v->nshards, sizeof(*shards));
	Pasco__Wire__Shard **ptrs   = carve(p, v->nshards, sizeof(*ptrs));
	pasco__wire__variable_ref__init(ref);
	pb_meta(meta, v->spec.dtype, v->spec.rank, v->spec.shape);
	ref->name    = pb_str(v->name);
	ref->meta    = meta;
	ref->dynamic = v->dynamic;
	for (size_t k = 0; k < v->nshards; k++) {
		pasco__wire__shard__init(&shards[k]);
		shards[k].name    = pb_str(v->shards[k].name);
		shards[k].ps_task = v->shards[k].ps_task;
		shards[k].offset  = v->shards[k].offset;
		shards[k].rows    = v->shards[k].rows;
		ptrs[k]           = &shards[k];
	}
	ref->n_shards = v->nshards;
	ref->shards   = ptrs;
	if (v->sync.mode != 0) { /* ASP, the default, is left out */
		pb_set_sync(sync, &v->sync);
		ref->sync = sync;
	}
}

static void
pb_args(pb_header *pb, const pasci_wire_builder *b, char **p)
{
	size_t                    n    = b->hdr.nargs;
	Pasco__Wire__Arg         *args = carve(p, n, sizeof(*args));
	Pasco__Wire__Arg        **ptrs = carve(p, n, sizeof(*ptrs));
	Pasco__Wire__VariableRef *refs = carve(p, n, sizeof(*refs));
	Pasco__Wire__TensorMeta  *meta = carve(p, n, sizeof(*meta));
	Pasco__Wire__Sync        *sync = carve(p, n, sizeof(*sync));
	for (size_t i = 0; i < n; i++) {
		const pasci_wire_arg *a = &b->hdr.args[i];
		pasco__wire__arg__init(&args[i]);
		args[i].kind     = (Pasco__Wire__Arg__Kind) a->kind;
		args[i].tensor   = a->tensor;
		args[i].resource = a->resource;
		if (a->kind == PASCI_ARG_VARIABLE) {
			pb_variable(
			    &refs[i], &meta[i], &sync[i], &a->variable, p);
			args[i].variable = &refs[i];
		}
		ptrs[i] = &args[i];
	}
	pb->h.n_args = n;
	pb->h.args   = ptrs;
}

static void
pb_nodes(pb_header *pb, const pasci_wire_builder *b, char **p)
{
	Pasco__Wire__Node  *nodes = carve(p, b->nnodes, sizeof(*nodes));
	Pasco__Wire__Node **ptrs  = carve(p, b->nnodes, sizeof(*ptrs));
	for (size_t i = 0; i < b->nnodes; i++) {
		pasco__wire__node__init(&nodes[i]);
		nodes[i].kind   = (Pasco__Wire__Node__Kind) b->nodes[i].kind;
		nodes[i].count  = b->nodes[i].count;
		nodes[i].key    = pb_str(b->nodes[i].key);
		nodes[i].tensor = b->nodes[i].tensor;
		ptrs[i]         = &nodes[i];
	}
	pb->h.n_result = b->nnodes;
	pb->h.result   = ptrs;
}

/* o's schedule, if any, into w->schedule (with its storage in sched and
 * sp, PASCI_LR_WIRE_FIELDS long; the boundaries and values are o's). */
static void
pb_set_schedule(Pasco__Wire__Optimizer *w, Pasco__Wire__LrSchedule *sched,
    double *sp, const pasco_optimizer *o)
{
	const pasco_lr_schedule *s = &o->schedule;
	if (s->kind == PASCO_LR_CONSTANT) {
		return;
	}
	pasco__wire__lr_schedule__init(sched);
	sched->kind = (int32_t) s->kind;
	for (int i = 0; i < PASCI_LR_WIRE_FIELDS; i++) {
		const char *at =
		    (const char *) s + pasci_lr_wire_fields[i].off;
		sp[i] = pasci_lr_wire_fields[i].is_bool ? *(const bool *) at
		                                        : *(const double *) at;
	}
	sched->n_params = PASCI_LR_WIRE_FIELDS;
	sched->params   = sp;
	if (s->nboundaries > 0 && s->nboundaries <= PASCO_LR_MAX_BOUNDARIES) {
		sched->n_boundaries = (size_t) s->nboundaries;
		sched->boundaries   = (double *) s->boundaries;
		sched->n_values     = (size_t) s->nboundaries + 1;
		sched->values       = (double *) s->values;
	}
	w->schedule = sched;
}

/* o's hyperparameters, in its descriptor's field order, into params
 * (PASCI_OPT_MAX_FIELDS long): the wire names no kind's fields. */
static void
pb_set_optimizer(
    Pasco__Wire__Optimizer *w, double *params, const pasco_optimizer *o)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	pasco__wire__optimizer__init(w);
	w->kind = (int32_t) o->kind;
	for (int i = 0; d != NULL && i < d->nfields; i++) {
		const char *at = (const char *) o + d->fields[i].off;
		params[i]      = d->fields[i].is_bool ? *(const bool *) at
		                                      : *(const double *) at;
	}
	w->n_params = d != NULL ? (size_t) d->nfields : 0;
	w->params   = params;
}

static void
pb_set_init(Pasco__Wire__Initializer *w, const pasci_wire_init *in)
{
	const pasco_initializer *i  = &in->init;
	bool                     un = i->kind == PASCO_INIT_UNIFORM;
	pasco__wire__initializer__init(w);
	w->kind         = (int32_t) i->kind;
	w->seed         = i->seed;
	w->value        = i->value;
	w->a            = un ? i->minval : i->mean;
	w->b            = un ? i->maxval : i->stddev;
	w->n_full_shape = (size_t) in->full_rank;
	w->full_shape   = (int64_t *) in->full_shape;
	w->row_offset   = in->row_offset;
	w->scale        = i->scale;
	w->mode         = (int32_t) i->mode;
	w->distribution = (int32_t) i->distribution;
	w->constraint   = (int32_t) in->constraint.kind;
	w->max_value    = in->constraint.max_value;
	w->axis         = in->constraint.axis;
}

/* The scalar and optional fields of the header. */
static void
pb_fields(pb_header *pb, const pasci_wire_header *h)
{
	Pasco__Wire__Header *w = &pb->h;
	pasco__wire__header__init(w);
	w->method            = (Pasco__Wire__Method) h->method;
	w->status            = h->status;
	w->error             = pb_str(h->error);
	w->name              = pb_str(h->name);
	w->resource          = h->resource;
	w->learning_rate     = h->learning_rate;
	w->want_result       = h->want_result;
	w->worker_index      = h->worker_index;
	w->num_workers       = h->num_workers;
	w->closure_id        = h->closure_id;
	w->stale_incarnation = h->stale_incarnation;
	w->scale             = h->scale;
	w->json              = pb_str(h->json);
	w->step              = h->step;
	w->repeat            = h->repeat;
	w->not_run           = h->not_run;
	w->sum_results       = h->sum_results;
	w->chief             = pb_str(h->chief);
	w->chief_incarnation = h->chief_incarnation;
	w->find_only         = h->find_only;
	if (h->dynamic != NULL) {
		pasco__wire__dynamic__init(&pb->dynamic);
		pb->dynamic.dim           = h->dynamic->dim;
		pb->dynamic.min_count     = h->dynamic->min_count;
		pb->dynamic.evict_after   = h->dynamic->evict_after;
		pb->dynamic.max_rows      = h->dynamic->max_rows;
		pb->dynamic.default_zeros = h->dynamic->default_zeros;
		w->dynamic                = &pb->dynamic;
	}
	if (h->opt != NULL) {
		pb_set_optimizer(&pb->opt, pb->opt_params, h->opt);
		pb_set_schedule(
		    &pb->opt, &pb->sched, pb->sched_params, h->opt);
		w->opt = &pb->opt;
	}
	if (h->sync != NULL) {
		pb_set_sync(&pb->sync, h->sync);
		w->sync = &pb->sync;
	}
	if (h->init != NULL) {
		pb_set_init(&pb->init, h->init);
		w->init = &pb->init;
	}
	if (h->spec != NULL) {
		pb_meta(
		    &pb->spec, h->spec->dtype, h->spec->rank, h->spec->shape);
		w->spec = &pb->spec;
	}
}

static void
pb_header_fini(pb_header *pb)
{
	for (size_t k = 0; k < pb->nparts; k++) {
		pb_header_fini(&pb->parts[k]);
	}
	free(pb->parts);
	free(pb->block);
}

/* Fills pb from b, but for its sizes (pb_header_fini frees it). */
static int
pb_build(pasci_wire_builder *b, pb_header *pb)
{
	size_t nshards;
	char  *p;
	int    rv = PASCO_OK;
	memset(pb, 0, sizeof(*pb));
	if (b->oom) {
		return PASCO_ENOMEM;
	}
	if ((pb->block = malloc(pb_block_size(b, &nshards) +
	                        b->hdr.nparts * sizeof(void *))) == NULL ||
	    (b->hdr.nparts > 0 && (pb->parts = pasci_calloc(b->hdr.nparts,
	                               sizeof(*pb->parts))) == NULL)) {
		return PASCO_ENOMEM;
	}
	p = pb->block;
	pb_fields(pb, &b->hdr);
	pb_tensors(pb, b, &p);
	pb_args(pb, b, &p);
	pb_nodes(pb, b, &p);
	if (b->hdr.nparts > 0) {
		Pasco__Wire__Header **ptrs =
		    carve(&p, b->hdr.nparts, sizeof(*ptrs));
		for (; pb->nparts < b->hdr.nparts && rv == 0; pb->nparts++) {
			pb_header *part = &pb->parts[pb->nparts];
			rv              = pb_build(b->parts[pb->nparts], part);
			ptrs[pb->nparts] = &part->h;
		}
		pb->h.n_parts = b->hdr.nparts;
		pb->h.parts   = ptrs;
	}
	return rv;
}

/* Fills pb from b (freed by pb_header_fini, also on failure) and sizes
 * it: *hlen the header, *total the whole body. */
static int
builder_prepare(
    pasci_wire_builder *b, pb_header *pb, size_t *hlen, size_t *total)
{
	int rv = pb_build(b, pb);
	if (rv != 0) {
		return rv;
	}
	*hlen  = pasco__wire__header__get_packed_size(&pb->h);
	*total = PAD8(PASCI_WIRE_PREFIX + *hlen);
	for (size_t i = 0; i < b->ntensors; i++) {
		*total += PAD8(pasci_wire_tensor_bytes(b, i));
	}
	return *hlen <= UINT32_MAX ? PASCO_OK : PASCO_EINVAL;
}

static void
builder_write(
    pasci_wire_builder *b, const pb_header *pb, uint8_t *body, size_t hlen)
{
	size_t off;
	pasci_put_be(body, 0, 8);
	pasci_put_be(body + 8, hlen, 4);
	pasco__wire__header__pack(&pb->h, body + PASCI_WIRE_PREFIX);
	off = PAD8(PASCI_WIRE_PREFIX + hlen);
	memset(body + PASCI_WIRE_PREFIX + hlen, 0,
	    off - PASCI_WIRE_PREFIX - hlen);
	for (size_t i = 0; i < b->ntensors; i++) {
		const pasco_tensor *tail = pasci_wire_tensor_tail(b, i);
		size_t              used = b->tensors[i]->nbytes;
		if (used > 0) {
			memcpy(body + off, b->tensors[i]->data, used);
		}
		if (tail != NULL && tail->nbytes > 0) {
			memcpy(body + off + used, tail->data, tail->nbytes);
			used += tail->nbytes;
		}
		memset(body + off + used, 0,
		    PAD8(pasci_wire_tensor_bytes(b, i)) - used);
		off += PAD8(pasci_wire_tensor_bytes(b, i));
	}
}

int
pasci_wire_encode(pasci_wire_builder *b, nng_msg **out)
{
	pb_header pb;
	size_t    hlen, total;
	int       rv;

	*out = NULL;
	if ((rv = builder_prepare(b, &pb, &hlen, &total)) == 0) {
		rv = nng_msg_alloc(out, total) == 0 ? PASCO_OK : PASCO_ENOMEM;
	}
	if (rv == 0) {
		builder_write(b, &pb, nng_msg_body(*out), hlen);
	}
	pb_header_fini(&pb);
	return rv;
}

int
pasci_wire_encode_head(pasci_wire_builder *b, uint64_t incarnation,
    uint8_t **head, size_t *head_len, size_t *total)
{
	pb_header pb;
	size_t    hlen;
	int       rv;

	*head = NULL;
	if ((rv = builder_prepare(b, &pb, &hlen, total)) == 0) {
		*head_len = PAD8(PASCI_WIRE_PREFIX + hlen);
		rv        = (*head = pasci_calloc(1, *head_len)) != NULL
		                ? PASCO_OK
		                : PASCO_ENOMEM;
	}
	if (rv == 0) {
		pasci_put_be(*head, incarnation, 8);
		pasci_put_be(*head + 8, hlen, 4);
		pasco__wire__header__pack(&pb.h, *head + PASCI_WIRE_PREFIX);
	}
	pb_header_fini(&pb);
	return rv;
}

nng_msg *
pasci_wire_stale_reply(uint64_t got, uint64_t own)
{
	pasci_wire_builder b;
	nng_msg           *reply;
	char               err[128];
	pasci_wire_builder_init(&b, PASCI_METHOD_NONE);
	b.hdr.status            = PASCO_EABORTED;
	b.hdr.stale_incarnation = true;
	snprintf(err, sizeof(err),
	    "request for incarnation %016llx reached incarnation %016llx",
	    (unsigned long long) got, (unsigned long long) own);
	b.hdr.error = err;
	if (pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

nng_msg *
pasci_wire_status_reply(int status, const char *fmt, ...)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	char               text[1024];
	va_list            ap;

	const char *error = text;

	va_start(ap, fmt);
	if (strcmp(fmt, "%s") == 0) { /* a ps's every reply: no formatting */
		error = va_arg(ap, const char *);
		error = error != NULL ? error : "";
	} else {
		vsnprintf(text, sizeof(text), fmt, ap);
	}
	va_end(ap);
	pasci_wire_builder_init(&b, PASCI_METHOD_NONE);
	b.hdr.status = status;
	b.hdr.error  = error;
	if (pasci_wire_encode(&b, &msg) != 0) {
		msg = NULL;
	}
	pasci_wire_builder_fini(&b);
	return msg;
}
