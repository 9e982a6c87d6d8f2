/*
 * Batches of bulk requests (net/bulk_client.c, pasci_bulk_batch_start /
 * _send): a step's requests to several servers are kept while they are
 * begun and written together, so that no server is woken before the last
 * is sent; each then gets its own reply. A write that fails on a pooled
 * connection the server closed meanwhile is made again on a fresh one; a
 * write that fails on a fresh one is its finish's error, and wait_any
 * returns it at once. Servers: an RPC server advertising a bulk server
 * beside it, the bulk handler answering with the request's tensors
 * doubled (bulk_test.h), over local links (Unix sockets, shared memory).
 */
#include "bulk_test.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bulk.h"
#include "bulk_frame.h"
#include "rpc.h"
#include "tensor_impl.h"
#include "util.h"

TestSuite(bulk_batch, .timeout = 60);

#define NSERVERS 3

typedef struct server {
	pasci_rpc_server  *rpc;
	pasci_bulk_server *bulk;
	pasci_rpc_client  *client;
} server;

static nng_msg *
no_rpc(void *arg, const pasci_wire_msg *req)
{
	(void) arg;
	(void) req;
	return NULL;
}

/* A bulk server on loopback, its RPC server advertising it, and a client
 * of the RPC server, connected. */
static void
server_start_with(server *s, pasci_bulk_handler handler)
{
	char     url[64];
	uint64_t inc = pasci_random_u64();
	setenv("PASCO_BULK_LOCAL", "1", 1);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	PASCO_PASS(pasci_bulk_server_open(
	    &s->bulk, "127.0.0.1", inc, handler, NULL, NULL));
	PASCO_PASS(pasci_rpc_server_open_with(&s->rpc, url, 1, "t", no_rpc,
	    NULL, inc, pasci_bulk_server_advert(s->bulk), NULL));
	PASCO_PASS(pasci_rpc_client_open(&s->client, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(s->client, 5000));
}

static void
server_start(server *s)
{
	server_start_with(s, double_it);
}

/* Doubles the request's tensors after hdr.step milliseconds. */
static nng_msg *
doubled_after_step(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	(void) arg;
	usleep((useconds_t) req->hdr->step * 1000);
	add_doubled(req, b);
	return NULL;
}

static void
server_stop(server *s)
{
	pasci_rpc_client_close(s->client);
	pasci_bulk_server_close(s->bulk);
	pasci_rpc_server_close(s->rpc);
}

/* A request carrying a ramp of n floats (0, k, 2k, ...). */
static void
request_init(pasci_wire_builder *b, int64_t n, float k)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		((float *) t->data)[i] = (float) i * k;
	}
	pasci_wire_builder_init(b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(b, t, NULL);
	pasco_tensor_release(t);
}

/* Finishes p and checks its reply: the ramp of n floats by k, doubled. */
static void
expect_doubled(pasci_bulk_pending *p, int64_t n, float k)
{
	pasci_wire_msg reply;
	char           detail[300];
	PASCO_PASS(pasci_bulk_finish(p, &reply, detail, sizeof(detail)));
	cr_assert_eq(reply.ntensors, 1);
	cr_assert_eq(reply.tensors[0]->count, n);
	for (int64_t i = 0; i < n; i++) {
		float got = ((const float *) reply.tensors[0]->data)[i];
		cr_assert(got == 2 * (float) i * k, "element %lld: %g",
		    (long long) i, (double) got);
	}
	pasci_wire_msg_fini(&reply);
}

/* One request to s, begun and finished, outside any batch: its pooled
 * connection is up, its region passed. */
static void
warm(server *s, int64_t n)
{
	pasci_wire_builder b;
	pasci_bulk_pending p;
	char               detail[300];
	request_init(&b, n, 1);
	PASCO_PASS(
	    pasci_bulk_begin(s->client, &b, 5000, &p, detail, sizeof(detail)));
	pasci_wire_builder_fini(&b);
	expect_doubled(&p, n, 1);
}

/* Whether the bulk handlers answered more than `served` requests within
 * ms milliseconds. */
static bool
served_within(int served, int ms)
{
	int64_t until = pasci_now_ms() + ms;
	while (pasci_now_ms() < until) {
		if (__atomic_load_n(&doubled, __ATOMIC_SEQ_CST) > served) {
			return true;
		}
		usleep(5 * 1000);
	}
	return __atomic_load_n(&doubled, __ATOMIC_SEQ_CST) > served;
}

/* Sizes: one inline frame (under 16 KB) and two in the link's region. */
static const int64_t SIZES[NSERVERS] = {100, 8192, 300000};

