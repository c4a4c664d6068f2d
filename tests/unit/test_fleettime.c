/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the shared-memory fleet-time reader (ls_fleettime.h).
 *
 * The arithmetic is checked at chosen counter values (read_at) against
 * hand-computed fleet times and bounds, on both sides of the anchor. The
 * mapping path is checked through a real file. The seqlock is checked the
 * way it fails: a writer thread publishes as fast as it can values bound
 * by an invariant (fleet0 = 1000 * half0, node_id = half0, ref_id =
 * ~node_id) while a reader thread verifies the invariant in every reading;
 * a torn read (fields from two publications) breaks it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ls_fleettime.h"
#include "ls_test.h"

#define BASE 1700000000000000000ULL

static struct ls_fleettime_shm *
new_page(void)
{
	struct ls_fleettime_shm *s = aligned_alloc(LS_FLEETTIME_SIZE, LS_FLEETTIME_SIZE);

	ck_assert_ptr_nonnull(s);
	memset(s, 0xa5, LS_FLEETTIME_SIZE); /* garbage: init must clear it */
	ls_fleettime_init(s);
	return s;
}

/* A 2 GHz counter: 0.5 ns per tick, exactly 2^31 in 32.32. */
static void
sample_values(struct ls_fleettime_shm *v)
{
	memset(v, 0, sizeof(*v));
	v->flags = LS_FT_SYNCED;
	v->ctr0 = 1000000000000ULL;
	v->fleet0_ns = BASE + 777;
	v->mult = 1ULL << 31;
	v->half0_ns = 40;
	v->half_ppb = 2000000; /* 2 ns per us (absurd, but easy to check) */
	v->stale_ns = 1000000;
	v->node_id = 12;
	v->ref_id = 3;
	v->updates = 9;
}

START_TEST(test_round_trip)
{
	struct ls_fleettime_shm *s = new_page(), v;
	struct ls_fleettime t;

	ck_assert_uint_eq(s->seq, 0);
	sample_values(&v);
	ls_fleettime_publish(s, &v);
	ck_assert_uint_eq(s->seq, 2);
	ck_assert_uint_eq(s->magic, LS_FLEETTIME_MAGIC);
	ck_assert_uint_eq(s->version, LS_FLEETTIME_VERSION);
	ck_assert_uint_eq(s->updates, 9);

	/* At the anchor. */
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, BASE + 777);
	ck_assert_uint_eq(t.earliest_ns, BASE + 737);
	ck_assert_uint_eq(t.latest_ns, BASE + 817);
	ck_assert_uint_eq(t.ctr, v.ctr0);
	ck_assert_uint_eq(t.flags, LS_FT_SYNCED);
	ck_assert(!t.stale);
	ck_assert_uint_eq(t.node_id, 12);
	ck_assert_uint_eq(t.ref_id, 3);

	/* 2000 ticks later: 1000 ns, half-width + 2 ns. */
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 + 2000, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, BASE + 1777);
	ck_assert_uint_eq(t.latest_ns - t.fleet_ns, 42);
	ck_assert_uint_eq(t.fleet_ns - t.earliest_ns, 42);

	/* 2000 ticks before the anchor (a reader on a core that lags). */
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 - 2000, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, BASE - 223);
	ck_assert_uint_eq(t.latest_ns - t.fleet_ns, 42);
	ck_assert(!t.stale);
	/* An odd tick before: floor, not truncation towards zero. */
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 - 1, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, BASE + 776);

	/* Fractional multiplier: a 3 GHz counter, 3e9 ticks = 1 s within 1 ns. */
	v.mult = (1ULL << 32) / 3 + 1;
	ls_fleettime_publish(s, &v);
	ck_assert_uint_eq(s->seq, 4);
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 + 3000000000ULL, &t), 0);
	ck_assert(t.fleet_ns >= BASE + 777 + 1000000000ULL - 1 &&
		  t.fleet_ns <= BASE + 777 + 1000000000ULL + 1);

	/* The live counter moves forward. */
	{
		uint64_t a = ls_fleettime_counter(), b = ls_fleettime_counter();

		ck_assert_uint_ge(b, a);
		ck_assert_int_eq(ls_fleettime_read(s, &t), 0);
		ck_assert_uint_ge(t.ctr, b);
	}
	free(s);
}
END_TEST

