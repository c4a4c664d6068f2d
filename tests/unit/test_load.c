/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lockstep-load's EAL-free parts (app/load: lld_core).
 *
 * Frames: every shape and family carries a valid RoCEv2 ICRC (checked by
 * lib/roce), valid UDP/TCP and IPv4 header checksums (checked by summing
 * bytewise, RFC 1071, not with the code under test), the PSN and TCP
 * sequence of its number, and reads back through the sink's parser.
 * Sink: loss, reordering and duplicates on synthetic sequences; windows
 * and rates on synthetic arrival times, where the right answer is known;
 * one-way delay only for our TSC domain. Options: bad ones are refused
 * with the option's name. Phases: the barrier fed by the sink ends a phase
 * only when every flow has all its frames (duplicates do not count,
 * reordered frames do), or at the timeout, counting the missing as lost.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ls_flow.h"
#include "ls_roce.h"
#include "lld_frame.h"
#include "lld_opts.h"
#include "lld_phase.h"
#include "lld_sink.h"
#include "ls_test.h"

#define HZ 1000000000ULL     /* 1 tick = 1 ns keeps expected figures readable */

/* RFC 1071 bytewise: an oracle independent of lib/pkt's word loop. */
static uint32_t
sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t
fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

/* True when the frame's L4 checksum verifies (or is absent, UDP over IPv4). */
static bool
l4_ok(const uint8_t *f, uint32_t len)
{
	bool v4 = f[12] == 0x08;
	uint32_t l3 = 14, l4 = v4 ? 34 : 54, s;
	uint8_t proto = v4 ? f[l3 + 9] : f[l3 + 6];
	const uint8_t *ck = f + l4 + (proto == 6 ? 16 : 6);

	if (proto == 17 && v4 && ck[0] == 0 && ck[1] == 0)
		return true;
	s = v4 ? sum16(f + l3 + 12, 8, 0) : sum16(f + l3 + 8, 32, 0);
	s += proto + (len - l4);
	return fold(sum16(f + l4, len - l4, s)) == 0xffff;
}

static void
spec_of(struct lld_flow_spec *s, uint8_t shape, uint8_t fam, uint16_t len)
{
	struct lld_opts o;
	bool chk, help;
	char err[128];
	char *argv[] = {"x", "--tx", "0", "--rate", "1M", NULL};

	ck_assert_int_eq(lld_opts_parse(5, argv, &o, &chk, &help, err, sizeof(err)), 0);
	o.shapes[0] = shape;
	o.families[0] = fam;
	o.sizes[0] = len;
	o.roce_op = LLD_OP_WRITE_ONLY;
	lld_opts_flow(&o, 7, s);
}

START_TEST(test_frames_valid)
{
	static const uint16_t lens[] = {128, 129, 130, 131, 1500, 9018};
	uint8_t f[LLD_LEN_MAX];

	for (uint8_t shape = 0; shape < LLD_SHAPES; shape++)
		for (int v6 = 0; v6 < 2; v6++)
			for (size_t k = 0; k < LS_ARRAY_SIZE(lens); k++) {
				uint8_t fam = v6 ? LS_AF_INET6 : LS_AF_INET;
				struct lld_flow_spec s;
				struct lld_tmpl t;
				struct lld_rx r;
				char err[128];

				spec_of(&s, shape, fam, lens[k]);
				ck_assert_int_eq(lld_frame_tmpl(&s, &t, err, sizeof(err)), 0);
				ck_assert_uint_le(t.len, lens[k]);
				memset(f, 0xa5, sizeof(f));  /* leftovers must not leak */
				lld_frame_write(&t, f, 70000 + k, 123456789, 0xfeed);
				if (fam == LS_AF_INET)
					ck_assert_uint_eq(fold(sum16(f + 14, 20, 0)), 0xffff);
				ck_assert_msg(l4_ok(f, t.len), "%s v%u %u: L4 checksum",
					      lld_shape_name(shape), fam, t.len);
				if (shape == LLD_ROCE) {
					uint8_t *bth = f + (fam == LS_AF_INET ? 42 : 62);

					ck_assert_int_eq(ls_roce_icrc_check(f + 14, t.len - 14), 0);
					/* the PSN counts on from the flow's random start */
					ck_assert_uint_eq(ls_get_be24(bth + 9),
							  (70000 + k + t.psn0) & 0xffffff);
					ck_assert_uint_eq(ls_get_be24(bth + 5), s.qp);
					ck_assert_uint_eq(bth[0], LLD_OP_WRITE_ONLY);
					ck_assert_uint_eq((t.len - t.hdr_len - 4) % 4, 0);
				}
				ck_assert_int_eq(lld_frame_parse(f, t.len, &r), 0);
				ck_assert_uint_eq(r.flow, 7);
				ck_assert_uint_eq(r.seq, 70000 + k);
				ck_assert_uint_eq(r.tx_tsc, 123456789);
				ck_assert_uint_eq(r.tag, 0xfeed);
				ck_assert_uint_eq(r.shape, shape);
				ck_assert_uint_eq(r.payload_len, t.payload_len);
			}
}
END_TEST

