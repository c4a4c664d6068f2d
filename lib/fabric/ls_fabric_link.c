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

/* The arithmetic is inline in ls_fabric.h (the emulator's per-packet path);
 * these are its out-of-line entry points. */

uint64_t
ls_fab_chan_depth(const struct ls_fab_chan *c, uint64_t t)
{
	return ls_fab_chan_depth_inline(c, t);
}

enum ls_fab_verdict
ls_fab_chan_enqueue(struct ls_fab_chan *c, uint64_t arrival_ns, uint32_t bytes, bool ect,
		    void *pkt, uint32_t tag, bool *ce)
{
	return ls_fab_chan_enqueue_inline(c, arrival_ns, bytes, ect, pkt, tag, ce);
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
