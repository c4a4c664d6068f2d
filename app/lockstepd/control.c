/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread and the commands about the mesh as a whole: serves the
 * control socket (lib/ctl, unixctl style), adds and removes peers, folds
 * per-second path histograms into rolling windows, and answers status,
 * peers, paths, path, peer.add/del, probe.set and stats.reset. The other
 * rooms register their own commands here at start (clock, sync, log,
 * capture), next to the state they serve.
 *
 * It never blocks an lcore. Reads of lcore state are relaxed loads of
 * counters and the lock-free histogram hand-off of lib/pathstats; writes go
 * through peer.c's messages. A peer's life: peer_create (peer.c allocates,
 * sync.c attaches its estimators), installed on its lcore, and freed only
 * after the lcore has given it back.
 *
 * Every command handler ends in exactly one reply; argument errors name the
 * argument and say what was expected. lib/ctl rejects unknown argument keys
 * before a handler runs.
 */
#include <errno.h>
#include <sched.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_timer.h>

#include "bridge.h"
#include "lockstepd.h"
#include "ls_ctl.h"

static const char *const disp_names[LSD_RX_DISP_MAX] = {
#define DISP_NAME(sym, name) name,
	LSD_RX_DISP_LIST(DISP_NAME)
#undef DISP_NAME
};

static struct {
	struct ls_ctl *ctl;
	pthread_t tid;
	uint64_t start_tsc;
	bool trim_due;             /* peers freed since the last malloc_trim */
	uint64_t next_trim;        /* TSC: malloc_trim at most once a second */
} control;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* ---- peers ------------------------------------------------------------ */

/* A new peer with its clock-sync state (sync.c), or NULL. */
static struct lsd_peer *
peer_create(const struct ls_conf_peer *cp)
{
	struct lsd_peer *peer = lsd_peer_new(cp);

	if (peer != NULL && lsd_sync_peer_attach(peer) != 0) {
		lsd_peer_free(peer);
		return NULL;
	}
	return peer;
}

static void
peer_destroy(struct lsd_peer *peer)
{
	if (peer == NULL)
		return;
	lsd_sync_peer_detach(peer);
	lsd_peer_free(peer);
}

/*
 * Hand a created peer to its lcore. On failure, time-out included, it is
 * freed: a message the lcore did not take in time is never applied
 * (lsd_msg_send), so the peer is either installed or nowhere.
 */
static int
peer_install(struct lsd_peer *peer)
{
	int rc = lsd_peer_install(peer);

	if (rc < 0)
		peer_destroy(peer);
	return rc;
}

/* Stop probing peer idx and free it: 0, or -ENOMEM / -ETIMEDOUT with the
 * peer still installed. Freed peers' memory goes back to the system
 * (malloc_trim from the control loop, ctl_thread). */
static int
peer_remove(unsigned int idx)
{
	struct lsd_peer *peer = lsd_peer_at(idx);
	int rc = lsd_peer_uninstall(idx);

	if (rc == 0) {
		peer_destroy(peer);
		control.trim_due = true;
	}
	return rc;
}

/* The config's peers, LSD_PEER_BATCH at a time (lsd_peer_install_batch):
 * 10k peers start in a second or two, not one lcore round trip each. */
static int
add_config_peers(void)
{
	static struct lsd_peer *batch[LSD_PEER_BATCH];
	static int rc[LSD_PEER_BATCH];

	for (unsigned int i = 0; i < lsd.cfg.n_peers; i += LSD_PEER_BATCH) {
		unsigned int n = RTE_MIN(lsd.cfg.n_peers - i, (unsigned int)LSD_PEER_BATCH), k;

		for (k = 0; k < n; k++) {
			batch[k] = peer_create(&lsd.cfg.peers[i + k]);
			if (batch[k] == NULL)
				break;
		}
		if (k < n) {
			while (k-- > 0)
				peer_destroy(batch[k]);
			return -ENOMEM;
		}
		lsd_peer_install_batch(batch, n, rc);
		for (k = 0; k < n; k++) {
			if (rc[k] == 0)
				continue;
			LSD_LOG(ERR, "%s: peers[%u] (%s): cannot add: %s", lsd.cfg.file, i + k,
				lsd.cfg.peers[i + k].name, strerror(-rc[k]));
			for (unsigned int j = k; j < n; j++)
				if (rc[j] < 0)
					peer_destroy(batch[j]);
			return rc[k];
		}
	}
	return 0;
}

/* Whether the running peer idx is what cp configures. */
static bool
peer_same(const struct lsd_peer *p, const struct ls_conf_peer *cp)
{
	uint16_t paths = cp->paths ? cp->paths : lsd.cfg.probe.paths;
	uint32_t iv = cp->interval_us ? cp->interval_us : lsd.cfg.probe.interval_us;

	return ls_addr_eq(&p->addr, &cp->addr) && paths == p->n_paths && iv == p->interval_us &&
	       strcmp(lsd.ports[p->port_idx].conf->name, cp->port) == 0 &&
	       p->asym_ns == cp->asym_ns && p->static_mac == cp->has_mac &&
	       p->dscp_conf == cp->dscp && p->pcp_conf == cp->pcp;
}

