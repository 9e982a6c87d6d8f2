#include "helpers.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "resolve.h"
#include "rpc.h"
#include "stuck_lookup.h"
#include "util.h"
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>

TestSuite(rpc, .timeout = 30);

/* Echo server: replies with the request's tensors; "sleep" waits first;
 * "fail" answers PASCO_EINVAL. */
static nng_msg *
echo(void *arg, const pasci_wire_msg *req)
{
	pasci_wire_builder b;
	nng_msg           *reply;
	(void) arg;
	if (strcmp(req->hdr->name, "fail") == 0) {
		return pasci_wire_status_reply(PASCO_EINVAL, "asked to fail");
	}
	if (strcmp(req->hdr->name, "sleep") == 0) {
		usleep(300 * 1000);
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	for (size_t i = 0; i < req->ntensors; i++) {
		pasci_wire_add_tensor(&b, req->tensors[i], NULL);
	}
	pasci_wire_encode(&b, &reply);
	pasci_wire_builder_fini(&b);
	return reply;
}

static int
call(pasci_rpc_client *c, const char *name, double v, double *out,
    int64_t timeout_ms, char *err)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	pasco_tensor      *t = test_scalar(PASCO_F64, v);
	int                rv;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.name = (char *) name;
	pasci_wire_add_tensor(&b, t, NULL);
	pasco_tensor_release(t);
	rv = pasci_rpc_call(c, &b, timeout_ms, &reply, err, 256);
	pasci_wire_builder_fini(&b);
	if (rv == 0) {
		*out = pasco_tensor_get(reply.tensors[0], 0);
		pasci_wire_msg_fini(&reply);
	}
	return rv;
}

static char url[64];

static void
unique_url(void)
{
	static int n;
	snprintf(url, sizeof(url), "inproc://rpc-%d-%d", (int) getpid(), n++);
}

