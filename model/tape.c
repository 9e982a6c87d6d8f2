/*
 * The gradient tape: its arena (every node, value and saved buffer of a
 * tape, freed at once), its sticky error, the leaves, and the backward
 * pass. Ops (model/ops_*.c) compute their value when called and record a
 * node; pasco_tape_gradient visits the nodes in reverse creation order
 * (creation order is topological), each op adding its inputs' gradients,
 * then turns the watched sources' buffers into tensors: dense ones as
 * they are, sparse ones (embedding tables) sorted by id with repeated ids
 * summed. A tape belongs to one thread.
 *
 * The arena's blocks outlive the tape: pasco_tape_free keeps them in a
 * cache of the calling thread (at most CACHE_MAX bytes, freed when the
 * thread ends), from which that thread's next tapes take the smallest
 * block that fits. A training step allocates what the previous one did,
 * so from its second step on a tape costs no malloc and no page faults.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tape_impl.h"
#include "tensor_impl.h"
#include "util.h"

#define ARENA_BLOCK (64 * 1024)
#define CACHE_MAX ((size_t) 64 << 20)

typedef struct arena_block {
	struct arena_block *next;
	size_t              used, size;
	_Alignas(16) unsigned char data[];
} arena_block;

struct pasco_tape {
	arena_block    *blocks;
	pasco_tnode   **nodes; /* creation order */
	size_t          nnodes, capnodes;
	pasco_tensor  **held; /* tensors the leaves hold */
	size_t          nheld, capheld;
	bool            training;
	uint64_t        seed;
	int             err;
	size_t          bytes; /* the arena's, asked for in all */
	char            msg[PASCI_TAPE_MSG_MAX];
	pasci_tape_step step; /* the train step's global step */
};

static const pasci_tape_op leaf_op = {.name = "leaf", .backward = NULL};

/* The most bytes one tape's values and nodes take in all (an op graph
 * from a stranger's config must not make a worker allocate without
 * bound: one_hot of a huge depth, a broadcast of [n, 1] against [1, n]):
 * PASCO_MAX_TAPE_MB, read at the first use; 0 until then. */
static _Atomic size_t max_bytes;

static size_t
tape_max(void)
{
	size_t m = atomic_load_explicit(&max_bytes, memory_order_relaxed);
	if (m == 0) {
		size_t zero = 0;
		m           = (size_t) pasci_env_number("PASCO_MAX_TAPE_MB", 1,
		                  (long long) 1 << 30,
		                  (long long) (PASCI_TAPE_MAX_BYTES >> 20), "megabytes")
		    << 20;
		/* a bound set meanwhile (a test's) stays */
		if (!atomic_compare_exchange_strong(&max_bytes, &zero, m)) {
			m = zero;
		}
	}
	return m;
}

size_t
pasci_tape_set_max_bytes(size_t bytes)
{
	size_t old = tape_max();
	atomic_store(&max_bytes, bytes);
	return old;
}

/* ---- the arena and its per-thread cache of blocks ---- */

typedef struct block_cache {
	arena_block *blocks;
	size_t       bytes;
} block_cache;

static pthread_key_t  cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool           cache_ok;

