/* `pasco top`: a live view of a running cluster's metrics endpoints. */
#ifndef PASCO_TOOLS_TOP_H
#define PASCO_TOOLS_TOP_H

/* argv[0] is "top". Returns the process exit status. */
int pasco_top(int argc, char **argv);

#endif
