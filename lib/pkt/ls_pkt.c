/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet formats for lockstep: turn received Ethernet frames into a
 * classified struct ls_pkt_info, and build the few frames we send (UDP
 * probes and replies, ARP, IPv6 Neighbor Discovery).
 *
 * Why it looks like this:
 *
 * - Flat byte buffers, not mbufs. The same parser runs in the data path, in
 *   the pcap tools and under a fuzzer, so it must not depend on the EAL or on
 *   mbuf segmentation. Received probes are small and the daemon hands us the
 *   first (only) segment.
 *
 * - Every read is preceded by a bounds check against the frame length and
 *   every length field is treated as hostile. The "avail" variables below
 *   always hold how many bytes are really left; a claimed length is only used
 *   after it has been compared with them. The parse functions never write
 *   outside *pi and never read past frame + len.
 *
 * - DPDK's IP/UDP/ICMP header structs are __rte_packed, so casting any byte
 *   offset to them is fine. The Ethernet and ARP structs are declared 2-byte
 *   aligned, so those are accessed through memcpy at offsetof() positions
 *   instead: a fuzzer or a pcap reader may hand us an odd address.
 *
 * - A UDP datagram must fill its IP payload exactly. Replies are made by
 *   turning the received frame around, and the checksum helpers take the L4
 *   length from the IP header; accepting a UDP length shorter than the IP
 *   payload would produce replies whose checksum covers the wrong bytes.
 *   Real senders never produce such datagrams, so we reject them.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_udp.h>

#include "ls_pkt.h"

uint16_t
ls_pkt_cksum_raw(const void *buf, size_t len)
{
	return ls_csum_fold(ls_csum_bytes(buf, len, 0));
}

/* Pseudo-header + L4 sum; 0xffff when a received checksum is right. */
static inline uint16_t
l4_sum4(const struct rte_ipv4_hdr *ip, const void *l4, uint32_t l4_len)
{
	uint64_t sum = ls_csum_bytes(&ip->src_addr, 8, 0);

	sum = ls_csum_add(sum, rte_cpu_to_be_16((uint16_t)ip->next_proto_id));
	sum = ls_csum_add(sum, rte_cpu_to_be_16((uint16_t)l4_len));
	return ls_csum_fold(ls_csum_bytes(l4, l4_len, sum));
}

static inline uint16_t
l4_sum6(const struct rte_ipv6_hdr *ip, const void *l4, uint32_t l4_len)
{
	uint64_t sum = ls_csum_bytes(ip->src_addr, 32, 0);

	sum = ls_csum_add(sum, rte_cpu_to_be_32(l4_len));
	sum = ls_csum_add(sum, rte_cpu_to_be_32((uint32_t)ip->proto));
	return ls_csum_fold(ls_csum_bytes(l4, l4_len, sum));
}

/* A checksum to write: complement, and 0 becomes 0xffff for UDP (RFC 768). */
static inline uint16_t
udp_cksum_value(uint16_t sum)
{
	uint16_t ck = (uint16_t)~sum;

	return ck == 0 ? 0xffff : ck;
}

#define ETH_HLEN	((uint32_t)sizeof(struct rte_ether_hdr))
#define IPV4_HLEN	((uint32_t)sizeof(struct rte_ipv4_hdr))
#define IPV6_HLEN	((uint32_t)sizeof(struct rte_ipv6_hdr))
#define UDP_HLEN	((uint32_t)sizeof(struct rte_udp_hdr))
#define ARP_LEN		((uint32_t)sizeof(struct rte_arp_hdr))

/* ICMPv6 types and ND option types (RFC 4861); DPDK 22.11 has no names. */
#define ICMP6_ND_NS		135
#define ICMP6_ND_NA		136
#define ND_OPT_SLLA		1
#define ND_OPT_TLLA		2
/* NS/NA body: ICMPv6 type/code/cksum (4), reserved or flags (4), target (16) */
#define ND_BODY_LEN		24
#define ND_OPT_LL_LEN		8
#define ND_NA_FLAG_S		0x40000000u
#define ND_NA_FLAG_O		0x20000000u

/* Tagged EtherTypes we refuse until VLAN support exists. 0x9100 is the old
 * pre-802.1ad QinQ value that some switches still emit.
 */
#define ETHER_TYPE_QINQ_OLD	0x9100

static const char *const ls_pkt_ok_names[] = {
	[LS_PKT_UDP] = "udp",
	[LS_PKT_ARP] = "arp",
	[LS_PKT_ND_NS] = "nd_ns",
	[LS_PKT_ND_NA] = "nd_na",
	[LS_PKT_OTHER] = "other",
};

