/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path (bridge.c) and its control (bridge_ctl.c): lockstepd as a
 * bump in the wire between a host port and a fabric port. See bridge.c for
 * the burst loop and docs/datapath.md for the design.
 *
 * Ownership: the lcore that polls both ports owns struct lsd_bridge (flow
 * table, pacing wheel, slice scheduler, counters). The control thread reads
 * counters and flow lines with plain loads (a view may be torn between two
 * counters, never unsafe: the memory lives as long as the daemon) and
 * changes policy only through LSD_MSG_POLICY on the lcore's ring.
 */
#ifndef LSD_BRIDGE_H
#define LSD_BRIDGE_H

#include <stdint.h>

#include <jansson.h>

#include <rte_ring.h>

#include "lockstepd.h"
#include "ls_flow.h"
#include "ls_roce.h"
#include "ls_policy.h"
#include "ls_slice.h"
#include "ls_wheel.h"

struct ls_ctl;

/* Data-path counters (written by the bridge lcore only). One list gives the
 * fields and their names in `bridge` replies. */
#define LSD_BRIDGE_COUNTERS(X) \
	X(rx_host)          /* frames from the host port */ \
	X(rx_fabric)        /* frames from the fabric port for the host */ \
	X(tx_fabric)        /* frames sent to the fabric */ \
	X(tx_host)          /* frames sent to the host */ \
	X(not_ip)           /* passed untouched: ARP, LLDP, other EtherTypes */ \
	X(bad_ip)           /* IP headers that make no sense: passed untouched */ \
	X(flows_new)        /* flows added */ \
	X(flows_full)       /* flow table full: frame passed unmanaged */ \
	X(flows_full_fabric) /* fabric-side flow not added: table 3/4 full */ \
	X(flows_aged)       /* flows forgotten after flow_idle_ms */ \
	X(paced)            /* frames of paced flows (held in the wheel when ahead of their rate) */ \
	X(pace_drops)       /* frames due later than pace_max_delay_us: dropped */ \
	X(wheel_full)       /* pacing wheel full: dropped */ \
	X(slice_drops)      /* slice queue full: dropped */ \
	X(tx_drops_fabric)  /* fabric TX queue full: dropped */ \
	X(tx_drops_host)    /* host TX queue full: dropped */ \
	X(steered)          /* frames whose entropy was rewritten */ \
	X(ce_from_host)     /* CE-marked frames from the host */ \
	X(ce_from_fabric)   /* CE-marked frames from the fabric */ \
	X(multi_seg)        /* chained mbufs forwarded (jumbo) */ \
	X(reclassified)     /* flows classified again after a policy change */ \
	X(cnp_sent)         /* CNPs sent for CE-marked RoCEv2 from the fabric (NP) */ \
	X(cnp_rate_limited) /* CE marks within a flow's CNP interval: no CNP */ \
	X(cnp_unpaired)     /* CE marks on a QP whose sender QP is not known yet */ \
	X(cnp_no_mbuf)      /* CNPs not sent: no mbuf or burst full */ \
	X(cnp_received)     /* CNPs from the fabric (RP) */ \
	X(cnp_unmatched)    /* CNPs for no flow under DCQCN here */ \
	X(cnp_held)         /* CNPs for a QP not paired yet: held for its first ACK */ \
	X(cnp_held_applied) /* ... applied when that ACK came within 4 T */ \
	X(cnp_fair_skipped) /* not applied: the QP below 7/8 of its pair's mean \
			     * rate (cc.ai_share, bridge_cc.c) */ \
	X(cnp_drain_skipped) /* not applied: the pair already sends below 3/4 of \
			      * what its ACKs say the fabric delivers (ai_share) */ \
	X(cnp_floored)      /* applied, but the cut stopped at that floor */ \
	X(qp_pairs_learnt)  /* QP pairings learnt from RC ACKs */ \
	X(qp_pairs_full)    /* address pairs not tracked: table full */ \
	X(qp_pairs_aged)    /* address pairs forgotten after flow_idle_ms unused */ \
	X(repaths)          /* flows moved off a path their requests went unacked on */ \
	X(repath_returns)   /* moved flows back on their own path after hold_ms */ \
	X(repath_exhausted) /* silent on every path since their last ACK: left in place */ \
	X(repaths_probe)    /* flows moved off a path the probe mesh found silent */ \
	X(probe_silences)   /* probe paths found silent (each marks the data paths on its route) */ \
	X(route_icmp)       /* ICMP errors about our path discovery: kept, not forwarded */ \
	X(balanced)         /* flows moved off a hot path (bridge.balance) */ \
	X(spread_out)       /* frames handed to the lcore their address pair goes to */ \
	X(spread_drops_host) /* ... from the host, dropped: that lcore's ring was full */ \
	X(spread_drops_fabric) /* ... from the fabric, the same */ \
	X(spread_to_lead)   /* RSS: frames for lockstepd read on another lcore's queue */ \
	X(fo_notes_lost)    /* probe marks another lcore missed: its ring was full */

