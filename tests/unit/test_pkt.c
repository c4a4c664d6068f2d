/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/pkt: build/parse round trips for every frame type we
 * send, checksum and header validation, turnaround, and a fuzz loop.
 *
 * Frames under test are copied into heap buffers of exactly their length so
 * that any read past `len` lands outside the allocation, where ASan or
 * valgrind (and sometimes plain SIGSEGV) will catch it. Check runs each test
 * in a forked child, so a crash fails the test instead of the suite.
 * The switch helpers' tests are in test_pkt_switch.c, the shared helpers in
 * test_pkt.h.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>

#include "test_pkt.h"

static void
check_udp_roundtrip(uint8_t family)
{
	struct ls_pkt_udp_hdr h = udp_hdr(family);
	uint16_t hl = ls_pkt_udp_hdr_len(family);
	struct ls_pkt_info pi;
	uint8_t buf[256];
	int n, rc;

	ck_assert_uint_eq(hl, family == LS_AF_INET ? 42 : 62);
	n = build_probe(buf, sizeof(buf), family, 44);
	ck_assert_int_eq(n, hl + 44);
	rc = parse_exact(buf, (uint32_t)n, true, &pi);
	ck_assert_int_eq(rc, LS_PKT_UDP);
	ck_assert_mem_eq(pi.src_mac.b, mac_a.b, 6);
	ck_assert_mem_eq(pi.dst_mac.b, mac_b.b, 6);
	ck_assert(ls_addr_eq(&pi.src, &h.src));
	ck_assert(ls_addr_eq(&pi.dst, &h.dst));
	ck_assert_uint_eq(pi.sport, 40000);
	ck_assert_uint_eq(pi.dport, 862);
	ck_assert_uint_eq(pi.ttl, 63);
	ck_assert_uint_eq(pi.tos, 0xb8);
	ck_assert_uint_eq(pi.flow_label, family == LS_AF_INET ? 0 : 0xabcde);
	ck_assert_uint_eq(pi.l3_off, 14);
	ck_assert_uint_eq(pi.l4_off, hl - 8);
	ck_assert_uint_eq(pi.payload_off, hl);
	ck_assert_uint_eq(pi.payload_len, 44);
	ck_assert_uint_eq(buf[pi.payload_off + 5], 36);
	if (family == LS_AF_INET) {
		ck_assert_uint_eq(pi.ether_type, 0x0800);
		ck_assert_uint_eq(rte_raw_cksum(buf + 14, 20), 0xffff);
		/* DF set, no fragment offset */
		ck_assert_uint_eq(buf[20], 0x40);
		ck_assert_uint_eq(buf[21], 0);
	} else {
		ck_assert_uint_eq(pi.ether_type, 0x86dd);
	}

	/* Any flipped bit in the UDP header or payload breaks the checksum
	 * (ports, length excluded: the length is checked against IP first).
	 */
	for (int i = pi.l4_off; i < n; i++) {
		if (i == pi.l4_off + 4 || i == pi.l4_off + 5)
			continue;
		buf[i] ^= 0x10;
		rc = parse_exact(buf, (uint32_t)n, true, &pi);
		ck_assert_int_eq(rc, LS_PKT_ERR_CSUM);
		/* with verification off (NIC checked it) it passes */
		rc = parse_exact(buf, (uint32_t)n, false, &pi);
		ck_assert_int_eq(rc, LS_PKT_UDP);
		buf[i] ^= 0x10;
	}
	/* The pseudo header covers the addresses. IPv4's header checksum
	 * catches it first.
	 */
	buf[family == LS_AF_INET ? 14 + 12 : 14 + 8] ^= 1;
	ck_assert_int_eq(parse_exact(buf, (uint32_t)n, true, &pi), LS_PKT_ERR_CSUM);
}

START_TEST(test_udp4_roundtrip)
{
	check_udp_roundtrip(LS_AF_INET);
}
END_TEST

START_TEST(test_udp6_roundtrip)
{
	check_udp_roundtrip(LS_AF_INET6);
}
END_TEST

