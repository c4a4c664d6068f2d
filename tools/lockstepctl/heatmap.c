/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The mesh as a picture: a NODE x PEER matrix coloured by value, on a
 * terminal (24-bit background colour, a legend under it) or as one
 * self-contained SVG or HTML file (no scripts, no fonts or links outside
 * it) that a person can open, attach to a ticket or serve from a
 * dashboard's static directory.
 *
 * Colour runs green (low) through yellow to red (high). Delays are scaled
 * between the matrix's own lowest and highest cell, on a log scale when
 * they span ten times or more (a 2 us same-leaf path and a 300 us
 * cross-pod one must not both come out green); loss from 0 to the highest
 * cell, at least 1%. DOWN, no data and no answer have colours of their own,
 * off the scale.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lockstepctl.h"

/* Gradient stops: green, yellow, red (ColorBrewer RdYlGn ends). */
static const uint8_t STOPS[3][3] = {{26, 152, 80}, {254, 224, 139}, {215, 48, 39}};
static const uint8_t C_DOWN[3] = {64, 64, 64};
static const uint8_t C_NONE[3] = {224, 224, 224};
static const uint8_t C_UNREACH[3] = {160, 160, 160};

void
hm_scale(struct heatmap *h)
{
	bool any = false;

	h->lo = INFINITY;
	h->hi = -INFINITY;
	for (size_t i = 0; i < h->n_rows * h->n_cols; i++)
		if (h->cells[i].kind == HM_VALUE) {
			h->lo = fmin(h->lo, h->cells[i].v);
			h->hi = fmax(h->hi, h->cells[i].v);
			any = true;
		}
	if (!any)
		h->lo = h->hi = 0;
	if (h->loss) {
		h->lo = 0;
		h->hi = fmax(h->hi, 1.0);
	}
	h->log = !h->loss && h->lo > 0 && h->hi >= 10 * h->lo;
}

/* Where v sits on the scale, 0..1. */
static double
position(const struct heatmap *h, double v)
{
	double t;

	if (!(h->hi > h->lo))
		return 0;
	t = h->log ? log(v / h->lo) / log(h->hi / h->lo) : (v - h->lo) / (h->hi - h->lo);
	return fmin(fmax(t, 0), 1);
}

static void
gradient(double t, uint8_t rgb[3])
{
	const uint8_t *a = t < 0.5 ? STOPS[0] : STOPS[1], *b = t < 0.5 ? STOPS[1] : STOPS[2];
	double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;

	for (int k = 0; k < 3; k++)
		rgb[k] = (uint8_t)lround(a[k] + (b[k] - a[k]) * u);
}

void
hm_rgb(const struct heatmap *h, const struct hm_cell *c, uint8_t rgb[3])
{
	const uint8_t *fixed = c->kind == HM_DOWN ? C_DOWN : c->kind == HM_NONE ? C_NONE :
			       c->kind == HM_UNREACH ? C_UNREACH : NULL;

	if (fixed != NULL)
		memcpy(rgb, fixed, 3);
	else
		gradient(position(h, c->v), rgb);
}

/* Black text on light cells, white on dark (ITU-R BT.601 luma). */
static bool
dark(const uint8_t rgb[3])
{
	return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] < 110;
}

/* The colour choice for a terminal: "auto" colours only a terminal that
 * can show it (not a pipe or file, NO_COLOR unset, TERM not dumb). */
int
hm_colour_mode(const struct cli_cmd *cmd, const char *v, bool *on)
{
	const char *term = getenv("TERM");

	if (v == NULL || strcmp(v, "auto") == 0)
		*on = isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL && term != NULL &&
		      strcmp(term, "dumb") != 0;
	else if (strcmp(v, "always") == 0)
		*on = true;
	else if (strcmp(v, "never") == 0)
		*on = false;
	else
		return usage_error(cmd, "--color must be auto, always or never");
	return EX_OK;
}

