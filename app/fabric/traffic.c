/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What runs on a schedule rather than on packets: background traffic
 * generators, link flap schedules, and the control thread's messages that
 * set them (and link parameters) up.
 *
 * Background traffic is made of "virtual" packets: items with no mbuf that
 * occupy links exactly like real ones (and so build real queues) and are
 * routed hop by hop by their generator's flow hash. Control messages are
 * applied on the lcore, between bursts, so the model's state has a single
 * writer; the control thread waits on each message's done flag.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <rte_common.h>
#include <rte_random.h>

#include "event_heap.h"
#include "fabric.h"

/* Slots [0, gens_hi) and [0, flaps_hi) are all that were ever used (set by
 * apply_msg, on this lcore): the loop scans those instead of all 64 of each
 * on every iteration, which was a few percent of a busy loop's time with
 * none in use. */
static int gens_hi, flaps_hi;

static uint32_t
gen_hash(const struct lsf_gen *gn, uint16_t sw, uint32_t flow)
{
	const struct ls_fabric *f = fab.fab;
	const struct ls_fab_node *s = &f->nodes[gn->src], *d = &f->nodes[gn->dst];
	const struct ls_addr *sa = s->addr4.family ? &s->addr4 : &s->addr6;
	const struct ls_addr *da = d->addr4.family ? &d->addr4 : &d->addr6;

	return ls_fab_flow_hash(f->nodes[sw].seed, sa, da, 17, (uint16_t)(40000 + flow),
				(uint16_t)(50000 + flow), 0);
}

static void
enqueue_virtual(uint16_t ch, uint64_t t, uint32_t bytes, uint32_t tag, struct lsf_gen *gn)
{
	bool ce;

	if (ls_fab_chan_enqueue(&fab.fab->chans[ch], t, bytes, false, NULL, tag, &ce) != LS_FAB_OK) {
		gn->dropped++;
		fab.st.gen_dropped++;
		return;
	}
	heap_push(ch);
}

void
lsf_virtual_at(uint16_t node, uint32_t tag, uint64_t t)
{
	struct lsf_gen *gn = &fab.gens[tag & 0xff];
	int ch;

	if (!gn->active || !gn->pair || fab.fab->nodes[node].kind == LS_FAB_HOST)
		return;
	ch = ls_fab_next_hop(fab.fab, node, gn->dst, gen_hash(gn, node, tag >> 8));
	if (ch >= 0)
		enqueue_virtual((uint16_t)ch, t, gn->pkt_bytes, tag, gn);
}

/* An exponential length with this mean (random on/off bursts). */
static uint64_t
exp_ns(uint64_t mean_ns)
{
	/* rte_rand() is 64 random bits; 1 - u is in (0, 1], so the log is finite */
	double u = (double)(rte_rand() >> 11) * 0x1.0p-53;

	return (uint64_t)(-(double)mean_ns * log(1.0 - u));
}

/*
 * A random burst from start_ns: it ends an exponential on-length later, and
 * its first packet goes a uniformly random part of one gap after its start.
 * Why the offset: a burst sends at first, first + gap, ... while before its
 * end, ceil((length - offset) / gap) packets; with no offset that is half a
 * packet more per burst than length / gap on average (0.7% over the rate
 * for the clock-sync benchmark's 90%: 75 packets a burst), with a uniform
 * one it is exactly length / gap.
 */
static void
gen_burst(struct lsf_gen *gn, uint64_t start_ns)
{
	gn->burst_end_ns = start_ns + exp_ns(gn->on_ns);
	gn->next_ns = start_ns + (uint64_t)((double)(rte_rand() >> 11) * 0x1.0p-53 *
					    (double)gn->gap_ns);
}

/*
 * Next send time after a packet of an on/off generator. Periodic bursts
 * keep a fixed phase between links, and a path that crosses two links whose
 * idle gaps never line up then never sees an empty queue (the clock-sync
 * benchmark met exactly that); random bursts (exponential on and off
 * lengths, the classic on/off source) have no phase.
 */
