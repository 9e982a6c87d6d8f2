/*
 * Recovering a lost ps (see recovery.h). The connection callbacks only
 * change states and wake the recovery thread; the thread does what
 * blocks: restoring a returning ps from the checkpoint directory, giving up
 * on one that stays away past the timeout, and retrying held closures when
 * their backoff ends. The queue is paused (no global closure is sent)
 * while any ps is down or being restored.
 */
#include "recovery.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkpoint_impl.h"
#include "metrics_registry.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 60000
#define TICK_MS 50
#define MAX_HOLDS 6 /* retries of a closure whose failure is unexplained */
#define RESTORE_RETRY_MS 1000 /* a restore that needs another ps away */

enum { PS_OK, PS_DOWN, PS_RESTORING, PS_FAILED };

typedef struct held {
	pasco_coordinator *c;
	size_t             w;
	bool               rider;
	closure           *cl;
	int64_t            due_ms;
	struct held       *next;
} held;

struct pasci_recovery {
	pasco_strategy *s;
	pthread_t       thread;
	bool            started;
	pthread_mutex_t mu; /* leaf: stop, work, holds */
	/* Held while taken holds go back to their queues (the thread's due
	 * ones, a coordinator's flush): a flush returns only once no closure
	 * of its coordinator is on its way back. Taken before mu. */
	pthread_mutex_t put_mu;
	pthread_cond_t  cv;
	bool            stop;
	held           *holds;
	uint64_t        epoch;     /* atomic */
	size_t          unhealthy; /* atomic writes under s->mu */
	/* Under the strategy's mu. */
	char     dir[4096];
	bool     dir_from_option;
	int64_t  timeout_ms;
	uint8_t *state;
	int64_t *since_ms;
	uint64_t recoveries;
	int64_t  last_step;
};

