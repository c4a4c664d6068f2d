/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STAMP Session-Sender: coded pairs on every path to every peer.
 *
 * Each path (UDP source port src_port_base + i, the ECMP entropy value) has
 * an rte_timer on the owning lcore. When it fires, two probes go out back
 * to back in one tx_burst (or, with pair_spacing_ns > 0, the second from a
 * second timer after that spacing), carrying the lockstep TLV (node id,
 * path id, pair id, member, intended spacing) so the clock-sync filter can
 * tell a pure pair from one that met a queue. T1 is written into the built
 * frames right before tx_burst (send_probes), as the reflector writes T3:
 * read before the frames are built, it was early by the build of both
 * members, and that error is all on one side of every edge. The timer is re-armed with the interval plus
 * uniform jitter so that pairs from many nodes do not fall into step.
 *
 * Acquisition (4x for 4 s by default): for probe.acquire_ms after a peer is added,
 * its paths send pairs probe.acquire_rate times as often, as NTP's iburst
 * does. Clock sync needs, on every path, probes that met the empty-queue
 * floor in each direction; on a loaded fabric those are rare, and a few
 * seconds of faster probing finds them sooner without paying for that rate
 * forever. Clock sync asks for it again when it starts a peer's estimators
 * over (the peer restarted: LSD_MSG_PEER_ACQUIRE).
 *
 * Replies are matched by (source address -> peer, destination port -> path)
 * and fed to the path's live statistics: RTT excluding the reflector's
 * residence time, and the two raw one-way delays (offset by the two clocks
 * until clock sync corrects them). Losses are declared by time-out in the
 * 1 ms housekeeping tick.
 */
#include <errno.h>
#include <string.h>

#include <math.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "bridge.h"
#include "lockstepd.h"
#include "ls_stamp.h"
#include "ls_sync.h"

/* The sync TLV of a pair's first probe: zeros and the version we read, for
 * the reflector to answer in (ls_sync_wire_ask; the layout is fixed, so one
 * copy serves every probe). */
static const uint8_t sync_ask[LS_STAMP_SYNC_LEN] = {LS_SYNC_WIRE_VERSION};

static inline uint64_t
ns_to_ticks(uint64_t ns)
{
	return (uint64_t)(((unsigned __int128)ns * rte_get_timer_hz()) / LS_NS_PER_S);
}


static const struct ls_addr *
src_addr(const struct lsd_port *p, uint8_t family)
{
	return family == LS_AF_INET ? &p->v4.addr : &p->v6.addr;
}

/*
 * Build one probe into a fresh mbuf, its sequence number into *seq. T1 is
 * left zero: send_probes() writes it right before the frame goes out.
 */
