/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: serves the control socket (lib/ctl's command table,
 * unixctl style), keeps the peer registry, folds per-second path histograms
 * into rolling windows, refits the TSC calibration and writes captures.
 *
 * It never blocks an lcore. Reads of lcore state are relaxed loads of
 * counters and the lock-free histogram hand-off of lib/pathstats; writes go
 * through ls_msg_send(), which queues a message on the lcore's ring and
 * waits for the lcore to mark it done. Peers are allocated here, owned by
 * the lcore while installed, and freed here only after the lcore has given
 * them back (LS_MSG_PEER_DEL), so neither side ever sees freed memory.
 *
 * Every command handler ends in exactly one reply; argument errors name the
 * argument and say what was expected.
 */
#include <errno.h>
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

#define LS_COLLECT_NS (100ULL * 1000 * 1000)
#define LS_CAL_NS LS_NS_PER_S
#define LS_MSG_WAIT_US (2 * 1000 * 1000)

static const char *const disp_names[LS_RX_DISP_MAX] = {
	[LS_RX_REFLECTED] = "rx_reflected",
	[LS_RX_RATE_LIMITED] = "rx_rate_limited",
	[LS_RX_REFL_DISABLED] = "rx_reflector_disabled",
	[LS_RX_REFL_SHORT] = "rx_stamp_short",
	[LS_RX_REPLY] = "rx_reply",
	[LS_RX_REPLY_SHORT] = "rx_reply_short",
	[LS_RX_REPLY_NO_PEER] = "rx_reply_no_peer",
	[LS_RX_REPLY_NO_PATH] = "rx_reply_no_path",
	[LS_RX_ARP] = "rx_arp",
	[LS_RX_ND] = "rx_nd",
	[LS_RX_L2_OTHER] = "rx_l2_not_ours",
	[LS_RX_L3_OTHER] = "rx_l3_not_ours",
	[LS_RX_UDP_OTHER] = "rx_udp_other_port",
	[LS_RX_OTHER] = "rx_other",
	[LS_RX_BAD_TRUNC] = "rx_bad_truncated",
	[LS_RX_BAD_L3] = "rx_bad_l3",
	[LS_RX_BAD_CSUM] = "rx_bad_checksum",
	[LS_RX_BAD_FRAG] = "rx_bad_fragment",
	[LS_RX_BAD_ARP] = "rx_bad_arp",
	[LS_RX_BAD_ND] = "rx_bad_nd",
	[LS_RX_BAD_VLAN] = "rx_bad_vlan",
	[LS_RX_BAD_ADDR] = "rx_bad_address",
};

static struct {
	struct ls_ctl *ctl;
	pthread_t tid;
	struct ls_clock clock;         /* the control thread's own reader */
	struct ls_clock q_clock;       /* reader for truth at a given TSC (may go back) */
	struct ls_peer *peers[LS_MAX_PEERS];
	unsigned int n_peers;
	uint64_t start_tsc;
} ctl;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* ---- peers ------------------------------------------------------------ */

struct ls_peer *
ls_peer_new(const struct ls_conf_peer *cp)
{
	uint16_t n_paths = cp->paths ? cp->paths : g.cfg.probe.paths;
	int port = cp->port[0] ? ls_config_port_index(&g.cfg, cp->port) : 0;
	uint64_t now = ls_clock_now(&ctl.clock);
	struct ls_peer *peer;

	if (port < 0)
		return NULL;
	peer = rte_zmalloc("ls_peer", sizeof(*peer) + n_paths * sizeof(peer->path[0]),
			   RTE_CACHE_LINE_SIZE);
	if (peer == NULL)
		return NULL;
	peer->win = calloc(n_paths, sizeof(*peer->win));
	if (peer->win == NULL) {
		rte_free(peer);
		return NULL;
	}
	snprintf(peer->name, sizeof(peer->name), "%s", cp->name);
	peer->addr = cp->addr;
	peer->port_idx = (uint16_t)port;
	peer->interval_us = cp->interval_us ? cp->interval_us : g.cfg.probe.interval_us;
	peer->n_paths = n_paths;
	peer->slot = -1;
	peer->asym_ns = cp->asym_ns;
	if (cp->has_mac) {
		peer->mac = cp->mac;
		peer->resolved = true;
		peer->static_mac = true;
	}
	for (uint16_t i = 0; i < n_paths; i++) {
		struct ls_peer_path *pp = &peer->path[i];

		pp->peer = peer;
		pp->idx = i;
		pp->sport = (uint16_t)(g.cfg.probe.src_port_base + i);
		rte_timer_init(&pp->tim);
		rte_timer_init(&pp->pair_tim);
		ls_path_live_init(&pp->live, now);
		ls_path_window_init(&peer->win[i]);
	}
	if (ls_sync_peer_attach(peer) != 0) {
		free(peer->win);
		rte_free(peer);
		return NULL;
	}
	return peer;
}

