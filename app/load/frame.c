/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's frames (lld_frame.h): a template per flow, filled per
 * frame. The payload after the lockstep-load header is zeros, which add
 * nothing to an Internet checksum, so the L4 checksum of every frame is a
 * sum over its headers alone, whatever its length; the RoCEv2 ICRC is a
 * CRC and needs its pass over the whole frame (lib/roce).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ls_flow.h"
#include "ls_pkt.h"
#include "ls_roce.h"
#include "lld_frame.h"

#define ETH_HLEN 14
#define P_TCP 6
#define P_UDP 17
#define TCP_HLEN 20
#define UDP_HLEN 8

const char *
lld_shape_name(uint8_t shape)
{
	static const char *const names[LLD_SHAPES] = {"roce", "udp", "tcp"};

	return shape < LLD_SHAPES ? names[shape] : "?";
}

uint16_t
lld_frame_hdr_len(uint8_t shape, uint8_t family, uint8_t roce_op)
{
	uint16_t n = ETH_HLEN + (family == LS_AF_INET6 ? 40 : 20);

	if (shape == LLD_TCP)
		return n + TCP_HLEN;
	n += UDP_HLEN;
	if (shape == LLD_ROCE)
		n += LS_ROCE_BTH_LEN + (roce_op == LLD_OP_WRITE_ONLY ? LLD_RETH_LEN : 0);
	return n;
}

uint16_t
lld_frame_min_len(uint8_t shape, uint8_t family, uint8_t roce_op)
{
	uint16_t n = lld_frame_hdr_len(shape, family, roce_op) + LLD_HDR_LEN;

	/* Ethernet's minimum (60 without the FCS) when the headers are shorter */
	n += shape == LLD_ROCE ? LS_ROCE_ICRC_LEN : 0;
	return n < 60 ? 60 : n;
}

uint16_t
lld_frame_fit_len(uint8_t shape, uint8_t family, uint8_t roce_op, uint16_t len)
{
	uint16_t hl = lld_frame_hdr_len(shape, family, roce_op);

	if (shape != LLD_ROCE || len < hl + LS_ROCE_ICRC_LEN)
		return len;
	return (uint16_t)(len - (len - hl - LS_ROCE_ICRC_LEN) % 4);
}

/* IP header, returns the L4 offset. */
static uint8_t
tmpl_ip(const struct lld_flow_spec *s, uint8_t *h, uint8_t proto)
{
	uint8_t *ip = h + ETH_HLEN;

	if (s->src.family == LS_AF_INET) {
		ip[0] = 0x45;
		ip[1] = (uint8_t)(s->dscp << 2 | s->ecn);
		ls_put_be16(ip + 2, (uint16_t)(s->len - ETH_HLEN));
		ls_put_be16(ip + 6, 0x4000);      /* DF, no fragments */
		ip[8] = 64;
		ip[9] = proto;
		memcpy(ip + 12, s->src.a, 4);
		memcpy(ip + 16, s->dst.a, 4);
		{
			uint16_t ck = (uint16_t)~ls_pkt_cksum_raw(ip, 20);

			memcpy(ip + 10, &ck, 2);
		}
		return ETH_HLEN + 20;
	}
	ls_put_be32(ip, 6u << 28 | (uint32_t)s->dscp << 22 | (uint32_t)s->ecn << 20 |
		    (s->flow_label & 0xfffff));
	ls_put_be16(ip + 4, (uint16_t)(s->len - ETH_HLEN - 40));
	ip[6] = proto;
	ip[7] = 64;
	memcpy(ip + 8, s->src.a, 16);
	memcpy(ip + 24, s->dst.a, 16);
	return ETH_HLEN + 40;
}

/* Sum of the pseudo-header (RFC 768 / RFC 8200 8.1) for l4_len bytes. */
static uint32_t
pseudo_sum(const uint8_t *ip, uint8_t family, uint8_t proto, uint16_t l4_len)
{
	uint8_t tail[4] = {0, proto, (uint8_t)(l4_len >> 8), (uint8_t)l4_len};
	uint64_t sum;

	if (family == LS_AF_INET)
		sum = ls_csum_bytes(ip + 12, 8, 0);
	else
		sum = ls_csum_bytes(ip + 8, 32, 0);
	return ls_csum_fold(ls_csum_bytes(tail, 4, sum));
}

