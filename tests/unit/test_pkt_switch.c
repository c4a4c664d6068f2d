/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pkt tests, the switch helpers lockstep-fabric uses: TTL decrement
 * with incremental checksums (checked against a full recompute for every
 * checksum value), ECN CE marking, and ICMP/ICMPv6 Time Exceeded.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <rte_ip.h>

#include "test_pkt.h"

/* ---- switch helpers: TTL, ECN, Time Exceeded ------------------------- */

/* A random IPv4 header without options; its checksum is not set yet. */
static void
rand_ipv4_hdr(uint8_t *ip)
{
	for (int i = 0; i < 20; i++)
		ip[i] = (uint8_t)rnd();
	ip[0] = 0x45;
}

static void
ipv4_set_cksum(uint8_t *ip)
{
	uint16_t ck;

	ip[10] = ip[11] = 0;
	ck = (uint16_t)~ls_pkt_cksum_raw(ip, 20);
	memcpy(ip + 10, &ck, 2);
}

/* The checksum a full recomputation would give: the incremental update
 * must produce exactly this, not just something that verifies. */
static uint16_t
ipv4_full_cksum(const uint8_t *ip)
{
	uint8_t tmp[20];

	memcpy(tmp, ip, 20);
	tmp[10] = tmp[11] = 0;
	return (uint16_t)~ls_pkt_cksum_raw(tmp, 20);
}

START_TEST(test_ttl_dec4)
{
	uint8_t ip[20], before[20], buf[256];
	struct ls_pkt_info pi;
	int n;

	for (int iter = 0; iter < 20000; iter++) {
		uint8_t ttl = (uint8_t)(iter < 3 ? (uint32_t)iter : rnd());
		uint16_t ck;
		uint8_t r;

		rand_ipv4_hdr(ip);
		ip[8] = ttl;
		ipv4_set_cksum(ip);
		memcpy(before, ip, 20);

		r = ls_pkt_ttl_dec(ip, LS_AF_INET);
		if (ttl == 0) {
			ck_assert_uint_eq(r, 0);
			ck_assert_mem_eq(ip, before, 20);
			continue;
		}
		ck_assert_uint_eq(r, ttl - 1);
		ck_assert_uint_eq(ip[8], ttl - 1);
		ck_assert_msg(ls_pkt_cksum_raw(ip, 20) == 0xffff,
			      "iter %d ttl %u", iter, ttl);
		memcpy(&ck, ip + 10, 2);
		ck_assert_uint_eq(ck, ipv4_full_cksum(ip));
		/* nothing but TTL and checksum moved */
		ck_assert_mem_eq(ip, before, 8);
		ck_assert_uint_eq(ip[9], before[9]);
		ck_assert_mem_eq(ip + 12, before + 12, 8);
	}

	/* A real probe goes down to 0 and parses (header checksum checked)
	 * at every step; at 0 it stays 0. */
	n = build_probe(buf, sizeof(buf), LS_AF_INET, 44);
	for (int t = 62; t >= 0; t--) {
		ck_assert_uint_eq(ls_pkt_ttl_dec(buf + 14, LS_AF_INET), t);
		ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
		ck_assert_uint_eq(pi.ttl, t);
	}
	ck_assert_uint_eq(ls_pkt_ttl_dec(buf + 14, LS_AF_INET), 0);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
	ck_assert_uint_eq(pi.ttl, 0);
}
END_TEST

/* The inline IPv4 TTL decrement against RFC 1624 eqn. 3 computed the long
 * way, for every checksum value (the 0x0000/0xffff corner included) and
 * every TTL it may see. */
