/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/stamp. Offsets are checked against hand-written byte
 * images of the RFC 8762 figures rather than against the library's own
 * encoder, so a layout mistake cannot cancel itself out in a round trip.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ls_common.h"
#include "ls_stamp.h"
#include "ls_test.h"

/* 2021-01-01T00:00:00Z plus a fraction, in ns since 1970 */
#define T_2021 1609459200ULL
#define NS(s, frac) ((s) * LS_NS_PER_S + (frac))

static uint32_t
be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t
be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
set32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

START_TEST(test_ptp_ts)
{
	uint8_t b[8];
	uint64_t ns = NS(T_2021, 123456789);

	ls_stamp_ts_put_ptp(b, ns);
	ck_assert_uint_eq(be32_at(b), T_2021);
	ck_assert_uint_eq(be32_at(b + 4), 123456789);
	ck_assert_uint_eq(ls_stamp_ts_get(b, true), ns);
	ls_stamp_ts_put_ptp(b, 0);
	ck_assert_uint_eq(ls_stamp_ts_get(b, true), 0);
	/* hostile nanoseconds field: clamped, no overflow into the next second */
	set32(b, 10);
	set32(b + 4, 0xffffffffu);
	ck_assert_uint_eq(ls_stamp_ts_get(b, true), NS(10, 999999999));
	set32(b, 0xffffffffu);
	ck_assert_uint_eq(ls_stamp_ts_get(b, true), NS(0xffffffffULL, 999999999));
}
END_TEST

START_TEST(test_ntp_ts)
{
	uint8_t b[8];
	uint64_t ns = NS(T_2021, 500000000);

	ls_stamp_ts_put_ntp(b, ns);
	ck_assert_uint_eq(be32_at(b), T_2021 + LS_NTP_UNIX_OFFSET);
	ck_assert_uint_eq(be32_at(b + 4), 0x80000000u); /* exactly half */
	ck_assert_uint_eq(ls_stamp_ts_get(b, false), ns);

	/* quarter second, and the 1 ns resolution the fraction must keep */
	ls_stamp_ts_put_ntp(b, NS(T_2021, 250000000));
	ck_assert_uint_eq(be32_at(b + 4), 0x40000000u);
	ls_stamp_ts_put_ntp(b, NS(T_2021, 1));
	ck_assert_uint_eq(be32_at(b + 4), 4); /* 2^32 / 1e9 = 4.29 -> 4 */

	/* hand-made NTP value: 2^-32 s units */
	set32(b, (uint32_t)(T_2021 + LS_NTP_UNIX_OFFSET));
	set32(b + 4, 0xc0000000u);
	ck_assert_uint_eq(ls_stamp_ts_get(b, false), NS(T_2021, 750000000));
	/* largest fraction rounds into the next second, never past it */
	set32(b + 4, 0xffffffffu);
	ck_assert_uint_eq(ls_stamp_ts_get(b, false), NS(T_2021 + 1, 0));

	/* round trip within 1 ns over many sub-second values */
	for (uint64_t f = 0; f < LS_NS_PER_S; f += 999983) {
		uint64_t in = NS(T_2021, f), out;

		ls_stamp_ts_put_ntp(b, in);
		out = ls_stamp_ts_get(b, false);
		ck_assert_msg(out - in + 1 <= 2, "ns %llu -> %llu",
			      (unsigned long long)in, (unsigned long long)out);
	}
	for (uint64_t f = LS_NS_PER_S - 1000; f < LS_NS_PER_S; f++) {
		uint64_t in = NS(T_2021, f), out;

		ls_stamp_ts_put_ntp(b, in);
		out = ls_stamp_ts_get(b, false);
		ck_assert(out - in + 1 <= 2);
	}

	/* NTP era 1 (after 2036-02-07): seconds field wraps, still decodes */
	ns = NS(2200000000ULL, 42);
	ls_stamp_ts_put_ntp(b, ns);
	ck_assert_uint_lt(be32_at(b), LS_NTP_UNIX_OFFSET);
	ck_assert_uint_eq(ls_stamp_ts_get(b, false), ns);
	/* any bit pattern decodes without trouble */
	memset(b, 0xff, 8);
	(void)ls_stamp_ts_get(b, false);
	memset(b, 0, 8);
	ck_assert_uint_eq(ls_stamp_ts_get(b, false),
			  ((1ULL << 32) - LS_NTP_UNIX_OFFSET) * LS_NS_PER_S);
}
END_TEST

