/*
 * Wide & deep (seed 002) on census-like CSV data made by a known rule.
 *
 * Each row has age, hours (per week), education (8 levels), occupation (10)
 * and a city id (500). The rule: score = T[education][occupation] +
 * C[city] + 0.06 (age - 40) + 0.05 (hours - 40), with T and C fixed
 * pseudo-random tables; the label is score > 0, flipped for 5% of rows.
 *
 * Wide part: a linear model over the crossed column education x
 * occupation (80 values) and the city column, one [580, 1] table trained
 * with FTRL, rows gathered and updated sparsely. Deep part: 8-wide
 * embeddings of education and occupation ([18, 8], Adagrad) concatenated
 * with the two scaled numbers, then dense layers of 16 and 8 ReLU units
 * and one output unit (Adagrad). The logit is the sum of both parts;
 * binary cross-entropy. Evaluation runs exactly once over 8 shards of the
 * evaluation file (pasco_schedule_shards) and prints the accuracy beside
 * the rule's own (the best attainable, about 0.95).
 *
 *     build/examples/wide_deep --make-data /tmp/census
 *     pasco launch --ps 2 --workers 2 -- build/examples/wide_deep --data
 * /tmp/census
 *
 * Options: --epochs N (8), --steps N (250 per epoch); with --make-data,
 * --train N (100000) and --eval N (10000) rows. Exits 1 unless the
 * accuracy is within 0.05 of the rule's.
 */
#include <math.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "options.h"

#define EDUCATIONS 8
#define OCCUPATIONS 10
#define CITIES 500
#define WIDE_ROWS (EDUCATIONS * OCCUPATIONS + CITIES)
#define EMB_ROWS (EDUCATIONS + OCCUPATIONS)
#define EMB_DIM 8
#define IN_DIM (2 * EMB_DIM + 2)
#define H1 16
#define H2 8
#define BATCH 128
#define TRAIN_FILES 4
#define EVAL_SHARDS 8

static const char *educations[EDUCATIONS]   = {"preschool", "hs-grad",
      "some-college", "assoc", "bachelors", "masters", "prof-school",
      "doctorate"};
static const char *occupations[OCCUPATIONS] = {"admin", "craft", "exec",
    "farming", "handlers", "machine-op", "prof", "sales", "service", "tech"};

static char data_dir[1024] = "/tmp/census";

/* ---- the data and its rule ---- */

static uint64_t
mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double
unit(uint64_t z)
{
	return ((double) (mix(z) >> 11) + 0.5) * 0x1p-53;
}

static double
rule_score(int edu, int occ, int64_t city, double age, double hours)
{
	double cross =
	    4.0 * unit((uint64_t) (edu * OCCUPATIONS + occ) + 1000) - 2.0;
	double local = 2.0 * unit((uint64_t) city + 5000) - 1.0;
	return cross + local + 0.06 * (age - 40) + 0.05 * (hours - 40);
}

static int
write_csv(const char *path, int64_t first, int64_t n)
{
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	fprintf(f, "age,hours,education,occupation,city,label\n");
	for (int64_t i = first; i < first + n; i++) {
		uint64_t s     = (uint64_t) i * 8;
		double   age   = 18 + (int) (unit(s) * 58);
		double   hours = 10 + (int) (unit(s + 1) * 61);
		int      edu   = (int) (unit(s + 2) * EDUCATIONS);
		int      occ   = (int) (unit(s + 3) * OCCUPATIONS);
		int64_t  city  = (int64_t) (unit(s + 4) * CITIES);
		int      label = rule_score(edu, occ, city, age, hours) > 0;
		if (unit(s + 5) < 0.05) {
			label = !label;
		}
		fprintf(f, "%g,%g,%s,\"%s\",%lld,%d\n", age, hours,
		    educations[edu], occupations[occ], (long long) city,
		    label);
	}
	return fclose(f) == 0 ? 0 : -1;
}

