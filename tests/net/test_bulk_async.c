/*
 * Calls that do not wait, over bulk links (net/bulk_async.c): the way the
 * coordinator sends closures. An RPC server advertising a bulk server
 * beside it, both answering with the request's tensors doubled after
 * sleeping hdr.step milliseconds; each call's completion counted, so
 * that "exactly once" is checked after the late replies had time to
 * come. Then a worker's bulk port against closures from another chief,
 * and closures from a real coordinator over it.
 */
#include "bulk_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bulk.h"
#include "chief.h"
#include "pasco.h"
#include "rpc.h"
#include "tensor_impl.h"
#include "util.h"

TestSuite(bulk_async, .timeout = 60);

static int served_rpc, served_bulk; /* atomic */

/* The request's f32 tensors doubled, after hdr.step ms. */
static void
doubled_later(const pasci_wire_msg *req, pasci_wire_builder *b)
{
	usleep((useconds_t) req->hdr->step * 1000);
	add_doubled(req, b);
}

static nng_msg *
bulk_handler(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	(void) arg;
	__atomic_add_fetch(&served_bulk, 1, __ATOMIC_SEQ_CST);
	doubled_later(req, b);
	return NULL;
}

static nng_msg *
rpc_handler(void *arg, const pasci_wire_msg *req)
{
	pasci_wire_builder b;
	nng_msg           *reply = NULL;
	(void) arg;
	__atomic_add_fetch(&served_rpc, 1, __ATOMIC_SEQ_CST);
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	doubled_later(req, &b);
	PASCO_PASS(pasci_wire_encode(&b, &reply));
	pasci_wire_builder_fini(&b);
	return reply;
}

static pasci_rpc_server  *rpc;
static pasci_bulk_server *bulk;
static pasci_rpc_client  *client;

/* The servers on loopback (with a bulk port when with_bulk), a client
 * connected to them. */
static void
start(bool with_bulk)
{
	char     url[64];
	uint64_t inc = pasci_random_u64();
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	bulk = NULL;
	if (with_bulk) {
		PASCO_PASS(pasci_bulk_server_open(
		    &bulk, "127.0.0.1", inc, bulk_handler, NULL, NULL));
	}
	PASCO_PASS(pasci_rpc_server_open_with(&rpc, url, 2, "t", rpc_handler,
	    NULL, inc, bulk != NULL ? pasci_bulk_server_advert(bulk) : NULL,
	    NULL));
	PASCO_PASS(pasci_rpc_client_open(&client, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(client, 5000));
}

static void
stop(void)
{
	pasci_rpc_client_close(client);
	pasci_bulk_server_close(bulk);
	pasci_rpc_server_close(rpc);
	client = NULL;
	bulk   = NULL;
	rpc    = NULL;
}

/* One call's completions. */
typedef struct outcome {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int             calls; /* done ran this often */
	int             err;
	int             status; /* the reply's */
	float           value;  /* the reply's first element */
	char            detail[300];
} outcome;

static void
outcome_init(outcome *o)
{
	memset(o, 0, sizeof(*o));
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
}

static void
done(void *arg, int err, pasci_wire_msg *reply, const char *detail)
{
	outcome *o = arg;
	pthread_mutex_lock(&o->mu);
	o->calls++;
	o->err = err;
	snprintf(o->detail, sizeof(o->detail), "%s", detail);
	if (reply != NULL) {
		o->status = reply->hdr->status;
		if (o->status != 0) {
			snprintf(o->detail, sizeof(o->detail), "%s",
			    reply->hdr->error);
		}
		o->value = reply->ntensors > 0
		               ? ((const float *) reply->tensors[0]->data)[0]
		               : -1;
		pasci_wire_msg_fini(reply);
	}
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

/* Waits (at most 10 s) for o's first completion; returns its err. */
static int
wait_done(outcome *o)
{
	int64_t until = pasci_now_ms() + 10000;
	pthread_mutex_lock(&o->mu);
	while (o->calls == 0 && pasci_now_ms() < until) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&o->cv, &o->mu, &ts);
	}
	cr_assert_eq(o->calls, 1, "the call was not completed in 10 s");
	pthread_mutex_unlock(&o->mu);
	return o->err;
}

