/*
 * The strategy: connections to every ps and worker, and variable creation,
 * round-robin over ps tasks in creation order (TensorFlow's
 * _create_variable_round_robin: the counter advances once per shard, so a
 * variable in n shards takes n turns; coordinator.h says the same).
 * A directory of created variables makes re-creation idempotent and keeps a
 * name on the ps it was first placed on. The lock guards the counter, the
 * directory and the attached coordinator; RPCs run without it.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "coordinator_impl.h"
#include "key.h"
#include "recovery.h"
#include "resolve.h"
#include "tensor_impl.h"
#include "tls.h"
#include "util.h"
#include "variable_impl.h"

static void
strategy_worker_state(void *arg, bool up, uint64_t incarnation)
{
	task_link         *link = arg;
	pasco_coordinator *c;
	if (up) {
		__atomic_store_n(&link->hb_dropped, 0, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&link->s->mu);
	c = link->s->coord;
	if (c != NULL) {
		/* Under the strategy lock so the coordinator cannot detach and
		 * be freed meanwhile; the callee takes the coordinator's and
		 * the queue's locks, which come after it in the lock order. */
		pasci_coordinator_worker_state(
		    c, link->index, up, incarnation);
	}
	pthread_mutex_unlock(&link->s->mu);
}

/* A ps that drops, or comes back as a new process, fails the training:
 * its variables are gone. Raised at the next schedule / join / done.
 * With ps recovery (recovery.h), it is waited for and restored instead. */
