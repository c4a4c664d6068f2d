/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Formatters for the single-daemon replies about the node itself: help,
 * status, peers, sync, and the raw JSON "call" prints. Each returns EX_OK,
 * or EX_PROTO when the reply does not have the shape it expects (the
 * caller then names the command in its message).
 */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lockstepctl.h"

static const char help_cols[] = "COMMAND=cmd ARGS=usage DESCRIPTION=help";

static const char peer_cols[] =
	"PEER=name addr port:r paths:r INTERVAL_µs=interval_us:n state mac sent:n "
	"received:n lost:n LOSS=loss_pct:p RTT_P50_µs=rtt_p50_ns:u";

/* A reply that is an array of objects, one row each. */
static int
fmt_array(const json_t *r, const char *cols)
{
	if (!json_is_array(r))
		return EX_PROTO;
	tbl_array(r, cols, "");
	return EX_OK;
}

int
fmt_help(const json_t *result)
{
	return fmt_array(result, help_cols);
}

int
fmt_peers(const json_t *r)
{
	return fmt_array(r, peer_cols);
}

/* The clock's source, then whatever else it reports, inline. */
static char *
status_clock(const json_t *clock)
{
	char *line = xstrdup(get_s(clock, "source"));
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)clock, key, v) {
		char *n;

		if (strcmp(key, "source") == 0 || json_is_object(v) ||
		    json_is_array(v))
			continue;
		n = xasprintf("%s  %s=%s", line, key, f_str(v));
		free(line);
		line = n;
	}
	return line;
}

/* status, first block: the node's one-line facts as "key: value". */
static void
status_head(const json_t *r)
{
	const json_t *clock, *refl, *cap;
	struct table t;
	char *s;

	tbl_init(&t, 2, NULL, "ll");
	tbl_cell(&t, "node:");
	s = xasprintf("%s (id %s)", get_s(r, "node"), get_s(r, "node_id"));
	tbl_cell(&t, s);
	free(s);
	tbl_cell(&t, "version:");
	tbl_cell(&t, get_s(r, "version"));
	tbl_cell(&t, "uptime:");
	tbl_cell(&t, f_uptime(json_object_get(r, "uptime_s")));

	clock = json_object_get(r, "clock");
	if (json_is_object(clock)) {
		tbl_cell(&t, "clock:");
		s = status_clock(clock);
		tbl_cell(&t, s);
		free(s);
	}
	tbl_cell(&t, "peers:");
	tbl_cell(&t, get_s(r, "n_peers"));
	tbl_cell(&t, "paths:");
	tbl_cell(&t, get_s(r, "n_paths"));

	refl = json_object_get(r, "reflector");
	if (json_is_object(refl)) {
		s = xasprintf("reflected %s  rate_limited %s  sources %s",
			      get_s(refl, "reflected"),
			      get_s(refl, "rate_limited"),
			      get_s(refl, "sources"));
		tbl_cell(&t, "reflector:");
		tbl_cell(&t, s);
		free(s);
	}
	cap = json_object_get(r, "capture");
	if (json_is_object(cap)) {
		if (json_is_true(json_object_get(cap, "active")))
			s = xasprintf("active  file %s  packets %s  bytes %s  "
				      "dropped %s", get_s(cap, "file"),
				      get_s(cap, "packets"),
				      get_s(cap, "bytes"),
				      get_s(cap, "dropped"));
		else
			s = xstrdup("inactive");
		tbl_cell(&t, "capture:");
		tbl_cell(&t, s);
		free(s);
	}
	tbl_print(&t, "");
	tbl_free(&t);
}

static void
status_ports(const json_t *ports)
{
	static const char cols[] = "PORT=name dev ID=port_id:r mac ipv4 ipv6 lcore "
		"LINK=link_up:U rx_pkts:n tx_pkts:n rx_missed:n";

	printf("\nports:\n");
	tbl_array(ports, cols, "  ");
}

static void
status_counters(const json_t *counters)
{
	const char *key;
	struct table t;
	json_t *v;

	printf("\ncounters:\n");
	tbl_init(&t, 2, NULL, "lr");
	json_object_foreach((json_t *)counters, key, v) {
		tbl_cell(&t, key);
		tbl_cell(&t, f_int(v));
	}
	tbl_print(&t, "  ");
	tbl_free(&t);
}

