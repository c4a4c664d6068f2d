/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for repathing on silence (lib/repath): the answer-time
 * estimator and the limit it sets, the verdicts of a request, the choice of
 * a path, the per-destination marks.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ls_repath.h"
#include "ls_test.h"

static const struct ls_repath_params P = {
	.silence = 1000, .silence_max = 20000, .hold = 100000, .n_paths = 8,
};

/* Feed one answer of r ticks at t: a request starts the wait, the ACK
 * ends it. */
static uint32_t
answer(struct ls_repath_flow *s, uint32_t t, uint32_t r)
{
	ck_assert_int_eq(ls_repath_on_request(s, &P, t, NULL, NULL), LS_REPATH_STAY);
	ls_repath_on_ack(s, &P, t + r);
	return t + r + 1;
}

/* Constant answers: the limit settles on them (above the floor), stays at
 * the floor below it, and is capped. */
START_TEST(test_limit_follows_answers)
{
	struct ls_repath_flow s;
	uint32_t t = 1;

	ls_repath_flow_init(&s, &P);
	ck_assert_uint_eq(s.limit, P.silence);
	for (int i = 0; i < 200; i++)
		t = answer(&s, t, 5000);
	ck_assert_uint_eq(s.srtt >> 3, 5000);
	ck_assert_uint_ge(s.limit, 5000);
	ck_assert_uint_le(s.limit, 5000 + 50);     /* rttvar decays to ~0 */
	ls_repath_flow_init(&s, &P);
	for (int i = 0; i < 50; i++)
		t = answer(&s, t, 10);
	ck_assert_uint_eq(s.limit, P.silence);
	ls_repath_flow_init(&s, &P);
	for (int i = 0; i < 50; i++)
		t = answer(&s, t, 1000000);
	ck_assert_uint_eq(s.limit, P.silence_max);
}
END_TEST

/*
 * Jittery answers (a floor plus exponential delays, now and then a long
 * one): a wait longer than the limit in force would be a move of a healthy
 * flow. The adaptive limit moves far fewer than the fixed floor, over
 * several seeds and jitter scales.
 */
START_TEST(test_limit_spares_healthy_flows)
{
	for (uint64_t seed = 1; seed <= 5; seed++) {
		for (double scale = 500; scale <= 4000; scale *= 2) {
			struct ls_repath_flow s;
			uint32_t t = 1, adaptive = 0, fixed = 0;
			const int n = 20000;

			ls_rng_seed(seed);
			ls_repath_flow_init(&s, &P);
			for (int i = 0; i < n; i++) {
				uint32_t r = 300 + (uint32_t)(-scale * log(ls_rng_unit_open()));

				if (ls_rng_unit() < 0.001)
					r += 30000;        /* a stall: would move either way */
				adaptive += r > s.limit;
				fixed += r > P.silence;
				t = answer(&s, t, r);
			}
			/* exponential tails: srtt + 4 rttvar is past ~98% of them */
			ck_assert_msg(adaptive < n / 25, "seed %d scale %.0f: %u healthy waits over the "
				      "limit", (int)seed, scale, adaptive);
			ck_assert_msg(adaptive * 4 < fixed, "seed %d scale %.0f: adaptive %u vs fixed %u",
				      (int)seed, scale, adaptive, fixed);
		}
	}
}
END_TEST

/* Silence past the limit moves; the new path gets its own wait; moves
 * without an answer stop after n_paths; an answer starts over. */
