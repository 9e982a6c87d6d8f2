/*
 * Dynamic embedding tables (issue 22) against fixed ones.
 *
 * 1. Throughput: a dynamic table (pasco_dynamic_variable_create, a share
 *    per ps) and a fixed 1M x DIM f32 table split in 2 shards
 *    (pasco_variable_create_partitioned) on the same 2 ps, read by
 *    pasco_variable_gather and updated by
 *    pasco_variable_apply_gradient_sparse with Adagrad, in rows/s, for the
 *    same batches of 1,024 keys drawn from a Zipf distribution (s = 1.05
 *    over 1M ids, hot ids scattered), 1 and 2 client threads. Baseline:
 *    the fixed table, same run. Both tables see every batch once before
 *    the timed rounds (the dynamic table makes its rows then: "first
 *    touch" is that pass, gather then apply, timed on each); then every
 *    id of the 1M is looked up in the dynamic table, so that both hold
 *    1M rows when timed.
 * 2. Memory: a ps of its own (this binary in the ps role) grows a dynamic
 *    table to ROWS rows of DIM f32 with Adam slots (every row looked up
 *    once and updated once); its resident-set growth (/proc/<pid>/statm)
 *    beside the bytes of the rows and their two slots (ratio 1.00: no
 *    overhead at all).
 * 3. Eviction: another ps of its own, a table capped at CAP rows
 *    (max_rows_per_ps), fed STREAM new keys (looked up and updated with
 *    Adam, 8,192 at a time); the row count, the rows evicted at the cap
 *    and the resident set at a few points: rows level at the cap, memory
 *    stays flat (the figure: the last point's resident set beside the
 *    first point past the cap).
 *
 *     pasco launch --ps 2 --workers 1 -- build/bench/dynamic [--quick]
 *
 * --quick: 100 batches a round, 64K rows for memory, a 16K cap fed 200K
 * keys (a few seconds); else 400 batches, 1M rows, a 256K cap fed 4M keys.
 */
#include <math.h>
#include <pasco.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench.h"

#define DIM 32
#define BATCH 1024
#define ROUNDS 3
#define ZIPF_S 1.05
#define IDS (1024 * 1024) /* the Zipf draw's range */
#define NBATCH 64         /* distinct key batches, cycled */
#define GROW 8192         /* keys per call when growing a table */

typedef struct job {
	pasco_variable *v;
	pasco_tensor  **keys; /* NBATCH batches */
	pasco_tensor   *grads;
	long            iters;
	bool            apply;
	int             offset; /* first batch used */
	int             failed;
} job;

static void *
client(void *arg)
{
	job *j    = arg;
	j->failed = bench_sparse_ops(j->v, j->keys, NBATCH, j->offset,
	                j->iters, j->apply ? j->grads : NULL) != 0;
	return NULL;
}

/* Rows/s of one round of `clients` threads. */
static double
round_rate(job proto, int clients)
{
	pthread_t th[2];
	job       jobs[2];
	double    start  = bench_now();
	int       failed = 0;
	for (int k = 0; k < clients; k++) {
		jobs[k]        = proto;
		jobs[k].offset = k * NBATCH / 2;
		pthread_create(&th[k], NULL, client, &jobs[k]);
	}
	for (int k = 0; k < clients; k++) {
		pthread_join(th[k], NULL);
		failed |= jobs[k].failed;
	}
	return failed ? -1
	              : (double) BATCH * (double) proto.iters * clients /
	                    (bench_now() - start);
}

/* Best rows/s over ROUNDS of `clients` threads on the fixed table
 * (fixed) and on the dynamic one, rounds interleaved so that both see the
 * same machine. */
static int
measure(job proto, pasco_variable *fixed, pasco_variable *dyn, int clients,
    double *base, double *ours)
{
	*base = *ours = 0;
	for (int r = 0; r < ROUNDS; r++) {
		job    f = proto, d = proto;
		double rf, rd;
		f.v = fixed;
		d.v = dyn;
		if ((rf = round_rate(f, clients)) < 0 ||
		    (rd = round_rate(d, clients)) < 0) {
			return -1;
		}
		*base = rf > *base ? rf : *base;
		*ours = rd > *ours ? rd : *ours;
	}
	return 0;
}

static void
row(const char *op, const char *clients, double base, double ours,
    const char *figure)
{
	printf("%-26s %-8s %14.0f %14.0f %7.2fx\n", op, clients, base, ours,
	    ours / base);
	bench_json("dynamic", figure, ours, "rows/s", base);
}

