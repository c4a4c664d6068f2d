/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lockstep packet formats: parse and build Ethernet / IPv4 / IPv6 / UDP,
 * ARP (RFC 826) and IPv6 Neighbor Discovery (RFC 4861) frames in flat
 * buffers.
 *
 * Everything operates on plain byte buffers (an mbuf's data, a pcap record,
 * a test vector), never on mbufs, so the library needs no EAL and the same
 * code is exercised by unit tests, the fuzz test and the data path. The
 * header structs and checksum helpers come from DPDK's header-only
 * rte_ether.h / rte_ip.h / rte_udp.h / rte_arp.h / rte_icmp.h.
 *
 * Parsing never trusts a length field: every offset is checked against the
 * frame length, and a frame that fails is classified with a reason that the
 * caller counts (and drops).
 */
#ifndef LS_PKT_H
#define LS_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ls_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a received frame is, or why it was rejected (negative). */
enum ls_pkt_class {
	LS_PKT_UDP = 1,        /**< IPv4/IPv6 UDP datagram, headers valid */
	LS_PKT_ARP = 2,        /**< ARP request or reply for IPv4 over Ethernet */
	LS_PKT_ND_NS = 3,      /**< ICMPv6 Neighbor Solicitation */
	LS_PKT_ND_NA = 4,      /**< ICMPv6 Neighbor Advertisement */
	LS_PKT_OTHER = 5,      /**< well-formed but nothing we handle (TCP, other ICMP, LLDP...) */

	LS_PKT_ERR_TRUNC = -1,     /**< shorter than its headers claim */
	LS_PKT_ERR_L3 = -2,        /**< bad IP version/IHL/total length */
	LS_PKT_ERR_CSUM = -3,      /**< IPv4 header or UDP/ICMPv6 checksum wrong */
	LS_PKT_ERR_FRAG = -4,      /**< IP fragment (never valid for probes) */
	LS_PKT_ERR_ARP = -5,       /**< ARP not Ethernet/IPv4, bad lengths */
	LS_PKT_ERR_ND = -6,        /**< ND with hop limit != 255, bad code, bad option */
	LS_PKT_ERR_VLAN = -7,      /**< VLAN-tagged frame: lockstepd takes its own VLAN's
				    *   tag off before parsing, so a tag here is not ours */
	LS_PKT_ERR_ADDR = -8,      /**< multicast/broadcast/unspecified/loopback source address */
};

/** Number of distinct negative ls_pkt_class values (for counter arrays). */
#define LS_PKT_ERR_MAX 8

/** Short name of a class ("udp", "trunc", ...) for counters and logs. */
const char *ls_pkt_class_name(int cls);

/** A parsed frame: offsets into the frame and decoded fields (host order). */
struct ls_pkt_info {
	struct ls_mac src_mac;    /**< Ethernet source */
	struct ls_mac dst_mac;    /**< Ethernet destination */
	uint16_t ether_type;      /**< EtherType, host order */
	uint16_t l3_off;          /**< offset of the IP/ARP header */
	uint16_t l4_off;          /**< offset of the UDP/ICMPv6 header */
	uint16_t payload_off;     /**< offset of the UDP payload */
	uint16_t payload_len;     /**< UDP payload length (from UDP length) */
	uint8_t ttl;              /**< IPv4 TTL or IPv6 hop limit */
	uint8_t tos;              /**< IPv4 TOS or IPv6 traffic class (DSCP+ECN) */
	uint32_t flow_label;      /**< IPv6 flow label (20 bits), 0 for IPv4 */
	struct ls_addr src;       /**< IP source (ARP: sender protocol address) */
	struct ls_addr dst;       /**< IP destination (ARP: target protocol address) */
	uint16_t sport;           /**< UDP source port */
	uint16_t dport;           /**< UDP destination port */
	uint16_t arp_op;          /**< ARP opcode (1 request, 2 reply) */
	struct ls_mac arp_sha;    /**< ARP sender hardware address */
	struct ls_addr nd_target; /**< ND target address */
	struct ls_mac nd_lladdr;  /**< ND source/target link-layer option */
	bool nd_has_lladdr;       /**< nd_lladdr present */
};

