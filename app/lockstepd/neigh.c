/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour resolution: ARP (RFC 826) for IPv4 and Neighbor Discovery
 * (RFC 4861) for IPv6, just enough for an appliance on a real L2/L3
 * network or a veth: answer requests for our own addresses, resolve each
 * peer's next hop (the peer itself when on-link, else the port's gateway),
 * learn from replies and from requests addressed to us, and re-resolve
 * every LSD_RESOLVE_REFRESH_NS so a moved neighbour is picked up.
 *
 * Peers cache their next hop's MAC themselves, so the send path needs no
 * lookup; a learnt address updates every peer of the lcore behind that next
 * hop (a walk, but ARP is rare and peers per lcore are few thousand at most).
 */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "lockstepd.h"

void
lsd_peer_set_nexthop(struct lsd_peer *peer)
{
	const struct lsd_port *p = &lsd.ports[peer->port_idx];
	const struct ls_conf_port *cp = p->conf;

	peer->nexthop = peer->addr;
	if (peer->addr.family == LS_AF_INET && p->v4.addr.family &&
	    !ls_prefix_contains(&p->v4, &peer->addr) && cp->gateway4.family)
		peer->nexthop = cp->gateway4;
	if (peer->addr.family == LS_AF_INET6 && p->v6.addr.family &&
	    !ls_prefix_contains(&p->v6, &peer->addr) && cp->gateway6.family)
		peer->nexthop = cp->gateway6;
}

static void
send_frame(struct lsd_lcore *lc, struct lsd_port *p, const uint8_t *buf, int len,
	   uint64_t *counter)
{
	struct rte_mbuf *m;
	uint8_t *d;

	if (len <= 0)
		return;
	m = rte_pktmbuf_alloc(lsd.pool);
	if (m == NULL) {
		lc->st.alloc_failed++;
		return;
	}
	/* Pad to the Ethernet minimum; some PMDs do not. */
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(len < 60 ? 60 : len));
	if (d == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(d, 0, len < 60 ? 60 : (size_t)len);
	memcpy(d, buf, (size_t)len);
	if (unlikely(lsd.cap.on))
		lsd_capture_copy(lc, m, ls_clock_now(&lc->clock), true);
	lsd_tx_frames(lc, p, &m, 1, counter);
}

void
lsd_neigh_resolve(struct lsd_lcore *lc, struct lsd_peer *peer, uint64_t now_ns)
{
	struct lsd_port *p = &lsd.ports[peer->port_idx];
	uint8_t buf[128];
	int len;

	if (peer->static_mac || now_ns < peer->next_resolve_ns)
		return;
	/* While unresolved: 100, 200, 400, 800 ms, then every second. A
	 * request or its reply lost as the link comes up (a memif server's
	 * first replies can be dropped as its client connects) cost a whole
	 * second of no probes; test_metrics saw it. */
	if (peer->resolved) {
		peer->next_resolve_ns = now_ns + LSD_RESOLVE_REFRESH_NS;
	} else {
		peer->next_resolve_ns = now_ns + RTE_MIN(LSD_RESOLVE_FIRST_NS << peer->resolve_tries,
							 LSD_RESOLVE_RETRY_NS);
		if (peer->resolve_tries < 8)
			peer->resolve_tries++;
	}
	if (peer->nexthop.family == LS_AF_INET) {
		if (!p->v4.addr.family)
			return;
		len = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REQUEST, &p->mac,
				       &p->v4.addr, NULL, &peer->nexthop);
		send_frame(lc, p, buf, len, &lc->st.tx_arp);
	} else {
		const struct ls_addr *src = p->v6.addr.family ? &p->v6.addr : &p->v6_ll;

		len = ls_pkt_build_ns(buf, sizeof(buf), &p->mac, src, &peer->nexthop);
		send_frame(lc, p, buf, len, &lc->st.tx_nd);
	}
}

/* A neighbour told us its MAC: update every peer behind it. */
static void
learn(struct lsd_lcore *lc, const struct lsd_port *p, const struct ls_addr *a,
      const struct ls_mac *mac)
{
	uint16_t pidx = (uint16_t)(p - lsd.ports);

	if (mac->b[0] & 1)
		return; /* never learn a group address */
	for (uint32_t s = 0; s < lc->n_peers; s++) {
		struct lsd_peer *peer = lc->peers[s];

		if (peer->port_idx != pidx || peer->static_mac ||
		    !ls_addr_eq(&peer->nexthop, a))
			continue;
		if (!peer->resolved)
			peer->next_resolve_ns = 0; /* schedule the refresh afresh */
		peer->mac = *mac;
		peer->resolved = true;
		if (peer->next_resolve_ns == 0)
			peer->next_resolve_ns = ls_clock_now(&lc->clock) + LSD_RESOLVE_REFRESH_NS;
	}
}

void
lsd_neigh_rx_arp(struct lsd_lcore *lc, struct lsd_port *p, const struct ls_pkt_info *pi)
{
	uint8_t buf[64];
	bool for_us = p->v4.addr.family && ls_addr_eq(&pi->dst, &p->v4.addr);

	/* RFC 826: update a known sender; only learn new ones when asked. */
	if (for_us || pi->arp_op == LS_ARP_REPLY)
		learn(lc, p, &pi->src, &pi->arp_sha);
	if (for_us && pi->arp_op == LS_ARP_REQUEST) {
		int len = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REPLY, &p->mac,
					   &p->v4.addr, &pi->arp_sha, &pi->src);

		send_frame(lc, p, buf, len, &lc->st.tx_arp);
	}
}

void
lsd_neigh_rx_nd(struct lsd_lcore *lc, struct lsd_port *p, const struct ls_pkt_info *pi,
	       bool is_ns)
{
	static const uint8_t unspec[16];
	struct ls_mac dst_mac;
	struct ls_addr dst;
	uint8_t buf[128];
	int len;

	if (!is_ns) {
		/* An advertisement carries the target's own link-layer address. */
		if (pi->nd_has_lladdr)
			learn(lc, p, &pi->nd_target, &pi->nd_lladdr);
		return;
	}
	if (!lsd_port_owns(p, &pi->nd_target))
		return;
	/* A solicitation carries the soliciting node's link-layer address. */
	if (pi->nd_has_lladdr)
		learn(lc, p, &pi->src, &pi->nd_lladdr);
	dst_mac = pi->nd_has_lladdr ? pi->nd_lladdr : pi->src_mac;
	dst = pi->src;
	/* DAD probes come from :: and are answered to all-nodes. */
	if (memcmp(pi->src.a, unspec, 16) == 0) {
		static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};

		memcpy(dst.a, all_nodes, 16);
		dst_mac = (struct ls_mac){{0x33, 0x33, 0, 0, 0, 1}};
	}
	len = ls_pkt_build_na(buf, sizeof(buf), &p->mac, &pi->nd_target, &dst_mac, &dst);
	send_frame(lc, p, buf, len, &lc->st.tx_nd);
}