void
ls_peer_free(struct ls_peer *peer)
{
	if (peer == NULL)
		return;
	ls_sync_peer_detach(peer);
	free(peer->win);
	rte_free(peer);
}

int
ls_msg_send(unsigned int lcore, struct ls_msg *m)
{
	m->done = 0;
	if (rte_ring_mp_enqueue(g.lcores[lcore].msgs, m) != 0)
		return -ENOBUFS;
	for (int i = 0; i < LS_MSG_WAIT_US / 50; i++) {
		if (__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
			return m->result;
		rte_delay_us_sleep(50);
	}
	return -ETIMEDOUT;
}

struct ls_peer *
ls_control_peer_at(unsigned int i)
{
	return ctl.peers[i];
}

unsigned int
ls_control_peer_count(void)
{
	return ctl.n_peers;
}

json_t *
ls_control_truth_at(uint64_t tsc)
{
	struct ls_clock *c = &ctl.q_clock;
	uint64_t t;

	if (c->kind != LS_CLOCK_SIM)
		return NULL;
	t = ls_clock_true_from_tsc(c, tsc);
	return json_pack("{s:I, s:I, s:I, s:f}", "tsc", (json_int_t)tsc,
			 "true_ns", (json_int_t)t,
			 "local_ns", (json_int_t)ls_simclock_local(&c->sim, t),
			 "offset_ns", ls_simclock_offset(&c->sim, t));
}

static int
peer_find(const char *name)
{
	for (unsigned int i = 0; i < ctl.n_peers; i++)
		if (strcmp(ctl.peers[i]->name, name) == 0)
			return (int)i;
	return -1;
}

/* The peer a command's "peer" argument names, or -1 with the error replied. */
static int
peer_arg(struct ls_ctl_req *req, const char *name)
{
	int idx;

	if (name == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.peer: required string (peer name)");
		return -1;
	}
	idx = peer_find(name);
	if (idx < 0)
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no peer named \"%s\"", name);
	return idx;
}

static int
peer_find_addr(const struct ls_addr *a)
{
	for (unsigned int i = 0; i < ctl.n_peers; i++)
		if (ls_addr_eq(&ctl.peers[i]->addr, a))
			return (int)i;
	return -1;
}

static int
peer_install(struct ls_peer *peer)
{
	struct ls_msg *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	m->type = LS_MSG_PEER_ADD;
	m->peer = peer;
	rc = ls_msg_send(g.ports[peer->port_idx].lcore, m);
	if (rc == -ETIMEDOUT)
		return rc; /* the lcore may still read m: leak it rather than race */
	free(m);
	if (rc == 0)
		ctl.peers[ctl.n_peers++] = peer;
	return rc;
}

static int
peer_remove(unsigned int idx)
{
	struct ls_peer *peer = ctl.peers[idx];
	struct ls_msg *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	m->type = LS_MSG_PEER_DEL;
	m->peer = peer;
	/* Out of the registry first: nothing here reads it from now on. */
	ctl.peers[idx] = ctl.peers[--ctl.n_peers];
	rc = ls_msg_send(g.ports[peer->port_idx].lcore, m);
	if (rc == -ETIMEDOUT)
		return rc;
	free(m);
	ls_peer_free(peer);
	return 0;
}

