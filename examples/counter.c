/* A counter on a ps, incremented by 100 closures spread over the workers. */
#include <pasco.h>
#include <stdio.h>

/* Runs on a worker: counter += delta, on the ps; returns the worker index. */
PASCO_FUNCTION(add)
{
	pasco_variable     *counter;
	const pasco_tensor *delta;
	pasco_tensor       *index;
	int                 rv;

	if ((rv = pasco_call_variable(call, 0, &counter)) != 0 ||
	    (rv = pasco_call_tensor(call, 1, &delta)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_assign_add(counter, delta)) != 0) {
		return pasco_call_fail(
		    call, rv, "%s", pasco_variable_error(counter));
	}
	pasco_tensor_scalar(&index, PASCO_I32, pasco_call_worker_index(call));
	pasco_call_return(call, pasco_value_tensor(index));
	return PASCO_OK;
}

/* Runs on the chief: the coordinator program. */
static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	pasco_strategy     *strategy;
	pasco_coordinator  *coord;
	pasco_variable     *counter;
	pasco_tensor       *zero, *one, *value;
	pasco_remote_value *last = NULL;
	const pasco_value  *worker;
	int                 rv;

	(void) argc;
	(void) argv;
	if ((rv = pasco_strategy_create(&strategy, cluster, NULL)) != 0) {
		fprintf(stderr, "cannot reach the cluster: %s\n",
		    pasco_strerror(rv));
		return 1;
	}
	pasco_tensor_scalar(&zero, PASCO_F32, 0);
	pasco_tensor_scalar(&one, PASCO_F32, 1);
	if ((rv = pasco_variable_create(
	         &counter, strategy, "counter", zero)) != 0) {
		fprintf(stderr, "%s\n", pasco_strategy_error(strategy));
		return 1;
	}
	pasco_coordinator_create(&coord, strategy, NULL);

	pasco_arg args[] = {
	    pasco_arg_variable(counter), pasco_arg_tensor(one)};
	for (int i = 0; i < 100; i++) {
		pasco_remote_value_free(last);
		pasco_schedule(
		    coord, "add", args, 2, &last); /* returns at once */
	}
	if ((rv = pasco_join(coord)) != 0) { /* waits for all 100 */
		fprintf(stderr, "%s\n", pasco_coordinator_error(coord));
		return 1;
	}
	pasco_remote_value_fetch(last, &worker);
	pasco_variable_read(counter, &value);
	printf("counter = %g; the last closure ran on worker %g\n",
	    pasco_tensor_get(value, 0), pasco_value_scalar(worker));

	pasco_tensor_release(value);
	pasco_remote_value_free(last);
	pasco_coordinator_destroy(coord);
	pasco_variable_free(counter);
	pasco_tensor_release(zero);
	pasco_tensor_release(one);
	pasco_strategy_destroy(strategy);
	return 0;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief); /* chief, worker or ps */
}