START_TEST(test_ttl_dec4_every_cksum)
{
	for (uint32_t hc = 0; hc <= 0xffff; hc++) {
		for (uint32_t ttl = 1; ttl <= 255; ttl += (hc & 0xff) == 0 ? 1 : 127) {
			uint8_t ip[20] = { 0x45 };
			uint32_t old = ttl << 8 | 17, new = (ttl - 1) << 8 | 17, sum;

			ip[8] = (uint8_t)ttl;
			ip[9] = 17;
			ip[10] = (uint8_t)(hc >> 8);
			ip[11] = (uint8_t)hc;
			sum = (~hc & 0xffff) + (~old & 0xffff) + new;
			sum = (sum & 0xffff) + (sum >> 16);
			sum = (sum & 0xffff) + (sum >> 16);
			sum = ~sum & 0xffff;
			ck_assert_uint_eq(ls_pkt_ttl_dec4(ip), ttl - 1);
			ck_assert_uint_eq(ip[8], ttl - 1);
			ck_assert_msg((uint32_t)(ip[10] << 8 | ip[11]) == sum,
				      "hc %04x ttl %u: %02x%02x, want %04x", hc, ttl, ip[10],
				      ip[11], sum);
		}
	}
}
END_TEST

START_TEST(test_ttl_dec6)
{
	static const uint8_t hops[] = { 0, 1, 2, 64, 255 };
	uint8_t buf[256], before[256];
	struct ls_pkt_info pi;
	int n = build_probe(buf, sizeof(buf), LS_AF_INET6, 44);

	for (unsigned int i = 0; i < LS_ARRAY_SIZE(hops); i++) {
		uint8_t h = hops[i];

		buf[14 + 7] = h;
		memcpy(before, buf, n);
		ck_assert_uint_eq(ls_pkt_ttl_dec(buf + 14, LS_AF_INET6),
				  h ? h - 1 : 0);
		ck_assert_uint_eq(buf[14 + 7], h ? h - 1 : 0);
		/* no IPv6 header checksum; the rest is untouched */
		ck_assert_mem_eq(buf, before, 14 + 7);
		ck_assert_mem_eq(buf + 14 + 8, before + 14 + 8, n - 14 - 8);
		/* the hop limit is not in the UDP pseudo header */
		ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
		ck_assert_uint_eq(pi.ttl, h ? h - 1 : 0);
	}
}
END_TEST

START_TEST(test_set_ce4)
{
	uint8_t ip[20], before[20], buf[256];
	struct ls_pkt_info pi;
	int n;

	for (int iter = 0; iter < 20000; iter++) {
		uint8_t ecn = (uint8_t)(iter & 3);
		uint16_t ck;
		bool r;

		rand_ipv4_hdr(ip);
		ip[1] = (uint8_t)((ip[1] & ~LS_ECN_MASK) | ecn);
		ipv4_set_cksum(ip);
		memcpy(before, ip, 20);

		r = ls_pkt_set_ce(ip, LS_AF_INET);
		if (ecn == LS_ECN_NOT_ECT) {
			ck_assert(!r);
			ck_assert_mem_eq(ip, before, 20);
			continue;
		}
		ck_assert(r);
		ck_assert_uint_eq(ip[1], before[1] | LS_ECN_CE);
		ck_assert_msg(ls_pkt_cksum_raw(ip, 20) == 0xffff, "iter %d", iter);
		memcpy(&ck, ip + 10, 2);
		ck_assert_uint_eq(ck, ipv4_full_cksum(ip));
		ck_assert_uint_eq(ip[0], before[0]);
		ck_assert_mem_eq(ip + 2, before + 2, 8);
		ck_assert_mem_eq(ip + 12, before + 12, 8);
		if (ecn == LS_ECN_CE)
			ck_assert_mem_eq(ip, before, 20);
	}

	/* DSCP survives and the marked probe still parses. */
	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		struct ls_pkt_udp_hdr h = udp_hdr(LS_AF_INET);

		h.tos = (uint8_t)(0xb8 | ecn);
		n = ls_pkt_build_udp(buf, sizeof(buf), &h, NULL, 0);
		ck_assert_int_eq(ls_pkt_set_ce(buf + 14, LS_AF_INET), ecn != 0);
		ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
		ck_assert_uint_eq(pi.tos, ecn ? 0xbb : 0xb8);
	}
}
END_TEST

