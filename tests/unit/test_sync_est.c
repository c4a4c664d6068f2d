/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/sync tests, the per-path estimator (ls_sync_est.c and
 * ls_sync_track.c): combining paths, drift from each direction's floor,
 * and the track of windows under one-sided, heavy, split and wandering load.
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

/* ---- 4. combine ------------------------------------------------------- */

START_TEST(test_combine)
{
	struct ls_sync_fit fits[3], out;
	uint64_t t = BASE + 12345;

	memset(fits, 0, sizeof(fits));
	fits[0] = (struct ls_sync_fit){.ok = true, .t_ref = t, .offset_ns = 100, .drift = 1e-6,
				       .sigma_ns = 10, .drift_sigma = 1e-15,
				       .half_gap_ns = 20000, .n_fwd = 10, .n_rev = 11,
				       .n_outliers = 1};
	fits[1] = (struct ls_sync_fit){.ok = true, .t_ref = t - 1000000, .offset_ns = 130,
				       .drift = 3e-6, .sigma_ns = 20, .drift_sigma = 2e-15,
				       .half_gap_ns = 15000, .n_fwd = 5, .n_rev = 6};
	fits[2] = (struct ls_sync_fit){.ok = false, .offset_ns = 1e9, .sigma_ns = 1};
	ck_assert_int_eq(ls_sync_combine(fits, 3, t, &out), 0);
	/* path 2 moved 1 ms along 3 ppm: 133; weights 1/100 and 1/400, and
	 * for the drifts 1/1e-30 and 1/4e-30 */
	ck_assert_msg(fabs(out.offset_ns - (100 * 4 + 133) / 5.0) < 1e-6, "%.6f", out.offset_ns);
	ck_assert(fabs(out.drift - (1e-6 * 4 + 3e-6) / 5.0) < 1e-15);
	/* sigma: the weighted mean of 10 and 20 is 12, the paths' weighted
	 * spread sqrt((4 * 6.6^2 + 26.4^2) / 5) = 13.2 is larger */
	ck_assert_msg(fabs(out.sigma_ns - 13.2) < 1e-9, "%.9f", out.sigma_ns);
	/* the drift alike: the paths claim 1e-15, but 1 and 3 ppm weighted
	 * 4 to 1 spread sqrt((4 * 0.4^2 + 1.6^2) / 5) = 0.8 ppm */
	ck_assert_msg(fabs(out.drift_sigma - 0.8e-6) < 1e-12, "%.3e", out.drift_sigma);
	ck_assert(out.half_gap_ns == 15000);
	ck_assert_uint_eq(out.n_fwd, 15);
	ck_assert_uint_eq(out.n_rev, 17);
	ck_assert_uint_eq(out.n_outliers, 1);
	ck_assert_uint_eq(out.t_ref, t);
	ck_assert(out.ok);
	/* The drifts go by their own figures, not the offsets': the path
	 * with the worse offset but the surer slope (its floors pinned it)
	 * sets the drift, and the spread stays near its figure. */
	fits[0].drift_sigma = 1e-6;
	fits[1].drift_sigma = 1e-9;
	ck_assert_int_eq(ls_sync_combine(fits, 2, t, &out), 0);
	ck_assert_msg(fabs(out.drift - 3e-6) < 1e-8, "%.3e", out.drift);
	ck_assert_msg(out.drift_sigma < 0.01e-6, "%.3e", out.drift_sigma);
	ck_assert_int_eq(ls_sync_combine(fits + 2, 1, t, &out), -ENODATA);
	ck_assert(!out.ok);
	ck_assert_int_eq(ls_sync_combine(fits, 0, t, &out), -ENODATA);
}
END_TEST

/* ---- 4a. drift from each direction's floor ---------------------------- */

/*
 * Pairs every gap_ns of true time from *Tf up to T, each pair's two members
 * meeting the queues queues() gives at its time; *Tf advances.
 */
static void
feed_queued(struct ls_sync_est *e, const struct path *p, double *Tf, double T, double gap_ns,
	    void (*queues)(double T, double *qf, double *qr))
{
	for (; *Tf < T; *Tf += gap_ns) {
		struct ls_sync_probe a, b;
		double qf, qr;

		queues(*Tf, &qf, &qr);
		probe_at(p, *Tf, qf, qr, &a);
		probe_at(p, *Tf + 10 * US, qf, qr, &b);
		ls_sync_est_add_pair(e, &a, &b);
	}
}

/*
 * Run a path through an estimator fitted every 500 ms (free slope, as
 * before a track has one) with pairs every gap_ns, and check every floor
 * drift it gives against the truth: within 3 sigma always. Returns the
 * last one's |error| and sigma, and in *first_sure when the sigma first
 * fell below 0.1 ppm (s; 0 never).
 */