Test(bulk_batch, a_batch_wakes_no_server_before_its_last_request_is_written)
{
	server             s[NSERVERS];
	pasci_bulk_pending p[NSERVERS], *pp[NSERVERS];
	pasci_wire_builder b;
	char               detail[300];
	int                served;
	for (int i = 0; i < NSERVERS; i++) {
		server_start(&s[i]);
		warm(&s[i], SIZES[i]);
		pp[i] = &p[i];
	}
	served = __atomic_load_n(&doubled, __ATOMIC_SEQ_CST);
	pasci_bulk_batch_start();
	for (int i = 0; i < NSERVERS; i++) {
		request_init(&b, SIZES[i], (float) (i + 2));
		PASCO_PASS(pasci_bulk_begin(
		    s[i].client, &b, 5000, &p[i], detail, sizeof(detail)));
		pasci_wire_builder_fini(&b); /* what is kept is a copy */
	}
	/* begun, not written: no server may see one yet (written one by
	 * one, each would be answered within these 300 ms) */
	cr_assert(!served_within(served, 300),
	    "a server answered a request of the batch before the batch was "
	    "written");
	pasci_bulk_batch_send(pp, NSERVERS);
	for (int left = NSERVERS; left > 0; left--) {
		size_t k = pasci_bulk_wait_any(pp, (size_t) left);
		int    i = (int) (pp[k] - p);
		expect_doubled(pp[k], SIZES[i], (float) (i + 2));
		pp[k]        = pp[left - 1];
		pp[left - 1] = NULL;
	}
	cr_assert_eq(
	    __atomic_load_n(&doubled, __ATOMIC_SEQ_CST), served + NSERVERS);
	for (int i = 0; i < NSERVERS; i++) {
		server_stop(&s[i]);
	}
}

/* Waits (5 s at most) until the server has closed fd: it reads as ended. */
static void
wait_closed_by_server(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 5000), 1,
	    "the server kept an idle connection past its idle timeout");
}

Test(bulk_batch,
    a_pooled_connection_closed_before_the_batch_is_written_is_redialed)
{
	server             s[2];
	pasci_bulk_pending p[2], *pp[2] = {&p[0], &p[1]};
	pasci_wire_builder b;
	char               detail[300];
	const int64_t      n[2] = {300000, 100}; /* in the region, inline */
	setenv("PASCO_IDLE_TIMEOUT", "1", 1); /* read by the servers' open */
	for (int i = 0; i < 2; i++) {
		server_start(&s[i]);
		warm(&s[i], n[i]);
	}
	unsetenv("PASCO_IDLE_TIMEOUT");
	pasci_bulk_batch_start();
	for (int i = 0; i < 2; i++) {
		request_init(&b, n[i], 3);
		PASCO_PASS(pasci_bulk_begin(
		    s[i].client, &b, 5000, &p[i], detail, sizeof(detail)));
		pasci_wire_builder_fini(&b);
	}
	for (int i = 0; i < 2; i++) { /* both taken from the pool */
		wait_closed_by_server(p[i].fd);
	}
	pasci_bulk_batch_send(pp, 2);
	for (int i = 0; i < 2; i++) {
		expect_doubled(&p[i], n[i], 3);
	}
	for (int i = 0; i < 2; i++) {
		server_stop(&s[i]);
	}
}

Test(bulk_batch, a_write_failing_on_a_fresh_connection_is_its_finishs_error)
{
	server             s[2];
	pasci_bulk_pending p[2], *pp[2] = {&p[0], &p[1]};
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	char               detail[300];
	int64_t            t0;
	for (int i = 0; i < 2; i++) {
		server_start(&s[i]);
	}
	pasci_bulk_batch_start();
	for (int i = 0; i < 2; i++) { /* fresh connections: nothing pooled */
		request_init(&b, 100, 1);
		PASCO_PASS(pasci_bulk_begin(
		    s[i].client, &b, 5000, &p[i], detail, sizeof(detail)));
		pasci_wire_builder_fini(&b);
	}
	pasci_bulk_server_close(s[0].bulk); /* its connections shut down */
	s[0].bulk = NULL;
	wait_closed_by_server(p[0].fd);
	pasci_bulk_batch_send(pp, 2);
	t0 = pasci_now_ms();
	cr_assert_eq(pasci_bulk_wait_any(pp, 2), 0,
	    "wait_any did not return the request whose write failed");
	cr_assert_lt(pasci_now_ms() - t0, 1000, "wait_any waited %lld ms",
	    (long long) (pasci_now_ms() - t0));
	PASCO_FAIL(pasci_bulk_finish(&p[0], &reply, detail, sizeof(detail)),
	    PASCO_EUNAVAILABLE);
	cr_assert(
	    strstr(detail, "lost a bulk request to") != NULL, "%s", detail);
	expect_doubled(&p[1], 100, 1);
	for (int i = 0; i < 2; i++) {
		server_stop(&s[i]);
	}
}