static const char *const ls_pkt_err_names[] = {
	[-LS_PKT_ERR_TRUNC] = "trunc",
	[-LS_PKT_ERR_L3] = "l3",
	[-LS_PKT_ERR_CSUM] = "csum",
	[-LS_PKT_ERR_FRAG] = "frag",
	[-LS_PKT_ERR_ARP] = "arp_bad",
	[-LS_PKT_ERR_ND] = "nd_bad",
	[-LS_PKT_ERR_VLAN] = "vlan",
	[-LS_PKT_ERR_ADDR] = "addr",
};

const char *
ls_pkt_class_name(int cls)
{
	if (cls > 0 && cls < (int)LS_ARRAY_SIZE(ls_pkt_ok_names) &&
	    ls_pkt_ok_names[cls] != NULL)
		return ls_pkt_ok_names[cls];
	if (cls < 0 && -cls < (int)LS_ARRAY_SIZE(ls_pkt_err_names) &&
	    ls_pkt_err_names[-cls] != NULL)
		return ls_pkt_err_names[-cls];
	return "unknown";
}

static inline bool
mac_is_group(const uint8_t *m)
{
	/* The I/G bit covers both multicast and broadcast. */
	return (m[0] & 0x01) != 0;
}

static bool
ipv4_src_bad(const uint8_t *a)
{
	/* 0/8, 127/8 loopback, 224/4 multicast, 240/4 incl. broadcast: none
	 * of them can be answered, and a reply to them could amplify or loop
	 * back to us (ls_addr_v4_martian, shared with lib/reflect).
	 */
	return ls_addr_v4_martian((uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 |
				  (uint32_t)a[2] << 8 | a[3]);
}

static bool
ipv6_is_unspec(const uint8_t *a)
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

/* ::1 would have us answer ourselves. */
static bool
ipv6_is_loopback(const uint8_t *a)
{
	static const uint8_t lo[16] = {[15] = 1};

	return memcmp(a, lo, 16) == 0;
}

static void
put_addr(struct ls_addr *out, uint8_t family, const void *bytes)
{
	memset(out, 0, sizeof(*out));
	out->family = family;
	memcpy(out->a, bytes, family == LS_AF_INET ? 4 : 16);
}

/* Ports, payload offsets and the "UDP fills its IP payload" rule shared by
 * both IP versions. ip_plen is already known to fit in the frame.
 */
static int
parse_udp(const uint8_t *frame, uint32_t l4_off, uint32_t ip_plen,
	  struct ls_pkt_info *pi)
{
	const struct rte_udp_hdr *uh;
	uint16_t ulen;

	if (ip_plen < UDP_HLEN)
		return LS_PKT_ERR_TRUNC;
	uh = (const struct rte_udp_hdr *)(frame + l4_off);
	ulen = rte_be_to_cpu_16(uh->dgram_len);
	if (ulen > ip_plen)
		return LS_PKT_ERR_TRUNC;
	if (ulen != ip_plen)
		return LS_PKT_ERR_L3;
	pi->l4_off = (uint16_t)l4_off;
	pi->sport = rte_be_to_cpu_16(uh->src_port);
	pi->dport = rte_be_to_cpu_16(uh->dst_port);
	pi->payload_off = (uint16_t)(l4_off + UDP_HLEN);
	pi->payload_len = (uint16_t)(ulen - UDP_HLEN);
	return LS_PKT_UDP;
}

static int
parse_ipv4(const uint8_t *frame, uint32_t len, bool verify_l4,
	   struct ls_pkt_info *pi)
{
	const struct rte_ipv4_hdr *ip;
	uint32_t avail = len - ETH_HLEN;
	uint32_t hlen, tlen;
	uint16_t frag;
	int rc;

	if (avail < IPV4_HLEN)
		return LS_PKT_ERR_TRUNC;
	ip = (const struct rte_ipv4_hdr *)(frame + ETH_HLEN);
	if ((ip->version_ihl >> 4) != 4)
		return LS_PKT_ERR_L3;
	hlen = (uint32_t)(ip->version_ihl & RTE_IPV4_HDR_IHL_MASK) *
		RTE_IPV4_IHL_MULTIPLIER;
	if (hlen < IPV4_HLEN)
		return LS_PKT_ERR_L3;
	if (hlen > avail)
		return LS_PKT_ERR_TRUNC;
	tlen = rte_be_to_cpu_16(ip->total_length);
	if (tlen < hlen)
		return LS_PKT_ERR_L3;
	if (tlen > avail)
		return LS_PKT_ERR_TRUNC;
	/* Always checked, NIC offload or not: a corrupt header could steer
	 * the reply anywhere, and 20 bytes cost nothing.
	 */
	if (ls_pkt_cksum_raw(ip, hlen) != 0xffff)
		return LS_PKT_ERR_CSUM;

	pi->ttl = ip->time_to_live;
	pi->tos = ip->type_of_service;
	pi->flow_label = 0;
	put_addr(&pi->src, LS_AF_INET, &ip->src_addr);
	put_addr(&pi->dst, LS_AF_INET, &ip->dst_addr);

	frag = rte_be_to_cpu_16(ip->fragment_offset);
	if (frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return LS_PKT_ERR_FRAG;
	pi->l4_off = (uint16_t)(ETH_HLEN + hlen);
	if (ip->next_proto_id != IPPROTO_UDP)
		return LS_PKT_OTHER;

	rc = parse_udp(frame, ETH_HLEN + hlen, tlen - hlen, pi);
	if (rc < 0)
		return rc;
	if (ipv4_src_bad(pi->src.a))
		return LS_PKT_ERR_ADDR;
	/* A zero UDP checksum means the sender did not compute one (RFC 768). */
	if (verify_l4 && ((const struct rte_udp_hdr *)
			  (frame + pi->l4_off))->dgram_cksum != 0 &&
	    l4_sum4(ip, frame + pi->l4_off, tlen - hlen) != 0xffff)
		return LS_PKT_ERR_CSUM;
	return LS_PKT_UDP;
}

/* Neighbor Solicitation / Advertisement (RFC 4861 sections 7.1.1, 7.1.2). */
static int
parse_nd(const uint8_t *frame, const struct rte_ipv6_hdr *ip, uint32_t l4_off,
	 uint32_t plen, struct ls_pkt_info *pi)
{
	const uint8_t *icmp = frame + l4_off;
	uint8_t type = icmp[0];
	uint8_t want_opt = type == ICMP6_ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	uint32_t off;

	if (plen < ND_BODY_LEN)
		return LS_PKT_ERR_TRUNC;
	/* Hop limit 255 proves the packet was not forwarded by a router. */
	if (ip->hop_limits != 255 || icmp[1] != 0)
		return LS_PKT_ERR_ND;
	if (rte_ipv6_udptcp_cksum_verify(ip, icmp) != 0)
		return LS_PKT_ERR_CSUM;
	put_addr(&pi->nd_target, LS_AF_INET6, icmp + 8);
	if (pi->nd_target.a[0] == 0xff)
		return LS_PKT_ERR_ND;

	for (off = ND_BODY_LEN; off < plen;) {
		uint32_t olen;

		if (plen - off < 2)
			return LS_PKT_ERR_ND;
		olen = (uint32_t)icmp[off + 1] * 8;
		if (olen == 0 || olen > plen - off)
			return LS_PKT_ERR_ND;
		if (icmp[off] == want_opt && olen == ND_OPT_LL_LEN) {
			memcpy(pi->nd_lladdr.b, icmp + off + 2, 6);
			pi->nd_has_lladdr = true;
		}
		off += olen;
	}
	return type == ICMP6_ND_NS ? LS_PKT_ND_NS : LS_PKT_ND_NA;
}

static int
parse_ipv6(const uint8_t *frame, uint32_t len, bool verify_l4,
	   struct ls_pkt_info *pi)
{
	const struct rte_ipv6_hdr *ip;
	uint32_t avail = len - ETH_HLEN;
	uint32_t vtc, plen, l4_off = ETH_HLEN + IPV6_HLEN;
	int rc;

	if (avail < IPV6_HLEN)
		return LS_PKT_ERR_TRUNC;
	ip = (const struct rte_ipv6_hdr *)(frame + ETH_HLEN);
	vtc = rte_be_to_cpu_32(ip->vtc_flow);
	if ((vtc >> 28) != 6)
		return LS_PKT_ERR_L3;
	plen = rte_be_to_cpu_16(ip->payload_len);
	if (plen > avail - IPV6_HLEN)
		return LS_PKT_ERR_TRUNC;

	pi->ttl = ip->hop_limits;
	pi->tos = (uint8_t)((vtc & RTE_IPV6_HDR_TC_MASK) >> RTE_IPV6_HDR_TC_SHIFT);
	pi->flow_label = vtc & RTE_IPV6_HDR_FL_MASK;
	put_addr(&pi->src, LS_AF_INET6, ip->src_addr);
	put_addr(&pi->dst, LS_AF_INET6, ip->dst_addr);
	pi->l4_off = (uint16_t)l4_off;

	if (ip->proto == IPPROTO_ICMPV6) {
		if (plen < 4)
			return LS_PKT_ERR_TRUNC;
		if (frame[l4_off] == ICMP6_ND_NS || frame[l4_off] == ICMP6_ND_NA)
			return parse_nd(frame, ip, l4_off, plen, pi);
		return LS_PKT_OTHER;
	}
	/* Extension headers (fragments included) never carry our probes. */
	if (ip->proto != IPPROTO_UDP)
		return LS_PKT_OTHER;

	rc = parse_udp(frame, l4_off, plen, pi);
	if (rc < 0)
		return rc;
	if (ip->src_addr[0] == 0xff || ipv6_is_unspec(ip->src_addr) ||
	    ipv6_is_loopback(ip->src_addr))
		return LS_PKT_ERR_ADDR;
	/* RFC 8200 section 8.1: a zero UDP checksum is not allowed on IPv6. */
	if (verify_l4 &&
	    (((const struct rte_udp_hdr *)(frame + l4_off))->dgram_cksum == 0 ||
	     l4_sum6(ip, frame + l4_off, plen) != 0xffff))
		return LS_PKT_ERR_CSUM;
	return LS_PKT_UDP;
}

/* RFC 826 for Ethernet/IPv4 only; ARP for anything else is not ours. */
static int
parse_arp(const uint8_t *frame, uint32_t len, struct ls_pkt_info *pi)
{
	const uint8_t *a = frame + ETH_HLEN;
	const uint8_t *d = a + offsetof(struct rte_arp_hdr, arp_data);

	if (len - ETH_HLEN < ARP_LEN)
		return LS_PKT_ERR_TRUNC;
	if (ls_get_be16(a + offsetof(struct rte_arp_hdr, arp_hardware)) !=
		RTE_ARP_HRD_ETHER ||
	    ls_get_be16(a + offsetof(struct rte_arp_hdr, arp_protocol)) !=
		RTE_ETHER_TYPE_IPV4 ||
	    a[offsetof(struct rte_arp_hdr, arp_hlen)] != RTE_ETHER_ADDR_LEN ||
	    a[offsetof(struct rte_arp_hdr, arp_plen)] != 4)
		return LS_PKT_ERR_ARP;
	pi->arp_op = ls_get_be16(a + offsetof(struct rte_arp_hdr, arp_opcode));
	memcpy(pi->arp_sha.b, d + offsetof(struct rte_arp_ipv4, arp_sha), 6);
	put_addr(&pi->src, LS_AF_INET, d + offsetof(struct rte_arp_ipv4, arp_sip));
	put_addr(&pi->dst, LS_AF_INET, d + offsetof(struct rte_arp_ipv4, arp_tip));
	pi->l3_off = (uint16_t)ETH_HLEN;
	if (pi->arp_op != LS_ARP_REQUEST && pi->arp_op != LS_ARP_REPLY)
		return LS_PKT_ERR_ARP;
	/* A group sender MAC would poison the neighbor table. */
	if (mac_is_group(pi->arp_sha.b))
		return LS_PKT_ERR_ARP;
	return LS_PKT_ARP;
}

int
ls_pkt_parse(const uint8_t *frame, uint32_t len, bool verify_l4,
	     struct ls_pkt_info *pi)
{
	/* Not memset: GCC turns a 100-byte memset into rep stos, whose start-up
	 * cost was a third of parsing a probe; a copy from a constant becomes a
	 * few vector moves. */
	static const struct ls_pkt_info zero;

	*pi = zero;
	if (frame == NULL || len < ETH_HLEN)
		return LS_PKT_ERR_TRUNC;
	memcpy(pi->dst_mac.b, frame + offsetof(struct rte_ether_hdr, dst_addr), 6);
	memcpy(pi->src_mac.b, frame + offsetof(struct rte_ether_hdr, src_addr), 6);
	pi->ether_type = ls_get_be16(frame + offsetof(struct rte_ether_hdr, ether_type));
	pi->l3_off = (uint16_t)ETH_HLEN;

	switch (pi->ether_type) {
	case RTE_ETHER_TYPE_IPV4:
		return parse_ipv4(frame, len, verify_l4, pi);
	case RTE_ETHER_TYPE_IPV6:
		return parse_ipv6(frame, len, verify_l4, pi);
	case RTE_ETHER_TYPE_ARP:
		return parse_arp(frame, len, pi);
	case RTE_ETHER_TYPE_VLAN:
	case RTE_ETHER_TYPE_QINQ:
	case ETHER_TYPE_QINQ_OLD:
		return LS_PKT_ERR_VLAN;
	default:
		return LS_PKT_OTHER;
	}
}

uint16_t
ls_pkt_udp_hdr_len(uint8_t family)
{
	return (uint16_t)(ETH_HLEN + (family == LS_AF_INET6 ? IPV6_HLEN : IPV4_HLEN) +
			  UDP_HLEN);
}

static void
put_eth(uint8_t *buf, const uint8_t *dst, const uint8_t *src, uint16_t type)
{
	memcpy(buf + offsetof(struct rte_ether_hdr, dst_addr), dst, 6);
	memcpy(buf + offsetof(struct rte_ether_hdr, src_addr), src, 6);
	ls_put_be16(buf + offsetof(struct rte_ether_hdr, ether_type), type);
}

static void
put_ipv6(uint8_t *buf, uint8_t tc, uint32_t flow, uint16_t plen, uint8_t proto,
	 uint8_t hops, const uint8_t *src, const uint8_t *dst)
{
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)buf;

	ip->vtc_flow = rte_cpu_to_be_32(6u << 28 |
					(uint32_t)tc << RTE_IPV6_HDR_TC_SHIFT |
					(flow & RTE_IPV6_HDR_FL_MASK));
	ip->payload_len = rte_cpu_to_be_16(plen);
	ip->proto = proto;
	ip->hop_limits = hops;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, dst, 16);
}

