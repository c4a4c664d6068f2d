/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus exposition: GET /metrics over HTTP (libmicrohttpd), off unless
 * metrics.port is set.
 *
 * The page is rendered from the control socket's own commands (status,
 * peers, paths, sync, bridge), called in the control thread with
 * ls_ctl_call_local(): the numbers a scrape sees are the ones lockstepctl
 * shows, and nothing here reads lcore state on its own. libmicrohttpd runs
 * in "external select" mode and is driven from the control loop
 * (lsd_metrics_poll, every ~10 ms), so there is no thread of its own and no
 * lock: a scrape waits at most one loop turn.
 *
 * Naming follows Prometheus practice: lockstep_ prefix, base units in the
 * name (seconds, ratio), _total for counters. Label cardinality per node:
 * 6 series per path (peer, path) and 4 per peer, so 10k peers x 8 paths is
 * 520k series per node, which is why the per-path families can be turned
 * into per-peer ones by a recording rule (docs/metrics.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>

#include <microhttpd.h>

#include "lockstepd.h"
#include "ls_ctl.h"

static struct {
	struct MHD_Daemon *d;
	struct ls_ctl *ctl;
	uint64_t scrapes;
} met;

/* A growing text buffer; out of memory leaves it marked failed. */
struct page {
	char *s;
	size_t len, cap;
	bool failed;
};

static void __attribute__((format(printf, 2, 3)))
put(struct page *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		if (p->failed)
			return;
		va_start(ap, fmt);
		n = vsnprintf(p->s + p->len, p->cap - p->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < p->cap - p->len) {
			p->len += (size_t)n;
			return;
		}
		{
			size_t cap = p->cap * 2 + (size_t)(n > 0 ? n : 0) + 4096;
			char *s = realloc(p->s, cap);

			if (s == NULL) {
				p->failed = true;
				return;
			}
			p->s = s;
			p->cap = cap;
		}
	}
}

/* A label value, escaped as the text format wants (\\, \", \n). */
static const char *
esc(const char *v, char *buf, size_t len)
{
	size_t o = 0;

	for (; v != NULL && *v != '\0' && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"' || *v == '\n')
			buf[o++] = '\\';
		buf[o++] = *v == '\n' ? 'n' : *v;
	}
	buf[o] = '\0';
	return buf;
}

