/*
 * The ps server's dispatch (ps/ps_server.c) over inproc: served methods
 * reach the store, anything else is answered with an error naming the
 * method, and a malformed request of a served method says what it lacks.
 */
#include "helpers.h"

#include <string.h>

#include "ps_server.h"
#include "rpc.h"

TestSuite(ps_server, .timeout = 20);

static ps_server        *ps;
static pasci_rpc_client *client;

static void
start(void)
{
	static int n;
	char       url[64];
	snprintf(
	    url, sizeof(url), "inproc://ps-server-%d-%d", (int) getpid(), n++);
	PASCO_PASS(pasci_ps_server_start(&ps, url, 2, NULL));
	PASCO_PASS(pasci_rpc_client_open(&client, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(client, 5000));
}

static void
stop(void)
{
	pasci_rpc_client_close(client);
	pasci_ps_server_stop(ps);
}

/* Calls method m on name with tensors t[0..n) (and opt); err gets the
 * server's message. The reply, if any, is freed; *value (if not NULL)
 * gets element 0 of its first tensor. */
static int
call(pasci_method m, const char *name, pasco_tensor **t, size_t n,
    const pasco_optimizer *opt, double *value, char *err)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	int                rv;
	pasci_wire_builder_init(&b, m);
	b.hdr.name = name;
	b.hdr.opt  = opt;
	for (size_t i = 0; i < n; i++) {
		pasci_wire_add_tensor(&b, t[i], NULL);
	}
	err[0] = 0;
	rv     = pasci_rpc_call(client, &b, 5000, &reply, err, 256);
	pasci_wire_builder_fini(&b);
	if (rv == 0) {
		if (value != NULL) {
			cr_assert_eq(reply.ntensors, 1);
			*value = pasco_tensor_get(reply.tensors[0], 0);
		}
		pasci_wire_msg_fini(&reply);
	}
	return rv;
}

Test(ps_server, served_methods_reach_the_store, .init = start, .fini = stop)
{
	pasco_tensor *t = test_scalar(PASCO_F64, 2);
	char          err[256];
	double        v = 0;
	PASCO_PASS(call(PASCI_METHOD_VAR_CREATE, "w", &t, 1, NULL, NULL, err));
	PASCO_PASS(
	    call(PASCI_METHOD_VAR_ASSIGN_ADD, "w", &t, 1, NULL, NULL, err));
	PASCO_PASS(call(PASCI_METHOD_VAR_APPLY, "w", &t, 1,
	    &(pasco_optimizer){.kind = PASCO_OPT_SGD, .learning_rate = 0.5},
	    NULL, err));
	PASCO_PASS(call(PASCI_METHOD_VAR_READ, "w", NULL, 0, NULL, &v, err));
	cr_assert_eq(v, 3, "2 + 2 - 0.5 * 2, got %g", v);
	PASCO_FAIL(call(PASCI_METHOD_VAR_READ, "nope", NULL, 0, NULL, &v, err),
	    PASCO_ENOTFOUND);
	cr_assert(strstr(err, "nope") != NULL, "%s", err);
	pasco_tensor_release(t);
}

Test(ps_server, methods_it_does_not_serve_are_named_in_the_error,
    .init = start, .fini = stop)
{
	pasco_tensor *t[2] = {
	    test_scalar(PASCO_F64, 1), test_scalar(PASCO_F64, 1)};
	char err[256];
	/* out of the table, a worker's method, and the unused number 6 */
	PASCO_FAIL(
	    call((pasci_method) 99, "w", t, 1, NULL, NULL, err), PASCO_EINVAL);
	cr_assert(strstr(err, "does not serve method 99") != NULL, "%s", err);
	PASCO_FAIL(
	    call(PASCI_METHOD_RUN, "f", t, 2, NULL, NULL, err), PASCO_EINVAL);
	cr_assert(strstr(err, "does not serve method 7") != NULL, "%s", err);
	PASCO_FAIL(call((pasci_method) 6, "w", NULL, 0, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "does not serve method 6") != NULL, "%s", err);
	PASCO_FAIL(call((pasci_method) -3, "w", NULL, 0, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "method -3") != NULL, "%s", err);
	pasco_tensor_release(t[0]);
	pasco_tensor_release(t[1]);
}

