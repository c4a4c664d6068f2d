/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STAMP reflector fast path for IPv4 (see ls_reflect.h for the contract).
 *
 * Why it exists: the generic path parses into a 100-byte struct, reflects
 * field by field, then recomputes both checksums over bytes it has just
 * written. On a core that only reflects, that was two thirds of the time per
 * packet. Here the checksums are updated as RFC 1624 describes: the old
 * checksum was verified, so the sum of every word the reflector does not
 * touch is known to be -(old checksum + old words), and only the words that
 * change are added, computed from the values that are about to be written.
 *
 * Word sums of big-endian fields are kept as plain integers and turned into
 * the "as loaded in host order" form used by lib/pkt's sums at the end:
 * RFC 1071 sums are byte-order independent up to one final byte swap.
 */
#include <string.h>

#include <rte_byteorder.h>

#include "ls_pkt.h"
#include "ls_reflect.h"
#include "ls_stamp.h"

#define IP_OFF 14
#define UDP_OFF 34
#define PL_OFF LS_REFLECT_V4_PAYLOAD_OFF

static inline uint16_t
ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline uint16_t
be16(const uint8_t *p)
{
	return rte_be_to_cpu_16(ld16(p));
}

static inline uint32_t
be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return rte_be_to_cpu_32(v);
}

static inline void
st16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline void
put_be32(uint8_t *p, uint32_t v)
{
	v = rte_cpu_to_be_32(v);
	memcpy(p, &v, 4);
}

static inline void
put_be64(uint8_t *p, uint64_t v)
{
	v = rte_cpu_to_be_64(v);
	memcpy(p, &v, 8);
}

/* Sum of the 16-bit words of big-endian values, as integers. */
static inline uint32_t
words32(uint32_t v)
{
	return (v >> 16) + (v & 0xffff);
}

static inline uint32_t
words64(uint64_t v)
{
	return words32((uint32_t)(v >> 32)) + words32((uint32_t)v);
}

/* A big-endian word sum in the form lib/pkt's host-order loads produce. */
static inline uint16_t
as_loaded(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return rte_cpu_to_be_16((uint16_t)s);
}

/* The sources the generic path refuses: unspecified, loopback, multicast
 * and above (ls_addr_v4_martian, as lib/pkt), ours and our subnet's
 * network/broadcast (ls_prefix_bad_source, as lockstepd's port does). */
static inline bool
src_ok(uint32_t src_be, const struct ls_reflect_port *port)
{
	uint32_t s = rte_be_to_cpu_32(src_be);

	if (ls_addr_v4_martian(s))
		return false;
	return !ls_prefix_bad_source_v4(s, rte_be_to_cpu_32(port->ip), port->plen);
}

/* A TLV header (flags 0) as loaded from the wire */
static inline uint32_t
tlv_hdr(uint8_t type, uint16_t len)
{
	return rte_cpu_to_be_32((uint32_t)type << 16 | len);
}

static inline uint32_t
ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The layout of a pair's first probe: the lockstep TLV, then the sync TLV */
enum {
	LAYOUT_ST = LS_STAMP_BASE_LEN + LS_STAMP_TLV_HDR_LEN + LS_STAMP_LOCKSTEP_LEN,
	LAYOUT_SYNC = LAYOUT_ST + LS_STAMP_TLV_HDR_LEN,
	LAYOUT_END = LAYOUT_SYNC + LS_STAMP_SYNC_LEN,
};

/*
 * The two layouts lockstepd's sender puts after the base (the lockstep TLV;
 * then the sync TLV on a pair's first probe), told by their length and
 * headers in two loads instead of a walk; the walk decides the same for
 * them, and for everything else.
 */
static inline bool
lockstep_layout(const uint8_t *pl, uint16_t plen, uint16_t *sync)
{
	if ((plen != LAYOUT_ST && plen != LAYOUT_END) ||
	    ld32(pl + LS_STAMP_BASE_LEN) != tlv_hdr(LS_STAMP_TLV_LOCKSTEP, LS_STAMP_LOCKSTEP_LEN))
		return false;
	if (plen == LAYOUT_ST) {
		*sync = 0;
		return true;
	}
	if (ld32(pl + LAYOUT_ST) != tlv_hdr(LS_STAMP_TLV_SYNC, LS_STAMP_SYNC_LEN))
		return false;
	*sync = LAYOUT_SYNC;
	return true;
}

/*
 * Verify the UDP checksum: the pseudo-header, the UDP header, the base (its
 * sum given) and the rest, with the sync value (at an even offset, so the
 * same words) summed apart and its sum kept for the fill.
 */
