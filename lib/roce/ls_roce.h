/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * RoCEv2 on the wire: InfiniBand Architecture Specification Vol. 1,
 * Annex A17 "RoCEv2" (IBTA, 2014), and the BTH of IBA Vol. 1 section 9.2.
 *
 * lockstep sits in the wire and steers RoCEv2 flows between equal-cost
 * paths by rewriting the UDP source port, the field switches hash for ECMP
 * (Annex A17 leaves it to the sender as flow entropy). The port is
 * covered by the ICRC, the end-to-end CRC every RoCEv2 packet carries, so a
 * rewrite must fix the ICRC or the receiving HCA drops the packet. This
 * library parses and builds the Base Transport Header, computes, checks and
 * sets the ICRC, updates it incrementally after a source-port rewrite, and
 * builds Congestion Notification Packets.
 *
 * Packet layout (RoCEv2 is routable: IP and UDP replace the IB LRH/GRH):
 *
 *   IPv4 (20+ bytes) or IPv6 (40) | UDP (8, dport 4791) | BTH (12) |
 *   payload (extension headers and data, 0..n) | ICRC (4)
 *
 * BTH (12 bytes, network byte order):
 *
 *   0  OpCode (8)
 *   1  SE (1) M (1) PadCnt (2) TVer (4)
 *   2  P_Key (16)
 *   4  F/FECN (1) B/BECN (1) Resv6 (6)     <- "resv8a", masked in the ICRC
 *   5  DestQP (24)
 *   8  A/AckReq (1) Resv7 (7)
 *   9  PSN (24)
 *
 * ICRC (Annex A17, carried over from IBA section 7.8): CRC-32 with the
 * Ethernet polynomial, i.e. exactly zlib's crc32(), over
 *
 *   8 bytes of 0xFF (stand-in for the LRH RoCEv2 does not have)
 *   | IP header with the fields routers may change masked to ones
 *   | UDP header with the checksum masked to ones
 *   | BTH with byte 4 (FECN, BECN, Resv6) masked to ones
 *   | payload up to (not including) the ICRC.
 *
 * Masked, and so free to change in flight without touching the ICRC:
 * IPv4 TOS (DSCP and ECN), TTL and header checksum; IPv6 traffic class,
 * flow label and hop limit; the UDP checksum; FECN/BECN. Everything else,
 * the IP lengths, addresses and UDP ports included, is covered.
 *
 * Byte order on the wire: the ICRC is sent least significant byte first,
 * like the Ethernet FCS, i.e. the 32-bit value zlib returns stored
 * little-endian (a capture showing "82 fd 00 2a" carries crc32() ==
 * 0x2a00fd82). The ls_roce_icrc_* functions take and return the crc32()
 * value in host order and do the byte swapping themselves. Checked against
 * a CNP captured from a ConnectX-4 Lx (see tests/unit/test_roce.c) and
 * scapy's contrib/roce.py (tests/roce/).
 *
 * Source-port rewrite: CRC-32 is affine in its input, so for two inputs of
 * equal length crc(M ^ D) = crc(M) ^ crc_lin(D), where crc_lin is the CRC
 * with no initial value and no final inversion. D is zero but for the two
 * port bytes, so crc_lin(D) is crc_lin of those two bytes shifted past the
 * udp_len - 6 bytes that follow them, a multiplication by x^(8 n) modulo
 * the polynomial; zlib's crc32_combine_gen()/crc32_combine_op() do that
 * shift. The cost is fixed (no pass over the payload) and smaller still
 * when the caller keeps an ls_roce_shift_cache for the lengths it sees
 * (the shift of each port bit, precomputed: an XOR per changed bit):
 * about 110 ns, or 20 ns cached (the whole rewrite: locate, ICRC, UDP
 * checksum), against 540 ns / 1.4 us for a full recompute of a 1 KB / 4 KB
 * payload (`roce_tool bench`, one x86 core).
 * A rewrite of the IPv6 flow label (or DSCP/ECN, TTL/hop limit) needs no
 * ICRC change at all: those fields are masked.
 *
 * CNP (Annex A17.9.3 "RoCEv2 CNP"): the notification point sends one to the
 * sender of ECN-marked (CE) traffic, addressed to the sender's QP:
 * BTH OpCode 0x81, SE = M = PadCnt = TVer = 0, P_Key of the flow,
 * FECN = 0, BECN = 1, DestQP = the QP to slow down, A = 0, PSN = 0, then
 * 16 reserved bytes of zeros and the ICRC; UDP destination port 4791.
 * Layout as published with a capture in NVIDIA/Mellanox's "RoCEv2 CNP
 * Packet Format Example" (community.mellanox.com, 2018) and scapy's
 * contrib/roce.py cnp(); the ConnectX-4 Lx capture in the unit tests has
 * exactly these fields.
 *
 * All functions work on flat buffers that start at the IP header (an mbuf's
 * data at ls_pkt_info.l3_off), read nothing outside [l3, l3 + len) and
 * ignore bytes past the IP packet's own length (Ethernet padding). Pure
 * logic: no EAL, no allocation, no global state; safe on any lcore.
 *
 * Errors (negative errno):
 *   -EINVAL           NULL pointer or a field out of range
 *   -EMSGSIZE         the buffer ends before the headers or lengths say
 *   -EBADMSG          inconsistent lengths (UDP vs IP, too short for BTH+ICRC)
 *   -EPROTONOSUPPORT  not RoCEv2: not IPv4/IPv6, not UDP, dport != 4791,
 *                     an IPv4 fragment or IPv6 extension headers
 *   -EILSEQ           ICRC mismatch (ls_roce_icrc_check only)
 *   -ENOSPC           the output buffer is too small
 */
