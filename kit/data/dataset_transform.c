/*
 * Transforms that pass elements through one by one: repeat, shard, take,
 * map, shuffle and filter. Each is iterated by one thread at a time (see
 * kit/data/dataset.c) and calls its input's ops directly; user callbacks
 * (map, filter) run on that thread too, so they may block but must not
 * iterate the same chain.
 */
#include <stdlib.h>

#include "dataset_impl.h"
#include "util.h"
#include "value_impl.h"

typedef struct repeat {
	int64_t count;    /* < 0: forever */
	int64_t epochs;   /* finished */
	int64_t produced; /* in this epoch: an empty epoch ends the
	                   * repetition instead of spinning */
} repeat;

static int
repeat_next(pasco_dataset *ds, pasco_value **out)
{
	repeat *r = ds->state;
	if (r->count == 0) {
		return PASCO_EOUTOFRANGE;
	}
	for (;;) {
		int rv = ds->input->ops->next(ds->input, out);
		if (rv != PASCO_EOUTOFRANGE) {
			r->produced += rv == 0;
			return rv;
		}
		r->epochs++;
		if ((r->count >= 0 && r->epochs >= r->count) ||
		    r->produced == 0) {
			return PASCO_EOUTOFRANGE;
		}
		r->produced = 0;
		if ((rv = pasci_dataset_input_reset(ds)) != 0) {
			return rv;
		}
	}
}

static int
repeat_reset(pasco_dataset *ds)
{
	repeat *r   = ds->state;
	r->epochs   = 0;
	r->produced = 0;
	return pasci_dataset_input_reset(ds);
}

static const struct dataset_ops repeat_ops = {
    .next = repeat_next, .reset = repeat_reset, .fini = NULL};

int
pasco_dataset_repeat(pasco_dataset **out, pasco_dataset *in, int64_t count)
{
	int rv;
	if (in == NULL) {
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &repeat_ops, in, sizeof(repeat))) ==
	    0) {
		*(repeat *) (*out)->state = (repeat){.count = count};
		(*out)->forever           = count < 0 || in->forever;
	}
	return rv;
}

typedef struct shard {
	int64_t num_shards, index;
	int64_t seen; /* input elements so far */
} shard;

static int
shard_next(pasco_dataset *ds, pasco_value **out)
{
	shard *sh = ds->state;
	for (;;) {
		int rv = ds->input->ops->next(ds->input, out);
		if (rv != 0) {
			return rv;
		}
		if (sh->seen++ % sh->num_shards == sh->index) {
			return PASCO_OK;
		}
		pasco_value_free(*out);
		*out = NULL;
	}
}

static int
shard_reset(pasco_dataset *ds)
{
	shard *sh = ds->state;
	sh->seen  = 0;
	return pasci_dataset_input_reset(ds);
}

static const struct dataset_ops shard_ops = {
    .next = shard_next, .reset = shard_reset, .fini = NULL};

int
pasco_dataset_shard(
    pasco_dataset **out, pasco_dataset *in, int64_t num_shards, int64_t index)
{
	int rv;
	if (in == NULL || num_shards < 1 || index < 0 || index >= num_shards) {
		pasco_dataset_free(in);
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &shard_ops, in, sizeof(shard))) ==
	    0) {
		*(shard *) (*out)->state =
		    (shard){.num_shards = num_shards, .index = index};
	}
	return rv;
}

typedef struct take {
	int64_t count; /* < 0: all */
	int64_t taken;
} take;

static int
take_next(pasco_dataset *ds, pasco_value **out)
{
	take *tk = ds->state;
	int   rv;
	if (tk->count >= 0 && tk->taken >= tk->count) {
		return PASCO_EOUTOFRANGE;
	}
	if ((rv = ds->input->ops->next(ds->input, out)) == 0) {
		tk->taken++;
	}
	return rv;
}

static int
take_reset(pasco_dataset *ds)
{
	take *tk  = ds->state;
	tk->taken = 0;
	return pasci_dataset_input_reset(ds);
}

static const struct dataset_ops take_ops = {
    .next = take_next, .reset = take_reset, .fini = NULL};

int
pasco_dataset_take(pasco_dataset **out, pasco_dataset *in, int64_t count)
{
	int rv;
	if (in == NULL) {
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &take_ops, in, sizeof(take))) == 0) {
		*(take *) (*out)->state = (take){.count = count};
		(*out)->forever         = count < 0 && in->forever;
	}
	return rv;
}

typedef struct map_fn {
	pasco_map_fn fn;
	void        *arg;
	void (*free_arg)(void *); /* may be NULL */
} map_fn;

static int
map_next(pasco_dataset *ds, pasco_value **out)
{
	map_fn      *m = ds->state;
	pasco_value *e;
	int          rv = ds->input->ops->next(ds->input, &e);
	if (rv != 0) {
		return rv;
	}
	rv = m->fn(m->arg, e, out);
	pasco_value_free(e);
	if (rv == 0 && *out == NULL) {
		rv = PASCO_EINVAL; /* a map function must produce a value */
	}
	return rv;
}

static void
map_fini(pasco_dataset *ds)
{
	map_fn *m = ds->state;
	if (m->free_arg != NULL) {
		m->free_arg(m->arg);
	}
}

