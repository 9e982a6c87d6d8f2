/*
 * Bulk transfers (net/bulk*.c, net/bufcache.c): large tensors between a
 * process and a ps over a TCP connection of their own. Variables over a TCP
 * in-process cluster, and the bulk server against bad frames, stale
 * incarnations and deadlines.
 */
#include "bulk_test.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "auth.h"
#include "bufcache.h"
#include "bulk.h"
#include "bulk_frame.h"
#include "resolve.h"
#include "rpc.h"
#include "stuck_lookup.h"
#include "tensor_impl.h"
#include "util.h"

TestSuite(bulk, .timeout = 60);

static pasco_cluster  *cluster;
static pasco_server   *servers[3];
static pasco_strategy *strategy;

/* nps ps and one worker on loopback TCP, the strategy connected. */
static void
start_tcp(int nps, const pasco_partitioner *p)
{
	char                   json[512], err[256];
	size_t                 n;
	pasco_strategy_options o = {.partitioner = p};
	n = (size_t) snprintf(json, sizeof(json), "{\"cluster\": {\"ps\": [");
	for (int i = 0; i < nps; i++) {
		n += (size_t) snprintf(json + n, sizeof(json) - n,
		    "%s\"127.0.0.1:%d\"", i ? ", " : "", test_free_port());
	}
	snprintf(json + n, sizeof(json) - n,
	    "], \"worker\": [\"127.0.0.1:%d\"]}}", test_free_port());
	PASCO_PASS(pasco_cluster_parse_json(&cluster, json, err, sizeof(err)));
	for (int i = 0; i < nps; i++) {
		PASCO_PASS(pasco_server_start(
		    &servers[i], cluster, PASCO_ROLE_PS, i));
	}
	PASCO_PASS(
	    pasco_server_start(&servers[nps], cluster, PASCO_ROLE_WORKER, 0));
	PASCO_PASS(pasco_strategy_create(&strategy, cluster, &o));
}

static void
stop_tcp(int nps)
{
	pasco_strategy_destroy(strategy);
	for (int i = 0; i <= nps; i++) {
		pasco_server_stop(servers[i]);
	}
	pasco_cluster_free(cluster);
}

/* A f32 vector of n elements, element i = i * scale. */
static pasco_tensor *
ramp(int64_t n, float scale)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		((float *) t->data)[i] = (float) i * scale;
	}
	return t;
}

static void
expect_ramp(const pasco_tensor *t, int64_t n, float scale)
{
	cr_assert_eq(t->count, n);
	for (int64_t i = 0; i < n; i++) {
		float want = (float) i * scale,
		      got  = ((const float *) t->data)[i];
		cr_assert(got == want, "element %lld: %g, want %g",
		    (long long) i, (double) got, (double) want);
	}
}

/* Variables of 4 MB in 2 shards, read, updated, assigned: over TCP, or
 * (local) over Unix sockets and shared memory, the ps on this host. */
static void
big_variables_round_trip(bool local)
{
	int64_t           n   = 1 << 20; /* 4 MB: over the bulk threshold */
	pasco_partitioner two = pasco_fixed_shards_partitioner(2);
	pasco_optimizer   sgd = pasco_sgd(1.0, 0, false);
	pasco_variable   *v, *w, *both[2];
	pasco_tensor *init = ramp(n, 1), *grad = ramp(n, 0.5f), *t, *out[2];
	uint64_t      calls0 = pasci_bulk_calls_done();
	setenv("PASCO_BULK_LOCAL", local ? "1" : "0", 1);
	start_tcp(2, &two);
	PASCO_PASS(pasco_variable_create(&v, strategy, "v", init));
	cr_assert_eq(pasco_variable_num_shards(v), 2); /* 2 MB each: bulk */
	PASCO_PASS(pasco_variable_read(v, &t));
	expect_ramp(t, n, 1);
	pasco_tensor_release(t);
	/* i - 1.0 * 0.5 i = 0.5 i */
	PASCO_PASS(pasco_variable_apply_gradient(v, &sgd, grad));
	PASCO_PASS(pasco_variable_assign_add(v, grad));     /* i */
	PASCO_PASS(pasco_variable_apply_sgd(v, 1.0, grad)); /* 0.5 i */
	PASCO_PASS(pasco_variable_create(&w, strategy, "w", grad));
	both[0] = v;
	both[1] = w;
	PASCO_PASS(pasco_variable_read_all(2, both, out));
	expect_ramp(out[0], n, 0.5f);
	expect_ramp(out[1], n, 0.5f);
	pasco_tensor_release(out[0]);
	pasco_tensor_release(out[1]);
	/* create 2, read 2, 3 updates x 2, create 1, read 3 */
	cr_assert_geq(pasci_bulk_calls_done() - calls0, 14,
	    "only %llu calls went over bulk connections",
	    (unsigned long long) (pasci_bulk_calls_done() - calls0));
	/* a wrong spec is refused whole, over bulk too */
	t = ramp(n + 1, 1);
	PASCO_FAIL(pasco_variable_assign(w, t), PASCO_EINVAL);
	pasco_tensor_release(t);
	PASCO_PASS(pasco_variable_read(w, &t));
	expect_ramp(t, n, 0.5f);
	pasco_tensor_release(t);
	pasco_tensor_release(init);
	pasco_tensor_release(grad);
	pasco_variable_free(v);
	pasco_variable_free(w);
	stop_tcp(2);
}