static void
floor_run(const struct path *p, uint64_t seed, double gap_ns, double secs,
	  void (*queues)(double T, double *qf, double *qr), double *err, double *sig,
	  double *first_sure)
{
	struct ls_sync_est_conf conf;
	struct ls_sync_est e;
	double T, Tf = 0;

	ls_rng_seed(seed);
	ls_sync_est_conf_default(&conf);
	conf.purity_tol_ns = 200;
	ck_assert_int_eq(ls_sync_est_init(&e, &conf, 4096), 0);
	*err = *sig = NAN;
	*first_sure = 0;
	for (T = 500 * MS; T <= secs * SEC; T += 500 * MS) {
		struct ls_sync_fit win;
		uint64_t now = clk_at(&p->a, T);
		double b, s;

		feed_queued(&e, p, &Tf, T, gap_ns, queues);
		b = ls_sync_est_floor_drift(&e, now, 0, &s);
		if (!isnan(b)) {
			ck_assert_msg(fabs(b - path_drift(p)) <= 3 * s + 1e-12,
				      "T %.1f s: floor drift off %.4f ppm, sigma %.4f", T / SEC,
				      (b - path_drift(p)) * 1e6, s * 1e6);
			if (s < 0.1e-6 && *first_sure == 0)
				*first_sure = T / SEC;
			*err = fabs(b - path_drift(p));
			*sig = s;
		} else {
			ck_assert(isnan(s));
		}
		ls_sync_est_fit(&e, now, &win);
	}
	/* forgotten with the samples */
	ls_sync_est_reset(&e);
	ck_assert(isnan(ls_sync_est_floor_drift(&e, clk_at(&p->a, T), 0, &(double){0})));
	ls_sync_est_free(&e);
}

/* Each direction meets an empty queue on 1% of samples, at its own moments
 * (two busy links each way); otherwise 20..520 us. */
static void
sparse_floor_queues(double T, double *qf, double *qr)
{
	(void)T;
	*qf = ls_rng_unit() < 0.01 ? 0 : 20 * US + 500 * US * ls_rng_unit();
	*qr = ls_rng_unit() < 0.01 ? 0 : 20 * US + 500 * US * ls_rng_unit();
}

/* Forward meets its floor only in the first second, reverse throughout. */
static void
early_fwd_floor_queues(double T, double *qf, double *qr)
{
	*qf = T < 1 * SEC && ls_rng_unit() < 0.05 ? 0 : 20 * US + 500 * US * ls_rng_unit();
	*qr = ls_rng_unit() < 0.01 ? 0 : 20 * US + 500 * US * ls_rng_unit();
}

START_TEST(test_floor_drift)
{
	struct path p = mk_path(-4.1 * MS, -52e-6);
	double err, sig, sure;

	/* A pair every 2.5 ms: the free windows meet both floors seldom
	 * together, but each direction's floors lie on one line. */
	floor_run(&p, 515, 2.5 * MS, 8, sparse_floor_queues, &err, &sig, &sure);
	printf("floor_drift sparse: sure (< 0.1 ppm) from %.1f s, last error %.4f ppm, "
	       "sigma %.4f\n", sure, err * 1e6, sig * 1e6);
	ck_assert_msg(sure > 0 && sure <= 3, "sure from %.1f s", sure);
	ck_assert_msg(err < 0.01e-6 && sig < 0.05e-6, "%.4f ppm, sigma %.4f", err * 1e6,
		      sig * 1e6);

	/* One side's floors all early: its hull edge over the middle rests on a
	 * queued sample and tilts; the other side's does not, and the two
	 * disagreeing says how far off their mean can be (checked at every
	 * step by floor_run). */
	floor_run(&p, 516, 10 * MS, 8, early_fwd_floor_queues, &err, &sig, &sure);
	printf("floor_drift early forward floors: last error %.4f ppm, sigma %.4f\n",
	       err * 1e6, sig * 1e6);
	ck_assert_msg(sig > 1e-6, "sigma %.4f ppm", sig * 1e6);
}
END_TEST

/*
 * Floor chunks sized small grow to what a fit step brings and give the
 * floor drift of chunks of LS_SYNC_FLOOR_VERTS, bit for bit: one ring of
 * 64 probes (2 vertices a chunk at first) and one of 1,024 (24), both
 * holding the whole window (a pair every 100 ms), fitted every second.
 */
START_TEST(test_floor_chunks_grow)
{
	struct path p = mk_path(2.7 * MS, 31e-6);
	struct ls_sync_est small, full;
	double T, Tf = 0;
	unsigned int sure = 0;

	ck_assert_int_eq(ls_sync_est_init(&small, NULL, 64), 0);
	ck_assert_int_eq(ls_sync_est_init(&full, NULL, 1024), 0);
	ck_assert_uint_eq(small.verts, 2);
	for (T = 1 * SEC; T <= 20 * SEC; T += 1 * SEC) {
		uint64_t now = clk_at(&p.a, T);
		struct ls_sync_fit w1, w2;
		double s1, s2, b1, b2;
		double Tf2 = Tf;

		/* the same pairs and queues into both */
		ls_rng_seed(517 + (uint64_t)(T / SEC));
		feed_queued(&small, &p, &Tf, T, 100 * MS, sparse_floor_queues);
		ls_rng_seed(517 + (uint64_t)(T / SEC));
		feed_queued(&full, &p, &Tf2, T, 100 * MS, sparse_floor_queues);
		ls_sync_est_fit(&small, now, &w1);
		ls_sync_est_fit(&full, now, &w2);
		b1 = ls_sync_est_floor_drift(&small, now, 0, &s1);
		b2 = ls_sync_est_floor_drift(&full, now, 0, &s2);
		ck_assert_msg((isnan(b1) && isnan(b2)) || (b1 == b2 && s1 == s2),
			      "T %.0f s: %.6e (%.3e) against %.6e (%.3e)", T / SEC, b1, s1, b2, s2);
		sure += !isnan(b1);
	}
	printf("floor chunks grown from 2 to %u vertices: floor drift as with %u, %u of 20 steps "
	       "with one\n", small.verts, full.verts, sure);
	ck_assert_uint_gt(small.verts, 2);
	ck_assert_uint_gt(sure, 0);
	ls_sync_est_free(&small);
	ls_sync_est_free(&full);
}
END_TEST

/* ---- 4b. per-path track of windows ------------------------------------ */