/* Looks up ids [0, IDS) in v, GROW at a time. 0 or -1. */
static int
fill(pasco_variable *v)
{
	pasco_tensor *keys;
	int           rv = 0;
	pasco_tensor_alloc(&keys, PASCO_I64, 1, (int64_t[]){GROW});
	for (int64_t at = 0; at < IDS && rv == 0; at += GROW) {
		pasco_tensor *out;
		for (int64_t i = 0; i < GROW; i++) {
			((int64_t *) keys->data)[i] = at + i;
		}
		rv = pasco_variable_gather(v, keys, &out);
		pasco_tensor_release(out);
	}
	pasco_tensor_release(keys);
	return rv != 0 ? -1 : 0;
}

static int
throughput(const pasco_cluster *cluster, bool quick)
{
	pasco_strategy       *s;
	pasco_variable       *fixed, *dyn;
	pasco_partitioner     two  = pasco_fixed_shards_partitioner(2);
	pasco_initializer     init = pasco_init_uniform(-0.05, 0.05, 7);
	pasco_dynamic_options o    = {.dim = DIM, .initializer = init};
	pasco_tensor         *grads;
	pasco_tensor        **batches;
	long                  iters  = quick ? 100 : 400;
	int                   failed = 0;

	if (pasco_strategy_create(&s, cluster, NULL) != 0) {
		fprintf(stderr, "dynamic: no strategy\n");
		return 1;
	}
	if (pasco_variable_create_partitioned(&fixed, s, "fixed", PASCO_F32, 2,
	        (int64_t[]){IDS, DIM}, &init, &two) != 0 ||
	    pasco_dynamic_variable_create(&dyn, s, "dyn", &o) != 0) {
		fprintf(stderr, "dynamic: cannot create the tables: %s\n",
		    pasco_strategy_error(s));
		pasco_strategy_destroy(s);
		return 1;
	}
	batches = bench_zipf_batches(IDS, ZIPF_S, NBATCH, BATCH, 42);
	pasco_tensor_alloc(&grads, PASCO_F32, 2, (int64_t[]){BATCH, DIM});
	for (int64_t i = 0; i < grads->count; i++) {
		((float *) grads->data)[i] = 0.001f * (float) (i % 7);
	}
	printf("dynamic table benchmark: %d-float rows, 2 ps; batches of %d "
	       "Zipf(%.2f) keys of %d ids; fixed table: %d x %d f32 in 2 "
	       "shards; best of %d x %ld batches\n",
	    DIM, BATCH, ZIPF_S, IDS, IDS, DIM, ROUNDS, iters);
	printf("%-26s %-8s %14s %14s %8s\n", "op", "clients", "fixed rows/s",
	    "dynamic rows/s", "ratio");
	/* first touch: every batch once, gather then apply */
	for (int apply = 0; apply < 2; apply++) {
		job    j = {NULL, batches, grads, NBATCH, apply, 0, 0};
		double rf, rd;
		j.v = fixed;
		rf  = round_rate(j, 1);
		j.v = dyn;
		rd  = round_rate(j, 1);
		if (rf < 0 || rd < 0) {
			failed = 1;
			break;
		}
		row(apply ? "first touch, apply" : "first touch, gather", "1",
		    rf, rd,
		    apply ? "first apply Adagrad, 1 client"
		          : "first gather (rows made), 1 client");
	}
	if (!failed) {
		pasco_dynamic_stats st;
		int64_t             made = -1;
		if (pasco_variable_dynamic_stats(dyn, &st) == 0) {
			made = st.rows;
		}
		/* then every id of the range gets a row too, so both tables
		 * hold IDS rows (the batches' rows were made first: they lie
		 * together in the dynamic table's first chunks) */
		if (made < 0 || fill(dyn) != 0 ||
		    pasco_variable_dynamic_stats(dyn, &st) != 0) {
			failed = 1;
		} else {
			printf("(the batches have %lld distinct keys; then "
			       "every id looked up: the dynamic table holds "
			       "%lld rows, the fixed one %d)\n",
			    (long long) made, (long long) st.rows, IDS);
		}
	}
	for (int apply = 0; apply < 2 && !failed; apply++) {
		for (int clients = 1; clients <= 2; clients++) {
			job j = {NULL, batches, grads, iters / clients, apply,
			    0, 0};
			double base, ours;
			char   figure[80], n[8];
			if (measure(j, fixed, dyn, clients, &base, &ours) !=
			    0) {
				failed = 1;
				break;
			}
			snprintf(figure, sizeof(figure), "%s, %d client%s",
			    apply ? "apply Adagrad" : "gather", clients,
			    clients > 1 ? "s" : "");
			snprintf(n, sizeof(n), "%d", clients);
			row(apply ? "apply (Adagrad)" : "gather", n, base,
			    ours, figure);
		}
	}
	if (failed) {
		fprintf(stderr, "dynamic: a measurement failed (%s / %s)\n",
		    pasco_variable_error(fixed), pasco_variable_error(dyn));
	}
	for (int b = 0; b < NBATCH; b++) {
		pasco_tensor_release(batches[b]);
	}
	free(batches);
	pasco_tensor_release(grads);
	pasco_variable_free(fixed);
	pasco_variable_free(dyn);
	pasco_strategy_destroy(s);
	return failed;
}

