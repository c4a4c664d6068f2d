/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path: lockstepd as a bump in the wire between the host port and
 * the fabric port, one lcore owning both (and the probes on the fabric
 * port). Each pass, in the shape of l3fwd:
 *
 *   host rx burst -> parse the vector -> one bulk flow lookup -> per frame:
 *     count, steer (rewrite ECMP entropy), pace (timing wheel) or queue
 *     straight onto its slice
 *   wheel: frames whose time has come -> their slices
 *   slices: what the shaped link may send now -> fabric tx burst
 *   fabric rx burst -> frames for lockstepd (probes, replies, ARP/ND) to
 *     the probe path; the rest counted per flow (CE) -> host tx burst
 *
 * Frames that are not IP (ARP, ND is IP, LLDP, unknown EtherTypes) or whose
 * IP header makes no sense pass through untouched: putting lockstepd in the
 * wire never cuts a host off. Nothing here allocates, locks or makes a
 * system call; the flow table, wheel and scheduler were sized at start.
 *
 * Steering rewrites only what is entropy by definition: the UDP source
 * port of RoCEv2 (4791, with its ICRC updated incrementally), VXLAN (4789)
 * and Geneve (6081), and the IPv6 flow label. Other TCP/UDP ports belong to
 * the application and are never touched.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "bridge.h"
#include "ls_roce.h"

#define VXLAN_PORT 4789
#define GENEVE_PORT 6081

struct lsd_bridge *lsd_bridges[RTE_MAX_LCORE];

/* RFC 1624: a 16-bit field changed from old to new inside a checksummed
 * range; 0 stays 0 (UDP over IPv4 without a checksum). */
static inline void
csum_fix16(uint8_t *csum, uint16_t old, uint16_t new)
{
	uint32_t c = ls_get_be16(csum);

	if (c == 0)
		return;
	c = (~c & 0xffff) + (~old & 0xffff) + new;
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	c = ~c & 0xffff;
	if (c == 0)
		c = 0xffff;
	csum[0] = (uint8_t)(c >> 8);
	csum[1] = (uint8_t)c;
}

/* Entropy field of a frame: where steering may write. */
enum { ENT_NONE, ENT_SPORT, ENT_LABEL };

static inline int
entropy_kind(const struct ls_flow_pkt *pk)
{
	uint16_t dport = ls_get_be16((const uint8_t *)&pk->key.dport);

	if (pk->kind == LS_FLOW_K_ROCE)
		return ENT_SPORT;
	if (pk->kind == LS_FLOW_K_UDP && (dport == VXLAN_PORT || dport == GENEVE_PORT))
		return ENT_SPORT;
	if (pk->key.family == 6)
		return ENT_LABEL;
	return ENT_NONE;
}

/* n bytes at offset off of a chained mbuf, wherever its segments put them. */
static void
seg_write(struct rte_mbuf *m, uint32_t off, const uint8_t *src, uint32_t n)
{
	for (; m != NULL && n > 0; m = m->next) {
		uint32_t k;

		if (off >= m->data_len) {
			off -= m->data_len;
			continue;
		}
		k = RTE_MIN(n, m->data_len - off);
		memcpy(rte_pktmbuf_mtod_offset(m, uint8_t *, off), src, k);
		src += k;
		n -= k;
		off = 0;
	}
}

/* A RoCEv2 frame in chained mbufs (jumbo): headers in the first segment,
 * the ICRC at the end of the IP packet, maybe split between two. */
static int
roce_sport_seg(struct lsd_bridge *b, struct rte_mbuf *m, const struct ls_flow_pkt *pk,
	       uint16_t value)
{
	uint32_t off = (uint32_t)pk->l3_off + pk->l3_len - LS_ROCE_ICRC_LEN;
	uint8_t icrc[4];
	const uint8_t *p = rte_pktmbuf_read(m, off, 4, icrc);

	if (p == NULL)
		return -EMSGSIZE;
	if (p != icrc)
		memcpy(icrc, p, 4);
	if (ls_roce_set_sport_seg(rte_pktmbuf_mtod_offset(m, uint8_t *, pk->l3_off),
				  m->data_len - pk->l3_off, m->pkt_len - pk->l3_off, icrc, value,
				  &b->roce) < 0)
		return -EINVAL;
	seg_write(m, off, icrc, 4);
	return 0;
}

