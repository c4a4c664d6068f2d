/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Congestion control at the edge: the rate a flow is paced at, from the
 * congestion signals lockstepd sees in the wire.
 *
 * Three pieces, one per role, each a small state per flow (or per QP) the
 * caller keeps and feeds with its own clock (ticks of hz per second; lockstepd:
 * the TSC):
 *
 * - **DCQCN reaction point** (Zhu et al., "Congestion Control for Large-Scale
 *   RDMA Deployments", SIGCOMM 2015): a CNP cuts the current rate by α/2 and
 *   raises α; with no CNP α decays every K; rate increase events (a timer T
 *   and a byte counter B) run fast recovery (F stages), then additive, then
 *   hyper increase toward a target rate. Timers are evaluated lazily, at the
 *   next event of the flow, with the same result as firing each period in
 *   order: no timer per flow, so a million flows cost no timer wheel.
 * - **Notification point**: whether a CE-marked packet of a QP gets a CNP now,
 *   at most one per QP per interval (as NICs do, "min time between CNPs").
 * - **Delay mode** (after Swift, Kumar et al., SIGCOMM 2020): a target
 *   queueing delay; below it additive increase once per interval, above it a
 *   multiplicative decrease proportional to the excess, at most once per
 *   interval and bounded by max_mdf. Fed the synced one-way delay of the
 *   flow's own path minus its floor, so it reacts to the forward direction
 *   only and needs no ECN.
 *
 * Rates are bits/s (wire bits, as lib/slice counts them); the caller turns a
 * rate into its pacer's ticks per byte (ls_wheel_tpb) and clamps it to what
 * the flow's slice allows (docs/cc.md: what wins when they disagree).
 * EAL-free; integer arithmetic only (α in 1/2^20), so the per-packet update
 * is the same on x86 and the DPU's ARM cores.
 */
#ifndef LS_CC_H
#define LS_CC_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_CC_ONE (1u << 20) /**< 1.0 in the fixed point of α and g */

/** DCQCN reaction-point parameters (per slice in lockstepd). */
struct ls_dcqcn_params {
	uint64_t max_bps;      /**< line rate: the start and the ceiling */
	uint64_t min_bps;      /**< floor (ConnectX rpg_min_rate) */
	uint64_t ai_bps;       /**< additive increase R_AI */
	uint64_t hai_bps;      /**< hyper increase R_HAI */
	uint32_t g;            /**< α gain, in 1/2^20 (paper: 1/256) */
	uint32_t alpha_init;   /**< α at the first CNP, in 1/2^20 (ConnectX: 1023/1024) */
	uint64_t alpha_ticks;  /**< α update period K, ticks */
	uint64_t timer_ticks;  /**< rate increase timer T, ticks */
	uint32_t byte_reset;   /**< rate increase byte counter B, bytes */
	uint32_t f;            /**< fast recovery stages F */
	uint32_t min_dec_pct;  /**< one CNP leaves at least this % of Rc (ConnectX rpg_min_dec_fac) */
	bool clamp_tgt;        /**< a CNP sets Rt = Rc (the paper, ConnectX clamp_tgt_rate=1);
				*   false: only when the timer raised Rc since the last CNP
				*   (ConnectX clamp_tgt_rate=0 with _after_time_inc=1), so
				*   CNPs in a row keep the target from before them */
};

/** Paper-based defaults for a clock of hz ticks/s and a line of max_bps. */
void ls_dcqcn_defaults(struct ls_dcqcn_params *p, uint64_t hz, uint64_t max_bps);

/** Where a reaction point is in the increase cycle (what the operator sees). */
enum ls_dcqcn_state {
	LS_DCQCN_IDLE = 0,    /**< no CNP yet: at line rate */
	LS_DCQCN_RECOVERY,    /**< fast recovery toward the target */
	LS_DCQCN_ADDITIVE,    /**< additive increase */
	LS_DCQCN_HYPER,       /**< hyper increase */
};

/** One flow's reaction point: 48 bytes. */
struct ls_dcqcn {
	uint64_t rc;          /**< current rate, bits/s: what the flow is paced at */
	uint64_t rt;          /**< target rate, bits/s */
	uint64_t alpha_next;  /**< when α is next updated */
	uint64_t timer_next;  /**< when the increase timer next fires */
	uint32_t bytes;       /**< bytes sent since the byte counter last fired */
	uint16_t share;       /**< R_AI and R_HAI are divided by this (the caller
			       *   sets it at each CNP: flows that share one
			       *   increase; 0, 1: none) */
	uint16_t pad;
	uint32_t alpha;       /**< in 1/2^20 */
	uint16_t t_stage;     /**< timer events since the last CNP */
	uint16_t b_stage;     /**< byte-counter events since the last CNP */
};

/** Start at line rate, idle (no CNP seen). */
void ls_dcqcn_init(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now);

/** A CNP for this flow arrived at now: cut the rate, raise α. */
void ls_dcqcn_on_cnp(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now);

/**
 * The flow sent len bytes at now: run the timers due by now (α decay,
 * increase events) and the byte counter. Cheap when nothing is due.
 * @return the current rate, bits/s.
 */
uint64_t ls_dcqcn_on_send(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now,
			  uint32_t len);

/** Run what is due by now without sending (for a reader of the state). */
void ls_dcqcn_advance(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now);

/** The increase stage the flow is in. */
enum ls_dcqcn_state ls_dcqcn_state(const struct ls_dcqcn *d, const struct ls_dcqcn_params *p);

/** Name of a state ("idle", "recovery", "additive", "hyper"). */
const char *ls_dcqcn_state_name(enum ls_dcqcn_state s);

/**
 * Notification point: a CE-marked packet for a QP whose last CNP went out at
 * *last (0: never). True, and *last = now, when a CNP may go now: at most one
 * per interval ticks per QP.
 */
static inline bool
ls_cc_np_due(uint64_t *last, uint64_t now, uint64_t interval)
{
	if (*last != 0 && now - *last < interval)
		return false;
	*last = now ? now : 1;
	return true;
}

/** Delay-mode parameters. */
struct ls_cc_delay_params {
	uint64_t max_bps;      /**< ceiling and start */
	uint64_t min_bps;      /**< floor */
	uint64_t target_ns;    /**< target queueing delay */
	uint64_t ai_bps;       /**< additive increase per interval below target */
	uint32_t beta;         /**< decrease gain, in 1/2^20 (default 0.5; Swift's form) */
	uint32_t max_mdf;      /**< largest single decrease, in 1/2^20 (Swift: 0.5) */
	uint64_t interval;     /**< at most one change per interval (~ one RTT), ticks */
};

/** Defaults: target 10 µs, β 0.5, max_mdf 0.5, AI 0.1% of the line, 20 µs interval. */
void ls_cc_delay_defaults(struct ls_cc_delay_params *p, uint64_t hz, uint64_t max_bps);

/** One flow's delay-mode state. */
struct ls_cc_delay {
	uint64_t rate;         /**< bits/s */
	uint64_t last;         /**< when the rate last changed (0: never) */
	uint32_t decreases;    /**< decreases so far */
	uint32_t increases;    /**< increases so far */
};

void ls_cc_delay_init(struct ls_cc_delay *d, const struct ls_cc_delay_params *p);

/**
 * A queueing-delay sample (one-way delay minus the path's floor, ns) for the
 * flow's path at now. @return the rate, bits/s.
 */
uint64_t ls_cc_delay_on_sample(struct ls_cc_delay *d, const struct ls_cc_delay_params *p,
			       uint64_t now, uint64_t queue_ns);

#ifdef __cplusplus
}
#endif

#endif /* LS_CC_H */
