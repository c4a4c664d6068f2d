/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Formatters for the per-path replies: "paths" (every path to every
 * peer, one row each) and "path" (one peer's paths, each with its
 * counters and a WINDOW x METRIC table of latency quantiles).
 */

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "lockstepctl.h"


/* The array under @key of object @r, or NULL when the reply is not so. */
static const json_t *
array_in(const json_t *r, const char *key)
{
	const json_t *a = json_is_object(r) ? json_object_get(r, key) : NULL;

	return json_is_array(a) ? a : NULL;
}

int
fmt_paths(const json_t *r)
{
	/* PEER is the peer's name; the rest are the path's keys. */
	static const char spec[] =
		"PEER=name path:r sport:r state sent:n received:n lost:n LOSS=loss_pct:p "
		"RTT_P50_µs=rtt_p50_ns:u RTT_P99_µs=rtt_p99_ns:u FWD_P50_µs=fwd_p50_ns:u "
		"REV_P50_µs=rev_p50_ns:u";
	struct cols cols;
	const json_t *peers = array_in(r, "peers");
	struct table t;
	json_t *pe, *pa;
	size_t i, j;

	if (peers == NULL)
		return EX_PROTO;
	printf("node %s, window %s\n\n", get_s(r, "node"), get_s(r, "window"));
	cols_parse(&cols, spec);
	tbl_init_cols(&t, cols.c, cols.n);
	json_array_foreach((json_t *)peers, i, pe) {
		json_array_foreach(json_object_get(pe, "paths"), j, pa) {
			tbl_row(&t, pe, 0, 1);
			tbl_row(&t, pa, 1, cols.n);
		}
	}
	tbl_print(&t, "");
	tbl_free(&t);
	return EX_OK;
}

/* One path's WINDOW x METRIC table: a window's counters on its first row. */
static void
path_windows(const json_t *ws)
{
	static const char spec[] =
		"WINDOW=- sent:n received:n lost:n LOSS=loss_pct:p METRIC=- count:n MIN_µs=min:u "
		"P50_µs=p50:u P99_µs=p99:u P99.9_µs=p999:u MAX_µs=max:u MEAN_µs=mean:u";
	struct cols cols;
	static const char *const wins[] = { "1s", "10s", "60s" };
	static const char *const metrics[] = { "rtt", "fwd", "rev" };
	struct table t;
	size_t w, m, k;

	cols_parse(&cols, spec);
	tbl_init_cols(&t, cols.c, cols.n);
	for (w = 0; w < 3; w++) {
		const json_t *win = json_object_get(ws, wins[w]);

		if (!json_is_object(win))
			continue;
		for (m = 0; m < 3; m++) {
			if (m == 0) {
				tbl_cell(&t, wins[w]);
				tbl_row(&t, win, 1, 5);
			} else {
				for (k = 0; k < 5; k++)
					tbl_cell(&t, "");
			}
			tbl_cell(&t, metrics[m]);
			tbl_row(&t, json_object_get(win, metrics[m]), 6, cols.n);
		}
	}
	tbl_print(&t, "  ");
	tbl_free(&t);
}

int
fmt_path(const json_t *r)
{
	const json_t *paths = array_in(r, "paths");
	json_t *pa;
	size_t i;

	if (paths == NULL)
		return EX_PROTO;
	printf("peer %s (%s)\n", get_s(r, "peer"), get_s(r, "addr"));
	json_array_foreach((json_t *)paths, i, pa) {
		const json_t *c = json_object_get(pa, "counters");
		const json_t *ws = json_object_get(pa, "windows");

		printf("\npath %s  sport %s  state %s\n", get_s(pa, "path"),
		       get_s(pa, "sport"), get_s(pa, "state"));
		if (json_is_object(c))
			printf("  sent %s  received %s  lost %s  late %s  "
			       "reordered %s  duplicated %s  unknown %s\n",
			       get_s(c, "sent"), get_s(c, "received"),
			       get_s(c, "lost"), get_s(c, "late"),
			       get_s(c, "reordered"), get_s(c, "duplicated"),
			       get_s(c, "unknown"));
		if (json_is_object(ws))
			path_windows(ws);
	}
	return EX_OK;
}
