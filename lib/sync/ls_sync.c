/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock synchronisation after Huygens: purity filter, envelope fit,
 * per-path estimators, and the network-effect step.
 *
 * Everything here is plain arithmetic on probe timestamps; ls_sync.h has
 * the vocabulary (A, B, t1..t4, edge offset o = local_B - local_A, theta =
 * local - fleet). How each piece works:
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
 *
 * Estimator. A power-of-2 ring of probes in insertion order, so expiring is
 * popping from the tail. All clock values are uint64 ns of sim or real
 * clocks (~1.7e18); they are differenced as integers before any double
 * sees them, so a double's 53 bits only ever hold seconds' worth of ns.
 *
 * Network effect. Each node holds (theta, phi) against the reference and
 * re-estimates them from its neighbours' announcements and its own edge
 * fits: every usable neighbour gives a candidate theta, and the node takes
 * a robust weighted mean of them (weighted median start, then iteratively
 * reweighted with Huber weights that redescend to zero). Done by every node
 * every round this is a Jacobi iteration of the weighted least-squares
 * problem over the mesh, with the reference pinned at zero. Reference
 * election is "lowest id alive", where alive means its ref_seq, relayed
 * hop by hop, still rises.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_sync.h"

/* ---- small helpers ---------------------------------------------------- */

/* a - b of two clock readings as a signed count: exact for |a - b| < 2^63. */
static inline int64_t
ns_diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/* Add a signed ns count to a clock reading, saturating at 0 and UINT64_MAX. */
static uint64_t
ns_add(uint64_t t, int64_t d)
{
	if (d >= 0)
		return t > UINT64_MAX - (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
	uint64_t m = (uint64_t)0 - (uint64_t)d;
	return t < m ? 0 : t - m;
}

/* Serial-number comparison (RFC 1982) so ref_seq may wrap. */
static inline bool
seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

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

static int
pt_cmp(const void *x, const void *y)
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
	qsort(s->p, k, sizeof(*s->p), pt_cmp);
	s->n = s->live = k;
	return k;
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
	uint32_t *idx = NULL;
	uint8_t *gone = NULL;
	double *cand = NULL, b, fe, re, tmin = INFINITY, tmax = -INFINITY, half_span;
	uint32_t drops = 0, i;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (n_fwd < need || n_rev < need)
		return -ENODATA;
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

	for (;;) {
		uint32_t k, got = 0;

		f.nh = build_hull(&f, f.hull);
		r.nh = build_hull(&r, r.hull);
		b = isnan(conf->fixed_drift) ?
		    best_slope(&f, f.hull, f.nh, &r, r.hull, r.nh, conf->max_drift, cand) :
		    conf->fixed_drift;
		if (!(conf->outlier_ns > 0) || drops >= LS_SYNC_MAX_OUTLIERS)
			break;
		/* Smallest group first, either side; a side never goes below
		 * min_points and the fit never drops more than the maximum. */
		for (k = 1; k <= LS_SYNC_OUTLIER_GROUP && got == 0; k++) {
			if (drops + k > LS_SYNC_MAX_OUTLIERS)
				break;
			if (f.live >= need + k)
				got = drop_outliers(&f, &r, true, b, k, conf->outlier_ns,
						    conf->sigma_m, conf->max_drift, cand);
			if (got == 0 && r.live >= need + k)
				got = drop_outliers(&r, &f, false, b, k, conf->outlier_ns,
						    conf->sigma_m, conf->max_drift, cand);
		}
		if (got == 0)
			break;
		drops += got;
	}

	fe = env_min(&f, f.hull, f.nh, b, &i);
	out->sup_fwd = f.p[i];
	re = env_min(&r, r.hull, r.nh, b, &i);
	out->sup_rev = r.p[i];
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
		double bf = best_slope(&f, f.hull, f.nh, &r, r.hull, r.nh, conf->max_drift, cand);

		out->band_ns = fmax(out->half_gap_ns, 0.5 * (env_min(&f, f.hull, f.nh, bf, NULL) +
							     env_min(&r, r.hull, r.nh, bf, NULL)));
	}
	out->n_fwd = f.live;
	out->n_rev = r.live;
	out->n_outliers = drops;
	/* cand is free again and holds n + 2 doubles: enough for either side. */
	out->sigma_ns = fmax(conf->sigma_floor_ns,
			     0.5 * hypot(side_spread(&f, b, fe, conf->sigma_m, cand),
					 side_spread(&r, b, re, conf->sigma_m, cand)));
	for (i = 0; i < f.n; i++)
		if (!f.gone[i]) {
			tmin = fmin(tmin, f.p[i].t);
			tmax = fmax(tmax, f.p[i].t);
		}
	for (i = 0; i < r.n; i++)
		if (!r.gone[i]) {
			tmin = fmin(tmin, r.p[i].t);
			tmax = fmax(tmax, r.p[i].t);
		}
	/* A window of one instant says nothing about drift: 1 ns keeps the
	 * figure finite (and enormous). */
	half_span = fmax(0.5 * (tmax - tmin), 1.0);
	out->drift_sigma = out->sigma_ns / half_span;
done:
	free(pts);
	free(idx);
	free(gone);
	free(cand);
	return rc;
}

/* ---- per-path estimator ----------------------------------------------- */

int
ls_sync_est_init(struct ls_sync_est *e, const struct ls_sync_est_conf *conf, uint32_t cap)
{
	uint32_t c = 1;

	if (e == NULL || cap == 0 || cap > (1u << 30))
		return -EINVAL;
	memset(e, 0, sizeof(*e));
	if (conf != NULL)
		e->conf = *conf;
	else
		ls_sync_est_conf_default(&e->conf);
	while (c < cap)
		c <<= 1;
	e->ring = calloc(c, sizeof(*e->ring));
	e->pure = calloc(c, sizeof(*e->pure));
	e->chunk = calloc(LS_SYNC_FLOOR_CHUNKS, sizeof(*e->chunk));
	if (e->ring == NULL || e->pure == NULL || e->chunk == NULL) {
		ls_sync_est_free(e);
		return -ENOMEM;
	}
	e->cap = c;
	return 0;
}

void
ls_sync_est_free(struct ls_sync_est *e)
{
	free(e->ring);
	free(e->pure);
	free(e->chunk);
	e->ring = NULL;
	e->pure = NULL;
	e->chunk = NULL;
	e->cap = e->head = e->n = 0;
	e->chunk_head = e->chunk_n = 0;
}

void
ls_sync_est_reset(struct ls_sync_est *e)
{
	e->head = 0;
	e->n = 0;
	e->chunk_head = 0;
	e->chunk_n = 0;
	e->last_fit = 0;
}

/* Append one probe; a full ring forgets its oldest. */
static void
est_push(struct ls_sync_est *e, const struct ls_sync_probe *p, uint8_t pure)
{
	e->ring[e->head] = *p;
	e->pure[e->head] = pure;
	e->head = (e->head + 1) & (e->cap - 1);
	if (e->n < e->cap)
		e->n++;
}

