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
#include <math.h>
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

/* ---- per-link queueing (ls_tomo_queues) ------------------------------ */

/*
 * A host on leaf 0 of a 3-leaf fabric with ns spines and 2 hosts per
 * remote leaf; 4 paths to each of the 4 peers, path k over spine k % ns.
 * Links: 0 our uplink, 1..ns leaf0-spine, then spine-leaf1, spine-leaf2
 * (ns each), then the 4 peers' downlinks.
 */
#define QP 16
#define QL (1 + 3 * 4 + 4)

static uint32_t
q_fabric(int ns, uint16_t links[QP][4], struct ls_tomo_qpath *p)
{
	uint32_t n = 0;

	for (int peer = 0; peer < 4; peer++)
		for (int k = 0; k < 4; k++, n++) {
			int sp = k % ns, leaf = peer / 2;

			links[n][0] = 0;
			links[n][1] = (uint16_t)(1 + sp);
			links[n][2] = (uint16_t)(1 + ns + leaf * ns + sp);
			links[n][3] = (uint16_t)(1 + 3 * ns + peer);
			p[n] = (struct ls_tomo_qpath){.link = links[n], .n = 4, .w = 100};
		}
	return n;
}

static double
gauss(unsigned int *seed)
{
	double u = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0), v = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0);

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static void
q_solve(struct ls_tomo_qpath *p, uint32_t np, uint32_t nl, struct ls_tomo_qlink *out)
{
	static uint64_t sig[QL];
	static uint32_t off[QL + 1], fill[QL], ent[QP * 4];
	static double r[QP];
	struct ls_tomo_qwork w = {.sig = sig, .off = off, .fill = fill, .ent = ent, .r = r,
				  .cap_links = QL, .cap_paths = QP, .cap_entries = QP * 4};

	ck_assert_int_gt(ls_tomo_queues(p, np, nl, out, &w, 200), 0);
}

/*
 * One queueing link anywhere (each in turn, 4 spines, 20 random sizes and
 * noise each): the paths' means are the sum of their links' plus noise
 * (0.3 us, the mean of ~100 samples of a lab path); its estimate is
 * within max(5%, 2 us) of the truth, every other link's under 2 us.
 * Then two queueing links at random, told apart when their path sets are.
 */
START_TEST(test_queues_one_and_two_links)
{
	uint16_t links[QP][4];
	struct ls_tomo_qpath p[QP];
	struct ls_tomo_qlink out[QL];
	unsigned int seed = 7;
	int ns = 4, nl = 1 + 3 * ns + 4, bad = 0, runs = 0;

	for (int hot = 0; hot < nl; hot++) {
		for (int rep = 0; rep < 20; rep++, runs++) {
			uint32_t np = q_fabric(ns, links, p);
			double truth[QL] = {0};

			truth[hot] = 5000 + rand_r(&seed) % 200000;
			for (uint32_t i = 0; i < np; i++) {
				p[i].q_ns = 300 * gauss(&seed);
				for (int j = 0; j < 4; j++)
					p[i].q_ns += truth[p[i].link[j]];
			}
			q_solve(p, np, (uint32_t)nl, out);
			for (int l = 0; l < nl; l++) {
				double tol = truth[l] * 0.05 > 2000 ? truth[l] * 0.05 : 2000;

				if (fabs(out[l].q_ns - truth[l]) > tol) {
					bad++;
					printf("hot %d rep %d: link %d estimate %.0f truth %.0f\n",
					       hot, rep, l, out[l].q_ns, truth[l]);
				}
			}
		}
	}
	ck_assert_msg(bad == 0, "%d of %d links off", bad, runs * nl);
	/* two at random, on links of different levels: spine uplink and a
	 * remote downlink (each path set its own) */
	for (int rep = 0; rep < 200; rep++) {
		uint32_t np = q_fabric(ns, links, p);
		double truth[QL] = {0};
		int a = 1 + rand_r(&seed) % ns, b = 1 + 3 * ns + rand_r(&seed) % 4;

		truth[a] = 5000 + rand_r(&seed) % 100000;
		truth[b] = 5000 + rand_r(&seed) % 100000;
		for (uint32_t i = 0; i < np; i++) {
			p[i].q_ns = 300 * gauss(&seed);
			for (int j = 0; j < 4; j++)
				p[i].q_ns += truth[p[i].link[j]];
		}
		q_solve(p, np, (uint32_t)nl, out);
		for (int l = 0; l < nl; l++) {
			double tol = truth[l] * 0.05 > 2000 ? truth[l] * 0.05 : 2000;

			ck_assert_msg(fabs(out[l].q_ns - truth[l]) <= tol,
				      "rep %d (%d, %d): link %d estimate %.0f truth %.0f", rep, a, b,
				      l, out[l].q_ns, truth[l]);
		}
	}
}
END_TEST

/*
 * Peers on one remote leaf only: each spine's two links (leaf0-spine,
 * spine-leaf1) carry the same paths and cannot be told apart: one group of
 * two, both reporting the queue; a link no measured path crosses has none;
 * a path with no weight is left out; the residual shows a path the fit
 * cannot explain.
 */
START_TEST(test_queues_groups_and_confidence)
{
	uint16_t links[QP][4];
	struct ls_tomo_qpath p[QP];
	struct ls_tomo_qlink out[QL];
	int ns = 4, nl = 1 + 3 * ns + 4;
	uint32_t np = q_fabric(ns, links, p) / 2;    /* peers 0 and 1: leaf 1 */

	for (uint32_t i = 0; i < np; i++)
		p[i].q_ns = p[i].link[1] == 2 ? 40000 : 0;   /* spine 1's paths */
	q_solve(p, np, (uint32_t)nl, out);
	ck_assert_uint_eq(out[2].shared, 2);
	ck_assert_uint_eq(out[2].group, 2);
	ck_assert_uint_eq(out[1 + ns + 1].group, 2);
	ck_assert(fabs(out[2].q_ns - 40000) < 100 && fabs(out[1 + ns + 1].q_ns - 40000) < 100);
	ck_assert_uint_eq(out[0].shared, 1);
	ck_assert(out[0].q_ns < 100);
	ck_assert_uint_eq(out[1 + 2 * ns].paths, 0);     /* spine0-leaf2: no peer there */
	ck_assert(out[2].resid_ns < 100);
	/* one path of spine 1 reads 40 us more than the others: unexplained */
	p[1].q_ns += 40000;
	p[3].w = 0;
	q_solve(p, np, (uint32_t)nl, out);
	ck_assert(out[2].resid_ns > 5000);
	ck_assert_uint_eq(out[0].paths, np - 1);
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
	tcase_add_test(tc, test_queues_one_and_two_links);
	tcase_add_test(tc, test_queues_groups_and_confidence);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(tomo_suite)
