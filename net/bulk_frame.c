/*
 * Frame I/O for bulk connections (see bulk_frame.h). Writes gather a
 * frame's head and its tensors' own memory into one sendmsg (IOV_CHUNK
 * iovecs at a time); reads go straight into the buffer the received
 * tensors will view. Each function works on one fd, on its caller's
 * thread, and blocks at most until its deadline.
 */
#include "bulk_frame.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "auth.h"
#include "bufcache.h"
#include "util.h"

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

static int
recv_all(int fd, void *buf, size_t len, int64_t deadline_ms)
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
		int rv = pasci_bulk_wait_fd(fd, POLLIN, deadline_ms);
		if (rv != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

/* A frame from builder b: its head, then each tensor from its memory. */
int
pasci_bulk_send_builder(
    int fd, pasci_wire_builder *b, uint64_t incarnation, int64_t deadline_ms)
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
	if ((iov = calloc(2 + 3 * b->ntensors, sizeof(*iov))) == NULL) {
		free(head);
		return PASCO_ENOMEM;
	}
	pasci_put_be(len, total, 8);
	iov[n++] = (struct iovec){len, 8};
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
	rv = send_iov(fd, iov, n, deadline_ms);
	free(iov);
	free(head);
	return rv;
}

/* A frame whose body is msg's (a complete wire body). */
int
pasci_bulk_send_msg(int fd, nng_msg *msg, int64_t deadline_ms)
{
	uint8_t      len[8];
	struct iovec iov[2] = {
	    {len, 8}, {nng_msg_body(msg), nng_msg_len(msg)}};
	pasci_put_be(len, nng_msg_len(msg), 8);
	return send_iov(fd, iov, 2, deadline_ms);
}

/* Receives one frame and decodes it (its tensors view the frame, in a
 * cached buffer when cached). */
int
pasci_bulk_recv_frame(int fd, pasci_wire_msg *m, int64_t deadline_ms,
    bool cached, char *detail, size_t len)
{
	uint8_t  hdr[8];
	uint64_t n;
	void    *body;
	int      rv;

	memset(m, 0, sizeof(*m));
	if ((rv = recv_all(fd, hdr, 8, deadline_ms)) != 0) {
		pasci_fmt(detail, len, "%s",
		    rv == PASCO_ETIMEDOUT ? "no reply before the deadline"
		                          : "connection lost");
		return rv;
	}
	if ((n = pasci_get_be(hdr, 8)) > pasci_max_message_bytes() ||
	    n < PASCI_WIRE_PREFIX) {
		pasci_fmt(detail, len,
		    "bad frame length %llu (at most %zu bytes: "
		    "PASCO_MAX_MESSAGE_MB)",
		    (unsigned long long) n, pasci_max_message_bytes());
		return PASCO_EPROTO;
	}
	if ((body = cached ? pasci_bufcache_alloc(n) : malloc(n)) == NULL) {
		pasci_fmt(detail, len, "out of memory for a %llu-byte frame",
		    (unsigned long long) n);
		return PASCO_ENOMEM;
	}
	if ((rv = recv_all(fd, body, n, deadline_ms)) != 0) {
		(cached ? pasci_bufcache_free : free)(body);
		pasci_fmt(detail, len, "%s",
		    rv == PASCO_ETIMEDOUT ? "no reply before the deadline"
		                          : "connection lost mid-frame");
		return rv;
	}
	return pasci_wire_decode_owned(
	    m, body, n, cached ? pasci_bufcache_free : free, detail, len);
}

static int
send_all(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
	struct iovec iov = {(void *) buf, len};
	return send_iov(fd, &iov, 1, deadline_ms);
}

static int
auth_failed(int rv, char *detail, size_t len, const char *what)
{
	pasci_fmt(detail, len, "%s",
	    rv == PASCO_ETIMEDOUT ? "no answer to the cluster-key handshake"
	    : rv == PASCO_EUNAVAILABLE
	        ? "connection lost during the cluster-key handshake"
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
		return auth_failed(PASCO_EPRECONDITION, detail, len,
		    "it did not prove the cluster key");
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
