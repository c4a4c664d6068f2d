/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contention avoidance (bridge.balance): when a path toward a destination
 * turns hot -- its forward queueing builds past hot_us -- while some of our
 * flows cross it, part of them move to a path that is cool. The decisions
 * are lib/balance's (unit-tested without the EAL); this file is the glue.
 *
 * What it reads. Each probe path's forward queueing (sender.c: the synced
 * one-way delay above its floor) stands for the data paths whose route is
 * its own (links.c pairs them from the route map: lsd_peer_path.data_paths).
 * A data path no probe stands for has no queueing: it is never a target
 * (a path nobody watches would gather every flow that moves).
 *
 * Where it runs. A round per destination (a peer whose probe paths stand
 * for data paths) every interval_us on the control thread. Our flows are
 * counted only when a round says a hot path is due to act: one pass over
 * the flow table (plain loads of the lcore's lines, as `flows` does), at
 * most once per settle_us per destination. The move itself is a message to
 * the bridge lcore (LSD_MSG_BALANCE), which checks each flow again (still
 * on that path, same destination, the target allowed by its policy) and
 * rewrites its path; nothing is added to the per-frame path.
 *
 * What a flow may do. Its policy's paths, noted by the lcore when it is
 * classified (bal_allowed, 8 bytes per flow, only with balance on): spread
 * and avoid rules leave a choice, pin and keep none. A flow that failover
 * moved away stays where failover put it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "bridge.h"
#include "ls_balance.h"
#include "ls_ctl.h"

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define BAL_DESTS 1024         /* destinations balanced (more are counted, skipped) */
#define BAL_ACTIVE_MS 1000     /* a flow with no frame for this long is not counted */
#define BAL_MAX_MOVE 64        /* flows one move may take */

struct bal_dest {
	struct ls_balance s;
	char peer[LS_NAME_LEN];
	struct ls_addr addr;       /* the peer's */
	uint8_t dst[16];           /* as flows key it (ls_flow_key_addr) */
	uint64_t moves, flows_moved, no_target, not_ours;
	int64_t q[LS_BALANCE_MAX_PATHS]; /* the last round's queueing (for `balance`) */
};

struct lsd_bal_order {
	uint32_t n;
	uint64_t from;             /* the hot route's data paths */
	uint8_t to;
	uint8_t dst[16];
	int32_t idx[BAL_MAX_MOVE];
};

static struct {
	struct ls_balance_params p;
	struct rte_hash *h;        /* lsd_addr_key -> index in d */
	struct bal_dest *d;
	uint32_t n_d;
	uint64_t next, every;      /* TSC */
	uint64_t rounds, scans, dests_full, orders_failed;
} bal;

/* ---- lcore ------------------------------------------------------------ */

int
lsd_bal_create(struct lsd_bridge *b, int socket)
{
	if (!lsd.cfg.bridge.balance.enabled || b->n_paths < 2)
		return 0;
	b->bal_allowed = rte_zmalloc_socket("lsd_bal", sizeof(uint64_t) * lsd.cfg.bridge.max_flows,
					    64, socket);
	return b->bal_allowed == NULL ? -ENOMEM : 0;
}

void
lsd_bal_free(struct lsd_bridge *b)
{
	rte_free(b->bal_allowed);
	b->bal_allowed = NULL;
}

/* The paths flow idx's policy lets it take, at its classification. */
void
lsd_bal_classified(struct lsd_bridge *b, int32_t idx, const struct ls_path_policy *pp)
{
	uint64_t all = b->n_paths >= 64 ? ~0ULL : (1ULL << b->n_paths) - 1;

	b->bal_allowed[idx] = pp->mode == LS_PATH_SPREAD ? pp->paths & all :
			      pp->mode == LS_PATH_AVOID ? ~pp->paths & all : 0;
}

/* LSD_MSG_BALANCE: move the order's flows that still qualify. */
int
lsd_bal_apply(struct lsd_bridge *b, const void *arg)
{
	const struct lsd_bal_order *o = arg;
	int moved = 0;

	if (b->bal_allowed == NULL)
		return -ENOENT;
	for (uint32_t i = 0; i < o->n; i++) {
		struct ls_flow *f = ls_flow_at(b->flows, o->idx[i]);

		if (!f->used || f->dir != 0 || f->away || f->path >= 64 || !(o->from >> f->path & 1) ||
		    !(b->bal_allowed[o->idx[i]] >> o->to & 1) ||
		    memcmp(ls_flow_key_at(b->flows, o->idx[i])->dst, o->dst, 16) != 0)
			continue;
		f->path = o->to;
		b->st.balanced++;
		moved++;
	}
	return moved;
}

/* ---- control thread ----------------------------------------------------- */

int
lsd_bal_ctl_init(unsigned int lcore)
{
	const struct ls_conf_balance *c = &lsd.cfg.bridge.balance;
	struct rte_hash_parameters hp = {
		.name = "lsd_bal_dests", .entries = BAL_DESTS * 2,
		.key_len = sizeof(struct lsd_addr_key), .hash_func = rte_jhash,
		.socket_id = SOCKET_ID_ANY,
	};
	uint64_t hz = rte_get_tsc_hz();

	const struct lsd_bridge *b = lsd_bridges[lcore];

	if (b == NULL || b->bal_allowed == NULL)
		return 0;
	/* unset timers follow the probes: a decision needs several samples
	 * of a path, so it waits for ten intervals, and a round per half */
	uint64_t probe_ns = (uint64_t)lsd.cfg.probe.interval_us * 1000;

	bal.p = (struct ls_balance_params){
		.hot_ns = (int64_t)(c->hot_us ? c->hot_us : lsd.cfg.links.hot_us) * 1000,
		.runs = c->runs,
		.jitter_ns = c->jitter_us ? (uint64_t)c->jitter_us * 1000 : 10 * probe_ns,
		.settle_ns = c->settle_us ? (uint64_t)c->settle_us * 1000 : 10 * probe_ns,
		.n_paths = b->n_paths,
		/* a probe interval: the samples of a route come from several
		 * probe paths, a fraction of an interval apart, each with the
		 * lab's (or the host's) scheduling noise */
		.span_ns = probe_ns,
	};
	bal.every = hz / 1000000 * (c->interval_us ? c->interval_us :
				    RTE_MAX(lsd.cfg.probe.interval_us / 2, 10u));
	bal.h = rte_hash_create(&hp);
	bal.d = calloc(BAL_DESTS, sizeof(*bal.d));
	return bal.h == NULL || bal.d == NULL ? -ENOMEM : 0;
}

void
lsd_bal_ctl_fini(void)
{
	rte_hash_free(bal.h);
	free(bal.d);
	memset(&bal, 0, sizeof(bal));
}

static struct bal_dest *
dest_of(const struct lsd_peer *peer)
{
	struct lsd_addr_key k;
	void *v;
	struct bal_dest *d;

	lsd_addr_key(&peer->addr, &k);
	if (rte_hash_lookup_data(bal.h, &k, &v) >= 0)
		return v;
	if (bal.n_d == BAL_DESTS) {
		bal.dests_full++;
		return NULL;
	}
	d = &bal.d[bal.n_d++];
	ls_balance_init(&d->s, rte_rdtsc() ^ ((uint64_t)lsd.cfg.node_id << 32) ^ bal.n_d);
	snprintf(d->peer, sizeof(d->peer), "%s", peer->name);
	d->addr = peer->addr;
	ls_flow_key_addr(&peer->addr, d->dst);
	rte_hash_add_key_data(bal.h, &k, d);
	return d;
}

/* Each data path's latest queueing sample: the newest of the probe paths
 * that stand for it (q < 0 where none has one younger than 4 intervals: a
 * probe path gone silent ages out), and its route: the data paths that
 * cross the same routers (a probe path's data_paths), which share its
 * links and so count as one when our flows are counted. @return the paths
 * some probe stands for. */
static uint64_t
samples(const struct lsd_peer *peer, struct ls_balance_sample *x, uint64_t *route, uint64_t now)
{
	uint64_t hz = rte_get_tsc_hz(), max_age = hz / 1000000 * 4 * (uint64_t)peer->interval_us;
	uint64_t covered = 0, at[LS_BALANCE_MAX_PATHS] = {0};

	for (uint16_t j = 0; j < LS_BALANCE_MAX_PATHS; j++) {
		x[j] = (struct ls_balance_sample){.q_ns = -1};
		route[j] = 1ULL << j;
	}
	for (uint16_t p = 0; p < peer->n_paths; p++) {
		const struct lsd_peer_path *pp = &peer->path[p];
		uint64_t dp = LOAD(pp->data_paths), qt = LOAD(pp->q_tsc);
		int64_t v = LOAD(pp->q_ns);
		/* the sample's time is when its probe left: its arrival comes
		 * later the deeper the queue, which would flatten the slope
		 * (0.7 of the time passing reads as 0.41 by arrivals) */
		uint64_t sent = qt - RTE_MIN(qt, (uint64_t)LOAD(pp->q_back_us) * (hz / 1000000));

		for (; dp != 0; dp &= dp - 1) {
			unsigned int j = (unsigned int)__builtin_ctzll(dp);

			if (j >= bal.p.n_paths)
				continue;
			covered |= 1ULL << j;
			route[j] |= LOAD(pp->data_paths);
			if (qt == 0 || now - qt >= max_age || sent <= at[j])
				continue;
			at[j] = sent;
			x[j] = (struct ls_balance_sample){
				.q_ns = v, .t_ns = (uint64_t)((double)sent * 1e9 / (double)hz)};
		}
	}
	return covered;
}

/* Our active flows to d on one lcore's table, per path, and those on the
 * hot route that may go somewhere (appended to cand). @return flows to d. */
static uint32_t
scan_flows(const struct lsd_bridge *b, const struct bal_dest *d, const uint64_t *route,
	   int hot, uint32_t *per, int32_t *cand, uint32_t *n, uint64_t *allowed)
{
	uint32_t cap = ls_flow_capacity(b->flows), mine = 0;
	uint32_t now_ms = (uint32_t)(rte_rdtsc() / b->ms_div);

	for (uint32_t i = 0; i < cap; i++) {
		const struct ls_flow *f = ls_flow_at(b->flows, (int32_t)i);
		uint8_t path = LOAD(f->path);
		uint64_t al;

		if (!LOAD(f->used) || f->dir != 0 || path >= bal.p.n_paths || f->away ||
		    now_ms - LOAD(f->last_ms) > BAL_ACTIVE_MS ||
		    memcmp(ls_flow_key_at(b->flows, (int32_t)i)->dst, d->dst, 16) != 0)
			continue;
		per[path]++;
		mine++;
		al = LOAD(b->bal_allowed[i]);
		if ((route[hot] >> path & 1) && al != 0 && *n < BAL_MAX_MOVE) {
			cand[(*n)++] = (int32_t)i;
			*allowed |= al;
		}
	}
	return mine;
}

/* Our active flows to d per route (each path counts those of every path
 * of its route), over every data-path lcore, and those on the hot route
 * that may go somewhere (their allowed paths, or-ed, in *allowed). The
 * candidates are those of the lcore with the most flows to d (*li): a host
 * pair's flows live on one lcore (bridge_spread.c), so only a host with
 * several addresses splits a destination's flows. */
static uint32_t
count_flows(const struct bal_dest *d, const uint64_t *route, int hot,
	    struct ls_balance_path *in, int32_t *cand, uint64_t *allowed, unsigned int *li)
{
	uint32_t n = 0, best = 0, per[LS_BALANCE_MAX_PATHS] = {0};

	*allowed = 0;
	*li = 0;
	bal.scans++;
	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		int32_t c[BAL_MAX_MOVE];
		uint64_t al = 0;
		uint32_t k = 0, mine;

		if (lsd_bset.b[i]->bal_allowed == NULL)
			continue;
		mine = scan_flows(lsd_bset.b[i], d, route, hot, per, c, &k, &al);
		if (mine > best) {
			best = mine;
			*li = i;
			n = k;
			*allowed = al;
			memcpy(cand, c, sizeof(c[0]) * k);
		}
	}
	for (uint16_t j = 0; j < bal.p.n_paths; j++)
		for (uint64_t m = route[j]; m != 0; m &= m - 1)
			in[j].flows += per[__builtin_ctzll(m)];
	return n;
}

