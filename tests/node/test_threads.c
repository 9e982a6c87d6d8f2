/*
 * A process's threads follow its role and configuration, not the core
 * count (node/threads.h): a real ps and worker process (the counter
 * example, started as pasco launch would) run the documented pools, on
 * this machine and on one that looks like 16 cores (fake_cpus.so,
 * preloaded), and a pool set through its variable has that size.
 */
#include "helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nng_threads.h"
#include "threads.h"

TestSuite(threads, .timeout = 60);

/* A task process and the pipe its log comes on. */
typedef struct task {
	pid_t pid;
	int   log;
} task;

/* Its threads by name. */
typedef struct census {
	int total, main, handlers, nng_task, nng_expire;
} census;

/* Starts program as task kind (ps or worker) 0 of a cluster of one ps at
 * ps_port and one worker at w_port, with the environment pairs env (NULL
 * ended) added. */
static task
task_start(const char *kind, int ps_port, int w_port, const char **env)
{
	const char *program = getenv("PASCO_TASK_PROGRAM");
	char        tf[512];
	int         fds[2];
	task        t;
	snprintf(tf, sizeof(tf),
	    "{\"cluster\": {\"ps\": [\"127.0.0.1:%d\"], \"worker\": "
	    "[\"127.0.0.1:%d\"]}, \"task\": {\"type\": \"%s\", \"index\": "
	    "0}}",
	    ps_port, w_port, kind);
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	if ((t.pid = fork()) == 0) {
		dup2(fds[1], 2);
		setenv("TF_CONFIG", tf, 1);
		setenv("PASCO_LOG", "info", 1);
		setenv("PASCO_CHIEF_TIMEOUT", "30", 1);
		for (; env != NULL && env[0] != NULL; env += 2) {
			setenv(env[0], env[1], 1);
		}
		execl(program, program, (char *) NULL);
		_exit(127);
	}
	close(fds[1]);
	cr_assert_gt(t.pid, 0);
	t.log = fds[0];
	return t;
}

/* Waits (up to 10 s) for the task's log to say that it serves. */
static bool
task_wait_serving(task *t)
{
	char   buf[8192];
	size_t len = 0;
	double end = pasco_test_now() + 10;
	while (pasco_test_now() < end && len < sizeof(buf) - 1) {
		struct pollfd p = {.fd = t->log, .events = POLLIN};
		ssize_t       n;
		if (poll(&p, 1, 100) <= 0) {
			continue;
		}
		if ((n = read(t->log, buf + len, sizeof(buf) - 1 - len)) <=
		    0) {
			break;
		}
		len += (size_t) n;
		buf[len] = 0;
		if (strstr(buf, "serving at") != NULL) {
			return true;
		}
	}
	buf[len] = 0;
	cr_log_error("the task's log: %s", buf);
	return false;
}

static void
task_stop(task *t)
{
	int status;
	kill(t->pid, SIGKILL);
	waitpid(t->pid, &status, 0);
	close(t->log);
}

/* The threads of process pid, by name; handlers: its handler pool's. */
static census
census_of(pid_t pid, const char *handlers)
{
	char           dir[80], main_name[32] = {0};
	census         c = {0};
	DIR           *d;
	struct dirent *e;
	FILE          *f;
	snprintf(dir, sizeof(dir), "/proc/%d/comm", (int) pid);
	cr_assert_not_null(f = fopen(dir, "r"));
	cr_assert_not_null(fgets(main_name, sizeof(main_name), f));
	fclose(f);
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int) pid);
	cr_assert_not_null(d = opendir(dir));
	while ((e = readdir(d)) != NULL) {
		char path[400], name[32] = {0};
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		if ((f = fopen(path, "r")) == NULL) {
			continue;
		}
		if (fgets(name, sizeof(name), f) != NULL) {
			c.total++;
			c.main += strcmp(name, main_name) == 0;
			c.handlers +=
			    strncmp(name, handlers, strlen(handlers)) == 0;
			c.nng_task += strcmp(name, "nng:task\n") == 0;
			c.nng_expire += strcmp(name, "nng:aio:expire\n") == 0;
		}
		fclose(f);
	}
	closedir(d);
	return c;
}

/* Whether process pid has the library at path loaded. */
static bool
has_loaded(pid_t pid, const char *path)
{
	char  maps[64], line[1024];
	FILE *f;
	bool  found = false;
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int) pid);
	if ((f = fopen(maps, "r")) == NULL) {
		return false;
	}
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		found = strstr(line, path) != NULL;
	}
	fclose(f);
	return found;
}

/* Starts a ps and a worker with env, and checks each one's pools: nng's
 * from nng (the PASCO_NNG_THREADS count), handlers for the ps and the
 * worker, and no OpenBLAS pool (the program's name on its first thread
 * only). Returns each one's total in totals. */
