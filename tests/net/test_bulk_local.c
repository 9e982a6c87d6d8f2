/*
 * Local bulk links (net/bulk_frame.c, net/bulk_shm.c): a client on the
 * server's host reaches its bulk port over a Unix socket and sends
 * frames of 16 KB or more through shared memory. Every size of frame
 * both ways, the switch that turns it off, the cluster key over it, and
 * a stranger on the Unix socket passing bad regions.
 */
#include "bulk_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bulk.h"
#include "bulk_frame.h"
#include "tensor_impl.h"
#include "util.h"

TestSuite(bulk_local, .timeout = 60);

/* "127.0.0.1:port @name": the server's TCP address and its advert's Unix
 * socket, as a client reading the advert builds it. */
static void
full_addr(const pasci_bulk_server *s, char *out, size_t len)
{
	const char *at = strstr(pasci_bulk_server_advert(s), " @");
	snprintf(
	    out, len, "%s%s", pasci_bulk_server_addr(s), at != NULL ? at : "");
}

/* Sends n floats (element i = i + seed) and checks the doubled reply. */
static int
round_trip(pasci_bulk_pool *pool, const char *addr, int64_t n, float seed)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	pasco_tensor      *t;
	char               detail[300];
	int                rv;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		((float *) t->data)[i] = (float) i + seed;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&b, t, NULL);
	rv = pasci_bulk_call(
	    pool, addr, 7, &b, 10000, &reply, detail, sizeof(detail));
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	if (rv != 0) {
		return rv;
	}
	cr_assert_eq(reply.ntensors, 1);
	cr_assert_eq(reply.tensors[0]->count, n);
	for (int64_t i = 0; i < n; i++) {
		float got = ((const float *) reply.tensors[0]->data)[i];
		cr_assert(got == 2 * ((float) i + seed),
		    "%lld floats: element %lld is %g", (long long) n,
		    (long long) i, (double) got);
	}
	pasci_wire_msg_fini(&reply);
	return PASCO_OK;
}

/* Sizes below, at and over the shared-memory threshold, one that fits
 * the 4 MB region, and bodies that take 3 and 6 halves of it. */
static const int64_t SIZES[] = {
    10, 3000, 5000, 900000, 1200000, 2500000, 2600000, 7, 4000};

Test(bulk_local, frames_of_every_size_cross_a_local_link_both_ways)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	char               addr[PASCI_RPC_ADVERT_MAX];
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, NULL));
	cr_assert_not_null(
	    strstr(pasci_bulk_server_advert(s), " @pasco-bulk-"),
	    "advert '%s'", pasci_bulk_server_advert(s));
	full_addr(s, addr, sizeof(addr));
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	for (size_t i = 0; i < sizeof(SIZES) / sizeof(SIZES[0]); i++) {
		PASCO_PASS(round_trip(pool, addr, SIZES[i], (float) i));
	}
	/* one connection, both ends' regions: each mapped read-write by its
	 * maker and read-only by its peer, all in this process */
	cr_assert_eq(mappings_of("/memfd:pasco-bulk"), 4,
	    "%d mappings of bulk regions", mappings_of("/memfd:pasco-bulk"));
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
	cr_assert_eq(mappings_of("/memfd:pasco-bulk"), 0);
}

/* One client thread: 30 round trips of sizes from SIZES on pool. */
typedef struct client_arg {
	pasci_bulk_pool *pool;
	const char      *addr;
	int              k;
} client_arg;

static void *
client_main(void *p)
{
	client_arg *a = p;
	for (int r = 0; r < 30; r++) {
		int64_t n = SIZES[(size_t) (r + a->k) % 7];
		PASCO_PASS(
		    round_trip(a->pool, a->addr, n, (float) (a->k * 100 + r)));
	}
	return NULL;
}

