/* The TensorBoard event writer, read back by an independent reader
 * (tests/tools/read_events.py: its own CRC-32C and proto decoding). */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <regex.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"

/* The reader's JSON for path (cJSON_Delete it), or NULL with its exit
 * status in *status and its stderr in err. */
static cJSON *
read_events(const char *path, int *status, char *err, size_t errlen)
{
	const char *reader = getenv("PASCO_READ_EVENTS");
	char        cmd[2048], errpath[] = "/tmp/pasco-read-errXXXXXX";
	static char out[1 << 16];
	size_t      n;
	int         efd = mkstemp(errpath);
	FILE       *p;

	cr_assert(reader != NULL, "PASCO_READ_EVENTS is not set");
	cr_assert(efd >= 0);
	close(efd);
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' 2>'%s'", reader, path,
	    errpath);
	cr_assert((p = popen(cmd, "r")) != NULL);
	n        = fread(out, 1, sizeof(out) - 1, p);
	out[n]   = '\0';
	int st   = pclose(p);
	*status  = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	FILE *ef = fopen(errpath, "r");
	n        = ef ? fread(err, 1, errlen - 1, ef) : 0;
	err[n]   = '\0';
	if (ef) {
		fclose(ef);
	}
	unlink(errpath);
	return *status == 0 ? cJSON_Parse(out) : NULL;
}

static char *
temp_dir(void)
{
	static char dir[64];
	strcpy(dir, "/tmp/pasco-summaryXXXXXX");
	cr_assert(mkdtemp(dir) != NULL);
	return dir;
}

static void
remove_tree(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

Test(summary, scalars_read_back_by_an_independent_reader, .timeout = 30)
{
	char                 *root = temp_dir(), dir[256], err[512];
	pasco_summary_writer *w;
	int                   status;
	const char           *tags[] = {
	              "epoch_loss", "epoch_accuracy", "steps_per_second"};

	snprintf(dir, sizeof(dir), "%s/logs/train", root); /* parents made */
	PASCO_PASS(pasco_summary_writer_open(&w, dir));
	for (int step = 0; step < 5; step++) {
		for (int t = 0; t < 3; t++) {
			PASCO_PASS(pasco_summary_scalar(
			    w, tags[t], step * 100, 0.5 * step + t));
		}
	}
	PASCO_PASS(pasco_summary_scalar(w, "negative_step", -7, -1.25));
	PASCO_PASS(pasco_summary_flush(w));

	const char *path = pasco_summary_writer_path(w);
	regex_t     re;
	cr_assert(regcomp(&re,
	              "/logs/train/events\\.out\\.tfevents\\.[0-9]{10}\\."
	              "[^/]+\\.[0-9]+\\.[0-9]+\\.v2$",
	              REG_EXTENDED) == 0);
	cr_assert(regexec(&re, path, 0, NULL, 0) == 0, "file name %s", path);
	regfree(&re);
	char pidpart[32];
	snprintf(pidpart, sizeof(pidpart), ".%d.", (int) getpid());
	cr_assert(strstr(path, pidpart) != NULL, "no pid in %s", path);

	cJSON *doc = read_events(path, &status, err, sizeof(err));
	cr_assert(doc != NULL, "reader failed (%d): %s", status, err);
	cr_assert_str_eq(cJSON_GetObjectItem(doc, "file_version")->valuestring,
	    "brain.Event:2");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "truncated_at")));
	cJSON *sc = cJSON_GetObjectItem(doc, "scalars");
	cr_assert_eq(cJSON_GetArraySize(sc), 16);
	double now = (double) time(NULL);
	for (int i = 0; i < 15; i++) {
		cJSON *e = cJSON_GetArrayItem(sc, i);
		cr_assert_str_eq(
		    cJSON_GetObjectItem(e, "tag")->valuestring, tags[i % 3]);
		cr_assert_eq(
		    cJSON_GetObjectItem(e, "step")->valueint, (i / 3) * 100);
		cr_assert_float_eq(
		    cJSON_GetObjectItem(e, "value")->valuedouble,
		    0.5 * (i / 3) + i % 3, 1e-6);
		double wt = cJSON_GetObjectItem(e, "wall_time")->valuedouble;
		cr_assert(wt > now - 60 && wt < now + 60, "wall_time %f", wt);
	}
	cJSON *last = cJSON_GetArrayItem(sc, 15);
	cr_assert_eq(cJSON_GetObjectItem(last, "step")->valueint, -7);
	cr_assert_float_eq(
	    cJSON_GetObjectItem(last, "value")->valuedouble, -1.25, 1e-6);
	cJSON_Delete(doc);
	pasco_summary_writer_close(w);
	remove_tree(root);
}

