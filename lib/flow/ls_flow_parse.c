/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame parsing for the data path: just enough to find a frame's flow, its
 * ECN bits and the fields steering rewrites. Unlike lib/pkt (which checks
 * everything addressed to lockstepd itself) this does not verify checksums:
 * the data path forwards what the host sends and what the fabric delivers,
 * so a frame it cannot make sense of is passed on untouched, never dropped
 * here. Reads stay inside len whatever the frame claims.
 */
#include <string.h>

#include <rte_thash.h>

#include "ls_common.h"
#include "ls_flow.h"

#define ETH_HLEN 14
#define ET_IPV4 0x0800
#define ET_IPV6 0x86dd
#define ET_VLAN 0x8100
#define ET_QINQ 0x88a8
#define P_TCP 6
#define P_UDP 17
#define BTH_LEN 12

/* Fill the L4 part of the key and the RoCEv2 fields. */
static void
parse_l4(const uint8_t *f, uint32_t len, uint32_t l4, uint32_t l3_end,
	 struct ls_flow_pkt *o)
{
	struct ls_flow_key *k = &o->key;

	if (!o->first_frag)
		return;
	if (k->proto == P_TCP && l4 + 20 <= len && l4 + 20 <= l3_end) {
		o->l4_off = (uint16_t)l4;
		memcpy(&k->sport, f + l4, 2);
		memcpy(&k->dport, f + l4 + 2, 2);
		k->qp_label = 0;
		o->kind = LS_FLOW_K_TCP;
	} else if (k->proto == P_UDP && l4 + 8 <= len && l4 + 8 <= l3_end) {
		o->l4_off = (uint16_t)l4;
		memcpy(&k->sport, f + l4, 2);
		memcpy(&k->dport, f + l4 + 2, 2);
		k->qp_label = 0;
		o->kind = LS_FLOW_K_UDP;
		if (ls_get_be16(f + l4 + 2) == LS_FLOW_ROCE_PORT && l4 + 8 + BTH_LEN <= len &&
		    l4 + 8 + BTH_LEN <= l3_end) {
			const uint8_t *bth = f + l4 + 8;

			o->bth_off = (uint16_t)(l4 + 8);
			o->bth_opcode = bth[0];
			k->sport = 0;
			/* destination QP: 24 bits after the reserved byte */
			memcpy(&k->qp_label, bth + 4, 4);
			((uint8_t *)&k->qp_label)[0] = 0;
			o->kind = LS_FLOW_K_ROCE;
		}
	}
}

static int
parse_v4(const uint8_t *f, uint32_t len, uint32_t l3, struct ls_flow_pkt *o)
{
	const uint8_t *ip = f + l3;
	uint32_t ihl, tot;
	uint16_t frag;

	if (l3 + 20 > len)
		return LS_FLOW_ERR_TRUNC;
	ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	tot = ls_get_be16(ip + 2);
	if ((ip[0] >> 4) != 4 || ihl < 20 || tot < ihl)
		return LS_FLOW_ERR_L3;
	if (l3 + ihl > len)
		return LS_FLOW_ERR_TRUNC;
	o->key.family = 4;
	o->key.src[10] = o->key.src[11] = 0xff;
	o->key.dst[10] = o->key.dst[11] = 0xff;
	memcpy(&o->key.src[12], ip + 12, 4);
	memcpy(&o->key.dst[12], ip + 16, 4);
	o->key.proto = ip[9];
	o->dscp = ip[1] >> 2;
	o->ecn = ip[1] & 3;
	o->l3_len = (uint16_t)tot;
	frag = ls_get_be16(ip + 6);
	o->first_frag = (frag & 0x1fff) == 0;
	parse_l4(f, len, l3 + ihl, l3 + tot, o);
	return LS_FLOW_IP;
}

/* IPv6: extension headers are not walked; a next header that is neither
 * TCP nor UDP is an "other" flow keyed by addresses, protocol and label. */
static int
parse_v6(const uint8_t *f, uint32_t len, uint32_t l3, struct ls_flow_pkt *o)
{
	const uint8_t *ip = f + l3;
	uint32_t vtcfl;

	if (l3 + 40 > len)
		return LS_FLOW_ERR_TRUNC;
	if ((ip[0] >> 4) != 6)
		return LS_FLOW_ERR_L3;
	vtcfl = (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];
	o->key.family = 6;
	memcpy(o->key.src, ip + 8, 16);
	memcpy(o->key.dst, ip + 24, 16);
	o->key.proto = ip[6];
	o->dscp = (uint8_t)((vtcfl >> 22) & 0x3f);
	o->ecn = (uint8_t)((vtcfl >> 20) & 3);
	o->label = vtcfl & 0xfffff;
	o->l3_len = (uint16_t)(40 + ls_get_be16(ip + 4));
	o->first_frag = 1;
	o->key.qp_label = __builtin_bswap32(o->label);
	parse_l4(f, len, l3 + 40, l3 + 40 + ls_get_be16(ip + 4), o);
	return LS_FLOW_IP;
}

/* hot: every frame of the data path comes here. Without it one build's
 * LTO judged the function for size and cleared o with rep stos, whose
 * start-up cost was two thirds of it (bench_datapath "mix": 34 cycles a
 * frame, 12 with the vector stores every other build made). */