static int
make_data(const char *dir, int64_t train, int64_t eval)
{
	char path[1100];
	mkdir(dir, 0755);
	for (int k = 0; k < TRAIN_FILES; k++) {
		snprintf(path, sizeof(path), "%s/train-%02d.csv", dir, k);
		if (write_csv(path, k * (train / TRAIN_FILES),
		        train / TRAIN_FILES) != 0) {
			return 1;
		}
	}
	snprintf(path, sizeof(path), "%s/eval.csv", dir);
	if (write_csv(path, 1000000000, eval) != 0) {
		return 1;
	}
	printf("wrote %lld training rows in %d files and %lld evaluation rows "
	       "to %s\n",
	    (long long) train, TRAIN_FILES, (long long) eval, dir);
	return 0;
}

/* ---- the input pipeline ---- */

static const pasco_csv_column columns[] = {
    {"age", PASCO_FEATURE_FLOAT, false, 0},
    {"hours", PASCO_FEATURE_FLOAT, true, 40}, /* missing: 40 */
    {"education", PASCO_FEATURE_BYTES, false, 0},
    {"occupation", PASCO_FEATURE_BYTES, false, 0},
    {"city", PASCO_FEATURE_INT64, false, 0},
    {"label", PASCO_FEATURE_INT64, false, 0},
};

static int
index_of(const pasco_tensor *text, const char *const *names, int n)
{
	for (int i = 0; i < n; i++) {
		if ((size_t) text->count == strlen(names[i]) &&
		    memcmp(text->data, names[i], (size_t) text->count) == 0) {
			return i;
		}
	}
	return -1;
}

/* A CSV row to the model's inputs: [wide ids (2), embedding ids (2),
 * scaled numbers (2), label (1), the rule's prediction (1)]. */
static int
featurize(void *arg, const pasco_value *row, pasco_value **out)
{
	const pasco_tensor *t[6];
	(void) arg;
	for (int i = 0; i < 6; i++) {
		t[i] = pasco_value_as_tensor(
		    pasco_value_get(row, columns[i].name));
	}
	double age   = pasco_tensor_get(t[0], 0),
	       hours = pasco_tensor_get(t[1], 0);
	int     edu  = index_of(t[2], educations, EDUCATIONS);
	int     occ  = index_of(t[3], occupations, OCCUPATIONS);
	int64_t city = (int64_t) pasco_tensor_get(t[4], 0);
	if (edu < 0 || occ < 0 || city < 0 || city >= CITIES) {
		return PASCO_EINVAL;
	}
	int64_t wide[2] = {
	    edu * OCCUPATIONS + occ, EDUCATIONS * OCCUPATIONS + city};
	int64_t emb[2] = {edu, EDUCATIONS + occ};
	float   num[2] = {
	      (float) ((age - 45) / 15), (float) ((hours - 40) / 15)};
	float label = (float) pasco_tensor_get(t[5], 0);
	float rule  = rule_score(edu, occ, city, age, hours) > 0 ? 1.0f : 0.0f;
	int64_t       two = 2, one = 1;
	pasco_tensor *w, *e, *x, *l, *r;
	pasco_tensor_from(&w, PASCO_I64, 1, &two, wide, sizeof(wide));
	pasco_tensor_from(&e, PASCO_I64, 1, &two, emb, sizeof(emb));
	pasco_tensor_from(&x, PASCO_F32, 1, &two, num, sizeof(num));
	pasco_tensor_from(&l, PASCO_F32, 1, &one, &label, sizeof(label));
	pasco_tensor_from(&r, PASCO_F32, 1, &one, &rule, sizeof(rule));
	*out = pasco_value_list(5, pasco_value_tensor(w),
	    pasco_value_tensor(e), pasco_value_tensor(x),
	    pasco_value_tensor(l), pasco_value_tensor(r));
	return PASCO_OK;
}

static int
census(pasco_dataset **out, const char *const *files, size_t n, int64_t shards,
    int64_t shard, bool training)
{
	pasco_csv_options o  = {columns, 6, true, ','};
	int               rv = pasco_dataset_csv(out, files, n, &o);
	if (rv == 0 && shards > 1) {
		rv = pasco_dataset_shard(out, *out, shards, shard);
	}
	if (rv == 0) {
		rv = pasco_dataset_map(out, *out, featurize, NULL);
	}
	if (rv == 0 && training) {
		rv = pasco_dataset_shuffle(out, *out, 4096, 0);
	}
	if (rv == 0) {
		rv = pasco_dataset_batch(out, *out, BATCH, training);
	}
	if (rv == 0 && training) {
		rv = pasco_dataset_repeat(out, *out, -1);
	}
	return rv;
}

