/*
 * AdamW's decoupled weight decay on sparse applies. Keras decays the
 * whole variable on every apply (w -= w * weight_decay * lr, before the
 * update), also when the gradient is sparse: a fixed variable's shard is
 * decayed whole by each sparse apply, every shard takes each apply, rows
 * or none, and a dynamic table decays its rows lazily; each against a
 * reference written here from Keras's formulas, in double.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "dyn_table.h"
#include "store.h"
#include "store_read.h"

TestSuite(adamw, .timeout = 30);

#define ROWS 6
#define DIM 3
#define STEPS 6

/* The gradient of element e at apply t. */
static double
grad_at(int t, int e)
{
	return 0.3 * sin(1.7 * t + e) + 0.05 * (e % 3 - 1);
}

/* One element as Keras updates it, in double. */
typedef struct ref {
	double w, m, v, vh;
} ref;

/* The learning rate of apply t (1, 2, ...): the schedule's at t - 1. */
static double
lr_at(const pasco_optimizer *o, int t)
{
	return pasco_lr_schedule_at(&o->schedule, t - 1, o->learning_rate);
}

/* Apply t on e: the decay, then (when it has a gradient) Adam's update
 * with the shard's count t. */
static void
ref_step(ref *r, const pasco_optimizer *o, int t, bool has_grad, double g)
{
	double lr = lr_at(o, t);
	r->w      = r->w - r->w * o->weight_decay * lr;
	if (has_grad) {
		double alpha =
		    lr * sqrt(1 - pow(o->beta_2, t)) / (1 - pow(o->beta_1, t));
		r->m += (g - r->m) * (1 - o->beta_1);
		r->v += (g * g - r->v) * (1 - o->beta_2);
		r->vh = fmax(r->vh, r->v);
		r->w -= alpha * r->m /
		        (sqrt(o->amsgrad ? r->vh : r->v) + o->epsilon);
	}
}

static bool
touched(const int64_t *ids, int n, int64_t row)
{
	for (int k = 0; k < n; k++) {
		if (ids[k] == row) {
			return true;
		}
	}
	return false;
}

/* Two variables start equal; one takes dense gradients (zero rows but
 * ids'), the other the same rows as sparse applies. */
static void
check_dense_equals_sparse(pasco_optimizer o, const char *what)
{
	static const int64_t ids_list[] = {1, 4};
	ps_store            *s;
	pasco_tensor        *w0, *ids, *rows, *dense, *a, *b;
	ref                  r[ROWS * DIM] = {{0}};
	char                 err[256];
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(
	    pasco_tensor_alloc(&w0, PASCO_F32, 2, (int64_t[]){ROWS, DIM}));
	for (int e = 0; e < ROWS * DIM; e++) {
		pasco_tensor_set(w0, e, 0.5 + 0.25 * e);
		r[e].w = (float) (0.5 + 0.25 * e);
	}
	PASCO_PASS(pasci_store_var_create(s, "dense", w0, err, sizeof(err)));
	PASCO_PASS(pasci_store_var_create(s, "sparse", w0, err, sizeof(err)));
	PASCO_PASS(pasco_tensor_from(
	    &ids, PASCO_I64, 1, (int64_t[]){2}, ids_list, sizeof(ids_list)));
	PASCO_PASS(
	    pasco_tensor_alloc(&rows, PASCO_F32, 2, (int64_t[]){2, DIM}));
	PASCO_PASS(
	    pasco_tensor_alloc(&dense, PASCO_F32, 2, (int64_t[]){ROWS, DIM}));
	for (int t = 1; t <= STEPS; t++) {
		memset(dense->data, 0, dense->nbytes);
		for (int k = 0; k < 2; k++) {
			for (int j = 0; j < DIM; j++) {
				int   e = (int) ids_list[k] * DIM + j;
				float g = (float) grad_at(t, e);
				pasco_tensor_set(rows, k * DIM + j, g);
				pasco_tensor_set(dense, e, g);
			}
		}
		for (int e = 0; e < ROWS * DIM; e++) {
			ref_step(&r[e], &o, t, touched(ids_list, 2, e / DIM),
			    pasco_tensor_get(dense, e));
		}
		PASCO_PASS(pasci_store_var_apply(
		    s, "dense", &o, dense, err, sizeof(err)));
		PASCO_PASS(pasci_store_var_apply_sparse(
		    s, "sparse", &o, ids, rows, err, sizeof(err)));
	}
	a = read_var(s, "dense");
	b = read_var(s, "sparse");
	for (int e = 0; e < ROWS * DIM; e++) {
		double x = pasco_tensor_get(a, e), y = pasco_tensor_get(b, e);
		/* the same f32 operations: the same bits */
		cr_assert(x == y,
		    "%s: element %d (row %d): dense %.9g, sparse "
		    "%.9g",
		    what, e, e / DIM, x, y);
		cr_assert(fabs(y - r[e].w) <= 2e-6 * (1 + fabs(r[e].w)),
		    "%s: element %d (row %d): %.9g, Keras's %.9g", what, e,
		    e / DIM, y, r[e].w);
	}
	pasco_tensor_release(a);
	pasco_tensor_release(b);
	pasco_tensor_release(dense);
	pasco_tensor_release(rows);
	pasco_tensor_release(ids);
	pasco_tensor_release(w0);
	pasci_store_destroy(s);
}

