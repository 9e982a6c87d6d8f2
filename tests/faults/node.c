/*
 * The worker / ps program of the fault-tolerance tests (test_faults.c):
 * started with TF_CONFIG by the test, which plays the chief in its own
 * process, kills these with SIGKILL or SIGSTOP and restarts them. The step
 * functions follow TensorFlow's fault_tolerance_test_base model.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pasco.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "call.h"
#include "hosts.h"
#include "resources.h"

/* No args. How many resources (built iterators, per-worker variables)
 * this worker holds: its resource table seen from inside. */
PASCO_FUNCTION(ft_resources)
{
	pasco_tensor *n;
	int           rv = pasco_tensor_scalar(&n, PASCO_I64,
	              (double) pasci_resource_table_count(call->env->resources));
	if (rv == 0) {
		pasco_call_return(call, pasco_value_tensor(n));
	}
	return rv;
}

PASCO_DATASET(ft_numbers)
{
	pasco_dataset *ds;
	int            rv = pasco_dataset_range(&ds, 0, 100, 1);
	(void) ctx;
	return rv != 0 ? rv : pasco_dataset_repeat(out, ds, -1);
}

/* args: iterator, iterations (i64 scalar), w (f32 scalar). One step:
 * w += 0.01 * next(iterator), then iterations += 1. */
PASCO_FUNCTION(ft_step)
{
	pasco_dataset  *it;
	pasco_variable *iterations, *w;
	pasco_value    *e;
	pasco_tensor   *one, *dw;
	int             rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &iterations)) != 0 ||
	    (rv = pasco_call_variable(call, 2, &w)) != 0 ||
	    (rv = pasco_dataset_next(it, &e)) != 0) {
		return rv;
	}
	pasco_tensor_scalar(&dw, PASCO_F32, 0.01 * pasco_value_scalar(e));
	pasco_tensor_scalar(&one, PASCO_I64, 1);
	pasco_value_free(e);
	if ((rv = pasco_variable_assign_add(w, dw)) == 0) {
		rv = pasco_variable_assign_add(iterations, one);
	}
	if (rv != 0) {
		pasco_call_fail(call, rv, "%s",
		    pasco_variable_error(w)[0]
		        ? pasco_variable_error(w)
		        : pasco_variable_error(iterations));
	}
	pasco_tensor_release(dw);
	pasco_tensor_release(one);
	return rv;
}

/* args: big (f32 vector). Reads it whole and adds 1 to every element:
 * both directions go over the ps's bulk connections (>= 4 KB). */
PASCO_FUNCTION(ft_big_step)
{
	pasco_variable *big;
	pasco_tensor   *t = NULL, *ones = NULL;
	int             rv;
	if ((rv = pasco_call_variable(call, 0, &big)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_read(big, &t)) == 0 &&
	    (rv = pasco_tensor_alloc(&ones, PASCO_F32, t->rank, t->shape)) ==
	        0) {
		for (int64_t i = 0; i < ones->count; i++) {
			((float *) ones->data)[i] = 1;
		}
		rv = pasco_variable_assign_add(big, ones);
	}
	if (rv != 0) {
		pasco_call_fail(call, rv, "%s", pasco_variable_error(big));
	}
	pasco_tensor_release(t);
	pasco_tensor_release(ones);
	return rv;
}

/* args: iterations, flag (f32 scalar). Loops while flag != 0 (at most
 * 60 s), then iterations += 1: TF's "infinite" closure. */
PASCO_FUNCTION(ft_long_step)
{
	pasco_variable *iterations, *flag;
	pasco_tensor   *t, *one;
	int             rv;
	if ((rv = pasco_call_variable(call, 0, &iterations)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &flag)) != 0) {
		return rv;
	}
	for (int i = 0; i < 6000; i++) {
		if ((rv = pasco_variable_read(flag, &t)) != 0) {
			return pasco_call_fail(
			    call, rv, "%s", pasco_variable_error(flag));
		}
		double set = pasco_tensor_get(t, 0);
		pasco_tensor_release(t);
		if (set == 0) {
			break;
		}
		usleep(10 * 1000);
	}
	pasco_tensor_scalar(&one, PASCO_I64, 1);
	rv = pasco_variable_assign_add(iterations, one);
	pasco_tensor_release(one);
	return rv != 0 ? pasco_call_fail(
	                     call, rv, "%s", pasco_variable_error(iterations))
	               : PASCO_OK;
}

/* args: v (f32 scalar). Returns (v + 1, v - 1). */
PASCO_FUNCTION(ft_plus_minus)
{
	pasco_variable *v;
	pasco_tensor   *t, *a, *b;
	int             rv;
	if ((rv = pasco_call_variable(call, 0, &v)) != 0 ||
	    (rv = pasco_variable_read(v, &t)) != 0) {
		return rv != 0 && v != NULL ? pasco_call_fail(call, rv, "%s",
		                                  pasco_variable_error(v))
		                            : rv;
	}
	pasco_tensor_scalar(&a, PASCO_F32, pasco_tensor_get(t, 0) + 1);
	pasco_tensor_scalar(&b, PASCO_F32, pasco_tensor_get(t, 0) - 1);
	pasco_tensor_release(t);
	pasco_call_return(call,
	    pasco_value_list(2, pasco_value_tensor(a), pasco_value_tensor(b)));
	return PASCO_OK;
}