/* Rewrite the frame's entropy to the flow's path. */
static void
steer(struct lsd_bridge *b, const struct ls_flow *f, struct rte_mbuf *m,
      const struct ls_flow_pkt *pk)
{
	uint16_t value = (uint16_t)(b->sport_base + f->path);
	uint8_t *fr = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len = m->data_len;

	switch (entropy_kind(pk)) {
	case ENT_SPORT: {
		uint8_t *udp = fr + pk->l4_off;
		uint16_t old = ls_get_be16(udp);

		if (old == value)
			return;
		if (pk->kind == LS_FLOW_K_ROCE) {
			if (m->nb_segs > 1 ? roce_sport_seg(b, m, pk, value) < 0 :
			    ls_roce_set_sport(fr + pk->l3_off, len - pk->l3_off, value, &b->roce) < 0)
				return;
		} else {
			udp[0] = (uint8_t)(value >> 8);
			udp[1] = (uint8_t)value;
			csum_fix16(udp + 6, old, value);
		}
		break;
	}
	case ENT_LABEL: {
		/* the label is the low 20 bits of the IPv6 header's first word;
		 * it is outside every checksum (and the ICRC masks it) */
		uint8_t *ip = fr + pk->l3_off;
		uint32_t lab = value & 0xfffff;

		if (pk->label == lab)
			return;
		ip[1] = (uint8_t)((ip[1] & 0xf0) | (lab >> 16));
		ip[2] = (uint8_t)(lab >> 8);
		ip[3] = (uint8_t)lab;
		break;
	}
	default:
		return;
	}
	b->st.steered++;
}

static inline uint64_t
flow_tpb(const struct lsd_bridge *b, const struct ls_flow *f)
{
	return f->tpb ? f->tpb : b->slice_tpb[f->slice];
}

/* A RoCEv2 RC request (acknowledged by an ACK): not a response (read
 * responses 0x0d..0x10, ACK 0x11, atomic ACK 0x12), not UD or CNP. */
static inline bool
rc_request(uint8_t op)
{
	return op < 0x20 && (op < 0x0d || op > 0x12);
}

/* Choose a flow's slice and path under the current policy. */
static void
classify(struct lsd_bridge *b, struct ls_flow *f, int32_t idx, const struct ls_flow_pkt *pk)
{
	struct ls_path_policy pp;
	uint32_t ps;
	int path;

	ls_policy_classify(b->policy, pk, &ps, &pp);
	f->slice = b->def_slice;
	for (unsigned int s = 0; s < LS_SLICE_MAX; s++)
		if (b->slice_pol[s] == (int16_t)ps) {
			f->slice = (uint16_t)s;
			break;
		}
	path = entropy_kind(pk) == ENT_NONE ? -1 :
	       ls_path_pick(&pp, rte_hash_crc(&pk->key, sizeof(pk->key), 0x5eed), b->n_paths);
	f->path = path < 0 ? 0xff : (uint8_t)path;
	f->away = 0;
	f->gen = b->gen;
	if (b->bal_allowed != NULL)
		lsd_bal_classified(b, idx, &pp);
}

/* A new flow: classified now, and again only when the policy changes. */
static int32_t
flow_new(struct lsd_bridge *b, const struct ls_flow_pkt *pk, uint8_t dir)
{
	int32_t idx = ls_flow_add(b->flows, &pk->key);
	struct ls_flow *f;

	if (idx < 0) {
		b->st.flows_full++;
		return idx;
	}
	b->st.flows_new++;
	f = ls_flow_at(b->flows, idx);
	f->kind = pk->kind;
	f->dir = dir;
	classify(b, f, idx, pk);
	lsd_cc_flow_init(b, idx, f->slice, rte_rdtsc());
	lsd_fo_flow_init(b, idx);
	return idx;
}

/* A paced frame's slice and length, kept in its wheel entry. 18 bits of
 * length hold any frame up to 256 KiB (a 9000-byte MTU with room); slices
 * are fewer than 2^14 (LS_SLICE_MAX). */
