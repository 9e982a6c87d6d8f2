/*
 * Bad input: thousands of malformed messages sent to a ps and a worker
 * listening on TCP (random bytes, truncated and bit-flipped requests, huge
 * declared shapes, wrong methods and tensors). Every one gets an error
 * reply or is dropped; the servers keep serving; no variable changes. The
 * cluster has a key: the attacks that must reach the decoders
 * authenticate first, and the same garbage from a connection that did not
 * never reaches a handler.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "bulk_frame.h"
#include "key.h"
#include "util.h"
#include "variable_impl.h"
#include "wire.h"
#include "wire.pb-c.h"

TestSuite(badinput, .timeout = 120);

static uint64_t rng = 12345;

/* The cluster key of these tests, set for the whole process. */
static pasci_key key = {.len = 32, .bytes = {0x5a, 1, 2, 3, 4, 5, 6, 7, 8}};

/* HELLO and AUTH on s (a cooked req0 socket): its connection proves key. */
static void
authenticate(nng_socket s)
{
	pasci_wire_builder b;
	pasci_wire_msg     m;
	nng_msg           *msg;
	uint8_t            nonces[2 * PASCI_AUTH_NONCE];
	char               err[256];
	pasci_wire_builder_init(&b, PASCI_METHOD_HELLO);
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	cr_assert_eq(nng_sendmsg(s, msg, 0), 0);
	cr_assert_eq(nng_recvmsg(s, &msg, 0), 0);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_not_null(pasci_auth_hello_nonce(&m));
	PASCO_PASS(pasci_auth_request(
	    &key, pasci_auth_hello_nonce(&m), nonces, &msg));
	pasci_wire_msg_fini(&m);
	cr_assert_eq(nng_sendmsg(s, msg, 0), 0);
	cr_assert_eq(nng_recvmsg(s, &msg, 0), 0);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert(pasci_auth_reply_ok(&key, nonces, &m));
	pasci_wire_msg_fini(&m);
}

static uint64_t
next(void)
{
	rng = pasci_mix64(rng);
	return rng;
}

/* One request, its reply awaited (up to 2 s); true when the server
 * answered. */
static bool
exchange(nng_socket s, const void *data, size_t len)
{
	nng_msg *m;
	nng_msg_alloc(&m, 0);
	nng_msg_append(m, data, len);
	if (nng_sendmsg(s, m, 0) != 0) {
		nng_msg_free(m);
		return false;
	}
	if (nng_recvmsg(s, &m, 0) != 0) {
		return false;
	}
	nng_msg_free(m);
	return true;
}

/* A valid request of method m, to be mangled. */
static nng_msg *
valid(pasci_method m, const char *name, pasco_tensor *t)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	pasci_wire_builder_init(&b, m);
	b.hdr.name = (char *) name;
	if (t != NULL) {
		pasci_wire_add_tensor(&b, t, NULL);
		pasci_wire_add_arg_tensor(&b, t);
	}
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	return msg;
}

static int answered;

static bool
mangle_and_send(nng_socket s, nng_msg *base, int round)
{
	size_t         len = nng_msg_len(base);
	unsigned char *buf = malloc(len + 64);
	memcpy(buf, nng_msg_body(base), len);
	switch (round % 4) {
	case 0: /* truncated */
		len = next() % (len + 1);
		break;
	case 1: /* bit flips, incarnation kept 0 so it reaches the decoder */
		for (int k = 0; k < 4; k++) {
			size_t at = 8 + next() % (len > 8 ? len - 8 : 1);
			if (at < len) {
				buf[at] ^=
				    (unsigned char) (1u << (next() % 8));
			}
		}
		break;
	case 2: /* random bytes after a zero incarnation */
		len = 8 + next() % 56;
		for (size_t i = 8; i < len; i++) {
			buf[i] = (unsigned char) next();
		}
		memset(buf, 0, 8);
		break;
	default: /* a header length past the end */
		if (len >= 12) {
			buf[8] = buf[9] = 0x7f;
		}
		break;
	}
	bool ok = exchange(s, buf, len);
	free(buf);
	return ok;
}