/*
 * SIGHUP: the config file's peers[] become the peer list (peers that went
 * are removed, new ones added, changed ones replaced, the rest keep their
 * windows), then the list is saved (peers_file). Everything else in the
 * file takes effect at the next start, as the log says. A file that does
 * not load changes nothing.
 */
static void
reload_peers(void)
{
	struct ls_config nc;
	char err[LS_ERR_LEN];
	unsigned int added = 0, removed = 0;

	if (ls_config_load(lsd.cfg.file, &nc, err, sizeof(err)) < 0) {
		LSD_LOG(ERR, "SIGHUP: %s (nothing changed)", err);
		return;
	}
	for (unsigned int i = lsd_peer_count(); i-- > 0;) {
		const struct lsd_peer *p = lsd_peer_at(i);
		unsigned int j;

		for (j = 0; j < nc.n_peers && strcmp(nc.peers[j].name, p->name) != 0; j++)
			;
		if ((j == nc.n_peers || !peer_same(p, &nc.peers[j])) && peer_remove(i) == 0)
			removed++;
	}
	for (unsigned int j = 0; j < nc.n_peers; j++) {
		struct lsd_peer *peer;

		if (lsd_peer_find(nc.peers[j].name) >= 0)
			continue;
		peer = peer_create(&nc.peers[j]);
		if (peer == NULL || peer_install(peer) < 0)
			LSD_LOG(ERR, "SIGHUP: peer %s not added", nc.peers[j].name);
		else
			added++;
	}
	ls_config_free(&nc);
	lsd_peers_save();
	LSD_LOG(INFO, "SIGHUP: peers from %s: %u removed or changed, %u added, %u now; other "
		"settings take effect at the next start", lsd.cfg.file, removed, added,
		lsd_peer_count());
}

/* ---- JSON helpers ----------------------------------------------------- */

static json_t *
addr_json(const struct ls_addr *a)
{
	char buf[LS_ADDR_STRLEN];

	return a->family ? json_string(ls_addr_fmt(a, buf, sizeof(buf))) : json_null();
}

static json_t *
prefix_json(const struct ls_prefix *p)
{
	char buf[LS_ADDR_STRLEN], out[LS_ADDR_STRLEN + 8];

	if (!p->addr.family)
		return json_null();
	snprintf(out, sizeof(out), "%s/%u", ls_addr_fmt(&p->addr, buf, sizeof(buf)), p->plen);
	return json_string(out);
}

static json_t *
ns_or_null(const struct ls_path_dist *d, int64_t v)
{
	return d->count ? json_integer(v) : json_null();
}

static json_t *
dist_json(const struct ls_path_dist *d)
{
	return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o}",
			 "count", (json_int_t)d->count,
			 "min", ns_or_null(d, d->min), "p50", ns_or_null(d, d->p50),
			 "p99", ns_or_null(d, d->p99), "p999", ns_or_null(d, d->p999),
			 "max", ns_or_null(d, d->max),
			 "mean", d->count ? json_real(d->mean) : json_null());
}

static const char *
path_state(const struct lsd_peer *peer, const struct lsd_peer_path *pp)
{
	if (!LOAD(peer->resolved))
		return "resolving";
	if (LOAD(pp->state_down))
		return "down";
	if (LOAD(pp->live.c.received) == 0)
		return "pending";
	return "up";
}

static const char *
peer_state(const struct lsd_peer *peer)
{
	unsigned int down = 0;

	if (!LOAD(peer->resolved))
		return "resolving";
	for (uint16_t i = 0; i < peer->n_paths; i++)
		down += LOAD(peer->path[i].state_down) ? 1 : 0;
	if (down == peer->n_paths)
		return "down";
	return down ? "degraded" : "up";
}

static int
parse_window(json_t *args, enum ls_path_win *w, struct ls_ctl_req *req)
{
	json_t *v = json_object_get(args, "window");
	const char *s;

	*w = LS_WIN_10S;
	if (v == NULL)
		return 0;
	s = json_string_value(v);
	for (int i = 0; s != NULL && i < LS_WIN_MAX; i++) {
		if (strcmp(s, ls_path_win_name((enum ls_path_win)i)) == 0) {
			*w = (enum ls_path_win)i;
			return 0;
		}
	}
	ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "window: expected \"1s\", \"10s\" or \"60s\"");
	return -1;
}

/* ---- commands --------------------------------------------------------- */

/* What a fleet audit compares across nodes: the link's speed and duplex,
 * the configured MTU, and the firmware the PMD reports (null where it has
 * none: virtual devices). */
