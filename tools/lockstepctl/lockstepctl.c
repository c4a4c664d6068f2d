/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl: the operator's command line for lockstepd.
 *
 * It is deliberately thin: every subcommand builds one request, sends it
 * with ls_ctl_call() and formats the reply. All knowledge of what a
 * command does lives in the daemon; the tool only knows argument syntax
 * and how to lay out each reply shape as a table (see docs/lockstepctl.md
 * and docs/control.md). This file holds the command table and main; the
 * other rooms are listed in lockstepctl.h.
 *
 * Why it is built this way:
 *
 * - One table of subcommands (words, synopsis, description, and either
 *   the request it builds or a handler), so --help is generated from the
 *   same data the dispatcher uses and cannot drift from it, and a simple
 *   command is a table row, not a parser of its own (args.c).
 *
 * - Exit codes are part of the interface: scripts and the lab tooling
 *   branch on "daemon replied an error" (1) versus "daemon not running" (3)
 *   versus "daemon wedged" (5), so each failure path maps to exactly one
 *   code, and the codes are listed in --help.
 *
 * - --json always prints what the daemon said, unformatted, so scripts
 *   never have to parse the human tables. Tables are for eyes: column
 *   widths are computed from the content, durations are shown in
 *   microseconds with one decimal and losses in percent.
 *
 * - mesh/watch talk to several daemons (one per node of a lab or rack):
 *   a node that cannot be reached still gets a row, marked "?", so a dead
 *   node is visible rather than silently missing from the matrix.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lockstepctl.h"

/* ------------------------------------------------------------------ */
/* Command table, help, main                                          */
/* ------------------------------------------------------------------ */

static const struct optdef window_opts[] = {
	{ "--window", ARG_WINDOW },
	{ NULL },
};

static const struct optdef peer_add_opts[] = {
	{ "--port", ARG_STR },
	{ "--paths", ARG_UINT, 65535 },
	{ "--interval-us", ARG_UINT, UINT32_MAX },
	{ NULL },
};

static const struct optdef probe_set_opts[] = {
	{ "--peer", ARG_STR },
	{ "--interval-us", ARG_UINT, UINT32_MAX },
	{ "--paths", ARG_UINT, 65535 },
	{ NULL },
};

static const struct optdef capture_opts[] = {
	{ "--snaplen", ARG_UINT, UINT32_MAX },
	{ "--max-bytes", ARG_UINT, (unsigned long long)INT64_MAX },
	{ NULL },
};

static const struct optdef flows_opts[] = {
	{ "--top", ARG_UINT, 1000 },
	{ "--by", ARG_STR },
	{ "--dir", ARG_STR },
	{ "--cc", ARG_FLAG },
	{ NULL },
};

/* Rates go as JSON numbers so 10e9 works; match and path as JSON objects. */
static const struct optdef slice_opts[] = {
	{ "--min-bps", ARG_JSON },
	{ "--max-bps", ARG_JSON },
	{ "--min-pps", ARG_JSON },
	{ "--max-pps", ARG_JSON },
	{ "--weight", ARG_JSON },
	{ "--latency", ARG_JSON },
	{ "--qlen", ARG_JSON },
	{ "--flow-bps", ARG_JSON },
	{ "--match", ARG_JSON },
	{ "--path", ARG_JSON },
	{ NULL },
};

static const struct optdef events_opts[] = {
	{ "--max", ARG_UINT, 100000 },
	{ "--follow", ARG_FLAG },
	{ NULL },
};

static const struct optdef route_opts[] = {
	{ "--dport", ARG_UINT, 65535 },
	{ "--max-ttl", ARG_UINT, 31 },
	{ "--fresh", ARG_FLAG },
	{ NULL },
};

static const struct optdef rule_opts[] = {
	{ "--match", ARG_JSON },
	{ "--path", ARG_JSON },
	{ "--slice", ARG_STR },
	{ NULL },
};

/* probe set with neither --interval-us nor --paths would change nothing. */
static int
probe_set_check(const struct cli_cmd *cmd, const struct parsed *p)
{
	if (p->val[1] == NULL && p->val[2] == NULL)
		return usage_error(cmd, "nothing to set: give --interval-us "
				   "and/or --paths");
	return EX_OK;
}

