/*
 * Running a role. A Pasco program is one binary for every role:
 *
 *     int main(int argc, char **argv) { return pasco_main(argc, argv, chief);
 * }
 *
 * pasco_main reads the cluster (flags or TF_CONFIG, cluster.h); as the
 * chief it runs the given function, the user's coordinator program, and
 * when that returns 0 tells every ps and worker that it is done; when it
 * fails (or the chief is killed) it tells them nothing, and they keep
 * serving for the chief's next incarnation (a launcher restarts it; it
 * resumes from its backup or checkpoint). As the
 * evaluator it runs the same function, as TensorFlow runs the same program
 * (the function tells the roles apart with pasco_cluster_task_role), and
 * does not end the cluster when it returns. As a ps or a
 * worker it serves until SIGTERM or SIGINT, until the chief says it is
 * done, or until no request of any kind (the chief's heartbeats come every
 * second) has come for the chief timeout, 120 s unless --chief-timeout
 * SECONDS or PASCO_CHIEF_TIMEOUT says otherwise (0: wait forever), so a
 * Slurm step or a Kubernetes job ends with its training; each logs why.
 * Its exit status is 0 only when the chief said it is done: 138 after the
 * chief timeout (the Kubeflow training operator's retryable code) and 128
 * + the signal's number after SIGTERM or SIGINT (143, 130), so a restart
 * policy (Kubernetes's OnFailure) restarts it for the chief's next
 * incarnation. A chief or evaluator that is process 1 (a container
 * without an init) still ends on SIGTERM and SIGINT, with 128 + the
 * signal. A ps or worker listens on every interface at its cluster port
 * (a loopback address stays loopback); --bind-address ADDR or
 * PASCO_BIND_ADDRESS picks one interface. On tcp it also listens on a bulk
 * port the system picks (variable requests to a ps, the chief's closures
 * to a worker; PASCO_BULK_PORT and PASCO_WORKER_BULK_PORT fix them:
 * docs/deploy.md, "Ports"). --key-file PATH or
 * PASCO_KEY_FILE names the cluster key: a file of at least 16 random bytes,
 * readable by its owner only (a task refuses another, naming the path),
 * that every task of the cluster shares; then every connection to a ps or
 * worker, RPC and bulk alike, must prove it holds the key (a challenge
 * and response, the key never sent) before anything is served, and the
 * server proves it back. Without one, a server and the chief warn once
 * that the cluster is open to anyone who can reach its ports. For
 * tls+tcp:// addresses, --tls-cert, --tls-key and --tls-ca FILE (or
 * PASCO_TLS_CERT, PASCO_TLS_KEY and PASCO_TLS_CA) give this process's
 * certificate, its key and the CA its peers' certificates must chain to
 * (PEM; mutual TLS, docs/security.md "TLS"). --checkpoint-root DIR (or
 * PASCO_CHECKPOINT_DIR) is where a ps may write checkpoints.
 * PASCO_MAX_VARIABLE_MB (1024) bounds one variable (one shard) on a ps:
 * a create of a bigger one is refused with PASCO_EINVAL, naming the limit,
 * before anything is allocated (partition the variable, or raise it), and
 * a dynamic table's rows on a ps. PASCO_MAX_PS_MB (by default 3/4 of the
 * machine's or its cgroup's memory) bounds everything a ps holds
 * (variables, optimizer slots, dynamic tables): a create past it is
 * refused with PASCO_ENOMEM, naming it, and new rows of a dynamic table
 * are refused (docs/lowlevel.md "Embeddings of any size"). These
 * options are taken out of argv before the chief function sees it.
 * `pasco launch` starts every
 * role of a local cluster this way. A process's threads follow its role
 * and these settings, not the core count: --nng-threads N or
 * PASCO_NNG_THREADS (nng's 2N task and N expire threads; 2), --ps-threads
 * N or PASCO_PS_THREADS (a ps's request handlers; 8), --worker-threads N
 * or PASCO_WORKER_THREADS (a worker's; 16), each 1 to 256 (nng's to 64;
 * another value exits 2, naming it); unless OPENBLAS_NUM_THREADS,
 * GOTO_NUM_THREADS or OMP_NUM_THREADS is set, OpenBLAS runs one thread per
 * call and no pool, as a worker already runs several closures at once
 * (docs/deploy.md "Threads"). pasco_server_start sizes its handlers from the
 * same variables. --metrics-port N or PASCO_METRICS_PORT (off by default; 0:
 * a free port, printed) makes any role serve its live metrics in
 * Prometheus's text format at http://ADDR:N/metrics, ADDR being where the
 * task listens, or --metrics-addr / PASCO_METRICS_ADDR; no key guards it
 * (docs/metrics.md: the series, the security note, `pasco top`).
 *
 * pasco_server_start runs a ps or worker server inside the current process
 * (threads, no signals), which in-process tests and embedders use; it
 * reads the cluster key from PASCO_KEY_FILE (PASCO_EINVAL when the file is
 * unusable).
 */