/* Worst errors of a track run (track_run). */
struct track_worst {
	unsigned int steps;
	double win, track, drift; /* steady |error| of newest window, track, drift */
	double z;                 /* track / sigma, worst of all steps checked */
};

/*
 * Feed a path pairs every gap_ns (queueing from queues(), the pair's two
 * members alike), step every 500 ms for secs as lockstepd does (drift from
 * the track, window fitted at it, into the track, offset from the track),
 * from 10 s on check that the drift's and the offset's sigmas cover their
 * errors, and from t_steady s on keep the worst errors.
 */
static void
track_run(struct path *p, uint64_t seed, double gap_ns, double secs, double t_steady,
	  double wander, void (*queues)(double T, double *qf, double *qr), struct track_worst *w)
{
	struct ls_sync_est_conf conf;
	struct ls_sync_est e;
	struct ls_sync_track k;
	double T, Tf = 0;

	memset(w, 0, sizeof(*w));
	ls_rng_seed(seed);
	ls_sync_est_conf_default(&conf);
	conf.purity_tol_ns = 200;
	ck_assert_int_eq(ls_sync_est_init(&e, &conf, 1024), 0);
	ls_sync_track_init(&k);
	for (T = 500 * MS; T <= secs * SEC; T += 500 * MS) {
		struct ls_sync_fit win, fit;
		double sig, b, truth, de;
		uint64_t now = clk_at(&p->a, T);

		feed_queued(&e, p, &Tf, T, gap_ns, queues);
		b = ls_sync_track_drift(&k, 4000000000ULL, &conf, wander, &sig);
		e.conf.fixed_drift = b;
		if (ls_sync_est_fit(&e, now, &win) != 0)
			continue;
		ls_sync_track_add(&k, &win);
		if (T < 10 * SEC || isnan(b))
			continue;
		ck_assert_int_eq(ls_sync_track_fit(&k, now, b, sig, wander, &conf, &fit), 0);
		ck_assert(fit.ok && fit.t_ref == now && fit.drift == b);
		truth = path_offset(p, T);
		de = b - path_drift(p);
		ck_assert_msg(fabs(de) <= 3 * sig, "T %.1f s: drift off %.4f ppm, sigma %.4f",
			      T / SEC, de * 1e6, sig * 1e6);
		ck_assert_msg(fabs(fit.offset_ns - truth) <= 3 * fit.sigma_ns + 5,
			      "T %.1f s: error %.1f ns, sigma %.1f", T / SEC,
			      fit.offset_ns - truth, fit.sigma_ns);
		w->z = fmax(w->z, fabs(fit.offset_ns - truth) / fit.sigma_ns);
		if (T < t_steady * SEC)
			continue;
		w->win = fmax(w->win, fabs(win.offset_ns - truth));
		w->track = fmax(w->track, fabs(fit.offset_ns - truth));
		w->drift = fmax(w->drift, fabs(de));
		w->steps++;
	}
	ls_sync_est_free(&e);
	ls_sync_track_free(&k);
}

/*
 * Print a run and check what every track test asks: enough steps, windows
 * the load biased by at least min_win ns (0: not checked), the track within
 * 100 ns of the truth, and the drift within max_drift (0: not checked).
 */
static void
track_check(const char *name, const struct track_worst *w, unsigned int min_steps,
	    double min_win, double max_drift)
{
	printf("%s: %u steps, worst |error| newest window %.0f ns, track %.1f ns (%.2f sigma), "
	       "drift %.4f ppm\n", name, w->steps, w->win, w->track, w->z, w->drift * 1e6);
	ck_assert_uint_ge(w->steps, min_steps);
	if (min_win > 0)
		ck_assert_msg(w->win > min_win, "the load must bias windows: %.0f", w->win);
	ck_assert_msg(w->track < 100, "track %.1f ns", w->track);
	if (max_drift > 0)
		ck_assert_msg(w->drift < max_drift, "drift %.4f ppm", w->drift * 1e6);
}

/*
 * A busy link in one direction only: the reverse floor is reachable only in
 * the first 1.5 s of every 6 s (20% of pure samples then meet no queue);
 * otherwise every reverse sample meets 20..120 us. Forward is light. The
 * newest window is then off by >= 10 us for much of the time, and says so
 * by its half gap; the track must carry the clean windows' offset forward.
 */
static void
one_sided_queues(double T, double *qf, double *qr)
{
	bool clean = fmod(T, 6 * SEC) < 1.5 * SEC;

	*qf = ls_rng_unit() < 0.2 ? 0 : 50 * US * ls_rng_unit();
	*qr = clean ? (ls_rng_unit() < 0.2 ? 0 : 100 * US * ls_rng_unit())
		    : 20 * US + 100 * US * ls_rng_unit();
}

START_TEST(test_track_one_sided)
{
	struct path p = mk_path(3.2 * MS, 40e-6);
	struct track_worst w;

	track_run(&p, 1603, 10 * MS, 40, 10, 10, one_sided_queues, &w);
	track_check("track_one_sided", &w, 55, 5000, 0.02e-6);
}
END_TEST

/*
 * Heavy load on both sides, as on a leaf-spine path at 90%: a sample meets
 * an empty queue with probability 2%, otherwise 0..500 us. Each window is
 * off in its own way, so a least-squares slope through a few of them can
 * be ppm off while agreeing with itself; the track's drift comes from the
 * envelope of the windows' support samples over the whole span instead.
 */
static void
heavy_queues(double T, double *qf, double *qr)
{
	(void)T;
	*qf = ls_rng_unit() < 0.02 ? 0 : 500 * US * ls_rng_unit();
	*qr = ls_rng_unit() < 0.02 ? 0 : 500 * US * ls_rng_unit();
}

