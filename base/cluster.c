/*
 * Cluster membership from TF_CONFIG or flags. Parsing checks structure
 * (JSON shape, known job names, task index in range); pasco_cluster_validate
 * checks what the strategy needs. Messages follow TensorFlow's
 * (tfconfig_cluster_resolver.py, parameter_server_strategy_v2.py). A
 * cluster is immutable after parsing and may be shared between threads.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pasco/cluster.h"
#include "util.h"

#define ROLE_COUNT 5

struct pasco_cluster {
	char     **urls[ROLE_COUNT];
	size_t     counts[ROLE_COUNT];
	int        chief_jobs; /* "chief" and "master" both count */
	pasco_role task_role;
	int32_t    task_index;
};

static const char *role_names[ROLE_COUNT] = {
    "none", "chief", "worker", "ps", "evaluator"};

const char *
pasco_role_name(pasco_role role)
{
	return (role > 0 && role < ROLE_COUNT) ? role_names[role] : "none";
}

static pasco_role
role_from_name(const char *name)
{
	if (strcmp(name, "master") == 0) {
		return PASCO_ROLE_CHIEF;
	}
	for (int r = 1; r < ROLE_COUNT; r++) {
		if (strcmp(name, role_names[r]) == 0) {
			return (pasco_role) r;
		}
	}
	return PASCO_ROLE_NONE;
}

void
pasco_cluster_free(pasco_cluster *c)
{
	if (c == NULL) {
		return;
	}
	for (int r = 0; r < ROLE_COUNT; r++) {
		for (size_t i = 0; i < c->counts[r]; i++) {
			free(c->urls[r][i]);
		}
		free(c->urls[r]);
	}
	free(c);
}

/* The host:port part of addr: addr itself, or what follows the scheme of
 * a TCP URL (tcp://, tcp4://, tcp6://, tls+tcp://...) up to any path; NULL
 * for other URLs (inproc://, ipc://), which have no port. */
static const char *
address_host_port(const char *addr, char *buf, size_t len)
{
	const char *sep = strstr(addr, "://");
	if (sep == NULL) {
		return addr;
	}
	if (memmem(addr, (size_t) (sep - addr), "tcp", 3) == NULL) {
		return NULL;
	}
	pasci_fmt(buf, len, "%.*s", (int) strcspn(sep + 3, "/"), sep + 3);
	return buf;
}

/* Checks the port of task index of role at addr: digits after the last
 * ':' of its host:port, 1 to 65535 (0 asks the kernel for any port, which
 * no other task could know). */