/* Display width of UTF-8 text (code points; names and units are narrow). */
static size_t
width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void
pad(FILE *f, const char *s, size_t w, bool right)
{
	size_t n = width(s);

	if (right)
		fprintf(f, "%*s%s", (int)(w > n ? w - n : 0), "", s);
	else
		fprintf(f, "%s%*s", s, (int)(w > n ? w - n : 0), "");
}

static void
swatch(FILE *f, const uint8_t rgb[3], const char *text)
{
	fprintf(f, "\033[48;2;%u;%u;%um\033[%sm %s \033[0m", rgb[0], rgb[1], rgb[2],
		dark(rgb) ? "97" : "30", text);
}

static void
fmt_value(const struct heatmap *h, double v, char *buf, size_t len)
{
	snprintf(buf, len, h->loss ? "%.2f%%" : "%.1f", v);
}

void
hm_print_colour(const struct heatmap *h, FILE *f)
{
	size_t *w = calloc(h->n_cols + 1, sizeof(*w));
	char lo[32], mid[32], hi[32];
	uint8_t rgb[3];

	if (w == NULL)
		die_oom();
	size_t gw = h->row_group ? width("GROUP") : 0;

	w[0] = width("NODE");
	for (size_t i = 0; i < h->n_rows; i++) {
		w[0] = w[0] > width(h->rows[i]) ? w[0] : width(h->rows[i]);
		if (h->row_group && h->row_group[i] && width(h->row_group[i]) > gw)
			gw = width(h->row_group[i]);
	}
	for (size_t j = 0; j < h->n_cols; j++) {
		w[j + 1] = width(h->cols[j]);
		for (size_t i = 0; i < h->n_rows; i++) {
			size_t n = width(h->cells[i * h->n_cols + j].text);

			w[j + 1] = w[j + 1] > n ? w[j + 1] : n;
		}
	}
	if (gw) {
		pad(f, "GROUP", gw, false);
		fputs("  ", f);
	}
	pad(f, "NODE", w[0], false);
	for (size_t j = 0; j < h->n_cols; j++) {
		fputs("  ", f);
		pad(f, h->cols[j], w[j + 1], true);
	}
	fputc('\n', f);
	for (size_t i = 0; i < h->n_rows; i++) {
		if (gw) {
			pad(f, h->row_group[i] ? h->row_group[i] : "-", gw, false);
			fputs("  ", f);
		}
		pad(f, h->rows[i], w[0], false);
		for (size_t j = 0; j < h->n_cols; j++) {
			const struct hm_cell *c = &h->cells[i * h->n_cols + j];

			hm_rgb(h, c, rgb);
			fprintf(f, " \033[48;2;%u;%u;%um\033[%sm ", rgb[0], rgb[1], rgb[2],
				dark(rgb) ? "97" : "30");
			pad(f, c->text, w[j + 1], true);
			fputs("\033[0m", f);
		}
		fputc('\n', f);
	}
	fmt_value(h, h->lo, lo, sizeof(lo));
	fmt_value(h, h->log ? sqrt(h->lo * h->hi) : (h->lo + h->hi) / 2, mid, sizeof(mid));
	fmt_value(h, h->hi, hi, sizeof(hi));
	fprintf(f, "\nscale (%s%s): ", h->unit, h->log ? ", log" : "");
	gradient(0, rgb);
	swatch(f, rgb, lo);
	gradient(0.5, rgb);
	swatch(f, rgb, mid);
	gradient(1, rgb);
	swatch(f, rgb, hi);
	fputs("   ", f);
	swatch(f, C_DOWN, "DOWN");
	fputc(' ', f);
	swatch(f, C_NONE, "- no data");
	fputc(' ', f);
	swatch(f, C_UNREACH, "? no answer");
	fputc('\n', f);
	free(w);
}

/* Text for XML character data and attribute values. */
static void
xml(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* control characters are not XML 1.0 */
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
}

#define CELL_W 78
#define CELL_H 30
#define CHAR_W 7.5   /* 12 px monospace, for sizing the label column */
#define TOP 64