/* A request declaring a tensor of 2^40 x 2^40 elements. */
static void
huge_shape(nng_socket s)
{
	Pasco__Wire__Header     h = PASCO__WIRE__HEADER__INIT;
	Pasco__Wire__TensorMeta meta, *metas[1] = {&meta};
	int64_t shape[] = {(int64_t) 1 << 40, (int64_t) 1 << 40};
	uint8_t buf[256];
	size_t  hlen;
	pasco__wire__tensor_meta__init(&meta);
	meta.dtype   = PASCO__WIRE__DTYPE__F32;
	meta.n_shape = 2;
	meta.shape   = shape;
	h.method     = PASCO__WIRE__METHOD__VAR_ASSIGN;
	h.name       = "w";
	h.n_tensors  = 1;
	h.tensors    = metas;
	hlen         = pasco__wire__header__pack(&h, buf + 12);
	memset(buf, 0, 12);
	buf[11] = (uint8_t) hlen;
	exchange(s, buf, 12 + hlen);
}

/* Sends rounds malformed requests to url, from a connection that proved
 * the key when authed. */
static void
attack(const char *url, int rounds, bool authed)
{
	nng_socket    s;
	pasco_tensor *wrong;
	nng_msg      *bases[6];
	cr_assert_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 2000);
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 2000);
	cr_assert_eq(nng_dial(s, url, NULL, 0), 0);
	if (authed) {
		authenticate(s);
	}
	PASCO_PASS(pasco_tensor_alloc(&wrong, PASCO_F64, 1, (int64_t[]){3}));
	bases[0] = valid(PASCI_METHOD_VAR_ASSIGN, "w", wrong);
	bases[1] = valid(PASCI_METHOD_VAR_SCATTER_ADD, "w", wrong);
	bases[2] = valid(PASCI_METHOD_VAR_APPLY, "w", wrong);
	bases[3] = valid(PASCI_METHOD_RUN, "no_such_fn", wrong);
	bases[4] = valid(PASCI_METHOD_RESOURCE_CREATE, "nope", NULL);
	bases[5] = valid((pasci_method) 99, "w", wrong);
	for (int i = 0; i < rounds; i++) {
		nng_msg *base = bases[next() % 6];
		if (i % 50 == 0) {
			huge_shape(s);
		}
		if (i % 7 == 0) { /* sent whole: a clean error */
			answered +=
			    exchange(s, nng_msg_body(base), nng_msg_len(base));
		} else {
			answered += mangle_and_send(s, base, i);
		}
	}
	for (int i = 0; i < 6; i++) {
		nng_msg_free(bases[i]);
	}
	pasco_tensor_release(wrong);
	nng_close(s);
}

/* A ps and a worker serving on loopback TCP with the test's key, a
 * strategy connected to them, and variable "w" = base + i, f32[n]. */
typedef struct served {
	pasco_cluster  *cluster;
	pasco_server   *ps, *worker;
	pasco_strategy *s;
	pasco_variable *v;
	pasco_tensor   *init;
	char            ps_url[64], w_url[64];
} served;

static void
serve_start(served *t, int64_t n, double base)
{
	int  ps_port = test_free_port(), w_port = test_free_port();
	char json[512], err[256];
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"ps\": [\"127.0.0.1:%d\"], "
	    "\"worker\": [\"127.0.0.1:%d\"]}}",
	    ps_port, w_port);
	snprintf(t->ps_url, sizeof(t->ps_url), "tcp://127.0.0.1:%d", ps_port);
	snprintf(t->w_url, sizeof(t->w_url), "tcp://127.0.0.1:%d", w_port);
	pasci_cluster_key_set(&key);
	PASCO_PASS(
	    pasco_cluster_parse_json(&t->cluster, json, err, sizeof(err)));
	PASCO_PASS(pasco_server_start(&t->ps, t->cluster, PASCO_ROLE_PS, 0));
	PASCO_PASS(
	    pasco_server_start(&t->worker, t->cluster, PASCO_ROLE_WORKER, 0));
	PASCO_PASS(pasco_strategy_create(&t->s, t->cluster, NULL));
	PASCO_PASS(pasco_tensor_alloc(&t->init, PASCO_F32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(t->init, i, (double) i + base);
	}
	PASCO_PASS(pasco_variable_create(&t->v, t->s, "w", t->init));
}

