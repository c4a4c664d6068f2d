/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's options (lld_opts.h): one getopt_long table, a checker
 * per kind of value, and the mapping from a flow index to its frame.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_roce.h"
#include "lld_opts.h"
#include "lld_sink.h"

const char lld_usage[] =
"Usage: lockstep-load [EAL options] -- [options]\n"
"\n"
"A workload generator and sink for lockstep labs: RoCEv2-, UDP- and\n"
"TCP-shaped flows over IPv4/IPv6, paced on the TSC; the sink reports per\n"
"flow and in total (rates per window, loss, reordering, one-way delay).\n"
"Ports are DPDK devices given to the EAL (--vdev net_memif0,... ).\n"
"\n"
"  --tx PORT            send on PORT (ethdev name or port id)\n"
"  --rx PORT            receive on PORT (may be the TX port)\n"
"  --flows N            flows (default 1; up to 16777216)\n"
"  --proto LIST         roce, udp, tcp, given to flows in turn (default udp)\n"
"  --family LIST        4, 6, given to flows in turn (default 4)\n"
"  --size LIST          frame bytes without FCS, given to flows in turn\n"
"                       (default 1500; up to 9018 if the port's MTU allows)\n"
"  --rate BPS           per-flow rate, frame bits/s (k, M, G suffixes)\n"
"  --total-rate BPS     aggregate rate, shared evenly by the flows\n"
"                       (by the background flows when --fg-flows is given)\n"
"  --fg-flows N         the first N of --flows are foreground flows (e.g. a\n"
"                       latency-sensitive RPC beside bulk): their own rate,\n"
"                       size and DSCP, and one-way delay quantiles of their\n"
"                       own; N = --flows: all are, and --rate is not needed\n"
"  --fg-rate BPS        their per-flow rate (required with --fg-flows)\n"
"  --fg-size B          their frame bytes (256)\n"
"  --fg-dscp N          their DSCP (default --dscp)\n"
"  --duration S         seconds of TX; RX only: of listening (default 10)\n"
"  --spread-us N        start the flows evenly over N us (default: one period)\n"
"  --roce-op OP         send (RC SEND Only) or write (RC RDMA WRITE Only)\n"
"  --src-mac MAC, --dst-mac MAC  (default the port's, 02:00:00:00:00:02)\n"
"  --src IP, --dst IP   IPv4 bases (10.0.0.1, 10.0.1.1)\n"
"  --src6 IP, --dst6 IP IPv6 bases (fd00::1, fd00:1::1)\n"
"  --sport N, --dport N source port base (49152), destination port (7777)\n"
"  --qp N               RoCEv2 destination QP of flow 0 (256); flow i: N + i\n"
"  --dscp N             DSCP (0)\n"
"  --ecn N              ECN codepoint 0..3 (0; 2 = ECT(0), as RoCE NICs send)\n"
"  --respond            the sink answers RC requests as a responder NIC: an ACK\n"
"                       per request and, for CE-marked ones, a CNP (see --cnp-us)\n"
"  --cnp-us N           at most one CNP per flow per N us (50)\n"
"  --reflect            the sink's host (--dst) reflects STAMP test packets\n"
"                       (IPv4, UDP 862), as its lockstepd would\n"
"  --reflect-any        reflect them for every IPv4 address and MAC: one port\n"
"                       answers as many peers (benchmarks of large meshes)\n"
"  --window-ms N        sink window (100)\n"
"  --settle-ms N        measure from N ms after the first frame (0)\n"
"  --linger-ms N        receive this long after TX ends (500)\n"
"  --tx-delay-ms N      start sending N ms after the sink, responder and\n"
"                       reflector (0): a mesh that runs before the job\n"
"  --detail N           flows with every window in the report (4)\n"
"  --report-flows N     flows listed in the report (1000; the summary has all)\n"
"  --gaps N             longest gaps between arrivals kept per flow (16, up to 256)\n"
"  --report FILE        JSON report (default stdout)\n"
"  --phase-bytes B      a collective job: phases of B bytes per flow (k, M, G\n"
"                       suffixes); a phase ends when all its frames have\n"
"                       arrived (needs --tx and --rx in this process)\n"
"  --phases K           phases in the job (1)\n"
"  --phase-timeout-ms T a phase ends T ms after its last frame left even if\n"
"                       frames are missing: they are lost (10000)\n"
"  --idle-sleep-us N    sleep when idle: RX only, after TX, or TX waiting for\n"
"                       its next frame or the phase's end (0: busy poll)\n"
"  --link-wait S        wait this long for links up (10)\n"
"  --check              check the options and exit\n"
"  -h, --help           this text\n"
"  -V, --version        print the version\n"
"\n"
"Exit status: 0 done, 1 failure, 2 bad usage.\n";