void
ls_sync_est_add_pair(struct ls_sync_est *e, const struct ls_sync_probe *a,
		     const struct ls_sync_probe *b)
{
	unsigned int m = ls_sync_purity(a, b, e->conf.purity_tol_ns);

	e->pairs++;
	if (m & LS_SYNC_PURE_FWD)
		e->fwd_kept++;
	else
		e->fwd_rejected++;
	if (m & LS_SYNC_PURE_REV)
		e->rev_kept++;
	else
		e->rev_rejected++;
	est_push(e, a, (uint8_t)m);
	est_push(e, b, 0);
}

void
ls_sync_est_add_probe(struct ls_sync_est *e, const struct ls_sync_probe *p)
{
	est_push(e, p, 0);
}

/* Window length as a signed count (a window of 2^63 ns or more is "all"). */
static int64_t
est_window(const struct ls_sync_est *e)
{
	return e->conf.window_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e->conf.window_ns;
}

/* t1 in (now - window, now]? */
static bool
in_window(int64_t dt, int64_t win)
{
	return dt <= 0 && dt > -win;
}

/* ---- floor drift ------------------------------------------------------ */

/* Lower convex hull of p (sorted by pt_cmp) into h: build_hull's. */
static uint32_t
lower_hull(struct ls_sync_pt *p, uint32_t n, uint32_t *h)
{
	struct side s = {.p = p, .n = n};

	return build_hull(&s, h);
}

/*
 * One direction's new floor samples into chunk c: the lower hull of the
 * pure samples newer than the previous fit (times relative to now), at
 * most LS_SYNC_FLOOR_VERTS of its vertices (evenly, ends kept, in the rare
 * case of more: the hull of the rest lies at most a sample's jitter above).
 * tmp holds n points, h n indices.
 */
static void
keep_side(struct ls_sync_floor_chunk *c, int side, uint64_t now, double since,
	  const struct ls_sync_pt *p, uint32_t n, struct ls_sync_pt *tmp, uint32_t *h)
{
	uint32_t m = 0, nh;

	c->n[side] = 0;
	for (uint32_t i = 0; i < n; i++)
		if (p[i].t > since)
			tmp[m++] = p[i];
	if (m == 0)
		return;
	qsort(tmp, m, sizeof(*tmp), pt_cmp);
	nh = lower_hull(tmp, m, h);
	for (uint32_t i = 0; i < LS_SYNC_FLOOR_VERTS && i < nh; i++) {
		uint32_t k = nh <= LS_SYNC_FLOOR_VERTS ? i :
			     (uint32_t)((uint64_t)i * (nh - 1) / (LS_SYNC_FLOOR_VERTS - 1));
		const struct ls_sync_pt *v = &tmp[h[k]];

		c->t[side][c->n[side]] = ns_add(now, (int64_t)llround(v->t));
		c->d[side][c->n[side]] = v->d;
		c->n[side]++;
	}
}

/* The floor samples that came since the previous fit: one more chunk.
 * tmp and h hold max(nf, nr) entries. */
static void
keep_floor(struct ls_sync_est *e, uint64_t now, const struct ls_sync_pt *fp, uint32_t nf,
	   const struct ls_sync_pt *rp, uint32_t nr, struct ls_sync_pt *tmp, uint32_t *h)
{
	struct ls_sync_floor_chunk *c = &e->chunk[e->chunk_head];
	double since = e->last_fit != 0 ? (double)ns_diff(e->last_fit, now) : -INFINITY;

	if (e->last_fit != 0 && ns_diff(now, e->last_fit) <= 0)
		return; /* nothing new (the same instant fitted twice) */
	keep_side(c, 0, now, since, fp, nf, tmp, h);
	keep_side(c, 1, now, since, rp, nr, tmp, h);
	e->chunk_head = (e->chunk_head + 1) % LS_SYNC_FLOOR_CHUNKS;
	if (e->chunk_n < LS_SYNC_FLOOR_CHUNKS)
		e->chunk_n++;
	e->last_fit = now;
}

/*
 * Slope of the lower hull edge of p (sorted) that spans mid, leaving out
 * the samples in [lo, hi); *len that edge's length. h holds n indices.
 */
static double
middle_slope(const struct ls_sync_pt *p, uint32_t n, double mid, double lo, double hi,
	     struct ls_sync_pt *tmp, uint32_t *h, double *len)
{
	uint32_t m = 0, nh;

	for (uint32_t i = 0; i < n; i++)
		if (p[i].t < lo || p[i].t >= hi)
			tmp[m++] = p[i];
	nh = lower_hull(tmp, m, h);
	for (uint32_t k = 0; k + 1 < nh; k++) {
		const struct ls_sync_pt *a = &tmp[h[k]], *b = &tmp[h[k + 1]];

		if (b->t >= mid && a->t < mid) {
			*len = b->t - a->t;
			return (b->d - a->d) / (b->t - a->t);
		}
	}
	return NAN;
}

/* Quarters of the span the floor samples are refitted without. */
#define FLOOR_JACKKNIFE 4

/*
 * The slope of one direction's lower hull over the kept floor samples
 * where it spans the middle of their time, and how far it moves when any
 * quarter of the span is left out (*u; at least the wander's own slope
 * over that edge). Every sample that met no queue lies on the true line,
 * every other above it: with floors on both sides of the middle the edge
 * joins two of them and a quarter left out leaves others on that line.
 * With all of one side's floors in one stretch, the edge rests on a queued
 * sample beyond it and tilts by its queueing over its length, and leaving
 * that stretch out moves it (or leaves no edge over the middle: *u is
 * then infinite). *span is the samples' time span (ns).
 */
static double
side_slope(const struct ls_sync_est *e, int side, uint64_t now, double wander_ns, double *span,
	   double *u)
{
	struct ls_sync_pt p[LS_SYNC_FLOOR_CHUNKS * LS_SYNC_FLOOR_VERTS];
	struct ls_sync_pt tmp[LS_SYNC_FLOOR_CHUNKS * LS_SYNC_FLOOR_VERTS];
	uint32_t h[LS_SYNC_FLOOR_CHUNKS * LS_SYNC_FLOOR_VERTS], n = 0;
	double mid, s, len = 0, moved = 0;

	*span = 0;
	for (uint32_t j = 0; j < e->chunk_n; j++) {
		const struct ls_sync_floor_chunk *c = &e->chunk[j];

		for (uint32_t i = 0; i < c->n[side]; i++) {
			int64_t dt = ns_diff(c->t[side][i], now);

			if (dt > 0 || dt <= -(int64_t)LS_SYNC_FLOOR_HORIZON_NS)
				continue;
			p[n].t = (double)dt;
			p[n].d = c->d[side][i];
			n++;
		}
	}
	if (n < 2)
		return NAN;
	qsort(p, n, sizeof(*p), pt_cmp);
	*span = p[n - 1].t - p[0].t;
	mid = 0.5 * (p[0].t + p[n - 1].t);
	s = middle_slope(p, n, mid, INFINITY, INFINITY, tmp, h, &len);
	if (!isfinite(s) || !(len > 0))
		return NAN;
	for (int q = 0; q < FLOOR_JACKKNIFE; q++) {
		double lo = p[0].t + *span * q / FLOOR_JACKKNIFE;
		double hi = q + 1 == FLOOR_JACKKNIFE ? INFINITY : p[0].t + *span * (q + 1) / FLOOR_JACKKNIFE;
		double l2, sq = middle_slope(p, n, mid, lo, hi, tmp, h, &l2);

		if (!isfinite(sq)) {
			moved = INFINITY; /* this side alone does not pin it */
			break;
		}
		moved = fmax(moved, fabs(sq - s));
	}
	*u = fmax(moved, wander_ns * 1e-9 / sqrt(len * 1e-9));
	return s;
}