START_TEST(test_err_est)
{
	ck_assert_uint_eq(ls_stamp_err_est(false, false, 0, 1), 0x0001);
	ck_assert_uint_eq(ls_stamp_err_est(true, false, 0, 0), 0x8000);
	ck_assert_uint_eq(ls_stamp_err_est(false, true, 0, 0), 0x4000);
	ck_assert_uint_eq(ls_stamp_err_est(true, true, 0x3f, 0xff), 0xffff);
	ck_assert_uint_eq(ls_stamp_err_est(false, false, 0x15, 0x2a), 0x152a);
	/* scale is 6 bits: a bad value cannot spill into S/Z */
	ck_assert_uint_eq(ls_stamp_err_est(false, false, 0xff, 0), 0x3f00);
}
END_TEST

/* A Session-Sender packet written by hand, per RFC 8762 figure 3. */
START_TEST(test_sender_layout)
{
	uint8_t p[LS_STAMP_BASE_LEN] = {
		0x01, 0x02, 0x03, 0x04,                         /* 0 seq */
		0x5f, 0xee, 0x66, 0x00, 0x07, 0x5b, 0xcd, 0x15, /* 4 T1 PTP */
		0xc1, 0x02,                                     /* 12 S Z scale 1 mult 2 */
		0xbe, 0xef,                                     /* 14 SSID */
	};
	struct ls_stamp_sender s;
	uint8_t out[LS_STAMP_BASE_LEN + 4];

	memset(out, 0xaa, sizeof(out));
	ck_assert_int_eq(ls_stamp_decode_sender(p, 43, &s), -EMSGSIZE);
	ck_assert_int_eq(ls_stamp_decode_sender(p, sizeof(p), &s), 0);
	ck_assert_uint_eq(s.seq, 0x01020304);
	ck_assert_uint_eq(s.ts_ns, NS(T_2021, 123456789));
	ck_assert_uint_eq(s.err_est, 0xc102);
	ck_assert_uint_eq(s.ssid, 0xbeef);

	ck_assert_int_eq(ls_stamp_encode_sender(out, 43, &s), -ENOSPC);
	ck_assert_int_eq(ls_stamp_encode_sender(out, sizeof(out), &s),
			 LS_STAMP_BASE_LEN);
	ck_assert_mem_eq(out, p, LS_STAMP_BASE_LEN); /* MBZ 16..43 zeroed */
	ck_assert_uint_eq(out[LS_STAMP_BASE_LEN], 0xaa); /* nothing beyond */

	/* NTP format when Z is 0 */
	s.err_est = ls_stamp_err_est(false, false, 0, 1);
	s.ts_ns = NS(T_2021, 500000000);
	ls_stamp_encode_sender(out, sizeof(out), &s);
	ck_assert_uint_eq(be32_at(out + 4), T_2021 + LS_NTP_UNIX_OFFSET);
	ck_assert_uint_eq(be32_at(out + 8), 0x80000000u);
	ck_assert_uint_eq(be16_at(out + 12), 0x0001);
	memset(&s, 0, sizeof(s));
	ls_stamp_decode_sender(out, LS_STAMP_BASE_LEN, &s);
	ck_assert_uint_eq(s.ts_ns, NS(T_2021, 500000000));
}
END_TEST

