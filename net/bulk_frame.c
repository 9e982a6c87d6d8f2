/*
 * Frame I/O for bulk connections (see bulk_frame.h). Writes gather a
 * frame's head and its tensors' own memory into one sendmsg (IOV_CHUNK
 * iovecs at a time), or on a local link copy them into its region; reads
 * go straight into the buffer the received tensors will view (from the
 * socket, or copied out of the peer's region). Each function works on one
 * link, on its caller's thread, and blocks at most until its deadline.
 */
#include "bulk_frame.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "auth.h"
#include "bufcache.h"
#include "bulk_shm.h"
#include "metrics_registry.h"
#include "util.h"

#define SHM_BIT (1ull << 63) /* a length word's: the body is by region */
#define HALF (PASCI_BULK_REGION / 2)

/* A frame longer than 64 GB is garbage. */
#define IOV_CHUNK 512 /* iovecs per sendmsg */

/* Waits until fd is ready for events or the deadline passes. */
int
pasci_bulk_wait_fd(int fd, short events, int64_t deadline_ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	for (;;) {
		int64_t left = deadline_ms == PASCI_BULK_NO_DEADLINE
		                   ? -1
		                   : deadline_ms - pasci_now_ms();
		if (deadline_ms != PASCI_BULK_NO_DEADLINE && left <= 0) {
			return PASCO_ETIMEDOUT;
		}
		int n = poll(&p, 1, left > 1000000 ? 1000000 : (int) left);
		if (n > 0) {
			return PASCO_OK;
		}
		if (n < 0 && errno != EINTR) {
			return PASCO_EUNAVAILABLE;
		}
	}
}

void
pasci_bulk_link_init(pasci_bulk_link *l, int fd, bool local)
{
	*l = (pasci_bulk_link){.fd = fd, .local = local, .tx_fd = -1};
}

void
pasci_bulk_link_fini(pasci_bulk_link *l)
{
	if (l->fd >= 0) {
		close(l->fd);
	}
	if (l->tx_fd >= 0) {
		close(l->tx_fd);
	}
	pasci_bulk_region_unmap(l->tx);
	pasci_bulk_region_unmap(l->rx);
	pasci_bulk_link_init(l, -1, false);
}

/* Sends every byte of iov[0..n) (advancing it). */
static int
send_iov(int fd, struct iovec *iov, size_t n, int64_t deadline_ms)
{
	while (n > 0) {
		struct msghdr mh = {.msg_iov = iov,
		    .msg_iovlen              = n > IOV_CHUNK ? IOV_CHUNK : n};
		ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			int rv;
			if (errno == EINTR) {
				continue;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				return PASCO_EUNAVAILABLE;
			}
			if ((rv = pasci_bulk_wait_fd(
			         fd, POLLOUT, deadline_ms)) != 0) {
				return rv;
			}
			continue;
		}
		while (n > 0 && (size_t) k >= iov->iov_len) {
			k -= (ssize_t) iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *) iov->iov_base + k;
			iov->iov_len -= (size_t) k;
		}
	}
	return PASCO_OK;
}

/* Waits until fd is readable: a spin first where the link's owner asked
 * for one (a client's reply, bulk_spin.c), then poll. */
static int
wait_readable(int fd, bool spin, int64_t deadline_ms)
{
	if (spin && pasci_bulk_spin_ready(&fd, 1)) {
		return PASCO_OK;
	}
	return pasci_bulk_wait_fd(fd, POLLIN, deadline_ms);
}

