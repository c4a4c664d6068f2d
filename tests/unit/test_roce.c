/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/roce: published ICRC vectors, BTH round trips, which
 * fields the ICRC covers, the incremental source-port update against a full
 * recompute on thousands of random packets, hostile input, and the CNP
 * layout field by field.
 *
 * Packets under test are copied into heap buffers of exactly their length
 * where the test is about reading past the end, so an overread leaves the
 * allocation (ASan/valgrind, sometimes SIGSEGV); check forks per test, so a
 * crash fails the test rather than the runner.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "ls_roce.h"

/*
 * A CNP captured on a Mellanox ConnectX-4 Lx, from scapy's regression tests
 * (test/contrib/roce.uts, "RoCE CNP captured on ConnectX-4 Lx",
 * github.com/secdev/scapy), Ethernet header stripped: IPv4 10.0.17.1 ->
 * 10.0.18.1, TOS 0xc2 (DSCP 48, ECN 10), UDP 0 -> 4791 checksum 0, BTH
 * OpCode 0x81, P_Key 0xffff, BECN, DestQP 0x118, PSN 0, 16 zero bytes,
 * ICRC 82 fd 00 2a as the NIC sent it. The one hardware-made ICRC we found
 * published with its whole packet.
 */
static const uint8_t cnp_cx4[] = {
	0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61,
	0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
	0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,
	0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x82, 0xfd, 0x00, 0x2a,
};

/*
 * A UC SEND_ONLY from the same scapy test file ("RoCE layer"),
 * where scapy asserts ICRC 0x78f353f3 (read big-endian from the wire bytes
 * 78 f3 53 f3). Not hardware-made, but fixed in scapy's regression suite
 * since 2018. The buffer is 4 bytes longer than the IP packet, as scapy's
 * test leaves it: those bytes are padding the ICRC code must ignore.
 */
static const uint8_t uc_scapy[] = {
	0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5,
	0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07,
	0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2,
	0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10,
	0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9, 0x0e, 0x9a, 0x95, 0x50,
	0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50, 0x00, 0x00,
	0x78, 0xf3, 0x53, 0xf3,
	0x00, 0x00, 0x00, 0x00,
};

/* xorshift64*: reproducible random packets. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Ones' complement sum, folded, not inverted: the oracle, byte by byte as
 * RFC 1071 defines it (even offsets are the high byte of a 16-bit word),
 * so it shares nothing with the library's word loop. */
static uint16_t
csum(const uint8_t *p, uint32_t n, uint32_t sum)
{
	for (uint32_t i = 0; i < n; i++) {
		sum += (i % 2 == 0) ? (uint32_t)p[i] << 8 : p[i];
		sum = (sum & 0xffff) + (sum >> 16);
	}
	return (uint16_t)sum;
}

/* UDP checksum over pseudo-header + datagram; 0xffff when valid. */
static uint16_t
udp_verify(const uint8_t *l3)
{
	bool v4 = (l3[0] >> 4) == 4;
	uint32_t hl = v4 ? (l3[0] & 0xf) * 4u : 40;
	const uint8_t *udp = l3 + hl;
	uint16_t ulen = get16(udp + 4);
	uint32_t sum = v4 ? csum(l3 + 12, 8, 0) : csum(l3 + 8, 32, 0);

	sum += 17 + ulen;
	return csum(udp, ulen, sum);
}

static void
udp_fill_cksum(uint8_t *l3)
{
	bool v4 = (l3[0] >> 4) == 4;
	uint8_t *udp = l3 + (v4 ? (l3[0] & 0xf) * 4u : 40);
	uint16_t ck;

	put16(udp + 6, 0);
	ck = (uint16_t)~udp_verify(l3);
	put16(udp + 6, ck == 0 ? 0xffff : ck);
}

/* The ICRC straight from its definition: mask a full copy, one crc32(). */
static uint32_t
icrc_reference(const uint8_t *l3)
{
	bool v4 = (l3[0] >> 4) == 4;
	uint32_t hl = v4 ? (l3[0] & 0xf) * 4u : 40;
	uint32_t ip_len = v4 ? get16(l3 + 2) : 40u + get16(l3 + 4);
	uint8_t *m = malloc(8 + ip_len);
	uint32_t crc;

	ck_assert_ptr_nonnull(m);
	memset(m, 0xff, 8);
	memcpy(m + 8, l3, ip_len);
	if (v4) {
		m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xff;
	} else {
		m[8 + 0] |= 0x0f;
		m[8 + 1] = m[8 + 2] = m[8 + 3] = m[8 + 7] = 0xff;
	}
	m[8 + hl + 6] = m[8 + hl + 7] = 0xff;
	m[8 + hl + 8 + 4] = 0xff;
	crc = (uint32_t)crc32(0L, m, 8 + ip_len - 4);
	free(m);
	return crc;
}

/*
 * A random RoCEv2 packet: random addresses, TOS/flow label, TTL, ports,
 * BTH and payload of plen bytes; IPv4 sometimes with options; UDP checksum
 * zero or valid at random; ICRC set. Returns the IP length.
 */
