/*
 * Shared helpers: the error table, logging, clocks, random ids. Everything
 * here is thread-safe; logging writes each line with one call so lines from
 * different threads do not interleave.
 */
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

const char *
pasco_strerror(int err)
{
	switch (err) {
#define PASCO_ERR_MSG(name, value, msg)                                       \
	case value:                                                           \
		return msg;
		PASCO_ERRNO_MAP(PASCO_ERR_MSG)
#undef PASCO_ERR_MSG
	default:
		return "unknown error code";
	}
}

const char *
pasco_errname(int err)
{
	switch (err) {
#define PASCO_ERR_NAME(name, value, msg)                                      \
	case value:                                                           \
		return "PASCO_" #name;
		PASCO_ERRNO_MAP(PASCO_ERR_NAME)
#undef PASCO_ERR_NAME
	default:
		return "PASCO_?";
	}
}

/* The message of this thread's last failing call, whichever object. */
static _Thread_local char last_error[1024];

const char *
pasco_last_error(void)
{
	return last_error;
}

void
pasci_error_note(const char *msg)
{
	if (msg != NULL && msg[0] != 0 && msg != last_error) {
		pasci_fmt(last_error, sizeof(last_error), "%s", msg);
	}
}

char *
pasci_error_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (len > 0) {
		vsnprintf(buf, len, fmt, ap);
	}
	va_end(ap);
	pasci_error_note(buf);
	return buf;
}

void
pasci_panic(const char *file, int line, const char *what)
{
	fprintf(stderr, "pasco: assertion failed at %s:%d: %s\n", file, line,
	    what);
	abort();
}

static int  log_level = PASCI_LOG_WARN;
static char log_task[48];

/* PASCO_LOG: a level's name or digit. An unknown value is said once, here,
 * since this runs once per process. */
static void
log_init(void)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	const char        *env     = getenv("PASCO_LOG");

	if (env == NULL || *env == 0) {
		return;
	}
	if (env[0] >= '0' && env[0] <= '9' && env[1] == 0) {
		log_level = env[0] - '0' > PASCI_LOG_DEBUG ? PASCI_LOG_DEBUG
		                                           : env[0] - '0';
		return;
	}
	for (int i = 0; i < 4; i++) {
		if (strcasecmp(env, names[i]) == 0) {
			log_level = i;
			return;
		}
	}
	if (strcasecmp(env, "warning") == 0) {
		return;
	}
	fprintf(stderr,
	    "pasco: PASCO_LOG='%s' is not a log level (error, warn, info, "
	    "debug or 0 to 3); logging warnings and errors\n",
	    env);
}

int
pasci_log_enabled(int level)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, log_init);
	return level <= log_level;
}

void
pasci_log_set_task(const char *task)
{
	snprintf(log_task, sizeof(log_task), "%s", task != NULL ? task : "");
}

const char *
pasci_log_task(void)
{
	return log_task;
}

void
pasci_log(int level, const char *fmt, ...)
{
	static const char *tags[] = {"error", "warning", "info", "debug"};
	char               line[1024];
	struct timespec    ts;
	struct tm          tm;
	va_list            ap;
	size_t             n;

	if (!pasci_log_enabled(level)) {
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t) snprintf(line + n, sizeof(line) - n,
	    ".%03dZ %s%spasco %s: ", (int) (ts.tv_nsec / 1000000), log_task,
	    log_task[0] ? " " : "", tags[level & 3]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	fputs(line, stderr);
}

int64_t
pasci_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
pasci_now_ms(void)
{
	return pasci_now_ns() / 1000000;
}

uint64_t
pasci_random_u64(void)
{
	uint64_t v = 0;
	while (v == 0) {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
			v = pasci_mix64((uint64_t) pasci_now_ns() ^
			                (uint64_t) (uintptr_t) &v);
		}
	}
	return v;
}

char *
pasci_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (buf == NULL || len == 0) {
		return buf;
	}
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return buf;
}

char *
pasci_strdup(const char *s)
{
	size_t n   = strlen(s) + 1;
	char  *out = malloc(n);
	if (out != NULL) {
		memcpy(out, s, n);
	}
	return out;
}

void
pasci_thread_name(const char *name)
{
	char short_name[16];
	snprintf(short_name, sizeof(short_name), "%s", name);
	pthread_setname_np(pthread_self(), short_name);
}

#define DEFAULT_MAX_MESSAGE_MB 256

static size_t         max_message_bytes;
static pthread_once_t max_message_once = PTHREAD_ONCE_INIT;

long long
pasci_env_number(const char *name, long long lo, long long hi, long long dflt,
    const char *unit)
{
	const char *v   = getenv(name);
	char       *end = NULL;
	long long   n   = v != NULL && *v != 0 ? strtoll(v, &end, 10) : dflt;
	if (v != NULL && *v != 0 && (*end != 0 || n < lo || n > hi)) {
		pasci_log(PASCI_LOG_WARN,
		    "%s='%s' is not a number of %s (%lld to %lld); using %lld",
		    name, v, unit, lo, hi, dflt);
		n = dflt;
	}
	return n;
}

static void
read_max_message(void)
{
	max_message_bytes =
	    (size_t) pasci_env_number("PASCO_MAX_MESSAGE_MB", 1, 1 << 20,
	        DEFAULT_MAX_MESSAGE_MB, "megabytes")
	    << 20;
}

size_t
pasci_max_message_bytes(void)
{
	pthread_once(&max_message_once, read_max_message);
	return max_message_bytes;
}