int
ls_control_add_config_peers(void)
{
	for (unsigned int i = 0; i < g.cfg.n_peers; i++) {
		struct ls_peer *peer = ls_peer_new(&g.cfg.peers[i]);
		int rc;

		if (peer == NULL)
			return -ENOMEM;
		rc = peer_install(peer);
		if (rc < 0) {
			LS_LOG(ERR, "%s: peers[%u] (%s): cannot add: %s", g.cfg.file, i,
			       g.cfg.peers[i].name, strerror(-rc));
			if (rc != -ETIMEDOUT)
				ls_peer_free(peer);
			return rc;
		}
	}
	return 0;
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
path_state(const struct ls_peer *peer, const struct ls_peer_path *pp)
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
peer_state(const struct ls_peer *peer)
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

static void
lcore_totals(struct ls_lcore_stats *t)
{
	unsigned int l;

	memset(t, 0, sizeof(*t));
	RTE_LCORE_FOREACH(l) {
		const uint64_t *src = (const uint64_t *)&g.lcores[l].st;
		uint64_t *dst = (uint64_t *)t;

		for (size_t i = 0; i < sizeof(*t) / sizeof(uint64_t); i++)
			dst[i] += __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
}

/* Where receive stamps came from, over all lcores (each owns its clock). */
static json_t *
rx_stamps_json(void)
{
	uint64_t k = 0, kr = 0, hr = 0, tr = 0, tm = 0, trj = 0;
	unsigned int l;

#define LD(f) __atomic_load_n(&g.lcores[l].clock.f, __ATOMIC_RELAXED)
	RTE_LCORE_FOREACH(l) {
		k += LD(kstamps);
		kr += LD(kstamp_fallbacks);
		hr += LD(hw_fallbacks);
		tr += LD(tstamps);
		tm += LD(tstamp_missing);
		trj += LD(tstamp_fallbacks);
	}
#undef LD
	return json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "trailer_mode", (int)g.cfg.clock.rx_trailer,
			 "kernel", (json_int_t)k, "kernel_rejected", (json_int_t)kr,
			 "nic_rejected", (json_int_t)hr, "trailer", (json_int_t)tr,
			 "trailer_missing", (json_int_t)tm, "trailer_rejected", (json_int_t)trj);
}

/* Replies that arrived with their send-time trailer still on, over all
 * lcores. */
static uint64_t
trailers_unsent(void)
{
	struct ls_lcore_stats t;

	lcore_totals(&t);
	return t.tx_trailer_unsent;
}

/* Frames sent at their stamp (clock.tx_sched on the NIC, clock.tx_trailer
 * in the lab), over all lcores. */
static json_t *
tx_stamps_json(void)
{
	uint64_t ta = 0, tan = 0, tnf = 0;
	unsigned int l;

	RTE_LCORE_FOREACH(l) {
		ta += __atomic_load_n(&g.lcores[l].st.tx_at, __ATOMIC_RELAXED);
		tan += __atomic_load_n(&g.lcores[l].st.tx_at_no_room, __ATOMIC_RELAXED);
		tnf += __atomic_load_n(&g.lcores[l].clock.tx_sched_nofit, __ATOMIC_RELAXED);
	}
	return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I}",
			 "mode", g.cfg.clock.tx_sched ? "nic" :
				 g.cfg.clock.tx_trailer ? "trailer" : "software",
			 "lead_ns", (int)g.cfg.clock.tx_lead_ns, "scheduled", (json_int_t)ta,
			 "no_room", (json_int_t)tan, "unfitted", (json_int_t)tnf,
			 "unsent_seen", (json_int_t)trailers_unsent());
}

static json_t *
clock_json(void)
{
	struct ls_tsc_map map;
	json_t *o;

	ls_tsc_cal_read(&g.cal, &map);
	o = json_pack("{s:s, s:I, s:{s:f, s:I, s:I, s:f}}",
		      "source", ls_clock_name(&ctl.clock),
		      "now_ns", (json_int_t)ls_clock_now(&ctl.clock),
		      "calibration",
		      "tsc_hz", map.mult ? 1e9 * 4294967296.0 / (double)map.mult : 0.0,
		      "tai_offset_ns", (json_int_t)map.tai_off,
		      "refits", (json_int_t)g.cal.n_updates,
		      "last_step_ppm", g.cal.ppm_step);
	json_object_set_new(o, "rx_stamps", rx_stamps_json());
	json_object_set_new(o, "tx_stamps", tx_stamps_json());
	if (ctl.clock.kind == LS_CLOCK_SIM) {
		struct ls_clock_truth t;

		ls_clock_truth_now(&ctl.clock, &t);
		json_object_set_new(o, "truth",
			json_pack("{s:I, s:I, s:f, s:f}", "true_ns", (json_int_t)t.true_ns,
				  "local_ns", (json_int_t)t.local_ns,
				  "offset_ns", t.offset_ns, "drift_ppm", t.drift_ppm));
		json_object_set_new(o, "sim",
			json_pack("{s:I, s:f, s:f, s:I}",
				  "offset_ns", (json_int_t)g.cfg.clock.sim.offset_ns,
				  "drift_ppm", g.cfg.clock.sim.drift_ppm,
				  "wander_ns", g.cfg.clock.sim.wander_ns,
				  "seed", (json_int_t)ctl.clock.sim.seed));
	}
	return o;
}

