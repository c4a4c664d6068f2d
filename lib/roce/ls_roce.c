/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 BTH, ICRC and CNP (see ls_roce.h for the formats and the algebra).
 *
 * The ICRC is computed in two zlib calls: one over a stack copy of the
 * headers (the 8-byte LRH stand-in, IP, UDP and BTH, at most 88 bytes) in
 * which the variant fields are overwritten with ones, and one straight over
 * the payload in the packet, which needs no masking. Nothing is copied per
 * payload byte, and zlib's crc32() is the table-driven, braided
 * implementation every distribution already tunes and tests.
 *
 * The source-port rewrite never reads the payload: the new ICRC is the old
 * one XOR the linear CRC of the two changed bytes shifted by the bytes that
 * follow them, which depends only on the UDP length. That shift is one
 * carry-less multiplication by x^(8n) mod P (crc32_combine_op); finding the
 * multiplier costs a few more (crc32_combine_gen), which the optional
 * per-lcore cache saves for the handful of lengths a flow uses.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zlib.h>

#include "ls_roce.h"

#define IP4_HDR_MIN 20
#define IP4_HDR_MAX 60
#define IP6_HDR_LEN 40
#define UDP_HDR_LEN 8
#define IPPROTO_UDP_NUM 17
/* Bytes of the CRC input that follow the UDP source port: the rest of the
 * UDP header, BTH and payload, i.e. the UDP length less the port itself
 * and the ICRC.
 */
#define SPORT_TAIL(udp_len) ((uint32_t)(udp_len) - 2 - LS_ROCE_ICRC_LEN)
/* crc32() of two zero bytes: the affine part the linear delta removes. */
#define CRC32_OF_2_ZEROS 0x41d912ffu

static inline void
put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