#define WHEEL_TAG_LEN_BITS 18
_Static_assert(LS_SLICE_MAX <= 1u << (32 - WHEEL_TAG_LEN_BITS), "slice index fits the tag");
static inline uint32_t
wheel_tag(uint16_t slice, uint32_t len)
{
	return (uint32_t)slice << WHEEL_TAG_LEN_BITS | len;
}

/* Put m (len bytes) on its slice queue (the frame is final). */
static inline void
to_slice(struct lsd_bridge *b, struct ls_flow *f, struct rte_mbuf *m, uint32_t len,
	 uint16_t slice)
{
	if (ls_slice_enqueue(b->sched, slice, m, len) < 0) {
		b->st.slice_drops++;
		if (f != NULL)
			f->drops++;
		rte_pktmbuf_free(m);
	}
}

/* One managed frame from the host: count, steer, pace or queue. */
static void
host_frame(struct lsd_bridge *b, struct rte_mbuf *m, const struct ls_flow_pkt *pk,
	   int32_t idx, uint64_t now, uint32_t now_ms)
{
	struct ls_flow *f = ls_flow_at(b->flows, idx);
	uint64_t tpb;
	bool cc;

	if (unlikely(f->gen != b->gen)) {
		/* the policy changed since: existing flows follow it too */
		classify(b, f, idx, pk);
		lsd_cc_flow_init(b, idx, f->slice, now);
		lsd_fo_flow_init(b, idx);
		b->st.reclassified++;
	}
	f->pkts++;
	f->bytes += m->pkt_len;
	f->last_ms = now_ms;
	if (pk->ecn == 3) {
		f->ce++;
		b->slice_ce[f->slice]++;
		b->st.ce_from_host++;
	}
	cc = b->cc_on && lsd_cc_mode_on(b, f->slice);
	/* the rate first (a change rescales the wait, lsd_cc_tpb), the bytes
	 * once the frame goes (lsd_cc_sent) */
	tpb = cc ? lsd_cc_tpb(b, f, idx, pk, now) : flow_tpb(b, f);
	/* Over its rate: dropped before anything else sees it. A request that
	 * never reaches the fabric asks for no ACK: its PSN would pair no QP
	 * (the sender runs ahead of what is acknowledged by all it sent), the
	 * failover would wait for its answer, and DCQCN's byte counter would
	 * count bytes nobody sent. */
	if (tpb != 0 && ls_wheel_pace_at(&f->pace, now) - now > b->max_delay) {
		/* a shaper's queue limit: the sender is faster than its rate */
		f->drops++;
		b->st.pace_drops++;
		rte_pktmbuf_free(m);
		return;
	}
	if (b->roce_track && pk->kind == LS_FLOW_K_ROCE) {
		lsd_cc_from_host(b, rte_pktmbuf_mtod(m, uint8_t *), pk, f);
		if (b->fo_on && f->heard && rc_request(pk->bth_opcode))
			lsd_fo_request(b, f, idx, pk, now);
	}
	if (unlikely(b->fo_probe_live || f->away) && f->path != 0xff)
		lsd_fo_frame(b, f, idx, pk, now);
	if (f->path != 0xff)
		steer(b, f, m, pk);
	if (cc)
		lsd_cc_sent(b, f, idx, m->pkt_len, now);
	if (tpb == 0) {
		to_slice(b, f, m, m->pkt_len, f->slice);
		return;
	}
	{
		uint64_t at = ls_wheel_pace_at(&f->pace, now);

		ls_wheel_pace(&f->pace, tpb, m->pkt_len, now);
		b->st.paced++;
		if (at <= now) {
			/* under its rate: the wheel would give it back next slot */
			to_slice(b, f, m, m->pkt_len, f->slice);
			return;
		}
		if (ls_wheel_insert(b->wheel, m, wheel_tag(f->slice, m->pkt_len), at) < 0) {
			f->drops++;
			b->st.wheel_full++;
			rte_pktmbuf_free(m);
			return;
		}
	}
}

