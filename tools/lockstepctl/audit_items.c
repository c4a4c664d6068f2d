/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl audit's judges: one function per item turns what audit.c
 * collected from every daemon into rows, each passing or failing with a
 * one-line reason. They only read; nothing here talks to a daemon.
 *
 * What "the fleet's" means: links, firmware and clock compare each node
 * with the fleet's most common value (speed, driver, firmware of that
 * driver, reference), since a fleet is ready when it is uniform, and the
 * odd one out is the node to look at.
 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audit.h"
#include "lockstepctl.h"

const char *const au_item_names[AU_N] = {
	[AU_DAEMONS] = "daemons", [AU_REACH] = "reach", [AU_MTU] = "mtu",
	[AU_CAPACITY] = "capacity", [AU_PATHS] = "paths", [AU_LINKS] = "links", [AU_FIRMWARE] = "firmware",
	[AU_CLOCK] = "clock",
};

/* ---- helpers -------------------------------------------------------------- */

static json_t *
row_new(const struct au_node *nd, const char *key, const char *val)
{
	json_t *r = json_pack("{s:s}", "node", nd->name);

	if (key != NULL)
		json_object_set_new(r, key, json_string(val));
	return r;
}

/* Set the row's verdict and reason (detail is freed) and add it to rows. */
static void
row_done(json_t *rows, json_t *r, bool pass, char *detail)
{
	json_object_set_new(r, "pass", json_boolean(pass));
	json_object_set_new(r, "detail", json_string(detail));
	free(detail);
	json_array_append_new(rows, r);
}

/* "path 2" or "paths 0, 2, 3" */
static char *
paths_list(const json_t *a)
{
	char *s = xstrdup(json_array_size(a) == 1 ? "path " : "paths "), *t;
	const json_t *v;
	size_t i;

	json_array_foreach(a, i, v) {
		t = xasprintf("%s%s%" JSON_INTEGER_FORMAT, s, i ? ", " : "", json_integer_value(v));
		free(s);
		s = t;
	}
	return s;
}

/* s + sep + add, s freed (add may be NULL: s as is) */
static char *
append(char *s, const char *sep, char *add)
{
	char *t;

	if (add == NULL)
		return s;
	t = s[0] ? xasprintf("%s%s%s", s, sep, add) : xstrdup(add);
	free(s);
	free(add);
	return t;
}

/* The most common value of a (json_equal), NULL when a is empty. */
static const json_t *
mode_of(const json_t *a)
{
	const json_t *best = NULL, *v, *w;
	size_t i, k, most = 0;

	json_array_foreach(a, i, v) {
		size_t c = 0;

		json_array_foreach(a, k, w)
			c += json_equal(v, w);
		if (c > most) {
			most = c;
			best = v;
		}
	}
	return best;
}

static bool
asked(const struct au_node *nd)
{
	return nd->status != NULL;
}

/* Each peer of nd (from its paths reply) in turn. */
#define FOR_PEERS(nd, i, p) json_array_foreach(json_object_get((nd)->paths, "peers"), i, p)

/* One row per pair, by row_fn, for the items whose rows are pairs. */
typedef void pair_row_fn(json_t *rows, const struct au_opts *o, const struct au_node *nd,
			 const json_t *peer);

static void
judge_pairs(json_t *rows, const struct au_opts *o, const struct au_node *nodes, size_t n,
	    pair_row_fn *row_fn)
{
	for (size_t k = 0; k < n; k++) {
		const json_t *p;
		size_t i;

		FOR_PEERS(&nodes[k], i, p)
			row_fn(rows, o, &nodes[k], p);
	}
}

/* ---- daemons -------------------------------------------------------------- */

static void
judge_daemons(json_t *rows, const struct au_node *nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct au_node *nd = &nodes[i];
		json_t *r = row_new(nd, "socket", nd->sock);
		size_t twin = 0;

		for (size_t k = 0; k < n; k++)
			twin += k != i && asked(&nodes[k]) && strcmp(nodes[k].name, nd->name) == 0;
		if (!asked(nd))
			row_done(rows, r, false, xasprintf("no answer: %s", nd->why));
		else if (twin > 0)
			row_done(rows, r, false, xasprintf("node name %s also answers on another "
							   "socket", nd->name));
		else
			row_done(rows, r, true, xasprintf("%s answers", nd->name));
	}
}