#ifndef LS_ROCE_H
#define LS_ROCE_H

#include <stdbool.h>
#include <stdint.h>

#include "ls_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LS_ROCE_UDP_PORT 4791    /**< IANA UDP destination port for RoCEv2 */
#define LS_ROCE_BTH_LEN 12       /**< Base Transport Header bytes */
#define LS_ROCE_ICRC_LEN 4       /**< Invariant CRC bytes at the end */
#define LS_ROCE_LRH_MASK_LEN 8   /**< 0xFF bytes standing in for the LRH */
#define LS_ROCE_QPN_MASK 0xffffffu /**< DestQP is 24 bits */
#define LS_ROCE_PSN_MASK 0xffffffu /**< PSN is 24 bits */

#define LS_ROCE_OPCODE_CNP 0x81  /**< BTH OpCode of a CNP (Annex A17.9.3) */
#define LS_ROCE_OPCODE_RC_ACK 0x11 /**< BTH OpCode of an RC Acknowledge */
#define LS_ROCE_AETH_LEN 4       /**< ACK Extended Transport Header: syndrome, MSN */
#define LS_ROCE_CNP_PAD_LEN 16   /**< reserved bytes after a CNP's BTH */
/** IP packet length of a CNP over IPv4: 20 + 8 + 12 + 16 + 4. */
#define LS_ROCE_CNP_LEN4 60
/** IP packet length of a CNP over IPv6: 40 + 8 + 12 + 16 + 4. */
#define LS_ROCE_CNP_LEN6 80

/** A Base Transport Header, fields in host order. */
struct ls_roce_bth {
	uint8_t opcode;    /**< OpCode: transport (3 high bits) and operation */
	bool se;           /**< Solicited Event */
	bool migreq;       /**< MigReq: path migration state */
	uint8_t pad_cnt;   /**< PadCnt: payload pad bytes, 0..3 */
	uint8_t tver;      /**< TVer: transport header version, 0..15 (0 today) */
	uint16_t pkey;     /**< P_Key: partition key */
	bool fecn;         /**< FECN: forward congestion seen (masked in ICRC) */
	bool becn;         /**< BECN: backward congestion (set in CNPs) */
	uint32_t dest_qp;  /**< DestQP, 24 bits */
	bool ack_req;      /**< A: acknowledge request */
	uint32_t psn;      /**< PSN: packet sequence number, 24 bits */
};

/** Where the parts of a RoCEv2 IP packet lie, offsets from the IP header. */
struct ls_roce_pkt {
	uint8_t family;    /**< LS_AF_INET or LS_AF_INET6 */
	uint16_t udp_off;  /**< UDP header (= IP header length) */
	uint16_t bth_off;  /**< BTH (= udp_off + 8) */
	uint16_t sport;    /**< UDP source port, host order */
	uint16_t udp_len;  /**< UDP length field: UDP header to ICRC end */
	uint32_t icrc_off; /**< the ICRC; also where the CRC's input ends */
	uint32_t ip_len;   /**< IP packet length (bytes past it are padding) */
};

