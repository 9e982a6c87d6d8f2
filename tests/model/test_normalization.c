/* Keras's Normalization layer: adapted from a tensor or a dataset to
 * numpy's mean and variance, its variables on the ps (mean, variance,
 * count) untouched by training, the forward pass against numpy's
 * (x - mean) / max(sqrt(var), 1e-7), its gradient against finite
 * differences, functional models and errors. */
#include "tape_check.h"

#include <stdio.h>
#include <unistd.h>

TestSuite(normalization, .timeout = 60);

#define ROWS 500
#define WIDTH 5

/* Columns of other offsets and scales; column 4 varies by 1e-8 only, so
 * Keras's epsilon is what divides it. */
static pasco_tensor *
make_rows(void)
{
	pasco_tensor *t =
	    rnd(PASCO_F32, 2, (int64_t[]){ROWS, WIDTH}, 5, -1, 1);
	float *d = t->data;
	for (int r = 0; r < ROWS; r++) {
		d[r * WIDTH + 0] = 100 + 3 * d[r * WIDTH + 0];
		d[r * WIDTH + 1] = -2 + 0.01f * d[r * WIDTH + 1];
		d[r * WIDTH + 2] = (float) (r % 7);
		d[r * WIDTH + 4] = r % 2 ? 1e-8f : -1e-8f;
	}
	return t;
}

/* numpy's answers for data: mean, variance (ddof 0) and the normalized
 * rows (Keras's formula in float32) of probe. */
static void
numpy_reference(const pasco_tensor *data, const pasco_tensor *probe,
    double *mean, double *var, float *normalized)
{
	char  dir[] = "/tmp/pasco_norm_XXXXXX", path[64], cmd[512];
	FILE *f;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d", dir);
	cr_assert_not_null(f = fopen(path, "wb"));
	fwrite(data->data, 4, (size_t) data->count, f);
	fwrite(probe->data, 4, (size_t) probe->count, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 -c \"import numpy as np, sys\n"
	    "a = np.fromfile('%s', np.float32)\n"
	    "d = a[:%d].reshape(-1, %d); p = a[%d:].reshape(-1, %d)\n"
	    "m = d.astype(np.float64).mean(0); v = "
	    "d.astype(np.float64).var(0)\n"
	    "y = (p - m.astype(np.float32)) / np.maximum("
	    "np.sqrt(v.astype(np.float32)), np.float32(1e-7))\n"
	    "print(' '.join(repr(float(x)) for x in list(m) + list(v) + "
	    "list(y.ravel())))\"",
	    path, ROWS * WIDTH, WIDTH, ROWS * WIDTH, WIDTH);
	/* read everything, then clean up, then judge: a failure leaves
	 * nothing in /tmp */
	int got = 0, want = 2 * WIDTH + (int) probe->count, st = -1;
	if ((f = popen(cmd, "r")) != NULL) {
		for (int j = 0; j < WIDTH && fscanf(f, "%lf", &mean[j]) == 1;
		     j++) {
			got++;
		}
		for (int j = 0; j < WIDTH && fscanf(f, "%lf", &var[j]) == 1;
		     j++) {
			got++;
		}
		for (int64_t i = 0; i < probe->count; i++) {
			double v;
			if (fscanf(f, "%lf", &v) != 1) {
				break;
			}
			normalized[i] = (float) v;
			got++;
		}
		st = pclose(f);
	}
	unlink(path);
	rmdir(dir);
	cr_assert(st == 0 && got == want,
	    "python3 with numpy (python3-numpy; scripts/setup.sh installs "
	    "it) gave %d of %d numbers, status %d",
	    got, want, st);
}

/* The dataset of data's rows in batches of 37, as (x, y) pairs. */
static pasco_dataset *
batches_of(const pasco_tensor *data)
{
	pasco_dataset *ds;
	pasco_tensor  *y;
	PASCO_PASS(pasco_tensor_alloc(&y, PASCO_I64, 1, (int64_t[]){ROWS}));
	pasco_value *v = pasco_value_list(2,
	    pasco_value_tensor(pasco_tensor_hold((pasco_tensor *) data)),
	    pasco_value_tensor(y));
	PASCO_PASS(pasco_dataset_from_tensors(&ds, v));
	pasco_value_free(v);
	PASCO_PASS(pasco_dataset_batch(&ds, ds, 37, false));
	return ds;
}