static void
port_facts(json_t *o, const struct lsd_port *p, const struct rte_eth_link *link)
{
	char fw[64];
	int rc = rte_eth_dev_fw_version_get(p->port_id, fw, sizeof(fw));

	json_object_set_new(o, "speed_mbps",
			    link->link_speed == RTE_ETH_SPEED_NUM_NONE ||
			    link->link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? json_null() :
			    json_integer(link->link_speed));
	json_object_set_new(o, "duplex", json_string(link->link_duplex == RTE_ETH_LINK_FULL_DUPLEX ?
						     "full" : "half"));
	json_object_set_new(o, "mtu", json_integer(p->conf->mtu));
	json_object_set_new(o, "fw_version", rc == 0 ? json_string(fw) : json_null());
}

static void
lcore_totals(struct lsd_lcore_stats *t)
{
	unsigned int l;

	memset(t, 0, sizeof(*t));
	RTE_LCORE_FOREACH(l) {
		const uint64_t *src = (const uint64_t *)&lsd.lcores[l].st;
		uint64_t *dst = (uint64_t *)t;

		for (size_t i = 0; i < sizeof(*t) / sizeof(uint64_t); i++)
			dst[i] += __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
}

static void
cmd_status(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	struct lsd_lcore_stats t;
	struct lsd_capture_status cs;
	json_t *ports = json_array(), *counters = json_object();
	unsigned int n_paths = 0;
	char mac[LS_MAC_STRLEN];

	for (unsigned int i = 0; i < lsd.n_ports; i++) {
		const struct lsd_port *p = &lsd.ports[i];
		struct rte_eth_link link;
		struct rte_eth_stats s;
		json_t *o;

		memset(&s, 0, sizeof(s));
		memset(&link, 0, sizeof(link));
		rte_eth_stats_get(p->port_id, &s);
		rte_eth_link_get_nowait(p->port_id, &link);
		o = json_pack(
			"{s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:i, s:s, s:b, s:I, s:I, s:I}",
			"name", p->conf->name, "dev", p->conf->dev, "port_id", p->port_id,
			"mac", ls_mac_fmt(&p->mac, mac, sizeof(mac)),
			"ipv4", prefix_json(&p->v4), "ipv6", prefix_json(&p->v6),
			"vlan", p->vlan ? json_integer(p->vlan) : json_null(),
			"lcore", (int)p->lcore, "driver", p->driver,
			"link_up", link.link_status == RTE_ETH_LINK_UP,
			"rx_pkts", (json_int_t)s.ipackets, "tx_pkts", (json_int_t)s.opackets,
			"rx_missed", (json_int_t)s.imissed);
		port_facts(o, p, &link);
		json_array_append_new(ports, o);
	}
	for (unsigned int i = 0; i < lsd_peer_count(); i++)
		n_paths += lsd_peer_at(i)->n_paths;
	lcore_totals(&t);
	json_object_set_new(counters, "rx_pkts", json_integer((json_int_t)t.rx_pkts));
	for (int i = 0; i < LSD_RX_DISP_MAX; i++)
		json_object_set_new(counters, disp_names[i], json_integer((json_int_t)t.disp[i]));
#define C(f) json_object_set_new(counters, #f, json_integer((json_int_t)t.f))
	C(tx_probes); C(tx_replies); C(tx_arp); C(tx_nd); C(tx_dropped);
	C(alloc_failed); C(probes_unresolved); C(rl_overflow); C(idle_sleeps);
	C(tlv_unknown); C(tlv_malformed); C(foreign_replies);
	C(sync_recs); C(sync_dropped); C(rl_evicted); C(tx_trace); C(route_dropped);
	C(tx_vlan_failed); C(tx_mtu); C(jumbo_copied); C(sync_filled);
	C(sync_unanswerable);
#undef C
	json_object_set_new(counters, "memif_guard_waits", json_integer((json_int_t)ls_app_gate_waits()));
	lsd_capture_status(&cs);
	ls_ctl_reply_ok(req, json_pack(
		"{s:s, s:I, s:s, s:f, s:o, s:o, s:i, s:i, s:o, s:{s:I, s:I, s:b}, s:{s:b, s:s, s:I, s:I, s:I}}",
		"node", lsd.cfg.node_name, "node_id", (json_int_t)lsd.cfg.node_id,
		"version", "0.1.0",
		"uptime_s", (double)(rte_rdtsc() - control.start_tsc) / (double)rte_get_tsc_hz(),
		"clock", lsd_clock_json(), "ports", ports,
		"n_peers", (int)lsd_peer_count(), "n_paths", (int)n_paths, "counters", counters,
		"reflector", "reflected", (json_int_t)t.disp[LSD_RX_REFLECTED],
		"rate_limited", (json_int_t)t.disp[LSD_RX_RATE_LIMITED],
		"enabled", lsd.cfg.reflector.enabled,
		"capture", "active", cs.active, "file", cs.file,
		"packets", (json_int_t)cs.packets, "bytes", (json_int_t)cs.bytes,
		"dropped", (json_int_t)cs.dropped));
}

static void
cmd_peers(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *arr = json_array();
	char mac[LS_MAC_STRLEN];

	for (unsigned int i = 0; i < lsd_peer_count(); i++) {
		const struct lsd_peer *peer = lsd_peer_at(i);
		struct ls_path_counters tot = {0}, c;
		struct ls_path_summary s;
		int64_t rtt = 0;
		unsigned int have = 0;

		for (uint16_t k = 0; k < peer->n_paths; k++) {
			ls_path_window_totals(&peer->win[k], &peer->path[k].live, &c);
			tot.sent += c.sent;
			tot.received += c.received;
			tot.lost += c.lost;
			ls_path_window_query(&peer->win[k], &peer->path[k].live, LS_WIN_10S, &s);
			if (s.d[LS_PM_RTT].count) {
				rtt += s.d[LS_PM_RTT].p50;
				have++;
			}
		}
		json_array_append_new(arr, json_pack(
			"{s:s, s:o, s:s, s:i, s:i, s:i, s:o, s:s, s:o, s:I, s:I, s:I, s:f, s:o, s:f}",
			"name", peer->name, "addr", addr_json(&peer->addr),
			"port", lsd.ports[peer->port_idx].conf->name,
			"paths", peer->n_paths, "interval_us", (int)peer->interval_us,
			"dscp", peer->tos >> 2,
			"pcp", lsd.ports[peer->port_idx].vlan ? json_integer(peer->vlan_tci >> 13)
							       : json_null(),
			"state", peer_state(peer),
			"mac", LOAD(peer->resolved) ? json_string(ls_mac_fmt(&peer->mac, mac, sizeof(mac))) : json_null(),
			"sent", (json_int_t)tot.sent, "received", (json_int_t)tot.received,
			"lost", (json_int_t)tot.lost,
			"loss_pct", tot.received + tot.lost ? 100.0 * (double)tot.lost /
				(double)(tot.received + tot.lost) : 0.0,
			"rtt_p50_ns", have ? json_integer(rtt / have) : json_null(),
			"asym_ns", peer->asym_ns));
	}
	ls_ctl_reply_ok(req, arr);
}

static void
cmd_paths(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	enum ls_path_win w;
	json_t *peers;

	if (parse_window(args, &w, req) < 0)
		return;
	peers = json_array();
	for (unsigned int i = 0; i < lsd_peer_count(); i++) {
		const struct lsd_peer *peer = lsd_peer_at(i);
		json_t *paths = json_array();

		for (uint16_t k = 0; k < peer->n_paths; k++) {
			const struct lsd_peer_path *pp = &peer->path[k];
			struct ls_path_summary s;

			ls_path_window_query(&peer->win[k], &pp->live, w, &s);
			json_array_append_new(paths, json_pack(
				"{s:i, s:i, s:s, s:I, s:I, s:I, s:f, s:o, s:o, s:o, s:o}",
				"path", k, "sport", pp->sport, "state", path_state(peer, pp),
				"sent", (json_int_t)s.sent, "received", (json_int_t)s.received,
				"lost", (json_int_t)s.lost, "loss_pct", s.loss_pct,
				"rtt_p50_ns", ns_or_null(&s.d[LS_PM_RTT], s.d[LS_PM_RTT].p50),
				"rtt_p99_ns", ns_or_null(&s.d[LS_PM_RTT], s.d[LS_PM_RTT].p99),
				"fwd_p50_ns", ns_or_null(&s.d[LS_PM_FWD], s.d[LS_PM_FWD].p50),
				"rev_p50_ns", ns_or_null(&s.d[LS_PM_REV], s.d[LS_PM_REV].p50)));
		}
		json_array_append_new(peers, json_pack("{s:s, s:o, s:s, s:o}",
			"name", peer->name, "addr", addr_json(&peer->addr),
			"state", peer_state(peer), "paths", paths));
	}
	ls_ctl_reply_ok(req, json_pack("{s:s, s:s, s:o}", "node", lsd.cfg.node_name,
				       "window", ls_path_win_name(w), "peers", peers));
}

static void
cmd_path(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *name;
	const struct lsd_peer *peer;
	enum ls_path_win only;
	bool one = json_object_get(args, "window") != NULL;
	json_t *paths;
	int idx;

	if (parse_window(args, &only, req) < 0)
		return;
	idx = lsd_peer_arg(req, args, &name);
	if (idx < 0)
		return;
	peer = lsd_peer_at((unsigned int)idx);
	paths = json_array();
	for (uint16_t k = 0; k < peer->n_paths; k++) {
		const struct lsd_peer_path *pp = &peer->path[k];
		struct ls_path_counters c;
		json_t *wins = json_object();

		int64_t floor_f = INT64_MAX, floor_r = INT64_MAX;

		ls_path_window_totals(&peer->win[k], &pp->live, &c);
		/*
		 * Propagation floor per direction: the least one-way delay seen
		 * in any window (60 s at most). Queueing = delay - floor; it
		 * needs synced delays, where a clock offset no longer sits in
		 * both.
		 */
		for (int w = 0; w < LS_WIN_MAX; w++) {
			struct ls_path_summary s;

			ls_path_window_query(&peer->win[k], &pp->live, (enum ls_path_win)w, &s);
			if (s.d[LS_PM_FWD].count > 0 && s.d[LS_PM_FWD].min < floor_f)
				floor_f = s.d[LS_PM_FWD].min;
			if (s.d[LS_PM_REV].count > 0 && s.d[LS_PM_REV].min < floor_r)
				floor_r = s.d[LS_PM_REV].min;
		}
		for (int w = 0; w < LS_WIN_MAX; w++) {
			struct ls_path_summary s;
			json_t *o;

			if (one && w != (int)only)
				continue;
			ls_path_window_query(&peer->win[k], &pp->live, (enum ls_path_win)w, &s);
			o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
				      "sent", (json_int_t)s.sent, "received", (json_int_t)s.received,
				      "lost", (json_int_t)s.lost, "late", (json_int_t)s.late,
				      "reordered", (json_int_t)s.reordered,
				      "duplicated", (json_int_t)s.duplicated, "loss_pct", s.loss_pct);
			for (int m = 0; m < LS_PM_MAX; m++)
				json_object_set_new(o, ls_path_metric_name((enum ls_path_metric)m),
						    dist_json(&s.d[m]));
			if (peer->owd.valid && s.d[LS_PM_FWD].count > 0 && s.d[LS_PM_REV].count > 0)
				json_object_set_new(o, "queue", json_pack(
					"{s:I, s:I, s:I, s:I, s:I, s:I}",
					"fwd_floor", (json_int_t)floor_f,
					"fwd_p50", (json_int_t)(s.d[LS_PM_FWD].p50 - floor_f),
					"fwd_p99", (json_int_t)(s.d[LS_PM_FWD].p99 - floor_f),
					"rev_floor", (json_int_t)floor_r,
					"rev_p50", (json_int_t)(s.d[LS_PM_REV].p50 - floor_r),
					"rev_p99", (json_int_t)(s.d[LS_PM_REV].p99 - floor_r)));
			json_object_set_new(wins, ls_path_win_name((enum ls_path_win)w), o);
		}
		json_t *dp = json_array();
		uint64_t dm = LOAD(pp->data_paths);

		for (unsigned int d = 0; d < 64; d++)
			if (dm >> d & 1)
				json_array_append_new(dp, json_integer(d));
		json_array_append_new(paths, json_pack(
			"{s:i, s:i, s:s, s:i, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:o}",
			"path", k, "sport", pp->sport, "state", path_state(peer, pp),
			"consecutive_lost", (int)LOAD(pp->live.consecutive_lost),
			"counters", "sent", (json_int_t)c.sent, "received", (json_int_t)c.received,
			"lost", (json_int_t)c.lost, "late", (json_int_t)c.late,
			"reordered", (json_int_t)c.reordered, "duplicated", (json_int_t)c.duplicated,
			"unknown", (json_int_t)c.unknown, "windows", wins,
			/* the bridge's data paths on this path's route (failover) */
			"data_paths", dp));
	}
	ls_ctl_reply_ok(req, json_pack("{s:s, s:o, s:s, s:i, s:o, s:o}", "peer", peer->name,
				       "addr", addr_json(&peer->addr), "state", peer_state(peer),
				       "interval_us", (int)peer->interval_us, "paths", paths,
				       "sync", lsd_sync_peer_json(peer)));
}

