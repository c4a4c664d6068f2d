/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reflector fast path must be an optimisation, never a second opinion:
 * every frame it accepts must come out byte-identical to what the generic
 * path (lib/pkt parse + lib/stamp reflect + turnaround + full checksums)
 * makes of it, and every frame the generic path would refuse must be refused
 * here too. Random valid probes, then the same mutated.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "ls_pkt.h"
#include "ls_reflect.h"
#include "ls_stamp.h"
#include "ls_test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const struct ls_mac our_mac = {{0x02, 0, 0, 0, 0, 0x01}};

static struct ls_reflect_port
port(void)
{
	struct ls_reflect_port p = {.plen = 24, .dst_port = 862};

	memcpy(p.mac, our_mac.b, 6);
	p.ip = rte_cpu_to_be_32(0x0a090001); /* 10.9.0.1 */
	return p;
}

/* make_probe's last probe has its first sync TLV at an odd offset */
static bool odd_sync;

/* A valid probe from 10.9.x.y with random fields and known TLVs. */
static int
make_probe(uint8_t *f, uint32_t cap)
{
	uint8_t pl[LS_STAMP_BASE_LEN + 4 + 24 + 4 + 64 + 2 * (4 + LS_STAMP_SYNC_LEN)];
	uint8_t junk[LS_STAMP_SYNC_LEN];
	struct ls_stamp_sender s = {
		.seq = (uint32_t)rnd(),
		.ts_ns = rnd() % (1ULL << 62),
		.err_est = (uint16_t)rnd() | (rnd() & 1 ? LS_STAMP_EE_Z : 0),
		.ssid = (uint16_t)rnd(),
	};
	struct ls_stamp_lockstep_tlv t = {.node_id = (uint32_t)rnd(), .path_id = (uint16_t)rnd(),
					  .pair_member = rnd() & 1, .version = 1,
					  .pair_id = (uint32_t)rnd(), .spacing_ns = (uint32_t)rnd()};
	struct ls_pkt_udp_hdr h = {
		.src_mac = {{0x02, 0, 0, 0, 0, 0x99}},
		.dst_mac = our_mac,
		.sport = (uint16_t)(49152 + rnd() % 64),
		.dport = 862,
		.ttl = (uint8_t)(1 + rnd() % 255),
		.tos = (uint8_t)rnd(),
	};
	size_t off = 0;
	uint16_t plen;

	ls_addr_parse("10.9.0.1", &h.dst);
	h.src.family = LS_AF_INET;
	h.src.a[0] = 10;
	h.src.a[1] = (uint8_t)(rnd() % 2 ? 9 : rnd());
	h.src.a[2] = (uint8_t)rnd();
	h.src.a[3] = (uint8_t)(1 + rnd() % 253); /* never .255: a broadcast source is refused */
	if (h.src.a[1] == 9 && h.src.a[2] == 0 && h.src.a[3] == 1)
		h.src.a[3] = 2; /* nor our own address */
	ls_stamp_encode_sender(pl, sizeof(pl), &s);
	/* Senders may leave junk in MBZ: the reflector must zero it anyway. */
	if (rnd() % 4 == 0)
		for (int i = 16; i < LS_STAMP_BASE_LEN; i++)
			pl[i] = (uint8_t)rnd();
	if (rnd() % 2)
		ls_stamp_tlv_put_lockstep(pl + LS_STAMP_BASE_LEN, sizeof(pl) - LS_STAMP_BASE_LEN, &off, &t);
	if (rnd() % 2)
		ls_stamp_tlv_put(pl + LS_STAMP_BASE_LEN, sizeof(pl) - LS_STAMP_BASE_LEN, &off, 0,
				 LS_STAMP_TLV_EXTRA_PADDING, NULL, (uint16_t)(rnd() % 64));
	/* sync TLVs (the reflector fills the first): zeroed as senders send
	 * them, or junk; after an odd padding at an odd offset; sometimes two */
	odd_sync = false;
	for (int k = 0; k < 2 && rnd() % 2; k++) {
		if (k == 0 && (off & 1))
			odd_sync = true;   /* the generic path's: the fast one refuses it */
		for (unsigned int i = 0; i < sizeof(junk); i++)
			junk[i] = rnd() % 4 == 0 ? (uint8_t)rnd() : 0;
		ls_stamp_tlv_put(pl + LS_STAMP_BASE_LEN, sizeof(pl) - LS_STAMP_BASE_LEN, &off, 0,
				 LS_STAMP_TLV_SYNC, junk, LS_STAMP_SYNC_LEN);
	}
	plen = (uint16_t)(LS_STAMP_BASE_LEN + off);
	return ls_pkt_build_udp(f, cap, &h, pl, plen);
}

