/*
 * Whole-file reads (chunked, several reads in flight) and writes on
 * io_uring (one ring per call, so per thread, never shared), falling back to
 * pread/pwrite where io_uring is unavailable (some container sandboxes forbid
 * it).
 */
#ifndef PASCI_FILEIO_H
#define PASCI_FILEIO_H

#include <stddef.h>
#include <sys/uio.h>

/* Writes the buffers to path (created or truncated, never through a
 * symbolic link) and fsyncs it. When atomic, writes a new file beside it
 * under a unique temporary name (path.tmp.<pid>.<n>.<random>, created with
 * O_EXCL | O_NOFOLLOW: whatever someone left at a temporary name, a link
 * included, is never opened) then renames it over path, so readers see
 * the old file or the whole new one; a failed write removes its temporary
 * file. PASCO_EIO with errno-based detail in err. Thread-safe. */
int pasci_file_write(const char *path, const struct iovec *iov, int n,
    int atomic, char *err, size_t errlen);

/* Reads the whole file into *data (malloc'd, owned by the caller). */
int pasci_file_read(
    const char *path, void **data, size_t *len, char *err, size_t errlen);

/* mkdir -p. */
int pasci_make_dirs(const char *path, char *err, size_t errlen);

#endif
