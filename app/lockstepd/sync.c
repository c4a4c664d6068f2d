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
 *  - lsd_sync_poll(), every sync.interval_ms: fits every path (at most
 *    200 us of it per control-loop pass: a command waits for a slice, not
 *    for every peer), combines the paths of all peers that are the same
 *    node (IPv4 and IPv6 peers to one host are one edge), runs one
 *    network-effect step
 *    (ls_sync_node_update) and publishes the result three ways: our state
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
#include "ls_sync.h"
#include "sync_priv.h"

#define LS_SYNC_EST_CAP 1024        /* probes per path estimator, at most */
#define LS_SYNC_DRAIN_MAX 256       /* records per ring per drain call */
#define LS_SYNC_STEP_SLACK_NS 20000 /* a probe off its edge by more than
				     * its RTT/2 plus this is a clock step... */
#define LS_SYNC_STEP_RUN 8          /* ...when this many in a row are: a bad edge
				     * (heavy load, floors unseen) fails only the
				     * probes that met no queue, a step fails all */
#define LS_SYNC_MAX_NBRS 4096       /* neighbour nodes in the network step */
#define LS_SYNC_EDGE_SIGMA_MIN 10.0   /* ns: no edge is better than this */

_Static_assert(LS_STAMP_SYNC_LEN == LS_SYNC_WIRE_LEN, "sync TLV carries one wire state");


#define LS_SYNC_DRIFT_SPAN_NS 2500000000ULL /* drift from the track once it spans 2.5 s */
#define EDGE_MAX_TRACKS (LS_MAX_PATHS * 4)   /* an edge's paths: a node's peers (v4, v6) */
#define NET_STEPS_PER_FIT 5 /* network steps per sync.interval_ms (net_step) */

/* One neighbour node: every peer that is the same node, one edge. */
struct sync_node {
	struct ls_sync_nbr nbr;
	struct ls_sync_nbr_use use;
	double ntp_ns, ptp_ns, min_rtt_ns; /* baselines (drift-corrected to now) */
	uint32_t n_base;
	uint64_t fwd_kept, fwd_rej, rev_kept, rev_rej;
};

static struct {
	bool on;
	struct ls_sync_node_conf nconf;
	struct ls_sync_est_conf econf;
	double wander_ns;           /* sync.wander_ns: the tracks' allowance */
	struct ls_sync_state self;
	struct ls_clock *clock;     /* the control thread's readers (clock.c): sync */
	struct ls_clock *q_clock;   /*   runs there too; q_clock for queries at a TSC */
	uint64_t next_step_tsc, next_net_tsc;
	uint64_t step_tsc;          /* sync interval in TSC ticks */
	bool stepping;              /* a fit step is under way (fit_slice) */
	unsigned int step_cursor;   /* ... the next peer it fits */
	unsigned int step_passes;   /* ... control-loop passes it took so far */
	uint64_t step_at;           /* ... its instant: TSC */
	uint64_t step_now;          /* ... and local time, every path's fit's t_ref */
	uint64_t steps;             /* fit steps (each also a network step) */
	uint64_t net_steps;         /* network steps */
	uint64_t last_step_tsc;     /* when the last step ran (its "now") */
	uint64_t recs, resets;
	struct lsd_peer *peers[LS_MAX_PEERS]; /* attached peers, in attach order */
	unsigned int n_peers;
	struct sync_node nodes[LS_SYNC_MAX_NBRS];
	unsigned int n_nodes;
	struct ls_sync_track_ws *ws; /* scratch for fitting an edge's tracks */
	struct ls_sync_wobs wobs;    /* our estimate over time: the bound's walk */
} sync_st;

/* ---- set-up --------------------------------------------------------------- */

