/*
 * A task of a real cluster as a child process of the test (the chief):
 * the node program named by an environment variable (set by meson), run
 * with TF_CONFIG {spec, "task": {role, index}} and killed when the test
 * process dies. For the suites that start model_node / graph_node tasks.
 */
#ifndef PASCO_TEST_NODE_SPAWN_H
#define PASCO_TEST_NODE_SPAWN_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Starts the program $node_env as task (role, index) of the cluster
 * spec (a JSON member: "\"cluster\": {...}"); checkpoint_dir, if not
 * NULL, becomes its PASCO_CHECKPOINT_DIR. Skips the test when node_env
 * is not set (run outside meson). */
static inline pid_t
test_spawn_node(const char *node_env, const char *spec, const char *role,
    int index, const char *checkpoint_dir)
{
	char        config[1024];
	const char *node  = getenv(node_env);
	pid_t       chief = getpid(), pid;
	if (node == NULL) {
		cr_skip_test("%s is not set (run through meson)", node_env);
	}
	snprintf(config, sizeof(config),
	    "{%s, \"task\": {\"type\": \"%s\", \"index\": %d}}", spec, role,
	    index);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != chief) {
			_exit(127);
		}
		setenv("TF_CONFIG", config, 1);
		setenv("PASCO_LOG", "0", 1);
		if (checkpoint_dir != NULL) {
			setenv("PASCO_CHECKPOINT_DIR", checkpoint_dir, 1);
		}
		execl(node, node, (char *) NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	return pid;
}

#endif