__attribute__((hot)) int
ls_flow_parse(const uint8_t *f, uint32_t len, struct ls_flow_pkt *o)
{
	uint32_t l3 = ETH_HLEN;
	uint16_t et;

	memset(o, 0, sizeof(*o));
	if (len < ETH_HLEN)
		return LS_FLOW_NOT_IP;
	et = ls_get_be16(f + 12);
	if (et == ET_VLAN || et == ET_QINQ) {
		if (len < ETH_HLEN + 4)
			return LS_FLOW_NOT_IP;
		o->vlan_off = 12;
		o->pcp = f[14] >> 5;
		o->key.vid = __builtin_bswap16(ls_get_be16(f + 14) & 0x0fff);
		et = ls_get_be16(f + 16);
		l3 += 4;
	}
	o->l3_off = (uint16_t)l3;
	if (et == ET_IPV4)
		return parse_v4(f, len, l3, o);
	if (et == ET_IPV6)
		return parse_v6(f, len, l3, o);
	return LS_FLOW_NOT_IP;
}

/* The IP header of an IPv4 or IPv6 frame (one 802.1Q tag), or 0. */
static inline uint32_t
ip_at(const uint8_t *f, uint32_t len, uint16_t *et_out)
{
	uint32_t l3 = ETH_HLEN;
	uint16_t et;

	if (len < ETH_HLEN + 4)
		return 0;
	et = ls_get_be16(f + 12);
	if (et == ET_VLAN || et == ET_QINQ) {
		et = ls_get_be16(f + 16);
		l3 += 4;
	}
	if ((et == ET_IPV4 && len >= l3 + 20) || (et == ET_IPV6 && len >= l3 + 40)) {
		*et_out = et;
		return l3;
	}
	return 0;
}

/* Mixes a 64-bit word (a murmur3 finaliser): every input bit moves the
 * top 32 bits, which pick the lcore. */
static inline uint64_t
spread_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

uint32_t
ls_flow_spread_hash(const uint8_t *f, uint32_t len)
{
	uint16_t et = 0;
	uint32_t l3 = ip_at(f, len, &et);
	uint64_t x;

	if (l3 == 0)
		return 0;
	/* source XOR destination: the same value both ways */
	if (et == ET_IPV4) {
		x = (uint64_t)(ls_get_be32(f + l3 + 12) ^ ls_get_be32(f + l3 + 16)) | 4ULL << 32;
	} else {
		x = ls_get_be64(f + l3 + 8) ^ ls_get_be64(f + l3 + 24);
		x = spread_mix(x) ^ ls_get_be64(f + l3 + 16) ^ ls_get_be64(f + l3 + 32);
	}
	return (uint32_t)(spread_mix(x) >> 32) | 1;
}

/* A key of one 16-bit pattern repeated: a Toeplitz hash with it is the
 * same when source and destination (fields 16-bit aligned) swap. */
const uint8_t ls_flow_rss_key[LS_FLOW_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d,
	0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d,
	0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

uint32_t
ls_flow_rss_hash_key(const uint8_t *f, uint32_t len, const uint8_t *key)
{
	uint32_t tuple[8], n, l3;
	uint16_t et = 0;

	l3 = ip_at(f, len, &et);
	if (l3 == 0)
		return 0;
	/* rte_softrss takes the tuple as host-order words: source, destination */
	n = et == ET_IPV4 ? 1 : 4;
	for (uint32_t i = 0; i < n; i++) {
		tuple[i] = ls_get_be32(f + l3 + (et == ET_IPV4 ? 12 : 8) + 4 * i);
		tuple[n + i] = ls_get_be32(f + l3 + (et == ET_IPV4 ? 16 : 24) + 4 * i);
	}
	return rte_softrss(tuple, 2 * n, key);
}

/* With a key of period 16 every input bit whose position is k mod 16 meets
 * the same 32-bit window of the key, so the Toeplitz hash is that of the
 * XOR of the input's 16-bit words (addresses are 16-bit aligned): 16
 * windows instead of 64 (IPv4) or 256 (IPv6) rte_softrss steps. The unit
 * test holds it equal to rte_softrss with the key. */
uint32_t
ls_flow_rss_hash(const uint8_t *f, uint32_t len)
{
	const uint64_t pat = 0x6d5a6d5a6d5a6d5aULL;
	uint32_t l3, fold = 0, h = 0, off, n;
	uint16_t et = 0;

	l3 = ip_at(f, len, &et);
	if (l3 == 0)
		return 0;
	off = l3 + (et == ET_IPV4 ? 12 : 8);
	n = et == ET_IPV4 ? 8 : 32;           /* source and destination, bytes */
	for (uint32_t i = 0; i < n; i += 2)
		fold ^= ls_get_be16(f + off + i);
	for (unsigned int k = 0; k < 16; k++)
		h ^= (uint32_t)((pat << k) >> 32) & -((fold >> (15 - k)) & 1u);
	return h;
}

void
ls_flow_key_addr(const struct ls_addr *a, uint8_t out[16])
{
	memset(out, 0, 16);
	if (a->family == LS_AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, a->a, 4);
	} else {
		memcpy(out, a->a, 16);
	}
}

uint16_t
ls_flow_reply_hdr(const uint8_t *f, const struct ls_flow_pkt *pk, uint8_t *out,
		  struct ls_addr *src, struct ls_addr *dst)
{
	unsigned int n = pk->key.family == 6 ? 16 : 4, off = pk->key.family == 6 ? 0 : 12;

	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	src->family = dst->family = pk->key.family == 6 ? LS_AF_INET6 : LS_AF_INET;
	memcpy(src->a, pk->key.dst + off, n);
	memcpy(dst->a, pk->key.src + off, n);
	memcpy(out, f + 6, 6);
	memcpy(out + 6, f, 6);
	memcpy(out + 12, f + 12, pk->l3_off - 12u);
	return pk->l3_off;
}