/* Whether w is as it was created. */
static bool
unchanged(served *t)
{
	pasco_tensor *now;
	bool          same;
	PASCO_PASS(pasco_variable_read(t->v, &now));
	same = pasco_tensor_same_spec(now, t->init) &&
	       memcmp(now->data, t->init->data, t->init->nbytes) == 0;
	pasco_tensor_release(now);
	return same;
}

static void
serve_stop(served *t)
{
	pasco_variable_free(t->v);
	pasco_tensor_release(t->init);
	pasco_strategy_destroy(t->s);
	pasco_server_stop(t->worker);
	pasco_server_stop(t->ps);
	pasco_cluster_free(t->cluster);
}

Test(badinput, servers_survive_garbage_and_no_variable_changes)
{
	served t;
	serve_start(&t, 3, 0.5);
	attack(t.ps_url, 2000, true);
	attack(t.w_url, 1000, true);
	cr_assert_gt(answered, 2900,
	    "only %d of 3000 malformed requests got "
	    "an answer",
	    answered);
	/* the ps still answers and w is as it was */
	cr_assert(unchanged(&t), "a malformed message changed the variable");
	/* the worker still answers too */
	{
		pasco_strategy    *s2;
		pasco_coordinator *c;
		PASCO_PASS(pasco_strategy_create(&s2, t.cluster, NULL));
		PASCO_PASS(pasco_coordinator_create(&c, s2, NULL));
		PASCO_PASS(
		    pasco_schedule(c, "no_such_function", NULL, 0, NULL));
		PASCO_FAIL(pasco_join(c), PASCO_ENOTFOUND);
		pasco_coordinator_destroy(c);
		pasco_strategy_destroy(s2);
	}
	serve_stop(&t);
}

/* A step function that reads its variable argument and writes it back:
 * with trusted geometry, a crafted request would make it read past its
 * tensors (and send that memory to the ps) or write past the result. */
static int geometry_runs;

PASCO_FUNCTION(read_and_write_back)
{
	pasco_variable *v;
	pasco_tensor   *t;
	int             rv;
	__atomic_add_fetch(&geometry_runs, 1, __ATOMIC_SEQ_CST);
	if ((rv = pasco_call_variable(call, 0, &v)) != 0 ||
	    (rv = pasco_variable_read(v, &t)) != 0) {
		return rv;
	}
	rv = pasco_variable_assign(v, t);
	pasco_tensor_release(t);
	return rv;
}

typedef struct shard_spec {
	int64_t offset, rows;
} shard_spec;

/* Sends RUN read_and_write_back(w) describing w (f32, shape) as nshards
 * shards on ps 0, as closure `id` (0: none); returns the reply's status
 * and its message in msg. */
/* Sends b's request (b finished here) and returns the reply's status,
 * its message in msg. */
static int
send_for_status(nng_socket s, pasci_wire_builder *b, char *msg, size_t len)
{
	pasci_wire_msg reply;
	nng_msg       *m;
	char           err[256];
	int            status;
	PASCO_PASS(pasci_wire_encode(b, &m));
	pasci_wire_builder_fini(b);
	cr_assert_eq(nng_sendmsg(s, m, 0), 0);
	cr_assert_eq(nng_recvmsg(s, &m, 0), 0, "the worker did not answer");
	PASCO_PASS(pasci_wire_decode(&reply, m, err, sizeof(err)));
	status = reply.hdr->status;
	pasci_fmt(msg, len, "%s", reply.hdr->error ? reply.hdr->error : "");
	pasci_wire_msg_fini(&reply);
	return status;
}