int
fmt_status(const json_t *r)
{
	const json_t *ports, *counters;

	if (!json_is_object(r))
		return EX_PROTO;
	status_head(r);
	ports = json_object_get(r, "ports");
	if (json_is_array(ports) && json_array_size(ports) > 0)
		status_ports(ports);
	counters = json_object_get(r, "counters");
	if (json_is_object(counters) && json_object_size(counters) > 0)
		status_counters(counters);
	return EX_OK;
}


static double
num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

int
fmt_sync(const json_t *r)
{
	const json_t *st = json_object_get(r, "state");
	const json_t *rd = json_object_get(r, "reading");
	const json_t *nb = json_object_get(r, "neighbors");
	const json_t *n;
	size_t i;

	if (!json_is_true(json_object_get(r, "enabled"))) {
		printf("sync: disabled\n");
		return EX_OK;
	}
	if (!json_is_object(st) || !json_is_object(rd) || !json_is_array(nb))
		return EX_PROTO;
	printf("status:     %s (reference node %d, %d hops, ref_seq %d)\n",
	       json_string_value(json_object_get(st, "status")) ?: "?",
	       (int)num(st, "ref_id"), (int)num(st, "hops"), (int)num(st, "ref_seq"));
	printf("mapping:    fleet = local - (%.1f ns + %.4f ppm * (local - t0))\n",
	       num(st, "theta_ns"), num(st, "phi_ppm"));
	printf("confidence: sigma %.1f ns, drift sigma %.5f ppm, last good %.0f ms ago\n",
	       num(st, "sigma_ns"), num(st, "phi_sigma_ppm"), num(st, "age_ms"));
	if (num(rd, "half_ns") >= 0)
		printf("now:        fleet %.0f ns, bound +-%.1f ns [%.0f, %.0f]\n",
		       num(rd, "fleet_ns"), num(rd, "half_ns"), num(rd, "earliest_ns"),
		       num(rd, "latest_ns"));
	else
		printf("now:        fleet unknown (not synced), local %.0f ns\n",
		       num(rd, "local_ns"));
	printf("\n%-6s %-16s %14s %11s %9s %10s %6s %9s %5s %13s %13s\n", "NODE", "PEERS",
	       "OFFSET_ns", "DRIFT_ppm", "SIGMA_ns", "HALFGAP_ns", "USED", "RESID_ns",
	       "PURE%", "NTP_OFF_ns", "PTP_OFF_ns");
	json_array_foreach(nb, i, n) {
		const json_t *e = json_object_get(n, "edge"), *pu = json_object_get(n, "purity");
		const json_t *b = json_object_get(n, "baselines"), *pn;
		char peers[64] = "";
		double kept = num(pu, "fwd_kept") + num(pu, "rev_kept");
		double all = kept + num(pu, "fwd_rejected") + num(pu, "rev_rejected");
		size_t k;

		json_array_foreach(json_object_get(n, "peers"), k, pn) {
			size_t l = strlen(peers);

			snprintf(peers + l, sizeof(peers) - l, "%s%s", l ? "," : "",
				 json_string_value(pn) ?: "?");
		}
		printf("%-6d %-16.16s ", (int)num(n, "node_id"), peers);
		if (json_is_object(e))
			printf("%14.1f %11.4f %9.1f %10.1f ", num(e, "offset_ns"),
			       num(e, "drift_ppm"), num(e, "sigma_ns"), num(e, "half_gap_ns"));
		else
			printf("%14s %11s %9s %10s ", "-", "-", "-", "-");
		printf("%6s %9.1f %5.0f ",
		       json_is_true(json_object_get(n, "rejected")) ? "cut" :
		       json_is_true(json_object_get(n, "used")) ? "yes" : "no",
		       num(n, "residual_ns"), all > 0 ? 100.0 * kept / all : 0.0);
		if (json_is_object(b))
			printf("%13.1f %13.1f\n", num(b, "ntp_offset_ns"), num(b, "ptp_offset_ns"));
		else
			printf("%13s %13s\n", "-", "-");
	}
	return EX_OK;
}

int
fmt_raw(const json_t *result)
{
	char *s;

	if (result == NULL || json_is_null(result))
		return EX_OK;
	s = json_dumps(result, JSON_ENCODE_ANY | JSON_INDENT(2));
	if (s == NULL)
		die_oom();
	puts(s);
	free(s);
	return EX_OK;
}
