/*
 * The connections an rpc server holds (net/conns.c) against strangers who
 * connect, say HELLO and then nothing: they get a handshake deadline and
 * their own cap, so a member (a process with the cluster key) is served
 * however many wait; and a member refused by the members' cap is told
 * that it was the cap. Real servers and clients over TCP loopback.
 */
#include "helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "auth.h"
#include "rpc.h"
#include "util.h"

TestSuite(conns, .timeout = 60);

static char url[64];

static nng_msg *
ok_handler(void *arg, const pasci_wire_msg *req)
{
	(void) arg;
	(void) req;
	return pasci_wire_status_reply(PASCO_OK, "%s", "");
}

static pasci_key
test_key(void)
{
	pasci_key k = {.len = 32};
	for (int i = 0; i < 32; i++) {
		k.bytes[i] = (uint8_t) (3 + 11 * i);
	}
	return k;
}

static pasci_rpc_server *
serve(const pasci_key *key)
{
	pasci_rpc_server *s;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", test_free_port());
	PASCO_PASS(pasci_rpc_server_open_with(
	    &s, url, 2, "pasco-ps", ok_handler, NULL, 0, NULL, key));
	return s;
}

/* A stranger: connects over plain TCP, does nng's SP handshake as a REQ
 * peer, says HELLO, reads the answer, then says nothing more (and, unlike
 * an nng socket, never redials once closed). Returns the socket, or -1
 * when it got no answer. */
static int
hello_only(void)
{
	static const unsigned char sp[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
	struct sockaddr_in         a     = {.sin_family = AF_INET};
	pasci_wire_builder         b;
	nng_msg                   *msg;
	unsigned char              hdr[8], buf[4096];
	uint64_t                   len;
	int                        fd = socket(AF_INET, SOCK_STREAM, 0),
	    port                      = atoi(strrchr(url, ':') + 1);
	struct timeval tv             = {.tv_sec = 2};
	a.sin_addr.s_addr             = htonl(INADDR_LOOPBACK);
	a.sin_port                    = htons((uint16_t) port);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *) &a, sizeof(a)) != 0 ||
	    write(fd, sp, 8) != 8 || read(fd, hdr, 8) != 8) {
		close(fd);
		return -1;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_HELLO);
	PASCO_PASS(pasci_wire_encode(&b, &msg));
	pasci_wire_builder_fini(&b);
	/* the frame: a 64-bit length, the request id, the body */
	len = 4 + nng_msg_len(msg);
	for (int i = 0; i < 8; i++) {
		buf[i] = (unsigned char) (len >> (56 - 8 * i));
	}
	memcpy(buf + 8, (unsigned char[]){0x80, 0, 0, 1}, 4);
	memcpy(buf + 12, nng_msg_body(msg), nng_msg_len(msg));
	cr_assert_lt(12 + nng_msg_len(msg), sizeof(buf));
	if (write(fd, buf, 12 + nng_msg_len(msg)) !=
	        (ssize_t) (12 + nng_msg_len(msg)) ||
	    read(fd, hdr, 8) != 8) {
		nng_msg_free(msg);
		close(fd);
		return -1;
	}
	nng_msg_free(msg);
	return fd; /* the reply's body is left unread */
}

static int
run_within(pasci_rpc_client *c, int64_t ms, char *err)
{
	pasci_wire_builder b;
	int                rv;
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN);
	rv = pasci_rpc_call(c, &b, ms, NULL, err, 512);
	pasci_wire_builder_fini(&b);
	return rv;
}

static int
run(pasci_rpc_client *c, char *err)
{
	return run_within(c, 5000, err);
}

#define NSTRANGERS 300

/* 300 strangers who said HELLO filled the cap of 256 for good, and the
 * real chief then failed ("is it the same key file?"). */
