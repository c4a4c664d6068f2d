/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/config: good files load with the documented defaults,
 * and every class of bad input is rejected with one "FILE: KEY: REASON" line
 * naming the right key.
 *
 * Config text is written in C with single quotes and turned into JSON by
 * swapping them for double quotes: the cases stay readable, and no valid
 * value in these tests needs a single quote. Files go to a mkdtemp()
 * directory so that the file name in messages is real and predictable.
 * Every file in config/examples/ is loaded too, so the shipped examples
 * cannot rot (the source tree is found through LS_SOURCE_ROOT).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ls_config.h"
#include "ls_test.h"
#include "test_config.h"

/* A config whose only port gets extra keys. */
#define ONE_PORT(extra) \
	"{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv4': '10.0.0.1/24', " extra "}]}"

#define BAD(text, key, reason) config_expect_bad(text, key, reason, __LINE__)
#define EXACT(text, rest) config_expect_exact(text, rest, __LINE__)

START_TEST(test_minimal_defaults)
{
	struct ls_config cfg;
	const struct ls_conf_port *p;

	config_load_good("{" BASE "}", &cfg);
	ck_assert_str_eq(cfg.node_name, "n1");
	ck_assert(cfg.route.enabled);
	ck_assert_uint_eq(cfg.route.refresh_s, 300);
	ck_assert_uint_eq(cfg.route.traces_per_s, 20);
	ck_assert_uint_eq(cfg.route.max_ttl, 8);
	ck_assert_uint_eq(cfg.links.hot_us, 200);
	ck_assert_uint_eq(cfg.node_id, 7);
	ck_assert_uint_eq(cfg.n_ports, 1);
	p = &cfg.ports[0];
	ck_assert_str_eq(p->name, "p0");
	ck_assert_str_eq(p->dev, "net_null0");
	ck_assert(!p->has_mac);
	ck_assert_uint_eq(p->ipv4.addr.family, LS_AF_INET);
	ck_assert_uint_eq(p->ipv4.plen, 24);
	ck_assert_uint_eq(p->ipv6.addr.family, 0);
	ck_assert_uint_eq(p->gateway4.family, 0);
	ck_assert_uint_eq(p->gateway6.family, 0);
	ck_assert_int_eq(p->lcore, -1);
	ck_assert_uint_eq(p->rx_desc, 1024);
	ck_assert_uint_eq(p->tx_desc, 1024);
	ck_assert_uint_eq(p->mtu, 1500);
	ck_assert_uint_eq(p->vlan, 0);
	ck_assert(p->kernel_stamps);
	ck_assert_ptr_null(cfg.peers);
	ck_assert_uint_eq(cfg.n_peers, 0);

	ck_assert_uint_eq(cfg.probe.interval_us, 10000);
	ck_assert_uint_eq(cfg.probe.paths, 4);
	ck_assert_uint_eq(cfg.probe.dst_port, 862);
	ck_assert_uint_eq(cfg.probe.src_port_base, 49152);
	ck_assert_uint_eq(cfg.probe.pair_spacing_ns, 0);
	ck_assert_uint_eq(cfg.probe.jitter_pct, 10);
	ck_assert_uint_eq(cfg.probe.loss_timeout_us, 0);
	ck_assert_uint_eq(cfg.probe.ttl, 255);
	ck_assert_uint_eq(cfg.probe.dscp, 0);
	ck_assert_uint_eq(cfg.probe.pad, 0);
	ck_assert_uint_eq(cfg.probe.down_after, 3);
	ck_assert_uint_eq(cfg.probe.acquire_ms, 4000);
	ck_assert_uint_eq(cfg.probe.acquire_rate, 4);

	ck_assert(cfg.reflector.enabled);
	ck_assert_uint_eq(cfg.reflector.rate_pps, 20000);
	ck_assert_uint_eq(cfg.reflector.burst, 256);
	ck_assert_uint_eq(cfg.reflector.max_sources, 4096);
	ck_assert(!cfg.reflector.ntp_format);

	ck_assert_int_eq(cfg.clock.source, LS_CLOCK_AUTO);
	ck_assert(!cfg.clock.rx_trailer);
	ck_assert(!cfg.clock.tx_trailer);
	ck_assert_uint_eq(cfg.clock.tx_lead_ns, 20000);
	ck_assert_uint_eq(cfg.clock.sim.seed, 7);
	ck_assert_int_eq(cfg.clock.sim.offset_ns, 0);

	ck_assert_str_eq(cfg.control.socket, "/run/lockstep/n1.sock");
	ck_assert_uint_eq(cfg.control.mode, 0660);
	ck_assert_uint_eq(cfg.control.max_clients, 16);

	ck_assert(!cfg.idle.backoff);
	ck_assert_uint_eq(cfg.idle.after_polls, 256);
	ck_assert_uint_eq(cfg.idle.sleep_us, 100);

	ck_assert_uint_eq(cfg.capture.snaplen, 256);
	ck_assert_uint_eq(cfg.capture.max_bytes, 64ULL << 20);
	ck_assert_uint_eq(cfg.capture.ring_size, 4096);

	ck_assert_str_eq(cfg.log_level, "info");
	ls_config_free(&cfg);
	ck_assert_ptr_null(cfg.peers);
	ls_config_free(&cfg); /* twice is harmless */
}
END_TEST

