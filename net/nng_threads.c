/*
 * nng's thread pools, sized by the process (pasci_nng_threads_set). nng
 * starts its threads at its first use: a task pool that runs completion
 * callbacks, expire threads that time operations out, a poller and a few
 * resolver threads. Left alone, nng 1.5 (Debian 12's 1.5.2) starts 2 task
 * threads per core (at most 16) and 1 expire thread per core, from
 * sysconf(_SC_NPROCESSORS_ONLN), with no way to choose at run time: a ps
 * or worker on 16 cores held 32 of nng's threads whatever it did.
 *
 * nng 1.7 and later take the counts through nng_init_set_parameter. For
 * 1.5 and 1.6, libnng's own call to sysconf is pointed, only while this
 * file starts nng, at a function that answers the count chosen: its slot
 * in libnng's global offset table (which the dynamic linker filled with
 * sysconf's address) is overwritten, nng is started, and the slot is put
 * back. No other object's sysconf changes, and nng asks for the core
 * count only while it starts (its task pool and expire threads).
 *
 * Threads: called once, from the main thread, before any other thread
 * uses nng (pasco_main does it first).
 */
#include "nng_threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pasco/error.h"
#include "util.h"

#define NNG_MAX_TASK 16 /* nng 1.5's compiled-in cap on its task pool */

#define NNG_SIZED_AT_RUN_TIME                                                 \
	(NNG_MAJOR_VERSION == 1 && NNG_MINOR_VERSION >= 7)

pasci_nng_threads
pasci_nng_threads_for(int n)
{
	return (pasci_nng_threads){
	    .task     = 2 * n < NNG_MAX_TASK ? 2 * n : NNG_MAX_TASK,
	    .expire   = n,
	    .poller   = 1,
	    .resolver = NNG_SIZED_AT_RUN_TIME ? 1 : 4,
	};
}

/* Starts nng: a socket opened and closed. */
static int
nng_start(char *err, size_t errlen)
{
	nng_socket s;
	int        rv = nng_req0_open(&s);
	if (rv != 0) {
		pasci_fmt(
		    err, errlen, "cannot start nng: %s", nng_strerror(rv));
		return PASCO_EUNAVAILABLE;
	}
	nng_close(s);
	return PASCO_OK;
}

#if NNG_SIZED_AT_RUN_TIME

static int
nng_size_and_start(int n, char *err, size_t errlen)
{
	pasci_nng_threads t = pasci_nng_threads_for(n);
	nng_init_set_parameter(NNG_INIT_NUM_TASK_THREADS, (uint64_t) t.task);
	nng_init_set_parameter(
	    NNG_INIT_NUM_EXPIRE_THREADS, (uint64_t) t.expire);
	nng_init_set_parameter(
	    NNG_INIT_NUM_POLLER_THREADS, (uint64_t) t.poller);
	nng_init_set_parameter(
	    NNG_INIT_NUM_RESOLVER_THREADS, (uint64_t) t.resolver);
	return nng_start(err, errlen);
}

#else

#if __ELF_NATIVE_CLASS == 64
#define REL_SYM ELF64_R_SYM
#else
#define REL_SYM ELF32_R_SYM
#endif

static long nng_cpus; /* what libnng is told while it starts */

static long
sysconf_for_nng(int name)
{
	if (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF) {
		return nng_cpus;
	}
	return sysconf(name);
}

/* A dynamic table's address: glibc relocates them in place on most
 * machines, leaves them as offsets on the others. */
static uintptr_t
dyn_addr(const struct link_map *m, ElfW(Addr) v)
{
	return v < m->l_addr ? m->l_addr + v : v;
}

/* The slot in m's global offset table through which it calls sysconf;
 * NULL if m has none (or tables this does not read). */