/* The existing variable name (i64 scalar), by creating it again. */
static pasco_variable *
count_var(pasco_strategy *s, const char *name)
{
	pasco_variable   *v;
	pasco_initializer z = pasco_init_zeros();
	PASCO_PASS(
	    pasco_variable_create_init(&v, s, name, PASCO_I64, 0, NULL, &z));
	return v;
}

static pasco_tensor *
read_var(pasco_variable *v)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_variable_read(v, &t));
	return t;
}

Test(normalization, adapt_gives_numpys_mean_and_variance_on_the_ps)
{
	setup          st;
	pasco_model   *m;
	pasco_tensor  *data = make_rows(), *probe;
	double         mean[WIDTH], var[WIDTH];
	float          want[8 * WIDTH];
	pasco_dataset *ds;
	probe = rnd(PASCO_F32, 2, (int64_t[]){8, WIDTH}, 9, -3, 3);
	numpy_reference(data, probe, mean, var, want);

	setup_start(&st, 2);
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_normalization()};
	cr_assert_str_eq(l[0].name, "normalization");
	PASCO_PASS(pasco_model_sequential(&m, WIDTH, 1, l, 1));
	cr_assert_eq(pasco_model_num_variables(m), 2);
	cr_assert_str_eq(
	    pasco_model_variable_name(m, 0), "normalization/mean");
	cr_assert_str_eq(
	    pasco_model_variable_name(m, 1), "normalization/variance");
	ds = batches_of(data); /* 14 batches, the last of 19 rows */
	PASCO_PASS(pasco_model_adapt(m, 0, ds));
	pasco_dataset_free(ds);
	PASCO_PASS(pasco_model_create_variables(m, st.s));

	pasco_tensor   *mv    = read_var(pasco_model_variable(m, 0));
	pasco_tensor   *vv    = read_var(pasco_model_variable(m, 1));
	pasco_variable *count = count_var(st.s, "normalization/count");
	cr_assert_eq(pasco_variable_dtype(count), PASCO_I64);
	cr_assert_eq(test_read_scalar(count), ROWS);
	for (int j = 0; j < WIDTH; j++) {
		double m_ = pasco_tensor_get(mv, j),
		       v_ = pasco_tensor_get(vv, j);
		cr_assert(fabs(m_ - mean[j]) <= 1e-6 * fmax(1, fabs(mean[j])),
		    "mean[%d] %g, numpy %g", j, m_, mean[j]);
		cr_assert(fabs(v_ - var[j]) <= 1e-6 * fmax(1e-16, var[j]),
		    "variance[%d] %g, numpy %g", j, v_, var[j]);
	}
	pasco_tensor_release(mv);
	pasco_tensor_release(vv);

	/* the forward pass: numpy's values, epsilon in column 4 */
	pasco_tape    *tp;
	pasco_tape_var tv[2];
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *out = pasco_model_call(m, tp, &probe, tv);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	const pasco_tensor *y = pasco_tnode_value(out);
	for (int64_t i = 0; i < y->count; i++) {
		float got = ((float *) y->data)[i];
		cr_assert(
		    fabsf(got - want[i]) <= 2e-6f * fmaxf(1, fabsf(want[i])),
		    "y[%lld] %.9g, numpy %.9g", (long long) i, got, want[i]);
	}
	cr_assert(fabsf(((float *) y->data)[4]) > 1e6,
	    "a column of variance 1e-16 is divided by 1e-7");
	pasco_tape_free(tp);

	/* the same statistics from one tensor */
	pasco_model *m2;
	PASCO_PASS(pasco_model_sequential(&m2, WIDTH, 1, l, 1));
	PASCO_PASS(pasco_model_adapt_tensor(m2, 0, data));
	PASCO_PASS(pasco_model_create_variables(m2, st.s)); /* reused */
	cr_assert_eq(test_read_scalar(count), ROWS);
	pasco_variable_free(count);
	pasco_model_free(m2);
	pasco_model_free(m);
	pasco_tensor_release(data);
	pasco_tensor_release(probe);
	setup_stop(&st);
}

