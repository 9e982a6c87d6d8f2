/*
 * Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/):
 * small valid inputs, each encoded by the library itself, so that the
 * fuzzers start from what the parsers accept. Run from the build directory:
 *   build-fuzz/fuzz/make_seeds fuzz/corpus
 * The output is checked in; rerun it when a format changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bulk_frame.h"
#include "fileio.h"
#include "pasco/dataset.h"
#include "pasco/example.h"
#include "pasco/tfrecord.h"
#include "safetensors.h"
#include "util.h"
#include "wire.h"

static const char *root;

__attribute__((noreturn)) static void
die(const char *what)
{
	fprintf(stderr, "make_seeds: %s\n", what);
	exit(1);
}

static void
put(const char *target, const char *name, const void *data, size_t len)
{
	char  path[1024];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", root, target);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		die(path);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	if ((f = fopen(path, "wb")) == NULL ||
	    fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		die(path);
	}
}

/* A growing byte buffer: a handler target's input, messages framed by
 * 4-byte big-endian lengths. */
typedef struct seq {
	uint8_t *buf;
	size_t   len;
} seq;

static void
seq_add(seq *s, const void *data, size_t len, bool framed)
{
	if ((s->buf = realloc(s->buf, s->len + len + 4)) == NULL) {
		die("out of memory");
	}
	if (framed) {
		for (int i = 0; i < 4; i++) {
			s->buf[s->len++] = (uint8_t) (len >> (24 - 8 * i));
		}
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
}

/* Encodes b (and finishes it) onto s. */
static void
seq_msg(seq *s, pasci_wire_builder *b, bool framed)
{
	nng_msg *m;
	if (pasci_wire_encode(b, &m) != 0) {
		die("encode");
	}
	seq_add(s, nng_msg_body(m), nng_msg_len(m), framed);
	nng_msg_free(m);
	pasci_wire_builder_fini(b);
}

static pasco_tensor *
f32(int32_t rank, const int64_t *shape, double fill)
{
	pasco_tensor *t;
	if (pasco_tensor_alloc(&t, PASCO_F32, rank, shape) != 0) {
		die("tensor");
	}
	for (int64_t i = 0; i < t->count; i++) {
		((float *) t->data)[i] = (float) (fill + (double) i);
	}
	return t;
}

static pasco_tensor *
ids(int64_t n, int64_t first)
{
	pasco_tensor *t;
	if (pasco_tensor_alloc(&t, PASCO_I64, 1, &n) != 0) {
		die("tensor");
	}
	for (int64_t i = 0; i < n; i++) {
		((int64_t *) t->data)[i] = first + i;
	}
	return t;
}

/* One message of method m on variable "w", with tensors a, b (may be
 * NULL; released), onto s. */
static void
var_msg(seq *s, pasci_method m, pasco_tensor *a, pasco_tensor *b,
    const pasco_optimizer *opt)
{
	pasci_wire_builder w;
	pasci_wire_builder_init(&w, m);
	w.hdr.name  = "w";
	w.hdr.opt   = opt;
	w.hdr.scale = 0.5;
	w.hdr.step  = 3;
	if (a != NULL) {
		pasci_wire_add_tensor(&w, a, NULL);
	}
	if (b != NULL) {
		pasci_wire_add_tensor(&w, b, NULL);
	}
	pasco_tensor_release(a);
	pasco_tensor_release(b);
	seq_msg(s, &w, true);
}

static void
ps_seeds(void)
{
	const int64_t      shape[2] = {4, 2}, rows[2] = {2, 2};
	pasco_optimizer    sgd = {.kind = PASCO_OPT_SGD, .learning_rate = 0.1};
	pasco_optimizer    adam = {.kind = PASCO_OPT_ADAM,
	       .learning_rate            = 0.01,
	       .beta_1                   = 0.9,
	       .beta_2                   = 0.999,
	       .epsilon                  = 1e-7};
	pasci_wire_init    init = {.init = {.kind = PASCO_INIT_UNIFORM,
	                               .minval    = -1,
	                               .maxval    = 1,
	                               .seed      = 7},
	       .full_rank                = 2,
	       .full_shape               = {8, 2},
	       .row_offset               = 4};
	pasci_wire_spec    spec = {PASCO_F32, 2, {4, 2}};
	pasci_wire_builder b;
	seq                s = {0};

	var_msg(&s, PASCI_METHOD_VAR_CREATE, f32(2, shape, 1), NULL, NULL);
	var_msg(&s, PASCI_METHOD_VAR_READ, NULL, NULL, NULL);
	var_msg(&s, PASCI_METHOD_VAR_ASSIGN, f32(2, shape, 2), NULL, NULL);
	var_msg(&s, PASCI_METHOD_VAR_ASSIGN_ADD, f32(2, shape, 3), NULL, NULL);
	var_msg(&s, PASCI_METHOD_VAR_GATHER, ids(2, 1), NULL, NULL);
	var_msg(&s, PASCI_METHOD_VAR_SCATTER_ADD, ids(2, 2), f32(2, rows, 1),
	    NULL);
	put("ps_handler", "dense", s.buf, s.len);
	s.len = 0;
	var_msg(&s, PASCI_METHOD_VAR_CREATE, f32(2, shape, 1), NULL, NULL);
	var_msg(&s, PASCI_METHOD_VAR_APPLY, f32(2, shape, 1), NULL, &sgd);
	var_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, ids(2, 0), f32(2, rows, 1),
	    &adam);
	var_msg(&s, PASCI_METHOD_VAR_SET_SLOTS, f32(2, shape, 0),
	    f32(2, shape, 0), &adam);
	var_msg(&s, PASCI_METHOD_VAR_APPLY, f32(2, shape, 1), NULL, &adam);
	put("ps_handler", "optimizers", s.buf, s.len);
	s.len = 0;
	/* the global step's counter, a BSP round, an SSP apply, a flush */
	{
		const int64_t   none[1] = {0};
		pasci_wire_sync bsp     = {.mode = PASCO_BSP, .replicas = 2},
		                ssp     = {.mode   = PASCO_SSP,
		                        .staleness = 1,
		                        .version   = 1};
		var_msg(
		    &s, PASCI_METHOD_VAR_CREATE, f32(2, shape, 1), NULL, NULL);
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
		b.hdr.name      = "global_step";
		pasco_tensor *z = NULL;
		if (pasco_tensor_alloc(&z, PASCO_I64, 0, none) != 0) {
			die("tensor");
		}
		memset(z->data, 0, z->nbytes);
		pasci_wire_add_tensor(&b, z, NULL);
		pasco_tensor_release(z);
		seq_msg(&s, &b, true);
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_FETCH_ADD);
		b.hdr.name = "global_step";
		b.hdr.step = 1;
		b.hdr.sync = &bsp;
		seq_msg(&s, &b, true);
		for (int k = 0; k < 2; k++) {
			pasci_wire_builder_init(&b, PASCI_METHOD_VAR_APPLY);
			b.hdr.name      = "w";
			b.hdr.opt       = &sgd;
			b.hdr.step      = 1;
			b.hdr.sync      = k == 0 ? &bsp : &ssp;
			pasco_tensor *g = f32(2, shape, 1);
			pasci_wire_add_tensor(&b, g, NULL);
			pasco_tensor_release(g);
			seq_msg(&s, &b, true);
		}
		pasci_wire_builder_init(&b, PASCI_METHOD_SYNC_FLUSH);
		seq_msg(&s, &b, true);
		put("ps_handler", "sync", s.buf, s.len);
		s.len = 0;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name = "w";
	b.hdr.init = &init;
	b.hdr.spec = &spec;
	seq_msg(&s, &b, true);
	var_msg(&s, PASCI_METHOD_VAR_READ, NULL, NULL, NULL);
	put("ps_handler", "initializer", s.buf, s.len);
	s.len = 0;
	/* a step's calls in one VAR_MULTI: a read, an apply, a gather */
	{
		pasci_wire_builder part[3];
		pasco_tensor      *t[2] = {f32(2, shape, 1), ids(2, 1)};
		var_msg(
		    &s, PASCI_METHOD_VAR_CREATE, f32(2, shape, 1), NULL, NULL);
		pasci_wire_builder_init(&part[0], PASCI_METHOD_VAR_READ);
		pasci_wire_builder_init(&part[1], PASCI_METHOD_VAR_APPLY);
		pasci_wire_builder_init(&part[2], PASCI_METHOD_VAR_GATHER);
		part[1].hdr.opt = &sgd;
		pasci_wire_add_tensor(&part[1], t[0], NULL);
		pasci_wire_add_tensor(&part[2], t[1], NULL);
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
		for (int k = 0; k < 3; k++) {
			part[k].hdr.name = "w";
			pasci_wire_add_part(&b, &part[k]);
		}
		seq_msg(&s, &b, true);
		for (int k = 0; k < 3; k++) {
			pasci_wire_builder_fini(&part[k]);
		}
		pasco_tensor_release(t[0]);
		pasco_tensor_release(t[1]);
		put("ps_handler", "multi", s.buf, s.len);
	}
	free(s.buf);
}

