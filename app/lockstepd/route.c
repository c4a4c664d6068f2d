/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Path discovery: which routers a path's packets cross, learnt the way
 * Paris traceroute does it. Probes with TTL 1..max_ttl carry the path's
 * exact 5-tuple (its source port and, for IPv6, flow label: the entropy
 * the fabric hashes), so every one of them follows the path the probe mesh
 * measures; each router where one expires answers with an ICMP Time
 * Exceeded that quotes it. With dport 4791 the probes take the 5-tuple of
 * the data the bridge steers onto that entropy value (a fabric that hashes
 * the destination port sends it elsewhere than the probes: docs/datapath.md).
 *
 * Tagging. A router quotes at least the IP header and 8 bytes of UDP
 * (RFC 792). IPv4 probes carry their trace and TTL in the IP
 * identification (bits 15..13 = 0b101, 12..5 trace id, 4..0 TTL): it is
 * quoted and no ECMP hash reads it. IPv6 has no identification; ICMPv6
 * quotes as much as fits in 1280 bytes (RFC 4443), so the tag is the UDP
 * payload ("LSRT", id, TTL).
 *
 * Who does what. The control thread builds a trace's probes (mbufs from
 * the pool, off the fast path) and hands them to the lcore that owns the
 * port (LSD_MSG_TRACE), which sends them. An lcore that receives an ICMP
 * error quoting one of our tagged probes (lsd_route_rx: from the fabric
 * port, or the bridge's fabric side, where such errors would otherwise go
 * to the host) passes a record up its route ring; the control thread
 * files it under its trace (lsd_route_poll). A trace is done after
 * RT_TIMEOUT_MS; the last 256 are kept, the newest per (peer, path, port)
 * answers `route`.
 *
 * The route map. With route.enabled, every path of every peer is traced in
 * the background (route.traces_per_s, oldest first, again after
 * route.refresh_s or when links.c says its route may have changed), and
 * its last finished trace is kept per (peer name, path) for link inference
 * (links.c): lsd_route_map. Where the bridge does failover or balance on
 * the port, each path is traced a second time with the data's destination
 * port (4791), into a map of its own (lsd_route_data_map): links.c pairs
 * each probe path with the data paths that cross the same routers.
 *
 * A probe that reaches the peer is dropped there (16 bytes: shorter than
 * a STAMP packet, rx_stamp_short): the hops are the routers that answered,
 * and the TTL after the last of them reached the peer when no higher TTL
 * drew an answer either.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bridge.h"
#include "lockstepd.h"
#include "ls_ctl.h"
#include "ls_pkt.h"

#define RT_TAG 0x5             /* IPv4 identification bits 15..13 */
#define RT_MAX_TTL 31          /* 5 bits of the tag */
#define RT_TRACES 256          /* trace ids: 8 bits of the tag */
#define RT_TIMEOUT_MS 500      /* answers later than this are not waited for */
#define RT_FRESH_MS 10000      /* `route` reuses a trace this young */
#define RT_PAYLOAD 16
#define ROCE_PORT 4791

struct rt_hop {
	struct ls_addr addr;
	double rtt_us;
	uint8_t type, code;
	bool seen;
};

struct rt_trace {
	bool used, done, bg;       /* bg: for the route map */
	char peer[LS_NAME_LEN];
	uint16_t path, sport, dport;
	uint8_t family, max_ttl;
	uint64_t sent_tsc;
	int64_t started_ns;        /* UTC */
	struct rt_hop hop[RT_MAX_TTL + 1]; /* by TTL */
};

/* One peer's map: its paths' last traces (by name: peers come and go),
 * as many as it has paths (grown when probe.set adds some). */
struct rt_peer {
	char name[LS_NAME_LEN];
	uint16_t n_paths;
	struct lsd_route_path path[];
};

#define RT_MAP_MAX 65536           /* peers in the map (LS_MAX_PEERS and room) */

static struct {
	struct rt_trace t[RT_TRACES];
	uint32_t next;
	uint64_t late;             /* answers for no open trace */
	struct rte_hash *map;      /* peer name -> struct rt_peer * */
	struct rte_hash *dmap;     /* the same for the data's traces (dport 4791) */
	uint32_t cursor;           /* background: the next peer to look at */
	uint64_t bg_tokens, bg_last;  /* traces_per_s bucket (x 1e6) */
	uint64_t bg_started, bg_done;
	uint32_t prune_iter;       /* where the map's pruning goes on */
	uint64_t next_prune;
} rt;