int
ls_pkt_build_udp(uint8_t *buf, uint32_t cap, const struct ls_pkt_udp_hdr *h,
		 const void *payload, uint16_t payload_len)
{
	uint8_t fam = h->src.family;
	uint32_t hlen, l4_len = UDP_HLEN + (uint32_t)payload_len;
	struct rte_udp_hdr *uh;

	if ((fam != LS_AF_INET && fam != LS_AF_INET6) || h->dst.family != fam)
		return -EINVAL;
	hlen = ls_pkt_udp_hdr_len(fam);
	/* The IPv4 total length must also fit in 16 bits. */
	if (l4_len + (fam == LS_AF_INET ? IPV4_HLEN : 0) > UINT16_MAX)
		return -EINVAL;
	if (cap < hlen || cap - hlen < payload_len)
		return -ENOSPC;

	/* memmove: callers may have written the payload in place already. */
	if (payload_len > 0 && payload != NULL)
		memmove(buf + hlen, payload, payload_len);

	if (fam == LS_AF_INET) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(buf + ETH_HLEN);

		put_eth(buf, h->dst_mac.b, h->src_mac.b, RTE_ETHER_TYPE_IPV4);
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->type_of_service = h->tos;
		ip->total_length = rte_cpu_to_be_16((uint16_t)(IPV4_HLEN + l4_len));
		/* DF set, so the ID is unused (RFC 6864) and may stay 0. */
		ip->packet_id = 0;
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = h->ttl;
		ip->next_proto_id = IPPROTO_UDP;
		ip->hdr_checksum = 0;
		memcpy(&ip->src_addr, h->src.a, 4);
		memcpy(&ip->dst_addr, h->dst.a, 4);
	} else {
		put_eth(buf, h->dst_mac.b, h->src_mac.b, RTE_ETHER_TYPE_IPV6);
		put_ipv6(buf + ETH_HLEN, h->tos, h->flow_label, (uint16_t)l4_len,
			 IPPROTO_UDP, h->ttl, h->src.a, h->dst.a);
	}
	uh = (struct rte_udp_hdr *)(buf + hlen - UDP_HLEN);
	uh->src_port = rte_cpu_to_be_16(h->sport);
	uh->dst_port = rte_cpu_to_be_16(h->dport);
	uh->dgram_len = rte_cpu_to_be_16((uint16_t)l4_len);
	ls_pkt_udp_finalize(buf, hlen + payload_len, fam);
	return (int)(hlen + payload_len);
}

