/*
 * TensorBoard event files (see include/pasco/summary.h). Events are
 * tensorflow.Event protos encoded here by hand (only net/ uses generated
 * code), from the field numbers of TensorFlow's public event.proto and
 * summary.proto:
 *
 *   Event   { double wall_time = 1; int64 step = 2;
 *             oneof what { string file_version = 3; Summary summary = 5; } }
 *   Summary { repeated Value value = 1; }
 *   Value   { string tag = 1; oneof value { float simple_value = 2; } }
 *
 * Each record is framed as a TFRecord and written with one write(2) while
 * the writer's mutex is held, so records from several threads never
 * interleave and a crash leaves whole records before the one being
 * written. Flush is an fsync.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "fileio.h"
#include "pasco/summary.h"
#include "pasco/tfrecord.h"
#include "util.h"

#define TAG_MAX 4096
#define FILE_VERSION "brain.Event:2"

struct pasco_summary_writer {
	pthread_mutex_t mu;
	/* Under mu: */
	int  fd;
	bool failed; /* a write failed: the file may end in a torn record */
	/* Set at open, read-only after: */
	char *path;
};

static _Thread_local char summary_error[512];

const char *
pasco_summary_last_error(void)
{
	return summary_error;
}

static int summary_fail(int rv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
summary_fail(int rv, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(summary_error, sizeof(summary_error), fmt, ap);
	va_end(ap);
	pasci_error_note(summary_error);
	pasci_log(PASCI_LOG_WARN, "summary: %s", summary_error);
	return rv;
}

/* Protobuf wire encoding, into a caller's buffer large enough for it. */
static size_t
put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t) v;
	return n;
}

static size_t
put_fixed(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++) {
		p[i] = (uint8_t) (v >> (8 * i));
	}
	return (size_t) bytes;
}

/* A length-delimited field: key, length, bytes. */
static size_t
put_bytes(uint8_t *p, int field, const void *data, size_t len)
{
	size_t n = put_varint(p, (uint64_t) field << 3 | 2);
	n += put_varint(p + n, len);
	memcpy(p + n, data, len);
	return n + len;
}

/* Event header fields: wall_time (fixed64 double) and step (varint; a
 * negative int64 takes ten bytes, as protobuf encodes it). */
static size_t
put_event_head(uint8_t *p, double wall_time, int64_t step)
{
	uint64_t bits;
	size_t   n = 0;
	memcpy(&bits, &wall_time, sizeof(bits));
	p[n++] = 1 << 3 | 1;
	n += put_fixed(p + n, bits, 8);
	if (step != 0) {
		p[n++] = 2 << 3 | 0;
		n += put_varint(p + n, (uint64_t) step);
	}
	return n;
}

/* Frames data as one TFRecord and writes it with one write(2). Called
 * with w->mu held. */
static int
writer_append_locked(pasco_summary_writer *w, const uint8_t *data, size_t len)
{
	uint8_t  head[12], tail[4];
	uint8_t *rec   = malloc(len + 16);
	size_t   total = len + 16, done = 0;
	if (rec == NULL) {
		return summary_fail(PASCO_ENOMEM, "no memory for an event");
	}
	put_fixed(head, len, 8);
	put_fixed(head + 8, pasco_crc32c_mask(pasco_crc32c(head, 8)), 4);
	put_fixed(tail, pasco_crc32c_mask(pasco_crc32c(data, len)), 4);
	memcpy(rec, head, 12);
	memcpy(rec + 12, data, len);
	memcpy(rec + 12 + len, tail, 4);
	while (done < total) {
		ssize_t n = write(w->fd, rec + done, total - done);
		if (n < 0 && errno == EINTR) {
			continue;
		}
		if (n <= 0) {
			int e     = n < 0 ? errno : ENOSPC;
			w->failed = true;
			free(rec);
			return summary_fail(
			    PASCO_EIO, "writing %s: %s", w->path, strerror(e));
		}
		done += (size_t) n;
	}
	free(rec);
	return PASCO_OK;
}

static int
writer_append(pasco_summary_writer *w, const uint8_t *data, size_t len)
{
	int rv;
	pthread_mutex_lock(&w->mu);
	if (w->failed) {
		rv = summary_fail(PASCO_EIO,
		    "%s: an earlier write failed; the writer is closed to "
		    "new events",
		    w->path);
	} else {
		rv = writer_append_locked(w, data, len);
	}
	pthread_mutex_unlock(&w->mu);
	return rv;
}

static double
wall_now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double) tv.tv_sec + (double) tv.tv_usec / 1e6;
}

/* DIR/events.out.tfevents.<seconds>.<host>.<pid>.<n>.v2, as TensorFlow's
 * EventsWriter with the suffix its SummaryFileWriter and
 * tf.summary.create_file_writer add. */
