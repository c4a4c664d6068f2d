/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulator's event loop: the whole network runs on one lcore.
 *
 * A packet from a host port enters its host link (the host -> leaf channel)
 * at the instant it was received. Every channel (lib/fabric) computes when
 * each packet it accepts will reach the far end; a binary heap of channels,
 * keyed by the delivery time of their oldest packet, releases deliveries in
 * global time order. A delivery to a switch is routed at its exact delivery
 * instant (which may be a little in the past), so queues downstream see the
 * arrival times the real network would have produced, whatever the polling
 * granularity; a delivery to a host goes out of that host's port.
 *
 * Switches: a leaf answers ARP and Neighbor Solicitations from its hosts for
 * any address but the host's own (proxy), so hosts can send everything to
 * it; every switch decrements TTL / hop limit and answers an expired packet
 * with ICMP Time Exceeded from its own address; ECMP picks among equal-cost
 * next hops with the switch's seeded flow hash; ECT packets queued above a
 * link's threshold are CE-marked.
 *
 * Background traffic is made of "virtual" packets: items with no mbuf that
 * occupy links exactly like real ones (and so build real queues) and are
 * routed hop by hop by their generator's flow hash.
 *
 * Nothing here allocates (beyond mbufs), locks or makes a system call, except
 * the idle sleep, which never sleeps past the next scheduled event.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>
#include <rte_random.h>

#include "fabric.h"
#include "ls_pkt.h"
#include "ls_stamp.h"

/* ---- time ------------------------------------------------------------- */

uint64_t
lsf_now(void)
{
	uint64_t tsc = rte_rdtsc();

	/* Refresh the cached mapping every ~100 ms of TSC. */
	if (unlikely(tsc - fab.map_tsc > fab.map_every)) {
		ls_tsc_cal_read(&fab.cal, &fab.map);
		fab.map_tsc = tsc;
	}
	return ls_tsc_map_ns(&fab.map, tsc) + LS_SIM_EPOCH_NS;
}

uint64_t
lsf_now_any(void)
{
	struct ls_tsc_map map;

	ls_tsc_cal_read(&fab.cal, &map);
	return ls_tsc_map_ns(&map, rte_rdtsc()) + LS_SIM_EPOCH_NS;
}

/* ---- the event heap --------------------------------------------------- */

/* Channels with packets in flight, ordered by their oldest delivery time. A
 * channel's key changes only when its head leaves (the loop re-sifts it) or
 * when it goes from empty to busy (pushed), so keys are kept in the heap
 * itself rather than re-read from the (large) channel structs. */
static struct {
	uint16_t n;
	struct {
		uint64_t key;
		uint16_t ch;
	} e[LS_FAB_MAX_CHANS];
	bool in[LS_FAB_MAX_CHANS];
} heap;

static inline uint64_t
heap_min(void)
{
	return heap.n ? heap.e[0].key : UINT64_MAX;
}

static void
sift_up(uint16_t i)
{
	while (i > 0) {
		uint16_t p = (uint16_t)((i - 1) / 2);

		if (heap.e[p].key <= heap.e[i].key)
			break;
		RTE_SWAP(heap.e[p], heap.e[i]);
		i = p;
	}
}

static void
sift_down(uint16_t i)
{
	for (;;) {
		uint16_t l = (uint16_t)(2 * i + 1), r = (uint16_t)(l + 1), m = i;

		if (l < heap.n && heap.e[l].key < heap.e[m].key)
			m = l;
		if (r < heap.n && heap.e[r].key < heap.e[m].key)
			m = r;
		if (m == i)
			return;
		RTE_SWAP(heap.e[m], heap.e[i]);
		i = m;
	}
}

static void
heap_insert(uint16_t c)
{
	heap.in[c] = true;
	heap.e[heap.n].ch = c;
	heap.e[heap.n].key = ls_fab_chan_head_ns(&fab.fab->chans[c]);
	sift_up(heap.n++);
}

/* A channel was given a packet: in the heap already (a burst), or now. */
static __rte_always_inline void
heap_push(uint16_t c)
{
	if (likely(heap.in[c]))
		return;
	heap_insert(c);
}

/* The top channel's head has left: re-key or remove it. Per event, so the
 * common case (its next packet is still the earliest of all: a burst on one
 * link) is a comparison with the two children, inline. */
static inline void
heap_fix_top(void)
{
	uint16_t c = heap.e[0].ch;
	uint64_t k = ls_fab_chan_head_ns(&fab.fab->chans[c]);

	if (k != UINT64_MAX) {
		heap.e[0].key = k;
		if ((heap.n > 1 && heap.e[1].key < k) || (heap.n > 2 && heap.e[2].key < k))
			sift_down(0);
		return;
	}
	heap.in[c] = false;
	heap.e[0] = heap.e[--heap.n];
	if (heap.n)
		sift_down(0);
}

/* ---- truth ------------------------------------------------------------- */

static bool
is_probe(const struct ls_pkt_info *pi)
{
	return pi->dport == LS_STAMP_PORT || pi->sport == LS_STAMP_PORT;
}

static void
probe_record(struct lsf_truth *t, const struct ls_pkt_info *pi, const struct rte_mbuf *m)
{
	const uint8_t *pl = rte_pktmbuf_mtod(m, const uint8_t *) + pi->payload_off;

	t->family = pi->src.family;
	memcpy(t->src, pi->src.a, 16);
	memcpy(t->dst, pi->dst.a, 16);
	t->sport = pi->sport;
	t->dport = pi->dport;
	t->reflected = pi->sport == LS_STAMP_PORT;
	t->seq = 0;
	/* The sender's sequence number: at 0 in a test packet, at 24 in a
	 * reflected one (RFC 8762). */
	if (pi->payload_len >= LS_STAMP_BASE_LEN) {
		const uint8_t *q = pl + (t->reflected ? 24 : 0);

		t->seq = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
	}
}

