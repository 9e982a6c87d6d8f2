/*
 * The calls an rpc client has outstanding (see rpc_calls.h): a hash of
 * buckets by call id. The client's lock is held around every function.
 */
#include "rpc_calls.h"

bool
pasci_rpc_calls_insert(pasci_rpc_calls *t, rpc_call *call)
{
	rpc_call **b = &t->buckets[call->id % PASCI_RPC_CALL_BUCKETS];
	call->next   = *b;
	*b           = call;
	return call->deadline_ms > 0 && t->ndeadlines++ == 0;
}

rpc_call *
pasci_rpc_calls_remove(pasci_rpc_calls *t, uint32_t id)
{
	for (rpc_call **p  = &t->buckets[id % PASCI_RPC_CALL_BUCKETS];
	     *p != NULL; p = &(*p)->next) {
		rpc_call *call = *p;
		if (call->id == id) {
			*p = call->next;
			if (call->deadline_ms > 0) {
				t->ndeadlines--;
			}
			return call;
		}
	}
	return NULL;
}

bool
pasci_rpc_calls_has(const pasci_rpc_calls *t, uint32_t id)
{
	for (const rpc_call *call = t->buckets[id % PASCI_RPC_CALL_BUCKETS];
	     call != NULL; call   = call->next) {
		if (call->id == id) {
			return true;
		}
	}
	return false;
}

rpc_call *
pasci_rpc_calls_take(pasci_rpc_calls *t, uint32_t pipe, int64_t now)
{
	rpc_call *taken = NULL;
	for (int i = 0; i < PASCI_RPC_CALL_BUCKETS; i++) {
		rpc_call **p = &t->buckets[i];
		while (*p != NULL) {
			rpc_call *call  = *p;
			bool      match = (pipe != 0 && call->pipe == pipe) ||
			             (now > 0 && call->deadline_ms > 0 &&
			                 call->deadline_ms <= now) ||
			             (pipe == 0 && now == 0);
			if (!match) {
				p = &call->next;
				continue;
			}
			*p = call->next;
			if (call->deadline_ms > 0) {
				t->ndeadlines--;
			}
			call->next = taken;
			taken      = call;
		}
	}
	return taken;
}

size_t
pasci_rpc_calls_count(const pasci_rpc_calls *t)
{
	size_t n = 0;
	for (int i = 0; i < PASCI_RPC_CALL_BUCKETS; i++) {
		for (const rpc_call *c = t->buckets[i]; c != NULL;
		     c                 = c->next) {
			n++;
		}
	}
	return n;
}

uint32_t
pasci_rpc_calls_next_id(pasci_rpc_calls *t)
{
	t->next_id = (t->next_id + 1) & 0x7fffffffu;
	if (t->next_id == 0) {
		t->next_id = 1;
	}
	return t->next_id;
}

rpc_call *
pasci_rpc_calls_take_calls(pasci_rpc_calls *t)
{
	rpc_call *taken = NULL;
	for (int i = 0; i < PASCI_RPC_CALL_BUCKETS; i++) {
		rpc_call **p = &t->buckets[i];
		while (*p != NULL) {
			rpc_call *call = *p;
			if (call->hello) {
				p = &call->next;
				continue;
			}
			*p = call->next;
			if (call->deadline_ms > 0) {
				t->ndeadlines--;
			}
			call->next = taken;
			taken      = call;
		}
	}
	return taken;
}
