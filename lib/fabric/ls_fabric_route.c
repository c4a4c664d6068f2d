/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fabric routing: shortest-path ECMP routes to every host, the seeded flow
 * hash that picks among them, and the routing view of link state with its
 * convergence delay.
 *
 * Why it is built this way:
 *  - Routes are recomputed whole, not patched: a fabric has at most a few
 *    hundred hosts and a few thousand channels, one breadth-first search per
 *    host is microseconds to milliseconds, and it only happens when routing
 *    believes a link changed. Whole recomputation cannot drift from what the
 *    file and the link states say.
 *  - The search runs backwards from the host over channels routing believes
 *    up, so distances are "hops to the host" and a switch's next hops are
 *    simply its outgoing channels to a neighbour one hop closer. Hosts are
 *    never transit: only a host's own down channel leads to it, and nothing
 *    is routed out of a host.
 *  - Next hops are kept in channel id order (file order), so the same hash
 *    picks the same channel on every run.
 *  - The flow hash is jhash (inline, no EAL) over the 5-tuple and flow label
 *    seeded per switch, followed by a 32-bit avalanche finalizer: jhash's
 *    low bits are what "modulo 2" sees, and the finalizer makes every output
 *    bit depend on every input bit so small next-hop counts split evenly and
 *    two switches with different seeds choose independently (no ECMP
 *    polarization), as a well configured real fabric does.
 *  - The routing view changes through ls_fab_tick, which the emulator calls
 *    often; the fabric caches the earliest pending time so that the common
 *    case (nothing pending) is one comparison.
 */
#include <errno.h>
#include <string.h>

#include <rte_jhash.h>

#include "ls_fabric.h"

void
ls_fab_routes_compute(struct ls_fabric *f)
{
	/* incoming switch->switch channels per node, routing view only (CSR) */
	uint16_t in_start[LS_FAB_MAX_NODES + 1], in_list[LS_FAB_MAX_CHANS];
	uint16_t queue[LS_FAB_MAX_NODES];
	int16_t dist[LS_FAB_MAX_NODES];
	uint16_t nn = f->n_nodes;

	memset(in_start, 0, sizeof(in_start));
	for (uint16_t k = 0; k < f->n_chans; k++) {
		const struct ls_fab_chan *c = &f->chans[k];

		if (c->route_up && f->nodes[c->from].kind == LS_FAB_SWITCH &&
		    f->nodes[c->to].kind == LS_FAB_SWITCH)
			in_start[c->to + 1]++;
	}
	for (uint16_t i = 0; i < nn; i++)
		in_start[i + 1] = (uint16_t)(in_start[i + 1] + in_start[i]);
	{
		uint16_t fill[LS_FAB_MAX_NODES];

		memcpy(fill, in_start, nn * sizeof(fill[0]));
		for (uint16_t k = 0; k < f->n_chans; k++) {
			const struct ls_fab_chan *c = &f->chans[k];

			if (c->route_up && f->nodes[c->from].kind == LS_FAB_SWITCH &&
			    f->nodes[c->to].kind == LS_FAB_SWITCH)
				in_list[fill[c->to]++] = k;
		}
	}

	memset(f->routes, 0, (size_t)nn * nn * sizeof(*f->routes));
	for (uint16_t h = f->n_switches; h < nn; h++) {
		const struct ls_fab_node *host = &f->nodes[h];
		unsigned int qh = 0, qt = 0;
		uint16_t leaf = host->leaf;

		/* the leaf's link to the host is the only way in */
		if (!f->chans[host->down_chan].route_up)
			continue;
		for (uint16_t i = 0; i < nn; i++)
			dist[i] = -1;
		dist[h] = 0;
		dist[leaf] = 1;
		queue[qt++] = leaf;
		while (qh < qt) {
			uint16_t v = queue[qh++];

			for (uint16_t e = in_start[v]; e < in_start[v + 1]; e++) {
				uint16_t u = f->chans[in_list[e]].from;

				if (dist[u] < 0) {
					dist[u] = (int16_t)(dist[v] + 1);
					queue[qt++] = u;
				}
			}
		}
		for (uint16_t s = 0; s < f->n_switches; s++) {
			struct ls_fab_route *r = &f->routes[(size_t)s * nn + h];
			const struct ls_fab_node *sw = &f->nodes[s];

			if (dist[s] < 0)
				continue;
			if (s == leaf) {
				r->n = 1;
				r->chan[0] = host->down_chan;
				continue;
			}
			for (uint16_t o = 0; o < sw->n_out && r->n < LS_FAB_MAX_ECMP; o++) {
				const struct ls_fab_chan *c = &f->chans[sw->out[o]];

				if (c->route_up && f->nodes[c->to].kind == LS_FAB_SWITCH &&
				    dist[c->to] == dist[s] - 1)
					r->chan[r->n++] = c->id;
			}
		}
	}
}

