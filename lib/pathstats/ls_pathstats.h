/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Per-path probe telemetry: sequence tracking (loss, late arrivals,
 * reordering, duplicates) and delay histograms over rolling 1 s, 10 s and
 * 60 s windows, in a few KiB per path (sparse histograms, see below).
 *
 * Two sides, two owners, no locks:
 *  - struct ls_path_live is written only by the lcore that owns the path:
 *    cumulative counters (read by anyone with relaxed atomic loads) and the
 *    histograms of the current second. Histograms are double-buffered: at
 *    each second boundary the lcore hands the finished slot to the control
 *    thread (owner flag, release store) and writes the other one. If the
 *    control thread has not given that one back yet, the lcore drops samples
 *    (counted in hist_dropped) rather than race.
 *  - struct ls_path_window is owned by the control thread. ls_path_window_collect()
 *    takes finished slots, merges them into ten 1 s slots and six 10 s
 *    slots, hands the slot back, and snapshots the counters each second, so
 *    windowed loss and percentiles are computed off the fast path.
 *
 * Loss is decided by time-out: a probe whose reply has not come within the
 * loss time-out is lost. A reply that arrives later is counted as late (and
 * no longer lost). Outstanding probes are tracked in a ring indexed by
 * sequence number, sized per path by ls_path_track_size() from its probe
 * rate and loss time-out; a probe overwritten in the ring before it was
 * resolved counts as lost.
 *
 * Memory per path is about 1 KiB on the lcore side (two slots, counters)
 * plus the ring, and on the control side about 1 KiB plus the sparse
 * histograms' non-empty buckets (ls_path_window_bytes()), given back when
 * the window is freed.
 */
#ifndef LS_PATHSTATS_H
#define LS_PATHSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ls_hist.h"

