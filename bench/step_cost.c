/*
 * Step cost (issue 21): where a training step's CPU goes. The two models of
 * bench/train.h trained by 1 worker with the first 1, 2 and 4 ps (every
 * variable split over them, fixed shards, as distributed_on does): steps/s
 * beside the same step in this one process (in_process, the compute
 * ceiling), and for each role (chief, worker, each ps in use) the CPU (user
 * + system) and context switches (voluntary + involuntary) per step over
 * the timed steps only, with all roles' CPU per step against the
 * one-process step's.
 *
 * Then the worker's context switches per round trip: a step makes 1 + 2P
 * round trips with P ps (the closure from the chief, and to each ps one
 * read and one apply: a step's reads of one ps travel as one VAR_MULTI, its
 * applies as another), measured unpinned and again with every thread of
 * every process (chief, worker, ps) pinned to the first 2 CPUs of this
 * process's set and to the first one (as taskset -c would), each beside
 * the unpinned figure of the same run; then the CPU sets are put back.
 * The voluntary switches (waits) are shown apart from the involuntary
 * ones (preemptions: mostly a peer the worker's send woke taking its CPU).
 *
 *     pasco launch --ps 4 --workers 1 -- build/bench/step_cost [--steps N]
 *
 * The other roles are the chief's siblings: pasco launch starts every task
 * as a child of its one thread (/proc/PPID/task/PPID/children), each with
 * the same cluster in TF_CONFIG and its own "task". CPU is utime + stime of
 * /proc/PID/stat (every thread, ended ones included) in clock ticks, so a
 * process's figure is good to one tick over the timed steps (printed as
 * us/step); context switches are summed over /proc/PID/task/(each)/status,
 * live threads only. Without its siblings (not started by pasco launch)
 * the chief says so on stderr and reports its own figures only.
 *
 * N timed steps per figure (the one-process figure: N in all, over its
 * TRAIN_REPEATS runs); by default as many as take about 3 s at the rate of
 * a warm-up of 100 steps.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "step_procs.h"
#include "train.h"

#define SECONDS 3.0
#define WARMUP 100
#define MAX_SIZES 5 /* 1, 2, 4, 8, 16 ps */

/* Timed steps: `given`, or about SECONDS' worth at `rate`. */
static long
timed_steps(long given, double rate)
{
	long n = (long) (rate * SECONDS);
	return given > 0 ? given : n > WARMUP ? n : WARMUP;
}

/* m in this process alone: best rate of TRAIN_REPEATS runs, CPU and
 * switches of all of them (its setup, under a millisecond, included). */
static void
measure_one_process(const model *m, long given, cost *c)
{
	procs self = {.pid = {getpid()}, .n = 1};
	usage a, b;
	long  runs = timed_steps(given, in_process(m->nvars, WARMUP / 2)) /
	            TRAIN_REPEATS;
	c->steps = runs * TRAIN_REPEATS;
	snapshot(&self, &a);
	c->rate = in_process(m->nvars, runs);
	snapshot(&self, &b);
	cost_between(c, 1, &a, &b);
}

/* m with 1 worker and the first `ps` ps: a warm-up, then the timed steps
 * with every process of p read before and after. 0 or -1. */
static int
measure_cluster(const pasco_cluster *cluster, const procs *p, const model *m,
    size_t ps, long given, cost *c)
{
	train_session ts;
	usage         a[MAX_PROCS], b[MAX_PROCS];
	double        warm;
	int           rv = -1;

	if (train_session_init(&ts, cluster, m, ps, 1) == 0 &&
	    (warm = train_session_run(&ts, WARMUP)) > 0) {
		c->steps = timed_steps(given, warm);
		snapshot(p, a);
		c->rate = train_session_run(&ts, c->steps);
		snapshot(p, b);
		if (c->rate > 0) {
			cost_between(c, p->n, a, b);
			rv = 0;
		}
	}
	train_session_fini(&ts);
	return rv;
}

/* The CPU sets a cluster figure is measured under: unpinned (every CPU
 * of this process's set at start), then pinned to its first 2 and its
 * first 1. */
#define PINNINGS 3
static const int PIN_CPUS[PINNINGS] = {0, 2, 1}; /* 0: unpinned */

/* The first n CPUs of all into *set (all of them when n is 0); false when
 * all has fewer than n. */