static int
tmpl_check(const struct lld_flow_spec *s, char *err, size_t len)
{
	uint16_t min = lld_frame_min_len(s->shape, s->src.family, s->roce_op);

	if (s->shape >= LLD_SHAPES)
		return snprintf(err, len, "unknown shape %u", s->shape), -EINVAL;
	if ((s->src.family != LS_AF_INET && s->src.family != LS_AF_INET6) ||
	    s->dst.family != s->src.family)
		return snprintf(err, len, "source and destination of one IP family"), -EINVAL;
	if (s->len < min || s->len > LLD_LEN_MAX)
		return snprintf(err, len, "%s frame length %u out of range %u..%u",
				lld_shape_name(s->shape), s->len, min, LLD_LEN_MAX), -EINVAL;
	if (s->len != lld_frame_fit_len(s->shape, s->src.family, s->roce_op, s->len))
		return snprintf(err, len, "RoCEv2 frame length %u: IB payload not a multiple of 4 "
				"(%u would be)", s->len,
				lld_frame_fit_len(s->shape, s->src.family, s->roce_op, s->len)),
		       -EINVAL;
	if (s->shape == LLD_ROCE && s->roce_op != LLD_OP_SEND_ONLY &&
	    s->roce_op != LLD_OP_WRITE_ONLY)
		return snprintf(err, len, "RoCEv2 opcode 0x%02x not built", s->roce_op), -EINVAL;
	if (s->qp > LS_ROCE_QPN_MASK || s->flow_label > 0xfffff || s->dscp > 63 || s->ecn > 3)
		return snprintf(err, len, "QP, flow label or DSCP too wide"), -EINVAL;
	return 0;
}

int
lld_frame_tmpl(const struct lld_flow_spec *s, struct lld_tmpl *t, char *err, size_t len)
{
	uint8_t proto = s->shape == LLD_TCP ? P_TCP : P_UDP;
	uint8_t *h = t->hdr, *l4;
	uint16_t l4_len;
	int rc = tmpl_check(s, err, len);

	if (rc < 0)
		return rc;
	memset(t, 0, sizeof(*t));
	memcpy(h, s->dst_mac.b, 6);
	memcpy(h + 6, s->src_mac.b, 6);
	ls_put_be16(h + 12, s->src.family == LS_AF_INET ? 0x0800 : 0x86dd);
	t->l4_off = tmpl_ip(s, h, proto);
	t->len = s->len;
	t->shape = s->shape;
	t->family = s->src.family;
	t->flow = s->flow;
	/* QPs start at a random PSN (IBA 9.7.1.2; NICs draw it): a device that
	 * pairs QPs by PSN must not be handed PSNs that all start at 0 */
	t->psn0 = (s->flow * 2654435761u ^ 0x5bd1e995u) & LS_ROCE_PSN_MASK;
	t->hdr_len = (uint8_t)lld_frame_hdr_len(s->shape, s->src.family, s->roce_op);
	l4 = h + t->l4_off;
	l4_len = (uint16_t)(s->len - t->l4_off);
	ls_put_be16(l4, s->sport);
	ls_put_be16(l4 + 2, s->shape == LLD_ROCE ? LS_ROCE_UDP_PORT : s->dport);
	if (s->shape == LLD_TCP) {
		ls_put_be32(l4 + 8, 1);            /* acknowledgment: a fixed peer */
		l4[12] = TCP_HLEN / 4 << 4;
		l4[13] = 0x18;                  /* ACK | PSH */
		ls_put_be16(l4 + 14, 0xffff);   /* window */
		t->payload_len = (uint16_t)(l4_len - TCP_HLEN);
	} else {
		ls_put_be16(l4 + 4, l4_len);
		t->payload_len = (uint16_t)(l4_len - UDP_HLEN);
	}
	if (s->shape == LLD_ROCE) {
		struct ls_roce_bth bth = {.opcode = s->roce_op, .pkey = 0xffff, .dest_qp = s->qp};
		uint8_t *reth = l4 + UDP_HLEN + LS_ROCE_BTH_LEN;

		ls_roce_bth_put(l4 + UDP_HLEN, LS_ROCE_BTH_LEN, &bth);
		t->payload_len = (uint16_t)(s->len - t->hdr_len - LS_ROCE_ICRC_LEN);
		if (s->roce_op == LLD_OP_WRITE_ONLY) {
			/* a remote buffer per flow; the DMA length is the payload */
			ls_put_be64(reth, (uint64_t)s->flow << 20);
			ls_put_be32(reth + 8, s->flow);
			ls_put_be32(reth + 12, t->payload_len);
		}
	}
	/* RoCEv2 over IPv4 sends no UDP checksum (the ICRC covers it) */
	t->l4_csum = !(s->shape == LLD_ROCE && t->family == LS_AF_INET);
	if (t->l4_csum)
		t->pseudo = pseudo_sum(h + ETH_HLEN, t->family, proto, l4_len);
	return 0;
}