void
ls_pkt_udp_finalize(uint8_t *frame, uint32_t len, uint8_t family)
{
	struct rte_udp_hdr *uh;

	/* The frame may be a turned-around received one (IPv4 options, our
	 * caller's len including padding), so re-derive and re-check offsets.
	 */
	if (family == LS_AF_INET) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + ETH_HLEN);
		uint32_t hlen, tlen;

		if (len < ETH_HLEN + IPV4_HLEN)
			return;
		hlen = (uint32_t)(ip->version_ihl & RTE_IPV4_HDR_IHL_MASK) *
			RTE_IPV4_IHL_MULTIPLIER;
		tlen = rte_be_to_cpu_16(ip->total_length);
		if (hlen < IPV4_HLEN || tlen < hlen + UDP_HLEN ||
		    tlen > len - ETH_HLEN)
			return;
		/* Sum over the old checksum fields and take them back out rather
		 * than zeroing them first: a 2-byte store read back at once by
		 * the wide loads of the sum stalls on store forwarding, which cost
		 * more than the sums themselves. */
		ip->hdr_checksum = (uint16_t)~ls_csum_fold(ls_csum_add(
			ls_csum_bytes(ip, hlen, 0), (uint16_t)~ip->hdr_checksum));
		uh = (struct rte_udp_hdr *)(frame + ETH_HLEN + hlen);
		uh->dgram_cksum = udp_cksum_value(ls_csum_fold(ls_csum_add(
			l4_sum4(ip, uh, tlen - hlen), (uint16_t)~uh->dgram_cksum)));
	} else if (family == LS_AF_INET6) {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(frame + ETH_HLEN);

		if (len < ETH_HLEN + IPV6_HLEN + UDP_HLEN ||
		    rte_be_to_cpu_16(ip->payload_len) < UDP_HLEN ||
		    rte_be_to_cpu_16(ip->payload_len) > len - ETH_HLEN - IPV6_HLEN)
			return;
		uh = (struct rte_udp_hdr *)(frame + ETH_HLEN + IPV6_HLEN);
		uh->dgram_cksum = udp_cksum_value(ls_csum_fold(ls_csum_add(
			l4_sum6(ip, uh, rte_be_to_cpu_16(ip->payload_len)),
			(uint16_t)~uh->dgram_cksum)));
	}
}

