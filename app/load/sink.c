/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's sink accounting (lld_sink.h has the definitions).
 *
 * Windows are closed lazily: a flow's window k is finished when the flow's
 * next frame falls in a later window, so a frame costs O(1) whatever the
 * number of flows, and no timer walks 100k flows every 100 ms. Windows a
 * flow skipped entirely are complete windows of zero bytes, added in one
 * step. Only frames that arrive between the origin and the end are
 * measured, so a window closed on arrival always ended before the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_hist.h"
#include "lld_sink.h"

/* The measured part of a run (after --settle-ms): its span is from the
 * first measured arrival to the last, its bytes those after the first, so
 * bytes / span is the rate whatever the frame size. */
struct meas {
	uint64_t first, last, bytes, payload;
	uint8_t any;
};

static void
meas_add(struct meas *m, uint32_t len, uint32_t payload, uint64_t now)
{
	if (!m->any) {
		m->any = 1;
		m->first = now;
	} else {
		m->bytes += len;
		m->payload += payload;
	}
	m->last = now;
}

struct flow_st {
	uint64_t pkts, bytes, payload;
	uint64_t max_seq, seen;         /* bit i: max_seq - i arrived */
	uint64_t lost, reordered, dups, old;
	uint64_t first, last;           /* TSC of the first and last arrival */
	uint64_t *gap;                  /* [n_gaps] the longest times between two
					 * arrivals, longest first */
	uint64_t *gap_end;              /* [n_gaps] TSC of the arrival that ended each */
	struct meas m;                  /* the measured part */
	int64_t win;                    /* open window, -1 none */
	uint64_t w_bytes, w_span, w_first, w_last;
	uint32_t w_pkts;
	uint32_t windows, span_windows;
	uint64_t w_min, w_max, w_sum;   /* bytes per complete window */
	double s_min, s_max;            /* span rates, bits/s */
	uint64_t owd_n;
	int64_t owd_min, owd_max;
	double owd_sum;                 /* ns */
	uint8_t any, partial;           /* partial: the open window is the flow's first */
};

/* A gap of g ticks ended at now: into the flow's longest, kept in order. */
static void
gap_note(struct flow_st *f, unsigned int n_gaps, uint64_t g, uint64_t now)
{
	unsigned int k = n_gaps - 1;

	for (; k > 0 && f->gap[k - 1] < g; k--) {
		f->gap[k] = f->gap[k - 1];
		f->gap_end[k] = f->gap_end[k - 1];
	}
	f->gap[k] = g;
	f->gap_end[k] = now;
}

/* One window across flows: extremes of the flows' complete windows in it. */
struct win_x {
	uint64_t min_bytes, max_bytes;
	double span_min, span_max;      /* bits/s */
	uint32_t n, span_n;             /* flows with a complete window, with a span */
};

struct lld_sink {
	struct lld_sink_params p;
	struct flow_st *flows;
	uint64_t *gaps;                 /* every flow's gap and gap_end arrays */
	uint64_t *w_bytes;              /* aggregate windows */
	uint32_t *w_pkts;
	struct win_x *wx;
	uint64_t *detail;               /* detail_flows x n_windows bytes */
	uint64_t ns_mult;               /* ns per tick, 32.32 */
	uint64_t origin, end;           /* TSC; origin 0 until the first frame */
	uint64_t first, last;
	uint64_t pkts, bytes, other, unknown;
	struct meas m;
	uint32_t flows_seen, k_end;
	uint8_t any, end_set;
	struct ls_hist owd;
	struct ls_hist fg_owd;          /* foreground flows, measured span only */
};

