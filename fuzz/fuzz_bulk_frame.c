/*
 * Fuzz target: one bulk frame received by pasci_bulk_recv_frame
 * (net/bulk_frame.c), on a local link (a Unix socket, whose frames may
 * come through the sender's shared-memory region, bulk_frame.h) or on a
 * TCP-like one, from a peer that sends whatever the input says over a
 * socketpair and then shuts its side down (the receiver sees EOF rather
 * than waiting).
 *
 * Input:
 *   byte 0       flags: 1 pass a region with the length word (SCM_RIGHTS),
 *                2 the link is local, 4 the region is not sealed,
 *                8 the region is half PASCI_BULK_REGION (sealed),
 *                16 its fd passed twice in one message,
 *                32 the word sent in two pieces (3 bytes, with the region,
 *                then 5), 64 a (good) region passed with the first byte
 *                after the word, 128 /dev/null passed for the region
 * bytes 1..8     the length word as sent
 * bytes 9..10    R, big-endian
 * R bytes        the start of the region (when one is passed; the rest
 *                stays zero)
 * the rest       what follows the word on the socket (at most 64 KB)
 *
 * Checks: a frame that decodes has a header, its incarnation and each
 * tensor's bytes are the body's (the tail, or the region as the receiver
 * copies it, half by half), inside it; a refused one leaves the message
 * empty with a detail. Only a good region is ever mapped, and after the
 * link's fini no region is mapped and no fd is left open (the lowest free
 * fd number is the same as before the input). The good region is one
 * memfd kept for every input (its first bytes rewritten each time), the
 * bad ones are made for the input.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bulk_frame.h"
#include "fuzz_util.h"
#include "util.h"
#include "wire.h"

#define F_REGION 1
#define F_LOCAL 2
#define F_UNSEALED 4
#define F_SMALL 8
#define F_TWICE 16
#define F_SPLIT 32
#define F_TAIL_FD 64
#define F_DEVNULL 128

#define SHM_BIT (1ull << 63)
#define HALF (PASCI_BULK_REGION / 2)
#define MAX_TAIL 65536
#define REGION_NAME "pasco-fuzz-region"

static const uint8_t zeros[65536];

/* What the receiver was sent: the region's first bytes, and the tail. */
typedef struct sent {
	const uint8_t *region; /* the rest of the region is zero */
	size_t         nregion;
	const uint8_t *tail;
	size_t         ntail;
	bool           by_region;
} sent;

/* Compares p[0..k) with the region's bytes [r, r + k). */
static bool
region_equal(const sent *s, size_t r, const uint8_t *p, size_t k)
{
	size_t i = 0;
	if (r < s->nregion) {
		size_t c = s->nregion - r < k ? s->nregion - r : k;
		if (memcmp(p, s->region + r, c) != 0) {
			return false;
		}
		i = c;
	}
	while (i < k) { /* zeros: memcmp, fast under the sanitizers */
		size_t c = k - i < sizeof(zeros) ? k - i : sizeof(zeros);
		if (memcmp(p + i, zeros, c) != 0) {
			return false;
		}
		i += c;
	}
	return true;
}

/* Compares p[0..k) with the body's bytes [off, off + k): the tail's, or
 * the region's as the receiver copies it, whole or half by half. */
static bool
body_equal(const sent *s, size_t off, const uint8_t *p, size_t k)
{
	if (!s->by_region) {
		return off <= s->ntail && k <= s->ntail - off &&
		       (k == 0 || memcmp(p, s->tail + off, k) == 0);
	}
	while (k > 0) {
		size_t in = off % HALF, c = HALF - in < k ? HALF - in : k;
		if (!region_equal(s, (off / HALF) % 2 * HALF + in, p, c)) {
			return false;
		}
		off += c;
		p += c;
		k -= c;
	}
	return true;
}

/* The body's bytes [off, off + k) into p (the region's or the tail's). */
static void
body_read(const sent *s, size_t off, uint8_t *p, size_t k)
{
	for (size_t i = 0; i < k; i++, off++) {
		size_t r = (off / HALF) % 2 * HALF + off % HALF;
		if (!s->by_region) {
			p[i] = off < s->ntail ? s->tail[off] : 0;
		} else {
			p[i] = r < s->nregion ? s->region[r] : 0;
		}
	}
}

