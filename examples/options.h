/*
 * Command-line options of the examples, one pattern for all: a table of
 * options parsed strictly with getopt_long. An unknown option, a missing
 * value, a value that is not a number in range or a stray argument is named
 * on stderr with a hint to --help (exit status 2); --help prints the usage
 * to stdout and --version the version (status 0). A chief function parses
 * its argv this way before it uses the cluster: pasco_main has taken the
 * cluster flags out, and runs the function with cluster NULL for --help or
 * --version when no cluster is given. ps and worker tasks, which run the
 * same binary with the same arguments, never parse them.
 *
 * Also what every example's coordinator does the same way: say what failed
 * (report, report_failure), run one epoch of a custom loop (run_epoch),
 * the sidecar evaluator of a compiled model's checkpoints
 * (evaluator_task) and the exactly-once accuracy at the end
 * (evaluate_accuracy).
 */
#ifndef PASCO_EXAMPLES_OPTIONS_H
#define PASCO_EXAMPLES_OPTIONS_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum {
	OPTION_INT,
	OPTION_LONG,
	OPTION_DOUBLE,
	OPTION_PATH,
	OPTION_FLAG /* no value: sets an int to 1 */
} option_kind;

typedef struct example_option {
	const char *name;     /* "epochs" for --epochs */
	option_kind kind;     /* what value points to: int, long, double, or
	                         const char * (the argv string, borrowed) */
	void       *value;    /* set when given; holds the default before */
	double      min, max; /* the range of a number */
	const char *help;     /* "N  epochs to train (20)" */
} example_option;

/* The program's name: argv[0] without its directory. */
static inline const char *
option_program(char **argv)
{
	const char *slash = strrchr(argv[0], '/');
	return slash != NULL ? slash + 1 : argv[0];
}

/* Says what is wrong, then the hint; returns 2. */
static inline int
option_error(char **argv, const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s '%s'\nTry '%s --help' for more information.\n",
	    option_program(argv), what, arg, option_program(argv));
	return 2;
}

/* Parses text as opt's value; 0, or 2 with the problem said. */
static inline int
option_set(char **argv, const example_option *opt, const char *text)
{
	char  *end;
	char   what[160];
	double v;

	if (opt->kind == OPTION_PATH) {
		*(const char **) opt->value = text;
		return 0;
	}
	if (opt->kind == OPTION_FLAG) {
		*(int *) opt->value = 1;
		return 0;
	}
	errno = 0;
	v     = opt->kind == OPTION_DOUBLE ? strtod(text, &end)
	                                   : (double) strtoll(text, &end, 10);
	if (*text == 0 || *end != 0 || errno != 0 || !isfinite(v) ||
	    v < opt->min || v > opt->max) {
		snprintf(what, sizeof(what),
		    "--%s needs %s from %.15g to %.15g, not", opt->name,
		    opt->kind == OPTION_DOUBLE ? "a number" : "an integer",
		    opt->min, opt->max);
		return option_error(argv, what, text);
	}
	if (opt->kind == OPTION_INT) {
		*(int *) opt->value = (int) v;
	} else if (opt->kind == OPTION_LONG) {
		*(long *) opt->value = (long) v;
	} else {
		*(double *) opt->value = v;
	}
	return 0;
}

/* Parses argv against opts (ended by a {NULL} entry). Returns -1 when the
 * program goes on, else its exit status: 0 after --help or --version, 2
 * after an error (said on stderr). usage is the first line of --help;
 * NULL: "pasco launch --ps N --workers M -- PROGRAM [OPTIONS]". */
