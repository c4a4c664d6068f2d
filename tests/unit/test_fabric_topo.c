/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/fabric tests, topology and routing: routes on leaf-spine fabrics have
 * the expected next hops and follow link state after the convergence delay;
 * every class of bad topology is rejected with one "FILE: KEY: REASON" line
 * naming the key; topology files and the shipped examples load.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_fabric.h"

/* -------------------------------------------------------------------------
 * Topology and routing
 */

#define SW3 "'switches': [{'name': 'spine1', 'role': 'spine', 'ipv4': '10.255.0.1'}, " \
	"{'name': 'leaf1', 'role': 'leaf', 'ipv4': '10.255.1.1'}, " \
	"{'name': 'leaf2', 'role': 'leaf', 'ipv4': '10.255.1.2'}]"
#define LK2 "'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'spine1'}]"
#define H1 "{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24'}"
#define H2 "{'name': 'h2', 'leaf': 'leaf2', 'ipv4': '10.2.0.1/24'}"
#define HS2 "'hosts': [" H1 ", " H2 "]"
#define BASE SW3 ", " LK2 ", " HS2

START_TEST(test_topo_basic)
{
	struct ls_fabric *f = fab_ok("{" BASE "}");
	struct ls_addr a;
	char buf[LS_MAC_STRLEN];

	ck_assert_str_eq(f->file, "t.json");
	ck_assert_uint_eq(f->n_switches, 3);
	ck_assert_uint_eq(f->n_nodes, 5);
	ck_assert_uint_eq(f->n_links, 4);
	ck_assert_uint_eq(f->n_chans, 8);
	ck_assert_uint_eq(f->convergence_ns, 0);
	ck_assert_str_eq(f->link_names[0], "leaf1-spine1");
	ck_assert_str_eq(f->link_names[1], "leaf2-spine1");
	ck_assert_str_eq(f->link_names[2], "h1-leaf1");
	ck_assert_str_eq(f->link_names[3], "h2-leaf2");
	ck_assert_int_eq(ls_fab_link_find(f, "h2-leaf2"), 3);
	ck_assert_int_eq(ls_fab_link_find(f, "nope"), -1);
	ck_assert_int_eq(ls_fab_node_find(f, "spine1"), 0);
	ck_assert_int_eq(ls_fab_node_find(f, "h2"), 4);
	ck_assert_int_eq(ls_fab_node_find(f, "nope"), -1);
	/* channels: 2i = a->b (host->leaf), 2i+1 = b->a */
	for (int k = 0; k < f->n_chans; k++) {
		ck_assert_uint_eq(f->chans[k].id, k);
		ck_assert_uint_eq(f->chans[k].link, k / 2);
		ck_assert(f->chans[k].up && f->chans[k].route_up);
		ck_assert_uint_eq(f->chans[k].route_at_ns, 0);
		ck_assert_uint_eq(f->chans[k].p.delay_ns, 1000);
		ck_assert_uint_eq(f->chans[k].p.rate_bps, G10);
		ck_assert_uint_eq(f->chans[k].p.buffer_bytes, 1048576);
		ck_assert_uint_eq(f->chans[k].p.ecn_bytes, 131072);
		ck_assert_uint_eq(f->chans[k].p.mtu, 9000);
		ck_assert(f->chans[k].p.loss == 0);
	}
	ck_assert_uint_eq(f->chans[0].from, 1);
	ck_assert_uint_eq(f->chans[0].to, 0);
	ck_assert_uint_eq(f->chans[1].from, 0);
	ck_assert_uint_eq(f->nodes[3].kind, LS_FAB_HOST);
	ck_assert_uint_eq(f->nodes[3].leaf, 1);
	ck_assert_uint_eq(f->nodes[3].up_chan, 4);
	ck_assert_uint_eq(f->nodes[3].down_chan, 5);
	ck_assert_uint_eq(f->chans[4].from, 3);
	ck_assert_uint_eq(f->chans[4].to, 1);
	ck_assert_uint_eq(f->nodes[3].plen4, 24);
	ck_assert(!f->nodes[3].mac_known);
	ck_assert_str_eq(f->nodes[3].dev, "");
	/* outgoing lists in channel order */
	ck_assert_uint_eq(f->nodes[0].n_out, 2);
	ck_assert_uint_eq(f->nodes[0].out[0], 1);
	ck_assert_uint_eq(f->nodes[0].out[1], 3);
	ck_assert_uint_eq(f->nodes[1].n_out, 2);
	ck_assert_uint_eq(f->nodes[1].out[0], 0);
	ck_assert_uint_eq(f->nodes[1].out[1], 5);
	ck_assert_str_eq(ls_mac_fmt(&f->nodes[1].mac, buf, sizeof(buf)), "02:fa:00:00:00:02");
	ck_assert_str_eq(f->nodes[0].role, "spine");
	/* address lookup: hosts only */
	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), 4);
	ck_assert_int_eq(ls_addr_parse("10.2.0.2", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), -1);
	ck_assert_int_eq(ls_addr_parse("10.255.0.1", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), -1);
	check_clos_routes(f);
	ls_fab_free(f);
	ls_fab_free(NULL);
}
END_TEST