START_TEST(test_udp_build_errors)
{
	struct ls_pkt_udp_hdr h = udp_hdr(LS_AF_INET);
	uint8_t buf[128];

	ck_assert_int_eq(ls_pkt_build_udp(buf, 41, &h, NULL, 0), -ENOSPC);
	ck_assert_int_eq(ls_pkt_build_udp(buf, 42, &h, NULL, 0), 42);
	ck_assert_int_eq(ls_pkt_build_udp(buf, 50, &h, buf, 9), -ENOSPC);
	h.dst = addr("2001:db8::2");
	ck_assert_int_eq(ls_pkt_build_udp(buf, sizeof(buf), &h, NULL, 0), -EINVAL);
	h.src.family = 0;
	ck_assert_int_eq(ls_pkt_build_udp(buf, sizeof(buf), &h, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(test_payload_in_place)
{
	uint8_t buf[128];
	struct ls_pkt_info pi;
	struct ls_pkt_udp_hdr h = udp_hdr(LS_AF_INET6);
	int n;

	memset(buf + 62, 0x5a, 20);
	n = ls_pkt_build_udp(buf, sizeof(buf), &h, buf + 62, 20);
	ck_assert_int_eq(n, 82);
	ck_assert_int_eq(ls_pkt_parse(buf, (uint32_t)n, true, &pi), LS_PKT_UDP);
	ck_assert_uint_eq(buf[81], 0x5a);
}
END_TEST

START_TEST(test_padding)
{
	struct ls_pkt_info pi;
	uint8_t buf[64] = { 0 };
	int n = build_probe(buf, sizeof(buf), LS_AF_INET, 4);

	ck_assert_int_eq(n, 46);
	memset(buf + n, 0xee, 60 - n); /* Ethernet minimum-size padding */
	ck_assert_int_eq(parse_exact(buf, 60, true, &pi), LS_PKT_UDP);
	ck_assert_uint_eq(pi.payload_len, 4);
	ck_assert_uint_eq(pi.payload_off, 42);
}
END_TEST

static void
check_truncation(const uint8_t *frame, int n, int full_class)
{
	struct ls_pkt_info pi;

	ck_assert_int_eq(parse_exact(frame, (uint32_t)n, true, &pi), full_class);
	for (int l = 0; l < n; l++) {
		int rc = parse_exact(frame, (uint32_t)l, true, &pi);

		ck_assert_msg(rc != full_class, "len %d classified %s", l,
			      ls_pkt_class_name(rc));
		ck_assert_int_ne(rc, LS_PKT_UDP);
	}
}

START_TEST(test_truncation)
{
	uint8_t buf[256];
	struct ls_addr a4 = addr("10.0.0.1"), b4 = addr("10.0.0.2");
	struct ls_addr a6 = addr("fe80::1"), b6 = addr("fe80::2");
	int n;

	n = build_probe(buf, sizeof(buf), LS_AF_INET, 44);
	check_truncation(buf, n, LS_PKT_UDP);
	n = build_probe(buf, sizeof(buf), LS_AF_INET6, 44);
	check_truncation(buf, n, LS_PKT_UDP);
	n = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REQUEST, &mac_a, &a4, NULL, &b4);
	check_truncation(buf, n, LS_PKT_ARP);
	n = ls_pkt_build_ns(buf, sizeof(buf), &mac_a, &a6, &b6);
	check_truncation(buf, n, LS_PKT_ND_NS);
	n = ls_pkt_build_na(buf, sizeof(buf), &mac_a, &a6, &mac_b, &b6);
	check_truncation(buf, n, LS_PKT_ND_NA);
}
END_TEST

START_TEST(test_ipv4_header_checks)
{
	struct ls_pkt_info pi;
	uint8_t buf[256], opt[256];
	int n = build_probe(buf, sizeof(buf), LS_AF_INET, 20);
	uint8_t *ip = buf + 14;

	/* header checksum */
	ip[8] ^= 1;
	ck_assert_int_eq(parse_exact(buf, n, false, &pi), LS_PKT_ERR_CSUM);
	ip[8] ^= 1;
	/* IHL < 5 */
	ip[0] = 0x44;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_L3);
	/* version */
	ip[0] = 0x65;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_L3);
	ip[0] = 0x45;
	/* total length beyond the frame, and shorter than the header */
	ip[2] = 0x05;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_TRUNC);
	ip[2] = 0;
	ip[3] = 19;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_L3);
	/* IP total length leaving room after the UDP datagram */
	ip[3] = 20 + 8 + 20 + 2;
	ipv4_recsum(buf);
	buf[n] = buf[n + 1] = 0;
	ck_assert_int_eq(parse_exact(buf, n + 2, false, &pi), LS_PKT_ERR_L3);
	ip[3] = 20 + 8 + 20;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
	/* UDP length larger than the IP payload */
	buf[38] = 0;
	buf[39] = 29;
	ck_assert_int_eq(parse_exact(buf, n, false, &pi), LS_PKT_ERR_TRUNC);
	buf[39] = 7;
	ck_assert_int_eq(parse_exact(buf, n, false, &pi), LS_PKT_ERR_L3);
	buf[39] = 28;

	/* fragments: MF, then a nonzero offset */
	ip[6] = 0x20;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_FRAG);
	ip[6] = 0x40;
	ip[7] = 0x01;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_FRAG);
	ip[7] = 0;
	ipv4_recsum(buf);

	/* not UDP */
	ip[9] = 6;
	ipv4_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_OTHER);
	ip[9] = 17;
	ipv4_recsum(buf);

	/* zero UDP checksum on IPv4 means "none" */
	buf[40] = buf[41] = 0;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
	ls_pkt_udp_finalize(buf, n, LS_AF_INET);

	/* options are skipped: insert 8 bytes of NOPs, IHL 7 */
	memcpy(opt, buf, 34);
	memset(opt + 34, 1, 8);
	memcpy(opt + 42, buf + 34, n - 34);
	opt[14] = 0x47;
	opt[17] += 8;
	ls_pkt_udp_finalize(opt, n + 8, LS_AF_INET);
	ck_assert_int_eq(parse_exact(opt, n + 8, true, &pi), LS_PKT_UDP);
	ck_assert_uint_eq(pi.l4_off, 42);
	ck_assert_uint_eq(pi.payload_off, 50);
	ck_assert_uint_eq(pi.payload_len, 20);
	ck_assert_uint_eq(pi.dport, 862);
	/* IHL claiming more than the frame holds */
	opt[14] = 0x4f;
	ck_assert_int_eq(parse_exact(opt, 14 + 40, true, &pi), LS_PKT_ERR_TRUNC);
}
END_TEST