static struct rte_mbuf *
build_probe(struct lsd_lcore *lc, struct lsd_peer *peer, struct lsd_peer_path *pp,
	    uint8_t member, uint32_t pair_id, uint32_t *seq)
{
	const struct ls_conf_probe *pc = &lsd.cfg.probe;
	struct lsd_port *p = &lsd.ports[peer->port_idx];
	uint8_t payload[LS_STAMP_BASE_LEN + 3 * LS_STAMP_TLV_HDR_LEN +
			LS_STAMP_LOCKSTEP_LEN + LS_STAMP_SYNC_LEN + 1400];
	struct ls_stamp_lockstep_tlv t = {
		.node_id = lsd.cfg.node_id,
		.path_id = pp->idx,
		.pair_member = member,
		.version = 1,
		.pair_id = pair_id,
		.spacing_ns = pc->pair_spacing_ns,
	};
	struct ls_pkt_udp_hdr h = {
		.src_mac = p->mac,
		.dst_mac = peer->mac,
		.src = *src_addr(p, peer->addr.family),
		.dst = peer->addr,
		.sport = pp->sport,
		.dport = pc->dst_port,
		.ttl = pc->ttl,
		.tos = peer->tos,
		.flow_label = pp->sport,
	};
	struct ls_stamp_sender s;
	struct rte_mbuf *m;
	size_t off = 0;
	uint16_t plen;
	uint8_t *frame;
	int len;

	m = rte_pktmbuf_alloc(lsd.pool);
	if (unlikely(m == NULL)) {
		lc->st.alloc_failed++;
		return NULL;
	}
	ls_stamp_tlv_put_lockstep(payload + LS_STAMP_BASE_LEN,
				  sizeof(payload) - LS_STAMP_BASE_LEN, &off, &t);
	/*
	 * The first member of a pair asks the reflector for its clock-sync
	 * state (a zeroed sync TLV it fills in): one announcement per pair and
	 * path is plenty, and the second member stays the smaller packet.
	 */
	if (member == 0 && lsd.cfg.sync.enabled)
		ls_stamp_tlv_put(payload + LS_STAMP_BASE_LEN,
				 sizeof(payload) - LS_STAMP_BASE_LEN, &off, 0,
				 LS_STAMP_TLV_SYNC, sync_ask, LS_STAMP_SYNC_LEN);
	if (pc->pad > 0) /* a NULL value writes zeros */
		ls_stamp_tlv_put(payload + LS_STAMP_BASE_LEN,
				 sizeof(payload) - LS_STAMP_BASE_LEN, &off, 0,
				 LS_STAMP_TLV_EXTRA_PADDING, NULL, pc->pad);
	plen = (uint16_t)(LS_STAMP_BASE_LEN + off);
	frame = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(ls_pkt_udp_hdr_len(h.src.family) + plen));
	if (unlikely(frame == NULL)) {
		rte_pktmbuf_free(m);
		lc->st.alloc_failed++;
		return NULL;
	}
	s.seq = pp->seq++;
	s.err_est = lsd.send_ee;
	s.ssid = (uint16_t)lsd.cfg.node_id;
	s.ts_ns = 0;
	ls_stamp_encode_sender(payload, sizeof(payload), &s);
	len = ls_pkt_build_udp(frame, m->data_len, &h, payload, plen);
	if (unlikely(len < 0)) {
		rte_pktmbuf_free(m);
		lc->st.alloc_failed++;
		return NULL;
	}
	m->vlan_tci = peer->vlan_tci;  /* tagged on the way out (tx.c) on a VLAN port */
	*seq = s.seq;
	return m;
}

/*
 * Stamp T1 into the n built probes of path pp (sequence numbers seq[]) as
 * late as software can, one clock read for the burst, and send them.
 *
 * Why here and not while building: the wire sees a frame when tx_burst
 * hands it over, and everything between the clock read and that moment is
 * counted as forward delay. Read at build time, the first member's T1 was
 * early by its own checksum and the whole build of the second member; the
 * envelope's floor keeps the least of that, which is still a build, so
 * every one-sided edge estimate was biased the same way (in the lab at
 * 50% load with 20 ms pairs, each node's own edge to the reference was
 * +27 to +93 ns off for the whole run; stamped here, -38 to +14 ns). The
 * two-sided edges cancel such a bias only while both sides weigh alike.
 * The reflector stamps T3 the same way (stamp_and_send, datapath.c). Both
 * members share the burst's T1: a pair is sent back to back, so its send
 * spacing is zero, which the purity filter compares the receive spacing
 * against.
 */
static void
send_probes(struct lsd_lcore *lc, struct lsd_port *p, struct lsd_peer_path *pp,
	    struct rte_mbuf **m, const uint32_t *seq, uint16_t n)
{
	uint8_t fam = pp->peer->addr.family;
	uint16_t off = ls_pkt_udp_hdr_len(fam); /* the STAMP payload's */
	uint64_t at_ns;
	uint64_t t1 = ls_clock_tx_ts(&lc->clock, rte_rdtsc(), p->port_id, &at_ns);

	for (uint16_t i = 0; i < n; i++) {
		uint8_t *f = rte_pktmbuf_mtod(m[i], uint8_t *);

		ls_stamp_put_tx_ts(f + off, t1, lsd.send_ee);
		ls_pkt_udp_finalize(f, m[i]->data_len, fam);
		ls_path_on_send(&pp->live, seq[i], t1);
		if (unlikely(lsd.cap.on))
			lsd_capture_copy(lc, m[i], t1, true);
		if (at_ns != 0)
			lsd_tx_at(lc, p, m[i], at_ns);
	}
	lsd_tx_frames(lc, p, m, n, &lc->st.tx_probes);
}

static void pair_second_cb(struct rte_timer *t, void *arg);

/* Time to the path's next pair: faster while it is acquiring. */
/* base_ns give or take pct percent, so nodes do not probe in step. */
static uint64_t
jitter(struct lsd_lcore *lc, uint64_t base_ns, unsigned int pct)
{
	uint64_t x = lc->prng, span;

	/* xorshift64: jitter only needs to de-synchronise nodes, not be secure. */
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	lc->prng = x;
	if (pct == 0)
		return base_ns;
	span = base_ns * pct / 100;
	return base_ns - span + (x % (2 * span + 1));
}