double
ls_sync_est_floor_drift(const struct ls_sync_est *e, uint64_t now, double wander_ns,
			double *sigma)
{
	double sf, sr, uf = NAN, ur = NAN;
	double bf = side_slope(e, 0, now, wander_ns, &sf, &uf);
	double br = -side_slope(e, 1, now, wander_ns, &sr, &ur);
	double min_span = 0.25 * (double)e->conf.window_ns;

	*sigma = NAN;
	if (!isfinite(bf) || !isfinite(br) || !(fmin(sf, sr) >= min_span))
		return NAN;
	/* The two sides' queues are independent. When one side's slope holds
	 * with any quarter left out, it is the truth within that, and the
	 * mean is off by half the other's disagreement with it. When neither
	 * holds, both may rest on a queued sample: not sure. */
	*sigma = fmax(0.5 * fabs(bf - br), fmin(uf, ur));
	if (!isfinite(*sigma)) {
		*sigma = NAN;
		return NAN;
	}
	return 0.5 * (bf + br);
}

int
ls_sync_est_fit(struct ls_sync_est *e, uint64_t now, struct ls_sync_fit *out)
{
	int64_t win = est_window(e);
	struct ls_sync_pt *fp, *rp;
	uint32_t i, nf = 0, nr = 0;
	int rc;

	/* Expire from the oldest end: the ring is in insertion order. */
	while (e->n > 0) {
		const struct ls_sync_probe *p = &e->ring[(e->head - e->n) & (e->cap - 1)];

		if (ns_diff(p->t1, now) > -win)
			break;
		e->n--;
	}

	/* fwd, rev and keep_floor's points, then its hull indices */
	fp = malloc(3 * (size_t)(e->n ? e->n : 1) * sizeof(*fp) +
		    (size_t)(e->n ? e->n : 1) * sizeof(uint32_t));
	if (fp == NULL) {
		memset(out, 0, sizeof(*out));
		e->fits_failed++;
		return -ENOMEM;
	}
	rp = fp + e->n;
	for (i = 0; i < e->n; i++) {
		uint32_t k = (e->head - e->n + i) & (e->cap - 1);
		const struct ls_sync_probe *p = &e->ring[k];
		int64_t dt = ns_diff(p->t1, now);

		if (!in_window(dt, win))
			continue;
		if (e->pure[k] & LS_SYNC_PURE_FWD) {
			fp[nf].t = (double)dt;
			fp[nf].d = (double)ns_diff(p->t2, p->t1);
			nf++;
		}
		if (e->pure[k] & LS_SYNC_PURE_REV) {
			rp[nr].t = (double)ns_diff(p->t4, now);
			rp[nr].d = (double)ns_diff(p->t4, p->t3);
			nr++;
		}
	}
	keep_floor(e, now, fp, nf, rp, nr, rp + e->n, (uint32_t *)(rp + 2 * e->n));
	rc = ls_sync_envelope_fit(fp, nf, rp, nr, &e->conf, out);
	free(fp);
	if (rc != 0) {
		e->fits_failed++;
		return rc;
	}
	out->t_ref = now;
	e->fits++;
	e->outliers += out->n_outliers;
	return 0;
}

void
ls_sync_est_baselines(const struct ls_sync_est *e, uint64_t now, double drift,
		      struct ls_sync_baseline *out)
{
	int64_t win = est_window(e), best_rtt = INT64_MAX;
	double sum = 0;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < e->n; i++) {
		const struct ls_sync_probe *p = &e->ring[(e->head - e->n + i) & (e->cap - 1)];
		int64_t f, r, rtt;
		double off;

		if (!in_window(ns_diff(p->t1, now), win))
			continue;
		f = ns_diff(p->t2, p->t1);
		r = ns_diff(p->t4, p->t3);
		rtt = f + r;
		off = 0.5 * ((double)f - (double)r) + drift * (double)ns_diff(now, p->t1);
		sum += off;
		out->n++;
		if (rtt < best_rtt) {
			best_rtt = rtt;
			out->ntp_offset_ns = off;
			out->min_rtt_ns = (double)rtt;
		}
	}
	if (out->n > 0) {
		out->ok = true;
		out->ptp_offset_ns = sum / out->n;
	}
}

/* ---- combining paths -------------------------------------------------- */

/* No figure is trusted beyond this, whatever a caller's fit claims. */
#define SIGMA_MIN 1e-6

int
ls_sync_combine(const struct ls_sync_fit *fits, unsigned int n, uint64_t t_ref,
		struct ls_sync_fit *out)
{
	double sw = 0, so = 0, sd = 0, ssig = 0, sds = 0, half = INFINITY, band = INFINITY;
	double o0 = NAN, so2 = 0, d0 = NAN, sd2 = 0, swd = 0;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++) {
		const struct ls_sync_fit *f = &fits[i];
		double dt, sig, w, wd, o;

		if (!f->ok)
			continue;
		dt = (double)ns_diff(t_ref, f->t_ref);
		/* Moving a fit along its drift costs drift_sigma per ns moved. */
		sig = fmax(hypot(f->sigma_ns, f->drift_sigma * dt), SIGMA_MIN);
		w = 1.0 / (sig * sig);
		o = f->offset_ns + f->drift * dt;
		if (isnan(o0))
			o0 = o; /* differences keep the digits (offsets ~1e7 ns) */
		sw += w;
		so += w * (o - o0);
		so2 += w * (o - o0) * (o - o0);
		/* the drift by its own figure: one path whose floors pinned its
		 * slope (ls_sync_est_floor_drift) is worth more than three
		 * whose windows tilt, whatever their offsets say */
		wd = 1.0 / fmax(f->drift_sigma * f->drift_sigma, 1e-30);
		if (isnan(d0))
			d0 = f->drift;
		swd += wd;
		sd += wd * (f->drift - d0);
		sd2 += wd * (f->drift - d0) * (f->drift - d0);
		ssig += w * sig;
		sds += wd * f->drift_sigma;
		half = fmin(half, f->half_gap_ns);
		band = fmin(band, f->band_ns);
		out->n_fwd += f->n_fwd;
		out->n_rev += f->n_rev;
		out->n_outliers += f->n_outliers;
	}
	if (sw == 0)
		return -ENODATA;
	out->ok = true;
	out->t_ref = t_ref;
	out->offset_ns = o0 + so / sw;
	out->drift = d0 + sd / swd;
	/*
	 * Not 1 / sqrt(sum w): paths to one peer share links and queues (two
	 * of four cross the same spine), so their errors are not independent.
	 * The weighted mean of their sigmas holds whatever the correlation;
	 * and where the paths disagree with each other by more than that,
	 * their spread is the better figure.
	 */
	out->sigma_ns = fmax(ssig / sw, sqrt(fmax(so2 / sw - (so / sw) * (so / sw), 0)));
	/* The same for the drift: every path sees the one clock pair, so paths
	 * that disagree on it say how far off it can be. Before a path's track
	 * spans a few seconds, a window's free slope under load tilts by
	 * (its unseen queueing) / (its span), tens of ppm, while its own
	 * figure is only its spread over its span. */
	out->drift_sigma = fmax(sds / swd, sqrt(fmax(sd2 / swd - (sd / swd) * (sd / swd), 0)));
	out->half_gap_ns = half;
	out->band_ns = band;
	return 0;
}