static const char full_text[] =
	"{\n"
	"  'node': {'name': 'gpu-01.rack_2', 'id': 4294967295},\n"
	"  'ports': [\n"
	"    {'name': 'p0', 'dev': 'net_memif0,role=server,socket=/tmp/a.sock',\n"
	"     'mac': '02:AA:bb:cc:dd:ee', 'ipv4': '10.1.0.1/24', 'ipv6': 'fd00::1/64',\n"
	"     'gateway4': '10.1.0.254', 'gateway6': 'fe80::1', 'lcore': 3,\n"
	"     'rx_desc': 64, 'tx_desc': 16384, 'mtu': 9216},\n"
	"    {'name': 'p1', 'dev': '0000:3b:00.1', 'ipv6': '2001:db8::2/127', 'lcore': -1,\n"
	"     'mtu': 1592}\n"
	"  ],\n"
	"  'peers': [\n"
	"    {'name': 'a', 'addr': '10.1.0.2'},\n"
	"    {'name': 'b', 'addr': '2001:db8::3', 'port': 'p1', 'interval_us': 100,\n"
	"     'paths': 64}\n"
	"  ],\n"
	"  'probe': {'interval_us': 60000000, 'paths': 64, 'dst_port': 4862,\n"
	"            'src_port_base': 65472, 'pair_spacing_ns': 1000000, 'jitter_pct': 50,\n"
	"            'loss_timeout_us': 60000000, 'ttl': 1, 'dscp': 63, 'pad': 1400,\n"
	"            'down_after': 1000, 'acquire_ms': 600000, 'acquire_rate': 16},\n"
	"  'reflector': {'enabled': false, 'rate_pps': 100000000, 'burst': 1,\n"
	"                'max_sources': 1048576, 'timestamp_format': 'ntp'},\n"
	"  'clock': {'source': 'sim', 'sim': {'offset_ns': -1000000000000,\n"
	"            'drift_ppm': -999.5, 'wander_ns': 1000000, 'seed': 42}},\n"
	"  'control': {'socket': '/tmp/x.sock', 'mode': '0600', 'max_clients': 1024},\n"
	"  'idle': {'backoff': true, 'after_polls': 1000000, 'sleep_us': 100000},\n"
	"  'capture': {'snaplen': 65535, 'max_bytes': 1099511627776, 'ring_size': 1048576},\n"
	"  'log': {'level': 'debug'}\n"
	"}\n";

START_TEST(test_full)
{
	char a[LS_ADDR_STRLEN], m[LS_MAC_STRLEN];
	struct ls_config cfg;
	const struct ls_conf_port *p;

	config_load_good(full_text, &cfg);
	ck_assert_str_eq(cfg.node_name, "gpu-01.rack_2");
	ck_assert_uint_eq(cfg.node_id, 4294967295U);
	ck_assert_uint_eq(cfg.n_ports, 2);
	p = &cfg.ports[0];
	ck_assert_str_eq(p->dev, "net_memif0,role=server,socket=/tmp/a.sock");
	ck_assert(p->has_mac);
	ck_assert_str_eq(ls_mac_fmt(&p->mac, m, sizeof(m)), "02:aa:bb:cc:dd:ee");
	ck_assert_str_eq(ls_addr_fmt(&p->ipv4.addr, a, sizeof(a)), "10.1.0.1");
	ck_assert_uint_eq(p->ipv6.plen, 64);
	ck_assert_str_eq(ls_addr_fmt(&p->gateway4, a, sizeof(a)), "10.1.0.254");
	ck_assert_str_eq(ls_addr_fmt(&p->gateway6, a, sizeof(a)), "fe80::1");
	ck_assert_int_eq(p->lcore, 3);
	ck_assert_uint_eq(p->rx_desc, 64);
	ck_assert_uint_eq(p->tx_desc, 16384);
	ck_assert_uint_eq(p->mtu, 9216);
	ck_assert_int_eq(cfg.ports[1].lcore, -1);
	ck_assert_uint_eq(cfg.ports[1].ipv4.addr.family, 0);

	ck_assert_uint_eq(cfg.n_peers, 2);
	ck_assert_str_eq(cfg.peers[0].port, "p0"); /* defaulted to the first port */
	ck_assert_uint_eq(cfg.peers[0].interval_us, 0);
	ck_assert_uint_eq(cfg.peers[0].paths, 0);
	ck_assert_str_eq(cfg.peers[1].port, "p1");
	ck_assert_uint_eq(cfg.peers[1].addr.family, LS_AF_INET6);
	ck_assert_uint_eq(cfg.peers[1].interval_us, 100);
	ck_assert_uint_eq(cfg.peers[1].paths, 64);

	ck_assert_uint_eq(cfg.probe.interval_us, 60000000);
	ck_assert_uint_eq(cfg.probe.paths, 64);
	ck_assert_uint_eq(cfg.probe.dst_port, 4862);
	ck_assert_uint_eq(cfg.probe.src_port_base, 65472);
	ck_assert_uint_eq(cfg.probe.pair_spacing_ns, 1000000);
	ck_assert_uint_eq(cfg.probe.jitter_pct, 50);
	ck_assert_uint_eq(cfg.probe.loss_timeout_us, 60000000);
	ck_assert_uint_eq(cfg.probe.ttl, 1);
	ck_assert_uint_eq(cfg.probe.dscp, 63);
	ck_assert_uint_eq(cfg.probe.pad, 1400);
	ck_assert_uint_eq(cfg.probe.down_after, 1000);
	ck_assert_uint_eq(cfg.probe.acquire_ms, 600000);
	ck_assert_uint_eq(cfg.probe.acquire_rate, 16);

	ck_assert(!cfg.reflector.enabled);
	ck_assert_uint_eq(cfg.reflector.rate_pps, 100000000);
	ck_assert_uint_eq(cfg.reflector.burst, 1);
	ck_assert_uint_eq(cfg.reflector.max_sources, 1048576);
	ck_assert(cfg.reflector.ntp_format);

	ck_assert_int_eq(cfg.clock.source, LS_CLOCK_SIM);
	ck_assert_str_eq(ls_clock_source_name(cfg.clock.source), "sim");
	ck_assert(cfg.clock.sim.offset_ns == -1000000000000LL);
	ck_assert(cfg.clock.sim.drift_ppm == -999.5);
	ck_assert(cfg.clock.sim.wander_ns == 1e6);
	ck_assert_uint_eq(cfg.clock.sim.seed, 42);

	ck_assert_str_eq(cfg.control.socket, "/tmp/x.sock");
	ck_assert_uint_eq(cfg.control.mode, 0600);
	ck_assert_uint_eq(cfg.control.max_clients, 1024);
	ck_assert(cfg.idle.backoff);
	ck_assert_uint_eq(cfg.idle.after_polls, 1000000);
	ck_assert_uint_eq(cfg.idle.sleep_us, 100000);
	ck_assert_uint_eq(cfg.capture.snaplen, 65535);
	ck_assert_uint_eq(cfg.capture.max_bytes, 1ULL << 40);
	ck_assert_uint_eq(cfg.capture.ring_size, 1048576);
	ck_assert_str_eq(cfg.log_level, "debug");

	ck_assert_int_eq(ls_config_port_index(&cfg, "p1"), 1);
	ck_assert_int_eq(ls_config_port_index(&cfg, "p2"), -1);
	ls_config_free(&cfg);
}
END_TEST