static void
strategy_ps_state(void *arg, bool up, uint64_t incarnation)
{
	task_link      *link     = arg;
	pasco_strategy *s        = link->s;
	char            msg[512] = "";
	bool            fresh;

	if (up) {
		__atomic_store_n(&link->hb_dropped, 0, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&s->mu);
	fresh =
	    up && link->incarnation != 0 && incarnation != link->incarnation;
	if (s->rec != NULL &&
	    pasci_recovery_ps_state(s, link->index, up, fresh)) {
		if (up) {
			link->incarnation = incarnation;
		}
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (!up) {
		pasci_fmt(msg, sizeof(msg), "ps %zu at %s is unavailable: %s",
		    link->index, pasci_rpc_client_url(link->client),
		    __atomic_load_n(&link->hb_dropped, __ATOMIC_RELAXED)
		        ? "it stopped answering heartbeats (alive but hung?)"
		        : "the connection was lost");
	} else if (link->incarnation == 0) {
		link->incarnation = incarnation;
	} else if (incarnation != link->incarnation) {
		link->incarnation = incarnation;
		pasci_fmt(msg, sizeof(msg),
		    "ps %zu at %s restarted as a new "
		    "process: the variables it held are gone (restore them "
		    "from a "
		    "checkpoint)",
		    link->index, pasci_rpc_client_url(link->client));
	}
	if (msg[0] != 0) {
		pasci_log(PASCI_LOG_WARN, "%s", msg);
		if (s->coord != NULL) {
			pasci_queue_record_error_from(&s->coord->q,
			    PASCO_EUNAVAILABLE, msg, (int) link->index);
		}
	}
	pthread_mutex_unlock(&s->mu);
}

/* Opens the client of one task, as the chief self (net/chief.h: every
 * handshake says who this chief is; a task serves one chief at a time). */
static int
open_task(pasco_strategy *s, task_link *link, const char *url,
    pasci_rpc_state_fn fn, const pasci_chief *self, pasci_rpc_client **client)
{
	const pasci_key *key;
	int              rv;
	/* the client is set under the lock: callbacks may run before open
	 * returns */
	pthread_mutex_lock(&s->mu);
	if ((rv = pasci_cluster_key(&key, s->error, sizeof(s->error))) != 0) {
		pthread_mutex_unlock(&s->mu); /* the key file is unusable */
		return rv;
	}
	rv = pasci_rpc_client_open_as(client, url, fn, link, key, self);
	link->client = *client;
	pthread_mutex_unlock(&s->mu);
	return rv;
}

static int
strategy_connect(pasco_strategy *s, const pasco_cluster *cluster)
{
	int         rv = PASCO_OK;
	pasci_chief self;
	pasci_chief_self(cluster, &self);
	for (size_t i = 0; i < s->nps && rv == 0; i++) {
		s->ps_links[i] =
		    (task_link){.s = s, .index = i, .is_ps = true};
		rv = open_task(s, &s->ps_links[i],
		    pasco_cluster_url(cluster, PASCO_ROLE_PS, i),
		    strategy_ps_state, &self, &s->ps[i]);
	}
	for (size_t i = 0; i < s->nworkers && rv == 0; i++) {
		s->links[i] = (task_link){.s = s, .index = i};
		rv          = open_task(s, &s->links[i],
		             pasco_cluster_url(cluster, PASCO_ROLE_WORKER, i),
		             strategy_worker_state, &self, &s->workers[i]);
	}
	return rv;
}

/* Heartbeats: a HELLO to every connected task each interval; one that
 * stays unanswered for `misses` intervals drops the connection, which
 * fails the task the way a lost connection does. */
static void
heartbeat_done(void *arg, int err, pasci_wire_msg *reply, const char *detail)
{
	task_link *link = arg;
	(void) detail;
	if (reply != NULL) {
		pasci_wire_msg_fini(reply);
	}
	if (err == PASCO_ETIMEDOUT) {
		char why[128];
		pasci_fmt(why, sizeof(why), "no heartbeat answer for %lld ms",
		    (long long) (link->s->heartbeat_ms *
		                 link->s->heartbeat_misses));
		__atomic_store_n(&link->hb_dropped, 1, __ATOMIC_RELAXED);
		pasci_rpc_client_drop(link->client, why);
	}
	__atomic_store_n(&link->ping_inflight, 0, __ATOMIC_RELEASE);
}

static void
heartbeat_send(pasco_strategy *s, task_link *link)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	if (!pasci_rpc_client_is_up(link->client) ||
	    __atomic_exchange_n(&link->ping_inflight, 1, __ATOMIC_ACQ_REL)) {
		return;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_HELLO);
	if (pasci_wire_encode(&b, &msg) != 0) {
		__atomic_store_n(&link->ping_inflight, 0, __ATOMIC_RELEASE);
	} else {
		pasci_rpc_call_async(link->client, msg,
		    s->heartbeat_ms * s->heartbeat_misses, heartbeat_done,
		    link);
	}
	pasci_wire_builder_fini(&b);
}

static void *
heartbeat_main(void *arg)
{
	pasco_strategy *s = arg;
	pasci_thread_name("pasco-heartbeat");
	pthread_mutex_lock(&s->hb_mu);
	while (!s->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += s->heartbeat_ms / 1000;
		ts.tv_nsec += (s->heartbeat_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->hb_cv, &s->hb_mu, &ts);
		if (s->stopping) {
			break;
		}
		pthread_mutex_unlock(&s->hb_mu);
		for (size_t i = 0; i < s->nps; i++) {
			heartbeat_send(s, &s->ps_links[i]);
		}
		for (size_t i = 0; i < s->nworkers; i++) {
			heartbeat_send(s, &s->links[i]);
		}
		pthread_mutex_lock(&s->mu); /* a slow worker: warned */
		if (s->coord != NULL) {
			pasci_link_fault_check_slow(s->coord);
		}
		pthread_mutex_unlock(&s->mu);
		pthread_mutex_lock(&s->hb_mu);
	}
	pthread_mutex_unlock(&s->hb_mu);
	return NULL;
}

#define WAIT_LOG_MS 5000

/* Why a tcp:// peer does not answer, as far as one plain connect attempt
 * (at most 1 s) can tell: the host does not resolve, the port refuses, or
 * it accepts connections and the task has not answered yet. */
static const char *
probe_reason(const char *url, char *buf, size_t len)
{
	pasci_sockaddr sa;
	char           host[256], why[300];
	const char    *hp = url + 6, *colon;
	struct pollfd  pfd;
	int            fd, err = 0;
	socklen_t      elen = sizeof(err);

	if (pasci_tls_failure(url, buf, len)) {
		return buf; /* connects, but the handshake fails */
	}
	if (strncmp(url, "tcp://", 6) != 0 ||
	    (colon = strrchr(hp, ':')) == NULL ||
	    (size_t) (colon - hp) >= sizeof(host)) {
		return pasci_fmt(buf, len, "no answer yet");
	}
	pasci_fmt(host, sizeof(host), "%.*s", (int) (colon - hp), hp);
	if (host[0] == '[') { /* [v6 address] */
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = 0;
	}
	if (pasci_resolve(host, colon + 1, 0, 1000, &sa, why, sizeof(why)) !=
	    0) {
		return pasci_fmt(buf, len, "%s", why);
	}
	fd = socket(sa.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		return pasci_fmt(buf, len, "no answer yet");
	}
	if (connect(fd, (struct sockaddr *) &sa.sa, sa.len) != 0) {
		err = errno;
	}
	if (err == EINPROGRESS) {
		pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
		err = ETIMEDOUT;
		if (poll(&pfd, 1, 1000) == 1) {
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
		}
	}
	close(fd);
	if (err != 0) {
		return pasci_fmt(buf, len, "%s", strerror(err));
	}
	return pasci_fmt(buf, len,
	    "the port accepts connections; no Pasco task has answered yet");
}

#define REFUSAL_POLL_MS 200

/* Why cl is not up, for the timeout's message: the handshake's own reason
 * when there is one (a key the server did not accept), else what a plain
 * connect tells (probe_reason). */
static const char *
down_reason(pasci_rpc_client *cl, char *buf, size_t len)
{
	pasci_rpc_client_why_down(cl, buf, len);
	return buf[0] != 0 ? buf
	                   : probe_reason(pasci_rpc_client_url(cl), buf, len);
}

/* Waits for every task's first answer; every WAIT_LOG_MS, says which it is
 * still waiting for and why. A task that refused us in its own words (a
 * wrong cluster key, another chief served) fails the wait at once, and
 * one whose TLS handshakes fail (it is there, and a certificate was
 * refused) after the first WAIT_LOG_MS: waiting longer would change
 * neither a key nor a certificate. */
static int
strategy_wait(pasco_strategy *s, int64_t timeout_ms)
{
	int64_t deadline = pasci_now_ms() + timeout_ms;
	for (size_t i = 0; i < s->nps + s->nworkers; i++) {
		bool              is_ps = i < s->nps;
		pasci_rpc_client *cl =
		    is_ps ? s->ps[i] : s->workers[i - s->nps];
		int64_t next_log = pasci_now_ms() + WAIT_LOG_MS;
		for (;;) {
			int64_t left = deadline - pasci_now_ms();
			int64_t slice =
			    left < REFUSAL_POLL_MS ? left : REFUSAL_POLL_MS;
			char why[512];
			if (pasci_rpc_client_wait_up(
			        cl, slice > 0 ? slice : 1) == 0) {
				break;
			}
			if (pasci_rpc_client_refused(cl, why, sizeof(why)) ||
			    (pasci_now_ms() >= next_log &&
			        pasci_tls_failure(pasci_rpc_client_url(cl),
			            why, sizeof(why)))) {
				pasci_error_fmt(s->error, sizeof(s->error),
				    "%s %zu at %s: %s",
				    is_ps ? "ps" : "worker",
				    is_ps ? i : i - s->nps,
				    pasci_rpc_client_url(cl), why);
				return PASCO_EUNAVAILABLE;
			}
			if (left <= REFUSAL_POLL_MS) {
				pasci_error_fmt(s->error, sizeof(s->error),
				    "%s %zu at %s did not answer within %lld "
				    "ms "
				    "(PASCO_CONNECT_TIMEOUT sets it): %s",
				    is_ps ? "ps" : "worker",
				    is_ps ? i : i - s->nps,
				    pasci_rpc_client_url(cl),
				    (long long) timeout_ms,
				    down_reason(cl, why, sizeof(why)));
				return PASCO_ETIMEDOUT;
			}
			if (pasci_now_ms() < next_log) {
				continue;
			}
			next_log = pasci_now_ms() + WAIT_LOG_MS;
			pasci_log(PASCI_LOG_WARN,
			    "waiting for %s %zu at %s: %s",
			    is_ps ? "ps" : "worker", is_ps ? i : i - s->nps,
			    pasci_rpc_client_url(cl),
			    down_reason(cl, why, sizeof(why)));
		}
	}
	return PASCO_OK;
}

/* The first-contact timeout: the option, else PASCO_CONNECT_TIMEOUT
 * (seconds), else 60 s. */
static int64_t
connect_timeout_ms(const pasco_strategy_options *opts)
{
	const char *env = getenv("PASCO_CONNECT_TIMEOUT");
	char       *end;
	double      sec;

	if (opts != NULL && opts->connect_timeout_ms > 0) {
		return opts->connect_timeout_ms;
	}
	if (env == NULL || *env == 0) {
		return 60000;
	}
	sec = strtod(env, &end);
	if (*end != 0 || !(sec > 0) || sec > 1e7) {
		pasci_log(PASCI_LOG_WARN,
		    "PASCO_CONNECT_TIMEOUT='%s' is not a number of seconds; "
		    "waiting 60 s",
		    env);
		return 60000;
	}
	return (int64_t) (sec * 1000);
}

/* Why this thread's last pasco_strategy_create failed (there is no
 * strategy to hold it then): pasco_strategy_error(NULL). */
static _Thread_local char create_error[512];

/* Whether TLS authenticates every task the chief talks to: every ps
 * and worker address is tls+tcp, so each requires a certificate from the
 * CA of whoever connects (mutual TLS), and no port is open to anyone. */
static bool
cluster_all_tls(const pasco_cluster *cluster)
{
	static const pasco_role roles[] = {PASCO_ROLE_PS, PASCO_ROLE_WORKER};
	for (size_t r = 0; r < 2; r++) {
		for (size_t i = 0; i < pasco_cluster_count(cluster, roles[r]);
		     i++) {
			if (!pasci_tls_url(
			        pasco_cluster_url(cluster, roles[r], i))) {
				return false;
			}
		}
	}
	return true;
}

int
pasco_strategy_create(pasco_strategy **out, const pasco_cluster *cluster,
    const pasco_strategy_options *opts)
{
	pasco_strategy *s;
	char            err[512];
	int             rv;

	*out            = NULL;
	create_error[0] = 0;
	if (cluster == NULL ||
	    pasco_cluster_validate(cluster, err, sizeof(err)) != 0) {
		pasci_error_fmt(create_error, sizeof(create_error),
		    "invalid cluster: %s", cluster == NULL ? "NULL" : err);
		pasci_log(PASCI_LOG_ERROR, "%s", create_error);
		return PASCO_EINVAL;
	}
	if ((s = pasci_calloc(1, sizeof(*s))) == NULL) {
		pasci_error_fmt(
		    create_error, sizeof(create_error), "out of memory");
		return PASCO_ENOMEM;
	}
	if (!cluster_all_tls(cluster)) {
		pasci_cluster_key_warn_if_open();
	}
	pthread_mutex_init(&s->mu, NULL);
	s->nps      = pasco_cluster_count(cluster, PASCO_ROLE_PS);
	s->nworkers = pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	if (opts != NULL && opts->partitioner != NULL) {
		s->has_partitioner = true;
		s->partitioner     = *opts->partitioner;
	}
	s->call_timeout_ms  = opts != NULL && opts->call_timeout_ms > 0
	                          ? opts->call_timeout_ms
	                          : 60000;
	s->ps               = pasci_calloc(s->nps, sizeof(*s->ps));
	s->workers          = pasci_calloc(s->nworkers, sizeof(*s->workers));
	s->links            = pasci_calloc(s->nworkers, sizeof(*s->links));
	s->ps_links         = pasci_calloc(s->nps, sizeof(*s->ps_links));
	s->heartbeat_ms     = opts != NULL && opts->heartbeat_interval_ms != 0
	                          ? opts->heartbeat_interval_ms
	                          : 1000;
	s->heartbeat_misses = opts != NULL && opts->heartbeat_misses > 0
	                          ? opts->heartbeat_misses
	                          : 3;
	pthread_mutex_init(&s->hb_mu, NULL);
	pthread_cond_init(&s->hb_cv, NULL);
	rv = PASCO_ENOMEM;
	if (s->ps != NULL && s->workers != NULL && s->links != NULL &&
	    s->ps_links != NULL && pasci_recovery_init(s, opts) == 0 &&
	    (rv = pasci_strategy_sync_options(s, opts)) == 0 &&
	    (rv = strategy_connect(s, cluster)) == 0) {
		rv = strategy_wait(s, connect_timeout_ms(opts));
	}
	if (rv != 0) {
		pasci_error_fmt(create_error, sizeof(create_error), "%s",
		    s->error[0] ? s->error : "cannot connect to the cluster");
		pasci_log(PASCI_LOG_ERROR, "%s", create_error);
		pasco_strategy_destroy(s);
		return rv;
	}
	if (s->heartbeat_ms > 0 &&
	    pthread_create(&s->heartbeat, NULL, heartbeat_main, s) == 0) {
		s->heartbeat_started = true;
	}
	*out = s;
	return PASCO_OK;
}

const char *
pasco_strategy_error(const pasco_strategy *s)
{
	return s != NULL ? s->error : create_error;
}

size_t
pasco_strategy_num_ps(const pasco_strategy *s)
{
	return s->nps;
}

size_t
pasco_strategy_num_workers(const pasco_strategy *s)
{
	return s->nworkers;
}

void
pasco_strategy_destroy(pasco_strategy *s)
{
	if (s == NULL) {
		return;
	}
	if (s->heartbeat_started) {
		pthread_mutex_lock(&s->hb_mu);
		s->stopping = true;
		pthread_cond_signal(&s->hb_cv);
		pthread_mutex_unlock(&s->hb_mu);
		pthread_join(s->heartbeat, NULL);
	}
	pasci_recovery_fini(s);
	for (size_t i = 0; s->workers != NULL && i < s->nworkers; i++) {
		pasci_rpc_client_close(s->workers[i]);
	}
	for (size_t i = 0; s->ps != NULL && i < s->nps; i++) {
		pasci_rpc_client_close(s->ps[i]);
	}
	while (s->vars != NULL) {
		var_entry *e = s->vars;
		s->vars      = e->next;
		pasco_variable_free(e->layout);
		free(e);
	}
	free(s->ps);
	free(s->workers);
	free(s->links);
	free(s->ps_links);
	pthread_cond_destroy(&s->hb_cv);
	pthread_mutex_destroy(&s->hb_mu);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* A handle to name if it was created before; PASCO_EEXIST if with another
 * spec, PASCO_ENOTFOUND if never. */
static int
strategy_lookup(pasco_strategy *s, const char *name, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, pasco_variable **out)
{
	char have[64], want[64];
	int  rv = PASCO_ENOTFOUND;
	pthread_mutex_lock(&s->mu);
	for (var_entry *e = s->vars; e != NULL && rv == PASCO_ENOTFOUND;
	     e            = e->next) {
		const pasco_variable *v = e->layout;
		if (strcmp(v->name, name) != 0) {
			continue;
		}
		if (v->dtype == dtype && v->rank == rank &&
		    (rank == 0 || memcmp(v->shape, shape,
		                      sizeof(int64_t) * (size_t) rank) == 0)) {
			rv = pasci_variable_clone(out, v);
		} else {
			pasci_error_fmt(s->error, sizeof(s->error),
			    "variable '%s' already "
			    "exists as %s; cannot create it as %s",
			    name,
			    pasco_tensor_spec_string(v->dtype, v->rank,
			        v->shape, have, sizeof(have)),
			    pasco_tensor_spec_string(
			        dtype, rank, shape, want, sizeof(want)));
			rv = PASCO_EEXIST;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return rv;
}

/* A handle for a new variable: shards from the partitioner (part, or the
 * strategy's when NULL), placed on the next ps tasks in turn. */
static int
strategy_place(pasco_strategy *s, const char *name, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, const pasco_partitioner *part,
    pasco_variable **out)
{
	int64_t shards = 1, sizes[PASCI_MAX_SHARDS],
	        offsets[PASCI_MAX_SHARDS + 1];
	char err[512];
	int  rv;

	part = part != NULL         ? part
	       : s->has_partitioner ? &s->partitioner
	                            : NULL;
	if (part != NULL &&
	    (rv = pasco_partition(part, dtype, pasco_dtype_size(dtype), rank,
	         shape, &shards, err, sizeof(err))) != 0) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "partitioning '%s': %s", name, err);
		return rv;
	}
	if (rank > 0 && shards > shape[0]) {
		shards =
		    shape[0] > 0 ? shape[0] : 1; /* never more than rows */
	}
	if (shards > PASCI_MAX_SHARDS) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "'%s' would have %lld shards; "
		    "at most %d are supported",
		    name, (long long) shards, PASCI_MAX_SHARDS);
		return PASCO_EINVAL;
	}
	if (rank > 0) {
		pasco_shard_layout(shape[0], shards, sizes, offsets);
	} else {
		sizes[0] = offsets[0] = 0;
	}
	if ((rv = pasci_variable_new(
	         out, name, dtype, rank, shape, s->call_timeout_ms)) != 0) {
		return rv;
	}
	pthread_mutex_lock(&s->mu);
	for (int64_t i = 0; i < shards && rv == 0; i++) {
		int32_t task = (int32_t) (s->var_count++ % s->nps);
		char    shard_name[512];
		pasci_fmt(shard_name, sizeof(shard_name),
		    shards > 1 ? "%s/part_%lld" : "%s", name, (long long) i);
		rv = pasci_variable_add_shard(
		    *out, shard_name, task, offsets[i], sizes[i], s->ps[task]);
	}
	pthread_mutex_unlock(&s->mu);
	return rv;
}