static void
log_move(const struct bal_dest *d, const struct ls_balance_move *mv, int moved)
{
	char a[64];

	ls_addr_fmt(&d->addr, a, sizeof(a));
	lsd_event("flows.rebalanced", LSD_EV_INFO,
		  json_pack("{s:s, s:s, s:i, s:i, s:i, s:f, s:f}", "peer", d->peer, "dst", a,
			    "path", mv->from, "to", mv->to, "flows_moved", moved,
			    "queue_us", mv->q_from / 1e3, "to_queue_us", mv->q_to / 1e3));
}

/* Move what pick decided: the first mv->flows candidates the target
 * allows, on data-path lcore li. */
static void
order(struct bal_dest *d, const struct ls_balance_move *mv, uint64_t route, const int32_t *cand,
      uint32_t n, unsigned int li)
{
	const struct lsd_bridge *b = lsd_bset.b[li];
	struct lsd_bal_order *o = calloc(1, sizeof(*o));
	int rc;

	if (o == NULL) {
		bal.orders_failed++;
		return;
	}
	o->from = route;
	o->to = mv->to;
	memcpy(o->dst, d->dst, 16);
	for (uint32_t i = 0; i < n && o->n < mv->flows; i++)
		if (LOAD(b->bal_allowed[cand[i]]) >> mv->to & 1)
			o->idx[o->n++] = cand[i];
	rc = lsd_msg_call(lsd_bset.lcore[li], LSD_MSG_BALANCE, o);
	if (rc == -ETIMEDOUT) {
		bal.orders_failed++;   /* the lcore may still read it: leaked */
		return;
	}
	if (rc > 0) {
		d->moves++;
		d->flows_moved += (uint64_t)rc;
		log_move(d, mv, rc);
	}
	free(o);
}

