/*
 * Cluster authentication (see auth.h): the proofs, the client's half of
 * the nng handshake, and the server's gate. The gate's table of pipes is
 * under its mu; entries are made when a pipe first sends a request and
 * dropped by the rpc server's pipe-removed callback. A pipe that goes away
 * before its first request is handled would leave an entry behind, so
 * when the table grows past sweep_at the entries of pipes nng no longer
 * knows are dropped.
 */
#include "auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

#define GATE_BUCKETS 64

static const char label_client[] = "pasco-auth-client";
static const char label_server[] = "pasco-auth-server";

void
pasci_auth_nonce(uint8_t out[PASCI_AUTH_NONCE])
{
	size_t got = 0;
	while (got < PASCI_AUTH_NONCE) {
		ssize_t n = getrandom(out + got, PASCI_AUTH_NONCE - got, 0);
		if (n < 0 && errno != EINTR) {
			/* no entropy source: a nonce that repeats would let
			 * a recorded proof through */
			pasci_panic(__FILE__, __LINE__, "getrandom failed");
		}
		got += n > 0 ? (size_t) n : 0;
	}
}

void
pasci_auth_proof(const pasci_key *key, bool server,
    const uint8_t sn[PASCI_AUTH_NONCE], const uint8_t cn[PASCI_AUTH_NONCE],
    uint8_t out[PASCI_AUTH_PROOF])
{
	const void *parts[3] = {server ? label_server : label_client, sn, cn};
	size_t      lens[3]  = {
	          sizeof(label_client) - 1, PASCI_AUTH_NONCE, PASCI_AUTH_NONCE};
	pasci_hmac_sha256(key->bytes, key->len, 3, parts, lens, out);
}

const char *
pasci_auth_peer(nng_pipe pipe, char *buf, size_t len)
{
	nng_sockaddr sa;
	char         ip[INET6_ADDRSTRLEN];

	if (nng_pipe_get_addr(pipe, NNG_OPT_REMADDR, &sa) != 0) {
		return pasci_fmt(buf, len, "an unknown address");
	}
	switch (sa.s_family) {
	case NNG_AF_INET:
		inet_ntop(AF_INET, &sa.s_in.sa_addr, ip, sizeof(ip));
		return pasci_fmt(
		    buf, len, "%s:%u", ip, (unsigned) ntohs(sa.s_in.sa_port));
	case NNG_AF_INET6:
		inet_ntop(AF_INET6, sa.s_in6.sa_addr, ip, sizeof(ip));
		return pasci_fmt(buf, len, "[%s]:%u", ip,
		    (unsigned) ntohs(sa.s_in6.sa_port));
	case NNG_AF_INPROC:
		return pasci_fmt(buf, len, "%s", sa.s_inproc.sa_name);
	case NNG_AF_IPC:
		return pasci_fmt(buf, len, "ipc://%s", sa.s_ipc.sa_path);
	default:
		return pasci_fmt(buf, len, "an unknown address");
	}
}

/* --- the server's gate --- */

typedef struct gate_pipe {
	uint32_t          id;
	bool              authed;
	bool              challenged; /* nonce awaits its AUTH */
	bool              refusal_logged;
	uint8_t           nonce[PASCI_AUTH_NONCE];
	struct gate_pipe *next;
} gate_pipe;

struct pasci_auth_gate {
	bool      open; /* no key: everyone is admitted */
	pasci_key key;  /* read only */

	pthread_mutex_t mu;
	/* Protected by mu. */
	gate_pipe *buckets[GATE_BUCKETS];
	size_t     npipes;
	size_t     sweep_at;
	int64_t    logged_ms;  /* when a refusal was last logged */
	unsigned   suppressed; /* refusals not logged since */
};

#define GATE_LOG_MS 10000 /* a refusal is logged at most this often */

/* Whether to log a refusal now (a peer that redials with a wrong key
 * would otherwise fill the log); more gets how many were not, if any. */
