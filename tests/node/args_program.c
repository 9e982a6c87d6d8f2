/*
 * A program of the program_args test: its dataset factory and its step
 * function read the program's own options (--count N, --tag T) from
 * pasco_program_args on the worker, as its chief does from its argv; no
 * global is filled in main. The chief prints what the worker saw:
 *     sum 10 tag hello argc 5
 */
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of --name in argv[0..argc), or NULL. */
static const char *
option(int argc, char *const *argv, const char *name)
{
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], name) == 0) {
			return argv[i + 1];
		}
	}
	return NULL;
}

PASCO_DATASET(arg_numbers)
{
	const char *count = option(ctx->argc, ctx->argv, "--count");
	if (count == NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "no --count among the %d program arguments", ctx->argc);
	}
	return pasco_dataset_range(out, 0, atoll(count), 1);
}

/* The sum of the worker's dataset, the --tag it sees and its argc. */
PASCO_FUNCTION(sum_and_tag)
{
	pasco_dataset *ds;
	pasco_value   *e;
	pasco_tensor  *sum, *tag, *n;
	double         total = 0;
	int            argc, rv;
	char *const   *argv = pasco_program_args(&argc);
	const char    *t    = option(argc, argv, "--tag");
	if ((rv = pasco_call_iterator(call, 0, &ds)) != 0) {
		return rv;
	}
	if (t == NULL) {
		return pasco_call_fail(call, PASCO_EINVAL, "no --tag");
	}
	while ((rv = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		total += pasco_value_scalar(e);
		pasco_value_free(e);
	}
	if (rv != PASCO_EOUTOFRANGE) {
		return pasco_call_fail(
		    call, rv, "%s", pasco_dataset_last_error());
	}
	if (pasco_tensor_scalar(&sum, PASCO_F64, total) != 0 ||
	    pasco_tensor_from(&tag, PASCO_U8, 1,
	        (int64_t[]){(int64_t) strlen(t)}, t, strlen(t)) != 0 ||
	    pasco_tensor_scalar(&n, PASCO_I32, argc) != 0) {
		return PASCO_ENOMEM;
	}
	pasco_call_return(
	    call, pasco_value_list(3, pasco_value_tensor(sum),
	              pasco_value_tensor(tag), pasco_value_tensor(n)));
	return PASCO_OK;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	pasco_strategy            *s  = NULL;
	pasco_coordinator         *c  = NULL;
	pasco_per_worker_dataset  *d  = NULL;
	pasco_per_worker_iterator *it = NULL;
	pasco_remote_value        *r  = NULL;
	const pasco_value         *v;
	int                        rv, status = 1;
	if (cluster == NULL || option(argc, argv, "--count") == NULL) {
		fprintf(stderr, "usage: args_program --count N --tag T\n");
		return 2;
	}
	if ((rv = pasco_strategy_create(&s, cluster, NULL)) != 0 ||
	    (rv = pasco_coordinator_create(&c, s, NULL)) != 0 ||
	    (rv = pasco_per_worker_dataset_create(&d, c, "arg_numbers")) !=
	        0 ||
	    (rv = pasco_per_worker_iterator_create(&it, d)) != 0) {
		fprintf(stderr, "setting up: %s\n", pasco_strerror(rv));
		goto out;
	}
	pasco_arg a = pasco_arg_iterator(it);
	if ((rv = pasco_schedule(c, "sum_and_tag", &a, 1, &r)) != 0 ||
	    (rv = pasco_remote_value_fetch(r, &v)) != 0) {
		fprintf(stderr, "sum_and_tag failed: %s\n",
		    r != NULL ? pasco_remote_value_error(r)
		              : pasco_strerror(rv));
		goto out;
	}
	const pasco_tensor *tag =
	    pasco_value_as_tensor(pasco_value_item(v, 1));
	printf("sum %g tag %.*s argc %g (chief argc %d)\n",
	    pasco_value_scalar(pasco_value_item(v, 0)), (int) tag->count,
	    (const char *) tag->data,
	    pasco_value_scalar(pasco_value_item(v, 2)), argc);
	status = 0;
out:
	pasco_remote_value_free(r);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_coordinator_destroy(c);
	pasco_strategy_destroy(s);
	return status;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
