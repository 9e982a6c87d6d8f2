/*
 * File I/O on io_uring (see fileio.h). Each call sets up its own small
 * ring, submits reads or writes at explicit offsets until everything is
 * done (short transfers are resubmitted), then an fsync for writes.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* One read or write of len bytes at off; returns bytes done or -errno. */
static ssize_t
ring_io(struct io_uring *ring, int fd, void *buf, size_t len, off_t off,
    int writing)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	ssize_t              res;

	if (ring == NULL) {
		res = writing ? pwrite(fd, buf, len, off)
		              : pread(fd, buf, len, off);
		return res < 0 ? -errno : res;
	}
	if ((sqe = io_uring_get_sqe(ring)) == NULL) {
		return -EBUSY;
	}
	if (writing) {
		io_uring_prep_write(
		    sqe, fd, buf, (unsigned) len, (uint64_t) off);
	} else {
		io_uring_prep_read(
		    sqe, fd, buf, (unsigned) len, (uint64_t) off);
	}
	if ((res = io_uring_submit(ring)) < 0 ||
	    (res = io_uring_wait_cqe(ring, &cqe)) < 0) {
		return res;
	}
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* All of len bytes, in chunks of at most 1 GiB. */
static int
ring_all(struct io_uring *ring, int fd, char *buf, size_t len, off_t off,
    int writing)
{
	while (len > 0) {
		size_t chunk =
		    len < ((size_t) 1 << 30) ? len : ((size_t) 1 << 30);
		ssize_t n = ring_io(ring, fd, buf, chunk, off, writing);
		if (n < 0) {
			errno = (int) -n;
			return -1;
		}
		if (n == 0) {
			errno =
			    writing ? ENOSPC : EIO; /* no progress: give up */
			return -1;
		}
		buf += n;
		off += n;
		len -= (size_t) n;
	}
	return 0;
}

#define READ_CHUNK ((size_t) 1 << 20) /* bytes per read */
#define READ_DEPTH 8                  /* reads in flight (the ring's size) */

/* Reads len bytes from offset 0 with up to READ_DEPTH chunked reads in
 * flight; a short read is resubmitted for the rest of its chunk. On an
 * error, the reads in flight are reaped before returning (the buffer must
 * outlive them). */
static int
ring_read_all(struct io_uring *ring, int fd, char *buf, size_t len)
{
	struct {
		size_t off, len;
	} slot[READ_DEPTH];
	bool   busy[READ_DEPTH] = {false};
	size_t next             = 0;
	int    inflight = 0, err = 0;

	if (ring == NULL) {
		return ring_all(NULL, fd, buf, len, 0, 0);
	}
	while ((err == 0 && next < len) || inflight > 0) {
		struct io_uring_cqe *cqe;
		int                  rv;
		for (int i = 0; err == 0 && next < len && i < READ_DEPTH;
		     i++) {
			struct io_uring_sqe *sqe;
			if (busy[i] ||
			    (sqe = io_uring_get_sqe(ring)) == NULL) {
				continue;
			}
			slot[i].off = next;
			slot[i].len =
			    len - next < READ_CHUNK ? len - next : READ_CHUNK;
			next += slot[i].len;
			busy[i] = true;
			inflight++;
			io_uring_prep_read(sqe, fd, buf + slot[i].off,
			    (unsigned) slot[i].len, (uint64_t) slot[i].off);
			io_uring_sqe_set_data(sqe, (void *) (uintptr_t) i);
		}
		if ((rv = io_uring_submit_and_wait(ring, 1)) < 0 ||
		    (rv = io_uring_wait_cqe(ring, &cqe)) < 0) {
			/* the ring itself failed: nothing more will complete
			 */
			errno = -rv;
			return -1;
		}
		int     i   = (int) (uintptr_t) io_uring_cqe_get_data(cqe);
		ssize_t res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		if (res <= 0 || (size_t) res > slot[i].len) {
			err = res < 0 ? (int) -res
			              : EIO; /* 0: the file shrank */
		} else if ((size_t) res < slot[i].len) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			slot[i].off += (size_t) res;
			slot[i].len -= (size_t) res;
			if (sqe != NULL && err == 0) {
				io_uring_prep_read(sqe, fd, buf + slot[i].off,
				    (unsigned) slot[i].len,
				    (uint64_t) slot[i].off);
				io_uring_sqe_set_data(
				    sqe, (void *) (uintptr_t) i);
				continue; /* still in flight */
			}
			err = err != 0 ? err : EBUSY;
		}
		busy[i] = false;
		inflight--;
	}
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