int
lsd_sync_init(struct ls_clock *clock, struct ls_clock *q_clock)
{
	const struct ls_conf_sync *c = &lsd.cfg.sync;
	int rc;

	sync_st.on = c->enabled;
	if (!sync_st.on)
		return 0;
	sync_st.clock = clock;
	sync_st.q_clock = q_clock;
	ls_sync_est_conf_default(&sync_st.econf);
	sync_st.econf.window_ns = (uint64_t)c->window_ms * 1000000ULL;
	sync_st.econf.purity_tol_ns = c->purity_tol_ns;
	sync_st.econf.outlier_ns = c->outlier_ns;
	sync_st.wander_ns = c->wander_ns;
	ls_sync_node_conf_default(&sync_st.nconf);
	sync_st.nconf.self_id = lsd.cfg.node_id;
	sync_st.nconf.reference_id = c->reference;
	sync_st.nconf.holdover_ppm = c->holdover_ppm;
	sync_st.nconf.asym_bound_ns = c->asym_bound_ns;
	sync_st.nconf.wander_ns = c->wander_ns;
	/*
	 * An edge's fitted sigma measures how tightly samples hug the
	 * envelopes, not the asymmetry no two-way method sees; never trust an
	 * edge more than the configured allowance says it can be off.
	 */
	sync_st.nconf.sigma_floor_ns = fmax(LS_SYNC_EDGE_SIGMA_MIN, c->asym_bound_ns / 2);
	sync_st.econf.sigma_floor_ns = sync_st.nconf.sigma_floor_ns;
	/* neighbours announce every step: allow a few missed ones */
	if (sync_st.nconf.state_timeout_ns < 6ULL * c->interval_ms * 1000000ULL)
		sync_st.nconf.state_timeout_ns = 6ULL * c->interval_ms * 1000000ULL;
	if (sync_st.nconf.ref_timeout_ns < 10ULL * c->interval_ms * 1000000ULL)
		sync_st.nconf.ref_timeout_ns = 10ULL * c->interval_ms * 1000000ULL;
	ls_sync_state_init(&sync_st.self, lsd.cfg.node_id);
	sync_st.ws = ls_sync_track_ws_create(EDGE_MAX_TRACKS);
	if (sync_st.ws == NULL) {
		LSD_LOG(ERR, "sync: out of memory for the edge fit's workspace");
		return -ENOMEM;
	}
	rte_seqlock_init(&lsd.sync_pub.lock);
	/* "Node N, not synced yet" from the first reply on: askers then know at
	 * once that we speak sync (their one-way delays wait for an offset
	 * instead of going in raw) and who we are. */
	ls_sync_wire_encode(&sync_st.self, lsd.sync_pub.wire);
	lsd.sync_pub.valid = true;
	sync_st.step_tsc = rte_get_tsc_hz() / 1000 * c->interval_ms;
	sync_st.next_step_tsc = rte_rdtsc() + sync_st.step_tsc;
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
	ls_sync_track_ws_free(sync_st.ws);
	sync_st.ws = NULL;
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
	uint64_t w = ls_sync_est_window_for(&sync_st.econf, (uint64_t)peer->interval_us * 1000);
	uint64_t ms = w / 1000000 + lsd.cfg.sync.interval_ms;

	*cap = lsd_peer_probes_in(peer, (uint32_t)RTE_MIN(ms, UINT32_MAX), LS_SYNC_EST_CAP);
	return w;
}

int
lsd_sync_peer_attach(struct lsd_peer *peer)
{
	struct lsd_peer_sync *ps;
	struct ls_sync_est_conf ec;
	uint32_t cap;
	uint16_t n;

	rte_seqlock_init(&peer->owd.lock);
	peer->owd.valid = false;
	if (!sync_st.on)
		return 0;
	/* sync.paths: the first ones only (each path's estimator and track;
	 * tests/unit/test_sync_est.c's test_sync_bytes_* say how much) */
	n = RTE_MIN(peer->n_paths, lsd.cfg.sync.paths);
	ps = calloc(1, sizeof(*ps) + n * sizeof(ps->path[0]));
	if (ps == NULL)
		return -ENOMEM;
	if (sync_st.n_peers == LS_MAX_PEERS) {
		free(ps);
		return -ENOSPC;
	}
	ps->n_paths = n;
	ec = sync_st.econf;
	ec.asym_ns = peer->asym_ns;
	ec.window_ns = peer_window(peer, &cap);
	ps->window_ns = ec.window_ns;
	for (uint16_t i = 0; i < n; i++)
		if (ls_sync_est_init(&ps->path[i].est, &ec, cap) != 0) {
			while (i-- > 0)
				ls_sync_est_free(&ps->path[i].est);
			/* no track holds memory before its first window */
			free(ps);
			return -ENOMEM;
		}
	peer->sync = ps;
	sync_st.peers[sync_st.n_peers++] = peer;
	return 0;
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
	for (unsigned int i = 0; i < sync_st.n_peers; i++)
		if (sync_st.peers[i] == peer) {
			sync_st.peers[i] = sync_st.peers[--sync_st.n_peers];
			break;
		}
	/* records already queued for this peer name it: take them out first */
	lsd_sync_drain();
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
	sync_st.resets++;
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

	sync_st.recs++;
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

	if (!sync_st.on)
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
	const struct ls_sync_state *st = &ps->st;

	if ((sync_st.self.flags & (LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER)) != LS_SYNC_F_SYNCED ||
	    !ps->has_state || (st->flags & (LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER)) !=
				      LS_SYNC_F_SYNCED || st->ref_id != sync_st.self.ref_id)
		return false;
	*d = (st->phi - sync_st.self.phi) / (1.0 - st->phi);
	*sigma = hypot(sync_st.self.phi_sigma, st->phi_sigma);
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
					    sync_st.wander_ns, &sig);
	double fsig, fb = ls_sync_est_floor_drift(&sp->est, now, sync_st.wander_ns, &fsig);
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
	rc = ls_sync_track_fit(&sp->track, now, b, sig, sync_st.wander_ns, &sp->est.conf, &sp->fit);
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