static void
gen_advance(struct lsf_gen *gn)
{
	uint64_t period, phase;

	gn->next_ns += gn->gap_ns;
	if (gn->off_ns == 0)
		return;
	if (gn->random) {
		/* a burst that sends nothing (shorter than its offset) is an
		 * off period that much longer; bounded, for bursts far shorter
		 * than a gap (the last one tried then sends its packet late) */
		for (int k = 0; k < 16 && gn->next_ns >= gn->burst_end_ns; k++)
			gen_burst(gn, gn->burst_end_ns + exp_ns(gn->off_ns));
		return;
	}
	period = gn->on_ns + gn->off_ns;
	phase = (gn->next_ns - gn->start_ns) % period;
	if (phase >= gn->on_ns)
		gn->next_ns += period - phase;
}

unsigned int
lsf_run_gens(uint64_t now, uint64_t *next)
{
	unsigned int work = 0;

	for (int i = 0; i < gens_hi; i++) {
		struct lsf_gen *gn = &fab.gens[i];

		if (!gn->active)
			continue;
		/* Bounded per loop so a generator cannot starve deliveries. */
		for (int k = 0; k < 64 && gn->next_ns <= now; k++) {
			uint32_t flow = gn->pair && gn->flows ? gn->seq % gn->flows : 0;
			uint32_t tag = (uint32_t)i | flow << 8;

			if (gn->pair)
				enqueue_virtual(fab.fab->nodes[gn->src].up_chan, gn->next_ns,
						gn->pkt_bytes, tag, gn);
			else
				enqueue_virtual(gn->chan, gn->next_ns, gn->pkt_bytes, tag, gn);
			gn->seq++;
			gn->sent++;
			fab.st.gen_pkts++;
			gen_advance(gn);
			work++;
		}
		if (gn->next_ns < *next)
			*next = gn->next_ns;
	}
	return work;
}

/* ---- link schedules, routing, control messages ----------------------- */

static void
chan_state(uint16_t ch, bool up, uint64_t now, uint64_t due)
{
	struct lsf_truth r = {.type = LSF_T_LINK, .chan = ch, .t_ns = now, .due_ns = due, .up = up};

	if (fab.fab->chans[ch].up == up)
		return;
	ls_fab_chan_set_up(fab.fab, ch, up, now);
	lsf_truth_push(&r);
}

void
lsf_run_flaps(uint64_t now, uint64_t *next)
{
	for (int i = 0; i < flaps_hi; i++) {
		struct lsf_flap *fl = &fab.flaps[i];

		if (!fl->active)
			continue;
		if (now >= fl->next_ns) {
			fl->is_down = !fl->is_down;
			for (int k = 0; k < fl->n_chan; k++)
				chan_state(fl->chan[k], !fl->is_down, now, fl->next_ns);
			fl->next_ns += fl->is_down ? fl->down_ns : fl->every_ns - fl->down_ns;
			if (!fl->is_down && fl->count && --fl->count == 0)
				fl->active = false;
		}
		if (fl->active && fl->next_ns < *next)
			*next = fl->next_ns;
	}
}

/* Follow a flow hop by hop exactly as forwarding would hash it. */
static int
trace_route(struct lsf_msg *msg)
{
	const struct ls_fabric *f = fab.fab;
	const struct ls_fab_node *s = &f->nodes[msg->route.src], *d = &f->nodes[msg->route.dst];
	const struct ls_addr *sa = msg->route.family == LS_AF_INET6 ? &s->addr6 : &s->addr4;
	const struct ls_addr *da = msg->route.family == LS_AF_INET6 ? &d->addr6 : &d->addr4;
	uint16_t node;

	if (!sa->family || !da->family)
		return -EAFNOSUPPORT;
	msg->route.n = 0;
	msg->route.chan[msg->route.n++] = s->up_chan;
	node = s->leaf;
	while (msg->route.n < 16) {
		uint32_t h = ls_fab_flow_hash(f->nodes[node].seed, sa, da, msg->route.proto,
					      msg->route.sport, msg->route.dport,
					      msg->route.flow_label);
		int ch = ls_fab_next_hop(f, node, msg->route.dst, h);

		if (ch < 0)
			return ch;
		msg->route.chan[msg->route.n++] = (uint16_t)ch;
		node = f->chans[ch].to;
		if (f->nodes[node].kind == LS_FAB_HOST)
			return 0;
	}
	return -ELOOP;
}

