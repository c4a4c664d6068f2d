/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl: the operator's command line for lockstepd.
 *
 * It is deliberately thin: every subcommand builds one request, sends it
 * with ls_ctl_call() and formats the reply. All knowledge of what a
 * command does lives in the daemon; this file only knows argument syntax
 * and how to lay out each reply shape as a table (see docs/lockstepctl.md
 * and docs/control.md).
 *
 * Why it is built this way:
 *
 * - One table of subcommands (words, synopsis, description, handler), so
 *   --help is generated from the same data the dispatcher uses and cannot
 *   drift from it.
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

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ls_ctl.h"

#define DEFAULT_SOCKET "/run/lockstep/lockstepd.sock"
#define DEFAULT_DIR "/run/lockstep"
#define DEFAULT_TIMEOUT_MS 5000

/* Exit codes; keep in sync with usage() and docs/lockstepctl.md. */
enum {
	EX_OK = 0,        /* success */
	EX_REPLY = 1,     /* the daemon replied an error */
	EX_USAGE = 2,     /* bad command line */
	EX_NODAEMON = 3,  /* socket missing or connection refused */
	EX_PERM = 4,      /* permission denied on the socket */
	EX_PROTO = 5,     /* timeout, or a reply we cannot make sense of */
};

struct cli {
	const char *prog;
	char **socks;       /* every -s/--socket given, in order */
	size_t n_socks;
	bool json;
	int timeout_ms;
};

struct cli_cmd {
	const char *name;   /* one or two words: "peer add" */
	const char *args;   /* synopsis after the name */
	const char *help;
	int (*fn)(struct cli *cli, const struct cli_cmd *cmd, int argc,
		  char **argv);
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */
/* ------------------------------------------------------------------ */

static void
die_oom(void)
{
	fputs("lockstepctl: out of memory\n", stderr);
	exit(EX_PROTO);
}

static char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		die_oom();
	return p;
}

static char *
xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		die_oom();
	return s;
}

static int
usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "lockstepctl: MSG" and the synopsis of @cmd; returns EX_USAGE. */
static int
usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("lockstepctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd != NULL)
		fprintf(stderr, "usage: lockstepctl [options] %s%s%s\n",
			cmd->name, cmd->args[0] ? " " : "", cmd->args);
	else
		fputs("usage: lockstepctl [-s|--socket PATH] [--json] "
		      "[--timeout MS] COMMAND [ARGS...]\n"
		      "Try 'lockstepctl --help' for the list of commands.\n",
		      stderr);
	return EX_USAGE;
}

/*
 * Cell formatting. Values are formatted into a small ring of static
 * buffers so a table row can be built from several calls in one
 * expression; tbl_cell() copies the text straight away.
 */
static char *
ring(void)
{
	static char bufs[16][128];
	static unsigned int i;

	return bufs[i++ % 16];
}

static bool
is_num(const json_t *j)
{
	return json_is_integer(j) || json_is_real(j);
}