START_TEST(test_track_heavy_load)
{
	struct path p = mk_path(-6.3 * MS, 83e-6);
	struct track_worst w;

	track_run(&p, 4242, 20 * MS, 60, 10, 10, heavy_queues, &w);
	/* the track: the floors the windows met one at a time, joined across
	 * it; the drift within 0.05 ppm (the least-squares slope alone is
	 * 0.26 ppm off here) */
	track_check("track_heavy_load", &w, 95, 10000, 0.05e-6);
}
END_TEST

/*
 * The two floors never in one window: the forward path is empty only in the
 * first 1.5 s of every 12 s and the reverse only 6 s later; the rest of the
 * time both directions meet 20..120 us. Every window then misses one floor
 * and is off by half the queueing it missed, so no window is clean, but
 * the track holds both floors, seconds apart, and the envelope of its
 * support samples at the known drift joins them.
 */
static void
split_floor_queues(double T, double *qf, double *qr)
{
	double ph = fmod(T, 12 * SEC);
	bool f_clean = ph < 1.5 * SEC, r_clean = ph >= 6 * SEC && ph < 7.5 * SEC;

	*qf = f_clean && ls_rng_unit() < 0.2 ? 0 : 20 * US + 100 * US * ls_rng_unit();
	*qr = r_clean && ls_rng_unit() < 0.2 ? 0 : 20 * US + 100 * US * ls_rng_unit();
}

START_TEST(test_track_split_floors)
{
	struct path p = mk_path(7.7 * MS, -61e-6);
	struct track_worst w;

	/* until each direction has met its floor in three stretches (26 s) the
	 * slope rests on one stretch of one side: honest, not yet accurate */
	track_run(&p, 909, 10 * MS, 60, 26, 10, split_floor_queues, &w);
	track_check("track_split_floors (from 26 s; sigma from 10 s)", &w, 65, 5000, 0);
}
END_TEST

/*
 * Light load, both clocks wandering 20 ns/sqrt(s) as the lab's simulated
 * ones do: joined over a minute, the windows' support samples leave a band
 * narrower than the floor by the walk's range, which must not read as
 * floors the windows missed.
 */
static void
light_queues(double T, double *qf, double *qr)
{
	(void)T;
	*qf = ls_rng_unit() < 0.3 ? 0 : 50 * US * ls_rng_unit();
	*qr = ls_rng_unit() < 0.3 ? 0 : 50 * US * ls_rng_unit();
}

/* Both clocks of p wander: 20 ns per knot (N(0,1) steps), 122 knots. */
static void
add_wander(struct path *p, double *wa, double *wb, uint64_t seed)
{
	ls_rng_seed(seed);
	for (int i = 1; i < 122; i++) {
		wa[i] = wa[i - 1] + 20 * ls_rng_normal();
		wb[i] = wb[i - 1] + 20 * ls_rng_normal();
	}
	p->a.w = wa;
	p->b.w = wb;
}

START_TEST(test_track_wander)
{
	static double wa[122], wb[122];
	struct path p = mk_path(-2.2 * MS, -40e-6);
	struct track_worst w;

	add_wander(&p, wa, wb, 31337);
	track_run(&p, 5150, 10 * MS, 60, 10, 30, light_queues, &w);
	track_check("track_wander", &w, 95, 0, 0);
	/* the walk is shared by every entry older than now: averaged as if
	 * independent, the track followed it seconds late and ended up further
	 * off than its newest window (83 against 43 ns here) */
	ck_assert_msg(w.track < 1.3 * w.win, "track %.1f ns, newest window %.1f ns", w.track,
		      w.win);
}
END_TEST

/* Stamping noise alone: every sample 0..2 us late, each direction its own. */
static void
stamp_noise(double T, double *qf, double *qr)
{
	(void)T;
	*qf = 2 * US * ls_rng_unit();
	*qr = 2 * US * ls_rng_unit();
}

/*
 * Four paths of one clock pair, one filter over their tracks
 * (ls_sync_track_fit_many): every path sees the same walk, each its own
 * stamping noise, so the filter gets the noise down from the paths' recent
 * windows together instead of each path's older ones; it must beat the
 * paths' own track fits averaged (ls_sync_combine), and with one track give
 * exactly ls_sync_track_fit.
 */