static void
cmd_status(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	struct ls_lcore_stats t;
	struct ls_capture_status cs;
	json_t *ports = json_array(), *counters = json_object();
	unsigned int n_paths = 0;
	char mac[LS_MAC_STRLEN];

	for (unsigned int i = 0; i < g.n_ports; i++) {
		const struct ls_port *p = &g.ports[i];
		struct rte_eth_link link;
		struct rte_eth_stats s;

		memset(&s, 0, sizeof(s));
		rte_eth_stats_get(p->port_id, &s);
		rte_eth_link_get_nowait(p->port_id, &link);
		json_array_append_new(ports, json_pack(
			"{s:s, s:s, s:i, s:s, s:o, s:o, s:i, s:s, s:b, s:I, s:I, s:I}",
			"name", p->conf->name, "dev", p->conf->dev, "port_id", p->port_id,
			"mac", ls_mac_fmt(&p->mac, mac, sizeof(mac)),
			"ipv4", prefix_json(&p->v4), "ipv6", prefix_json(&p->v6),
			"lcore", (int)p->lcore, "driver", p->driver,
			"link_up", link.link_status == RTE_ETH_LINK_UP,
			"rx_pkts", (json_int_t)s.ipackets, "tx_pkts", (json_int_t)s.opackets,
			"rx_missed", (json_int_t)s.imissed));
	}
	for (unsigned int i = 0; i < ctl.n_peers; i++)
		n_paths += ctl.peers[i]->n_paths;
	lcore_totals(&t);
	json_object_set_new(counters, "rx_pkts", json_integer((json_int_t)t.rx_pkts));
	for (int i = 0; i < LS_RX_DISP_MAX; i++)
		json_object_set_new(counters, disp_names[i], json_integer((json_int_t)t.disp[i]));
#define C(f) json_object_set_new(counters, #f, json_integer((json_int_t)t.f))
	C(tx_probes); C(tx_replies); C(tx_arp); C(tx_nd); C(tx_dropped);
	C(alloc_failed); C(probes_unresolved); C(rl_overflow); C(idle_sleeps);
	C(tlv_unknown); C(tlv_malformed); C(foreign_replies);
#undef C
	ls_capture_status(&cs);
	ls_ctl_reply_ok(req, json_pack(
		"{s:s, s:I, s:s, s:f, s:o, s:o, s:i, s:i, s:o, s:{s:I, s:I, s:b}, s:{s:b, s:s, s:I, s:I, s:I}}",
		"node", g.cfg.node_name, "node_id", (json_int_t)g.cfg.node_id,
		"version", "0.1.0",
		"uptime_s", (double)(rte_rdtsc() - ctl.start_tsc) / (double)rte_get_tsc_hz(),
		"clock", clock_json(), "ports", ports,
		"n_peers", (int)ctl.n_peers, "n_paths", (int)n_paths, "counters", counters,
		"reflector", "reflected", (json_int_t)t.disp[LS_RX_REFLECTED],
		"rate_limited", (json_int_t)t.disp[LS_RX_RATE_LIMITED],
		"enabled", g.cfg.reflector.enabled,
		"capture", "active", cs.active, "file", cs.file,
		"packets", (json_int_t)cs.packets, "bytes", (json_int_t)cs.bytes,
		"dropped", (json_int_t)cs.dropped));
}

static void
cmd_peers(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *arr = json_array();
	char mac[LS_MAC_STRLEN];

	for (unsigned int i = 0; i < ctl.n_peers; i++) {
		const struct ls_peer *peer = ctl.peers[i];
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
			"{s:s, s:o, s:s, s:i, s:i, s:s, s:o, s:I, s:I, s:I, s:f, s:o}",
			"name", peer->name, "addr", addr_json(&peer->addr),
			"port", g.ports[peer->port_idx].conf->name,
			"paths", peer->n_paths, "interval_us", (int)peer->interval_us,
			"state", peer_state(peer),
			"mac", LOAD(peer->resolved) ? json_string(ls_mac_fmt(&peer->mac, mac, sizeof(mac))) : json_null(),
			"sent", (json_int_t)tot.sent, "received", (json_int_t)tot.received,
			"lost", (json_int_t)tot.lost,
			"loss_pct", tot.received + tot.lost ? 100.0 * (double)tot.lost /
				(double)(tot.received + tot.lost) : 0.0,
			"rtt_p50_ns", have ? json_integer(rtt / have) : json_null()));
	}
	ls_ctl_reply_ok(req, arr);
}

