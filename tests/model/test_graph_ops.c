/* The graph op table (model/graph_ops.c) against docs/GRAPHS.md's "Ops"
 * table, read from the source tree at PASCO_GRAPHS_MD: the same op names,
 * arities and attribute keys, so the two cannot drift; each row's parse
 * refusing a bad attribute by name; each row's run on small inputs
 * giving what the tape op it stands for gives. */
#include <stdio.h>
#include <stdlib.h>

#include "graph_ops.h"
#include "pasco/layers.h"
#include "tape_check.h"
#include "tape_ops_impl.h"

TestSuite(graph_ops, .timeout = 60);

/* ---- docs/GRAPHS.md's Ops table ---- */

#define MAX_DOC_OPS 96

typedef struct doc_op {
	char name[48];
	int  min_in, max_in;
	char keys[6][24];
	int  nkeys;
} doc_op;

/* The backticked words of cell into words[0..max), their count. */
static int
ticked(const char *cell, const char *end, char (*words)[48], int max)
{
	int n = 0;
	for (const char *p = cell; p < end && n < max; p++) {
		const char *q;
		if (*p != '`' ||
		    (q = memchr(p + 1, '`', (size_t) (end - p - 1))) == NULL) {
			continue;
		}
		snprintf(words[n++], 48, "%.*s", (int) (q - p - 1), p + 1);
		p = q;
	}
	return n;
}

/* Every row of the "## Ops" section's table, each name a doc_op. */
static int
read_doc_ops(doc_op *ops)
{
	FILE *f = fopen(PASCO_GRAPHS_MD, "r");
	char  line[1024];
	bool  in_ops = false;
	int   n      = 0;
	cr_assert_not_null(f, "cannot open %s", PASCO_GRAPHS_MD);
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *c[5];
		char        names[16][48], keys[8][48];
		int         nn, nk, lo, hi;
		if (strncmp(line, "## ", 3) == 0) {
			in_ops = strcmp(line, "## Ops\n") == 0;
		}
		if (!in_ops || strncmp(line, "| `", 3) != 0) {
			continue;
		}
		c[0] = line;
		for (int k = 1; k < 5; k++) {
			c[k] = strchr(c[k - 1] + 1, '|');
			cr_assert_not_null(c[k], "a short row: %s", line);
		}
		nn = ticked(c[0], c[1], names, 16);
		nk = ticked(c[2], c[3], keys, 8);
		cr_assert(sscanf(c[1] + 1, " %d", &lo) == 1, "%s", line);
		hi = lo;
		sscanf(c[1] + 1, " %*d..%d", &hi);
		for (int i = 0; i < nn; i++) {
			doc_op *d = &ops[n++];
			cr_assert(n <= MAX_DOC_OPS);
			memset(d, 0, sizeof(*d));
			snprintf(d->name, sizeof(d->name), "%.47s", names[i]);
			d->min_in = lo;
			d->max_in = hi;
			for (int k = 0; k < nk; k++) {
				if (strcmp(keys[k], "dtype") !=
				    0) { /* cast's */
					snprintf(d->keys[d->nkeys++], 24,
					    "%.23s", keys[k]);
				}
			}
		}
	}
	fclose(f);
	return n;
}

static bool
row_has_key(const pasci_graph_op *row, const char *key)
{
	for (int k = 0; k < 6 && row->keys[k] != NULL; k++) {
		if (strcmp(row->keys[k], key) == 0) {
			return true;
		}
	}
	return false;
}