static bool
first_cpus(const cpu_set_t *all, int n, cpu_set_t *set)
{
	int got = 0;
	CPU_ZERO(set);
	for (int c = 0; c < CPU_SETSIZE && (n == 0 || got < n); c++) {
		if (CPU_ISSET(c, all)) {
			CPU_SET(c, set);
			got++;
		}
	}
	return got >= n;
}

/* Pins every live thread of every process of p to set (threads started
 * later inherit it from the one starting them). 0, or -1 naming the
 * thread that refused on stderr. */
static int
pin_all(const procs *p, const cpu_set_t *set)
{
	int rv = 0;
	for (size_t i = 0; i < p->n; i++) {
		char           path[64];
		DIR           *d;
		struct dirent *e;
		snprintf(path, sizeof(path), "/proc/%d/task", (int) p->pid[i]);
		if ((d = opendir(path)) == NULL) {
			fprintf(stderr, "step_cost: cannot read %s: %s\n",
			    path, strerror(errno));
			return -1;
		}
		while ((e = readdir(d)) != NULL) {
			pid_t tid = (pid_t) atoi(e->d_name);
			if (tid > 0 &&
			    sched_setaffinity(tid, sizeof(*set), set) != 0 &&
			    errno != ESRCH) { /* ESRCH: it ended meanwhile */
				fprintf(stderr,
				    "step_cost: cannot pin thread %d of "
				    "process %d: %s\n",
				    (int) tid, (int) p->pid[i],
				    strerror(errno));
				rv = -1;
			}
		}
		closedir(d);
	}
	return rv;
}

/* measure_cluster with every process of p pinned to the first ncpus CPUs
 * of all (0: unpinned), put back to all after. 0, -1, or 1 when it cannot
 * be measured (all has fewer CPUs, or p holds the chief alone: nothing to
 * pin). */
static int
measure_pinned(const pasco_cluster *cluster, const procs *p, const model *m,
    size_t ps, long given, const cpu_set_t *all, int ncpus, cost *c)
{
	cpu_set_t set;
	int       rv;
	if (ncpus == 0) {
		return measure_cluster(cluster, p, m, ps, given, c);
	}
	if (p->n == 1 || !first_cpus(all, ncpus, &set)) {
		return 1;
	}
	rv = pin_all(p, &set) == 0
	         ? measure_cluster(cluster, p, m, ps, given, c)
	         : -1;
	if (pin_all(p, all) != 0) {
		rv = -1;
	}
	return rv;
}

/* The round trips of one step with `ps` ps: the closure (chief to
 * worker), and each ps's read and apply (one VAR_MULTI each). */
static double
round_trips(size_t ps)
{
	return 1.0 + 2.0 * (double) ps;
}

/* The machine's floor per message: k round trips of 64 bytes over a Unix
 * socket pair between this process and a child that echoes them, nothing
 * else done; CPU microseconds per round trip of this side (*self_us) and
 * the echo's (*peer_us), this side's context switches (*switches). The
 * two are pinned to one CPU (same) or to two (a wake-up then crosses to
 * the other CPU, an inter-processor interrupt: on a VM, an exit to the
 * hypervisor); this process's own CPU set is put back after. 0, or -1
 * (also with a single CPU and !same). */
static int
floor_cost(
    long k, bool same, double *self_us, double *peer_us, double *switches)
{
	cpu_set_t mine, one;
	int       cpus[2], n = 0, sv[2], rv = 0;
	pid_t     echo;
	char      buf[64] = {0};
	procs     self    = {.pid = {getpid()}, .n = 1};
	usage     a = {0}, b = {0};
	double    p0 = 0;

	if (sched_getaffinity(0, sizeof(mine), &mine) != 0) {
		return -1;
	}
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++) {
		if (CPU_ISSET(c, &mine)) {
			cpus[n++] = c;
		}
	}
	if (n < (same ? 1 : 2) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		return -1;
	}
	if ((echo = fork()) == 0) {
		CPU_ZERO(&one);
		CPU_SET(cpus[same ? 0 : 1], &one);
		(void) sched_setaffinity(0, sizeof(one), &one);
		close(sv[0]);
		while (read(sv[1], buf, sizeof(buf)) == sizeof(buf) &&
		       write(sv[1], buf, sizeof(buf)) == sizeof(buf)) {
		}
		_exit(0);
	}
	close(sv[1]);
	CPU_ZERO(&one);
	CPU_SET(cpus[0], &one);
	(void) sched_setaffinity(0, sizeof(one), &one);
	for (long i = 0; echo > 0 && rv == 0 && i < k + k / 10; i++) {
		if (i == k / 10) { /* after the warm-up */
			snapshot(&self, &a);
			p0 = bench_cpu_of(echo);
		}
		rv = write(sv[0], buf, sizeof(buf)) == sizeof(buf) &&
		             read(sv[0], buf, sizeof(buf)) == sizeof(buf)
		         ? 0
		         : -1;
	}
	if (echo > 0 && rv == 0) {
		snapshot(&self, &b);
		*self_us  = (b.cpu - a.cpu) * 1e6 / (double) k;
		*peer_us  = (bench_cpu_of(echo) - p0) * 1e6 / (double) k;
		*switches = (b.switches - a.switches) / (double) k;
	}
	(void) sched_setaffinity(0, sizeof(mine), &mine);
	close(sv[0]); /* the echo reads its end and leaves */
	if (echo > 0) {
		waitpid(echo, NULL, 0);
	}
	return echo > 0 ? rv : -1;
}

