/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the slice scheduler (lib/slice), on synthetic arrivals and
 * a simulated clock: every slice kept backlogged (or fed at a given rate),
 * the scheduler drained every microsecond, the bytes each slice got counted
 * on the wire. The expected shares are computed by hand from the issue's
 * rules: guaranteed minimum first, the excess by weight, never above a
 * maximum, latency slices first up to their maximum, work-conserving.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_slice.h"

#define HZ 1000000000ULL      /* 1 tick = 1 ns: easy to read */
#define OVH LS_SLICE_OVERHEAD

struct sim {
	struct ls_slice_sched *s;
	uint64_t now;
	uint64_t wire[LS_SLICE_MAX];   /* wire bytes sent per slice */
	uint64_t pkts[LS_SLICE_MAX];
	uint32_t len[LS_SLICE_MAX];    /* packet size each slice offers */
	uint64_t offered_bps[LS_SLICE_MAX]; /* 0: always backlogged */
	uint64_t credit[LS_SLICE_MAX];
};

static struct ls_slice_conf
conf(const char *name, uint64_t min_bps, uint64_t max_bps, uint32_t weight)
{
	struct ls_slice_conf c = {.min_bps = min_bps, .max_bps = max_bps,
				  .weight = weight, .qlen = 1024};

	snprintf(c.name, sizeof(c.name), "%s", name);
	return c;
}

static void
sim_init(struct sim *m, uint64_t link_bps)
{
	struct ls_slice_params p = {.hz = HZ, .link_bps = link_bps};

	memset(m, 0, sizeof(*m));
	m->s = ls_slice_create(&p);
	ck_assert_ptr_nonnull(m->s);
}

static int
sim_add(struct sim *m, struct ls_slice_conf c, uint32_t len, uint64_t offered_bps)
{
	int idx = ls_slice_set(m->s, &c);

	ck_assert_int_ge(idx, 0);
	m->len[idx] = len;
	m->offered_bps[idx] = offered_bps;
	return idx;
}

/* Run for secs: offer packets, drain every microsecond. The object is the
 * slice index, so the sink knows whose packet it got. */
static void
sim_run(struct sim *m, double secs)
{
	uint64_t end = m->now + (uint64_t)(secs * HZ);
	void *out[64];

	for (; m->now < end; m->now += 1000) {
		unsigned int n, i, k;

		for (k = 0; k < ls_slice_count(m->s); k++) {
			if (m->len[k] == 0)
				continue;
			if (m->offered_bps[k] == 0) {
				/* keep 64 queued */
				struct ls_slice_stats st;

				ls_slice_get(m->s, k, NULL, &st);
				for (i = st.backlog; i < 64; i++)
					ls_slice_enqueue(m->s, k, (void *)(uintptr_t)k, m->len[k]);
				continue;
			}
			m->credit[k] += m->offered_bps[k] / 1000000; /* bits per us */
			while (m->credit[k] >= (m->len[k] + OVH) * 8ULL) {
				m->credit[k] -= (m->len[k] + OVH) * 8ULL;
				ls_slice_enqueue(m->s, k, (void *)(uintptr_t)k, m->len[k]);
			}
		}
		while ((n = ls_slice_dequeue(m->s, m->now, out, 64)) > 0)
			for (i = 0; i < n; i++) {
				k = (unsigned int)(uintptr_t)out[i];
				m->wire[k] += m->len[k] + OVH;
				m->pkts[k]++;
			}
	}
}

static double
gbps(const struct sim *m, int k, double secs)
{
	return (double)m->wire[k] * 8 / secs / 1e9;
}

static void
assert_near(double got, double want, double rel, const char *what)
{
	ck_assert_msg(fabs(got - want) <= rel * want, "%s: got %.4f want %.4f", what, got, want);
}

/* min, then the excess by weight: link 10G, A min 2G w1, B w1, C w2.
 * Excess 8G split 1:1:2 -> A 2+2 = 4, B 2, C 4. */