static uint64_t
pair_interval_ns(struct lsd_peer_path *pp)
{
	uint64_t ns = (uint64_t)pp->peer->interval_us * 1000;

	if (unlikely(pp->acquire_end != 0)) {
		if (rte_get_timer_cycles() < pp->acquire_end)
			return ns / lsd.cfg.probe.acquire_rate;
		pp->acquire_end = 0; /* acquired: no more clock reads for it */
	}
	return ns;
}

static struct lsd_bridge *
fo_bridge(struct lsd_lcore *lc, const struct lsd_peer *peer)
{
	struct lsd_bridge *b = lsd_bridges[lc->lcore_id];

	return b != NULL && b->fo_on && b->fab == &lsd.ports[peer->port_idx] ? b : NULL;
}

/* A path found silent answers again: its marks go (bridge_fo.c). */
static void
fo_heard(struct lsd_lcore *lc, const struct lsd_peer *peer, struct lsd_peer_path *pp)
{
	struct lsd_bridge *b = fo_bridge(lc, peer);

	pp->fo_silent = 0;
	if (b != NULL)
		lsd_fo_probe_heard(b, peer, __atomic_load_n(&pp->data_paths, __ATOMIC_RELAXED));
}

/* A path that carries the bridge's data (links.c found data paths on its
 * route): failover hears of its silence (bridge_fo.c). */
static inline void
fo_judge(struct lsd_lcore *lc, const struct lsd_peer *peer, struct lsd_peer_path *pp)
{
	uint64_t dp = __atomic_load_n(&pp->data_paths, __ATOMIC_RELAXED);
	struct lsd_bridge *b;

	if (likely(dp == 0))
		return;
	b = fo_bridge(lc, peer);
	if (b != NULL)
		lsd_fo_probe_path(b, peer, pp, dp, ls_clock_now(&lc->clock));
}

/* The round trips of a path that stands for data, for how long a silence
 * means something (bridge_fo.c): RFC 6298's srtt += (r - srtt)/8, rttvar +=
 * (|r - srtt| - rttvar)/4, as the ACK rule keeps per flow. (A rttvar that
 * remembered spikes for a second held the lab's limit at 5-8 ms: its
 * round trips jump by milliseconds now and then. The pause guard and the
 * other paths' answers keep the false alarms down instead, and a false
 * alarm costs a reorder.) A reply of a path found silent lifts its marks. */
static void
fo_rtt(struct lsd_lcore *lc, struct lsd_peer *peer, struct lsd_peer_path *pp, int64_t r)
{
	int64_t d, a;

	if (unlikely(pp->fo_silent))
		fo_heard(lc, peer, pp);
	if (r < 0)
		return;
	if (pp->fo_srtt == 0) {
		pp->fo_srtt = r;
		pp->fo_rttvar = r / 2;
		return;
	}
	d = r - pp->fo_srtt;
	a = d < 0 ? -d : d;
	pp->fo_srtt += d / 8;
	pp->fo_rttvar += (a - pp->fo_rttvar) / 4;
}

static void
path_timer_cb(struct rte_timer *t, void *arg)
{
	struct lsd_peer_path *pp = arg;
	struct lsd_peer *peer = pp->peer;
	struct lsd_lcore *lc = &lsd.lcores[rte_lcore_id()];
	struct lsd_port *p = &lsd.ports[peer->port_idx];
	struct rte_mbuf *m[2];
	uint32_t seq[2];
	uint16_t n = 0;
	uint32_t pair_id;

	rte_timer_reset(t, ns_to_ticks(jitter(lc, pair_interval_ns(pp),
						 lsd.cfg.probe.jitter_pct)),
			SINGLE, rte_lcore_id(), path_timer_cb, pp);
	if (unlikely(!peer->resolved)) {
		lc->st.probes_unresolved++;
		lsd_neigh_resolve(lc, peer, ls_clock_now(&lc->clock));
		return;
	}
	pair_id = pp->pair_id++;
	m[n] = build_probe(lc, peer, pp, 0, pair_id, &seq[n]);
	if (m[n] != NULL)
		n++;
	/*
	 * A driver that sends frame by frame (net_pcap: a syscall each) takes
	 * tens of microseconds per frame: one T1 for both would make the
	 * second member's early by the first's send. There each member goes
	 * out, stamped, on its own.
	 */
	if (p->tx_per_packet && n > 0) {
		send_probes(lc, p, pp, m, seq, n);
		n = 0;
	}
	if (lsd.cfg.probe.pair_spacing_ns == 0) {
		m[n] = build_probe(lc, peer, pp, 1, pair_id, &seq[n]);
		if (m[n] != NULL)
			n++;
	} else {
		rte_timer_reset(&pp->pair_tim, ns_to_ticks(lsd.cfg.probe.pair_spacing_ns),
				SINGLE, rte_lcore_id(), pair_second_cb, pp);
	}
	if (n > 0)
		send_probes(lc, p, pp, m, seq, n);
	fo_judge(lc, peer, pp);
}

