/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the data path's section of the config (lib/config,
 * ls_config_bridge.c): ports and roles, the policy, failover and balance,
 * and the many-cores keys (bridge.lcores, bridge.spread).
 */
#include <check.h>
#include <stdio.h>

#include "ls_config.h"
#include "ls_test.h"
#include "test_config.h"

#define BAD(text, key, reason) config_expect_bad(text, key, reason, __LINE__)
#define EXACT(text, rest) config_expect_exact(text, rest, __LINE__)

/* The data path's section: two ports with their roles, the policy checked
 * by lib/policy with the same file/key/reason messages. */
#define BR_PORTS "'ports': [{'name': 'h', 'role': 'host', 'dev': 'x'}, " \
	"{'name': 'f', 'dev': 'y', 'ipv4': '10.0.0.1/24'}]"
#define BRIDGE(extra) "{" NODE ", " BR_PORTS ", 'bridge': {'host_port': 'h', " \
	"'fabric_port': 'f', 'link_bps': 10000000000" extra "}}"

START_TEST(test_bridge)
{
	struct ls_config cfg;

	config_load_good(BRIDGE(""), &cfg);
	ck_assert(cfg.bridge.enabled);
	ck_assert_uint_eq(cfg.ports[0].role, LS_PORT_HOST);
	ck_assert_uint_eq(cfg.bridge.link_bps, 10000000000ULL);
	ck_assert_uint_eq(cfg.bridge.max_flows, 262144);
	ck_assert_uint_eq(cfg.bridge.mbufs, 16384);
	ck_assert_str_eq(cfg.bridge.policy_file, "/var/lib/lockstep/n1.policy.json");
	ck_assert_uint_eq(cfg.bridge.policy->n_slices, 1); /* "default" */
	ck_assert(cfg.bridge.failover.enabled);
	ck_assert_uint_eq(cfg.bridge.failover.silence_us, 500);
	ck_assert_uint_eq(cfg.bridge.failover.hold_ms, 2000);
	ck_assert(!cfg.bridge.balance.enabled);
	ck_assert_uint_eq(cfg.bridge.balance.hot_us, 0);
	ck_assert_uint_eq(cfg.bridge.balance.interval_us, 0);
	ck_assert_uint_eq(cfg.bridge.balance.runs, 2);
	ck_assert_uint_eq(cfg.bridge.balance.jitter_us, 0);
	ck_assert_uint_eq(cfg.bridge.balance.settle_us, 0);
	ls_config_free(&cfg);
	config_load_good(BRIDGE(", 'balance': {'enabled': true, 'hot_us': 20, 'runs': 3}"), &cfg);
	ck_assert(cfg.bridge.balance.enabled);
	ck_assert_uint_eq(cfg.bridge.balance.hot_us, 20);
	ck_assert_uint_eq(cfg.bridge.balance.runs, 3);
	ls_config_free(&cfg);
	EXACT(BRIDGE(", 'balance': {'runs': 0}"),
	      "bridge.balance.runs: must be between 1 and 100, got 0");
	EXACT(BRIDGE(", 'balance': {'settle': 5}"),
	      "bridge.balance.settle: unknown key");
	EXACT(BRIDGE(", 'failover': {'silence_us': 5}"),
	      "bridge.failover.silence_us: must be between 20 and 10000000, got 5");
	EXACT(BRIDGE(", 'failover': {'enabled': 1}"),
	      "bridge.failover.enabled: expected boolean, got integer");
	config_load_good(BRIDGE(", 'policy': {'slices': [{'name': 'lat', 'latency': true, "
			 "'max_bps': 2e9, 'match': {'dscp': [46]}}]}"), &cfg);
	ck_assert_uint_eq(cfg.bridge.policy->n_slices, 2);
	ck_assert_uint_eq(cfg.bridge.policy->slices[0].conf.max_bps, 2000000000ULL);
	ls_config_free(&cfg);
	EXACT(BRIDGE(", 'policy': {'slices': [{'name': 'a', 'weight': 0}]}"),
	      "bridge.policy.slices[0].weight: 0 out of range 1..1000");
	EXACT("{" NODE ", 'ports': [{'name': 'h', 'role': 'host', 'dev': 'x', "
	      "'ipv4': '10.0.0.1/24'}]}", "ports[0]: a host port has no addresses of its own");
	EXACT("{" NODE ", " BR_PORTS ", 'bridge': {'host_port': 'f', 'fabric_port': 'f', "
	      "'link_bps': 1000000000}}", "bridge.host_port: port \"f\" needs \"role\": \"host\"");
	EXACT("{" NODE ", " BR_PORTS ", 'bridge': {'host_port': 'h', 'fabric_port': 'z', "
	      "'link_bps': 1000000000}}", "bridge.fabric_port: no port \"z\"");
	EXACT("{" NODE ", 'ports': [{'name': 'h', 'role': 'host', 'dev': 'x', 'lcore': 1}, "
	      "{'name': 'f', 'dev': 'y', 'ipv4': '10.0.0.1/24'}], 'bridge': {'host_port': 'h', "
	      "'fabric_port': 'f', 'link_bps': 1000000000}}",
	      "bridge.host_port: must be polled by the same lcore as the fabric port");
	EXACT("{" NODE ", " BR_PORTS ", 'bridge': {'fabric_port': 'f', 'link_bps': 1000000000}}",
	      "bridge.host_port: required key missing");
	BAD(BRIDGE(", 'wheel_slots': 3000"), "bridge.wheel_slots", "must be a power of 2");
}
END_TEST