/* One request on dynamic table `name` onto s: tensors a, b (NULL or
 * released), an optimizer, find_only, a step. */
static void
dyn_msg(seq *s, pasci_method m, const char *name, pasco_tensor *a,
    pasco_tensor *b, const pasco_optimizer *opt, bool find_only)
{
	pasci_wire_builder w;
	pasci_wire_builder_init(&w, m);
	w.hdr.name      = name;
	w.hdr.opt       = opt;
	w.hdr.find_only = find_only;
	w.hdr.step      = m == PASCI_METHOD_VAR_APPLY_SPARSE ? 2 : 0;
	if (a != NULL) {
		pasci_wire_add_tensor(&w, a, NULL);
	}
	if (b != NULL) {
		pasci_wire_add_tensor(&w, b, NULL);
	}
	pasco_tensor_release(a);
	pasco_tensor_release(b);
	seq_msg(s, &w, true);
}

/* A VAR_CREATE of dynamic table name with d onto s. */
static void
dyn_create(seq *s, const char *name, const pasci_wire_dynamic *d)
{
	pasci_wire_builder b;
	pasci_wire_init    init = {.init = {.kind = PASCO_INIT_UNIFORM,
	                               .minval    = -0.05,
	                               .maxval    = 0.05,
	                               .seed      = 3}};
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_CREATE);
	b.hdr.name    = name;
	b.hdr.dynamic = d;
	b.hdr.init    = &init;
	seq_msg(s, &b, true);
}

