/*
 * Training throughput: the two models of the PyTorch peer
 * (bench/peers/torch_rpc.py) trained through Pasco, in steps/s and
 * examples/s with 1, 2, 4, 8 ... workers (up to the launch's, and that
 * count), beside the same step run in this one
 * process with no network (the compute ceiling: forward, backward and the
 * SGD update on local tensors), and how busy the machine was meanwhile
 * (from /proc/stat: every process on it, so every task of a local launch).
 *
 *   mlp      784-256-10, ReLU, softmax cross-entropy
 *   softmax  784-10 softmax regression
 *
 * A fixed synthetic batch of 64 per worker, SGD 0.05. A step (one
 * closure) reads the parameters (pasco_variable_read_all), computes the
 * gradients and applies them on the ps (pasco_variable_apply_gradients,
 * SGD).
 *
 *     pasco launch --ps 1 --workers 4 -- build/bench/train [--steps N]
 *         [--window W] [--ps P] [--model mlp|softmax]
 *
 * N steps per figure (default 2000), best of 2. W: the coordinator's
 * window, closures in flight per worker (default 0: its own, 4). P: every
 * variable split over the first P ps tasks, fixed shards (default 1: all
 * on ps 0; at most the launch's ps count). --model: that model only.
 */
#include "train.h"

#include <getopt.h>

/* The machine's CPU time so far, from the first line of /proc/stat (in
 * clock ticks): busy (user, nice, system, irq, softirq, steal), system
 * alone, and the total. */
typedef struct cpu_ticks {
	unsigned long long busy, sys, total;
} cpu_ticks;

static cpu_ticks
machine_ticks(void)
{
	unsigned long long v[8] = {0};
	cpu_ticks          t    = {0};
	FILE              *f    = fopen("/proc/stat", "r");
	if (f != NULL) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
		        &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		        &v[7]) == 8) {
			t.sys   = v[2] + v[5] + v[6];
			t.busy  = v[0] + v[1] + t.sys + v[7];
			t.total = t.busy + v[3] + v[4];
		}
		fclose(f);
	}
	return t;
}

typedef struct options {
	long        steps;
	uint32_t    window;
	size_t      ps;
	const char *model; /* "mlp", "softmax" or NULL: both */
} options;

static const char usage[] =
    "usage: pasco launch --ps N --workers M -- train [--steps N] "
    "[--window W] [--ps P] [--model mlp|softmax]\n";

/* A positive number from the option's argument, at most max; -1 with the
 * reason on stderr otherwise. */
static long
positive(const char *name, const char *arg, long max)
{
	char *end;
	long  v = strtol(arg, &end, 10);
	if (*arg == 0 || *end != 0 || v < 1 || v > max) {
		fprintf(stderr,
		    "train: --%s '%s' is not a number from 1 to %ld\n%s", name,
		    arg, max, usage);
		return -1;
	}
	return v;
}

/* 0, or 2 with the reason on stderr. */
static int
parse(int argc, char **argv, size_t nps, options *o)
{
	static const struct option longs[] = {{"steps", 1, NULL, 's'},
	    {"window", 1, NULL, 'w'}, {"ps", 1, NULL, 'p'},
	    {"model", 1, NULL, 'm'}, {"help", 0, NULL, 'h'},
	    {NULL, 0, NULL, 0}};
	long                       v       = 0;
	int                        c;
	*o = (options){.steps = 2000, .window = 0, .ps = 1};
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			v        = positive("steps", optarg, 1L << 40);
			o->steps = v;
			break;
		case 'w':
			v         = positive("window", optarg, 1 << 20);
			o->window = (uint32_t) v;
			break;
		case 'p':
			v     = positive("ps", optarg, (long) nps);
			o->ps = (size_t) v;
			break;
		case 'm':
			if (strcmp(optarg, "mlp") != 0 &&
			    strcmp(optarg, "softmax") != 0) {
				fprintf(stderr,
				    "train: --model '%s' is not mlp or "
				    "softmax\n%s",
				    optarg, usage);
				return 2;
			}
			o->model = optarg;
			break;
		case 'h':
			printf("%s", usage);
			return 1;
		default:
			fprintf(stderr, "%s", usage);
			return 2;
		}
		if (v < 0) {
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "train: unexpected argument '%s'\n%s",
		    argv[optind], usage);
		return 2;
	}
	return 0;
}