struct lld_sink *
lld_sink_create(const struct lld_sink_params *p)
{
	struct lld_sink *s;

	if (p == NULL || p->n_flows == 0 || p->hz == 0 || p->window == 0 || p->n_windows == 0 ||
	    p->detail_flows > p->n_flows || p->n_gaps > LLD_SINK_GAPS_MAX) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->p = *p;
	if (s->p.n_gaps == 0)
		s->p.n_gaps = LLD_SINK_GAPS;
	s->flows = calloc(p->n_flows, sizeof(*s->flows));
	s->gaps = calloc((size_t)p->n_flows * s->p.n_gaps * 2, sizeof(*s->gaps));
	s->w_bytes = calloc(p->n_windows, sizeof(*s->w_bytes));
	s->w_pkts = calloc(p->n_windows, sizeof(*s->w_pkts));
	s->wx = calloc(p->n_windows, sizeof(*s->wx));
	s->detail = calloc((size_t)p->detail_flows * p->n_windows + 1, sizeof(*s->detail));
	if (s->flows == NULL || s->w_bytes == NULL || s->w_pkts == NULL || s->wx == NULL ||
	    s->detail == NULL || s->gaps == NULL) {
		lld_sink_free(s);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < p->n_flows; i++) {
		s->flows[i].win = -1;
		s->flows[i].gap = &s->gaps[(size_t)i * s->p.n_gaps * 2];
		s->flows[i].gap_end = s->flows[i].gap + s->p.n_gaps;
	}
	s->ns_mult = (uint64_t)(((unsigned __int128)1000000000ULL << 32) / p->hz);
	s->end = UINT64_MAX;
	return s;
}

void
lld_sink_free(struct lld_sink *s)
{
	if (s == NULL)
		return;
	free(s->flows);
	free(s->gaps);
	free(s->w_bytes);
	free(s->w_pkts);
	free(s->wx);
	free(s->detail);
	free(s);
}

void
lld_sink_other(struct lld_sink *s)
{
	s->other++;
}

/* Sequence accounting; returns 1 for a duplicate. */
static int
seq_account(struct flow_st *f, uint64_t q)
{
	uint64_t d;

	if (!f->any) {
		f->any = 1;
		f->max_seq = q;
		f->seen = 1;
		f->lost = q;                    /* numbers start at 0 */
		return 0;
	}
	if (q > f->max_seq) {
		d = q - f->max_seq;
		f->lost += d - 1;
		f->seen = d >= 64 ? 1 : f->seen << d | 1;
		f->max_seq = q;
		return 0;
	}
	d = f->max_seq - q;
	if (d >= 64) {
		/* too old to tell from a duplicate: taken as a late arrival */
		f->old++;
		f->reordered++;
		f->lost -= f->lost > 0;
		return 0;
	}
	if (f->seen >> d & 1) {
		f->dups++;
		return 1;
	}
	f->seen |= 1ULL << d;
	f->reordered++;
	f->lost--;
	return 0;
}

/* Window k's extremes across flows: a flow's complete window in it. */
static void
wx_add(struct lld_sink *s, uint64_t k, uint64_t bytes, double span)
{
	struct win_x *x;

	if (k >= s->p.n_windows)
		return;
	x = &s->wx[k];
	x->min_bytes = x->n == 0 || bytes < x->min_bytes ? bytes : x->min_bytes;
	x->max_bytes = bytes > x->max_bytes ? bytes : x->max_bytes;
	x->n++;
	if (span > 0) {
		x->span_min = x->span_n == 0 || span < x->span_min ? span : x->span_min;
		x->span_max = span > x->span_max ? span : x->span_max;
		x->span_n++;
	}
}

/* Close flow f's open window as complete, and gap empty ones after it. */
static void
win_close(struct lld_sink *s, struct flow_st *f, uint64_t gap)
{
	uint64_t k = (uint64_t)f->win;

	if (!f->partial) {
		double r = 0;

		f->windows++;
		f->w_sum += f->w_bytes;
		f->w_min = f->windows == 1 || f->w_bytes < f->w_min ? f->w_bytes : f->w_min;
		f->w_max = f->w_bytes > f->w_max ? f->w_bytes : f->w_max;
		if (f->w_pkts >= 2 && f->w_last > f->w_first) {
			r = (double)f->w_span * 8 * (double)s->p.hz / (double)(f->w_last - f->w_first);
			f->s_min = f->span_windows == 0 || r < f->s_min ? r : f->s_min;
			f->s_max = r > f->s_max ? r : f->s_max;
			f->span_windows++;
		}
		wx_add(s, k, f->w_bytes, r);
	}
	if (gap > 0) {
		/* windows without a frame: zero bytes each, no span rate */
		f->windows += (uint32_t)gap;
		f->w_min = 0;
		if (f->windows == gap)
			f->w_max = 0;
		for (uint64_t j = k + 1; j <= k + gap && j < s->p.n_windows; j++)
			wx_add(s, j, 0, 0);
	}
	f->partial = 0;
}