START_TEST(test_verdicts)
{
	struct ls_repath_flow s;
	uint32_t t = 1;

	ls_repath_flow_init(&s, &P);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t, NULL, NULL), LS_REPATH_STAY);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t + P.silence, NULL, NULL), LS_REPATH_STAY);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t + P.silence + 1, NULL, NULL),
			 LS_REPATH_MOVE);
	t += P.silence + 1;
	for (int k = 0; k < P.n_paths; k++) {
		ls_repath_moved(&s, &P, t, (uint8_t)k);
		ck_assert_uint_eq(s.home, 0);           /* the first path left */
		ck_assert_int_eq(ls_repath_on_request(&s, &P, t + 1, NULL, NULL), LS_REPATH_STAY);
		t += P.silence + 1;
		ck_assert_int_eq(ls_repath_on_request(&s, &P, t, NULL, NULL),
				 k + 1 < P.n_paths ? LS_REPATH_MOVE : LS_REPATH_EXHAUSTED);
	}
	ck_assert_uint_eq(s.moves, P.n_paths);
	ls_repath_on_ack(&s, &P, t + 5);
	ck_assert_uint_eq(s.tries, 0);
	ck_assert_uint_eq(s.wait, 0);
}
END_TEST

static int
silent_yes(void *arg, uint8_t home)
{
	(void)home;
	return *(int *)arg;
}

/* Home after hold, unless the home path was found silent meanwhile; the
 * clock may wrap. */
START_TEST(test_home)
{
	struct ls_repath_flow s;
	uint32_t t = UINT32_MAX - P.hold / 2;   /* the hold crosses the wrap */
	int silent = 1;

	ls_repath_flow_init(&s, &P);
	ls_repath_moved(&s, &P, t, 3);
	ls_repath_on_ack(&s, &P, t + 10);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t + P.hold - 1, silent_yes, &silent),
			 LS_REPATH_STAY);
	ls_repath_on_ack(&s, &P, t + P.hold - 1);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t + P.hold, silent_yes, &silent),
			 LS_REPATH_STAY);
	ck_assert_uint_eq(s.until, t + 2 * P.hold);
	silent = 0;
	ls_repath_on_ack(&s, &P, t + P.hold + 1);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t + 2 * P.hold, silent_yes, &silent),
			 LS_REPATH_HOME);
	ck_assert_uint_eq(s.home, 3);
	ls_repath_went_home(&s);
	ck_assert_int_eq(ls_repath_on_request(&s, &P, t + 2 * P.hold + 1, silent_yes, &silent),
			 LS_REPATH_STAY);
}
END_TEST

/* Never the current path nor a silent one while others remain; the policy's
 * paths first; an even spread over the candidates. */
START_TEST(test_pick)
{
	unsigned int hits[8] = {0};

	ck_assert_int_eq(ls_repath_pick(~0ULL, 0, 0, 0, 1, 7), -1);
	for (uint32_t h = 0; h < 80000; h++) {
		int k = ls_repath_pick(0xff, 0x06, 0, 0, 8, h);

		ck_assert(k >= 3 && k <= 7);
		hits[k]++;
	}
	for (int k = 3; k <= 7; k++)
		ck_assert_msg(hits[k] > 15000 && hits[k] < 17000, "path %d: %u", k, hits[k]);
	/* the policy allows 4..5 only */
	for (uint32_t h = 0; h < 100; h++) {
		int k = ls_repath_pick(0x30, 0x06, 0, 4, 8, h);

		ck_assert_int_eq(k, 5);
	}
	/* the allowed ones are silent: any other not silent */
	for (uint32_t h = 0; h < 100; h++) {
		int k = ls_repath_pick(0x30, 0x30 | 0x0f, 0, 5, 8, h);

		ck_assert(k >= 6 && k <= 7);
	}
	/* everything silent: anything but the current path */
	for (uint32_t h = 0; h < 100; h++)
		ck_assert_int_ne(ls_repath_pick(0xff, 0xff, 0, 2, 8, h), 2);
	/* the host's entropy (no path): any */
	ck_assert_int_ge(ls_repath_pick(0xff, 0, 0, LS_REPATH_NO_PATH, 8, 1), 0);
	/* heard paths first, spread over them; never a silent or the current
	 * one even when heard; none of the candidates heard: as before */
	memset(hits, 0, sizeof(hits));
	for (uint32_t h = 0; h < 8000; h++) {
		int k = ls_repath_pick(0xff, 0x06, 0x01 | 0x02 | 0x10 | 0x80, 0, 8, h);

		ck_assert(k == 4 || k == 7);
		hits[k]++;
	}
	ck_assert_msg(hits[4] > 3600 && hits[7] > 3600, "%u %u", hits[4], hits[7]);
	for (uint32_t h = 0; h < 100; h++) {
		int k = ls_repath_pick(0xff, 0x06, 0x01 | 0x02, 0, 8, h);

		ck_assert(k >= 3 && k <= 7);
	}
	/* a single heard candidate: not everyone onto it */
	memset(hits, 0, sizeof(hits));
	for (uint32_t h = 0; h < 1000; h++)
		hits[ls_repath_pick(0xff, 0x06, 0x01 | 0x10, 0, 8, h)]++;
	ck_assert_msg(hits[4] < 400 && hits[3] > 100, "%u %u", hits[4], hits[3]);
	/* heard outside the policy's paths: the policy first */
	for (uint32_t h = 0; h < 100; h++)
		ck_assert_int_eq(ls_repath_pick(0x30, 0x06, 0x80, 4, 8, h), 5);
}
END_TEST

