/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/flow: the parser (keys for TCP, UDP, RoCEv2 and other
 * protocols, IPv4 and IPv6, VLAN, ECN; every truncation of every frame
 * shape is refused or passed through without reading past the end) and the
 * flow table at the size (1 M flows: insert, bulk lookup, ageing,
 * bytes per flow). The table needs the EAL's memory: the suite starts the
 * EAL with --no-huge, no PCI, no fork between tests.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "ls_common.h"
#include "ls_flow.h"
#include "ls_test.h"

/* Build Ethernet [+ VLAN] + IPv4/IPv6 + L4 (+ BTH) into f; returns length. */
static uint32_t
frame(uint8_t *f, int vlan, int v6, uint8_t proto, uint16_t sport, uint16_t dport,
      uint32_t dqp, uint8_t tos, uint32_t label)
{
	uint32_t o = 12, l3, l4len = proto == 6 ? 20 : proto == 17 ? 8 : 8;
	uint32_t pay = dport == 4791 ? 12 + 16 + 4 : 32;

	memset(f, 0, 256);
	memset(f, 0x02, 12);
	if (vlan >= 0) {
		f[o++] = 0x81, f[o++] = 0x00;
		f[o++] = (uint8_t)(5 << 5 | (vlan >> 8)), f[o++] = (uint8_t)vlan;
	}
	f[o++] = v6 ? 0x86 : 0x08, f[o++] = v6 ? 0xdd : 0x00;
	l3 = o;
	if (!v6) {
		f[o] = 0x45, f[o + 1] = tos;
		f[o + 2] = (uint8_t)((20 + l4len + pay) >> 8), f[o + 3] = (uint8_t)(20 + l4len + pay);
		f[o + 8] = 64, f[o + 9] = proto;
		f[o + 12] = 10, f[o + 15] = 1, f[o + 16] = 10, f[o + 19] = 2;
		o += 20;
	} else {
		uint32_t w = 6u << 28 | (uint32_t)tos << 20 | label;

		f[o] = (uint8_t)(w >> 24), f[o + 1] = (uint8_t)(w >> 16);
		f[o + 2] = (uint8_t)(w >> 8), f[o + 3] = (uint8_t)w;
		f[o + 4] = (uint8_t)((l4len + pay) >> 8), f[o + 5] = (uint8_t)(l4len + pay);
		f[o + 6] = proto, f[o + 7] = 64;
		f[o + 8] = 0xfd, f[o + 23] = 1, f[o + 24] = 0xfd, f[o + 39] = 2;
		o += 40;
	}
	(void)l3;
	f[o] = (uint8_t)(sport >> 8), f[o + 1] = (uint8_t)sport;
	f[o + 2] = (uint8_t)(dport >> 8), f[o + 3] = (uint8_t)dport;
	if (proto == 6)
		f[o + 12] = 0x50;
	o += l4len;
	if (dport == 4791) {
		f[o] = 0x0a; /* RC RDMA WRITE ONLY */
		f[o + 5] = (uint8_t)(dqp >> 16), f[o + 6] = (uint8_t)(dqp >> 8);
		f[o + 7] = (uint8_t)dqp;
	}
	return o + pay;
}

START_TEST(test_parse_v4_tcp)
{
	uint8_t f[256];
	struct ls_flow_pkt p;
	uint32_t n = frame(f, -1, 0, 6, 1234, 80, 0, 0x02, 0);

	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_IP);
	ck_assert_int_eq(p.kind, LS_FLOW_K_TCP);
	ck_assert_int_eq(p.key.family, 4);
	ck_assert_int_eq(p.key.src[10], 0xff);
	ck_assert_int_eq(p.key.src[15], 1);
	ck_assert_int_eq(p.key.dst[15], 2);
	ck_assert_int_eq(ntohs(p.key.sport), 1234);
	ck_assert_int_eq(ntohs(p.key.dport), 80);
	ck_assert_int_eq(p.ecn, 2);
	ck_assert_int_eq(p.l3_off, 14);
	ck_assert_int_eq(p.l4_off, 34);
	ck_assert_int_eq(p.key.vid, 0);
}
END_TEST

