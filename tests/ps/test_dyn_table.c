/*
 * Dynamic embedding tables (ps/dyn_table.h) in one process: rows made on
 * first touch from a per-key initializer, admission after a count,
 * eviction by age and by cap (exact counts), the optimizers on rows with
 * slots made and reset with them, and the state a checkpoint takes.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "dyn_table.h"
#include "store.h"

TestSuite(dyn_table, .timeout = 60);

#define DIM 4

static pasci_dyn_config
config(void)
{
	return (pasci_dyn_config){
	    .dim = DIM, .init = pasco_init_uniform(-0.05, 0.05, 7)};
}

static pasci_dyn_table *
table(pasci_dyn_set **set, const pasci_dyn_config *c)
{
	char err[256] = "";
	cr_assert_eq(pasci_dyn_set_create(set), 0);
	cr_assert_eq(
	    pasci_dyn_add(*set, "emb", c, err, sizeof(err)), 0, "%s", err);
	return pasci_dyn_find(*set, "emb");
}

static void
lookup(pasci_dyn_table *t, bool insert, int64_t n, const int64_t *keys,
    float *out)
{
	char err[256] = "";
	cr_assert_eq(
	    pasci_dyn_lookup(t, keys, n, insert, out, err, sizeof(err)), 0,
	    "%s", err);
}

static pasci_dyn_stats
stats(pasci_dyn_table *t)
{
	pasci_dyn_stats s;
	pasci_dyn_stats_of(t, &s);
	return s;
}

/* Applies a gradient of g in every element to keys at step. */
static void
apply(pasci_dyn_table *t, const pasco_optimizer *opt, int64_t n,
    const int64_t *keys, float g, int64_t step)
{
	pasco_tensor *grad;
	char          err[256] = "";
	cr_assert_eq(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){n, DIM}), 0);
	for (int64_t i = 0; i < n * DIM; i++) {
		((float *) grad->data)[i] = g;
	}
	cr_assert_eq(
	    pasci_dyn_apply(t, opt, keys, n, grad, step, err, sizeof(err)), 0,
	    "%s", err);
	pasco_tensor_release(grad);
}

static bool
has_row(pasci_dyn_table *t, int64_t key)
{
	pasci_dyn_state s;
	bool            found = false;
	cr_assert_eq(pasci_dyn_export(t, &s), 0);
	for (int64_t i = 0; i < s.keys->shape[0]; i++) {
		found = found || ((int64_t *) s.keys->data)[i] == key;
	}
	pasci_dyn_state_fini(&s);
	return found;
}

Test(dyn_table, rows_are_made_on_first_touch_from_the_key_alone)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t = table(&set, &c);
	/* any 64 bits but -1 (padding): a key past 2^63 is a negative i64 */
	int64_t keys[3] = {5, (int64_t) 0x8000000000000001ULL, -2};
	float   rows[3 * DIM], again[3 * DIM], want[DIM];

	lookup(t, true, 3, keys, rows);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(pasci_initializer_fill_key(&c.init,
		                 pasci_dyn_name_seed("emb"),
		                 (uint64_t) keys[k], want, DIM),
		    0);
		cr_assert_arr_eq(rows + k * DIM, want, sizeof(want));
		for (int j = 0; j < DIM; j++) {
			cr_assert(fabsf(want[j]) <= 0.05f && want[j] != 0);
		}
	}
	cr_assert_eq(stats(t).created, 3);
	lookup(t, true, 3, keys, again);
	cr_assert_arr_eq(rows, again, sizeof(rows));
	cr_assert_eq(stats(t).created, 3);
	cr_assert_eq(stats(t).rows, 3);
	pasci_dyn_set_destroy(set);
}