/* Fold one path's baselines (moved to now along the edge's drift, so they
 * differ from the envelope only in how they pick the offset) into a
 * neighbour's: NTP-style keeps the least-RTT probe of all its paths,
 * PTP-style the mean of all its probes. */
static void
baselines(struct sync_node *nd, const struct ls_sync_est *e, uint64_t now, double drift)
{
	struct ls_sync_baseline b;

	ls_sync_est_baselines(e, now, drift, &b);
	if (!b.ok)
		return;
	if (b.min_rtt_ns < nd->min_rtt_ns) {
		nd->min_rtt_ns = b.min_rtt_ns;
		nd->ntp_ns = b.ntp_offset_ns;
	}
	nd->ptp_ns = (nd->ptp_ns * nd->n_base + b.ptp_offset_ns * b.n) / (nd->n_base + b.n);
	nd->n_base += b.n;
}

static struct sync_node *
node_find(uint32_t id)
{
	for (unsigned int i = 0; i < sync_st.n_nodes; i++)
		if (sync_st.nodes[i].nbr.id == id)
			return &sync_st.nodes[i];
	return NULL;
}

static struct sync_node *
node_slot(uint32_t id)
{
	struct sync_node *nd = node_find(id);

	if (nd != NULL)
		return nd;
	if (sync_st.n_nodes == LS_SYNC_MAX_NBRS)
		return NULL;
	memset(&sync_st.nodes[sync_st.n_nodes], 0, sizeof(sync_st.nodes[0]));
	sync_st.nodes[sync_st.n_nodes].nbr.id = id;
	sync_st.nodes[sync_st.n_nodes].min_rtt_ns = INFINITY;
	return &sync_st.nodes[sync_st.n_nodes++];
}

/* Peer clock relative to ours for synced one-way delays: the fleet-
 * consistent difference when both ends are synced to one reference, else
 * the raw edge. */