/* Rows 1 and 4 of a 6x3 variable get sparse applies; rows 0, 2, 3 and 5
 * must decay as under dense applies (before: they kept their values). */
Test(adamw, sparse_applies_decay_every_row_as_dense_ones)
{
	pasco_optimizer o = pasco_adamw(0.05, 0.1, false);
	check_dense_equals_sparse(o, "AdamW");
	o = pasco_adamw(0.05, 0.3, true);
	check_dense_equals_sparse(o, "AdamW amsgrad");
	o.schedule = pasco_exponential_decay(0.2, 2, 0.5, false);
	check_dense_equals_sparse(o, "AdamW with ExponentialDecay");
	/* lr * weight_decay > 1: Keras's formula as it is */
	check_dense_equals_sparse(pasco_adamw(1, 1.5, false), "AdamW past 1");
}

/* A dynamic table of the keys 10..15 (and 20, made at apply 4); keys 11
 * and 14 are updated at each apply. */
#define NKEYS 6

static pasci_dyn_table *
dyn_table(pasci_dyn_set **set)
{
	pasci_dyn_config c = {
	    .dim = DIM, .init = pasco_init_uniform(-1, 1, 5)};
	char err[256] = "";
	PASCO_PASS(pasci_dyn_set_create(set));
	cr_assert_eq(
	    pasci_dyn_add(*set, "emb", &c, err, sizeof(err)), 0, "%s", err);
	return pasci_dyn_find(*set, "emb");
}

static void
dyn_read(pasci_dyn_table *t, int n, const int64_t *keys, float *out)
{
	char err[256] = "";
	PASCO_PASS(pasci_dyn_lookup(t, keys, n, true, out, err, sizeof(err)));
}

/* Keys 11 and 14 are updated at each apply, or with alternate set, 11 at
 * odd applies and 14 at even ones. */
static bool alternate;

static bool
updated(int64_t key, int apply)
{
	return alternate ? key == (apply % 2 ? 11 : 14)
	                 : key == 11 || key == 14;
}

static void
dyn_step(pasci_dyn_table *t, const pasco_optimizer *o, int apply)
{
	const int64_t both[] = {11, 14}, *upd = both;
	int           n = 2;
	pasco_tensor *g;
	char          err[256] = "";
	if (alternate) {
		upd = apply % 2 ? both : both + 1;
		n   = 1;
	}
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 2, (int64_t[]){n, DIM}));
	for (int k = 0; k < n; k++) {
		for (int j = 0; j < DIM; j++) {
			pasco_tensor_set(g, k * DIM + j,
			    (float) grad_at(apply, (int) upd[k] * DIM + j));
		}
	}
	cr_assert_eq(pasci_dyn_apply(t, o, upd, n, g, 0, err, sizeof(err)), 0,
	    "%s", err);
	pasco_tensor_release(g);
}

/* The reference of key's element j at apply t. */
static void
ref_dyn_step(ref *r, const pasco_optimizer *o, int t, int64_t key, int j)
{
	bool upd = updated(key, t);
	ref_step(
	    r, o, t, upd, upd ? (float) grad_at(t, (int) key * DIM + j) : 0);
}

static void
check_rows(const char *what, int n, const int64_t *keys, const float *got,
    const ref *want, double tol)
{
	for (int i = 0; i < n * DIM; i++) {
		cr_assert(
		    fabs(got[i] - want[i].w) <= tol * (1 + fabs(want[i].w)),
		    "%s: key %lld element %d: %.9g, Keras's %.9g", what,
		    (long long) keys[i / DIM], i % DIM, got[i], want[i].w);
	}
}