START_TEST(test_topo_params)
{
	struct ls_fabric *f = fab_ok("{'defaults': {'link': {'delay_ns': 2000, 'mtu': 1500}, "
		"'host_link': {'rate_bps': 1e11, 'buffer_bytes': 65536}}, 'convergence_ms': 5, "
		"'switches': [{'name': 's', 'role': 'spine', 'ipv6': 'fd00:ff::1', 'seed': 77, "
		"'mac': '02:00:00:00:00:aa'}, "
		"{'name': 'l1', 'role': 'leaf', 'ipv6': 'fd00:ff::2'}, "
		"{'name': 'l2', 'role': 'leaf', 'ipv6': 'fd00:ff::3'}], "
		"'links': [{'name': 'up1', 'a': 'l1', 'b': 's', 'delay_ns': 5000, "
		"'ab': {'rate_bps': 1000000000}, 'ba': {'loss': 0.5}}, {'a': 'l2', 'b': 's'}], "
		"'hosts': [{'name': 'x', 'leaf': 'l1', 'ipv6': 'fd00:1::5/64', 'mac': '02:00:00:00:00:01', "
		"'dev': 'net_memif0,id=1', 'up': {'delay_ns': 7}, 'down': {'ecn_bytes': 0}}, "
		"{'name': 'y', 'leaf': 'l2', 'ipv6': 'fd00:2::5/64', 'mtu': 9000, 'buffer_bytes': 9000}]}");
	struct ls_addr a;

	ck_assert_uint_eq(f->convergence_ns, 5000000);
	ck_assert_uint_eq(f->nodes[0].seed, 77);
	ck_assert_uint_eq(f->nodes[0].mac.b[5], 0xaa);
	ck_assert_str_eq(f->link_names[0], "up1");
	ck_assert_str_eq(f->link_names[1], "l2-s");
	ck_assert_uint_eq(f->chans[0].p.delay_ns, 5000);
	ck_assert_uint_eq(f->chans[0].p.rate_bps, 1000000000);
	ck_assert(f->chans[0].p.loss == 0);
	ck_assert_uint_eq(f->chans[1].p.delay_ns, 5000);
	ck_assert_uint_eq(f->chans[1].p.rate_bps, G10);
	ck_assert(f->chans[1].p.loss == 0.5);
	ck_assert_uint_eq(f->chans[1].p.mtu, 1500);
	ck_assert_uint_eq(f->chans[2].p.delay_ns, 2000);
	/* host links: built-in <- defaults.link <- defaults.host_link <- host <- up/down */
	ck_assert_uint_eq(f->chans[4].p.delay_ns, 7);
	ck_assert_uint_eq(f->chans[4].p.rate_bps, 100000000000ULL);
	ck_assert_uint_eq(f->chans[4].p.buffer_bytes, 65536);
	ck_assert_uint_eq(f->chans[4].p.mtu, 1500);
	ck_assert_uint_eq(f->chans[4].p.ecn_bytes, 131072);
	ck_assert_uint_eq(f->chans[5].p.delay_ns, 2000);
	ck_assert_uint_eq(f->chans[5].p.ecn_bytes, 0);
	ck_assert_uint_eq(f->chans[6].p.mtu, 9000);
	ck_assert_uint_eq(f->chans[6].p.buffer_bytes, 9000);
	ck_assert(f->nodes[3].mac_known);
	ck_assert_str_eq(f->nodes[3].dev, "net_memif0,id=1");
	ck_assert_uint_eq(f->nodes[3].plen6, 64);
	ck_assert_uint_eq(f->nodes[3].addr4.family, 0);
	ck_assert_int_eq(ls_addr_parse("fd00:2::5", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), 4);
	ls_fab_free(f);
}
END_TEST