void
lld_frame_write(const struct lld_tmpl *t, uint8_t *f, uint64_t seq, uint64_t tx_tsc,
		uint32_t tag)
{
	uint8_t *p = f + t->hdr_len, *l4 = f + t->l4_off;
	uint64_t sum;

	memcpy(f, t->hdr, t->hdr_len);
	ls_put_be32(p, LLD_MAGIC);
	p[4] = LLD_VERSION;
	p[5] = t->shape;
	p[6] = p[7] = 0;
	ls_put_be32(p + 8, t->flow);
	ls_put_be32(p + 12, tag);
	ls_put_be64(p + 16, seq);
	ls_put_be64(p + 24, tx_tsc);
	memset(p + LLD_HDR_LEN, 0, t->len - t->hdr_len - LLD_HDR_LEN);
	if (t->shape == LLD_TCP)
		ls_put_be32(l4 + 4, (uint32_t)(1 + seq * t->payload_len));
	if (t->shape == LLD_ROCE) {
		uint8_t *psn = l4 + UDP_HLEN + 9;
		uint32_t v = (uint32_t)(seq + t->psn0) & LS_ROCE_PSN_MASK;

		psn[0] = (uint8_t)(v >> 16);
		psn[1] = (uint8_t)(v >> 8);
		psn[2] = (uint8_t)v;
		ls_roce_icrc_set(f + ETH_HLEN, t->len - ETH_HLEN);
	}
	if (!t->l4_csum)
		return;
	/* headers and our header; the zeros after add nothing */
	sum = ls_csum_bytes(l4, t->hdr_len - t->l4_off + LLD_HDR_LEN, t->pseudo);
	if (t->shape == LLD_ROCE)  /* the ICRC is UDP payload, at an even offset */
		sum = ls_csum_bytes(f + t->len - LS_ROCE_ICRC_LEN, LS_ROCE_ICRC_LEN, sum);
	{
		uint16_t ck = (uint16_t)~ls_csum_fold(sum);

		if (ck == 0 && t->shape != LLD_TCP)
			ck = 0xffff;            /* UDP: 0 means none (RFC 768) */
		memcpy(l4 + (t->shape == LLD_TCP ? 16 : 6), &ck, 2);
	}
}

/* Bytes of RoCEv2 extension headers after the BTH, for the opcodes whose
 * payload we may carry (RC and UC SEND and RDMA WRITE, IBA table 35). */
static int
roce_ext_len(uint8_t op)
{
	if (op >> 5 > 1)
		return -1;                      /* not RC or UC */
	switch (op & 0x1f) {
	case 0x00: case 0x01: case 0x02: case 0x04: case 0x07: case 0x08:
		return 0;                       /* SEND, WRITE middle/last */
	case 0x03: case 0x05:
		return 4;                       /* ... with immediate */
	case 0x06: case 0x0a:
		return LLD_RETH_LEN;            /* WRITE first / only */
	case 0x09: case 0x0b:
		return (op & 0x1f) == 0x0b ? LLD_RETH_LEN + 4 : 4;
	default:
		return -1;
	}
}

int
lld_frame_parse(const uint8_t *f, uint32_t len, struct lld_rx *r)
{
	struct ls_flow_pkt pk;
	uint32_t off, end;
	int ext;

	if (ls_flow_parse(f, len, &pk) != LS_FLOW_IP || pk.l4_off == 0)
		return -1;
	end = pk.l3_off + pk.l3_len;
	switch (pk.kind) {
	case LS_FLOW_K_TCP:
		off = pk.l4_off + (uint32_t)(f[pk.l4_off + 12] >> 4) * 4;
		break;
	case LS_FLOW_K_UDP:
		off = pk.l4_off + UDP_HLEN;
		break;
	case LS_FLOW_K_ROCE:
		ext = roce_ext_len(pk.bth_opcode);
		if (ext < 0 || end < LS_ROCE_ICRC_LEN)
			return -1;
		off = pk.bth_off + LS_ROCE_BTH_LEN + (uint32_t)ext;
		end -= LS_ROCE_ICRC_LEN;
		break;
	default:
		return -1;
	}
	if (off + LLD_HDR_LEN > end || off + LLD_HDR_LEN > len ||
	    ls_get_be32(f + off) != LLD_MAGIC || f[off + 4] != LLD_VERSION)
		return -1;
	r->shape = f[off + 5];
	r->flow = ls_get_be32(f + off + 8);
	r->tag = ls_get_be32(f + off + 12);
	r->seq = ls_get_be64(f + off + 16);
	r->tx_tsc = ls_get_be64(f + off + 24);
	r->payload_len = end - off;
	return 0;
}