struct lsd_bridge_stats {
#define X(n) uint64_t n;
	LSD_BRIDGE_COUNTERS(X)
#undef X
};

/* The two sides of the data path, as indexes of lsd_bridge's rings. */
enum { LSD_HOST, LSD_FAB };

struct lsd_bridge {
	struct lsd_port *host, *fab;
	/* Many cores (bridge_spread.c). The lead (index 0, the fabric port's
	 * lcore) reads and writes the ports' queue 0; in the soft spread it
	 * hands each frame to the lcore its address pair goes to through
	 * in[], and sends what the others put on their out[]. In the RSS
	 * spread each lcore reads and writes its own queue, and hands what
	 * is not its own to its owner's in[]. */
	uint16_t q;                         /* the ports' queue this lcore uses */
	uint8_t li;                         /* index among the data path's lcores */
	bool ring_io;                       /* frames come and go through in[]/out[] */
	bool spreads;                       /* sorts what it reads by owner (lsd_spread_out) */
	bool rss;                           /* the RSS spread: reads its in[] after its queue */
	struct rte_ring *in[2], *out[2];    /* by side: to this lcore; soft: this -> lead */
	struct rte_ring *notes;             /* lead -> this: failover's probe marks */
	struct ls_flow_table *flows;
	struct ls_wheel *wheel;
	struct ls_slice_sched *sched;       /* toward the fabric */
	const struct ls_policy *policy;     /* current; swapped by LSD_MSG_POLICY */
	/* per scheduler slice index: */
	uint64_t slice_tpb[LS_SLICE_MAX];   /* per-flow pacing, ticks/byte 32.32 */
	int16_t slice_pol[LS_SLICE_MAX];    /* its policy slice, -1 when unused */
	uint16_t def_slice;                 /* scheduler index of "default" */
	uint64_t hz;
	uint64_t max_delay;                 /* pace_max_delay_us in ticks */
	uint64_t ms_div;                    /* ticks per ms (flow ageing clock) */
	uint64_t next_age;                  /* tsc of the next ageing step */
	uint32_t fabric_flow_max;           /* fabric-side flows stop here */
	uint16_t sport_base, n_paths;
	uint16_t gen;                       /* policy generation: bumped by each change */
	struct ls_roce_shift_cache roce;    /* ICRC update: the shift for a UDP length */
	struct lsd_cc *cc;                  /* congestion control (bridge_cc.c) */
	struct lsd_lcore *lc;               /* the lcore (its probes feed the delay mode) */
	bool cc_on;                         /* a slice has cc or np */
	bool cc_delay;                      /* a slice has the delay mode: its data
					     * paths are traced (route.c) to pair them
					     * with probe paths */
	bool fo_on;                         /* failover (bridge_fo.c) */
	bool fo_probe_live;                 /* a probe mark may live: frames look */
	bool roce_track;                    /* cc_on or fo_on: RoCEv2 requests and ACKs
					     * are followed (bridge_cc.c) */
	struct lsd_fo *fo;                  /* failover state */
	bool fab_drained;                   /* the last fabric burst was not full: no reply
					     * waits unread (bridge_fo.c judges probe silence) */
	uint64_t fab_last_rx;               /* tsc of the last frame from the fabric */
	uint64_t fab_resumed;               /* tsc when frames came again after a pause */
	uint64_t fab_resumed_long;          /* ... after one of 2 fab_pause (a silence_us) */
	uint64_t fab_pause;                 /* a quiet longer than this is a pause (tsc) */
	uint64_t fo_unlogged;               /* moves not in the event log (control thread) */
	uint64_t slice_ce[LS_SLICE_MAX];    /* CE-marked frames per slice (both ways) */
	uint64_t path_ce[LS_POLICY_MAX_PATHS]; /* CE from the fabric by the sender's path */
	struct lsd_bridge_stats st;
	uint64_t *bal_allowed;              /* per flow: the paths its policy allows
					     * (bridge_bal.c; NULL when balance is off) */
};

