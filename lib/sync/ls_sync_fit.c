/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock synchronisation after Huygens, the first room: the purity filter
 * and the envelope fit of one window of probes. The other rooms:
 * ls_sync_est.c (per-path estimator, floor drift, combining paths),
 * ls_sync_track.c (per-path history of fits), ls_sync_net.c (network
 * effect, election, holdover, reading fleet time), ls_sync_wire.c (the
 * announcement's wire form). ls_sync.h has the vocabulary (A, B, t1..t4,
 * edge offset o = local_B - local_A, theta = local - fleet).
 *
 * Envelope fit. Forward delays f = t2 - t1 and reverse delays r = t4 - t3
 * only ever gain queueing, so the information is in their lower envelopes.
 * For a common slope b, F(b) = min(f - b t) is the forward envelope's
 * intercept and R(b) = min(r + b t) the reverse one's; both are minima of
 * lines in b, hence concave and piecewise linear, and only the points on
 * the lower convex hull of each cloud can be the minimiser. F breaks at the
 * slopes of the forward hull's edges, R at minus the slopes of the reverse
 * hull's edges, and the gap G = F + R has derivative t_rev - t_fwd (the
 * times of the two supporting points) between breakpoints. So the maximum
 * is found exactly: sort the breakpoints, binary-search the first interval
 * where that derivative is <= 0. No iteration, no tolerance.
 *   Outliers (a mis-stamped probe that looks faster than light) sit below
 * the envelope and would pull it down. Each round leaves out each point
 * the envelope touches (then the lowest two, then three together, so that
 * a few bad points on one line cannot hold each other up), refits, and
 * drops what lies more than outlier_ns below the refitted envelope of the
 * rest - and more than twice as far below it as the rest spread above it;
 * then the fit is repeated, up to LS_SYNC_MAX_OUTLIERS drops.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_sync_priv.h"

/* ---- purity ----------------------------------------------------------- */

/* |receive spacing - send spacing| <= tol, computed without overflow. */
static bool
spacing_ok(uint64_t s0, uint64_t s1, uint64_t r0, uint64_t r1, uint64_t tol)
{
	int64_t e = (int64_t)((r1 - r0) - (s1 - s0));
	uint64_t mag = e < 0 ? (uint64_t)0 - (uint64_t)e : (uint64_t)e;

	return mag <= tol;
}

unsigned int
ls_sync_purity(const struct ls_sync_probe *a, const struct ls_sync_probe *b, uint64_t tol_ns)
{
	unsigned int m = 0;

	/* A negative send spacing means the pair is not what was coded
	 * (reordered, or a stale probe matched): trust neither. Zero is fine:
	 * a reflector that answers both members in one burst stamps both
	 * with the burst's T3, and back-to-back members may share a T1 tick. */
	if (b->t1 < a->t1 || b->t3 < a->t3)
		return 0;
	if (spacing_ok(a->t1, b->t1, a->t2, b->t2, tol_ns))
		m |= LS_SYNC_PURE_FWD;
	if (spacing_ok(a->t3, b->t3, a->t4, b->t4, tol_ns))
		m |= LS_SYNC_PURE_REV;
	return m;
}

/* ---- envelope fit ----------------------------------------------------- */

void
ls_sync_est_conf_default(struct ls_sync_est_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->window_ns = 2000000000ull;
	c->purity_tol_ns = 200;
	c->max_drift = 500e-6;
	c->asym_ns = 0;
	c->sigma_floor_ns = 1;
	c->outlier_ns = 2000;
	c->min_points = 4;
	c->sigma_m = 4;
	c->fixed_drift = NAN;
}

uint64_t
ls_sync_est_window_for(const struct ls_sync_est_conf *c, uint64_t pair_ns)
{
	uint64_t need = (uint64_t)LS_SYNC_WINDOW_PAIRS * c->min_points * pair_ns;

	return need > c->window_ns ? need : c->window_ns;
}

/*
 * One side of the fit. sign is -1 for forward samples (envelope of d - b t)
 * and +1 for reverse samples (envelope of d + b t), so one set of helpers
 * serves both: the value of point i at slope b is p[i].d + sign * b * p[i].t.
 */