/**
 * Parse an Ethernet frame.
 * @param frame  frame bytes, starting at the Ethernet header
 * @param len    frame length in bytes
 * @param verify_l4  verify UDP/ICMPv6 checksums in software (false when
 *                   the NIC already validated them)
 * @param pi     filled on success (partially on error)
 * @return a positive enum ls_pkt_class, or a negative one on rejection.
 */
int ls_pkt_parse(const uint8_t *frame, uint32_t len, bool verify_l4,
		 struct ls_pkt_info *pi);

/** Parameters of a UDP frame to build. */
struct ls_pkt_udp_hdr {
	struct ls_mac src_mac;  /**< Ethernet source */
	struct ls_mac dst_mac;  /**< Ethernet destination */
	struct ls_addr src;     /**< IP source (family selects IPv4/IPv6) */
	struct ls_addr dst;     /**< IP destination, same family */
	uint16_t sport;         /**< UDP source port */
	uint16_t dport;         /**< UDP destination port */
	uint8_t ttl;            /**< TTL / hop limit */
	uint8_t tos;            /**< TOS / traffic class */
	uint32_t flow_label;    /**< IPv6 flow label (ignored for IPv4) */
};

/** Bytes of Ethernet+IP+UDP headers for a family (42 for v4, 62 for v6). */
uint16_t ls_pkt_udp_hdr_len(uint8_t family);

/**
 * Build Ethernet+IP+UDP headers followed by a payload and fill every
 * length and checksum.
 * @return the frame length, or -ENOSPC when cap is too small, -EINVAL for
 *         mismatched families.
 */
int ls_pkt_build_udp(uint8_t *buf, uint32_t cap, const struct ls_pkt_udp_hdr *h,
		     const void *payload, uint16_t payload_len);

/**
 * Recompute the IPv4 header checksum (if IPv4) and the UDP checksum of a
 * frame built by ls_pkt_build_udp() after its payload was changed in place.
 * @param frame  frame bytes
 * @param len    frame length
 * @param family LS_AF_INET or LS_AF_INET6
 */
void ls_pkt_udp_finalize(uint8_t *frame, uint32_t len, uint8_t family);

/**
 * Turn a parsed received UDP frame around in place for a reply: swap
 * MACs (our MAC becomes the source), IP addresses and UDP ports, set
 * TTL/hop limit to ttl, keep TOS/traffic class and flow label. Checksums
 * are NOT updated: call ls_pkt_udp_finalize() after rewriting the payload.
 * @param our_mac the MAC to send from
 */
void ls_pkt_udp_turnaround(uint8_t *frame, const struct ls_pkt_info *pi,
			   const struct ls_mac *our_mac, uint8_t ttl);

/*
 * Internet checksum (RFC 1071), hand-written because DPDK 22.11's
 * __rte_raw_cksum adds one 16-bit word per iteration, and verifying and
 * rewriting the UDP checksum of every reflected probe is most of the
 * reflector's per-packet cost. Summing 64-bit words with end-around carry is
 * the same sum: 2^16 = 1 modulo 0xffff, so a 64-bit word is congruent to the
 * sum of its four 16-bit halves, and 0xffff divides 2^64 - 1. Words are
 * loaded in host order, like DPDK's, so the folded result is in network
 * order when stored as is. The unit test compares it with rte_raw_cksum.
 */

/** Ones'-complement add of a 64-bit word (end-around carry). */
static inline __attribute__((always_inline)) uint64_t
ls_csum_add(uint64_t sum, uint64_t v)
{
	sum += v;
	return sum + (sum < v);
}

/**
 * Add the n bytes (4, 2 or 1, a constant) at p, zero-padded to 32 bits: in
 * either byte order the padding moves the bytes by a multiple of 16 bits,
 * which is the same sum modulo 0xffff.
 */
static inline __attribute__((always_inline)) uint64_t
ls_csum_add_short(uint64_t sum, const uint8_t *p, size_t n)
{
	uint32_t w = 0;

	memcpy(&w, p, n);
	return ls_csum_add(sum, w);
}