static void map_file(const struct rt_trace *t);
static void background(uint64_t now);
static void prune(uint64_t now);

/* ---- lcore ---------------------------------------------------------- */

static bool
tag_of(const struct ls_pkt_icmp_err *e, uint8_t *id, uint8_t *ttl)
{
	if (e->src.family == LS_AF_INET) {
		if (e->ip_id >> 13 != RT_TAG)
			return false;
		*id = (uint8_t)(e->ip_id >> 5);
		*ttl = e->ip_id & 0x1f;
		return true;
	}
	if (e->payload_len < 6 || memcmp(e->payload, "LSRT", 4) != 0)
		return false;
	*id = e->payload[4];
	*ttl = e->payload[5];
	return true;
}

bool
lsd_route_rx(struct lsd_lcore *lc, const struct lsd_port *p, const uint8_t *frame,
	     uint32_t len, uint64_t tsc)
{
	const struct ls_conf_probe *pc = &lsd.cfg.probe;
	const struct ls_addr *mine;
	struct ls_pkt_icmp_err e;
	struct lsd_route_rec r;

	if (ls_pkt_icmp_err(frame, len, &e) < 0)
		return false;
	mine = e.src.family == LS_AF_INET ? &p->v4.addr : &p->v6.addr;
	/* about a datagram we sent from a path's source port, tagged */
	if (!ls_addr_eq(&e.src, mine) || e.sport < pc->src_port_base ||
	    e.sport - pc->src_port_base >= LS_MAX_PATHS || !tag_of(&e, &r.id, &r.ttl))
		return false;
	r.tsc = tsc;
	r.from = e.from;
	r.type = e.type;
	r.code = e.code;
	if (rte_ring_sp_enqueue_elem(lc->route_ring, &r, sizeof(r)) != 0)
		lc->st.route_dropped++;
	return true;
}

/* ---- control thread ------------------------------------------------- */

static void
file_rec(const struct lsd_route_rec *r)
{
	struct rt_trace *t = &rt.t[r->id];
	struct rt_hop *h;

	if (!t->used || t->done || r->ttl == 0 || r->ttl > t->max_ttl ||
	    r->from.family != t->family) {
		rt.late++;
		return;
	}
	h = &t->hop[r->ttl];
	h->addr = r->from;
	h->rtt_us = (double)(r->tsc - t->sent_tsc) * 1e6 / (double)rte_get_tsc_hz();
	h->type = r->type;
	h->code = r->code;
	h->seen = true;
}

void
lsd_route_poll(void)
{
	uint64_t now = rte_rdtsc(), to = rte_get_tsc_hz() / 1000 * RT_TIMEOUT_MS;
	struct lsd_route_rec r;

	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		struct rte_ring *ring = lsd.lcores[l].route_ring;

		while (ring != NULL && rte_ring_sc_dequeue_elem(ring, &r, sizeof(r)) == 0)
			file_rec(&r);
	}
	for (unsigned int i = 0; i < RT_TRACES; i++)
		if (rt.t[i].used && !rt.t[i].done && now - rt.t[i].sent_tsc > to) {
			rt.t[i].done = true;
			if (rt.t[i].bg)
				map_file(&rt.t[i]);
		}
	background(now);
	prune(now);
}

/* ---- the route map ---------------------------------------------------- */

static struct rt_peer *
map_peer_in(bool data, const char *name, uint16_t n_paths, bool add)
{
	char key[LS_NAME_LEN] = {0};
	struct rt_peer *e = NULL, *g;
	struct rte_hash **map = data ? &rt.dmap : &rt.map;

	if (*map == NULL)
		return NULL;
	snprintf(key, sizeof(key), "%s", name);
	if (rte_hash_lookup_data(*map, key, (void **)&e) >= 0) {
		if (!add || n_paths <= e->n_paths)
			return e;
		/* more paths now: grow (the key's data pointer follows) */
		g = realloc(e, sizeof(*e) + sizeof(e->path[0]) * n_paths);
		if (g == NULL)
			return e;
		memset(&g->path[g->n_paths], 0, sizeof(g->path[0]) * (n_paths - g->n_paths));
		g->n_paths = n_paths;
		rte_hash_add_key_data(*map, key, g);
		return g;
	}
	if (!add || (e = calloc(1, sizeof(*e) + sizeof(e->path[0]) * n_paths)) == NULL)
		return NULL;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->n_paths = n_paths;
	if (rte_hash_add_key_data(*map, key, e) < 0) {
		free(e);
		return NULL;
	}
	return e;
}