START_TEST(test_helpers)
{
	ck_assert_str_eq(ls_clock_source_name(LS_CLOCK_AUTO), "auto");
	ck_assert_str_eq(ls_clock_source_name(LS_CLOCK_TSC), "tsc");
	ck_assert_str_eq(ls_clock_source_name(LS_CLOCK_NIC), "nic");
	ck_assert_str_eq(ls_clock_source_name((enum ls_clock_source)99), "?");
	ck_assert_int_eq(ls_config_port_index(NULL, "p0"), -1);
}
END_TEST

START_TEST(test_syntax_error)
{
	char path[512], err[LS_ERR_LEN], want[600];
	struct ls_config cfg;
	int rc;

	rc = config_load_text("{\n  'node': {'name': 'n1', 'id': 1},\n  'ports': [,]\n}\n",
		       &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_int_eq(rc, -EINVAL);
	snprintf(want, sizeof(want), "%s: line 3 column ", path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got \"%s\"", err);
	ck_assert(config_all_zero(&cfg));

	/* a duplicate key is refused by the parser, with its position */
	rc = config_load_text("{" BASE ",\n 'log': {'level': 'info', 'level': 'debug'}}",
		       &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_int_eq(rc, -EINVAL);
	snprintf(want, sizeof(want), "%s: line 2 column ", path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got \"%s\"", err);
	ck_assert_msg(strstr(err, "duplicate") != NULL, "got \"%s\"", err);
}
END_TEST

START_TEST(test_empty_file)
{
	char path[512], err[LS_ERR_LEN], want[600];
	struct ls_config cfg;
	int rc;

	rc = config_load_text("", &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_int_eq(rc, -EINVAL);
	snprintf(want, sizeof(want), "%s: empty file", path);
	ck_assert_str_eq(err, want);
	ck_assert(config_all_zero(&cfg));

	/* only blanks: the parser's own message, with a position */
	rc = config_load_text("  \n", &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_int_eq(rc, -EINVAL);
	snprintf(want, sizeof(want), "%s: line ", path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got \"%s\"", err);

	/* a directory is not a config file */
	ck_assert_int_eq(ls_config_load(ls_test_tmpdir, &cfg, err, sizeof(err)), -EISDIR);

	/* valid JSON, wrong shape */
	EXACT("[1, 2]", "expected an object at the top level, got array");
	EXACT("{}", "node: required key missing");
}
END_TEST

START_TEST(test_missing_file)
{
	char path[512], err[LS_ERR_LEN], want[600];
	struct ls_config cfg;
	int rc;

	snprintf(path, sizeof(path), "%s/does-not-exist.json", ls_test_tmpdir);
	memset(&cfg, 0x5a, sizeof(cfg));
	rc = ls_config_load(path, &cfg, err, sizeof(err));
	ck_assert_int_eq(rc, -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	ck_assert_str_eq(err, want);
	ck_assert(config_all_zero(&cfg));

	/* no error buffer at all must not crash */
	ck_assert_int_eq(ls_config_load(path, &cfg, NULL, 0), -ENOENT);
}
END_TEST

START_TEST(test_unknown_key)
{
	EXACT("{" BASE ", 'extra': 1}", "extra: unknown key");
	EXACT("{" BASE ", 'probe': {'intervall_us': 5000}}",
	      "probe.intervall_us: unknown key");
	BAD(ONE_PORT("'vlans': 5"),
	    "ports[0].vlans", "unknown key");
	BAD("{" BASE ", 'peers': [{'name': 'a', 'addr': '10.0.0.2'}, {'name': 'b', 'adr': '10.0.0.3'}]}",
	    "peers[1].adr", "unknown key");
	BAD("{" BASE ", 'clock': {'source': 'sim', 'sim': {'offset': 1}}}",
	    "clock.sim.offset", "unknown key");
	BAD("{'node': {'name': 'n1', 'id': 1, 'role': 'x'}, " PORTS "}",
	    "node.role", "unknown key");
}
END_TEST

START_TEST(test_wrong_type)
{
	EXACT("{" BASE ", 'probe': {'interval_us': '10'}}",
	      "probe.interval_us: expected integer, got string");
	EXACT("{" BASE ", 'probe': {'paths': 1.5}}",
	      "probe.paths: expected integer, got real");
	BAD("{" BASE ", 'reflector': {'enabled': 1}}", "reflector.enabled",
	    "expected boolean, got integer");
	BAD("{'node': {'name': 5, 'id': 1}, " PORTS "}", "node.name",
	    "expected string, got integer");
	BAD("{" NODE ", 'ports': {'p0': {}}}", "ports", "expected array, got object");
	BAD("{" BASE ", 'peers': {}}", "peers", "expected array, got object");
	BAD("{" BASE ", 'peers': [3]}", "peers[0]", "expected object, got integer");
	BAD("{" BASE ", 'idle': true}", "idle", "expected object, got boolean");
	BAD("{" BASE ", 'clock': {'source': 'sim', 'sim': {'drift_ppm': '1'}}}",
	    "clock.sim.drift_ppm", "expected number, got string");
	BAD("{" BASE ", 'control': {'mode': 432}}", "control.mode",
	    "expected string of octal digits");
	BAD("{" BASE ", 'log': {'level': null}}", "log.level",
	    "expected string, got null");
}
END_TEST

/* The sync section (issue 27 B: it was not parsed in any test): defaults,
 * every key, and a bad value named by its path. */
START_TEST(test_sync_section)
{
	struct ls_config cfg;

	config_load_good("{" BASE "}", &cfg);
	ck_assert(cfg.sync.enabled);
	ck_assert_uint_eq(cfg.sync.window_ms, 2000);
	ck_assert_uint_eq(cfg.sync.interval_ms, 250);
	ck_assert_uint_eq(cfg.sync.purity_tol_ns, 200);
	ck_assert_uint_eq(cfg.sync.paths, LS_MAX_PATHS);
	ck_assert_uint_eq(cfg.sync.path_budget, 4096);
	ck_assert(cfg.sync.wander_ns == 10.0);
	ck_assert_str_eq(cfg.sync.shm, "/dev/shm/lockstep-n1.fleettime");
	ls_config_free(&cfg);
	config_load_good("{" BASE ", 'sync': {'enabled': false, 'window_ms': 4000, 'interval_ms': 100, "
		  "'purity_tol_ns': 1500, 'outlier_ns': 300, 'reference': 3, 'holdover_ppm': 2.5, "
		  "'wander_ns': 20, 'asym_bound_ns': 50, 'paths': 2, 'path_budget': 0, 'shm': '', "
		  "'chrony_sock': '/run/chrony.sock', 'chrony_offset_ns': 37000000000}}", &cfg);
	ck_assert(!cfg.sync.enabled);
	ck_assert_uint_eq(cfg.sync.window_ms, 4000);
	ck_assert_uint_eq(cfg.sync.interval_ms, 100);
	ck_assert_uint_eq(cfg.sync.purity_tol_ns, 1500);
	ck_assert_uint_eq(cfg.sync.outlier_ns, 300);
	ck_assert_uint_eq(cfg.sync.reference, 3);
	ck_assert(cfg.sync.holdover_ppm == 2.5);
	ck_assert(cfg.sync.wander_ns == 20.0);
	ck_assert(cfg.sync.asym_bound_ns == 50.0);
	ck_assert_uint_eq(cfg.sync.paths, 2);
	ck_assert_uint_eq(cfg.sync.path_budget, 0);
	ck_assert_str_eq(cfg.sync.shm, "");
	ck_assert_str_eq(cfg.sync.chrony_sock, "/run/chrony.sock");
	ls_config_free(&cfg);
	BAD("{" BASE ", 'sync': {'window_ms': 50}}", "sync.window_ms",
	    "must be between 100 and 600000, got 50");
	BAD("{" BASE ", 'sync': {'paths': 0}}", "sync.paths", "must be between 1 and");
	BAD("{" BASE ", 'sync': {'path_budget': -1}}", "sync.path_budget", "must be between 0 and");
	BAD("{" BASE ", 'sync': {'windw_ms': 500}}", "sync.windw_ms", "unknown key");
}
END_TEST

START_TEST(test_number_accepts_integer)
{
	struct ls_config cfg;

	config_load_good("{" BASE ", 'clock': {'source': 'sim', 'sim': {'drift_ppm': 3, 'wander_ns': 0.25}}}",
		  &cfg);
	ck_assert(cfg.clock.sim.drift_ppm == 3.0);
	ck_assert(cfg.clock.sim.wander_ns == 0.25);
	ck_assert_uint_eq(cfg.clock.sim.seed, 7); /* node id */
	ls_config_free(&cfg);
}
END_TEST

START_TEST(test_out_of_range)
{
	char path[512], err[LS_ERR_LEN];
	struct ls_config cfg;

	EXACT("{" BASE ", 'probe': {'interval_us': 5}}",
	      "probe.interval_us: must be between 100 and 60000000, got 5");
	BAD("{'node': {'name': 'n1', 'id': 0}, " PORTS "}", "node.id",
	    "must be between 1 and 4294967295, got 0");
	BAD("{'node': {'name': 'n1', 'id': 4294967296}, " PORTS "}", "node.id",
	    "got 4294967296");
	BAD("{" BASE ", 'route': {'max_ttl': 32}}", "route.max_ttl",
	    "must be between 1 and 31, got 32");
	BAD("{" BASE ", 'links': {'hot_us': 0}}", "links.hot_us",
	    "must be between 1 and 10000000, got 0");
	BAD(ONE_PORT("'rx_desc': 1000"),
	    "ports[0].rx_desc", "must be a power of 2, got 1000");
	BAD(ONE_PORT("'tx_desc': 32768"),
	    "ports[0].tx_desc", "must be between 64 and 16384, got 32768");
	BAD(ONE_PORT("'lcore': -2"),
	    "ports[0].lcore", "must be between -1 and 1023");
	BAD(ONE_PORT("'mtu': 575"),
	    "ports[0].mtu", "must be between 576 and 9216");
	BAD(ONE_PORT("'vlan': 4095"),
	    "ports[0].vlan", "must be between 1 and 4094, got 4095");
	BAD("{" BASE ", 'probe': {'pcp': 8}}", "probe.pcp", "must be between 0 and 7, got 8");
	/* Regression (issue 27 L9): probes larger than a port's MTU were
	 * accepted and then dropped on the way. IPv4: 20 + 8 + 44 + 28 + 68 + 4
	 * + pad; at mtu 1500 the largest pad is 1328. */
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv4': '10.0.0.1/24'}], "
	    "'probe': {'pad': 1329}}",
	    "probe.pad", "1501-byte probes, over ports[0] (p0) mtu 1500");
	ck_assert_int_eq(config_load_text("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', "
				   "'ipv4': '10.0.0.1/24'}], 'probe': {'pad': 1328}}",
				   &cfg, err, sizeof(err), path, sizeof(path)), 0);
	ls_config_free(&cfg);
	BAD("{" BASE ", 'probe': {'src_port_base': 65500}}", "probe.src_port_base",
	    "must be between 1024 and 65472, got 65500");
	BAD("{" BASE ", 'probe': {'paths': 65}}", "probe.paths", "between 1 and 64");
	BAD("{" BASE ", 'probe': {'jitter_pct': 51}}", "probe.jitter_pct", "got 51");
	BAD("{" BASE ", 'probe': {'acquire_rate': 0}}", "probe.acquire_rate", "got 0");
	BAD("{" BASE ", 'probe': {'dscp': 64}}", "probe.dscp", "got 64");
	BAD("{" BASE ", 'probe': {'ttl': 0}}", "probe.ttl", "got 0");
	BAD("{" BASE ", 'peers': [{'name': 'a', 'addr': '10.0.0.2', 'paths': 0}]}",
	    "peers[0].paths", "must be between 1 and 64, got 0");
	BAD("{" BASE ", 'capture': {'max_bytes': 1099511627777}}", "capture.max_bytes",
	    "must be between 4096 and 1099511627776");
	BAD("{" BASE ", 'capture': {'ring_size': 100}}", "capture.ring_size",
	    "must be a power of 2, got 100");
	BAD("{" BASE ", 'reflector': {'max_sources': 15}}", "reflector.max_sources",
	    "got 15");
	BAD("{" BASE ", 'clock': {'source': 'sim', 'sim': {'drift_ppm': 1000.5}}}",
	    "clock.sim.drift_ppm", "must be between -1000 and 1000, got 1000.5");
	BAD("{" BASE ", 'clock': {'source': 'sim', 'sim': {'offset_ns': 1000000000001}}}",
	    "clock.sim.offset_ns", "got 1000000000001");
	BAD("{" BASE ", 'clock': {'source': 'sim', 'sim': {'wander_ns': -1}}}",
	    "clock.sim.wander_ns", "must be between 0 and");
	BAD("{" BASE ", 'control': {'mode': '1777'}}", "control.mode",
	    "must be at most 0777");
	BAD("{" BASE ", 'control': {'mode': '0689'}}", "control.mode",
	    "expected octal digits");
	BAD("{" BASE ", 'control': {'max_clients': 0}}", "control.max_clients", "got 0");
	BAD("{" BASE ", 'idle': {'sleep_us': 100001}}", "idle.sleep_us", "got 100001");
	BAD("{" BASE ", 'control': {'socket': '/tmp/"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "'}}", "control.socket", "must be at most 107 characters long");
	BAD("{'node': {'name': '', 'id': 1}, " PORTS "}", "node.name", "must not be empty");
	BAD("{'node': {'name': 'n/1', 'id': 1}, " PORTS "}", "node.name",
	    "invalid character");
	BAD("{'node': {'name': '"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "', 'id': 1}, " PORTS "}", "node.name", "must be at most 63 characters long, got 64");
	BAD("{" NODE ", 'ports': [" PORT0 ", " PORT0 ", " PORT0 ", " PORT0 ", " PORT0
	    ", " PORT0 ", " PORT0 ", " PORT0 ", " PORT0 "]}", "ports",
	    "must have 1 to 8 entries, got 9");
	BAD("{" NODE ", 'ports': []}", "ports", "got 0");
}
END_TEST

START_TEST(test_enums)
{
	struct ls_config cfg;

	BAD("{" BASE ", 'clock': {'source': 'gps'}}", "clock.source",
	    "must be one of \"auto\", \"tsc\", \"nic\", \"sim\", got \"gps\"");
	BAD("{" BASE ", 'reflector': {'timestamp_format': 'unix'}}",
	    "reflector.timestamp_format", "got \"unix\"");
	BAD("{" BASE ", 'log': {'level': 'verbose'}}", "log.level", "got \"verbose\"");
	config_load_good("{" BASE ", 'clock': {'source': 'tsc'}, 'log': {'level': 'warning'},"
		  " 'reflector': {'timestamp_format': 'ptp'}}", &cfg);
	ck_assert_int_eq(cfg.clock.source, LS_CLOCK_TSC);
	ck_assert_str_eq(cfg.log_level, "warning");
	ck_assert(!cfg.reflector.ntp_format);
	ls_config_free(&cfg);
	/* the simulated clock's parameters make no sense with a real clock */
	EXACT("{" BASE ", 'clock': {'source': 'nic', 'sim': {'seed': 1}}}",
	      "clock.sim: allowed only when source is \"sim\"");
	BAD("{" BASE ", 'clock': {'sim': {'seed': 1}}}", "clock.sim",
	    "allowed only when source is");
	/* trailer stamps are on this host's TSC timeline: not with a NIC's clock */
	EXACT("{" BASE ", 'clock': {'source': 'nic', 'rx_trailer': true}}",
	      "clock.rx_trailer: needs source \"sim\" or \"tsc\" (its stamps are on this "
	      "host's TSC timeline)");
	BAD("{" BASE ", 'clock': {'rx_trailer': true}}", "clock.rx_trailer", "needs source");
	BAD("{" BASE ", 'clock': {'source': 'tsc', 'rx_trailer': 1}}", "clock.rx_trailer",
	    "expected");
	config_load_good("{" BASE ", 'clock': {'source': 'tsc', 'rx_trailer': true}}", &cfg);
	ck_assert(cfg.clock.rx_trailer);
	ls_config_free(&cfg);
	/* send-time trailers: the same timeline, a lead within 1 us .. 1 ms */
	EXACT("{" BASE ", 'clock': {'source': 'nic', 'tx_trailer': true}}",
	      "clock.tx_trailer: needs source \"sim\" or \"tsc\" (its instants are on this "
	      "host's TSC timeline)");
	BAD("{" BASE ", 'clock': {'source': 'tsc', 'tx_lead_ns': 999}}", "clock.tx_lead_ns",
	    "must be between 1000 and 1000000, got 999");
	BAD("{" BASE ", 'clock': {'source': 'tsc', 'tx_lead_ns': 1000001}}", "clock.tx_lead_ns",
	    "got 1000001");
	config_load_good("{" BASE ", 'clock': {'source': 'sim', 'tx_trailer': true, 'tx_lead_ns': 5000}}",
		  &cfg);
	ck_assert(cfg.clock.tx_trailer);
	ck_assert_uint_eq(cfg.clock.tx_lead_ns, 5000);
	ls_config_free(&cfg);
	/* send scheduling on the NIC: its clock, and not with the lab's trailer */
	EXACT("{" BASE ", 'clock': {'source': 'tsc', 'tx_sched': true}}",
	      "clock.tx_sched: needs source \"nic\" (the NIC sends on its own clock)");
	BAD("{" BASE ", 'clock': {'tx_sched': true}}", "clock.tx_sched", "needs source");
	BAD("{" BASE ", 'clock': {'source': 'nic', 'tx_sched': true, 'tx_trailer': true}}",
	    "clock.tx_trailer", "needs source");
	config_load_good("{" BASE ", 'clock': {'source': 'nic', 'tx_sched': true}}", &cfg);
	ck_assert(cfg.clock.tx_sched);
	ck_assert(!cfg.clock.tx_trailer);
	ls_config_free(&cfg);
}
END_TEST

START_TEST(test_bad_address)
{
	EXACT("{" BASE ", 'peers': [{'name': 'a', 'addr': '10.0.0.300'}]}",
	      "peers[0].addr: not an IP address: \"10.0.0.300\"");
	BAD("{" BASE ", 'peers': [{'name': 'a', 'addr': '10.0.0.3/24'}]}",
	    "peers[0].addr", "not an IP address");
	BAD("{" BASE ", 'peers': [{'name': 'a', 'addr': '224.0.0.1'}]}",
	    "peers[0].addr", "must be a unicast address");
	BAD(ONE_PORT("'gateway4': 'fe80::1'"),
	    "ports[0].gateway4", "must be an IPv4 address, got \"fe80::1\"");
	BAD(ONE_PORT("'gateway4': '10.0.1.1'"),
	    "ports[0].gateway4", "not inside ipv4 10.0.0.1/24");
	BAD(ONE_PORT("'gateway4': '10.0.0.1'"),
	    "ports[0].gateway4", "own address");
	BAD(ONE_PORT("'gateway6': 'fe80::1'"),
	    "ports[0].gateway6", "no ipv6");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv6': 'fd00::1/64', 'gateway6': '10.0.0.1'}]}",
	    "ports[0].gateway6", "must be an IPv6 address");
	/* control characters never break the one-line rule */
	BAD("{" BASE ", 'peers': [{'name': 'a', 'addr': '10.0.0.1\\nx'}]}",
	    "peers[0].addr", "not an IP address: \"10.0.0.1?x\"");
}
END_TEST

START_TEST(test_bad_mac)
{
	BAD(ONE_PORT("'mac': 'zz:00:00:00:00:01'"),
	    "ports[0].mac", "not a MAC address (aa:bb:cc:dd:ee:ff): \"zz:00:00:00:00:01\"");
	BAD(ONE_PORT("'mac': '02:00:00:00:00'"),
	    "ports[0].mac", "not a MAC address");
	BAD(ONE_PORT("'mac': '02:00:00:00:0:01'"),
	    "ports[0].mac", "not a MAC address");
	BAD(ONE_PORT("'mac': '01:00:5e:00:00:01'"),
	    "ports[0].mac", "must be a unicast MAC");
	BAD(ONE_PORT("'mac': '00:00:00:00:00:00'"),
	    "ports[0].mac", "all zeros");
}
END_TEST

START_TEST(test_bad_prefix)
{
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv4': '10.0.0.1'}]}",
	    "ports[0].ipv4", "not an IPv4 prefix (a.b.c.d/len): \"10.0.0.1\"");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv4': '10.0.0.1/33'}]}",
	    "ports[0].ipv4", "not an IPv4 prefix");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv4': 'fd00::1/64'}]}",
	    "ports[0].ipv4", "must be an IPv4 prefix");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv6': 'fd00::1/129'}]}",
	    "ports[0].ipv6", "not an IPv6 prefix (x::y/len)");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv6': '10.0.0.1/24'}]}",
	    "ports[0].ipv6", "must be an IPv6 prefix");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x', 'ipv4': '0.0.0.0/0'}]}",
	    "ports[0].ipv4", "must be a unicast address");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'x'}]}", "ports[0]",
	    "needs at least one of ipv4, ipv6");
}
END_TEST

