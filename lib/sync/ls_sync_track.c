/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-path history of window fits: the drift through it, and the offset at
 * now from its cleanest windows.
 *
 * Why a history and not just the newest window: under load, a 2 s window
 * often holds no pure sample that met an empty queue in one of the two
 * directions (a busy link in one direction; on a leaf-spine path, two busy
 * links in a row), and the envelope fit then moves the offset by half the
 * queueing it could not see. The window cannot tell which side it missed,
 * but it can tell that it missed: its half gap exceeds the least half gap
 * the path has shown by exactly the queueing on both sides, halved, and that
 * excess bounds its error (ls_sync.h, struct ls_sync_track). So every window
 * is kept with its half gap, and the offset now is that of the windows with
 * the least bound, moved along the drift and trusted less as they age.
 * This is NTP's clock filter (least delay of the last eight) carried over
 * to envelopes and given a proper error budget.
 *
 * The drift is the surer of two slopes: a weighted line through the
 * windows' offsets, and the envelope fit of the samples each window's
 * envelopes rest on, over the whole minute held. Under heavy load the
 * second is the one that holds: one floor sample near each end of the
 * minute pins it, where the line follows whatever the cleanest few windows
 * happened to share.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "ls_sync.h"

static inline int64_t
ns_diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/* Oldest first: the i-th held entry. */
static inline uint32_t
slot(const struct ls_sync_track *k, uint32_t i)
{
	return (k->head + LS_SYNC_TRACK_LEN - k->n + i) % LS_SYNC_TRACK_LEN;
}

void
ls_sync_track_reset(struct ls_sync_track *k)
{
	memset(k, 0, sizeof(*k));
	k->floor = INFINITY;
}

void
ls_sync_track_add(struct ls_sync_track *k, const struct ls_sync_fit *f)
{
	if (!f->ok || !isfinite(f->offset_ns) || !isfinite(f->band_ns))
		return;
	k->t[k->head] = f->t_ref;
	k->off[k->head] = f->offset_ns;
	/* The widest band, not the gap at the fixed slope: a window fitted at
	 * a wrong slope has a narrower gap and would look cleaner than it is. */
	k->gap[k->head] = f->band_ns;
	k->sig[k->head] = f->sigma_ns;
	k->sup[k->head] = f->has_sup && isfinite(f->sup_fwd.d) && isfinite(f->sup_rev.d);
	k->sf[k->head] = f->sup_fwd;
	k->sr[k->head] = f->sup_rev;
	/* A zeroed track (never reset) has floor 0: treat it as unset. */
	if (k->n == 0 || f->band_ns < k->floor)
		k->floor = f->band_ns;
	k->head = (k->head + 1) % LS_SYNC_TRACK_LEN;
	if (k->n < LS_SYNC_TRACK_LEN)
		k->n++;
}

static double
least_gap(const struct ls_sync_track *k)
{
	double g = k->floor;

	for (uint32_t i = 0; i < k->n; i++)
		g = fmin(g, k->gap[slot(k, i)]);
	return g;
}

/* sigma^2 + e^2 of entry s: its own error budget, before any ageing. */
static double
own_var(const struct ls_sync_track *k, uint32_t s, double g0)
{
	double e = k->gap[s] - g0;

	return k->sig[s] * k->sig[s] + e * e;
}

/*
 * The envelope slope through the held windows' support samples (see
 * ls_sync_track_drift). Times relative to the newest window's t_ref.
 */
static double
env_drift(const struct ls_sync_track *k, const struct ls_sync_est_conf *conf, double *sigma)
{
	struct ls_sync_pt f[LS_SYNC_TRACK_LEN], r[LS_SYNC_TRACK_LEN];
	struct ls_sync_est_conf c = *conf;
	struct ls_sync_fit fit;
	uint32_t n = 0, last = slot(k, k->n - 1);

	*sigma = NAN;
	for (uint32_t i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double dt = (double)ns_diff(k->t[s], k->t[last]);

		if (!k->sup[s])
			continue;
		f[n] = (struct ls_sync_pt){.t = dt + k->sf[s].t, .d = k->sf[s].d};
		r[n] = (struct ls_sync_pt){.t = dt + k->sr[s].t, .d = k->sr[s].d};
		n++;
	}
	c.fixed_drift = NAN;
	c.asym_ns = 0;
	if (ls_sync_envelope_fit(f, n, r, n, &c, &fit) != 0)
		return NAN;
	*sigma = fit.drift_sigma;
	return fit.drift;
}

