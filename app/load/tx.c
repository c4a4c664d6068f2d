/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's generator: flows on a timing wheel (lib/wheel), each
 * flow in it once, at the time its next frame is due. A poll takes the
 * flows whose time has come, builds one frame each into mbufs from the
 * pool, puts each flow back at its next time and hands the burst to the
 * port. A flow's times come from its own clock (frame length x ticks per
 * byte, the fraction carried), never from when the poll ran, so a late
 * poll delays frames without changing the rate. A flow more than max_lag
 * behind (the process was descheduled) restarts its clock at now rather
 * than bursting to catch up, and is counted late.
 *
 * Phases (--phase-bytes, lld_phase.h): a flow that has sent its frames of
 * the phase is not put back on the wheel but parked; main's barrier starts
 * the next phase (lld_tx_phase_next), which puts every flow back, spread
 * from then as at the start. A parked flow costs nothing per poll.
 *
 * Nothing here allocates or makes a system call per frame: mbufs come in
 * bulk from the pool, and a burst the port does not take whole is kept and
 * offered again before anything new is built.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "lld.h"

/* lib/wheel with or without the tag main gave its elements (meson.build) */

/* The wheel's slot: a power of two of ticks, about 1 us or less, so a
 * frame leaves within a microsecond of its time. */
static uint32_t
slot_shift(uint64_t hz)
{
	uint32_t s = 0;

	while ((hz >> (s + 1)) >= 1000000)
		s++;
	return s;
}

/* Flow i's first frame after a start (of TX or of a phase): i/n of its
 * period (or of --spread-us) in, so n flows at one rate leave in turn. */
static uint64_t
start_offset(const struct lld_tx *t, uint32_t i)
{
	uint64_t period = (uint64_t)(((unsigned __int128)t->fl[i].tpb * t->tmpl[i].len) >> 32);

	return (uint64_t)((unsigned __int128)(t->spread ? t->spread : period) * i / t->n_flows);
}

static int
build_flows(struct lld_tx *t, const struct lld_opts *o, const struct ls_mac *mac,
	    uint64_t *max_period)
{
	char err[256];

	for (uint32_t i = 0; i < t->n_flows; i++) {
		struct lld_flow_spec s;
		uint64_t period;

		lld_opts_flow(o, i, &s);
		if (!o->src_mac_set)
			s.src_mac = *mac;
		if (lld_frame_tmpl(&s, &t->tmpl[i], err, sizeof(err)) < 0) {
			LLD_LOG(ERR, "flow %u: %s", i, err);
			return -EINVAL;
		}
		t->fl[i].tpb = ls_wheel_tpb(t->hz, (uint64_t)((i < o->fg_flows ? o->fg_rate_bps :
							       o->rate_bps) + 0.5));
		period = (uint64_t)(((unsigned __int128)t->fl[i].tpb * s.len) >> 32);
		if (period > *max_period)
			*max_period = period;
	}
	return 0;
}

int
lld_tx_init(struct lld_tx *t, const struct lld_opts *o, uint16_t port,
	    struct rte_mempool *pool, uint32_t tag, uint64_t hz)
{
	struct rte_ether_addr ea;
	struct ls_mac mac;
	uint64_t max_period = 0;
	struct ls_wheel_params wp = {0};
	uint32_t slots = 1024;

	memset(t, 0, sizeof(*t));
	t->port = port;
	t->pool = pool;
	t->n_flows = o->flows;
	t->tag = tag;
	t->hz = hz;
	t->max_lag = t->hz / 10;
	t->spread = (uint64_t)((unsigned __int128)t->hz * o->spread_us / 1000000);
	t->phase_bytes = o->phase_bytes;
	t->tmpl = rte_zmalloc("lld_tmpl", sizeof(*t->tmpl) * t->n_flows, 64);
	t->fl = rte_zmalloc("lld_txflow", sizeof(*t->fl) * t->n_flows, 64);
	if (t->tmpl == NULL || t->fl == NULL) {
		LLD_LOG(ERR, "no memory for %u flows (more -m?)", t->n_flows);
		return -ENOMEM;
	}
	rte_eth_macaddr_get(port, &ea);
	memcpy(mac.b, ea.addr_bytes, 6);
	if (build_flows(t, o, &mac, &max_period) < 0)
		return -EINVAL;
	/* a horizon past the longest period, so flows are rarely parked */
	wp.slot_shift = slot_shift(t->hz);
	while (slots < (1u << 20) && ((uint64_t)slots << wp.slot_shift) < max_period * 2)
		slots <<= 1;
	wp.n_slots = slots;
	wp.capacity = t->n_flows;
	wp.now = rte_rdtsc();
	t->wheel = ls_wheel_create(&wp);
	if (t->wheel == NULL) {
		LLD_LOG(ERR, "cannot create the TX wheel: %s", strerror(errno));
		return -ENOMEM;
	}
	return 0;
}

