/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-path estimator: a window of probes, fitted (ls_sync_fit.c), the
 * floor samples it met kept for the drift (floor drift), and several
 * paths' fits combined into one edge.
 *
 * A power-of-2 ring of probes in insertion order, so expiring is popping
 * from the tail. All clock values are uint64 ns of sim or real clocks
 * (~1.7e18); they are differenced as integers before any double sees them,
 * so a double's 53 bits only ever hold seconds' worth of ns.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_sync_priv.h"

/* ---- per-path estimator ----------------------------------------------- */

/* Floor chunk vertices a direction for a ring of cap probes (ls_sync.h). */
static uint32_t
floor_verts_for(uint32_t cap)
{
	uint32_t v = cap / 32;

	return v < 2 ? 2 : v > LS_SYNC_FLOOR_VERTS ? LS_SYNC_FLOOR_VERTS : v;
}

/*
 * Room for verts vertices per chunk and direction, the held ones moved
 * over. On failure the old layout stays and the caller keeps fewer.
 */
static int
floor_resize(struct ls_sync_est *e, uint32_t verts)
{
	size_t slots = (size_t)LS_SYNC_FLOOR_CHUNKS * 2 * verts;
	uint64_t *t = malloc(slots * (sizeof(*t) + sizeof(double)));
	double *d;

	if (t == NULL)
		return -ENOMEM;
	d = (double *)(t + slots);
	for (uint32_t j = 0; j < LS_SYNC_FLOOR_CHUNKS && e->floor_t != NULL; j++)
		for (int s = 0; s < 2; s++) {
			size_t from = (2 * (size_t)j + s) * e->verts, to = (2 * (size_t)j + s) * verts;

			memcpy(&t[to], &e->floor_t[from], e->floor_n[j][s] * sizeof(*t));
			memcpy(&d[to], &e->floor_d[from], e->floor_n[j][s] * sizeof(*d));
		}
	free(e->floor_t);
	e->floor_t = t;
	e->floor_d = d;
	e->verts = verts;
	return 0;
}

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
	if (e->ring != NULL && e->pure != NULL && floor_resize(e, floor_verts_for(c)) == 0) {
		e->cap = c;
		return 0;
	}
	ls_sync_est_free(e);
	return -ENOMEM;
}

void
ls_sync_est_free(struct ls_sync_est *e)
{
	free(e->ring);
	free(e->pure);
	free(e->floor_t);
	e->ring = NULL;
	e->pure = NULL;
	e->floor_t = NULL;
	e->floor_d = NULL;
	e->cap = e->head = e->n = 0;
	e->verts = 0;
	e->chunk_head = e->chunk_n = 0;
	memset(e->floor_n, 0, sizeof(e->floor_n));
}

size_t
ls_sync_est_bytes(const struct ls_sync_est *e)
{
	return (size_t)e->cap * (sizeof(*e->ring) + sizeof(*e->pure)) +
	       (size_t)LS_SYNC_FLOOR_CHUNKS * 2 * e->verts * (sizeof(*e->floor_t) + sizeof(*e->floor_d));
}

void
ls_sync_est_reset(struct ls_sync_est *e)
{
	e->head = 0;
	e->n = 0;
	e->chunk_head = 0;
	e->chunk_n = 0;
	memset(e->floor_n, 0, sizeof(e->floor_n));
	e->last_fit = 0;
}

int
ls_sync_est_resize(struct ls_sync_est *e, uint64_t window_ns, uint32_t cap)
{
	struct ls_sync_probe *ring;
	uint8_t *pure;
	uint32_t c = 1, n;

	if (e == NULL || window_ns == 0 || cap == 0 || cap > (1u << 30))
		return -EINVAL;
	while (c < cap)
		c <<= 1;
	if (c != e->cap) {
		ring = calloc(c, sizeof(*ring));
		pure = calloc(c, sizeof(*pure));
		if (ring == NULL || pure == NULL) {
			free(ring);
			free(pure);
			return -ENOMEM;
		}
		/* the newest n, oldest first, at 0..n-1 */
		n = e->n < c ? e->n : c;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t k = (e->head - n + i) & (e->cap - 1);

			ring[i] = e->ring[k];
			pure[i] = e->pure[k];
		}
		free(e->ring);
		free(e->pure);
		e->ring = ring;
		e->pure = pure;
		e->cap = c;
		e->n = n;
		e->head = n & (c - 1);
	}
	e->conf.window_ns = window_ns;
	return 0;
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

