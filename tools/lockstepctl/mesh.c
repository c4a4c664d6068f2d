/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mesh and watch: ask "paths" of several daemons (one per node of a lab
 * or rack) and lay the answers out as a NODE x PEER matrix. A node that
 * cannot be reached still gets a row, marked "?", so a dead node is
 * visible rather than silently missing; watch redraws the matrix in place
 * and keeps going when a node goes away, since that is what it is for.
 */

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "lockstepctl.h"

struct mesh_opts {
	const char *metric;     /* rtt, fwd, rev, loss */
	const char *field;      /* the per-path field that metric reads */
	const char *window;
	const char *dir;
	double interval_s;
	unsigned long long count;
};

struct mesh_node {
	char *sock;
	char *name;
	json_t *result;         /* "paths" result, NULL if unreachable */
};

static const struct optdef mesh_defs[] = {
	{ "--metric" },
	{ "--window" },
	{ "--dir" },
	{ "--interval" },
	{ "--count" },
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
	return EX_OK;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sockets to ask: every -s, plus *.sock in --dir (or the default
 * directory when no -s was given). */
static int
mesh_sockets(const struct cli *cli, const struct mesh_opts *o,
	     char ***out, size_t *n_out)
{
	const char *dir = o->dir ? o->dir :
			  cli->n_socks == 0 ? DEFAULT_DIR : NULL;
	char **v = NULL;
	size_t n = 0, first_dir, i;

	for (i = 0; i < cli->n_socks; i++) {
		v = realloc(v, (n + 1) * sizeof(*v));
		if (v == NULL)
			die_oom();
		v[n++] = xstrdup(cli->socks[i]);
	}
	first_dir = n;
	if (dir != NULL) {
		DIR *d = opendir(dir);
		struct dirent *de;

		if (d == NULL) {
			int err = errno;

			fprintf(stderr, "lockstepctl: cannot read %s: %s%s\n",
				dir, strerror(err),
				err == ENOENT ? " (no daemon running?)" : "");
			for (i = 0; i < n; i++)
				free(v[i]);
			free(v);
			return err == EACCES ? EX_PERM : EX_NODAEMON;
		}
		while ((de = readdir(d)) != NULL) {
			size_t len = strlen(de->d_name), k;
			char *path;

			if (len <= 5 ||
			    strcmp(de->d_name + len - 5, ".sock") != 0)
				continue;
			path = xasprintf("%s/%s", dir, de->d_name);
			/* Already named with -s: ask it once. */
			for (k = 0; k < first_dir; k++)
				if (strcmp(v[k], path) == 0)
					break;
			if (k < first_dir) {
				free(path);
				continue;
			}
			v = realloc(v, (n + 1) * sizeof(*v));
			if (v == NULL)
				die_oom();
			v[n++] = path;
		}
		closedir(d);
		qsort(v + first_dir, n - first_dir, sizeof(*v), cmp_str);
	}
	if (n == 0) {
		fprintf(stderr, "lockstepctl: no control sockets in %s "
			"(no daemon running?)\n", dir ? dir : "?");
		free(v);
		return EX_NODAEMON;
	}
	*out = v;
	*n_out = n;
	return EX_OK;
}

/* Node name when the daemon cannot tell us: the socket's file name. */
static char *
sock_label(const char *path)
{
	const char *b = strrchr(path, '/');
	char *s = xstrdup(b ? b + 1 : path);
	size_t len = strlen(s);

	if (len > 5 && strcmp(s + len - 5, ".sock") == 0)
		s[len - 5] = '\0';
	return s;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One matrix cell: median over the peer's paths of the chosen metric. */
static void
mesh_cell(const struct mesh_opts *o, const json_t *peer, char *buf,
	  size_t len)
{
	const json_t *paths = json_object_get(peer, "paths");
	size_t i, n = 0, n_down = 0, total;
	double *v, med;
	json_t *pa;

	total = json_array_size(paths);
	if (total == 0) {
		snprintf(buf, len, "-");
		return;
	}
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
		snprintf(buf, len, "DOWN");
	} else if (n == 0) {
		snprintf(buf, len, "-");
	} else {
		qsort(v, n, sizeof(*v), cmp_double);
		med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		if (strcmp(o->metric, "loss") == 0)
			snprintf(buf, len, "%.2f%%", med);
		else
			snprintf(buf, len, "%.1f", med / 1000.0);
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

static void
mesh_print(const struct mesh_opts *o, struct mesh_node *nodes, size_t n)
{
	char **cols = NULL, **extra = NULL;
	size_t n_cols = 0, n_extra = 0, i, j, k;
	const char **hdr, *window;
	char *align;
	struct table t;
	json_t *pe;

	/* Columns: peers that are also nodes first, in row order, so a full
	 * mesh comes out square; then any other peers, sorted. */
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

	hdr = calloc(n_cols + 1, sizeof(*hdr));
	align = calloc(n_cols + 2, 1);
	if (hdr == NULL || align == NULL)
		die_oom();
	hdr[0] = "NODE";
	align[0] = 'l';
	for (i = 0; i < n_cols; i++) {
		hdr[i + 1] = cols[i];
		align[i + 1] = 'r';
	}

	if (strcmp(o->metric, "loss") == 0)
		printf("loss %%, median over paths");
	else
		printf("%s p50 µs, median over paths", o->metric);
	/* Without --window each daemon uses its default: show what the
	 * first one that answered says it used. */
	window = o->window;
	for (i = 0; window == NULL && i < n; i++)
		window = json_string_value(json_object_get(nodes[i].result,
							   "window"));
	printf(", window %s\n\n", window ? window : "-");

	tbl_init(&t, n_cols + 1, hdr, align);
	for (i = 0; i < n; i++) {
		tbl_cell(&t, nodes[i].name);
		for (j = 0; j < n_cols; j++) {
			char buf[32] = "-";
			size_t m;

			if (nodes[i].result == NULL) {
				tbl_cell(&t, "?");
				continue;
			}
			json_array_foreach(json_object_get(nodes[i].result,
							   "peers"), m, pe) {
				const char *name = json_string_value(
					json_object_get(pe, "name"));

				if (name && strcmp(name, cols[j]) == 0) {
					mesh_cell(o, pe, buf, sizeof(buf));
					break;
				}
			}
			tbl_cell(&t, buf);
		}
	}
	tbl_print(&t, "");
	tbl_free(&t);
	free(hdr);
	free(align);
	free(cols);
	free(extra);
}

/* Query every daemon once and print the matrix (or the JSON). */
static int
mesh_once(struct cli *cli, const struct mesh_opts *o)
{
	struct mesh_node *nodes;
	char **socks = NULL;
	size_t n = 0, i;
	int rc, worst = EX_OK;

	rc = mesh_sockets(cli, o, &socks, &n);
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

	if (cli->json) {
		json_t *all = json_object();

		for (i = 0; i < n; i++)
			if (nodes[i].result != NULL)
				json_object_set(all, nodes[i].name,
						nodes[i].result);
		print_json(all);
		json_decref(all);
	} else {
		mesh_print(o, nodes, n);
	}

	for (i = 0; i < n; i++) {
		free(nodes[i].sock);
		free(nodes[i].name);
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
