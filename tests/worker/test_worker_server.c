/*
 * The worker server's dispatch (worker/worker_server.c), without sockets
 * (pasci_worker_server_handle): it answers exactly the request kinds that
 * net/wire.c's table gives a worker, and refuses every other one naming
 * its number.
 */
#include "helpers.h"

#include <string.h>

#include "wire.h"
#include "worker_server.h"

TestSuite(worker_server, .timeout = 20);

/* A bare request of method m (name and resource "x", 1) answered by w;
 * err gets its error message. */
static void
answer(worker_server *w, int m, char *err, size_t len)
{
	pasci_wire_builder b;
	pasci_wire_msg     req, reply;
	nng_msg           *msg;
	char               why[256];
	pasci_wire_builder_init(&b, (pasci_method) m);
	b.hdr.name     = "x";
	b.hdr.resource = 1;
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	PASCO_PASS(pasci_wire_decode(&req, msg, why, sizeof(why)));
	msg = pasci_worker_server_handle(w, &req);
	pasci_wire_msg_fini(&req);
	cr_assert_not_null(msg, "method %d: no reply", m);
	PASCO_PASS(pasci_wire_decode(&reply, msg, why, sizeof(why)));
	snprintf(err, len, "%s", reply.hdr->error);
	pasci_wire_msg_fini(&reply);
}

Test(worker_server, serves_exactly_the_request_kinds_that_are_a_workers)
{
	worker_server *w;
	char           err[256];
	PASCO_PASS(pasci_worker_server_create_local(&w, 0, 1, 1));
	for (int m = 0; m < PASCI_METHOD_COUNT; m++) {
		pasci_served_by by = pasci_method_served_by(m);
		bool            refused;
		if (by == PASCI_SERVED_BY_RPC) { /* never reach the handler */
			continue;
		}
		answer(w, m, err, sizeof(err));
		refused = strstr(err, "does not serve method") != NULL;
		cr_assert_eq(refused, by != PASCI_SERVED_BY_WORKER,
		    "method %d (%s): the worker says '%s'", m,
		    pasci_method_name(m) != NULL ? pasci_method_name(m)
		                                 : "no kind",
		    err);
	}
	pasci_worker_server_stop(w);
}
