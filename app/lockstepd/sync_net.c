/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock sync's edges, neighbour nodes and network step in lockstepd
 * (sync.c has the set-up, the samples and the fit step, and calls in here).
 *
 * Every peer that is the same node (its sync TLV's node id: a host's IPv4
 * and IPv6 peers) is one neighbour with one edge. A fit step builds the
 * next table of them as it fits each peer (lsd_sync_node_take: the node's
 * counters, baselines and list of peers), then sets each node's edge
 * (lsd_sync_nodes_slice). The network step then gathers each node's
 * newest announcement, updates our state (ls_sync_node_update), takes the
 * new table into use (commands read the last step's until then, never one
 * with edges and no states) and publishes each peer's clock for synced
 * one-way delays.
 *
 * Why an index and slices: at 10,000 peers replying with distinct node
 * ids, finding a node was a scan of up to LS_SYNC_MAX_NBRS (per peer when
 * building the table, gathering and publishing, and per node counting its
 * peers): ~40 million comparisons a step. A node is now an rte_hash lookup,
 * and every walk over the peers or nodes runs in the control loop's
 * slices, resumed where it stopped, so a command waits for a slice, not
 * for every peer. The results are those of the walks in one go; a peer
 * attached or detached mid-way counts as in the fit step (one step late).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_seqlock.h>

#include "lockstepd.h"
#include "ls_sync.h"
#include "sync_priv.h"

/* ---- the node tables ----------------------------------------------------- */

int
lsd_sync_nodes_init(void)
{
	for (int i = 0; i < 2; i++) {
		struct sync_nodes *t = &lsd_sync_st.tab[i];
		char name[RTE_HASH_NAMESIZE];
		/* cuckoo tables fill to about 90% before an add fails: twice
		 * the nodes, so every one of LS_SYNC_MAX_NBRS finds room */
		struct rte_hash_parameters hp = {
			.name = name, .entries = 2 * LS_SYNC_MAX_NBRS,
			.key_len = sizeof(uint32_t), .hash_func = rte_hash_crc,
			.socket_id = (int)rte_socket_id(),
		};

		snprintf(name, sizeof(name), "lsd_sync_nodes%d", i);
		t->n = 0;
		t->node = calloc(LS_SYNC_MAX_NBRS, sizeof(*t->node));
		t->ids = rte_hash_create(&hp);
		if (t->node == NULL || t->ids == NULL)
			return -ENOMEM;
	}
	lsd_sync_st.nodes = &lsd_sync_st.tab[0];
	lsd_sync_st.next = &lsd_sync_st.tab[1];
	return 0;
}

void
lsd_sync_nodes_fini(void)
{
	for (int i = 0; i < 2; i++) {
		free(lsd_sync_st.tab[i].node);
		rte_hash_free(lsd_sync_st.tab[i].ids);
		lsd_sync_st.tab[i].node = NULL;
		lsd_sync_st.tab[i].ids = NULL;
		lsd_sync_st.tab[i].n = 0;
	}
}

static struct sync_node *
node_find(const struct sync_nodes *t, uint32_t id)
{
	void *pos;

	if (id == 0 || rte_hash_lookup_data(t->ids, &id, &pos) < 0)
		return NULL;
	return &t->node[(uintptr_t)pos];
}

/* The node id's entry in t, added at the end if new; NULL when t is full. */
static struct sync_node *
node_slot(struct sync_nodes *t, uint32_t id)
{
	struct sync_node *nd = node_find(t, id);

	if (nd != NULL)
		return nd;
	if (t->n == LS_SYNC_MAX_NBRS ||
	    rte_hash_add_key_data(t->ids, &id, (void *)(uintptr_t)t->n) != 0)
		return NULL;
	nd = &t->node[t->n++];
	memset(nd, 0, sizeof(*nd));
	nd->nbr.id = id;
	nd->min_rtt_ns = INFINITY;
	return nd;
}

void
lsd_sync_nodes_begin(void)
{
	/* O(the table's size), not O(peers) */
	rte_hash_reset(lsd_sync_st.next->ids);
	lsd_sync_st.next->n = 0;
	lsd_sync_st.edge_cursor = 0;
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

/*
 * An edge from the paths of the peers that are one node (ps alone, or when
 * chain ps and the peers after it on its node's list): drift, half gap and
 * counts from the paths' fits (ls_sync_combine), the offset from one filter
 * over all their tracks (ls_sync_track_fit_many).
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
int
lsd_sync_edge_fit(const struct lsd_peer_sync *ps, bool chain, uint64_t now,
		  struct ls_sync_fit *out)
{
	struct ls_sync_fit fits[EDGE_MAX_TRACKS], many;
	const struct ls_sync_track *k[EDGE_MAX_TRACKS];
	const struct ls_sync_est_conf *conf[EDGE_MAX_TRACKS];
	double b[EDGE_MAX_TRACKS], bs[EDGE_MAX_TRACKS];
	unsigned int nf = 0, nk = 0;

	/* a node's own peers only (scanning them all per peer, then per
	 * node, was quadratic: 83% of the control thread at 4,600 peers) */
	for (; ps != NULL; ps = chain ? ps->node_next : NULL) {
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
	    ls_sync_track_fit_many(k, b, bs, nk, now, lsd_sync_st.wander_ns, conf, lsd_sync_st.ws,
				   &many) == 0 &&
	    isfinite(many.offset_ns)) {
		out->offset_ns = many.offset_ns;
		out->sigma_ns = fmax(out->sigma_ns, many.sigma_ns);
		out->lag_ns = many.lag_ns;
	}
	return 0;
}