/* Any scalar as text; "-" for missing/null. */
static const char *
f_str(const json_t *j)
{
	char *b;

	if (j == NULL || json_is_null(j))
		return "-";
	if (json_is_string(j))
		return json_string_value(j);
	b = ring();
	if (json_is_integer(j))
		snprintf(b, 128, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
	else if (json_is_real(j))
		snprintf(b, 128, "%g", json_real_value(j));
	else if (json_is_boolean(j))
		snprintf(b, 128, "%s", json_is_true(j) ? "yes" : "no");
	else {
		char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

		snprintf(b, 128, "%s", s ? s : "?");
		free(s);
	}
	return b;
}

/* A count: integers as is, reals rounded. */
static const char *
f_int(const json_t *j)
{
	char *b;

	if (json_is_real(j)) {
		b = ring();
		snprintf(b, 128, "%.0f", json_real_value(j));
		return b;
	}
	return f_str(j);
}

/* Nanoseconds shown as microseconds with one decimal. */
static const char *
f_us(const json_t *j)
{
	char *b;

	if (!is_num(j))
		return "-";
	b = ring();
	snprintf(b, 128, "%.1f", json_number_value(j) / 1000.0);
	return b;
}

static const char *
f_pct(const json_t *j)
{
	char *b;

	if (!is_num(j))
		return "-";
	b = ring();
	snprintf(b, 128, "%.2f%%", json_number_value(j));
	return b;
}

static const char *
f_uptime(const json_t *j)
{
	long long s, d, h, m;
	char *b;

	if (!is_num(j))
		return "-";
	s = (long long)json_number_value(j);
	d = s / 86400;
	h = s / 3600 % 24;
	m = s / 60 % 60;
	b = ring();
	if (d > 0)
		snprintf(b, 128, "%lldd %lldh %lldm %llds", d, h, m, s % 60);
	else if (h > 0)
		snprintf(b, 128, "%lldh %lldm %llds", h, m, s % 60);
	else if (m > 0)
		snprintf(b, 128, "%lldm %llds", m, s % 60);
	else
		snprintf(b, 128, "%.1fs", json_number_value(j));
	return b;
}

static const char *
get_s(const json_t *o, const char *key)
{
	return f_str(json_object_get(o, key));
}

/* ------------------------------------------------------------------ */
/* Tables                                                             */
/* ------------------------------------------------------------------ */

struct table {
	size_t ncols;
	const char *const *hdr; /* NULL: no header line */
	const char *align;      /* per column: 'l' or 'r' */
	char **cells;           /* row-major, ncols per row */
	size_t n;               /* cells filled */
	size_t cap;
};

static void
tbl_init(struct table *t, size_t ncols, const char *const *hdr,
	 const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->hdr = hdr;
	t->align = align;
}

static void
tbl_cell(struct table *t, const char *text)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **p = realloc(t->cells, cap * sizeof(*p));

		if (p == NULL)
			die_oom();
		t->cells = p;
		t->cap = cap;
	}
	t->cells[t->n++] = xstrdup(text ? text : "-");
}

/* Terminal columns taken by a UTF-8 string ("µs" is 2, not 3). */
static size_t
width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static void
tbl_print(const struct table *t, const char *indent)
{
	size_t *w = calloc(t->ncols, sizeof(*w));
	size_t r, c, nrows = t->n / t->ncols;

	if (w == NULL)
		die_oom();
	for (c = 0; c < t->ncols; c++)
		if (t->hdr != NULL)
			w[c] = width(t->hdr[c]);
	for (r = 0; r < nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t cw = width(t->cells[r * t->ncols + c]);

			if (cw > w[c])
				w[c] = cw;
		}
	for (r = t->hdr ? 0 : 1; r <= nrows; r++) {
		fputs(indent, stdout);
		for (c = 0; c < t->ncols; c++) {
			const char *s = r == 0 ? t->hdr[c] :
					t->cells[(r - 1) * t->ncols + c];
			size_t pad = w[c] - width(s);
			bool last = c + 1 == t->ncols;

			if (t->align[c] == 'r')
				printf("%*s%s", (int)pad, "", s);
			else if (last)
				fputs(s, stdout);
			else
				printf("%s%*s", s, (int)pad, "");
			if (!last)
				fputs("  ", stdout);
		}
		fputc('\n', stdout);
	}
	free(w);
}

static void
tbl_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n = t->cap = 0;
}

/* ------------------------------------------------------------------ */
/* Generic key: value output                                          */
/* ------------------------------------------------------------------ */

static void
kv_collect(struct table *t, const char *prefix, const json_t *j)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)j, key, v) {
		char *name = prefix ? xasprintf("%s.%s", prefix, key) :
				      xstrdup(key);

		if (json_is_object(v) && json_object_size(v) > 0) {
			kv_collect(t, name, v);
		} else {
			char *k = xasprintf("%s:", name);

			tbl_cell(t, k);
			free(k);
			if (json_is_array(v) || json_is_object(v)) {
				char *s = json_dumps(v, JSON_COMPACT);

				tbl_cell(t, s ? s : "?");
				free(s);
			} else {
				tbl_cell(t, f_str(v));
			}
		}
		free(name);
	}
}