Test(graph_ops, the_rows_are_the_ops_of_graphs_md)
{
	static doc_op ops[MAX_DOC_OPS];
	char          list[2048], *save = NULL;
	int           n = read_doc_ops(ops), rows = 0;
	cr_assert_gt(n, 40, "only %d ops read from %s", n, PASCO_GRAPHS_MD);
	for (int i = 0; i < n; i++) {
		const pasci_graph_op *row  = pasci_graph_op_named(ops[i].name);
		int                   keys = 0;
		cr_assert_not_null(
		    row, "%s: no row in model/graph_ops.c", ops[i].name);
		cr_assert_str_eq(row->name, ops[i].name);
		cr_assert_not_null(row->run, "%s: no run", row->name);
		cr_assert(row->min_in == ops[i].min_in &&
		              row->max_in == ops[i].max_in,
		    "%s: %d..%d inputs, docs/GRAPHS.md says %d..%d", row->name,
		    row->min_in, row->max_in, ops[i].min_in, ops[i].max_in);
		for (int k = 0; k < ops[i].nkeys; k++) {
			cr_assert(row_has_key(row, ops[i].keys[k]),
			    "%s: attribute '%s' of docs/GRAPHS.md is not a "
			    "key",
			    row->name, ops[i].keys[k]);
		}
		while (keys < 6 && row->keys[keys] != NULL) {
			keys++;
		}
		cr_assert_eq(keys, ops[i].nkeys,
		    "%s: %d keys, docs/GRAPHS.md names %d", row->name, keys,
		    ops[i].nkeys);
		cr_assert_eq(row->parse == NULL, keys == 0,
		    "%s: a parse exactly when there are attributes",
		    row->name);
	}
	pasci_graph_op_list(list, sizeof(list));
	for (char *name = strtok_r(list, ", ", &save); name != NULL;
	     name       = strtok_r(NULL, ", ", &save), rows++) {
		int i = 0;
		while (i < n && strcmp(ops[i].name, name) != 0) {
			i++;
		}
		cr_assert_lt(
		    i, n, "row %s is not in docs/GRAPHS.md's table", name);
	}
	cr_assert_eq(rows, n, "%d rows, %d ops in docs/GRAPHS.md", rows, n);
	cr_assert_null(pasci_graph_op_named("input"));
	cr_assert_null(pasci_graph_op_named("next"));
	cr_assert_null(pasci_graph_op_named("transpose_a"));
}

/* ---- parse ---- */

static int
parse(const char *op, const char *json, pasci_graph_attrs *a)
{
	const pasci_graph_op *row  = pasci_graph_op_named(op);
	cJSON                *node = cJSON_Parse(json);
	char                  at[64];
	int                   rv;
	cr_assert_not_null(row, "%s", op);
	cr_assert_not_null(node, "%s", json);
	cr_assert_not_null(row->parse, "%s has no attributes", op);
	memset(a, 0, sizeof(*a));
	a->dtype = PASCO_F64;
	snprintf(at, sizeof(at), "nodes[4] (%s)", op);
	rv = row->parse(node, a, at);
	cJSON_Delete(node);
	return rv;
}

Test(graph_ops, a_bad_attribute_is_refused_naming_it)
{
	const struct {
		const char *op, *json, *msg;
	} cs[] = {
	    {"matmul", "{\"transpose_a\": 1}",
	        "nodes[4] (matmul): attribute 'transpose_a' must be true or "
	        "false"},
	    {"clip", "{\"min\": 0}",
	        "nodes[4] (clip): missing attribute 'max'"},
	    {"clip", "{\"min\": 2, \"max\": 1}",
	        "nodes[4] (clip): attribute 'min' (2) is above 'max' (1)"},
	    {"reduce_sum", "{\"axis\": \"x\"}",
	        "nodes[4] (reduce_sum): attribute 'axis' must be an integer"},
	    {"reduce_max", "{\"axis\": [0, 1.5]}",
	        "nodes[4] (reduce_max): attribute 'axis' must be a list of "
	        "integers"},
	    {"reduce_mean", "{\"keepdims\": \"yes\"}",
	        "nodes[4] (reduce_mean): attribute 'keepdims' must be true or "
	        "false"},
	    {"reshape", "{\"shape\": [1, 1, 1, 1, 1, 1, 1, 1, 1]}",
	        "nodes[4] (reshape): attribute 'shape' must be a list of at "
	        "most 8 integers"},
	    {"slice", "{\"begin\": [0, 1], \"size\": [1]}",
	        "nodes[4] (slice): attributes 'begin' and 'size' must have "
	        "one "
	        "length"},
	    {"one_hot", "{\"depth\": -1}",
	        "nodes[4] (one_hot): attribute 'depth' must be 0 or more"},
	    {"dropout", "{\"rate\": 1}",
	        "nodes[4] (dropout): attribute 'rate' must be in [0, 1)"},
	    {"batch_dot", "{\"axes\": [1]}",
	        "nodes[4] (batch_dot): attribute 'axes' must be a list of two "
	        "integers"},
	    {"l2_normalize", "{\"epsilon\": 1e-12}",
	        "nodes[4] (l2_normalize): missing attribute 'axis'"},
	    {"sparse_categorical_crossentropy", "{\"from_logits\": null}",
	        "nodes[4] (sparse_categorical_crossentropy): attribute "
	        "'from_logits' must be true or false"},
	    {"argmax", "{}", "nodes[4] (argmax): missing attribute 'axis'"},
	    {"expand_dims", "{\"axis\": 4294967297}",
	        "nodes[4] (expand_dims): attribute 'axis' holds 4294967297: "
	        "integers must be within [-2^31 + 1, 2^31 - 1]"},
	    {"reshape", "{\"shape\": [2147483647, 2147483647, 2147483647]}",
	        "nodes[4] (reshape): attribute 'shape' holds 9.9e+27 "
	        "elements: "
	        "too many"},
	    {"gather", "{\"axis\": 0.5}",
	        "nodes[4] (gather): attribute 'axis' must be an integer"},
	};
	for (size_t k = 0; k < sizeof(cs) / sizeof(cs[0]); k++) {
		pasci_graph_attrs a;
		cr_assert_eq(parse(cs[k].op, cs[k].json, &a), PASCO_EINVAL,
		    "%s %s was accepted", cs[k].op, cs[k].json);
		cr_assert_str_eq(pasco_model_last_error(), cs[k].msg);
	}
}

