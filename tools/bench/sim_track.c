/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One clock pair's paths through lib/sync against simulated clocks: how far
 * the edge's offset is from the truth, next to one path's track and newest
 * window alone.
 *
 * Why a simulation next to the lab: in the lab, 6 daemons, the emulator
 * and the bench share two cores, one run takes a minute, and the network
 * step mixes every edge's error with the others'. Here each path is fed as
 * lockstepd feeds it (a coded pair every 20 ms, a 2 s window fitted at the
 * track's drift every 500 ms, the track's fit after it) and the edge is
 * fitted as lockstepd fits it (one filter over all paths' tracks), by
 * clocks that are the lab's simulated clocks (ls_simclock: a random walk
 * with knots every 10 ms, straight in between), with one-sided stamping
 * delay on each transmit (uniform 0..JIT ns, as a software transmit stamp
 * taken before the frame leaves) and, on a fraction LOAD of probes,
 * queueing of 0..200 us per direction (independent per path: in the lab,
 * paths over one spine share it). 120 s of it runs in a second, so a
 * change to the track can be judged over many seeds.
 *
 *     build/tools/bench/sim_track [WANDER_NS [SEEDS [SECS [PATHS]]]]
 *     LOAD=0.5 JIT=2000 build/tools/bench/sim_track 20 8 120 4
 *
 * WANDER_NS per clock per sqrt(s) (default 20, as the lab); the tracks are
 * told the wander between the two, WANDER_NS * sqrt(2). Scores from 15 s
 * on: rms error, mean sigma, and how often the error exceeded 3 sigma.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ls_clock.h"
#include "ls_fabric.h"
#include "ls_sync.h"

#define BASE LS_SIM_EPOCH_NS
#define PAIR_EVERY_NS 20e6
#define STEP_NS 500e6
#define MAX_PATHS 8

static uint64_t rng;
static struct ls_simclock clk_a, clk_b; /* the lab's simulated clocks */
static double jit_ns = 2000, load;

static double
runit(void)
{
	return (double)(ls_fab_rand(&rng) >> 11) * 0x1.0p-53;
}

/* A clock's reading at true time t ns after the start. */
static uint64_t
stamp(struct ls_simclock *c, double t)
{
	return ls_simclock_local(c, BASE + (uint64_t)llround(t));
}

static double
queue(void)
{
	return runit() < load ? 200e3 * runit() : 0;
}

/* One coded pair at true time t over a path whose one-way floor is d ns. */
static void
feed_pair(struct ls_sync_est *e, double t, double d)
{
	struct ls_sync_probe p[2];
	double qf = queue(), qr = queue();

	for (int m = 0; m < 2; m++) {
		double ts = t + m * 10e3;
		double tb = ts + jit_ns * runit() + d + qf, tt = tb + 3000;
		double tr = tt + jit_ns * runit() + d + qr;

		p[m] = (struct ls_sync_probe){stamp(&clk_a, ts), stamp(&clk_b, tb),
					      stamp(&clk_b, tt), stamp(&clk_a, tr)};
	}
	ls_sync_est_add_pair(e, &p[0], &p[1]);
}

/* What is scored: one path's newest window and its track, and the paths
 * together, combined as lockstepd does (one filter over every path's
 * track: ls_sync_track_fit_many) and as it did before the tenth session
 * (each path's track fit, averaged: ls_sync_combine). */
enum { S_WIN, S_TRACK, S_MANY, S_AVG, S_N };
static const char *const score_name[S_N] = {"newest window", "path track", "paths, one filter",
					    "paths' tracks averaged"};

struct score {
	double sq, sig;
	long over;
};

static void
score(struct score *sc, double err, double sigma)
{
	sc->sq += err * err;
	sc->sig += sigma;
	sc->over += fabs(err) > 3 * sigma;
}