static uint32_t
random_packet(uint8_t *buf, uint32_t cap, bool v6, uint32_t plen)
{
	struct ls_roce_bth bth = {
		.opcode = (uint8_t)rnd(), .se = rnd() & 1, .migreq = rnd() & 1,
		.pad_cnt = rnd() & 3, .tver = rnd() & 15, .pkey = (uint16_t)rnd(),
		.fecn = rnd() & 1, .becn = rnd() & 1,
		.dest_qp = rnd() & LS_ROCE_QPN_MASK, .ack_req = rnd() & 1,
		.psn = rnd() & LS_ROCE_PSN_MASK,
	};
	uint32_t hl = v6 ? 40 : 20 + 4 * (rnd() % 4 == 0 ? rnd() % 11 : 0);
	uint32_t n = hl + 8 + LS_ROCE_BTH_LEN + plen + LS_ROCE_ICRC_LEN;
	uint8_t *udp = buf + hl;

	ck_assert_uint_le(n, cap);
	for (uint32_t i = 0; i < n; i++)
		buf[i] = (uint8_t)rnd();
	if (v6) {
		buf[0] = 0x60 | (buf[0] & 0x0f);
		put16(buf + 4, (uint16_t)(n - 40));
		buf[6] = 17;
	} else {
		buf[0] = (uint8_t)(0x40 | hl / 4);
		put16(buf + 2, (uint16_t)n);
		put16(buf + 6, rnd() & 1 ? 0x4000 : 0); /* DF or not, never MF */
		buf[9] = 17;
	}
	put16(udp + 2, LS_ROCE_UDP_PORT);
	put16(udp + 4, (uint16_t)(n - hl));
	ck_assert_int_eq(ls_roce_bth_put(udp + 8, LS_ROCE_BTH_LEN, &bth),
			 LS_ROCE_BTH_LEN);
	udp[8 + 4] |= rnd() & 0x3f;            /* reserved bits, masked anyway */
	ck_assert_int_eq(ls_roce_icrc_set(buf, n), 0);
	if (rnd() & 1)
		udp_fill_cksum(buf);
	else
		put16(udp + 6, 0);
	return n;
}

/* Run fn on a heap copy of exactly len bytes. */
static int
check_exact(const uint8_t *p, uint32_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, p, len);
	rc = ls_roce_icrc_check(copy, len);
	free(copy);
	return rc;
}

START_TEST(test_vector_cnp_cx4)
{
	struct ls_roce_pkt rp;
	struct ls_roce_bth bth;
	uint32_t icrc;

	ck_assert_int_eq(check_exact(cnp_cx4, sizeof(cnp_cx4)), 0);
	ck_assert_int_eq(ls_roce_icrc_compute(cnp_cx4, sizeof(cnp_cx4), &icrc), 0);
	/* Wire bytes 82 fd 00 2a are crc32() little-endian. */
	ck_assert_uint_eq(icrc, 0x2a00fd82);
	ck_assert_uint_eq(icrc, icrc_reference(cnp_cx4));
	ck_assert_int_eq(ls_roce_icrc_get(cnp_cx4, sizeof(cnp_cx4), &icrc), 0);
	ck_assert_uint_eq(icrc, 0x2a00fd82);

	ck_assert_int_eq(ls_roce_locate(cnp_cx4, sizeof(cnp_cx4), &rp), 0);
	ck_assert_uint_eq(rp.family, LS_AF_INET);
	ck_assert_uint_eq(rp.udp_off, 20);
	ck_assert_uint_eq(rp.bth_off, 28);
	ck_assert_uint_eq(rp.sport, 0);
	ck_assert_uint_eq(rp.udp_len, 40);
	ck_assert_uint_eq(rp.icrc_off, 56);
	ck_assert_uint_eq(rp.ip_len, 60);

	ck_assert_int_eq(ls_roce_bth_parse(cnp_cx4 + 28, 12, &bth), 0);
	ck_assert_uint_eq(bth.opcode, LS_ROCE_OPCODE_CNP);
	ck_assert(!bth.se && !bth.migreq && !bth.fecn && !bth.ack_req);
	ck_assert(bth.becn);
	ck_assert_uint_eq(bth.pad_cnt, 0);
	ck_assert_uint_eq(bth.tver, 0);
	ck_assert_uint_eq(bth.pkey, 0xffff);
	ck_assert_uint_eq(bth.dest_qp, 0x118);
	ck_assert_uint_eq(bth.psn, 0);
}
END_TEST

/* Our builder, given the capture's parameters, produces the capture. */
START_TEST(test_cnp_matches_cx4)
{
	struct ls_roce_cnp_params p = {
		.src = { LS_AF_INET, { 10, 0, 17, 1 } },
		.dst = { LS_AF_INET, { 10, 0, 18, 1 } },
		.dscp = 48, .ecn = 2, .ttl = 64, .ip_id = 0x718c,
		.pkey = 0xffff, .dest_qp = 0x118, .sport = 0,
	};
	uint8_t buf[LS_ROCE_CNP_LEN4];

	ck_assert_int_eq(ls_roce_cnp_build(buf, sizeof(buf), &p), LS_ROCE_CNP_LEN4);
	ck_assert_mem_eq(buf, cnp_cx4, sizeof(cnp_cx4));
}
END_TEST