START_TEST(test_min_and_weight)
{
	struct sim m;
	int a, b, c;

	sim_init(&m, 10000000000ULL);
	a = sim_add(&m, conf("a", 2000000000ULL, 0, 1), 1500, 0);
	b = sim_add(&m, conf("b", 0, 0, 1), 1500, 0);
	c = sim_add(&m, conf("c", 0, 0, 2), 1500, 0);
	sim_run(&m, 0.2);
	assert_near(gbps(&m, a, 0.2), 4.0, 0.01, "a");
	assert_near(gbps(&m, b, 0.2), 2.0, 0.01, "b");
	assert_near(gbps(&m, c, 0.2), 4.0, 0.01, "c");
	ls_slice_free(m.s);
}
END_TEST

/* A maximum holds even when the link is otherwise idle; packets/s too. */
START_TEST(test_max_bits_and_packets)
{
	struct sim m;
	int a, b;
	struct ls_slice_conf cb = conf("b", 0, 0, 1);

	sim_init(&m, 10000000000ULL);
	a = sim_add(&m, conf("a", 0, 1000000000ULL, 1), 1500, 0);
	cb.max_pps = 100000;
	b = sim_add(&m, cb, 64, 0);
	sim_run(&m, 0.2);
	assert_near(gbps(&m, a, 0.2), 1.0, 0.01, "a max 1G");
	assert_near((double)m.pkts[b] / 0.2, 100000, 0.01, "b max 100 kpps");
	ls_slice_free(m.s);
}
END_TEST

/* Work-conserving: alone, a slice gets the whole link whatever its weight;
 * and the link rate holds for small and jumbo frames. */
START_TEST(test_work_conserving)
{
	struct sim m;
	int a;

	sim_init(&m, 10000000000ULL);
	a = sim_add(&m, conf("a", 0, 0, 1), 9000, 0);
	sim_run(&m, 0.1);
	assert_near(gbps(&m, a, 0.1), 10.0, 0.01, "jumbo");
	ls_slice_free(m.s);
	sim_init(&m, 10000000000ULL);
	a = sim_add(&m, conf("a", 0, 0, 7), 64, 0);
	sim_run(&m, 0.1);
	assert_near(gbps(&m, a, 0.1), 10.0, 0.01, "64 B");
	ls_slice_free(m.s);
}
END_TEST

/* A latency slice offered 1G beside a saturating bulk slice gets all of its
 * 1G and its packets wait no more than a burst; bulk takes the rest. */
START_TEST(test_latency_priority)
{
	struct sim m;
	struct ls_slice_conf lc = conf("lat", 0, 2000000000ULL, 1);
	int l, b;

	lc.latency = true;
	sim_init(&m, 10000000000ULL);
	b = sim_add(&m, conf("bulk", 0, 0, 100), 9000, 0);
	l = sim_add(&m, lc, 200, 1000000000ULL);
	sim_run(&m, 0.2);
	assert_near(gbps(&m, l, 0.2), 1.0, 0.01, "latency gets its offer");
	assert_near(gbps(&m, b, 0.2), 9.0, 0.01, "bulk gets the rest");
	{
		struct ls_slice_stats st;

		ls_slice_get(m.s, l, NULL, &st);
		ck_assert_uint_eq(st.sent_prio, st.deq_pkts);
		ck_assert_uint_le(st.backlog, 8); /* drained every us */
		ck_assert_uint_eq(st.drops, 0);
	}
	ls_slice_free(m.s);
}
END_TEST

