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
 * to envelopes and given a proper error budget. Next to the windows stands
 * the joint entry, the envelope of every window's support samples at the
 * drift: under heavy load each direction meets its floor now and then, but
 * seldom both in one window, and the joint entry joins floors met seconds
 * apart. Joint entries of the recent windows alone stand beside it, so that
 * a deep floor met long ago (worth less as the clocks wander) competes with
 * shallower recent ones on the same error budget.
 *
 * The drift is the surer of two slopes: a weighted line through the
 * windows' offsets, and the envelope fit of the samples each window's
 * envelopes rest on, over the whole minute held. Under heavy load the
 * second is the one that holds: one floor sample near each end of the
 * minute pins it, where the line follows whatever the cleanest few windows
 * happened to share.
 *
 * The entries go through a Kalman filter over the clocks' walk, and the
 * paths to one peer (one clock pair, one walk, each path its own stamping
 * noise) can go through one filter together (ls_sync_track_fit_many):
 * that is the edge's offset in lockstepd.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ls_sync_priv.h"

/* Oldest first: the i-th held entry. */
static inline uint32_t
slot(const struct ls_sync_track *k, uint32_t i)
{
	return (k->head + k->cap - k->n + i) % k->cap;
}

/* The forward and reverse support samples of entry s (t from its t_ref),
 * their delays back on the raw scale (struct ls_sync_track_win). */
static inline struct ls_sync_pt
sup_fwd(const struct ls_sync_track *k, uint32_t s)
{
	const struct ls_sync_track_win *w = &k->w[s];

	return (struct ls_sync_pt){.t = w->sf_t, .d = (double)w->sf_d + round(w->off)};
}

static inline struct ls_sync_pt
sup_rev(const struct ls_sync_track *k, uint32_t s)
{
	const struct ls_sync_track_win *w = &k->w[s];

	return (struct ls_sync_pt){.t = w->sr_t, .d = (double)w->sr_d - round(w->off)};
}

static inline bool
has_sup(const struct ls_sync_track *k, uint32_t s)
{
	return !isnan(k->w[s].sf_d);
}

void
ls_sync_track_init(struct ls_sync_track *k)
{
	memset(k, 0, sizeof(*k));
	k->floor = INFINITY;
}

void
ls_sync_track_free(struct ls_sync_track *k)
{
	free(k->w);
	ls_sync_track_init(k);
}

void
ls_sync_track_reset(struct ls_sync_track *k)
{
	k->n = 0;
	k->head = 0;
	k->floor = INFINITY;
}

size_t
ls_sync_track_bytes(const struct ls_sync_track *k)
{
	return (size_t)k->cap * sizeof(*k->w);
}

/* Room for more windows, the held ones moved over oldest first; false
 * when there is none (the caller overwrites the oldest). */
static bool
grow(struct ls_sync_track *k)
{
	uint32_t cap = k->cap + (k->cap / 2 > 8 ? k->cap / 2 : 8);
	struct ls_sync_track_win *w;

	if (cap > LS_SYNC_TRACK_LEN)
		cap = LS_SYNC_TRACK_LEN;
	w = malloc((size_t)cap * sizeof(*w));
	if (w == NULL)
		return false;
	for (uint32_t i = 0; i < k->n; i++)
		w[i] = k->w[slot(k, i)];
	free(k->w);
	k->w = w;
	k->cap = cap;
	k->head = k->n;
	return true;
}

void
ls_sync_track_add(struct ls_sync_track *k, const struct ls_sync_fit *f)
{
	struct ls_sync_track_win *w;
	bool sup;

	if (!f->ok || !isfinite(f->offset_ns) || !isfinite(f->band_ns))
		return;
	if (k->n == k->cap && k->cap < LS_SYNC_TRACK_LEN && !grow(k) && k->cap == 0)
		return;
	w = &k->w[k->head];
	w->t = f->t_ref;
	w->off = f->offset_ns;
	/* The widest band, not the gap at the fixed slope: a window fitted at
	 * a wrong slope has a narrower gap and would look cleaner than it is. */
	w->gap = (float)f->band_ns;
	w->sig = (float)f->sigma_ns;
	sup = f->has_sup && isfinite(f->sup_fwd.d) && isfinite(f->sup_rev.d);
	w->sf_t = sup ? (float)f->sup_fwd.t : 0;
	w->sf_d = sup ? (float)(f->sup_fwd.d - round(f->offset_ns)) : NAN;
	w->sr_t = sup ? (float)f->sup_rev.t : 0;
	w->sr_d = sup ? (float)(f->sup_rev.d + round(f->offset_ns)) : NAN;
	/* A zeroed track (never reset) has floor 0: treat it as unset. The
	 * floor as held, so that the window that set it has no excess. */
	if (k->n == 0 || w->gap < k->floor)
		k->floor = w->gap;
	k->head = (k->head + 1) % k->cap;
	if (k->n < k->cap)
		k->n++;
}