/* Worker i reads training files i, i + M, ... */
PASCO_DATASET(census_train)
{
	char        names[TRAIN_FILES][1100];
	const char *files[TRAIN_FILES];
	size_t      n = 0;
	for (int k = ctx->worker_index; k < TRAIN_FILES;
	     k += ctx->num_workers) {
		snprintf(names[n], sizeof(names[n]), "%s/train-%02d.csv",
		    data_dir, k);
		files[n] = names[n];
		n++;
	}
	int rv = n == 0 ? PASCO_ENOTFOUND : census(out, files, n, 1, 0, true);
	return rv == 0 ? pasco_dataset_prefetch(out, *out, 4) : rv;
}

/* ---- the model ---- */

enum { WIDE, EMB, K1, B1, K2, B2, K3, B3, NVARS };

typedef struct model {
	pasco_variable *v[NVARS];
} model;

typedef struct pass { /* what the backward pass needs */
	pasco_tensor *x, *h1, *h2, *k1, *k2, *k3, *logits;
} pass;

static void
pass_free(pass *p)
{
	pasco_tensor *all[] = {
	    p->x, p->h1, p->h2, p->k1, p->k2, p->k3, p->logits};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		pasco_tensor_release(all[i]);
	}
	memset(p, 0, sizeof(*p));
}

/* y = f(a b + bias) */
static int
dense(const pasco_tensor *a, const pasco_tensor *b, pasco_variable *bias,
    bool relu, pasco_tensor **y)
{
	pasco_tensor *z = NULL, *bv = NULL, *zb = NULL;
	int           rv;
	*y = NULL;
	if ((rv = pasco_matmul(a, false, b, false, &z)) == 0 &&
	    (rv = pasco_variable_read(bias, &bv)) == 0 &&
	    (rv = pasco_bias_add(z, bv, &zb)) == 0) {
		if (relu) {
			rv = pasco_activate(PASCO_RELU, zb, y);
		} else {
			*y = zb;
			zb = NULL;
		}
	}
	pasco_tensor_release(z);
	pasco_tensor_release(bv);
	pasco_tensor_release(zb);
	return rv;
}

static int
forward(model *m, const pasco_value *batch, pass *p)
{
	const pasco_tensor *wide =
	    pasco_value_as_tensor(pasco_value_item(batch, 0));
	const pasco_tensor *emb =
	    pasco_value_as_tensor(pasco_value_item(batch, 1));
	const pasco_tensor *num =
	    pasco_value_as_tensor(pasco_value_item(batch, 2));
	int64_t       b     = wide->shape[0];
	pasco_tensor *wrows = NULL, *erows = NULL, *deep = NULL;
	int           rv;
	memset(p, 0, sizeof(*p));
	if ((rv = pasco_variable_gather(m->v[WIDE], wide, &wrows)) != 0 ||
	    (rv = pasco_variable_gather(m->v[EMB], emb, &erows)) != 0 ||
	    (rv = pasco_tensor_alloc(
	         &p->x, PASCO_F32, 2, (int64_t[]){b, IN_DIM})) != 0) {
		goto out;
	}
	for (int64_t i = 0; i < b;
	     i++) { /* x = [emb(edu), emb(occ), numbers] */
		float *x = (float *) p->x->data + i * IN_DIM;
		memcpy(x, (float *) erows->data + i * 2 * EMB_DIM,
		    sizeof(float) * 2 * EMB_DIM);
		x[2 * EMB_DIM]     = ((float *) num->data)[i * 2];
		x[2 * EMB_DIM + 1] = ((float *) num->data)[i * 2 + 1];
	}
	if ((rv = pasco_variable_read(m->v[K1], &p->k1)) != 0 ||
	    (rv = pasco_variable_read(m->v[K2], &p->k2)) != 0 ||
	    (rv = pasco_variable_read(m->v[K3], &p->k3)) != 0 ||
	    (rv = dense(p->x, p->k1, m->v[B1], true, &p->h1)) != 0 ||
	    (rv = dense(p->h1, p->k2, m->v[B2], true, &p->h2)) != 0 ||
	    (rv = dense(p->h2, p->k3, m->v[B3], false, &deep)) != 0) {
		goto out;
	}
	for (int64_t i = 0; i < b; i++) { /* logit = deep + wide */
		((float *) deep->data)[i] +=
		    ((float *) wrows->data)[2 * i] +
		    ((float *) wrows->data)[2 * i + 1];
	}
	p->logits = deep;
	deep      = NULL;
out:
	pasco_tensor_release(wrows);
	pasco_tensor_release(erows);
	pasco_tensor_release(deep);
	return rv;
}