/* The generic path, as the daemon runs it. Returns the reply length, or -1
 * when the generic path would not reflect the frame. */
/* The reflector's sync state for this comparison (NULL: not published). */
static const uint8_t *sync_value;

static int
generic(uint8_t *f, uint32_t len, uint64_t rx, uint64_t tx, uint16_t ee, uint8_t reply_ttl)
{
	struct ls_pkt_info pi;
	struct ls_stamp_tlv_result tr;
	const struct ls_reflect_port p = port();
	struct ls_prefix pfx;

	if (ls_pkt_parse(f, len, true, &pi) != LS_PKT_UDP)
		return -1;
	if (!(pi.dst_mac.b[0] & 1) && memcmp(pi.dst_mac.b, our_mac.b, 6) != 0)
		return -1;
	/* lockstepd's rx.c: group source MAC, reflector or system source port */
	if ((pi.src_mac.b[0] & 1) || ls_reflect_src_port_bad(pi.sport, 862))
		return -1;
	if (pi.src.family != LS_AF_INET || memcmp(pi.dst.a, &p.ip, 4) != 0 || pi.dport != 862 ||
	    pi.payload_len < LS_STAMP_BASE_LEN)
		return -1;
	ls_prefix_parse("10.9.0.1/24", &pfx);
	if (ls_prefix_bad_source(&pfx, &pi.src))
		return -1;
	ls_stamp_reflect_inplace(f + pi.payload_off, pi.payload_len, rx, rx, ee, pi.ttl);
	ls_stamp_reflect_tlvs(f + pi.payload_off + LS_STAMP_BASE_LEN,
			      pi.payload_len - LS_STAMP_BASE_LEN, &tr);
	if (tr.sync_off >= 0 && sync_value != NULL)
		memcpy(f + pi.payload_off + LS_STAMP_BASE_LEN + tr.sync_off, sync_value,
		       LS_STAMP_SYNC_LEN);
	ls_pkt_udp_turnaround(f, &pi, &our_mac, reply_ttl);
	len = (uint32_t)(pi.payload_off + pi.payload_len);
	ls_stamp_put_tx_ts(f + pi.payload_off, tx, ee);
	ls_pkt_udp_finalize(f, len, LS_AF_INET);
	return (int)len;
}

static unsigned int fills_by_sums;

static int
fast(uint8_t *f, uint32_t len, uint64_t rx, uint64_t tx, uint16_t ee, uint8_t reply_ttl)
{
	const struct ls_reflect_port p = port();
	bool ptp = (ee & LS_STAMP_EE_Z) != 0;
	struct ls_reflect_v4 r;

	if (!ls_reflect_v4_check(f, len, &p, &r))
		return -1;
	ls_reflect_v4_apply(f, &r, &p, rx, ee, ptp, reply_ttl);
	/* both ways to fill, in turn: by value, and as lockstepd's fast path
	 * does (the value written in place, the checksum from the two sums) */
	if (r.sync_off != 0 && sync_value != NULL && (fills_by_sums++ & 1)) {
		memcpy(f + LS_REFLECT_V4_PAYLOAD_OFF + r.sync_off, sync_value, LS_STAMP_SYNC_LEN);
		ls_reflect_v4_fill_sums(f, r.sync_sum, ls_reflect_sum(sync_value, LS_STAMP_SYNC_LEN));
	} else if (r.sync_off != 0 && sync_value != NULL) {
		ls_reflect_v4_fill(f, r.sync_off, sync_value, LS_STAMP_SYNC_LEN);
	}
	ls_reflect_v4_put_t3(f, tx, ptp);
	return LS_REFLECT_V4_PAYLOAD_OFF + r.payload_len;
}