START_TEST(test_track_many)
{
	enum { NP = 4 };
	static double wa[122], wb[122];
	struct path p = mk_path(1.7 * MS, 61e-6);
	struct ls_sync_est_conf conf;
	struct ls_sync_est e[NP];
	struct ls_sync_track k[NP];
	const struct ls_sync_track *kp[NP];
	const struct ls_sync_est_conf *cp[NP];
	struct ls_sync_track_ws *ws;
	struct ls_sync_fit out;
	double b[NP], sig[NP], Tf = 0, sq_many = 0, sq_avg = 0, worst_z = 0;
	unsigned int n = 0;

	ck_assert_ptr_null(ls_sync_track_ws_create(0));
	ws = ls_sync_track_ws_create(NP);
	ck_assert_ptr_nonnull(ws);
	ls_sync_est_conf_default(&conf);
	conf.purity_tol_ns = 200;
	for (int j = 0; j < NP; j++) {
		ck_assert_int_eq(ls_sync_est_init(&e[j], &conf, 1024), 0);
		ls_sync_track_init(&k[j]);
		kp[j] = &k[j];
		cp[j] = &e[j].conf;
		b[j] = sig[j] = 0;
	}
	ck_assert_int_eq(ls_sync_track_fit_many(kp, b, sig, NP, BASE, 28, cp, NULL, &out), -EINVAL);
	ck_assert_int_eq(ls_sync_track_fit_many(kp, b, sig, NP + 1, BASE, 28, cp, ws, &out), -EINVAL);
	ck_assert_int_eq(ls_sync_track_fit_many(kp, b, sig, NP, BASE, 28, cp, ws, &out), -ENODATA);
	ck_assert(!out.ok);

	add_wander(&p, wa, wb, 4242);
	for (double T = 500 * MS; T <= 60 * SEC; T += 500 * MS) {
		struct ls_sync_fit win, fit[NP], many, avg, one;
		uint64_t now = clk_at(&p.a, T);
		double truth = path_offset(&p, T), err, z;
		int nf = 0;

		/* a pair on each path every 20 ms, the paths 5 ms apart */
		for (; Tf < T; Tf += 20 * MS)
			for (int j = 0; j < NP; j++) {
				struct ls_sync_probe a, bb;
				double qf, qr;

				stamp_noise(Tf, &qf, &qr);
				probe_at(&p, Tf + j * 5 * MS, qf, qr, &a);
				probe_at(&p, Tf + j * 5 * MS + 10 * US, qf, qr, &bb);
				ls_sync_est_add_pair(&e[j], &a, &bb);
			}
		for (int j = 0; j < NP; j++) {
			b[j] = ls_sync_track_drift(&k[j], 2500000000ULL, &conf, 28, &sig[j]);
			e[j].conf.fixed_drift = b[j];
			if (ls_sync_est_fit(&e[j], now, &win) != 0)
				break;
			ls_sync_track_add(&k[j], &win);
			if (isnan(b[j]) ||
			    ls_sync_track_fit(&k[j], now, b[j], sig[j], 28, &e[j].conf, &fit[j]) != 0)
				break;
			nf++;
		}
		if (nf < NP || T < 15 * SEC)
			continue;
		ck_assert_int_eq(ls_sync_track_fit_many(kp, b, sig, NP, now, 28, cp, ws, &many), 0);
		ck_assert(many.ok && many.t_ref == now);
		ck_assert_int_eq(ls_sync_combine(fit, NP, now, &avg), 0);
		/* one track: the same as ls_sync_track_fit */
		ck_assert_int_eq(ls_sync_track_fit_many(kp, b, sig, 1, now, 28, cp, ws, &one), 0);
		ck_assert_msg(fabs(one.offset_ns - fit[0].offset_ns) < 1e-6 &&
				      fabs(one.sigma_ns - fit[0].sigma_ns) < 1e-6,
			      "one track: %.6f/%.6f against %.6f/%.6f", one.offset_ns, one.sigma_ns,
			      fit[0].offset_ns, fit[0].sigma_ns);
		err = many.offset_ns - truth;
		z = fabs(err) / many.sigma_ns;
		ck_assert_msg(z <= 3, "T %.1f s: error %.1f ns, sigma %.1f", T / SEC, err,
			      many.sigma_ns);
		worst_z = fmax(worst_z, z);
		sq_many += err * err;
		sq_avg += (avg.offset_ns - truth) * (avg.offset_ns - truth);
		n++;
	}
	printf("track_many: %u steps, rms error one filter %.1f ns, tracks averaged %.1f ns "
	       "(worst %.2f sigma)\n", n, sqrt(sq_many / n), sqrt(sq_avg / n), worst_z);
	ck_assert_uint_ge(n, 80);
	ck_assert_msg(sq_many < sq_avg, "one filter %.1f ns, averaged %.1f ns", sqrt(sq_many / n),
		      sqrt(sq_avg / n));
	for (int j = 0; j < NP; j++) {
		ls_sync_est_free(&e[j]);
		ls_sync_track_free(&k[j]);
	}
	ls_sync_track_ws_free(ws);
}
END_TEST

/* A wrong fixed slope narrows the gap; band_ns stays the widest band. */
START_TEST(test_fit_band)
{
	struct path p = mk_path(-4.1 * MS, -37e-6);
	struct ls_sync_est_conf conf;
	struct ls_sync_est e1, e2;
	struct ls_sync_fit free_fit, fixed;

	ls_sync_est_conf_default(&conf);
	ls_rng_seed(77);
	ck_assert_int_eq(fit_path(&p, &conf, 30 * SEC, NOISE_LIGHT, &e1, &free_fit), 0);
	ck_assert(free_fit.band_ns == free_fit.half_gap_ns);
	conf.fixed_drift = path_drift(&p) + 5e-6;
	ls_rng_seed(77);
	ck_assert_int_eq(fit_path(&p, &conf, 30 * SEC, NOISE_LIGHT, &e2, &fixed), 0);
	printf("fit_band: free half gap %.1f, 5 ppm off: half gap %.1f, band %.1f ns\n",
	       free_fit.half_gap_ns, fixed.half_gap_ns, fixed.band_ns);
	ck_assert_msg(fixed.half_gap_ns < free_fit.half_gap_ns - 1000, "%.1f", fixed.half_gap_ns);
	ck_assert_msg(fabs(fixed.band_ns - free_fit.half_gap_ns) < 1e-6, "%.3f", fixed.band_ns);
	ls_sync_est_free(&e1);
	ls_sync_est_free(&e2);
}
END_TEST

