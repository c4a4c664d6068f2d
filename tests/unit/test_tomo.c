/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for boolean tomography (lib/tomo), over randomized leaf-spine
 * fabrics seen from one host: random sizes, ECMP choices per path, one or
 * two failed links (uplinks, spine-to-leaf links, a peer's downlink). The
 * cover must explain every path that crosses a failed link and name as
 * candidates exactly the links that cross the same dead paths (checked by
 * brute force). With one failure the suspect names it. With two, greedy
 * set cover may use a third suspect (rarely: counted, at most 1% of
 * scenarios), and may name a shared upstream link instead: when every path
 * over leaf0-spineS died, because each crossed one failure or the other
 * behind that spine, "leaf0-spineS" explains them all with one link, and
 * this view cannot rule it out (seed 1615476 did that).
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_test.h"
#include "ls_tomo.h"

#define MAXL 512
#define MAXP 2048
#define HOPS 4

/* Link ids of a fabric of nl leaves, ns spines, nh hosts per leaf, from
 * host 0 (on leaf 0): our uplink, leaf-spine (both ways share an id: a
 * link is its two ends), a host's downlink. */
struct fab {
	int nl, ns, nh;
};

static int
id_up(void)
{
	return 0;
}

static int
id_ls(const struct fab *f, int l, int s)
{
	return 1 + l * f->ns + s;
}

static int
id_down(const struct fab *f, int l, int h)
{
	return 1 + f->nl * f->ns + l * f->nh + h;
}

static int
n_links(const struct fab *f)
{
	return 1 + f->nl * f->ns + f->nl * f->nh;
}

struct path {
	uint16_t link[HOPS];
	uint16_t n;
};

/* Every path from host 0: to each other host, k ECMP choices of spine. */
static int
paths(const struct fab *f, int k, struct path *out)
{
	int n = 0;

	for (int l = 0; l < f->nl; l++)
		for (int h = 0; h < f->nh; h++) {
			if (l == 0 && h == 0)
				continue;
			for (int p = 0; p < k && n < MAXP; p++) {
				struct path *x = &out[n++];
				int s = (int)(ls_rng_next() % (uint64_t)f->ns);

				x->n = 0;
				x->link[x->n++] = (uint16_t)id_up();
				if (l != 0) {
					x->link[x->n++] = (uint16_t)id_ls(f, 0, s);
					x->link[x->n++] = (uint16_t)id_ls(f, l, s);
				}
				x->link[x->n++] = (uint16_t)id_down(f, l, h);
			}
		}
	return n;
}

static bool
crosses(const struct path *p, int l)
{
	for (int j = 0; j < p->n; j++)
		if (p->link[j] == l)
			return true;
	return false;
}

/* @return the number of suspects */
static int
scenario(uint64_t seed, int n_fail)
{
	static struct path ps[MAXP];
	static struct ls_tomo_path bad[MAXP];
	static int bad_idx[MAXP];
	static uint8_t good[MAXL];
	static uint32_t count[MAXL];
	struct fab f;
	int fail[2], np, nb = 0, nl;
	uint16_t cand[MAXL];
	uint32_t n_cand;
	int suspects = 0;

	ls_rng_seed(seed);
	f.nl = 2 + (int)(ls_rng_next() % 6);
	f.ns = 2 + (int)(ls_rng_next() % 7);
	f.nh = 1 + (int)(ls_rng_next() % 4);
	nl = n_links(&f);
	ck_assert_int_le(nl, MAXL);
	np = paths(&f, 1 + (int)(ls_rng_next() % 8), ps);
	/* failures anywhere but our own uplink (that one kills everything:
	 * the peer.down events say it) */
	for (int i = 0; i < n_fail; i++)
		fail[i] = 1 + (int)(ls_rng_next() % (uint64_t)(nl - 1));
	memset(good, 0, sizeof(good));
	for (int k = 0; k < np; k++) {
		bool dead = false;

		for (int i = 0; i < n_fail; i++)
			dead |= crosses(&ps[k], fail[i]);
		if (!dead) {
			for (int j = 0; j < ps[k].n; j++)
				good[ps[k].link[j]] = 1;
			continue;
		}
		bad_idx[nb] = k;
		bad[nb++] = (struct ls_tomo_path){.link = ps[k].link, .n = ps[k].n};
	}
	for (uint16_t mark = 1;; mark++) {
		uint32_t got = ls_tomo_pick(good, count, (uint32_t)nl, bad, (uint32_t)nb, cand,
					    MAXL, &n_cand, mark);
		bool has_fail = false;

		if (got == 0)
			break;
		suspects++;
		for (uint32_t c = 0; c < n_cand; c++)
			for (int i = 0; i < n_fail; i++)
				has_fail |= cand[c] == fail[i];
		ck_assert_msg(has_fail || n_fail > 1, "seed %llu: suspect %u names no failed link",
			      (unsigned long long)seed, mark);
		/* brute force: the candidates are exactly the not-good links on
		 * the same dead paths as the first candidate, among those this
		 * step explained plus the ones still open */
		for (int l = 0; l < nl; l++) {
			bool twin = !good[l], listed = false;

			for (int k = 0; twin && k < nb; k++)
				if (bad[k].covered == 0 || bad[k].covered == mark)
					twin = crosses(&ps[bad_idx[k]], cand[0]) ==
					       crosses(&ps[bad_idx[k]], l);
			for (uint32_t c = 0; c < n_cand; c++)
				listed |= cand[c] == l;
			ck_assert_msg(twin == listed, "seed %llu: link %d twin %d listed %d",
				      (unsigned long long)seed, l, twin, listed);
		}
	}
	/* every dead path crosses a failed link, which is never good: all
	 * are explained */
	for (int k = 0; k < nb; k++)
		ck_assert_msg(bad[k].covered != 0, "seed %llu: dead path %d unexplained",
			      (unsigned long long)seed, bad_idx[k]);
	return suspects;
}

START_TEST(test_one_failure)
{
	for (uint64_t seed = 1; seed <= 2000; seed++)
		ck_assert_int_le(scenario(seed, 1), 1);
}
END_TEST

/* Greedy set cover is not always minimal: count how often it uses more
 * suspects than there were failures. */
START_TEST(test_two_failures)
{
	int over = 0, n = 2000;

	for (uint64_t seed = 1; seed <= (uint64_t)n; seed++)
		over += scenario(seed * 7919, 2) > 2;
	fprintf(stderr, "tomo: two failures: %d of %d covers used more than two suspects\n",
		over, n);
	ck_assert_msg(over * 100 <= n, "%d of %d covers over two suspects", over, n);
}
END_TEST

/* A dead path whose links are all good (its reply died) stays unexplained,
 * and nothing is named for it. */
START_TEST(test_reply_death_unexplained)
{
	const uint16_t l1[] = {0, 1, 2}, l2[] = {0, 3, 4};
	struct ls_tomo_path bad[] = {{.link = l1, .n = 3}};
	uint8_t good[5] = {1, 1, 1, 1, 1};
	uint32_t count[5], n_cand;
	uint16_t cand[5];

	(void)l2;
	ck_assert_uint_eq(ls_tomo_pick(good, count, 5, bad, 1, cand, 5, &n_cand, 1), 0);
	ck_assert_uint_eq(bad[0].covered, 0);
	good[2] = 0;
	ck_assert_uint_eq(ls_tomo_pick(good, count, 5, bad, 1, cand, 5, &n_cand, 1), 1);
	ck_assert_uint_eq(n_cand, 1);
	ck_assert_uint_eq(cand[0], 2);
	/* the cap: counted, not written past */
	good[1] = 0;
	bad[0].covered = 0;
	ck_assert_uint_eq(ls_tomo_pick(good, count, 5, bad, 1, cand, 1, &n_cand, 1), 1);
	ck_assert_uint_eq(n_cand, 2);
}
END_TEST

static Suite *
tomo_suite(void)
{
	Suite *s = suite_create("tomo");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_one_failure);
	tcase_add_test(tc, test_two_failures);
	tcase_add_test(tc, test_reply_death_unexplained);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(tomo_suite)