/* Keras decays the whole table at each apply: rows not updated too. A
 * dynamic table does it lazily; every value seen (a lookup, a checkpoint's
 * export, after a restore) is the eager one to f32 rounding. Before, only
 * keys 11 and 14 decayed. */
Test(adamw, a_dynamic_table_decays_every_row_lazily_checkpoints_included)
{
	static const int64_t keys[NKEYS + 1] = {10, 11, 12, 13, 14, 15, 20};
	pasco_optimizer      o               = pasco_adamw(0.05, 0.4, false);
	pasci_dyn_set       *set, *set2 = NULL;
	pasci_dyn_table     *t, *t2     = NULL;
	pasci_dyn_state      st;
	float                got[(NKEYS + 1) * DIM], got2[(NKEYS + 1) * DIM];
	ref                  r[(NKEYS + 1) * DIM] = {{0}};
	char                 err[256]             = "";
	o.schedule = pasco_inverse_time_decay(0.3, 1, 0.5, false);
	t          = dyn_table(&set);
	dyn_read(t, NKEYS, keys, got);
	for (int i = 0; i < NKEYS * DIM; i++) {
		r[i].w = got[i];
	}
	for (int a = 1; a <= 8; a++) {
		if (a == 4) { /* a row made now starts at its initializer */
			dyn_read(t, 1, keys + NKEYS, got + NKEYS * DIM);
			for (int j = 0; j < DIM; j++) {
				r[NKEYS * DIM + j].w = got[NKEYS * DIM + j];
			}
		}
		dyn_step(t, &o, a);
		for (int i = 0; i < (a >= 4 ? NKEYS + 1 : NKEYS) * DIM; i++) {
			ref_dyn_step(&r[i], &o, a, keys[i / DIM], i % DIM);
		}
		if (a == 5) {
			/* a checkpoint between applies: the export brings
			 * every row up to date */
			PASCO_PASS(pasci_dyn_export(t, &st));
			cr_assert_eq(st.keys->shape[0], NKEYS + 1);
			for (int64_t k = 0; k < st.keys->shape[0]; k++) {
				int64_t key = ((int64_t *) st.keys->data)[k];
				int     i   = 0;
				while (keys[i] != key) {
					i++;
				}
				check_rows("the checkpoint", 1, keys + i,
				    (float *) st.values->data + k * DIM,
				    &r[i * DIM], 2e-6);
			}
			/* restored into a table of its own */
			t2 = dyn_table(&set2);
			cr_assert_eq(pasci_dyn_import(t2, &st, NULL, NULL,
			                 true, err, sizeof(err)),
			    0, "%s", err);
			pasci_dyn_state_fini(&st);
		}
		if (a > 5) {
			dyn_step(t2, &o, a);
		}
	}
	dyn_read(t, NKEYS + 1, keys, got);
	check_rows("after 8 applies", NKEYS + 1, keys, got, r, 4e-6);
	dyn_read(t2, NKEYS + 1, keys, got2);
	check_rows("restored after apply 5", NKEYS + 1, keys, got2, r, 4e-6);
	pasci_dyn_set_destroy(set);
	pasci_dyn_set_destroy(set2);
}

/* A table's product of factors starts again before it loses precision
 * (a factor of 0.5 over 1200 applies is 2^-1200: subnormal, then 0, where
 * a row updated every other apply would be decayed by a ratio of
 * subnormals, then not at all), and a factor that is not positive
 * (lr * weight_decay >= 1) decays every row at once: values stay
 * Keras's. */
Test(adamw, long_and_negative_decays_stay_exact_on_a_dynamic_table)
{
	static const int64_t keys[NKEYS] = {10, 11, 12, 13, 14, 15};
	pasco_optimizer      o           = pasco_adamw(0.5, 1, false);
	alternate                        = true;
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	float            got[NKEYS * DIM];
	ref              r[NKEYS * DIM] = {{0}};
	t                               = dyn_table(&set);
	dyn_read(t, NKEYS, keys, got);
	for (int i = 0; i < NKEYS * DIM; i++) {
		r[i].w = got[i];
	}
	for (int a = 1; a <= 1200; a++) {
		dyn_step(t, &o, a);
		for (int i = 0; i < NKEYS * DIM; i++) {
			ref_dyn_step(&r[i], &o, a, keys[i / DIM], i % DIM);
		}
	}
	dyn_read(t, NKEYS, keys, got);
	check_rows("factor 0.5, 1200 applies", NKEYS, keys, got, r, 1e-5);
	pasci_dyn_set_destroy(set);
	alternate = false;

	o = pasco_adamw(1, 1.5, false); /* a factor of -0.5 */
	t = dyn_table(&set);
	dyn_read(t, NKEYS, keys, got);
	for (int i = 0; i < NKEYS * DIM; i++) {
		r[i] = (ref){.w = got[i]};
	}
	for (int a = 1; a <= 5; a++) {
		dyn_step(t, &o, a);
		for (int i = 0; i < NKEYS * DIM; i++) {
			ref_dyn_step(&r[i], &o, a, keys[i / DIM], i % DIM);
		}
	}
	dyn_read(t, NKEYS, keys, got);
	check_rows("factor -0.5", NKEYS, keys, got, r, 2e-6);
	pasci_dyn_set_destroy(set);
}