/* Bookkeeping: empty, not-ok fits ignored, ring wraps, ageing picks. */
START_TEST(test_track_basics)
{
	struct ls_sync_track k;
	struct ls_sync_fit f = {.ok = true, .sigma_ns = 20, .half_gap_ns = 10000, .band_ns = 10000},
			   out;
	double sig;

	ls_sync_track_init(&k);
	ck_assert_int_eq(ls_sync_track_fit(&k, BASE, 0, 0, 10, NULL, &out), -ENODATA);
	ck_assert(!out.ok);
	f.ok = false;
	ls_sync_track_add(&k, &f);
	ck_assert_uint_eq(k.n, 0);
	f.ok = true;
	/* 2 LEN + 20 windows 0.5 s apart on a line of 2 ppm; only LS_SYNC_TRACK_LEN stay */
	for (int i = 0; i < 2 * LS_SYNC_TRACK_LEN + 20; i++) {
		f.t_ref = BASE + (uint64_t)i * 500000000ULL;
		f.offset_ns = 777 + 2e-6 * (double)(f.t_ref - BASE);
		ls_sync_track_add(&k, &f);
	}
	ck_assert_uint_eq(k.n, LS_SYNC_TRACK_LEN);
	ck_assert(fabs(ls_sync_track_drift(&k, 4000000000ULL, NULL, 10, &sig) - 2e-6) < 1e-12);
	/* the held windows span (LEN - 1) x 0.5 s: not enough for a longer span */
	ck_assert(isnan(ls_sync_track_drift(&k, LS_SYNC_TRACK_LEN * 500000000ULL, NULL, 10, &sig)) &&
		  isnan(sig));
	ck_assert_int_eq(ls_sync_track_fit(&k, f.t_ref + 100000000ULL, 2e-6, 0, 10, NULL, &out), 0);
	ck_assert_msg(fabs(out.offset_ns - (f.offset_ns + 200)) < 1e-6, "%.6f", out.offset_ns);
	/* the newest window is the least aged: sigma = hypot(20, 10 sqrt(0.1)) */
	ck_assert_msg(fabs(out.sigma_ns - sqrt(400 + 10)) < 1e-9, "%.9f", out.sigma_ns);
	/* a newer window 5 us off whose half gap is 5 us wider than the rest
	 * counts for next to nothing beside the clean ones (the filter gives
	 * it a weight of its variance's 1 / 60,000th: 0.03 ns) */
	f.t_ref += 500000000ULL;
	f.offset_ns = 777 + 2e-6 * (double)(f.t_ref - BASE) - 5000;
	f.band_ns = 15000;
	ls_sync_track_add(&k, &f);
	ck_assert_int_eq(ls_sync_track_fit(&k, f.t_ref, 2e-6, 0, 10, NULL, &out), 0);
	ck_assert_msg(fabs(out.offset_ns - (f.offset_ns + 5000)) < 0.1, "%.6f", out.offset_ns);
	ck_assert(out.half_gap_ns == 10000);
	ls_sync_track_free(&k);
}
END_TEST

/* Windows fitted twice as often as their length / 4 (overlap 2) weigh
 * half as much each: the newest of windows alternating +-100 ns pulls the
 * result less than at overlap 1 (the same windows said to be half as long). */
START_TEST(test_track_overlap)
{
	struct ls_sync_fit f = {.ok = true, .sigma_ns = 20, .half_gap_ns = 10000, .band_ns = 10000},
			   out[2];
	static const uint64_t win_ns[2] = {1000000000ULL, 2000000000ULL};
	struct ls_sync_est_conf conf;
	struct ls_sync_track k;

	ls_sync_track_init(&k);
	for (int i = 0; i < 40; i++) {
		f.t_ref = BASE + (uint64_t)i * 250000000ULL;
		f.offset_ns = 777 + ((i & 1) ? 100 : -100);
		ls_sync_track_add(&k, &f);
	}
	for (int c = 0; c < 2; c++) {
		ls_sync_est_conf_default(&conf);
		conf.window_ns = win_ns[c];
		ck_assert_int_eq(ls_sync_track_fit(&k, f.t_ref, 0, 0, 10, &conf, &out[c]), 0);
	}
	/* the newest window is +100: both lean to it, overlap 2 less so */
	ck_assert_msg(out[0].offset_ns > 777 && out[1].offset_ns > 777 &&
		      out[1].offset_ns < out[0].offset_ns - 5,
		      "overlap 1 %.3f, overlap 2 %.3f", out[0].offset_ns, out[1].offset_ns);
	ls_sync_track_free(&k);
}
END_TEST

/* ---- 4c. a Pingmesh path: its window, and memory per path ------------ */

/*
 * As feed_queued, each gap jittered by +-jitter (a fraction, as
 * probe.jitter_pct), and each side of a pair's second member queued 1 to
 * 21 us more with probability impure, so the pair is impure that side.
 * With both 0 it draws what feed_queued draws.
 */
static void
feed_pm(struct ls_sync_est *e, const struct path *p, double *Tf, double T, double gap_ns,
	double jitter, double impure)
{
	while (*Tf < T) {
		struct ls_sync_probe a, b;
		double qf, qr, xf = 0, xr = 0;

		light_queues(*Tf, &qf, &qr); /* 30% meet no queue */
		if (impure > 0 && ls_rng_unit() < impure)
			xf = 1 * US + 20 * US * ls_rng_unit();
		if (impure > 0 && ls_rng_unit() < impure)
			xr = 1 * US + 20 * US * ls_rng_unit();
		probe_at(p, *Tf, qf, qr, &a);
		probe_at(p, *Tf + 10 * US, qf + xf, qr + xr, &b);
		ls_sync_est_add_pair(e, &a, &b);
		*Tf += jitter > 0 ? gap_ns * (1 + jitter * (2 * ls_rng_unit() - 1)) : gap_ns;
	}
}

