/*
 * The rpc client's dialer, and following a task that moves (see
 * rpc_client_impl.h). nng looks a name up at each redial, with no time
 * limit and on four threads shared by the whole process, and its connect
 * has no time limit either: a worker whose ps came back at a new address
 * under the same name (a Kubernetes pod rescheduled) kept connecting to the
 * old address, which no longer answers, until the kernel gave up, and took
 * 25-60 s to reconnect.
 *
 * So a client whose URL names a host (tcp:// only; TLS checks the name
 * against the certificate, and nng dials it itself) looks the name up
 * itself, with a deadline (resolve.h), and has nng dial the address found.
 * While the link is down the name is looked up again every
 * REDIAL_LOOKUP_MS; the dialer is replaced when the address changed, or
 * when it has made no connection for STUCK_MS (a connect to an address that
 * drops packets waits for the kernel's timeout: closing the dialer ends
 * it). Runs on the client's timer thread, with the client's mu held on
 * entry and exit and dropped around nng's calls.
 */
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "rpc_client_impl.h"
#include "tls.h"
#include "util.h"

#define REDIAL_TICK_MS 100    /* the timer's pace while the link is down */
#define LOOKUP_TICK_MS 10     /* and while a lookup is under way */
#define REDIAL_LOOKUP_MS 1000 /* a new lookup at most this often */
#define LOOKUP_MS 5000        /* a lookup's deadline */
#define STUCK_MS 3000         /* a dialer with no connection for this long */
#define LOG_EVERY_MS 10000

void
pasci_rpc_redial_init(pasci_rpc_client *c)
{
	char host[256], port[16];
	if (strncmp(c->url, "tcp://", 6) == 0 &&
	    pasci_url_split(c->url, host, sizeof(host), port, sizeof(port)) ==
	        0 &&
	    !pasci_host_is_numeric(host) && port[0] != 0 &&
	    strspn(port, "0123456789") == strlen(port)) {
		c->resolves = true;
		memcpy(c->host, host, sizeof(c->host));
		memcpy(c->port, port, sizeof(c->port));
	}
}

int
pasci_rpc_dialer_start(pasci_rpc_client *c, const char *url, int *tls_rv)
{
	nng_dialer d;
	bool       slow;
	int        rv;

	pthread_mutex_lock(&c->mu);
	slow = c->slow;
	pthread_mutex_unlock(&c->mu);
	*tls_rv = 0;
	if ((rv = nng_dialer_create(&d, c->sock, url)) != 0) {
		return rv;
	}
	/* tls+tcp: certificates from the environment, or a named error */
	if ((*tls_rv = pasci_tls_dialer_setup(d, c->url)) != 0) {
		pasci_tls_forget_dialer(d);
		nng_dialer_close(d);
		return PASCO_EIO;
	}
	nng_dialer_set_ms(d, NNG_OPT_RECONNMINT, slow ? 1000 : 20);
	nng_dialer_set_ms(d, NNG_OPT_RECONNMAXT, slow ? 1000 : 500);
	if ((rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK)) != 0) {
		pasci_tls_forget_dialer(d);
		nng_dialer_close(d);
		return rv;
	}
	pthread_mutex_lock(&c->mu);
	c->dialer        = d;
	c->has_dialer    = true;
	c->dial_event_ms = pasci_now_ms();
	pasci_fmt(c->dial_url, sizeof(c->dial_url), "%s", url);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

void
pasci_rpc_dialer_close(pasci_rpc_client *c)
{
	nng_dialer d;
	bool       had;
	pthread_mutex_lock(&c->mu);
	d             = c->dialer;
	had           = c->has_dialer;
	c->has_dialer = false;
	pthread_mutex_unlock(&c->mu);
	if (had) {
		pasci_tls_forget_dialer(d);
		nng_dialer_close(d);
	}
}

