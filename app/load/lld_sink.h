/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's sink: what arrived, per flow and in total.
 *
 * Frames are keyed by the flow index in their lockstep-load header (the
 * sink needs no flow table: indices 0..n_flows-1 index an array). Per flow:
 *  - packets, bytes (frame lengths, as lockstepd paces them), goodput
 *    (payload bytes of frames not seen before);
 *  - sequence accounting: a frame above the highest sequence seen opens a
 *    gap (its missing numbers count as lost), one below fills a gap
 *    (reordered, no longer lost) or repeats a number already seen
 *    (duplicate). The last 64 numbers below the highest are remembered
 *    bit by bit; older ones are taken as reordered (counted in `old`).
 *    Numbers start at 0, so frames before the first one received are lost
 *    too; frames after the last one received are not seen as lost unless
 *    the sender's count is given (lld_sink_report's sent);
 *  - rates, measured from `settle` after the first frame (a paced path
 *    needs a moment to fill its queues): the whole run's rate from the
 *    flow's first to its last measured arrival (the bytes after the first
 *    frame over that span), and windows of `window` ticks from the common
 *    origin. Each complete window gives two rates: bytes in the window
 *    over its length (what arrived in 100 ms), and, when it holds two
 *    frames or more, the bytes after its first frame over its first-to-last
 *    span (the rate the flow ran at inside it, free of the one-frame
 *    quantisation of the first when a window holds few frames). The
 *    flow's first and last windows are partial and left out;
 *  - one-way delay: arrival TSC minus the TX TSC in the header, for frames
 *    whose TSC domain tag is the sink's own (same host: same TSC).
 * In total: every window's bytes and packets, and a histogram of one-way
 * delay (lib/hist, quantiles within 1/32).
 *
 * Memory is fixed at create (per-flow state, the window arrays); a frame
 * costs a few arithmetic operations on one flow's state. EAL-free.
 */
#ifndef LLD_SINK_H
#define LLD_SINK_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "lld_frame.h"

struct lld_sink;

#define LLD_SINK_GAPS 16      /* longest gaps kept per flow, by default */
#define LLD_SINK_GAPS_MAX 256 /* ... at most (--gaps) */

struct lld_sink_params {
	uint32_t n_flows;        /* flow indices tracked: 0..n_flows-1 */
	uint64_t hz;             /* TSC ticks per second */
	uint64_t start;          /* TSC of the sink's start: report times are from it */
	uint64_t window;         /* window length, ticks (100 ms) */
	uint32_t n_windows;      /* windows kept from the origin */
	uint64_t settle;         /* measuring starts this long after the first frame */
	uint32_t detail_flows;   /* flows 0..detail_flows-1 keep every window's bytes */
	uint32_t tag;            /* our TSC domain tag */
	uint32_t fg_flows;       /* flows 0..fg_flows-1 are foreground: one-way delay
				  * quantiles of their own, over the measured span */
	uint32_t n_gaps;         /* longest gaps kept per flow (0: LLD_SINK_GAPS) */
};

/* A flow's results (lld_sink_flow). Rates in bits/s, 0 when not measured. */
struct lld_sink_result {
	uint64_t pkts, bytes, payload_bytes;  /* all frames; payload of unique ones */
	uint64_t lost, reordered, dups, old;  /* sequence accounting */
	uint64_t max_seq;                     /* highest sequence seen */
	uint64_t first, last;                 /* first and last arrival, ticks from start */
	uint64_t gap[LLD_SINK_GAPS_MAX];      /* the longest times between two arrivals
					       * (ticks), longest first, 0 when fewer */
	uint64_t gap_end[LLD_SINK_GAPS_MAX];  /* when each ended, ticks from start */
	double rate_bps;                      /* whole measured run, frame bits */
	double goodput_bps;                   /* payload bits over the same span */
	uint32_t windows;                     /* complete windows */
	double win_min_bps, win_max_bps, win_mean_bps;  /* bytes per window / window */
	uint32_t span_windows;                /* complete windows with >= 2 frames */
	double span_min_bps, span_max_bps;    /* in-window span rates */
	uint64_t owd_n;                       /* one-way delay samples */
	double owd_min_ns, owd_mean_ns, owd_max_ns;
};

/* @return a sink, or NULL (errno EINVAL or ENOMEM). */
struct lld_sink *lld_sink_create(const struct lld_sink_params *p);
void lld_sink_free(struct lld_sink *s);

/*
 * One lockstep-load frame of frame_len bytes that arrived at TSC now.
 * @return 1 for a frame of a tracked flow not seen before (what the phase
 * barrier counts: duplicates excluded, reordered frames included; one more
 * than 64 below the flow's highest is taken as new), else 0.
 */
int lld_sink_frame(struct lld_sink *s, const struct lld_rx *r, uint32_t frame_len,
		   uint64_t now);

/* A frame that is not lockstep-load's. */
void lld_sink_other(struct lld_sink *s);

/*
 * End the measurement at TSC end (the local TX's end): frames arriving
 * later are counted but not measured. Without it the measurement ends at
 * the last arrival. Call before the frames after end arrive.
 */
void lld_sink_set_end(struct lld_sink *s, uint64_t end);

/* Close the aggregate windows; call once, before the results are read. */
void lld_sink_finish(struct lld_sink *s);

/* Flow i's results (after lld_sink_finish). @return 0 or -EINVAL. */
int lld_sink_flow(const struct lld_sink *s, uint32_t i, struct lld_sink_result *out);

/* Complete aggregate windows and their bytes, packets (after finish). */
uint32_t lld_sink_windows(const struct lld_sink *s, const uint64_t **bytes,
			  const uint32_t **pkts);

/*
 * The report's "rx" and "flows" members (docs/load.md). sent (n_flows
 * entries, or NULL) is what the local TX sent per flow: loss is then
 * exact. report_flows caps the per-flow list (the summary covers all).
 */
json_t *lld_sink_report(const struct lld_sink *s, const uint64_t *sent, uint32_t report_flows);

/* One line per figure for people, on f. */
void lld_sink_summary(const struct lld_sink *s, FILE *f);

#endif /* LLD_SINK_H */