Test(dyn_table, unseen_keys_in_evaluation_read_the_default_without_insert)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set, *zset;
	pasci_dyn_table *t   = table(&set, &c), *z;
	int64_t          key = 99;
	float            row[DIM], want[DIM], zeros[DIM] = {0};

	lookup(t, false, 1, &key, row);
	pasci_initializer_fill_key(
	    &c.init, pasci_dyn_name_seed("emb"), 99, want, DIM);
	cr_assert_arr_eq(row, want, sizeof(row));
	cr_assert_eq(stats(t).rows, 0);
	cr_assert_eq(stats(t).created, 0);

	c.default_zeros = true;
	z               = table(&zset, &c);
	lookup(z, false, 1, &key, row);
	cr_assert_arr_eq(row, zeros, sizeof(row));
	cr_assert_eq(stats(z).rows, 0);
	pasci_dyn_set_destroy(set);
	pasci_dyn_set_destroy(zset);
}

Test(dyn_table, a_key_gets_its_row_at_the_admission_count)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	int64_t          key = 42;
	float            row[DIM], zeros[DIM] = {0};
	pasco_optimizer  sgd = pasco_sgd(0.5, 0, false);
	c.min_count          = 3;
	c.default_zeros      = true;
	t                    = table(&set, &c);

	for (int i = 1; i <= 2; i++) {
		lookup(t, true, 1, &key, row);
		cr_assert_arr_eq(row, zeros, sizeof(row));
		cr_assert_eq(stats(t).refused, i);
		cr_assert_eq(stats(t).pending, 1);
		cr_assert_eq(stats(t).rows, 0);
		/* a gradient for a key without a row changes nothing */
		apply(t, &sgd, 1, &key, 1.0f, 0);
	}
	lookup(t, true, 1, &key, row);
	cr_assert_eq(stats(t).rows, 1);
	cr_assert_eq(stats(t).pending, 0);
	cr_assert_eq(stats(t).refused, 2);
	cr_assert(row[0] != 0, "an admitted key reads its own row");
	pasci_dyn_set_destroy(set);
}

Test(dyn_table, rows_unseen_for_evict_after_steps_go)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	int64_t          a = 1, b = 2;
	float            row[DIM];
	pasco_optimizer  sgd = pasco_sgd(0.1, 0, false);
	c.evict_after        = 2;
	t                    = table(&set, &c);

	lookup(t, true, 1, &a, row);
	apply(t, &sgd, 1, &a, 1, 1);
	lookup(t, true, 1, &b, row);
	apply(t, &sgd, 1, &b, 1, 2);
	apply(t, &sgd, 1, &b, 1, 3);
	cr_assert(has_row(t, a), "3 - 1 = 2 steps unseen: kept");
	apply(t, &sgd, 1, &b, 1, 4);
	cr_assert_not(has_row(t, a), "3 steps unseen: evicted");
	cr_assert(has_row(t, b));
	cr_assert_eq(stats(t).evicted_age, 1);
	cr_assert_eq(stats(t).rows, 1);
	cr_assert_eq(stats(t).step, 4);
	pasci_dyn_set_destroy(set);
}

Test(dyn_table, at_the_cap_the_least_recently_used_row_goes)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	float            row[DIM];
	c.max_rows = 3;
	t          = table(&set, &c);

	for (int64_t k = 1; k <= 5; k++) {
		lookup(t, true, 1, &k, row);
	}
	cr_assert_eq(stats(t).rows, 3);
	cr_assert_eq(stats(t).evicted_cap, 2);
	cr_assert(!has_row(t, 1) && !has_row(t, 2) && has_row(t, 3));
	int64_t three = 3, six = 6;
	lookup(t, true, 1, &three, row); /* 3 is now the most recent */
	lookup(t, true, 1, &six, row);   /* so 4 goes */
	cr_assert(
	    has_row(t, 3) && !has_row(t, 4) && has_row(t, 5) && has_row(t, 6));
	cr_assert_eq(stats(t).evicted_cap, 3);
	cr_assert_eq(stats(t).created, 6);
	pasci_dyn_set_destroy(set);
}