/* A measured frame of flow f (index i) in window k. */
static void
measure(struct lld_sink *s, struct flow_st *f, uint32_t i, uint32_t len,
	uint32_t payload, uint64_t now)
{
	uint64_t k = (now - s->origin) / s->p.window;

	meas_add(&f->m, len, payload, now);
	if (f->win < 0 || k > (uint64_t)f->win) {
		if (f->win >= 0)
			win_close(s, f, k - (uint64_t)f->win - 1);
		else   /* the flow began inside this window: it is partial */
			f->partial = f->first > s->origin + k * s->p.window;
		f->win = (int64_t)k;
		f->w_bytes = f->w_span = 0;
		f->w_pkts = 0;
		f->w_first = now;
	}
	f->w_bytes += len;
	if (f->w_pkts++ > 0)
		f->w_span += len;
	f->w_last = now;
	if (k < s->p.n_windows) {
		s->w_bytes[k] += len;
		s->w_pkts[k]++;
		if (i < s->p.detail_flows)
			s->detail[(uint64_t)i * s->p.n_windows + k] += len;
	}
	meas_add(&s->m, len, payload, now);
}

int
lld_sink_frame(struct lld_sink *s, const struct lld_rx *r, uint32_t frame_len, uint64_t now)
{
	struct flow_st *f;
	uint32_t payload;
	int dup;

	if (r->flow >= s->p.n_flows) {
		s->unknown++;
		return 0;
	}
	f = &s->flows[r->flow];
	if (!s->any) {
		s->any = 1;
		s->first = now;
		s->origin = now + s->p.settle;
	}
	s->last = now;
	s->pkts++;
	s->bytes += frame_len;
	if (!f->any) {
		s->flows_seen++;
		f->first = now;
	} else if (now - f->last > f->gap[s->p.n_gaps - 1]) {
		gap_note(f, s->p.n_gaps, now - f->last, now);
	}
	f->last = now;
	f->pkts++;
	f->bytes += frame_len;
	dup = seq_account(f, r->seq);
	payload = dup ? 0 : r->payload_len;
	f->payload += payload;
	if (r->tag == s->p.tag) {
		int64_t d = (int64_t)(now - r->tx_tsc);
		int64_t ns = d >= 0 ? (int64_t)(((unsigned __int128)d * s->ns_mult) >> 32)
				    : -(int64_t)(((unsigned __int128)-d * s->ns_mult) >> 32);

		ls_hist_add(&s->owd, ns);
		f->owd_min = f->owd_n == 0 || ns < f->owd_min ? ns : f->owd_min;
		f->owd_max = f->owd_n == 0 || ns > f->owd_max ? ns : f->owd_max;
		f->owd_sum += (double)ns;
		f->owd_n++;
		if (r->flow < s->p.fg_flows && now >= s->origin && now < s->end)
			ls_hist_add(&s->fg_owd, ns);
	}
	if (now >= s->origin && now < s->end)
		measure(s, f, r->flow, frame_len, payload, now);
	return !dup;
}

void
lld_sink_set_end(struct lld_sink *s, uint64_t end)
{
	s->end = end;
	s->end_set = 1;
}

void
lld_sink_finish(struct lld_sink *s)
{
	uint64_t end = s->end_set ? s->end : s->last + 1;

	s->k_end = 0;
	if (s->any && end > s->origin) {
		uint64_t k = (end - s->origin) / s->p.window;

		s->k_end = (uint32_t)(k < s->p.n_windows ? k : s->p.n_windows);
	}
}

