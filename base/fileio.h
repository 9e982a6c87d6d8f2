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

/* Opens the directory at path (symbolic links followed) as a root for
 * pasci_file_write_below; *fd is the caller's to close. PASCO_ENOTFOUND
 * or PASCO_EIO with err naming path. Thread-safe. */
int pasci_dir_open(const char *path, int *fd, char *err, size_t errlen);

/* pasci_file_write for rel below the directory root (a descriptor from
 * pasci_dir_open; root_name names it in messages), never leaving it: rel
 * is plain names joined by '/' (none empty, "." or ".."), each directory
 * on the way is opened from the one before with O_NOFOLLOW | O_DIRECTORY
 * (a missing one created with mkdirat), and the file is created, written
 * and renamed (renameat) relative to its directory's descriptor, so a
 * directory swapped for a symbolic link, before or during the write, is
 * never followed. PASCO_EPERM for a bad rel or a component that is a
 * symbolic link or not a directory (err names it), PASCO_EIO otherwise.
 * Thread-safe. */
int pasci_file_write_below(int root, const char *root_name, const char *rel,
    const struct iovec *iov, int n, int atomic, char *err, size_t errlen);

/* Reads the whole file into *data (malloc'd, owned by the caller). */
int pasci_file_read(
    const char *path, void **data, size_t *len, char *err, size_t errlen);

/* mkdir -p. */
int pasci_make_dirs(const char *path, char *err, size_t errlen);

#endif
