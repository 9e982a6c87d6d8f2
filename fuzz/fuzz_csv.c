/*
 * Fuzz target: the CSV reader (kit/data/csv.c). The first byte picks the
 * options (bit 0: a header line; bit 1: ';' as the delimiter); the rest
 * is the file. Every element must be a dict of the columns, scalars for
 * numbers and hashed keys (never -1; buckets in range), text no longer
 * than the file, and iteration must end.
 */
#include "fuzz_util.h"
#include "pasco/dataset.h"
#include "pasco/example.h"
#include "pasco/tensor.h"

#define MAX_LINES 100000

static const pasco_csv_column columns[] = {
    {"id", PASCO_FEATURE_INT64, false, 0, 0},
    {"x", PASCO_FEATURE_FLOAT, true, 1.5, 0},
    {"name", PASCO_FEATURE_BYTES, false, 0, 0},
    {"user", PASCO_FEATURE_HASHED, false, 0, 0},
    {"ad", PASCO_FEATURE_HASHED, true, 0, 50},
};
#define NCOLS (sizeof(columns) / sizeof(columns[0]))

static void
check_element(const pasco_value *v, size_t size)
{
	FUZZ_CHECK(pasco_value_kind_of(v) == PASCO_VALUE_DICT &&
	           pasco_value_size(v) == NCOLS);
	for (size_t i = 0; i < NCOLS; i++) {
		const pasco_tensor *t =
		    pasco_value_as_tensor(pasco_value_get(v, columns[i].name));
		FUZZ_CHECK(t != NULL);
		if (columns[i].type == PASCO_FEATURE_BYTES) {
			FUZZ_CHECK(t->dtype == PASCO_U8 && t->rank == 1 &&
			           t->nbytes <= size);
		} else if (columns[i].type == PASCO_FEATURE_HASHED) {
			int64_t key = *(const int64_t *) t->data;
			FUZZ_CHECK(t->dtype == PASCO_I64 && t->rank == 0);
			FUZZ_CHECK(
			    key != -1 &&
			    (columns[i].num_buckets == 0 ||
			        (key >= 0 && key < columns[i].num_buckets)));
		} else {
			FUZZ_CHECK(t->rank == 0);
		}
	}
}

int
fuzz_csv_one(const uint8_t *data, size_t size)
{
	pasco_csv_options opts = {
	    .columns = columns, .ncolumns = NCOLS, .header = false};
	pasco_dataset *ds;
	const char    *path;
	int            rv = PASCO_OK;
	size_t         n  = 0;

	if (size < 1 || (path = fuzz_write_temp(data + 1, size - 1)) == NULL) {
		return 0;
	}
	opts.header    = (data[0] & 1) != 0;
	opts.delimiter = (data[0] & 2) != 0 ? ';' : 0;
	if (pasco_dataset_csv(&ds, &path, 1, &opts) != 0) {
		return 0;
	}
	while (n < MAX_LINES) {
		pasco_value *v = NULL;
		if ((rv = pasco_dataset_next(ds, &v)) != 0) {
			FUZZ_CHECK(v == NULL);
			break;
		}
		check_element(v, size);
		pasco_value_free(v);
		n++;
	}
	FUZZ_CHECK(n < MAX_LINES && rv != PASCO_OK);
	pasco_dataset_free(ds);
	return 0;
}

#ifndef PASCO_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_csv_one(data, size);
}
#endif