static int
recv_all_spin(int fd, void *buf, size_t len, bool spin, int64_t deadline_ms)
{
	char *p = buf;
	while (len > 0) {
		ssize_t k = recv(fd, p, len, MSG_DONTWAIT);
		if (k > 0) {
			p += k;
			len -= (size_t) k;
			continue;
		}
		if (k == 0) {
			return PASCO_EUNAVAILABLE; /* closed */
		}
		if (errno == EINTR) {
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			return PASCO_EUNAVAILABLE;
		}
		int rv = wait_readable(fd, spin, deadline_ms);
		if (rv != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

static int
recv_all(int fd, void *buf, size_t len, int64_t deadline_ms)
{
	return recv_all_spin(fd, buf, len, false, deadline_ms);
}

/* Sends the length word w, with this end's region's fd the first time
 * (a region frame's), as one message. */
static int
send_word(pasci_bulk_link *l, uint64_t w, int64_t deadline_ms)
{
	uint8_t buf[8];
	bool    pass = (w & SHM_BIT) != 0 && !l->tx_sent;
	union {
		struct cmsghdr h;
		char           space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec  iov = {buf, 8};
	struct msghdr mh  = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t       k;
	pasci_put_be(buf, w, 8);
	if (pass) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control    = &ctl;
		mh.msg_controllen = sizeof(ctl.space);
		ctl.h.cmsg_level  = SOL_SOCKET;
		ctl.h.cmsg_type   = SCM_RIGHTS;
		ctl.h.cmsg_len    = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &l->tx_fd, sizeof(int));
	}
	while ((k = sendmsg(l->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0) {
		int rv;
		if (errno == EINTR) {
			continue;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			return PASCO_EUNAVAILABLE;
		}
		if ((rv = pasci_bulk_wait_fd(l->fd, POLLOUT, deadline_ms)) !=
		    0) {
			return rv;
		}
	}
	if (pass) { /* the peer holds it now */
		close(l->tx_fd);
		l->tx_fd   = -1;
		l->tx_sent = true;
	}
	if ((size_t) k < 8) {
		iov.iov_base = buf + k;
		iov.iov_len  = 8 - (size_t) k;
		return send_iov(l->fd, &iov, 1, deadline_ms);
	}
	return PASCO_OK;
}

static int
send_byte(pasci_bulk_link *l, int64_t deadline_ms)
{
	uint8_t      one = 1;
	struct iovec iov = {&one, 1};
	return send_iov(l->fd, &iov, 1, deadline_ms);
}

static int
recv_byte(pasci_bulk_link *l, int64_t deadline_ms)
{
	uint8_t one;
	return recv_all(l->fd, &one, 1, deadline_ms);
}

/* Copies up to n bytes from iov[*at..niov) (advancing it) to dst; the
 * count copied. */
static size_t
gather(uint8_t *dst, size_t n, struct iovec *iov, size_t niov, size_t *at)
{
	size_t done = 0;
	while (done < n && *at < niov) {
		struct iovec *v = &iov[*at];
		size_t k = v->iov_len < n - done ? v->iov_len : n - done;
		memcpy(dst + done, v->iov_base, k);
		done += k;
		v->iov_base = (char *) v->iov_base + k;
		if ((v->iov_len -= k) == 0) {
			(*at)++;
		}
	}
	return done;
}

/* The frames this thread holds (bulk_frame.h), while holding. */
static _Thread_local bool            holding;
static _Thread_local size_t          nheld;
static _Thread_local pasci_bulk_held held[PASCI_BULK_HELD_MAX];

void
pasci_bulk_hold_start(void)
{
	holding = true;
	nheld   = 0;
}

size_t
pasci_bulk_hold_stop(pasci_bulk_held *out)
{
	size_t n = nheld;
	memcpy(out, held, n * sizeof(*out));
	holding = false;
	nheld   = 0;
	return n;
}

/* Keeps a frame of total bytes instead of writing it, when holding and
 * there is room: its length word w, then (inline) its body from
 * iov[1..n), or (in_region) none, the body being in l's region. Whether
 * it was kept. */
static bool
hold(pasci_bulk_link *l, uint64_t w, struct iovec *iov, size_t n,
    uint64_t total, bool in_region)
{
	size_t           len = 8 + (in_region ? 0 : (size_t) total), at = 1;
	pasci_bulk_held *h = &held[nheld];
	if (!holding || nheld == PASCI_BULK_HELD_MAX ||
	    (h->bytes = malloc(len)) == NULL) {
		return false;
	}
	pasci_put_be(h->bytes, w, 8);
	if (!in_region) {
		gather(h->bytes + 8, (size_t) total, iov, n, &at);
	}
	h->l        = l;
	h->len      = len;
	h->body     = in_region ? l->tx : h->bytes + 8;
	h->body_len = (size_t) total;
	h->err      = 0;
	nheld++;
	return true;
}

/* Sends a body of total bytes, iov[1..n), through l's region: at once when
 * it fits, else by halves (bulk_frame.h). */
static int
send_by_region(pasci_bulk_link *l, struct iovec *iov, size_t n, uint64_t total,
    int64_t deadline_ms)
{
	size_t at = 1, chunks;
	int    rv;
	if (total <= PASCI_BULK_REGION) {
		gather(l->tx, total, iov, n, &at);
		if (l->tx_sent &&
		    hold(l, total | SHM_BIT, iov, n, total, true)) {
			return PASCO_OK; /* its word written with the batch */
		}
		return send_word(l, total | SHM_BIT, deadline_ms);
	}
	chunks = (size_t) ((total + HALF - 1) / HALF);
	for (size_t i = 0; i < chunks; i++) {
		/* half i % 2 is free once the peer said it copied chunk i-2 */
		if (i >= 2 && (rv = recv_byte(l, deadline_ms)) != 0) {
			return rv;
		}
		gather(l->tx + (i % 2) * HALF, HALF, iov, n, &at);
		rv = i == 0 ? send_word(l, total | SHM_BIT, deadline_ms)
		            : send_byte(l, deadline_ms);
		if (rv != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

/* Sends a frame whose body, total bytes, is iov[1..n); iov[0] is the
 * length word's slot. */
static int
send_frame(pasci_bulk_link *l, struct iovec *iov, size_t n, uint64_t total,
    uint8_t word[8], int64_t deadline_ms)
{
	pasci_metric_add(PASCI_M_SENT_BYTES, total + 8);
	if (l->local && total >= PASCI_BULK_SHM_MIN &&
	    (l->tx != NULL || pasci_bulk_region_new(&l->tx_fd, &l->tx) == 0)) {
		return send_by_region(l, iov, n, total, deadline_ms);
	}
	if (total < PASCI_BULK_SHM_MIN &&
	    hold(l, total, iov, n, total, false)) {
		return PASCO_OK; /* written with the batch */
	}
	pasci_put_be(word, total, 8);
	iov[0] = (struct iovec){word, 8};
	return send_iov(l->fd, iov, n, deadline_ms);
}

int
pasci_bulk_send_body(
    pasci_bulk_link *l, const void *body, size_t len, int64_t deadline_ms)
{
	uint8_t      word[8];
	struct iovec iov[2] = {{0}, {(void *) body, len}};
	return send_frame(l, iov, 2, len, word, deadline_ms);
}

/* A frame from builder b: its head, then each tensor from its memory. */
int
pasci_bulk_send_builder(pasci_bulk_link *l, pasci_wire_builder *b,
    uint64_t incarnation, int64_t deadline_ms)
{
	static const uint8_t zeros[8];
	uint8_t              len[8], *head;
	size_t               head_len, total, n = 0;
	struct iovec        *iov;
	int                  rv;

	if ((rv = pasci_wire_encode_head(
	         b, incarnation, &head, &head_len, &total)) != 0) {
		return rv;
	}
	if ((iov = pasci_calloc(2 + 3 * b->ntensors, sizeof(*iov))) == NULL) {
		free(head);
		return PASCO_ENOMEM;
	}
	n++; /* the length word's */
	iov[n++] = (struct iovec){head, head_len};
	for (size_t i = 0; i < b->ntensors; i++) {
		const pasco_tensor *tail = pasci_wire_tensor_tail(b, i);
		size_t              used = b->tensors[i]->nbytes;
		size_t end = PASCI_PAD8(pasci_wire_tensor_bytes(b, i));
		if (used > 0) {
			iov[n++] = (struct iovec){b->tensors[i]->data, used};
		}
		if (tail != NULL &&
		    tail->nbytes > 0) { /* sent from its memory */
			iov[n++] = (struct iovec){tail->data, tail->nbytes};
			used += tail->nbytes;
		}
		if (end > used) {
			iov[n++] = (struct iovec){(void *) zeros, end - used};
		}
	}
	rv = send_frame(l, iov, n, total, len, deadline_ms);
	free(iov);
	free(head);
	return rv;
}

/* A frame whose body is msg's (a complete wire body). */
int
pasci_bulk_send_msg(pasci_bulk_link *l, nng_msg *msg, int64_t deadline_ms)
{
	uint8_t      len[8];
	struct iovec iov[2] = {{0}, {nng_msg_body(msg), nng_msg_len(msg)}};
	return send_frame(l, iov, 2, nng_msg_len(msg), len, deadline_ms);
}

/* Takes the fds one recvmsg brought into *passed (-1: none yet): more
 * than one region in all, or one after the region, is a bad frame
 * (PASCO_EPROTO, detail); every fd not kept is closed. */
static int
take_fds(const pasci_bulk_link *l, struct msghdr *mh, int *passed,
    char *detail, size_t len)
{
	int n = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
	     c                 = CMSG_NXTHDR(mh, c)) {
		size_t m;
		if (c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SCM_RIGHTS) {
			continue;
		}
		m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < m; i++, n++) {
			int fd;
			memcpy(
			    &fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*passed < 0 && n == 0) {
				*passed = fd;
			} else {
				close(fd);
			}
		}
	}
	if (n > 1 || (n == 1 && *passed < 0) ||
	    (mh->msg_flags & MSG_CTRUNC) != 0) {
		pasci_fmt(detail, len,
		    "the peer passed several file descriptors where one "
		    "region was expected");
		return PASCO_EPROTO;
	}
	if (n == 1 && l->rx != NULL) {
		pasci_fmt(detail, len,
		    "the peer passed a second shared-memory region");
		return PASCO_EPROTO;
	}
	return PASCO_OK;
}

/* Receives a length word into hdr; on a local link, a region passed with
 * it is mapped: one per connection, with the first frame in shared memory
 * (anything else is a bad frame, and every fd received is closed). */
static int
recv_word(pasci_bulk_link *l, uint8_t hdr[8], int64_t deadline_ms,
    char *detail, size_t len)
{
	size_t got    = 0;
	int    passed = -1, rv = PASCO_OK;
	if (!l->local) {
		return recv_all_spin(l->fd, hdr, 8, l->spin, deadline_ms);
	}
	while (got < 8 && rv == PASCO_OK) {
		union {
			struct cmsghdr h;
			char           space[CMSG_SPACE(4 * sizeof(int))];
		} ctl;
		struct iovec  iov = {hdr + got, 8 - got};
		struct msghdr mh  = {.msg_iov = &iov,
		     .msg_iovlen              = 1,
		     .msg_control             = &ctl,
		     .msg_controllen          = sizeof(ctl.space)};
		ssize_t       k =
		    recvmsg(l->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (k == 0) {
			rv = PASCO_EUNAVAILABLE;
		} else if (k > 0) {
			got += (size_t) k;
			rv = take_fds(l, &mh, &passed, detail, len);
		} else if (errno != EINTR) {
			rv = errno != EAGAIN && errno != EWOULDBLOCK
			         ? PASCO_EUNAVAILABLE
			         : wait_readable(l->fd, l->spin, deadline_ms);
		}
	}
	if (rv == PASCO_OK && passed >= 0) {
		if ((pasci_get_be(hdr, 8) & SHM_BIT) != 0) {
			return pasci_bulk_region_map(
			    passed, &l->rx, detail, len);
		}
		pasci_fmt(detail, len,
		    "the peer passed a region with a frame not in shared "
		    "memory");
		rv = PASCO_EPROTO;
	}
	if (passed >= 0) {
		close(passed);
	}
	return rv;
}

/* Copies a body of n bytes out of the peer's region into body: at once,
 * or by halves (bulk_frame.h). */
static int
recv_by_region(
    pasci_bulk_link *l, uint8_t *body, uint64_t n, int64_t deadline_ms)
{
	size_t chunks;
	int    rv;
	if (n <= PASCI_BULK_REGION) {
		memcpy(body, l->rx, n);
		return PASCO_OK;
	}
	chunks = (size_t) ((n + HALF - 1) / HALF);
	for (size_t i = 0; i < chunks; i++) {
		size_t k = i + 1 < chunks ? HALF : n - i * HALF;
		if (i >= 1 && (rv = recv_byte(l, deadline_ms)) != 0) {
			return rv;
		}
		memcpy(body + i * HALF, l->rx + (i % 2) * HALF, k);
		if (i + 2 < chunks && (rv = send_byte(l, deadline_ms)) != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

/* What the 8 bytes b that came where a frame's length was due are, when
 * they tell (into buf, returned): the key challenge of a server with a key
 * to a client without one, a TLS or nng handshake, text; NULL when they
 * do not. */
static const char *
stray_bytes(const uint8_t b[8], char *buf, size_t len)
{
	bool text = true;
	if (memcmp(b, PASCI_BULK_AUTH_MAGIC, 8) == 0) {
		return pasci_fmt(buf, len,
		    "the server asks for the cluster key, and this process "
		    "has none: give it the cluster's key file (--key-file or "
		    "PASCO_KEY_FILE)");
	}
	if (b[0] == 0x16 && b[1] == 0x03) {
		return pasci_fmt(buf, len,
		    "not a Pasco frame: a TLS handshake (a TLS peer on a "
		    "plain bulk port)");
	}
	if (b[0] == 0 && b[1] == 'S' && b[2] == 'P' && b[3] == 0) {
		return pasci_fmt(buf, len,
		    "not a Pasco frame: an nng (SP) handshake (an nng socket "
		    "dialled the bulk port, not the task's RPC port)");
	}
	for (int i = 0; i < 8; i++) {
		text = text && b[i] >= 0x20 && b[i] < 0x7f;
	}
	return text ? pasci_fmt(buf, len, "not a Pasco frame: text (\"%.8s\")",
	                  (const char *) b)
	            : NULL;
}

/* Receives one frame and decodes it (its tensors view the frame, in a
 * cached buffer when cached). */
int
pasci_bulk_recv_frame(pasci_bulk_link *l, pasci_wire_msg *m,
    int64_t deadline_ms, bool cached, char *detail, size_t len)
{
	uint8_t  hdr[8];
	uint64_t n;
	void    *body;
	bool     by_region;
	int      rv;

	memset(m, 0, sizeof(*m));
	if ((rv = recv_word(l, hdr, deadline_ms, detail, len)) != 0) {
		if (rv != PASCO_EPROTO) {
			pasci_fmt(detail, len, "%s",
			    rv == PASCO_ETIMEDOUT
			        ? "no reply before the deadline"
			        : "connection lost");
		}
		return rv;
	}
	n         = pasci_get_be(hdr, 8);
	by_region = (n & SHM_BIT) != 0 && l->local;
	if (by_region) {
		n &= ~SHM_BIT;
		if (l->rx == NULL) {
			pasci_fmt(detail, len,
			    "a frame in shared memory before any region was "
			    "passed");
			return PASCO_EPROTO;
		}
	}
	if (n > pasci_max_message_bytes() || n < PASCI_WIRE_PREFIX) {
		char what[200];
		if (stray_bytes(hdr, what, sizeof(what)) != NULL) {
			pasci_fmt(detail, len, "%s", what);
		} else {
			pasci_fmt(detail, len,
			    "bad frame length %llu (at most %zu bytes: "
			    "PASCO_MAX_MESSAGE_MB)",
			    (unsigned long long) n, pasci_max_message_bytes());
		}
		return PASCO_EPROTO;
	}
	if ((body = cached ? pasci_bufcache_alloc(n) : malloc(n)) == NULL) {
		pasci_fmt(detail, len, "out of memory for a %llu-byte frame",
		    (unsigned long long) n);
		return PASCO_ENOMEM;
	}
	rv = by_region ? recv_by_region(l, body, n, deadline_ms)
	               : recv_all(l->fd, body, n, deadline_ms);
	if (rv != 0) {
		(cached ? pasci_bufcache_free : free)(body);
		pasci_fmt(detail, len, "%s",
		    rv == PASCO_ETIMEDOUT ? "no reply before the deadline"
		                          : "connection lost mid-frame");
		return rv;
	}
	pasci_metric_add(PASCI_M_RECEIVED_BYTES, n + 8);
	return pasci_wire_decode_owned(
	    m, body, n, cached ? pasci_bufcache_free : free, detail, len);
}

static int
send_all(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
	struct iovec iov = {(void *) buf, len};
	return send_iov(fd, &iov, 1, deadline_ms);
}

int
pasci_bulk_send_bytes(
    pasci_bulk_link *l, const void *buf, size_t len, int64_t deadline_ms)
{
	return send_all(l->fd, buf, len, deadline_ms);
}

static int
auth_failed(int rv, char *detail, size_t len, const char *what)
{
	pasci_fmt(detail, len, "%s",
	    rv == PASCO_ETIMEDOUT ? "no answer to the cluster-key handshake"
	    : rv == PASCO_EUNAVAILABLE
	        ? "the connection closed during the cluster-key handshake "
	          "(the task stopped, or holds another key)"
	        : what);
	return rv;
}

int
pasci_bulk_auth_accept(int fd, const pasci_key *key, int64_t deadline_ms,
    char *detail, size_t len)
{
	uint8_t hello[8 + PASCI_AUTH_NONCE];
	uint8_t answer[PASCI_AUTH_NONCE + PASCI_AUTH_PROOF];
	uint8_t want[PASCI_AUTH_PROOF];
	int     rv;

	memcpy(hello, PASCI_BULK_AUTH_MAGIC, 8);
	pasci_auth_nonce(hello + 8);
	if ((rv = send_all(fd, hello, sizeof(hello), deadline_ms)) != 0 ||
	    (rv = recv_all(fd, answer, sizeof(answer), deadline_ms)) != 0) {
		return auth_failed(rv, detail, len, "");
	}
	pasci_auth_proof(key, false, hello + 8, answer, want);
	if (!pasci_equal_ct(want, answer + PASCI_AUTH_NONCE, sizeof(want))) {
		uint64_t n = pasci_get_be(answer, 8);
		char     what[200];
		return auth_failed(PASCO_EPRECONDITION, detail, len,
		    n >= PASCI_WIRE_PREFIX && n <= pasci_max_message_bytes()
		        ? "it sent a Pasco frame instead of the key's answer: "
		          "a client without the cluster key"
		    : stray_bytes(answer, what, sizeof(what)) != NULL
		        ? what
		        : "it did not prove the cluster key");
	}
	pasci_auth_proof(key, true, hello + 8, answer, want);
	if ((rv = send_all(fd, want, sizeof(want), deadline_ms)) != 0) {
		return auth_failed(rv, detail, len, "");
	}
	return PASCO_OK;
}

int
pasci_bulk_auth_connect(int fd, const pasci_key *key, int64_t deadline_ms,
    char *detail, size_t len)
{
	uint8_t hello[8 + PASCI_AUTH_NONCE];
	uint8_t answer[PASCI_AUTH_NONCE + PASCI_AUTH_PROOF];
	uint8_t proof[PASCI_AUTH_PROOF], want[PASCI_AUTH_PROOF];
	int     rv;

	if ((rv = recv_all(fd, hello, sizeof(hello), deadline_ms)) != 0) {
		return auth_failed(rv, detail, len, "");
	}
	if (memcmp(hello, PASCI_BULK_AUTH_MAGIC, 8) != 0) {
		return auth_failed(PASCO_EPRECONDITION, detail, len,
		    "the server did not ask for the cluster key");
	}
	pasci_auth_nonce(answer);
	pasci_auth_proof(
	    key, false, hello + 8, answer, answer + PASCI_AUTH_NONCE);
	if ((rv = send_all(fd, answer, sizeof(answer), deadline_ms)) != 0 ||
	    (rv = recv_all(fd, proof, sizeof(proof), deadline_ms)) != 0) {
		return auth_failed(rv, detail, len, "");
	}
	pasci_auth_proof(key, true, hello + 8, answer, want);
	if (!pasci_equal_ct(want, proof, sizeof(want))) {
		return auth_failed(PASCO_EPRECONDITION, detail, len,
		    "the server failed to prove the cluster key");
	}
	return PASCO_OK;
}