Test(bulk_local, several_links_at_once_keep_their_frames_apart)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	char               addr[PASCI_RPC_ADVERT_MAX];
	pthread_t          th[4];
	client_arg         args[4];
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, NULL));
	full_addr(s, addr, sizeof(addr));
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	for (int k = 0; k < 4; k++) {
		args[k] = (client_arg){pool, addr, k};
		cr_assert_eq(
		    pthread_create(&th[k], NULL, client_main, &args[k]), 0);
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
	}
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
}

Test(bulk_local, pasco_bulk_local_0_keeps_every_link_on_tcp)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	char               addr[PASCI_RPC_ADVERT_MAX];
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, NULL));
	full_addr(s, addr, sizeof(addr));
	/* a client that may not: TCP to a server that offers a Unix socket */
	setenv("PASCO_BULK_LOCAL", "0", 1);
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	PASCO_PASS(round_trip(pool, addr, 2500000, 1));
	cr_assert_eq(mappings_of("/memfd:pasco-bulk"), 0);
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
	/* a server that may not offers none */
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, NULL));
	cr_assert_null(strchr(pasci_bulk_server_advert(s), '@'), "advert '%s'",
	    pasci_bulk_server_advert(s));
	pasci_bulk_server_close(s);
}

Test(bulk_local, the_cluster_key_is_proved_over_the_unix_socket_too)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *right, *wrong;
	pasci_key          k = {.len = 20}, w = {.len = 20};
	char               addr[PASCI_RPC_ADVERT_MAX], *log;
	int                saved;
	memset(k.bytes, 3, k.len);
	memset(w.bytes, 4, w.len);
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, &k));
	full_addr(s, addr, sizeof(addr));
	PASCO_PASS(pasci_bulk_pool_create(&right, &k));
	PASCO_PASS(pasci_bulk_pool_create(&wrong, &w));
	PASCO_PASS(round_trip(right, addr, 900000, 2));
	cr_assert_eq(mappings_of("/memfd:pasco-bulk"), 4);
	saved = test_stderr_capture();
	PASCO_FAIL(round_trip(wrong, addr, 900000, 2), PASCO_ENOTFOUND);
	usleep(100 * 1000); /* the server's log line */
	log = test_stderr_take(saved);
	cr_assert_not_null(
	    strstr(log, "refused a bulk connection from pid "), "%s", log);
	cr_assert_not_null(strstr(log, " on this host"), "%s", log);
	free(log);
	pasci_bulk_pool_destroy(right);
	pasci_bulk_pool_destroy(wrong);
	pasci_bulk_server_close(s);
}

/* A raw connection to the server's Unix socket. */
static int
dial_unix(const pasci_bulk_server *s)
{
	struct sockaddr_un a;
	socklen_t          alen;
	int                fd = socket(AF_UNIX, SOCK_STREAM, 0);
	pasci_bulk_local_addr(
	    &a, &alen, strstr(pasci_bulk_server_advert(s), " @") + 2);
	cr_assert(connect(fd, (struct sockaddr *) &a, alen) == 0);
	return fd;
}

/* A memfd of size bytes, sealed with seals (0: none). */
static int
region(size_t size, int seals)
{
	int fd = memfd_create("stranger", MFD_ALLOW_SEALING);
	cr_assert(fd >= 0);
	cr_assert(ftruncate(fd, (off_t) size) == 0);
	if (seals != 0) {
		cr_assert(fcntl(fd, F_ADD_SEALS, seals) == 0);
	}
	return fd;
}

/* Sends a region frame's length word n with fds[0..nfds) passed, then
 * tail (ntail bytes), and waits for the server to hang up: the count of
 * bytes it sent back meanwhile. */