Test(graph_ops, attributes_read_with_their_defaults)
{
	pasci_graph_attrs a;
	PASCO_PASS(
	    parse("reduce_sum", "{\"axis\": null, \"keepdims\": true}", &a));
	cr_assert(a.all && a.b[0]);
	PASCO_PASS(parse("reduce_max", "{\"axis\": [0, -1]}", &a));
	cr_assert(!a.all && a.nlist == 2 && a.list[1] == -1 && !a.b[0]);
	PASCO_PASS(parse("reduce_mean", "{\"axis\": 1}", &a));
	cr_assert(!a.all && a.nlist == 1 && a.list[0] == 1);
	PASCO_PASS(parse("softmax", "{}", &a));
	cr_assert_eq(a.axis, -1);
	PASCO_PASS(parse("gather", "{}", &a));
	cr_assert_eq(a.axis, 0);
	PASCO_PASS(parse("l2_normalize", "{\"axis\": 1}", &a));
	cr_assert(a.axis == 1 && a.f[0] == 1e-12);
	PASCO_PASS(parse("transpose", "{}", &a));
	cr_assert(a.all);
	PASCO_PASS(parse("matmul", "{\"transpose_b\": true}", &a));
	cr_assert(!a.b[0] && a.b[1]);
}

/* ---- runs against the tape ops ---- */

typedef struct ins {
	pasco_tnode        *x, *y, *r, *k, *b;
	const pasco_tensor *i, *c, *l;
} ins;

typedef const pasco_tensor *(*direct_fn)(pasco_tape *tp, const ins *v);

typedef struct run_case {
	const char *op, *json, *inputs; /* x y r k b: floats; i c l: ints */
	pasco_dtype dtype;              /* the node's; 0: f64 */
	direct_fn   direct;
} run_case;

static pasco_tensor *
ints(int32_t rank, const int64_t *shape, const int64_t *v)
{
	return ids_of(rank, shape, v);
}

/* The inputs, on tp in one order, so two tapes number them alike. */
static void
make_ins(pasco_tape *tp, ins *v, pasco_tensor **keep)
{
	keep[0] = rnd(PASCO_F64, 2, (int64_t[]){2, 3}, 1, 0.1, 0.9);
	keep[1] = rnd(PASCO_F64, 2, (int64_t[]){2, 3}, 2, 0.1, 0.9);
	keep[2] = rnd(PASCO_F64, 1, (int64_t[]){3}, 3, 0.1, 0.9);
	keep[3] = rnd(PASCO_F64, 2, (int64_t[]){2, 1}, 4, -1, 1);
	keep[4] = binary_labels(PASCO_F64, 6);
	keep[5] = ints(1, (int64_t[]){2}, (int64_t[]){2, 0});
	keep[6] = ints(2, (int64_t[]){2, 3}, (int64_t[]){1, 0, 0, 1, 1, 0});
	keep[7] = ints(1, (int64_t[]){2}, (int64_t[]){1, 2});
	v->x    = pasco_tape_constant(tp, keep[0]);
	v->y    = pasco_tape_constant(tp, keep[1]);
	v->r    = pasco_tape_constant(tp, keep[2]);
	v->k    = pasco_tape_constant(tp, keep[3]);
	v->b    = pasco_tape_constant(tp, keep[4]);
	v->i    = keep[5];
	v->c    = keep[6];
	v->l    = keep[7];
}