/* The ICRC travels least significant byte first (see the header). */
static inline uint32_t
get_icrc(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline void
put_icrc(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

int
ls_roce_bth_parse(const uint8_t *buf, uint32_t len, struct ls_roce_bth *bth)
{
	if (buf == NULL || bth == NULL)
		return -EINVAL;
	if (len < LS_ROCE_BTH_LEN)
		return -EMSGSIZE;
	bth->opcode = buf[0];
	bth->se = buf[1] & 0x80;
	bth->migreq = buf[1] & 0x40;
	bth->pad_cnt = (buf[1] >> 4) & 0x3;
	bth->tver = buf[1] & 0xf;
	bth->pkey = ls_get_be16(buf + 2);
	bth->fecn = buf[4] & 0x80;
	bth->becn = buf[4] & 0x40;
	bth->dest_qp = ls_get_be24(buf + 5);
	bth->ack_req = buf[8] & 0x80;
	bth->psn = ls_get_be24(buf + 9);
	return 0;
}

int
ls_roce_bth_put(uint8_t *buf, uint32_t cap, const struct ls_roce_bth *bth)
{
	if (buf == NULL || bth == NULL || bth->pad_cnt > 3 || bth->tver > 15 ||
	    bth->dest_qp > LS_ROCE_QPN_MASK || bth->psn > LS_ROCE_PSN_MASK)
		return -EINVAL;
	if (cap < LS_ROCE_BTH_LEN)
		return -ENOSPC;
	buf[0] = bth->opcode;
	buf[1] = (uint8_t)((bth->se ? 0x80 : 0) | (bth->migreq ? 0x40 : 0) |
			   bth->pad_cnt << 4 | bth->tver);
	ls_put_be16(buf + 2, bth->pkey);
	buf[4] = (uint8_t)((bth->fecn ? 0x80 : 0) | (bth->becn ? 0x40 : 0));
	put24(buf + 5, bth->dest_qp);
	buf[8] = bth->ack_req ? 0x80 : 0;
	put24(buf + 9, bth->psn);
	return LS_ROCE_BTH_LEN;
}

/* IP header: its length, the packet's length and the protocol check. */
static int
locate_ip(const uint8_t *l3, uint32_t len, struct ls_roce_pkt *rp)
{
	uint32_t hl, ip_len;

	if (len < 1)
		return -EMSGSIZE;
	switch (l3[0] >> 4) {
	case 4:
		if (len < IP4_HDR_MIN)
			return -EMSGSIZE;
		hl = (l3[0] & 0xf) * 4u;
		ip_len = ls_get_be16(l3 + 2);
		if (hl < IP4_HDR_MIN || ip_len < hl)
			return -EBADMSG;
		if (hl > len || ip_len > len)
			return -EMSGSIZE;
		if (l3[9] != IPPROTO_UDP_NUM)
			return -EPROTONOSUPPORT;
		/* MF set or a fragment offset: the ICRC covers the whole
		 * datagram, which one fragment does not hold.
		 */
		if (ls_get_be16(l3 + 6) & 0x3fff)
			return -EPROTONOSUPPORT;
		rp->family = LS_AF_INET;
		break;
	case 6:
		if (len < IP6_HDR_LEN)
			return -EMSGSIZE;
		hl = IP6_HDR_LEN;
		ip_len = IP6_HDR_LEN + ls_get_be16(l3 + 4);
		if (ip_len > len)
			return -EMSGSIZE;
		/* RoCEv2 puts UDP right after the fixed header; extension
		 * headers would sit inside the CRC input unmasked and are
		 * not something an HCA sends.
		 */
		if (l3[6] != IPPROTO_UDP_NUM)
			return -EPROTONOSUPPORT;
		rp->family = LS_AF_INET6;
		break;
	default:
		return -EPROTONOSUPPORT;
	}
	rp->udp_off = (uint16_t)hl;
	rp->ip_len = ip_len;
	return 0;
}

int
ls_roce_locate(const uint8_t *l3, uint32_t len, struct ls_roce_pkt *rp)
{
	const uint8_t *udp;
	uint32_t udp_len;
	int rc;

	if (l3 == NULL || rp == NULL)
		return -EINVAL;
	rc = locate_ip(l3, len, rp);
	if (rc < 0)
		return rc;
	if (rp->ip_len - rp->udp_off < UDP_HDR_LEN)
		return -EBADMSG;
	udp = l3 + rp->udp_off;
	if (ls_get_be16(udp + 2) != LS_ROCE_UDP_PORT)
		return -EPROTONOSUPPORT;
	udp_len = ls_get_be16(udp + 4);
	if (udp_len != rp->ip_len - rp->udp_off ||
	    udp_len < UDP_HDR_LEN + LS_ROCE_BTH_LEN + LS_ROCE_ICRC_LEN)
		return -EBADMSG;
	rp->sport = ls_get_be16(udp);
	rp->udp_len = (uint16_t)udp_len;
	rp->bth_off = (uint16_t)(rp->udp_off + UDP_HDR_LEN);
	rp->icrc_off = rp->ip_len - LS_ROCE_ICRC_LEN;
	return 0;
}

/* The ICRC of a located packet: masked header copy, then the payload. */
static uint32_t
icrc_calc(const uint8_t *l3, const struct ls_roce_pkt *rp)
{
	uint8_t hdr[LS_ROCE_LRH_MASK_LEN + IP4_HDR_MAX + UDP_HDR_LEN +
		    LS_ROCE_BTH_LEN];
	uint32_t hl = rp->bth_off + LS_ROCE_BTH_LEN;
	uint8_t *ip = hdr + LS_ROCE_LRH_MASK_LEN;
	uLong crc;

	memset(hdr, 0xff, LS_ROCE_LRH_MASK_LEN);
	memcpy(ip, l3, hl);
	if (rp->family == LS_AF_INET) {
		ip[1] = 0xff;                   /* TOS: DSCP and ECN */
		ip[8] = 0xff;                   /* TTL */
		ip[10] = ip[11] = 0xff;         /* header checksum */
	} else {
		ip[0] |= 0x0f;                  /* traffic class (high nibble) */
		ip[1] = ip[2] = ip[3] = 0xff;   /* traffic class, flow label */
		ip[7] = 0xff;                   /* hop limit */
	}
	ip[rp->udp_off + 6] = ip[rp->udp_off + 7] = 0xff; /* UDP checksum */
	ip[rp->bth_off + 4] = 0xff;             /* FECN, BECN, Resv6 */
	crc = crc32(0L, hdr, LS_ROCE_LRH_MASK_LEN + hl);
	crc = crc32(crc, l3 + hl, rp->icrc_off - hl);
	return (uint32_t)crc;
}

/* The ICRC a packet should carry (computed) or carries (read). */
static int
icrc_of(const uint8_t *l3, uint32_t len, uint32_t *icrc, bool computed)
{
	struct ls_roce_pkt rp;
	int rc = icrc == NULL ? -EINVAL : ls_roce_locate(l3, len, &rp);

	if (rc == 0)
		*icrc = computed ? icrc_calc(l3, &rp) : get_icrc(l3 + rp.icrc_off);
	return rc;
}

int
ls_roce_icrc_compute(const uint8_t *l3, uint32_t len, uint32_t *icrc)
{
	return icrc_of(l3, len, icrc, true);
}

int
ls_roce_icrc_get(const uint8_t *l3, uint32_t len, uint32_t *icrc)
{
	return icrc_of(l3, len, icrc, false);
}

int
ls_roce_icrc_check(const uint8_t *l3, uint32_t len)
{
	struct ls_roce_pkt rp;
	int rc;

	rc = ls_roce_locate(l3, len, &rp);
	if (rc < 0)
		return rc;
	return icrc_calc(l3, &rp) == get_icrc(l3 + rp.icrc_off) ? 0 : -EILSEQ;
}

int
ls_roce_icrc_set(uint8_t *l3, uint32_t len)
{
	struct ls_roce_pkt rp;
	int rc;

	rc = ls_roce_locate(l3, len, &rp);
	if (rc < 0)
		return rc;
	put_icrc(l3 + rp.icrc_off, icrc_calc(l3, &rp));
	return 0;
}

/* The ICRC change a port delta makes: the CRC's linear part of the two
 * delta bytes, shifted over the udp_len - 6 bytes that follow them. */
static uint32_t
sport_change(uint16_t delta, uint16_t udp_len)
{
	uint8_t d[2];
	uint32_t lin;

	ls_put_be16(d, delta);
	/* crc32() of the delta less crc32() of as many zeros */
	lin = (uint32_t)crc32(0L, d, 2) ^ CRC32_OF_2_ZEROS;
	return (uint32_t)crc32_combine_op(lin, 0,
					  crc32_combine_gen((z_off_t)SPORT_TAIL(udp_len)));
}

/* One bit earlier in the message is one more factor x: in the CRC's
 * reflected form a right shift, reduced by the polynomial. */
static inline uint32_t
mulx(uint32_t c)
{
	return c >> 1 ^ (c & 1 ? 0xedb88320u : 0);
}

/* Fill a slot's columns: port bit 7 is the last bit of the two bytes the
 * CRC reads (byte 1, most significant bit last in reflected order), bit 0
 * the eighth from last, bit 15 the ninth and bit 8 the first. One
 * multiplication for the last, a shift for each one before it. */
static void
fill_columns(uint32_t col[16], uint16_t udp_len)
{
	uint32_t c = sport_change(1u << 7, udp_len);

	for (int p = 15; p >= 0; p--) {
		col[p >= 8 ? p - 8 : p + 8] = c;
		c = mulx(c);
	}
}

uint32_t
ls_roce_icrc_update_sport(uint32_t icrc, uint16_t old_sport,
			  uint16_t new_sport, uint16_t udp_len,
			  struct ls_roce_shift_cache *cache)
{
	uint32_t d = (uint32_t)(old_sport ^ new_sport);
	const uint32_t *col;
	unsigned int slot;

	if (d == 0)
		return icrc;
	if (cache == NULL)
		return icrc ^ sport_change((uint16_t)d, udp_len);
	/* Lengths of one flow differ in their low bits (ACKs vs full
	 * segments); fold in the next nibble so 4 KB multiples spread too.
	 */
	slot = (udp_len ^ udp_len >> 4 ^ udp_len >> 8) % LS_ROCE_SHIFT_CACHE_SIZE;
	col = cache->col[slot];
	if (cache->len[slot] != udp_len) {
		fill_columns(cache->col[slot], udp_len);
		cache->len[slot] = udp_len;
	}
	for (unsigned int j = 0; j < 16; j++)
		icrc ^= col[j] & -(d >> j & 1);
	return icrc;
}

/* Add with end-around carry, folded to 16 bits. */
static uint16_t
ones_add(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Ones' complement sum of the port and ICRC as they sit in the datagram:
 * a byte at an even offset is a word's high byte, at an odd one its low.
 */
static uint16_t
changed_sum(uint16_t sport, const uint8_t icrc[4], uint32_t icrc_pos)
{
	uint32_t sum = sport;

	for (uint32_t i = 0; i < 4; i++)
		sum += (icrc_pos + i) & 1 ? icrc[i] : (uint32_t)icrc[i] << 8;
	return ones_add(sum);
}

/* The rewrite itself, on a located packet whose ICRC bytes are at icrc_p
 * (in place, or a copy the caller scatters back). */
static void
set_sport(uint8_t *l3, const struct ls_roce_pkt *rp, uint8_t *icrc_p, uint16_t sport,
	  struct ls_roce_shift_cache *cache)
{
	uint8_t *udp = l3 + rp->udp_off, old_icrc[4];
	uint16_t ck, m_old;

	memcpy(old_icrc, icrc_p, 4);
	put_icrc(icrc_p, ls_roce_icrc_update_sport(get_icrc(icrc_p), rp->sport,
						   sport, rp->udp_len, cache));
	ls_put_be16(udp, sport);
	/* The UDP checksum covers the port and the ICRC (it is UDP payload),
	 * so both changes go into an RFC 1624 update: HC' = ~(~HC + ~m + m').
	 * Zero means "no checksum" (IPv4) or a sender that relies on the
	 * ICRC (RoCEv2 over IPv6): leave it so. A computed zero goes out as
	 * 0xffff, the other zero of ones' complement (RFC 768).
	 */
	ck = ls_get_be16(udp + 6);
	if (ck != 0) {
		m_old = changed_sum(rp->sport, old_icrc, rp->icrc_off - rp->udp_off);
		ck = (uint16_t)~ones_add((uint32_t)(uint16_t)~ck +
					 (uint16_t)~m_old +
					 changed_sum(sport, icrc_p,
						     rp->icrc_off - rp->udp_off));
		ls_put_be16(udp + 6, ck == 0 ? 0xffff : ck);
	}
}

int
ls_roce_set_sport(uint8_t *l3, uint32_t len, uint16_t sport,
		  struct ls_roce_shift_cache *cache)
{
	struct ls_roce_pkt rp;
	int rc;

	rc = ls_roce_locate(l3, len, &rp);
	if (rc < 0)
		return rc;
	if (rp.sport != sport)
		set_sport(l3, &rp, l3 + rp.icrc_off, sport, cache);
	return 0;
}

int
ls_roce_set_sport_seg(uint8_t *l3, uint32_t hdr_len, uint32_t len, uint8_t icrc[4],
		      uint16_t sport, struct ls_roce_shift_cache *cache)
{
	struct ls_roce_pkt rp;
	int rc;

	/* every header byte locate reads (IPv4 options included) is in hdr_len */
	if (l3 == NULL || icrc == NULL || hdr_len > len || hdr_len < LS_ROCE_SEG_HDR_MIN)
		return -EMSGSIZE;
	rc = ls_roce_locate(l3, len, &rp);
	if (rc < 0)
		return rc;
	if (rp.sport != sport)
		set_sport(l3, &rp, icrc, sport, cache);
	return 0;
}

/* Ones' complement sum of 16-bit big-endian words, not folded. */
static uint32_t
sum16(const uint8_t *p, uint32_t n, uint32_t sum)
{
	for (uint32_t i = 0; i + 1 < n; i += 2)
		sum += ls_get_be16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	return (uint16_t)~ones_add(sum);
}

/* A RoCEv2 packet of the NIC-generated kind (CNP, ACK): IP, UDP, the BTH,
 * ext_len bytes after it (ext, or zeros), the ICRC. */
static int
ctl_build(uint8_t *buf, uint32_t cap, const struct ls_roce_cnp_params *p,
	  const struct ls_roce_bth *bthp, const uint8_t *ext, uint32_t ext_len)
{
	const struct ls_roce_bth bth = *bthp;
	uint8_t tos, ttl, *udp;
	uint32_t hl, n;
	int rc;

	if (buf == NULL || p == NULL || p->src.family != p->dst.family ||
	    (p->src.family != LS_AF_INET && p->src.family != LS_AF_INET6) ||
	    p->dscp > 63 || p->ecn > 3 || p->dest_qp > LS_ROCE_QPN_MASK ||
	    p->flow_label > 0xfffff)
		return -EINVAL;
	n = (p->src.family == LS_AF_INET ? IP4_HDR_MIN : IP6_HDR_LEN) + UDP_HDR_LEN +
	    LS_ROCE_BTH_LEN + ext_len + LS_ROCE_ICRC_LEN;
	if (cap < n)
		return -ENOSPC;
	tos = (uint8_t)(p->dscp << 2 | p->ecn);
	ttl = p->ttl ? p->ttl : 64;
	memset(buf, 0, n);
	if (p->src.family == LS_AF_INET) {
		hl = IP4_HDR_MIN;
		buf[0] = 0x45;
		buf[1] = tos;
		ls_put_be16(buf + 2, (uint16_t)n);
		ls_put_be16(buf + 4, p->ip_id);
		ls_put_be16(buf + 6, 0x4000);         /* DF: RoCE is never fragmented */
		buf[8] = ttl;
		buf[9] = IPPROTO_UDP_NUM;
		memcpy(buf + 12, p->src.a, 4);
		memcpy(buf + 16, p->dst.a, 4);
		ls_put_be16(buf + 10, fold(sum16(buf, hl, 0)));
	} else {
		hl = IP6_HDR_LEN;
		buf[0] = (uint8_t)(0x60 | tos >> 4);
		buf[1] = (uint8_t)(tos << 4 | p->flow_label >> 16);
		ls_put_be16(buf + 2, (uint16_t)p->flow_label);
		ls_put_be16(buf + 4, (uint16_t)(n - hl));
		buf[6] = IPPROTO_UDP_NUM;
		buf[7] = ttl;
		memcpy(buf + 8, p->src.a, 16);
		memcpy(buf + 24, p->dst.a, 16);
	}
	udp = buf + hl;
	ls_put_be16(udp, p->sport);
	ls_put_be16(udp + 2, LS_ROCE_UDP_PORT);
	ls_put_be16(udp + 4, (uint16_t)(n - hl));
	rc = ls_roce_bth_put(udp + UDP_HDR_LEN, LS_ROCE_BTH_LEN, &bth);
	if (rc < 0)
		return rc;
	if (ext != NULL)
		memcpy(udp + UDP_HDR_LEN + LS_ROCE_BTH_LEN, ext, ext_len);
	rc = ls_roce_icrc_set(buf, n);
	if (rc < 0)
		return rc;
	if (p->src.family == LS_AF_INET6) {
		/* Pseudo-header (RFC 8200 section 8.1) + UDP datagram; the
		 * ICRC is in it, so this comes last. UDP's checksum is masked
		 * in the ICRC, so the order does not matter the other way.
		 */
		uint32_t sum = sum16(buf + 8, 32, 0);
		uint16_t ck;

		sum += n - hl;
		sum += IPPROTO_UDP_NUM;
		ck = fold(sum16(udp, n - hl, sum));
		ls_put_be16(udp + 6, ck == 0 ? 0xffff : ck);
	}
	return (int)n;
}

int
ls_roce_cnp_build(uint8_t *buf, uint32_t cap, const struct ls_roce_cnp_params *p)
{
	const struct ls_roce_bth bth = {
		.opcode = LS_ROCE_OPCODE_CNP, .pkey = p ? p->pkey : 0, .becn = true,
		.dest_qp = p ? p->dest_qp : 0,
	};

	/* the 16 reserved bytes after the BTH are zeros */
	return ctl_build(buf, cap, p, &bth, NULL, 16);
}

int
ls_roce_ack_build(uint8_t *buf, uint32_t cap, const struct ls_roce_cnp_params *p,
		  uint32_t psn, uint32_t msn)
{
	const struct ls_roce_bth bth = {
		.opcode = LS_ROCE_OPCODE_RC_ACK, .pkey = p ? p->pkey : 0,
		.dest_qp = p ? p->dest_qp : 0, .psn = psn,
	};
	uint8_t aeth[LS_ROCE_AETH_LEN];

	if (psn > LS_ROCE_PSN_MASK || msn > LS_ROCE_PSN_MASK)
		return -EINVAL;
	/* syndrome 0x1f: ACK with an unlimited credit count (IBA 9.7.5.1) */
	ls_put_be32(aeth, 0x1fu << 24 | msn);
	return ctl_build(buf, cap, p, &bth, aeth, sizeof(aeth));
}