static pasco_tnode *
normalized_sum(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	pasco_tensor *const *stats = ctx;
	return weighted(tp, pasco_t_normalize(tp, s[0], stats[0], stats[1]));
}

Test(normalization, the_gradient_is_finite_differences_and_reaches_x_only)
{
	pasco_tensor *x = rnd(PASCO_F64, 2, (int64_t[]){4, 3}, 1, -2, 2);
	pasco_tensor *stats[2];
	stats[0] = rnd(PASCO_F32, 1, (int64_t[]){3}, 2, -1, 1);
	stats[1] = rnd(PASCO_F32, 1, (int64_t[]){3}, 3, 0.5, 2);
	check_fd("normalize", normalized_sum, stats, 1, &x, NULL);

	pasco_tape *tp;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tensor *bad = rnd(PASCO_F32, 1, (int64_t[]){4}, 2, -1, 1);
	cr_assert_null(
	    pasco_t_normalize(tp, pasco_tape_constant(tp, x), bad, stats[1]));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "normalize: input f64[4,3]: mean f32[4] and variance f32[3] are "
	    "not f32 or f64 of its last dimension 3");
	pasco_tape_free(tp);
	pasco_tensor_release(bad);
	pasco_tensor_release(x);
	pasco_tensor_release(stats[0]);
	pasco_tensor_release(stats[1]);
}

/* Normalization, Dense(8, relu), Dense(2, softmax) trained on features of
 * scale 1000: the loss falls, and mean, variance and count on the ps are
 * what adapt wrote. */
Test(normalization, training_never_changes_the_statistics)
{
	setup           st;
	pasco_model    *m;
	pasco_variable *gs, *count;
	pasco_optimizer opt = pasco_adam(0.05, false);
	pasco_tensor   *x, *y, *before[2];
	pasco_loss loss  = {.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .from_logits = false};
	double     first = 0, last = 0;
	int64_t    yv[64];
	setup_start(&st, 2);
	x = rnd(PASCO_F32, 2, (int64_t[]){64, 2}, 4, -1, 1);
	for (int i = 0; i < 64; i++) {
		float *r = (float *) x->data + 2 * i;
		yv[i]    = r[0] + r[1] > 0;
		r[0]     = 1000 + 1000 * r[0];
		r[1]     = -5 + 0.001f * r[1];
	}
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_I64, 1, (int64_t[]){64}, yv, sizeof(yv)));
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_normalization(),
	    pasco_layer_dense(8, PASCO_ACT_RELU),
	    pasco_layer_dense(2, PASCO_ACT_SOFTMAX)};
	PASCO_PASS(pasco_model_sequential(&m, 2, 3, l, 3));
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	PASCO_PASS(pasco_model_adapt_tensor(m, 0, x)); /* written at once */
	PASCO_PASS(pasco_strategy_global_step(st.s, &gs));
	count = count_var(st.s, "normalization/count");
	cr_assert_eq(test_read_scalar(count), 64);
	before[0]      = read_var(pasco_model_variable(m, 0));
	before[1]      = read_var(pasco_model_variable(m, 1));
	opt.iterations = gs;
	for (int step = 0; step < 60; step++) {
		pasco_tape *tp;
		double      v;
		PASCO_PASS(pasco_tape_alloc(&tp, true, (uint64_t) step));
		int rv = pasco_model_train_step(m, tp, &x, y, loss, &opt, &v);
		cr_assert_eq(rv, 0, "%s", pasco_tape_message(tp));
		first = step == 0 ? v : first;
		last  = v;
		pasco_tape_free(tp);
	}
	cr_assert_eq(test_read_scalar(gs), 60);
	cr_assert(last < 0.5 * first, "loss from %g to %g", first, last);
	for (int k = 0; k < 2; k++) {
		pasco_tensor *after =
		    read_var(pasco_model_variable(m, (size_t) k));
		cr_assert_arr_eq(after->data, before[k]->data, 8,
		    "%s unchanged", pasco_model_variable_name(m, (size_t) k));
		pasco_tensor_release(after);
		pasco_tensor_release(before[k]);
	}
	cr_assert_eq(test_read_scalar(count), 64);
	pasco_variable_free(count);
	pasco_variable_free(gs);
	pasco_model_free(m);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	setup_stop(&st);
}

