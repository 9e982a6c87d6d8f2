/*
 * Writes a table of numeric features and a class label as CSV files with
 * a header, the input of the CSV MLP example (read with
 * pasco_dataset_make_csv): DIR/train.csv and DIR/eval.csv, columns
 * "label" (an integer class in [0, classes)) then x0 .. x<features-1>.
 * Each class has a centre drawn uniformly in [-1, 1]^features; an example
 * is its class's centre plus Gaussian noise of standard deviation
 * --noise, so the classes are separable up to the noise. The same --seed
 * writes the same files.
 *
 *     build/examples/make_table DIR [--train N] [--eval N] [--features F]
 *         [--classes C] [--noise S] [--seed K]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "options.h"

/* splitmix64: a counter-based stream, the same on every machine. */
static uint64_t
next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double
unit(uint64_t *s)
{
	return ((double) (next_u64(s) >> 11) + 0.5) * 0x1p-53;
}

/* Standard normal (Box-Muller). */
static double
gaussian(uint64_t *s)
{
	double u = unit(s), v = unit(s);
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

typedef struct table {
	long    features, classes;
	double  noise;
	double *centres; /* classes x features */
} table;

static int
write_split(const char *dir, const char *split, long rows, const table *t,
    uint64_t seed)
{
	char  path[512];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s.csv", dir, split);
	if ((f = fopen(path, "w")) == NULL) {
		fprintf(stderr, "make_table: cannot create %s: %s\n", path,
		    strerror(errno));
		return 1;
	}
	fprintf(f, "label");
	for (long j = 0; j < t->features; j++) {
		fprintf(f, ",x%ld", j);
	}
	fprintf(f, "\n");
	for (long i = 0; i < rows; i++) {
		long c = (long) (next_u64(&seed) % (uint64_t) t->classes);
		fprintf(f, "%ld", c);
		for (long j = 0; j < t->features; j++) {
			fprintf(f, ",%.5g",
			    t->centres[c * t->features + j] +
			        t->noise * gaussian(&seed));
		}
		fprintf(f, "\n");
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "make_table: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	long           train = 20000, eval = 2000, seed = 1;
	table          t = {.features = 64, .classes = 10, .noise = 0.5};
	uint64_t       s;
	int            rv;
	const char    *dir    = NULL;
	example_option opts[] = {
	    {"train", OPTION_LONG, &train, 1, 1e9, "N  training rows (20000)"},
	    {"eval", OPTION_LONG, &eval, 1, 1e9, "N  evaluation rows (2000)"},
	    {"features", OPTION_LONG, &t.features, 1, 100000,
	        "F  feature columns (64)"},
	    {"classes", OPTION_LONG, &t.classes, 2, 100000, "C  classes (10)"},
	    {"noise", OPTION_DOUBLE, &t.noise, 0, 1e6,
	        "S  standard deviation of the noise (0.5)"},
	    {"seed", OPTION_LONG, &seed, 0, 1e18, "K  random seed (1)"},
	    {.name = NULL}};

	/* DIR comes first: options after it are parsed from there on */
	if (argc >= 2 && argv[1][0] != '-') {
		dir     = argv[1];
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if ((rv = parse_options(argc, argv,
	         "make_table DIR [--train N] [--eval N] [--features F] "
	         "[--classes C] [--noise S] [--seed K]",
	         opts)) >= 0) {
		return rv;
	}
	if (dir == NULL) {
		return option_error(argv, "no output directory given:", "DIR");
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "make_table: cannot create %s: %s\n", dir,
		    strerror(errno));
		return 1;
	}
	t.centres = malloc(sizeof(double) * (size_t) (t.classes * t.features));
	if (t.centres == NULL) {
		fprintf(stderr, "make_table: out of memory\n");
		return 1;
	}
	s = (uint64_t) seed;
	for (long k = 0; k < t.classes * t.features; k++) {
		t.centres[k] = 2 * unit(&s) - 1;
	}
	rv =
	    write_split(dir, "train", train, &t, (uint64_t) seed * 7919 + 1) ||
	    write_split(dir, "eval", eval, &t, (uint64_t) seed * 7919 + 2);
	free(t.centres);
	if (rv == 0) {
		printf("wrote %ld training and %ld evaluation rows of %ld "
		       "features and %ld classes to %s/train.csv and "
		       "%s/eval.csv\n",
		    train, eval, t.features, t.classes, dir, dir);
	}
	return rv;
}