void
lsf_truth_push(const struct lsf_truth *t)
{
	void *obj;

	/* Records come from a mempool and go back to it once the control
	 * thread has written them: no allocation here. */
	if (rte_mempool_get(fab.truth_pool, &obj) != 0) {
		fab.st.truth_dropped++;
		return;
	}
	memcpy(obj, t, sizeof(*t));
	if (rte_ring_mp_enqueue(fab.truth, obj) != 0) {
		rte_mempool_put(fab.truth_pool, obj);
		fab.st.truth_dropped++;
	}
}

/* ---- moving packets ---------------------------------------------------- */

static void route_ip(uint16_t sw, struct rte_mbuf *m, const struct ls_pkt_info *pi,
		     uint64_t t, bool originated);

/* Offer a real packet to a channel at time t, with its item tag (see the IPv4
 * fast path below; 0: none). */
static void
enqueue_pkt(uint16_t ch, struct rte_mbuf *m, uint64_t t, const struct ls_pkt_info *pi,
	    uint32_t tag)
{
	struct ls_fab_chan *c = &fab.fab->chans[ch];
	uint8_t fam = pi->src.family;
	bool ect = fam && ((pi->tos & LS_ECN_MASK) == LS_ECN_ECT0 ||
			   (pi->tos & LS_ECN_MASK) == LS_ECN_ECT1);
	bool probe = fab.hop_records && fam && is_probe(pi);
	uint64_t depth = probe ? ls_fab_chan_depth(c, t) : 0;
	enum ls_fab_verdict v;
	bool ce = false;

	v = ls_fab_chan_enqueue(c, t, m->data_len + LSF_WIRE_OVERHEAD, ect, m, tag, &ce);
	if (v != LS_FAB_OK) {
		if (probe) {
			struct lsf_truth r = {.type = LSF_T_DROP, .verdict = (uint8_t)v,
					      .chan = ch, .t_ns = t, .depth = depth};

			probe_record(&r, pi, m);
			lsf_truth_push(&r);
		}
		rte_pktmbuf_free(m);
		return;
	}
	if (ce)
		ls_pkt_set_ce(rte_pktmbuf_mtod(m, uint8_t *) + pi->l3_off, fam);
	if (probe) {
		const struct ls_fab_item *it = &c->fifo[(c->tail - 1) & (LS_FAB_FIFO - 1)];
		struct lsf_truth r = {.type = LSF_T_HOP, .chan = ch, .t_ns = t, .depth = depth,
				      .depart_ns = it->depart_ns, .deliver_ns = it->deliver_ns,
				      .verdict = it->lost ? 255 : 0,
				      .ser_ns = (uint32_t)(((uint64_t)it->bytes * 8000000000ULL +
							    c->p.rate_bps - 1) / c->p.rate_bps)};

		probe_record(&r, pi, m);
		lsf_truth_push(&r);
	}
	heap_push(ch);
}

/* Replace m's contents with a built frame. */
static bool
frame_set(struct rte_mbuf *m, const uint8_t *buf, int len)
{
	uint8_t *d;

	if (len <= 0)
		return false;
	rte_pktmbuf_reset(m);
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(len < 60 ? 60 : len));
	if (d == NULL)
		return false;
	memset(d, 0, len < 60 ? 60 : (size_t)len);
	memcpy(d, buf, (size_t)len);
	return true;
}

/* A leaf answers for every address on a host's link but the host's own. */
static void
leaf_arp(uint16_t leaf, uint16_t host, struct rte_mbuf *m, const struct ls_pkt_info *pi,
	 uint64_t t)
{
	struct ls_fab_node *h = &fab.fab->nodes[host];
	struct ls_fab_node *l = &fab.fab->nodes[leaf];
	struct ls_pkt_info rpi = {0};
	uint8_t buf[64];
	int len;

	if (!(pi->arp_sha.b[0] & 1)) {
		h->mac = pi->arp_sha;
		h->mac_known = true;
	}
	if (pi->arp_op != LS_ARP_REQUEST || ls_addr_eq(&pi->dst, &h->addr4)) {
		rte_pktmbuf_free(m);
		return;
	}
	len = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REPLY, &l->mac, &pi->dst,
			       &pi->arp_sha, &pi->src);
	if (!frame_set(m, buf, len)) {
		rte_pktmbuf_free(m);
		return;
	}
	fab.st.arp_answered++;
	enqueue_pkt(h->down_chan, m, t, &rpi, 0);
}

static void
leaf_nd(uint16_t leaf, uint16_t host, struct rte_mbuf *m, const struct ls_pkt_info *pi,
	bool is_ns, uint64_t t)
{
	struct ls_fab_node *h = &fab.fab->nodes[host];
	struct ls_fab_node *l = &fab.fab->nodes[leaf];
	struct ls_pkt_info rpi = {0};
	uint8_t buf[128];
	int len;

	if (is_ns && pi->nd_has_lladdr) {
		h->mac = pi->nd_lladdr;
		h->mac_known = true;
	}
	if (!is_ns || ls_addr_eq(&pi->nd_target, &h->addr6)) {
		rte_pktmbuf_free(m);
		return;
	}
	len = ls_pkt_build_na(buf, sizeof(buf), &l->mac, &pi->nd_target,
			      pi->nd_has_lladdr ? &pi->nd_lladdr : &pi->src_mac, &pi->src);
	if (!frame_set(m, buf, len)) {
		rte_pktmbuf_free(m);
		return;
	}
	fab.st.nd_answered++;
	enqueue_pkt(h->down_chan, m, t, &rpi, 0);
}

