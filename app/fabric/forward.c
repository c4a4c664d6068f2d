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
 * Background traffic, link flaps and control messages are in traffic.c, the
 * ground-truth records in truth.c, the heap in event_heap.h; this file moves
 * the packets: host ingress, switching (the generic path and the IPv4 fast
 * path), delivery to hosts, and the loop that ties them together.
 *
 * Nothing here allocates (beyond mbufs), locks or makes a system call, except
 * the idle sleep, which never sleeps past the next scheduled event.
 */
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>

#include "event_heap.h"
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


/* ---- the event heap (event_heap.h) ------------------------------------ */

struct lsf_heap lsf_heap;

static bool
is_probe(const struct ls_pkt_info *pi)
{
	return pi->dport == LS_STAMP_PORT || pi->sport == LS_STAMP_PORT;
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

	v = ls_fab_chan_enqueue(c, t, m->pkt_len + LSF_WIRE_OVERHEAD, ect, m, tag, &ce);
	if (v != LS_FAB_OK) {
		/* a probe's every drop (with --hops); any other frame a dead
		 * link drops, always (when the last one went in says when its
		 * senders moved away: failover's truth) */
		if (probe || (v == LS_FAB_DROP_DOWN && fam && !is_probe(pi))) {
			struct lsf_truth r = {.type = LSF_T_DROP, .verdict = (uint8_t)v,
					      .chan = ch, .t_ns = t, .depth = depth};

			lsf_probe_record(&r, pi, m);
			r.data = !probe;
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

		lsf_probe_record(&r, pi, m);
		lsf_truth_push(&r);
	}
	heap_push(ch);
}

/* Replace m's contents with a built frame. rte_pktmbuf_reset() makes m one
 * segment: free the rest of a chained frame first, or it leaks (issue 27
 * M5: a jumbo ARP request from net_pcap or memif cost a segment each). */
static bool
frame_set(struct rte_mbuf *m, const uint8_t *buf, int len)
{
	uint8_t *d;

	if (len <= 0)
		return false;
	if (m->next != NULL) {
		rte_pktmbuf_free(m->next);
		m->next = NULL;
	}
	rte_pktmbuf_reset(m);
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(len < 60 ? 60 : len));
	if (d == NULL)
		return false;
	memset(d, 0, len < 60 ? 60 : (size_t)len);
	memcpy(d, buf, (size_t)len);
	return true;
}

/* A leaf's answer (len bytes in buf, built in place of m) goes back down
 * the asking host's link; answered counts it. */
static void
leaf_reply(const struct ls_fab_node *h, struct rte_mbuf *m, const uint8_t *buf, int len,
	   uint64_t *answered, uint64_t t)
{
	struct ls_pkt_info rpi = {0};

	if (!frame_set(m, buf, len)) {
		fab.st.ignored++;
		rte_pktmbuf_free(m);
		return;
	}
	(*answered)++;
	enqueue_pkt(h->down_chan, m, t, &rpi, 0);
}

/* A leaf answers for every address on a host's link but the host's own. */
static void
leaf_arp(uint16_t leaf, uint16_t host, struct rte_mbuf *m, const struct ls_pkt_info *pi,
	 uint64_t t)
{
	struct ls_fab_node *h = &fab.fab->nodes[host];
	struct ls_fab_node *l = &fab.fab->nodes[leaf];
	uint8_t buf[64];
	int len;

	if (!(pi->arp_sha.b[0] & 1)) {
		h->mac = pi->arp_sha;
		h->mac_known = true;
	}
	if (pi->arp_op != LS_ARP_REQUEST || ls_addr_eq(&pi->dst, &h->addr4)) {
		fab.st.ignored++;
		rte_pktmbuf_free(m);
		return;
	}
	len = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REPLY, &l->mac, &pi->dst,
			       &pi->arp_sha, &pi->src);
	leaf_reply(h, m, buf, len, &fab.st.arp_answered, t);
}