static void
publish_owd(struct lsd_peer *peer, uint64_t now)
{
	const struct lsd_peer_sync *ps = peer->sync;
	struct lsd_peer_owd o = {.valid = false};

	/* the node-level edge (all peers that are this node), for the reflector */
	if (ps != NULL && ps->node_id != 0) {
		for (unsigned int j = 0; j < sync_st.n_nodes; j++)
			if (sync_st.nodes[j].nbr.id == ps->node_id && sync_st.nodes[j].nbr.has_edge) {
				const struct ls_sync_fit *e = &sync_st.nodes[j].nbr.edge;

				o.edge_valid = true;
				o.edge_ns = e->offset_ns +
					    e->drift * (double)(int64_t)(now - e->t_ref);
				o.edge_drift = e->drift;
				o.edge_sigma = e->sigma_ns;
			}
	}

	/*
	 * Delays wait two windows from the edge's first fit. The first
	 * windows rest on the start-up's probes, when every host is busy
	 * starting processes: in the sync-fabric lab (kernel stamps) the
	 * first fits were 14 to 100 us off while the paths' sigmas said 1 to
	 * 35 us, as if one direction's stack delay sat above the other's in
	 * every sample, which no two-way fit can see. Corrected by such an
	 * offset, delays went up to 42 us under the propagation floor and
	 * stayed in the 10 s and 60 s windows (a CI failure). Two windows
	 * on, the fit's samples all come from after the first window.
	 */
	if (ps != NULL && ps->edge.ok && now - ps->edge_since >= 2 * ps->window_ns) {
		double e = ps->edge.offset_ns + ps->edge.drift * (double)(int64_t)(now - ps->edge.t_ref);

		o.valid = true;
		o.t0 = now;
		o.off_ns = e;
		o.drift = ps->edge.drift;
		if ((sync_st.self.flags & LS_SYNC_F_SYNCED) && ps->has_state &&
		    (ps->st.flags & LS_SYNC_F_SYNCED) && ps->st.ref_id == sync_st.self.ref_id) {
			/* the peer's local time now is about now + e */
			double th_b = ps->st.theta_ns + ps->st.phi *
				      ((double)(int64_t)(now - ps->st.t0) + e);

			o.off_ns = th_b - sync_st.self.theta_ns;
			o.drift = ps->st.phi - sync_st.self.phi;
		}
	}
	rte_seqlock_write_lock(&peer->owd.lock);
	peer->owd.valid = o.valid;
	peer->owd.t0 = o.t0;
	peer->owd.off_ns = o.off_ns;
	peer->owd.drift = o.drift;
	peer->owd.edge_valid = o.edge_valid;
	peer->owd.edge_ns = o.edge_ns;
	peer->owd.edge_drift = o.edge_drift;
	peer->owd.edge_sigma = o.edge_sigma;
	rte_seqlock_write_unlock(&peer->owd.lock);
}

/*
 * An edge from the paths of the peers that are one node (the peer one, or
 * when one is NULL every peer with node id node): drift, half gap and counts from
 * the paths' fits (ls_sync_combine), the offset from one filter over all
 * their tracks (ls_sync_track_fit_many).
 *
 * Why one filter: every path to a node sees the same two clocks, so the
 * same walk, while each path's probes carry their own stamping noise.
 * Each path's track alone averages its windows over seconds to get that
 * noise down, and the walk since then is in every path's result alike;
 * averaging the paths afterwards cannot take it out. In the one-path
 * simulation with four paths (tools/bench/sim_track), the edge's rms error
 * went from 34 to 30 ns at 0% load and from 38 to 33 ns at 50%.
 * The sigma stays at least the paths' combined one: paths that share
 * links share queues, which the filter counts as independent.
 */
static int
edge_fit(const struct lsd_peer_sync *one, uint32_t node, uint64_t now, struct ls_sync_fit *out)
{
	struct ls_sync_fit fits[EDGE_MAX_TRACKS], many;
	const struct ls_sync_track *k[EDGE_MAX_TRACKS];
	const struct ls_sync_est_conf *conf[EDGE_MAX_TRACKS];
	double b[EDGE_MAX_TRACKS], bs[EDGE_MAX_TRACKS];
	/* one peer's edge: that peer only (scanning them all per peer was
	 * quadratic: 83% of the control thread at 4,600 peers) */
	unsigned int np = one != NULL ? 1 : sync_st.n_peers, nf = 0, nk = 0;

	for (unsigned int i = 0; i < np; i++) {
		const struct lsd_peer_sync *ps = one != NULL ? one : sync_st.peers[i]->sync;

		if (ps == NULL || (one == NULL && ps->node_id != node))
			continue;
		for (uint16_t j = 0; j < ps->n_paths && nf < EDGE_MAX_TRACKS; j++) {
			const struct sync_path *sp = &ps->path[j];

			if (!sp->fit.ok)
				continue;
			fits[nf++] = sp->fit;
			if (isnan(sp->carry))
				continue;
			k[nk] = &sp->track;
			conf[nk] = &sp->est.conf;
			b[nk] = sp->carry;
			bs[nk] = sp->carry_sigma;
			nk++;
		}
	}
	if (ls_sync_combine(fits, nf, now, out) != 0)
		return -ENODATA;
	/* every fitted path carried by its track, or the windows' own fits
	 * until the tracks span enough for a drift */
	if (nk == nf &&
	    ls_sync_track_fit_many(k, b, bs, nk, now, sync_st.wander_ns, conf, sync_st.ws, &many) == 0 &&
	    isfinite(many.offset_ns)) {
		out->offset_ns = many.offset_ns;
		out->sigma_ns = fmax(out->sigma_ns, many.sigma_ns);
		out->lag_ns = many.lag_ns;
	}
	return 0;
}

