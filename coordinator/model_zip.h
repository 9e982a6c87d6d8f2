/*
 * The zip archive of a saved model (Keras's .keras file: config.json,
 * metadata.json and the weights side by side): written with its entries
 * stored (the weights do not compress), read stored or deflated (a file
 * zipped again by another tool), every entry's CRC-32 checked. No zip64:
 * an entry or archive of 4 GiB or more is refused, naming it.
 */
#ifndef PASCI_MODEL_ZIP_H
#define PASCI_MODEL_ZIP_H

#include <stddef.h>

typedef struct pasci_zip_entry {
	const char *name;
	const void *data;
	size_t      len;
} pasci_zip_entry;

/* Writes the n entries to path atomically (a temporary file renamed over
 * it). PASCO_EINVAL for an entry too large for a zip without zip64,
 * PASCO_EIO for the write; err names the file. Thread-safe. */
int pasci_zip_write(const char *path, const pasci_zip_entry *e, size_t n,
    char *err, size_t errlen);

/* The bytes of entry `name` of the zip archive in buf (len bytes) into
 * *out (malloc'd, the caller's), *outlen its length. PASCO_ENOTFOUND
 * when the archive has no such entry, PASCO_EPROTO for an archive that is
 * not a zip, is damaged (a CRC-32 that does not match, an entry past its
 * end) or uses what is not read (zip64, encryption, a method other than
 * stored or deflated); err names what (`what`: the archive, for
 * messages). Thread-safe. */
int pasci_zip_entry_read(const void *buf, size_t len, const char *what,
    const char *name, void **out, size_t *outlen, char *err, size_t errlen);

#endif
