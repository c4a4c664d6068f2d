/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl's internal header: the types the rooms of the tool share.
 *
 *   lockstepctl.c  the command table, --help, global options, main
 *   ctl_util.c     allocation, usage errors, cell formatting, tables, key: value
 *   talk.c         connecting, one request, reply errors, run_single()
 *   args.c         argument parsing and the table-driven request builder
 *   fmt_status.c   help, status, peers, sync and raw formatters
 *   fmt_paths.c    paths and path formatters
 *   fleet.c        the sockets of a fleet: -s, --fleet FILE, --dir
 *   mesh.c         mesh and watch across several daemons
 *   audit.c        audit: a fleet's readiness, item by item (audit_items.c judges)
 *   heatmap.c      the mesh in colour: terminal, SVG, HTML
 *   prom.c         the mesh of a fleet from Prometheus (mesh --prometheus)
 *
 * Nothing here is exported beyond the tool.
 */

#ifndef LOCKSTEPCTL_H
#define LOCKSTEPCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define DEFAULT_SOCKET_DIR "/run/lockstep"
#define DEFAULT_SOCKET DEFAULT_SOCKET_DIR "/lockstepd.sock"
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
	EX_AUDIT = 6,     /* audit: an item failed */
};

struct cli {
	const char *prog;
	char **socks;       /* every -s/--socket given, in order */
	size_t n_socks;
	bool json;
	int timeout_ms;
};

typedef int (*formatter)(const json_t *result);

/* How an argument's text becomes a value in the request. */
enum arg_kind {
	ARG_STR,        /* as given */
	ARG_UINT,       /* decimal up to optdef.max */
	ARG_WINDOW,     /* 1s, 10s or 60s */
	ARG_JSON,       /* a JSON value ({...}, [...], true, 1e9) sent as such */
	ARG_FLAG,       /* no value: sends true */
};

/* One option of a subcommand; all but ARG_FLAG take a value. Its request key
 * is the name without "--", '-' as '_' ("--max-bps" sends "max_bps"). */
struct optdef {
	const char *lname;  /* "--port" */
	enum arg_kind kind;
	unsigned long long max;
};

struct cli_cmd;
typedef int (*cli_fn)(struct cli *cli, const struct cli_cmd *cmd, int argc,
		      char **argv);

#define MAX_OPTS 16
#define MAX_POS 8

struct parsed {
	const char *val[MAX_OPTS]; /* NULL: not given; "" for flags */
	char *pos[MAX_POS];
	int npos;
};

/*
 * A subcommand. Most are one daemon request whose arguments map one to
 * one onto request keys: those leave @fn NULL and describe the request
 * (@dcmd, @pos, @opts, @fmt), and cmd_request() builds it, as ovs-appctl
 * leaves argument meaning to the server. @fn is for the few that do more.
 */
struct cli_cmd {
	const char *name;   /* one or two words: "peer add" */
	const char *args;   /* synopsis after the name */
	const char *help;
	cli_fn fn;          /* NULL: cmd_request() */
	const char *dcmd;   /* daemon command; NULL: the words joined by '.' */
	formatter fmt;      /* how to print its result */
	const char *pos[2]; /* request keys of the positionals, in order */
	int min_pos;        /* how many positionals are required */
	enum arg_kind pos_kind;
	const struct optdef *opts;
	/* extra check after parsing, before the request is built */
	int (*check)(const struct cli_cmd *cmd, const struct parsed *p);
};

/* ctl_util.c */
void die_oom(void) __attribute__((noreturn));
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool is_num(const json_t *j);
const char *f_str(const json_t *j);
const char *f_int(const json_t *j);
const char *f_us(const json_t *j);
const char *f_pct(const json_t *j);
const char *f_updown(const json_t *j);
const char *f_uptime(const json_t *j);
const char *get_s(const json_t *o, const char *key);


/* A table column read from one key of a JSON object. */
struct col {
	const char *hdr;
	const char *key;                        /* NULL: cells the caller adds */
	const char *(*fmt)(const json_t *j);    /* f_str, f_int, f_us, ... */
	char align;                             /* 'l' or 'r' */
};

/*
 * A table's columns written as one string, as ps -o takes them:
 * "[HEADER=]key[:type] ...". The header defaults to the key in capitals;
 * key "-" is a column the caller fills; type is s (text, left; the
 * default), r (text, right), n (integer), u (ns shown in µs), p (percent),
 * U (up/down), all right-aligned but s.
 */
#define MAX_COLS 24
struct cols {
	struct col c[MAX_COLS];
	size_t n;
	char buf[768];          /* the spec's words, split */
};
void cols_parse(struct cols *cs, const char *spec);

