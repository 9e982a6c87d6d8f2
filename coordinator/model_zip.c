/*
 * Zip archives of saved models (model_zip.h), as PKWARE's APPNOTE lays
 * them out: for each entry a local header, its name and its bytes; then
 * the central directory (a header per entry, pointing at its local one)
 * and the end-of-central-directory record. Entries are written stored
 * (method 0) with their CRC-32 (zlib's crc32); reading finds the end
 * record from the archive's end, walks the central directory to the
 * entry and checks everything it reads against the archive's length
 * before it touches it. Stateless: every function is thread-safe.
 */
#include "model_zip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <zlib.h>

#include "fileio.h"
#include "pasco/error.h"
#include "util.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define LOCAL_LEN 30
#define CENTRAL_LEN 46
#define END_LEN 22
#define ZIP_MAX 0xffffffffu

static void
put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

static uint32_t
get16(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8;
}

static uint32_t
get32(const uint8_t *p)
{
	return get16(p) | get16(p + 2) << 16;
}

/* MS-DOS time and date of now (UTC), as zip headers keep them. */
static void
dos_now(uint32_t *tm, uint32_t *date)
{
	time_t    now = time(NULL);
	struct tm t;
	gmtime_r(&now, &t);
	*tm   = (uint32_t) (t.tm_hour << 11 | t.tm_min << 5 | t.tm_sec / 2);
	*date = (uint32_t) ((t.tm_year - 80) << 9 | (t.tm_mon + 1) << 5 |
	                    t.tm_mday);
}

/* The fields a local header and a central one share, from "version
 * needed" on (26 bytes). */
static void
put_common(uint8_t *p, const pasci_zip_entry *e, uint32_t crc)
{
	uint32_t tm, date;
	dos_now(&tm, &date);
	put16(p, 20);    /* version needed: 2.0 */
	put16(p + 2, 0); /* flags */
	put16(p + 4, 0); /* method: stored */
	put16(p + 6, tm);
	put16(p + 8, date);
	put32(p + 10, crc);
	put32(p + 14, (uint32_t) e->len); /* compressed */
	put32(p + 18, (uint32_t) e->len);
	put16(p + 22, (uint32_t) strlen(e->name));
	put16(p + 24, 0); /* extra field */
}

int
pasci_zip_write(const char *path, const pasci_zip_entry *e, size_t n,
    char *err, size_t errlen)
{
	uint8_t      *heads = pasci_calloc(n + 1, LOCAL_LEN + CENTRAL_LEN);
	struct iovec *iov   = pasci_calloc(3 * n + 2, sizeof(*iov));
	uint8_t       end[END_LEN] = {0};
	size_t        off = 0, cd_len = 0, k = 0;
	int           rv = PASCO_OK;
	if (heads == NULL || iov == NULL) {
		free(heads);
		free(iov);
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < n && rv == 0; i++) {
		uint8_t *loc = heads + i * LOCAL_LEN;
		uint8_t *cen = heads + n * LOCAL_LEN + i * CENTRAL_LEN;
		uLong    crc = crc32(0L, Z_NULL, 0);
		size_t   nl  = strlen(e[i].name);
		for (size_t at = 0; at < e[i].len; at += 1u << 30) {
			size_t part = e[i].len - at < (1u << 30)
			                  ? e[i].len - at
			                  : (1u << 30);
			crc         = crc32(
			            crc, (const Bytef *) e[i].data + at, (uInt) part);
		}
		if (e[i].len >= ZIP_MAX ||
		    off + LOCAL_LEN + nl + e[i].len >= ZIP_MAX) {
			pasci_fmt(err, errlen,
			    "%s: entry %s (%zu bytes) takes the archive past "
			    "the 4 GiB a zip without zip64 holds (save the "
			    "weights alone: they have no such bound)",
			    path, e[i].name, e[i].len);
			rv = PASCO_EINVAL;
			break;
		}
		put32(loc, SIG_LOCAL);
		put_common(loc + 4, &e[i], (uint32_t) crc);
		put32(cen, SIG_CENTRAL);
		put16(cen + 4, 3u << 8 | 20); /* made by: Unix, 2.0 */
		put_common(cen + 6, &e[i], (uint32_t) crc);
		put32(
		    cen + 38, 0100644u << 16); /* a regular file, rw-r--r-- */
		put32(cen + 42, (uint32_t) off);
		iov[k++] = (struct iovec){loc, LOCAL_LEN};
		iov[k++] = (struct iovec){(void *) e[i].name, nl};
		iov[k++] = (struct iovec){(void *) e[i].data, e[i].len};
		off += LOCAL_LEN + nl + e[i].len;
		cd_len += CENTRAL_LEN + nl;
	}
	if (rv == 0) {
		/* the central directory: headers and names, a copy each */
		uint8_t *cd = malloc(cd_len + 1);
		size_t   at = 0;
		for (size_t i = 0; cd != NULL && i < n; i++) {
			size_t nl = strlen(e[i].name);
			memcpy(cd + at,
			    heads + n * LOCAL_LEN + i * CENTRAL_LEN,
			    CENTRAL_LEN);
			memcpy(cd + at + CENTRAL_LEN, e[i].name, nl);
			at += CENTRAL_LEN + nl;
		}
		put32(end, SIG_END);
		put16(end + 8, (uint32_t) n);
		put16(end + 10, (uint32_t) n);
		put32(end + 12, (uint32_t) cd_len);
		put32(end + 16, (uint32_t) off);
		iov[k++] = (struct iovec){cd, cd_len};
		iov[k++] = (struct iovec){end, END_LEN};
		rv       = cd == NULL ? PASCO_ENOMEM
		                      : pasci_file_write(
		                            path, iov, (int) k, 1, err, errlen);
		free(cd);
	}
	free(heads);
	free(iov);
	return rv;
}