static void
cmd_peer_add(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	struct ls_conf_peer cp;
	struct lsd_peer *peer;
	char err[LS_ERR_LEN];
	int rc;

	if (ls_config_parse_peer(args, &lsd.cfg, "args", &cp, err, sizeof(err)) < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "%s", err);
		return;
	}
	if (lsd_peer_find(cp.name) >= 0) {
		ls_ctl_reply_error(req, LS_CTL_E_EXISTS, "a peer named \"%s\" exists", cp.name);
		return;
	}
	if (lsd_peer_find_addr(&cp.addr) >= 0) {
		ls_ctl_reply_error(req, LS_CTL_E_EXISTS, "a peer with address %s exists",
				   json_string_value(json_object_get(args, "addr")));
		return;
	}
	if (lsd_peer_count() >= LS_MAX_PEERS) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "peer table full (%d)", LS_MAX_PEERS);
		return;
	}
	peer = peer_create(&cp);
	if (peer == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
		return;
	}
	rc = peer_install(peer);
	if (rc == -ETIMEDOUT) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "lcore did not take the peer in time: "
				   "not added");
		return;
	}
	if (rc < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "lcore refused the peer: %s",
				   strerror(-rc));
		return;
	}
	LSD_LOG(INFO, "peer %s added (%u paths)", peer->name, peer->n_paths);
	ls_ctl_reply_ok(req, json_pack("{s:s, s:o, s:i, s:i, s:b}", "name", peer->name,
				       "addr", addr_json(&peer->addr), "paths", peer->n_paths,
				       "interval_us", (int)peer->interval_us,
				       "saved", lsd_peers_save() == 0));
}

