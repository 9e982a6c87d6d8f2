/*
 * ps memory: how many resident bytes a ps uses per byte of variables and
 * optimizer slots it stores. The benchmark starts its own ps process (this
 * binary in the ps role), reads its resident set (/proc/<pid>/statm) when
 * empty and again after variables are created (values computed on the ps)
 * and one Adam step has been applied to each (two slots per variable),
 * then idle for 2.5 s (a ps keeps its last big transfer buffers for 1 s),
 * and reports the growth beside the bytes stored (baseline: ratio 1.00 is
 * no overhead at all).
 *
 *     pasco launch --ps 1 --workers 1 -- build/bench/ps_memory [--quick]
 *
 * Two layouts: 8 variables of 32 MB (2 MB each with --quick), and 20,000
 * variables of 1 KB (2,000 with --quick).
 *
 * With --limits it measures instead what the ps's memory budget bounds
 * (issue 31), on a ps started with PASCO_MAX_PS_MB=512: three 200 MB
 * variables under different names (the third is refused), then a dynamic
 * table of 4 MB rows looked up 10 times with 250 new keys (2 KB of keys a
 * request, refused: the reply would pass a message) and 10 times with 60
 * (the ps's peak resident size, the rows it holds and refuses).
 */
#include <pasco.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench.h"

/* Creates n variables of `floats` f32 each, applies one Adam step to each;
 * returns the bytes stored (values and two slots), or -1. */
static double
fill(pasco_strategy *s, const char *prefix, int n, int64_t floats)
{
	pasco_initializer init = pasco_init_uniform(-1, 1, 3);
	pasco_optimizer   adam = pasco_adam(0.001, false);
	pasco_tensor     *grad;
	int               rv = 0;
	pasco_tensor_alloc(&grad, PASCO_F32, 1, &floats);
	for (int64_t i = 0; i < floats; i++) {
		((float *) grad->data)[i] = 0.01f;
	}
	for (int i = 0; i < n && rv == 0; i++) {
		pasco_variable *v;
		char            name[64];
		snprintf(name, sizeof(name), "%s_%d", prefix, i);
		rv = pasco_variable_create_init(
		    &v, s, name, PASCO_F32, 1, &floats, &init);
		if (rv == 0) {
			rv = pasco_variable_apply_gradient(v, &adam, grad);
			pasco_variable_free(v);
		}
	}
	pasco_tensor_release(grad);
	return rv == 0 ? 3.0 * (double) n * (double) floats * 4 : -1;
}

/* The peak resident size of pid (VmHWM), in bytes, or -1. */
static double
peak_rss_bytes(pid_t pid)
{
	char  path[64], line[256];
	long  kb = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmHWM:", 6) == 0) {
			kb = atol(line + 6);
		}
	}
	fclose(f);
	return kb < 0 ? -1 : (double) kb * 1024;
}

/* Creates three 200 MB variables (ones) on s: how many were made. */
static int
three_variables(pasco_strategy *s)
{
	pasco_initializer ones     = pasco_init_ones();
	int64_t           shape[1] = {50 << 20};
	int               created  = 0;
	for (int k = 0; k < 3; k++) {
		pasco_variable *v;
		char            name[16];
		snprintf(name, sizeof(name), "v%d", k);
		if (pasco_variable_create_init(
		        &v, s, name, PASCO_F32, 1, shape, &ones) == 0) {
			created++;
			pasco_variable_free(v);
		} else {
			printf(
			    "create %s: %s\n", name, pasco_strategy_error(s));
		}
	}
	return created;
}

/* n lookups of k new keys each in t: how many failed (the last error
 * printed). */
static int
lookups(pasco_variable *t, int n, int64_t k)
{
	pasco_tensor *keys, *rows = NULL;
	int           failed = 0;
	pasco_tensor_alloc(&keys, PASCO_I64, 1, &k);
	for (int j = 0; j < n; j++) {
		for (int64_t i = 0; i < k; i++) {
			((int64_t *) keys->data)[i] = j * k + i + (k << 20);
		}
		if (pasco_variable_gather(t, keys, &rows) != 0 &&
		    failed++ == 0) {
			printf("lookup of %lld keys: %s\n", (long long) k,
			    pasco_variable_error(t));
		}
		pasco_tensor_release(rows);
	}
	pasco_tensor_release(keys);
	return failed;
}