/* A latency slice beyond its maximum does not starve the rest. */
START_TEST(test_latency_capped)
{
	struct sim m;
	struct ls_slice_conf lc = conf("lat", 0, 3000000000ULL, 1);
	int l, b;

	lc.latency = true;
	sim_init(&m, 10000000000ULL);
	l = sim_add(&m, lc, 1500, 0);
	b = sim_add(&m, conf("bulk", 0, 0, 1), 1500, 0);
	sim_run(&m, 0.2);
	assert_near(gbps(&m, l, 0.2), 3.0, 0.01, "latency at its max");
	assert_near(gbps(&m, b, 0.2), 7.0, 0.01, "bulk");
	ls_slice_free(m.s);
}
END_TEST

START_TEST(test_queue_full_and_conf)
{
	struct ls_slice_params p = {.hz = HZ, .link_bps = 1000000};
	struct ls_slice_sched *s = ls_slice_create(&p);
	struct ls_slice_conf c = conf("q", 0, 0, 1);
	struct ls_slice_stats st;
	const char *why;
	void *out[32];
	int i, k;

	c.qlen = 16;
	k = ls_slice_set(s, &c);
	ck_assert_int_eq(k, 0);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(ls_slice_enqueue(s, k, &c, 100), 0);
	ck_assert_int_eq(ls_slice_enqueue(s, k, &c, 100), -ENOBUFS);
	ck_assert_int_eq(ls_slice_enqueue(s, 5, &c, 100), -ENOENT);
	ls_slice_get(s, k, NULL, &st);
	ck_assert_uint_eq(st.drops, 1);
	ck_assert_uint_eq(st.backlog, 16);
	ck_assert_int_eq(ls_slice_del(s, k), -EBUSY);
	c.qlen = 32;
	ck_assert_int_eq(ls_slice_set(s, &c), -EBUSY);
	ck_assert_uint_eq(ls_slice_drain(s, k, out, 32), 16);
	ck_assert_int_eq(ls_slice_set(s, &c), 0);
	ck_assert_int_eq(ls_slice_del(s, k), 0);
	ck_assert_int_eq(ls_slice_find(s, "q"), -ENOENT);
	/* bad shares are refused with a reason */
	c = conf("x", 5, 4, 1);
	ck_assert_int_eq(ls_slice_conf_check(&c, &why), -EINVAL);
	ck_assert_str_eq(why, "min_bps above max_bps");
	c = conf("x", 0, 0, 0);
	ck_assert_int_eq(ls_slice_set(s, &c), -EINVAL);
	c = conf("x", 0, 0, 1);
	c.qlen = 100;
	ck_assert_int_eq(ls_slice_conf_check(&c, &why), -EINVAL);
	c = conf("", 0, 0, 1);
	ck_assert_int_eq(ls_slice_conf_check(&c, &why), -EINVAL);
	for (i = 0; i < LS_SLICE_MAX; i++) {
		char n[16];

		snprintf(n, sizeof(n), "s%d", i);
		c = conf(n, 0, 0, 1);
		ck_assert_int_ge(ls_slice_set(s, &c), 0);
	}
	c = conf("one-too-many", 0, 0, 1);
	ck_assert_int_eq(ls_slice_set(s, &c), -ENOSPC);
	ls_slice_free(s);
}
END_TEST

/* Changing a slice's shares at run time takes effect (same queue). */
/* Two schedulers splitting one budget (a data path on two lcores): each
 * at its share of the link and of the slice's maximum. A: link 10G, slice
 * max 4G at share 0.75 -> 3G; B: share 0.25 -> 1G, beside an unlimited
 * slice that takes the rest of B's link share (2.5G). A share changes
 * rates and leaves tokens (no burst), survives ls_slice_set of the same
 * slice, and a new slice starts at the scheduler's share. */