static struct io_uring *
ring_open(struct io_uring *ring)
{
	static int warned;
	if (io_uring_queue_init(8, ring, 0) == 0) {
		return ring;
	}
	if (!warned) {
		warned = 1;
		pasci_log(PASCI_LOG_WARN,
		    "io_uring is unavailable here; using "
		    "pread/pwrite");
	}
	return NULL;
}

static int
ring_sync(struct io_uring *ring, int fd)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int                  res;
	if (ring == NULL || (sqe = io_uring_get_sqe(ring)) == NULL) {
		return fsync(fd) == 0 ? 0 : -errno;
	}
	io_uring_prep_fsync(sqe, fd, 0);
	if ((res = io_uring_submit(ring)) < 0 ||
	    (res = io_uring_wait_cqe(ring, &cqe)) < 0) {
		return res;
	}
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Creates a file for writing in the directory dir (a descriptor, or
 * AT_FDCWD for name as a path). atomic: a new file beside name under a
 * name no one else holds (name.tmp.<pid>.<n>.<random>), created with
 * O_EXCL, so nothing left at a temporary name (a symbolic link, a hard
 * link to a file elsewhere) is ever opened, written through or truncated;
 * its name into tmp. Otherwise name itself, never through a symbolic
 * link. -1 with errno on failure. */
static int
create_target(int dir, const char *name, int atomic, char *tmp, size_t tmplen)
{
	static unsigned counter;
	int             flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW;
	if (!atomic) {
		return openat(dir, name, flags | O_TRUNC, 0644);
	}
	for (int attempt = 0; attempt < 16; attempt++) {
		struct timespec now;
		int             fd;
		clock_gettime(CLOCK_REALTIME, &now);
		pasci_fmt(tmp, tmplen, "%s.tmp.%ld.%u.%08lx", name,
		    (long) getpid(),
		    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED),
		    (unsigned long) ((uint64_t) now.tv_nsec * 2654435761u) &
		        0xffffffffUL);
		if ((fd = openat(dir, tmp, flags | O_EXCL, 0644)) >= 0 ||
		    errno != EEXIST) {
			return fd;
		}
	}
	return -1;
}

/* Writes the buffers to name in the directory dir (a descriptor, or
 * AT_FDCWD for name as a path): created, written and renamed relative to
 * dir, so a directory swapped meanwhile for another (or for a symbolic
 * link) changes nothing. shown names the file in messages. */
static int
write_in(int dir, const char *name, const char *shown,
    const struct iovec *iov, int n, int atomic, char *err, size_t errlen)
{
	struct io_uring storage, *ring;
	char            tmp[4200];
	const char     *target = atomic ? tmp : name;
	off_t           off    = 0;
	int             fd, rv = 0;

	if ((fd = create_target(dir, name, atomic, tmp, sizeof(tmp))) < 0) {
		pasci_fmt(err, errlen, "cannot create %s%s%s: %s", shown,
		    atomic ? " as " : "", atomic ? tmp : "", strerror(errno));
		return PASCO_EIO;
	}
	ring = ring_open(&storage);
	for (int i = 0; i < n && rv == 0; i++) {
		rv = ring_all(
		    ring, fd, iov[i].iov_base, iov[i].iov_len, off, 1);
		off += (off_t) iov[i].iov_len;
	}
	if (rv == 0 && (rv = ring_sync(ring, fd)) < 0) {
		errno = -rv;
	}
	if (rv != 0) {
		pasci_fmt(err, errlen, "writing %s (as %s): %s", shown, target,
		    strerror(errno));
	}
	if (ring != NULL) {
		io_uring_queue_exit(ring);
	}
	close(fd);
	if (rv == 0 && atomic && renameat(dir, tmp, dir, name) != 0) {
		pasci_fmt(err, errlen, "renaming %s into place as %s: %s", tmp,
		    shown, strerror(errno));
		rv = -1;
	}
	if (rv != 0 && atomic) {
		unlinkat(dir, tmp, 0); /* ours: created above with O_EXCL */
	}
	return rv == 0 ? PASCO_OK : PASCO_EIO;
}

int
pasci_file_write(const char *path, const struct iovec *iov, int n, int atomic,
    char *err, size_t errlen)
{
	return write_in(AT_FDCWD, path, path, iov, n, atomic, err, errlen);
}