static void
cmd_peer_del(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *name;
	char copy[LS_NAME_LEN];
	int idx, rc;

	if (ls_ctl_arg_str(req, args, "name", "peer name", &name) < 0)
		return;
	idx = lsd_peer_find(name);
	if (idx < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no peer named \"%s\"", name);
		return;
	}
	snprintf(copy, sizeof(copy), "%s", name);
	rc = peer_remove((unsigned int)idx);
	if (rc == -ETIMEDOUT) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "lcore did not give the peer back in "
				   "time: not removed");
		return;
	}
	if (rc < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "%s", strerror(-rc));
		return;
	}
	LSD_LOG(INFO, "peer %s removed", copy);
	ls_ctl_reply_ok(req, json_pack("{s:s, s:b}", "name", copy, "saved", lsd_peers_save() == 0));
}

/* Changing the number of paths replaces the peer: per-path state is sized
 * at allocation, and the lcore must never see a path array change under it. */
static int
peer_replace_paths(unsigned int idx, uint16_t paths, uint32_t interval_us)
{
	struct lsd_peer *old = lsd_peer_at(idx);
	struct ls_conf_peer cp;
	struct lsd_peer *peer;
	int rc;

	memset(&cp, 0, sizeof(cp));
	snprintf(cp.name, sizeof(cp.name), "%s", old->name);
	cp.addr = old->addr;
	snprintf(cp.port, sizeof(cp.port), "%s", lsd.ports[old->port_idx].conf->name);
	cp.paths = paths;
	cp.interval_us = interval_us ? interval_us : old->interval_us;
	cp.mac = old->mac;
	cp.has_mac = old->static_mac;
	cp.asym_ns = old->asym_ns; /* calibration, not a probe setting (issue 27 L7) */
	cp.dscp = old->dscp_conf;
	cp.pcp = old->pcp_conf;
	peer = lsd_peer_new(&cp);
	if (peer == NULL)
		return -ENOMEM;
	rc = peer_remove(idx);
	if (rc < 0) {
		lsd_peer_free(peer);
		return rc;
	}
	/* attached after the old one left, so sync's list keeps the
	 * registry's order */
	if (lsd_sync_peer_attach(peer) != 0) {
		lsd_peer_free(peer);
		return -ENOMEM;
	}
	return peer_install(peer);
}

