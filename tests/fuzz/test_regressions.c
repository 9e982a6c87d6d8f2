/*
 * Replays every input under fuzz/regressions/<target>/ through the entry
 * point of its fuzz target (fuzz/fuzz_<target>.c, compiled here without
 * libFuzzer), so that the normal suite keeps fixed fuzz findings fixed. A
 * target's invariant checks abort, which fails the test; the sanitized
 * builds add ASan, UBSan and LeakSanitizer.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_util.h"

#ifndef PASCO_FUZZ_REGRESSIONS
#error "PASCO_FUZZ_REGRESSIONS: the fuzz/regressions folder (meson sets it)"
#endif

typedef int (*fuzz_one)(const uint8_t *data, size_t size);

static uint8_t *
read_input(const char *path, size_t *len)
{
	FILE    *f = fopen(path, "rb");
	uint8_t *buf;
	long     n;
	cr_assert(f != NULL, "cannot open %s", path);
	cr_assert(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0);
	rewind(f);
	buf = malloc((size_t) n + 1);
	cr_assert(buf != NULL);
	cr_assert(fread(buf, 1, (size_t) n, f) == (size_t) n);
	fclose(f);
	*len = (size_t) n;
	return buf;
}

/* Runs one each file of fuzz/regressions/<target>/ (none is fine). */
static void
replay(const char *target, fuzz_one one)
{
	char           dir[1024];
	DIR           *d;
	struct dirent *e;
	snprintf(dir, sizeof(dir), "%s/%s", PASCO_FUZZ_REGRESSIONS, target);
	if ((d = opendir(dir)) == NULL) {
		return;
	}
	while ((e = readdir(d)) != NULL) {
		char     path[2048];
		uint8_t *data;
		size_t   len;
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cr_log_info("replaying %s", path);
		data = read_input(path, &len);
		one(data, len);
		free(data);
	}
	closedir(d);
	fuzz_remove_temp();
}

TestSuite(regressions, .timeout = 120);

Test(regressions, wire_inputs_replay_cleanly)
{
	replay("wire", fuzz_wire_one);
}

Test(regressions, ps_handler_inputs_replay_cleanly)
{
	replay("ps_handler", fuzz_ps_handler_one);
}

Test(regressions, worker_handler_inputs_replay_cleanly)
{
	replay("worker_handler", fuzz_worker_handler_one);
}

Test(regressions, tfrecord_inputs_replay_cleanly)
{
	replay("tfrecord", fuzz_tfrecord_one);
}

Test(regressions, example_inputs_replay_cleanly)
{
	replay("example", fuzz_example_one);
}

Test(regressions, csv_inputs_replay_cleanly)
{
	replay("csv", fuzz_csv_one);
}

Test(regressions, cluster_inputs_replay_cleanly)
{
	replay("cluster", fuzz_cluster_one);
}

Test(regressions, safetensors_inputs_replay_cleanly)
{
	replay("safetensors", fuzz_safetensors_one);
}

Test(regressions, bulk_frame_inputs_replay_cleanly)
{
	replay("bulk_frame", fuzz_bulk_frame_one);
}

Test(regressions, model_config_inputs_replay_cleanly)
{
	replay("model_config", fuzz_model_config_one);
}

Test(regressions, graph_step_inputs_replay_cleanly)
{
	replay("graph_step", fuzz_graph_step_one);
}

/* The seeds are valid inputs: they must replay cleanly too. */
Test(regressions, seed_corpora_replay_cleanly)
{
	static const struct {
		const char *name;
		fuzz_one    one;
	} targets[] = {{"wire", fuzz_wire_one},
	    {"ps_handler", fuzz_ps_handler_one},
	    {"worker_handler", fuzz_worker_handler_one},
	    {"tfrecord", fuzz_tfrecord_one}, {"example", fuzz_example_one},
	    {"csv", fuzz_csv_one}, {"cluster", fuzz_cluster_one},
	    {"safetensors", fuzz_safetensors_one},
	    {"bulk_frame", fuzz_bulk_frame_one},
	    {"model_config", fuzz_model_config_one},
	    {"graph_step", fuzz_graph_step_one}};
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char dir[64];
		snprintf(dir, sizeof(dir), "../corpus/%s", targets[i].name);
		replay(dir, targets[i].one);
	}
}
