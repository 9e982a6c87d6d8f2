/*
 * Sparse logistic regression with FTRL, the model of seed 004, trained
 * from TFRecord shards of tf.train.Example click data (make_clicks): the
 * features are strings ("ad=123"), hashed to 64-bit keys as they are
 * parsed (PASCO_FEATURE_HASHED), and the weights are a dynamic table on
 * every ps: a key gets its row the first time a training step looks it
 * up, and rows unseen for 1000 steps are evicted; no vocabulary or table
 * size is declared. Rows are gathered and updated sparsely; each worker
 * reads its own files (file-level sharding).
 * AUC is then computed exactly once over 8 evaluation shards
 * (pasco_schedule_shards) and compared with the best attainable AUC on
 * that data (the true click probabilities' AUC).
 *
 *     build/examples/make_clicks /tmp/clicks
 *     pasco launch --ps 2 --workers 2 -- build/examples/sparse_logreg --data
 * /tmp/clicks
 *
 * Options: --epochs N (6), --steps N (300 per epoch). Exits 1 unless the
 * AUC reaches 0.9 of the optimum.
 */
#include <dirent.h>
#include <errno.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clicks.h"
#include "options.h"

#define BATCH 256
#define EVAL_SHARDS 8

static char data_dir[1024] = "/tmp/clicks";

static const pasco_feature_spec specs[] = {
    {"label", PASCO_FEATURE_FLOAT, 1, false, 0, 0},
    {"features", PASCO_FEATURE_HASHED, CLICK_IDS, false, 0, 0},
    {"values", PASCO_FEATURE_FLOAT, CLICK_IDS, false, 0, 0},
    {"p", PASCO_FEATURE_FLOAT, 1, true, 0, 0},
};

static pasco_optimizer
ftrl(void)
{
	return pasco_ftrl(2.0, 0.001, 0.001);
}

/* The files of a split, sorted by name; *n gets how many. */
static char **
split_files(const char *split, size_t *n)
{
	DIR           *d = opendir(data_dir);
	struct dirent *e;
	char         **out = calloc(64, sizeof(char *));
	*n                 = 0;
	while (
	    d != NULL && out != NULL && (e = readdir(d)) != NULL && *n < 64) {
		if (strncmp(e->d_name, split, strlen(split)) == 0 &&
		    strstr(e->d_name, ".tfrecord") != NULL) {
			size_t len = strlen(data_dir) + strlen(e->d_name) + 2;
			out[*n]    = malloc(len);
			snprintf(
			    out[(*n)++], len, "%s/%s", data_dir, e->d_name);
		}
	}
	if (d != NULL) {
		closedir(d);
	}
	if (*n == 0) { /* the factory fails NOT_FOUND, with this message */
		pasco_dataset_fail(PASCO_ENOTFOUND,
		    "no %s-*.tfrecord file in %s (%s); make_clicks %s writes "
		    "them",
		    split, data_dir, d == NULL ? strerror(errno) : "empty",
		    data_dir);
	}
	for (size_t i = 1; out != NULL && i < *n; i++) { /* insertion sort */
		for (size_t j = i; j > 0 && strcmp(out[j - 1], out[j]) > 0;
		     j--) {
			char *t    = out[j];
			out[j]     = out[j - 1];
			out[j - 1] = t;
		}
	}
	return out;
}

static void
free_files(char **files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(files[i]);
	}
	free(files);
}

/* Each worker's training stream: its files, parsed, shuffled, batched,
 * repeated, read ahead. */
PASCO_DATASET(click_train)
{
	size_t n;
	char **files = split_files("train", &n);
	int    rv    = n == 0 ? PASCO_ENOTFOUND
	                      : pasco_dataset_tfrecord_sharded(out,
	                            (const char *const *) files, n,
	                            ctx->worker_index, ctx->num_workers, NULL);
	free_files(files, n);
	if (rv == 0) {
		rv = pasco_dataset_parse_examples(out, *out, specs, 3);
	}
	if (rv == 0) {
		rv = pasco_dataset_shuffle(out, *out, 2048, 0);
	}
	if (rv == 0) {
		rv = pasco_dataset_batch(out, *out, BATCH, true);
	}
	if (rv == 0) {
		rv = pasco_dataset_repeat(out, *out, -1);
	}
	return rv == 0 ? pasco_dataset_prefetch(out, *out, 4) : rv;
}