START_TEST(test_set_ce6)
{
	static const uint32_t flows[] = { 0, 0xfffff, 0xabcde, 0x0f0f0 };
	uint8_t buf[256], before[256];
	struct ls_pkt_info pi;

	for (unsigned int f = 0; f < LS_ARRAY_SIZE(flows); f++) {
		for (uint8_t ecn = 0; ecn < 4; ecn++) {
			struct ls_pkt_udp_hdr h = udp_hdr(LS_AF_INET6);
			uint8_t dscp = (uint8_t)(rnd() & 0xfc);
			int n;

			h.tos = (uint8_t)(dscp | ecn);
			h.flow_label = flows[f];
			n = ls_pkt_build_udp(buf, sizeof(buf), &h, NULL, 8);
			memcpy(before, buf, n);
			ck_assert_int_eq(ls_pkt_set_ce(buf + 14, LS_AF_INET6),
					 ecn != 0);
			/* only the ECN bits (0x30 of IPv6 byte 1) may change */
			for (int i = 0; i < n; i++)
				ck_assert_msg((buf[i] ^ before[i]) ==
					      (i == 15 && ecn ? (~before[i] & 0x30) : 0),
					      "byte %d ecn %u", i, ecn);
			ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
			ck_assert_uint_eq(pi.tos, ecn ? (dscp | LS_ECN_CE) : dscp);
			ck_assert_uint_eq(pi.flow_label, flows[f]);
		}
	}
}
END_TEST

/* The size limits and refusals of an IPv4 Time Exceeded. */
static void
time_exceeded4_limits(void)
{
	struct ls_addr router = addr("192.0.2.254");
	struct ls_addr router6 = addr("2001:db8::fe");
	static uint8_t orig[1600], out[1600];
	const uint8_t *ip = out + 14, *icmp = out + 34;
	struct ls_pkt_info pi;
	int n, rc;

	/* a long original: the whole reply stops at 576 bytes of IP */
	n = build_probe(orig, sizeof(orig), LS_AF_INET, 1400 - 28);
	ck_assert_int_eq(n, 14 + 1400);
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, 1400, 1);
	ck_assert_int_eq(rc, 14 + 576);
	ck_assert_uint_eq((ip[2] << 8) | ip[3], 576);
	ck_assert_uint_eq(ip[8], 1);
	ck_assert_uint_eq(ls_pkt_cksum_raw(ip, 20), 0xffff);
	ck_assert_uint_eq(ls_pkt_cksum_raw(icmp, 576 - 20), 0xffff);
	ck_assert_mem_eq(icmp + 8, orig + 14, 576 - 28);
	ck_assert_int_eq(parse_exact(out, rc, true, &pi), LS_PKT_OTHER);
	/* exactly enough room, and one byte short */
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, 14 + 576, &mac_b, &mac_a,
						    &router, orig + 14, 1400, 1),
			 14 + 576);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, 14 + 575, &mac_b, &mac_a,
						    &router, orig + 14, 1400, 1),
			 -ENOSPC);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, 10, &mac_b, &mac_a,
						    &router, orig + 14, 1400, 1),
			 -ENOSPC);

	/* not an IPv4 header of the router's family */
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router, orig + 14, 19, 64),
			 -EINVAL);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router6, orig + 14, 1400, 64),
			 -EINVAL);
	orig[14] = 0x65;
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router, orig + 14, 1400, 64),
			 -EINVAL);
	router.family = 0;
	orig[14] = 0x45;
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router, orig + 14, 1400, 64),
			 -EINVAL);
}

