/* XXH64 (base/hash.c): the specification's known vectors, every length
 * from 0 to 100 and a few KB (the stripe loop and every tail path) with
 * several seeds against the independent Python version
 * (tests/tools/xxh64.py, named by PASCO_XXH64), unaligned inputs, and
 * the keys and buckets built on it. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(hash, .timeout = 60);

Test(hash, gives_the_specifications_known_vectors)
{
	cr_assert_eq(pasco_hash64("", 0, 0), 0xEF46DB3751D8E999u);
	cr_assert_eq(pasco_hash64(NULL, 0, 0), 0xEF46DB3751D8E999u);
	cr_assert_eq(pasco_hash64("a", 1, 0), 0xD24EC4F1A98C6E5Bu);
	cr_assert_eq(pasco_hash64("abc", 3, 0), 0x44BC2CF5AD770999u);
}

/* splitmix64: the test's own bytes and seeds, the same on every run. */
static uint64_t
next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15u);
	z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
	z          = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return z ^ (z >> 31);
}

#define NCASES (101 + 4) /* lengths 0..100, then a few KB */
#define NSEEDS 4

static size_t
case_length(int i)
{
	static const size_t kb[] = {1024, 4096, 4099, 8191};
	return i <= 100 ? (size_t) i : kb[i - 101];
}

Test(hash, matches_the_python_reference_at_every_length_and_seed)
{
	const char    *py   = getenv("PASCO_XXH64");
	char           in[] = "/tmp/pasco-xxh64-XXXXXX", cmd[1024], line[64];
	uint64_t       s = 2024, seeds[NSEEDS] = {0, 1, UINT64_MAX, 0};
	uint64_t       want[NCASES * NSEEDS];
	unsigned char *buf = malloc(8192 + 1);
	int            fd  = mkstemp(in);
	FILE          *f, *p;
	size_t         n = 0;

	cr_assert(py != NULL, "PASCO_XXH64 is not set");
	cr_assert(fd >= 0 && buf != NULL && (f = fdopen(fd, "w")) != NULL);
	seeds[3] = next_random(&s);
	for (int i = 0; i < NCASES; i++) {
		size_t len = case_length(i);
		for (size_t k = 0; k < len; k++) {
			buf[k] = (unsigned char) next_random(&s);
		}
		for (int j = 0; j < NSEEDS; j++) {
			fprintf(f, "%llu ", (unsigned long long) seeds[j]);
			for (size_t k = 0; k < len; k++) {
				fprintf(f, "%02x", buf[k]);
			}
			fprintf(f, "\n");
			want[i * NSEEDS + j] =
			    pasco_hash64(buf, len, seeds[j]);
		}
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 '%s' < '%s'", py, in);
	cr_assert((p = popen(cmd, "r")) != NULL);
	while (fgets(line, sizeof(line), p) != NULL && n < NCASES * NSEEDS) {
		uint64_t got = strtoull(line, NULL, 16);
		cr_assert_eq(got, want[n],
		    "length %zu seed %llu: python %016llx, C %016llx",
		    case_length((int) n / NSEEDS),
		    (unsigned long long) seeds[n % NSEEDS],
		    (unsigned long long) got, (unsigned long long) want[n]);
		n++;
	}
	cr_assert_eq(WEXITSTATUS(pclose(p)), 0, "%s failed", cmd);
	cr_assert_eq(n, NCASES * NSEEDS, "python printed %zu digests", n);
	unlink(in);
	free(buf);
}

Test(hash, python_reference_passes_its_own_known_vectors)
{
	const char *py = getenv("PASCO_XXH64");
	char        cmd[1024];
	cr_assert(py != NULL, "PASCO_XXH64 is not set");
	snprintf(cmd, sizeof(cmd), "python3 '%s' --selftest", py);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

Test(hash, does_not_depend_on_alignment)
{
	unsigned char buf[300 + 8];
	uint64_t      s = 7;
	for (size_t k = 0; k < sizeof(buf); k++) {
		buf[k] = (unsigned char) next_random(&s);
	}
	for (size_t len = 0; len <= 300; len += 13) {
		uint64_t want = pasco_hash64(buf, len, 99);
		for (size_t off = 1; off < 8; off++) {
			unsigned char copy[300 + 8];
			memcpy(copy + off, buf, len);
			cr_assert_eq(pasco_hash64(copy + off, len, 99), want,
			    "length %zu at offset %zu", len, off);
		}
	}
}

Test(hash, seed_changes_the_digest)
{
	cr_assert_neq(pasco_hash64("abc", 3, 0), pasco_hash64("abc", 3, 1));
	cr_assert_neq(pasco_hash64("", 0, 0), pasco_hash64("", 0, 1));
}

Test(hash, key_is_the_digest_bit_for_bit)
{
	const char *ids[] = {"", "a", "abc", "user:12345", "ad_id=987654321"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint64_t h = pasco_hash64(ids[i], strlen(ids[i]), 0);
		int64_t  k = pasco_hash_key(ids[i], strlen(ids[i]));
		uint64_t bits;
		memcpy(&bits, &k, sizeof(bits));
		cr_assert_eq(bits, h, "'%s'", ids[i]);
	}
	/* 0xD24EC4F1A98C6E5B has its top bit set: a negative key */
	cr_assert_lt(pasco_hash_key("a", 1), 0);
}

Test(hash, a_string_hashing_to_the_padding_id_gets_minus_two)
{
	/* made by running XXH64's steps backwards from 0xFFFF...FFFF for an
	 * 8-byte input (checked against the reference implementation) */
	static const unsigned char minus_one[] = {
	    0x1e, 0x37, 0x89, 0xcf, 0x19, 0x13, 0x73, 0xf8};
	cr_assert_eq(pasco_hash64(minus_one, 8, 0), UINT64_MAX);
	cr_assert_eq(pasco_hash_key(minus_one, 8), -2);
	cr_assert_eq(
	    pasco_hash_bucket(minus_one, 8, 10), (int64_t) (UINT64_MAX % 10));
}

Test(hash, bucket_is_the_unsigned_digest_modulo_the_buckets)
{
	const char *ids[] = {"", "a", "abc", "user:12345"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint64_t h = pasco_hash64(ids[i], strlen(ids[i]), 0);
		for (int64_t n = 1; n < 1000; n += 37) {
			int64_t b =
			    pasco_hash_bucket(ids[i], strlen(ids[i]), n);
			cr_assert_eq(b, (int64_t) (h % (uint64_t) n));
			cr_assert(b >= 0 && b < n);
		}
	}
	cr_assert_eq(pasco_hash_bucket("a", 1, INT64_MAX),
	    (int64_t) (0xD24EC4F1A98C6E5Bu % (uint64_t) INT64_MAX));
	cr_assert_eq(pasco_hash_bucket("a", 1, 1), 0);
	cr_assert_eq(pasco_hash_bucket("a", 1, 0), -1);
	cr_assert_eq(pasco_hash_bucket("a", 1, -5), -1);
}
