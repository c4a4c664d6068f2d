/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl audit: is a fleet ready for a job? One report over a set of
 * daemons (-s SOCK ..., --fleet FILE, --dir DIR), pass or fail per item:
 *
 *   daemons   every socket answers, node names unique
 *   reach     every path of every pair up, loss under --max-loss (paths)
 *   mtu       padded probes (DF) of each --mtu-sizes back on every path
 *             (path.mtu: the daemon sends them, the reflector answers at
 *             the same size)
 *   capacity  every path's capacity from back-to-back packet trains
 *             (path.train), round trip: at least --capacity-frac of its
 *             pair's median (ECMP paths of one pair are built alike: the odd
 *             one is a degraded link) and --min-gbps when given
 *   paths     distinct router lists per pair (route: path discovery per path)
 *   links     every port up, at the fleet's speed (status)
 *   firmware  every port on the fleet's driver, one firmware per driver
 *   clock     every node synced to the fleet's one reference (sync; the
 *             clock source from status)
 *
 * This file asks; audit_items.c judges. What is asked is only what the
 * daemons already answer: the audit adds no state to them. path.mtu and
 * route start runs and are asked again until done, one daemon at a time
 * (path.train one peer at a time too: trains that shared a link would
 * widen each other),
 * so the fabric's ICMP rate limits and the daemons' jumbo buffers see one
 * node's probes at once rather than the whole fleet's.
 *
 * Exit status: 0 every item passed; 6 an item failed; 3, 4 or 5 (as mesh)
 * when a daemon could not be asked at all, which also fails "daemons".
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "audit.h"
#include "lockstepctl.h"

#define POLL_MS 100
#define MTU_POLLS 40            /* 4 s: a run waits 500 ms for its replies */
#define ROUTE_POLLS 50          /* 5 s: a trace waits 500 ms for answers */
#define TRAIN_POLL_MS 20
#define TRAIN_POLLS 100         /* 2 s: a peer's trains take ~2-50 ms each */

static const struct optdef audit_defs[] = {
	{ "--dir" },
	{ "--fleet" },
	{ "--window" },
	{ "--max-loss" },
	{ "--mtu-sizes" },
	{ "--mtu-count" },
	{ "--min-paths" },
	{ "--max-ttl" },
	{ "--skip" },
	{ "--verbose", ARG_FLAG },
	{ "--capacity-frac" },
	{ "--min-gbps" },
	{ NULL },
};

/* ---- options ---------------------------------------------------------------- */

static int
parse_sizes(const struct cli_cmd *cmd, const char *s, struct au_opts *o)
{
	char *copy = xstrdup(s), *tok, *save = NULL;
	int rc = EX_OK;

	o->n_sizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == EX_OK;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v;

		if (o->n_sizes == AU_MAX_SIZES)
			rc = usage_error(cmd, "--mtu-sizes: at most %d sizes", AU_MAX_SIZES);
		else if ((rc = parse_u64(cmd, "--mtu-sizes", tok, 65535, &v)) == EX_OK)
			o->sizes[o->n_sizes++] = (int)v;
	}
	free(copy);
	if (rc == EX_OK && o->n_sizes == 0)
		rc = usage_error(cmd, "--mtu-sizes: a list of sizes (1500,9000)");
	return rc;
}

static int
parse_skip(const struct cli_cmd *cmd, const char *s, struct au_opts *o)
{
	char *copy = xstrdup(s), *tok, *save = NULL;
	int rc = EX_OK;

	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		int it;

		for (it = 0; it < AU_N && strcmp(tok, au_item_names[it]) != 0; it++)
			;
		if (it == AU_N || it == AU_DAEMONS) {
			rc = usage_error(cmd, "--skip: '%s' is not one of reach, mtu, capacity, "
					 "paths, links, firmware, clock", tok);
			break;
		}
		o->skip |= 1u << it;
	}
	free(copy);
	return rc;
}

