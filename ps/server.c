/*
 * The ps server: answers variable RPCs from the store. Runs on the RPC
 * server's handler threads; all shared state is in the store.
 */
#include "ps/server.h"

#include <stdlib.h>

#include "common/util.h"
#include "ps/store.h"

struct ps_server {
	pasci_rpc_server *rpc;
	ps_store         *store;
};

typedef struct read_ctx {
	nng_msg *reply;
} read_ctx;

/* Encodes the value under the variable's lock: one copy, no torn read. */
static int
encode_value(void *arg, const pasco_tensor *value)
{
	read_ctx          *r = arg;
	pasci_wire_builder b;
	int                rv;
	pasci_wire_builder_init(&b, PASCO__WIRE__METHOD__VAR_READ);
	pasci_wire_add_tensor(&b, value, NULL);
	rv = pasci_wire_encode(&b, &r->reply);
	pasci_wire_builder_fini(&b);
	return rv;
}

static nng_msg *
ps_read(ps_server *ps, const pasci_wire_msg *req)
{
	read_ctx r = {NULL};
	char     err[512];
	int      rv = ps_store_var_with(
	         ps->store, req->hdr->name, encode_value, &r, err, sizeof(err));
	if (rv != 0) {
		return pasci_wire_status_reply(rv, "%s", err);
	}
	return r.reply;
}

static nng_msg *
ps_handle(void *arg, const pasci_wire_msg *req)
{
	ps_server  *ps       = arg;
	const char *name     = req->hdr->name;
	char        err[512] = "";
	int         rv;

	if (req->hdr->method == PASCO__WIRE__METHOD__VAR_READ) {
		return ps_read(ps, req);
	}
	if (req->ntensors != 1) {
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "%s of '%s' needs "
		    "exactly one tensor, got %zu",
		    req->hdr->method == PASCO__WIRE__METHOD__VAR_CREATE
		        ? "create"
		        : "an update",
		    name, req->ntensors);
	}
	switch (req->hdr->method) {
	case PASCO__WIRE__METHOD__VAR_CREATE:
		rv = ps_store_var_create(
		    ps->store, name, req->tensors[0], err, sizeof(err));
		break;
	case PASCO__WIRE__METHOD__VAR_ASSIGN:
		rv = ps_store_var_update(ps->store, name, PS_ASSIGN, 0,
		    req->tensors[0], err, sizeof(err));
		break;
	case PASCO__WIRE__METHOD__VAR_ASSIGN_ADD:
		rv = ps_store_var_update(ps->store, name, PS_ASSIGN_ADD, 0,
		    req->tensors[0], err, sizeof(err));
		break;
	case PASCO__WIRE__METHOD__VAR_APPLY_SGD:
		rv = ps_store_var_update(ps->store, name, PS_APPLY_SGD,
		    req->hdr->learning_rate, req->tensors[0], err,
		    sizeof(err));
		break;
	default:
		return pasci_wire_status_reply(PASCO_EINVAL,
		    "a ps does not "
		    "serve method %d",
		    (int) req->hdr->method);
	}
	return pasci_wire_status_reply(rv, "%s", err);
}

int
ps_server_start(ps_server **out, const char *url, int nthreads)
{
	ps_server *ps = calloc(1, sizeof(*ps));
	int        rv;

	*out = NULL;
	if (ps == NULL) {
		return PASCO_ENOMEM;
	}
	if ((rv = ps_store_create(&ps->store)) != 0) {
		free(ps);
		return rv;
	}
	rv = pasci_rpc_server_open(
	    &ps->rpc, url, nthreads, "pasco-ps", ps_handle, ps);
	if (rv != 0) {
		ps_store_destroy(ps->store);
		free(ps);
		return rv;
	}
	*out = ps;
	return PASCO_OK;
}

uint64_t
ps_server_incarnation(const ps_server *ps)
{
	return pasci_rpc_server_incarnation(ps->rpc);
}

void
ps_server_stop(ps_server *ps)
{
	if (ps == NULL) {
		return;
	}
	pasci_rpc_server_close(ps->rpc);
	ps_store_destroy(ps->store);
	free(ps);
}