/* probe.set for one peer: a new path count replaces it, and so does an
 * interval short enough to need longer outstanding-probe rings (they are
 * sized for the interval at allocation); any other interval goes to its
 * lcore. */
static int
probe_set_one(struct lsd_peer *peer, uint64_t paths, uint64_t interval)
{
	int rc;

	if (paths == 0 && interval &&
	    lsd_peer_track_size((uint32_t)interval) > peer->n_track)
		paths = peer->n_paths;
	if (paths && (paths != peer->n_paths ||
		      lsd_peer_track_size((uint32_t)interval) > peer->n_track)) {
		for (unsigned int i = 0; i < lsd_peer_count(); i++)
			if (lsd_peer_at(i) == peer)
				return peer_replace_paths(i, (uint16_t)paths, (uint32_t)interval);
		return 0;
	}
	if (interval == 0)
		return 0;
	rc = lsd_peer_set_interval(peer, (uint32_t)interval);
	/* the lcore set peer->interval_us: sync's windows follow (a failed
	 * resize keeps the old ones, which fit less often; not an error) */
	if (rc == 0 && lsd_sync_peer_interval(peer) != 0)
		LSD_LOG(WARNING, "peer %s: sync kept its old window (out of memory)", peer->name);
	return rc;
}

static void
cmd_probe_set(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	json_t *pv = json_object_get(args, "peer");
	uint64_t interval = 0, paths = 0;
	unsigned int n = lsd_peer_count(), n_todo = 0;
	struct lsd_peer **todo;
	int only = -1;

	if (ls_ctl_arg_uint(req, args, "interval_us", 100, 60000000, &interval) < 0 ||
	    ls_ctl_arg_uint(req, args, "paths", 1, LS_MAX_PATHS, &paths) < 0)
		return;
	if (interval == 0 && paths == 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "give args.interval_us and/or args.paths");
		return;
	}
	if (pv != NULL) {
		if (!json_is_string(pv) || (only = lsd_peer_find(json_string_value(pv))) < 0) {
			ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "args.peer: no such peer");
			return;
		}
	}
	/* Work on a snapshot: replacing a peer reorders the registry. */
	todo = calloc(n ? n : 1, sizeof(*todo));
	if (todo == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		if (only < 0 || (unsigned int)only == i)
			todo[n_todo++] = lsd_peer_at(i);
	for (unsigned int t = 0; t < n_todo; t++) {
		int rc = probe_set_one(todo[t], paths, interval);

		if (rc < 0) {
			ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "peer %s: %s",
					   todo[t]->name, strerror(-rc));
			free(todo);
			return;
		}
	}
	free(todo);
	ls_ctl_reply_ok(req, json_pack("{s:i, s:b}", "updated", (int)n_todo,
				       "saved", lsd_peers_save() == 0));
}

