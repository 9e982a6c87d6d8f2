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
 * (report), run one epoch of a custom loop (run_epoch), the callbacks of a
 * fit (fit_callbacks) and the sidecar evaluator of a compiled model's
 * checkpoints (evaluate_model_checkpoints).
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
 * after an error (said on stderr). usage is the first line of --help. */
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
			printf("usage: %s\n", usage);
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

/* Says on stderr what failed: the message the object keeps, if any.
 * Returns rv. */
static inline int
report(int rv, const char *what, const char *detail)
{
	fprintf(stderr, "%s: %s\n", what,
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

/* The callbacks of the examples' fits, *out: a progress display (with
 * progress); with ckpt_dir, a checkpoint each epoch in ckpt_dir (keeping
 * keep; 0: all) and, with backup, BackupAndRestore in ckpt_dir/backup (a
 * restarted chief resumes at the interrupted epoch); with logdir,
 * TensorBoard event files in logdir/train and logdir/eval (and the
 * learning rate lr, unless 0). 0, or the
 * error said on stderr (*out NULL). */
static inline int
fit_callbacks(pasco_strategy *s, bool progress, const char *ckpt_dir, int keep,
    bool backup, const char *logdir, double lr, pasco_callbacks **out)
{
	pasco_callback cb;
	char           dir[4096];
	int            rv = pasco_callbacks_create(out);
	if (rv == 0 && ckpt_dir != NULL && backup) {
		snprintf(dir, sizeof(dir), "%s/backup", ckpt_dir);
		if ((rv = pasco_callback_backup_restore(&cb, s, dir)) == 0) {
			rv = pasco_callbacks_add(*out, cb);
		}
	}
	if (rv == 0 && ckpt_dir != NULL &&
	    (rv = pasco_callback_checkpoint(&cb,
	         &(pasco_checkpoint_callback_options){
	             .strategy = s, .dir = ckpt_dir, .keep = keep})) == 0) {
		rv = pasco_callbacks_add(*out, cb);
	}
	if (rv == 0 && logdir != NULL &&
	    (rv = pasco_callback_tensorboard(
	         &cb, &(pasco_tensorboard_options){
	                  .logdir = logdir, .learning_rate = lr})) == 0) {
		rv = pasco_callbacks_add(*out, cb);
	}
	if (rv == 0 && progress &&
	    (rv = pasco_callback_progress(&cb, NULL)) == 0) {
		rv = pasco_callbacks_add(*out, cb);
	}
	if (rv != 0) {
		report(rv, "setting up the callbacks", pasco_fit_error());
		pasco_callbacks_free(*out);
		*out = NULL;
	}
	return rv;
}

/* The evaluator task of an example that trains the compiled model m with
 * checkpoints in ckpt_dir: a sidecar evaluator of m
 * (pasco_model_evaluator_run), each checkpoint evaluated exactly once
 * over 4 shards of the factory `dataset`, reported as loss and m's
 * metrics (one JSON line per checkpoint; eval scalars in logdir/eval). It
 * ends after the checkpoint of final_step, or timeout_s without a new
 * one. Without ckpt_dir, says that it needs `needs`. Takes m over (frees
 * it). Returns the exit status. */
static inline int
evaluate_model_checkpoints(pasco_model *m, const char *dataset,
    const char *ckpt_dir, const char *logdir, int64_t final_step,
    int timeout_s, const char *needs)
{
	int64_t count, last;
	int     rv = PASCO_OK;
	if (ckpt_dir == NULL) {
		printf("evaluator: nothing to evaluate without %s\n", needs);
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

/* Prints how a partitioned variable is split over the ps tasks. */
static inline void
print_layout(pasco_variable *v)
{
	for (int32_t i = 0, task; i < pasco_variable_num_shards(v); i++) {
		int64_t off, rows;
		pasco_variable_shard(v, i, &task, &off, &rows);
		printf("%s/part_%d: rows [%lld, %lld) on ps %d\n",
		    pasco_variable_name(v), i, (long long) off,
		    (long long) (off + rows), task);
	}
}

/* Resuming: restores the newest intact checkpoint of dir (a damaged newer
 * one is skipped, with a warning naming it), if any, and sets *epoch to
 * the epoch after it (steps per epoch). 0 (none is a fresh start), or the
 * error said on stderr. */
static inline int
resume_latest(pasco_strategy *s, const char *dir, int steps, int *epoch)
{
	int64_t step;
	int rv = dir != NULL ? pasco_checkpoint_restore_latest(s, dir, &step)
	                     : PASCO_ENOTFOUND;
	if (rv == 0) {
		*epoch = (int) (step / steps);
		printf("resuming from %s/ckpt-%lld: step %lld, epoch %d\n",
		    dir, (long long) step, (long long) step, *epoch);
	}
	return rv == 0 || rv == PASCO_ENOTFOUND
	           ? 0
	           : report(rv, "restoring a checkpoint",
	                 pasco_strategy_error(s));
}

#endif