static void
cache_destroy(void *p)
{
	block_cache *c = p;
	for (arena_block *b = c->blocks, *next; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	free(c);
}

static void
cache_init(void)
{
	cache_ok = pthread_key_create(&cache_key, cache_destroy) == 0;
}

/* This thread's cache, made on first use (NULL without memory). */
static block_cache *
cache_get(void)
{
	block_cache *c;
	pthread_once(&cache_once, cache_init);
	if (!cache_ok) {
		return NULL;
	}
	if ((c = pthread_getspecific(cache_key)) == NULL &&
	    (c = pasci_calloc(1, sizeof(*c))) != NULL &&
	    pthread_setspecific(cache_key, c) != 0) {
		free(c);
		c = NULL;
	}
	return c;
}

/* The smallest cached block of at least size bytes, taken out of the
 * cache; else a new one of size bytes. NULL without memory. */
static arena_block *
block_take(size_t size)
{
	block_cache  *c    = cache_get();
	arena_block **best = NULL, *b;
	for (arena_block **p            = c != NULL ? &c->blocks : NULL;
	     p != NULL && *p != NULL; p = &(*p)->next) {
		if ((*p)->size >= size &&
		    (best == NULL || (*p)->size < (*best)->size)) {
			best = p;
		}
	}
	if (best != NULL) {
		b     = *best;
		*best = b->next;
		c->bytes -= b->size;
	} else if ((b = malloc(sizeof(*b) + size)) != NULL) {
		b->size = size;
	}
	if (b != NULL) {
		b->used = 0;
	}
	return b;
}

/* Gives a tape's blocks to this thread's cache, freeing what is past
 * CACHE_MAX. */
static void
blocks_release(arena_block *blocks)
{
	block_cache *c = cache_get();
	for (arena_block *b = blocks, *next; b != NULL; b = next) {
		next = b->next;
		if (c != NULL && c->bytes + b->size <= CACHE_MAX) {
			b->next   = c->blocks;
			c->blocks = b;
			c->bytes += b->size;
		} else {
			free(b);
		}
	}
}

int
pasco_tape_alloc(pasco_tape **out, bool training, uint64_t seed)
{
	*out = pasci_calloc(1, sizeof(**out));
	if (*out == NULL) {
		return PASCO_ENOMEM;
	}
	(*out)->training = training;
	(*out)->seed     = seed;
	return PASCO_OK;
}

void
pasco_tape_free(pasco_tape *tp)
{
	if (tp == NULL) {
		return;
	}
	for (size_t i = 0; i < tp->nheld; i++) {
		pasco_tensor_release(tp->held[i]);
	}
	for (size_t k = 0; k < tp->nnodes; k++) {
		pasco_tensor_release(tp->nodes[k]->grad_t);
	}
	blocks_release(tp->blocks);
	free(tp->held);
	free(tp->nodes);
	free(tp);
}

int
pasco_tape_error(const pasco_tape *tp)
{
	return tp == NULL ? PASCO_EINVAL : tp->err;
}

const char *
pasco_tape_message(const pasco_tape *tp)
{
	return tp == NULL ? "the tape is NULL" : tp->msg;
}

pasco_tnode *
pasci_tape_fail(pasco_tape *tp, int err, const char *fmt, ...)
{
	va_list ap;
	if (tp->err != PASCO_OK) {
		return NULL;
	}
	tp->err = err;
	va_start(ap, fmt);
	vsnprintf(tp->msg, sizeof(tp->msg), fmt, ap);
	va_end(ap);
	return NULL;
}

void *
pasci_tape_mem_raw(pasco_tape *tp, size_t bytes)
{
	arena_block *b   = tp->blocks;
	size_t       max = tape_max();
	void        *p;
	if (bytes > max || tp->bytes + ((bytes + 15) & ~(size_t) 15) > max) {
		pasci_tape_fail(tp, PASCO_ENOMEM,
		    "tape: %zu bytes more, past the tape's bound of %zu bytes "
		    "(%zu taken; PASCO_MAX_TAPE_MB sets it)",
		    bytes, max, tp->bytes);
		return NULL;
	}
	bytes = (bytes + 15) & ~(size_t) 15;
	tp->bytes += bytes;
	if (b == NULL || b->size - b->used < bytes) {
		bool big = bytes > ARENA_BLOCK;
		if ((b = block_take(big ? bytes : ARENA_BLOCK)) == NULL) {
			pasci_tape_fail(tp, PASCO_ENOMEM,
			    "tape: out of memory for %zu bytes", bytes);
			return NULL;
		}
		/* a block for one big request goes behind the current one,
		 * which keeps serving small ones */
		if (tp->blocks != NULL && big) {
			b->next          = tp->blocks->next;
			tp->blocks->next = b;
		} else {
			b->next    = tp->blocks;
			tp->blocks = b;
		}
	}
	p = b->data + b->used;
	b->used += bytes;
	return p;
}

pasci_tape_step *
pasci_tape_step_of(pasco_tape *tp)
{
	return &tp->step;
}

void *
pasci_tape_mem(pasco_tape *tp, size_t bytes)
{
	void *p = pasci_tape_mem_raw(tp, bytes);
	if (p != NULL) {
		memset(p, 0, bytes);
	}
	return p;
}

static bool
grow(pasco_tape *tp, void *arrayp, size_t n, size_t *cap, size_t elem)
{
	void **array = arrayp;
	if (n < *cap) {
		return true;
	}
	size_t newcap = *cap ? *cap * 2 : 64;
	void  *p      = realloc(*array, newcap * elem);
	if (p == NULL) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "tape: out of memory");
		return false;
	}
	*array = p;
	*cap   = newcap;
	return true;
}