static void
svg_cell(FILE *f, const struct heatmap *h, size_t i, size_t j, double x0)
{
	const struct hm_cell *c = &h->cells[i * h->n_cols + j];
	double x = x0 + (double)j * CELL_W, y = TOP + (double)(i + 1) * CELL_H;
	uint8_t rgb[3];

	hm_rgb(h, c, rgb);
	fprintf(f, "<g class=\"cell\"><title>");
	xml(f, h->rows[i]);
	fputs(" to ", f);
	xml(f, h->cols[j]);
	fputs(": ", f);
	xml(f, c->text);
	if (c->kind == HM_VALUE && !h->loss)
		fprintf(f, " %s", h->unit);
	fprintf(f, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
		"fill=\"#%02x%02x%02x\" stroke=\"#ffffff\" stroke-width=\"2\"/>"
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\">",
		x, y, CELL_W, CELL_H, rgb[0], rgb[1], rgb[2], x + CELL_W / 2.0,
		y + CELL_H / 2.0 + 4, dark(rgb) ? "#ffffff" : "#000000");
	xml(f, c->text);
	fputs("</text></g>\n", f);
}

static void
svg_legend(FILE *f, const struct heatmap *h, double x, double y)
{
	static const struct { const uint8_t *c; const char *t; } fixed[] = {
		{C_DOWN, "DOWN"}, {C_NONE, "no data"}, {C_UNREACH, "no answer"},
	};
	char lo[32], hi[32];

	fmt_value(h, h->lo, lo, sizeof(lo));
	fmt_value(h, h->hi, hi, sizeof(hi));
	fputs("<defs><linearGradient id=\"scale\">", f);
	for (int k = 0; k < 3; k++)
		fprintf(f, "<stop offset=\"%d%%\" stop-color=\"#%02x%02x%02x\"/>", k * 50,
			STOPS[k][0], STOPS[k][1], STOPS[k][2]);
	fputs("</linearGradient></defs>\n", f);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"200\" height=\"14\" fill=\"url(#scale)\"/>\n",
		x, y);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x, y + 28);
	xml(f, lo);
	fprintf(f, "</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", x + 200, y + 28);
	xml(f, hi);
	fprintf(f, " %s%s</text>\n", h->loss ? "" : h->unit, h->log ? " (log scale)" : "");
	for (size_t k = 0; k < sizeof(fixed) / sizeof(fixed[0]); k++)
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" "
			"fill=\"#%02x%02x%02x\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
			x + 230 + 95 * (double)k, y, fixed[k].c[0], fixed[k].c[1], fixed[k].c[2],
			x + 248 + 95 * (double)k, y + 12, fixed[k].t);
}

static bool
same_group(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Groups (leaves): a name on the first row and column of each, and a
 * dark line where one ends, so a leaf's block of the matrix stands out. */
static void
svg_groups(FILE *f, const struct heatmap *h, double x0)
{
	double y0 = TOP + CELL_H, x1 = x0 + (double)h->n_cols * CELL_W;
	double y1 = y0 + (double)h->n_rows * CELL_H;

	for (size_t i = 0; i < h->n_rows; i++) {
		if (i > 0 && same_group(h->row_group[i], h->row_group[i - 1]))
			continue;
		fprintf(f, "<text x=\"16\" y=\"%.1f\" fill=\"#555555\">",
			y0 + (double)i * CELL_H + CELL_H / 2.0 + 4);
		xml(f, h->row_group[i] ? h->row_group[i] : "?");
		fputs("</text>\n", f);
		if (i > 0)
			fprintf(f, "<line class=\"group\" x1=\"16\" y1=\"%.1f\" x2=\"%.1f\" "
				"y2=\"%.1f\" stroke=\"#222222\" stroke-width=\"3\"/>\n",
				y0 + (double)i * CELL_H, x1, y0 + (double)i * CELL_H);
	}
	for (size_t j = 0; j < h->n_cols; j++) {
		if (j > 0 && same_group(h->col_group[j], h->col_group[j - 1]))
			continue;
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\" font-size=\"10\">",
			x0 + (double)j * CELL_W + 3, TOP + 6.0);
		xml(f, h->col_group[j] ? h->col_group[j] : "?");
		fputs("</text>\n", f);
		if (j > 0)
			fprintf(f, "<line class=\"group\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				"y2=\"%.1f\" stroke=\"#222222\" stroke-width=\"3\"/>\n",
				x0 + (double)j * CELL_W, TOP - 6.0, x0 + (double)j * CELL_W, y1);
	}
}

