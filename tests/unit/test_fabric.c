/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/fabric: the link model's arithmetic is exact (times,
 * queue depth, ECN, drops), ECMP hashing spreads and is independent between
 * switches, routes on leaf-spine fabrics have the expected next hops and
 * follow link state after the convergence delay, and every class of bad
 * topology is rejected with one "FILE: KEY: REASON" line naming the key.
 *
 * Topologies are written in C with single quotes turned into double quotes
 * (readable cases), or generated (leaf-spine of any size, with the same
 * addressing plan as config/fabric/). The shipped examples are loaded too,
 * through LS_SOURCE_ROOT, so they cannot rot. Everything is pure: no EAL.
 *
 * This file holds the link model and ECMP tests and the suite;
 * test_fabric_topo.c the topology, routing, validation and file tests;
 * test_fabric.h the helpers they share.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_fabric.h"

/* -------------------------------------------------------------------------
 * Link model
 */

START_TEST(test_link_single)
{
	struct ls_fab_chan *c = mkchan(1000, G10, 1 << 20, 0, 0, 9000);
	struct ls_fab_item it;
	bool ce = true;

	ck_assert_uint_eq(ls_fab_chan_head_ns(c), UINT64_MAX);
	ck_assert(!ls_fab_chan_pop(c, &it));
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 5000, 1500, true, (void *)c, 7, &ce),
			 LS_FAB_OK);
	ck_assert(!ce);
	/* 1500 B at 10 Gb/s = 1200 ns on the wire, then 1000 ns of delay */
	ck_assert_uint_eq(c->busy_until_ns, 6200);
	ck_assert_uint_eq(ls_fab_chan_head_ns(c), 7200);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 5000), 1500);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 5600), 750);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 6200), 0);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 4000), 2750); /* before arrival: by formula */
	ck_assert(ls_fab_chan_pop(c, &it));
	ck_assert_uint_eq(it.arrive_ns, 5000);
	ck_assert_uint_eq(it.depart_ns, 6200);
	ck_assert_uint_eq(it.deliver_ns, 7200);
	ck_assert_uint_eq(it.bytes, 1500);
	ck_assert(!it.lost);
	ck_assert_ptr_eq(it.pkt, c);
	ck_assert_uint_eq(it.tag, 7);
	ck_assert_uint_eq(c->st.pkts, 1);
	ck_assert_uint_eq(c->st.bytes, 1500);
	ck_assert_uint_eq(c->st.max_depth, 0);
	/* serialization rounds up: 100 B at 3 Gb/s = 266.67 ns -> 267 */
	c->p.rate_bps = 3000000000ULL;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 10000, 100, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_uint_eq(c->busy_until_ns, 10267);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 10000), 100); /* 100.125 rounds down */
	free(c);
}
END_TEST

START_TEST(test_link_queue)
{
	struct ls_fab_chan *c = mkchan(1000, G10, 1 << 20, 0, 0, 9000);
	struct ls_fab_item it;
	const uint64_t t0 = 1000000;

	/* a burst at one instant: packet k waits for k packets */
	for (int k = 0; k < 10; k++) {
		ck_assert_uint_eq(ls_fab_chan_depth(c, t0), (uint64_t)k * 1500);
		ck_assert_int_eq(ls_fab_chan_enqueue(c, t0, 1500, false, NULL, k, NULL),
				 LS_FAB_OK);
	}
	ck_assert_uint_eq(c->st.max_depth, 9 * 1500);
	for (int k = 0; k < 10; k++) {
		ck_assert(ls_fab_chan_pop(c, &it));
		ck_assert_uint_eq(it.tag, k);
		ck_assert_uint_eq(it.depart_ns, t0 + (uint64_t)(k + 1) * 1200);
		ck_assert_uint_eq(it.deliver_ns, t0 + (uint64_t)(k + 1) * 1200 + 1000);
	}
	/* decays linearly, reaches 0 when the transmitter idles, stays 0 */
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 6000), 7500);
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 12000 - 8), 10);
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 12000), 0);
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 1000000000), 0);

	/* arrivals every 600 ns, half the service time: +750 B per arrival */
	{
		uint64_t t1 = 10000000;

		for (int k = 0; k < 20; k++) {
			uint64_t t = t1 + (uint64_t)k * 600;

			ck_assert_uint_eq(ls_fab_chan_depth(c, t), (uint64_t)k * 750);
			ck_assert_int_eq(ls_fab_chan_enqueue(c, t, 1500, false, NULL, k, NULL),
					 LS_FAB_OK);
			ck_assert(ls_fab_chan_pop(c, &it));
			ck_assert_uint_eq(it.depart_ns, t1 + (uint64_t)(k + 1) * 1200);
		}
		ck_assert_uint_eq(c->st.max_depth, 19 * 750);
	}
	/* an idle gap: the next packet starts at its arrival */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 50000000, 1500, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert(ls_fab_chan_pop(c, &it));
	ck_assert_uint_eq(it.depart_ns, 50001200);
	free(c);
}
END_TEST

