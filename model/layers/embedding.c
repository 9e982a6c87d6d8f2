/*
 * Keras's Embedding: rows of ids [batch, k] combined (mean or sum) into
 * [batch, output_dim], or Keras's own sequence [batch, k, output_dim]
 * (combiner none), id 0 masked with mask_zero; variable <name>/embeddings
 * [input_dim, output_dim] (a dynamic table of 64-bit keys [0, output_dim] when
 * dynamic), with its own partitioner if given; its embeddings_regularizer
 * on the distinct rows a step looks up (layers.h, "Regularizers"). Its
 * descriptor (layer_desc.h).
 * Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const part_classes[] = {
    [PASCO_PARTITION_FIXED]    = "FixedShardsPartitioner",
    [PASCO_PARTITION_MIN_SIZE] = "MinSizePartitioner",
    [PASCO_PARTITION_MAX_SIZE] = "MaxSizePartitioner",
    [PASCO_PARTITION_CUSTOM]   = "CustomPartitioner"};

#define NPART (sizeof(part_classes) / sizeof(part_classes[0]))

static void
embedding_defaults(pasco_layer *l)
{
	l->combiner               = PASCO_COMBINE_MEAN;
	l->embeddings_initializer = pasco_init_uniform(-0.05, 0.05, 0);
}

pasco_layer
pasco_layer_embedding(int64_t input_dim, int64_t output_dim)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_EMBEDDING);
	l.input_dim   = input_dim;
	l.output_dim  = output_dim;
	return pasci_layer_named(l);
}

pasco_layer
pasco_layer_embedding_sequence(
    int64_t input_dim, int64_t output_dim, bool mask_zero)
{
	pasco_layer l = pasco_layer_embedding(input_dim, output_dim);
	l.combiner    = PASCO_COMBINE_NONE;
	l.mask_zero   = mask_zero;
	return l;
}

pasco_layer
pasco_layer_dynamic_embedding(int64_t output_dim)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_EMBEDDING);
	l.dynamic     = true;
	l.output_dim  = output_dim;
	return pasci_layer_named(l);
}

static int
embedding_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	if (l->dynamic && l->output_dim < 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a dynamic Embedding's output_dim must be "
		    "positive, got %lld",
		    l->name, (long long) l->output_dim);
	}
	if (l->dynamic && (l->dynamic_options.min_count < 0 ||
	                      l->dynamic_options.evict_after < 0 ||
	                      l->dynamic_options.max_rows_per_ps < 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: min_count, evict_after and max_rows_per_ps "
		    "must be >= 0",
		    l->name);
	}
	if (!l->dynamic && (l->input_dim < 1 || l->output_dim < 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: input_dim and output_dim must be positive, "
		    "got %lld and %lld",
		    l->name, (long long) l->input_dim,
		    (long long) l->output_dim);
	}
	if (l->dynamic && l->embeddings_constraint.kind != 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a dynamic Embedding takes no embeddings_constraint",
		    l->name);
	}
	if (l->combiner != PASCO_COMBINE_SUM &&
	    l->combiner != PASCO_COMBINE_MEAN &&
	    l->combiner != PASCO_COMBINE_NONE) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: combiner must be sum, mean or none", l->name);
	}
	if (l->mask_zero && l->combiner != PASCO_COMBINE_NONE) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: mask_zero masks the steps of a sequence; its "
		    "combiner must be none (Python: None), not %s",
		    l->name,
		    l->combiner == PASCO_COMBINE_SUM ? "sum" : "mean");
	}
	*out = l->output_dim;
	return PASCO_OK;
}

static void
embedding_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_layer *l = &m->layers[i];
	(void) widths;
	pasci_model_add_var(m, i, "embeddings", 2,
	    l->dynamic ? 0 : l->input_dim, l->output_dim,
	    l->embeddings_initializer);
	m->vars[m->nvars - 1].constraint = l->embeddings_constraint;
}

/* The sequence: ids [batch, steps] give one row each, [batch, steps,
 * dim]; mask_zero: the mask (ids != 0) as c->mask. */
