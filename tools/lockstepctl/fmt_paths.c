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


int
fmt_paths(const json_t *r)
{
	static const char *const hdr[] = {
		"PEER", "PATH", "SPORT", "STATE", "SENT", "RECEIVED", "LOST",
		"LOSS", "RTT_P50_µs", "RTT_P99_µs", "FWD_P50_µs",
		"REV_P50_µs" };
	const json_t *peers;
	struct table t;
	json_t *pe, *pa;
	size_t i, j;

	if (!json_is_object(r))
		return EX_PROTO;
	peers = json_object_get(r, "peers");
	if (!json_is_array(peers))
		return EX_PROTO;
	printf("node %s, window %s\n\n", get_s(r, "node"), get_s(r, "window"));
	tbl_init(&t, 12, hdr, "lrrlrrrrrrrr");
	json_array_foreach((json_t *)peers, i, pe) {
		json_array_foreach(json_object_get(pe, "paths"), j, pa) {
			tbl_cell(&t, get_s(pe, "name"));
			tbl_cell(&t, get_s(pa, "path"));
			tbl_cell(&t, get_s(pa, "sport"));
			tbl_cell(&t, get_s(pa, "state"));
			tbl_cell(&t, f_int(json_object_get(pa, "sent")));
			tbl_cell(&t, f_int(json_object_get(pa, "received")));
			tbl_cell(&t, f_int(json_object_get(pa, "lost")));
			tbl_cell(&t, f_pct(json_object_get(pa, "loss_pct")));
			tbl_cell(&t, f_us(json_object_get(pa, "rtt_p50_ns")));
			tbl_cell(&t, f_us(json_object_get(pa, "rtt_p99_ns")));
			tbl_cell(&t, f_us(json_object_get(pa, "fwd_p50_ns")));
			tbl_cell(&t, f_us(json_object_get(pa, "rev_p50_ns")));
		}
	}
	tbl_print(&t, "");
	tbl_free(&t);
	return EX_OK;
}

int
fmt_path(const json_t *r)
{
	static const char *const hdr[] = {
		"WINDOW", "SENT", "RECEIVED", "LOST", "LOSS", "METRIC", "COUNT",
		"MIN_µs", "P50_µs", "P99_µs", "P99.9_µs", "MAX_µs", "MEAN_µs" };
	static const char *const wins[] = { "1s", "10s", "60s" };
	static const char *const metrics[] = { "rtt", "fwd", "rev" };
	const json_t *paths;
	json_t *pa;
	size_t i, w, m;

	if (!json_is_object(r))
		return EX_PROTO;
	paths = json_object_get(r, "paths");
	if (!json_is_array(paths))
		return EX_PROTO;
	printf("peer %s (%s)\n", get_s(r, "peer"), get_s(r, "addr"));
	json_array_foreach((json_t *)paths, i, pa) {
		const json_t *c = json_object_get(pa, "counters");
		const json_t *ws = json_object_get(pa, "windows");
		struct table t;

		printf("\npath %s  sport %s  state %s\n", get_s(pa, "path"),
		       get_s(pa, "sport"), get_s(pa, "state"));
		if (json_is_object(c))
			printf("  sent %s  received %s  lost %s  late %s  "
			       "reordered %s  duplicated %s  unknown %s\n",
			       get_s(c, "sent"), get_s(c, "received"),
			       get_s(c, "lost"), get_s(c, "late"),
			       get_s(c, "reordered"), get_s(c, "duplicated"),
			       get_s(c, "unknown"));
		if (!json_is_object(ws))
			continue;
		tbl_init(&t, 13, hdr, "lrrrrlrrrrrrr");
		for (w = 0; w < 3; w++) {
			const json_t *win = json_object_get(ws, wins[w]);

			if (!json_is_object(win))
				continue;
			for (m = 0; m < 3; m++) {
				const json_t *h = json_object_get(win,
								  metrics[m]);
				bool first = m == 0;

				tbl_cell(&t, first ? wins[w] : "");
				tbl_cell(&t, first ? f_int(json_object_get(
					win, "sent")) : "");
				tbl_cell(&t, first ? f_int(json_object_get(
					win, "received")) : "");
				tbl_cell(&t, first ? f_int(json_object_get(
					win, "lost")) : "");
				tbl_cell(&t, first ? f_pct(json_object_get(
					win, "loss_pct")) : "");
				tbl_cell(&t, metrics[m]);
				tbl_cell(&t, f_int(json_object_get(h, "count")));
				tbl_cell(&t, f_us(json_object_get(h, "min")));
				tbl_cell(&t, f_us(json_object_get(h, "p50")));
				tbl_cell(&t, f_us(json_object_get(h, "p99")));
				tbl_cell(&t, f_us(json_object_get(h, "p999")));
				tbl_cell(&t, f_us(json_object_get(h, "max")));
				tbl_cell(&t, f_us(json_object_get(h, "mean")));
			}
		}
		tbl_print(&t, "  ");
		tbl_free(&t);
	}
	return EX_OK;
}