/* Link down/up, both directions, immediate convergence. */
static void
check_link_down(struct ls_fabric *f)
{
	int leaf1 = ls_fab_node_find(f, "leaf1"), spine1 = ls_fab_node_find(f, "spine1");
	int l = ls_fab_link_find(f, "leaf1-spine1");
	int spines = 0, leaves = 0;
	uint16_t up = (uint16_t)(2 * l), down = (uint16_t)(2 * l + 1);

	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(f->chans[up].from, leaf1);
	ck_assert_int_eq(f->chans[up].to, spine1);
	for (int i = 0; i < f->n_switches; i++) {
		spines += is_role(f, i, "spine");
		leaves += is_role(f, i, "leaf");
	}
	f->convergence_ns = 0;
	ls_fab_link_set_up(f, (uint16_t)l, false, 1000);
	ck_assert(!f->chans[up].up && !f->chans[up].route_up);
	ck_assert(!f->chans[down].up && !f->chans[down].route_up);
	for (int h = f->n_switches; h < f->n_nodes; h++) {
		bool local = f->nodes[h].leaf == leaf1;

		for (int s = 0; s < f->n_switches; s++) {
			const struct ls_fab_route *r = route(f, s, h);

			ck_assert(!route_has(r, up) && !route_has(r, down));
			if (s == leaf1 && !local)
				ck_assert_int_eq(r->n, spines - 1);
			else if (is_role(f, s, "leaf") && local && s != leaf1)
				/* remote leaves no longer go through spine1 */
				ck_assert_int_eq(r->n, spines - 1);
			else if (s == spine1 && local)
				/* spine1 detours through every other leaf */
				ck_assert_int_eq(r->n, leaves - 1);
		}
	}
	ls_fab_link_set_up(f, (uint16_t)l, true, 2000);
	check_clos_routes(f);

	/* one direction only: leaf1 stops using it, spine1 still reaches leaf1 */
	ls_fab_chan_set_up(f, up, false, 3000);
	for (int h = f->n_switches; h < f->n_nodes; h++) {
		if (f->nodes[h].leaf != leaf1) {
			ck_assert_int_eq(route(f, leaf1, h)->n, spines - 1);
		} else {
			ck_assert_int_eq(route(f, spine1, h)->n, 1);
			ck_assert_int_eq(route(f, spine1, h)->chan[0], down);
		}
	}
	ls_fab_chan_set_up(f, up, true, 4000);
	check_clos_routes(f);
}

