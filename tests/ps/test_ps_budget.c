/*
 * A ps's memory budget (PASCO_MAX_PS_MB, ps/budget.h) and what a request
 * may make it hold, over inproc: creates and new rows past the budget are
 * refused with messages naming it and the variable while existing rows
 * keep training, a dynamic table's rows stay under the limit per
 * variable, a request of many lookups is refused part by part before the
 * parts run, and a table's import is checked (NaN, an unknown optimizer,
 * the bound on pending keys).
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "dyn_table.h"
#include "ps_server.h"
#include "rpc.h"
#include "store.h"

TestSuite(ps_budget, .timeout = 60);

static ps_server        *ps;
static pasci_rpc_client *client;

/* A ps over inproc whose budget is budget_mb and limit per variable
 * var_mb (NULL: the defaults). */
static void
start_with(const char *budget_mb, const char *var_mb)
{
	static int n;
	char       url[64];
	snprintf(
	    url, sizeof(url), "inproc://ps-budget-%d-%d", (int) getpid(), n++);
	if (budget_mb != NULL) {
		setenv("PASCO_MAX_PS_MB", budget_mb, 1);
	}
	if (var_mb != NULL) {
		setenv("PASCO_MAX_VARIABLE_MB", var_mb, 1);
	}
	PASCO_PASS(pasci_ps_server_start(&ps, url, 2, NULL));
	unsetenv("PASCO_MAX_PS_MB");
	unsetenv("PASCO_MAX_VARIABLE_MB");
	PASCO_PASS(pasci_rpc_client_open(&client, url, NULL, NULL));
	PASCO_PASS(pasci_rpc_client_wait_up(client, 5000));
}

static void
stop(void)
{
	pasci_rpc_client_close(client);
	pasci_ps_server_stop(ps);
	pasci_ps_set_multi_floor((size_t) 512 << 20);
}

/* Sends b (freed here); err gets the ps's message. The reply, if any, is
 * in *reply when reply is not NULL, else freed. */
static int
ps_send(pasci_wire_builder *b, pasci_wire_msg *reply, char *err)
{
	pasci_wire_msg r;
	int            rv;
	err[0] = 0;
	rv     = pasci_rpc_call(client, b, 20000, &r, err, 512);
	pasci_wire_builder_fini(b);
	if (rv == 0 && reply != NULL) {
		*reply = r;
	} else if (rv == 0) {
		pasci_wire_msg_fini(&r);
	}
	return rv;
}

/* VAR_CREATE of name as f32[rows, cols] of ones, computed on the ps. */
static int
create(const char *name, int64_t rows, int64_t cols, char *err)
{
	pasci_wire_builder b;
	pasci_wire_init    w    = {.init = {.kind = PASCO_INIT_ONES},
	          .full_rank             = 2,
	          .full_shape            = {rows, cols}};
	pasci_wire_spec    spec = {PASCO_F32, 2, {rows, cols}};
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name = name;
	b.hdr.init = &w;
	b.hdr.spec = &spec;
	return ps_send(&b, NULL, err);
}

/* A dynamic table name of dim floats a row (at most max_rows per ps). */
static int
create_table(const char *name, int64_t dim, int64_t max_rows, char *err)
{
	pasci_wire_builder b;
	pasci_wire_init    w = {.init = pasco_init_uniform(-1, 1, 3)};
	pasci_wire_dynamic d = {.dim = dim, .max_rows = max_rows};
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name    = name;
	b.hdr.init    = &w;
	b.hdr.dynamic = &d;
	return ps_send(&b, NULL, err);
}

static pasco_tensor *
keys_from(int64_t first, int64_t n)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I64, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		((int64_t *) t->data)[i] = first + i;
	}
	return t;
}

/* A training lookup of keys [first, first + n) in name: its rows. */
static pasco_tensor *
lookup(const char *name, int64_t first, int64_t n)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	pasco_tensor      *keys = keys_from(first, n), *rows;
	char               err[512];
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_GATHER);
	b.hdr.name = name;
	pasci_wire_add_tensor(&b, keys, NULL);
	cr_assert_eq(ps_send(&b, &reply, err), 0, "%s", err);
	pasco_tensor_release(keys);
	cr_assert_eq(reply.ntensors, 1);
	PASCO_PASS(pasco_tensor_copy(&rows, reply.tensors[0]));
	pasci_wire_msg_fini(&reply);
	return rows;
}