START_TEST(test_time_exceeded4)
{
	struct ls_addr router = addr("192.0.2.254");
	struct ls_addr probe_src = addr("10.0.0.1");
	static uint8_t orig[1600], out[1600], inplace[1600];
	const uint8_t *ip = out + 14, *icmp = out + 34;
	struct ls_pkt_info pi;
	int n, olen, rc;

	/* ordinary probe: quoted whole */
	n = build_probe(orig, sizeof(orig), LS_AF_INET, 44);
	olen = n - 14;
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, olen, 64);
	ck_assert_int_eq(rc, 14 + 20 + 8 + olen);
	ck_assert_int_eq(parse_exact(out, rc, true, &pi), LS_PKT_OTHER);
	ck_assert_uint_eq(pi.ether_type, 0x0800);
	ck_assert_mem_eq(pi.dst_mac.b, mac_a.b, 6);
	ck_assert_mem_eq(pi.src_mac.b, mac_b.b, 6);
	ck_assert(ls_addr_eq(&pi.src, &router));
	ck_assert(ls_addr_eq(&pi.dst, &probe_src));
	ck_assert_uint_eq(pi.ttl, 64);
	ck_assert_uint_eq(ip[0], 0x45);
	ck_assert_uint_eq(ip[1], 0);
	ck_assert_uint_eq((ip[2] << 8) | ip[3], rc - 14);
	ck_assert_uint_eq(ip[4] | ip[5] | ip[6] | ip[7], 0); /* ID 0, no DF */
	ck_assert_uint_eq(ip[9], 1);
	ck_assert_uint_eq(ls_pkt_cksum_raw(ip, 20), 0xffff);
	ck_assert_uint_eq(icmp[0], 11);
	ck_assert_uint_eq(icmp[1], 0);
	ck_assert_uint_eq(icmp[4] | icmp[5] | icmp[6] | icmp[7], 0);
	ck_assert_uint_eq(ls_pkt_cksum_raw(icmp, rc - 34), 0xffff);
	ck_assert_mem_eq(icmp + 8, orig + 14, olen);

	/* built over the original itself (a switch reusing the mbuf) */
	memcpy(inplace, orig, n);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(inplace, sizeof(inplace),
						    &mac_b, &mac_a, &router,
						    inplace + 14, olen, 64), rc);
	ck_assert_mem_eq(inplace, out, rc);

	/* Ethernet padding after the datagram is not quoted */
	n = build_probe(orig, sizeof(orig), LS_AF_INET, 0);
	memset(orig + n, 0xee, 60 - n);
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, 60 - 14, 64);
	ck_assert_int_eq(rc, 14 + 20 + 8 + 28);
	ck_assert_uint_eq(ls_pkt_cksum_raw(icmp, rc - 34), 0xffff);
	ck_assert_mem_eq(icmp + 8, orig + 14, 28);

	/* a truncated original: the total length is trusted only up to orig_len */
	n = build_probe(orig, sizeof(orig), LS_AF_INET, 44);
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, 30, 64);
	ck_assert_int_eq(rc, 14 + 20 + 8 + 30);
	ck_assert_mem_eq(icmp + 8, orig + 14, 30);
	ck_assert_uint_eq(ls_pkt_cksum_raw(icmp, rc - 34), 0xffff);
	/* a total length below a header's size does not shrink the quote */
	orig[16] = 0;
	orig[17] = 8;
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, n - 14, 64);
	ck_assert_int_eq(rc, n + 28);

	time_exceeded4_limits();
}
END_TEST

/* ICMPv6 checksum by hand (RFC 4443 2.3, RFC 8200 8.1 pseudo header), so
 * the test does not lean on the same helper as the code under test. */
static uint16_t
icmp6_sum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	uint32_t sum = 0;

	for (int i = 8; i < 40; i += 2)
		sum += (uint32_t)(ip6[i] << 8 | ip6[i + 1]);
	sum += len >> 16;
	sum += len & 0xffff;
	sum += 58;
	for (uint32_t i = 0; i < len; i += 2)
		sum += (uint32_t)icmp[i] << 8 | (i + 1 < len ? icmp[i + 1] : 0u);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