/* A functional model normalizes its input "dense" (adapted from (dict,
 * y) elements by the input's name) next to an embedding of "cat". */
Test(normalization, a_functional_model_adapts_its_named_input)
{
	pasco_model  *m;
	pasco_tensor *dense = rnd(PASCO_F32, 2, (int64_t[]){6, 3}, 8, 0, 10);
	pasco_tensor *cat, *y;
	int64_t       ids[6] = {0, 1, 2, 0, 1, 2};
	PASCO_PASS(pasco_tensor_from(
	    &cat, PASCO_I64, 1, (int64_t[]){6}, ids, sizeof(ids)));
	PASCO_PASS(pasco_tensor_alloc(&y, PASCO_F32, 1, (int64_t[]){6}));
	pasco_layer_reset_names();
	pasco_model_input in[] = {{"cat", 1, true}, {"dense", 3, false}};
	pasco_layer       l[] = {pasco_layer_on(pasco_layer_normalization(), 1,
	                             (int32_t[]){PASCO_MODEL_INPUT(1)}),
	          pasco_layer_on(pasco_layer_embedding(3, 2), 1,
	              (int32_t[]){PASCO_MODEL_INPUT(0)}),
	          pasco_layer_on(pasco_layer_concatenate(), 2, (int32_t[]){0, 1}),
	          pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	PASCO_PASS(pasco_model_functional(&m, 2, in, 4, l, 1));
	pasco_value   *v = pasco_value_list(2,
	      pasco_value_dict(2, "cat", pasco_value_tensor(cat), "dense",
	          pasco_value_tensor(pasco_tensor_hold(dense))),
	      pasco_value_tensor(y));
	pasco_dataset *ds;
	PASCO_PASS(pasco_dataset_from_tensors(&ds, v));
	pasco_value_free(v);
	PASCO_PASS(pasco_dataset_batch(&ds, ds, 4, false));
	PASCO_PASS(pasco_model_adapt(m, 0, ds));
	pasco_dataset_free(ds);

	/* hand-computed statistics of the 6 rows, on the ps */
	setup st;
	setup_start(&st, 1);
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	cr_assert_str_eq(
	    pasco_model_variable_name(m, 0), "normalization/mean");
	pasco_tensor *mv = read_var(pasco_model_variable(m, 0));
	pasco_tensor *vv = read_var(pasco_model_variable(m, 1));
	for (int j = 0; j < 3; j++) {
		double sum = 0, sq = 0;
		for (int r = 0; r < 6; r++) {
			sum += pasco_tensor_get(dense, r * 3 + j);
		}
		for (int r = 0; r < 6; r++) {
			double d =
			    pasco_tensor_get(dense, r * 3 + j) - sum / 6;
			sq += d * d;
		}
		cr_assert_float_eq(pasco_tensor_get(mv, j), sum / 6, 1e-5,
		    "mean[%d] %g, want %g", j, pasco_tensor_get(mv, j),
		    sum / 6);
		cr_assert_float_eq(pasco_tensor_get(vv, j), sq / 6, 1e-5);
	}
	pasco_tensor_release(mv);
	pasco_tensor_release(vv);

	/* errors: not a Normalization, not on a model input, bad data */
	PASCO_FAIL(pasco_model_adapt_tensor(m, 1, dense), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "adapt: layer 1 ('embedding') is not a Normalization");
	pasco_tensor *narrow = rnd(PASCO_F32, 2, (int64_t[]){6, 2}, 8, 0, 1);
	PASCO_FAIL(pasco_model_adapt_tensor(m, 0, narrow), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "normalization: adapt: data f32[6, 2] is not [n, 3] numbers");
	pasco_layer  after[] = {pasco_layer_dense(3, PASCO_ACT_LINEAR),
	     pasco_layer_normalization()};
	pasco_model *m3;
	PASCO_PASS(pasco_model_sequential(&m3, 2, 2, after, 1));
	PASCO_FAIL(pasco_model_adapt_tensor(m3, 1, narrow), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "is called on layer 'dense_1', not on a model input"),
	    "%s", pasco_model_last_error());
	pasco_model_free(m3);
	pasco_tensor_release(narrow);
	pasco_tensor_release(dense);
	pasco_model_free(m);
	setup_stop(&st);
}