/*
 * One direction's new floor samples into chunk j: the lower hull of the
 * pure samples newer than the previous fit (times relative to now). A hull
 * of more vertices than the chunks hold grows them (to
 * LS_SYNC_FLOOR_VERTS), so every vertex is kept as it would be with the
 * full size from the start. Past LS_SYNC_FLOOR_VERTS, or when growing
 * fails, evenly spaced vertices are kept, ends included: the rare case of
 * a hull that dense, whose dropped vertices lie at most a sample's jitter
 * below the chords between the kept ones (the rule before the chunks were
 * sized). tmp holds n points, h n indices.
 */
static void
keep_side(struct ls_sync_est *e, uint32_t j, int side, uint64_t now, double since,
	  const struct ls_sync_pt *p, uint32_t n, struct ls_sync_pt *tmp, uint32_t *h)
{
	uint32_t m = 0, nh, v;
	size_t base;

	e->floor_n[j][side] = 0;
	for (uint32_t i = 0; i < n; i++)
		if (p[i].t > since)
			tmp[m++] = p[i];
	if (m == 0)
		return;
	qsort(tmp, m, sizeof(*tmp), ls_sync_pt_cmp);
	nh = ls_sync_lower_hull(tmp, m, h);
	if (nh > e->verts && e->verts < LS_SYNC_FLOOR_VERTS) {
		v = nh > 2 * e->verts ? nh : 2 * e->verts;
		(void)floor_resize(e, v < LS_SYNC_FLOOR_VERTS ? v : LS_SYNC_FLOOR_VERTS);
	}
	v = e->verts;
	base = (2 * (size_t)j + side) * v;
	for (uint32_t i = 0; i < v && i < nh; i++) {
		uint32_t k = nh <= v ? i : (uint32_t)((uint64_t)i * (nh - 1) / (v - 1));
		const struct ls_sync_pt *q = &tmp[h[k]];

		e->floor_t[base + i] = ns_add(now, (int64_t)llround(q->t));
		e->floor_d[base + i] = q->d;
		e->floor_n[j][side]++;
	}
}

/* The floor samples that came since the previous fit: one more chunk.
 * tmp and h hold max(nf, nr) entries. */
static void
keep_floor(struct ls_sync_est *e, uint64_t now, const struct ls_sync_pt *fp, uint32_t nf,
	   const struct ls_sync_pt *rp, uint32_t nr, struct ls_sync_pt *tmp, uint32_t *h)
{
	double since = e->last_fit != 0 ? (double)ns_diff(e->last_fit, now) : -INFINITY;

	if (e->last_fit != 0 && ns_diff(now, e->last_fit) <= 0)
		return; /* nothing new (the same instant fitted twice) */
	keep_side(e, e->chunk_head, 0, now, since, fp, nf, tmp, h);
	keep_side(e, e->chunk_head, 1, now, since, rp, nr, tmp, h);
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
	nh = ls_sync_lower_hull(tmp, m, h);
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
		size_t base = (2 * (size_t)j + side) * e->verts;

		for (uint32_t i = 0; i < e->floor_n[j][side]; i++) {
			int64_t dt = ns_diff(e->floor_t[base + i], now);

			if (dt > 0 || dt <= -(int64_t)LS_SYNC_FLOOR_HORIZON_NS)
				continue;
			p[n].t = (double)dt;
			p[n].d = e->floor_d[base + i];
			n++;
		}
	}
	if (n < 2)
		return NAN;
	qsort(p, n, sizeof(*p), ls_sync_pt_cmp);
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

int
ls_sync_combine(const struct ls_sync_fit *fits, unsigned int n, uint64_t t_ref,
		struct ls_sync_fit *out)
{
	double sw = 0, so = 0, sd = 0, ssig = 0, sds = 0, half = INFINITY, band = INFINITY;
	double o0 = NAN, so2 = 0, d0 = NAN, sd2 = 0, swd = 0, slag = 0;
	unsigned int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++) {
		const struct ls_sync_fit *f = &fits[i];
		double dt, sig, w, wd, o;

		if (!f->ok)
			continue;
		dt = (double)ns_diff(t_ref, f->t_ref);
		/* Moving a fit along its drift costs drift_sigma per ns moved. */
		sig = fmax(hypot(f->sigma_ns, f->drift_sigma * dt), LS_SYNC_SIGMA_MIN);
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
		slag += w * ((isfinite(f->lag_ns) ? f->lag_ns : 0) + fmax(dt, 0.0));
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
	out->lag_ns = slag / sw;
	return 0;
}