static bool
append(pasco_tape *tp, pasco_tnode *n)
{
	if (!grow(tp, &tp->nodes, tp->nnodes, &tp->capnodes, sizeof(n))) {
		return false;
	}
	n->tape                 = tp;
	n->index                = (int64_t) tp->nnodes;
	tp->nodes[tp->nnodes++] = n;
	return true;
}

pasco_tnode *
pasci_tape_node(pasco_tape *tp, const pasci_tape_op *op, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, size_t nin, pasco_tnode *const *in)
{
	pasco_tnode *n =
	    pasci_tape_node_raw(tp, op, dtype, rank, shape, nin, in);
	if (n != NULL) {
		memset(n->value.data, 0, n->value.nbytes);
	}
	return n;
}

pasco_tnode *
pasci_tape_node_raw(pasco_tape *tp, const pasci_tape_op *op, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, size_t nin, pasco_tnode *const *in)
{
	pasco_tnode *n     = pasci_tape_mem(tp, sizeof(*n));
	int64_t      count = 1;
	bool         over  = false;
	if (n == NULL) {
		return NULL;
	}
	for (int32_t d = 0; d < rank; d++) {
		n->value.shape[d] = shape[d];
		over |= shape[d] > 0 && count > INT64_MAX / shape[d];
		count = over ? 1 : count * shape[d];
	}
	for (int32_t d = 0; over && d < rank; d++) {
		over = shape[d] != 0; /* a 0 dimension: no elements */
	}
	if (over || (uint64_t) count > tape_max() / pasco_dtype_size(dtype)) {
		char s[96];
		return pasci_tape_fail(tp, PASCO_ENOMEM,
		    "%s: a value of %s is past the tape's bound of %zu bytes "
		    "(PASCO_MAX_TAPE_MB sets it)",
		    op->name,
		    pasco_tensor_spec_string(dtype, rank, shape, s, sizeof(s)),
		    tape_max());
	}
	n->value.dtype  = dtype;
	n->value.rank   = rank;
	n->value.count  = count;
	n->value.nbytes = (size_t) count * pasco_dtype_size(dtype);
	n->value.data   = pasci_tape_mem_raw(tp, n->value.nbytes);
	n->op           = op;
	n->nin          = nin;
	if (nin <= 2) {
		n->ins = n->in;
	} else if ((n->ins = pasci_tape_mem(tp, nin * sizeof(*n->ins))) ==
	           NULL) {
		return NULL;
	}
	for (size_t k = 0; k < nin; k++) {
		n->ins[k] = in[k];
		n->needs_grad |= in[k]->needs_grad;
	}
	if (n->value.data == NULL || !append(tp, n)) {
		return NULL;
	}
	return n;
}

/* A watched leaf's gradient is a tensor of its own, handed to the caller
 * without a copy; the others' live in the arena. */
static void *
grad_alloc(pasco_tape *tp, pasco_tnode *n)
{
	const pasco_tensor *v = &n->value;
	if (n->leaf != PASCI_WATCHED) {
		return pasci_tape_mem_raw(tp, v->nbytes);
	}
	if (pasci_tensor_alloc_raw(&n->grad_t, v->dtype, v->rank, v->shape) !=
	    0) {
		pasci_tape_fail(tp, PASCO_ENOMEM,
		    "gradient: out of memory for %s", PASCI_SPEC(n));
		return NULL;
	}
	return n->grad_t->data;
}

void *
pasci_tape_grad_out(pasco_tape *tp, pasco_tnode *n, bool *fresh)
{
	*fresh = false;
	if (!n->needs_grad) {
		return NULL;
	}
	if (n->grad == NULL && (n->grad = grad_alloc(tp, n)) == NULL) {
		return NULL;
	}
	*fresh      = !n->grad_set;
	n->grad_set = true;
	return n->grad;
}

bool
pasci_tape_grad_pass(pasco_tnode *x, pasco_tnode *n)
{
	if (!x->needs_grad || x->grad != NULL || x->leaf != PASCI_NOT_LEAF ||
	    x->value.nbytes != n->value.nbytes) {
		return false;
	}
	x->grad     = n->grad;
	x->grad_set = true;
	return true;
}

