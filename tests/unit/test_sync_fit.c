/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/sync tests, the fit (ls_sync_fit.c): which pairs are pure, the
 * envelope fit on synthetic clouds, and the PTP-style baselines it beats.
 * The simulated truth is in test_sync.h.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_sync.h"

/* ---- 1. purity -------------------------------------------------------- */

START_TEST(test_purity)
{
	struct ls_sync_probe a = {BASE + 1000, BASE + 5000, BASE + 6000, BASE + 11000};
	struct ls_sync_probe b = a;
	struct ls_sync_est e;
	struct ls_sync_est_conf c;

	b.t1 += 10000;
	b.t2 += 10000;
	b.t3 += 10000;
	b.t4 += 10000;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_FWD | LS_SYNC_PURE_REV);
	/* At the tolerance still pure, one ns beyond not: forward only. */
	b.t2 += 200;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_FWD | LS_SYNC_PURE_REV);
	b.t2 += 1;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_REV);
	/* Receive spacing shorter than send spacing is just as impure. */
	b.t2 -= 402;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_REV);
	b.t2 += 201;
	/* Reverse independently. */
	b.t4 += 500;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_FWD);
	b.t4 -= 500;
	/* Zero send spacing is allowed (a burst can share one stamp)... */
	b.t1 = a.t1;
	b.t2 = a.t2;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_FWD | LS_SYNC_PURE_REV);
	b.t2 = a.t2 + 10000;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_REV);
	/* ... negative is not, whatever the receive side says. */
	b.t1 = a.t1 - 10;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 1000000), 0);
	b.t1 = a.t1 + 10000;
	b.t3 = a.t3 - 1;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 1000000), 0);
	b.t3 = a.t3 + 10000;
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200), LS_SYNC_PURE_FWD | LS_SYNC_PURE_REV);
	/* Huge spacing error must not overflow into "pure". */
	b.t2 = a.t2 + (1ULL << 63);
	ck_assert_uint_eq(ls_sync_purity(&a, &b, 200) & LS_SYNC_PURE_FWD, 0);
	b.t2 = a.t2 + 10000;

	/* Counters: one clean, one fwd-impure, one rev-impure, one reordered. */
	ls_sync_est_conf_default(&c);
	ck_assert_int_eq(ls_sync_est_init(&e, &c, 100), 0);
	ck_assert_uint_eq(e.cap, 128);
	ls_sync_est_add_pair(&e, &a, &b);
	b.t2 += 300;
	ls_sync_est_add_pair(&e, &a, &b);
	b.t2 -= 300;
	b.t4 += 300;
	ls_sync_est_add_pair(&e, &a, &b);
	b.t4 -= 300;
	ls_sync_est_add_pair(&e, &b, &a);
	ck_assert_uint_eq(e.pairs, 4);
	ck_assert_uint_eq(e.fwd_kept, 2);
	ck_assert_uint_eq(e.fwd_rejected, 2);
	ck_assert_uint_eq(e.rev_kept, 2);
	ck_assert_uint_eq(e.rev_rejected, 2);
	ck_assert_uint_eq(e.n, 8);
	ck_assert_uint_eq(e.pure[0], LS_SYNC_PURE_FWD | LS_SYNC_PURE_REV);
	ck_assert_uint_eq(e.pure[1], 0);
	ck_assert_uint_eq(e.pure[2], LS_SYNC_PURE_REV);
	ck_assert_uint_eq(e.pure[4], LS_SYNC_PURE_FWD);
	ck_assert_uint_eq(e.pure[6], 0);
	ls_sync_est_reset(&e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_uint_eq(e.pairs, 4);
	ls_sync_est_free(&e);
	ck_assert_int_eq(ls_sync_est_init(&e, &c, 0), -EINVAL);
}
END_TEST

/* ---- 2. envelope fit -------------------------------------------------- */