static void
from_host(struct lsd_bridge *b, uint64_t now, unsigned int *work)
{
	struct rte_mbuf *m[LSD_BURST];
	struct ls_flow_pkt pk[LSD_BURST];
	const struct ls_flow_key *keys[LSD_BURST];
	int32_t idx[LSD_BURST];
	uint8_t slot[LSD_BURST];
	uint32_t now_ms = (uint32_t)(now / b->ms_div);
	uint16_t n, i, nk = 0;

	n = lsd_bridge_rx(b, LSD_HOST, m, LSD_BURST);
	*work += n;
	if (b->spreads && n > 0)
		n = lsd_spread_out(b, LSD_HOST, m, n);
	if (b->rss) {
		i = n;
		n = lsd_spread_in(b, LSD_HOST, m, n, LSD_BURST);
		*work += n - i;
	}
	if (n == 0)
		return;
	b->st.rx_host += n;
	for (i = 0; i < n && i < 4; i++)
		rte_prefetch0(rte_pktmbuf_mtod(m[i], void *));
	for (i = 0; i < n; i++) {
		int rc;

		if (i + 4 < n)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 4], void *));
		rc = ls_flow_parse(rte_pktmbuf_mtod(m[i], const uint8_t *), m[i]->data_len, &pk[i]);
		slot[i] = 0xff;
		if (rc == LS_FLOW_IP) {
			slot[i] = (uint8_t)nk;
			keys[nk++] = &pk[i].key;
		} else if (rc == LS_FLOW_NOT_IP) {
			b->st.not_ip++;
		} else {
			b->st.bad_ip++;
		}
		if (m[i]->nb_segs > 1)
			b->st.multi_seg++;
	}
	/* At 1 M flows each state line is a cache miss: the lookup asks for
	 * the burst's entries at once, then we ask for their congestion lines,
	 * so that they overlap instead of queueing one by one. (Asked for
	 * with the entries they did not help: those misses fill the core's
	 * miss buffers already; docs/benchmarks.md.) */
	if (nk > 0)
		ls_flow_lookup_bulk(b->flows, keys, nk, idx);
	if (b->cc_on)
		for (i = 0; i < nk; i++)
			if (idx[i] >= 0)
				rte_prefetch0(lsd_cc_line(b, idx[i]));
	for (i = 0; i < n; i++) {
		int32_t id;

		if (slot[i] == 0xff) {
			to_slice(b, NULL, m[i], m[i]->pkt_len, b->def_slice);
			continue;
		}
		id = idx[slot[i]];
		if (id < 0)
			id = flow_new(b, &pk[i], 0);
		if (id < 0) {
			to_slice(b, NULL, m[i], m[i]->pkt_len, b->def_slice);
			continue;
		}
		host_frame(b, m[i], &pk[i], id, now, now_ms);
	}
}

/* A frame from the fabric for the host: its flow's counters (CE per flow,
 * slice and the sender's path) and, for RoCEv2, congestion control. */
static void
fabric_frame(struct lsd_bridge *b, struct rte_mbuf *m, const uint8_t *fr, uint64_t now,
	     uint32_t now_ms)
{
	struct ls_flow_pkt pk;
	struct ls_flow *fl;
	int32_t id;

	if (ls_flow_parse(fr, m->data_len, &pk) != LS_FLOW_IP)
		return;
	/* The fabric side may not fill the table the host's flows need:
	 * it adds flows only while a quarter of the table is free. */
	ls_flow_lookup_bulk(b->flows, (const struct ls_flow_key *[]){&pk.key}, 1, &id);
	if (id < 0 && ls_flow_count(b->flows) >= b->fabric_flow_max) {
		b->st.flows_full_fabric++;
		id = -1;
	} else if (id < 0) {
		id = flow_new(b, &pk, 1);
	}
	if (id >= 0) {
		fl = ls_flow_at(b->flows, id);
		fl->pkts++;
		fl->bytes += m->pkt_len;
		fl->last_ms = now_ms;
		if (pk.ecn == 3) {
			fl->ce++;
			b->slice_ce[fl->slice]++;
		}
	}
	if (pk.ecn == 3) {
		uint16_t sport = pk.l4_off ? ls_get_be16(fr + pk.l4_off) : 0;

		b->st.ce_from_fabric++;
		/* the sender steered its path k to source port base + k */
		if (pk.kind == LS_FLOW_K_ROCE && sport >= b->sport_base &&
		    sport - b->sport_base < LS_POLICY_MAX_PATHS)
			b->path_ce[sport - b->sport_base]++;
	}
	if (b->roce_track && pk.kind == LS_FLOW_K_ROCE)
		lsd_cc_from_fabric(b, fr, &pk, id, now);
}

