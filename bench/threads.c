/*
 * Threads per process by role (issue 35): the chief (this process, its
 * coordinator having run closures on every worker at window 1), each ps and
 * worker of the launch (found by the port it listens on) and an evaluator
 * (this program started again as TF_CONFIG's "evaluator": its own in-process
 * ps and worker servers, strategy and coordinator), each read from
 * /proc/PID/task/N/comm. Every Pasco thread is named (pasco-*, nng:*), so
 * they are told apart by name: nng's pools (task, expire, and its fixed
 * poller, reaper, timer and resolvers), OpenBLAS's (threads that kept the
 * program's name besides the main one), the handler pools (pasco-ps,
 * pasco-worker) and the rest by name (a trailing -N counted as -*), of
 * which those per connection (RPC timers, bulk readers: how many depends
 * on which tasks this process talked to, and how many calls were in
 * flight at once) are also counted apart.
 *
 *     pasco launch --ps 1 --workers 2 -- build/bench/threads
 *
 * One line per role, and JSON figures (bench "threads"): each role's
 * total and its nng, OpenBLAS, handler and per-connection threads. What each
 * pool's size follows: node/threads.h.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define NAMES 32

PASCO_FUNCTION(noop)
{
	(void) call;
	return PASCO_OK;
}

/* A process's threads: by group, and the rest by name. */
typedef struct census {
	int  total, nng_task, nng_expire, nng_other, blas, handlers;
	int  per_connection; /* of the rest: RPC timers, bulk readers */
	int  nrest, rest_count[NAMES];
	char rest[NAMES][32];
} census;

/* Name without a trailing -N or N ("pasco-disp-3" -> "pasco-disp-*"). */
static void
collapse(char *name)
{
	size_t n = strlen(name);
	while (n > 0 && name[n - 1] >= '0' && name[n - 1] <= '9') {
		n--;
	}
	if (n < strlen(name)) {
		strcpy(name + n, "*");
	}
}

static void
count_rest(census *c, const char *name)
{
	char k[32];
	snprintf(k, sizeof(k), "%s", name);
	collapse(k);
	for (int i = 0; i < c->nrest; i++) {
		if (strcmp(c->rest[i], k) == 0) {
			c->rest_count[i]++;
			return;
		}
	}
	if (c->nrest < NAMES) {
		snprintf(c->rest[c->nrest], sizeof(c->rest[0]), "%s", k);
		c->rest_count[c->nrest++] = 1;
	}
}

/* One thread of a process whose main thread is named main. */
static void
count(census *c, const char *name, const char *main, bool *main_seen)
{
	c->total++;
	if (strcmp(name, main) == 0) {
		c->blas += *main_seen; /* OpenBLAS's keep the program's name */
		*main_seen = true;
	} else if (strcmp(name, "nng:task") == 0) {
		c->nng_task++;
	} else if (strcmp(name, "nng:aio:expire") == 0) {
		c->nng_expire++;
	} else if (strncmp(name, "nng:", 4) == 0) {
		c->nng_other++;
	} else if (strcmp(name, "pasco-ps") == 0 ||
	           strcmp(name, "pasco-worker") == 0) {
		c->handlers++;
	} else {
		/* as many as connections: the chief's reader per worker it
		 * sent to, a server's per bulk connection, a timer per RPC
		 * client */
		c->per_connection += strcmp(name, "pasco-bulk") == 0 ||
		                     strcmp(name, "pasco-bulk-rx") == 0 ||
		                     strcmp(name, "pasco-rpc-timer") == 0;
		count_rest(c, name);
	}
}

static bool
read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool  ok;
	if (f == NULL) {
		return false;
	}
	ok = fgets(buf, (int) len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok;
}

/* The threads of process pid; false when it cannot be read. */
static bool
census_of(pid_t pid, census *c)
{
	char           path[300], main[32], name[32];
	bool           main_seen = false;
	DIR           *d;
	struct dirent *e;
	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/proc/%d/comm", (int) pid);
	if (!read_line(path, main, sizeof(main))) {
		return false;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
	if ((d = opendir(path)) == NULL) {
		return false;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm",
		    (int) pid, e->d_name);
		if (read_line(path, name, sizeof(name))) {
			count(c, name, main, &main_seen);
		}
	}
	closedir(d);
	return true;
}

