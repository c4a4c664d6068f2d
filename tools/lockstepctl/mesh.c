/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mesh and watch: ask "paths" of several daemons (one per node of a lab
 * or rack) and lay the answers out as a NODE x PEER matrix. A node that
 * cannot be reached still gets a row, marked "?", so a dead node is
 * visible rather than silently missing; watch redraws the matrix in place
 * and keeps going when a node goes away, since that is what it is for.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lockstepctl.h"
#include "prom.h"

struct mesh_opts {
	const char *metric;     /* rtt, fwd, rev, loss */
	const char *field;      /* the per-path field that metric reads */
	const char *window;
	const char *dir;
	const char *svg;        /* write the matrix as SVG here */
	const char *html;       /* ... and/or as HTML */
	const char *prom;       /* a Prometheus server's URL instead of sockets */
	const char *group_by;   /* "route" (sockets) or a label (Prometheus) */
	bool colour;            /* colour the terminal table */
	double interval_s;
	unsigned long long count;
};

struct mesh_node {
	char *sock;
	char *name;
	json_t *result;         /* "paths" result, NULL if unreachable */
	char *group;            /* its leaf (--group-by), NULL: unknown */
};

static const struct optdef mesh_defs[] = {
	{ "--metric" },
	{ "--window" },
	{ "--dir" },
	{ "--interval" },
	{ "--count" },
	{ "--color" },
	{ "--svg" },
	{ "--html" },
	{ "--prometheus" },
	{ "--group-by" },
	{ NULL },
};

static int
mesh_parse(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv,
	   struct mesh_opts *o, bool watch)
{
	struct parsed p;
	int rc;