struct side {
	struct ls_sync_pt *p;   /* finite samples sorted by t, then d */
	uint32_t n;
	uint8_t *gone;          /* dropped as outlier */
	uint32_t live;          /* n minus the dropped ones */
	uint32_t *hull;         /* lower hull of the live points (indices into p) */
	uint32_t nh;
	uint32_t *tmp;          /* hull with points left out (leave_out) */
	double sign;
};

/* Largest group of samples tested together as outliers (see drop_outliers). */
#define LS_SYNC_OUTLIER_GROUP 3

int
ls_sync_pt_cmp(const void *x, const void *y)
{
	const struct ls_sync_pt *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return (a->d > b->d) - (a->d < b->d);
}

static int
dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/*
 * Lower convex hull (Andrew's monotone chain) of the live points (all of
 * them when gone is NULL: ls_sync_est_floor_drift), into idx.
 * Points sharing a t: only the lowest (the first, by the sort) can be on a
 * lower envelope, and dropping the rest keeps every hull edge's slope
 * finite.
 */
static uint32_t
build_hull(const struct side *s, uint32_t *idx)
{
	uint32_t i, k = 0;

	for (i = 0; i < s->n; i++) {
		const struct ls_sync_pt *c = &s->p[i];

		if (s->gone != NULL && s->gone[i])
			continue;
		if (k > 0 && s->p[idx[k - 1]].t == c->t)
			continue;
		while (k >= 2) {
			const struct ls_sync_pt *o = &s->p[idx[k - 2]], *a = &s->p[idx[k - 1]];
			double cross = (a->t - o->t) * (c->d - o->d) - (a->d - o->d) * (c->t - o->t);

			if (cross > 0)
				break;
			k--;
		}
		idx[k++] = i;
	}
	return k;
}

uint32_t
ls_sync_lower_hull(struct ls_sync_pt *p, uint32_t n, uint32_t *h)
{
	struct side s = {.p = p, .n = n};

	return build_hull(&s, h);
}

/* min over hull vertices of d + sign b t; *arg gets the supporting point. */
static double
env_min(const struct side *s, const uint32_t *h, uint32_t nh, double b, uint32_t *arg)
{
	double best = INFINITY;
	uint32_t i, a = h[0];

	for (i = 0; i < nh; i++) {
		const struct ls_sync_pt *q = &s->p[h[i]];
		double v = q->d + s->sign * b * q->t;

		if (v < best) {
			best = v;
			a = h[i];
		}
	}
	if (arg != NULL)
		*arg = a;
	return best;
}

/*
 * The slope maximising G(b) = F(b) + R(b) over [-maxb, maxb], exactly.
 * cand must hold nf + nr + 2 doubles.
 */
static double
best_slope(const struct side *f, const uint32_t *hf, uint32_t nf,
	   const struct side *r, const uint32_t *hr, uint32_t nr, double maxb, double *cand)
{
	uint32_t i, nc = 0, m, lo, hi;

	if (!(maxb > 0))
		return 0;
	cand[nc++] = -maxb;
	cand[nc++] = maxb;
	for (i = 0; i + 1 < nf; i++) {
		const struct ls_sync_pt *a = &f->p[hf[i]], *b = &f->p[hf[i + 1]];
		double s = (b->d - a->d) / (b->t - a->t);

		if (s > -maxb && s < maxb)
			cand[nc++] = s;
	}
	for (i = 0; i + 1 < nr; i++) {
		const struct ls_sync_pt *a = &r->p[hr[i]], *b = &r->p[hr[i + 1]];
		double s = -(b->d - a->d) / (b->t - a->t);

		if (s > -maxb && s < maxb)
			cand[nc++] = s;
	}
	qsort(cand, nc, sizeof(*cand), dbl_cmp);
	for (i = 1, m = 1; i < nc; i++)
		if (cand[i] != cand[m - 1])
			cand[m++] = cand[i];
	nc = m;

	/* Interval j = (cand[j], cand[j+1]); G's slope there is t_rev - t_fwd of
	 * the supporting points, which only falls as j grows (concavity). Find
	 * the first interval where it is <= 0. */
	lo = 0;
	hi = nc - 1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, af, ar;
		double x = 0.5 * (cand[mid] + cand[mid + 1]);

		env_min(f, hf, nf, x, &af);
		env_min(r, hr, nr, x, &ar);
		if (r->p[ar].t - f->p[af].t <= 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == nc - 1)
		return cand[nc - 1];    /* G rises all the way to +maxb */
	{
		uint32_t af, ar;
		double x = 0.5 * (cand[lo] + cand[lo + 1]);

		env_min(f, hf, nf, x, &af);
		env_min(r, hr, nr, x, &ar);
		/* Flat top: the supporting points share a time, every slope in
		 * the interval is equally good; take the middle. */
		if (r->p[ar].t == f->p[af].t)
			return x;
	}
	return cand[lo];
}