/**
 * Cache of ICRC changes by UDP length, for ls_roce_set_sport().
 * A flow's packets come in a few lengths (full MTU segments, ACKs), so a
 * small direct-mapped cache per lcore keeps, per length, what each of the
 * source port's 16 bits changes in the ICRC (the CRC is linear): an update
 * is then the XOR of the columns of the bits that changed, without branches
 * or a GF(2) multiplication. Zero-initialise it; it is not shared between
 * threads.
 */
#define LS_ROCE_SHIFT_CACHE_SIZE 16
struct ls_roce_shift_cache {
	uint16_t len[LS_ROCE_SHIFT_CACHE_SIZE];     /**< udp_len per slot, 0 = empty */
	uint32_t col[LS_ROCE_SHIFT_CACHE_SIZE][16]; /**< ICRC change of port bit j */
};

/** Parameters of a CNP built by ls_roce_cnp_build(). */
struct ls_roce_cnp_params {
	struct ls_addr src;   /**< our address (the notification point's) */
	struct ls_addr dst;   /**< the flow's sender, to be slowed down */
	uint8_t dscp;         /**< DSCP, 0..63 (CNPs usually ride a high class) */
	uint8_t ecn;          /**< ECN codepoint, 0..3 */
	uint8_t ttl;          /**< TTL / hop limit; 0 means 64 */
	uint32_t flow_label;  /**< IPv6 flow label, 20 bits (ignored for IPv4) */
	uint16_t ip_id;       /**< IPv4 identification (ignored for IPv6) */
	uint16_t pkey;        /**< P_Key of the flow (0xffff: default partition) */
	uint32_t dest_qp;     /**< QP to notify (the sender's QP), 24 bits */
	uint16_t sport;       /**< UDP source port (entropy; 0 is what some NICs send) */
};

/**
 * Decode a BTH.
 * @param buf  the BTH's first byte
 * @param len  bytes readable at buf
 * @param bth  filled on success; reserved bits are ignored
 * @return 0, -EINVAL (NULL) or -EMSGSIZE (len < LS_ROCE_BTH_LEN).
 */
int ls_roce_bth_parse(const uint8_t *buf, uint32_t len, struct ls_roce_bth *bth);

/**
 * Encode a BTH, reserved bits zero.
 * @param buf  where to write
 * @param cap  bytes writable at buf
 * @param bth  the fields
 * @return LS_ROCE_BTH_LEN, -EINVAL (NULL, pad_cnt > 3, tver > 15, dest_qp or
 *         psn wider than 24 bits) or -ENOSPC.
 */
int ls_roce_bth_put(uint8_t *buf, uint32_t cap, const struct ls_roce_bth *bth);

/**
 * Find the UDP header, BTH and ICRC of a RoCEv2 IP packet and check that
 * its lengths agree: IP length within len, UDP length equal to the IP
 * payload and long enough for a BTH and an ICRC.
 * @param l3   the IP header
 * @param len  bytes readable at l3 (may include Ethernet padding)
 * @param rp   filled on success
 * @return 0 or a negative errno (see the file comment).
 */
int ls_roce_locate(const uint8_t *l3, uint32_t len, struct ls_roce_pkt *rp);

/**
 * Compute the ICRC a RoCEv2 IP packet should carry.
 * @param l3    the IP header
 * @param len   bytes readable at l3
 * @param icrc  the crc32() value, host order (the wire has it little-endian)
 * @return 0 or a negative errno from ls_roce_locate().
 */
int ls_roce_icrc_compute(const uint8_t *l3, uint32_t len, uint32_t *icrc);

/**
 * Read the ICRC a packet carries (no validation beyond ls_roce_locate()).
 * @return 0 or a negative errno from ls_roce_locate().
 */
int ls_roce_icrc_get(const uint8_t *l3, uint32_t len, uint32_t *icrc);

/**
 * Check a packet's ICRC.
 * @return 0 when it matches, -EILSEQ when not, or a negative errno from
 *         ls_roce_locate().
 */
int ls_roce_icrc_check(const uint8_t *l3, uint32_t len);

/**
 * Compute and store a packet's ICRC (after building or editing it).
 * @return 0 or a negative errno from ls_roce_locate().
 */
int ls_roce_icrc_set(uint8_t *l3, uint32_t len);