/* dk = a^T dy, db = sum dy; da = dy k^T through a ReLU of output a (when
 * da is wanted). */
static int
dense_grad(const pasco_tensor *a, const pasco_tensor *k,
    const pasco_tensor *dy, pasco_variable *kv, pasco_variable *bv,
    const pasco_optimizer *opt, const pasco_tensor *relu_of_a,
    pasco_tensor **da)
{
	pasco_tensor *dk = NULL, *db = NULL, *dlin = NULL;
	int           rv;
	if ((rv = pasco_matmul(a, true, dy, false, &dk)) == 0 &&
	    (rv = pasco_bias_add_grad(dy, &db)) == 0 &&
	    (rv = pasco_matmul(dy, false, k, true, &dlin)) == 0 &&
	    (rv = pasco_variable_apply_gradient(kv, opt, dk)) == 0 &&
	    (rv = pasco_variable_apply_gradient(bv, opt, db)) == 0) {
		if (relu_of_a != NULL) {
			rv = pasco_activate_grad(
			    PASCO_RELU, relu_of_a, dlin, da);
		} else {
			*da  = dlin;
			dlin = NULL;
		}
	}
	pasco_tensor_release(dk);
	pasco_tensor_release(db);
	pasco_tensor_release(dlin);
	return rv;
}

static int
backward(model *m, const pasco_value *batch, pass *p, const pasco_tensor *dz)
{
	const pasco_tensor *wide =
	    pasco_value_as_tensor(pasco_value_item(batch, 0));
	const pasco_tensor *emb =
	    pasco_value_as_tensor(pasco_value_item(batch, 1));
	int64_t         b    = wide->shape[0];
	pasco_optimizer ftrl = pasco_ftrl(2.0, 0.001, 0.001);
	pasco_optimizer ada  = pasco_adagrad(0.1);
	pasco_tensor   *gw = NULL, *d2 = NULL, *d1 = NULL, *dx = NULL,
	             *de = NULL;
	int rv;
	if ((rv = pasco_tensor_alloc(
	         &gw, PASCO_F32, 3, (int64_t[]){b, 2, 1})) != 0 ||
	    (rv = pasco_tensor_alloc(
	         &de, PASCO_F32, 3, (int64_t[]){b, 2, EMB_DIM})) != 0) {
		goto out;
	}
	for (int64_t i = 0; i < b;
	     i++) { /* both wide rows of an example get dz */
		((float *) gw->data)[2 * i]     = ((float *) dz->data)[i];
		((float *) gw->data)[2 * i + 1] = ((float *) dz->data)[i];
	}
	if ((rv = pasco_variable_apply_gradient_sparse(
	         m->v[WIDE], &ftrl, wide, gw)) != 0 ||
	    (rv = dense_grad(p->h2, p->k3, dz, m->v[K3], m->v[B3], &ada, p->h2,
	         &d2)) != 0 ||
	    (rv = dense_grad(p->h1, p->k2, d2, m->v[K2], m->v[B2], &ada, p->h1,
	         &d1)) != 0 ||
	    (rv = dense_grad(
	         p->x, p->k1, d1, m->v[K1], m->v[B1], &ada, NULL, &dx)) != 0) {
		goto out;
	}
	for (int64_t i = 0; i < b; i++) { /* the embedding part of dx */
		memcpy((float *) de->data + i * 2 * EMB_DIM,
		    (float *) dx->data + i * IN_DIM,
		    sizeof(float) * 2 * EMB_DIM);
	}
	rv = pasco_variable_apply_gradient_sparse(m->v[EMB], &ada, emb, de);
out:
	pasco_tensor_release(gw);
	pasco_tensor_release(d2);
	pasco_tensor_release(d1);
	pasco_tensor_release(dx);
	pasco_tensor_release(de);
	return rv;
}