static inline int
parse_options(
    int argc, char **argv, const char *usage, const example_option *opts)
{
	struct option long_opts[32];
	int           n = 0, opt;

	for (; opts[n].name != NULL && n < 29; n++) {
		long_opts[n] = (struct option){opts[n].name,
		    opts[n].kind == OPTION_FLAG ? no_argument
		                                : required_argument,
		    NULL, 256 + n};
	}
	long_opts[n]     = (struct option){"help", no_argument, NULL, 'h'};
	long_opts[n + 1] = (struct option){"version", no_argument, NULL, 'V'};
	long_opts[n + 2] = (struct option){NULL, 0, NULL, 0};
	opterr           = 0; /* option_error names the option instead */
	optind           = 1;
	while ((opt = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		if (opt >= 256) {
			if (option_set(argv, &opts[opt - 256], optarg) != 0) {
				return 2;
			}
		} else if (opt == 'h') {
			if (usage != NULL) {
				printf("usage: %s\n", usage);
			} else {
				printf(
				    "usage: pasco launch --ps N --workers M "
				    "-- %s [OPTIONS]\n",
				    option_program(argv));
			}
			for (int i = 0; i < n; i++) { /* "META  what" */
				const char *h   = opts[i].help;
				const char *gap = strstr(h, "  ");
				char        flag[64];
				snprintf(flag, sizeof(flag), "--%s %.*s",
				    opts[i].name,
				    gap != NULL ? (int) (gap - h) : 0, h);
				printf("  %-22s %s\n", flag,
				    gap != NULL ? gap + 2 : h);
			}
			printf("  %-22s %s\n  %-22s %s\n", "--help",
			    "print this and exit", "--version",
			    "print the version and exit");
			return 0;
		} else if (opt == 'V') {
			printf("%s (pasco %s)\n", option_program(argv),
			    PASCO_VERSION);
			return 0;
		} else if (opt == ':') {
			return option_error(argv, "a value is missing after",
			    argv[optind - 1]);
		} else {
			return option_error(
			    argv, "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		return option_error(argv, "unexpected argument", argv[optind]);
	}
	return -1;
}

/* The evaluator runs the chief's program (server.h); these examples have
 * no sidecar evaluation yet. */
static inline int
evaluator_has_nothing_to_do(const pasco_cluster *cluster)
{
	if (pasco_cluster_task_role(cluster) != PASCO_ROLE_EVALUATOR) {
		return 0;
	}
	printf("evaluator: nothing to evaluate in this example\n");
	return 1;
}

/* Monotonic seconds. */
static inline double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Says on stderr what failed ("" : the message alone): the message the
 * object keeps, if any.
 * Returns rv. */
static inline int
report(int rv, const char *what, const char *detail)
{
	fprintf(stderr, "%s%s%s\n", what, what[0] != 0 ? ": " : "",
	    detail != NULL && detail[0] != 0 ? detail : pasco_strerror(rv));
	return rv;
}

/* One epoch of a custom loop: schedules fn with args `steps` times, joins,
 * and fetches the last step's loss (a scalar) into *loss. 0, or the error,
 * said on stderr. */
static inline int
run_epoch(pasco_coordinator *c, const char *fn, const pasco_arg *args,
    size_t nargs, int steps, double *loss)
{
	pasco_remote_value *last = NULL;
	const pasco_value  *value;
	int                 rv = 0;
	for (int i = 0; i < steps && rv == 0; i++) {
		pasco_remote_value_free(last);
		last = NULL;
		rv   = pasco_schedule(c, fn, args, nargs, &last);
	}
	if (rv == 0) {
		rv = pasco_join(c);
	}
	if (rv != 0) {
		report(rv, "training failed", pasco_coordinator_error(c));
	} else if ((rv = pasco_remote_value_fetch(last, &value)) != 0) {
		report(
		    rv, "fetching the loss", pasco_remote_value_error(last));
	} else {
		*loss = pasco_value_scalar(value);
	}
	pasco_remote_value_free(last);
	return rv;
}

/* The evaluator task of an example that trains the compiled model m with
 * checkpoints in ckpt_dir: a sidecar evaluator of m
 * (pasco_model_evaluator_run), each checkpoint evaluated exactly once
 * over 4 shards of the factory `dataset`, reported as loss and m's
 * metrics (one JSON line per checkpoint; eval scalars in logdir/eval). It
 * ends after the checkpoint of final_step, or timeout_s without a new
 * one. Without ckpt_dir, says there is nothing to evaluate. Returns -1
 * when this task is not the evaluator (m is left alone), else the task's
 * exit status, m freed. */
static inline int
evaluator_task(const pasco_cluster *cluster, pasco_model *m,
    const char *dataset, const char *ckpt_dir, const char *logdir,
    int64_t final_step, int timeout_s)
{
	int64_t count, last;
	int     rv = PASCO_OK;
	if (pasco_cluster_task_role(cluster) != PASCO_ROLE_EVALUATOR) {
		return -1;
	}
	if (ckpt_dir == NULL) {
		printf("evaluator: nothing to evaluate without "
		       "--checkpoint-dir\n");
	} else if ((rv = pasco_model_evaluator_run(m, dataset,
	                &(pasco_evaluator_options){.checkpoint_dir = ckpt_dir,
	                    .logdir                                = logdir,
	                    .final_step = final_step,
	                    .timeout_ms = (int64_t) timeout_s * 1000},
	                &count, &last)) != 0) {
		report(rv, "evaluation", pasco_model_last_error());
	} else {
		printf("evaluator: evaluated %lld checkpoints, the last at "
		       "step %lld\n",
		    (long long) count, (long long) last);
	}
	pasco_model_free(m);
	return rv == 0 ? 0 : 1;
}

/* "Finished epoch N, loss = X, accuracy = Y": the tutorial's line. */
static inline int
print_epoch_line(int epoch, double loss, double accuracy)
{
	printf("Finished epoch %d, loss = %.4f, accuracy = %.4f\n", epoch,
	    loss, accuracy);
	return fflush(stdout);
}

/* Says on stderr why a model's training failed: the model's message and
 * the strategy's s (may be NULL). Returns rv. */
static inline int
report_failure(int rv, pasco_strategy *s)
{
	const char *what = pasco_model_last_error();
	fprintf(stderr, "training failed: %s%s%s\n", what,
	    what[0] != 0 && s != NULL && pasco_strategy_error(s)[0] ? ": "
	                                                            : "",
	    s != NULL ? pasco_strategy_error(s) : "");
	return rv;
}

/* pasco_model_evaluate of the compiled model m over `shards` shards (0:
 * one per worker) of the factory `dataset`; prints "accuracy = X" and sets
 * *accuracy. 0, or the error (pasco_model_last_error says why). */
static inline int
evaluate_accuracy(pasco_coordinator *c, pasco_model *m, const char *dataset,
    int shards, double *accuracy)
{
	pasco_logs logs;
	int        rv = pasco_model_evaluate(c, m,
	           &(pasco_model_evaluate_options){
	               .dataset = dataset, .shards = shards},
	           &logs);
	if (rv != 0) {
		return report(
		    rv, "evaluation failed", pasco_model_last_error());
	}
	if (pasco_logs_get(&logs, "accuracy", accuracy)) {
		printf("accuracy = %.4f\n", *accuracy);
	}
	return rv;
}

#endif
