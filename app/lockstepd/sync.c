/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock synchronisation in lockstepd: lib/sync wired to the probe mesh.
 *
 * Data flow, all of it on the control thread except the two ends:
 *  - lcore, sender side: every reply's four timestamps (and the peer's sync
 *    state, when its reflector filled our sync TLV) go into the lcore's sync
 *    ring as a struct lsd_sync_rec (sender.c).
 *  - lsd_sync_drain(): pairs the two members of each coded pair and feeds
 *    them to the path's estimator (ls_sync_est_add_pair); keeps the peer's
 *    latest announced state; resets a peer's estimators when a probe no
 *    longer fits its edge (the peer's clock stepped) or when it announces
 *    that it restarted, and the next step acquires it again.
 *  - lsd_sync_poll(), every sync.interval_ms: fits every path, combines
 *    the paths of all peers that are the same node (IPv4 and IPv6 peers to
 *    one host are one edge), runs one network-effect step
 *    (ls_sync_node_update; the nodes and this step are sync_net.c's), all
 *    of it at most 200 us per control-loop pass (a command waits for a
 *    slice, not for every peer), and publishes the result three ways: our state
 *    for the reflector to put into sync TLVs (lsd.sync_pub), each peer's
 *    clock relative to ours for synced one-way delays (peer->owd), and
 *    fleet time with its bound in shared memory (fleettime.c), refreshed
 *    every 100 ms.
 *  - lcore, reflector side: fills sync TLVs from lsd.sync_pub (reflector.c).
 *
 * sync.c keeps its own list of the peers attached to it (control.c attaches
 * each new peer and detaches it before freeing), so it never asks the
 * registry above it; the one call down is peer.c's re-acquire message.
 *
 * Who solves: every node, for itself, from its neighbours' announcements
 * (a distributed Jacobi iteration of the weighted least-squares problem;
 * see lib/sync/ls_sync.h and docs/sync.md). A node needs nothing but the
 * peers it probes, so K random peers per node cost O(K) per step however
 * large the fleet.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#include <rte_seqlock.h>

#include "lockstepd.h"
#include "ls_reflect.h"
#include "ls_sync.h"
#include "sync_priv.h"

#define LS_SYNC_EST_CAP 1024        /* probes per path estimator, at most */
#define LS_SYNC_DRAIN_MAX 256       /* records per ring per drain call */
#define LS_SYNC_STEP_SLACK_NS 20000 /* a probe off its edge by more than
				     * its RTT/2 plus this is a clock step... */
#define LS_SYNC_STEP_RUN 8          /* ...when this many in a row are: a bad edge
				     * (heavy load, floors unseen) fails only the
				     * probes that met no queue, a step fails all */
#define LS_SYNC_EDGE_SIGMA_MIN 10.0   /* ns: no edge is better than this */

_Static_assert(LS_STAMP_SYNC_LEN == LS_SYNC_WIRE_LEN, "sync TLV carries one wire state");


#define LS_SYNC_DRIFT_SPAN_NS 2500000000ULL /* drift from the track once it spans 2.5 s */
#define NET_STEPS_PER_FIT 5 /* network steps per sync.interval_ms (sync_net.c) */

struct lsd_sync_ctx lsd_sync_st;

/* ---- set-up --------------------------------------------------------------- */

int
lsd_sync_init(struct ls_clock *clock, struct ls_clock *q_clock)
{
	const struct ls_conf_sync *c = &lsd.cfg.sync;
	int rc;

	lsd_sync_st.on = c->enabled;
	if (!lsd_sync_st.on)
		return 0;
	lsd_sync_st.clock = clock;
	lsd_sync_st.q_clock = q_clock;
	ls_sync_est_conf_default(&lsd_sync_st.econf);
	lsd_sync_st.econf.window_ns = (uint64_t)c->window_ms * 1000000ULL;
	lsd_sync_st.econf.purity_tol_ns = c->purity_tol_ns;
	lsd_sync_st.econf.outlier_ns = c->outlier_ns;
	lsd_sync_st.wander_ns = c->wander_ns;
	ls_sync_node_conf_default(&lsd_sync_st.nconf);
	lsd_sync_st.nconf.self_id = lsd.cfg.node_id;
	lsd_sync_st.nconf.reference_id = c->reference;
	lsd_sync_st.nconf.holdover_ppm = c->holdover_ppm;
	lsd_sync_st.nconf.asym_bound_ns = c->asym_bound_ns;
	lsd_sync_st.nconf.wander_ns = c->wander_ns;
	/*
	 * An edge's fitted sigma measures how tightly samples hug the
	 * envelopes, not the asymmetry no two-way method sees; never trust an
	 * edge more than the configured allowance says it can be off.
	 */
	lsd_sync_st.nconf.sigma_floor_ns = fmax(LS_SYNC_EDGE_SIGMA_MIN, c->asym_bound_ns / 2);
	lsd_sync_st.econf.sigma_floor_ns = lsd_sync_st.nconf.sigma_floor_ns;
	/* neighbours announce every step: allow a few missed ones */
	if (lsd_sync_st.nconf.state_timeout_ns < 6ULL * c->interval_ms * 1000000ULL)
		lsd_sync_st.nconf.state_timeout_ns = 6ULL * c->interval_ms * 1000000ULL;
	if (lsd_sync_st.nconf.ref_timeout_ns < 10ULL * c->interval_ms * 1000000ULL)
		lsd_sync_st.nconf.ref_timeout_ns = 10ULL * c->interval_ms * 1000000ULL;
	ls_sync_state_init(&lsd_sync_st.self, lsd.cfg.node_id);
	lsd_sync_st.ws = ls_sync_track_ws_create(EDGE_MAX_TRACKS);
	if (lsd_sync_st.ws == NULL || lsd_sync_nodes_init() != 0) {
		LSD_LOG(ERR, "sync: out of memory for the edge fit's workspace or the nodes");
		return -ENOMEM;
	}
	rte_seqlock_init(&lsd.sync_pub.lock);
	/* "Node N, not synced yet" from the first reply on: askers then know at
	 * once that we speak sync (their one-way delays wait for an offset
	 * instead of going in raw) and who we are. */
	ls_sync_wire_encode(&lsd_sync_st.self, lsd.sync_pub.wire);
	lsd.sync_pub.wire_sum = ls_reflect_sum(lsd.sync_pub.wire, LS_STAMP_SYNC_LEN);
	lsd.sync_pub.valid = true;
	lsd_sync_st.step_tsc = rte_get_tsc_hz() / 1000 * c->interval_ms;
	lsd_sync_st.next_step_tsc = rte_rdtsc() + lsd_sync_st.step_tsc;
	/* fleet time for the host: shared memory, chronyd */
	if ((rc = lsd_fleettime_start(c->shm)) < 0 || (rc = lsd_chrony_open(c->chrony_sock)) < 0)
		return rc;
	LSD_LOG(INFO, "sync: window %u ms, step %u ms, purity %u ns, reference %s",
	       c->window_ms, c->interval_ms, c->purity_tol_ns,
	       c->reference ? "configured" : "elected (lowest id)");
	return 0;
}

void
lsd_sync_fini(void)
{
	lsd_fleettime_close();
	lsd_chrony_close();
	ls_sync_track_ws_free(lsd_sync_st.ws);
	lsd_sync_st.ws = NULL;
	lsd_sync_nodes_fini();
}

/*
 * A path's window and ring for the peer's interval: the window at least
 * LS_SYNC_WINDOW_PAIRS x min_points pairs (ls_sync_est_window_for: 12 s
 * at a pair a second, where the 2 s default fits nothing after
 * acquisition), the ring the probes of a window and a step more (probes
 * expire only when a step fits).
 */
static uint64_t
peer_window(const struct lsd_peer *peer, uint32_t *cap)
{
	uint64_t w = ls_sync_est_window_for(&lsd_sync_st.econf, (uint64_t)peer->interval_us * 1000);
	uint64_t ms = w / 1000000 + lsd.cfg.sync.interval_ms;

	*cap = lsd_peer_probes_in(peer, (uint32_t)RTE_MIN(ms, UINT32_MAX), LS_SYNC_EST_CAP);
	return w;
}

/*
 * How many of its first paths a peer syncs on among n_peers: sync.paths,
 * and past sync.path_budget paths in all the budget shared out, at least
 * one each (a peer's true one-way delays need its edge). Each synced path
 * costs ~8 KiB at a pair a second (test_sync_bytes_pingmesh) and its
 * share of every fit step: at 10k peers x 8 paths that was 80,000
 * estimators, 5.3 s to load the config and over 8 KiB a peer-path, while
 * a lab of 16 peers x 64 paths stays within the default 4,096 on all.
 */
static uint16_t
paths_for(const struct lsd_peer *peer, unsigned int n_peers, uint32_t budget)
{
	uint16_t n = RTE_MIN(peer->n_paths, lsd.cfg.sync.paths);

	if (budget != 0 && n_peers != 0)
		n = (uint16_t)RTE_MIN(n, RTE_MAX(1u, budget / n_peers));
	return n;
}

/* Paths [from, to) of ps ready to estimate with the peer's window. */
static int
paths_init(const struct lsd_peer *peer, struct lsd_peer_sync *ps, uint16_t from, uint16_t to)
{
	struct ls_sync_est_conf ec = lsd_sync_st.econf;
	uint32_t cap;

	ec.asym_ns = peer->asym_ns;
	ec.window_ns = peer_window(peer, &cap);
	ps->window_ns = ec.window_ns;
	for (uint16_t i = from; i < to; i++) {
		memset(&ps->path[i], 0, sizeof(ps->path[i]));
		if (ls_sync_est_init(&ps->path[i].est, &ec, cap) != 0) {
			while (i-- > from)
				ls_sync_est_free(&ps->path[i].est);
			/* no track holds memory before its first window */
			return -ENOMEM;
		}
	}
	return 0;
}

int
lsd_sync_peer_attach(struct lsd_peer *peer)
{
	struct lsd_peer_sync *ps;
	uint16_t n;

	rte_seqlock_init(&peer->owd.lock);
	peer->owd.valid = false;
	if (!lsd_sync_st.on) {
		/* acquisition as before the budget, though nothing fits */
		peer->sync_paths = RTE_MIN(peer->n_paths, lsd.cfg.sync.paths);
		return 0;
	}
	/* the config's peers count from the first: a 10k-peer file starts
	 * each at its share, not the first 4,096 at all of theirs */
	n = paths_for(peer, RTE_MAX(lsd_sync_st.n_peers + 1, lsd.cfg.n_peers),
		      lsd.cfg.sync.path_budget);
	ps = calloc(1, sizeof(*ps) + n * sizeof(ps->path[0]));
	if (ps == NULL)
		return -ENOMEM;
	if (lsd_sync_st.n_peers == LS_MAX_PEERS) {
		free(ps);
		return -ENOSPC;
	}
	ps->n_paths = n;
	ps->node = -1;
	if (paths_init(peer, ps, 0, n) != 0) {
		free(ps);
		return -ENOMEM;
	}
	peer->sync = ps;
	peer->sync_paths = n;
	lsd_sync_st.peers[lsd_sync_st.n_peers++] = peer;
	return 0;
}

/*
 * The peer's synced paths to its share of the budget now that peers came
 * or went: fewer at once, more only once a quarter of the budget is free
 * again (a count of peers going up and down by one would otherwise drop
 * and start a path's estimate over and over). Called at the start of its
 * fit, before the step's node table holds it (the block may move).
 */
static void
rebalance(struct lsd_peer *peer)
{
	struct lsd_peer_sync *ps = peer->sync, *g;
	uint32_t budget = lsd.cfg.sync.path_budget;
	uint16_t n = ps->n_paths, want = paths_for(peer, lsd_sync_st.n_peers, budget);

	if (want > n)
		want = RTE_MAX(n, paths_for(peer, lsd_sync_st.n_peers, budget - budget / 4));
	if (want == n)
		return;
	for (uint16_t i = want; i < n; i++) {
		ls_sync_est_free(&ps->path[i].est);
		ls_sync_track_free(&ps->path[i].track);
	}
	if (want < n)
		ps->n_paths = want;
	g = realloc(ps, sizeof(*ps) + want * sizeof(ps->path[0]));
	if (g == NULL)
		return;         /* shrinking kept the block; growing waits */
	peer->sync = ps = g;
	if (want > n) {
		if (paths_init(peer, ps, n, want) != 0)
			return;
		ps->n_paths = want;
	}
	__atomic_store_n(&peer->sync_paths, ps->n_paths, __ATOMIC_RELAXED);
}

int
lsd_sync_peer_interval(struct lsd_peer *peer)
{
	struct lsd_peer_sync *ps = peer->sync;
	uint64_t w;
	uint32_t cap;
	int rc = 0;

	if (ps == NULL)
		return 0;
	w = peer_window(peer, &cap);
	/* a path that cannot grow its ring keeps the old one (and window) */
	for (uint16_t i = 0; i < ps->n_paths; i++)
		if (ls_sync_est_resize(&ps->path[i].est, w, cap) != 0)
			rc = -ENOMEM;
	if (rc == 0)
		ps->window_ns = w;
	return rc;
}

void
lsd_sync_peer_detach(struct lsd_peer *peer)
{
	struct lsd_peer_sync *ps = peer->sync;

	if (ps == NULL)
		return;
	/* out of the list (a removal moves the last peer into the gap, as in
	 * the registry, so both keep one order) */
	for (unsigned int i = 0; i < lsd_sync_st.n_peers; i++)
		if (lsd_sync_st.peers[i] == peer) {
			lsd_sync_st.peers[i] = lsd_sync_st.peers[--lsd_sync_st.n_peers];
			break;
		}
	/* records already queued for this peer name it: take them out first */
	lsd_sync_drain();
	lsd_sync_node_drop(ps);
	for (uint16_t i = 0; i < ps->n_paths; i++) {
		ls_sync_est_free(&ps->path[i].est);
		ls_sync_track_free(&ps->path[i].track);
	}
	free(ps);
	peer->sync = NULL;
}

/* ---- samples in --------------------------------------------------------- */

static void
peer_reset(struct lsd_peer_sync *ps)
{
	for (uint16_t i = 0; i < ps->n_paths; i++) {
		ls_sync_est_reset(&ps->path[i].est);
		ps->path[i].have_a = false;
		ps->path[i].fit.ok = false;
		ps->path[i].win.ok = false;
		ls_sync_track_reset(&ps->path[i].track);
	}
	ps->edge.ok = false;
	ps->edge_since = 0;
	ps->has_state = false;
	/* acquisition, as when the peer was added (the step asks its lcore:
	 * this runs inside the drain) */
	ps->reacquire = true;
	ps->resets++;
	lsd_sync_st.resets++;
}

/*
 * A probe pins the offset to within its own round trip: |offset - x| <=
 * RTT/2 with x its two-way offset. One far outside the current edge means
 * the peer's clock stepped (it restarted, or was set): start over.
 */
static bool
clock_stepped(const struct lsd_peer_sync *ps, const struct ls_sync_probe *p)
{
	double x, rtt, o;

	if (!ps->edge.ok)
		return false;
	x = ((double)(int64_t)(p->t2 - p->t1) - (double)(int64_t)(p->t4 - p->t3)) / 2;
	rtt = (double)(int64_t)(p->t4 - p->t1) - (double)(int64_t)(p->t3 - p->t2);
	o = ps->edge.offset_ns + ps->edge.drift * (double)(int64_t)(p->t1 - ps->edge.t_ref);
	return fabs(x - o) > fabs(rtt) / 2 + LS_SYNC_STEP_SLACK_NS + 3 * ps->edge.sigma_ns;
}

static void
take(const struct lsd_sync_rec *r)
{
	struct lsd_peer_sync *ps = r->peer->sync;
	struct ls_sync_probe p = {.t1 = r->t1, .t2 = r->t2, .t3 = r->t3, .t4 = r->t4};
	struct sync_path *sp;

	lsd_sync_st.recs++;
	if (ps == NULL || r->path >= ps->n_paths)
		return;
	if (r->has_state) {
		struct ls_sync_state st;

		if (ls_sync_wire_decode(r->state, &st) == 0) {
			/*
			 * Start over when another node took the address, or when
			 * the peer restarted: a node that was synced only ever
			 * announces synced or holdover again, until its daemon
			 * starts afresh (its first 500 ms announce "not synced
			 * yet"). Its clock may have stepped on restart by less
			 * than a probe's round trip can show (clock_stepped):
			 * in the lab, hundreds of microseconds on a 480 us round
			 * trip went into the windows, and every neighbour's edge
			 * to it kept a negative half gap as its floor.
			 */
			if ((ps->node_id != 0 && st.node_id != ps->node_id) ||
			    (ps->has_state && (ps->st.flags & LS_SYNC_F_SYNCED) &&
			     !(st.flags & LS_SYNC_F_SYNCED)))
				peer_reset(ps);
			ps->node_id = st.node_id;
			ps->st = st;
			ps->st_rx = r->t4;
			ps->has_state = true;
		}
	}
	if (!clock_stepped(ps, &p))
		ps->step_run = 0;
	else if (++ps->step_run >= LS_SYNC_STEP_RUN) {
		peer_reset(ps);
		ps->step_run = 0;
	}
	sp = &ps->path[r->path];
	if (r->member == 0) {
		if (sp->have_a)
			ls_sync_est_add_probe(&sp->est, &sp->a); /* its partner was lost */
		sp->a = p;
		sp->a_pair = r->pair_id;
		sp->have_a = true;
	} else if (sp->have_a && sp->a_pair == r->pair_id) {
		ls_sync_est_add_pair(&sp->est, &sp->a, &p);
		sp->have_a = false;
	} else {
		ls_sync_est_add_probe(&sp->est, &p);
	}
}

void
lsd_sync_drain(void)
{
	struct lsd_sync_rec recs[32];
	unsigned int l;

	if (!lsd_sync_st.on)
		return;
	RTE_LCORE_FOREACH(l) {
		struct rte_ring *ring = lsd.lcores[l].sync_ring;
		unsigned int n, total = 0;

		if (ring == NULL)
			continue;
		do {
			n = rte_ring_sc_dequeue_burst_elem(ring, recs, sizeof(recs[0]),
							   RTE_DIM(recs), NULL);
			for (unsigned int i = 0; i < n; i++)
				take(&recs[i]);
			total += n;
		} while (n == RTE_DIM(recs) && total < LS_SYNC_DRAIN_MAX * 8);
	}
}

/* ---- one step ----------------------------------------------------------- */

/*
 * The drift of the edge to this peer that the mesh implies: both ends' phi
 * from their last steps (the peer's as announced), when both are synced to
 * one reference. phi_self = phi_peer (1 + d) - d for the edge's drift d
 * (ls_sync_node_update), so d = (phi_peer - phi_self) / (1 - phi_peer).
 */
static bool
mesh_drift(const struct lsd_peer_sync *ps, double *d, double *sigma)
{
	const struct ls_sync_state *st = &ps->st, *self = &lsd_sync_st.self;

	if ((self->flags & (LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER)) != LS_SYNC_F_SYNCED ||
	    !ps->has_state || (st->flags & (LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER)) !=
				      LS_SYNC_F_SYNCED || st->ref_id != self->ref_id)
		return false;
	*d = (st->phi - self->phi) / (1.0 - st->phi);
	*sigma = hypot(self->phi_sigma, st->phi_sigma);
	return isfinite(*d) && isfinite(*sigma) && *sigma > 0;
}

/*
 * One path's estimate at now. The window is fitted at the path's drift once
 * it has one (its own slope before that): the track's, once the track
 * spans enough, or its floor samples' (ls_sync_est_floor_drift), whichever
 * is surer. It goes into the track, and the estimate is the track's: the
 * cleanest recent windows carried to now, not whatever the newest window
 * met.
 *
 * Where the mesh knows the drift better than the path's own track (md, with
 * sigma msig; NaN when it does not know), the window is fitted and the track
 * carried at the mesh's drift instead. In the first seconds under heavy load
 * a path sees its floors too rarely to pin its slope: at 90% in the lab a
 * path's own drift was 5 to 40 ppm off (and said so) for 10 s, while the
 * node's phi, pooled over every edge, was within 0.3 ppm after 5 s; carried
 * along the path's drift for the second or so to its floor samples, the
 * path's offset was microseconds off. The fit still reports the path's own
 * drift: that is what the network step averages into phi, and the mesh's
 * must not feed back into itself.
 */
static int
path_fit(struct sync_path *sp, uint64_t now, double md, double msig)
{
	double sig, b = ls_sync_track_drift(&sp->track, LS_SYNC_DRIFT_SPAN_NS, &sp->est.conf,
					    lsd_sync_st.wander_ns, &sig);
	double fsig, fb = ls_sync_est_floor_drift(&sp->est, now, lsd_sync_st.wander_ns, &fsig);
	double own, own_sig;
	int rc;

	/* The floor samples' slope, when surer: it needs one floor per
	 * direction on each side of the last seconds, not windows that met
	 * both (ls_sync_est_floor_drift), so under load it is there seconds
	 * before the track's. */
	if (!isnan(fb) && (isnan(b) || fsig < sig)) {
		b = fb;
		sig = fsig;
	}
	own = b;
	own_sig = sig;

	if (!isnan(b) && !isnan(md) && msig < sig) {
		b = md;
		sig = msig;
	}
	sp->est.conf.fixed_drift = b;
	sp->carry = NAN;
	rc = ls_sync_est_fit(&sp->est, now, &sp->win);
	if (rc != 0) {
		sp->fit.ok = false;
		return rc;
	}
	ls_sync_track_add(&sp->track, &sp->win);
	if (isnan(b)) {
		sp->fit = sp->win;
		return 0;
	}
	rc = ls_sync_track_fit(&sp->track, now, b, sig, lsd_sync_st.wander_ns, &sp->est.conf,
			       &sp->fit);
	if (rc == 0) {
		sp->carry = b;
		sp->carry_sigma = sig;
	}
	sp->fit.drift = own;
	sp->fit.drift_sigma = own_sig;
	/* the track holds no sample counts: report the newest window's, which
	 * is what an operator reads them as (without this, 0 once the track
	 * took over) */
	sp->fit.n_fwd = sp->win.n_fwd;
	sp->fit.n_rev = sp->win.n_rev;
	sp->fit.n_outliers = sp->win.n_outliers;
	return rc;
}

/* Sync's work per control-loop pass: fit step, nodes, network step. */
#define STEP_SLICE_US 200

/* One peer's part of the fit step: its paths' windows and tracks, its
 * edge, and its share of its node's (sync_net.c). */
static void
fit_peer(struct lsd_peer *peer, uint64_t now)
{
	struct lsd_peer_sync *ps = peer->sync;
	double md = NAN, msig = NAN;

	if (ps == NULL)
		return;
	if (lsd.cfg.sync.path_budget != 0) {
		rebalance(peer);
		ps = peer->sync;
	}
	/*
	 * Estimators that started over (the peer restarted) need what
	 * they needed at first: floor samples in both directions, rare
	 * under load. Neighbours of a restarted node probe it faster
	 * for probe.acquire_ms, as they did when it was added.
	 */
	if (ps->reacquire && lsd_acquire_on() && lsd_peer_acquire(peer) == 0)
		ps->reacquired++;
	ps->reacquire = false;
	if (!mesh_drift(ps, &md, &msig))
		md = msig = NAN;
	for (uint16_t k = 0; k < ps->n_paths; k++)
		path_fit(&ps->path[k], now, md, msig);
	if (lsd_sync_edge_fit(ps, false, now, &ps->edge) != 0)
		ps->edge.ok = false;
	if (!ps->edge.ok)
		ps->edge_since = 0;
	else if (ps->edge_since == 0)
		ps->edge_since = now;
	lsd_sync_node_take(ps, now);
}

/* fit_slice's look-ahead at peer c: the header of the peer three ahead,
 * the sync block of the one two ahead, the next one's paths. At 10k peers
 * each is a cache miss, and one peer after another they queued. */
static inline void
fit_prefetch(unsigned int c)
{
	struct lsd_peer *const *pe = lsd_sync_st.peers;
	const unsigned int n = lsd_sync_st.n_peers;
	const struct lsd_peer_sync *ps;

	if (c + 3 < n)
		rte_prefetch0(pe[c + 3]);
	if (c + 2 < n && pe[c + 2]->sync != NULL)
		rte_prefetch0(pe[c + 2]->sync);
	if (c + 1 < n && (ps = pe[c + 1]->sync) != NULL)
		for (uint16_t k = 0; k < ps->n_paths; k++) {
			rte_prefetch0(&ps->path[k].est);
			rte_prefetch0(&ps->path[k].fit);
			rte_prefetch0(&ps->path[k].track);
		}
}

/*
 * The fit step's per-peer part until the TSC end, resumed from where the
 * last pass stopped: with 10,000 peers x 8 paths a whole step took
 * milliseconds, and a command arriving during it waited that long
 * (peer.add p99 1.9 to 8.7 ms against 1 ms). Every path is fitted at the
 * step's instant, as when the step ran in one go. A peer attached
 * mid-step is fitted if the cursor has not passed it; one detached moves
 * the last into its place, which may then wait for the next step: one
 * step late, as a peer added just after a step is. Returns whether every
 * peer is done.
 */
static bool
fit_slice(uint64_t end)
{
	while (lsd_sync_st.step_cursor < lsd_sync_st.n_peers) {
		fit_prefetch(lsd_sync_st.step_cursor);
		fit_peer(lsd_sync_st.peers[lsd_sync_st.step_cursor++], lsd_sync_st.step_now);
		if (rte_rdtsc() > end)
			return lsd_sync_st.step_cursor >= lsd_sync_st.n_peers;
	}
	return true;
}

/*
 * The fit step, then the nodes' edges, then the network step, each in
 * slices: at most STEP_SLICE_US of them per control-loop pass (more only
 * when one peer or the network update itself takes longer), resumed where
 * the last pass stopped. A command waits for a slice, not for every peer.
 */
bool
lsd_sync_poll(uint64_t tsc)
{
	struct lsd_sync_ctx *st = &lsd_sync_st;
	uint64_t start, end;

	if (!st->on)
		return false;
	lsd_sync_drain();
	start = rte_rdtsc();
	end = start + rte_get_tsc_hz() / 1000000 * STEP_SLICE_US;
	if (!st->stepping && st->net == NET_IDLE && tsc >= st->next_step_tsc) {
		st->stepping = true;
		st->step_cursor = 0;
		st->step_passes = 0;
		st->step_at = rte_rdtsc();
		st->step_now = ls_clock_from_tsc(st->clock, st->step_at);
		st->next_step_tsc = tsc + st->step_tsc;
		st->next_net_tsc = tsc + st->step_tsc / NET_STEPS_PER_FIT;
		lsd_sync_nodes_begin();
	}
	if (st->stepping) {
		st->step_passes++;
		if (fit_slice(end) && lsd_sync_nodes_slice(end)) {
			st->stepping = false;
			/* a step done in one pass announces at its own instant
			 * (as before slicing); one spread over passes at the time
			 * it ends, its edges carried there along their drifts */
			lsd_sync_net_begin(st->step_passes == 1 ? st->step_now :
					   ls_clock_from_tsc(st->clock, rte_rdtsc()), true);
		}
	} else if (st->net == NET_IDLE && tsc >= st->next_net_tsc) {
		if (lsd_sync_net_fast())
			lsd_sync_net_begin(ls_clock_from_tsc(st->clock, rte_rdtsc()), false);
		st->next_net_tsc = tsc + st->step_tsc / NET_STEPS_PER_FIT;
	}
	if (st->net != NET_IDLE)
		lsd_sync_net_slice(start, end);
	lsd_fleettime_poll(tsc, st->clock, &st->self, &st->nconf);
	lsd_chrony_poll(tsc, st->clock, &st->self, &st->nconf);
	return st->stepping || st->net != NET_IDLE;
}