/* The floor: the socket pair's round trip across two CPUs and on one. */
typedef struct floor_figures {
	double self_us, peer_us, switches; /* two CPUs */
	double same_self_us, same_peer_us, same_switches;
} floor_figures;

/* Measures and prints the floor into f. 0 or -1. */
static int
measure_floor(floor_figures *f)
{
	if (floor_cost(20000, false, &f->self_us, &f->peer_us, &f->switches) !=
	        0 ||
	    floor_cost(20000, true, &f->same_self_us, &f->same_peer_us,
	        &f->same_switches) != 0) {
		fprintf(stderr,
		    "step_cost: the floor's measurement failed (it "
		    "needs 2 CPUs)\n");
		return -1;
	}
	printf("the floor, one round trip of 64 B over a Unix socket pair "
	       "between two processes pinned to two CPUs: %.1f us of CPU on "
	       "the sender, %.1f on the echo, %.2f switches; pinned to one "
	       "CPU (no wake-up crosses CPUs): %.1f and %.1f us, %.2f "
	       "switches\n",
	    f->self_us, f->peer_us, f->switches, f->same_self_us,
	    f->same_peer_us, f->same_switches);
	bench_json("step_cost", "floor: sender CPU us per round trip",
	    f->self_us, "us", 0);
	bench_json("step_cost", "floor: echo CPU us per round trip",
	    f->peer_us, "us", 0);
	bench_json("step_cost", "floor: sender CPU us per round trip, one CPU",
	    f->same_self_us, "us", 0);
	bench_json("step_cost", "floor: echo CPU us per round trip, one CPU",
	    f->same_peer_us, "us", 0);
	return 0;
}

/* What each ps beyond the first adds to a step (c[0] with 1 ps, c[n - 1]
 * with the most) beside the floor for the two round trips a step makes
 * to each ps (its read, its apply). */
static void
print_per_ps(const model *m, const cost *c, const size_t *sizes, size_t n,
    const procs *p, const floor_figures *f)
{
	size_t extra = sizes[n - 1] - sizes[0];
	double worker, ps = 0;
	char   label[160];

	if (extra == 0 || p->n == 1 || c[0].cpu_us[1] < 0 ||
	    c[n - 1].cpu_us[1] < 0) {
		return;
	}
	worker = (c[n - 1].cpu_us[1] - c[0].cpu_us[1]) / (double) extra;
	for (size_t i = 0; i < sizes[n - 1]; i++) {
		ps += c[n - 1].cpu_us[2 + i];
	}
	ps = (ps - c[0].cpu_us[2]) / (double) extra;
	printf(
	    "  each ps beyond the first adds %.0f us of worker CPU and %.0f "
	    "of ps CPU per step",
	    worker, ps);
	if (f != NULL) {
		printf("; the floor for its two round trips: %.0f and %.0f "
		       "across CPUs, %.0f and %.0f on one",
		    2 * f->self_us, 2 * f->peer_us, 2 * f->same_self_us,
		    2 * f->same_peer_us);
	}
	printf("\n");
	snprintf(label, sizeof(label),
	    "%s: worker CPU us/step per ps beyond the first", m->name);
	bench_json("step_cost", label, worker, "us/step",
	    f != NULL ? 2 * f->self_us : 0);
	snprintf(label, sizeof(label),
	    "%s: ps CPU us/step per ps beyond the first", m->name);
	bench_json(
	    "step_cost", label, ps, "us/step", f != NULL ? 2 * f->peer_us : 0);
}