static pasco_tensor *
i64s(int64_t n, const int64_t *v)
{
	pasco_tensor *t;
	if (pasco_tensor_alloc(&t, PASCO_I64, 1, &n) != 0) {
		die("tensor");
	}
	memcpy(t->data, v, sizeof(int64_t) * (size_t) n);
	return t;
}

/* A DYN_IMPORT into name (dim 4) of rows for keys, with nslots slots of
 * opt (NULL: none); first: the first of a table's imports (clears it).
 * bad: 1 values one row short, 2 meta of 5, 3 too few tensors, 4 slot
 * starts missing. */
static void
dyn_import(seq *s, const char *name, int64_t n, const int64_t *keys,
    const pasco_optimizer *opt, int nslots, bool first, int bad)
{
	pasci_wire_builder b;
	const int64_t      meta[6] = {n, 1, 0, 2, 5, 5}, pend[2] = {77, 78},
	              cnt[2] = {1, 3}, steps[4] = {5, 4, 3, 2};
	int64_t       nmeta = bad == 2 ? 5 : 6, nvals = bad == 1 ? n - 1 : n;
	pasco_tensor *t[7 + 3];
	pasci_wire_builder_init(&b, PASCI_METHOD_DYN_IMPORT);
	b.hdr.name        = name;
	b.hdr.opt         = opt;
	b.hdr.want_result = first;
	t[0]              = i64s(n, keys);
	t[1]              = f32(2, (int64_t[]){nvals, 4}, 0.25);
	t[2]              = i64s(n, steps);
	t[3]              = i64s(2, pend);
	t[4]              = i64s(2, cnt);
	t[5]              = i64s(nmeta, meta);
	if (pasco_tensor_alloc(&t[6], PASCO_F64, 1,
	        (int64_t[]){bad == 4 ? 0 : nslots}) != 0) {
		die("tensor");
	}
	for (int k = 0; k < nslots && bad != 4; k++) {
		((double *) t[6]->data)[k] = 0.1 * k;
	}
	for (int k = 0; k < nslots; k++) {
		t[7 + k] = f32(2, (int64_t[]){n, 4}, 0.5);
	}
	for (int k = 0; k < 7 + nslots; k++) {
		if (bad != 3 || k < 5) {
			pasci_wire_add_tensor(&b, t[k], NULL);
		}
		pasco_tensor_release(t[k]);
	}
	seq_msg(s, &b, true);
}