Test(bulk, big_variables_round_trip_over_tcp)
{
	big_variables_round_trip(false);
	cr_assert_eq(
	    mappings_of("/memfd:pasco-bulk"), 0, "a region was made over TCP");
}

Test(bulk, big_variables_round_trip_over_a_local_link)
{
	big_variables_round_trip(true);
	cr_assert_gt(
	    mappings_of("/memfd:pasco-bulk"), 0, "no region was made");
}

/* A call of method to the bulk server at addr with a ramp of 300,000
 * floats: the servers here answer with double_it (bulk_test.h). */
static int
call(pasci_bulk_pool *pool, const char *addr, uint64_t inc, int method,
    int64_t timeout_ms, pasci_wire_msg *reply)
{
	pasci_wire_builder b;
	pasco_tensor      *t = ramp(300000, 1);
	char               detail[300];
	int                rv;
	pasci_wire_builder_init(&b, (pasci_method) method);
	pasci_wire_add_tensor(&b, t, NULL);
	rv = pasci_bulk_call(
	    pool, addr, inc, &b, timeout_ms, reply, detail, sizeof(detail));
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	return rv;
}

/* Connects a plain socket to "127.0.0.1:port" and sends bytes. */
static void
send_raw(const char *addr, const void *bytes, size_t n)
{
	struct sockaddr_in a  = {.sin_family = AF_INET,
	     .sin_addr.s_addr                = htonl(INADDR_LOOPBACK),
	     .sin_port = htons((uint16_t) atoi(strrchr(addr, ':') + 1))};
	int                fd = socket(AF_INET, SOCK_STREAM, 0);
	char               buf[64];
	cr_assert(connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0);
	cr_assert(send(fd, bytes, n, MSG_NOSIGNAL) == (ssize_t) n);
	shutdown(fd, SHUT_WR);
	while (recv(fd, buf, sizeof(buf), 0) > 0) { /* until it hangs up */
	}
	close(fd);
}