static void
check_pools(
    const char **env, int nng, int ps_handlers, int w_handlers, int totals[2])
{
	const char *kinds[2]    = {"ps", "worker"};
	const char *names[2]    = {"pasco-ps", "pasco-worker"};
	int         handlers[2] = {ps_handlers, w_handlers};
	int         ps_port = test_free_port(), w_port = test_free_port();
	pasci_nng_threads want = pasci_nng_threads_for(nng);
	task              t[2];

	for (int i = 0; i < 2; i++) {
		t[i] = task_start(kinds[i], ps_port, w_port, env);
	}
	for (int i = 0; i < 2; i++) {
		census c;
		if (!task_wait_serving(&t[i])) {
			task_stop(&t[0]);
			task_stop(&t[1]);
			cr_assert_fail("the %s did not serve", kinds[i]);
		}
		/* threads name themselves once running: up to 3 s for the
		 * pools' to be named and nothing else to share the program's
		 * name (an OpenBLAS pool would, for good) */
		for (double end = pasco_test_now() + 3;;) {
			c = census_of(t[i].pid, names[i]);
			if ((c.handlers == handlers[i] && c.main == 1 &&
			        c.nng_task == want.task &&
			        c.nng_expire == want.expire) ||
			    pasco_test_now() > end) {
				break;
			}
			usleep(10 * 1000);
		}
		totals[i] = c.total;
		for (const char **e = env; e != NULL && e[0] != NULL; e += 2) {
			if (strcmp(e[0], "LD_PRELOAD") == 0) {
				cr_expect(has_loaded(t[i].pid, e[1]),
				    "%s: %s was not preloaded", kinds[i],
				    e[1]);
			}
		}
		cr_expect_eq(c.handlers, handlers[i],
		    "%s: %d handlers, not %d", kinds[i], c.handlers,
		    handlers[i]);
		cr_expect_eq(c.nng_task, want.task,
		    "%s: %d nng task threads, not %d", kinds[i], c.nng_task,
		    want.task);
		cr_expect_eq(c.nng_expire, want.expire,
		    "%s: %d nng expire threads, not %d", kinds[i],
		    c.nng_expire, want.expire);
		cr_expect_eq(c.main, 1,
		    "%s: %d threads share the program's name: OpenBLAS "
		    "started a pool",
		    kinds[i], c.main);
	}
	task_stop(&t[0]);
	task_stop(&t[1]);
}

static const char *
fake_cpus_library(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	cr_skip_test("a sanitizer's runtime must be the first library: "
	             "nothing can be preloaded before it");
#endif
	const char *lib = getenv("PASCO_FAKE_CPUS_LIB");
	if (getenv("PASCO_TASK_PROGRAM") == NULL || lib == NULL) {
		cr_skip_test("PASCO_TASK_PROGRAM or PASCO_FAKE_CPUS_LIB is "
		             "not set (run through meson)");
	}
	cr_assert_eq(access(lib, R_OK), 0, "%s: %s", lib, strerror(errno));
	return lib;
}

Test(threads, a_ps_and_a_worker_run_the_documented_pools_whatever_the_cores)
{
	const char *lib    = fake_cpus_library();
	const char *fake[] = {
	    "LD_PRELOAD", lib, "PASCO_FAKE_CPUS", "16", NULL};
	int here[2] = {0}, on16[2] = {0};

	check_pools(NULL, PASCI_NNG_THREADS_DEFAULT, PASCI_PS_THREADS_DEFAULT,
	    PASCI_WORKER_THREADS_DEFAULT, here);
	check_pools(fake, PASCI_NNG_THREADS_DEFAULT, PASCI_PS_THREADS_DEFAULT,
	    PASCI_WORKER_THREADS_DEFAULT, on16);
	cr_assert_eq(on16[0], here[0],
	    "a ps has %d threads on 16 cores, %d here", on16[0], here[0]);
	cr_assert_eq(on16[1], here[1],
	    "a worker has %d threads on 16 cores, %d here", on16[1], here[1]);
}

Test(threads, each_pool_has_the_size_its_variable_sets)
{
	const char *lib   = fake_cpus_library();
	const char *env[] = {"LD_PRELOAD", lib, "PASCO_FAKE_CPUS", "16",
	    "PASCO_NNG_THREADS", "3", "PASCO_PS_THREADS", "5",
	    "PASCO_WORKER_THREADS", "6", NULL};
	int         totals[2];
	check_pools(env, 3, 5, 6, totals);
}

Test(threads, a_malformed_count_stops_the_task_naming_it)
{
	const char *program = getenv("PASCO_TASK_PROGRAM");
	const char *env[]   = {"PASCO_PS_THREADS", "0x", NULL};
	char        buf[1024];
	ssize_t     n;
	int         status;
	task        t;
	if (program == NULL) {
		cr_skip_test(
		    "PASCO_TASK_PROGRAM is not set (run through meson)");
	}
	t = task_start("worker", test_free_port(), test_free_port(), env);
	for (double end = pasco_test_now() + 5;
	     waitpid(t.pid, &status, WNOHANG) == 0;) {
		if (pasco_test_now() > end) {
			task_stop(&t);
			cr_assert_fail("the worker still runs after 5 s");
		}
		usleep(10 * 1000);
	}
	n = read(t.log, buf, sizeof(buf) - 1);
	close(t.log);
	buf[n > 0 ? n : 0] = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2,
	    "status %d: %s", status, buf);
	cr_assert(
	    strstr(buf, "PASCO_PS_THREADS='0x' is not a thread count") != NULL,
	    "%s", buf);
}

