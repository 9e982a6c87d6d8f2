/*
 * The processes of a launched cluster that bench/step_cost measures, and
 * their CPU time and context switches read from /proc (step_procs.c).
 */
#ifndef PASCO_BENCH_STEP_PROCS_H
#define PASCO_BENCH_STEP_PROCS_H

#include <stddef.h>
#include <sys/types.h>

#define MAX_PS 16
#define MAX_PROCS (2 + MAX_PS)

/* The processes measured: [0] the chief (this one), [1] worker 0, [2 + i]
 * ps i. n is 1 when the others were not found. */
typedef struct procs {
	pid_t  pid[MAX_PROCS];
	size_t n;
} procs;

/* One process's counters at one moment. */
typedef struct usage {
	double cpu;       /* seconds, user + system */
	double switches;  /* voluntary + involuntary */
	double voluntary; /* of them */
} usage;

/* One figure: a rate and, per process of procs, CPU and switches per step
 * (-1: not measured). */
typedef struct cost {
	double rate;
	long   steps; /* timed */
	double cpu_us[MAX_PROCS];
	double switches[MAX_PROCS];
	double voluntary[MAX_PROCS]; /* of the switches */
} cost;

/* Context switches of process pid's live threads into *all, the
 * voluntary ones into *vol (summed over /proc/PID/task/(each)/status). */
void switches_of(pid_t pid, double *all, double *vol);

/* Reads every process of p into u. */
void snapshot(const procs *p, usage *u);

/* c's per-step figures of the n first processes, from a to b. */
void cost_between(cost *c, size_t n, const usage *a, const usage *b);

/* Finds worker 0 and the launch's nps ps among the launcher's children
 * into p; p->n stays 1 (the chief alone) unless every one was found. */
void procs_find(procs *p, size_t nps);

#endif