static double
least_gap(const struct ls_sync_track *k)
{
	double g = k->floor;

	for (uint32_t i = 0; i < k->n; i++)
		g = fmin(g, k->w[slot(k, i)].gap);
	return g;
}

/* Time from the oldest held entry to the newest. */
static inline double
span_ns(const struct ls_sync_track *k)
{
	return (double)ns_diff(k->w[slot(k, k->n - 1)].t, k->w[slot(k, 0)].t);
}

/*
 * An entry's variance carried to now: its own, plus the drift's error and
 * wander over its age. An entry's offset is where its forward and reverse
 * support samples put it (tf, tr before its t_ref, >= 0), carried along
 * the drift: they, not its t_ref alone, set its age.
 */
static double
carried_var(double own, double age, double tf, double tr, double drift_sigma, double wander_ns)
{
	double da = drift_sigma * (age + 0.5 * (tf + tr));

	return own + da * da + wander_ns * wander_ns * (age + fmax(tf, tr)) * 1e-9;
}

/* sigma^2 + e^2 of entry s: its own error budget, before any ageing. */
static double
own_var(const struct ls_sync_track *k, uint32_t s, double g0)
{
	double e = k->w[s].gap - g0, sig = k->w[s].sig;

	return sig * sig + e * e;
}

/*
 * The support samples of the held windows from the from-th on (0: all),
 * times relative to the newest t_ref.
 */
static uint32_t
support_points(const struct ls_sync_track *k, uint32_t from, struct ls_sync_pt *f,
	       struct ls_sync_pt *r)
{
	uint32_t n = 0, last = slot(k, k->n - 1);

	for (uint32_t i = from; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double dt = (double)ns_diff(k->w[s].t, k->w[last].t);
		struct ls_sync_pt sf, sr;

		if (!has_sup(k, s))
			continue;
		sf = sup_fwd(k, s);
		sr = sup_rev(k, s);
		f[n] = (struct ls_sync_pt){.t = dt + sf.t, .d = sf.d};
		r[n] = (struct ls_sync_pt){.t = dt + sr.t, .d = sr.d};
		n++;
	}
	return n;
}

/*
 * The envelope fit of the support samples of the held windows from the
 * from-th on, at slope drift (NaN: the fit's own), offset at the newest
 * window's t_ref.
 */
static int
support_fit(const struct ls_sync_track *k, uint32_t from, const struct ls_sync_est_conf *conf,
	    double drift, struct ls_sync_fit *fit)
{
	struct ls_sync_pt f[LS_SYNC_TRACK_LEN], r[LS_SYNC_TRACK_LEN];
	struct ls_sync_est_conf c = *conf;
	uint32_t n = support_points(k, from, f, r);

	c.fixed_drift = drift;
	return ls_sync_envelope_fit(f, n, r, n, &c, fit);
}

/* Quarters of the span the support samples are refitted without. */
#define JACKKNIFE_PARTS 4

/*
 * The envelope slope through the support samples (see ls_sync_track_drift),
 * and how far it moves when any one quarter of the span is left out.
 *
 * Why the second: the slope is pinned only where each side met its floor at
 * two times well apart. When the forward floor was met only early in the
 * span and the reverse only late, a free slope tilts until some queued
 * sample stops it, because tilting widens the band between the two sides;
 * the fit's own figure (spread over span) cannot see this, since the few
 * floor samples sit tightly on the tilted lines. Left without the quarter
 * that holds one side's floors, such a fit moves by as much as it is off;
 * a slope pinned by floors spread over the span barely moves.
 */
