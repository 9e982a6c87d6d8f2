/*
 * The shared-memory regions of local bulk links (bulk_frame.h): a sealed
 * memfd of PASCI_BULK_REGION bytes, mapped read-write by the end that
 * made it and read-only by its peer, which checks what it was given
 * before it maps it.
 */
#ifndef PASCI_BULK_SHM_H
#define PASCI_BULK_SHM_H

#include <stddef.h>
#include <stdint.h>

/* A new region: *fd (to pass to the peer; close-on-exec) and its mapping.
 * PASCO_EIO (no memfd here, or no memory) leaves both unset. */
int pasci_bulk_region_new(int *fd, uint8_t **map);

/* Maps the region a peer passed as fd, read-only, and closes fd. It must
 * be a memfd of ordinary pages sealed against shrinking, of exactly
 * PASCI_BULK_REGION bytes: otherwise PASCO_EPROTO with detail saying
 * why. */
int pasci_bulk_region_map(
    int fd, const uint8_t **map, char *detail, size_t len);

/* Unmaps a region (either kind); NULL: nothing. */
void pasci_bulk_region_unmap(const void *map);

#endif