/* What path_run saw from settle on. */
struct path_seen {
	unsigned int windows; /* windows the track took, all told */
	unsigned int steps;   /* steps from settle on */
	unsigned int not_ok;  /* ... whose estimate was not ok */
	double worst_z;       /* ... the worst |error| / sigma of the others */
	double worst_ns;      /* ... the worst |error| from 60 s on */
	unsigned int late, late_over_20; /* steps from 60 s on, of them > 20 ns off */
};

/*
 * One path's clock sync as lockstepd's path_fit runs it, for secs: pairs
 * every gap_ns (feed_pm's jitter and impure), 4x as often for the first
 * 4 s (acquisition), a step every 250 ms (the window fitted at the surer
 * of the track's and the floor samples' drift, into the track, the
 * estimate the track's fit, or the window's before there is a drift).
 * window_ns is the estimator's window, cap its ring (what sync.c's
 * peer_window gives such a path). Returns the heap and struct bytes of the
 * estimator (left in e) and the track at the end.
 */
static size_t
path_run(double gap_ns, uint32_t cap, uint64_t window_ns, double jitter, double impure,
	 double secs, double settle, struct ls_sync_est *e, struct path_seen *seen)
{
	struct path p = {.a = {.c = 0}, .b = {.c = 3 * MS, .r = 20e-6}, .df = 20 * US,
			 .dr = 20 * US, .turn = 2 * US};
	struct ls_sync_est_conf conf;
	struct ls_sync_track k;
	double T, Tf = 0;
	size_t bytes;

	ls_rng_seed(28);
	ls_sync_est_conf_default(&conf);
	conf.window_ns = window_ns;
	ck_assert_int_eq(ls_sync_est_init(e, &conf, cap), 0);
	ls_sync_track_init(&k);
	memset(seen, 0, sizeof(*seen));
	for (T = 250 * MS; T <= secs * SEC; T += 250 * MS) {
		uint64_t now = clk_at(&p.a, T);
		struct ls_sync_fit win, fit;
		double sig, fs, b = ls_sync_track_drift(&k, 2500000000ULL, &e->conf, 10, &sig);
		double fb = ls_sync_est_floor_drift(e, now, 10, &fs);
		bool ok;

		feed_pm(e, &p, &Tf, fmin(T, 4 * SEC), gap_ns / 4, jitter, impure);
		feed_pm(e, &p, &Tf, T, gap_ns, jitter, impure);
		if (!isnan(fb) && (isnan(b) || fs < sig)) {
			b = fb;
			sig = fs;
		}
		e->conf.fixed_drift = b;
		ok = ls_sync_est_fit(e, now, &win) == 0;
		if (ok) {
			ls_sync_track_add(&k, &win);
			seen->windows++;
			fit = win;
			if (!isnan(b))
				ok = ls_sync_track_fit(&k, now, b, sig, 10, &e->conf, &fit) == 0;
		}
		if (T < settle * SEC)
			continue;
		seen->steps++;
		if (!ok)
			seen->not_ok++;
		else {
			double err = fabs(fit.offset_ns - path_offset(&p, T));

			seen->worst_z = fmax(seen->worst_z, err / fit.sigma_ns);
			if (T >= 60 * SEC) {
				seen->worst_ns = fmax(seen->worst_ns, err);
				seen->late++;
				seen->late_over_20 += err > 20;
			}
		}
	}
	bytes = sizeof(*e) + ls_sync_est_bytes(e) + sizeof(k) + ls_sync_track_bytes(&k);
	ls_sync_track_free(&k);
	return bytes;
}

/*
 * Issue 28 C, Pingmesh rates: a pair a second a path. With the default 2 s
 * window no window held min_points pure samples a side once acquisition
 * ended, and the path's estimate went ~2 s later; the window now follows
 * the rate (ls_sync_est_window_for: 12 s). Four minutes after acquisition
 * with +-10% jitter and a fifth of the pairs impure each way, every step's
 * estimate is ok and its sigma covers its error. The first ~40 s are
 * microseconds off (29.8 us at 11.5 s, sigma 35 us: a drift 4 ppm off
 * from a few floor samples a side); from 60 s on within 20 ns but for
 * the few windows that met no floor (282 ns, sigma 21 us, at 239 s).
 * Light queues (30% of samples meet none), no wander.
 */
START_TEST(test_sync_pingmesh_window)
{
	struct ls_sync_est_conf conf;
	struct ls_sync_est e;
	struct path_seen old, now;
	uint64_t w;

	ls_sync_est_conf_default(&conf);
	w = ls_sync_est_window_for(&conf, 1000000000ULL);
	ck_assert_uint_eq(w, 12000000000ULL);
	ck_assert_uint_eq(ls_sync_est_window_for(&conf, 10000000ULL), conf.window_ns);
	path_run(1 * SEC, 32, conf.window_ns, 0.1, 0.2, 60, 8, &e, &old);
	ls_sync_est_free(&e);
	path_run(1 * SEC, 64, w, 0.1, 0.2, 244, 4, &e, &now);
	ls_sync_est_free(&e);
	printf("pingmesh window: 2 s: %u of %u steps not ok; %.0f s: %u of %u, worst |error| "
	       "%.2f sigma; from 60 s on %u of %u steps over 20 ns, worst %.1f ns\n", old.not_ok,
	       old.steps, w / 1e9, now.not_ok, now.steps, now.worst_z, now.late_over_20, now.late,
	       now.worst_ns);
	ck_assert_uint_eq(old.not_ok, old.steps); /* the bug this pins */
	ck_assert_uint_ge(now.steps, 960);
	ck_assert_uint_eq(now.not_ok, 0);
	ck_assert_msg(now.worst_z < 3, "worst %.2f sigma", now.worst_z);
	ck_assert_uint_le(now.late_over_20 * 100, now.late); /* <= 1% */
	ck_assert_msg(now.worst_ns < 1000, "worst %.1f ns", now.worst_ns);
}
END_TEST

