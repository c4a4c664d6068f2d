/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for pinglists (lib/config, ls_config_pinglist.c): the choice is
 * deterministic per node id, different between ids, spread evenly, skips
 * the node itself and its explicit peers; a 10k-host fleet loads fast; a
 * bad fleet file names the file, the key and the reason.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_config.h"
#include "ls_test.h"
#include "test_config.h"

#define BAD(text, key, reason) config_expect_bad(text, key, reason, __LINE__)

/* --- pinglists ------------------------------------------------------------ */

/* A fleet file of n hosts h0..h(n-1) at 10.1.x.y; host "bad" breaks one. */
static void
write_fleet(const char *name, unsigned int n, int bad)
{
	char path[512], *text = malloc(64 * (size_t)n + 64), *p;

	ck_assert_ptr_nonnull(text);
	p = text + sprintf(text, "{'hosts': [");
	for (unsigned int i = 0; i < n; i++)
		p += sprintf(p, "%s{'name': 'h%u', 'addr': '10.1.%u.%u'}", i ? "," : "", i,
			     1 + i / 250, (int)i == bad ? 300 : 1 + i % 250);
	sprintf(p, "]}");
	ls_test_write_json(name, text, path, sizeof(path));
	free(text);
}

/*
 * The choice is deterministic per node id, differs between ids, skips what
 * it is told to, and spreads the load: over 1000 nodes picking 10 of 1000
 * hosts, every host is picked by about 10 of them.
 */
START_TEST(test_pinglist_choose)
{
	enum { N = 1000, K = 10 };
	static char buf[N][8];
	const char *names[N];
	unsigned int a[K], b[K], used[N] = { 0 }, max = 0, never = 0;
	uint8_t skip[N] = { 0 };

	for (int i = 0; i < N; i++) {
		snprintf(buf[i], sizeof(buf[i]), "h%d", i);
		names[i] = buf[i];
	}
	ck_assert_uint_eq(ls_pinglist_choose(names, NULL, N, 7, 0, K, a), K);
	ck_assert_uint_eq(ls_pinglist_choose(names, NULL, N, 7, 0, K, b), K);
	ck_assert_mem_eq(a, b, sizeof(a));
	ck_assert_uint_eq(ls_pinglist_choose(names, NULL, N, 8, 0, K, b), K);
	ck_assert(memcmp(a, b, sizeof(a)) != 0);
	ck_assert_uint_eq(ls_pinglist_choose(names, NULL, N, 7, 1, K, b), K);
	ck_assert(memcmp(a, b, sizeof(a)) != 0);           /* the seed matters */
	/* skipping the first pick moves the others up by one */
	skip[a[0]] = 1;
	ck_assert_uint_eq(ls_pinglist_choose(names, skip, N, 7, 0, K, b), K);
	ck_assert_mem_eq(b, a + 1, (K - 1) * sizeof(a[0]));
	/* fewer hosts than k: all of them */
	ck_assert_uint_eq(ls_pinglist_choose(names, NULL, 3, 7, 0, K, b), 3);
	for (uint32_t node = 1; node <= N; node++) {
		ck_assert_uint_eq(ls_pinglist_choose(names, NULL, N, node, 0, K, a), K);
		for (int j = 0; j < K; j++)
			used[a[j]]++;
	}
	for (int i = 0; i < N; i++) {
		max = used[i] > max ? used[i] : max;
		never += used[i] == 0;
	}
	ck_assert_uint_le(max, 25);       /* binomial(1000, 1%): mean 10, sd 3.1 */
	ck_assert_uint_le(never, 5);
}
END_TEST