static pasci_gval
gval_of(const ins *v, char code)
{
	switch (code) {
	case 'x':
		return (pasci_gval){.node = v->x};
	case 'y':
		return (pasci_gval){.node = v->y};
	case 'r':
		return (pasci_gval){.node = v->r};
	case 'k':
		return (pasci_gval){.node = v->k};
	case 'b':
		return (pasci_gval){.node = v->b};
	case 'i':
		return (pasci_gval){.ints = v->i};
	case 'c':
		return (pasci_gval){.ints = v->c};
	default:
		return (pasci_gval){.ints = v->l};
	}
}

#define D(name, expr)                                                         \
	static const pasco_tensor *name(pasco_tape *tp, const ins *v)         \
	{                                                                     \
		(void) v;                                                     \
		return pasco_tnode_value(expr);                               \
	}
#define V(n) pasco_tnode_value(n)

D(d_add, pasco_t_add(tp, v->x, v->y))
D(d_subtract, pasco_t_sub(tp, v->x, v->r))
D(d_multiply, pasco_t_mul(tp, v->k, v->r))
D(d_divide, pasco_t_div(tp, v->x, v->k))
D(d_maximum, pasco_t_maximum(tp, v->x, v->y))
D(d_minimum, pasco_t_minimum(tp, v->x, v->r))
D(d_matmul, pasco_t_matmul(tp, v->x, v->y, false, true))
D(d_dot, pasco_t_dot(tp, v->x, v->r))
D(d_batch_dot, pasco_t_batch_dot(tp, v->x, v->y, 1, 1))
D(d_reduce_sum, pasco_t_reduce_sum_axes(tp, v->x, 1, (int32_t[]){0}, true))
D(d_reduce_mean, pasco_t_reduce_mean_axes(tp, v->x, 0, NULL, false))
D(d_reduce_max, pasco_t_reduce_max(tp, v->x, 1, (int32_t[]){1}, false))
D(d_concat, pasco_t_concat(tp, 2, (pasco_tnode *[]){v->x, v->y}, 0))
D(d_reshape, pasco_t_reshape(tp, v->x, 2, (int64_t[]){3, -1}))
D(d_transpose, pasco_t_transpose(tp, v->x, (int32_t[]){1, 0}))
D(d_expand_dims, pasco_t_expand_dims(tp, v->x, 0))
D(d_squeeze, pasco_t_squeeze(tp, v->k, 1))
D(d_slice, pasco_t_slice(tp, v->x, (int64_t[]){0, 1}, (int64_t[]){-1, 2}))
D(d_gather, pasco_t_gather(tp, v->x, v->i, 1))
D(d_one_hot, pasco_t_one_hot(tp, v->i, 3, PASCO_F64))
D(d_exp, pasco_t_exp(tp, v->x))
D(d_log, pasco_t_log(tp, v->x))
D(d_sqrt, pasco_t_sqrt(tp, v->x))
D(d_square, pasco_t_square(tp, v->x))
D(d_abs, pasco_t_abs(tp, v->k))
D(d_negative, pasco_t_negative(tp, v->x))
D(d_clip, pasco_t_clip(tp, v->x, 0.3, 0.6))
D(d_where, pasco_t_where(tp, v->c, v->x, v->y))
D(d_greater, pasco_t_greater(tp, v->x, v->y))
D(d_greater_equal, pasco_t_greater_equal(tp, v->x, v->x))
D(d_less, pasco_t_less(tp, v->x, v->r))
D(d_less_equal, pasco_t_less_equal(tp, v->x, v->y))
D(d_equal, pasco_t_equal(tp, v->x, v->x))
D(d_not_equal, pasco_t_not_equal(tp, v->x, v->y))
D(d_sigmoid, pasco_t_sigmoid(tp, v->k))
D(d_relu, pasco_t_relu(tp, v->k))
D(d_tanh, pasco_t_tanh(tp, v->k))
D(d_softmax, pasco_t_softmax_axis(tp, v->x, 0))
D(d_log_softmax, pasco_t_log_softmax(tp, v->x, -1))
D(d_l2_normalize, pasco_t_l2_normalize(tp, v->x, 1, 1e-12))
D(d_stop_gradient, pasco_t_stop_gradient(tp, v->x))
D(d_cast, pasco_t_cast(tp, v->x, PASCO_F32))
D(d_dropout, pasco_t_dropout(tp, v->x, 0.5))
D(d_sparse_categorical_crossentropy,
    pasco_t_softmax_crossentropy(tp, v->x, v->l))
