/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The `flows` command: the busiest flows of the data path's table, found by
 * one pass over the state lines with a min-heap of the top N. It runs on
 * the control thread and reads the lcore's lines with plain loads: a line
 * reused while it is read gives one stale row, never a crash (the table's
 * memory lives as long as the daemon). 1 M flows take tens of ms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "ls_ctl.h"

#define TOP_MAX 1000

struct row {
	uint64_t score;
	int32_t idx;
	uint8_t li;                 /* the lcore's index (many cores) */
};

static uint64_t
score(const struct lsd_bridge *b, const struct ls_flow *f, int by)
{
	switch (by) {
	case 1: return f->pkts;
	case 2: return f->ce;
	case 3: return f->drops;
	case 4: {
		uint64_t tpb = f->tpb ? f->tpb : b->slice_tpb[f->slice];

		return tpb ? (uint64_t)(((unsigned __int128)b->hz << 35) / tpb) : 0;
	}
	default: return f->bytes;
	}
}

static void
heap_push(struct row *h, unsigned int *n, unsigned int cap, struct row r)
{
	unsigned int i;

	if (*n == cap) {
		if (r.score <= h[0].score)
			return;
		/* replace the smallest and sift down */
		i = 0;
		for (;;) {
			unsigned int c = 2 * i + 1, s = i;
			uint64_t least = r.score;

			if (c < cap && h[c].score < least)
				s = c, least = h[c].score;
			if (c + 1 < cap && h[c + 1].score < least)
				s = c + 1;
			if (s == i)
				break;
			h[i] = h[s];
			i = s;
		}
		h[i] = r;
		return;
	}
	for (i = (*n)++; i > 0 && h[(i - 1) / 2].score > r.score; i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = r;
}

static int
cmp_desc(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return (x->score < y->score) - (x->score > y->score);
}

static json_t *
key_json(const struct ls_flow_key *k)
{
	char s[64], d[64];
	int af = k->family == 4 ? AF_INET : AF_INET6;

	inet_ntop(af, k->family == 4 ? k->src + 12 : k->src, s, sizeof(s));
	inet_ntop(af, k->family == 4 ? k->dst + 12 : k->dst, d, sizeof(d));
	return json_pack("{ss ss si si si si si}", "src", s, "dst", d, "proto", k->proto,
			 "sport", ntohs(k->sport), "dport", ntohs(k->dport),
			 "qp_label", (int)ntohl(k->qp_label), "vid", ntohs(k->vid));
}

static const char *const kinds[] = {"ip", "tcp", "udp", "roce"};

static json_t *
flow_json(const struct lsd_bridge *b, const struct ls_policy *pol, int32_t idx, bool cc)
{
	const struct ls_flow *f = ls_flow_at(b->flows, idx);
	const struct ls_flow_key *k = ls_flow_key_at(b->flows, idx);
	int pi = b->slice_pol[f->slice];
	json_t *o;

	if (k == NULL)
		return NULL;
	o = key_json(k);
	json_object_set_new(o, "kind", json_string(kinds[f->kind & 3]));
	json_object_set_new(o, "dir", json_string(f->dir ? "fabric" : "host"));
	json_object_set_new(o, "slice", json_string(pi >= 0 ? pol->slices[pi].conf.name : "?"));
	json_object_set_new(o, "path", f->path == 0xff ? json_null() : json_integer(f->path));
	json_object_set_new(o, "pkts", json_integer((json_int_t)f->pkts));
	json_object_set_new(o, "bytes", json_integer((json_int_t)f->bytes));
	json_object_set_new(o, "ce", json_integer(f->ce));
	json_object_set_new(o, "drops", json_integer(f->drops));
	json_object_set_new(o, "pace_bps", json_integer((json_int_t)score(b, f, 4)));
	if (cc)
		json_object_set_new(o, "cc", lsd_cc_flow_json(b, idx, f));
	if (b->fo_on && f->kind == LS_FLOW_K_ROCE && f->dir == 0)
		json_object_set_new(o, "failover", lsd_fo_flow_json(b, idx));
	return o;
}

/* Parses args (top, by, dir, cc); replies bad_args itself. */
static int
flows_args(struct ls_ctl_req *req, json_t *args, unsigned int *top, int *by, int *dir, bool *cc)
{
	static const char *const bys[] = {"bytes", "pkts", "ce", "drops", "rate"};
	uint64_t n = 20;
	json_t *v;

	if (ls_ctl_arg_uint(req, args, "top", 1, TOP_MAX, &n) < 0)
		return -EINVAL;
	*top = (unsigned int)n;
	*by = 0;
	*dir = -1;
	v = json_object_get(args, "by");
	if (v != NULL) {
		*by = -1;
		for (int i = 0; i < 5 && json_is_string(v); i++)
			if (strcmp(json_string_value(v), bys[i]) == 0)
				*by = i;
		if (*by < 0) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
					   "args.by: expected bytes, pkts, ce, drops or rate");
			return -EINVAL;
		}
	}
	v = json_object_get(args, "cc");
	if (v != NULL && !json_is_boolean(v)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.cc: expected true or false");
		return -EINVAL;
	}
	*cc = json_is_true(v);
	v = json_object_get(args, "dir");
	if (v != NULL) {
		if (json_is_string(v) && strcmp(json_string_value(v), "host") == 0)
			*dir = 0;
		else if (json_is_string(v) && strcmp(json_string_value(v), "fabric") == 0)
			*dir = 1;
		else {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.dir: expected host or fabric");
			return -EINVAL;
		}
	}
	return 0;
}

void lsd_flows_cmd(struct ls_ctl_req *req, json_t *args, void *aux);

void
lsd_flows_cmd(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const struct ls_policy *pol;
	unsigned int top, n = 0;
	uint64_t count = 0;
	struct row *h;
	int by, dir;
	bool cc;
	json_t *a;

	if (lsd_bset.n == 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no data path (no \"bridge\" in the config)");
		return;
	}
	if (flows_args(req, args, &top, &by, &dir, &cc) < 0)
		return;
	pol = lsd_bset.b[0]->policy;
	h = malloc(sizeof(*h) * top);
	if (h == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
		return;
	}
	for (unsigned int li = 0; li < lsd_bset.n; li++) {
		const struct lsd_bridge *b = lsd_bset.b[li];

		count += ls_flow_count(b->flows);
		for (uint32_t i = 0; i < ls_flow_capacity(b->flows); i++) {
			const struct ls_flow *f = ls_flow_at(b->flows, (int32_t)i);

			if (!f->used || (dir >= 0 && f->dir != dir))
				continue;
			heap_push(h, &n, top, (struct row){score(b, f, by), (int32_t)i, (uint8_t)li});
		}
	}
	qsort(h, n, sizeof(*h), cmp_desc);
	a = json_array();
	for (unsigned int i = 0; i < n; i++) {
		json_t *o = flow_json(lsd_bset.b[h[i].li], pol, h[i].idx, cc);

		if (o == NULL)
			continue;
		if (lsd_bset.n > 1)
			json_object_set_new(o, "lcore", json_integer(lsd_bset.lcore[h[i].li]));
		json_array_append_new(a, o);
	}
	free(h);
	ls_ctl_reply_ok(req, json_pack("{sI so}", "flows", (json_int_t)count, "top", a));
}
