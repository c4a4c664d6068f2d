/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event heap: which channel delivers next.
 *
 * Every channel computes when each packet it accepts reaches the far end;
 * this binary heap of channels, keyed by the delivery time of their oldest
 * packet, releases deliveries in global time order. It is consulted per
 * packet by forward.c and traffic.c, so it lives in a header, inline, and
 * its state is the emulator lcore's alone.
 */
#ifndef LSF_EVENT_HEAP_H
#define LSF_EVENT_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>

#include "fabric.h"

/* Channels with packets in flight, ordered by their oldest delivery time. A
 * channel's key changes only when its head leaves (the loop re-sifts it) or
 * when it goes from empty to busy (pushed), so keys are kept in the heap
 * itself rather than re-read from the (large) channel structs. */
struct lsf_heap {
	uint16_t n;
	struct {
		uint64_t key;
		uint16_t ch;
	} e[LS_FAB_MAX_CHANS];
	bool in[LS_FAB_MAX_CHANS];
};

/* Lcore-owned, defined in forward.c. */
extern struct lsf_heap lsf_heap;

static inline uint64_t
heap_min(void)
{
	return lsf_heap.n ? lsf_heap.e[0].key : UINT64_MAX;
}

static inline void
heap_sift_up(uint16_t i)
{
	while (i > 0) {
		uint16_t p = (uint16_t)((i - 1) / 2);

		if (lsf_heap.e[p].key <= lsf_heap.e[i].key)
			break;
		RTE_SWAP(lsf_heap.e[p], lsf_heap.e[i]);
		i = p;
	}
}

static inline void
heap_sift_down(uint16_t i)
{
	for (;;) {
		uint16_t l = (uint16_t)(2 * i + 1), r = (uint16_t)(l + 1), m = i;

		if (l < lsf_heap.n && lsf_heap.e[l].key < lsf_heap.e[m].key)
			m = l;
		if (r < lsf_heap.n && lsf_heap.e[r].key < lsf_heap.e[m].key)
			m = r;
		if (m == i)
			return;
		RTE_SWAP(lsf_heap.e[m], lsf_heap.e[i]);
		i = m;
	}
}

static inline void
heap_insert(uint16_t c)
{
	lsf_heap.in[c] = true;
	lsf_heap.e[lsf_heap.n].ch = c;
	lsf_heap.e[lsf_heap.n].key = ls_fab_chan_head_ns(&fab.fab->chans[c]);
	heap_sift_up(lsf_heap.n++);
}

/* A channel was given a packet: in the heap already (a burst), or now. */
static __rte_always_inline void
heap_push(uint16_t c)
{
	if (likely(lsf_heap.in[c]))
		return;
	heap_insert(c);
}

/* The top channel's head has left: re-key or remove it. Per event, so the
 * common case (its next packet is still the earliest of all: a burst on one
 * link) is a comparison with the two children, inline. */
static inline void
heap_fix_top(void)
{
	uint16_t c = lsf_heap.e[0].ch;
	uint64_t k = ls_fab_chan_head_ns(&fab.fab->chans[c]);

	if (k != UINT64_MAX) {
		lsf_heap.e[0].key = k;
		if ((lsf_heap.n > 1 && lsf_heap.e[1].key < k) || (lsf_heap.n > 2 && lsf_heap.e[2].key < k))
			heap_sift_down(0);
		return;
	}
	lsf_heap.in[c] = false;
	lsf_heap.e[0] = lsf_heap.e[--lsf_heap.n];
	if (lsf_heap.n)
		heap_sift_down(0);
}

/* The channel whose head is delivered next (heap_min() <= now). */
static inline uint16_t
heap_top(void)
{
	return lsf_heap.e[0].ch;
}

#endif /* LSF_EVENT_HEAP_H */
