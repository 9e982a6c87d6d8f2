/* Variable handles: created by the strategy (coordinator) or from a RUN
 * argument (worker). The client belongs to whoever created the handle and
 * must outlive it. */
#ifndef PASCI_VARIABLE_IMPL_H
#define PASCI_VARIABLE_IMPL_H

#include <pthread.h>

#include "common/rpc.h"
#include "pasco/variable.h"

struct pasco_variable {
	char             *name;
	int32_t           ps_task;
	pasco_dtype       dtype;
	int32_t           rank;
	int64_t           shape[PASCO_MAX_RANK];
	pasci_rpc_client *client; /* borrowed */
	int64_t           timeout_ms;
	pthread_mutex_t   mu;
	char              error[512]; /* protected by mu */
};

int pasci_variable_new(pasco_variable **out, const char *name, int32_t ps_task,
    pasco_dtype dtype, int32_t rank, const int64_t *shape,
    pasci_rpc_client *client, int64_t timeout_ms);

/* Records msg as v's last error (thread-safe). */
void pasci_variable_set_error(pasco_variable *v, const char *msg);

#endif
