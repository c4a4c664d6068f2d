/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bound from what the clock is observed to do (ls_sync_bound.c).
 *
 * A node is simulated as lockstepd's estimate behaves: it follows the true
 * offset to the reference (a line plus a random walk) with a lag, through
 * measurement noise, and claims the sigma an estimator assuming
 * sync.wander_ns of walk would claim. Its state goes through
 * ls_sync_bound_observe every 250 ms step, and readings at random instants
 * between steps through ls_sync_fleet_read, against the truth.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_sync.h"

/* Standard normal (Box-Muller). */
static double
gauss(void)
{
	double u = fmax(ls_rng_unit(), 1e-300), v = ls_rng_unit();

	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* ---- the walk observed ------------------------------------------------ */

/* A walk of w ns/sqrt(s) plus a 150 ppm line plus white noise, read every
 * 250 ms for secs seconds, into wobs. */
static void
feed_walk(struct ls_sync_wobs *wo, double w, double noise, double secs)
{
	double x = 0;

	ls_sync_wobs_reset(wo);
	for (double t = 0; t <= secs * SEC; t += 250 * MS) {
		ls_sync_wobs_add(wo, BASE + (uint64_t)t, x + 150e-6 * t + noise * gauss(), 0);
		x += w * sqrt(0.25) * gauss();
	}
}

START_TEST(test_wobs_measures_walk)
{
	static struct ls_sync_wobs wo;
	unsigned int under = 0, over2 = 0;

	ls_rng_seed(2801);
	/* 100 ns/sqrt(s) over 60 s: the 95% upper limit is at least the walk in
	 * most runs, and never far above it */
	for (int k = 0; k < 40; k++) {
		double w;

		feed_walk(&wo, 100, 5, 60);
		w = ls_sync_wobs_wander(&wo, 2 * SEC);
		ck_assert(isfinite(w));
		under += w < 100;
		over2 += w > 200;
	}
	ck_assert_msg(under <= 4, "walk under-read in %u of 40 runs", under);
	ck_assert_msg(over2 == 0, "walk read over twice in %u of 40 runs", over2);
	/* a line with a little noise: no walk to speak of */
	feed_walk(&wo, 0, 2, 60);
	ck_assert_double_lt(ls_sync_wobs_wander(&wo, 2 * SEC), 5);
	/* too short a history says nothing */
	feed_walk(&wo, 100, 5, 0.5);
	ck_assert(isnan(ls_sync_wobs_wander(&wo, 2 * SEC)));
	/* a start-up that moved by microseconds while saying so, then a quiet
	 * minute: the start-up is not walk */
	ls_sync_wobs_reset(&wo);
	for (int k = 0; k < 240; k++) {
		double t = k * 250 * MS, big = k < 20 ? 5000 * exp(-k / 4.0) : 0;

		ls_sync_wobs_add(&wo, BASE + (uint64_t)t, big * gauss() + 2 * gauss(),
				 fmax(big, 2));
	}
	ck_assert_double_lt(ls_sync_wobs_wander(&wo, 2 * SEC), 10);
	/* the same start-up claiming 2 ns throughout: it is walk */
	ls_sync_wobs_reset(&wo);
	for (int k = 0; k < 240; k++) {
		double t = k * 250 * MS, big = k < 20 ? 5000 * exp(-k / 4.0) : 0;

		ls_sync_wobs_add(&wo, BASE + (uint64_t)t, big * gauss() + 2 * gauss(), 2);
	}
	ck_assert_double_gt(ls_sync_wobs_wander(&wo, 2 * SEC), 100);
	/* readings closer than the spacing are not kept */
	ls_sync_wobs_reset(&wo);
	ls_sync_wobs_add(&wo, BASE, 0, 0);
	ls_sync_wobs_add(&wo, BASE + 50 * MS, 0, 0);
	ck_assert_uint_eq(wo.n, 1);
}
END_TEST

/* ---- the bound against a simulated node -------------------------------- */

struct bound_run {
	double inside, readings; /* readings whose bound held the truth, of all */
	double half_sum;         /* sum of half-widths */
	double err2;             /* sum of squared errors */
};

/*
 * One node for secs seconds: the true offset to the reference is a 120 ppm
 * line plus a walk of w_true ns/sqrt(s); the estimate follows it with gain
 * k per 250 ms step through noise ns of white measurement noise, and
 * claims sigma = what an estimator assuming conf.wander_ns (10) would:
 * its smoothed noise and that walk over its lag. observe = false leaves
 * ls_sync_bound_observe out (the bound before issue 28).
 */
static void
run_node(double w_true, double noise, double secs, bool observe, struct bound_run *out)
{
	static struct ls_sync_wobs wo;
	const double dt = 250 * MS, k = 0.125, r = 120e-6;
	const double lag = dt * (1 - k) / k; /* the follower's weighted age */
	struct ls_sync_node_conf c;
	struct ls_sync_state s;
	struct ls_sync_nbr nb;
	struct ls_sync_nbr_use use;
	double y = 0, yhat = 0, claim;

	ls_sync_node_conf_default(&c);
	c.self_id = 2;
	c.wander_ns = 10;
	claim = sqrt(noise * noise * k / (2 - k) + c.wander_ns * c.wander_ns * lag / SEC);
	ls_sync_state_init(&s, 2);
	ls_sync_wobs_reset(&wo);
	memset(&nb, 0, sizeof(nb));
	nb.id = 1;
	nb.has_edge = true;
	nb.edge.ok = true;
	nb.edge.lag_ns = lag;
	memset(&use, 0, sizeof(use));
	use.used = true;
	use.weight = 1;
	for (double t = 0; t < secs * SEC; t += dt) {
		uint64_t now = BASE + (uint64_t)t;
		double y1 = y + w_true * sqrt(dt / SEC) * gauss();

		yhat += k * (y + noise * gauss() - yhat);
		s.flags = LS_SYNC_F_SYNCED;
		s.ref_id = 1;
		s.t0 = s.t_good = now;
		s.theta_ns = yhat + r * t;
		s.phi = r;
		s.sigma_ns = s.bound_sigma_ns = claim;
		s.phi_sigma = 1e-9;
		if (observe)
			ls_sync_bound_observe(&wo, &c, &nb, &use, 1, now, &s);
		if (t >= 5 * SEC) {
			/* a reading somewhere before the next step */
			double a = ls_rng_unit();
			uint64_t local = now + (uint64_t)(a * dt);
			double x = y + a * (y1 - y) + r * (t + a * dt);
			uint64_t truth = local - (uint64_t)(int64_t)llround(x);
			struct ls_sync_reading rd;

			ls_sync_fleet_read(&s, &c, local, &rd);
			out->readings++;
			out->inside += rd.earliest_ns <= truth && truth <= rd.latest_ns;
			out->half_sum += rd.half_ns;
			out->err2 += pow((double)(int64_t)(rd.fleet_ns - truth), 2);
		}
		y = y1;
	}
}

static void
run_seeds(double w_true, bool observe, struct bound_run *b)
{
	memset(b, 0, sizeof(*b));
	ls_rng_seed(2802);
	for (int seed = 0; seed < 10; seed++)
		run_node(w_true, 20, 300, observe, b);
}

/* Wander ten times what the estimators assume: the bound holds anyway. */
START_TEST(test_bound_wander_unassumed)
{
	struct bound_run on, off;

	run_seeds(100, true, &on);
	run_seeds(100, false, &off);
	printf("wander 100 ns/sqrt(s), 10 assumed: bound held %.4f (before: %.4f), "
	       "half-width %.0f ns (before %.0f), error rms %.0f ns\n",
	       on.inside / on.readings, off.inside / off.readings, on.half_sum / on.readings,
	       off.half_sum / off.readings, sqrt(on.err2 / on.readings));
	ck_assert_msg(on.inside / on.readings >= 0.999, "held %.4f, half %.0f, rms %.0f",
		      on.inside / on.readings, on.half_sum / on.readings,
		      sqrt(on.err2 / on.readings));
	/* the assumption alone does not hold it: this is what is tested */
	ck_assert_msg(off.inside / off.readings < 0.99, "held %.4f without",
		      off.inside / off.readings);
	/* honest, not vast: within 8 rms errors (3.3 hold 99.9% of a normal
	 * error; the lag taken is the follower's weighted age, twice what its
	 * error implies, and a 95% upper limit on the walk) */
	ck_assert_double_lt(on.half_sum / on.readings, 8 * sqrt(on.err2 / on.readings));
}
END_TEST

/* A clock quieter than assumed: the bound is the one the estimators give. */
START_TEST(test_bound_quiet_not_wider)
{
	struct bound_run on, off;

	run_seeds(2, true, &on);
	run_seeds(2, false, &off);
	printf("wander 2 ns/sqrt(s), 10 assumed: bound held %.4f, half-width %.1f ns "
	       "(before %.1f)\n", on.inside / on.readings, on.half_sum / on.readings,
	       off.half_sum / off.readings);
	ck_assert_msg(on.inside / on.readings >= 0.999, "held %.4f", on.inside / on.readings);
	ck_assert_double_le(on.half_sum / on.readings, 1.05 * off.half_sum / off.readings);
}
END_TEST

/* The reference and an unsynced node keep nothing; a new reference starts over. */
START_TEST(test_bound_observe_states)
{
	static struct ls_sync_wobs wo;
	struct ls_sync_node_conf c;
	struct ls_sync_state s;
	struct ls_sync_reading rd;

	ls_sync_node_conf_default(&c);
	ls_sync_state_init(&s, 1);
	ck_assert(isnan(s.wander_obs_ns));
	ls_sync_wobs_reset(&wo);
	s.flags = LS_SYNC_F_SYNCED | LS_SYNC_F_REF;
	s.t_good = BASE;
	ls_sync_bound_observe(&wo, &c, NULL, NULL, 0, BASE, &s);
	ck_assert_uint_eq(wo.n, 0);
	ck_assert(isnan(s.wander_obs_ns));
	ls_sync_fleet_read(&s, &c, BASE, &rd);
	ck_assert_double_eq(rd.half_ns, 0);
	s.flags = LS_SYNC_F_SYNCED;
	s.ref_id = 1;
	for (int i = 0; i < 10; i++)
		ls_sync_bound_observe(&wo, &c, NULL, NULL, 0, BASE + (uint64_t)(i * 250 * MS), &s);
	ck_assert_uint_eq(wo.n, 10);
	s.flags |= LS_SYNC_F_HOLDOVER; /* holdover: the readings stop */
	ls_sync_bound_observe(&wo, &c, NULL, NULL, 0, BASE + (uint64_t)(3 * SEC), &s);
	ck_assert_uint_eq(wo.n, 10);
	s.flags = LS_SYNC_F_SYNCED;
	s.ref_id = 3; /* another reference: another timeline */
	ls_sync_bound_observe(&wo, &c, NULL, NULL, 0, BASE + (uint64_t)(4 * SEC), &s);
	ck_assert_uint_eq(wo.n, 1);
}
END_TEST

/*
 * The reading's half-width grows linearly with the time since the last
 * step (the shared-memory page extrapolates it so), and never below the
 * walk it stands for: 3 sqrt(sigma^2 + x^2 (lag + el)).
 */
START_TEST(test_bound_linear_in_age)
{
	struct ls_sync_node_conf c;
	struct ls_sync_state s;
	struct ls_sync_reading r0, r1, r2;
	double x2 = (100.0 * 100.0 - 10.0 * 10.0) * 1e-9;

	ls_sync_node_conf_default(&c);
	c.wander_ns = 10;
	c.holdover_ppm = 0;
	ls_sync_state_init(&s, 2);
	s.flags = LS_SYNC_F_SYNCED;
	s.t0 = s.t_good = BASE;
	s.sigma_ns = s.bound_sigma_ns = 30;
	s.wander_obs_ns = 100;
	s.lag_ns = 2 * SEC;
	ls_sync_fleet_read(&s, &c, BASE, &r0);
	ls_sync_fleet_read(&s, &c, BASE + (uint64_t)(0.5 * SEC), &r1);
	ls_sync_fleet_read(&s, &c, BASE + (uint64_t)SEC, &r2);
	ck_assert_double_eq_tol(r0.half_ns, 3 * sqrt(900 + x2 * 2 * SEC), 1e-6);
	ck_assert_double_eq_tol(r1.half_ns - r0.half_ns, (r2.half_ns - r0.half_ns) / 2, 1e-6);
	ck_assert_double_ge(r2.half_ns, 3 * sqrt(900 + x2 * 3 * SEC));
	/* observed within the assumption: the estimators' bound alone */
	s.wander_obs_ns = 9;
	ls_sync_fleet_read(&s, &c, BASE, &r0);
	ck_assert_double_eq_tol(r0.half_ns, 90, 1e-9);
}
END_TEST

void
sync_bound_tests(TCase *tc)
{
	tcase_add_test(tc, test_bound_linear_in_age);
	tcase_add_test(tc, test_wobs_measures_walk);
	tcase_add_test(tc, test_bound_wander_unassumed);
	tcase_add_test(tc, test_bound_quiet_not_wider);
	tcase_add_test(tc, test_bound_observe_states);
}
