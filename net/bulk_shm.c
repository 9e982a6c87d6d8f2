/*
 * Shared-memory regions of local bulk links (see bulk_shm.h). The maker
 * seals its memfd against shrinking and growing (and further sealing)
 * before passing it: a peer that mapped it can then never touch a page
 * past its end, whatever the maker does later. A peer maps only a memfd
 * of ordinary shared memory (tmpfs): a huge-page one could fault when the
 * huge pages run out.
 */
#include "bulk_shm.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bulk_frame.h"
#include "util.h"

#define SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int
pasci_bulk_region_new(int *fd, uint8_t **map)
{
	int   f = memfd_create("pasco-bulk", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;
	if (f < 0) {
		return PASCO_EIO;
	}
	if (ftruncate(f, PASCI_BULK_REGION) != 0 ||
	    fcntl(f, F_ADD_SEALS, SEALS) != 0 ||
	    (p = mmap(NULL, PASCI_BULK_REGION, PROT_READ | PROT_WRITE,
	         MAP_SHARED, f, 0)) == MAP_FAILED) {
		close(f);
		return PASCO_EIO;
	}
	*fd  = f;
	*map = p;
	return PASCO_OK;
}

int
pasci_bulk_region_map(int fd, const uint8_t **map, char *detail, size_t len)
{
	struct stat   st;
	struct statfs fs;
	int           seals = fcntl(fd, F_GET_SEALS);
	void         *p     = MAP_FAILED;
	if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 ||
	    fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC) {
		pasci_fmt(detail, len,
		    "the peer's shared-memory region is not a memfd (of "
		    "ordinary pages) sealed against shrinking");
	} else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	           st.st_size != (off_t) PASCI_BULK_REGION) {
		pasci_fmt(detail, len,
		    "the peer's shared-memory region is not of %u bytes",
		    PASCI_BULK_REGION);
	} else if ((p = mmap(NULL, PASCI_BULK_REGION, PROT_READ, MAP_SHARED,
	                fd, 0)) == MAP_FAILED) {
		pasci_fmt(
		    detail, len, "cannot map the peer's shared-memory region");
	}
	close(fd);
	if (p == MAP_FAILED) {
		return PASCO_EPROTO;
	}
	*map = p;
	return PASCO_OK;
}

void
pasci_bulk_region_unmap(const void *map)
{
	if (map != NULL) {
		munmap((void *) map, PASCI_BULK_REGION);
	}
}