/* The lead's look at the fabric's frames: ours to ours[], the routers'
 * answers to path discovery kept, broadcast and multicast read (ARP, ND)
 * and left in m[] with the rest for the host. The count left. */
static uint16_t
fabric_triage(struct lsd_lcore *lc, struct lsd_bridge *b, struct rte_mbuf **m, uint16_t n,
	      struct rte_mbuf **ours, uint16_t *no, uint64_t tsc)
{
	uint16_t i, nh = 0;

	for (i = 0; i < n; i++) {
		const uint8_t *f = rte_pktmbuf_mtod(m[i], const uint8_t *);

		if (m[i]->data_len >= 6 && memcmp(f, b->fab->mac.b, 6) == 0) {
			ours[(*no)++] = m[i];
			continue;
		}
		if (m[i]->data_len >= 6 && (f[0] & 1))
			lsd_rx_peek(lc, b->fab, m[i]);
		/* the routers' answers to our path discovery come to the
		 * host's address, which the fabric port shares */
		if (unlikely(lsd_route_maybe(f, m[i]->data_len)) &&
		    lsd_route_rx(lc, b->fab, f, m[i]->data_len, tsc)) {
			b->st.route_icmp++;
			rte_pktmbuf_free(m[i]);
			continue;
		}
		m[nh++] = m[i];
	}
	return nh;
}

/* Frames of the fabric port: ours to the probe path, the rest (counted per
 * flow) to the host. Broadcast and multicast go to both: lockstepd only
 * reads them (ARP, ND) and the host gets them whole. The other lcores of a
 * soft spread get the host's frames only, already looked at by the lead. */
static void
from_fabric(struct lsd_lcore *lc, struct lsd_bridge *b, uint64_t now, unsigned int *work)
{
	struct rte_mbuf *m[LSD_BURST], *ours[LSD_BURST];
	uint16_t n, i, no = 0, nh;
	uint32_t now_ms = (uint32_t)(now / b->ms_div);
	uint64_t tsc;

	n = lsd_bridge_rx(b, LSD_FAB, m, LSD_BURST);
	b->fab_drained = n < LSD_BURST;
	if (n == 0 && (!b->rss || rte_ring_empty(b->in[LSD_FAB])))
		return;
	/* after a pause (this lcore, the peer or, in the lab, the emulator
	 * held up), replies come late for every path: not silence (bridge_fo.c) */
	if (n > 0 && now - b->fab_last_rx > b->fab_pause) {
		b->fab_resumed = now;
		if (now - b->fab_last_rx > 2 * b->fab_pause)
			b->fab_resumed_long = now;
	}
	if (n > 0)
		b->fab_last_rx = now;
	tsc = rte_rdtsc();
	*work += n;
	/* the lead looks first at what it read itself; the other lcores of
	 * an RSS spread hand it what is for lockstepd (lsd_spread_out) */
	nh = b->li == 0 && !b->ring_io ? fabric_triage(lc, b, m, n, ours, &no, tsc) : n;
	if (b->spreads && nh > 0)
		nh = lsd_spread_out(b, LSD_FAB, m, nh);
	if (b->rss) {
		/* handed on by the others: the lead's share looked at now */
		i = lsd_spread_in(b, LSD_FAB, m, nh, LSD_BURST);
		*work += i - nh;
		if (b->li == 0 && i > nh)
			i = nh + fabric_triage(lc, b, &m[nh], i - nh, ours, &no, tsc);
		nh = i;
	}
	for (i = 0; i < nh; i++)
		fabric_frame(b, m[i], rte_pktmbuf_mtod(m[i], const uint8_t *), tsc, now_ms);
	if (b->roce_track)
		lsd_cc_flush(b);
	b->st.rx_fabric += nh;
	if (no > 0)
		lsd_rx_vector(lc, b->fab, ours, no, tsc);
	if (nh > 0)
		lsd_bridge_send(b, LSD_HOST, m, nh);
}

