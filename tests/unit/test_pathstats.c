/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for per-path telemetry.
 *
 * Time is a parameter of every call, so the tests drive a simulated clock
 * and play both roles, lcore and control thread, from one thread in a fixed
 * order. That makes each hand-off between the two deterministic and lets a
 * test stop exactly where the interesting state is (control holding a slot,
 * a probe one nanosecond before its time-out, a sequence number about to
 * wrap). One test at the end does run the two sides on two threads, to
 * check that nothing is lost or double-counted when they really race.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ls_pathstats.h"
#include "ls_test.h"

#define NS      1ULL
#define US      (1000 * NS)
#define MS      (1000 * US)
#define SEC     (1000 * MS)
#define TMO     (100 * MS)
#define T0      (1000 * SEC)   /* epoch 1000 */

#define TRACK   512            /* outstanding-probe ring of the tests' path */

static struct ls_path_live *P;
static struct ls_path_window *W;
static struct ls_path_track track[TRACK];

static void
setup(void)
{
	P = malloc(sizeof(*P));
	W = malloc(sizeof(*W));
	ck_assert_ptr_nonnull(P);
	ck_assert_ptr_nonnull(W);
	/* Garbage first: init must not rely on zeroed memory. */
	memset(P, 0xa5, sizeof(*P));
	memset(W, 0x5a, sizeof(*W));
	memset(track, 0xa5, sizeof(track));
	ls_path_live_init(P, track, TRACK, T0);
	ls_path_window_init(W);
}

static void
teardown(void)
{
	ls_path_window_free(W);
	free(P);
	free(W);
}

static enum ls_path_rx
reply(uint32_t seq, uint64_t now, int64_t rtt)
{
	int64_t s[LS_PM_MAX] = { rtt, rtt / 2 + 7, rtt / 2 - 7 };

	return ls_path_on_reply(P, seq, now, s);
}

static uint64_t
cur_slot_count(void)
{
	return P->slot[P->cur].m[LS_PM_RTT].count;
}

/* --- sequence tracking --------------------------------------------------- */

START_TEST(test_in_order_no_loss)
{
	uint64_t t = T0;
	uint32_t i;

	for (i = 0; i < 1000; i++, t += MS) {
		ls_path_tick(P, t, TMO);
		ls_path_on_send(P, i, t);
		ck_assert_int_eq(reply(i, t + 50 * US, 50000), LS_PATH_RX_OK);
	}
	ls_path_tick(P, t + 10 * TMO, TMO);
	ck_assert_uint_eq(P->c.sent, 1000);
	ck_assert_uint_eq(P->c.received, 1000);
	ck_assert_uint_eq(P->c.lost, 0);
	ck_assert_uint_eq(P->c.late + P->c.reordered + P->c.duplicated +
			  P->c.unknown, 0);
	ck_assert_uint_eq(P->consecutive_lost, 0);
	ck_assert_uint_eq(P->max_seq_rx, 999);
	ck_assert(P->any_rx);
	ck_assert_int_eq(P->last[LS_PM_RTT], 50000);
	ck_assert_int_eq(P->last[LS_PM_FWD], 25007);
	ck_assert_uint_eq(P->last_rx_ns, t - MS + 50 * US);
}
END_TEST

START_TEST(test_drop_every_tenth)
{
	uint64_t t = T0, t_first = T0;
	uint32_t i;

	for (i = 0; i < 1000; i++, t += MS) {
		ls_path_tick(P, t, TMO);
		ls_path_on_send(P, i, t);
		if (i % 10 != 0)
			ck_assert_int_eq(reply(i, t + 50 * US, 50000), LS_PATH_RX_OK);
		/* Probe 0 is due exactly at t_first + TMO, not a ns earlier. */
		if (t + MS == t_first + TMO) {
			ls_path_tick(P, t_first + TMO - 1, TMO);
			ck_assert_uint_eq(P->c.lost, 0);
		}
	}
	/* Probes 0..890 are past their time-out by now; 900..990 are not. */
	ck_assert_uint_eq(P->c.lost, 90);
	ls_path_tick(P, T0 + 990 * MS + TMO - 1, TMO);
	ck_assert_uint_eq(P->c.lost, 99);
	ls_path_tick(P, T0 + 990 * MS + TMO, TMO);
	ck_assert_uint_eq(P->c.lost, 100);
	ck_assert_uint_eq(P->c.received, 900);
	ck_assert_uint_eq(P->c.sent, 1000);
	/*
	 * Losses are counted in a row as they are declared: 900..990 all
	 * timed out after the last reply (999) came in.
	 */
	ck_assert_uint_eq(P->consecutive_lost, 10);
	reply(995, t + TMO, 1);
	ck_assert_uint_eq(P->consecutive_lost, 10); /* a duplicate proves nothing */
	/* Ticking again counts nothing twice. */
	ls_path_tick(P, t + 100 * SEC, TMO);
	ck_assert_uint_eq(P->c.lost, 100);
}
END_TEST