Test(bulk, the_server_survives_bad_frames_and_refuses_stale_requests)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	uint8_t            huge[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
	uint8_t garbage[64] = {0, 0, 0, 0, 0, 0, 0, 40, 1, 2, 3, 4, 5, 6, 7, 8,
	    0, 0, 0, 20, 0xff, 0xee};
	PASCO_PASS(pasci_bulk_server_open(
	    &s, "127.0.0.1", 42, double_it, NULL, NULL));
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	/* a length past any frame, a header that does not parse, a frame
	 * cut short: each connection is dropped, the server keeps serving,
	 * and says so once (a warning naming the peer, then 10 s quiet) */
	int saved = test_stderr_capture();
	send_raw(pasci_bulk_server_addr(s), huge, sizeof(huge));
	send_raw(pasci_bulk_server_addr(s), garbage, sizeof(garbage));
	send_raw(pasci_bulk_server_addr(s), garbage, 20);
	bool  warned = test_stderr_wait_for("warning: bulk port ", 3000);
	char *said   = test_stderr_take(saved);
	cr_assert(warned && strstr(said, ": connection from 127.0.0.1:") &&
	              strstr(said, " dropped: "),
	    "%s", said);
	free(said);
	PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 42,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	cr_assert_eq(reply.ntensors, 1);
	expect_ramp(reply.tensors[0], 300000, 2);
	cr_assert_eq(reply.incarnation, 42);
	pasci_wire_msg_fini(&reply);
	/* stamped for another incarnation: refused, not run */
	PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 41,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	cr_assert(reply.hdr->stale_incarnation);
	cr_assert_eq(reply.ntensors, 0);
	pasci_wire_msg_fini(&reply);
	/* a deadline shorter than the handler */
	PASCO_FAIL(call(pool, pasci_bulk_server_addr(s), 42,
	               PASCI_METHOD_VAR_ASSIGN, 100, &reply),
	    PASCO_ETIMEDOUT);
	/* and the next call still works */
	PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 42,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	expect_ramp(reply.tensors[0], 300000, 2);
	pasci_wire_msg_fini(&reply);
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
	/* a closed server: cannot connect, nothing sent (callers use nng) */
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	PASCO_FAIL(
	    call(pool, "127.0.0.1:1", 42, PASCI_METHOD_VAR_READ, 1000, &reply),
	    PASCO_ENOTFOUND);
	pasci_bulk_pool_destroy(pool);
}

/* An rpc handler for requests that should have gone over bulk. */
static nng_msg *
no_rpc(void *arg, const pasci_wire_msg *req)
{
	(void) arg;
	(void) req;
	return pasci_wire_status_reply(PASCO_EINTERNAL, "not over bulk");
}

/* A call through an rpc client to the bulk server its server advertises,
 * as a worker's or the chief's variables make them. */
static int
call_server(pasci_rpc_client *c, pasci_wire_msg *reply)
{
	pasci_wire_builder b;
	pasco_tensor      *t = ramp(300000, 1); /* 1.2 MB: a big buffer */
	char               detail[300];
	int                rv;
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&b, t, NULL);
	rv =
	    pasci_bulk_call_server(c, &b, 5000, reply, detail, sizeof(detail));
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	return rv;
}