/* This thread's voluntary context switches (its waits) so far. */
static long
waits_so_far(void)
{
	struct rusage u;
	cr_assert_eq(getrusage(RUSAGE_THREAD, &u), 0);
	return u.ru_nvcsw;
}

Test(bulk_batch, replies_that_come_one_by_one_are_waited_for_with_one_wake_up)
{
	server             s[NSERVERS];
	pasci_bulk_pending p[NSERVERS], *pp[NSERVERS];
	pasci_wire_builder b;
	struct pollfd      fds[NSERVERS];
	char               detail[300];
	long               waits;
	if (!pasci_bulk_ring_defers()) {
		cr_skip_test("io_uring here does not defer wake-ups (Linux "
		             "6.1+): replies are waited for one by one");
	}
	for (int i = 0; i < NSERVERS; i++) {
		server_start_with(&s[i], doubled_after_step);
		pp[i] = &p[i];
	}
	pasci_bulk_batch_start();
	for (int i = 0; i < NSERVERS; i++) {
		request_init(&b, 100, 1); /* small: no big buffers meanwhile */
		b.hdr.step = 80 * i; /* answered 0, 80 and 160 ms from now */
		PASCO_PASS(pasci_bulk_begin(
		    s[i].client, &b, 5000, &p[i], detail, sizeof(detail)));
		pasci_wire_builder_fini(&b);
	}
	pasci_bulk_batch_send(pp, NSERVERS);
	waits = waits_so_far();
	pasci_bulk_wait_all(pp, NSERVERS);
	waits = waits_so_far() - waits;
	/* it returned once all three had come ... */
	for (int i = 0; i < NSERVERS; i++) {
		fds[i] = (struct pollfd){.fd = p[i].fd, .events = POLLIN};
	}
	cr_assert_eq(poll(fds, NSERVERS, 0), NSERVERS,
	    "wait_all returned before every reply had come");
	/* ... woken once (a wait per reply would be 3; one more allowed
	 * for a lock of the kernel's the servers' threads held) */
	cr_assert_leq(
	    waits, 2, "%ld waits for 3 replies that came 80 ms apart", waits);
	for (int i = 0; i < NSERVERS; i++) {
		expect_doubled(&p[i], 100, 1);
		server_stop(&s[i]);
	}
}

Test(bulk_batch, a_wait_for_all_replies_ends_at_the_deadline)
{
	server             s[2];
	pasci_bulk_pending p[2], *pp[2] = {&p[0], &p[1]};
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	char               detail[300];
	int64_t            t0;
	for (int i = 0; i < 2; i++) {
		server_start_with(&s[i], doubled_after_step);
	}
	pasci_bulk_batch_start();
	for (int i = 0; i < 2; i++) {
		request_init(&b, 100, 1);
		b.hdr.step = i == 0 ? 0 : 1500; /* ps 1 answers too late */
		PASCO_PASS(pasci_bulk_begin(
		    s[i].client, &b, 300, &p[i], detail, sizeof(detail)));
		pasci_wire_builder_fini(&b);
	}
	pasci_bulk_batch_send(pp, 2);
	t0 = pasci_now_ms();
	pasci_bulk_wait_all(pp, 2);
	cr_assert_lt(pasci_now_ms() - t0, 1000,
	    "waited %lld ms for a reply due at a 300 ms deadline",
	    (long long) (pasci_now_ms() - t0));
	expect_doubled(&p[0], 100, 1);
	PASCO_FAIL(pasci_bulk_finish(&p[1], &reply, detail, sizeof(detail)),
	    PASCO_ETIMEDOUT);
	/* and the ring waits again after its polls were removed */
	pasci_bulk_batch_start();
	request_init(&b, 100, 1);
	PASCO_PASS(pasci_bulk_begin(
	    s[0].client, &b, 5000, &p[0], detail, sizeof(detail)));
	pasci_wire_builder_fini(&b);
	request_init(&b, 100, 2);
	PASCO_PASS(pasci_bulk_begin(
	    s[1].client, &b, 5000, &p[1], detail, sizeof(detail)));
	pasci_wire_builder_fini(&b);
	pasci_bulk_batch_send(pp, 2);
	pasci_bulk_wait_all(pp, 2);
	expect_doubled(&p[0], 100, 1);
	expect_doubled(&p[1], 100, 2);
	for (int i = 0; i < 2; i++) {
		server_stop(&s[i]);
	}
}