void
pasci_strategy_remember(pasco_strategy *s, const pasco_variable *v)
{
	var_entry *e = pasci_calloc(1, sizeof(*e));
	if (e == NULL || pasci_variable_clone(&e->layout, v) != 0) {
		free(e);
		return; /* only idempotence checks are lost */
	}
	pthread_mutex_lock(&s->mu);
	e->next = s->vars;
	s->vars = e;
	pthread_mutex_unlock(&s->mu);
}

/* Fills the VAR_CREATE of each shard: a slice of value, or init. */
static int
fill_creates(pasco_variable *v, shard_call *calls, const pasco_tensor *value,
    const pasco_initializer *init, const pasco_constraint *constraint,
    pasci_wire_init *inits, pasci_wire_spec *specs,
    int64_t (*shapes)[PASCO_MAX_RANK])
{
	size_t row = pasci_variable_row_bytes(v);
	for (int32_t i = 0; i < v->nshards; i++) {
		memcpy(shapes[i], v->shape, sizeof(shapes[i]));
		if (v->rank > 0) {
			shapes[i][0] = v->shards[i].rows;
		}
		calls[i].used = true;
		if (value != NULL) {
			pasco_tensor *part;
			int rv = pasci_tensor_view(&part, value->dtype,
			    value->rank, shapes[i],
			    (char *) value->data +
			        (size_t) v->shards[i].offset * row,
			    value->storage);
			if (rv != 0) {
				return rv;
			}
			pasci_wire_add_tensor(&calls[i].b, part, NULL);
			pasco_tensor_release(part);
			continue;
		}
		inits[i].init = *init;
		inits[i].constraint =
		    constraint != NULL ? *constraint : (pasco_constraint){0};
		inits[i].full_rank = v->rank;
		memcpy(inits[i].full_shape, v->shape, sizeof(v->shape));
		inits[i].row_offset = v->shards[i].offset;
		specs[i].dtype      = v->dtype;
		specs[i].rank       = v->rank;
		memcpy(specs[i].shape, shapes[i], sizeof(specs[i].shape));
		calls[i].b.hdr.init = &inits[i];
		calls[i].b.hdr.spec = &specs[i];
	}
	return PASCO_OK;
}

