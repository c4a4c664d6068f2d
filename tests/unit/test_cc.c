/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cc: DCQCN's reaction point against the paper's update equations,
 * computed here in floating point step by step (an oracle independent of the
 * library's fixed point and lazy timers); the notification point's per-QP
 * interval; the delay mode on synthetic delay series and on a fluid model of
 * one bottleneck.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ls_cc.h"
#include "ls_test.h"

#define HZ 1000000000ULL /* ticks are ns here */
#define LINE 100000000000ULL /* 100 Gb/s */

/* The paper's reaction point in doubles, timers fired eagerly in time order. */
struct oracle {
	double rc, rt, alpha;
	double share;   /* the increases are divided by it (1: the paper) */
	int t_stage, b_stage;
	bool active;
	uint64_t alpha_next, timer_next;
	double bytes;
};

static void
o_increase(struct oracle *o, const struct ls_dcqcn_params *p)
{
	int lo = o->t_stage < o->b_stage ? o->t_stage : o->b_stage;
	int hi = o->t_stage < o->b_stage ? o->b_stage : o->t_stage;

	if (hi >= (int)p->f)
		o->rt += (lo > (int)p->f ? (lo - (int)p->f) * (double)p->hai_bps :
			  (double)p->ai_bps) / o->share;
	if (o->rt > (double)p->max_bps)
		o->rt = (double)p->max_bps;
	o->rc = (o->rt + o->rc) / 2;
}

/* Fire every K and T boundary up to now, in time order. */
static void
o_advance(struct oracle *o, const struct ls_dcqcn_params *p, uint64_t now)
{
	double g = (double)p->g / LS_CC_ONE;

	for (;;) {
		uint64_t next = o->alpha_next < o->timer_next ? o->alpha_next : o->timer_next;

		if (next > now)
			return;
		if (o->alpha_next == next) {
			o->alpha *= 1 - g;
			o->alpha_next += p->alpha_ticks;
		} else {
			o->t_stage++;
			o_increase(o, p);
			o->timer_next += p->timer_ticks;
		}
	}
}

static void
o_cnp(struct oracle *o, const struct ls_dcqcn_params *p, uint64_t now)
{
	double g = (double)p->g / LS_CC_ONE, cut;

	o_advance(o, p, now);
	if (!o->active)
		o->alpha = (double)p->alpha_init / LS_CC_ONE;
	o->active = true;
	if (p->clamp_tgt || o->t_stage > 0)
		o->rt = o->rc;
	cut = o->rc * (1 - o->alpha / 2);
	o->rc = cut < o->rc * p->min_dec_pct / 100 ? o->rc * p->min_dec_pct / 100 : cut;
	if (o->rc < (double)p->min_bps)
		o->rc = (double)p->min_bps;
	o->alpha = (1 - g) * o->alpha + g;
	o->alpha_next = now + p->alpha_ticks;
	o->timer_next = now + p->timer_ticks;
	o->bytes = 0;
	o->t_stage = o->b_stage = 0;
}

static void
o_send(struct oracle *o, const struct ls_dcqcn_params *p, uint64_t now, uint32_t len)
{
	if (!o->active)
		return;
	o_advance(o, p, now);
	o->bytes += len;
	if (o->bytes >= (double)p->byte_reset) {
		o->bytes -= (double)p->byte_reset;
		o->b_stage++;
		o_increase(o, p);
	}
}

static void
o_init(struct oracle *o, const struct ls_dcqcn_params *p, uint64_t now)
{
	*o = (struct oracle){.rc = (double)p->max_bps, .rt = (double)p->max_bps, .share = 1,
			     .alpha = (double)p->alpha_init / LS_CC_ONE,
			     .alpha_next = now + p->alpha_ticks, .timer_next = UINT64_MAX};
}

/* rc within 0.01% of the oracle: α's 20-bit fixed point rounds at every
 * update (a wrong rule is off by whole percents at its first step). */
static void
assert_close(const struct ls_dcqcn *d, const struct oracle *o, const char *when)
{
	double err = fabs((double)d->rc - o->rc) / o->rc;

	ck_assert_msg(err < 1e-4, "%s: rc %llu vs paper %.0f (%.2e)", when,
		      (unsigned long long)d->rc, o->rc, err);
	ck_assert_msg(fabs((double)d->alpha / LS_CC_ONE - o->alpha) < 1e-4,
		      "%s: alpha %.6f vs paper %.6f", when, (double)d->alpha / LS_CC_ONE, o->alpha);
}

START_TEST(test_dcqcn_defaults_and_first_cnp)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;
	struct oracle o;

	ls_dcqcn_defaults(&p, HZ, LINE);
	ck_assert_uint_eq(p.alpha_ticks, 55000); /* K = 55 µs */
	ck_assert_uint_eq(p.g, LS_CC_ONE / 256);
	ls_dcqcn_init(&d, &p, 1000);
	ck_assert_int_eq(ls_dcqcn_state(&d, &p), LS_DCQCN_IDLE);
	/* idle: line rate, whatever is sent */
	ck_assert_uint_eq(ls_dcqcn_on_send(&d, &p, 500000, 1500), LINE);
	o_init(&o, &p, 1000);
	ls_dcqcn_on_cnp(&d, &p, 1000000);
	o_cnp(&o, &p, 1000000);
	/* α_init = 1023/1024: Rc ≈ line × (1 − 0.4995), above the 50% floor */
	assert_close(&d, &o, "first CNP");
	ck_assert_uint_eq(d.rt, LINE);
	ck_assert_int_eq(ls_dcqcn_state(&d, &p), LS_DCQCN_RECOVERY);
}
END_TEST

