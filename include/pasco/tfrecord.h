/*
 * TFRecord files, as TensorFlow writes them: each record is a little-endian
 * u64 length, the masked CRC-32C of those 8 bytes, the data, and the masked
 * CRC-32C of the data. Writers and readers go through io_uring.
 */
#ifndef PASCO_TFRECORD_H
#define PASCO_TFRECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "error.h"

/* CRC-32C (Castagnoli) of data, and TensorFlow's mask of a CRC:
 * ((crc >> 15) | (crc << 17)) + 0xa282ead8. Thread-safe. */
uint32_t pasco_crc32c(const void *data, size_t len);
uint32_t pasco_crc32c_mask(uint32_t crc);

/* The CRC-32C of what crc covered followed by data (crc 0: none yet), so a
 * long stream is checked piece by piece:
 * pasco_crc32c_extend(pasco_crc32c(a, n), b, m) == CRC of a then b. */
uint32_t pasco_crc32c_extend(uint32_t crc, const void *data, size_t len);

typedef struct pasco_tfrecord_writer pasco_tfrecord_writer;

/* Creates (truncates) path. Records are buffered and written with
 * io_uring; the file appears whole at path on close (written to
 * a new temporary file beside it, then renamed). */
int pasco_tfrecord_writer_open(pasco_tfrecord_writer **out, const char *path);

/* The same, and the file is gzip-compressed as a whole (TensorFlow's
 * TFRecordWriter with compression_type "GZIP"). */
int pasco_tfrecord_writer_open_gzip(
    pasco_tfrecord_writer **out, const char *path);

/* Appends one record. */
int pasco_tfrecord_write(
    pasco_tfrecord_writer *w, const void *data, size_t len);

/* Writes, fsyncs, renames into place and frees. PASCO_EIO on failure (the
 * writer is freed either way). */
int pasco_tfrecord_writer_close(pasco_tfrecord_writer *w);

/* Frees w without writing: nothing appears at its path, and a file
 * already there is left as it was (for a writer whose records turned out
 * incomplete). NULL is a no-op. */
void pasco_tfrecord_writer_discard(pasco_tfrecord_writer *w);

typedef struct pasco_tfrecord_options {
	/* Skip records whose checksums do not match, instead of failing. */
	bool skip_corrupt;
	/* When not NULL, incremented once per skipped record. */
	int64_t *skipped;
	/* The files are gzip-compressed (TensorFlow's compression_type "GZIP";
	 * several concatenated members are read as one stream). A file that
	 * does not inflate is PASCO_EPROTO naming it. */
	bool gzip;
} pasco_tfrecord_options;

/* The records of files (in order) as elements: u8 tensors of each
 * record's bytes. A corrupt record (bad length or data checksum, or a
 * truncated file) ends iteration with PASCO_EPROTO and a message naming
 * the file and offset (pasco_tfrecord_last_error), unless skip_corrupt.
 * opts may be NULL. */
int pasco_dataset_tfrecord(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_tfrecord_options *opts);

/* The files of a dataset split over workers as seed 002 describes: with
 * nfiles >= num_workers, worker i reads files i, i + M, ... (file-level);
 * with fewer files than workers, every worker reads every file and keeps
 * records i, i + M, ... (record-level). */
int pasco_dataset_tfrecord_sharded(pasco_dataset **out,
    const char *const *files, size_t nfiles, int32_t worker_index,
    int32_t num_workers, const pasco_tfrecord_options *opts);

/* The message of the last TFRecord error on this thread ("" if none). */
const char *pasco_tfrecord_last_error(void);

#endif
