/*
 * What the bulk tests share (test_bulk.c, test_bulk_local.c,
 * test_bulk_async.c): a bulk server's handler that answers with its
 * request's tensors doubled, a count of this process's open descriptors,
 * and one of its mappings, for the shared-memory regions of local links.
 * Header-only: each test is one program.
 */
#ifndef PASCO_TEST_BULK_H
#define PASCO_TEST_BULK_H

#include "helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bulk.h"
#include "tensor_impl.h"

static int doubled; /* requests double_it answered */

/* Adds the request's f32 tensors, doubled, to b. */
static inline void
add_doubled(const pasci_wire_msg *req, pasci_wire_builder *b)
{
	for (size_t i = 0; i < req->ntensors; i++) {
		const pasco_tensor *in = req->tensors[i];
		pasco_tensor       *t;
		PASCO_PASS(pasci_tensor_alloc_raw(
		    &t, in->dtype, in->rank, in->shape));
		for (int64_t k = 0; k < t->count; k++) {
			((float *) t->data)[k] =
			    2 * ((const float *) in->data)[k];
		}
		pasci_wire_add_tensor(b, t, NULL);
		pasco_tensor_release(t);
	}
}

/* Returns the request's f32 tensors doubled, or sleeps 300 ms first for
 * method VAR_ASSIGN (a handler slower than a deadline). */
static inline nng_msg *
double_it(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	(void) arg;
	__atomic_add_fetch(&doubled, 1, __ATOMIC_SEQ_CST);
	if (req->hdr->method == PASCI_METHOD_VAR_ASSIGN) {
		usleep(300 * 1000);
	}
	add_doubled(req, b);
	return NULL;
}

/* This process's open file descriptors. */
static inline int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int  n = 0;
	cr_assert_not_null(d);
	while (readdir(d) != NULL) {
		n++;
	}
	closedir(d);
	return n;
}

/* Mappings of this process whose line holds what ("/memfd:pasco-bulk":
 * the regions of local links, both ends' when both are here). */
static inline int
mappings_of(const char *what)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char  line[512];
	int   n = 0;
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		n += strstr(line, what) != NULL;
	}
	fclose(f);
	return n;
}

#endif