static int
no_chief(const pasco_cluster *cluster, int argc, char **argv)
{
	(void) cluster;
	(void) argc;
	fprintf(stderr, "%s runs as a worker or a ps only\n", argv[0]);
	return 2;
}

/* A cut link (FT_CUT_PORT=port): every connection this process makes to
 * a loopback port is made instead to a listener that never accepts nor
 * reads, as if the packets to that port were dropped on the way: the
 * connection hangs and requests over it are never answered. The test
 * names the port of a ps this worker must not reach (the chief and the
 * other workers still do). connect() here stands before libc's for the
 * library and nng in this program. */
static int                hole      = -1;
static pthread_once_t     hole_once = PTHREAD_ONCE_INIT;
static struct sockaddr_in hole_addr;

static void
hole_open(void)
{
	socklen_t len = sizeof(hole_addr);
	hole_addr     = (struct sockaddr_in){
	        .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if ((hole = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(hole, (struct sockaddr *) &hole_addr, sizeof(hole_addr)) !=
	        0 ||
	    listen(hole, 128) != 0 ||
	    getsockname(hole, (struct sockaddr *) &hole_addr, &len) != 0) {
		perror("ft node: the cut link's listener");
		_exit(3);
	}
}

int
connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	const char *cut = getenv("FT_CUT_PORT");
	if (cut != NULL && addr != NULL && addr->sa_family == AF_INET &&
	    ntohs(((const struct sockaddr_in *) addr)->sin_port) ==
	        atoi(cut)) {
		pthread_once(&hole_once, hole_open);
		addr = (const struct sockaddr *) &hole_addr;
		len  = sizeof(hole_addr);
	}
	return (int) syscall(SYS_connect, fd, addr, len);
}

int
main(int argc, char **argv)
{
	ft_hosts_install();
	return pasco_main(argc, argv, no_chief);
}

/* The linear-regression model of the Estimator seed, for the chaos run. */
typedef struct lr_stream {
	uint64_t seed, n;
} lr_stream;

static int
lr_next(void *arg, pasco_value **out)
{
	lr_stream    *s = arg;
	uint64_t      z = s->seed + 0x9e3779b97f4a7c15ULL * ++s->n;
	pasco_tensor *x, *y;
	z        = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z        = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	double v = (double) ((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
	pasco_tensor_scalar(&x, PASCO_F32, v);
	pasco_tensor_scalar(&y, PASCO_F32, 0.8 * v + 1.0);
	*out =
	    pasco_value_list(2, pasco_value_tensor(x), pasco_value_tensor(y));
	return PASCO_OK;
}

PASCO_DATASET(lr_data)
{
	lr_stream     *s = calloc(1, sizeof(*s));
	pasco_dataset *ds;
	int            rv;
	s->seed = 77 + (uint64_t) ctx->worker_index;
	if ((rv = pasco_dataset_from_generator(&ds, lr_next, NULL, free, s)) !=
	    0) {
		free(s);
		return rv;
	}
	return pasco_dataset_batch(out, ds, 32, true);
}

/* args: iterator, w, b, steps (i64). One SGD step (lr 0.05); steps += 1;
 * returns the loss. */
PASCO_FUNCTION(lr_step)
{
	pasco_dataset  *it;
	pasco_variable *wv, *bv, *steps;
	pasco_value    *batch;
	pasco_tensor   *w = NULL, *b = NULL, *dw, *db, *loss, *one;
	int             rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &wv)) != 0 ||
	    (rv = pasco_call_variable(call, 2, &bv)) != 0 ||
	    (rv = pasco_call_variable(call, 3, &steps)) != 0 ||
	    (rv = pasco_dataset_next(it, &batch)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_read(wv, &w)) != 0 ||
	    (rv = pasco_variable_read(bv, &b)) != 0) {
		pasco_value_free(batch);
		pasco_tensor_release(w);
		return pasco_call_fail(call, rv, "reading w or b failed");
	}
	const pasco_tensor *x =
	    pasco_value_as_tensor(pasco_value_item(batch, 0));
	const pasco_tensor *y =
	    pasco_value_as_tensor(pasco_value_item(batch, 1));
	double gw = 0, gb = 0, l = 0;
	for (int64_t i = 0; i < x->count; i++) {
		double e = pasco_tensor_get(w, 0) * pasco_tensor_get(x, i) +
		           pasco_tensor_get(b, 0) - pasco_tensor_get(y, i);
		l += e * e;
		gw += 2 * e * pasco_tensor_get(x, i);
		gb += 2 * e;
	}
	pasco_tensor_scalar(&dw, PASCO_F32, gw / (double) x->count);
	pasco_tensor_scalar(&db, PASCO_F32, gb / (double) x->count);
	pasco_tensor_scalar(&loss, PASCO_F32, l / (double) x->count);
	pasco_tensor_scalar(&one, PASCO_I64, 1);
	if ((rv = pasco_variable_apply_sgd(wv, 0.05, dw)) == 0 &&
	    (rv = pasco_variable_apply_sgd(bv, 0.05, db)) == 0) {
		rv = pasco_variable_assign_add(steps, one);
	}
	pasco_call_return(call, pasco_value_tensor(loss));
	pasco_value_free(batch);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(dw);
	pasco_tensor_release(db);
	pasco_tensor_release(one);
	return rv;
}