static void
head(struct page *p, const char *name, const char *type, const char *help)
{
	put(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static double
num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *
call(const char *cmd, json_t *args)
{
	char err[256];
	json_t *r = ls_ctl_call_local(met.ctl, cmd, args, err, sizeof(err));

	json_decref(args);
	return r;
}

/* name{event="KEY"} VALUE for every key of a counters object. */
static void
put_events(struct page *p, const char *name, const json_t *counters)
{
	const char *key;
	json_t *v;
	char e[128];

	json_object_foreach((json_t *)counters, key, v)
		put(p, "%s{event=\"%s\"} %.0f\n", name, esc(key, e, sizeof(e)),
		    json_number_value(v));
}

static void
render_status(struct page *p)
{
	json_t *st = call("status", NULL), *v;
	char b1[128], b2[128];
	size_t i;

	if (st == NULL)
		return;
	head(p, "lockstep_info", "gauge", "Node name and version (always 1).");
	put(p, "lockstep_info{node=\"%s\",version=\"%s\"} 1\n",
	    esc(json_string_value(json_object_get(st, "node")), b1, sizeof(b1)),
	    esc(json_string_value(json_object_get(st, "version")), b2, sizeof(b2)));
	head(p, "lockstep_uptime_seconds", "gauge", "Seconds since lockstepd started.");
	put(p, "lockstep_uptime_seconds %.3f\n", num(st, "uptime_s"));
	head(p, "lockstep_port_up", "gauge", "Link state of each port (1 up).");
	json_array_foreach(json_object_get(st, "ports"), i, v)
		put(p, "lockstep_port_up{port=\"%s\"} %d\n",
		    esc(json_string_value(json_object_get(v, "name")), b1, sizeof(b1)),
		    json_is_true(json_object_get(v, "link_up")));
	head(p, "lockstep_port_received_packets_total", "counter", "Frames the port received.");
	json_array_foreach(json_object_get(st, "ports"), i, v)
		put(p, "lockstep_port_received_packets_total{port=\"%s\"} %.0f\n",
		    esc(json_string_value(json_object_get(v, "name")), b1, sizeof(b1)),
		    num(v, "rx_pkts"));
	head(p, "lockstep_port_sent_packets_total", "counter", "Frames the port sent.");
	json_array_foreach(json_object_get(st, "ports"), i, v)
		put(p, "lockstep_port_sent_packets_total{port=\"%s\"} %.0f\n",
		    esc(json_string_value(json_object_get(v, "name")), b1, sizeof(b1)),
		    num(v, "tx_pkts"));
	head(p, "lockstep_reflector_replies_total", "counter", "STAMP test packets reflected.");
	put(p, "lockstep_reflector_replies_total %.0f\n",
	    num(json_object_get(st, "reflector"), "reflected"));
	head(p, "lockstep_reflector_rate_limited_total", "counter",
	     "STAMP test packets not reflected: their source was over its rate.");
	put(p, "lockstep_reflector_rate_limited_total %.0f\n",
	    num(json_object_get(st, "reflector"), "rate_limited"));
	head(p, "lockstep_events_total", "counter",
	     "Per-lcore receive dispositions and send events, by name (lockstepctl status).");
	put_events(p, "lockstep_events_total", json_object_get(st, "counters"));
	json_decref(st);
}

static void
render_peers(struct page *p)
{
	static const struct { const char *name, *key, *help; } c[] = {
		{"lockstep_peer_probes_sent_total", "sent", "Probes sent to the peer."},
		{"lockstep_peer_probes_received_total", "received", "Replies from the peer."},
		{"lockstep_peer_probes_lost_total", "lost", "Probes counted lost."},
	};
	json_t *pe = call("peers", NULL), *v;
	char b[128];
	size_t i;

	if (pe == NULL)
		return;
	head(p, "lockstep_peer_up", "gauge", "1 when the peer's state is up.");
	json_array_foreach(pe, i, v)
		put(p, "lockstep_peer_up{peer=\"%s\"} %d\n",
		    esc(json_string_value(json_object_get(v, "name")), b, sizeof(b)),
		    strcmp(json_string_value(json_object_get(v, "state")) ?: "", "up") == 0);
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		head(p, c[k].name, "counter", c[k].help);
		json_array_foreach(pe, i, v)
			put(p, "%s{peer=\"%s\"} %.0f\n", c[k].name,
			    esc(json_string_value(json_object_get(v, "name")), b, sizeof(b)),
			    num(v, c[k].key));
	}
	json_decref(pe);
}

/* Per path, over the 10 s window: state, loss, RTT and one-way delays. */
static void
render_paths(struct page *p)
{
	static const struct { const char *name, *key, *q, *help; } g[] = {
		{"lockstep_path_rtt_seconds", "rtt_p50_ns", "0.5", "Round-trip time (10 s window)."},
		{"lockstep_path_rtt_seconds", "rtt_p99_ns", "0.99", NULL},
		{"lockstep_path_forward_delay_seconds", "fwd_p50_ns", "0.5",
		 "One-way delay toward the peer (synced clocks; 10 s window)."},
		{"lockstep_path_reverse_delay_seconds", "rev_p50_ns", "0.5",
		 "One-way delay from the peer (synced clocks; 10 s window)."},
	};
	json_t *r = call("paths", json_pack("{ss}", "window", "10s")), *pe, *pa;
	char b[128];
	size_t i, j;

	if (r == NULL)
		return;
	head(p, "lockstep_path_up", "gauge", "1 when the path is up (replies arrive).");
	json_array_foreach(json_object_get(r, "peers"), i, pe)
		json_array_foreach(json_object_get(pe, "paths"), j, pa)
			put(p, "lockstep_path_up{peer=\"%s\",path=\"%.0f\"} %d\n",
			    esc(json_string_value(json_object_get(pe, "name")), b, sizeof(b)),
			    num(pa, "path"),
			    strcmp(json_string_value(json_object_get(pa, "state")) ?: "", "up") == 0);
	head(p, "lockstep_path_loss_ratio", "gauge", "Lost / (received + lost), 10 s window.");
	json_array_foreach(json_object_get(r, "peers"), i, pe)
		json_array_foreach(json_object_get(pe, "paths"), j, pa)
			put(p, "lockstep_path_loss_ratio{peer=\"%s\",path=\"%.0f\"} %g\n",
			    esc(json_string_value(json_object_get(pe, "name")), b, sizeof(b)),
			    num(pa, "path"), num(pa, "loss_pct") / 100.0);
	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		/* a summary: quantiles over a sliding window is what it is */
		if (g[k].help != NULL)
			head(p, g[k].name, "summary", g[k].help);
		json_array_foreach(json_object_get(r, "peers"), i, pe)
			json_array_foreach(json_object_get(pe, "paths"), j, pa) {
				double v = num(pa, g[k].key);

				if (isnan(v))
					continue; /* no sample in the window: no series */
				put(p, "%s{peer=\"%s\",path=\"%.0f\",quantile=\"%s\"} %.9f\n",
				    g[k].name, esc(json_string_value(json_object_get(pe, "name")), b,
						   sizeof(b)), num(pa, "path"), g[k].q, v / 1e9);
			}
	}
	json_decref(r);
}