/* Convergence delay: routing keeps the dead link until tick(now + delay). */
static void
check_convergence(struct ls_fabric *f)
{
	int leaf1 = ls_fab_node_find(f, "leaf1");
	int l = ls_fab_link_find(f, "leaf1-spine1");
	uint16_t up = (uint16_t)(2 * l);
	const uint64_t t0 = 1000000000ULL, conv = 5000000ULL;
	int remote = -1;

	for (int h = f->n_switches; h < f->n_nodes && remote < 0; h++)
		if (f->nodes[h].leaf != leaf1)
			remote = h;
	ck_assert_int_ge(remote, 0);
	f->convergence_ns = conv;
	ck_assert(!ls_fab_tick(f, t0)); /* nothing pending */
	ls_fab_chan_set_up(f, up, false, t0);
	ck_assert(!f->chans[up].up);
	ck_assert(f->chans[up].route_up);
	ck_assert_uint_eq(f->chans[up].route_at_ns, t0 + conv);
	ck_assert(route_has(route(f, leaf1, remote), up));
	/* the stale route still hashes flows onto the dead channel: they drop */
	ck_assert_int_eq(ls_fab_chan_enqueue(&f->chans[up], t0 + 1, 100, false, NULL, 0, NULL),
			 LS_FAB_DROP_DOWN);
	ck_assert(!ls_fab_tick(f, t0 + conv - 1));
	ck_assert(route_has(route(f, leaf1, remote), up));
	ck_assert(ls_fab_tick(f, t0 + conv));
	ck_assert(!f->chans[up].route_up);
	ck_assert_uint_eq(f->chans[up].route_at_ns, 0);
	ck_assert(!route_has(route(f, leaf1, remote), up));
	ck_assert(!ls_fab_tick(f, t0 + 2 * conv));

	/* back up: routing ignores it until the delay passes */
	ls_fab_chan_set_up(f, up, true, t0 + 10 * conv);
	ck_assert(f->chans[up].up);
	ck_assert(!route_has(route(f, leaf1, remote), up));
	ck_assert(!ls_fab_tick(f, t0 + 11 * conv - 1));
	ck_assert(ls_fab_tick(f, t0 + 11 * conv));
	check_clos_routes(f);

	/* a flap shorter than the delay is never seen by routing */
	ls_fab_chan_set_up(f, up, false, t0 + 20 * conv);
	ls_fab_chan_set_up(f, up, true, t0 + 20 * conv + 1000);
	ck_assert(!ls_fab_tick(f, t0 + 22 * conv));
	check_clos_routes(f);

	/* two pending changes at different times: each applies at its time */
	ls_fab_chan_set_up(f, up, false, t0 + 30 * conv);
	ls_fab_chan_set_up(f, (uint16_t)(up + 1), false, t0 + 30 * conv + 1000);
	ck_assert(ls_fab_tick(f, t0 + 31 * conv));
	ck_assert(!f->chans[up].route_up && f->chans[up + 1].route_up);
	ck_assert(!ls_fab_tick(f, t0 + 31 * conv + 999));
	ck_assert(ls_fab_tick(f, t0 + 31 * conv + 1000));
	ck_assert(!f->chans[up + 1].route_up);
	ls_fab_link_set_up(f, (uint16_t)l, true, t0 + 40 * conv);
	ck_assert(ls_fab_tick(f, t0 + 41 * conv));
	check_clos_routes(f);
}

START_TEST(test_routes_clos)
{
	static const int sizes[][3] = { { 2, 2, 2 }, { 4, 4, 4 }, { 3, 5, 1 }, { 1, 2, 3 } };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ls_fabric *f = clos(sizes[i][0], sizes[i][1], sizes[i][2], 0);

		ck_assert_uint_eq(f->n_nodes,
				  sizes[i][0] + sizes[i][1] * (1 + sizes[i][2]));
		check_clos_routes(f);
		if (sizes[i][0] > 1) {
			check_link_down(f);
			check_convergence(f);
		}
		ls_fab_free(f);
	}
}
END_TEST

START_TEST(test_routes_host_down)
{
	struct ls_fabric *f = clos(2, 2, 2, 0);
	int h3 = ls_fab_node_find(f, "h3");

	ls_fab_chan_set_up(f, f->nodes[h3].down_chan, false, 0);
	for (int s = 0; s < f->n_nodes; s++)
		ck_assert_uint_eq(route(f, s, h3)->n, 0);
	ck_assert_int_eq(ls_fab_next_hop(f, 0, (uint16_t)h3, 0), -ENETUNREACH);
	/* the host's up channel is not a route: nothing else changes */
	ls_fab_chan_set_up(f, f->nodes[h3].down_chan, true, 0);
	ls_fab_chan_set_up(f, f->nodes[h3].up_chan, false, 0);
	check_clos_routes(f);
	ls_fab_free(f);
}
END_TEST

