/*
 * Fuzz target: a ps's request handler (ps_server.c, through
 * pasci_ps_server_handle) on a sequence of messages (fuzz_util.h), each
 * decoded as the RPC server would, against one fresh store per input.
 * CKPT_SAVE is left out: it writes a file at the path the request names;
 * so are initializers of huge variables and dynamic tables of huge rows
 * (ps_skip).
 *
 * Each input starts with two dynamic embedding tables on the ps (issue
 * 22), so that its lookups, updates, imports and counts reach the tables'
 * code without a create first: "d" (4 floats a row, uniform initializer,
 * nothing evicted) and "e" (2 floats, zeros for keys without a row, rows
 * after 2 lookups, evicted after 3 steps unseen or past 8 rows). After the
 * input, both tables' counts (DYN_STATS) must still make sense.
 */
#include "dyn_table_impl.h"
#include "fuzz_handler.h"
#include "ps_server.h"
#include "tensor_impl.h"

/* A variable made from an initializer is as big as the request says: by
 * design, but one of gigabytes (or a gather of it many times over) would
 * stop the fuzzer on its memory limit, not on a bug. */
#define MAX_INIT_BYTES (256u << 10)

/* A dynamic table allocates its rows CHUNK_ROWS at a time (and a chunk of
 * each slot on its first update): a row of 2^20 floats, which a ps
 * accepts, makes chunks of 4 GB. Tables with chunks over this are left
 * out (a dim past MAX_DIM is refused before anything is allocated). */
#define MAX_CHUNK_BYTES (4u << 20)

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
	if (req->hdr->method == PASCI_METHOD_VAR_CREATE &&
	    req->hdr->dynamic != NULL && req->hdr->dynamic->dim <= MAX_DIM &&
	    (uint64_t) req->hdr->dynamic->dim >
	        MAX_CHUNK_BYTES / sizeof(float) / CHUNK_ROWS) {
		return true;
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

/* The tables every input starts with (see the top). */
static const pasci_wire_dynamic fuzz_tables[2] = {
    {.dim = 4},
    {.dim              = 2,
        .min_count     = 2,
        .evict_after   = 3,
        .max_rows      = 8,
        .default_zeros = true},
};
static const char *const fuzz_table_names[2] = {"d", "e"};

/* One request of method m on table k, answered by ps; the decoded reply
 * (*out, to be finished) or false when it did not decode. */
static bool
table_call(ps_server *ps, pasci_method m, int k, pasci_wire_msg *out)
{
	pasci_wire_builder b;
	pasci_wire_init    init = {
	       .init = pasco_init_uniform(-0.05, 0.05, (uint64_t) k + 1)};
	pasci_wire_msg req;
	nng_msg       *msg, *reply;
	char           err[256];
	bool           ok;
	pasci_wire_builder_init(&b, m);
	b.hdr.name = fuzz_table_names[k];
	if (m == PASCI_METHOD_VAR_CREATE) {
		b.hdr.dynamic = &fuzz_tables[k];
		b.hdr.init    = &init;
	}
	ok = pasci_wire_encode(&b, &msg) == 0;
	pasci_wire_builder_fini(&b);
	if (!ok || pasci_wire_decode(&req, msg, err, sizeof(err)) != 0) {
		return false;
	}
	reply = pasci_ps_server_handle(ps, &req);
	pasci_wire_msg_fini(&req);
	FUZZ_CHECK(reply != NULL);
	FUZZ_CHECK(pasci_wire_decode(out, reply, err, sizeof(err)) == 0);
	return true;
}

/* A table's counts after any input: its rows and pending keys, within its
 * cap. */
static void
check_table(ps_server *ps, int k)
{
	pasci_wire_msg m;
	const int64_t *st;
	if (!table_call(ps, PASCI_METHOD_DYN_STATS, k, &m)) {
		return;
	}
	FUZZ_CHECK(m.hdr->status == 0); /* no input takes a table's name */
	FUZZ_CHECK(m.ntensors == 1 && m.tensors[0]->dtype == PASCO_I64 &&
	           m.tensors[0]->count == 7);
	st = m.tensors[0]->data;
	/* rows and pending keys, counted from what the table holds (the
	 * totals and the clock come from imports as they were sent) */
	FUZZ_CHECK(st[0] >= 0 && st[1] >= 0);
	FUZZ_CHECK(
	    fuzz_tables[k].max_rows == 0 || st[0] <= fuzz_tables[k].max_rows);
	pasci_wire_msg_fini(&m);
}

int
fuzz_ps_handler_one(const uint8_t *data, size_t size)
{
	ps_server *ps;
	if (pasci_ps_server_create_local(&ps) != 0) {
		return 0;
	}
	for (int k = 0; k < 2; k++) {
		pasci_wire_msg m;
		if (table_call(ps, PASCI_METHOD_VAR_CREATE, k, &m)) {
			FUZZ_CHECK(m.hdr->status == 0);
			pasci_wire_msg_fini(&m);
		}
	}
	fuzz_handle_all(data, size, ps_call, ps, ps_skip);
	for (int k = 0; k < 2; k++) {
		check_table(ps, k);
	}
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