static int
run_as(nng_socket s, uint64_t id, int32_t rank, const int64_t *shape,
    const shard_spec *shards, int32_t nshards, char *msg, size_t len)
{
	pasci_wire_builder b;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.name       = "read_and_write_back";
	b.hdr.closure_id = id;
	pasci_wire_add_arg_variable(&b, "w", PASCO_F32, rank, shape, nshards);
	for (int32_t k = 0; k < nshards; k++) {
		pasci_wire_set_arg_shard(
		    &b, k, "w", 0, shards[k].offset, shards[k].rows);
	}
	return send_for_status(s, &b, msg, len);
}

static int
run_with_geometry(nng_socket s, int32_t rank, const int64_t *shape,
    const shard_spec *shards, int32_t nshards, char *msg, size_t len)
{
	return run_as(s, 0, rank, shape, shards, nshards, msg, len);
}

/* Sends CANCEL of closure ids [lo, hi]; the reply's status, its message
 * in msg. */
static int
cancel_ids(nng_socket s, uint64_t lo, uint64_t hi, char *msg, size_t len)
{
	pasci_wire_builder b;
	pasci_wire_builder_init(&b, PASCI_METHOD_CANCEL);
	b.hdr.resource   = lo;
	b.hdr.closure_id = hi;
	return send_for_status(s, &b, msg, len);
}

/* A CANCEL covers one coordinator's ids (a block of 2^32, as
 * coordinator/cancel.c sends): one covering every id (a stranger's, in
 * an open cluster, once failed the next chief's run) is refused and
 * cancels nothing; one within a block cancels its ids only. */
Test(badinput, a_cancel_of_more_than_one_coordinators_ids_is_refused)
{
	served     t;
	nng_socket sock;
	char       msg[512];
	int64_t    four[1] = {4};
	uint64_t   block   = (uint64_t) 77 << 32;
	shard_spec whole[] = {{0, 4}};

	serve_start(&t, 4, 0.25);
	cr_assert_eq(nng_req0_open(&sock), 0);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 5000);
	cr_assert_eq(nng_dial(sock, t.w_url, NULL, 0), 0);
	authenticate(sock);
	cr_assert_eq(
	    cancel_ids(sock, 1, UINT64_MAX, msg, sizeof(msg)), PASCO_EINVAL);
	cr_assert(strstr(msg, "closure ids of one coordinator"), "%s", msg);
	PASCO_PASS(run_as(sock, 5, 1, four, whole, 1, msg, sizeof(msg)));
	PASCO_PASS(cancel_ids(sock, block | 1, block | 9, msg, sizeof(msg)));
	cr_assert_eq(
	    run_as(sock, block | 5, 1, four, whole, 1, msg, sizeof(msg)),
	    PASCO_ECANCELLED, "%s", msg);
	PASCO_PASS(run_as(sock, (block + (1ull << 32)) | 5, 1, four, whole, 1,
	    msg, sizeof(msg)));
	nng_close(sock);
	serve_stop(&t);
}