/* Through a strategy on 2 ps: every shard of a fixed table and every ps
 * of a dynamic one takes each AdamW apply, rows or none, so rows on a
 * shard the gradient does not reach decay too (before: the client sent a
 * shard only its rows, and those shards kept their values). */
Test(adamw, every_shard_and_ps_decays_on_a_strategys_sparse_applies)
{
	test_cluster          tc;
	pasco_strategy       *s;
	pasco_variable       *fixed, *dyn;
	pasco_partitioner     two  = pasco_fixed_shards_partitioner(2);
	pasco_initializer     ones = pasco_init_ones();
	pasco_dynamic_options dopt = {.dim = 2, .initializer = ones};
	pasco_optimizer       o    = pasco_adamw(0.1, 0.2, false);
	pasco_tensor         *ids, *keys, *g, *now, *rows;
	int64_t               one  = 1, all[16];
	float                 want = 1;
	test_cluster_start(&tc, 2, 1);
	PASCO_PASS(pasco_strategy_create(&s, tc.cluster, NULL));
	PASCO_PASS(pasco_variable_create_partitioned(
	    &fixed, s, "fixed", PASCO_F32, 2, (int64_t[]){8, 2}, &ones, &two));
	PASCO_PASS(pasco_dynamic_variable_create(&dyn, s, "dyn", &dopt));
	for (int k = 0; k < 16; k++) {
		all[k] = 1000 + 7 * k;
	}
	PASCO_PASS(pasco_tensor_from(
	    &keys, PASCO_I64, 1, (int64_t[]){16}, all, sizeof(all)));
	PASCO_PASS(pasco_variable_gather(dyn, keys, &rows)); /* made */
	pasco_tensor_release(rows);
	PASCO_PASS(pasco_tensor_from(
	    &ids, PASCO_I64, 1, (int64_t[]){1}, &one, sizeof(one)));
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 2, (int64_t[]){1, 2}));
	pasco_tensor_set(g, 0, 0.5);
	pasco_tensor_set(g, 1, -0.5);
	for (int t = 1; t <= 4; t++) {
		PASCO_PASS(
		    pasco_variable_apply_gradient_sparse(fixed, &o, ids, g));
		/* the dynamic table's gradient reaches key 1000 only */
		pasco_tensor *k0;
		PASCO_PASS(pasco_tensor_from(&k0, PASCO_I64, 1, (int64_t[]){1},
		    &all[0], sizeof(all[0])));
		PASCO_PASS(
		    pasco_variable_apply_gradient_sparse(dyn, &o, k0, g));
		pasco_tensor_release(k0);
		want = want - want * 0.2f * 0.1f;
	}
	PASCO_PASS(pasco_variable_read(fixed, &now));
	for (int e = 0; e < 16; e++) {
		if (e / 2 != 1) {
			cr_assert_float_eq(pasco_tensor_get(now, e), want,
			    1e-6,
			    "fixed: row %d (shard %d): %.9g, Keras's %.9g",
			    e / 2, e / 8, pasco_tensor_get(now, e), want);
		}
	}
	pasco_tensor_release(now);
	PASCO_PASS(pasco_variable_gather(dyn, keys, &rows));
	for (int e = 2; e < 32; e++) {
		cr_assert_float_eq(pasco_tensor_get(rows, e), want, 1e-6,
		    "dynamic: key %lld: %.9g, Keras's %.9g",
		    (long long) all[e / 2], pasco_tensor_get(rows, e), want);
	}
	pasco_tensor_release(rows);
	pasco_tensor_release(keys);
	pasco_tensor_release(ids);
	pasco_tensor_release(g);
	pasco_variable_free(fixed);
	pasco_variable_free(dyn);
	pasco_strategy_destroy(s);
	test_cluster_stop(&tc);
}
