/*
 * Cluster membership, from TensorFlow's TF_CONFIG JSON or the equivalent
 * command-line flags:
 *
 *   TF_CONFIG='{"cluster": {"chief": ["host:port"], "worker": [...],
 *               "ps": [...]}, "task": {"type": "worker", "index": 1}}'
 *
 *   --chief-hosts=h:p --worker-hosts=h:p,h:p --ps-hosts=h:p
 *   --task-type=worker --task-index=1   (also "--flag value")
 *
 * "master" is accepted as an alias of "chief", and "evaluator" is a known
 * job. Addresses are host:port (tcp) or a full nng URL (inproc://name); no
 * two tasks may have the same one, and a tcp port is 1 to 65535 (port 0,
 * "any port", is refused, naming the task: no other task could dial it). As in
 * TensorFlow, the task "index" may be a string of digits ("1"), and
 * "environment" and "rpc_layer" are accepted (Pasco has one transport: they
 * are checked to be strings and otherwise ignored); an index that is not an
 * integer (0.5) is an error. Validation follows TensorFlow's
 * ParameterServerStrategy.
 */
#ifndef PASCO_CLUSTER_H
#define PASCO_CLUSTER_H

#include "error.h"
#include <stddef.h>
#include <stdint.h>

typedef enum pasco_role {
	PASCO_ROLE_NONE      = 0,
	PASCO_ROLE_CHIEF     = 1,
	PASCO_ROLE_WORKER    = 2,
	PASCO_ROLE_PS        = 3,
	PASCO_ROLE_EVALUATOR = 4,
} pasco_role;

typedef struct pasco_cluster pasco_cluster;

/* Parses a TF_CONFIG JSON text. On PASCO_EINVAL, *out is NULL and, when
 * errbuf is not NULL, errbuf holds a message naming the problem.
 * Thread-safe. */
int pasco_cluster_parse_json(
    pasco_cluster **out, const char *json, char *errbuf, size_t errlen);

/* Reads the cluster from the flags in argv, or, when none is given, from
 * the TF_CONFIG environment variable. Recognised flags are removed from
 * argv and *argc updated, so a program can parse the rest itself. Returns
 * PASCO_ENOTFOUND when neither is present, PASCO_EINVAL with a message in
 * errbuf when they are malformed. Not thread-safe (reads the environment). */
int pasco_cluster_from_args(
    pasco_cluster **out, int *argc, char **argv, char *errbuf, size_t errlen);

/* Checks what a ParameterServerStrategy needs: a non-empty cluster, at
 * least one ps and one worker, at most one chief. PASCO_EINVAL with the
 * message in errbuf otherwise. Thread-safe. */
int pasco_cluster_validate(
    const pasco_cluster *c, char *errbuf, size_t errlen);

void pasco_cluster_free(pasco_cluster *c);

/* Number of tasks of role (0 when absent). */
size_t pasco_cluster_count(const pasco_cluster *c, pasco_role role);

/* The nng URL of task index of role ("tcp://host:port"), borrowed; NULL
 * when out of range. */
const char *pasco_cluster_url(
    const pasco_cluster *c, pasco_role role, size_t index);

/* This process's task. */
pasco_role pasco_cluster_task_role(const pasco_cluster *c);
int32_t    pasco_cluster_task_index(const pasco_cluster *c);

/* "chief", "worker", "ps", "evaluator". */
const char *pasco_role_name(pasco_role role);

#endif