D(d_sparse_cce_probs,
    pasco_t_softmax_crossentropy(
        tp, pasco_t_log(tp, pasco_t_clip(tp, v->x, 1e-7, 1 - 1e-7)), v->l))
D(d_categorical_crossentropy, pasco_t_softmax_crossentropy(tp, v->x, V(v->y)))
D(d_binary_crossentropy, pasco_t_binary_crossentropy(tp, v->x, V(v->b)))
D(d_binary_crossentropy_logits,
    pasco_t_binary_crossentropy_logits(tp, v->x, V(v->b)))
D(d_mean_squared_error, pasco_t_mse(tp, v->x, V(v->y)))
D(d_logit,
    pasco_t_sub(tp, pasco_t_log(tp, pasco_t_clip(tp, v->r, 1e-7, 1 - 1e-7)),
        pasco_t_log(tp,
            pasco_t_sub(tp, pasci_t_fill(tp, PASCO_F64, 1, (int64_t[]){3}, 1),
                pasco_t_clip(tp, v->r, 1e-7, 1 - 1e-7)))))
D(d_log_probs,
    pasco_t_log(tp,
        pasco_t_clip(tp,
            pasco_t_div(tp, v->y,
                pasco_t_reduce_sum_axes(tp, v->y, 1, (int32_t[]){-1}, true)),
            1e-7, 1 - 1e-7)))

static const pasco_tensor *
d_argmax(pasco_tape *tp, const ins *v)
{
	return pasco_t_argmax(tp, v->x, 1);
}

static const pasco_tensor *
d_arange_like(pasco_tape *tp, const ins *v)
{
	pasco_tensor *t = pasci_graph_ints(tp, PASCO_I64, 1, (int64_t[]){3});
	(void) v;
	for (int64_t i = 0; i < 3; i++) {
		((int64_t *) t->data)[i] = i;
	}
	return t;
}

/* -sum(y log(clip(x / sum x))) per row, the batch's mean, by hand. */
static const pasco_tensor *
d_cce_probs(pasco_tape *tp, const ins *v)
{
	const pasco_tensor *x = V(v->x), *y = V(v->y);
	double              loss = 0;
	for (int64_t r = 0; r < 2; r++) {
		double s = 0;
		for (int64_t j = 0; j < 3; j++) {
			s += pasco_tensor_get(x, r * 3 + j);
		}
		for (int64_t j = 0; j < 3; j++) {
			double q = pasco_tensor_get(x, r * 3 + j) / s;
			loss -= pasco_tensor_get(y, r * 3 + j) *
			        log(fmin(fmax(q, 1e-7), 1 - 1e-7)) / 2;
		}
	}
	return V(pasci_t_fill(tp, PASCO_F64, 0, NULL, loss));
}