void
ls_pkt_udp_turnaround(uint8_t *frame, const struct ls_pkt_info *pi,
		      const struct ls_mac *our_mac, uint8_t ttl)
{
	struct rte_udp_hdr *uh = (struct rte_udp_hdr *)(frame + pi->l4_off);
	uint16_t port;

	put_eth(frame, pi->src_mac.b, our_mac->b, pi->ether_type);
	if (pi->src.family == LS_AF_INET) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + pi->l3_off);

		memcpy(&ip->src_addr, pi->dst.a, 4);
		memcpy(&ip->dst_addr, pi->src.a, 4);
		ip->time_to_live = ttl;
	} else {
		struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(frame + pi->l3_off);

		memcpy(ip->src_addr, pi->dst.a, 16);
		memcpy(ip->dst_addr, pi->src.a, 16);
		ip->hop_limits = ttl;
	}
	port = uh->src_port;
	uh->src_port = uh->dst_port;
	uh->dst_port = port;
}

int
ls_pkt_build_arp(uint8_t *buf, uint32_t cap, uint16_t op,
		 const struct ls_mac *sha, const struct ls_addr *spa,
		 const struct ls_mac *tha, const struct ls_addr *tpa)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6];
	uint8_t *a = buf + ETH_HLEN;
	uint8_t *d = a + offsetof(struct rte_arp_hdr, arp_data);

	if (cap < ETH_HLEN + ARP_LEN)
		return -ENOSPC;
	if (spa->family != LS_AF_INET || tpa->family != LS_AF_INET)
		return -EINVAL;
	put_eth(buf, tha != NULL ? tha->b : bcast, sha->b, RTE_ETHER_TYPE_ARP);
	ls_put_be16(a + offsetof(struct rte_arp_hdr, arp_hardware), RTE_ARP_HRD_ETHER);
	ls_put_be16(a + offsetof(struct rte_arp_hdr, arp_protocol), RTE_ETHER_TYPE_IPV4);
	a[offsetof(struct rte_arp_hdr, arp_hlen)] = RTE_ETHER_ADDR_LEN;
	a[offsetof(struct rte_arp_hdr, arp_plen)] = 4;
	ls_put_be16(a + offsetof(struct rte_arp_hdr, arp_opcode), op);
	memcpy(d + offsetof(struct rte_arp_ipv4, arp_sha), sha->b, 6);
	memcpy(d + offsetof(struct rte_arp_ipv4, arp_sip), spa->a, 4);
	memcpy(d + offsetof(struct rte_arp_ipv4, arp_tha),
	       tha != NULL ? tha->b : zero, 6);
	memcpy(d + offsetof(struct rte_arp_ipv4, arp_tip), tpa->a, 4);
	return (int)(ETH_HLEN + ARP_LEN);
}