START_TEST(test_vector_uc_scapy)
{
	uint32_t icrc;
	uint8_t copy[sizeof(uc_scapy)];

	ck_assert_int_eq(ls_roce_icrc_check(uc_scapy, sizeof(uc_scapy)), 0);
	/* Also with the buffer cut at the IP length: padding is not needed. */
	ck_assert_int_eq(check_exact(uc_scapy, sizeof(uc_scapy) - 4), 0);
	ck_assert_int_eq(ls_roce_icrc_compute(uc_scapy, sizeof(uc_scapy), &icrc), 0);
	ck_assert_uint_eq(icrc, 0xf353f378);

	/* set on a zeroed ICRC restores the published bytes */
	memcpy(copy, uc_scapy, sizeof(copy));
	memset(copy + 60, 0, 4);
	ck_assert_int_eq(ls_roce_icrc_check(copy, sizeof(copy)), -EILSEQ);
	ck_assert_int_eq(ls_roce_icrc_set(copy, sizeof(copy)), 0);
	ck_assert_mem_eq(copy, uc_scapy, sizeof(copy));
}
END_TEST

START_TEST(test_bth_roundtrip)
{
	for (int i = 0; i < 10000; i++) {
		struct ls_roce_bth a = {
			.opcode = (uint8_t)rnd(), .se = rnd() & 1,
			.migreq = rnd() & 1, .pad_cnt = rnd() & 3,
			.tver = rnd() & 15, .pkey = (uint16_t)rnd(),
			.fecn = rnd() & 1, .becn = rnd() & 1,
			.dest_qp = rnd() & LS_ROCE_QPN_MASK,
			.ack_req = rnd() & 1, .psn = rnd() & LS_ROCE_PSN_MASK,
		};
		struct ls_roce_bth b;
		uint8_t buf[LS_ROCE_BTH_LEN];

		ck_assert_int_eq(ls_roce_bth_put(buf, sizeof(buf), &a),
				 LS_ROCE_BTH_LEN);
		/* reserved bits go out as zero */
		ck_assert_uint_eq(buf[4] & 0x3f, 0);
		ck_assert_uint_eq(buf[8] & 0x7f, 0);
		/* and are ignored coming in */
		buf[4] |= rnd() & 0x3f;
		buf[8] |= rnd() & 0x7f;
		memset(&b, 0x5a, sizeof(b));
		ck_assert_int_eq(ls_roce_bth_parse(buf, sizeof(buf), &b), 0);
		ck_assert_uint_eq(a.opcode, b.opcode);
		ck_assert(a.se == b.se && a.migreq == b.migreq);
		ck_assert_uint_eq(a.pad_cnt, b.pad_cnt);
		ck_assert_uint_eq(a.tver, b.tver);
		ck_assert_uint_eq(a.pkey, b.pkey);
		ck_assert(a.fecn == b.fecn && a.becn == b.becn);
		ck_assert_uint_eq(a.dest_qp, b.dest_qp);
		ck_assert(a.ack_req == b.ack_req);
		ck_assert_uint_eq(a.psn, b.psn);
	}
}
END_TEST

START_TEST(test_bth_layout)
{
	struct ls_roce_bth a = {
		.opcode = 0x0a, .se = true, .migreq = false, .pad_cnt = 2,
		.tver = 0, .pkey = 0x8001, .fecn = true, .becn = false,
		.dest_qp = 0xabcdef, .ack_req = true, .psn = 0x123456,
	};
	static const uint8_t want[] = {
		0x0a, 0xa0, 0x80, 0x01, 0x80, 0xab, 0xcd, 0xef,
		0x80, 0x12, 0x34, 0x56,
	};
	uint8_t buf[LS_ROCE_BTH_LEN];

	ck_assert_int_eq(ls_roce_bth_put(buf, sizeof(buf), &a), 12);
	ck_assert_mem_eq(buf, want, sizeof(want));
}
END_TEST

START_TEST(test_bth_errors)
{
	struct ls_roce_bth a = { 0 }, bad;
	uint8_t buf[LS_ROCE_BTH_LEN];

	ck_assert_int_eq(ls_roce_bth_put(buf, 11, &a), -ENOSPC);
	ck_assert_int_eq(ls_roce_bth_put(NULL, 12, &a), -EINVAL);
	ck_assert_int_eq(ls_roce_bth_put(buf, 12, NULL), -EINVAL);
	bad = a; bad.pad_cnt = 4;
	ck_assert_int_eq(ls_roce_bth_put(buf, 12, &bad), -EINVAL);
	bad = a; bad.tver = 16;
	ck_assert_int_eq(ls_roce_bth_put(buf, 12, &bad), -EINVAL);
	bad = a; bad.dest_qp = 1u << 24;
	ck_assert_int_eq(ls_roce_bth_put(buf, 12, &bad), -EINVAL);
	bad = a; bad.psn = 1u << 24;
	ck_assert_int_eq(ls_roce_bth_put(buf, 12, &bad), -EINVAL);
	for (uint32_t len = 0; len < LS_ROCE_BTH_LEN; len++) {
		uint8_t *copy = malloc(len ? len : 1);

		ck_assert_int_eq(ls_roce_bth_parse(copy, len, &a), -EMSGSIZE);
		free(copy);
	}
	ck_assert_int_eq(ls_roce_bth_parse(NULL, 12, &a), -EINVAL);
	ck_assert_int_eq(ls_roce_bth_parse(buf, 12, NULL), -EINVAL);
}
END_TEST

