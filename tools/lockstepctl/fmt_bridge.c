/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tables for the data path's commands: flows (one row per flow, its key
 * first) and slices (shares, then what they sent and dropped).
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "lockstepctl.h"

static const char flow_cols[] =
	"src dst proto:n sport:n dport:n QP/LABEL=qp_label:n kind dir slice path:r "
	"pkts:n bytes:n ce:n drops:n pace_bps:n";

int
fmt_flows(const json_t *r)
{
	printf("flows in the table: %s\n", f_int(json_object_get(r, "flows")));
	tbl_array(json_object_get(r, "top"), flow_cols, "");
	return EX_OK;
}

static const char slice_cols[] =
	"SLICE=name latency min_bps:n max_bps:n weight:n flow_bps:n SENT=sent_pkts:n "
	"sent_bytes:n drops:n backlog:n";

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
	tbl_array(rows, slice_cols, "");
	json_decref(rows);
	return EX_OK;
}
