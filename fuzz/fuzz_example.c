/*
 * Fuzz target: the tf.train.Example parser (kit/data/example.c) with a
 * feature spec of every kind (fixed and variable length, defaults, bytes,
 * hashed strings as keys and as buckets). What parses must be a dict of
 * the spec's features with the spec's shapes (hashed keys never -1,
 * buckets in range), and must survive pasco_example_encode and a second
 * parse unchanged (hashed features read back as the int64_list of their
 * keys).
 */
#include "fuzz_util.h"
#include "pasco/example.h"
#include "pasco/tensor.h"
#include "pasco/value.h"

static const pasco_feature_spec specs[] = {
    {"label", PASCO_FEATURE_INT64, 1, true, 0, 0},
    {"x", PASCO_FEATURE_FLOAT, 3, true, 0.5, 0},
    {"ids", PASCO_FEATURE_INT64, 0, false, 0, 0},
    {"weights", PASCO_FEATURE_FLOAT, 0, false, 0, 0},
    {"text", PASCO_FEATURE_BYTES, 0, false, 0, 0},
    {"tags", PASCO_FEATURE_HASHED, 0, false, 0, 0},
    {"cross", PASCO_FEATURE_HASHED, 2, true, 3, 1000},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

/* specs with HASHED read as what encode writes of their keys */
static pasco_feature_spec again_specs[NSPECS];

static bool
same_tensor(const pasco_tensor *a, const pasco_tensor *b)
{
	return a->dtype == b->dtype && a->rank == b->rank &&
	       memcmp(a->shape, b->shape, sizeof(a->shape[0]) * a->rank) ==
	           0 &&
	       a->nbytes == b->nbytes &&
	       (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

static void
check_parsed(const pasco_value *v)
{
	FUZZ_CHECK(pasco_value_kind_of(v) == PASCO_VALUE_DICT &&
	           pasco_value_size(v) == NSPECS);
	for (size_t i = 0; i < NSPECS; i++) {
		const pasco_tensor *t =
		    pasco_value_as_tensor(pasco_value_get(v, specs[i].name));
		FUZZ_CHECK(t != NULL && t->rank == 1);
		FUZZ_CHECK(
		    specs[i].length == 0 || t->shape[0] == specs[i].length);
		for (int64_t k = 0;
		     specs[i].type == PASCO_FEATURE_HASHED && k < t->count;
		     k++) {
			int64_t key = ((const int64_t *) t->data)[k];
			FUZZ_CHECK(t->dtype == PASCO_I64 && key != -1);
			FUZZ_CHECK(specs[i].num_buckets == 0 ||
			           (key >= 0 && key < specs[i].num_buckets) ||
			           key == specs[i].default_value);
		}
	}
}

/* parse(encode(v)) == v, feature by feature. */
static void
check_round_trip(const pasco_value *v)
{
	pasco_value *again;
	void        *bytes;
	size_t       len;
	char         err[256];
	for (size_t i = 0; i < NSPECS; i++) {
		again_specs[i] = specs[i];
		if (specs[i].type == PASCO_FEATURE_HASHED) {
			again_specs[i].type        = PASCO_FEATURE_INT64;
			again_specs[i].num_buckets = 0;
		}
	}
	FUZZ_CHECK(pasco_example_encode(v, &bytes, &len) == 0);
	FUZZ_CHECK(pasco_example_parse(bytes, len, again_specs, NSPECS, &again,
	               err, sizeof(err)) == 0);
	for (size_t i = 0; i < NSPECS; i++) {
		FUZZ_CHECK(same_tensor(
		    pasco_value_as_tensor(pasco_value_get(v, specs[i].name)),
		    pasco_value_as_tensor(
		        pasco_value_get(again, specs[i].name))));
	}
	pasco_value_free(again);
	free(bytes);
}

int
fuzz_example_one(const uint8_t *data, size_t size)
{
	pasco_value *v        = NULL;
	char         err[256] = "";
	if (pasco_example_parse(
	        data, size, specs, NSPECS, &v, err, sizeof(err)) != 0) {
		FUZZ_CHECK(v == NULL && err[0] != 0);
		return 0;
	}
	check_parsed(v);
	check_round_trip(v);
	pasco_value_free(v);
	return 0;
}

#ifndef PASCO_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_example_one(data, size);
}
#endif
