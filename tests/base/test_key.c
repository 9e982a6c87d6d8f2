/*
 * Key files: what pasci_key_load accepts and refuses, and the message
 * naming the file when it refuses.
 */
#include "helpers.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "key.h"

TestSuite(key, .timeout = 10);

static void
write_key(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, len), (ssize_t) len);
	close(fd);
	cr_assert_eq(chmod(path, mode), 0);
}

Test(key, loads_a_private_file_of_random_bytes)
{
	char      path[] = "/tmp/pasco-key-XXXXXX";
	uint8_t   bytes[32];
	pasci_key k;
	char      err[256];
	close(mkstemp(path));
	for (int i = 0; i < 32; i++) {
		bytes[i] = (uint8_t) (i * 7 + 1);
	}
	write_key(path, bytes, sizeof(bytes), 0600);
	PASCO_PASS(pasci_key_load(&k, path, err, sizeof(err)));
	cr_assert_eq(k.len, 32);
	cr_assert_eq(memcmp(k.bytes, bytes, 32), 0);
	write_key(path, bytes, sizeof(bytes), 0400);
	PASCO_PASS(pasci_key_load(&k, path, err, sizeof(err)));
	unlink(path);
}

Test(key, refuses_short_shared_or_missing_files_naming_them)
{
	char      path[]    = "/tmp/pasco-key-XXXXXX";
	uint8_t   bytes[32] = {9};
	pasci_key k;
	char      err[512];
	close(mkstemp(path));
	write_key(path, bytes, 15, 0600);
	PASCO_FAIL(pasci_key_load(&k, path, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(
	    strstr(err, path) != NULL && strstr(err, "15 bytes"), "%s", err);
	write_key(path, bytes, 32, 0640);
	PASCO_FAIL(pasci_key_load(&k, path, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(
	    strstr(err, path) != NULL && strstr(err, "chmod 600"), "%s", err);
	write_key(path, bytes, 32, 0604);
	PASCO_FAIL(pasci_key_load(&k, path, err, sizeof(err)), PASCO_EINVAL);
	unlink(path);
	PASCO_FAIL(pasci_key_load(&k, path, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(strstr(err, path) != NULL, "%s", err);
}

Test(key, refuses_zero_and_repeated_pattern_keys)
{
	char      path[] = "/tmp/pasco-key-XXXXXX";
	uint8_t   zeros[16] = {0};
	char      pattern[] = "abcabcabcabcabcabcabcabcabcabcab"; /* 3 values */
	char      text[]    = "open sesame, open sesame, open sesame!\n";
	pasci_key k;
	char      err[512];
	close(mkstemp(path));
	write_key(path, zeros, sizeof(zeros), 0600);
	PASCO_FAIL(pasci_key_load(&k, path, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(strstr(err, path) != NULL &&
	              strstr(err, "16 bytes of only 1 distinct values") &&
	              strstr(err, "/dev/urandom"),
	    "%s", err);
	cr_assert_eq(k.len, 0);
	write_key(path, pattern, 32, 0600);
	PASCO_FAIL(pasci_key_load(&k, path, err, sizeof(err)), PASCO_EINVAL);
	cr_assert(strstr(err, "only 3 distinct values (a short pattern)"), "%s",
	    err);
	/* a passphrase with enough different characters is taken */
	write_key(path, text, strlen(text), 0600);
	PASCO_PASS(pasci_key_load(&k, path, err, sizeof(err)));
	unlink(path);
}

Test(key, keeps_a_long_key_as_its_digest_as_hmac_would)
{
	char        path[] = "/tmp/pasco-key-XXXXXX";
	uint8_t     bytes[100], d[32], a[32], b[32];
	pasci_key   k;
	char        err[256];
	const void *parts[1] = {"x"};
	size_t      n        = 1;
	close(mkstemp(path));
	for (size_t i = 0; i < sizeof(bytes); i++) {
		bytes[i] = (uint8_t) (0x5a + i * 13);
	}
	write_key(path, bytes, sizeof(bytes), 0600);
	PASCO_PASS(pasci_key_load(&k, path, err, sizeof(err)));
	unlink(path);
	pasci_sha256(bytes, sizeof(bytes), d);
	cr_assert_eq(k.len, 32);
	cr_assert_eq(memcmp(k.bytes, d, 32), 0);
	pasci_hmac_sha256(bytes, sizeof(bytes), 1, parts, &n, a);
	pasci_hmac_sha256(k.bytes, k.len, 1, parts, &n, b);
	cr_assert_eq(memcmp(a, b, 32), 0);
}