static void net_step(uint64_t now);

/* Fit step work per control-loop pass (fit_slice). */
#define STEP_SLICE_US 200

/* One peer's part of the fit step: its paths' windows and tracks, then
 * its edge. */
static void
fit_peer(struct lsd_peer *peer, uint64_t now)
{
	struct lsd_peer_sync *ps = peer->sync;
	double md = NAN, msig = NAN;

	if (ps == NULL)
		return;
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
	if (edge_fit(ps, 0, now, &ps->edge) != 0)
		ps->edge.ok = false;
	if (!ps->edge.ok)
		ps->edge_since = 0;
	else if (ps->edge_since == 0)
		ps->edge_since = now;
}

/*
 * The fit step's per-peer part, at most STEP_SLICE_US of it per pass,
 * resumed from where the last pass stopped: with 10,000 peers x 8 paths a
 * whole step took milliseconds, and a command arriving during it waited
 * that long (peer.add p99 1.9 to 8.7 ms against 1 ms). Every path is
 * fitted at the step's instant, as when the step ran in one go. A peer
 * attached mid-step is fitted if the cursor has not passed it; one
 * detached moves the last into its place, which may then wait for the
 * next step: one step late, as a peer added just after a step is.
 * Returns whether every peer is done.
 */
static bool
fit_slice(void)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz() / 1000000 * STEP_SLICE_US;

	sync_st.step_passes++;
	while (sync_st.step_cursor < sync_st.n_peers) {
		fit_peer(sync_st.peers[sync_st.step_cursor++], sync_st.step_now);
		if (rte_rdtsc() > end)
			return sync_st.step_cursor >= sync_st.n_peers;
	}
	return true;
}

/* The fit step's end, once every peer is fitted: the nodes' edges from
 * their peers', then a network step on them. */
static void
step_end(void)
{
	uint64_t now = sync_st.step_now;
	unsigned int np = sync_st.n_peers;

	sync_st.n_nodes = 0;
	/* one neighbour per node id: IPv4 and IPv6 peers of a host are one edge */
	for (unsigned int i = 0; i < np; i++) {
		struct lsd_peer_sync *ps = sync_st.peers[i]->sync;
		struct sync_node *nd;

		if (ps == NULL || ps->node_id == 0 || ps->node_id == lsd.cfg.node_id)
			continue;
		nd = node_slot(ps->node_id);
		if (nd == NULL)
			continue;
		/* its newest announcement: net_step, below */
		for (uint16_t k = 0; k < ps->n_paths; k++) {
			const struct ls_sync_est *e = &ps->path[k].est;

			nd->fwd_kept += e->fwd_kept;
			nd->fwd_rej += e->fwd_rejected;
			nd->rev_kept += e->rev_kept;
			nd->rev_rej += e->rev_rejected;
			if (ps->edge.ok)
				baselines(nd, e, now, ps->edge.drift);
		}
	}
	for (unsigned int j = 0; j < sync_st.n_nodes; j++) {
		struct sync_node *nd = &sync_st.nodes[j];
		const struct lsd_peer_sync *only = NULL;
		unsigned int peers = 0;

		for (unsigned int i = 0; i < np; i++) {
			const struct lsd_peer_sync *ps = sync_st.peers[i]->sync;

			if (ps != NULL && ps->node_id == nd->nbr.id) {
				only = ps;
				peers++;
			}
		}
		/* one peer (the usual case): its edge, not the same filter again */
		if (peers == 1) {
			nd->nbr.edge = only->edge;
			nd->nbr.has_edge = only->edge.ok;
		} else {
			nd->nbr.has_edge = edge_fit(NULL, nd->nbr.id, now, &nd->nbr.edge) == 0;
		}
	}
	sync_st.steps++;
	sync_st.last_step_tsc = sync_st.step_at;
	/* a step done in one pass announces at its own instant (as before
	 * slicing); one spread over passes at the time it ends, its edges
	 * carried there along their drifts */
	net_step(sync_st.step_passes > 1 ? ls_clock_from_tsc(sync_st.clock, rte_rdtsc()) : now);
}

