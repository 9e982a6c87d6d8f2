/*
 * `pasco slurm`: run by every task of an srun step, it derives the task's
 * TF_CONFIG from the variables Slurm sets (as TensorFlow's
 * SlurmClusterResolver does) and execs the program with it. Nothing is
 * exchanged between tasks: each derives the same cluster from the same
 * step variables, so every task agrees on every address and role.
 *
 * Order: tasks are ranked node by node, in hostlist order, which is the
 * rank Slurm gives them under its default block distribution; the task's
 * own SLURM_LOCALID and SLURMD_NODENAME are checked against that, so a
 * cyclic step fails with a message instead of a cluster that disagrees.
 * Ranks 0..N-1 are the ps tasks, rank N the chief, the rest workers.
 *
 * Every task execs the program. When the chief's succeeds, it tells the
 * ps tasks and workers it is done and they exit 0 (pasco_main, server.h),
 * so the step ends with the chief's status; a chief that fails or is killed
 * leaves them to the chief timeout, after which they exit 138. Single-threaded; the expanders are pure functions.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"
#include "slurm.h"

#define MAX_HOSTS 65536
#define MAX_TASKS 65536

extern char **environ;

typedef struct strv {
	char **v;
	size_t n, cap;
} strv;

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Takes s (NULL is out of memory). */
static int
strv_push(strv *sv, char *s)
{
	if (s == NULL) {
		return -1;
	}
	if (sv->n + 1 >= sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 8;
		char **v   = realloc(sv->v, cap * sizeof(*v));
		if (v == NULL) {
			free(s);
			return -1;
		}
		sv->v   = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n]   = NULL;
	return 0;
}

void
pasco_slurm_strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++) {
		free(v[i]);
	}
	free(v);
}

/* Reads a run of at most 9 digits at *p. */
static int
parse_number(const char **p, const char *end, unsigned long *v, int *width)
{
	const char *s = *p;
	*v            = 0;
	while (*p < end && isdigit((unsigned char) **p) && *p - s < 9) {
		*v = *v * 10 + (unsigned long) (**p - '0');
		(*p)++;
	}
	*width = (int) (*p - s);
	return *width > 0 && (*p == end || !isdigit((unsigned char) **p)) ? 0
	                                                                  : -1;
}

/* Appends prefix + each number of ranges ("1-3,07") + each of suffixes. */
static int
expand_ranges(strv *out, const char *prefix, int plen, const char *r,
    const char *end, char **suffixes, char *err, size_t errlen)
{
	while (r < end) {
		unsigned long lo, hi;
		int           width, w2;
		if (parse_number(&r, end, &lo, &width) != 0) {
			return fail(err, errlen, "a range must be digits");
		}
		hi = lo;
		if (r < end && *r == '-') {
			r++;
			if (parse_number(&r, end, &hi, &w2) != 0) {
				return fail(
				    err, errlen, "a range must be digits");
			}
			if (hi < lo) {
				return fail(err, errlen,
				    "range %lu-%lu decreases", lo, hi);
			}
		}
		if (r < end && *r++ != ',') {
			return fail(err, errlen, "a range must be digits");
		}
		if (r == end && r[-1] == ',') {
			return fail(err, errlen, "empty range");
		}
		for (unsigned long v = lo; v <= hi; v++) {
			for (size_t k = 0; suffixes[k] != NULL; k++) {
				char *s;
				if (out->n >= MAX_HOSTS) {
					return fail(err, errlen,
					    "more than %d hosts", MAX_HOSTS);
				}
				if (asprintf(&s, "%.*s%0*lu%s", plen, prefix,
				        width, v, suffixes[k]) < 0 ||
				    strv_push(out, s) != 0) {
					return fail(
					    err, errlen, "out of memory");
				}
			}
		}
	}
	return 0;
}

/* Expands one host expression (no top-level comma) of len bytes. */
static int
expand_one(strv *out, const char *h, size_t len, char *err, size_t errlen)
{
	const char *end      = h + len, *open, *close;
	strv        suffixes = {0};
	int         rv;

	for (open = h; open < end && *open != '['; open++) {
		if (*open == ']') {
			return fail(err, errlen, "']' without '['");
		}
		if (!isalnum((unsigned char) *open) && *open != '-' &&
		    *open != '.' && *open != '_') {
			return fail(err, errlen, "bad character '%c'", *open);
		}
	}
	if (open == end) {
		return strv_push(out, strndup(h, len)) == 0
		           ? 0
		           : fail(err, errlen, "out of memory");
	}
	close = memchr(open, ']', (size_t) (end - open));
	if (close == NULL) {
		return fail(err, errlen, "'[' without ']'");
	}
	if (memchr(open + 1, '[', (size_t) (close - open - 1)) != NULL) {
		return fail(err, errlen, "nested '['");
	}
	if (close == open + 1) {
		return fail(err, errlen, "empty brackets");
	}
	rv = expand_one(
	    &suffixes, close + 1, (size_t) (end - close - 1), err, errlen);
	if (rv == 0) {
		rv = expand_ranges(out, h, (int) (open - h), open + 1, close,
		    suffixes.v, err, errlen);
	}
	pasco_slurm_strv_free(suffixes.v);
	return rv;
}