/* Offset and drift of several seeds and drifts against truth. */
static void
check_fit_accuracy(enum noise nz, double tol_off, double tol_drift)
{
	static const double drifts[] = {87e-6, -100e-6, 0, 100e-6, -3.3e-6};
	struct ls_sync_est_conf c;
	double worst_o = 0, worst_d = 0;
	unsigned int i, seed;

	ls_sync_est_conf_default(&c);
	for (seed = 1; seed <= 8; seed++)
		for (i = 0; i < sizeof(drifts) / sizeof(drifts[0]); i++) {
			struct path p = mk_path(7345678.5, drifts[i]);
			struct ls_sync_est e;
			struct ls_sync_fit f;
			double Tend = 3600 * SEC + seed * 12345.678 * MS;

			ls_rng_seed(seed * 1000 + i);
			ck_assert_int_eq(fit_path(&p, &c, Tend, nz, &e, &f), 0);
			ck_assert(f.ok);
			ck_assert_uint_eq(f.t_ref, clk_at(&p.a, Tend));
			worst_o = fmax(worst_o, fabs(f.offset_ns - path_offset(&p, Tend)));
			worst_d = fmax(worst_d, fabs(f.drift - path_drift(&p)));
			ck_assert_msg(fabs(f.offset_ns - path_offset(&p, Tend)) < tol_off,
				      "seed %u drift %g: offset %.3f truth %.3f", seed, drifts[i],
				      f.offset_ns, path_offset(&p, Tend));
			ck_assert_msg(fabs(f.drift - path_drift(&p)) < tol_drift,
				      "seed %u drift %g: got %.6e", seed, drifts[i], f.drift);
			/* Equal floors: the half gap is the one-way floor. */
			ck_assert_msg(fabs(f.half_gap_ns - 20 * US) < 2 * tol_off + 10,
				      "half gap %.1f", f.half_gap_ns);
			ck_assert(f.sigma_ns >= c.sigma_floor_ns);
			ck_assert(f.drift_sigma > 0);
			ck_assert(f.n_fwd >= c.min_points && f.n_rev >= c.min_points);
			ck_assert_uint_eq(f.n_outliers, 0);
			ck_assert_uint_eq(e.fits, 1);
			ls_sync_est_free(&e);
		}
	printf("fit accuracy (noise %d): worst offset %.3f ns, drift %.3e\n", (int)nz, worst_o,
	       worst_d);
}

START_TEST(test_fit_exact_floor)
{
	check_fit_accuracy(NOISE_HEAVY, 5.0, 0.01e-6);
}
END_TEST

START_TEST(test_fit_noisy_floor)
{
	/* Support points carry up to 20 ns: the envelope can be off by about
	 * that much at either end of the window. */
	check_fit_accuracy(NOISE_HEAVY20, 20.0, 0.03e-6);
}
END_TEST

START_TEST(test_fit_asymmetry)
{
	struct ls_sync_est_conf c;
	struct path p = mk_path(-4321000.25, 87e-6);
	struct ls_sync_est e;
	struct ls_sync_fit f;
	double T = 100 * SEC;

	p.df = 22 * US; /* forward 2 us slower than reverse */
	ls_sync_est_conf_default(&c);
	ls_rng_seed(77);
	ck_assert_int_eq(fit_path(&p, &c, T, NOISE_HEAVY, &e, &f), 0);
	ck_assert_msg(fabs(f.offset_ns - path_offset(&p, T) - 1000) < 3, "err %.3f",
		      f.offset_ns - path_offset(&p, T));
	ck_assert_msg(fabs(f.half_gap_ns - 21 * US) < 5, "half gap %.3f", f.half_gap_ns);
	ls_sync_est_free(&e);

	c.asym_ns = 2000;
	ls_rng_seed(77);
	ck_assert_int_eq(fit_path(&p, &c, T, NOISE_HEAVY, &e, &f), 0);
	ck_assert_msg(fabs(f.offset_ns - path_offset(&p, T)) < 3, "err %.3f",
		      f.offset_ns - path_offset(&p, T));
	ls_sync_est_free(&e);
}
END_TEST

/* Pairs whose probes are stamped `by` ns early on the way out (forward) or
 * back (reverse): both members shifted, so the pair still looks pure. */