static struct rt_peer *
map_peer(const char *name, uint16_t n_paths, bool add)
{
	return map_peer_in(false, name, n_paths, add);
}

/* A finished background trace into the map: its routers in TTL order up
 * to the last that answered; complete as in trace_json. */
static void
map_file(const struct rt_trace *t)
{
	struct rt_peer *e = map_peer_in(t->dport != lsd.cfg.probe.dst_port, t->peer,
					(uint16_t)(t->path + 1), true);
	struct lsd_route_path *p;
	int last = 0;

	if (e == NULL || t->path >= e->n_paths)
		return;
	p = &e->path[t->path];
	for (int ttl = 1; ttl <= t->max_ttl; ttl++)
		if (t->hop[ttl].seen)
			last = ttl;
	memset(p, 0, sizeof(*p));
	p->traced_ns = t->started_ns;
	p->complete = last > 0 && last < t->max_ttl && last <= LSD_ROUTE_HOPS;
	for (int ttl = 1; ttl <= last && ttl <= LSD_ROUTE_HOPS; ttl++) {
		p->hop[p->n++] = t->hop[ttl].addr;     /* family 0 where none answered */
		if (!t->hop[ttl].seen)
			p->complete = false;
	}
	/* FNV-1a over the routers' bytes: the hops are not 4-byte aligned
	 * (rte_jhash's word loads are undefined there; UBSan, fuzz test) */
	p->key = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < p->n * sizeof(p->hop[0]); i++)
		p->key = (p->key ^ ((const uint8_t *)p->hop)[i]) * 0x100000001b3ULL;
	p->key |= 1;
	rt.bg_done++;
}

const struct lsd_route_path *
lsd_route_map(const struct lsd_peer *peer, uint16_t path)
{
	struct rt_peer *e = map_peer(peer->name, 0, false);

	return e != NULL && path < e->n_paths && e->path[path].traced_ns != 0 ?
	       &e->path[path] : NULL;
}

const struct lsd_route_path *
lsd_route_data_map(const struct lsd_peer *peer, uint16_t path)
{
	struct rt_peer *e = map_peer_in(true, peer->name, 0, false);

	return e != NULL && path < e->n_paths && e->path[path].traced_ns != 0 ?
	       &e->path[path] : NULL;
}

const struct lsd_route_path *
lsd_route_peer_map(const struct lsd_peer *peer, bool data, uint16_t *n)
{
	struct rt_peer *e = map_peer_in(data, peer->name, 0, false);

	*n = e != NULL ? e->n_paths : 0;
	return e != NULL ? e->path : NULL;
}

void
lsd_route_stale(const struct lsd_peer *peer, uint16_t path)
{
	for (int d = 0; d < 2; d++) {
		struct rt_peer *e = map_peer_in(d, peer->name, 0, false);

		if (e != NULL && path < e->n_paths)
			e->path[path].stale = true;
	}
}

/* The ports (bit per lsd.ports index) whose bridge does failover, balance
 * or the delay mode: data toward their peers is traced too. Looked up once per pass,
 * not per peer. */
static unsigned int
data_traced_ports(void)
{
	unsigned int m = 0;

	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++)
		if (lsd_bridges[l] != NULL &&
		    (lsd_bridges[l]->fo_on || lsd_bridges[l]->bal_allowed != NULL ||
		     __atomic_load_n(&lsd_bridges[l]->cc_delay, __ATOMIC_RELAXED)))
			m |= 1u << (lsd_bridges[l]->fab - lsd.ports);
	return m;
}

static int start(const struct lsd_peer *peer, uint16_t path, uint16_t dport, uint8_t max_ttl);

/* Map entries looked at every 10 ms, for up to RT_PRUNE_SLICE_US: gone
 * when their peer is. One a tick (when the registry was searched linearly)
 * kept 10k deleted peers' entries, 13 MB, for 8 minutes; 512 every 50 ms
 * took 0.5-0.8 ms at a time (peer.add waited behind it); in slices the
 * whole map of 10k peers is looked at in about a second. */