/* Link parameters and state from the control thread. */
static void
chan_set(const struct lsf_msg *msg, uint64_t now)
{
	if (msg->set_params) {
		struct ls_fab_chan *c = &fab.fab->chans[msg->chan];
		uint64_t backlog = ls_fab_chan_depth(c, now);

		c->p = msg->params;
		/* The bytes still queued now drain at the new rate (packets
		 * already scheduled keep their times; the FIFO never
		 * reorders). Regression: a slowed link set back to full
		 * rate reported a gigabyte of queue. */
		if (backlog)
			c->busy_until_ns = now + (backlog * 8000000000ULL +
						  c->p.rate_bps - 1) / c->p.rate_bps;
	}
	if (msg->up >= 0)
		chan_state(msg->chan, msg->up != 0, now, 0);
}

/* A flap schedule in the first free slot: its index, or -ENOSPC. */
static int
flap_start(const struct lsf_msg *msg, uint64_t now)
{
	int i = 0;

	while (i < LSF_MAX_FLAPS && fab.flaps[i].active)
		i++;
	if (i == LSF_MAX_FLAPS)
		return -ENOSPC;
	fab.flaps[i] = msg->flap;
	fab.flaps[i].active = true;
	fab.flaps[i].is_down = false;
	fab.flaps[i].next_ns = now + msg->flap.next_ns; /* start_ms after now */
	flaps_hi = RTE_MAX(flaps_hi, i + 1);
	return i;
}

/* A generator in the first free slot: its index, or -ENOSPC. */
static int
gen_start(const struct lsf_msg *msg, uint64_t now)
{
	struct lsf_gen *gn;
	int i = 0;

	while (i < LSF_MAX_GENS && fab.gens[i].active)
		i++;
	if (i == LSF_MAX_GENS)
		return -ENOSPC;
	gn = &fab.gens[i];
	*gn = msg->gen;
	gn->active = true;
	gn->start_ns = now;
	gn->next_ns = now;
	if (gn->random && gn->off_ns != 0)
		gen_burst(gn, now);
	gens_hi = RTE_MAX(gens_hi, i + 1);
	return i;
}

/* Stop every generator of that name: 0, or -ENOENT if none ran. */
static int
gen_stop(const struct lsf_msg *msg)
{
	int rc = -ENOENT;

	for (int i = 0; i < LSF_MAX_GENS; i++) {
		if (fab.gens[i].active && strcmp(fab.gens[i].name, msg->gen.name) == 0) {
			fab.gens[i].active = false;
			rc = 0;
		}
	}
	return rc;
}

void
lsf_apply_msg(struct lsf_msg *msg, uint64_t now)
{
	int rc = 0;

	switch (msg->type) {
	case LSF_MSG_CHAN_SET:
		chan_set(msg, now);
		break;
	case LSF_MSG_FLAP:
		rc = flap_start(msg, now);
		break;
	case LSF_MSG_GEN_START:
		rc = gen_start(msg, now);
		break;
	case LSF_MSG_GEN_STOP:
		rc = gen_stop(msg);
		break;
	case LSF_MSG_CONVERGENCE:
		fab.fab->convergence_ns = msg->convergence_ns;
		break;
	case LSF_MSG_ROUTE:
		rc = trace_route(msg);
		break;
	}
	msg->result = rc;
	__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
}