/* The inode of the socket listening on TCP port (IPv4 or IPv6), or 0. */
static unsigned long
listener_inode(int port)
{
	static const char *tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	char               line[512];
	for (int t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "r");
		if (f == NULL) {
			continue;
		}
		while (fgets(line, sizeof(line), f) != NULL) {
			unsigned      lport, state;
			unsigned long inode;
			char         *colon = strchr(line, ':');
			if (colon == NULL ||
			    (colon = strchr(colon + 1, ':')) == NULL ||
			    sscanf(colon + 1,
			        "%x %*s %x %*s %*s %*s %*s %*s %lu", &lport,
			        &state, &inode) != 3) {
				continue;
			}
			if ((int) lport == port && state == 0x0A) {
				fclose(f);
				return inode;
			}
		}
		fclose(f);
	}
	return 0;
}

/* The process holding socket inode, or -1. */
static pid_t
socket_owner(unsigned long inode)
{
	char           want[64];
	DIR           *proc = opendir("/proc");
	struct dirent *p;
	pid_t          found = -1;
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (proc != NULL && found < 0 && (p = readdir(proc)) != NULL) {
		char           dir[300], link[64];
		DIR           *fds;
		struct dirent *f;
		if (p->d_name[0] < '1' || p->d_name[0] > '9') {
			continue;
		}
		snprintf(dir, sizeof(dir), "/proc/%s/fd", p->d_name);
		if ((fds = opendir(dir)) == NULL) {
			continue;
		}
		while (found < 0 && (f = readdir(fds)) != NULL) {
			char    path[600];
			ssize_t n;
			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n > 0 && (link[n] = 0, strcmp(link, want) == 0)) {
				found = (pid_t) atoi(p->d_name);
			}
		}
		closedir(fds);
	}
	if (proc != NULL) {
		closedir(proc);
	}
	return found;
}

/* The process serving task index of role (it listens on its port). */
static pid_t
task_pid(const pasco_cluster *cl, pasco_role role, size_t index)
{
	const char   *url   = pasco_cluster_url(cl, role, index);
	const char   *colon = url != NULL ? strrchr(url, ':') : NULL;
	unsigned long inode =
	    colon != NULL ? listener_inode(atoi(colon + 1)) : 0;
	return inode != 0 ? socket_owner(inode) : -1;
}

static void
report(const char *role, const census *c)
{
	char what[96];
	printf("%-10s %3d threads: nng %d (%d task, %d expire, %d fixed), "
	       "OpenBLAS %d, handlers %d, rest",
	    role, c->total, c->nng_task + c->nng_expire + c->nng_other,
	    c->nng_task, c->nng_expire, c->nng_other, c->blas, c->handlers);
	for (int i = 0; i < c->nrest; i++) {
		printf("%s %s %d", i ? "," : "", c->rest[i], c->rest_count[i]);
	}
	printf("\n");
	snprintf(what, sizeof(what), "%s threads", role);
	bench_json("threads", what, c->total, "threads", 0);
	snprintf(what, sizeof(what), "%s nng threads", role);
	bench_json("threads", what, c->nng_task + c->nng_expire + c->nng_other,
	    "threads", 0);
	snprintf(what, sizeof(what), "%s OpenBLAS threads", role);
	bench_json("threads", what, c->blas, "threads", 0);
	snprintf(what, sizeof(what), "%s handler threads", role);
	bench_json("threads", what, c->handlers, "threads", 0);
	snprintf(what, sizeof(what), "%s per-connection threads", role);
	bench_json("threads", what, c->per_connection, "threads", 0);
}

/* The evaluator's part (this program as TF_CONFIG's evaluator): its
 * servers, strategy and coordinator up, its census on stdout. */
static int
evaluator(void)
{
	char                    dir[] = "/tmp/pasco-bench-threads-XXXXXX";
	pasco_evaluator_options o     = {.eval_fn = "noop"};
	pasco_evaluator        *e;
	census                  c;
	if (mkdtemp(dir) == NULL) {
		perror("threads: mkdtemp");
		return 1;
	}
	o.checkpoint_dir = dir;
	if (pasco_evaluator_create(&e, &o) != 0) {
		fprintf(stderr, "threads: the evaluator: %s\n",
		    pasco_evaluator_error(NULL));
		rmdir(dir);
		return 1;
	}
	usleep(300 * 1000); /* threads name themselves once running */
	census_of(getpid(), &c);
	report("evaluator", &c);
	pasco_evaluator_destroy(e);
	rmdir(dir);
	return 0;
}