/* Every kind net/wire.c gives the ps is served by it (whatever a
 * bare request of it is told, it is not that the ps does not serve it),
 * and every other kind is refused as not served. The RPC layer's kinds
 * (HELLO, AUTH, SHUTDOWN) never reach the ps's handler; an empty
 * VAR_MULTI is refused as not served (its parts: a_multi_request_...). */
Test(ps_server, serves_exactly_the_request_kinds_that_are_a_pss, .init = start,
    .fini = stop)
{
	char err[256];
	for (int m = 0; m < PASCI_METHOD_COUNT; m++) {
		pasci_served_by by = pasci_method_served_by(m);
		bool            refused;
		if (by == PASCI_SERVED_BY_RPC || m == PASCI_METHOD_VAR_MULTI) {
			continue;
		}
		(void) call((pasci_method) m, "x", NULL, 0, NULL, NULL, err);
		refused = strstr(err, "does not serve method") != NULL;
		cr_assert_eq(refused, by != PASCI_SERVED_BY_PS,
		    "method %d (%s): the ps says '%s'", m,
		    pasci_method_name(m) != NULL ? pasci_method_name(m)
		                                 : "no kind",
		    err);
	}
}

Test(ps_server, malformed_requests_say_what_they_lack, .init = start,
    .fini = stop)
{
	pasco_tensor *t[2] = {
	    test_scalar(PASCO_F64, 1), test_scalar(PASCO_F64, 1)};
	char   err[256];
	double v = 0;
	PASCO_PASS(call(PASCI_METHOD_VAR_CREATE, "w", t, 1, NULL, NULL, err));
	PASCO_FAIL(call(PASCI_METHOD_VAR_CREATE, "x", t, 2, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "create of 'x' needs exactly one tensor, got 2"),
	    "%s", err);
	PASCO_FAIL(
	    call(PASCI_METHOD_VAR_ASSIGN, "w", NULL, 0, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(err, "assign of 'w' needs exactly one tensor"), "%s", err);
	PASCO_FAIL(call(PASCI_METHOD_VAR_APPLY, "w", t, 1, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "without an optimizer"), "%s", err);
	PASCO_FAIL(
	    call(PASCI_METHOD_VAR_SCATTER_ADD, "w", t, 1, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "needs ids and rows"), "%s", err);
	PASCO_FAIL(
	    call(PASCI_METHOD_VAR_APPLY_SPARSE, "w", t, 2, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "needs ids, rows and an optimizer"), "%s", err);
	PASCO_FAIL(
	    call(PASCI_METHOD_VAR_GATHER, "w", NULL, 0, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "one tensor of row ids"), "%s", err);
	PASCO_PASS(call(PASCI_METHOD_VAR_READ, "w", NULL, 0, NULL, &v, err));
	cr_assert_eq(v, 1, "a rejected request changed the variable");
	pasco_tensor_release(t[0]);
	pasco_tensor_release(t[1]);
}

/* VAR_CREATE of name from an initializer (ones) as f32[rows, cols]. */
static int
create_init(const char *name, int64_t rows, int64_t cols, char *err)
{
	pasci_wire_builder b;
	pasci_wire_init    w    = {.init = {.kind = PASCO_INIT_ONES},
	          .full_rank             = 2,
	          .full_shape            = {rows, cols}};
	pasci_wire_spec    spec = {PASCO_F32, 2, {rows, cols}};
	int                rv;
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name = name;
	b.hdr.init = &w;
	b.hdr.spec = &spec;
	err[0]     = 0;
	rv         = pasci_rpc_call(client, &b, 20000, NULL, err, 256);
	pasci_wire_builder_fini(&b);
	return rv;
}

static void
start_small_limit(void)
{
	setenv("PASCO_MAX_VARIABLE_MB", "16", 1);
	start();
	unsetenv("PASCO_MAX_VARIABLE_MB");
}

/* A 100-byte request must not make the ps allocate and fill a huge shard:
 * over PASCO_MAX_VARIABLE_MB it is refused, naming the limit, before any
 * memory is taken; under it, it is created. */
Test(ps_server, a_variable_over_the_limit_is_refused_before_it_is_filled,
    .init = start_small_limit, .fini = stop)
{
	char err[256];
	long before;
	before = test_peak_kb_reset();
	/* 256 MB of ones, asked for in one small message */
	PASCO_FAIL(create_init("huge", 65536, 1024, err), PASCO_EINVAL);
	cr_assert(strstr(err, "'huge'") != NULL &&
	              strstr(err, "f32[65536,1024]") != NULL &&
	              strstr(err, "16 MB") != NULL &&
	              strstr(err, "PASCO_MAX_VARIABLE_MB") != NULL,
	    "%s", err);
	cr_assert_lt(test_peak_kb(), before + 32 * 1024,
	    "refusing it took %ld KB", test_peak_kb() - before);
	/* 8 MB is under the limit */
	PASCO_PASS(create_init("fits", 2048, 1024, err));
	PASCO_FAIL(
	    call(PASCI_METHOD_VAR_READ, "huge", NULL, 0, NULL, NULL, err),
	    PASCO_ENOTFOUND);
}

/* A create under an existing name is answered from the name alone: a
 * huge spec is refused as "already exists" with nothing allocated, and
 * the same spec again is a no-op that does not refill the variable. */
Test(ps_server, a_create_under_an_existing_name_allocates_nothing,
    .init = start, .fini = stop)
{
	pasco_tensor *t = test_scalar(PASCO_F64, 2);
	char          err[256];
	double        v = 0;
	long          before;
	PASCO_PASS(call(PASCI_METHOD_VAR_CREATE, "w", &t, 1, NULL, NULL, err));
	before = test_peak_kb_reset();
	/* 512 MB, under the default limit of 1024 MB */
	PASCO_FAIL(create_init("w", 131072, 1024, err), PASCO_EEXIST);
	cr_assert(strstr(err, "'w' already exists as f64[]") != NULL &&
	              strstr(err, "f32[131072,1024]") != NULL,
	    "%s", err);
	cr_assert_lt(test_peak_kb(), before + 32 * 1024,
	    "refusing it took %ld KB", test_peak_kb() - before);
	PASCO_PASS(call(PASCI_METHOD_VAR_READ, "w", NULL, 0, NULL, &v, err));
	cr_assert_eq(v, 2);
	/* ones + ones = 2; the same create again leaves it at 2 */
	PASCO_PASS(create_init("ones", 4, 2, err));
	{
		pasco_tensor *one;
		PASCO_PASS(
		    pasco_tensor_alloc(&one, PASCO_F32, 2, (int64_t[]){4, 2}));
		for (int i = 0; i < 8; i++) {
			pasco_tensor_set(one, i, 1);
		}
		PASCO_PASS(call(PASCI_METHOD_VAR_ASSIGN_ADD, "ones", &one, 1,
		    NULL, NULL, err));
		pasco_tensor_release(one);
	}
	PASCO_PASS(create_init("ones", 4, 2, err));
	PASCO_PASS(
	    call(PASCI_METHOD_VAR_READ, "ones", NULL, 0, NULL, &v, err));
	cr_assert_eq(v, 2, "the create refilled the variable: %g", v);
	pasco_tensor_release(t);
}

/* VAR_MULTI (over nng here): its parts run in order, each answered in
 * the reply's whole-message parts; a part that fails answers with its
 * error and the others still run; an empty one is refused. */
Test(ps_server, a_multi_request_runs_its_parts_in_order, .init = start,
    .fini = stop)
{
	pasco_tensor      *t   = test_scalar(PASCO_F64, 2);
	pasco_optimizer    sgd = {.kind = PASCO_OPT_SGD, .learning_rate = 0.5};
	pasci_wire_builder b, part[4];
	pasci_wire_msg     reply, r;
	char               err[256];
	PASCO_PASS(call(PASCI_METHOD_VAR_CREATE, "w", &t, 1, NULL, NULL, err));
	pasci_wire_builder_init(&part[0], PASCI_METHOD_VAR_APPLY);
	pasci_wire_builder_init(&part[1], PASCI_METHOD_VAR_READ);
	pasci_wire_builder_init(&part[2], PASCI_METHOD_VAR_READ);
	pasci_wire_builder_init(&part[3], PASCI_METHOD_VAR_ASSIGN_ADD);
	part[0].hdr.opt = &sgd;
	pasci_wire_add_tensor(&part[0], t, NULL);
	pasci_wire_add_tensor(&part[3], t, NULL);
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
	for (int k = 0; k < 4; k++) {
		part[k].hdr.name = k == 2 ? "nope" : "w";
		pasci_wire_add_part(&b, &part[k]);
	}
	PASCO_PASS(pasci_rpc_call(client, &b, 5000, &reply, err, sizeof(err)));
	pasci_wire_builder_fini(&b);
	cr_assert_eq(reply.ntensors, 4);
	/* 2 - 0.5 * 2 = 1, read, then a read of nothing, then 1 + 2 */
	PASCO_PASS(pasci_wire_decode_part(&r, reply.tensors[0], err, 256));
	cr_assert_eq(r.hdr->status, 0);
	pasci_wire_msg_fini(&r);
	PASCO_PASS(pasci_wire_decode_part(&r, reply.tensors[1], err, 256));
	cr_assert_eq(r.ntensors, 1);
	cr_assert_eq(pasco_tensor_get(r.tensors[0], 0), 1);
	pasci_wire_msg_fini(&r);
	PASCO_PASS(pasci_wire_decode_part(&r, reply.tensors[2], err, 256));
	cr_assert_eq(r.hdr->status, PASCO_ENOTFOUND);
	cr_assert(strstr(r.hdr->error, "nope") != NULL, "%s", r.hdr->error);
	pasci_wire_msg_fini(&r);
	pasci_wire_msg_fini(&reply);
	double v = 0;
	PASCO_PASS(call(PASCI_METHOD_VAR_READ, "w", NULL, 0, NULL, &v, err));
	cr_assert_eq(v, 3, "the part after the failed one ran: got %g", v);
	/* no parts: not a request a ps serves */
	PASCO_FAIL(call(PASCI_METHOD_VAR_MULTI, "w", NULL, 0, NULL, NULL, err),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "does not serve method 23") != NULL, "%s", err);
	for (int k = 0; k < 4; k++) {
		pasci_wire_builder_fini(&part[k]);
	}
	pasco_tensor_release(t);
}