static void
cmd_paths(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"window", NULL};
	enum ls_path_win w;
	json_t *peers;

	if (ls_ctl_check_keys(req, args, keys) < 0 || parse_window(args, &w, req) < 0)
		return;
	peers = json_array();
	for (unsigned int i = 0; i < ctl.n_peers; i++) {
		const struct ls_peer *peer = ctl.peers[i];
		json_t *paths = json_array();

		for (uint16_t k = 0; k < peer->n_paths; k++) {
			const struct ls_peer_path *pp = &peer->path[k];
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
	ls_ctl_reply_ok(req, json_pack("{s:s, s:s, s:o}", "node", g.cfg.node_name,
				       "window", ls_path_win_name(w), "peers", peers));
}

static void
cmd_path(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"peer", "window", NULL};
	const char *name = json_string_value(json_object_get(args, "peer"));
	const struct ls_peer *peer;
	enum ls_path_win only;
	bool one = json_object_get(args, "window") != NULL;
	json_t *paths;
	int idx;

	if (ls_ctl_check_keys(req, args, keys) < 0 || parse_window(args, &only, req) < 0)
		return;
	idx = peer_arg(req, name);
	if (idx < 0)
		return;
	peer = ctl.peers[idx];
	paths = json_array();
	for (uint16_t k = 0; k < peer->n_paths; k++) {
		const struct ls_peer_path *pp = &peer->path[k];
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
		json_array_append_new(paths, json_pack(
			"{s:i, s:i, s:s, s:i, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o}",
			"path", k, "sport", pp->sport, "state", path_state(peer, pp),
			"consecutive_lost", (int)LOAD(pp->live.consecutive_lost),
			"counters", "sent", (json_int_t)c.sent, "received", (json_int_t)c.received,
			"lost", (json_int_t)c.lost, "late", (json_int_t)c.late,
			"reordered", (json_int_t)c.reordered, "duplicated", (json_int_t)c.duplicated,
			"unknown", (json_int_t)c.unknown, "windows", wins));
	}
	ls_ctl_reply_ok(req, json_pack("{s:s, s:o, s:s, s:i, s:o, s:o}", "peer", peer->name,
				       "addr", addr_json(&peer->addr), "state", peer_state(peer),
				       "interval_us", (int)peer->interval_us, "paths", paths,
				       "sync", ls_sync_peer_json(peer)));
}

static void
cmd_peer_add(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	struct ls_conf_peer cp;
	struct ls_peer *peer;
	char err[LS_ERR_LEN];
	int rc;

	if (ls_config_parse_peer(args, &g.cfg, "args", &cp, err, sizeof(err)) < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "%s", err);
		return;
	}
	if (peer_find(cp.name) >= 0) {
		ls_ctl_reply_error(req, LS_CTL_E_EXISTS, "a peer named \"%s\" exists", cp.name);
		return;
	}
	if (peer_find_addr(&cp.addr) >= 0) {
		ls_ctl_reply_error(req, LS_CTL_E_EXISTS, "a peer with address %s exists",
				   json_string_value(json_object_get(args, "addr")));
		return;
	}
	if (ctl.n_peers >= LS_MAX_PEERS) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "peer table full (%d)", LS_MAX_PEERS);
		return;
	}
	peer = ls_peer_new(&cp);
	if (peer == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
		return;
	}
	rc = peer_install(peer);
	if (rc < 0) {
		if (rc != -ETIMEDOUT)
			ls_peer_free(peer);
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "lcore refused the peer: %s",
				   strerror(-rc));
		return;
	}
	LS_LOG(INFO, "peer %s added (%u paths)", peer->name, peer->n_paths);
	ls_ctl_reply_ok(req, json_pack("{s:s, s:o, s:i, s:i}", "name", peer->name,
				       "addr", addr_json(&peer->addr), "paths", peer->n_paths,
				       "interval_us", (int)peer->interval_us));
}

static void
cmd_peer_del(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"name", NULL};
	const char *name = json_string_value(json_object_get(args, "name"));
	char copy[LS_NAME_LEN];
	int idx, rc;

	if (ls_ctl_check_keys(req, args, keys) < 0)
		return;
	if (name == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.name: required string (peer name)");
		return;
	}
	idx = peer_find(name);
	if (idx < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no peer named \"%s\"", name);
		return;
	}
	snprintf(copy, sizeof(copy), "%s", name);
	rc = peer_remove((unsigned int)idx);
	if (rc < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "%s", strerror(-rc));
		return;
	}
	LS_LOG(INFO, "peer %s removed", copy);
	ls_ctl_reply_ok(req, json_pack("{s:s}", "name", copy));
}

static int
get_uint(json_t *args, const char *key, uint64_t lo, uint64_t hi, uint64_t *out,
	 struct ls_ctl_req *req)
{
	json_t *v = json_object_get(args, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    json_integer_value(v) > (json_int_t)hi) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
				   "args.%s: expected an integer between %" PRIu64 " and %" PRIu64,
				   key, lo, hi);
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

/* Changing the number of paths replaces the peer: per-path state is sized
 * at allocation, and the lcore must never see a path array change under it. */
static int
peer_replace_paths(unsigned int idx, uint16_t paths, uint32_t interval_us)
{
	struct ls_peer *old = ctl.peers[idx];
	struct ls_conf_peer cp;
	struct ls_peer *peer;
	int rc;

	memset(&cp, 0, sizeof(cp));
	snprintf(cp.name, sizeof(cp.name), "%s", old->name);
	cp.addr = old->addr;
	snprintf(cp.port, sizeof(cp.port), "%s", g.ports[old->port_idx].conf->name);
	cp.paths = paths;
	cp.interval_us = interval_us ? interval_us : old->interval_us;
	cp.mac = old->mac;
	cp.has_mac = old->static_mac;
	peer = ls_peer_new(&cp);
	if (peer == NULL)
		return -ENOMEM;
	rc = peer_remove(idx);
	if (rc < 0) {
		ls_peer_free(peer);
		return rc;
	}
	rc = peer_install(peer);
	if (rc < 0 && rc != -ETIMEDOUT)
		ls_peer_free(peer);
	return rc;
}