static double side_spread(const struct side *s, double b, double env, uint32_t m, double *buf);

/* An outlier lies this many times the rest's spread below their envelope. */
#define OUTLIER_SPREAD_K 2.0

/*
 * Leave the live points idx[0..n) of side s out, refit, and write how far
 * each lies below the refitted envelope of the rest into depth[]
 * (positive = below). o is the other side, with its current hull. The
 * points are live again on return.
 *
 * To count as an outlier the depth has to beat both thr and
 * OUTLIER_SPREAD_K times the spread of the rest (their m-th lowest residual
 * above their envelope): "far below" only means something when the others
 * hug their envelope tightly. Under heavy queueing a few good floor samples
 * can sit microseconds below the next-lowest ones, and dropping them would
 * start a cascade through the queued samples. The depth reported for a
 * point that fails the second test is capped at thr, so callers compare
 * against thr alone.
 *
 * When b0 is a number, the depth is also measured at that slope (the one
 * fitted with the points in) and the smaller of the two counts. See
 * drop_outliers for when that is needed.
 */
static void
leave_out(struct side *s, const struct side *o, bool s_is_fwd, const uint32_t *idx, uint32_t n,
	  double b0, double thr, uint32_t m, double maxb, double *cand, double *depth)
{
	uint32_t i, nh;
	double b = 0, env = 0, spread = 0, env0 = 0;

	for (i = 0; i < n; i++)
		s->gone[idx[i]] = 1;
	nh = build_hull(s, s->tmp);
	if (nh > 0) {
		if (s_is_fwd)
			b = best_slope(s, s->tmp, nh, o, o->hull, o->nh, maxb, cand);
		else
			b = best_slope(o, o->hull, o->nh, s, s->tmp, nh, maxb, cand);
		env = env_min(s, s->tmp, nh, b, NULL);
		spread = side_spread(s, b, env, m, cand);
		if (!isnan(b0))
			env0 = env_min(s, s->tmp, nh, b0, NULL);
	}
	for (i = 0; i < n; i++)
		s->gone[idx[i]] = 0;
	for (i = 0; i < n; i++) {
		const struct ls_sync_pt *q = &s->p[idx[i]];
		double d = env - (q->d + s->sign * b * q->t);

		if (!isnan(b0))
			d = fmin(d, env0 - (q->d + s->sign * b0 * q->t));
		if (nh == 0)
			d = -INFINITY;
		else if (!(d > OUTLIER_SPREAD_K * spread))
			d = fmin(d, thr);
		depth[i] = d;
	}
}

/* Residuals closer than this (ns) to the envelope count as touching it. */
#define SUPPORT_EPS 1e-3

/*
 * One round of outlier search on side s at slope b; returns how many points
 * it dropped (0 when none is an outlier).
 *
 * k = 1 is the plain leave-one-out: each support point (every point the
 * envelope touches at b) is left out in turn and the deepest one beyond
 * thr below the refit of the rest goes. Refitting matters: a bad point at
 * either end of the window tilts b until the envelope also touches a good
 * point, so at b itself it has company and looks harmless.
 *
 * k = 2, 3 leave out the k lowest points together and drop them only if
 * every one is beyond thr: a few bad points on one line hold each other up
 * (with one left out, the refit runs through the others and it sits right
 * on it). For a group the depth must hold at the current slope as well as
 * at the refitted one: leaving out all of a side's floor samples from one
 * stretch of the window can leave the two sides' floors in disjoint time
 * ranges, where the refitted slope is poorly pinned and tilts, and the
 * good points left out then look deep only because of the tilt. A real
 * group of bad points on one line is deep at either slope.
 */