/* Objects as aligned "key: value" lines (nested keys dotted). */
static int
print_kv(const json_t *result)
{
	static const char align[] = "ll";
	struct table t;

	if (result == NULL || json_is_null(result))
		return EX_OK;
	if (!json_is_object(result)) {
		char *s = json_dumps(result, JSON_ENCODE_ANY | JSON_INDENT(2));

		puts(s ? s : "?");
		free(s);
		return EX_OK;
	}
	tbl_init(&t, 2, NULL, align);
	kv_collect(&t, NULL, result);
	tbl_print(&t, "");
	tbl_free(&t);
	return EX_OK;
}

/* ------------------------------------------------------------------ */
/* Talking to the daemon                                              */
/* ------------------------------------------------------------------ */

static const char *
default_socket(void)
{
	const char *env = getenv("LOCKSTEP_SOCKET");

	return env && env[0] ? env : DEFAULT_SOCKET;
}

/* Map a connect failure to a message and exit code. */
static int
connect_error(const char *path, int err)
{
	if (err == ENOENT || err == ECONNREFUSED) {
		fprintf(stderr, "lockstepctl: cannot connect to %s: daemon not "
			"running? (%s)\n", path, strerror(err));
		return EX_NODAEMON;
	}
	if (err == EACCES || err == EPERM) {
		fprintf(stderr, "lockstepctl: cannot connect to %s: permission "
			"denied (%s)\n", path, strerror(err));
		return EX_PERM;
	}
	fprintf(stderr, "lockstepctl: cannot connect to %s: %s\n", path,
		strerror(err));
	return EX_NODAEMON;
}

/*
 * Connect to @path, send one request, read its reply. Returns EX_OK with
 * *reply set when the daemon answered (whatever "ok" says), or the exit
 * code of the failure with the reason already printed. Steals @args.
 */
static int
request(const struct cli *cli, const char *path, const char *cmd,
	json_t *args, json_t **reply)
{
	int fd, rc;

	*reply = NULL;
	fd = ls_ctl_connect(path);
	if (fd < 0) {
		json_decref(args);
		return connect_error(path, -fd);
	}
	rc = ls_ctl_call(fd, cmd, args, cli->timeout_ms, reply);
	close(fd);
	json_decref(args);
	if (rc == 0)
		return EX_OK;
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "lockstepctl: %s: no reply within %d ms\n",
			path, cli->timeout_ms);
	else if (rc == -EBADMSG)
		fprintf(stderr, "lockstepctl: %s: malformed reply\n", path);
	else if (rc == -EACCES || rc == -EPERM)
		return connect_error(path, -rc);
	else
		fprintf(stderr, "lockstepctl: %s: no reply (%s)\n", path,
			strerror(-rc));
	return EX_PROTO;
}

static void
print_reply_error(const json_t *reply, const char *who)
{
	const json_t *err = json_object_get(reply, "error");
	const char *code = json_string_value(json_object_get(err, "code"));
	const char *msg = json_string_value(json_object_get(err, "message"));

	if (who != NULL)
		fprintf(stderr, "%s: ", who);
	fprintf(stderr, "error: %s: %s\n", code ? code : "unknown",
		msg ? msg : "");
}

static void
print_json(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

	if (s == NULL)
		die_oom();
	puts(s);
	free(s);
}

/* The one socket a single-daemon command talks to. */
static const char *
single_socket(const struct cli *cli, const struct cli_cmd *cmd)
{
	if (cli->n_socks > 1) {
		usage_error(cmd, "only mesh and watch take several sockets");
		return NULL;
	}
	return cli->n_socks == 1 ? cli->socks[0] : default_socket();
}

typedef int (*formatter)(const json_t *result);

/* One request to one daemon, formatted by @fmt. Steals @args. */
static int
run_single(struct cli *cli, const struct cli_cmd *cmd, const char *dcmd,
	   json_t *args, formatter fmt)
{
	const char *path = single_socket(cli, cmd);
	json_t *reply;
	int rc;

	if (path == NULL) {
		json_decref(args);
		return EX_USAGE;
	}
	rc = request(cli, path, dcmd, args, &reply);
	if (rc != EX_OK)
		return rc;
	if (cli->json)
		print_json(reply);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		print_reply_error(reply, NULL);
		rc = EX_REPLY;
	} else if (!cli->json) {
		rc = fmt(json_object_get(reply, "result"));
		if (rc == EX_PROTO)
			fprintf(stderr, "lockstepctl: %s: unexpected reply "
				"shape for %s\n", path, dcmd);
	}
	json_decref(reply);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Argument parsing                                                   */