/* A request of one f32 element x, answered after sleep_ms. */
static nng_msg *
request(float x, int64_t sleep_ms)
{
	pasci_wire_builder b;
	nng_msg           *m;
	int64_t            one = 1;
	pasco_tensor      *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &one));
	((float *) t->data)[0] = x;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.step = sleep_ms;
	pasci_wire_add_tensor(&b, t, NULL);
	PASCO_PASS(pasci_wire_encode(&b, &m));
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	return m;
}

/* Waits (at most 400 ms: the reactor's tick, twice) until fewer than fds
 * descriptors are open: a link closed. */
static void
expect_fewer_fds(int fds, const char *what)
{
	int64_t until = pasci_now_ms() + 400;
	while (open_fds() >= fds && pasci_now_ms() < until) {
		usleep(10 * 1000);
	}
	cr_assert_lt(open_fds(), fds, "%s", what);
}

/* Calls with x (answered at once) and expects 2x back. */
static void
expect_doubled(float x)
{
	outcome o;
	outcome_init(&o);
	pasci_rpc_call_fast(client, request(x, 0), 5000, done, &o);
	cr_assert_eq(wait_done(&o), 0, "%s", o.detail);
	cr_assert_float_eq(o.value, 2.0f * x, 0);
}

Test(bulk_async, a_call_goes_over_the_bulk_port_and_completes_once)
{
	outcome o;
	start(true);
	int rpc0 = served_rpc, bulk0 = served_bulk;
	for (int i = 1; i <= 20; i++) { /* the same link, reused */
		outcome_init(&o);
		pasci_rpc_call_fast(
		    client, request((float) i, 0), 5000, done, &o);
		cr_assert_eq(wait_done(&o), 0, "%s", o.detail);
		cr_assert_float_eq(o.value, 2.0f * (float) i, 0);
	}
	usleep(100 * 1000);
	cr_assert_eq(o.calls, 1);
	cr_assert_eq(served_bulk - bulk0, 20);
	cr_assert_eq(served_rpc, rpc0, "%d over nng", served_rpc - rpc0);
	stop();
}

Test(bulk_async, without_a_bulk_port_or_with_the_switch_off_it_goes_over_nng)
{
	start(false);
	int bulk0 = served_bulk;
	expect_doubled(3);
	stop();

	start(true);
	setenv("PASCO_BULK_CLOSURES", "0", 1);
	expect_doubled(4);
	unsetenv("PASCO_BULK_CLOSURES");
	cr_assert_eq(served_bulk, bulk0);
	stop();
}

Test(bulk_async, a_deadline_fails_the_call_once_and_its_late_reply_is_dropped)
{
	outcome o;
	start(true);
	expect_doubled(1); /* the reactor and a link, made once */
	int fds = open_fds();
	outcome_init(&o);
	pasci_rpc_call_fast(client, request(1, 600), 100, done, &o);
	cr_assert_eq(wait_done(&o), PASCO_ETIMEDOUT, "%s", o.detail);
	cr_assert(strstr(o.detail, "deadline") != NULL, "%s", o.detail);
	/* its link is closed within the reactor's tick, not kept for a
	 * reply nobody waits for */
	expect_fewer_fds(fds, "the timed-out call's link is open");
	usleep(700 * 1000); /* its reply had time to come */
	cr_assert_eq(o.calls, 1);
	expect_doubled(5);
	stop();
}

