/*
 * Transforms that run other datasets: interleave (datasets made from
 * input elements, taken in turn) and prefetch (a producer thread reading
 * ahead). See kit/data/dataset.c for the node model.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "util.h"
#include "value_impl.h"

/* interleave: up to cycle open datasets, made by fn from input elements;
 * block elements are taken from each in turn. An empty slot is refilled
 * from the input when the turn comes to it; an exhausted one is closed and
 * the turn moves on (TensorFlow's deterministic order). */
typedef struct interleave {
	pasco_interleave_fn fn;
	void               *arg;
	int64_t             cycle, block;
	int64_t         at, taken, open; /* slot, taken from it, open slots */
	bool            input_done;
	pasco_dataset **slots;
} interleave;

static void
interleave_close_all(interleave *il)
{
	for (int64_t i = 0; i < il->cycle; i++) {
		pasco_dataset_free(il->slots[i]);
		il->slots[i] = NULL;
	}
	il->at = il->taken = il->open = 0;
	il->input_done                = false;
}

static void
interleave_advance(interleave *il)
{
	il->at    = (il->at + 1) % il->cycle;
	il->taken = 0;
}

static int
interleave_next(pasco_dataset *ds, pasco_value **out)
{
	interleave *il = ds->state;
	int         rv;
	while (!il->input_done || il->open > 0) {
		pasco_dataset **slot = &il->slots[il->at];
		if (*slot != NULL) {
			rv = pasco_dataset_next(*slot, out);
			if (rv == 0) {
				if (++il->taken == il->block) {
					interleave_advance(il);
				}
				return PASCO_OK;
			}
			if (rv != PASCO_EOUTOFRANGE) {
				return rv;
			}
			pasco_dataset_free(*slot);
			*slot = NULL;
			il->open--;
			interleave_advance(il);
		} else if (!il->input_done) {
			pasco_value *e;
			rv = ds->input->ops->next(ds->input, &e);
			if (rv == PASCO_EOUTOFRANGE) {
				il->input_done = true;
				continue;
			}
			if (rv != 0) {
				return rv;
			}
			rv = il->fn(il->arg, e, slot);
			pasco_value_free(e);
			if (rv == 0 && *slot == NULL) {
				/* fn must produce a dataset */
				rv = PASCO_EINVAL;
			}
			if (rv != 0) {
				return rv;
			}
			il->open++;
		} else {
			interleave_advance(il);
		}
	}
	return PASCO_EOUTOFRANGE;
}

static int
interleave_reset(pasco_dataset *ds)
{
	interleave_close_all(ds->state);
	return pasci_dataset_input_reset(ds);
}

static void
interleave_fini(pasco_dataset *ds)
{
	interleave *il = ds->state;
	if (il->slots != NULL) {
		interleave_close_all(il);
		free(il->slots);
	}
}

static const struct dataset_ops interleave_ops = {.next = interleave_next,
    .reset                                              = interleave_reset,
    .fini                                               = interleave_fini};

int
pasco_dataset_interleave(pasco_dataset **out, pasco_dataset *in,
    pasco_interleave_fn fn, void *arg, int64_t cycle_length,
    int64_t block_length)
{
	interleave *il;
	int         rv;
	*out = NULL;
	if (in == NULL || fn == NULL || cycle_length < 1 || block_length < 1) {
		pasco_dataset_free(in);
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(
	         out, &interleave_ops, in, sizeof(interleave))) != 0) {
		return rv;
	}
	il        = (*out)->state;
	il->fn    = fn;
	il->arg   = arg;
	il->cycle = cycle_length;
	il->block = block_length;
	if ((il->slots = pasci_calloc(
	         (size_t) cycle_length, sizeof(*il->slots))) == NULL) {
		pasco_dataset_free(*out);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	return PASCO_OK;
}

/* prefetch: a producer thread moves elements from the input into a ring;
 * the consumer (whoever iterates this node, one thread at a time) takes
 * them. The input is touched only by the producer while it runs. The end
 * or an error stops the producer and reaches the consumer after the
 * elements before it; an error brings the producer thread's data error
 * with it, since the message a source leaves is thread-local
 * (pasco_dataset_last_error) and the consumer is another thread. */