/* A newcomer's path: examples/make_table's CSV (64 numeric columns and a
 * label) through pasco_dataset_make_csv straight into Normalization and
 * Dense layers, no map function: adapt over one pass, train on the
 * batches as they come, then classify the eval file. */
Test(normalization, a_csv_table_feeds_the_model_with_no_map_function)
{
	const char *prog  = getenv("PASCO_MAKE_TABLE");
	char        dir[] = "/tmp/pasco_table_XXXXXX", cmd[512];
	char        train[96], eval[96];
	cr_assert_not_null(prog, "PASCO_MAKE_TABLE names examples/make_table");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
	    "%s %s --train 2000 --eval 500 --noise 1 --seed 2 >/dev/null",
	    prog, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(train, sizeof(train), "%s/train.csv", dir);
	snprintf(eval, sizeof(eval), "%s/eval.csv", dir);

	setup           st;
	pasco_model    *m;
	pasco_dataset  *ds;
	pasco_optimizer opt = pasco_adam(0.01, false);
	pasco_loss  loss = {.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .from_logits = false};
	const char *files[1]        = {train};
	pasco_csv_dataset_options o = {
	    .label_name = "label", .batch_size = 64, .num_epochs = 1};
	setup_start(&st, 2);
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_normalization(),
	    pasco_layer_dense(32, PASCO_ACT_RELU),
	    pasco_layer_dense(10, PASCO_ACT_SOFTMAX)};
	PASCO_PASS(pasco_model_sequential(&m, 64, 3, l, 5));
	PASCO_PASS(pasco_dataset_make_csv(&ds, files, 1, &o));
	PASCO_PASS(pasco_model_adapt(m, 0, ds));
	pasco_dataset_free(ds);
	PASCO_PASS(pasco_model_create_variables(m, st.s));

	o.num_epochs          = 3;
	o.shuffle_buffer_size = 500;
	o.shuffle_seed        = 1;
	PASCO_PASS(pasco_dataset_make_csv(&ds, files, 1, &o));
	pasco_value *e;
	int          steps = 0;
	while (pasco_dataset_next(ds, &e) == PASCO_OK) {
		pasco_tape   *tp;
		pasco_tensor *x = (pasco_tensor *) pasco_value_as_tensor(
		    pasco_value_item(e, 0));
		const pasco_tensor *y =
		    pasco_value_as_tensor(pasco_value_item(e, 1));
		PASCO_PASS(pasco_tape_alloc(&tp, true, (uint64_t) steps));
		int rv =
		    pasco_model_train_step(m, tp, &x, y, loss, &opt, NULL);
		cr_assert_eq(rv, 0, "%s", pasco_tape_message(tp));
		pasco_tape_free(tp);
		pasco_value_free(e);
		steps++;
	}
	cr_assert_eq(steps, 94,
	    "3 epochs of 2000 rows in batches of 64 "
	    "(epochs run into each other, as in TF)");
	pasco_dataset_free(ds);

	files[0]              = eval;
	o.num_epochs          = 1;
	o.shuffle_buffer_size = 0;
	o.batch_size          = 500;
	PASCO_PASS(pasco_dataset_make_csv(&ds, files, 1, &o));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	pasco_tensor *x =
	    (pasco_tensor *) pasco_value_as_tensor(pasco_value_item(e, 0));
	const pasco_tensor *y = pasco_value_as_tensor(pasco_value_item(e, 1));
	pasco_tape         *tp;
	pasco_tape_var      tv[6];
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *out = pasco_model_call(m, tp, &x, tv);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	const float *p       = pasco_tnode_value(out)->data;
	int          correct = 0;
	for (int i = 0; i < 500; i++) {
		int best = 0;
		for (int c = 1; c < 10; c++) {
			best = p[i * 10 + c] > p[i * 10 + best] ? c : best;
		}
		correct += best == ((int64_t *) y->data)[i];
	}
	cr_assert(correct >= 450, "eval accuracy %d / 500", correct);
	pasco_tape_free(tp);
	pasco_value_free(e);
	pasco_dataset_free(ds);
	pasco_model_free(m);
	setup_stop(&st);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