/** Add len bytes at buf to a partial sum, 64 bits at a time. */
static inline __attribute__((always_inline)) uint64_t
ls_csum_bytes(const void *buf, size_t len, uint64_t sum)
{
	const uint8_t *p = (const uint8_t *)buf;

	/* Word by word straight from the buffer: a 32-byte memcpy into a local
	 * array becomes 16-byte stores read back as 8-byte loads, which stall.
	 * Four carry chains, not one: each add waits only for its own chain's
	 * last add-with-carry, so a 164-byte datagram is not 40 cycles of
	 * latency. */
	if (len >= 32) {
		uint64_t s1 = 0, s2 = 0, s3 = 0;

		for (; len >= 32; len -= 32, p += 32) {
			uint64_t w0, w1, w2, w3;

			memcpy(&w0, p, 8);
			memcpy(&w1, p + 8, 8);
			memcpy(&w2, p + 16, 8);
			memcpy(&w3, p + 24, 8);
			sum = ls_csum_add(sum, w0);
			s1 = ls_csum_add(s1, w1);
			s2 = ls_csum_add(s2, w2);
			s3 = ls_csum_add(s3, w3);
		}
		sum = ls_csum_add(ls_csum_add(sum, s1), ls_csum_add(s2, s3));
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		sum = ls_csum_add(sum, w);
	}
	if (len >= 4) {
		sum = ls_csum_add_short(sum, p, 4);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		sum = ls_csum_add_short(sum, p, 2);
		p += 2;
		len -= 2;
	}
	if (len)
		sum = ls_csum_add_short(sum, p, 1);
	return sum;
}