/* logit[i] = sum_k w[ids[i,k]] * values[i,k] + bias */
static int
logits_of(pasco_variable *w, pasco_variable *b, const pasco_tensor *ids,
    const pasco_tensor *values, pasco_tensor **logits)
{
	pasco_tensor *rows, *bias;
	int64_t       n = ids->shape[0];
	int           rv;
	if ((rv = pasco_variable_gather(w, ids, &rows)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_read(b, &bias)) != 0) {
		pasco_tensor_release(rows);
		return rv;
	}
	rv = pasco_tensor_alloc(logits, PASCO_F32, 2, (int64_t[]){n, 1});
	for (int64_t i = 0; rv == 0 && i < n; i++) {
		double z = pasco_tensor_get(bias, 0);
		for (int k = 0; k < CLICK_IDS; k++) {
			z += pasco_tensor_get(rows, i * CLICK_IDS + k) *
			     pasco_tensor_get(values, i * CLICK_IDS + k);
		}
		((float *) (*logits)->data)[i] = (float) z;
	}
	pasco_tensor_release(rows);
	pasco_tensor_release(bias);
	return rv;
}

/* Fails the call with the variables' message, else the code's. */
static int
fail_with(pasco_call *call, int rv, pasco_variable *w, pasco_variable *b)
{
	const char *why = pasco_variable_error(w)[0] ? pasco_variable_error(w)
	                                             : pasco_variable_error(b);
	return pasco_call_fail(
	    call, rv, "%s", why[0] != 0 ? why : pasco_strerror(rv));
}

/* args: iterator, w, bias. One FTRL step; returns the batch loss. */
PASCO_FUNCTION(logreg_step)
{
	pasco_dataset  *it;
	pasco_variable *w, *b;
	pasco_value    *batch;
	pasco_tensor *logits = NULL, *dz = NULL, *grads = NULL, *dbias = NULL;
	pasco_tensor *loss_t;
	pasco_optimizer opt = ftrl();
	double          loss;
	int             rv;

	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &w)) != 0 ||
	    (rv = pasco_call_variable(call, 2, &b)) != 0) {
		return rv;
	}
	if ((rv = pasco_dataset_next(it, &batch)) != 0) {
		return pasco_call_fail(
		    call, rv, "training data: %s", pasco_dataset_last_error());
	}
	const pasco_tensor *y =
	    pasco_value_as_tensor(pasco_value_get(batch, "label"));
	const pasco_tensor *id =
	    pasco_value_as_tensor(pasco_value_get(batch, "features"));
	const pasco_tensor *v =
	    pasco_value_as_tensor(pasco_value_get(batch, "values"));
	if ((rv = logits_of(w, b, id, v, &logits)) == 0 &&
	    (rv = pasco_binary_crossentropy_logits(logits, y, &loss, &dz)) ==
	        0 &&
	    (rv = pasco_tensor_alloc(&grads, PASCO_F32, 3,
	         (int64_t[]){id->shape[0], CLICK_IDS, 1})) == 0 &&
	    (rv = pasco_tensor_scalar(&dbias, PASCO_F32, 0)) == 0) {
		double db       = 0;
		dbias->rank     = 1;
		dbias->shape[0] = 1;
		for (int64_t i = 0; i < id->shape[0]; i++) {
			float g = ((float *) dz->data)[i];
			db += g;
			for (int k = 0; k < CLICK_IDS; k++) {
				((float *) grads->data)[i * CLICK_IDS + k] =
				    g * ((const float *)
				                v->data)[i * CLICK_IDS + k];
			}
		}
		((float *) dbias->data)[0] = (float) db;
		if ((rv = pasco_variable_apply_gradient_sparse(
		         w, &opt, id, grads)) == 0) {
			rv = pasco_variable_apply_gradient(b, &opt, dbias);
		}
	}
	if (rv == 0 &&
	    (rv = pasco_tensor_scalar(&loss_t, PASCO_F32, loss)) == 0) {
		pasco_call_return(call, pasco_value_tensor(loss_t));
	}
	pasco_tensor_release(logits);
	pasco_tensor_release(dz);
	pasco_tensor_release(grads);
	pasco_tensor_release(dbias);
	pasco_value_free(batch);
	return rv != 0 ? fail_with(call, rv, w, b) : PASCO_OK;
}

/* The growing columns of logreg_eval's result. */
typedef struct columns {
	float  *pred, *label, *p;
	int64_t count, cap;
} columns;

