/*
 * The processes of a launched cluster that bench/step_cost measures (the
 * chief's siblings, found by their TF_CONFIG) and their CPU time and
 * context switches from /proc: see step_cost.c's opening comment.
 */
#include "step_procs.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* Reads up to len - 1 bytes of path into buf, NUL-terminated: the count,
 * or -1. */
static long
read_text(const char *path, char *buf, size_t len)
{
	FILE  *f = fopen(path, "r");
	size_t n;
	if (f == NULL) {
		return -1;
	}
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return (long) n;
}

/* Context switches of process pid's live threads into *all, the
 * voluntary ones into *vol (-1 and -1 when unreadable). The status lines
 * are matched with their newline: "voluntary_" is also the tail of
 * "nonvoluntary_". */
void
switches_of(pid_t pid, double *all, double *vol)
{
	char           path[320], buf[4096], *v, *nv;
	double         n = 0, nvol = 0;
	DIR           *d;
	struct dirent *e;
	*all = *vol = -1;
	snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
	if ((d = opendir(path)) == NULL) {
		return;
	}
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status",
		    (int) pid, e->d_name);
		if (e->d_name[0] == '.' ||
		    read_text(path, buf, sizeof(buf)) < 0 ||
		    (v = strstr(buf, "\nvoluntary_ctxt_switches:")) == NULL ||
		    (nv = strstr(buf, "\nnonvoluntary_ctxt_switches:")) ==
		        NULL) {
			continue; /* a thread that ended meanwhile */
		}
		nvol += strtod(v + 25, NULL);
		n += strtod(v + 25, NULL) + strtod(nv + 28, NULL);
	}
	closedir(d);
	*all = n;
	*vol = nvol;
}

/* Reads every process of p into u. The reads (a few files of /proc per
 * process) cost the chief far under one tick. */
void
snapshot(const procs *p, usage *u)
{
	for (size_t i = 0; i < p->n; i++) {
		u[i].cpu = bench_cpu_of(p->pid[i]);
		switches_of(p->pid[i], &u[i].switches, &u[i].voluntary);
	}
}

/* c's per-step figures of the n first processes, from a to b. */
void
cost_between(cost *c, size_t n, const usage *a, const usage *b)
{
	for (size_t i = 0; i < MAX_PROCS; i++) {
		c->cpu_us[i] = c->switches[i] = c->voluntary[i] = -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (a[i].cpu >= 0 && b[i].cpu >= 0) {
			c->cpu_us[i] =
			    (b[i].cpu - a[i].cpu) * 1e6 / (double) c->steps;
		}
		if (a[i].switches >= 0 && b[i].switches >= 0) {
			c->switches[i] = (b[i].switches - a[i].switches) /
			                 (double) c->steps;
			c->voluntary[i] = (b[i].voluntary - a[i].voluntary) /
			                  (double) c->steps;
		}
	}
}

/* The role and index of process pid if its TF_CONFIG names the same
 * cluster as own's, whose "task" starts at own + at. 0 or -1. */
static int
sibling_task(pid_t pid, const char *own, size_t at, char *type, int *index)
{
	static char buf[1 << 16];
	char        path[64];
	long        n;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
	if ((n = read_text(path, buf, sizeof(buf))) < 0) {
		return -1;
	}
	for (char *s = buf; s < buf + n; s += strlen(s) + 1) {
		if (strncmp(s, "TF_CONFIG=", 10) != 0) {
			continue;
		}
		s += 10;
		if (strlen(s) <= at || strncmp(s, own, at) != 0) {
			return -1; /* another cluster */
		}
		return sscanf(s + at,
		           "\"task\" : { \"type\" : \"%15[^\"]\" , \"index\" "
		           ": %d",
		           type, index) == 2
		           ? 0
		           : -1;
	}
	return -1;
}

/* Finds worker 0 and the launch's nps ps among the launcher's children
 * into p; p->n stays 1 (the chief alone) unless every one was found. */
void
procs_find(procs *p, size_t nps)
{
	const char *own = getenv("TF_CONFIG"), *task;
	char        path[64], kids[4096], type[16], *s, *end;
	size_t      found  = 0;
	pid_t       parent = getppid();
	int         index;

	*p = (procs){.pid = {getpid()}, .n = 1};
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int) parent,
	    (int) parent);
	if (own == NULL || (task = strstr(own, "\"task\"")) == NULL ||
	    read_text(path, kids, sizeof(kids)) < 0) {
		return;
	}
	for (s = kids;; s = end) {
		pid_t pid = (pid_t) strtol(s, &end, 10);
		if (end == s) {
			break;
		}
		if (sibling_task(
		        pid, own, (size_t) (task - own), type, &index) != 0) {
			continue;
		}
		if (strcmp(type, "worker") == 0 && index == 0) {
			p->pid[1] = pid;
			found++;
		} else if (strcmp(type, "ps") == 0 && index >= 0 &&
		           (size_t) index < nps) {
			p->pid[2 + index] = pid;
			found++;
		}
	}
	p->n = found == 1 + nps ? 2 + nps : 1;
}