START_TEST(test_time_exceeded6)
{
	struct ls_addr router = addr("2001:db8:ff::1");
	struct ls_addr router4 = addr("192.0.2.254");
	struct ls_addr probe_src = addr("2001:db8::1");
	static uint8_t orig[1600], out[1600], inplace[1600];
	const uint8_t *ip = out + 14, *icmp = out + 54;
	struct ls_pkt_info pi;
	int n, olen, rc;

	n = build_probe(orig, sizeof(orig), LS_AF_INET6, 44);
	olen = n - 14;
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, olen, 255);
	ck_assert_int_eq(rc, 14 + 40 + 8 + olen);
	ck_assert_int_eq(parse_exact(out, rc, true, &pi), LS_PKT_OTHER);
	ck_assert_uint_eq(pi.ether_type, 0x86dd);
	ck_assert_mem_eq(pi.dst_mac.b, mac_a.b, 6);
	ck_assert_mem_eq(pi.src_mac.b, mac_b.b, 6);
	ck_assert(ls_addr_eq(&pi.src, &router));
	ck_assert(ls_addr_eq(&pi.dst, &probe_src));
	ck_assert_uint_eq(pi.ttl, 255);
	ck_assert_uint_eq(pi.tos, 0);
	ck_assert_uint_eq(pi.flow_label, 0);
	ck_assert_uint_eq(ip[6], 58);
	ck_assert_uint_eq((ip[4] << 8) | ip[5], rc - 54);
	ck_assert_uint_eq(icmp[0], 3);
	ck_assert_uint_eq(icmp[1], 0);
	ck_assert_uint_eq(icmp[4] | icmp[5] | icmp[6] | icmp[7], 0);
	ck_assert_uint_eq(icmp6_sum(ip, icmp, rc - 54), 0xffff);
	ck_assert_int_eq(rte_ipv6_udptcp_cksum_verify(
		(const struct rte_ipv6_hdr *)ip, icmp), 0);
	ck_assert_mem_eq(icmp + 8, orig + 14, olen);

	memcpy(inplace, orig, n);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(inplace, sizeof(inplace),
						    &mac_b, &mac_a, &router,
						    inplace + 14, olen, 255), rc);
	ck_assert_mem_eq(inplace, out, rc);

	/* padding after the payload length is not quoted */
	n = build_probe(orig, sizeof(orig), LS_AF_INET6, 0);
	memset(orig + n, 0xee, 8);
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, n - 14 + 8, 255);
	ck_assert_int_eq(rc, 14 + 40 + 8 + 48);
	ck_assert_uint_eq(icmp6_sum(ip, icmp, rc - 54), 0xffff);
	ck_assert_mem_eq(icmp + 8, orig + 14, 48);

	/* truncated original: quote what there is */
	n = build_probe(orig, sizeof(orig), LS_AF_INET6, 44);
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, 41, 255);
	ck_assert_int_eq(rc, 14 + 40 + 8 + 41);
	ck_assert_uint_eq(icmp6_sum(ip, icmp, rc - 54), 0xffff);
	ck_assert_mem_eq(icmp + 8, orig + 14, 41);

	/* a long original: the reply stops at 1280 bytes of IPv6 */
	n = build_probe(orig, sizeof(orig), LS_AF_INET6, 1400);
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, n - 14, 255);
	ck_assert_int_eq(rc, 14 + 1280);
	ck_assert_uint_eq((ip[4] << 8) | ip[5], 1280 - 40);
	ck_assert_uint_eq(icmp6_sum(ip, icmp, 1280 - 40), 0xffff);
	ck_assert_int_eq(rte_ipv6_udptcp_cksum_verify(
		(const struct rte_ipv6_hdr *)ip, icmp), 0);
	ck_assert_mem_eq(icmp + 8, orig + 14, 1280 - 48);
	ck_assert_int_eq(parse_exact(out, rc, true, &pi), LS_PKT_OTHER);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, 14 + 1280, &mac_b, &mac_a,
						    &router, orig + 14, n - 14, 255),
			 14 + 1280);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, 14 + 1279, &mac_b, &mac_a,
						    &router, orig + 14, n - 14, 255),
			 -ENOSPC);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, 0, &mac_b, &mac_a,
						    &router, orig + 14, n - 14, 255),
			 -ENOSPC);

	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router, orig + 14, 39, 255),
			 -EINVAL);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router4, orig + 14, n - 14, 255),
			 -EINVAL);
	orig[14] = 0x40 | (orig[14] & 0x0f);
	ck_assert_int_eq(ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a,
						    &router, orig + 14, n - 14, 255),
			 -EINVAL);
}
END_TEST

/* ICMP errors read back (path discovery): every field of the quoted probe,
 * both families; Destination Unreachable too; what is not an error about a
 * UDP datagram, and every truncation, is refused without reading past the
 * frame (ASan in the sanitizer job). */