static const struct cli_cmd commands[] = {
	{ "help", "", "list the daemon's control commands", .fmt = fmt_help },
	{ "status", "", "node, clock, ports, counters", .fmt = fmt_status },
	{ "peers", "", "configured peers with loss and RTT", .fmt = fmt_peers },
	{ "paths", "[--window 1s|10s|60s]", "every path to every peer", .fmt = fmt_paths,
	  .opts = window_opts },
	{ "path", "PEER [--window W]", "one peer's paths with full latency histograms",
	  .fmt = fmt_path, .pos = { "peer" }, .min_pos = 1, .opts = window_opts },
	{ "peer add", "NAME ADDR [--port PORT-NAME] [--paths N] [--interval-us US]",
	  "add a peer to probe", .fmt = print_kv,
	  .pos = { "name", "addr" }, .min_pos = 2, .opts = peer_add_opts },
	{ "peer del", "NAME", "remove a peer",
	  .fmt = print_kv, .pos = { "name" }, .min_pos = 1 },
	{ "probe set", "[--peer NAME] [--interval-us US] [--paths N]",
	  "change probing of one peer or all",
	  .fmt = print_kv, .opts = probe_set_opts, .check = probe_set_check },
	{ "stats reset", "", "zero counters and histograms", .fmt = print_kv },
	{ "clock", "", "clock source and its state", .fmt = print_kv },
	{ "sync", "", "clock sync: fleet-time mapping, bound, every neighbour's "
	  "offset, drift, confidence", .fmt = fmt_sync },
	{ "log level", "[LEVEL]", "show or set the log level", .fmt = print_kv,
	  .pos = { "level" } },
	{ "capture start", "NAME [--snaplen N] [--max-bytes N]",
	  "start writing probe packets to a new pcap file NAME in the daemon's capture.dir",
	  .fmt = print_kv, .pos = { "file" }, .min_pos = 1, .pos_kind = ARG_STR,
	  .opts = capture_opts },
	{ "capture stop", "", "stop the capture", .fmt = print_kv },
	{ "bridge", "", "the data path: ports, flows, counters", .fmt = fmt_raw },
	{ "flows", "[--top N] [--by bytes|pkts|ce|drops|rate] [--dir host|fabric] [--cc]",
	  "the data path's busiest flows (--cc: their congestion control)",
	  .fmt = fmt_flows, .opts = flows_opts },
	{ "cc", "", "congestion control: slices' modes and CE marks, CE by path, CNPs",
	  .fmt = fmt_cc },
	{ "slices", "", "slices: shares and counters", .fmt = fmt_slices },
	{ "policy", "", "the data-path policy (slices and flow rules) as JSON",
	  .fmt = fmt_raw },
	{ "slice set", "NAME [--min-bps R] [--max-bps R] [--min-pps R] [--max-pps R] "
	  "[--weight W] [--latency true|false] [--qlen N] [--flow-bps R] "
	  "[--match JSON] [--path JSON]", "add or change a slice (saved)", .fmt = fmt_raw,
	  .pos = { "name" }, .min_pos = 1, .opts = slice_opts },
	{ "slice del", "NAME", "remove a slice (saved)",
	  .fmt = print_kv, .pos = { "name" }, .min_pos = 1 },
	{ "rule set", "NAME [--match JSON] [--path JSON] [--slice S]",
	  "add or change a flow rule: path policy for matching flows (saved)",
	  .dcmd = "flow.policy", .fmt = print_kv, .pos = { "name" }, .min_pos = 1,
	  .opts = rule_opts },
	{ "rule del", "NAME", "remove a flow rule (saved)", .dcmd = "flow.policy.del",
	  .fmt = print_kv, .pos = { "name" }, .min_pos = 1 },
	{ "events", "[--max N] [--follow]",
	  "the event log: path and peer down/up, clock state (--follow: keep printing)",
	  cmd_events, .opts = events_opts },
	{ "route", "PEER [PATH] [--dport N] [--max-ttl N] [--fresh]",
	  "the routers a path crosses (TTL-limited probes with its 5-tuple; --dport 4791: "
	  "the data's)", cmd_route, .opts = route_opts },
	{ "links queues", "", "per-link queueing: each traced link's mean queueing over the "
	  "last second, fitted to the paths' (JSON)", .dcmd = "links.queues", .fmt = fmt_raw },
	{ "links", "", "suspect links: what dead paths' routes share that no live path "
	  "crosses (JSON)", .fmt = fmt_raw },
	{ "call", "CMD [JSON-ARGS]",
	  "send any daemon command, print the result", cmd_call },
	{ "mesh", "[--metric rtt|fwd|rev|loss] [--window W] [-s SOCK ...] "
	  "[--dir DIR] [--prometheus URL] [--group-by route|LABEL] "
	  "[--color auto|always|never] [--svg FILE] [--html FILE]",
	  "latency/loss matrix across several daemons (or a fleet from Prometheus), "
	  "coloured on a terminal; --svg/--html also write it as a picture", cmd_mesh },
	{ "watch", "[mesh options] [--interval SEC] [--count N]",
	  "redraw the mesh every SEC seconds", cmd_watch },
	{ "audit", "[-s SOCK ...] [--fleet FILE] [--dir DIR] [--window W] [--max-loss PCT] "
	  "[--mtu-sizes N,N,...] [--mtu-count N] [--capacity-frac F] [--min-gbps G] "
	  "[--min-paths N] [--max-ttl N] [--skip ITEM,...] [--verbose]",
	  "is the fleet ready for a job: reach, MTU, path capacity, distinct paths, link speeds, "
	  "driver and firmware, clock sync; pass/fail per item (exit 6 on a fail)", cmd_audit },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: lockstepctl [-s|--socket PATH] [--json] [--timeout MS] "
		"COMMAND [ARGS...]\n"
		"\n"
		"Query and control lockstepd through its control socket.\n"
		"\n"
		"options:\n"
		"  -s, --socket PATH  control socket (default: $LOCKSTEP_SOCKET, "
		"else\n"
		"                     %s); mesh/watch take several\n"
		"  --json             print the daemon's JSON reply as is\n"
		"  --timeout MS       wait at most MS ms for a reply "
		"(default %d)\n"
		"  -h, --help         show this help\n"
		"  -V, --version      print the version\n"
		"\n"
		"commands:\n", DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS);
	/* Synopses are too long to share a line with the description at
	 * 80 columns: synopsis on one line, description indented below. */
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s%s%s\n        %s\n", commands[i].name,
			commands[i].args[0] ? " " : "", commands[i].args,
			commands[i].help);
	fprintf(f,
		"\n"
		"mesh asks \"paths\" of every daemon given with -s, or of every "
		"*.sock in\n"
		"--dir (default %s when no -s is given); a cell is the median "
		"over\n"
		"paths of the metric's p50 in µs (loss: %%), \"-\" without data, "
		"DOWN when\n"
		"every path to that peer is down, \"?\" when the node did not "
		"answer.\n"
		"\n"
		"exit status:\n"
		"  0  success\n"
		"  1  the daemon replied an error\n"
		"  2  usage error\n"
		"  3  daemon not running (no socket, or connection refused)\n"
		"  4  permission denied on the socket\n"
		"  5  timeout, or a malformed reply\n"
		"  6  audit: an item failed\n", DEFAULT_DIR);
}