Test(bulk, an_idle_client_holds_no_big_buffers)
{
	pasci_bulk_server *bs;
	pasci_rpc_server  *rs, *plain;
	pasci_rpc_client  *c;
	pasci_wire_msg     reply;
	char               url[64], url2[64];
	size_t             nbuf, bytes;
	uint64_t           calls0 = pasci_bulk_calls_done();
	int64_t            start;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	snprintf(url2, sizeof(url2), "inproc://bulk-%d", (int) getpid());
	PASCO_PASS(pasci_bulk_server_open(
	    &bs, "127.0.0.1", 9, double_it, NULL, NULL));
	PASCO_PASS(pasci_rpc_server_open_with(&rs, url, 1, "t", no_rpc, NULL,
	    9, pasci_bulk_server_addr(bs), NULL));
	/* a server that advertises nothing: the caller must use nng */
	PASCO_PASS(pasci_rpc_server_open(&plain, url2, 1, "t", no_rpc, NULL));
	PASCO_PASS(pasci_rpc_client_open(&c, url2, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	PASCO_FAIL(call_server(c, &reply), PASCO_ENOTFOUND);
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(plain);
	/* the advertised one: over bulk, the reply in a cached buffer */
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	PASCO_PASS(call_server(c, &reply));
	cr_assert_eq(reply.ntensors, 1);
	expect_ramp(reply.tensors[0], 300000, 2);
	pasci_wire_msg_fini(&reply);
	cr_assert_eq(pasci_bulk_calls_done() - calls0, 1);
	pasci_bufcache_stats(&nbuf, &bytes);
	cr_assert_geq(nbuf, 1, "the transfer's buffers were not cached");
	/* no bulk server left (a ps's accept loop used to be the only
	 * trimmer): the cache lets go of its buffers by itself */
	pasci_rpc_client_close(c);
	pasci_rpc_server_close(rs);
	pasci_bulk_server_close(bs);
	start = pasci_now_ms();
	do {
		usleep(50 * 1000);
		pasci_bufcache_stats(&nbuf, &bytes);
	} while (nbuf > 0 && pasci_now_ms() - start < 5000);
	cr_assert_eq(nbuf, 0, "%zu big buffers (%zu bytes) held while idle",
	    nbuf, bytes);
	cr_assert_eq(bytes, 0);
}

/* Threads of this process named exactly name. */
static int
threads_named(const char *name)
{
	char           path[300], comm[32];
	int            n = 0;
	DIR           *d = opendir("/proc/self/task");
	struct dirent *e;
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL) {
		FILE *f;
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(
		    path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if ((f = fopen(path, "r")) == NULL) {
			continue;
		}
		if (fgets(comm, sizeof(comm), f) != NULL) {
			comm[strcspn(comm, "\n")] = 0;
			n += strcmp(comm, name) == 0;
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/* A TCP connection to addr ("host:port") that will send nothing. */
static int
stall(const char *addr)
{
	struct sockaddr_in a  = {.sin_family = AF_INET};
	int                fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr     = htonl(INADDR_LOOPBACK);
	a.sin_port            = htons((uint16_t) atoi(strrchr(addr, ':') + 1));
	cr_assert(
	    fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0);
	return fd;
}

Test(bulk, stalled_connections_cost_bounded_threads_for_a_bounded_time)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	int                fds[60], peak = 0;
	int64_t            start;
	setenv("PASCO_MAX_CONNECTIONS", "8", 1);
	setenv("PASCO_IDLE_TIMEOUT", "1", 1);
	PASCO_PASS(pasci_bulk_server_open(
	    &s, "127.0.0.1", 42, double_it, NULL, NULL));
	unsetenv("PASCO_MAX_CONNECTIONS");
	unsetenv("PASCO_IDLE_TIMEOUT");
	int before = open_fds();
	for (int i = 0; i < 60; i++) {
		fds[i] = stall(pasci_bulk_server_addr(s));
	}
	start = pasci_now_ms();
	while (pasci_now_ms() - start < 500) {
		int n = threads_named("pasco-bulk");
		peak  = n > peak ? n : peak;
		usleep(20 * 1000);
	}
	cr_assert_leq(peak, 8,
	    "%d connection threads for 60 stalled peers "
	    "with at most 8 allowed",
	    peak);
	cr_assert_geq(peak, 1, "no connection was served at all");
	/* none sends a request: within the idle timeout they are closed */
	start = pasci_now_ms();
	while (
	    threads_named("pasco-bulk") > 0 && pasci_now_ms() - start < 5000) {
		usleep(50 * 1000);
	}
	cr_assert_eq(threads_named("pasco-bulk"), 0,
	    "stalled connections outlived the 1 s idle timeout");
	for (int i = 0; i < 60; i++) {
		close(fds[i]);
	}
	/* their descriptors on the server's side go too, with no new
	 * connection to make the accept thread look (it looks each second) */
	start = pasci_now_ms();
	while (open_fds() > before && pasci_now_ms() - start < 3000) {
		usleep(50 * 1000);
	}
	cr_assert_eq(open_fds(), before,
	    "%d descriptors open after the stalled connections ended, %d "
	    "before",
	    open_fds(), before);
	/* and a real client is served again */
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 42,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	expect_ramp(reply.tensors[0], 300000, 2);
	pasci_wire_msg_fini(&reply);
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
}

/* Cluster authentication on bulk connections (auth.h). */

static pasci_key
bulk_key(uint8_t seed)
{
	pasci_key k = {.len = 20};
	memset(k.bytes, seed, k.len);
	return k;
}

Test(bulk, a_pool_with_the_cluster_key_is_served)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	pasci_key          k = bulk_key(3);
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 42, double_it, NULL, &k));
	PASCO_PASS(pasci_bulk_pool_create(&pool, &k));
	for (int i = 0; i < 3; i++) { /* a new connection, then reused */
		PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 42,
		    PASCI_METHOD_VAR_READ, 5000, &reply));
		expect_ramp(reply.tensors[0], 300000, 2);
		pasci_wire_msg_fini(&reply);
	}
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
}