static void
compare(const uint8_t *in, uint32_t len, bool must_accept, unsigned int *accepted)
{
	uint8_t a[320], b[320], sv[LS_STAMP_SYNC_LEN];
	uint64_t rx = rnd() % (1ULL << 62), tx = rx + rnd() % 100000;
	bool ptp = rnd() & 1;
	uint16_t ee = ls_stamp_err_est(false, ptp, 12, 1);
	uint8_t reply_ttl = (uint8_t)(1 + rnd() % 255);
	int la, lb;

	for (unsigned int i = 0; i < sizeof(sv); i++)
		sv[i] = (uint8_t)rnd();
	sync_value = rnd() % 4 == 0 ? NULL : sv;
	memcpy(a, in, len);
	memcpy(b, in, len);
	lb = fast(b, len, rx, tx, ee, reply_ttl);
	la = generic(a, len, rx, tx, ee, reply_ttl);
	if (must_accept)
		ck_assert_msg(lb > 0, "fast path refused a valid probe from %u.%u.%u.%u",
			      in[26], in[27], in[28], in[29]);
	if (lb < 0)
		return;
	(*accepted)++;
	ck_assert_msg(la == lb, "fast path accepted a frame the generic path refuses (%d vs %d)",
		      la, lb);
	/* memcmp first: a check assertion per byte took most of the suite's
	 * 23 s (300k frames); the byte is named only when one differs */
	if (memcmp(a, b, (size_t)la) != 0)
		for (int i = 0; i < la; i++)
			ck_assert_msg(a[i] == b[i], "byte %d differs: generic %02x fast %02x", i,
				      a[i], b[i]);
}

START_TEST(test_valid_identical)
{
	uint8_t f[320];
	unsigned int acc = 0, odd = 0;

	for (int i = 0; i < 100000; i++) {
		int len = make_probe(f, sizeof(f));

		ck_assert_int_gt(len, 0);
		/* Ethernet padding beyond the datagram must not matter. */
		if (len < 60) {
			memset(f + len, (int)rnd(), 60 - (size_t)len);
			len = 60;
		}
		odd += odd_sync;
		compare(f, (uint32_t)len, !odd_sync, &acc);
	}
	ck_assert_uint_eq(acc, 100000 - odd);
	ck_assert_uint_gt(odd, 0);
	ck_assert_uint_lt(odd, 20000);
	/* the sync TLV filled both ways, thousands of times each */
	ck_assert_uint_gt(fills_by_sums, 10000);
}
END_TEST

/* A NIC that verified the UDP checksum (check_l4): the same verdict and sums
 * on every valid probe, and a bad checksum is the NIC's to catch, not ours;
 * the IPv4 header checksum is still ours. */
START_TEST(test_l4_verified)
{
	const struct ls_reflect_port p = port();
	unsigned int same = 0, trusted = 0, hdr_refused = 0;
	uint8_t f[320];

	for (int i = 0; i < 20000; i++) {
		int len = make_probe(f, sizeof(f));
		struct ls_reflect_v4 a, b;
		bool ka, kb;

		if (len < 60) {
			memset(f + len, 0, 60 - (size_t)len);
			len = 60;
		}
		ka = ls_reflect_v4_check(f, (uint32_t)len, &p, &a);
		kb = ls_reflect_v4_check_l4(f, (uint32_t)len, &p, &b, true);
		same += ka == kb && (!ka || (a.base_sum == b.base_sum && a.sync_sum == b.sync_sum &&
					     a.sync_off == b.sync_off && a.payload_len == b.payload_len));
		f[42 + 2] ^= 0x40;      /* the STAMP payload: the UDP checksum no longer holds */
		trusted += !ls_reflect_v4_check(f, (uint32_t)len, &p, &a) &&
			   ls_reflect_v4_check_l4(f, (uint32_t)len, &p, &b, true) == kb;
		f[14 + 10] ^= 0x01;     /* and the IPv4 header checksum */
		hdr_refused += !ls_reflect_v4_check_l4(f, (uint32_t)len, &p, &b, true);
	}
	ck_assert_uint_eq(same, 20000);
	ck_assert_uint_eq(trusted, 20000);
	ck_assert_uint_eq(hdr_refused, 20000);
}
END_TEST

START_TEST(test_mutated_never_disagree)
{
	uint8_t f[320];
	unsigned int acc = 0;

	for (int i = 0; i < 200000; i++) {
		int len = make_probe(f, sizeof(f));
		int flips = 1 + (int)(rnd() % 3);

		for (int k = 0; k < flips; k++)
			f[rnd() % (uint64_t)len] ^= (uint8_t)(1u << (rnd() % 8));
		if (rnd() % 8 == 0)
			len = (int)(rnd() % (uint64_t)len);
		compare(f, (uint32_t)len, false, &acc);
	}
	/* Mostly refused (checksums), but some flips keep a valid frame:
	 * e.g. in the source MAC, or two flips that cancel. */
	ck_assert_uint_gt(acc, 0);
}
END_TEST

