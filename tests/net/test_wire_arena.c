/*
 * The memory of decoded messages (net/wire_arena.c, net/bufcache.c): a
 * warm thread decodes and finishes a message with few calls into malloc,
 * and takes the frame buffer it freed last for its next frame (this program
 * counts them by standing in for malloc, calloc and realloc, each handing on
 * to glibc's); a header bigger than the arena's first block decodes whole; a
 * message decoded on one thread may be finished on another; a header
 * that does not parse gives its arena back.
 */
#include "helpers.h"

#include <nng/nng.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bufcache.h"
#include "variable_impl.h"
#include "wire.h"

TestSuite(wire_arena, .timeout = 30);

static _Thread_local long allocs; /* this thread's calls */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* the sanitizer's allocator is the one to use: calls are not counted */
#define COUNTS_MALLOC false
#else
#define COUNTS_MALLOC true
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *
malloc(size_t n)
{
	allocs++;
	return __libc_malloc(n);
}

void *
calloc(size_t n, size_t size)
{
	allocs++;
	return __libc_calloc(n, size);
}

void *
realloc(void *p, size_t n)
{
	allocs++;
	return __libc_realloc(p, n);
}
#endif

/* A RUN request as a step's reads send it: a function name, a tensor,
 * a variable of 2 shards and a resource. */
static nng_msg *
request(const char *json)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	int64_t            shape[] = {4};
	pasco_tensor      *t       = test_scalar(PASCO_F32, 2);
	pasco_variable    *var;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	b.hdr.name = "train_step";
	b.hdr.json = json;
	pasci_wire_add_arg_tensor(&b, t);
	PASCO_PASS(pasci_variable_new(&var, "w", PASCO_F32, 1, shape, 1000));
	PASCO_PASS(pasci_variable_add_shard(var, "w/part_0", 1, 0, 3, NULL));
	PASCO_PASS(pasci_variable_add_shard(var, "w/part_1", 0, 3, 1, NULL));
	pasci_variable_add_arg(&b, var);
	pasci_wire_add_arg_resource(&b, 77);
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	pasco_variable_free(var);
	pasco_tensor_release(t);
	return msg;
}

static void
check(const pasci_wire_msg *m)
{
	cr_assert_str_eq(m->hdr->name, "train_step");
	cr_assert_eq(m->hdr->nargs, 3);
	cr_assert_str_eq(m->hdr->args[1].variable.shards[1].name, "w/part_1");
	cr_assert_eq(m->hdr->args[2].resource, 77);
	cr_assert_eq(pasco_tensor_get(m->tensors[0], 0), 2.0);
}

Test(wire_arena, a_warm_decode_calls_malloc_for_its_tensors_only)
{
	pasci_wire_msg m;
	char           err[256];
	long           least = 1000;
	if (!COUNTS_MALLOC) {
		cr_skip_test("a sanitizer's allocator: calls not counted");
	}
	for (int i = 0; i < 5; i++) {
		nng_msg *msg = request(NULL);
		long     before;
		before = allocs;
		PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
		check(&m);
		pasci_wire_msg_fini(&m);
		least = allocs - before < least ? allocs - before : least;
	}
	/* the storage over the body, the tensor list, the tensor's view:
	 * protobuf-c's tree (the header, 3 args, a variable, its spec and
	 * 2 shards, their arrays and strings) and the header block come
	 * from the thread's arena */
	cr_assert_leq(least, 4, "%ld mallocs to decode and finish", least);
}

Test(wire_arena, a_header_bigger_than_a_block_decodes_whole)
{
	pasci_wire_msg m;
	char           err[256];
	char          *json = malloc(40001);
	memset(json, 'j', 40000);
	json[40000] = 0;
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(
		    pasci_wire_decode(&m, request(json), err, sizeof(err)));
		check(&m);
		cr_assert_eq(strlen(m.hdr->json), 40000);
		cr_assert_eq(m.hdr->json[39999], 'j');
		pasci_wire_msg_fini(&m);
	}
	free(json);
}

static void *
finish(void *m)
{
	check(m);
	pasci_wire_msg_fini(m);
	return NULL;
}

Test(wire_arena, a_message_may_be_finished_on_another_thread)
{
	pasci_wire_msg m[8];
	char           err[256];
	for (int i = 0; i < 8; i++) {
		pthread_t t;
		PASCO_PASS(
		    pasci_wire_decode(&m[i], request(NULL), err, sizeof(err)));
		cr_assert_eq(pthread_create(&t, NULL, finish, &m[i]), 0);
		cr_assert_eq(pthread_join(t, NULL), 0);
	}
}

Test(wire_arena, a_header_that_does_not_parse_gives_its_arena_back)
{
	pasci_wire_msg m;
	char           err[256];
	nng_msg       *msg = request(NULL);
	/* the header's length word says more than the prefix holds */
	uint8_t *body = nng_msg_body(msg);
	body[8]       = 0x00;
	body[9]       = 0x00;
	body[10]      = 0x00;
	body[11]      = 0x03; /* 3 bytes: a cut header */
	PASCO_FAIL(pasci_wire_decode(&m, msg, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "does not parse") != NULL, "%s", err);
	cr_assert_null(m.hdr);
	PASCO_PASS(pasci_wire_decode(&m, request(NULL), err, sizeof(err)));
	check(&m);
	pasci_wire_msg_fini(&m);
}

/* Frees a frame buffer on this thread. */
static void *
free_here(void *buf)
{
	pasci_bufcache_free(buf);
	return NULL;
}

Test(wire_arena, a_threads_next_frame_buffer_is_the_one_it_freed)
{
	void     *buf;
	long      before;
	pthread_t t;
	if (!COUNTS_MALLOC) {
		cr_skip_test("a sanitizer's allocator: calls not counted");
	}
	buf = pasci_bufcache_alloc(800000); /* an MLP step's read reply */
	pasci_bufcache_free(buf);
	before = allocs;
	for (int i = 0; i < 10; i++) {
		buf = pasci_bufcache_alloc(i % 2 ? 800000 : 100000);
		cr_assert_not_null(buf);
		memset(buf, i, 100000);
		pasci_bufcache_free(buf);
	}
	cr_assert_eq(
	    allocs - before, 0, "%ld mallocs for 10 frames", allocs - before);
	/* one freed on another thread stays with that thread: this one
	 * allocates again, and frees what it has back into its slot */
	buf = pasci_bufcache_alloc(800000);
	cr_assert_eq(pthread_create(&t, NULL, free_here, buf), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	before = allocs;
	buf    = pasci_bufcache_alloc(800000);
	cr_assert_eq(allocs - before, 1);
	pasci_bufcache_free(buf);
	/* smaller than 64 KB or 1 MB and more: not kept per thread */
	buf = pasci_bufcache_alloc(1000);
	pasci_bufcache_free(buf);
	before = allocs;
	pasci_bufcache_free(pasci_bufcache_alloc(1000));
	cr_assert_eq(allocs - before, 1);
}