START_TEST(test_link_ecn)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 3000, 0, 9000);
	bool ce;

	/* burst: packet k sees 1500k queued; marked iff 1500k > 3000 */
	for (int k = 0; k < 8; k++) {
		ck_assert_int_eq(ls_fab_chan_enqueue(c, 100, 1500, true, NULL, 0, &ce), LS_FAB_OK);
		ck_assert_msg(ce == (k >= 3), "packet %d ce %d", k, ce);
	}
	ck_assert_uint_eq(c->st.ecn_marked, 5);
	/* not ECT: never marked, not counted */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 100, 1500, false, NULL, 0, &ce), LS_FAB_OK);
	ck_assert(!ce);
	ck_assert_uint_eq(c->st.ecn_marked, 5);
	/* threshold 0: ECN off */
	c->p.ecn_bytes = 0;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 100, 1500, true, NULL, 0, &ce), LS_FAB_OK);
	ck_assert(!ce);
	/* once the queue drains below the threshold, marks stop */
	c->p.ecn_bytes = 3000;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, c->busy_until_ns - 2400, 1500, true, NULL, 0,
					     &ce), LS_FAB_OK);
	ck_assert(!ce); /* saw exactly 3000: not above */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, c->busy_until_ns - 3700, 1500, true, NULL, 0,
					     &ce), LS_FAB_OK);
	ck_assert(ce); /* saw 4625 */
	free(c);
}
END_TEST

/* RED-ECN: between K_min and K_max the share of marks follows
 * P_max (d - K_min) / (K_max - K_min); beyond K_max every ECT packet */
START_TEST(test_link_ecn_red)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 10000, 0, 9000);
	/* depths ahead of the probe packet, and the share expected */
	static const uint32_t depth[] = {5000, 10000, 20000, 30000, 50000, 50400, 60000};
	static const double want[] = {0, 0, 0.05, 0.1, 0.2, 1, 1};
	bool ce;

	c->p.ecn_max_bytes = 50000;
	c->p.ecn_pmax = 0.2;
	for (unsigned int k = 0; k < sizeof(depth) / sizeof(depth[0]); k++) {
		int marks = 0, n = 20000;

		for (int i = 0; i < n; i++) {
			/* a queue of exactly depth[k] bytes ahead: busy until then */
			c->head = c->tail;
			c->busy_until_ns = 1000000 + (uint64_t)depth[k] * 8 / 10;
			ck_assert_int_eq(ls_fab_chan_enqueue(c, 1000000, 64, true, NULL, 0, &ce),
					 LS_FAB_OK);
			marks += ce;
		}
		/* binomial: 5 sigma of n = 20000 at p <= 0.2 is < 0.015 */
		ck_assert_msg(fabs((double)marks / n - want[k]) < 0.015,
			      "depth %u: %.4f marked, want %.3f", depth[k], (double)marks / n,
			      want[k]);
	}
	free(c);
}
END_TEST