/* probe.set: a ring resized keeps its newest probes, oldest first, and
 * takes the new window; a bad size changes nothing. */
START_TEST(test_est_resize)
{
	struct ls_sync_est e;
	struct ls_sync_probe p = {0};

	ck_assert_int_eq(ls_sync_est_init(&e, NULL, 16), 0);
	for (uint64_t i = 1; i <= 20; i++) {
		p.t1 = i;
		ls_sync_est_add_probe(&e, &p);
	}
	ck_assert_int_eq(ls_sync_est_resize(&e, 12000000000ULL, 40), 0);
	ck_assert_uint_eq(e.cap, 64);
	ck_assert_uint_eq(e.n, 16);
	ck_assert_uint_eq(e.conf.window_ns, 12000000000ULL);
	for (uint32_t i = 0; i < e.n; i++)
		ck_assert_uint_eq(e.ring[(e.head - e.n + i) & (e.cap - 1)].t1, 5 + i);
	ck_assert_int_eq(ls_sync_est_resize(&e, 2000000000ULL, 8), 0);
	ck_assert_uint_eq(e.n, 8);
	ck_assert_uint_eq(e.ring[(e.head - 1) & (e.cap - 1)].t1, 20);
	ck_assert_uint_eq(e.ring[(e.head - e.n) & (e.cap - 1)].t1, 13);
	p.t1 = 21;
	ls_sync_est_add_probe(&e, &p);
	ck_assert_uint_eq(e.ring[(e.head - e.n) & (e.cap - 1)].t1, 14);
	ck_assert_int_eq(ls_sync_est_resize(&e, 0, 8), -EINVAL);
	ck_assert_uint_eq(e.conf.window_ns, 2000000000ULL);
	ls_sync_est_free(&e);
}
END_TEST

/*
 * Issue 28 C: 10,000 peers x 8 paths at <= 8 KiB a peer-path all told, of
 * which the rest of a path takes ~6.5 KiB. At a pair a second a path's
 * sync state was 22,528 B (a 64-probe ring, 16 floor chunks of 24 vertices
 * a direction, a 120-window track of 65 B each, all held from peer.add).
 * With the 2 s window (3,304 B) the track held only acquisition's windows:
 * nothing fitted after it. With the window following the rate (12 s) every
 * step fits and the track fills: the ring is the 64 probes a 12 s window
 * needs (lsd_peer_probes_in), the chunks hold 2 vertices a direction.
 * Measured 8,200 B (<= 8.25 KiB): ring 2,112, chunks 1,024, a full track
 * 4,800 (120 windows), the two structs 264. A sync path, not a peer-path:
 * with sync.paths 1 of 8 paths, ~1 KiB a peer-path.
 */
START_TEST(test_sync_bytes_pingmesh)
{
	struct ls_sync_est e;
	struct ls_sync_est_conf conf;
	struct path_seen seen;
	size_t bytes;

	ls_sync_est_conf_default(&conf);
	bytes = path_run(1 * SEC, 64, ls_sync_est_window_for(&conf, 1000000000ULL), 0.1, 0.2, 120,
			 4, &e, &seen);
	printf("sync bytes a path at a pair a second: %zu (ring %u probes, %u floor vertices a "
	       "chunk, %u windows)\n", bytes, e.cap, e.verts, seen.windows);
	ck_assert_uint_ge(seen.windows, LS_SYNC_TRACK_LEN);
	ck_assert_uint_le(bytes, 8448);
	ls_sync_est_free(&e);
}
END_TEST

/* The lab's rate, a pair every 10 ms: the ring's 1,024 probes, the chunks
 * at their full LS_SYNC_FLOOR_VERTS (the floor drift as it always was), a
 * full track. Measured 51,144 B (was 54,208: the track's 65 B a window). */
START_TEST(test_sync_bytes_lab)
{
	struct ls_sync_est e;
	struct path_seen seen;
	size_t bytes = path_run(10 * MS, 1024, 2000000000ULL, 0, 0, 60, 60, &e, &seen);

	printf("sync bytes a path at a pair every 10 ms: %zu (ring %u probes, %u floor vertices "
	       "a chunk, %u windows)\n", bytes, e.cap, e.verts, seen.windows);
	ck_assert_uint_eq(e.verts, LS_SYNC_FLOOR_VERTS);
	ck_assert_uint_ge(seen.windows, LS_SYNC_TRACK_LEN);
	ck_assert_uint_le(bytes, 52 * 1024);
	ls_sync_est_free(&e);
}
END_TEST

void
sync_est_tests(TCase *tc)
{
	tcase_add_test(tc, test_combine);
	tcase_add_test(tc, test_floor_drift);
	tcase_add_test(tc, test_floor_chunks_grow);
	tcase_add_test(tc, test_fit_band);
	tcase_add_test(tc, test_track_one_sided);
	tcase_add_test(tc, test_track_heavy_load);
	tcase_add_test(tc, test_track_split_floors);
	tcase_add_test(tc, test_track_wander);
	tcase_add_test(tc, test_track_many);
	tcase_add_test(tc, test_track_basics);
	tcase_add_test(tc, test_track_overlap);
	tcase_add_test(tc, test_est_resize);
	tcase_add_test(tc, test_sync_pingmesh_window);
	tcase_add_test(tc, test_sync_bytes_pingmesh);
	tcase_add_test(tc, test_sync_bytes_lab);
}