START_TEST(test_late_reply)
{
	uint64_t t = T0;
	uint32_t i;

	for (i = 0; i < 10; i++)
		ls_path_on_send(P, i, t + i * MS);
	for (i = 0; i < 10; i++)
		if (i != 5)
			ck_assert_int_eq(reply(i, t + i * MS + MS / 2, 1000), LS_PATH_RX_OK);
	ls_path_tick(P, t + 5 * MS + TMO, TMO);
	ck_assert_uint_eq(P->c.lost, 1);
	ck_assert_uint_eq(P->consecutive_lost, 1);
	ck_assert_uint_eq(cur_slot_count(), 9);

	ck_assert_int_eq(reply(5, t + 5 * MS + TMO + MS, 123456), LS_PATH_RX_LATE);
	ck_assert_uint_eq(P->c.lost, 0);
	ck_assert_uint_eq(P->c.late, 1);
	ck_assert_uint_eq(P->c.received, 9);
	ck_assert_uint_eq(P->c.reordered, 0);
	ck_assert_uint_eq(P->consecutive_lost, 0);
	/* The late reply's delay is real and goes into the histogram. */
	ck_assert_uint_eq(cur_slot_count(), 10);
	ck_assert_int_eq(P->slot[P->cur].m[LS_PM_RTT].max, 123456);
	ck_assert_int_eq(P->last[LS_PM_RTT], 123456);
	/* A second copy of the late reply is a duplicate. */
	ck_assert_int_eq(reply(5, t + 5 * MS + TMO + 2 * MS, 1), LS_PATH_RX_DUP);
	ck_assert_uint_eq(P->c.late, 1);
}
END_TEST

START_TEST(test_duplicates_and_unknown)
{
	ls_path_on_send(P, 7, T0);
	ck_assert_int_eq(reply(7, T0 + MS, 1000), LS_PATH_RX_OK);
	ck_assert_int_eq(reply(7, T0 + MS, 1000), LS_PATH_RX_DUP);
	ck_assert_int_eq(reply(7, T0 + 2 * MS, 1000), LS_PATH_RX_DUP);
	ck_assert_uint_eq(P->c.duplicated, 2);
	ck_assert_uint_eq(P->c.received, 1);
	/* Duplicates carry no new delay information. */
	ck_assert_uint_eq(cur_slot_count(), 1);

	/* Never sent, and same ring slot as 7 but another sequence. */
	ck_assert_int_eq(reply(8, T0, 1), LS_PATH_RX_UNKNOWN);
	ck_assert_int_eq(reply(7 + TRACK, T0, 1), LS_PATH_RX_UNKNOWN);
	/* Zeroed ring slots must not match sequence 0. */
	ck_assert_int_eq(reply(0, T0, 1), LS_PATH_RX_UNKNOWN);
	ck_assert_uint_eq(P->c.unknown, 3);
	ck_assert_uint_eq(cur_slot_count(), 1);
}
END_TEST

/* Regression (issue 27 M1): the sender believes a reply only for a probe
 * the path still awaits, and takes T1 from this record, not the echo. */
START_TEST(test_awaits)
{
	uint64_t tx = 0;

	ck_assert(!ls_path_awaits(P, 0, &tx)); /* zeroed ring: nothing awaited */
	ls_path_on_send(P, 7, T0 + 123);
	ck_assert(ls_path_awaits(P, 7, &tx));
	ck_assert_uint_eq(tx, T0 + 123);
	ck_assert(!ls_path_awaits(P, 8, &tx));
	ck_assert(!ls_path_awaits(P, 7 + TRACK, &tx));
	ck_assert_int_eq(reply(7, T0 + MS, 1000), LS_PATH_RX_OK);
	ck_assert(!ls_path_awaits(P, 7, &tx)); /* answered: a second reply is not believed */
	tx = 0;
	ck_assert(ls_path_sent_at(P, 7, &tx)); /* ... but when it left is still known */
	ck_assert_uint_eq(tx, T0 + 123);
	ck_assert(!ls_path_sent_at(P, 8, &tx));
	ck_assert(!ls_path_sent_at(P, 7 + TRACK, &tx));
	/* counted lost at its time-out: a late reply still is */
	ls_path_on_send(P, 9, T0 + 2 * MS);
	ls_path_tick(P, T0 + 2 * MS + TMO + 1, TMO);
	ck_assert_uint_eq(P->c.lost, 1);
	ck_assert(ls_path_awaits(P, 9, &tx));
	ck_assert_uint_eq(tx, T0 + 2 * MS);
}
END_TEST

START_TEST(test_reordering)
{
	static const uint32_t order[] = { 0, 1, 2, 5, 3, 4, 6, 9, 8, 7 };
	uint32_t i;
	int reord = 0;

	for (i = 0; i < 10; i++)
		ls_path_on_send(P, i, T0 + i * US);
	for (i = 0; i < 10; i++) {
		enum ls_path_rx rx = reply(order[i], T0 + MS + i * US, 1000);

		if (order[i] == 3 || order[i] == 4 || order[i] == 8 || order[i] == 7)
			ck_assert_int_eq(rx, LS_PATH_RX_REORDERED);
		else
			ck_assert_int_eq(rx, LS_PATH_RX_OK);
		reord += rx == LS_PATH_RX_REORDERED;
	}
	ck_assert_int_eq(reord, 4);
	ck_assert_uint_eq(P->c.reordered, 4);
	ck_assert_uint_eq(P->c.received, 10);
	ck_assert_uint_eq(P->max_seq_rx, 9);
	ls_path_tick(P, T0 + SEC, TMO);
	ck_assert_uint_eq(P->c.lost, 0);
	/* Reordered replies are in time: their delays count. */
	ck_assert_uint_eq(P->slot[0].m[LS_PM_RTT].count +
			  P->slot[1].m[LS_PM_RTT].count, 10);
}
END_TEST