/* A role's name: chief, worker or "ps I". */
static const char *
role_name(size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", i == 0 ? "chief" : "worker");
	if (i >= 2) {
		snprintf(buf, len, "ps %d", (int) (i - 2) % 1000);
	}
	return buf;
}

/* All roles' CPU per step with `ps` ps, or -1 without the others. */
static double
total_cpu(const cost *c, const procs *p, size_t ps)
{
	double sum = 0;
	for (size_t i = 0; i < 2 + ps; i++) {
		if (p->n == 1 || c->cpu_us[i] < 0) {
			return -1;
		}
		sum += c->cpu_us[i];
	}
	return sum;
}

/* The JSON lines of figure c with `ps` ps, or (ps 0) the one-process one;
 * ratios against one. */
static void
emit_json(
    const model *m, size_t ps, const cost *c, const procs *p, const cost *one)
{
	char   what[64], label[160], role[32];
	double total = total_cpu(c, p, ps);

	if (ps == 0) {
		snprintf(what, sizeof(what), "%s, in one process", m->name);
	} else {
		snprintf(what, sizeof(what), "%s, %zu ps", m->name, ps);
	}
	snprintf(label, sizeof(label), "%s: steps/s", what);
	bench_json("step_cost", label, c->rate, "steps/s", ps ? one->rate : 0);
	for (size_t i = 0; i < (ps ? p->n : 1) && i < 2 + ps; i++) {
		char who[40] = ""; /* the role, where there are several */
		if (ps > 0) {
			snprintf(who, sizeof(who), "%s ",
			    role_name(i, role, sizeof(role)));
		}
		snprintf(label, sizeof(label), "%s: %sCPU us/step", what, who);
		bench_json("step_cost", label, c->cpu_us[i], "us/step", 0);
		snprintf(label, sizeof(label), "%s: %scontext switches/step",
		    what, who);
		bench_json(
		    "step_cost", label, c->switches[i], "switches/step", 0);
	}
	if (ps > 0 && total >= 0) {
		snprintf(
		    label, sizeof(label), "%s: all roles' CPU us/step", what);
		bench_json(
		    "step_cost", label, total, "us/step", one->cpu_us[0]);
	}
}

/* A ps outside the sub-cluster should have done nothing: says on stderr
 * if one used over 2 ticks during c's timed steps. */
static void
check_idle(const cost *c, const procs *p, size_t ps)
{
	double tick_us = 1e6 / (double) sysconf(_SC_CLK_TCK);
	for (size_t i = 2 + ps; i < p->n; i++) {
		if (c->cpu_us[i] * (double) c->steps > 2 * tick_us) {
			fprintf(stderr,
			    "step_cost: ps %zu, not in use, used %.1f us/step "
			    "with %zu ps\n",
			    i - 2, c->cpu_us[i], ps);
		}
	}
}

/* One table row: the one-process cell, then one per ps count (-1: blank). */
static void
print_row(const char *label, double one, const double *v, size_t n, int dec)
{
	printf("  %-28s", label);
	for (size_t k = 0; k <= n; k++) {
		double x = k == 0 ? one : v[k - 1];
		if (x < 0) {
			printf("%11s", "");
		} else {
			printf("%11.*f", dec, x);
		}
	}
	printf("\n");
}

/* Process i's CPU (or switches) per step in each figure where it is in
 * use into v. */
static const double *
role_column(const cost *c, const size_t *sizes, size_t n, size_t i, bool cpu,
    double *v)
{
	for (size_t k = 0; k < n; k++) {
		v[k] = i >= 2 + sizes[k] ? -1
		       : cpu             ? c[k].cpu_us[i]
		                         : c[k].switches[i];
	}
	return v;
}

