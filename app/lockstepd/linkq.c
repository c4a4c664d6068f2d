/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-link queueing from the probe mesh (issue 29, item 2; control thread).
 *
 * Every path's forward queueing (its synced one-way delay above its floor,
 * sender.c) is summed by the lcore per reply (q_sum, q_cnt). Once a second
 * links.c's pass hands over every live path with a usable trace, its links
 * and the mean queueing of the replies since the last estimate; at the
 * pass's end lib/tomo fits each link's queueing to those means
 * (non-negative least squares over the path-link incidence, ls_tomo.h).
 * A mean, not a median: means add up along a path.
 *
 * Where it runs: every node over what it sees, as the suspect links do.
 * Links that its paths always cross together are one group (each member
 * reports the group's value; nodes elsewhere in the fabric see them apart).
 * How it scales: O(paths x hops) a second here; at 100k hosts, each node
 * probing K peers (pinglists) fits K x paths rows over the links its
 * traces cross, whatever the fabric's size. A fabric-wide view would merge
 * nodes' rows by link (a summary per link: sum of weights, of weighted
 * means and of squares), which this does not exchange yet.
 *
 * What a figure means: `queue_us` the link's mean queueing over the
 * interval, `paths` behind it, `shared` links in its group, `resid_us` the
 * RMS of what the fit leaves unexplained on its paths (the confidence: a
 * resid_us near queue_us says the links do not add up to the paths).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>

#include "lockstepd.h"
#include "ls_ctl.h"
#include "ls_tomo.h"

#define LINKQ_EVERY_MS 1000
#define LINKQ_ROWS 8192        /* paths fitted per estimate */
#define LINKQ_LINKS 4096       /* = links.c's MAX_LINKS */
#define LINKQ_HOPS (LSD_ROUTE_HOPS + 1)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

struct row {
	uint16_t link[LINKQ_HOPS];
	uint16_t n;
};

struct est {
	char name[2 * LS_ADDR_STRLEN + 2];
	char from[LS_ADDR_STRLEN];
	double q_ns, resid_ns;
	uint32_t paths;
	uint16_t shared;
};

static struct {
	bool due;                  /* this pass estimates */
	uint64_t next;             /* TSC of the next estimate */
	uint64_t last_at;          /* TSC of the last one */
	/* per peer index x path: sums at the last estimate */
	int64_t *snap_sum;
	uint64_t *snap_cnt;
	uint32_t cap;
	uint64_t removals;
	/* the pass's rows */
	struct row rows[LINKQ_ROWS];
	struct ls_tomo_qpath qp[LINKQ_ROWS];
	uint32_t n_rows;
	uint8_t from_a[LINKQ_LINKS];   /* link traversed from its a end */
	/* the last estimate */
	struct est e[LINKQ_LINKS];
	uint32_t n_e;
	uint64_t at_utc_ns, span_ns;
	uint32_t rows_used, estimates;
	/* lib/tomo's scratch */
	uint64_t sig[LINKQ_LINKS];
	uint32_t off[LINKQ_LINKS + 1], fill[LINKQ_LINKS];
	uint32_t ent[LINKQ_ROWS * LINKQ_HOPS];
	double r[LINKQ_ROWS];
	struct ls_tomo_qlink out[LINKQ_LINKS];
} lq;

bool
lsd_linkq_begin(unsigned int n_peers)
{
	uint64_t now = rte_rdtsc();
	size_t need = (size_t)n_peers * LS_MAX_PATHS;

	lq.due = false;
	lq.n_rows = 0;
	if (now < lq.next)
		return false;
	if (need > lq.cap) {
		size_t cap = need * 2;
		int64_t *s = realloc(lq.snap_sum, cap * sizeof(*s));
		uint64_t *c = s != NULL ? realloc(lq.snap_cnt, cap * sizeof(*c)) : NULL;

		if (s != NULL)
			lq.snap_sum = s;
		if (c == NULL)
			return false;
		lq.snap_cnt = c;
		memset(s + lq.cap, 0, (cap - lq.cap) * sizeof(*s));
		memset(c + lq.cap, 0, (cap - lq.cap) * sizeof(*c));
		lq.cap = (uint32_t)cap;
	}
	if (lq.removals != lsd_peer_removals()) {
		/* peer indexes moved: the snapshots belong to others now */
		memset(lq.snap_sum, 0, lq.cap * sizeof(*lq.snap_sum));
		memset(lq.snap_cnt, 0, lq.cap * sizeof(*lq.snap_cnt));
		lq.removals = lsd_peer_removals();
	}
	lq.next = now + rte_get_tsc_hz() / 1000 * LINKQ_EVERY_MS;
	lq.due = true;
	return true;
}