/* Decrease, α decay, fast recovery, additive: each step against the paper. */
START_TEST(test_dcqcn_stages_step_by_step)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;
	struct oracle o;
	uint64_t t = 0;

	ls_dcqcn_defaults(&p, HZ, LINE);
	p.byte_reset = UINT32_MAX; /* timer events only: never hyper */
	ls_dcqcn_init(&d, &p, t);
	o_init(&o, &p, t);
	ls_dcqcn_on_cnp(&d, &p, t += 10);
	o_cnp(&o, &p, t);
	for (unsigned int k = 1; k <= 12; k++) {
		t += p.timer_ticks;
		ls_dcqcn_on_send(&d, &p, t, 64);
		o_send(&o, &p, t, 64);
		assert_close(&d, &o, "timer event");
		/* stages 1..F-1 are fast recovery: Rt does not move */
		if (k < p.f) {
			ck_assert_int_eq(ls_dcqcn_state(&d, &p), LS_DCQCN_RECOVERY);
			ck_assert_uint_eq(d.rt, LINE);
		} else {
			ck_assert_int_eq(ls_dcqcn_state(&d, &p), LS_DCQCN_ADDITIVE);
		}
	}
	/* five fast-recovery halvings close 31/32 of the gap to Rt (≥ 5 events) */
	ck_assert_uint_gt(d.rc, LINE / 100 * 97);
}
END_TEST

/* Both counters past F: hyper increase, Rt grows by i × R_HAI. */
START_TEST(test_dcqcn_hyper)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;
	struct oracle o;
	uint64_t t = 0;

	ls_dcqcn_defaults(&p, HZ, LINE);
	p.byte_reset = 1 << 20;
	ls_dcqcn_init(&d, &p, t);
	o_init(&o, &p, t);
	for (int c = 0; c < 6; c++) { /* drive α up and Rc down */
		ls_dcqcn_on_cnp(&d, &p, t += 1000);
		o_cnp(&o, &p, t);
	}
	assert_close(&d, &o, "six CNPs");
	ck_assert_uint_lt(d.rc, LINE / 16);
	/* 1 MiB per timer period: byte and timer stages rise together */
	for (int k = 0; k < 40; k++) {
		for (int b = 0; b < 16; b++) {
			t += p.timer_ticks / 16;
			ls_dcqcn_on_send(&d, &p, t, 65536);
			o_send(&o, &p, t, 65536);
		}
		assert_close(&d, &o, "increase");
	}
	ck_assert_int_eq(ls_dcqcn_state(&d, &p), LS_DCQCN_HYPER);
}
END_TEST