static double
rate_of(uint64_t bytes, uint64_t span, uint64_t hz)
{
	return span == 0 ? 0.0 : (double)bytes * 8 * (double)hz / (double)span;
}

int
lld_sink_flow(const struct lld_sink *s, uint32_t i, struct lld_sink_result *o)
{
	const struct flow_st *f;
	double w = (double)s->p.window / (double)s->p.hz;

	if (i >= s->p.n_flows)
		return -EINVAL;
	f = &s->flows[i];
	memset(o, 0, sizeof(*o));
	o->pkts = f->pkts;
	o->bytes = f->bytes;
	o->payload_bytes = f->payload;
	o->lost = f->lost;
	o->reordered = f->reordered;
	o->dups = f->dups;
	o->old = f->old;
	o->max_seq = f->max_seq;
	o->first = f->any ? f->first - s->p.start : 0;
	o->last = f->any ? f->last - s->p.start : 0;
	for (unsigned int k = 0; k < LLD_SINK_GAPS_MAX; k++) {
		o->gap[k] = k < s->p.n_gaps ? f->gap[k] : 0;
		o->gap_end[k] = o->gap[k] ? f->gap_end[k] - s->p.start : 0;
	}
	o->rate_bps = rate_of(f->m.bytes, f->m.last - f->m.first, s->p.hz);
	o->goodput_bps = rate_of(f->m.payload, f->m.last - f->m.first, s->p.hz);
	o->windows = f->windows;
	if (f->windows > 0) {
		o->win_min_bps = (double)f->w_min * 8 / w;
		o->win_max_bps = (double)f->w_max * 8 / w;
		o->win_mean_bps = (double)f->w_sum * 8 / w / f->windows;
	}
	o->span_windows = f->span_windows;
	o->span_min_bps = f->s_min;
	o->span_max_bps = f->s_max;
	o->owd_n = f->owd_n;
	if (f->owd_n > 0) {
		o->owd_min_ns = (double)f->owd_min;
		o->owd_max_ns = (double)f->owd_max;
		o->owd_mean_ns = f->owd_sum / (double)f->owd_n;
	}
	return 0;
}

uint32_t
lld_sink_windows(const struct lld_sink *s, const uint64_t **bytes, const uint32_t **pkts)
{
	if (bytes != NULL)
		*bytes = s->w_bytes;
	if (pkts != NULL)
		*pkts = s->w_pkts;
	return s->k_end;
}

/* ---- report ---------------------------------------------------------- */

static double
secs(const struct lld_sink *s, uint64_t tsc)
{
	return tsc < s->p.start ? 0.0 : (double)(tsc - s->p.start) / (double)s->p.hz;
}

/* [[length us, end s from start], ...], longest first */
static json_t *
gaps_json(const struct lld_sink *s, const struct lld_sink_result *r)
{
	json_t *a = json_array();

	for (unsigned int k = 0; k < s->p.n_gaps && r->gap[k] != 0; k++)
		json_array_append_new(a, json_pack("[ff]", (double)r->gap[k] * 1e6 / (double)s->p.hz,
						   (double)r->gap_end[k] / (double)s->p.hz));
	return a;
}

