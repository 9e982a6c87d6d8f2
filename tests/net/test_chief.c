/*
 * One chief per cluster (net/chief.h): a server serves the first chief
 * that proves itself; another chief is refused, naming the one served,
 * while that one is connected; the same chief's new incarnation replaces
 * the old one; clients that are not chiefs are not affected. Real rpc
 * servers and clients over TCP loopback, with and without a cluster key.
 */
#include "helpers.h"

#include <string.h>

#include "chief.h"
#include "rpc.h"
#include "util.h"

TestSuite(chief, .timeout = 60);

static char url[64];
static int  runs;

static nng_msg *
count_runs(void *arg, const pasci_wire_msg *req)
{
	(void) arg;
	(void) req;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	return pasci_wire_status_reply(PASCO_OK, "%s", "");
}

static pasci_key
test_key(void)
{
	pasci_key k = {.len = 32};
	for (int i = 0; i < 32; i++) {
		k.bytes[i] = (uint8_t) (7 + 13 * i);
	}
	return k;
}

static pasci_rpc_server *
serve(const pasci_key *key)
{
	pasci_rpc_server *s;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 2, "pasco-worker", count_runs, NULL, 0, NULL, key));
	return s;
}

static pasci_rpc_client *
open_chief(const char *name, uint64_t incarnation, const pasci_key *key)
{
	pasci_rpc_client *c;
	pasci_chief       chief = {.incarnation = incarnation};
	pasci_fmt(chief.name, sizeof(chief.name), "%s", name);
	PASCO_PASS(pasci_rpc_client_open_as(&c, url, NULL, NULL, key, &chief));
	return c;
}

/* One RUN on c; its status. */
static int
run(pasci_rpc_client *c)
{
	pasci_wire_builder b;
	char               err[512];
	int                rv;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	rv = pasci_rpc_call(c, &b, 5000, NULL, err, sizeof(err));
	pasci_wire_builder_fini(&b);
	return rv;
}

/* Waits (at most 10 s) until c is refused by its server; why gets the
 * server's words. */
static void
wait_refused(pasci_rpc_client *c, char *why, size_t len)
{
	int64_t start = pasci_now_ms();
	while (!pasci_rpc_client_refused(c, why, len) &&
	       pasci_now_ms() - start < 10000) {
		usleep(20 * 1000);
	}
	cr_assert(pasci_rpc_client_refused(c, why, len),
	    "the client was not refused within 10 s (up: %d)",
	    pasci_rpc_client_is_up(c));
}

static void
second_chief_is_refused(const pasci_key *key)
{
	pasci_rpc_server *s = serve(key);
	pasci_rpc_client *a = open_chief("tcp://chief-a:2222", 11, key);
	pasci_rpc_client *b, *plain;
	char              why[512];
	PASCO_PASS(pasci_rpc_client_wait_up(a, 5000));
	PASCO_PASS(run(a));

	b = open_chief("tcp://chief-b:2222", 22, key);
	wait_refused(b, why, sizeof(why));
	cr_assert(strstr(why, "refused chief tcp://chief-b:2222") != NULL &&
	              strstr(why, "already serves chief tcp://chief-a:2222") !=
	                  NULL &&
	              strstr(why, "worker at tcp://127.0.0.1:") != NULL,
	    "%s", why);
	cr_assert(!pasci_rpc_client_is_up(b));
	{ /* its calls say why */
		pasci_wire_builder bl;
		char               err[512];
		pasci_wire_builder_init(&bl, PASCI_METHOD_RUN);
		cr_assert_neq(pasci_rpc_call(b, &bl, 300, NULL, err, 512), 0);
		pasci_wire_builder_fini(&bl);
		cr_assert(
		    strstr(err, "already serves chief tcp://chief-a:2222"),
		    "%s", err);
	}
	/* the first chief is unharmed, and a client that is no chief (a
	 * worker's link to a ps) is served beside it */
	cr_assert(pasci_rpc_client_is_up(a));
	PASCO_PASS(run(a));
	PASCO_PASS(pasci_rpc_client_open_with(&plain, url, NULL, NULL, key));
	PASCO_PASS(pasci_rpc_client_wait_up(plain, 5000));
	PASCO_PASS(run(plain));
	cr_assert(pasci_rpc_client_is_up(a));

	/* once the first chief is gone, the other may take its place */
	pasci_rpc_client_close(a);
	PASCO_PASS(pasci_rpc_client_wait_up(b, 10000));
	PASCO_PASS(run(b));
	pasci_rpc_client_close(plain);
	pasci_rpc_client_close(b);
	pasci_rpc_server_close(s);
}

