/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path's control: its commands (bridge, flows, slices, policy,
 * slice.set/del, flow.policy/flow.policy.del), and the policy's life cycle.
 *
 * A policy change is made on a copy: checked, saved atomically to the state
 * file, then handed to the bridge lcore (LSD_MSG_POLICY) which swaps it in
 * and marks the message done; only then is the old copy freed. If the save
 * fails nothing changes, so what runs is always what a restart restores.
 * At start the state file wins over the config's bridge.policy (the
 * operator's last word), and a broken state file stops the daemon with
 * file, key and reason rather than running on a policy nobody set.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "bridge.h"
#include "ls_ctl.h"

static struct {
	struct ls_policy *cur;      /* what the lcore runs (control's copy) */
	unsigned int lcore;
} bctl;

static void
mkdir_parent(const char *file)
{
	char dir[sizeof(lsd.cfg.bridge.policy_file)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0750) < 0 && errno != EEXIST)
		LSD_LOG(WARNING, "bridge: cannot create %s: %s", dir, strerror(errno));
}

/* The policy the daemon starts with: the state file's, else the config's.
 * Exits the daemon on a state file that cannot be read. */
const struct ls_policy *
lsd_bridge_policy_initial(void)
{
	const char *file = lsd.cfg.bridge.policy_file;
	char err[LS_ERR_LEN];
	struct ls_policy *p = malloc(sizeof(*p));
	int rc = -ENOENT;

	if (p == NULL)
		return NULL;
	if (file[0] != '\0')
		rc = ls_policy_load(file, p, err, sizeof(err));
	if (rc == 0) {
		LSD_LOG(INFO, "bridge: policy from %s (%u slices, %u flow rules)", file,
		       p->n_slices, p->n_rules);
	} else if (rc == -ENOENT) {
		*p = *lsd.cfg.bridge.policy;
	} else {
		LSD_LOG(ERR, "bridge: %s", err);
		free(p);
		return NULL;
	}
	bctl.cur = p;
	return p;
}

/* next to every data-path lcore, the lead first. Each swaps it in and
 * marks its message done. On a failure from the first, nothing changed and
 * next is freed; once one lcore took next, neither next nor the policy the
 * others still run may be freed: a later failure keeps both (leaked, and
 * said). */
static int
hand_over(struct ls_policy *next)
{
	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		/* a time-out means never applied (lsd_msg_send) */
		int rc = lsd_msg_call(lsd_bset.lcore[i], LSD_MSG_POLICY, next);

		if (rc == 0)
			continue;
		if (i == 0) {
			free(next);
			return rc;
		}
		LSD_LOG(ERR, "bridge: lcore %u did not take the policy (%s): the lcores run "
		       "different policies until the next change", lsd_bset.lcore[i],
		       strerror(-rc));
		bctl.cur = next;   /* what the first lcores run; the old one leaks */
		return rc;
	}
	free(bctl.cur);
	bctl.cur = next;
	return 0;
}

/* Save and hand over next; on success it becomes the current policy. */
static int
policy_commit(struct ls_ctl_req *req, struct ls_policy *next)
{
	const char *file = lsd.cfg.bridge.policy_file;
	char err[LS_ERR_LEN];
	int rc;

	if (ls_policy_finish(next) < 0) {
		free(next);
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "no room for the default slice");
		return -ENOSPC;
	}
	if (file[0] != '\0') {
		mkdir_parent(file);
		rc = ls_policy_save(next, file, err, sizeof(err));
		if (rc < 0) {
			free(next);
			ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "policy not changed: %s", err);
			return rc;
		}
	}
	rc = hand_over(next);
	if (rc != 0) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "data path did not take the policy: %s",
				   strerror(rc < 0 ? -rc : rc));
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}

static struct ls_policy *
policy_copy(struct ls_ctl_req *req)
{
	struct ls_policy *p = malloc(sizeof(*p));

	if (p == NULL)
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
	else
		*p = *bctl.cur;
	return p;
}

static bool
bridge_on(struct ls_ctl_req *req)
{
	if (bctl.cur != NULL)
		return true;
	ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no data path (no \"bridge\" in the config)");
	return false;
}

typedef int (*parse_fn)(const json_t *obj, const struct ls_jsonv *jv, const char *path,
			void *out);