/*
 * Exactly the masked fields may change without breaking the ICRC; a flip
 * of any other bit in the packet (lengths aside, which make it malformed
 * instead) breaks it.
 */
static void
check_coverage(bool v6)
{
	uint8_t buf[256];
	uint32_t n = random_packet(buf, sizeof(buf), v6, 37);
	uint32_t hl = v6 ? 40 : (buf[0] & 0xf) * 4u;

	for (uint32_t i = 0; i < n - 4; i++) {
		for (int bit = 0; bit < 8; bit++) {
			bool masked, length;
			int rc;

			if (v6)
				masked = (i == 0 && bit < 4) || i == 1 || i == 2 ||
					 i == 3 || i == 7;
			else
				masked = i == 1 || i == 8 || i == 10 || i == 11;
			masked |= i == hl + 6 || i == hl + 7 || i == hl + 8 + 4;
			length = (!v6 && (i == 0 || i == 2 || i == 3 || i == 6 ||
					  i == 7 || i == 9)) ||
				 (v6 && (i == 0 || i == 4 || i == 5 || i == 6)) ||
				 i == hl + 2 || i == hl + 3 || i == hl + 4 ||
				 i == hl + 5;
			buf[i] ^= (uint8_t)(1 << bit);
			rc = ls_roce_icrc_check(buf, n);
			if (masked)
				ck_assert_msg(rc == 0, "byte %u bit %d", i, bit);
			else if (length)
				ck_assert_msg(rc < 0, "byte %u bit %d", i, bit);
			else
				ck_assert_msg(rc == -EILSEQ, "byte %u bit %d: %d",
					      i, bit, rc);
			buf[i] ^= (uint8_t)(1 << bit);
		}
	}
	for (uint32_t i = n - 4; i < n; i++) {
		buf[i] ^= 1;
		ck_assert_int_eq(ls_roce_icrc_check(buf, n), -EILSEQ);
		buf[i] ^= 1;
	}
	ck_assert_int_eq(ls_roce_icrc_check(buf, n), 0);
}

START_TEST(test_coverage4)
{
	for (int i = 0; i < 20; i++)
		check_coverage(false);
}
END_TEST

START_TEST(test_coverage6)
{
	for (int i = 0; i < 20; i++)
		check_coverage(true);
}
END_TEST

/*
 * The point of the library: after ls_roce_set_sport the ICRC equals a full
 * recompute, and the UDP checksum stays valid, on thousands of random
 * packets of every size from 0 to 4096 payload bytes, with and without the
 * shift cache.
 */
START_TEST(test_sport_incremental)
{
	struct ls_roce_shift_cache cache;
	static uint8_t buf[4096 + 128];

	memset(&cache, 0, sizeof(cache));
	for (int i = 0; i < 6000; i++) {
		bool v6 = i & 1;
		uint32_t plen = i < 4097 ? (uint32_t)i : rnd() % 4097;
		uint32_t n = random_packet(buf, sizeof(buf), v6, plen);
		uint32_t hl = v6 ? 40 : (buf[0] & 0xf) * 4u;
		uint16_t sport = (uint16_t)rnd();
		bool had_ck = get16(buf + hl + 6) != 0;
		uint32_t icrc;

		ck_assert_int_eq(ls_roce_set_sport(buf, n, sport,
						   i % 3 ? &cache : NULL), 0);
		ck_assert_uint_eq(get16(buf + hl), sport);
		ck_assert_int_eq(ls_roce_icrc_compute(buf, n, &icrc), 0);
		ck_assert_uint_eq(icrc, icrc_reference(buf));
		ck_assert_msg(ls_roce_icrc_check(buf, n) == 0,
			      "packet %d (v%d, payload %u)", i, v6 ? 6 : 4, plen);
		if (had_ck)
			ck_assert_uint_eq(udp_verify(buf), 0xffff);
		else
			ck_assert_uint_eq(get16(buf + hl + 6), 0);
	}
}
END_TEST

/* A packet in chained buffers: only the headers are contiguous, the ICRC
 * goes in and out as a copy. The result is the one-buffer rewrite's. */
START_TEST(test_sport_segmented)
{
	static uint8_t buf[4096 + 128], ref[4096 + 128];

	for (int i = 0; i < 2000; i++) {
		bool v6 = i & 1;
		uint32_t n = random_packet(buf, sizeof(buf), v6, 100 + rnd() % 3997);
		uint32_t hl = v6 ? 40 : (buf[0] & 0xf) * 4u;
		uint16_t sport = (uint16_t)rnd();
		uint8_t icrc[4];

		memcpy(ref, buf, n);
		ck_assert_int_eq(ls_roce_set_sport(ref, n, sport, NULL), 0);
		memcpy(icrc, buf + n - 4, 4);
		memset(buf + n - 4, 0xee, 4); /* the "other segment" is not read here */
		ck_assert_int_eq(ls_roce_set_sport_seg(buf, LS_ROCE_SEG_HDR_MIN, n, icrc, sport,
						       NULL), 0);
		memcpy(buf + n - 4, icrc, 4);
		ck_assert_msg(memcmp(buf, ref, n) == 0, "packet %d", i);
		ck_assert_int_eq(ls_roce_icrc_check(buf, n), 0);
		ck_assert_uint_eq(get16(buf + hl), sport);
	}
	/* headers not contiguous: refused, nothing changed */
	{
		uint32_t n = random_packet(buf, sizeof(buf), false, 200);
		uint8_t icrc[4];

		memcpy(ref, buf, n);
		memcpy(icrc, buf + n - 4, 4);
		ck_assert_int_eq(ls_roce_set_sport_seg(buf, LS_ROCE_SEG_HDR_MIN - 1, n, icrc, 7,
						       NULL), -EMSGSIZE);
		ck_assert(memcmp(buf, ref, n) == 0);
	}
}
END_TEST

