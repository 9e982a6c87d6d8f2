/*
 * TFRecord writer and reader (see tfrecord.h). The writer buffers records
 * and writes the file with io_uring on close; the reader is a dataset
 * source that loads one file at a time with io_uring (8 reads of 1 MiB in
 * flight) and checks both checksums of every record. A bad length checksum loses the framing, so
 * with skip_corrupt the rest of that file is skipped (counted once); a bad
 * data checksum skips just that record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/util.h"
#include "pasco/tfrecord.h"

/* Shared by the file sources on this thread (see pasco_dataset_last_error). */
_Thread_local char pasci_data_error[512];
#define last_error pasci_data_error

const char *
pasco_tfrecord_last_error(void)
{
	return last_error;
}

const char *
pasco_dataset_last_error(void)
{
	return last_error;
}

struct pasco_tfrecord_writer {
	char  *path;
	char  *buf;
	size_t len, cap;
	bool   oom;
};

int
pasco_tfrecord_writer_open(pasco_tfrecord_writer **out, const char *path)
{
	pasco_tfrecord_writer *w = calloc(1, sizeof(*w));
	*out                     = NULL;
	if (w == NULL || (w->path = pasci_strdup(path)) == NULL) {
		free(w);
		return PASCO_ENOMEM;
	}
	*out = w;
	return PASCO_OK;
}

static void
put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		p[i] = (unsigned char) (v >> (8 * i));
	}
}

static uint64_t
get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--) {
		v = (v << 8) | p[i];
	}
	return v;
}

int
pasco_tfrecord_write(pasco_tfrecord_writer *w, const void *data, size_t len)
{
	unsigned char *p;
	size_t         need = w->len + len + 16;
	if (need > w->cap) {
		size_t cap = w->cap ? w->cap : 1 << 16;
		char  *grown;
		while (cap < need) {
			cap *= 2;
		}
		if ((grown = realloc(w->buf, cap)) == NULL) {
			w->oom = true;
			return PASCO_ENOMEM;
		}
		w->buf = grown;
		w->cap = cap;
	}
	p = (unsigned char *) w->buf + w->len;
	put_le(p, len, 8);
	put_le(p + 8, pasco_crc32c_mask(pasco_crc32c(p, 8)), 4);
	memcpy(p + 12, data, len);
	put_le(p + 12 + len, pasco_crc32c_mask(pasco_crc32c(data, len)), 4);
	w->len += len + 16;
	return PASCO_OK;
}

int
pasco_tfrecord_writer_close(pasco_tfrecord_writer *w)
{
	struct iovec iov = {w->buf, w->len};
	int          rv  = w->oom ? PASCO_ENOMEM
	                          : pasci_file_write(w->path, &iov, 1, 1, last_error,
	                                sizeof(last_error));
	free(w->buf);
	free(w->path);
	free(w);
	return rv;
}

/* The reader's state, behind a generator dataset. */
typedef struct reader {
	char                 **files;
	size_t                 nfiles, cur;
	unsigned char         *buf; /* the current file, whole */
	size_t                 len, off;
	pasco_tfrecord_options opts;
} reader;

static void
reader_close_file(reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = r->off = 0;
	r->cur++;
}

/* A corrupt spot: an error, or (skip_corrupt) counted and passed. */
static int
corrupt(reader *r, const char *what, bool lose_file)
{
	pasci_fmt(last_error, sizeof(last_error), "%s: %s at offset %zu",
	    r->files[r->cur], what, r->off);
	if (!r->opts.skip_corrupt) {
		return PASCO_EPROTO;
	}
	if (r->opts.skipped != NULL) {
		__atomic_add_fetch(r->opts.skipped, 1, __ATOMIC_RELAXED);
	}
	if (lose_file) {
		reader_close_file(r);
	}
	return PASCO_OK;
}

