/*
 * Writes the synthetic click data of examples/sparse_logreg as TFRecord
 * shards of tf.train.Example: "label" (float, 0 or 1), "features" (10
 * strings, "ad=<n>", skewed towards a few frequent ones as in click logs),
 * "values" (10 floats), and "p" (the true click probability, so the best
 * attainable AUC can be computed).
 * label ~ Bernoulli(sigmoid(sum w*[feature] * value - 1)).
 *
 *     build/examples/make_clicks DIR [--train N] [--eval N] [--shards S]
 */
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clicks.h"
#include "options.h"

/* Says on stderr what failed with the code's message; returns rv. */
static int
report_file(int rv, const char *what, const char *path)
{
	fprintf(stderr, "make_clicks: %s %s: %s\n", what, path,
	    pasco_strerror(rv));
	return rv;
}

/* Example i of a split: its features as a dict, into *out. */
static int
make_example(long i, uint64_t seed, pasco_value **out)
{
	pasco_value  *names[CLICK_IDS] = {NULL};
	float         vals[CLICK_IDS];
	double        logit = -1.0, p;
	uint64_t      z     = seed * 1000003 + (uint64_t) i * 131;
	pasco_tensor *l = NULL, *v = NULL, *pt = NULL;
	pasco_value  *id;
	int           rv = PASCO_OK;

	*out = NULL;
	for (int k = 0; k < CLICK_IDS; k++) {
		uint64_t      f = click_feature(z + (uint64_t) k);
		char          name[32];
		int           len = click_name(name, sizeof(name), f);
		pasco_tensor *t;
		vals[k] = (float) (0.5 + click_unit(z + 100 + (uint64_t) k));
		logit += click_true_weight(f) * vals[k];
		if (rv == 0 &&
		    (rv = pasco_tensor_from(&t, PASCO_U8, 1, (int64_t[]){len},
		         name, (size_t) len)) == 0) {
			names[k] = pasco_value_tensor(t);
		}
	}
	/* the strings as one bytes_list (the list takes them over, even
	 * when it fails) */
	id = rv == 0 ? pasco_value_list(CLICK_IDS, names[0], names[1],
	                   names[2], names[3], names[4], names[5], names[6],
	                   names[7], names[8], names[9])
	             : NULL;
	for (int k = 0; rv != 0 && k < CLICK_IDS; k++) {
		pasco_value_free(names[k]);
	}
	p = 1.0 / (1.0 + exp(-logit));
	if (id == NULL ||
	    (rv = pasco_tensor_from(&l, PASCO_F32, 1, (int64_t[]){1},
	         &(float){click_unit(z + 999) < p ? 1.0f : 0.0f},
	         sizeof(float))) != 0 ||
	    (rv = pasco_tensor_from(&v, PASCO_F32, 1, (int64_t[]){CLICK_IDS},
	         vals, sizeof(vals))) != 0 ||
	    (rv = pasco_tensor_from(&pt, PASCO_F32, 1, (int64_t[]){1},
	         &(float){(float) p}, sizeof(float))) != 0) {
		pasco_tensor_release(l);
		pasco_value_free(id);
		pasco_tensor_release(v);
		return rv != 0 ? rv : PASCO_ENOMEM;
	}
	/* the dict takes the values over, even when it fails */
	*out = pasco_value_dict(4, "label", pasco_value_tensor(l), "features",
	    id, "values", pasco_value_tensor(v), "p", pasco_value_tensor(pt));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

/* Examples s, s + shards, ... below n, as records of path. */
static int
write_shard(const char *path, long n, int s, int shards, uint64_t seed)
{
	pasco_tfrecord_writer *w;
	int                    rv;

	if ((rv = pasco_tfrecord_writer_open(&w, path)) != 0) {
		return report_file(rv, "cannot create", path);
	}
	for (long i = s; i < n && rv == 0; i += shards) {
		pasco_value *ex;
		void        *buf = NULL;
		size_t       len;
		if ((rv = make_example(i, seed, &ex)) != 0 ||
		    (rv = pasco_example_encode(ex, &buf, &len)) != 0) {
			report_file(rv, "cannot make a record for", path);
		} else if ((rv = pasco_tfrecord_write(w, buf, len)) != 0) {
			report_file(rv, "cannot write to", path);
		}
		free(buf);
		pasco_value_free(ex);
	}
	/* closing frees the writer, also after an error */
	if (pasco_tfrecord_writer_close(w) != 0 && rv == 0) {
		rv = report_file(PASCO_EIO, "cannot write", path);
	}
	return rv;
}

static int
write_split(
    const char *dir, const char *split, long n, int shards, uint64_t seed)
{
	for (int s = 0; s < shards; s++) {
		char path[512];
		snprintf(
		    path, sizeof(path), "%s/%s-%02d.tfrecord", dir, split, s);
		if (write_shard(path, n, s, shards, seed) != 0) {
			return 1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	long           train = 200000, eval = 20000;
	int            shards = 4, rv;
	const char    *dir    = NULL;
	example_option opts[] = {{"train", OPTION_LONG, &train, 1, 1e9,
	                             "N  training examples (200000)"},
	    {"eval", OPTION_LONG, &eval, 1, 1e9,
	        "N  evaluation examples (20000)"},
	    {"shards", OPTION_INT, &shards, 1, 1000, "S  files per split (4)"},
	    {.name = NULL}};

	/* DIR comes first: options after it are parsed from there on */
	if (argc >= 2 && argv[1][0] != '-') {
		dir     = argv[1];
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if ((rv = parse_options(argc, argv,
	         "make_clicks DIR [--train N] [--eval N] [--shards S]",
	         opts)) >= 0) {
		return rv;
	}
	if (dir == NULL) {
		return option_error(argv, "no output directory given:", "DIR");
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "make_clicks: cannot create %s: %s\n", dir,
		    strerror(errno));
		return 1;
	}
	if (write_split(dir, "train", train, shards, 1) != 0 ||
	    write_split(dir, "eval", eval, shards, 2) != 0) {
		fprintf(stderr, "make_clicks: failed writing to %s\n", dir);
		return 1;
	}
	printf(
	    "wrote %ld training and %ld evaluation examples in %d shards each "
	    "to %s\n",
	    train, eval, shards, dir);
	return 0;
}