Test(chief, a_second_chief_is_refused_naming_the_first)
{
	second_chief_is_refused(NULL);
}

Test(chief, a_second_chief_is_refused_naming_the_first_with_a_key)
{
	pasci_key k = test_key();
	second_chief_is_refused(&k);
}

static void
restarted_chief_replaces_the_old(const pasci_key *key)
{
	pasci_rpc_server *s   = serve(key);
	pasci_rpc_client *old = open_chief("tcp://chief:2222", 1, key);
	pasci_rpc_client *fresh;
	char              why[512];
	int64_t           start;
	PASCO_PASS(pasci_rpc_client_wait_up(old, 5000));
	PASCO_PASS(run(old));

	/* the same chief, a new process: served at once */
	fresh = open_chief("tcp://chief:2222", 2, key);
	PASCO_PASS(pasci_rpc_client_wait_up(fresh, 5000));
	PASCO_PASS(run(fresh));
	/* the old incarnation's connection is closed, and it cannot come
	 * back */
	start = pasci_now_ms();
	while (pasci_rpc_client_is_up(old) && pasci_now_ms() - start < 5000) {
		usleep(20 * 1000);
	}
	cr_assert(!pasci_rpc_client_is_up(old));
	wait_refused(old, why, sizeof(why));
	cr_assert(strstr(why, "a newer incarnation of that chief") != NULL,
	    "%s", why);
	PASCO_PASS(run(fresh));
	pasci_rpc_client_close(old);
	pasci_rpc_client_close(fresh);
	pasci_rpc_server_close(s);
}

Test(chief, a_restarted_chief_replaces_its_old_incarnation)
{
	restarted_chief_replaces_the_old(NULL);
}

Test(chief, a_restarted_chief_replaces_its_old_incarnation_with_a_key)
{
	pasci_key k = test_key();
	restarted_chief_replaces_the_old(&k);
}

/* A stranger without the key cannot take the seat by naming itself a
 * chief in its HELLO: only a connection that proved the key is seated. */
Test(chief, a_stranger_cannot_claim_the_seat)
{
	pasci_key         k = test_key(), wrong = test_key();
	pasci_rpc_server *s;
	pasci_rpc_client *stranger, *a;
	wrong.bytes[0] ^= 1;
	s        = serve(&k);
	stranger = open_chief("tcp://stranger:1", 5, &wrong);
	cr_assert_neq(pasci_rpc_client_wait_up(stranger, 1000), PASCO_OK);
	a = open_chief("tcp://chief-a:2222", 11, &k);
	PASCO_PASS(pasci_rpc_client_wait_up(a, 5000));
	PASCO_PASS(run(a));
	pasci_rpc_client_close(stranger);
	pasci_rpc_client_close(a);
	pasci_rpc_server_close(s);
}

Test(chief, a_process_is_one_chief_of_its_cluster)
{
	pasco_cluster *c;
	pasci_chief    one, two;
	char           err[256];
	PASCO_PASS(pasco_cluster_parse_json(&c,
	    "{\"cluster\": {\"chief\": [\"host-a:2222\"], \"ps\": "
	    "[\"p:1\"], \"worker\": [\"w:1\"]}}",
	    err, sizeof(err)));
	pasci_chief_self(c, &one);
	pasci_chief_self(c, &two);
	cr_assert_str_eq(one.name, "tcp://host-a:2222");
	cr_assert_neq(one.incarnation, 0);
	cr_assert_eq(one.incarnation, two.incarnation);
	pasco_cluster_free(c);
	/* no chief in the cluster: the host and process name it */
	pasci_chief_self(NULL, &two);
	cr_assert(strstr(two.name, " pid ") != NULL, "%s", two.name);
	cr_assert_eq(one.incarnation, two.incarnation);
}
