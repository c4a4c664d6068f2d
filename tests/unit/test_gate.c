/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memif teardown guard (app/common/ls_gate.c): munmap() on the EAL
 * interrupt thread waits until every online reader has reported quiescence,
 * and nowhere else. The interrupt thread here is the EAL's own: an alarm's
 * callback runs on it, as the memif PMD's control-channel handler does.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>
#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "../../app/common/ls_gate.h"
#include "ls_test.h"

static struct rte_rcu_qsbr *qs;
static void *page;
static volatile int unmapped;   /* 1: the alarm's munmap returned */
static int unmap_rc;

static void
unmap_cb(void *arg __rte_unused)
{
	unmap_rc = munmap(page, 4096);
	__atomic_store_n(&unmapped, 1, __ATOMIC_RELEASE);
}

static void
map_page(void)
{
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(page, MAP_FAILED);
	*(volatile char *)page = 1;
	unmapped = 0;
}

static int
wait_unmapped(unsigned int ms)
{
	for (unsigned int i = 0; i < ms && !__atomic_load_n(&unmapped, __ATOMIC_ACQUIRE); i++)
		rte_delay_us_sleep(1000);
	return __atomic_load_n(&unmapped, __ATOMIC_ACQUIRE);
}

/* A reader inside a "burst" holds the interrupt thread's munmap until it
 * reports; then the unmapping goes ahead and the page is gone. */
START_TEST(test_waits_for_reader)
{
	rte_rcu_qsbr_thread_register(qs, 0);
	rte_rcu_qsbr_thread_online(qs, 0);
	ls_app_gate_guard(qs);
	map_page();
	ck_assert_int_eq(rte_eal_alarm_set(1000, unmap_cb, NULL), 0);
	ck_assert_int_eq(wait_unmapped(100), 0);
	/* still mapped: the reader may go on reading it */
	ck_assert_int_eq(*(volatile char *)page, 1);
	ck_assert_uint_eq(ls_app_gate_waits(), 0);
	rte_rcu_qsbr_quiescent(qs, 0);
	ck_assert_int_eq(wait_unmapped(2000), 1);
	ck_assert_int_eq(unmap_rc, 0);
	ck_assert_int_eq(msync(page, 4096, MS_ASYNC), -1); /* ENOMEM: not mapped */
	ck_assert_uint_eq(ls_app_gate_waits(), 1);
	rte_rcu_qsbr_thread_offline(qs, 0);
	rte_rcu_qsbr_thread_unregister(qs, 0);
	ls_app_gate_guard(NULL);
}
END_TEST

/* An offline reader (an lcore asleep) holds nothing; a disarmed guard
 * waits for nobody; other threads' munmap never waits, the reader's own
 * included (it would wait for itself). */
START_TEST(test_no_wait)
{
	rte_rcu_qsbr_thread_register(qs, 0);
	ls_app_gate_guard(qs);
	map_page();
	ck_assert_int_eq(rte_eal_alarm_set(1000, unmap_cb, NULL), 0);
	ck_assert_int_eq(wait_unmapped(2000), 1); /* registered, offline */

	rte_rcu_qsbr_thread_online(qs, 0);
	ls_app_gate_guard(NULL);
	map_page();
	ck_assert_int_eq(rte_eal_alarm_set(1000, unmap_cb, NULL), 0);
	ck_assert_int_eq(wait_unmapped(2000), 1); /* online, disarmed */

	ls_app_gate_guard(qs);
	map_page();
	ck_assert_int_eq(munmap(page, 4096), 0); /* this thread: no wait */
	rte_rcu_qsbr_thread_offline(qs, 0);
	rte_rcu_qsbr_thread_unregister(qs, 0);
	ls_app_gate_guard(NULL);
}
END_TEST

static void
make_qs(void)
{
	qs = rte_zmalloc("gate_qs", rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE);
	ck_assert_ptr_nonnull(qs);
	ck_assert_int_eq(rte_rcu_qsbr_init(qs, 1), 0);
}

static Suite *
gate_suite(void)
{
	Suite *s = suite_create("gate");
	TCase *tc = tcase_create("core");

	tcase_add_unchecked_fixture(tc, make_qs, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_waits_for_reader);
	tcase_add_test(tc, test_no_wait);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN_EAL(gate_suite, "gate", "64")