static void
icmp_err_family(uint8_t family)
{
	struct ls_addr router = addr(family == LS_AF_INET ? "192.0.2.254" : "2001:db8:ff::1");
	static uint8_t orig[1600], out[1600];
	struct ls_pkt_icmp_err e;
	uint32_t hl = family == LS_AF_INET ? 34 : 54;
	int n, rc;

	n = build_probe(orig, sizeof(orig), family, 44);
	if (family == LS_AF_INET) {
		orig[18] = 0xb1;  /* IP ID, as path discovery tags its probes */
		orig[19] = 0x23;
	}
	rc = ls_pkt_build_time_exceeded(out, sizeof(out), &mac_b, &mac_a, &router,
					orig + 14, (uint32_t)n - 14, 64);
	ck_assert_int_gt(rc, 0);
	ck_assert_int_eq(ls_pkt_icmp_err(out, (uint32_t)rc, &e), 0);
	ck_assert(ls_addr_eq(&e.from, &router));
	ck_assert(ls_addr_eq(&e.src, &(struct ls_addr){0}) == false);
	{
		struct ls_addr s4 = addr(family == LS_AF_INET ? "10.0.0.1" : "2001:db8::1");
		struct ls_addr d4 = addr(family == LS_AF_INET ? "10.0.0.2" : "2001:db8::2");

		ck_assert(ls_addr_eq(&e.src, &s4));
		ck_assert(ls_addr_eq(&e.dst, &d4));
	}
	ck_assert_uint_eq(e.sport, 40000);
	ck_assert_uint_eq(e.dport, 862);
	ck_assert_uint_eq(e.time_exceeded, 1);
	ck_assert_uint_eq(e.quoted_ttl, 63);
	ck_assert_uint_eq(e.ip_id, family == LS_AF_INET ? 0xb123 : 0);
	ck_assert_uint_eq(e.payload_len, 44);
	ck_assert_ptr_nonnull(e.payload);
	ck_assert_mem_eq(e.payload, orig + hl + 8, 44);
	/* Destination Unreachable (port) from the destination */
	out[hl] = family == LS_AF_INET ? 3 : 1;
	out[hl + 1] = family == LS_AF_INET ? 3 : 4;
	ck_assert_int_eq(ls_pkt_icmp_err(out, (uint32_t)rc, &e), 0);
	ck_assert_uint_eq(e.time_exceeded, 0);
	/* an echo reply is no error */
	out[hl] = family == LS_AF_INET ? 0 : 129;
	ck_assert_int_eq(ls_pkt_icmp_err(out, (uint32_t)rc, &e), -EINVAL);
	out[hl] = family == LS_AF_INET ? 11 : 3;
	out[hl + 1] = 0;
	/* RFC 792's minimum quote: the IP header and 8 bytes; less is refused */
	for (uint32_t len = 0; len <= (uint32_t)rc; len++) {
		int r = ls_pkt_icmp_err(out, len, &e);

		if (len >= hl + 8 + (hl - 14) + 8)
			ck_assert_int_eq(r, 0);
		else
			ck_assert_int_eq(r, -EINVAL);
	}
	/* the plain probe itself is no ICMP error */
	ck_assert_int_eq(ls_pkt_icmp_err(orig, (uint32_t)n, &e), -EINVAL);
}

START_TEST(test_icmp_err)
{
	icmp_err_family(LS_AF_INET);
	icmp_err_family(LS_AF_INET6);
}
END_TEST

void
pkt_switch_tests(TCase *tc)
{
	tcase_add_test(tc, test_ttl_dec4);
	tcase_add_test(tc, test_ttl_dec4_every_cksum);
	tcase_add_test(tc, test_ttl_dec6);
	tcase_add_test(tc, test_set_ce4);
	tcase_add_test(tc, test_set_ce6);
	tcase_add_test(tc, test_time_exceeded4);
	tcase_add_test(tc, test_time_exceeded6);
	tcase_add_test(tc, test_icmp_err);
}