static void
cmd_stats_reset(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < lsd_peer_count(); i++) {
		struct lsd_peer *peer = lsd_peer_at(i);

		for (uint16_t k = 0; k < peer->n_paths; k++, n++)
			ls_path_window_reset(&peer->win[k], &peer->path[k].live);
	}
	ls_ctl_reply_ok(req, json_pack("{s:i}", "reset", (int)n));
}

/* The commands of this room; the others register their own (control_start). */
static void
register_commands(struct ls_ctl *ctl)
{
	ls_ctl_register(ctl, "status", "", "node, ports, clock, counters, capture", cmd_status, NULL);
	ls_ctl_register(ctl, "peers", "", "peers with state and totals", cmd_peers, NULL);
	ls_ctl_register_keys(ctl, "paths", "{[window]}",
			     "the mesh from this node: every peer and path, one window",
			     "window", cmd_paths, NULL);
	ls_ctl_register_keys(ctl, "path", "{peer, [window]}",
			     "one peer: every path, every window (or one), full distributions",
			     "peer window", cmd_path, NULL);
	/* peer.add's arguments are a peer's configuration: ls_config checks them */
	ls_ctl_register(ctl, "peer.add", "{name, addr, [port], [paths], [interval_us]}",
			"start probing a new peer", cmd_peer_add, NULL);
	ls_ctl_register_keys(ctl, "peer.del", "{name}", "stop probing a peer and forget it",
			     "name", cmd_peer_del, NULL);
	ls_ctl_register_keys(ctl, "probe.set", "{[peer], [interval_us], [paths]}",
			     "change probe interval/paths (all peers or one)",
			     "peer interval_us paths", cmd_probe_set, NULL);
	ls_ctl_register(ctl, "stats.reset", "", "zero path counters and windows",
			cmd_stats_reset, NULL);
}

/* ---- the thread ------------------------------------------------------- */

/*
 * Fold every path's histograms into its rolling windows, a pass every
 * 100 ms, in slices of at most COLLECT_SLICE_US so that a command arriving
 * mid-pass waits for a slice, not for 80,000 paths (peer.add p99). A
 * registry change mid-pass may skip a peer or visit one twice: either is
 * harmless, the next pass collects it. Returns whether the pass goes on.
 */
#define COLLECT_SLICE_US 200

static bool
collect_windows(unsigned int *cursor)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz() / 1000000 * COLLECT_SLICE_US;

	while (*cursor < lsd_peer_count()) {
		struct lsd_peer *peer = lsd_peer_at((*cursor)++);

		/* the next peer's lines while this one's are worked on, and the
		 * header of the one after (ls_path_window_prefetch) */
		if (*cursor + 1 < lsd_peer_count())
			rte_prefetch0(lsd_peer_at(*cursor + 1));
		if (*cursor < lsd_peer_count()) {
			const struct lsd_peer *next = lsd_peer_at(*cursor);

			for (uint16_t k = 0; k < next->n_paths; k++)
				ls_path_window_prefetch(&next->win[k], &next->path[k].live);
		}
		for (uint16_t k = 0; k < peer->n_paths; k++)
			ls_path_window_collect(&peer->win[k], &peer->path[k].live);
		if ((*cursor & 15) == 0 && rte_rdtsc() > end)
			return true;
	}
	return false;
}

/*
 * Serve what came in meanwhile. While background passes run the loop
 * without sleeping (several ms at 80k paths), then yield: a client on this
 * core woken by our reply waited behind them for the scheduler's tick (4 ms
 * at HZ 250; ~1% of bench_peers' peer.add calls), and whatever else the
 * host runs here should not wait on our batch work either.
 */
static void
serve_between(bool busy)
{
	ls_ctl_poll(control.ctl, 0);
	if (busy)
		sched_yield();
}