static void
render_sync(struct page *p)
{
	json_t *s = call("sync", NULL), *st;
	const char *status;

	if (s == NULL || !json_is_true(json_object_get(s, "enabled"))) {
		json_decref(s);
		return;
	}
	st = json_object_get(s, "state");
	status = json_string_value(json_object_get(st, "status")) ?: "unsynced";
	head(p, "lockstep_sync_synced", "gauge", "1 when fleet time is synced (or the reference).");
	put(p, "lockstep_sync_synced %d\n",
	    strcmp(status, "synced") == 0 || strcmp(status, "reference") == 0);
	head(p, "lockstep_sync_offset_seconds", "gauge",
	     "This clock's offset from fleet time, as the last network step estimated it.");
	put(p, "lockstep_sync_offset_seconds %.12f\n", num(st, "theta_ns") / 1e9);
	head(p, "lockstep_sync_bound_seconds", "gauge",
	     "Half-width of the fleet-time bound [earliest, latest] now (-1 unsynced).");
	put(p, "lockstep_sync_bound_seconds %.12f\n",
	    num(json_object_get(s, "reading"), "half_ns") / 1e9);
	head(p, "lockstep_sync_steps_total", "counter", "Clock-sync network steps run.");
	put(p, "lockstep_sync_steps_total %.0f\n",
	    num(json_object_get(s, "counters"), "net_steps"));
	json_decref(s);
}

static void
render_bridge(struct page *p)
{
	json_t *b = call("bridge", NULL);

	if (b == NULL)
		return; /* no data path configured */
	head(p, "lockstep_bridge_flows", "gauge", "Flows in the data path's table.");
	put(p, "lockstep_bridge_flows %.0f\n", num(b, "flows"));
	head(p, "lockstep_bridge_events_total", "counter",
	     "Data-path counters by name (lockstepctl bridge).");
	put_events(p, "lockstep_bridge_events_total", json_object_get(b, "counters"));
	json_decref(b);
}

static enum MHD_Result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
       const char *version, const char *upload, size_t *upload_len, void **ctx)
{
	struct page p = {0};
	struct MHD_Response *r;
	enum MHD_Result rc;
	unsigned int status = MHD_HTTP_OK;

	(void)cls, (void)version, (void)upload, (void)upload_len, (void)ctx;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		put(&p, "only GET\n");
	} else if (strcmp(url, "/metrics") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		put(&p, "lockstepd serves /metrics\n");
	} else {
		met.scrapes++;
		render_status(&p);
		render_peers(&p);
		render_paths(&p);
		render_sync(&p);
		render_bridge(&p);
		head(&p, "lockstep_scrapes_total", "counter", "Requests for /metrics served.");
		put(&p, "lockstep_scrapes_total %" PRIu64 "\n", met.scrapes);
	}
	if (p.failed) {
		free(p.s);
		return MHD_NO;
	}
	r = p.s != NULL ? MHD_create_response_from_buffer(p.len, p.s, MHD_RESPMEM_MUST_FREE) :
			  MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

int
lsd_metrics_start(struct ls_ctl *ctl)
{
	const struct ls_conf_metrics *mc = &lsd.cfg.metrics;
	const struct ls_addr a = mc->address;
	struct sockaddr_storage ss = {0};
	char as[LS_ADDR_STRLEN];

	if (mc->port == 0)
		return 0;
	met.ctl = ctl;
	ls_addr_fmt(&a, as, sizeof(as));
	if (a.family == LS_AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)mc->port);
		memcpy(&s6->sin6_addr, a.a, 16);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)mc->port);
		memcpy(&s4->sin_addr, a.a, 4);
	}
	/* no thread of its own: lsd_metrics_poll() runs it from the control loop */
	met.d = MHD_start_daemon(MHD_USE_ERROR_LOG | (a.family == LS_AF_INET6 ? MHD_USE_IPv6 : 0),
				 (uint16_t)mc->port, NULL, NULL, answer, NULL,
				 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				 MHD_OPTION_CONNECTION_LIMIT, 16U,
				 MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	if (met.d == NULL) {
		LSD_LOG(ERR, "metrics: cannot listen on %s port %u", as, mc->port);
		return -EADDRINUSE;
	}
	LSD_LOG(INFO, "metrics: http://%s%s%s:%u/metrics", a.family == LS_AF_INET6 ? "[" : "",
		as, a.family == LS_AF_INET6 ? "]" : "", mc->port);
	return 0;
}

void
lsd_metrics_poll(void)
{
	if (met.d != NULL)
		MHD_run(met.d);
}

void
lsd_metrics_stop(void)
{
	if (met.d != NULL)
		MHD_stop_daemon(met.d);
	met.d = NULL;
}