static void
time_exceeded(uint16_t sw, struct rte_mbuf *m, const struct ls_pkt_info *pi, uint64_t t)
{
	const struct ls_fab_node *n = &fab.fab->nodes[sw];
	const struct ls_addr *router = pi->src.family == LS_AF_INET ? &n->addr4 : &n->addr6;
	const uint8_t *l3 = rte_pktmbuf_mtod(m, const uint8_t *) + pi->l3_off;
	uint8_t buf[1400];
	struct ls_pkt_info tpi;
	int len;

	/* RFC 1812 4.3.2.7 / RFC 4443 2.4: never an ICMP error about an ICMP
	 * error (IPv4 types other than echo/echo reply; ICMPv6 types < 128). */
	if (pi->src.family == LS_AF_INET && l3[9] == 1 && pi->l4_off + 1u <= m->data_len) {
		uint8_t type = rte_pktmbuf_mtod(m, const uint8_t *)[pi->l4_off];

		if (type != 0 && type != 8) {
			rte_pktmbuf_free(m);
			return;
		}
	}
	if (pi->src.family == LS_AF_INET6 && l3[6] == 58 && pi->l4_off + 1u <= m->data_len &&
	    rte_pktmbuf_mtod(m, const uint8_t *)[pi->l4_off] < 128) {
		rte_pktmbuf_free(m);
		return;
	}
	len = ls_pkt_build_time_exceeded(buf, sizeof(buf), &n->mac, &pi->src_mac, router,
					 rte_pktmbuf_mtod(m, const uint8_t *) + pi->l3_off,
					 m->data_len - pi->l3_off, 64);
	if (len < 0 || !frame_set(m, buf, len) ||
	    ls_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, false, &tpi) < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	fab.st.icmp_time_exceeded++;
	route_ip(sw, m, &tpi, t, true);
}

static void
route_ip(uint16_t sw, struct rte_mbuf *m, const struct ls_pkt_info *pi, uint64_t t,
	 bool originated)
{
	const struct ls_fab_node *n = &fab.fab->nodes[sw];
	uint8_t *l3 = rte_pktmbuf_mtod(m, uint8_t *) + pi->l3_off;
	uint8_t fam = pi->src.family;
	uint8_t proto = fam == LS_AF_INET ? l3[9] : l3[6];
	int host = ls_fab_host_by_addr(fab.fab, &pi->dst);
	uint32_t h;
	int ch;

	if (host < 0) {
		fab.st.no_route++;
		rte_pktmbuf_free(m);
		return;
	}
	/* A router does not age what it originates. */
	if (!originated && ls_pkt_ttl_dec(l3, fam) == 0) {
		time_exceeded(sw, m, pi, t);
		return;
	}
	h = ls_fab_flow_hash(n->seed, &pi->src, &pi->dst, proto,
			     proto == 17 ? pi->sport : 0, proto == 17 ? pi->dport : 0,
			     pi->flow_label);
	ch = ls_fab_next_hop(fab.fab, sw, (uint16_t)host, h);
	if (ch < 0) {
		fab.st.no_route++;
		rte_pktmbuf_free(m);
		return;
	}
	enqueue_pkt((uint16_t)ch, m, t, pi, 0);
}

/* What a switch needs of a plain IPv4 packet (no options, not a fragment,
 * intact header), without the generic parse's full decode: nearly every
 * packet, so worth its own few lines. Returns false for anything else. */
static inline bool
switch_ipv4(const struct rte_mbuf *m, struct ls_pkt_info *pi)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *), *ip = f + 14;
	uint16_t tlen;

	if (m->data_len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00 || ip[0] != 0x45)
		return false;
	tlen = (uint16_t)(ip[2] << 8 | ip[3]);
	if (tlen < 20 || 14u + tlen > m->data_len || ((ip[6] & 0x3f) | ip[7]) != 0 ||
	    ls_pkt_cksum_raw(ip, 20) != 0xffff)
		return false;
	memcpy(pi->src_mac.b, f + 6, 6);
	pi->ether_type = RTE_ETHER_TYPE_IPV4;
	pi->l3_off = 14;
	pi->l4_off = 34;
	pi->ttl = ip[8];
	pi->tos = ip[1];
	pi->flow_label = 0;
	pi->src.family = pi->dst.family = LS_AF_INET;
	memcpy(pi->src.a, ip + 12, 4);
	memcpy(pi->dst.a, ip + 16, 4);
	pi->sport = pi->dport = 0;
	pi->payload_off = pi->payload_len = 0;
	if (ip[9] == 17 && tlen >= 28) {
		pi->sport = (uint16_t)(ip[20] << 8 | ip[21]);
		pi->dport = (uint16_t)(ip[22] << 8 | ip[23]);
		pi->payload_off = 42;
		pi->payload_len = (uint16_t)(tlen - 28);
	}
	return true;
}

/* A packet reached switch sw at time t over channel in. */
static void
at_switch(uint16_t sw, uint16_t in, struct rte_mbuf *m, uint64_t t)
{
	const struct ls_fab_chan *c = &fab.fab->chans[in];
	bool from_host = fab.fab->nodes[c->from].kind == LS_FAB_HOST;
	struct ls_pkt_info pi;
	int cls;

	if (switch_ipv4(m, &pi)) {
		route_ip(sw, m, &pi, t, false);
		return;
	}
	cls = ls_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, false, &pi);

	switch (cls) {
	case LS_PKT_ARP:
		if (from_host) {
			leaf_arp(sw, c->from, m, &pi, t);
			return;
		}
		break;
	case LS_PKT_ND_NS:
	case LS_PKT_ND_NA:
		if (from_host) {
			leaf_nd(sw, c->from, m, &pi, cls == LS_PKT_ND_NS, t);
			return;
		}
		break;
	case LS_PKT_UDP:
	case LS_PKT_OTHER:
		if (pi.ether_type == RTE_ETHER_TYPE_IPV4 || pi.ether_type == RTE_ETHER_TYPE_IPV6) {
			route_ip(sw, m, &pi, t, false);
			return;
		}
		fab.st.not_ip++;
		rte_pktmbuf_free(m);
		return;
	default:
		break;
	}
	fab.st.bad++;
	rte_pktmbuf_free(m);
}

