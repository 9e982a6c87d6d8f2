/*
 * XXH64 (see include/pasco/hash.h), written from the xxHash
 * specification's description of the algorithm, and the feature keys and
 * buckets built on it. Lanes are assembled byte by byte in little-endian
 * order, so the digest does not depend on the machine's byte order or on
 * the input's alignment (compilers turn the assembly into one load where
 * that is allowed). Pure functions: no state, any thread.
 */
#include <string.h>

#include "pasco/hash.h"

#define P1 0x9E3779B185EBCA87u
#define P2 0xC2B2AE3D27D4EB4Fu
#define P3 0x165667B19E3779F9u
#define P4 0x85EBCA77C2B2AE63u
#define P5 0x27D4EB2F165667C5u

static inline uint64_t
rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t
read_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--) {
		v = (v << 8) | p[i];
	}
	return v;
}

static inline uint64_t
read_le32(const unsigned char *p)
{
	return (uint64_t) p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16 |
	       (uint64_t) p[3] << 24;
}

/* The specification's round: one lane into one accumulator. */
static inline uint64_t
xxh_round(uint64_t acc, uint64_t lane)
{
	return rotl64(acc + lane * P2, 31) * P1;
}

static inline uint64_t
xxh_merge(uint64_t acc, uint64_t v)
{
	return (acc ^ xxh_round(0, v)) * P1 + P4;
}

/* Steps 1 to 3: the 32-byte stripes of [*p, end) into one accumulator;
 * *p is left at the first byte of the tail. */
static uint64_t
xxh_stripes(const unsigned char **p, const unsigned char *end, uint64_t seed)
{
	uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed,
	         v4 = seed - P1;
	while (end - *p >= 32) {
		v1 = xxh_round(v1, read_le64(*p));
		v2 = xxh_round(v2, read_le64(*p + 8));
		v3 = xxh_round(v3, read_le64(*p + 16));
		v4 = xxh_round(v4, read_le64(*p + 24));
		*p += 32;
	}
	uint64_t acc =
	    rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
	acc = xxh_merge(acc, v1);
	acc = xxh_merge(acc, v2);
	acc = xxh_merge(acc, v3);
	return xxh_merge(acc, v4);
}

uint64_t
pasco_hash64(const void *data, size_t len, uint64_t seed)
{
	/* data may be NULL when len is 0 (NULL + 0 is undefined in C) */
	const unsigned char *p   = len > 0 ? data : (const void *) "";
	const unsigned char *end = p + len;
	uint64_t             acc;
	acc = len >= 32 ? xxh_stripes(&p, end, seed) : seed + P5;
	acc += (uint64_t) len;
	for (; end - p >= 8; p += 8) {
		acc ^= xxh_round(0, read_le64(p));
		acc = rotl64(acc, 27) * P1 + P4;
	}
	if (end - p >= 4) {
		acc ^= read_le32(p) * P1;
		acc = rotl64(acc, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++) {
		acc ^= *p * P5;
		acc = rotl64(acc, 11) * P1;
	}
	acc ^= acc >> 33;
	acc *= P2;
	acc ^= acc >> 29;
	acc *= P3;
	acc ^= acc >> 32;
	return acc;
}

int64_t
pasco_hash_key(const void *data, size_t len)
{
	uint64_t h = pasco_hash64(data, len, 0);
	int64_t  key;
	memcpy(&key, &h, sizeof(key)); /* the bits, whatever the value */
	/* -1 is the padding id: the strings that hash to it move next door */
	return key == -1 ? -2 : key;
}

int64_t
pasco_hash_bucket(const void *data, size_t len, int64_t num_buckets)
{
	if (num_buckets < 1) {
		return -1;
	}
	return (int64_t) (pasco_hash64(data, len, 0) % (uint64_t) num_buckets);
}