START_TEST(test_wraparound)
{
	const uint32_t first = UINT32_MAX - 15;
	uint64_t t = T0;
	uint32_t i, seq;

	/* 48 probes: 16 before the wrap, 32 after. */
	for (i = 0; i < 48; i++) {
		seq = first + i;
		ls_path_tick(P, t + i * MS, TMO);
		ls_path_on_send(P, seq, t + i * MS);
	}
	for (i = 0; i < 48; i++) {
		seq = first + i;
		if (seq == 2)            /* lost, just after the wrap */
			continue;
		if (seq == UINT32_MAX)   /* answered after 0: reordered */
			continue;
		ck_assert_int_eq(reply(seq, t + 48 * MS + i, 1000), LS_PATH_RX_OK);
		if (seq == 0)
			ck_assert_int_eq(reply(UINT32_MAX, t + 48 * MS + i, 1000),
					 LS_PATH_RX_REORDERED);
	}
	ck_assert_uint_eq(P->max_seq_rx, first + 47);
	ck_assert_uint_eq(P->c.reordered, 1);
	ls_path_tick(P, t + 47 * MS + TMO, TMO);
	ck_assert_uint_eq(P->c.lost, 1);
	ck_assert_uint_eq(P->c.received, 47);
	ck_assert_uint_eq(P->track_head, first + 48);
	ck_assert_int_eq(reply(2, t + 47 * MS + TMO + 1, 1000), LS_PATH_RX_LATE);
	ck_assert_uint_eq(P->c.lost, 0);
}
END_TEST

START_TEST(test_consecutive_lost)
{
	uint64_t t = T0;
	uint32_t i;

	for (i = 0; i < 20; i++)
		ls_path_on_send(P, i, t + i * MS);
	for (i = 0; i < 5; i++)
		reply(i, t + 30 * MS, 1000);
	ls_path_tick(P, t + 4 * MS + TMO, TMO);
	ck_assert_uint_eq(P->consecutive_lost, 0);
	ls_path_tick(P, t + 9 * MS + TMO, TMO);
	ck_assert_uint_eq(P->consecutive_lost, 5);
	ck_assert_uint_eq(P->c.lost, 5);
	ls_path_tick(P, t + 14 * MS + TMO, TMO);
	ck_assert_uint_eq(P->consecutive_lost, 10);
	/* One answer ends the run. */
	reply(15, t + 14 * MS + TMO + 1, 1000);
	ck_assert_uint_eq(P->consecutive_lost, 0);
	ls_path_tick(P, t + 19 * MS + TMO, TMO);
	ck_assert_uint_eq(P->consecutive_lost, 4);
	ck_assert_uint_eq(P->c.lost, 14);
	ck_assert_uint_eq(P->c.received, 6);
}
END_TEST

START_TEST(test_ring_overwrite)
{
	uint32_t i;

	/* No tick at all: only the ring notices that probes are gone. */
	for (i = 0; i < TRACK + 10; i++)
		ls_path_on_send(P, i, T0 + i * US);
	ck_assert_uint_eq(P->c.lost, 10);
	ck_assert_uint_eq(P->consecutive_lost, 10);
	ck_assert_int_eq(reply(0, T0 + MS, 1000), LS_PATH_RX_UNKNOWN);
	ck_assert_int_eq(reply(9, T0 + MS, 1000), LS_PATH_RX_UNKNOWN);
	ck_assert_int_eq(reply(10, T0 + MS, 1000), LS_PATH_RX_OK);
	ck_assert_uint_eq(P->consecutive_lost, 0);
	/* Expiry skips the overwritten ones rather than counting them again. */
	ls_path_tick(P, T0 + SEC, TMO);
	ck_assert_uint_eq(P->c.lost, 10 + TRACK - 1);
	ck_assert_uint_eq(P->c.received, 1);
	ck_assert_uint_eq(P->c.sent, TRACK + 10);
	ck_assert_uint_eq(P->track_head, TRACK + 10);
}
END_TEST

START_TEST(test_tick_is_incremental)
{
	uint32_t i;

	for (i = 0; i < 100; i++)
		ls_path_on_send(P, i, T0 + i * MS);
	ls_path_tick(P, T0 + TMO - 1, TMO);
	ck_assert_uint_eq(P->track_head, 0);
	ls_path_tick(P, T0 + 49 * MS + TMO, TMO);
	ck_assert_uint_eq(P->track_head, 50);
	ck_assert_uint_eq(P->c.lost, 50);
	/* Answered probes ahead of the cursor are stepped over, not expired. */
	for (i = 50; i < 60; i++)
		reply(i, T0 + 149 * MS, 1000);
	ls_path_tick(P, T0 + 64 * MS + TMO, TMO);
	ck_assert_uint_eq(P->track_head, 65);
	ck_assert_uint_eq(P->c.lost, 55);
}
END_TEST