/* Dynamic embedding tables (issue 22): "d" (dim 4) and "e" (dim 2, rows
 * after 2 lookups, evicted after 3 steps or past 8 rows) exist on the
 * fuzzer's ps before every input (fuzz_ps_handler.c); the seeds create
 * tables of their own too. */
static void
dyn_seeds(void)
{
	const int64_t      k4[4] = {1, -1, INT64_MIN, 1}, k3[3] = {5, 6, 5};
	pasci_wire_dynamic dd = {.dim = 4}, capped = {.dim     = 4,
	                                        .min_count     = 2,
	                                        .evict_after   = 2,
	                                        .max_rows      = 3,
	                                        .default_zeros = true};
	pasco_optimizer    opts[6] = {pasco_sgd(0.1, 0, false),
	       pasco_sgd(0.1, 0.9, true), pasco_adagrad(0.1),
	       pasco_rmsprop(0.01, 0.9, 0.5, true), pasco_adam(0.01, true),
	       pasco_ftrl(0.1, 0.01, 0.01)};
	const char *names[6]       = {"dyn_sgd", "dyn_momentum", "dyn_adagrad",
	          "dyn_rmsprop", "dyn_adam", "dyn_ftrl"};
	seq         s              = {0};
	/* each optimizer: create, lookups (training, then find_only), an
	 * update of keys with and without rows, the counts */
	for (int k = 0; k < 6; k++) {
		dyn_create(&s, "t", &dd);
		dyn_msg(&s, PASCI_METHOD_VAR_GATHER, "t", i64s(3, k3), NULL,
		    NULL, false);
		dyn_msg(&s, PASCI_METHOD_VAR_GATHER, "t", i64s(4, k4), NULL,
		    NULL, true);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "t", i64s(4, k4),
		    f32(2, (int64_t[]){4, 4}, 0.1), &opts[k], false);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "t", i64s(3, k3),
		    f32(2, (int64_t[]){3, 4}, -0.1), &opts[k], false);
		dyn_msg(
		    &s, PASCI_METHOD_DYN_STATS, "t", NULL, NULL, NULL, false);
		put("ps_handler", names[k], s.buf, s.len);
		s.len = 0;
	}
	/* admission, eviction by age and cap on a table of the input's */
	dyn_create(&s, "c", &capped);
	for (int64_t i = 0; i < 6; i++) {
		const int64_t two[2] = {i, i + 1};
		dyn_msg(&s, PASCI_METHOD_VAR_GATHER, "c", i64s(2, two), NULL,
		    NULL, false);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "c", i64s(2, two),
		    f32(2, (int64_t[]){2, 4}, 0.1), &opts[4], false);
	}
	dyn_msg(&s, PASCI_METHOD_DYN_STATS, "c", NULL, NULL, NULL, false);
	put("ps_handler", "dyn_evict", s.buf, s.len);
	s.len = 0;
	/* imports into "d": none, then Adam's 3 slots, then more rows */
	{
		const int64_t keys[4] = {10, 11, 12, 10};
		dyn_import(&s, "d", 2, keys, NULL, 0, true, 0);
		dyn_import(&s, "d", 3, keys, &opts[4], 3, false, 0);
		dyn_import(&s, "d", 4, keys, &opts[4], 3, false, 0);
		dyn_msg(&s, PASCI_METHOD_VAR_GATHER, "d", i64s(4, keys), NULL,
		    NULL, true);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "d", i64s(4, keys),
		    f32(2, (int64_t[]){4, 4}, 0.1), &opts[4], false);
		dyn_msg(
		    &s, PASCI_METHOD_DYN_STATS, "d", NULL, NULL, NULL, false);
		put("ps_handler", "dyn_import", s.buf, s.len);
		s.len = 0;
		/* malformed: short values, short meta, too few tensors,
		 * missing slot starts, a slot kind other than the table's */
		for (int bad = 1; bad <= 4; bad++) {
			dyn_import(&s, "d", 3, keys, &opts[4], 3, true, bad);
		}
		dyn_import(&s, "d", 2, keys, &opts[2], 1, false, 0);
		dyn_import(&s, "d", 2, keys, &opts[4], 2, false, 0);
		dyn_import(&s, "no_such_table", 2, keys, NULL, 0, true, 0);
		dyn_msg(&s, PASCI_METHOD_DYN_STATS, "no_such_table", NULL,
		    NULL, NULL, false);
		put("ps_handler", "dyn_import_bad", s.buf, s.len);
		s.len = 0;
	}
	/* a step's calls on "d" and a fixed "w" in one VAR_MULTI: a lookup,
	 * an update, a count, a read the table refuses */
	{
		pasci_wire_builder part[5], b;
		const int64_t      shape[2] = {4, 2};
		pasco_tensor      *t[3]     = {
		             i64s(3, k3), i64s(3, k3), f32(2, (int64_t[]){3, 4}, 0.1)};
		var_msg(
		    &s, PASCI_METHOD_VAR_CREATE, f32(2, shape, 1), NULL, NULL);
		pasci_wire_builder_init(&part[0], PASCI_METHOD_VAR_GATHER);
		pasci_wire_builder_init(
		    &part[1], PASCI_METHOD_VAR_APPLY_SPARSE);
		pasci_wire_builder_init(&part[2], PASCI_METHOD_DYN_STATS);
		pasci_wire_builder_init(&part[3], PASCI_METHOD_VAR_READ);
		pasci_wire_builder_init(&part[4], PASCI_METHOD_VAR_READ);
		pasci_wire_add_tensor(&part[0], t[0], NULL);
		pasci_wire_add_tensor(&part[1], t[1], NULL);
		pasci_wire_add_tensor(&part[1], t[2], NULL);
		part[1].hdr.opt = &opts[2];
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_MULTI);
		for (int k = 0; k < 5; k++) {
			part[k].hdr.name = k == 4 ? "w" : "d";
			pasci_wire_add_part(&b, &part[k]);
		}
		seq_msg(&s, &b, true);
		for (int k = 0; k < 5; k++) {
			pasci_wire_builder_fini(&part[k]);
		}
		for (int k = 0; k < 3; k++) {
			pasco_tensor_release(t[k]);
		}
		put("ps_handler", "dyn_multi", s.buf, s.len);
		s.len = 0;
	}
	/* refused: keys of i32, a gradient of the wrong width, a whole
	 * read, another optimizer than the table's, a create with other
	 * options and a dim too large */
	{
		const int32_t      k2[2] = {1, 2};
		pasco_tensor      *i32;
		pasci_wire_dynamic other = {.dim = 3}, huge = {.dim = 1 << 21};
		if (pasco_tensor_alloc(&i32, PASCO_I32, 1, (int64_t[]){2}) !=
		    0) {
			die("tensor");
		}
		memcpy(i32->data, k2, sizeof(k2));
		dyn_msg(
		    &s, PASCI_METHOD_VAR_GATHER, "d", i32, NULL, NULL, false);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "e", i64s(3, k3),
		    f32(2, (int64_t[]){3, 4}, 0.1), &opts[0], false);
		dyn_msg(
		    &s, PASCI_METHOD_VAR_READ, "d", NULL, NULL, NULL, false);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "d", i64s(3, k3),
		    f32(2, (int64_t[]){3, 4}, 0.1), &opts[0], false);
		dyn_msg(&s, PASCI_METHOD_VAR_APPLY_SPARSE, "d", i64s(3, k3),
		    f32(2, (int64_t[]){3, 4}, 0.1), &opts[5], false);
		dyn_create(&s, "d", &other);
		dyn_create(&s, "h", &huge);
		put("ps_handler", "dyn_refused", s.buf, s.len);
	}
	free(s.buf);
}

