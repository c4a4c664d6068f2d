/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Bandwidth slices: a link scheduler that shares one shaped link among named
 * groups of flows. Each slice has a guaranteed minimum, a weight for the
 * excess and a maximum, each in bits/s and packets/s; slices marked latency
 * are served first (strict priority) up to their maximum.
 *
 * One scheduler per lcore and direction, fed and drained by that lcore: no
 * locks. Each dequeue serves, while the link's token bucket allows:
 *   1. latency slices, in order, that have a packet and are under their max;
 *   2. slices under their guaranteed minimum, round robin;
 *   3. slices under their maximum, by deficit round robin with a quantum
 *      proportional to their weight (the excess is shared by weight).
 * It is work-conserving: the link idles only when every backlogged slice is
 * at its maximum. Rates are enforced by token buckets in the caller's clock
 * ticks (lockstepd: the TSC), bytes scaled by 8 * hz so a tick adds exactly
 * rate_bps tokens: no division per packet. Packet sizes count the wire
 * overhead (preamble, inter-frame gap, FCS: 24 bytes by default) so a slice's
 * bits/s are bits on the wire.
 *
 * The shaped link rate sits a little under the port's line rate: the queue
 * then forms here, where slices are chosen, not in the NIC or the switch.
 *
 * Why hand-written: rte_sched (the baseline in tools/bench) is a fixed
 * port/subport/pipe/TC hierarchy with per-pipe token buckets and no notion
 * of a min/weight/max slice in both bits and packets; DRR with three phases
 * is a few hundred lines. EAL-free, unit-tested without hugepages.
 */
#ifndef LS_SLICE_H
#define LS_SLICE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_SLICE_MAX 64          /**< slices per scheduler */
#define LS_SLICE_NAME_LEN 32     /**< name buffer, NUL included */
#define LS_SLICE_OVERHEAD 24     /**< default wire bytes per frame beyond its data */

/** One slice's shares. A rate of 0 means: no minimum, or no maximum. */
struct ls_slice_conf {
	char name[LS_SLICE_NAME_LEN]; /**< unique name */
	uint64_t min_bps;   /**< guaranteed bits/s (wire bits) */
	uint64_t max_bps;   /**< ceiling bits/s; 0 = the link */
	uint64_t min_pps;   /**< guaranteed packets/s */
	uint64_t max_pps;   /**< ceiling packets/s; 0 = none */
	uint32_t weight;    /**< share of the excess, 1..1000 */
	bool latency;       /**< strict priority up to max (latency-sensitive) */
	uint32_t qlen;      /**< queue, packets: a power of two, 16..65536 */
};

/** Parameters of ls_slice_create(). */
struct ls_slice_params {
	uint64_t hz;          /**< clock ticks per second */
	uint64_t link_bps;    /**< shaped link rate, wire bits/s (> 0) */
	uint32_t overhead;    /**< wire bytes per frame beyond its data (0: default 24) */
	uint32_t burst_bytes; /**< bucket depth in bytes (0: 16 KiB) */
	uint32_t burst_pkts;  /**< bucket depth in packets (0: 32) */
	uint64_t now;         /**< the clock at create */
	uint32_t share;       /**< new slices' share, ls_slice_set_share() (0: whole) */
};

/** Counters of one slice. */
struct ls_slice_stats {
	uint64_t enq_pkts, enq_bytes;   /**< accepted */
	uint64_t deq_pkts, deq_bytes;   /**< sent */
	uint64_t drops;                 /**< refused: queue full */
	uint64_t sent_prio;             /**< packets sent as a latency slice */
	uint64_t sent_min;              /**< ... under the guaranteed minimum */
	uint64_t sent_excess;           /**< ... from the excess, by weight */
	uint32_t backlog;               /**< packets queued now */
};

struct ls_slice_sched; /**< opaque */

/**
 * Check a slice's shares: min <= max, weight 1..1000, qlen a power of two
 * in range, a name.
 * @return 0, or -EINVAL with a reason in why (a static string).
 */
int ls_slice_conf_check(const struct ls_slice_conf *c, const char **why);

/** @return a scheduler with no slices, or NULL (errno EINVAL, ENOMEM). */
struct ls_slice_sched *ls_slice_create(const struct ls_slice_params *p);

/** Free a scheduler; queued packets are not touched (drain them first). */
void ls_slice_free(struct ls_slice_sched *s);

/**
 * Add a slice or change one in place (same name: its queue and counters are
 * kept unless qlen changes, which needs the queue empty).
 * @return the slice's index, -EINVAL (bad conf), -ENOSPC (LS_SLICE_MAX),
 *   -EBUSY (qlen change on a non-empty queue), -ENOMEM.
 */
int ls_slice_set(struct ls_slice_sched *s, const struct ls_slice_conf *c);

/**
 * Remove a slice: its index becomes free. The queue must be drained first.
 * @return 0, -ENOENT, or -EBUSY when packets are queued.
 */
int ls_slice_del(struct ls_slice_sched *s, unsigned int idx);

/** @return the index of the slice called name, or -ENOENT. */
int ls_slice_find(const struct ls_slice_sched *s, const char *name);

/** Change the shaped link rate (bits/s > 0). @return 0 or -EINVAL. */
int ls_slice_set_link(struct ls_slice_sched *s, uint64_t link_bps);

#define LS_SLICE_SHARE_ONE 1000000u /**< a whole share (parts per million) */

/**
 * Run slice idx at a share of its configured minimum and maximum (bits and
 * packets), as one of several schedulers that split a slice between them
 * (a data path on many lcores: distributed rate limiting). A set rate
 * never scales to nothing (at least 1); tokens held stay within the
 * bucket. The share stays through ls_slice_set() of the same slice.
 * @return 0, -ENOENT, or -EINVAL for a share above LS_SLICE_SHARE_ONE.
 */
int ls_slice_set_share(struct ls_slice_sched *s, unsigned int idx, uint32_t share);

/**
 * Queue obj (len bytes of frame) on slice idx.
 * @return 0, -ENOBUFS (queue full: counted as a drop, obj not taken) or
 *   -ENOENT (no such slice).
 */
int ls_slice_enqueue(struct ls_slice_sched *s, unsigned int idx, void *obj,
		     uint32_t len);

/**
 * Take up to max packets the link may send by now, in service order.
 * @return the number written to out.
 */
unsigned int ls_slice_dequeue(struct ls_slice_sched *s, uint64_t now, void **out,
			      unsigned int max);

/** Take up to max queued packets of slice idx regardless of rates (flush). */
unsigned int ls_slice_drain(struct ls_slice_sched *s, unsigned int idx, void **out,
			    unsigned int max);

/** @return 0 and the conf and counters of slice idx, or -ENOENT. */
int ls_slice_get(const struct ls_slice_sched *s, unsigned int idx,
		 struct ls_slice_conf *c, struct ls_slice_stats *st);

/** @return one past the highest slice index in use (iterate with ls_slice_get). */
unsigned int ls_slice_count(const struct ls_slice_sched *s);

#ifdef __cplusplus
}
#endif

#endif /* LS_SLICE_H */