static uint32_t
drop_outliers(struct side *s, const struct side *o, bool s_is_fwd, double b, uint32_t k,
	      double thr, uint32_t m, double maxb, double *cand)
{
	uint32_t low[LS_SYNC_MAX_OUTLIERS], nl = 0, i, j, best = 0;
	double rl[LS_SYNC_MAX_OUTLIERS], depth[LS_SYNC_MAX_OUTLIERS];
	double env = env_min(s, s->hull, s->nh, b, NULL);
	uint32_t want = k == 1 ? LS_SYNC_MAX_OUTLIERS : k;

	/* The lowest residuals, by insertion (want is tiny). */
	for (i = 0; i < s->n; i++) {
		double r;

		if (s->gone[i])
			continue;
		r = s->p[i].d + s->sign * b * s->p[i].t - env;
		if (nl == want && r >= rl[nl - 1])
			continue;
		if (nl < want)
			nl++;
		for (j = nl - 1; j > 0 && rl[j - 1] > r; j--) {
			rl[j] = rl[j - 1];
			low[j] = low[j - 1];
		}
		rl[j] = r;
		low[j] = i;
	}
	if (nl < k)
		return 0;
	if (k > 1) {
		leave_out(s, o, s_is_fwd, low, k, b, thr, m, maxb, cand, depth);
		for (i = 0; i < k; i++)
			if (!(depth[i] > thr))
				return 0;
		for (i = 0; i < k; i++) {
			s->gone[low[i]] = 1;
		}
		s->live -= k;
		return k;
	}
	for (i = 0; i < nl && rl[i] <= rl[0] + SUPPORT_EPS; i++) {
		leave_out(s, o, s_is_fwd, &low[i], 1, NAN, thr, m, maxb, cand, &depth[i]);
		if (depth[i] > depth[best])
			best = i;
	}
	if (!(depth[best] > thr))
		return 0;
	s->gone[low[best]] = 1;
	s->live--;
	return 1;
}

/* Residual of the m-th lowest live sample above the envelope at slope b. */
static double
side_spread(const struct side *s, double b, double env, uint32_t m, double *buf)
{
	uint32_t i, k = 0;

	for (i = 0; i < s->n; i++)
		if (!s->gone[i])
			buf[k++] = s->p[i].d + s->sign * b * s->p[i].t - env;
	qsort(buf, k, sizeof(*buf), dbl_cmp);
	if (m == 0)
		m = 1;
	if (m > k)
		m = k;
	return fmax(buf[m - 1], 0);
}

/* Copy the finite samples, sorted. */
static uint32_t
side_load(struct side *s, const struct ls_sync_pt *src, uint32_t n)
{
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		if (isfinite(src[i].t) && isfinite(src[i].d))
			s->p[k++] = src[i];
	qsort(s->p, k, sizeof(*s->p), ls_sync_pt_cmp);
	s->n = s->live = k;
	return k;
}

/* Widen [*tmin, *tmax] to the times of s's live samples. */
static void
live_times(const struct side *s, double *tmin, double *tmax)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (!s->gone[i]) {
			*tmin = fmin(*tmin, s->p[i].t);
			*tmax = fmax(*tmax, s->p[i].t);
		}
}

/*
 * Fit the slope, then drop outliers round by round and refit, until a
 * round finds none or LS_SYNC_MAX_OUTLIERS are gone. Returns the slope;
 * the sides' hulls are those at it, *drops how many went. need is the
 * fewest samples a side keeps; cand holds n + 2 doubles.
 */
static double
fit_rounds(struct side *f, struct side *r, const struct ls_sync_est_conf *conf, uint32_t need,
	   double *cand, uint32_t *drops)
{
	double b;

	*drops = 0;
	for (;;) {
		uint32_t k, got = 0;

		f->nh = build_hull(f, f->hull);
		r->nh = build_hull(r, r->hull);
		b = isnan(conf->fixed_drift) ?
		    best_slope(f, f->hull, f->nh, r, r->hull, r->nh, conf->max_drift, cand) :
		    conf->fixed_drift;
		if (!(conf->outlier_ns > 0) || *drops >= LS_SYNC_MAX_OUTLIERS)
			break;
		/* Smallest group first, either side; a side never goes below
		 * min_points and the fit never drops more than the maximum. */
		for (k = 1; k <= LS_SYNC_OUTLIER_GROUP && got == 0; k++) {
			if (*drops + k > LS_SYNC_MAX_OUTLIERS)
				break;
			if (f->live >= need + k)
				got = drop_outliers(f, r, true, b, k, conf->outlier_ns,
						    conf->sigma_m, conf->max_drift, cand);
			if (got == 0 && r->live >= need + k)
				got = drop_outliers(r, f, false, b, k, conf->outlier_ns,
						    conf->sigma_m, conf->max_drift, cand);
		}
		if (got == 0)
			break;
		*drops += got;
	}
	return b;
}

