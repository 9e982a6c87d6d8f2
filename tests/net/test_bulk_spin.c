/*
 * The spin before a bulk client's reply wait sleeps (net/bulk_spin.c): a
 * client's reply wait, over a local link and over TCP, consults it; a
 * descriptor that becomes readable while the thread spins is had without
 * a sleep, where a timer (not a thread the machine's load could hold
 * back) makes it readable; a thread that may run on one CPU only never
 * spins; spins that keep missing stop for a while.
 */
#include "bulk_test.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "bulk.h"
#include "bulk_frame.h"
#include "tensor_impl.h"
#include "util.h"

TestSuite(bulk_spin, .timeout = 60);

/* "127.0.0.1:port @name" (local: through the Unix socket the advert
 * names), or the TCP address alone. */
static void
server_addr(const pasci_bulk_server *s, bool local, char *out, size_t len)
{
	const char *at = strstr(pasci_bulk_server_advert(s), " @");
	snprintf(out, len, "%s%s", pasci_bulk_server_addr(s),
	    local && at != NULL ? at : "");
}

/* One call of 10 floats, its doubled reply checked. */
static void
call_once(pasci_bulk_pool *pool, const char *addr)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	pasco_tensor      *t;
	char               detail[300];
	int64_t            n = 10;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		((float *) t->data)[i] = (float) i;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
	pasci_wire_add_tensor(&b, t, NULL);
	PASCO_PASS(pasci_bulk_call(
	    pool, addr, 7, &b, 10000, &reply, detail, sizeof(detail)));
	pasci_wire_builder_fini(&b);
	pasco_tensor_release(t);
	cr_assert_eq(reply.ntensors, 1);
	cr_assert(((const float *) reply.tensors[0]->data)[9] == 18.0f);
	pasci_wire_msg_fini(&reply);
}

/* This thread's voluntary context switches (its sleeps). */
static long
thread_sleeps(void)
{
	struct rusage u;
	cr_assert_eq(getrusage(RUSAGE_THREAD, &u), 0);
	return u.ru_nvcsw;
}

static int
cpus_here(void)
{
	cpu_set_t set;
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	return CPU_COUNT(&set);
}

#define CALLS 200

/* Doubles the request's tensors after 200 us of work: the client is
 * waiting by then. */
static nng_msg *
busy_double(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	int64_t end = pasci_now_ns() + 200000;
	(void) arg;
	while (pasci_now_ns() < end) {
	}
	add_doubled(req, b);
	return NULL;
}

/* The voluntary switches of CALLS calls to s, after a warm-up. */
static long
sleeps_over_calls(pasci_bulk_server *s, bool local)
{
	pasci_bulk_pool *pool;
	char             addr[PASCI_RPC_ADVERT_MAX];
	long             before;
	server_addr(s, local, addr, sizeof(addr));
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	for (int i = 0; i < 20; i++) {
		call_once(pool, addr);
	}
	before = thread_sleeps();
	for (int i = 0; i < CALLS; i++) {
		call_once(pool, addr);
	}
	before = thread_sleeps() - before;
	pasci_bulk_pool_destroy(pool);
	return before;
}

/* The spins of this thread's waits so far. */
static uint64_t
spins_run(void)
{
	pasci_spin_stats st = pasci_bulk_spin_stats();
	return st.hits + st.misses + st.skipped;
}

Test(bulk_spin, a_clients_reply_wait_spins_first_over_both_links)
{
	pasci_bulk_server *s;
	long               sleeps;
	if (cpus_here() < 2) {
		cr_skip_test("one CPU here: a spin would take the server's");
	}
	setenv("PASCO_BULK_LOCAL", "1", 1);
	setenv("PASCO_BULK_SPIN_US", "1000", 1);
	PASCO_PASS(pasci_bulk_server_open(
	    &s, "127.0.0.1", 7, busy_double, NULL, NULL));
	for (int local = 1; local >= 0; local--) {
		uint64_t before = spins_run();
		sleeps          = sleeps_over_calls(s, local);
		/* each reply is 200 us away when the client looks: its wait
		 * consults the spin (which runs, or backs off on a machine
		 * too busy to give the server a CPU at once) */
		cr_assert_geq(spins_run() - before, CALLS / 2,
		    "%llu of %d reply waits spun (%s link, %ld sleeps)",
		    (unsigned long long) (spins_run() - before), CALLS,
		    local ? "local" : "TCP", sleeps);
	}
	pasci_bulk_server_close(s);
}