/*
 * The network step alone: our theta and phi from the neighbours' newest
 * announcements and the edges of the last fit step, carried to now along
 * their drifts; then announce it. It runs once per fit step, and up to
 * NET_STEPS_PER_FIT times while net_fast() holds.
 *
 * Why more often than the fits: each node averages its neighbours'
 * announced thetas, and an announcement is as old as the step that made
 * it. A node whose reference candidate carries weight w settles where its
 * lag is the edge's plus (1 - w) / w times that age (docs/sync.md). The
 * step is cheap; the window fits are what costs. After it, the bound's
 * walk is observed from our estimate over time (ls_sync_bound_observe).
 */
static void
net_step(uint64_t now)
{
	struct ls_sync_nbr nbrs[LS_SYNC_MAX_NBRS];
	struct ls_sync_nbr_use use[LS_SYNC_MAX_NBRS];
	unsigned int np = sync_st.n_peers;
	uint8_t wire[LS_SYNC_WIRE_LEN];

	/* each node's newest announcement over all its peers */
	for (unsigned int i = 0; i < np; i++) {
		const struct lsd_peer_sync *ps = sync_st.peers[i]->sync;
		struct sync_node *nd;

		if (ps == NULL || !ps->has_state || (nd = node_find(ps->node_id)) == NULL)
			continue;
		if (!nd->nbr.has_state || ps->st_rx > nd->nbr.st_rx) {
			nd->nbr.has_state = true;
			nd->nbr.st = ps->st;
			nd->nbr.st_rx = ps->st_rx;
		}
	}
	for (unsigned int j = 0; j < sync_st.n_nodes; j++)
		nbrs[j] = sync_st.nodes[j].nbr;
	ls_sync_node_update(&sync_st.nconf, nbrs, sync_st.n_nodes, now, &sync_st.self, use);
	ls_sync_bound_observe(&sync_st.wobs, &sync_st.nconf, nbrs, use, sync_st.n_nodes, now,
			      &sync_st.self);
	for (unsigned int j = 0; j < sync_st.n_nodes; j++)
		sync_st.nodes[j].use = use[j];
	sync_st.net_steps++;

	ls_sync_wire_encode(&sync_st.self, wire);
	rte_seqlock_write_lock(&lsd.sync_pub.lock);
	memcpy(lsd.sync_pub.wire, wire, sizeof(wire));
	lsd.sync_pub.valid = true;
	rte_seqlock_write_unlock(&lsd.sync_pub.lock);
	for (unsigned int i = 0; i < np; i++)
		publish_owd(sync_st.peers[i], now);
}

/*
 * Whether the network steps between fit steps pay: only while the clocks'
 * walk over one fit interval is at least a tenth of our own sigma. Under
 * heavy load, in the first seconds, edges are microseconds off and change
 * at every fit; one network step per fit damps those transients, five
 * follow them (docs/sync.md, "Why the network step runs five times").
 */
static bool
net_fast(void)
{
	double walk = sync_st.wander_ns * sqrt((double)lsd.cfg.sync.interval_ms * 1e-3);

	return (sync_st.self.flags & (LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER)) == LS_SYNC_F_SYNCED &&
	       sync_st.self.sigma_ns <= 10.0 * walk;
}

bool
lsd_sync_poll(uint64_t tsc)
{
	if (!sync_st.on)
		return false;
	lsd_sync_drain();
	if (!sync_st.stepping && tsc >= sync_st.next_step_tsc) {
		sync_st.stepping = true;
		sync_st.step_cursor = 0;
		sync_st.step_passes = 0;
		sync_st.step_at = rte_rdtsc();
		sync_st.step_now = ls_clock_from_tsc(sync_st.clock, sync_st.step_at);
		sync_st.next_step_tsc = tsc + sync_st.step_tsc;
		sync_st.next_net_tsc = tsc + sync_st.step_tsc / NET_STEPS_PER_FIT;
	}
	if (sync_st.stepping) {
		if (fit_slice()) {
			step_end();
			sync_st.stepping = false;
		}
	} else if (tsc >= sync_st.next_net_tsc) {
		if (net_fast())
			net_step(ls_clock_from_tsc(sync_st.clock, rte_rdtsc()));
		sync_st.next_net_tsc = tsc + sync_st.step_tsc / NET_STEPS_PER_FIT;
	}
	lsd_fleettime_poll(tsc, sync_st.clock, &sync_st.self, &sync_st.nconf);
	lsd_chrony_poll(tsc, sync_st.clock, &sync_st.self, &sync_st.nconf);
	return sync_st.stepping;
}

