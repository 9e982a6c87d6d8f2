/*
 * Calls an rpc client completes but does not carry (see rpc.h): a bulk
 * link (bulk_async.c) sends the request and reads the reply, and the
 * client's call table makes the call fail as its own calls fail, when
 * their connection is lost, at their deadline, when abandoned or closed,
 * exactly once whoever comes first. Also the object attached to a client
 * for as long as it lives (the reactor that reads those replies).
 */
#include <stdlib.h>

#include "rpc_client_impl.h"
#include "util.h"

int
pasci_rpc_call_register(pasci_rpc_client *c, int64_t timeout_ms,
    pasci_rpc_done_fn done, void *arg, uint32_t *id, uint64_t *incarnation)
{
	rpc_call *call = pasci_calloc(1, sizeof(*call));
	if (call == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_lock(&c->mu);
	if (c->link != LINK_UP || c->closing) {
		pthread_mutex_unlock(&c->mu);
		free(call);
		return PASCO_EUNAVAILABLE;
	}
	call->id          = pasci_rpc_calls_next_id(&c->calls);
	call->pipe        = c->pipe;
	call->deadline_ms = timeout_ms > 0 ? pasci_now_ms() + timeout_ms : 0;
	call->done        = done;
	call->arg         = arg;
	*id               = call->id;
	*incarnation      = c->incarnation;
	rpc_call_insert_locked(c, call);
	pthread_mutex_unlock(&c->mu);
	return PASCO_OK;
}

bool
pasci_rpc_call_complete(pasci_rpc_client *c, uint32_t id, int err,
    pasci_wire_msg *reply, const char *detail)
{
	rpc_call *call;
	char      why[300];
	pthread_mutex_lock(&c->mu);
	call = pasci_rpc_calls_remove(&c->calls, id);
	pthread_mutex_unlock(&c->mu);
	if (call == NULL) {
		if (reply != NULL) {
			pasci_wire_msg_fini(reply);
		}
		return false;
	}
	if (reply != NULL && reply->hdr->stale_incarnation) {
		pasci_fmt(why, sizeof(why), "%s restarted: %s", c->url,
		    reply->hdr->error);
		pasci_wire_msg_fini(reply);
		reply  = NULL;
		err    = PASCO_EABORTED;
		detail = why;
	}
	call->done(call->arg, reply != NULL ? 0 : err, reply, detail);
	free(call);
	return true;
}

bool
pasci_rpc_call_forget(pasci_rpc_client *c, uint32_t id)
{
	rpc_call *call;
	pthread_mutex_lock(&c->mu);
	call = pasci_rpc_calls_remove(&c->calls, id);
	pthread_mutex_unlock(&c->mu);
	free(call);
	return call != NULL;
}

bool
pasci_rpc_call_pending(pasci_rpc_client *c, uint32_t id)
{
	bool has;
	pthread_mutex_lock(&c->mu);
	has = pasci_rpc_calls_has(&c->calls, id);
	pthread_mutex_unlock(&c->mu);
	return has;
}

void *
pasci_rpc_client_attach(pasci_rpc_client *c,
    void *(*make)(pasci_rpc_client *c), void (*stop)(void *it))
{
	void *it;
	pthread_mutex_lock(&c->mu);
	if (c->attached == NULL && !c->closing &&
	    (c->attached = make(c)) != NULL) {
		c->attached_stop = stop;
	}
	it = c->closing ? NULL : c->attached;
	pthread_mutex_unlock(&c->mu);
	return it;
}
