/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * STAMP test packets: RFC 8762 (Simple Two-Way Active Measurement Protocol),
 * unauthenticated mode, with RFC 8972 TLVs after the base packet.
 *
 * Base packet layouts (all fields network byte order), 44 bytes each:
 *
 *   Session-Sender             Session-Reflector
 *   0  Sequence Number (4)     0  Sequence Number (4)
 *   4  Timestamp (8)           4  Timestamp (8)              T3
 *   12 Error Estimate (2)      12 Error Estimate (2)
 *   14 SSID (2, RFC 8972)      14 SSID (2, RFC 8972)
 *   16 MBZ (28)                16 Receive Timestamp (8)      T2
 *                              24 Session-Sender Seq (4)
 *                              28 Session-Sender Timestamp (8) T1
 *                              36 Session-Sender Err Est (2)
 *                              38 MBZ (2)
 *                              40 Ses-Sender TTL (1)
 *                              41 MBZ (3)
 *
 * Timestamps: PTPv2 truncated (32-bit seconds, 32-bit nanoseconds since the
 * PTP epoch) when the Error Estimate's Z bit is 1, NTP 64-bit (seconds since
 * 1900, 32-bit fraction) when Z is 0. This library converts both to and
 * from nanoseconds since 1970 (the PTP epoch).
 *
 * TLVs (RFC 8972 section 4): Flags (1: U M I reserved...), Type (1),
 * Length (2, value bytes), Value. lockstep's own extras travel in one
 * private-use TLV (type 252) holding the sender node id, path id, coded-pair
 * id and member, and the intended pair spacing.
 *
 * Pure logic on byte buffers: no EAL.
 */
#ifndef LS_STAMP_H
#define LS_STAMP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_STAMP_PORT 862       /**< IANA UDP port for STAMP */
#define LS_STAMP_BASE_LEN 44    /**< base sender/reflector packet, unauthenticated */

/** Error Estimate bits (RFC 4656 section 4.1.2, reused by RFC 8762). */
#define LS_STAMP_EE_S 0x8000    /**< S: clock synchronized to UTC */
#define LS_STAMP_EE_Z 0x4000    /**< Z: 1 = PTPv2 timestamp format, 0 = NTP */

/** Seconds between the NTP epoch (1900) and the Unix/PTP epoch (1970). */
#define LS_NTP_UNIX_OFFSET 2208988800ULL

/** TLV flags (RFC 8972 section 4). */
#define LS_STAMP_TLV_U 0x80     /**< Unrecognized: set by the reflector */
#define LS_STAMP_TLV_M 0x40     /**< Malformed: set by the reflector */
#define LS_STAMP_TLV_I 0x20     /**< Integrity check failed */
#define LS_STAMP_TLV_HDR_LEN 4  /**< flags + type + length */

/** TLV types used by lockstep. */
#define LS_STAMP_TLV_EXTRA_PADDING 1   /**< RFC 8972 Extra Padding */
#define LS_STAMP_TLV_LOCKSTEP 252      /**< private use: lockstep extras */
#define LS_STAMP_TLV_SYNC 253          /**< private use: reflector's clock-sync state,
					*   filled by the reflector (sent as zeros) */