Test(badinput, run_requests_with_crafted_shard_geometry_are_refused)
{
	served     t;
	nng_socket sock;
	char       msg[512];
	int64_t    four[1] = {4}, huge = (int64_t) 1 << 40;
	const struct {
		int32_t     rank;
		int64_t     rows; /* shape[0] the request claims */
		int32_t     nshards;
		shard_spec  shards[2];
		const char *why;
	} bad[] = {
	    {1, 4, 1, {{0, 64}}, "past its 16 bytes"},
	    {1, 4, 1, {{huge, 4}}, "a huge offset"},
	    {1, 4, 2, {{0, 2}, {huge, 2}}, "a second shard far away"},
	    {1, 4, 2, {{0, 2}, {3, 1}}, "a gap"},
	    {1, 4, 2, {{0, 3}, {2, 2}}, "an overlap"},
	    {1, 4, 1, {{0, -4}}, "negative rows"},
	    {1, 4, 1, {{0, 3}}, "too few rows"},
	    {0, 0, 1, {{0, 5}}, "rows for a scalar"},
	    {1, 4, 0, {{0, 0}}, "no shard"},
	};

	serve_start(&t, 4, 0.25);
	cr_assert_eq(nng_req0_open(&sock), 0);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 5000);
	cr_assert_eq(nng_dial(sock, t.w_url, NULL, 0), 0);
	authenticate(sock);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t shape[1] = {bad[i].rows};
		int     st       = run_with_geometry(sock, bad[i].rank, shape,
		              bad[i].shards, bad[i].nshards, msg, sizeof(msg));
		cr_assert_eq(st, PASCO_EPROTO, "%s: status %d (%s)",
		    bad[i].why, st, msg);
		cr_assert(strstr(msg, "shard") != NULL,
		    "%s: '%s' names no shard", bad[i].why, msg);
	}
	cr_assert_eq(geometry_runs, 0, "a function ran with crafted geometry");
	/* the true geometry runs, and nothing changed w */
	PASCO_PASS(run_with_geometry(
	    sock, 1, four, (shard_spec[]){{0, 4}}, 1, msg, sizeof(msg)));
	cr_assert_eq(geometry_runs, 1);
	nng_close(sock);
	cr_assert(unchanged(&t), "a crafted request changed the variable");
	serve_stop(&t);
}

/* Resident memory of pid in KB, from /proc. */
static long
rss_kb(pid_t pid)
{
	char  path[64], line[256];
	long  kb = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kb = atol(line + 6);
		}
	}
	fclose(f);
	return kb;
}

static void *
big_garbage_thread(void *arg)
{
	const char    *url = arg;
	nng_socket     s;
	unsigned char *buf  = malloc(7 << 20);
	uint64_t       seed = (uint64_t) (uintptr_t) &s;
	cr_assert_eq(nng_req0_open(&s), 0);
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 5000);
	nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 0);
	cr_assert_eq(nng_dial(s, url, NULL, 0), 0);
	memset(buf, 0, 12);
	for (int i = 0; i < 25; i++) {
		/* 1 to 7 MB whose header does not parse: read whole, refused
		 */
		size_t len = ((size_t) 1 << 20) +
		             (seed = pasci_mix64(seed)) % (6 << 20);
		buf[11] = 0xff;
		exchange(s, buf, len);
	}
	nng_close(s);
	free(buf);
	return NULL;
}

/* Megabyte requests from 8 connections at once, each refused: every
 * handler thread (and its malloc arena) takes big buffers and frees them. */
static void
big_garbage(const char *url)
{
	pthread_t th[8];
	for (int i = 0; i < 8; i++) {
		pthread_create(&th[i], NULL, big_garbage_thread, (void *) url);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
	}
}

/* A burst of bad requests leaves a real ps process near its baseline: the
 * memory they took is given back once the burst is over. */