/* A sparse apply of g everywhere to keys [first, first + n) of name. */
static int
update(const char *name, const pasco_optimizer *opt, int64_t first, int64_t n,
    int64_t dim, char *err)
{
	pasci_wire_builder b;
	pasco_tensor      *keys = keys_from(first, n), *grad;
	int                rv;
	PASCO_PASS(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){n, dim}));
	for (int64_t i = 0; i < n * dim; i++) {
		((float *) grad->data)[i] = 1;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_APPLY_SPARSE);
	b.hdr.name = name;
	b.hdr.opt  = opt;
	pasci_wire_add_tensor(&b, keys, NULL);
	pasci_wire_add_tensor(&b, grad, NULL);
	rv = ps_send(&b, NULL, err);
	pasco_tensor_release(keys);
	pasco_tensor_release(grad);
	return rv;
}

/* DYN_STATS of name: rows, pending, created, evicted_age, evicted_cap,
 * refused, step. */
static int64_t
stat_of(const char *name, int which)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	char               err[512];
	int64_t            v;
	pasci_wire_builder_init(&b, PASCI_METHOD_DYN_STATS);
	b.hdr.name = name;
	cr_assert_eq(ps_send(&b, &reply, err), 0, "%s", err);
	v = ((const int64_t *) reply.tensors[0]->data)[which];
	pasci_wire_msg_fini(&reply);
	return v;
}

enum { ROWS, PENDING, CREATED, EVICTED_AGE, EVICTED_CAP, REFUSED };

/* A create that would pass the budget is refused before it is filled,
 * naming the variable and the budget; so are the slots an optimizer
 * would add; a variable under it is still created, and one without slots
 * keeps training. The count is exact: what was created, no more. */
Test(ps_budget, a_create_past_the_budget_is_refused_naming_it)
{
	const pasci_budget *bud;
	pasco_optimizer     adam = pasco_adam(0.1, false);
	pasco_optimizer     sgd  = pasco_sgd(0.5, 0, false);
	pasco_tensor       *t    = test_scalar(PASCO_F64, 2);
	pasci_wire_builder  b;
	char                err[512];
	size_t              used;
	long                before;
	start_with("64", NULL);
	bud = pasci_ps_server_budget(ps);
	cr_assert_eq(bud->limit, (size_t) 64 << 20);
	cr_assert_eq(create("a", 10240, 1024, err), 0, "%s", err); /* 40 MB */
	used = pasci_budget_used(bud);
	cr_assert_eq(used, pasci_store_cost("a", (size_t) 40 << 20));
	before = test_peak_kb_reset();
	PASCO_FAIL(create("b", 10240, 1024, err), PASCO_ENOMEM);
	cr_assert(strstr(err, "'b'") != NULL &&
	              strstr(err, "memory budget of 64 MB") != NULL &&
	              strstr(err, "PASCO_MAX_PS_MB") != NULL,
	    "%s", err);
	cr_assert_lt(test_peak_kb() - before, 16 * 1024,
	    "refusing it allocated %ld KB", test_peak_kb() - before);
	cr_assert_eq(pasci_budget_used(bud), used,
	    "a refused create is "
	    "given back");
	/* a value sent whole is refused the same way */
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name = "s";
	pasci_wire_add_tensor(&b, t, NULL);
	cr_assert_eq(ps_send(&b, NULL, err), 0, "%s", err);
	used = pasci_budget_used(bud);
	cr_assert_eq(
	    create("c", 2048, 1024, err), 0, "%s", err); /* 8 MB fits */
	cr_assert_eq(pasci_budget_used(bud),
	    used + pasci_store_cost("c", (size_t) 8 << 20));
	used = pasci_budget_used(bud);
	/* Adam's two slots for "a" (80 MB) do not fit; SGD needs none */
	PASCO_FAIL(update("a", &adam, 0, 2, 1024, err), PASCO_ENOMEM);
	cr_assert(strstr(err, "'a'") != NULL && strstr(err, "slots") &&
	              strstr(err, "PASCO_MAX_PS_MB") != NULL,
	    "%s", err);
	cr_assert_eq(pasci_budget_used(bud), used);
	cr_assert_eq(update("a", &sgd, 0, 2, 1024, err), 0, "%s", err);
	/* the ps still answers everything */
	cr_assert_eq(create("c", 2048, 1024, err), 0, "%s", err);
	pasco_tensor_release(t);
	stop();
}

