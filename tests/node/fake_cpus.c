/*
 * A preloaded library (LD_PRELOAD) that makes this machine look like one
 * of PASCO_FAKE_CPUS cores to the process: sysconf's and get_nprocs's core
 * counts, and sched_getaffinity's mask when the process may run on more
 * than one CPU (pinned to one, it sees its real mask). What nng, OpenBLAS
 * and Pasco see, to check that a process's thread count does not follow
 * the core count (tests/node/test_threads.c). Only the raw system call is
 * used: the pin that keeps OpenBLAS from starting a pool (node/blas_early.c)
 * calls sched_getaffinity before the C library is initialized.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

extern long __sysconf(int name);

static int
fake_cpus(void)
{
	const char *v = getenv("PASCO_FAKE_CPUS");
	return v != NULL ? atoi(v) : 0;
}

long
sysconf(int name)
{
	int n = fake_cpus();
	if (n > 0 &&
	    (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF)) {
		return n;
	}
	return __sysconf(name);
}

int
get_nprocs(void)
{
	int n = fake_cpus();
	return n > 0 ? n : (int) __sysconf(_SC_NPROCESSORS_ONLN);
}

int
get_nprocs_conf(void)
{
	int n = fake_cpus();
	return n > 0 ? n : (int) __sysconf(_SC_NPROCESSORS_CONF);
}

int
sched_getaffinity(pid_t pid, size_t size, cpu_set_t *mask)
{
	long r = syscall(SYS_sched_getaffinity, pid, size, mask);
	int  n = fake_cpus();
	if (r < 0) {
		return -1;
	}
	memset((char *) mask + r, 0, size - (size_t) r);
	if (n > 0 && CPU_COUNT_S(size, mask) > 1) {
		CPU_ZERO_S(size, mask);
		for (int i = 0; i < n && (size_t) i < 8 * size; i++) {
			CPU_SET_S(i, size, mask);
		}
	}
	return 0;
}
