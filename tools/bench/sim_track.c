/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One path's per-path track (lib/sync) against a simulated pair of clocks:
 * how far its offset is from the truth, next to the newest window's alone.
 *
 * Why a simulation next to the lab: in the lab, 6 daemons, the emulator
 * and the bench share two cores, one run takes a minute, and the network
 * step mixes every path's error with the others'. Here one path is fed as
 * lockstepd feeds it (a coded pair every 20 ms, a 2 s window fitted at the
 * track's drift every 500 ms, the track's fit after it), by clocks that
 * are the lab's simulated clocks (ls_simclock: a random walk with knots
 * every 10 ms, straight in between), with one-sided stamping delay on each
 * transmit (uniform 0..JIT ns, as a software transmit stamp taken before
 * the frame leaves) and, on a fraction LOAD of probes, queueing of
 * 0..200 us per direction. 120 s of it runs in a tenth of a second, so a
 * change to the track can be judged over many seeds.
 *
 *     build/tools/bench/sim_track [WANDER_NS [SEEDS [SECS]]]
 *     LOAD=0.5 JIT=2000 build/tools/bench/sim_track 20 8 120
 *
 * WANDER_NS per clock per sqrt(s) (default 20, as the lab); the track is
 * told the wander between the two, WANDER_NS * sqrt(2). Prints the rms
 * error of the track and of the newest window from 15 s on, the track's
 * mean sigma, and how often the error exceeded 3 sigma.
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

static void
feed_pair(struct ls_sync_est *e, double t)
{
	struct ls_sync_probe p[2];
	double qf = queue(), qr = queue();

	for (int m = 0; m < 2; m++) {
		double ts = t + m * 10e3;
		double tb = ts + jit_ns * runit() + 5000 + qf, tt = tb + 3000;
		double tr = tt + jit_ns * runit() + 5000 + qr;

		p[m] = (struct ls_sync_probe){stamp(&clk_a, ts), stamp(&clk_b, tb),
					      stamp(&clk_b, tt), stamp(&clk_a, tr)};
	}
	ls_sync_est_add_pair(e, &p[0], &p[1]);
}

int
main(int argc, char **argv)
{
	double wander = argc > 1 ? atof(argv[1]) : 20;
	int seeds = argc > 2 ? atoi(argv[2]) : 8;
	double secs = argc > 3 ? atof(argv[3]) : 120;
	double between = wander * sqrt(2.0), sq_fit = 0, sq_win = 0, sum_sig = 0;
	long n = 0, over = 0;

	if (getenv("JIT") != NULL)
		jit_ns = atof(getenv("JIT"));
	if (getenv("LOAD") != NULL)
		load = atof(getenv("LOAD"));
	if (!(secs > 15) || seeds < 1) {
		fprintf(stderr, "sim_track: SECS over 15, SEEDS at least 1\n");
		return 2;
	}
	for (int sd = 0; sd < seeds; sd++) {
		struct ls_sync_est_conf conf;
		struct ls_sync_est e;
		struct ls_sync_track k;
		double tp = 1e6;

		struct ls_conf_simclock ca = {.wander_ns = wander, .seed = 2000 + 2 * (uint64_t)sd};
		struct ls_conf_simclock cb = {.offset_ns = 3100000, .drift_ppm = 37,
					      .wander_ns = wander, .seed = 2001 + 2 * (uint64_t)sd};

		rng = 1000 + (uint64_t)sd;
		ls_simclock_init(&clk_a, &ca, BASE);
		ls_simclock_init(&clk_b, &cb, BASE);
		ls_sync_est_conf_default(&conf);
		conf.purity_tol_ns = 1500;
		conf.outlier_ns = 0;
		if (ls_sync_est_init(&e, &conf, 1024) != 0)
			return 1;
		ls_sync_track_reset(&k);
		for (double t = STEP_NS; t <= secs * 1e9; t += STEP_NS) {
			struct ls_sync_fit win, fit;
			uint64_t now = stamp(&clk_a, t);
			double sig, b, truth = (double)(int64_t)(stamp(&clk_b, t) - now);

			for (; tp < t; tp += PAIR_EVERY_NS)
				feed_pair(&e, tp);
			/* as lockstepd's path_fit: the track's drift once it spans 2.5 s */
			b = ls_sync_track_drift(&k, 2500000000ULL, &e.conf, between, &sig);
			e.conf.fixed_drift = b;
			if (ls_sync_est_fit(&e, now, &win) != 0)
				continue;
			ls_sync_track_add(&k, &win);
			if (isnan(b) ||
			    ls_sync_track_fit(&k, now, b, sig, between, &e.conf, &fit) != 0 ||
			    t < 15e9)
				continue;
			sq_fit += (fit.offset_ns - truth) * (fit.offset_ns - truth);
			sq_win += (win.offset_ns - truth) * (win.offset_ns - truth);
			sum_sig += fit.sigma_ns;
			over += fabs(fit.offset_ns - truth) > 3 * fit.sigma_ns;
			n++;
		}
		ls_sync_est_free(&e);
	}
	if (n == 0)
		return 1;
	printf("wander %.0f ns/sqrt(s) per clock, stamp jitter 0..%.0f ns, load %.2f, %d seeds x "
	       "%.0f s: rms error track %.1f ns, newest window %.1f ns; track sigma mean %.1f ns, "
	       "error > 3 sigma in %.1f%% of %ld steps\n",
	       wander, jit_ns, load, seeds, secs, sqrt(sq_fit / n), sqrt(sq_win / n), sum_sig / n,
	       100.0 * over / n, n);
	return 0;
}
