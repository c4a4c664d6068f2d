/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bound from what the clock is observed to do.
 *
 * A reading's bound is 3 sigma, and sigma comes from the estimators: how
 * tightly the probes hug their envelopes, plus the walk sync.wander_ns
 * says the oscillators make. That walk is an assumption. On clocks that
 * wander more than it (50 ns/sqrt(s) against the 10 to 28 assumed, issue
 * 28) the estimate lags the walk by seconds and the truth fell outside
 * [earliest, latest] in 5 to 12% of readings, with sigma none the wiser.
 *
 * What the node can see is its own estimate over time, x(t) = theta +
 * cluster_ns: it follows the true offset to the reference (a walk w plus
 * a line) with some lag L and some noise n. Two things follow.
 *  - The second difference x(t) - 2 x(t - tau) + x(t - 2 tau) cancels the
 *    line; for a walk its variance is 2 w^2 tau, and the noise adds
 *    about 6 var(n). So mean(d^2) / (2 tau) is the walk, or more: an
 *    estimate of w that errs on the wide side (the Allan variance of the
 *    node's own offsets, in the time-deviation form).
 *  - The error of the estimate now is mostly the walk it has not yet
 *    seen: the walk over the lag, variance w^2 L. L is the filter's own
 *    figure, how far back its weight lies (ls_sync_fit.lag_ns), which for
 *    an exponential average over the past is twice what its error implies.
 * The readings' sigma already budgets the walk of sync.wander_ns, so only
 * the walk observed beyond it is added, in quadrature: a quiet clock
 * (observed walk within the assumption) gets the bound it had.
 *
 * A short history knows the walk poorly, so the figure is its upper 95%
 * confidence limit: the first seconds after synchronising carry a wider
 * bound, which narrows as readings accumulate.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_sync.h"
#include "ls_sync_priv.h"

/* Least tau the walk is measured over, ns: below it the readings' noise
 * (every network step moves theta a little) is all a second difference
 * would see. */
#define WOBS_TAU_MIN_NS 250e6
/* The walk is measured over this many lags: over about one lag the
 * estimate's own averaging hides part of it (a second difference of a
 * smoothed walk is smaller than the walk's), over several it shows. */
#define WOBS_TAU_LAGS 4.0

void
ls_sync_wobs_reset(struct ls_sync_wobs *w)
{
	w->n = 0;
	w->head = 0;
}

/* The i-th oldest reading held. */
static uint32_t
wobs_slot(const struct ls_sync_wobs *w, uint32_t i)
{
	return (w->head + LS_SYNC_WOBS_LEN - w->n + i) % LS_SYNC_WOBS_LEN;
}

void
ls_sync_wobs_add(struct ls_sync_wobs *w, uint64_t t, double x_ns, double sigma_ns)
{
	if (!isfinite(x_ns))
		return;
	if (!isfinite(sigma_ns) || sigma_ns < 0)
		sigma_ns = 0;
	if (w->n > 0) {
		uint64_t last = w->t[wobs_slot(w, w->n - 1)];

		if (ns_diff(t, last) < 0) /* time went back: start over */
			ls_sync_wobs_reset(w);
		else if ((uint64_t)ns_diff(t, last) < LS_SYNC_WOBS_SPACING_NS)
			return;
	}
	w->t[w->head] = t;
	w->x[w->head] = x_ns;
	w->s[w->head] = sigma_ns;
	w->head = (w->head + 1) % LS_SYNC_WOBS_LEN;
	if (w->n < LS_SYNC_WOBS_LEN)
		w->n++;
}

/* x at dt ns after the oldest reading, interpolated, and in *s the larger
 * of the two readings' sigmas; *i is a search hint that only moves forward
 * (callers ask in increasing dt). */
static double
wobs_at(const struct ls_sync_wobs *w, uint64_t t0, double dt, uint32_t *i, double *s)
{
	while (*i + 2 < w->n && (double)ns_diff(w->t[wobs_slot(w, *i + 1)], t0) <= dt)
		(*i)++;
	uint32_t a = wobs_slot(w, *i), b = wobs_slot(w, *i + 1);
	double ta = (double)ns_diff(w->t[a], t0), tb = (double)ns_diff(w->t[b], t0);
	double f = tb > ta ? (dt - ta) / (tb - ta) : 0;

	*s = fmax(w->s[a], w->s[b]);
	return w->x[a] + fmin(fmax(f, 0.0), 1.0) * (w->x[b] - w->x[a]);
}

/* Lower p-quantile of chi-square with nu degrees of freedom
 * (Wilson-Hilferty), over nu: the factor a variance estimate from nu
 * degrees of freedom is divided by for its upper confidence limit. */
static double
chi2_low_over_nu(double nu, double z)
{
	double h = 2.0 / (9.0 * nu), c = 1.0 - h + z * sqrt(h);

	return c > 0.1 ? c * c * c : 0.001;
}

static int
dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

double
ls_sync_wobs_wander(const struct ls_sync_wobs *w, double tau_ns)
{
	double v[LS_SYNC_WOBS_LEN], d2[LS_SYNC_WOBS_LEN], vs[LS_SYNC_WOBS_LEN];
	double span, sum = 0, nu, want;
	uint32_t m = 0, cnt = 0, i0 = 0, i1 = 0, i2 = 0;
	uint64_t t0;

	if (w->n < 4)
		return NAN;
	t0 = w->t[wobs_slot(w, 0)];
	span = (double)ns_diff(w->t[wobs_slot(w, w->n - 1)], t0);
	if (span < 1e9)
		return NAN;
	if (!(tau_ns > WOBS_TAU_MIN_NS))
		tau_ns = WOBS_TAU_MIN_NS;
	want = tau_ns;
	tau_ns = fmax(fmin(tau_ns, span / 4.0), WOBS_TAU_MIN_NS);
	for (uint32_t k = 0; k < w->n; k++) {
		double tk = (double)ns_diff(w->t[wobs_slot(w, k)], t0), d, s0, s1, s2;

		if (tk < 2.0 * tau_ns)
			continue;
		d = wobs_at(w, t0, tk, &i2, &s2) - 2.0 * wobs_at(w, t0, tk - tau_ns, &i1, &s1) +
		    wobs_at(w, t0, tk - 2.0 * tau_ns, &i0, &s0);
		d2[m] = d * d;
		v[m] = s0 * s0 + 4.0 * s1 * s1 + s2 * s2;
		vs[m] = v[m];
		m++;
	}
	if (m == 0)
		return NAN;
	/* Stretches where the readings claimed far more than usual (a start-up
	 * moving by microseconds while saying so) are explained by their own
	 * sigmas and covered by them: they are not walk for the minute after. */
	qsort(vs, m, sizeof(vs[0]), dbl_cmp);
	for (uint32_t k = 0; k < m; k++)
		if (v[k] <= 4.0 * vs[m / 2]) {
			sum += d2[k];
			cnt++;
		}
	nu = fmax(1.0, 1.5 * (span - 2.0 * tau_ns) / tau_ns * cnt / m);
	/* ns^2 per ns of tau -> per s; upper 95% limit; and where the history
	 * was too short for the tau asked for, scaled by the shortfall: over
	 * less than the estimate's averaging time its movements show only
	 * about tau / that time of the walk */
	return sqrt(sum / cnt / (2.0 * tau_ns * 1e-9) / chi2_low_over_nu(nu, -1.645) *
		    fmax(1.0, want / tau_ns));
}

/* How far back the node's estimate rests: its used edges' lag, weighted as
 * the step weighted them, doubled through a neighbour that is not the
 * reference (that neighbour's estimate lags as far behind as ours). */
static double
node_lag(const struct ls_sync_nbr *nbrs, const struct ls_sync_nbr_use *use, unsigned int n,
	 uint32_t ref)
{
	double sw = 0, sl = 0;

	for (unsigned int j = 0; j < n; j++) {
		double wt = use != NULL ? (use[j].used ? use[j].weight : 0) : 1.0;
		double lag;

		if (!nbrs[j].has_edge || !(wt > 0) || !isfinite(wt))
			continue;
		lag = isfinite(nbrs[j].edge.lag_ns) ? fmax(nbrs[j].edge.lag_ns, 0.0) : 0;
		if (nbrs[j].id != ref)
			lag *= 2.0;
		sw += wt;
		sl += wt * lag;
	}
	return sw > 0 ? sl / sw : 0;
}

void
ls_sync_bound_observe(struct ls_sync_wobs *w, const struct ls_sync_node_conf *c,
		      const struct ls_sync_nbr *nbrs, const struct ls_sync_nbr_use *use,
		      unsigned int n, uint64_t now, struct ls_sync_state *s)
{
	(void)c;
	if (!(s->flags & LS_SYNC_F_SYNCED) || (s->flags & LS_SYNC_F_REF)) {
		ls_sync_wobs_reset(w);
		s->wander_obs_ns = NAN;
		s->lag_ns = 0;
		return;
	}
	if (s->flags & LS_SYNC_F_HOLDOVER)
		return;
	if (w->ref_id != s->ref_id) {
		ls_sync_wobs_reset(w);
		w->ref_id = s->ref_id;
	}
	s->lag_ns = node_lag(nbrs, use, n, s->ref_id);
	ls_sync_wobs_add(w, now, s->theta_ns + s->cluster_ns, fmax(s->sigma_ns, s->bound_sigma_ns));
	s->wander_obs_ns = ls_sync_wobs_wander(w, WOBS_TAU_LAGS * s->lag_ns);
}