START_TEST(test_duplicate_names)
{
	EXACT("{" BASE ", 'peers': [{'name': 'n2', 'addr': '10.0.0.2'},"
	      " {'name': 'n3', 'addr': '10.0.0.3'}, {'name': 'n4', 'addr': '10.0.0.4'},"
	      " {'name': 'n2', 'addr': '10.0.0.5'}]}",
	      "peers[3].name: duplicate peer name \"n2\" (also peers[0])");
	BAD("{" NODE ", 'ports': [" PORT0 ", {'name': 'p0', 'dev': 'y', 'ipv4': '10.0.1.1/24'}]}",
	    "ports[1].name", "duplicate port name \"p0\" (also ports[0])");
	BAD("{" NODE ", 'ports': [{'name': 'p0', 'dev': 'net_memif0,role=server', 'ipv4': '10.0.0.1/24'},"
	    " {'name': 'p1', 'dev': 'net_memif0,role=client', 'ipv4': '10.0.1.1/24'}]}",
	    "ports[1].dev", "duplicate device \"net_memif0\" (also ports[0])");
}
END_TEST

START_TEST(test_dangling_port)
{
	EXACT("{" BASE ", 'peers': [{'name': 'a', 'addr': '10.0.0.2', 'port': 'p9'}]}",
	      "peers[0].port: port \"p9\" not defined");
}
END_TEST