/* A Session-Reflector packet written by hand, per RFC 8762 figure 4. */
START_TEST(test_reflector_layout)
{
	uint8_t p[LS_STAMP_BASE_LEN] = {
		0x00, 0x00, 0x00, 0x07,                         /* 0 seq */
		0x5f, 0xee, 0x66, 0x00, 0x00, 0x00, 0x00, 0x03, /* 4 T3 PTP */
		0x40, 0x01,                                     /* 12 err est Z */
		0x12, 0x34,                                     /* 14 SSID */
		0x5f, 0xee, 0x66, 0x00, 0x00, 0x00, 0x00, 0x02, /* 16 T2 */
		0x00, 0x00, 0x00, 0x09,                         /* 24 sender seq */
		0x5f, 0xee, 0x66, 0x00, 0x00, 0x00, 0x00, 0x01, /* 28 T1 PTP */
		0x40, 0x05,                                     /* 36 sender err */
		0x00, 0x00,                                     /* 38 MBZ */
		0x3f,                                           /* 40 TTL */
		0x00, 0x00, 0x00,                               /* 41 MBZ */
	};
	struct ls_stamp_reflector r;
	uint8_t out[LS_STAMP_BASE_LEN];

	ck_assert_int_eq(ls_stamp_decode_reflector(p, 20, &r), -EMSGSIZE);
	ck_assert_int_eq(ls_stamp_decode_reflector(p, sizeof(p), &r), 0);
	ck_assert_uint_eq(r.seq, 7);
	ck_assert_uint_eq(r.tx_ns, NS(T_2021, 3));
	ck_assert_uint_eq(r.err_est, 0x4001);
	ck_assert_uint_eq(r.ssid, 0x1234);
	ck_assert_uint_eq(r.rx_ns, NS(T_2021, 2));
	ck_assert_uint_eq(r.sender_seq, 9);
	ck_assert_uint_eq(r.sender_ts_ns, NS(T_2021, 1));
	ck_assert_uint_eq(r.sender_err_est, 0x4005);
	ck_assert_uint_eq(r.sender_ttl, 0x3f);

	memset(out, 0xaa, sizeof(out));
	ck_assert_int_eq(ls_stamp_encode_reflector(out, 10, &r), -ENOSPC);
	ck_assert_int_eq(ls_stamp_encode_reflector(out, sizeof(out), &r),
			 LS_STAMP_BASE_LEN);
	ck_assert_mem_eq(out, p, sizeof(p));

	/* T1 in NTP (sender Z=0) while T2/T3 stay PTP (reflector Z=1) */
	r.sender_err_est = 0x0001;
	ls_stamp_encode_reflector(out, sizeof(out), &r);
	ck_assert_uint_eq(be32_at(out + 28), T_2021 + LS_NTP_UNIX_OFFSET);
	ck_assert_uint_eq(be32_at(out + 4), T_2021);
	ck_assert_uint_eq(be32_at(out + 16), T_2021);
	memset(&r, 0, sizeof(r));
	ls_stamp_decode_reflector(out, sizeof(out), &r);
	ck_assert_uint_eq(r.sender_ts_ns, NS(T_2021, 1));
	ck_assert_uint_eq(r.tx_ns, NS(T_2021, 3));
}
END_TEST

START_TEST(test_reflect_inplace)
{
	struct ls_stamp_sender s = {
		.seq = 0xa1b2c3d4,
		.ts_ns = NS(T_2021, 111),
		.err_est = 0x0101, /* NTP sender */
		.ssid = 0x7777,
	};
	uint16_t ree = ls_stamp_err_est(true, true, 0, 3);
	uint8_t pkt[LS_STAMP_BASE_LEN + 8];
	uint8_t t1[8];
	struct ls_stamp_reflector r;

	ls_stamp_encode_sender(pkt, sizeof(pkt), &s);
	memcpy(t1, pkt + 4, 8);
	/* a sender that dirties MBZ must still get a clean reply */
	memset(pkt + 16, 0xee, 28);
	memset(pkt + 44, 0x55, 8);

	ck_assert_int_eq(ls_stamp_reflect_inplace(pkt, 43, 1, 2, ree, 9), -EMSGSIZE);
	ck_assert_int_eq(ls_stamp_reflect_inplace(pkt, sizeof(pkt),
						  NS(T_2021, 222), NS(T_2021, 333),
						  ree, 61), 0);
	/* stateless: reflector seq = sender seq */
	ck_assert_uint_eq(be32_at(pkt + 0), 0xa1b2c3d4);
	ck_assert_uint_eq(be32_at(pkt + 4), T_2021);            /* T3 PTP */
	ck_assert_uint_eq(be32_at(pkt + 8), 333);
	ck_assert_uint_eq(be16_at(pkt + 12), ree);
	ck_assert_uint_eq(be16_at(pkt + 14), 0x7777);           /* SSID */
	ck_assert_uint_eq(be32_at(pkt + 16), T_2021);           /* T2 */
	ck_assert_uint_eq(be32_at(pkt + 20), 222);
	ck_assert_uint_eq(be32_at(pkt + 24), 0xa1b2c3d4);       /* sender seq */
	ck_assert_mem_eq(pkt + 28, t1, 8);                      /* T1 verbatim */
	ck_assert_uint_eq(be16_at(pkt + 36), 0x0101);           /* sender EE */
	ck_assert_uint_eq(be16_at(pkt + 38), 0);                /* MBZ */
	ck_assert_uint_eq(pkt[40], 61);                         /* TTL */
	ck_assert_uint_eq(pkt[41], 0);
	ck_assert_uint_eq(pkt[42], 0);
	ck_assert_uint_eq(pkt[43], 0);
	ck_assert_uint_eq(pkt[44], 0x55); /* TLV area untouched */
	ck_assert_uint_eq(pkt[51], 0x55);

	ck_assert_int_eq(ls_stamp_decode_reflector(pkt, sizeof(pkt), &r), 0);
	ck_assert_uint_eq(r.sender_ts_ns, NS(T_2021, 111));
	ck_assert_uint_eq(r.rx_ns, NS(T_2021, 222));
	ck_assert_uint_eq(r.tx_ns, NS(T_2021, 333));
	ck_assert_uint_eq(r.sender_ttl, 61);

	/* late T3: only bytes 4..11 change */
	uint8_t before[sizeof(pkt)];

	memcpy(before, pkt, sizeof(pkt));
	ls_stamp_put_tx_ts(pkt, NS(T_2021, 444), ree);
	ck_assert_mem_eq(pkt, before, 4);
	ck_assert_mem_eq(pkt + 12, before + 12, sizeof(pkt) - 12);
	ck_assert_uint_eq(be32_at(pkt + 8), 444);
	ls_stamp_put_tx_ts(pkt, NS(T_2021, 500000000), 0);
	ck_assert_uint_eq(be32_at(pkt + 4), T_2021 + LS_NTP_UNIX_OFFSET);
	ck_assert_uint_eq(be32_at(pkt + 8), 0x80000000u);
}
END_TEST