static const run_case runs[] = {
    {"add", NULL, "xy", 0, d_add},
    {"subtract", NULL, "xr", 0, d_subtract},
    {"multiply", NULL, "kr", 0, d_multiply},
    {"divide", NULL, "xk", 0, d_divide},
    {"maximum", NULL, "xy", 0, d_maximum},
    {"minimum", NULL, "xr", 0, d_minimum},
    {"matmul", "{\"transpose_b\": true}", "xy", 0, d_matmul},
    {"dot", NULL, "xr", 0, d_dot},
    {"batch_dot", "{\"axes\": [1, 1]}", "xy", 0, d_batch_dot},
    {"reduce_sum", "{\"axis\": [0], \"keepdims\": true}", "x", 0,
        d_reduce_sum},
    {"reduce_mean", "{\"axis\": null}", "x", 0, d_reduce_mean},
    {"reduce_max", "{\"axis\": 1}", "x", 0, d_reduce_max},
    {"concat", "{\"axis\": 0}", "xy", 0, d_concat},
    {"reshape", "{\"shape\": [3, -1]}", "x", 0, d_reshape},
    {"transpose", "{\"perm\": [1, 0]}", "x", 0, d_transpose},
    {"expand_dims", "{\"axis\": 0}", "x", 0, d_expand_dims},
    {"squeeze", "{\"axis\": 1}", "k", 0, d_squeeze},
    {"slice", "{\"begin\": [0, 1], \"size\": [-1, 2]}", "x", 0, d_slice},
    {"gather", "{\"axis\": 1}", "xi", 0, d_gather},
    {"one_hot", "{\"depth\": 3}", "i", 0, d_one_hot},
    {"exp", NULL, "x", 0, d_exp},
    {"log", NULL, "x", 0, d_log},
    {"sqrt", NULL, "x", 0, d_sqrt},
    {"square", NULL, "x", 0, d_square},
    {"abs", NULL, "k", 0, d_abs},
    {"negative", NULL, "x", 0, d_negative},
    {"clip", "{\"min\": 0.3, \"max\": 0.6}", "x", 0, d_clip},
    {"where", NULL, "cxy", 0, d_where},
    {"greater", NULL, "xy", 0, d_greater},
    {"greater_equal", NULL, "xx", 0, d_greater_equal},
    {"less", NULL, "xr", 0, d_less},
    {"less_equal", NULL, "xy", 0, d_less_equal},
    {"equal", NULL, "xx", 0, d_equal},
    {"not_equal", NULL, "xy", 0, d_not_equal},
    {"argmax", "{\"axis\": 1}", "x", PASCO_I64, d_argmax},
    {"sigmoid", NULL, "k", 0, d_sigmoid},
    {"relu", NULL, "k", 0, d_relu},
    {"tanh", NULL, "k", 0, d_tanh},
    {"softmax", "{\"axis\": 0}", "x", 0, d_softmax},
    {"log_softmax", "{}", "x", 0, d_log_softmax},
    {"l2_normalize", "{\"axis\": 1}", "x", 0, d_l2_normalize},
    {"stop_gradient", NULL, "x", 0, d_stop_gradient},
    {"cast", NULL, "x", PASCO_F32, d_cast},
    {"dropout", "{\"rate\": 0.5}", "x", 0, d_dropout},
    {"arange_like", "{\"axis\": -1}", "x", PASCO_I64, d_arange_like},
    {"sparse_categorical_crossentropy", "{\"from_logits\": true}", "lx", 0,
        d_sparse_categorical_crossentropy},
    {"sparse_categorical_crossentropy", "{}", "lx", 0, d_sparse_cce_probs},
    {"categorical_crossentropy", "{\"from_logits\": true}", "yx", 0,
        d_categorical_crossentropy},
    {"categorical_crossentropy", "{}", "yx", 0, d_cce_probs},
    {"binary_crossentropy", "{}", "bx", 0, d_binary_crossentropy},
    {"binary_crossentropy", "{\"from_logits\": true}", "bx", 0,
        d_binary_crossentropy_logits},
    {"mean_squared_error", NULL, "yx", 0, d_mean_squared_error},
    {"logit", NULL, "r", 0, d_logit},
    {"log_probs", NULL, "y", 0, d_log_probs},
};

static void
same_values(const char *op, const pasco_tensor *got, const pasco_tensor *want)
{
	cr_assert_not_null(got, "%s: the row gave nothing", op);
	cr_assert_not_null(want, "%s: the tape op gave nothing", op);
	cr_assert_eq(got->dtype, want->dtype, "%s: dtype %d, want %d", op,
	    (int) got->dtype, (int) want->dtype);
	cr_assert_eq(got->rank, want->rank, "%s: rank %d, want %d", op,
	    (int) got->rank, (int) want->rank);
	for (int32_t d = 0; d < got->rank; d++) {
		cr_assert_eq(
		    got->shape[d], want->shape[d], "%s: dim %d", op, (int) d);
	}
	for (int64_t i = 0; i < got->count; i++) {
		cr_assert(fabs(pasco_tensor_get(got, i) -
		               pasco_tensor_get(want, i)) < 1e-12,
		    "%s: [%lld] = %.15g, want %.15g", op, (long long) i,
		    pasco_tensor_get(got, i), pasco_tensor_get(want, i));
	}
}

/* The row on one tape, the tape op on another (both training, seed 3:
 * dropout draws one mask at one position). */
