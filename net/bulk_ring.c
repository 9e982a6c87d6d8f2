/*
 * The io_uring ring through which a thread writes a batch of bulk frames
 * (bulk_client.c, pasci_bulk_batch_send): one system call for the frames
 * to several servers, so that the servers they wake run once all are out.
 * Each thread has a ring of its own (STYLE: one ring per thread, never
 * shared), made at its first batch and closed when the thread ends
 * (a pthread key's destructor); where io_uring cannot be had (an old
 * kernel, a seccomp filter) the caller writes the frames one after the
 * other. Only the thread that owns a ring touches it.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>

#include "bulk_frame.h"

typedef struct batch_ring {
	struct io_uring ring;
	int             state; /* 0: not tried, 1: up, -1: none to be had */
} batch_ring;

static _Thread_local batch_ring ring;
static pthread_key_t            ring_key;
static pthread_once_t           ring_once = PTHREAD_ONCE_INIT;

static void
ring_close(void *arg)
{
	batch_ring *r = arg;
	if (r->state == 1) {
		io_uring_queue_exit(&r->ring);
	}
	r->state = -1;
}

static void
ring_key_make(void)
{
	(void) pthread_key_create(&ring_key, ring_close);
}

/* This thread's ring, made when first wanted, or NULL. */
static struct io_uring *
ring_get(void)
{
	if (ring.state == 0) {
		ring.state = -1;
		(void) pthread_once(&ring_once, ring_key_make);
		if (io_uring_queue_init(PASCI_BULK_HELD_MAX, &ring.ring,
		        IORING_SETUP_SUBMIT_ALL) == 0 ||
		    io_uring_queue_init(PASCI_BULK_HELD_MAX, &ring.ring, 0) ==
		        0) {
			ring.state = 1;
			(void) pthread_setspecific(ring_key, &ring);
		}
	}
	return ring.state == 1 ? &ring.ring : NULL;
}

/* Ends this thread's ring after a failed submission: SQEs it did not
 * take would otherwise go with the next batch. */
static void
ring_drop(void)
{
	ring_close(&ring);
	(void) pthread_setspecific(ring_key, NULL);
}

bool
pasci_bulk_ring_send(pasci_bulk_held *h, size_t n, ssize_t *done)
{
	struct io_uring     *r = ring_get();
	struct io_uring_cqe *cqe;
	int                  sub;
	if (r == NULL) {
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(r);
		/* MSG_DONTWAIT: a full socket answers -EAGAIN (the caller
		 * writes it then, with poll against its deadline), never
		 * waited for here */
		io_uring_prep_send(sqe, h[i].l->fd, h[i].bytes, h[i].len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		io_uring_sqe_set_data64(sqe, i);
		/* until the ring takes it: the caller writes it */
		done[i] = -EAGAIN;
	}
	sub = io_uring_submit(r);
	for (int i = 0; i < sub && (size_t) i < n; i++) {
		done[i] = -EIO; /* taken (in order): its completion says */
	}
	/* each submitted write's completion (at once: none waits) */
	for (int seen = 0; seen < sub;) {
		int rv = io_uring_wait_cqe(r, &cqe);
		if (rv == -EINTR) {
			continue;
		}
		if (rv != 0) {
			/* never seen here: the ring is dropped (no stale
			 * completion for the next batch), and a write taken
			 * but not seen stays -EIO: failed, its request with
			 * it, never written twice (a request run twice) */
			sub = -1;
			break;
		}
		if (io_uring_cqe_get_data64(cqe) < n) {
			done[io_uring_cqe_get_data64(cqe)] = cqe->res;
		}
		io_uring_cqe_seen(r, cqe);
		seen++;
	}
	if (sub != (int) n) {
		ring_drop(); /* SQEs not taken: -EAGAIN, the caller's */
	}
	return true;
}