double
ls_sync_track_drift(const struct ls_sync_track *k, uint64_t min_span_ns,
		    const struct ls_sync_est_conf *conf, double *sigma)
{
	double eb = NAN, es = NAN;
	double g0, sw = 0, st = 0, so = 0, stt = 0, sto = 0, den, b, a, chi = 0, bnd = 0;
	uint32_t last;

	*sigma = NAN;
	if (k->n < 6)
		return NAN;
	last = slot(k, k->n - 1);
	if (ns_diff(k->t[last], k->t[slot(k, 0)]) < (int64_t)min_span_ns)
		return NAN;
	g0 = least_gap(k);
	/* Times and offsets relative to the newest entry: offsets are ~1e7 ns
	 * and agree to ~1 ns, the differences keep the digits. */
	for (uint32_t i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double w = 1.0 / fmax(own_var(k, s, g0), 1e-6);
		double t = (double)ns_diff(k->t[s], k->t[last]);
		double o = k->off[s] - k->off[last];

		sw += w;
		st += w * t;
		so += w * o;
		stt += w * t * t;
		sto += w * t * o;
	}
	den = sw * stt - st * st;
	if (!(den > 0))
		return NAN;
	b = (sw * sto - st * so) / den;
	a = (so - b * st) / sw;
	for (uint32_t i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double v = fmax(own_var(k, s, g0), 1e-6), w = 1.0 / v;
		double t = (double)ns_diff(k->t[s], k->t[last]);
		double r = k->off[s] - k->off[last] - (a + b * t);

		chi += w * r * r;
		/* b = sum c_i off_i with c_i = w_i (sw t_i - st) / den */
		bnd += fabs(w * (sw * t - st) / den) * sqrt(v);
	}
	/*
	 * Standard error of a weighted slope, scaled by the fit's own reduced
	 * chi-square: the windows' sigmas are relative weights, not gospel.
	 * But not below what the windows' own bounds allow: the few cleanest
	 * windows dominate the fit and can agree with each other while sharing
	 * a bias (at 90% load in the lab, two such windows a few seconds apart
	 * set a slope 3 to 6 ppm off with a standard error of 0.6).
	 */
	*sigma = fmax(sqrt(sw / den * fmax(chi / (k->n - 2), 1.0)), bnd);
	if (conf != NULL)
		eb = env_drift(k, conf, &es);
	if (isfinite(eb) && isfinite(es) && es < *sigma) {
		*sigma = es;
		return eb;
	}
	return b;
}

int
ls_sync_track_fit(const struct ls_sync_track *k, uint64_t now, double drift,
		  double drift_sigma, double wander_ns, struct ls_sync_fit *out)
{
	double g0, u2[LS_SYNC_TRACK_LEN], best = INFINITY, sw = 0, so = 0, ref;
	uint32_t i, best_s = 0, last;

	memset(out, 0, sizeof(*out));
	if (k->n == 0)
		return -ENODATA;
	if (!isfinite(drift))
		drift = 0;
	if (!isfinite(drift_sigma))
		drift_sigma = 0;
	g0 = least_gap(k);
	for (i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double age = fmax((double)ns_diff(now, k->t[s]), 0.0);
		double da = drift_sigma * age;

		u2[i] = own_var(k, s, g0) + da * da + wander_ns * wander_ns * age * 1e-9;
		if (u2[i] < best) {
			best = u2[i];
			best_s = s;
		}
	}
	/* Average as differences from the newest entry (digits, as above). */
	last = slot(k, k->n - 1);
	ref = k->off[last] + drift * (double)ns_diff(now, k->t[last]);
	for (i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double p, w;

		if (u2[i] > 4.0 * best)
			continue;
		p = k->off[s] + drift * (double)ns_diff(now, k->t[s]);
		w = 1.0 / fmax(u2[i], 1e-6);
		sw += w;
		so += w * (p - ref);
	}
	out->ok = true;
	out->t_ref = now;
	out->offset_ns = ref + so / sw;
	out->drift = drift;
	out->drift_sigma = drift_sigma;
	out->sigma_ns = sqrt(best);
	out->half_gap_ns = k->gap[best_s];
	out->band_ns = k->gap[best_s];
	return 0;
}