int
main(int argc, char **argv)
{
	double wander = argc > 1 ? atof(argv[1]) : 20;
	int seeds = argc > 2 ? atoi(argv[2]) : 8;
	double secs = argc > 3 ? atof(argv[3]) : 120;
	int npaths = argc > 4 ? atoi(argv[4]) : 4;
	double between = wander * sqrt(2.0);
	struct score sc[S_N] = {{0}};
	struct ls_sync_track_ws *ws;
	struct ls_sync_est e[MAX_PATHS];
	struct ls_sync_track k[MAX_PATHS];
	long n = 0;

	if (getenv("JIT") != NULL)
		jit_ns = atof(getenv("JIT"));
	if (getenv("LOAD") != NULL)
		load = atof(getenv("LOAD"));
	if (!(secs > 15) || seeds < 1 || npaths < 1 || npaths > MAX_PATHS) {
		fprintf(stderr, "sim_track: SECS over 15, SEEDS at least 1, PATHS 1 to %d\n",
			MAX_PATHS);
		return 2;
	}
	ws = ls_sync_track_ws_create(MAX_PATHS);
	if (ws == NULL)
		return 1;
	for (int sd = 0; sd < seeds; sd++) {
		struct ls_conf_simclock ca = {.wander_ns = wander, .seed = 2000 + 2 * (uint64_t)sd};
		struct ls_conf_simclock cb = {.offset_ns = 3100000, .drift_ppm = 37,
					      .wander_ns = wander, .seed = 2001 + 2 * (uint64_t)sd};
		double tp = 1e6;

		rng = 1000 + (uint64_t)sd;
		ls_simclock_init(&clk_a, &ca, BASE);
		ls_simclock_init(&clk_b, &cb, BASE);
		for (int j = 0; j < npaths; j++) {
			struct ls_sync_est_conf conf;

			ls_sync_est_conf_default(&conf);
			conf.purity_tol_ns = 1500;
			conf.outlier_ns = 0;
			if (ls_sync_est_init(&e[j], &conf, 1024) != 0)
				return 1;
			ls_sync_track_reset(&k[j]);
		}
		for (double t = STEP_NS; t <= secs * 1e9; t += STEP_NS) {
			struct ls_sync_fit win[MAX_PATHS], fit[MAX_PATHS], many, avg;
			const struct ls_sync_track *kp[MAX_PATHS];
			const struct ls_sync_est_conf *cp[MAX_PATHS];
			double b[MAX_PATHS], sig[MAX_PATHS];
			uint64_t now = stamp(&clk_a, t);
			double truth = (double)(int64_t)(stamp(&clk_b, t) - now);
			int nf = 0;

			/* each path's pairs every 20 ms, the paths staggered; path j's
			 * floor 5 us + 200 ns j (links of other lengths) */
			for (; tp < t; tp += PAIR_EVERY_NS)
				for (int j = 0; j < npaths; j++)
					feed_pair(&e[j], tp + j * PAIR_EVERY_NS / npaths, 5000 + 200.0 * j);
			for (int j = 0; j < npaths; j++) {
				/* as lockstepd's path_fit: the track's drift once it
				 * spans 2.5 s */
				b[j] = ls_sync_track_drift(&k[j], 2500000000ULL, &e[j].conf, between,
							   &sig[j]);
				e[j].conf.fixed_drift = b[j];
				kp[j] = &k[j];
				cp[j] = &e[j].conf;
				if (ls_sync_est_fit(&e[j], now, &win[j]) != 0)
					break;
				ls_sync_track_add(&k[j], &win[j]);
				if (isnan(b[j]) || ls_sync_track_fit(&k[j], now, b[j], sig[j], between,
								     &e[j].conf, &fit[j]) != 0)
					break;
				nf++;
			}
			if (nf < npaths || t < 15e9)
				continue;
			if (ls_sync_track_fit_many(kp, b, sig, npaths, now, between, cp, ws, &many) != 0 ||
			    ls_sync_combine(fit, npaths, now, &avg) != 0)
				continue;
			score(&sc[S_WIN], win[0].offset_ns - truth, win[0].sigma_ns);
			score(&sc[S_TRACK], fit[0].offset_ns - truth, fit[0].sigma_ns);
			score(&sc[S_MANY], many.offset_ns - truth, many.sigma_ns);
			score(&sc[S_AVG], avg.offset_ns - truth, avg.sigma_ns);
			n++;
		}
		for (int j = 0; j < npaths; j++)
			ls_sync_est_free(&e[j]);
	}
	ls_sync_track_ws_free(ws);
	if (n == 0)
		return 1;
	printf("wander %.0f ns/sqrt(s) per clock, stamp jitter 0..%.0f ns, load %.2f, %d paths, "
	       "%d seeds x %.0f s, %ld steps from 15 s on:\n",
	       wander, jit_ns, load, npaths, seeds, secs, n);
	for (int i = 0; i < S_N; i++)
		printf("  %-24s rms error %6.1f ns, mean sigma %6.1f ns, error > 3 sigma %.1f%%\n",
		       score_name[i], sqrt(sc[i].sq / n), sc[i].sig / n, 100.0 * sc[i].over / n);
	return 0;
}