#define RT_PRUNE_SLICE_US 100
static void
prune(uint64_t now)
{
	uint64_t end = now + rte_get_tsc_hz() / 1000000 * RT_PRUNE_SLICE_US;
	const void *key;
	void *data, *dd;
	int32_t pos;

	if (rt.map == NULL || now < rt.next_prune)
		return;
	rt.next_prune = now + rte_get_tsc_hz() / 100;
	for (int k = 0; (k & 15) != 0 || rte_rdtsc() < end; k++) {
		pos = rte_hash_iterate(rt.map, &key, &data, &rt.prune_iter);
		if (pos < 0) {
			rt.prune_iter = 0;
			return;
		}
		if (lsd_peer_find(((const struct rt_peer *)data)->name) >= 0)
			continue;
		/* its data traces go with it (same key) */
		if (rt.dmap != NULL && rte_hash_lookup_data(rt.dmap, key, &dd) >= 0 &&
		    rte_hash_del_key(rt.dmap, key) >= 0)
			free(dd);
		if (rte_hash_del_key(rt.map, key) >= 0)
			free(data);
	}
}

/* Whether (peer, path) has a trace on the way. */
static bool
tracing(const char *peer, uint16_t path, uint16_t dport)
{
	for (unsigned int i = 0; i < RT_TRACES; i++)
		if (rt.t[i].used && !rt.t[i].done && rt.t[i].path == path &&
		    rt.t[i].dport == dport && strcmp(rt.t[i].peer, peer) == 0)
			return true;
	return false;
}

/* Background: trace the paths whose map entry is missing, old or stale, at
 * most traces_per_s, visiting a slice of the peers per pass. Traces never
 * exceed half the trace ids in flight, so on-demand `route` always has room. */
#define RT_BG_PEERS_PER_PASS 64
#define RT_BG_SLICE_US 200     /* one pass at most: commands wait for it */
static void
background(uint64_t now)
{
	const struct ls_conf_route *c = &lsd.cfg.route;
	uint64_t hz = rte_get_tsc_hz(), cap = 1000000ULL * (c->traces_per_s / 10 + 1);
	uint64_t end = now + hz / 1000000 * RT_BG_SLICE_US;
	unsigned int n = lsd_peer_count(), inflight = 0, fo_ports;
	int64_t wall;
	struct timespec ts;

	if (!c->enabled || n == 0)
		return;
	if (rt.bg_last != 0)
		rt.bg_tokens += (now - rt.bg_last) * c->traces_per_s * 1000000ULL / hz;
	rt.bg_last = now;
	if (rt.bg_tokens > cap)
		rt.bg_tokens = cap;   /* a burst of a tenth of a second at most */
	for (unsigned int i = 0; i < RT_TRACES; i++)
		inflight += rt.t[i].used && !rt.t[i].done;
	clock_gettime(CLOCK_REALTIME, &ts);
	wall = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	fo_ports = data_traced_ports();
	for (unsigned int k = 0; k < n && k < RT_BG_PEERS_PER_PASS && rte_rdtsc() < end; k++) {
		struct lsd_peer *peer = lsd_peer_at(rt.cursor++ % n);
		struct rt_peer *e;

		if (!__atomic_load_n(&peer->resolved, __ATOMIC_RELAXED) ||
		    (e = map_peer(peer->name, peer->n_paths, true)) == NULL)
			continue;
		for (unsigned int d = 0; d < 1 + (fo_ports >> peer->port_idx & 1); d++) {
			uint16_t dport = d ? ROCE_PORT : lsd.cfg.probe.dst_port;

			if (d && (e = map_peer_in(true, peer->name, peer->n_paths, true)) == NULL)
				break;
			for (uint16_t p = 0; p < peer->n_paths && p < e->n_paths; p++) {
				const struct lsd_route_path *rp = &e->path[p];
				int id;

				/* each start waits for the lcore: a slice of the
				 * loop's time, as its other pieces of work take */
				if (rt.bg_tokens < 1000000 || inflight >= RT_TRACES / 2 ||
				    rte_rdtsc() > end)
					return;
				if (rp->traced_ns != 0 && !rp->stale &&
				    wall - rp->traced_ns < (int64_t)c->refresh_s * 1000000000)
					continue;
				if (tracing(peer->name, p, dport))
					continue;
				id = start(peer, p, dport, c->max_ttl);
				if (id < 0)
					return;
				rt.t[id].bg = true;
				e->path[p].stale = false;
				rt.bg_tokens -= 1000000;
				rt.bg_started++;
				inflight++;
			}
		}
	}
}

static const char *
icmp_name(uint8_t family, uint8_t type, uint8_t code)
{
	if ((family == LS_AF_INET && type == 11) || (family == LS_AF_INET6 && type == 3))
		return code == 0 ? "time_exceeded" : "reassembly_time_exceeded";
	return "unreachable";
}