/* Parallel links and a longer path: ECMP over both, leaf-to-leaf link used. */
START_TEST(test_routes_graph)
{
	struct ls_fabric *f = fab_ok("{'switches': ["
		"{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}, "
		"{'name': 'b', 'role': 'leaf', 'ipv4': '10.255.0.2'}, "
		"{'name': 'c', 'role': 'leaf', 'ipv4': '10.255.0.3'}], "
		"'links': [{'name': 'ab1', 'a': 'a', 'b': 'b'}, {'name': 'ab2', 'a': 'a', 'b': 'b'}, "
		"{'a': 'b', 'b': 'c'}], "
		"'hosts': [{'name': 'ha', 'leaf': 'a', 'ipv4': '10.1.0.1/24'}, "
		"{'name': 'hc', 'leaf': 'c', 'ipv4': '10.3.0.1/24'}]}");
	int ha = ls_fab_node_find(f, "ha"), hc = ls_fab_node_find(f, "hc");

	ck_assert_uint_eq(route(f, 0, hc)->n, 2);
	ck_assert_uint_eq(route(f, 0, hc)->chan[0], 0);
	ck_assert_uint_eq(route(f, 0, hc)->chan[1], 2);
	ck_assert_uint_eq(route(f, 1, hc)->n, 1);
	ck_assert_uint_eq(route(f, 1, hc)->chan[0], 4);
	ck_assert_uint_eq(route(f, 2, ha)->n, 1);
	ck_assert_uint_eq(route(f, 1, ha)->n, 2);
	ck_assert_uint_eq(route(f, 1, ha)->chan[0], 1);
	ck_assert_uint_eq(route(f, 1, ha)->chan[1], 3);
	/* cut b-c: hc unreachable from a and b, reachable from c */
	ls_fab_link_set_up(f, 2, false, 0);
	ck_assert_uint_eq(route(f, 0, hc)->n, 0);
	ck_assert_uint_eq(route(f, 1, hc)->n, 0);
	ck_assert_uint_eq(route(f, 2, hc)->n, 1);
	ls_fab_free(f);
}
END_TEST

/* -------------------------------------------------------------------------
 * Validation: one case per class, the key path must be in the message
 */

START_TEST(test_bad_keys_types)
{
	BAD("{" BASE ", 'bogus': 1}", "bogus", "unknown key");
	BAD("{'defaults': {'lnk': {}}, " BASE "}", "defaults.lnk", "unknown key");
	BAD("{'defaults': {'link': {'dealy_ns': 1}}, " BASE "}", "defaults.link.dealy_ns",
	    "unknown key");
	BAD("{'switches': [{'name': 'l', 'role': 'leaf', 'colour': 'red'}], " HS2 "}",
	    "switches[0].colour", "unknown key");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ab': {'name': 'x'}}], " HS2 "}",
	    "links[0].ab.name", "unknown key");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24', 'gateway': '10.2.0.254'}]}", "hosts[1].gateway", "unknown key");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24', 'up': {'a': 1}}]}", "hosts[1].up.a", "unknown key");
	/* wrong types */
	BAD("{'switches': {}, " HS2 "}", "switches", "expected array, got object");
	BAD("{'switches': [{'name': 5, 'role': 'leaf'}], " HS2 "}", "switches[0].name",
	    "expected string, got integer");
	BAD("{'switches': ['leaf1'], " HS2 "}", "switches[0]", "expected object, got string");
	BAD("{'convergence_ms': '5', " BASE "}", "convergence_ms", "expected integer");
	BAD("{'defaults': {'link': {'rate_bps': '10G'}}, " BASE "}", "defaults.link.rate_bps",
	    "expected integer, got string");
	BAD("{'defaults': {'link': {'loss': true}}, " BASE "}", "defaults.link.loss",
	    "expected number, got boolean");
	BAD("{'defaults': {'link': {'mtu': 1500.5}}, " BASE "}", "defaults.link.mtu",
	    "whole number");
	BAD("{'switches': [{'name': 's', 'role': 'leaf', 'ipv4': '10.0.0.1', 'seed': -1}], "
	    "'hosts': [{'name': 'h', 'leaf': 's', 'ipv4': '10.1.0.1/24'}]}", "switches[0].seed",
	    "between 0 and");
	/* required keys, bad values */
	BAD("{" SW3 ", " LK2 "}", "hosts", "required key missing");
	BAD("{'switches': [], " HS2 "}", "switches", "must not be empty");
	BAD("{'switches': [{'role': 'leaf'}], " HS2 "}", "switches[0].name",
	    "required key missing");
	BAD("{'switches': [{'name': 'l 1', 'role': 'leaf'}], " HS2 "}", "switches[0].name",
	    "invalid character");
	BAD("{'switches': [{'name': 'l', 'role': 'core'}], " HS2 "}", "switches[0].role",
	    "must be one of");
	BAD("{'switches': [{'name': 'l', 'role': 'leaf', 'ipv4': 'fd00::1'}], " HS2 "}",
	    "switches[0].ipv4", "must be an IPv4 address");
	BAD("{'switches': [{'name': 'l', 'role': 'leaf', 'mac': '01:00:00:00:00:01'}], " HS2 "}",
	    "switches[0].mac", "unicast MAC");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1'}]}",
	    "hosts[0].ipv4", "not an IPv4 prefix");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1'}]}", "hosts[0]",
	    "needs an address");
}
END_TEST