static pasco_tnode *
sequence_call(pasci_layer_call *c, pasco_tnode *table, const pasco_tensor *ids)
{
	const pasco_layer *l     = &c->m->layers[c->i];
	pasco_tensor       flat  = *ids; /* a view: read during the call */
	int64_t            steps = c->m->out_shape[c->i].dim[0];
	int64_t            batch = ids->shape[0];
	pasco_tnode       *rows;
	flat.rank     = 1;
	flat.shape[0] = ids->count;
	rows =
	    pasco_t_embedding_lookup(c->tp, table, &flat, PASCO_COMBINE_SUM);
	if (l->mask_zero && rows != NULL) {
		pasco_tensor *mask;
		if (pasco_tensor_alloc(&mask, pasco_tnode_value(rows)->dtype,
		        2, (int64_t[]){batch, steps}) != 0) {
			return pasci_tape_fail(
			    c->tp, PASCO_ENOMEM, "%s: out of memory", l->name);
		}
		for (int64_t k = 0; k < ids->count; k++) {
			pasco_tensor_set(
			    mask, k, pasco_tensor_get(ids, k) != 0);
		}
		c->mask = pasco_tape_constant(c->tp, mask);
		pasco_tensor_release(mask);
	}
	return pasco_t_reshape(
	    c->tp, rows, 3, (int64_t[]){batch, steps, l->output_dim});
}

static int
cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

/* embeddings_regularizer's term on the distinct rows of ids (padding
 * left out: negative ids, a dynamic table's -1), each once, into
 * c->loss; none when there are no rows. */
static bool
rows_penalty(pasci_layer_call *c, pasco_tnode *table, const pasco_tensor *ids)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tensor      *u;
	int64_t            n = 0;
	if (l->embeddings_l1 == 0 && l->embeddings_l2 == 0) {
		return true;
	}
	if (pasco_tensor_alloc(&u, PASCO_I64, 1, &ids->count) != 0) {
		pasci_tape_fail(
		    c->tp, PASCO_ENOMEM, "%s: out of memory", l->name);
		return false;
	}
	for (int64_t k = 0; k < ids->count; k++) {
		int64_t id = (int64_t) pasco_tensor_get(ids, k);
		if (l->dynamic ? id != -1 : id >= 0) {
			((int64_t *) u->data)[n++] = id;
		}
	}
	qsort(u->data, (size_t) n, sizeof(int64_t), cmp_id);
	int64_t d = 0;
	for (int64_t k = 0; k < n; k++) {
		int64_t *v = u->data;
		if (k == 0 || v[k] != v[d - 1]) {
			v[d++] = v[k];
		}
	}
	u->shape[0] = u->count = d;
	u->nbytes              = (size_t) d * sizeof(int64_t);
	if (d > 0) {
		pasco_tnode *rows = pasco_t_embedding_lookup(
		    c->tp, table, u, PASCO_COMBINE_SUM);
		c->loss = rows == NULL
		              ? NULL
		              : pasci_layer_reg_term(c->tp, NULL, rows,
		                    l->embeddings_l1, l->embeddings_l2);
	}
	pasco_tensor_release(u);
	return pasco_tape_error(c->tp) == PASCO_OK;
}

static pasco_tnode *
embedding_call(pasci_layer_call *c)
{
	pasco_tnode *table =
	    pasci_layer_var_node(c->m, c->tp, c->i, 0, c->nodes);
	const pasco_tensor *ids = c->inputs[pasci_layer_input_of(c->m, c->i)];
	if (table == NULL || !rows_penalty(c, table, ids)) {
		return NULL;
	}
	if (c->m->layers[c->i].combiner == PASCO_COMBINE_NONE) {
		return sequence_call(c, table, ids);
	}
	return pasco_t_embedding_lookup(
	    c->tp, table, ids, c->m->layers[c->i].combiner);
}

/* Combined: (output_dim,); the sequence: (steps, output_dim). */
static int
embedding_shape(
    const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	*out = l->combiner == PASCO_COMBINE_NONE
	           ? (pasci_eshape){2, {in[0].dim[0], l->output_dim}}
	           : (pasci_eshape){1, {l->output_dim}};
	return PASCO_OK;
}