/* Wheel -> slices -> fabric. */
static void
to_fabric(struct lsd_bridge *b, uint64_t now, unsigned int *work)
{
	void *out[LSD_BURST];
	uint32_t tags[LSD_BURST];
	unsigned int n, i;

	/* the frames' slices and lengths come from the wheel's tags: the mbufs
	 * waited there, likely out of cache, and only the PMD reads them next */
	while ((n = ls_wheel_extract(b->wheel, now, out, tags, LSD_BURST)) > 0) {
		for (i = 0; i < n; i++) {
			struct rte_mbuf *m = out[i];
			uint16_t s = (uint16_t)(tags[i] >> WHEEL_TAG_LEN_BITS);

			/* Bug (bridge fuzz, slice.del while frames were paced):
			 * a frame whose slice was removed while it sat in the
			 * wheel was dropped (enqueue -ENOENT, counted in
			 * slice_drops but in no slice's drops) instead of going
			 * to "default" like the removed slice's queue. */
			if (unlikely(b->slice_pol[s] < 0))
				s = b->def_slice;
			to_slice(b, NULL, m, tags[i] & ((1u << WHEEL_TAG_LEN_BITS) - 1), s);
		}
		*work += n;
	}
	while ((n = ls_slice_dequeue(b->sched, now, out, LSD_BURST)) > 0) {
		*work += n;
		if (lsd_bridge_send(b, LSD_FAB, (struct rte_mbuf **)out, (uint16_t)n) < n)
			break;
	}
	if (lsd_bset.soft && b->li == 0)
		lsd_spread_drain(b, work);
}

__attribute__((hot)) void
lsd_bridge_poll(struct lsd_lcore *lc, struct lsd_bridge *b, unsigned int *work)
{
	uint64_t now = rte_rdtsc();

	if (unlikely(b->notes != NULL))
		lsd_fo_notes(b);
	/* The fabric's frames first: after the lcore was held up, the ACKs
	 * waiting in its ring are heard before the host's requests are
	 * judged silent (failover), and CNPs act before the frames they slow. */
	from_fabric(lc, b, now, work);
	from_host(b, now, work);
	to_fabric(b, rte_rdtsc(), work);
	if (unlikely(now >= b->next_age)) {
		/* a slice of the table per millisecond: 1 M flows in ~4 s */
		b->st.flows_aged += ls_flow_age(b->flows, (uint32_t)(now / b->ms_div),
						 lsd.cfg.bridge.flow_idle_ms, 256);
		if (b->roce_track)
			lsd_cc_age(b, (uint32_t)(now / b->ms_div), lsd.cfg.bridge.flow_idle_ms, 64);
		b->next_age = now + b->ms_div;
	}
}

/* Make the scheduler's slices those of pol, keeping queues of slices that
 * stay (same name); a slice that goes has its queue moved to "default". */
int
lsd_bridge_apply(struct lsd_bridge *b, const struct ls_policy *pol)
{
	int16_t keep[LS_SLICE_MAX];
	unsigned int s, n = ls_slice_count(b->sched);
	bool cc_on = false, cc_delay = false;
	int d;

	for (s = 0; s < LS_SLICE_MAX; s++)
		keep[s] = -1;
	for (uint32_t i = 0; i < pol->n_slices; i++) {
		int k = ls_slice_set(b->sched, &pol->slices[i].conf);

		if (k < 0)
			return k; /* checked by the control thread: cannot happen */
		keep[k] = (int16_t)i;
		b->slice_tpb[k] = ls_wheel_tpb(b->hz, pol->slices[i].flow_bps);
		lsd_cc_apply_slice(b, (unsigned int)k, &pol->slices[i]);
		cc_on |= pol->slices[i].cc.mode != LS_CC_OFF || pol->slices[i].cc.np;
		cc_delay |= pol->slices[i].cc.mode == LS_CC_DELAY;
	}
	b->cc_on = cc_on;
	b->cc_delay = cc_delay;
	b->roce_track = cc_on || b->fo_on;
	d = ls_slice_find(b->sched, "default");
	b->def_slice = (uint16_t)(d < 0 ? 0 : d);
	for (s = 0; s < n; s++) {
		void *q[LSD_BURST];
		unsigned int got;

		if (keep[s] >= 0 || ls_slice_get(b->sched, s, NULL, NULL) < 0)
			continue;
		while ((got = ls_slice_drain(b->sched, s, q, LSD_BURST)) > 0)
			for (unsigned int i = 0; i < got; i++)
				to_slice(b, NULL, q[i], ((struct rte_mbuf *)q[i])->pkt_len, b->def_slice);
		ls_slice_del(b->sched, s);
	}
	memcpy(b->slice_pol, keep, sizeof(keep));
	b->policy = pol;
	b->gen++;
	return 0;
}