START_TEST(test_link_tail_drop)
{
	struct ls_fab_chan *c = mkchan(0, G10, 9000, 0, 0, 9000);
	int ok = 0;

	/* accepted while depth + 1500 <= 9000: depths 0..7500, six packets */
	for (int k = 0; k < 10; k++) {
		enum ls_fab_verdict v = ls_fab_chan_enqueue(c, 0, 1500, false, NULL, 0, NULL);

		ck_assert_int_eq(v, k < 6 ? LS_FAB_OK : LS_FAB_DROP_TAIL);
		ok += v == LS_FAB_OK;
	}
	ck_assert_int_eq(ok, 6);
	ck_assert_uint_eq(c->st.drop_tail, 4);
	ck_assert_uint_eq(c->st.pkts, 6);
	ck_assert_uint_eq(c->st.max_depth, 9000);
	/* one service time later 1500 B have left: exactly room for one more */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 1199, 1500, false, NULL, 0, NULL),
			 LS_FAB_DROP_TAIL);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 1200, 1500, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 1200, 1500, false, NULL, 0, NULL),
			 LS_FAB_DROP_TAIL);
	/* a smaller packet still fits where a big one does not */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 2400, 1000, false, NULL, 0, NULL), LS_FAB_OK);
	free(c);

	/* FIFO slots: LS_FAB_FIFO packets, then tail drop even with buffer room */
	c = mkchan(0, G10, 0xffffffffU, 0, 0, 9000);
	for (int k = 0; k < LS_FAB_FIFO; k++)
		ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 64, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 64, false, NULL, 0, NULL), LS_FAB_DROP_TAIL);
	ck_assert(ls_fab_chan_pop(c, NULL));
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 64, false, NULL, 0, NULL), LS_FAB_OK);
	free(c);
}
END_TEST

START_TEST(test_link_loss)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 0, 0.1, 9000);
	struct ls_fab_item it;
	uint64_t lost = 0, t = 0;
	const int n = 100000;

	for (int k = 0; k < n; k++, t += 1000) {
		ck_assert_int_eq(ls_fab_chan_enqueue(c, t, 1000, true, NULL, 0, NULL), LS_FAB_OK);
		ck_assert(ls_fab_chan_pop(c, &it));
		lost += it.lost;
	}
	/* binomial sd ~95: +-600 is more than 6 sd */
	ck_assert_msg(lost > 9400 && lost < 10600, "lost %lu of %d", (unsigned long)lost, n);
	ck_assert_uint_eq(c->st.drop_loss, lost);
	ck_assert_uint_eq(c->st.pkts, n); /* lost packets used the link */
	ck_assert_uint_eq(c->st.bytes, (uint64_t)n * 1000);
	free(c);

	/* loss 0 and 1 are exact */
	c = mkchan(0, G10, 1 << 20, 0, 1.0, 9000);
	for (int k = 0; k < 100; k++) {
		ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 100, false, NULL, 0, NULL), LS_FAB_OK);
		ck_assert(ls_fab_chan_pop(c, &it));
		ck_assert(it.lost);
	}
	free(c);
}
END_TEST

START_TEST(test_link_mtu_down)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 0, 0, 1500);
	bool ce = true;

	/* the MTU is the IP packet's: a 1500-byte packet is 1538 bytes offered */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1500 + LS_FAB_L2_BYTES + 1, false, NULL, 0, &ce),
			 LS_FAB_DROP_MTU);
	ck_assert(!ce);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1500, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_uint_eq(c->st.drop_mtu, 1);
	c->up = false;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 100, false, NULL, 0, NULL), LS_FAB_DROP_DOWN);
	ck_assert_uint_eq(c->st.drop_down, 1);
	ck_assert_uint_eq(c->st.pkts, 1);
	/* a drop does not occupy the transmitter */
	ck_assert_uint_eq(c->busy_until_ns, 1200);
	free(c);
	/* a packet of exactly the MTU passes */
	c = mkchan(0, G10, 1 << 20, 0, 0, 1500);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1500 + LS_FAB_L2_BYTES, false, NULL, 0, NULL),
			 LS_FAB_OK);
	free(c);
}
END_TEST

