/*
 * The memory of one decoded message header (wire_arena.c): protobuf-c's
 * unpack and wire.c's header block take their blocks from it, and it is
 * given back whole when the message is finished. Used by the wire codec
 * only. An arena is used by one thread at a time; it may be given back
 * on another than the one that took it.
 */
#ifndef PASCI_WIRE_ARENA_H
#define PASCI_WIRE_ARENA_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

typedef struct pasci_wire_arena pasci_wire_arena;

/* An empty arena: this thread's kept one, or a new one. NULL: out of
 * memory. */
pasci_wire_arena *pasci_wire_arena_take(void);

/* size bytes (aligned for any type) that live until the arena is given
 * back, or NULL: out of memory. _calloc zeroes them. */
void *pasci_wire_arena_alloc(pasci_wire_arena *a, size_t size);
void *pasci_wire_arena_calloc(pasci_wire_arena *a, size_t size);

/* protobuf-c's allocator over a (its free does nothing: all is freed by
 * pasci_wire_arena_give). Valid until a is given back. */
ProtobufCAllocator *pasci_wire_arena_allocator(pasci_wire_arena *a);

/* Gives a (NULL: nothing) back with everything taken from it: its first
 * block is kept by this thread for its next take, unless it keeps one. */
void pasci_wire_arena_give(pasci_wire_arena *a);

#endif