/* One figure: m with `workers` workers; its rate (-1 if it failed). */
static double
figure(const pasco_cluster *cluster, const model *m, const options *o,
    size_t workers, double ceiling)
{
	pasco_coordinator_options co = {.window = o->window};
	train_session             ts;
	double                    best = -1;
	cpu_ticks                 a    = machine_ticks(), b;
	char                      label[160];

	if (train_session_init_with(&ts, cluster, m, o->ps, workers, &co) ==
	    0) {
		for (int r = 0; r < TRAIN_REPEATS; r++) {
			double rate = train_session_run(&ts, o->steps);
			if (rate < 0) {
				best = -1;
				break;
			}
			best = rate > best ? rate : best;
		}
	}
	train_session_fini(&ts);
	b = machine_ticks();
	if (best <= 0) {
		return -1;
	}
	snprintf(label, sizeof(label), "%s, %zu worker%s", m->name, workers,
	    workers > 1 ? "s" : "");
	printf("  %-38s %10.0f steps/s %10.0f examples/s  %.2fx one process"
	       "  machine %.0f%% busy (%.0f%% system)\n",
	    label, best, best * BATCH, best / ceiling,
	    b.total > a.total ? 100.0 * (double) (b.busy - a.busy) /
	                            (double) (b.total - a.total)
	                      : 0,
	    b.total > a.total ? 100.0 * (double) (b.sys - a.sys) /
	                            (double) (b.total - a.total)
	                      : 0);
	bench_json("train", label, best, "steps/s", ceiling);
	return best;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	size_t  nw = cluster != NULL
	                 ? pasco_cluster_count(cluster, PASCO_ROLE_WORKER)
	                 : 0;
	size_t  sizes[8], nsizes = 0;
	options o;
	int     rv;

	if ((rv = parse(argc, argv,
	         cluster != NULL ? pasco_cluster_count(cluster, PASCO_ROLE_PS)
	                         : 1,
	         &o)) != 0) {
		return rv == 1 ? 0 : rv;
	}
	for (size_t w = 1; w <= nw && nsizes < 7; w *= 2) {
		sizes[nsizes++] = w;
	}
	if (nsizes > 0 && sizes[nsizes - 1] != nw) {
		sizes[nsizes++] = nw;
	}
	printf("training benchmark: batch %d, SGD %.2f, parameters on %zu "
	       "ps, window %u%s, %ld steps per figure, best of %d\n",
	    BATCH, LR, o.ps, o.window ? o.window : 4,
	    o.window ? "" : " (the default)", o.steps, TRAIN_REPEATS);
	for (size_t k = 0; k < sizeof(MODELS) / sizeof(MODELS[0]); k++) {
		const model *m = &MODELS[k];
		double       ceiling;
		char         label[128];
		if (o.model != NULL &&
		    strncmp(m->step, o.model, strlen(o.model)) != 0) {
			continue;
		}
		ceiling = in_process(m->nvars, o.steps);
		printf("%-40s %10.0f steps/s %10.0f examples/s\n", m->name,
		    ceiling, ceiling * BATCH);
		snprintf(label, sizeof(label), "%s, in one process", m->name);
		bench_json("train", label, ceiling, "steps/s", 0);
		for (size_t w = 0; w < nsizes; w++) {
			if (figure(cluster, m, &o, sizes[w], ceiling) < 0) {
				fprintf(stderr,
				    "train: %s with %zu workers failed\n",
				    m->name, sizes[w]);
				return 1;
			}
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