START_TEST(test_stale_and_unsynced)
{
	struct ls_fleettime_shm *s = new_page(), v;
	struct ls_fleettime t;

	sample_values(&v);
	ls_fleettime_publish(s, &v);
	/* stale_ns = 1 ms = 2e6 ticks: at it not yet stale, beyond it stale. */
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 + 2000000, &t), 0);
	ck_assert(!t.stale);
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 + 2000002, &t), 0);
	ck_assert(t.stale);
	ck_assert_uint_eq(t.latest_ns - t.fleet_ns, 40 + 2000); /* 1 ms at 2000 ppb */

	/* Unsynced: the estimate is still computed, the bound is everything. */
	v.flags = 0;
	ls_fleettime_publish(s, &v);
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 + 2000, &t), 0);
	ck_assert_uint_eq(t.flags, 0);
	ck_assert_uint_eq(t.fleet_ns, BASE + 1777);
	ck_assert_uint_eq(t.earliest_ns, 0);
	ck_assert_uint_eq(t.latest_ns, UINT64_MAX);

	/* Saturation at both ends of the range. */
	v.flags = LS_FT_SYNCED | LS_FT_REF;
	v.fleet0_ns = 10;
	v.half0_ns = 100;
	ls_fleettime_publish(s, &v);
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 - 1000, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, 0);
	ck_assert_uint_eq(t.earliest_ns, 0);
	v.fleet0_ns = UINT64_MAX - 10;
	v.half0_ns = UINT64_MAX - 5;
	v.half_ppb = UINT64_MAX;
	ls_fleettime_publish(s, &v);
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0 + 1000, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, UINT64_MAX);
	ck_assert_uint_eq(t.latest_ns, UINT64_MAX);
	ck_assert_uint_eq(t.earliest_ns, 0);
	free(s);
}
END_TEST

START_TEST(test_bad_page)
{
	struct ls_fleettime_shm *s = new_page(), v;
	struct ls_fleettime t;

	sample_values(&v);
	ls_fleettime_publish(s, &v);
	s->magic = 0x12345678;
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0, &t), -EINVAL);
	s->magic = LS_FLEETTIME_MAGIC;
	s->version = 2;
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0, &t), -EINVAL);
	s->version = LS_FLEETTIME_VERSION;
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0, &t), 0);
	/* A writer that died mid-update: readers give up, they do not hang. */
	s->seq = 7;
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0, &t), -EAGAIN);
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(ls_fleettime_read_at(s, v.ctr0, &t), -EINVAL);
	free(s);
}
END_TEST