/* What lockstepd's data path makes of them: the flow kind and key it pins. */
START_TEST(test_frames_classified)
{
	uint8_t f[2048];
	struct ls_flow_pkt pk;
	struct lld_flow_spec s;
	struct lld_tmpl t;
	char err[128];

	spec_of(&s, LLD_ROCE, LS_AF_INET6, 512);
	lld_frame_tmpl(&s, &t, err, sizeof(err));
	lld_frame_write(&t, f, 1, 1, 1);
	ck_assert_int_eq(ls_flow_parse(f, t.len, &pk), LS_FLOW_IP);
	ck_assert_uint_eq(pk.kind, LS_FLOW_K_ROCE);
	ck_assert_uint_eq(ls_get_be24((const uint8_t *)&pk.key.qp_label + 1), s.qp);
	spec_of(&s, LLD_TCP, LS_AF_INET, 512);
	lld_frame_tmpl(&s, &t, err, sizeof(err));
	lld_frame_write(&t, f, 3, 1, 1);
	ck_assert_int_eq(ls_flow_parse(f, t.len, &pk), LS_FLOW_IP);
	ck_assert_uint_eq(pk.kind, LS_FLOW_K_TCP);
	/* segment 3 starts 3 payloads after the initial sequence 1 */
	ck_assert_uint_eq(ls_get_be16(f + 34 + 4) << 16 | ls_get_be16(f + 34 + 6),
			  1 + 3 * t.payload_len);
}
END_TEST

START_TEST(test_frames_bad)
{
	struct lld_flow_spec s;
	struct lld_tmpl t;
	struct lld_rx r;
	char err[128];
	uint8_t f[256] = {0};

	spec_of(&s, LLD_ROCE, LS_AF_INET, 131);
	s.len = 131;                               /* IB payload 131-70-4 = 57 */
	ck_assert_int_eq(lld_frame_tmpl(&s, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "multiple of 4"));
	spec_of(&s, LLD_UDP, LS_AF_INET6, 80);
	ck_assert_int_eq(lld_frame_tmpl(&s, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "out of range"));
	/* a UDP frame without our magic is not ours */
	spec_of(&s, LLD_UDP, LS_AF_INET, 128);
	lld_frame_tmpl(&s, &t, err, sizeof(err));
	lld_frame_write(&t, f, 0, 0, 0);
	f[42] ^= 1;
	ck_assert_int_eq(lld_frame_parse(f, t.len, &r), -1);
	ck_assert_int_eq(lld_frame_parse(f, 20, &r), -1);
}
END_TEST

static struct lld_sink *
new_sink(uint32_t flows, uint64_t settle)
{
	struct lld_sink_params p = {.n_flows = flows, .hz = HZ, .start = 0,
				    .window = HZ / 10, .n_windows = 1000, .settle = settle,
				    .detail_flows = 1, .tag = 42};
	struct lld_sink *s = lld_sink_create(&p);

	ck_assert_ptr_nonnull(s);
	return s;
}

static void
feed(struct lld_sink *s, uint32_t flow, uint64_t seq, uint64_t now, uint32_t tag)
{
	struct lld_rx r = {.flow = flow, .seq = seq, .tx_tsc = now - 5000, .tag = tag,
			   .payload_len = 100, .shape = LLD_UDP};

	lld_sink_frame(s, &r, 125, now);
}

START_TEST(test_sink_sequences)
{
	/* 4, 8..149 and 151..199 never come; 2, 150 and 7 come late */
	static const uint64_t seqs[] = {0, 1, 3, 2, 2, 5, 6, 6, 200, 150, 7};
	struct lld_sink *s = new_sink(2, 0);
	struct lld_sink_result r;

	for (size_t i = 0; i < LS_ARRAY_SIZE(seqs); i++)
		feed(s, 0, seqs[i], 1000 + i, 42);
	feed(s, 1, 5, 1000, 42);           /* flow 1 starts at 5: 0..4 lost */
	lld_sink_finish(s);
	ck_assert_int_eq(lld_sink_flow(s, 0, &r), 0);
	ck_assert_uint_eq(r.pkts, LS_ARRAY_SIZE(seqs));
	ck_assert_uint_eq(r.dups, 2);      /* the second 2 and the second 6 */
	/* 3 before 2, 150 below 200, 7 far below 200 (old) */
	ck_assert_uint_eq(r.reordered, 3);
	ck_assert_uint_eq(r.old, 1);
	/* missing: 4, 8..149, 151..199 */
	ck_assert_uint_eq(r.lost, 1 + 142 + 49);
	ck_assert_uint_eq(r.payload_bytes, 100 * (LS_ARRAY_SIZE(seqs) - 2));
	ck_assert_uint_eq(r.max_seq, 200);
	lld_sink_flow(s, 1, &r);
	ck_assert_uint_eq(r.lost, 5);
	ck_assert_int_eq(lld_sink_flow(s, 2, &r), -EINVAL);
	lld_sink_free(s);
}
END_TEST