/* 60,000 random keys through a table capped at 5,000: the last 5,000
 * inserted are there with their own rows, none of the others is (the
 * key map's deletions keep every probe chain whole). */
Test(dyn_table, many_keys_through_a_capped_table)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	enum { N = 60000, CAP = 5000 };
	int64_t        *keys = malloc(sizeof(int64_t) * N);
	float          *rows = malloc(sizeof(float) * DIM * CAP), want[DIM];
	uint64_t        x    = 12345;
	pasci_dyn_state s;
	c.max_rows = CAP;
	t          = table(&set, &c);
	for (int i = 0; i < N; i++) {
		x       = x * 6364136223846793005ULL + 1442695040888963407ULL;
		keys[i] = (int64_t) (x ^ (x >> 29));
		lookup(t, true, 1, &keys[i], want);
	}
	cr_assert_eq(stats(t).rows, CAP);
	cr_assert_eq(stats(t).evicted_cap, N - CAP);
	lookup(t, false, CAP, keys + N - CAP, rows);
	cr_assert_eq(stats(t).rows, CAP);
	cr_assert_eq(pasci_dyn_export(t, &s), 0);
	cr_assert_eq(s.keys->shape[0], CAP);
	for (int i = 0; i < CAP; i++) {
		/* most recent first */
		cr_assert_eq(((int64_t *) s.keys->data)[i], keys[N - 1 - i]);
	}
	pasci_dyn_state_fini(&s);
	pasci_dyn_set_destroy(set);
	free(keys);
	free(rows);
}

static int
copy_value(void *arg, const pasco_tensor *value)
{
	return pasco_tensor_copy((pasco_tensor **) arg, value);
}

/* A dynamic row moves exactly as the same row of a fixed table with the
 * same values does, under each of the six optimizers (Adam's t the
 * global step). */
static void
matches_a_fixed_row(const pasco_optimizer *opt)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t = table(&set, &c);
	ps_store        *st;
	pasco_tensor    *init, *ids, *grad, *fixed_row;
	int64_t          key = 77;
	float            row[DIM];
	char             err[256] = "";

	lookup(t, true, 1, &key, row);
	cr_assert_eq(
	    pasco_tensor_alloc(&init, PASCO_F32, 2, (int64_t[]){1, DIM}), 0);
	memcpy(init->data, row, sizeof(row));
	cr_assert_eq(pasci_store_create(&st), 0);
	cr_assert_eq(
	    pasci_store_var_create(st, "fixed", init, err, sizeof(err)), 0);
	cr_assert_eq(
	    pasco_tensor_alloc(&ids, PASCO_I64, 1, (int64_t[]){1}), 0);
	cr_assert_eq(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){1, DIM}), 0);
	for (int step = 1; step <= 4; step++) {
		for (int j = 0; j < DIM; j++) {
			((float *) grad->data)[j] =
			    0.1f * (float) (j + step) * (step % 2 ? 1 : -1);
		}
		cr_assert_eq(pasci_dyn_apply(t, opt, &key, 1, grad, 10 + step,
		                 err, sizeof(err)),
		    0, "%s", err);
		cr_assert_eq(pasci_store_var_apply_sparse_at(st, "fixed", opt,
		                 ids, grad, 10 + step, NULL, err, sizeof(err)),
		    0, "%s", err);
	}
	lookup(t, false, 1, &key, row);
	cr_assert_eq(pasci_store_var_with(st, "fixed", copy_value, &fixed_row,
	                 err, sizeof(err)),
	    0);
	cr_assert_arr_eq(row, fixed_row->data, sizeof(row),
	    "optimizer kind %d", (int) opt->kind);
	cr_assert(memcmp(row, init->data, sizeof(row)) != 0, "no update");
	pasco_tensor_release(fixed_row);
	pasci_store_destroy(st);
	pasco_tensor_release(init);
	pasco_tensor_release(ids);
	pasco_tensor_release(grad);
	pasci_dyn_set_destroy(set);
}