START_TEST(test_link_delay_change)
{
	struct ls_fab_chan *c = mkchan(100000, G10, 1 << 20, 0, 0, 9000);
	struct ls_fab_item it;
	uint64_t prev = 0;

	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1500, false, NULL, 1, NULL), LS_FAB_OK);
	c->p.delay_ns = 100;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 5000, 1500, false, NULL, 2, NULL), LS_FAB_OK);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 200000, 1500, false, NULL, 3, NULL), LS_FAB_OK);
	for (uint32_t k = 1; k <= 3; k++) {
		ck_assert(ls_fab_chan_pop(c, &it));
		ck_assert_uint_eq(it.tag, k);
		ck_assert_uint_ge(it.deliver_ns, prev);
		prev = it.deliver_ns;
	}
	/* the second was held behind the first; the third is on the new delay */
	ck_assert_uint_eq(prev, 200000 + 1200 + 100);
	free(c);
}
END_TEST

/* -------------------------------------------------------------------------
 * ECMP
 */

START_TEST(test_hash_spread)
{
	static const int ns[] = { 2, 4, 8, 3 };
	uint64_t s = 42;
	const int flows = 10000;

	for (size_t m = 0; m < sizeof(ns) / sizeof(ns[0]); m++) {
		int cnt[8] = { 0 }, n = ns[m];
		double want = (double)flows / n;

		for (int i = 0; i < flows; i++) {
			struct flow fl;

			rand_flow(&s, i, &fl);
			cnt[fhash(0x1234567u, &fl) % (uint32_t)n]++;
		}
		for (int b = 0; b < n; b++)
			ck_assert_msg(cnt[b] > want * 0.9 && cnt[b] < want * 1.1,
				      "n %d bucket %d: %d (want %.0f)", n, b, cnt[b], want);
	}
}
END_TEST

/* Sequential ports on one address pair (a single client's connections) spread too. */
START_TEST(test_hash_spread_ports)
{
	struct ls_addr a, b;
	int cnt[4] = { 0 };

	ck_assert_int_eq(ls_addr_parse("10.1.0.1", &a), 0);
	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &b), 0);
	for (int p = 0; p < 10000; p++)
		cnt[ls_fab_flow_hash(99, &a, &b, 17, (uint16_t)(20000 + p), 4791, 0) % 4]++;
	for (int i = 0; i < 4; i++)
		ck_assert_msg(cnt[i] > 2250 && cnt[i] < 2750, "bucket %d: %d", i, cnt[i]);
}
END_TEST

START_TEST(test_hash_stable_independent)
{
	struct ls_fabric *f = clos(2, 2, 1, 0);
	uint32_t s1 = f->nodes[ls_fab_node_find(f, "leaf1")].seed;
	uint32_t s2 = f->nodes[ls_fab_node_find(f, "spine1")].seed;
	int joint[2][2] = { { 0 } }, same = 0;
	uint64_t s = 7;

	/* every switch gets its own seed */
	for (int i = 0; i < f->n_switches; i++)
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(f->nodes[i].seed, f->nodes[j].seed);
	for (int i = 0; i < 10000; i++) {
		struct flow fl, fl2;
		uint32_t h1, h2;

		rand_flow(&s, i, &fl);
		h1 = fhash(s1, &fl);
		h2 = fhash(s2, &fl);
		/* stable: the same flow hashes the same */
		ck_assert_uint_eq(h1, fhash(s1, &fl));
		same += h1 == h2;
		joint[h1 % 2][h2 % 2]++;
		/* every field counts */
		fl2 = fl;
		fl2.sport ^= 1;
		ck_assert_uint_ne(fhash(s1, &fl2), h1);
		fl2 = fl;
		fl2.proto ^= 1;
		ck_assert_uint_ne(fhash(s1, &fl2), h1);
		fl2 = fl;
		fl2.dst.a[3] ^= 1;
		ck_assert_uint_ne(fhash(s1, &fl2), h1);
		if (fl.src.family == LS_AF_INET6) {
			fl2 = fl;
			fl2.label ^= 1;
			ck_assert_uint_ne(fhash(s1, &fl2), h1);
		}
	}
	ck_assert_int_lt(same, 5);
	/* two switches choose independently: each of 4 cells ~2500 */
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			ck_assert_msg(joint[a][b] > 2250 && joint[a][b] < 2750,
				      "joint[%d][%d] = %d", a, b, joint[a][b]);
	ls_fab_free(f);
}
END_TEST