/*
 * A flow paced at exactly 1 Mb/s: 125-byte frames every 1 ms. Every
 * complete 100 ms window holds 100 frames: 1 Mb/s counted and spanned;
 * the whole run too; the aggregate windows are those of the one flow.
 */
START_TEST(test_sink_windows_exact)
{
	struct lld_sink *s = new_sink(1, 0);
	struct lld_sink_result r;
	const uint64_t *wb;
	uint32_t n;

	for (uint64_t i = 0; i < 1000; i++)
		feed(s, 0, i, 500 + i * 1000000, 42);
	lld_sink_set_end(s, 500 + 1000 * 1000000ULL);
	lld_sink_finish(s);
	lld_sink_flow(s, 0, &r);
	ck_assert_double_eq_tol(r.rate_bps, 1e6, 1e-6);
	ck_assert_double_eq_tol(r.goodput_bps, 0.8e6, 1e-6);
	/* windows 0..8 closed by later frames; 9 is the last, left out */
	ck_assert_uint_eq(r.windows, 9);
	ck_assert_double_eq_tol(r.win_min_bps, 1e6, 1e-6);
	ck_assert_double_eq_tol(r.win_max_bps, 1e6, 1e-6);
	ck_assert_uint_eq(r.span_windows, 9);
	ck_assert_double_eq_tol(r.span_min_bps, 1e6, 1e-3);
	ck_assert_double_eq_tol(r.span_max_bps, 1e6, 1e-3);
	n = lld_sink_windows(s, &wb, NULL);
	ck_assert_uint_eq(n, 10);
	for (uint32_t k = 0; k < n; k++)
		ck_assert_uint_eq(wb[k], 100 * 125);
	ck_assert_uint_eq(r.owd_n, 1000);
	ck_assert_double_eq_tol(r.owd_mean_ns, 5000, 1e-9);
	lld_sink_free(s);
}
END_TEST

/*
 * A stall: frames 250..359 arrive together at 360 ms. With the origin
 * moved to 50 ms by the settle time, window 2 [250, 350) ms gets none and
 * window 3 twice its share, while the whole-run rate is still 1 Mb/s.
 */
START_TEST(test_sink_windows_stall)
{
	struct lld_sink *s = new_sink(1, 50000000);
	struct lld_sink_result r;
	const uint64_t *wb;
	uint32_t n;

	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t t = i * 1000000;

		if (i >= 250 && i < 360)
			t = 360 * 1000000;
		feed(s, 0, i, t, 7);   /* another TSC domain: no delay */
	}
	lld_sink_set_end(s, 1000 * 1000000ULL);
	lld_sink_finish(s);
	lld_sink_flow(s, 0, &r);
	/* origin 50 ms: measured from frame 50 to 999 */
	ck_assert_double_eq_tol(r.rate_bps, 1e6, 1e-6);
	n = lld_sink_windows(s, &wb, NULL);
	ck_assert_uint_eq(n, 9);
	ck_assert_uint_eq(wb[0], 100 * 125);
	ck_assert_uint_eq(wb[1], 100 * 125);   /* 150..249 */
	ck_assert_uint_eq(wb[2], 0);
	ck_assert_uint_eq(wb[3], 200 * 125);   /* 250..449 */
	ck_assert_double_eq_tol(r.win_min_bps, 0, 1e-9);
	ck_assert_double_eq_tol(r.win_max_bps, 2e6, 1e-6);
	ck_assert_uint_eq(r.owd_n, 0);
	/* the stall as the receiver saw it: 249 ms -> 360 ms */
	ck_assert_uint_eq(r.gap[0], 111 * 1000000ULL);
	ck_assert_uint_eq(r.gap_end[0], 360 * 1000000ULL);
	/* then the 1 ms gaps, the first ones kept (ties do not displace) */
	ck_assert_uint_eq(r.gap[1], 1000000);
	ck_assert_uint_eq(r.gap_end[1], 1000000);
	ck_assert_uint_eq(r.gap[LLD_SINK_GAPS - 1], 1000000);
	ck_assert_uint_eq(r.gap_end[LLD_SINK_GAPS - 1], (LLD_SINK_GAPS - 1) * 1000000ULL);
	ck_assert_uint_eq(r.gap[LLD_SINK_GAPS], 0);   /* no more kept than asked */
	lld_sink_free(s);
}
END_TEST

/* --gaps: more of the longest gaps kept, in order, each with its end; a
 * count past the maximum is refused. */
