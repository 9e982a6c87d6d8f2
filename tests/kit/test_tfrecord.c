/* CRC-32C, TFRecord round trips, corruption, and file/record sharding. */
#include "helpers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(tfrecord, .timeout = 30);

Test(tfrecord, crc32c_matches_the_standard_test_vectors)
{
	unsigned char zeros[32] = {0}, ones[32], up[32], down[32];
	for (int i = 0; i < 32; i++) {
		ones[i] = 0xff;
		up[i]   = (unsigned char) i;
		down[i] = (unsigned char) (31 - i);
	}
	/* RFC 3720 B.4 and the usual check value */
	cr_assert_eq(pasco_crc32c("123456789", 9), 0xE3069283u);
	cr_assert_eq(pasco_crc32c(zeros, 32), 0x8A9136AAu);
	cr_assert_eq(pasco_crc32c(ones, 32), 0x62A8AB43u);
	cr_assert_eq(pasco_crc32c(up, 32), 0x46DD794Eu);
	cr_assert_eq(pasco_crc32c(down, 32), 0x113FDB5Cu);
	cr_assert_eq(pasco_crc32c_mask(0), 0xa282ead8u);
	/* piece by piece, split anywhere, equals the whole */
	for (size_t cut = 0; cut <= 9; cut++) {
		cr_assert_eq(
		    pasco_crc32c_extend(pasco_crc32c("123456789", cut),
		        &"123456789"[cut], 9 - cut),
		    0xE3069283u, "cut at %zu", cut);
	}
}

static char dir[64];

static void
write_files(int nfiles, int per_file)
{
	strcpy(dir, "/tmp/pasco-tfr-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	for (int f = 0; f < nfiles; f++) {
		pasco_tfrecord_writer *w;
		char                   path[128];
		snprintf(path, sizeof(path), "%s/part-%d.tfrecord", dir, f);
		PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
		for (int i = 0; i < per_file; i++) {
			char rec[400];
			int  id = f * per_file + i, n = id % 300;
			for (int k = 0; k < n; k++) {
				rec[k] = (char) (id + k);
			}
			memcpy(rec, &id, n >= 4 ? 4 : 0);
			PASCO_PASS(pasco_tfrecord_write(w, rec, (size_t) n));
		}
		PASCO_PASS(pasco_tfrecord_writer_close(w));
	}
}

static void
files_of(int nfiles, char paths[][128], const char **names)
{
	for (int f = 0; f < nfiles; f++) {
		snprintf(paths[f], 128, "%s/part-%d.tfrecord", dir, f);
		names[f] = paths[f];
	}
}

static void
cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* The id a record was written with (-1 for records shorter than 4). */
static int
record_id(const pasco_value *e)
{
	const pasco_tensor *t = pasco_value_as_tensor(e);
	int                 id;
	if (t->count < 4) {
		return -1;
	}
	memcpy(&id, t->data, 4);
	return id;
}

Test(tfrecord, records_round_trip_in_order)
{
	char           paths[3][128];
	const char    *names[3];
	pasco_dataset *ds;
	pasco_value   *e;
	int            n = 0;
	write_files(3, 40);
	files_of(3, paths, names);
	PASCO_PASS(pasco_dataset_tfrecord(&ds, names, 3, NULL));
	while (pasco_dataset_next(ds, &e) == PASCO_OK) {
		const pasco_tensor *t = pasco_value_as_tensor(e);
		cr_assert_eq(t->count, n % 300, "record %d has %lld bytes", n,
		    (long long) t->count);
		if (t->count >= 4) {
			cr_assert_eq(record_id(e), n);
		}
		for (int64_t k = 4; k < t->count; k++) {
			cr_assert_eq(((char *) t->data)[k], (char) (n + k));
		}
		pasco_value_free(e);
		n++;
	}
	cr_assert_eq(n, 120);
	pasco_dataset_free(ds);
	cleanup();
}

/* A file of several MiB is read in many chunks, several in flight: every
 * byte must land in its place. */