/* min_dec_pct bounds one cut; min_bps is the floor. */
START_TEST(test_dcqcn_bounds)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;
	uint64_t before;

	ls_dcqcn_defaults(&p, HZ, LINE);
	p.alpha_init = LS_CC_ONE; /* α = 1 would halve Rc */
	p.min_dec_pct = 70;       /* ... but one cut keeps at least 70% */
	ls_dcqcn_init(&d, &p, 0);
	ls_dcqcn_on_cnp(&d, &p, 10);
	ck_assert_uint_eq(d.rc, LINE / 100 * 70);
	p.min_dec_pct = 0;
	for (int i = 0; i < 200; i++) {
		before = d.rc;
		ls_dcqcn_on_cnp(&d, &p, 20 + (uint64_t)i);
		ck_assert_uint_le(d.rc, before);
	}
	ck_assert_uint_eq(d.rc, p.min_bps);
	ck_assert_uint_le(d.alpha, LS_CC_ONE);
}
END_TEST

/* Lazy timers equal eager ones: random CNPs and sends over 50 ms. */
START_TEST(test_dcqcn_lazy_equals_eager)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;
	struct oracle o;
	uint64_t t = 0;

	ls_rng_seed(2611);
	ls_dcqcn_defaults(&p, HZ, LINE);
	p.byte_reset = 4 << 20;
	/* the second half of the run: ConnectX's clamp and a shared increase */
	ls_dcqcn_init(&d, &p, t);
	o_init(&o, &p, t);
	while (t < 50000000) {
		if (t >= 25000000 && p.clamp_tgt) {
			p.clamp_tgt = false;
			d.share = 3;
			o.share = 3;
		}
		t += 1 + ls_rng_next() % 40000; /* gaps up to 40 µs, several periods */
		if (ls_rng_next() % 8 == 0) {
			ls_dcqcn_on_cnp(&d, &p, t);
			o_cnp(&o, &p, t);
		} else {
			uint32_t len = 64 + (uint32_t)(ls_rng_next() % 9000);

			ls_dcqcn_on_send(&d, &p, t, len);
			o_send(&o, &p, t, len);
		}
		assert_close(&d, &o, "random run");
	}
}
END_TEST

/* clamp_tgt false (ConnectX's default): CNPs in a row keep the target
 * from before them; after a timer increase the next CNP clamps it. */
START_TEST(test_dcqcn_clamp_after_timer)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;
	struct oracle o;
	uint64_t t = 0, before;

	ls_dcqcn_defaults(&p, HZ, LINE);
	p.clamp_tgt = false;
	p.byte_reset = UINT32_MAX;
	ls_dcqcn_init(&d, &p, t);
	o_init(&o, &p, t);
	for (int c = 0; c < 4; c++) { /* four CNPs 10 µs apart: no timer event */
		ls_dcqcn_on_cnp(&d, &p, t += 10000);
		o_cnp(&o, &p, t);
		assert_close(&d, &o, "CNPs in a row");
		ck_assert_uint_eq(d.rt, LINE);
	}
	ck_assert_uint_lt(d.rc, LINE / 8);
	/* one timer event (fast recovery toward the line), then a CNP: clamped */
	t += p.timer_ticks;
	ls_dcqcn_on_send(&d, &p, t, 64);
	o_send(&o, &p, t, 64);
	before = d.rc;
	ls_dcqcn_on_cnp(&d, &p, t += 1000);
	o_cnp(&o, &p, t);
	assert_close(&d, &o, "CNP after a timer event");
	ck_assert_uint_eq(d.rt, before);
	/* the paper's rule on the same run: the target follows every CNP */
	p.clamp_tgt = true;
	ls_dcqcn_init(&d, &p, 0);
	ls_dcqcn_on_cnp(&d, &p, 10000);
	before = d.rc;
	ls_dcqcn_on_cnp(&d, &p, 20000);
	ck_assert_uint_eq(d.rt, before);
}
END_TEST