extern struct lsd_bridge *lsd_bridges[RTE_MAX_LCORE];

/* The data path's lcores in order, the lead first (bridge_spread.c). */
struct lsd_bridge_set {
	unsigned int n;
	unsigned int lcore[LS_BRIDGE_MAX_LCORES];
	struct lsd_bridge *b[LS_BRIDGE_MAX_LCORES];
	bool soft;                          /* the soft spread */
	bool rss;                           /* the RSS spread (neither: one lcore) */
};
extern struct lsd_bridge_set lsd_bset;

/* A rate split n ways, as every lcore's share starts. */
static inline uint64_t
lsd_share_of(uint64_t bps, unsigned int n)
{
	return n > 1 ? bps / n : bps;
}

/* bridge_share.c: the link and the slices split among the lcores by demand
 * (control thread: lsd_share_poll; lcore: lsd_share_apply, LSD_MSG_SHARE) */
struct lsd_share_msg {
	uint32_t link;                      /* of bridge.link_bps, LS_SLICE_SHARE_ONE */
	uint32_t slice[LS_SLICE_MAX];       /* by scheduler index; 0 = leave */
};
void lsd_share_poll(void);
int lsd_share_apply(struct lsd_bridge *b, const struct lsd_share_msg *m);
json_t *lsd_share_json(void);

/* bridge_spread.c (lcore) */
int lsd_spread_create(struct lsd_bridge *b);
void lsd_spread_free(struct lsd_bridge *b);
/* Keep this lcore's frames of m[0..n), hand the others to theirs (the
 * soft spread's lead; every lcore of the RSS spread, which also hands the
 * fabric's frames for lockstepd to the lead); the count kept. */
uint16_t lsd_spread_out(struct lsd_bridge *b, int side, struct rte_mbuf **m, uint16_t n);
/* Lead, soft spread: send what the other lcores left on their out rings. */
void lsd_spread_drain(struct lsd_bridge *b, unsigned int *work);
/* RSS spread: append what other lcores handed this one (m[n..max)). */
static inline uint16_t
lsd_spread_in(struct lsd_bridge *b, int side, struct rte_mbuf **m, uint16_t n, uint16_t max)
{
	return n + (uint16_t)rte_ring_sc_dequeue_burst(b->in[side], (void **)&m[n], max - n, NULL);
}
/* Rings held (for `bridge`'s held): frames on the out rings. */
uint64_t lsd_spread_held(const struct lsd_bridge *b);

/* A burst from a side: the port's queue, or the lead's ring. */
static inline uint16_t
lsd_bridge_rx(struct lsd_bridge *b, int side, struct rte_mbuf **m, uint16_t n)
{
	struct lsd_port *p = side == LSD_HOST ? b->host : b->fab;

	if (b->ring_io)
		return (uint16_t)rte_ring_sc_dequeue_burst(b->in[side], (void **)m, n, NULL);
	return ls_app_rx_q(&p->gate, p->port_id, b->q, m, n);
}

/* Frames to a side: the port's queue, or the ring the lead sends from
 * (the lead counts them sent when the port takes them). What is not taken
 * is dropped and counted; the count taken is returned. */
static inline uint16_t
lsd_bridge_send(struct lsd_bridge *b, int side, struct rte_mbuf **m, uint16_t n)
{
	struct lsd_port *p = side == LSD_HOST ? b->host : b->fab;
	uint16_t sent;

	if (b->ring_io) {
		sent = (uint16_t)rte_ring_sp_enqueue_burst(b->out[side], (void **)m, n, NULL);
	} else {
		sent = ls_app_tx_q(&p->gate, p->port_id, b->q, m, n);
		*(side == LSD_HOST ? &b->st.tx_host : &b->st.tx_fabric) += sent;
	}
	if (unlikely(sent < n)) {
		*(side == LSD_HOST ? &b->st.tx_drops_host : &b->st.tx_drops_fabric) += n - sent;
		rte_pktmbuf_free_bulk(&m[sent], n - sent);
	}
	return sent;
}

/* bridge.c (lcore) */
int lsd_bridge_init(void);
void lsd_bridge_fini(void);
/* One pass of the bridge lcore: both ports' bursts, the wheel, the slices. */
void lsd_bridge_poll(struct lsd_lcore *lc, struct lsd_bridge *b, unsigned int *work);
/* Apply a new policy (LSD_MSG_POLICY). */
int lsd_bridge_apply(struct lsd_bridge *b, const struct ls_policy *pol);