static int
model_from_call(pasco_call *call, size_t first, model *m)
{
	int rv;
	for (int i = 0; i < NVARS; i++) {
		if ((rv = pasco_call_variable(
		         call, first + (size_t) i, &m->v[i])) != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

static int
fail_with(pasco_call *call, model *m, int rv, const char *what)
{
	for (int i = 0; i < NVARS; i++) {
		if (pasco_variable_error(m->v[i])[0] != '\0') {
			return pasco_call_fail(
			    call, rv, "%s", pasco_variable_error(m->v[i]));
		}
	}
	return pasco_call_fail(call, rv, "%s: %s", what, pasco_strerror(rv));
}

/* args: iterator, the NVARS variables. One step; returns the loss. */
PASCO_FUNCTION(wide_deep_step)
{
	pasco_dataset *it;
	pasco_value   *batch;
	model          m;
	pass           p;
	pasco_tensor  *dz = NULL, *loss_t;
	double         loss;
	int            rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = model_from_call(call, 1, &m)) != 0) {
		return rv;
	}
	if ((rv = pasco_dataset_next(it, &batch)) != 0) {
		return pasco_call_fail(call, rv, "training data: %s",
		    pasco_dataset_last_error()[0] ? pasco_dataset_last_error()
		                                  : pasco_strerror(rv));
	}
	if ((rv = forward(&m, batch, &p)) == 0 &&
	    (rv = pasco_binary_crossentropy_logits(p.logits,
	         pasco_value_as_tensor(pasco_value_item(batch, 3)), &loss,
	         &dz)) == 0 &&
	    (rv = backward(&m, batch, &p, dz)) == 0 &&
	    (rv = pasco_tensor_scalar(&loss_t, PASCO_F32, loss)) == 0) {
		pasco_call_return(call, pasco_value_tensor(loss_t));
	}
	pass_free(&p);
	pasco_tensor_release(dz);
	pasco_value_free(batch);
	return rv != 0 ? fail_with(call, &m, rv, "step") : PASCO_OK;
}

/* args: the NVARS variables, k, K. Predicts every row of evaluation shard
 * k of K; returns [correct, rule's correct, rows]. */
PASCO_FUNCTION(wide_deep_eval)
{
	model               m;
	const pasco_tensor *k, *kk;
	pasco_dataset      *ds;
	pasco_value        *batch;
	char                path[1100];
	const char         *files[] = {path};
	double              correct = 0, rule = 0, rows = 0;
	int                 rv;
	snprintf(path, sizeof(path), "%s/eval.csv", data_dir);
	if ((rv = model_from_call(call, 0, &m)) != 0 ||
	    (rv = pasco_call_tensor(call, NVARS, &k)) != 0 ||
	    (rv = pasco_call_tensor(call, NVARS + 1, &kk)) != 0) {
		return rv;
	}
	if ((rv = census(&ds, files, 1, (int64_t) pasco_tensor_get(kk, 0),
	         (int64_t) pasco_tensor_get(k, 0), false)) != 0) {
		return pasco_call_fail(
		    call, rv, "evaluation data: %s", pasco_strerror(rv));
	}
	while ((rv = pasco_dataset_next(ds, &batch)) == 0) {
		pass                p;
		const pasco_tensor *label =
		    pasco_value_as_tensor(pasco_value_item(batch, 3));
		const pasco_tensor *truth =
		    pasco_value_as_tensor(pasco_value_item(batch, 4));
		if ((rv = forward(&m, batch, &p)) == 0) {
			for (int64_t i = 0; i < label->count; i++) {
				float y = ((float *) label->data)[i];
				correct += (((float *) p.logits->data)[i] >
				               0) == (y > 0.5f);
				rule += ((float *) truth->data)[i] == y;
				rows++;
			}
		}
		pass_free(&p);
		pasco_value_free(batch);
		if (rv != 0) { /* the model failed, not the data */
			pasco_dataset_free(ds);
			return fail_with(call, &m, rv, "evaluation");
		}
	}
	pasco_dataset_free(ds);
	if (rv != PASCO_EOUTOFRANGE) {
		const char *why = pasco_dataset_last_error();
		return pasco_call_fail(call, rv, "evaluation data: %s",
		    why[0] ? why : pasco_strerror(rv));
	}
	pasco_tensor *tc = NULL, *tr = NULL, *tn = NULL;
	if ((rv = pasco_tensor_scalar(&tc, PASCO_F64, correct)) != 0 ||
	    (rv = pasco_tensor_scalar(&tr, PASCO_F64, rule)) != 0 ||
	    (rv = pasco_tensor_scalar(&tn, PASCO_F64, rows)) != 0) {
		pasco_tensor_release(tc);
		pasco_tensor_release(tr);
		return pasco_call_fail(
		    call, rv, "no result: %s", pasco_strerror(rv));
	}
	pasco_call_return(
	    call, pasco_value_list(3, pasco_value_tensor(tc),
	              pasco_value_tensor(tr), pasco_value_tensor(tn)));
	return PASCO_OK;
}

/* ---- the coordinator ---- */

static int
create_model(pasco_strategy *s, model *m)
{
	static const struct {
		const char *name;
		int32_t     rank;
		int64_t     shape[2];
	} specs[NVARS]          = {{"wide", 2, {WIDE_ROWS, 1}},
	             {"embedding", 2, {EMB_ROWS, EMB_DIM}},
	             {"dense1/kernel", 2, {IN_DIM, H1}}, {"dense1/bias", 1, {H1}},
	             {"dense2/kernel", 2, {H1, H2}}, {"dense2/bias", 1, {H2}},
	             {"out/kernel", 2, {H2, 1}}, {"out/bias", 1, {1}}};
	pasco_initializer zeros = pasco_init_zeros();
	pasco_initializer emb   = pasco_init_uniform(-0.05, 0.05, 1);
	for (int i = 0; i < NVARS; i++) {
		pasco_initializer glorot =
		    pasco_init_glorot_uniform((uint64_t) i + 2);
		pasco_initializer *init = i == EMB ? &emb
		                          : specs[i].rank == 2 && i != WIDE
		                              ? &glorot
		                              : &zeros;
		int rv = pasco_variable_create_init(&m->v[i], s, specs[i].name,
		    PASCO_F32, specs[i].rank, specs[i].shape, init);
		if (rv != 0) { /* the caller frees those made so far */
			return report(rv, "creating the model's variables",
			    pasco_strategy_error(s));
		}
	}
	return PASCO_OK;
}

/* One epoch of steps; prints the last step's loss. */
static int
train_epoch(pasco_coordinator *c, const pasco_arg *args, int e, int steps)
{
	double loss;
	int rv = run_epoch(c, "wide_deep_step", args, 1 + NVARS, steps, &loss);
	if (rv == 0) {
		printf("epoch %d: loss = %.4f\n", e, loss);
		fflush(stdout);
	}
	return rv;
}

static int
train(pasco_coordinator *c, model *m, int epochs, int steps)
{
	pasco_per_worker_dataset  *d  = NULL;
	pasco_per_worker_iterator *it = NULL;
	pasco_arg                  args[1 + NVARS];
	double                     start = now_s();
	int                        rv;
	if ((rv = pasco_per_worker_dataset_create(&d, c, "census_train")) !=
	        0 ||
	    (rv = pasco_per_worker_iterator_create(&it, d)) != 0) {
		report(rv, "creating the training iterator", NULL);
		goto out;
	}
	args[0] = pasco_arg_iterator(it);
	for (int i = 0; i < NVARS; i++) {
		args[1 + i] = pasco_arg_variable(m->v[i]);
	}
	for (int e = 0; e < epochs && rv == 0; e++) {
		rv = train_epoch(c, args, e, steps);
	}
	if (rv == 0) {
		double secs = now_s() - start;
		printf("trained %d steps of %d rows in %.2f s: %.1f steps/s\n",
		    epochs * steps, BATCH, secs, epochs * steps / secs);
	}
out:
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	return rv;
}

static int
evaluate(pasco_coordinator *c, model *m, double *acc, double *rule_acc)
{
	pasco_value *results[EVAL_SHARDS];
	pasco_arg    args[NVARS];
	double       correct = 0, rule = 0, rows = 0;
	for (int i = 0; i < NVARS; i++) {
		args[i] = pasco_arg_variable(m->v[i]);
	}
	int rv = pasco_schedule_shards(
	    c, "wide_deep_eval", args, NVARS, EVAL_SHARDS, results);
	if (rv != 0) {
		return report(
		    rv, "evaluation failed", pasco_coordinator_error(c));
	}
	for (int k = 0; k < EVAL_SHARDS; k++) {
		correct += pasco_value_scalar(pasco_value_item(results[k], 0));
		rule += pasco_value_scalar(pasco_value_item(results[k], 1));
		rows += pasco_value_scalar(pasco_value_item(results[k], 2));
		pasco_value_free(results[k]);
	}
	if (isnan(correct) || isnan(rule) || isnan(rows)) {
		return report(PASCO_EPROTO, "evaluation",
		    "a shard returned something other than [correct, rule's "
		    "correct, rows]");
	}
	printf("evaluated %.0f rows exactly once over %d shards\n", rows,
	    EVAL_SHARDS);
	*acc      = rows > 0 ? correct / rows : 0;
	*rule_acc = rows > 0 ? rule / rows : 0;
	return PASCO_OK;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                epochs = 8, steps = 250;
	pasco_strategy    *s   = NULL;
	pasco_coordinator *c   = NULL;
	model              m   = {0};
	double             acc = 0, rule = 1;
	const char        *data = data_dir;
	int                rv;
	example_option     opts[] = {
	        {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (8)"},
	        {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (250)"},
	        {"data", OPTION_PATH, &data, 0, 0,
	            "DIR  the CSV files --make-data wrote (/tmp/census)"},
	        {NULL}};

	/* main has read --data already: every role needs it */
	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M -- wide_deep [OPTIONS]\n"
	         "       wide_deep --make-data DIR [--train N] [--eval N]",
	         opts)) >= 0) {
		return rv;
	}
	if (evaluator_has_nothing_to_do(cluster)) {
		return 0;
	}
	if ((rv = pasco_strategy_create(&s, cluster, NULL)) != 0) {
		report(rv, "cannot reach the cluster",
		    pasco_strategy_error(NULL));
		goto out;
	}
	if ((rv = create_model(s, &m)) != 0) {
		goto out;
	}
	printf("wide: %d rows (education x occupation, city), deep: %d -> %d "
	       "-> %d -> 1; "
	       "data from %s\n",
	    WIDE_ROWS, IN_DIM, H1, H2, data_dir);
	if ((rv = pasco_coordinator_create(&c, s, NULL)) != 0) {
		report(rv, "creating the coordinator", NULL);
		goto out;
	}
	if ((rv = train(c, &m, epochs, steps)) == 0 &&
	    (rv = evaluate(c, &m, &acc, &rule)) == 0) {
		printf("the rule's accuracy = %.4f (the best attainable)\n",
		    rule);
		printf("accuracy = %.4f\n", acc);
		if (!(acc >= rule - 0.05)) {
			fprintf(stderr,
			    "accuracy is more than 0.05 below the rule's\n");
		}
	}
out:
	pasco_coordinator_destroy(c);
	for (int i = 0; i < NVARS; i++) {
		pasco_variable_free(m.v[i]);
	}
	pasco_strategy_destroy(s);
	return rv == 0 && acc >= rule - 0.05 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	long           train = 100000, eval = 10000;
	const char    *dir         = NULL;
	example_option make_opts[] = {{"make-data", OPTION_PATH, &dir, 0, 0,
	                                  "DIR  write the data there"},
	    {"train", OPTION_LONG, &train, 1, 1e9,
	        "N  training rows (100000)"},
	    {"eval", OPTION_LONG, &eval, 1, 1e9, "N  evaluation rows (10000)"},
	    {NULL}};
	int            rv;

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--make-data", 11) == 0) {
			if ((rv = parse_options(argc, argv,
			         "wide_deep --make-data DIR [--train N] "
			         "[--eval N]",
			         make_opts)) >= 0) {
				return rv;
			}
			return make_data(dir, train, eval);
		}
	}
	for (int i = 1; i < argc; i++) { /* every role reads the data dir */
		if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
			snprintf(
			    data_dir, sizeof(data_dir), "%s", argv[i + 1]);
		} else if (strncmp(argv[i], "--data=", 7) == 0) {
			snprintf(
			    data_dir, sizeof(data_dir), "%s", argv[i] + 7);
		}
	}
	return pasco_main(argc, argv, chief);
}