/* ------------------------------------------------------------------ */

struct optdef {
	const char *lname;  /* "--port" */
	bool has_arg;
};

#define MAX_OPTS 8
#define MAX_POS 8

struct parsed {
	const char *val[MAX_OPTS]; /* NULL: not given; "" for flags */
	char *pos[MAX_POS];
	int npos;
};

/*
 * Parse a subcommand's arguments: options from @defs (as "--x V" or
 * "--x=V") mixed freely with positionals. -s/--socket, --json and
 * --timeout are accepted here too, so they may follow the command.
 */
static int parse_global(struct cli *cli, int argc, char **argv, int *i,
			bool *matched);

static int
parse_args(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv,
	   const struct optdef *defs, struct parsed *p, int min_pos,
	   int max_pos)
{
	bool only_pos = false;
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < argc; i++) {
		char *a = argv[i];
		bool matched = false;
		int k, rc;

		if (!only_pos && strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (only_pos || a[0] != '-' || a[1] == '\0') {
			if (p->npos >= max_pos || p->npos >= MAX_POS)
				return usage_error(cmd, "unexpected argument "
						   "'%s'", a);
			p->pos[p->npos++] = a;
			continue;
		}
		rc = parse_global(cli, argc, argv, &i, &matched);
		if (rc != EX_OK)
			return rc;
		if (matched)
			continue;
		for (k = 0; defs != NULL && defs[k].lname != NULL; k++) {
			size_t n = strlen(defs[k].lname);

			if (strncmp(a, defs[k].lname, n) != 0)
				continue;
			if (a[n] == '=' && defs[k].has_arg) {
				p->val[k] = a + n + 1;
			} else if (a[n] != '\0') {
				continue;
			} else if (defs[k].has_arg) {
				if (i + 1 >= argc)
					return usage_error(cmd, "%s needs a "
							   "value", a);
				p->val[k] = argv[++i];
			} else {
				p->val[k] = "";
			}
			matched = true;
			break;
		}
		if (!matched)
			return usage_error(cmd, "unknown option '%s'", a);
	}
	if (p->npos < min_pos)
		return usage_error(cmd, "missing argument");
	return EX_OK;
}

static int
parse_u64(const struct cli_cmd *cmd, const char *what, const char *s,
	  unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (s[0] == '-' || s[0] == '\0')
		return usage_error(cmd, "%s: '%s' is not a number", what, s);
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return usage_error(cmd, "%s: '%s' is not a number up to %llu",
				   what, s, max);
	*out = v;
	return EX_OK;
}

/* Add "key": integer from option text, if the option was given. */
static int
opt_int(const struct cli_cmd *cmd, json_t *args, const char *key,
	const char *opt, const char *val, unsigned long long max)
{
	unsigned long long v;
	int rc;

	if (val == NULL)
		return EX_OK;
	rc = parse_u64(cmd, opt, val, max, &v);
	if (rc != EX_OK)
		return rc;
	json_object_set_new(args, key, json_integer((json_int_t)v));
	return EX_OK;
}

static int
check_window(const struct cli_cmd *cmd, const char *w)
{
	if (w == NULL || strcmp(w, "1s") == 0 || strcmp(w, "10s") == 0 ||
	    strcmp(w, "60s") == 0)
		return EX_OK;
	return usage_error(cmd, "--window must be 1s, 10s or 60s");
}

/* ------------------------------------------------------------------ */
/* Formatters                                                         */
/* ------------------------------------------------------------------ */

static int
fmt_help(const json_t *result)
{
	static const char *const hdr[] = { "COMMAND", "ARGS", "DESCRIPTION" };
	struct table t;
	json_t *e;
	size_t i;

	if (!json_is_array(result))
		return EX_PROTO;
	tbl_init(&t, 3, hdr, "lll");
	json_array_foreach((json_t *)result, i, e) {
		tbl_cell(&t, get_s(e, "cmd"));
		tbl_cell(&t, get_s(e, "usage"));
		tbl_cell(&t, get_s(e, "help"));
	}
	tbl_print(&t, "");
	tbl_free(&t);
	return EX_OK;
}