/* A RUN of fn with a tensor, a variable and resource 7 as arguments. */
static void
run_msg(seq *s, const char *fn, uint32_t repeat, bool framed)
{
	const int64_t      shape[2] = {8, 2};
	pasci_wire_builder b;
	pasco_tensor      *t = f32(2, shape, 0);
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.name        = fn;
	b.hdr.want_result = true;
	b.hdr.repeat      = repeat;
	pasci_wire_add_arg_tensor(&b, t);
	pasco_tensor_release(t);
	pasci_wire_add_arg_variable(&b, "w", PASCO_F32, 2, shape, 2);
	pasci_wire_set_arg_shard(&b, 0, "w/part_0", 0, 0, 4);
	pasci_wire_set_arg_shard(&b, 1, "w/part_1", 1, 4, 4);
	pasci_wire_add_arg_resource(&b, 7);
	seq_msg(s, &b, framed);
}

static void
resource_msg(seq *s, pasci_method m, const char *dataset)
{
	pasci_wire_builder b;
	pasci_wire_builder_init(&b, m);
	b.hdr.name     = dataset;
	b.hdr.resource = 7;
	seq_msg(s, &b, true);
}

static void
worker_seeds(void)
{
	pasci_wire_builder b;
	seq                s = {0}, part = {0};
	pasco_tensor      *t;
	int64_t            n;

	resource_msg(&s, PASCI_METHOD_RESOURCE_CREATE, "fuzz_numbers");
	run_msg(&s, "fuzz_echo", 0, true);
	run_msg(&s, "fuzz_fail", 3, true);
	resource_msg(&s, PASCI_METHOD_RESOURCE_RELEASE, "");
	run_msg(&s, "fuzz_echo", 0, true);
	put("worker_handler", "run", s.buf, s.len);
	s.len = 0;
	resource_msg(&s, PASCI_METHOD_RESOURCE_CREATE, "fuzz_numbers");
	resource_msg(&s, PASCI_METHOD_RESOURCE_CREATE, "fuzz_broken");
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN_BATCH);
	for (int i = 0; i < 3; i++) {
		part.len = 0;
		run_msg(&part, i == 1 ? "fuzz_fail" : "fuzz_echo", 2, false);
		n = (int64_t) part.len;
		if (pasco_tensor_from(
		        &t, PASCO_U8, 1, &n, part.buf, part.len) != 0) {
			die("tensor");
		}
		pasci_wire_add_tensor(&b, t, NULL);
		pasco_tensor_release(t);
	}
	seq_msg(&s, &b, true);
	put("worker_handler", "batch", s.buf, s.len);
	free(part.buf);
	free(s.buf);
}

