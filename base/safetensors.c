/*
 * safetensors writer and reader (see safetensors.h). The reader checks
 * every entry (dtype, shape, offsets inside the data, sizes matching) so a
 * corrupt file is an error naming the problem, never a crash.
 */
#include "safetensors.h"

#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "tensor_impl.h"
#include "util.h"

static const char *st_dtypes[] = {[PASCO_F32] = "F32",
    [PASCO_F64]                               = "F64",
    [PASCO_I32]                               = "I32",
    [PASCO_I64]                               = "I64",
    [PASCO_U8]                                = "U8"};

static pasco_dtype
dtype_of(const char *s)
{
	for (int d = PASCO_F32; d <= PASCO_U8; d++) {
		if (strcmp(s, st_dtypes[d]) == 0) {
			return (pasco_dtype) d;
		}
	}
	return (pasco_dtype) 0;
}

static cJSON *
header_json(size_t n, const char *const *names, pasco_tensor *const *tensors,
    const cJSON *metadata)
{
	cJSON *h   = cJSON_CreateObject();
	size_t off = 0;
	if (metadata != NULL) {
		cJSON_AddItemToObject(
		    h, "__metadata__", cJSON_Duplicate(metadata, 1));
	}
	for (size_t i = 0; h != NULL && i < n; i++) {
		cJSON *e = cJSON_AddObjectToObject(h, names[i]);
		cJSON *shape, *offs;
		if (e == NULL) {
			cJSON_Delete(h);
			return NULL;
		}
		cJSON_AddStringToObject(
		    e, "dtype", st_dtypes[tensors[i]->dtype]);
		shape = cJSON_AddArrayToObject(e, "shape");
		for (int32_t d = 0; d < tensors[i]->rank; d++) {
			cJSON_AddItemToArray(shape,
			    cJSON_CreateNumber((double) tensors[i]->shape[d]));
		}
		offs = cJSON_AddArrayToObject(e, "data_offsets");
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double) off));
		off += tensors[i]->nbytes;
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double) off));
	}
	return h;
}

/* The file's bytes as iovecs, then written to path, below root when
 * root_name is not NULL (pasci_file_write_below), else as a path. */
static int
st_write(int root, const char *root_name, const char *path, size_t n,
    const char *const *names, pasco_tensor *const *tensors,
    const cJSON *metadata, char *err, size_t errlen)
{
	cJSON        *h    = header_json(n, names, tensors, metadata);
	char         *text = h != NULL ? cJSON_PrintUnformatted(h) : NULL;
	struct iovec *iov  = pasci_calloc(n + 2, sizeof(*iov));
	unsigned char prefix[8];
	char         *padded = NULL;
	size_t        len, plen;
	int           rv = PASCO_ENOMEM;

	if (text == NULL || iov == NULL) {
		goto out;
	}
	len  = strlen(text);
	plen = (len + 7) & ~(size_t) 7;
	if ((padded = malloc(plen)) == NULL) {
		goto out;
	}
	memcpy(padded, text, len);
	memset(padded + len, ' ', plen - len);
	for (int i = 0; i < 8; i++) {
		prefix[i] = (unsigned char) (plen >> (8 * i));
	}
	iov[0] = (struct iovec){prefix, 8};
	iov[1] = (struct iovec){padded, plen};
	for (size_t i = 0; i < n; i++) {
		iov[i + 2] =
		    (struct iovec){tensors[i]->data, tensors[i]->nbytes};
	}
	rv = root_name != NULL
	         ? pasci_file_write_below(
	               root, root_name, path, iov, (int) n + 2, 1, err, errlen)
	         : pasci_file_write(path, iov, (int) n + 2, 1, err, errlen);
out:
	free(padded);
	free(iov);
	free(text);
	cJSON_Delete(h);
	return rv;
}

int
pasci_safetensors_write(const char *path, size_t n, const char *const *names,
    pasco_tensor *const *tensors, const cJSON *metadata, char *err,
    size_t errlen)
{
	return st_write(
	    -1, NULL, path, n, names, tensors, metadata, err, errlen);
}

int
pasci_safetensors_write_below(int root, const char *root_name, const char *rel,
    size_t n, const char *const *names, pasco_tensor *const *tensors,
    const cJSON *metadata, char *err, size_t errlen)
{
	return st_write(
	    root, root_name, rel, n, names, tensors, metadata, err, errlen);
}

/* A shape entry as a dimension, -1 (invalid) unless a whole number in
 * range: casting a double beyond int64_t is undefined. */
static int64_t
dim_of(const cJSON *d)
{
	double v = cJSON_IsNumber(d) ? d->valuedouble : -1;
	if (v < 0 || v >= 0x1p62 || v != (double) (int64_t) v) {
		return -1;
	}
	return (int64_t) v;
}