/* Starts argv0 as the evaluator of cl's ps and workers and passes its
 * lines on; 0 when it reported. */
static int
run_evaluator(const pasco_cluster *cl, const char *argv0)
{
	char   tf[4096];
	size_t n =
	    (size_t) snprintf(tf, sizeof(tf), "{\"cluster\": {\"ps\": [");
	int   status;
	pid_t pid;
	for (size_t i = 0; i < pasco_cluster_count(cl, PASCO_ROLE_PS); i++) {
		n += (size_t) snprintf(tf + n, sizeof(tf) - n, "%s\"%s\"",
		    i ? ", " : "", pasco_cluster_url(cl, PASCO_ROLE_PS, i));
	}
	n += (size_t) snprintf(tf + n, sizeof(tf) - n, "], \"worker\": [");
	for (size_t i = 0; i < pasco_cluster_count(cl, PASCO_ROLE_WORKER);
	     i++) {
		n += (size_t) snprintf(tf + n, sizeof(tf) - n, "%s\"%s\"",
		    i ? ", " : "",
		    pasco_cluster_url(cl, PASCO_ROLE_WORKER, i));
	}
	snprintf(tf + n, sizeof(tf) - n,
	    "]}, \"task\": {\"type\": \"evaluator\", \"index\": 0}}");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		setenv("TF_CONFIG", tf, 1);
		execl(argv0, argv0, (char *) NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "threads: the evaluator failed\n");
		return 1;
	}
	return 0;
}

static int
chief(const pasco_cluster *cl, int argc, char **argv)
{
	size_t             nw = 0, nps = 0;
	pasco_strategy    *s;
	pasco_coordinator *coord;
	/* window 1: one bulk connection to each worker, so one reader
	 * there (up to the window's count otherwise, as many as were in
	 * flight at once) and counts that do not depend on timing */
	pasco_coordinator_options o = {.window = 1, .max_batch = 1};
	census                    c;
	char                      role[32];
	int                       rv = 0;

	if (cl == NULL || argc != 1) {
		fprintf(stderr, "usage: pasco launch --ps P --workers W -- "
		                "threads\n");
		return 2;
	}
	if (pasco_cluster_task_role(cl) == PASCO_ROLE_EVALUATOR) {
		return evaluator();
	}
	nw  = pasco_cluster_count(cl, PASCO_ROLE_WORKER);
	nps = pasco_cluster_count(cl, PASCO_ROLE_PS);
	if (pasco_strategy_create(&s, cl, NULL) != 0 ||
	    pasco_coordinator_create(&coord, s, &o) != 0) {
		fprintf(stderr, "threads: %s\n", pasco_strategy_error(NULL));
		return 1;
	}
	/* closures on every worker: their connections and readers exist */
	for (size_t i = 0; i < 64 * nw && rv == 0; i++) {
		rv = pasco_schedule(coord, "noop", NULL, 0, NULL);
	}
	if (rv != 0 || pasco_join(coord) != 0) {
		fprintf(stderr, "threads: closures failed: %s\n",
		    pasco_coordinator_error(coord));
		return 1;
	}
	printf("threads per process (%zu ps, %zu workers; nng's fixed "
	       "threads: poller, reaper, timer, resolvers)\n",
	    nps, nw);
	census_of(getpid(), &c);
	report("chief", &c);
	for (int r = 0; r < 2; r++) {
		pasco_role rl = r == 0 ? PASCO_ROLE_PS : PASCO_ROLE_WORKER;
		size_t     k  = pasco_cluster_count(cl, rl);
		for (size_t i = 0; i < k; i++) {
			pid_t pid = task_pid(cl, rl, i);
			snprintf(role, sizeof(role), "%s %zu",
			    pasco_role_name(rl), i);
			if (pid < 0 || !census_of(pid, &c)) {
				fprintf(stderr,
				    "threads: no process listens for %s\n",
				    role);
				rv = 1;
				continue;
			}
			if (i == 0) { /* one figure per role */
				snprintf(role, sizeof(role), "%s",
				    pasco_role_name(rl));
			}
			report(role, &c);
		}
	}
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	return rv != 0 ? rv : run_evaluator(cl, argv[0]);
}

BENCH_MAIN(chief)