/* ---- the IPv4 fast path ---------------------------------------------- */

/*
 * Nearly every packet is plain IPv4 between two hosts. Its ingress checks it
 * once, exactly as switch_ipv4 would, looks up its destination host once, and
 * writes both into the tag of its FIFO items, which the loop hands to every
 * hop. A switch then needs no parse, no host lookup and, with one next hop
 * (a leaf towards its own host, a spine towards a leaf), no flow hash: it
 * decrements the TTL, picks the channel and enqueues.
 *
 * The claim stays true on the way: nothing a link or a switch does to the
 * packet changes what switch_ipv4 checked (TTL and CE updates keep the
 * header checksum right, RFC 1624), and the host table is fixed at load.
 * Whatever the fast path does not do itself (an expiring TTL: ICMP; no
 * route: counted) it hands to the generic at_switch on the unmodified
 * packet, which then decides exactly as before. Background packets keep
 * their own tags (pkt NULL); real packets had 0 before, which still means
 * "generic at every switch" (ARP/ND answers, ICMP errors, IPv6, anything
 * odd). With per-hop truth records (--hops) a switch still fills a probe's
 * record from switch_ipv4, exactly as the generic path does.
 */
#define LSF_TAG_V4 0x80000000u      /* plain IPv4, validated at ingress */
#define LSF_TAG_HOST 0x0000ffffu    /* with it: the destination host's node index */

static inline bool
is_ect(uint8_t tos)
{
	return (tos & LS_ECN_MASK) == LS_ECN_ECT0 || (tos & LS_ECN_MASK) == LS_ECN_ECT1;
}

/* Offer a real packet whose IP header (if any, family fam) is at offset 14
 * to channel ch at time t, with its tag. What enqueue_pkt does without a
 * truth record to write. */
static __rte_always_inline void
enqueue_tagged(uint16_t ch, struct rte_mbuf *m, uint64_t t, uint8_t fam, bool ect, uint32_t tag)
{
	bool ce;

	if (unlikely(ls_fab_chan_enqueue_inline(&fab.fab->chans[ch], t,
						m->data_len + LSF_WIRE_OVERHEAD, ect, m, tag,
						&ce) != LS_FAB_OK)) {
		rte_pktmbuf_free(m);
		return;
	}
	if (ce)
		ls_pkt_set_ce(rte_pktmbuf_mtod(m, uint8_t *) + 14, fam);
	heap_push(ch);
}

/* The tag for a frame arriving from a host: LSF_TAG_V4 | host when it is
 * what switch_ipv4 accepts (same checks, in the same order of cost) and goes
 * to a host; 0 otherwise. */
static __rte_always_inline uint32_t
ingress_tag(const struct rte_mbuf *m, const uint8_t *f)
{
	const uint8_t *ip = f + 14;
	uint16_t tlen;
	int host;

	if (unlikely(fab.no_fastpath) || m->data_len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00 ||
	    ip[0] != 0x45)
		return 0;
	tlen = (uint16_t)(ip[2] << 8 | ip[3]);
	/* ls_pkt_cksum_raw(ip, 20), inline */
	if (tlen < 20 || 14u + tlen > m->data_len || ((ip[6] & 0x3f) | ip[7]) != 0 ||
	    ls_csum_fold(ls_csum_bytes(ip, 20, 0)) != 0xffff)
		return 0;
	host = ls_fab_host_by_v4(fab.fab, ip + 16);
	return host < 0 ? 0 : LSF_TAG_V4 | (uint32_t)host;
}

/* A tagged packet reached switch sw at time t over channel in: route_ip's
 * decision without its parse. */
static __rte_always_inline void
switch_v4_fast(uint16_t sw, uint16_t in, struct rte_mbuf *m, uint64_t t, uint32_t tag)
{
	const struct ls_fabric *f = fab.fab;
	const struct ls_fab_route *r = ls_fab_route_get(f, sw, (uint16_t)(tag & LSF_TAG_HOST));
	uint8_t *l3 = rte_pktmbuf_mtod(m, uint8_t *) + 14;
	uint16_t ch;

	/* TTL 0 or 1 (Time Exceeded) and no route (a counter) are the generic
	 * path's business: nothing has been changed yet. */
	if (unlikely(l3[8] <= 1 || r->n == 0)) {
		at_switch(sw, in, m, t);
		return;
	}
	ls_pkt_ttl_dec4(l3);
	if (r->n == 1) {
		ch = r->chan[0];
	} else {
		/* route_ip's hash: ports only for UDP with a whole header
		 * (switch_ipv4 leaves them 0 otherwise). */
		uint8_t proto = l3[9];
		uint16_t sport = 0, dport = 0;

		if (proto == 17 && (l3[2] << 8 | l3[3]) >= 28) {
			sport = (uint16_t)(l3[20] << 8 | l3[21]);
			dport = (uint16_t)(l3[22] << 8 | l3[23]);
		}
		ch = r->chan[ls_fab_mod(ls_fab_flow_hash_v4(f->nodes[sw].seed, l3 + 12, l3 + 16,
							    proto, sport, dport), r->n)];
	}
	if (unlikely(fab.hop_records)) {
		/* A probe's record needs what the generic path hands
		 * enqueue_pkt: switch_ipv4's result (it accepts the packet, as
		 * at ingress; only its ttl differs, which records do not use). */
		struct ls_pkt_info pi;

		switch_ipv4(m, &pi);
		enqueue_pkt(ch, m, t, &pi, tag);
		return;
	}
	enqueue_tagged(ch, m, t, LS_AF_INET, is_ect(l3[1]), tag);
}