static bool
gate_should_log(pasci_auth_gate *g, char *more, size_t len)
{
	bool    log;
	int64_t now = pasci_now_ms();
	pthread_mutex_lock(&g->mu);
	log = g->logged_ms == 0 || now - g->logged_ms >= GATE_LOG_MS;
	if (log) {
		g->logged_ms = now;
		if (g->suppressed > 0) {
			pasci_fmt(more, len, " (and %u refusals not logged)",
			    g->suppressed);
		}
		g->suppressed = 0;
	} else {
		g->suppressed++;
	}
	pthread_mutex_unlock(&g->mu);
	return log;
}

int
pasci_auth_gate_create(pasci_auth_gate **out, const pasci_key *key)
{
	pasci_auth_gate *g;
	if ((*out = g = pasci_calloc(1, sizeof(*g))) == NULL) {
		return PASCO_ENOMEM;
	}
	g->open = key == NULL;
	if (key != NULL) {
		g->key = *key;
	}
	g->sweep_at = 256;
	pthread_mutex_init(&g->mu, NULL);
	return PASCO_OK;
}

void
pasci_auth_gate_destroy(pasci_auth_gate *g)
{
	if (g == NULL) {
		return;
	}
	for (int i = 0; i < GATE_BUCKETS; i++) {
		while (g->buckets[i] != NULL) {
			gate_pipe *p  = g->buckets[i];
			g->buckets[i] = p->next;
			free(p);
		}
	}
	pthread_mutex_destroy(&g->mu);
	pasci_wipe(&g->key, sizeof(g->key));
	free(g);
}

static gate_pipe **
gate_slot_locked(pasci_auth_gate *g, uint32_t id)
{
	gate_pipe **pp = &g->buckets[id % GATE_BUCKETS];
	while (*pp != NULL && (*pp)->id != id) {
		pp = &(*pp)->next;
	}
	return pp;
}

/* The entry of id, made if missing (NULL when out of memory). */
static gate_pipe *
gate_get_locked(pasci_auth_gate *g, uint32_t id)
{
	gate_pipe **pp = gate_slot_locked(g, id);
	if (*pp == NULL && (*pp = pasci_calloc(1, sizeof(**pp))) != NULL) {
		(*pp)->id = id;
		g->npipes++;
	}
	return *pp;
}

static void
gate_drop_locked(pasci_auth_gate *g, uint32_t id)
{
	gate_pipe **pp = gate_slot_locked(g, id);
	if (*pp != NULL) {
		gate_pipe *p = *pp;
		*pp          = p->next;
		free(p);
		g->npipes--;
	}
}

/* Drops the entries of pipes nng no longer knows (see the top). */
static void
gate_sweep(pasci_auth_gate *g)
{
	uint32_t *ids;
	size_t    n = 0;

	pthread_mutex_lock(&g->mu);
	if (g->npipes < g->sweep_at ||
	    (ids = pasci_calloc(g->npipes, sizeof(*ids))) == NULL) {
		pthread_mutex_unlock(&g->mu);
		return;
	}
	for (int i = 0; i < GATE_BUCKETS; i++) {
		for (gate_pipe *p = g->buckets[i]; p != NULL; p = p->next) {
			ids[n++] = p->id;
		}
	}
	g->sweep_at = 2 * g->npipes;
	pthread_mutex_unlock(&g->mu);
	for (size_t i = 0; i < n; i++) { /* nng's locks: not under ours */
		nng_pipe     p = {.id = ids[i]};
		nng_sockaddr sa;
		if (nng_pipe_get_addr(p, NNG_OPT_REMADDR, &sa) != NNG_ENOENT) {
			ids[i] = 0;
		}
	}
	pthread_mutex_lock(&g->mu);
	for (size_t i = 0; i < n; i++) {
		if (ids[i] != 0) {
			gate_drop_locked(g, ids[i]);
		}
	}
	pthread_mutex_unlock(&g->mu);
	free(ids);
}

bool
pasci_auth_gate_admits(pasci_auth_gate *g, nng_pipe pipe)
{
	gate_pipe *p;
	bool       ok;
	if (g->open) {
		return true;
	}
	pthread_mutex_lock(&g->mu);
	p  = *gate_slot_locked(g, (uint32_t) nng_pipe_id(pipe));
	ok = p != NULL && p->authed;
	pthread_mutex_unlock(&g->mu);
	return ok;
}