Test(rpc, call_returns_the_reply)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	double            out = 0;
	char              err[256];
	unique_url();
	PASCO_PASS(pasci_rpc_server_open(&s, url, 2, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(call(c, "echo", 4.5, &out, 5000, err));
	cr_assert_eq(out, 4.5);
	cr_assert_eq(
	    pasci_rpc_client_incarnation(c), pasci_rpc_server_incarnation(s));
	PASCO_FAIL(call(c, "fail", 1, &out, 5000, err), PASCO_EINVAL);
	cr_assert_str_eq(err, "asked to fail");
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

typedef struct caller {
	pasci_rpc_client *c;
	int               ok;
} caller;

static void *
call_many(void *arg)
{
	caller *k = arg;
	char    err[256];
	for (int i = 0; i < 200; i++) {
		double out = -1;
		if (call(k->c, "echo", i, &out, 5000, err) == 0 && out == i) {
			k->ok++;
		}
	}
	return NULL;
}

Test(rpc, concurrent_calls_share_one_connection)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	pthread_t         th[4];
	caller            k[4];
	unique_url();
	PASCO_PASS(pasci_rpc_server_open(&s, url, 4, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	for (int i = 0; i < 4; i++) {
		k[i] = (caller){c, 0};
		pthread_create(&th[i], NULL, call_many, &k[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(k[i].ok, 200,
		    "thread %d: %d of 200 replies matched", i, k[i].ok);
	}
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

Test(rpc, deadline_expires_a_slow_call)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	double            out;
	char              err[256];
	int64_t           start;
	unique_url();
	PASCO_PASS(pasci_rpc_server_open(&s, url, 2, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	start = pasci_now_ms();
	PASCO_FAIL(call(c, "sleep", 1, &out, 100, err), PASCO_ETIMEDOUT);
	cr_assert_lt(
	    pasci_now_ms() - start, 290, "the deadline did not cut the wait");
	cr_assert(strstr(err, "deadline") != NULL, "%s", err);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

Test(rpc, calls_fail_fast_without_a_server)
{
	pasci_rpc_client *c;
	double            out;
	char              err[256];
	unique_url();
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_FAIL(call(c, "echo", 1, &out, 100, err), PASCO_EUNAVAILABLE);
	cr_assert(
	    strstr(err, url) != NULL, "the message names the server: %s", err);
	pasci_rpc_client_close(c);
}

typedef struct state_log {
	pthread_mutex_t mu;
	int             ups, downs;
	uint64_t        last;
} state_log;

static void
on_state(void *arg, bool up, uint64_t incarnation)
{
	state_log *l = arg;
	pthread_mutex_lock(&l->mu);
	if (up) {
		l->ups++;
		l->last = incarnation;
	} else {
		l->downs++;
	}
	pthread_mutex_unlock(&l->mu);
}

static int
wait_count(state_log *l, int *field, int want)
{
	for (int i = 0; i < 500; i++) {
		int v;
		pthread_mutex_lock(&l->mu);
		v = *field;
		pthread_mutex_unlock(&l->mu);
		if (v >= want) {
			return v;
		}
		usleep(10 * 1000);
	}
	return -1;
}

Test(rpc, a_server_never_reached_stalls_calls_only_briefly)
{
	pasci_rpc_client *c;
	char              url[64];
	double            t0, t1, t2;
	/* production: 15 s after the client opened, then 2 s per call */
	pasci_rpc_set_contact_waits(400, 150);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	t0 = pasco_test_now();
	PASCO_FAIL(pasci_rpc_client_wait_for_call(c, 60000), PASCO_ETIMEDOUT);
	t1 = pasco_test_now();
	PASCO_FAIL(pasci_rpc_client_wait_for_call(c, 60000), PASCO_ETIMEDOUT);
	t2 = pasco_test_now();
	cr_assert(
	    t1 - t0 > 0.3 && t1 - t0 < 2, "first call waited %.2f s", t1 - t0);
	cr_assert(
	    t2 - t1 > 0.1 && t2 - t1 < 1, "next call waited %.2f s", t2 - t1);
	/* a shorter deadline still wins */
	t0 = pasco_test_now();
	PASCO_FAIL(pasci_rpc_client_wait_for_call(c, 20), PASCO_ETIMEDOUT);
	cr_assert(pasco_test_now() - t0 < 0.12);
	pasci_rpc_client_close(c);
	pasci_rpc_set_contact_waits(15000, 2000);
}

Test(rpc, reports_disconnect_and_a_new_incarnation)
{
	pasci_rpc_server *s1, *s2;
	pasci_rpc_client *c;
	state_log         log = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
	double            out;
	char              err[256];
	uint64_t          first;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	PASCO_PASS(pasci_rpc_server_open(&s1, url, 2, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, on_state, &log));
	cr_assert_eq(wait_count(&log, &log.ups, 1), 1);
	first = pasci_rpc_server_incarnation(s1);
	cr_assert_eq(log.last, first);
	pasci_rpc_server_close(s1);
	cr_assert_eq(wait_count(&log, &log.downs, 1), 1, "no disconnect seen");
	PASCO_FAIL(call(c, "echo", 1, &out, 50, err), PASCO_EUNAVAILABLE);
	PASCO_PASS(pasci_rpc_server_open(&s2, url, 2, "t", echo, NULL));
	cr_assert_eq(wait_count(&log, &log.ups, 2), 2, "no reconnect seen");
	cr_assert_neq(
	    log.last, first, "a restarted server has a new incarnation");
	PASCO_PASS(call(c, "echo", 2, &out, 5000, err));
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s2);
}

/* A request stamped for another incarnation is rejected, not run. */
static int runs;
static nng_msg *
count_runs(void *arg, const pasci_wire_msg *req)
{
	(void) arg;
	(void) req;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	return pasci_wire_status_reply(PASCO_OK, "%s", "");
}

Test(rpc, server_rejects_requests_for_another_incarnation)
{
	pasci_rpc_server  *s;
	nng_socket         raw;
	nng_msg           *msg;
	pasci_wire_builder b;
	pasci_wire_msg     m;
	char               err[256];
	unique_url();
	PASCO_PASS(pasci_rpc_server_open(&s, url, 1, "t", count_runs, NULL));
	cr_assert_eq(nng_req0_open(&raw), 0);
	cr_assert_eq(nng_dial(raw, url, NULL, 0), 0);
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	pasci_wire_encode(&b, &msg);
	pasci_wire_builder_fini(&b);
	pasci_wire_set_incarnation(msg, pasci_rpc_server_incarnation(s) + 1);
	cr_assert_eq(nng_sendmsg(raw, msg, 0), 0);
	cr_assert_eq(nng_recvmsg(raw, &msg, 0), 0);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert(m.hdr->stale_incarnation);
	cr_assert_eq(m.hdr->status, PASCO_EABORTED);
	cr_assert_eq(runs, 0, "the stale request ran");
	pasci_wire_msg_fini(&m);
	nng_close(raw);
	pasci_rpc_server_close(s);
}

Test(rpc, malformed_request_gets_an_error_reply)
{
	pasci_rpc_server *s;
	nng_socket        raw;
	nng_msg          *msg;
	pasci_wire_msg    m;
	char              err[256];
	unique_url();
	PASCO_PASS(pasci_rpc_server_open(&s, url, 1, "t", count_runs, NULL));
	cr_assert_eq(nng_req0_open(&raw), 0);
	cr_assert_eq(nng_dial(raw, url, NULL, 0), 0);
	/* incarnation 0 (any), then a header length past the end */
	cr_assert_eq(
	    nng_send(raw, "\0\0\0\0\0\0\0\0\0\0\1\0garbage", 19, 0), 0);
	cr_assert_eq(nng_recvmsg(raw, &msg, 0), 0);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_eq(m.hdr->status, PASCO_EPROTO);
	cr_assert(strstr(m.hdr->error, "malformed request") != NULL, "%s",
	    m.hdr->error);
	pasci_wire_msg_fini(&m);
	nng_close(raw);
	pasci_rpc_server_close(s);
}

Test(rpc, the_advert_reaches_the_client_until_it_is_forgotten)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	char              advert[PASCI_RPC_ADVERT_MAX], big[400];
	uint64_t          inc = 0;
	unique_url();
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	PASCO_FAIL(pasci_rpc_server_open_with(
	               &s, url, 1, "t", echo, NULL, 0, big, NULL),
	    PASCO_EINVAL);
	cr_assert_null(s);
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 1, "t", echo, NULL, 77, "anything at all", NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	PASCO_PASS(pasci_rpc_client_advert(c, advert, sizeof(advert), &inc));
	cr_assert_str_eq(advert, "anything at all");
	cr_assert_eq(inc, 77);
	/* an advert of an incarnation no longer served stays */
	cr_assert_not(pasci_rpc_client_forget_advert(c, 76));
	PASCO_PASS(pasci_rpc_client_advert(c, advert, sizeof(advert), &inc));
	cr_assert_str_eq(advert, "anything at all");
	cr_assert(pasci_rpc_client_forget_advert(c, 77)); /* said once */
	cr_assert_not(pasci_rpc_client_forget_advert(c, 77));
	PASCO_PASS(pasci_rpc_client_advert(c, advert, sizeof(advert), &inc));
	cr_assert_str_eq(advert, "");
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

/* Messages over PASCO_MAX_MESSAGE_MB: a peer declaring one is dropped
 * before it is received (nothing is allocated for it, nothing runs); a
 * client about to send one is told why. */
static int  silent_peer(int port);
static bool closed_by_server(int fd);

Test(rpc, messages_over_the_limit_are_refused)
{
	pasci_rpc_server  *s;
	pasci_rpc_client  *c;
	pasci_wire_builder b;
	pasco_tensor      *big;
	char               tcp[64], err[256];
	int                port = test_free_port(), fd;
	/* an SP frame announcing 2 MB, from a plain TCP peer (an nng
	 * socket whose connection is closed in the middle of a large send
	 * can hang nng 1.5.2 for good: sock_close.h) */
	unsigned char frame[8 + 4096] = {0, 0, 0, 0, 0, 0x20, 0, 0};
	setenv("PASCO_MAX_MESSAGE_MB", "1", 1); /* read once, from here on */
	cr_assert_eq(pasci_max_message_bytes(), (size_t) 1 << 20);
	snprintf(tcp, sizeof(tcp), "tcp://127.0.0.1:%d", port);
	PASCO_PASS(pasci_rpc_server_open(&s, tcp, 1, "t", count_runs, NULL));
	fd = silent_peer(port);
	cr_assert_eq(send(fd, frame, sizeof(frame), MSG_NOSIGNAL),
	    (ssize_t) sizeof(frame));
	for (int i = 0; i < 250 && !closed_by_server(fd); i++) {
		usleep(20 * 1000);
	}
	cr_assert(closed_by_server(fd),
	    "the server kept a connection that announced a 2 MB request");
	close(fd);
	cr_assert_eq(runs, 0);
	/* the server still serves */
	PASCO_PASS(pasci_rpc_client_open(&c, tcp, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	PASCO_PASS(pasci_rpc_call(c, &b, 5000, NULL, err, sizeof(err)));
	pasci_wire_builder_fini(&b);
	cr_assert_eq(runs, 1);
	PASCO_PASS(
	    pasco_tensor_alloc(&big, PASCO_U8, 1, (int64_t[]){2 << 20}));
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	pasci_wire_add_tensor(&b, big, NULL);
	PASCO_FAIL(
	    pasci_rpc_call(c, &b, 5000, NULL, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(strstr(err, "PASCO_MAX_MESSAGE_MB") != NULL, "%s", err);
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(big);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

/* Cluster authentication (auth.h): who is served, who is refused. */

static pasci_key
test_key(uint8_t seed)
{
	pasci_key k = {.len = 32};
	for (int i = 0; i < 32; i++) {
		k.bytes[i] = (uint8_t) (seed + 13 * i);
	}
	return k;
}

/* One request on a raw req0 socket, its reply decoded into m (false when
 * none came within 2 s). */
static bool
raw_exchange(nng_socket raw, nng_msg *msg, pasci_wire_msg *m)
{
	char err[256];
	cr_assert_eq(nng_sendmsg(raw, msg, 0), 0);
	if (nng_recvmsg(raw, &msg, 0) != 0) {
		return false;
	}
	PASCO_PASS(pasci_wire_decode(m, msg, err, sizeof(err)));
	return true;
}

static nng_msg *
request(pasci_method method, const char *name)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	pasci_wire_builder_init(&b, method);
	b.hdr.name = (char *) name;
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	return msg;
}

static nng_socket
raw_dial(void)
{
	nng_socket raw;
	cr_assert_eq(nng_req0_open(&raw), 0);
	nng_socket_set_ms(raw, NNG_OPT_RECVTIMEO, 2000);
	cr_assert_eq(nng_dial(raw, url, NULL, 0), 0);
	return raw;
}

/* The server's nonce, by a HELLO on raw. */
static void
raw_hello(nng_socket raw, uint8_t sn[PASCI_AUTH_NONCE])
{
	pasci_wire_msg m;
	cr_assert(raw_exchange(raw, request(PASCI_METHOD_HELLO, ""), &m));
	cr_assert_not_null(pasci_auth_hello_nonce(&m), "no nonce in HELLO");
	memcpy(sn, pasci_auth_hello_nonce(&m), PASCI_AUTH_NONCE);
	pasci_wire_msg_fini(&m);
}

Test(rpc, a_client_with_the_cluster_key_is_served)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	pasci_key         k = test_key(1);
	double            out;
	char              err[256];
	unique_url();
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 2, "t", echo, NULL, 0, NULL, &k));
	PASCO_PASS(pasci_rpc_client_open_with(&c, url, NULL, NULL, &k));
	PASCO_PASS(call(c, "echo", 4.5, &out, 5000, err));
	cr_assert_eq(out, 4.5);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

Test(rpc, a_client_without_the_key_runs_nothing_and_is_logged)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	pasci_key         k = test_key(1);
	double            out;
	char              err[256], *log;
	int               saved;
	unique_url();
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 1, "t", count_runs, NULL, 0, NULL, &k));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	saved = test_stderr_capture();
	PASCO_FAIL(call(c, "echo", 1, &out, 5000, err), PASCO_EPRECONDITION);
	PASCO_FAIL(call(c, "echo", 1, &out, 5000, err), PASCO_EPRECONDITION);
	log = test_stderr_take(saved);
	cr_assert(strstr(err, "unauthenticated") != NULL, "%s", err);
	cr_assert_eq(runs, 0, "a request without the key ran");
	cr_assert(
	    strstr(log, "not proved the cluster key") != NULL, "%s", log);
	free(log);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

Test(rpc, a_client_with_a_wrong_key_runs_nothing_and_is_logged)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	pasci_key         k = test_key(1), wrong = test_key(2);
	double            out;
	char              err[256], *log;
	int               saved;
	unique_url();
	saved = test_stderr_capture();
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 1, "t", count_runs, NULL, 0, NULL, &k));
	PASCO_PASS(pasci_rpc_client_open_with(&c, url, NULL, NULL, &wrong));
	cr_assert_neq(call(c, "echo", 1, &out, 1000, err), PASCO_OK);
	pasci_rpc_client_close(c);
	log = test_stderr_take(saved);
	cr_assert(strstr(err, "key") != NULL, "the error is '%s'", err);
	cr_assert_eq(runs, 0, "a request with a wrong key ran");
	cr_assert(
	    strstr(log, "did not prove the cluster key") != NULL, "%s", log);
	free(log);
	pasci_rpc_server_close(s);
}

Test(rpc, a_client_with_a_key_refuses_a_server_without_one)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	pasci_key         k = test_key(1);
	double            out;
	char              err[256];
	unique_url();
	PASCO_PASS(pasci_rpc_server_open(&s, url, 1, "t", count_runs, NULL));
	PASCO_PASS(pasci_rpc_client_open_with(&c, url, NULL, NULL, &k));
	cr_assert_neq(call(c, "echo", 1, &out, 1000, err), PASCO_OK);
	cr_assert(strstr(err, "does not ask for the cluster key") != NULL,
	    "%s", err);
	cr_assert_eq(runs, 0);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

/* A server that knows no key but plays along: its HELLO has a nonce and
 * its AUTH reply a made-up proof. */
static void *
impostor_main(void *arg)
{
	nng_socket        *rep = arg;
	pasci_wire_builder b;
	nng_msg           *msg;
	uint8_t            junk[32] = {7};
	pasco_tensor      *t;
	for (int i = 0; i < 2; i++) {
		if (nng_recvmsg(*rep, &msg, 0) != 0) {
			return NULL;
		}
		nng_msg_free(msg);
		pasci_wire_builder_init(
		    &b, i == 0 ? PASCI_METHOD_HELLO : PASCI_METHOD_AUTH);
		PASCO_PASS(pasco_tensor_from(
		    &t, PASCO_U8, 1, (int64_t[]){32}, junk, 32));
		pasci_wire_add_tensor(&b, t, NULL);
		pasco_tensor_release(t);
		PASCO_PASS(pasci_wire_encode(&b, &msg));
		pasci_wire_builder_fini(&b);
		nng_sendmsg(*rep, msg, 0);
	}
	return NULL;
}

Test(rpc, a_client_refuses_a_server_that_cannot_prove_the_key)
{
	nng_socket        rep;
	pthread_t         th;
	pasci_rpc_client *c;
	pasci_key         k = test_key(1);
	unique_url();
	cr_assert_eq(nng_rep0_open(&rep), 0);
	cr_assert_eq(nng_listen(rep, url, NULL, 0), 0);
	pthread_create(&th, NULL, impostor_main, &rep);
	PASCO_PASS(pasci_rpc_client_open_with(&c, url, NULL, NULL, &k));
	PASCO_FAIL(pasci_rpc_client_wait_up(c, 1000), PASCO_ETIMEDOUT);
	nng_close(rep);
	pthread_join(th, NULL);
	pasci_rpc_client_close(c);
}

Test(rpc, a_raw_socket_without_auth_is_refused_unrun)
{
	pasci_rpc_server *s;
	pasci_key         k = test_key(1);
	pasci_wire_msg    m;
	nng_socket        raw;
	nng_msg          *big;
	unique_url();
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 1, "t", count_runs, NULL, 0, NULL, &k));
	raw = raw_dial();
	cr_assert(raw_exchange(raw, request(PASCI_METHOD_RUN, "f"), &m));
	cr_assert_eq(m.hdr->status, PASCO_EPRECONDITION);
	cr_assert(strstr(m.hdr->error, "unauthenticated") != NULL);
	pasci_wire_msg_fini(&m);
	cr_assert(raw_exchange(raw, request(PASCI_METHOD_VAR_READ, "w"), &m));
	cr_assert_eq(m.hdr->status, PASCO_EPRECONDITION);
	pasci_wire_msg_fini(&m);
	cr_assert(raw_exchange(raw, request(PASCI_METHOD_SHUTDOWN, ""), &m));
	cr_assert_eq(m.hdr->status, PASCO_EPRECONDITION);
	pasci_wire_msg_fini(&m);
	/* a big request is refused before it is decoded */
	big = request(PASCI_METHOD_RUN, "f");
	nng_msg_append(big, NULL, 0);
	for (int i = 0; i < 256; i++) {
		nng_msg_append(big, "xxxxxxxx", 8);
	}
	cr_assert(raw_exchange(raw, big, &m) == false ||
	          m.hdr->status == PASCO_EPRECONDITION);
	pasci_wire_msg_fini(&m);
	cr_assert_eq(runs, 0, "an unauthenticated request ran");
	cr_assert(!pasci_rpc_server_shutdown_requested(s));
	nng_close(raw);
	pasci_rpc_server_close(s);
}

Test(rpc, a_replayed_auth_fails_on_a_new_connection)
{
	pasci_rpc_server *s;
	pasci_key         k = test_key(1);
	pasci_wire_msg    m;
	nng_socket        a, b;
	nng_msg          *auth, *copy;
	uint8_t           sn[PASCI_AUTH_NONCE], nonces[2 * PASCI_AUTH_NONCE];
	char             *log;
	int               saved;
	unique_url();
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 1, "t", count_runs, NULL, 0, NULL, &k));
	/* a proper exchange, recorded */
	a = raw_dial();
	raw_hello(a, sn);
	PASCO_PASS(pasci_auth_request(&k, sn, nonces, &auth));
	cr_assert_eq(nng_msg_dup(&copy, auth), 0);
	cr_assert(raw_exchange(a, auth, &m));
	cr_assert(pasci_auth_reply_ok(&k, nonces, &m));
	pasci_wire_msg_fini(&m);
	cr_assert(raw_exchange(a, request(PASCI_METHOD_RUN, "f"), &m));
	PASCO_PASS(m.hdr->status);
	pasci_wire_msg_fini(&m);
	cr_assert_eq(runs, 1);
	/* played back on a connection of its own: refused, and closed */
	saved = test_stderr_capture();
	b     = raw_dial();
	raw_hello(b, sn);
	if (raw_exchange(b, copy, &m)) {
		cr_assert_neq(m.hdr->status, PASCO_OK);
		pasci_wire_msg_fini(&m);
	}
	cr_assert(raw_exchange(b, request(PASCI_METHOD_RUN, "f"), &m));
	cr_assert_eq(m.hdr->status, PASCO_EPRECONDITION);
	pasci_wire_msg_fini(&m);
	log = test_stderr_take(saved);
	cr_assert_eq(runs, 1, "a replayed AUTH let a request run");
	cr_assert(
	    strstr(log, "did not prove the cluster key") != NULL, "%s", log);
	free(log);
	nng_close(a);
	nng_close(b);
	pasci_rpc_server_close(s);
}