/* ICMPv6 NS/NA with one link-layer option; the checksum covers the IPv6
 * pseudo header, which DPDK's UDP/TCP helper computes from ip->proto, so it
 * serves ICMPv6 as well.
 */
static int
build_nd(uint8_t *buf, uint32_t cap, uint8_t type, uint32_t flags,
	 const uint8_t *eth_dst, const uint8_t *eth_src, const uint8_t *ip_src,
	 const uint8_t *ip_dst, const uint8_t *target, const uint8_t *lladdr)
{
	uint32_t plen = ND_BODY_LEN + (lladdr != NULL ? ND_OPT_LL_LEN : 0);
	uint8_t *icmp = buf + ETH_HLEN + IPV6_HLEN;
	uint16_t ck;

	if (cap < ETH_HLEN + IPV6_HLEN + plen)
		return -ENOSPC;
	put_eth(buf, eth_dst, eth_src, RTE_ETHER_TYPE_IPV6);
	put_ipv6(buf + ETH_HLEN, 0, 0, (uint16_t)plen, IPPROTO_ICMPV6, 255,
		 ip_src, ip_dst);
	memset(icmp, 0, plen);
	icmp[0] = type;
	flags = rte_cpu_to_be_32(flags);
	memcpy(icmp + 4, &flags, 4);
	memcpy(icmp + 8, target, 16);
	if (lladdr != NULL) {
		icmp[ND_BODY_LEN] = type == ICMP6_ND_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
		icmp[ND_BODY_LEN + 1] = 1;
		memcpy(icmp + ND_BODY_LEN + 2, lladdr, 6);
	}
	ck = rte_ipv6_udptcp_cksum((const struct rte_ipv6_hdr *)(buf + ETH_HLEN),
				   icmp);
	memcpy(icmp + 2, &ck, 2);
	return (int)(ETH_HLEN + IPV6_HLEN + plen);
}