START_TEST(test_ipv6_header_checks)
{
	struct ls_pkt_info pi;
	uint8_t buf[256];
	int n = build_probe(buf, sizeof(buf), LS_AF_INET6, 20);

	/* zero UDP checksum is invalid on IPv6 */
	buf[60] = buf[61] = 0;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_CSUM);
	ls_pkt_udp_finalize(buf, n, LS_AF_INET6);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_UDP);
	/* version */
	buf[14] = 0x40 | (buf[14] & 0x0f);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_L3);
	buf[14] = 0x60 | (buf[14] & 0x0f);
	/* payload length beyond the frame */
	buf[19] += 1;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_TRUNC);
	buf[19] -= 1;
	/* extension header (fragment) */
	buf[20] = 44;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_OTHER);
	/* other ICMPv6 (echo request) */
	buf[20] = 58;
	buf[54] = 128;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_OTHER);
}
END_TEST

START_TEST(test_vlan_other)
{
	struct ls_pkt_info pi;
	uint8_t buf[128];
	int n = build_probe(buf, sizeof(buf), LS_AF_INET, 20);

	buf[12] = 0x81;
	buf[13] = 0x00;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_VLAN);
	buf[12] = 0x88;
	buf[13] = 0xa8;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_VLAN);
	buf[12] = 0x88;
	buf[13] = 0xcc; /* LLDP */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_OTHER);
	ck_assert_uint_eq(pi.ether_type, 0x88cc);
	ck_assert_int_eq(parse_exact(buf, 14, true, &pi), LS_PKT_OTHER);
	ck_assert_int_eq(parse_exact(buf, 13, true, &pi), LS_PKT_ERR_TRUNC);
	ck_assert_int_eq(ls_pkt_parse(NULL, 0, true, &pi), LS_PKT_ERR_TRUNC);
}
END_TEST

START_TEST(test_src_addr)
{
	static const char *const bad[] = {
		"224.0.0.1", "239.1.2.3", "255.255.255.255", "0.0.0.0",
		"ff02::1", "ff0e::1", "::",
	};
	struct ls_pkt_info pi;
	uint8_t buf[128];

	for (unsigned int i = 0; i < LS_ARRAY_SIZE(bad); i++) {
		struct ls_addr a = addr(bad[i]);
		struct ls_pkt_udp_hdr h = udp_hdr(a.family);
		int n;

		h.src = a;
		n = ls_pkt_build_udp(buf, sizeof(buf), &h, "x", 1);
		ck_assert_int_gt(n, 0);
		ck_assert_msg(parse_exact(buf, n, true, &pi) == LS_PKT_ERR_ADDR,
			      "%s accepted", bad[i]);
	}
}
END_TEST