static void
print_table(const model *m, const cost *one, const cost *c,
    const size_t *sizes, size_t n, const procs *p)
{
	double v[MAX_SIZES], tot[MAX_SIZES];
	double tick_us = 1e6 / (double) sysconf(_SC_CLK_TCK);
	char   label[64], role[32];

	printf("\n%-30s%11s", m->name, "one process");
	for (size_t k = 0; k < n; k++) {
		printf("%8zu ps", sizes[k]);
	}
	printf("\n");
	for (size_t k = 0; k < n; k++) {
		v[k]   = c[k].rate;
		tot[k] = total_cpu(&c[k], p, sizes[k]);
	}
	print_row("steps/s", one->rate, v, n, 0);
	for (size_t k = 0; k < n; k++) {
		v[k] = c[k].rate / one->rate;
	}
	print_row("  x one process", -1, v, n, 2);
	for (size_t k = 0; k < n; k++) {
		v[k] = (double) c[k].steps;
	}
	print_row("timed steps", (double) one->steps, v, n, 0);
	for (size_t k = 0; k < n; k++) {
		v[k] = tick_us / (double) c[k].steps;
	}
	print_row(
	    "CPU us/step: one tick", tick_us / (double) one->steps, v, n, 1);
	for (size_t i = 0; i < p->n; i++) {
		snprintf(label, sizeof(label), "CPU us/step: %s",
		    role_name(i, role, sizeof(role)));
		print_row(
		    label, -1, role_column(c, sizes, n, i, true, v), n, 0);
	}
	print_row("CPU us/step: all roles", one->cpu_us[0], tot, n, 0);
	for (size_t k = 0; k < n; k++) {
		v[k] = tot[k] / one->cpu_us[0];
	}
	if (p->n > 1) {
		print_row("  x one process", -1, v, n, 2);
	}
	for (size_t i = 0; i < p->n; i++) {
		snprintf(label, sizeof(label), "switches/step: %s",
		    role_name(i, role, sizeof(role)));
		print_row(label, i == 0 ? one->switches[0] : -1,
		    role_column(c, sizes, n, i, false, v), n, 2);
	}
}

/* How figures were pinned: "unpinned", "pinned to 2 CPUs" ... */
static const char *
pinning_name(int j, char *buf, size_t len)
{
	if (PIN_CPUS[j] == 0) {
		snprintf(buf, len, "unpinned");
	} else {
		snprintf(buf, len, "pinned to %d CPU%s", PIN_CPUS[j],
		    PIN_CPUS[j] == 1 ? "" : "s");
	}
	return buf;
}

/* The JSON lines of pinned figure c (pinning j, `ps` ps) beside the
 * unpinned one, base. */
static void
emit_pinned_json(
    const model *m, size_t ps, int j, const cost *c, const cost *base)
{
	char how[32], label[160];
	pinning_name(j, how, sizeof(how));
	if (j > 0) {
		snprintf(label, sizeof(label), "%s, %zu ps, %s: steps/s",
		    m->name, ps, how);
		bench_json("step_cost", label, c->rate, "steps/s", base->rate);
		snprintf(label, sizeof(label),
		    "%s, %zu ps, %s: worker context switches/step", m->name,
		    ps, how);
		bench_json("step_cost", label, c->switches[1], "switches/step",
		    base->switches[1]);
	}
	snprintf(label, sizeof(label),
	    "%s, %zu ps, %s: worker switches per round trip", m->name, ps,
	    how);
	bench_json("step_cost", label, c->switches[1] / round_trips(ps),
	    "switches/round trip", 0);
}

/* Issue 35's bound on this machine: a worker's context switches per step,
 * unpinned and with every role pinned to 2 CPUs, at most 1.5 times the
 * round trips the step makes. */
#define SWITCH_BOUND 1.5

/* The worker's switches per round trip under each pinning, pc[j][k] for
 * PIN_CPUS[j] and sizes[k] (steps 0: not measured, with why). */
