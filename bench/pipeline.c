/*
 * Input pipeline throughput: TFRecord shards of tf.train.Example records
 * (a label, 3 ids, 3 values: seed 004's sparse click data) read through
 * the pipeline (read with io_uring, CRC checks, parse, batch 256,
 * prefetch), in records/s and MB/s, beside a plain read() loop over the
 * same files in the same run (the baseline: bytes off the page cache with
 * no work). Best of 3 passes after a warm-up pass.
 *
 *     build/bench/pipeline [--records N] [--files F]
 */
#include <fcntl.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const pasco_feature_spec specs[] = {
    {"label", PASCO_FEATURE_FLOAT, 1, false, 0, 0},
    {"ids", PASCO_FEATURE_INT64, 3, false, 0, 0},
    {"values", PASCO_FEATURE_FLOAT, 3, false, 0, 0},
};

static int
write_files(const char *dir, int files, long records, char paths[][256])
{
	for (int f = 0; f < files; f++) {
		pasco_tfrecord_writer *w;
		snprintf(paths[f], 256, "%s/part-%d.tfrecord", dir, f);
		if (pasco_tfrecord_writer_open(&w, paths[f]) != 0) {
			return 1;
		}
		for (long i = f; i < records; i += files) {
			int64_t ids[3] = {
			    i % 1000003, i * 7 % 1000003, i * 13 % 1000003};
			float         vals[3] = {1, 0.5f, 0.25f};
			pasco_tensor *l, *id, *v;
			pasco_value  *ex;
			void         *buf;
			size_t        len;
			pasco_tensor_scalar(&l, PASCO_F32, (double) (i % 2));
			l->rank     = 1;
			l->shape[0] = 1;
			pasco_tensor_from(&id, PASCO_I64, 1, (int64_t[]){3},
			    ids, sizeof(ids));
			pasco_tensor_from(&v, PASCO_F32, 1, (int64_t[]){3},
			    vals, sizeof(vals));
			ex =
			    pasco_value_dict(3, "label", pasco_value_tensor(l),
			        "ids", pasco_value_tensor(id), "values",
			        pasco_value_tensor(v));
			pasco_example_encode(ex, &buf, &len);
			pasco_tfrecord_write(w, buf, len);
			free(buf);
			pasco_value_free(ex);
		}
		if (pasco_tfrecord_writer_close(w) != 0) {
			return 1;
		}
	}
	return 0;
}

/* Plain read() of every file, in 1 MiB chunks; returns bytes. */
static double
plain_read(int files, char paths[][256])
{
	static char buf[1 << 20];
	double      bytes = 0;
	for (int f = 0; f < files; f++) {
		int     fd = open(paths[f], O_RDONLY);
		ssize_t n;
		while ((n = read(fd, buf, sizeof(buf))) > 0) {
			bytes += (double) n;
		}
		close(fd);
	}
	return bytes;
}

/* The pipeline; returns records. */
static long
pipeline(int files, char paths[][256])
{
	const char    *names[64];
	pasco_dataset *ds;
	pasco_value   *batch;
	long           records = 0;
	for (int f = 0; f < files; f++) {
		names[f] = paths[f];
	}
	if (pasco_dataset_tfrecord(&ds, names, (size_t) files, NULL) != 0 ||
	    pasco_dataset_parse_examples(&ds, ds, specs, 3) != 0 ||
	    pasco_dataset_batch(&ds, ds, 256, false) != 0 ||
	    pasco_dataset_prefetch(&ds, ds, 4) != 0) {
		return -1;
	}
	while (pasco_dataset_next(ds, &batch) == PASCO_OK) {
		records +=
		    pasco_value_as_tensor(pasco_value_get(batch, "label"))
		        ->shape[0];
		pasco_value_free(batch);
	}
	pasco_dataset_free(ds);
	return records;
}

int
main(int argc, char **argv)
{
	long   records   = 200000;
	int    files     = 4;
	char   dir[]     = "/tmp/pasco-bench-XXXXXX", paths[64][256], cmd[64];
	double best_read = 0, best_pipe = 0, bytes = 0;
	long   got = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--records") == 0) {
			records = atol(argv[i + 1]);
		} else if (strcmp(argv[i], "--files") == 0) {
			files =
			    atoi(argv[i + 1]) > 0 && atoi(argv[i + 1]) <= 64
			        ? atoi(argv[i + 1])
			        : 4;
		}
	}
	if (mkdtemp(dir) == NULL ||
	    write_files(dir, files, records, paths) != 0) {
		fprintf(stderr, "pipeline: cannot write the test files\n");
		return 1;
	}
	plain_read(files, paths); /* warm the page cache */
	for (int r = 0; r < 3; r++) {
		double t0 = bench_now();
		bytes     = plain_read(files, paths);
		double t1 = bench_now();
		got       = pipeline(files, paths);
		double t2 = bench_now();
		best_read = best_read > bytes / (t1 - t0) ? best_read
		                                          : bytes / (t1 - t0);
		best_pipe = best_pipe > (double) got / (t2 - t1)
		                ? best_pipe
		                : (double) got / (t2 - t1);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0 || got != records) {
		fprintf(stderr, "pipeline: read %ld of %ld records\n", got,
		    records);
		return 1;
	}
	double per_record = bytes / (double) records;
	printf("pipeline benchmark: %ld Example records (%.0f bytes each) in "
	       "%d TFRecord "
	       "files, best of 3\n",
	    records, per_record, files);
	printf("%-52s %12.0f MB/s\n", "plain read() of the same files",
	    best_read / 1e6);
	printf("%-52s %12.0f records/s  %.0f MB/s (%.3gx of read)\n",
	    "pasco pipeline (read+crc, parse, batch 256, prefetch)", best_pipe,
	    best_pipe * per_record / 1e6, best_pipe * per_record / best_read);
	bench_json("pipeline", "read() of the files, MB/s", best_read / 1e6,
	    "MB/s", 0);
	bench_json("pipeline",
	    "TFRecord -> Example -> batch -> prefetch, MB/s",
	    best_pipe * per_record / 1e6, "MB/s", best_read / 1e6);
	bench_json("pipeline", "records/s", best_pipe, "records/s", 0);
	return 0;
}