/* A decoded frame of n bytes: its header, incarnation and tensors are the
 * body's, each tensor inside it at its offset (wire.h's layout). */
static void
check_msg(const pasci_wire_msg *m, const sent *s, uint64_t n)
{
	uint8_t prefix[PASCI_WIRE_PREFIX];
	size_t  off;
	FUZZ_CHECK(n >= PASCI_WIRE_PREFIX);
	body_read(s, 0, prefix, sizeof(prefix));
	off = PASCI_PAD8(
	    PASCI_WIRE_PREFIX + (size_t) pasci_get_be(prefix + 8, 4));
	FUZZ_CHECK(m->hdr != NULL && m->hdr->name != NULL &&
	           m->hdr->error != NULL && m->hdr->json != NULL);
	FUZZ_CHECK(m->incarnation == pasci_get_be(prefix, 8));
	for (size_t i = 0; i < m->ntensors; i++) {
		const pasco_tensor *t = m->tensors[i];
		FUZZ_CHECK(t != NULL && off <= n && t->nbytes <= n - off);
		FUZZ_CHECK(
		    t->nbytes == 0 || body_equal(s, off, t->data, t->nbytes));
		off += PASCI_PAD8(t->nbytes);
	}
}

/* The lowest fd number free now. */
static int
lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
	}
	return fd;
}

/* Mappings of this target's regions in this process. */
static int
region_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char  line[512];
	int   n = 0;
	if (f == NULL) {
		return 0;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		n += strstr(line, "/memfd:" REGION_NAME) != NULL;
	}
	fclose(f);
	return n;
}

/* A memfd of size bytes starting with data[0..n) (the rest zero), sealed
 * as a sender's region unless not sealed; -1 when it cannot be made. */
