#include "helpers.h"

#include <stdlib.h>
#include <string.h>

TestSuite(cluster, .timeout = 10);

static pasco_cluster *
parse_ok(const char *json)
{
	pasco_cluster *c;
	char           err[256];
	int rv = pasco_cluster_parse_json(&c, json, err, sizeof(err));
	cr_assert_eq(rv, PASCO_OK, "%s: %s", json, err);
	return c;
}

/* Parses (and validates, when parsing passes) and expects an error whose
 * message contains want. */
static void
expect_error(const char *json, const char *want)
{
	pasco_cluster *c;
	char           err[256] = "";
	int rv = pasco_cluster_parse_json(&c, json, err, sizeof(err));
	if (rv == 0) {
		rv = pasco_cluster_validate(c, err, sizeof(err));
		pasco_cluster_free(c);
	} else {
		cr_assert_null(c);
	}
	cr_assert_eq(rv, PASCO_EINVAL, "%s was accepted", json);
	cr_assert(
	    strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
}

Test(cluster, parses_tf_config)
{
	pasco_cluster *c =
	    parse_ok("{\"cluster\": {\"chief\": [\"host0:2222\"],"
	             "\"worker\": [\"host1:2222\", \"host2:2222\"], \"ps\": "
	             "[\"host3:2222\"]},"
	             "\"task\": {\"type\": \"worker\", \"index\": 1}}");
	char err[128];
	PASCO_PASS(pasco_cluster_validate(c, err, sizeof(err)));
	cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_WORKER), 2);
	cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_PS), 1);
	cr_assert_str_eq(
	    pasco_cluster_url(c, PASCO_ROLE_WORKER, 1), "tcp://host2:2222");
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_WORKER);
	cr_assert_eq(pasco_cluster_task_index(c), 1);
	cr_assert_null(pasco_cluster_url(c, PASCO_ROLE_WORKER, 2));
	pasco_cluster_free(c);
}

Test(cluster, master_is_an_alias_of_chief)
{
	pasco_cluster *c =
	    parse_ok("{\"cluster\": {\"master\": [\"h:1\"],"
	             "\"worker\": [\"h:2\"], \"ps\": [\"h:3\"]},"
	             "\"task\": {\"type\": \"master\", \"index\": 0}}");
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_CHIEF);
	cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_CHIEF), 1);
	pasco_cluster_free(c);
}

Test(cluster, evaluator_may_have_only_a_task)
{
	pasco_cluster *c =
	    parse_ok("{\"task\": {\"type\": \"evaluator\", \"index\": 0}}");
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_EVALUATOR);
	pasco_cluster_free(c);
}

Test(cluster, rejects_what_tensorflow_rejects)
{
	expect_error("{}", "Cluster spec must be non-empty");
	expect_error("{\"cluster\": {}}", "Cluster spec must be non-empty");
	expect_error(
	    "{\"cluster\": {\"worker\": [\"h:1\"]}}", "at least one ps");
	expect_error(
	    "{\"cluster\": {\"ps\": [\"h:1\"]}}", "at least one worker");
	expect_error(
	    "{\"cluster\": {\"chief\": [\"h:1\", \"h:2\"], \"worker\": "
	    "[\"h:3\"], \"ps\": [\"h:4\"]}}",
	    "at most one 'chief'");
	expect_error(
	    "{\"cluster\": {\"chief\": [\"h:1\"], \"master\": [\"h:2\"],"
	    "\"worker\": [\"h:3\"], \"ps\": [\"h:4\"]}}",
	    "at most one 'chief'");
	expect_error("{\"cluster\": {\"trainer\": [\"h:1\"]}}",
	    "Disallowed task type found in cluster spec");
	expect_error(
	    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:2\"]},"
	    "\"task\": {\"type\": \"gpu\", \"index\": 0}}",
	    "Unrecognized task_type");
	expect_error(
	    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:2\"]},"
	    "\"task\": {\"type\": \"worker\", \"index\": 1}}",
	    "out of range");
	expect_error(
	    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:2\"]},"
	    "\"task\": {\"type\": \"worker\", \"index\": -1}}",
	    "out of range");
	expect_error("{\"cluster\": {\"worker\": [\"h:1\"", "not valid JSON");
	expect_error("[1, 2]", "must be a JSON object");
	expect_error("{\"cluster\": {\"worker\": \"h:1\"}}", "must be a list");
	expect_error(
	    "{\"cluster\": {\"worker\": [\"nohostport\"]}}", "not host:port");
	expect_error("{\"cluster\": {\"worker\": [7]}}", "not a string");
}

Test(cluster, flags_override_and_are_removed_from_argv)
{
	char *argv[] = {"prog", "--ps-hosts=h:1", "--worker-hosts", "h:2,h:3",
	    "--epochs", "5", "--task-type=worker", "--task-index", "1", NULL};
	int   argc   = 9;
	pasco_cluster *c;
	char           err[256];
	setenv("TF_CONFIG", "{\"cluster\": {\"bogus\": []}}", 1);
	PASCO_PASS(pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)));
	cr_assert_eq(argc, 3);
	cr_assert_str_eq(argv[1], "--epochs");
	cr_assert_str_eq(argv[2], "5");
	cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_WORKER), 2);
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_WORKER);
	cr_assert_eq(pasco_cluster_task_index(c), 1);
	pasco_cluster_free(c);
}

Test(cluster, tf_config_is_read_when_no_flags)
{
	char          *argv[] = {"prog", NULL};
	int            argc   = 1;
	pasco_cluster *c;
	char           err[256];
	setenv("TF_CONFIG",
	    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": "
	    "[\"inproc://x\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}",
	    1);
	PASCO_PASS(pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)));
	cr_assert_str_eq(pasco_cluster_url(c, PASCO_ROLE_PS, 0), "inproc://x");
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_PS);
	pasco_cluster_free(c);
	unsetenv("TF_CONFIG");
	PASCO_FAIL(pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)),
	    PASCO_ENOTFOUND);
	cr_assert(strstr(err, "TF_CONFIG") != NULL);
}