Test(bulk_async, an_abandoned_call_completes_at_once_and_its_link_is_closed)
{
	outcome o;
	start(true);
	expect_doubled(1); /* the reactor and a link, made once */
	int fds = open_fds();
	outcome_init(&o);
	pasci_rpc_call_fast(client, request(2, 500), 0, done, &o);
	usleep(50 * 1000);
	pasci_rpc_client_abandon(client, PASCO_ECANCELLED, "stopping");
	cr_assert_eq(wait_done(&o), PASCO_ECANCELLED, "%s", o.detail);
	cr_assert_str_eq(o.detail, "stopping");
	/* the link in flight is closed within the reactor's tick, before
	 * its reply, which is never delivered */
	expect_fewer_fds(fds, "the abandoned call's link is open");
	usleep(600 * 1000);
	cr_assert_eq(o.calls, 1);
	stop();
}

Test(bulk_async, a_server_lost_mid_call_fails_it_once_as_unavailable)
{
	outcome o;
	start(true);
	outcome_init(&o);
	pasci_rpc_call_fast(client, request(1, 400), 0, done, &o);
	usleep(100 * 1000);
	pasci_bulk_server_close(
	    bulk); /* both ports go, as a killed worker's */
	pasci_rpc_server_close(rpc);
	bulk = NULL;
	rpc  = NULL;
	cr_assert_eq(wait_done(&o), PASCO_EUNAVAILABLE, "%s", o.detail);
	usleep(600 * 1000);
	cr_assert_eq(o.calls, 1);
	stop();
}

Test(bulk_async, a_client_closed_with_a_call_in_flight_fails_it_as_closed)
{
	outcome o;
	start(true);
	outcome_init(&o);
	pasci_rpc_call_fast(client, request(1, 2500), 0, done, &o);
	usleep(100 * 1000);
	pasci_rpc_client_close(client); /* waits 1 s for it, then fails it */
	client = NULL;
	cr_assert_eq(o.calls, 1); /* as its own calls: the connection goes */
	cr_assert(o.err == PASCO_ECLOSED || o.err == PASCO_EUNAVAILABLE,
	    "%d: %s", o.err, o.detail);
	stop();
}

/* A RUN of function fn naming the chief of incarnation chief. */
static nng_msg *
run_from(const char *fn, uint64_t chief)
{
	pasci_wire_builder b;
	nng_msg           *m;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.name              = (char *) fn;
	b.hdr.chief_incarnation = chief;
	b.hdr.want_result       = true;
	PASCO_PASS(pasci_wire_encode(&b, &m));
	pasci_wire_builder_fini(&b);
	return m;
}

PASCO_FUNCTION(bulk_async_seven)
{
	int64_t       one = 1;
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &one));
	((float *) t->data)[0] = 7;
	pasco_call_return(call, pasco_value_tensor(t));
	return PASCO_OK;
}

Test(bulk_async, a_workers_bulk_port_runs_closures_of_its_chief_alone)
{
	pasco_cluster    *cl;
	pasco_server     *w;
	pasci_rpc_client *c;
	pasci_chief me = {.name = "tcp://the-chief:1", .incarnation = 77};
	char        json[256], err[256], url[64];
	int         port = test_free_port();
	outcome     o;
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"worker\": [\"127.0.0.1:%d\"]}}", port);
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	PASCO_PASS(pasco_cluster_parse_json(&cl, json, err, sizeof(err)));
	PASCO_PASS(pasco_server_start(&w, cl, PASCO_ROLE_WORKER, 0));
	PASCO_PASS(pasci_rpc_client_open_as(&c, url, NULL, NULL, NULL, &me));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	uint64_t calls = pasci_bulk_calls_done();

	outcome_init(&o); /* its chief: run */
	pasci_rpc_call_fast(
	    c, run_from("bulk_async_seven", 77), 5000, done, &o);
	cr_assert_eq(wait_done(&o), 0, "%s", o.detail);
	cr_assert_eq(o.status, 0, "%s", o.detail);
	cr_assert_float_eq(o.value, 7.0f, 0);
	cr_assert_eq(pasci_bulk_calls_done() - calls, 1, "not over bulk");

	outcome_init(&o); /* another chief, on a link of this one's */
	pasci_rpc_call_fast(
	    c, run_from("bulk_async_seven", 78), 5000, done, &o);
	cr_assert_eq(wait_done(&o), 0, "%s", o.detail);
	cr_assert_eq(o.status, PASCO_EPRECONDITION);
	cr_assert(
	    strstr(o.detail, "serves the chief tcp://the-chief:1") != NULL,
	    "%s", o.detail);

	outcome_init(&o); /* a client that is no chief, as over nng */
	pasci_rpc_call_fast(
	    c, run_from("bulk_async_seven", 0), 5000, done, &o);
	cr_assert_eq(wait_done(&o), 0, "%s", o.detail);
	cr_assert_eq(o.status, 0, "%s", o.detail);
	pasci_rpc_client_close(c);
	pasco_server_stop(w);
	pasco_cluster_free(cl);
}