int
pasci_dir_open(const char *path, int *fd, char *err, size_t errlen)
{
	if ((*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		pasci_fmt(err, errlen, "cannot open the directory %s: %s", path,
		    strerror(errno));
		return errno == ENOENT ? PASCO_ENOTFOUND : PASCO_EIO;
	}
	return PASCO_OK;
}

/* The directory name below dir, never through a symbolic link (created
 * when missing): a new descriptor, or -1 with err naming shown (the path
 * so far) and *rv set. */
static int
open_below(int dir, const char *name, const char *shown, int *rv, char *err,
    size_t errlen)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int       fd    = openat(dir, name, flags);
	if (fd < 0 && errno == ENOENT &&
	    (mkdirat(dir, name, 0755) == 0 || errno == EEXIST)) {
		fd = openat(dir, name, flags);
	}
	if (fd >= 0) {
		return fd;
	}
	if (errno == ELOOP || errno == ENOTDIR) {
		struct stat st;
		int         link = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) ==
		                   0 &&
		           S_ISLNK(st.st_mode);
		pasci_fmt(err, errlen,
		    "%s is %s: checkpoint files are written below their root "
		    "through directories only",
		    shown, link ? "a symbolic link" : "not a directory");
		*rv = PASCO_EPERM;
	} else {
		pasci_fmt(err, errlen, "cannot open or create the directory "
		    "%s: %s", shown, strerror(errno));
		*rv = PASCO_EIO;
	}
	return -1;
}

int
pasci_file_write_below(int root, const char *root_name, const char *rel,
    const struct iovec *iov, int n, int atomic, char *err, size_t errlen)
{
	char        shown[4200], part[256];
	const char *p   = rel;
	int         dir = root, rv = PASCO_OK;

	pasci_fmt(shown, sizeof(shown), "%s", root_name);
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t      len   = slash != NULL ? (size_t) (slash - p)
		                                  : strlen(p);
		if (len == 0 || len >= sizeof(part) ||
		    (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.')) {
			pasci_fmt(err, errlen,
			    "'%s' is not a relative path of plain names below "
			    "%s",
			    rel, root_name);
			rv = PASCO_EPERM;
			break;
		}
		memcpy(part, p, len);
		part[len] = 0;
		pasci_fmt(shown + strlen(shown), sizeof(shown) - strlen(shown),
		    "/%s", part);
		if (slash == NULL) {
			rv = write_in(dir, part, shown, iov, n, atomic, err,
			    errlen);
			break;
		}
		int next = open_below(dir, part, shown, &rv, err, errlen);
		if (dir != root) {
			close(dir);
		}
		if ((dir = next) < 0) {
			break;
		}
		p = slash + 1;
	}
	if (dir >= 0 && dir != root) {
		close(dir);
	}
	return rv;
}

int
pasci_file_read(
    const char *path, void **data, size_t *len, char *err, size_t errlen)
{
	struct io_uring storage, *ring;
	struct stat     st;
	int             fd, rv;

	*data = NULL;
	*len  = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) != 0) {
		pasci_fmt(
		    err, errlen, "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
		}
		return errno == ENOENT ? PASCO_ENOTFOUND : PASCO_EIO;
	}
	if ((*data = malloc((size_t) st.st_size + 1)) == NULL) {
		close(fd);
		return PASCO_ENOMEM;
	}
	ring = ring_open(&storage);
	rv   = ring_read_all(ring, fd, *data, (size_t) st.st_size);
	if (rv != 0) {
		pasci_fmt(
		    err, errlen, "reading %s: %s", path, strerror(errno));
		free(*data);
		*data = NULL;
	} else {
		*len = (size_t) st.st_size;
	}
	if (ring != NULL) {
		io_uring_queue_exit(ring);
	}
	close(fd);
	return rv == 0 ? PASCO_OK : PASCO_EIO;
}

/* mkdir that accepts an existing directory, and only a directory (EEXIST
 * alone would accept a file of that name, which mkdir -p refuses). */
static int
make_dir(const char *path)
{
	struct stat st;
	if (mkdir(path, 0755) == 0) {
		return 0;
	}
	if (errno != EEXIST) {
		return -1;
	}
	if (stat(path, &st) != 0) {
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int
pasci_make_dirs(const char *path, char *err, size_t errlen)
{
	char buf[4096];
	pasci_fmt(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			if (make_dir(buf) != 0) {
				pasci_fmt(err, errlen, "cannot create %s: %s",
				    buf, strerror(errno));
				return PASCO_EIO;
			}
			*p = '/';
		}
	}
	if (make_dir(buf) != 0) {
		pasci_fmt(
		    err, errlen, "cannot create %s: %s", buf, strerror(errno));
		return PASCO_EIO;
	}
	return PASCO_OK;
}