static json_t *
flow_json(const struct lld_sink *s, uint32_t i, const uint64_t *sent)
{
	struct lld_sink_result r;
	json_t *o;

	lld_sink_flow(s, i, &r);
	o = json_pack("{sI sI sI sI sI sI sI sI sf sf sf sf}", "flow", (json_int_t)i,
		      "pkts", (json_int_t)r.pkts, "bytes", (json_int_t)r.bytes,
		      "payload_bytes", (json_int_t)r.payload_bytes, "lost", (json_int_t)r.lost,
		      "reordered", (json_int_t)r.reordered, "duplicates", (json_int_t)r.dups,
		      "max_seq", (json_int_t)r.max_seq,
		      "first_s", (double)r.first / (double)s->p.hz,
		      "last_s", (double)r.last / (double)s->p.hz,
		      "rate_bps", r.rate_bps, "goodput_bps", r.goodput_bps);
	/* the longest silences (a failover's stall, as the receiver saw it) */
	json_object_set_new(o, "max_gap_us", json_real((double)r.gap[0] * 1e6 / (double)s->p.hz));
	json_object_set_new(o, "gaps", gaps_json(s, &r));
	json_object_set_new(o, "windows", json_pack("{si sf sf sf si sf sf}",
		"n", (int)r.windows, "min_bps", r.win_min_bps, "mean_bps", r.win_mean_bps,
		"max_bps", r.win_max_bps, "span_n", (int)r.span_windows,
		"span_min_bps", r.span_min_bps, "span_max_bps", r.span_max_bps));
	if (sent != NULL) {
		uint64_t uniq = r.pkts - r.dups;

		json_object_set_new(o, "sent", json_integer((json_int_t)sent[i]));
		json_object_set_new(o, "lost_sent",
				    json_integer((json_int_t)(sent[i] > uniq ? sent[i] - uniq : 0)));
	}
	if (r.owd_n > 0)
		json_object_set_new(o, "owd_ns", json_pack("{sf sf sf}", "min", r.owd_min_ns,
							    "mean", r.owd_mean_ns,
							    "max", r.owd_max_ns));
	return o;
}

/* min, mean, max of x over the flows that have it (have[i] != 0). */
struct mmm {
	double min, max, sum;
	uint64_t n;
};

static void
mmm_add(struct mmm *m, double v)
{
	if (m->n == 0 || v < m->min)
		m->min = v;
	if (m->n == 0 || v > m->max)
		m->max = v;
	m->sum += v;
	m->n++;
}

static json_t *
mmm_json(const struct mmm *m)
{
	if (m->n == 0)
		return json_null();
	return json_pack("{sI sf sf sf}", "flows", (json_int_t)m->n, "min", m->min,
			 "mean", m->sum / (double)m->n, "max", m->max);
}

/* Across flows: whole-run rates, window rates and span rates. */
static json_t *
flows_summary(const struct lld_sink *s)
{
	struct mmm rate = {0}, wmin = {0}, wmax = {0}, smin = {0}, smax = {0};
	struct lld_sink_result r;

	for (uint32_t i = 0; i < s->p.n_flows; i++) {
		lld_sink_flow(s, i, &r);
		if (r.rate_bps > 0)
			mmm_add(&rate, r.rate_bps);
		if (r.windows > 0) {
			mmm_add(&wmin, r.win_min_bps);
			mmm_add(&wmax, r.win_max_bps);
		}
		if (r.span_windows > 0) {
			mmm_add(&smin, r.span_min_bps);
			mmm_add(&smax, r.span_max_bps);
		}
	}
	return json_pack("{so so so so so}", "rate_bps", mmm_json(&rate),
			 "window_min_bps", mmm_json(&wmin), "window_max_bps", mmm_json(&wmax),
			 "span_min_bps", mmm_json(&smin), "span_max_bps", mmm_json(&smax));
}

/* Per window, across flows: the lowest and highest rate of a flow's complete
 * window (counted and span), null where no flow had one. */
static json_t *
windows_x_json(const struct lld_sink *s, json_t *w)
{
	static const char *const names[] = {"flow_min_bps", "flow_max_bps",
					    "span_min_bps", "span_max_bps"};
	double len = (double)s->p.window / (double)s->p.hz;
	json_t *a[4];

	for (int i = 0; i < 4; i++)
		a[i] = json_array();
	for (uint32_t k = 0; k < s->k_end; k++) {
		const struct win_x *x = &s->wx[k];

		json_array_append_new(a[0], x->n ? json_real((double)x->min_bytes * 8 / len)
						 : json_null());
		json_array_append_new(a[1], x->n ? json_real((double)x->max_bytes * 8 / len)
						 : json_null());
		json_array_append_new(a[2], x->span_n ? json_real(x->span_min) : json_null());
		json_array_append_new(a[3], x->span_n ? json_real(x->span_max) : json_null());
	}
	for (int i = 0; i < 4; i++)
		json_object_set_new(w, names[i], a[i]);
	return w;
}