static uint64_t sent_due[256]; /* this loop's host deliveries: when the model had them leave */
static unsigned int n_sent;

static void
to_host(uint16_t host, struct rte_mbuf *m, uint64_t deliver_ns)
{
	struct ls_fab_node *h = &fab.fab->nodes[host];
	const struct ls_fab_node *l = &fab.fab->nodes[h->leaf];
	struct lsf_port *p = &fab.ports[fab.port_of_host[host]];
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	/* The leaf is the last router: its MAC is the source; the host's MAC,
	 * once learnt from its ARP/ND, the destination. */
	memcpy(f, h->mac_known ? h->mac.b : bcast, 6);
	memcpy(f + 6, l->mac.b, 6);
	if (fab.rx_trailer) {
		/* the host NIC's receive stamp: when the model delivered the frame,
		 * however late this loop sends it (ls_clock_trailer.c) */
		uint8_t *t = (uint8_t *)rte_pktmbuf_append(m, LS_RX_TRAILER_LEN);

		if (likely(t != NULL))
			ls_rx_trailer_put(t, deliver_ns);
		else
			fab.st.trailer_no_room++;
	}
	fab.st.tx_pkts++;
	/* Lateness is charged after the TX flush, when the packet really left:
	 * one clock read per loop instead of one per packet. */
	if (n_sent < RTE_DIM(sent_due))
		sent_due[n_sent++] = deliver_ns;
	rte_eth_tx_buffer(p->port_id, 0, p->txb, m);
}

/* ---- background traffic ---------------------------------------------- */

/* Slots [0, gens_hi) and [0, flaps_hi) are all that were ever used (set by
 * apply_msg, on this lcore): the loop scans those instead of all 64 of each
 * on every iteration, which was a few percent of a busy loop's time with
 * none in use. */
static int gens_hi, flaps_hi;

static uint32_t
gen_hash(const struct lsf_gen *gn, uint16_t sw, uint32_t flow)
{
	const struct ls_fabric *f = fab.fab;
	const struct ls_fab_node *s = &f->nodes[gn->src], *d = &f->nodes[gn->dst];
	const struct ls_addr *sa = s->addr4.family ? &s->addr4 : &s->addr6;
	const struct ls_addr *da = d->addr4.family ? &d->addr4 : &d->addr6;

	return ls_fab_flow_hash(f->nodes[sw].seed, sa, da, 17, (uint16_t)(40000 + flow),
				(uint16_t)(50000 + flow), 0);
}

static void
enqueue_virtual(uint16_t ch, uint64_t t, uint32_t bytes, uint32_t tag, struct lsf_gen *gn)
{
	bool ce;

	if (ls_fab_chan_enqueue(&fab.fab->chans[ch], t, bytes, false, NULL, tag, &ce) != LS_FAB_OK) {
		gn->dropped++;
		fab.st.gen_dropped++;
		return;
	}
	heap_push(ch);
}

static void
virtual_at(uint16_t node, uint32_t tag, uint64_t t)
{
	struct lsf_gen *gn = &fab.gens[tag & 0xff];
	int ch;

	if (!gn->active || !gn->pair || fab.fab->nodes[node].kind == LS_FAB_HOST)
		return;
	ch = ls_fab_next_hop(fab.fab, node, gn->dst, gen_hash(gn, node, tag >> 8));
	if (ch >= 0)
		enqueue_virtual((uint16_t)ch, t, gn->pkt_bytes, tag, gn);
}

/* An exponential length with this mean (random on/off bursts). */
static uint64_t
exp_ns(uint64_t mean_ns)
{
	/* rte_rand() is 64 random bits; 1 - u is in (0, 1], so the log is finite */
	double u = (double)(rte_rand() >> 11) * 0x1.0p-53;

	return (uint64_t)(-(double)mean_ns * log(1.0 - u));
}

/*
 * A random burst from start_ns: it ends an exponential on-length later, and
 * its first packet goes a uniformly random part of one gap after its start.
 * Why the offset: a burst sends at first, first + gap, ... while before its
 * end, ceil((length - offset) / gap) packets; with no offset that is half a
 * packet more per burst than length / gap on average (0.7% over the rate
 * for the clock-sync benchmark's 90%: 75 packets a burst), with a uniform
 * one it is exactly length / gap.
 */
static void
gen_burst(struct lsf_gen *gn, uint64_t start_ns)
{
	gn->burst_end_ns = start_ns + exp_ns(gn->on_ns);
	gn->next_ns = start_ns + (uint64_t)((double)(rte_rand() >> 11) * 0x1.0p-53 *
					    (double)gn->gap_ns);
}

/*
 * Next send time after a packet of an on/off generator. Periodic bursts
 * keep a fixed phase between links, and a path that crosses two links whose
 * idle gaps never line up then never sees an empty queue (the clock-sync
 * benchmark met exactly that); random bursts (exponential on and off
 * lengths, the classic on/off source) have no phase.
 */
static void
gen_advance(struct lsf_gen *gn)
{
	gn->next_ns += gn->gap_ns;
	if (gn->off_ns == 0)
		return;
	if (gn->random) {
		/* a burst that sends nothing (shorter than its offset) is an
		 * off period that much longer; bounded, for bursts far shorter
		 * than a gap (the last one tried then sends its packet late) */
		for (int k = 0; k < 16 && gn->next_ns >= gn->burst_end_ns; k++)
			gen_burst(gn, gn->burst_end_ns + exp_ns(gn->off_ns));
		return;
	}
	{
		uint64_t period = gn->on_ns + gn->off_ns;
		uint64_t phase = (gn->next_ns - gn->start_ns) % period;

		if (phase >= gn->on_ns)
			gn->next_ns += period - phase;
	}
}