static void **
sysconf_slot(const struct link_map *m)
{
	const ElfW(Sym) *syms = NULL;
	const char *strs      = NULL;
	const ElfW(Rela) *rel = NULL;
	size_t relsz = 0, pltrel = 0;

	for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			syms = (const void *) dyn_addr(m, d->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strs = (const void *) dyn_addr(m, d->d_un.d_ptr);
			break;
		case DT_JMPREL:
			rel = (const void *) dyn_addr(m, d->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			relsz = d->d_un.d_val;
			break;
		case DT_PLTREL:
			pltrel = d->d_un.d_val;
			break;
		}
	}
	if (syms == NULL || strs == NULL || rel == NULL || pltrel != DT_RELA) {
		return NULL;
	}
	for (size_t i = 0; i < relsz / sizeof(*rel); i++) {
		const ElfW(Sym) *s = &syms[REL_SYM(rel[i].r_info)];
		if (strcmp(strs + s->st_name, "sysconf") == 0) {
			return (void **) (m->l_addr + rel[i].r_offset);
		}
	}
	return NULL;
}

/* Whether addr lies in the read-only-after-relocation part of the object
 * loaded at base (a library linked with -z now has its offset table
 * there). */
typedef struct relro_find {
	uintptr_t base, addr;
	bool      in;
} relro_find;

static int
relro_check(struct dl_phdr_info *info, size_t size, void *arg)
{
	relro_find *f = arg;
	(void) size;
	if (info->dlpi_addr != f->base) {
		return 0;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo        = f->base + p->p_vaddr;
		if (p->p_type == PT_GNU_RELRO && f->addr >= lo &&
		    f->addr < lo + p->p_memsz) {
			f->in = true;
		}
	}
	return 1;
}

/* Writes v to slot, its page made writable for the write and read-only
 * again after it if it lies in the object's RELRO part. */
static bool
slot_write(const struct link_map *m, void **slot, void *v)
{
	long  page   = sysconf(_SC_PAGESIZE);
	void *base   = (void *) ((uintptr_t) slot & ~((uintptr_t) page - 1));
	relro_find f = {m->l_addr, (uintptr_t) slot, false};
	dl_iterate_phdr(relro_check, &f);
	if (mprotect(base, (size_t) page, PROT_READ | PROT_WRITE) != 0) {
		return false;
	}
	__atomic_store_n(slot, v, __ATOMIC_SEQ_CST);
	if (f.in) {
		mprotect(base, (size_t) page, PROT_READ);
	}
	return true;
}

static int
nng_size_and_start(int n, char *err, size_t errlen)
{
	void            *h = dlopen("libnng.so.1", RTLD_LAZY | RTLD_NOLOAD);
	struct link_map *m = NULL;
	void           **slot, *was;
	int              rv;

	if (h == NULL || dlinfo(h, RTLD_DI_LINKMAP, &m) != 0 ||
	    (slot = sysconf_slot(m)) == NULL) {
		if (h != NULL) {
			dlclose(h);
		}
		pasci_fmt(err, errlen,
		    "nng %s is not a shared libnng.so.1 whose call to sysconf "
		    "this can redirect: it sizes its own thread pools",
		    nng_version());
		return PASCO_EUNAVAILABLE;
	}
	nng_cpus = n;
	was      = __atomic_load_n(slot, __ATOMIC_SEQ_CST);
	if (!slot_write(m, slot, (void *) sysconf_for_nng)) {
		dlclose(h);
		pasci_fmt(err, errlen,
		    "cannot size nng's thread pools: its offset table "
		    "cannot be written (%s)",
		    strerror(errno));
		return PASCO_EUNAVAILABLE;
	}
	rv = nng_start(err, errlen);
	slot_write(m, slot, was);
	dlclose(h);
	return rv;
}

#endif

int
pasci_nng_threads_set(int n, char *err, size_t errlen)
{
	if (n < 1 || n > 64) {
		pasci_fmt(err, errlen,
		    "nng's thread count %d is out of range (1 to 64)", n);
		return PASCO_EINVAL;
	}
	return nng_size_and_start(n, err, errlen);
}
