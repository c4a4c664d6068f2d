/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memif teardown guard (ls_gate.h): this executable's munmap(), which
 * the dynamic linker binds ahead of libc's for the PMDs loaded with it.
 * Only the EAL interrupt thread's calls wait, and only once an app armed
 * the guard; every other call goes straight to the system call (libc's
 * munmap is that call and nothing else).
 */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_interrupts.h>
#include <rte_rcu_qsbr.h>

#include "ls_gate.h"

static struct rte_rcu_qsbr *gate_qsbr;
static uint64_t gate_waits;

void
ls_app_gate_guard(struct rte_rcu_qsbr *v)
{
	__atomic_store_n(&gate_qsbr, v, __ATOMIC_RELEASE);
}

uint64_t
ls_app_gate_waits(void)
{
	return __atomic_load_n(&gate_waits, __ATOMIC_RELAXED);
}

int
munmap(void *addr, size_t len)
{
	struct rte_rcu_qsbr *v = __atomic_load_n(&gate_qsbr, __ATOMIC_ACQUIRE);

	/* The PMD marked the link down before it unmaps; a grace period
	 * begun now ends after every burst that may have seen it up. */
	if (v != NULL && rte_thread_is_intr()) {
		rte_rcu_qsbr_synchronize(v, RTE_QSBR_THRID_INVALID);
		__atomic_fetch_add(&gate_waits, 1, __ATOMIC_RELAXED);
	}
	return (int)syscall(SYS_munmap, addr, len);
}