/* A number in [lo, hi]; -1 when not. */
static int
parse_real(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || s[0] == '\0' || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

static int
parse_num(const struct cli_cmd *cmd, const char *what, const char *s, unsigned int lo,
	  unsigned int hi, unsigned int *out)
{
	unsigned long long v;
	int rc;

	if (s == NULL)
		return EX_OK;
	rc = parse_u64(cmd, what, s, hi, &v);
	if (rc == EX_OK && v < lo)
		rc = usage_error(cmd, "%s: at least %u", what, lo);
	if (rc == EX_OK)
		*out = (unsigned int)v;
	return rc;
}

static int
audit_parse(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv,
	    struct au_opts *o, const char **dir, const char **fleet)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, audit_defs, &p, 0, 0);

	*o = (struct au_opts){ .window = "10s", .max_loss = 1.0, .sizes = {1500, 4200, 9000},
			       .n_sizes = 3, .count = 2, .min_paths = 2, .max_ttl = 8,
			       .capacity_frac = 0.5 };
	if (rc != EX_OK || (rc = check_window(cmd, p.val[2])) != EX_OK)
		return rc;
	*dir = p.val[0];
	*fleet = p.val[1];
	if (p.val[2] != NULL)
		o->window = p.val[2];
	if (p.val[3] != NULL) {
		char *end;

		errno = 0;
		o->max_loss = strtod(p.val[3], &end);
		if (errno || *end || p.val[3][0] == '\0' || !(o->max_loss >= 0) ||
		    o->max_loss > 100)
			return usage_error(cmd, "--max-loss: a percentage, 0 to 100");
	}
	if ((p.val[4] != NULL && (rc = parse_sizes(cmd, p.val[4], o)) != EX_OK) ||
	    (rc = parse_num(cmd, "--mtu-count", p.val[5], 1, 8, &o->count)) != EX_OK ||
	    (rc = parse_num(cmd, "--min-paths", p.val[6], 1, 64, &o->min_paths)) != EX_OK ||
	    (rc = parse_num(cmd, "--max-ttl", p.val[7], 2, 31, &o->max_ttl)) != EX_OK ||
	    (p.val[8] != NULL && (rc = parse_skip(cmd, p.val[8], o)) != EX_OK))
		return rc;
	o->verbose = p.val[9] != NULL;
	if (p.val[10] != NULL && parse_real(p.val[10], 0.01, 1, &o->capacity_frac) < 0)
		return usage_error(cmd, "--capacity-frac: a share, 0.01 to 1");
	if (p.val[11] != NULL && parse_real(p.val[11], 0, 1e5, &o->min_gbps) < 0)
		return usage_error(cmd, "--min-gbps: Gb/s, 0 to 100000");
	return EX_OK;
}

/* ---- asking ----------------------------------------------------------------- */

static void
nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * One request (args stolen). EX_OK with *res (a new reference) when the
 * daemon said ok; else the exit code and *why (allocated): the daemon's
 * error, or the transport's (which request() also printed).
 */
static int
ask(const struct cli *cli, const char *sock, const char *cmd, json_t *args, json_t **res,
    char **why)
{
	const json_t *err;
	json_t *reply;
	int rc = request(cli, sock, cmd, args, &reply);

	*res = NULL;
	*why = NULL;
	if (rc != EX_OK) {
		*why = xasprintf("%s: %s", cmd, rc == EX_NODAEMON ? "daemon not running" :
				 rc == EX_PERM ? "permission denied" : "no reply");
		return rc;
	}
	if (!json_is_true(json_object_get(reply, "ok")) ||
	    json_object_get(reply, "result") == NULL) {
		err = json_object_get(reply, "error");
		*why = xasprintf("%s: %s: %s", cmd, get_s(err, "code"), get_s(err, "message"));
		json_decref(reply);
		return EX_REPLY;
	}
	*res = json_incref(json_object_get(reply, "result"));
	json_decref(reply);
	return EX_OK;
}