int
pasco_slurm_hostlist_expand(
    const char *list, char ***out, size_t *n, char *err, size_t errlen)
{
	strv        hosts = {0};
	const char *p     = list;
	char        why[128];

	*out = NULL;
	*n   = 0;
	for (;;) {
		const char *q     = p;
		int         depth = 0;
		while (*q != 0 && (*q != ',' || depth > 0)) {
			depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
			q++;
		}
		if (q == p) {
			snprintf(why, sizeof(why), "empty host name");
		}
		if (q == p || expand_one(&hosts, p, (size_t) (q - p), why,
		                  sizeof(why)) != 0) {
			pasco_slurm_strv_free(hosts.v);
			return fail(
			    err, errlen, "hostlist \"%s\": %s", list, why);
		}
		if (*q == 0) {
			break;
		}
		p = q + 1;
	}
	*out = hosts.v;
	*n   = hosts.n;
	return 0;
}

int
pasco_slurm_tasks_per_node_expand(
    const char *spec, int **out, size_t *n, char *err, size_t errlen)
{
	int        *v    = NULL, *grown;
	size_t      used = 0;
	const char *p    = spec;

	*out = NULL;
	*n   = 0;
	do {
		char *end;
		long  count, times = 1;
		errno = 0;
		count = isdigit((unsigned char) *p) ? strtol(p, &end, 10) : 0;
		if (count < 1 || count > MAX_TASKS || errno != 0) {
			goto fail_syntax;
		}
		p = end;
		if (strncmp(p, "(x", 2) == 0) {
			times = isdigit((unsigned char) p[2])
			            ? strtol(p + 2, &end, 10)
			            : 0;
			if (times < 1 || times > MAX_HOSTS || *end != ')') {
				goto fail_syntax;
			}
			p = end + 1;
		}
		if ((*p != ',' && *p != 0) ||
		    used + (size_t) times > MAX_HOSTS) {
			goto fail_syntax;
		}
		if ((grown = realloc(
		         v, (used + (size_t) times) * sizeof(*v))) == NULL) {
			free(v);
			return fail(err, errlen, "out of memory");
		}
		v = grown;
		while (times-- > 0) {
			v[used++] = (int) count;
		}
	} while (*p++ == ',');
	*out = v;
	*n   = used;
	return 0;

fail_syntax:
	free(v);
	return fail(err, errlen,
	    "tasks per node \"%s\": want counts like \"2(x3),1\"", spec);
}

static const char *
env_get(char **env, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
		if (strncmp(env[i], name, len) == 0 && env[i][len] == '=') {
			return env[i] + len + 1;
		}
	}
	return NULL;
}

/* The first of two variables that is set; *name says which. */
static const char *
env_either(char **env, const char *a, const char *b, const char **name)
{
	const char *v = env_get(env, a);
	*name         = v != NULL ? a : b;
	return v != NULL ? v : env_get(env, b);
}

static int
env_int(char **env, const char *name, int *out, char *err, size_t errlen)
{
	const char *s = env_get(env, name);
	char       *end;
	long        v;
	if (s == NULL) {
		return fail(err, errlen,
		    "%s is not set: run pasco slurm through srun, inside a "
		    "Slurm allocation",
		    name);
	}
	errno = 0;
	v     = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || errno != 0 || v < 0 || v > INT_MAX) {
		return fail(
		    err, errlen, "%s=\"%s\" is not a task number", name, s);
	}
	*out = (int) v;
	return 0;
}

/* The step's hosts and how many tasks each runs, checked against the
 * task count. */