static void
round_of(const struct lsd_peer *peer, uint64_t now, uint64_t now_ns)
{
	struct ls_balance_sample x[LS_BALANCE_MAX_PATHS];
	struct ls_balance_path in[LS_BALANCE_MAX_PATHS];
	uint64_t route[LS_BALANCE_MAX_PATHS];
	int32_t cand[BAL_MAX_MOVE];
	struct ls_balance_move mv;
	struct bal_dest *d;
	uint64_t allowed;
	unsigned int li;
	uint32_t n;
	int hot;

	if (!LOAD(peer->resolved) || samples(peer, x, route, now) == 0 ||
	    (d = dest_of(peer)) == NULL)
		return;
	for (uint16_t j = 0; j < LS_BALANCE_MAX_PATHS; j++)
		d->q[j] = x[j].q_ns;
	hot = ls_balance_observe(&d->s, &bal.p, x, now_ns);
	if (hot < 0)
		return;
	for (uint16_t j = 0; j < LS_BALANCE_MAX_PATHS; j++)
		in[j] = (struct ls_balance_path){.q_ns = x[j].q_ns};
	n = count_flows(d, route, hot, in, cand, &allowed, &li);
	if (ls_balance_pick(&d->s, &bal.p, in, hot, allowed, now_ns, &mv) == 1)
		order(d, &mv, route[hot], cand, n, li);
	else if (in[hot].flows == 0)
		d->not_ours++;
	else
		d->no_target++;
	/* the hot route's other paths are the same links: they wait too */
	for (uint64_t m = route[hot]; m != 0; m &= m - 1)
		ls_balance_cool(&d->s, (uint16_t)__builtin_ctzll(m));
}