static int
variable_create(pasco_variable **out, pasco_strategy *s, const char *name,
    pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_tensor *value, const pasco_initializer *init,
    const pasco_partitioner *part, const pasco_constraint *constraint)
{
	pasci_wire_init *inits           = NULL;
	pasci_wire_spec *specs           = NULL;
	int64_t(*shapes)[PASCO_MAX_RANK] = NULL;
	shard_call *calls                = NULL;
	int64_t     count;
	size_t      nbytes;
	int         rv;

	*out = NULL;
	if (name == NULL || *name == 0 ||
	    pasci_tensor_check_spec(dtype, rank, shape, &count, &nbytes) !=
	        0) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "a variable needs a name and "
		    "a valid dtype and shape");
		return PASCO_EINVAL;
	}
	if ((rv = strategy_lookup(s, name, dtype, rank, shape, out)) !=
	    PASCO_ENOTFOUND) {
		return rv;
	}
	if ((rv = strategy_place(s, name, dtype, rank, shape, part, out)) !=
	    0) {
		pasco_variable_free(*out);
		*out = NULL;
		return rv;
	}
	if (pasci_constraint_needs_whole(constraint, rank) &&
	    (*out)->nshards > 1) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "'%s': MaxNorm over axis 0 needs the whole variable on "
		    "one "
		    "ps; it is split in %d shards",
		    name, (int) (*out)->nshards);
		pasco_variable_free(*out);
		*out = NULL;
		return PASCO_EINVAL;
	}
	calls  = pasci_shard_calls_new(*out, PASCI_METHOD_VAR_CREATE);
	inits  = pasci_calloc((size_t) (*out)->nshards, sizeof(*inits));
	specs  = pasci_calloc((size_t) (*out)->nshards, sizeof(*specs));
	shapes = pasci_calloc((size_t) (*out)->nshards, sizeof(*shapes));
	rv     = calls && inits && specs && shapes ? PASCO_OK : PASCO_ENOMEM;
	if (rv == 0) {
		rv = fill_creates(*out, calls, value, init, constraint, inits,
		    specs, shapes);
	}
	if (rv == 0 && (rv = pasci_shard_calls_run(*out, calls)) != 0) {
		pthread_mutex_lock(&s->mu);
		pasci_error_fmt(s->error, sizeof(s->error), "creating %s",
		    pasco_variable_error(*out));
		pthread_mutex_unlock(&s->mu);
	}
	pasci_shard_calls_free(*out, calls);
	free(inits);
	free(specs);
	free(shapes);
	if (rv != 0) {
		pasco_variable_free(*out);
		*out = NULL;
		return rv;
	}
	pasci_strategy_remember(s, *out);
	return PASCO_OK;
}