Test(badinput, a_ps_process_returns_to_its_baseline_after_a_burst)
{
	const char *program = getenv("PASCO_TASK_PROGRAM");
	int         port    = test_free_port();
	char        tf[256], url[64];
	long        before, peak, after = -1;
	pid_t       pid;
	int         status;
	if (program == NULL) {
		cr_skip_test(
		    "PASCO_TASK_PROGRAM is not set (run through meson)");
	}
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	cr_skip_test("a sanitizer's allocator holds freed memory on purpose: "
	             "resident sizes are measured in the plain build");
#endif
	snprintf(tf, sizeof(tf),
	    "{\"cluster\": {\"ps\": [\"127.0.0.1:%d\"], \"worker\": "
	    "[\"127.0.0.1:%d\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}",
	    port, test_free_port());
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	if ((pid = fork()) == 0) {
		setenv("TF_CONFIG", tf, 1);
		setenv("PASCO_LOG", "error", 1);
		execl(program, program, (char *) NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	/* its baseline once it serves */
	{
		nng_socket s;
		cr_assert_eq(nng_req0_open(&s), 0);
		nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 2000);
		for (int i = 0; i < 100 && nng_dial(s, url, NULL, 0) != 0;
		     i++) {
			usleep(50 * 1000);
		}
		nng_close(s);
	}
	usleep(1500 * 1000);
	before = rss_kb(pid);
	attack(url, 20000, false); /* a stranger's: no key */
	big_garbage(url);
	peak = rss_kb(pid);
	/* given back within a few seconds of quiet */
	for (int i = 0; i < 50; i++) {
		usleep(100 * 1000);
		after = rss_kb(pid);
		if (after < before + 16 * 1024) {
			break;
		}
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	cr_assert(before > 0 && after > 0);
	cr_assert_lt(after, before + 16 * 1024,
	    "a ps at %ld KB before 20,000 bad requests (%ld KB during) still "
	    "holds %ld KB after them",
	    before, peak, after);
}

Test(badinput, unauthenticated_garbage_never_reaches_a_handler)
{
	served     t;
	nng_socket sock;
	char       msg[512];
	int64_t    four[1] = {4};

	serve_start(&t, 4, 0.75);
	/* the garbage of the attacks above, with no proof of the key */
	answered = 0;
	attack(t.ps_url, 300, false);
	attack(t.w_url, 300, false);
	cr_assert_gt(answered, 500, "only %d of 600 got an answer", answered);

	/* a well-formed RUN is refused unrun; once authenticated it runs */
	cr_assert_eq(nng_req0_open(&sock), 0);
	nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 5000);
	cr_assert_eq(nng_dial(sock, t.w_url, NULL, 0), 0);
	cr_assert_eq(run_with_geometry(sock, 1, four, (shard_spec[]){{0, 4}},
	                 1, msg, sizeof(msg)),
	    PASCO_EPRECONDITION);
	cr_assert(strstr(msg, "unauthenticated") != NULL, "%s", msg);
	cr_assert_eq(geometry_runs, 0, "an unauthenticated RUN ran");
	authenticate(sock);
	PASCO_PASS(run_with_geometry(
	    sock, 1, four, (shard_spec[]){{0, 4}}, 1, msg, sizeof(msg)));
	cr_assert_eq(geometry_runs, 1);
	nng_close(sock);
	cr_assert(
	    unchanged(&t), "unauthenticated garbage changed the variable");
	serve_stop(&t);
}

/* One connection to the bulk port at 127.0.0.1:port sending 25 frames of
 * 1 to 7 MB (assignments to a variable the ps does not have: each read
 * whole, then refused), each answer awaited. */
static void *
bulk_burst_thread(void *arg)
{
	int                port = *(int *) arg;
	struct sockaddr_in a    = {.sin_family = AF_INET,
	       .sin_addr.s_addr                = htonl(INADDR_LOOPBACK),
	       .sin_port                       = htons((uint16_t) port)};
	int                fd   = socket(AF_INET, SOCK_STREAM, 0);
	uint64_t           seed = (uint64_t) (uintptr_t) &a;
	char               detail[256];
	pasci_bulk_link    link;
	cr_assert(connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	pasci_bulk_link_init(&link, fd, false);
	for (int i = 0; i < 25; i++) {
		int64_t n = ((int64_t) 1 << 18) +
		            (int64_t) ((seed = pasci_mix64(seed)) %
		                       (6 << 18)); /* f32: 1 to 7 MB */
		pasco_tensor      *t;
		pasci_wire_builder b;
		pasci_wire_msg     reply;
		PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &n));
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_ASSIGN);
		b.hdr.name = "nope";
		pasci_wire_add_tensor(&b, t, NULL);
		PASCO_PASS(pasci_bulk_send_builder(
		    &link, &b, 0, pasci_now_ms() + 10000));
		pasci_wire_builder_fini(&b);
		pasco_tensor_release(t);
		PASCO_PASS(pasci_bulk_recv_frame(&link, &reply,
		    pasci_now_ms() + 10000, false, detail, sizeof(detail)));
		cr_assert_eq(reply.hdr->status, PASCO_ENOTFOUND);
		pasci_wire_msg_fini(&reply);
	}
	pasci_bulk_link_fini(&link);
	return NULL;
}

