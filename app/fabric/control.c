/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-fabric's control thread: the control socket (lib/ctl, the same
 * conventions as lockstepd) for faults, background traffic and queries, and
 * the ground-truth writer.
 *
 * Changes reach the lcore as messages on its ring (it owns the network);
 * queries read counters and queue state with relaxed loads (a queue depth
 * is computed from the transmitter's busy-until time, one 64-bit word).
 * Truth records arrive from the lcore on a ring; they are written to the
 * truth file as JSON lines and the most recent per-probe records are kept
 * for the "truth" command.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "fabric.h"
#include "ls_ctl.h"

#define LSF_KEEP_HOPS 4096

static struct {
	struct ls_ctl *ctl;
	pthread_t tid;
	bool running;
	FILE *truth;
	bool truth_full;                         /* stopped at --truth-max-mb */
	struct lsf_truth hops[LSF_KEEP_HOPS];   /* recent HOP/DROP records */
	uint64_t n_hops;
	uint64_t written;
} fab_ctl;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

int
lsf_msg_send(struct lsf_msg *m)
{
	m->done = 0;
	if (rte_ring_mp_enqueue(fab.msgs, m) != 0)
		return -ENOBUFS;
	for (int i = 0; i < 40000; i++) {
		if (__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
			return m->result;
		rte_delay_us_sleep(50);
	}
	return -ETIMEDOUT;
}

/* Messages live on the heap: after a time-out the lcore may still read one,
 * so it is leaked rather than freed under it. */
static struct lsf_msg *
msg_new(enum lsf_msg_type type)
{
	struct lsf_msg *m = calloc(1, sizeof(*m));

	if (m != NULL) {
		m->type = type;
		m->up = -1;
	}
	return m;
}

static int
msg_call(struct lsf_msg *m)
{
	int rc = lsf_msg_send(m);

	if (rc != -ETIMEDOUT)
		free(m);
	return rc;
}

/* A message for a command, or NULL with "out of memory" replied. */
static struct lsf_msg *
req_msg(struct ls_ctl_req *req, enum lsf_msg_type type)
{
	struct lsf_msg *m = msg_new(type);

	if (m == NULL)
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
	return m;
}

/* msg_call(m) with a failure replied: -known as code and text, any other
 * error as internal. Returns msg_call's result. */
static int
req_call(struct ls_ctl_req *req, struct lsf_msg *m, int known, const char *code,
	 const char *text)
{
	int rc = msg_call(m);

	if (rc < 0)
		ls_ctl_reply_error(req, rc == -known ? code : LS_CTL_E_INTERNAL, "%s",
				   rc == -known ? text : strerror(-rc));
	return rc;
}

/* ---- naming ------------------------------------------------------------ */

static const char *
chan_dir(uint16_t c)
{
	return c % 2 ? "ba" : "ab";
}

static json_t *
chan_ref(uint16_t c)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "link", fab.fab->link_names[c / 2],
			 "dir", chan_dir(c),
			 "from", fab.fab->nodes[fab.fab->chans[c].from].name,
			 "to", fab.fab->nodes[fab.fab->chans[c].to].name);
}

static json_t *
addr_json(uint8_t family, const uint8_t *a)
{
	struct ls_addr x = {.family = family};
	char buf[LS_ADDR_STRLEN];

	memcpy(x.a, a, 16);
	return json_string(ls_addr_fmt(&x, buf, sizeof(buf)));
}

/* Which channels a command means: {link, [dir]} -> up to two. */
static int
chans_of(json_t *args, uint16_t out[2], struct ls_ctl_req *req)
{
	const char *name = json_string_value(json_object_get(args, "link"));
	const char *dir = json_string_value(json_object_get(args, "dir"));
	int l;

	if (name == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.link: required string (link name)");
		return -1;
	}
	l = ls_fab_link_find(fab.fab, name);
	if (l < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no link named \"%s\"", name);
		return -1;
	}
	if (json_object_get(args, "dir") != NULL &&
	    (dir == NULL || (strcmp(dir, "ab") && strcmp(dir, "ba") && strcmp(dir, "both")))) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.dir: expected \"ab\", \"ba\" or \"both\"");
		return -1;
	}
	if (dir != NULL && strcmp(dir, "ab") == 0) {
		out[0] = (uint16_t)(2 * l);
		return 1;
	}
	if (dir != NULL && strcmp(dir, "ba") == 0) {
		out[0] = (uint16_t)(2 * l + 1);
		return 1;
	}
	out[0] = (uint16_t)(2 * l);
	out[1] = (uint16_t)(2 * l + 1);
	return 2;
}


