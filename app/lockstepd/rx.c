/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The probe path's receive side: a vector of frames addressed to lockstepd
 * (probes to reflect, replies to our probes, ARP and ND) is timestamped,
 * classified frame by frame and answered in one stamped tx_burst. The
 * polling loop (datapath.c) hands it what a port delivered; the data path
 * (bridge.c) hands it what the fabric port delivered for lockstepd itself.
 *
 * Timestamps are taken as close to the wire as software allows: the receive
 * time is read once right after rx_burst returns (or taken from the NIC's
 * RX timestamp when the clock source is the NIC), the reflector's transmit
 * time is written into each reply immediately before tx_burst.
 *
 * Every received packet ends in exactly one enum lsd_rx_disp counter. Bad
 * packets are counted and dropped; nothing here allocates, locks or makes a
 * system call.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include "lockstepd.h"
#include "ls_stamp.h"

_Static_assert(LSD_RX_BAD_ADDR - LSD_RX_BAD_TRUNC == LS_PKT_ERR_MAX - 1,
	       "one LS_RX_BAD_* per LS_PKT_ERR_*, in the same order");

/* LS_PKT_ERR_TRUNC (-1) .. LS_PKT_ERR_ADDR (-8) -> LSD_RX_BAD_TRUNC ..
 * LSD_RX_BAD_ADDR; anything else counts as a bad address, as it always has. */
static inline enum lsd_rx_disp
bad_disp(int cls)
{
	unsigned int i = (unsigned int)(-cls - 1);

	return i < LS_PKT_ERR_MAX ? (enum lsd_rx_disp)(LSD_RX_BAD_TRUNC + i) : LSD_RX_BAD_ADDR;
}

static inline bool
l2_for_us(const struct lsd_port *p, const struct ls_pkt_info *pi)
{
	/* Broadcast and multicast both have the group bit set. */
	return (pi->dst_mac.b[0] & 1) || memcmp(pi->dst_mac.b, p->mac.b, 6) == 0;
}

/* Classify one received packet. Returns true when m became a reply to send
 * (it is then in the caller's reply vector); otherwise m is consumed.
 * Inlined into the burst loop: GCC's own choice flips with small changes
 * to its callees, and the call per frame cost the reflector 2-5%. */
static inline __attribute__((always_inline)) bool
rx_one(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m, uint64_t rx_ns)
{
	const struct ls_conf_probe *pc = &lsd.cfg.probe;
	struct ls_pkt_info pi;
	enum lsd_rx_disp d;
	bool verify = !(p->rx_cksum_offload &&
			(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) ==
			RTE_MBUF_F_RX_L4_CKSUM_GOOD);
	int cls;

	if (unlikely(m->nb_segs != 1)) {
		/* still chained: longer than any probe (lsd_mtu_linear), or
		 * no jumbo buffer was free */
		d = LSD_RX_OTHER;
		goto drop;
	}
	/* Nearly every packet a reflector sees is a plain IPv4 probe: try the
	 * fast path (lib/reflect) first; it defers anything else to the full
	 * parse below, which also counts what is wrong with a bad packet. */
	if (p->fast_ok) {
		struct ls_reflect_v4 r;

		if (ls_reflect_v4_check_l4(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
					   &p->fast, &r, !verify))
			return lsd_reflector_fast(lc, p, m, &r, rx_ns);
	}
	cls = ls_pkt_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, verify, &pi);
	if (unlikely(cls < 0)) {
		d = bad_disp(cls);
		goto drop;
	}
	if (!l2_for_us(p, &pi)) {
		d = LSD_RX_L2_OTHER;
		goto drop;
	}
	switch (cls) {
	case LS_PKT_UDP:
		if (!lsd_port_owns(p, &pi.dst)) {
			d = LSD_RX_L3_OTHER;
			break;
		}
		/* Regression (fuzz seed 8762): a forged source of our own address
		 * or our subnet's broadcast made the reflector answer itself or
		 * the whole subnet. */
		if (unlikely(lsd_port_bad_source(p, &pi.src))) {
			d = LSD_RX_BAD_ADDR;
			break;
		}
		/* A reply would go to a whole L2 group. */
		if (unlikely(pi.src_mac.b[0] & 1)) {
			d = LSD_RX_BAD_SRC_MAC;
			break;
		}
		if (pi.dport == pc->dst_port) {
			if (unlikely(ls_reflect_src_port_bad(pi.sport, pc->dst_port))) {
				d = LSD_RX_REFL_LOOP;
				break;
			}
			if (lsd_reflector_handle(lc, p, m, &pi, rx_ns))
				return true;
			return false; /* reflector counted it */
		}
		if (pi.sport == pc->dst_port) {
			lsd_sender_on_reply(lc, p, m, &pi, rx_ns);
			return false; /* sender counted and freed it */
		}
		d = LSD_RX_UDP_OTHER;
		break;
	case LS_PKT_ARP:
		lsd_neigh_rx_arp(lc, p, &pi);
		d = LSD_RX_ARP;
		break;
	case LS_PKT_ND_NS:
	case LS_PKT_ND_NA:
		lsd_neigh_rx_nd(lc, p, &pi, cls == LS_PKT_ND_NS);
		d = LSD_RX_ND;
		break;
	default:
		/* an ICMP error about one of our path-discovery probes? */
		d = lsd_route_maybe(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len) &&
		    lsd_route_rx(lc, p, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
				 rte_rdtsc()) ? LSD_RX_ROUTE : LSD_RX_OTHER;
		break;
	}
drop:
	lc->st.disp[d]++;
	rte_pktmbuf_free(m);
	return false;
}