/* A chief's heartbeats: a HELLO to url every 300 ms until *stop. */
typedef struct {
	const char *url;
	int         stop; /* atomic */
	int         sent;
} heartbeats;

static void *
heartbeat_thread(void *arg)
{
	heartbeats *h = arg;
	nng_socket  s;
	if (nng_req0_open(&s) != 0 || nng_dial(s, h->url, NULL, 0) != 0) {
		return NULL;
	}
	nng_socket_set_ms(s, NNG_OPT_RECVTIMEO, 2000);
	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
		nng_msg *m = valid(PASCI_METHOD_HELLO, NULL, NULL);
		if (nng_sendmsg(s, m, 0) != 0) {
			nng_msg_free(m);
		} else if (nng_recvmsg(s, &m, 0) == 0) {
			nng_msg_free(m);
			h->sent++;
		}
		usleep(300 * 1000);
	}
	nng_close(s);
	return NULL;
}

/* A burst on the bulk port (8 connections of 1-7 MB frames) leaves a real
 * ps process near its baseline within a few seconds of quiet, as the
 * README says: 36 MB stayed held after one. */
Test(badinput, a_ps_process_returns_to_its_baseline_after_a_bulk_burst)
{
	const char *program = getenv("PASCO_TASK_PROGRAM");
	int         port = test_free_port(), bulk_port = test_free_port();
	char        tf[256], url[64], bp[16];
	long        before, peak, after = -1;
	pid_t       pid;
	pthread_t   th[8];
	int         status;
	if (program == NULL) {
		cr_skip_test(
		    "PASCO_TASK_PROGRAM is not set (run through meson)");
	}
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	cr_skip_test("a sanitizer's allocator holds freed memory on purpose: "
	             "resident sizes are measured in the plain build");
#endif
	snprintf(tf, sizeof(tf),
	    "{\"cluster\": {\"ps\": [\"127.0.0.1:%d\"], \"worker\": "
	    "[\"127.0.0.1:%d\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}",
	    port, test_free_port());
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	snprintf(bp, sizeof(bp), "%d", bulk_port);
	if ((pid = fork()) == 0) {
		setenv("TF_CONFIG", tf, 1);
		setenv("PASCO_LOG", "error", 1);
		setenv("PASCO_BULK_PORT", bp, 1);
		unsetenv("PASCO_KEY_FILE");
		execl(program, program, (char *) NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	{ /* serving once its rpc port answers */
		nng_socket s;
		cr_assert_eq(nng_req0_open(&s), 0);
		for (int i = 0; i < 100 && nng_dial(s, url, NULL, 0) != 0;
		     i++) {
			usleep(50 * 1000);
		}
		nng_close(s);
	}
	/* a member's heartbeats go on throughout, as a chief's do: they
	 * are not traffic that keeps the memory held */
	heartbeats hb = {.url = url};
	pthread_t  hb_th;
	cr_assert_eq(pthread_create(&hb_th, NULL, heartbeat_thread, &hb), 0);
	usleep(1500 * 1000);
	before = rss_kb(pid);
	for (int i = 0; i < 8; i++) {
		pthread_create(&th[i], NULL, bulk_burst_thread, &bulk_port);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
	}
	peak = rss_kb(pid);
	for (int i = 0; i < 50; i++) { /* given back within 5 s */
		usleep(100 * 1000);
		after = rss_kb(pid);
		if (after < before + 16 * 1024) {
			break;
		}
	}
	__atomic_store_n(&hb.stop, 1, __ATOMIC_RELEASE);
	pthread_join(hb_th, NULL);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	cr_assert(before > 0 && after > 0);
	cr_assert_gt(
	    hb.sent, 3, "the heartbeats were not answered (%d)", hb.sent);
	cr_assert_gt(peak, before + 16 * 1024, "the burst took no memory");
	cr_assert_lt(after, before + 16 * 1024,
	    "a ps at %ld KB before a bulk burst (%ld KB during) still holds "
	    "%ld KB after it",
	    before, peak, after);
}