Test(bulk, a_pool_with_a_wrong_key_or_none_is_refused_and_logged)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *wrong, *none;
	pasci_wire_msg     reply;
	pasci_key          k = bulk_key(3), w = bulk_key(4);
	char              *log;
	int                saved;
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 42, double_it, NULL, &k));
	PASCO_PASS(pasci_bulk_pool_create(&wrong, &w));
	PASCO_PASS(pasci_bulk_pool_create(&none, NULL));
	saved = test_stderr_capture();
	PASCO_FAIL(call(wrong, pasci_bulk_server_addr(s), 42,
	               PASCI_METHOD_VAR_READ, 3000, &reply),
	    PASCO_ENOTFOUND);
	cr_assert_neq(call(none, pasci_bulk_server_addr(s), 42,
	                  PASCI_METHOD_VAR_READ, 3000, &reply),
	    PASCO_OK);
	usleep(100 * 1000); /* the server's log line */
	log = test_stderr_take(saved);
	cr_assert_eq(doubled, 0, "a request without the key was answered");
	cr_assert(
	    strstr(log, "refused a bulk connection from 127.0.0.1:") != NULL,
	    "%s", log);
	free(log);
	pasci_bulk_pool_destroy(wrong);
	pasci_bulk_pool_destroy(none);
	pasci_bulk_server_close(s);
}

/* A client without the key used to read the server's key challenge as a
 * frame ("bad frame length 5782994945078023473"): it is told that the
 * server asks for the cluster key, and the server's log says what came
 * instead of the key's answer. */
Test(bulk, a_pool_without_the_key_is_told_the_server_asks_for_it)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *none;
	pasci_wire_msg     reply;
	pasci_wire_builder b;
	pasci_key          k           = bulk_key(3);
	pasco_tensor      *t           = ramp(1000, 1);
	char               detail[300] = "", *log;
	int                saved;
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 42, double_it, NULL, &k));
	PASCO_PASS(pasci_bulk_pool_create(&none, NULL));
	saved = test_stderr_capture();
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&b, t, NULL);
	cr_assert_neq(pasci_bulk_call(none, pasci_bulk_server_addr(s), 42, &b,
	                  3000, &reply, detail, sizeof(detail)),
	    PASCO_OK);
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	bool logged = test_stderr_wait_for("without the cluster key", 3000);
	log         = test_stderr_take(saved);
	cr_assert(strstr(detail, "asks for the cluster key, and this process "
	                         "has none") &&
	              !strstr(detail, "bad frame length"),
	    "%s", detail);
	cr_assert(logged &&
	              strstr(log, "refused a bulk connection from "
	                          "127.0.0.1:") &&
	              strstr(log, "a client without the cluster key"),
	    "%s", log);
	free(log);
	pasci_bulk_pool_destroy(none);
	pasci_bulk_server_close(s);
}

/* What is not a Pasco frame at all (a TLS client, an nng socket dialling
 * the bulk port) is named in the server's warning, not as a frame
 * length. */