static int
fmt_status(const json_t *r)
{
	static const char *const port_hdr[] = {
		"PORT", "DEV", "ID", "MAC", "IPV4", "IPV6", "LCORE", "LINK",
		"RX_PKTS", "TX_PKTS", "RX_MISSED" };
	const json_t *clock, *ports, *counters, *refl, *cap, *e;
	const char *key;
	struct table t;
	json_t *v;
	size_t i;

	if (!json_is_object(r))
		return EX_PROTO;

	tbl_init(&t, 2, NULL, "ll");
	tbl_cell(&t, "node:");
	{
		char *s = xasprintf("%s (id %s)", get_s(r, "node"),
				    get_s(r, "node_id"));

		tbl_cell(&t, s);
		free(s);
	}
	tbl_cell(&t, "version:");
	tbl_cell(&t, get_s(r, "version"));
	tbl_cell(&t, "uptime:");
	tbl_cell(&t, f_uptime(json_object_get(r, "uptime_s")));

	clock = json_object_get(r, "clock");
	if (json_is_object(clock)) {
		char *line = xstrdup(get_s(clock, "source"));

		/* Whatever else the clock reports, inline. */
		json_object_foreach((json_t *)clock, key, v) {
			char *n;

			if (strcmp(key, "source") == 0 || json_is_object(v) ||
			    json_is_array(v))
				continue;
			n = xasprintf("%s  %s=%s", line, key, f_str(v));
			free(line);
			line = n;
		}
		tbl_cell(&t, "clock:");
		tbl_cell(&t, line);
		free(line);
	}
	tbl_cell(&t, "peers:");
	tbl_cell(&t, get_s(r, "n_peers"));
	tbl_cell(&t, "paths:");
	tbl_cell(&t, get_s(r, "n_paths"));

	refl = json_object_get(r, "reflector");
	if (json_is_object(refl)) {
		char *s = xasprintf("reflected %s  rate_limited %s  sources %s",
				    get_s(refl, "reflected"),
				    get_s(refl, "rate_limited"),
				    get_s(refl, "sources"));

		tbl_cell(&t, "reflector:");
		tbl_cell(&t, s);
		free(s);
	}
	cap = json_object_get(r, "capture");
	if (json_is_object(cap)) {
		char *s;

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

	ports = json_object_get(r, "ports");
	if (json_is_array(ports) && json_array_size(ports) > 0) {
		printf("\nports:\n");
		tbl_init(&t, 11, port_hdr, "llrllllrrrr");
		json_array_foreach((json_t *)ports, i, e) {
			const json_t *up = json_object_get(e, "link_up");

			tbl_cell(&t, get_s(e, "name"));
			tbl_cell(&t, get_s(e, "dev"));
			tbl_cell(&t, get_s(e, "port_id"));
			tbl_cell(&t, get_s(e, "mac"));
			tbl_cell(&t, get_s(e, "ipv4"));
			tbl_cell(&t, get_s(e, "ipv6"));
			tbl_cell(&t, get_s(e, "lcore"));
			tbl_cell(&t, !json_is_boolean(up) ? "-" :
				     json_is_true(up) ? "up" : "down");
			tbl_cell(&t, f_int(json_object_get(e, "rx_pkts")));
			tbl_cell(&t, f_int(json_object_get(e, "tx_pkts")));
			tbl_cell(&t, f_int(json_object_get(e, "rx_missed")));
		}
		tbl_print(&t, "  ");
		tbl_free(&t);
	}

	counters = json_object_get(r, "counters");
	if (json_is_object(counters) && json_object_size(counters) > 0) {
		printf("\ncounters:\n");
		tbl_init(&t, 2, NULL, "lr");
		json_object_foreach((json_t *)counters, key, v) {
			tbl_cell(&t, key);
			tbl_cell(&t, f_int(v));
		}
		tbl_print(&t, "  ");
		tbl_free(&t);
	}
	return EX_OK;
}

static int
fmt_peers(const json_t *r)
{
	static const char *const hdr[] = {
		"PEER", "ADDR", "PORT", "PATHS", "INTERVAL_µs", "STATE", "MAC",
		"SENT", "RECEIVED", "LOST", "LOSS", "RTT_P50_µs" };
	struct table t;
	json_t *e;
	size_t i;

	if (!json_is_array(r))
		return EX_PROTO;
	tbl_init(&t, 12, hdr, "llrrrllrrrrr");
	json_array_foreach((json_t *)r, i, e) {
		tbl_cell(&t, get_s(e, "name"));
		tbl_cell(&t, get_s(e, "addr"));
		tbl_cell(&t, get_s(e, "port"));
		tbl_cell(&t, get_s(e, "paths"));
		tbl_cell(&t, f_int(json_object_get(e, "interval_us")));
		tbl_cell(&t, get_s(e, "state"));
		tbl_cell(&t, get_s(e, "mac"));
		tbl_cell(&t, f_int(json_object_get(e, "sent")));
		tbl_cell(&t, f_int(json_object_get(e, "received")));
		tbl_cell(&t, f_int(json_object_get(e, "lost")));
		tbl_cell(&t, f_pct(json_object_get(e, "loss_pct")));
		tbl_cell(&t, f_us(json_object_get(e, "rtt_p50_ns")));
	}
	tbl_print(&t, "");
	tbl_free(&t);
	return EX_OK;
}

static int
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

static int
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

/* "call": the result as indented JSON, since its shape is unknown. */
static int
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

/* ------------------------------------------------------------------ */
/* Single-daemon commands                                             */
/* ------------------------------------------------------------------ */

static int
cmd_help(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "help", NULL, fmt_help);
}