/* One message about an installed peer to the lcore that owns it. */
static int
peer_msg(struct ls_peer *peer, enum ls_msg_type type, uint32_t interval_us)
{
	struct ls_msg *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	m->type = type;
	m->peer = peer;
	m->interval_us = interval_us;
	rc = ls_msg_send(g.ports[peer->port_idx].lcore, m);
	/* On a time-out the lcore may still read m: leak it rather than race. */
	if (rc != -ETIMEDOUT)
		free(m);
	return rc;
}

static int
peer_set_interval(struct ls_peer *peer, uint32_t interval_us)
{
	return peer_msg(peer, LS_MSG_PROBE_SET, interval_us);
}

int
ls_control_peer_acquire(struct ls_peer *peer)
{
	return peer_msg(peer, LS_MSG_PEER_ACQUIRE, 0);
}

static void
cmd_probe_set(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"peer", "interval_us", "paths", NULL};
	json_t *pv = json_object_get(args, "peer");
	uint64_t interval = 0, paths = 0;
	unsigned int updated = 0;
	int only = -1;

	if (ls_ctl_check_keys(req, args, keys) < 0 ||
	    get_uint(args, "interval_us", 100, 60000000, &interval, req) < 0 ||
	    get_uint(args, "paths", 1, LS_MAX_PATHS, &paths, req) < 0)
		return;
	if (interval == 0 && paths == 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "give args.interval_us and/or args.paths");
		return;
	}
	if (pv != NULL) {
		if (!json_is_string(pv) || (only = peer_find(json_string_value(pv))) < 0) {
			ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "args.peer: no such peer");
			return;
		}
	}
	/* Work on a snapshot: replacing a peer reorders the registry. */
	{
		struct ls_peer **todo = calloc(ctl.n_peers ? ctl.n_peers : 1, sizeof(*todo));
		unsigned int n_todo = 0;

		if (todo == NULL) {
			ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
			return;
		}
		for (unsigned int i = 0; i < ctl.n_peers; i++)
			if (only < 0 || (unsigned int)only == i)
				todo[n_todo++] = ctl.peers[i];
		for (unsigned int t = 0; t < n_todo; t++) {
			struct ls_peer *peer = todo[t];
			int rc = 0;

			if (paths && paths != peer->n_paths) {
				for (unsigned int i = 0; i < ctl.n_peers; i++) {
					if (ctl.peers[i] == peer) {
						rc = peer_replace_paths(i, (uint16_t)paths,
									(uint32_t)interval);
						break;
					}
				}
			} else if (interval) {
				rc = peer_set_interval(peer, (uint32_t)interval);
			}
			if (rc < 0) {
				ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "peer %s: %s",
						   peer->name, strerror(-rc));
				free(todo);
				return;
			}
			updated++;
		}
		free(todo);
	}
	ls_ctl_reply_ok(req, json_pack("{s:i}", "updated", (int)updated));
}

static void
cmd_stats_reset(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < ctl.n_peers; i++)
		for (uint16_t k = 0; k < ctl.peers[i]->n_paths; k++, n++)
			ls_path_window_reset(&ctl.peers[i]->win[k], &ctl.peers[i]->path[k].live);
	ls_ctl_reply_ok(req, json_pack("{s:i}", "reset", (int)n));
}

static void
cmd_clock(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"tsc", NULL};
	json_t *o;
	uint64_t tsc = 0;

	if (ls_ctl_check_keys(req, args, keys) != 0 ||
	    get_uint(args, "tsc", 1, INT64_MAX, &tsc, req) < 0)
		return;
	o = clock_json();
	/* every process on the host reads the same TSC: a test names one
	 * instant to all daemons and compares their answers exactly */
	if (tsc == 0)
		tsc = rte_rdtsc();
	json_object_set_new(o, "tsc", json_integer((json_int_t)tsc));
	{
		json_t *t = ls_control_truth_at(tsc);

		if (t != NULL)
			json_object_set_new(o, "truth_at", t);
	}
	ls_ctl_reply_ok(req, o);
}

static void
cmd_sync(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"tsc", NULL};
	uint64_t tsc = 0;

	if (ls_ctl_check_keys(req, args, keys) != 0 ||
	    get_uint(args, "tsc", 1, INT64_MAX, &tsc, req) < 0)
		return;
	ls_ctl_reply_ok(req, ls_sync_json(tsc));
}

