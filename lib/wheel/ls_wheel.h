/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A timing wheel for pacing packets, after Carousel (Saeed et al., SIGCOMM
 * 2017): every packet is given the time it may leave, goes into the slot of
 * that time, and leaves when the wheel's clock passes the slot. One wheel per
 * lcore, fed and drained by that lcore only: no locks, no atomics.
 *
 * Time is whatever integer clock the caller uses (lockstepd: the TSC). A slot
 * spans 2^slot_shift ticks; with 2^8 TSC ticks (about 100 ns at 2.5 GHz) a
 * slot is shorter than one 1500-byte frame at 100 Gb/s, so slot rounding
 * never changes a flow's rate: the exact release time of each packet is
 * computed by the caller from the flow's rate (ls_wheel_pace) and the wheel
 * only delays it to the end of its slot.
 *
 * Why hand-written: rte_timer is built for thousands of callbacks, not
 * millions of packets a second; Carousel's wheel is O(1) per packet with
 * one cache line touched per insert. Elements are opaque pointers (mbufs in
 * lockstepd) kept in a fixed pool of nodes allocated at create time, so
 * inserting and extracting never allocate. A bitmap of occupied slots lets
 * extraction skip empty slots 64 at a time.
 *
 * Packets further ahead than the horizon (n_slots << slot_shift ticks) are
 * parked in the last slot of the horizon and put back when it comes due, so
 * a slow flow (1 Mb/s: 12 ms between 1500-byte frames) is exact too.
 *
 * EAL-free: plain C and malloc, unit-tested without hugepages.
 */
#ifndef LS_WHEEL_H
#define LS_WHEEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ls_wheel; /**< opaque */

/** Parameters of ls_wheel_create(). */
struct ls_wheel_params {
	uint32_t n_slots;    /**< slots, a power of two (e.g. 65536) */
	uint32_t slot_shift; /**< a slot spans 2^slot_shift ticks (e.g. 8) */
	uint32_t capacity;   /**< most elements held at once (the node pool) */
	uint64_t now;        /**< the clock at create: extraction starts here */
};

/** Counters, for the caller's statistics. */
struct ls_wheel_stats {
	uint64_t inserted;   /**< elements accepted */
	uint64_t extracted;  /**< elements returned by ls_wheel_extract */
	uint64_t full;       /**< inserts refused: no free node */
	uint64_t parked;     /**< inserts beyond the horizon (re-slotted later) */
	uint32_t held;       /**< elements in the wheel now */
};

/**
 * Create a wheel.
 * @return the wheel, or NULL (errno EINVAL for bad params, ENOMEM).
 */
struct ls_wheel *ls_wheel_create(const struct ls_wheel_params *p);

/** Free a wheel. Elements still held are not touched (drain first). */
void ls_wheel_free(struct ls_wheel *w);

/**
 * Hold obj until the clock reaches at. An at in the past leaves at the
 * next extraction, after what is already due (FIFO within a slot).
 * tag is the caller's, handed back with obj: what the caller needs on the
 * way out (a slice and a length, say) without touching obj, which is
 * likely out of cache by then.
 * @return 0, or -ENOSPC when every node is in use (obj not taken).
 */
int ls_wheel_insert(struct ls_wheel *w, void *obj, uint32_t tag, uint64_t at);

/**
 * Take up to max elements whose slot has ended by now, in slot order and
 * FIFO within a slot; their tags go to tags[] when tags is not NULL.
 * @return the number written to out.
 */
unsigned int ls_wheel_extract(struct ls_wheel *w, uint64_t now, void **out, uint32_t *tags,
			      unsigned int max);

/** Fill st with the wheel's counters. */
void ls_wheel_stats(const struct ls_wheel *w, struct ls_wheel_stats *st);

/**
 * A pacer's clock: the time each packet of a flow may leave at a given
 * rate, exact over any run (no rounding drift): the fractional tick is
 * carried. Rates are in ticks per byte as 32.32 fixed point.
 */
struct ls_pace {
	uint64_t next;       /**< earliest time the next packet may leave */
	uint32_t frac;       /**< fractional tick carried (1/2^32) */
	uint32_t gap;        /**< next less the last packet's release time, in
			      *   2^LS_PACE_GAP_SHIFT ticks rounded down (so
			      *   next - gap never falls before that release) */
};

#define LS_PACE_GAP_SHIFT 8

/**
 * Ticks per byte, 32.32, for rate_bps at hz ticks per second.
 * @return 0 for rate 0 (unpaced).
 */
static inline uint64_t
ls_wheel_tpb(uint64_t hz, uint64_t rate_bps)
{
	if (rate_bps == 0)
		return 0;
	/* hz * 8 * 2^32 / rate: 128-bit so 5 GHz * 2^35 does not overflow */
	return (uint64_t)(((unsigned __int128)hz << 35) / rate_bps);
}

/**
 * Release time of a packet of len bytes on the flow paced by pc at tpb
 * (ticks per byte, 32.32), arriving at now: max(now, pc->next); the flow's
 * next time advances by len * tpb. An idle flow does not bank credit: the
 * gap restarts at now.
 */
static inline uint64_t
ls_wheel_pace(struct ls_pace *pc, uint64_t tpb, uint32_t len, uint64_t now)
{
	unsigned __int128 step;
	uint64_t at, gap;

	if (pc->next < now) {
		pc->next = now;
		pc->frac = 0;
	}
	at = pc->next;
	step = (unsigned __int128)tpb * len + pc->frac;
	pc->next += (uint64_t)(step >> 32);
	pc->frac = (uint32_t)step;
	gap = (pc->next - at) >> LS_PACE_GAP_SHIFT;
	pc->gap = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
	return at;
}

/** When a packet arriving at now would leave, without pacing it. */
static inline uint64_t
ls_wheel_pace_at(const struct ls_pace *pc, uint64_t now)
{
	return pc->next > now ? pc->next : now;
}

/**
 * The flow's rate changed from old_tpb to new_tpb at now: the wait left
 * before its next packet, counted from the later of now and its last
 * packet's release, is rescaled to the new rate. Without it a flow cut to
 * a floor of 1 Mb/s and back keeps the 12 ms gap a 1500-byte frame got at
 * the floor; the last packet's release bounds the new time from below, so
 * the flow's packets never change order.
 */
static inline void
ls_wheel_pace_rescale(struct ls_pace *pc, uint64_t old_tpb, uint64_t new_tpb, uint64_t now)
{
	uint64_t last, base, gap;

	if (old_tpb == 0 || new_tpb == 0 || new_tpb == old_tpb || pc->next <= now)
		return;
	last = pc->next - ((uint64_t)pc->gap << LS_PACE_GAP_SHIFT);
	base = last > now ? last : now;
	if (pc->next <= base)
		return;
	pc->next = base + (uint64_t)((unsigned __int128)(pc->next - base) * new_tpb / old_tpb);
	pc->frac = 0;
	gap = (pc->next - last) >> LS_PACE_GAP_SHIFT;
	pc->gap = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
}

#ifdef __cplusplus
}
#endif

#endif /* LS_WHEEL_H */