START_TEST(test_tlv_iterate)
{
	uint8_t area[64];
	uint8_t pad[5] = { 0 };
	struct ls_stamp_tlv t;
	size_t off = 0;

	ck_assert_int_eq(ls_stamp_tlv_put(area, sizeof(area), &off, 0,
					  LS_STAMP_TLV_EXTRA_PADDING, pad, 5), 0);
	ck_assert_uint_eq(off, 9);
	ck_assert_int_eq(ls_stamp_tlv_put(area, sizeof(area), &off, 0, 200, NULL, 0),
			 0);
	ck_assert_uint_eq(off, 13);
	ck_assert_uint_eq(area[0], 0);
	ck_assert_uint_eq(area[1], 1);
	ck_assert_uint_eq(be16_at(area + 2), 5);
	ck_assert_uint_eq(area[10], 200);
	ck_assert_uint_eq(be16_at(area + 11), 0);
	/* no room */
	size_t full = 60;

	ck_assert_int_eq(ls_stamp_tlv_put(area, sizeof(area), &full, 0, 1, NULL, 1),
			 -ENOSPC);
	ck_assert_uint_eq(full, 60);
	full = 65;
	ck_assert_int_eq(ls_stamp_tlv_put(area, sizeof(area), &full, 0, 1, NULL, 0),
			 -ENOSPC);

	off = 0;
	ck_assert_int_eq(ls_stamp_tlv_next(area, 13, &off, &t), 1);
	ck_assert_uint_eq(t.type, 1);
	ck_assert_uint_eq(t.len, 5);
	ck_assert_ptr_eq(t.value, area + 4);
	ck_assert_uint_eq(t.off, 0);
	ck_assert_int_eq(ls_stamp_tlv_next(area, 13, &off, &t), 1);
	ck_assert_uint_eq(t.type, 200);
	ck_assert_uint_eq(t.len, 0); /* zero length is legal */
	ck_assert_uint_eq(t.off, 9);
	ck_assert_int_eq(ls_stamp_tlv_next(area, 13, &off, &t), 0);
	ck_assert_int_eq(ls_stamp_tlv_next(area, 0, &(size_t){ 0 }, &t), 0);

	/* truncated header: 2 bytes left */
	off = 0;
	ck_assert_int_eq(ls_stamp_tlv_next(area, 11, &off, &t), 1);
	ck_assert_int_eq(ls_stamp_tlv_next(area, 11, &off, &t), -EBADMSG);
	ck_assert_uint_eq(off, 9);
	/* overlong length */
	off = 0;
	ck_assert_int_eq(ls_stamp_tlv_next(area, 8, &off, &t), -EBADMSG);
	ck_assert_uint_eq(off, 0);
	area[2] = 0xff;
	area[3] = 0xff;
	ck_assert_int_eq(ls_stamp_tlv_next(area, sizeof(area), &off, &t), -EBADMSG);
}
END_TEST