Test(cluster, bad_task_index_flag_is_rejected)
{
	char *argv[] = {"prog", "--ps-hosts=h:1", "--worker-hosts=h:2",
	    "--task-type=ps", "--task-index=x", NULL};
	int   argc   = 5;
	pasco_cluster *c;
	char           err[256];
	PASCO_FAIL(pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "--task-index") != NULL, "%s", err);
}

/* What TensorFlow's TFConfigClusterResolver takes, and what launchers
 * (Kubeflow's training operator, hand-written scripts) write. */
Test(cluster, accepts_string_indices_environment_and_rpc_layer)
{
	pasco_cluster *c =
	    parse_ok("{\"cluster\": {\"worker\": [\"h:1\", \"h:2\"],"
	             "\"ps\": [\"h:3\"]}, \"task\": {\"type\": \"worker\","
	             "\"index\": \"1\"}, \"environment\": \"cloud\","
	             "\"rpc_layer\": \"grpc\"}");
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_WORKER);
	cr_assert_eq(pasco_cluster_task_index(c), 1);
	pasco_cluster_free(c);
	c = parse_ok("{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:3\"],"
	             "\"evaluator\": [\"h:4\"]}, \"task\": {\"type\": "
	             "\"evaluator\", \"index\": 0.0}}");
	cr_assert_eq(pasco_cluster_task_role(c), PASCO_ROLE_EVALUATOR);
	cr_assert_eq(pasco_cluster_count(c, PASCO_ROLE_EVALUATOR), 1);
	cr_assert_eq(pasco_cluster_task_index(c), 0);
	pasco_cluster_free(c);
}

Test(cluster, rejects_indices_that_are_no_integers)
{
	static const char *head = "{\"cluster\": {\"worker\": [\"h:1\"], "
	                          "\"ps\": [\"h:2\"]}, \"task\": {\"type\": "
	                          "\"worker\", \"index\": ";
	const char *bad[][2] = {{"0.5}}", "not 0.5"}, {"\"0.5\"}}", "not 0.5"},
	    {"\"one\"}}", "not one"}, {"\"\"}}", "must be an integer"},
	    {"true}}", "another type"}, {"[0]}}", "another type"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char json[256];
		snprintf(json, sizeof(json), "%s%s", head, bad[i][0]);
		expect_error(json, bad[i][1]);
	}
	expect_error(
	    "{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": [\"h:2\"]},"
	    "\"rpc_layer\": 3}",
	    "\"rpc_layer\" must be a string");
}

Test(cluster, rejects_two_tasks_at_one_address)
{
	expect_error("{\"cluster\": {\"worker\": [\"h:1\", \"h:2\"],"
	             "\"ps\": [\"h:2\"]}}",
	    "worker 1 and ps 0 have the same address tcp://h:2");
	expect_error("{\"cluster\": {\"worker\": [\"h:1\", \"h:1\"],"
	             "\"ps\": [\"h:2\"]}}",
	    "worker 0 and worker 1 have the same address");

	pasco_cluster *c;
	char           err[256] = "";
	char *argv[] = {"prog", "--worker-hosts=h:1", "--ps-hosts=h:1",
	    "--task-type=ps", NULL};
	int   argc   = 4;
	cr_assert_eq(
	    pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "same address") != NULL, "%s", err);
}

/* A port no other task could dial (0 lets the kernel choose one), or no
 * port at all, is refused naming the task. */
Test(cluster, rejects_port_zero_and_out_of_range_ports_naming_the_task)
{
	expect_error("{\"cluster\": {\"worker\": [\"h:1\", \"h:0\"], \"ps\": "
	             "[\"h:2\"]}}",
	    "address 'h:0' of job 'worker' (worker 1): port 0 is out of "
	    "range; a task's port is 1 to 65535");
	expect_error("{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": "
	             "[\"h:65536\"]}}",
	    "(ps 0): port 65536 is out of range");
	expect_error("{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": "
	             "[\"h:99999999999999999999\"]}}",
	    "(ps 0): port 99999999999999999999 is out of range");
	expect_error("{\"cluster\": {\"worker\": [\"tcp://h:0\"], \"ps\": "
	             "[\"h:2\"]}}",
	    "address 'tcp://h:0' of job 'worker' (worker 0): port 0");
	expect_error("{\"cluster\": {\"worker\": [\"h:1\"], \"ps\": "
	             "[\"tls+tcp://[::1]:0\"]}}",
	    "(ps 0): port 0 is out of range");
	expect_error("{\"cluster\": {\"worker\": [\"tcp://h\"], \"ps\": "
	             "[\"h:2\"]}}",
	    "address 'tcp://h' of job 'worker' (worker 0) is not host:port");
	/* the bounds, IPv6 and URLs without ports are taken */
	pasco_cluster_free(parse_ok(
	    "{\"cluster\": {\"worker\": [\"h:65535\", \"tcp://[::1]:1\"], "
	    "\"ps\": [\"inproc://ps0\"], \"chief\": [\"tls+tcp://h:7/\"]}}"));
	/* flags go through the same check */
	char *argv[] = {"prog", "--ps-hosts", "h:1", "--worker-hosts", "h:0",
	    NULL};
	int            argc = 5;
	pasco_cluster *c;
	char           err[256] = "";
	cr_assert_eq(pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)),
	    PASCO_EINVAL, "%s", err);
	cr_assert(strstr(err, "(worker 0): port 0") != NULL, "%s", err);
}