static void
leaf_nd(uint16_t leaf, uint16_t host, struct rte_mbuf *m, const struct ls_pkt_info *pi,
	bool is_ns, uint64_t t)
{
	struct ls_fab_node *h = &fab.fab->nodes[host];
	struct ls_fab_node *l = &fab.fab->nodes[leaf];
	uint8_t buf[128];
	int len;

	/* never learn a group address as a host's MAC (leaf_arp checks too) */
	if (is_ns && pi->nd_has_lladdr && !(pi->nd_lladdr.b[0] & 1)) {
		h->mac = pi->nd_lladdr;
		h->mac_known = true;
	}
	if (!is_ns || ls_addr_eq(&pi->nd_target, &h->addr6)) {
		fab.st.ignored++;
		rte_pktmbuf_free(m);
		return;
	}
	len = ls_pkt_build_na(buf, sizeof(buf), &l->mac, &pi->nd_target,
			      pi->nd_has_lladdr ? &pi->nd_lladdr : &pi->src_mac, &pi->src);
	leaf_reply(h, m, buf, len, &fab.st.nd_answered, t);
}

/* RFC 4443 2.4 (f), RFC 1812 4.3.2.8: a router limits the ICMP errors it
 * originates. A token bucket per switch on the lab timeline (t, ns):
 * --icmp-rate errors a second, a burst of a tenth of that. */
static bool
icmp_budget(uint16_t sw, uint64_t t)
{
	uint64_t burst = (uint64_t)fab.icmp_rate * 100 + 1000; /* milli-tokens */
	uint64_t dt = t - fab.icmp_refill[sw];

	if (fab.icmp_rate == 0)
		return true;
	if (dt > 10000000000ULL)
		dt = 10000000000ULL;
	fab.icmp_tokens[sw] += dt * fab.icmp_rate / 1000000;
	if (fab.icmp_tokens[sw] > burst)
		fab.icmp_tokens[sw] = burst;
	fab.icmp_refill[sw] = t;
	if (fab.icmp_tokens[sw] < 1000)
		return false;
	fab.icmp_tokens[sw] -= 1000;
	return true;
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
			fab.st.ignored++;
			rte_pktmbuf_free(m);
			return;
		}
	}
	if (pi->src.family == LS_AF_INET6 && l3[6] == 58 && pi->l4_off + 1u <= m->data_len &&
	    rte_pktmbuf_mtod(m, const uint8_t *)[pi->l4_off] < 128) {
		fab.st.ignored++;
		rte_pktmbuf_free(m);
		return;
	}
	if (!icmp_budget(sw, t)) {
		fab.st.icmp_rate_limited++;
		rte_pktmbuf_free(m);
		return;
	}
	len = ls_pkt_build_time_exceeded(buf, sizeof(buf), &n->mac, &pi->src_mac, router,
					 rte_pktmbuf_mtod(m, const uint8_t *) + pi->l3_off,
					 m->data_len - pi->l3_off, 64);
	if (len < 0 || !frame_set(m, buf, len) ||
	    ls_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, false, &tpi) < 0) {
		fab.st.ignored++;
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

/* A frame of the fast path a dead link dropped, in the truth as
 * enqueue_pkt records them (probes only with --hops, which sends every
 * frame through enqueue_pkt). Off the fast path: a drop. */
static void __rte_noinline
down_drop_record(uint16_t ch, const struct rte_mbuf *m, uint64_t t)
{
	struct ls_pkt_info pi;
	struct lsf_truth r = {.type = LSF_T_DROP, .verdict = LS_FAB_DROP_DOWN, .chan = ch,
			      .t_ns = t, .data = true};

	if (ls_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, false, &pi) < 0 ||
	    pi.src.family == 0 || is_probe(&pi))
		return;
	lsf_probe_record(&r, &pi, m);
	lsf_truth_push(&r);
}

/* Offer a real packet whose IP header (if any, family fam) is at offset 14
 * to channel ch at time t, with its tag. What enqueue_pkt does without a
 * truth record to write (but a dead link's drop). */