/* Looks up and updates (Adam) keys [first, first + n) of v, GROW at a
 * time. 0 or -1. */
static int
feed(pasco_variable *v, int64_t first, int64_t n, pasco_tensor *keys,
    pasco_tensor *grads)
{
	pasco_optimizer adam = pasco_adam(0.001, false);
	for (int64_t at = 0; at < n; at += GROW) {
		pasco_tensor *out;
		for (int64_t i = 0; i < GROW; i++) {
			/* scattered: a key's 64 bits, not a small counter */
			((int64_t *) keys->data)[i] =
			    (int64_t) ((uint64_t) (first + at + i) *
			               0x9e3779b97f4a7c15ull);
		}
		if (pasco_variable_gather(v, keys, &out) != 0) {
			return -1;
		}
		pasco_tensor_release(out);
		if (pasco_variable_apply_gradient_sparse(
		        v, &adam, keys, grads) != 0) {
			return -1;
		}
	}
	return 0;
}

static void
stop_ps(pid_t ps)
{
	kill(ps, SIGTERM);
	waitpid(ps, NULL, 0);
}

/* A ps of its own and a strategy on it; the pid or -1. */
static pid_t
own_ps(const char *self, const pasco_cluster *launch, pasco_cluster **c,
    pasco_strategy **s)
{
	pid_t ps = bench_start_ps(self, launch, c);
	if (ps < 0) {
		return -1;
	}
	if (pasco_strategy_create(s, *c, NULL) != 0) {
		stop_ps(ps);
		pasco_cluster_free(*c);
		return -1;
	}
	return ps;
}

static int
memory(const char *self, const pasco_cluster *launch, bool quick)
{
	int64_t               rows = quick ? 64 * 1024 : 1024 * 1024;
	pasco_cluster        *c;
	pasco_strategy       *s;
	pasco_variable       *v;
	pasco_tensor         *keys, *grads;
	pasco_dynamic_options o = {.dim = DIM};
	int                   failed;
	pid_t                 ps = own_ps(self, launch, &c, &s);
	if (ps < 0) {
		fprintf(stderr, "dynamic: the ps did not start\n");
		return 1;
	}
	pasco_tensor_alloc(&keys, PASCO_I64, 1, (int64_t[]){GROW});
	pasco_tensor_alloc(&grads, PASCO_F32, 2, (int64_t[]){GROW, DIM});
	for (int64_t i = 0; i < grads->count; i++) {
		((float *) grads->data)[i] = 0.01f;
	}
	double before = bench_rss_bytes(ps);
	failed        = pasco_dynamic_variable_create(&v, s, "mem", &o) != 0 ||
	         feed(v, 0, rows, keys, grads) != 0;
	/* steady state: a process keeps its last big transfer buffers for
	 * 1 s of reuse (net/bufcache.c), then lets them go */
	usleep(2500 * 1000);
	double after  = bench_rss_bytes(ps);
	double stored = (double) rows * DIM * 4 * 3;
	if (failed || before < 0 || after < 0) {
		fprintf(stderr, "dynamic: growing the table failed\n");
		failed = 1;
	} else {
		char label[80];
		snprintf(label, sizeof(label),
		    "%lldK rows x %d f32 + Adam slots", (long long) rows >> 10,
		    DIM);
		printf("\n%-34s %12s %14s %14s %8s\n", "dynamic table, 1 ps",
		    "stored MB", "RSS growth MB", "bytes/row", "ratio");
		printf("%-34s %12.1f %14.1f %7.0f / %4.0f %7.3fx\n", label,
		    stored / 1e6, (after - before) / 1e6,
		    (after - before) / (double) rows, stored / (double) rows,
		    (after - before) / stored);
		bench_json("dynamic", label, after - before, "bytes", stored);
	}
	if (!failed) {
		pasco_variable_free(v);
	}
	pasco_tensor_release(keys);
	pasco_tensor_release(grads);
	pasco_strategy_destroy(s);
	pasco_cluster_free(c);
	stop_ps(ps);
	return failed;
}

