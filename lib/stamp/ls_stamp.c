/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STAMP (RFC 8762, unauthenticated mode) packet encoding and the stateless
 * reflector, plus RFC 8972 TLV handling and lockstep's private TLV.
 *
 * Why it looks like this:
 *
 * - Fields are read and written byte by byte at fixed offsets instead of
 *   through a packed struct overlay. The packet sits at an arbitrary offset
 *   in a frame (after IPv4 options, say), the RFC defines it as bytes on the
 *   wire, and explicit offsets make the layout in ls_stamp.h checkable line
 *   by line against this file.
 *
 * - The reflector works in place on the received payload, so a reply is
 *   never larger than its request (no amplification, RFC 8762 section 4.3)
 *   and needs no copy. T1 and the sender's error estimate are copied as raw
 *   bytes: the reflector must return them exactly as sent, whatever their
 *   format.
 *
 * - Timestamps from the network are hostile input: the conversions accept
 *   every bit pattern without overflow (64-bit nanoseconds reach beyond the
 *   year 2500) and never divide by anything but constants.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "ls_common.h"
#include "ls_stamp.h"

/* Session-Sender / Session-Reflector offsets (RFC 8762 sections 4.2, 4.3). */
#define OFF_SEQ		0
#define OFF_TS		4
#define OFF_ERR		12
#define OFF_SSID	14
#define OFF_MBZ_S	16
#define OFF_RX_TS	16
#define OFF_S_SEQ	24
#define OFF_S_TS	28
#define OFF_S_ERR	36
#define OFF_MBZ1	38
#define OFF_S_TTL	40
#define OFF_MBZ2	41

/* lockstep TLV value layout (LS_STAMP_LOCKSTEP_LEN bytes). The magic comes
 * first so that a foreign private-use TLV with the same type is told apart
 * before any field is trusted.
 */
#define LT_MAGIC	0
#define LT_VERSION	4
#define LT_MEMBER	5
#define LT_PATH		6
#define LT_NODE		8
#define LT_PAIR		12
#define LT_SPACING	16
#define LT_MBZ		20
#define LT_VERSION_1	1

static inline uint16_t
get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline void
put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

void
ls_stamp_ts_put_ptp(uint8_t *p, uint64_t ns)
{
	/* 32-bit seconds wrap in 2106, as the format itself does. */
	put32(p, (uint32_t)(ns / LS_NS_PER_S));
	put32(p + 4, (uint32_t)(ns % LS_NS_PER_S));
}

void
ls_stamp_ts_put_ntp(uint8_t *p, uint64_t ns)
{
	uint64_t rem = ns % LS_NS_PER_S;

	/* Rounded to the nearest 2^-32 s so that decoding gives back the same
	 * nanosecond; rem < 1e9 keeps the fraction below 2^32.
	 */
	put32(p, (uint32_t)(ns / LS_NS_PER_S + LS_NTP_UNIX_OFFSET));
	put32(p + 4, (uint32_t)(((rem << 32) + LS_NS_PER_S / 2) / LS_NS_PER_S));
}

uint64_t
ls_stamp_ts_get(const uint8_t *p, bool ptp)
{
	uint64_t sec = get32(p);
	uint64_t sub = get32(p + 4);

	if (ptp) {
		/* A nanoseconds field >= 1e9 is invalid; clamp rather than
		 * let it spill into the next second.
		 */
		if (sub >= LS_NS_PER_S)
			sub = LS_NS_PER_S - 1;
		return sec * LS_NS_PER_S + sub;
	}
	/* NTP era 0 ends in 2036: seconds below the 1970 offset can only be
	 * era 1 for a clock that is running now (RFC 5905 section 6).
	 */
	if (sec >= LS_NTP_UNIX_OFFSET)
		sec -= LS_NTP_UNIX_OFFSET;
	else
		sec += (1ULL << 32) - LS_NTP_UNIX_OFFSET;
	return sec * LS_NS_PER_S + ((sub * LS_NS_PER_S + (1ULL << 31)) >> 32);
}

uint16_t
ls_stamp_err_est(bool synced, bool ptp, uint8_t scale, uint8_t mult)
{
	return (uint16_t)((synced ? LS_STAMP_EE_S : 0) | (ptp ? LS_STAMP_EE_Z : 0) |
			  (uint16_t)(scale & 0x3f) << 8 | mult);
}

static void
put_ts(uint8_t *p, uint64_t ns, uint16_t err_est)
{
	if (err_est & LS_STAMP_EE_Z)
		ls_stamp_ts_put_ptp(p, ns);
	else
		ls_stamp_ts_put_ntp(p, ns);
}

static uint64_t
get_ts(const uint8_t *p, uint16_t err_est)
{
	return ls_stamp_ts_get(p, (err_est & LS_STAMP_EE_Z) != 0);
}

/*
 * Both packets open with the same four fields at the same offsets
 * (RFC 8762 4.2.1 and 4.3.1): sequence number, timestamp, error estimate
 * and SSID (RFC 8972). put_head also zeroes the rest of the base packet.
 */