START_TEST(test_sequence_gaps)
{
	uint32_t i, n = 0;

	/* A number the sender allocated but never sent must not stall expiry. */
	for (i = 0; i < 20; i++) {
		if (i == 10 || i == 11)
			continue;
		ls_path_on_send(P, i, T0 + i * MS);
		n++;
	}
	ls_path_tick(P, T0 + 19 * MS + TMO, TMO);
	ck_assert_uint_eq(P->c.lost, n);
	ck_assert_uint_eq(P->track_head, 20);
	ck_assert_int_eq(reply(10, T0 + SEC, 1), LS_PATH_RX_UNKNOWN);

	/*
	 * A leap far ahead: the cursor jumps instead of walking 10^6
	 * numbers, and the new probes expire on time.
	 */
	for (i = 0; i < 5; i++)
		ls_path_on_send(P, 1000000 + i, T0 + SEC + i * MS);
	ls_path_tick(P, T0 + SEC + 4 * MS + TMO, TMO);
	ck_assert_uint_eq(P->c.lost, n + 5);
	ck_assert_uint_eq(P->track_head, 1000005);
}
END_TEST

/* --- windows ------------------------------------------------------------- */

/*
 * One simulated second: `n` probes answered with RTT base+0 .. base+n-1,
 * ticking through, then the control thread collecting a little after the
 * boundary, as it would every 100 ms.
 */
static uint32_t next_seq;

static void
sim_second(uint64_t epoch, uint32_t n, int64_t base)
{
	uint64_t t0 = epoch * SEC;
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t t = t0 + (uint64_t)i * (SEC / (n + 1));

		ls_path_tick(P, t, TMO);
		ls_path_on_send(P, next_seq, t);
		reply(next_seq, t + 10 * US, base + i);
		next_seq++;
		ls_path_window_collect(W, P);
	}
}

static void
enter_second(uint64_t epoch)
{
	ls_path_tick(P, epoch * SEC + MS, TMO);
	ls_path_window_collect(W, P);
}

START_TEST(test_handoff_1s)
{
	struct ls_path_summary s;

	next_seq = 0;
	sim_second(1000, 100, 1000);
	/* Second 1000 is not over: nothing to report yet. */
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 0);

	enter_second(1001);
	ck_assert_int_eq(W->last_epoch, 1000);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 100);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 1000);
	ck_assert_int_eq(s.d[LS_PM_RTT].max, 1099);
	ck_assert_int_ge(s.d[LS_PM_RTT].p50, 1049 - 1049 / 32);
	ck_assert_int_le(s.d[LS_PM_RTT].p50, 1049 + 1049 / 32);
	ck_assert(s.d[LS_PM_RTT].mean > 1049.4 && s.d[LS_PM_RTT].mean < 1049.6);
	ck_assert_uint_eq(s.d[LS_PM_FWD].count, 100);
	ck_assert_int_eq(s.d[LS_PM_FWD].min, 1000 / 2 + 7);
	ck_assert_int_eq(s.d[LS_PM_REV].max, 1099 / 2 - 7);
	ck_assert_uint_eq(s.sent, 100);
	ck_assert_uint_eq(s.received, 100);
	ck_assert(s.loss_pct == 0.0);
	/* The slot went back to the lcore, empty. */
	ck_assert_uint_eq(P->slot[0].owner, 0);
	ck_assert_uint_eq(P->slot[0].m[LS_PM_RTT].count, 0);

	sim_second(1001, 50, 5000);
	enter_second(1002);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 50);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 5000);
	ck_assert_uint_eq(s.sent, 50);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 150);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 1000);
	ck_assert_int_eq(s.d[LS_PM_RTT].max, 5049);
	ck_assert_uint_eq(s.sent, 150);
	ck_assert_uint_eq(P->hist_dropped, 0);
}
END_TEST

/* LS_PM_NONE: the reply counts, the metric gets nothing (no OWD before sync). */
START_TEST(test_metric_none)
{
	struct ls_path_summary s;
	uint64_t t0 = 1000 * SEC;

	next_seq = 0;
	for (uint32_t i = 0; i < 20; i++) {
		uint64_t t = t0 + (uint64_t)i * (SEC / 21);
		int64_t smp[LS_PM_MAX] = { 1000 + i, 500 + i, 400 + i };

		if (i < 15)
			smp[LS_PM_FWD] = smp[LS_PM_REV] = LS_PM_NONE;
		ls_path_tick(P, t, TMO);
		ls_path_on_send(P, next_seq, t);
		ck_assert_int_eq(ls_path_on_reply(P, next_seq, t + 10 * US, smp), LS_PATH_RX_OK);
		if (i == 0)
			ck_assert_int_ne(P->last[LS_PM_FWD], LS_PM_NONE);
		next_seq++;
		ls_path_window_collect(W, P);
	}
	enter_second(1001);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.received, 20);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 20);
	ck_assert_uint_eq(s.d[LS_PM_FWD].count, 5);
	ck_assert_int_eq(s.d[LS_PM_FWD].min, 515);
	ck_assert_uint_eq(s.d[LS_PM_REV].count, 5);
	ck_assert_int_eq(s.d[LS_PM_REV].max, 419);
	ck_assert_int_eq(P->last[LS_PM_FWD], 519);
}
END_TEST

