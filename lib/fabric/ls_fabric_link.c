/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fabric links: one direction of a link is a FIFO transmitter at a constant
 * rate followed by a fixed propagation delay.
 *
 * Why it is built this way:
 *  - A FIFO drained at a constant rate is fully described by one number, the
 *    time its transmitter becomes idle (busy_until). A packet arriving at t
 *    starts when the transmitter is free, max(t, busy_until), leaves after
 *    its serialization time and arrives delay_ns later. The bytes waiting at
 *    any instant follow from busy_until alone:
 *        depth(t) = max(0, busy_until - t) * rate / 8e9
 *    So the queue is exact at nanosecond resolution with no per-tick work,
 *    and the depth the emulator reports (the ground truth the appliances'
 *    measurements are judged against) is the same number the drop and ECN
 *    decisions used.
 *  - Serialization is rounded up to whole nanoseconds per packet and the
 *    depth rounded down to whole bytes; both in integer arithmetic (128-bit
 *    for the depth product) so results are exact and reproducible, never
 *    subject to floating-point drift over long runs.
 *  - Delivery order is FIFO order. With a constant delay, delivery times
 *    are already non-decreasing; if the delay is lowered while packets are
 *    in flight, a new packet's delivery is clamped to the previous one's, so
 *    a FIFO link never reorders (it behaves like the shorter path taking
 *    effect behind the packets already on the wire).
 *  - Random loss is decided at enqueue from a per-channel splitmix64 stream
 *    (seeded from the channel id at load), so a run is reproducible. A lost
 *    packet still occupies the transmitter and the queue (it was sent; the
 *    wire lost it) and is counted in drop_loss at enqueue; the caller
 *    discards it when it comes out of the FIFO. It is never CE-marked: a
 *    mark nobody receives is not a mark applied.
 */
#include <stdbool.h>
#include <stdint.h>

#include "ls_fabric.h"

#define NS_BITS 8000000000ULL /* ns per second * bits per byte */

/* ceil(bytes * 8e9 / rate): bytes <= 65535 and rate <= 1e13 fit in 64 bits. */
static inline uint64_t
ser_ns(uint32_t bytes, uint64_t rate_bps)
{
	if (rate_bps == 0)
		return 0;
	return ((uint64_t)bytes * NS_BITS + rate_bps - 1) / rate_bps;
}

uint64_t
ls_fab_chan_depth(const struct ls_fab_chan *c, uint64_t t)
{
	uint64_t dt, prod;

	if (c->busy_until_ns <= t)
		return 0;
	dt = c->busy_until_ns - t;
	/* Per packet: stay in 64 bits (the division by a constant becomes a
	 * multiply); only a long backlog at a high rate needs 128. */
	if (!__builtin_mul_overflow(dt, c->p.rate_bps, &prod))
		return prod / NS_BITS;
	return (uint64_t)((unsigned __int128)dt * c->p.rate_bps / NS_BITS);
}

/* splitmix64: any state (even 0) gives a full-period, well mixed stream. */
static inline uint64_t
next_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

enum ls_fab_verdict
ls_fab_chan_enqueue(struct ls_fab_chan *c, uint64_t arrival_ns, uint32_t bytes, bool ect,
		    void *pkt, uint32_t tag, bool *ce)
{
	struct ls_fab_item *it;
	uint64_t d, start, deliver;
	bool lost = false, mark;

	if (ce != NULL)
		*ce = false;
	if (!c->up) {
		c->st.drop_down++;
		return LS_FAB_DROP_DOWN;
	}
	if (bytes > c->p.mtu) {
		c->st.drop_mtu++;
		return LS_FAB_DROP_MTU;
	}
	d = ls_fab_chan_depth(c, arrival_ns);
	/* what this arrival saw, whether or not it fits */
	if (d > c->st.max_depth)
		c->st.max_depth = d;
	if (d + bytes > c->p.buffer_bytes || c->tail - c->head >= LS_FAB_FIFO) {
		c->st.drop_tail++;
		return LS_FAB_DROP_TAIL;
	}

	start = arrival_ns > c->busy_until_ns ? arrival_ns : c->busy_until_ns;
	/* Packets repeat sizes: skip the division by the rate when we can. */
	if (bytes != c->ser_bytes || c->p.rate_bps != c->ser_rate) {
		c->ser_bytes = bytes;
		c->ser_rate = c->p.rate_bps;
		c->ser_cached = ser_ns(bytes, c->p.rate_bps);
	}
	c->busy_until_ns = start + c->ser_cached;
	deliver = c->busy_until_ns + c->p.delay_ns;
	if (c->tail != c->head) {
		uint64_t prev = c->fifo[(c->tail - 1) & (LS_FAB_FIFO - 1)].deliver_ns;

		if (deliver < prev)
			deliver = prev;
	}

	/* 53 random bits as a uniform double in [0, 1) */
	if (c->p.loss > 0)
		lost = (double)(next_rand(&c->rng) >> 11) * 0x1.0p-53 < c->p.loss;
	mark = !lost && ect && c->p.ecn_bytes != 0 && d > c->p.ecn_bytes;

	c->st.pkts++;
	c->st.bytes += bytes;
	if (lost)
		c->st.drop_loss++;
	if (mark) {
		c->st.ecn_marked++;
		if (ce != NULL)
			*ce = true;
	}

	it = &c->fifo[c->tail & (LS_FAB_FIFO - 1)];
	it->arrive_ns = arrival_ns;
	it->depart_ns = c->busy_until_ns;
	it->deliver_ns = deliver;
	it->bytes = bytes;
	it->lost = lost;
	it->pkt = pkt;
	it->tag = tag;
	c->tail++;
	return LS_FAB_OK;
}

bool
ls_fab_chan_pop(struct ls_fab_chan *c, struct ls_fab_item *it)
{
	if (c->head == c->tail)
		return false;
	if (it != NULL)
		*it = c->fifo[c->head & (LS_FAB_FIFO - 1)];
	c->head++;
	return true;
}