/* ---- network effect --------------------------------------------------- */

void
ls_sync_node_conf_default(struct ls_sync_node_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->huber_k = 3;
	c->reject_k = 10;
	c->state_timeout_ns = 3000000000ull;
	c->ref_timeout_ns = 5000000000ull;
	c->max_hops = 32;
	c->holdover_ppm = 1;
	c->asym_bound_ns = 0;
	c->sigma_floor_ns = 1;
	c->cluster_ratio = 2;
}

void
ls_sync_state_init(struct ls_sync_state *s, uint32_t node_id)
{
	memset(s, 0, sizeof(*s));
	s->node_id = node_id;
	s->hops = UINT16_MAX;
}

/* Age of a timestamp taken at then, as seen at now (future = age 0). */
static uint64_t
age(uint64_t now, uint64_t then)
{
	int64_t d = ns_diff(now, then);

	return d > 0 ? (uint64_t)d : 0;
}

static struct ls_sync_ref_seen *
ref_find(struct ls_sync_state *s, uint32_t id)
{
	unsigned int i;

	for (i = 0; i < LS_SYNC_REFS_SEEN; i++)
		if (s->refs[i].id == id)
			return &s->refs[i];
	return NULL;
}

static bool
ref_alive(struct ls_sync_state *s, const struct ls_sync_node_conf *c, uint32_t id, uint64_t now)
{
	const struct ls_sync_ref_seen *e = ref_find(s, id);

	return e != NULL && age(now, e->at) < c->ref_timeout_ns;
}

/*
 * Note an announcement of reference id at sequence seq. A reference seen for
 * the first time gets the benefit of the doubt (alive for ref_timeout); after
 * that only a rising seq keeps it alive. A full table forgets the entry that
 * has been quiet longest.
 *
 * Restart: a reference that comes back starts counting from 1, far below
 * the seq its old self died at, and would look dead until it caught up. So
 * once an entry is dead, a seq more than LS_SYNC_SEQ_RESTART behind it is
 * taken as a new incarnation. Relays lag the reference by about a round
 * per hop, so a dead reference's last values, still being repeated, differ
 * by far less than that and do not revive it.
 */
static void
ref_note(struct ls_sync_state *s, const struct ls_sync_node_conf *c, uint32_t id, uint32_t seq,
	 uint64_t now)
{
	struct ls_sync_ref_seen *e = ref_find(s, id);
	unsigned int i;

	if (e != NULL) {
		if (seq_after(seq, e->seq) ||
		    (!ref_alive(s, c, id, now) && (int32_t)(e->seq - seq) > LS_SYNC_SEQ_RESTART)) {
			e->seq = seq;
			e->at = now;
		}
		return;
	}
	e = &s->refs[0];
	for (i = 0; i < LS_SYNC_REFS_SEEN; i++) {
		if (s->refs[i].id == 0) {
			e = &s->refs[i];
			break;
		}
		if (ns_diff(s->refs[i].at, e->at) < 0)
			e = &s->refs[i];
	}
	e->id = id;
	e->seq = seq;
	e->at = now;
}

/* Fresh announcement that may speak for a reference? */
static bool
nbr_fresh(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nb, uint64_t now)
{
	return nb->has_state && age(now, nb->st_rx) <= c->state_timeout_ns;
}

static bool
nbr_announces_ref(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nb, uint64_t now)
{
	return nbr_fresh(c, nb, now) && (nb->st.flags & LS_SYNC_F_SYNCED) &&
	       nb->st.ref_id != 0 && nb->st.hops < c->max_hops;
}

/* One neighbour's offer, prepared for the robust average. */
struct cand {
	unsigned int j;         /* index into nbrs */
	double theta;           /* candidate theta_self at now */
	double phi;             /* candidate phi_self */
	double s;               /* residual scale = edge sigma (floored) */
	double w0;              /* 1 / s^2 */
	double var;             /* edge + neighbour variance of theta */
	double phi_var;         /* same for phi */
	double w;               /* final weight */
	double back;            /* two-sided minus one-sided edge, for the record */
	bool cluster;           /* shares our error: also pooled into the readings */
};

static double wmedian(struct cand *cs, unsigned int n);

/*
 * Weight of the neighbour's own (back) estimate in a two-sided edge. Even
 * while the two sigmas are within 2x of each other: that is when a bias
 * both directions share cancels. Beyond, the worse side's weight falls as
 * the square of the ratio (continuous at 2x): a side that has not seen its
 * floor for a while must not drag a clean one by half its error.
 */
static double
two_sided_weight(double s_own, double s_back)
{
	double q;

	if (!(s_own > 0) || !(s_back > 0) || !isfinite(s_own) || !isfinite(s_back))
		return isfinite(s_back) && s_back > 0 ? 0.5 : 0.0;
	q = s_back / s_own;
	if (q > 2)
		return 0.5 * (2 / q) * (2 / q);
	if (q < 0.5)
		return 1.0 - 0.5 * (2 * q) * (2 * q);
	return 0.5;
}

/*
 * Where the robust average starts: the reference's candidate when it is
 * among them and the weighted median lies beyond huber_k of its scale
 * from it, else the weighted median (sorts cs). The reference's candidate
 * does not derive from the others; when it contradicts their median, they
 * may be wrong together (ls_sync_node_update). But when it is so unsure
 * that it cannot tell them apart, starting from it only gets the sure ones
 * cut: in the first seconds at 90% load in the lab, a node whose edge to
 * the reference was 120 us off (and said 250 us) cut its neighbour's
 * candidate, 2 us from the truth, for being 60 of its own sigmas away.
 */
static double
ref_start(const struct ls_sync_node_conf *c, struct cand *cs, unsigned int n,
	  const struct ls_sync_nbr *nbrs, uint32_t ref)
{
	double med = wmedian(cs, n);

	for (unsigned int i = 0; i < n; i++)
		if (nbrs[cs[i].j].id == ref)
			return fabs(med - cs[i].theta) > c->huber_k * cs[i].s ? cs[i].theta : med;
	return med;
}

static int
cand_cmp(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	return (a->theta > b->theta) - (a->theta < b->theta);
}

/* Weighted median of the candidates' theta (sorts cs). */
static double
wmedian(struct cand *cs, unsigned int n)
{
	double tot = 0, acc = 0;
	unsigned int i;

	qsort(cs, n, sizeof(*cs), cand_cmp);
	for (i = 0; i < n; i++)
		tot += cs[i].w0;
	for (i = 0; i < n; i++) {
		acc += cs[i].w0;
		if (acc >= 0.5 * tot)
			return cs[i].theta;
	}
	return cs[n - 1].theta;
}