enum {
	O_TX = 256, O_RX, O_FLOWS, O_PROTO, O_FAMILY, O_SIZE, O_RATE, O_TOTAL, O_DURATION,
	O_ROCEOP, O_SMAC, O_DMAC, O_SRC, O_DST, O_SRC6, O_DST6, O_SPORT, O_DPORT, O_QP,
	O_DSCP, O_WINDOW, O_SETTLE, O_LINGER, O_DETAIL, O_RFLOWS, O_REPORT, O_IDLE, O_GAPS,
	O_LINKWAIT, O_CHECK, O_SPREAD, O_ECN, O_RESPOND, O_CNPUS, O_REFLECT, O_REFLANY,
	O_FGFLOWS, O_FGRATE, O_FGSIZE, O_FGDSCP, O_TXDELAY, O_PHBYTES, O_PHASES, O_PHTIMEOUT,
};

/* ceil(B / 60) frames per flow per phase must fit 32 bits */
#define LLD_MAX_PHASE_BYTES 1e11

static const struct option long_opts[] = {
	{"tx", required_argument, NULL, O_TX}, {"rx", required_argument, NULL, O_RX},
	{"flows", required_argument, NULL, O_FLOWS}, {"proto", required_argument, NULL, O_PROTO},
	{"family", required_argument, NULL, O_FAMILY}, {"size", required_argument, NULL, O_SIZE},
	{"rate", required_argument, NULL, O_RATE}, {"total-rate", required_argument, NULL, O_TOTAL},
	{"duration", required_argument, NULL, O_DURATION},
	{"spread-us", required_argument, NULL, O_SPREAD},
	{"roce-op", required_argument, NULL, O_ROCEOP},
	{"src-mac", required_argument, NULL, O_SMAC}, {"dst-mac", required_argument, NULL, O_DMAC},
	{"src", required_argument, NULL, O_SRC}, {"dst", required_argument, NULL, O_DST},
	{"src6", required_argument, NULL, O_SRC6}, {"dst6", required_argument, NULL, O_DST6},
	{"sport", required_argument, NULL, O_SPORT}, {"dport", required_argument, NULL, O_DPORT},
	{"qp", required_argument, NULL, O_QP}, {"dscp", required_argument, NULL, O_DSCP},
	{"ecn", required_argument, NULL, O_ECN}, {"respond", no_argument, NULL, O_RESPOND},
	{"cnp-us", required_argument, NULL, O_CNPUS},
	{"reflect", no_argument, NULL, O_REFLECT},
	{"reflect-any", no_argument, NULL, O_REFLANY},
	{"fg-flows", required_argument, NULL, O_FGFLOWS},
	{"fg-rate", required_argument, NULL, O_FGRATE},
	{"fg-size", required_argument, NULL, O_FGSIZE},
	{"fg-dscp", required_argument, NULL, O_FGDSCP},
	{"tx-delay-ms", required_argument, NULL, O_TXDELAY},
	{"phase-bytes", required_argument, NULL, O_PHBYTES},
	{"phases", required_argument, NULL, O_PHASES},
	{"phase-timeout-ms", required_argument, NULL, O_PHTIMEOUT},
	{"window-ms", required_argument, NULL, O_WINDOW},
	{"settle-ms", required_argument, NULL, O_SETTLE},
	{"linger-ms", required_argument, NULL, O_LINGER},
	{"detail", required_argument, NULL, O_DETAIL},
	{"report-flows", required_argument, NULL, O_RFLOWS},
	{"gaps", required_argument, NULL, O_GAPS},
	{"report", required_argument, NULL, O_REPORT},
	{"idle-sleep-us", required_argument, NULL, O_IDLE},
	{"link-wait", required_argument, NULL, O_LINKWAIT},
	{"check", no_argument, NULL, O_CHECK}, {"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

int
lld_parse_rate(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		v *= 1e3, end++;
	else if (*end == 'M')
		v *= 1e6, end++;
	else if (*end == 'G')
		v *= 1e9, end++;
	if (*end != '\0' || !isfinite(v) || v <= 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* An integer in [lo, hi]; the option's name for the message. */
static int
get_u32(const char *name, const char *arg, uint64_t lo, uint64_t hi, uint32_t *out,
	char *err, size_t len)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 0);
	if (*arg == '-' || end == arg || *end != '\0' || errno != 0 || v < lo || v > hi) {
		snprintf(err, len, "--%s: expected an integer %llu..%llu, got \"%s\"", name,
			 (unsigned long long)lo, (unsigned long long)hi, arg);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

static int
get_secs(const char *name, const char *arg, double *out, char *err, size_t len)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end != '\0' || !isfinite(v) || v <= 0 || v > 86400) {
		snprintf(err, len, "--%s: expected seconds in (0, 86400], got \"%s\"", name, arg);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* A comma-separated list, each entry through one of the parsers below. */
static int
get_list(const char *name, const char *arg, int (*one)(const char *, uint32_t *),
	 const char *what, uint32_t *vals, uint8_t *n, char *err, size_t len)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", arg);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (*n == LLD_MAX_LIST) {
			snprintf(err, len, "--%s: at most %d entries", name, LLD_MAX_LIST);
			return -EINVAL;
		}
		if (one(tok, &vals[*n]) < 0) {
			snprintf(err, len, "--%s: \"%s\" is not %s", name, tok, what);
			return -EINVAL;
		}
		(*n)++;
	}
	if (*n == 0) {
		snprintf(err, len, "--%s: empty list", name);
		return -EINVAL;
	}
	return 0;
}

static int
one_shape(const char *t, uint32_t *v)
{
	for (uint32_t i = 0; i < LLD_SHAPES; i++)
		if (strcmp(t, lld_shape_name((uint8_t)i)) == 0) {
			*v = i;
			return 0;
		}
	return -EINVAL;
}

static int
one_family(const char *t, uint32_t *v)
{
	*v = strcmp(t, "4") == 0 ? LS_AF_INET : strcmp(t, "6") == 0 ? LS_AF_INET6 : 0;
	return *v ? 0 : -EINVAL;
}

static int
one_size(const char *t, uint32_t *v)
{
	char *end;
	unsigned long n = strtoul(t, &end, 10);

	*v = (uint32_t)n;
	return end != t && *end == '\0' && n >= 60 && n <= LLD_LEN_MAX ? 0 : -EINVAL;
}

static void
defaults(struct lld_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->flows = 1;
	o->shapes[0] = LLD_UDP;
	o->n_shapes = 1;
	o->families[0] = LS_AF_INET;
	o->n_families = 1;
	o->sizes[0] = 1500;
	o->n_sizes = 1;
	o->roce_op = LLD_OP_SEND_ONLY;
	o->duration_s = 10;
	ls_mac_parse("02:00:00:00:00:02", &o->dst_mac);
	ls_addr_parse("10.0.0.1", &o->src4);
	ls_addr_parse("10.0.1.1", &o->dst4);
	ls_addr_parse("fd00::1", &o->src6);
	ls_addr_parse("fd00:1::1", &o->dst6);
	o->sport = 49152;
	o->dport = 7777;
	o->qp = 256;
	o->window_ms = 100;
	o->linger_ms = 500;
	o->detail_flows = 4;
	o->report_flows = 1000;
	o->gaps = LLD_SINK_GAPS;
	o->link_wait_s = 10;
	o->cnp_us = 50;
	o->fg_size = 256;
	o->fg_dscp = 0xff;      /* unset: --dscp */
}

static int
get_addr(const char *name, const char *arg, uint8_t family, struct ls_addr *a,
	 char *err, size_t len)
{
	if (ls_addr_parse(arg, a) < 0 || a->family != family) {
		snprintf(err, len, "--%s: \"%s\" is not an IPv%u address", name, arg, family);
		return -EINVAL;
	}
	return 0;
}

static int
get_mac(const char *name, const char *arg, struct ls_mac *m, char *err, size_t len)
{
	if (ls_mac_parse(arg, m) < 0) {
		snprintf(err, len, "--%s: \"%s\" is not a MAC address", name, arg);
		return -EINVAL;
	}
	return 0;
}

/* Options about the flows' frames. */
static int
parse_frame_opt(struct lld_opts *o, int c, const char *name, const char *arg,
		char *err, size_t len)
{
	uint32_t v[LLD_MAX_LIST], x;
	int rc;

	switch (c) {
	case O_PROTO:
		rc = get_list(name, arg, one_shape, "roce, udp or tcp", v, &o->n_shapes, err, len);
		for (uint8_t i = 0; rc == 0 && i < o->n_shapes; i++)
			o->shapes[i] = (uint8_t)v[i];
		return rc;
	case O_FAMILY:
		rc = get_list(name, arg, one_family, "4 or 6", v, &o->n_families, err, len);
		for (uint8_t i = 0; rc == 0 && i < o->n_families; i++)
			o->families[i] = (uint8_t)v[i];
		return rc;
	case O_SIZE:
		rc = get_list(name, arg, one_size, "a frame length 60..9018", v, &o->n_sizes,
			      err, len);
		for (uint8_t i = 0; rc == 0 && i < o->n_sizes; i++)
			o->sizes[i] = (uint16_t)v[i];
		return rc;
	case O_ROCEOP:
		if (strcmp(arg, "send") != 0 && strcmp(arg, "write") != 0) {
			snprintf(err, len, "--%s: expected send or write, got \"%s\"", name, arg);
			return -EINVAL;
		}
		o->roce_op = arg[0] == 's' ? LLD_OP_SEND_ONLY : LLD_OP_WRITE_ONLY;
		return 0;
	case O_SMAC:
		o->src_mac_set = true;
		return get_mac(name, arg, &o->src_mac, err, len);
	case O_DMAC:
		return get_mac(name, arg, &o->dst_mac, err, len);
	case O_SRC:
		return get_addr(name, arg, LS_AF_INET, &o->src4, err, len);
	case O_DST:
		return get_addr(name, arg, LS_AF_INET, &o->dst4, err, len);
	case O_SRC6:
		return get_addr(name, arg, LS_AF_INET6, &o->src6, err, len);
	case O_DST6:
		return get_addr(name, arg, LS_AF_INET6, &o->dst6, err, len);
	case O_SPORT:
	case O_DPORT:
		rc = get_u32(name, arg, 1, 65535, &x, err, len);
		*(c == O_SPORT ? &o->sport : &o->dport) = (uint16_t)x;
		return rc;
	case O_QP:
		return get_u32(name, arg, 1, LS_ROCE_QPN_MASK, &o->qp, err, len);
	case O_DSCP:
		rc = get_u32(name, arg, 0, 63, &x, err, len);
		o->dscp = (uint8_t)x;
		return rc;
	case O_ECN:
		rc = get_u32(name, arg, 0, 3, &x, err, len);
		o->ecn = (uint8_t)x;
		return rc;
	case O_FGSIZE:
		rc = one_size(arg, &x);
		if (rc < 0)
			snprintf(err, len, "--%s: \"%s\" is not a frame length 60..9018", name, arg);
		o->fg_size = (uint16_t)x;
		return rc;
	case O_FGDSCP:
		rc = get_u32(name, arg, 0, 63, &x, err, len);
		o->fg_dscp = (uint8_t)x;
		return rc;
	}
	return 1;
}

/* Options about how long, how fast, and what to report. */
static int
parse_run_opt(struct lld_opts *o, int c, const char *name, const char *arg, double *total,
	      char *err, size_t len)
{
	switch (c) {
	case O_TX:
		o->tx_port = arg;
		return 0;
	case O_RX:
		o->rx_port = arg;
		return 0;
	case O_FLOWS:
		return get_u32(name, arg, 1, LLD_MAX_FLOWS, &o->flows, err, len);
	case O_FGFLOWS:
		return get_u32(name, arg, 1, LLD_MAX_FLOWS, &o->fg_flows, err, len);
	case O_RATE:
	case O_TOTAL:
	case O_FGRATE:
		if (lld_parse_rate(arg, c == O_RATE ? &o->rate_bps :
				   c == O_FGRATE ? &o->fg_rate_bps : total) < 0) {
			snprintf(err, len, "--%s: expected bits/s > 0 (e.g. 200M, 2.5e8), got \"%s\"",
				 name, arg);
			return -EINVAL;
		}
		return 0;
	case O_DURATION:
		return get_secs(name, arg, &o->duration_s, err, len);
	case O_LINKWAIT:
		return get_secs(name, arg, &o->link_wait_s, err, len);
	case O_SPREAD:
		return get_u32(name, arg, 0, 60000000, &o->spread_us, err, len);
	case O_WINDOW:
		return get_u32(name, arg, 1, 60000, &o->window_ms, err, len);
	case O_SETTLE:
		return get_u32(name, arg, 0, 3600000, &o->settle_ms, err, len);
	case O_LINGER:
		return get_u32(name, arg, 0, 3600000, &o->linger_ms, err, len);
	case O_TXDELAY:
		return get_u32(name, arg, 0, 3600000, &o->tx_delay_ms, err, len);
	case O_DETAIL:
		return get_u32(name, arg, 0, 1024, &o->detail_flows, err, len);
	case O_GAPS:
		return get_u32(name, arg, 1, LLD_SINK_GAPS_MAX, &o->gaps, err, len);
	case O_RFLOWS:
		return get_u32(name, arg, 0, LLD_MAX_FLOWS, &o->report_flows, err, len);
	case O_REPORT:
		o->report = arg;
		return 0;
	case O_IDLE:
		return get_u32(name, arg, 0, 1000000, &o->idle_sleep_us, err, len);
	case O_CNPUS:
		return get_u32(name, arg, 1, 100000000, &o->cnp_us, err, len);
	case O_RESPOND:
		o->respond = true;
		return 0;
	case O_REFLECT:
		o->reflect = true;
		return 0;
	case O_REFLANY:
		o->reflect = o->reflect_any = true;
		return 0;
	}
	return 1;
}

/* Options of a collective job's phases (lld_phase.h). */
static int
parse_phase_opt(struct lld_opts *o, int c, const char *name, const char *arg,
		char *err, size_t len)
{
	double v;

	switch (c) {
	case O_PHBYTES:
		if (lld_parse_rate(arg, &v) < 0 || v < 1 || v > LLD_MAX_PHASE_BYTES) {
			snprintf(err, len, "--%s: expected bytes 1..100G (k, M, G suffixes), "
				 "got \"%s\"", name, arg);
			return -EINVAL;
		}
		o->phase_bytes = (uint64_t)(v + 0.5);
		return 0;
	case O_PHASES:
		return get_u32(name, arg, 1, 1000000, &o->phases, err, len);
	case O_PHTIMEOUT:
		return get_u32(name, arg, 1, 3600000, &o->phase_timeout_ms, err, len);
	}
	return 1;
}

/* The phases need the sink in this process: it tells TX a phase is over. */
static int
check_phases(struct lld_opts *o, char *err, size_t len)
{
	if (o->phase_bytes == 0) {
		if (o->phases > 0)
			return snprintf(err, len, "--phases: needs --phase-bytes"), -EINVAL;
		if (o->phase_timeout_ms > 0)
			return snprintf(err, len, "--phase-timeout-ms: needs --phase-bytes"),
			       -EINVAL;
		return 0;
	}
	if (o->tx_port == NULL || o->rx_port == NULL)
		return snprintf(err, len, "--phase-bytes: needs --tx and --rx in this process "
				"(its sink tells TX when a phase is over)"), -EINVAL;
	if (o->phases == 0)
		o->phases = 1;
	if (o->phase_timeout_ms == 0)
		o->phase_timeout_ms = 10000;
	return 0;
}

/* What no single option can say wrong on its own. */
static int
check_all(struct lld_opts *o, double total, char *err, size_t len)
{
	if (o->tx_port == NULL && o->rx_port == NULL)
		return snprintf(err, len, "--tx or --rx: give at least one port"), -EINVAL;
	if (o->rate_bps > 0 && total > 0)
		return snprintf(err, len, "--rate and --total-rate: give one, not both"), -EINVAL;
	if (o->fg_flows > 0 && (o->fg_flows > o->flows || o->fg_rate_bps == 0))
		return snprintf(err, len, "--fg-flows: needs --fg-rate and at most --flows (%u)",
				o->flows), -EINVAL;
	if (total > 0 && o->fg_flows < o->flows)
		o->rate_bps = total / (o->flows - o->fg_flows);
	if (o->tx_port != NULL && o->rate_bps == 0 && o->fg_flows < o->flows)
		return snprintf(err, len, "--rate or --total-rate: required with --tx"), -EINVAL;
	if (o->fg_dscp == 0xff)
		o->fg_dscp = o->dscp;
	for (uint8_t i = 0; i < o->n_shapes; i++)
		for (uint8_t j = 0; j < o->n_families; j++)
			for (uint8_t k = 0; k <= o->n_sizes; k++) {
				uint16_t min = lld_frame_min_len(o->shapes[i], o->families[j],
								 o->roce_op);
				uint16_t size = k < o->n_sizes ? o->sizes[k] : o->fg_size;

				if (k == o->n_sizes && o->fg_flows == 0)
					continue;
				if (size < min)
					return snprintf(err, len, "--%s: %u is too short for %s "
							"over IPv%u (at least %u)",
							k < o->n_sizes ? "size" : "fg-size", size,
							lld_shape_name(o->shapes[i]),
							o->families[j], min), -EINVAL;
			}
	if ((uint64_t)o->qp + o->flows - 1 > LS_ROCE_QPN_MASK && o->tx_port != NULL)
		return snprintf(err, len, "--qp: %u + %u flows passes the 24-bit QP space",
				o->qp, o->flows), -EINVAL;
	if (o->detail_flows > o->flows)
		o->detail_flows = o->flows;
	return check_phases(o, err, len);
}

int
lld_opts_parse(int argc, char **argv, struct lld_opts *o, bool *check, bool *help,
	       char *err, size_t len)
{
	double total = 0;
	int c, idx, rc;

	defaults(o);
	*check = *help = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hV", long_opts, &idx)) != -1) {
		const char *name = c >= O_TX ? long_opts[idx].name : NULL;

		if (c == 'h' || c == 'V') {
			o->version = c == 'V';
			*help = true;
			return 0;
		}
		if (c == O_CHECK) {
			*check = true;
			continue;
		}
		if (c == '?' || c == ':') {
			snprintf(err, len, "%s: unknown option or missing value",
				 argv[optind - 1]);
			return -EINVAL;
		}
		rc = parse_frame_opt(o, c, name, optarg, err, len);
		if (rc > 0)
			rc = parse_run_opt(o, c, name, optarg, &total, err, len);
		if (rc > 0)
			rc = parse_phase_opt(o, c, name, optarg, err, len);
		if (rc < 0)
			return rc;
	}
	if (optind < argc) {
		snprintf(err, len, "\"%s\": unexpected argument", argv[optind]);
		return -EINVAL;
	}
	return check_all(o, total, err, len);
}

