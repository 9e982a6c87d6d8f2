/*
 * Cancelling the closures that are running when an error is raised.
 * TensorFlow aborts them through its cancellation manager; a C function
 * cannot be stopped from outside, so Pasco asks: every worker gets a
 * CANCEL naming this coordinator's closure ids issued so far, after which
 * the worker starts none of them (nor the next call of a packed one) and
 * pasco_call_is_cancelled is true in those running, for functions that
 * check it. The queue still waits for every closure in flight before it
 * raises the error, so join's delay is bounded by how soon running
 * functions check (or, for those that do not, by their run time).
 *
 * Closure ids are drawn from a random range of 2^32 per coordinator, so a
 * worker that served an earlier coordinator never cancels this one's.
 *
 * Threads: the hook runs on the user thread raising the error, without
 * the queue's lock; sends are asynchronous and their replies dropped.
 */
#include "coordinator_impl.h"
#include "util.h"
#include "wire.h"

#define CANCEL_TIMEOUT_MS 5000

static void
cancel_done(void *arg, int err, pasci_wire_msg *reply, const char *detail)
{
	(void) arg;
	if (err != 0) { /* a worker down: nothing of ours runs there */
		pasci_log(PASCI_LOG_DEBUG, "cancel not delivered: %s", detail);
	}
	if (reply != NULL) {
		pasci_wire_msg_fini(reply);
	}
}

static void
cancel_inflight(void *arg)
{
	pasco_coordinator *c  = arg;
	uint64_t           hi = __atomic_load_n(&c->next_id, __ATOMIC_RELAXED);
	if (hi >> 32 !=
	    c->id_base >> 32) { /* 2^32 closures: the block's end */
		hi = c->id_base | 0xffffffffu;
	}
	if (hi <= c->id_base) {
		return; /* no closure issued yet */
	}
	for (size_t w = 0; w < c->nworkers; w++) {
		pasci_wire_builder b;
		nng_msg           *msg;
		if (!pasci_rpc_client_is_up(c->s->workers[w])) {
			continue;
		}
		pasci_wire_builder_init(&b, PASCI_METHOD_CANCEL);
		b.hdr.resource   = c->id_base + 1;
		b.hdr.closure_id = hi;
		if (pasci_wire_encode(&b, &msg) == 0) {
			pasci_rpc_call_async(c->s->workers[w], msg,
			    CANCEL_TIMEOUT_MS, cancel_done, NULL);
		}
		pasci_wire_builder_fini(&b);
	}
	pasci_log(PASCI_LOG_DEBUG,
	    "asked the workers to cancel the closures in flight");
}

void
pasci_cancel_install(pasco_coordinator *c)
{
	/* the low 32 bits count; the high ones tell coordinators apart */
	c->id_base           = pasci_random_u64() & ~(uint64_t) 0xffffffffu;
	c->next_id           = c->id_base;
	c->q.cancel_inflight = cancel_inflight;
	c->q.cancel_arg      = c;
	c->q.ids             = &c->next_id;
}