/* Three variables of a third of the budget each: the third is refused,
 * whatever their names (the budget covers every variable, not each). */
Test(ps_budget, variables_under_different_names_share_one_budget)
{
	char err[512];
	start_with("96", "64");
	cr_assert_eq(create("v0", 10240, 1024, err), 0, "%s", err);
	cr_assert_eq(create("v1", 10240, 1024, err), 0, "%s", err);
	PASCO_FAIL(create("v2", 10240, 1024, err), PASCO_ENOMEM);
	cr_assert(strstr(err, "'v2'") != NULL, "%s", err);
	cr_assert_leq(
	    pasci_budget_peak(pasci_ps_server_budget(ps)), (size_t) 96 << 20);
	stop();
}

/* A dynamic table fills the budget: new rows past it are refused (their
 * keys read the default, counted as refused, and the ps's log names the
 * table and the budget), rows it has keep training with Adam, a capped
 * table still takes new keys by evicting, new variables are refused, and
 * the ps stays up. */
Test(ps_budget, a_table_past_the_budget_refuses_new_rows_and_trains_the_rest)
{
	const pasci_budget *bud;
	pasco_optimizer     adam = pasco_adam(0.1, false);
	pasco_tensor       *before, *after;
	char                err[512], *log;
	int64_t             n = 0;
	int                 saved;
	start_with("16", NULL);
	bud = pasci_ps_server_budget(ps);
	cr_assert_eq(create_table("emb", 1024, 0, err), 0, "%s", err);
	cr_assert_eq(create_table("capped", 1024, 4, err), 0, "%s", err);
	pasco_tensor_release(lookup("capped", 0, 4));
	pasco_tensor_release(lookup("emb", 0, 8));
	cr_assert_eq(update("emb", &adam, 0, 8, 1024, err), 0, "%s", err);
	saved = test_stderr_capture();
	for (; n < 8000; n += 1000) { /* 31 MB of rows asked for */
		pasco_tensor_release(lookup("emb", 8 + n, 1000));
	}
	log = test_stderr_take(saved);
	cr_assert(strstr(log, "dynamic table 'emb'") != NULL &&
	              strstr(log, "refused") != NULL &&
	              strstr(log, "memory budget of 16 MB") != NULL &&
	              strstr(log, "PASCO_MAX_PS_MB") != NULL,
	    "%s", log);
	free(log);
	cr_assert_lt(stat_of("emb", ROWS), 4000);
	cr_assert_eq(stat_of("emb", ROWS) + stat_of("emb", REFUSED), 8008);
	cr_assert_leq(pasci_budget_peak(bud), (size_t) 16 << 20);
	/* the first rows train on: their slots were made with them */
	before = lookup("emb", 0, 8);
	cr_assert_eq(update("emb", &adam, 0, 8, 1024, err), 0, "%s", err);
	after = lookup("emb", 0, 8);
	for (int64_t i = 0; i < 8 * 1024; i++) {
		cr_assert_float_eq(((float *) after->data)[i],
		    ((float *) before->data)[i] - 0.1f, 1e-4);
	}
	/* and so do the last rows made, in a chunk made under the budget */
	int64_t last = 8 + stat_of("emb", ROWS) - 9;
	cr_assert_eq(update("emb", &adam, last, 1, 1024, err), 0, "%s", err);
	/* at its cap, a table takes new keys in place of its old ones */
	pasco_tensor_release(lookup("capped", 100, 10));
	cr_assert_eq(stat_of("capped", ROWS), 4);
	cr_assert_eq(stat_of("capped", EVICTED_CAP), 10);
	cr_assert_eq(stat_of("capped", REFUSED), 0);
	/* a new table costs its bookkeeping only: its first row is refused */
	cr_assert_eq(create_table("more", 1 << 20, 0, err), 0, "%s", err);
	pasco_tensor_release(lookup("more", 0, 1));
	cr_assert_eq(stat_of("more", ROWS), 0);
	cr_assert_eq(stat_of("more", REFUSED), 1);
	PASCO_FAIL(create("w", 4096, 1024, err), PASCO_ENOMEM);
	cr_assert(strstr(err, "'w'") != NULL, "%s", err);
	pasco_tensor_release(before);
	pasco_tensor_release(after);
	stop();
}