static int
parse_slice(const json_t *obj, const struct ls_jsonv *jv, const char *path, void *out)
{
	return ls_policy_slice_from_json(obj, jv, path, out);
}

static int
parse_rule(const json_t *obj, const struct ls_jsonv *jv, const char *path, void *out)
{
	return ls_policy_rule_from_json(obj, jv, path, out);
}

/* A change refused after the copy was made: drop it, reply bad_args. */
static void __attribute__((format(printf, 3, 4)))
refuse(struct ls_ctl_req *req, struct ls_policy *next, const char *fmt, ...)
{
	char msg[LS_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	free(next);
	ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "%s", msg);
}

/* What slice.set/slice.del and flow.policy/flow.policy.del differ in: the
 * kind of entry and where it lives in struct ls_policy. One set and one del
 * handler serve both. */
struct entry_kind {
	const char *what;           /* "slice", "flow rule" */
	const char *name_desc;      /* args.name's description in errors */
	parse_fn parse;
	size_t size, name_off, arr_off, n_off;
	uint32_t max;
	/* Where a new entry goes; < 0 when refused (replied, next freed). */
	int (*admit)(struct ls_ctl_req *req, struct ls_policy *next, const void *e);
	/* < 0 when the entry may not go (replied). */
	int (*may_delete)(struct ls_ctl_req *req, const char *name);
	json_t *(*reply)(const void *e, int i);
};

static char *
entry_at(const struct entry_kind *k, struct ls_policy *p, uint32_t i)
{
	return (char *)p + k->arr_off + (size_t)i * k->size;
}

static uint32_t *
entry_count(const struct entry_kind *k, struct ls_policy *p)
{
	return (uint32_t *)((char *)p + k->n_off);
}

static int
entry_index(const struct entry_kind *k, struct ls_policy *p, const char *name)
{
	for (uint32_t i = 0; i < *entry_count(k, p); i++)
		if (strcmp(entry_at(k, p, i) + k->name_off, name) == 0)
			return (int)i;
	return -1;
}

/* The start of every change that takes an object: parse args into out
 * (bad_args naming the key on failure), then a copy of the policy to
 * change. NULL when a reply was sent. */
static struct ls_policy *
begin_change(struct ls_ctl_req *req, json_t *args, parse_fn parse, void *out)
{
	char err[LS_ERR_LEN];
	struct ls_jsonv jv = {.err = err, .errlen = sizeof(err)};

	if (!bridge_on(req))
		return NULL;
	if (parse(args, &jv, "args", out) < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "%s", err);
		return NULL;
	}
	return policy_copy(req);
}

/* slice.set, flow.policy: an entry replaces its namesake in place, or a new
 * one goes where admit() says, the entries from there on moving up one. */
static void
cmd_entry_set(struct ls_ctl_req *req, json_t *args, void *aux)
{
	const struct entry_kind *k = aux;
	union {
		struct ls_policy_slice slice;
		struct ls_policy_rule rule;
	} e;
	struct ls_policy *next = begin_change(req, args, k->parse, &e);
	const char *name = (const char *)&e + k->name_off;
	uint32_t *n;
	int i, at;

	if (next == NULL || (at = k->admit(req, next, &e)) < 0)
		return;
	n = entry_count(k, next);
	i = entry_index(k, next, name);
	if (i < 0 && *n >= k->max) {
		refuse(req, next, "table full (%u)", k->max);
		return;
	}
	if (i < 0) {
		memmove(entry_at(k, next, (uint32_t)at + 1), entry_at(k, next, (uint32_t)at),
			k->size * (*n - (uint32_t)at));
		(*n)++;
		i = at;
	}
	memcpy(entry_at(k, next, (uint32_t)i), &e, k->size);
	if (policy_commit(req, next) == 0) {
		LSD_LOG(INFO, "bridge: %s %s set", k->what, name);
		ls_ctl_reply_ok(req, k->reply(&e, i));
	}
}