static void
cmd_sync_points(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"peer", "path", NULL};
	const char *name = json_string_value(json_object_get(args, "peer"));
	uint64_t k = 0;
	json_t *o;
	int idx;

	if (ls_ctl_check_keys(req, args, keys) < 0 ||
	    get_uint(args, "path", 0, LS_MAX_PATHS - 1, &k, req) < 0)
		return;
	idx = peer_arg(req, name);
	if (idx < 0)
		return;
	o = ls_sync_points_json(ctl.peers[idx], (uint16_t)k);
	if (o == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "peer \"%s\" has no synced path %u", name,
				   (unsigned int)k);
		return;
	}
	ls_ctl_reply_ok(req, o);
}

static const char *const level_names[] = {
	[RTE_LOG_EMERG] = "emerg", [RTE_LOG_ALERT] = "alert", [RTE_LOG_CRIT] = "crit",
	[RTE_LOG_ERR] = "error", [RTE_LOG_WARNING] = "warning", [RTE_LOG_NOTICE] = "notice",
	[RTE_LOG_INFO] = "info", [RTE_LOG_DEBUG] = "debug",
};

int
ls_log_level_from_name(const char *s)
{
	for (int i = (int)RTE_LOG_EMERG; i <= (int)RTE_LOG_DEBUG; i++)
		if (s != NULL && strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

static void
cmd_log_level(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"level", NULL};
	json_t *v = json_object_get(args, "level");
	int lvl;

	if (ls_ctl_check_keys(req, args, keys) < 0)
		return;
	if (v != NULL) {
		lvl = ls_log_level_from_name(json_string_value(v));
		if (lvl < 0) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
					   "args.level: expected one of emerg, alert, crit, error, warning, notice, info, debug");
			return;
		}
		rte_log_set_level_pattern("lockstep*", (uint32_t)lvl);
		rte_log_set_level(ls_logtype, (uint32_t)lvl);
	}
	lvl = rte_log_get_level(ls_logtype);
	ls_ctl_reply_ok(req, json_pack("{s:s}", "level",
				       lvl >= (int)RTE_LOG_EMERG && lvl <= (int)RTE_LOG_DEBUG ?
				       level_names[lvl] : "unknown"));
}

static void
cmd_capture_start(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	static const char *const keys[] = {"file", "snaplen", "max_bytes", NULL};
	const char *file = json_string_value(json_object_get(args, "file"));
	uint64_t snaplen = 0, max_bytes = 0;
	char err[300];
	int rc;

	if (ls_ctl_check_keys(req, args, keys) < 0 ||
	    get_uint(args, "snaplen", 64, 65535, &snaplen, req) < 0 ||
	    get_uint(args, "max_bytes", 4096, 1ULL << 40, &max_bytes, req) < 0)
		return;
	if (file == NULL || file[0] == '\0') {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.file: required string (pcap path)");
		return;
	}
	rc = ls_capture_start(file, (uint32_t)snaplen, max_bytes, err, sizeof(err));
	if (rc < 0) {
		ls_ctl_reply_error(req, rc == -EBUSY ? LS_CTL_E_BUSY : LS_CTL_E_BAD_ARGS, "%s", err);
		return;
	}
	ls_ctl_reply_ok(req, json_pack("{s:s}", "file", file));
}

static void
cmd_capture_stop(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	struct ls_capture_status cs;

	if (ls_capture_stop() < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no capture running");
		return;
	}
	ls_capture_status(&cs);
	ls_ctl_reply_ok(req, json_pack("{s:s, s:I, s:I, s:I}", "file", cs.file,
				       "packets", (json_int_t)cs.packets,
				       "bytes", (json_int_t)cs.bytes,
				       "dropped", (json_int_t)cs.dropped));
}

static const struct {
	const char *name, *usage, *help;
	ls_ctl_cb cb;
} commands[] = {
	{"status", "", "node, ports, clock, counters, capture", cmd_status},
	{"peers", "", "peers with state and totals", cmd_peers},
	{"paths", "{[window]}", "the mesh from this node: every peer and path, one window", cmd_paths},
	{"path", "{peer, [window]}", "one peer: every path, every window (or one), full distributions", cmd_path},
	{"peer.add", "{name, addr, [port], [paths], [interval_us]}", "start probing a new peer", cmd_peer_add},
	{"peer.del", "{name}", "stop probing a peer and forget it", cmd_peer_del},
	{"probe.set", "{[peer], [interval_us], [paths]}", "change probe interval/paths (all peers or one)", cmd_probe_set},
	{"stats.reset", "", "zero path counters and windows", cmd_stats_reset},
	{"clock", "{[tsc]}", "clock source, calibration, and ground truth when simulated (at tsc)", cmd_clock},
	{"sync", "{[tsc]}", "clock sync: own state, fleet time and bound (at tsc), every neighbour's edge", cmd_sync},
	{"sync.points", "{peer, [path]}", "one path's clock estimator: its stored probes and fits", cmd_sync_points},
	{"log.level", "{[level]}", "get or set the log level", cmd_log_level},
	{"capture.start", "{file, [snaplen], [max_bytes]}", "write probes sent and received to a pcap", cmd_capture_start},
	{"capture.stop", "", "close the capture file", cmd_capture_stop},
};

