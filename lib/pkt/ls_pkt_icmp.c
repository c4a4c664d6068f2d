/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICMP errors about UDP datagrams (ls_pkt.h, ls_pkt_icmp_err): what path
 * discovery reads from the routers a TTL-limited probe expired at.
 */
#include <errno.h>
#include <string.h>

#include "ls_pkt.h"

#define ETH_HLEN 14
#define ET_IPV4 0x0800
#define ET_IPV6 0x86dd

static inline uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The quoted datagram at q (qlen bytes present): IP header of family fam,
 * then UDP. */
static int
quoted(const uint8_t *q, uint32_t qlen, uint8_t fam, struct ls_pkt_icmp_err *o)
{
	uint32_t ihl, ulen;
	const uint8_t *u;

	if (fam == LS_AF_INET) {
		if (qlen < 20 || q[0] >> 4 != 4 || q[9] != 17)
			return -EINVAL;
		ihl = (uint32_t)(q[0] & 0xf) * 4;
		if (ihl < 20 || qlen < ihl + 8)
			return -EINVAL;
		o->src.family = o->dst.family = LS_AF_INET;
		memcpy(o->src.a, q + 12, 4);
		memcpy(o->dst.a, q + 16, 4);
		o->ip_id = be16(q + 4);
		o->quoted_ttl = q[8];
	} else {
		/* no extension headers: our probes carry none */
		if (qlen < 40 || q[0] >> 4 != 6 || q[6] != 17)
			return -EINVAL;
		ihl = 40;
		if (qlen < ihl + 8)
			return -EINVAL;
		o->src.family = o->dst.family = LS_AF_INET6;
		memcpy(o->src.a, q + 8, 16);
		memcpy(o->dst.a, q + 24, 16);
		o->ip_id = 0;
		o->quoted_ttl = q[7];
	}
	u = q + ihl;
	o->sport = be16(u);
	o->dport = be16(u + 2);
	ulen = qlen - ihl - 8;
	o->payload_len = (uint16_t)(ulen > 0xffff ? 0xffff : ulen);
	o->payload = ulen > 0 ? u + 8 : NULL;
	return 0;
}

int
ls_pkt_icmp_err(const uint8_t *f, uint32_t len, struct ls_pkt_icmp_err *o)
{
	const uint8_t *ip = f + ETH_HLEN, *icmp;
	uint32_t l3len, hl;

	memset(o, 0, sizeof(*o));
	if (len < ETH_HLEN + 20)
		return -EINVAL;
	l3len = len - ETH_HLEN;
	if (be16(f + 12) == ET_IPV4) {
		if (ip[0] >> 4 != 4 || ip[9] != 1)
			return -EINVAL;
		hl = (uint32_t)(ip[0] & 0xf) * 4;
		/* fragments other than the first hold no ICMP header */
		if (hl < 20 || l3len < hl + 8 || (be16(ip + 6) & 0x1fff) != 0)
			return -EINVAL;
		if (be16(ip + 2) < hl + 8)
			return -EINVAL;
		if (be16(ip + 2) < l3len)
			l3len = be16(ip + 2);
		icmp = ip + hl;
		o->type = icmp[0];
		o->code = icmp[1];
		if (o->type != 11 && o->type != 3)
			return -EINVAL;
		o->time_exceeded = o->type == 11 && o->code == 0;
		o->from.family = LS_AF_INET;
		memcpy(o->from.a, ip + 12, 4);
		return quoted(icmp + 8, l3len - hl - 8, LS_AF_INET, o);
	}
	if (be16(f + 12) == ET_IPV6) {
		if (l3len < 48 || ip[0] >> 4 != 6 || ip[6] != 58)
			return -EINVAL;
		if ((uint32_t)be16(ip + 4) + 40 < l3len)
			l3len = (uint32_t)be16(ip + 4) + 40;
		if (l3len < 48)
			return -EINVAL;
		icmp = ip + 40;
		o->type = icmp[0];
		o->code = icmp[1];
		if (o->type != 3 && o->type != 1)
			return -EINVAL;
		o->time_exceeded = o->type == 3 && o->code == 0;
		o->from.family = LS_AF_INET6;
		memcpy(o->from.a, ip + 8, 16);
		return quoted(icmp + 8, l3len - 48, LS_AF_INET6, o);
	}
	return -EINVAL;
}