/* A shared increase: share n divides each additive and hyper step by n. */
START_TEST(test_dcqcn_share)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d, one;
	struct oracle o;
	uint64_t t = 0, rt;

	ls_dcqcn_defaults(&p, HZ, LINE);
	p.byte_reset = 1 << 20;
	ls_dcqcn_init(&d, &p, t);
	ls_dcqcn_init(&one, &p, t);
	o_init(&o, &p, t);
	for (int c = 0; c < 3; c++) { /* the target below the line */
		ls_dcqcn_on_cnp(&d, &p, t += 10);
		ls_dcqcn_on_cnp(&one, &p, t);
		o_cnp(&o, &p, t);
	}
	ck_assert_uint_lt(d.rt, LINE / 2);
	d.share = 4;
	o.share = 4;
	/* past fast recovery (F timer events), additive: Rt + R_AI / 4 each */
	for (unsigned int k = 1; k <= p.f + 2; k++) {
		t += p.timer_ticks;
		rt = d.rt;
		ls_dcqcn_on_send(&d, &p, t, 64);
		ls_dcqcn_on_send(&one, &p, t, 64);
		o_send(&o, &p, t, 64);
		assert_close(&d, &o, "shared increase");
		if (k >= p.f)
			ck_assert_uint_eq(d.rt - rt, p.ai_bps / 4);
	}
	ck_assert_uint_eq(one.rt - d.rt, (p.ai_bps - p.ai_bps / 4) * 3);
	/* hyper: both counters past F, the step is (i - F) R_HAI / 4 */
	for (int k = 0; k < 40; k++) {
		for (int b = 0; b < 16; b++) {
			t += p.timer_ticks / 16;
			ls_dcqcn_on_send(&d, &p, t, 65536);
			o_send(&o, &p, t, 65536);
		}
		assert_close(&d, &o, "shared hyper increase");
	}
	ck_assert_int_eq(ls_dcqcn_state(&d, &p), LS_DCQCN_HYPER);
}
END_TEST

/* A flow idle for a long time comes back at the line rate, α ~ 0. */
START_TEST(test_dcqcn_long_idle)
{
	struct ls_dcqcn_params p;
	struct ls_dcqcn d;

	ls_dcqcn_defaults(&p, HZ, LINE);
	ls_dcqcn_init(&d, &p, 0);
	ls_dcqcn_on_cnp(&d, &p, 100);
	ck_assert_uint_eq(ls_dcqcn_on_send(&d, &p, 100 + 10 * HZ, 64), LINE);
	ck_assert_uint_lt(d.alpha, LS_CC_ONE / 1000);
}
END_TEST

START_TEST(test_np_interval)
{
	uint64_t last = 0;
	unsigned int sent = 0;

	/* CE-marked packets every 1 µs for 1 ms, interval 50 µs: 20 CNPs */
	for (uint64_t t = 0; t < 1000000; t += 1000)
		sent += ls_cc_np_due(&last, t, 50000);
	ck_assert_uint_eq(sent, 20);
	/* the first packet at time 0 still gets one (0 is not "never") */
	last = 0;
	ck_assert(ls_cc_np_due(&last, 0, 50000));
	ck_assert(!ls_cc_np_due(&last, 1, 50000));
}
END_TEST

/* Synthetic delay series: increase below target, cut on the excess, once
 * per interval. */