#define LS_STAMP_SYNC_LEN 64           /**< value bytes of the sync TLV (= LS_SYNC_WIRE_LEN) */
#define LS_STAMP_LOCKSTEP_MAGIC 0x4c535450u /**< "LSTP" */
#define LS_STAMP_LOCKSTEP_LEN 24       /**< value bytes of the lockstep TLV */
#define LS_STAMP_MEMBER_SINGLE 0xff    /**< pair_member of a probe in no coded pair
					*   (lockstepd's path.mtu): not for clock sync */

/** Decoded Session-Sender base packet. */
struct ls_stamp_sender {
	uint32_t seq;      /**< sequence number */
	uint64_t ts_ns;    /**< T1, ns since 1970 (decoded per err_est Z bit) */
	uint16_t err_est;  /**< error estimate, raw */
	uint16_t ssid;     /**< session-sender identifier (0 if unused) */
};

/** Decoded Session-Reflector base packet. */
struct ls_stamp_reflector {
	uint32_t seq;           /**< reflector sequence number */
	uint64_t tx_ns;         /**< T3, reflector transmit time, ns since 1970 */
	uint16_t err_est;       /**< reflector error estimate (its Z bit formats T2/T3) */
	uint16_t ssid;          /**< SSID copied from the sender */
	uint64_t rx_ns;         /**< T2, reflector receive time, ns since 1970 */
	uint32_t sender_seq;    /**< copied sender sequence number */
	uint64_t sender_ts_ns;  /**< T1 copied (decoded per sender_err_est Z bit) */
	uint16_t sender_err_est;/**< copied sender error estimate */
	uint8_t sender_ttl;     /**< TTL/hop limit of the sender's packet at the reflector */
};

/** lockstep's extras (TLV type 252). */
struct ls_stamp_lockstep_tlv {
	uint32_t node_id;     /**< sender node id */
	uint16_t path_id;     /**< path index (ECMP entropy slot) */
	uint8_t pair_member;  /**< 0 = first of the coded pair, 1 = second,
			       *   LS_STAMP_MEMBER_SINGLE = no pair */
	uint8_t version;      /**< format version, 1 */
	uint32_t pair_id;     /**< coded-pair id, per path */
	uint32_t spacing_ns;  /**< intended spacing between the pair's packets */
};

/** One TLV as found in a packet. */
struct ls_stamp_tlv {
	uint8_t flags;        /**< U/M/I flags */
	uint8_t type;         /**< TLV type */
	uint16_t len;         /**< value length */
	const uint8_t *value; /**< points into the packet */
	size_t off;           /**< offset of the TLV header in the TLV area */
};

/** Convert ns since 1970 to a PTPv2 truncated timestamp (8 bytes, BE). */
void ls_stamp_ts_put_ptp(uint8_t *p, uint64_t ns);
/** Convert ns since 1970 to an NTP 64-bit timestamp (8 bytes, BE). */
void ls_stamp_ts_put_ntp(uint8_t *p, uint64_t ns);
/**
 * Decode an 8-byte timestamp to ns since 1970.
 * @param ptp true for PTPv2 format (Z=1), false for NTP.
 */
uint64_t ls_stamp_ts_get(const uint8_t *p, bool ptp);

/**
 * Build an Error Estimate: S bit, Z bit (ptp), scale (6 bits) and multiplier.
 * The error is multiplier * 2^(-32) * 2^scale seconds.
 */
uint16_t ls_stamp_err_est(bool synced, bool ptp, uint8_t scale, uint8_t mult);

/**
 * Encode a Session-Sender base packet (44 bytes, MBZ zeroed).
 * Timestamp format follows s->err_est's Z bit.
 * @return LS_STAMP_BASE_LEN, or -ENOSPC.
 */
int ls_stamp_encode_sender(uint8_t *buf, size_t cap, const struct ls_stamp_sender *s);

/**
 * Decode a Session-Sender base packet.
 * @return 0, or -EMSGSIZE when len < 44.
 */
int ls_stamp_decode_sender(const uint8_t *buf, size_t len, struct ls_stamp_sender *s);

/**
 * Encode a Session-Reflector base packet (44 bytes, MBZ zeroed). T2/T3 use
 * r->err_est's Z bit; T1 is written in r->sender_err_est's Z format (it is a
 * copy of the sender's field).
 * @return LS_STAMP_BASE_LEN, or -ENOSPC.
 */
int ls_stamp_encode_reflector(uint8_t *buf, size_t cap, const struct ls_stamp_reflector *r);

/** Decode a Session-Reflector base packet. @return 0 or -EMSGSIZE. */
int ls_stamp_decode_reflector(const uint8_t *buf, size_t len, struct ls_stamp_reflector *r);

/**
 * Turn a received Session-Sender packet into the Session-Reflector packet in
 * place, as RFC 8762 section 4.3 says for a stateless reflector: the
 * reflector sequence number is the sender's; T1, the sender's error
 * estimate and SSID are copied; T2 = rx_ns, T3 = tx_ns (written in the
 * reflector's format per refl_err_est), Ses-Sender TTL = ttl; MBZ zeroed.
 * The TLV area after the base packet is processed by
 * ls_stamp_reflect_tlvs().
 * @param pkt  packet bytes (UDP payload), len >= 44
 * @return 0, or -EMSGSIZE when len < 44.
 */
int ls_stamp_reflect_inplace(uint8_t *pkt, size_t len, uint64_t rx_ns,
			     uint64_t tx_ns, uint16_t refl_err_est, uint8_t ttl);

/**
 * Write only the transmit timestamp into a built packet: T3 of a reflector
 * packet, or T1 of a sender packet (both at byte 4), in the format err_est
 * names, for callers that stamp as late as possible before transmit.
 */
void ls_stamp_put_tx_ts(uint8_t *pkt, uint64_t tx_ns, uint16_t err_est);

/**
 * Iterate TLVs in the area after the base packet.
 * @param area  first byte after the 44-byte base packet
 * @param len   bytes in the area
 * @param off   in/out cursor, start at 0
 * @param tlv   filled when 1 is returned
 * @return 1 when a TLV was read, 0 at the end, -EBADMSG when the remaining
 *         bytes are too short for a TLV header or the length overruns the
 *         area (the cursor then stays at the bad TLV).
 */
static inline int
ls_stamp_tlv_next(const uint8_t *area, size_t len, size_t *off, struct ls_stamp_tlv *tlv)
{
	/* inline: the reflector's fast path walks every probe's TLVs */
	size_t rem;
	uint16_t vlen;

	if (*off >= len)
		return 0;
	rem = len - *off;
	if (rem < LS_STAMP_TLV_HDR_LEN)
		return -EBADMSG;
	vlen = (uint16_t)(area[*off + 2] << 8 | area[*off + 3]);
	if (vlen > rem - LS_STAMP_TLV_HDR_LEN)
		return -EBADMSG;
	tlv->flags = area[*off];
	tlv->type = area[*off + 1];
	tlv->len = vlen;
	tlv->value = area + *off + LS_STAMP_TLV_HDR_LEN;
	tlv->off = *off;
	*off += LS_STAMP_TLV_HDR_LEN + vlen;
	return 1;
}

/**
 * Append a TLV at area+*off; a NULL value writes len zero bytes (Extra
 * Padding). @return 0 or -ENOSPC.
 */
int ls_stamp_tlv_put(uint8_t *area, size_t cap, size_t *off, uint8_t flags,
		     uint8_t type, const void *value, uint16_t len);

/** Append the lockstep TLV. @return 0 or -ENOSPC. */
int ls_stamp_tlv_put_lockstep(uint8_t *area, size_t cap, size_t *off,
			      const struct ls_stamp_lockstep_tlv *t);

/**
 * Decode a lockstep TLV value. @return 0, or -EBADMSG for wrong length,
 * magic or version.
 */
int ls_stamp_tlv_get_lockstep(const struct ls_stamp_tlv *tlv, struct ls_stamp_lockstep_tlv *out);

/**
 * Find and decode the lockstep TLV in a TLV area.
 * @return 0 when found and valid, -ENOENT when absent, -EBADMSG when the
 *         area or the TLV is malformed.
 */
int ls_stamp_find_lockstep(const uint8_t *area, size_t len, struct ls_stamp_lockstep_tlv *out);

/**
 * Find the sync TLV in a TLV area (a reply's: the reflector filled it).
 * @return offset of its LS_STAMP_SYNC_LEN value bytes in the area, -ENOENT
 *         when absent, -EBADMSG when the area or the TLV is malformed or
 *         flagged U/M by the reflector.
 */
int ls_stamp_find_sync(const uint8_t *area, size_t len);

/** Counts of what ls_stamp_reflect_tlvs() did. */
struct ls_stamp_tlv_result {
	uint16_t n_tlvs;        /**< TLVs seen */
	uint16_t n_unknown;     /**< TLVs flagged U */
	uint16_t n_malformed;   /**< TLVs flagged M (at most 1: parsing stops) */
	int32_t sync_off;       /**< offset in the area of a well-formed sync TLV's
				 *   value for the reflector to fill, -1 none */
};

/**
 * Process the TLV area of a packet being reflected, in place, per RFC 8972:
 * known types (Extra Padding, lockstep) are copied unchanged; the first
 * sync TLV of the right length is reported in res->sync_off for the caller
 * to fill (one of another length gets the M flag); an unknown
 * type gets the U flag; a TLV whose length overruns the area gets the M flag
 * and processing stops there (the remaining bytes are left as they are, so
 * the reflected packet keeps the sender's size and cannot amplify).
 */
void ls_stamp_reflect_tlvs(uint8_t *area, size_t len, struct ls_stamp_tlv_result *res);

#ifdef __cplusplus
}
#endif

#endif /* LS_STAMP_H */