/* slice.del, flow.policy.del */
static void
cmd_entry_del(struct ls_ctl_req *req, json_t *args, void *aux)
{
	const struct entry_kind *k = aux;
	struct ls_policy *next;
	const char *name;
	uint32_t *n;
	int i;

	if (!bridge_on(req) || ls_ctl_arg_str(req, args, "name", k->name_desc, &name) < 0)
		return;
	i = entry_index(k, bctl.cur, name);
	if (i < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no %s named \"%s\"", k->what, name);
		return;
	}
	if ((k->may_delete != NULL && k->may_delete(req, name) < 0) ||
	    (next = policy_copy(req)) == NULL)
		return;
	n = entry_count(k, next);
	memmove(entry_at(k, next, (uint32_t)i), entry_at(k, next, (uint32_t)i + 1),
		k->size * (*n - (uint32_t)i - 1));
	(*n)--;
	if (policy_commit(req, next) == 0) {
		LSD_LOG(INFO, "bridge: %s %s removed", k->what, name);
		ls_ctl_reply_ok(req, json_pack("{ss}", "name", name));
	}
}

/* A new slice goes before "default", which matches everything. */
static int
slice_admit(struct ls_ctl_req *req __rte_unused, struct ls_policy *next,
	    const void *e __rte_unused)
{
	int d = ls_policy_slice_index(next, "default");

	return d < 0 ? (int)next->n_slices : d;
}

static int
slice_may_delete(struct ls_ctl_req *req, const char *name)
{
	if (strcmp(name, "default") == 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.name: \"default\" cannot be removed");
		return -EINVAL;
	}
	for (uint32_t r = 0; r < bctl.cur->n_rules; r++)
		if (strcmp(bctl.cur->rules[r].slice, name) == 0) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "flow rule \"%s\" puts flows in it",
					   bctl.cur->rules[r].name);
			return -EBUSY;
		}
	return 0;
}

static json_t *
slice_reply(const void *e, int i __rte_unused)
{
	return ls_policy_slice_to_json(e);
}

/* A new rule goes last: rules match in order, the first wins. */
static int
rule_admit(struct ls_ctl_req *req, struct ls_policy *next, const void *e)
{
	const struct ls_policy_rule *r = e;

	if (r->slice[0] != '\0' && ls_policy_slice_index(next, r->slice) < 0) {
		refuse(req, next, "args.slice: no slice \"%s\"", r->slice);
		return -ENOENT;
	}
	return (int)next->n_rules;
}

static json_t *
rule_reply(const void *e, int i)
{
	return json_pack("{ss si}", "name", ((const struct ls_policy_rule *)e)->name, "index", i);
}

static const struct entry_kind slice_kind = {
	.what = "slice", .name_desc = "slice name", .parse = parse_slice,
	.size = sizeof(struct ls_policy_slice),
	.name_off = offsetof(struct ls_policy_slice, conf.name),
	.arr_off = offsetof(struct ls_policy, slices), .n_off = offsetof(struct ls_policy, n_slices),
	.max = LS_SLICE_MAX, .admit = slice_admit, .may_delete = slice_may_delete,
	.reply = slice_reply,
};

static const struct entry_kind rule_kind = {
	.what = "flow rule", .name_desc = "rule name", .parse = parse_rule,
	.size = sizeof(struct ls_policy_rule), .name_off = offsetof(struct ls_policy_rule, name),
	.arr_off = offsetof(struct ls_policy, rules), .n_off = offsetof(struct ls_policy, n_rules),
	.max = LS_POLICY_MAX_RULES, .admit = rule_admit, .reply = rule_reply,
};

static void
cmd_policy(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	if (!bridge_on(req))
		return;
	ls_ctl_reply_ok(req, ls_policy_to_json(bctl.cur));
}

/* The data path's counters summed over its lcores (relaxed loads). */
static void
counters_sum(struct lsd_bridge_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		const struct lsd_bridge_stats *st = &lsd_bset.b[i]->st;

#define X(n) sum->n += __atomic_load_n(&st->n, __ATOMIC_RELAXED);
		LSD_BRIDGE_COUNTERS(X)
#undef X
	}
}

static json_t *
counters_json(const struct lsd_bridge_stats *st)
{
	json_t *o = json_object();

#define X(n) json_object_set_new(o, #n, json_integer((json_int_t)st->n));
	LSD_BRIDGE_COUNTERS(X)
#undef X
	return o;
}

