/*
 * Every optimizer through a checkpoint: for each kind of the descriptor
 * table (base/optimizer_desc.h), steps with a varying gradient, a save,
 * a restore into another ps layout, more steps, compared with the run that
 * was not interrupted. A new optimizer without a configuration here fails
 * the loop. And a manifest naming an optimizer or a slot this Pasco does
 * not know is refused, naming it.
 */
#include "helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_desc.h"

TestSuite(checkpoint_optimizers, .timeout = 120);

#define ROWS 6
#define COLS 2
#define SAVED_AT 3
#define STEPS 8

static char dir[64];

static void
make_dir(void)
{
	strcpy(dir, "/tmp/pasco-ckopt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	setenv("PASCO_CHECKPOINT_DIR", dir, 1);
}

static void
remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* A configuration of kind that uses every slot it has, its descriptor's
 * every_slot (kind 0 when there is none). */
static pasco_optimizer
config_of(int kind)
{
	const pasci_opt_desc *d = pasci_opt_desc_of(kind);
	return d != NULL && d->every_slot != NULL ? d->every_slot()
	                                          : (pasco_optimizer){.kind = 0};
}

/* The gradient of step t: different at every step and element, large
 * before the save and small after (so that a lost maximum, Adam's vhat,
 * shows). */
static pasco_tensor *
gradient(int t)
{
	pasco_tensor *g;
	PASCO_PASS(
	    pasco_tensor_alloc(&g, PASCO_F32, 2, (int64_t[]){ROWS, COLS}));
	for (int i = 0; i < ROWS * COLS; i++) {
		double scale = t <= SAVED_AT ? 1.0 : 0.05;
		pasco_tensor_set(
		    g, i, scale * sin(0.7 * t + 1.3 * i) + 0.05 * (i - 5));
	}
	return g;
}

static void
steps(pasco_variable *v, const pasco_optimizer *o, int from, int to)
{
	for (int t = from; t <= to; t++) {
		pasco_tensor *g = gradient(t);
		PASCO_PASS(pasco_variable_apply_gradient(v, o, g));
		pasco_tensor_release(g);
	}
}

typedef struct run {
	test_cluster      tc;
	pasco_partitioner p;
	pasco_strategy   *s;
	pasco_variable   *v;
} run;

/* A cluster of nps ps tasks holding "v" in `shards` shards, set to
 * base + 0.1 i. */
static void
run_start(run *r, int nps, int shards, double base)
{
	pasco_strategy_options o = {.partitioner = &r->p};
	pasco_tensor          *t;
	r->p = pasco_fixed_shards_partitioner(shards);
	test_cluster_start(&r->tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&r->s, r->tc.cluster, &o));
	PASCO_PASS(
	    pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){ROWS, COLS}));
	for (int i = 0; i < ROWS * COLS; i++) {
		pasco_tensor_set(t, i, base + 0.1 * i);
	}
	PASCO_PASS(pasco_variable_create(&r->v, r->s, "v", t));
	pasco_tensor_release(t);
}

static void
run_stop(run *r)
{
	pasco_variable_free(r->v);
	pasco_strategy_destroy(r->s);
	test_cluster_stop(&r->tc);
}

static pasco_tensor *
value_of(pasco_variable *v)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_variable_read(v, &t));
	return t;
}

static double
max_diff(const pasco_tensor *a, const pasco_tensor *b)
{
	double d = 0;
	for (int64_t i = 0; i < a->count; i++) {
		d = fmax(
		    d, fabs(pasco_tensor_get(a, i) - pasco_tensor_get(b, i)));
	}
	return d;
}