START_TEST(test_share)
{
	struct sim a, b;
	int ka, kb, kf;

	sim_init(&a, 7500000000ULL);
	sim_init(&b, 2500000000ULL);
	ka = sim_add(&a, conf("cap", 0, 4000000000ULL, 1), 1500, 0);
	kb = sim_add(&b, conf("cap", 0, 4000000000ULL, 1), 1500, 0);
	kf = sim_add(&b, conf("free", 0, 0, 1), 1500, 0);
	ck_assert_int_eq(ls_slice_set_share(a.s, (unsigned int)ka, 750000), 0);
	ck_assert_int_eq(ls_slice_set_share(b.s, (unsigned int)kb, 250000), 0);
	ck_assert_int_eq(ls_slice_set_share(b.s, 40, 250000), -ENOENT);
	ck_assert_int_eq(ls_slice_set_share(b.s, (unsigned int)kb, LS_SLICE_SHARE_ONE + 1),
			 -EINVAL);
	sim_run(&a, 0.2);
	sim_run(&b, 0.2);
	assert_near(gbps(&a, ka, 0.2), 3.0, 0.01, "A's share of the max");
	assert_near(gbps(&b, kb, 0.2), 1.0, 0.01, "B's share of the max");
	assert_near(gbps(&b, kf, 0.2), 1.5, 0.01, "B's unlimited slice: the rest of its link");
	/* set again (same name): the share stays */
	ck_assert_int_eq(ls_slice_set(b.s, &(struct ls_slice_conf){.name = "cap",
		.max_bps = 4000000000ULL, .weight = 1, .qlen = 1024}), kb);
	memset(b.wire, 0, sizeof(b.wire));
	sim_run(&b, 0.2);
	assert_near(gbps(&b, kb, 0.2), 1.0, 0.01, "share kept through slice.set");
	/* a tiny share of a set rate is never 0 (which would mean no limit) */
	ck_assert_int_eq(ls_slice_set_share(b.s, (unsigned int)kb, 0), 0);
	memset(b.wire, 0, sizeof(b.wire));
	sim_run(&b, 0.1);
	ck_assert_uint_le(b.wire[kb], 2 * (1500 + OVH));
	ls_slice_free(a.s);
	ls_slice_free(b.s);
	{
		struct ls_slice_params p = {.hz = HZ, .link_bps = 10000000000ULL, .share = 500000};
		struct sim c;
		int k;

		memset(&c, 0, sizeof(c));
		c.s = ls_slice_create(&p);
		ck_assert_ptr_nonnull(c.s);
		k = sim_add(&c, conf("new", 0, 2000000000ULL, 1), 1500, 0);
		sim_run(&c, 0.2);
		assert_near(gbps(&c, k, 0.2), 1.0, 0.01, "a new slice at the scheduler's share");
		ls_slice_free(c.s);
	}
}
END_TEST

START_TEST(test_change_in_place)
{
	struct sim m;
	int a, b;
	struct ls_slice_conf ca = conf("a", 0, 0, 1);

	sim_init(&m, 10000000000ULL);
	a = sim_add(&m, ca, 1500, 0);
	b = sim_add(&m, conf("b", 0, 0, 1), 1500, 0);
	sim_run(&m, 0.1);
	assert_near(gbps(&m, a, 0.1), 5.0, 0.01, "a before");
	ca.weight = 4;
	ck_assert_int_eq(ls_slice_set(m.s, &ca), a);
	memset(m.wire, 0, sizeof(m.wire));
	sim_run(&m, 0.1);
	assert_near(gbps(&m, a, 0.1), 8.0, 0.01, "a after");
	assert_near(gbps(&m, b, 0.1), 2.0, 0.01, "b after");
	ls_slice_free(m.s);
}
END_TEST

static Suite *
slice_suite(void)
{
	Suite *s = suite_create("slice");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_min_and_weight);
	tcase_add_test(tc, test_max_bits_and_packets);
	tcase_add_test(tc, test_work_conserving);
	tcase_add_test(tc, test_latency_priority);
	tcase_add_test(tc, test_latency_capped);
	tcase_add_test(tc, test_queue_full_and_conf);
	tcase_add_test(tc, test_change_in_place);
	tcase_add_test(tc, test_share);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(slice_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
