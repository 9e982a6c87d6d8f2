/*
 * The Pasco side of the TFRecord cross-check with an independent
 * implementation (tests/kit/test_tfrecord_npm.sh):
 *     tfrecord_tool write PATH   writes the three agreed Examples
 *     tfrecord_tool read PATH    prints each Example of PATH as a line:
 *                                label=L score=S0,S1 name=N
 */
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pasco_feature_spec specs[] = {
    {"label", PASCO_FEATURE_INT64, 1, false, 0, 0},
    {"score", PASCO_FEATURE_FLOAT, 2, false, 0, 0},
    {"name", PASCO_FEATURE_BYTES, 0, false, 0, 0},
};

static int
write_file(const char *path)
{
	pasco_tfrecord_writer *w;
	int                    rv = pasco_tfrecord_writer_open(&w, path);
	for (int i = 0; rv == 0 && i < 3; i++) {
		int64_t       label    = 10 + i;
		float         score[2] = {(float) i + 0.5f, (float) -i};
		char          name[16];
		pasco_tensor *tl, *ts, *tn;
		void         *bytes;
		size_t        len;
		int64_t       one = 1, two = 2, nlen;
		snprintf(name, sizeof(name), "rec-%d", i);
		nlen = (int64_t) strlen(name);
		pasco_tensor_from(
		    &tl, PASCO_I64, 1, &one, &label, sizeof(label));
		pasco_tensor_from(
		    &ts, PASCO_F32, 1, &two, score, sizeof(score));
		pasco_tensor_from(
		    &tn, PASCO_U8, 1, &nlen, name, (size_t) nlen);
		pasco_value *ex = pasco_value_dict(3, "label",
		    pasco_value_tensor(tl), "score", pasco_value_tensor(ts),
		    "name", pasco_value_tensor(tn));
		if ((rv = pasco_example_encode(ex, &bytes, &len)) == 0) {
			rv = pasco_tfrecord_write(w, bytes, len);
			free(bytes);
		}
		pasco_value_free(ex);
	}
	return rv == 0 ? pasco_tfrecord_writer_close(w) : rv;
}

static int
read_file(const char *path)
{
	pasco_dataset *ds;
	pasco_value   *rec, *ex;
	char           err[256];
	int            rv = pasco_dataset_tfrecord(&ds, &path, 1, NULL);
	while (rv == 0 && (rv = pasco_dataset_next(ds, &rec)) == 0) {
		const pasco_tensor *t = pasco_value_as_tensor(rec);
		rv = pasco_example_parse(t->data, (size_t) t->count, specs, 3,
		    &ex, err, sizeof(err));
		pasco_value_free(rec);
		if (rv != 0) {
			fprintf(stderr, "tfrecord_tool: %s\n", err);
			break;
		}
		const pasco_tensor *l =
		    pasco_value_as_tensor(pasco_value_get(ex, "label"));
		const pasco_tensor *s =
		    pasco_value_as_tensor(pasco_value_get(ex, "score"));
		const pasco_tensor *n =
		    pasco_value_as_tensor(pasco_value_get(ex, "name"));
		printf("label=%lld score=%g,%g name=%.*s\n",
		    (long long) ((int64_t *) l->data)[0],
		    ((float *) s->data)[0], ((float *) s->data)[1],
		    (int) n->count, (const char *) n->data);
		pasco_value_free(ex);
	}
	if (rv != PASCO_EOUTOFRANGE) {
		fprintf(stderr, "tfrecord_tool: %s: %s %s\n", path,
		    pasco_strerror(rv), pasco_dataset_last_error());
		return rv;
	}
	pasco_dataset_free(ds);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 3 ||
	    (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "read") != 0)) {
		fprintf(stderr, "usage: tfrecord_tool write|read PATH\n");
		return 2;
	}
	return (strcmp(argv[1], "write") == 0 ? write_file(argv[2])
	                                      : read_file(argv[2])) == 0
	           ? 0
	           : 1;
}