static uint32_t
ctl_thread(void *arg __rte_unused)
{
	uint64_t hz = rte_get_tsc_hz();
	uint64_t next_collect = 0;
	unsigned int cursor = 0;
	bool collecting = false, syncing = false, trains = false, linking = false;

	lsd_clock_tick(rte_rdtsc()); /* first calibration refit a second from now */
	/* Config peers go in from here, once the lcores are polling their rings. */
	if (add_config_peers() < 0) {
		lsd.exit_code = 1;
		lsd.quit = 1;
	} else {
		__atomic_store_n(&lsd.peers_ready, 1, __ATOMIC_RELEASE);
		lsd_notify_ready();
	}
	while (!lsd.quit) {
		uint64_t now;

		/* a millisecond while trains go: each waits TRAIN_GAP_MS for the last */
		if (collecting || syncing || linking)
			serve_between(true);
		else
			ls_ctl_poll(control.ctl, trains ? 1 : 10);
		lsd_metrics_poll();
		lsd_telemetry_poll();
		if (lsd.reload) {
			lsd.reload = 0;
			reload_peers();
		}
		lsd_capture_drain();
		lsd_events_poll();
		lsd_bridge_events_poll();
		lsd_route_poll();
		/* commands between the pieces of work, each a slice of up to
		 * ~200 us: one after all of them waited for their sum */
		serve_between(collecting || syncing || linking);
		linking = lsd_links_poll();
		trains = lsd_train_poll();
		serve_between(collecting || syncing || linking);
		now = rte_rdtsc();
		syncing = lsd_sync_poll(now);
		serve_between(collecting || syncing || linking);
		if (!collecting && now >= next_collect) {
			collecting = true;
			cursor = 0;
			next_collect = now + hz / 10;
		}
		if (collecting)
			collecting = collect_windows(&cursor);
		/* give freed peers' memory back to the system, in one go after
		 * a run of peer.del (a trim per peer walked the heap each time),
		 * and again each second while a trim finds some: what went with
		 * them (route map entries, route.c's prune) goes later */
		if (control.trim_due && now >= control.next_trim) {
			control.trim_due = malloc_trim(0) != 0;
			control.next_trim = now + hz;
		}
		lsd_clock_tick(now);
		lsd_notify_poll(now);
	}
	lsd_notify_stopping();
	return 0;
}

static void *
ctl_thread_start(void *arg)
{
	ctl_thread(arg);
	return NULL;
}

int
lsd_control_start(void)
{
	struct ls_ctl_params cp = {
		.path = lsd.cfg.control.socket,
		.mode = (mode_t)lsd.cfg.control.mode,
		.max_clients = lsd.cfg.control.max_clients,
		.idle_timeout_ms = lsd.cfg.control.idle_timeout_ms,
		.max_request = 65536,
	};
	int rc;

	lsd_notify_init();
	{
		char err[LS_ERR_LEN];

		rc = lsd_peers_restore(err, sizeof(err));
		if (rc < 0) {
			LSD_LOG(ERR, "%s", err);
			return rc;
		}
	}
	rc = lsd_clock_init();
	if (rc == 0)
		rc = lsd_sync_init(lsd_clock_reader(), lsd_clock_query_reader());
	if (rc == 0)
		rc = lsd_events_init();
	if (rc == 0)
		rc = lsd_route_init();
	if (rc < 0)
		return rc;
	control.start_tsc = rte_rdtsc();
	control.ctl = ls_ctl_create(&cp);
	if (control.ctl == NULL) {
		rc = -errno;
		LSD_LOG(ERR, "%s: control.socket: cannot listen on %s: %s", lsd.cfg.file,
		       cp.path, strerror(errno));
		return rc;
	}
	register_commands(control.ctl);
	lsd_clock_register(control.ctl);
	lsd_sync_register(control.ctl);
	lsd_log_register(control.ctl);
	lsd_capture_register(control.ctl);
	lsd_events_register(control.ctl);
	lsd_route_register(control.ctl);
	lsd_mtu_register(control.ctl);
	lsd_train_register(control.ctl);
	lsd_links_register(control.ctl);
	lsd_linkq_register(control.ctl);
	rc = lsd_bridge_register(control.ctl);
	if (rc == 0)
		rc = lsd_metrics_start(control.ctl);
	if (rc == 0)
		rc = lsd_telemetry_start(control.ctl);
	if (rc < 0)
		return rc;
	rc = rte_ctrl_thread_create(&control.tid, "ls-ctl", NULL, ctl_thread_start, NULL);
	if (rc != 0)
		return -rc;
	LSD_LOG(INFO, "control socket %s", cp.path);
	return 0;
}

void
lsd_control_join(void)
{
	if (control.tid)
		pthread_join(control.tid, NULL);
	lsd_metrics_stop();
	/* fleet time: readers see "unsynced", the file goes (issue 27 L4) */
	lsd_sync_fini();
	if (lsd_capture_stop() == 0)
		LSD_LOG(INFO, "capture closed at shutdown");
	lsd_events_fini();
	ls_ctl_free(control.ctl);
	control.ctl = NULL;
}

void
lsd_control_free_peers(void)
{
	/* Lcores have stopped: no messages needed. */
	for (unsigned int i = 0; i < lsd_peer_count(); i++)
		peer_destroy(lsd_peer_at(i));
	lsd_peer_forget_all();
}
