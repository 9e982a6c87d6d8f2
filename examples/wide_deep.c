/*
 * Wide & deep (seed 002) as a functional model, on census-like CSV data
 * made by a known rule.
 *
 * Each row has age, hours (per week), education (8 levels), occupation (10)
 * and a city id (500). The rule: score = T[education][occupation] +
 * C[city] + 0.06 (age - 40) + 0.05 (hours - 40), with T and C fixed
 * pseudo-random tables; the label is score > 0, flipped for 5% of rows,
 * so the best attainable accuracy is about 0.95.
 *
 * The model's inputs by name: "wide" (the crossed feature education x
 * occupation and the city, as 2 hashed 64-bit keys of one dynamic
 * Embedding of width 1, summed: a linear model over features nobody
 * enumerated; its rows are made as training meets them),  "education" and
 * "occupation" (ids of 8-wide Embeddings) and "numbers" (age and hours,
 * scaled). Deep part: the two embeddings and the numbers concatenated, Dense
 * 16 and 8 (ReLU); the output: one sigmoid Dense over the deep part and the
 * wide logit. Adam, binary cross-entropy, accuracy; trained with
 * pasco_model_fit, evaluated exactly once over 8 shards of the evaluation
 * file.
 *
 *     build/examples/wide_deep --make-data /tmp/census
 *     pasco launch --ps 2 --workers 2 -- build/examples/wide_deep \
 *         --data /tmp/census
 *
 * Options: --epochs N (8), --steps N (250 per epoch); with --make-data,
 * --train N (100000) and --eval N (10000) rows. Exits 1 unless the
 * accuracy is at least 0.85 (a constant guess gets 0.56, the rule 0.95).
 */
#include <sys/stat.h>

#include "options.h"

#define EDUCATIONS 8
#define OCCUPATIONS 10
#define CITIES 500
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
    {"age", PASCO_FEATURE_FLOAT, false, 0, 0},
    {"hours", PASCO_FEATURE_FLOAT, true, 40, 0}, /* missing: 40 */
    {"education", PASCO_FEATURE_BYTES, false, 0, 0},
    {"occupation", PASCO_FEATURE_BYTES, false, 0, 0},
    {"city", PASCO_FEATURE_HASHED, false, 0, 0}, /* its text's key */
    {"label", PASCO_FEATURE_INT64, false, 0, 0},
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

static pasco_value *
vector(pasco_dtype dtype, int64_t n, const void *data, size_t bytes)
{
	pasco_tensor *t;
	return pasco_tensor_from(&t, dtype, 1, &n, data, bytes) == 0
	           ? pasco_value_tensor(t)
	           : NULL;
}