/* Frames from the host the data path holds now (gauges, not counters): in
 * the pacing wheels, on the slice queues and on the rings back to the lead
 * (many cores). With them the host side adds up at any moment:
 *   rx_host = tx_fabric + pace_drops + wheel_full + slice_drops
 *             + tx_drops_fabric + held.wheel + held.slices + held.rings
 * (read while the lcores run, the terms may be a burst apart; held.rings
 * holds frames for the host too). */
static json_t *
held_json(void)
{
	uint64_t w = 0, q = 0, r = 0;

	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		const struct lsd_bridge *b = lsd_bset.b[i];
		struct ls_wheel_stats ws;

		ls_wheel_stats(b->wheel, &ws);
		w += ws.held;
		for (unsigned int s = 0; s < ls_slice_count(b->sched); s++) {
			struct ls_slice_stats st;

			if (ls_slice_get(b->sched, s, NULL, &st) == 0)
				q += st.backlog;
		}
		r += lsd_spread_held(b);
	}
	return json_pack("{sI sI sI}", "wheel", (json_int_t)w, "slices", (json_int_t)q,
			 "rings", (json_int_t)r);
}

/* The port's own view: frames the PMD could not take (no mbuf, ring full)
 * never reach the data path's counters. */
static json_t *
port_json(const struct lsd_port *p)
{
	struct rte_eth_stats s;

	if (rte_eth_stats_get(p->port_id, &s) != 0)
		return json_null();
	return json_pack("{sI sI sI sI sI}", "rx", (json_int_t)s.ipackets,
			 "tx", (json_int_t)s.opackets, "rx_missed", (json_int_t)s.imissed,
			 "rx_nombuf", (json_int_t)s.rx_nombuf, "tx_errors", (json_int_t)s.oerrors);
}

/* Each lcore's part: how evenly the address pairs spread. */
static json_t *
lcores_json(void)
{
	json_t *a = json_array();

	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		const struct lsd_bridge *b = lsd_bset.b[i];

		json_array_append_new(a, json_pack("{si sI sI sI}", "lcore", (int)lsd_bset.lcore[i],
			"flows", (json_int_t)ls_flow_count(b->flows),
			"rx_host", (json_int_t)__atomic_load_n(&b->st.rx_host, __ATOMIC_RELAXED),
			"rx_fabric", (json_int_t)__atomic_load_n(&b->st.rx_fabric, __ATOMIC_RELAXED)));
	}
	return a;
}

/* How frames reach the lcores (bridge_spread.c, port_rss.c). */
static json_t *
spread_json(const struct lsd_bridge *b)
{
	return json_pack("{ss si s{sb sb} sb}", "mode",
			 lsd_bset.rss ? "rss" : lsd_bset.soft ? "soft" : "none",
			 "queues", (int)lsd.bridge_queues, "nic_hash", "host", b->host->rss_nic,
			 "fabric", b->fab->rss_nic, "own_to_lead", b->fab->own_to_lead);
}

json_t *
lsd_bridge_status_json(void)
{
	const struct lsd_bridge *b = lsd_bset.n > 0 ? lsd_bset.b[0] : NULL;
	struct lsd_bridge_stats st;
	uint64_t flows = 0, bytes = 0, unlogged = 0;

	if (b == NULL)
		return json_null();
	counters_sum(&st);
	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		flows += ls_flow_count(lsd_bset.b[i]->flows);
		bytes += ls_flow_table_bytes(lsd_bset.b[i]->flows);
		unlogged += lsd_bset.b[i]->fo_unlogged;
	}
	return json_pack("{ss ss si sI sI sI so so so so s{sb sI} so so so so}", "host_port",
			 b->host->conf->name,
			 "fabric_port", b->fab->conf->name, "lcore", (int)bctl.lcore,
			 "flows", (json_int_t)flows, "flow_table_bytes", (json_int_t)bytes,
			 "link_bps", (json_int_t)lsd.cfg.bridge.link_bps,
			 "counters", counters_json(&st), "held", held_json(),
			 "host", port_json(b->host), "fabric", port_json(b->fab),
			 "failover", "enabled", b->fo_on,
			 "moves_unlogged", (json_int_t)unlogged, "balance", lsd_bal_json(),
			 "lcores", lcores_json(), "shares", lsd_share_json(),
			 "spread", spread_json(b));
}