/* A table's rows times their bytes are held to the limit per variable
 * (1 MB here: 256 rows of 1,024 floats), as a fixed variable's are. */
Test(ps_budget, a_tables_rows_stay_under_the_limit_per_variable)
{
	char err[512];
	int  saved;
	start_with(NULL, "1");
	cr_assert_eq(create_table("emb", 1024, 0, err), 0, "%s", err);
	saved = test_stderr_capture();
	pasco_tensor_release(lookup("emb", 0, 200));
	pasco_tensor_release(lookup("emb", 200, 100));
	char *log = test_stderr_take(saved);
	cr_assert(strstr(log, "'emb'") != NULL &&
	              strstr(log, "PASCO_MAX_VARIABLE_MB") != NULL,
	    "%s", log);
	free(log);
	cr_assert_eq(stat_of("emb", ROWS), 256);
	cr_assert_eq(stat_of("emb", REFUSED), 44);
	stop();
}

/* A VAR_MULTI of 8 lookups of 300 new keys (300 KB of rows each) where
 * 1 MB of replies is the most: 3 parts are answered, the other 5 refused
 * before they run, so they make no rows (each made 300 rows, and cost
 * its CPU and memory, before its reply was refused). */
Test(ps_budget, a_multi_request_is_refused_part_by_part_before_they_run)
{
	pasci_wire_builder b, part[8];
	pasci_wire_msg     reply, r;
	pasco_tensor      *keys[8];
	char               err[512];
	start_with(NULL, "1");
	pasci_ps_set_multi_floor(64 << 10);
	cr_assert_eq(create_table("emb", 256, 0, err), 0, "%s", err);
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
	for (int k = 0; k < 8; k++) {
		keys[k] = keys_from(k * 300, 300);
		pasci_wire_builder_init(&part[k], PASCI_METHOD_VAR_GATHER);
		part[k].hdr.name = "emb";
		pasci_wire_add_tensor(&part[k], keys[k], NULL);
		pasci_wire_add_part(&b, &part[k]);
	}
	cr_assert_eq(ps_send(&b, &reply, err), 0, "%s", err);
	cr_assert_eq(reply.ntensors, 8);
	for (int k = 0; k < 8; k++) {
		PASCO_PASS(
		    pasci_wire_decode_part(&r, reply.tensors[k], err, 256));
		if (k < 3) {
			cr_assert_eq(
			    r.hdr->status, 0, "part %d: %s", k, r.hdr->error);
		} else {
			cr_assert_eq(r.hdr->status, PASCO_EINVAL);
			cr_assert(strstr(r.hdr->error, "send fewer") != NULL,
			    "%s", r.hdr->error);
		}
		pasci_wire_msg_fini(&r);
		pasci_wire_builder_fini(&part[k]);
		pasco_tensor_release(keys[k]);
	}
	pasci_wire_msg_fini(&reply);
	cr_assert_eq(stat_of("emb", CREATED), 900,
	    "the refused parts made rows: %lld",
	    (long long) stat_of("emb", CREATED));
	stop();
}

/* A lookup whose rows would not fit in one message (1 MB here) is
 * refused before it makes them: the client would refuse the reply (a ps
 * made 1 GB of rows and replies its clients could not take). */