/* Every port pair on one packet, including the identity and 0/0xffff. */
START_TEST(test_sport_every_value)
{
	struct ls_roce_shift_cache cache;
	uint8_t buf[200];
	uint32_t n = random_packet(buf, sizeof(buf), false, 64), bad = 0;

	memset(&cache, 0, sizeof(cache));
	udp_fill_cksum(buf);
	/* counted, asserted once: check records every passing assertion */
	for (uint32_t p = 0; p < 65536; p++)
		bad += ls_roce_set_sport(buf, n, (uint16_t)p, &cache) != 0 ||
		       ls_roce_icrc_check(buf, n) != 0 || udp_verify(buf) != 0xffff;
	ck_assert_msg(bad == 0, "%u of 65536 source ports broke the ICRC or checksum", bad);
}
END_TEST

/* The cache's per-bit columns (one multiplication, then shifts) give what
 * the uncached multiplication gives, for every bit at many lengths, and
 * a slot refilled for another length is right for the new one. */
START_TEST(test_sport_columns)
{
	struct ls_roce_shift_cache cache;

	memset(&cache, 0, sizeof(cache));
	for (uint32_t len = 24; len < 9100; len += 37)
		for (unsigned int j = 0; j < 16; j++) {
			uint16_t old = (uint16_t)rnd(), new = (uint16_t)(old ^ 1u << j);

			ck_assert_uint_eq(ls_roce_icrc_update_sport(0x12345678, old, new,
								    (uint16_t)len, &cache),
					  ls_roce_icrc_update_sport(0x12345678, old, new,
								    (uint16_t)len, NULL));
		}
}
END_TEST

/* IPv6 flow label and DSCP/ECN rewrites need no ICRC work (masked). */
START_TEST(test_masked_rewrites_keep_icrc)
{
	uint8_t buf[600];

	for (int i = 0; i < 500; i++) {
		uint32_t n = random_packet(buf, sizeof(buf), true, rnd() % 500);

		buf[1] = (uint8_t)((buf[1] & 0xf0) | (rnd() & 0x0f));
		put16(buf + 2, (uint16_t)rnd());
		buf[0] = (uint8_t)(0x60 | (rnd() & 0x0f));
		ck_assert_int_eq(ls_roce_icrc_check(buf, n), 0);
		n = random_packet(buf, sizeof(buf), false, rnd() % 500);
		buf[1] = (uint8_t)rnd();        /* DSCP/ECN, e.g. CE marking */
		buf[8] = (uint8_t)rnd();        /* TTL */
		ck_assert_int_eq(ls_roce_icrc_check(buf, n), 0);
	}
}
END_TEST

START_TEST(test_update_sport_pure)
{
	uint8_t buf[300];
	uint32_t n = random_packet(buf, sizeof(buf), false, 200);
	uint32_t icrc, want;

	ck_assert_int_eq(ls_roce_icrc_get(buf, n, &icrc), 0);
	ck_assert_uint_eq(ls_roce_icrc_update_sport(icrc, 7, 7, 240, NULL), icrc);
	/* Going there and back is the identity. */
	want = ls_roce_icrc_update_sport(icrc, 1000, 2000, 240, NULL);
	ck_assert_uint_ne(want, icrc);
	ck_assert_uint_eq(ls_roce_icrc_update_sport(want, 2000, 1000, 240, NULL),
			  icrc);
}
END_TEST

/* Every prefix of a valid packet is an error, never a read past it. */
START_TEST(test_truncation)
{
	static uint8_t buf[2100];

	for (int v = 0; v < 2; v++) {
		uint32_t n = random_packet(buf, sizeof(buf), v, 2000);

		for (uint32_t len = 0; len < n; len++) {
			uint8_t *copy = malloc(len ? len : 1);
			struct ls_roce_pkt rp;
			uint32_t icrc;

			memcpy(copy, buf, len);
			ck_assert_int_eq(ls_roce_locate(copy, len, &rp), -EMSGSIZE);
			ck_assert_int_eq(ls_roce_icrc_check(copy, len), -EMSGSIZE);
			ck_assert_int_eq(ls_roce_icrc_compute(copy, len, &icrc),
					 -EMSGSIZE);
			ck_assert_int_eq(ls_roce_icrc_set(copy, len), -EMSGSIZE);
			ck_assert_int_eq(ls_roce_set_sport(copy, len, 1, NULL),
					 -EMSGSIZE);
			free(copy);
		}
		ck_assert_int_eq(check_exact(buf, n), 0);
	}
}
END_TEST

