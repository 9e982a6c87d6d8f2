/*
 * The dataset node core: building, iterating and freeing a chain of nodes.
 * A chain is iterated through its outermost node; pasco_dataset_next takes
 * that node's lock, so several closures on one worker can share an
 * iterator. Inner nodes are only touched under the outer lock, through
 * their ops tables. The kinds of nodes live beside this file:
 * dataset_source.c (sources), dataset_batch.c (batching),
 * dataset_transform.c (element-wise and positional transforms) and
 * pipeline.c (transforms that run other datasets or a thread).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dataset_impl.h"
#include "util.h"

_Thread_local char pasci_data_error[PASCI_DATA_ERROR_CAP];

const char *
pasco_dataset_last_error(void)
{
	return pasci_data_error;
}

int
pasco_dataset_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pasci_data_error, sizeof(pasci_data_error), fmt, ap);
	va_end(ap);
	pasci_error_note(pasci_data_error);
	return err;
}

int
pasci_dataset_new(pasco_dataset **out, const struct dataset_ops *ops,
    pasco_dataset *in, size_t state_size)
{
	pasco_dataset *ds = pasci_calloc(1, sizeof(*ds) + state_size);
	*out              = ds;
	if (ds == NULL) {
		pasco_dataset_free(in);
		return PASCO_ENOMEM;
	}
	ds->ops     = ops;
	ds->input   = in;
	ds->forever = in != NULL && in->forever;
	ds->state   = state_size > 0 ? ds->kind_state : NULL;
	pthread_mutex_init(&ds->mu, NULL);
	return PASCO_OK;
}

bool
pasco_dataset_is_infinite(const pasco_dataset *ds)
{
	return ds != NULL && ds->forever;
}

void
pasco_dataset_free(pasco_dataset *ds)
{
	if (ds == NULL) {
		return;
	}
	/* this node first: a prefetch thread uses its input until stopped */
	if (ds->ops->fini != NULL) {
		ds->ops->fini(ds);
	}
	pasco_dataset_free(ds->input);
	pthread_mutex_destroy(&ds->mu);
	free(ds);
}

int
pasco_dataset_next(pasco_dataset *ds, pasco_value **element)
{
	int rv;
	*element = NULL;
	pthread_mutex_lock(&ds->mu);
	rv = ds->ops->next(ds, element);
	pthread_mutex_unlock(&ds->mu);
	return rv;
}

int
pasci_dataset_input_reset(pasco_dataset *ds)
{
	return ds->input->ops->reset(ds->input);
}
