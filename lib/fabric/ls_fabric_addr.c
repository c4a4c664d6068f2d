/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host address table: which host owns an address. The emulator asks
 * for every packet it routes, so it is an open-addressing hash table of
 * node indexes (f->addr_tab, filled once at load and never changed) with a
 * multiply-mix hash; IPv4 lookups are inline in ls_fabric.h and share the
 * hash, IPv6 ones are here.
 */
#include <stdbool.h>
#include <string.h>

#include "ls_fabric_priv.h"

/* Slot of an address in f->addr_tab: looked up for every packet the
 * emulator routes, so a multiply-mix rather than jhash. */
static inline uint32_t
addr_slot_hash(const struct ls_addr *a)
{
	uint64_t h = a->family;
	uint64_t v0, v1;

	if (a->family == LS_AF_INET)
		return ls_fab_addr_hash_v4(a->a); /* shared with the inline lookup */
	memcpy(&v0, a->a, 8);
	memcpy(&v1, a->a + 8, 8);
	h ^= v0 ^ (v1 * 0xc2b2ae3d27d4eb4fULL);
	h *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(h >> 32);
}

/* Address equality without a memcmp call (per packet). */
static inline bool
addr_same(const struct ls_addr *x, const struct ls_addr *y)
{
	uint64_t a0, a1, b0, b1;

	if (x->family != y->family)
		return false;
	if (x->family == LS_AF_INET) {
		uint32_t a, b;

		memcpy(&a, x->a, 4);
		memcpy(&b, y->a, 4);
		return a == b;
	}
	memcpy(&a0, x->a, 8);
	memcpy(&a1, x->a + 8, 8);
	memcpy(&b0, y->a, 8);
	memcpy(&b1, y->a + 8, 8);
	return a0 == b0 && a1 == b1;
}

/* Insert a host's address (node idx) into the lookup table. */
void
ls_fab_addr_add(struct ls_fabric *f, const struct ls_addr *a, uint16_t idx)
{
	uint32_t h;

	if (a->family == 0)
		return;
	h = addr_slot_hash(a);
	while (f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)] != 0)
		h++;
	f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)] = (uint16_t)(idx + 1);
}

/* Per packet in the emulator: a hash probe rather than a scan of every host. */
int
ls_fab_host_by_addr(const struct ls_fabric *f, const struct ls_addr *a)
{
	uint32_t h;

	if (f == NULL || a == NULL ||
	    (a->family != LS_AF_INET && a->family != LS_AF_INET6))
		return -1;
	if (a->family == LS_AF_INET)
		return ls_fab_host_by_v4(f, a->a);
	h = addr_slot_hash(a);
	for (uint32_t k = 0; k < LS_FAB_ADDR_TAB; k++, h++) {
		uint16_t e = f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)];
		const struct ls_fab_node *n;

		if (e == 0)
			return -1;
		n = &f->nodes[e - 1];
		if (addr_same(a->family == LS_AF_INET ? &n->addr4 : &n->addr6, a))
			return e - 1;
	}
	return -1;
}