Test(dyn_table, each_optimizer_on_a_row_matches_a_fixed_tables_row)
{
	pasco_optimizer opts[] = {pasco_sgd(0.1, 0, false),
	    pasco_sgd(0.1, 0.9, true), pasco_adagrad(0.1),
	    pasco_rmsprop(0.01, 0.9, 0.5, true), pasco_adam(0.01, false),
	    pasco_adam(0.01, true), pasco_ftrl(0.5, 0.01, 0.01)};
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++) {
		matches_a_fixed_row(&opts[i]);
	}
}

Test(dyn_table, a_remade_row_starts_its_slots_again)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	pasco_optimizer  ada = pasco_adagrad(0.1); /* accumulator from 0.1 */
	int64_t          a = 1, b = 2;
	float            row[DIM];
	pasci_dyn_state  s;
	c.max_rows = 1;
	t          = table(&set, &c);

	lookup(t, true, 1, &a, row);
	apply(t, &ada, 1, &a, 2.0f, 0); /* accumulator 0.1 + 4 */
	cr_assert_eq(pasci_dyn_export(t, &s), 0);
	cr_assert_eq(s.kind, PASCO_OPT_ADAGRAD);
	cr_assert_float_eq(((float *) s.slot[0]->data)[0], 4.1f, 1e-5);
	pasci_dyn_state_fini(&s);
	lookup(t, true, 1, &b, row); /* evicts a; b takes its row */
	lookup(t, true, 1, &a, row); /* evicts b; a is made again */
	cr_assert_eq(pasci_dyn_export(t, &s), 0);
	cr_assert_eq(((int64_t *) s.keys->data)[0], a);
	cr_assert_float_eq(((float *) s.slot[0]->data)[0], 0.1f, 1e-7);
	pasci_dyn_state_fini(&s);
	pasci_dyn_set_destroy(set);
}

