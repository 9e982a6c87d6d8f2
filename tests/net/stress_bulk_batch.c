/*
 * Batches of bulk requests from several threads at once, without
 * criterion so it can run under ThreadSanitizer: 4 threads, each 200
 * times begins one request to each of 3 servers inside a batch
 * (pasci_bulk_batch_start / _send: its own io_uring ring, closed when the
 * thread ends), waits for all of them at once every other time
 * (wait_all), then takes the replies as they come (wait_any) and checks
 * each is its request's tensor doubled. The threads share the servers'
 * connection pools. Exits 1 naming the first wrong reply.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bulk.h"
#include "pasco.h"
#include "rpc.h"
#include "tensor_impl.h"
#include "util.h"

#define NSERVERS 3
#define NTHREADS 4
#define ROUNDS 200

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr,                                       \
			    "stress_bulk_batch: %s:%d: ", __FILE__,           \
			    __LINE__);                                        \
			fprintf(stderr, __VA_ARGS__);                         \
			fprintf(stderr, "\n");                                \
			exit(1);                                              \
		}                                                             \
	} while (0)

static pasci_rpc_client *clients[NSERVERS];

/* A loopback port free now. */
static int
free_port(void)
{
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int       fd  = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *) &a, sizeof(a)) == 0 &&
	          getsockname(fd, (struct sockaddr *) &a, &len) == 0,
	    "no free port");
	close(fd);
	return ntohs(a.sin_port);
}

/* The request's f32 tensor, doubled. */
static nng_msg *
doubled(void *arg, const pasci_wire_msg *req, pasci_wire_builder *b)
{
	pasco_tensor *t;
	(void) arg;
	CHECK(req->ntensors == 1, "%zu tensors", req->ntensors);
	CHECK(pasci_tensor_alloc_raw(
	          &t, PASCO_F32, 1, req->tensors[0]->shape) == 0,
	    "out of memory");
	for (int64_t i = 0; i < t->count; i++) {
		((float *) t->data)[i] =
		    2 * ((const float *) req->tensors[0]->data)[i];
	}
	pasci_wire_add_tensor(b, t, NULL);
	pasco_tensor_release(t);
	return NULL;
}

static nng_msg *
no_rpc(void *arg, const pasci_wire_msg *req)
{
	(void) arg;
	(void) req;
	return NULL;
}

/* Sizes by server: inline, in the region, inline. */
static const int64_t SIZES[NSERVERS] = {64, 20000, 3000};

static void *
batches(void *arg)
{
	float seed = (float) (intptr_t) arg;
	for (int r = 0; r < ROUNDS; r++) {
		pasci_bulk_pending p[NSERVERS], *pp[NSERVERS];
		float              first[NSERVERS];
		char               detail[300];
		pasci_bulk_batch_start();
		for (int i = 0; i < NSERVERS; i++) {
			pasci_wire_builder b;
			pasco_tensor      *t;
			first[i] = seed * 1000 + (float) (r * NSERVERS + i);
			CHECK(pasco_tensor_alloc(
			          &t, PASCO_F32, 1, &SIZES[i]) == 0,
			    "out of memory");
			for (int64_t k = 0; k < t->count; k++) {
				((float *) t->data)[k] = first[i] + (float) k;
			}
			pasci_wire_builder_init(&b, PASCI_METHOD_VAR_READ);
			pasci_wire_add_tensor(&b, t, NULL);
			pasco_tensor_release(t);
			CHECK(pasci_bulk_begin(clients[i], &b, 10000, &p[i],
			          detail, sizeof(detail)) == 0,
			    "begin: %s", detail);
			pasci_wire_builder_fini(&b);
			pp[i] = &p[i];
		}
		pasci_bulk_batch_send(pp, NSERVERS);
		if (r % 2 == 0) { /* every other batch: one wake-up for all */
			pasci_bulk_wait_all(pp, NSERVERS);
		}
		for (int left = NSERVERS; left > 0; left--) {
			size_t k = pasci_bulk_wait_any(pp, (size_t) left);
			int    i = (int) (pp[k] - p);
			pasci_wire_msg m;
			CHECK(pasci_bulk_finish(
			          pp[k], &m, detail, sizeof(detail)) == 0,
			    "finish: %s", detail);
			CHECK(m.ntensors == 1 &&
			          m.tensors[0]->count == SIZES[i] &&
			          ((const float *) m.tensors[0]->data)[1] ==
			              2 * (first[i] + 1),
			    "server %d answered another request", i);
			pasci_wire_msg_fini(&m);
			pp[k] = pp[left - 1];
		}
	}
	return NULL;
}

int
main(void)
{
	pasci_rpc_server  *rpc[NSERVERS];
	pasci_bulk_server *bulk[NSERVERS];
	pthread_t          th[NTHREADS];
	for (int i = 0; i < NSERVERS; i++) {
		char     url[64];
		uint64_t inc = pasci_random_u64();
		snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", free_port());
		CHECK(pasci_bulk_server_open(&bulk[i], "127.0.0.1", inc,
		          doubled, NULL, NULL) == 0,
		    "bulk server");
		CHECK(pasci_rpc_server_open_with(&rpc[i], url, 1, "t", no_rpc,
		          NULL, inc, pasci_bulk_server_advert(bulk[i]),
		          NULL) == 0,
		    "rpc server at %s", url);
		CHECK(
		    pasci_rpc_client_open(&clients[i], url, NULL, NULL) == 0 &&
		        pasci_rpc_client_wait_up(clients[i], 10000) == 0,
		    "client of %s", url);
	}
	for (intptr_t t = 0; t < NTHREADS; t++) {
		CHECK(pthread_create(&th[t], NULL, batches, (void *) t) == 0,
		    "thread");
	}
	for (int t = 0; t < NTHREADS; t++) {
		pthread_join(th[t], NULL);
	}
	for (int i = 0; i < NSERVERS; i++) {
		pasci_rpc_client_close(clients[i]);
		pasci_bulk_server_close(bulk[i]);
		pasci_rpc_server_close(rpc[i]);
	}
	printf("stress_bulk_batch: %d threads x %d batches of %d requests: "
	       "every reply its request's\n",
	    NTHREADS, ROUNDS, NSERVERS);
	return 0;
}