/* ---- reach ---------------------------------------------------------------- */

static void
reach_row(json_t *rows, const struct au_opts *o, const struct au_node *nd, const json_t *peer)
{
	json_t *r = row_new(nd, "peer", get_s(peer, "name"));
	json_t *down = json_array(), *lossy = json_array();
	const json_t *q, *paths = json_object_get(peer, "paths");
	double worst = 0;
	char *d = xstrdup("");
	size_t i;

	json_array_foreach(paths, i, q) {
		double loss = json_number_value(json_object_get(q, "loss_pct"));

		if (strcmp(get_s(q, "state"), "up") != 0)
			json_array_append_new(down, json_integer((json_int_t)i));
		else if (loss > o->max_loss)
			json_array_append_new(lossy, json_integer((json_int_t)i));
		if (loss > worst)
			worst = loss;
	}
	if (json_array_size(down) > 0)
		d = append(d, "; ", append(paths_list(down), " ", xstrdup("not up")));
	if (json_array_size(lossy) > 0)
		d = append(d, "; ", append(paths_list(lossy), " ",
					   xasprintf("lost over %.1f%%", o->max_loss)));
	if (json_array_size(paths) == 0)
		d = append(d, "; ", xstrdup("no paths"));
	json_object_set_new(r, "paths", json_integer((json_int_t)json_array_size(paths)));
	json_object_set_new(r, "down", down);
	json_object_set_new(r, "lossy", lossy);
	json_object_set_new(r, "loss_pct_max", json_real(worst));
	if (d[0] == '\0') {
		free(d);
		d = xasprintf("%zu paths up, loss at most %.1f%%", json_array_size(paths), worst);
		row_done(rows, r, true, d);
	} else {
		row_done(rows, r, false, d);
	}
}

/* ---- mtu ------------------------------------------------------------------ */

/* What one path.mtu run says: the sizes that failed, and the largest that passed. */
static bool
mtu_verdict(const json_t *run, json_t *r, char **d)
{
	json_t *failed = json_array();
	const json_t *s;
	json_int_t best = 0;
	size_t i;

	json_array_foreach(json_object_get(run, "sizes"), i, s) {
		json_int_t size = json_integer_value(json_object_get(s, "size"));

		if (json_is_true(json_object_get(s, "ok"))) {
			if (size > best)
				best = size;
			continue;
		}
		json_array_append_new(failed, json_pack("{s:I, s:O}", "size", size, "paths",
							json_object_get(s, "paths_failed")));
		if (json_is_true(json_object_get(s, "over_port_mtu")))
			*d = append(*d, "; ", xasprintf("%" JSON_INTEGER_FORMAT ": over the port's "
							"MTU %s", size, get_s(run, "port_mtu")));
		else
			*d = append(*d, "; ", append(xasprintf("%" JSON_INTEGER_FORMAT ": none back "
							       "on", size), " ",
						     paths_list(json_object_get(s, "paths_failed"))));
	}
	json_object_set_new(r, "largest_ok", best ? json_integer(best) : json_null());
	json_object_set_new(r, "failed", failed);
	return json_array_size(failed) == 0;
}

static void
mtu_row(json_t *rows, const struct au_opts *o, const struct au_node *nd, const json_t *pe)
{
	const char *peer = get_s(pe, "name");
	const json_t *run = json_object_get(nd->mtu, peer);
	json_t *r = row_new(nd, "peer", peer);
	char *d = xstrdup("");
	bool pass;

	if (run == NULL || json_object_get(run, "error") != NULL) {
		free(d);
		row_done(rows, r, false, xasprintf("not probed: %s", run ? get_s(run, "error") :
						   "no answer"));
		return;
	}
	if (strcmp(get_s(run, "state"), "done") != 0) {
		free(d);
		row_done(rows, r, false, xstrdup("the run did not finish in time"));
		return;
	}
	pass = mtu_verdict(run, r, &d);
	if (pass) {
		free(d);
		d = xasprintf("%zu sizes back on every path, up to %s", o->n_sizes,
			      get_s(r, "largest_ok"));
	}
	row_done(rows, r, pass, d);
}