Test(summary, two_writers_in_one_directory_get_two_files, .timeout = 30)
{
	char                 *root = temp_dir();
	pasco_summary_writer *a, *b;
	PASCO_PASS(pasco_summary_writer_open(&a, root));
	PASCO_PASS(pasco_summary_writer_open(&b, root));
	cr_assert_str_neq(
	    pasco_summary_writer_path(a), pasco_summary_writer_path(b));
	pasco_summary_writer_close(a);
	pasco_summary_writer_close(b);
	pasco_summary_writer_close(NULL);
	remove_tree(root);
}

Test(summary, a_flipped_byte_is_reported_by_the_reader, .timeout = 30)
{
	char                 *root = temp_dir(), path[512], err[512];
	pasco_summary_writer *w;
	struct stat           st;
	int                   status, fd;
	uint8_t               byte;

	PASCO_PASS(pasco_summary_writer_open(&w, root));
	PASCO_PASS(pasco_summary_scalar(w, "loss", 1, 0.75));
	PASCO_PASS(pasco_summary_scalar(w, "loss", 2, 0.5));
	snprintf(path, sizeof(path), "%s", pasco_summary_writer_path(w));
	pasco_summary_writer_close(w);

	/* a byte inside the last record's data (its value) */
	cr_assert(stat(path, &st) == 0);
	cr_assert((fd = open(path, O_RDWR)) >= 0);
	cr_assert(pread(fd, &byte, 1, st.st_size - 6) == 1);
	byte ^= 0x40;
	cr_assert(pwrite(fd, &byte, 1, st.st_size - 6) == 1);
	close(fd);
	cr_assert(read_events(path, &status, err, sizeof(err)) == NULL);
	cr_assert_eq(status, 1, "reader status %d: %s", status, err);
	cr_assert(strstr(err, "data checksum mismatch") != NULL, "%s", err);

	/* cut inside the last record: the prefix still reads */
	cr_assert(truncate(path, st.st_size - 3) == 0);
	cJSON *doc = read_events(path, &status, err, sizeof(err));
	cr_assert(doc != NULL, "reader failed (%d): %s", status, err);
	cr_assert_eq(
	    cJSON_GetArraySize(cJSON_GetObjectItem(doc, "scalars")), 1);
	cr_assert(cJSON_GetObjectItem(doc, "truncated_at")->valueint > 0);
	cJSON_Delete(doc);
	remove_tree(root);
}

Test(summary, bad_arguments_are_refused_with_a_message, .timeout = 30)
{
	pasco_summary_writer *w    = (void *) 1;
	char                 *root = temp_dir(), file[256];
	PASCO_FAIL(pasco_summary_writer_open(&w, ""), PASCO_EINVAL);
	cr_assert_null(w);
	/* a directory below a regular file cannot be made */
	snprintf(file, sizeof(file), "%s/plain", root);
	FILE *f = fopen(file, "w");
	cr_assert(f != NULL);
	fclose(f);
	strcat(file, "/sub");
	PASCO_FAIL(pasco_summary_writer_open(&w, file), PASCO_EIO);
	cr_assert(strstr(pasco_summary_last_error(), "plain") != NULL, "%s",
	    pasco_summary_last_error());
	PASCO_PASS(pasco_summary_writer_open(&w, root));
	PASCO_FAIL(pasco_summary_scalar(w, "", 0, 1), PASCO_EINVAL);
	PASCO_FAIL(pasco_summary_scalar(w, NULL, 0, 1), PASCO_EINVAL);
	pasco_summary_writer_close(w);
	remove_tree(root);
}
