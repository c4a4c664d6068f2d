/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl helpers: allocation that cannot fail, usage errors, and the
 * output side of every formatter: scalar cells, aligned tables and the
 * generic "key: value" layout. Column widths are computed from the
 * content, so a table never needs to know its data in advance.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lockstepctl.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */
/* ------------------------------------------------------------------ */

void
die_oom(void)
{
	fputs("lockstepctl: out of memory\n", stderr);
	exit(EX_PROTO);
}

char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		die_oom();
	return p;
}

char *
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

/* Print "lockstepctl: MSG" and the synopsis of @cmd; returns EX_USAGE. */
int
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

bool
is_num(const json_t *j)
{
	return json_is_integer(j) || json_is_real(j);
}

/* Any scalar as text; "-" for missing/null. */
const char *
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
const char *
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

/* A number divided by div, as fmt says; "-" when not a number. */
static const char *
f_real(const json_t *j, const char *fmt, double div)
{
	char *b;

	if (!is_num(j))
		return "-";
	b = ring();
	snprintf(b, 128, fmt, json_number_value(j) / div);
	return b;
}

/* Nanoseconds shown as microseconds with one decimal. */
const char *
f_us(const json_t *j)
{
	return f_real(j, "%.1f", 1000.0);
}

const char *
f_pct(const json_t *j)
{
	return f_real(j, "%.2f%%", 1.0);
}

/* A boolean as up/down; "-" when not a boolean. */
const char *
f_updown(const json_t *j)
{
	return !json_is_boolean(j) ? "-" : json_is_true(j) ? "up" : "down";
}

const char *
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

const char *
get_s(const json_t *o, const char *key)
{
	return f_str(json_object_get(o, key));
}

/* ------------------------------------------------------------------ */
/* Tables                                                             */
/* ------------------------------------------------------------------ */

void
tbl_init(struct table *t, size_t ncols, const char *const *hdr,
	 const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->hdr = hdr;
	t->align = align;
}

/* A table whose columns, headers and alignment come from @cols. */
void
tbl_init_cols(struct table *t, const struct col *cols, size_t ncols)
{
	tbl_init(t, ncols, NULL, NULL);
	t->cols = cols;
}

/* Cells [from, to) of a row: each column's key of @o, formatted. */
void
tbl_row(struct table *t, const json_t *o, size_t from, size_t to)
{
	for (size_t c = from; c < to; c++)
		tbl_cell(t, t->cols[c].fmt(json_object_get(o, t->cols[c].key)));
}

static const struct {
	char type;
	const char *(*fmt)(const json_t *j);
} col_types[] = {
	{ 's', f_str }, { 'r', f_str }, { 'n', f_int }, { 'u', f_us },
	{ 'p', f_pct }, { 'U', f_updown },
};

static void
cut_at(char *s, char ch)
{
	char *p = strchr(s, ch);

	if (p != NULL)
		*p = '\0';
}

/* One word of a column spec (struct cols) into c. w and k are two copies of
 * the word: without "HEADER=", w becomes the header (capitals), k the key. */
static void
col_parse(struct col *c, char *w, char *k)
{
	char *eq = strchr(w, '='), *colon = strchr(w, ':');
	char type = colon != NULL ? colon[1] : 's';

	if (eq != NULL) {
		*eq = '\0';
		k = eq + 1;
	}
	cut_at(w, ':');
	cut_at(k, ':');
	if (eq == NULL)
		for (char *p = w; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
	c->hdr = w;
	c->key = strcmp(k, "-") == 0 ? NULL : k;
	c->align = type == 's' ? 'l' : 'r';
	c->fmt = NULL;
	for (size_t i = 0; i < sizeof(col_types) / sizeof(col_types[0]); i++)
		if (col_types[i].type == type)
			c->fmt = col_types[i].fmt;
	if (c->fmt == NULL) {
		fprintf(stderr, "lockstepctl: bug: column type '%c' in \"%s\"\n", type, k);
		abort();
	}
}

/* The specs are this program's own constants: a bad one is a bug. */
void
cols_parse(struct cols *cs, const char *spec)
{
	size_t len = strlen(spec), off = 0;

	if (2 * len + 2 > sizeof(cs->buf)) {
		fprintf(stderr, "lockstepctl: bug: column spec too long\n");
		abort();
	}
	memcpy(cs->buf, spec, len + 1);
	memcpy(cs->buf + len + 1, spec, len + 1);
	cs->n = 0;
	while (off < len) {
		size_t wl = strcspn(cs->buf + off, " ");

		if (wl > 0) {
			if (cs->n == MAX_COLS) {
				fprintf(stderr, "lockstepctl: bug: over %d columns\n", MAX_COLS);
				abort();
			}
			cs->buf[off + wl] = '\0';
			cs->buf[len + 1 + off + wl] = '\0';
			col_parse(&cs->c[cs->n++], cs->buf + off, cs->buf + len + 1 + off);
		}
		off += wl + 1;
	}
}

/* An array of objects as a table, one row each; spec as in struct cols. */
void
tbl_array(const json_t *arr, const char *spec, const char *indent)
{
	struct cols cs;
	struct table t;
	json_t *e;
	size_t i;

	cols_parse(&cs, spec);
	tbl_init_cols(&t, cs.c, cs.n);
	json_array_foreach((json_t *)arr, i, e)
		tbl_row(&t, e, 0, cs.n);
	tbl_print(&t, indent);
	tbl_free(&t);
}

static const char *
hdr_at(const struct table *t, size_t c)
{
	return t->cols != NULL ? t->cols[c].hdr : t->hdr[c];
}

void
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

void
tbl_print(const struct table *t, const char *indent)
{
	size_t *w = calloc(t->ncols, sizeof(*w));
	size_t r, c, nrows = t->n / t->ncols;
	bool has_hdr = t->hdr != NULL || t->cols != NULL;

	if (w == NULL)
		die_oom();
	for (c = 0; c < t->ncols; c++)
		if (has_hdr)
			w[c] = width(hdr_at(t, c));
	for (r = 0; r < nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			size_t cw = width(t->cells[r * t->ncols + c]);

			if (cw > w[c])
				w[c] = cw;
		}
	for (r = has_hdr ? 0 : 1; r <= nrows; r++) {
		fputs(indent, stdout);
		for (c = 0; c < t->ncols; c++) {
			const char *s = r == 0 ? hdr_at(t, c) :
					t->cells[(r - 1) * t->ncols + c];
			size_t pad = w[c] - width(s);
			bool last = c + 1 == t->ncols;

			char align = t->cols ? t->cols[c].align : t->align[c];

			if (align == 'r')
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

void
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
int
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