static void
run_one(const run_case *c)
{
	const pasci_graph_op *row = pasci_graph_op_named(c->op);
	pasco_tape           *t1, *t2;
	pasco_tensor         *keep1[8], *keep2[8];
	ins                   v1, v2;
	pasci_graph_attrs     a;
	pasci_gval            in[3], out;
	size_t                n = strlen(c->inputs);
	cr_assert_not_null(row, "%s", c->op);
	if (c->json != NULL) {
		PASCO_PASS(parse(c->op, c->json, &a));
	} else {
		memset(&a, 0, sizeof(a));
	}
	a.dtype = c->dtype ? c->dtype : PASCO_F64;
	PASCO_PASS(pasco_tape_alloc(&t1, true, 3));
	PASCO_PASS(pasco_tape_alloc(&t2, true, 3));
	make_ins(t1, &v1, keep1);
	make_ins(t2, &v2, keep2);
	for (size_t k = 0; k < n; k++) {
		in[k] = gval_of(&v1, c->inputs[k]);
	}
	cr_assert((int) n >= row->min_in && (int) n <= row->max_in);
	cr_assert(row->run(t1, n, in, &a, &out), "%s: %s", c->op,
	    pasco_tape_message(t1));
	same_values(c->op,
	    out.node != NULL ? pasco_tnode_value(out.node) : out.ints,
	    c->direct(t2, &v2));
	pasco_tape_free(t1);
	pasco_tape_free(t2);
	for (int k = 0; k < 8; k++) {
		pasco_tensor_release(keep1[k]);
		pasco_tensor_release(keep2[k]);
	}
}

Test(graph_ops, each_row_runs_as_the_tape_op_it_stands_for)
{
	char list[2048], *save = NULL;
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		run_one(&runs[k]);
	}
	pasci_graph_op_list(list, sizeof(list));
	for (char *name = strtok_r(list, ", ", &save); name != NULL;
	     name       = strtok_r(NULL, ", ", &save)) {
		size_t k = 0;
		while (k < sizeof(runs) / sizeof(runs[0]) &&
		       strcmp(runs[k].op, name) != 0) {
			k++;
		}
		cr_assert_lt(k, sizeof(runs) / sizeof(runs[0]),
		    "row %s has no run case", name);
	}
}

/* An integer where a float is wanted becomes the float's dtype; a node
 * of an integer dtype truncates toward zero. */
Test(graph_ops, integers_convert_as_numpy_promotes)
{
	const pasci_graph_op *add  = pasci_graph_op_named("add");
	const pasci_graph_op *cast = pasci_graph_op_named("cast");
	pasco_tape           *tp;
	pasco_tensor         *x = rnd(PASCO_F32, 1, (int64_t[]){2}, 1, -2, 2);
	pasco_tensor     *ix = ids_of(1, (int64_t[]){2}, (int64_t[]){3, -4});
	pasci_graph_attrs a  = {.dtype = PASCO_F32};
	pasci_gval        in[2], out;
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	in[0] = (pasci_gval){.node = pasco_tape_constant(tp, x)};
	in[1] = (pasci_gval){.ints = ix};
	cr_assert(add->run(tp, 2, in, &a, &out), "%s", pasco_tape_message(tp));
	cr_assert_eq(pasco_tnode_value(out.node)->dtype, PASCO_F32);
	for (int64_t i = 0; i < 2; i++) {
		cr_assert_float_eq(
		    pasco_tensor_get(pasco_tnode_value(out.node), i),
		    pasco_tensor_get(x, i) + pasco_tensor_get(ix, i), 1e-6);
	}
	a.dtype = PASCO_I32;
	in[0]   = (pasci_gval){.node = pasco_tape_constant(tp, x)};
	cr_assert(cast->run(tp, 1, in, &a, &out));
	cr_assert_null(out.node);
	cr_assert_eq(out.ints->dtype, PASCO_I32);
	for (int64_t i = 0; i < 2; i++) {
		cr_assert_eq(pasco_tensor_get(out.ints, i),
		    trunc(pasco_tensor_get(x, i)));
	}
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(ix);
}

/* Keras's cross-entropies of a softmax or sigmoid output go through its
 * logits: no clipping at 1e-7, so a confident wrong prediction costs its
 * full logit (40), not -log(1e-7) = 16.1. Any other probabilities are
 * clipped. */
