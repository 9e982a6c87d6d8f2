/*
 * Fuzz target: a ps's request handler (ps_server.c, through
 * pasci_ps_server_handle) on a sequence of messages (fuzz_util.h), each
 * decoded as the RPC server would, against one fresh store per input.
 * CKPT_SAVE is left out: it writes a file at the path the request names;
 * so are initializers of huge variables (ps_skip).
 */
#include "fuzz_handler.h"
#include "ps_server.h"
#include "tensor_impl.h"

/* A variable made from an initializer is as big as the request says: by
 * design, but one of gigabytes (or a gather of it many times over) would
 * stop the fuzzer on its memory limit, not on a bug. */
#define MAX_INIT_BYTES (256u << 10)

static bool
ps_skip(const pasci_wire_msg *req)
{
	const pasci_wire_spec *spec = req->hdr->spec;
	int64_t                count;
	size_t                 nbytes;
	if (req->hdr->method == PASCI_METHOD_CKPT_SAVE) {
		return true;
	}
	/* a VAR_MULTI's parts are requests too */
	for (size_t k = 0; k < req->hdr->nparts; k++) {
		pasci_wire_msg part;
		bool           skip;
		if (pasci_wire_msg_part(req, k, &part, NULL, 0) != 0) {
			continue; /* answered with an error, not run */
		}
		skip = ps_skip(&part);
		pasci_wire_msg_fini(&part);
		if (skip) {
			return true;
		}
	}
	return spec != NULL &&
	       pasci_tensor_check_spec(spec->dtype, spec->rank, spec->shape,
	           &count, &nbytes) == 0 &&
	       nbytes > MAX_INIT_BYTES;
}

static nng_msg *
ps_call(void *arg, const pasci_wire_msg *req)
{
	return pasci_ps_server_handle(arg, req);
}

int
fuzz_ps_handler_one(const uint8_t *data, size_t size)
{
	ps_server *ps;
	if (pasci_ps_server_create_local(&ps) != 0) {
		return 0;
	}
	fuzz_handle_all(data, size, ps_call, ps, ps_skip);
	pasci_ps_server_stop(ps);
	return 0;
}

#ifndef PASCO_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_ps_handler_one(data, size);
}
#endif
