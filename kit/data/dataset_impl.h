/*
 * The inside of a dataset node, shared by the node core
 * (kit/data/dataset.c) and the files that implement kinds of nodes
 * (kit/data/dataset_source.c, dataset_batch.c, dataset_transform.c,
 * pipeline.c).
 */
#ifndef PASCI_DATASET_IMPL_H
#define PASCI_DATASET_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pasco/dataset.h"

struct dataset_ops {
	/* Next element into *out, PASCO_EOUTOFRANGE at the end. Outer lock
	 * held; may block (on a generator, a user callback, a prefetch
	 * thread). */
	int (*next)(pasco_dataset *ds, pasco_value **out);
	/* Back to the start (for repeat). Outer lock held. */
	int (*reset)(pasco_dataset *ds);
	/* Releases what this node's state owns (not the state itself, which
	 * goes with the node, nor input). No lock held; may be NULL. */
	void (*fini)(pasco_dataset *ds);
};

struct pasco_dataset {
	const struct dataset_ops *ops;
	pasco_dataset            *input; /* transforms: the wrapped dataset */
	pthread_mutex_t           mu;    /* used on the outermost node */
	/* Never ends: a repeat forever at or below this node, not cut by a
	 * take (a transform inherits its input's; pasco_dataset_repeat and
	 * pasco_dataset_take set it). */
	bool forever;
	/* The kind's parameters and position: a struct private to the file
	 * of the kind, stored in kind_state. Touched by whoever iterates the
	 * node: under the outer lock, or, below a prefetch, by its producer
	 * thread alone (kit/data/pipeline.c). */
	void       *state;
	max_align_t kind_state[];
};

/* A node of kind ops over in (NULL for a source), with state_size zeroed
 * bytes of state (state is NULL when 0). On failure in is freed and *out
 * is NULL. */
int pasci_dataset_new(pasco_dataset **out, const struct dataset_ops *ops,
    pasco_dataset *in, size_t state_size);

/* The calling thread's message for its last data error, read by
 * pasco_dataset_last_error and pasco_tfrecord_last_error. A source writes
 * it (pasci_fmt, or as the error buffer of base/fileio.h) before returning
 * the error; a node that iterates its input on another thread carries it
 * back with the error (prefetch, kit/data/pipeline.c). */
#define PASCI_DATA_ERROR_CAP 512
extern _Thread_local char pasci_data_error[PASCI_DATA_ERROR_CAP];

/* Splits the next CSV field off *p (up to delim or end) into field (at
 * most cap - 1 bytes kept, NUL-terminated); "quoted" fields lose their
 * quotes, "" in them is a quote. Returns false at the end of the line
 * (kit/data/csv.c). */
bool pasci_csv_next_field(
    char **p, char *end, char delim, char *field, size_t cap);

/* Resets the input: the reset of transforms that keep no position. */
int pasci_dataset_input_reset(pasco_dataset *ds);

/* The CSV source in dense mode (make_csv): each line becomes (x, y), x
 * the f32 vector of the columns whose place[i] >= 0 (at that index), y
 * the scalar of the column marked PASCI_CSV_LABEL; columns marked
 * PASCI_CSV_SKIP are not parsed. x goes under features_name when it is
 * not NULL. Errors as pasco_dataset_csv's. */
#define PASCI_CSV_SKIP (-1)
#define PASCI_CSV_LABEL (-2)
int pasci_dataset_csv_dense(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_csv_options *opts, const int32_t *place,
    const char *features_name);

#endif