START_TEST(test_delay_series)
{
	struct ls_cc_delay_params p;
	struct ls_cc_delay d;
	uint64_t r;

	ls_cc_delay_defaults(&p, HZ, LINE);
	ck_assert_uint_eq(p.beta, LS_CC_ONE / 2);
	/* β 0.8 here, so that a cut reaches max_mdf */
	p.beta = LS_CC_ONE / 10 * 8;
	ls_cc_delay_init(&d, &p);
	/* 40 µs of queue over a 10 µs target: cut β × 30/40 = 0.6, capped at 0.5 */
	r = ls_cc_delay_on_sample(&d, &p, 1000, 40000);
	ck_assert_uint_eq(r, LINE / 2);
	/* inside the interval nothing changes */
	ck_assert_uint_eq(ls_cc_delay_on_sample(&d, &p, 1000 + p.interval - 1, 80000), LINE / 2);
	/* 15 µs: cut 0.8 × 5/15 = 26.7% */
	r = ls_cc_delay_on_sample(&d, &p, 1000 + p.interval, 15000);
	ck_assert_uint_eq(r, LINE / 2 - (uint64_t)(((unsigned __int128)(LINE / 2) *
				(((uint64_t)p.beta * 5000) / 15000)) >> 20));
	/* below target: + AI per interval up to the line */
	for (int i = 2; i < 4000; i++)
		r = ls_cc_delay_on_sample(&d, &p, 1000 + (uint64_t)i * p.interval, 2000);
	ck_assert_uint_eq(r, LINE);
	ck_assert_uint_eq(d.decreases, 2);
	/* lockstepd's "probes lost" (10 s of queue) and an absurd sample:
	 * the most it cuts, no overflow in β (q - target) */
	r = ls_cc_delay_on_sample(&d, &p, 1000 + 4000ULL * p.interval, 10000000000ULL);
	ck_assert_uint_eq(r, LINE / 2);
	r = ls_cc_delay_on_sample(&d, &p, 1000 + 4001ULL * p.interval, UINT64_MAX);
	ck_assert_uint_eq(r, LINE / 4);
}
END_TEST

/* N flows into one bottleneck (fluid model, 1 µs steps, base RTT 8 µs, the
 * delay signal one RTT old): the queue settles within 2x the target at p99
 * of the last half, the link stays >= 90% busy (issue 26's delay-mode line,
 * here on the model; the emulator run is the integration test). */
static void
delay_fluid(unsigned int n)
{
	struct ls_cc_delay_params p;
	struct ls_cc_delay f[32];
	const double cap = 10e9 / 8; /* bytes/s, 10 Gb/s */
	double q = 0, sent = 0, hist[8] = {0}, qs[20000];
	unsigned int nq = 0, over = 0;

	ls_cc_delay_defaults(&p, HZ, 10000000000ULL);
	for (unsigned int i = 0; i < n; i++)
		ls_cc_delay_init(&f[i], &p);
	for (uint64_t t = 1; t <= 40000; t++) {
		double in = 0, qd = hist[t % 8]; /* the sample is one RTT old */

		for (unsigned int i = 0; i < n; i++)
			in += (double)ls_cc_delay_on_sample(&f[i], &p, t * 1000 +
							     i, (uint64_t)qd) / 8 * 1e-6;
		q += in;
		sent += q < cap * 1e-6 ? q : cap * 1e-6;
		q -= q < cap * 1e-6 ? q : cap * 1e-6;
		hist[t % 8] = q / cap * 1e9;
		if (t > 20000)
			qs[nq++] = q / cap * 1e9;
	}
	for (unsigned int i = 0; i < nq; i++)
		over += qs[i] > 2.0 * (double)p.target_ns;
	ck_assert_msg(over <= nq / 100, "%u flows: queue over 2x target in %u of %u steps", n,
		      over, nq);
	ck_assert_msg(sent / (cap * 40000e-6) >= 0.90, "%u flows: utilisation %.3f", n,
		      sent / (cap * 40000e-6));
}

START_TEST(test_delay_fluid)
{
	delay_fluid(2);
	delay_fluid(8);
	delay_fluid(32);
}
END_TEST

static Suite *
cc_suite(void)
{
	Suite *s = suite_create("cc");
	TCase *tc = tcase_create("dcqcn");

	tcase_add_test(tc, test_dcqcn_defaults_and_first_cnp);
	tcase_add_test(tc, test_dcqcn_stages_step_by_step);
	tcase_add_test(tc, test_dcqcn_hyper);
	tcase_add_test(tc, test_dcqcn_bounds);
	tcase_add_test(tc, test_dcqcn_lazy_equals_eager);
	tcase_add_test(tc, test_dcqcn_long_idle);
	tcase_add_test(tc, test_dcqcn_clamp_after_timer);
	tcase_add_test(tc, test_dcqcn_share);
	suite_add_tcase(s, tc);
	tc = tcase_create("np_delay");
	tcase_add_test(tc, test_np_interval);
	tcase_add_test(tc, test_delay_series);
	tcase_add_test(tc, test_delay_fluid);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(cc_suite)