static void
pair_second_cb(struct rte_timer *t __rte_unused, void *arg)
{
	struct lsd_peer_path *pp = arg;
	struct lsd_lcore *lc = &lsd.lcores[rte_lcore_id()];
	uint32_t seq;
	struct rte_mbuf *m = build_probe(lc, pp->peer, pp, 1, pp->pair_id - 1, &seq);

	if (m != NULL)
		send_probes(lc, &lsd.ports[pp->peer->port_idx], pp, &m, &seq, 1);
}

/* The peer's paths send pairs acquire_rate x as often for acquire_ms from
 * now (nothing when acquisition is off). The paths' timers pick it up at
 * their next pair. */
void
lsd_sender_acquire(struct lsd_peer *peer)
{
	uint64_t acquire;

	if (!lsd_acquire_on())
		return;
	acquire = rte_get_timer_cycles() + ns_to_ticks((uint64_t)lsd.cfg.probe.acquire_ms * 1000000);
	/* only the paths clock sync estimates from (sync.paths, path_budget):
	 * the others would only add probes (and timer work: 10k peers x 8 paths) */
	for (uint16_t i = 0; i < RTE_MIN(peer->n_paths,
					 __atomic_load_n(&peer->sync_paths, __ATOMIC_RELAXED)); i++)
		peer->path[i].acquire_end = acquire;
}

void
lsd_sender_start_peer(struct lsd_lcore *lc, struct lsd_peer *peer)
{
	uint64_t now = ls_clock_now(&lc->clock);

	lsd_neigh_resolve(lc, peer, now);
	lsd_sender_acquire(peer);
	for (uint16_t i = 0; i < peer->n_paths; i++) {
		struct lsd_peer_path *pp = &peer->path[i];

		/* Spread the first pairs over one interval, not all at once. */
		rte_timer_reset(&pp->tim,
				ns_to_ticks(jitter(lc, pair_interval_ns(pp) / 2, 100) + 1),
				SINGLE, lc->lcore_id, path_timer_cb, pp);
	}
}

void
lsd_sender_stop_peer(struct lsd_lcore *lc __rte_unused, struct lsd_peer *peer)
{
	for (uint16_t i = 0; i < peer->n_paths; i++) {
		rte_timer_stop(&peer->path[i].tim);
		rte_timer_stop(&peer->path[i].pair_tim);
	}
}

/*
 * Housekeeping (every LSD_HOUSEKEEP_US) for a slice of the lcore's peers:
 * all of them while there are at most LSD_TICK_PEERS, else a hundredth, so
 * each peer's paths are visited at least every 100 ms. Walking 80,000
 * paths every millisecond (their state is far beyond the caches) took the
 * lcore's whole time; a loss is still declared at most 100 ms after its
 * time-out (at least 50 ms), and sends and replies rotate the seconds
 * themselves (ls_path_on_send/on_reply).
 */
void
lsd_sender_tick(struct lsd_lcore *lc, uint64_t now_ns)
{
	const uint16_t down_after = lsd.cfg.probe.down_after;
	uint32_t n = RTE_MAX((uint32_t)LSD_TICK_PEERS, (lc->n_peers + 99) / 100);

	if (n > lc->n_peers)
		n = lc->n_peers;
	for (uint32_t k = 0; k < n; k++) {
		struct lsd_peer *peer;
		uint64_t timeout;

		if (lc->tick_next >= lc->n_peers)
			lc->tick_next = 0;
		peer = lc->peers[lc->tick_next++];
		timeout = lsd_peer_loss_timeout_ns(peer);

		for (uint16_t i = 0; i < peer->n_paths; i++) {
			struct lsd_peer_path *pp = &peer->path[i];

			ls_path_tick(&pp->live, now_ns, timeout);
			pp->state_down = pp->live.consecutive_lost >= down_after;
		}
		if (now_ns >= peer->next_resolve_ns)
			lsd_neigh_resolve(lc, peer, now_ns);
	}
}