Test(ps_budget, a_lookup_whose_reply_passes_the_message_limit_makes_nothing)
{
	pasci_wire_builder b;
	pasco_tensor      *keys = keys_from(0, 300); /* 1.2 MB of rows */
	char               err[512];
	setenv("PASCO_MAX_MESSAGE_MB", "1", 1);
	start_with(NULL, NULL);
	cr_assert_eq(create_table("emb", 1024, 0, err), 0, "%s", err);
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_GATHER);
	b.hdr.name = "emb";
	pasci_wire_add_tensor(&b, keys, NULL);
	PASCO_FAIL(ps_send(&b, NULL, err), PASCO_EINVAL);
	cr_assert(strstr(err, "send fewer keys") != NULL &&
	              strstr(err, "PASCO_MAX_MESSAGE_MB") != NULL,
	    "%s", err);
	cr_assert_eq(stat_of("emb", CREATED), 0);
	pasco_tensor_release(keys);
	stop();
}

/* A DYN_IMPORT of rows for keys (1 + 1 / 4 each, value at row 0 the
 * first value), with slots of optimizer kind (0: none). */
static int
import(
    const char *name, int64_t n, float first, int kind, int nslots, char *err)
{
	pasci_wire_builder b;
	pasco_optimizer    opt     = {.kind = (pasco_optimizer_kind) kind};
	const int64_t      meta[6] = {n, 0, 0, 0, 1, 1};
	pasco_tensor      *t[7 + 3];
	int64_t            zero = 0;
	int                rv;
	t[0] = keys_from(1, n);
	PASCO_PASS(pasco_tensor_alloc(&t[1], PASCO_F32, 2, (int64_t[]){n, 4}));
	for (int64_t i = 0; i < n * 4; i++) {
		((float *) t[1]->data)[i] = 1.25f;
	}
	((float *) t[1]->data)[0] = first;
	PASCO_PASS(pasco_tensor_alloc(&t[2], PASCO_I64, 1, &n));
	PASCO_PASS(pasco_tensor_alloc(&t[3], PASCO_I64, 1, &zero));
	PASCO_PASS(pasco_tensor_alloc(&t[4], PASCO_I64, 1, &zero));
	PASCO_PASS(pasco_tensor_alloc(&t[5], PASCO_I64, 1, (int64_t[]){6}));
	memcpy(t[5]->data, meta, sizeof(meta));
	PASCO_PASS(
	    pasco_tensor_alloc(&t[6], PASCO_F64, 1, (int64_t[]){nslots}));
	for (int k = 0; k < nslots; k++) {
		PASCO_PASS(pasco_tensor_alloc(
		    &t[7 + k], PASCO_F32, 2, (int64_t[]){n, 4}));
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_DYN_IMPORT);
	b.hdr.name        = name;
	b.hdr.opt         = kind != 0 ? &opt : NULL;
	b.hdr.want_result = true;
	for (int k = 0; k < 7 + nslots; k++) {
		pasci_wire_add_tensor(&b, t[k], NULL);
	}
	rv = ps_send(&b, NULL, err);
	for (int k = 0; k < 7 + nslots; k++) {
		pasco_tensor_release(t[k]);
	}
	return rv;
}

/* An import of a NaN or an infinity, or of slots of an optimizer kind no
 * ps knows, is refused, naming what is wrong, and changes nothing. */
Test(ps_budget, an_import_of_nan_or_an_unknown_optimizer_is_refused)
{
	char err[512];
	start_with(NULL, NULL);
	cr_assert_eq(create_table("emb", 4, 0, err), 0, "%s", err);
	PASCO_FAIL(import("emb", 3, NAN, 0, 0, err), PASCO_EINVAL);
	cr_assert(strstr(err, "'emb'") != NULL &&
	              strstr(err, "key 1") != NULL &&
	              strstr(err, "not a finite number") != NULL,
	    "%s", err);
	PASCO_FAIL(import("emb", 3, INFINITY, 0, 0, err), PASCO_EINVAL);
	PASCO_FAIL(import("emb", 3, 0.5f, 99, 0, err), PASCO_EINVAL);
	cr_assert(strstr(err, "unknown optimizer kind 99") != NULL, "%s", err);
	cr_assert_eq(stat_of("emb", ROWS), 0);
	cr_assert_eq(
	    import("emb", 3, 0.5f, PASCO_OPT_ADAGRAD, 1, err), 0, "%s", err);
	cr_assert_eq(stat_of("emb", ROWS), 3);
	stop();
}