int
pasco_variable_create(pasco_variable **out, pasco_strategy *s,
    const char *name, const pasco_tensor *initial_value)
{
	if (initial_value == NULL) {
		*out = NULL;
		pasci_error_fmt(s->error, sizeof(s->error),
		    "'%s' needs an initial value", name != NULL ? name : "");
		return PASCO_EINVAL;
	}
	return variable_create(out, s, name, initial_value->dtype,
	    initial_value->rank, initial_value->shape, initial_value, NULL,
	    NULL, NULL);
}

int
pasco_variable_create_partitioned(pasco_variable **out, pasco_strategy *s,
    const char *name, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_initializer *init, const pasco_partitioner *partitioner)
{
	return pasco_variable_create_constrained(
	    out, s, name, dtype, rank, shape, init, partitioner, NULL);
}

int
pasco_variable_create_constrained(pasco_variable **out, pasco_strategy *s,
    const char *name, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_initializer *init, const pasco_partitioner *partitioner,
    const pasco_constraint *constraint)
{
	if (pasci_variable_create_check(
	        s, name, rank, shape, init, constraint) != 0) {
		*out = NULL;
		return PASCO_EINVAL;
	}
	return variable_create(out, s, name, dtype, rank, shape, NULL, init,
	    partitioner, constraint);
}

int
pasco_variable_create_init(pasco_variable **out, pasco_strategy *s,
    const char *name, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_initializer *init)
{
	return pasco_variable_create_partitioned(
	    out, s, name, dtype, rank, shape, init, NULL);
}