static bool
write_partitioner(cJSON *o, const pasco_partitioner *p)
{
	cJSON *c;
	if (p == NULL || p->kind == 0) {
		return cJSON_AddNullToObject(o, "partitioner") != NULL;
	}
	if ((unsigned) p->kind >= NPART ||
	    (c = pasci_json_class(o, "partitioner", part_classes[p->kind])) ==
	        NULL) {
		return false;
	}
	switch (p->kind) {
	case PASCO_PARTITION_FIXED:
		return cJSON_AddNumberToObject(
		           c, "num_shards", (double) p->num_shards) != NULL;
	case PASCO_PARTITION_MIN_SIZE:
	case PASCO_PARTITION_MAX_SIZE:
		return cJSON_AddNumberToObject(c,
		           p->kind == PASCO_PARTITION_MIN_SIZE
		               ? "min_shard_bytes"
		               : "max_shard_bytes",
		           (double) (p->kind == PASCO_PARTITION_MIN_SIZE
		                         ? p->min_shard_bytes
		                         : p->max_shard_bytes)) != NULL &&
		       cJSON_AddNumberToObject(
		           c, "max_shards", (double) p->max_shards) != NULL &&
		       cJSON_AddNumberToObject(c, "bytes_per_string",
		           (double) p->bytes_per_string) != NULL;
	default:
		return true;
	}
}

static bool
embedding_write(cJSON *c, const pasco_layer *l)
{
	bool ok = true;
	if (l->dynamic) {
		const pasco_dynamic_options *d = &l->dynamic_options;
		cJSON *o = cJSON_AddObjectToObject(c, "dynamic");
		ok       = o != NULL &&
		     cJSON_AddNumberToObject(
		         o, "min_count", (double) d->min_count) &&
		     cJSON_AddNumberToObject(
		         o, "evict_after", (double) d->evict_after) &&
		     cJSON_AddNumberToObject(
		         o, "max_rows_per_ps", (double) d->max_rows_per_ps) &&
		     cJSON_AddBoolToObject(
		         o, "default_zeros", d->default_zeros);
	} else {
		ok = cJSON_AddNumberToObject(
		    c, "input_dim", (double) l->input_dim);
	}
	return ok &&
	       cJSON_AddNumberToObject(
	           c, "output_dim", (double) l->output_dim) &&
	       (l->combiner == PASCO_COMBINE_NONE
	               ? cJSON_AddNullToObject(c, "combiner") != NULL
	               : cJSON_AddStringToObject(c, "combiner",
	                     l->combiner == PASCO_COMBINE_SUM
	                         ? "sum"
	                         : "mean") != NULL) &&
	       cJSON_AddBoolToObject(c, "mask_zero", l->mask_zero) &&
	       pasci_json_write_init(
	           c, "embeddings_initializer", &l->embeddings_initializer) &&
	       pasci_json_write_constraint(
	           c, "embeddings_constraint", &l->embeddings_constraint) &&
	       pasci_json_write_reg(c, "embeddings_regularizer",
	           l->embeddings_l1, l->embeddings_l2) &&
	       pasci_json_write_reg(c, "activity_regularizer", l->activity_l1,
	           l->activity_l2) &&
	       write_partitioner(c, l->partitioner);
}

static int
read_partitioner(const cJSON *c, pasco_partitioner *p, const char *where)
{
	static const char *const keys[] = {"num_shards", "min_shard_bytes",
	    "max_shard_bytes", "max_shards", "bytes_per_string"};
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(c, "partitioner");
	const cJSON *pc;
	char         at[160];
	int          kind;
	if (o == NULL || cJSON_IsNull(o)) {
		return PASCO_OK;
	}
	pasci_fmt(at, sizeof(at), "%s: partitioner", where);
	if (pasci_json_read_class(o, part_classes, NPART, &kind, &pc, at) !=
	        0 ||
	    pasci_json_check_keys(pc, keys, 5, at) != 0) {
		return PASCO_EINVAL;
	}
	*p = kind == PASCO_PARTITION_MIN_SIZE
	         ? pasco_min_size_partitioner(256 << 10, 1, 16)
	     : kind == PASCO_PARTITION_MAX_SIZE
	         ? pasco_max_size_partitioner(0, 0, 16)
	         : (pasco_partitioner){.kind = (pasco_partitioner_kind) kind};
	return pasci_json_int(pc, "num_shards", &p->num_shards, 1, at) ||
	               pasci_json_int(pc, "min_shard_bytes",
	                   &p->min_shard_bytes, 1, at) ||
	               pasci_json_int(pc, "max_shard_bytes",
	                   &p->max_shard_bytes, 1, at) ||
	               pasci_json_int(
	                   pc, "max_shards", &p->max_shards, 0, at) ||
	               pasci_json_int(
	                   pc, "bytes_per_string", &p->bytes_per_string, 0, at)
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

static int
read_combiner(const cJSON *c, pasco_combiner *comb, const char *where)
{
	const char *name = NULL;
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c, "combiner"))) {
		*comb = PASCO_COMBINE_NONE; /* the sequence */
		return PASCO_OK;
	}
	if (pasci_json_string(c, "combiner", &name, where) != 0) {
		return PASCO_EINVAL;
	}
	if (name != NULL && strcmp(name, "mean") != 0 &&
	    strcmp(name, "sum") != 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: combiner must be \"mean\" or \"sum\", got \"%s\"",
		    where, name);
	}
	if (name != NULL) {
		*comb =
		    name[0] == 's' ? PASCO_COMBINE_SUM : PASCO_COMBINE_MEAN;
	}
	return PASCO_OK;
}