void
pasci_auth_gate_forget(pasci_auth_gate *g, nng_pipe pipe)
{
	pthread_mutex_lock(&g->mu);
	gate_drop_locked(g, (uint32_t) nng_pipe_id(pipe));
	pthread_mutex_unlock(&g->mu);
}

/* A u8 tensor holding bytes, added to b. */
static int
add_bytes(pasci_wire_builder *b, const uint8_t *bytes, size_t n)
{
	pasco_tensor *t;
	int           rv = pasco_tensor_from(
	              &t, PASCO_U8, 1, (int64_t[]){(int64_t) n}, bytes, n);
	if (rv == 0) {
		pasci_wire_add_tensor(b, t, NULL);
		pasco_tensor_release(t);
	}
	return rv;
}

int
pasci_auth_gate_hello(pasci_auth_gate *g, nng_pipe pipe, pasci_wire_builder *b)
{
	uint8_t    nonce[PASCI_AUTH_NONCE];
	gate_pipe *p;

	if (g->open) {
		return PASCO_OK;
	}
	gate_sweep(g);
	pasci_auth_nonce(nonce);
	pthread_mutex_lock(&g->mu);
	if ((p = gate_get_locked(g, (uint32_t) nng_pipe_id(pipe))) != NULL) {
		memcpy(p->nonce, nonce, sizeof(nonce));
		p->challenged = true;
	}
	pthread_mutex_unlock(&g->mu);
	return p != NULL ? add_bytes(b, nonce, sizeof(nonce)) : PASCO_ENOMEM;
}

/* Whether req proves the key against the nonce pipe was sent (which is
 * used up either way); on success the pipe is admitted and sn gets it. */
static bool
gate_check(pasci_auth_gate *g, nng_pipe pipe, const pasci_wire_msg *req,
    uint8_t sn[PASCI_AUTH_NONCE])
{
	const pasco_tensor *cn = req->ntensors == 2 ? req->tensors[0] : NULL;
	const pasco_tensor *proof =
	    req->ntensors == 2 ? req->tensors[1] : NULL;
	uint8_t    want[PASCI_AUTH_PROOF];
	gate_pipe *p;
	bool       ok = false;

	if (cn == NULL || cn->dtype != PASCO_U8 ||
	    cn->nbytes != PASCI_AUTH_NONCE || proof->dtype != PASCO_U8 ||
	    proof->nbytes != PASCI_AUTH_PROOF) {
		return false;
	}
	pthread_mutex_lock(&g->mu);
	p = *gate_slot_locked(g, (uint32_t) nng_pipe_id(pipe));
	if (p != NULL && p->challenged) {
		p->challenged = false; /* one answer per nonce */
		pasci_auth_proof(&g->key, false, p->nonce, cn->data, want);
		ok        = pasci_equal_ct(want, proof->data, sizeof(want));
		p->authed = ok;
		memcpy(sn, p->nonce, PASCI_AUTH_NONCE);
	}
	pthread_mutex_unlock(&g->mu);
	return ok;
}

