/*
 * deploy/kubernetes/tfjob.yaml as the Kubeflow training operator runs it:
 * every pod's TF_CONFIG, byte for byte what the operator writes
 * (genTFConfigJSONStr in pkg/controller.v1/tensorflow/tensorflow.go: Go's
 * json.Marshal of {cluster, task, environment: "cloud"}, the cluster's
 * keys sorted, addresses <job>-<type>-<index>.<namespace>.svc[.<domain>]
 * :<tfjob-port>), parsed and validated by Pasco, with each task's role,
 * index, address and the address it listens on. The manifest is read
 * first, so a change of its name, replicas or port fails here.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

#include "address.h"

#define JOB "pasco-tutorial"
#define PORT 2222

TestSuite(tfjob, .timeout = 10);

/* The manifest's text (PASCO_TFJOB names it), for substring checks. */
static char *
manifest(void)
{
	const char *path = getenv("PASCO_TFJOB");
	FILE       *f;
	char       *text = calloc(1, 65536);
	size_t      n;

	cr_assert_not_null(path, "PASCO_TFJOB is not set");
	cr_assert_not_null(f = fopen(path, "r"), "cannot open %s", path);
	n = fread(text, 1, 65535, f);
	fclose(f);
	text[n] = 0;
	return text;
}

Test(tfjob, the_manifest_is_the_one_these_configs_are_for)
{
	char *m = manifest();
	cr_assert(strstr(m, "apiVersion: kubeflow.org/v1\n") != NULL);
	cr_assert(strstr(m, "kind: TFJob\n") != NULL);
	cr_assert(strstr(m, "  name: " JOB "\n") != NULL);
	cr_assert(strstr(m, "    Chief:\n      replicas: 1\n") != NULL);
	cr_assert(strstr(m, "    PS:\n      replicas: 2\n") != NULL);
	cr_assert(strstr(m, "    Worker:\n      replicas: 2\n") != NULL);
	/* the operator reads the port named tfjob-port of the container
	 * named tensorflow, in every replica spec */
	size_t names = 0, ports = 0;
	for (char *p = m; (p = strstr(p, "- name: tensorflow\n")) != NULL;
	     p++) {
		names++;
	}
	for (char *p = m;
	     (p = strstr(p, "- name: tfjob-port\n                  "
	                    "containerPort: 2222\n")) != NULL;
	     p++) {
		ports++;
	}
	cr_assert_eq(names, 3, "%zu containers named tensorflow", names);
	cr_assert_eq(ports, 3, "%zu tfjob-ports of 2222", ports);
	cr_assert(strstr(m, "embedding_classifier") != NULL);
	free(m);
}

static size_t
count(const char *text, const char *what)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, what)) != NULL; p++) {
		n++;
	}
	return n;
}

Test(tfjob, every_replica_restarts_keeps_tini_and_gets_the_cluster_key)
{
	char *m = manifest();
	/* OnFailure restarts a failed chief and the servers that exit 138
	 * after the chief timeout; backoffLimit bounds it */
	cr_assert_eq(count(m, "      restartPolicy: OnFailure\n"), 3);
	cr_assert(strstr(m, "    backoffLimit: ") != NULL);
	/* args, not command: command would replace the image's tini */
	cr_assert_eq(count(m, "args: [\"embedding_classifier\""), 3);
	cr_assert_null(strstr(m, "command: [\"embedding_classifier\""));
	/* the key from the Secret, copied mode 0600 by the init container */
	cr_assert_eq(count(m, "secretName: pasco-cluster-key"), 3);
	cr_assert_eq(count(m, "command: [\"install\", \"-m\", \"0600\", "
	                      "\"/etc/pasco/secret/key\", "
	                      "\"/run/pasco/key\"]"),
	    3);
	cr_assert_eq(
	    count(m, "- {name: PASCO_KEY_FILE, value: /run/pasco/key}"), 3);
	/* the pods' (each container's own, for Pod Security "restricted",
	 * is checked by tests/containers) */
	cr_assert_eq(count(m, "\n            runAsNonRoot: true\n"), 3);
	cr_assert_eq(count(m, "runAsUser: 10001"), 3);
	free(m);
}