START_TEST(test_malformed)
{
	/* 84-byte IPv4 packet without options, so offsets below are fixed:
	 * UDP at 20, length at 24, 40 payload bytes.
	 */
	const uint32_t n = 20 + 8 + 12 + 40 + 4;
	uint8_t good[84], b[84], v6[200];
	struct ls_roce_pkt rp;
	uint32_t n6, icrc;
	int rc;

	memset(good, 0, sizeof(good));
	good[0] = 0x45;
	put16(good + 2, (uint16_t)n);
	good[8] = 64;
	good[9] = 17;
	put16(good + 20, 1234);
	put16(good + 22, LS_ROCE_UDP_PORT);
	put16(good + 24, (uint16_t)(n - 20));
	ck_assert_int_eq(ls_roce_icrc_set(good, n), 0);
	ck_assert_int_eq(ls_roce_locate(good, n, &rp), 0);

#define EDIT(stmt, want) do { \
		memcpy(b, good, sizeof(b)); \
		stmt; \
		ck_assert_int_eq(ls_roce_locate(b, n, &rp), want); \
	} while (0)
	EDIT(b[0] = 0x55, -EPROTONOSUPPORT);            /* version 5 */
	EDIT(b[0] = 0x05, -EPROTONOSUPPORT);            /* version 0 */
	EDIT(b[0] = 0x44, -EBADMSG);                    /* IHL 4 */
	EDIT(b[9] = 6, -EPROTONOSUPPORT);               /* TCP */
	EDIT(put16(b + 6, 0x2000), -EPROTONOSUPPORT);   /* MF */
	EDIT(put16(b + 6, 0x0001), -EPROTONOSUPPORT);   /* fragment offset */
	EDIT(put16(b + 2, 19), -EBADMSG);               /* total < IHL */
	EDIT(put16(b + 2, (uint16_t)(n + 1)), -EMSGSIZE); /* total > buffer */
	EDIT(put16(b + 2, 27), -EBADMSG);               /* no room for UDP */
	EDIT(put16(b + 22, 4792), -EPROTONOSUPPORT);    /* not RoCEv2 */
	EDIT(put16(b + 24, (uint16_t)(n - 19)), -EBADMSG); /* UDP > IP */
	EDIT(put16(b + 24, (uint16_t)(n - 21)), -EBADMSG); /* UDP < IP */
	EDIT((put16(b + 2, 20 + 23), put16(b + 24, 23)), -EBADMSG); /* no ICRC room */
	EDIT((put16(b + 2, 20 + 24), put16(b + 24, 24)), 0); /* empty payload */
#undef EDIT
	/* IHL 15 swallows the UDP header into options: an error of some kind */
	memcpy(b, good, sizeof(b));
	b[0] = 0x4f;
	rc = ls_roce_locate(b, n, &rp);
	ck_assert_int_lt(rc, 0);

	ck_assert_int_eq(ls_roce_locate(NULL, n, &rp), -EINVAL);
	ck_assert_int_eq(ls_roce_locate(good, n, NULL), -EINVAL);
	ck_assert_int_eq(ls_roce_icrc_compute(good, n, NULL), -EINVAL);
	ck_assert_int_eq(ls_roce_icrc_get(good, n, NULL), -EINVAL);
	ck_assert_int_eq(ls_roce_icrc_check(NULL, n), -EINVAL);
	ck_assert_int_eq(ls_roce_icrc_set(NULL, n), -EINVAL);
	ck_assert_int_eq(ls_roce_set_sport(NULL, n, 1, NULL), -EINVAL);
	ck_assert_int_eq(ls_roce_icrc_compute(good, n, &icrc), 0);

	n6 = random_packet(v6, sizeof(v6), true, 40);
	ck_assert_int_eq(ls_roce_locate(v6, n6, &rp), 0);
	v6[6] = 0;                                      /* hop-by-hop options */
	ck_assert_int_eq(ls_roce_locate(v6, n6, &rp), -EPROTONOSUPPORT);
	v6[6] = 17;
	put16(v6 + 4, (uint16_t)(n6 - 40 + 1));         /* payload > buffer */
	ck_assert_int_eq(ls_roce_locate(v6, n6, &rp), -EMSGSIZE);
	put16(v6 + 4, 7);                               /* shorter than UDP */
	ck_assert_int_eq(ls_roce_locate(v6, n6, &rp), -EBADMSG);
}
END_TEST

/* Random bytes: whatever they are, no crash and no read past len. */
START_TEST(test_fuzz)
{
	static uint8_t buf[300];
	int bad = 0;

	/* counted, asserted once: check records every passing assertion */
	for (int i = 0; i < 200000; i++) {
		uint32_t len = rnd() % 120;
		uint8_t *copy = malloc(len ? len : 1);
		int rc;

		if (i & 1) {
			uint32_t n = random_packet(buf, sizeof(buf), rnd() & 1,
						   rnd() % 64);

			for (int k = rnd() % 4; k >= 0; k--)
				buf[rnd() % n] ^= (uint8_t)(1 << (rnd() % 8));
			len = rnd() % 2 ? n : rnd() % (n + 1);
			free(copy);
			copy = malloc(len ? len : 1);
			memcpy(copy, buf, len);
		} else {
			for (uint32_t k = 0; k < len; k++)
				copy[k] = (uint8_t)rnd();
		}
		rc = ls_roce_icrc_check(copy, len);
		bad += !(rc == 0 || rc == -EILSEQ || rc == -EMSGSIZE ||
			 rc == -EBADMSG || rc == -EPROTONOSUPPORT);
		rc = ls_roce_set_sport(copy, len, (uint16_t)rnd(), NULL);
		bad += !(rc == 0 || rc == -EMSGSIZE || rc == -EBADMSG ||
			 rc == -EPROTONOSUPPORT);
		free(copy);
	}
	ck_assert_msg(bad == 0, "%d results outside the contract", bad);
}
END_TEST