static unsigned int
run_gens(uint64_t now, uint64_t *next)
{
	unsigned int work = 0;

	for (int i = 0; i < gens_hi; i++) {
		struct lsf_gen *gn = &fab.gens[i];

		if (!gn->active)
			continue;
		/* Bounded per loop so a generator cannot starve deliveries. */
		for (int k = 0; k < 64 && gn->next_ns <= now; k++) {
			uint32_t flow = gn->pair && gn->flows ? gn->seq % gn->flows : 0;
			uint32_t tag = (uint32_t)i | flow << 8;

			if (gn->pair)
				enqueue_virtual(fab.fab->nodes[gn->src].up_chan, gn->next_ns,
						gn->pkt_bytes, tag, gn);
			else
				enqueue_virtual(gn->chan, gn->next_ns, gn->pkt_bytes, tag, gn);
			gn->seq++;
			gn->sent++;
			fab.st.gen_pkts++;
			gen_advance(gn);
			work++;
		}
		if (gn->next_ns < *next)
			*next = gn->next_ns;
	}
	return work;
}

/* ---- link schedules, routing, control messages ----------------------- */

static void
chan_state(uint16_t ch, bool up, uint64_t now, uint64_t due)
{
	struct lsf_truth r = {.type = LSF_T_LINK, .chan = ch, .t_ns = now, .due_ns = due, .up = up};

	if (fab.fab->chans[ch].up == up)
		return;
	ls_fab_chan_set_up(fab.fab, ch, up, now);
	lsf_truth_push(&r);
}

static void
run_flaps(uint64_t now, uint64_t *next)
{
	for (int i = 0; i < flaps_hi; i++) {
		struct lsf_flap *fl = &fab.flaps[i];

		if (!fl->active)
			continue;
		if (now >= fl->next_ns) {
			fl->is_down = !fl->is_down;
			for (int k = 0; k < fl->n_chan; k++)
				chan_state(fl->chan[k], !fl->is_down, now, fl->next_ns);
			fl->next_ns += fl->is_down ? fl->down_ns : fl->every_ns - fl->down_ns;
			if (!fl->is_down && fl->count && --fl->count == 0)
				fl->active = false;
		}
		if (fl->active && fl->next_ns < *next)
			*next = fl->next_ns;
	}
}

/* Follow a flow hop by hop exactly as forwarding would hash it. */
static int
trace_route(struct lsf_msg *msg)
{
	const struct ls_fabric *f = fab.fab;
	const struct ls_fab_node *s = &f->nodes[msg->route.src], *d = &f->nodes[msg->route.dst];
	const struct ls_addr *sa = msg->route.family == LS_AF_INET6 ? &s->addr6 : &s->addr4;
	const struct ls_addr *da = msg->route.family == LS_AF_INET6 ? &d->addr6 : &d->addr4;
	uint16_t node;

	if (!sa->family || !da->family)
		return -EAFNOSUPPORT;
	msg->route.n = 0;
	msg->route.chan[msg->route.n++] = s->up_chan;
	node = s->leaf;
	while (msg->route.n < 16) {
		uint32_t h = ls_fab_flow_hash(f->nodes[node].seed, sa, da, msg->route.proto,
					      msg->route.sport, msg->route.dport,
					      msg->route.flow_label);
		int ch = ls_fab_next_hop(f, node, msg->route.dst, h);

		if (ch < 0)
			return ch;
		msg->route.chan[msg->route.n++] = (uint16_t)ch;
		node = f->chans[ch].to;
		if (f->nodes[node].kind == LS_FAB_HOST)
			return 0;
	}
	return -ELOOP;
}

static void
apply_msg(struct lsf_msg *msg, uint64_t now)
{
	int rc = 0;

	switch (msg->type) {
	case LSF_MSG_CHAN_SET:
		if (msg->set_params) {
			struct ls_fab_chan *c = &fab.fab->chans[msg->chan];
			uint64_t backlog = ls_fab_chan_depth(c, now);

			c->p = msg->params;
			/* The bytes still queued now drain at the new rate (packets
			 * already scheduled keep their times; the FIFO never
			 * reorders). Regression: a slowed link set back to full
			 * rate reported a gigabyte of queue. */
			if (backlog)
				c->busy_until_ns = now + (backlog * 8000000000ULL +
							  c->p.rate_bps - 1) / c->p.rate_bps;
		}
		if (msg->up >= 0)
			chan_state(msg->chan, msg->up != 0, now, 0);
		break;
	case LSF_MSG_FLAP:
		rc = -ENOSPC;
		for (int i = 0; i < LSF_MAX_FLAPS; i++) {
			if (!fab.flaps[i].active) {
				fab.flaps[i] = msg->flap;
				fab.flaps[i].active = true;
				fab.flaps[i].is_down = false;
				fab.flaps[i].next_ns = now;
				flaps_hi = RTE_MAX(flaps_hi, i + 1);
				rc = i;
				break;
			}
		}
		break;
	case LSF_MSG_GEN_START:
		rc = -ENOSPC;
		for (int i = 0; i < LSF_MAX_GENS; i++) {
			if (!fab.gens[i].active) {
				fab.gens[i] = msg->gen;
				fab.gens[i].active = true;
				fab.gens[i].start_ns = now;
				fab.gens[i].next_ns = now;
				if (fab.gens[i].random && fab.gens[i].off_ns != 0)
					gen_burst(&fab.gens[i], now);
				gens_hi = RTE_MAX(gens_hi, i + 1);
				rc = i;
				break;
			}
		}
		break;
	case LSF_MSG_GEN_STOP:
		rc = -ENOENT;
		for (int i = 0; i < LSF_MAX_GENS; i++) {
			if (fab.gens[i].active && strcmp(fab.gens[i].name, msg->gen.name) == 0) {
				fab.gens[i].active = false;
				rc = 0;
			}
		}
		break;
	case LSF_MSG_CONVERGENCE:
		fab.fab->convergence_ns = msg->convergence_ns;
		break;
	case LSF_MSG_ROUTE:
		rc = trace_route(msg);
		break;
	}
	msg->result = rc;
	__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
}

