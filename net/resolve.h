/*
 * Name lookups with a deadline. getaddrinfo has no time limit (a busy host's
 * name service was seen to hold a worker's first bulk connection for 20 s),
 * so every lookup of a task's name runs on a thread of its own, and the
 * caller waits for it only as long as it chose: a lookup past its deadline
 * is abandoned (its thread ends, and frees it, whenever getaddrinfo
 * returns). Numeric addresses are converted at once, with no thread.
 *
 * The address taken is the first IPv4 or IPv6 one, with the hints nng's
 * own resolver uses (SOCK_STREAM, any family), so a name resolves here to
 * the address nng would dial.
 */
#ifndef PASCI_RESOLVE_H
#define PASCI_RESOLVE_H

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* One lookup's address. */
typedef struct pasci_sockaddr {
	struct sockaddr_storage sa;
	socklen_t               len;
} pasci_sockaddr;

typedef struct pasci_lookup pasci_lookup;

/* Starts looking up host, port (a number) for TCP; flags are added to the
 * hints (AI_PASSIVE for a listener). *out is the lookup, released with
 * pasci_lookup_release. PASCO_ENOMEM, or PASCO_EIO when no thread can be
 * started (detail says so). Thread-safe. */
int pasci_lookup_start(pasci_lookup **out, const char *host, const char *port,
    int flags, char *detail, size_t len);

/* Waits up to timeout_ms (0: only looks) for l's answer. PASCO_OK with
 * *addr; PASCO_ETIMEDOUT while there is none yet (l can be waited for
 * again); PASCO_ENOTFOUND when the name does not resolve, with detail
 * naming the host and why. Thread-safe. */
int pasci_lookup_wait(pasci_lookup *l, int64_t timeout_ms,
    pasci_sockaddr *addr, char *detail, size_t len);

/* Drops the caller's hold on l; a lookup still running is abandoned and
 * freed by its thread when getaddrinfo returns. NULL is a no-op. */
void pasci_lookup_release(pasci_lookup *l);

/* Looks host up with a deadline of timeout_ms: pasci_lookup_start, wait and
 * release. PASCO_ETIMEDOUT with detail naming the host and the deadline
 * when the name service has not answered by then. Thread-safe; blocks up
 * to timeout_ms. */
int pasci_resolve(const char *host, const char *port, int flags,
    int64_t timeout_ms, pasci_sockaddr *addr, char *detail, size_t len);

/* Whether host is a numeric IPv4 or IPv6 address (no lookup needed). */
bool pasci_host_is_numeric(const char *host);

/* The numeric form of addr's host into buf (IPv6 without brackets) and its
 * port into *port. */
void pasci_sockaddr_host(
    const pasci_sockaddr *addr, char *buf, size_t len, int *port);

/* The lookup function used instead of getaddrinfo (NULL: getaddrinfo
 * again), for tests of a name service that does not answer. Its results
 * are freed with freeaddrinfo. Not thread-safe with lookups. */
typedef int (*pasci_lookup_fn)(const char *host, const char *port,
    const struct addrinfo *hints, struct addrinfo **res);
void pasci_resolve_set_lookup(pasci_lookup_fn fn);

#endif
