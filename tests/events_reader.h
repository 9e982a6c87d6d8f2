/*
 * Runs the independent TensorBoard event-file reader
 * (tests/tools/read_events.py, named by PASCO_READ_EVENTS) on a file and
 * parses its JSON, for the tests of event files and, with --examples, of
 * TFRecord files of tf.train.Example.
 */
#ifndef PASCO_TEST_EVENTS_READER_H
#define PASCO_TEST_EVENTS_READER_H

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The reader's JSON for path read with flags ("" or "--examples";
 * cJSON_Delete it), or NULL with its exit status in *status and its
 * stderr in err. */
static inline cJSON *
read_records_as(
    const char *flags, const char *path, int *status, char *err, size_t errlen)
{
	const char *reader = getenv("PASCO_READ_EVENTS");
	char        cmd[2048], errpath[] = "/tmp/pasco-read-errXXXXXX";
	static char out[1 << 18];
	size_t      n;
	int         efd = mkstemp(errpath), st;
	FILE       *p, *ef;

	cr_assert(reader != NULL, "PASCO_READ_EVENTS is not set");
	cr_assert(efd >= 0);
	close(efd);
	snprintf(cmd, sizeof(cmd), "python3 '%s' %s '%s' 2>'%s'", reader,
	    flags, path, errpath);
	cr_assert((p = popen(cmd, "r")) != NULL);
	n       = fread(out, 1, sizeof(out) - 1, p);
	out[n]  = '\0';
	st      = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	ef      = fopen(errpath, "r");
	n       = ef ? fread(err, 1, errlen - 1, ef) : 0;
	err[n]  = '\0';
	if (ef) {
		fclose(ef);
	}
	unlink(errpath);
	return *status == 0 ? cJSON_Parse(out) : NULL;
}

/* The reader's JSON for the event file path, as read_records_as. */
static inline cJSON *
read_events(const char *path, int *status, char *err, size_t errlen)
{
	return read_records_as("", path, status, err, errlen);
}

/* The one event file in dir, read (asserts there is exactly one). */
static inline cJSON *
read_events_in(const char *dir)
{
	char   pattern[1024], err[512];
	glob_t g;
	int    status;
	snprintf(pattern, sizeof(pattern), "%s/events.out.tfevents.*", dir);
	cr_assert(glob(pattern, 0, NULL, &g) == 0, "no event file in %s", dir);
	cr_assert_eq(g.gl_pathc, 1, "%zu event files in %s", g.gl_pathc, dir);
	cJSON *doc = read_events(g.gl_pathv[0], &status, err, sizeof(err));
	cr_assert(doc != NULL, "reader failed (%d): %s", status, err);
	globfree(&g);
	return doc;
}

/* The value of the scalar tag at step in the reader's JSON; asserts it is
 * there. */
static inline double
events_scalar(const cJSON *doc, const char *tag, int64_t step)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(doc, "scalars"))
	{
		if (strcmp(cJSON_GetObjectItem(e, "tag")->valuestring, tag) ==
		        0 &&
		    (int64_t) cJSON_GetObjectItem(e, "step")->valuedouble ==
		        step) {
			return cJSON_GetObjectItem(e, "value")->valuedouble;
		}
	}
	cr_assert_fail("no scalar %s at step %lld", tag, (long long) step);
	return 0;
}

#endif