/* ---- the loop ---------------------------------------------------------- */

static uint64_t last_depth[LS_FAB_MAX_CHANS];

static void
sample_depths(uint64_t now)
{
	for (uint16_t c = 0; c < fab.fab->n_chans; c++) {
		uint64_t d = ls_fab_chan_depth(&fab.fab->chans[c], now);

		/* Only what changed: an idle fabric writes nothing. */
		if (d != last_depth[c]) {
			struct lsf_truth r = {.type = LSF_T_DEPTH, .chan = c, .t_ns = now, .depth = d};

			lsf_truth_push(&r);
			last_depth[c] = d;
		}
	}
}

/* Just the IP family, traffic class and header offset: enough for a link to
 * decide ECN. */
static inline void
light_info(const struct rte_mbuf *m, struct ls_pkt_info *pi)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

	pi->src.family = 0;
	pi->sport = pi->dport = 0;
	pi->l3_off = 14;
	if (m->data_len >= 14 + 40 && f[12] == 0x86 && f[13] == 0xdd && (f[14] >> 4) == 6) {
		pi->src.family = LS_AF_INET6;
		pi->tos = (uint8_t)((f[14] & 0x0f) << 4 | f[15] >> 4);
	} else if (m->data_len >= 14 + 20 && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45) {
		pi->src.family = LS_AF_INET;
		pi->tos = f[15];
	}
}

/*
 * --tx-trailer: the instant a host asked this frame to leave at (the NIC's
 * send-on-timestamp; lockstepd's clock.tx_trailer stamped T1 or T3 with
 * it), trailer removed; t_rx, when the poll found it, for a frame without
 * one. A frame that reached us after its instant (the sender's lead was
 * shorter than its own delay plus our poll gap) goes in at t_rx, as a NIC
 * sends a late frame at once: its stamp is then early by the difference,
 * and counted. An instant beyond LSF_TX_AT_AHEAD_NS ahead or
 * LSF_TX_AT_BEHIND_NS behind is not believed (a host's clock map gone
 * wrong, or a forged trailer).
 */
static inline uint64_t
tx_at(struct rte_mbuf *m, uint64_t t_rx)
{
	uint64_t at;

	if (m->nb_segs != 1 ||
	    ls_tx_trailer_get(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &at) != 0)
		return t_rx;
	rte_pktmbuf_trim(m, LS_RX_TRAILER_LEN);
	if (at >= t_rx) {
		if (unlikely(at - t_rx > LSF_TX_AT_AHEAD_NS)) {
			fab.st.tx_at_bad++;
			return t_rx;
		}
		fab.st.tx_at++;
		return at;
	}
	if (unlikely(t_rx - at > LSF_TX_AT_BEHIND_NS))
		fab.st.tx_at_bad++;
	else
		fab.st.tx_at_late++;
	return t_rx;
}

static unsigned int
rx_hosts(void)
{
	unsigned int n_all = 0;

	for (uint16_t i = 0; i < fab.n_ports; i++) {
		struct lsf_port *p = &fab.ports[i];
		struct rte_mbuf *rx[LSF_BURST];
		uint64_t t_rx = lsf_now();
		uint16_t n = rte_eth_rx_burst(p->port_id, 0, rx, LSF_BURST);
		const uint16_t up = fab.fab->nodes[p->host].up_chan;

		if (n == 0)
			continue;
		/*
		 * Ingress time: read right before this port's burst, not taken
		 * from the loop's "now". With "now", a frame that arrived after
		 * it was read (the loop lost its CPU, or earlier ports took a
		 * while) entered the model before its sender sent it: probes
		 * were 15-30 us ahead of their T1. Read after the burst, every
		 * frame entered late by the burst's own copying out of the
		 * ring, which is the emulator's time and not the network's, and
		 * varies with the frames in the burst: in the clock-sync
		 * benchmark at 50% load that widened the tail every envelope
		 * floor rests on (per-window offset error 66 ns sd against about
		 * 50 read before; docs/benchmarks.md). One read per port, not
		 * the last read before (the loop's "now", or the end of the
		 * last port with frames): that saved 40 ns of an idle pass, but
		 * windows were 70 ns sd off again, likely as a port's frames
		 * then entered earlier by the empty polls before it. A frame
		 * the burst finds was in the ring when the burst began, or was
		 * put there during it, after its sender stamped it (the stamp
		 * comes before the sender's own copy into the ring), so the
		 * time before is not ahead of any T1 unless the burst itself
		 * was slow: then (the loop lost its CPU in it) the time after
		 * is used, as before.
		 */
		{
			uint64_t t_end = lsf_now();

			if (unlikely(t_end - t_rx > LSF_RX_SLOW_NS)) {
				t_rx = t_end;
				fab.st.slow_rx_bursts++;
			}
		}
		for (uint16_t k = 0; k < n && k < 4; k++)
			rte_prefetch0(rte_pktmbuf_mtod(rx[k], void *));
		for (uint16_t k = 0; k < n; k++) {
			struct rte_mbuf *m = rx[k];
			struct ls_pkt_info pi;
			uint64_t t_in = t_rx;
			const uint8_t *f;
			uint32_t tag;

			if (p->kstamp && (m->ol_flags & fab.kts_dynflag)) {
				uint64_t us = *RTE_MBUF_DYNFIELD(m, fab.kts_dynfield,
								 const rte_mbuf_timestamp_t *);
				uint64_t ts = ls_kstamp_raw_ns(&fab.map, us) + LS_SIM_EPOCH_NS;

				/* earlier than now, and not absurdly so (a clock step) */
				if (ts <= t_rx && t_rx - ts < 1000000000ULL)
					t_in = ts;
			}

			if (k + 4 < n)
				rte_prefetch0(rte_pktmbuf_mtod(rx[k + 4], void *));
			if (fab.tx_trailer)
				t_in = tx_at(m, t_in);

			/* A plain IPv4 packet is judged here once for every switch
			 * on its way (the fast path); anything else the leaf
			 * parses (and judges) on arrival. The host link needs
			 * only what ECN and truth records use. */
			f = rte_pktmbuf_mtod(m, const uint8_t *);
			tag = ingress_tag(m, f);
			if (fab.hop_records) {
				if (m->nb_segs != 1 || ls_pkt_parse(f, m->data_len, false, &pi) < 0)
					memset(&pi, 0, sizeof(pi));
				enqueue_pkt(up, m, t_in, &pi, tag);
				continue;
			}
			if (likely(tag != 0)) {
				enqueue_tagged(up, m, t_in, LS_AF_INET, is_ect(f[15]), tag);
				continue;
			}
			light_info(m, &pi);
			enqueue_tagged(up, m, t_in, pi.src.family,
				       pi.src.family != 0 && is_ect(pi.tos), 0);
		}
		fab.st.rx_pkts += n;
		n_all += n;
	}
	return n_all;
}