/* A number argument that must be given: ls_ctl_arg_num, and "required"
 * when absent. 0, or -1 with the error replied. */
static int
need_num(struct ls_ctl_req *req, json_t *args, const char *key, double lo, double hi,
	 double *out)
{
	int rc = ls_ctl_arg_num(req, args, key, lo, hi, out);

	if (rc == 0)
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.%s: required", key);
	return rc > 0 ? 0 : -1;
}

static int
host_arg(json_t *args, const char *key, uint16_t *out, struct ls_ctl_req *req)
{
	const char *name = json_string_value(json_object_get(args, key));
	int n = name ? ls_fab_node_find(fab.fab, name) : -1;

	if (n < 0 || fab.fab->nodes[n].kind != LS_FAB_HOST) {
		ls_ctl_reply_error(req, name ? LS_CTL_E_NOT_FOUND : LS_CTL_E_BAD_ARGS,
				   "args.%s: %s", key, name ? "no such host" : "required host name");
		return -1;
	}
	*out = (uint16_t)n;
	return 0;
}

/* ---- commands ---------------------------------------------------------- */

static json_t *
chan_json(uint16_t c, uint64_t now)
{
	const struct ls_fab_chan *ch = &fab.fab->chans[c];
	json_t *o = chan_ref(c);

	json_object_set_new(o, "up", json_boolean(LOAD(ch->up)));
	json_object_set_new(o, "route_up", json_boolean(LOAD(ch->route_up)));
	json_object_set_new(o, "params", json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:i}",
		"delay_ns", (json_int_t)ch->p.delay_ns, "rate_bps", (json_int_t)ch->p.rate_bps,
		"buffer_bytes", (json_int_t)ch->p.buffer_bytes, "ecn_bytes", (json_int_t)ch->p.ecn_bytes,
		"ecn_max_bytes", (json_int_t)ch->p.ecn_max_bytes, "ecn_pmax", ch->p.ecn_pmax,
		"loss", ch->p.loss, "mtu", ch->p.mtu));
	json_object_set_new(o, "depth_bytes", json_integer((json_int_t)ls_fab_chan_depth(ch, now)));
	json_object_set_new(o, "counters", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"pkts", (json_int_t)LOAD(ch->st.pkts), "bytes", (json_int_t)LOAD(ch->st.bytes),
		"drop_tail", (json_int_t)LOAD(ch->st.drop_tail),
		"drop_loss", (json_int_t)LOAD(ch->st.drop_loss),
		"drop_down", (json_int_t)LOAD(ch->st.drop_down),
		"drop_mtu", (json_int_t)LOAD(ch->st.drop_mtu),
		"ecn_marked", (json_int_t)LOAD(ch->st.ecn_marked),
		"max_depth", (json_int_t)LOAD(ch->st.max_depth)));
	return o;
}

