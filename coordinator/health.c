/*
 * The cluster's health (pasco_strategy_health, TensorFlow's
 * get_task_states): each task's link as the strategy's connections and
 * heartbeats (strategy.c) last left it. Reads only: the RPC clients' state
 * under their own locks, and the heartbeat flag atomically. Thread-safe.
 */
#include <string.h>

#include "coordinator_impl.h"
#include "util.h"

static void
task_health(task_link *link, pasco_task_health *h)
{
	char why[200] = "";
	memset(h, 0, sizeof(*h));
	h->role  = link->is_ps ? PASCO_ROLE_PS : PASCO_ROLE_WORKER;
	h->index = (int32_t) link->index;
	h->up    = pasci_rpc_client_is_up(link->client);
	if (h->up) {
		h->incarnation = pasci_rpc_client_incarnation(link->client);
		return;
	}
	pasci_rpc_client_why_down(link->client, why, sizeof(why));
	pasci_fmt(h->why, sizeof(h->why), "%s at %s: %s",
	    link->is_ps ? "ps" : "worker", pasci_rpc_client_url(link->client),
	    why[0] != 0 ? why
	    : __atomic_load_n(&link->hb_dropped, __ATOMIC_RELAXED)
	        ? "no heartbeat answer (alive but hung?)"
	        : "not connected");
}

size_t
pasco_strategy_health(pasco_strategy *s, pasco_task_health *out, size_t cap)
{
	size_t n = s->nworkers + s->nps;
	for (size_t i = 0; i < n && i < cap; i++) {
		task_health(i < s->nworkers ? &s->links[i]
		                            : &s->ps_links[i - s->nworkers],
		    &out[i]);
	}
	return n;
}