void *
pasci_tape_grad_of(pasco_tape *tp, pasco_tnode *n)
{
	bool  fresh;
	void *g = pasci_tape_grad_out(tp, n, &fresh);
	if (g != NULL && fresh) {
		memset(g, 0, n->value.nbytes);
	}
	return g;
}

bool
pasci_tape_training(const pasco_tape *tp)
{
	return tp->training;
}

uint64_t
pasci_tape_seed(const pasco_tape *tp, int64_t index)
{
	return tp->seed ^ ((uint64_t) index * 0x9e3779b97f4a7c15ULL);
}

/* ---- leaves ---- */

static bool
is_float(const pasco_tensor *t)
{
	return t->dtype == PASCO_F32 || t->dtype == PASCO_F64;
}

static pasco_tnode *
leaf(pasco_tape *tp, const char *what, const pasco_tensor *t, pasci_leaf k)
{
	pasco_tnode *n;
	if (tp == NULL || tp->err != PASCO_OK) {
		return NULL;
	}
	if (t == NULL) {
		return pasci_tape_fail(
		    tp, PASCO_EINVAL, "%s: the tensor is NULL", what);
	}
	if (!is_float(t)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: %s: dtype must be f32 or f64", what, PASCI_TSPEC(t));
	}
	if ((n = pasci_tape_mem(tp, sizeof(*n))) == NULL ||
	    !grow(tp, &tp->held, tp->nheld, &tp->capheld, sizeof(t)) ||
	    !append(tp, n)) {
		return NULL;
	}
	tp->held[tp->nheld++] = pasco_tensor_hold((pasco_tensor *) t);
	n->value              = *t;
	n->value.storage      = NULL;
	n->value.refs         = 0;
	n->op                 = &leaf_op;
	n->leaf               = k;
	n->needs_grad         = k != PASCI_CONSTANT;
	return n;
}

pasco_tnode *
pasco_tape_constant(pasco_tape *tp, const pasco_tensor *t)
{
	return leaf(tp, "constant", t, PASCI_CONSTANT);
}

pasco_tnode *
pasco_tape_watch(pasco_tape *tp, const pasco_tensor *t)
{
	return leaf(tp, "watch", t, PASCI_WATCHED);
}

pasco_tnode *
pasco_tape_watch_table(pasco_tape *tp, const pasco_tensor *table)
{
	if (tp != NULL && tp->err == PASCO_OK && table != NULL &&
	    table->rank != 2) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "watch_table: %s: a table has rank 2 [vocab, dim]",
		    PASCI_TSPEC(table));
	}
	return leaf(tp, "watch_table", table, PASCI_TABLE);
}

pasco_tnode *
pasco_tape_watch_keys(
    pasco_tape *tp, const pasco_tensor *keys, const pasco_tensor *rows)
{
	pasco_tnode *n = pasco_tape_watch_rows(tp, keys, rows);
	if (n != NULL) {
		n->keys64 = true;
	}
	return n;
}

pasco_tnode *
pasco_tape_watch_rows(
    pasco_tape *tp, const pasco_tensor *ids, const pasco_tensor *rows)
{
	pasco_tnode *n;
	int64_t     *pairs, count;
	if (tp == NULL || tp->err != PASCO_OK) {
		return NULL;
	}
	if (ids == NULL || rows == NULL) {
		return pasci_tape_fail(
		    tp, PASCO_EINVAL, "watch_rows: ids or rows is NULL");
	}
	count = ids->count;
	if ((ids->dtype != PASCO_I32 && ids->dtype != PASCO_I64) ||
	    ids->rank != 1 || rows->rank != 2 || rows->shape[0] != count) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "watch_rows: ids %s, rows %s: want i32 or i64 ids [n] and "
		    "rows [n, dim]",
		    PASCI_TSPEC(ids), PASCI_TSPEC(rows));
	}
	if ((n = leaf(tp, "watch_rows", rows, PASCI_ROWS)) == NULL ||
	    (pairs = pasci_tape_mem(tp, (size_t) count * 16)) == NULL ||
	    (n->ids = pasci_tape_mem(tp, (size_t) count * 8)) == NULL ||
	    (n->pos = pasci_tape_mem(tp, (size_t) count * 8)) == NULL) {
		return NULL;
	}
	/* (id, row) pairs sorted by id, for the lookups' binary search */
	for (int64_t k = 0; k < count; k++) {
		pairs[2 * k]     = pasci_id_at(ids, k);
		pairs[2 * k + 1] = k;
	}
	qsort(pairs, (size_t) count, 16, pasci_cmp_i64);
	for (int64_t k = 0; k < count; k++) {
		n->ids[k] = pairs[2 * k];
		n->pos[k] = pairs[2 * k + 1];
	}
	n->i[0] = count;
	return n;
}