/* The head of an answer: MACs swapped, the VLAN tag kept, addresses swapped. */
START_TEST(test_reply_hdr)
{
	for (int v6 = 0; v6 < 2; v6++) {
		uint8_t f[256], o[64];
		struct ls_flow_pkt p;
		struct ls_addr src, dst;
		uint32_t n = frame(f, 100, v6, 17, 50000, 4791, 0x123456, 0x03, 0);

		for (int i = 0; i < 12; i++)
			f[i] = (uint8_t)(i < 6 ? 0xd0 + i : 0x50 + i);
		ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_IP);
		memset(o, 0xee, sizeof(o));
		ck_assert_uint_eq(ls_flow_reply_hdr(f, &p, o, &src, &dst), 18);
		ck_assert_mem_eq(o, f + 6, 6);
		ck_assert_mem_eq(o + 6, f, 6);
		ck_assert_mem_eq(o + 12, f + 12, 6);     /* tag, priority 5, VID 100, type */
		ck_assert_uint_eq(o[18], 0xee);           /* nothing past the L2 header */
		ck_assert_int_eq(src.family, v6 ? LS_AF_INET6 : LS_AF_INET);
		ck_assert_int_eq(dst.family, src.family);
		ck_assert_int_eq(src.a[v6 ? 15 : 3], 2);  /* the frame's destination */
		ck_assert_int_eq(dst.a[v6 ? 15 : 3], 1);
	}
}
END_TEST

START_TEST(test_parse_roce_vlan)
{
	uint8_t f[256];
	struct ls_flow_pkt p, q;
	uint32_t n = frame(f, 100, 0, 17, 50000, 4791, 0x123456, 0xff, 0);

	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_IP);
	ck_assert_int_eq(p.kind, LS_FLOW_K_ROCE);
	ck_assert_int_eq(p.vlan_off, 12);
	ck_assert_int_eq(p.pcp, 5);
	ck_assert_int_eq(ntohs(p.key.vid), 100);
	ck_assert_int_eq(p.ecn, 3);
	ck_assert_int_eq(p.dscp, 0x3f);
	ck_assert_int_eq(p.bth_off, 14 + 4 + 20 + 8);
	ck_assert_int_eq(p.bth_opcode, 0x0a);
	ck_assert_uint_eq(ntohl(p.key.qp_label), 0x123456);
	ck_assert_int_eq(p.key.sport, 0); /* entropy is not identity */
	/* another source port, same QP: the same flow */
	n = frame(f, 100, 0, 17, 60001, 4791, 0x123456, 0xff, 0);
	ck_assert_int_eq(ls_flow_parse(f, n, &q), LS_FLOW_IP);
	ck_assert_mem_eq(&p.key, &q.key, sizeof(p.key));
}
END_TEST

START_TEST(test_parse_v6_label)
{
	uint8_t f[256];
	struct ls_flow_pkt p, q;
	uint32_t n = frame(f, -1, 1, 6, 1, 2, 0, 1, 0xabcde);

	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_IP);
	ck_assert_int_eq(p.kind, LS_FLOW_K_TCP);
	ck_assert_uint_eq(p.label, 0xabcde);
	ck_assert_uint_eq(p.key.qp_label, 0);   /* TCP: label not in the key */
	ck_assert_int_eq(p.ecn, 1);
	n = frame(f, -1, 1, 6, 1, 2, 0, 1, 0x11111);
	ck_assert_int_eq(ls_flow_parse(f, n, &q), LS_FLOW_IP);
	ck_assert_mem_eq(&p.key, &q.key, sizeof(p.key));
	/* a protocol without ports: the label is in the key */
	n = frame(f, -1, 1, 58, 0, 0, 0, 0, 0xabcde);
	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_IP);
	ck_assert_int_eq(p.kind, LS_FLOW_K_OTHER);
	ck_assert_uint_eq(ntohl(p.key.qp_label), 0xabcde);
}
END_TEST