/* The issue-31 figures on a ps with a 512 MB budget (see the top). */
static int
limits(const char *self, const pasco_cluster *launch)
{
	pasco_dynamic_options o  = {.dim = 1 << 20}; /* 4 MB rows */
	pasco_dynamic_stats   st = {0};
	pasco_cluster        *cluster;
	pasco_strategy       *s;
	pasco_variable       *t;
	double                t0;
	int                   made, failed;
	pid_t                 ps;
	setenv("PASCO_MAX_PS_MB", "512", 1);
	ps = bench_start_ps(self, launch, &cluster);
	unsetenv("PASCO_MAX_PS_MB");
	if (ps < 0 || pasco_strategy_create(&s, cluster, NULL) != 0 ||
	    pasco_dynamic_variable_create(&t, s, "wide", &o) != 0) {
		fprintf(
		    stderr, "ps_memory: the ps or the table did not start\n");
		return 1;
	}
	made = three_variables(s);
	printf("three 200 MB variables, budget 512 MB: %d created, ps peak "
	       "%.0f MB\n",
	    made, peak_rss_bytes(ps) / 1e6);
	t0     = bench_now();
	failed = lookups(t, 10, 250);
	printf("10 lookups of 250 new keys of 4 MB rows (1 GB of rows a "
	       "reply): %d refused in %.3f s, ps peak %.0f MB\n",
	    failed, bench_now() - t0, peak_rss_bytes(ps) / 1e6);
	t0     = bench_now();
	failed = lookups(t, 10, 60);
	pasco_variable_dynamic_stats(t, &st);
	printf("10 lookups of 60 new keys of 4 MB rows: %d failed, %lld rows "
	       "held, %lld refused, %.1f s, ps peak %.0f MB\n",
	    failed, (long long) st.rows, (long long) st.refused,
	    bench_now() - t0, peak_rss_bytes(ps) / 1e6);
	pasco_variable_free(t);
	pasco_strategy_destroy(s);
	pasco_cluster_free(cluster);
	kill(ps, SIGTERM);
	waitpid(ps, NULL, 0);
	return 0;
}

static int
chief(const pasco_cluster *launch, int argc, char **argv)
{
	bool            quick = false;
	pasco_cluster  *cluster;
	pasco_strategy *s;
	int             failed = 0;
	struct {
		const char *label, *prefix;
		int         n;
		int64_t     floats;
	} layouts[2];

	for (int i = 1; i < argc; i++) {
		quick |= strcmp(argv[i], "--quick") == 0;
		if (strcmp(argv[i], "--limits") == 0) {
			return limits(argv[0], launch);
		}
	}
	layouts[0].label =
	    quick ? "8 x 2 MB f32 + Adam slots" : "8 x 32 MB f32 + Adam slots";
	layouts[0].prefix = "big";
	layouts[0].n      = 8;
	layouts[0].floats = (quick ? 2 : 32) << 18;
	layouts[1].label  = quick ? "2,000 x 1 KB f32 + Adam slots"
	                          : "20,000 x 1 KB f32 + Adam slots";
	layouts[1].prefix = "small";
	layouts[1].n      = quick ? 2000 : 20000;
	layouts[1].floats = 256;

	printf("ps memory benchmark: resident bytes a ps gains per byte of "
	       "variables + slots stored\n");
	printf("%-34s %14s %14s %8s\n", "layout", "stored MB", "RSS growth MB",
	    "ratio");
	for (int k = 0; k < 2 && !failed; k++) {
		pid_t ps = bench_start_ps(argv[0], launch, &cluster);
		if (ps < 0 || pasco_strategy_create(&s, cluster, NULL) != 0) {
			fprintf(stderr, "ps_memory: the ps did not start\n");
			return 1;
		}
		double before = bench_rss_bytes(ps);
		double stored = fill(
		    s, layouts[k].prefix, layouts[k].n, layouts[k].floats);
		/* steady state: a process keeps its last big transfer buffers
		 * for 1 s of reuse (net/bufcache.c), then lets them go */
		usleep(2500 * 1000);
		double after = bench_rss_bytes(ps);
		if (before < 0 || stored < 0 || after < 0) {
			fprintf(stderr, "ps_memory: %s failed\n",
			    layouts[k].label);
			failed = 1;
		} else {
			printf("%-34s %14.1f %14.1f %7.3fx\n",
			    layouts[k].label, stored / 1e6,
			    (after - before) / 1e6, (after - before) / stored);
			bench_json("ps_memory", layouts[k].label,
			    after - before, "bytes", stored);
		}
		pasco_strategy_destroy(s);
		pasco_cluster_free(cluster);
		kill(ps, SIGTERM);
		waitpid(ps, NULL, 0);
	}
	return failed;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