START_TEST(test_bad_ranges)
{
	BAD("{'defaults': {'link': {'rate_bps': 0}}, " BASE "}", "defaults.link.rate_bps",
	    "must be between 1 and");
	BAD("{'defaults': {'host_link': {'delay_ns': 10000000001}}, " BASE "}",
	    "defaults.host_link.delay_ns", "must be between 0 and 10000000000");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'loss': 1.5}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].loss", "between 0 and 1");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ba': {'loss': -0.1}}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].ba.loss", "between 0 and 1");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24', "
	    "'mtu': 67}]}", "hosts[0].mtu", "between 68 and 65535");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24', "
	    "'mtu': 65536}]}", "hosts[0].mtu", "between 68 and 65535");
	BAD("{'convergence_ms': -1, " BASE "}", "convergence_ms", "between 0 and");
	/* buffer < mtu: reported where the deciding key was set */
	BAD("{'defaults': {'link': {'buffer_bytes': 4000}}, " BASE "}", "defaults.link",
	    "buffer_bytes (4000) must be at least the mtu (9000)");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ab': {'buffer_bytes': 1000}}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].ab",
	    "must be at least the mtu");
	BAD("{'defaults': {'link': {'buffer_bytes': 9000}}, " SW3 ", 'links': "
	    "[{'a': 'leaf1', 'b': 'spine1', 'mtu': 9001}, {'a': 'leaf2', 'b': 'spine1'}], " HS2 "}",
	    "links[0]", "must be at least the mtu (9001)");
	/* host link: buffer from defaults.host_link, mtu from the host */
	BAD("{'defaults': {'host_link': {'buffer_bytes': 1500, 'mtu': 1500}}, " SW3 ", " LK2 ", "
	    "'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24', "
	    "'down': {'mtu': 1600}}]}", "hosts[0].down", "at least the mtu (1600)");
	/* RED-ECN: K_max above K_min, which must be set */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ecn_bytes': 30000, "
	    "'ecn_max_bytes': 30000}, {'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0]",
	    "ecn_max_bytes (30000) must be above ecn_bytes (30000)");
	BAD("{'defaults': {'link': {'ecn_bytes': 0, 'ecn_max_bytes': 9000}}, " BASE "}",
	    "defaults.link", "which must not be 0");
	/* named where the deciding key was set: the direction, not the link */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ecn_max_bytes': 200000, "
	    "'ba': {'ecn_bytes': 200000}}, {'a': 'leaf2', 'b': 'spine1'}], " HS2 "}",
	    "links[0].ba", "ecn_max_bytes (200000) must be above ecn_bytes (200000)");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ecn_pmax': 1.5}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].ecn_pmax", "between 0 and 1");
	/* defaults are checked on their own: they apply to links that set nothing */
	BAD("{'defaults': {'host_link': {'buffer_bytes': 1500}}, " BASE "}", "defaults.host_link",
	    "buffer_bytes (1500) must be at least the mtu (9000)");
}
END_TEST