static void
start_tiny_limit(void)
{
	setenv("PASCO_MAX_VARIABLE_MB", "1", 1);
	pasci_ps_set_multi_floor(64 << 10);
	start();
	unsetenv("PASCO_MAX_VARIABLE_MB");
}

static void
stop_tiny_limit(void)
{
	stop();
	pasci_ps_set_multi_floor((size_t) 512 << 20);
}

/* A crafted VAR_MULTI of many big reads must not make the ps hold all
 * their replies: past the larger of PASCO_MAX_VARIABLE_MB (1 MB here) and
 * the floor, parts are answered with an error, not copied. */
Test(ps_server, a_multi_request_cannot_make_the_ps_hold_unbounded_replies,
    .init = start_tiny_limit, .fini = stop_tiny_limit)
{
	pasci_wire_builder b, part;
	pasci_wire_msg     reply, r;
	char               err[256];
	PASCO_PASS(create_init("w", 75000, 1, err)); /* 300 KB */
	pasci_wire_builder_init(&part, PASCI_METHOD_VAR_READ);
	part.hdr.name = "w";
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
	for (int k = 0; k < 5; k++) { /* 1.5 MB of replies asked for */
		pasci_wire_add_part(&b, &part);
	}
	PASCO_PASS(pasci_rpc_call(client, &b, 5000, &reply, err, sizeof(err)));
	pasci_wire_builder_fini(&b);
	pasci_wire_builder_fini(&part);
	cr_assert_eq(reply.ntensors, 5);
	for (size_t k = 0; k < 5; k++) {
		PASCO_PASS(
		    pasci_wire_decode_part(&r, reply.tensors[k], err, 256));
		if (k < 3) { /* 900 KB fit */
			cr_assert_eq(
			    r.hdr->status, 0, "part %zu: %s", k, r.hdr->error);
			cr_assert_eq(r.ntensors, 1);
			cr_assert_eq(r.tensors[0]->count, 75000);
		} else {
			cr_assert_eq(r.hdr->status, PASCO_EINVAL);
			cr_assert(
			    strstr(r.hdr->error, "send fewer of them") != NULL,
			    "%s", r.hdr->error);
		}
		pasci_wire_msg_fini(&r);
	}
	pasci_wire_msg_fini(&reply);
}