/* One header entry into a tensor copied out of data. */
static int
read_entry(const cJSON *e, const unsigned char *data, size_t dlen,
    pasco_tensor **out, char *err, size_t errlen)
{
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
	const cJSON *offs =
	    cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	int64_t      shape[PASCO_MAX_RANK];
	int32_t      rank = 0;
	int64_t      count;
	size_t       nbytes;
	double       b, f;
	const cJSON *d;

	if (!cJSON_IsString(dt) || dtype_of(dt->valuestring) == 0 ||
	    !cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > PASCO_MAX_RANK ||
	    !cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2) {
		pasci_fmt(err, errlen,
		    "entry '%s' lacks a known dtype, a shape or "
		    "two data offsets",
		    e->string);
		return PASCO_EPROTO;
	}
	cJSON_ArrayForEach(d, sh)
	{
		shape[rank++] = dim_of(d);
	}
	b = cJSON_GetArrayItem(offs, 0)->valuedouble;
	f = cJSON_GetArrayItem(offs, 1)->valuedouble;
	/* sizes are checked against the data before allocating: a corrupt
	 * shape must not ask for petabytes */
	if (pasci_tensor_check_spec(dtype_of(dt->valuestring), rank, shape,
	        &count, &nbytes) != 0 ||
	    b < 0 || f < b || f > (double) dlen ||
	    (size_t) (f - b) != nbytes ||
	    pasco_tensor_alloc(out, dtype_of(dt->valuestring), rank, shape) !=
	        0) {
		*out = NULL;
		pasci_fmt(err, errlen,
		    "entry '%s' has an invalid shape or offsets "
		    "[%.0f, %.0f) for %zu bytes of data",
		    e->string, b, f, dlen);
		return PASCO_EPROTO;
	}
	memcpy((*out)->data, data + (size_t) b, (*out)->nbytes);
	return PASCO_OK;
}

static int
parse(pasci_safetensors *out, const unsigned char *buf, size_t len, char *err,
    size_t errlen)
{
	uint64_t     hlen = 0;
	cJSON       *h    = NULL;
	const cJSON *e;
	int          rv = PASCO_OK;

	for (int i = 7; i >= 0 && len >= 8; i--) {
		hlen = (hlen << 8) | buf[i];
	}
	if (len < 8 || hlen > len - 8 ||
	    (h = cJSON_ParseWithLength(
	         (const char *) buf + 8, (size_t) hlen)) == NULL ||
	    !cJSON_IsObject(h)) {
		cJSON_Delete(h); /* JSON that is not an object is parsed */
		pasci_fmt(err, errlen, "not a safetensors file (bad header)");
		return PASCO_EPROTO;
	}
	out->names =
	    pasci_calloc((size_t) cJSON_GetArraySize(h) + 1, sizeof(char *));
	out->tensors = pasci_calloc(
	    (size_t) cJSON_GetArraySize(h) + 1, sizeof(pasco_tensor *));
	if (out->names == NULL || out->tensors == NULL) {
		cJSON_Delete(h);
		return PASCO_ENOMEM;
	}
	cJSON_ArrayForEach(e, h)
	{
		if (strcmp(e->string, "__metadata__") == 0) {
			/* a repeated key: the last one counts, as in
			 * Python's json */
			cJSON_Delete(out->metadata);
			out->metadata = cJSON_Duplicate(e, 1);
			continue;
		}
		rv = read_entry(e, buf + 8 + hlen, len - 8 - (size_t) hlen,
		    &out->tensors[out->n], err, errlen);
		if (rv != 0) {
			break;
		}
		out->names[out->n++] = pasci_strdup(e->string);
	}
	cJSON_Delete(h);
	return rv;
}

int
pasci_safetensors_read(
    pasci_safetensors *out, const char *path, char *err, size_t errlen)
{
	void  *buf;
	size_t len;
	char   why[512] = "";
	int    rv;

	memset(out, 0, sizeof(*out));
	if ((rv = pasci_file_read(path, &buf, &len, err, errlen)) != 0) {
		return rv;
	}
	if ((rv = pasci_safetensors_parse(out, buf, len, why, sizeof(why))) !=
	    0) {
		pasci_fmt(err, errlen, "%s: %s", path, why);
	}
	free(buf);
	return rv;
}

int
pasci_safetensors_parse(pasci_safetensors *out, const void *buf, size_t len,
    char *err, size_t errlen)
{
	int rv;
	memset(out, 0, sizeof(*out));
	if ((rv = parse(out, buf, len, err, errlen)) != 0) {
		pasci_safetensors_fini(out);
	}
	return rv;
}

const pasco_tensor *
pasci_safetensors_find(const pasci_safetensors *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++) {
		if (strcmp(f->names[i], name) == 0) {
			return f->tensors[i];
		}
	}
	return NULL;
}

void
pasci_safetensors_fini(pasci_safetensors *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->names[i]);
		pasco_tensor_release(f->tensors[i]);
	}
	free(f->names);
	free(f->tensors);
	cJSON_Delete(f->metadata);
	memset(f, 0, sizeof(*f));
}