START_TEST(test_windows_aggregate)
{
	struct ls_path_summary s;
	uint64_t sum10, sum60, sent60;
	int64_t L, e, dl;

	next_seq = 0;
	/* Second e gets (e - 999) probes with RTT around e * 1000. */
	for (e = 1000; e < 1075; e++) {
		sim_second(e, (uint32_t)(e - 999), e * 1000);
		enter_second(e + 1);
		L = e;
		ck_assert_int_eq(W->last_epoch, L);

		ls_path_window_query(W, P, LS_WIN_1S, &s);
		ck_assert_uint_eq(s.d[LS_PM_RTT].count, L - 999);
		ck_assert_uint_eq(s.sent, L - 999);
		ck_assert_int_eq(s.d[LS_PM_RTT].min, L * 1000);

		ls_path_window_query(W, P, LS_WIN_10S, &s);
		sum10 = 0;
		for (e = L - 9; e <= L; e++)
			if (e >= 1000)
				sum10 += e - 999;
		e = L;
		ck_assert_uint_eq(s.d[LS_PM_RTT].count, sum10);
		ck_assert_uint_eq(s.sent, sum10);
		ck_assert_uint_eq(s.received, sum10);
		ck_assert_int_eq(s.d[LS_PM_RTT].min, (L - 9 < 1000 ? 1000 : L - 9) * 1000);

		/* Distributions: six whole 10 s blocks ending at a multiple of 10. */
		ls_path_window_query(W, P, LS_WIN_60S, &s);
		dl = (L + 1) / 10 - 1;
		sum60 = 0;
		for (e = dl * 10 - 50; e <= dl * 10 + 9; e++)
			if (e >= 1000)
				sum60 += e - 999;
		/* Counters: the same six blocks. */
		sent60 = sum60;
		e = L;
		ck_assert_msg(s.d[LS_PM_RTT].count == sum60, "L=%ld: 60s count %lu want %lu",
			      (long)L, (unsigned long)s.d[LS_PM_RTT].count,
			      (unsigned long)sum60);
		ck_assert_uint_eq(s.sent, sent60);
		if (sum60 > 0)
			ck_assert_int_eq(s.d[LS_PM_RTT].max,
					 (dl * 10 + 9) * 1000 + (dl * 10 + 9 - 1000));
	}
	ck_assert_uint_eq(P->hist_dropped, 0);
}
END_TEST

START_TEST(test_loss_in_window)
{
	struct ls_path_summary s;
	uint64_t t;
	uint32_t i;

	/* 100 probes in second 1000, 25 unanswered. */
	for (i = 0; i < 100; i++) {
		t = T0 + i * MS;
		ls_path_tick(P, t, TMO);
		ls_path_on_send(P, i, t);
		if (i % 4 != 0)
			reply(i, t + US, 1000);
	}
	ls_path_tick(P, T0 + 500 * MS, TMO);
	enter_second(1001);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.sent, 100);
	ck_assert_uint_eq(s.received, 75);
	ck_assert_uint_eq(s.lost, 25);
	ck_assert(s.loss_pct > 24.999 && s.loss_pct < 25.001);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 75);
	ck_assert_str_eq(ls_path_win_name(LS_WIN_60S), "60s");
	ck_assert_str_eq(ls_path_metric_name(LS_PM_FWD), "fwd");
}
END_TEST

START_TEST(test_busy_slot_drops)
{
	struct ls_path_summary s;
	uint32_t i;

	next_seq = 0;
	for (i = 0; i < 10; i++) {                 /* second 1000 -> slot 0 */
		ls_path_on_send(P, next_seq, T0 + i * MS);
		reply(next_seq++, T0 + i * MS + US, 1000);
	}
	ls_path_tick(P, 1001 * SEC, TMO);          /* slot 0 to control */
	ck_assert_uint_eq(P->slot[0].owner, 1);
	ck_assert_int_eq(P->slot[0].epoch, 1000);
	for (i = 0; i < 20; i++) {                 /* second 1001 -> slot 1 */
		ls_path_on_send(P, next_seq, 1001 * SEC + i * MS);
		reply(next_seq++, 1001 * SEC + i * MS + US, 2000);
	}
	ls_path_tick(P, 1002 * SEC, TMO);          /* slot 1 to control too */
	ck_assert_uint_eq(P->slot[1].owner, 1);
	ck_assert_uint_eq(P->cur, 0);
	/* Control has not run: slot 0 is still its own, so samples drop. */
	for (i = 0; i < 5; i++) {
		ls_path_on_send(P, next_seq, 1002 * SEC + i * MS);
		ck_assert_int_eq(reply(next_seq++, 1002 * SEC + i * MS + US, 3000),
				 LS_PATH_RX_OK);
	}
	ck_assert_uint_eq(P->hist_dropped, 5);
	ck_assert_uint_eq(P->slot[0].m[LS_PM_RTT].count, 10); /* untouched */
	ck_assert_uint_eq(P->c.received, 35);

	ls_path_window_collect(W, P);              /* takes both, returns both */
	ck_assert_uint_eq(P->slot[0].owner, 0);
	ck_assert_uint_eq(P->slot[1].owner, 0);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 20);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 2000);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 30);

	/* Back in lcore hands: recording resumes, into an empty slot. */
	for (i = 0; i < 7; i++) {
		ls_path_on_send(P, next_seq, 1002 * SEC + 500 * MS + i * MS);
		reply(next_seq++, 1002 * SEC + 500 * MS + i * MS + US, 4000);
	}
	ck_assert_uint_eq(P->hist_dropped, 5);
	ck_assert_uint_eq(P->slot[0].m[LS_PM_RTT].count, 7);
	enter_second(1003);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_int_eq(W->last_epoch, 1002);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 7);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 4000);
	ck_assert_uint_eq(s.received, 12);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 37);
}
END_TEST