/* Fails with an application error (TF's assert_non_positive). */
PASCO_FUNCTION(ft_fail)
{
	return pasco_call_fail(call, PASCO_EINVAL, "x must be <= 0");
}

/* Exactly-once evaluation: args (k, K). Walks shard k of K of range(0,
 * 1000), slowly (2 ms an element, so a worker can be killed mid-shard),
 * and returns [count, sum] of its elements. */
PASCO_FUNCTION(ft_eval_shard)
{
	const pasco_tensor *k, *n;
	pasco_dataset      *ds;
	pasco_value        *e;
	pasco_tensor       *count, *sum;
	double              c = 0, s = 0;
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &k)) != 0 ||
	    (rv = pasco_call_tensor(call, 1, &n)) != 0 ||
	    (rv = pasco_dataset_range(&ds, 0, 1000, 1)) != 0 ||
	    (rv = pasco_dataset_shard(&ds, ds,
	         (int64_t) pasco_tensor_get(n, 0),
	         (int64_t) pasco_tensor_get(k, 0))) != 0) {
		return rv;
	}
	while (pasco_dataset_next(ds, &e) == PASCO_OK) {
		c += 1;
		s += pasco_value_scalar(e);
		pasco_value_free(e);
		usleep(2000);
	}
	pasco_dataset_free(ds);
	pasco_tensor_scalar(&count, PASCO_F64, c);
	pasco_tensor_scalar(&sum, PASCO_F64, s);
	pasco_call_return(call, pasco_value_list(2, pasco_value_tensor(count),
	                            pasco_value_tensor(sum)));
	return PASCO_OK;
}

/* args: counter (i64, on the ps the test kills), ran (i64, on one it does
 * not), k (i64 scalar). counter += 1, then ran += 1; returns k. */
PASCO_FUNCTION(ft_count)
{
	pasco_variable     *counter, *ran;
	const pasco_tensor *k;
	pasco_tensor       *one;
	int                 rv;
	if ((rv = pasco_call_variable(call, 0, &counter)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &ran)) != 0 ||
	    (rv = pasco_call_tensor(call, 2, &k)) != 0) {
		return rv;
	}
	pasco_tensor_scalar(&one, PASCO_I64, 1);
	if ((rv = pasco_variable_assign_add(counter, one)) != 0) {
		pasco_call_fail(call, rv, "%s", pasco_variable_error(counter));
	} else if ((rv = pasco_variable_assign_add(ran, one)) != 0) {
		pasco_call_fail(call, rv, "%s", pasco_variable_error(ran));
	}
	pasco_tensor_release(one);
	if (rv == 0) {
		pasco_tensor *out;
		pasco_tensor_scalar(&out, PASCO_I64, pasco_tensor_get(k, 0));
		pasco_call_return(call, pasco_value_tensor(out));
	}
	return rv;
}

/* fit's metrics through a ps restore (test_faults.c): endless batches of
 * 32 examples, x f32 [32, 2] all zeros, y f32 [32]: every label 0 in
 * this worker's first FT_FIT_STEPS batches, then 8 of each 32 (the first
 * 8). A sigmoid Dense without bias outputs 0.5 for x = 0 whatever it
 * learns, and predicts 0: accuracy 1 in those batches, 0.25 after.
 * Each batch takes 5 ms, so a ps can be killed while steps are left. */
#define FT_FIT_STEPS 40

static int
fit_next(void *arg, pasco_value **out)
{
	int64_t      *n = arg, b = (*n)++;
	pasco_tensor *x, *y;
	float         labels[32];
	for (int i = 0; i < 32; i++) {
		labels[i] = b >= FT_FIT_STEPS && i >= 8 ? 1.0f : 0.0f;
	}
	usleep(5000);
	if (pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){32, 2}) != 0) {
		return PASCO_ENOMEM;
	}
	if (pasco_tensor_from(&y, PASCO_F32, 1, (int64_t[]){32}, labels,
	        sizeof(labels)) != 0) {
		pasco_tensor_release(x);
		return PASCO_ENOMEM;
	}
	*out =
	    pasco_value_list(2, pasco_value_tensor(x), pasco_value_tensor(y));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

PASCO_DATASET(ft_fit_data)
{
	int64_t *n = calloc(1, sizeof(*n));
	int      rv;
	(void) ctx;
	if (n == NULL) {
		return PASCO_ENOMEM;
	}
	if ((rv = pasco_dataset_from_generator(
	         out, fit_next, NULL, free, n)) != 0) {
		free(n);
	}
	return rv;
}