START_TEST(test_arp)
{
	struct ls_addr spa = addr("192.0.2.1"), tpa = addr("192.0.2.2");
	struct ls_pkt_info pi;
	uint8_t buf[64];
	int n;

	ck_assert_int_eq(ls_pkt_build_arp(buf, 41, LS_ARP_REQUEST, &mac_a, &spa,
					  NULL, &tpa), -ENOSPC);
	n = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REQUEST, &mac_a, &spa, NULL,
			     &tpa);
	ck_assert_int_eq(n, 42);
	for (int i = 0; i < 6; i++) {
		ck_assert_uint_eq(buf[i], 0xff);        /* broadcast */
		ck_assert_uint_eq(buf[32 + i], 0);      /* target MAC unknown */
	}
	ck_assert_uint_eq(buf[12], 0x08);
	ck_assert_uint_eq(buf[13], 0x06);
	ck_assert_uint_eq(buf[21], 1);
	ck_assert_mem_eq(buf + 22, mac_a.b, 6);
	ck_assert_mem_eq(buf + 28, spa.a, 4);
	ck_assert_mem_eq(buf + 38, tpa.a, 4);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ARP);
	ck_assert_uint_eq(pi.arp_op, LS_ARP_REQUEST);
	ck_assert_mem_eq(pi.arp_sha.b, mac_a.b, 6);
	ck_assert(ls_addr_eq(&pi.src, &spa));
	ck_assert(ls_addr_eq(&pi.dst, &tpa));

	n = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REPLY, &mac_b, &tpa, &mac_a,
			     &spa);
	ck_assert_int_eq(n, 42);
	ck_assert_mem_eq(buf, mac_a.b, 6);
	ck_assert_mem_eq(buf + 32, mac_a.b, 6);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ARP);
	ck_assert_uint_eq(pi.arp_op, LS_ARP_REPLY);
	ck_assert_mem_eq(pi.arp_sha.b, mac_b.b, 6);
	ck_assert(ls_addr_eq(&pi.src, &tpa));
	ck_assert(ls_addr_eq(&pi.dst, &spa));

	/* padded to 60 bytes still parses */
	memset(buf + 42, 0, 18);
	ck_assert_int_eq(parse_exact(buf, 60, true, &pi), LS_PKT_ARP);

	buf[18] = 5; /* hardware address length */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ARP);
	buf[18] = 6;
	buf[19] = 16; /* protocol address length */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ARP);
	buf[19] = 4;
	buf[16] = 0x86; /* protocol IPv6 */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ARP);
	buf[16] = 0x08;
	buf[21] = 3; /* RARP */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ARP);
	buf[21] = 2;
	buf[22] = 0x01; /* multicast sender MAC */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ARP);
	buf[22] = 0x02;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ARP);
}
END_TEST