/*
 * Iteratively reweighted mean from start, until a step is below tol. Weight
 * factor by |r|/s: 1 up to huber_k, huber_k s/|r| beyond, and (when
 * redescend) 0 beyond reject_k. Leaves the final weights in cs[].w; returns
 * the estimate.
 */
static double
irls(const struct ls_sync_node_conf *c, struct cand *cs, unsigned int n, double start,
     bool redescend, double tol)
{
	double est = start;
	int it;

	for (it = 0; it < 50; it++) {
		double sw = 0, swr = 0, step;
		unsigned int i;

		for (i = 0; i < n; i++) {
			double r = cs[i].theta - est, u = fabs(r) / cs[i].s, h = 1;

			if (u > c->huber_k)
				h = (redescend && u > c->reject_k) ? 0 : c->huber_k / u;
			cs[i].w = cs[i].w0 * h;
			sw += cs[i].w;
			swr += cs[i].w * r;
		}
		if (sw == 0)
			break;
		/* Step by the weighted mean residual: the candidates are ~1e7 ns
		 * but agree to ~1 ns, so averaging residuals keeps the digits. */
		step = swr / sw;
		est += step;
		if (fabs(step) < tol)
			break;
	}
	/* Final weights at the final estimate. */
	for (unsigned int i = 0; i < n; i++) {
		double u = fabs(cs[i].theta - est) / cs[i].s, h = 1;

		if (u > c->huber_k)
			h = (redescend && u > c->reject_k) ? 0 : c->huber_k / u;
		cs[i].w = cs[i].w0 * h;
	}
	return est;
}

/*
 * irls with cuts from start; total weight in *sw. When everyone disagrees
 * with everyone (all cut), there is no basis to cut anyone: plain Huber
 * from fallback (NAN: the weighted median).
 */
static double
cut_or_huber(const struct ls_sync_node_conf *c, struct cand *cs, unsigned int n, double start,
	     double fallback, double tol, double *sw)
{
	double est = irls(c, cs, n, start, true, tol);
	unsigned int i;

	*sw = 0;
	for (i = 0; i < n; i++)
		*sw += cs[i].w;
	if (*sw == 0) {
		est = irls(c, cs, n, isnan(fallback) ? wmedian(cs, n) : fallback, false, tol);
		for (i = 0; i < n; i++)
			*sw += cs[i].w;
	}
	return est;
}

/*
 * The robust average of the candidates' values (theta; phi_average puts
 * their phi there): from ref_start, cut_or_huber.
 */
static double
robust_average(const struct ls_sync_node_conf *c, struct cand *cs, unsigned int n,
	       const struct ls_sync_nbr *nbrs, uint32_t ref, double tol, double *sw)
{
	return cut_or_huber(c, cs, n, ref_start(c, cs, n, nbrs, ref), NAN, tol, sw);
}

/* Steps below which the robust averages stop: 1e-9 ns, 1e-18 of drift. */
#define THETA_TOL 1e-9
#define PHI_TOL 1e-18
/* No drift figure is trusted beyond this (1e-6 ppm). */
#define PHI_SIGMA_MIN 1e-12

/*
 * The node's drift: the candidates theta kept, averaged by the same robust
 * mean as theta but on their own scale, the drift's uncertainty. Not by
 * theta's weight: a neighbour close in offset (an unloaded edge) can still
 * be unsure of its drift (it derives from edges that are not), and its
 * theta moves along its phi between steps. Weighted by theta, a group
 * joined to the rest by weak edges shares one wrong drift and walks off
 * along it. Robust, starting from the reference's candidate, for the same
 * reason as theta: in the first seconds at 90% load in the lab, the nodes
 * of the far leaf all claimed one drift 1 to 2 ppm off within 0.1 ppm, and
 * averaged in by inverse variance they dragged the reference's own leaf,
 * whose edges to it are clean, half a microsecond off at every step.
 * The sigma is the weighted mean of the candidates' sigmas, for the reason
 * theta's is (no vouching; ls_sync_node_update). tmp holds nc candidates.
 */
static double
phi_average(const struct ls_sync_node_conf *c, const struct cand *cs, unsigned int nc,
	    struct cand *tmp, const struct ls_sync_nbr *nbrs, uint32_t ref, double *sigma)
{
	double est, sw = 0, ss = 0;
	unsigned int i, m = 0;

	for (i = 0; i < nc; i++) {
		if (cs[i].w == 0)
			continue;
		tmp[m] = cs[i];
		tmp[m].theta = cs[i].phi;
		tmp[m].s = fmax(sqrt(cs[i].phi_var), PHI_SIGMA_MIN);
		tmp[m].w0 = 1.0 / (tmp[m].s * tmp[m].s);
		m++;
	}
	est = robust_average(c, tmp, m, nbrs, ref, PHI_TOL, &sw);
	for (i = 0; i < m; i++)
		ss += tmp[i].w * tmp[i].s;
	*sigma = sw > 0 ? ss / sw : PHI_SIGMA_MIN;
	return est;
}

/*
 * The sigma a node's own readings promise. The averaged sigma comes from
 * the neighbours' own sigmas, and neighbours joined to each other by good
 * edges but to the reference only by bad ones vouch for each other: at 90%
 * load in the lab the bound held the truth in 70% of readings. So the
 * promise must also cover the anchor, the candidate closest to the
 * reference (fewest hops, then least scale; the reference itself when it
 * is a neighbour): the truth is within 3 scale of it if its bound holds,
 * and the estimate is |est - anchor| from it. Only the reading uses it:
 * announced, it weakened the ties that hold a group together and made
 * loaded runs worse.
 */
static double
anchored_sigma(const struct cand *cs, unsigned int n, const struct ls_sync_nbr *nbrs,
	       double est)
{
	const struct cand *a = NULL;

	for (unsigned int i = 0; i < n; i++) {
		const struct cand *k = &cs[i];
		uint16_t h = nbrs[k->j].st.hops;

		if (a == NULL || h < nbrs[a->j].st.hops ||
		    (h == nbrs[a->j].st.hops && k->s < a->s))
			a = k;
	}
	if (a == NULL)
		return 0;
	return (fabs(est - a->theta) + 3.0 * a->s) / 3.0;
}

/*
 * A node's cluster: neighbours whose own sigma is more than cluster_ratio
 * times our edge's to them. Such a neighbour sits behind the same weak
 * links as we do (a rack-mate across loaded spines): our edge to it is far
 * surer than either of us knows where the fleet is. In the announced
 * average it is one candidate among the others, at the weight of its own
 * sigma, so each node of a leaf settles between what its own edges say and
 * what its neighbours' do (at equal weights, halfway), and the leaf's nodes
 * sit apart by about half of what their own edges disagree by. At 90% load
 * in the lab the far leaf's three nodes sat up to 4 us apart while the
 * edges between them agreed to 0.3 us, and the mean of the three converged
 * seconds before any one of them did. So a node's readings, not its
 * announcement, are the robust average of its theta and its cluster
 * neighbours' thetas through our edges: every member reads about the
 * members' mean, and they agree to within their edges and one step's
 * movement. Announced, the pool would count each neighbour twice (it is
 * already a candidate) and feed back around the leaf: the vouching
 * ls_sync_node_update avoids. The reference is never in a cluster (its
 * sigma is 0). tmp holds 1 + nk entries; the members' pool weights are
 * left in tmp[1 + i].w.
 */
