/* `pasco launch`: a local cluster of one program. */
#ifndef PASCO_TOOLS_LAUNCH_H
#define PASCO_TOOLS_LAUNCH_H

/* argv[0] is "launch". Returns the process exit status. */
int pasco_launch(int argc, char **argv);

#endif
