/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Per-path probe telemetry: sequence tracking (loss, late arrivals,
 * reordering, duplicates) and delay histograms over rolling 1 s, 10 s and
 * 60 s windows, in constant memory per path.
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
 * no longer lost). Outstanding probes are tracked in a ring of
 * LS_PATH_TRACK slots indexed by sequence number; a probe overwritten in the
 * ring before it was resolved counts as lost.
 */
#ifndef LS_PATHSTATS_H
#define LS_PATHSTATS_H

#include <stdbool.h>
#include <stdint.h>

#include "ls_hist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LS_PATH_TRACK 512       /**< outstanding probes tracked per path (power of 2) */

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

/** One histogram slot handed between lcore and control thread. */
struct ls_path_hslot {
	uint32_t owner;                   /**< 0 = lcore writes, 1 = control reads */
	int64_t epoch;                    /**< second (clock ns / 1e9) this slot holds */
	struct ls_path_counters c;        /**< counters when the lcore handed it over */
	struct ls_hist h[LS_PM_MAX];      /**< one histogram per metric */
};

/** Lcore-owned live state of one path. */
struct ls_path_live {
	struct ls_path_counters c;        /**< cumulative counters */
	uint32_t consecutive_lost;        /**< probes lost in a row (0 after any reply) */
	uint32_t max_seq_rx;              /**< highest sequence answered */
	bool any_rx;                      /**< max_seq_rx is valid */
	int64_t last[LS_PM_MAX];          /**< most recent sample per metric */
	uint64_t last_rx_ns;              /**< when the last reply arrived */
	uint64_t hist_dropped;            /**< replies whose samples were not recorded (slot busy) */
	int64_t cur_epoch;                /**< epoch of slot[cur] */
	uint32_t cur;                     /**< slot being written */
	uint32_t track_head;              /**< next sequence to expire check */
	uint32_t tx_next;                 /**< sequence after the newest sent */
	struct {
		uint32_t seq;             /**< sequence number in this slot */
		uint8_t state;            /**< 0 free, 1 outstanding, 2 answered, 3 lost */
		uint64_t tx_ns;           /**< when it was sent (local clock) */
	} track[LS_PATH_TRACK];           /**< outstanding probes ring */
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

/** Reset live state; now_ns sets the first epoch. */
void ls_path_live_init(struct ls_path_live *p, uint64_t now_ns);

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
 * Record a reply for probe seq at now_ns with its delay samples
 * (samples[LS_PM_RTT/FWD/REV]); histograms are updated only for OK and
 * REORDERED (and LATE) replies.
 */
enum ls_path_rx ls_path_on_reply(struct ls_path_live *p, uint32_t seq,
				 uint64_t now_ns, const int64_t samples[LS_PM_MAX]);

/**
 * Declare lost every outstanding probe sent before now_ns - timeout_ns.
 * Cheap when nothing is due: call once per loop or per tick.
 * Also rotates the histogram slot when the second changes.
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

/** Control-thread-owned rolling windows of one path. */
struct ls_path_window {
	int64_t last_epoch;                     /**< newest second merged */
	struct ls_hist sec[10][LS_PM_MAX];      /**< last ten 1 s slots (by epoch % 10) */
	int64_t sec_epoch[10];                  /**< epoch each sec slot holds, -1 none */
	struct ls_hist dec[6][LS_PM_MAX];       /**< last six 10 s slots (by (epoch/10) % 6) */
	int64_t dec_epoch[6];                   /**< epoch/10 each dec slot holds, -1 none */
	struct ls_path_counters snap[61];       /**< counters at the end of each second */
	int64_t snap_epoch[61];                 /**< epoch of each snapshot, -1 none */
	struct ls_path_counters base;           /**< subtracted after stats.reset */
};

/** Initialise an empty window set. */
void ls_path_window_init(struct ls_path_window *w);

/**
 * Take a finished histogram slot from the lcore (if any), merge it, give it
 * back, and snapshot the counters. Call every ~100 ms from the control
 * thread.
 */
void ls_path_window_collect(struct ls_path_window *w, struct ls_path_live *p);

/**
 * Summarise window win, as of the newest complete second L that collect()
 * has seen. 1s is second L, 10s is L-9..L. For 60s the counters cover
 * L-59..L but the distributions cover the six newest complete 10 s blocks
 * (aligned to multiples of 10 s), so they may end up to 9 s before L.
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