static void
svg_body(FILE *f, const struct heatmap *h)
{
	size_t lw = width("NODE"), gw = 0;
	double x0, wdt, hgt;

	for (size_t i = 0; i < h->n_rows; i++) {
		lw = lw > width(h->rows[i]) ? lw : width(h->rows[i]);
		if (h->row_group && h->row_group[i] && width(h->row_group[i]) > gw)
			gw = width(h->row_group[i]);
	}
	if (h->row_group && gw == 0)
		gw = 1;
	x0 = 16 + (double)(lw + (gw ? gw + 2 : 0)) * CHAR_W + 12;
	wdt = fmax(x0 + (double)h->n_cols * CELL_W + 16, 560);
	hgt = TOP + (double)(h->n_rows + 1) * CELL_H + 70;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans Mono, monospace\" "
		"font-size=\"12\">\n", wdt, hgt, wdt, hgt);
	fprintf(f, "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", wdt, hgt);
	fputs("<text x=\"16\" y=\"26\" font-size=\"15\" font-weight=\"bold\">", f);
	xml(f, h->title);
	fputs("</text>\n<text x=\"16\" y=\"46\" fill=\"#555555\">rows: the node that "
	      "measures; columns: its peer</text>\n", f);
	for (size_t j = 0; j < h->n_cols; j++) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
			"font-weight=\"bold\">", x0 + (double)j * CELL_W + CELL_W / 2.0,
			TOP + CELL_H / 2.0 + 4);
		xml(f, h->cols[j]);
		fputs("</text>\n", f);
	}
	for (size_t i = 0; i < h->n_rows; i++) {
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">",
			16 + (double)(gw ? gw + 2 : 0) * CHAR_W,
			TOP + (double)(i + 1) * CELL_H + CELL_H / 2.0 + 4);
		xml(f, h->rows[i]);
		fputs("</text>\n", f);
		for (size_t j = 0; j < h->n_cols; j++)
			svg_cell(f, h, i, j, x0);
	}
	if (h->row_group != NULL)
		svg_groups(f, h, x0);
	svg_legend(f, h, 16, TOP + (double)(h->n_rows + 1) * CELL_H + 24);
	fputs("</svg>\n", f);
}

/* Written to a temporary file and renamed over path, so a reader (a
 * dashboard, watch --svg's consumer) never sees half a picture. */
int
hm_write(const struct heatmap *h, const char *path, bool html)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	int err;

	if (f == NULL) {
		err = errno;
		fprintf(stderr, "lockstepctl: cannot write %s: %s\n", tmp, strerror(err));
		free(tmp);
		return EX_USAGE;
	}
	if (html) {
		fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", f);
		xml(f, h->title);
		fputs("</title></head>\n<body style=\"margin:0;background:#ffffff\">\n", f);
	} else {
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	}
	svg_body(f, h);
	if (html)
		fputs("</body></html>\n", f);
	err = ferror(f) ? EIO : 0;
	if (fclose(f) != 0 && err == 0)
		err = errno;
	if (err == 0 && rename(tmp, path) != 0)
		err = errno;
	if (err != 0) {
		fprintf(stderr, "lockstepctl: cannot write %s: %s\n", path, strerror(err));
		unlink(tmp);
	}
	free(tmp);
	return err == 0 ? EX_OK : EX_USAGE;
}