Test(tfrecord, a_large_file_reads_back_byte_for_byte)
{
	pasco_tfrecord_writer *w;
	pasco_dataset         *ds;
	pasco_value           *e;
	char                   path[128];
	const char            *name = path;
	size_t         size = 300007; /* odd, so records straddle reads */
	unsigned char *rec  = malloc(size);
	int            n    = 0;
	strcpy(dir, "/tmp/pasco-tfr-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/big.tfrecord", dir);
	PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
	for (int r = 0; r < 40; r++) { /* 12 MB */
		for (size_t k = 0; k < size; k++) {
			rec[k] = (unsigned char) (k * 7 + (size_t) r * 13);
		}
		PASCO_PASS(pasco_tfrecord_write(w, rec, size));
	}
	PASCO_PASS(pasco_tfrecord_writer_close(w));
	PASCO_PASS(pasco_dataset_tfrecord(&ds, &name, 1, NULL));
	while (pasco_dataset_next(ds, &e) == PASCO_OK) {
		const pasco_tensor  *t = pasco_value_as_tensor(e);
		const unsigned char *b = t->data;
		cr_assert_eq((size_t) t->count, size);
		for (size_t k = 0; k < size; k++) {
			if (b[k] !=
			    (unsigned char) (k * 7 + (size_t) n * 13)) {
				cr_assert_fail(
				    "record %d byte %zu differs", n, k);
			}
		}
		pasco_value_free(e);
		n++;
	}
	cr_assert_eq(n, 40);
	pasco_dataset_free(ds);
	free(rec);
	cleanup();
}

static void
write_records(const char *path, bool gzip)
{
	pasco_tfrecord_writer *w;
	PASCO_PASS(gzip ? pasco_tfrecord_writer_open_gzip(&w, path)
	                : pasco_tfrecord_writer_open(&w, path));
	for (int i = 0; i < 500; i++) {
		char rec[64];
		int  n = snprintf(rec, sizeof(rec), "record %d of 500", i);
		PASCO_PASS(pasco_tfrecord_write(w, rec, (size_t) n));
	}
	PASCO_PASS(pasco_tfrecord_writer_close(w));
}

static int
count_records(const char *path, bool gzip, int *status)
{
	pasco_tfrecord_options o = {.gzip = gzip};
	pasco_dataset         *ds;
	pasco_value           *e;
	int                    n = 0;
	PASCO_PASS(pasco_dataset_tfrecord(&ds, &path, 1, &o));
	while ((*status = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		char want[64];
		int  len = snprintf(want, sizeof(want), "record %d of 500", n);
		const pasco_tensor *t = pasco_value_as_tensor(e);
		cr_assert(t->count == len &&
		              memcmp(t->data, want, (size_t) len) == 0,
		    "record %d", n);
		pasco_value_free(e);
		n++;
	}
	pasco_dataset_free(ds);
	return n;
}

/* A discarded writer leaves no file and no temporary one, and a file
 * already at its path as it was. */
Test(tfrecord, a_discarded_writer_writes_nothing)
{
	pasco_tfrecord_writer *w;
	char                   path[128], cmd[160];
	int                    status;
	strcpy(dir, "/tmp/pasco-tfr-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.tfrecord", dir);
	PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
	PASCO_PASS(pasco_tfrecord_write(w, "lost", 4));
	pasco_tfrecord_writer_discard(w);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", dir);
	cr_assert_eq(system(cmd), 0, "a discarded writer left a file");
	write_records(path, false);
	PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
	PASCO_PASS(pasco_tfrecord_write(w, "lost", 4));
	pasco_tfrecord_writer_discard(w);
	pasco_tfrecord_writer_discard(NULL);
	cr_assert_eq(count_records(path, false, &status), 500);
	cr_assert_eq(status, PASCO_EOUTOFRANGE);
	snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) = 1", dir);
	cr_assert_eq(system(cmd), 0, "a discarded writer left a file");
	cleanup();
}

/* GZIP files: ours inflate (by the gzip tool) to exactly the plain file,
 * and files the gzip tool compressed read back; a broken one is an error
 * naming it. */
