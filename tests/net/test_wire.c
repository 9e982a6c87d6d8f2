#include "helpers.h"

#include <nng/nng.h>
#include <string.h>

#include "optimizer_desc.h"
#include "variable_impl.h"
#include "wire.h"
#include "wire.pb-c.h"

TestSuite(wire, .timeout = 10);

Test(wire, round_trips_header_tensors_and_nested_values)
{
	pasci_wire_builder b;
	pasci_wire_msg     m;
	nng_msg           *msg;
	pasco_value       *out;
	char               err[256];
	pasco_tensor      *big;
	int64_t            shape[] = {3, 5};

	PASCO_PASS(pasco_tensor_alloc(&big, PASCO_F64, 2, shape));
	for (int i = 0; i < 15; i++) {
		pasco_tensor_set(big, i, i * 1.5);
	}
	pasco_value *v = pasco_value_list(3, pasco_value_tensor(big),
	    pasco_value_list(2, pasco_value_tensor(test_scalar(PASCO_U8, 3)),
	        pasco_value_none()),
	    pasco_value_dict(2, "a",
	        pasco_value_tensor(test_scalar(PASCO_I64, -9)), "b",
	        pasco_value_tensor(test_scalar(PASCO_F32, 0.5))));
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.name = "step";
	pasci_wire_add_value(&b, v);
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	pasci_wire_set_incarnation(msg, 0x1122334455667788ULL);

	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_eq(m.incarnation, 0x1122334455667788ULL);
	cr_assert_str_eq(m.hdr->name, "step");
	cr_assert_eq(m.ntensors, 4);
	PASCO_PASS(pasci_wire_get_value(&m, &out, err, sizeof(err)));
	const pasco_tensor *t =
	    pasco_value_as_tensor(pasco_value_item(out, 0));
	cr_assert_eq(t->rank, 2);
	cr_assert_eq(t->shape[1], 5);
	cr_assert_eq(((double *) t->data)[14], 21.0);
	cr_assert_eq((uintptr_t) t->data % 8, 0, "tensor data is aligned");
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_item(pasco_value_item(out, 1), 0)),
	    3);
	cr_assert_eq(
	    pasco_value_kind_of(pasco_value_item(pasco_value_item(out, 1), 1)),
	    PASCO_VALUE_NONE);
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_get(pasco_value_item(out, 2), "a")),
	    -9);
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_get(pasco_value_item(out, 2), "b")),
	    0.5);
	pasci_wire_msg_fini(&m);
	/* the decoded value keeps the message alive */
	cr_assert_eq(((double *) t->data)[1], 1.5);
	pasco_value_free(out);
	pasco_value_free(v);
}

Test(wire, round_trips_run_arguments)
{
	pasci_wire_builder b;
	pasci_wire_msg     m;
	nng_msg           *msg;
	char               err[256];
	int64_t            shape[] = {4};
	pasco_tensor      *t       = test_scalar(PASCO_F32, 2);

	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	pasci_wire_add_arg_tensor(&b, t);
	pasco_variable *var;
	PASCO_PASS(pasci_variable_new(&var, "w", PASCO_F32, 1, shape, 1000));
	PASCO_PASS(pasci_variable_add_shard(var, "w/part_0", 1, 0, 3, NULL));
	PASCO_PASS(pasci_variable_add_shard(var, "w/part_1", 0, 3, 1, NULL));
	pasci_variable_add_arg(&b, var);
	pasci_wire_add_arg_resource(&b, 77);
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_eq(m.hdr->nargs, 3);
	cr_assert_eq(m.hdr->args[0].kind, PASCI_ARG_TENSOR);
	cr_assert_eq(
	    pasco_tensor_get(m.tensors[m.hdr->args[0].tensor], 0), 2.0);
	cr_assert_str_eq(m.hdr->args[1].variable.name, "w");
	cr_assert_eq(m.hdr->args[1].variable.nshards, 2);
	cr_assert_str_eq(m.hdr->args[1].variable.shards[1].name, "w/part_1");
	cr_assert_eq(m.hdr->args[1].variable.shards[0].ps_task, 1);
	cr_assert_eq(m.hdr->args[1].variable.shards[1].offset, 3);
	cr_assert_eq(m.hdr->args[1].variable.spec.shape[0], 4);
	cr_assert_eq(m.hdr->args[1].variable.spec.rank, 1);
	cr_assert_eq(m.hdr->args[2].resource, 77);
	pasci_wire_msg_fini(&m);
	pasco_variable_free(var);
	pasco_tensor_release(t);
}