/* Longest table entry whose words start argv; *nwords is how many. */
static const struct cli_cmd *
find_cmd(int argc, char **argv, int *nwords)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++) {
		const char *name = commands[i].name;
		const char *sp = strchr(name, ' ');

		if (sp == NULL) {
			if (strcmp(argv[0], name) == 0) {
				*nwords = 1;
				return &commands[i];
			}
			continue;
		}
		if (argc >= 2 && strlen(argv[0]) == (size_t)(sp - name) &&
		    strncmp(argv[0], name, (size_t)(sp - name)) == 0 &&
		    strcmp(argv[1], sp + 1) == 0) {
			*nwords = 2;
			return &commands[i];
		}
	}
	return NULL;
}

/* "peer" alone or "peer frob": list what may follow. */
static int
unknown_command(int argc, char **argv)
{
	char subs[256] = "";
	size_t i, len = strlen(argv[0]);

	for (i = 0; i < N_COMMANDS; i++) {
		const char *name = commands[i].name;

		if (strncmp(name, argv[0], len) == 0 && name[len] == ' ') {
			if (subs[0])
				strncat(subs, ", ", sizeof(subs) -
					strlen(subs) - 1);
			strncat(subs, name + len + 1, sizeof(subs) -
				strlen(subs) - 1);
		}
	}
	if (subs[0] != '\0') {
		if (argc >= 2)
			return usage_error(NULL, "%s %s: unknown command, "
					   "expected one of: %s", argv[0],
					   argv[1], subs);
		return usage_error(NULL, "%s: expected one of: %s", argv[0],
				   subs);
	}
	return usage_error(NULL, "unknown command '%s'", argv[0]);
}

int
main(int argc, char **argv)
{
	struct cli cli = {
		.prog = "lockstepctl",
		.timeout_ms = DEFAULT_TIMEOUT_MS,
	};
	const struct cli_cmd *cmd;
	int i, nwords, rc;

	for (i = 1; i < argc; i++) {
		bool matched;

		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return EX_OK;
		}
		if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			printf("lockstepctl %s\n", LS_VERSION);
			return EX_OK;
		}
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (argv[i][0] != '-')
			break;
		rc = parse_global(&cli, argc, argv, &i, &matched);
		if (rc != EX_OK)
			return rc;
		if (!matched)
			return usage_error(NULL, "unknown option '%s'",
					   argv[i]);
	}
	if (i >= argc)
		return usage_error(NULL, "no command given");

	cmd = find_cmd(argc - i, argv + i, &nwords);
	if (cmd == NULL)
		return unknown_command(argc - i, argv + i);
	rc = (cmd->fn ? cmd->fn : cmd_request)(&cli, cmd, argc - i - nwords,
						argv + i + nwords);
	free(cli.socks);
	return rc;
}