/* A bulk_frame input (fuzz_bulk_frame.c): flags, the length word, the
 * region's first bytes (region, nregion), then the tail. */
static void
bulk_seed(const char *name, uint8_t flags, uint64_t word, const void *region,
    size_t nregion, const void *tail, size_t ntail)
{
	uint8_t head[11];
	seq     s = {0};
	head[0]   = flags;
	pasci_put_be(head + 1, word, 8);
	pasci_put_be(head + 9, nregion, 2);
	seq_add(&s, head, sizeof(head), false);
	if (nregion > 0) {
		seq_add(&s, region, nregion, false);
	}
	if (ntail > 0) {
		seq_add(&s, tail, ntail, false);
	}
	put("bulk_frame", name, s.buf, s.len);
	free(s.buf);
}

/* Frames as a bulk connection carries them (net/bulk_frame.h): a
 * VAR_READ request with a small f32 tensor inline over TCP and over a
 * local link, in a passed region, in a region never passed, and a 5 MB
 * body (a VAR_ASSIGN) in three halves, two of them announced. */
static void
bulk_seeds(void)
{
	const uint64_t     shm = 1ull << 63, big = 5u << 20;
	const int64_t      shape[2]    = {2, 3};
	const uint8_t      announce[2] = {1, 1};
	pasci_wire_builder b;
	pasco_tensor      *t;
	uint8_t           *head;
	size_t             head_len, total;
	int64_t            count;
	seq                s = {0};

	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	b.hdr.name = "w";
	t          = f32(2, shape, 1);
	pasci_wire_add_tensor(&b, t, NULL);
	pasco_tensor_release(t);
	seq_msg(&s, &b, false);
	bulk_seed("inline_tcp", 0, s.len, NULL, 0, s.buf, s.len);
	bulk_seed("inline_local", 2, s.len, NULL, 0, s.buf, s.len);
	bulk_seed("region", 3, s.len | shm, s.buf, s.len, NULL, 0);
	bulk_seed("region_not_passed", 2, s.len | shm, NULL, 0, NULL, 0);
	free(s.buf);

	/* a tensor that makes the body exactly 5 MB: the head is in the
	 * region, the rest of each half zeros */
	count = (int64_t) (big / 4);
	for (;;) {
		pasci_wire_builder_init(&b, PASCI_METHOD_VAR_ASSIGN);
		b.hdr.name = "w";
		if (pasco_tensor_alloc(&t, PASCO_F32, 1, &count) != 0) {
			die("tensor");
		}
		pasci_wire_add_tensor(&b, t, NULL);
		pasco_tensor_release(t);
		if (pasci_wire_encode_head(&b, 0, &head, &head_len, &total) !=
		    0) {
			die("encode");
		}
		pasci_wire_builder_fini(&b);
		if (total == big) {
			break;
		}
		free(head);
		count = (int64_t) ((big - head_len) / 4);
	}
	bulk_seed("halves", 3, big | shm, head, head_len, announce,
	    sizeof(announce));
	free(head);
}

