/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Contention avoidance: when a path toward a destination turns hot (its
 * forward queueing stays over a threshold) while some of this node's flows
 * cross it, move part of them to a path that is cool. The decisions only:
 * the caller measures the paths (the probe mesh), counts its flows per path
 * and moves them. No EAL; no allocation.
 *
 * Hot means the queue is building: over the threshold, and each sample
 * higher than the one before by at least half the time between them (the
 * link is offered at least 1.5 times what it carries). A queue left standing after the
 * collision ended (one flow at exactly the link's rate keeps it, neither
 * growing nor draining) delays frames but slows nobody: it moves nothing.
 * So a collision that end-host congestion control holds at a steady queue
 * (DCQCN around its marking threshold) is not seen either; see
 * docs/datapath.md.
 *
 * Every node decides alone, from what it sees: the queueing of each path
 * (which any node's flows may cause) and its own flows per path. Two
 * nodes whose flows collide on a link see it turn hot together; each waits
 * a random time in [0, jitter) and acts only if a sample measured after
 * its wait still shows the queue building (when the other moved first, it
 * stands instead) and a coin says so (they may act within a queue's delay
 * of each other, before either move shows: half the time one of them
 * waits for another episode), and after a move nothing
 * moves toward that destination for `settle` (the move's effect shows
 * first), so they rarely jump onto the same path at once. A flow that lands
 * on a path busy with another node's flows (busy without a queue looks
 * like idle from the edge) makes it hot, and moves on: the search ends
 * when no path is hot.
 *
 * Time is the caller's nanoseconds (any monotonic base).
 */
#ifndef LS_BALANCE_H
#define LS_BALANCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_BALANCE_MAX_PATHS 64   /**< paths 0..63 */

/** Settings. */
struct ls_balance_params {
	int64_t hot_ns;       /**< forward queueing that makes a building path
			       *   hot; under half of it a path is cool */
	uint8_t runs;         /**< building rounds in a row over hot_ns before it
			       *   counts (>= 1) */
	uint64_t jitter_ns;   /**< a path that turns hot waits a random time in
			       *   [0, jitter_ns) before its flows move */
	uint64_t settle_ns;   /**< after a move, nothing moves toward the
			       *   destination for this long (plus a jitter) */
	uint16_t n_paths;     /**< paths 0..n_paths-1 (<= LS_BALANCE_MAX_PATHS) */
	uint64_t span_ns;     /**< a slope is taken over at least this long: a
			       *   sample closer to the last one compared is not
			       *   compared (over a short span the measurement's
			       *   noise passes for a slope) */
};

/** One path in a round. */
struct ls_balance_path {
	int64_t q_ns;         /**< forward queueing (the sample's); < 0: unknown */
	uint32_t flows;       /**< the caller's active flows on it to the destination */
};

/** A path's latest queueing sample. */
struct ls_balance_sample {
	int64_t q_ns;         /**< forward queueing; < 0: unknown (no fresh probe
			       *   stands for the path) */
	uint64_t t_ns;        /**< when it was measured (a new t is a new sample) */
};

/** One path's state (ls_balance). */
struct ls_balance_pstate {
	int64_t q_last;       /**< the last sample seen */
	uint64_t t_last;      /**< its time, 0: none */
	int64_t q0;           /**< hot: the sample that started the episode */
	uint64_t t0;          /**< its time */
	uint64_t act_at;      /**< hot: the samples' time after which one may
			       *   act; 0: not hot */
	uint8_t runs;         /**< building samples in a row */
	int64_t q_slow;       /**< mean queueing of the last ~32 samples */
	int64_t q_dev;        /**< their mean absolute deviation from q_slow */
	uint64_t t_seen;      /**< the newest sample's time, 0: none */
};

/** Per destination; ls_balance_init before the first round. */
struct ls_balance {
	uint64_t rng;                              /**< xorshift64 state */
	uint64_t settle_until;                     /**< no move before this */
	struct ls_balance_pstate path[LS_BALANCE_MAX_PATHS];
};

/** A decision: move `flows` of the caller's flows from path `from` to `to`. */
struct ls_balance_move {
	uint8_t from, to;
	uint32_t flows;
	int64_t q_from, q_to; /**< their queueing when decided */
};

/** Start a destination's state; seed differs per node (desynchronises). */
void ls_balance_init(struct ls_balance *s, uint64_t seed);

/**
 * One round: note each path's new sample (building: it rose since the last
 * one compared, at least span_ns before, by at least half the time between
 * them), and say which hot path is
 * due to act, if any. A path turns hot after `runs` building samples in a
 * row with its queueing at hot_ns or more; it acts once a sample measured
 * after its jitter (counted from the sample that made it hot, in the
 * samples' time) still builds (a collision someone else resolved
 * meanwhile leaves a queue standing, not building) and the destination is
 * not settling; its episode ends when the queue no longer built on average
 * since it turned hot. Under half of hot_ns, or unknown, a path is cool
 * again. Flows are not needed yet: a caller may count them only when
 * this says a move is due.
 * @param smp  n_paths samples
 * @return the path due to act, or -1.
 */
int ls_balance_observe(struct ls_balance *s, const struct ls_balance_params *p,
		       const struct ls_balance_sample *smp, uint64_t now_ns);

/**
 * The move for the hot path ls_balance_observe returned: to the cool path
 * (known queueing under hot_ns / 2, not building, allowed) with the
 * fewest of the caller's flows and a slow mean queueing within the
 * least one's noise (its mean absolute deviation; a link busy at its rate
 * queues a little more than an idle one), chosen at random among them
 * (never just the least: every node would pick the same); half the
 * caller's flows on the hot path (at least one), and never so many that the
 * target would hold more of them than stay behind. A path with one of the
 * caller's flows is a target only when the hot one holds three or more.
 * Whatever it decides, the destination then settles for settle_ns and a
 * random part of jitter_ns (a hot path that holds none of the caller's
 * flows is someone else's to move).
 * @param in       n_paths paths (queueing as given to observe, flows counted)
 * @param allowed  bit k: path k may be a target (the flows' policy)
 * @return 1 and *mv filled, or 0: no move (no flow of ours there, or no
 *         cool path to go to).
 */
int ls_balance_pick(struct ls_balance *s, const struct ls_balance_params *p,
		    const struct ls_balance_path *in, int hot, uint64_t allowed,
		    uint64_t now_ns, struct ls_balance_move *mv);

/**
 * End path j's hot episode (it re-earns `runs` building samples): for the
 * caller's other paths that share the hot path's links once it decided.
 */
void ls_balance_cool(struct ls_balance *s, uint16_t j);

#ifdef __cplusplus
}
#endif

#endif /* LS_BALANCE_H */