static double
env_drift(const struct ls_sync_track *k, const struct ls_sync_est_conf *conf, double *sigma)
{
	struct ls_sync_pt f[LS_SYNC_TRACK_LEN], r[LS_SYNC_TRACK_LEN];
	struct ls_sync_pt fq[LS_SYNC_TRACK_LEN], rq[LS_SYNC_TRACK_LEN];
	struct ls_sync_est_conf c = *conf;
	struct ls_sync_fit fit, q;
	uint32_t n = support_points(k, 0, f, r);
	double t0, span, moved = 0;

	*sigma = NAN;
	c.asym_ns = 0;
	c.fixed_drift = NAN;
	if (n < 2 || ls_sync_envelope_fit(f, n, r, n, &c, &fit) != 0)
		return NAN;
	/* overlapping windows: support times are only roughly in order */
	t0 = INFINITY;
	span = -INFINITY;
	for (uint32_t i = 0; i < n; i++) {
		t0 = fmin(t0, f[i].t);
		span = fmax(span, f[i].t);
	}
	span -= t0;
	for (uint32_t part = 0; part < JACKKNIFE_PARTS; part++) {
		uint32_t m = 0;

		for (uint32_t i = 0; i < n; i++) {
			double x = span > 0 ? (f[i].t - t0) / span * JACKKNIFE_PARTS : 0;

			if (fmin(floor(x), JACKKNIFE_PARTS - 1) == part)
				continue;
			fq[m] = f[i];
			rq[m] = r[i];
			m++;
		}
		if (ls_sync_envelope_fit(fq, m, rq, m, &c, &q) != 0) {
			moved = INFINITY;
			break;
		}
		moved = fmax(moved, fabs(q.drift - fit.drift));
	}
	*sigma = fmax(fit.drift_sigma, moved);
	return fit.drift;
}

/*
 * The weighted least-squares slope of the held offsets, windows judged
 * against floor g0, and its uncertainty (see ls_sync_track_drift).
 */
static double
ls_slope(const struct ls_sync_track *k, double g0, double *sigma)
{
	double sw = 0, st = 0, so = 0, stt = 0, sto = 0, den, b, a, chi = 0, bnd = 0;
	uint32_t last = slot(k, k->n - 1);

	*sigma = NAN;
	/* Times and offsets relative to the newest entry: offsets are ~1e7 ns
	 * and agree to ~1 ns, the differences keep the digits. */
	for (uint32_t i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		double w = 1.0 / fmax(own_var(k, s, g0), 1e-6);
		double t = (double)ns_diff(k->w[s].t, k->w[last].t);
		double o = k->w[s].off - k->w[last].off;

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
		double t = (double)ns_diff(k->w[s].t, k->w[last].t);
		double r = k->w[s].off - k->w[last].off - (a + b * t);

		chi += w * r * r;
		/* b = sum c_i off_i with c_i = w_i (sw t_i - st) / den */
		bnd += fabs(w * (sw * t - st) / den) * sqrt(v);
	}
	/*
	 * Standard error of a weighted slope, scaled by the fit's own reduced
	 * chi-square: the windows' sigmas are relative weights, not gospel.
	 * But not below what the windows' own bounds allow: the few cleanest
	 * windows dominate the fit and can agree with each other while sharing
	 * a bias (docs/sync.md, "Lab notes behind the code": the track's slope).
	 */
	*sigma = fmax(sqrt(sw / den * fmax(chi / (k->n - 2), 1.0)), bnd);
	return b;
}

/*
 * How much narrower than the floor the joined band of the held windows'
 * support samples can be from wander alone: a straight line is laid
 * through a random walk over the held span, and it leaves the walk's
 * range, about twice its deviation, between the two sides.
 */
static double
wander_margin(const struct ls_sync_track *k, double wander_ns)
{
	return 2.0 * wander_ns * sqrt(fmax(span_ns(k), 0.0) * 1e-9);
}