static void
wire_seeds(void)
{
	const int64_t      shape[2] = {2, 3};
	pasci_wire_builder b;
	pasco_tensor      *a = f32(2, shape, 1), *c = ids(3, 5);
	pasco_value       *v;
	seq                s = {0};

	run_msg(&s, "train_step", 2, false);
	put("wire", "run", s.buf, s.len);
	s.len = 0;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	v = pasco_value_list(2, pasco_value_tensor(pasco_tensor_hold(a)),
	    pasco_value_dict(2, "ids",
	        pasco_value_tensor(pasco_tensor_hold(c)), "none",
	        pasco_value_none()));
	pasci_wire_add_value(&b, v);
	b.hdr.status = 0;
	seq_msg(&s, &b, false);
	put("wire", "result", s.buf, s.len);
	pasco_value_free(v);
	pasco_tensor_release(a);
	pasco_tensor_release(c);
	s.len = 0;
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	b.hdr.status = PASCO_ENOTFOUND;
	b.hdr.error  = "no variable 'w'";
	seq_msg(&s, &b, false);
	put("wire", "status", s.buf, s.len);
	free(s.buf);
}

/* Writes a TFRecord file of records through the library's writer, and
 * puts it with the options byte opt in front. */
static void
tfrecord_seed(const char *name, uint8_t opt, bool gzip)
{
	char                   path[] = "/tmp/pasco-seed-XXXXXX";
	int                    fd     = mkstemp(path);
	pasco_tfrecord_writer *w;
	void                  *data;
	size_t                 len;
	char                   err[256];
	seq                    s = {0};
	if (fd < 0) {
		die("mkstemp");
	}
	close(fd);
	if ((gzip ? pasco_tfrecord_writer_open_gzip(&w, path)
	          : pasco_tfrecord_writer_open(&w, path)) != 0 ||
	    pasco_tfrecord_write(w, "hello", 5) != 0 ||
	    pasco_tfrecord_write(w, "", 0) != 0 ||
	    pasco_tfrecord_write(w, "a third record", 14) != 0 ||
	    pasco_tfrecord_writer_close(w) != 0 ||
	    pasci_file_read(path, &data, &len, err, sizeof(err)) != 0) {
		die("tfrecord");
	}
	seq_add(&s, &opt, 1, false);
	seq_add(&s, data, len, false);
	put("tfrecord", name, s.buf, s.len);
	free(data);
	free(s.buf);
	unlink(path);
}