/*
 * Hand a reply's timestamps (and the reflector's sync state, when it filled
 * our sync TLV) to the control thread's sync estimator. Ring full: counted
 * and dropped; the estimator copes with gaps.
 */
static bool
sync_record(struct lsd_lcore *lc, struct lsd_peer *peer, uint32_t path,
	    const struct ls_stamp_lockstep_tlv *t, const struct ls_stamp_reflector *r,
	    uint64_t rx_ns, const uint8_t *payload, uint16_t len)
{
	struct lsd_sync_rec rec;
	int off;

	rec.peer = peer;
	rec.path = (uint16_t)path;
	rec.member = t->pair_member;
	rec.pair_id = t->pair_id;
	rec.t1 = r->sender_ts_ns;
	rec.t2 = r->rx_ns;
	rec.t3 = r->tx_ns;
	rec.t4 = rx_ns;
	rec.has_state = 0;
	off = ls_stamp_find_sync(payload + LS_STAMP_BASE_LEN, len - LS_STAMP_BASE_LEN);
	if (off >= 0) {
		memcpy(rec.state, payload + LS_STAMP_BASE_LEN + off, LS_STAMP_SYNC_LEN);
		rec.has_state = 1;
	}
	if (rte_ring_sp_enqueue_elem(lc->sync_ring, &rec, sizeof(rec)) == 0)
		lc->st.sync_recs++;
	else
		lc->st.sync_dropped++;
	/* a reflector that speaks sync filled it; one that merely echoes TLVs
	 * (or cannot answer our version) hands our ask back */
	return rec.has_state && ls_sync_wire_filled(rec.state);
}

/*
 * One-way delays on the fleet timeline: remove the peer's clock offset
 * (published by the sync step) from the raw differences of two clocks.
 * For a peer that takes part in sync, while there is no offset (before the
 * first fit, or when its edge is lost) there are no one-way delays: raw
 * differences are off by the clocks' offset (milliseconds) and would spoil
 * every window they fell in. A peer that never sends our sync TLV (another
 * STAMP implementation) keeps its raw values: its host may be synced by
 * other means. Which kind a peer is shows only once its reflector has a
 * state to put in our TLV, after its first sync step: until then (four
 * steps from its first reply) its delays wait too. Without the wait, the
 * replies of the first half second after start put raw differences into
 * the windows (a sync-fabric failure in CI: +-17 ms in the 10 s window).
 */
static inline void
owd_correct(struct lsd_peer *peer, uint64_t t1, uint64_t rx_ns, int64_t samples[LS_PM_MAX])
{
	struct lsd_peer_owd w;
	uint32_t sn;
	double off;

	do {
		sn = rte_seqlock_read_begin(&peer->owd.lock);
		w = peer->owd;
	} while (rte_seqlock_read_retry(&peer->owd.lock, sn));
	if (!w.valid) {
		if (peer->first_reply_ns == 0)
			peer->first_reply_ns = rx_ns;
		if (peer->sync_speaker || rx_ns - peer->first_reply_ns <
					  4ULL * lsd.cfg.sync.interval_ms * 1000000ULL) {
			samples[LS_PM_FWD] = LS_PM_NONE;
			samples[LS_PM_REV] = LS_PM_NONE;
		}
		return;
	}
	off = w.off_ns + w.drift * (double)(int64_t)(t1 - w.t0);
	samples[LS_PM_FWD] -= (int64_t)llround(off);
	samples[LS_PM_REV] += (int64_t)llround(off);
}

/* A reply's one-way delays: each direction's floor (minimum over 10-20 s,
 * two epochs so an old minimum ages out) and the queueing above it. */