double
ls_sync_track_drift(const struct ls_sync_track *k, uint64_t min_span_ns,
		    const struct ls_sync_est_conf *conf, double wander_ns, double *sigma)
{
	double eb = NAN, es = NAN, g0, b;
	struct ls_sync_fit joint;

	*sigma = NAN;
	if (k->n < 6)
		return NAN;
	if (span_ns(k) < (double)min_span_ns)
		return NAN;
	g0 = least_gap(k);
	b = ls_slope(k, g0, sigma);
	if (conf != NULL && !isnan(b)) {
		/*
		 * The windows' bounds hold only if some window met both
		 * floors. When the support samples of all of them, joined at
		 * this slope, leave a narrower band than any one window did
		 * (by more than wander would), none did: judge them again
		 * against the joined band.
		 */
		if (support_fit(k, 0, conf, b, &joint) == 0 &&
		    joint.half_gap_ns < g0 - wander_margin(k, wander_ns))
			b = ls_slope(k, joint.half_gap_ns, sigma);
		eb = env_drift(k, conf, &es);
		if (isfinite(eb) && isfinite(es) && es < *sigma) {
			*sigma = es;
			b = eb;
		}
	}
	/* A wandering clock has no one slope: over the span the held windows
	 * cover, a random walk's own slope is about wander / sqrt(span). */
	if (!isnan(b))
		*sigma = hypot(*sigma, wander_ns * 1e-9 / sqrt(span_ns(k) * 1e-9));
	return b;
}

/* Recent joint entries: windows of the last 4 s, 8 s, ... (doubling). */
#define JOINT_RECENT 4
#define JOINT_RECENT_NS 4000000000ULL

/* Entries one track gives: its windows, its joint entry, its recent ones. */
#define TRACK_ENTRIES (LS_SYNC_TRACK_LEN + 1 + JOINT_RECENT)

/* One estimate of the offset now, as the track combines them. */
struct entry {
	double p;     /* offset now, relative to the base the caller chose */
	double own;   /* its own variance: sigma^2 + e^2, before any ageing */
	double r;     /* its variance as the filter's measurement (set_entry) */
	double tau;   /* when it measured (its older support sample), ns before now */
	double u2;    /* own, carried to now (carried_var) */
	double gap;   /* its half gap */
	uint32_t src; /* which track it came from */
};

/* The workspace of ls_sync_track_fit_many: one allocation, the arrays
 * after the header (doubles first, so each stays aligned). */
struct ls_sync_track_ws {
	unsigned int max_tracks;
	struct entry *en;       /* max_tracks * TRACK_ENTRIES */
	double *lag;            /* max_tracks */
	double *dsig;           /* max_tracks */
	uint32_t *ord;          /* max_tracks * TRACK_ENTRIES */
};

struct ls_sync_track_ws *
ls_sync_track_ws_create(unsigned int max_tracks)
{
	size_t ne = (size_t)max_tracks * TRACK_ENTRIES;
	struct ls_sync_track_ws *ws;

	if (max_tracks == 0)
		return NULL;
	ws = calloc(1, sizeof(*ws) + ne * sizeof(*ws->en) + 2 * (size_t)max_tracks * sizeof(double) +
			       ne * sizeof(*ws->ord));
	if (ws == NULL)
		return NULL;
	ws->max_tracks = max_tracks;
	ws->en = (struct entry *)(ws + 1);
	ws->lag = (double *)(ws->en + ne);
	ws->dsig = ws->lag + max_tracks;
	ws->ord = (uint32_t *)(ws->dsig + max_tracks);
	return ws;
}

void
ls_sync_track_ws_free(struct ls_sync_track_ws *ws)
{
	free(ws);
}

/*
 * An entry of sigma sig and excess e whose support samples lie tf, tr
 * before its t_ref, age before now.
 *
 * Its error budget (own, and the bound it gives) takes sigma whole; the
 * filter weighs it by (sigma / 4)^2 + e^2. Why a quarter: sigma is how far
 * the 4th-lowest sample on each side lies above the envelope, and where
 * the samples' density near the floor is flat, the lowest lies about a
 * quarter of that above the true floor (the k-th of N uniform samples
 * lies k / (N + 1) of the way up). Weighted by sigma^2 the filter took the
 * windows for four times noisier than they are (docs/sync.md, "Lab notes
 * behind the code": the filter's measurement variance). The excess e stays
 * whole: a window that missed a floor is off by up
 * to e, and by how much within that nothing says.
 */
static void
set_entry(struct entry *en, double p, double sig, double e, double gap, double age, double tf,
	  double tr, double drift_sigma, double wander_ns, double overlap)
{
	double own = sig * sig + e * e;

	en->p = p;
	en->own = own;
	en->r = sig * sig / 16.0 * overlap + e * e;
	en->gap = gap;
	en->u2 = carried_var(own, age, tf, tr, drift_sigma, wander_ns);
	en->tau = age + fmax(tf, tr);
}

/* A joint fit as a track entry: variance carried to now, offset relative
 * to the newest window's plus shift (that window carried to now, less the
 * base). */
