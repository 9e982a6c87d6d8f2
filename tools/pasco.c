/*
 * The `pasco` command. Subcommands:
 *   pasco launch [OPTIONS] -- PROGRAM [ARGS...]
 *   pasco slurm [--ps N] [--port-base P] -- PROGRAM [ARGS...]
 *   pasco checkpoint inspect [--allow-format-1] DIR
 *   pasco top [--once] (--file PATH | --tf-config PORT | HOST:PORT...)
 *   pasco version
 * Options before the subcommand: --help, --version. An unknown option or
 * subcommand is named on stderr, with a hint to --help, and exits 2.
 */
#include <getopt.h>
#include <pasco.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "launch.h"
#include "slurm.h"
#include "top.h"

static const char usage_text[] =
    "usage: pasco [--help] [--version] COMMAND ...\n"
    "  launch [--ps N] [--workers M] [--evaluator] [--restart]\n"
    "         -- PROGRAM [ARGS...]\n"
    "         run PROGRAM as a local cluster: N ps tasks, M workers\n"
    "         and the chief, on free loopback ports (pasco launch --help)\n"
    "  slurm [--ps N] [--port-base P] -- PROGRAM [ARGS...]\n"
    "         run by each task of an srun step: PROGRAM with the TF_CONFIG\n"
    "         derived from Slurm's variables (pasco slurm --help)\n"
    "  checkpoint inspect [--allow-format-1] DIR\n"
    "         list the variables, shapes and shards of a checkpoint, and\n"
    "         check every tensor against its checksum (exit 1 if damaged)\n"
    "         (DIR: a ckpt-<step> directory, or a directory of them; a\n"
    "         format 1 checkpoint, without checksums, exits 1 unless\n"
    "         --allow-format-1)\n"
    "  top [--once] [--interval S] (--file PATH | --tf-config PORT |\n"
    "      HOST:PORT...)\n"
    "         a live view of a running cluster from its tasks' metrics\n"
    "         endpoints (--metrics-port), one line per task, like top\n"
    "         (pasco top --help)\n"
    "  version\n"
    "         print the version\n";

static const char checkpoint_usage_text[] =
    "usage: pasco checkpoint inspect [--allow-format-1] DIR\n"
    "  list the variables, shapes and shards of a checkpoint, and check\n"
    "  every tensor against its checksum (exit 1 if damaged)\n"
    "  DIR: a ckpt-<step> directory, or a directory of them\n"
    "  --allow-format-1: also read a format-1 checkpoint, which carries\n"
    "    no checksums (a warning says so)\n";

/* --help (or -h) anywhere after `checkpoint`. */
static bool
asks_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			return true;
		}
	}
	return false;
}

int
main(int argc, char **argv)
{
	static const struct option options[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
	int opt;

	opterr = 0; /* errors are reported below, naming the option */
	while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("pasco %s\n", PASCO_VERSION);
			return 0;
		default:
			return tool_usage_error(
			    "pasco", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		return tool_usage_error("pasco", "%s", "no command given");
	}
	argc -= optind;
	argv += optind;
	if (strcmp(argv[0], "launch") == 0) {
		return pasco_launch(argc, argv);
	}
	if (strcmp(argv[0], "top") == 0) {
		return pasco_top(argc, argv);
	}
	if (strcmp(argv[0], "slurm") == 0) {
		return pasco_slurm(argc, argv);
	}
	if (strcmp(argv[0], "checkpoint") == 0) {
		if (asks_help(argc, argv)) {
			fputs(checkpoint_usage_text, stdout);
			return 0;
		}
		/* --allow-format-1: read a checkpoint without checksums */
		bool allow =
		    argc == 4 && strcmp(argv[2], "--allow-format-1") == 0;
		if (argc != 3 + allow || strcmp(argv[1], "inspect") != 0) {
			return tool_usage_error("pasco", "%s",
			    "usage: pasco checkpoint inspect "
			    "[--allow-format-1] DIR");
		}
		return pasco_checkpoint_inspect_with(argv[2 + allow], stdout,
		           &(pasco_checkpoint_read_options){
		               .allow_format_1 = allow}) == 0
		           ? 0
		           : 1;
	}
	if (strcmp(argv[0], "version") == 0) {
		printf("pasco %s\n", PASCO_VERSION);
		return 0;
	}
	return tool_usage_error("pasco", "unknown command '%s'", argv[0]);
}