static int
columns_reserve(columns *c, int64_t more)
{
	if (c->count + more <= c->cap) {
		return PASCO_OK;
	}
	int64_t cap   = (c->count + more) * 2;
	float  *pred  = realloc(c->pred, sizeof(float) * (size_t) cap);
	float  *label = pred != NULL
	                    ? realloc(c->label, sizeof(float) * (size_t) cap)
	                    : NULL;
	float  *p =
            label != NULL ? realloc(c->p, sizeof(float) * (size_t) cap) : NULL;
	c->pred  = pred != NULL ? pred : c->pred;
	c->label = label != NULL ? label : c->label;
	c->p     = p != NULL ? p : c->p;
	if (p == NULL) {
		return PASCO_ENOMEM;
	}
	c->cap = cap;
	return PASCO_OK;
}

/* Appends the predictions of one batch. */
static int
columns_add(
    columns *c, pasco_variable *w, pasco_variable *b, const pasco_value *batch)
{
	const pasco_tensor *id =
	    pasco_value_as_tensor(pasco_value_get(batch, "features"));
	const pasco_tensor *lb =
	    pasco_value_as_tensor(pasco_value_get(batch, "label"));
	const pasco_tensor *pt =
	    pasco_value_as_tensor(pasco_value_get(batch, "p"));
	pasco_tensor *logits;
	int64_t       m = id->shape[0];
	int           rv;

	if ((rv = columns_reserve(c, m)) != 0 ||
	    (rv = logits_of(w, b, id,
	         pasco_value_as_tensor(pasco_value_get(batch, "values")),
	         &logits)) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < m; i++) {
		float z            = ((float *) logits->data)[i];
		c->pred[c->count]  = (float) (1.0 / (1.0 + exp(-z)));
		c->label[c->count] = (float) pasco_tensor_get(lb, i);
		c->p[c->count]     = (float) pasco_tensor_get(pt, i);
		c->count++;
	}
	pasco_tensor_release(logits);
	return PASCO_OK;
}

/* The three columns as [pred, label, p], into *out. */
static int
columns_value(const columns *c, pasco_value **out)
{
	pasco_tensor *tp = NULL, *tl = NULL, *tq = NULL;
	size_t        nbytes = sizeof(float) * (size_t) c->count;
	int64_t       n      = c->count;
	int           rv;
	*out = NULL;
	if ((rv = pasco_tensor_from(&tp, PASCO_F32, 1, &n, c->pred, nbytes)) !=
	        0 ||
	    (rv = pasco_tensor_from(
	         &tl, PASCO_F32, 1, &n, c->label, nbytes)) != 0 ||
	    (rv = pasco_tensor_from(&tq, PASCO_F32, 1, &n, c->p, nbytes)) !=
	        0) {
		pasco_tensor_release(tp);
		pasco_tensor_release(tl);
		return rv;
	}
	*out = pasco_value_list(3, pasco_value_tensor(tp),
	    pasco_value_tensor(tl), pasco_value_tensor(tq));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

/* Evaluation shard k of K: every eval record whose index i has
 * i % K == k, parsed and batched. */
static int
eval_dataset(pasco_dataset **ds, int64_t k, int64_t num_shards)
{
	size_t n;
	char **files = split_files("eval", &n);
	int    rv    = n == 0 ? PASCO_ENOTFOUND
	                      : pasco_dataset_tfrecord(
	                            ds, (const char *const *) files, n, NULL);
	free_files(files, n);
	if (rv == 0) {
		rv = pasco_dataset_shard(ds, *ds, num_shards, k);
	}
	if (rv == 0) {
		rv = pasco_dataset_parse_examples(ds, *ds, specs, 4);
	}
	return rv == 0 ? pasco_dataset_batch(ds, *ds, BATCH, false) : rv;
}

/* args: w, bias, k, K. Predicts every example of evaluation shard k of K
 * (record-level over all eval files; an unseen feature weighs 0 and is
 * not inserted); returns [pred, label, p]. A record
 * that cannot be read fails the shard: a silently shorter evaluation
 * would count fewer examples than it says. */
PASCO_FUNCTION(logreg_eval)
{
	pasco_variable     *w, *b;
	const pasco_tensor *k, *kk;
	pasco_dataset      *ds;
	pasco_value        *batch, *result;
	columns             cols        = {0};
	bool                data_failed = true;
	int                 rv;

	if ((rv = pasco_call_variable(call, 0, &w)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &b)) != 0 ||
	    (rv = pasco_call_tensor(call, 2, &k)) != 0 ||
	    (rv = pasco_call_tensor(call, 3, &kk)) != 0 ||
	    (rv = pasco_variable_set_find_only(w, true)) != 0) {
		return rv;
	}
	if ((rv = eval_dataset(&ds, (int64_t) pasco_tensor_get(k, 0),
	         (int64_t) pasco_tensor_get(kk, 0))) != 0) {
		return pasco_call_fail(call, rv, "evaluation data in %s: %s",
		    data_dir,
		    rv == PASCO_ENOTFOUND ? "no eval-*.tfrecord files"
		                          : pasco_dataset_last_error());
	}
	while ((rv = pasco_dataset_next(ds, &batch)) == 0) {
		if ((rv = columns_add(&cols, w, b, batch)) != 0) {
			fail_with(call, rv, w, b);
			data_failed = false;
		}
		pasco_value_free(batch);
		if (rv != 0) {
			break;
		}
	}
	pasco_dataset_free(ds);
	if (rv == PASCO_EOUTOFRANGE) { /* the end of the shard */
		if ((rv = columns_value(&cols, &result)) == 0) {
			pasco_call_return(call, result);
		} else {
			pasco_call_fail(
			    call, rv, "no result: %s", pasco_strerror(rv));
		}
	} else if (data_failed) {
		pasco_call_fail(call, rv, "evaluation data: %s",
		    pasco_dataset_last_error());
	}
	free(cols.pred);
	free(cols.label);
	free(cols.p);
	return rv;
}