static void
joint_entry(const struct ls_sync_track *k, const struct ls_sync_fit *j, uint64_t now, double g0,
	    double shift, double drift_sigma, double wander_ns, struct entry *en)
{
	uint32_t last = slot(k, k->n - 1);
	double age = fmax((double)ns_diff(now, k->w[last].t), 0.0);
	double e = fmax(j->half_gap_ns - g0, 0.0);

	set_entry(en, j->offset_ns - k->w[last].off + shift, j->sigma_ns, e,
		  j->half_gap_ns, age, fabs(j->sup_fwd.t), fabs(j->sup_rev.t), drift_sigma,
		  wander_ns, 1.0);
}

/*
 * The floor track k's windows are judged by: their least half gap, or,
 * when joined at this drift their support samples leave a narrower band
 * (*joint, when *has_joint), that band.
 *
 * The joint entry is the envelope of every held window's support samples
 * at this drift, so a forward floor met in one window and a reverse floor
 * met in another, seconds apart, make one clean estimate where each window
 * alone missed one of them. Its half gap at this slope (not the widest:
 * over a minute a free slope tilts to wherever the two sides' floors sit)
 * also bounds the floor the windows are judged by; a wrong drift narrows
 * it, which only judges them more harshly. What the drift's error does to
 * its offset is its lever: how far its support samples lie from now.
 */
static double
judge_floor(const struct ls_sync_track *k, double drift, double drift_sigma, double wander_ns,
	    const struct ls_sync_est_conf *conf, struct ls_sync_fit *joint, bool *has_joint)
{
	double g0 = least_gap(k);

	*has_joint = conf != NULL && support_fit(k, 0, conf, drift, joint) == 0 &&
		     isfinite(joint->offset_ns) && isfinite(joint->half_gap_ns);
	if (!*has_joint || !(joint->half_gap_ns < g0 - wander_margin(k, wander_ns)))
		return g0;
	/*
	 * Joined, the windows leave a narrower band than any one of them, by
	 * more than wander would: none met both floors, and the joined band is
	 * the floor they are judged by. It is that only at the true slope,
	 * which lies within 3 drift sigmas of this one; the band is concave in
	 * the slope, so the least of that range is at one of its ends.
	 */
	g0 = joint->half_gap_ns;
	for (int sgn = -1; sgn <= 1; sgn += 2) {
		struct ls_sync_fit q;

		if (drift_sigma > 0 &&
		    support_fit(k, 0, conf, drift + sgn * 3 * drift_sigma, &q) == 0)
			g0 = fmin(g0, q.half_gap_ns);
	}
	return g0;
}

/*
 * How many windows each probe is in, in units of the four of a 2 s window
 * fitted every 500 ms. The filter's measurement variance, sigma^2 / 16,
 * was set there: fitted more often, the same samples are in more windows,
 * and as many more entries at that variance would count them that many
 * more times. The variance grows with the overlap instead, so the filter
 * weighs a second of probes alike at any sync.interval_ms.
 */
static double
window_overlap(const struct ls_sync_track *k, const struct ls_sync_est_conf *conf)
{
	double spacing;

	if (conf == NULL || k->n < 2)
		return 1.0;
	spacing = (double)ns_diff(k->w[slot(k, k->n - 1)].t, k->w[slot(k, 0)].t) / (k->n - 1);
	return spacing > 0 ? fmax(1.0, (double)conf->window_ns / spacing / 4.0) : 1.0;
}

/*
 * The joint entries of the recent windows alone (the last 4, 8, 16 and
 * 32 s) into en; returns how many. The joint entry takes each side's
 * deepest floor held, however old, and wander makes an old floor worth
 * less than a slightly shallower recent one: these weigh that trade as
 * every other entry does, by excess over the floor plus age.
 */
static uint32_t
recent_joints(const struct ls_sync_track *k, uint64_t now, double drift, double drift_sigma,
	      double wander_ns, const struct ls_sync_est_conf *conf, double g0, double shift,
	      struct entry *en)
{
	uint32_t m = 0, prev_from = 0, last = slot(k, k->n - 1);