#ifndef PASCO_SERVER_H
#define PASCO_SERVER_H

#include <stdint.h>

#include "cluster.h"
#include "error.h"

/* The chief's (and the evaluator's) program: argv has the cluster flags
 * and the options above removed, so it parses the rest as its own options.
 * Its return value is the process's exit status. cluster is NULL when the
 * program was started with no cluster and --help, -h or --version among
 * its arguments: the function prints its usage or version and returns
 * before it uses the cluster. */
typedef int (*pasco_chief_fn)(
    const pasco_cluster *cluster, int argc, char **argv);

/* Runs this process's role; returns the exit status (0 on success, 2 for a
 * missing or malformed cluster, with the reason on stderr). Names the task
 * in log lines ("ps 0", "worker 1", "chief"), and makes stdout
 * line-buffered when it is a pipe or PASCO_LINE_BUFFERED is set (`pasco
 * launch` sets it), so each line is written whole and in order. */
int pasco_main(int argc, char **argv, pasco_chief_fn chief);

/* The program's own arguments, for dataset factories and step functions
 * (which run on workers, where no chief function parses them): argv as
 * pasco_main got it, with the cluster flags and the options above taken
 * out, the same array on every role and the one the chief function
 * parses. argv[argc] is NULL; *argc (may be NULL) gets the count, 0
 * (with argv {NULL}) in a process that did not start through pasco_main
 * (in-process servers, tests). A factory also finds them in its
 * pasco_dataset_context. Read-only; the strings are main's. Thread-safe
 * (set before any thread starts). */
char *const *pasco_program_args(int *argc);

typedef struct pasco_server pasco_server;

/* Starts the server of task index of role (PASCO_ROLE_PS or
 * PASCO_ROLE_WORKER) listening at its cluster address. Returns at once
 * once listening; PASCO_EINVAL for another role or index, PASCO_EIO when
 * the address cannot be listened on (the reason is printed). */
int pasco_server_start(pasco_server **out, const pasco_cluster *cluster,
    pasco_role role, int32_t index);

/* This server's incarnation id: random, chosen at start, sent in every
 * reply. */
uint64_t pasco_server_incarnation(const pasco_server *s);

/* Stops serving (waits for running handlers) and frees. NULL is a no-op. */
void pasco_server_stop(pasco_server *s);

/* Sizes this process's thread pools from its configuration, as pasco_main
 * does before anything else: nng's from PASCO_NNG_THREADS (before nng
 * starts its threads), and OpenBLAS to one thread and no pool unless
 * OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS is set; it
 * checks PASCO_PS_THREADS and PASCO_WORKER_THREADS too. A program that
 * does not go through pasco_main (an embedder; a Python chief that makes
 * its strategy from TF_CONFIG, for which the pasco package calls it when
 * it loads libpasco) calls it first, before any other call that may start
 * nng. Only the first call sizes anything; a later one returns the first
 * one's result. PASCO_EINVAL, with the variable and its value named in
 * err, when a count is malformed. Not thread-safe: call from the main
 * thread before other threads start. */
int pasco_threads_configure(char *err, size_t errlen);

#endif
