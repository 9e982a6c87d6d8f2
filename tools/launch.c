/*
 * `pasco launch`: starts a whole local cluster of one program (ps tasks,
 * then workers, then the chief) on free loopback ports, each with its
 * TF_CONFIG, prefixes every line a task prints with its role, and returns
 * the chief's exit status. When the chief ends (and, if it ended well, an
 * evaluator task has ended too: it evaluates the chief's last checkpoint
 * after the chief), or the launcher is interrupted, every task is stopped
 * (SIGTERM, then SIGKILL after a grace period); tasks also get SIGKILL if the
 * launcher itself dies (PR_SET_PDEATHSIG), so nothing is left behind.
 * With --metrics-port, each task gets PASCO_METRICS_PORT of its own.
 * Single-threaded: one poll loop over the tasks' output pipes and a self-pipe
 * for signals.
 *
 * Unless PASCO_KEY_FILE is already set, the cluster gets a key of its own:
 * 32 random bytes in a temporary file (mode 0600) named to every task by
 * PASCO_KEY_FILE and removed when the launch ends, so no other process on
 * the machine can talk to its ports.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pasco/version.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

#define MAX_TASKS 256
#define GRACE_MS 5000
#define MAX_RESTARTS 10

typedef struct task {
	const char *role;
	int         index;
	pid_t       pid;
	int         out;    /* read end of its stdout+stderr, -1 when closed */
	int         status; /* wait status, valid once pid == 0 */
	bool        failed; /* exited non-zero or killed, not yet restarted */
	int         restarts; /* times --restart started it again */
	int         metrics_port; /* PASCO_METRICS_PORT, 0: none */
	char        line[65536];
	size_t      len;
} task;

static int signal_pipe[2] = {-1, -1};

static void
on_signal(int sig)
{
	unsigned char b     = (unsigned char) sig;
	int           saved = errno;
	(void) !write(signal_pipe[1], &b, 1);
	errno = saved;
}

static long long
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The lowest port the kernel hands out by itself (ip_local_port_range). */
static int
ephemeral_low(void)
{
	FILE *f   = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int   low = 32768;
	if (f != NULL) {
		if (fscanf(f, "%d", &low) != 1) {
			low = 32768;
		}
		fclose(f);
	}
	return low;
}

/* n distinct free loopback ports, below the kernel's ephemeral range: a
 * port it hands to another socket meanwhile (a ps's bulk port, a client's
 * connection) cannot take a task's port before the task binds it. Every
 * socket stays bound until all are chosen, so they are distinct. */
static int
free_ports(int *ports, int n)
{
	int      fds[2 * MAX_TASKS], got = 0, low = ephemeral_low();
	unsigned seed =
	    (unsigned) getpid() * 2654435761u ^ (unsigned) now_ms();
	int span = low > 20000 ? low - 10000 : 0;

	for (int tries = 0; got < n && tries < 50 * n; tries++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
		    .sin_addr.s_addr                = htonl(INADDR_LOOPBACK)};
		int fd = span > 0 ? socket(AF_INET, SOCK_STREAM, 0) : -1;
		if (fd < 0) {
			break;
		}
		seed       = seed * 1103515245u + 12345u;
		a.sin_port = htons((
		    uint16_t) (10000 + (int) ((seed >> 8) % (unsigned) span)));
		if (bind(fd, (struct sockaddr *) &a, sizeof(a)) != 0) {
			close(fd);
			continue;
		}
		fds[got]     = fd;
		ports[got++] = ntohs(a.sin_port);
	}
	/* too few there (a narrow range): the kernel picks the rest */
	while (got < n) {
		struct sockaddr_in a   = {.sin_family = AF_INET,
		      .sin_addr.s_addr                = htonl(INADDR_LOOPBACK)};
		socklen_t          len = sizeof(a);
		int                fd  = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *) &a, len) != 0 ||
		    getsockname(fd, (struct sockaddr *) &a, &len) != 0) {
			if (fd >= 0) {
				close(fd);
			}
			break;
		}
		fds[got]     = fd;
		ports[got++] = ntohs(a.sin_port);
	}
	for (int i = 0; i < got; i++) {
		close(fds[i]);
	}
	return got == n ? 0 : -1;
}