static void
queue_note(struct lsd_peer_path *pp, int64_t fwd, int64_t rev, int64_t round_ns)
{
	uint64_t now = rte_rdtsc();

	if (now >= pp->fwd_epoch_end) {
		pp->fwd_min[1] = pp->fwd_epoch_end ? pp->fwd_min[0] : fwd;
		pp->fwd_min[0] = fwd;
		pp->rev_min[1] = pp->fwd_epoch_end ? pp->rev_min[0] : INT64_MAX;
		pp->rev_min[0] = INT64_MAX;
		pp->fwd_epoch_end = now + 10 * rte_get_tsc_hz();
	}
	if (fwd < pp->fwd_min[0])
		pp->fwd_min[0] = fwd;
	pp->q_ns = fwd - RTE_MIN(pp->fwd_min[0], pp->fwd_min[1]);
	/* a mean per interval for linkq.c (the control thread reads them) */
	__atomic_store_n(&pp->q_sum, pp->q_sum + pp->q_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&pp->q_cnt, pp->q_cnt + 1, __ATOMIC_RELAXED);
	if (rev != LS_PM_NONE) {
		if (rev < pp->rev_min[0])
			pp->rev_min[0] = rev;
		pp->q_rev_ns = rev - RTE_MIN(pp->rev_min[0], pp->rev_min[1]);
	}
	pp->q_tsc = now;
	pp->q_back_us = (uint32_t)RTE_MIN((uint64_t)(round_ns > 0 ? round_ns : 0) / 1000, UINT32_MAX);
}

int64_t
lsd_peer_queue_ns(struct lsd_lcore *lc, const struct ls_addr *addr, uint8_t path,
		  uint64_t now, uint64_t max_age, int64_t target_ns, uint64_t *at)
{
	struct lsd_peer *peer;
	struct lsd_addr_key key;
	uint64_t paired = 0;
	int64_t q = -1;

	lsd_addr_key(addr, &key);
	if (rte_hash_lookup_data(lc->peer_hash, &key, (void **)&peer) < 0)
		return -1;
	/* Data path k and probe path k part ways where the fabric hashes the
	 * destination port: once the routes are traced (links.c), the probe
	 * paths that stand for data path k are those whose data_paths name it. */
	if (path != 0xff && path < 64)
		for (uint16_t i = 0; i < peer->n_paths; i++)
			paired |= __atomic_load_n(&peer->path[i].data_paths, __ATOMIC_RELAXED);
	for (uint16_t i = 0; i < peer->n_paths; i++) {
		const struct lsd_peer_path *pp = &peer->path[i];

		if (path != 0xff && (paired != 0 ?
		    !(__atomic_load_n(&pp->data_paths, __ATOMIC_RELAXED) >> path & 1) :
		    i != path))
			continue;
		/* probes lost since the last reply: a queue that overflowed (or
		 * held them past the loss time-out) says more than no sample;
		 * unless the last reply saw the reverse queue past the target
		 * and the forward one within it: the reply, not the probe, was
		 * dropped (a stateless reflector cannot say which) */
		if (pp->live.consecutive_lost > 0 && pp->q_tsc != 0 &&
		    !(pp->q_rev_ns > target_ns && pp->q_ns <= target_ns)) {
			q = LSD_QUEUE_LOST_NS;
			*at = now;
			continue;
		}
		if (pp->q_tsc == 0 || now - pp->q_tsc > max_age || pp->q_ns <= q)
			continue;
		q = pp->q_ns;
		*at = pp->q_tsc - RTE_MIN(pp->q_tsc, pp->q_back_us * (rte_get_tsc_hz() / 1000000));
	}
	return q;
}

void
lsd_sender_on_reply(struct lsd_lcore *lc, struct lsd_port *p __rte_unused,
		   struct rte_mbuf *m, const struct ls_pkt_info *pi, uint64_t rx_ns)
{
	const uint8_t *payload = rte_pktmbuf_mtod(m, const uint8_t *) + pi->payload_off;
	struct ls_stamp_lockstep_tlv t;
	struct ls_stamp_reflector r;
	struct lsd_peer_path *pp;
	struct lsd_peer *peer = NULL;
	int64_t samples[LS_PM_MAX];
	struct lsd_addr_key key;
	static const int64_t no_samples[LS_PM_MAX] = {LS_PM_NONE, LS_PM_NONE, LS_PM_NONE};
	enum lsd_rx_disp d;
	uint32_t path;
	uint64_t t1;
	bool t_ok;