START_TEST(test_nd_ns)
{
	struct ls_addr src = addr("2001:db8::1"), tgt = addr("2001:db8::aa:bbcc:dd01");
	struct ls_addr snm = addr("ff02::1:ffcc:dd01");
	struct ls_pkt_info pi;
	uint8_t buf[128];
	int n;

	ck_assert_int_eq(ls_pkt_build_ns(buf, 85, &mac_a, &src, &tgt), -ENOSPC);
	n = ls_pkt_build_ns(buf, sizeof(buf), &mac_a, &src, &tgt);
	ck_assert_int_eq(n, 14 + 40 + 32);
	ck_assert_uint_eq(buf[0], 0x33);
	ck_assert_uint_eq(buf[1], 0x33);
	ck_assert_uint_eq(buf[2], 0xff);
	ck_assert_uint_eq(buf[3], 0xcc);
	ck_assert_uint_eq(buf[4], 0xdd);
	ck_assert_uint_eq(buf[5], 0x01);
	ck_assert_mem_eq(buf + 38, snm.a, 16);
	ck_assert_uint_eq(buf[21], 255);
	ck_assert_uint_eq(buf[54], 135);
	ck_assert_uint_eq(buf[78], 1); /* source link-layer address option */
	ck_assert_uint_eq(buf[79], 1);

	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ND_NS);
	ck_assert(ls_addr_eq(&pi.nd_target, &tgt));
	ck_assert(ls_addr_eq(&pi.src, &src));
	ck_assert(ls_addr_eq(&pi.dst, &snm));
	ck_assert(pi.nd_has_lladdr);
	ck_assert_mem_eq(pi.nd_lladdr.b, mac_a.b, 6);
	ck_assert_uint_eq(pi.l4_off, 54);

	/* ICMPv6 checksum verified even when the caller trusts the NIC */
	buf[70] ^= 1;
	ck_assert_int_eq(parse_exact(buf, n, false, &pi), LS_PKT_ERR_CSUM);
	buf[70] ^= 1;
	/* hop limit must be 255 (not in the pseudo header: checksum stays ok) */
	buf[21] = 254;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ND);
	buf[21] = 255;
	/* code must be 0 */
	buf[55] = 1;
	icmp6_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ND);
	buf[55] = 0;
	/* option length 0 */
	buf[79] = 0;
	icmp6_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ND);
	/* option overrunning the message */
	buf[79] = 2;
	icmp6_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ND);
	/* unknown option type is skipped */
	buf[78] = 14;
	buf[79] = 1;
	icmp6_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ND_NS);
	ck_assert(!pi.nd_has_lladdr);
	/* multicast target */
	buf[62] = 0xff;
	icmp6_recsum(buf);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_ND);

	/* DAD probe: unspecified source, no link-layer option */
	src = addr("::");
	n = ls_pkt_build_ns(buf, sizeof(buf), &mac_a, &src, &tgt);
	ck_assert_int_eq(n, 14 + 40 + 24);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ND_NS);
	ck_assert(!pi.nd_has_lladdr);
}
END_TEST

START_TEST(test_nd_na)
{
	struct ls_addr tgt = addr("2001:db8::5"), dst = addr("2001:db8::9");
	struct ls_pkt_info pi;
	uint8_t buf[128];
	int n;

	n = ls_pkt_build_na(buf, sizeof(buf), &mac_b, &tgt, &mac_a, &dst);
	ck_assert_int_eq(n, 86);
	ck_assert_mem_eq(buf, mac_a.b, 6);
	ck_assert_mem_eq(buf + 6, mac_b.b, 6);
	ck_assert_uint_eq(buf[54], 136);
	ck_assert_uint_eq(buf[58], 0x60); /* solicited + override */
	ck_assert_uint_eq(buf[78], 2);    /* target link-layer address option */
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ND_NA);
	ck_assert(ls_addr_eq(&pi.nd_target, &tgt));
	ck_assert(ls_addr_eq(&pi.src, &tgt));
	ck_assert(ls_addr_eq(&pi.dst, &dst));
	ck_assert(pi.nd_has_lladdr);
	ck_assert_mem_eq(pi.nd_lladdr.b, mac_b.b, 6);
	ck_assert_uint_eq(pi.ttl, 255);
	buf[85] ^= 0x80;
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ERR_CSUM);
	ck_assert_int_eq(ls_pkt_build_na(buf, 10, &mac_b, &tgt, &mac_a, &dst),
			 -ENOSPC);
	ck_assert_int_eq(ls_pkt_build_na(buf, sizeof(buf), &mac_b, &pi.src, &mac_a,
					 &pi.src), 86);
	/* to all-nodes (DAD answer): override only, not solicited */
	dst = addr("ff02::1");
	n = ls_pkt_build_na(buf, sizeof(buf), &mac_b, &tgt, &mac_a, &dst);
	ck_assert_uint_eq(buf[58], 0x20);
	ck_assert_int_eq(parse_exact(buf, n, true, &pi), LS_PKT_ND_NA);
	tgt = addr("10.1.1.1");
	ck_assert_int_eq(ls_pkt_build_na(buf, sizeof(buf), &mac_b, &tgt, &mac_a,
					 &dst), -EINVAL);
}
END_TEST