Test(bulk_async, a_coordinators_closures_travel_over_bulk_links)
{
	pasco_cluster      *cl;
	pasco_server       *srv[2];
	pasco_strategy     *s;
	pasco_coordinator  *coord;
	pasco_remote_value *rv[40];
	char                json[256], err[256];
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"ps\": [\"127.0.0.1:%d\"], \"worker\": "
	    "[\"127.0.0.1:%d\"]}}",
	    test_free_port(), test_free_port());
	PASCO_PASS(pasco_cluster_parse_json(&cl, json, err, sizeof(err)));
	PASCO_PASS(pasco_server_start(&srv[0], cl, PASCO_ROLE_PS, 0));
	PASCO_PASS(pasco_server_start(&srv[1], cl, PASCO_ROLE_WORKER, 0));
	PASCO_PASS(pasco_strategy_create(&s, cl, NULL));
	pasco_coordinator_options co = {.max_batch = 1}; /* 40 messages */
	PASCO_PASS(pasco_coordinator_create(&coord, s, &co));
	for (int round = 0; round < 2; round++) {
		uint64_t calls = pasci_bulk_calls_done();
		if (round == 1) {
			setenv("PASCO_BULK_CLOSURES", "0", 1);
		}
		for (int i = 0; i < 40; i++) {
			PASCO_PASS(pasco_schedule(
			    coord, "bulk_async_seven", NULL, 0, &rv[i]));
		}
		PASCO_PASS(pasco_join(coord));
		for (int i = 0; i < 40; i++) {
			const pasco_value *v;
			PASCO_PASS(pasco_remote_value_fetch(rv[i], &v));
			cr_assert_float_eq(
			    pasco_tensor_get(pasco_value_as_tensor(v), 0), 7.0,
			    0);
			pasco_remote_value_free(rv[i]);
		}
		if (round == 0) {
			cr_assert_geq(pasci_bulk_calls_done() - calls, 40);
		} else {
			cr_assert_eq(pasci_bulk_calls_done(), calls);
		}
	}
	unsetenv("PASCO_BULK_CLOSURES");
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	pasco_server_stop(srv[1]);
	pasco_server_stop(srv[0]);
	pasco_cluster_free(cl);
}

Test(bulk_async, a_link_the_server_closed_while_idle_is_not_used_again)
{
	outcome o;
	setenv("PASCO_IDLE_TIMEOUT", "1", 1); /* the server closes it */
	setenv("PASCO_BULK_LOCAL", "0", 1);   /* TCP: a send would "succeed" */
	start(true);
	for (int i = 0; i < 2; i++) {
		outcome_init(&o);
		pasci_rpc_call_fast(
		    client, request((float) i, 0), 5000, done, &o);
		cr_assert_eq(wait_done(&o), 0, "call %d: %s", i, o.detail);
		cr_assert_float_eq(o.value, 2.0f * (float) i, 0);
		usleep(1800 * 1000); /* idle past the server's timeout */
	}
	unsetenv("PASCO_IDLE_TIMEOUT");
	unsetenv("PASCO_BULK_LOCAL");
	stop();
}