START_TEST(test_parse_not_ip_and_bad)
{
	uint8_t f[256];
	struct ls_flow_pkt p;
	uint32_t n = frame(f, -1, 0, 17, 1, 2, 0, 0, 0);

	f[12] = 0x08, f[13] = 0x06; /* ARP */
	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_NOT_IP);
	f[12] = 0x88, f[13] = 0xcc; /* LLDP */
	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_NOT_IP);
	n = frame(f, -1, 0, 17, 1, 2, 0, 0, 0);
	f[14] = 0x44;               /* IHL 4 */
	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_ERR_L3);
	n = frame(f, -1, 0, 17, 1, 2, 0, 0, 0);
	f[14 + 6] = 0x00, f[14 + 7] = 0x10; /* a later fragment: no ports */
	ck_assert_int_eq(ls_flow_parse(f, n, &p), LS_FLOW_IP);
	ck_assert_int_eq(p.kind, LS_FLOW_K_OTHER);
	ck_assert_int_eq(p.key.sport, 0);
}
END_TEST

/* Every prefix of every frame shape: a defined result, and (under ASan or
 * valgrind) no read past the prefix: each prefix is copied to a buffer of
 * exactly its length. */
/* A peer's address in the flow key's form: what ls_flow_parse writes for
 * a frame to it (IPv4-mapped for IPv4). */
START_TEST(test_key_addr)
{
	struct ls_addr a;
	uint8_t k[16];
	static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 2, 0, 1};

	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &a), 0);
	memset(k, 0xaa, sizeof(k));
	ls_flow_key_addr(&a, k);
	ck_assert_mem_eq(k, v4, 16);
	ck_assert_int_eq(ls_addr_parse("fd00:2::1", &a), 0);
	ls_flow_key_addr(&a, k);
	ck_assert_mem_eq(k, a.a, 16);
}
END_TEST

/* Write addresses a and b (4 or 16 bytes) as source and destination. */
static void
set_addrs(uint8_t *f, int vlan, int v6, const uint8_t *a, const uint8_t *b)
{
	uint32_t l3 = vlan >= 0 ? 18 : 14, n = v6 ? 16 : 4, off = v6 ? 8 : 12;

	memcpy(f + l3 + off, a, n);
	memcpy(f + l3 + off + n, b, n);
}

/* The spread hash: the same both ways, blind to ports, protocol and VLAN,
 * 0 for what is not IP or is cut short, and even over lcores. */
START_TEST(test_spread_hash)
{
	uint8_t f[256], g[256], a[16], b[16];
	unsigned int bins[2][4] = {{0}}, rss_bins[2][4] = {{0}}, asym = 0, softrss = 0, cuts = 0;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < 4096; i++) {
		for (int v6 = 0; v6 <= 1; v6++) {
			int vlan = i & 1 ? 7 : -1;
			uint32_t n, m, h;

			for (int k = 0; k < 16; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				a[k] = (uint8_t)x;
				b[k] = (uint8_t)(x >> 8);
			}
			n = frame(f, vlan, v6, 17, (uint16_t)x, 4791, 5, 0, 0);
			set_addrs(f, vlan, v6, a, b);
			/* the answer: addresses swapped, other ports, TCP, no tag */
			m = frame(g, -1, v6, 6, 80, (uint16_t)(x >> 16), 0, 3, 0);
			set_addrs(g, -1, v6, b, a);
			/* counted, asserted once below (check records every
			 * passing assertion: 700 k of them here) */
			h = ls_flow_spread_hash(f, n);
			asym += h == 0 || h != ls_flow_spread_hash(g, m);
			bins[v6][((uint64_t)h * 4) >> 32]++;
			/* the RSS spread's Toeplitz hash: symmetric too */
			h = ls_flow_rss_hash(f, n);
			asym += h != ls_flow_rss_hash(g, m);
			/* its 16-window form is rte_softrss with the key */
			softrss += h != ls_flow_rss_hash_key(f, n, ls_flow_rss_key);
			rss_bins[v6][ls_flow_rss_lcore(h, 4)]++;
			for (uint32_t cut = 0; cut < (v6 ? 54u : 34u) + (vlan >= 0 ? 4 : 0); cut++)
				cuts += ls_flow_spread_hash(f, cut) != 0 || ls_flow_rss_hash(f, cut) != 0;
		}
	}
	ck_assert_msg(asym == 0, "%u pairs hashed 0 or not alike both ways", asym);
	ck_assert_msg(softrss == 0, "%u hashes not rte_softrss's", softrss);
	ck_assert_msg(cuts == 0, "%u truncated frames hashed", cuts);
	/* 4096 pairs over 4 lcores: 1024 each, 3 sigma is about 83 */
	for (int v6 = 0; v6 <= 1; v6++)
		for (int j = 0; j < 4; j++)
			ck_assert_msg(bins[v6][j] > 924 && bins[v6][j] < 1124 &&
				      rss_bins[v6][j] > 924 && rss_bins[v6][j] < 1124,
				      "v6 %d lcore %d got %u (RSS %u) of 4096", v6, j, bins[v6][j],
				      rss_bins[v6][j]);
	memset(f, 0, sizeof(f));
	f[12] = 0x08, f[13] = 0x06;            /* ARP */
	ck_assert_uint_eq(ls_flow_spread_hash(f, 60), 0);
	ck_assert_uint_eq(ls_flow_rss_hash(f, 60), 0);
}
END_TEST

