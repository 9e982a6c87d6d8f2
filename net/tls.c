/*
 * TLS configuration and handshake-failure reports (see tls.h).
 *
 * The environment and the PEM files are read once, under pthread_once,
 * into tls_env; every endpoint gets a configuration of its own made from
 * those bytes (a client's names its server, and nng makes a configuration
 * read-only once an endpoint uses it).
 *
 * Threads: any thread sets up and forgets endpoints; one watcher thread,
 * started with the first watched endpoint and joined when the last is
 * forgotten, reads nng's statistics every WATCH_MS and logs new handshake
 * failures. watch_mu guards the endpoint list; start_mu orders the
 * watcher's start and join (held across the join, never by the watcher).
 */
#include "tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "util.h"

#define WATCH_MS 250
#define LOG_EVERY_MS 10000
#define PEM_MAX (1u << 20)

static struct {
	pthread_once_t once;
	int            rv; /* 0, or why there is no configuration */
	char           err[512];
	char          *cert, *key, *ca;  /* PEM text */
	char           server_name[256]; /* PASCO_TLS_SERVER_NAME or "" */
} tls_env = {.once = PTHREAD_ONCE_INIT};

typedef struct watched {
	bool            listener;
	uint32_t        id;
	char            url[300];
	uint64_t        failures; /* handshakes failed, as last read */
	uint64_t        logged;   /* failures already logged */
	int64_t         log_ms;   /* when they were last logged */
	struct watched *next;
} watched;

static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  watch_cv = PTHREAD_COND_INITIALIZER;
/* Protected by watch_mu. */
static watched  *watch_list;
static bool      watch_stop;
static bool      watch_running; /* also read under start_mu alone */
static pthread_t watch_thread;

bool
pasci_tls_url(const char *url)
{
	return strncmp(url, "tls+tcp", 7) == 0;
}

/* Reads the PEM file named by variable var into *out. */
static int
tls_read_pem(const char *var, char **out)
{
	const char *path = getenv(var);
	FILE       *f;
	size_t      n;
	char       *buf;

	if (path == NULL || *path == 0) {
		pasci_fmt(tls_env.err, sizeof(tls_env.err),
		    "TLS is not configured: %s is not set (or --%s)", var,
		    strcmp(var, "PASCO_TLS_CERT") == 0  ? "tls-cert"
		    : strcmp(var, "PASCO_TLS_KEY") == 0 ? "tls-key"
		                                        : "tls-ca");
		return PASCO_EPRECONDITION;
	}
	if ((f = fopen(path, "rb")) == NULL) {
		pasci_fmt(tls_env.err, sizeof(tls_env.err),
		    "cannot read %s=%s: %s", var, path, strerror(errno));
		return PASCO_EIO;
	}
	if ((buf = malloc(PEM_MAX + 1)) == NULL) {
		fclose(f);
		return PASCO_ENOMEM;
	}
	n = fread(buf, 1, PEM_MAX + 1, f);
	if (ferror(f) || n == 0 || n > PEM_MAX) {
		pasci_fmt(tls_env.err, sizeof(tls_env.err),
		    "cannot read %s=%s: %s", var, path,
		    ferror(f) ? strerror(errno)
		    : n == 0
		        ? "the file is empty"
		        : "larger than 1 MB: not a PEM certificate or key");
		fclose(f);
		free(buf);
		return PASCO_EIO;
	}
	fclose(f);
	buf[n] = 0;
	if (strstr(buf, "-----BEGIN ") == NULL) {
		pasci_fmt(tls_env.err, sizeof(tls_env.err),
		    "%s=%s is not a PEM file (no -----BEGIN line)", var, path);
		free(buf);
		return PASCO_EIO;
	}
	*out = buf;
	return PASCO_OK;
}

static void
tls_env_load(void)
{
	const char *name = getenv("PASCO_TLS_SERVER_NAME");
	int         rv;

	pasci_fmt(tls_env.server_name, sizeof(tls_env.server_name), "%s",
	    name != NULL ? name : "");
	if ((rv = tls_read_pem("PASCO_TLS_CERT", &tls_env.cert)) != 0 ||
	    (rv = tls_read_pem("PASCO_TLS_KEY", &tls_env.key)) != 0 ||
	    (rv = tls_read_pem("PASCO_TLS_CA", &tls_env.ca)) != 0) {
		free(tls_env.cert);
		free(tls_env.key);
		tls_env.cert = tls_env.key = NULL;
		tls_env.rv                 = rv;
	}
}