static void
cmd_status(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *hosts = json_array(), *sw = json_array(), *r;
	char mac[LS_MAC_STRLEN], a4[LS_ADDR_STRLEN], a6[LS_ADDR_STRLEN];

	for (uint16_t i = 0; i < fab.fab->n_nodes; i++) {
		const struct ls_fab_node *n = &fab.fab->nodes[i];

		if (n->kind == LS_FAB_HOST)
			json_array_append_new(hosts, json_pack("{s:s, s:s, s:s, s:s, s:o, s:s}",
				"name", n->name, "leaf", fab.fab->nodes[n->leaf].name,
				"ipv4", n->addr4.family ? ls_addr_fmt(&n->addr4, a4, sizeof(a4)) : "",
				"ipv6", n->addr6.family ? ls_addr_fmt(&n->addr6, a6, sizeof(a6)) : "",
				"mac", LOAD(n->mac_known) ? json_string(ls_mac_fmt(&n->mac, mac, sizeof(mac))) : json_null(),
				"dev", n->dev));
		else
			json_array_append_new(sw, json_pack("{s:s, s:s, s:i}", "name", n->name,
				"role", n->role, "seed", (int)n->seed));
	}
#define C(f) #f, (json_int_t)LOAD(fab.st.f)
	json_t *cal = json_pack("{s:I, s:I, s:I, s:I}", "refits", (json_int_t)fab.cal.n_updates,
				"anchor_step_ns", (json_int_t)fab.cal.anchor_step_ns,
				"anchor_step_max_ns", (json_int_t)fab.cal.anchor_step_max,
				"width_ns", (json_int_t)fab.cal.width_ns);

	r = json_pack(
		"{s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:I, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
		"s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
		"calibration", cal,
		"delivery_lateness_ns", "count", (json_int_t)fab.late.count,
		"min", (json_int_t)ls_hist_quantile(&fab.late, 0),
		"p50", (json_int_t)ls_hist_quantile(&fab.late, 0.5),
		"p99", (json_int_t)ls_hist_quantile(&fab.late, 0.99),
		"p999", (json_int_t)ls_hist_quantile(&fab.late, 0.999),
		"max", (json_int_t)ls_hist_quantile(&fab.late, 1),
		"poll_gap_ns", "count", (json_int_t)fab.poll_gap.count,
		"p50", (json_int_t)ls_hist_quantile(&fab.poll_gap, 0.5),
		"p99", (json_int_t)ls_hist_quantile(&fab.poll_gap, 0.99),
		"p999", (json_int_t)ls_hist_quantile(&fab.poll_gap, 0.999),
		"max", (json_int_t)ls_hist_quantile(&fab.poll_gap, 1),
		"now_ns", (json_int_t)lsf_now_any(),
		"convergence_ns", (json_int_t)fab.fab->convergence_ns,
		"switches", sw, "hosts", hosts, "counters",
		C(rx_pkts), C(tx_pkts), C(tx_dropped), C(arp_answered), C(nd_answered),
		C(icmp_time_exceeded), C(no_route), C(bad), C(not_ip), C(ignored), C(alloc_failed),
		C(host_down),
		C(gen_pkts), C(gen_dropped), C(truth_dropped), C(truth_unwritten),
		C(icmp_rate_limited), C(events), C(trailer_no_room),
		C(slow_rx_bursts), C(tx_at), C(tx_at_late), C(tx_at_bad),
		C(jumbo_copied), C(jumbo_no_buf),
		/* mbufs out of the pool: back to its idle level once traffic
		 * stops, or something leaks (test_fabric_multiseg) */
		"pool_in_use", (json_int_t)rte_mempool_in_use_count(fab.pool),
		"jumbo_in_use", (json_int_t)rte_mempool_in_use_count(fab.jumbo));
	/* memif teardowns that waited for the loop's bursts (ls_gate.h) */
	json_object_set_new(json_object_get(r, "counters"), "memif_guard_waits",
			    json_integer((json_int_t)ls_app_gate_waits()));
	ls_ctl_reply_ok(req, r);
#undef C
}

static void
cmd_links(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	uint64_t now = lsf_now_any();
	json_t *a = json_array();

	for (uint16_t c = 0; c < fab.fab->n_chans; c++)
		json_array_append_new(a, chan_json(c, now));
	ls_ctl_reply_ok(req, a);
}