static json_t *
trace_json(const struct rt_trace *t, uint8_t id)
{
	json_t *hops = json_array();
	int last = 0;
	bool gap = false;

	for (int ttl = 1; ttl <= t->max_ttl; ttl++)
		if (t->hop[ttl].seen)
			last = ttl;
	for (int ttl = 1; ttl <= last; ttl++) {
		const struct rt_hop *h = &t->hop[ttl];
		char a[64];

		if (!h->seen) {
			gap = true;
			json_array_append_new(hops, json_pack("{s:i, s:n}", "ttl", ttl, "addr"));
			continue;
		}
		ls_addr_fmt(&h->addr, a, sizeof(a));
		json_array_append_new(hops, json_pack("{s:i, s:s, s:f, s:s}", "ttl", ttl, "addr", a,
						      "rtt_us", h->rtt_us, "icmp",
						      icmp_name(t->family, h->type, h->code)));
	}
	return json_pack("{s:i, s:s, s:i, s:i, s:i, s:s, s:s, s:I, s:i, s:o, s:b}",
			 "trace", id, "peer", t->peer, "path", t->path, "sport", t->sport,
			 "dport", t->dport, "family", t->family == LS_AF_INET ? "ipv4" : "ipv6",
			 "state", t->done ? "done" : "tracing", "started_ns",
			 (json_int_t)t->started_ns, "max_ttl", t->max_ttl, "hops", hops,
			 /* the peer was reached right after the last router when no
			  * higher TTL drew an answer and none is missing before it */
			 "complete", t->done && !gap && last > 0 && last < t->max_ttl);
}