/* A destination's answers: paths heard after a tick, per destination, a
 * collision takes the slot over, paths past the table's width are not
 * remembered, tick arithmetic wraps. */
START_TEST(test_heard)
{
	struct ls_repath_heard m[16];
	uint32_t t = 0xfffffff0u;

	memset(m, 0, sizeof(m));
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 5, t), 0);
	ls_repath_heard_note(m, 16, 5, 2, t + 1);
	ls_repath_heard_note(m, 16, 5, 6, t + 20);        /* wraps past 0 */
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 5, t), 0x44);
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 5, t + 10), 0x40);
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 5, t + 30), 0);
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 21, t), 0);  /* same slot, other dest */
	ls_repath_heard_note(m, 16, 5, LS_REPATH_HEARD_PATHS, t + 40);  /* not kept */
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 5, t), 0x44);
	ls_repath_heard_note(m, 16, 21, 1, t + 50);
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 21, t), 0x2);
	ck_assert_uint_eq(ls_repath_heard_since(m, 16, 5, t), 0);
}
END_TEST

/* Marks hold for `hold`, accumulate per destination, and a collision takes
 * the slot over. */
START_TEST(test_marks)
{
	struct ls_repath_mark m[16] = {{0}};
	uint32_t t = 1000;

	ck_assert_uint_eq(ls_repath_marks(m, 16, 5, t), 0);
	ls_repath_mark(m, 16, 5, 2, t, &P);
	ls_repath_mark(m, 16, 5, 6, t + 10, &P);
	ck_assert_uint_eq(ls_repath_marks(m, 16, 5, t + 20), 0x44);
	ck_assert_uint_eq(ls_repath_marks(m, 16, 21, t + 20), 0);   /* same slot, other dest */
	ck_assert_uint_eq(ls_repath_marks(m, 16, 5, t + 10 + P.hold), 0);
	ls_repath_mark(m, 16, 21, 1, t + 30, &P);
	ck_assert_uint_eq(ls_repath_marks(m, 16, 21, t + 40), 0x2);
	ck_assert_uint_eq(ls_repath_marks(m, 16, 5, t + 40), 0);
	ls_repath_mark(m, 16, 21, LS_REPATH_NO_PATH, t + 50, &P);  /* ignored */
	ck_assert_uint_eq(ls_repath_marks(m, 16, 21, t + 60), 0x2);
}
END_TEST

static Suite *
repath_suite(void)
{
	Suite *s = suite_create("repath");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_limit_follows_answers);
	tcase_add_test(tc, test_limit_spares_healthy_flows);
	tcase_add_test(tc, test_verdicts);
	tcase_add_test(tc, test_home);
	tcase_add_test(tc, test_heard);
	tcase_add_test(tc, test_pick);
	tcase_add_test(tc, test_marks);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(repath_suite)