Test(dyn_table, bad_updates_change_nothing)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t    = table(&set, &c);
	pasco_optimizer  sgd  = pasco_sgd(0.1, 0.9, false);
	pasco_optimizer  adam = pasco_adam(0.1, false);
	pasco_tensor    *grad;
	int64_t          k = 3;
	float            before[DIM], after[DIM];
	char             err[256] = "";

	lookup(t, true, 1, &k, before);
	apply(t, &sgd, 1, &k, 1, 0);
	lookup(t, false, 1, &k, before);
	cr_assert_eq(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){1, DIM}), 0);
	cr_assert_eq(
	    pasci_dyn_apply(t, &adam, &k, 1, grad, 0, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "SGD slots") != NULL, "%s", err);
	pasco_tensor_release(grad);
	cr_assert_eq(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){1, DIM + 1}),
	    0);
	cr_assert_eq(
	    pasci_dyn_apply(t, &sgd, &k, 1, grad, 0, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "f32 [1, 4]") != NULL, "%s", err);
	pasco_tensor_release(grad);
	lookup(t, false, 1, &k, after);
	cr_assert_arr_eq(before, after, sizeof(before));

	c.init = pasco_init_glorot_uniform(1);
	cr_assert_eq(
	    pasci_dyn_config_check(&c, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(strstr(err, "Glorot") != NULL, "%s", err);
	c     = config();
	c.dim = 0;
	cr_assert_eq(
	    pasci_dyn_config_check(&c, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(strstr(err, "dim") != NULL, "%s", err);
	c     = config();
	c.dim = 8;
	cr_assert_eq(
	    pasci_dyn_add(set, "emb", &c, err, sizeof(err)), PASCO_EEXIST);
	cr_assert(strstr(err, "dim 4") != NULL, "%s", err);
	pasci_dyn_set_destroy(set);
}

static bool
odd_keys(void *arg, uint64_t key)
{
	(void) arg;
	return key % 2 == 1;
}

/* The state a checkpoint takes restores the same table: keys, rows,
 * slots, steps and pending counts bit for bit; with a filter, only its
 * share. */
Test(dyn_table, its_state_restores_it_bit_for_bit)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set, *set2, *set3;
	pasci_dyn_table *t, *u, *w;
	pasco_optimizer  adam    = pasco_adam(0.01, true);
	int64_t          keys[6] = {1, 2, 3, 4, 5, 6}, rare = 1000;
	float            row[6 * DIM];
	pasci_dyn_state  s, r;
	char             err[256] = "";
	c.min_count               = 2;
	t                         = table(&set, &c);

	lookup(t, true, 6, keys, row);
	lookup(t, true, 6, keys, row);
	lookup(t, true, 1, &rare, row);
	apply(t, &adam, 6, keys, 0.5f, 7);
	apply(t, &adam, 3, keys, -0.25f, 8);
	cr_assert_eq(pasci_dyn_export(t, &s), 0);
	cr_assert_eq(s.keys->shape[0], 6);
	cr_assert_eq(s.pending_keys->shape[0], 1);
	cr_assert_eq(((int64_t *) s.pending_counts->data)[0], 1);

	u = table(&set2, &c);
	cr_assert_eq(
	    pasci_dyn_import(u, &s, NULL, NULL, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(pasci_dyn_export(u, &r), 0);
	cr_assert_arr_eq(r.keys->data, s.keys->data, s.keys->nbytes);
	cr_assert_arr_eq(r.values->data, s.values->data, s.values->nbytes);
	cr_assert_arr_eq(
	    r.last_step->data, s.last_step->data, s.last_step->nbytes);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(r.slot[k] != NULL, s.slot[k] != NULL);
		if (s.slot[k] != NULL) {
			cr_assert_arr_eq(r.slot[k]->data, s.slot[k]->data,
			    s.slot[k]->nbytes);
		}
	}
	cr_assert_arr_eq(r.pending_keys->data, s.pending_keys->data, 8);
	cr_assert_eq(r.stats.created, 6);
	cr_assert_eq(r.stats.step, 8);
	cr_assert_eq(r.applies, 2);
	pasci_dyn_state_fini(&r);

	w = table(&set3, &c);
	cr_assert_eq(
	    pasci_dyn_import(w, &s, odd_keys, NULL, false, err, sizeof(err)),
	    0);
	cr_assert_eq(stats(w).rows, 3);
	cr_assert(
	    has_row(w, 1) && has_row(w, 3) && has_row(w, 5) && !has_row(w, 2));
	cr_assert_eq(stats(w).pending, 0, "1000 is even");

	/* a state of another dim is refused whole, before it replaces
	 * anything */
	c.dim       = 2;
	c.min_count = 0;
	pasci_dyn_set_destroy(set3);
	w = table(&set3, &c);
	{
		float   two[2];
		int64_t k9 = 9;
		char    e2[256];
		cr_assert_eq(
		    pasci_dyn_lookup(w, &k9, 1, true, two, e2, sizeof(e2)), 0);
	}
	cr_assert_eq(
	    pasci_dyn_import(w, &s, NULL, NULL, true, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "[n, 2]") != NULL, "%s", err);
	cr_assert_eq(stats(w).rows, 1, "the table is as it was");
	pasci_dyn_state_fini(&s);
	pasci_dyn_set_destroy(set);
	pasci_dyn_set_destroy(set2);
	pasci_dyn_set_destroy(set3);
}

/* Key -1 is padding, as on the tape (model/tape_vars.c skips it): a
 * lookup reads zeros and makes, counts and touches nothing, in training
 * or not, and an update of it changes nothing. */
Test(dyn_table, key_minus_one_is_padding_and_never_gets_a_row)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t       = table(&set, &c);
	pasco_optimizer  sgd     = pasco_sgd(1, 0, false);
	int64_t          keys[2] = {-1, 7};
	float            rows[2 * DIM], zeros[DIM] = {0};
	lookup(t, true, 2, keys, rows);
	cr_assert_arr_eq(rows, zeros, sizeof(zeros));
	cr_assert_eq(stats(t).rows, 1);
	cr_assert_eq(stats(t).created, 1);
	cr_assert_eq(stats(t).refused, 0);
	apply(t, &sgd, 2, keys, 1.0f, 1);
	lookup(t, false, 2, keys, rows);
	cr_assert_arr_eq(rows, zeros, sizeof(zeros));
	cr_assert(!has_row(t, -1));
	pasci_dyn_set_destroy(set);
}

/* The table's name is in its rows' seed: two tables with the same
 * initializer start a key from different rows, each its own name's. */
Test(dyn_table, tables_with_one_initializer_start_a_key_from_their_own_rows)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	int64_t          key = 5;
	float            a[DIM], b[DIM], want[DIM];
	char             err[256] = "";
	cr_assert_eq(pasci_dyn_set_create(&set), 0);
	cr_assert_eq(pasci_dyn_add(set, "users", &c, err, sizeof(err)), 0);
	cr_assert_eq(pasci_dyn_add(set, "items", &c, err, sizeof(err)), 0);
	lookup(pasci_dyn_find(set, "users"), true, 1, &key, a);
	lookup(pasci_dyn_find(set, "items"), true, 1, &key, b);
	cr_assert_arr_neq(a, b, sizeof(a));
	pasci_initializer_fill_key(
	    &c.init, pasci_dyn_name_seed("users"), 5, want, DIM);
	cr_assert_arr_eq(a, want, sizeof(a));
	pasci_initializer_fill_key(
	    &c.init, pasci_dyn_name_seed("items"), 5, want, DIM);
	cr_assert_arr_eq(b, want, sizeof(b));
	pasci_dyn_set_destroy(set);
}

/* Imports cannot pass the bound on keys pending admission that lookups
 * keep (4M; 1,000 here): two imports of 800 pending keys each leave at
 * most 1,000, the rest counting again from their next lookup. */
Test(dyn_table, imports_keep_the_bound_on_pending_keys)
{
	pasci_dyn_config c = config();
	pasci_dyn_set   *set;
	pasci_dyn_table *t;
	pasci_dyn_state  s = {0};
	int64_t          n = 800, zero = 0, two[2] = {0, DIM};
	char             err[256] = "";
	pasci_dyn_pending_max     = 1000;
	c.min_count               = 5;
	t                         = table(&set, &c);
	cr_assert_eq(pasco_tensor_alloc(&s.keys, PASCO_I64, 1, &zero), 0);
	cr_assert_eq(pasco_tensor_alloc(&s.values, PASCO_F32, 2, two), 0);
	cr_assert_eq(pasco_tensor_alloc(&s.last_step, PASCO_I64, 1, &zero), 0);
	cr_assert_eq(pasco_tensor_alloc(&s.pending_keys, PASCO_I64, 1, &n), 0);
	cr_assert_eq(
	    pasco_tensor_alloc(&s.pending_counts, PASCO_I64, 1, &n), 0);
	for (int round = 0; round < 2; round++) {
		for (int64_t i = 0; i < n; i++) {
			((int64_t *) s.pending_keys->data)[i] = round * n + i;
			((int64_t *) s.pending_counts->data)[i] = 1;
		}
		cr_assert_eq(pasci_dyn_import(
		                 t, &s, NULL, NULL, false, err, sizeof(err)),
		    0, "%s", err);
	}
	cr_assert_eq(stats(t).pending, 1000, "%lld keys pending",
	    (long long) stats(t).pending);
	pasci_dyn_state_fini(&s);
	pasci_dyn_set_destroy(set);
}