START_TEST(test_missing_required)
{
	EXACT("{" PORTS "}", "node: required key missing");
	EXACT("{" NODE "}", "ports: required key missing");
	EXACT("{'node': {'id': 1}, " PORTS "}", "node.name: required key missing");
	EXACT("{'node': {'name': 'n1'}, " PORTS "}", "node.id: required key missing");
	EXACT("{" NODE ", 'ports': [{'name': 'p0', 'ipv4': '10.0.0.1/24'}]}",
	      "ports[0].dev: required key missing");
	EXACT("{" NODE ", 'ports': [{'dev': 'x', 'ipv4': '10.0.0.1/24'}]}",
	      "ports[0].name: required key missing");
	EXACT("{" BASE ", 'peers': [{'name': 'a'}]}", "peers[0].addr: required key missing");
	EXACT("{" BASE ", 'peers': [{'addr': '10.0.0.2'}]}",
	      "peers[0].name: required key missing");
}
END_TEST

START_TEST(test_family_mismatch)
{
	struct ls_config cfg;

	EXACT("{" BASE ", 'peers': [{'name': 'a', 'addr': 'fd00::2'}]}",
	      "peers[0].addr: peer address family has no address on port \"p0\"");
	BAD("{" NODE ", 'ports': [" PORT0 ", {'name': 'p1', 'dev': 'y', 'ipv6': 'fd00::1/64'}],"
	    " 'peers': [{'name': 'a', 'addr': '10.0.0.9', 'port': 'p1'}]}",
	    "peers[0].addr", "has no address on port \"p1\"");
	config_load_good("{" NODE ", 'ports': [" PORT0 ", {'name': 'p1', 'dev': 'y', 'ipv6': 'fd00::1/64'}],"
		  " 'peers': [{'name': 'a', 'addr': 'fd00::9', 'port': 'p1'}]}", &cfg);
	ck_assert_uint_eq(cfg.n_peers, 1);
	ls_config_free(&cfg);
}
END_TEST