	for (uint32_t h = 0; h < JOINT_RECENT; h++) {
		uint64_t horizon = (JOINT_RECENT_NS << h);
		uint32_t from = k->n - 1;
		struct ls_sync_fit q;

		while (from > 0 && ns_diff(k->w[last].t, k->w[slot(k, from - 1)].t) <= (int64_t)horizon)
			from--;
		if (from == 0 || from == prev_from || k->n - from < 2)
			continue;
		prev_from = from;
		if (support_fit(k, from, conf, drift, &q) != 0 || !isfinite(q.offset_ns) ||
		    !isfinite(q.half_gap_ns))
			continue;
		joint_entry(k, &q, now, g0, shift, drift_sigma, wander_ns, &en[m]);
		m++;
	}
	return m;
}

/*
 * The entries track k gives at now (at most TRACK_ENTRIES): its windows,
 * its joint entry and the recent joint entries, offsets relative to its
 * newest window carried to now plus shift.
 */
static uint32_t
track_entries(const struct ls_sync_track *k, uint64_t now, double drift, double drift_sigma,
	      double wander_ns, const struct ls_sync_est_conf *conf, double shift, uint32_t src,
	      struct entry *en)
{
	uint32_t i, m, last = slot(k, k->n - 1);
	struct ls_sync_fit joint;
	bool has_joint;
	double g0 = judge_floor(k, drift, drift_sigma, wander_ns, conf, &joint, &has_joint);
	double overlap = window_overlap(k, conf);

	/* Offsets as differences from the newest entry moved to now: offsets
	 * are ~1e7 ns and agree to ~1 ns, the differences keep the digits. */
	for (i = 0; i < k->n; i++) {
		uint32_t s = slot(k, i);
		const struct ls_sync_track_win *w = &k->w[s];
		double age = fmax((double)ns_diff(now, w->t), 0.0);
		double tf = has_sup(k, s) ? fabs(w->sf_t) : 0, tr = has_sup(k, s) ? fabs(w->sr_t) : 0;

		set_entry(&en[i],
			  w->off - k->w[last].off + drift * (double)ns_diff(k->w[last].t, w->t) + shift,
			  w->sig, w->gap - g0, w->gap, age, tf, tr, drift_sigma, wander_ns, overlap);
	}
	m = k->n;
	if (has_joint) {
		joint_entry(k, &joint, now, g0, shift, drift_sigma, wander_ns, &en[m]);
		m++;
		m += recent_joints(k, now, drift, drift_sigma, wander_ns, conf, g0, shift, &en[m]);
	}
	for (i = 0; i < m; i++)
		en[i].src = src;
	return m;
}

static int
tau_cmp(const void *x, const void *y, void *arg)
{
	const struct entry *en = arg;
	double a = en[*(const uint32_t *)x].tau, b = en[*(const uint32_t *)y].tau;

	return (a < b) - (a > b); /* oldest measurement (largest tau) first */
}

/*
 * The entries combined into the offset now: a Kalman filter over them in
 * the order they measured, the offset walking by wander_ns^2 per second in
 * between, each entry one measurement with its own variance. Returns the
 * variance of the result, including each track's drift error over how far
 * back the result's weight from that track lies (lag[], one per track).
 *
 * Why not a weighted average: the entries' errors are not independent. An
 * entry t seconds old is off by the walk since then, and that walk is
 * shared by every older entry. Averaged with weights 1 / u^2, the many
 * older entries outweigh the newest few and the track follows the walk
 * seconds late (docs/sync.md, "Lab notes behind the code": why a filter).
 * The filter is the least-squares answer for exactly that error structure
 * (independent noise per entry, plus a walk since it). Entries of several
 * tracks (the paths to one peer) go through one filter: every path sees
 * the one clock pair and its walk, and each path's probes stamp their own
 * noise.
 */