START_TEST(test_next_hop)
{
	struct ls_fabric *f = clos(4, 4, 4, 0);
	int leaf1 = ls_fab_node_find(f, "leaf1"), h16 = ls_fab_node_find(f, "h16");
	int h1 = ls_fab_node_find(f, "h1"), cnt[LS_FAB_MAX_CHANS] = { 0 };
	const struct ls_fab_route *r = route(f, leaf1, h16);
	uint64_t s = 3;

	ck_assert_int_ge(leaf1, 0);
	ck_assert_int_ge(h16, 0);
	ck_assert_uint_eq(r->n, 4);
	for (uint32_t h = 0; h < 1000; h++)
		ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, (uint16_t)h16, h),
				 r->chan[h % 4]);
	for (int i = 0; i < 10000; i++) {
		struct flow fl;
		int c;

		rand_flow(&s, i, &fl);
		c = ls_fab_next_hop(f, (uint16_t)leaf1, (uint16_t)h16,
				    fhash(f->nodes[leaf1].seed, &fl));
		ck_assert(route_has(r, c));
		cnt[c]++;
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(cnt[r->chan[i]] > 2250 && cnt[r->chan[i]] < 2750,
			      "chan %u: %d", r->chan[i], cnt[r->chan[i]]);
	/* local host: its down channel, whatever the hash */
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, (uint16_t)h1, 12345),
			 f->nodes[h1].down_chan);
	/* from a host, or to a switch: no route */
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)h1, (uint16_t)h16, 0), -ENETUNREACH);
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, 0, 0), -ENETUNREACH);
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, f->n_nodes, 0), -EINVAL);
	ls_fab_free(f);
}
END_TEST

/* The flow hash is part of the model: which path a flow takes must not move
 * between versions (labs compare runs). Values from the first version of
 * this hash. */
START_TEST(test_hash_pinned)
{
	struct ls_addr a, b, c, d;

	ck_assert_int_eq(ls_addr_parse("10.1.0.1", &a), 0);
	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &b), 0);
	ck_assert_int_eq(ls_addr_parse("fd00:1::1", &c), 0);
	ck_assert_int_eq(ls_addr_parse("fd00:2::1", &d), 0);
	ck_assert_uint_eq(ls_fab_flow_hash(0x1234567u, &a, &b, 17, 49152, 862, 0), 0x5f75a094u);
	ck_assert_uint_eq(ls_fab_flow_hash(0xdeadbeefu, &b, &a, 6, 0, 0, 0), 0xbe30def8u);
	ck_assert_uint_eq(ls_fab_flow_hash(7, &a, &b, 1, 0, 0, 0), 0x9b1c4de4u);
	ck_assert_uint_eq(ls_fab_flow_hash(0x1234567u, &c, &d, 17, 49152, 862, 0xabcde),
			  0x651e78a9u);
	ck_assert_uint_eq(ls_fab_flow_hash(0, &c, &a, 17, 1, 2, 3), 0xd1189855u);
}
END_TEST

/* The emulator's IPv4 fast path hashes straight from the packet: it must give
 * exactly ls_fab_flow_hash, or ECMP would send a flow two ways. */
START_TEST(test_hash_v4_same)
{
	uint64_t s = 11;

	for (int i = 0; i < 100000; i++) {
		struct flow fl;
		uint32_t seed = (uint32_t)(s * 0x9e3779b97f4a7c15ULL >> 32);

		rand_flow(&s, 2 * i, &fl); /* even: IPv4 */
		ck_assert_int_eq(fl.src.family, LS_AF_INET);
		ck_assert_uint_eq(ls_fab_flow_hash_v4(seed, fl.src.a, fl.dst.a, fl.proto, fl.sport,
						      fl.dport),
				  ls_fab_flow_hash(seed, &fl.src, &fl.dst, fl.proto, fl.sport,
						   fl.dport, 0));
	}
}
END_TEST