static void
append_hosts(char *buf, size_t len, const char *job, const int *ports, int n)
{
	size_t used = strlen(buf);
	used += (size_t) snprintf(
	    buf + used, len - used, "%s\"%s\":[", used > 12 ? "," : "", job);
	for (int i = 0; i < n; i++) {
		used += (size_t) snprintf(buf + used, len - used,
		    "%s\"127.0.0.1:%d\"", i ? "," : "", ports[i]);
	}
	snprintf(buf + used, len - used, "]");
}

static pid_t
spawn(task *t, const char *cluster, char **argv)
{
	int   fds[2];
	pid_t parent = getpid(), pid;
	char  config[16384];

	if (pipe(fds) != 0) {
		return -1;
	}
	snprintf(config, sizeof(config),
	    "{%s},\"task\":{\"type\":\"%s\","
	    "\"index\":%d}}",
	    cluster, t->role, t->index);
	if ((pid = fork()) == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) {
			_exit(127); /* the launcher died before prctl */
		}
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		setenv("TF_CONFIG", config, 1);
		if (t->metrics_port > 0) {
			char port[16];
			snprintf(port, sizeof(port), "%d", t->metrics_port);
			setenv("PASCO_METRICS_PORT", port, 1);
		}
		/* pasco_main then flushes stdout at each newline, so lines
		 * to stdout and stderr reach the pipe in the order written */
		setenv("PASCO_LINE_BUFFERED", "1", 1);
		execvp(argv[0], argv);
		fprintf(
		    stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	t->out = fds[0];
	return pid;
}

static void
emit(task *t, const char *text, size_t n)
{
	printf("[%s %d] %.*s\n", t->role, t->index, (int) n, text);
	fflush(stdout);
}

/* Reads what is available from t's pipe; prints whole lines. */
static void
drain(task *t)
{
	ssize_t n = read(t->out, t->line + t->len, sizeof(t->line) - t->len);
	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			if (t->len > 0) {
				emit(t, t->line, t->len);
			}
			close(t->out);
			t->out = -1;
			t->len = 0;
		}
		return;
	}
	t->len += (size_t) n;
	for (;;) {
		char *nl = memchr(t->line, '\n', t->len);
		if (nl == NULL) {
			if (t->len ==
			    sizeof(t->line)) { /* an over-long line */
				emit(t, t->line, t->len);
				t->len = 0;
			}
			return;
		}
		emit(t, t->line, (size_t) (nl - t->line));
		t->len -= (size_t) (nl - t->line) + 1;
		memmove(t->line, nl + 1, t->len);
	}
}

/* Reaps exited tasks; returns how many are still running. Failed exits
 * before the chief's are reported: they are failures the chief may be
 * facing; with restart, a failed worker is marked to be started again. */
static int
reap(task *tasks, int n, bool report, bool restart)
{
	int running = 0;
	for (int i = 0; i < n; i++) {
		task *t = &tasks[i];
		if (t->pid > 0 &&
		    waitpid(t->pid, &t->status, WNOHANG) == t->pid) {
			t->pid = 0;
			/* a task that ends cleanly was told the chief is
			 * done; only failures are news */
			if (report && i < n - 1 &&
			    !(WIFEXITED(t->status) &&
			        WEXITSTATUS(t->status) == 0)) {
				t->failed =
				    restart && strcmp(t->role, "worker") == 0;
				fprintf(stderr,
				    "[launch] %s %d exited (%s %d)%s\n",
				    t->role, t->index,
				    WIFSIGNALED(t->status) ? "signal"
				                           : "status",
				    WIFSIGNALED(t->status)
				        ? WTERMSIG(t->status)
				        : WEXITSTATUS(t->status),
				    t->failed ? "; restarting" : "");
			}
		}
		running += t->pid > 0;
	}
	return running;
}