static int
make_region(size_t size, bool sealed, const uint8_t *data, size_t n)
{
	int fd = memfd_create(REGION_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		return -1;
	}
	if (n > size) {
		n = size;
	}
	if (ftruncate(fd, (off_t) size) != 0 ||
	    (n > 0 && pwrite(fd, data, n, 0) != (ssize_t) n) ||
	    (sealed && fcntl(fd, F_ADD_SEALS,
	                   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A good region kept from input to input (a fresh memfd's pages cost
 * more than the rest of a run), and how much of its start was written
 * last: zeroed again before the next input writes its own. */
static int    good_region = -1;
static size_t good_dirty;

/* The good region starting with data[0..n); false when it cannot be
 * written. */
static bool
fill_good_region(const uint8_t *data, size_t n)
{
	if (good_dirty > 0 && pwrite(good_region, zeros, good_dirty, 0) !=
	                          (ssize_t) good_dirty) {
		return false;
	}
	good_dirty = n;
	return n == 0 || pwrite(good_region, data, n, 0) == (ssize_t) n;
}

/* Sends data[0..n) with nfds of fds (0: none) as one message; false when
 * not all of it went. */
static bool
send_with(int fd, const uint8_t *data, size_t n, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char           space[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec  iov = {(void *) data, n};
	struct msghdr mh  = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control    = &ctl;
		mh.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
		ctl.h.cmsg_level  = SOL_SOCKET;
		ctl.h.cmsg_type   = SCM_RIGHTS;
		ctl.h.cmsg_len    = CMSG_LEN((size_t) nfds * sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), fds, (size_t) nfds * sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t) n;
}

/* One input with the sockets made: sends it from peer, receives it on a
 * link over mine and checks what came out. */
static void
exchange(int mine, int peer, uint8_t flags, uint64_t word, sent *s)
{
	bool local = (flags & F_LOCAL) != 0;
	bool pass  = (flags & F_REGION) != 0;
	bool good =
	    pass && local &&
	    (flags & (F_UNSEALED | F_SMALL | F_TWICE | F_DEVNULL)) == 0;
	int             npass  = !pass ? 0 : (flags & F_TWICE) != 0 ? 2 : 1;
	int             region = -1, extra = -1, fds[2] = {-1, -1};
	uint8_t         w[8];
	pasci_bulk_link l;
	pasci_wire_msg  m;
	char            detail[256] = "";
	uint64_t        n;
	int             rv;

	pasci_put_be(w, word, 8);
	if (pass && (flags & (F_UNSEALED | F_SMALL | F_DEVNULL)) == 0) {
		if (!fill_good_region(s->region, s->nregion)) {
			close(mine);
			return;
		}
		fds[0] = fds[1] = good_region;
	} else if (pass) {
		region = (flags & F_DEVNULL) != 0
		             ? open("/dev/null", O_RDONLY | O_CLOEXEC)
		             : make_region((flags & F_SMALL) != 0
		                               ? PASCI_BULK_REGION / 2
		                               : PASCI_BULK_REGION,
		                   (flags & F_UNSEALED) == 0, s->region,
		                   s->nregion);
		if (region < 0) {
			close(mine);
			return;
		}
		fds[0] = fds[1] = region;
	}
	if ((flags & F_TAIL_FD) != 0 && s->ntail > 0) {
		extra = good_region; /* never to be mapped: read by recv */
	}
	pasci_bulk_link_init(&l, mine, local);
	/* a peer that cannot send it all: the receiver sees less */
	if ((flags & F_SPLIT) != 0) {
		(void) (send_with(peer, w, 3, fds, npass) &&
		        send_with(peer, w + 3, 5, NULL, 0));
	} else {
		(void) send_with(peer, w, 8, fds, npass);
	}
	if (s->ntail > 0) {
		(void) (send_with(peer, s->tail, 1, &extra, extra >= 0) &&
		        (s->ntail == 1 || send_with(peer, s->tail + 1,
		                              s->ntail - 1, NULL, 0)));
	}
	shutdown(peer, SHUT_WR);
	if (region >= 0) {
		close(region);
	}

	rv = pasci_bulk_recv_frame(
	    &l, &m, pasci_now_ms() + 2000, false, detail, sizeof(detail));
	s->by_region = local && (word & SHM_BIT) != 0;
	n            = s->by_region ? word & ~SHM_BIT : word;
	FUZZ_CHECK(l.rx == NULL || good);
	if (rv == PASCO_OK) {
		FUZZ_CHECK(!s->by_region || good);
		check_msg(&m, s, n);
		pasci_wire_msg_fini(&m);
	} else {
		FUZZ_CHECK(m.hdr == NULL && m.tensors == NULL &&
		           m.ntensors == 0 && m.priv == NULL);
		FUZZ_CHECK(detail[0] != 0);
	}
	pasci_bulk_link_fini(&l);
}

int
fuzz_bulk_frame_one(const uint8_t *data, size_t size)
{
	sent     s = {0};
	uint8_t  flags;
	uint64_t word;
	int      sv[2], before, big = 1 << 20;
	if (size < 11) {
		return 0;
	}
	flags     = data[0];
	word      = pasci_get_be(data + 1, 8);
	s.nregion = (size_t) pasci_get_be(data + 9, 2);
	if (s.nregion > size - 11) {
		s.nregion = size - 11;
	}
	s.region = data + 11;
	s.tail   = s.region + s.nregion;
	s.ntail  = size - 11 - s.nregion;
	if (s.ntail > MAX_TAIL) {
		s.ntail = MAX_TAIL;
	}
	if ((flags & F_REGION) == 0) { /* no region: nothing in it */
		s.nregion = 0;
	}

	if (good_region < 0 && (good_region = make_region(
	                            PASCI_BULK_REGION, true, NULL, 0)) < 0) {
		return 0;
	}
	before = lowest_free_fd();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		return 0;
	}
	/* the tail must fit in the socket's buffers before the receiver
	 * reads any */
	(void) setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) != 0) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	exchange(sv[0], sv[1], flags, word, &s);
	close(sv[1]);
	FUZZ_CHECK(lowest_free_fd() == before);
	if ((flags & (F_REGION | F_TAIL_FD)) != 0) {
		FUZZ_CHECK(region_maps() == 0);
	}
	return 0;
}

#ifndef PASCO_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_bulk_frame_one(data, size);
}
#endif