Test(wire, round_trips_optimizer_initializer_and_spec)
{
	pasci_wire_builder b;
	pasci_wire_msg     m;
	nng_msg           *msg;
	char               err[256];
	pasco_optimizer    adam = pasco_adam(0.01, true);
	pasci_wire_init    init = {.init = pasco_init_uniform(-2, 3, 42),
	       .full_rank                = 2,
	       .full_shape               = {10, 4},
	       .row_offset               = 6};
	pasci_wire_spec    spec = {
	       .dtype = PASCO_F64, .rank = 2, .shape = {4, 4}};

	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name = "v/part_1";
	b.hdr.opt  = &adam;
	b.hdr.init = &init;
	b.hdr.spec = &spec;
	b.hdr.step = 12;
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_eq(m.hdr->method, PASCI_METHOD_VAR_CREATE);
	cr_assert_str_eq(m.hdr->name, "v/part_1");
	cr_assert_str_eq(m.hdr->error, ""); /* absent strings are "" */
	cr_assert_not_null(m.hdr->opt);
	cr_assert_eq(m.hdr->opt->kind, PASCO_OPT_ADAM);
	cr_assert_eq(m.hdr->opt->learning_rate, 0.01);
	cr_assert(m.hdr->opt->amsgrad);
	cr_assert_eq(m.hdr->opt->beta_2, adam.beta_2);
	cr_assert_eq(m.hdr->opt->epsilon, adam.epsilon);
	cr_assert_not_null(m.hdr->init);
	cr_assert_eq(m.hdr->init->init.kind, PASCO_INIT_UNIFORM);
	cr_assert_eq(m.hdr->init->init.minval, -2);
	cr_assert_eq(m.hdr->init->init.maxval, 3);
	cr_assert_eq(m.hdr->init->init.seed, 42);
	cr_assert_eq(m.hdr->init->full_shape[0], 10);
	cr_assert_eq(m.hdr->init->row_offset, 6);
	cr_assert_eq(m.hdr->spec->dtype, PASCO_F64);
	cr_assert_eq(m.hdr->spec->shape[1], 4);
	cr_assert_eq(m.hdr->step, 12);
	PASCO_PASS(pasci_wire_spec_check(m.hdr->spec));
	pasci_wire_msg_fini(&m);

	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ); /* none of them */
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_null(m.hdr->opt);
	cr_assert_null(m.hdr->init);
	cr_assert_null(m.hdr->spec);
	cr_assert_eq(m.hdr->nargs, 0);
	pasci_wire_msg_fini(&m);
}

/* Every hyperparameter of every optimizer (base/optimizer_desc.c's
 * fields), none at its default, arrives as sent: a field the wire's
 * Optimizer message does not carry (schemas/wire.proto, wire_build.c
 * pb_set_optimizer, wire.c get_optimizer) fails here, naming it. */
Test(wire, round_trips_every_optimizers_every_field)
{
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d   = pasci_opt_desc_of(k);
		pasco_optimizer       set = d->defaults;
		pasci_wire_builder    b;
		pasci_wire_msg        m;
		nng_msg              *msg;
		char                  err[256];
		for (int i = 0; i < d->nfields; i++) {
			char *at = (char *) &set + d->fields[i].off;
			if (d->fields[i].is_bool) {
				*(bool *) at = !*(bool *) at;
			} else {
				*(double *) at += 0.125 * (i + 1);
			}
		}
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_APPLY);
		b.hdr.opt = &set;
		PASCO_PASS(pasci_wire_encode(&b, &msg));
		pasci_wire_builder_fini(&b);
		PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
		cr_assert_not_null(m.hdr->opt);
		cr_assert_eq(m.hdr->opt->kind, d->kind);
		for (int i = 0; i < d->nfields; i++) {
			size_t off = d->fields[i].off;
			cr_assert(
			    memcmp((const char *) m.hdr->opt + off,
			        (const char *) &set + off,
			        d->fields[i].is_bool ? sizeof(bool)
			                             : sizeof(double)) == 0,
			    "%s: %s did not cross the wire", d->keras,
			    d->fields[i].key);
		}
		pasci_wire_msg_fini(&m);
	}
}