static void
signal_all(task *tasks, int n, int sig)
{
	for (int i = 0; i < n; i++) {
		if (tasks[i].pid > 0) {
			kill(tasks[i].pid, sig);
		}
	}
}

/* One round of the loop: output, signals, exits. Returns a caught signal,
 * or 0. */
static int
pump(task *tasks, int n, int timeout_ms)
{
	struct pollfd pfd[MAX_TASKS + 1];
	int           map[MAX_TASKS + 1], np = 0, caught = 0;

	pfd[np]   = (struct pollfd){.fd = signal_pipe[0], .events = POLLIN};
	map[np++] = -1;
	for (int i = 0; i < n; i++) {
		if (tasks[i].out >= 0) {
			pfd[np] = (struct pollfd){
			    .fd = tasks[i].out, .events = POLLIN};
			map[np++] = i;
		}
	}
	if (poll(pfd, (nfds_t) np, timeout_ms) > 0) {
		for (int k = 0; k < np; k++) {
			if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR))) {
				continue;
			}
			if (map[k] < 0) {
				unsigned char b = 0;
				if (read(signal_pipe[0], &b, 1) == 1 &&
				    b != SIGCHLD) {
					caught = b;
				}
			} else {
				drain(&tasks[map[k]]);
			}
		}
	}
	return caught;
}

/* Stops every task: SIGTERM, then SIGKILL after the grace period. */
static void
stop_all(task *tasks, int n)
{
	long long deadline = now_ms() + GRACE_MS;
	signal_all(tasks, n, SIGTERM);
	while (reap(tasks, n, false, false) > 0) {
		if (now_ms() > deadline) {
			signal_all(tasks, n, SIGKILL);
			deadline = now_ms() + GRACE_MS;
			continue;
		}
		pump(tasks, n, 50);
	}
	/* what they printed last; a process they left behind (a child that
	 * kept their output pipe) gets a second, not forever */
	deadline = now_ms() + 1000;
	for (int i = 0; i < n; i++) {
		while (tasks[i].out >= 0) {
			struct pollfd pfd = {
			    .fd = tasks[i].out, .events = POLLIN};
			long long left = deadline - now_ms();
			if (left <= 0 || poll(&pfd, 1, (int) left) <= 0) {
				if (tasks[i].len > 0) {
					emit(&tasks[i], tasks[i].line,
					    tasks[i].len);
				}
				close(tasks[i].out);
				tasks[i].out = -1;
				tasks[i].len = 0;
				break;
			}
			drain(&tasks[i]);
		}
	}
}

static const char usage_text[] =
    "usage: pasco launch [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "  Starts N ps tasks, M workers and the chief, all running PROGRAM\n"
    "  with TF_CONFIG set, on free loopback ports; prints every line a\n"
    "  task writes, prefixed with its task; exits with the chief's "
    "status.\n"
    "  --ps N         ps tasks (default 1, 1 to 100)\n"
    "  --workers M    workers (default 2, 1 to 100)\n"
    "  --evaluator    also start one evaluator task (TF_CONFIG job\n"
    "                 \"evaluator\"), running PROGRAM like the others;\n"
    "                 when the chief ends well, it is waited for, and\n"
    "                 its failure is the launch's status\n"
    "  --restart      restart a worker that fails (exits non-zero or is\n"
    "                 killed) with the same TF_CONFIG, up to 10 times\n"
    "  --checkpoint-root DIR\n"
    "                 where the ps tasks may write checkpoints (sets\n"
    "                 PASCO_CHECKPOINT_DIR for every task); without it\n"
    "                 they write wherever this user may, as the cluster\n"
    "                 has a key of its own, unless PASCO_KEY_FILE is set\n"
    "                 (then without it they refuse to)\n"
    "  --metrics-port BASE\n"
    "                 every task serves Prometheus metrics at\n"
    "                 http://127.0.0.1:PORT/metrics, PORT = BASE + i for\n"
    "                 its place i in the order ps 0.., workers 0..,\n"
    "                 evaluator, chief; BASE 0: free ports. Each task's\n"
    "                 address is printed ([launch] metrics ...)\n"
    "  --metrics-file PATH\n"
    "                 also write them to PATH, one task a line\n"
    "                 (\"ps 0 127.0.0.1:PORT\"), for pasco top --file PATH\n"
    "                 (implies --metrics-port 0 unless it is given)\n"
    "  --help         print this and exit\n"
    "  --version      print the version and exit\n"
    "  Unless PASCO_KEY_FILE is set, the cluster gets a fresh key (32\n"
    "  random bytes in a private temporary file, PASCO_KEY_FILE to every\n"
    "  task, removed at the end): no other process can talk to it.\n";