static json_t *
windows_json(const struct lld_sink *s)
{
	json_t *b = json_array(), *p = json_array();
	double w = (double)s->p.window / (double)s->p.hz;
	struct mmm m = {0};

	for (uint32_t k = 0; k < s->k_end; k++) {
		json_array_append_new(b, json_integer((json_int_t)s->w_bytes[k]));
		json_array_append_new(p, json_integer((json_int_t)s->w_pkts[k]));
		mmm_add(&m, (double)s->w_bytes[k] * 8 / w);
	}
	return windows_x_json(s, json_pack("{sf sf so so so}", "ms", w * 1e3,
		"from_s", s->any ? secs(s, s->origin) : 0.0, "bytes", b, "pkts", p,
		"rate_bps", m.n ? json_pack("{sf sf sf}", "min", m.min,
					    "mean", m.sum / (double)m.n, "max", m.max)
				: json_null()));
}

static json_t *
owd_json(const struct ls_hist *h)
{
	if (h->count == 0)
		return json_null();
	return json_pack("{sI sI sI sI sI sI sI sf}", "count", (json_int_t)h->count,
			 "min", (json_int_t)h->min, "p50", (json_int_t)ls_hist_quantile(h, 0.5),
			 "p90", (json_int_t)ls_hist_quantile(h, 0.9),
			 "p99", (json_int_t)ls_hist_quantile(h, 0.99),
			 "p999", (json_int_t)ls_hist_quantile(h, 0.999),
			 "max", (json_int_t)h->max, "mean", ls_hist_mean(h));
}

static json_t *
totals_json(const struct lld_sink *s, const uint64_t *sent)
{
	uint64_t lost = 0, reo = 0, dups = 0, old = 0, payload = 0, lost_sent = 0;

	for (uint32_t i = 0; i < s->p.n_flows; i++) {
		const struct flow_st *f = &s->flows[i];
		uint64_t uniq = f->pkts - f->dups;

		lost += f->lost;
		reo += f->reordered;
		dups += f->dups;
		old += f->old;
		payload += f->payload;
		if (sent != NULL)
			lost_sent += sent[i] > uniq ? sent[i] - uniq : 0;
	}
	return json_pack("{sI sI sI sI sI si sI sI sI sI sI sf sf}",
			 "pkts", (json_int_t)s->pkts, "bytes", (json_int_t)s->bytes,
			 "payload_bytes", (json_int_t)payload, "other", (json_int_t)s->other,
			 "unknown_flow", (json_int_t)s->unknown, "flows_seen", (int)s->flows_seen,
			 "lost", (json_int_t)(sent != NULL ? lost_sent : lost),
			 "lost_gaps", (json_int_t)lost, "reordered", (json_int_t)reo,
			 "duplicates", (json_int_t)dups, "reordered_old", (json_int_t)old,
			 "first_s", s->any ? secs(s, s->first) : 0.0,
			 "last_s", s->any ? secs(s, s->last) : 0.0);
}

json_t *
lld_sink_report(const struct lld_sink *s, const uint64_t *sent, uint32_t report_flows)
{
	json_t *rx = totals_json(s, sent), *flows = json_array(), *detail = json_array();
	uint64_t span = s->m.last - s->m.first;

	json_object_set_new(rx, "measured", json_pack("{sf sf sf sf}",
		"from_s", s->m.any ? secs(s, s->m.first) : 0.0,
		"to_s", s->m.any ? secs(s, s->m.last) : 0.0,
		"rate_bps", rate_of(s->m.bytes, span, s->p.hz),
		"goodput_bps", rate_of(s->m.payload, span, s->p.hz)));
	json_object_set_new(rx, "settle_ms", json_real((double)s->p.settle * 1e3 /
						       (double)s->p.hz));
	json_object_set_new(rx, "windows", windows_json(s));
	json_object_set_new(rx, "owd_ns", owd_json(&s->owd));
	if (s->p.fg_flows > 0)
		json_object_set_new(rx, "fg_owd_ns", owd_json(&s->fg_owd));
	json_object_set_new(rx, "flows_summary", flows_summary(s));
	for (uint32_t i = 0; i < s->p.n_flows && i < report_flows; i++)
		json_array_append_new(flows, flow_json(s, i, sent));
	for (uint32_t i = 0; i < s->p.detail_flows; i++) {
		json_t *b = json_array();

		for (uint32_t k = 0; k < s->k_end; k++)
			json_array_append_new(b, json_integer(
				(json_int_t)s->detail[(uint64_t)i * s->p.n_windows + k]));
		json_array_append_new(detail, json_pack("{si so}", "flow", (int)i,
							"window_bytes", b));
	}
	return json_pack("{so so so}", "rx", rx, "flows", flows, "detail", detail);
}