int
ls_pkt_build_ns(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
		const struct ls_addr *src, const struct ls_addr *target)
{
	uint8_t mac[6] = { 0x33, 0x33, 0xff };
	uint8_t snm[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	if (src->family != LS_AF_INET6 || target->family != LS_AF_INET6)
		return -EINVAL;
	memcpy(mac + 3, target->a + 13, 3);
	memcpy(snm + 13, target->a + 13, 3);
	/* RFC 4861 7.2.2: no source link-layer option during DAD (src ::). */
	return build_nd(buf, cap, ICMP6_ND_NS, 0, mac, src_mac->b, src->a, snm,
			target->a, ipv6_is_unspec(src->a) ? NULL : src_mac->b);
}

int
ls_pkt_build_na(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
		const struct ls_addr *target, const struct ls_mac *dst_mac,
		const struct ls_addr *dst)
{
	uint32_t flags = ND_NA_FLAG_S | ND_NA_FLAG_O;

	if (target->family != LS_AF_INET6 || dst->family != LS_AF_INET6)
		return -EINVAL;
	/* An answer to a DAD probe goes to all-nodes and must not claim to be
	 * solicited (RFC 4861 section 7.2.4).
	 */
	if (dst->a[0] == 0xff)
		flags &= ~ND_NA_FLAG_S;
	return build_nd(buf, cap, ICMP6_ND_NA, flags, dst_mac->b, src_mac->b,
			target->a, dst->a, target->a, src_mac->b);
}

/* ---- for switches (the lab fabric) ---------------------------------- */

#define ICMP_HLEN		8u	/* type, code, checksum, 4 unused bytes */
#define ICMP4_TIME_EXCEEDED	11
#define ICMP6_TIME_EXCEEDED	3
/* RFC 1812 4.3.2.3 caps an ICMPv4 error at 576 bytes of IP datagram and
 * RFC 4443 2.4(c) an ICMPv6 error at the IPv6 minimum MTU, 1280: whatever
 * of the original does not fit after our own headers is left out.
 */
#define TE4_QUOTE_MAX		(576u - IPV4_HLEN - ICMP_HLEN)
#define TE6_QUOTE_MAX		(1280u - IPV6_HLEN - ICMP_HLEN)

/*
 * Incremental update of the 16-bit checksum at ck after the 16-bit word it
 * covers changed from old to new (both host order, as read with rd16).
 * RFC 1624 eqn 3, HC' = ~(~HC + ~m + m'), rather than eqn 2 of RFC 1141,
 * which can produce -0 (0xffff) where a full recomputation gives +0. A
 * switch rewrites TTL/ECN on every forwarded packet, so summing 20 header
 * bytes again each time would be wasted work.
 */
static inline void
csum_replace16(uint8_t *ck, uint16_t old, uint16_t new)
{
	uint32_t sum = (uint32_t)(uint16_t)~ls_get_be16(ck) + (uint16_t)~old + new;

	/* At most 3 * 0xffff: two folds always bring it into 16 bits. */
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ls_put_be16(ck, (uint16_t)~sum);
}

uint8_t
ls_pkt_ttl_dec(uint8_t *l3, uint8_t family)
{
	if (family == LS_AF_INET6) {
		if (l3[7] != 0)
			l3[7]--;
		return l3[7];
	}
	if (family != LS_AF_INET)
		return 0;
	/* A TTL of 0 must never wrap to 255 and live on. */
	if (l3[8] == 0)
		return 0;
	return ls_pkt_ttl_dec4(l3);
}

bool
ls_pkt_set_ce(uint8_t *l3, uint8_t family)
{
	uint16_t old;

	if (family == LS_AF_INET6) {
		/* The traffic class straddles bytes 0 and 1 (after the version
		 * nibble); its ECN bits are bits 5:4 of byte 1, the bits below
		 * them are the top of the flow label and must not change.
		 */
		if ((l3[1] & 0x30) == 0)
			return false;
		l3[1] |= 0x30;
		return true;
	}
	if (family != LS_AF_INET)
		return false;
	/* RFC 3168 section 5: Not-ECT packets are dropped, not marked. */
	if ((l3[1] & LS_ECN_MASK) == LS_ECN_NOT_ECT)
		return false;
	if ((l3[1] & LS_ECN_MASK) == LS_ECN_CE)
		return true;
	/* TOS is the low byte of the word that starts with version/IHL. */
	old = ls_get_be16(l3);
	l3[1] |= LS_ECN_CE;
	csum_replace16(l3 + 10, old, ls_get_be16(l3));
	return true;
}

/*
 * Both builders read everything they need from the original before writing,
 * and move the quote before writing any header: the original may live in
 * buf itself (a switch answering from the very mbuf that expired), where
 * the headers we write overlap the bytes being quoted.
 */

/*
 * Move the quote behind the ICMP header: the original datagram (no more than
 * its header says, dgram_len) up to qmax bytes. Its length or -ENOSPC.
 */
static int
te_quote(uint8_t *buf, uint32_t cap, uint32_t ip_hlen, const uint8_t *orig,
	 uint32_t orig_len, uint32_t dgram_len, uint32_t qmax)
{
	uint32_t hdrs = ETH_HLEN + ip_hlen + ICMP_HLEN;
	uint32_t q = orig_len;

	if (dgram_len < q)
		q = dgram_len;
	if (q > qmax)
		q = qmax;
	if (cap < hdrs || cap - hdrs < q)
		return -ENOSPC;
	memmove(buf + hdrs, orig, q);
	return (int)q;
}

static int
build_te4(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
	  const struct ls_mac *dst_mac, const struct ls_addr *router,
	  const uint8_t *orig, uint32_t orig_len, uint8_t ttl)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(buf + ETH_HLEN);
	uint8_t *icmp = buf + ETH_HLEN + IPV4_HLEN;
	uint32_t q, tlen;
	uint8_t dst[4];
	uint16_t ck;
	int rc;

	if (orig_len < IPV4_HLEN || (orig[0] >> 4) != 4)
		return -EINVAL;
	/* Quote no more than the original datagram, but do not let a total
	 * length smaller than a header shrink the quote below one: the
	 * sender needs the header to match the error to its packet.
	 */
	tlen = ls_get_be16(orig + 2);
	memcpy(dst, orig + 12, 4);
	rc = te_quote(buf, cap, IPV4_HLEN, orig, orig_len, tlen >= IPV4_HLEN ? tlen : orig_len,
		      TE4_QUOTE_MAX);
	if (rc < 0)
		return rc;
	q = (uint32_t)rc;

	put_eth(buf, dst_mac->b, src_mac->b, RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(IPV4_HLEN + ICMP_HLEN + q));
	/* No DF: at most 576 bytes, which every IPv4 link must carry anyway
	 * (RFC 791), and routers do not set it on their ICMP errors.
	 */
	ip->packet_id = 0;
	ip->fragment_offset = 0;
	ip->time_to_live = ttl;
	ip->next_proto_id = IPPROTO_ICMP;
	ip->hdr_checksum = 0;
	memcpy(&ip->src_addr, router->a, 4);
	memcpy(&ip->dst_addr, dst, 4);
	ip->hdr_checksum = (uint16_t)~ls_pkt_cksum_raw(ip, IPV4_HLEN);

	memset(icmp, 0, ICMP_HLEN);
	icmp[0] = ICMP4_TIME_EXCEEDED;
	/* ICMPv4 has no pseudo header: header and quote only. */
	ck = (uint16_t)~ls_pkt_cksum_raw(icmp, ICMP_HLEN + q);
	memcpy(icmp + 2, &ck, 2);
	return (int)(ETH_HLEN + IPV4_HLEN + ICMP_HLEN + q);
}