START_TEST(test_bad_duplicates)
{
	BAD("{'switches': [{'name': 'x', 'role': 'leaf', 'ipv4': '10.255.0.1'}, "
	    "{'name': 'x', 'role': 'leaf', 'ipv4': '10.255.0.2'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'x', 'ipv4': '10.1.0.1/24'}]}",
	    "switches[1].name", "duplicate name \"x\" (also switches[0])");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'leaf2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24'}]}", "hosts[1].name", "duplicate name \"leaf2\" (also switches[2])");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h1', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24'}]}", "hosts[1].name", "duplicate name \"h1\" (also hosts[0])");
	BAD("{" SW3 ", 'links': [{'name': 'u', 'a': 'leaf1', 'b': 'spine1'}, "
	    "{'name': 'u', 'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[1].name",
	    "duplicate link name \"u\" (also links[0])");
	/* a default name that collides: parallel links need names */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf1', 'b': 'spine1'}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[1]",
	    "duplicate link name \"leaf1-spine1\"");
	/* a host link's name taken by a switch link */
	BAD("{" SW3 ", 'links': [{'name': 'h1-leaf1', 'a': 'leaf1', 'b': 'spine1'}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "hosts[0]",
	    "duplicate link name \"h1-leaf1\" (also links[0])");
	/* addresses: across switches and hosts, both families */
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.255.1.1/16'}]}", "hosts[1].ipv4", "address 10.255.1.1 already used by \"leaf1\"");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.1.0.1/24'}]}", "hosts[1].ipv4", "already used by \"h1\"");
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv6': 'fd00::1'}, "
	    "{'name': 'b', 'role': 'leaf', 'ipv6': 'fd00::1'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'a', 'ipv6': 'fd00:1::1/64'}]}", "switches[1].ipv6",
	    "already used by \"a\"");
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'a', 'ipv4': '10.1.0.1/24', "
	    "'mac': '02:fa:00:00:00:01'}]}", "hosts[0].mac", "already used by \"a\"");
}
END_TEST

START_TEST(test_bad_structure)
{
	/* dangling link end, link to a host, link to itself */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'spine1'}, "
	    "{'name': 'l1s1b', 'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'spine9'}], " HS2 "}",
	    "links[3].b", "no switch named \"spine9\"");
	BAD("{" SW3 ", 'links': [{'a': 'h1', 'b': 'spine1'}], " HS2 "}", "links[0].a",
	    "no switch named \"h1\"");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'leaf1'}], " HS2 "}", "links[0].b",
	    "a link to itself");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1'}], " HS2 "}", "links[0].b", "required key missing");
	/* host on a spine, on nothing */
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'spine1', "
	    "'ipv4': '10.1.0.1/24'}]}", "hosts[0].leaf", "\"spine1\" is a spine");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf7', "
	    "'ipv4': '10.1.0.1/24'}]}", "hosts[0].leaf", "no switch named \"leaf7\"");
	/* a leaf without uplink when there are spines */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}], 'hosts': [" H1 "]}",
	    "switches[2]", "leaf \"leaf2\" has no link to a spine");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'leaf1'}], "
	    "'hosts': [" H1 "]}", "switches[2]", "no link to a spine");
	/* hosts that cannot reach each other (no spines: two islands) */
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}, "
	    "{'name': 'b', 'role': 'leaf', 'ipv4': '10.255.0.2'}, "
	    "{'name': 'c', 'role': 'leaf', 'ipv4': '10.255.0.3'}], "
	    "'links': [{'a': 'a', 'b': 'b'}], "
	    "'hosts': [{'name': 'h1', 'leaf': 'a', 'ipv4': '10.1.0.1/24'}, "
	    "{'name': 'h2', 'leaf': 'b', 'ipv4': '10.2.0.1/24'}, "
	    "{'name': 'h3', 'leaf': 'c', 'ipv4': '10.3.0.1/24'}]}", "hosts[2]", "cannot reach h1");
	/* host address not a host of its own prefix */
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', "
	    "'ipv4': '10.1.0.0/24'}]}", "hosts[0].ipv4", "network address");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', "
	    "'ipv4': '10.1.0.255/24'}]}", "hosts[0].ipv4", "broadcast address");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', "
	    "'ipv4': '10.1.0.1/24', 'ipv6': 'fd00:1::/64'}]}", "hosts[0].ipv6", "network address");
	/* a switch without an address of a family the hosts use */
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24', 'ipv6': 'fd00:2::1/64'}]}", "switches[0]",
	    "needs an \"ipv6\" address: hosts[1] (h2) uses IPv6");
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv6': 'fd00::1'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'a', 'ipv4': '10.1.0.1/24'}]}", "switches[0]",
	    "needs an \"ipv4\" address");
}
END_TEST