/* Microsoft's published RSS verification vectors ("Verifying the RSS hash
 * calculation": the key below, IPv4 and IPv6 without ports), which NICs'
 * Toeplitz engines are checked against: source and destination addresses,
 * the hash. */
START_TEST(test_rss_vectors)
{
	static const uint8_t ms_key[40] = {
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
		0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
		0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
	static const struct { const char *src, *dst; uint32_t h; } v[] = {
		{"66.9.149.187", "161.142.100.80", 0x323e8fc2},
		{"199.92.111.2", "65.69.140.83", 0xd718262a},
		{"24.19.198.95", "12.22.207.184", 0xd2d0a5de},
		{"38.27.205.30", "209.142.163.6", 0x82989176},
		{"153.39.163.191", "202.188.127.2", 0x5d1809c5},
		{"3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 0x2cc18cd5},
		{"3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 0x0f0c461c},
		{"3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 0x4b61e985},
	};
	uint8_t f[256], a[16], b[16];

	for (unsigned int i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int v6 = strchr(v[i].src, ':') != NULL;
		uint32_t n = frame(f, i & 1 ? 7 : -1, v6, 6, 2794, 1766, 0, 0, 0);

		memset(a, 0, sizeof(a));
		memset(b, 0, sizeof(b));
		ck_assert_int_eq(inet_pton(v6 ? AF_INET6 : AF_INET, v[i].src, a), 1);
		ck_assert_int_eq(inet_pton(v6 ? AF_INET6 : AF_INET, v[i].dst, b), 1);
		set_addrs(f, i & 1 ? 7 : -1, v6, a, b);
		ck_assert_msg(ls_flow_rss_hash_key(f, n, ms_key) == v[i].h,
			      "%s -> %s: 0x%08x, published 0x%08x", v[i].src, v[i].dst,
			      ls_flow_rss_hash_key(f, n, ms_key), v[i].h);
	}
}
END_TEST

START_TEST(test_parse_truncations)
{
	uint8_t f[256];
	struct ls_flow_pkt p;
	int shapes = 0;

	for (int vlan = -1; vlan <= 7; vlan += 8)
		for (int v6 = 0; v6 <= 1; v6++)
			for (int k = 0; k < 3; k++) {
				uint8_t proto = k == 0 ? 6 : 17;
				uint16_t dport = k == 2 ? 4791 : 53;
				uint32_t n = frame(f, vlan, v6, proto, 7, dport, 9, 0, 0);

				for (uint32_t len = 0; len <= n; len++) {
					uint8_t *b = malloc(len ? len : 1);
					int rc;

					memcpy(b, f, len);
					rc = ls_flow_parse(b, len, &p);
					ck_assert(rc == LS_FLOW_IP || rc == LS_FLOW_NOT_IP ||
						  rc == LS_FLOW_ERR_TRUNC);
					if (rc == LS_FLOW_IP && p.kind == LS_FLOW_K_ROCE)
						ck_assert_uint_ge(len, p.bth_off + 12u);
					free(b);
				}
				shapes++;
			}
	ck_assert_int_eq(shapes, 12);
}
END_TEST

static void
key_n(struct ls_flow_key *k, uint32_t i)
{
	memset(k, 0, sizeof(*k));
	k->family = 4;
	k->src[10] = k->src[11] = 0xff;
	k->dst[10] = k->dst[11] = 0xff;
	memcpy(&k->src[12], &i, 4);
	k->dst[15] = (uint8_t)(i * 7);
	k->sport = (uint16_t)i;
	k->dport = htons(4791);
	k->proto = 17;
}

/* 1 M flows: all inserted, all found by bulk lookup at the index add gave,
 * state zeroed and one cache line, half aged out, the rest still found.
 * The sanitizer job (LS_TEST_SMALL, tools/test_sanitize) looks for memory
 * errors, not scale: 256k there, a quarter of the time under ASan. */
START_TEST(test_table_1m)
{
	const uint32_t N = getenv("LS_TEST_SMALL") != NULL ? 1u << 18 : 1u << 20;
	struct ls_flow_table_params tp = {.name = "test_flows", .max_flows = N,
					  .socket_id = -1};
	struct ls_flow_table *t = ls_flow_table_create(&tp);
	int32_t *idx = malloc(sizeof(*idx) * N);
	struct ls_flow_key keys[64];
	const struct ls_flow_key *kp[64];
	int32_t got[64];
	uint32_t i, j, removed = 0, bad = 0, first = UINT32_MAX;

	/* the loops count what is wrong and assert once: check writes a
	 * record per passing assertion (3 M here, most of the test's time) */
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(sizeof(struct ls_flow), 64);
	ck_assert_uint_eq(sizeof(struct ls_flow_key), 48);
	for (i = 0; i < N; i++) {
		key_n(&keys[0], i);
		idx[i] = ls_flow_add(t, &keys[0]);
		if (idx[i] < 0 || ls_flow_at(t, idx[i])->pkts != 0) {
			bad++;
			first = RTE_MIN(first, i);
			continue;
		}
		ls_flow_at(t, idx[i])->pkts = i;
		ls_flow_at(t, idx[i])->last_ms = i % 2 ? 1000 : 0;
	}
	ck_assert_msg(bad == 0, "%u adds failed or found state, the first flow %u", bad, first);
	ck_assert_uint_eq(ls_flow_count(t), N);
	for (i = 0; i < N; i += 64) {
		for (j = 0; j < 64; j++) {
			key_n(&keys[j], i + j);
			kp[j] = &keys[j];
		}
		ls_flow_lookup_bulk(t, kp, 64, got);
		for (j = 0; j < 64; j++)
			if (got[j] != idx[i + j] || ls_flow_at(t, got[j])->pkts != i + j) {
				bad++;
				first = RTE_MIN(first, i + j);
			}
	}
	ck_assert_msg(bad == 0, "%u lookups wrong, the first flow %u", bad, first);
	printf("flow: %u flows, %.1f bytes per flow (buckets + entries, EAL heap)\n",
	       N, (double)ls_flow_table_bytes(t) / N);
	/* now 1000 ms, idle 600: the even ones (last 0) go */
	for (i = 0; i < ls_flow_capacity(t); i += 4096)
		removed += ls_flow_age(t, 1000, 600, 4096);
	ck_assert_uint_eq(removed, N / 2);
	ck_assert_uint_eq(ls_flow_count(t), N / 2);
	for (i = 0; i < 4096; i++) {
		key_n(&keys[0], i);
		kp[0] = &keys[0];
		ls_flow_lookup_bulk(t, kp, 1, got);
		ck_assert_int_eq(got[0] >= 0, i % 2 == 1);
	}
	ck_assert_int_eq(ls_flow_del(t, idx[1]), 0);
	ck_assert_int_eq(ls_flow_del(t, idx[1]), -ENOENT);
	ls_flow_table_free(t);
	free(idx);
}
END_TEST

/* Random keys fill a table to its capacity, every one findable, at sizes
 * that are and are not powers of two: no insert is refused before the
 * table is full (two slots per flow, moves two deep). */
START_TEST(test_table_fill_random)
{
	static const uint32_t sizes[] = {8, 1000, 65536, 100000};

	for (unsigned int z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		struct ls_flow_table_params tp = {.name = "test_fill", .max_flows = sizes[z],
						  .socket_id = -1};
		struct ls_flow_table *t = ls_flow_table_create(&tp);
		struct ls_flow_key *k = calloc(sizes[z], sizeof(*k));
		const struct ls_flow_key *kp[1];
		uint32_t bad = 0;
		int32_t got;

		ck_assert_ptr_nonnull(t);
		for (uint32_t i = 0; i < sizes[z]; i++) {
			for (unsigned int b = 0; b < 36; b++)
				((uint8_t *)&k[i])[b] = (uint8_t)rand();
			bad += ls_flow_add(t, &k[i]) < 0;
		}
		ck_assert_msg(bad == 0, "%u of %u adds refused", bad, sizes[z]);
		ck_assert_uint_eq(ls_flow_count(t), sizes[z]);
		for (uint32_t i = 0; i < sizes[z]; i++) {
			kp[0] = &k[i];
			ls_flow_lookup_bulk(t, kp, 1, &got);
			bad += got < 0 || memcmp(ls_flow_key_at(t, got), &k[i], sizeof(k[i])) != 0;
		}
		ck_assert_msg(bad == 0, "%u of %u keys not found", bad, sizes[z]);
		if (sizes[z] >= 100) {
			/* more than one bulk's worth at once */
			const struct ls_flow_key *kb[100];
			int32_t gb[100];

			for (uint32_t i = 0; i < 100; i++)
				kb[i] = &k[i];
			ls_flow_lookup_bulk(t, kb, 100, gb);
			for (uint32_t i = 0; i < 100; i++)
				ck_assert(memcmp(ls_flow_key_at(t, gb[i]), &k[i], sizeof(k[i])) == 0);
		}
		k[0].src[0] ^= 0xff;
		ck_assert_int_eq(ls_flow_add(t, &k[0]), -ENOSPC);
		ls_flow_table_free(t);
		free(k);
	}
}
END_TEST

START_TEST(test_table_full)
{
	struct ls_flow_table_params tp = {.name = "test_small", .max_flows = 64,
					  .socket_id = -1};
	struct ls_flow_table *t = ls_flow_table_create(&tp);
	struct ls_flow_key k;
	uint32_t i, added = 0;
	int32_t rc = 0;

	ck_assert_ptr_nonnull(t);
	for (i = 0; i < 1000 && rc >= 0; i++) {
		key_n(&k, i);
		rc = ls_flow_add(t, &k);
		if (rc >= 0)
			added++;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_uint_ge(added, 64);
	ls_flow_table_free(t);
	tp.max_flows = 2;
	ck_assert_ptr_null(ls_flow_table_create(&tp));
}
END_TEST

static Suite *
flow_suite(void)
{
	Suite *s = suite_create("flow");
	TCase *tc = tcase_create("parse");
	TCase *tt = tcase_create("table");

	tcase_add_test(tc, test_parse_v4_tcp);
	tcase_add_test(tc, test_parse_roce_vlan);
	tcase_add_test(tc, test_reply_hdr);
	tcase_add_test(tc, test_parse_v6_label);
	tcase_add_test(tc, test_parse_not_ip_and_bad);
	tcase_add_test(tc, test_parse_truncations);
	tcase_add_test(tc, test_key_addr);
	tcase_add_test(tc, test_spread_hash);
	tcase_add_test(tc, test_rss_vectors);
	tcase_set_timeout(tt, 120);
	tcase_add_test(tt, test_table_1m);
	tcase_add_test(tt, test_table_full);
	tcase_add_test(tt, test_table_fill_random);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tt);
	return s;
}

LS_TEST_MAIN_EAL(flow_suite, "flow", "1024")