/* ls_config_parse_peer: the control socket's peer.add. */
START_TEST(test_parse_peer)
{
	struct ls_config cfg;
	struct ls_conf_peer peer;
	char err[LS_ERR_LEN];
	json_t *o;
	int rc;

	config_load_good("{" NODE ", 'ports': [" PORT0 ", {'name': 'p1', 'dev': 'y', 'ipv6': 'fd00::1/64'}]}",
		  &cfg);

	o = json_pack("{s:s, s:s}", "name", "n9", "addr", "10.0.0.9");
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(peer.name, "n9");
	ck_assert_str_eq(peer.port, "p0");
	ck_assert_uint_eq(peer.interval_us, 0);
	/* unset: the probe defaults (-1); 0 is a class of its own */
	ck_assert_int_eq(peer.dscp, -1);
	ck_assert_int_eq(peer.pcp, -1);
	json_decref(o);

	o = json_pack("{s:s, s:s, s:i, s:i}", "name", "n9", "addr", "10.0.0.9", "dscp", 0,
		      "pcp", 7);
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_int_eq(peer.dscp, 0);
	ck_assert_int_eq(peer.pcp, 7);
	json_decref(o);

	o = json_pack("{s:s, s:s, s:i}", "name", "n9", "addr", "10.0.0.9", "dscp", 64);
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args.dscp: must be between 0 and 63, got 64");
	json_decref(o);

	o = json_pack("{s:s, s:s, s:s, s:i}", "name", "n9", "addr", "fd00::9",
		      "port", "p1", "paths", 8);
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(peer.port, "p1");
	ck_assert_uint_eq(peer.paths, 8);
	json_decref(o);

	o = json_pack("{s:s, s:s}", "name", "n9", "addr", "10.0.0.300");
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args.addr: not an IP address: \"10.0.0.300\"");
	ck_assert_uint_eq(peer.name[0], 0);
	json_decref(o);

	o = json_pack("{s:s, s:s, s:s}", "name", "n9", "addr", "fd00::9", "port", "p0");
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args.addr: peer address family has no address on port \"p0\"");
	json_decref(o);

	o = json_pack("{s:s, s:s, s:s}", "name", "n9", "addr", "10.0.0.9", "port", "p7");
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args.port: port \"p7\" not defined");
	json_decref(o);

	o = json_pack("{s:s, s:s, s:b}", "name", "n9", "addr", "10.0.0.9", "force", 1);
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args.force: unknown key");
	json_decref(o);

	o = json_pack("{s:s, s:s, s:s}", "name", "n9", "addr", "10.0.0.9",
		      "interval_us", "fast");
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args.interval_us: expected integer, got string");
	json_decref(o);

	o = json_pack("[]");
	rc = ls_config_parse_peer(o, &cfg, "args", &peer, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "args: expected object, got array");
	json_decref(o);

	ls_config_free(&cfg);
}
END_TEST

