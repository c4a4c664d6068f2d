/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tables for the data path's commands: flows (one row per flow, its key
 * first) and slices (shares, then what they sent and dropped).
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "lockstepctl.h"

static const struct col flow_cols[] = {
	{ "SRC", "src", f_str, 'l' }, { "DST", "dst", f_str, 'l' },
	{ "PROTO", "proto", f_int, 'r' }, { "SPORT", "sport", f_int, 'r' },
	{ "DPORT", "dport", f_int, 'r' }, { "QP/LABEL", "qp_label", f_int, 'r' },
	{ "KIND", "kind", f_str, 'l' }, { "DIR", "dir", f_str, 'l' },
	{ "SLICE", "slice", f_str, 'l' }, { "PATH", "path", f_str, 'r' },
	{ "PKTS", "pkts", f_int, 'r' }, { "BYTES", "bytes", f_int, 'r' },
	{ "CE", "ce", f_int, 'r' }, { "DROPS", "drops", f_int, 'r' },
	{ "PACE_BPS", "pace_bps", f_int, 'r' },
};

int
fmt_flows(const json_t *r)
{
	printf("flows in the table: %s\n", f_int(json_object_get(r, "flows")));
	tbl_array(json_object_get(r, "top"), flow_cols, N_COLS(flow_cols), "");
	return EX_OK;
}

static const struct col slice_cols[] = {
	{ "SLICE", "name", f_str, 'l' }, { "LATENCY", "latency", f_str, 'l' },
	{ "MIN_BPS", "min_bps", f_int, 'r' }, { "MAX_BPS", "max_bps", f_int, 'r' },
	{ "WEIGHT", "weight", f_int, 'r' }, { "FLOW_BPS", "flow_bps", f_int, 'r' },
	{ "SENT", "sent_pkts", f_int, 'r' }, { "SENT_BYTES", "sent_bytes", f_int, 'r' },
	{ "DROPS", "drops", f_int, 'r' }, { "BACKLOG", "backlog", f_int, 'r' },
};

/* One flat row per slice: its shares beside its "stats". */
int
fmt_slices(const json_t *r)
{
	json_t *rows = json_array(), *s;
	size_t i;

	json_array_foreach(r, i, s) {
		json_t *row = json_deep_copy(s);

		json_object_update(row, json_object_get(s, "stats"));
		json_array_append_new(rows, row);
	}
	tbl_array(rows, slice_cols, N_COLS(slice_cols), "");
	json_decref(rows);
	return EX_OK;
}