int
lsf_loop(void *arg __rte_unused)
{
	uint64_t next_sample = 0, prev_poll = 0;
	uint64_t hz = rte_get_tsc_hz();

	/* Wake-ups within a microsecond or two of what we ask (default slack is
	 * 50 us): the idle sleep must not make deliveries late. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	LSF_LOG(INFO, "lcore %u: %u host ports, %u channels", rte_lcore_id(), fab.n_ports,
		fab.fab->n_chans);
	while (!fab.quit) {
		uint64_t now = lsf_now(), next = UINT64_MAX;
		unsigned int work = rx_hosts();
		struct lsf_msg *msg;

		if (prev_poll != 0)
			ls_hist_add(&fab.poll_gap, (int64_t)(now - prev_poll));
		prev_poll = now;

		work += run_gens(now, &next);
		run_flaps(now, &next);
		ls_fab_tick(fab.fab, now);
		while (heap_min() <= now) {
			uint16_t c = heap.e[0].ch;
			struct ls_fab_chan *ch = &fab.fab->chans[c];
			const struct ls_fab_item *it = &ch->fifo[ch->head & (LS_FAB_FIFO - 1)];
			/* What the event needs, read before its slot is released
			 * (ls_fab_chan_pop without copying the whole item). */
			struct rte_mbuf *m = it->pkt;
			uint64_t t = it->deliver_ns;
			uint32_t tag = it->tag;
			bool lost = it->lost;
			uint16_t to = ch->to;

			ch->head++;
			heap_fix_top();
			fab.st.events++;
			work++;
			if (m == NULL) {
				if (!lost)
					virtual_at(to, tag, t);
				continue;
			}
			if (lost) {
				rte_pktmbuf_free(m);
				continue;
			}
			if (fab.fab->nodes[to].kind == LS_FAB_HOST)
				to_host(to, m, t);
			else if (likely(tag & LSF_TAG_V4))
				switch_v4_fast(to, c, m, t, tag);
			else
				at_switch(to, c, m, t);
		}
		for (uint16_t i = 0; i < fab.n_ports; i++)
			rte_eth_tx_buffer_flush(fab.ports[i].port_id, 0, fab.ports[i].txb);
		if (n_sent) {
			uint64_t t = lsf_now();
			int64_t late[RTE_DIM(sent_due)];

			for (unsigned int i = 0; i < n_sent; i++)
				late[i] = (int64_t)(t - sent_due[i]);
			ls_hist_add_n(&fab.late, late, n_sent);
			n_sent = 0;
		}
		while (rte_ring_sc_dequeue(fab.msgs, (void **)&msg) == 0)
			apply_msg(msg, now);
		if (fab.sample_ns && now >= next_sample) {
			/* at a fresh time: packets taken in this pass entered at
			 * their own (later) ingress times, and depth at the pass's
			 * start time would count the gap as queued bytes */
			sample_depths(lsf_now());
			next_sample = now + fab.sample_ns;
		}
		if (heap_min() < next)
			next = heap_min();
		if (work == 0 && fab.idle_sleep_us) {
			/* Sleep, but wake ~10 us before the next event and spin the rest. */
			uint64_t budget = (uint64_t)fab.idle_sleep_us * 1000;

			/*
			 * The next depth sample bounds the sleep only while a queue
			 * holds bytes or its last sample does not yet read 0: an
			 * idle fabric records nothing, and waking every sample_ns
			 * for it kept the loop from ever sleeping (100% of a CPU
			 * the lab's daemons share).
			 */
			if (fab.sample_ns && next_sample < next) {
				for (uint16_t c = 0; c < fab.fab->n_chans; c++) {
					if (last_depth[c] != 0 ||
					    ls_fab_chan_depth(&fab.fab->chans[c], now) != 0) {
						next = next_sample;
						break;
					}
				}
			}

			if (next != UINT64_MAX)
				budget = next > now + 10000 ? RTE_MIN(budget, next - now - 10000) : 0;
			if (budget >= 5000) {
				struct timespec ts = {0, (long)budget};

				nanosleep(&ts, NULL);
				fab.st.idle_sleeps++;
			}
		}
		(void)hz;
	}
	return 0;
}
