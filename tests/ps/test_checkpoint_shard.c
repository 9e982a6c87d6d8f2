/*
 * A ps's checkpoint shard writes (ps/checkpoint_shard.c) stay below the
 * ps's checkpoint root: the path is checked against the root once, then
 * walked from the root's descriptor, so a sub-directory swapped for a
 * symbolic link after the check is refused, naming it, and nothing (not
 * even a temporary file) is written where the link points.
 */
#include "helpers.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_shard.h"
#include "fileio.h"
#include "safetensors.h"
#include "store.h"

TestSuite(checkpoint_shard, .timeout = 60);

static char root[64], outside[64];

static void
make_dirs(void)
{
	strcpy(root, "/tmp/pasco-ckroot-XXXXXX");
	strcpy(outside, "/tmp/pasco-outside-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	cr_assert_not_null(mkdtemp(outside));
}

static void
remove_dirs(void)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, outside);
	cr_assert_eq(system(cmd), 0);
}

/* How many entries of any kind (files, .tmp files, links) are below dir. */
static int
entries_below(const char *dir)
{
	char  cmd[200], line[64] = "";
	FILE *p;
	snprintf(cmd, sizeof(cmd), "find '%s' -mindepth 1 | wc -l", dir);
	cr_assert_not_null(p = popen(cmd, "r"));
	cr_assert_not_null(fgets(line, sizeof(line), p));
	pclose(p);
	return atoi(line);
}

/* A store holding one variable v = [1, 2, 3]. */
static ps_store *
store_with_v(void)
{
	ps_store     *s;
	pasco_tensor *t;
	char          err[256] = "";
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, (int64_t[]){3}));
	memcpy(t->data, (float[]){1, 2, 3}, sizeof(float) * 3);
	PASCO_PASS(pasci_store_var_create(s, "v", t, err, sizeof(err)));
	pasco_tensor_release(t);
	return s;
}

/* Checks path against the root, then saves the store there. */
static int
save(ps_store *s, int fd, const char *path, char *err, size_t errlen)
{
	const char *rel;
	char       *json = NULL;
	int rv = pasci_checkpoint_path_check(root, path, &rel, err, errlen);
	if (rv == 0) {
		rv = pasci_checkpoint_shard_save(
		    s, NULL, fd, root, rel, &json, err, errlen);
	}
	free(json);
	return rv;
}

Test(checkpoint_shard,
    a_directory_swapped_for_a_link_after_the_check_is_refused_and_nothing_is_written_outside)
{
	ps_store         *s;
	pasci_safetensors f;
	char              err[512] = "", path[256], dirpath[200], old[200];
	const char       *rel;
	char             *json = NULL;
	int               fd;
	make_dirs();
	s = store_with_v();
	PASCO_PASS(pasci_dir_open(root, &fd, err, sizeof(err)));
	snprintf(dirpath, sizeof(dirpath), "%s/ckpt-1", root);
	snprintf(path, sizeof(path), "%s/ps-0.safetensors", dirpath);
	cr_assert_eq(mkdir(dirpath, 0755), 0);
	PASCO_PASS(save(s, fd, path, err, sizeof(err)));
	PASCO_PASS(pasci_safetensors_read(&f, path, err, sizeof(err)));
	cr_assert_not_null(pasci_safetensors_find(&f, "v"));
	pasci_safetensors_fini(&f);

	/* checked while ckpt-1 is a directory of the root, then swapped for
	 * a link to a directory outside it before the write */
	PASCO_PASS(
	    pasci_checkpoint_path_check(root, path, &rel, err, sizeof(err)));
	snprintf(old, sizeof(old), "%s/old", root);
	cr_assert_eq(rename(dirpath, old), 0);
	cr_assert_eq(symlink(outside, dirpath), 0);
	PASCO_FAIL(pasci_checkpoint_shard_save(
	               s, NULL, fd, root, rel, &json, err, sizeof(err)),
	    PASCO_EPERM);
	cr_assert_null(json);
	cr_assert(strstr(err, dirpath) != NULL &&
	              strstr(err, "is a symbolic link") != NULL,
	    "%s", err);
	cr_assert_eq(
	    entries_below(outside), 0, "a file was written outside the root");
	/* and saved again and again, never once */
	for (int i = 0; i < 20; i++) {
		PASCO_FAIL(save(s, fd, path, err, sizeof(err)), PASCO_EPERM);
	}
	cr_assert_eq(
	    entries_below(outside), 0, "a file was written outside the root");
	close(fd);
	pasci_store_destroy(s);
	remove_dirs();
}

Test(checkpoint_shard, paths_outside_the_root_or_through_dot_dot_are_refused)
{
	ps_store   *s;
	char        err[512] = "", path[256];
	const char *rel;
	int         fd;
	make_dirs();
	s = store_with_v();
	PASCO_PASS(pasci_dir_open(root, &fd, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/c", outside);
	PASCO_FAIL(
	    pasci_checkpoint_path_check(root, path, &rel, err, sizeof(err)),
	    PASCO_EPERM);
	cr_assert(strstr(err, "outside this ps's checkpoint root") != NULL,
	    "%s", err);
	/* a root that is only a prefix of the directory's name */
	snprintf(path, sizeof(path), "%sx/c", root);
	PASCO_FAIL(
	    pasci_checkpoint_path_check(root, path, &rel, err, sizeof(err)),
	    PASCO_EPERM);
	snprintf(path, sizeof(path), "%s/../%s/c", root, outside + 5);
	PASCO_FAIL(save(s, fd, path, err, sizeof(err)), PASCO_EPERM);
	cr_assert(strstr(err, "not a relative path of plain names") != NULL,
	    "%s", err);
	snprintf(path, sizeof(path), "%s/a/./c", root);
	PASCO_FAIL(save(s, fd, path, err, sizeof(err)), PASCO_EPERM);
	snprintf(path, sizeof(path), "%s/a//c", root);
	PASCO_FAIL(save(s, fd, path, err, sizeof(err)), PASCO_EPERM);
	cr_assert_eq(entries_below(outside), 0);
	close(fd);
	pasci_store_destroy(s);
	remove_dirs();
}

Test(checkpoint_shard, missing_directories_below_the_root_are_created)
{
	ps_store *s;
	char      err[512] = "", path[256];
	int       fd;
	make_dirs();
	s = store_with_v();
	PASCO_PASS(pasci_dir_open(root, &fd, err, sizeof(err)));
	snprintf(path, sizeof(path), "%s/run/ckpt-7/ps-0.safetensors", root);
	PASCO_PASS(save(s, fd, path, err, sizeof(err)));
	cr_assert_eq(access(path, R_OK), 0, "%s was not written", path);
	/* a file where a directory should be is named */
	snprintf(path, sizeof(path), "%s/run/ckpt-7/ps-0.safetensors/x", root);
	PASCO_FAIL(save(s, fd, path, err, sizeof(err)), PASCO_EPERM);
	cr_assert(strstr(err, "ps-0.safetensors is not a directory") != NULL,
	    "%s", err);
	close(fd);
	pasci_store_destroy(s);
	remove_dirs();
}
