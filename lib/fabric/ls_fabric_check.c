/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checks over the whole fabric, once every switch, link and host parsed on
 * its own: every leaf has a way up when there are spines, every host can
 * reach every other, and every switch has an address of each family the
 * hosts use (it sources the ICMP errors the emulator generates). A fabric
 * that passes is one the router and the emulator never second guess.
 *
 * The first failure is the one reported, as "KEY: REASON" on the node the
 * fix belongs to. Only links between switches matter here: they are the
 * first n_sw_links links, channels 2k (a -> b) and 2k + 1.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ls_fabric_priv.h"

/* The other end of switch link k from u, or u when k does not touch u. */
static uint16_t
link_other(const struct ls_fabric *f, uint16_t k, uint16_t u)
{
	const struct ls_fab_chan *ch = &f->chans[2 * k];

	return ch->from == u ? ch->to : ch->to == u ? ch->from : u;
}

/* A leaf with no way up is a wiring mistake, not a design. */
static int
check_uplinks(struct ls_jsonv *c, const struct ls_fabric *f, uint16_t n_sw_links)
{
	char path[LS_JSONV_PATH_LEN];
	bool spines = false;

	for (uint16_t i = 0; i < f->n_switches; i++)
		spines = spines || strcmp(f->nodes[i].role, "spine") == 0;
	for (uint16_t i = 0; spines && i < f->n_switches; i++) {
		bool up = false;

		if (strcmp(f->nodes[i].role, "leaf") != 0)
			continue;
		for (uint16_t k = 0; k < n_sw_links && !up; k++) {
			uint16_t other = link_other(f, k, i);

			up = other != i && strcmp(f->nodes[other].role, "spine") == 0;
		}
		if (!up)
			return ls_jsonv_fail(c, ls_fab_node_path(f, i, path),
				    "leaf \"%s\" has no link to a spine", f->nodes[i].name);
	}
	return 0;
}

/* Outgoing channel lists, in channel id order (ECMP order). */
static int
fill_out_lists(struct ls_jsonv *c, struct ls_fabric *f)
{
	char path[LS_JSONV_PATH_LEN];

	for (uint16_t k = 0; k < f->n_chans; k++) {
		struct ls_fab_node *n = &f->nodes[f->chans[k].from];

		if (n->kind != LS_FAB_SWITCH)
			continue;
		if (n->n_out >= LS_ARRAY_SIZE(n->out))
			return ls_jsonv_fail(c, ls_fab_node_path(f, f->chans[k].from, path),
				    "more than %zu links (hosts included)",
				    LS_ARRAY_SIZE(n->out));
		n->out[n->n_out++] = k;
	}
	return 0;
}

/* Every host reaches the first one: the switch graph is connected where it
 * matters (a breadth-first search from the first host's leaf). */
static int
check_reach(struct ls_jsonv *c, const struct ls_fabric *f, uint16_t n_sw_links)
{
	uint16_t queue[LS_FAB_MAX_NODES];
	bool seen[LS_FAB_MAX_NODES];
	char path[LS_JSONV_PATH_LEN];
	unsigned int qh = 0, qt = 0;

	memset(seen, 0, sizeof(seen));
	queue[qt++] = f->nodes[f->n_switches].leaf;
	seen[queue[0]] = true;
	while (qh < qt) {
		uint16_t u = queue[qh++];

		for (uint16_t k = 0; k < n_sw_links; k++) {
			uint16_t w = link_other(f, k, u);

			if (w != u && !seen[w]) {
				seen[w] = true;
				queue[qt++] = w;
			}
		}
	}
	for (uint16_t i = f->n_switches; i < f->n_nodes; i++)
		if (!seen[f->nodes[i].leaf])
			return ls_jsonv_fail(c, ls_fab_node_path(f, i, path), "cannot reach %s",
				    f->nodes[f->n_switches].name);
	return 0;
}

/* Switches source ICMP errors in the family of the packet they answer. */
static int
check_icmp_sources(struct ls_jsonv *c, const struct ls_fabric *f)
{
	char path[LS_JSONV_PATH_LEN], hpath[LS_JSONV_PATH_LEN];
	int v4_host = -1, v6_host = -1;

	for (uint16_t i = f->n_switches; i < f->n_nodes; i++) {
		if (v4_host < 0 && f->nodes[i].addr4.family != 0)
			v4_host = i;
		if (v6_host < 0 && f->nodes[i].addr6.family != 0)
			v6_host = i;
	}
	for (uint16_t i = 0; i < f->n_switches; i++) {
		const struct ls_fab_node *n = &f->nodes[i];

		if (v4_host >= 0 && n->addr4.family == 0)
			return ls_jsonv_fail(c, ls_fab_node_path(f, i, path),
				    "needs an \"ipv4\" address: %s (%s) uses IPv4 and switches source ICMP errors",
				    ls_fab_node_path(f, (uint16_t)v4_host, hpath),
				    f->nodes[v4_host].name);
		if (v6_host >= 0 && n->addr6.family == 0)
			return ls_jsonv_fail(c, ls_fab_node_path(f, i, path),
				    "needs an \"ipv6\" address: %s (%s) uses IPv6 and switches source ICMP errors",
				    ls_fab_node_path(f, (uint16_t)v6_host, hpath),
				    f->nodes[v6_host].name);
	}
	return 0;
}

int
ls_fab_check(struct ls_jsonv *c, struct ls_fabric *f, uint16_t n_sw_links)
{
	int rc = check_uplinks(c, f, n_sw_links);

	if (rc == 0)
		rc = fill_out_lists(c, f);
	if (rc == 0)
		rc = check_reach(c, f, n_sw_links);
	if (rc == 0)
		rc = check_icmp_sources(c, f);
	return rc;
}