/* "<job>-<type>-<i>.<ns>.svc[.<domain>]:2222" */
static void
address(char *out, size_t len, const char *type, int i, const char *ns,
    const char *domain)
{
	snprintf(out, len, "%s-%s-%d.%s.svc%s%s:%d", JOB, type, i, ns,
	    domain[0] ? "." : "", domain, PORT);
}

/* The operator's TF_CONFIG for task (type, index). */
static void
tf_config(char *out, size_t len, const char *type, int index, const char *ns,
    const char *domain)
{
	char c0[256], p0[256], p1[256], w0[256], w1[256];
	address(c0, sizeof(c0), "chief", 0, ns, domain);
	address(p0, sizeof(p0), "ps", 0, ns, domain);
	address(p1, sizeof(p1), "ps", 1, ns, domain);
	address(w0, sizeof(w0), "worker", 0, ns, domain);
	address(w1, sizeof(w1), "worker", 1, ns, domain);
	snprintf(out, len,
	    "{\"cluster\":{\"chief\":[\"%s\"],\"ps\":[\"%s\",\"%s\"],"
	    "\"worker\":[\"%s\",\"%s\"]},\"task\":{\"type\":\"%s\","
	    "\"index\":%d},\"environment\":\"cloud\"}",
	    c0, p0, p1, w0, w1, type, index);
}

static void
check_every_task(const char *ns, const char *domain)
{
	static const struct {
		const char *type;
		int         index;
		pasco_role  role;
	} tasks[] = {{"chief", 0, PASCO_ROLE_CHIEF}, {"ps", 0, PASCO_ROLE_PS},
	    {"ps", 1, PASCO_ROLE_PS}, {"worker", 0, PASCO_ROLE_WORKER},
	    {"worker", 1, PASCO_ROLE_WORKER}};

	unsetenv("PASCO_BIND_ADDRESS");
	for (size_t t = 0; t < sizeof(tasks) / sizeof(tasks[0]); t++) {
		pasco_cluster *c;
		char        json[2048], err[256] = "", want[300], listen[320];
		const char *url;

		tf_config(json, sizeof(json), tasks[t].type, tasks[t].index,
		    ns, domain);
		cr_assert_eq(
		    pasco_cluster_parse_json(&c, json, err, sizeof(err)),
		    PASCO_OK, "%s: %s", json, err);
		cr_assert_eq(pasco_cluster_validate(c, err, sizeof(err)),
		    PASCO_OK, "%s: %s", json, err);
		cr_assert_eq(
		    pasco_cluster_task_role(c), tasks[t].role, "%s", json);
		cr_assert_eq(
		    pasco_cluster_task_index(c), tasks[t].index, "%s", json);
		cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_CHIEF), 1);
		cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_PS), 2);
		cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_WORKER), 2);
		cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_EVALUATOR), 0);
		url = pasco_cluster_url(
		    c, tasks[t].role, (size_t) tasks[t].index);
		address(want + 6, sizeof(want) - 6, tasks[t].type,
		    tasks[t].index, ns, domain);
		memcpy(want, "tcp://", 6);
		cr_assert_str_eq(url, want);
		/* a pod listens on every interface at its port: it need not
		 * resolve its own service name */
		cr_assert_eq(pasci_listen_url(url, listen, sizeof(listen)), 0);
		cr_assert_str_eq(listen, "tcp://0.0.0.0:2222", "%s", url);
		pasco_cluster_free(c);
	}
}

Test(tfjob, every_task_of_the_manifest_parses_as_the_operator_writes_it)
{
	check_every_task("default", "");
}

Test(tfjob, another_namespace_and_a_custom_cluster_domain)
{
	/* CUSTOM_CLUSTER_DOMAIN on the operator appends the domain */
	check_every_task("ml-team", "cluster.local");
}

Test(tfjob, the_chief_reads_its_tf_config_from_the_environment)
{
	pasco_cluster *c;
	char           json[2048], err[256] = "", *argv[] = {"prog", NULL};
	int            argc = 1;

	tf_config(json, sizeof(json), "chief", 0, "default", "");
	setenv("TF_CONFIG", json, 1);
	cr_assert_eq(
	    pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)),
	    PASCO_OK, "%s", err);
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_CHIEF);
	cr_assert_str_eq(pasco_cluster_url(c, PASCO_ROLE_PS, 1),
	    "tcp://" JOB "-ps-1.default.svc:2222");
	pasco_cluster_free(c);
}