static void
add_bad_pair(struct ls_sync_est *e, const struct path *p, double T, double by, bool fwd)
{
	struct ls_sync_probe a, b;

	probe_at(p, T, 0, 0, &a);
	probe_at(p, T + 10 * US, 0, 0, &b);
	if (fwd) {
		a.t2 -= (uint64_t)by;
		b.t2 -= (uint64_t)by;
	} else {
		a.t3 += (uint64_t)by;
		b.t3 += (uint64_t)by;
	}
	ls_sync_est_add_pair(e, &a, &b);
}

/* Heavy-noise pairs over 2 s up to T, plus three forward samples 50 us
 * below the envelope on one line; the estimator's fit at T. */
static void
three_forward_outliers(const struct ls_sync_est_conf *c, const struct path *p, double T,
		       struct ls_sync_est *e, struct ls_sync_fit *f)
{
	ls_rng_seed(5);
	ck_assert_int_eq(ls_sync_est_init(e, c, 1024), 0);
	feed_pairs(e, p, T - 2 * SEC + 5 * MS, T, 10 * MS, NOISE_HEAVY);
	add_bad_pair(e, p, T - 1.6 * SEC + 1 * MS, 50 * US, true);
	add_bad_pair(e, p, T - 1.0 * SEC + 1 * MS, 50 * US, true);
	add_bad_pair(e, p, T - 0.4 * SEC + 1 * MS, 50 * US, true);
	ck_assert_int_eq(ls_sync_est_fit(e, clk_at(&p->a, T), f), 0);
}

START_TEST(test_fit_outliers)
{
	struct ls_sync_est_conf c;
	struct path p = mk_path(7345678.5, -100e-6);
	struct ls_sync_est e;
	struct ls_sync_fit f;
	double T = 50 * SEC;

	ls_sync_est_conf_default(&c);
	/* Three forward samples 50 us below the envelope, on one line. */
	three_forward_outliers(&c, &p, T, &e, &f);
	ck_assert_uint_eq(f.n_outliers, 3);
	ck_assert_uint_eq(e.outliers, 3);
	ck_assert_msg(fabs(f.offset_ns - path_offset(&p, T)) < 5, "err %.3f",
		      f.offset_ns - path_offset(&p, T));
	ck_assert(fabs(f.drift - path_drift(&p)) < 0.01e-6);
	ls_sync_est_free(&e);

	/* Without rejection the same data is far off: the test has teeth. */
	c.outlier_ns = 0;
	three_forward_outliers(&c, &p, T, &e, &f);
	ck_assert_uint_eq(f.n_outliers, 0);
	ck_assert(fabs(f.offset_ns - path_offset(&p, T)) > 1000);
	ls_sync_est_free(&e);

	/* One reverse outlier at the newest end of the window (nothing later
	 * to interpolate against) and one forward at the oldest end. */
	ls_sync_est_conf_default(&c);
	ls_rng_seed(6);
	ck_assert_int_eq(ls_sync_est_init(&e, &c, 1024), 0);
	add_bad_pair(&e, &p, T - 2 * SEC + 1 * MS, 30 * US, true);
	feed_pairs(&e, &p, T - 2 * SEC + 5 * MS, T - 1 * MS, 10 * MS, NOISE_HEAVY);
	add_bad_pair(&e, &p, T - 0.5 * MS, 8 * US, false);
	ck_assert_int_eq(ls_sync_est_fit(&e, clk_at(&p.a, T), &f), 0);
	ck_assert_uint_eq(f.n_outliers, 2);
	ck_assert_msg(fabs(f.offset_ns - path_offset(&p, T)) < 5, "err %.3f",
		      f.offset_ns - path_offset(&p, T));
	ck_assert(fabs(f.drift - path_drift(&p)) < 0.01e-6);
	ls_sync_est_free(&e);
}
END_TEST