/* ---- reporting ---------------------------------------------------------- */

json_t *
lsd_sync_json(uint64_t tsc)
{
	struct ls_sync_reading r;
	uint64_t now, local;
	unsigned int np = sync_st.n_peers;
	json_t *o, *nbrs;

	if (!sync_st.on)
		return json_pack("{s:b}", "enabled", 0);
	now = ls_clock_now(sync_st.clock);
	if (tsc == 0)
		tsc = rte_rdtsc();
	local = ls_clock_from_tsc(sync_st.q_clock, tsc);
	ls_sync_fleet_read(&sync_st.self, &sync_st.nconf, local, &r);
	o = json_pack("{s:b, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:f}, s:{s:I, s:I, s:I, s:I, s:I}}",
		      "enabled", 1, "state", lsd_sync_state_json(&sync_st.self, now, true),
		      "reading", "tsc", (json_int_t)tsc, "local_ns", (json_int_t)local,
		      "fleet_ns", (json_int_t)r.fleet_ns,
		      "earliest_ns", (json_int_t)r.earliest_ns,
		      "latest_ns", (json_int_t)(r.latest_ns > INT64_MAX ? INT64_MAX : r.latest_ns),
		      "half_ns", r.flags ? r.half_ns : -1.0,
		      "counters", "records", (json_int_t)sync_st.recs,
		      "steps", (json_int_t)sync_st.steps, "net_steps", (json_int_t)sync_st.net_steps,
		      "resets", (json_int_t)sync_st.resets,
		      "shm_updates", (json_int_t)lsd_fleettime_updates());
	{
		json_t *t = lsd_clock_truth_at(tsc);

		if (t != NULL)
			json_object_set_new(o, "truth", t);
	}
	json_object_set_new(o, "chrony", lsd_chrony_json());
	nbrs = json_array();
	for (unsigned int j = 0; j < sync_st.n_nodes; j++) {
		const struct sync_node *nd = &sync_st.nodes[j];
		json_t *names = json_array(), *n;

		for (unsigned int i = 0; i < np; i++) {
			const struct lsd_peer *peer = sync_st.peers[i];

			if (peer->sync != NULL && peer->sync->node_id == nd->nbr.id)
				json_array_append_new(names, json_string(peer->name));
		}
		n = json_pack("{s:i, s:o, s:o, s:o, s:f, s:b, s:f, s:f, s:f, s:f, s:b, "
			      "s:{s:I, s:I, s:I, s:I}}",
			      "node_id", (int)nd->nbr.id, "peers", names,
			      "edge", nd->nbr.has_edge ? lsd_sync_fit_json(&nd->nbr.edge) : json_null(),
			      "state", nd->nbr.has_state ? lsd_sync_state_json(&nd->nbr.st, 0, false) :
							 json_null(),
			      "state_age_ms", nd->nbr.has_state && now > nd->nbr.st_rx ?
				      (double)(now - nd->nbr.st_rx) / 1e6 : -1.0,
			      "used", nd->use.used, "weight", nd->use.weight,
			      "residual_ns", nd->use.residual_ns, "scale_ns", nd->use.scale_ns,
			      "back_ns", nd->use.back_ns, "rejected", nd->use.rejected,
			      "purity", "fwd_kept", (json_int_t)nd->fwd_kept,
			      "fwd_rejected", (json_int_t)nd->fwd_rej,
			      "rev_kept", (json_int_t)nd->rev_kept,
			      "rev_rejected", (json_int_t)nd->rev_rej);
		json_object_set_new(n, "cluster", json_boolean(nd->use.cluster));
		if (nd->use.cluster)
			json_object_set_new(n, "cluster_weight", json_real(nd->use.cluster_weight));
		if (nd->n_base > 0)
			json_object_set_new(n, "baselines",
				json_pack("{s:f, s:f, s:f, s:i}", "ntp_offset_ns", nd->ntp_ns,
					  "ptp_offset_ns", nd->ptp_ns, "min_rtt_ns", nd->min_rtt_ns,
					  "probes", (int)nd->n_base));
		json_array_append_new(nbrs, n);
	}
	json_object_set_new(o, "neighbors", nbrs);
	/* edges and baselines refer to this instant */
	json_object_set_new(o, "step_tsc", json_integer((json_int_t)sync_st.last_step_tsc));
	return o;
}