	if (pi->payload_len < LS_STAMP_BASE_LEN) {
		d = LSD_RX_REPLY_SHORT;
		goto out;
	}
	lsd_addr_key(&pi->src, &key);
	if (rte_hash_lookup_data(lc->peer_hash, &key, (void **)&peer) < 0) {
		d = LSD_RX_REPLY_NO_PEER;
		goto out;
	}
	path = (uint32_t)pi->dport - lsd.cfg.probe.src_port_base;
	if (pi->dport < lsd.cfg.probe.src_port_base || path >= peer->n_paths) {
		d = LSD_RX_REPLY_NO_PATH;
		goto out;
	}
	/* Our TLV, when the reflector echoed it, must name us and this path. */
	t_ok = ls_stamp_find_lockstep(payload + LS_STAMP_BASE_LEN,
				      pi->payload_len - LS_STAMP_BASE_LEN, &t) == 0;
	if (t_ok && (t.node_id != lsd.cfg.node_id || t.path_id != path)) {
		lc->st.foreign_replies++;
		d = LSD_RX_REPLY_NO_PATH;
		goto out;
	}
	/* an answer to path.mtu's or path.train's padded probes, not to the
	 * path's pairs */
	if (unlikely(t_ok && t.pair_member == LSD_MTU_MEMBER)) {
		d = t.pair_id & LSD_TRAIN_FLAG ? lsd_train_on_reply(peer, path, &t, payload, pi, rx_ns) :
		    lsd_mtu_on_reply(peer, path, &t, payload, pi);
		goto out;
	}
	ls_stamp_decode_reflector(payload, pi->payload_len, &r);
	/* A send-time trailer still after the reply: nothing between the peer
	 * and us sent it at its instant (clock.tx_trailer behind a lab
	 * emulator without --tx-trailer), so the peer's T3, and our T1 most
	 * likely, are a lead early. Counted for status, which warns once. */
	if (unlikely(m->data_len >= pi->payload_off + pi->payload_len + LS_RX_TRAILER_LEN)) {
		uint64_t at;

		if (ls_tx_trailer_get(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &at) == 0)
			lc->st.tx_trailer_unsent++;
	}
	pp = &peer->path[path];
	/*
	 * Believe a reply only for a probe this path sent and still awaits, and
	 * only when it echoes the T1 we wrote (anyone can forge a reply from a
	 * peer's address; few can guess a send time to the nanosecond). It
	 * then feeds the windows and clock sync with T1 from our own record.
	 */
	if (!ls_path_awaits(&pp->live, r.sender_seq, &t1)) {
		/* the path still counts unknown and duplicate sequences */
		ls_path_on_reply(&pp->live, r.sender_seq, rx_ns, no_samples);
		d = LSD_RX_REPLY_UNMATCHED;
		goto out;
	}
	/* 1 ns: an NTP-format T1 (2^-32 s units) comes back rounded. */
	if ((uint64_t)(r.sender_ts_ns - t1 + 1) > 2) {
		d = LSD_RX_REPLY_UNMATCHED;
		goto out;
	}
	r.sender_ts_ns = t1;
	samples[LS_PM_RTT] = ((int64_t)rx_ns - (int64_t)r.sender_ts_ns) -
			     ((int64_t)r.tx_ns - (int64_t)r.rx_ns);
	samples[LS_PM_FWD] = (int64_t)r.rx_ns - (int64_t)r.sender_ts_ns;
	samples[LS_PM_REV] = (int64_t)rx_ns - (int64_t)r.tx_ns;
	if (lsd.cfg.sync.enabled) {
		if (t_ok && sync_record(lc, peer, path, &t, &r, rx_ns, payload, pi->payload_len))
			peer->sync_speaker = true;
		owd_correct(peer, r.sender_ts_ns, rx_ns, samples);
	}
	ls_path_on_reply(&pp->live, r.sender_seq, rx_ns, samples);
	if (unlikely(__atomic_load_n(&pp->data_paths, __ATOMIC_RELAXED) != 0))
		fo_rtt(lc, peer, pp, samples[LS_PM_RTT]);
	if (samples[LS_PM_FWD] != LS_PM_NONE)
		queue_note(pp, samples[LS_PM_FWD], samples[LS_PM_REV],
			   (int64_t)rx_ns - (int64_t)r.sender_ts_ns);
	if (pp->live.consecutive_lost == 0)
		pp->state_down = 0;
	d = LSD_RX_REPLY;
out:
	lc->st.disp[d]++;
	rte_pktmbuf_free(m);
}