Test(bulk, a_tls_or_nng_handshake_is_named_as_not_a_pasco_frame)
{
	static const struct {
		uint8_t     bytes[16];
		const char *want;
	} cases[] = {
	    {{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03,
	         0x03},
	        "not a Pasco frame: a TLS handshake"},
	    {{0x00, 'S', 'P', 0x00, 0x00, 0x30, 0x00, 0x00},
	        "not a Pasco frame: an nng (SP) handshake"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pasci_bulk_server *s;
		PASCO_PASS(pasci_bulk_server_open(
		    &s, "127.0.0.1", 42, double_it, NULL, NULL));
		int saved = test_stderr_capture();
		send_raw(pasci_bulk_server_addr(s), cases[i].bytes,
		    sizeof(cases[i].bytes));
		bool  warned = test_stderr_wait_for(cases[i].want, 3000);
		char *said   = test_stderr_take(saved);
		cr_assert(warned && !strstr(said, "bad frame length"),
		    "want '%s' in: %s", cases[i].want, said);
		free(said);
		pasci_bulk_server_close(s);
	}
}

Test(bulk, an_unauthenticated_connection_gets_no_answer_and_is_closed)
{
	pasci_bulk_server *s;
	pasci_key          k = bulk_key(3);
	pasci_wire_builder b;
	pasco_tensor      *t = ramp(1000, 1);
	uint8_t            buf[4096];
	size_t             got = 0;
	ssize_t            n;
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 42, double_it, NULL, &k));
	struct sockaddr_in a  = {.sin_family = AF_INET,
	     .sin_addr.s_addr                = htonl(INADDR_LOOPBACK),
	     .sin_port                       = htons(
	                               (uint16_t) atoi(strrchr(pasci_bulk_server_addr(s), ':') + 1))};
	int                fd = socket(AF_INET, SOCK_STREAM, 0);
	pasci_bulk_link    link;
	cr_assert(connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0);
	pasci_bulk_link_init(&link, fd, false);
	/* the challenge */
	cr_assert_eq(recv(fd, buf, 8 + PASCI_AUTH_NONCE, MSG_WAITALL),
	    8 + PASCI_AUTH_NONCE);
	cr_assert_eq(memcmp(buf, PASCI_BULK_AUTH_MAGIC, 8), 0);
	/* a well-formed request frame, as if no handshake were needed */
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&b, t, NULL);
	PASCO_PASS(
	    pasci_bulk_send_builder(&link, &b, 42, pasci_now_ms() + 5000));
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	while ((n = recv(fd, buf + got, sizeof(buf) - got, 0)) > 0) {
		got += (size_t) n; /* until the server hangs up */
	}
	pasci_bulk_link_fini(&link);
	cr_assert_eq(got, 0, "%zu bytes came back", got);
	cr_assert_eq(doubled, 0, "an unauthenticated frame was answered");
	pasci_bulk_server_close(s);
}

static int
count_of(const char *text, const char *what)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, what)) != NULL; p++) {
		n++;
	}
	return n;
}

/* 600 connections that hang up before proving the key wrote 603 log
 * lines naming the peer "?:0": refusals are logged at most every 10 s,
 * naming the real address (taken at accept, while the peer is there). */
Test(bulk, refused_handshakes_are_rate_limited_and_name_the_peer)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	pasci_key          k = bulk_key(3);
	char              *log;
	int                saved, lines = 0;
	int64_t            t0;
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 42, double_it, NULL, &k));
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_addr.s_addr                = htonl(INADDR_LOOPBACK),
	    .sin_port                       = htons(
	                              (uint16_t) atoi(strrchr(pasci_bulk_server_addr(s), ':') + 1))};
	saved                = test_stderr_capture();
	for (int i = 0; i < 600; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		cr_assert(connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0);
		close(fd); /* before the handshake */
	}
	/* the server still serves a member; its refusals are in the log
	 * within 2 s (or at once, many of them, when not rate-limited) */
	PASCO_PASS(pasci_bulk_pool_create(&pool, &k));
	PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 42,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	pasci_wire_msg_fini(&reply);
	t0 = pasci_now_ms();
	while (pasci_now_ms() - t0 < 2000 && lines < 50) {
		usleep(50 * 1000);
		fflush(stderr);
		/* log lines are some 100 bytes: a rough count will do */
		lines = (int) lseek(STDERR_FILENO, 0, SEEK_END) / 100;
	}
	log   = test_stderr_take(saved);
	lines = count_of(log, "refused a bulk connection");
	cr_assert(lines >= 1 && lines <= 2,
	    "%d refusal lines for 600 connections", lines);
	cr_assert(
	    strstr(log, "refused a bulk connection from 127.0.0.1:") != NULL,
	    "%s", log);
	cr_assert(strstr(log, "?:0") == NULL, "a peer named ?:0: %s", log);
	free(log);
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
}

/* Strangers who connect to the bulk port and never finish the handshake
 * held every slot for its 10 s: with a key they are counted apart from
 * members, the oldest shut down to make room, so a member is served. */