typedef struct prefetch {
	pthread_mutex_t mu;
	pthread_cond_t  cv;   /* the ring, finished or stop changed */
	pasco_value   **ring; /* cap slots; ring and cap fixed at creation */
	int64_t         cap;
	/* protected by mu while a producer runs, the consumer's otherwise: */
	int64_t head, count;
	int     status;                      /* end or error, once finished */
	char    error[PASCI_DATA_ERROR_CAP]; /* the producer's, with status */
	bool    finished, stop;
	/* the consumer's alone: */
	bool      running;
	pthread_t thread;
} prefetch;

/* The producer's last act: status and its thread's message for the
 * consumer. mu held. */
static void
prefetch_finish_locked(prefetch *p, int status)
{
	p->status   = status;
	p->finished = true;
	memcpy(p->error, pasci_data_error, sizeof(p->error));
	pthread_cond_broadcast(&p->cv);
}

static void *
prefetch_main(void *arg)
{
	pasco_dataset *ds = arg;
	prefetch      *p  = ds->state;
	pasci_thread_name("pasco-prefetch");
	for (;;) {
		pasco_value *e  = NULL;
		int          rv = ds->input->ops->next(ds->input, &e);
		pthread_mutex_lock(&p->mu);
		if (rv != 0) {
			prefetch_finish_locked(p, rv);
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		while (p->count == p->cap && !p->stop) {
			pthread_cond_wait(&p->cv, &p->mu);
		}
		if (p->stop) {
			pthread_mutex_unlock(&p->mu);
			pasco_value_free(e);
			return NULL;
		}
		p->ring[(p->head + p->count++) % p->cap] = e;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
}

static int
prefetch_start(pasco_dataset *ds)
{
	prefetch *p = ds->state;
	p->finished = p->stop = false;
	p->head = p->count = 0;
	p->status          = 0;
	p->running = pthread_create(&p->thread, NULL, prefetch_main, ds) == 0;
	return p->running ? PASCO_OK : PASCO_ENOMEM;
}

static void
prefetch_stop(pasco_dataset *ds)
{
	prefetch *p = ds->state;
	if (!p->running) {
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	p->running = false;
	for (int64_t i = 0; i < p->count; i++) {
		pasco_value_free(p->ring[(p->head + i) % p->cap]);
	}
	p->count = 0;
}

static int
prefetch_next(pasco_dataset *ds, pasco_value **out)
{
	prefetch *p = ds->state;
	int       rv;
	if (!p->running && (rv = prefetch_start(ds)) != 0) {
		return rv;
	}
	pthread_mutex_lock(&p->mu);
	while (p->count == 0 && !p->finished) {
		pthread_cond_wait(&p->cv, &p->mu);
	}
	if (p->count > 0) {
		*out    = p->ring[p->head];
		p->head = (p->head + 1) % p->cap;
		p->count--;
		rv = PASCO_OK;
		pthread_cond_broadcast(&p->cv);
	} else {
		rv = p->status;
		if (rv != PASCO_EOUTOFRANGE) {
			memcpy(pasci_data_error, p->error,
			    sizeof(pasci_data_error));
		}
	}
	pthread_mutex_unlock(&p->mu);
	return rv;
}

static int
prefetch_reset(pasco_dataset *ds)
{
	prefetch_stop(ds);
	return pasci_dataset_input_reset(ds);
}

static void
prefetch_fini(pasco_dataset *ds)
{
	prefetch *p = ds->state;
	prefetch_stop(ds);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->ring);
}

static const struct dataset_ops prefetch_ops = {
    .next = prefetch_next, .reset = prefetch_reset, .fini = prefetch_fini};

int
pasco_dataset_prefetch(pasco_dataset **out, pasco_dataset *in, int64_t count)
{
	prefetch *p;
	int       rv;
	if (in == NULL || count < 1) {
		pasco_dataset_free(in);
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(
	         out, &prefetch_ops, in, sizeof(prefetch))) != 0) {
		return rv;
	}
	p      = (*out)->state;
	p->cap = count;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if ((p->ring = pasci_calloc((size_t) count, sizeof(*p->ring))) ==
	    NULL) {
		pasco_dataset_free(*out);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	return PASCO_OK;
}