Test(graph_ops, cross_entropies_of_softmax_and_sigmoid_outputs_use_logits)
{
	const pasci_graph_op *sce =
	    pasci_graph_op_named("sparse_categorical_crossentropy");
	const pasci_graph_op *bce =
	    pasci_graph_op_named("binary_crossentropy");
	pasco_tape       *tp;
	pasco_tensor     *z  = rnd(PASCO_F64, 2, (int64_t[]){1, 2}, 1, 0, 0);
	pasco_tensor     *y  = ids_of(1, (int64_t[]){1}, (int64_t[]){1});
	pasco_tensor     *y0 = rnd(PASCO_F64, 1, (int64_t[]){1}, 1, 0, 0);
	pasci_graph_attrs a  = {.dtype = PASCO_F64};
	pasci_gval        out;
	pasco_tnode      *zn, *p;
	pasco_tensor_set(z, 0, 40);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	zn = pasco_tape_constant(tp, z);
	p  = pasco_t_softmax(tp, zn);
	cr_assert(sce->run(
	    tp, 2, (pasci_gval[]){{.ints = y}, {.node = p}}, &a, &out));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(out.node), 0), 40, 1e-9);
	p = pasco_t_softmax_axis(tp, zn, -1);
	cr_assert(sce->run(
	    tp, 2, (pasci_gval[]){{.ints = y}, {.node = p}}, &a, &out));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(out.node), 0), 40, 1e-9);
	p = pasco_t_add(tp, p, pasco_t_scale(tp, p, 0)); /* not a softmax */
	cr_assert(sce->run(
	    tp, 2, (pasci_gval[]){{.ints = y}, {.node = p}}, &a, &out));
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(out.node), 0),
	    -log(1e-7), 1e-6);
	p = pasco_t_sigmoid(tp, pasco_t_reshape(tp, zn, 1, (int64_t[]){2}));
	cr_assert(bce->run(tp, 2,
	    (pasci_gval[]){{.node = pasco_tape_constant(tp, y0)},
	        {.node =
	                pasco_t_slice(tp, p, (int64_t[]){0}, (int64_t[]){1})}},
	    &a, &out));
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(out.node), 0),
	    -log(1e-7), 1e-6, "a slice of a sigmoid is clipped");
	cr_assert(bce->run(tp, 2,
	    (pasci_gval[]){{.node = pasco_tape_constant(tp, y0)},
	        {.node = pasco_t_sigmoid(
	             tp, pasco_t_slice(
	                     tp, zn, (int64_t[]){0, 0}, (int64_t[]){1, 1}))}},
	    &a, &out));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(out.node), 0), 40, 1e-9);
	pasco_tape_free(tp);
	pasco_tensor_release(z);
	pasco_tensor_release(y);
	pasco_tensor_release(y0);
}

/* logit and log_probs (a per-example cross-entropy's, Keras's): of a
 * sigmoid's or softmax's output, the logits themselves (a logit of 40,
 * not log(1 - 1e-7) - log(1e-7) = 16.1); of other probabilities, clipped
 * to [1e-7, 1 - 1e-7]. */
Test(graph_ops, logit_and_log_probs_of_sigmoid_and_softmax_use_logits)
{
	const pasci_graph_op *logit = pasci_graph_op_named("logit");
	const pasci_graph_op *lp    = pasci_graph_op_named("log_probs");
	pasco_tape           *tp;
	pasco_tensor     *z = rnd(PASCO_F64, 2, (int64_t[]){1, 2}, 1, 0, 0);
	pasci_graph_attrs a = {.dtype = PASCO_F64};
	pasci_gval        out;
	pasco_tnode      *zn, *p;
	cr_assert_not_null(logit);
	cr_assert_not_null(lp);
	pasco_tensor_set(z, 0, 40);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	zn = pasco_tape_constant(tp, z);
	p  = pasco_t_sigmoid(tp, zn);
	cr_assert(logit->run(tp, 1, (pasci_gval[]){{.node = p}}, &a, &out));
	cr_assert_eq(out.node, zn, "logit of a sigmoid: its input node");
	p = pasco_t_add(tp, p, pasco_t_scale(tp, p, 0)); /* not a sigmoid */
	cr_assert(logit->run(tp, 1, (pasci_gval[]){{.node = p}}, &a, &out));
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(out.node), 0),
	    log(1 - 1e-7) - log(1e-7), 1e-6);
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(out.node), 1), 0, 1e-12);
	p = pasco_t_softmax_axis(tp, zn, -1);
	cr_assert(lp->run(tp, 1, (pasci_gval[]){{.node = p}}, &a, &out));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(out.node), 1), -40, 1e-9);
	p = pasco_t_add(tp, p, pasco_t_scale(tp, p, 0)); /* not a softmax */
	cr_assert(lp->run(tp, 1, (pasci_gval[]){{.node = p}}, &a, &out));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(out.node), 1), log(1e-7), 1e-9);
	/* a scalar has no last axis: refused with the tape's message */
	p = pasco_t_reduce_sum_axes(tp, zn, 0, NULL, false);
	cr_assert_not(lp->run(tp, 1, (pasci_gval[]){{.node = p}}, &a, &out));
	cr_assert_not_null(strstr(pasco_tape_message(tp), "axis"), "%s",
	    pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(z);
}
