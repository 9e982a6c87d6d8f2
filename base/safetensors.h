/*
 * The safetensors format: an 8-byte little-endian header length, a JSON
 * header {name: {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 * "__metadata__": {string: string}}, padded with spaces to 8 bytes, then the
 * tensors' bytes back to back. Readable by numpy and every common
 * framework. Files are written and read through fileio (io_uring).
 */
#ifndef PASCI_SAFETENSORS_H
#define PASCI_SAFETENSORS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "pasco/tensor.h"

/* Writes n named tensors, with metadata (a JSON object of strings, or
 * NULL; not consumed), atomically (write then rename). */
int pasci_safetensors_write(const char *path, size_t n,
    const char *const *names, pasco_tensor *const *tensors,
    const cJSON *metadata, char *err, size_t errlen);

/* The same, to rel below the directory root, never leaving it
 * (pasci_file_write_below: no symbolic link followed, PASCO_EPERM naming
 * one). */
int pasci_safetensors_write_below(int root, const char *root_name,
    const char *rel, size_t n, const char *const *names,
    pasco_tensor *const *tensors, const cJSON *metadata, char *err,
    size_t errlen);

typedef struct pasci_safetensors {
	size_t         n;
	char         **names;
	pasco_tensor **tensors;  /* copies, one reference each */
	cJSON         *metadata; /* owned; NULL when the file has none */
} pasci_safetensors;

/* Reads and checks a file; PASCO_EPROTO with the reason for a corrupt one,
 * PASCO_ENOTFOUND when it is missing. */
int pasci_safetensors_read(
    pasci_safetensors *out, const char *path, char *err, size_t errlen);

/* The same for a file's bytes already in memory (buf is not kept);
 * PASCO_EPROTO with the reason in err (no path). */
int pasci_safetensors_parse(pasci_safetensors *out, const void *buf,
    size_t len, char *err, size_t errlen);

/* The tensor named name, borrowed; NULL if absent. */
const pasco_tensor *pasci_safetensors_find(
    const pasci_safetensors *f, const char *name);

void pasci_safetensors_fini(pasci_safetensors *f);

#endif