static int
bridge_create(unsigned int li, struct lsd_port *host, struct lsd_port *fab,
	      const struct ls_policy *pol)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;
	unsigned int lcore = lsd_bset.lcore[li];
	int socket = (int)rte_lcore_to_socket_id(lcore);
	struct lsd_bridge *b = rte_zmalloc_socket("lsd_bridge", sizeof(*b), 64, socket);
	char name[32];
	uint32_t shift = 0;

	if (b == NULL)
		return -ENOMEM;
	lsd_bridges[lcore] = b;
	lsd_bset.b[li] = b;
	b->li = (uint8_t)li;
	b->ring_io = lsd_bset.soft && li > 0;
	b->rss = lsd_bset.rss;
	b->spreads = (lsd_bset.soft && li == 0) || lsd_bset.rss;
	b->q = lsd_bset.rss ? (uint16_t)li : 0;
	/* the lead's probes feed the delay mode of every lcore's flows */
	b->lc = &lsd.lcores[lsd_bset.lcore[0]];
	b->host = host;
	b->fab = fab;
	b->hz = ls_tsc_hz(&lsd.cal);  /* measured: paced rates are exact */
	b->ms_div = b->hz / 1000;
	b->fabric_flow_max = bc->max_flows / 4 * 3;
	b->max_delay = b->hz / 1000000 * bc->pace_max_delay_us;
	b->sport_base = lsd.cfg.probe.src_port_base;
	b->n_paths = lsd.cfg.probe.paths;
	for (unsigned int s = 0; s < LS_SLICE_MAX; s++)
		b->slice_pol[s] = -1;
	/* the largest power of two of ticks within wheel_slot_ns (regression:
	 * the units were inverted, 100 ns gave 13 ns slots; bridge fuzz test) */
	while (((1ULL << (shift + 1)) * 1000000000ULL) / b->hz <= bc->wheel_slot_ns &&
	       shift < 30)
		shift++;
	snprintf(name, sizeof(name), "lsd_flows_%u", lcore);
	b->flows = ls_flow_table_create(&(struct ls_flow_table_params){
		.name = name, .max_flows = bc->max_flows, .socket_id = socket});
	b->wheel = ls_wheel_create(&(struct ls_wheel_params){
		.n_slots = bc->wheel_slots, .slot_shift = shift,
		.capacity = bc->mbufs, .now = rte_rdtsc()});
	/* The link bucket must hold what the link sends during one pass of the
	 * loop (tens of us when the lcore is busy), or a fast link underruns:
	 * 16 KiB capped a 100 Gb/s link near 10 Gb/s (bridge fuzz test). */
	b->sched = ls_slice_create(&(struct ls_slice_params){
		.hz = b->hz, .link_bps = lsd_share_of(bc->link_bps, lsd_bset.n),
		.now = rte_rdtsc(), .share = LS_SLICE_SHARE_ONE / lsd_bset.n,
		.burst_bytes = (uint32_t)RTE_MAX(16384ULL, bc->link_bps / 8 / 50000)});
	if (b->flows == NULL || b->wheel == NULL || b->sched == NULL ||
	    lsd_cc_create(b, socket) < 0 || lsd_fo_create(b, socket) < 0 ||
	    lsd_bal_create(b, socket) < 0 || lsd_spread_create(b) < 0) {
		LSD_LOG(ERR, "bridge: cannot allocate %u flows (try more memory: -m)",
		       bc->max_flows);
		return -ENOMEM;
	}
	LSD_LOG(INFO, "bridge: host %s <-> fabric %s on lcore %u: %u flows (%.1f MB), "
	       "wheel %u x %.0f ns, link %.3f Gb/s", host->conf->name, fab->conf->name,
	       lcore, bc->max_flows, ls_flow_table_bytes(b->flows) / 1e6, bc->wheel_slots,
	       (double)(1ULL << shift) * 1e9 / (double)b->hz, bc->link_bps / 1e9);
	return lsd_bridge_apply(b, pol);
}