START_TEST(test_pinglist_config)
{
	char path[512], err[LS_ERR_LEN], first[16][LS_NAME_LEN];
	struct ls_config cfg;
	unsigned int i, j;

	write_fleet("fleet.json", 100, -1);
	/* h3 is also an explicit peer; the node itself is one of the hosts */
	ck_assert_int_eq(config_load_text("{'node': {'name': 'h5', 'id': 7}, " PORTS ", "
				   "'peers': [{'name': 'h3', 'addr': '10.1.1.4'}], "
				   "'pinglist': {'fleet': 'fleet.json', 'k': 16}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), 0);
	ck_assert_uint_eq(cfg.n_peers, 17);
	ck_assert_str_eq(cfg.peers[0].name, "h3");
	for (i = 1; i < cfg.n_peers; i++) {
		ck_assert_str_ne(cfg.peers[i].name, "h5");
		ck_assert_str_ne(cfg.peers[i].name, "h3");
		for (j = 1; j < i; j++)
			ck_assert_str_ne(cfg.peers[i].name, cfg.peers[j].name);
		snprintf(first[i - 1], LS_NAME_LEN, "%s", cfg.peers[i].name);
	}
	ls_config_free(&cfg);
	/* the same node id: the same list */
	ck_assert_int_eq(config_load_text("{'node': {'name': 'h5', 'id': 7}, " PORTS ", "
				   "'peers': [{'name': 'h3', 'addr': '10.1.1.4'}], "
				   "'pinglist': {'fleet': 'fleet.json', 'k': 16}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), 0);
	for (i = 1; i < cfg.n_peers; i++)
		ck_assert_str_eq(cfg.peers[i].name, first[i - 1]);
	ls_config_free(&cfg);
	/* another node id: another list */
	ck_assert_int_eq(config_load_text("{'node': {'name': 'h6', 'id': 8}, " PORTS ", "
				   "'pinglist': {'fleet': 'fleet.json', 'k': 16}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), 0);
	ck_assert_uint_eq(cfg.n_peers, 16);
	for (i = 0, j = 0; i < 16; i++)
		j += strcmp(cfg.peers[i].name, first[i]) == 0;
	ck_assert_uint_lt(j, 16);
	ls_config_free(&cfg);
}
END_TEST

/* A 10k-host fleet file loads fast enough for a start (<= 2 s, issue 28). */
START_TEST(test_pinglist_big_fleet)
{
	char path[512], err[LS_ERR_LEN];
	struct ls_config cfg;

	write_fleet("big.json", 10000, -1);
	ck_assert_int_eq(config_load_text("{" BASE ", 'pinglist': {'fleet': 'big.json', 'k': 5000}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), 0);
	ck_assert_uint_eq(cfg.n_peers, 5000);
	ls_config_free(&cfg);
}
END_TEST

START_TEST(test_pinglist_bad)
{
	char path[512], fleet[512], err[LS_ERR_LEN], want[1100];
	struct ls_config cfg;

	write_fleet("badfleet.json", 10, 2);
	ck_assert_int_eq(config_load_text("{" BASE ", 'pinglist': {'fleet': 'badfleet.json'}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), -EINVAL);
	/* names the fleet file, the host's key and the reason */
	snprintf(fleet, sizeof(fleet), "%s/badfleet.json", ls_test_tmpdir);
	snprintf(want, sizeof(want), "%s: hosts[2].addr: not an IP address", fleet);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	/* a missing fleet file is named */
	ck_assert_int_lt(config_load_text("{" BASE ", 'pinglist': {'fleet': 'nope.json'}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), 0);
	ck_assert_msg(strstr(err, "nope.json") != NULL, "%s", err);
	ls_test_write_json("nohosts.json", "{'hosts': []}", fleet, sizeof(fleet));
	ck_assert_int_eq(config_load_text("{" BASE ", 'pinglist': {'fleet': 'nohosts.json'}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), -EINVAL);
	ck_assert_msg(strstr(err, "nohosts.json: hosts: expected a non-empty array") != NULL,
		      "%s", err);
	BAD("{" BASE ", 'pinglist': {'fleet': 'fleet.json', 'k': 0}}", "pinglist.k", "");
	BAD("{" BASE ", 'pinglist': {'k': 3}}", "pinglist.fleet", "");
	BAD("{" BASE ", 'pinglist': {'fleet': 'fleet.json', 'x': 3}}", "pinglist.x", "");
}
END_TEST


void
config_pinglist_tests(TCase *tc)
{
	tcase_add_test(tc, test_pinglist_choose);
	tcase_add_test(tc, test_pinglist_config);
	tcase_add_test(tc, test_pinglist_big_fleet);
	tcase_add_test(tc, test_pinglist_bad);
}