/* The node's status, paths and sync; a node that does not answer all
 * three is not asked anything else (err, why). */
static void
collect_basics(const struct cli *cli, const struct au_opts *o, struct au_node *nd)
{
	const char *name;

	nd->err = ask(cli, nd->sock, "status", NULL, &nd->status, &nd->why);
	if (nd->err == EX_OK)
		nd->err = ask(cli, nd->sock, "paths", json_pack("{s:s}", "window", o->window),
			      &nd->paths, &nd->why);
	if (nd->err == EX_OK)
		nd->err = ask(cli, nd->sock, "sync", NULL, &nd->sync, &nd->why);
	name = json_string_value(json_object_get(nd->status, "node"));
	nd->name = name != NULL ? xstrdup(name) : sock_label(nd->sock);
	if (nd->err != EX_OK) {
		json_decref(nd->status);
		nd->status = NULL;
	}
}

static json_t *
error_json(char *why)
{
	json_t *e = json_pack("{s:s}", "error", why);

	free(why);
	return e;
}

/* A run or trace the daemon is still at (state "probing", "tracing"). */
static bool
still(const json_t *res, const char *busy)
{
	return strcmp(get_s(res, "state"), busy) == 0;
}

static json_t *
mtu_args(const struct au_opts *o, const char *peer, bool fresh)
{
	json_t *sizes = json_array();

	for (size_t i = 0; i < o->n_sizes; i++)
		json_array_append_new(sizes, json_integer(o->sizes[i]));
	return json_pack("{s:s, s:o, s:i, s:b}", "peer", peer, "sizes", sizes,
			 "count", (int)o->count, "fresh", fresh);
}

/* path.mtu to every peer of the node: start each run, then ask until done. */
static void
collect_mtu(const struct cli *cli, const struct au_opts *o, struct au_node *nd)
{
	const json_t *p;
	size_t i;

	nd->mtu = json_object();
	json_array_foreach(json_object_get(nd->paths, "peers"), i, p) {
		json_t *res;
		char *why;

		if (ask(cli, nd->sock, "path.mtu", mtu_args(o, get_s(p, "name"), true), &res,
			&why) == EX_OK)
			json_object_set_new(nd->mtu, get_s(p, "name"), res);
		else
			json_object_set_new(nd->mtu, get_s(p, "name"), error_json(why));
	}
	for (int n = 0; n < MTU_POLLS; n++) {
		const char *peer;
		json_t *res;
		bool busy = false;

		json_object_foreach(nd->mtu, peer, res)
			busy |= still(res, "probing");
		if (!busy)
			break;
		nap_ms(POLL_MS);
		json_object_foreach(nd->mtu, peer, res) {
			json_t *now;
			char *why;

			if (!still(res, "probing"))
				continue;
			if (ask(cli, nd->sock, "path.mtu", mtu_args(o, peer, false), &now, &why) == EX_OK)
				json_object_set_new(nd->mtu, peer, now);
			else
				json_object_set_new(nd->mtu, peer, error_json(why));
		}
	}
}

/* path.train to each peer of the node in turn, asked again until done. */
static void
collect_trains(const struct cli *cli, struct au_node *nd)
{
	const json_t *p;
	size_t i;

	nd->trains = json_object();
	json_array_foreach(json_object_get(nd->paths, "peers"), i, p) {
		const char *peer = get_s(p, "name");
		json_t *res;
		char *why;
		bool fresh = true;

		for (int n = 0; n < TRAIN_POLLS; n++) {
			if (ask(cli, nd->sock, "path.train",
				json_pack("{s:s, s:b}", "peer", peer, "fresh", fresh), &res,
				&why) != EX_OK) {
				res = error_json(why);
				break;
			}
			fresh = false;
			if (!still(res, "probing"))
				break;
			if (n + 1 < TRAIN_POLLS)
				json_decref(res);
			nap_ms(TRAIN_POLL_MS);
		}
		json_object_set_new(nd->trains, peer, res);
	}
}