/* A CSV row to the model's inputs by name and the label. */
static int
featurize(void *arg, const pasco_value *row, pasco_value **out)
{
	const pasco_tensor *t[6];
	(void) arg;
	for (int i = 0; i < 6; i++) {
		t[i] = pasco_value_as_tensor(
		    pasco_value_get(row, columns[i].name));
	}
	int64_t edu = index_of(t[2], educations, EDUCATIONS);
	int64_t occ = index_of(t[3], occupations, OCCUPATIONS);
	char    cross[64];
	if (edu < 0 || occ < 0) {
		return PASCO_EINVAL;
	}
	/* the crossed feature, hashed as a string column would be */
	int len = snprintf(cross, sizeof(cross), "%s x %s", educations[edu],
	    occupations[occ]);
	int64_t wide[2] = {pasco_hash_key(cross, (size_t) len),
	    ((const int64_t *) t[4]->data)[0]};
	float   num[2]  = {(float) ((pasco_tensor_get(t[0], 0) - 45) / 15),
	       (float) ((pasco_tensor_get(t[1], 0) - 40) / 15)};
	float   label   = (float) pasco_tensor_get(t[5], 0);
	*out            = pasco_value_list(2,
	               pasco_value_dict(4, "wide",
	                   vector(PASCO_I64, 2, wide, sizeof(wide)), "education",
	                   vector(PASCO_I64, 1, &edu, sizeof(edu)), "occupation",
	                   vector(PASCO_I64, 1, &occ, sizeof(occ)), "numbers",
	                   vector(PASCO_F32, 2, num, sizeof(num))),
	               vector(PASCO_F32, 1, &label, sizeof(label)));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

static int
census(pasco_dataset **out, const char *const *files, size_t n, int64_t shards,
    int64_t shard, bool training)
{
	pasco_csv_options o  = {.columns = columns,
	     .ncolumns                   = 6,
	     .header                     = true,
	     .num_shards                 = (int32_t) shards,
	     .shard_index                = (int32_t) shard};
	int               rv = pasco_dataset_csv(out, files, n, &o);
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

/* Shard worker_index of num_workers of the evaluation file, once. */
PASCO_DATASET(census_eval)
{
	char        path[1100];
	const char *files[] = {path};
	snprintf(path, sizeof(path), "%s/eval.csv", data_dir);
	return census(
	    out, files, 1, ctx->num_workers, ctx->worker_index, false);
}

/* ---- the model and the coordinator ---- */

static int
wide_and_deep(pasco_model **m)
{
	pasco_model_input in[] = {{"wide", 2, true}, {"education", 1, true},
	    {"occupation", 1, true}, {"numbers", 2, false}};
	pasco_layer l[] = {pasco_layer_on(pasco_layer_dynamic_embedding(1), 1,
	                       (int32_t[]){PASCO_MODEL_INPUT(0)}),
	    pasco_layer_on(pasco_layer_embedding(EDUCATIONS, 8), 1,
	        (int32_t[]){PASCO_MODEL_INPUT(1)}),
	    pasco_layer_on(pasco_layer_embedding(OCCUPATIONS, 8), 1,
	        (int32_t[]){PASCO_MODEL_INPUT(2)}),
	    pasco_layer_on(pasco_layer_concatenate(), 3,
	        (int32_t[]){1, 2, PASCO_MODEL_INPUT(3)}),
	    pasco_layer_dense(16, PASCO_ACT_RELU), /* on the previous */
	    pasco_layer_dense(8, PASCO_ACT_RELU),
	    pasco_layer_on(pasco_layer_concatenate(), 2, (int32_t[]){5, 0}),
	    pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	int         rv;
	l[0].combiner = PASCO_COMBINE_SUM; /* the wide part: a linear model */
	if ((rv = pasco_model_functional(m, 4, in, 8, l, 2)) == 0 &&
	    (rv = pasco_model_compile(
	         *m, &(pasco_compile_options){.loss = "binary_crossentropy",
	                 .optimizer                 = pasco_adam(0.01, false),
	                 .metrics  = (const char *[]){"accuracy"},
	                 .nmetrics = 1})) != 0) {
		pasco_model_free(*m);
	}
	return rv;
}

#ifndef WIDE_DEEP_PARTS_ONLY /* bench/window.c takes the parts above */
static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                epochs = 8, steps = 250;
	pasco_strategy    *s = NULL;
	pasco_coordinator *c = NULL;
	pasco_model       *m = NULL;
	pasco_logs         logs;
	double             acc = 0, loss = NAN, t0 = now_s();
	const char        *data = data_dir;
	int                rv;
	example_option     opts[] = {
	        {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (8)"},
	        {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (250)"},
	        {"data", OPTION_PATH, &data, 0, 0,
	            "DIR  the CSV files --make-data wrote (/tmp/census)"},
	        {.name = NULL}};

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
	if ((rv = wide_and_deep(&m)) != 0 ||
	    (rv = pasco_strategy_create(&s, cluster, NULL)) != 0 ||
	    (rv = pasco_model_create_variables(m, s)) != 0) {
		report(rv, "creating the model", pasco_model_last_error());
		goto out;
	}
	printf("wide: a dynamic table of hashed keys (education x occupation, "
	       "city), deep: 18 -> 16 -> 8, then 9 -> 1; data from %s\n",
	    data_dir);
	if ((rv = pasco_coordinator_create(&c, s, NULL)) != 0) {
		goto out;
	}
	if ((rv = pasco_model_fit(c, m,
	         &(pasco_model_fit_options){.dataset = "census_train",
	             .epochs                         = epochs,
	             .steps_per_epoch                = steps,
	             .verbose                        = true},
	         NULL)) == 0) {
		printf("trained %d steps of %d rows in %.2f s: %.1f steps/s\n",
		    epochs * steps, BATCH, now_s() - t0,
		    epochs * steps / (now_s() - t0));
	}
	if (rv != 0 ||
	    (rv = pasco_model_evaluate(c, m,
	         &(pasco_model_evaluate_options){
	             .dataset = "census_eval", .shards = EVAL_SHARDS},
	         &logs)) != 0) {
		report(rv, "training failed", pasco_model_last_error());
	} else if (pasco_logs_get(&logs, "accuracy", &acc) &&
	           pasco_logs_get(&logs, "loss", &loss)) {
		printf("evaluated exactly once over %d shards: loss = %.4f\n",
		    EVAL_SHARDS, loss);
		printf("accuracy = %.4f\n", acc);
	}
out:
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv == 0 && acc >= 0.85 ? 0 : 1;
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
	    {.name = NULL}};
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
#endif