static void
fmt_rate(char *buf, size_t len, double bps)
{
	if (bps >= 1e9)
		snprintf(buf, len, "%.4f Gb/s", bps / 1e9);
	else if (bps >= 1e6)
		snprintf(buf, len, "%.4f Mb/s", bps / 1e6);
	else
		snprintf(buf, len, "%.4f kb/s", bps / 1e3);
}

void
lld_sink_summary(const struct lld_sink *s, FILE *out)
{
	json_t *t = totals_json(s, NULL), *w = windows_json(s);
	json_t *wr = json_object_get(w, "rate_bps");
	char a[32], b[32], c[32];

	fmt_rate(a, sizeof(a), rate_of(s->m.bytes, s->m.last - s->m.first, s->p.hz));
	fmt_rate(b, sizeof(b), rate_of(s->m.payload, s->m.last - s->m.first, s->p.hz));
	fprintf(out, "lockstep-load: rx: %" PRIu64 " frames of %u flows, %" PRIu64 " bytes; measured rate %s, "
		"goodput %s\n", s->pkts, s->flows_seen, s->bytes, a, b);
	fprintf(out, "lockstep-load: rx: lost %" JSON_INTEGER_FORMAT " (sequence gaps), reordered %"
		JSON_INTEGER_FORMAT ", duplicates %" JSON_INTEGER_FORMAT ", not ours %" PRIu64 "\n",
		json_integer_value(json_object_get(t, "lost_gaps")),
		json_integer_value(json_object_get(t, "reordered")),
		json_integer_value(json_object_get(t, "duplicates")), s->other);
	if (json_is_object(wr)) {
		fmt_rate(a, sizeof(a), json_real_value(json_object_get(wr, "min")));
		fmt_rate(b, sizeof(b), json_real_value(json_object_get(wr, "mean")));
		fmt_rate(c, sizeof(c), json_real_value(json_object_get(wr, "max")));
		fprintf(out, "lockstep-load: rx: %u windows of %.0f ms: min %s, mean %s, max %s\n", s->k_end,
			json_real_value(json_object_get(w, "ms")), a, b, c);
	}
	if (s->owd.count > 0)
		fprintf(out, "lockstep-load: rx: one-way delay p50 %.1f us, p99 %.1f us, p99.9 %.1f us, "
			"max %.1f us\n", (double)ls_hist_quantile(&s->owd, 0.5) / 1e3,
			(double)ls_hist_quantile(&s->owd, 0.99) / 1e3,
			(double)ls_hist_quantile(&s->owd, 0.999) / 1e3, (double)s->owd.max / 1e3);
	if (s->fg_owd.count > 0)
		fprintf(out, "lockstep-load: rx: foreground one-way delay (measured span) p50 %.1f us, "
			"p99 %.1f us, max %.1f us over %" PRIu64 " frames\n",
			(double)ls_hist_quantile(&s->fg_owd, 0.5) / 1e3,
			(double)ls_hist_quantile(&s->fg_owd, 0.99) / 1e3,
			(double)s->fg_owd.max / 1e3, s->fg_owd.count);
	json_decref(t);
	json_decref(w);
}