static int
eviction(const char *self, const pasco_cluster *launch, bool quick)
{
	int64_t               cap    = quick ? 16 * 1024 : 256 * 1024;
	int64_t               stream = quick ? 200 * 1024 : 4096 * 1024;
	pasco_cluster        *c;
	pasco_strategy       *s;
	pasco_variable       *v = NULL;
	pasco_tensor         *keys, *grads;
	pasco_dynamic_options o = {.dim = DIM, .max_rows_per_ps = cap};
	pasco_dynamic_stats   st;
	double                at_cap = -1, rss = -1;
	int                   failed = 0;
	pid_t                 ps     = own_ps(self, launch, &c, &s);
	if (ps < 0) {
		fprintf(stderr, "dynamic: the ps did not start\n");
		return 1;
	}
	pasco_tensor_alloc(&keys, PASCO_I64, 1, (int64_t[]){GROW});
	pasco_tensor_alloc(&grads, PASCO_F32, 2, (int64_t[]){GROW, DIM});
	for (int64_t i = 0; i < grads->count; i++) {
		((float *) grads->data)[i] = 0.01f;
	}
	printf("\ndynamic table with eviction, 1 ps, cap %lldK rows of %d "
	       "f32 + Adam slots, %lldK new keys (looked up and updated)\n",
	    (long long) cap >> 10, DIM, (long long) stream >> 10);
	printf("%12s %12s %14s %12s\n", "keys fed", "rows", "evicted (cap)",
	    "RSS MB");
	failed = pasco_dynamic_variable_create(&v, s, "capped", &o) != 0;
	/* sample points: half the cap, the cap, then 4 more to the end */
	int64_t points[6] = {cap / 2, cap}, fed = 0;
	for (int k = 2; k < 6; k++) {
		points[k] = cap + (stream - cap) * (k - 1) / 4;
	}
	for (int k = 0; k < 6 && !failed; k++) {
		if (feed(v, fed, points[k] - fed, keys, grads) != 0 ||
		    pasco_variable_dynamic_stats(v, &st) != 0) {
			failed = 1;
			break;
		}
		fed    = points[k];
		rss    = bench_rss_bytes(ps);
		at_cap = k == 2 ? rss : at_cap;
		printf("%12lld %12lld %14lld %12.1f\n", (long long) fed,
		    (long long) st.rows, (long long) st.evicted_cap,
		    rss / 1e6);
	}
	if (failed) {
		fprintf(stderr, "dynamic: the eviction run failed (%s)\n",
		    v != NULL ? pasco_variable_error(v)
		              : pasco_strategy_error(s));
	} else {
		char label[96];
		snprintf(label, sizeof(label),
		    "capped at %lldK rows, %lldK keys fed: rows held",
		    (long long) cap >> 10, (long long) stream >> 10);
		bench_json(
		    "dynamic", label, (double) st.rows, "rows", (double) cap);
		snprintf(label, sizeof(label),
		    "capped at %lldK rows, %lldK keys fed: RSS vs past the "
		    "cap",
		    (long long) cap >> 10, (long long) stream >> 10);
		bench_json("dynamic", label, rss, "bytes", at_cap);
		failed = st.rows != cap;
		if (failed) {
			fprintf(stderr,
			    "dynamic: %lld rows held at the end, not the cap "
			    "%lld\n",
			    (long long) st.rows, (long long) cap);
		}
	}
	pasco_variable_free(v);
	pasco_tensor_release(keys);
	pasco_tensor_release(grads);
	pasco_strategy_destroy(s);
	pasco_cluster_free(c);
	stop_ps(ps);
	return failed;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	bool quick = false;
	for (int i = 1; i < argc; i++) {
		quick |= strcmp(argv[i], "--quick") == 0;
	}
	if (pasco_cluster_count(cluster, PASCO_ROLE_PS) < 2) {
		fprintf(stderr,
		    "dynamic needs 2 ps: pasco launch --ps 2 --workers 1 -- "
		    "%s\n",
		    argv[0]);
		return 2;
	}
	return throughput(cluster, quick) || memory(argv[0], cluster, quick) ||
	       eviction(argv[0], cluster, quick);
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
