/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The delay-based mode (see ls_cc.h): Swift's rate form on a queueing-delay
 * signal. Below the target: rate += AI once per interval. Above it:
 * rate *= 1 - β (delay - target) / delay, no more than max_mdf at once and at
 * most once per interval, so one burst of samples from one queue build-up
 * counts once (Swift decreases at most once per RTT for the same reason).
 */
#include "ls_cc.h"

void
ls_cc_delay_defaults(struct ls_cc_delay_params *p, uint64_t hz, uint64_t max_bps)
{
	*p = (struct ls_cc_delay_params){
		.max_bps = max_bps,
		.min_bps = 1000000,
		.target_ns = 10000,
		.ai_bps = max_bps / 1000,
		/* 0.5, not 0.8: every flow toward a peer reads the same probe
		 * and cuts at once, so a cut is the link's, not one flow's
		 * (docs/cc.md: 8 and 32 flows 0.88 busy at 0.8, 0.90-0.93 at 0.5) */
		.beta = LS_CC_ONE / 2,
		.max_mdf = LS_CC_ONE / 2,
		.interval = hz * 20 / 1000000,
	};
}

void
ls_cc_delay_init(struct ls_cc_delay *d, const struct ls_cc_delay_params *p)
{
	*d = (struct ls_cc_delay){.rate = p->max_bps};
}

uint64_t
ls_cc_delay_on_sample(struct ls_cc_delay *d, const struct ls_cc_delay_params *p, uint64_t now,
		      uint64_t queue_ns)
{
	uint64_t f;

	if (d->last != 0 && now - d->last < p->interval)
		return d->rate;
	if (queue_ns <= p->target_ns) {
		if (d->rate >= p->max_bps)
			return d->rate; /* at the ceiling: nothing to do, no interval spent */
		d->rate += p->ai_bps;
		if (d->rate > p->max_bps)
			d->rate = p->max_bps;
		d->increases++;
	} else {
		/* the share to cut, in 1/2^20: β (q - target) / q, capped */
		f = (uint64_t)((unsigned __int128)p->beta * (queue_ns - p->target_ns) / queue_ns);
		if (f > p->max_mdf)
			f = p->max_mdf;
		d->rate -= (uint64_t)(((unsigned __int128)d->rate * f) >> 20);
		if (d->rate < p->min_bps)
			d->rate = p->min_bps;
		d->decreases++;
	}
	d->last = now ? now : 1;
	return d->rate;
}
