/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link inference from the probe mesh and the route map: which link a set of
 * dead paths points at (issue 29, items 2 and 3; control thread only).
 *
 * A link is an unordered pair of neighbours on a traced path: us and the
 * first router, router and router, the last router and the peer. Every
 * LINKS_EVERY_MS this looks at every path with a background trace
 * (route.c): the links of paths that are up are known good; a path that is
 * down (probe.down_after losses) is explained by its links that are not
 * known good. A greedy set cover (lib/tomo) picks the link that explains the
 * most dead paths, then the next for those left, and so on. Links that explain
 * exactly the same dead paths cannot be told apart from here (h1's paths
 * over spine2 all cross both leaf1-spine2 and spine2-leaf2): they are
 * named together, as one suspect with several candidates. A dead path none
 * of whose links is suspect (its forward route is fine: the reply's way
 * back died, which this node cannot trace) is counted as unexplained.
 * Dead paths of one peer only, explained by its own last hop, are that
 * host or its link (the edge cannot tell which): peer.down says so, not
 * link.suspect (a lab host held up for 100 ms looks the same).
 *
 * Events: link.suspect when a suspect (its candidate set) appears, with the
 * dead paths it explains; link.clear when it no longer explains any. A
 * path that comes back up is marked stale in the route map: routing may
 * have moved it.
 *
 * Hot links, the same way with queueing instead of loss. A live path is hot
 * when its forward queueing (its last synced one-way delay above its floor,
 * sender.c) is over links.hot_us in two passes running, cool under half;
 * the links of cool paths are known cool, and a cover of the hot paths
 * names link.hot (then link.cool), with the least queueing of its paths (a
 * link's own queue is at most that: every path that crosses it adds it).
 * A hot link that is the last hop to a peer, explaining only that peer's
 * paths, is its host's downlink: host.slow_receiver.
 *
 * Slow senders need no trace: the replies of every path of a peer queue
 * (reverse queueing over links.hot_us, three passes running) while two
 * other peers' replies are cool. The one link all of that peer's replies cross
 * and the cool peer's do not is its uplink: host.slow_sender, then
 * host.sender_ok. (Our own downlink, which every reply crosses, would make
 * all peers slow at once: no cool peer, no event.)
 *
 * Cost: O(paths x hops) every 200 ms over a small hash of links; 10k peers
 * x 8 paths x 8 hops is ~1 M set operations a second on the control thread.
 * The walk over the peers runs in LINKS_SLICE_US slices resumed where the
 * last pass stopped (in one go it took up to 50 ms of CPU at 10k peers,
 * and a command waited for all of it); a removed peer starts it over.
 * What this does not do yet: nodes exchanging what they see (the two
 * candidates above would split). Queueing per link: linkq.c, fed by this
 * pass once a second.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>

#include "lockstepd.h"
#include "ls_ctl.h"
#include "ls_tomo.h"

#define LINKS_EVERY_MS 200
#define LINKS_SLICE_US 200    /* the walk's share of a control-loop pass */
#define MAX_LINKS 4096        /* distinct links considered per pass */
#define MAX_DEAD 1024         /* dead paths considered per pass */
#define MAX_SUSPECTS 64
#define MIN_SUPPORT 2         /* dead paths a link must explain to be named: one
			       * dead path whose reply died (invisible from here)
			       * with no live path over its forward links would
			       * name those (a seed of the links test did) */
/* forward queueing that makes a path hot (links.hot_us). With software
 * timestamps a reflector held up by its host reads as queueing toward it
 * (its receive stamp is late): the two-core lab needs milliseconds here,
 * a NIC-stamped fabric the default 200 us. */
#define HOT_NS ((int64_t)lsd.cfg.links.hot_us * 1000)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

enum { K_DEAD, K_HOT, K_N };
#define REV_RUNS_MAX 100
#define SENDER_RUNS 3         /* reverse passes over hot_us that make a slow sender:
			       * two let a lab reflector held up twice name its
			       * peers (seed 3 of bench_links did) */
#define REV_BETWEEN 255  /* what a cover explains: loss, queueing */

struct link {
	struct ls_addr a, b;      /* a < b (bytes) */
	uint8_t good[K_N];        /* on a live path / on a cool path */
};

struct dead {                 /* a dead (or hot) path */
	const struct lsd_peer *peer;
	uint16_t path;
	uint16_t n_links;
	uint16_t link[LSD_ROUTE_HOPS + 1];
	int64_t q_ns;             /* hot: its forward queueing */
	uint16_t covered;         /* the cover step that explained it, 0: none yet */
};

struct suspect {
	char key[512];            /* its candidates, for identity across passes */
	json_t *ev;               /* what link.suspect said (for link.clear) */
	bool seen;                /* still explains dead paths this pass */
	uint8_t kind;
};

static struct {
	struct link l[MAX_LINKS];
	uint32_t n_l;
	struct dead dd[K_N][MAX_DEAD];
	uint32_t nd[K_N];
	struct dead *d;           /* the cover at work: dd[kind] */
	uint32_t n_d;
	uint8_t kind;
	struct suspect s[MAX_SUSPECTS];
	uint32_t n_s;
	uint64_t next;
	uint8_t *was_down;        /* per peer index x path: last state seen */
	uint8_t *hot_runs;        /* per peer index x path: passes over HOT_NS running */
	uint32_t was_cap;
	uint32_t last_dead, last_unexplained;
	uint8_t *rev_runs;        /* per peer index x path: reverse passes over hot_us */
	char slow_tx[MAX_SUSPECTS][LS_NAME_LEN]; /* peers said slow senders */
	uint32_t n_slow_tx;
	json_t *weak;             /* last pass: candidates below MIN_SUPPORT */
	/* the pass under way (its walk runs in slices) */
	bool in_pass;
	unsigned int cursor;      /* the next peer it looks at */
	uint64_t removals;        /* lsd_peer_removals() when it began */
	unsigned int cool;        /* peers whose every reply is cool */
	struct {                  /* peers whose every reply is hot, not yet said */
		const struct lsd_peer *peer;
		int64_t q;
	} hot_tx[MAX_SUSPECTS];
	uint32_t n_hot_tx;
	uint32_t last_n_l;        /* links the last whole pass knew */
} lk;

/* A peer's two route maps, looked up once for all its paths. */
struct pmap {
	const struct lsd_route_path *p, *d;
	uint16_t np, nd;
};

static void
pmap_of(const struct lsd_peer *peer, struct pmap *m)
{
	m->p = lsd_route_peer_map(peer, false, &m->np);
	m->d = lsd_route_peer_map(peer, true, &m->nd);
}

/* Path's trace in a map (NULL: none yet), as lsd_route_map says. */
static const struct lsd_route_path *
pm_path(const struct lsd_route_path *a, uint16_t n, uint16_t path)
{
	return a != NULL && path < n && a[path].traced_ns != 0 ? &a[path] : NULL;
}

static int
addr_cmp(const struct ls_addr *x, const struct ls_addr *y)
{
	return x->family != y->family ? x->family - y->family : memcmp(x->a, y->a, 16);
}

/* The index of link {x, y}, added when new; -1 when the table is full. */
static int
link_of(const struct ls_addr *x, const struct ls_addr *y)
{
	const struct ls_addr *a = addr_cmp(x, y) <= 0 ? x : y, *b = a == x ? y : x;

	for (uint32_t i = 0; i < lk.n_l; i++)
		if (addr_cmp(&lk.l[i].a, a) == 0 && addr_cmp(&lk.l[i].b, b) == 0)
			return (int)i;
	if (lk.n_l == MAX_LINKS)
		return -1;
	lk.l[lk.n_l] = (struct link){.a = *a, .b = *b};
	return (int)lk.n_l++;
}

/* The most routers any complete trace of peer crossed. ECMP paths cost the
 * same, so in a Clos they have as many hops: a shorter trace lost the
 * answers of its last routers (the peer itself never answers), and would
 * name a link from the last one that did straight to the peer, which only
 * that path crosses (a CI run of the links test blamed such a link for two
 * paths that died at start-up). */
static uint8_t
peer_hops(const struct lsd_peer *peer, const struct pmap *pm)
{
	uint8_t most = 0;

	for (uint16_t p = 0; p < peer->n_paths; p++) {
		const struct lsd_route_path *rp = pm_path(pm->p, pm->np, p);

		if (rp != NULL && rp->complete)
			most = RTE_MAX(most, rp->n);
	}
	return most;
}

/* A path's links from its trace; false when it has no usable trace (none,
 * with a gap, or shorter than hops: then it is traced again). */
static bool
path_links(const struct lsd_peer *peer, const struct pmap *pm, uint16_t path, uint8_t hops,
	   uint16_t *out, uint8_t *from_a, uint16_t *n)
{
	const struct lsd_route_path *rp = pm_path(pm->p, pm->np, path);
	const struct lsd_port *port = &lsd.ports[peer->port_idx];
	const struct ls_addr *prev = peer->addr.family == LS_AF_INET ? &port->v4.addr :
				     &port->v6.addr;

	*n = 0;
	if (rp == NULL || !rp->complete)
		return false;
	if (rp->n < hops) {
		if (!rp->stale)
			lsd_route_stale(peer, path);
		return false;
	}
	for (uint8_t h = 0; h <= rp->n; h++) {
		const struct ls_addr *cur = h < rp->n ? &rp->hop[h] : &peer->addr;
		int i = link_of(prev, cur);

		if (i < 0)
			return false;
		from_a[*n] = addr_cmp(prev, &lk.l[i].a) == 0;
		out[(*n)++] = (uint16_t)i;
		prev = cur;
	}
	return true;
}

/* A usable trace's routers as one value (0: not usable); route.c hashed
 * them when it filed the trace, not every pass here. */
static uint64_t
hops_key(const struct lsd_route_path *rp, uint8_t hops)
{
	if (rp == NULL || !rp->complete || rp->n < hops || rp->n == 0)
		return 0;
	return rp->key;
}

/*
 * For the bridge's failover (bridge_fo.c): each probe path gets the set of
 * data paths whose trace (dport 4791) crosses the same routers as its own.
 * Where the fabric hashes the destination port, probe path j and data path
 * j part ways; routers in common say which probe stands for which data.
 * O(paths^2) compares of one value per path, every pass.
 */
static void
data_paths(const struct lsd_peer *peer, const struct pmap *pm, uint8_t hops)
{
	uint64_t dk[LS_MAX_PATHS];
	bool any = false;

	for (uint16_t k = 0; k < peer->n_paths && k < LS_MAX_PATHS; k++) {
		const struct lsd_route_path *dp = pm_path(pm->d, pm->nd, k);

		dk[k] = hops_key(dp, hops);
		any |= dk[k] != 0;
		if (dp != NULL && dp->complete && dp->n < hops && !dp->stale)
			lsd_route_stale(peer, k);   /* lost its last answers */
	}
	for (uint16_t j = 0; j < peer->n_paths && j < LS_MAX_PATHS; j++) {
		uint64_t pk = any ? hops_key(pm_path(pm->p, pm->np, j), hops) : 0, mask = 0;

		for (uint16_t k = 0; pk != 0 && k < peer->n_paths && k < 64; k++)
			if (dk[k] == pk)
				mask |= 1ULL << k;
		__atomic_store_n(&((struct lsd_peer *)(uintptr_t)peer)->path[j].data_paths, mask,
				 __ATOMIC_RELAXED);
	}
}

static void
link_name(const struct link *l, char *buf, size_t len)
{
	char a[64], b[64];

	ls_addr_fmt(&l->a, a, sizeof(a));
	ls_addr_fmt(&l->b, b, sizeof(b));
	snprintf(buf, len, "%s-%s", a, b);
}

/* Paths that came back: their route may be another now. */
static void
note_ups(const struct lsd_peer *peer, unsigned int pi)
{
	for (uint16_t p = 0; p < peer->n_paths; p++) {
		size_t k = (size_t)pi * LS_MAX_PATHS + p;
		uint8_t down = LOAD(peer->path[p].state_down);

		if (k < lk.was_cap && lk.was_down[k] && !down)
			lsd_route_stale(peer, p);
		if (k < lk.was_cap)
			lk.was_down[k] = down;
	}
}

static void
add_path(uint8_t kind, const struct lsd_peer *peer, uint16_t p, const uint16_t *ids,
	 uint16_t m, int64_t q)
{
	struct dead *d;

	if (lk.nd[kind] == MAX_DEAD)
		return;
	d = &lk.dd[kind][lk.nd[kind]++];
	*d = (struct dead){.peer = peer, .path = p, .n_links = m, .q_ns = q};
	memcpy(d->link, ids, sizeof(ids[0]) * m);
}

/* A pass begins: the per-path state sized for the peers there are now,
 * the links and dead paths of the last pass forgotten. */
static void
pass_begin(void)
{
	unsigned int n = lsd_peer_count();

	lk.n_l = lk.nd[K_DEAD] = lk.nd[K_HOT] = 0;
	lk.cursor = 0;
	lk.cool = 0;
	lk.n_hot_tx = 0;
	lk.removals = lsd_peer_removals();
	lk.in_pass = true;
	lsd_linkq_begin(n);
	if ((size_t)n * LS_MAX_PATHS > lk.was_cap) {
		size_t cap = (size_t)n * LS_MAX_PATHS * 2;
		uint8_t *w = realloc(lk.was_down, cap), *h, *r;

		if (w != NULL)
			lk.was_down = w;
		h = w != NULL ? realloc(lk.hot_runs, cap) : NULL;
		if (h != NULL)
			lk.hot_runs = h;
		r = h != NULL ? realloc(lk.rev_runs, cap) : NULL;
		if (r != NULL) {
			lk.rev_runs = r;
			memset(w + lk.was_cap, 0, cap - lk.was_cap);
			memset(h + lk.was_cap, 0, cap - lk.was_cap);
			memset(r + lk.was_cap, 0, cap - lk.was_cap);
			lk.was_cap = (uint32_t)cap;
		}
	}
}

/* One peer's traced paths: up ones mark their links good, down ones are
 * kept; cool ones mark their links cool, hot ones are kept. */
static void
gather_peer(unsigned int i, const struct lsd_peer *peer, uint64_t now, uint64_t fresh)
{
	struct pmap pm;
	uint8_t hops;

	note_ups(peer, i);
	pmap_of(peer, &pm);
	hops = peer_hops(peer, &pm);
	data_paths(peer, &pm, hops);
	for (uint16_t p = 0; p < peer->n_paths; p++) {
		const struct lsd_peer_path *pp = &peer->path[p];
		size_t slot = (size_t)i * LS_MAX_PATHS + p;
		uint16_t ids[LSD_ROUTE_HOPS + 1], m;
		uint8_t from_a[LSD_ROUTE_HOPS + 1];
		uint64_t qt = LOAD(pp->q_tsc);
		int64_t q = qt != 0 && now - qt < fresh ? LOAD(pp->q_ns) : -1;
		uint8_t runs = 0;

		if (slot < lk.was_cap) {
			int64_t qr = q >= 0 ? LOAD(pp->q_rev_ns) : -1;

			runs = lk.hot_runs[slot] = q >= HOT_NS ?
				(uint8_t)RTE_MIN(lk.hot_runs[slot] + 1, 255) : 0;
			uint8_t hr = lk.rev_runs[slot] > REV_RUNS_MAX ? 0 : lk.rev_runs[slot];

			/* hot passes running (1..REV_RUNS_MAX), 0 cool, else between */
			lk.rev_runs[slot] = qr >= HOT_NS ?
				(uint8_t)RTE_MIN(hr + 1, REV_RUNS_MAX) :
				qr >= 0 && qr < HOT_NS / 2 ? 0 : REV_BETWEEN;
		}
		if (!path_links(peer, &pm, p, hops, ids, from_a, &m))
			continue;
		if (LOAD(pp->state_down)) {
			add_path(K_DEAD, peer, p, ids, m, 0);
			continue;
		}
		lsd_linkq_row(i, peer, p, ids, from_a, m);
		for (uint16_t j = 0; j < m; j++)
			lk.l[ids[j]].good[K_DEAD] = true;
		if (q >= 0 && q < HOT_NS / 2)
			for (uint16_t j = 0; j < m; j++)
				lk.l[ids[j]].good[K_HOT] = true;
		else if (runs >= 2)
			add_path(K_HOT, peer, p, ids, m, q);
	}
}

/* Whether link i ends at peer (the last hop of its paths). */
static bool
last_hop_of(uint32_t i, const struct lsd_peer *peer)
{
	return addr_cmp(&lk.l[i].a, &peer->addr) == 0 || addr_cmp(&lk.l[i].b, &peer->addr) == 0;
}

/* One suspect of the cover at work (lib/tomo): its candidates, the paths
 * it explains, for hot paths their least queueing and, when the best link
 * is the last hop of one peer's paths only, that peer. */
static json_t *
pick(char *key, size_t klen, uint16_t mark)
{
	static uint8_t good[MAX_LINKS];
	static uint32_t count[MAX_LINKS];
	static struct ls_tomo_path tp[MAX_DEAD];
	uint16_t cand[32];
	uint32_t n_cand, n_paths = 0, got;
	int64_t q_min = INT64_MAX;
	const struct lsd_peer *only = NULL;
	bool one_peer = true, last = false;
	json_t *jc, *paths, *o;
	size_t kl = 0;

	for (uint32_t i = 0; i < lk.n_l; i++)
		good[i] = lk.l[i].good[lk.kind];
	for (uint32_t k = 0; k < lk.n_d; k++)
		tp[k] = (struct ls_tomo_path){.link = lk.d[k].link, .n = lk.d[k].n_links,
					      .covered = lk.d[k].covered};
	got = ls_tomo_pick(good, count, lk.n_l, tp, lk.n_d, cand, RTE_DIM(cand), &n_cand, mark);
	if (got == 0)
		return NULL;
	jc = json_array();
	paths = json_array();
	key[0] = '\0';
	for (uint32_t c = 0; c < n_cand && c < RTE_DIM(cand); c++) {
		char nm[160];

		link_name(&lk.l[cand[c]], nm, sizeof(nm));
		json_array_append_new(jc, json_string(nm));
		kl += (size_t)snprintf(key + kl, kl < klen ? klen - kl : 0, "%s,", nm);
	}
	for (uint32_t k = 0; k < lk.n_d; k++) {
		if (tp[k].covered != mark)
			continue;
		lk.d[k].covered = mark;
		q_min = RTE_MIN(q_min, lk.d[k].q_ns);
		one_peer &= only == NULL || only == lk.d[k].peer;
		only = lk.d[k].peer;
		if (n_paths++ < 16)
			json_array_append_new(paths, json_pack("{s:s, s:i}", "peer",
							       lk.d[k].peer->name, "path",
							       lk.d[k].path));
	}
	for (uint32_t c = 0; c < n_cand && c < RTE_DIM(cand) && only != NULL; c++)
		last |= last_hop_of(cand[c], only);
	o = json_pack("{s:o, s:i, s:o}", "candidates", jc,
		      lk.kind == K_DEAD ? "paths_down" : "paths_hot", (int)n_paths, "paths", paths);
	if (lk.kind == K_HOT) {
		json_object_set_new(o, "queue_us", json_real((double)q_min / 1e3));
		/* the peer's own last hop, and only its paths: its downlink */
		if (one_peer && last)
			json_object_set_new(o, "receiver", json_string(only->name));
	} else if (one_peer && last) {
		/* one peer's paths, dead at its own last hop: the host or its
		 * link, which the edge cannot tell apart; peer.down says it */
		json_object_set_new(o, "peer", json_string(only->name));
	}
	return o;
}

static struct suspect *
suspect_find(const char *key)
{
	for (uint32_t i = 0; i < lk.n_s; i++)
		if (strcmp(lk.s[i].key, key) == 0)
			return &lk.s[i];
	return NULL;
}

static const char *const ev_on[K_N] = {"link.suspect", "link.hot"};
static const char *const ev_off[K_N] = {"link.clear", "link.cool"};

/* One kind's cover of this pass: new suspects said. */
static void
cover(uint8_t kind)
{
	char key[512];
	json_t *ev;

	lk.kind = kind;
	lk.d = lk.dd[kind];
	lk.n_d = lk.nd[kind];
	for (uint16_t mark = 1; (ev = pick(key, sizeof(key), mark)) != NULL; mark++) {
		const char *recv = json_string_value(json_object_get(ev, "receiver"));
		struct suspect *s;

		if (json_integer_value(json_object_get(ev, kind == K_DEAD ? "paths_down" :
						       "paths_hot")) < MIN_SUPPORT ||
		    json_object_get(ev, "peer") != NULL) {
			json_array_append_new(lk.weak, ev);
			continue;
		}
		s = suspect_find(key);
		if (s == NULL && lk.n_s < MAX_SUSPECTS) {
			s = &lk.s[lk.n_s++];
			snprintf(s->key, sizeof(s->key), "%s", key);
			s->kind = kind;
			s->ev = json_deep_copy(ev);
			if (recv != NULL)
				lsd_event("host.slow_receiver", LSD_EV_WARNING,
					  json_pack("{s:s, s:O, s:O}", "peer", recv, "queue_us",
						    json_object_get(ev, "queue_us"), "link",
						    json_array_get(json_object_get(ev, "candidates"), 0)));
			lsd_event(ev_on[kind], LSD_EV_WARNING, ev);
		} else {
			json_decref(ev);
		}
		if (s != NULL)
			s->seen = true;
	}
	if (kind == K_DEAD)
		for (uint32_t k = 0; k < lk.n_d; k++)
			lk.last_unexplained += !lk.d[k].covered;
}

/* The covers of this pass against the suspects of the last one. */
static void
infer(void)
{
	for (uint32_t i = 0; i < lk.n_s; i++)
		lk.s[i].seen = false;
	json_decref(lk.weak);
	lk.weak = json_array();
	lk.last_unexplained = 0;
	cover(K_DEAD);
	cover(K_HOT);
	for (uint32_t i = 0; i < lk.n_s;) {
		if (lk.s[i].seen) {
			i++;
			continue;
		}
		lsd_event(ev_off[lk.s[i].kind], LSD_EV_INFO,
			  json_pack("{s:O}", "candidates", json_object_get(lk.s[i].ev, "candidates")));
		json_decref(lk.s[i].ev);
		lk.s[i] = lk.s[--lk.n_s];
	}
}

/* Per peer: every path's replies hot (2 passes), or every one cool. */
static int
peer_rev(unsigned int pi, const struct lsd_peer *peer, int64_t *q_min)
{
	bool all_hot = peer->n_paths > 0, all_cool = peer->n_paths > 0;

	*q_min = INT64_MAX;
	for (uint16_t p = 0; p < peer->n_paths; p++) {
		size_t slot = (size_t)pi * LS_MAX_PATHS + p;
		uint8_t r = slot < lk.was_cap ? lk.rev_runs[slot] : 1;

		if (LOAD(peer->path[p].state_down))
			return 0;
		all_hot &= r >= SENDER_RUNS && r <= REV_RUNS_MAX;
		all_cool &= r == 0;
		*q_min = RTE_MIN(*q_min, LOAD(peer->path[p].q_rev_ns));
	}
	return all_hot ? 1 : all_cool ? -1 : 0;
}

static int
slow_tx_find(const char *name)
{
	for (uint32_t i = 0; i < lk.n_slow_tx; i++)
		if (strcmp(lk.slow_tx[i], name) == 0)
			return (int)i;
	return -1;
}

/* Slow senders, one peer of the walk: a cool one counts, and says
 * host.sender_ok if it was slow; a hot one waits for the pass's end, when
 * the cool peers are counted. */
static void
sender_peer(unsigned int i, const struct lsd_peer *peer)
{
	int64_t q;
	int st = peer_rev(i, peer, &q), k;

	if (st == 0)
		return;
	k = slow_tx_find(peer->name);
	if (st < 0) {
		lk.cool++;
		if (k >= 0) {
			lsd_event("host.sender_ok", LSD_EV_INFO,
				  json_pack("{s:s}", "peer", peer->name));
			memcpy(lk.slow_tx[k], lk.slow_tx[--lk.n_slow_tx], LS_NAME_LEN);
		}
	} else if (k < 0 && lk.n_hot_tx < MAX_SUSPECTS) {
		lk.hot_tx[lk.n_hot_tx].peer = peer;
		lk.hot_tx[lk.n_hot_tx++].q = q;
	}
}

/* Slow senders: peers whose every reply queues while another's do not. */
static void
senders(void)
{
	for (uint32_t i = 0; i < lk.n_hot_tx && lk.cool >= MIN_SUPPORT &&
			     lk.n_slow_tx < MAX_SUSPECTS; i++) {
		const struct lsd_peer *peer = lk.hot_tx[i].peer;

		snprintf(lk.slow_tx[lk.n_slow_tx++], LS_NAME_LEN, "%s", peer->name);
		lsd_event("host.slow_sender", LSD_EV_WARNING,
			  json_pack("{s:s, s:f, s:i, s:i}", "peer", peer->name, "queue_us",
				    (double)lk.hot_tx[i].q / 1e3, "paths", peer->n_paths,
				    "cool_peers", (int)lk.cool));
	}
}

/* The walk until the TSC end: whether it reached the last peer. */
static bool
walk(uint64_t end)
{
	uint64_t now = rte_rdtsc(), fresh = rte_get_tsc_hz();

	while (lk.cursor < lsd_peer_count()) {
		unsigned int i = lk.cursor++;
		const struct lsd_peer *peer = lsd_peer_at(i);

		lsd_peer_prefetch_ahead(i);
		if (LOAD(peer->resolved)) {
			gather_peer(i, peer, now, fresh);
			sender_peer(i, peer);
		}
		if ((lk.cursor & 15) == 0 && (now = rte_rdtsc()) > end)
			return false;
	}
	return true;
}

bool
lsd_links_poll(void)
{
	uint64_t now = rte_rdtsc();

	if (!lk.in_pass) {
		if (now < lk.next)
			return false;
		lk.next = now + rte_get_tsc_hz() / 1000 * LINKS_EVERY_MS;
		pass_begin();
	} else if (lk.removals != lsd_peer_removals()) {
		pass_begin();   /* the peers it holds may be freed */
	}
	if (!walk(now + rte_get_tsc_hz() / 1000000 * LINKS_SLICE_US))
		return true;
	lk.in_pass = false;
	lk.last_dead = lk.nd[K_DEAD];
	lk.last_n_l = lk.n_l;
	lsd_linkq_solve(&lk.l[0].a, &lk.l[0].b, sizeof(lk.l[0]), lk.n_l);
	if (lk.nd[K_DEAD] > 0 || lk.nd[K_HOT] > 0 || lk.n_s > 0)
		infer();
	senders();
	return false;
}

/* links: what the last pass concluded. */
static void
cmd_links(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *a = json_array();

	if (lk.weak == NULL)
		lk.weak = json_array();
	for (uint32_t i = 0; i < lk.n_s; i++) {
		json_t *e = json_deep_copy(lk.s[i].ev);

		json_object_set_new(e, "kind", json_string(lk.s[i].kind == K_DEAD ? "dead" : "hot"));
		json_array_append_new(a, e);
	}
	ls_ctl_reply_ok(req, json_pack("{s:o, s:O, s:i, s:i, s:i}", "suspects", a,
				       "weak", lk.weak,
				       "paths_down_traced", (int)lk.last_dead,
				       "unexplained", (int)lk.last_unexplained,
				       "links_known", (int)lk.last_n_l));
}

void
lsd_links_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "links", "{}",
			     "suspect links: what the dead paths' traces have in common "
			     "that no live path crosses", "", cmd_links, NULL);
}