START_TEST(test_good_edge_cases)
{
	struct ls_fabric *f;

	/* a single leaf, no links: fine; /31 and /32 have no network address */
	f = fab_ok("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}], "
		   "'hosts': [{'name': 'h1', 'leaf': 'a', 'ipv4': '10.1.0.0/31'}, "
		   "{'name': 'h2', 'leaf': 'a', 'ipv4': '10.1.0.1/31'}, "
		   "{'name': 'h3', 'leaf': 'a', 'ipv4': '10.1.0.9/32'}]}");
	ck_assert_uint_eq(f->n_links, 3);
	ck_assert_uint_eq(route(f, 0, 2)->n, 1);
	ck_assert_uint_eq(route(f, 0, 2)->chan[0], f->nodes[2].down_chan);
	ls_fab_free(f);
}
END_TEST

/* -------------------------------------------------------------------------
 * Files
 */

START_TEST(test_load_files)
{
	char path[512], err[ERR_LEN], want[700];
	struct ls_fabric *f = NULL;
	int rc;

	ls_test_write_json("good.json", "{" BASE "}", path, sizeof(path));
	rc = ls_fab_load(path, &f, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(f->file, path);
	ls_fab_free(f);

	ls_test_write_json("syntax.json", "{\n  'switches': [\n    {'name': 'a',}\n  ]\n}\n", path,
		   sizeof(path));
	rc = ls_fab_load(path, &f, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(f);
	snprintf(want, sizeof(want), "%s: line 3 column ", path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "\"%s\"", err);

	ls_test_write_json("dup.json", "{'hosts': [], 'hosts': []}", path, sizeof(path));
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "duplicate") != NULL, "\"%s\"", err);

	ls_test_write_json("empty.json", "", path, sizeof(path));
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "empty file") != NULL, "\"%s\"", err);

	ls_test_write_json("bad.json", "{" BASE ", 'x': 1}", path, sizeof(path));
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: x: unknown key", path);
	ck_assert_str_eq(err, want);

	snprintf(path, sizeof(path), "%s/missing.json", ls_test_tmpdir);
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(ls_fab_load(ls_test_tmpdir, &f, err, sizeof(err)), -EISDIR);
	unlink(path);
}
END_TEST

START_TEST(test_example_files)
{
	const char *root = getenv("LS_SOURCE_ROOT");
	char dir[512], path[1024], err[ERR_LEN];
	struct dirent *de;
	int count = 0;
	DIR *d;

	if (root == NULL) {
		printf("test_fabric: LS_SOURCE_ROOT unset, skipping config/fabric check\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/config/fabric", root);
	d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		struct ls_fabric *f = NULL;
		int rc, S = 0, L = 0, H;

		if (len < 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rc = ls_fab_load(path, &f, err, sizeof(err));
		ck_assert_msg(rc == 0, "%s", err);
		for (int i = 0; i < f->n_switches; i++) {
			S += is_role(f, i, "spine");
			L += is_role(f, i, "leaf");
		}
		H = (f->n_nodes - f->n_switches) / L;
		/* the name says spines x leaves x hosts per leaf */
		snprintf(path, sizeof(path), "%dx%dx%d.json", S, L, H);
		ck_assert_str_eq(de->d_name, path);
		check_clos_routes(f);
		check_link_down(f);
		check_convergence(f);
		ls_fab_free(f);
		count++;
	}
	closedir(d);
	ck_assert_int_ge(count, 2);
}
END_TEST

void
fabric_topo_tcases(Suite *s)
{
	TCase *tc;

	tc = tcase_create("topology");
	tcase_add_test(tc, test_topo_basic);
	tcase_add_test(tc, test_topo_params);
	tcase_add_test(tc, test_routes_clos);
	tcase_add_test(tc, test_routes_host_down);
	tcase_add_test(tc, test_routes_graph);
	tcase_add_test(tc, test_good_edge_cases);
	suite_add_tcase(s, tc);

	tc = tcase_create("validation");
	tcase_add_test(tc, test_bad_keys_types);
	tcase_add_test(tc, test_bad_ranges);
	tcase_add_test(tc, test_bad_duplicates);
	tcase_add_test(tc, test_bad_structure);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, test_load_files);
	tcase_add_test(tc, test_example_files);
	suite_add_tcase(s, tc);
}