/* Every control-loop pass: a round per destination every interval_us. */
void
lsd_bal_poll(void)
{
	uint64_t now = rte_rdtsc(), now_ns;
	unsigned int n;

	if (bal.d == NULL || now < bal.next)
		return;
	bal.next = now + bal.every;
	bal.rounds++;
	now_ns = (uint64_t)((double)now * 1e9 / (double)rte_get_tsc_hz());
	n = lsd_peer_count();
	for (unsigned int i = 0; i < n; i++)
		round_of(lsd_peer_at(i), now, now_ns);
}

/* ---- what the operator sees ---------------------------------------------- */

json_t *
lsd_bal_json(void)
{
	uint64_t moves = 0, flows = 0, no_target = 0, not_ours = 0;

	if (bal.d == NULL)
		return json_pack("{s:b}", "enabled", false);
	for (uint32_t i = 0; i < bal.n_d; i++) {
		moves += bal.d[i].moves;
		flows += bal.d[i].flows_moved;
		no_target += bal.d[i].no_target;
		not_ours += bal.d[i].not_ours;
	}
	return json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:I, s:I}", "enabled", true,
			 "moves", (json_int_t)moves, "flows_moved", (json_int_t)flows,
			 "no_target", (json_int_t)no_target, "not_ours", (json_int_t)not_ours,
			 "rounds", (json_int_t)bal.rounds, "flow_scans", (json_int_t)bal.scans,
			 "destinations", (int)bal.n_d,
			 "destinations_full", (json_int_t)bal.dests_full,
			 "orders_failed", (json_int_t)bal.orders_failed);
}