/* 32-bit avalanche finalizer: every output bit depends on every input bit. */
static inline uint32_t
mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	return x;
}

static unsigned int
put_addr(uint32_t *w, const struct ls_addr *a)
{
	unsigned int n = a == NULL ? 0 : a->family == LS_AF_INET ? 1 :
			 a->family == LS_AF_INET6 ? 4 : 0;

	if (n > 0)
		memcpy(w, a->a, n * 4);
	return n;
}

uint32_t
ls_fab_flow_hash(uint32_t seed, const struct ls_addr *src, const struct ls_addr *dst,
		 uint8_t proto, uint16_t sport, uint16_t dport, uint32_t flow_label)
{
	uint32_t w[12];
	unsigned int n = 0;

	n += put_addr(w + n, src);
	n += put_addr(w + n, dst);
	w[n++] = (uint32_t)proto << 24 | (flow_label & 0xfffff);
	w[n++] = (uint32_t)sport << 16 | dport;
	if (n & 1)
		w[n++] = 0;
	return ls_fab_hash_words(seed, w, n);
}

int
ls_fab_next_hop(const struct ls_fabric *f, uint16_t sw, uint16_t host, uint32_t hash)
{
	const struct ls_fab_route *r;

	if (sw >= f->n_nodes || host >= f->n_nodes)
		return -EINVAL;
	r = &f->routes[(size_t)sw * f->n_nodes + host];
	if (r->n == 0)
		return -ENETUNREACH;
	return r->chan[ls_fab_mod(hash, r->n)];
}

void
ls_fab_chan_set_up(struct ls_fabric *f, uint16_t chan, bool up, uint64_t now_ns)
{
	struct ls_fab_chan *c;

	if (chan >= f->n_chans)
		return;
	c = &f->chans[chan];
	c->up = up;
	if (c->route_up == up) {
		/* flapped back before routing noticed: nothing to converge */
		c->route_at_ns = 0;
		return;
	}
	if (f->convergence_ns == 0) {
		c->route_up = up;
		c->route_at_ns = 0;
		ls_fab_routes_compute(f);
		return;
	}
	/* saturate: a caller's far-future clock must not wrap to "due now" */
	c->route_at_ns = now_ns + f->convergence_ns < now_ns ? UINT64_MAX :
			 now_ns + f->convergence_ns;
	if (c->route_at_ns < f->route_next_ns)
		f->route_next_ns = c->route_at_ns;
}

void
ls_fab_link_set_up(struct ls_fabric *f, uint16_t link, bool up, uint64_t now_ns)
{
	uint64_t conv = f->convergence_ns;

	if (link >= f->n_links)
		return;
	/* one recomputation for both directions when convergence is immediate */
	if (conv == 0) {
		struct ls_fab_chan *a = &f->chans[2 * link], *b = &f->chans[2 * link + 1];
		bool changed = a->route_up != up || b->route_up != up;

		a->up = b->up = up;
		a->route_up = b->route_up = up;
		a->route_at_ns = b->route_at_ns = 0;
		if (changed)
			ls_fab_routes_compute(f);
		return;
	}
	ls_fab_chan_set_up(f, (uint16_t)(2 * link), up, now_ns);
	ls_fab_chan_set_up(f, (uint16_t)(2 * link + 1), up, now_ns);
}

bool
ls_fab_tick(struct ls_fabric *f, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;
	bool changed = false;

	if (now_ns < f->route_next_ns)
		return false;
	for (uint16_t k = 0; k < f->n_chans; k++) {
		struct ls_fab_chan *c = &f->chans[k];

		if (c->route_at_ns == 0)
			continue;
		if (c->route_at_ns <= now_ns) {
			c->route_at_ns = 0;
			if (c->route_up != c->up) {
				c->route_up = c->up;
				changed = true;
			}
		} else if (c->route_at_ns < next) {
			next = c->route_at_ns;
		}
	}
	f->route_next_ns = next;
	if (changed)
		ls_fab_routes_compute(f);
	return changed;
}