static inline __attribute__((always_inline)) bool
udp_sum_ok(const uint8_t *ip, const uint8_t *pl, uint16_t plen, uint16_t sync, uint64_t base,
	   uint16_t *sync_sum)
{
	/* the addresses, then the UDP header right after them */
	uint64_t sum = ls_csum_bytes(ip + 12, 16, 0);

	sum = ls_csum_add(sum, rte_cpu_to_be_16(17));
	sum = ls_csum_add(sum, rte_cpu_to_be_16((uint16_t)(plen + 8)));
	sum = ls_csum_add(sum, base);
	if (sync == 0) {
		sum = ls_csum_bytes(pl + LS_STAMP_BASE_LEN, plen - LS_STAMP_BASE_LEN, sum);
		*sync_sum = 0;
	} else {
		uint64_t v = ls_csum_bytes(pl + sync, LS_STAMP_SYNC_LEN, 0);

		sum = ls_csum_bytes(pl + LS_STAMP_BASE_LEN, sync - LS_STAMP_BASE_LEN, sum);
		sum = ls_csum_add(sum, v);
		sum = ls_csum_bytes(pl + sync + LS_STAMP_SYNC_LEN,
				    plen - sync - LS_STAMP_SYNC_LEN, sum);
		*sync_sum = ls_csum_fold(v);
	}
	return ls_csum_fold(sum) == 0xffff;
}

/* any other layout: one copy of the general sums, out of the hot line */
static __attribute__((noinline)) bool
udp_sum_any(const uint8_t *ip, const uint8_t *pl, uint16_t plen, uint16_t sync, uint64_t base,
	    uint16_t *sync_sum)
{
	return udp_sum_ok(ip, pl, plen, sync, base, sync_sum);
}

bool
ls_reflect_v4_check(const uint8_t *frame, uint32_t len,
		    const struct ls_reflect_port *port, struct ls_reflect_v4 *r)
{
	return ls_reflect_v4_check_l4(frame, len, port, r, false);
}

bool
ls_reflect_v4_check_l4(const uint8_t *frame, uint32_t len,
		       const struct ls_reflect_port *port, struct ls_reflect_v4 *r,
		       bool l4_verified)
{
	const uint8_t *ip = frame + IP_OFF, *uh = frame + UDP_OFF, *pl = frame + PL_OFF;
	struct ls_stamp_tlv tlv;
	uint16_t tlen, plen, sync = 0;
	uint64_t base;
	uint32_t src;
	size_t off = 0;
	int rc;

	if (len < PL_OFF + LS_STAMP_BASE_LEN || memcmp(frame, port->mac, 6) != 0 ||
	    (frame[6] & 1) != 0 || be16(frame + 12) != 0x0800 || ip[0] != 0x45 ||
	    ip[9] != 17)
		return false;
	tlen = be16(ip + 2);
	if (tlen < 20 + 8 + LS_STAMP_BASE_LEN || (uint32_t)IP_OFF + tlen > len ||
	    (be16(ip + 6) & 0x3fff) != 0 || memcmp(ip + 16, &port->ip, 4) != 0)
		return false;
	memcpy(&src, ip + 12, 4);
	if (!src_ok(src, port) || be16(uh + 4) != tlen - 20 ||
	    be16(uh + 2) != port->dst_port || ls_reflect_src_port_bad(be16(uh), port->dst_port) ||
	    ld16(uh + 6) == 0 ||
	    ls_csum_fold(ls_csum_bytes(ip, 20, 0)) != 0xffff)
		return false;
	plen = (uint16_t)(tlen - 28);
	if (lockstep_layout(pl, plen, &sync))
		goto sum;
	/* Only TLVs the reflector copies unchanged stay on this path, and
	 * well-formed sync TLVs at an even offset (the first is filled; the
	 * checksum update works in whole words). */
	while ((rc = ls_stamp_tlv_next(pl + LS_STAMP_BASE_LEN, plen - LS_STAMP_BASE_LEN,
				       &off, &tlv)) == 1) {
		if (tlv.type == LS_STAMP_TLV_SYNC) {
			uint16_t at = (uint16_t)(LS_STAMP_BASE_LEN + tlv.off + LS_STAMP_TLV_HDR_LEN);

			if (tlv.len != LS_STAMP_SYNC_LEN || (sync == 0 && (at & 1)))
				return false;
			if (sync == 0)
				sync = at;
			continue;
		}
		if (tlv.type != LS_STAMP_TLV_EXTRA_PADDING && tlv.type != LS_STAMP_TLV_LOCKSTEP)
			return false;
	}
	if (rc < 0)
		return false;
sum:
	base = ls_csum_bytes(pl, LS_STAMP_BASE_LEN, 0);
	if (l4_verified) {
		/* the NIC summed the datagram: only what apply() and fill need */
		r->sync_sum = sync ? ls_csum_fold(ls_csum_bytes(pl + sync, LS_STAMP_SYNC_LEN, 0)) : 0;
		goto ok;
	}
	/* the commonest layouts with their lengths known (a plain RFC 8762
	 * probe; a pair's first probe): the compiler unrolls every sum */
	if (plen == LS_STAMP_BASE_LEN ? !udp_sum_ok(ip, pl, LS_STAMP_BASE_LEN, 0, base, &r->sync_sum) :
	    plen == LAYOUT_END && sync == LAYOUT_SYNC ?
	    !udp_sum_ok(ip, pl, LAYOUT_END, LAYOUT_SYNC, base, &r->sync_sum) :
	    !udp_sum_any(ip, pl, plen, sync, base, &r->sync_sum))
		return false;
ok:
	r->src = src;
	r->payload_len = plen;
	r->base_sum = ls_csum_fold(base);
	r->sync_off = sync;
	r->ttl = ip[8];
	return true;
}

