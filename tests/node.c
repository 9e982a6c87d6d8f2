/*
 * The worker / ps program of the fault-tolerance tests (test_faults.c):
 * started with TF_CONFIG by the test, which plays the chief in its own
 * process, kills these with SIGKILL or SIGSTOP and restarts them. The step
 * functions follow TensorFlow's fault_tolerance_test_base model.
 */
#include <pasco.h>
#include <stdio.h>
#include <unistd.h>

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

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, no_chief);
}