/* bridge_cc.c (lcore; lsd_cc_flow_json for the control thread) */
struct lsd_cc;
int lsd_cc_create(struct lsd_bridge *b, int socket);
void lsd_cc_free(struct lsd_bridge *b);
void lsd_cc_apply_slice(struct lsd_bridge *b, unsigned int k, const struct ls_policy_slice *s);
void lsd_cc_flow_init(struct lsd_bridge *b, int32_t idx, uint16_t slice, uint64_t now);
uint64_t lsd_cc_tpb(struct lsd_bridge *b, struct ls_flow *f, int32_t idx,
		    const struct ls_flow_pkt *pk, uint64_t now);
void lsd_cc_sent(struct lsd_bridge *b, const struct ls_flow *f, int32_t idx, uint32_t len,
		 uint64_t now);
bool lsd_cc_mode_on(const struct lsd_bridge *b, uint16_t slice);
void lsd_cc_from_host(struct lsd_bridge *b, const uint8_t *fr, const struct ls_flow_pkt *pk,
		      struct ls_flow *f);
const void *lsd_cc_line(const struct lsd_bridge *b, int32_t idx);
void lsd_cc_age(struct lsd_bridge *b, uint32_t now_ms, uint32_t idle_ms, unsigned int n);
void lsd_cc_from_fabric(struct lsd_bridge *b, const uint8_t *fr, const struct ls_flow_pkt *pk,
			int32_t idx, uint64_t now);
void lsd_cc_flush(struct lsd_bridge *b);
json_t *lsd_cc_flow_json(const struct lsd_bridge *b, int32_t idx, const struct ls_flow *f);

/* bridge_fo.c (lcore; lsd_fo_flow_json for the control thread) */
struct lsd_fo;
int lsd_fo_create(struct lsd_bridge *b, int socket);
void lsd_fo_free(struct lsd_bridge *b);
void lsd_fo_flow_init(struct lsd_bridge *b, int32_t idx);
/* Only for flows with f->heard: their state line is touched then only. */
void lsd_fo_request(struct lsd_bridge *b, struct ls_flow *f, int32_t idx,
		    const struct ls_flow_pkt *pk, uint64_t now);
void lsd_fo_ack(struct lsd_bridge *b, int32_t idx, uint64_t now);
void lsd_fo_frame(struct lsd_bridge *b, struct ls_flow *f, int32_t idx,
		  const struct ls_flow_pkt *pk, uint64_t now);
void lsd_fo_probe_path(struct lsd_bridge *b, const struct lsd_peer *peer,
		       struct lsd_peer_path *pp, uint64_t data_paths, uint64_t now_ns);
void lsd_fo_probe_heard(struct lsd_bridge *b, const struct lsd_peer *peer,
			uint64_t data_paths);
json_t *lsd_fo_flow_json(const struct lsd_bridge *b, int32_t idx);
/* Another data-path lcore: the lead's probe marks, applied to its own. */
void lsd_fo_notes(struct lsd_bridge *b);
/* Control thread: the lcore's moves since the last call, as path.silent events. */
void lsd_fo_events_poll(struct lsd_bridge *b);

/* bridge_bal.c: contention avoidance (lcore: create, classified, apply;
 * the rest on the control thread) */
int lsd_bal_create(struct lsd_bridge *b, int socket);
void lsd_bal_free(struct lsd_bridge *b);
void lsd_bal_classified(struct lsd_bridge *b, int32_t idx, const struct ls_path_policy *pp);
int lsd_bal_apply(struct lsd_bridge *b, const void *order);
int lsd_bal_ctl_init(unsigned int lcore);
void lsd_bal_ctl_fini(void);
void lsd_bal_poll(void);
json_t *lsd_bal_json(void);
int lsd_bal_register(struct ls_ctl *ctl);

/* bridge_ctl.c (control thread) */
/* The starting policy: the state file's, else the config's; NULL on error. */
const struct ls_policy *lsd_bridge_policy_initial(void);
int lsd_bridge_register(struct ls_ctl *ctl);
void lsd_bridge_ctl_fini(void);
json_t *lsd_bridge_status_json(void);
void lsd_bridge_events_poll(void);

#endif /* LSD_BRIDGE_H */
