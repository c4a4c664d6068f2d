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

/* With --cc: the flow's key and its loop instead of the counters. */
static const char flow_cc_cols[] =
	"src dst dport:n QP/LABEL=qp_label:n slice CC=mode RATE_BPS=rate_bps:n "
	"TARGET_BPS=target_bps:n alpha:r state cnps:n share:n ce:n";

/* Rows with their "cc" object's keys beside their own. */
static json_t *
flatten(const json_t *arr, const char *inner)
{
	json_t *rows = json_array(), *e;
	size_t i;

	json_array_foreach(arr, i, e) {
		json_t *row = json_deep_copy(e);

		json_object_update(row, json_object_get(e, inner));
		json_array_append_new(rows, row);
	}
	return rows;
}

int
fmt_flows(const json_t *r)
{
	const json_t *top = json_object_get(r, "top");
	json_t *rows;

	printf("flows in the table: %s\n", f_int(json_object_get(r, "flows")));
	if (json_array_size(top) == 0 || json_object_get(json_array_get(top, 0), "cc") == NULL) {
		tbl_array(top, flow_cols, "");
		return EX_OK;
	}
	rows = flatten(top, "cc");
	tbl_array(rows, flow_cc_cols, "");
	json_decref(rows);
	return EX_OK;
}

static const char cc_slice_cols[] =
	"SLICE=name CC=mode np CE=ce:n CNP_µs=cnp_interval_us:n ai_bps:n hai_bps:n min_bps:n "
	"K_µs=k_us:n T_µs=t_us:n B=byte_reset:n f:n g_inv:n SHARE=ai_share "
	"CLAMP=clamp_tgt_rate target_us:n interval_us:n BETA%=beta_pct:n";

int
fmt_cc(const json_t *r)
{
	const json_t *paths = json_object_get(r, "paths_ce");
	const char *key;
	json_t *v;
	size_t i;

	tbl_array(json_object_get(r, "slices"), cc_slice_cols, "");
	printf("\nCE from the fabric by the sender's path:");
	json_array_foreach((json_t *)paths, i, v)
		printf(" %s:%s", get_s(v, "path"), get_s(v, "ce"));
	printf("%s\n\n", json_array_size(paths) ? "" : " none");
	json_object_foreach(json_object_get(r, "counters"), key, v)
		printf("%-18s %s\n", key, f_int(v));
	return EX_OK;
}

static const char slice_cols[] =
	"SLICE=name latency min_bps:n max_bps:n weight:n flow_bps:n SENT=sent_pkts:n "
	"sent_bytes:n drops:n backlog:n";

/* One flat row per slice: its shares beside its "stats". */
int
fmt_slices(const json_t *r)
{
	json_t *rows = flatten(r, "stats");

	tbl_array(rows, slice_cols, "");
	json_decref(rows);
	return EX_OK;
}