typedef struct scored {
	float score, label;
} scored;

static int
by_score(const void *a, const void *b)
{
	float x = ((const scored *) a)->score, y = ((const scored *) b)->score;
	return (x > y) - (x < y);
}

/* Exact ROC AUC (Mann-Whitney, ties averaged). */
static double
auc_of(scored *s, int64_t n)
{
	double  rank_sum = 0, pos = 0;
	int64_t i = 0;
	qsort(s, (size_t) n, sizeof(*s), by_score);
	while (i < n) {
		int64_t j = i;
		while (j < n && s[j].score == s[i].score) {
			j++;
		}
		double avg = (double) (i + j + 1) / 2.0; /* ranks i+1 .. j */
		for (int64_t k = i; k < j; k++) {
			if (s[k].label > 0.5f) {
				rank_sum += avg;
				pos++;
			}
		}
		i = j;
	}
	return (rank_sum - pos * (pos + 1) / 2) / (pos * ((double) n - pos));
}

/* One epoch of steps; prints the last step's loss. */
static int
train_epoch(pasco_coordinator *c, pasco_arg *args, int e, int steps)
{
	double loss;
	int    rv = run_epoch(c, "logreg_step", args, 3, steps, &loss);
	if (rv == 0) {
		printf("epoch %d: loss = %.4f\n", e, loss);
		fflush(stdout);
	}
	return rv;
}

static int
train(pasco_coordinator *c, pasco_variable *w, pasco_variable *b, int epochs,
    int steps)
{
	pasco_per_worker_dataset  *d     = NULL;
	pasco_per_worker_iterator *it    = NULL;
	double                     start = now_s();
	int                        rv;
	if ((rv = pasco_per_worker_dataset_create(&d, c, "click_train")) !=
	        0 ||
	    (rv = pasco_per_worker_iterator_create(&it, d)) != 0) {
		report(rv, "creating the training iterator", NULL);
		goto out;
	}
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_variable(w),
	    pasco_arg_variable(b)};
	for (int e = 0; e < epochs && rv == 0; e++) {
		rv = train_epoch(c, args, e, steps);
	}
	if (rv == 0) {
		double secs = now_s() - start;
		printf("trained %d steps of %d examples in %.2f s: %.1f "
		       "steps/s\n",
		    epochs * steps, BATCH, secs, epochs * steps / secs);
	}
out:
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	return rv;
}

/* Column i of shard result r, checked to be n f32 values (*n is set from
 * column 0). */
static const float *
result_column(const pasco_value *r, size_t i, int64_t *n)
{
	const pasco_tensor *t = pasco_value_as_tensor(pasco_value_item(r, i));
	if (t == NULL || t->dtype != PASCO_F32 || (i > 0 && t->count != *n)) {
		return NULL;
	}
	*n = t->count;
	return t->data;
}

