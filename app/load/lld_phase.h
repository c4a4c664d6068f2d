/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's phase barrier (--phase-bytes): a collective job's steps.
 *
 * A ring all-reduce moves in steps: every flow sends its chunk, and the
 * next step starts only when every chunk has arrived, so a step lasts as
 * long as its slowest flow. Here a phase is n_i frames of each flow i
 * (ceil(bytes / its frame length)); TX parks a flow once it has sent them
 * (tx.c), and this barrier, fed by the sink in the same process, says when
 * the phase is over: every flow has all its frames, or the timeout ran
 * out after the last frame left (missing frames are then lost in that
 * phase, so a lost frame never hangs the job).
 *
 * A flow's sequence numbers run on across phases (phase k's frames are
 * k-1 times n_i on), so a frame belongs to the phase its number says: one
 * of an earlier phase, late after that phase's timeout, is counted late and
 * not taken for one of the current phase. Only frames the sink has not
 * seen before are given here (lld_sink_frame's return: duplicates are
 * excluded, reordered frames count).
 *
 * A frame costs one flow's counter and, when the flow completes, one
 * global counter: no scan of the flows per frame. Memory is fixed at
 * create. EAL-free; tests/unit/test_load.c drives it.
 */
#ifndef LLD_PHASE_H
#define LLD_PHASE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

struct lld_phase;

struct lld_phase_params {
	uint32_t n_flows;
	uint32_t count;          /* phases in the job (--phases) */
	uint64_t bytes;          /* per flow per phase (--phase-bytes), for the report */
	uint64_t hz;             /* TSC ticks per second */
	uint64_t start;          /* TSC of the report's time 0 */
	uint64_t timeout;        /* ticks after the phase's last frame left (--phase-timeout-ms) */
};

/* What lld_phase_poll saw. */
enum {
	LLD_PHASE_RUNNING = 0,   /* the phase goes on (or none is running) */
	LLD_PHASE_ENDED,         /* it ended now; another is to come */
	LLD_PHASE_LAST,          /* it ended now, and it was the last */
};

/* Frames a flow of frame_len bytes sends per phase: ceil(bytes / frame_len). */
static inline uint32_t
lld_phase_frames(uint64_t bytes, uint32_t frame_len)
{
	return (uint32_t)((bytes + frame_len - 1) / frame_len);
}

/*
 * frames[i] is flow i's frames per phase (lld_phase_frames of its length),
 * at least 1. @return a barrier, or NULL (errno EINVAL or ENOMEM).
 */
struct lld_phase *lld_phase_create(const struct lld_phase_params *p, const uint32_t *frames);
void lld_phase_free(struct lld_phase *ph);

/* Start the next phase at TSC now: every flow owes its frames again. */
void lld_phase_begin(struct lld_phase *ph, uint64_t now);

/* Flow's frame seq arrived, not seen before. O(1). */
void lld_phase_rx(struct lld_phase *ph, uint32_t flow, uint64_t seq);

/* Every flow has sent the phase's frames, the last at TSC at: the timeout
 * runs from there. Repeated calls in one phase keep the first. */
void lld_phase_sent(struct lld_phase *ph, uint64_t at);

/*
 * End the running phase if every flow has all its frames, or the timeout
 * has run out (its missing frames are counted lost). Per poll.
 * @return LLD_PHASE_RUNNING, LLD_PHASE_ENDED or LLD_PHASE_LAST.
 */
int lld_phase_poll(struct lld_phase *ph, uint64_t now);

/* Phases ended (completed or timed out). */
uint32_t lld_phase_done(const struct lld_phase *ph);

/* The report's "phases" member (docs/load.md). */
json_t *lld_phase_report(const struct lld_phase *ph);

/* One line for people, on f. */
void lld_phase_summary(const struct lld_phase *ph, FILE *f);

#endif /* LLD_PHASE_H */
