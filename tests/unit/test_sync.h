/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lib/sync suite's files share: the simulated truth (clocks,
 * paths, probes walked through them, queueing noise) and the functions
 * through which each file hands its tests to sync_suite() in test_sync.c.
 * The suite is split the way lib/sync is: test_sync_fit.c (purity, the
 * envelope fit, baselines), test_sync_est.c (combining paths, floor drift,
 * the per-path track), test_sync_net.c (the network step), test_sync_wire.c
 * (wire form, reading fleet time), test_sync_bound.c (the bound from the
 * walk observed); test_sync.c keeps the day-long run.
 */
#ifndef TEST_SYNC_H
#define TEST_SYNC_H

#include <check.h>
#include <math.h>
#include <stdint.h>

#include "ls_sync.h"
#include "ls_test.h"

#define BASE 1700000000000000000ULL
#define MS 1e6
#define US 1e3
#define SEC 1e9

/* Uniform in [-a, a). */
static inline double
rng_sym(double a)
{
	return a * (2.0 * ls_rng_unit() - 1.0);
}

/* ---- simulated clocks and probes ------------------------------------- */

struct clk {
	double c; /* offset, ns */
	double r; /* rate error (1e-6 = 1 ppm) */
	const double *w; /* wander: a random walk's value at every whole second
			  * (straight in between, as the simulated clock), or NULL */
};

static inline double
clk_wander(const struct clk *k, double T)
{
	double s = fmax(T / SEC, 0);
	long i = (long)s;

	if (k->w == NULL)
		return 0;
	return k->w[i] + (k->w[i + 1] - k->w[i]) * (s - (double)i);
}

static inline uint64_t
clk_at(const struct clk *k, double T)
{
	return BASE + (uint64_t)(int64_t)llround(k->c + T + k->r * T + clk_wander(k, T));
}

/* A measured by A = a towards B = b: floors and turnaround in true ns. */
struct path {
	struct clk a, b;
	double df, dr, turn;
};

/* Edge truth at true time T (on A's clock): o = local_B - local_A. */
static inline double
path_offset(const struct path *p, double T)
{
	return (p->b.c - p->a.c) + (p->b.r - p->a.r) * T + clk_wander(&p->b, T) -
	       clk_wander(&p->a, T);
}

static inline double
path_drift(const struct path *p)
{
	return (p->b.r - p->a.r) / (1.0 + p->a.r);
}

static inline void
probe_at(const struct path *p, double Ts, double qf, double qr, struct ls_sync_probe *pr)
{
	double Tb = Ts + p->df + qf;

	pr->t1 = clk_at(&p->a, Ts);
	pr->t2 = clk_at(&p->b, Tb);
	pr->t3 = clk_at(&p->b, Tb + p->turn);
	pr->t4 = clk_at(&p->a, Tb + p->turn + p->dr + qr);
}

enum noise {
	NOISE_HEAVY,    /* 10% exactly 0, the rest uniform 0..500 us */
	NOISE_HEAVY20,  /* uniform 0..20 ns always, plus 0..500 us on 90% */
	NOISE_FWD_HEAVY, /* forward 0..100 us, reverse 0..10 us, 5% zero each */
	NOISE_LIGHT,    /* 20% exactly 0, the rest uniform 0..200 us */
};

static inline void
draw_noise(enum noise nz, double *qf, double *qr)
{
	switch (nz) {
	case NOISE_HEAVY:
		*qf = ls_rng_unit() < 0.1 ? 0 : 500 * US * ls_rng_unit();
		*qr = ls_rng_unit() < 0.1 ? 0 : 500 * US * ls_rng_unit();
		break;
	case NOISE_HEAVY20:
		*qf = 20 * ls_rng_unit() + (ls_rng_unit() < 0.1 ? 0 : 500 * US * ls_rng_unit());
		*qr = 20 * ls_rng_unit() + (ls_rng_unit() < 0.1 ? 0 : 500 * US * ls_rng_unit());
		break;
	case NOISE_FWD_HEAVY:
		*qf = ls_rng_unit() < 0.05 ? 0 : 100 * US * ls_rng_unit();
		*qr = ls_rng_unit() < 0.05 ? 0 : 10 * US * ls_rng_unit();
		break;
	case NOISE_LIGHT:
		*qf = ls_rng_unit() < 0.2 ? 0 : 200 * US * ls_rng_unit();
		*qr = ls_rng_unit() < 0.2 ? 0 : 200 * US * ls_rng_unit();
		break;
	}
}

/*
 * Offer coded pairs every `every` ns of true time in [T0, T1). Both members
 * of a pure pair meet the same queues; one pair in ten has extra queueing on
 * the second member forward, one in ten reverse (so it is impure that way).
 */
static inline void
feed_pairs(struct ls_sync_est *e, const struct path *p, double T0, double T1, double every,
	   enum noise nz)
{
	double T;

	for (T = T0; T < T1; T += every) {
		struct ls_sync_probe a, b;
		double qf = 0, qr = 0, xf = 0, xr = 0, u = ls_rng_unit();

		draw_noise(nz, &qf, &qr);
		if (u < 0.1)
			xf = 5 * US;
		else if (u < 0.2)
			xr = 5 * US;
		probe_at(p, T, qf, qr, &a);
		probe_at(p, T + 10 * US, qf + xf, qr + xr, &b);
		ls_sync_est_add_pair(e, &a, &b);
	}
}

static inline struct path
mk_path(double offset, double drift)
{
	struct path p = {
		.a = {.c = 1234.0, .r = 0},
		.b = {.c = 1234.0 + offset, .r = drift},
		.df = 20 * US,
		.dr = 20 * US,
		.turn = 3 * US,
	};
	return p;
}

/* A fresh estimator fed 2 s of pairs ending at true time Tend, and its fit. */
static inline int
fit_path(const struct path *p, const struct ls_sync_est_conf *conf, double Tend, enum noise nz,
	 struct ls_sync_est *e, struct ls_sync_fit *f)
{
	ck_assert_int_eq(ls_sync_est_init(e, conf, 1024), 0);
	feed_pairs(e, p, Tend - 2 * SEC + 5 * MS, Tend, 10 * MS, nz);
	return ls_sync_est_fit(e, clk_at(&p->a, Tend), f);
}

/* Each file adds its tests to the tcase sync_suite() gives it. */
void sync_fit_tests(TCase *tc);
void sync_est_tests(TCase *tc);
void sync_net_tests(TCase *tc);
void sync_wire_tests(TCase *tc);
void sync_bound_tests(TCase *tc);

#endif /* TEST_SYNC_H */