/* balance: per destination, each path's queueing and state. */
static void
cmd_balance(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *a = json_array();

	if (bal.d == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "balance is off (bridge.balance)");
		json_decref(a);
		return;
	}
	for (uint32_t i = 0; i < bal.n_d; i++) {
		const struct bal_dest *d = &bal.d[i];
		json_t *paths = json_array();

		for (uint16_t j = 0; j < bal.p.n_paths; j++)
			json_array_append_new(paths, json_pack(
				"{s:i, s:o, s:o, s:o, s:i, s:b}", "path", j,
				"queue_us", d->q[j] < 0 ? json_null() : json_real(d->q[j] / 1e3),
				/* what a target is chosen by (ls_balance_pick) */
				"queue_mean_us", d->q[j] < 0 || d->s.path[j].t_seen == 0 ? json_null() :
				json_real(d->s.path[j].q_slow / 1e3),
				"queue_dev_us", d->q[j] < 0 || d->s.path[j].t_seen == 0 ? json_null() :
				json_real(d->s.path[j].q_dev / 1e3),
				"building_runs", d->s.path[j].runs, "hot", d->s.path[j].act_at != 0));
		json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:I, s:I, s:o}", "peer", d->peer,
						   "moves", (json_int_t)d->moves,
						   "flows_moved", (json_int_t)d->flows_moved,
						   "no_target", (json_int_t)d->no_target,
						   "not_ours", (json_int_t)d->not_ours, "paths", paths));
	}
	ls_ctl_reply_ok(req, json_pack("{s:o, s:o}", "summary", lsd_bal_json(), "destinations", a));
}

int
lsd_bal_register(struct ls_ctl *ctl)
{
	return ls_ctl_register_keys(ctl, "balance", "", "contention avoidance: per destination "
				    "each path's queueing, moves made", "", cmd_balance, NULL);
}
