/*
 * Helpers shared by the fuzz targets (fuzz/fuzz_*.c) and the regression
 * replay (tests/fuzz/test_regressions.c): the input format of the handler
 * targets, a temporary file for the readers that take paths, and an
 * invariant check that aborts with the reason. Header-only: each target is
 * one program.
 */
#ifndef PASCO_FUZZ_UTIL_H
#define PASCO_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The targets' entry points, one per fuzz_<name>.c: what
 * LLVMFuzzerTestOneInput calls, and what the regression replay calls
 * (built with PASCO_FUZZ_NO_MAIN). Always return 0. */
int fuzz_wire_one(const uint8_t *data, size_t size);
int fuzz_ps_handler_one(const uint8_t *data, size_t size);
int fuzz_worker_handler_one(const uint8_t *data, size_t size);
int fuzz_tfrecord_one(const uint8_t *data, size_t size);
int fuzz_example_one(const uint8_t *data, size_t size);
int fuzz_csv_one(const uint8_t *data, size_t size);
int fuzz_cluster_one(const uint8_t *data, size_t size);
int fuzz_safetensors_one(const uint8_t *data, size_t size);
int fuzz_bulk_frame_one(const uint8_t *data, size_t size);
int fuzz_model_config_one(const uint8_t *data, size_t size);
int fuzz_graph_step_one(const uint8_t *data, size_t size);

/* A broken invariant is a finding: abort so libFuzzer saves the input. */
#define FUZZ_CHECK(cond)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: invariant broken: %s\n",      \
			    __FILE__, __LINE__, #cond);                       \
			abort();                                              \
		}                                                             \
	} while (0)

/* The handler targets read a sequence of messages, each a 4-byte
 * big-endian length and that many bytes of message body, so that one
 * input can create a variable and then use it. A short tail is one last
 * message of what remains. Returns the next message's body and length and
 * advances *pos; false at the end. */
static inline bool
fuzz_next_message(const uint8_t *data, size_t size, size_t *pos,
    const uint8_t **body, size_t *len)
{
	size_t n;
	if (*pos + 4 > size) {
		return false;
	}
	n = ((size_t) data[*pos] << 24) | ((size_t) data[*pos + 1] << 16) |
	    ((size_t) data[*pos + 2] << 8) | data[*pos + 3];
	*pos += 4;
	if (n > size - *pos) {
		n = size - *pos;
	}
	*body = data + *pos;
	*len  = n;
	*pos += n;
	return true;
}

/* The path of this process's temporary input file. */
static inline const char *
fuzz_temp_path(void)
{
	static char path[256];
	if (path[0] == 0) {
		const char *dir = getenv("TMPDIR");
		snprintf(path, sizeof(path), "%s/pasco-fuzz-%d",
		    dir != NULL && dir[0] != 0 ? dir : "/tmp", (int) getpid());
	}
	return path;
}

/* Removes the temporary file (registered at exit by its first write). */
static inline void
fuzz_remove_temp(void)
{
	unlink(fuzz_temp_path());
}

/* A file of this process's, rewritten with each input; its path. NULL
 * when it cannot be written (then the input is skipped). */
static inline const char *
fuzz_write_temp(const uint8_t *data, size_t size)
{
	static bool registered;
	const char *path = fuzz_temp_path();
	int         fd;
	if (!registered) {
		registered = true;
		atexit(fuzz_remove_temp);
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) {
		return NULL;
	}
	for (size_t off = 0; off < size;) {
		ssize_t k = write(fd, data + off, size - off);
		if (k <= 0) {
			close(fd);
			return NULL;
		}
		off += (size_t) k;
	}
	close(fd);
	return path;
}

#endif
