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
 *
 * START=1 is the start-up under the lab's load instead, where the fleet is
 * furthest off (docs/benchmarks.md):
 *
 *     START=1 LOAD=0.9 JIT=300 build/tools/bench/sim_track 20 100 10 4
 *
 * Queueing then follows the lab's background load (tools/bench/
 * bench_sync.py): every hop of a path is a fluid queue fed by on/off bursts
 * at twice its line rate, on and off times exponential with means LOAD/2
 * and 1 - LOAD/2 ms, so it holds LOAD of the time on average and is empty
 * about 1 - LOAD of the time; a path crosses two such hops each way (leaf
 * to spine, spine to leaf), and paths j and j + 2 share a spine and so
 * their queues. Pairs go every 10 ms per path, 4x as often for the first
 * 4 s (lockstepd's defaults, acquisition included), and each path is
 * fitted as lockstepd's path_fit fits it: at the surer of its track's
 * drift and its floor samples' (ls_sync_est_floor_drift), its own slope
 * before it has either. Scored is the edge (one filter over every path's
 * track, or the paths' windows combined before they all have a drift), per
 * half second after the start, over all seeds: rms and 99th percentile of
 * the error, and the share of steps more than 500 ns off.
 */
#include <math.h>
#include <stdbool.h>
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
static bool onoff; /* START=1: the lab's bursty hops instead of queue() */
static double load_at_ns; /* START=1: no load before this (LOAD_AT, s) */

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

/*
 * One hop's queue under the lab's bursts (START=1): fluid, filled at twice
 * the line rate while a burst is on, so its delay grows by 1 ns per ns
 * then, and drains by 1 ns per ns while it is off. Read at times that
 * (nearly) only increase; a read a little in the past gets the present.
 */
struct hop {
	double t;    /* true time of the state below, ns */
	double q;    /* queueing delay there, ns */
	double flip; /* when the burst state next changes */
	bool on;
};

/* Two spines; per spine and direction, two hops (up to it, down from it). */
static struct hop hops[2][2][2];

static double
expo(double mean)
{
	return -mean * log(1.0 - runit());
}

/* A hop whose bursts start at true time t0, empty. */
static void
hop_init(struct hop *h, double t0)
{
	*h = (struct hop){.t = t0, .on = runit() < load / 2};
	h->flip = t0 + expo(h->on ? load * 0.5e6 : (1 - load / 2) * 1e6);
}

static double
hop_at(struct hop *h, double t)
{
	while (h->t < t) {
		double to = fmin(t, h->flip), dt = to - h->t;

		h->q = h->on ? h->q + dt : fmax(0.0, h->q - dt);
		h->t = to;
		if (to == h->flip) {
			h->on = !h->on;
			h->flip += expo(h->on ? load * 0.5e6 : (1 - load / 2) * 1e6);
		}
	}
	return h->q;
}

/* Queueing a packet of path j meets in direction dir sent at true time t. */
static double
path_queue(int j, int dir, double t)
{
	if (t < load_at_ns)
		return 0;
	struct hop *up = &hops[j % 2][dir][0], *down = &hops[j % 2][dir][1];
	double q1 = hop_at(up, t);

	return q1 + hop_at(down, t + q1 + 2000);
}

/* One coded pair at true time t over path j, whose one-way floor is d ns. */
static void
feed_pair(struct ls_sync_est *e, int j, double t, double d)
{
	struct ls_sync_probe p[2];
	double qf = onoff ? 0 : queue(), qr = onoff ? 0 : queue();

	for (int m = 0; m < 2; m++) {
		/* START=1: back to back, as lockstepd sends them (a burst
		 * meets them as one unless it slips in between) */
		double ts = t + m * (onoff ? 1e3 : 10e3);
		double tb = ts + jit_ns * runit() + d + (onoff ? path_queue(j, 0, ts) : qf);
		double tt = tb + 3000;
		double tr = tt + jit_ns * runit() + d + (onoff ? path_queue(j, 1, tt) : qr);

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

/* Seed sd: the two clocks (B 3.1 ms and 37 ppm from A, both wandering),
 * the queueing's random numbers, and fresh estimators and tracks. */
static int
seed_setup(int sd, double wander, int npaths, struct ls_sync_est *e, struct ls_sync_track *k)
{
	struct ls_conf_simclock ca = {.wander_ns = wander, .seed = 2000 + 2 * (uint64_t)sd};
	struct ls_conf_simclock cb = {.offset_ns = 3100000, .drift_ppm = 37,
				      .wander_ns = wander, .seed = 2001 + 2 * (uint64_t)sd};

	rng = 1000 + (uint64_t)sd;
	ls_simclock_init(&clk_a, &ca, BASE);
	ls_simclock_init(&clk_b, &cb, BASE);
	for (int j = 0; j < npaths; j++) {
		struct ls_sync_est_conf conf;

		ls_sync_est_conf_default(&conf);
		conf.purity_tol_ns = 1500;
		conf.outlier_ns = 0;
		if (ls_sync_est_init(&e[j], &conf, 1024) != 0)
			return -1;
		ls_sync_track_reset(&k[j]);
	}
	return 0;
}

/* START=1: half-second bins from the start. */
#define START_BINS 40
#define START_PAIR_NS 10e6   /* lockstepd's default probe interval */
#define START_ACQ_NS 4e9     /* ... 4x as often for the first 4 s */
#define START_ACQ_RATE 4

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * One path's fit as lockstepd's path_fit makes it (without the mesh's
 * drift, which needs the other nodes): the window at the surer of the
 * track's drift and the floor samples', the track's fit at it.
 * Returns whether the path is carried by its track (b, sig set).
 */
static bool
path_step(struct ls_sync_est *e, struct ls_sync_track *k, uint64_t now, double between,
	  double *b, double *sig, struct ls_sync_fit *win, struct ls_sync_fit *fit)
{
	double fs, fb = ls_sync_est_floor_drift(e, now, between, &fs);

	*b = ls_sync_track_drift(k, 2500000000ULL, &e->conf, between, sig);
	if (!isnan(fb) && (isnan(*b) || fs < *sig)) {
		*b = fb;
		*sig = fs;
	}
	e->conf.fixed_drift = *b;
	fit->ok = false;
	if (ls_sync_est_fit(e, now, win) != 0)
		return false;
	ls_sync_track_add(k, win);
	*fit = *win;
	return !isnan(*b) && ls_sync_track_fit(k, now, *b, *sig, between, &e->conf, fit) == 0;
}

/* One seed's paths: estimators, tracks, and the true time of the next pair. */
struct paths {
	int n;
	double between;         /* wander between the two clocks, told the tracks */
	double tp;
	struct ls_sync_est e[MAX_PATHS];
	struct ls_sync_track k[MAX_PATHS];
	struct ls_sync_track_ws *ws;
};

/* The step-th half second, at true time t: feed pairs up to t, fit, score. */
typedef void step_fn(struct paths *p, int step, double t, void *arg);

/*
 * Every seed: fresh clocks and paths (and, START=1, empty hops), then steps
 * at STEP_NS, 2 STEP_NS, ... (steps of them).
 */
static int
run_seeds(double wander, int seeds, int steps, int npaths, step_fn *step, void *arg)
{
	static struct paths p;

	p.n = npaths;
	p.between = wander * sqrt(2.0);
	p.ws = ls_sync_track_ws_create(MAX_PATHS);
	if (p.ws == NULL)
		return 1;
	for (int sd = 0; sd < seeds; sd++) {
		p.tp = 1e6;
		if (seed_setup(sd, wander, npaths, p.e, p.k) != 0)
			return 1;
		for (int x = 0; onoff && x < 8; x++)
			hop_init(&(&hops[0][0][0])[x], load_at_ns);
		for (int i = 1; i <= steps; i++)
			step(&p, i, i * STEP_NS, arg);
		for (int j = 0; j < npaths; j++)
			ls_sync_est_free(&p.e[j]);
	}
	for (int j = 0; j < npaths; j++)
		ls_sync_track_free(&p.k[j]);
	ls_sync_track_ws_free(p.ws);
	return 0;
}

/* START=1: the edge's |error| per half-second bin, over all seeds. */
struct startup_score {
	double err[START_BINS][4096];
	int nerr[START_BINS];
};

static void
startup_step(struct paths *p, int step, double t, void *arg)
{
	struct startup_score *ss = arg;
	double b[MAX_PATHS], sig[MAX_PATHS];
	struct ls_sync_fit win[MAX_PATHS], fit[MAX_PATHS], edge;
	const struct ls_sync_track *kp[MAX_PATHS];
	const struct ls_sync_est_conf *cp[MAX_PATHS];
	uint64_t now = stamp(&clk_a, t);
	double truth = (double)(int64_t)(stamp(&clk_b, t) - now);
	int nf = 0, carried = 0, bin = step - 1;

	for (; p->tp < t;
	     p->tp += p->tp < START_ACQ_NS ? START_PAIR_NS / START_ACQ_RATE : START_PAIR_NS)
		for (int j = 0; j < p->n; j++)
			feed_pair(&p->e[j], j, p->tp + j * 2e6 / p->n, 5000 + 200.0 * j);
	for (int j = 0; j < p->n; j++) {
		carried += path_step(&p->e[j], &p->k[j], now, p->between, &b[j], &sig[j], &win[j],
				     &fit[j]);
		if (!fit[j].ok)
			continue;
		kp[nf] = &p->k[j];
		cp[nf] = &p->e[j].conf;
		b[nf] = b[j];
		sig[nf] = sig[j];
		fit[nf++] = fit[j];
	}
	/* the edge as lockstepd's edge_fit makes it */
	if (ls_sync_combine(fit, nf, now, &edge) != 0)
		return;
	if (carried == nf) {
		struct ls_sync_fit many;

		if (ls_sync_track_fit_many(kp, b, sig, nf, now, p->between, cp, p->ws, &many) == 0 &&
		    isfinite(many.offset_ns))
			edge.offset_ns = many.offset_ns;
	}
	if (ss->nerr[bin] < 4096)
		ss->err[bin][ss->nerr[bin]++] = fabs(edge.offset_ns - truth);
}

static int
startup(double wander, int seeds, double secs, int npaths)
{
	int bins = (int)fmin(START_BINS, secs * 2);
	static struct startup_score ss;

	if (run_seeds(wander, seeds, bins, npaths, startup_step, &ss) != 0)
		return 1;
	printf("start-up: wander %.0f ns/sqrt(s) per clock, stamp jitter 0..%.0f ns, on/off "
	       "load %.2f on two hops each way, %d paths, %d seeds; the edge's |error| per "
	       "half second:\n   t_s   n   rms_ns   p99_ns  over_500ns\n", wander, jit_ns, load,
	       npaths, seeds);
	for (int bin = 0; bin < bins; bin++) {
		double sq = 0, *err = ss.err[bin];
		int over = 0, n = ss.nerr[bin];

		if (n == 0)
			continue;
		qsort(err, n, sizeof(double), dbl_cmp);
		for (int i = 0; i < n; i++) {
			sq += err[i] * err[i];
			over += err[i] > 500;
		}
		printf("  %4.1f %3d %8.0f %8.0f %10.0f%%\n", (bin + 1) * STEP_NS * 1e-9, n,
		       sqrt(sq / n), err[(int)(0.99 * (n - 1))], 100.0 * over / n);
	}
	return 0;
}

/* The steady state: every score, over the steps from 15 s on. */
struct steady_score {
	struct score sc[S_N];
	long n;
};

static void
steady_step(struct paths *p, int step, double t, void *arg)
{
	struct steady_score *ss = arg;
	struct ls_sync_fit win[MAX_PATHS], fit[MAX_PATHS], many, avg;
	const struct ls_sync_track *kp[MAX_PATHS];
	const struct ls_sync_est_conf *cp[MAX_PATHS];
	double b[MAX_PATHS], sig[MAX_PATHS];
	uint64_t now = stamp(&clk_a, t);
	double truth = (double)(int64_t)(stamp(&clk_b, t) - now);
	int nf = 0;

	(void)step;
	/* each path's pairs every 20 ms, the paths staggered; path j's
	 * floor 5 us + 200 ns j (links of other lengths) */
	for (; p->tp < t; p->tp += PAIR_EVERY_NS)
		for (int j = 0; j < p->n; j++)
			feed_pair(&p->e[j], j, p->tp + j * PAIR_EVERY_NS / p->n, 5000 + 200.0 * j);
	for (int j = 0; j < p->n; j++) {
		struct ls_sync_est *e = &p->e[j];

		/* as lockstepd's path_fit: the track's drift once it spans 2.5 s */
		b[j] = ls_sync_track_drift(&p->k[j], 2500000000ULL, &e->conf, p->between, &sig[j]);
		e->conf.fixed_drift = b[j];
		kp[j] = &p->k[j];
		cp[j] = &e->conf;
		if (ls_sync_est_fit(e, now, &win[j]) != 0)
			break;
		ls_sync_track_add(&p->k[j], &win[j]);
		if (isnan(b[j]) ||
		    ls_sync_track_fit(&p->k[j], now, b[j], sig[j], p->between, &e->conf, &fit[j]) != 0)
			break;
		nf++;
	}
	if (nf < p->n || t < 15e9)
		return;
	if (ls_sync_track_fit_many(kp, b, sig, p->n, now, p->between, cp, p->ws, &many) != 0 ||
	    ls_sync_combine(fit, p->n, now, &avg) != 0)
		return;
	score(&ss->sc[S_WIN], win[0].offset_ns - truth, win[0].sigma_ns);
	score(&ss->sc[S_TRACK], fit[0].offset_ns - truth, fit[0].sigma_ns);
	score(&ss->sc[S_MANY], many.offset_ns - truth, many.sigma_ns);
	score(&ss->sc[S_AVG], avg.offset_ns - truth, avg.sigma_ns);
	ss->n++;
}

static int
steady(double wander, int seeds, double secs, int npaths)
{
	struct steady_score ss = {0};
	int steps = 0;

	while ((steps + 1) * STEP_NS <= secs * 1e9)
		steps++;
	if (run_seeds(wander, seeds, steps, npaths, steady_step, &ss) != 0 || ss.n == 0)
		return 1;
	printf("wander %.0f ns/sqrt(s) per clock, stamp jitter 0..%.0f ns, load %.2f, %d paths, "
	       "%d seeds x %.0f s, %ld steps from 15 s on:\n",
	       wander, jit_ns, load, npaths, seeds, secs, ss.n);
	for (int i = 0; i < S_N; i++)
		printf("  %-24s rms error %6.1f ns, mean sigma %6.1f ns, error > 3 sigma %.1f%%\n",
		       score_name[i], sqrt(ss.sc[i].sq / ss.n), ss.sc[i].sig / ss.n,
		       100.0 * ss.sc[i].over / ss.n);
	return 0;
}

int
main(int argc, char **argv)
{
	double wander = argc > 1 ? atof(argv[1]) : 20;
	int seeds = argc > 2 ? atoi(argv[2]) : 8;
	double secs = argc > 3 ? atof(argv[3]) : 120;
	int npaths = argc > 4 ? atoi(argv[4]) : 4;

	if (getenv("JIT") != NULL)
		jit_ns = atof(getenv("JIT"));
	if (getenv("LOAD") != NULL)
		load = atof(getenv("LOAD"));
	if (getenv("START") != NULL && atoi(getenv("START")) != 0) {
		if (!(secs > 0) || seeds < 1 || seeds > 4096 || npaths < 1 || npaths > MAX_PATHS ||
		    !(load >= 0 && load < 1)) {
			fprintf(stderr, "sim_track: START=1 takes SECS over 0, SEEDS 1 to 4096, "
				"PATHS 1 to %d, LOAD 0 to under 1\n", MAX_PATHS);
			return 2;
		}
		onoff = true;
		if (getenv("LOAD_AT") != NULL)
			load_at_ns = atof(getenv("LOAD_AT")) * 1e9;
		return startup(wander, seeds, secs, npaths);
	}
	if (!(secs > 15) || seeds < 1 || npaths < 1 || npaths > MAX_PATHS) {
		fprintf(stderr, "sim_track: SECS over 15, SEEDS at least 1, PATHS 1 to %d\n",
			MAX_PATHS);
		return 2;
	}
	return steady(wander, seeds, secs, npaths);
}