/* Every control-loop pass: the data path's moves into the event log, and
 * the lcores' shares of the link. */
void
lsd_bridge_events_poll(void)
{
	if (!lsd.cfg.bridge.enabled || lsd_bset.n == 0)
		return;
	for (unsigned int i = 0; i < lsd_bset.n; i++)
		if (lsd_bset.b[i]->fo_on)
			lsd_fo_events_poll(lsd_bset.b[i]);
	lsd_bal_poll();
	lsd_share_poll();
}

static void
cmd_bridge(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	if (!bridge_on(req))
		return;
	ls_ctl_reply_ok(req, lsd_bridge_status_json());
}

/* Slice s of the lead summed with its namesakes on the other lcores. */
static void
slice_sum(unsigned int s, const char *name, struct ls_slice_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		const struct lsd_bridge *b = lsd_bset.b[i];
		int k = i == 0 ? (int)s : ls_slice_find(b->sched, name);
		struct ls_slice_stats st;

		if (k < 0 || ls_slice_get(b->sched, (unsigned int)k, NULL, &st) < 0)
			continue;
		sum->enq_pkts += st.enq_pkts;
		sum->enq_bytes += st.enq_bytes;
		sum->deq_pkts += st.deq_pkts;
		sum->deq_bytes += st.deq_bytes;
		sum->drops += st.drops;
		sum->sent_prio += st.sent_prio;
		sum->sent_min += st.sent_min;
		sum->sent_excess += st.sent_excess;
		sum->backlog += st.backlog;
	}
}

static void
cmd_slices(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	const struct lsd_bridge *b;
	json_t *a;

	if (!bridge_on(req))
		return;
	b = lsd_bset.b[0];
	a = json_array();
	for (unsigned int s = 0; s < ls_slice_count(b->sched); s++) {
		struct ls_slice_conf c;
		struct ls_slice_stats st;
		int pi = b->slice_pol[s];
		json_t *o;

		if (pi < 0 || ls_slice_get(b->sched, s, &c, NULL) < 0)
			continue;
		slice_sum(s, c.name, &st);
		o = ls_policy_slice_to_json(&bctl.cur->slices[pi]);
		json_object_set_new(o, "stats", json_pack(
			"{sI sI sI sI sI sI sI sI si}", "enq_pkts", (json_int_t)st.enq_pkts,
			"enq_bytes", (json_int_t)st.enq_bytes, "sent_pkts", (json_int_t)st.deq_pkts,
			"sent_bytes", (json_int_t)st.deq_bytes, "drops", (json_int_t)st.drops,
			"sent_priority", (json_int_t)st.sent_prio, "sent_min", (json_int_t)st.sent_min,
			"sent_excess", (json_int_t)st.sent_excess, "backlog", (int)st.backlog));
		json_array_append_new(a, o);
	}
	ls_ctl_reply_ok(req, a);
}

/* CE marks of the lead's slice s and its namesakes elsewhere. */
static uint64_t
slice_ce_sum(unsigned int s, const char *name)
{
	uint64_t ce = 0;

	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		const struct lsd_bridge *b = lsd_bset.b[i];
		int k = i == 0 ? (int)s : ls_slice_find(b->sched, name);

		if (k >= 0)
			ce += __atomic_load_n(&b->slice_ce[k], __ATOMIC_RELAXED);
	}
	return ce;
}

/* Congestion control at a glance: per slice its settings and CE marks, CE
 * from the fabric by the sender's path, the NP/RP counters. */