void
lld_opts_flow(const struct lld_opts *o, uint32_t i, struct lld_flow_spec *s)
{
	uint32_t span = 65536u - o->sport, host = i / span;
	uint8_t shape = o->shapes[i % o->n_shapes];
	uint8_t fam = o->families[i / o->n_shapes % o->n_families];
	uint16_t size = o->sizes[i / (o->n_shapes * o->n_families) % o->n_sizes];
	struct ls_addr *a;

	memset(s, 0, sizeof(*s));
	s->shape = shape;
	s->roce_op = o->roce_op;
	s->dscp = i < o->fg_flows ? o->fg_dscp : o->dscp;
	s->ecn = o->ecn;
	s->len = lld_frame_fit_len(shape, fam, o->roce_op, i < o->fg_flows ? o->fg_size : size);
	s->flow = i;
	s->src_mac = o->src_mac;
	s->dst_mac = o->dst_mac;
	s->src = fam == LS_AF_INET ? o->src4 : o->src6;
	s->dst = fam == LS_AF_INET ? o->dst4 : o->dst6;
	/* flow i: source port base + i modulo the ports above it, and the
	 * source address's last 32 bits + the number of times round */
	a = &s->src;
	{
		uint8_t *p = a->a + (fam == LS_AF_INET ? 0 : 12);
		uint32_t v = ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
			      (uint32_t)p[2] << 8 | p[3]) + host;

		p[0] = (uint8_t)(v >> 24);
		p[1] = (uint8_t)(v >> 16);
		p[2] = (uint8_t)(v >> 8);
		p[3] = (uint8_t)v;
	}
	s->sport = (uint16_t)(o->sport + i % span);
	s->dport = o->dport;
	s->qp = (o->qp + i) & LS_ROCE_QPN_MASK;
	s->flow_label = i & 0xfffff;
}
