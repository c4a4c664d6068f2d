/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DCQCN's reaction point (see ls_cc.h). The paper's update rules, in the
 * order its state machine applies them:
 *
 *   CNP:       Rt = Rc; Rc = Rc (1 - α/2); α = (1 - g) α + g;
 *              timer, byte counter and both stage counts restart.
 *              (clamp_tgt false: Rt = Rc only when a timer event came
 *              since the last CNP, as ConnectX by default.)
 *   share:     R_AI and R_HAI divided by d->share (flows that share one
 *              increase, set by the caller at each CNP; lockstep's, not
 *              the paper's).
 *   every K:   with no CNP since the last update, α = (1 - g) α.
 *   increase:  on each timer (T) or byte-counter (B) event, with
 *              i = min(t_stage, b_stage), m = max(t_stage, b_stage):
 *                m < F:  fast recovery    Rc = (Rt + Rc) / 2
 *                i > F:  hyper increase   Rt += i_hai R_HAI, Rc = (Rt + Rc) / 2
 *                else:   additive        Rt += R_AI,       Rc = (Rt + Rc) / 2
 *              (i_hai = i - F, as the paper's hyper stage grows).
 *
 * Timers are lazy: the K and T periods that ended before now are applied
 * in time order when the flow next sends or gets a CNP. A CNP restarts both
 * periods, so what a real timer would have done in between is exactly what
 * the catch-up loop does; the loop is bounded (an idle flow that comes back
 * after thousands of periods jumps to the line rate the increases reach).
 */
#include <stddef.h>

#include "ls_cc.h"

/* A flow idle for this many periods has, by any parameters in use (R_AI of
 * Mb/s, g of 1/256), climbed back to the line rate and decayed α to nothing:
 * past it the catch-up jumps there instead of looping. */
#define CATCHUP_MAX 4096

void
ls_dcqcn_defaults(struct ls_dcqcn_params *p, uint64_t hz, uint64_t max_bps)
{
	*p = (struct ls_dcqcn_params){
		.max_bps = max_bps,
		.min_bps = 1000000,                  /* ConnectX rpg_min_rate: 1 Mb/s */
		.ai_bps = 40000000,                  /* paper: R_AI 40 Mb/s */
		.hai_bps = 200000000,                /* 5 x R_AI (set to rpg_hai_rate) */
		.g = LS_CC_ONE / 256,                /* paper: g = 1/256 */
		.alpha_init = LS_CC_ONE / 1024 * 1023, /* ConnectX initial_alpha_value */
		.alpha_ticks = hz * 55 / 1000000,    /* paper: K = 55 µs */
		.timer_ticks = hz * 55 / 1000000,    /* T = 55 µs (set to rpg_time_reset) */
		.byte_reset = 10u << 20,             /* paper: B = 10 MB */
		.f = 5,                              /* paper: F = 5 */
		.min_dec_pct = 50,                   /* ConnectX rpg_min_dec_fac */
		.clamp_tgt = true,                   /* paper */
	};
	if (p->alpha_ticks == 0)
		p->alpha_ticks = 1;
	if (p->timer_ticks == 0)
		p->timer_ticks = 1;
}

void
ls_dcqcn_init(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now)
{
	*d = (struct ls_dcqcn){
		.rc = p->max_bps, .rt = p->max_bps, .alpha = p->alpha_init,
		.alpha_next = now + p->alpha_ticks, .timer_next = UINT64_MAX,
	};
}

static uint32_t
alpha_decay(uint32_t a, uint32_t g)
{
	/* rounded to nearest: truncation would bias α down at every period */
	return (uint32_t)(((uint64_t)a * (LS_CC_ONE - g) + (LS_CC_ONE >> 1)) >> 20);
}

/* One rate increase event (timer or byte counter already counted). */
static void
increase(struct ls_dcqcn *d, const struct ls_dcqcn_params *p)
{
	uint32_t lo = d->t_stage < d->b_stage ? d->t_stage : d->b_stage;
	uint32_t hi = d->t_stage < d->b_stage ? d->b_stage : d->t_stage;
	uint64_t div = d->share > 1 ? d->share : 1;

	if (hi < p->f) {
		/* fast recovery: Rt stays */
	} else if (lo > p->f) {
		d->rt += (uint64_t)(lo - p->f) * p->hai_bps / div;
	} else {
		d->rt += p->ai_bps / div;
	}
	if (d->rt > p->max_bps)
		d->rt = p->max_bps;
	d->rc = (d->rt + d->rc) / 2;
}

static void
stage_up(uint16_t *s)
{
	if (*s < UINT16_MAX)
		(*s)++;
}

void
ls_dcqcn_advance(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now)
{
	unsigned int n = 0;

	/* α: every K without a CNP (a CNP resets alpha_next). Past the bound α
	 * is below one unit of its fixed point anyway. */
	while (d->alpha_next <= now && n++ < CATCHUP_MAX) {
		d->alpha = alpha_decay(d->alpha, p->g);
		d->alpha_next += p->alpha_ticks;
	}
	if (d->alpha_next <= now) {
		d->alpha = 0;
		d->alpha_next = now + p->alpha_ticks;
	}
	/* the increase timer runs only after a first CNP */
	n = 0;
	while (d->timer_next <= now && n++ < CATCHUP_MAX) {
		stage_up(&d->t_stage);
		increase(d, p);
		d->timer_next += p->timer_ticks;
	}
	if (d->timer_next <= now) {
		d->rc = d->rt = p->max_bps;
		d->timer_next = now + p->timer_ticks;
	}
}

void
ls_dcqcn_on_cnp(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now)
{
	uint64_t cut, floor_dec;

	ls_dcqcn_advance(d, p, now);
	if (d->timer_next == UINT64_MAX)
		d->alpha = p->alpha_init; /* first CNP: α starts at its initial value */
	if (p->clamp_tgt || d->t_stage > 0)
		d->rt = d->rc;
	cut = (uint64_t)(((unsigned __int128)d->rc * d->alpha) >> 21); /* Rc α/2 */
	floor_dec = d->rc * p->min_dec_pct / 100;
	d->rc = d->rc - cut < floor_dec ? floor_dec : d->rc - cut;
	if (d->rc < p->min_bps)
		d->rc = p->min_bps;
	d->alpha = alpha_decay(d->alpha, p->g) + p->g;
	if (d->alpha > LS_CC_ONE)
		d->alpha = LS_CC_ONE;
	d->alpha_next = now + p->alpha_ticks;
	d->timer_next = now + p->timer_ticks;
	d->bytes = 0;
	d->t_stage = 0;
	d->b_stage = 0;
}

uint64_t
ls_dcqcn_on_send(struct ls_dcqcn *d, const struct ls_dcqcn_params *p, uint64_t now,
		 uint32_t len)
{
	if (d->timer_next == UINT64_MAX)
		return d->rc; /* idle: line rate until the first CNP */
	if (d->alpha_next <= now || d->timer_next <= now)
		ls_dcqcn_advance(d, p, now);
	d->bytes += len;
	if (d->bytes >= p->byte_reset) {
		d->bytes -= p->byte_reset;
		stage_up(&d->b_stage);
		increase(d, p);
	}
	return d->rc;
}

enum ls_dcqcn_state
ls_dcqcn_state(const struct ls_dcqcn *d, const struct ls_dcqcn_params *p)
{
	uint32_t lo = d->t_stage < d->b_stage ? d->t_stage : d->b_stage;
	uint32_t hi = d->t_stage < d->b_stage ? d->b_stage : d->t_stage;

	if (d->timer_next == UINT64_MAX)
		return LS_DCQCN_IDLE;
	if (hi < p->f)
		return LS_DCQCN_RECOVERY;
	return lo > p->f ? LS_DCQCN_HYPER : LS_DCQCN_ADDITIVE;
}

const char *
ls_dcqcn_state_name(enum ls_dcqcn_state s)
{
	static const char *const names[] = {"idle", "recovery", "additive", "hyper"};

	return (unsigned int)s < 4 ? names[s] : "?";
}