void
ls_reflect_v4_apply_ts(uint8_t *frame, const struct ls_reflect_v4 *r,
		       const struct ls_reflect_port *port, uint64_t t2,
		       uint16_t refl_err_est, uint8_t reply_ttl)
{
	uint8_t *ip = frame + IP_OFF, *uh = frame + UDP_OFF, *pl = frame + PL_OFF;
	const uint32_t seq = be32(pl), t1_hi = be32(pl + 4), t1_lo = be32(pl + 8);
	const uint16_t ee_s = be16(pl + 12), ssid = be16(pl + 14);
	const uint16_t old_ck = ld16(uh + 6), old_hc = ld16(ip + 10);
	const uint16_t old_ttl_w = ld16(ip + 8);
	const uint16_t new_ttl_w = rte_cpu_to_be_16((uint16_t)(reply_ttl << 8 | 17));
	uint32_t a, b, hc;
	uint16_t ports[2];
	uint64_t part;

	/* New base words with T3 still zero: seq, EE, SSID, T2, sender seq,
	 * T1, sender EE, Ses-Sender TTL in the high byte of word 20. */
	part = (uint16_t)~old_ck;
	part += (uint16_t)~r->base_sum;
	part += as_loaded(2 * words32(seq) + refl_err_est + ssid + words64(t2) +
			  words32(t1_hi) + words32(t1_lo) + ee_s + ((uint32_t)r->ttl << 8));

	memset(pl + 4, 0, 8);                  /* T3: put_t3() */
	st16(pl + 12, rte_cpu_to_be_16(refl_err_est));
	put_be64(pl + 16, t2);                 /* T2 */
	put_be32(pl + 24, seq);                /* Session-Sender sequence */
	put_be32(pl + 28, t1_hi);              /* Session-Sender timestamp */
	put_be32(pl + 32, t1_lo);
	st16(pl + 36, rte_cpu_to_be_16(ee_s));
	memset(pl + 38, 0, 6);                 /* MBZ, Ses-Sender TTL, MBZ */
	pl[40] = r->ttl;

	memcpy(frame, frame + 6, 6);           /* back to the sender's MAC */
	memcpy(frame + 6, port->mac, 6);
	memcpy(&a, ip + 12, 4);
	memcpy(&b, ip + 16, 4);
	memcpy(ip + 12, &b, 4);
	memcpy(ip + 16, &a, 4);
	ip[8] = reply_ttl;
	/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'); swapped addresses and ports
	 * leave every sum unchanged. */
	hc = (uint16_t)~old_hc;
	hc += (uint16_t)~old_ttl_w;
	hc += new_ttl_w;
	st16(ip + 10, (uint16_t)~ls_csum_fold(hc));
	memcpy(ports, uh, 4);
	st16(uh, ports[1]);
	st16(uh + 2, ports[0]);
	/* Park the partial sum, complemented, in the checksum field. */
	st16(uh + 6, (uint16_t)~ls_csum_fold(part));
}

void
ls_reflect_v4_fill(uint8_t *frame, uint16_t off, const uint8_t *value, uint16_t n)
{
	uint8_t *uh = frame + UDP_OFF, *p = frame + PL_OFF + off;
	uint64_t part = (uint16_t)~ld16(uh + 6);

	/* RFC 1624 again: the old words out, the new words in */
	part += (uint16_t)~ls_csum_fold(ls_csum_bytes(p, n, 0));
	part += ls_csum_fold(ls_csum_bytes(value, n, 0));
	memcpy(p, value, n);
	st16(uh + 6, (uint16_t)~ls_csum_fold(part));
}

uint16_t
ls_reflect_sum(const uint8_t *p, uint16_t n)
{
	return ls_csum_fold(ls_csum_bytes(p, n, 0));
}

void
ls_reflect_v4_fill_sums(uint8_t *frame, uint16_t old_sum, uint16_t new_sum)
{
	uint8_t *uh = frame + UDP_OFF;
	uint64_t part = (uint16_t)~ld16(uh + 6);

	part += (uint16_t)~old_sum;
	part += new_sum;
	st16(uh + 6, (uint16_t)~ls_csum_fold(part));
}

void
ls_reflect_v4_put_t3_ts(uint8_t *frame, uint64_t t3)
{
	uint8_t *uh = frame + UDP_OFF, *pl = frame + PL_OFF;
	uint64_t sum = (uint16_t)~ld16(uh + 6);
	uint16_t ck;

	put_be64(pl + 4, t3);
	sum += as_loaded(words64(t3));
	ck = (uint16_t)~ls_csum_fold(sum);
	st16(uh + 6, ck == 0 ? 0xffff : ck); /* RFC 768: 0 means "no checksum" */
}