/**
 * The ICRC after changing the UDP source port, without reading the payload.
 * @param icrc       the ICRC before (crc32() value, host order)
 * @param old_sport  the port it was computed with
 * @param new_sport  the port now in the packet
 * @param udp_len    the packet's UDP length field
 * @param cache      shift cache, or NULL to compute the shift every time
 * @return the new ICRC. Garbage in (udp_len < 8 + 12 + 4) gives garbage out;
 *         ls_roce_set_sport() checks that first.
 */
uint32_t ls_roce_icrc_update_sport(uint32_t icrc, uint16_t old_sport,
				   uint16_t new_sport, uint16_t udp_len,
				   struct ls_roce_shift_cache *cache);

/**
 * Rewrite a RoCEv2 packet's UDP source port in place, updating the ICRC
 * incrementally and, when it is non-zero, the UDP checksum (RFC 1624; it
 * covers both the port and the ICRC, which is UDP payload).
 * A packet whose ICRC was wrong before still has a wrong one after: this
 * neither checks nor repairs it, so a receiver drops it as it would have.
 * @param l3     the IP header
 * @param len    bytes readable and writable at l3
 * @param sport  the new source port, host order
 * @param cache  shift cache (per lcore), or NULL
 * @return 0 or a negative errno from ls_roce_locate().
 */
int ls_roce_set_sport(uint8_t *l3, uint32_t len, uint16_t sport,
		      struct ls_roce_shift_cache *cache);

/**
 * Build a CNP from the IP header on: IPv4 (DF set, header checksum) or
 * IPv6 per p->src.family, UDP to 4791, the BTH and 16 reserved bytes as
 * in the file comment, and the ICRC. The UDP checksum is zero over IPv4,
 * as RoCEv2 NICs send it (the ICRC protects the packet), and computed over
 * IPv6, where RFC 8200 forbids a zero checksum and a host stack on the way
 * might hold us to it.
 * @param buf  where to write (an mbuf's data after the Ethernet header)
 * @param cap  bytes writable at buf
 * @param p    the parameters
 * @return LS_ROCE_CNP_LEN4 or LS_ROCE_CNP_LEN6, -EINVAL (NULL, family unset
 *         or mixed, dscp > 63, ecn > 3, dest_qp > 24 bits, flow_label > 20
 *         bits) or -ENOSPC.
 */
int ls_roce_cnp_build(uint8_t *buf, uint32_t cap,
		      const struct ls_roce_cnp_params *p);

/** Bytes of an RC ACK from the IP header on (IPv4, IPv6). */
#define LS_ROCE_ACK_LEN4 48
#define LS_ROCE_ACK_LEN6 68

/**
 * Build an RC Acknowledge as a responder NIC sends it: the same IP and UDP
 * as ls_roce_cnp_build() (p's dscp, ecn, ttl, pkey, dest_qp: the
 * requester's QP, sport), BTH opcode 0x11 with psn (the last request
 * acknowledged), an AETH with syndrome "ACK, unlimited credits" and msn,
 * and the ICRC.
 * @return LS_ROCE_ACK_LEN4 or LS_ROCE_ACK_LEN6, -EINVAL (as
 *         ls_roce_cnp_build(), or psn or msn over 24 bits) or -ENOSPC.
 */
int ls_roce_ack_build(uint8_t *buf, uint32_t cap, const struct ls_roce_cnp_params *p,
		      uint32_t psn, uint32_t msn);

/** Header bytes ls_roce_set_sport_seg() needs in the first segment: the
 * largest IPv4 header, UDP and the BTH. */
#define LS_ROCE_SEG_HDR_MIN (60 + 8 + LS_ROCE_BTH_LEN)

/**
 * ls_roce_set_sport() for a packet in several buffers (a jumbo frame in
 * chained mbufs): the headers are contiguous at l3 (hdr_len bytes, at least
 * LS_ROCE_SEG_HDR_MIN), the packet is len bytes in all, and its 4 ICRC bytes,
 * wherever they lie, are passed in icrc: the caller copies them in and,
 * on success, back.
 * @return 0, -EMSGSIZE (headers not contiguous) or an errno of ls_roce_locate().
 */
int ls_roce_set_sport_seg(uint8_t *l3, uint32_t hdr_len, uint32_t len, uint8_t icrc[4],
			  uint16_t sport, struct ls_roce_shift_cache *cache);

#ifdef __cplusplus
}
#endif

#endif /* LS_ROCE_H */