Test(tfrecord, gzip_files_are_written_and_read)
{
	char plain[128], packed[128], theirs[128], cmd[512];
	int  status;
	strcpy(dir, "/tmp/pasco-tfr-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(plain, sizeof(plain), "%s/plain.tfrecord", dir);
	snprintf(packed, sizeof(packed), "%s/ours.tfrecord.gz", dir);
	snprintf(theirs, sizeof(theirs), "%s/theirs.tfrecord.gz", dir);
	write_records(plain, false);
	write_records(packed, true);
	snprintf(cmd, sizeof(cmd), "gzip -dc %s | cmp -s - %s", packed, plain);
	cr_assert_eq(
	    system(cmd), 0, "gzip -dc of our file differs from the plain one");
	snprintf(cmd, sizeof(cmd), "gzip -c %s > %s", plain, theirs);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(count_records(packed, true, &status), 500);
	cr_assert_eq(status, PASCO_EOUTOFRANGE);
	cr_assert_eq(count_records(theirs, true, &status), 500);
	cr_assert_eq(status, PASCO_EOUTOFRANGE);
	/* cut short: an error that names the file */
	snprintf(cmd, sizeof(cmd), "truncate -s 100 %s", theirs);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(count_records(theirs, true, &status), 0);
	cr_assert_eq(status, PASCO_EPROTO);
	cr_assert(strstr(pasco_dataset_last_error(),
	              "theirs.tfrecord.gz: not a whole gzip file"),
	    "%s", pasco_dataset_last_error());
	cleanup();
}

Test(tfrecord, a_corrupt_record_names_the_file_and_offset_or_is_skipped)
{
	char           paths[1][128], cmd[256];
	const char    *names[1];
	pasco_dataset *ds;
	pasco_value   *e;
	int64_t        skipped = 0;
	int            n       = 0, rv;
	write_files(1, 10);
	files_of(1, paths, names);
	/* record 5 (5 bytes) starts after records of 0..4 bytes: offset 16*5 +
	 * 10 = 90; its data begins 12 bytes later */
	snprintf(cmd, sizeof(cmd),
	    "printf 'X' | dd of=%s bs=1 seek=103 conv=notrunc "
	    "2>/dev/null",
	    paths[0]);
	cr_assert_eq(system(cmd), 0);
	PASCO_PASS(pasco_dataset_tfrecord(&ds, names, 1, NULL));
	while ((rv = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		pasco_value_free(e);
		n++;
	}
	cr_assert_eq(rv, PASCO_EPROTO);
	cr_assert_eq(n, 5);
	cr_assert(strstr(pasco_tfrecord_last_error(), "part-0.tfrecord") &&
	              strstr(pasco_tfrecord_last_error(),
	                  "bad data checksum at offset 90"),
	    "%s", pasco_tfrecord_last_error());
	pasco_dataset_free(ds);
	pasco_tfrecord_options skip = {
	    .skip_corrupt = true, .skipped = &skipped};
	PASCO_PASS(pasco_dataset_tfrecord(&ds, names, 1, &skip));
	for (n = 0; pasco_dataset_next(ds, &e) == PASCO_OK; n++) {
		pasco_value_free(e);
	}
	cr_assert_eq(n, 9);
	cr_assert_eq(skipped, 1);
	pasco_dataset_free(ds);
	/* a truncated file */
	snprintf(cmd, sizeof(cmd), "truncate -s -3 %s", paths[0]);
	cr_assert_eq(system(cmd), 0);
	PASCO_PASS(pasco_dataset_tfrecord(&ds, names, 1, &skip));
	for (n = 0; pasco_dataset_next(ds, &e) == PASCO_OK; n++) {
		pasco_value_free(e);
	}
	cr_assert_eq(n, 8, "the cut last record is skipped");
	pasco_dataset_free(ds);
	cleanup();
}

static int
record_length(void *arg, const pasco_value *e, pasco_value **out)
{
	(void) arg;
	*out = pasco_value_tensor(
	    test_scalar(PASCO_I64, (double) pasco_value_as_tensor(e)->count));
	return PASCO_OK;
}

/* pasco_dataset_next on a thread of its own, with that thread's
 * message. */
typedef struct next_result {
	pasco_dataset *ds;
	int            rv;
	char           error[512];
} next_result;

static void *
next_elsewhere(void *arg)
{
	next_result *r = arg;
	pasco_value *e = NULL;
	r->rv          = pasco_dataset_next(r->ds, &e);
	pasco_value_free(e);
	snprintf(r->error, sizeof(r->error), "%s", pasco_dataset_last_error());
	return NULL;
}

/* The reader runs on the prefetch thread; its message (file and offset)
 * must reach the thread that calls pasco_dataset_next with the error. */
Test(tfrecord, a_corrupt_record_read_through_prefetch_names_file_and_offset)
{
	char           paths[1][128], cmd[256];
	const char    *names[1];
	pasco_dataset *ds;
	pasco_value   *e;
	pthread_t      other;
	next_result    again = {0};
	int            n     = 0, rv;
	write_files(1, 10);
	files_of(1, paths, names);
	/* a byte of record 5's data (the record starts at offset 90) */
	snprintf(cmd, sizeof(cmd),
	    "printf 'X' | dd of=%s bs=1 seek=103 conv=notrunc "
	    "2>/dev/null",
	    paths[0]);
	cr_assert_eq(system(cmd), 0);
	PASCO_PASS(pasco_dataset_tfrecord(&ds, names, 1, NULL));
	PASCO_PASS(pasco_dataset_map(&ds, ds, record_length, NULL));
	PASCO_PASS(pasco_dataset_batch(&ds, ds, 2, false));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 2));
	again.ds = ds;
	while ((rv = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		pasco_value_free(e);
		n++;
	}
	cr_assert_eq(n, 2, "records 0-3 in two batches, then the error");
	PASCO_FAIL(rv, PASCO_EPROTO);
	cr_assert(strstr(pasco_dataset_last_error(), paths[0]) &&
	              strstr(pasco_dataset_last_error(),
	                  "bad data checksum at offset 90"),
	    "'%s'", pasco_dataset_last_error());
	cr_assert_str_eq(
	    pasco_tfrecord_last_error(), pasco_dataset_last_error());
	/* the ended iterator answers the error and its message to any
	 * thread: several closures may share it */
	cr_assert_eq(pthread_create(&other, NULL, next_elsewhere, &again), 0);
	cr_assert_eq(pthread_join(other, NULL), 0);
	PASCO_FAIL(again.rv, PASCO_EPROTO);
	cr_assert(strstr(again.error, "bad data checksum at offset 90"),
	    "'%s'", again.error);
	pasco_dataset_free(ds);
	cleanup();
}

/* Every record read by exactly one of `workers` workers. */
static void
check_sharding(int nfiles, int per_file, int workers, bool file_level)
{
	char        paths[8][128];
	const char *names[8];
	int        *seen = calloc((size_t) (nfiles * per_file), sizeof(int));
	write_files(nfiles, per_file);
	files_of(nfiles, paths, names);
	for (int w = 0; w < workers; w++) {
		pasco_dataset *ds;
		pasco_value   *e;
		PASCO_PASS(pasco_dataset_tfrecord_sharded(
		    &ds, names, (size_t) nfiles, w, workers, NULL));
		while (pasco_dataset_next(ds, &e) == PASCO_OK) {
			int id = record_id(e);
			if (id >= 0) {
				seen[id]++;
				if (file_level) {
					cr_assert_eq((id / per_file) % workers,
					    w,
					    "worker %d read a record of file "
					    "%d",
					    w, id / per_file);
				}
			}
			pasco_value_free(e);
		}
		pasco_dataset_free(ds);
	}
	for (int id = 4; id < nfiles * per_file; id++) {
		if (id % 300 >= 4) {
			cr_assert_eq(seen[id], 1, "record %d read %d times",
			    id, seen[id]);
		}
	}
	free(seen);
	cleanup();
}

Test(tfrecord, files_are_split_by_file_or_by_record)
{
	check_sharding(4, 25, 2, true);  /* N >= M: file-level */
	check_sharding(3, 25, 4, false); /* N < M: record-level */
}