static int
damaged(char *err, size_t errlen, const char *what, const char *why,
    const char *name)
{
	pasci_fmt(err, errlen,
	    "%s is damaged or not a zip Pasco reads: %s%s%s", what, why,
	    name != NULL ? " " : "", name != NULL ? name : "");
	return PASCO_EPROTO;
}

/* The offset of the end-of-central-directory record, or -1. */
static long long
find_end(const uint8_t *b, size_t len)
{
	size_t lo = len > END_LEN + 65535 ? len - END_LEN - 65535 : 0;
	for (size_t at = len >= END_LEN ? len - END_LEN + 1 : 0; at-- > lo;) {
		if (get32(b + at) == SIG_END &&
		    at + END_LEN + get16(b + at + 20) == len) {
			return (long long) at;
		}
	}
	return -1;
}

/* Inflates the raw deflate stream in (inlen) into out (outlen exactly). */
static int
inflate_raw(const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen)
{
	z_stream z = {0};
	int      rv;
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK) {
		return PASCO_ENOMEM;
	}
	z.next_in   = (Bytef *) in;
	z.avail_in  = (uInt) inlen;
	z.next_out  = out;
	z.avail_out = (uInt) outlen;
	rv          = inflate(&z, Z_FINISH);
	inflateEnd(&z);
	return rv == Z_STREAM_END && z.total_out == outlen ? PASCO_OK
	                                                   : PASCO_EPROTO;
}

/* Copies (or inflates) the entry whose central header is at cen. */
static int
entry_bytes(const uint8_t *b, size_t len, const uint8_t *cen, const char *what,
    const char *name, void **out, size_t *outlen, char *err, size_t errlen)
{
	uint32_t method = get16(cen + 10), crc = get32(cen + 16);
	size_t   csize = get32(cen + 20), usize = get32(cen + 24);
	size_t   loc = get32(cen + 42), data;
	uint8_t *buf;
	int      rv = PASCO_OK;
	if ((get16(cen + 8) & 1) != 0 || (method != 0 && method != 8)) {
		return damaged(err, errlen, what,
		    "encrypted, or compressed by a method other than stored "
		    "or deflated:",
		    name);
	}
	if (csize == ZIP_MAX || usize == ZIP_MAX || loc == ZIP_MAX) {
		return damaged(err, errlen, what, "zip64 entry", name);
	}
	if (loc + LOCAL_LEN > len || get32(b + loc) != SIG_LOCAL ||
	    (data = loc + LOCAL_LEN + get16(b + loc + 26) +
	            get16(b + loc + 28)) +
	            csize >
	        len ||
	    (method == 0 && csize != usize)) {
		return damaged(err, errlen, what,
		    "an entry's local header or bytes lie past its end:",
		    name);
	}
	if (method == 8 && usize > csize * 1032 + 64) {
		/* past deflate's best ratio: a header that lies */
		return damaged(err, errlen, what,
		    "an entry claims more bytes than its compressed ones can "
		    "hold:",
		    name);
	}
	if ((buf = malloc(usize + 1)) == NULL) {
		return PASCO_ENOMEM;
	}
	if (method == 0) {
		memcpy(buf, b + data, usize);
	} else {
		rv = inflate_raw(b + data, csize, buf, usize);
	}
	if (rv == 0 && crc32(crc32(0L, Z_NULL, 0), buf, (uInt) usize) != crc) {
		rv = PASCO_EPROTO;
	}
	if (rv != 0) {
		free(buf);
		return rv == PASCO_ENOMEM
		           ? rv
		           : damaged(err, errlen, what,
		                 "its bytes do not match their CRC-32:", name);
	}
	buf[usize] = 0; /* a JSON entry reads as a string */
	*out       = buf;
	*outlen    = usize;
	return PASCO_OK;
}

int
pasci_zip_entry_read(const void *buf, size_t len, const char *what,
    const char *name, void **out, size_t *outlen, char *err, size_t errlen)
{
	const uint8_t *b   = buf;
	long long      end = find_end(b, len);
	size_t         at, count, nl = strlen(name);
	*out    = NULL;
	*outlen = 0;
	if (end < 0) {
		return damaged(err, errlen, what,
		    "no end-of-central-directory record", NULL);
	}
	at    = get32(b + end + 16);
	count = get16(b + end + 10);
	if (at == ZIP_MAX || count == 0xffff) {
		return damaged(err, errlen, what, "a zip64 archive", NULL);
	}
	for (size_t i = 0; i < count; i++) {
		size_t enl, extra, comment;
		if (at + CENTRAL_LEN > (size_t) end ||
		    get32(b + at) != SIG_CENTRAL) {
			return damaged(err, errlen, what,
			    "its central directory is cut short", NULL);
		}
		enl     = get16(b + at + 28);
		extra   = get16(b + at + 30);
		comment = get16(b + at + 32);
		if (at + CENTRAL_LEN + enl > (size_t) end) {
			return damaged(err, errlen, what,
			    "its central directory is cut short", NULL);
		}
		if (enl == nl && memcmp(b + at + CENTRAL_LEN, name, nl) == 0) {
			return entry_bytes(b, len, b + at, what, name, out,
			    outlen, err, errlen);
		}
		at += CENTRAL_LEN + enl + extra + comment;
	}
	pasci_fmt(err, errlen, "%s has no entry %s", what, name);
	return PASCO_ENOTFOUND;
}