Test(checkpoint_optimizers, every_optimizer_resumes_where_it_stopped)
{
	for (int kind = 1; kind < PASCI_OPT_KINDS; kind++) {
		const pasci_opt_desc *d = pasci_opt_desc_of(kind);
		pasco_optimizer       o = config_of(kind);
		run                   a, b, c;
		pasco_tensor         *saved, *whole, *resumed, *fresh;
		char                  path[128];
		int64_t               step = 0;
		cr_assert_not_null(
		    d, "optimizer kind %d has no descriptor", kind);
		cr_assert_eq((int) o.kind, kind,
		    "no test configuration for optimizer %s: its "
		    "descriptor's every_slot",
		    d->name);
		make_dir();
		/* uninterrupted, in 3 shards over 2 ps, saved at SAVED_AT */
		run_start(&a, 2, 3, -0.5);
		steps(a.v, &o, 1, SAVED_AT);
		PASCO_PASS(pasco_checkpoint_save(a.s, dir, SAVED_AT, 0));
		saved = value_of(a.v);
		steps(a.v, &o, SAVED_AT + 1, STEPS);
		whole = value_of(a.v);
		run_stop(&a);
		/* restored into 2 shards over 3 ps, then the same steps */
		run_start(&b, 3, 2, 7);
		snprintf(path, sizeof(path), "%s/ckpt-%d", dir, SAVED_AT);
		PASCO_PASS(pasco_checkpoint_restore(b.s, path, &step));
		cr_assert_eq(step, SAVED_AT);
		steps(b.v, &o, SAVED_AT + 1, STEPS);
		resumed = value_of(b.v);
		cr_assert(max_diff(whole, resumed) < 1e-6,
		    "%s: resumed from the checkpoint, off by %g", d->name,
		    max_diff(whole, resumed));
		/* the same values with fresh slots end elsewhere: the
		 * comparison above would catch slots lost on the way */
		run_start(&c, 1, 1, 0);
		PASCO_PASS(pasco_variable_assign(c.v, saved));
		steps(c.v, &o, SAVED_AT + 1, STEPS);
		fresh = value_of(c.v);
		cr_assert(max_diff(whole, fresh) > 1e-4,
		    "%s: the slots do not change the result (%g)", d->name,
		    max_diff(whole, fresh));
		run_stop(&b);
		run_stop(&c);
		pasco_tensor_release(saved);
		pasco_tensor_release(whole);
		pasco_tensor_release(resumed);
		pasco_tensor_release(fresh);
		remove_dir();
	}
}

/* Runs a python3 snippet (stdlib only) on ckpt-1's manifest, in m. */
static void
edit_manifest(const char *code)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 -c 'import json, sys\n"
	    "p = sys.argv[1] + \"/ckpt-1/manifest.json\"\n"
	    "m = json.load(open(p))\n"
	    "sl = m[\"variables\"][0][\"shards\"][0][\"slots\"]\n"
	    "%s\n"
	    "json.dump(m, open(p, \"w\"))' %s",
	    code, dir);
	cr_assert_eq(system(cmd), 0, "could not edit the manifest");
}

/* A manifest whose slots name an optimizer, or a slot, that this Pasco
 * does not know is refused, naming it, before any variable is written
 * (its slots were dropped, and the restore said it succeeded). */
Test(checkpoint_optimizers, an_unknown_optimizer_or_slot_name_is_refused)
{
	run             a;
	pasco_optimizer adam = pasco_adam(0.1, true);
	pasco_tensor   *before, *after;
	char            path[128];
	make_dir();
	run_start(&a, 1, 1, 0);
	steps(a.v, &adam, 1, 2);
	snprintf(path, sizeof(path), "%s/ckpt-1", dir);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 1, 0));
	steps(a.v, &adam, 3, 3);
	before = value_of(a.v);
	edit_manifest("sl[\"optimizer\"] = \"lion\"");
	PASCO_FAIL(pasco_checkpoint_restore(a.s, path, NULL), PASCO_EPROTO);
	cr_assert(strstr(pasco_strategy_error(a.s), "ckpt-1") &&
	              strstr(pasco_strategy_error(a.s), "'v'") &&
	              strstr(pasco_strategy_error(a.s),
	                  "optimizer 'lion', which this Pasco does not know"),
	    "%s", pasco_strategy_error(a.s));
	edit_manifest("sl[\"optimizer\"] = \"adam\"\n"
	              "sl[\"names\"][2] = \"vhut\"");
	PASCO_FAIL(pasco_checkpoint_restore(a.s, path, NULL), PASCO_EPROTO);
	cr_assert(strstr(pasco_strategy_error(a.s), "adam slot 'vhut', which "
	                                            "that optimizer does not "
	                                            "have (its slots: m, v, "
	                                            "vhat)"),
	    "%s", pasco_strategy_error(a.s));
	edit_manifest("sl[\"names\"] = [\"m\", \"v\"]\n"
	              "sl[\"count\"] = 2");
	PASCO_FAIL(pasco_checkpoint_restore(a.s, path, NULL), PASCO_EPROTO);
	cr_assert(strstr(pasco_strategy_error(a.s), "has 3"), "%s",
	    pasco_strategy_error(a.s));
	after = value_of(a.v); /* nothing was written */
	cr_assert_eq(max_diff(before, after), 0);
	/* put back as saved, it restores */
	edit_manifest("sl[\"names\"] = [\"m\", \"v\", \"vhat\"]\n"
	              "sl[\"count\"] = 3");
	PASCO_PASS(pasco_checkpoint_restore(a.s, path, NULL));
	pasco_tensor_release(before);
	pasco_tensor_release(after);
	run_stop(&a);
	remove_dir();
}