/* ---- capacity ------------------------------------------------------------- */

/*
 * A path's figure for judging: its round trip's Mb/s (the narrower way),
 * INFINITY when the stamps did not resolve its trains' spacing (faster than
 * this node can tell), NAN when too little came back.
 */
static double
train_mbps(const json_t *path)
{
	const json_t *v = json_object_get(path, "rtt_mbps");

	if (json_is_number(v))
		return json_number_value(v);
	return json_is_true(json_object_get(path, "rtt_unresolved")) ? INFINITY : NAN;
}

static int
cmp_mbps(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of the pair's figures (NAN ones left out); NAN when none. */
static double
pair_median(const json_t *paths)
{
	double v[64];
	size_t i, n = 0;
	const json_t *p;

	json_array_foreach(paths, i, p)
		if (n < 64 && !isnan(train_mbps(p)))
			v[n++] = train_mbps(p);
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(v[0]), cmp_mbps);
	return n % 2 ? v[n / 2] : isinf(v[n / 2]) ? INFINITY : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "0.10 Gb/s", "faster than the stamps resolve" or "nothing back", in buf */
static const char *
gbps(double v, char *buf, size_t len)
{
	if (isnan(v))
		return "nothing back";
	if (isinf(v))
		return "faster than the stamps resolve";
	snprintf(buf, len, "%.2f Gb/s", v / 1000);
	return buf;
}

static void
capacity_row(json_t *rows, const struct au_opts *o, const struct au_node *nd, const json_t *pe)
{
	const char *peer = get_s(pe, "name");
	const json_t *run = json_object_get(nd->trains, peer), *p;
	json_t *r = row_new(nd, "peer", peer), *failed = json_array();
	double med, res, lo = INFINITY, hi = 0;
	char *d = xstrdup(""), buf[32];
	size_t i, unresolved = 0;

	if (run == NULL || json_object_get(run, "error") != NULL ||
	    strcmp(get_s(run, "state"), "done") != 0) {
		json_decref(failed);
		free(d);
		row_done(rows, r, false, run == NULL || json_object_get(run, "error") != NULL ?
			 xasprintf("not measured: %s", run ? get_s(run, "error") : "no answer") :
			 xstrdup("the trains did not finish in time"));
		return;
	}
	med = pair_median(json_object_get(run, "paths"));
	res = json_number_value(json_object_get(run, "resolution_mbps"));
	json_array_foreach(json_object_get(run, "paths"), i, p) {
		double v = train_mbps(p);
		/* an unresolved median is at least what the stamps resolve: only
		 * a figure under the fraction of that is surely under the
		 * fraction of the median (a lab's coarse stamps put a train
		 * split over a few polls just under the resolution: CI saw a
		 * healthy path fail at 1.76 Gb/s against 1.9) */
		bool bad = isnan(v) || v < o->capacity_frac * (isinf(med) ? res : med) ||
			   v < o->min_gbps * 1000;

		unresolved += isinf(v);
		if (!isnan(v) && !isinf(v)) {
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		if (!bad)
			continue;
		json_array_append_new(failed, json_integer((json_int_t)i));
		d = append(d, "; ", xasprintf("path %zu %s", i, gbps(v, buf, sizeof(buf))));
	}
	json_object_set_new(r, "median_mbps", isnan(med) || isinf(med) ? json_null() : json_real(med));
	json_object_set_new(r, "failed", failed);
	json_object_set_new(r, "paths", json_deep_copy(json_object_get(run, "paths")));
	if (json_array_size(failed) > 0) {
		d = append(d, "", xasprintf(" (the pair's median: %s)", gbps(med, buf, sizeof(buf))));
		row_done(rows, r, false, d);
		return;
	}
	free(d);
	d = hi > 0 ? xasprintf("%.2f-%.2f Gb/s", lo / 1000, hi / 1000) : xstrdup("");
	if (unresolved > 0)
		d = append(d, ", ", xasprintf("%zu path%s faster than the stamps resolve", unresolved,
					      unresolved == 1 ? "" : "s"));
	row_done(rows, r, true, d);
}

/* ---- paths ---------------------------------------------------------------- */

/* A complete trace's routers as one string ("10.255.1.1 10.255.0.2 ..."),
 * and how many; NULL for a trace that is not complete. */
static char *
hop_key(const json_t *t, size_t *n_hops)
{
	char *k = xstrdup("");
	const json_t *h;
	size_t i;

	if (!json_is_true(json_object_get(t, "complete"))) {
		free(k);
		return NULL;
	}
	json_array_foreach(json_object_get(t, "hops"), i, h)
		k = append(k, " ", xstrdup(get_s(h, "addr")));
	*n_hops = json_array_size(json_object_get(t, "hops"));
	return k;
}

static void
paths_row(json_t *rows, const struct au_opts *o, const struct au_node *nd, const json_t *pe)
{
	const char *peer = get_s(pe, "name");
	const json_t *traces = json_object_get(nd->routes, peer), *t;
	json_t *r = row_new(nd, "peer", peer), *keys = json_array();
	size_t i, complete = 0, one_router = 0, distinct = 0;
	unsigned int need;

	json_array_foreach(traces, i, t) {
		size_t hops = 0;
		char *k = hop_key(t, &hops);

		if (k == NULL)
			continue;
		complete++;
		one_router += hops == 1;
		json_array_append_new(keys, json_string(k));
		free(k);
	}
	json_array_foreach(keys, i, t) {
		size_t j;

		for (j = 0; j < i && !json_equal(t, json_array_get(keys, j)); j++)
			;
		distinct += j == i;
	}
	json_decref(keys);
	/* across one router (hosts on one leaf) there is one path to take */
	need = complete > 0 && one_router == complete ? 1 : o->min_paths;
	json_object_set_new(r, "paths", json_integer((json_int_t)json_array_size(traces)));
	json_object_set_new(r, "traced", json_integer((json_int_t)complete));
	json_object_set_new(r, "distinct", json_integer((json_int_t)distinct));
	json_object_set_new(r, "needed", json_integer(need));
	row_done(rows, r, distinct >= need && complete > 0,
		 xasprintf("%zu distinct router list%s among %zu complete trace%s of %zu paths "
			   "(needs %u)", distinct, distinct == 1 ? "" : "s", complete,
			   complete == 1 ? "" : "s", json_array_size(traces), need));
}

/* ---- links and firmware ---------------------------------------------------- */

/* Every port of every node that answered, with what to compare of it. */
#define FOR_PORTS(nodes, n, k, i, pt) \
	for (size_t k = 0; k < (n); k++) \
		json_array_foreach(json_object_get((nodes)[k].status, "ports"), i, pt)

static void
judge_links(json_t *rows, json_t *item, const struct au_node *nodes, size_t n)
{
	json_t *speeds = json_array();
	const json_t *pt, *fleet;
	size_t i;

	FOR_PORTS(nodes, n, k, i, pt)
		if (is_num(json_object_get(pt, "speed_mbps")))
			json_array_append(speeds, json_object_get(pt, "speed_mbps"));
	fleet = mode_of(speeds);
	json_object_set_new(item, "summary", fleet ? json_sprintf("%s Mb/s", f_str(fleet)) :
			    json_string("no port reports a speed"));
	FOR_PORTS(nodes, n, k, i, pt) {
		json_t *sp = json_object_get(pt, "speed_mbps");
		json_t *r = row_new(&nodes[k], "port", get_s(pt, "name"));
		bool up = json_is_true(json_object_get(pt, "link_up"));

		json_object_set(r, "link_up", json_object_get(pt, "link_up"));
		json_object_set(r, "speed_mbps", sp);
		json_object_set(r, "duplex", json_object_get(pt, "duplex"));
		if (!up)
			row_done(rows, r, false, xstrdup("link down"));
		else if (fleet != NULL && is_num(sp) && !json_equal(sp, fleet))
			row_done(rows, r, false, xasprintf("%s Mb/s, the fleet's is %s Mb/s",
							   f_str(sp), f_str(fleet)));
		else
			row_done(rows, r, true, xasprintf("up, %s Mb/s %s duplex", f_str(sp),
							  get_s(pt, "duplex")));
	}
	json_decref(speeds);
}

/* The most common firmware among ports of driver drv (reported ones only). */
static const json_t *
fw_of(const struct au_node *nodes, size_t n, const char *drv, json_t *scratch)
{
	const json_t *pt;
	size_t i;

	json_array_clear(scratch);
	FOR_PORTS(nodes, n, k, i, pt)
		if (strcmp(get_s(pt, "driver"), drv) == 0 &&
		    json_is_string(json_object_get(pt, "fw_version")))
			json_array_append(scratch, json_object_get(pt, "fw_version"));
	return mode_of(scratch);
}

static void
judge_firmware(json_t *rows, json_t *item, const struct au_node *nodes, size_t n)
{
	json_t *drivers = json_array(), *fws = json_array();
	const json_t *pt, *drv;
	size_t i;

	FOR_PORTS(nodes, n, k, i, pt)
		json_array_append(drivers, json_object_get(pt, "driver"));
	drv = mode_of(drivers);
	{
		const json_t *fw = drv ? fw_of(nodes, n, f_str(drv), fws) : NULL;

		json_object_set_new(item, "summary", json_sprintf("%s, firmware %s", f_str(drv),
				    fw ? f_str(fw) : "not reported"));
	}
	FOR_PORTS(nodes, n, k, i, pt) {
		json_t *fw = json_object_get(pt, "fw_version");
		const json_t *want;
		json_t *r = row_new(&nodes[k], "port", get_s(pt, "name"));

		json_object_set(r, "driver", json_object_get(pt, "driver"));
		json_object_set(r, "fw_version", fw);
		want = fw_of(nodes, n, get_s(pt, "driver"), fws);
		if (drv != NULL && !json_equal(json_object_get(pt, "driver"), drv))
			row_done(rows, r, false, xasprintf("driver %s, the fleet's is %s",
							   get_s(pt, "driver"), f_str(drv)));
		else if (json_is_string(fw) && want != NULL && !json_equal(fw, want))
			row_done(rows, r, false, xasprintf("firmware %s, the fleet's %s ports run "
							   "%s", f_str(fw), get_s(pt, "driver"),
							   f_str(want)));
		else
			row_done(rows, r, true, xasprintf("%s, firmware %s", get_s(pt, "driver"),
							  json_is_string(fw) ? f_str(fw) :
							  "not reported"));
	}
	json_decref(drivers);
	json_decref(fws);
}

/* ---- clock ---------------------------------------------------------------- */

static const json_t *
sync_state(const struct au_node *nd)
{
	return json_object_get(nd->sync, "state");
}

static bool
synced(const struct au_node *nd)
{
	const char *st = get_s(sync_state(nd), "status");

	return strcmp(st, "synced") == 0 || strcmp(st, "reference") == 0;
}

static char *
clock_problem(const struct au_node *nd, const json_t *ref)
{
	const json_t *st = sync_state(nd), *clk = json_object_get(nd->status, "clock");

	if (strcmp(get_s(clk, "source"), "tsc") == 0 &&
	    json_is_false(json_object_get(clk, "invariant_tsc")))
		return xstrdup("TSC clock on a CPU without an invariant TSC");
	if (!json_is_true(json_object_get(nd->sync, "enabled")))
		return xstrdup("clock sync off: not on fleet time");
	if (!synced(nd))
		return xasprintf("not on fleet time: sync %s", get_s(st, "status"));
	if (ref != NULL && !json_equal(json_object_get(st, "ref_id"), ref))
		return xasprintf("follows reference %s, the fleet follows %s",
				 get_s(st, "ref_id"), f_str(ref));
	return NULL;
}

/* The name of the node whose id is ref, "-" when none of ours. */
static const char *
ref_name(const struct au_node *nodes, size_t n, const json_t *ref)
{
	for (size_t k = 0; ref != NULL && k < n; k++)
		if (asked(&nodes[k]) && json_equal(json_object_get(nodes[k].status, "node_id"), ref))
			return nodes[k].name;
	return "-";
}

static void
judge_clock(json_t *rows, json_t *item, const struct au_node *nodes, size_t n)
{
	json_t *refs = json_array();
	const json_t *ref;

	for (size_t k = 0; k < n; k++)
		if (asked(&nodes[k]) && synced(&nodes[k]))
			json_array_append(refs, json_object_get(sync_state(&nodes[k]), "ref_id"));
	ref = mode_of(refs);
	json_object_set_new(item, "summary", json_sprintf("reference %s (node id %s)",
							  ref_name(nodes, n, ref), f_str(ref)));
	for (size_t k = 0; k < n; k++) {
		const struct au_node *nd = &nodes[k];
		const json_t *st = sync_state(nd), *clk = json_object_get(nd->status, "clock");
		json_t *r;
		char *why;

		if (!asked(nd))
			continue;
		r = row_new(nd, NULL, NULL);
		why = clock_problem(nd, ref);
		json_object_set(r, "source", json_object_get(clk, "source"));
		json_object_set_new(r, "status", json_string(json_is_true(json_object_get(
			nd->sync, "enabled")) ? get_s(st, "status") : "off"));
		json_object_set(r, "ref_id", json_object_get(st, "ref_id"));
		json_object_set(r, "half_ns", json_object_get(json_object_get(nd->sync, "reading"),
							      "half_ns"));
		if (why != NULL)
			row_done(rows, r, false, why);
		else
			row_done(rows, r, true, xasprintf("%s clock, %s, fleet time within %s us",
							  get_s(clk, "source"), get_s(st, "status"),
							  f_us(json_object_get(r, "half_ns"))));
	}
	json_decref(refs);
}

/* ---- the item ------------------------------------------------------------- */

/* What an item holds each pair to, for the items whose rows are pairs. */
static json_t *
summary(enum au_item it, const struct au_opts *o)
{
	char sizes[64] = "";

	for (size_t i = 0; i < o->n_sizes; i++)
		snprintf(sizes + strlen(sizes), sizeof(sizes) - strlen(sizes), "%s%d",
			 i ? ", " : "", o->sizes[i]);
	switch (it) {
	case AU_REACH:
		return json_sprintf("every path up, loss at most %.1f%% (%s window)", o->max_loss,
				    o->window);
	case AU_MTU:
		return json_sprintf("%s bytes (DF), %u probes per path", sizes, o->count);
	case AU_CAPACITY:
		if (o->min_gbps > 0)
			return json_sprintf("every path at least %.0f%% of its pair's median and "
					    "%g Gb/s (trains, round trip)", o->capacity_frac * 100,
					    o->min_gbps);
		return json_sprintf("every path at least %.0f%% of its pair's median (trains, "
				    "round trip)", o->capacity_frac * 100);
	case AU_PATHS:
		return json_sprintf("at least %u distinct router lists (1 across one router)",
				    o->min_paths);
	default:
		return json_string("every control socket answers, names unique");
	}
}

json_t *
au_judge(enum au_item it, const struct au_opts *o, const struct au_node *nodes, size_t n)
{
	json_t *item = json_pack("{s:s}", "item", au_item_names[it]), *rows = json_array(), *r;
	size_t i, failed = 0;

	switch (it) {
	case AU_DAEMONS: judge_daemons(rows, nodes, n); break;
	case AU_REACH: judge_pairs(rows, o, nodes, n, reach_row); break;
	case AU_MTU: judge_pairs(rows, o, nodes, n, mtu_row); break;
	case AU_CAPACITY: judge_pairs(rows, o, nodes, n, capacity_row); break;
	case AU_PATHS: judge_pairs(rows, o, nodes, n, paths_row); break;
	case AU_LINKS: judge_links(rows, item, nodes, n); break;
	case AU_FIRMWARE: judge_firmware(rows, item, nodes, n); break;
	case AU_CLOCK: judge_clock(rows, item, nodes, n); break;
	case AU_N: break;
	}
	json_array_foreach(rows, i, r)
		failed += !json_is_true(json_object_get(r, "pass"));
	if (json_object_get(item, "summary") == NULL)
		json_object_set_new(item, "summary", summary(it, o));
	json_object_set_new(item, "pass", json_boolean(failed == 0));
	json_object_set_new(item, "checks", json_integer((json_int_t)json_array_size(rows)));
	json_object_set_new(item, "failed", json_integer((json_int_t)failed));
	json_object_set_new(item, "rows", rows);
	return item;
}
