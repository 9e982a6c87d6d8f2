/*
 * pasco_server_start as a pod starts it: its cluster address is a name
 * that does not resolve yet. The servers listen on every interface at
 * their port anyway, and a chief that reaches them at another name (here
 * 127.0.0.1) gets big tensors over the bulk port the ps advertises.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

#include "bulk.h"
#include "rpc.h"

TestSuite(server, .timeout = 60);

static pasco_cluster *
cluster_of(const char *host, int ps_port, int worker_port)
{
	pasco_cluster *c;
	char           json[512], err[256];
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"ps\": [\"%s:%d\"], \"worker\": [\"%s:%d\"]}}",
	    host, ps_port, host, worker_port);
	PASCO_PASS(pasco_cluster_parse_json(&c, json, err, sizeof(err)));
	return c;
}

Test(server, listens_on_every_interface_when_its_name_does_not_resolve)
{
	int ps_port = test_free_port(), worker_port = test_free_port();
	pasco_cluster *pods =
	    cluster_of("ps-0.pasco-test.invalid", ps_port, worker_port);
	pasco_cluster  *chief = cluster_of("127.0.0.1", ps_port, worker_port);
	pasco_server   *ps, *worker;
	pasco_strategy *s;
	pasco_variable *v;
	pasco_tensor   *value;
	pasco_strategy_options opts     = {.connect_timeout_ms = 10000};
	int64_t                shape[1] = {300000}; /* 1.2 MB */
	pasco_initializer      ones     = pasco_init_ones();
	uint64_t               bulk0    = pasci_bulk_calls_done();

	unsetenv("PASCO_BIND_ADDRESS");
	PASCO_PASS(pasco_server_start(&ps, pods, PASCO_ROLE_PS, 0));
	PASCO_PASS(pasco_server_start(&worker, pods, PASCO_ROLE_WORKER, 0));
	PASCO_PASS(pasco_strategy_create(&s, chief, &opts));
	PASCO_PASS(pasco_variable_create_init(
	    &v, s, "big", PASCO_F32, 1, shape, &ones));
	PASCO_PASS(pasco_variable_read(v, &value));
	cr_assert_eq(value->nbytes, sizeof(float) * 300000);
	for (int64_t i = 0; i < 300000; i += 997) {
		cr_assert_eq(((const float *) value->data)[i], 1.0f);
	}
	/* the read went over the bulk port, to 127.0.0.1 at the port the ps
	 * advertised alone (its host is the one the client dialed) */
	cr_assert_gt(pasci_bulk_calls_done(), bulk0,
	    "the read did not go over the bulk port");
	char              advert[PASCI_RPC_ADVERT_MAX], url[64];
	uint64_t          inc;
	pasci_rpc_client *c;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", ps_port);
	PASCO_PASS(pasci_rpc_client_open(&c, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	PASCO_PASS(pasci_rpc_client_advert(c, advert, sizeof(advert), &inc));
	cr_assert(advert[0] == ':' && atoi(advert + 1) > 0 &&
	              atoi(advert + 1) != ps_port,
	    "the ps advertised '%s', not its bulk port alone", advert);
	pasci_rpc_client_close(c);
	pasco_tensor_release(value);
	pasco_variable_free(v);
	pasco_strategy_destroy(s);
	pasco_server_stop(worker);
	pasco_server_stop(ps);
	pasco_cluster_free(chief);
	pasco_cluster_free(pods);
}

/* Refused as the cluster is parsed, naming the task: no server starts. */
Test(server, an_address_without_a_port_is_refused)
{
	pasco_cluster *c;
	char           err[256];
	PASCO_FAIL(pasco_cluster_parse_json(&c,
	               "{\"cluster\": {\"ps\": [\"tcp://h\"], \"worker\": "
	               "[\"h:1\"]}}",
	               err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert_null(c);
	cr_assert(strstr(err, "address 'tcp://h' of job 'ps' (ps 0) is not "
	                      "host:port") != NULL,
	    "%s", err);
}

Test(server, the_bulk_port_can_be_chosen_for_a_firewall)
{
	int ps_port = test_free_port(), worker_port = test_free_port();
	int bulk_port = test_free_port(), worker_bulk = test_free_port();
	pasco_cluster    *c = cluster_of("127.0.0.1", ps_port, worker_port);
	pasco_server     *srv[2];
	pasci_rpc_client *client;
	char              advert[PASCI_RPC_ADVERT_MAX], url[64], want[16];
	uint64_t          inc;

	/* one environment for both, as on a host running a ps and a
	 * worker: each takes its own variable's port */
	snprintf(want, sizeof(want), "%d", bulk_port);
	setenv("PASCO_BULK_PORT", want, 1);
	snprintf(want, sizeof(want), "%d", worker_bulk);
	setenv("PASCO_WORKER_BULK_PORT", want, 1);
	PASCO_PASS(pasco_server_start(&srv[0], c, PASCO_ROLE_PS, 0));
	PASCO_PASS(pasco_server_start(&srv[1], c, PASCO_ROLE_WORKER, 0));
	unsetenv("PASCO_BULK_PORT");
	unsetenv("PASCO_WORKER_BULK_PORT");
	for (int i = 0; i < 2; i++) {
		snprintf(url, sizeof(url), "tcp://127.0.0.1:%d",
		    i == 0 ? ps_port : worker_port);
		PASCO_PASS(pasci_rpc_client_open(&client, url, NULL, NULL));
		PASCO_PASS(pasci_rpc_client_wait_up(client, 5000));
		PASCO_PASS(pasci_rpc_client_advert(
		    client, advert, sizeof(advert), &inc));
		cr_assert_eq(atoi(advert + 1),
		    i == 0 ? bulk_port : worker_bulk, "advertised '%s'",
		    advert);
		pasci_rpc_client_close(client);
	}
	pasco_server_stop(srv[1]);
	pasco_server_stop(srv[0]);
	pasco_cluster_free(c);
}