static void
check_turnaround(uint8_t family)
{
	struct ls_pkt_udp_hdr h = udp_hdr(family);
	struct ls_pkt_info pi, rpi;
	uint8_t buf[256];
	int n = build_probe(buf, sizeof(buf), family, 44);

	ck_assert_int_eq(ls_pkt_parse(buf, n, true, &pi), LS_PKT_UDP);
	ls_pkt_udp_turnaround(buf, &pi, &mac_b, 255);
	memset(buf + pi.payload_off, 0xa5, pi.payload_len);
	ls_pkt_udp_finalize(buf, n, family);
	ck_assert_int_eq(parse_exact(buf, n, true, &rpi), LS_PKT_UDP);
	ck_assert_mem_eq(rpi.src_mac.b, mac_b.b, 6);
	ck_assert_mem_eq(rpi.dst_mac.b, mac_a.b, 6);
	ck_assert(ls_addr_eq(&rpi.src, &h.dst));
	ck_assert(ls_addr_eq(&rpi.dst, &h.src));
	ck_assert_uint_eq(rpi.sport, h.dport);
	ck_assert_uint_eq(rpi.dport, h.sport);
	ck_assert_uint_eq(rpi.ttl, 255);
	ck_assert_uint_eq(rpi.tos, h.tos);
	ck_assert_uint_eq(rpi.flow_label, pi.flow_label);
	ck_assert_uint_eq(rpi.payload_len, 44);
	ck_assert_uint_eq(buf[rpi.payload_off + 43], 0xa5);
}

/* ls_pkt_cksum_raw sums 64 bits at a time: it must equal DPDK's 16-bit
 * reference for every length and alignment, including odd tails. */
START_TEST(test_cksum_vs_dpdk)
{
	uint8_t buf[600];
	uint64_t x = 0x243f6a8885a308d3ULL;

	for (unsigned int round = 0; round < 50; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* some all-ones runs exercise the end-around carry */
			buf[i] = round % 5 == 0 ? 0xff : (uint8_t)x;
		}
		for (size_t off = 0; off < 8; off++)
			for (size_t len = 0; len + off <= 520; len++)
				ck_assert_msg(ls_pkt_cksum_raw(buf + off, len) ==
					      rte_raw_cksum(buf + off, len),
					      "off %zu len %zu", off, len);
	}
}
END_TEST

START_TEST(test_turnaround4)
{
	check_turnaround(LS_AF_INET);
}
END_TEST

START_TEST(test_turnaround6)
{
	check_turnaround(LS_AF_INET6);
}
END_TEST

START_TEST(test_class_names)
{
	static const struct {
		int cls;
		const char *name;
	} t[] = {
		{ LS_PKT_UDP, "udp" }, { LS_PKT_ARP, "arp" },
		{ LS_PKT_ND_NS, "nd_ns" }, { LS_PKT_ND_NA, "nd_na" },
		{ LS_PKT_OTHER, "other" }, { LS_PKT_ERR_TRUNC, "trunc" },
		{ LS_PKT_ERR_L3, "l3" }, { LS_PKT_ERR_CSUM, "csum" },
		{ LS_PKT_ERR_FRAG, "frag" }, { LS_PKT_ERR_ARP, "arp_bad" },
		{ LS_PKT_ERR_ND, "nd_bad" }, { LS_PKT_ERR_VLAN, "vlan" },
		{ LS_PKT_ERR_ADDR, "addr" },
	};

	for (unsigned int i = 0; i < LS_ARRAY_SIZE(t); i++)
		ck_assert_str_eq(ls_pkt_class_name(t[i].cls), t[i].name);
	ck_assert_int_eq(-LS_PKT_ERR_ADDR, LS_PKT_ERR_MAX);
	ck_assert_ptr_nonnull(ls_pkt_class_name(0));
	ck_assert_ptr_nonnull(ls_pkt_class_name(-LS_PKT_ERR_MAX - 1));
	ck_assert_ptr_nonnull(ls_pkt_class_name(1000));
}
END_TEST