static void
example_seeds(void)
{
	const int64_t two = 2, four = 4;
	pasco_tensor *x = f32(1, &four, 0.25), *w = f32(1, &two, 1);
	pasco_tensor *label, *text, *tag;
	pasco_value  *v;
	void         *data;
	size_t        len;
	if (pasco_tensor_scalar(&label, PASCO_I64, 1) != 0 ||
	    pasco_tensor_from(&text, PASCO_U8, 1, &four, "text", 4) != 0 ||
	    pasco_tensor_from(&tag, PASCO_U8, 1, &two, "u1", 2) != 0) {
		die("tensor");
	}
	/* "tags": a bytes_list of one value, which the HASHED spec hashes */
	v = pasco_value_dict(6, "label", pasco_value_tensor(label), "x",
	    pasco_value_tensor(x), "ids", pasco_value_tensor(ids(2, 10)),
	    "weights", pasco_value_tensor(w), "text", pasco_value_tensor(text),
	    "tags", pasco_value_tensor(tag));
	if (pasco_example_encode(v, &data, &len) != 0) {
		die("example");
	}
	put("example", "all_features", data, len);
	free(data);
	pasco_value_free(v);
}

static void
safetensors_seed(void)
{
	const int64_t     shape[2] = {2, 2};
	char              path[]   = "/tmp/pasco-seed-XXXXXX";
	int               fd       = mkstemp(path);
	pasco_tensor     *t[2]     = {f32(2, shape, 1), ids(3, 0)};
	const char *const names[2] = {"w", "w/.slot/0"};
	cJSON            *meta     = cJSON_CreateObject();
	void             *data;
	size_t            len;
	char              err[256];
	if (fd < 0 || meta == NULL) {
		die("mkstemp");
	}
	close(fd);
	cJSON_AddStringToObject(meta, "step", "3");
	if (pasci_safetensors_write(
	        path, 2, names, t, meta, err, sizeof(err)) != 0 ||
	    pasci_file_read(path, &data, &len, err, sizeof(err)) != 0) {
		die(err);
	}
	put("safetensors", "two_tensors", data, len);
	free(data);
	unlink(path);
	cJSON_Delete(meta);
	pasco_tensor_release(t[0]);
	pasco_tensor_release(t[1]);
}

static void
text_seeds(void)
{
	static const char csv1[] = "\001id,x,name,user,ad\n1,2.5,abc,u1,a\n"
	                           "2,,\"q,d\",\"u,2\",\n-3,1e3,,u3,b\n";
	static const char csv2[] = "\0024;0.5;x;u;a\n5;;\"y\";\"v\";\n";
	static const char tf1[]  = "{\"cluster\": {\"chief\": [\"c:2222\"], "
	                           "\"worker\": [\"w0:2222\", \"w1:2222\"], "
	                           "\"ps\": [\"p0:2222\"]}, \"task\": "
	                           "{\"type\": \"worker\", \"index\": 1}}";
	static const char tf2[]  = "{\"cluster\": {\"master\": "
	                           "[\"inproc://m\"], \"ps\": [\"p:1\", "
	                           "\"p:2\"], \"worker\": [\"w:1\"], "
	                           "\"evaluator\": [\"e:1\"]}, \"task\": "
	                           "{\"type\": \"ps\", \"index\": \"1\"}, "
	                           "\"environment\": \"cloud\", "
	                           "\"rpc_layer\": \"grpc\"}";
	put("csv", "header", csv1, sizeof(csv1) - 1);
	put("csv", "semicolons", csv2, sizeof(csv2) - 1);
	put("cluster", "worker", tf1, sizeof(tf1) - 1);
	put("cluster", "ps_aliases", tf2, sizeof(tf2) - 1);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR (fuzz/corpus)\n");
		return 2;
	}
	root = argv[1];
	if (mkdir(root, 0755) != 0 && errno != EEXIST) {
		die(root);
	}
	wire_seeds();
	bulk_seeds();
	ps_seeds();
	dyn_seeds();
	worker_seeds();
	tfrecord_seed("plain", 0, false);
	tfrecord_seed("skip_corrupt", 1, false);
	tfrecord_seed("gzip", 2, true);
	example_seeds();
	safetensors_seed();
	text_seeds();
	return 0;
}
