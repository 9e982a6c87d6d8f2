/*
 * The memory of a decoded message header (wire.h, pasci_wire_arena): a
 * header unpacked by protobuf-c is a tree of small blocks (the message,
 * each repeated field's array, each string, each nested message), and
 * the header block wire.c builds over it. Taken one malloc at a time,
 * each decode made a dozen or more calls into glibc's allocator and as
 * many frees, and several threads decoding at once (a window's closures
 * reading their replies) met on its arena locks. Here they come from one
 * arena: bump allocation in a block, more blocks chained when it is full,
 * all given back at once.
 *
 * Each thread keeps the first block of the last arena it gave back and
 * takes it for its next decode, so a thread that decodes and finishes its
 * messages (a ps connection, a step's replies) calls malloc for none of
 * them once warm. An arena may be given back on another thread than the
 * one that took it; the block then stays with that thread, or is freed.
 * A thread's kept block is freed when the thread ends.
 */
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "wire_arena.h"

#define BLOCK_BYTES 8192 /* a first block: most headers fit */
#define ALIGN alignof(max_align_t)

typedef struct chunk {
	struct chunk *next;
	size_t        used, cap; /* bytes of data */
	alignas(max_align_t) unsigned char data[];
} chunk;

struct pasci_wire_arena {
	ProtobufCAllocator alloc; /* allocator_data: this arena */
	chunk             *more;  /* chained blocks, newest first */
	chunk              first; /* BLOCK_BYTES of data follow */
};

static _Thread_local pasci_wire_arena *kept;
static pthread_key_t                   kept_key;
static pthread_once_t                  kept_once = PTHREAD_ONCE_INIT;

static void
kept_free(void *a)
{
	free(a);
	kept = NULL;
}

static void
kept_key_make(void)
{
	(void) pthread_key_create(&kept_key, kept_free);
}

/* size bytes from c, or NULL when it has not that many left. */
static void *
chunk_take(chunk *c, size_t size)
{
	size_t at = (c->used + ALIGN - 1) & ~(ALIGN - 1);
	if (at > c->cap || size > c->cap - at) {
		return NULL;
	}
	c->used = at + size;
	return c->data + at;
}

void *
pasci_wire_arena_alloc(pasci_wire_arena *a, size_t size)
{
	void  *p = chunk_take(&a->first, size);
	chunk *c;
	size_t cap;
	if (p == NULL && a->more != NULL) {
		p = chunk_take(a->more, size);
	}
	if (p != NULL) {
		return p;
	}
	cap = size > BLOCK_BYTES ? size : BLOCK_BYTES;
	if ((c = malloc(sizeof(*c) + cap)) == NULL) {
		return NULL;
	}
	*c      = (chunk){.next = a->more, .cap = cap};
	a->more = c;
	return chunk_take(c, size);
}

void *
pasci_wire_arena_calloc(pasci_wire_arena *a, size_t size)
{
	void *p = pasci_wire_arena_alloc(a, size);
	if (p != NULL) {
		memset(p, 0, size);
	}
	return p;
}

static void *
pb_alloc(void *arena, size_t size)
{
	return pasci_wire_arena_alloc(arena, size);
}

static void
pb_free(void *arena, void *p)
{
	(void) arena; /* all at once, in pasci_wire_arena_give */
	(void) p;
}

pasci_wire_arena *
pasci_wire_arena_take(void)
{
	pasci_wire_arena *a = kept;
	if (a != NULL) {
		kept = NULL;
		(void) pthread_setspecific(kept_key, NULL);
	} else if ((a = malloc(sizeof(*a) + BLOCK_BYTES)) == NULL) {
		return NULL;
	}
	a->alloc = (ProtobufCAllocator){
	    .alloc = pb_alloc, .free = pb_free, .allocator_data = a};
	a->more  = NULL;
	a->first = (chunk){.cap = BLOCK_BYTES};
	return a;
}

ProtobufCAllocator *
pasci_wire_arena_allocator(pasci_wire_arena *a)
{
	return &a->alloc;
}

void
pasci_wire_arena_give(pasci_wire_arena *a)
{
	if (a == NULL) {
		return;
	}
	while (a->more != NULL) {
		chunk *c = a->more;
		a->more  = c->next;
		free(c);
	}
	if (kept == NULL) {
		(void) pthread_once(&kept_once, kept_key_make);
		if (pthread_setspecific(kept_key, a) == 0) {
			kept = a;
			return;
		}
	}
	free(a);
}
