/*
 * Whole-file I/O (base/fileio.c): roundtrips of empty, small and
 * multi-chunk files, atomic replacement, and errors that name the path.
 */
#include "helpers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"

TestSuite(fileio, .timeout = 30);

static char dir[64];

static void
make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/pasco-fileio-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static char *
path_in_dir(const char *name)
{
	static char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* Writes len patterned bytes to path in one or two buffers, reads them
 * back and compares. */
static void
roundtrip(const char *path, size_t len, int nbufs, int atomic)
{
	unsigned char *buf = malloc(len + 1);
	struct iovec   iov[2];
	void          *back;
	size_t         got;
	char           err[256] = "";

	for (size_t i = 0; i < len; i++) {
		buf[i] = (unsigned char) (i * 31 + i / 4096);
	}
	iov[0] = (struct iovec){buf, nbufs == 2 ? len / 3 : len};
	iov[1] = (struct iovec){buf + iov[0].iov_len, len - iov[0].iov_len};
	PASCO_PASS(
	    pasci_file_write(path, iov, nbufs, atomic, err, sizeof(err)));
	PASCO_PASS(pasci_file_read(path, &back, &got, err, sizeof(err)));
	cr_assert_eq(got, len, "read %zu bytes of %zu", got, len);
	cr_assert(len == 0 || memcmp(back, buf, len) == 0,
	    "%zu bytes came back different", len);
	free(back);
	free(buf);
}

Test(fileio, an_empty_file_reads_back_empty, .init = make_dir,
    .fini = remove_dir)
{
	roundtrip(path_in_dir("empty"), 0, 1, 0);
}

Test(fileio, a_short_file_roundtrips, .init = make_dir, .fini = remove_dir)
{
	roundtrip(path_in_dir("short"), 13, 1, 0);
}

Test(fileio, several_buffers_are_written_back_to_back, .init = make_dir,
    .fini = remove_dir)
{
	roundtrip(path_in_dir("two"), 100000, 2, 0);
}

/* More than the 8 reads of 1 MiB kept in flight, and not a multiple. */
Test(fileio, a_file_of_many_read_chunks_roundtrips, .init = make_dir,
    .fini = remove_dir)
{
	roundtrip(path_in_dir("large"), ((size_t) 19 << 20) + 12345, 2, 0);
}

Test(fileio, atomic_write_replaces_the_file_and_leaves_no_tmp,
    .init = make_dir, .fini = remove_dir)
{
	const char  *p = path_in_dir("ckpt");
	char         tmp[300], err[256];
	struct stat  st;
	struct iovec iov = {"longer old contents", 19};
	void        *back;
	size_t       len;

	PASCO_PASS(pasci_file_write(p, &iov, 1, 0, err, sizeof(err)));
	roundtrip(p, 5, 1, 1);
	snprintf(tmp, sizeof(tmp), "ls %s | grep -q tmp", dir);
	cr_assert_neq(system(tmp), 0, "a temporary file was left behind");
	(void) st;
	/* truncated, not overwritten in place */
	PASCO_PASS(pasci_file_read(p, &back, &len, err, sizeof(err)));
	cr_assert_eq(len, 5);
	free(back);
}

/* Whatever sits at path.tmp (a hard link to a file elsewhere, a symbolic
 * link) is left alone: the temporary file is a new one, made with
 * O_EXCL. */
Test(fileio, an_atomic_write_never_opens_a_file_left_at_a_temporary_name,
    .init = make_dir, .fini = remove_dir)
{
	char         err[256], cmd[1024];
	struct iovec iov = {"new", 3};
	const char  *p   = path_in_dir("f");
	snprintf(cmd, sizeof(cmd),
	    "printf precious > %s/victim && ln %s/victim %s.tmp && "
	    "ln -s %s/victim %s.tmp.link",
	    dir, dir, p, dir, p);
	cr_assert_eq(system(cmd), 0);
	PASCO_PASS(pasci_file_write(p, &iov, 1, 1, err, sizeof(err)));
	roundtrip(p, 3, 1, 1);
	snprintf(
	    cmd, sizeof(cmd), "test \"$(cat %s/victim)\" = precious", dir);
	cr_assert_eq(system(cmd), 0, "the linked file was written through");
}

Test(fileio, a_missing_file_is_not_found_and_named, .init = make_dir,
    .fini = remove_dir)
{
	char   err[256] = "";
	void  *data     = (void *) 1;
	size_t len      = 7;
	PASCO_FAIL(pasci_file_read(
	               path_in_dir("nope"), &data, &len, err, sizeof(err)),
	    PASCO_ENOTFOUND);
	cr_assert_null(data);
	cr_assert_eq(len, 0);
	cr_assert(strstr(err, path_in_dir("nope")) != NULL, "%s", err);
	cr_assert(strstr(err, strerror(ENOENT)) != NULL, "%s", err);
}

Test(fileio, reading_a_directory_is_an_io_error, .init = make_dir,
    .fini = remove_dir)
{
	char   err[256] = "";
	void  *data;
	size_t len;
	PASCO_FAIL(
	    pasci_file_read(dir, &data, &len, err, sizeof(err)), PASCO_EIO);
	cr_assert_null(data);
	cr_assert(strstr(err, dir) != NULL, "%s", err);
}

Test(fileio, writing_into_a_missing_directory_names_the_target,
    .init = make_dir, .fini = remove_dir)
{
	char         err[256] = "";
	struct iovec iov      = {"x", 1};
	const char  *p        = path_in_dir("no/such/file");
	PASCO_FAIL(
	    pasci_file_write(p, &iov, 1, 0, err, sizeof(err)), PASCO_EIO);
	cr_assert(strstr(err, p) != NULL, "%s", err);
	/* atomic writes create path.tmp.* first: the message names it */
	PASCO_FAIL(
	    pasci_file_write(p, &iov, 1, 1, err, sizeof(err)), PASCO_EIO);
	cr_assert(strstr(err, ".tmp") != NULL, "%s", err);
}

Test(fileio, make_dirs_creates_every_level_and_accepts_existing_ones,
    .init = make_dir, .fini = remove_dir)
{
	char        err[256] = "";
	struct stat st;
	const char *p = path_in_dir("a/b/c");
	PASCO_PASS(pasci_make_dirs(p, err, sizeof(err)));
	cr_assert(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	PASCO_PASS(pasci_make_dirs(p, err, sizeof(err)));
}

Test(fileio, make_dirs_through_a_file_fails_naming_it, .init = make_dir,
    .fini = remove_dir)
{
	char         err[256] = "";
	struct iovec iov      = {"x", 1};
	char         file[300], below[320];
	snprintf(file, sizeof(file), "%s", path_in_dir("plain"));
	snprintf(below, sizeof(below), "%s/sub", file);
	PASCO_PASS(pasci_file_write(file, &iov, 1, 0, err, sizeof(err)));
	PASCO_FAIL(pasci_make_dirs(below, err, sizeof(err)), PASCO_EIO);
	cr_assert(strstr(err, file) != NULL, "%s", err);
	/* a path that is a file is not a directory, as for mkdir -p */
	err[0] = 0;
	PASCO_FAIL(pasci_make_dirs(file, err, sizeof(err)), PASCO_EIO);
	cr_assert(strstr(err, file) != NULL, "%s", err);
	cr_assert(strstr(err, strerror(ENOTDIR)) != NULL, "%s", err);
}