/*
 * On a VLAN port our frames carry the port's VID: take the tag off (the
 * reply goes out with it again, tx.c) so every parser below sees plain
 * Ethernet. A PMD or NIC that stripped it already left it in the mbuf.
 * Untagged frames and other VLANs are not ours: counted and dropped.
 */
static inline bool
rx_vlan_ok(struct lsd_lcore *lc, const struct lsd_port *p, struct rte_mbuf *m)
{
	if (!(m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED) && rte_vlan_strip(m) != 0)
		goto bad;
	if ((m->vlan_tci & 0x0fff) == p->vlan)
		return true;
bad:
	lc->st.disp[LSD_RX_BAD_VLAN]++;
	rte_pktmbuf_free(m);
	return false;
}

/* ARP and ND frames the bridge shows us on their way to the host */
#define LSD_PEEK_MAX 512

static void stamp_and_send(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf **reply,
			   uint16_t n_reply, bool cap);

__attribute__((hot)) void
lsd_rx_vector(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf **rx, uint16_t n,
	      uint64_t tsc)
{
	struct rte_mbuf *reply[LSD_BURST];
	uint16_t i, n_reply = 0;
	uint64_t burst_ns = ls_clock_from_tsc(&lc->clock, tsc);
	bool cap = lsd.cap.on;
	bool hw_ts = lc->clock.kind == LS_CLOCK_NIC || lc->clock.kstamp_ports != 0 ||
		     lc->clock.rx_trailer;

	lc->st.rx_pkts += n;
	lc->st.rx_bursts++;
	for (i = 0; i < n && i < 4; i++)
		rte_prefetch0(rte_pktmbuf_mtod(rx[i], void *));
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		/* Software clocks stamp the whole burst once; the NIC (or the
		 * kernel, or the lab emulator's trailer) stamps each. */
		uint64_t rx_ns = hw_ts ? ls_clock_rx_ts(&lc->clock, m, burst_ns) : burst_ns;

		if (i + 4 < n)
			rte_prefetch0(rte_pktmbuf_mtod(rx[i + 4], void *));
		if (unlikely(cap))
			lsd_capture_copy(lc, m, rx_ns, false);
		if (p->vlan != 0 && !rx_vlan_ok(lc, p, m))
			continue;
		/* a jumbo frame (path.mtu's probes and replies) arrives chained */
		if (unlikely(m->nb_segs != 1))
			m = lsd_mtu_linear(lc, m);
		if (rx_one(lc, p, m, rx_ns))
			reply[n_reply++] = m;
	}
	if (n_reply == 0)
		return;

	/*
	 * A driver that sends each frame with its own syscall (net_pcap) puts
	 * tens of microseconds between a burst's first and last frame: stamp
	 * and send one at a time there, or T3 would be early by that much
	 * for all but the first reply (the reverse delay would absorb it and
	 * bias clock sync by half of it).
	 */
	if (p->tx_per_packet && n_reply > 1) {
		for (i = 0; i < n_reply; i++)
			stamp_and_send(lc, p, &reply[i], 1, cap);
		return;
	}
	stamp_and_send(lc, p, reply, n_reply, cap);
}

void
lsd_rx_peek(struct lsd_lcore *lc, struct lsd_port *p, const struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len;
	uint8_t plain[LSD_PEEK_MAX];
	struct ls_pkt_info pi;
	int cls;

	/* the frame goes on to the host whole: read a copy without our tag */
	if (p->vlan != 0) {
		if (len < 18 || len - 4 > sizeof(plain) || ls_get_be16(f + 12) != 0x8100 ||
		    (ls_get_be16(f + 14) & 0x0fff) != p->vlan)
			return;
		memcpy(plain, f, 12);
		memcpy(plain + 12, f + 16, len - 16);
		f = plain;
		len -= 4;
	}
	cls = ls_pkt_parse(f, len, true, &pi);

	if (cls == LS_PKT_ARP)
		lsd_neigh_rx_arp(lc, p, &pi);
	else if (cls == LS_PKT_ND_NS || cls == LS_PKT_ND_NA)
		lsd_neigh_rx_nd(lc, p, &pi, cls == LS_PKT_ND_NS);
}

/* Stamp T3 as late as we can, right before the frames go out, and send. */
static void
stamp_and_send(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf **reply,
	       uint16_t n_reply, bool cap)
{
	uint64_t tsc = rte_rdtsc();
	uint16_t i;

	{
		uint64_t at_ns;
		uint64_t tx_ns = ls_clock_tx_ts(&lc->clock, tsc, p->port_id, &at_ns);
		/* once per burst: the frames' stores may alias lsd's fields */
		const uint64_t t3 = ls_reflect_ts(tx_ns, lsd.refl_ptp);
		const uint16_t ee = lsd.refl_ee;

		for (i = 0; i < n_reply; i++) {
			struct rte_mbuf *m = reply[i];
			uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
			uint8_t fam = m->packet_type == RTE_PTYPE_L3_IPV6 ? LS_AF_INET6 : LS_AF_INET;

			if (m->hash.usr == LSD_REPLY_FAST) {
				ls_reflect_v4_put_t3_ts(f, t3);
			} else {
				ls_stamp_put_tx_ts(f + m->hash.usr, tx_ns, ee);
				ls_pkt_udp_finalize(f, m->data_len, fam);
			}
			if (unlikely(cap))
				lsd_capture_copy(lc, m, tx_ns, true);
			if (at_ns != 0)
				lsd_tx_at(lc, p, m, at_ns);
		}
	}
	lsd_tx_frames(lc, p, reply, n_reply, &lc->st.tx_replies);
}

