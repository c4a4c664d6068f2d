/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The network effect: one node's step from its neighbours' announcements
 * and its own edge fits, the reference election, holdover, and reading
 * fleet time from the result.
 *
 * Each node holds (theta, phi) against the reference and re-estimates them
 * from its neighbours' announcements and its own edge fits: every usable
 * neighbour gives a candidate theta, and the node takes a robust weighted
 * mean of them (weighted median start, then iteratively reweighted with
 * Huber weights that redescend to zero). Done by every node every round
 * this is a Jacobi iteration of the weighted least-squares problem over
 * the mesh, with the reference pinned at zero. Reference election is
 * "lowest id alive", where alive means its ref_seq, relayed hop by hop,
 * still rises.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_sync_priv.h"

/* Serial-number comparison (RFC 1982) so ref_seq may wrap. */
static inline bool
seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
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
	s->wander_obs_ns = NAN;
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
 * cut (see docs/sync.md, "Lab notes behind the code": where the average
 * starts).
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
 * reason as theta: a far group sure of one wrong drift must not drag the
 * reference's clean neighbours (docs/sync.md, "Lab notes behind the code":
 * the node's drift). The sigma is the weighted mean of the candidates'
 * sigmas, for the reason theta's is (no vouching; ls_sync_node_update).
 * tmp holds nc candidates.
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
 * The sigma a node's own readings promise. The averaged sigma comes from the
 * neighbours' own sigmas, and neighbours joined to each other by good edges but
 * to the reference only by bad ones vouch for each other, and the bound then
 * misses the truth under load (docs/sync.md, "Lab notes behind the code": the
 * anchored bound). So the promise must also cover the anchor, the candidate
 * closest to the reference (fewest hops, then least scale; the reference itself
 * when it is a neighbour): the truth is within 3 scale of it if its bound
 * holds, and the estimate is |est - anchor| from it. Only the reading uses it:
 * announced, it weakened the ties that hold a group together and made loaded
 * runs worse.
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
 * A node's cluster: neighbours whose own sigma is more than cluster_ratio times
 * our edge's to them. Such a neighbour sits behind the same weak links as we do
 * (a rack-mate across loaded spines): our edge to it is far surer than either
 * of us knows where the fleet is. In the announced average it is one candidate
 * among the others, at the weight of its own sigma, so each node of a leaf
 * settles between what its own edges say and what its neighbours' do (at equal
 * weights, halfway), and the leaf's nodes sit apart by about half of what their
 * own edges disagree by, while their mean converges first (docs/sync.md, "Lab
 * notes behind the code": clusters). So a node's readings, not its
 * announcement, are the robust average of its theta and its cluster neighbours'
 * thetas through our edges: every member reads about the members' mean, and
 * they agree to within their edges and one step's movement. Announced, the pool
 * would count each neighbour twice (it is already a candidate) and feed back
 * around the leaf: the vouching ls_sync_node_update avoids. The reference is
 * never in a cluster (its sigma is 0). tmp holds 1 + nk entries; the members'
 * pool weights are left in tmp[1 + i].w.
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

/*
 * Scratch for one step, one allocation in named parts: the candidates,
 * the robust averages' working copy (phi_average's, then cluster_pool's,
 * which puts this node first and so needs one more), and the cluster
 * members picked from the candidates.
 */
struct node_scratch {
	struct cand *cand;      /* n: one per usable neighbour */
	struct cand *work;      /* n + 1 */
	struct cand *members;   /* n */
};

static int
scratch_alloc(struct node_scratch *sc, unsigned int n)
{
	struct cand *all = malloc((3 * (size_t)n + 1) * sizeof(*all));

	if (all == NULL)
		return -ENOMEM;
	sc->cand = all;
	sc->work = all + n;
	sc->members = all + 2 * (size_t)n + 1;
	return 0;
}

/* Who is still alive: every fresh announcement of a reference counts,
 * except from nodes in holdover, which repeat an old ref_seq. */
static void
note_refs(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs, unsigned int n,
	  uint64_t now, struct ls_sync_state *s)
{
	for (unsigned int j = 0; j < n; j++)
		if (nbr_announces_ref(c, &nbrs[j], now) &&
		    !(nbrs[j].st.flags & LS_SYNC_F_HOLDOVER))
			ref_note(s, c, nbrs[j].st.ref_id, nbrs[j].st.ref_seq, now);
}

/* A neighbour that can offer a candidate: fresh, synced to ref, not in
 * holdover, and we hold a fit of our edge to it. */
static bool
nbr_usable(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nb, uint32_t ref,
	   uint64_t now)
{
	return nbr_announces_ref(c, nb, now) && nb->st.ref_id == ref &&
	       !(nb->st.flags & LS_SYNC_F_HOLDOVER) && nb->has_edge && nb->edge.ok;
}

/* Our edge to a neighbour at now, as the candidate uses it. */
struct edge_mix {
	double o;               /* local_nbr - local_self */
	double drift;           /* its drift, per tick of our clock */
	double sigma;           /* its sigma (before the floor) */
	double drift_apart;     /* the two sides' drift disagreement, its share */
	double back;            /* two-sided minus one-sided, for the record */
};

/*
 * Mix the neighbour's own estimate of the edge, from its probes to us (the
 * same edge negated), into ours. Averaging the two directions cancels any
 * bias both ends' measurements share, so they are averaged evenly while
 * their sigmas are alike; when one side is much worse (it has not seen its
 * floor in a while: ls_sync_track), by inverse variance. dt_n is now on
 * the neighbour's clock, less its t0.
 */
static void
edge_mix(const struct ls_sync_nbr *nb, double dt_n, struct edge_mix *m)
{
	const struct ls_sync_state *st = &nb->st;
	double back = st->edge_back_ns + st->edge_back_drift * dt_n;
	double b = st->edge_back_drift;
	double w = two_sided_weight(nb->edge.sigma_ns, st->edge_back_sigma);
	double apart = fabs(m->o + back); /* the two sides' disagreement */

	m->back = -w * (m->o + back);
	m->o = (1.0 - w) * m->o - w * back;
	/* its drift is per tick of its clock: -b / (1 + b) per ours */
	m->drift = (1.0 - w) * nb->edge.drift - w * b / (1.0 + b);
	m->sigma = sqrt((1.0 - w) * (1.0 - w) * nb->edge.sigma_ns * nb->edge.sigma_ns +
			w * w * st->edge_back_sigma * st->edge_back_sigma);
	/*
	 * The two sides measure one quantity with different probes: when they
	 * disagree, one of them is that far off and nothing says which, so the
	 * mix is off by up to the larger share of the disagreement, and its
	 * sigma is at least half that (see docs/sync.md, "Lab notes behind
	 * the code": two-sided edges).
	 */
	m->sigma = fmax(m->sigma, fmax(w, 1.0 - w) * apart / 2.0);
	/* Likewise the drift: the wire carries no sigma for the neighbour's,
	 * so their disagreement says how far the mix can be off. */
	m->drift_apart = fmax(w, 1.0 - w) * fabs(nb->edge.drift + b / (1.0 + b)) / 2.0;
}

/*
 * Neighbour j's offer: theta_nbr(now') - o(now) and phi_nbr - drift, with
 * the edge's and the neighbour's uncertainty together. Returns false when
 * the result is not finite.
 */
static bool
cand_from_nbr(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nb, unsigned int j,
	      uint64_t now, double floor_ns, struct cand *k)
{
	const struct ls_sync_state *st = &nb->st;
	struct edge_mix m = {.drift = nb->edge.drift, .sigma = nb->edge.sigma_ns};
	double dt_e, dt_n, se, sn;

	/* Our edge at now: o = local_nbr - local_self. */
	dt_e = (double)ns_diff(now, nb->edge.t_ref);
	m.o = nb->edge.offset_ns + nb->edge.drift * dt_e;
	/* The neighbour's clock reads now + o; its theta there. st->t0 is
	 * on its clock, so difference the integers, then add o. */
	dt_n = (double)ns_diff(now, st->t0) + m.o;
	if (st->flags & LS_SYNC_F_EDGE)
		edge_mix(nb, dt_n, &m);
	k->back = m.back;
	k->j = j;
	k->theta = st->theta_ns + st->phi * dt_n - m.o;
	/* d theta_self / d local_self: the neighbour's phi is per tick of
	 * its clock, which runs (1 + drift) times ours. The product term
	 * is 1e-8 at 100 ppm each: 100 ns over 10 s, not negligible. */
	k->phi = st->phi * (1.0 + m.drift) - m.drift;
	se = hypot(fmax(m.sigma, floor_ns), nb->edge.drift_sigma * dt_e);
	sn = hypot(st->sigma_ns, st->phi_sigma * dt_n);
	k->var = se * se + sn * sn;
	k->phi_var = nb->edge.drift_sigma * nb->edge.drift_sigma + m.drift_apart * m.drift_apart +
		     st->phi_sigma * st->phi_sigma;
	/*
	 * Residuals are judged against the candidate's whole uncertainty, the
	 * neighbour's own included: a candidate that came through a
	 * non-reference neighbour carries that node's error too. Judging by
	 * the edge alone let a consensus of the reference's descendants cut
	 * the reference's own edge, after which they drifted together with
	 * nothing to hold them.
	 */
	k->s = fmax(sqrt(k->var), floor_ns);
	/* And weighted by the same figure: weighted by the edge alone, a
	 * neighbour far off but unsure of itself still pulled like a clean
	 * edge (docs/sync.md, "Lab notes behind the code": candidate weights). */
	k->w0 = 1.0 / (k->s * k->s);
	/* shares our error: pooled into our readings (cluster_pool) */
	k->cluster = c->cluster_ratio > 0 && sn > c->cluster_ratio * se;
	return isfinite(k->theta) && isfinite(k->phi);
}

/* The usable neighbours' candidates into cs; returns how many. */
static unsigned int
gather(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs, unsigned int n,
       uint32_t ref, uint64_t now, double floor_ns, struct cand *cs)
{
	unsigned int nc = 0;

	for (unsigned int j = 0; j < n; j++)
		if (nbr_usable(c, &nbrs[j], ref, now) &&
		    cand_from_nbr(c, &nbrs[j], j, now, floor_ns, &cs[nc]))
			nc++;
	return nc;
}

/* What the candidates kept by the average say together. */
struct kept {
	unsigned int used;      /* how many kept (weight > 0) */
	double ssig;            /* their sigmas, weighted */
	uint16_t hops;          /* the fewest hops among them */
	uint32_t seq;           /* the highest ref_seq among them */
};

/* Tally the kept candidates, and report every one in use (when asked). */
static void
tally(const struct cand *cs, unsigned int nc, const struct ls_sync_nbr *nbrs, double est,
      struct ls_sync_nbr_use *use, struct kept *kp)
{
	bool seq_set = false;

	*kp = (struct kept){.hops = UINT16_MAX};
	for (unsigned int i = 0; i < nc; i++) {
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
		kp->used++;
		kp->ssig += w * cs[i].s;
		if (st->hops < kp->hops)
			kp->hops = st->hops;
		if (!seq_set || seq_after(st->ref_seq, kp->seq)) {
			kp->seq = st->ref_seq;
			seq_set = true;
		}
	}
}

/*
 * The cluster's pooled estimate for our readings (cluster_pool), est when
 * no candidate is in our cluster. *pool_sigma and *members as cluster_pool
 * sets them (sigma and 0 without a cluster).
 */
static double
pool_cluster(const struct ls_sync_node_conf *c, struct node_scratch *sc, unsigned int nc,
	     double est, double sigma, struct ls_sync_nbr_use *use, double *pool_sigma,
	     unsigned int *members)
{
	unsigned int i, nk = 0;
	double pooled;

	*pool_sigma = sigma;
	*members = 0;
	for (i = 0; i < nc; i++)
		if (sc->cand[i].cluster)
			sc->members[nk++] = sc->cand[i];
	if (nk == 0)
		return est;
	pooled = cluster_pool(c, est, sigma, sc->members, nk, sc->work, pool_sigma, members);
	for (i = 0; use != NULL && i < nk; i++) {
		const struct cand *k = &sc->work[1 + i]; /* cluster_pool put us first */

		use[k->j].cluster = true;
		use[k->j].cluster_weight = k->w;
	}
	return pooled;
}

/*
 * The robust average of the nc candidates, adopted as the node's state.
 * Returns how many neighbours it used, 0 when the average kept none (the
 * state is then untouched but for use[]).
 */
static int
adopt(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs, uint32_t ref,
      uint64_t now, double floor_ns, struct node_scratch *sc, unsigned int nc,
      struct ls_sync_state *s, struct ls_sync_nbr_use *use)
{
	const struct ls_sync_ref_seen *e;
	double est, sw = 0, pooled, pool_sigma;
	unsigned int members;
	struct kept kp;

	/*
	 * Start from the reference's own candidate when it is a neighbour,
	 * else from the weighted median. The other candidates all derive from
	 * the reference through their nodes: when several of those are wrong
	 * together (a neighbour that just restarted, its errors passed on),
	 * their median would win and cut the reference's edge, and the
	 * non-reference nodes would then drift off as one with nothing to hold
	 * them. The price: an edge to the reference that is itself bad is not
	 * voted down by the nodes that derive from it, unless it says so
	 * (ref_start).
	 */
	est = robust_average(c, sc->cand, nc, nbrs, ref, THETA_TOL, &sw);
	tally(sc->cand, nc, nbrs, est, use, &kp);
	if (kp.used == 0 || !(sw > 0))
		return 0;
	e = ref_find(s, ref);
	s->theta_ns = est;
	s->phi = phi_average(c, sc->cand, nc, sc->work, nbrs, ref, &s->phi_sigma);
	/*
	 * The weighted mean of the candidates' sigmas, not the inverse-variance
	 * sigma 1/sqrt(sum w): the candidates are not independent (all derive
	 * from the reference, often through each other), and the latter let
	 * two neighbours vouch for each other, each round shrinking both sigmas
	 * until any loaded edge looked clean. |sum w e| <= sum w |e| holds
	 * whatever the correlation, so a node's sigma never claims more than
	 * its candidates do.
	 */
	s->sigma_ns = fmax(kp.ssig / sw, floor_ns);
	pooled = pool_cluster(c, sc, nc, est, s->sigma_ns, use, &pool_sigma, &members);
	s->cluster_ns = pooled - est;
	s->cluster_n = (uint16_t)members;
	s->bound_sigma_ns = fmax(fmax(s->sigma_ns, pool_sigma),
				 anchored_sigma(sc->cand, nc, nbrs, pooled));
	s->hops = kp.hops < UINT16_MAX ? (uint16_t)(kp.hops + 1) : UINT16_MAX;
	s->ref_id = ref;
	s->ref_seq = kp.seq;
	s->ref_seq_at = e != NULL ? e->at : now;
	s->flags = LS_SYNC_F_SYNCED;
	s->t0 = now;
	s->t_good = now;
	return (int)kp.used;
}

/*
 * No candidate. A node that was synced holds over: theta carried along phi
 * to now so the announcement stays anchored near the present; sigma stays,
 * the reading's bound grows with now - t_good instead. One that never was
 * stays unsynced.
 */
static void
hold_over(uint64_t now, struct ls_sync_state *s)
{
	if (s->flags & LS_SYNC_F_SYNCED) {
		s->theta_ns += s->phi * (double)ns_diff(now, s->t0);
		s->t0 = now;
		s->flags = LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER;
	} else {
		s->t0 = now;
		s->flags = 0;
		s->ref_id = 0;
		s->hops = UINT16_MAX;
	}
}

int
ls_sync_node_update(const struct ls_sync_node_conf *c, const struct ls_sync_nbr *nbrs,
		    unsigned int n, uint64_t now, struct ls_sync_state *s,
		    struct ls_sync_nbr_use *use)
{
	double floor_ns = c->sigma_floor_ns > 0 ? c->sigma_floor_ns : LS_SYNC_SIGMA_MIN;
	struct node_scratch sc = {0};
	unsigned int nc = 0;
	uint32_t ref;
	int used = 0;

	if (use != NULL)
		memset(use, 0, n * sizeof(*use));
	s->node_id = c->self_id;
	note_refs(c, nbrs, n, now, s);
	ref = elect(c, nbrs, n, now, s);
	if (ref != 0 && ref == c->self_id) {
		if (!cut_off(c, nbrs, n, now, s)) {
			become_reference(c, now, s);
			return 0;
		}
		ref = 0; /* hold over, below */
	}
	/* Out of memory, like no usable neighbour: hold over. */
	if (ref != 0 && ref_alive(s, c, ref, now) && n > 0 && scratch_alloc(&sc, n) == 0)
		nc = gather(c, nbrs, n, ref, now, floor_ns, sc.cand);
	if (nc > 0)
		used = adopt(c, nbrs, ref, now, floor_ns, &sc, nc, s, use);
	free(sc.cand);
	if (used == 0)
		hold_over(now, s);
	return used;
}

/* ---- reading fleet time ----------------------------------------------- */

/*
 * The reading's sigma el ns after the last good step: the estimators'
 * (sigma_ns, bound_sigma_ns) and, in quadrature, the walk observed beyond
 * the one they budget for (ls_sync_bound_observe) over the estimate's lag
 * and el, along its tangent at el = 0 so that it is linear in el.
 */
static double
walk_sigma(const struct ls_sync_state *s, const struct ls_sync_node_conf *c, double el)
{
	double sb = fmax(s->sigma_ns, s->bound_sigma_ns), x2 = 0, s0;

	if (isfinite(s->wander_obs_ns) && !(s->flags & LS_SYNC_F_REF))
		x2 = fmax(0.0, s->wander_obs_ns * s->wander_obs_ns -
			       c->wander_ns * c->wander_ns) * 1e-9;
	if (!(x2 > 0))
		return sb;
	s0 = sqrt(sb * sb + x2 * fmax(s->lag_ns, 0.0));
	return s0 > 0 ? s0 + x2 * el / (2.0 * s0) : sqrt(x2 * el);
}

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
	half = 3.0 * walk_sigma(s, c, el) + c->asym_bound_ns +
	       (3.0 * s->phi_sigma + c->holdover_ppm * 1e-6) * el;
	if (!(half >= 0))
		half = isnan(half) ? INFINITY : 0;
	out->half_ns = half;
	h = half >= 1.8e19 ? UINT64_MAX : (uint64_t)ceil(half);
	out->earliest_ns = out->fleet_ns < h ? 0 : out->fleet_ns - h;
	out->latest_ns = out->fleet_ns > UINT64_MAX - h ? UINT64_MAX : out->fleet_ns + h;
}