/* Flow i's clock (re)starts at at, with a phase's frames to send. */
static void
flow_go(struct lld_tx *t, uint32_t i, uint64_t at)
{
	struct lld_txflow *f = &t->fl[i];

	f->next = at;
	f->frac = 0;
	if (t->phase_bytes != 0)
		f->left = lld_phase_frames(t->phase_bytes, t->tmpl[i].len);
	if (at < t->end) {
		ls_wheel_insert(t->wheel, (void *)(uintptr_t)(i + 1), 0, at);
		t->active++;
	}
}

void
lld_tx_start(struct lld_tx *t, uint64_t start, uint64_t end)
{
	t->start = start;
	t->end = end;
	for (uint32_t i = 0; i < t->n_flows; i++)
		flow_go(t, i, start + start_offset(t, i));
}

void
lld_tx_phase_next(struct lld_tx *t, uint64_t now)
{
	/* every flow is parked (the barrier waits for all their frames): none
	 * is on the wheel, so each goes in once */
	t->parked = 0;
	for (uint32_t i = 0; i < t->n_flows; i++)
		flow_go(t, i, now + start_offset(t, i));
}

void
lld_tx_phase_stop(struct lld_tx *t, uint64_t now)
{
	t->parked = 0;
	if (now < t->end)
		t->end = now;
}

uint64_t
lld_tx_next_due(const struct lld_tx *t, uint32_t from, uint32_t to)
{
	uint64_t due = UINT64_MAX;

	if (t->n_pend > 0)
		return 0;
	if (t->active == 0)
		return due;
	/* on the wheel: neither done (due at or after the end) nor parked */
	for (uint32_t i = from; i < to && i < t->n_flows; i++) {
		const struct lld_txflow *f = &t->fl[i];

		if (f->next < due && f->next < t->end && (t->phase_bytes == 0 || f->left > 0))
			due = f->next;
	}
	return due;
}

void
lld_tx_free(struct lld_tx *t)
{
	ls_wheel_free(t->wheel);
	rte_free(t->tmpl);
	rte_free(t->fl);
	rte_pktmbuf_free_bulk(t->pend + t->pend_off, t->n_pend);
	memset(t, 0, sizeof(*t));
}

/* Build flow i's next frame into m, stamped now; move its clock on. */
static inline void
tx_one(struct lld_tx *t, uint32_t i, struct rte_mbuf *m, uint64_t now)
{
	struct lld_txflow *f = &t->fl[i];
	const struct lld_tmpl *tp = &t->tmpl[i];
	unsigned __int128 step;

	lld_frame_write(tp, rte_pktmbuf_mtod(m, uint8_t *), f->seq++, now, t->tag);
	m->data_len = tp->len;
	m->pkt_len = tp->len;
	t->pkts++;
	t->bytes += tp->len;
	if (now - f->next > t->lag_max)
		t->lag_max = now - f->next;
	step = (unsigned __int128)f->tpb * tp->len + f->frac;
	f->next += (uint64_t)(step >> 32);
	f->frac = (uint32_t)step;
	if (f->next + t->max_lag < now) {
		f->next = now;
		f->frac = 0;
		t->late++;
	}
	if (t->phase_bytes != 0 && --f->left == 0) {
		/* the phase's frames are out: off the wheel until the barrier */
		t->active--;
		t->parked++;
		t->parked_at = now;
	} else if (f->next < t->end) {
		ls_wheel_insert(t->wheel, (void *)(uintptr_t)(i + 1), 0, f->next);
	} else {
		t->active--;
	}
}

unsigned int
lld_tx_poll(struct lld_tx *t, uint64_t now)
{
	struct rte_mbuf *m[LLD_BURST];
	void *due[LLD_BURST];
	unsigned int n;
	uint16_t sent;

	if (t->parked > 0 && now >= t->end)
		t->parked = 0;   /* --duration's cap: no next phase for them */
	if (t->n_pend > 0) {
		sent = rte_eth_tx_burst(t->port, 0, t->pend + t->pend_off, t->n_pend);
		t->pend_off += sent;
		t->n_pend -= sent;
		t->full += t->n_pend > 0;
		return sent;
	}
	n = ls_wheel_extract(t->wheel, now, due, NULL, LLD_BURST);
	if (n == 0)
		return 0;
	if (rte_pktmbuf_alloc_bulk(t->pool, m, n) != 0) {
		/* the port still holds our mbufs: try these flows again next poll */
		for (unsigned int j = 0; j < n; j++)
			ls_wheel_insert(t->wheel, due[j], 0, now);
		t->alloc_fail++;
		return 0;
	}
	for (unsigned int j = 0; j < n; j++)
		tx_one(t, (uint32_t)((uintptr_t)due[j] - 1), m[j], now);
	sent = rte_eth_tx_burst(t->port, 0, m, (uint16_t)n);
	if (sent < n) {
		memcpy(t->pend, m + sent, (n - sent) * sizeof(m[0]));
		t->pend_off = 0;
		t->n_pend = (uint16_t)(n - sent);
		t->full++;
	}
	return sent;
}