START_TEST(test_from_json)
{
	struct ls_config cfg;
	char err[LS_ERR_LEN];
	json_t *root;
	int rc;

	root = json_pack("{s:{s:s, s:i}, s:[{s:s, s:s, s:s}]}", "node", "name", "x",
			 "id", 3, "ports", "name", "p0", "dev", "d", "ipv6", "fd00::1/64");
	rc = ls_config_from_json(root, "inline", &cfg, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(cfg.file, "inline");
	ck_assert_str_eq(cfg.control.socket, "/run/lockstep/x.sock");
	ls_config_free(&cfg);
	json_decref(root);

	root = json_pack("{s:{s:s, s:i}}", "node", "name", "x", "id", 3);
	rc = ls_config_from_json(root, "inline", &cfg, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(err, "inline: ports: required key missing");
	json_decref(root);
}
END_TEST

/* Many peers: the array is allocated, and a late error frees it (valgrind). */
START_TEST(test_many_peers)
{
	char path[512], err[LS_ERR_LEN], *text, *p;
	struct ls_config cfg;
	size_t cap = (LS_MAX_PEERS + 2) * 64 + 256;
	int rc;

	text = malloc(cap);
	ck_assert_ptr_nonnull(text);
	for (int n = LS_MAX_PEERS; n <= LS_MAX_PEERS + 1; n++) {
		p = text + sprintf(text, "{" BASE ", 'peers': [");
		for (int i = 0; i < n; i++)
			p += sprintf(p, "%s{'name': 'x%d', 'addr': '10.0.%d.%d'}",
				     i ? "," : "", i, 1 + i / 250, 1 + i % 250);
		sprintf(p, "]}");
		rc = config_load_text(text, &cfg, err, sizeof(err), path, sizeof(path));
		if (n == LS_MAX_PEERS) {
			ck_assert_msg(rc == 0, "%s", err);
			ck_assert_uint_eq(cfg.n_peers, LS_MAX_PEERS);
			ck_assert_str_eq(cfg.peers[LS_MAX_PEERS - 1].name, "x16383");
			ls_config_free(&cfg);
		} else {
			ck_assert_int_eq(rc, -EINVAL);
			ck_assert_msg(strstr(err, ": peers: must have at most 16384 entries, got 16385"),
				      "%s", err);
		}
	}
	/* an error on the last peer, after the array was filled */
	p = text + sprintf(text, "{" BASE ", 'peers': [");
	for (int i = 0; i < 100; i++)
		p += sprintf(p, "{'name': 'x%d', 'addr': '10.0.0.%d'},", i, i + 2);
	sprintf(p, "{'name': 'x1', 'addr': '10.0.0.1'}]}");
	rc = config_load_text(text, &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_msg(strstr(err, ": peers[100].name: duplicate peer name \"x1\" (also peers[1])"),
		      "%s", err);
	ck_assert(config_all_zero(&cfg));
	free(text);
}
END_TEST

/* Every shipped example must load. */
START_TEST(test_examples)
{
	const char *root = getenv("LS_SOURCE_ROOT");
	char dir[512], path[1024], err[LS_ERR_LEN];
	struct ls_config cfg;
	struct dirent *de;
	int count = 0;
	DIR *d;

	if (root == NULL) {
		printf("test_config: LS_SOURCE_ROOT unset, skipping config/examples check\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/config/examples", root);
	d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		int rc;

		if (len < 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rc = ls_config_load(path, &cfg, err, sizeof(err));
		ck_assert_msg(rc == 0, "%s", err);
		ck_assert_uint_ge(cfg.n_ports, 1);
		ls_config_free(&cfg);
		count++;
	}
	closedir(d);
	ck_assert_int_ge(count, 2);
}
END_TEST


static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_minimal_defaults);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_helpers);
	tcase_add_test(tc, test_syntax_error);
	tcase_add_test(tc, test_empty_file);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_unknown_key);
	tcase_add_test(tc, test_wrong_type);
	tcase_add_test(tc, test_number_accepts_integer);
	tcase_add_test(tc, test_sync_section);
	tcase_add_test(tc, test_out_of_range);
	tcase_add_test(tc, test_enums);
	tcase_add_test(tc, test_bad_address);
	tcase_add_test(tc, test_bad_mac);
	tcase_add_test(tc, test_bad_prefix);
	tcase_add_test(tc, test_duplicate_names);
	tcase_add_test(tc, test_dangling_port);
	tcase_add_test(tc, test_missing_required);
	tcase_add_test(tc, test_family_mismatch);
	tcase_add_test(tc, test_parse_peer);
	tcase_add_test(tc, test_from_json);
	config_bridge_tests(tc);
	tcase_add_test(tc, test_many_peers);
	config_pinglist_tests(tc);
	tcase_add_test(tc, test_examples);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN_TMPDIR(config_suite, "test_config")