static int
evaluate(pasco_coordinator *c, pasco_variable *w, pasco_variable *b,
    double *auc, double *best)
{
	pasco_value *results[EVAL_SHARDS];
	pasco_arg    args[] = {pasco_arg_variable(w), pasco_arg_variable(b)};
	scored      *model = NULL, *truth = NULL;
	int64_t      n = 0, at = 0;
	int          rv = pasco_schedule_shards(
	             c, "logreg_eval", args, 2, EVAL_SHARDS, results);
	if (rv != 0) {
		return report(
		    rv, "evaluation failed", pasco_coordinator_error(c));
	}
	for (int k = 0; k < EVAL_SHARDS; k++) {
		int64_t m = 0;
		n += result_column(results[k], 0, &m) != NULL ? m : 0;
	}
	model = calloc((size_t) n + 1, sizeof(*model));
	truth = calloc((size_t) n + 1, sizeof(*truth));
	rv    = model != NULL && truth != NULL ? PASCO_OK : PASCO_ENOMEM;
	for (int k = 0; k < EVAL_SHARDS; k++) {
		int64_t      m  = 0;
		const float *pr = result_column(results[k], 0, &m);
		const float *lb = result_column(results[k], 1, &m);
		const float *pt = result_column(results[k], 2, &m);
		if (rv == 0 && (pr == NULL || lb == NULL || pt == NULL)) {
			rv = report(PASCO_EPROTO, "evaluation",
			    "a shard returned something other than "
			    "[pred, label, p]");
		}
		for (int64_t i = 0; rv == 0 && i < m; i++, at++) {
			model[at] = (scored){pr[i], lb[i]};
			truth[at] = (scored){pt[i], lb[i]};
		}
		pasco_value_free(results[k]);
	}
	if (rv == PASCO_ENOMEM) {
		report(rv, "evaluation", NULL);
	} else if (rv == 0) {
		printf("evaluated %lld examples exactly once over %d shards\n",
		    (long long) n, EVAL_SHARDS);
		*auc  = auc_of(model, n);
		*best = auc_of(truth, n);
	}
	free(model);
	free(truth);
	return rv;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                   epochs = 6, steps = 300;
	pasco_initializer     zeros = pasco_init_zeros();
	pasco_dynamic_options table = {.dim = 1,
	    .initializer                    = zeros,
	    .evict_after                    = 1000,
	    .default_zeros                  = true};
	pasco_dynamic_stats   st;
	pasco_strategy       *s = NULL;
	pasco_coordinator    *c = NULL;
	pasco_variable       *w = NULL, *b = NULL;
	double                auc = 0, best = 1;
	const char           *data = data_dir;
	int                   rv;
	example_option        opts[] = {
	           {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (6)"},
	           {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (300)"},
	           {"data", OPTION_PATH, &data, 0, 0,
	               "DIR  the shards make_clicks wrote (/tmp/clicks)"},
	           {.name = NULL}};

	/* main has read --data already: every role needs it */
	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M -- sparse_logreg "
	         "[OPTIONS]",
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
	if ((rv = pasco_dynamic_variable_create(&w, s, "weights", &table)) !=
	        0 ||
	    (rv = pasco_variable_create_init(
	         &b, s, "bias", PASCO_F32, 1, (int64_t[]){1}, &zeros)) != 0) {
		report(rv, "creating the variables", pasco_strategy_error(s));
		goto out;
	}
	printf("weights: a dynamic table on %d ps; data from %s\n",
	    pasco_variable_num_shards(w), data_dir);
	if ((rv = pasco_coordinator_create(&c, s, NULL)) != 0) {
		report(rv, "creating the coordinator", NULL);
		goto out;
	}
	if ((rv = train(c, w, b, epochs, steps)) == 0 &&
	    (rv = pasco_variable_dynamic_stats(w, &st)) == 0) {
		printf("weights: %lld rows made, %lld held, %lld evicted\n",
		    (long long) st.created, (long long) st.rows,
		    (long long) (st.evicted_age + st.evicted_cap));
	}
	if (rv == 0 && (rv = evaluate(c, w, b, &auc, &best)) == 0) {
		printf("optimal auc = %.4f (the true probabilities)\n", best);
		printf("auc = %.4f (%.3f of the optimum)\n", auc, auc / best);
		if (!(auc >= 0.9 * best)) {
			fprintf(stderr, "auc is below 0.9 of the optimum\n");
		}
	}
out:
	pasco_coordinator_destroy(c);
	pasco_variable_free(w);
	pasco_variable_free(b);
	pasco_strategy_destroy(s);
	return rv == 0 && auc >= 0.9 * best ? 0 : 1;
}

int
main(int argc, char **argv)
{
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