static char *
event_file_name(const char *dir, long long seconds)
{
	static atomic_llong counter;
	char                host[256] = "localhost";
	char               *path;
	size_t              len;
	long long           n = atomic_fetch_add(&counter, 1);
	if (gethostname(host, sizeof(host)) != 0) {
		strcpy(host, "localhost");
	}
	host[sizeof(host) - 1] = '\0';
	len                    = strlen(dir) + strlen(host) + 128;
	if ((path = malloc(len)) != NULL) {
		snprintf(path, len,
		    "%s/events.out.tfevents.%010lld.%s.%ld.%lld.v2", dir,
		    seconds, host, (long) getpid(), n);
	}
	return path;
}

static int
writer_first_event(pasco_summary_writer *w, long long seconds)
{
	uint8_t buf[64];
	size_t  n = put_event_head(buf, (double) seconds, 0);
	n += put_bytes(buf + n, 3, FILE_VERSION, strlen(FILE_VERSION));
	int rv = writer_append(w, buf, n);
	return rv != PASCO_OK ? rv : pasco_summary_flush(w);
}

int
pasco_summary_writer_open(pasco_summary_writer **out, const char *dir)
{
	pasco_summary_writer *w;
	char                  err[256];
	long long             seconds = (long long) wall_now();
	int                   rv;

	*out = NULL;
	if (dir == NULL || dir[0] == '\0') {
		return summary_fail(PASCO_EINVAL,
		    "pasco_summary_writer_open: no directory given");
	}
	if ((rv = pasci_make_dirs(dir, err, sizeof(err))) != PASCO_OK) {
		return summary_fail(
		    rv, "creating event directory %s: %s", dir, err);
	}
	if ((w = pasci_calloc(1, sizeof(*w))) == NULL ||
	    (w->path = event_file_name(dir, seconds)) == NULL) {
		free(w);
		return summary_fail(PASCO_ENOMEM, "no memory for a writer");
	}
	w->fd = open(
	    w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rv = summary_fail(PASCO_EIO, "creating event file %s: %s",
		    w->path, strerror(errno));
		goto fail_open;
	}
	pthread_mutex_init(&w->mu, NULL);
	if ((rv = writer_first_event(w, seconds)) != PASCO_OK) {
		goto fail_first;
	}
	*out = w;
	return PASCO_OK;

fail_first:
	pthread_mutex_destroy(&w->mu);
	close(w->fd);
	unlink(w->path);
fail_open:
	free(w->path);
	free(w);
	return rv;
}

int
pasco_summary_scalar(
    pasco_summary_writer *w, const char *tag, int64_t step, double value)
{
	uint8_t *buf, *val, *sum;
	size_t   taglen, nval, nsum, n;
	float    f = (float) value;
	uint32_t fbits;
	int      rv;

	if (w == NULL || tag == NULL || (taglen = strlen(tag)) == 0 ||
	    taglen >= TAG_MAX) {
		return summary_fail(PASCO_EINVAL, "pasco_summary_scalar: %s",
		    w == NULL     ? "no writer"
		    : tag == NULL ? "no tag"
		                  : "a tag must have 1 to 4095 bytes");
	}
	/* Value, then Summary around it, then the Event: each bounded by
	 * taglen + 32 bytes more than the last. */
	if ((buf = malloc(3 * (taglen + 32) + 32)) == NULL) {
		return summary_fail(PASCO_ENOMEM, "no memory for an event");
	}
	val = buf;
	memcpy(&fbits, &f, sizeof(fbits));
	nval        = put_bytes(val, 1, tag, taglen);
	val[nval++] = 2 << 3 | 5;
	nval += put_fixed(val + nval, fbits, 4);
	sum         = val + nval;
	nsum        = put_bytes(sum, 1, val, nval);
	uint8_t *ev = sum + nsum;
	n           = put_event_head(ev, wall_now(), step);
	n += put_bytes(ev + n, 5, sum, nsum);
	rv = writer_append(w, ev, n);
	free(buf);
	return rv;
}

int
pasco_summary_flush(pasco_summary_writer *w)
{
	int rv = PASCO_OK;
	if (w == NULL) {
		return summary_fail(
		    PASCO_EINVAL, "pasco_summary_flush: no writer");
	}
	pthread_mutex_lock(&w->mu);
	if (fsync(w->fd) != 0) {
		rv = summary_fail(
		    PASCO_EIO, "syncing %s: %s", w->path, strerror(errno));
	}
	pthread_mutex_unlock(&w->mu);
	return rv;
}

void
pasco_summary_writer_close(pasco_summary_writer *w)
{
	if (w == NULL) {
		return;
	}
	(void) pasco_summary_flush(w);
	close(w->fd);
	pthread_mutex_destroy(&w->mu);
	free(w->path);
	free(w);
}

const char *
pasco_summary_writer_path(const pasco_summary_writer *w)
{
	return w != NULL ? w->path : NULL;
}
