/*
 * The cluster secret: random bytes every task of a cluster shares, read
 * from a key file (--key-file PATH, or PASCO_KEY_FILE), with which each
 * connection proves that its peer belongs to the cluster (net/auth.h).
 * Pasco runs without one, open to anyone who can reach its ports, and says
 * so once.
 */
#ifndef PASCI_KEY_H
#define PASCI_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "hmac.h"

#define PASCI_KEY_MIN 16        /* bytes a key file must hold */
#define PASCI_KEY_MAX_FILE 4096 /* a longer file is not a key */
/* distinct byte values a key must have: a file of zeros or one short
 * pattern repeated is not a secret */
#define PASCI_KEY_MIN_DISTINCT 8

/* A key as HMAC uses it: a file longer than a SHA-256 block is kept as its
 * digest, which RFC 2104 makes the same key. */
typedef struct pasci_key {
	uint8_t bytes[PASCI_SHA256_BLOCK];
	size_t  len;
} pasci_key;

/* Reads the key in the file at path into *out. PASCO_EINVAL, with a
 * message naming path in err, when it cannot be read, is not a regular
 * file, holds fewer than PASCI_KEY_MIN bytes (or more than
 * PASCI_KEY_MAX_FILE) or fewer than PASCI_KEY_MIN_DISTINCT distinct byte
 * values (16 zero bytes), or can be read by its group or others. Blocks on
 * file I/O. Thread-safe. */
int pasci_key_load(pasci_key *out, const char *path, char *err, size_t errlen);

/* This process's cluster key: *out is NULL when none is configured. The
 * first call reads PASCO_KEY_FILE (or takes what pasci_cluster_key_set
 * gave), logging an error when the file is unusable; later calls return
 * the same. PASCO_EINVAL when the file is unusable (with the message in
 * err, when err is not NULL). Thread-safe. */
int pasci_cluster_key(const pasci_key **out, char *err, size_t errlen);

/* Warns, once per process, when there is no cluster key: for the ones
 * that open ports or connect (a server's start, the chief's strategy),
 * not a --help, and not where mutual TLS authenticates every peer (a
 * tls+tcp server; a chief whose tasks are all tls+tcp). Thread-safe. */
void pasci_cluster_key_warn_if_open(void);

/* Sets this process's cluster key (NULL: none), replacing whatever was
 * loaded: for tests and embedders that hold the secret themselves. Call
 * before opening servers or clients; the key is copied. Thread-safe. */
void pasci_cluster_key_set(const pasci_key *key);

/* Where this process's cluster key came from, for messages (never the
 * key itself): "the key file PATH (PASCO_KEY_FILE or --key-file)", "a key
 * the program set" or "no key (...)"; written into buf, which is
 * returned. Thread-safe. */
const char *pasci_cluster_key_source(char *buf, size_t len);

/* Forgets the key loaded or set, so that the next pasci_cluster_key reads
 * PASCO_KEY_FILE again: for tests that play tasks of two keys in one
 * process. Thread-safe. */
void pasci_cluster_key_forget(void);

#endif