/* A task count in [1, 100]: -1 with the option named on stderr. */
static int
parse_count(const char *opt, const char *s, int *out)
{
	char *end;
	long  v;

	errno = 0;
	v     = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || errno != 0 || v < 1 || v > 100) {
		char what[160];
		snprintf(what, sizeof(what), "%s '%s'", opt, s);
		tool_usage_error("pasco launch",
		    "%s: give a number of tasks from 1 to 100", what);
		return -1;
	}
	*out = (int) v;
	return 0;
}

static int
install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	if (pipe(signal_pipe) != 0) {
		return -1;
	}
	fcntl(signal_pipe[0], F_SETFL, O_NONBLOCK);
	fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK);
	fcntl(signal_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(signal_pipe[1], F_SETFD, FD_CLOEXEC);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	return 0;
}

static int
exit_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status)
	                         : 128 + WTERMSIG(status);
}

/* Starts every task: ps, workers, the evaluator, then the chief (last).
 * Returns 0, or -1 with the reason on stderr and what started stopped. */
static int
start_all(task *tasks, int n, const char *cluster, char **argv)
{
	for (int k = 0; k < n; k++) {
		if ((tasks[k].pid = spawn(&tasks[k], cluster, argv)) < 0) {
			fprintf(stderr, "pasco launch: cannot start %s: %s\n",
			    argv[0], strerror(errno));
			stop_all(tasks, k);
			return -1;
		}
	}
	return 0;
}

/* After the chief ended well: the evaluator still evaluates its last
 * checkpoints and ends by itself (or after its own timeout), so it is
 * waited for, its lines still printed. Returns a caught signal, or 0;
 * *status becomes the evaluator's when it failed. */
static int
wait_evaluator(task *tasks, int n, task *evaluator, int *status)
{
	int caught = 0;
	while (caught == 0 && evaluator->pid > 0) {
		caught = pump(tasks, n, 200);
		reap(tasks, n, true, false);
	}
	if (caught == 0) {
		*status = exit_status(evaluator->status);
	}
	return caught;
}

/* --restart: a worker that failed is started again with the same
 * TF_CONFIG, once what it printed last is out. */
static void
restart_failed(task *tasks, int n, const char *cluster, char **argv)
{
	for (int i = 0; i < n; i++) {
		task *t = &tasks[i];
		if (!t->failed || strcmp(t->role, "worker") != 0) {
			continue;
		}
		t->failed = false;
		while (t->out >= 0) {
			drain(t);
		}
		if (t->restarts >= MAX_RESTARTS) {
			fprintf(stderr,
			    "[launch] worker %d: not restarted again after "
			    "%d restarts\n",
			    t->index, t->restarts);
			continue;
		}
		t->restarts++;
		if ((t->pid = spawn(t, cluster, argv)) < 0) {
			t->pid = 0;
			fprintf(stderr,
			    "[launch] cannot restart worker %d: %s\n",
			    t->index, strerror(errno));
		}
	}
}

/* Writes a fresh cluster key to a new private temporary file, names it in
 * PASCO_KEY_FILE (the tasks inherit it) and copies its path to path;
 * path[0] stays 0 when the user set PASCO_KEY_FILE. -1 on failure, with
 * errno set. */