static ssize_t
dropped_after(const pasci_bulk_server *s, uint64_t n, const int *fds, int nfds,
    const void *tail, size_t ntail)
{
	uint8_t word[8];
	int     fd = dial_unix(s);
	union {
		struct cmsghdr h;
		char           space[CMSG_SPACE(8 * sizeof(int))];
	} ctl;
	struct iovec  iov = {word, 8};
	struct msghdr mh  = {.msg_iov = &iov, .msg_iovlen = 1};
	char          buf[64];
	ssize_t       got, total = 0;
	pasci_put_be(word, n | (1ull << 63), 8);
	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control    = &ctl;
		mh.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
		ctl.h.cmsg_level  = SOL_SOCKET;
		ctl.h.cmsg_type   = SCM_RIGHTS;
		ctl.h.cmsg_len    = CMSG_LEN((size_t) nfds * sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), fds, (size_t) nfds * sizeof(int));
	}
	cr_assert_eq(sendmsg(fd, &mh, MSG_NOSIGNAL), 8);
	if (ntail > 0) {
		cr_assert_eq(
		    send(fd, tail, ntail, MSG_NOSIGNAL), (ssize_t) ntail);
	}
	shutdown(fd, SHUT_WR);
	while ((got = recv(fd, buf, sizeof(buf), 0)) > 0) {
		total += got;
	}
	close(fd);
	return total;
}

Test(bulk_local, a_stranger_passing_bad_regions_is_dropped_and_leaks_nothing)
{
	const int          all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	char               addr[PASCI_RPC_ADVERT_MAX];
	int                before  = open_fds(), p[2], fds[3];
	uint8_t            tail[3] = {1, 1, 1};
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, NULL));
	full_addr(s, addr, sizeof(addr));
	/* a frame in shared memory with no region passed */
	cr_assert_eq(0, dropped_after(s, 100000, NULL, 0, NULL, 0));
	/* a pipe for a region */
	cr_assert(pipe(p) == 0);
	cr_assert_eq(0, dropped_after(s, 100000, &p[0], 1, NULL, 0));
	close(p[0]);
	close(p[1]);
	/* a memfd the stranger could shrink under the mapping (a fault) */
	fds[0] = region(PASCI_BULK_REGION, 0);
	cr_assert_eq(0, dropped_after(s, 100000, fds, 1, NULL, 0));
	close(fds[0]);
	/* sealed, but smaller than a region */
	fds[0] = region(PASCI_BULK_REGION / 4, all);
	cr_assert_eq(0, dropped_after(s, 100000, fds, 1, NULL, 0));
	close(fds[0]);
	/* a huge-page memfd (it could fault when huge pages run out), where
	 * this kernel makes one */
	fds[0] = memfd_create("stranger", MFD_HUGETLB | MFD_ALLOW_SEALING);
	if (fds[0] >= 0) {
		if (ftruncate(fds[0], PASCI_BULK_REGION) == 0 &&
		    fcntl(fds[0], F_ADD_SEALS, all) == 0) {
			cr_assert_eq(
			    0, dropped_after(s, 100000, fds, 1, NULL, 0));
		}
		close(fds[0]);
	}
	/* three good regions at once */
	for (int i = 0; i < 3; i++) {
		fds[i] = region(PASCI_BULK_REGION, all);
	}
	cr_assert_eq(0, dropped_after(s, 100000, fds, 3, NULL, 0));
	/* a good region, a length past any frame */
	cr_assert_eq(0, dropped_after(s, (1ull << 62), fds, 1, NULL, 0));
	/* a good region, a 10 MB frame whose halves are announced and then
	 * the stranger hangs up: the server answers at most its credits for
	 * the halves it copied out (one byte each), never a frame */
	cr_assert_leq(dropped_after(s, 10u << 20, fds, 1, tail, 1), 2);
	cr_assert_leq(dropped_after(s, 10u << 20, fds, 1, tail, 3), 3);
	for (int i = 0; i < 3; i++) {
		close(fds[i]);
	}
	/* members are still served, by region */
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	PASCO_PASS(round_trip(pool, addr, 2500000, 3));
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
	/* every fd the stranger passed was closed, every region unmapped */
	cr_assert_eq(
	    open_fds(), before, "%d fds open, %d before", open_fds(), before);
	cr_assert_eq(mappings_of("/memfd:"), 0);
}
