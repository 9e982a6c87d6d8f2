/*
 * Feature hashing: string features (user ids, ad ids, crosses) into the
 * 64-bit keys of embedding tables.
 *
 * The hash is XXH64, exactly as the public xxHash specification defines
 * it (doc/xxhash_spec.md, "XXH64 Algorithm Description": 32-byte stripes
 * over four accumulators, little-endian lanes, the avalanche of step 6);
 * any conforming XXH64 (e.g. Python's xxhash.xxh64_intdigest) gives the
 * same value for the same bytes and seed. It is stable across Pasco
 * versions and machines (byte order and alignment do not matter): keys
 * are part of the checkpoint format, so changing the hash would remap
 * every key of every saved table.
 *
 * It is not TensorFlow's FarmHash: keys and buckets differ from
 * tf.strings.to_hash_bucket_fast's and from Keras's Hashing layer's, so a
 * table trained there does not line up with one trained here.
 *
 * Keys travel as i64 tensors holding the 64-bit pattern. -1 is reserved
 * as padding (the value ids are padded with, see example.h): a string
 * whose XXH64 is 0xFFFFFFFFFFFFFFFF gets the key -2 instead.
 */
#ifndef PASCO_HASH_H
#define PASCO_HASH_H

#include <stddef.h>
#include <stdint.h>

/* XXH64 of the len bytes at data (any alignment; NULL with len 0 is the
 * empty input) with seed. Pure. Thread-safe. */
uint64_t pasco_hash64(const void *data, size_t len, uint64_t seed);

/* The feature key of a string: XXH64 with seed 0, its bits reinterpreted
 * as int64_t, except that -1 (the padding id) becomes -2. Pure.
 * Thread-safe. */
int64_t pasco_hash_key(const void *data, size_t len);

/* A bucket in [0, num_buckets) for a fixed-size table (Keras's Hashing
 * layer's role): XXH64 with seed 0, as unsigned, modulo num_buckets.
 * num_buckets < 1 gives -1 (no bucket). Pure. Thread-safe. */
int64_t pasco_hash_bucket(const void *data, size_t len, int64_t num_buckets);

#endif