START_TEST(test_sink_more_gaps)
{
	struct lld_sink_params p = {.n_flows = 2, .hz = HZ, .start = 0, .window = HZ / 10,
				    .n_windows = 100, .detail_flows = 0, .tag = 42, .n_gaps = 64};
	struct lld_sink_result r;
	struct lld_sink *s;
	uint64_t t = 0;

	p.n_gaps = LLD_SINK_GAPS_MAX + 1;
	ck_assert_ptr_null(lld_sink_create(&p));
	p.n_gaps = 64;
	s = lld_sink_create(&p);
	ck_assert_ptr_nonnull(s);
	/* 100 gaps of 1..100 us on flow 1 */
	for (uint64_t i = 0; i <= 100; i++) {
		t += i * 1000;
		feed(s, 1, i, t + 1, 7);
	}
	lld_sink_finish(s);
	lld_sink_flow(s, 1, &r);
	for (unsigned int k = 0; k < 64; k++) {
		ck_assert_uint_eq(r.gap[k], (100 - k) * 1000ULL);
		ck_assert_uint_ne(r.gap_end[k], 0);
	}
	ck_assert_uint_eq(r.gap[64], 0);
	lld_sink_flow(s, 0, &r);
	ck_assert_uint_eq(r.gap[0], 0);
	lld_sink_free(s);
}
END_TEST

/* A flow that starts inside a window: that window is partial, left out;
 * a flow that skips windows has zero-byte windows. */
START_TEST(test_sink_partial_and_gaps)
{
	struct lld_sink *s = new_sink(2, 0);
	struct lld_sink_result r;
	json_t *j, *w;

	feed(s, 1, 0, 0, 42);                          /* origin at 0 */
	feed(s, 1, 1, 10000, 42);
	for (uint64_t i = 0; i < 100; i++)              /* 150..348 ms, 2 ms apart */
		feed(s, 0, i, 150000000 + i * 2000000, 42);
	feed(s, 1, 2, 450000000, 42);                  /* skips windows 1..3 */
	feed(s, 1, 3, 550000000, 42);
	lld_sink_finish(s);
	lld_sink_flow(s, 0, &r);
	/* window 1 partial (began at 150 ms), 2 complete, 3 its last: one */
	ck_assert_uint_eq(r.windows, 1);
	ck_assert_double_eq_tol(r.win_min_bps, 50 * 125 * 8 / 0.1, 1e-6);
	lld_sink_flow(s, 1, &r);
	/* window 0 (two frames), 1..3 empty, 4 (one frame); 5 its last */
	ck_assert_uint_eq(r.windows, 5);
	ck_assert_double_eq_tol(r.win_min_bps, 0, 1e-9);
	ck_assert_double_eq_tol(r.win_max_bps, 250 * 8 / 0.1, 1e-6);
	ck_assert_uint_eq(r.span_windows, 1);          /* only window 0 has two */
	ck_assert_double_eq_tol(r.span_min_bps, 125 * 8 / 10e-6, 1e-3);
	/* across flows, window 2: flow 1's empty window and flow 0's 50 frames */
	j = lld_sink_report(s, NULL, 0);
	w = json_object_get(json_object_get(j, "rx"), "windows");
	ck_assert_double_eq_tol(json_real_value(json_array_get(json_object_get(w, "flow_min_bps"),
							       2)), 0, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_array_get(json_object_get(w, "flow_max_bps"),
							       2)), 50 * 125 * 8 / 0.1, 1e-6);
	ck_assert(json_is_null(json_array_get(json_object_get(w, "span_min_bps"), 1)));
	json_decref(j);
	lld_sink_free(s);
}
END_TEST

START_TEST(test_sink_report)
{
	struct lld_sink *s = new_sink(3, 0);
	uint64_t sent[3] = {10, 0, 0};
	json_t *j, *fl;

	for (uint64_t i = 0; i < 8; i++)
		feed(s, 0, i, 1000 + i * 1000000, 42);
	lld_sink_other(s);
	lld_sink_finish(s);
	j = lld_sink_report(s, sent, 2);
	fl = json_object_get(j, "flows");
	ck_assert_uint_eq(json_array_size(fl), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(fl, 0), "lost_sent")),
			 2);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "rx"), "other")),
			 1);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "rx"), "lost")),
			 2);
	ck_assert(json_is_object(json_object_get(json_object_get(j, "rx"), "owd_ns")));
	json_decref(j);
	lld_sink_free(s);
}
END_TEST