Test(wire, rejects_a_variable_argument_of_too_high_rank)
{
	Pasco__Wire__Header      h = PASCO__WIRE__HEADER__INIT;
	Pasco__Wire__Arg         a = PASCO__WIRE__ARG__INIT, *ap = &a;
	Pasco__Wire__VariableRef v    = PASCO__WIRE__VARIABLE_REF__INIT;
	Pasco__Wire__TensorMeta  meta = PASCO__WIRE__TENSOR_META__INIT;
	int64_t                  shape[PASCO_MAX_RANK + 1] = {0};
	uint8_t                  body[512]                 = {0};
	size_t                   n;
	char                     err[256];
	pasci_wire_msg           m;
	nng_msg                 *msg;

	meta.dtype   = PASCO__WIRE__DTYPE__F32;
	meta.n_shape = PASCO_MAX_RANK + 1;
	meta.shape   = shape;
	v.name       = "w";
	v.meta       = &meta;
	a.kind       = PASCO__WIRE__ARG__KIND__VARIABLE;
	a.variable   = &v;
	h.method     = PASCO__WIRE__METHOD__RUN;
	h.n_args     = 1;
	h.args       = &ap;
	n            = pasco__wire__header__pack(&h, body + PASCI_WIRE_PREFIX);
	body[11]     = (uint8_t) n; /* big-endian length, n < 256 */
	cr_assert_eq(nng_msg_alloc(&msg, 0), 0);
	nng_msg_append(msg, body, PASCI_PAD8(PASCI_WIRE_PREFIX + n));
	PASCO_FAIL(pasci_wire_decode(&m, msg, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "argument 0") != NULL, "%s", err);
}

static int
decode_bytes(const void *bytes, size_t n, char *err, size_t len)
{
	nng_msg       *msg;
	pasci_wire_msg m;
	int            rv;
	cr_assert_eq(nng_msg_alloc(&msg, 0), 0);
	nng_msg_append(msg, bytes, n);
	rv = pasci_wire_decode(&m, msg, err, len);
	if (rv == 0) {
		pasci_wire_msg_fini(&m);
	}
	return rv;
}

Test(wire, rejects_malformed_messages_with_a_reason)
{
	char          err[256];
	unsigned char junk[64];
	memset(junk, 0xff, sizeof(junk));
	PASCO_FAIL(decode_bytes(junk, 5, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "shorter") != NULL, "%s", err);
	PASCO_FAIL(
	    decode_bytes(junk, sizeof(junk), err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "does not parse") != NULL, "%s", err);
}

Test(wire, rejects_tensors_past_the_end)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	pasci_wire_msg     m;
	char               err[256];
	int64_t            shape[] = {100};
	pasco_tensor      *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, shape));
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_ASSIGN);
	pasci_wire_add_tensor(&b, t, NULL);
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	nng_msg_chop(msg, 40); /* truncate the tensor bytes */
	PASCO_FAIL(pasci_wire_decode(&m, msg, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "needs 400 bytes") != NULL, "%s", err);
	pasco_tensor_release(t);
}