int
pasci_tls_config_for(pasci_tls_side side, const char *server_name,
    nng_tls_config **out, char *err, size_t errlen)
{
	nng_tls_config *cfg;
	const char     *what;
	int             rv;

	*out = NULL;
	pthread_once(&tls_env.once, tls_env_load);
	if (tls_env.rv != 0) {
		pasci_fmt(err, errlen, "%s", tls_env.err);
		return tls_env.rv;
	}
	if ((rv = nng_tls_config_alloc(
	         &cfg, side == PASCI_TLS_SERVER ? NNG_TLS_MODE_SERVER
	                                        : NNG_TLS_MODE_CLIENT)) != 0) {
		pasci_fmt(err, errlen, "cannot make a TLS configuration: %s",
		    nng_strerror(rv));
		return rv == NNG_ENOMEM ? PASCO_ENOMEM : PASCO_EIO;
	}
	if (side == PASCI_TLS_CLIENT && tls_env.server_name[0] != 0) {
		server_name = tls_env.server_name;
	}
	what = "PASCO_TLS_CA";
	if ((rv = nng_tls_config_ca_chain(cfg, tls_env.ca, NULL)) == 0) {
		what = "PASCO_TLS_CERT and PASCO_TLS_KEY (do they match?)";
		rv   = nng_tls_config_own_cert(
		      cfg, tls_env.cert, tls_env.key, NULL);
	}
	if (rv == 0) {
		what = "the TLS authentication mode";
		rv = nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED);
	}
	if (rv == 0 && side == PASCI_TLS_CLIENT && server_name != NULL) {
		what = "the TLS server name";
		rv   = nng_tls_config_server_name(cfg, server_name);
	}
	if (rv != 0) {
		pasci_fmt(err, errlen, "TLS: %s refused: %s", what,
		    nng_strerror(rv));
		nng_tls_config_free(cfg);
		return rv == NNG_ENOMEM ? PASCO_ENOMEM : PASCO_EIO;
	}
	*out = cfg;
	return PASCO_OK;
}

/* Handshakes that failed on the endpoint, by nng's count: "auth" counts
 * NNG_EPEERAUTH and NNG_ECRYPTO (a certificate refused by either side). */
static uint64_t
tls_failures(nng_stat *root, const watched *w)
{
	nng_stat *st, *auth;
	if (w->listener) {
		nng_listener l;
		l.id = w->id;
		st   = nng_stat_find_listener(root, l);
	} else {
		nng_dialer d;
		d.id = w->id;
		st   = nng_stat_find_dialer(root, d);
	}
	if (st == NULL || (auth = nng_stat_find(st, "auth")) == NULL) {
		return 0;
	}
	return nng_stat_value(auth);
}

static void *
tls_watch_main(void *arg)
{
	(void) arg;
	pasci_thread_name("pasco-tls-watch");
	pthread_mutex_lock(&watch_mu);
	while (!watch_stop) {
		struct timespec ts;
		nng_stat       *root = NULL;
		char            lines[4][400];
		int             nlines = 0;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += WATCH_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&watch_cv, &watch_mu, &ts);
		if (watch_stop) {
			break;
		}
		pthread_mutex_unlock(&watch_mu);
		if (nng_stats_get(&root) != 0) {
			root = NULL;
		}
		pthread_mutex_lock(&watch_mu);
		for (watched *w = watch_list; w != NULL && root != NULL;
		     w          = w->next) {
			uint64_t n   = tls_failures(root, w);
			int64_t  now = pasci_now_ms();
			w->failures  = n > w->failures ? n : w->failures;
			/* the first at once, then a line per LOG_EVERY_MS
			 * at most: a dialer retries many times a second */
			if (w->failures == w->logged ||
			    (w->logged > 0 &&
			        now - w->log_ms < LOG_EVERY_MS)) {
				continue;
			}
			if (nlines < 4) {
				pasci_fmt(lines[nlines++], sizeof(lines[0]),
				    w->listener
				        ? "TLS: %llu handshake(s) refused on "
				          "%s "
				          "(a client without a certificate "
				          "signed by PASCO_TLS_CA, or one "
				          "that "
				          "refused ours; nng does not say "
				          "which peer)"
				        : "TLS: %llu handshake(s) with %s "
				          "failed: the server's "
				          "certificate or ours was refused "
				          "(check PASCO_TLS_CA on both sides, "
				          "and that the server's certificate "
				          "names the host dialed)",
				    (unsigned long long) (w->failures -
				                          w->logged),
				    w->url);
			}
			w->logged = w->failures;
			w->log_ms = now;
		}
		pthread_mutex_unlock(&watch_mu);
		if (root != NULL) {
			nng_stats_free(root);
		}
		for (int i = 0; i < nlines; i++) {
			pasci_log(PASCI_LOG_ERROR, "%s", lines[i]);
		}
		pthread_mutex_lock(&watch_mu);
	}
	pthread_mutex_unlock(&watch_mu);
	return NULL;
}

