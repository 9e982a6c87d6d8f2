/*
 * The fault tests' name service: names ending in ".test" resolve through
 * the file FT_HOSTS names ("ADDRESS NAME" lines, read at every lookup, so
 * the test moves a task by rewriting it), as a cluster's DNS would; a
 * ".test" name not in it does not resolve. Other names are getaddrinfo's.
 * Installed with pasci_resolve_set_lookup by the test (the chief) and by
 * node.c (workers and ps tasks). Header-only: each is one program.
 */
#ifndef PASCO_TEST_FAULTS_HOSTS_H
#define PASCO_TEST_FAULTS_HOSTS_H

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

static inline int
ft_hosts_lookup(const char *host, const char *port,
    const struct addrinfo *hints, struct addrinfo **res)
{
	const char *path = getenv("FT_HOSTS");
	size_t      n    = strlen(host);
	char        line[512], addr[256], name[256];
	FILE       *f;
	int         rv = EAI_NONAME;

	if (n < 5 || strcmp(host + n - 5, ".test") != 0) {
		return getaddrinfo(host, port, hints, res);
	}
	if (path == NULL || (f = fopen(path, "r")) == NULL) {
		return EAI_NONAME;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%255s %255s", addr, name) == 2 &&
		    strcmp(name, host) == 0) {
			struct addrinfo h = *hints;
			h.ai_flags |= AI_NUMERICHOST;
			rv = getaddrinfo(addr, port, &h, res);
			break;
		}
	}
	fclose(f);
	return rv;
}

/* Installs the lookup when FT_HOSTS is set. */
static inline void
ft_hosts_install(void)
{
	if (getenv("FT_HOSTS") != NULL) {
		pasci_resolve_set_lookup(ft_hosts_lookup);
	}
}

#endif