static void
wake(pasci_recovery *r)
{
	pthread_mutex_lock(&r->mu);
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Pauses the attached coordinator's queue while a ps is unhealthy. Under
 * s->mu. */
static void
set_unhealthy(pasco_strategy *s, size_t n)
{
	__atomic_store_n(&s->rec->unhealthy, n, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&s->rec->epoch, 1, __ATOMIC_SEQ_CST);
	if (s->coord != NULL) {
		pasci_queue_set_paused(&s->coord->q, n > 0);
	}
}

static const char *
ps_url(pasco_strategy *s, size_t ps)
{
	return pasci_rpc_client_url(s->ps[ps]);
}

bool
pasci_recovery_ps_state(pasco_strategy *s, size_t ps, bool up, bool fresh)
{
	pasci_recovery *r = s->rec;
	size_t          n;
	if (r == NULL || r->dir[0] == 0 || r->state[ps] == PS_FAILED) {
		return false;
	}
	n = r->unhealthy;
	if (!up && r->state[ps] != PS_DOWN) {
		pasci_log(PASCI_LOG_WARN,
		    "ps %zu at %s is unavailable: the connection was lost; "
		    "training waits up to %lld ms for it to come back "
		    "(it is then restored from %s)",
		    ps, ps_url(s, ps), (long long) r->timeout_ms, r->dir);
		n += r->state[ps] == PS_OK;
		r->state[ps]    = PS_DOWN;
		r->since_ms[ps] = pasci_now_ms();
		set_unhealthy(s, n);
	} else if (up && fresh) {
		n += r->state[ps] == PS_OK;
		r->state[ps]    = PS_RESTORING;
		r->since_ms[ps] = 0; /* restored at once */
		set_unhealthy(s, n);
		wake(r);
	} else if (up && r->state[ps] == PS_DOWN) {
		pasci_log(PASCI_LOG_WARN,
		    "ps %zu at %s is back (the same process): nothing to "
		    "restore",
		    ps, ps_url(s, ps));
		r->state[ps] = PS_OK;
		set_unhealthy(s, n - 1);
	}
	return true;
}

uint64_t
pasci_recovery_epoch(pasco_strategy *s)
{
	return s->rec != NULL
	           ? __atomic_load_n(&s->rec->epoch, __ATOMIC_SEQ_CST)
	           : 0;
}

static bool
lost_ps_error(int err)
{
	return err == PASCO_EUNAVAILABLE || err == PASCO_ENOTFOUND ||
	       err == PASCO_ETIMEDOUT;
}

pasci_recovery_verdict
pasci_recovery_on_failure(pasco_coordinator *c, size_t w, closure *cl,
    bool rider, int err, const char *msg)
{
	pasci_recovery *r = c->s->rec;
	held           *h;
	if (r == NULL || __atomic_load_n(&r->started, __ATOMIC_SEQ_CST) == 0) {
		return PASCI_RECOVERY_FAIL; /* no directory yet: as before */
	}
	if (cl->ps_epoch != pasci_recovery_epoch(c->s) ||
	    __atomic_load_n(&r->unhealthy, __ATOMIC_SEQ_CST) > 0) {
		pasci_log(PASCI_LOG_INFO,
		    "closure %llu ('%s') is retried: it ran while a ps was "
		    "lost (%s)",
		    (unsigned long long) cl->id, cl->name, msg);
		return PASCI_RECOVERY_RETRY;
	}
	if (!lost_ps_error(err) || cl->ps_holds >= MAX_HOLDS ||
	    (h = pasci_calloc(1, sizeof(*h))) == NULL) {
		return PASCI_RECOVERY_FAIL;
	}
	/* maybe a ps loss not seen here yet: retry after a backoff */
	*h = (held){c, w, rider, cl,
	    pasci_now_ms() + (100 << (cl->ps_holds < 4 ? cl->ps_holds : 4)),
	    NULL};
	cl->ps_holds++;
	pthread_mutex_lock(&r->mu);
	h->next  = r->holds;
	r->holds = h;
	pthread_mutex_unlock(&r->mu);
	return PASCI_RECOVERY_HELD;
}

static void
put_back(held *h)
{
	if (h->rider) {
		pasci_queue_rider_put_back(&h->c->q, h->w, h->cl);
	} else {
		pasci_queue_put_back(&h->c->q, h->w, h->cl);
	}
	free(h);
}

/* Takes the held closures of c (all of them when c is NULL), or only
 * those due. */
static held *
take_holds(pasci_recovery *r, pasco_coordinator *c, bool due_only)
{
	held   *out = NULL, **p;
	int64_t now = pasci_now_ms();
	pthread_mutex_lock(&r->mu);
	for (p = &r->holds; *p != NULL;) {
		held *h = *p;
		if ((c == NULL || h->c == c) &&
		    (!due_only || h->due_ms <= now)) {
			*p      = h->next;
			h->next = out;
			out     = h;
		} else {
			p = &h->next;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return out;
}

void
pasci_recovery_flush(pasco_coordinator *c)
{
	if (c->s->rec == NULL) {
		return;
	}
	pthread_mutex_lock(&c->s->rec->put_mu);
	for (held *h = take_holds(c->s->rec, c, false), *next; h != NULL;
	     h       = next) {
		next = h->next;
		put_back(h);
	}
	pthread_mutex_unlock(&c->s->rec->put_mu);
}

/* Whether a ps other than ps is down or being restored (not failed).
 * Under s->mu. */
static bool
others_away(pasco_strategy *s, size_t ps)
{
	for (size_t i = 0; i < s->nps; i++) {
		if (i != ps && (s->rec->state[i] == PS_DOWN ||
		                   s->rec->state[i] == PS_RESTORING)) {
			return true;
		}
	}
	return false;
}

/* Restores ps from the newest intact checkpoint; then, unless it was lost
 * again meanwhile, marks it healthy (or failed) and reports what was
 * rolled back. */
static void
restore_ps(pasco_strategy *s, size_t ps)
{
	pasci_recovery  *r = s->rec;
	pasci_ckpt       ck;
	pasco_variable **vars = NULL;
	size_t           n    = 0;
	char             dir[4096], err[1500], restored[1500] = "";
	int              rv;
	bool             opened;

	pthread_mutex_lock(&s->mu);
	pasci_fmt(dir, sizeof(dir), "%s", r->dir);
	pthread_mutex_unlock(&s->mu);
	rv     = pasci_ckpt_open_latest(&ck, dir, err, sizeof(err));
	opened = rv == 0;
	if (rv == 0) {
		vars = pasci_checkpoint_directory(s, &n);
		rv   = vars == NULL
		           ? PASCO_ENOMEM
		           : pasci_ckpt_restore(&ck, vars, n, (int32_t) ps,
		                 restored, sizeof(restored), err, sizeof(err));
		pasci_checkpoint_directory_free(vars, n);
	}
	pthread_mutex_lock(&s->mu);
	if (r->state[ps] != PS_RESTORING) {
		/* lost again while restoring: its next return restores it */
	} else if (rv != 0 && lost_ps_error(rv) && others_away(s, ps)) {
		/* a restore also writes what other ps hold (the global
		 * step): with one of them away too, it is tried again once a
		 * second, until that one is back or has failed */
		pasci_log(
		    r->since_ms[ps] == 0 ? PASCI_LOG_WARN : PASCI_LOG_INFO,
		    "ps %zu at %s: its restore waits for another ps to be "
		    "back (%s)",
		    ps, ps_url(s, ps), err);
		r->since_ms[ps] = pasci_now_ms() + RESTORE_RETRY_MS;
	} else if (rv == 0) {
		r->recoveries++;
		pasci_metric_add(PASCI_M_PS_RECOVERIES, 1);
		r->last_step = ck.step;
		r->state[ps] = PS_OK;
		pasci_log(PASCI_LOG_WARN,
		    "ps %zu at %s came back as a new process: restored from "
		    "checkpoint %s (step %lld): %s; their updates since step "
		    "%lld are rolled back, and training goes on",
		    ps, ps_url(s, ps), ck.path, (long long) ck.step,
		    restored[0] ? restored : "no variables",
		    (long long) ck.step);
		set_unhealthy(s, r->unhealthy - 1);
	} else {
		char msg[2048];
		pasci_fmt(msg, sizeof(msg),
		    "ps %zu at %s restarted as a new process and could not be "
		    "restored from %s: %s",
		    ps, ps_url(s, ps), dir, err);
		pasci_log(PASCI_LOG_ERROR, "%s", msg);
		r->state[ps] = PS_FAILED;
		if (s->coord != NULL) {
			pasci_queue_record_error_from(
			    &s->coord->q, PASCO_EUNAVAILABLE, msg, (int) ps);
		}
		set_unhealthy(s, r->unhealthy - 1);
	}
	pthread_mutex_unlock(&s->mu);
	if (opened) { /* restored or not */
		pasci_ckpt_close(&ck);
	}
}

/* Fails every ps down for longer than the timeout, as without recovery;
 * returns a ps to restore, or -1. Under s->mu. */
static long
check_states(pasco_strategy *s)
{
	pasci_recovery *r       = s->rec;
	int64_t         now     = pasci_now_ms();
	long            restore = -1;
	for (size_t i = 0; i < s->nps; i++) {
		char msg[512];
		if (r->state[i] == PS_RESTORING && restore < 0 &&
		    now >= r->since_ms[i]) { /* its retry's time (or 0) */
			restore = (long) i;
		}
		if (r->state[i] != PS_DOWN ||
		    now - r->since_ms[i] < r->timeout_ms) {
			continue;
		}
		pasci_fmt(msg, sizeof(msg),
		    "ps %zu at %s is unavailable: the connection was lost, "
		    "and it did not come back within %lld ms",
		    i, ps_url(s, i), (long long) r->timeout_ms);
		pasci_log(PASCI_LOG_WARN, "%s", msg);
		r->state[i] = PS_FAILED;
		if (s->coord != NULL) {
			pasci_queue_record_error_from(
			    &s->coord->q, PASCO_EUNAVAILABLE, msg, (int) i);
		}
		set_unhealthy(s, r->unhealthy - 1);
	}
	return restore;
}

static void *
recovery_main(void *arg)
{
	pasco_strategy *s = arg;
	pasci_recovery *r = s->rec;
	pasci_thread_name("pasco-recovery");
	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		struct timespec ts;
		long            ps;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		if (r->stop) {
			break;
		}
		pthread_mutex_unlock(&r->mu);
		pthread_mutex_lock(&r->put_mu);
		for (held *h = take_holds(r, NULL, true), *next; h != NULL;
		     h       = next) {
			next = h->next;
			put_back(h);
		}
		pthread_mutex_unlock(&r->put_mu);
		pthread_mutex_lock(&s->mu);
		ps = check_states(s);
		pthread_mutex_unlock(&s->mu);
		if (ps >= 0) {
			restore_ps(s, (size_t) ps);
		}
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Starts the thread once a directory is known. Under s->mu. */
static void
start_locked(pasco_strategy *s)
{
	pasci_recovery *r = s->rec;
	if (!r->started && r->dir[0] != 0 &&
	    pthread_create(&r->thread, NULL, recovery_main, s) == 0) {
		__atomic_store_n(&r->started, true, __ATOMIC_SEQ_CST);
	}
}

int
pasci_recovery_init(pasco_strategy *s, const pasco_strategy_options *opts)
{
	pasci_recovery *r = pasci_calloc(1, sizeof(*r));
	if (r == NULL || (r->state = pasci_calloc(s->nps, 1)) == NULL ||
	    (r->since_ms = pasci_calloc(s->nps, sizeof(int64_t))) == NULL) {
		if (r != NULL) {
			free(r->state);
		}
		free(r);
		return PASCO_ENOMEM;
	}
	r->s          = s;
	r->timeout_ms = opts != NULL && opts->ps_recovery_timeout_ms > 0
	                    ? opts->ps_recovery_timeout_ms
	                    : DEFAULT_TIMEOUT_MS;
	r->last_step  = -1;
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->put_mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	s->rec = r;
	if (opts != NULL && opts->checkpoint_dir != NULL &&
	    opts->checkpoint_dir[0] != 0) {
		pasci_fmt(r->dir, sizeof(r->dir), "%s", opts->checkpoint_dir);
		r->dir_from_option = true;
		pthread_mutex_lock(&s->mu);
		start_locked(s);
		pthread_mutex_unlock(&s->mu);
	}
	return PASCO_OK;
}

void
pasci_recovery_fini(pasco_strategy *s)
{
	pasci_recovery *r = s->rec;
	if (r == NULL) {
		return;
	}
	if (r->started) {
		pthread_mutex_lock(&r->mu);
		r->stop = true;
		pthread_cond_signal(&r->cv);
		pthread_mutex_unlock(&r->mu);
		pthread_join(r->thread, NULL);
	}
	pthread_mutex_lock(&s->mu); /* no callback sees it from now on */
	s->rec = NULL;
	pthread_mutex_unlock(&s->mu);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->put_mu);
	free(r->state);
	free(r->since_ms);
	free(r);
}

void
pasci_recovery_note_save(pasco_strategy *s, const char *dir)
{
	pthread_mutex_lock(&s->mu);
	if (s->rec != NULL && !s->rec->dir_from_option) {
		pasci_fmt(s->rec->dir, sizeof(s->rec->dir), "%s", dir);
		start_locked(s);
	}
	pthread_mutex_unlock(&s->mu);
}

bool
pasci_recovery_wait_healthy(pasco_strategy *s)
{
	pasci_recovery *r = s->rec;
	int64_t         deadline;
	bool            on;
	pthread_mutex_lock(&s->mu);
	on       = r != NULL && r->started;
	deadline = pasci_now_ms() + (on ? r->timeout_ms : 0) + 10000;
	pthread_mutex_unlock(&s->mu);
	while (on && __atomic_load_n(&r->unhealthy, __ATOMIC_SEQ_CST) > 0 &&
	       pasci_now_ms() < deadline) {
		struct timespec ts = {0, TICK_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
	return on;
}

int
pasci_recovery_retry(pasco_strategy *s, const char    *what,
    int (*op)(void *arg, char *why, size_t len), void *arg)
{
	for (int attempt = 0;; attempt++) {
		char why[1024]  = "";
		bool recovering = pasci_recovery_wait_healthy(s);
		int  rv         = op(arg, why, sizeof(why));
		if (rv == 0 || !recovering || attempt == 4 ||
		    (rv != PASCO_EUNAVAILABLE && rv != PASCO_ETIMEDOUT)) {
			return rv;
		}
		pasci_log(PASCI_LOG_WARN, "%s: %s; trying again", what, why);
		nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
	}
}

uint64_t
pasco_strategy_ps_recoveries(pasco_strategy *s, int64_t *last_step)
{
	uint64_t n = 0;
	pthread_mutex_lock(&s->mu);
	if (s->rec != NULL) {
		n = s->rec->recoveries;
		if (last_step != NULL) {
			*last_step = s->rec->last_step;
		}
	} else if (last_step != NULL) {
		*last_step = -1;
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}