static int
cmd_status(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "status", NULL, fmt_status);
}

static int
cmd_peers(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "peers", NULL, fmt_peers);
}

static const struct optdef window_opts[] = {
	{ "--window", true },
	{ NULL, false },
};

static int
cmd_paths(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	json_t *args;
	int rc;

	rc = parse_args(cli, cmd, argc, argv, window_opts, &p, 0, 0);
	if (rc == EX_OK)
		rc = check_window(cmd, p.val[0]);
	if (rc != EX_OK)
		return rc;
	args = json_object();
	if (p.val[0] != NULL)
		json_object_set_new(args, "window", json_string(p.val[0]));
	return run_single(cli, cmd, "paths", args, fmt_paths);
}

static int
cmd_path(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	json_t *args;
	int rc;

	rc = parse_args(cli, cmd, argc, argv, window_opts, &p, 1, 1);
	if (rc == EX_OK)
		rc = check_window(cmd, p.val[0]);
	if (rc != EX_OK)
		return rc;
	args = json_pack("{s:s}", "peer", p.pos[0]);
	if (p.val[0] != NULL)
		json_object_set_new(args, "window", json_string(p.val[0]));
	return run_single(cli, cmd, "path", args, fmt_path);
}

static int
cmd_peer_add(struct cli *cli, const struct cli_cmd *cmd, int argc,
	     char **argv)
{
	static const struct optdef defs[] = {
		{ "--port", true },
		{ "--paths", true },
		{ "--interval-us", true },
		{ NULL, false },
	};
	struct parsed p;
	json_t *args;
	int rc;

	rc = parse_args(cli, cmd, argc, argv, defs, &p, 2, 2);
	if (rc != EX_OK)
		return rc;
	args = json_pack("{s:s, s:s}", "name", p.pos[0], "addr", p.pos[1]);
	if ((rc = opt_int(cmd, args, "port", "--port", p.val[0], 65535)) ||
	    (rc = opt_int(cmd, args, "paths", "--paths", p.val[1], 65535)) ||
	    (rc = opt_int(cmd, args, "interval_us", "--interval-us", p.val[2],
			  UINT32_MAX))) {
		json_decref(args);
		return rc;
	}
	return run_single(cli, cmd, "peer.add", args, print_kv);
}

static int
cmd_peer_del(struct cli *cli, const struct cli_cmd *cmd, int argc,
	     char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 1, 1);

	if (rc != EX_OK)
		return rc;
	return run_single(cli, cmd, "peer.del",
			  json_pack("{s:s}", "name", p.pos[0]), print_kv);
}

