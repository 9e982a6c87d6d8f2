/*
 * A task's end (see lifecycle.h). The serving loop wakes once a second to
 * look at the RPC server's flag and idle time (and, after a burst, to give
 * freed memory back: malloc_trim); the chief's farewell opens a
 * client per task (they connect at once) and then calls each in turn, all
 * within one deadline.
 */
#include "lifecycle.h"

#include <malloc.h>
#include <stdlib.h>
#include <time.h>

#include "key.h"
#include "util.h"

#define FAREWELL_MS 1500

int
pasci_serve_until_done(const pasci_rpc_server *rpc, const sigset_t *signals,
    int64_t timeout_s, const char *task)
{
	struct timespec tick       = {.tv_sec = 1};
	int64_t         trimmed_at = 0; /* the last request trimmed after */
	for (;;) {
		int     sig = sigtimedwait(signals, NULL, &tick);
		int64_t idle_ms, quiet_ms, last;
		if (sig > 0) {
			pasci_log(PASCI_LOG_INFO,
			    "%s: stopping on signal %d (exit status %d)", task,
			    sig, 128 + sig);
			return 128 + sig;
		}
		if (pasci_rpc_server_shutdown_requested(rpc)) {
			pasci_log(PASCI_LOG_INFO,
			    "%s: the chief is done; exiting", task);
			return 0;
		}
		/* after a burst (of work, or of a stranger's garbage), a
		 * second of quiet gives the freed memory back to the system:
		 * malloc keeps freed buffers of up to 8 MB in each thread's
		 * arena */
		quiet_ms = pasci_rpc_server_quiet_ms(rpc);
		last     = pasci_now_ms() - quiet_ms;
		if (quiet_ms >= 1000 && last > trimmed_at + 500) {
			malloc_trim(0);
			trimmed_at = last;
		}
		pasci_rpc_server_sweep(
		    rpc); /* strangers' silent connections */
		idle_ms = pasci_rpc_server_idle_ms(rpc);
		if (timeout_s > 0 && idle_ms >= timeout_s * 1000) {
			pasci_log(PASCI_LOG_WARN,
			    "%s: no request for %lld s, the chief is gone; "
			    "exiting with status %d, to be restarted for its "
			    "next incarnation (--chief-timeout or "
			    "PASCO_CHIEF_TIMEOUT sets the wait, 0 waits "
			    "forever)",
			    task, (long long) timeout_s,
			    PASCI_EXIT_CHIEF_GONE);
			return PASCI_EXIT_CHIEF_GONE;
		}
	}
}

void
pasci_tell_tasks_done(const pasco_cluster *cluster)
{
	static const pasco_role roles[] = {PASCO_ROLE_PS, PASCO_ROLE_WORKER};
	size_t n = pasco_cluster_count(cluster, PASCO_ROLE_PS) +
	           pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	pasci_rpc_client **clients  = pasci_calloc(n + 1, sizeof(*clients));
	size_t             k        = 0;
	int64_t            deadline = pasci_now_ms() + FAREWELL_MS;
	const pasci_key   *key;
	pasci_chief        self; /* a task heeds only the chief it serves */

	pasci_chief_self(cluster, &self);
	if (clients == NULL || pasci_cluster_key(&key, NULL, 0) != 0) {
		free(clients);
		return;
	}
	/* every connection is made at once; then one call each, all within
	 * the one deadline */
	for (size_t r = 0; r < 2; r++) {
		for (size_t i = 0; i < pasco_cluster_count(cluster, roles[r]);
		     i++) {
			if (pasci_rpc_client_open_as(&clients[k],
			        pasco_cluster_url(cluster, roles[r], i), NULL,
			        NULL, key, &self) != 0) {
				clients[k] = NULL;
			}
			k++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		pasci_wire_builder b;
		char               err[256];
		int64_t            left = deadline - pasci_now_ms();
		if (clients[i] == NULL) {
			continue;
		}
		pasci_wire_builder_init(&b, PASCI_METHOD_SHUTDOWN);
		if (pasci_rpc_call(clients[i], &b, left > 1 ? left : 1, NULL,
		        err, sizeof(err)) != 0) {
			pasci_log(PASCI_LOG_DEBUG,
			    "telling %s the chief is done: %s",
			    pasci_rpc_client_url(clients[i]), err);
		}
		pasci_wire_builder_fini(&b);
		pasci_rpc_client_close(clients[i]);
	}
	free(clients);
}