static __rte_always_inline void
enqueue_tagged(uint16_t ch, struct rte_mbuf *m, uint64_t t, uint8_t fam, bool ect, uint32_t tag)
{
	enum ls_fab_verdict v;
	bool ce;

	v = ls_fab_chan_enqueue_inline(&fab.fab->chans[ch], t, m->pkt_len + LSF_WIRE_OVERHEAD, ect,
				       m, tag, &ce);
	if (unlikely(v != LS_FAB_OK)) {
		if (v == LS_FAB_DROP_DOWN)
			down_drop_record(ch, m, t);
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

	if (unlikely(!ls_app_gate_open(&p->gate, p->port_id))) {
		fab.st.host_down++;   /* its host is not connected (yet) */
		rte_pktmbuf_free(m);
		return;
	}
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

/* ---- host ingress ---------------------------------------------------- */

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

/*
 * A jumbo frame arrives as a chain of 2 KB mbufs (memif, net_pcap), and the
 * switches read one contiguous frame: an IP frame in a chain is copied into
 * one buffer of the jumbo pool, then routed like any other, so a link's MTU
 * is what stops it. Anything else (a chained ARP) and whatever does not fit
 * stays as it was, and the leaf counts it bad; an empty pool is counted.
 * Only chained frames pay for this.
 */
static struct rte_mbuf *
linearize(struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	struct rte_mbuf *j;
	uint8_t *d;

	if (m->data_len < 14 || m->pkt_len > LSF_JUMBO_ROOM - LS_RX_TRAILER_LEN ||
	    !((f[12] == 0x08 && f[13] == 0x00) || (f[12] == 0x86 && f[13] == 0xdd)))
		return m;
	j = rte_pktmbuf_alloc(fab.jumbo);
	if (j == NULL) {
		fab.st.jumbo_no_buf++;
		return m;
	}
	d = (uint8_t *)rte_pktmbuf_append(j, (uint16_t)m->pkt_len);
	if (d == NULL || rte_pktmbuf_read(m, 0, m->pkt_len, d) != d) {
		/* not a chain after all: rte_pktmbuf_read copies only chains */
		rte_pktmbuf_free(j);
		return m;
	}
	j->ol_flags = m->ol_flags;
	rte_pktmbuf_free(m);
	fab.st.jumbo_copied++;
	return j;
}

static unsigned int
rx_hosts(void)
{
	unsigned int n_all = 0;

	for (uint16_t i = 0; i < fab.n_ports; i++) {
		struct lsf_port *p = &fab.ports[i];
		struct rte_mbuf *rx[LSF_BURST];
		uint64_t t_rx = lsf_now();
		uint16_t n = ls_app_rx(&p->gate, p->port_id, rx, LSF_BURST);
		const uint16_t up = fab.fab->nodes[p->host].up_chan;
		uint64_t t_end;

		if (n == 0)
			continue;
		/* Ingress time: read right before this port's burst, since
		 * copying the burst out of the ring is the emulator's time, not
		 * the network's; a slow burst (the loop lost its CPU in it)
		 * enters at its end instead (docs/fabric.md, "Ingress time"). */
		t_end = lsf_now();
		if (unlikely(t_end - t_rx > LSF_RX_SLOW_NS)) {
			t_rx = t_end;
			fab.st.slow_rx_bursts++;
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
			if (unlikely(m->nb_segs != 1))
				m = linearize(m);
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


/* ---- the loop ---------------------------------------------------------- */

/* Every delivery due by now, in time order: each moves one item off its
 * channel and on to a host, a switch, or (virtual) its generator's next hop. */
static unsigned int
deliver_due(uint64_t now)
{
	unsigned int work = 0;

	while (heap_min() <= now) {
		uint16_t c = heap_top();
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
				lsf_virtual_at(to, tag, t);
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
	return work;
}

/* Send what this pass delivered to hosts, then charge each its lateness:
 * one clock read, after the packets really left. */
static void
flush_hosts(void)
{
	for (uint16_t i = 0; i < fab.n_ports; i++)
		if (ls_app_gate_open(&fab.ports[i].gate, fab.ports[i].port_id))
			rte_eth_tx_buffer_flush(fab.ports[i].port_id, 0, fab.ports[i].txb);
	if (n_sent) {
		uint64_t t = lsf_now();
		int64_t late[RTE_DIM(sent_due)];

		for (unsigned int i = 0; i < n_sent; i++)
			late[i] = (int64_t)(t - sent_due[i]);
		ls_hist_add_n(&fab.late, late, n_sent);
		n_sent = 0;
	}
}

/* A pass with nothing to do: sleep, but wake ~10 us before the next event
 * (the heap's, a generator's, a flap's or a due depth sample) and spin the
 * rest. */
static void
idle_sleep(uint64_t now, uint64_t next, uint64_t next_sample)
{
	uint64_t budget = (uint64_t)fab.idle_sleep_us * 1000;

	/* The next depth sample bounds the sleep only while it has something
	 * to record: waking every sample_ns for an idle fabric kept the loop
	 * from ever sleeping. */
	if (fab.sample_ns && next_sample < next && lsf_depths_pending(now))
		next = next_sample;
	if (next != UINT64_MAX)
		budget = next > now + 10000 ? RTE_MIN(budget, next - now - 10000) : 0;
	if (budget >= 5000) {
		struct timespec ts = {0, (long)budget};

		if (fab.qsbr != NULL)
			rte_rcu_qsbr_thread_offline(fab.qsbr, 0);
		nanosleep(&ts, NULL);
		if (fab.qsbr != NULL)
			rte_rcu_qsbr_thread_online(fab.qsbr, 0);
		fab.st.idle_sleeps++;
	}
}

/* The memif teardown guard's report (ls_gate.h), out of line: inlined
 * into the loop it cost 13% of the forwarding rate with the guard off
 * (bench_fabric, A/B), by what it did to the loop's code, not by running. */
static __rte_noinline void
guard_quiescent(void)
{
	rte_rcu_qsbr_quiescent(fab.qsbr, 0);
}

int
lsf_loop(void *arg __rte_unused)
{
	uint64_t next_sample = 0, prev_poll = 0;

	/* Wake-ups within a microsecond or two of what we ask (default slack is
	 * 50 us): the idle sleep must not make deliveries late. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	LSF_LOG(INFO, "lcore %u: %u host ports, %u channels", rte_lcore_id(), fab.n_ports,
		fab.fab->n_chans);
	if (fab.qsbr != NULL) {
		rte_rcu_qsbr_thread_register(fab.qsbr, 0);
		rte_rcu_qsbr_thread_online(fab.qsbr, 0);
	}
	while (!fab.quit) {
		uint64_t now = lsf_now(), next = UINT64_MAX;
		unsigned int work = rx_hosts();
		struct lsf_msg *msg;

		if (prev_poll != 0)
			ls_hist_add(&fab.poll_gap, (int64_t)(now - prev_poll));
		prev_poll = now;

		work += lsf_run_gens(now, &next);
		lsf_run_flaps(now, &next);
		ls_fab_tick(fab.fab, now);
		work += deliver_due(now);
		flush_hosts();
		while (rte_ring_sc_dequeue(fab.msgs, (void **)&msg) == 0)
			lsf_apply_msg(msg, now);
		if (fab.sample_ns && now >= next_sample) {
			/* at a fresh time: packets taken in this pass entered at
			 * their own (later) ingress times, and depth at the pass's
			 * start time would count the gap as queued bytes */
			lsf_sample_depths(lsf_now());
			next_sample = now + fab.sample_ns;
		}
		if (heap_min() < next)
			next = heap_min();
		if (unlikely(fab.qsbr != NULL))
			guard_quiescent();
		if (work == 0 && fab.idle_sleep_us)
			idle_sleep(now, next, next_sample);
	}
	if (fab.qsbr != NULL) {
		rte_rcu_qsbr_thread_offline(fab.qsbr, 0);
		rte_rcu_qsbr_thread_unregister(fab.qsbr, 0);
	}
	return 0;
}