START_TEST(test_busy_slot_whole_second)
{
	struct ls_path_summary s;

	/* Control never runs for three seconds; only two slots can wait. */
	next_seq = 0;
	ls_path_on_send(P, next_seq, T0);
	reply(next_seq++, T0 + US, 1000);
	ls_path_tick(P, 1001 * SEC, TMO);
	ls_path_on_send(P, next_seq, 1001 * SEC + MS);
	reply(next_seq++, 1001 * SEC + MS + US, 2000);
	ls_path_tick(P, 1002 * SEC, TMO);
	ls_path_on_send(P, next_seq, 1002 * SEC + MS);
	reply(next_seq++, 1002 * SEC + MS + US, 3000);   /* dropped */
	ls_path_tick(P, 1003 * SEC, TMO);
	/* Slot 1 (control-owned) was skipped, not stamped or handed twice. */
	ck_assert_uint_eq(P->cur, 1);
	ck_assert_int_eq(P->slot[1].epoch, 1001);
	ls_path_on_send(P, next_seq, 1003 * SEC + MS);
	reply(next_seq++, 1003 * SEC + MS + US, 4000);   /* dropped */
	ck_assert_uint_eq(P->hist_dropped, 2);

	ls_path_window_collect(W, P);
	ck_assert_int_eq(W->last_epoch, 1002);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 2);
	ck_assert_int_eq(s.d[LS_PM_RTT].max, 2000);
	/*
	 * Counters are never dropped, but second 1002 had no slot to carry
	 * its end-of-second snapshot, so it was read at collect time and
	 * includes the reply of second 1003.
	 */
	ck_assert_uint_eq(s.received, 4);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 0);
}
END_TEST

START_TEST(test_reset)
{
	struct ls_path_counters tot;
	struct ls_path_summary s;

	next_seq = 0;
	sim_second(1000, 40, 1000);
	enter_second(1001);
	ls_path_window_totals(W, P, &tot);
	ck_assert_uint_eq(tot.sent, 40);
	ck_assert_uint_eq(tot.received, 40);

	ls_path_window_reset(W, P);
	ls_path_window_totals(W, P, &tot);
	ck_assert_uint_eq(tot.sent, 0);
	ck_assert_uint_eq(tot.received, 0);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.sent, 0);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 0);
	/* The live side is untouched: it never resets. */
	ck_assert_uint_eq(P->c.sent, 40);

	sim_second(1001, 8, 9000);
	enter_second(1002);
	ls_path_window_totals(W, P, &tot);
	ck_assert_uint_eq(tot.sent, 8);
	/* 60s covers complete 10 s blocks only: none yet. */
	ls_path_window_query(W, P, LS_WIN_60S, &s);
	ck_assert_uint_eq(s.sent, 0);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.sent, 8);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 8);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 9000);
}
END_TEST

/*
 * Windows keep the low 32 bits of the counters: counts across a wrap of
 * 2^32 (lost too, which a late reply can lower) still come out right.
 */
START_TEST(test_snapshots_wrap)
{
	struct ls_path_counters tot;
	struct ls_path_summary s;

	next_seq = 0;
	/* sent and received wrap in second 1064, lost in 1066 */
	P->c.sent = P->c.received = (1ULL << 32) - 64 * 20 - 10;
	P->c.lost = (1ULL << 32) - 2;
	ls_path_window_reset(W, P);
	for (uint64_t e = 1000; e < 1070; e++) {
		sim_second(e, 20, 1000);
		if (e != 1065)
			continue;
		/* four probes never answered: lost in second 1066 */
		for (int i = 0; i < 4; i++)
			ls_path_on_send(P, next_seq++, e * SEC + 960 * MS + (uint64_t)i * MS);
	}
	enter_second(1070);
	ck_assert_uint_gt(P->c.sent, 1ULL << 32);
	ck_assert_uint_gt(P->c.lost, 1ULL << 32);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.sent, 20);
	ck_assert_uint_eq(s.received, 20);
	ck_assert_uint_eq(s.lost, 0);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.sent, 204);
	ck_assert_uint_eq(s.received, 200);
	ck_assert_uint_eq(s.lost, 4);
	ls_path_window_query(W, P, LS_WIN_60S, &s);
	ck_assert_uint_eq(s.sent, 1204);
	ck_assert_uint_eq(s.received, 1200);
	ck_assert_uint_eq(s.lost, 4);
	ls_path_window_totals(W, P, &tot);
	ck_assert_uint_eq(tot.sent, 1404);
	ck_assert_uint_eq(tot.received, 1400);
	ck_assert_uint_eq(tot.lost, 4);
}
END_TEST