START_TEST(test_fuzz)
{
	static const uint16_t types[] = { 0x0800, 0x86dd, 0x0806, 0x8100, 0x88cc };
	struct ls_addr a6 = addr("fe80::1"), b6 = addr("fe80::2");
	struct ls_addr a4 = addr("10.0.0.1"), b4 = addr("10.0.0.2");
	uint8_t seeds[5][256];
	int seed_len[5];
	int counts[LS_PKT_OTHER + LS_PKT_ERR_MAX + 1] = { 0 }, bad = 0;

	seed_len[0] = build_probe(seeds[0], 256, LS_AF_INET, 44);
	seed_len[1] = build_probe(seeds[1], 256, LS_AF_INET6, 44);
	seed_len[2] = ls_pkt_build_arp(seeds[2], 256, 1, &mac_a, &a4, NULL, &b4);
	seed_len[3] = ls_pkt_build_ns(seeds[3], 256, &mac_a, &a6, &b6);
	seed_len[4] = ls_pkt_build_na(seeds[4], 256, &mac_a, &a6, &mac_b, &b6);

	for (int iter = 0; iter < 200000; iter++) {
		struct ls_pkt_info pi;
		uint32_t len;
		uint8_t *f;
		int rc;

		if (iter & 1) {
			/* random bytes behind a plausible EtherType */
			len = rnd() % 300;
			f = malloc(len ? len : 1);
			for (uint32_t i = 0; i < len; i++)
				f[i] = (uint8_t)rnd();
			if (len >= 14) {
				uint16_t t = types[rnd() % LS_ARRAY_SIZE(types)];

				f[12] = (uint8_t)(t >> 8);
				f[13] = (uint8_t)t;
				/* version nibble right half the time */
				if (len > 14 && (rnd() & 1))
					f[14] = (uint8_t)((t == 0x86dd ? 0x60 : 0x40) |
							  (f[14] & 0x0f));
			}
		} else {
			/* a valid frame with a few mutated bytes, often with
			 * the IPv4 header checksum fixed so deeper code runs
			 */
			int s = (int)(rnd() % 5);
			int nmut = 1 + (int)(rnd() % 4);

			len = (uint32_t)seed_len[s] + (rnd() % 3 == 0 ? rnd() % 20 : 0);
			if (rnd() % 4 == 0)
				len = rnd() % (len + 1);
			f = calloc(1, len ? len : 1);
			memcpy(f, seeds[s], len < (uint32_t)seed_len[s] ? len :
			       (uint32_t)seed_len[s]);
			for (int m = 0; m < nmut && len > 0; m++)
				f[rnd() % len] = (uint8_t)rnd();
			if (s == 0 && len >= 34 && (rnd() & 1)) {
				uint32_t ihl = (f[14] & 0xf) * 4u;

				if (ihl >= 20 && 14 + ihl <= len) {
					f[24] = f[25] = 0;
					uint16_t ck = rte_ipv4_cksum(
						(struct rte_ipv4_hdr *)(f + 14));
					memcpy(f + 24, &ck, 2);
				}
			}
		}
		rc = ls_pkt_parse(f, len, iter & 2, &pi);
		bad += !fuzz_result_ok(rc, len, &pi);
		counts[rc + LS_PKT_ERR_MAX]++;
		free(f);
	}
	ck_assert_msg(bad == 0, "%d parses outside the contract", bad);
	/* the mutation half must reach the accepting paths too */
	ck_assert_int_gt(counts[LS_PKT_UDP + LS_PKT_ERR_MAX], 100);
	ck_assert_int_gt(counts[LS_PKT_ARP + LS_PKT_ERR_MAX], 100);
	ck_assert_int_gt(counts[LS_PKT_ND_NS + LS_PKT_ERR_MAX], 10);
	ck_assert_int_gt(counts[LS_PKT_ERR_CSUM + LS_PKT_ERR_MAX], 100);
}
END_TEST

static Suite *
pkt_suite(void)
{
	Suite *s = suite_create("pkt");
	TCase *tc = tcase_create("build_parse");
	TCase *fz = tcase_create("fuzz");

	tcase_add_test(tc, test_udp4_roundtrip);
	tcase_add_test(tc, test_udp6_roundtrip);
	tcase_add_test(tc, test_udp_build_errors);
	tcase_add_test(tc, test_payload_in_place);
	tcase_add_test(tc, test_padding);
	tcase_add_test(tc, test_truncation);
	tcase_add_test(tc, test_ipv4_header_checks);
	tcase_add_test(tc, test_ipv6_header_checks);
	tcase_add_test(tc, test_vlan_other);
	tcase_add_test(tc, test_src_addr);
	tcase_add_test(tc, test_arp);
	tcase_add_test(tc, test_nd_ns);
	tcase_add_test(tc, test_nd_na);
	tcase_add_test(tc, test_turnaround4);
	tcase_add_test(tc, test_turnaround6);
	tcase_add_test(tc, test_class_names);
	tcase_add_test(tc, test_cksum_vs_dpdk);
	pkt_switch_tests(tc);
	suite_add_tcase(s, tc);
	tcase_add_test(fz, test_fuzz);
	tcase_set_timeout(fz, 120);
	suite_add_tcase(s, fz);
	return s;
}

LS_TEST_MAIN(pkt_suite)