static void
cmd_link_set(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	double delay = 0, rate = 0, loss = 0, ecn = 0, buf = 0, emax = 0, pmax = 0;
	int hd, hr, hl, he, hx, hp, hb, hm, n, rc = 0;
	uint64_t mtu = 0;
	json_t *up = json_object_get(args, "up");
	uint16_t ch[2];

	if ((n = chans_of(args, ch, req)) < 0)
		return;
	if ((hd = ls_ctl_arg_num(req, args, "delay_ns", 0, 10e9, &delay)) < 0 ||
	    (hr = ls_ctl_arg_num(req, args, "rate_bps", 1000, 1e13, &rate)) < 0 ||
	    (hl = ls_ctl_arg_num(req, args, "loss", 0, 1, &loss)) < 0 ||
	    (he = ls_ctl_arg_num(req, args, "ecn_bytes", 0, 4e9, &ecn)) < 0 ||
	    (hx = ls_ctl_arg_num(req, args, "ecn_max_bytes", 0, 4e9, &emax)) < 0 ||
	    (hp = ls_ctl_arg_num(req, args, "ecn_pmax", 0, 1, &pmax)) < 0 ||
	    (hb = ls_ctl_arg_num(req, args, "buffer_bytes", 1500, 4e9, &buf)) < 0 ||
	    (hm = ls_ctl_arg_uint(req, args, "mtu", 68, 65535, &mtu)) < 0)
		return;
	if (up != NULL && !json_is_boolean(up)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.up: expected true or false");
		return;
	}
	/* as the topology file: a buffer must hold one full packet */
	for (int i = 0; i < n; i++) {
		const struct ls_fab_chan_params *p = &fab.fab->chans[ch[i]].p;
		double b = hb ? buf : p->buffer_bytes, u = hm ? (double)mtu : p->mtu;
		double k0 = he ? ecn : p->ecn_bytes, k1 = hx ? emax : p->ecn_max_bytes;

		if (b < u) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
					   "buffer_bytes (%.0f) must be at least the mtu (%.0f)", b, u);
			return;
		}
		if (k1 != 0 && (k0 == 0 || k1 <= k0)) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "ecn_max_bytes (%.0f) must be "
					   "above ecn_bytes (%.0f), which must not be 0", k1, k0);
			return;
		}
	}
	for (int i = 0; i < n && rc == 0; i++) {
		struct lsf_msg *m = msg_new(LSF_MSG_CHAN_SET);

		if (m == NULL) {
			rc = -ENOMEM;
			break;
		}
		m->chan = ch[i];
		m->up = up ? (int8_t)json_is_true(up) : -1;
		m->params = fab.fab->chans[ch[i]].p;
		m->set_params = hd || hr || hl || he || hx || hp || hb || hm;
		if (hd)
			m->params.delay_ns = (uint64_t)delay;
		if (hr)
			m->params.rate_bps = (uint64_t)rate;
		if (hl)
			m->params.loss = loss;
		if (he)
			m->params.ecn_bytes = (uint32_t)ecn;
		if (hx)
			m->params.ecn_max_bytes = (uint32_t)emax;
		if (hp)
			m->params.ecn_pmax = pmax;
		if (hb)
			m->params.buffer_bytes = (uint32_t)buf;
		if (hm)
			m->params.mtu = (uint16_t)mtu;
		rc = msg_call(m);
	}
	if (rc < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "%s", strerror(-rc));
		return;
	}
	{
		json_t *a = json_array();
		uint64_t now = lsf_now_any();

		for (int i = 0; i < n; i++)
			json_array_append_new(a, chan_json(ch[i], now));
		ls_ctl_reply_ok(req, a);
	}
}

static void
cmd_link_flap(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	double down = -1, every = -1, count = 0, start = 0;
	struct lsf_msg *m;
	uint16_t ch[2];
	int n, rc;

	if ((n = chans_of(args, ch, req)) < 0 ||
	    ls_ctl_arg_num(req, args, "down_ms", 0.001, 3.6e6, &down) < 0 ||
	    ls_ctl_arg_num(req, args, "every_ms", 0.001, 3.6e6, &every) < 0 ||
	    ls_ctl_arg_num(req, args, "count", 0, 1e9, &count) < 0 ||
	    ls_ctl_arg_num(req, args, "start_ms", 0, 3.6e6, &start) < 0)
		return;
	if (down < 0 || every < 0 || down >= every) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
				   "args.down_ms and args.every_ms required, down_ms < every_ms");
		return;
	}
	m = req_msg(req, LSF_MSG_FLAP);
	if (m == NULL)
		return;
	m->flap.n_chan = (uint8_t)n;
	m->flap.chan[0] = ch[0];
	m->flap.chan[1] = n > 1 ? ch[1] : ch[0];
	m->flap.down_ns = (uint64_t)(down * 1e6);
	m->flap.every_ns = (uint64_t)(every * 1e6);
	m->flap.count = (uint32_t)count;
	m->flap.next_ns = (uint64_t)(start * 1e6); /* the lcore adds its clock */
	rc = req_call(req, m, ENOSPC, LS_CTL_E_BUSY, "too many flap schedules");
	if (rc < 0)
		return;
	ls_ctl_reply_ok(req, json_pack("{s:i}", "schedule", rc));
}

static void
cmd_host_slow(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	struct lsf_msg *m;
	double rate = -1;
	uint16_t h;

	if (host_arg(args, "host", &h, req) < 0 ||
	    need_num(req, args, "rate_bps", 1000, 1e13, &rate) < 0)
		return;
	/* A slow receiver is a slow last hop: the leaf -> host link. */
	m = req_msg(req, LSF_MSG_CHAN_SET);
	if (m == NULL)
		return;
	m->chan = fab.fab->nodes[h].down_chan;
	m->params = fab.fab->chans[m->chan].p;
	m->params.rate_bps = (uint64_t)rate;
	m->set_params = true;
	if (req_call(req, m, 0, NULL, NULL) < 0)
		return;
	ls_ctl_reply_ok(req, chan_json(fab.fab->nodes[h].down_chan, lsf_now_any()));
}