nng_msg *
pasci_auth_gate_auth(pasci_auth_gate *g, nng_pipe pipe,
    const pasci_wire_msg *req, bool *close_pipe)
{
	uint8_t            sn[PASCI_AUTH_NONCE], proof[PASCI_AUTH_PROOF];
	pasci_wire_builder b;
	nng_msg           *reply = NULL;
	char               peer[128];
	char               more[64] = "";

	*close_pipe = false;
	if (g->open) {
		return pasci_wire_status_reply(
		    PASCO_EPRECONDITION, "this server has no cluster key");
	}
	if (pasci_auth_gate_admits(g, pipe)) {
		return pasci_wire_status_reply(
		    PASCO_EPRECONDITION, "already authenticated");
	}
	if (!gate_check(g, pipe, req, sn)) {
		if (gate_should_log(g, more, sizeof(more))) {
			pasci_log(PASCI_LOG_WARN,
			    "refused a connection from %s: it did not prove "
			    "the cluster key%s",
			    pasci_auth_peer(pipe, peer, sizeof(peer)), more);
		}
		*close_pipe = true;
		return pasci_wire_status_reply(
		    PASCO_EPRECONDITION, "%s", PASCI_AUTH_FAILED);
	}
	pasci_auth_proof(&g->key, true, sn, req->tensors[0]->data, proof);
	pasci_wire_builder_init(&b, PASCI_METHOD_AUTH);
	if (add_bytes(&b, proof, sizeof(proof)) != 0 ||
	    pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

nng_msg *
pasci_auth_gate_refuse(pasci_auth_gate *g, nng_pipe pipe, int method)
{
	gate_pipe *p;
	bool       log = false;
	char       peer[128];
	char       more[64] = "";

	pthread_mutex_lock(&g->mu);
	if ((p = gate_get_locked(g, (uint32_t) nng_pipe_id(pipe))) != NULL &&
	    !p->refusal_logged) {
		p->refusal_logged = log = true;
	}
	pthread_mutex_unlock(&g->mu);
	if (log && gate_should_log(g, more, sizeof(more))) {
		pasci_log(PASCI_LOG_WARN,
		    "refused a request (method %d) from %s: the connection "
		    "has "
		    "not proved the cluster key%s",
		    method, pasci_auth_peer(pipe, peer, sizeof(peer)), more);
	}
	return pasci_wire_status_reply(PASCO_EPRECONDITION,
	    "unauthenticated: this server requires the cluster key "
	    "(--key-file or PASCO_KEY_FILE)");
}

/* --- the client's half --- */

const uint8_t *
pasci_auth_hello_nonce(const pasci_wire_msg *hello_reply)
{
	const pasco_tensor *t;
	if (hello_reply->ntensors != 1) {
		return NULL;
	}
	t = hello_reply->tensors[0];
	return t->dtype == PASCO_U8 && t->nbytes == PASCI_AUTH_NONCE ? t->data
	                                                             : NULL;
}

int
pasci_auth_request(const pasci_key *key, const uint8_t *sn,
    uint8_t nonces[2 * PASCI_AUTH_NONCE], nng_msg **out)
{
	return pasci_auth_request_as(key, sn, "", 0, nonces, out);
}

int
pasci_auth_request_as(const pasci_key *key, const uint8_t *sn,
    const char *chief, uint64_t chief_incarnation,
    uint8_t nonces[2 * PASCI_AUTH_NONCE], nng_msg **out)
{
	pasci_wire_builder b;
	uint8_t            proof[PASCI_AUTH_PROOF];
	int                rv;

	memcpy(nonces, sn, PASCI_AUTH_NONCE);
	pasci_auth_nonce(nonces + PASCI_AUTH_NONCE);
	pasci_auth_proof(key, false, sn, nonces + PASCI_AUTH_NONCE, proof);
	pasci_wire_builder_init(&b, PASCI_METHOD_AUTH);
	b.hdr.chief             = chief;
	b.hdr.chief_incarnation = chief_incarnation;
	if ((rv = add_bytes(
	         &b, nonces + PASCI_AUTH_NONCE, PASCI_AUTH_NONCE)) == 0 &&
	    (rv = add_bytes(&b, proof, sizeof(proof))) == 0) {
		rv = pasci_wire_encode(&b, out);
	}
	pasci_wire_builder_fini(&b);
	return rv;
}

bool
pasci_auth_reply_ok(const pasci_key *key,
    const uint8_t nonces[2 * PASCI_AUTH_NONCE], const pasci_wire_msg *reply)
{
	uint8_t             want[PASCI_AUTH_PROOF];
	const pasco_tensor *t =
	    reply->ntensors == 1 ? reply->tensors[0] : NULL;
	if (reply->hdr->status != 0 || t == NULL || t->dtype != PASCO_U8 ||
	    t->nbytes != PASCI_AUTH_PROOF) {
		return false;
	}
	pasci_auth_proof(key, true, nonces, nonces + PASCI_AUTH_NONCE, want);
	return pasci_equal_ct(want, t->data, sizeof(want));
}