static void
cmd_cc(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	const struct lsd_bridge *b;
	struct lsd_bridge_stats st;
	json_t *sl, *paths, *cnt;

	if (!bridge_on(req))
		return;
	b = lsd_bset.b[0];
	counters_sum(&st);
	sl = json_array();
	for (unsigned int s = 0; s < ls_slice_count(b->sched); s++) {
		int pi = b->slice_pol[s];
		const char *name;
		json_t *o, *whole;

		if (pi < 0)
			continue;
		name = bctl.cur->slices[pi].conf.name;
		o = json_pack("{ss sI}", "name", name, "ce", (json_int_t)slice_ce_sum(s, name));
		whole = ls_policy_slice_to_json(&bctl.cur->slices[pi]);
		json_object_update(o, json_object_get(whole, "cc"));
		json_decref(whole);
		json_array_append_new(sl, o);
	}
	paths = json_array();
	for (unsigned int p = 0; p < LS_POLICY_MAX_PATHS; p++) {
		uint64_t ce = 0;

		for (unsigned int i = 0; i < lsd_bset.n; i++)
			ce += __atomic_load_n(&lsd_bset.b[i]->path_ce[p], __ATOMIC_RELAXED);
		if (ce != 0)
			json_array_append_new(paths, json_pack("{si sI}", "path", (int)p, "ce",
							       (json_int_t)ce));
	}
	cnt = json_object();
#define X(n) json_object_set_new(cnt, #n, json_integer((json_int_t)st.n));
	X(ce_from_host) X(ce_from_fabric) X(cnp_sent) X(cnp_rate_limited) X(cnp_unpaired)
	X(cnp_no_mbuf) X(cnp_received) X(cnp_unmatched) X(cnp_held) X(cnp_held_applied)
	X(cnp_fair_skipped) X(cnp_drain_skipped) X(cnp_floored)
	X(qp_pairs_learnt) X(qp_pairs_full) X(qp_pairs_aged)
#undef X
	ls_ctl_reply_ok(req, json_pack("{so so so}", "slices", sl, "paths_ce", paths,
				       "counters", cnt));
}

void lsd_flows_cmd(struct ls_ctl_req *req, json_t *args, void *aux);

int
lsd_bridge_register(struct ls_ctl *ctl)
{
	int rc = 0;

	if (!lsd.cfg.bridge.enabled)
		return 0;
	bctl.lcore = lsd.ports[ls_config_port_index(&lsd.cfg, lsd.cfg.bridge.fabric_port)].lcore;
	if (lsd_bal_ctl_init(bctl.lcore) < 0)
		return -ENOMEM;
	if (lsd.cfg.bridge.balance.enabled)
		rc |= lsd_bal_register(ctl);
	/* slice.set and flow.policy take a whole object that lib/policy checks
	 * key by key (its messages name the key path): no key list here */
	rc |= ls_ctl_register_keys(ctl, "bridge", "", "data path ports, flow count and "
				   "counters", "", cmd_bridge, NULL);
	rc |= ls_ctl_register_keys(ctl, "flows", "[top N] [by bytes|pkts|ce|drops|rate] "
				   "[dir host|fabric] [cc true]", "the busiest flows (cc: their "
				   "congestion control)", "top by dir cc", lsd_flows_cmd, NULL);
	rc |= ls_ctl_register_keys(ctl, "cc", "", "congestion control: per slice its mode and "
				   "CE marks, CE by path, CNP counters", "", cmd_cc, NULL);
	rc |= ls_ctl_register_keys(ctl, "slices", "", "slices: shares and counters", "",
				   cmd_slices, NULL);
	rc |= ls_ctl_register_keys(ctl, "policy", "", "the data-path policy (slices and flow "
				   "rules)", "", cmd_policy, NULL);
	rc |= ls_ctl_register(ctl, "slice.set", "name [min_bps] [max_bps] [min_pps] [max_pps] "
			      "[weight] [latency] [qlen] [flow_bps] [match] [path]",
			      "add or change a slice (saved)", cmd_entry_set,
			      (void *)&slice_kind);
	rc |= ls_ctl_register_keys(ctl, "slice.del", "name", "remove a slice (its flows go to "
				   "default; saved)", "name", cmd_entry_del,
				   (void *)&slice_kind);
	rc |= ls_ctl_register(ctl, "flow.policy", "name [match] [path] [slice]",
			      "add or change a flow rule (saved)", cmd_entry_set,
			      (void *)&rule_kind);
	rc |= ls_ctl_register_keys(ctl, "flow.policy.del", "name", "remove a flow rule (saved)",
				   "name", cmd_entry_del,
				   (void *)&rule_kind);
	return rc < 0 ? -EINVAL : 0;
}

void
lsd_bridge_ctl_fini(void)
{
	free(bctl.cur);
	bctl.cur = NULL;
	lsd_bal_ctl_fini();
}