/* "dynamic": {"min_count", "evict_after", "max_rows_per_ps",
 * "default_zeros"} (all optional): a dynamic table. */
static int
read_dynamic(const cJSON *c, pasco_layer *l, const char *at)
{
	static const char *const keys[] = {
	    "min_count", "evict_after", "max_rows_per_ps", "default_zeros"};
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "dynamic");
	pasco_dynamic_options *o = &l->dynamic_options;
	if (d == NULL || cJSON_IsNull(d)) {
		return PASCO_OK;
	}
	if (!cJSON_IsObject(d)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: dynamic must be an object of min_count, evict_after, "
		    "max_rows_per_ps and default_zeros",
		    at);
	}
	l->dynamic = true;
	return pasci_json_check_keys(d, keys, 4, at) != 0 ||
	               pasci_json_int(d, "min_count", &o->min_count, 0, at) !=
	                   0 ||
	               pasci_json_int(
	                   d, "evict_after", &o->evict_after, 0, at) != 0 ||
	               pasci_json_size(d, "max_rows_per_ps",
	                   &o->max_rows_per_ps, 0, UINT32_MAX - 1, at) != 0 ||
	               pasci_json_bool(
	                   d, "default_zeros", &o->default_zeros, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

static int
embedding_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	return pasci_json_size(
	           c, "input_dim", &l->input_dim, 1, PASCI_MAX_IDS, at) != 0 ||
	               pasci_json_size(c, "output_dim", &l->output_dim, 1,
	                   PASCI_MAX_WIDTH, at) != 0 ||
	               read_combiner(c, &l->combiner, at) != 0 ||
	               pasci_json_bool(c, "mask_zero", &l->mask_zero, at) !=
	                   0 ||
	               pasci_json_read_init(c, "embeddings_initializer",
	                   &l->embeddings_initializer, at) != 0 ||
	               pasci_json_read_constraint(c, "embeddings_constraint",
	                   &l->embeddings_constraint, at) != 0 ||
	               pasci_json_read_reg(c, "embeddings_regularizer",
	                   &l->embeddings_l1, &l->embeddings_l2, at) != 0 ||
	               pasci_json_read_reg(c, "activity_regularizer",
	                   &l->activity_l1, &l->activity_l2, at) != 0 ||
	               read_partitioner(c, part, at) != 0 ||
	               read_dynamic(c, l, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_embedding_desc = {
    .kind       = PASCO_LAYER_EMBEDDING,
    .class_name = "Embedding",
    .prefix     = "embedding",
    .keys       = {"name", "input_dim", "output_dim", "combiner",
              "embeddings_initializer", "partitioner", "dynamic", "mask_zero",
              "embeddings_constraint", "embeddings_regularizer",
              "activity_regularizer"},
    .args       = {"input_dim", "output_dim"},
    .ids        = true,
    .min_inputs = 1,
    .defaults   = embedding_defaults,
    .check      = embedding_check,
    .shape      = embedding_shape,
    .variables  = embedding_variables,
    .call       = embedding_call,
    .write      = embedding_write,
    .read       = embedding_read,
};