/* VAR_MULTI: parts keep their headers and their own tensors, in order. */
Test(wire, a_multi_request_round_trips_its_parts)
{
	pasci_wire_builder b, part[3];
	pasci_wire_msg     m, got;
	nng_msg           *msg;
	char               err[256];
	pasco_tensor      *t[3] = {test_scalar(PASCO_F32, 1.5),
	         test_scalar(PASCO_I64, 7), test_scalar(PASCO_F64, -2)};
	pasco_optimizer    sgd  = pasco_sgd(0.25, 0, false);
	pasci_wire_builder_init(&part[0], PASCI_METHOD_VAR_READ);
	pasci_wire_builder_init(&part[1], PASCI_METHOD_VAR_APPLY);
	pasci_wire_builder_init(&part[2], PASCI_METHOD_VAR_SCATTER_ADD);
	part[0].hdr.name = "a";
	part[1].hdr.name = "b";
	part[1].hdr.opt  = &sgd;
	part[1].hdr.step = 9;
	part[2].hdr.name = "c";
	pasci_wire_add_tensor(&part[1], t[0], NULL);
	pasci_wire_add_tensor(&part[2], t[1], NULL);
	pasci_wire_add_tensor(&part[2], t[2], NULL);
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
	for (int k = 0; k < 3; k++) {
		pasci_wire_add_part(&b, &part[k]);
	}
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	for (int k = 0; k < 3; k++) {
		pasci_wire_builder_fini(&part[k]);
	}
	PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
	cr_assert_eq(m.hdr->method, PASCI_METHOD_VAR_MULTI);
	cr_assert_eq(m.hdr->nparts, 3);
	cr_assert_eq(m.ntensors, 3);
	PASCO_PASS(pasci_wire_msg_part(&m, 0, &got, err, sizeof(err)));
	cr_assert_eq(got.hdr->method, PASCI_METHOD_VAR_READ);
	cr_assert_str_eq(got.hdr->name, "a");
	cr_assert_eq(got.ntensors, 0);
	pasci_wire_msg_fini(&got);
	PASCO_PASS(pasci_wire_msg_part(&m, 1, &got, err, sizeof(err)));
	cr_assert_str_eq(got.hdr->name, "b");
	cr_assert_eq(got.hdr->step, 9);
	cr_assert_eq(got.hdr->opt->learning_rate, 0.25);
	cr_assert_eq(got.ntensors, 1);
	cr_assert_eq(pasco_tensor_get(got.tensors[0], 0), 1.5);
	pasci_wire_msg_fini(&got);
	PASCO_PASS(pasci_wire_msg_part(&m, 2, &got, err, sizeof(err)));
	cr_assert_eq(got.ntensors, 2);
	cr_assert_eq(got.tensors[0]->dtype, PASCO_I64);
	cr_assert_eq(pasco_tensor_get(got.tensors[0], 0), 7);
	cr_assert_eq(pasco_tensor_get(got.tensors[1], 0), -2);
	pasci_wire_msg_fini(&m); /* the part's tensors hold the message */
	cr_assert_eq(pasco_tensor_get(got.tensors[1], 0), -2);
	pasci_wire_msg_fini(&got);
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(t[k]);
	}
}

/* Packs h as a message with extra bytes of tensor data after it and
 * decodes it: the status, err the reason. */
static int
decode_header(
    const Pasco__Wire__Header *h, size_t extra, char *err, size_t len)
{
	uint8_t body[256] = {0};
	size_t  n = pasco__wire__header__pack(h, body + PASCI_WIRE_PREFIX);
	body[11]  = (uint8_t) n; /* big-endian length, n < 256 */
	return decode_bytes(
	    body, PASCI_PAD8(PASCI_WIRE_PREFIX + n) + extra, err, len);
}

/* A header whose parts' tensors do not add up to the message's, or a
 * part with parts of its own, does not decode. */
