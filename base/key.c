/*
 * The cluster key (see key.h): loading a key file with its checks, and the
 * process-wide key, loaded once under a mutex and read-only afterwards.
 */
#include "key.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* Distinct byte values in buf: 16 random bytes have about 15.5 (fewer
 * than PASCI_KEY_MIN_DISTINCT with a chance under 1e-9); a file of zeros
 * has 1, a repeated pattern or a word typed over and over a handful. */
static int
distinct_bytes(const uint8_t *buf, size_t len)
{
	bool seen[256] = {false};
	int  n         = 0;
	for (size_t i = 0; i < len; i++) {
		n += !seen[buf[i]];
		seen[buf[i]] = true;
	}
	return n;
}

int
pasci_key_load(pasci_key *out, const char *path, char *err, size_t errlen)
{
	uint8_t     buf[PASCI_KEY_MAX_FILE + 1];
	struct stat st;
	ssize_t     n;
	size_t      len = 0;
	int         fd;

	memset(out, 0, sizeof(*out));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		pasci_fmt(err, errlen, "cluster key file %s: %s", path,
		    strerror(errno));
		return PASCO_EINVAL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		pasci_fmt(
		    err, errlen, "cluster key file %s is not a file", path);
		return PASCO_EINVAL;
	}
	if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
		close(fd);
		pasci_fmt(err, errlen,
		    "cluster key file %s can be read by its group or others "
		    "(mode %04o); chmod 600 %s",
		    path, (unsigned) (st.st_mode & 07777), path);
		return PASCO_EINVAL;
	}
	while (len < sizeof(buf) &&
	       ((n = read(fd, buf + len, sizeof(buf) - len)) > 0 ||
	           (n < 0 && errno == EINTR))) {
		len += n > 0 ? (size_t) n : 0;
	}
	close(fd);
	if (len < PASCI_KEY_MIN || len > PASCI_KEY_MAX_FILE) {
		pasci_fmt(err, errlen,
		    "cluster key file %s holds %s%zu bytes; a key is %d to %d "
		    "random bytes (head -c 32 /dev/urandom > %s)",
		    path, len > PASCI_KEY_MAX_FILE ? "over " : "",
		    len > PASCI_KEY_MAX_FILE ? (size_t) PASCI_KEY_MAX_FILE
		                             : len,
		    PASCI_KEY_MIN, PASCI_KEY_MAX_FILE, path);
		pasci_wipe(buf, sizeof(buf));
		return PASCO_EINVAL;
	}
	if (distinct_bytes(buf, len) < PASCI_KEY_MIN_DISTINCT) {
		pasci_fmt(err, errlen,
		    "cluster key file %s holds %zu bytes of only %d distinct "
		    "values (%s): not a secret; a key is random bytes (head "
		    "-c 32 /dev/urandom > %s)",
		    path, len, distinct_bytes(buf, len),
		    distinct_bytes(buf, len) == 1 ? "one byte repeated"
		                                  : "a short pattern",
		    path);
		pasci_wipe(buf, sizeof(buf));
		return PASCO_EINVAL;
	}
	if (len > sizeof(out->bytes)) {
		pasci_sha256(buf, len, out->bytes);
		out->len = PASCI_SHA256_BYTES;
	} else {
		memcpy(out->bytes, buf, len);
		out->len = len;
	}
	pasci_wipe(buf, sizeof(buf));
	return PASCO_OK;
}

static pthread_mutex_t cluster_mu = PTHREAD_MUTEX_INITIALIZER;
/* Protected by cluster_mu. */
static bool      cluster_loaded;
static bool      cluster_has_key;
static int       cluster_rv;
static pasci_key cluster_key_value;
static char      cluster_err[512];
static char      cluster_path[512]; /* "": none, or set by the program */

static void
cluster_load_locked(void)
{
	const char *path = getenv("PASCO_KEY_FILE");

	cluster_loaded = true;
	if (path == NULL || *path == 0) {
		return;
	}
	pasci_fmt(cluster_path, sizeof(cluster_path), "%s", path);
	cluster_rv = pasci_key_load(
	    &cluster_key_value, path, cluster_err, sizeof(cluster_err));
	if (cluster_rv != 0) {
		pasci_log(PASCI_LOG_ERROR, "%s", cluster_err);
		return;
	}
	cluster_has_key = true;
}

int
pasci_cluster_key(const pasci_key **out, char *err, size_t errlen)
{
	int rv;
	pthread_mutex_lock(&cluster_mu);
	if (!cluster_loaded) {
		cluster_load_locked();
	}
	rv   = cluster_rv;
	*out = cluster_has_key ? &cluster_key_value : NULL;
	if (rv != 0 && err != NULL) {
		pasci_fmt(err, errlen, "%s", cluster_err);
	}
	pthread_mutex_unlock(&cluster_mu);
	return rv;
}

void
pasci_cluster_key_warn_if_open(void)
{
	static bool      warned; /* under cluster_mu */
	const pasci_key *key;
	bool             warn;
	if (pasci_cluster_key(&key, NULL, 0) != 0) {
		return; /* an unusable file: said already */
	}
	pthread_mutex_lock(&cluster_mu);
	warn   = key == NULL && !warned;
	warned = warned || warn;
	pthread_mutex_unlock(&cluster_mu);
	if (warn) {
		pasci_log(PASCI_LOG_WARN,
		    "no cluster key (--key-file or PASCO_KEY_FILE): this "
		    "cluster is open to anyone who can reach its ports");
	}
}

void
pasci_cluster_key_set(const pasci_key *key)
{
	pthread_mutex_lock(&cluster_mu);
	cluster_loaded  = true;
	cluster_rv      = 0;
	cluster_has_key = key != NULL;
	cluster_path[0] = 0;
	if (key != NULL) {
		cluster_key_value = *key;
	} else {
		pasci_wipe(&cluster_key_value, sizeof(cluster_key_value));
	}
	pthread_mutex_unlock(&cluster_mu);
}

const char *
pasci_cluster_key_source(char *buf, size_t len)
{
	const pasci_key *key;
	(void) pasci_cluster_key(&key, NULL, 0); /* loads it, if not yet */
	pthread_mutex_lock(&cluster_mu);
	if (cluster_path[0] != 0) {
		pasci_fmt(buf, len,
		    "the key file %s (PASCO_KEY_FILE or --key-file)",
		    cluster_path);
	} else {
		pasci_fmt(buf, len, "%s",
		    cluster_has_key ? "a key the program set"
		                    : "no key (PASCO_KEY_FILE is not set)");
	}
	pthread_mutex_unlock(&cluster_mu);
	return buf;
}

void
pasci_cluster_key_forget(void)
{
	pthread_mutex_lock(&cluster_mu);
	cluster_loaded  = false;
	cluster_has_key = false;
	cluster_rv      = 0;
	cluster_path[0] = 0;
	pasci_wipe(&cluster_key_value, sizeof(cluster_key_value));
	pthread_mutex_unlock(&cluster_mu);
}
