/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Argument parsing, and the request builder most subcommands use.
 *
 * A subcommand's table entry names the daemon command, the request key of
 * each positional and each option, and how the text is checked (number
 * with a bound, window, path). cmd_request() parses argv against that,
 * builds the request in table order and hands it to run_single(). This is
 * the ovs-appctl lesson: the client does not keep a second hand-written
 * parser per command; only the reply formatters are written by hand.
 */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lockstepctl.h"

/*
 * Options valid anywhere: -s/--socket, --json, --timeout (and -h
 * before the command). *matched tells the caller whether argv[*i] was one.
 */
int
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


/*
 * Parse a subcommand's arguments: options from @defs (as "--x V" or
 * "--x=V") mixed freely with positionals. -s/--socket, --json and
 * --timeout are accepted here too, so they may follow the command.
 */
int
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
		/* p->val has MAX_OPTS slots: a longer table would write past
		 * it (slice set's ten options did before MAX_OPTS was 16) */
		for (k = 0; defs != NULL && defs[k].lname != NULL && k < MAX_OPTS; k++) {
			size_t n = strlen(defs[k].lname);

			if (strncmp(a, defs[k].lname, n) != 0)
				continue;
			if (a[n] == '=' && defs[k].kind != ARG_FLAG) {
				p->val[k] = a + n + 1;
			} else if (a[n] != '\0') {
				continue;
			} else if (defs[k].kind == ARG_FLAG) {
				p->val[k] = "";
			} else {
				if (i + 1 >= argc)
					return usage_error(cmd, "%s needs a "
							   "value", a);
				p->val[k] = argv[++i];
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

int
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

int
check_window(const struct cli_cmd *cmd, const char *w)
{
	if (w == NULL || strcmp(w, "1s") == 0 || strcmp(w, "10s") == 0 ||
	    strcmp(w, "60s") == 0)
		return EX_OK;
	return usage_error(cmd, "--window must be 1s, 10s or 60s");
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

/*
 * Add one argument to the request. A required positional that is not
 * valid UTF-8 makes the whole request argument-less (*drop), as the
 * json_pack() the commands once used did.
 */
static int
add_arg(const struct cli_cmd *cmd, json_t *args, const char *key,
	const struct optdef *d, enum arg_kind kind, const char *val,
	bool *drop)
{
	int rc;

	switch (kind) {
	case ARG_UINT:
		return opt_int(cmd, args, key, d->lname, val, d->max);
	case ARG_FLAG:
		json_object_set_new(args, key, json_true());
		return EX_OK;
	case ARG_JSON: {
		json_t *v = json_loads(val, JSON_DECODE_ANY, NULL);

		if (v == NULL)
			return usage_error(cmd, "%s: not a JSON value: %s", d ? d->lname : key, val);
		json_object_set_new(args, key, v);
		return EX_OK;
	}
	case ARG_STR:
	case ARG_WINDOW:
	default:
		rc = json_object_set_new(args, key, json_string(val));
		*drop |= rc < 0 && d == NULL && cmd->min_pos > 0;
		return EX_OK;
	}
}

/* An option's request key: "--max-bps" → "max_bps". */
static const char *
opt_key(const struct optdef *d, char *buf, size_t len)
{
	size_t i;

	for (i = 0; d->lname[i + 2] != '\0' && i + 1 < len; i++)
		buf[i] = d->lname[i + 2] == '-' ? '_' : d->lname[i + 2];
	buf[i] = '\0';
	return buf;
}

/* Everything that can be checked before a request is built. */
static int
check_parsed(const struct cli_cmd *cmd, const struct parsed *p)
{
	int k, rc;

	for (k = 0; cmd->opts != NULL && cmd->opts[k].lname != NULL; k++)
		if (cmd->opts[k].kind == ARG_WINDOW) {
			rc = check_window(cmd, p->val[k]);
			if (rc != EX_OK)
				return rc;
		}
	return cmd->check != NULL ? cmd->check(cmd, p) : EX_OK;
}

/* The daemon command: .dcmd, or the words with '.' for ' ' ("peer add" is
 * "peer.add"), which is what most rows would spell out again. */
static const char *
daemon_cmd(const struct cli_cmd *cmd, char *buf, size_t len)
{
	if (cmd->dcmd != NULL)
		return cmd->dcmd;
	snprintf(buf, len, "%s", cmd->name);
	for (char *p = buf; *p; p++)
		if (*p == ' ')
			*p = '.';
	return buf;
}

/* A table-described subcommand: parse, build one request, print reply. */
int
cmd_request(struct cli *cli, const struct cli_cmd *cmd, int argc,
	    char **argv)
{
	int max_pos = (cmd->pos[0] != NULL) + (cmd->pos[1] != NULL);
	const struct optdef *d = cmd->opts;
	bool drop = false;
	struct parsed p;
	char key[64], dname[64];
	json_t *args;
	int k, rc;

	rc = parse_args(cli, cmd, argc, argv, d, &p, cmd->min_pos, max_pos);
	if (rc == EX_OK)
		rc = check_parsed(cmd, &p);
	if (rc != EX_OK)
		return rc;
	if (max_pos == 0 && d == NULL)
		return run_single(cli, cmd, daemon_cmd(cmd, dname, sizeof(dname)), NULL,
				  cmd->fmt);
	args = json_object();
	for (k = 0; rc == EX_OK && k < p.npos; k++)
		rc = add_arg(cmd, args, cmd->pos[k], NULL, cmd->pos_kind,
			     p.pos[k], &drop);
	for (k = 0; rc == EX_OK && d != NULL && d[k].lname != NULL; k++)
		if (p.val[k] != NULL)
			rc = add_arg(cmd, args, opt_key(&d[k], key, sizeof(key)), &d[k],
				     d[k].kind, p.val[k], &drop);
	if (rc != EX_OK || drop) {
		json_decref(args);
		args = NULL;
	}
	return rc ? rc : run_single(cli, cmd, daemon_cmd(cmd, dname, sizeof(dname)), args,
				    cmd->fmt);
}


int
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