const pasco_tensor *
pasco_tnode_value(const pasco_tnode *n)
{
	return n == NULL ? NULL : &n->value;
}

/* ---- the backward pass ---- */

typedef struct contrib {
	int64_t     id, seq;
	const void *row;
} contrib;

static int
cmp_contrib(const void *a, const void *b)
{
	const contrib *x = a, *y = b;
	if (x->id != y->id) {
		return (x->id > y->id) - (x->id < y->id);
	}
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The sparse gradient of table source s: its lookups' contributions
 * sorted by id (then by order, so sums are reproducible), repeated ids
 * summed. */
static int
table_grad(pasco_tape *tp, pasco_tnode *s, pasco_tape_grad *g)
{
	pasco_dtype dt  = s->value.dtype;
	int64_t     dim = s->value.shape[1], total = 0, u = 0, seq = 0;
	size_t      es = pasco_dtype_size(dt);
	contrib    *c;
	int         rv;
	for (pasci_sparse_part *p = s->parts; p != NULL; p = p->next) {
		total += p->count;
	}
	if ((c = pasci_tape_mem_raw(tp, (size_t) total * sizeof(*c) + 1)) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	for (pasci_sparse_part *p = s->parts; p != NULL; p = p->next) {
		for (int64_t k = 0; k < p->count; k++, seq++) {
			c[seq] = (contrib){p->ids[k], seq,
			    (const char *) p->rows + (size_t) (k * dim) * es};
		}
	}
	qsort(c, (size_t) total, sizeof(*c), cmp_contrib);
	for (int64_t k = 0; k < total; k++) {
		u += k == 0 || c[k].id != c[k - 1].id;
	}
	if ((rv = pasco_tensor_alloc(&g->ids, PASCO_I64, 1, &u)) != 0 ||
	    (rv = pasco_tensor_alloc(&g->rows, dt, 2, (int64_t[]){u, dim})) !=
	        0) {
		return rv;
	}
	PASCI_TYPED(dt, T, {
		T *rows = g->rows->data;
		for (int64_t k = 0, r = -1; k < total; k++) {
			const T *src = c[k].row;
			if (k == 0 || c[k].id != c[k - 1].id) {
				((int64_t *) g->ids->data)[++r] = c[k].id;
			}
			for (int64_t j = 0; j < dim; j++) {
				rows[r * dim + j] += src[j];
			}
		}
	});
	return PASCO_OK;
}

void *
pasci_tape_rows_grad(pasco_tape *tp, pasco_tnode *s, unsigned char **touched)
{
	const pasco_tensor *v = &s->value;
	if (s->grad == NULL) {
		if (pasci_tensor_alloc_raw(
		        &s->grad_t, v->dtype, v->rank, v->shape) != 0 ||
		    (s->touched = pasci_tape_mem(tp, (size_t) s->i[0] + 1)) ==
		        NULL) {
			pasci_tape_fail(tp, PASCO_ENOMEM,
			    "gradient: out of memory for %s", PASCI_SPEC(s));
			return NULL;
		}
		s->grad = s->grad_t->data;
	}
	*touched = s->touched;
	return s->grad;
}

/* The sparse gradient of rows source s: the rows its lookups touched, in
 * the order of its sorted ids (each id once: a lookup resolves an id to
 * its first row). Every row touched: the gradient buffer itself. */
static int
rows_grad(pasco_tnode *s, pasco_tape_grad *g)
{
	int64_t n = s->i[0], dim = s->value.shape[1], t = 0, r = 0;
	size_t  row = (size_t) dim * pasco_dtype_size(s->value.dtype);
	int     rv;
	for (int64_t k = 0; k < n; k++) {
		t += s->touched[k];
	}
	if ((rv = pasco_tensor_alloc(&g->ids, PASCO_I64, 1, &t)) != 0) {
		return rv;
	}
	if (t == n) {
		g->rows = pasco_tensor_hold(s->grad_t);
	} else if ((rv = pasci_tensor_alloc_raw(&g->rows, s->value.dtype, 2,
	                (int64_t[]){t, dim})) != 0) {
		return rv;
	}
	for (int64_t k = 0; k < n; k++) {
		if (!s->touched[k]) {
			continue;
		}
		((int64_t *) g->ids->data)[r] = s->ids[k];
		if (t != n) {
			memcpy((char *) g->rows->data + (size_t) r * row,
			    (const char *) s->grad + (size_t) k * row, row);
		}
		r++;
	}
	return PASCO_OK;
}

static int
source_grad(pasco_tape *tp, pasco_tnode *s, pasco_tape_grad *g)
{
	if (s->leaf == PASCI_WATCHED) {
		if (s->grad_t != NULL) {
			g->dense = pasco_tensor_hold(s->grad_t);
		}
		return PASCO_OK;
	}
	if (s->leaf == PASCI_ROWS) {
		return s->grad == NULL ? PASCO_OK : rows_grad(s, g);
	}
	return s->parts == NULL ? PASCO_OK : table_grad(tp, s, g);
}

static int
check_sources(
    pasco_tape *tp, pasco_tnode *target, size_t n, pasco_tnode *const *sources)
{
	if (target == NULL || target->tape != tp) {
		pasci_tape_fail(tp, PASCO_EINVAL, "gradient: the target is %s",
		    target == NULL ? "NULL" : "of another tape");
		return PASCO_EINVAL;
	}
	if (target->value.count != 1 || target->leaf == PASCI_TABLE ||
	    target->leaf == PASCI_ROWS) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "gradient: the target %s is not a scalar",
		    PASCI_SPEC(target));
		return PASCO_EINVAL;
	}
	for (size_t k = 0; k < n; k++) {
		pasco_tnode *s = sources[k];
		if (s == NULL || s->tape != tp || s->leaf == PASCI_NOT_LEAF ||
		    s->leaf == PASCI_CONSTANT) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "gradient: source %zu is not a watched leaf of "
			    "this tape",
			    k);
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

int
pasco_tape_gradient(pasco_tape *tp, pasco_tnode *target, size_t n,
    pasco_tnode *const *sources, pasco_tape_grad *grads)
{
	int rv;
	memset(grads, 0, n * sizeof(*grads));
	if (tp == NULL || tp->err != PASCO_OK) {
		return pasco_tape_error(tp);
	}
	if ((rv = check_sources(tp, target, n, sources)) != 0) {
		return rv;
	}
	for (size_t k = 0; k < tp->nnodes; k++) {
		pasco_tnode *node = tp->nodes[k];
		pasco_tensor_release(node->grad_t);
		node->grad_t   = NULL;
		node->grad     = NULL;
		node->grad_set = false;
		node->touched  = NULL;
		node->parts    = NULL;
	}
	if (target->needs_grad) {
		bool  fresh;
		void *g = pasci_tape_grad_out(tp, target, &fresh);
		if (g != NULL) {
			pasci_st(target->value.dtype, g, 0, 1.0);
		}
		for (int64_t k = target->index; k >= 0 && tp->err == 0; k--) {
			pasco_tnode *node = tp->nodes[k];
			if (node->grad != NULL && node->op->backward != NULL) {
				node->op->backward(tp, node);
			}
		}
	}
	for (size_t k = 0; k < n && tp->err == PASCO_OK; k++) {
		if ((rv = source_grad(tp, sources[k], &grads[k])) != 0) {
			pasci_tape_fail(tp, rv, "gradient: out of memory");
		}
	}
	if (tp->err != PASCO_OK) {
		pasco_tape_grad_fini(grads, n);
	}
	return tp->err;
}

void
pasco_tape_grad_fini(pasco_tape_grad *grads, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		pasco_tensor_release(grads[k].dense);
		pasco_tensor_release(grads[k].ids);
		pasco_tensor_release(grads[k].rows);
		grads[k] = (pasco_tape_grad){0};
	}
}