START_TEST(test_fit_too_few)
{
	struct ls_sync_est_conf c;
	struct path p = mk_path(1000, 0);
	struct ls_sync_est e;
	struct ls_sync_fit f;
	struct ls_sync_pt pts[3] = {{-2, 5}, {-1, 5}, {0, 5}};
	double T = 10 * SEC;

	ls_sync_est_conf_default(&c);
	ck_assert_int_eq(ls_sync_est_init(&e, &c, 64), 0);
	/* Four clean pairs, but the first is just outside the window. */
	add_bad_pair(&e, &p, T - 2 * SEC - 5 * MS, 0, true);
	add_bad_pair(&e, &p, T - 30 * MS, 0, true);
	add_bad_pair(&e, &p, T - 20 * MS, 0, true);
	add_bad_pair(&e, &p, T - 10 * MS, 0, true);
	ck_assert_uint_eq(e.fwd_kept, 4);
	ck_assert_uint_eq(e.rev_kept, 4);
	f.ok = true;
	ck_assert_int_eq(ls_sync_est_fit(&e, clk_at(&p.a, T), &f), -ENODATA);
	ck_assert(!f.ok);
	ck_assert_uint_eq(e.fits_failed, 1);
	ck_assert_uint_eq(e.n, 6); /* the old pair expired */
	add_bad_pair(&e, &p, T - 5 * MS, 0, true);
	ck_assert_int_eq(ls_sync_est_fit(&e, clk_at(&p.a, T), &f), 0);
	ck_assert(f.ok);
	ck_assert_uint_eq(f.n_fwd, 4);
	ck_assert_uint_eq(f.n_rev, 4);
	ck_assert(fabs(f.offset_ns - 1000) < 1);
	ls_sync_est_free(&e);
	ck_assert_int_eq(ls_sync_envelope_fit(pts, 3, pts, 3, &c, &f), -ENODATA);
	ck_assert_int_eq(ls_sync_envelope_fit(pts, 4, pts, 3, &c, &f), -ENODATA);
}
END_TEST

/* The envelope fit directly: exact lines, any input order. */
START_TEST(test_envelope_direct)
{
	enum { N = 300 };
	struct ls_sync_pt fw[N], rv[N];
	struct ls_sync_est_conf c;
	struct ls_sync_fit f, g;
	const double off = -2500.125, b = 42e-6, floor_ns = 15000;
	unsigned int i;

	ls_sync_est_conf_default(&c);
	ls_rng_seed(11);
	for (i = 0; i < N; i++) {
		double t = -2e9 + i * (2e9 / N);

		fw[i].t = t;
		fw[i].d = floor_ns + off + b * t + (i % 17 == 0 ? 0 : 1e5 * ls_rng_unit());
		rv[i].t = t + 50000;
		rv[i].d = floor_ns - off - b * rv[i].t + (i % 13 == 0 ? 0 : 1e5 * ls_rng_unit());
	}
	ck_assert_int_eq(ls_sync_envelope_fit(fw, N, rv, N, &c, &f), 0);
	ck_assert_msg(fabs(f.offset_ns - off) < 1e-6, "offset %.9f", f.offset_ns);
	ck_assert_msg(fabs(f.drift - b) < 1e-15, "drift %.3e", f.drift);
	ck_assert(fabs(f.half_gap_ns - floor_ns) < 1e-6);
	ck_assert_uint_eq(f.t_ref, 0);
	/* Shuffled input: same answer. */
	for (i = N - 1; i > 0; i--) {
		unsigned int k = (unsigned int)(ls_rng_next() % (i + 1));
		struct ls_sync_pt x = fw[i];

		fw[i] = fw[k];
		fw[k] = x;
		x = rv[i];
		rv[i] = rv[N - 1 - k];
		rv[N - 1 - k] = x;
	}
	ck_assert_int_eq(ls_sync_envelope_fit(fw, N, rv, N, &c, &g), 0);
	ck_assert(fabs(g.offset_ns - f.offset_ns) < 1e-9);
	ck_assert(fabs(g.drift - f.drift) < 1e-18);
	/* Drift beyond max_drift is clamped to it. */
	c.max_drift = 10e-6;
	ck_assert_int_eq(ls_sync_envelope_fit(fw, N, rv, N, &c, &g), 0);
	ck_assert(fabs(g.drift - 10e-6) < 1e-15);
	/* sigma: with sigma_m = 1 only the support points count (floor). */
	ls_sync_est_conf_default(&c);
	c.sigma_m = 1;
	c.sigma_floor_ns = 0.25;
	ck_assert_int_eq(ls_sync_envelope_fit(fw, N, rv, N, &c, &g), 0);
	ck_assert(g.sigma_ns == 0.25);
	c.sigma_m = 4;
	ck_assert_int_eq(ls_sync_envelope_fit(fw, N, rv, N, &c, &g), 0);
	ck_assert(g.sigma_ns == 0.25); /* several exact points per side */
	c.sigma_m = 30;
	ck_assert_int_eq(ls_sync_envelope_fit(fw, N, rv, N, &c, &g), 0);
	ck_assert(g.sigma_ns > 100);
	ck_assert(fabs(g.drift_sigma - g.sigma_ns / (0.5 * (2e9 - 2e9 / N + 50000))) < 1e-15);
}
END_TEST