static void
print_round_trips(const cost pc[PINNINGS][MAX_SIZES], const size_t *sizes,
    size_t n, const char *why)
{
	double v[MAX_SIZES];
	double worst = -1; /* unpinned and pinned to 2: SWITCH_BOUND's */
	char   how[32];

	printf("  worker switches per round trip (a step's round trips: the "
	       "closure, and a read and an apply per ps; pinned: every "
	       "thread of every role)\n");
	for (size_t k = 0; k < n; k++) {
		v[k] = round_trips(sizes[k]);
	}
	print_row("round trips per step", -1, v, n, 0);
	for (int j = 0; j < PINNINGS; j++) {
		pinning_name(j, how, sizeof(how));
		if (pc[j][0].steps == 0) {
			printf("  %s: not measured (%s)\n", how, why);
			continue;
		}
		printf("  %s:\n", how);
		for (size_t k = 0; k < n; k++) {
			v[k] = pc[j][k].rate;
		}
		print_row("  steps/s", -1, v, n, 0);
		for (size_t k = 0; k < n; k++) {
			v[k] = pc[j][k].switches[1];
		}
		print_row("  worker switches/step", -1, v, n, 2);
		for (size_t k = 0; k < n; k++) {
			v[k] = pc[j][k].voluntary[1];
		}
		print_row("    of them voluntary", -1, v, n, 2);
		for (size_t k = 0; k < n; k++) {
			v[k] =
			    pc[j][k].switches[1] < 0
			        ? -1
			        : pc[j][k].switches[1] / round_trips(sizes[k]);
		}
		print_row("  switches per round trip", -1, v, n, 2);
		for (size_t k = 0; k < n && PIN_CPUS[j] != 1; k++) {
			worst = v[k] > worst ? v[k] : worst;
		}
	}
	if (worst >= 0) {
		printf(
		    "  target: at most %.1f worker switches per round trip, "
		    "unpinned and pinned to 2 CPUs: %s (at most %.2f)\n",
		    SWITCH_BOUND, worst <= SWITCH_BOUND ? "met" : "MISSED",
		    worst);
	}
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	long          given = 0;
	size_t        nps = pasco_cluster_count(cluster, PASCO_ROLE_PS), n = 0;
	size_t        sizes[MAX_SIZES];
	procs         p;
	cost          one, pc[PINNINGS][MAX_SIZES];
	floor_figures fl;
	cpu_set_t     all;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--steps") == 0) {
			given = atol(argv[i + 1]);
		}
	}
	for (size_t k = 1; k <= nps && k <= MAX_PS; k *= 2) {
		sizes[n++] = k;
	}
	if (sched_getaffinity(0, sizeof(all), &all) != 0) {
		fprintf(stderr,
		    "step_cost: cannot read this process's CPUs: %s\n",
		    strerror(errno));
		return 1;
	}
	/* the launcher may still be starting the last of them */
	for (int tries = 0; tries < 50; tries++) {
		procs_find(&p, nps < MAX_PS ? nps : MAX_PS);
		if (p.n > 1) {
			break;
		}
		usleep(100 * 1000);
	}
	if (p.n == 1) {
		fprintf(stderr,
		    "step_cost: the worker and ps processes are not "
		    "among this chief's siblings (not started by "
		    "pasco launch?): the chief's figures only\n");
	}
	printf("step cost: 1 worker, batch %d, SGD %.2f, every variable split "
	       "over the ps in use (fixed shards). CPU: user + system, in "
	       "clock ticks of %.0f ms from /proc/PID/stat (the resolution: "
	       "one tick per process per figure, the \"one tick\" row); "
	       "context switches: voluntary + involuntary; per step, over "
	       "the timed steps only\n",
	    BATCH, LR, 1e3 / (double) sysconf(_SC_CLK_TCK));
	bool have_floor = measure_floor(&fl) == 0; /* not with one CPU */
	for (size_t m = 0; m < sizeof(MODELS) / sizeof(MODELS[0]); m++) {
		const char *why = "";
		measure_one_process(&MODELS[m], given, &one);
		emit_json(&MODELS[m], 0, &one, &p, NULL);
		for (size_t k = 0; k < n; k++) {
			for (int j = 0; j < PINNINGS; j++) {
				cost *c = &pc[j][k];
				int   rv =
				    measure_pinned(cluster, &p, &MODELS[m],
				        sizes[k], given, &all, PIN_CPUS[j], c);
				if (rv < 0) {
					fprintf(stderr,
					    "step_cost: %s with %zu ps "
					    "failed\n",
					    MODELS[m].name, sizes[k]);
					return 1;
				}
				if (rv > 0) { /* cannot be pinned here */
					c->steps = 0;
					why      = p.n == 1
					               ? "the other roles were not "
					                 "found"
					               : "fewer CPUs here";
					continue;
				}
				emit_pinned_json(
				    &MODELS[m], sizes[k], j, c, &pc[0][k]);
			}
			emit_json(&MODELS[m], sizes[k], &pc[0][k], &p, &one);
			check_idle(&pc[0][k], &p, sizes[k]);
		}
		print_table(&MODELS[m], &one, pc[0], sizes, n, &p);
		print_per_ps(
		    &MODELS[m], pc[0], sizes, n, &p, have_floor ? &fl : NULL);
		print_round_trips(pc, sizes, n, why);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
