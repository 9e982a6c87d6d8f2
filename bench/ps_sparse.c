/*
 * Sparse ps throughput: an embedding table of 1M rows x 64 f32 (256 MB)
 * split in 2 shards over 2 ps, read by pasco_variable_gather and updated by
 * pasco_variable_apply_gradient_sparse with Adagrad, in rows/s, for
 * batches of 1,024 ids drawn from a Zipf distribution (s = 1.05 over the
 * 1M ranks, hot ranks scattered over the table), from 1 and 2 client
 * threads of the chief. Baseline, same run: raw nng req/rep moving the
 * same bytes per batch between this process and a peer process (the ids
 * out and the rows back for gather; ids and rows out, an empty reply for
 * apply). And the bound the apply is held to: the same Adagrad update
 * of the same rows (duplicates summed first, as the ps does) on a table in
 * this one process, one thread: no network, no copies, what memory
 * bandwidth and the arithmetic allow.
 *
 *     pasco launch --ps 2 --workers 1 -- build/bench/ps_sparse [--quick]
 *
 * Each figure is the best of 3 rounds of 400 batches (100 with --quick,
 * which also uses a 256K-row table).
 */
#include <math.h>
#include <pasco.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench.h"

#define DIM 64
#define BATCH 1024
#define ROUNDS 3
#define ZIPF_S 1.05
#define NBATCH 64 /* distinct id batches, cycled */

typedef struct job {
	nng_socket      raw; /* raw: the peer's socket */
	bool            is_raw;
	pasco_variable *v;
	pasco_tensor  **ids; /* NBATCH batches */
	pasco_tensor   *grads;
	long            iters;
	bool            apply;
	int             offset; /* first batch used */
	int             failed;
} job;

static void *
client(void *arg)
{
	job   *j   = arg;
	size_t ids = BATCH * sizeof(int64_t), rows = BATCH * DIM * 4;
	if (j->is_raw) { /* the same bytes: ids out, rows back (or out) */
		j->failed = bench_round_trips(j->raw, j->iters,
		                j->apply ? 0 : (uint32_t) rows,
		                j->apply ? ids + rows : ids) != 0;
		return NULL;
	}
	j->failed = bench_sparse_ops(j->v, j->ids, NBATCH, j->offset, j->iters,
	                j->apply ? j->grads : NULL) != 0;
	return NULL;
}

/* Rows/s of the Adagrad update (lr 0.01, accumulators from 0.1, epsilon
 * 1e-7) of `iters` batches applied to a rows x DIM table here: each
 * batch's duplicate ids summed through a scratch index, then each distinct
 * row updated once. Best of ROUNDS. */
static double
in_process_apply(pasco_tensor **batches, const pasco_tensor *grads,
    int64_t rows, long iters)
{
	float   *w    = malloc(sizeof(float) * (size_t) (rows * DIM));
	float   *a    = malloc(sizeof(float) * (size_t) (rows * DIM));
	int32_t *slot = malloc(sizeof(int32_t) * (size_t) rows);
	int64_t  uniq[BATCH];
	float   *sum  = malloc(sizeof(float) * BATCH * DIM);
	double   best = 0;
	if (w == NULL || a == NULL || slot == NULL || sum == NULL) {
		free(w), free(a), free(slot), free(sum);
		return -1;
	}
	for (int64_t i = 0; i < rows * DIM; i++) {
		w[i] = 0.01f * (float) (i % 13);
		a[i] = 0.1f;
	}
	memset(slot, 0xff, sizeof(int32_t) * (size_t) rows);
	for (int r = 0; r < ROUNDS; r++) {
		double start = bench_now();
		for (long it = 0; it < iters; it++) {
			const int64_t *ids = batches[it % NBATCH]->data;
			const float   *g   = grads->data;
			int            n   = 0;
			for (int i = 0; i < BATCH; i++) {
				int32_t k = slot[ids[i]];
				if (k < 0) {
					k = slot[ids[i]] = n;
					uniq[n++]        = ids[i];
					memcpy(sum + (size_t) k * DIM,
					    g + (size_t) i * DIM, DIM * 4);
					continue;
				}
				for (int d = 0; d < DIM; d++) {
					sum[k * DIM + d] += g[i * DIM + d];
				}
			}
			for (int k = 0; k < n; k++) {
				float *wr       = w + uniq[k] * DIM,
				      *ar       = a + uniq[k] * DIM;
				const float *gr = sum + (size_t) k * DIM;
				for (int d = 0; d < DIM; d++) {
					ar[d] += gr[d] * gr[d];
					wr[d] -= 0.01f * gr[d] /
					         (sqrtf(ar[d]) + 1e-7f);
				}
				slot[uniq[k]] = -1;
			}
		}
		double rate =
		    (double) BATCH * (double) iters / (bench_now() - start);
		best = rate > best ? rate : best;
	}
	free(w), free(a), free(slot), free(sum);
	return best;
}