/* ---- 3. baselines ----------------------------------------------------- */

START_TEST(test_baselines)
{
	struct ls_sync_est_conf c;
	struct path p = mk_path(5000, 0);
	struct ls_sync_est e;
	struct ls_sync_baseline bl;
	struct ls_sync_fit f;
	struct ls_sync_probe pr;
	double T = 20 * SEC, truth;

	ls_sync_est_conf_default(&c);
	/* Hand-made: the min-RTT probe is the second; its offset counts. */
	ck_assert_int_eq(ls_sync_est_init(&e, &c, 16), 0);
	probe_at(&p, T - 3 * MS, 900, 100, &pr); /* rtt 41000, offset +400 */
	ls_sync_est_add_probe(&e, &pr);
	probe_at(&p, T - 2 * MS, 10, 410, &pr); /* rtt 40420: the minimum, offset -200 */
	ls_sync_est_add_probe(&e, &pr);
	probe_at(&p, T - 1 * MS, 4000, 0, &pr); /* rtt 44000, offset +2000 */
	ls_sync_est_add_probe(&e, &pr);
	probe_at(&p, T - 3 * SEC, 0, 0, &pr); /* outside the window */
	ls_sync_est_add_probe(&e, &pr);
	ls_sync_est_baselines(&e, clk_at(&p.a, T), 0, &bl);
	ck_assert(bl.ok);
	ck_assert_uint_eq(bl.n, 3);
	ck_assert_msg(fabs(bl.ntp_offset_ns - (5000 - 200)) < 1, "ntp %.1f", bl.ntp_offset_ns);
	ck_assert(fabs(bl.min_rtt_ns - 40420) < 1);
	ck_assert_msg(fabs(bl.ptp_offset_ns - (5000 + 2200.0 / 3)) < 1, "ptp %.1f",
		      bl.ptp_offset_ns);
	ls_sync_est_free(&e);

	/* Forward queueing heavier: PTP's mean is pulled forward by about half
	 * the difference in mean queueing, NTP by whatever the min-RTT probe
	 * met, the envelope not at all. */
	ls_rng_seed(21);
	ck_assert_int_eq(fit_path(&p, &c, T, NOISE_FWD_HEAVY, &e, &f), 0);
	truth = path_offset(&p, T);
	ls_sync_est_baselines(&e, clk_at(&p.a, T), 0, &bl);
	ck_assert(bl.ok);
	ck_assert_uint_eq(bl.n, 400);
	ck_assert_msg(fabs(bl.ptp_offset_ns - truth - 22.5 * US) < 5 * US, "ptp bias %.1f",
		      bl.ptp_offset_ns - truth);
	ck_assert(fabs(f.offset_ns - truth) < 5);
	ck_assert(fabs(bl.ntp_offset_ns - truth) < 5 * US);
	ls_sync_est_free(&e);

	ck_assert_int_eq(ls_sync_est_init(&e, &c, 16), 0);
	ls_sync_est_baselines(&e, BASE, 0, &bl);
	ck_assert(!bl.ok);
	ls_sync_est_free(&e);
}
END_TEST

void
sync_fit_tests(TCase *tc)
{
	tcase_add_test(tc, test_purity);
	tcase_add_test(tc, test_fit_exact_floor);
	tcase_add_test(tc, test_fit_noisy_floor);
	tcase_add_test(tc, test_fit_asymmetry);
	tcase_add_test(tc, test_fit_outliers);
	tcase_add_test(tc, test_fit_too_few);
	tcase_add_test(tc, test_envelope_direct);
	tcase_add_test(tc, test_baselines);
}