static double
cluster_pool(const struct ls_sync_node_conf *c, double est, double sigma,
	     const struct cand *ks, unsigned int nk, struct cand *tmp, double *pool_sigma,
	     unsigned int *members)
{
	double pooled, sw = 0, ss = 0;
	unsigned int i, m = 0;

	tmp[m].j = UINT_MAX; /* ourselves (irls reads no j) */
	tmp[m].theta = est;
	tmp[m].s = sigma;
	tmp[m].w0 = 1.0 / (sigma * sigma);
	m++;
	for (i = 0; i < nk; i++)
		tmp[m++] = ks[i];
	/* From our own theta: a member far off, and saying it is sure, is cut
	 * like any other candidate. */
	pooled = cut_or_huber(c, tmp, m, est, est, THETA_TOL, &sw);
	*members = 0;
	for (i = 0; i < m; i++) {
		ss += tmp[i].w * tmp[i].s;
		if (i > 0 && tmp[i].w > 0)
			(*members)++;
	}
	/* no vouching: the weighted mean of the members' sigmas */
	*pool_sigma = sw > 0 ? ss / sw : sigma;
	return sw > 0 ? pooled : est;
}

/*
 * Pick the reference. Returns 0 when this node should wait: it would elect
 * itself, but a fresh neighbour has a lower id and will (or will defer to
 * someone lower still) announce itself within a round. Without that pause,
 * when a reference dies every node times it out in the same round and each
 * one would be the reference for a round.
 */
static uint32_t
elect(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs, unsigned int n,
      uint64_t now, struct ls_sync_state *s)
{
	uint32_t ref = c->self_id;
	unsigned int j;

	if (c->reference_id != 0)
		return c->reference_id;
	for (j = 0; j < n; j++) {
		const struct ls_sync_nbr *nb = &nbrs[j];

		if (nbr_announces_ref(c, nb, now) && nb->st.ref_id < ref &&
		    ref_alive(s, c, nb->st.ref_id, now))
			ref = nb->st.ref_id;
	}
	if (ref != c->self_id)
		return ref;
	for (j = 0; j < n; j++)
		if (nbr_fresh(c, &nbrs[j], now) && nbrs[j].st.node_id != 0 &&
		    nbrs[j].st.node_id < c->self_id)
			return 0;
	return ref;
}

/*
 * Synced to another reference, and no neighbour heard from within
 * state_timeout: this node is cut off, not the last one standing. Taking
 * the role alone would make fleet time its own clock, a jump of its whole
 * offset (6 ms in the integration test's lab) under a bound of a few us
 * that no longer holds the truth; holding over on the old reference's
 * timeline keeps the readings right and the bound honest, widening with
 * time (found by the integration test cutting a host's only link).
 */
static bool
cut_off(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs, unsigned int n,
	uint64_t now, const struct ls_sync_state *s)
{
	if (!(s->flags & LS_SYNC_F_SYNCED) || (s->flags & LS_SYNC_F_REF) ||
	    s->ref_id == c->self_id)
		return false;
	for (unsigned int j = 0; j < n; j++)
		if (nbr_fresh(c, &nbrs[j], now))
			return false;
	return true;
}

/*
 * Take or keep the reference role. Fleet time is the reference's mapping of
 * its own clock, local - (theta + phi * (local - t0)). A node that takes
 * the role while synced to another reference (the old one died, or a
 * partition elected it) keeps the mapping it had, cluster share included:
 * fleet time carries on along the old reference's timeline, at the rate it
 * had, instead of stepping to this node's raw clock (a step of the whole
 * offset between the two clocks, milliseconds in the lab, under bounds of a
 * few us on both sides). A node that was not synced starts the timeline at
 * its own clock. Either way the mapping is then fixed: theta moves along phi
 * and nothing steers it, so the reference's readings are fleet time by
 * definition (sigma 0).
 */
static void
become_reference(const struct ls_sync_node_conf *c, uint64_t now, struct ls_sync_state *s)
{
	bool was_ref = (s->flags & LS_SYNC_F_REF) && s->ref_id == c->self_id;

	if (was_ref || (s->flags & LS_SYNC_F_SYNCED)) {
		s->theta_ns += s->phi * (double)ns_diff(now, s->t0);
		if (!was_ref)
			s->theta_ns += s->cluster_ns;
	} else {
		s->theta_ns = 0;
		s->phi = 0;
	}
	if (!was_ref) {
		/* Taking (or retaking, after a restart) the role: continue
		 * above any ref_seq the mesh still repeats for us, or the
		 * others would see our ref_seq "not rising" and call us dead. */
		const struct ls_sync_ref_seen *e = ref_find(s, c->self_id);
		uint32_t seq = s->ref_id == c->self_id ? s->ref_seq : 0;

		if (e != NULL && seq_after(e->seq, seq))
			seq = e->seq;
		s->ref_seq = seq;
	}
	s->ref_seq++;
	s->ref_id = c->self_id;
	s->ref_seq_at = now;
	s->hops = 0;
	s->flags = LS_SYNC_F_SYNCED | LS_SYNC_F_REF;
	s->t0 = now;
	s->t_good = now;
	s->sigma_ns = 0;
	s->phi_sigma = 0;
	s->bound_sigma_ns = 0;
	s->cluster_ns = 0;
	s->cluster_n = 0;
}

int
ls_sync_node_update(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs,
		    unsigned int n, uint64_t now, struct ls_sync_state *s,
		    struct ls_sync_nbr_use *use)
{
	double floor_ns = c->sigma_floor_ns > 0 ? c->sigma_floor_ns : SIGMA_MIN;
	struct cand *cs = NULL;
	unsigned int j, nc = 0, used = 0;
	uint32_t ref;

	if (use != NULL)
		memset(use, 0, n * sizeof(*use));
	s->node_id = c->self_id;

	/* Who is still alive: every fresh announcement of a reference counts,
	 * except from nodes in holdover, which repeat an old ref_seq. */
	for (j = 0; j < n; j++)
		if (nbr_announces_ref(c, &nbrs[j], now) &&
		    !(nbrs[j].st.flags & LS_SYNC_F_HOLDOVER))
			ref_note(s, c, nbrs[j].st.ref_id, nbrs[j].st.ref_seq, now);

	ref = elect(c, nbrs, n, now, s);
	if (ref != 0 && ref == c->self_id) {
		if (!cut_off(c, nbrs, n, now, s)) {
			become_reference(c, now, s);
			return 0;
		}
		ref = 0; /* hold over, below */
	}