/* Best rows/s over ROUNDS of `clients` threads. */
static double
measure(job proto, int clients)
{
	double best = 0;
	for (int r = 0; r < ROUNDS; r++) {
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
		if (failed) {
			return -1;
		}
		double rate = (double) BATCH * (double) proto.iters * clients /
		              (bench_now() - start);
		best = rate > best ? rate : best;
	}
	return best;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	bool                   quick = false;
	char                   url[64];
	nng_socket             raw;
	pasco_strategy        *s;
	pasco_variable        *v;
	pasco_partitioner      two = pasco_fixed_shards_partitioner(2);
	pasco_strategy_options so  = {.partitioner = &two};
	pasco_initializer      init;
	pasco_tensor          *grads;
	int                    failed = 0;

	for (int i = 1; i < argc; i++) {
		quick |= strcmp(argv[i], "--quick") == 0;
	}
	int64_t rows  = quick ? 256 * 1024 : 1024 * 1024;
	long    iters = quick ? 100 : 400;
	if (pasco_cluster_count(cluster, PASCO_ROLE_PS) < 2) {
		fprintf(stderr,
		    "ps_sparse needs 2 ps: pasco launch --ps 2 "
		    "--workers 1 -- %s\n",
		    argv[0]);
		return 2;
	}
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_free_port());
	pid_t peer = bench_start_raw(argv[0], url);
	init       = pasco_init_uniform(-0.05, 0.05, 7);
	if (bench_raw_dial(url, &raw) != 0 ||
	    pasco_strategy_create(&s, cluster, &so) != 0 ||
	    pasco_variable_create_init(&v, s, "table", PASCO_F32, 2,
	        (int64_t[]){rows, DIM}, &init) != 0) {
		fprintf(stderr, "ps_sparse: cannot set up the table or the "
		                "raw peer\n");
		kill(peer, SIGKILL);
		return 1;
	}
	pasco_tensor **batches =
	    bench_zipf_batches(rows, ZIPF_S, NBATCH, BATCH, 42);
	pasco_tensor_alloc(&grads, PASCO_F32, 2, (int64_t[]){BATCH, DIM});
	for (int64_t i = 0; i < grads->count; i++) {
		((float *) grads->data)[i] = 0.001f * (float) (i % 7);
	}
	printf("ps sparse benchmark: %lld x %d f32 table in 2 shards on 2 ps, "
	       "batches of %d Zipf(%.2f) ids, best of %d x %ld batches\n",
	    (long long) rows, DIM, BATCH, ZIPF_S, ROUNDS, iters);
	printf("%-22s %-8s %14s %14s %8s\n", "op", "clients", "raw nng rows/s",
	    "pasco rows/s", "ratio");
	for (int apply = 0; apply < 2 && !failed; apply++) {
		for (int clients = 1; clients <= 2; clients++) {
			job j = {raw, true, v, batches, grads, iters / clients,
			    apply, 0, 0};
			double base = measure(j, clients);
			j.is_raw    = false;
			double ours = measure(j, clients);
			char   figure[80];
			if (base <= 0 || ours <= 0) {
				fprintf(stderr,
				    "ps_sparse: a measurement failed (%s)\n",
				    pasco_variable_error(v));
				failed = 1;
				break;
			}
			snprintf(figure, sizeof(figure), "%s, %d client%s",
			    apply ? "apply Adagrad" : "gather", clients,
			    clients > 1 ? "s" : "");
			printf("%-22s %-8d %14.0f %14.0f %7.2fx\n",
			    apply ? "apply (Adagrad)" : "gather", clients,
			    base, ours, ours / base);
			bench_json("ps_sparse", figure, ours, "rows/s", base);
		}
	}
	if (!failed) {
		double bound = in_process_apply(batches, grads, rows, iters);
		double ours  = 0;
		job    j     = {raw, false, v, batches, grads, iters, 1, 0, 0};
		ours         = measure(j, 1);
		if (bound <= 0 || ours <= 0) {
			fprintf(stderr, "ps_sparse: the bound failed\n");
			failed = 1;
		} else {
			printf("%-22s %-8s %14.0f %14.0f %7.2fx  (in-process "
			       "bound, 1 thread)\n",
			    "apply vs memory bound", "1", bound, ours,
			    ours / bound);
			bench_json("ps_sparse",
			    "apply Adagrad, 1 client, vs in-process bound",
			    ours, "rows/s", bound);
		}
	}
	for (int b = 0; b < NBATCH; b++) {
		pasco_tensor_release(batches[b]);
	}
	free(batches);
	pasco_tensor_release(grads);
	pasco_variable_free(v);
	pasco_strategy_destroy(s);
	bench_raw_stop(raw, peer);
	return failed;
}

BENCH_MAIN(chief)
