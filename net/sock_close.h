/*
 * Closing an nng socket without hanging for good. nng 1.5's nng_close can,
 * rarely, never return (nanomsg/nng#1543: its reaper waits on a task that
 * was prepared but never started; fixed in later nng), most often on a
 * socket whose connections are being refused and closed as it runs. Once
 * it hangs, nng's one reaper thread is stuck, and every later close in the
 * process hangs too. So a close runs on a thread of its own, and the
 * caller waits a bounded time: a process can still stop its tasks, report
 * and exit. What the socket's callbacks use must outlive the close: when
 * the caller stops waiting, the closing thread frees it (`done`) if
 * nng_close ever returns.
 */
#ifndef PASCI_SOCK_CLOSE_H
#define PASCI_SOCK_CLOSE_H

#include <nng/nng.h>
#include <stdbool.h>

#define PASCI_CLOSE_WAIT_MS 5000

/* Closes sock, waiting at most wait_ms. True: closed (the caller frees
 * what the socket's callbacks used). False: not closed in time;
 * timed_out(arg) has run on the caller's thread (to fail what waits on
 * the socket; may be NULL), and from then on done(arg) runs on the closing
 * thread once nng_close returns. Logs a warning naming `what`. */
bool pasci_sock_close_bounded(nng_socket sock, const char *what, int wait_ms,
    void (*timed_out)(void *), void (*done)(void *), void *arg);

#endif