static void
put_head(uint8_t *buf, uint32_t seq, uint64_t ts_ns, uint16_t err_est, uint16_t ssid)
{
	memset(buf, 0, LS_STAMP_BASE_LEN);
	put32(buf + OFF_SEQ, seq);
	put_ts(buf + OFF_TS, ts_ns, err_est);
	put16(buf + OFF_ERR, err_est);
	put16(buf + OFF_SSID, ssid);
}

/* The error estimate first: its Z bit says how to read the timestamp. */
static void
get_head(const uint8_t *buf, uint32_t *seq, uint64_t *ts_ns, uint16_t *err_est,
	 uint16_t *ssid)
{
	*seq = get32(buf + OFF_SEQ);
	*err_est = get16(buf + OFF_ERR);
	*ts_ns = get_ts(buf + OFF_TS, *err_est);
	*ssid = get16(buf + OFF_SSID);
}

int
ls_stamp_encode_sender(uint8_t *buf, size_t cap, const struct ls_stamp_sender *s)
{
	if (cap < LS_STAMP_BASE_LEN)
		return -ENOSPC;
	put_head(buf, s->seq, s->ts_ns, s->err_est, s->ssid);
	return LS_STAMP_BASE_LEN;
}

int
ls_stamp_decode_sender(const uint8_t *buf, size_t len, struct ls_stamp_sender *s)
{
	if (len < LS_STAMP_BASE_LEN)
		return -EMSGSIZE;
	get_head(buf, &s->seq, &s->ts_ns, &s->err_est, &s->ssid);
	return 0;
}

int
ls_stamp_encode_reflector(uint8_t *buf, size_t cap,
			  const struct ls_stamp_reflector *r)
{
	if (cap < LS_STAMP_BASE_LEN)
		return -ENOSPC;
	put_head(buf, r->seq, r->tx_ns, r->err_est, r->ssid);
	put_ts(buf + OFF_RX_TS, r->rx_ns, r->err_est);
	put32(buf + OFF_S_SEQ, r->sender_seq);
	put_ts(buf + OFF_S_TS, r->sender_ts_ns, r->sender_err_est);
	put16(buf + OFF_S_ERR, r->sender_err_est);
	buf[OFF_S_TTL] = r->sender_ttl;
	return LS_STAMP_BASE_LEN;
}

int
ls_stamp_decode_reflector(const uint8_t *buf, size_t len,
			  struct ls_stamp_reflector *r)
{
	if (len < LS_STAMP_BASE_LEN)
		return -EMSGSIZE;
	get_head(buf, &r->seq, &r->tx_ns, &r->err_est, &r->ssid);
	r->rx_ns = get_ts(buf + OFF_RX_TS, r->err_est);
	r->sender_seq = get32(buf + OFF_S_SEQ);
	r->sender_err_est = get16(buf + OFF_S_ERR);
	r->sender_ts_ns = get_ts(buf + OFF_S_TS, r->sender_err_est);
	r->sender_ttl = buf[OFF_S_TTL];
	return 0;
}

int
ls_stamp_reflect_inplace(uint8_t *pkt, size_t len, uint64_t rx_ns,
			 uint64_t tx_ns, uint16_t refl_err_est, uint8_t ttl)
{
	uint8_t seq[4], t1[8], err[2];

	if (len < LS_STAMP_BASE_LEN)
		return -EMSGSIZE;
	/* Save what the sender wrote before the reflector fields overlay it. */
	memcpy(seq, pkt + OFF_SEQ, sizeof(seq));
	memcpy(t1, pkt + OFF_TS, sizeof(t1));
	memcpy(err, pkt + OFF_ERR, sizeof(err));

	/* Stateless reflector: its sequence number is the sender's (4.3.1).
	 * SSID at 14 stays where it is.
	 */
	put_ts(pkt + OFF_TS, tx_ns, refl_err_est);
	put16(pkt + OFF_ERR, refl_err_est);
	put_ts(pkt + OFF_RX_TS, rx_ns, refl_err_est);
	memcpy(pkt + OFF_S_SEQ, seq, sizeof(seq));
	memcpy(pkt + OFF_S_TS, t1, sizeof(t1));
	memcpy(pkt + OFF_S_ERR, err, sizeof(err));
	memset(pkt + OFF_MBZ1, 0, OFF_S_TTL - OFF_MBZ1);
	pkt[OFF_S_TTL] = ttl;
	memset(pkt + OFF_MBZ2, 0, LS_STAMP_BASE_LEN - OFF_MBZ2);
	return 0;
}

void
ls_stamp_put_tx_ts(uint8_t *pkt, uint64_t tx_ns, uint16_t err_est)
{
	put_ts(pkt + OFF_TS, tx_ns, err_est);
}

int
ls_stamp_tlv_put(uint8_t *area, size_t cap, size_t *off, uint8_t flags,
		 uint8_t type, const void *value, uint16_t len)
{
	uint8_t *p;

	if (*off > cap || cap - *off < LS_STAMP_TLV_HDR_LEN + (size_t)len)
		return -ENOSPC;
	p = area + *off;
	p[0] = flags;
	p[1] = type;
	put16(p + 2, len);
	/* No value means zeros: what Extra Padding wants (RFC 8972 4.1). */
	if (value != NULL)
		memcpy(p + LS_STAMP_TLV_HDR_LEN, value, len);
	else
		memset(p + LS_STAMP_TLV_HDR_LEN, 0, len);
	*off += LS_STAMP_TLV_HDR_LEN + len;
	return 0;
}