static int
cmd_probe_set(struct cli *cli, const struct cli_cmd *cmd, int argc,
	      char **argv)
{
	static const struct optdef defs[] = {
		{ "--peer", true },
		{ "--interval-us", true },
		{ "--paths", true },
		{ NULL, false },
	};
	struct parsed p;
	json_t *args;
	int rc;

	rc = parse_args(cli, cmd, argc, argv, defs, &p, 0, 0);
	if (rc != EX_OK)
		return rc;
	if (p.val[1] == NULL && p.val[2] == NULL)
		return usage_error(cmd, "nothing to set: give --interval-us "
				   "and/or --paths");
	args = json_object();
	if (p.val[0] != NULL)
		json_object_set_new(args, "peer", json_string(p.val[0]));
	if ((rc = opt_int(cmd, args, "interval_us", "--interval-us", p.val[1],
			  UINT32_MAX)) ||
	    (rc = opt_int(cmd, args, "paths", "--paths", p.val[2], 65535))) {
		json_decref(args);
		return rc;
	}
	return run_single(cli, cmd, "probe.set", args, print_kv);
}

static int
cmd_stats_reset(struct cli *cli, const struct cli_cmd *cmd, int argc,
		char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "stats.reset", NULL, print_kv);
}

static int
cmd_clock(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "clock", NULL, print_kv);
}

static double
num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "sync": the node's own mapping and bound, then one row per neighbour. */
static int
print_sync(const json_t *r)
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

static int
cmd_sync(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "sync", NULL, print_sync);
}

static int
cmd_log_level(struct cli *cli, const struct cli_cmd *cmd, int argc,
	      char **argv)
{
	struct parsed p;
	json_t *args;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 1);

	if (rc != EX_OK)
		return rc;
	args = json_object();
	if (p.npos == 1)
		json_object_set_new(args, "level", json_string(p.pos[0]));
	return run_single(cli, cmd, "log.level", args, print_kv);
}

static int
cmd_capture_start(struct cli *cli, const struct cli_cmd *cmd, int argc,
		  char **argv)
{
	static const struct optdef defs[] = {
		{ "--snaplen", true },
		{ "--max-bytes", true },
		{ NULL, false },
	};
	struct parsed p;
	json_t *args;
	char *file;
	int rc;

	rc = parse_args(cli, cmd, argc, argv, defs, &p, 1, 1);
	if (rc != EX_OK)
		return rc;
	/* The daemon has its own working directory: send absolute paths. */
	if (p.pos[0][0] != '/') {
		char cwd[PATH_MAX];

		if (getcwd(cwd, sizeof(cwd)) == NULL) {
			fprintf(stderr, "lockstepctl: getcwd: %s\n",
				strerror(errno));
			return EX_USAGE;
		}
		file = xasprintf("%s/%s", cwd, p.pos[0]);
	} else {
		file = xstrdup(p.pos[0]);
	}
	args = json_pack("{s:s}", "file", file);
	free(file);
	if ((rc = opt_int(cmd, args, "snaplen", "--snaplen", p.val[0],
			  UINT32_MAX)) ||
	    (rc = opt_int(cmd, args, "max_bytes", "--max-bytes", p.val[1],
			  (unsigned long long)INT64_MAX))) {
		json_decref(args);
		return rc;
	}
	return run_single(cli, cmd, "capture.start", args, print_kv);
}

static int
cmd_capture_stop(struct cli *cli, const struct cli_cmd *cmd, int argc,
		 char **argv)
{
	struct parsed p;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 0, 0);

	return rc ? rc : run_single(cli, cmd, "capture.stop", NULL, print_kv);
}

static int
cmd_call(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct parsed p;
	json_error_t jerr;
	json_t *args = NULL;
	int rc = parse_args(cli, cmd, argc, argv, NULL, &p, 1, 2);

	if (rc != EX_OK)
		return rc;
	if (p.npos == 2) {
		args = json_loads(p.pos[1], 0, &jerr);
		if (args == NULL)
			return usage_error(cmd, "JSON-ARGS: %s", jerr.text);
		if (!json_is_object(args)) {
			json_decref(args);
			return usage_error(cmd, "JSON-ARGS must be an object");
		}
	}
	return run_single(cli, cmd, p.pos[0], args, fmt_raw);
}

/* ------------------------------------------------------------------ */
/* mesh / watch                                                       */
/* ------------------------------------------------------------------ */

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
	{ "--metric", true },
	{ "--window", true },
	{ "--dir", true },
	{ "--interval", true },
	{ "--count", true },
	{ NULL, false },
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