static json_t *
route_args(const struct au_opts *o, const char *peer, size_t path, bool fresh)
{
	return json_pack("{s:s, s:i, s:i, s:b}", "peer", peer, "path", (int)path,
			 "max_ttl", (int)o->max_ttl, "fresh", fresh);
}

/* Ask again every trace of the node still tracing; true when some is. */
static bool
routes_again(const struct cli *cli, const struct au_opts *o, struct au_node *nd)
{
	const char *peer;
	json_t *traces;
	bool busy = false;

	json_object_foreach(nd->routes, peer, traces) {
		json_t *t, *now;
		size_t k;
		char *why;

		json_array_foreach(traces, k, t) {
			if (!still(t, "tracing"))
				continue;
			busy = true;
			if (ask(cli, nd->sock, "route", route_args(o, peer, k, false), &now,
				&why) == EX_OK)
				json_array_set_new(traces, k, now);
			else
				json_array_set_new(traces, k, error_json(why));
		}
	}
	return busy;
}

/* A fresh trace of every path of every peer of the node, then ask until done. */
static void
collect_routes(const struct cli *cli, const struct au_opts *o, struct au_node *nd)
{
	const json_t *p;
	size_t i;

	nd->routes = json_object();
	json_array_foreach(json_object_get(nd->paths, "peers"), i, p) {
		json_t *traces = json_array();

		for (size_t k = 0; k < json_array_size(json_object_get(p, "paths")); k++) {
			json_t *res;
			char *why;

			if (ask(cli, nd->sock, "route", route_args(o, get_s(p, "name"), k, true),
				&res, &why) == EX_OK)
				json_array_append_new(traces, res);
			else
				json_array_append_new(traces, error_json(why));
		}
		json_object_set_new(nd->routes, get_s(p, "name"), traces);
	}
	nap_ms(5 * POLL_MS);
	for (int n = 0; n < ROUTE_POLLS && routes_again(cli, o, nd); n++)
		nap_ms(POLL_MS);
}

/* ---- the report -------------------------------------------------------------- */

static json_t *
audit_run(const struct cli *cli, const struct au_opts *o, struct au_node *nodes, size_t n)
{
	json_t *items = json_array();
	bool pass = true;

	for (size_t k = 0; k < n; k++)
		collect_basics(cli, o, &nodes[k]);
	for (size_t k = 0; k < n; k++) {
		if (nodes[k].status == NULL)
			continue;
		if (!(o->skip & 1u << AU_MTU))
			collect_mtu(cli, o, &nodes[k]);
		if (!(o->skip & 1u << AU_CAPACITY))
			collect_trains(cli, &nodes[k]);
		if (!(o->skip & 1u << AU_PATHS))
			collect_routes(cli, o, &nodes[k]);
	}
	for (int it = 0; it < AU_N; it++) {
		json_t *item;

		if (o->skip & 1u << it) {
			json_array_append_new(items, json_pack("{s:s, s:b}", "item", au_item_names[it],
							       "skipped", 1));
			continue;
		}
		item = au_judge((enum au_item)it, o, nodes, n);
		pass &= json_is_true(json_object_get(item, "pass"));
		json_array_append_new(items, item);
	}
	return json_pack("{s:b, s:i, s:o}", "pass", pass, "daemons", (int)n, "items", items);
}