/* The data path's lcores (bridge.lcores, the fabric port's first). */
static int
bridge_lcores(unsigned int lead)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;

	lsd_bset.n = bc->n_lcores > 0 ? bc->n_lcores : 1;
	lsd_bset.lcore[0] = lead;
	/* (main.c checked that the EAL runs them) */
	for (unsigned int i = 1; i < lsd_bset.n; i++)
		lsd_bset.lcore[i] = bc->lcores[i];
	lsd_bset.rss = lsd_bset.n > 1 && lsd.bridge_queues == lsd_bset.n;
	lsd_bset.soft = lsd_bset.n > 1 && !lsd_bset.rss;
	if (lsd_bset.n > 1)
		LSD_LOG(INFO, "bridge: %u lcores, %s spread by address pair (lead lcore %u)",
		       lsd_bset.n, lsd_bset.rss ? "RSS" : "soft", lead);
	return 0;
}

/*
 * A shaper at the fabric port's own line rate (or over it) shapes nothing:
 * the queue forms in the NIC and the next hop instead of the slices here,
 * and a latency slice loses its protection (the lab: a standing queue of
 * +13..18 us at the emulator's link). Said once at start, when the link is
 * up and says its speed; a link that comes up later is not watched.
 */
static void
link_rate_check(const struct lsd_port *fab, uint64_t link_bps)
{
	struct rte_eth_link l;

	if (rte_eth_link_get_nowait(fab->port_id, &l) != 0 || l.link_status != RTE_ETH_LINK_UP ||
	    l.link_speed == RTE_ETH_SPEED_NUM_NONE || l.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
		return;
	if (link_bps >= (uint64_t)l.link_speed * 1000000ULL)
		LSD_LOG(WARNING, "bridge: link_bps %.3f Gb/s is port %s's line rate (%.3f Gb/s) "
		       "or more: the queue forms past lockstepd, not in its slices; shape a "
		       "little under it (e.g. 98%%, docs/datapath.md)", link_bps / 1e9,
		       fab->conf->name, l.link_speed / 1e3);
}

int
lsd_bridge_init(void)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;
	const struct ls_policy *pol;
	int h, f, rc;

	if (!bc->enabled)
		return 0;
	h = ls_config_port_index(&lsd.cfg, bc->host_port);
	f = ls_config_port_index(&lsd.cfg, bc->fabric_port);
	rc = bridge_lcores(lsd.ports[f].lcore);
	if (rc < 0)
		return rc;
	/* the host's frames carry the host's MAC: take every frame */
	rte_eth_promiscuous_enable(lsd.ports[h].port_id);
	rte_eth_promiscuous_enable(lsd.ports[f].port_id);
	pol = lsd_bridge_policy_initial();
	if (pol == NULL)
		return -EINVAL;
	for (unsigned int i = 0; i < lsd_bset.n; i++) {
		rc = bridge_create(i, &lsd.ports[h], &lsd.ports[f], pol);
		if (rc < 0)
			return rc;
	}
	link_rate_check(&lsd.ports[f], bc->link_bps);
	return 0;
}

void
lsd_bridge_fini(void)
{
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		struct lsd_bridge *b = lsd_bridges[l];
		void *q[LSD_BURST];
		unsigned int n;

		if (b == NULL)
			continue;
		if (b->wheel != NULL)
			while ((n = ls_wheel_extract(b->wheel, UINT64_MAX, q, NULL, LSD_BURST)) > 0)
				rte_pktmbuf_free_bulk((struct rte_mbuf **)q, n);
		for (unsigned int s = 0; b->sched != NULL && s < ls_slice_count(b->sched); s++)
			while ((n = ls_slice_drain(b->sched, s, q, LSD_BURST)) > 0)
				rte_pktmbuf_free_bulk((struct rte_mbuf **)q, n);
		ls_wheel_free(b->wheel);
		ls_slice_free(b->sched);
		ls_flow_table_free(b->flows);
		lsd_cc_free(b);
		lsd_fo_free(b);
		lsd_bal_free(b);
		lsd_spread_free(b);
		rte_free(b);
		lsd_bridges[l] = NULL;
	}
	memset(&lsd_bset, 0, sizeof(lsd_bset));
}