static int
reader_next(void *arg, pasco_value **out)
{
	reader *r = arg;
	for (;;) {
		uint64_t      n;
		pasco_tensor *t;
		int           rv;
		if (r->buf == NULL) {
			void *data;
			if (r->cur >= r->nfiles) {
				return PASCO_EOUTOFRANGE;
			}
			if ((rv = pasci_file_read(r->files[r->cur], &data,
			         &r->len, last_error, sizeof(last_error))) !=
			    0) {
				return rv;
			}
			r->buf = data;
			r->off = 0;
		}
		if (r->off == r->len) {
			reader_close_file(r);
			continue;
		}
		if (r->len - r->off < 12) {
			if ((rv = corrupt(
			         r, "truncated record header", true)) != 0) {
				return rv;
			}
			continue;
		}
		n = get_le(r->buf + r->off, 8);
		if (pasco_crc32c_mask(pasco_crc32c(r->buf + r->off, 8)) !=
		    (uint32_t) get_le(r->buf + r->off + 8, 4)) {
			if ((rv = corrupt(r, "bad length checksum", true)) !=
			    0) {
				return rv;
			}
			continue;
		}
		if (n > r->len - r->off - 12 || r->len - r->off - 12 - n < 4) {
			if ((rv = corrupt(r, "truncated record", true)) != 0) {
				return rv;
			}
			continue;
		}
		if (pasco_crc32c_mask(pasco_crc32c(r->buf + r->off + 12, n)) !=
		    (uint32_t) get_le(r->buf + r->off + 12 + n, 4)) {
			if ((rv = corrupt(r, "bad data checksum", false)) !=
			    0) {
				return rv;
			}
			r->off += 16 + n;
			continue;
		}
		if ((rv = pasco_tensor_from(&t, PASCO_U8, 1,
		         (int64_t[]){(int64_t) n}, r->buf + r->off + 12, n)) !=
		    0) {
			return rv;
		}
		r->off += 16 + n;
		*out = pasco_value_tensor(t);
		return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
	}
}

static void
reader_reset(void *arg)
{
	reader *r = arg;
	free(r->buf);
	r->buf = NULL;
	r->cur = r->len = r->off = 0;
}

static void
reader_free(void *arg)
{
	reader *r = arg;
	for (size_t i = 0; i < r->nfiles; i++) {
		free(r->files[i]);
	}
	free(r->files);
	free(r->buf);
	free(r);
}

int
pasco_dataset_tfrecord(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_tfrecord_options *opts)
{
	reader *r = calloc(1, sizeof(*r));
	int     rv;
	*out = NULL;
	if (r == NULL ||
	    (r->files = calloc(nfiles + 1, sizeof(char *))) == NULL) {
		free(r);
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < nfiles; i++) {
		if ((r->files[i] = pasci_strdup(files[i])) == NULL) {
			r->nfiles = i;
			reader_free(r);
			return PASCO_ENOMEM;
		}
	}
	r->nfiles = nfiles;
	if (opts != NULL) {
		r->opts = *opts;
	}
	if ((rv = pasco_dataset_from_generator(
	         out, reader_next, reader_reset, reader_free, r)) != 0) {
		reader_free(r);
	}
	return rv;
}

int
pasco_dataset_tfrecord_sharded(pasco_dataset **out, const char *const *files,
    size_t nfiles, int32_t worker_index, int32_t num_workers,
    const pasco_tfrecord_options *opts)
{
	const char **mine;
	size_t       n = 0;
	int          rv;
	*out = NULL;
	if (num_workers < 1 || worker_index < 0 ||
	    worker_index >= num_workers) {
		return PASCO_EINVAL;
	}
	if (nfiles < (size_t) num_workers) { /* record-level */
		pasco_dataset *all;
		if ((rv = pasco_dataset_tfrecord(&all, files, nfiles, opts)) !=
		    0) {
			return rv;
		}
		return pasco_dataset_shard(
		    out, all, num_workers, worker_index);
	}
	if ((mine = calloc(nfiles, sizeof(*mine))) == NULL) {
		return PASCO_ENOMEM;
	}
	for (size_t i = (size_t) worker_index; i < nfiles;
	     i += (size_t) num_workers) {
		mine[n++] = files[i]; /* file-level */
	}
	rv = pasco_dataset_tfrecord(out, mine, n, opts);
	free(mine);
	return rv;
}
