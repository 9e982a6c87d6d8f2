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
#include <poll.h>
#include <pthread.h>

#include "bulk_frame.h"
#include "util.h"

typedef struct batch_ring {
	struct io_uring ring;
	int             state; /* 0: not tried, 1: up, -1: none to be had */
	bool deferred;         /* completions wake it only when waited for */
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
		unsigned lazy =
		    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
		ring.state = -1;
		(void) pthread_once(&ring_once, ring_key_make);
		/* a deferring ring (Linux 6.1+) wakes a wait for several
		 * completions once, when they are all in */
		ring.deferred =
		    io_uring_queue_init(2 * PASCI_BULK_HELD_MAX, &ring.ring,
		        IORING_SETUP_SUBMIT_ALL | lazy) == 0;
		if (ring.deferred ||
		    io_uring_queue_init(2 * PASCI_BULK_HELD_MAX, &ring.ring,
		        IORING_SETUP_SUBMIT_ALL) == 0 ||
		    io_uring_queue_init(
		        2 * PASCI_BULK_HELD_MAX, &ring.ring, 0) == 0) {
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

bool
pasci_bulk_ring_defers(void)
{
	return ring_get() != NULL && ring.deferred;
}

/* Tags of a wait's requests: poll i, and the removal of poll i. */
#define POLL_TAG (1ull << 40)
#define REMOVE_TAG (2ull << 40)

/* Adds request tag to r: a poll for POLLIN on fd, or (fd < 0) the
 * removal of the poll tagged what. */
static void
ring_add_poll(struct io_uring *r, int fd, uint64_t what, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);
	if (fd >= 0) {
		io_uring_prep_poll_add(sqe, fd, POLLIN);
	} else {
		io_uring_prep_poll_remove(sqe, what);
	}
	io_uring_sqe_set_data64(sqe, tag);
}

int
pasci_bulk_ring_wait_all(const int *fds, size_t n, int64_t deadline_ms)
{
	struct io_uring         *r = ring_get();
	struct io_uring_cqe     *cqe;
	struct __kernel_timespec ts;
	bool                     done[PASCI_BULK_HELD_MAX] = {false};
	size_t                   polls = 0, removes = 0, removed = 0;
	bool                     removing = false;
	int64_t                  left     = deadline_ms - pasci_now_ms();

	if (r == NULL || !ring.deferred || n > PASCI_BULK_HELD_MAX) {
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		ring_add_poll(r, fds[i], 0, POLL_TAG | i);
	}
	if (io_uring_submit(r) != (int) n) {
		ring_drop(); /* closing it cancels what it took */
		return -1;
	}
	left = left < 0 ? 0 : left > 1000000 ? 1000000 : left;
	ts   = (struct __kernel_timespec){
	      .tv_sec = left / 1000, .tv_nsec = (left % 1000) * 1000000};
	/* one wake-up for all n (the deferring ring counts them before it
	 * wakes this thread), or the deadline */
	(void) io_uring_wait_cqes(r, &cqe, (unsigned) n, &ts, NULL);
	for (;;) {
		unsigned head, k = 0;
		io_uring_for_each_cqe(r, head, cqe)
		{
			/* a poll's: ready, or removed; others (liburing's
			 * own timeout, where the kernel takes none with the
			 * wait) are not counted */
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			if (tag >= POLL_TAG && tag < POLL_TAG + n &&
			    !done[tag - POLL_TAG]) {
				done[tag - POLL_TAG] = true;
				polls++;
			} else if (tag >= REMOVE_TAG && tag < REMOVE_TAG + n) {
				removed++;
			}
			k++;
		}
		io_uring_cq_advance(r, k);
		if (polls == n && removed == removes) {
			return 0;
		}
		if (!removing) { /* the deadline (or a signal): the rest out */
			removing = true;
			for (size_t i = 0; i < n; i++) {
				if (!done[i]) {
					ring_add_poll(r, -1, POLL_TAG | i,
					    REMOVE_TAG | i);
					removes++;
				}
			}
			if (io_uring_submit(r) != (int) removes) {
				ring_drop();
				return -1;
			}
		}
		int rv = io_uring_wait_cqe(r, &cqe);
		if (rv != 0 && rv != -EINTR) {
			ring_drop();
			return -1;
		}
	}
}
