/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * STAMP reflector fast path for the common case: a plain IPv4/UDP Session-
 * Sender packet (RFC 8762) addressed to us, reflected in place.
 *
 * The generic path (lib/pkt parse, lib/stamp reflect, turnaround, full
 * checksum recompute) handles every case; this path handles only the one
 * that carries nearly all traffic, and does it in one pass over the headers:
 *  - ls_reflect_v4_check() validates read-only exactly what the generic
 *    path would (headers, header checksum, UDP checksum, our MAC and
 *    address, a forwardable source from a unicast MAC and a sender (not a
 *    reflector) port, every TLV of a type the reflector copies
 *    unchanged, or a sync TLV the caller fills) and otherwise answers
 *    "take the generic path";
 *  - ls_reflect_v4_apply() writes the reflected packet and updates both
 *    checksums incrementally (RFC 1624) from the verified ones, computing
 *    the new words from values in registers rather than reading back what it
 *    just wrote (which stalls on store forwarding);
 *  - ls_reflect_v4_fill() writes the caller's value into the sync TLV (the
 *    reflector's clock-sync state, RFC 8972 style) and folds the change
 *    into the UDP checksum; ls_reflect_v4_fill_sums() folds it in from the
 *    two values' sums when the caller wrote the value itself (check() keeps
 *    the old one's, summed while verifying);
 *  - ls_reflect_v4_put_t3() writes the transmit timestamp last and folds it
 *    into the UDP checksum.
 * The result is byte-identical to the generic path's; the unit test checks
 * that on random and mutated packets. IPv6, options, VLANs, unknown TLVs and
 * anything odd stay on the generic path.
 *
 * Pure logic on byte buffers: no EAL.
 */
#ifndef LS_REFLECT_H
#define LS_REFLECT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The local side a packet must be addressed to. */
struct ls_reflect_port {
	uint8_t mac[6];      /**< our MAC (exact match; group addresses go generic) */
	uint32_t ip;         /**< our IPv4 address, network order */
	uint8_t plen;        /**< our prefix length (subnet broadcast sources are refused) */
	uint16_t dst_port;   /**< STAMP reflector UDP port, host order */
};

/** What check() learnt, for apply() and put_t3(). */
struct ls_reflect_v4 {
	uint32_t src;          /**< source IPv4 address, network order (rate limiting) */
	uint16_t payload_len;  /**< STAMP payload bytes (frame is trimmed to 42 + this) */
	uint16_t base_sum;     /**< ones'-complement sum of the 44 base bytes, as loaded */
	uint16_t sync_off;     /**< the first sync TLV's value, from the payload's start
				*   (even); 0: none */
	uint16_t sync_sum;     /**< ones'-complement sum of that value as received
				*   (ls_reflect_sum()), for ls_reflect_v4_fill_sums() */
	uint8_t ttl;           /**< TTL the packet arrived with */
};

/**
 * True when a test packet from UDP source port sport must not be answered:
 * it comes from a reflector port (dst_port, ours) or a system port (< 1024,
 * where STAMP and other echo-like services live). A reply would be a valid
 * request for the reflector at the other end, which answers in turn: two
 * reflectors would ping-pong one forged packet forever. Our own senders use
 * ports >= 1024 (probe.src_port_base), as RFC 8762 senders normally do.
 */
static inline bool
ls_reflect_src_port_bad(uint16_t sport, uint16_t dst_port)
{
	return sport == dst_port || sport < 1024;
}

/** Offset of the STAMP payload in a fast-path frame (Ethernet + IPv4 + UDP). */
#define LS_REFLECT_V4_PAYLOAD_OFF 42

/**
 * Decide whether frame can take the fast path.
 * @return true when it can (r filled); false when the generic path must
 *         handle it (which also counts whatever is wrong with it).
 */
bool ls_reflect_v4_check(const uint8_t *frame, uint32_t len,
			 const struct ls_reflect_port *port, struct ls_reflect_v4 *r);