Test(bulk, strangers_in_the_handshake_do_not_keep_a_member_out)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	pasci_key          k = bulk_key(3);
	int                fds[20];
	int64_t            t0;
	setenv("PASCO_MAX_CONNECTIONS", "8", 1);
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 42, double_it, NULL, &k));
	unsetenv("PASCO_MAX_CONNECTIONS");
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_addr.s_addr                = htonl(INADDR_LOOPBACK),
	    .sin_port                       = htons(
	                              (uint16_t) atoi(strrchr(pasci_bulk_server_addr(s), ':') + 1))};
	for (int i = 0; i < 20; i++) { /* connect, then say nothing */
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		cr_assert(
		    connect(fds[i], (struct sockaddr *) &a, sizeof(a)) == 0);
	}
	usleep(100 * 1000); /* accepted, waiting in the handshake */
	t0 = pasci_now_ms();
	PASCO_PASS(pasci_bulk_pool_create(&pool, &k));
	PASCO_PASS(call(pool, pasci_bulk_server_addr(s), 42,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	expect_ramp(reply.tensors[0], 300000, 2);
	pasci_wire_msg_fini(&reply);
	cr_assert_lt(pasci_now_ms() - t0, 3000);
	pasci_bulk_pool_destroy(pool);
	for (int i = 0; i < 20; i++) {
		close(fds[i]);
	}
	pasci_bulk_server_close(s);
}

/* A step's calls to one ps travel as one request: reads of 4 variables
 * (2 on each ps, any size) are 2 bulk calls, so are their applies. */
Test(bulk, a_steps_calls_to_one_ps_travel_as_one_request)
{
	pasco_optimizer sgd = pasco_sgd(1.0, 0, false);
	pasco_variable *v[4];
	pasco_tensor   *init[4], *grads[4], *out[4];
	char            name[8];
	start_tcp(2, NULL); /* round-robin: 0 and 2 on ps 0, 1 and 3 on 1 */
	for (int k = 0; k < 4; k++) {
		init[k] = ramp(k == 0 ? 300000 : 3 + k, 1); /* big and small */
		grads[k] = ramp(init[k]->count, 0.5f);
		snprintf(name, sizeof(name), "v%d", k);
		PASCO_PASS(
		    pasco_variable_create(&v[k], strategy, name, init[k]));
		cr_assert_eq(pasco_variable_ps_task(v[k]), k % 2);
	}
	uint64_t calls0 = pasci_bulk_calls_done();
	PASCO_PASS(pasco_variable_read_all(4, v, out));
	cr_assert_eq(pasci_bulk_calls_done() - calls0, 2,
	    "4 reads on 2 ps took %llu requests",
	    (unsigned long long) (pasci_bulk_calls_done() - calls0));
	for (int k = 0; k < 4; k++) {
		expect_ramp(out[k], init[k]->count, 1);
		pasco_tensor_release(out[k]);
	}
	PASCO_PASS(pasco_variable_apply_gradients(4, v, &sgd, grads));
	cr_assert_eq(pasci_bulk_calls_done() - calls0, 4);
	PASCO_PASS(pasco_variable_read_all(4, v, out));
	for (int k = 0; k < 4; k++) { /* i - 0.5 i */
		expect_ramp(out[k], init[k]->count, 0.5f);
		pasco_tensor_release(out[k]);
	}
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(init[k]);
		pasco_tensor_release(grads[k]);
		pasco_variable_free(v[k]);
	}
	stop_tcp(2);
}

/* The library's train step under ASP takes its global step with its
 * reads: with every variable and the step on one ps, a step is 2
 * requests (the reads and the fetch-add, then the applies), not 3, and
 * the global step still counts each step once. */
Test(bulk, a_train_step_takes_its_global_step_with_its_reads)
{
	pasco_layer     dense = pasco_layer_dense(2, PASCO_ACT_LINEAR);
	pasco_model    *m;
	pasco_variable *gs;
	pasco_tensor   *x, *y, *step;
	pasco_optimizer sgd = pasco_sgd(0.1, 0, false);
	pasco_loss      mse;
	start_tcp(1, NULL);
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, &dense, 7));
	PASCO_PASS(pasco_model_create_variables(m, strategy));
	PASCO_PASS(pasco_strategy_global_step(strategy, &gs));
	PASCO_PASS(pasco_loss_from_name("mse", false, &mse));
	sgd.iterations  = gs;
	x               = ramp(12, 0.25f);
	y               = ramp(8, 0.5f);
	x->rank         = 2; /* [4, 3] and [4, 2], views of the ramps */
	x->shape[0]     = 4;
	x->shape[1]     = 3;
	y->rank         = 2;
	y->shape[0]     = 4;
	y->shape[1]     = 2;
	uint64_t calls0 = pasci_bulk_calls_done();
	for (int i = 0; i < 3; i++) {
		pasco_tape *tp;
		double      loss;
		PASCO_PASS(pasco_tape_alloc(&tp, true, 0));
		cr_assert_eq(
		    pasco_model_train_step(m, tp, &x, y, mse, &sgd, &loss), 0,
		    "%s", pasco_tape_message(tp));
		pasco_tape_free(tp);
	}
	cr_assert_eq(pasci_bulk_calls_done() - calls0, 6,
	    "3 steps took %llu requests",
	    (unsigned long long) (pasci_bulk_calls_done() - calls0));
	PASCO_PASS(pasco_variable_read(gs, &step));
	cr_assert_eq(pasco_tensor_get(step, 0), 3);
	pasco_tensor_release(step);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_variable_free(gs);
	pasco_model_free(m);
	stop_tcp(1);
}