/* Seconds past 2^32 (the window keeps them as offsets) work as any other. */
START_TEST(test_epochs_far)
{
	const uint64_t e0 = (1ULL << 32) + 1000;
	struct ls_path_summary s;

	next_seq = 0;
	for (uint64_t e = e0; e < e0 + 70; e++)
		sim_second(e, 10, 1000);
	enter_second(e0 + 70);
	ck_assert_int_eq(W->last_epoch, (int64_t)e0 + 69);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.sent, 10);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 10);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.sent, 100);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 100);
	ls_path_window_query(W, P, LS_WIN_60S, &s);
	ck_assert_uint_eq(s.sent, 600);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 600);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 1000);
	ck_assert_int_eq(s.d[LS_PM_RTT].max, 1009);
}
END_TEST

/* --- two threads --------------------------------------------------------- */

/*
 * The lcore side runs flat out with a simulated clock that crosses a second
 * every 2000 replies; the control thread collects in a loop. Every sample
 * must end up in exactly one place: a window histogram, the drop counter,
 * or the slots still held at the end.
 */
#define RACE_SECONDS 9   /* fits the 10 s window */
#define RACE_PER_SEC 2000

static volatile int race_done;

static void *
race_control(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&race_done, __ATOMIC_ACQUIRE))
		ls_path_window_collect(W, P);
	return NULL;
}

START_TEST(test_race)
{
	struct ls_path_summary s;
	pthread_t th;
	uint64_t t, left;
	uint32_t seq = 0;
	int sec, i;

	race_done = 0;
	ck_assert_int_eq(pthread_create(&th, NULL, race_control, NULL), 0);
	for (sec = 0; sec < RACE_SECONDS; sec++) {
		for (i = 0; i < RACE_PER_SEC; i++) {
			t = T0 + sec * SEC + (uint64_t)i * (SEC / RACE_PER_SEC);
			ls_path_tick(P, t, TMO);
			ls_path_on_send(P, seq, t);
			reply(seq++, t + US, 1000 + i);
		}
	}
	ls_path_tick(P, T0 + RACE_SECONDS * SEC, TMO);
	__atomic_store_n(&race_done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ls_path_window_collect(W, P);

	ck_assert_int_eq(W->last_epoch, 1000 + RACE_SECONDS - 1);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	left = P->slot[0].m[LS_PM_RTT].count + P->slot[1].m[LS_PM_RTT].count;
	ck_assert_uint_eq(s.d[LS_PM_RTT].count + P->hist_dropped + left,
			  RACE_SECONDS * RACE_PER_SEC);
	ck_assert_uint_eq(s.sent, RACE_SECONDS * RACE_PER_SEC);
	ck_assert_uint_eq(s.received, RACE_SECONDS * RACE_PER_SEC);
	ck_assert_int_ge(s.d[LS_PM_RTT].min, 1000);
	ck_assert_int_le(s.d[LS_PM_RTT].max, 1000 + RACE_PER_SEC - 1);
}
END_TEST

/*
 * A wide distribution (more buckets a second than a slot table holds) is
 * handed over in pieces, not dropped, and the windows keep the 1/32 bound;
 * freeing the window gives its histograms back.
 */
START_TEST(test_wide_distribution)
{
	struct ls_path_summary s;
	uint32_t seq = 0;
	int sec, i;

	for (sec = 0; sec < 3; sec++) {
		for (i = 0; i < 1000; i++) {
			uint64_t t = T0 + sec * SEC + (uint64_t)i * MS;
			/* 10 us .. 100 us, log-spaced: ~53 buckets a metric a
			 * second, more than a slot's table holds */
			int64_t rtt = (int64_t)(10000.0 * pow(10.0, i / 1000.0));

			ls_path_tick(P, t, TMO);
			ls_path_on_send(P, seq, t);
			reply(seq++, t + US, rtt);
			if (i % 100 == 99)
				ls_path_window_collect(W, P);  /* every 100 ms */
		}
	}
	enter_second(1003);
	ck_assert_uint_eq(P->hist_dropped, 0);
	ls_path_window_query(W, P, LS_WIN_10S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 3000);
	/* p50 of the log-spaced values is 10000 * 10^0.5 ~ 31623 ns */
	ck_assert_int_le(llabs(s.d[LS_PM_RTT].p50 - 31623), 31623 / 32 + 40);
	ck_assert_int_eq(s.d[LS_PM_RTT].min, 10000);
	ck_assert_uint_gt(ls_path_window_bytes(W), sizeof(*W));
	ls_path_window_free(W);
	ck_assert_uint_eq(ls_path_window_bytes(W), sizeof(*W));
}
END_TEST

/*
 * Wider still (1 us .. 1 ms in a second) and a control thread that
 * collects only twice a second: more than the two slots can take. What does not fit is
 * dropped and counted, never lost silently.
 */
START_TEST(test_too_wide_counts_drops)
{
	struct ls_path_summary s;
	uint32_t seq = 0;

	for (int i = 0; i < 1000; i++) {
		uint64_t t = T0 + (uint64_t)i * MS;

		ls_path_tick(P, t, TMO);
		ls_path_on_send(P, seq, t);
		reply(seq++, t + US, (int64_t)(1000.0 * pow(1000.0, i / 1000.0)));
		if (i % 500 == 499)      /* a slow control thread */
			ls_path_window_collect(W, P);
	}
	enter_second(1001);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_gt(P->hist_dropped, 0);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count + P->hist_dropped, 1000);
	ck_assert_uint_eq(s.received, 1000);
}
END_TEST