	if (ref != 0 && ref_alive(s, c, ref, now) && n > 0)
		cs = malloc((3 * n + 1) * sizeof(*cs)); /* then phi_average's, cluster_pool's */
	for (j = 0; cs != NULL && j < n; j++) {
		const struct ls_sync_nbr *nb = &nbrs[j];
		const struct ls_sync_state *st = &nb->st;
		struct cand *k = &cs[nc];
		double dt_e, o, dt_n, se, sn, dd, se_two = nb->edge.sigma_ns, dd_apart = 0;

		if (!nbr_announces_ref(c, nb, now) || st->ref_id != ref ||
		    (st->flags & LS_SYNC_F_HOLDOVER) || !nb->has_edge || !nb->edge.ok)
			continue;
		/* Our edge at now: o = local_nbr - local_self. */
		dt_e = (double)ns_diff(now, nb->edge.t_ref);
		o = nb->edge.offset_ns + nb->edge.drift * dt_e;
		/* The neighbour's clock reads now + o; its theta there. st->t0 is
		 * on its clock, so difference the integers, then add o. */
		dt_n = (double)ns_diff(now, st->t0) + o;
		if (st->flags & LS_SYNC_F_EDGE) {
			/* Its own estimate of the edge, from its probes to us: the
			 * same edge negated. Averaging the two directions cancels
			 * any bias both ends' measurements share, so they are
			 * averaged evenly while their sigmas are alike; when one
			 * side is much worse (it has not seen its floor in a
			 * while: ls_sync_track), by inverse variance. */
			double back = st->edge_back_ns + st->edge_back_drift * dt_n;
			double b = st->edge_back_drift;
			double w = two_sided_weight(nb->edge.sigma_ns, st->edge_back_sigma);
			double apart = fabs(o + back); /* the two sides' disagreement */

			k->back = -w * (o + back);
			o = (1.0 - w) * o - w * back;
			/* its drift is per tick of its clock: -b / (1 + b) per ours */
			dd = (1.0 - w) * nb->edge.drift - w * b / (1.0 + b);
			se_two = sqrt((1.0 - w) * (1.0 - w) * nb->edge.sigma_ns * nb->edge.sigma_ns +
				      w * w * st->edge_back_sigma * st->edge_back_sigma);
			/*
			 * The two sides measure one quantity with different
			 * probes: when they disagree, one of them is that far
			 * off and nothing says which, so the mix is off by up
			 * to the larger share of the disagreement, and its
			 * sigma is at least half that (the 3 sigma bound then
			 * covers it with room to spare). At 90% load
			 * a side that had never seen one of its floors claimed
			 * 0.4 us while 14 us off, and its neighbour's side said
			 * so.
			 */
			se_two = fmax(se_two, fmax(w, 1.0 - w) * apart / 2.0);
			/* Likewise the drift: the wire carries no sigma for the
			 * neighbour's, so their disagreement is what says how far
			 * the mix can be off. After a restart in the lab, the
			 * reference's fit of the restarted node was 40 ppm off
			 * for seconds while ours claimed 0.2 ppm, and the mix,
			 * 3 ppm off, claimed 0.2 and cut the right candidates. */
			dd_apart = fmax(w, 1.0 - w) * fabs(nb->edge.drift + b / (1.0 + b)) / 2.0;
		} else {
			dd = nb->edge.drift;
			k->back = 0;
		}
		k->j = j;
		k->theta = st->theta_ns + st->phi * dt_n - o;
		/* d theta_self / d local_self: the neighbour's phi is per tick of
		 * its clock, which runs (1 + drift) times ours. The product term
		 * is 1e-8 at 100 ppm each: 100 ns over 10 s, not negligible. */
		k->phi = st->phi * (1.0 + dd) - dd;
		se = hypot(fmax(se_two, floor_ns), nb->edge.drift_sigma * dt_e);
		sn = hypot(st->sigma_ns, st->phi_sigma * dt_n);
		k->var = se * se + sn * sn;
		k->phi_var = nb->edge.drift_sigma * nb->edge.drift_sigma + dd_apart * dd_apart +
			     st->phi_sigma * st->phi_sigma;
		/*
		 * Residuals are judged against the candidate's whole
		 * uncertainty, the neighbour's own included: a candidate that
		 * came through a non-reference neighbour carries that node's
		 * error too. Judging by the edge alone let a consensus of the
		 * reference's descendants cut the reference's own edge, after
		 * which they drifted together with nothing to hold them.
		 */
		k->s = fmax(sqrt(k->var), floor_ns);
		/*
		 * And weighted by the same figure. Weighted by the edge alone,
		 * a neighbour far off but unsure of itself (a wide scale) still
		 * pulled like a clean edge: at 90% load two nodes on one leaf,
		 * each a few sigma inside the other's wide scale, moved the
		 * estimate off the reference's candidate, whose narrow scale
		 * then cut it, and the two followed each other 300 us away.
		 */
		k->w0 = 1.0 / (k->s * k->s);
		/* shares our error: pooled into our readings (cluster_pool) */
		k->cluster = c->cluster_ratio > 0 && sn > c->cluster_ratio * se;
		if (!isfinite(k->theta) || !isfinite(k->phi))
			continue;
		nc++;
	}

	if (nc > 0) {
		double est, sw = 0, ssig = 0;
		uint16_t hops = UINT16_MAX;
		uint32_t seq = 0;
		bool seq_set = false;
		unsigned int i, nk = 0;

		/*
		 * Start from the reference's own candidate when it is a
		 * neighbour, else from the weighted median. The other
		 * candidates all derive from the reference through their
		 * nodes: when several of those are wrong together (a neighbour
		 * that just restarted, its errors passed on), their median
		 * would win and cut the reference's edge, and the non-reference
		 * nodes would then drift off as one with nothing to hold them.
		 * The price: an edge to the reference that is itself bad is not
		 * voted down by the nodes that derive from it, unless it says
		 * so (ref_start).
		 */
		est = robust_average(c, cs, nc, nbrs, ref, THETA_TOL, &sw);
		for (i = 0; i < nc; i++) {
			const struct ls_sync_state *st = &nbrs[cs[i].j].st;
			double w = cs[i].w;

			if (use != NULL) {
				struct ls_sync_nbr_use *u = &use[cs[i].j];

				u->used = w > 0;
				u->weight = w;
				u->residual_ns = cs[i].theta - est;
				u->rejected = w == 0;
				u->scale_ns = cs[i].s;
				u->back_ns = cs[i].back;
			}
			if (w == 0)
				continue;
			used++;
			ssig += w * cs[i].s;
			if (st->hops < hops)
				hops = st->hops;
			if (!seq_set || seq_after(st->ref_seq, seq)) {
				seq = st->ref_seq;
				seq_set = true;
			}
		}
		if (used > 0 && sw > 0) {
			const struct ls_sync_ref_seen *e = ref_find(s, ref);
			double pooled = est, pool_sigma;
			unsigned int members = 0;

			s->theta_ns = est;
			s->phi = phi_average(c, cs, nc, cs + n, nbrs, ref, &s->phi_sigma);
			/*
			 * The weighted mean of the candidates' sigmas, not the
			 * inverse-variance sigma 1/sqrt(sum w): the candidates are
			 * not independent (all derive from the reference, often
			 * through each other), and the latter let two neighbours
			 * vouch for each other, each round shrinking both sigmas
			 * until any loaded edge looked clean. |sum w e| <= sum w |e|
			 * holds whatever the correlation, so a node's sigma never
			 * claims more than its candidates do.
			 */
			s->sigma_ns = fmax(ssig / sw, floor_ns);
			pool_sigma = s->sigma_ns;
			for (i = 0; i < nc; i++)
				if (cs[i].cluster)
					cs[2 * n + 1 + nk++] = cs[i];
			if (nk > 0) {
				pooled = cluster_pool(c, est, s->sigma_ns, cs + 2 * n + 1, nk, cs + n,
						      &pool_sigma, &members);
				for (i = 0; use != NULL && i < nk; i++) {
					const struct cand *k = &cs[n + 1 + i];

					use[k->j].cluster = true;
					use[k->j].cluster_weight = k->w;
				}
			}
			s->cluster_ns = pooled - est;
			s->cluster_n = (uint16_t)members;
			s->bound_sigma_ns = fmax(fmax(s->sigma_ns, pool_sigma),
						 anchored_sigma(cs, nc, nbrs, pooled));
			s->hops = hops < UINT16_MAX ? (uint16_t)(hops + 1) : UINT16_MAX;
			s->ref_id = ref;
			s->ref_seq = seq;
			s->ref_seq_at = e != NULL ? e->at : now;
			s->flags = LS_SYNC_F_SYNCED;
			s->t0 = now;
			s->t_good = now;
			free(cs);
			return (int)used;
		}
		used = 0;
	}
	free(cs);