struct table {
	const struct col *cols; /* or NULL, and hdr/align below */
	size_t ncols;
	const char *const *hdr; /* NULL: no header line */
	const char *align;      /* per column: 'l' or 'r' */
	char **cells;           /* row-major, ncols per row */
	size_t n;               /* cells filled */
	size_t cap;
};

void tbl_init(struct table *t, size_t ncols, const char *const *hdr,
	      const char *align);
void tbl_init_cols(struct table *t, const struct col *cols, size_t ncols);
void tbl_cell(struct table *t, const char *text);
void tbl_row(struct table *t, const json_t *o, size_t from, size_t to);
void tbl_array(const json_t *arr, const char *spec, const char *indent);
void tbl_print(const struct table *t, const char *indent);
void tbl_free(struct table *t);
int print_kv(const json_t *result);

/* talk.c */
const char *default_socket(void);
int request_result(const struct cli *cli, const char *path, const char *cmd, json_t *args,
		   json_t **reply, json_t **res);
int request(const struct cli *cli, const char *path, const char *cmd,
	    json_t *args, json_t **reply);
void print_reply_error(const json_t *reply, const char *who);
void print_json(const json_t *j);
int run_single(struct cli *cli, const struct cli_cmd *cmd, const char *dcmd,
	       json_t *args, formatter fmt);

/* args.c */
int parse_global(struct cli *cli, int argc, char **argv, int *i,
		 bool *matched);
int parse_args(struct cli *cli, const struct cli_cmd *cmd, int argc,
	       char **argv, const struct optdef *defs, struct parsed *p,
	       int min_pos, int max_pos);
int parse_u64(const struct cli_cmd *cmd, const char *what, const char *s,
	      unsigned long long max, unsigned long long *out);
int check_window(const struct cli_cmd *cmd, const char *w);
int cmd_request(struct cli *cli, const struct cli_cmd *cmd, int argc,
		char **argv);
int cmd_call(struct cli *cli, const struct cli_cmd *cmd, int argc,
	     char **argv);

/* events.c */
int cmd_events(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv);
/* route.c */
int cmd_route(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv);

/* fmt_status.c */
int fmt_help(const json_t *result);
int fmt_status(const json_t *r);
int fmt_peers(const json_t *r);
int fmt_sync(const json_t *r);
int fmt_raw(const json_t *result);

/* fmt_bridge.c: the data path */
int fmt_flows(const json_t *r);
int fmt_slices(const json_t *r);
int fmt_cc(const json_t *r);

/* fmt_paths.c */
int fmt_paths(const json_t *r);
int fmt_path(const json_t *r);

/* fleet.c: every -s, the sockets in a fleet file, *.sock in dir (DEFAULT_DIR
 * when none of the three is given); each once */
int fleet_sockets(const struct cli *cli, const char *dir, const char *fleet, char ***out,
		  size_t *n_out);
/* A node's name when its daemon cannot tell: the socket's file name. */
char *sock_label(const char *path);

/* audit.c */
int cmd_audit(struct cli *cli, const struct cli_cmd *cmd, int argc, char **argv);

/* mesh.c */
int cmd_mesh(struct cli *cli, const struct cli_cmd *cmd, int argc,
	     char **argv);
int cmd_watch(struct cli *cli, const struct cli_cmd *cmd, int argc,
	      char **argv);

/* heatmap.c: a NODE x PEER matrix in colour (mesh.c fills it) */
enum hm_kind {
	HM_VALUE,       /* a number */
	HM_NONE,        /* "-": no data */
	HM_DOWN,        /* every path down */
	HM_UNREACH,     /* "?": the node did not answer */
};

struct hm_cell {
	enum hm_kind kind;
	double v;           /* µs, or % for loss */
	char text[32];      /* as printed */
};

struct heatmap {
	const char *title;  /* "rtt p50 µs, median over paths, window 10s" */
	const char *unit;   /* "µs" or "%" */
	bool loss;          /* scale from 0 */
	bool log;           /* hm_scale: log scale */
	size_t n_rows, n_cols;
	const char **rows, **cols;
	struct hm_cell *cells;   /* n_rows x n_cols, row-major */
	double lo, hi;      /* hm_scale: the colour scale's ends */
	const char **row_group, **col_group; /* a leaf (or any label) per row and
				 * column, NULL when unknown; NULL arrays: none.
				 * Rows and columns come sorted by group. */
};

void hm_scale(struct heatmap *h);
void hm_rgb(const struct heatmap *h, const struct hm_cell *c, uint8_t rgb[3]);
int hm_colour_mode(const struct cli_cmd *cmd, const char *v, bool *on);
void hm_print_colour(const struct heatmap *h, FILE *f);
int hm_write(const struct heatmap *h, const char *path, bool html);

#endif /* LOCKSTEPCTL_H */
