/*
 * tf.train.Example parsing and encoding through the generated schema
 * (schemas/example.proto), and the parsing dataset transform. Pure
 * functions; the transform owns a copy of its specs.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "example.pb-c.h"
#include "pasco/example.h"
#include "pasco/hash.h"
#include "util.h"
#include "value_impl.h"

static const char *
kind_name(Pasco__Wire__Feature__KindCase k)
{
	return k == PASCO__WIRE__FEATURE__KIND_INT64_LIST   ? "an int64_list"
	       : k == PASCO__WIRE__FEATURE__KIND_FLOAT_LIST ? "a float_list"
	       : k == PASCO__WIRE__FEATURE__KIND_BYTES_LIST ? "a bytes_list"
	                                                    : "empty";
}

static const Pasco__Wire__Feature *
find_feature(const Pasco__Wire__Example *ex, const char *name)
{
	if (ex->features == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < ex->features->n_feature; i++) {
		if (strcmp(ex->features->feature[i]->key, name) == 0) {
			return ex->features->feature[i]->value;
		}
	}
	return NULL;
}

/* The feature kind and the dtype a spec's type reads and makes. */
static Pasco__Wire__Feature__KindCase
spec_kind(const pasco_feature_spec *sp, pasco_dtype *dt)
{
	switch (sp->type) {
	case PASCO_FEATURE_INT64:
		*dt = PASCO_I64;
		return PASCO__WIRE__FEATURE__KIND_INT64_LIST;
	case PASCO_FEATURE_FLOAT:
		*dt = PASCO_F32;
		return PASCO__WIRE__FEATURE__KIND_FLOAT_LIST;
	case PASCO_FEATURE_HASHED:
		*dt = PASCO_I64;
		return PASCO__WIRE__FEATURE__KIND_BYTES_LIST;
	default:
		*dt = PASCO_U8;
		return PASCO__WIRE__FEATURE__KIND_BYTES_LIST;
	}
}