/* ---- the thread ------------------------------------------------------- */

static uint32_t
ctl_thread(void *arg __rte_unused)
{
	uint64_t hz = rte_get_tsc_hz();
	uint64_t next_collect = 0, next_cal = rte_rdtsc() + hz;
	bool warned_unsent = false;

	/* Config peers go in from here, once the lcores are polling their rings. */
	if (ls_control_add_config_peers() < 0) {
		g.exit_code = 1;
		g.quit = 1;
	}
	while (!g.quit) {
		uint64_t now;

		ls_ctl_poll(ctl.ctl, 10);
		ls_capture_drain();
		now = rte_rdtsc();
		ls_sync_poll(now);
		if (now >= next_collect) {
			for (unsigned int i = 0; i < ctl.n_peers; i++)
				for (uint16_t k = 0; k < ctl.peers[i]->n_paths; k++)
					ls_path_window_collect(&ctl.peers[i]->win[k],
							       &ctl.peers[i]->path[k].live);
			next_collect = now + hz / 10;
		}
		if (now >= next_cal) {
			ls_tsc_cal_update(&g.cal);
			ls_clock_nic_update(&g.cal);
			next_cal = now + hz;
			if (!warned_unsent && trailers_unsent() > 0) {
				warned_unsent = true;
				LS_LOG(WARNING, "replies arrive with a send-time trailer still on: "
				       "nothing sends frames at their stamp, so T1/T3 are a "
				       "lead early (a lab emulator without --tx-trailer?); "
				       "status clock.tx_stamps.unsent_seen counts them");
			}
		}
	}
	return 0;
}

static void *
ctl_thread_start(void *arg)
{
	ctl_thread(arg);
	return NULL;
}

int
ls_control_start(void)
{
	struct ls_ctl_params cp = {
		.path = g.cfg.control.socket,
		.mode = (mode_t)g.cfg.control.mode,
		.max_clients = g.cfg.control.max_clients,
		.max_request = 65536,
	};
	uint16_t ports[LS_MAX_PORTS];
	int rc;

	for (unsigned int i = 0; i < g.n_ports; i++)
		ports[i] = g.ports[i].port_id;
	rc = ls_clock_setup(&ctl.clock, &g.cfg.clock, g.cfg.node_id, ports, g.n_ports, &g.cal);
	if (rc == 0)
		rc = ls_clock_setup(&ctl.q_clock, &g.cfg.clock, g.cfg.node_id, ports, g.n_ports,
				    &g.cal);
	if (rc == 0)
		rc = ls_sync_init(&ctl.clock, &ctl.q_clock);
	if (rc < 0)
		return rc;
	ctl.start_tsc = rte_rdtsc();
	ctl.ctl = ls_ctl_create(&cp);
	if (ctl.ctl == NULL) {
		rc = -errno;
		LS_LOG(ERR, "%s: control.socket: cannot listen on %s: %s", g.cfg.file,
		       cp.path, strerror(errno));
		return rc;
	}
	for (size_t i = 0; i < RTE_DIM(commands); i++)
		ls_ctl_register(ctl.ctl, commands[i].name, commands[i].usage,
				commands[i].help, commands[i].cb, NULL);
	rc = lsd_bridge_ctl_init(ctl.ctl);
	if (rc < 0)
		return rc;
	rc = rte_ctrl_thread_create(&ctl.tid, "ls-ctl", NULL, ctl_thread_start, NULL);
	if (rc != 0)
		return -rc;
	LS_LOG(INFO, "control socket %s", cp.path);
	return 0;
}

void
ls_control_join(void)
{
	if (ctl.tid)
		pthread_join(ctl.tid, NULL);
	if (ls_capture_stop() == 0)
		LS_LOG(INFO, "capture closed at shutdown");
	ls_ctl_free(ctl.ctl);
	ctl.ctl = NULL;
}

void
ls_control_free_peers(void)
{
	/* Lcores have stopped: no messages needed. */
	for (unsigned int i = 0; i < ctl.n_peers; i++)
		ls_peer_free(ctl.peers[i]);
	ctl.n_peers = 0;
}