/* ls_fab_mod is hash % n without a division, for every n a route can have. */
START_TEST(test_mod_exact)
{
	static const uint32_t edge[] = { 0, 1, 2, 3, 15, 16, 17, 0x7fffffffu, 0x80000000u,
					 0xfffffff0u, 0xfffffffeu, 0xffffffffu };
	uint64_t s = 5;
	uint32_t bad = 0, bad_h = 0, bad_n = 0;

	for (uint8_t n = 1; n <= LS_FAB_MAX_ECMP; n++) {
		for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
			ck_assert_uint_eq(ls_fab_mod(edge[i], n), edge[i] % n);
		/* counted, asserted once: check marks every passing assertion
		 * with a write(2), 6.4 M of them here (27 s of the suite's time
		 * natively, a minute under qemu-aarch64) */
		for (int i = 0; i < 200000; i++) {
			uint32_t h, h2;

			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			h = (uint32_t)(s >> 32);
			h2 = n * (h / n) - 1;
			if ((ls_fab_mod(h, n) != h % n || ls_fab_mod(h2, n) != h2 % n) &&
			    bad++ == 0) {
				bad_h = h;
				bad_n = n;
			}
		}
	}
	ck_assert_msg(bad == 0, "%u wrong, the first: h %u (or n * (h / n) - 1), n %u", bad,
		      bad_h, bad_n);
}
END_TEST

/* The inline IPv4 host lookup (the emulator's, per packet) finds every host
 * of a large fabric and nothing else, like the generic one. */
START_TEST(test_host_by_v4)
{
	struct ls_fabric *f = clos(2, 16, 16, 0); /* 256 hosts: 10.<leaf>.0.<host> */
	uint64_t s = 9;
	int found = 0;

	for (uint16_t i = 0; i < f->n_nodes; i++) {
		const struct ls_fab_node *n = &f->nodes[i];

		if (n->kind != LS_FAB_HOST || n->addr4.family != LS_AF_INET)
			continue;
		ck_assert_int_eq(ls_fab_host_by_v4(f, n->addr4.a), i);
		ck_assert_int_eq(ls_fab_host_by_addr(f, &n->addr4), i);
		found++;
	}
	ck_assert_int_eq(found, 256);
	for (int i = 0; i < 100000; i++) {
		struct ls_addr a = { .family = LS_AF_INET };
		uint32_t v = (uint32_t)ls_fab_rand(&s);
		int want = -1;

		memcpy(a.a, &v, 4);
		if (i & 1) { /* near the hosts' addresses */
			a.a[0] = 10;
			a.a[1] %= 20;
			a.a[2] = (uint8_t)(a.a[2] < 200 ? 0 : 1);
			a.a[3] %= 20;
		}
		for (uint16_t k = f->n_switches; k < f->n_nodes; k++)
			if (ls_addr_eq(&f->nodes[k].addr4, &a))
				want = k;
		ck_assert_int_eq(ls_fab_host_by_v4(f, a.a), want);
	}
	ls_fab_free(f);
}
END_TEST

static Suite *
fabric_suite(void)
{
	Suite *s = suite_create("fabric");
	TCase *tc;

	tc = tcase_create("link");
	tcase_add_test(tc, test_link_single);
	tcase_add_test(tc, test_link_queue);
	tcase_add_test(tc, test_link_ecn);
	tcase_add_test(tc, test_link_ecn_red);
	tcase_add_test(tc, test_link_tail_drop);
	tcase_add_test(tc, test_link_loss);
	tcase_add_test(tc, test_link_mtu_down);
	tcase_add_test(tc, test_link_delay_change);
	suite_add_tcase(s, tc);

	tc = tcase_create("ecmp");
	tcase_add_test(tc, test_hash_spread);
	tcase_add_test(tc, test_hash_spread_ports);
	tcase_add_test(tc, test_hash_stable_independent);
	tcase_add_test(tc, test_next_hop);
	tcase_add_test(tc, test_hash_pinned);
	tcase_add_test(tc, test_hash_v4_same);
	tcase_add_test(tc, test_mod_exact);
	tcase_add_test(tc, test_host_by_v4);
	suite_add_tcase(s, tc);

	fabric_topo_tcases(s);
	return s;
}

LS_TEST_MAIN_TMPDIR(fabric_suite, "test_fabric")