/* One item's checks: the failed ones (every one with --verbose). */
static void
print_rows(const json_t *item, bool verbose)
{
	static const char *const keys[] = {"peer", "port", "socket"};
	static const char *const hdr[][4] = {
		{"NODE", "PEER", "RESULT", "DETAIL"}, {"NODE", "PORT", "RESULT", "DETAIL"},
		{"NODE", "SOCKET", "RESULT", "DETAIL"}, {"NODE", "RESULT", "DETAIL"},
	};
	const json_t *r, *rows = json_object_get(item, "rows"), *first = json_array_get(rows, 0);
	struct table t;
	size_t i, k;

	/* the second column names what the rows are about; clock's are nodes */
	for (k = 0; k < 3 && json_object_get(first, keys[k]) == NULL; k++)
		;
	tbl_init(&t, k < 3 ? 4 : 3, hdr[k], "llll");
	json_array_foreach(rows, i, r) {
		if (!verbose && json_is_true(json_object_get(r, "pass")))
			continue;
		tbl_cell(&t, get_s(r, "node"));
		if (k < 3)
			tbl_cell(&t, get_s(r, keys[k]));
		tbl_cell(&t, json_is_true(json_object_get(r, "pass")) ? "pass" : "FAIL");
		tbl_cell(&t, get_s(r, "detail"));
	}
	if (t.n > 0) {
		printf("\n%s: %s of %s failed\n", get_s(item, "item"), get_s(item, "failed"),
		       get_s(item, "checks"));
		tbl_print(&t, "  ");
	}
	tbl_free(&t);
}

static void
print_report(const json_t *rep, bool verbose)
{
	static const char *const hdr[] = {"ITEM", "RESULT", "CHECKS", "FAILED", "WHAT"};
	const json_t *it, *items = json_object_get(rep, "items");
	struct table t;
	size_t i;

	printf("audit of %s daemon%s: %s\n\n", get_s(rep, "daemons"),
	       json_integer_value(json_object_get(rep, "daemons")) == 1 ? "" : "s",
	       json_is_true(json_object_get(rep, "pass")) ? "PASS" : "FAIL");
	tbl_init(&t, 5, hdr, "llrrl");
	json_array_foreach(items, i, it) {
		bool skipped = json_is_true(json_object_get(it, "skipped"));

		tbl_cell(&t, get_s(it, "item"));
		tbl_cell(&t, skipped ? "skipped" :
			 json_is_true(json_object_get(it, "pass")) ? "pass" : "FAIL");
		tbl_cell(&t, skipped ? "-" : get_s(it, "checks"));
		tbl_cell(&t, skipped ? "-" : get_s(it, "failed"));
		tbl_cell(&t, skipped ? "" : get_s(it, "summary"));
	}
	tbl_print(&t, "");
	tbl_free(&t);
	json_array_foreach(items, i, it)
		print_rows(it, verbose);
}

int
cmd_audit(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	const char *dir, *fleet;
	struct au_node *nodes;
	struct au_opts o;
	char **socks;
	size_t n;
	json_t *rep;
	int rc = audit_parse(cli, cmd, argc, argv, &o, &dir, &fleet);

	if (rc != EX_OK || (rc = fleet_sockets(cli, dir, fleet, &socks, &n)) != EX_OK)
		return rc;
	nodes = calloc(n, sizeof(*nodes));
	if (nodes == NULL)
		die_oom();
	for (size_t k = 0; k < n; k++)
		nodes[k].sock = socks[k];
	rep = audit_run(cli, &o, nodes, n);
	if (cli->json)
		print_json(rep);
	else
		print_report(rep, o.verbose);
	rc = json_is_true(json_object_get(rep, "pass")) ? EX_OK : EX_AUDIT;
	for (size_t k = 0; k < n; k++) {
		struct au_node *nd = &nodes[k];

		if (nd->err != EX_OK && rc == EX_AUDIT)
			rc = nd->err;  /* the first daemon that could not be asked, as mesh */
		free(nd->sock);
		free(nd->name);
		free(nd->why);
		json_decref(nd->status);
		json_decref(nd->paths);
		json_decref(nd->sync);
		json_decref(nd->mtu);
		json_decref(nd->trains);
		json_decref(nd->routes);
	}
	json_decref(rep);
	free(nodes);
	free(socks);
	return rc;
}