/* A task's idle time (its chief timeout, node/lifecycle.c) counts the
 * requests on its bulk port: a ps whose traffic all goes there is not
 * idle while it is used. */
Test(bulk, requests_on_the_bulk_port_keep_a_task_from_idling)
{
	pasci_rpc_server  *rpc;
	pasci_bulk_server *bs;
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	char               url[64];
	snprintf(url, sizeof(url), "inproc://idle-%d", (int) getpid());
	PASCO_PASS(pasci_rpc_server_open(&rpc, url, 1, "idle", no_rpc, NULL));
	PASCO_PASS(pasci_bulk_server_open(
	    &bs, "127.0.0.1", 5, double_it, NULL, NULL));
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	usleep(400 * 1000);
	cr_assert_geq(pasci_rpc_server_idle_ms(rpc), 400);
	PASCO_PASS(call(pool, pasci_bulk_server_addr(bs), 5,
	    PASCI_METHOD_VAR_READ, 5000, &reply));
	pasci_wire_msg_fini(&reply);
	cr_assert_lt(pasci_rpc_server_idle_ms(rpc), 200,
	    "idle for %lld ms after a bulk request",
	    (long long) pasci_rpc_server_idle_ms(rpc));
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(bs);
	pasci_rpc_server_close(rpc);
}

/* Lookups of "*.stuck.test" get no answer until stuck_release (then
 * fail); others are getaddrinfo's. */
static int
stuck_lookup(const char *host, const char *port, const struct addrinfo *hints,
    struct addrinfo **res)
{
	return stuck_wait(host) ? EAI_AGAIN
	                        : getaddrinfo(host, port, hints, res);
}

Test(bulk, a_lookup_that_gets_no_answer_fails_the_connection_at_its_deadline)
{
	pasci_bulk_pool   *pool;
	pasci_wire_msg     reply;
	pasci_wire_builder b;
	char               detail[300];
	int64_t            t0;
	int                rv;

	pasci_resolve_set_lookup(stuck_lookup);
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	t0 = pasci_now_ms();
	/* the connection's deadline is the call's 1 s (under the 3 s for
	 * connecting): nothing sent, so the caller may go over nng */
	rv = pasci_bulk_call(pool, "ps0.stuck.test:2222", 42, &b, 1000, &reply,
	    detail, sizeof(detail));
	int64_t took = pasci_now_ms() - t0;
	pasci_wire_builder_fini(&b);
	cr_assert_eq(rv, PASCO_ENOTFOUND, "%s: %s", pasco_errname(rv), detail);
	cr_assert(
	    took >= 900 && took < 2000, "took %lld ms", (long long) took);
	cr_assert(strstr(detail, "'ps0.stuck.test'") != NULL &&
	              strstr(detail, "no answer within") != NULL &&
	              strstr(detail, "ps0.stuck.test:2222") != NULL,
	    "%s", detail);
	/* and a name that resolves is not held up by the stuck one */
	PASCO_FAIL(
	    call(pool, "localhost:1", 42, PASCI_METHOD_VAR_READ, 1000, &reply),
	    PASCO_ENOTFOUND);
	cr_assert_lt(pasci_now_ms() - t0, 3000);
	pasci_bulk_pool_destroy(pool);
	stuck_release();
	pasci_resolve_set_lookup(NULL);
}