#ifdef __cplusplus
extern "C" {
#endif


/** Delay metrics kept per path. */
enum ls_path_metric {
	LS_PM_RTT = 0,  /**< round trip minus reflector residence: (T4-T1)-(T3-T2) */
	LS_PM_FWD,      /**< raw forward one-way delay T2-T1 (offset by clocks) */
	LS_PM_REV,      /**< raw reverse one-way delay T4-T3 (offset by clocks) */
	LS_PM_MAX
};

/**
 * A sample value meaning "none for this metric": ls_path_on_reply() counts
 * the reply but adds nothing to that metric's histograms. lockstepd gives it
 * for the one-way delays while clock sync has no offset for the peer, so
 * the windows never mix raw clock differences (off by milliseconds) with
 * synced delays.
 */
#define LS_PM_NONE INT64_MIN

/** Windows reported. */
enum ls_path_win {
	LS_WIN_1S = 0,  /**< last complete second */
	LS_WIN_10S,     /**< last 10 complete seconds */
	LS_WIN_60S,     /**< last 60 complete seconds (six 10 s slots) */
	LS_WIN_MAX
};

/** Cumulative counters of one path (monotonic; never reset by the lcore). */
struct ls_path_counters {
	uint64_t sent;        /**< probes sent */
	uint64_t received;    /**< replies matched to an outstanding probe, in time */
	uint64_t lost;        /**< probes timed out (minus those that came late) */
	uint64_t late;        /**< replies that came after their time-out */
	uint64_t reordered;   /**< replies with a sequence below the highest seen */
	uint64_t duplicated;  /**< replies for a probe already answered */
	uint64_t unknown;     /**< replies matching no tracked probe (too old, forged) */
};

/**
 * Bounds of a path's outstanding-probe ring (ls_path_track_size()). The
 * most is what every path had before rings were sized per path: a path
 * sending more probes within one loss time-out (an interval under ~200 us
 * with the default 50 ms time-out and acquisition) has its oldest counted
 * lost when their entry is reused, as before; a bigger ring would cost
 * the sender's speed (bench_sender: 4096 entries, 64 KiB a path, were 28%
 * slower at 512 paths).
 */
#define LS_PATH_TRACK_MIN 32
#define LS_PATH_TRACK_MAX 512

/** One probe in the outstanding-probe ring. */
struct ls_path_track {
	uint32_t seq;             /**< sequence number in this slot */
	uint8_t state;            /**< 0 free, 1 outstanding, 2 answered, 3 lost */
	uint64_t tx_ns;           /**< when it was sent (local clock) */
};

/**
 * Keys in a slot's table (power of 2), shared by the three metrics. The
 * table takes LS_PATH_SLOT_FILL of them before the slot is handed over
 * early (mid-second) or, if the control thread still holds the other slot,
 * further new buckets are dropped and counted.
 */
#define LS_PATH_SLOT_KEYS 64
#define LS_PATH_SLOT_FILL 48
#define LS_PATH_SLOT_CNT_BITS 20 /**< count bits of a table entry */

/** Exact summary of one metric's samples in a slot. */
struct ls_path_mstat {
	uint32_t count;           /**< samples */
	int64_t min;              /**< smallest (valid when count > 0) */
	int64_t max;              /**< largest */
	double sum;               /**< sum */
};

/**
 * One histogram slot handed between lcore and control thread: the buckets
 * a second's samples hit, as a small open-addressed table of
 * (metric, ls_hist_key) -> count; a probe path touches a few dozen buckets
 * a second, where a dense histogram per metric would be 4 KiB.
 */
struct ls_path_hslot {
	uint32_t owner;                   /**< 0 = lcore writes, 1 = control reads */
	uint32_t partial;                 /**< handed over mid-second (table full) */
	int64_t epoch;                    /**< second (clock ns / 1e9) this slot holds */
	struct ls_path_counters c;        /**< counters when the lcore handed it over */
	uint32_t used;                    /**< keys in tab */
	struct ls_path_mstat m[LS_PM_MAX]; /**< per metric */
	uint32_t tab[LS_PATH_SLOT_KEYS];  /**< 0 empty, else (metric * LS_SHIST_KEYS +
					   *   key + 1) << LS_PATH_SLOT_CNT_BITS | count */
};

/** Lcore-owned live state of one path. */
struct ls_path_live {
	struct ls_path_counters c;        /**< cumulative counters */
	uint32_t consecutive_lost;        /**< probes lost in a row (0 after any reply) */
	uint32_t max_seq_rx;              /**< highest sequence answered */
	bool any_rx;                      /**< max_seq_rx is valid */
	int64_t last[LS_PM_MAX];          /**< most recent sample per metric */
	uint64_t last_rx_ns;              /**< when the last reply arrived */
	uint64_t hist_dropped;            /**< replies whose samples were not (all) recorded:
					   *   slot busy, or its table full */
	int64_t cur_epoch;                /**< epoch of slot[cur] */
	uint64_t epoch_end_ns;            /**< when cur_epoch ends: a send or reply at or
					   *   after it rotates first */
	uint32_t cur;                     /**< slot being written */
	uint32_t track_head;              /**< next sequence to expire check */
	uint32_t tx_next;                 /**< sequence after the newest sent */
	uint32_t track_mask;              /**< ring size - 1 */
	struct ls_path_track *track;      /**< outstanding probes ring (caller's memory) */
	struct ls_path_hslot slot[2];     /**< double-buffered histograms */
};

/** What ls_path_on_reply() made of a reply. */
enum ls_path_rx {
	LS_PATH_RX_OK = 0,      /**< in time, in order */
	LS_PATH_RX_REORDERED,   /**< in time, sequence below the highest seen */
	LS_PATH_RX_LATE,        /**< after its time-out (was counted lost, now late) */
	LS_PATH_RX_DUP,         /**< already answered */
	LS_PATH_RX_UNKNOWN,     /**< not a tracked sequence */
};

/**
 * Entries an outstanding-probe ring needs: every probe sent within one loss
 * time-out, twice over, plus slack, as a power of two in
 * [LS_PATH_TRACK_MIN, LS_PATH_TRACK_MAX].
 * @param probes_per_s  the path's highest probe rate (both pair members,
 *                      acquisition included)
 * @param timeout_ns    loss time-out
 */
uint32_t ls_path_track_size(double probes_per_s, uint64_t timeout_ns);

/**
 * Reset live state; now_ns sets the first epoch.
 * @param track    ring of n_track entries (a power of 2), owned by the caller
 */
void ls_path_live_init(struct ls_path_live *p, struct ls_path_track *track,
		       uint32_t n_track, uint64_t now_ns);

/** Record that probe seq was sent at now_ns. */
void ls_path_on_send(struct ls_path_live *p, uint32_t seq, uint64_t now_ns);

/**
 * Whether a reply for probe seq may still be believed: seq was sent on this
 * path and has not been answered yet (outstanding, or counted lost and so
 * possibly late). Read-only; call ls_path_on_reply() to record it.
 * @param tx_ns  when true, set to the send time recorded by ls_path_on_send():
 *               the probe's T1 as we wrote it, not as a reply claims it
 */
bool ls_path_awaits(const struct ls_path_live *p, uint32_t seq, uint64_t *tx_ns);

/**
 * When probe seq was sent, whatever became of it (outstanding, answered or
 * lost), while the ring still holds it. Read-only.
 * @return false when seq is not in the ring (never sent, or overwritten)
 */
bool ls_path_sent_at(const struct ls_path_live *p, uint32_t seq, uint64_t *tx_ns);

/**
 * Record a reply for probe seq at now_ns with its delay samples
 * (samples[LS_PM_RTT/FWD/REV]); histograms are updated only for OK and
 * REORDERED (and LATE) replies.
 */
enum ls_path_rx ls_path_on_reply(struct ls_path_live *p, uint32_t seq,
				 uint64_t now_ns, const int64_t samples[LS_PM_MAX]);

/**
 * Declare lost every outstanding probe sent before now_ns - timeout_ns.
 * Cheap when nothing is due: call once per loop or per tick.
 * Also rotates the histogram slot when the second changes (sends and
 * replies rotate too, so a path ticked only every few tens of
 * milliseconds still puts every sample in its own second).
 */
void ls_path_tick(struct ls_path_live *p, uint64_t now_ns, uint64_t timeout_ns);

/** Summary of one metric over one window. */
struct ls_path_dist {
	uint64_t count;   /**< samples */
	int64_t min;      /**< ns */
	int64_t p50;      /**< ns */
	int64_t p99;      /**< ns */
	int64_t p999;     /**< ns */
	int64_t max;      /**< ns */
	double mean;      /**< ns */
};

/** Summary of one window. */
struct ls_path_summary {
	uint64_t sent;            /**< probes sent in the window */
	uint64_t received;        /**< replies in time */
	uint64_t lost;            /**< probes lost */
	uint64_t late, reordered, duplicated; /**< as in ls_path_counters */
	double loss_pct;          /**< 100 * lost / (received + lost), 0 when none resolved */
	struct ls_path_dist d[LS_PM_MAX]; /**< per metric */
};

/**
 * Counters as the windows snapshot them: the low 32 bits of each, all a
 * window reports. Window counts are differences of two snapshots at most
 * 70 s apart, taken modulo 2^32 (lost, which can fall, as signed): exact
 * while no counter moves by 2^31 in 70 s, i.e. under ~30 million probes a
 * second on one path.
 */
struct ls_path_snap {
	uint32_t sent, received, lost, late, reordered, duplicated;
};

#define LS_PATH_SEC_SLOTS 10   /**< 1 s histograms kept */
#define LS_PATH_DEC_SLOTS 6    /**< 10 s histograms kept */
#define LS_PATH_SNAP_SLOTS 11  /**< per-second counter snapshots kept */
#define LS_PATH_BSNAP_SLOTS 7  /**< end-of-10 s-block counter snapshots kept */

/**
 * Control-thread-owned rolling windows of one path. Histograms are sparse
 * (struct ls_shist, NULL when empty); counters are snapshotted (low 32
 * bits, struct ls_path_snap) at the end of each of the last 11 seconds and
 * of the last 7 ten-second blocks.
 */
struct ls_path_window {
	int64_t last_epoch;                     /**< newest second merged */
	int64_t epoch0;                         /**< the epochs below count from it (a
						 *   multiple of 10, set when history starts) */
	struct ls_shist *sec[LS_PATH_SEC_SLOTS][LS_PM_MAX]; /**< 1 s slots (by epoch % 10) */
	int32_t sec_epoch[LS_PATH_SEC_SLOTS];   /**< epoch - epoch0 each sec slot
						 *   holds, -1 none */
	struct ls_shist *dec[LS_PATH_DEC_SLOTS][LS_PM_MAX]; /**< 10 s slots ((epoch/10) % 6) */
	int32_t dec_epoch[LS_PATH_DEC_SLOTS];   /**< epoch/10 - epoch0/10 each dec
						 *   slot holds, -1 none */
	struct ls_path_snap snap[LS_PATH_SNAP_SLOTS]; /**< counters at the end of a second */
	int32_t snap_epoch[LS_PATH_SNAP_SLOTS]; /**< its epoch - epoch0, -1 none */
	struct ls_path_snap bsnap[LS_PATH_BSNAP_SLOTS]; /**< at the end of block d (second
							 *   10d+9), by d % 7 */
	int32_t bsnap_block[LS_PATH_BSNAP_SLOTS]; /**< d - epoch0/10 of each, -1 none */
	struct ls_path_counters base;           /**< subtracted after stats.reset (whole:
						 *   totals span any time) */
	uint64_t nomem;                         /**< merges lost to a failed allocation */
};

/** Initialise an empty window set (memory may hold garbage). */
void ls_path_window_init(struct ls_path_window *w);

/** Give back a window set's histograms; it is empty (initialised) after. */
void ls_path_window_free(struct ls_path_window *w);

/**
 * Bytes a window set holds: the struct and its histograms' heap blocks
 * (their usable sizes, see ls_shist_bytes()).
 */
size_t ls_path_window_bytes(const struct ls_path_window *w);

/**
 * Take a finished histogram slot from the lcore (if any), merge it, give it
 * back, and snapshot the counters. Call every ~100 ms from the control
 * thread.
 */
void ls_path_window_collect(struct ls_path_window *w, struct ls_path_live *p);

/**
 * Ask for the lines ls_path_window_collect() reads first (the lcore's
 * current second, both slots' owners, the newest second merged), so that a
 * pass over many paths can fetch the next paths' while it works on these:
 * at 80k paths each of them is a cache miss, and one path after another
 * they queued (most of the control thread's time). A hint only.
 */
static inline void
ls_path_window_prefetch(const struct ls_path_window *w, const struct ls_path_live *p)
{
	__builtin_prefetch(&w->last_epoch);
	__builtin_prefetch(&p->cur_epoch);
	__builtin_prefetch(&p->slot[0].owner);
	__builtin_prefetch(&p->slot[1].owner);
}

/**
 * Summarise window win, as of the newest complete second L that collect()
 * has seen. 1s is second L, 10s is L-9..L.
 * Both counters and distributions of 60s cover the six newest complete
 * 10 s blocks (aligned to multiples of 10 s), so they may end up to 9 s
 * before L.
 * Counts are differences of per-second snapshots; lost is floored at 0.
 */
void ls_path_window_query(const struct ls_path_window *w, const struct ls_path_live *p,
			  enum ls_path_win win, struct ls_path_summary *out);

/** Cumulative counters since the last reset (relaxed reads of the live side). */
void ls_path_window_totals(const struct ls_path_window *w, const struct ls_path_live *p,
			   struct ls_path_counters *out);

/** Forget history and make totals start from zero now (stats.reset). */
void ls_path_window_reset(struct ls_path_window *w, const struct ls_path_live *p);

/** Name of a window ("1s", "10s", "60s") and a metric ("rtt", "fwd", "rev"). */
const char *ls_path_win_name(enum ls_path_win w);
const char *ls_path_metric_name(enum ls_path_metric m);

#ifdef __cplusplus
}
#endif

#endif /* LS_PATHSTATS_H */