static void
cmd_routing_set(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	struct lsf_msg *m;
	double ms = -1;

	if (need_num(req, args, "convergence_ms", 0, 3.6e6, &ms) < 0)
		return;
	m = req_msg(req, LSF_MSG_CONVERGENCE);
	if (m == NULL)
		return;
	m->convergence_ns = (uint64_t)(ms * 1e6);
	if (req_call(req, m, 0, NULL, NULL) < 0)
		return;
	ls_ctl_reply_ok(req, json_pack("{s:f}", "convergence_ms", ms));
}

static void
cmd_route(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *fam = json_string_value(json_object_get(args, "family"));
	double sport = 49152, dport = 862, proto = 17, fl = 0;
	struct lsf_msg *m;
	uint16_t s, d;
	json_t *a;
	int rc;

	if (host_arg(args, "src", &s, req) < 0 ||
	    host_arg(args, "dst", &d, req) < 0 ||
	    ls_ctl_arg_num(req, args, "sport", 0, 65535, &sport) < 0 ||
	    ls_ctl_arg_num(req, args, "dport", 0, 65535, &dport) < 0 ||
	    ls_ctl_arg_num(req, args, "proto", 0, 255, &proto) < 0 ||
	    ls_ctl_arg_num(req, args, "flow_label", 0, 0xfffff, &fl) < 0)
		return;
	m = req_msg(req, LSF_MSG_ROUTE);
	if (m == NULL)
		return;
	m->route.src = s;
	m->route.dst = d;
	m->route.family = fam && strcmp(fam, "ipv6") == 0 ? LS_AF_INET6 : LS_AF_INET;
	m->route.proto = (uint8_t)proto;
	m->route.sport = (uint16_t)sport;
	m->route.dport = (uint16_t)dport;
	m->route.flow_label = (uint32_t)fl;
	rc = lsf_msg_send(m);
	if (rc < 0) {
		if (rc != -ETIMEDOUT)
			free(m);
		ls_ctl_reply_error(req, rc == -ENETUNREACH ? LS_CTL_E_NOT_FOUND : LS_CTL_E_INTERNAL,
				   "%s", rc == -ENETUNREACH ? "no route" : strerror(-rc));
		return;
	}
	a = json_array();
	for (uint16_t i = 0; i < m->route.n; i++)
		json_array_append_new(a, chan_ref(m->route.chan[i]));
	free(m);
	ls_ctl_reply_ok(req, a);
}

static void
cmd_gen_start(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *name = json_string_value(json_object_get(args, "name"));
	double util = -1, rate = -1, bytes = 1500, on = 0, off = 0, flows = 16;
	struct lsf_gen *gn;
	struct lsf_msg *m;
	uint64_t ref_bps;
	uint16_t ch[2];

	if (name == NULL || strlen(name) == 0 || strlen(name) >= sizeof(gn->name)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.name: required string (< 32)");
		return;
	}
	if (ls_ctl_arg_num(req, args, "util", 0.001, 1.0, &util) < 0 ||
	    ls_ctl_arg_num(req, args, "rate_bps", 1000, 1e13, &rate) < 0 ||
	    ls_ctl_arg_num(req, args, "pkt_bytes", 64, 9216, &bytes) < 0 ||
	    ls_ctl_arg_num(req, args, "on_us", 1, 1e9, &on) < 0 ||
	    ls_ctl_arg_num(req, args, "off_us", 0, 1e9, &off) < 0 ||
	    ls_ctl_arg_num(req, args, "flows", 1, 1 << 24, &flows) < 0)
		return;
	if ((util < 0) == (rate < 0)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "give exactly one of args.util and args.rate_bps");
		return;
	}
	m = req_msg(req, LSF_MSG_GEN_START);
	if (m == NULL)
		return;
	gn = &m->gen;
	snprintf(gn->name, sizeof(gn->name), "%s", name);
	if (json_object_get(args, "link") != NULL) {
		/* One link direction ("dir", default "ab"), loaded in place. */
		if (json_object_get(args, "dir") == NULL)
			json_object_set_new(args, "dir", json_string("ab"));
		if (chans_of(args, ch, req) != 1) {
			if (!json_is_string(json_object_get(args, "dir")) ||
			    strcmp(json_string_value(json_object_get(args, "dir")), "both") == 0)
				ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
						   "args.dir: one direction (\"ab\" or \"ba\")");
			free(m);
			return;
		}
		gn->pair = false;
		gn->chan = ch[0];
		ref_bps = fab.fab->chans[ch[0]].p.rate_bps;
	} else {
		/* A host pair (incast is several pairs to one host), routed by ECMP. */
		if (host_arg(args, "src", &gn->src, req) < 0 || host_arg(args, "dst", &gn->dst, req) < 0) {
			free(m);
			return;
		}
		gn->pair = true;
		gn->flows = (uint32_t)flows;
		ref_bps = fab.fab->chans[fab.fab->nodes[gn->src].up_chan].p.rate_bps;
	}
	gn->rate_bps = rate > 0 ? (uint64_t)rate : (uint64_t)(util * (double)ref_bps);
	gn->pkt_bytes = (uint32_t)bytes;
	gn->gap_ns = (uint64_t)((double)bytes * 8e9 / (double)gn->rate_bps);
	if (gn->gap_ns == 0)
		gn->gap_ns = 1;
	gn->on_ns = (uint64_t)(on * 1000);
	gn->off_ns = (uint64_t)(off * 1000);
	if (gn->off_ns && !gn->on_ns) {
		free(m);
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.on_us: required with off_us");
		return;
	}
	if (json_object_get(args, "random") != NULL &&
	    (!json_is_boolean(json_object_get(args, "random")) || gn->off_ns == 0)) {
		free(m);
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
				   "args.random: true or false, with on_us and off_us");
		return;
	}
	gn->random = json_is_true(json_object_get(args, "random"));
	if (req_call(req, m, ENOSPC, LS_CTL_E_BUSY, "too many generators") < 0)
		return;
	ls_ctl_reply_ok(req, json_pack("{s:s, s:I}", "name", name,
				       "rate_bps", (json_int_t)(rate > 0 ? rate : util * (double)ref_bps)));
}