/* Each role's figures from bench/threads: total, OpenBLAS and handler
 * threads of the chief, ps 0, worker 0 and the evaluator. */
typedef struct roles {
	int total[4], blas[4], handlers[4];
} roles; /* total: without the threads per connection */

static const char *const role_names[4] = {
    "chief", "ps", "worker", "evaluator"};

/* The value of bench/threads' JSON figure "<role> <what>" in out, or -1. */
static int
figure(const char *out, const char *role, const char *what)
{
	char        key[96];
	const char *p;
	snprintf(key, sizeof(key), "\"figure\": \"%s %s\", \"value\": ", role,
	    what);
	return (p = strstr(out, key)) != NULL ? atoi(p + strlen(key)) : -1;
}

/* Runs `pasco launch --ps 1 --workers 2 -- bench/threads` with the
 * environment pairs env (NULL ended) added, and reads its figures. */
static roles
launch_census(const char **env)
{
	const char *pasco = getenv("PASCO_EXE");
	const char *bench = getenv("PASCO_THREADS_BENCH");
	static char out[65536];
	size_t      len = 0;
	int         fds[2], status;
	pid_t       pid;
	roles       r;
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	if ((pid = fork()) == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		for (; env != NULL && env[0] != NULL; env += 2) {
			setenv(env[0], env[1], 1);
		}
		execl(pasco, pasco, "launch", "--ps", "1", "--workers", "2",
		    "--", bench, (char *) NULL);
		_exit(127);
	}
	close(fds[1]);
	for (ssize_t n;
	     len < sizeof(out) - 1 &&
	     (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0;) {
		len += (size_t) n;
	}
	out[len] = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "bench/threads failed (status %d): %s", status, out);
	for (int i = 0; i < 4; i++) {
		/* how many connections a process has depends on which
		 * worker ran which closure: not compared */
		r.total[i] =
		    figure(out, role_names[i], "threads") -
		    figure(out, role_names[i], "per-connection threads");
		r.blas[i]     = figure(out, role_names[i], "OpenBLAS threads");
		r.handlers[i] = figure(out, role_names[i], "handler threads");
		cr_assert_geq(r.total[i], 1, "no figure for the %s: %s",
		    role_names[i], out);
	}
	return r;
}

/* Every role (the chief and the evaluator too) has the same threads on 16
 * cores as here (but for those per connection: RPC timers, bulk readers), with
 * no OpenBLAS pool and its handlers, and nng's pools as PASCO_NNG_THREADS sets
 * them: 3 more threads (2 task, 1 expire) in each role for 3 than for the
 * default 2. */
Test(threads, every_role_follows_its_configuration_not_the_cores,
    .timeout = 120)
{
	const char *lib    = fake_cpus_library();
	const char *fake[] = {
	    "LD_PRELOAD", lib, "PASCO_FAKE_CPUS", "16", NULL};
	const char *more[]      = {"LD_PRELOAD", lib, "PASCO_FAKE_CPUS", "16",
	         "PASCO_NNG_THREADS", "3", NULL};
	const int   handlers[4] = {0, PASCI_PS_THREADS_DEFAULT,
	      PASCI_WORKER_THREADS_DEFAULT,
	      PASCI_PS_THREADS_DEFAULT + PASCI_WORKER_THREADS_DEFAULT};
	roles       here, on16, nng3;
	if (getenv("PASCO_EXE") == NULL ||
	    getenv("PASCO_THREADS_BENCH") == NULL) {
		cr_skip_test("PASCO_EXE or PASCO_THREADS_BENCH is not set "
		             "(run through meson)");
	}
	here = launch_census(NULL);
	on16 = launch_census(fake);
	nng3 = launch_census(more);
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(on16.total[i], here.total[i],
		    "the %s has %d threads on 16 cores, %d here",
		    role_names[i], on16.total[i], here.total[i]);
		cr_expect_eq(nng3.total[i], here.total[i] + 3,
		    "the %s has %d threads with PASCO_NNG_THREADS=3, %d with "
		    "2",
		    role_names[i], nng3.total[i], here.total[i]);
		cr_expect_eq(on16.blas[i], 0, "the %s: %d OpenBLAS threads",
		    role_names[i], on16.blas[i]);
		cr_expect_eq(on16.handlers[i], handlers[i],
		    "the %s: %d handler threads, not %d", role_names[i],
		    on16.handlers[i], handlers[i]);
	}
}