/* The fit at slope b into out, from the sides as fit_rounds left them. */
static void
fit_result(const struct side *f, const struct side *r, double b, uint32_t drops,
	   const struct ls_sync_est_conf *conf, double *cand, struct ls_sync_fit *out)
{
	double fe, re, tmin = INFINITY, tmax = -INFINITY, half_span;
	uint32_t i;

	fe = env_min(f, f->hull, f->nh, b, &i);
	out->sup_fwd = f->p[i];
	re = env_min(r, r->hull, r->nh, b, &i);
	out->sup_rev = r->p[i];
	out->has_sup = true;
	out->ok = true;
	out->t_ref = 0;
	out->drift = b;
	out->offset_ns = 0.5 * (fe - re) - 0.5 * conf->asym_ns;
	out->half_gap_ns = 0.5 * (fe + re);
	/* At a fixed slope the band is narrower than the widest one (a wrong
	 * slope narrows it): judge the window's floors by the widest. */
	out->band_ns = out->half_gap_ns;
	if (!isnan(conf->fixed_drift)) {
		double bf = best_slope(f, f->hull, f->nh, r, r->hull, r->nh, conf->max_drift, cand);

		out->band_ns = fmax(out->half_gap_ns, 0.5 * (env_min(f, f->hull, f->nh, bf, NULL) +
							     env_min(r, r->hull, r->nh, bf, NULL)));
	}
	out->n_fwd = f->live;
	out->n_rev = r->live;
	out->n_outliers = drops;
	/* cand is free again and holds n + 2 doubles: enough for either side. */
	out->sigma_ns = fmax(conf->sigma_floor_ns,
			     0.5 * hypot(side_spread(f, b, fe, conf->sigma_m, cand),
					 side_spread(r, b, re, conf->sigma_m, cand)));
	live_times(f, &tmin, &tmax);
	live_times(r, &tmin, &tmax);
	/* A window of one instant says nothing about drift: 1 ns keeps the
	 * figure finite (and enormous). */
	half_span = fmax(0.5 * (tmax - tmin), 1.0);
	out->drift_sigma = out->sigma_ns / half_span;
}

int
ls_sync_envelope_fit(const struct ls_sync_pt *fwd, uint32_t n_fwd,
		     const struct ls_sync_pt *rev, uint32_t n_rev,
		     const struct ls_sync_est_conf *conf, struct ls_sync_fit *out)
{
	struct side f = { .sign = -1 }, r = { .sign = 1 };
	uint32_t need = conf->min_points > 0 ? conf->min_points : 1;
	size_t n = (size_t)n_fwd + n_rev;
	struct ls_sync_pt *pts = NULL;
	uint32_t *idx = NULL, drops;
	uint8_t *gone = NULL;
	double *cand = NULL, b;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (n_fwd < need || n_rev < need)
		return -ENODATA;
	/* One array of each kind, the forward side's part first: samples,
	 * dropped flags, and hull indices (each side's hull, then its
	 * leave_out hull). cand holds best_slope's breakpoints. */
	pts = malloc(n * sizeof(*pts));
	idx = malloc(2 * n * sizeof(*idx));
	gone = calloc(n, 1);
	cand = malloc((n + 2) * sizeof(*cand));
	if (pts == NULL || idx == NULL || gone == NULL || cand == NULL) {
		rc = -ENOMEM;
		goto done;
	}
	f.p = pts;
	f.gone = gone;
	f.hull = idx;
	f.tmp = idx + n_fwd;
	r.p = pts + n_fwd;
	r.gone = gone + n_fwd;
	r.hull = idx + 2 * (size_t)n_fwd;
	r.tmp = r.hull + n_rev;
	if (side_load(&f, fwd, n_fwd) < need || side_load(&r, rev, n_rev) < need) {
		rc = -ENODATA;
		goto done;
	}
	b = fit_rounds(&f, &r, conf, need, cand, &drops);
	fit_result(&f, &r, b, drops, conf, cand, out);
done:
	free(pts);
	free(idx);
	free(gone);
	free(cand);
	return rc;
}