static struct ls_roce_cnp_params
cnp_params(bool v6)
{
	struct ls_roce_cnp_params p = {
		.dscp = 48, .ecn = 1, .ttl = 0, .flow_label = 0x12345,
		.ip_id = 0xbeef, .pkey = 0x7fff, .dest_qp = 0xc0ffee,
		.sport = 0xd00d,
	};

	p.src.family = p.dst.family = v6 ? LS_AF_INET6 : LS_AF_INET;
	for (int i = 0; i < 16; i++) {
		p.src.a[i] = (uint8_t)(0x20 + i);
		p.dst.a[i] = (uint8_t)(0x40 + i);
	}
	return p;
}

static void
check_cnp_transport(const uint8_t *buf, uint32_t n, uint32_t hl)
{
	const uint8_t *udp = buf + hl, *bth = udp + 8;
	struct ls_roce_bth b;
	uint32_t icrc;

	ck_assert_uint_eq(get16(udp), 0xd00d);
	ck_assert_uint_eq(get16(udp + 2), 4791);
	ck_assert_uint_eq(get16(udp + 4), n - hl);
	/* BTH byte by byte, then decoded */
	ck_assert_uint_eq(bth[0], 0x81);
	ck_assert_uint_eq(bth[1], 0x00);       /* SE M PadCnt TVer */
	ck_assert_uint_eq(get16(bth + 2), 0x7fff);
	ck_assert_uint_eq(bth[4], 0x40);       /* F=0 B=1 resv6=0 */
	ck_assert_uint_eq(bth[5], 0xc0);
	ck_assert_uint_eq(bth[6], 0xff);
	ck_assert_uint_eq(bth[7], 0xee);
	ck_assert_uint_eq(bth[8], 0x00);       /* A=0 resv7=0 */
	ck_assert_uint_eq(bth[9] | bth[10] | bth[11], 0);       /* PSN 0 */
	ck_assert_int_eq(ls_roce_bth_parse(bth, 12, &b), 0);
	ck_assert(b.becn && !b.fecn && !b.se && !b.migreq && !b.ack_req);
	ck_assert_uint_eq(b.dest_qp, 0xc0ffee);
	for (int i = 0; i < LS_ROCE_CNP_PAD_LEN; i++)
		ck_assert_uint_eq(bth[12 + i], 0);
	ck_assert_uint_eq(12 + LS_ROCE_CNP_PAD_LEN + 4, n - hl - 8);
	ck_assert_int_eq(ls_roce_icrc_check(buf, n), 0);
	ck_assert_int_eq(ls_roce_icrc_compute(buf, n, &icrc), 0);
	ck_assert_uint_eq(icrc, icrc_reference(buf));
}

START_TEST(test_cnp4)
{
	struct ls_roce_cnp_params p = cnp_params(false);
	uint8_t buf[LS_ROCE_CNP_LEN4 + 8];

	memset(buf, 0xaa, sizeof(buf));
	ck_assert_int_eq(ls_roce_cnp_build(buf, sizeof(buf), &p), 60);
	ck_assert_uint_eq(buf[60], 0xaa);      /* nothing past the packet */
	ck_assert_uint_eq(buf[0], 0x45);
	ck_assert_uint_eq(buf[1], 48 << 2 | 1);
	ck_assert_uint_eq(get16(buf + 2), 60);
	ck_assert_uint_eq(get16(buf + 4), 0xbeef);
	ck_assert_uint_eq(get16(buf + 6), 0x4000);
	ck_assert_uint_eq(buf[8], 64);
	ck_assert_uint_eq(buf[9], 17);
	ck_assert_uint_eq(csum(buf, 20, 0), 0xffff);
	ck_assert_mem_eq(buf + 12, p.src.a, 4);
	ck_assert_mem_eq(buf + 16, p.dst.a, 4);
	ck_assert_uint_eq(get16(buf + 26), 0); /* UDP checksum zero over IPv4 */
	check_cnp_transport(buf, 60, 20);
}
END_TEST

START_TEST(test_cnp6)
{
	struct ls_roce_cnp_params p = cnp_params(true);
	uint8_t buf[LS_ROCE_CNP_LEN6];

	p.ttl = 7;
	ck_assert_int_eq(ls_roce_cnp_build(buf, sizeof(buf), &p), 80);
	/* version 6, traffic class 0xc1, flow label 0x12345 */
	ck_assert_uint_eq(buf[0], 0x6c);
	ck_assert_uint_eq(buf[1], 0x11);
	ck_assert_uint_eq(get16(buf + 2), 0x2345);
	ck_assert_uint_eq(get16(buf + 4), 40);
	ck_assert_uint_eq(buf[6], 17);
	ck_assert_uint_eq(buf[7], 7);
	ck_assert_mem_eq(buf + 8, p.src.a, 16);
	ck_assert_mem_eq(buf + 24, p.dst.a, 16);
	ck_assert_uint_ne(get16(buf + 46), 0);
	ck_assert_uint_eq(udp_verify(buf), 0xffff);
	check_cnp_transport(buf, 80, 40);
}
END_TEST