/* bridge.lcores and bridge.spread (docs/datapath.md, "Many cores"). */
#define LC_PORTS "'ports': [{'name': 'h', 'role': 'host', 'dev': 'x', 'lcore': 1}, " \
	"{'name': 'f', 'dev': 'y', 'ipv4': '10.0.0.1/24', 'lcore': 1}]"
#define LC_BRIDGE(extra) "{" NODE ", " LC_PORTS ", 'bridge': {'host_port': 'h', " \
	"'fabric_port': 'f', 'link_bps': 10000000000" extra "}}"

START_TEST(test_bridge_lcores)
{
	static const char *const spread[] = {"auto", "rss", "soft"};
	static const uint8_t want[] = {LS_SPREAD_AUTO, LS_SPREAD_RSS, LS_SPREAD_SOFT};
	struct ls_config cfg;
	char buf[512];

	for (unsigned int i = 0; i < 3; i++) {
		snprintf(buf, sizeof(buf), LC_BRIDGE(", 'lcores': [1, 2, 3], 'spread': '%s'"),
			 spread[i]);
		config_load_good(buf, &cfg);
		ck_assert_uint_eq(cfg.bridge.n_lcores, 3);
		ck_assert_uint_eq(cfg.bridge.lcores[2], 3);
		ck_assert_uint_eq(cfg.bridge.spread, want[i]);
		ls_config_free(&cfg);
	}
	config_load_good(LC_BRIDGE(""), &cfg);
	ck_assert_uint_eq(cfg.bridge.n_lcores, 0);
	ck_assert_uint_eq(cfg.bridge.spread, LS_SPREAD_AUTO);
	ls_config_free(&cfg);
	BAD(LC_BRIDGE(", 'lcores': [1, 2], 'spread': 'hash'"), "bridge.spread", "hash");
	EXACT(LC_BRIDGE(", 'lcores': [2, 1]"),
	      "bridge.lcores: must start with 1, the fabric port's lcore");
	EXACT(LC_BRIDGE(", 'lcores': [1, 1]"), "bridge.lcores[1]: lcore 1 is listed twice");
	EXACT("{" NODE ", 'ports': [{'name': 'h', 'role': 'host', 'dev': 'x', 'lcore': 1}, "
	      "{'name': 'f', 'dev': 'y', 'ipv4': '10.0.0.1/24', 'lcore': 1}, "
	      "{'name': 'g', 'dev': 'z', 'ipv4': '10.0.1.1/24', 'lcore': 2}], "
	      "'bridge': {'host_port': 'h', 'fabric_port': 'f', 'link_bps': 1000000000, "
	      "'lcores': [1, 2]}}",
	      "bridge.lcores[1]: lcore 2 polls port \"g\": the data path's other lcores "
	      "poll no port");
	BAD(LC_BRIDGE(", 'lcores': [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]"),
	    "bridge.lcores", "16");
	EXACT("{" NODE ", " BR_PORTS ", 'bridge': {'host_port': 'h', 'fabric_port': 'f', "
	      "'link_bps': 1000000000, 'lcores': [0, 1]}}",
	      "bridge.lcores: ports[\"f\"] needs an \"lcore\" of its own to lead the data "
	      "path's lcores");
}
END_TEST

void
config_bridge_tests(TCase *tc)
{
	tcase_add_test(tc, test_bridge);
	tcase_add_test(tc, test_bridge_lcores);
}