static void
tls_watch(bool listener, uint32_t id, const char *url)
{
	watched *w = pasci_calloc(1, sizeof(*w));
	if (w == NULL) {
		return; /* failures go unreported; the endpoint still works */
	}
	w->listener = listener;
	w->id       = id;
	pasci_fmt(w->url, sizeof(w->url), "%s", url);
	pthread_mutex_lock(&start_mu);
	pthread_mutex_lock(&watch_mu);
	w->next    = watch_list;
	watch_list = w;
	if (!watch_running) {
		watch_stop    = false;
		watch_running = pthread_create(&watch_thread, NULL,
		                    tls_watch_main, NULL) == 0;
	}
	pthread_mutex_unlock(&watch_mu);
	pthread_mutex_unlock(&start_mu);
}

static void
tls_forget(bool listener, uint32_t id)
{
	watched *gone = NULL;
	bool     join = false;

	pthread_mutex_lock(&start_mu);
	pthread_mutex_lock(&watch_mu);
	for (watched **p = &watch_list; *p != NULL; p = &(*p)->next) {
		if ((*p)->listener == listener && (*p)->id == id) {
			gone = *p;
			*p   = gone->next;
			break;
		}
	}
	if (watch_list == NULL && watch_running) {
		watch_stop = true;
		join       = true;
		pthread_cond_signal(&watch_cv);
	}
	pthread_mutex_unlock(&watch_mu);
	if (join) {
		pthread_join(watch_thread, NULL);
		watch_running = false;
	}
	pthread_mutex_unlock(&start_mu);
	free(gone);
}

void
pasci_tls_forget_listener(nng_listener l)
{
	tls_forget(true, l.id);
}

void
pasci_tls_forget_dialer(nng_dialer d)
{
	tls_forget(false, d.id);
}

bool
pasci_tls_failure(const char *url, char *buf, size_t len)
{
	uint64_t n = 0;
	pthread_mutex_lock(&watch_mu);
	for (watched *w = watch_list; w != NULL; w = w->next) {
		if (!w->listener && strcmp(w->url, url) == 0) {
			n += w->failures;
		}
	}
	pthread_mutex_unlock(&watch_mu);
	if (n == 0) {
		return false;
	}
	pasci_fmt(buf, len,
	    "%llu TLS handshake(s) failed: the server's certificate or ours "
	    "was refused (check PASCO_TLS_CA on both sides, and that the "
	    "server's certificate names the host dialed)",
	    (unsigned long long) n);
	return true;
}

int
pasci_tls_listener_setup(nng_listener l, const char *url)
{
	nng_tls_config *cfg;
	char            err[600];
	int             rv;

	if (!pasci_tls_url(url)) {
		return PASCO_OK;
	}
	if ((rv = pasci_tls_config_for(
	         PASCI_TLS_SERVER, NULL, &cfg, err, sizeof(err))) != 0) {
		pasci_log(
		    PASCI_LOG_ERROR, "cannot listen on %s: %s", url, err);
		return rv;
	}
	rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, cfg);
	nng_tls_config_free(cfg); /* the listener holds its own reference */
	if (rv != 0) {
		pasci_log(PASCI_LOG_ERROR, "cannot listen on %s: TLS: %s", url,
		    nng_strerror(rv));
		return PASCO_EIO;
	}
	tls_watch(true, l.id, url);
	return PASCO_OK;
}

int
pasci_tls_dialer_setup(nng_dialer d, const char *url)
{
	nng_tls_config *cfg;
	char            host[256], port[16], err[600];
	int             rv;

	if (!pasci_tls_url(url)) {
		return PASCO_OK;
	}
	if (pasci_url_split(url, host, sizeof(host), port, sizeof(port)) !=
	    0) {
		pasci_log(
		    PASCI_LOG_ERROR, "cannot dial %s: no host:port", url);
		return PASCO_EINVAL;
	}
	if ((rv = pasci_tls_config_for(
	         PASCI_TLS_CLIENT, host, &cfg, err, sizeof(err))) != 0) {
		pasci_log(PASCI_LOG_ERROR, "cannot dial %s: %s", url, err);
		return rv;
	}
	rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);
	nng_tls_config_free(cfg); /* the dialer holds its own reference */
	if (rv != 0) {
		pasci_log(PASCI_LOG_ERROR, "cannot dial %s: TLS: %s", url,
		    nng_strerror(rv));
		return PASCO_EIO;
	}
	tls_watch(false, d.id, url);
	return PASCO_OK;
}