/** Fold a partial sum to 16 bits (not complemented). */
static inline __attribute__((always_inline)) uint16_t
ls_csum_fold(uint64_t sum)
{
	sum = (sum & 0xffffffffULL) + (sum >> 32);
	sum = (sum & 0xffffffffULL) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/**
 * Internet checksum sum (RFC 1071) of len bytes, folded to 16 bits and not
 * complemented: the same value as DPDK's rte_raw_cksum(), computed 64 bits
 * at a time. A received header is intact when the sum over it is 0xffff.
 */
uint16_t ls_pkt_cksum_raw(const void *buf, size_t len);

/** ARP opcodes. */
#define LS_ARP_REQUEST 1
#define LS_ARP_REPLY   2

/**
 * Build an ARP frame (Ethernet/IPv4). A request goes to broadcast with a
 * zero target MAC unless tha is given.
 * @return frame length (42 bytes, not padded), or -ENOSPC.
 */
int ls_pkt_build_arp(uint8_t *buf, uint32_t cap, uint16_t op,
		     const struct ls_mac *sha, const struct ls_addr *spa,
		     const struct ls_mac *tha, const struct ls_addr *tpa);

/**
 * Build an ICMPv6 Neighbor Solicitation for target from src, to the
 * target's solicited-node multicast address (and its multicast MAC), with a
 * source link-layer address option.
 * @return frame length, or -ENOSPC.
 */
int ls_pkt_build_ns(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
		    const struct ls_addr *src, const struct ls_addr *target);

/**
 * Build an ICMPv6 Neighbor Advertisement (solicited, override) for target,
 * sent from target to dst/dst_mac, with a target link-layer address option.
 * @return frame length, or -ENOSPC.
 */
int ls_pkt_build_na(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
		    const struct ls_addr *target, const struct ls_mac *dst_mac,
		    const struct ls_addr *dst);

/* ---- for switches (the lab fabric) ---------------------------------- */

/** ECN codepoints (RFC 3168): the low two bits of TOS / traffic class. */
#define LS_ECN_MASK   0x03
#define LS_ECN_NOT_ECT 0x00 /**< not ECN-capable */
#define LS_ECN_ECT1   0x01  /**< ECN-capable, ECT(1) */
#define LS_ECN_ECT0   0x02  /**< ECN-capable, ECT(0) */
#define LS_ECN_CE     0x03  /**< congestion experienced */

/**
 * Decrement the IPv4 TTL or IPv6 hop limit of the IP header at l3, in place;
 * the IPv4 header checksum is updated incrementally (RFC 1624).
 * @param family LS_AF_INET or LS_AF_INET6
 * @return the new TTL / hop limit (0 means the packet must not be forwarded).
 *         A TTL that is already 0 stays 0.
 */
uint8_t ls_pkt_ttl_dec(uint8_t *l3, uint8_t family);

/**
 * ls_pkt_ttl_dec() of an IPv4 header whose TTL is not 0 (the caller checked),
 * inline for forwarding fast paths; ls_pkt_ttl_dec uses it, so both write the
 * same bytes.
 * @return the new TTL.
 */
static inline __attribute__((always_inline)) uint8_t
ls_pkt_ttl_dec4(uint8_t *l3)
{
	uint16_t hc = (uint16_t)(l3[10] << 8 | l3[11]);

	/* RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), for the word m = TTL:protocol
	 * going to m' = m - 0x100: ~m + m' is 0xfeff whatever m is, so HC' is
	 * HC + 0x100 with end-around carry, except that HC = 0xfeff gives 0x0000
	 * (eqn. 3's zero, which a full recomputation also gives) rather than
	 * 0xffff. A few ALU operations instead of two folds of a 17-bit sum. */
	hc = hc < 0xfeff ? (uint16_t)(hc + 0x100) : (uint16_t)(hc - 0xfeff);
	l3[10] = (uint8_t)(hc >> 8);
	l3[11] = (uint8_t)hc;
	return --l3[8];
}

/**
 * Mark CE in the ECN field of the IP header at l3, in place (IPv4 header
 * checksum updated incrementally). Only ECT(0)/ECT(1) packets may be marked:
 * @return true when marked (or already CE), false for a Not-ECT packet.
 */
bool ls_pkt_set_ce(uint8_t *l3, uint8_t family);

/**
 * Build a Time Exceeded message about an IP packet whose TTL / hop limit ran
 * out at a router: ICMP type 11 code 0 for IPv4 (RFC 792), quoting as much of
 * the original as fits in 576 bytes (RFC 1812 4.3.2.3); ICMPv6 type 3 code 0
 * for IPv6 (RFC 4443), quoting as much as fits in 1280 bytes. Sent from
 * router (same family as the original) to the original's source, with TTL /
 * hop limit ttl, inside an Ethernet frame from src_mac to dst_mac.
 * @param orig_l3   the original packet from its IP header on
 * @param orig_len  its length (the IP total length is trusted only up to this)
 * @return frame length, -ENOSPC (cap too small), or -EINVAL (orig is not an
 *         IP header of router's family, or is shorter than one).
 */
int ls_pkt_build_time_exceeded(uint8_t *buf, uint32_t cap, const struct ls_mac *src_mac,
			       const struct ls_mac *dst_mac, const struct ls_addr *router,
			       const uint8_t *orig_l3, uint32_t orig_len, uint8_t ttl);

/** What an ICMP error says about the UDP datagram it quotes (ls_pkt_icmp_err). */
struct ls_pkt_icmp_err {
	struct ls_addr from;      /**< who sent the error (a router, or the destination) */
	struct ls_addr src, dst;  /**< the quoted datagram's addresses */
	uint8_t type, code;       /**< ICMP type/code (ICMPv6 for IPv6) */
	uint8_t time_exceeded;    /**< 1: TTL / hop limit ran out in transit */
	uint8_t quoted_ttl;       /**< the quoted header's TTL / hop limit */
	uint16_t sport, dport;    /**< the quoted UDP ports */
	uint16_t ip_id;           /**< the quoted IPv4 identification, 0 for IPv6 */
	uint16_t payload_len;     /**< quoted UDP payload bytes present */
	const uint8_t *payload;   /**< them (inside the frame), NULL when none */
};

/**
 * Parse an untagged Ethernet frame holding an ICMP Time Exceeded or
 * Destination Unreachable (IPv4, RFC 792) or ICMPv6 Time Exceeded or
 * Destination Unreachable (RFC 4443) that quotes a UDP datagram: at least
 * its IP header and the UDP ports (RFC 792's 8 bytes). Checksums are not
 * verified (a router may have quoted a truncated datagram); callers match
 * the quoted fields against what they sent.
 * @return 0, or -EINVAL when the frame is not such an error.
 */
int ls_pkt_icmp_err(const uint8_t *frame, uint32_t len, struct ls_pkt_icmp_err *o);

#ifdef __cplusplus
}
#endif

#endif /* LS_PKT_H */