/* One neighbour per node id: IPv4 and IPv6 peers of a host are one edge.
 * Its newest announcement: the network step's. */
void
lsd_sync_node_take(struct lsd_peer_sync *ps, uint64_t now)
{
	struct sync_nodes *t = lsd_sync_st.next;
	struct sync_node *nd;

	ps->node = -1;
	ps->node_next = NULL;
	if (ps->node_id == 0 || ps->node_id == lsd.cfg.node_id ||
	    (nd = node_slot(t, ps->node_id)) == NULL)
		return;
	ps->node = (int32_t)(nd - t->node);
	if (nd->last != NULL)
		nd->last->node_next = ps;
	else
		nd->first = ps;
	nd->last = ps;
	nd->n_peers++;
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

void
lsd_sync_node_drop(struct lsd_peer_sync *ps)
{
	struct sync_nodes *t = lsd_sync_st.next;
	struct sync_node *nd;

	/* only a step under way holds lists (ps->node may be an old step's:
	 * then ps is on none of them) */
	if (!lsd_sync_st.stepping || ps->node < 0 || (unsigned int)ps->node >= t->n)
		return;
	nd = &t->node[ps->node];
	for (struct lsd_peer_sync **pp = &nd->first, *prev = NULL; *pp != NULL;
	     prev = *pp, pp = &(*pp)->node_next)
		if (*pp == ps) {
			*pp = ps->node_next;
			if (nd->last == ps)
				nd->last = prev;
			nd->n_peers--;
			break;
		}
	ps->node = -1;
}

/*
 * Each node's edge, until the TSC end (at least one node a call): one
 * peer's (the usual case) as it is, several peers' from one filter over
 * all their paths (lsd_sync_edge_fit along the node's list: it scanned
 * every peer per node before). The network step then takes the table
 * into use.
 */
bool
lsd_sync_nodes_slice(uint64_t end)
{
	struct lsd_sync_ctx *st = &lsd_sync_st;
	struct sync_nodes *t = st->next;

	while (st->edge_cursor < t->n) {
		struct sync_node *nd = &t->node[st->edge_cursor++];

		if (nd->n_peers == 1) {
			nd->nbr.edge = nd->first->edge;
			nd->nbr.has_edge = nd->first->edge.ok;
		} else {
			nd->nbr.has_edge = nd->n_peers > 0 &&
				lsd_sync_edge_fit(nd->first, true, st->step_now,
						  &nd->nbr.edge) == 0;
		}
		if (rte_rdtsc() > end && st->edge_cursor < t->n)
			return false;
	}
	return true;
}

/* Peer clock relative to ours for synced one-way delays: the fleet-
 * consistent difference when both ends are synced to one reference, else
 * the raw edge. */
static void
publish_owd(struct lsd_peer *peer, uint64_t now)
{
	const struct lsd_peer_sync *ps = peer->sync;
	struct lsd_peer_owd o = {.valid = false};
	const struct sync_node *nd;

	/* the node-level edge (all peers that are this node), for the reflector */
	if (ps != NULL && (nd = node_find(lsd_sync_st.nodes, ps->node_id)) != NULL &&
	    nd->nbr.has_edge) {
		const struct ls_sync_fit *e = &nd->nbr.edge;

		o.edge_valid = true;
		o.edge_ns = e->offset_ns + e->drift * (double)(int64_t)(now - e->t_ref);
		o.edge_drift = e->drift;
		o.edge_sigma = e->sigma_ns;
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
		double e = ps->edge.offset_ns +
			   ps->edge.drift * (double)(int64_t)(now - ps->edge.t_ref);

		o.valid = true;
		o.t0 = now;
		o.off_ns = e;
		o.drift = ps->edge.drift;
		if ((lsd_sync_st.self.flags & LS_SYNC_F_SYNCED) && ps->has_state &&
		    (ps->st.flags & LS_SYNC_F_SYNCED) && ps->st.ref_id == lsd_sync_st.self.ref_id) {
			/* the peer's local time now is about now + e */
			double th_b = ps->st.theta_ns + ps->st.phi *
				      ((double)(int64_t)(now - ps->st.t0) + e);

			o.off_ns = th_b - lsd_sync_st.self.theta_ns;
			o.drift = ps->st.phi - lsd_sync_st.self.phi;
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
 * The network step: our theta and phi from the neighbours' newest
 * announcements and the edges of the last fit step, carried to now along
 * their drifts; then announce it. It runs once per fit step, and up to
 * NET_STEPS_PER_FIT times while lsd_sync_net_fast() holds.
 *
 * Why more often than the fits: each node averages its neighbours'
 * announced thetas, and an announcement is as old as the step that made
 * it. A node whose reference candidate carries weight w settles where its
 * lag is the edge's plus (1 - w) / w times that age (docs/sync.md). The
 * step is cheap; the window fits are what costs. After it, the bound's
 * walk is observed from our estimate over time (ls_sync_bound_observe).
 *
 * In slices (lsd_sync_net_slice): each peer's announcement into its node,
 * the update on all nodes at once, then each peer's clock.
 */
void
lsd_sync_net_begin(uint64_t now, bool fresh)
{
	lsd_sync_st.net = NET_GATHER;
	lsd_sync_st.net_cursor = 0;
	lsd_sync_st.net_now = now;
	lsd_sync_st.net_spread = false;
	lsd_sync_st.net_waited = false;
	lsd_sync_st.net_tab = fresh ? lsd_sync_st.next : lsd_sync_st.nodes;
}

/* The peer's announcement, if it is its node's newest. */
static void
gather(const struct lsd_peer_sync *ps, struct sync_nodes *t)
{
	struct sync_node *nd;

	if (ps == NULL || !ps->has_state || (nd = node_find(t, ps->node_id)) == NULL)
		return;
	if (!nd->nbr.has_state || ps->st_rx > nd->nbr.st_rx) {
		nd->nbr.has_state = true;
		nd->nbr.st = ps->st;
		nd->nbr.st_rx = ps->st_rx;
	}
}

/* Our new state from every node's, and announce it. */
static void
net_update(struct sync_nodes *t, uint64_t now)
{
	static struct ls_sync_nbr nbrs[LS_SYNC_MAX_NBRS];
	static struct ls_sync_nbr_use use[LS_SYNC_MAX_NBRS];
	struct lsd_sync_ctx *st = &lsd_sync_st;
	uint8_t wire[LS_SYNC_WIRE_LEN];

	for (unsigned int j = 0; j < t->n; j++)
		nbrs[j] = t->node[j].nbr;
	ls_sync_node_update(&st->nconf, nbrs, t->n, now, &st->self, use);
	ls_sync_bound_observe(&st->wobs, &st->nconf, nbrs, use, t->n, now, &st->self);
	for (unsigned int j = 0; j < t->n; j++)
		t->node[j].use = use[j];
	st->net_steps++;

	ls_sync_wire_encode(&st->self, wire);
	rte_seqlock_write_lock(&lsd.sync_pub.lock);
	memcpy(lsd.sync_pub.wire, wire, sizeof(wire));
	lsd.sync_pub.wire_sum = ls_reflect_sum(wire, sizeof(wire));
	lsd.sync_pub.valid = true;
	rte_seqlock_write_unlock(&lsd.sync_pub.lock);
}

bool
lsd_sync_net_slice(uint64_t start, uint64_t end)
{
	struct lsd_sync_ctx *st = &lsd_sync_st;

	if (st->net == NET_GATHER) {
		while (st->net_cursor < st->n_peers) {
			gather(st->peers[st->net_cursor++]->sync, st->net_tab);
			if (rte_rdtsc() > end && st->net_cursor < st->n_peers) {
				st->net_spread = true;
				return false;
			}
		}
		/* the update is one call (~2 ms at 4,096 nodes): it starts a
		 * pass of its own when this one did other work, so a command
		 * waits behind it alone, not behind it and a slice */
		if (st->n_peers > LSD_NET_UPDATE_ALONE && !st->net_waited &&
		    rte_rdtsc() - start > (end - start) / 4) {
			st->net_spread = true;
			st->net_waited = true;   /* once: then it runs whatever the pass did */
			return false;
		}
		/* announcements taken in later passes may be newer than the
		 * instant the step began: the update runs at its own (as a
		 * step spread over passes announces when it ends) */
		if (st->net_spread)
			st->net_now = ls_clock_from_tsc(st->clock, rte_rdtsc());
		net_update(st->net_tab, st->net_now);
		/* a fit step's table, complete: it takes over */
		if (st->net_tab == st->next) {
			st->next = st->nodes;
			st->nodes = st->net_tab;
			st->steps++;
			st->last_step_tsc = st->step_at;
		}
		st->net = NET_PUBLISH;
		st->net_cursor = 0;
		if (rte_rdtsc() > end)
			return false;
	}
	while (st->net_cursor < st->n_peers) {
		publish_owd(st->peers[st->net_cursor++], st->net_now);
		if (rte_rdtsc() > end && st->net_cursor < st->n_peers)
			return false;
	}
	st->net = NET_IDLE;
	return true;
}

/*
 * Whether the network steps between fit steps pay: only while the clocks'
 * walk over one fit interval is at least a tenth of our own sigma. Under
 * heavy load, in the first seconds, edges are microseconds off and change
 * at every fit; one network step per fit damps those transients, five
 * follow them (docs/sync.md, "Why the network step runs five times").
 */
bool
lsd_sync_net_fast(void)
{
	const struct lsd_sync_ctx *st = &lsd_sync_st;
	double walk = st->wander_ns * sqrt((double)lsd.cfg.sync.interval_ms * 1e-3);

	return (st->self.flags & (LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER)) == LS_SYNC_F_SYNCED &&
	       st->self.sigma_ns <= 10.0 * walk;
}

/* ---- reporting ---------------------------------------------------------- */

json_t *
lsd_sync_json(uint64_t tsc)
{
	struct ls_sync_reading r;
	uint64_t now, local;
	unsigned int np = lsd_sync_st.n_peers;
	const struct sync_nodes *t = lsd_sync_st.nodes;
	json_t *o, *nbrs;

	if (!lsd_sync_st.on)
		return json_pack("{s:b}", "enabled", 0);
	now = ls_clock_now(lsd_sync_st.clock);
	if (tsc == 0)
		tsc = rte_rdtsc();
	local = ls_clock_from_tsc(lsd_sync_st.q_clock, tsc);
	ls_sync_fleet_read(&lsd_sync_st.self, &lsd_sync_st.nconf, local, &r);
	o = json_pack("{s:b, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:f}, s:{s:I, s:I, s:I, s:I, s:I}}",
		      "enabled", 1, "state", lsd_sync_state_json(&lsd_sync_st.self, now, true),
		      "reading", "tsc", (json_int_t)tsc, "local_ns", (json_int_t)local,
		      "fleet_ns", (json_int_t)r.fleet_ns,
		      "earliest_ns", (json_int_t)r.earliest_ns,
		      "latest_ns", (json_int_t)(r.latest_ns > INT64_MAX ? INT64_MAX : r.latest_ns),
		      "half_ns", r.flags ? r.half_ns : -1.0,
		      "counters", "records", (json_int_t)lsd_sync_st.recs,
		      "steps", (json_int_t)lsd_sync_st.steps,
		      "net_steps", (json_int_t)lsd_sync_st.net_steps,
		      "resets", (json_int_t)lsd_sync_st.resets,
		      "shm_updates", (json_int_t)lsd_fleettime_updates());
	{
		json_t *truth = lsd_clock_truth_at(tsc);

		if (truth != NULL)
			json_object_set_new(o, "truth", truth);
	}
	json_object_set_new(o, "chrony", lsd_chrony_json());
	/* each node's peers' names, in peer order: one walk over the peers
	 * (one per node was nodes x peers) */
	nbrs = json_array();
	for (unsigned int j = 0; j < t->n; j++)
		json_array_append_new(nbrs, json_array());
	for (unsigned int i = 0; i < np; i++) {
		const struct lsd_peer *peer = lsd_sync_st.peers[i];
		const struct sync_node *nd;

		if (peer->sync != NULL && (nd = node_find(t, peer->sync->node_id)) != NULL)
			json_array_append_new(json_array_get(nbrs, nd - t->node),
					      json_string(peer->name));
	}
	for (unsigned int j = 0; j < t->n; j++) {
		const struct sync_node *nd = &t->node[j];
		json_t *names = json_incref(json_array_get(nbrs, j)), *n;

		n = json_pack("{s:i, s:o, s:o, s:o, s:f, s:b, s:f, s:f, s:f, s:f, s:b, "
			      "s:{s:I, s:I, s:I, s:I}}",
			      "node_id", (int)nd->nbr.id, "peers", names,
			      "edge", nd->nbr.has_edge ? lsd_sync_fit_json(&nd->nbr.edge) :
							 json_null(),
			      "state", nd->nbr.has_state ?
					lsd_sync_state_json(&nd->nbr.st, 0, false) : json_null(),
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
		json_array_set_new(nbrs, j, n);
	}
	json_object_set_new(o, "neighbors", nbrs);
	/* edges and baselines refer to this instant */
	json_object_set_new(o, "step_tsc", json_integer((json_int_t)lsd_sync_st.last_step_tsc));
	return o;
}