static void
cmd_gen_stop(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *name = json_string_value(json_object_get(args, "name"));
	struct lsf_msg *m;

	if (name == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.name: required string");
		return;
	}
	m = req_msg(req, LSF_MSG_GEN_STOP);
	if (m == NULL)
		return;
	snprintf(m->gen.name, sizeof(m->gen.name), "%s", name);
	if (req_call(req, m, ENOENT, LS_CTL_E_NOT_FOUND, "no such generator") < 0)
		return;
	ls_ctl_reply_ok(req, json_pack("{s:s}", "name", name));
}

static void
cmd_gens(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *a = json_array();

	for (int i = 0; i < LSF_MAX_GENS; i++) {
		const struct lsf_gen *gn = &fab.gens[i];

		if (!LOAD(gn->active))
			continue;
		json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:b, s:I}",
			"name", gn->name, "kind", gn->pair ? "pair" : "link",
			"rate_bps", (json_int_t)gn->rate_bps, "pkt_bytes", (int)gn->pkt_bytes,
			"on_us", (json_int_t)(gn->on_ns / 1000), "off_us", (json_int_t)(gn->off_ns / 1000),
			"random", gn->random,
			"sent", (json_int_t)LOAD(gn->sent), "dropped", (json_int_t)LOAD(gn->dropped)));
	}
	ls_ctl_reply_ok(req, a);
}

static json_t *
truth_json(const struct lsf_truth *t)
{
	static const char *const reason[] = {"ok", "tail", "down", "mtu"};
	json_t *o = json_pack("{s:I, s:s, s:s}", "t", (json_int_t)t->t_ns,
			      "link", fab.fab->link_names[t->chan / 2], "dir", chan_dir(t->chan));

	switch (t->type) {
	case LSF_T_DEPTH:
		json_object_set_new(o, "type", json_string("depth"));
		json_object_set_new(o, "bytes", json_integer((json_int_t)t->depth));
		break;
	case LSF_T_LINK:
		json_object_set_new(o, "type", json_string("link"));
		json_object_set_new(o, "up", json_boolean(t->up));
		if (t->due_ns)
			json_object_set_new(o, "due", json_integer((json_int_t)t->due_ns));
		break;
	case LSF_T_HOP:
	case LSF_T_DROP:
		json_object_set_new(o, "type", json_string(t->type == LSF_T_HOP ? "hop" : "drop"));
		if (t->data) {
			/* not a probe: which flow's frame */
			json_object_set_new(o, "frame", json_pack("{s:o, s:o, s:i, s:i}",
				"src", addr_json(t->family, t->src), "dst", addr_json(t->family, t->dst),
				"sport", t->sport, "dport", t->dport));
			json_object_set_new(o, "reason", json_string(t->verdict < 4 ?
								     reason[t->verdict] : "?"));
			break;
		}
		json_object_set_new(o, "probe", json_pack("{s:o, s:o, s:i, s:i, s:o, s:b}",
			"src", addr_json(t->family, t->src), "dst", addr_json(t->family, t->dst),
			"sport", t->sport, "dport", t->dport,
			"seq", t->stamp ? json_integer((json_int_t)t->seq) : json_null(),
			"reflected", t->reflected));
		json_object_set_new(o, "queue_bytes", json_integer((json_int_t)t->depth));
		if (t->type == LSF_T_DROP) {
			json_object_set_new(o, "reason", json_string(t->verdict < 4 ? reason[t->verdict] : "?"));
			break;
		}
		json_object_set_new(o, "depart", json_integer((json_int_t)t->depart_ns));
		json_object_set_new(o, "deliver", json_integer((json_int_t)t->deliver_ns));
		json_object_set_new(o, "ser_ns", json_integer(t->ser_ns));
		json_object_set_new(o, "queue_ns",
				    json_integer((json_int_t)(t->depart_ns - t->t_ns - t->ser_ns)));
		json_object_set_new(o, "lost", json_boolean(t->verdict == 255));
		break;
	}
	return o;
}