Test(conns, strangers_saying_hello_do_not_keep_a_member_out)
{
	pasci_key         k = test_key();
	pasci_rpc_server *s = serve(&k);
	pasci_rpc_client *c;
	static int        strangers[NSTRANGERS];
	char              err[512];
	int               answered = 0;
	int64_t           t0;
	for (int i = 0; i < NSTRANGERS; i++) {
		strangers[i] = hello_only();
		answered += strangers[i] >= 0;
	}
	cr_assert_geq(
	    answered, 256, "only %d strangers were answered", answered);
	cr_assert_leq(pasci_rpc_server_connections(s), 256);
	t0 = pasci_now_ms();
	PASCO_PASS(pasci_rpc_client_open_with(&c, url, NULL, NULL, &k));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	PASCO_PASS(run(c, err));
	cr_assert_lt(pasci_now_ms() - t0, 5000);
	/* more strangers do not push the member out */
	for (int i = 0; i < 50; i++) {
		close(strangers[i]);
		strangers[i] = hello_only();
	}
	PASCO_PASS(run(c, err));
	cr_assert_leq(pasci_rpc_server_connections(s), 256 + 1);
	pasci_rpc_client_close(c);
	for (int i = 0; i < NSTRANGERS; i++) {
		close(strangers[i]);
	}
	pasci_rpc_server_close(s);
}

/* With a key, a connection that has not proved it within the handshake
 * deadline (here the idle timeout, 1 s, being shorter) is closed, HELLO
 * or not; members stay however quiet. */
Test(conns, strangers_past_the_handshake_deadline_are_closed)
{
	pasci_key         k = test_key();
	pasci_rpc_server *s;
	pasci_rpc_client *c;
	int               strangers[20];
	char              err[512];
	int64_t           t0;
	setenv("PASCO_IDLE_TIMEOUT", "1", 1);
	s = serve(&k);
	unsetenv("PASCO_IDLE_TIMEOUT");
	PASCO_PASS(pasci_rpc_client_open_with(&c, url, NULL, NULL, &k));
	PASCO_PASS(pasci_rpc_client_wait_up(c, 5000));
	for (int i = 0; i < 20; i++) {
		cr_assert_geq(strangers[i] = hello_only(), 0);
	}
	cr_assert_eq(pasci_rpc_server_connections(s), 21);
	t0 = pasci_now_ms();
	while (pasci_rpc_server_connections(s) > 1 &&
	       pasci_now_ms() - t0 < 5000) {
		usleep(50 * 1000);
		pasci_rpc_server_sweep(s);
	}
	cr_assert_eq(pasci_rpc_server_connections(s), 1,
	    "%d connections held, 1 member", pasci_rpc_server_connections(s));
	PASCO_PASS(run(c, err));
	pasci_rpc_client_close(c);
	for (int i = 0; i < 20; i++) {
		close(strangers[i]);
	}
	pasci_rpc_server_close(s);
}

static void
member_refused_by_the_cap(const pasci_key *key)
{
	pasci_rpc_server *s;
	pasci_rpc_client *c[3];
	char              why[512], err[512];
	int64_t           t0;
	setenv("PASCO_MAX_CONNECTIONS", "2", 1);
	s = serve(key);
	unsetenv("PASCO_MAX_CONNECTIONS");
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(
		    pasci_rpc_client_open_with(&c[i], url, NULL, NULL, key));
		if (i < 2) {
			PASCO_PASS(pasci_rpc_client_wait_up(c[i], 5000));
		}
	}
	t0 = pasci_now_ms();
	while (!pasci_rpc_client_refused(c[2], why, sizeof(why)) &&
	       pasci_now_ms() - t0 < 5000) {
		usleep(20 * 1000);
	}
	cr_assert(
	    strstr(why, "the most allowed (PASCO_MAX_CONNECTIONS)") != NULL &&
	        strstr(why, "2 connections of cluster members") != NULL,
	    "the refusal says '%s'", why);
	cr_assert_neq(run_within(c[2], 300, err), PASCO_OK);
	cr_assert(strstr(err, "PASCO_MAX_CONNECTIONS") != NULL, "%s", err);
	/* the two members are served; once one leaves, the third gets in */
	PASCO_PASS(run(c[0], err));
	pasci_rpc_client_close(c[0]);
	PASCO_PASS(pasci_rpc_client_wait_up(c[2], 5000));
	cr_assert_eq(run(c[2], err), PASCO_OK, "%s", err);
	pasci_rpc_client_close(c[1]);
	pasci_rpc_client_close(c[2]);
	pasci_rpc_server_close(s);
}

Test(conns, a_member_refused_by_the_cap_is_told_so_with_a_key)
{
	pasci_key k = test_key();
	member_refused_by_the_cap(&k);
}

Test(conns, a_member_refused_by_the_cap_is_told_so_without_a_key)
{
	member_refused_by_the_cap(NULL);
}