START_TEST(test_refuses_what_needs_the_generic_path)
{
	uint8_t f[320], g[320];
	const struct ls_reflect_port p = port();
	struct ls_reflect_v4 r;
	int len;

	do
		len = make_probe(f, sizeof(f));
	while (odd_sync);
	ck_assert(ls_reflect_v4_check(f, (uint32_t)len, &p, &r));
	/* broadcast destination MAC: generic handles group addresses */
	memcpy(g, f, (size_t)len);
	memset(g, 0xff, 6);
	ck_assert(!ls_reflect_v4_check(g, (uint32_t)len, &p, &r));
	/* UDP checksum 0 (IPv4 "none"): generic */
	memcpy(g, f, (size_t)len);
	g[40] = g[41] = 0;
	ck_assert(!ls_reflect_v4_check(g, (uint32_t)len, &p, &r));
	/* too short for the base packet */
	ck_assert(!ls_reflect_v4_check(f, 42 + 43, &p, &r));
}
END_TEST

START_TEST(test_unknown_tlv_goes_generic)
{
	uint8_t pl[LS_STAMP_BASE_LEN + 12] = {0}, f[256];
	struct ls_pkt_udp_hdr h = {.dst_mac = our_mac, .sport = 49152, .dport = 862, .ttl = 64};
	const struct ls_reflect_port p = port();
	struct ls_reflect_v4 r;
	size_t off = 0;
	int len;

	ls_addr_parse("10.9.0.1", &h.dst);
	ls_addr_parse("10.9.0.7", &h.src);
	ls_stamp_tlv_put(pl + LS_STAMP_BASE_LEN, 12, &off, 0, 200, NULL, 8);
	len = ls_pkt_build_udp(f, sizeof(f), &h, pl, sizeof(pl));
	ck_assert(!ls_reflect_v4_check(f, (uint32_t)len, &p, &r));
}
END_TEST

/* A probe from src with source port sport and source MAC smac. */
static int
probe_from(uint8_t *f, uint32_t cap, const char *src, uint16_t sport, uint8_t smac0)
{
	uint8_t pl[LS_STAMP_BASE_LEN] = {0};
	struct ls_pkt_udp_hdr h = {.src_mac = {{smac0, 0, 0, 0, 0, 0x99}}, .dst_mac = our_mac,
				   .sport = sport, .dport = 862, .ttl = 64};

	ls_addr_parse("10.9.0.1", &h.dst);
	ls_addr_parse(src, &h.src);
	return ls_pkt_build_udp(f, cap, &h, pl, sizeof(pl));
}

/* Regression (issue 27, H1): a forged 862 -> 862 packet from another
 * reflector's address made two reflectors answer each other for ever; and
 * loopback sources and group source MACs were answered. Both paths refuse. */
START_TEST(test_refuses_loops_and_martians)
{
	static const struct {
		const char *src;
		uint16_t sport;
		uint8_t smac0;
		bool ok;
	} c[] = {
		{"10.9.0.7", 49152, 0x02, true},  /* the control: a plain probe */
		{"10.9.0.7", 1024, 0x02, true},   /* lowest non-system port */
		{"10.9.0.7", 862, 0x02, false},   /* from the reflector port */
		{"10.9.0.7", 7, 0x02, false},     /* from echo: system port */
		{"10.9.0.7", 1023, 0x02, false},
		{"10.9.0.7", 49152, 0x03, false}, /* multicast source MAC */
		{"10.9.0.7", 49152, 0xff, false}, /* broadcast source MAC */
		{"127.0.0.1", 49152, 0x02, false},
		{"127.1.2.3", 49152, 0x02, false},
		{"0.1.2.3", 49152, 0x02, false},
	};
	const struct ls_reflect_port p = port();
	struct ls_reflect_v4 r;
	uint8_t f[256];

	for (size_t i = 0; i < LS_ARRAY_SIZE(c); i++) {
		int len = probe_from(f, sizeof(f), c[i].src, c[i].sport, c[i].smac0);

		ck_assert_int_gt(len, 0);
		ck_assert_msg(ls_reflect_v4_check(f, (uint32_t)len, &p, &r) == c[i].ok,
			      "fast path, case %zu (%s port %u)", i, c[i].src, c[i].sport);
		ck_assert_msg((generic(f, (uint32_t)len, 1, 2, 0, 64) > 0) == c[i].ok,
			      "generic path, case %zu", i);
	}
}
END_TEST

static Suite *
reflect_suite(void)
{
	Suite *s = suite_create("reflect");
	TCase *tc = tcase_create("fast_vs_generic");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_valid_identical);
	tcase_add_test(tc, test_mutated_never_disagree);
	tcase_add_test(tc, test_l4_verified);
	tcase_add_test(tc, test_refuses_what_needs_the_generic_path);
	tcase_add_test(tc, test_unknown_tlv_goes_generic);
	tcase_add_test(tc, test_refuses_loops_and_martians);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(reflect_suite)