static int
cmd_mesh(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct mesh_opts o;
	int rc = mesh_parse(cli, cmd, argc, argv, &o, false);

	return rc ? rc : mesh_once(cli, &o);
}

static int
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

/* ------------------------------------------------------------------ */
/* Command table, help, main                                          */
/* ------------------------------------------------------------------ */

static const struct cli_cmd commands[] = {
	{ "help", "", "list the daemon's control commands", cmd_help },
	{ "status", "", "node, clock, ports, counters", cmd_status },
	{ "peers", "", "configured peers with loss and RTT", cmd_peers },
	{ "paths", "[--window 1s|10s|60s]",
	  "every path to every peer", cmd_paths },
	{ "path", "PEER [--window W]",
	  "one peer's paths with full latency histograms", cmd_path },
	{ "peer add", "NAME ADDR [--port P] [--paths N] [--interval-us US]",
	  "add a peer to probe", cmd_peer_add },
	{ "peer del", "NAME", "remove a peer", cmd_peer_del },
	{ "probe set", "[--peer NAME] [--interval-us US] [--paths N]",
	  "change probing of one peer or all", cmd_probe_set },
	{ "stats reset", "", "zero counters and histograms", cmd_stats_reset },
	{ "clock", "", "clock source and its state", cmd_clock },
	{ "sync", "", "clock sync: fleet-time mapping, bound, every neighbour's "
	  "offset, drift, confidence", cmd_sync },
	{ "log level", "[LEVEL]", "show or set the log level", cmd_log_level },
	{ "capture start", "FILE [--snaplen N] [--max-bytes N]",
	  "start writing probe packets to a pcap file", cmd_capture_start },
	{ "capture stop", "", "stop the capture", cmd_capture_stop },
	{ "call", "CMD [JSON-ARGS]",
	  "send any daemon command, print the result", cmd_call },
	{ "mesh", "[--metric rtt|fwd|rev|loss] [--window W] [-s SOCK ...] "
	  "[--dir DIR]", "latency/loss matrix across several daemons",
	  cmd_mesh },
	{ "watch", "[mesh options] [--interval SEC] [--count N]",
	  "redraw the mesh every SEC seconds", cmd_watch },
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
		"  5  timeout, or a malformed reply\n", DEFAULT_DIR);
}

/*
 * Options valid anywhere: -s/--socket, --json, --timeout (and -h
 * before the command). *matched tells the caller whether argv[*i] was one.
 */
static int
parse_global(struct cli *cli, int argc, char **argv, int *i, bool *matched)
{
	char *a = argv[*i];
	const char *val = NULL;

	*matched = false;
	if (strcmp(a, "--json") == 0) {
		cli->json = true;
		*matched = true;
		return EX_OK;
	}
	if (strcmp(a, "-s") == 0 || strcmp(a, "--socket") == 0 ||
	    strcmp(a, "--timeout") == 0) {
		if (*i + 1 >= argc)
			return usage_error(NULL, "%s needs a value", a);
		val = argv[++*i];
	} else if (strncmp(a, "--socket=", 9) == 0 ||
		   strncmp(a, "--timeout=", 10) == 0) {
		val = strchr(a, '=') + 1;
	} else if (strncmp(a, "-s", 2) == 0) {
		val = a + 2;    /* -sPATH */
	} else {
		return EX_OK;
	}
	*matched = true;
	if (strncmp(a, "--timeout", 9) == 0) {
		unsigned long long ms;
		int rc = parse_u64(NULL, "--timeout", val, INT_MAX, &ms);

		if (rc != EX_OK)
			return rc;
		cli->timeout_ms = (int)ms;
		return EX_OK;
	}
	if (val[0] == '\0')
		return usage_error(NULL, "empty socket path");
	cli->socks = realloc(cli->socks, (cli->n_socks + 1) *
			     sizeof(*cli->socks));
	if (cli->socks == NULL)
		die_oom();
	cli->socks[cli->n_socks++] = (char *)val;
	return EX_OK;
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
	rc = cmd->fn(&cli, cmd, argc - i - nwords, argv + i + nwords);
	free(cli.socks);
	return rc;
}