static int
build_te6(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
	  const struct ls_mac *dst_mac, const struct ls_addr *router,
	  const uint8_t *orig, uint32_t orig_len, uint8_t ttl)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(buf + ETH_HLEN);
	uint8_t *icmp = buf + ETH_HLEN + IPV6_HLEN;
	uint32_t q;
	uint8_t dst[16];
	uint16_t ck;
	int rc;

	if (orig_len < IPV6_HLEN || (orig[0] >> 4) != 6)
		return -EINVAL;
	memcpy(dst, orig + 8, 16);
	rc = te_quote(buf, cap, IPV6_HLEN, orig, orig_len, IPV6_HLEN + (uint32_t)ls_get_be16(orig + 4),
		      TE6_QUOTE_MAX);
	if (rc < 0)
		return rc;
	q = (uint32_t)rc;

	put_eth(buf, dst_mac->b, src_mac->b, RTE_ETHER_TYPE_IPV6);
	put_ipv6(buf + ETH_HLEN, 0, 0, (uint16_t)(ICMP_HLEN + q), IPPROTO_ICMPV6,
		 ttl, router->a, dst);
	memset(icmp, 0, ICMP_HLEN);
	icmp[0] = ICMP6_TIME_EXCEEDED;
	/* Unlike ICMPv4, ICMPv6 covers the IPv6 pseudo header (RFC 4443 2.3). */
	ck = (uint16_t)~l4_sum6(ip, icmp, ICMP_HLEN + q);
	memcpy(icmp + 2, &ck, 2);
	return (int)(ETH_HLEN + IPV6_HLEN + ICMP_HLEN + q);
}

int
ls_pkt_build_time_exceeded(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
			   const struct ls_mac *dst_mac, const struct ls_addr *router,
			   const uint8_t *orig_l3, uint32_t orig_len, uint8_t ttl)
{
	if (router->family == LS_AF_INET)
		return build_te4(buf, cap, src_mac, dst_mac, router, orig_l3,
				 orig_len, ttl);
	if (router->family == LS_AF_INET6)
		return build_te6(buf, cap, src_mac, dst_mac, router, orig_l3,
				 orig_len, ttl);
	return -EINVAL;
}