void
lsd_linkq_row(unsigned int pi, const struct lsd_peer *peer, uint16_t p, const uint16_t *ids,
	      const uint8_t *from_a, uint16_t m)
{
	const struct lsd_peer_path *pp = &peer->path[p];
	size_t k = (size_t)pi * LS_MAX_PATHS + p;
	int64_t sum;
	uint64_t cnt, dc;

	if (!lq.due || k >= lq.cap || m > LINKQ_HOPS)
		return;
	sum = LOAD(pp->q_sum);
	cnt = LOAD(pp->q_cnt);
	dc = cnt - lq.snap_cnt[k];
	/* a path seen for the first time counts from the next estimate */
	if (lq.snap_cnt[k] != 0 && dc > 0 && cnt > lq.snap_cnt[k] && lq.n_rows < LINKQ_ROWS &&
	    LOAD(peer->owd.valid)) {
		struct row *r = &lq.rows[lq.n_rows];

		memcpy(r->link, ids, sizeof(ids[0]) * m);
		r->n = m;
		for (uint16_t j = 0; j < m; j++)
			if (ids[j] < LINKQ_LINKS)
				lq.from_a[ids[j]] = from_a[j];
		lq.qp[lq.n_rows] = (struct ls_tomo_qpath){
			.link = r->link, .n = m,
			.q_ns = (double)(sum - lq.snap_sum[k]) / (double)dc, .w = (double)dc};
		lq.n_rows++;
	}
	lq.snap_sum[k] = sum;
	lq.snap_cnt[k] = cnt;
}

static int
by_queue(const void *a, const void *b)
{
	const struct est *x = a, *y = b;

	return x->q_ns > y->q_ns ? -1 : x->q_ns < y->q_ns;
}

void
lsd_linkq_solve(const struct ls_addr *a, const struct ls_addr *b, size_t stride, uint32_t n_links)
{
	struct ls_tomo_qwork w = {.sig = lq.sig, .off = lq.off, .fill = lq.fill, .ent = lq.ent,
				  .r = lq.r, .cap_links = LINKQ_LINKS, .cap_paths = LINKQ_ROWS,
				  .cap_entries = LINKQ_ROWS * LINKQ_HOPS};
	uint64_t now = rte_rdtsc();
	struct timespec ts;

	if (!lq.due)
		return;
	lq.due = false;
	if (n_links > LINKQ_LINKS || ls_tomo_queues(lq.qp, lq.n_rows, n_links, lq.out, &w, 200) < 0)
		return;
	lq.n_e = 0;
	for (uint32_t l = 0; l < n_links; l++) {
		const struct ls_addr *x = (const void *)((const char *)a + l * stride);
		const struct ls_addr *y = (const void *)((const char *)b + l * stride);
		struct est *e;
		char sa[LS_ADDR_STRLEN], sb[LS_ADDR_STRLEN];

		if (lq.out[l].paths == 0)
			continue;
		e = &lq.e[lq.n_e++];
		ls_addr_fmt(x, sa, sizeof(sa));
		ls_addr_fmt(y, sb, sizeof(sb));
		snprintf(e->name, sizeof(e->name), "%s-%s", sa, sb);
		snprintf(e->from, sizeof(e->from), "%s", lq.from_a[l] ? sa : sb);
		e->q_ns = lq.out[l].q_ns;
		e->resid_ns = lq.out[l].resid_ns;
		e->paths = lq.out[l].paths;
		e->shared = lq.out[l].shared;
	}
	qsort(lq.e, lq.n_e, sizeof(lq.e[0]), by_queue);
	clock_gettime(CLOCK_REALTIME, &ts);
	lq.at_utc_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	lq.span_ns = lq.last_at != 0 ? (uint64_t)((double)(now - lq.last_at) * 1e9 /
						  (double)rte_get_tsc_hz()) : 0;
	lq.last_at = now;
	lq.rows_used = lq.n_rows;
	lq.estimates++;
}

/* links.queues: the last estimate, the most queueing first. */
static void
cmd_queues(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	json_t *a = json_array();

	for (uint32_t i = 0; i < lq.n_e; i++) {
		const struct est *e = &lq.e[i];

		json_array_append_new(a, json_pack("{s:s, s:s, s:f, s:f, s:i, s:i}",
			"link", e->name, "from", e->from, "queue_us", e->q_ns / 1e3,
			"resid_us", e->resid_ns / 1e3, "paths", (int)e->paths,
			"shared", (int)e->shared));
	}
	ls_ctl_reply_ok(req, json_pack("{s:o, s:I, s:f, s:i, s:I}", "links", a,
				       "at_utc_ns", (json_int_t)lq.at_utc_ns,
				       "span_ms", lq.span_ns / 1e6, "paths", (int)lq.rows_used,
				       "estimates", (json_int_t)lq.estimates));
}

void
lsd_linkq_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "links.queues", "{}",
			     "per-link queueing: each traced link's mean queueing over the "
			     "last second, fitted to the paths' (lib/tomo)", "", cmd_queues, NULL);
}