static int
step_layout(char **env, int ntasks, char ***hosts, int **per_node,
    size_t *nhosts, char *err, size_t errlen)
{
	const char *hv, *tv, *hname, *tname;
	char        why[256];
	size_t      ncounts;
	long        sum = 0;

	hv = env_either(
	    env, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", &hname);
	tv = env_either(
	    env, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", &tname);
	if (hv == NULL || tv == NULL) {
		return fail(err, errlen,
		    "%s is not set: run pasco slurm through srun, inside a "
		    "Slurm allocation",
		    hv == NULL ? "SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST)"
		               : "SLURM_STEP_TASKS_PER_NODE (or "
		                 "SLURM_TASKS_PER_NODE)");
	}
	if (pasco_slurm_hostlist_expand(hv, hosts, nhosts, why, sizeof(why)) !=
	    0) {
		return fail(err, errlen, "%s: %s", hname, why);
	}
	if (pasco_slurm_tasks_per_node_expand(
	        tv, per_node, &ncounts, why, sizeof(why)) != 0) {
		pasco_slurm_strv_free(*hosts);
		return fail(err, errlen, "%s: %s", tname, why);
	}
	for (size_t i = 0; i < ncounts; i++) {
		sum += (*per_node)[i];
	}
	if (ncounts == *nhosts && sum == ntasks) {
		return 0;
	}
	if (ncounts != *nhosts) {
		fail(err, errlen,
		    "%s=\"%s\" names %zu hosts but %s=\"%s\" counts tasks "
		    "on %zu",
		    hname, hv, *nhosts, tname, tv, ncounts);
	} else {
		fail(err, errlen,
		    "%s=\"%s\" places %ld tasks, but the step has %d", tname,
		    tv, sum, ntasks);
	}
	pasco_slurm_strv_free(*hosts);
	free(*per_node);
	return -1;
}

/* Writes the cluster's JSON: every rank's host:port, grouped by role. */
static char *
write_config(const pasco_slurm_task *t, char **hosts, const int *node_of,
    const int *local_of, int nps, int port_base)
{
	static const char *jobs[] = {"ps", "chief", "worker"};
	int    first[] = {0, nps, nps + 1}, last[] = {nps, nps + 1, t->ntasks};
	char  *json = NULL;
	size_t len;
	FILE  *f = open_memstream(&json, &len);

	if (f == NULL) {
		return NULL;
	}
	fprintf(f, "{\"cluster\":{");
	for (int j = 0; j < 3; j++) {
		fprintf(f, "%s\"%s\":[", j ? "," : "", jobs[j]);
		for (int r = first[j]; r < last[j]; r++) {
			fprintf(f, "%s\"%s:%d\"", r > first[j] ? "," : "",
			    hosts[node_of[r]], port_base + local_of[r]);
		}
		fprintf(f, "]");
	}
	fprintf(f, "},\"task\":{\"type\":\"%s\",\"index\":%d}}", t->role,
	    t->index);
	if (fclose(f) != 0) {
		free(json);
		return NULL;
	}
	return json;
}

/* Checks that Slurm placed this task where block order puts it. */
static int
check_placement(char **env, const char *host, int local, int rank, char *err,
    size_t errlen)
{
	const char *node = env_get(env, "SLURMD_NODENAME");
	const char *lid  = env_get(env, "SLURM_LOCALID");
	char        want[16];

	snprintf(want, sizeof(want), "%d", local);
	if ((node == NULL || strcmp(node, host) == 0) &&
	    (lid == NULL || strcmp(lid, want) == 0)) {
		return 0;
	}
	return fail(err, errlen,
	    "SLURM_PROCID=%d is local task %d on %s in block order, but "
	    "Slurm ran it as SLURM_LOCALID=%s on SLURMD_NODENAME=%s: run "
	    "the step with srun --distribution=block",
	    rank, local, host, lid ? lid : "(unset)", node ? node : "(unset)");
}

/* Ranks the tasks node by node and fills t from the layout. */
static int
place(pasco_slurm_task *t, char **env, char **hosts, const int *per_node,
    size_t nhosts, int nps, int port_base, char *err, size_t errlen)
{
	int *node_of  = malloc((size_t) t->ntasks * sizeof(int));
	int *local_of = malloc((size_t) t->ntasks * sizeof(int));
	int  r = 0, rv = -1, most = 0;

	if (node_of == NULL || local_of == NULL) {
		fail(err, errlen, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < nhosts; i++) {
		for (int l = 0; l < per_node[i]; l++, r++) {
			node_of[r]  = (int) i;
			local_of[r] = l;
		}
		most = per_node[i] > most ? per_node[i] : most;
	}
	if (port_base + most - 1 > 65535) {
		fail(err, errlen,
		    "--port-base %d leaves no port for %d tasks on a node",
		    port_base, most);
		goto done;
	}
	if (check_placement(env, hosts[node_of[t->rank]], local_of[t->rank],
	        t->rank, err, errlen) != 0) {
		goto done;
	}
	t->role  = t->rank < nps ? "ps" : t->rank == nps ? "chief" : "worker";
	t->index = t->rank < nps    ? t->rank
	           : t->rank == nps ? 0
	                            : t->rank - nps - 1;
	snprintf(t->address, sizeof(t->address), "%s:%d",
	    hosts[node_of[t->rank]], port_base + local_of[t->rank]);
	t->tf_config =
	    write_config(t, hosts, node_of, local_of, nps, port_base);
	rv = t->tf_config != NULL ? 0 : fail(err, errlen, "out of memory");
done:
	free(node_of);
	free(local_of);
	return rv;
}

int
pasco_slurm_task_init(pasco_slurm_task *t, char **env, int nps, int port_base,
    char *err, size_t errlen)
{
	const char *ntname = env_get(env, "SLURM_STEP_NUM_TASKS") != NULL
	                         ? "SLURM_STEP_NUM_TASKS"
	                         : "SLURM_NTASKS";
	char      **hosts;
	int        *per_node, rv;
	size_t      nhosts;

	memset(t, 0, sizeof(*t));
	if (env_int(env, "SLURM_PROCID", &t->rank, err, errlen) != 0 ||
	    env_int(env, ntname, &t->ntasks, err, errlen) != 0) {
		return -1;
	}
	if (t->rank >= t->ntasks) {
		return fail(err, errlen, "SLURM_PROCID=%d is not below %s=%d",
		    t->rank, ntname, t->ntasks);
	}
	if (nps < 1 || t->ntasks < nps + 2) {
		return fail(err, errlen,
		    "the step has %d tasks; with --ps %d it needs at least %d "
		    "(the ps tasks, the chief and a worker): srun -n",
		    t->ntasks, nps, nps + 2);
	}
	if (step_layout(env, t->ntasks, &hosts, &per_node, &nhosts, err,
	        errlen) != 0) {
		return -1;
	}
	rv = place(
	    t, env, hosts, per_node, nhosts, nps, port_base, err, errlen);
	pasco_slurm_strv_free(hosts);
	free(per_node);
	return rv;
}

void
pasco_slurm_task_fini(pasco_slurm_task *t)
{
	if (t != NULL) {
		free(t->tf_config);
		t->tf_config = NULL;
	}
}

static void
usage(FILE *to)
{
	fprintf(to, "usage: pasco slurm [--ps N] [--port-base P] -- PROGRAM "
	            "[ARGS...]\n"
	            "  Run by every task of an srun step: derives the task's "
	            "TF_CONFIG\n"
	            "  from Slurm's variables (ranks 0..N-1 ps, default N = "
	            "1; rank N\n"
	            "  the chief; the rest workers; each listening on its "
	            "node at P +\n"
	            "  its local rank, default P = 8888) and execs PROGRAM "
	            "with it.\n");
}

static int
parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long  v;
	errno = 0;
	v     = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || errno != 0 || v < lo || v > hi) {
		return -1;
	}
	*out = (int) v;
	return 0;
}

int
pasco_slurm(int argc, char **argv)
{
	static const struct option options[] = {
	    {"ps", required_argument, 0, 'p'},
	    {"port-base", required_argument, 0, 'b'},
	    {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	int              nps = 1, port_base = 8888, opt;
	pasco_slurm_task t;
	char             err[1024];

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+", options, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'p' && parse_int(optarg, 1, MAX_TASKS, &nps) != 0) {
			return tool_usage_error("pasco slurm",
			    "--ps '%s' is not a number of ps tasks (1 or "
			    "more)",
			    optarg);
		}
		if (opt == 'b' &&
		    parse_int(optarg, 1, 65535, &port_base) != 0) {
			return tool_usage_error("pasco slurm",
			    "--port-base '%s' is not a port (1 to 65535)",
			    optarg);
		}
		if (opt == '?' || opt == ':') {
			return tool_usage_error("pasco slurm",
			    "unknown or incomplete option '%s'",
			    argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		return tool_usage_error(
		    "pasco slurm", "%s", "no program to run after --");
	}
	argv += optind;
	if (pasco_slurm_task_init(
	        &t, environ, nps, port_base, err, sizeof(err)) != 0) {
		fprintf(stderr, "pasco slurm: %s\n", err);
		return 2;
	}
	fprintf(stderr, "pasco slurm: task %d of %d is %s %d at %s\n", t.rank,
	    t.ntasks, t.role, t.index, t.address);
	if (setenv("TF_CONFIG", t.tf_config, 1) != 0) {
		fprintf(stderr, "pasco slurm: %s\n", strerror(errno));
		return 1;
	}
	pasco_slurm_task_fini(&t);
	execvp(argv[0], argv);
	fprintf(stderr, "pasco slurm: cannot run %s: %s\n", argv[0],
	    strerror(errno));
	return 127;
}