static int
parse(const char *line, struct lld_opts *o, char *err, size_t len)
{
	char buf[512], *argv[64], *save = NULL;
	int argc = 0;
	bool chk, help;

	snprintf(buf, sizeof(buf), "x %s", line);
	for (char *t = strtok_r(buf, " ", &save); t && argc < 63; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	return lld_opts_parse(argc, argv, o, &chk, &help, err, len);
}

/* A command line and the error it must be refused with. */
struct bad {
	const char *line, *want;
};

/* Every line refused (-EINVAL), its error naming what want says. */
static void
refused(const struct bad *bad, size_t n)
{
	struct lld_opts o;
	char err[256];

	for (size_t i = 0; i < n; i++) {
		err[0] = '\0';
		ck_assert_int_eq(parse(bad[i].line, &o, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].want) != NULL, "%s: got \"%s\", want \"%s\"",
			      bad[i].line, err, bad[i].want);
	}
}

START_TEST(test_opts)
{
	static const struct bad bad[] = {
		{"--rate 1M", "--tx or --rx"},
		{"--tx 0", "--rate or --total-rate"},
		{"--tx 0 --rate fast", "--rate: expected bits/s"},
		{"--tx 0 --rate 1M --total-rate 2M", "give one, not both"},
		{"--tx 0 --rate 1M --flows 0", "--flows: expected an integer 1..16777216"},
		{"--tx 0 --rate 1M --proto rdma", "--proto: \"rdma\" is not roce, udp or tcp"},
		{"--tx 0 --rate 1M --family 5", "--family: \"5\" is not 4 or 6"},
		{"--tx 0 --rate 1M --size 9019", "--size: \"9019\" is not a frame length"},
		{"--tx 0 --rate 1M --size 64 --proto roce", "--size: 64 is too short for roce"},
		{"--tx 0 --rate 1M --src fd00::1", "--src: \"fd00::1\" is not an IPv4 address"},
		{"--tx 0 --rate 1M --qp 16777215 --flows 2", "--qp:"},
		{"--tx 0 --rate 1M --duration 0", "--duration: expected seconds"},
		{"--tx 0 --rate 1M --bogus", "--bogus: unknown option"},
		{"--tx 0 --rate 1M extra", "\"extra\": unexpected argument"},
		{"--tx 0 --rate 1M --fg-flows 1", "--fg-flows: needs --fg-rate"},
		{"--tx 0 --rate 1M --fg-flows 2 --fg-rate 1M", "at most --flows (1)"},
		{"--tx 0 --flows 2 --fg-flows 1 --fg-rate 1M", "--rate or --total-rate"},
		{"--tx 0 --rate 1M --flows 2 --fg-flows 1 --fg-rate 1M --fg-size 60 --proto roce",
		 "--fg-size: 60 is too short for roce"},
		{"--tx 0 --rate 1M --fg-size 10000", "--fg-size: \"10000\" is not a frame length"},
		{"--tx 0 --rate 1M --fg-dscp 64", "--fg-dscp: expected an integer 0..63"},
	};
	struct lld_opts o;
	char err[256];

	refused(bad, LS_ARRAY_SIZE(bad));
	ck_assert_int_eq(parse("--tx a --rx b --flows 4 --total-rate 2G --proto roce,tcp "
			       "--family 4,6 --size 256,1500", &o, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(o.rate_bps, 0.5e9, 1e-6);
	ck_assert_uint_eq(o.n_shapes, 2);
	ck_assert_uint_eq(o.sizes[1], 1500);
}
END_TEST

/* Flows get their own 5-tuple (ports, then addresses) and QP. */
START_TEST(test_opts_flows)
{
	struct lld_opts o;
	struct lld_flow_spec a, b;
	char err[256];

	ck_assert_int_eq(parse("--tx 0 --rate 1M --flows 100000 --sport 60000", &o, err,
			       sizeof(err)), 0);
	lld_opts_flow(&o, 0, &a);
	lld_opts_flow(&o, 5536, &b);       /* 65536 - 60000 ports per address */
	ck_assert_uint_eq(a.sport, 60000);
	ck_assert_uint_eq(b.sport, 60000);
	ck_assert_uint_eq(b.src.a[3], a.src.a[3] + 1);
	ck_assert_uint_eq(b.qp, a.qp + 5536);
	lld_opts_flow(&o, 5535, &b);
	ck_assert_uint_eq(b.sport, 65535);
	/* foreground flows: their own size and DSCP; --total-rate is the rest's */
	ck_assert_int_eq(parse("--tx 0 --total-rate 3M --flows 4 --fg-flows 1 --fg-rate 1k "
			       "--fg-size 128 --dscp 10 --size 1500", &o, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(o.rate_bps, 1e6, 1e-6);
	ck_assert_double_eq_tol(o.fg_rate_bps, 1e3, 1e-9);
	lld_opts_flow(&o, 0, &a);
	lld_opts_flow(&o, 1, &b);
	ck_assert_uint_eq(a.len, 128);
	ck_assert_uint_eq(b.len, 1500);
	ck_assert_uint_eq(a.dscp, 10);     /* --fg-dscp defaults to --dscp */
	ck_assert_int_eq(parse("--tx 0 --rate 1M --flows 2 --fg-flows 1 --fg-rate 1M "
			       "--fg-dscp 46", &o, err, sizeof(err)), 0);
	lld_opts_flow(&o, 0, &a);
	lld_opts_flow(&o, 1, &b);
	ck_assert_uint_eq(a.dscp, 46);
	ck_assert_uint_eq(b.dscp, 0);
}
END_TEST

/* The foreground's quantiles cover its own frames in the measured span. */
START_TEST(test_sink_foreground)
{
	struct lld_sink_params p = {.n_flows = 2, .hz = HZ, .start = 0, .window = HZ / 10,
				    .n_windows = 1000, .settle = HZ, .detail_flows = 0,
				    .tag = 42, .fg_flows = 1};
	struct lld_sink *s = lld_sink_create(&p);
	json_t *j, *fg;

	ck_assert_ptr_nonnull(s);
	for (uint64_t i = 0; i < 100; i++) {
		struct lld_rx r = {.flow = (uint32_t)(i & 1), .seq = i / 2,
				   .tag = 42, .payload_len = 100, .shape = LLD_UDP};
		uint64_t now = 1000 + i * (HZ / 50);   /* 2 s; the first second settles */

		/* foreground 5 us, background 500 us; 1 ms while settling */
		r.tx_tsc = now - (now < 1000 + HZ ? HZ / 1000 : (r.flow ? HZ / 2000 : HZ / 200000));
		lld_sink_frame(s, &r, 125, now);
	}
	lld_sink_finish(s);
	j = lld_sink_report(s, NULL, 2);
	fg = json_object_get(json_object_get(j, "rx"), "fg_owd_ns");
	ck_assert(json_is_object(fg));
	ck_assert_int_eq(json_integer_value(json_object_get(fg, "count")), 25);
	ck_assert_int_le(json_integer_value(json_object_get(fg, "max")), 5200);
	ck_assert_int_ge(json_integer_value(json_object_get(fg, "min")), 4800);
	json_decref(j);
	lld_sink_free(s);
}
END_TEST

/* The phase options: defaults, and each refused with its name and reason. */
START_TEST(test_opts_phases)
{
	static const struct bad bad[] = {
		{"--tx 0 --rate 1M --phase-bytes 100k", "--phase-bytes: needs --tx and --rx"},
		{"--rx 0 --phase-bytes 100k", "--phase-bytes: needs --tx and --rx"},
		{"--tx 0 --rx 1 --rate 1M --phases 3", "--phases: needs --phase-bytes"},
		{"--tx 0 --rx 1 --rate 1M --phase-timeout-ms 5",
		 "--phase-timeout-ms: needs --phase-bytes"},
		{"--tx 0 --rx 1 --rate 1M --phase-bytes 0",
		 "--phase-bytes: expected bytes 1..100G"},
		{"--tx 0 --rx 1 --rate 1M --phase-bytes 200G", "--phase-bytes: expected bytes"},
		{"--tx 0 --rx 1 --rate 1M --phase-bytes 1x", "--phase-bytes: expected bytes"},
		{"--tx 0 --rx 1 --rate 1M --phase-bytes 1k --phases 0",
		 "--phases: expected an integer 1..1000000"},
		{"--tx 0 --rx 1 --rate 1M --phase-bytes 1k --phase-timeout-ms 0",
		 "--phase-timeout-ms: expected an integer 1..3600000"},
	};
	struct lld_opts o;
	char err[256];

	refused(bad, LS_ARRAY_SIZE(bad));
	ck_assert_int_eq(parse("--tx 0 --rx 0 --rate 1M", &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.phase_bytes, 0);
	ck_assert_uint_eq(o.phases, 0);
	ck_assert_int_eq(parse("--tx 0 --rx 0 --rate 1M --phase-bytes 1.5M", &o, err,
			       sizeof(err)), 0);
	ck_assert_uint_eq(o.phase_bytes, 1500000);
	ck_assert_uint_eq(o.phases, 1);
	ck_assert_uint_eq(o.phase_timeout_ms, 10000);
	ck_assert_int_eq(parse("--tx 0 --rx 0 --rate 1M --phase-bytes 100 --phases 10 "
			       "--phase-timeout-ms 250", &o, err, sizeof(err)), 0);
	ck_assert_uint_eq(o.phase_bytes, 100);
	ck_assert_uint_eq(o.phases, 10);
	ck_assert_uint_eq(o.phase_timeout_ms, 250);
	/* ceil(B / frame length): the last frame of a phase may be partly empty */
	ck_assert_uint_eq(lld_phase_frames(100000, 1498), 67);
	ck_assert_uint_eq(lld_phase_frames(1498, 1498), 1);
	ck_assert_uint_eq(lld_phase_frames(1499, 1498), 2);
	ck_assert_uint_eq(lld_phase_frames(100000000000ULL, 60), 1666666667);
}
END_TEST

static struct lld_phase *
new_phase(const uint32_t *frames, uint32_t flows, uint32_t count, uint64_t timeout)
{
	struct lld_phase_params p = {.n_flows = flows, .count = count, .bytes = 1000,
				     .hz = HZ, .start = 0, .timeout = timeout};
	struct lld_phase *ph = lld_phase_create(&p, frames);

	ck_assert_ptr_nonnull(ph);
	return ph;
}

/* A frame through the sink, then, when the sink had not seen it, the barrier
 * (as main.c's rx_poll does). */
static void
deliver(struct lld_sink *s, struct lld_phase *ph, uint32_t flow, uint64_t seq, uint64_t now)
{
	struct lld_rx r = {.flow = flow, .seq = seq, .tx_tsc = now - 5000, .tag = 42,
			   .payload_len = 100, .shape = LLD_ROCE};

	if (lld_sink_frame(s, &r, 125, now))
		lld_phase_rx(ph, flow, seq);
}

static double
jreal(json_t *o, const char *key, size_t i)
{
	json_t *v = json_object_get(o, key);

	return json_real_value(json_is_array(v) ? json_array_get(v, i) : v);
}

static json_int_t
jint(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/*
 * Two flows of 3 and 2 frames a phase, two phases. A phase ends only when
 * both flows have all theirs: out of order counts, a duplicate does not
 * (were it counted, flow 0 would be complete a frame early).
 */
START_TEST(test_phase_barrier)
{
	static const uint32_t frames[] = {3, 2};
	struct lld_sink *s = new_sink(2, 0);
	struct lld_phase *ph = new_phase(frames, 2, 2, HZ);
	json_t *j;

	lld_phase_begin(ph, HZ);                        /* phase 1 at 1 s */
	deliver(s, ph, 0, 2, HZ + 10);                  /* 2 before 0 */
	deliver(s, ph, 0, 0, HZ + 20);
	deliver(s, ph, 0, 0, HZ + 30);                  /* a duplicate */
	deliver(s, ph, 1, 1, HZ + 40);
	deliver(s, ph, 1, 0, HZ + 50);                  /* flow 1 complete */
	deliver(s, ph, 7, 0, HZ + 60);                  /* not a flow: ignored */
	ck_assert_int_eq(lld_phase_poll(ph, HZ + 100), LLD_PHASE_RUNNING);
	deliver(s, ph, 0, 1, HZ + 200);
	ck_assert_int_eq(lld_phase_poll(ph, HZ + HZ / 4), LLD_PHASE_ENDED);
	ck_assert_int_eq(lld_phase_poll(ph, HZ + HZ / 4 + 1), LLD_PHASE_RUNNING);
	/* phase 2 at 1.25 s: numbers go on, 3..5 and 2..3 */
	lld_phase_begin(ph, HZ + HZ / 4);
	for (uint64_t q = 3; q < 6; q++)
		deliver(s, ph, 0, q, HZ + HZ / 2);
	deliver(s, ph, 1, 3, HZ + HZ / 2);
	deliver(s, ph, 1, 3, HZ + HZ / 2);
	ck_assert_int_eq(lld_phase_poll(ph, HZ + HZ / 2), LLD_PHASE_RUNNING);
	deliver(s, ph, 1, 2, 2 * HZ);
	ck_assert_int_eq(lld_phase_poll(ph, 2 * HZ), LLD_PHASE_LAST);
	ck_assert_uint_eq(lld_phase_done(ph), 2);
	lld_phase_begin(ph, 3 * HZ);                    /* after the last: nothing */
	ck_assert_int_eq(lld_phase_poll(ph, 3 * HZ), LLD_PHASE_RUNNING);
	j = lld_phase_report(ph);
	ck_assert_int_eq(jint(j, "count"), 2);
	ck_assert_int_eq(jint(j, "done"), 2);
	ck_assert_int_eq(jint(j, "bytes_per_flow"), 1000);
	ck_assert_int_eq(jint(j, "frames_per_flow"), 3);
	ck_assert_int_eq(jint(j, "timeouts"), 0);
	ck_assert_int_eq(jint(j, "lost_frames"), 0);
	ck_assert_double_eq_tol(jreal(j, "jct_s", 0), 1.0, 1e-12);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "durations_s")), 2);
	ck_assert_double_eq_tol(jreal(j, "durations_s", 0), 0.25, 1e-12);
	ck_assert_double_eq_tol(jreal(j, "durations_s", 1), 0.75, 1e-12);
	ck_assert_double_eq_tol(jreal(j, "start_s", 0), 1.0, 1e-12);
	ck_assert_double_eq_tol(jreal(j, "start_s", 1), 1.25, 1e-12);
	json_decref(j);
	lld_phase_free(ph);
	lld_sink_free(s);
}
END_TEST

/*
 * A lost frame never hangs the job: the timeout runs from the phase's last
 * frame leaving (not before: a phase still sending waits however long),
 * the missing frames are lost in that phase, and one of them arriving late
 * is not taken for a frame of the next phase.
 */
START_TEST(test_phase_timeout)
{
	static const uint32_t frames[] = {2, 2};
	uint64_t to = HZ / 10, t;
	struct lld_sink *s = new_sink(2, 0);
	struct lld_phase *ph = new_phase(frames, 2, 3, to);
	json_t *j;

	lld_phase_begin(ph, 0);
	deliver(s, ph, 0, 0, 10);
	deliver(s, ph, 0, 1, 20);
	deliver(s, ph, 1, 0, 30);                       /* flow 1's 1 is missing */
	ck_assert_int_eq(lld_phase_poll(ph, 5 * HZ), LLD_PHASE_RUNNING);
	lld_phase_sent(ph, 5 * HZ);
	lld_phase_sent(ph, 6 * HZ);                     /* the first call counts */
	ck_assert_int_eq(lld_phase_poll(ph, 5 * HZ + to - 1), LLD_PHASE_RUNNING);
	t = 5 * HZ + to;
	ck_assert_int_eq(lld_phase_poll(ph, t), LLD_PHASE_ENDED);
	lld_phase_begin(ph, t);
	deliver(s, ph, 1, 1, t + 10);                   /* phase 1's, late */
	deliver(s, ph, 0, 2, t + 20);
	deliver(s, ph, 0, 3, t + 30);
	deliver(s, ph, 1, 2, t + 40);
	ck_assert_int_eq(lld_phase_poll(ph, t + 50), LLD_PHASE_RUNNING);
	deliver(s, ph, 1, 3, t + 60);
	ck_assert_int_eq(lld_phase_poll(ph, t + 70), LLD_PHASE_ENDED);
	/* phase 3: nothing arrives */
	lld_phase_begin(ph, t + 70);
	lld_phase_sent(ph, t + 80);
	ck_assert_int_eq(lld_phase_poll(ph, t + 80 + to), LLD_PHASE_LAST);
	j = lld_phase_report(ph);
	ck_assert_int_eq(jint(j, "done"), 3);
	ck_assert_int_eq(jint(j, "timeouts"), 2);
	ck_assert_int_eq(jint(j, "lost_frames"), 1 + 4);
	ck_assert_int_eq(jint(j, "late_frames"), 1);
	ck_assert_double_eq_tol(jreal(j, "durations_s", 0), 5.1, 1e-12);
	ck_assert_double_eq_tol(jreal(j, "durations_s", 2), 0.1 + 10e-9, 1e-12);
	ck_assert_double_eq_tol(jreal(j, "jct_s", 0), (double)(t + 80 + to) / HZ, 1e-12);
	json_decref(j);
	lld_phase_free(ph);
	lld_sink_free(s);
}
END_TEST

/* Nothing completed: jct_s is null, the summary still says so. */
START_TEST(test_phase_none_done)
{
	static const uint32_t frames[] = {1}, zero[] = {0};
	struct lld_phase_params p = {.n_flows = 1, .count = 1, .hz = HZ};
	struct lld_phase *ph = new_phase(frames, 1, 4, HZ);
	json_t *j;

	ck_assert_ptr_null(lld_phase_create(&p, zero));
	ck_assert_int_eq(errno, EINVAL);
	lld_phase_begin(ph, 0);
	ck_assert_int_eq(lld_phase_poll(ph, 100 * HZ), LLD_PHASE_RUNNING);
	j = lld_phase_report(ph);
	ck_assert_int_eq(jint(j, "done"), 0);
	ck_assert(json_is_null(json_object_get(j, "jct_s")));
	ck_assert_uint_eq(json_array_size(json_object_get(j, "start_s")), 1);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "durations_s")), 0);
	json_decref(j);
	lld_phase_free(ph);
}
END_TEST

static Suite *
load_suite(void)
{
	Suite *s = suite_create("load");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_frames_valid);
	tcase_add_test(tc, test_frames_classified);
	tcase_add_test(tc, test_frames_bad);
	tcase_add_test(tc, test_sink_sequences);
	tcase_add_test(tc, test_sink_windows_exact);
	tcase_add_test(tc, test_sink_windows_stall);
	tcase_add_test(tc, test_sink_partial_and_gaps);
	tcase_add_test(tc, test_sink_more_gaps);
	tcase_add_test(tc, test_sink_report);
	tcase_add_test(tc, test_sink_foreground);
	tcase_add_test(tc, test_opts);
	tcase_add_test(tc, test_opts_flows);
	tcase_add_test(tc, test_opts_phases);
	tcase_add_test(tc, test_phase_barrier);
	tcase_add_test(tc, test_phase_timeout);
	tcase_add_test(tc, test_phase_none_done);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(load_suite)