/* Dials url instead of what the dialer dials now; mu held, dropped. */
static void
redial_replace_locked(pasci_rpc_client *c, const char *url, bool moved)
{
	int rv, tls_rv;
	pthread_mutex_unlock(&c->mu);
	if (moved) {
		pasci_log(PASCI_LOG_WARN,
		    "%s: '%s' is now at %s; dialing it there", c->url, c->host,
		    url + 6);
	} else {
		pasci_log(PASCI_LOG_DEBUG,
		    "%s: no connection to %s for %d ms; dialing afresh",
		    c->url, url + 6, STUCK_MS);
	}
	pasci_rpc_dialer_close(c);
	rv = pasci_rpc_dialer_start(c, url, &tls_rv);
	pthread_mutex_lock(&c->mu);
	if (rv != 0) {
		pasci_fmt(c->dial_error, sizeof(c->dial_error),
		    "cannot dial %s: %s", url,
		    rv == PASCO_EIO ? "TLS setup failed" : nng_strerror(rv));
	}
}

/* Says why (the lookup failed) at most every LOG_EVERY_MS; mu held. */
static void
redial_failed_locked(pasci_rpc_client *c, const char *why, int64_t now)
{
	pasci_fmt(c->dial_error, sizeof(c->dial_error), "%s", why);
	if (now - c->lookup_logged_ms >= LOG_EVERY_MS) {
		c->lookup_logged_ms = now;
		pasci_log(PASCI_LOG_WARN, "%s: %s; trying again", c->url, why);
	}
}

/* The outcome of c's lookup, if it has one: the dialer follows it. */
static void
redial_lookup_done_locked(pasci_rpc_client *c, int64_t now)
{
	pasci_sockaddr addr;
	char           detail[300], host[64], join[128], url[160];
	int            rv, port;

	rv = pasci_lookup_wait(c->lookup, 0, &addr, detail, sizeof(detail));
	if (rv == PASCO_ETIMEDOUT && now - c->lookup_ms < LOOKUP_MS) {
		return; /* not yet */
	}
	pasci_lookup_release(c->lookup); /* abandoned if still running */
	c->lookup         = NULL;
	c->next_lookup_ms = now + REDIAL_LOOKUP_MS;
	if (rv == PASCO_ETIMEDOUT) {
		pasci_fmt(detail, sizeof(detail),
		    "looking up '%s' got no answer within %d ms (the name "
		    "service is slow or does not answer)",
		    c->host, LOOKUP_MS);
	}
	if (rv != 0) {
		redial_failed_locked(c, detail, now);
		return;
	}
	c->dial_error[0] = 0;
	pasci_sockaddr_host(&addr, host, sizeof(host), &port);
	pasci_addr_join(join, sizeof(join), host, c->port);
	pasci_fmt(url, sizeof(url), "tcp://%s", join);
	if (!c->has_dialer || strcmp(url, c->dial_url) != 0) {
		redial_replace_locked(c, url, c->has_dialer);
	} else if (now - c->dial_event_ms >= STUCK_MS) {
		redial_replace_locked(c, url, false);
	}
}

void
pasci_rpc_redial_tick_locked(pasci_rpc_client *c)
{
	int64_t now = pasci_now_ms();
	char    detail[300];

	if (!c->resolves || c->closing || c->link != LINK_DOWN) {
		return;
	}
	if (c->lookup == NULL) {
		if (now < c->next_lookup_ms) {
			return;
		}
		if (pasci_lookup_start(&c->lookup, c->host, c->port, 0, detail,
		        sizeof(detail)) != 0) {
			c->next_lookup_ms = now + REDIAL_LOOKUP_MS;
			redial_failed_locked(c, detail, now);
			return;
		}
		c->lookup_ms = now;
	}
	redial_lookup_done_locked(c, now);
}

int64_t
pasci_rpc_redial_wait_ms_locked(const pasci_rpc_client *c)
{
	if (!c->resolves || c->link != LINK_DOWN) {
		return -1;
	}
	return c->lookup != NULL ? LOOKUP_TICK_MS : REDIAL_TICK_MS;
}

void
pasci_rpc_redial_now_locked(pasci_rpc_client *c)
{
	pasci_lookup_release(c->lookup); /* what it finds may be old news */
	c->lookup         = NULL;
	c->next_lookup_ms = 0;
	pthread_cond_broadcast(&c->timer_cv);
}

void
pasci_rpc_redial_fini(pasci_rpc_client *c)
{
	/* under the lock: a pipe's removal (an nng thread) may still drop
	 * the lookup until the socket is closed */
	pthread_mutex_lock(&c->mu);
	pasci_lookup_release(c->lookup);
	c->lookup = NULL;
	pthread_mutex_unlock(&c->mu);
}