/* A descriptor that becomes readable us microseconds from now, by a
 * timer, with no thread to schedule. */
static int
readable_in(long us)
{
	int               fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	struct itimerspec t  = {.it_value = {.tv_sec = us / 1000000,
	                            .tv_nsec         = us % 1000000 * 1000}};
	cr_assert_geq(fd, 0);
	cr_assert_eq(timerfd_settime(fd, 0, &t, NULL), 0);
	return fd;
}

Test(bulk_spin, a_socket_readable_within_the_spin_is_had_without_sleeping)
{
	long before;
	int  hits = 0;
	if (cpus_here() < 2) {
		cr_skip_test("one CPU here: no spin");
	}
	pasci_bulk_spin_set_us(1000);
	before = thread_sleeps();
	for (int i = 0; i < 50; i++) {
		int fd[2] = {readable_in(100), readable_in(150)};
		hits += pasci_bulk_spin_ready(fd, 2);
		close(fd[0]);
		close(fd[1]);
	}
	cr_assert_eq(hits, 50, "%d of 50 spins saw both timers", hits);
	cr_assert_eq(pasci_bulk_spin_stats().hits, 50);
	/* a preemption is not a sleep: a spinning thread never sleeps */
	cr_assert_eq(thread_sleeps() - before, 0);
	pasci_bulk_spin_set_us(0);
	int fd = readable_in(1);
	usleep(1000);
	cr_assert(!pasci_bulk_spin_ready(&fd, 1), "spun with 0 us");
	close(fd);
}

Test(bulk_spin, spins_that_keep_missing_back_off)
{
	if (cpus_here() < 2) {
		cr_skip_test("one CPU here: no spin to back off from");
	}
	pasci_bulk_spin_set_us(100);
	for (int i = 0; i < 40; i++) {
		int fd = readable_in(10000000);
		cr_assert(!pasci_bulk_spin_ready(&fd, 1));
		close(fd);
	}
	/* misses at waits 1, 4, 9, 18 and 35 (skipping 2, 4, ... 32 after
	 * each), not one spin per wait (the timers, 10 s away, never fire:
	 * a spinner preempted past its end could otherwise see one) */
	pasci_spin_stats st = pasci_bulk_spin_stats();
	cr_assert_eq(st.misses, 5, "%llu spins missed of 40",
	    (unsigned long long) st.misses);
	cr_assert_eq(st.skipped, 35);
	/* and one that sees its socket starts over */
	for (int i = 0; i < 64; i++) {
		int fd = readable_in(1);
		usleep(100);
		(void) pasci_bulk_spin_ready(&fd, 1);
		close(fd);
	}
	st = pasci_bulk_spin_stats();
	cr_assert_gt(st.hits, 0);
	int fd = readable_in(10000000);
	cr_assert(!pasci_bulk_spin_ready(&fd, 1));
	close(fd);
	cr_assert_eq(pasci_bulk_spin_stats().misses, 6, "no spin after a hit");
}

Test(bulk_spin, a_thread_on_one_cpu_never_spins)
{
	pasci_bulk_server *s;
	pasci_bulk_pool   *pool;
	cpu_set_t          one;
	char               addr[PASCI_RPC_ADVERT_MAX];
	setenv("PASCO_BULK_SPIN_US", "1000", 1);
	PASCO_PASS(
	    pasci_bulk_server_open(&s, "127.0.0.1", 7, double_it, NULL, NULL));
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	server_addr(s, true, addr, sizeof(addr));
	PASCO_PASS(pasci_bulk_pool_create(&pool, NULL));
	for (int i = 0; i < 50; i++) {
		call_once(pool, addr);
	}
	pasci_spin_stats st = pasci_bulk_spin_stats();
	cr_assert_eq(st.hits + st.misses, 0, "%llu spins on one CPU",
	    (unsigned long long) (st.hits + st.misses));
	cr_assert_gt(st.one_cpu, 0, "no reply was waited for");
	pasci_bulk_pool_destroy(pool);
	pasci_bulk_server_close(s);
}