/**
 * check() for a frame whose UDP checksum the NIC verified (l4_verified: its
 * mbuf says RTE_MBUF_F_RX_L4_CKSUM_GOOD, as the generic path trusts it):
 * the datagram is not summed again, only the base and the sync value, which
 * apply() and fill need. The IPv4 header checksum is still checked.
 */
bool ls_reflect_v4_check_l4(const uint8_t *frame, uint32_t len,
			    const struct ls_reflect_port *port, struct ls_reflect_v4 *r,
			    bool l4_verified);

/**
 * A timestamp's 8 bytes as one big-endian value, exactly as lib/stamp
 * writes them (ls_stamp_ts_put_ptp / ls_stamp_ts_put_ntp): what apply_ts()
 * and put_t3_ts() take, computed once for a burst's frames that share it.
 */
static inline uint64_t
ls_reflect_ts(uint64_t ns, bool ptp)
{
	const uint64_t s = 1000000000ULL, ntp_unix = 2208988800ULL;
	uint64_t sec = ns / s, rem = ns % s;

	if (ptp)
		return (uint64_t)(uint32_t)sec << 32 | rem;
	return (uint64_t)(uint32_t)(sec + ntp_unix) << 32 |
	       (uint32_t)(((rem << 32) + s / 2) / s);
}

/**
 * Reflect a frame that passed check(): RFC 8762 section 4.3 stateless
 * reflection with T2 = rx_ns, T3 left for put_t3(), Ses-Sender TTL = the
 * TTL it arrived with; swap MACs (ours becomes the source), addresses and
 * ports; TTL = reply_ttl; IPv4 and UDP checksums updated incrementally.
 * @param ptp  timestamps in PTPv2 format (else NTP), matching refl_err_est
 */
void ls_reflect_v4_apply_ts(uint8_t *frame, const struct ls_reflect_v4 *r,
			    const struct ls_reflect_port *port, uint64_t t2,
			    uint16_t refl_err_est, uint8_t reply_ttl);

/** apply_ts() with T2 = ls_reflect_ts(rx_ns, ptp). */
static inline void
ls_reflect_v4_apply(uint8_t *frame, const struct ls_reflect_v4 *r,
		    const struct ls_reflect_port *port, uint64_t rx_ns,
		    uint16_t refl_err_est, bool ptp, uint8_t reply_ttl)
{
	ls_reflect_v4_apply_ts(frame, r, port, ls_reflect_ts(rx_ns, ptp), refl_err_est,
			       reply_ttl);
}

/**
 * Replace the n bytes (even) at payload offset off (r->sync_off) with value
 * and fold the change into the checksum apply() left: the generic path's
 * sync TLV fill. Call after apply() and before put_t3().
 */
void ls_reflect_v4_fill(uint8_t *frame, uint16_t off, const uint8_t *value, uint16_t n);

/**
 * The ones'-complement sum of n bytes, folded to 16 bits, as loaded: what
 * check() keeps of the sync TLV's value (r->sync_sum) and what a caller that
 * writes the same value into many frames computes once.
 */
uint16_t ls_reflect_sum(const uint8_t *p, uint16_t n);

/**
 * The sync TLV's value was changed in place (the caller wrote it straight
 * into the frame): fold the change into the checksum apply() left, from the
 * sums of the old value (r->sync_sum) and the new (ls_reflect_sum()). Nothing
 * is read back: two adds instead of summing both values per frame.
 */
void ls_reflect_v4_fill_sums(uint8_t *frame, uint16_t old_sum, uint16_t new_sum);

/** Write T3 (ls_reflect_ts()) and complete the UDP checksum. Call once,
 * after apply(). */
void ls_reflect_v4_put_t3_ts(uint8_t *frame, uint64_t t3);

/** put_t3_ts() of tx_ns. */
static inline void
ls_reflect_v4_put_t3(uint8_t *frame, uint64_t tx_ns, bool ptp)
{
	ls_reflect_v4_put_t3_ts(frame, ls_reflect_ts(tx_ns, ptp));
}

#ifdef __cplusplus
}
#endif

#endif /* LS_REFLECT_H */