Test(wire, rejects_multi_requests_whose_parts_do_not_match)
{
	Pasco__Wire__Header h = PASCO__WIRE__HEADER__INIT,
	                    p = PASCO__WIRE__HEADER__INIT,
	                    q = PASCO__WIRE__HEADER__INIT, *pp[1] = {&p},
	                    *qp[1]     = {&q};
	Pasco__Wire__TensorMeta a      = PASCO__WIRE__TENSOR_META__INIT,
	                        c      = PASCO__WIRE__TENSOR_META__INIT,
	                        *ap[1] = {&a}, *cp[1] = {&c};
	int64_t shape_a[1] = {2}, shape_c[1] = {3};
	char    err[256];
	a.dtype = c.dtype = PASCO__WIRE__DTYPE__F32;
	a.n_shape = c.n_shape = 1;
	a.shape               = shape_a;
	c.shape               = shape_c;
	h.method              = PASCO__WIRE__METHOD__VAR_MULTI;
	h.n_tensors           = 1;
	h.tensors             = ap;
	h.n_parts             = 1;
	h.parts               = pp;
	p.method              = PASCO__WIRE__METHOD__VAR_ASSIGN;
	p.n_tensors           = 1;
	p.tensors             = cp; /* f32[3] where the message has f32[2] */
	PASCO_FAIL(decode_header(&h, 8, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(
	    strstr(err, "part 0's tensor 0 is not the message's tensor 0"),
	    "%s", err);
	/* the part without the tensor: the message has one part lacks */
	p.n_tensors = 0;
	PASCO_FAIL(decode_header(&h, 8, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(
	    strstr(err, "the parts have 0 tensors; the message 1"), "%s", err);
	/* a part with parts */
	h.n_tensors = 0;
	p.n_parts   = 1;
	p.parts     = qp;
	PASCO_FAIL(decode_header(&h, 0, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "part 0 has parts of its own"), "%s", err);
}

/* Parts nested in parts 20,000 deep (about 80 KB of header): refused
 * before protobuf-c's unpacker, which recurses once per level without a
 * bound, could overflow the stack (a stranger's request once crashed a
 * ps this way). Three levels are refused the same way. */
Test(wire, refuses_parts_nested_deeper_than_one_level_without_recursing)
{
	int    depths[] = {20000, 3};
	size_t cap      = 1 << 20;
	char   err[256];
	for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
		uint8_t *buf   = calloc(1, cap);
		size_t   start = cap, n; /* the header grows backwards */
		cr_assert_not_null(buf);
		for (int level = 0; level < depths[d]; level++) {
			uint8_t len[10];
			size_t  k = 0;
			for (size_t v = cap - start;; v >>= 7) {
				len[k++] = (uint8_t) ((v & 0x7f) |
				                      (v >= 0x80 ? 0x80 : 0));
				if (v < 0x80) {
					break;
				}
			}
			start -= k;
			memcpy(buf + start, len, k);
			buf[--start] =
			    0x01; /* key: field 28, length-delimited */
			buf[--start] = 0xe2;
		}
		n = cap - start;
		memmove(buf + PASCI_WIRE_PREFIX, buf + start, n);
		memset(buf, 0, PASCI_WIRE_PREFIX);
		for (int b = 0; b < 4; b++) { /* big-endian header length */
			buf[8 + b] = (uint8_t) (n >> (8 * (3 - b)));
		}
		PASCO_FAIL(decode_bytes(buf, PASCI_PAD8(PASCI_WIRE_PREFIX + n),
		               err, sizeof(err)),
		    PASCO_EPROTO);
		cr_assert(strstr(err, "nests parts in parts"), "%s", err);
		free(buf);
	}
}

/* The request kinds (net/wire.c) against the schema's Method: each
 * of the schema's values is a kind of the same number and name, and each
 * kind a value of the schema's (the compiler checks the numbers of the
 * kinds the table names; this checks that it names them all). */
Test(wire, request_kinds_are_the_schemas_methods_number_by_number)
{
	const ProtobufCEnumDescriptor *e = &pasco__wire__method__descriptor;
	int                            kinds = 0;
	for (unsigned i = 0; i < e->n_values; i++) {
		int         m    = e->values[i].value;
		const char *name = pasci_method_name(m);
		cr_assert_not_null(name,
		    "the schema's %s (%d) is no pasci_method kind "
		    "(net/wire.h, net/wire.c)",
		    e->values[i].name, m);
		cr_assert_str_eq(name, e->values[i].name, "method %d", m);
		cr_assert(
		    (pasci_method_served_by(m) == PASCI_SERVED_BY_NOBODY) ==
		        (m == PASCI_METHOD_NONE),
		    "%s: no server answers it", name);
	}
	for (int m = -1; m <= PASCI_METHOD_COUNT; m++) {
		kinds += pasci_method_name(m) != NULL;
	}
	cr_assert_eq(kinds, (int) e->n_values,
	    "%d kinds, the schema has %u methods", kinds, e->n_values);
	cr_assert_null(pasci_method_name(6), "6 is reserved in the schema");
	cr_assert_eq(pasci_method_served_by(PASCI_METHOD_COUNT),
	    PASCI_SERVED_BY_NOBODY);
}

Test(wire, a_status_reply_carries_its_detail_unformatted_and_whole)
{
	pasci_wire_msg m;
	char           err[256], detail[2001];
	const char    *none = getenv("PASCO_TEST_NO_SUCH_VARIABLE"); /* NULL */
	memset(detail, 'd', 2000);
	detail[2000] = 0;
	/* "%s" (every ps reply's): the detail as given, not cut to the
	 * 1024 bytes a formatted one gets */
	PASCO_PASS(pasci_wire_decode(&m,
	    pasci_wire_status_reply(PASCO_EINVAL, "%s", detail), err,
	    sizeof(err)));
	cr_assert_eq(m.hdr->status, PASCO_EINVAL);
	cr_assert_eq(strlen(m.hdr->error), 2000);
	pasci_wire_msg_fini(&m);
	PASCO_PASS(pasci_wire_decode(&m,
	    pasci_wire_status_reply(PASCO_OK, "%s", none), err, sizeof(err)));
	cr_assert_str_eq(m.hdr->error, "");
	pasci_wire_msg_fini(&m);
	PASCO_PASS(pasci_wire_decode(&m,
	    pasci_wire_status_reply(PASCO_ENOTFOUND, "no %s %d", "x", 3), err,
	    sizeof(err)));
	cr_assert_str_eq(m.hdr->error, "no x 3");
	pasci_wire_msg_fini(&m);
}