START_TEST(test_reflect_tlvs)
{
	uint8_t area[64], orig[64];
	struct ls_stamp_lockstep_tlv lt = { .node_id = 1, .pair_member = 1 };
	struct ls_stamp_tlv_result res;
	size_t off = 0;

	memset(area, 0x99, sizeof(area));
	ls_stamp_tlv_put(area, sizeof(area), &off, 0, LS_STAMP_TLV_EXTRA_PADDING,
			 NULL, 4);                                    /* 0..7 */
	ls_stamp_tlv_put(area, sizeof(area), &off, 0, 77, "abc", 3); /* 8..14 */
	ls_stamp_tlv_put_lockstep(area, sizeof(area), &off, &lt);   /* 15..42 */
	ck_assert_uint_eq(off, 43);
	/* an overrunning TLV, then bytes that must not be looked at */
	area[43] = 0;
	area[44] = 1;
	area[45] = 0;
	area[46] = 200;
	memcpy(orig, area, sizeof(area));

	ls_stamp_reflect_tlvs(area, 60, &res);
	ck_assert_uint_eq(res.n_tlvs, 4);
	ck_assert_uint_eq(res.n_unknown, 1);
	ck_assert_uint_eq(res.n_malformed, 1);
	ck_assert_uint_eq(area[0], 0);                  /* known: unchanged */
	ck_assert_uint_eq(area[8], LS_STAMP_TLV_U);     /* unknown: U */
	ck_assert_uint_eq(area[15], 0);
	ck_assert_uint_eq(area[43], LS_STAMP_TLV_M);    /* overrun: M */
	/* everything but the two flag bytes is as the sender sent it */
	area[8] = orig[8];
	area[43] = orig[43];
	ck_assert_mem_eq(area, orig, sizeof(area));

	/* a lone truncated header is flagged too */
	memcpy(area, orig, sizeof(area));
	ls_stamp_reflect_tlvs(area, 45, &res);
	ck_assert_uint_eq(res.n_malformed, 1);
	ck_assert_uint_eq(area[43], LS_STAMP_TLV_M);
	/* empty area */
	ls_stamp_reflect_tlvs(area, 0, &res);
	ck_assert_uint_eq(res.n_tlvs, 0);
	ck_assert_uint_eq(res.n_malformed, 0);
	/* overrun at the first TLV: processing stops there */
	memcpy(area, orig, sizeof(area));
	area[2] = 0x01;
	ls_stamp_reflect_tlvs(area, 43, &res);
	ck_assert_uint_eq(res.n_tlvs, 1);
	ck_assert_uint_eq(res.n_unknown, 0);
	ck_assert_uint_eq(area[0], LS_STAMP_TLV_M);
	ck_assert_uint_eq(area[8], 0);
}
END_TEST

