/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The link and the slices split among the data path's lcores (many cores,
 * bridge_spread.c): each lcore shapes its own flows, so the link's rate and
 * each slice's minimum and maximum are budgets the lcores share. Every
 * SHARE_MS the control thread reads how much each lcore's slices were
 * offered (bytes queued, refused for a full queue and waiting, from the
 * schedulers' counters, plain loads) and gives each lcore a share in
 * proportion (smoothed over about 40 ms), with a floor so an lcore whose
 * flows start now can send at once (distributed rate limiting, in the spirit of Raghavan et al.,
 * SIGCOMM 2007). A change is a message to the lcore (LSD_MSG_SHARE); a
 * share that moved less than SHARE_HYST is left alone.
 *
 * What it costs: traffic that moves from one lcore to another gets its
 * whole share SHARE_MS later (until then the floor); a slice's minimum is
 * guaranteed to the sum of the lcores' shares, each lcore its part. With
 * one lcore nothing here runs.
 */
#include <stdlib.h>

#include <rte_cycles.h>

#include "bridge.h"

#define SHARE_MS 10
#define SHARE_HYST (LS_SLICE_SHARE_ONE / 50)     /* 2 points */

static struct {
	uint64_t next;
	uint64_t enq[LS_BRIDGE_MAX_LCORES][LS_SLICE_MAX];     /* bytes offered, last look */
	uint64_t drops[LS_BRIDGE_MAX_LCORES][LS_SLICE_MAX];
	uint64_t avg[LS_BRIDGE_MAX_LCORES][LS_SLICE_MAX];     /* demand, smoothed */
	uint32_t slice[LS_BRIDGE_MAX_LCORES][LS_SLICE_MAX];   /* shares in force */
	uint32_t link[LS_BRIDGE_MAX_LCORES];
	uint64_t msgs, msgs_failed;
} sh;

/* An lcore's part of a budget: the floor, and the rest by demand. */
static uint32_t
part(uint64_t d, uint64_t total, unsigned int n)
{
	uint32_t floor = LS_SLICE_SHARE_ONE / (64 * n);

	return floor + (uint32_t)((double)(LS_SLICE_SHARE_ONE - n * floor) * (double)d /
				  (double)total);
}

/* Bytes offered to scheduler slice s of lcore i since the last look,
 * smoothed over about four looks (a 10 ms window of one lcore's demand
 * swings by a third in the lab: shares would follow the noise). */
static uint64_t
demand(unsigned int i, unsigned int s)
{
	struct ls_slice_stats st;
	uint64_t d, avg;

	if (ls_slice_get(lsd_bset.b[i]->sched, s, NULL, &st) < 0)
		return 0;
	/* a slice made again since restarts its counters */
	if (st.enq_bytes < sh.enq[i][s] || st.drops < sh.drops[i][s])
		sh.enq[i][s] = sh.drops[i][s] = 0;
	avg = st.enq_pkts ? st.enq_bytes / st.enq_pkts : 1500;
	/* and what waits: a queue no longer fed still wants to drain */
	d = st.enq_bytes - sh.enq[i][s] + (st.drops - sh.drops[i][s] + st.backlog) * avg;
	sh.enq[i][s] = st.enq_bytes;
	sh.drops[i][s] = st.drops;
	sh.avg[i][s] = (3 * sh.avg[i][s] + d) / 4;
	return sh.avg[i][s];
}

static bool
moved(uint32_t a, uint32_t b)
{
	return a > b ? a - b > SHARE_HYST : b - a > SHARE_HYST;
}

static void
send_share(unsigned int i, struct lsd_share_msg *m)
{
	struct lsd_share_msg *copy = malloc(sizeof(*copy));
	int rc;

	if (copy == NULL) {
		sh.msgs_failed++;
		return;
	}
	*copy = *m;
	rc = lsd_msg_call(lsd_bset.lcore[i], LSD_MSG_SHARE, copy);
	if (rc == -ETIMEDOUT) {
		sh.msgs_failed++;      /* the lcore may still read it: leaked */
		return;
	}
	sh.msgs++;
	if (rc == 0) {
		sh.link[i] = m->link;
		for (unsigned int s = 0; s < LS_SLICE_MAX; s++)
			if (m->slice[s] != 0)
				sh.slice[i][s] = m->slice[s];
	}
	free(copy);
}

void
lsd_share_poll(void)
{
	static uint64_t d[LS_BRIDGE_MAX_LCORES][LS_SLICE_MAX];
	uint64_t now = rte_rdtsc(), tot[LS_SLICE_MAX] = {0}, link[LS_BRIDGE_MAX_LCORES] = {0};
	uint64_t link_tot = 0;
	unsigned int n = lsd_bset.n, i, s;

	if (n < 2 || now < sh.next)
		return;
	sh.next = now + rte_get_tsc_hz() / 1000 * SHARE_MS;
	for (i = 0; i < n; i++)
		for (s = 0; s < LS_SLICE_MAX; s++) {
			d[i][s] = demand(i, s);
			tot[s] += d[i][s];
			link[i] += d[i][s];
			link_tot += d[i][s];
		}
	for (i = 0; i < n; i++) {
		struct lsd_share_msg m = {.link = sh.link[i]};
		bool change = false;

		if (link_tot > 0 && moved(m.link, part(link[i], link_tot, n))) {
			m.link = part(link[i], link_tot, n);
			change = true;
		}
		for (s = 0; s < LS_SLICE_MAX; s++) {
			uint32_t p;

			if (tot[s] == 0)
				continue;
			p = part(d[i][s], tot[s], n);
			if (moved(p, sh.slice[i][s])) {
				m.slice[s] = p;
				change = true;
			}
		}
		if (change)
			send_share(i, &m);
	}
}

/* LSD_MSG_SHARE, on the lcore. */
int
lsd_share_apply(struct lsd_bridge *b, const struct lsd_share_msg *m)
{
	const uint64_t link = lsd.cfg.bridge.link_bps;

	if (m->link != 0)
		ls_slice_set_link(b->sched, RTE_MAX(1ULL, link / LS_SLICE_SHARE_ONE * m->link +
						    link % LS_SLICE_SHARE_ONE * m->link /
						    LS_SLICE_SHARE_ONE));
	for (unsigned int s = 0; s < LS_SLICE_MAX; s++)
		if (m->slice[s] != 0)
			ls_slice_set_share(b->sched, s, m->slice[s]);
	return 0;
}

/* `bridge`'s view: each lcore's shares in force (parts of a whole). */
json_t *
lsd_share_json(void)
{
	json_t *a = json_array();

	for (unsigned int i = 0; i < lsd_bset.n && lsd_bset.n > 1; i++)
		json_array_append_new(a, json_pack("{si sf sI sI}", "lcore", (int)lsd_bset.lcore[i],
						   "link", (double)(sh.link[i] ? sh.link[i] :
						   LS_SLICE_SHARE_ONE / lsd_bset.n) / LS_SLICE_SHARE_ONE,
						   "messages", (json_int_t)sh.msgs,
						   "messages_failed", (json_int_t)sh.msgs_failed));
	return a;
}