static void
cmd_truth(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	double max = 1000;
	json_t *a;
	uint64_t from;

	if (ls_ctl_arg_num(req, args, "max", 1, LSF_KEEP_HOPS, &max) < 0)
		return;
	a = json_array();
	from = fab_ctl.n_hops > (uint64_t)max ? fab_ctl.n_hops - (uint64_t)max : 0;
	for (uint64_t i = from; i < fab_ctl.n_hops; i++)
		json_array_append_new(a, truth_json(&fab_ctl.hops[i % LSF_KEEP_HOPS]));
	ls_ctl_reply_ok(req, json_pack("{s:s, s:b, s:I, s:I, s:o}", "file", fab.truth_file,
				       "hop_records", fab.hop_records, "written", (json_int_t)fab_ctl.written,
				       "dropped", (json_int_t)LOAD(fab.st.truth_dropped), "records", a));
}

/* Every command with the argument keys lib/ctl lets through to it. */
static void
register_commands(struct ls_ctl *ctl)
{
	ls_ctl_register(ctl, "status", "", "switches, hosts (learnt MACs), counters, time",
			cmd_status, NULL);
	ls_ctl_register(ctl, "links", "",
			"every link direction: state, parameters, queue depth, counters",
			cmd_links, NULL);
	ls_ctl_register_keys(ctl, "link.set",
			     "{link, [dir], [up], [delay_ns], [rate_bps], [loss], [ecn_bytes], [ecn_max_bytes], [ecn_pmax], "
			     "[buffer_bytes], [mtu]}",
			     "change a link (both directions unless dir is \"ab\" or \"ba\")",
			     "link dir up delay_ns rate_bps loss ecn_bytes ecn_max_bytes ecn_pmax buffer_bytes mtu",
			     cmd_link_set, NULL);
	ls_ctl_register_keys(ctl, "link.flap",
			     "{link, [dir], down_ms, every_ms, [count], [start_ms]}",
			     "take a link down for down_ms every every_ms (the first time "
			     "start_ms from now: no control traffic at the edge)",
			     "link dir down_ms every_ms count start_ms", cmd_link_flap, NULL);
	ls_ctl_register_keys(ctl, "host.slow", "{host, rate_bps}",
			     "slow a host's last hop (a slow receiver)", "host rate_bps",
			     cmd_host_slow, NULL);
	ls_ctl_register_keys(ctl, "routing.set", "{convergence_ms}",
			     "how long ECMP keeps using a failed link", "convergence_ms",
			     cmd_routing_set, NULL);
	ls_ctl_register_keys(ctl, "route",
			     "{src, dst, [sport], [dport], [proto], [family], [flow_label]}",
			     "the links a flow crosses, as forwarding hashes it",
			     "src dst sport dport proto family flow_label", cmd_route, NULL);
	ls_ctl_register_keys(ctl, "gen.start",
			     "{name, (link, [dir]) | (src, dst, [flows]), util | rate_bps, "
			     "[pkt_bytes], [on_us, off_us, [random]]}",
			     "start background traffic on a link or between hosts",
			     "name link dir src dst util rate_bps pkt_bytes on_us off_us random flows",
			     cmd_gen_start, NULL);
	ls_ctl_register_keys(ctl, "gen.stop", "{name}", "stop a generator", "name",
			     cmd_gen_stop, NULL);
	ls_ctl_register(ctl, "gens", "", "running generators", cmd_gens, NULL);
	ls_ctl_register_keys(ctl, "truth", "{[max]}", "recent per-probe hop and drop records",
			     "max", cmd_truth, NULL);
}