START_TEST(test_lockstep_tlv)
{
	struct ls_stamp_lockstep_tlv in = {
		.node_id = 0xdeadbeef, .path_id = 513, .pair_member = 1,
		.version = 1, .pair_id = 0x01020304, .spacing_ns = 250000,
	};
	struct ls_stamp_lockstep_tlv out;
	struct ls_stamp_tlv t;
	uint8_t area[64];
	size_t off = 0;

	ck_assert_int_eq(ls_stamp_tlv_put_lockstep(area, 27, &off, &in), -ENOSPC);
	ck_assert_uint_eq(off, 0);
	ls_stamp_tlv_put(area, sizeof(area), &off, 0, LS_STAMP_TLV_EXTRA_PADDING,
			 NULL, 6);
	ck_assert_int_eq(ls_stamp_tlv_put_lockstep(area, sizeof(area), &off, &in), 0);
	ck_assert_uint_eq(off, 10 + 4 + LS_STAMP_LOCKSTEP_LEN);
	ck_assert_uint_eq(area[11], LS_STAMP_TLV_LOCKSTEP);
	ck_assert_uint_eq(be16_at(area + 12), LS_STAMP_LOCKSTEP_LEN);
	ck_assert_uint_eq(be32_at(area + 14), LS_STAMP_LOCKSTEP_MAGIC);

	memset(&out, 0, sizeof(out));
	ck_assert_int_eq(ls_stamp_find_lockstep(area, off, &out), 0);
	ck_assert_uint_eq(out.node_id, in.node_id);
	ck_assert_uint_eq(out.path_id, in.path_id);
	ck_assert_uint_eq(out.pair_member, in.pair_member);
	ck_assert_uint_eq(out.version, 1);
	ck_assert_uint_eq(out.pair_id, in.pair_id);
	ck_assert_uint_eq(out.spacing_ns, in.spacing_ns);

	size_t o = 10;

	ck_assert_int_eq(ls_stamp_tlv_next(area, off, &o, &t), 1);
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), 0);
	/* bad magic */
	area[14] ^= 1;
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), -EBADMSG);
	ck_assert_int_eq(ls_stamp_find_lockstep(area, off, &out), -EBADMSG);
	area[14] ^= 1;
	/* bad version, bad pair member */
	area[18] = 2;
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), -EBADMSG);
	area[18] = 1;
	area[19] = 2;
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), -EBADMSG);
	/* a probe in no pair (path.mtu's) decodes, marked so */
	area[19] = LS_STAMP_MEMBER_SINGLE;
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), 0);
	ck_assert_uint_eq(out.pair_member, LS_STAMP_MEMBER_SINGLE);
	area[19] = 1;
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), 0);
	/* bad length (short by one, area still consistent) */
	t.len = LS_STAMP_LOCKSTEP_LEN - 1;
	ck_assert_int_eq(ls_stamp_tlv_get_lockstep(&t, &out), -EBADMSG);
	area[13] = LS_STAMP_LOCKSTEP_LEN - 1;
	ck_assert_int_eq(ls_stamp_find_lockstep(area, off - 1, &out), -EBADMSG);
	area[13] = LS_STAMP_LOCKSTEP_LEN;

	/* absent, and malformed area */
	ck_assert_int_eq(ls_stamp_find_lockstep(area, 10, &out), -ENOENT);
	ck_assert_int_eq(ls_stamp_find_lockstep(area, 0, &out), -ENOENT);
	ck_assert_int_eq(ls_stamp_find_lockstep(area, 12, &out), -EBADMSG);
	ck_assert_int_eq(ls_stamp_find_lockstep(area, off - 1, &out), -EBADMSG);
}
END_TEST

/* Hostile TLV areas: iteration and reflection stay inside the buffer. */
START_TEST(test_tlv_fuzz)
{
	uint64_t x = 88172645463325252ULL;

	for (int i = 0; i < 50000; i++) {
		size_t len, off = 0;
		struct ls_stamp_tlv t;
		struct ls_stamp_tlv_result res;
		struct ls_stamp_lockstep_tlv lt;
		uint8_t *a;
		int rc, n = 0;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = x % 80;
		a = malloc(len ? len : 1);
		for (size_t j = 0; j < len; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* small lengths so chains of valid TLVs happen */
			a[j] = (uint8_t)(j % 4 == 2 ? 0 : x % 16);
		}
		while ((rc = ls_stamp_tlv_next(a, len, &off, &t)) == 1) {
			ck_assert_uint_le(t.off + 4 + t.len, len);
			n++;
		}
		ck_assert_int_le(off, len);
		(void)ls_stamp_find_lockstep(a, len, &lt);
		ls_stamp_reflect_tlvs(a, len, &res);
		ck_assert_uint_eq(res.n_tlvs, n + (rc < 0));
		ck_assert_uint_le(res.n_malformed, 1);
		free(a);
	}
}
END_TEST

static Suite *
stamp_suite(void)
{
	Suite *s = suite_create("stamp");
	TCase *ts = tcase_create("timestamps");
	TCase *pk = tcase_create("packets");
	TCase *tl = tcase_create("tlv");

	tcase_add_test(ts, test_ptp_ts);
	tcase_add_test(ts, test_ntp_ts);
	tcase_add_test(ts, test_err_est);
	suite_add_tcase(s, ts);
	tcase_add_test(pk, test_sender_layout);
	tcase_add_test(pk, test_reflector_layout);
	tcase_add_test(pk, test_reflect_inplace);
	suite_add_tcase(s, pk);
	tcase_add_test(tl, test_tlv_iterate);
	tcase_add_test(tl, test_reflect_tlvs);
	tcase_add_test(tl, test_lockstep_tlv);
	tcase_add_test(tl, test_tlv_fuzz);
	suite_add_tcase(s, tl);
	return s;
}

LS_TEST_MAIN(stamp_suite)