static int
cluster_check_port(
    pasco_role role, size_t index, const char *addr, char *err, size_t errlen)
{
	char          buf[256];
	const char   *hp = address_host_port(addr, buf, sizeof(buf));
	const char   *colon;
	unsigned long port = 0;
	bool          ok;

	if (hp == NULL) {
		return PASCO_OK;
	}
	colon = strrchr(hp, ':');
	ok    = colon != NULL && colon != hp && colon[1] != 0;
	for (const char *p = ok ? colon + 1 : ""; *p; p++) {
		ok   = ok && isdigit((unsigned char) *p);
		port = port < 100000 ? port * 10 + (unsigned long) (*p - '0')
		                     : port;
	}
	if (!ok) {
		pasci_fmt(err, errlen,
		    "address '%s' of job '%s' (%s %zu) is not host:port", addr,
		    role_names[role], role_names[role], index);
		return PASCO_EINVAL;
	}
	if (port < 1 || port > 65535) {
		pasci_fmt(err, errlen,
		    "address '%s' of job '%s' (%s %zu): port %s is out of "
		    "range; a task's port is 1 to 65535",
		    addr, role_names[role], role_names[role], index,
		    colon + 1);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* "host:port" becomes "tcp://host:port"; full URLs are kept. */
static int
cluster_add_address(pasco_cluster *c, pasco_role role, const char *addr,
    char *err, size_t errlen)
{
	char **grown;
	char  *url;
	size_t n = strlen(addr) + 8;
	int    rv;

	if ((rv = cluster_check_port(
	         role, c->counts[role], addr, err, errlen)) != 0) {
		return rv;
	}
	if ((url = malloc(n)) == NULL) {
		return PASCO_ENOMEM;
	}
	snprintf(url, n, "%s%s", strstr(addr, "://") ? "" : "tcp://", addr);
	grown = realloc(c->urls[role], (c->counts[role] + 1) * sizeof(char *));
	if (grown == NULL) {
		free(url);
		return PASCO_ENOMEM;
	}
	c->urls[role]                    = grown;
	c->urls[role][c->counts[role]++] = url;
	return PASCO_OK;
}

static int
cluster_parse_jobs(
    pasco_cluster *c, const cJSON *jobs, char *err, size_t errlen)
{
	const cJSON *job;
	int          rv;

	if (!cJSON_IsObject(jobs)) {
		pasci_fmt(err, errlen,
		    "TF_CONFIG \"cluster\" must be an object "
		    "mapping job names to address lists");
		return PASCO_EINVAL;
	}
	cJSON_ArrayForEach(job, jobs)
	{
		pasco_role   role = role_from_name(job->string);
		const cJSON *addr;
		if (role == PASCO_ROLE_NONE) {
			pasci_fmt(err, errlen,
			    "Disallowed task type found in cluster spec. The "
			    "allowed types are chief, worker, evaluator, ps "
			    "(and master as an alias of chief); found '%s'",
			    job->string);
			return PASCO_EINVAL;
		}
		if (role == PASCO_ROLE_CHIEF) {
			c->chief_jobs++;
		}
		if (!cJSON_IsArray(job)) {
			pasci_fmt(err, errlen,
			    "job '%s' must be a list of "
			    "\"host:port\" strings",
			    job->string);
			return PASCO_EINVAL;
		}
		cJSON_ArrayForEach(addr, job)
		{
			if (!cJSON_IsString(addr)) {
				pasci_fmt(err, errlen,
				    "job '%s' has an address "
				    "that is not a string",
				    job->string);
				return PASCO_EINVAL;
			}
			rv = cluster_add_address(
			    c, role, addr->valuestring, err, errlen);
			if (rv != 0) {
				return rv;
			}
		}
	}
	return PASCO_OK;
}

static size_t
cluster_total(const pasco_cluster *c)
{
	size_t total = 0;
	for (int r = 1; r < ROLE_COUNT; r++) {
		total += c->counts[r];
	}
	return total;
}

static int
cluster_set_task(pasco_cluster *c, const char *type, long long index,
    char *err, size_t errlen)
{
	pasco_role role = role_from_name(type);
	if (role == PASCO_ROLE_NONE) {
		pasci_fmt(err, errlen,
		    "Unrecognized task_type: '%s' (expected "
		    "chief, worker, ps or evaluator)",
		    type);
		return PASCO_EINVAL;
	}
	if (index < 0 ||
	    (cluster_total(c) > 0 && role != PASCO_ROLE_EVALUATOR &&
	        (size_t) index >= c->counts[role])) {
		pasci_fmt(err, errlen,
		    "task index %lld is out of range: job "
		    "'%s' has %zu task(s)",
		    index, type, c->counts[role]);
		return PASCO_EINVAL;
	}
	c->task_role  = role;
	c->task_index = (int32_t) index;
	return PASCO_OK;
}

/* A task index as TensorFlow takes it: an integer, or a string of digits
 * ("0", as some launchers write it); absent means 0. */
static int
task_index_value(const cJSON *index, long long *out, char *err, size_t errlen)
{
	char *end = NULL;
	*out      = 0;
	if (index == NULL) {
		return PASCO_OK;
	}
	if (cJSON_IsNumber(index)) {
		double d = index->valuedouble;
		/* range first: casting a double beyond long long is undefined,
		 * and the index is kept as an int32_t */
		if (d >= -(double) INT32_MAX && d <= (double) INT32_MAX &&
		    d == (double) (long long) d) {
			*out = (long long) d;
			return PASCO_OK;
		}
		pasci_fmt(err, errlen,
		    "TF_CONFIG task \"index\" must be an integer (at most "
		    "%d), not %g",
		    INT32_MAX, d);
		return PASCO_EINVAL;
	}
	if (cJSON_IsString(index) &&
	    isdigit((unsigned char) *index->valuestring)) {
		*out = strtoll(index->valuestring, &end, 10);
		if (*end == 0 && *out <= INT32_MAX) {
			return PASCO_OK;
		}
	}
	pasci_fmt(err, errlen,
	    "TF_CONFIG task \"index\" must be an integer (or a string of "
	    "digits) of at most %d, not %s",
	    INT32_MAX,
	    cJSON_IsString(index) ? index->valuestring
	                          : "a JSON value of another type");
	return PASCO_EINVAL;
}

static int
cluster_parse_task(
    pasco_cluster *c, const cJSON *task, char *err, size_t errlen)
{
	const cJSON *type, *index;
	if (task == NULL) {
		return PASCO_OK;
	}
	type  = cJSON_GetObjectItemCaseSensitive(task, "type");
	index = cJSON_GetObjectItemCaseSensitive(task, "index");
	if (!cJSON_IsObject(task) || !cJSON_IsString(type)) {
		pasci_fmt(err, errlen,
		    "TF_CONFIG \"task\" must be an object "
		    "with a string \"type\" and an integer \"index\"");
		return PASCO_EINVAL;
	}
	long long idx;
	if (task_index_value(index, &idx, err, errlen) != 0) {
		return PASCO_EINVAL;
	}
	return cluster_set_task(c, type->valuestring, idx, err, errlen);
}

/* "environment" and "rpc_layer" are TensorFlow's: Pasco has one transport
 * and no special environment, so they are read only to check their type. */
static int
cluster_check_extras(const cJSON *root, char *err, size_t errlen)
{
	static const char *keys[] = {"environment", "rpc_layer"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v =
		    cJSON_GetObjectItemCaseSensitive(root, keys[i]);
		if (v != NULL && !cJSON_IsString(v)) {
			pasci_fmt(err, errlen,
			    "TF_CONFIG \"%s\" must be a string", keys[i]);
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

/* Two tasks cannot listen at one address. */
static int
cluster_check_unique(const pasco_cluster *c, char *err, size_t errlen)
{
	for (int r = 1; r < ROLE_COUNT; r++) {
		for (size_t i = 0; i < c->counts[r]; i++) {
			for (int r2 = r; r2 < ROLE_COUNT; r2++) {
				for (size_t j = r2 == r ? i + 1 : 0;
				     j < c->counts[r2]; j++) {
					if (strcmp(c->urls[r][i],
					        c->urls[r2][j]) != 0) {
						continue;
					}
					pasci_fmt(err, errlen,
					    "%s %zu and %s %zu have the same "
					    "address %s: every task needs its "
					    "own host:port",
					    role_names[r], i, role_names[r2],
					    j, c->urls[r][i]);
					return PASCO_EINVAL;
				}
			}
		}
	}
	return PASCO_OK;
}

int
pasco_cluster_parse_json(
    pasco_cluster **out, const char *json, char *err, size_t errlen)
{
	pasco_cluster *c;
	cJSON         *root;
	int            rv;

	*out = NULL;
	pasci_fmt(err, errlen, "%s", "");
	if ((root = cJSON_Parse(json)) == NULL) {
		const char *at = cJSON_GetErrorPtr();
		pasci_fmt(err, errlen,
		    "TF_CONFIG is not valid JSON (near "
		    "\"%.20s\")",
		    at != NULL ? at : "");
		return PASCO_EINVAL;
	}
	if (!cJSON_IsObject(root)) {
		pasci_fmt(err, errlen, "TF_CONFIG must be a JSON object");
		cJSON_Delete(root);
		return PASCO_EINVAL;
	}
	if ((c = pasci_calloc(1, sizeof(*c))) == NULL) {
		cJSON_Delete(root);
		return PASCO_ENOMEM;
	}
	c->task_index = -1;
	rv            = 0;
	if (cJSON_GetObjectItemCaseSensitive(root, "cluster") != NULL) {
		rv = cluster_parse_jobs(c,
		    cJSON_GetObjectItemCaseSensitive(root, "cluster"), err,
		    errlen);
	}
	if (rv == 0) {
		rv = cluster_parse_task(c,
		    cJSON_GetObjectItemCaseSensitive(root, "task"), err,
		    errlen);
	}
	if (rv == 0) {
		rv = cluster_check_extras(root, err, errlen);
	}
	if (rv == 0) {
		rv = cluster_check_unique(c, err, errlen);
	}
	cJSON_Delete(root);
	if (rv != 0) {
		pasco_cluster_free(c);
		return rv;
	}
	*out = c;
	return PASCO_OK;
}

/* Matches "--name=value" or "--name value"; returns the value or NULL. */
static const char *
flag_value(int *i, int argc, char **argv, const char *name, int *consumed)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0) {
		return NULL;
	}
	if (argv[*i][n] == '=') {
		*consumed = 1;
		return argv[*i] + n + 1;
	}
	if (argv[*i][n] == 0 && *i + 1 < argc) {
		*consumed = 2;
		return argv[*i + 1];
	}
	return NULL;
}

static int
cluster_add_list(pasco_cluster *c, pasco_role role, const char *list,
    char *err, size_t errlen)
{
	char *copy = pasci_strdup(list), *save = NULL, *tok;
	int   rv = 0;
	if (copy == NULL) {
		return PASCO_ENOMEM;
	}
	if (role == PASCO_ROLE_CHIEF) {
		c->chief_jobs++;
	}
	for (tok = strtok_r(copy, ",;", &save); tok != NULL && rv == 0;
	     tok = strtok_r(NULL, ",;", &save)) {
		rv = cluster_add_address(c, role, tok, err, errlen);
	}
	free(copy);
	return rv;
}

static int
cluster_from_flags(pasco_cluster *c, int *argc, char **argv, bool *found,
    char *err, size_t errlen)
{
	static const char *host_flags[ROLE_COUNT] = {NULL, "--chief-hosts",
	    "--worker-hosts", "--ps-hosts", "--evaluator-hosts"};
	const char        *type = NULL, *index = NULL;
	int                rv = 0, w = 1;

	for (int i = 1; i < *argc && rv == 0;) {
		int         used = 0;
		const char *v;
		for (int r = 1; r < ROLE_COUNT && used == 0; r++) {
			if ((v = flag_value(&i, *argc, argv, host_flags[r],
			         &used)) != NULL) {
				rv = cluster_add_list(
				    c, (pasco_role) r, v, err, errlen);
			}
		}
		if (used == 0 && (v = flag_value(&i, *argc, argv,
		                      "--task-type", &used)) != NULL) {
			type = v;
		}
		if (used == 0 && (v = flag_value(&i, *argc, argv,
		                      "--task-index", &used)) != NULL) {
			index = v;
		}
		if (used == 0) {
			argv[w++] = argv[i++];
		} else {
			*found = true;
			i += used;
		}
	}
	*argc   = w;
	argv[w] = NULL;
	if (rv == 0 && *found) {
		char     *end = NULL;
		long long idx = index != NULL ? strtoll(index, &end, 10) : 0;
		if (index != NULL && (*index == 0 || *end != 0)) {
			pasci_fmt(err, errlen,
			    "--task-index '%s' is not an "
			    "integer",
			    index);
			return PASCO_EINVAL;
		}
		rv = cluster_set_task(
		    c, type != NULL ? type : "chief", idx, err, errlen);
	}
	if (rv == 0 && *found) {
		rv = cluster_check_unique(c, err, errlen);
	}
	return rv;
}

int
pasco_cluster_from_args(
    pasco_cluster **out, int *argc, char **argv, char *err, size_t errlen)
{
	pasco_cluster *c;
	const char    *env;
	bool           found = false;
	int            rv;

	*out = NULL;
	if ((c = pasci_calloc(1, sizeof(*c))) == NULL) {
		return PASCO_ENOMEM;
	}
	c->task_index = -1;
	rv            = cluster_from_flags(c, argc, argv, &found, err, errlen);
	if (rv == 0 && found) {
		*out = c;
		return PASCO_OK;
	}
	pasco_cluster_free(c);
	if (rv != 0) {
		return rv;
	}
	if ((env = getenv("TF_CONFIG")) == NULL || *env == 0) {
		pasci_fmt(err, errlen,
		    "no cluster: set TF_CONFIG or pass "
		    "--chief-hosts/--worker-hosts/--ps-hosts and --task-type/"
		    "--task-index (or start the program with `pasco launch`)");
		return PASCO_ENOTFOUND;
	}
	return pasco_cluster_parse_json(out, env, err, errlen);
}

int
pasco_cluster_validate(const pasco_cluster *c, char *err, size_t errlen)
{
	if (cluster_total(c) == 0) {
		pasci_fmt(err, errlen, "Cluster spec must be non-empty");
		return PASCO_EINVAL;
	}
	if (c->counts[PASCO_ROLE_PS] == 0) {
		pasci_fmt(err, errlen, "There must be at least one ps.");
		return PASCO_EINVAL;
	}
	if (c->counts[PASCO_ROLE_WORKER] == 0) {
		pasci_fmt(err, errlen, "There must be at least one worker.");
		return PASCO_EINVAL;
	}
	if (c->chief_jobs > 1 || c->counts[PASCO_ROLE_CHIEF] > 1) {
		pasci_fmt(err, errlen,
		    "There must be at most one 'chief' job "
		    "('master' is the same job) with at most one task.");
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

size_t
pasco_cluster_count(const pasco_cluster *c, pasco_role role)
{
	return (role > 0 && role < ROLE_COUNT) ? c->counts[role] : 0;
}

const char *
pasco_cluster_url(const pasco_cluster *c, pasco_role role, size_t index)
{
	if (role <= 0 || role >= ROLE_COUNT || index >= c->counts[role]) {
		return NULL;
	}
	return c->urls[role][index];
}

pasco_role
pasco_cluster_task_role(const pasco_cluster *c)
{
	return c->task_role;
}

int32_t
pasco_cluster_task_index(const pasco_cluster *c)
{
	return c->task_index;
}