static double
combine(const struct entry *en, uint32_t m, uint32_t *ord, double *lag, unsigned int ntracks,
	const double *drift_sigma, double wander_ns, double *off)
{
	double q = wander_ns * wander_ns * 1e-9, x = 0, p = INFINITY, da = 0, prev = 0;

	for (uint32_t a = 0; a < m; a++)
		ord[a] = a;
	qsort_r(ord, m, sizeof(*ord), tau_cmp, (void *)(uintptr_t)en);
	for (unsigned int j = 0; j < ntracks; j++)
		lag[j] = 0;
	for (uint32_t a = 0; a < m; a++) {
		const struct entry *e = &en[ord[a]];
		double r = fmax(e->r, 1e-6), g;

		if (a > 0)
			p += q * fmax(prev - e->tau, 0.0);
		prev = e->tau;
		g = isinf(p) ? 1.0 : p / (p + r);
		x += g * (e->p - x);
		p = isinf(p) ? r : (1.0 - g) * p;
		/* how far back the result's weight lies, per track: the
		 * weights of everything before shrink by 1 - g */
		for (unsigned int j = 0; j < ntracks; j++)
			lag[j] *= 1.0 - g;
		lag[e->src] += g * e->tau;
	}
	/* from the last measurement to now; every entry is carried along its
	 * track's drift, so that drift's error reaches the result over the
	 * lag of the result's weight from that track. The tracks' drift errors
	 * are taken as one (paths to one peer see one clock pair). */
	p += q * prev;
	for (unsigned int j = 0; j < ntracks; j++)
		da += drift_sigma[j] * lag[j];
	*off = x;
	return p + da * da;
}

static int
fit_tracks(const struct ls_sync_track *const *k, const double *drift, const double *drift_sigma,
	   unsigned int n, uint64_t now, double wander_ns, const struct ls_sync_est_conf *const *conf,
	   struct entry *en, uint32_t *ord, double *lag, double *dsig, struct ls_sync_fit *out)
{
	double best = INFINITY, off, var, base = NAN;
	uint32_t i, m = 0, best_i = 0;

	memset(out, 0, sizeof(*out));
	for (unsigned int j = 0; j < n; j++) {
		uint32_t last;
		double b, shift;

		dsig[j] = 0;
		if (k[j] == NULL || k[j]->n == 0)
			continue;
		b = isfinite(drift[j]) ? drift[j] : 0;
		dsig[j] = isfinite(drift_sigma[j]) ? drift_sigma[j] : 0;
		last = slot(k[j], k[j]->n - 1);
		/* each track's entries relative to the first track's newest
		 * window carried to now: the tracks differ by nanoseconds */
		shift = k[j]->w[last].off + b * (double)ns_diff(now, k[j]->w[last].t);
		if (isnan(base))
			base = shift;
		m += track_entries(k[j], now, b, dsig[j], wander_ns, conf[j], shift - base, j,
				   &en[m]);
	}
	if (m == 0)
		return -ENODATA;
	/* the surest single entry names the half gap and bounds the sigma */
	for (i = 0; i < m; i++)
		if (en[i].u2 < best) {
			best = en[i].u2;
			best_i = i;
		}
	var = combine(en, m, ord, lag, n, dsig, wander_ns, &off);
	out->ok = true;
	out->t_ref = now;
	out->offset_ns = base + off;
	/* Not below the surest single entry's: the filter counts overlapping
	 * windows, which share samples, as independent measurements (with no
	 * wander it would claim the whole minute's samples as one average). */
	out->sigma_ns = sqrt(fmax(var, best));
	out->half_gap_ns = en[best_i].gap;
	out->band_ns = en[best_i].gap;
	out->lag_ns = 0;
	for (unsigned int j = 0; j < n; j++)
		out->lag_ns += lag[j];
	return 0;
}

int
ls_sync_track_fit(const struct ls_sync_track *k, uint64_t now, double drift,
		  double drift_sigma, double wander_ns, const struct ls_sync_est_conf *conf,
		  struct ls_sync_fit *out)
{
	struct entry en[TRACK_ENTRIES];
	uint32_t ord[TRACK_ENTRIES];
	double lag, dsig;
	int rc;

	rc = fit_tracks(&k, &drift, &drift_sigma, 1, now, wander_ns, &conf, en, ord, &lag, &dsig,
			out);
	if (rc != 0)
		return rc;
	out->drift = isfinite(drift) ? drift : 0;
	out->drift_sigma = isfinite(drift_sigma) ? drift_sigma : 0;
	return 0;
}

int
ls_sync_track_fit_many(const struct ls_sync_track *const *k, const double *drift,
		       const double *drift_sigma, unsigned int n, uint64_t now, double wander_ns,
		       const struct ls_sync_est_conf *const *conf, struct ls_sync_track_ws *ws,
		       struct ls_sync_fit *out)
{
	memset(out, 0, sizeof(*out));
	if (ws == NULL || n > ws->max_tracks)
		return -EINVAL;
	return fit_tracks(k, drift, drift_sigma, n, now, wander_ns, conf, ws->en, ws->ord, ws->lag,
			  ws->dsig, out);
}
