/*
 * The `pasco` command. Subcommands:
 *   pasco launch [--ps N] [--workers M] -- PROGRAM [ARGS...]
 *   pasco version
 */
#include <stdio.h>
#include <string.h>

#include "tools/launch.h"

static int
usage(void)
{
	fprintf(stderr,
	    "usage: pasco COMMAND ...\n"
	    "  launch [--ps N] [--workers M] -- PROGRAM [ARGS...]\n"
	    "         run PROGRAM as a local cluster: N ps tasks, M workers\n"
	    "         and the chief, on free loopback ports\n"
	    "  version\n");
	return 2;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		return usage();
	}
	if (strcmp(argv[1], "launch") == 0) {
		return pasco_launch(argc - 1, argv + 1);
	}
	if (strcmp(argv[1], "version") == 0) {
		printf("pasco 0.1.0\n");
		return 0;
	}
	return usage();
}