/* ---- the thread -------------------------------------------------------- */

/*
 * At most a few batches per call: under a heavy load the forwarding lcore
 * pushes records (queue depths on every busy link, every probe's hops) faster
 * than they can be written as JSON, and an unbounded loop here never got back
 * to the socket: commands timed out. What the writer cannot keep up with
 * overflows the ring and is counted in truth_dropped.
 */
#define TRUTH_BATCHES_PER_POLL 16

static void
drain_truth(void)
{
	void *obj[256];
	unsigned int n, batches = 0;

	while (batches++ < TRUTH_BATCHES_PER_POLL &&
	       (n = rte_ring_sc_dequeue_burst(fab.truth, obj, RTE_DIM(obj), NULL)) > 0) {
		for (unsigned int i = 0; i < n; i++) {
			const struct lsf_truth *t = obj[i];

			if (t->type == LSF_T_HOP || t->type == LSF_T_DROP)
				fab_ctl.hops[fab_ctl.n_hops++ % LSF_KEEP_HOPS] = *t;
			if (fab_ctl.truth != NULL && fab.truth_max_bytes != 0 &&
			    (uint64_t)ftell(fab_ctl.truth) >= fab.truth_max_bytes) {
				/* a lab left running must not fill the disk */
				LSF_LOG(WARNING, "truth file %s reached %" PRIu64 " MB: no more "
					"records written (counted in truth_unwritten)", fab.truth_file,
					fab.truth_max_bytes >> 20);
				fclose(fab_ctl.truth);
				fab_ctl.truth = NULL;
				fab_ctl.truth_full = true;
			}
			if (fab_ctl.truth != NULL) {
				json_t *o = truth_json(t);

				if (json_dumpf(o, fab_ctl.truth, JSON_COMPACT) == 0)
					fputc('\n', fab_ctl.truth);
				json_decref(o);
				fab_ctl.written++;
			} else if (fab_ctl.truth_full) {
				__atomic_store_n(&fab.st.truth_unwritten, fab.st.truth_unwritten + 1,
						 __ATOMIC_RELAXED);
			}
		}
		rte_mempool_put_bulk(fab.truth_pool, obj, n);
	}
	/* Whole lines reach the file at the end of each batch, so a reader
	 * tailing it sees at most one unterminated last line. */
	if (fab_ctl.truth != NULL)
		fflush(fab_ctl.truth);
}

static void *
ctl_thread(void *arg __rte_unused)
{
	uint64_t hz = rte_get_tsc_hz(), next_cal = rte_rdtsc() + hz;

	while (!fab.quit) {
		/* no wait while records are backed up */
		ls_ctl_poll(fab_ctl.ctl, rte_ring_count(fab.truth) > 0 ? 0 : 5);
		drain_truth();
		if (rte_rdtsc() >= next_cal) {
			ls_tsc_cal_update(&fab.cal);
			next_cal = rte_rdtsc() + hz;
		}
	}
	/* what is left: a whole ring is 16 calls */
	for (int i = 0; i < 32 && rte_ring_count(fab.truth) > 0; i++)
		drain_truth();
	return NULL;
}

int
lsf_control_start(void)
{
	struct ls_ctl_params cp = {.path = fab.socket, .mode = 0660, .max_clients = 16,
				   .max_request = 65536, .idle_timeout_ms = 60000};
	int rc;

	if (fab.truth_file[0]) {
		fab_ctl.truth = fopen(fab.truth_file, "w");
		if (fab_ctl.truth == NULL) {
			LSF_LOG(ERR, "--truth %s: %s", fab.truth_file, strerror(errno));
			return -errno;
		}
	}
	fab_ctl.ctl = ls_ctl_create(&cp);
	if (fab_ctl.ctl == NULL) {
		LSF_LOG(ERR, "control socket %s: %s", fab.socket, strerror(errno));
		return -errno;
	}
	register_commands(fab_ctl.ctl);
	rc = rte_ctrl_thread_create(&fab_ctl.tid, "lsf-ctl", NULL, ctl_thread, NULL);
	if (rc != 0)
		return -rc;
	fab_ctl.running = true;
	return 0;
}

void
lsf_control_stop(void)
{
	if (fab_ctl.running)
		pthread_join(fab_ctl.tid, NULL);
	fab_ctl.running = false;
	ls_ctl_free(fab_ctl.ctl);
	fab_ctl.ctl = NULL;
	if (fab_ctl.truth != NULL)
		fclose(fab_ctl.truth);
	fab_ctl.truth = NULL;
}