START_TEST(test_map_file)
{
	char path[] = "/tmp/test_fleettime.XXXXXX";
	const struct ls_fleettime_shm *ro = NULL;
	struct ls_fleettime_shm *rw, v;
	struct ls_fleettime t;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	/* Too short to hold the struct: refused rather than SIGBUS later. */
	ck_assert_int_eq(ftruncate(fd, 16), 0);
	ck_assert_int_eq(ls_fleettime_map(path, &ro), -EINVAL);
	ck_assert_int_eq(ftruncate(fd, LS_FLEETTIME_SIZE), 0);
	rw = mmap(NULL, LS_FLEETTIME_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert(rw != MAP_FAILED);
	close(fd);
	ls_fleettime_init(rw);
	sample_values(&v);
	ls_fleettime_publish(rw, &v);

	/* Regression (issue 27 M3): a page others may write is not believed. */
	ck_assert_int_eq(chmod(path, 0666), 0);
	ck_assert_int_eq(ls_fleettime_map(path, &ro), -EPERM);
	ck_assert_int_eq(chmod(path, 0620), 0);
	ck_assert_int_eq(ls_fleettime_map(path, &ro), -EPERM);
	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(ls_fleettime_map(path, &ro), 0);
	ck_assert_int_eq(ls_fleettime_read_at(ro, v.ctr0 + 2000, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, BASE + 1777);
	/* The writer's next publication shows through the reader's mapping. */
	v.fleet0_ns += 5;
	ls_fleettime_publish(rw, &v);
	ck_assert_int_eq(ls_fleettime_read_at(ro, v.ctr0 + 2000, &t), 0);
	ck_assert_uint_eq(t.fleet_ns, BASE + 1782);
	ls_fleettime_unmap(ro);
	munmap(rw, LS_FLEETTIME_SIZE);
	unlink(path);
	ck_assert_int_eq(ls_fleettime_map(path, &ro), -ENOENT);
}
END_TEST

/* ---- seqlock under contention ----------------------------------------- */

struct race {
	struct ls_fleettime_shm *s;
	volatile int stop;
	uint64_t reads, distinct, bad, busy;
};

static void *
writer(void *arg)
{
	struct race *r = arg;
	struct ls_fleettime_shm v;
	uint64_t k = 1;

	memset(&v, 0, sizeof(v));
	v.flags = LS_FT_SYNCED;
	v.stale_ns = UINT64_MAX;
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		k++;
		v.half0_ns = k;
		v.fleet0_ns = k * 1000;
		v.ctr0 = k * 7;
		v.node_id = (uint32_t)k;
		v.ref_id = ~(uint32_t)k;
		v.updates = k;
		ls_fleettime_publish(r->s, &v);
	}
	return NULL;
}

static void *
reader(void *arg)
{
	struct race *r = arg;
	uint64_t last = 0, i;
	time_t deadline = time(NULL) + 30;

	/*
	 * 2M reads, and on to 1000 distinct values: on a loaded machine the
	 * writer thread may not run at all during the first 2M (it shares a
	 * CPU), and a race test that did not race proves nothing.
	 */
	for (i = 0; i < 2000000 || (r->distinct < 1000 &&
				     ((i & 0xffff) != 0 || time(NULL) < deadline)); i++) {
		struct ls_fleettime t;
		uint64_t half;
		int rc = ls_fleettime_read_at(r->s, 12345, &t);

		if (rc == -EAGAIN) {
			r->busy++;
			continue;
		}
		if (rc != 0) {
			r->bad++;
			continue;
		}
		r->reads++;
		/* mult 0: fleet = fleet0, half = half0 whatever the counter. */
		half = (t.latest_ns - t.earliest_ns) / 2;
		if (t.fleet_ns != half * 1000 || t.node_id != (uint32_t)half ||
		    t.ref_id != ~t.node_id || t.latest_ns - t.fleet_ns != half)
			r->bad++;
		if (half != last)
			r->distinct++;
		last = half;
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(test_seqlock_race)
{
	struct race r;
	struct ls_fleettime_shm v;
	pthread_t w, rd;

	memset(&r, 0, sizeof(r));
	r.s = new_page();
	memset(&v, 0, sizeof(v));
	v.flags = LS_FT_SYNCED;
	v.half0_ns = 1;
	v.fleet0_ns = 1000;
	v.node_id = 1;
	v.ref_id = ~1u;
	ls_fleettime_publish(r.s, &v);
	ck_assert_int_eq(pthread_create(&w, NULL, writer, &r), 0);
	ck_assert_int_eq(pthread_create(&rd, NULL, reader, &r), 0);
	pthread_join(rd, NULL);
	pthread_join(w, NULL);
	printf("seqlock: %lu reads, %lu distinct, %lu busy, %lu torn\n",
	       (unsigned long)r.reads, (unsigned long)r.distinct, (unsigned long)r.busy,
	       (unsigned long)r.bad);
	ck_assert_uint_eq(r.bad, 0);
	ck_assert_uint_gt(r.reads, 1000);
	/* the writer really was racing the reader */
	ck_assert_uint_ge(r.distinct, 1000);
	ck_assert_uint_eq(r.s->seq % 2, 0);
	free(r.s);
}
END_TEST

static Suite *
fleettime_suite(void)
{
	Suite *s = suite_create("fleettime");
	TCase *tc = tcase_create("fleettime");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_stale_and_unsynced);
	tcase_add_test(tc, test_bad_page);
	tcase_add_test(tc, test_map_file);
	tcase_add_test(tc, test_seqlock_race);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(fleettime_suite)