	if (s->flags & LS_SYNC_F_SYNCED) {
		/* Holdover: carry theta along phi to now so the announcement stays
		 * anchored near the present; sigma stays, the reading's bound
		 * grows with now - t_good instead. */
		s->theta_ns += s->phi * (double)ns_diff(now, s->t0);
		s->t0 = now;
		s->flags = LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER;
	} else {
		s->t0 = now;
		s->flags = 0;
		s->ref_id = 0;
		s->hops = UINT16_MAX;
	}
	return 0;
}

/* ---- reading fleet time ----------------------------------------------- */

void
ls_sync_fleet_read(const struct ls_sync_state *s, const struct ls_sync_node_conf *c,
		   uint64_t local_ns, struct ls_sync_reading *out)
{
	double corr, half, el;
	uint64_t h;

	memset(out, 0, sizeof(*out));
	out->flags = s->flags;
	if (!(s->flags & LS_SYNC_F_SYNCED)) {
		out->fleet_ns = local_ns;
		out->earliest_ns = 0;
		out->latest_ns = UINT64_MAX;
		out->half_ns = (double)(UINT64_MAX / 2);
		return;
	}
	/* The correction is small (ms) even when the clocks are 1.7e18: form it
	 * in double from an integer difference, round, then subtract as an
	 * integer so the reading keeps every ns. */
	corr = s->theta_ns + s->cluster_ns + s->phi * (double)ns_diff(local_ns, s->t0);
	if (!(fabs(corr) < 9.2e18))
		corr = corr > 0 ? 9.2e18 : -9.2e18;
	out->fleet_ns = ns_add(local_ns, -(int64_t)llround(corr));

	el = fabs((double)ns_diff(local_ns, s->t_good));
	half = 3.0 * fmax(s->sigma_ns, s->bound_sigma_ns) + c->asym_bound_ns +
	       (3.0 * s->phi_sigma + c->holdover_ppm * 1e-6) * el;
	if (!(half >= 0))
		half = isnan(half) ? INFINITY : 0;
	out->half_ns = half;
	h = half >= 1.8e19 ? UINT64_MAX : (uint64_t)ceil(half);
	out->earliest_ns = out->fleet_ns < h ? 0 : out->fleet_ns - h;
	out->latest_ns = out->fleet_ns > UINT64_MAX - h ? UINT64_MAX : out->fleet_ns + h;
}

/* ---- wire form -------------------------------------------------------- */

static void
put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void
put32(uint8_t *b, uint32_t v)
{
	put16(b, (uint16_t)(v >> 16));
	put16(b + 2, (uint16_t)v);
}

static void
put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static uint16_t
get16(const uint8_t *b)
{
	return (uint16_t)((b[0] << 8) | b[1]);
}

static uint32_t
get32(const uint8_t *b)
{
	return ((uint32_t)get16(b) << 16) | get16(b + 2);
}

static uint64_t
get64(const uint8_t *b)
{
	return ((uint64_t)get32(b) << 32) | get32(b + 4);
}

/* v in units, rounded, saturated to int64; NaN -> 0. */
static int64_t
sat_i64(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 9223372036854775808.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return llround(v);
}

/* v in units, rounded, saturated to int32; NaN -> 0. */
static int32_t
sat_i32(double v)
{
	int64_t x = sat_i64(v);

	return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
}

/* v in units, rounded, saturated to uint32; NaN -> max (unknown = worst). */
static uint32_t
sat_u32(double v)
{
	if (isnan(v) || v >= 4294967295.0)
		return UINT32_MAX;
	if (v <= 0)
		return 0;
	return (uint32_t)llround(v);
}

#define WIRE_VERSION 2 /* 2: edge_back_drift int32, edge_back_sigma */

void
ls_sync_wire_encode(const struct ls_sync_state *s, uint8_t *buf)
{
	buf[0] = WIRE_VERSION;
	buf[1] = s->flags;
	put16(buf + 2, s->hops);
	put32(buf + 4, s->node_id);
	put32(buf + 8, s->ref_id);
	put32(buf + 12, s->ref_seq);
	put64(buf + 16, s->t0);
	put64(buf + 24, (uint64_t)sat_i64(s->theta_ns * 256.0));
	put64(buf + 32, (uint64_t)sat_i64(s->phi * 1e15));
	put32(buf + 40, sat_u32(s->sigma_ns * 256.0));
	put32(buf + 44, sat_u32(s->phi_sigma * 1e12));
	put64(buf + 48, (uint64_t)sat_i64(s->edge_back_ns * 256.0));
	put32(buf + 56, (uint32_t)sat_i32(s->edge_back_drift * 1e12));
	put32(buf + 60, sat_u32(s->edge_back_sigma * 256.0));
}

void
ls_sync_wire_put_edge(uint8_t *buf, double edge_ns, double drift, double sigma_ns)
{
	buf[1] |= LS_SYNC_F_EDGE;
	put64(buf + 48, (uint64_t)sat_i64(edge_ns * 256.0));
	put32(buf + 56, (uint32_t)sat_i32(drift * 1e12));
	put32(buf + 60, sat_u32(sigma_ns * 256.0));
}

int
ls_sync_wire_decode(const uint8_t *buf, struct ls_sync_state *s)
{
	unsigned int i;

	for (i = 0; i < LS_SYNC_WIRE_LEN && buf[i] == 0; i++)
		;
	if (i == LS_SYNC_WIRE_LEN || buf[0] != WIRE_VERSION)
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	s->flags = buf[1];
	s->hops = get16(buf + 2);
	s->node_id = get32(buf + 4);
	s->ref_id = get32(buf + 8);
	s->ref_seq = get32(buf + 12);
	s->t0 = get64(buf + 16);
	s->theta_ns = (double)(int64_t)get64(buf + 24) / 256.0;
	s->phi = (double)(int64_t)get64(buf + 32) * 1e-15;
	s->sigma_ns = (double)get32(buf + 40) / 256.0;
	s->phi_sigma = (double)get32(buf + 44) * 1e-12;
	s->edge_back_ns = (double)(int64_t)get64(buf + 48) / 256.0;
	s->edge_back_drift = (double)(int32_t)get32(buf + 56) * 1e-12;
	s->edge_back_sigma = (double)get32(buf + 60) / 256.0;
	return 0;
}
