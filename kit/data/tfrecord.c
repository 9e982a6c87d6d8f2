/*
 * TFRecord writer and reader (see tfrecord.h). The writer buffers records
 * and writes the file with io_uring on close; the reader is a dataset
 * source that loads one file at a time with io_uring (8 reads of 1 MiB in
 * flight) and checks both checksums of every record. A bad length checksum
 * or a truncated record loses the framing, so with skip_corrupt the rest
 * of that file is skipped (counted once); a bad data checksum skips just
 * that record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dataset_impl.h"
#include "fileio.h"
#include "pasco/tfrecord.h"
#include "util.h"

/* The thread's data error, shared with the other sources (see
 * kit/data/dataset_impl.h). */
const char *
pasco_tfrecord_last_error(void)
{
	return pasci_data_error;
}

struct pasco_tfrecord_writer {
	char  *path;
	char  *buf;
	size_t len, cap;
	bool   oom, gzip;
};

/* gzip-compresses len bytes of data into *out (malloc'd). */
static int
gzip_bytes(const void *data, size_t len, void **out, size_t *outlen)
{
	z_stream z   = {0};
	size_t   cap = len + len / 100 + 64;
	int      rv;
	*out = NULL;
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS,
	        8, Z_DEFAULT_STRATEGY) != Z_OK) {
		return PASCO_ENOMEM;
	}
	cap = deflateBound(&z, (uLong) len);
	if ((*out = malloc(cap)) == NULL) {
		deflateEnd(&z);
		return PASCO_ENOMEM;
	}
	z.next_in   = (Bytef *) data;
	z.avail_in  = (uInt) len;
	z.next_out  = *out;
	z.avail_out = (uInt) cap;
	rv          = deflate(&z, Z_FINISH);
	*outlen     = z.total_out;
	deflateEnd(&z);
	if (rv != Z_STREAM_END) {
		free(*out);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	return PASCO_OK;
}

/* Inflates a gzip file's bytes (every member, as gzip -d does) into *out
 * (malloc'd). */
static int
gunzip_bytes(const char *path, const unsigned char *data, size_t len,
    unsigned char **out, size_t *outlen)
{
	z_stream       z   = {0};
	size_t         cap = len * 4 + 4096, n = 0;
	unsigned char *buf = malloc(cap);
	int            zr  = Z_OK;
	if (buf == NULL || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return PASCO_ENOMEM;
	}
	z.next_in  = (Bytef *) data;
	z.avail_in = (uInt) len;
	while (zr == Z_OK || (zr == Z_STREAM_END && z.avail_in > 0)) {
		if (zr == Z_STREAM_END) { /* another member follows */
			inflateReset(&z);
		}
		if (n == cap) {
			unsigned char *grown = realloc(buf, cap * 2);
			if (grown == NULL) {
				break;
			}
			buf = grown;
			cap *= 2;
		}
		z.next_out  = buf + n;
		z.avail_out = (uInt) (cap - n);
		zr          = inflate(&z, Z_NO_FLUSH);
		n           = cap - z.avail_out;
		if (zr == Z_BUF_ERROR && z.avail_out > 0) {
			break; /* input ended inside a member */
		}
		if (zr == Z_BUF_ERROR) {
			zr = Z_OK; /* output full: grow and go on */
		}
	}
	if (zr != Z_STREAM_END || z.avail_in > 0) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "%s: not a whole gzip file (%s at byte %zu)", path,
		    z.msg != NULL ? z.msg : "truncated",
		    len - (size_t) z.avail_in);
		inflateEnd(&z);
		free(buf);
		return PASCO_EPROTO;
	}
	inflateEnd(&z);
	*out    = buf;
	*outlen = n;
	return PASCO_OK;
}

int
pasco_tfrecord_writer_open(pasco_tfrecord_writer **out, const char *path)
{
	pasco_tfrecord_writer *w = pasci_calloc(1, sizeof(*w));
	*out                     = NULL;
	if (w == NULL || (w->path = pasci_strdup(path)) == NULL) {
		free(w);
		return PASCO_ENOMEM;
	}
	*out = w;
	return PASCO_OK;
}

int
pasco_tfrecord_writer_open_gzip(pasco_tfrecord_writer **out, const char *path)
{
	int rv = pasco_tfrecord_writer_open(out, path);
	if (rv == 0) {
		(*out)->gzip = true;
	}
	return rv;
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
	struct iovec iov    = {w->buf, w->len};
	void        *packed = NULL;
	int          rv     = w->oom ? PASCO_ENOMEM : PASCO_OK;
	if (rv == 0 && w->gzip &&
	    (rv = gzip_bytes(w->buf, w->len, &packed, &iov.iov_len)) == 0) {
		iov.iov_base = packed;
	}
	if (rv == 0) {
		rv = pasci_file_write(w->path, &iov, 1, 1, pasci_data_error,
		    sizeof(pasci_data_error));
		if (rv != 0) {
			pasci_error_note(pasci_data_error);
		}
	}
	free(packed);
	pasco_tfrecord_writer_discard(w);
	return rv;
}

void
pasco_tfrecord_writer_discard(pasco_tfrecord_writer *w)
{
	if (w != NULL) {
		free(w->buf);
		free(w->path);
		free(w);
	}
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
	pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
	    "%s: %s at offset %zu", r->files[r->cur], what, r->off);
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
			         &r->len, pasci_data_error,
			         sizeof(pasci_data_error))) != 0) {
				pasci_error_note(pasci_data_error);
				return rv;
			}
			if (r->opts.gzip) {
				unsigned char *plain;
				size_t         plain_len;
				rv = gunzip_bytes(r->files[r->cur], data,
				    r->len, &plain, &plain_len);
				free(data);
				if (rv != 0) {
					return rv;
				}
				data   = plain;
				r->len = plain_len;
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
	reader *r = pasci_calloc(1, sizeof(*r));
	int     rv;
	*out = NULL;
	if (r == NULL ||
	    (r->files = pasci_calloc(nfiles + 1, sizeof(char *))) == NULL) {
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
	if ((mine = pasci_calloc(nfiles, sizeof(*mine))) == NULL) {
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