/* A TCP connection to port that does nng's SP handshake as a REQ peer
 * would, and then says nothing. */
static int
silent_peer(int port)
{
	static const unsigned char sp[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
	struct sockaddr_in         a     = {.sin_family = AF_INET};
	int                        fd    = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr                = htonl(INADDR_LOOPBACK);
	a.sin_port                       = htons((uint16_t) port);
	cr_assert(fd >= 0 &&
	          connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0 &&
	          write(fd, sp, sizeof(sp)) == (ssize_t) sizeof(sp));
	return fd;
}

/* Whether the server closed fd (its handshake reply read and dropped). */
static bool
closed_by_server(int fd)
{
	unsigned char buf[64];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (poll(&p, 1, 0) == 1) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0) {
			return true;
		}
	}
	return false;
}

/* Strangers who connect and say nothing: at most PASCO_MAX_CONNECTIONS
 * are held, and those silent for PASCO_IDLE_TIMEOUT are closed. */
Test(rpc, silent_connections_are_capped_and_closed)
{
	pasci_rpc_server  *s;
	pasci_rpc_client  *c;
	pasci_wire_builder b;
	int                fds[30], port = test_free_port(), open_ones;
	char               tcp[64], err[256];
	int64_t            start;
	setenv("PASCO_MAX_CONNECTIONS", "8", 1);
	setenv("PASCO_IDLE_TIMEOUT", "1", 1);
	snprintf(tcp, sizeof(tcp), "tcp://127.0.0.1:%d", port);
	PASCO_PASS(pasci_rpc_server_open(&s, tcp, 1, "t", count_runs, NULL));
	unsetenv("PASCO_MAX_CONNECTIONS");
	unsetenv("PASCO_IDLE_TIMEOUT");
	for (int i = 0; i < 30; i++) {
		fds[i] = silent_peer(port);
	}
	start = pasci_now_ms();
	while (pasci_now_ms() - start < 500) {
		cr_assert_leq(pasci_rpc_server_connections(s), 8,
		    "%d connections held with at most 8 allowed",
		    pasci_rpc_server_connections(s));
		usleep(20 * 1000);
	}
	cr_assert_geq(pasci_rpc_server_connections(s), 1);
	/* none spoke: within the idle timeout the server closes them all */
	start = pasci_now_ms();
	do {
		usleep(50 * 1000);
		pasci_rpc_server_sweep(s);
		open_ones = 0;
		for (int i = 0; i < 30; i++) {
			open_ones += fds[i] >= 0 && !closed_by_server(fds[i]);
		}
	} while ((open_ones > 0 || pasci_rpc_server_connections(s) > 0) &&
	         pasci_now_ms() - start < 5000);
	cr_assert_eq(open_ones, 0,
	    "%d silent connections outlived the 1 s idle timeout", open_ones);
	cr_assert_eq(pasci_rpc_server_connections(s), 0);
	for (int i = 0; i < 30; i++) {
		close(fds[i]);
	}
	/* a client that speaks is served */
	PASCO_PASS(pasci_rpc_client_open(&c, tcp, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	PASCO_PASS(pasci_rpc_call(c, &b, 5000, NULL, err, sizeof(err)));
	pasci_wire_builder_fini(&b);
	cr_assert_eq(runs, 1);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
}

/* A name service the tests control: "srv.move.test" resolves to
 * move_addr; "*.stuck.test" gets no answer until stuck_release. */
static char move_addr[32] = "127.0.0.2"; /* under stuck_mu */

static int
test_lookup(const char *host, const char *port, const struct addrinfo *hints,
    struct addrinfo **res)
{
	struct addrinfo h = *hints;
	char            addr[32];
	if (stuck_wait(host)) {
		return EAI_AGAIN;
	}
	if (strcmp(host, "srv.move.test") != 0) {
		return EAI_NONAME;
	}
	pthread_mutex_lock(&stuck_mu);
	snprintf(addr, sizeof(addr), "%s", move_addr);
	pthread_mutex_unlock(&stuck_mu);
	h.ai_flags |= AI_NUMERICHOST;
	return getaddrinfo(addr, port, &h, res);
}

Test(rpc, a_server_back_at_a_new_address_under_its_name_is_followed)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	char              url[64], at[64], err[256];
	double            out, t0;
	int               port = test_free_port();

	pasci_resolve_set_lookup(test_lookup);
	snprintf(url, sizeof(url), "tcp://srv.move.test:%d", port);
	snprintf(at, sizeof(at), "tcp://127.0.0.2:%d", port);
	PASCO_PASS(pasci_rpc_server_open(&s, at, 2, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	PASCO_PASS(call(c, "echo", 7, &out, 5000, err));
	pasci_rpc_server_close(s);
	for (int i = 0; i < 500 && pasci_rpc_client_is_up(c); i++) {
		usleep(10 * 1000); /* until the client sees it gone */
	}
	pthread_mutex_lock(&stuck_mu);
	snprintf(move_addr, sizeof(move_addr), "127.0.0.3");
	pthread_mutex_unlock(&stuck_mu);
	snprintf(at, sizeof(at), "tcp://127.0.0.3:%d", port);
	PASCO_PASS(pasci_rpc_server_open(&s, at, 2, "t", echo, NULL));
	t0 = pasco_test_now();
	for (int i = 0; i < 500 && !pasci_rpc_client_is_up(c); i++) {
		usleep(10 * 1000);
	}
	cr_assert(pasci_rpc_client_is_up(c), "not back after 5 s");
	cr_assert_lt(pasco_test_now() - t0, 2.5, "back after %.2f s",
	    pasco_test_now() - t0);
	PASCO_PASS(call(c, "echo", 8, &out, 5000, err));
	cr_assert_eq(out, 8);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
	pasci_resolve_set_lookup(NULL);
}

Test(rpc, a_name_that_gets_no_answer_is_named_with_its_deadline)
{
	pasci_rpc_client *c;
	char              url[64], why[512] = "";

	pasci_resolve_set_lookup(test_lookup);
	snprintf(
	    url, sizeof(url), "tcp://ps0.stuck.test:%d", test_free_port());
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	for (int i = 0; i < 800 && strstr(why, "no answer") == NULL; i++) {
		usleep(10 * 1000);
		pasci_rpc_client_why_down(c, why, sizeof(why));
	}
	cr_assert(strstr(why, "looking up 'ps0.stuck.test' got no answer "
	                      "within 5000 ms") != NULL,
	    "%s", why);
	pasci_rpc_client_close(c);
	stuck_release();
	pasci_resolve_set_lookup(NULL);
}

Test(rpc, a_lost_server_is_waited_for_briefly)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	char              url[64];
	double            t0, took;

	pasci_rpc_set_contact_waits(15000, 300);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	PASCO_PASS(pasci_rpc_server_open(&s, url, 2, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	pasci_rpc_server_close(s);
	for (int i = 0; i < 500 && pasci_rpc_client_is_up(c); i++) {
		usleep(10 * 1000);
	}
	t0 = pasco_test_now();
	PASCO_FAIL(
	    pasci_rpc_client_wait_for_call(c, 60000), PASCO_EUNAVAILABLE);
	took = pasco_test_now() - t0;
	cr_assert(took > 0.25 && took < 1.5, "waited %.2f s", took);
	/* back within the wait (2 s: nng redials every 0.5 s at most by
	 * now): the call goes on */
	pasci_rpc_set_contact_waits(15000, 2000);
	PASCO_PASS(pasci_rpc_server_open(&s, url, 2, "t", echo, NULL));
	PASCO_PASS(pasci_rpc_client_wait_for_call(c, 60000));
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(s);
	pasci_rpc_set_contact_waits(15000, 2000);
}