static int
make_key(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	uint8_t     key[32];
	size_t      got = 0;
	int         fd;

	path[0] = 0;
	if (getenv("PASCO_KEY_FILE") != NULL && *getenv("PASCO_KEY_FILE")) {
		return 0; /* the user's */
	}
	while (got < sizeof(key)) {
		ssize_t k = getrandom(key + got, sizeof(key) - got, 0);
		if (k < 0 && errno != EINTR) {
			return -1;
		}
		got += k > 0 ? (size_t) k : 0;
	}
	snprintf(path, len, "%s/pasco-key-XXXXXX",
	    dir != NULL && *dir != 0 ? dir : "/tmp");
	if ((fd = mkstemp(path)) < 0) { /* mode 0600 */
		path[0] = 0;
		return -1;
	}
	if (write(fd, key, sizeof(key)) != (ssize_t) sizeof(key) ||
	    close(fd) != 0) {
		unlink(path);
		path[0] = 0;
		return -1;
	}
	memset(key, 0, sizeof(key));
	return setenv("PASCO_KEY_FILE", path, 1);
}

/* A port number for --metrics-port: -1 with the option named on stderr. */
static int
parse_port(const char *s, int *out)
{
	char *end;
	long  v;
	errno = 0;
	v     = strtol(s, &end, 10);
	if (*s == 0 || *end != 0 || errno != 0 || v < 0 || v > 65535) {
		tool_usage_error("pasco launch",
		    "--metrics-port '%s': give a port from 0 to 65535 "
		    "(0: free ports)",
		    s);
		return -1;
	}
	*out = (int) v;
	return 0;
}

/* Gives each task its metrics port (BASE + its place, or free[k] when
 * base is 0), prints the addresses and writes them to file (when not
 * NULL). -1 with the reason on stderr. */
