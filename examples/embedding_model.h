/*
 * The tutorial model shared by the two files of examples/embedding_classifier:
 * embedding_model.c (what workers run) and embedding_classifier.c (the
 * coordinator's program).
 */
#ifndef EMBEDDING_MODEL_H
#define EMBEDDING_MODEL_H

#include <pasco.h>

#define VOCAB 7
#define TABLE_ROWS (VOCAB + 1) /* + the out-of-vocabulary row 0 */
#define DIM 16384
#define WORDS 3
#define L2 1e-4

/* The model's variables, as passed to step functions. */
typedef struct model {
	pasco_variable *emb, *kernel, *bias;
} model;

/* n examples: [ids [n, WORDS] (vocabulary indices), labels [n] (1 iff
 * "avenger" is one of the words)], drawn from seed. NULL without memory. */
pasco_value *make_examples(int64_t n, uint64_t seed);

/* Forward pass: logits [batch, 1] and pred = sigmoid(logits), and the
 * averaged embeddings [batch, DIM] and the kernel, kept for the backward
 * pass. (logits may be NULL when not wanted.) */
int forward(model *m, const pasco_tensor *ids, pasco_tensor **logits,
    pasco_tensor **pred, pasco_tensor **avg, pasco_tensor **kernel);

#endif