int
ls_stamp_tlv_put_lockstep(uint8_t *area, size_t cap, size_t *off,
			  const struct ls_stamp_lockstep_tlv *t)
{
	uint8_t v[LS_STAMP_LOCKSTEP_LEN] = { 0 };

	put32(v + LT_MAGIC, LS_STAMP_LOCKSTEP_MAGIC);
	/* Always our version: a caller cannot emit a format we cannot read. */
	v[LT_VERSION] = LT_VERSION_1;
	v[LT_MEMBER] = t->pair_member;
	put16(v + LT_PATH, t->path_id);
	put32(v + LT_NODE, t->node_id);
	put32(v + LT_PAIR, t->pair_id);
	put32(v + LT_SPACING, t->spacing_ns);
	return ls_stamp_tlv_put(area, cap, off, 0, LS_STAMP_TLV_LOCKSTEP, v,
				sizeof(v));
}

int
ls_stamp_tlv_get_lockstep(const struct ls_stamp_tlv *tlv,
			  struct ls_stamp_lockstep_tlv *out)
{
	const uint8_t *v = tlv->value;

	if (tlv->type != LS_STAMP_TLV_LOCKSTEP || tlv->len != LS_STAMP_LOCKSTEP_LEN ||
	    get32(v + LT_MAGIC) != LS_STAMP_LOCKSTEP_MAGIC ||
	    v[LT_VERSION] != LT_VERSION_1)
		return -EBADMSG;
	/* pair_member indexes two-element arrays in the collector, which
	 * takes no single probe (the caller sends those elsewhere). */
	if (v[LT_MEMBER] > 1 && v[LT_MEMBER] != LS_STAMP_MEMBER_SINGLE)
		return -EBADMSG;
	out->version = v[LT_VERSION];
	out->pair_member = v[LT_MEMBER];
	out->path_id = get16(v + LT_PATH);
	out->node_id = get32(v + LT_NODE);
	out->pair_id = get32(v + LT_PAIR);
	out->spacing_ns = get32(v + LT_SPACING);
	return 0;
}

int
ls_stamp_find_lockstep(const uint8_t *area, size_t len,
		       struct ls_stamp_lockstep_tlv *out)
{
	struct ls_stamp_tlv tlv;
	size_t off = 0;
	int rc;

	while ((rc = ls_stamp_tlv_next(area, len, &off, &tlv)) == 1) {
		if (tlv.type == LS_STAMP_TLV_LOCKSTEP)
			return ls_stamp_tlv_get_lockstep(&tlv, out);
	}
	return rc == 0 ? -ENOENT : -EBADMSG;
}

void
ls_stamp_reflect_tlvs(uint8_t *area, size_t len, struct ls_stamp_tlv_result *res)
{
	struct ls_stamp_tlv tlv;
	size_t off = 0;
	int rc;

	memset(res, 0, sizeof(*res));
	res->sync_off = -1;
	while ((rc = ls_stamp_tlv_next(area, len, &off, &tlv)) == 1) {
		res->n_tlvs++;
		if (tlv.type == LS_STAMP_TLV_SYNC) {
			if (tlv.len != LS_STAMP_SYNC_LEN) {
				area[tlv.off] |= LS_STAMP_TLV_M;
				res->n_malformed++;
			} else if (res->sync_off < 0) {
				res->sync_off = (int32_t)(tlv.off + LS_STAMP_TLV_HDR_LEN);
			}
		} else if (tlv.type != LS_STAMP_TLV_EXTRA_PADDING &&
		    tlv.type != LS_STAMP_TLV_LOCKSTEP) {
			area[tlv.off] |= LS_STAMP_TLV_U;
			res->n_unknown++;
		}
	}
	/* The cursor stays on the bad TLV. Even a 1-3 byte tail has its flags
	 * byte, so the sender learns where parsing gave up.
	 */
	if (rc < 0 && off < len) {
		area[off] |= LS_STAMP_TLV_M;
		res->n_tlvs++;
		res->n_malformed++;
	}
}

int
ls_stamp_find_sync(const uint8_t *area, size_t len)
{
	struct ls_stamp_tlv tlv;
	size_t off = 0;
	int rc;

	while ((rc = ls_stamp_tlv_next(area, len, &off, &tlv)) == 1) {
		if (tlv.type != LS_STAMP_TLV_SYNC)
			continue;
		if (tlv.len != LS_STAMP_SYNC_LEN ||
		    (tlv.flags & (LS_STAMP_TLV_U | LS_STAMP_TLV_M)))
			return -EBADMSG;
		return (int)(tlv.off + LS_STAMP_TLV_HDR_LEN);
	}
	return rc < 0 ? -EBADMSG : -ENOENT;
}