static int
metrics_ports(task *tasks, int n, int base, const int *free, const char *file)
{
	FILE *f = NULL;
	if (base > 0 && base + n - 1 > 65535) {
		fprintf(stderr,
		    "pasco launch: --metrics-port %d: the %d tasks' ports "
		    "would "
		    "pass 65535\n",
		    base, n);
		return -1;
	}
	if (file != NULL && (f = fopen(file, "w")) == NULL) {
		fprintf(stderr, "pasco launch: --metrics-file %s: %s\n", file,
		    strerror(errno));
		return -1;
	}
	for (int k = 0; k < n; k++) {
		tasks[k].metrics_port = base > 0 ? base + k : free[k];
		fprintf(stderr,
		    "[launch] metrics of %s %d at "
		    "http://127.0.0.1:%d/metrics\n",
		    tasks[k].role, tasks[k].index, tasks[k].metrics_port);
		if (f != NULL) {
			fprintf(f, "%s %d 127.0.0.1:%d\n", tasks[k].role,
			    tasks[k].index, tasks[k].metrics_port);
		}
	}
	if (f != NULL && fclose(f) != 0) {
		fprintf(stderr, "pasco launch: --metrics-file %s: %s\n", file,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
pasco_launch(int argc, char **argv)
{
	static const struct option options[] = {
	    {"ps", required_argument, NULL, 'p'},
	    {"workers", required_argument, NULL, 'w'},
	    {"evaluator", no_argument, NULL, 'e'},
	    {"restart", no_argument, NULL, 'r'},
	    {"checkpoint-root", required_argument, NULL, 'c'},
	    {"metrics-port", required_argument, NULL, 'm'},
	    {"metrics-file", required_argument, NULL, 'M'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
	int   nps = 1, nworkers = 2, nevaluators = 0, n, opt, caught = 0;
	int         ports[2 * MAX_TASKS], status, metrics_base = -1;
	bool  restart        = false;
	const char *metrics_file   = NULL;
	char  cluster[12288] = "\"cluster\":{";
	char  key_path[4096];
	task *tasks;

	opterr = 0; /* errors are reported here, naming the option */
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+:", options, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_count("--ps", optarg, &nps) != 0) {
				return 2;
			}
			break;
		case 'w':
			if (parse_count("--workers", optarg, &nworkers) != 0) {
				return 2;
			}
			break;
		case 'e':
			nevaluators = 1;
			break;
		case 'r':
			restart = true;
			break;
		case 'c': /* the tasks inherit it */
			setenv("PASCO_CHECKPOINT_DIR", optarg, 1);
			break;
		case 'm':
			if (parse_port(optarg, &metrics_base) != 0) {
				return 2;
			}
			break;
		case 'M':
			metrics_file = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("pasco %s\n", PASCO_VERSION);
			return 0;
		case ':':
			return tool_usage_error("pasco launch",
			    "option '%s' needs a value", argv[optind - 1]);
		default:
			return tool_usage_error("pasco launch",
			    "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		return tool_usage_error(
		    "pasco launch", "%s", "no PROGRAM given to run");
	}
	argv += optind;
	n = nps + nworkers + nevaluators + 1;
	if (metrics_file != NULL && metrics_base < 0) {
		metrics_base = 0;
	}
	/* free metrics ports chosen with the cluster's, so all differ */
	if ((tasks = calloc((size_t) n, sizeof(*tasks))) == NULL ||
	    free_ports(ports, metrics_base == 0 ? 2 * n : n) != 0 ||
	    install_signals() != 0) {
		fprintf(stderr, "pasco launch: %s\n", strerror(errno));
		free(tasks);
		return 1;
	}
	if (make_key(key_path, sizeof(key_path)) != 0) {
		fprintf(stderr,
		    "pasco launch: cannot make the cluster key: %s\n",
		    strerror(errno));
		free(tasks);
		return 1;
	}
	/* A cluster with a key of its own answers only this user's
	 * processes (the key file is theirs alone), so its ps may write
	 * checkpoints wherever the user can unless told otherwise: the
	 * user's own program picks the directory, as with a single
	 * TensorFlow process. A key the user supplied may be shared more
	 * widely: then the root must be named. */
	if (key_path[0] != 0 && (getenv("PASCO_CHECKPOINT_DIR") == NULL ||
	                            *getenv("PASCO_CHECKPOINT_DIR") == 0)) {
		setenv("PASCO_CHECKPOINT_DIR", "/", 1);
	}
	append_hosts(cluster, sizeof(cluster), "ps", ports, nps);
	append_hosts(
	    cluster, sizeof(cluster), "worker", ports + nps, nworkers);
	if (nevaluators > 0) {
		append_hosts(cluster, sizeof(cluster), "evaluator",
		    ports + nps + nworkers, 1);
	}
	append_hosts(cluster, sizeof(cluster), "chief", ports + n - 1, 1);
	for (int k = 0; k < n; k++) {
		tasks[k].role  = k < nps              ? "ps"
		                 : k < nps + nworkers ? "worker"
		                 : k < n - 1          ? "evaluator"
		                                      : "chief";
		tasks[k].index = k < nps              ? k
		                 : k < nps + nworkers ? k - nps
		                                      : 0;
		tasks[k].out   = -1;
	}
	if (metrics_base >= 0 && metrics_ports(tasks, n, metrics_base,
	                             ports + n, metrics_file) != 0) {
		if (key_path[0] != 0) {
			unlink(key_path);
		}
		free(tasks);
		return 1;
	}
	if (start_all(tasks, n, cluster, argv) != 0) {
		if (key_path[0] != 0) {
			unlink(key_path);
		}
		free(tasks);
		return 1;
	}
	while (caught == 0 && tasks[n - 1].pid > 0) {
		caught = pump(tasks, n, 200);
		reap(tasks, n, true, restart);
		if (restart && tasks[n - 1].pid > 0) {
			restart_failed(tasks, n, cluster, argv);
		}
	}
	status = exit_status(tasks[n - 1].status);
	if (caught == 0 && status == 0 && nevaluators > 0) {
		caught = wait_evaluator(tasks, n, &tasks[n - 2], &status);
	}
	stop_all(tasks, n);
	if (key_path[0] != 0) {
		unlink(key_path);
	}
	free(tasks);
	if (caught != 0) {
		fprintf(stderr,
		    "[launch] interrupted by signal %d; all tasks "
		    "stopped\n",
		    caught);
		return 128 + caught;
	}
	return status;
}