static const struct dataset_ops map_ops = {
    .next = map_next, .reset = pasci_dataset_input_reset, .fini = map_fini};

int
pasco_dataset_map_with(pasco_dataset **out, pasco_dataset *in, pasco_map_fn fn,
    void *arg, void (*free_arg)(void *))
{
	int rv = in == NULL || fn == NULL ? PASCO_EINVAL : PASCO_OK;
	if (rv != 0) {
		pasco_dataset_free(in);
		*out = NULL;
	} else if ((rv = pasci_dataset_new(
	                out, &map_ops, in, sizeof(map_fn))) == 0) {
		*(map_fn *) (*out)->state = (map_fn){fn, arg, free_arg};
		return PASCO_OK;
	}
	if (free_arg != NULL) {
		free_arg(arg);
	}
	return rv;
}

int
pasco_dataset_map(
    pasco_dataset **out, pasco_dataset *in, pasco_map_fn fn, void *arg)
{
	return pasco_dataset_map_with(out, in, fn, arg, NULL);
}

/* shuffle: a window of up to size elements, one drawn at random per
 * element out. */
typedef struct shuffle {
	pasco_value **buf; /* size slots; [0, filled) hold elements */
	int64_t       size, filled;
	uint64_t      counter; /* draws so far, from the mixed seed */
	bool          input_done;
} shuffle;

static int
shuffle_fill(pasco_dataset *ds)
{
	shuffle *sh = ds->state;
	while (!sh->input_done && sh->filled < sh->size) {
		int rv = ds->input->ops->next(ds->input, &sh->buf[sh->filled]);
		if (rv == PASCO_EOUTOFRANGE) {
			sh->input_done = true;
		} else if (rv != 0) {
			return rv;
		} else {
			sh->filled++;
		}
	}
	return PASCO_OK;
}

static int
shuffle_next(pasco_dataset *ds, pasco_value **out)
{
	shuffle *sh = ds->state;
	uint64_t pick;
	int      rv;
	if ((rv = shuffle_fill(ds)) != 0) {
		return rv;
	}
	if (sh->filled == 0) {
		return PASCO_EOUTOFRANGE;
	}
	pick          = pasci_mix64(sh->counter++) % (uint64_t) sh->filled;
	*out          = sh->buf[pick];
	sh->buf[pick] = sh->buf[sh->filled - 1];
	sh->buf[--sh->filled] = NULL;
	return PASCO_OK;
}

static void
shuffle_drain(pasco_dataset *ds)
{
	shuffle *sh = ds->state;
	for (int64_t i = 0; i < sh->filled; i++) {
		pasco_value_free(sh->buf[i]);
		sh->buf[i] = NULL;
	}
	sh->filled = 0;
}

static int
shuffle_reset(pasco_dataset *ds)
{
	shuffle *sh = ds->state;
	shuffle_drain(ds);
	/* the counter keeps going: a new order each epoch */
	sh->input_done = false;
	return pasci_dataset_input_reset(ds);
}

static void
shuffle_fini(pasco_dataset *ds)
{
	shuffle *sh = ds->state;
	shuffle_drain(ds);
	free(sh->buf);
}

static const struct dataset_ops shuffle_ops = {
    .next = shuffle_next, .reset = shuffle_reset, .fini = shuffle_fini};

int
pasco_dataset_shuffle(
    pasco_dataset **out, pasco_dataset *in, int64_t buffer_size, uint64_t seed)
{
	shuffle *sh;
	int      rv;
	if (in == NULL || buffer_size < 1) {
		pasco_dataset_free(in);
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &shuffle_ops, in, sizeof(shuffle))) !=
	    0) {
		return rv;
	}
	sh          = (*out)->state;
	sh->size    = buffer_size;
	sh->counter = pasci_mix64(seed != 0 ? seed : pasci_random_u64());
	if ((sh->buf = pasci_calloc((size_t) buffer_size, sizeof(*sh->buf))) ==
	    NULL) {
		pasco_dataset_free(*out);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	return PASCO_OK;
}

typedef struct filter_fn {
	pasco_filter_fn keep;
	void           *arg;
} filter_fn;

static int
filter_next(pasco_dataset *ds, pasco_value **out)
{
	filter_fn *f = ds->state;
	for (;;) {
		bool keep = false;
		int  rv   = ds->input->ops->next(ds->input, out);
		if (rv != 0) {
			return rv;
		}
		if ((rv = f->keep(f->arg, *out, &keep)) != 0 || keep) {
			if (rv != 0) {
				pasco_value_free(*out);
				*out = NULL;
			}
			return rv;
		}
		pasco_value_free(*out);
		*out = NULL;
	}
}

static const struct dataset_ops filter_ops = {
    .next = filter_next, .reset = pasci_dataset_input_reset, .fini = NULL};

int
pasco_dataset_filter(
    pasco_dataset **out, pasco_dataset *in, pasco_filter_fn keep, void *arg)
{
	int rv;
	if (in == NULL || keep == NULL) {
		pasco_dataset_free(in);
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(
	         out, &filter_ops, in, sizeof(filter_fn))) == 0) {
		*(filter_fn *) (*out)->state = (filter_fn){keep, arg};
	}
	return rv;
}