START_TEST(test_cnp_errors)
{
	struct ls_roce_cnp_params p4 = cnp_params(false), p6 = cnp_params(true), bad;
	uint8_t buf[LS_ROCE_CNP_LEN6];

	ck_assert_int_eq(ls_roce_cnp_build(buf, 59, &p4), -ENOSPC);
	ck_assert_int_eq(ls_roce_cnp_build(buf, 79, &p6), -ENOSPC);
	ck_assert_int_eq(ls_roce_cnp_build(buf, 60, &p4), 60);
	ck_assert_int_eq(ls_roce_cnp_build(NULL, 80, &p4), -EINVAL);
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, NULL), -EINVAL);
	bad = p4; bad.dst.family = LS_AF_INET6;
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, &bad), -EINVAL);
	bad = p4; bad.src.family = bad.dst.family = 0;
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, &bad), -EINVAL);
	bad = p4; bad.dscp = 64;
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, &bad), -EINVAL);
	bad = p4; bad.ecn = 4;
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, &bad), -EINVAL);
	bad = p4; bad.dest_qp = 1u << 24;
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, &bad), -EINVAL);
	bad = p6; bad.flow_label = 1u << 20;
	ck_assert_int_eq(ls_roce_cnp_build(buf, 80, &bad), -EINVAL);
}
END_TEST

/* An RC ACK: the CNP's IP and UDP, BTH opcode 0x11 with the PSN, AETH. */
START_TEST(test_ack)
{
	for (int v6 = 0; v6 < 2; v6++) {
		struct ls_roce_cnp_params p = cnp_params(v6);
		uint32_t hl = v6 ? 40 : 20, n = v6 ? LS_ROCE_ACK_LEN6 : LS_ROCE_ACK_LEN4;
		uint8_t buf[LS_ROCE_ACK_LEN6 + 4], *bth = buf + hl + 8;
		struct ls_roce_bth b;

		memset(buf, 0xaa, sizeof(buf));
		ck_assert_int_eq(ls_roce_ack_build(buf, sizeof(buf), &p, 0xabcdef, 0x123456), (int)n);
		ck_assert_uint_eq(buf[n], 0xaa);
		ck_assert_uint_eq(get16(buf + hl + 2), 4791);
		ck_assert_uint_eq(get16(buf + hl + 4), n - hl);
		ck_assert_int_eq(ls_roce_bth_parse(bth, 12, &b), 0);
		ck_assert_uint_eq(b.opcode, 0x11);
		ck_assert(!b.becn && !b.fecn);
		ck_assert_uint_eq(b.dest_qp, 0xc0ffee);
		ck_assert_uint_eq(b.psn, 0xabcdef);
		ck_assert_uint_eq(bth[12], 0x1f);      /* ACK, unlimited credits */
		ck_assert_uint_eq(bth[13] << 16 | bth[14] << 8 | bth[15], 0x123456);
		ck_assert_int_eq(ls_roce_icrc_check(buf, n), 0);
		if (v6)
			ck_assert_uint_eq(udp_verify(buf), 0xffff);
		else
			ck_assert_uint_eq(csum(buf, 20, 0), 0xffff);
		ck_assert_int_eq(ls_roce_ack_build(buf, n - 1, &p, 1, 1), -ENOSPC);
		ck_assert_int_eq(ls_roce_ack_build(buf, n, &p, 1u << 24, 1), -EINVAL);
		ck_assert_int_eq(ls_roce_ack_build(buf, n, &p, 1, 1u << 24), -EINVAL);
	}
}
END_TEST

static Suite *
roce_suite(void)
{
	Suite *s = suite_create("roce");
	TCase *tc = tcase_create("core");
	TCase *slow = tcase_create("random");

	tcase_add_test(tc, test_vector_cnp_cx4);
	tcase_add_test(tc, test_cnp_matches_cx4);
	tcase_add_test(tc, test_vector_uc_scapy);
	tcase_add_test(tc, test_bth_roundtrip);
	tcase_add_test(tc, test_bth_layout);
	tcase_add_test(tc, test_bth_errors);
	tcase_add_test(tc, test_coverage4);
	tcase_add_test(tc, test_coverage6);
	tcase_add_test(tc, test_masked_rewrites_keep_icrc);
	tcase_add_test(tc, test_update_sport_pure);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_cnp4);
	tcase_add_test(tc, test_cnp6);
	tcase_add_test(tc, test_cnp_errors);
	tcase_add_test(tc, test_ack);
	suite_add_tcase(s, tc);
	tcase_add_test(slow, test_sport_incremental);
	tcase_add_test(slow, test_sport_segmented);
	tcase_add_test(slow, test_sport_every_value);
	tcase_add_test(slow, test_sport_columns);
	tcase_add_test(slow, test_truncation);
	tcase_add_test(slow, test_fuzz);
	tcase_set_timeout(slow, 120);
	suite_add_tcase(s, slow);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(roce_suite());
	int failed;

	/* each test in its own process, unless CK_FORK=no says otherwise (the
	 * aarch64 job under qemu-user, whose forked children hang) */
	if (getenv("CK_FORK") == NULL)
		srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