/* num_buckets is for HASHED specs, and not negative. */
static int
check_buckets(const pasco_feature_spec *sp, char *err, size_t errlen)
{
	if (sp->num_buckets < 0 ||
	    (sp->num_buckets != 0 && sp->type != PASCO_FEATURE_HASHED)) {
		pasci_fmt(err, errlen,
		    "feature '%s': num_buckets %lld; want 0 (full keys) or, "
		    "for a HASHED feature, > 0",
		    sp->name, (long long) sp->num_buckets);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* The byte strings of a HASHED feature as i64 [n] keys or buckets. */
static int
hash_values(const Pasco__Wire__BytesList *b, const pasco_feature_spec *sp,
    pasco_tensor **out)
{
	int64_t *k;
	int      rv = pasco_tensor_alloc(
	         out, PASCO_I64, 1, (int64_t[]){(int64_t) b->n_value});
	if (rv != 0) {
		return rv;
	}
	k = (*out)->data;
	for (size_t i = 0; i < b->n_value; i++) {
		k[i] = sp->num_buckets > 0
		           ? pasco_hash_bucket(b->value[i].data,
		                 b->value[i].len, sp->num_buckets)
		           : pasco_hash_key(b->value[i].data, b->value[i].len);
	}
	return PASCO_OK;
}

/* A feature the record lacks: its default, or empty, or an error. */
static int
missing_feature(const pasco_feature_spec *sp, pasco_dtype dt,
    pasco_tensor **out, char *err, size_t errlen)
{
	size_t n;
	int    rv;
	if (sp->length > 0 && !sp->has_default) {
		pasci_fmt(err, errlen,
		    "feature '%s' is missing and has no default", sp->name);
		return PASCO_EINVAL;
	}
	n  = sp->type == PASCO_FEATURE_BYTES ? 0 : (size_t) sp->length;
	rv = pasco_tensor_alloc(out, dt, 1, (int64_t[]){(int64_t) n});
	for (size_t i = 0; rv == 0 && i < n; i++) {
		pasco_tensor_set(*out, (int64_t) i, sp->default_value);
	}
	return rv;
}

/* One feature into a tensor, by its spec. */
static int
parse_feature(const Pasco__Wire__Feature *f, const pasco_feature_spec *sp,
    pasco_tensor **out, char *err, size_t errlen)
{
	pasco_dtype                    dt;
	Pasco__Wire__Feature__KindCase want = spec_kind(sp, &dt);
	size_t                         n;

	if (check_buckets(sp, err, errlen) != 0) {
		return PASCO_EINVAL;
	}
	if (f == NULL || f->kind_case == PASCO__WIRE__FEATURE__KIND__NOT_SET) {
		return missing_feature(sp, dt, out, err, errlen);
	}
	if (f->kind_case != want) {
		pasci_fmt(err, errlen, "feature '%s' is %s; the spec wants %s",
		    sp->name, kind_name(f->kind_case), kind_name(want));
		return PASCO_EINVAL;
	}
	if (sp->type == PASCO_FEATURE_BYTES) {
		if (f->bytes_list->n_value != 1) {
			pasci_fmt(err, errlen,
			    "feature '%s' has %zu byte strings; one "
			    "is supported",
			    sp->name, f->bytes_list->n_value);
			return PASCO_EINVAL;
		}
		return pasco_tensor_from(out, PASCO_U8, 1,
		    (int64_t[]){(int64_t) f->bytes_list->value[0].len},
		    f->bytes_list->value[0].data, f->bytes_list->value[0].len);
	}
	n = sp->type == PASCO_FEATURE_INT64   ? f->int64_list->n_value
	    : sp->type == PASCO_FEATURE_FLOAT ? f->float_list->n_value
	                                      : f->bytes_list->n_value;
	if (sp->length > 0 && n != (size_t) sp->length) {
		pasci_fmt(err, errlen,
		    "feature '%s' has %zu values; the spec wants "
		    "%lld",
		    sp->name, n, (long long) sp->length);
		return PASCO_EINVAL;
	}
	if (sp->type == PASCO_FEATURE_HASHED) {
		return hash_values(f->bytes_list, sp, out);
	}
	return pasco_tensor_from(out, dt, 1, (int64_t[]){(int64_t) n},
	    sp->type == PASCO_FEATURE_INT64 ? (void *) f->int64_list->value
	                                    : (void *) f->float_list->value,
	    n * pasco_dtype_size(dt));
}

int
pasco_example_parse(const void *data, size_t len,
    const pasco_feature_spec *specs, size_t nspecs, pasco_value **out,
    char *err, size_t errlen)
{
	Pasco__Wire__Example *ex;
	pasco_value         **items;
	const char          **keys;
	int                   rv = PASCO_OK;

	*out = NULL;
	if ((ex = pasco__wire__example__unpack(NULL, len, data)) == NULL) {
		pasci_fmt(err, errlen,
		    "not a tf.train.Example (%zu bytes that do "
		    "not parse)",
		    len);
		return PASCO_EPROTO;
	}
	items = pasci_calloc(nspecs + 1, sizeof(*items));
	keys  = pasci_calloc(nspecs + 1, sizeof(*keys));
	for (size_t i = 0;
	     items != NULL && keys != NULL && i < nspecs && rv == 0; i++) {
		pasco_tensor *t;
		keys[i] = specs[i].name;
		rv = parse_feature(find_feature(ex, specs[i].name), &specs[i],
		    &t, err, errlen);
		items[i] = rv == 0 ? pasco_value_tensor(t) : NULL;
	}
	if (items == NULL || keys == NULL) {
		rv = PASCO_ENOMEM;
	} else if (rv != 0) {
		for (size_t i = 0; i < nspecs; i++) {
			pasco_value_free(items[i]);
		}
	} else if ((*out = pasci_value_dict_of(nspecs, keys, items)) == NULL) {
		rv = PASCO_ENOMEM;
	}
	free(items);
	free(keys);
	pasco__wire__example__free_unpacked(ex, NULL);
	return rv;
}

/* Storage for one encoded feature. */
typedef struct enc_feature {
	Pasco__Wire__Features__FeatureEntry entry;
	Pasco__Wire__Feature                feature;
	Pasco__Wire__Int64List              ints;
	Pasco__Wire__FloatList              floats;
	Pasco__Wire__BytesList              bytes;
	ProtobufCBinaryData                 blob;
	void                               *converted; /* malloc'd copy */
} enc_feature;

static int
encode_feature(enc_feature *e, const char *key, const pasco_tensor *t)
{
	pasco__wire__features__feature_entry__init(&e->entry);
	pasco__wire__feature__init(&e->feature);
	e->entry.key   = (char *) key;
	e->entry.value = &e->feature;
	if (t->dtype == PASCO_I64 || t->dtype == PASCO_I32) {
		pasco__wire__int64_list__init(&e->ints);
		e->ints.n_value = (size_t) t->count;
		if (t->dtype == PASCO_I64) {
			e->ints.value = t->data;
		} else if ((e->converted = malloc(
		                8 * (size_t) t->count + 1)) != NULL) {
			for (int64_t i = 0; i < t->count; i++) {
				((int64_t *) e->converted)[i] =
				    ((int32_t *) t->data)[i];
			}
			e->ints.value = e->converted;
		} else {
			return PASCO_ENOMEM;
		}
		e->feature.kind_case  = PASCO__WIRE__FEATURE__KIND_INT64_LIST;
		e->feature.int64_list = &e->ints;
	} else if (t->dtype == PASCO_F32 || t->dtype == PASCO_F64) {
		pasco__wire__float_list__init(&e->floats);
		e->floats.n_value = (size_t) t->count;
		if (t->dtype == PASCO_F32) {
			e->floats.value = t->data;
		} else if ((e->converted = malloc(
		                4 * (size_t) t->count + 1)) != NULL) {
			for (int64_t i = 0; i < t->count; i++) {
				((float *) e->converted)[i] =
				    (float) ((double *) t->data)[i];
			}
			e->floats.value = e->converted;
		} else {
			return PASCO_ENOMEM;
		}
		e->feature.kind_case  = PASCO__WIRE__FEATURE__KIND_FLOAT_LIST;
		e->feature.float_list = &e->floats;
	} else {
		pasco__wire__bytes_list__init(&e->bytes);
		e->blob          = (ProtobufCBinaryData){t->nbytes, t->data};
		e->bytes.n_value = 1;
		e->bytes.value   = &e->blob;
		e->feature.kind_case  = PASCO__WIRE__FEATURE__KIND_BYTES_LIST;
		e->feature.bytes_list = &e->bytes;
	}
	return PASCO_OK;
}

/* A LIST of u8 tensors: a bytes_list of their bytes, in order. */
static int
encode_bytes_list(enc_feature *e, const char *key, const pasco_value *list)
{
	size_t               n = pasco_value_size(list);
	ProtobufCBinaryData *v = pasci_calloc(n + 1, sizeof(*v));
	if (v == NULL) {
		return PASCO_ENOMEM;
	}
	e->converted = v;
	for (size_t i = 0; i < n; i++) {
		const pasco_tensor *t =
		    pasco_value_as_tensor(pasco_value_item(list, i));
		if (t == NULL || t->dtype != PASCO_U8) {
			return PASCO_EINVAL;
		}
		v[i] = (ProtobufCBinaryData){t->nbytes, t->data};
	}
	pasco__wire__features__feature_entry__init(&e->entry);
	pasco__wire__feature__init(&e->feature);
	pasco__wire__bytes_list__init(&e->bytes);
	e->entry.key          = (char *) key;
	e->entry.value        = &e->feature;
	e->bytes.n_value      = n;
	e->bytes.value        = v;
	e->feature.kind_case  = PASCO__WIRE__FEATURE__KIND_BYTES_LIST;
	e->feature.bytes_list = &e->bytes;
	return PASCO_OK;
}

int
pasco_example_encode(const pasco_value *features, void **out, size_t *len)
{
	size_t       n = pasco_value_size(features);
	enc_feature *e = pasci_calloc(n + 1, sizeof(*e));
	Pasco__Wire__Features__FeatureEntry **ptrs =
	    pasci_calloc(n + 1, sizeof(*ptrs));
	Pasco__Wire__Features fs;
	Pasco__Wire__Example  ex;
	int rv = e != NULL && ptrs != NULL ? PASCO_OK : PASCO_ENOMEM;

	*out = NULL;
	*len = 0;
	if (pasco_value_kind_of(features) != PASCO_VALUE_DICT) {
		rv = PASCO_EINVAL;
	}
	for (size_t i = 0; rv == 0 && i < n; i++) {
		const pasco_value  *item = pasco_value_item(features, i);
		const pasco_tensor *t    = pasco_value_as_tensor(item);
		const char         *key  = pasco_value_key(features, i);
		rv      = t != NULL ? encode_feature(&e[i], key, t)
		          : pasco_value_kind_of(item) == PASCO_VALUE_LIST
		              ? encode_bytes_list(&e[i], key, item)
		              : PASCO_EINVAL;
		ptrs[i] = &e[i].entry;
	}
	if (rv == 0) {
		pasco__wire__features__init(&fs);
		pasco__wire__example__init(&ex);
		fs.n_feature = n;
		fs.feature   = ptrs;
		ex.features  = &fs;
		*len         = pasco__wire__example__get_packed_size(&ex);
		if ((*out = malloc(*len + 1)) == NULL) {
			rv = PASCO_ENOMEM;
		} else {
			pasco__wire__example__pack(&ex, *out);
		}
	}
	for (size_t i = 0; e != NULL && i < n; i++) {
		free(e[i].converted);
	}
	free(e);
	free(ptrs);
	return rv;
}

typedef struct parse_specs {
	pasco_feature_spec *specs;
	size_t              n;
} parse_specs;

static int
parse_element(void *arg, const pasco_value *element, pasco_value **result)
{
	parse_specs        *p = arg;
	const pasco_tensor *t = pasco_value_as_tensor(element);
	char                err[512];
	int                 rv;
	/* The message goes where pasco_dataset_last_error reads it, so a
	 * step function can report which record was bad. */
	if (t == NULL || t->dtype != PASCO_U8) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "parse_examples: an element is not a u8 tensor of a "
		    "serialized Example");
		return PASCO_EINVAL;
	}
	if ((rv = pasco_example_parse(t->data, t->nbytes, p->specs, p->n,
	         result, err, sizeof(err))) != 0) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "parse_examples: %s", err);
	}
	return rv;
}

static void
free_specs(void *arg)
{
	parse_specs *p = arg;
	for (size_t i = 0; i < p->n; i++) {
		free((char *) p->specs[i].name);
	}
	free(p->specs);
	free(p);
}

int
pasco_dataset_parse_examples(pasco_dataset **out, pasco_dataset *in,
    const pasco_feature_spec *specs, size_t nspecs)
{
	parse_specs *p = pasci_calloc(1, sizeof(*p));
	if (p == NULL ||
	    (p->specs = pasci_calloc(nspecs + 1, sizeof(*specs))) == NULL) {
		free(p);
		pasco_dataset_free(in);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < nspecs; i++) {
		p->specs[i]      = specs[i];
		p->specs[i].name = pasci_strdup(specs[i].name);
		p->n             = i + 1;
		if (p->specs[i].name == NULL) {
			free_specs(p);
			pasco_dataset_free(in);
			*out = NULL;
			return PASCO_ENOMEM;
		}
	}
	return pasco_dataset_map_with(out, in, parse_element, p, free_specs);
}