/* One probe of trace id at ttl, in an mbuf from the pool. */
static struct rte_mbuf *
build(const struct lsd_peer *peer, const struct lsd_port *p, uint16_t sport, uint16_t dport,
      uint8_t id, uint8_t ttl)
{
	uint8_t payload[RT_PAYLOAD] = {'L', 'S', 'R', 'T', id, ttl};
	struct ls_pkt_udp_hdr h = {
		.src_mac = p->mac, .dst_mac = peer->mac,
		.src = peer->addr.family == LS_AF_INET ? p->v4.addr : p->v6.addr,
		.dst = peer->addr, .sport = sport, .dport = dport, .ttl = ttl,
		.tos = peer->tos,         /* as the path's probes: their class */
		.flow_label = sport,      /* ... and the entropy */
	};
	uint16_t len = (uint16_t)(ls_pkt_udp_hdr_len(h.src.family) + RT_PAYLOAD);
	struct rte_mbuf *m = rte_pktmbuf_alloc(lsd.pool);
	uint8_t *f;

	if (m == NULL)
		return NULL;
	f = (uint8_t *)rte_pktmbuf_append(m, len);
	if (f == NULL || ls_pkt_build_udp(f, len, &h, payload, RT_PAYLOAD) < 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	if (h.src.family == LS_AF_INET) {
		uint16_t ipid = (uint16_t)(RT_TAG << 13 | id << 5 | ttl);

		f[18] = (uint8_t)(ipid >> 8);
		f[19] = (uint8_t)ipid;
		ls_pkt_udp_finalize(f, len, h.src.family);
	}
	m->vlan_tci = peer->vlan_tci;
	return m;
}

static int
start(const struct lsd_peer *peer, uint16_t path, uint16_t dport, uint8_t max_ttl)
{
	const struct lsd_port *p = &lsd.ports[peer->port_idx];
	uint8_t id = (uint8_t)(rt.next++ % RT_TRACES);
	struct rt_trace *t = &rt.t[id];
	struct lsd_trace_tx *tx = calloc(1, sizeof(*tx));
	struct timespec ts;
	int rc;

	if (tx == NULL)
		return -ENOMEM;
	memset(t, 0, sizeof(*t));
	snprintf(t->peer, sizeof(t->peer), "%s", peer->name);
	t->path = path;
	t->sport = peer->path[path].sport;
	t->dport = dport;
	t->family = peer->addr.family;
	t->max_ttl = max_ttl;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->started_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	for (uint8_t ttl = 1; ttl <= max_ttl; ttl++) {
		tx->m[tx->n] = build(peer, p, t->sport, dport, id, ttl);
		if (tx->m[tx->n] != NULL)
			tx->n++;
	}
	tx->port_idx = peer->port_idx;
	t->used = true;
	t->sent_tsc = rte_rdtsc();
	rc = lsd_msg_call(p->lcore, LSD_MSG_TRACE, tx);
	if (rc < 0) {
		/* timed out: the lcore may still read tx, so it is leaked (as
		 * every message after a time-out); not sent: given back */
		t->done = true;
		if (rc != -ETIMEDOUT) {
			rte_pktmbuf_free_bulk(tx->m, tx->n);
			free(tx);
		}
		return rc;
	}
	free(tx);
	return id;
}

static const struct rt_trace *
newest(const char *peer, uint16_t path, uint16_t dport, uint8_t *id)
{
	const struct rt_trace *best = NULL;

	for (unsigned int i = 0; i < RT_TRACES; i++) {
		const struct rt_trace *t = &rt.t[i];

		if (t->used && t->path == path && t->dport == dport && strcmp(t->peer, peer) == 0 &&
		    (best == NULL || t->started_ns > best->started_ns)) {
			best = t;
			*id = (uint8_t)i;
		}
	}
	return best;
}

/* route {peer, [path], [dport], [max_ttl], [fresh]}: the newest trace of
 * that path (started now when there is none younger than RT_FRESH_MS, or
 * fresh is true); poll until "state" is "done". */
static void
cmd_route(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	double path = 0, dport = lsd.cfg.probe.dst_port, max_ttl = 8;
	json_t *jf = json_object_get(args, "fresh");
	const struct rt_trace *t;
	const char *name;
	struct lsd_peer *peer;
	struct timespec ts;
	uint8_t id = 0;
	int idx, rc;

	if ((idx = lsd_peer_arg(req, args, &name)) < 0 ||
	    ls_ctl_arg_num(req, args, "path", 0, LS_MAX_PATHS - 1, &path) < 0 ||
	    ls_ctl_arg_num(req, args, "dport", 1, 65535, &dport) < 0 ||
	    ls_ctl_arg_num(req, args, "max_ttl", 1, RT_MAX_TTL, &max_ttl) < 0)
		return;
	if (jf != NULL && !json_is_boolean(jf)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.fresh: expected true or false");
		return;
	}
	peer = lsd_peer_at((unsigned int)idx);
	if ((uint16_t)path >= peer->n_paths) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.path: peer %s has %u paths",
				   peer->name, peer->n_paths);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	t = newest(peer->name, (uint16_t)path, (uint16_t)dport, &id);
	if (t != NULL && !json_is_true(jf) &&
	    (!t->done || (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - t->started_ns <
			 (int64_t)RT_FRESH_MS * 1000000)) {
		ls_ctl_reply_ok(req, trace_json(t, id));
		return;
	}
	if (!__atomic_load_n(&peer->resolved, __ATOMIC_RELAXED)) {
		ls_ctl_reply_error(req, LS_CTL_E_BUSY, "peer %s: next hop not resolved yet",
				   peer->name);
		return;
	}
	rc = start(peer, (uint16_t)path, (uint16_t)dport, (uint8_t)max_ttl);
	if (rc < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BUSY, "cannot start a trace: %s", strerror(-rc));
		return;
	}
	ls_ctl_reply_ok(req, trace_json(&rt.t[rc], (uint8_t)rc));
}

/*
 * Both maps at start-up, not at the first route: a table of RT_MAP_MAX
 * grows DPDK's heap by megabytes, and growing it at run time while a
 * secondary process (dpdk-dumpcap) attaches waited 5 s for the
 * secondary's sync and failed, taking the secondary's attach with it.
 */
int
lsd_route_init(void)
{
	for (int data = 0; data < 2; data++) {
		struct rte_hash_parameters hp = {
			.name = data ? "ls_route_dmap" : "ls_route_map", .entries = RT_MAP_MAX,
			.key_len = LS_NAME_LEN, .hash_func = rte_jhash, .socket_id = SOCKET_ID_ANY,
		};
		struct rte_hash **map = data ? &rt.dmap : &rt.map;

		*map = rte_hash_create(&hp);
		if (*map == NULL) {
			LSD_LOG(ERR, "route: cannot make the route map (%u peers): %s",
				RT_MAP_MAX, rte_strerror(rte_errno));
			return -ENOMEM;
		}
	}
	return 0;
}

void
lsd_route_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "route", "{peer, [path], [dport], [max_ttl], [fresh]}",
			     "the routers a path crosses (TTL-limited probes with its 5-tuple; "
			     "dport 4791: the data's); poll until state is done",
			     "peer path dport max_ttl fresh", cmd_route, NULL);
}