/*
 * A path housekept only every 100 ms (Pingmesh scale) still puts each
 * reply in its own second: sends and replies rotate at the boundary.
 */
START_TEST(test_rotate_without_tick)
{
	struct ls_path_summary s;

	ls_path_on_send(P, 0, T0 + 900 * MS);
	reply(0, T0 + 950 * MS, 1000);            /* second 1000 */
	ls_path_on_send(P, 1, T0 + 990 * MS);
	reply(1, T0 + SEC + 20 * MS, 5000);       /* second 1001: no tick between */
	ck_assert_int_eq(P->cur_epoch, 1001);
	ls_path_window_collect(W, P);
	ck_assert_int_eq(W->last_epoch, 1000);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 1);
	ck_assert_int_eq(s.d[LS_PM_RTT].max, 1000);
	ck_assert_uint_eq(s.sent, 2);             /* both sent in second 1000 */
	enter_second(1002);
	ls_path_window_query(W, P, LS_WIN_1S, &s);
	ck_assert_uint_eq(s.d[LS_PM_RTT].count, 1);
	ck_assert_int_eq(s.d[LS_PM_RTT].max, 5000);
}
END_TEST

/*
 * Memory of a Pingmesh path's windows once full (issue 28: <= 8 KiB a
 * peer-path all told): 70 s of a pair a second with a lognormal RTT
 * (sigma 0.2) and one-way delays offset by 3 ms. Measured 2,760 B with
 * glibc's block sizes; the lcore side (~1.3 KiB) and the probe ring
 * (0.5 KiB) come on top.
 */
START_TEST(test_window_bytes_pingmesh)
{
	uint32_t seq = 0;

	ls_rng_seed(28);
	for (int sec = 0; sec < 70; sec++) {
		for (int i = 0; i < 2; i++) {
			uint64_t t = T0 + sec * SEC + (uint64_t)i * (SEC / 2);
			double z = sqrt(-2.0 * log(ls_rng_unit_open())) *
				   cos(2.0 * M_PI * ls_rng_unit_open());
			int64_t rtt = (int64_t)(20000.0 * exp(0.2 * z));
			int64_t smp[LS_PM_MAX] = { rtt, rtt / 2 + 3000000, rtt / 2 - 3000000 };

			ls_path_tick(P, t, TMO);
			ls_path_on_send(P, seq, t);
			ls_path_on_reply(P, seq++, t + (uint64_t)rtt, smp);
			ls_path_window_collect(W, P);
		}
	}
	enter_second(1071);
	ck_assert_uint_eq(P->hist_dropped, 0);
	ck_assert_uint_le(ls_path_window_bytes(W), 2900);
}
END_TEST

START_TEST(test_sizes)
{
	/* Small fixed memory per path (issue 28: <= 8 KiB all told). */
	ck_assert_uint_lt(sizeof(struct ls_path_live), 1024);
	ck_assert_uint_le(sizeof(struct ls_path_window), 1056);
	ck_assert_uint_eq(ls_path_track_size(2 * 4 * 1.0, 1000 * MS), LS_PATH_TRACK_MIN);
	ck_assert_uint_eq(ls_path_track_size(800, 50 * MS), 128);
	ck_assert_uint_eq(ls_path_track_size(1e9, 60 * SEC), LS_PATH_TRACK_MAX);
}
END_TEST

static Suite *
pathstats_suite(void)
{
	Suite *s = suite_create("pathstats");
	TCase *tc;

	tc = tcase_create("sequence");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_in_order_no_loss);
	tcase_add_test(tc, test_drop_every_tenth);
	tcase_add_test(tc, test_late_reply);
	tcase_add_test(tc, test_duplicates_and_unknown);
	tcase_add_test(tc, test_awaits);
	tcase_add_test(tc, test_reordering);
	tcase_add_test(tc, test_wraparound);
	tcase_add_test(tc, test_consecutive_lost);
	tcase_add_test(tc, test_ring_overwrite);
	tcase_add_test(tc, test_tick_is_incremental);
	tcase_add_test(tc, test_sequence_gaps);
	suite_add_tcase(s, tc);

	tc = tcase_create("windows");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_handoff_1s);
	tcase_add_test(tc, test_metric_none);
	tcase_add_test(tc, test_windows_aggregate);
	tcase_add_test(tc, test_loss_in_window);
	tcase_add_test(tc, test_busy_slot_drops);
	tcase_add_test(tc, test_busy_slot_whole_second);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_snapshots_wrap);
	tcase_add_test(tc, test_epochs_far);
	tcase_add_test(tc, test_race);
	tcase_add_test(tc, test_wide_distribution);
	tcase_add_test(tc, test_too_wide_counts_drops);
	tcase_add_test(tc, test_rotate_without_tick);
	tcase_add_test(tc, test_window_bytes_pingmesh);
	tcase_add_test(tc, test_sizes);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(pathstats_suite)