	memset(o, 0, sizeof(*o));
	rc = parse_args(cli, cmd, argc, argv, mesh_defs, &p, 0, 0);
	if (rc != EX_OK)
		return rc;
	o->metric = p.val[0] ? p.val[0] : "rtt";
	if (strcmp(o->metric, "rtt") == 0)
		o->field = "rtt_p50_ns";
	else if (strcmp(o->metric, "fwd") == 0)
		o->field = "fwd_p50_ns";
	else if (strcmp(o->metric, "rev") == 0)
		o->field = "rev_p50_ns";
	else if (strcmp(o->metric, "loss") == 0)
		o->field = "loss_pct";
	else
		return usage_error(cmd, "--metric must be rtt, fwd, rev or "
				   "loss");
	rc = check_window(cmd, p.val[1]);
	if (rc != EX_OK)
		return rc;
	o->window = p.val[1];
	o->dir = p.val[2];
	if ((p.val[3] || p.val[4]) && !watch)
		return usage_error(cmd, "--interval and --count are for watch");
	o->interval_s = 2.0;
	if (p.val[3] != NULL) {
		char *end;

		errno = 0;
		o->interval_s = strtod(p.val[3], &end);
		if (errno || *end || !(o->interval_s > 0) ||
		    o->interval_s > 86400)
			return usage_error(cmd, "--interval: '%s' is not a "
					   "number of seconds", p.val[3]);
	}
	if (p.val[4] != NULL) {
		rc = parse_u64(cmd, "--count", p.val[4], UINT32_MAX, &o->count);
		if (rc != EX_OK)
			return rc;
		if (o->count == 0)
			return usage_error(cmd, "--count must be at least 1");
	}
	o->svg = p.val[6];
	o->html = p.val[7];
	if ((o->svg != NULL && o->svg[0] == '\0') || (o->html != NULL && o->html[0] == '\0'))
		return usage_error(cmd, "--svg and --html take a file name");
	o->prom = p.val[8];
	if (o->prom != NULL) {
		if (strncmp(o->prom, "http://", 7) != 0 && strncmp(o->prom, "https://", 8) != 0)
			return usage_error(cmd, "--prometheus takes a URL (http://host:9090)");
		/* lockstepd exports the 10 s window */
		if (o->window != NULL && strcmp(o->window, "10s") != 0)
			return usage_error(cmd, "--prometheus: the metrics are the 10s window");
		if (o->dir != NULL || cli->n_socks > 0)
			return usage_error(cmd, "--prometheus or sockets (-s, --dir), not both");
	}
	o->group_by = p.val[9];
	if (o->group_by != NULL && o->prom == NULL && strcmp(o->group_by, "route") != 0)
		return usage_error(cmd, "--group-by: \"route\" with sockets (a node's first "
				   "router); a label name with --prometheus");
	if (o->group_by != NULL && o->prom != NULL && (o->group_by[0] == '\0' ||
	    strspn(o->group_by, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
	    strlen(o->group_by)))
		return usage_error(cmd, "--group-by: a Prometheus label name ([a-zA-Z0-9_])");
	return hm_colour_mode(cmd, p.val[5], &o->colour);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One matrix cell: median over the peer's paths of the chosen metric. */
static void
mesh_cell(const struct mesh_opts *o, const json_t *peer, struct hm_cell *c)
{
	const json_t *paths = json_object_get(peer, "paths");
	size_t i, n = 0, n_down = 0, total;
	double *v;
	json_t *pa;

	c->kind = HM_NONE;
	snprintf(c->text, sizeof(c->text), "-");
	total = json_array_size(paths);
	if (total == 0)
		return;
	v = calloc(total, sizeof(*v));
	if (v == NULL)
		die_oom();
	json_array_foreach((json_t *)paths, i, pa) {
		const json_t *x = json_object_get(pa, o->field);
		const char *st = json_string_value(json_object_get(pa,
								   "state"));

		if (st != NULL && strcmp(st, "down") == 0)
			n_down++;
		if (is_num(x))
			v[n++] = json_number_value(x);
	}
	if (n_down == total) {
		c->kind = HM_DOWN;
		snprintf(c->text, sizeof(c->text), "DOWN");
	} else if (n > 0) {
		qsort(v, n, sizeof(*v), cmp_double);
		c->kind = HM_VALUE;
		c->v = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		if (strcmp(o->metric, "loss") == 0) {
			snprintf(c->text, sizeof(c->text), "%.2f%%", c->v);
		} else {
			c->v /= 1000.0;
			snprintf(c->text, sizeof(c->text), "%.1f", c->v);
		}
	}
	free(v);
}

static bool
in_list(char **v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

/* Columns: peers that are also nodes first, in row order, so a full mesh
 * comes out square; then any other peers, sorted. */
static size_t
mesh_columns(struct mesh_node *nodes, size_t n, const char ***out)
{
	char **cols, **extra = NULL;
	size_t n_cols = 0, n_extra = 0, i, j, k;
	json_t *pe;

	for (i = 0; i < n; i++) {
		json_array_foreach(json_object_get(nodes[i].result, "peers"),
				   j, pe) {
			const char *name = json_string_value(
				json_object_get(pe, "name"));

			if (name == NULL || in_list(extra, n_extra, name))
				continue;
			extra = realloc(extra, (n_extra + 1) * sizeof(*extra));
			if (extra == NULL)
				die_oom();
			extra[n_extra++] = (char *)name;
		}
	}
	cols = calloc(n_extra + 1, sizeof(*cols));
	if (cols == NULL)
		die_oom();
	for (i = 0; i < n; i++)
		if (in_list(extra, n_extra, nodes[i].name) &&
		    !in_list(cols, n_cols, nodes[i].name))
			cols[n_cols++] = nodes[i].name;
	k = n_cols;
	for (i = 0; i < n_extra; i++)
		if (!in_list(cols, n_cols, extra[i]))
			cols[n_cols++] = extra[i];
	qsort(cols + k, n_cols - k, sizeof(*cols), cmp_str);
	free(extra);
	*out = (const char **)cols;
	return n_cols;
}

/* The matrix: every node a row, every peer a column. */
static void
mesh_matrix(const struct mesh_opts *o, struct mesh_node *nodes, size_t n,
	    struct heatmap *h)
{
	size_t i, j, m;
	json_t *pe;

	h->n_rows = n;
	h->n_cols = mesh_columns(nodes, n, &h->cols);
	h->rows = calloc(n + 1, sizeof(*h->rows));
	h->cells = calloc(n * h->n_cols + 1, sizeof(*h->cells));
	if (h->rows == NULL || h->cells == NULL)
		die_oom();
	for (i = 0; i < n; i++) {
		h->rows[i] = nodes[i].name;
		for (j = 0; j < h->n_cols; j++) {
			struct hm_cell *c = &h->cells[i * h->n_cols + j];

			c->kind = nodes[i].result == NULL ? HM_UNREACH : HM_NONE;
			snprintf(c->text, sizeof(c->text), "%s",
				 nodes[i].result == NULL ? "?" : "-");
			json_array_foreach(json_object_get(nodes[i].result,
							   "peers"), m, pe) {
				const char *name = json_string_value(
					json_object_get(pe, "name"));

				if (name && strcmp(name, h->cols[j]) == 0) {
					mesh_cell(o, pe, c);
					break;
				}
			}
		}
	}
	if (o->group_by != NULL) {
		h->row_group = calloc(n + 1, sizeof(*h->row_group));
		h->col_group = calloc(h->n_cols + 1, sizeof(*h->col_group));
		if (h->row_group == NULL || h->col_group == NULL)
			die_oom();
		for (i = 0; i < n; i++)
			h->row_group[i] = nodes[i].group;
		/* a peer that is a node is in that node's group */
		for (j = 0; j < h->n_cols; j++)
			for (i = 0; i < n; i++)
				if (strcmp(nodes[i].name, h->cols[j]) == 0)
					h->col_group[j] = nodes[i].group;
	}
	h->loss = strcmp(o->metric, "loss") == 0;
	h->unit = h->loss ? "%" : "µs";
	hm_scale(h);
}

static void
mesh_table(const struct heatmap *h)
{
	size_t g = h->row_group != NULL, i, j;   /* a GROUP column first */
	const char **hdr = calloc(h->n_cols + 2, sizeof(*hdr));
	char *align = calloc(h->n_cols + 3, 1);
	struct table t;

	if (hdr == NULL || align == NULL)
		die_oom();
	if (g) {
		hdr[0] = "GROUP";
		align[0] = 'l';
	}
	hdr[g] = "NODE";
	align[g] = 'l';
	for (i = 0; i < h->n_cols; i++) {
		hdr[g + i + 1] = h->cols[i];
		align[g + i + 1] = 'r';
	}
	tbl_init(&t, g + h->n_cols + 1, hdr, align);
	for (i = 0; i < h->n_rows; i++) {
		if (g)
			tbl_cell(&t, h->row_group[i] ? h->row_group[i] : "-");
		tbl_cell(&t, h->rows[i]);
		for (j = 0; j < h->n_cols; j++)
			tbl_cell(&t, h->cells[i * h->n_cols + j].text);
	}
	tbl_print(&t, "");
	tbl_free(&t);
	free(hdr);
	free(align);
}

static int
mesh_print(const struct mesh_opts *o, struct mesh_node *nodes, size_t n)
{
	struct heatmap h = {0};
	const char *window;
	char *title;
	size_t i;
	int rc = EX_OK;

	/* Without --window each daemon uses its default: show what the
	 * first one that answered says it used. */
	window = o->window;
	for (i = 0; window == NULL && i < n; i++)
		window = json_string_value(json_object_get(nodes[i].result,
							   "window"));
	if (strcmp(o->metric, "loss") == 0)
		title = xasprintf("loss %%, median over paths, window %s", window ? window : "-");
	else
		title = xasprintf("%s p50 µs, median over paths, window %s", o->metric,
				  window ? window : "-");
	printf("%s\n\n", title);
	h.title = title;
	mesh_matrix(o, nodes, n, &h);
	if (o->colour)
		hm_print_colour(&h, stdout);
	else
		mesh_table(&h);
	if (o->svg != NULL)
		rc = hm_write(&h, o->svg, false);
	if (o->html != NULL && rc == EX_OK)
		rc = hm_write(&h, o->html, true);
	free(h.rows);
	free(h.cols);
	free(h.cells);
	free(h.row_group);
	free(h.col_group);
	free(title);
	return rc;
}

/* A node's leaf: the router that answers TTL 1 of its first peer's path 0
 * (route.c traces it; a trace younger than 10 s is reused). */
static char *
route_group(struct cli *cli, const struct mesh_node *nd)
{
	const char *peer = json_string_value(json_object_get(
		json_array_get(json_object_get(nd->result, "peers"), 0), "name"));
	char *g = NULL;

	if (peer == NULL)
		return NULL;
	for (int tries = 0; tries < 10 && g == NULL; tries++) {
		json_t *reply = NULL, *r, *hop;
		size_t i;
		const char *st;

		if (request(cli, nd->sock, "route", json_pack("{ss si si}", "peer", peer, "path", 0,
							       "max_ttl", 1), &reply) != EX_OK)
			return NULL;
		r = json_object_get(reply, "result");
		st = json_string_value(json_object_get(r, "state"));
		json_array_foreach(json_object_get(r, "hops"), i, hop)
			if (json_integer_value(json_object_get(hop, "ttl")) == 1 &&
			    json_string_value(json_object_get(hop, "addr")) != NULL)
				g = xstrdup(json_string_value(json_object_get(hop, "addr")));
		json_decref(reply);
		if (g != NULL || st == NULL || strcmp(st, "done") == 0)
			break;
		struct timespec ts = {0, 200000000};     /* the trace waits 500 ms for answers */

		nanosleep(&ts, NULL);
	}
	return g;
}

static int
by_group(const void *a, const void *b)
{
	const struct mesh_node *x = a, *y = b;
	int c = (x->group == NULL) - (y->group == NULL);

	if (c == 0 && x->group != NULL)
		c = strcmp(x->group, y->group);
	return c ? c : strcmp(x->name, y->name);
}

/* The nodes as Prometheus knows them (prom.c): an unreachable one has no
 * result, as a daemon that does not answer. */
static int
mesh_prom(const struct cli *cli, const struct mesh_opts *o, struct mesh_node **out,
	  size_t *n_out)
{
	json_t *arr, *e;
	size_t i;
	int rc = prom_mesh(o->prom, o->metric, o->group_by, cli->timeout_ms, &arr);

	if (rc != EX_OK)
		return rc;
	*n_out = json_array_size(arr);
	*out = calloc(*n_out + 1, sizeof(**out));
	if (*out == NULL)
		die_oom();
	json_array_foreach(arr, i, e) {
		json_t *r = json_object_get(e, "result");

		(*out)[i].sock = xstrdup(o->prom);
		(*out)[i].name = xstrdup(json_string_value(json_object_get(e, "name")));
		(*out)[i].result = json_is_object(r) ? json_incref(r) : NULL;
		if (json_string_value(json_object_get(e, "group")) != NULL)
			(*out)[i].group = xstrdup(json_string_value(json_object_get(e, "group")));
	}
	json_decref(arr);
	return EX_OK;
}

/* Query every daemon once and print the matrix (or the JSON). */
static int
mesh_once(struct cli *cli, const struct mesh_opts *o)
{
	struct mesh_node *nodes;
	char **socks = NULL;
	size_t n = 0, i;
	int rc, worst = EX_OK;

	if (o->prom != NULL) {
		rc = mesh_prom(cli, o, &nodes, &n);
		if (rc != EX_OK)
			return rc;
		for (i = 0; i < n; i++)
			if (nodes[i].result == NULL && worst == EX_OK)
				worst = EX_NODAEMON;
		goto show;
	}
	rc = fleet_sockets(cli, o->dir, NULL, &socks, &n);
	if (rc != EX_OK)
		return rc;
	nodes = calloc(n, sizeof(*nodes));
	if (nodes == NULL)
		die_oom();
	for (i = 0; i < n; i++) {
		json_t *args = json_object(), *reply = NULL;
		const char *name;

		nodes[i].sock = socks[i];
		if (o->window != NULL)
			json_object_set_new(args, "window",
					    json_string(o->window));
		rc = request(cli, socks[i], "paths", args, &reply);
		if (rc == EX_OK && !json_is_true(json_object_get(reply, "ok"))) {
			print_reply_error(reply, socks[i]);
			rc = EX_REPLY;
		} else if (rc == EX_OK &&
			   !json_is_object(json_object_get(reply, "result"))) {
			fprintf(stderr, "lockstepctl: %s: unexpected reply "
				"shape for paths\n", socks[i]);
			rc = EX_PROTO;
		}
		if (rc == EX_OK) {
			nodes[i].result = json_incref(json_object_get(reply,
								      "result"));
			name = json_string_value(json_object_get(
				nodes[i].result, "node"));
			nodes[i].name = name ? xstrdup(name) :
					       sock_label(socks[i]);
		} else {
			nodes[i].name = sock_label(socks[i]);
			if (worst == EX_OK)
				worst = rc;
		}
		json_decref(reply);
	}
show:
	if (o->group_by != NULL) {
		for (i = 0; i < n && o->prom == NULL; i++)
			if (nodes[i].result != NULL)
				nodes[i].group = route_group(cli, &nodes[i]);
		qsort(nodes, n, sizeof(*nodes), by_group);
	}
	if (cli->json) {
		json_t *all = json_object();

		for (i = 0; i < n; i++)
			if (nodes[i].result != NULL) {
				json_object_set(all, nodes[i].name,
						nodes[i].result);
				if (nodes[i].group != NULL)
					json_object_set_new(nodes[i].result, "group",
							    json_string(nodes[i].group));
			}
		print_json(all);
		json_decref(all);
	} else {
		rc = mesh_print(o, nodes, n);
		if (rc != EX_OK)
			worst = rc;
	}

	for (i = 0; i < n; i++) {
		free(nodes[i].sock);
		free(nodes[i].name);
		free(nodes[i].group);
		json_decref(nodes[i].result);
	}
	free(nodes);
	free(socks);
	return worst;
}

int
cmd_mesh(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct mesh_opts o;
	int rc = mesh_parse(cli, cmd, argc, argv, &o, false);

	return rc ? rc : mesh_once(cli, &o);
}

int
cmd_watch(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct mesh_opts o;
	unsigned long long i;
	int rc = mesh_parse(cli, cmd, argc, argv, &o, true);

	if (rc != EX_OK)
		return rc;
	for (i = 0; o.count == 0 || i < o.count; i++) {
		struct timespec ts;

		if (!cli->json) {
			time_t now = time(NULL);
			char when[64];

			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S",
				 localtime(&now));
			/* Home the cursor and clear: redraw in place. */
			printf("\033[H\033[2J");
			printf("every %.1fs  %s\n", o.interval_s, when);
		}
		/* A node going away is what watch is for: keep going. */
		rc = mesh_once(cli, &o);
		fflush(stdout);
		if (o.count != 0 && i + 1 >= o.count)
			break;
		ts.tv_sec = (time_t)o.interval_s;
		ts.tv_nsec = (long)((o.interval_s - (double)ts.tv_sec) * 1e9);
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return rc;
}
