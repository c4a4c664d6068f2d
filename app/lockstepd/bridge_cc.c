/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control in the data path (lib/cc does the arithmetic): the
 * bridge lcore's per-flow CC state, the notification point (CNPs for
 * CE-marked RoCEv2 arriving from the fabric) and the reaction point (CNPs
 * from the fabric slow the host's paced flows down).
 *
 * Who gets a CNP. A CNP goes to the *sender's* QP, which frames toward our
 * host do not carry (their BTH names our host's QP). A device in the wire
 * learns the pairing from RC's acknowledgements: an ACK carries the PSN of
 * the request it acknowledges. Each RoCEv2 flow (frames toward one QP) keeps
 * the PSN of its last request in its flow line (ls_flow.cc); per pair of
 * addresses a set holds the QPs seen each way. An ACK from the host (to QP
 * X, PSN q) pairs X with the host's QP Y whose last request from the fabric
 * had PSN q (or a little more: requests may have moved on while the ACK was
 * on its way), and symmetrically for ACKs from the fabric. PSNs start at
 * random 24-bit values, so a wrong pairing needs two QPs of one address pair
 * within the window of each other. Until a QP is paired its CE marks are
 * counted (cnp_unpaired) and no CNP is sent: a CNP to a guessed QP would slow
 * a flow that did nothing. Frames that are not RC (UD, no ACKs) never pair.
 *
 * Cost: a request touches only its flow's lines (the pair table once, when
 * the flow starts); an ACK looks up its address pair and the flows of the
 * set's QPs (up to 32, in one bulk lookup). ACKs are the rarer frames:
 * RC acknowledges several requests at once.
 *
 * Memory: one 64-byte line per flow (parallel to the flow table) and a set
 * of 32 QPs each way per address pair in an rte_hash (an eighth as many
 * pairs as flows, forgotten after flow_idle_ms unused); sized at start, no
 * allocation per packet. CNPs are built in mbufs from the daemon's pool
 * and leave on the fabric port at the end of the burst, ahead of the
 * slices (they are control frames).
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "bridge.h"
#include "ls_cc.h"

#define QP_SET 32             /* QPs remembered per address pair and direction:
			       * collectives open several per pair of hosts (NCCL
			       * a QP per channel; 32 flows of one host pair
			       * overran a set of 16: every CNP unmatched) */
#define PSN_WINDOW 1024       /* requests an ACK may lag behind, to pair */
#define PAIRED_WINDOW (1u << 16) /* ... once paired: a queue holds many (a
				 * stale pairing passes one time in 256) */
#define PSN_MASK 0xffffff
#define OP_RC_ACK 0x11        /* BTH opcode: RC Acknowledge */
#define CNP_DSCP 48           /* ConnectX's default cnp_dscp */
#define SHARE_SHIFT 10        /* qp_side.cnp_t: TSC in 1024-tick units */
#define CNP_HELD 2u           /* qp_side.cnp_t: a CNP waits for the QP's pairing */
#define HELD_TIMERS 4         /* ... and is applied if the ACK comes within 4 T */
#define FAIR_MS 100           /* a QP counts in its pair's view while its flow
			       * sent within this many ms (pair_view) */
#define SHARE_TIMERS 20       /* a QP shares its pair's increase while it got a
			       * CNP within this many increase timers (T) */
#define DLV_STALE_TIMERS 4    /* a delivered rate older than this many T is not used */

/* ls_flow.cc of a RoCEv2 flow: its QP is in its pair's set (as of the
 * ageing epoch in bits 24..29); a request was seen and bits 0..23 hold the
 * last one's PSN. */
#define CCW_KNOWN (1u << 31)
#define CCW_PSN (1u << 30)
#define CCW_EPOCH(w) ((w) >> 24 & 0x3f)

struct qp_side {
	uint32_t qp;              /* 24 bits; 0: empty (QP0 carries no RoCEv2 data) */
	uint32_t peer;            /* the QP at the other end, 0 until paired */
	uint32_t cnp_t;           /* RP, host's QPs: TSC >> SHARE_SHIFT of its last
				   * CNP in bits 2..31, bit 0 set (0: none), bit 1
				   * CNP_HELD: it came before the QP was paired */
};

/* QPs between one local (host) and one remote address. */
struct qp_set {
	struct qp_side loc[QP_SET]; /* the host's QPs (frames from the fabric name them) */
	struct qp_side rem[QP_SET]; /* the remote QPs (frames from the host name them) */
	uint32_t last_ms;             /* last used (ageing) */
	uint8_t next_loc, next_rem;   /* round-robin replacement */
	uint8_t used;                 /* the pairs table holds this position */
	/* RP: what the fabric delivers to the pair, from the host's ACKed
	 * requests (dlv_note); times in qp_side.cnp_t units */
	uint32_t dlv_t0;              /* the window's start, 0: none open */
	uint32_t dlv_acc;             /* bytes ACKed in it */
	uint32_t dlv_kbps;            /* the last closed window's rate */
	uint32_t dlv_t;               /* when it closed, 0: never */
};

struct pair_key {
	uint8_t local[16], remote[16];
	uint16_t vid;
	uint8_t family, pad;
};

/* One flow's congestion state: 64 bytes beside its 64-byte flow line. */
struct lsd_cc_flow {
	union {
		struct ls_dcqcn dcqcn;
		struct ls_cc_delay delay;
	};
	uint64_t last_cnp;        /* NP: when this flow's sender last got a CNP */
	uint32_t cnps;            /* CNPs sent for it (NP) or received (RP) */
	uint32_t paced_kbps;      /* the rate the flow's tpb was computed for */
};

struct lsd_cc {
	struct lsd_cc_flow *flow;  /* [max_flows] */
	struct rte_hash *pairs;
	struct qp_set *sets;
	uint32_t n_pairs, max_pairs;  /* a full cuckoo table's failed add is
				       * expensive: past max, only look up */
	uint32_t age_iter;            /* the ageing sweep's next position */
	uint32_t n_sets;              /* positions in the table and sets[] */
	uint32_t now_ms;              /* the table clock at the last sweep step */
	uint8_t epoch;                /* bumped by a sweep that forgot a pair: flows
				       * register their QP again (ls_flow.cc) */
	bool aged_this_sweep;
	struct ls_dcqcn_params dq[LS_SLICE_MAX];
	struct ls_cc_delay_params dl[LS_SLICE_MAX];
	uint64_t cnp_ticks[LS_SLICE_MAX];
	uint64_t max_bps[LS_SLICE_MAX]; /* the slice's ceiling, 0: the link */
	uint8_t mode[LS_SLICE_MAX];
	bool np[LS_SLICE_MAX];
	bool share[LS_SLICE_MAX];       /* cc.ai_share: pair_share */
	uint32_t share_w[LS_SLICE_MAX]; /* SHARE_TIMERS T, in cnp_t units */
	uint32_t held_w[LS_SLICE_MAX];  /* HELD_TIMERS T, in cnp_t units */
	struct rte_mbuf *out[LSD_BURST]; /* CNPs built this burst */
	unsigned int n_out;
};

_Static_assert(sizeof(struct lsd_cc_flow) == 64, "one cache line per flow");

int
lsd_cc_create(struct lsd_bridge *b, int socket)
{
	uint32_t n = lsd.cfg.bridge.max_flows;
	char name[32];
	struct rte_hash_parameters hp = {
		.name = name, .entries = n / 8 < 1024 ? 1024 : n / 8,
		.key_len = sizeof(struct pair_key), .hash_func = rte_hash_crc,
		.socket_id = socket,
	};

	snprintf(name, sizeof(name), "lsd_qp_pairs_%u", lsd_bset.lcore[b->li]);
	b->cc = rte_zmalloc_socket("lsd_cc", sizeof(*b->cc), 64, socket);
	if (b->cc == NULL)
		return -ENOMEM;
	b->cc->flow = rte_zmalloc_socket("lsd_cc_flow", sizeof(struct lsd_cc_flow) * n, 64,
					 socket);
	b->cc->sets = rte_zmalloc_socket("lsd_qp_sets", sizeof(struct qp_set) * hp.entries, 64,
					 socket);
	b->cc->pairs = rte_hash_create(&hp);
	b->cc->n_sets = hp.entries;
	/* cuckoo tables fill to about 90% before an add fails */
	b->cc->max_pairs = hp.entries / 10 * 9;
	if (b->cc->flow == NULL || b->cc->sets == NULL || b->cc->pairs == NULL)
		return -ENOMEM;
	return 0;
}

void
lsd_cc_free(struct lsd_bridge *b)
{
	if (b->cc == NULL)
		return;
	rte_hash_free(b->cc->pairs);
	rte_free(b->cc->sets);
	rte_free(b->cc->flow);
	rte_free(b->cc);
	b->cc = NULL;
}

/* The slice k's settings from its policy entry. */
void
lsd_cc_apply_slice(struct lsd_bridge *b, unsigned int k, const struct ls_policy_slice *s)
{
	struct lsd_cc *cc = b->cc;
	const struct ls_policy_cc *c = &s->cc;
	uint64_t max = s->conf.max_bps ? s->conf.max_bps : lsd.cfg.bridge.link_bps;
	struct ls_dcqcn_params *d = &cc->dq[k];

	if (s->flow_bps != 0 && s->flow_bps < max)
		max = s->flow_bps; /* a paced slice's per-flow rate is the ceiling */
	cc->mode[k] = c->mode;
	cc->np[k] = c->np;
	cc->max_bps[k] = max;
	cc->cnp_ticks[k] = b->hz / 1000000 * c->cnp_interval_us;
	ls_dcqcn_defaults(d, b->hz, max);
	d->ai_bps = c->ai_bps;
	d->hai_bps = c->hai_bps;
	d->min_bps = c->min_bps;
	d->g = LS_CC_ONE / c->g_inv;
	d->alpha_ticks = b->hz / 1000000 * c->k_us;
	d->timer_ticks = b->hz / 1000000 * c->t_us;
	d->byte_reset = (uint32_t)c->byte_reset;
	d->f = c->f;
	d->min_dec_pct = c->min_dec_pct;
	d->clamp_tgt = c->clamp_tgt;
	cc->share[k] = c->ai_share;
	cc->share_w[k] = (uint32_t)RTE_MIN((d->timer_ticks * SHARE_TIMERS) >> SHARE_SHIFT,
					   (uint64_t)UINT32_MAX / 2);
	cc->held_w[k] = (uint32_t)RTE_MIN((d->timer_ticks * HELD_TIMERS) >> SHARE_SHIFT,
					  (uint64_t)UINT32_MAX / 2);
	ls_cc_delay_defaults(&cc->dl[k], b->hz, max);
	cc->dl[k].target_ns = (uint64_t)c->target_us * 1000;
	cc->dl[k].interval = b->hz / 1000000 * c->interval_us;
	cc->dl[k].beta = (uint32_t)((uint64_t)LS_CC_ONE * c->beta_pct / 100);
	cc->dl[k].min_bps = c->min_bps;
	cc->dl[k].ai_bps = c->ai_bps;
}

/* A flow starts (or is classified again): line rate of its slice, idle. */
void
lsd_cc_flow_init(struct lsd_bridge *b, int32_t idx, uint16_t slice, uint64_t now)
{
	struct lsd_cc_flow *c = &b->cc->flow[idx];

	memset(c, 0, sizeof(*c));
	if (b->cc->mode[slice] == LS_CC_DCQCN)
		ls_dcqcn_init(&c->dcqcn, &b->cc->dq[slice], now);
	else if (b->cc->mode[slice] == LS_CC_DELAY)
		ls_cc_delay_init(&c->delay, &b->cc->dl[slice]);
}

/* Whether slice's flows are paced by a congestion-control loop. */
bool
lsd_cc_mode_on(const struct lsd_bridge *b, uint16_t slice)
{
	return b->cc->mode[slice] != LS_CC_OFF;
}

/* Delay mode: once per interval, the forward queueing delay of the flow's
 * path toward its destination (a peer the probe mesh measures; the probe
 * paths paired with its data path, lsd_peer_queue_ns; the worst of its
 * paths when the flow is not steered). No sample, no change; and a
 * change waits for a probe sent after the last one, which sees what the
 * change did (Swift's once per RTT): acting again on the queue the change
 * was already answering cut the rate twice for it, and the link idled. */
static uint64_t
delay_rate(struct lsd_bridge *b, const struct ls_flow *f, struct lsd_cc_flow *c,
	   const struct ls_flow_pkt *pk, uint64_t now)
{
	const struct ls_cc_delay_params *p = &b->cc->dl[f->slice];
	struct ls_addr a = {.family = pk->key.family == 6 ? LS_AF_INET6 : LS_AF_INET};
	uint64_t at = 0;
	int64_t q;

	if (c->delay.last != 0 && now - c->delay.last < p->interval)
		return c->delay.rate;
	if (pk->key.family == 6)
		memcpy(a.a, pk->key.dst, 16);
	else
		memcpy(a.a, pk->key.dst + 12, 4);
	/* samples older than 50 ms describe a queue that may be gone */
	q = lsd_peer_queue_ns(b->lc, &a, f->path, now, b->hz / 20, (int64_t)p->target_ns, &at);
	if (q < 0 || (c->delay.last != 0 && at <= c->delay.last))
		return c->delay.rate;
	return ls_cc_delay_on_sample(&c->delay, p, now, (uint64_t)q);
}

/* The pacing rate of a flow under congestion control, as ticks per byte;
 * recomputed (a 128-bit division) only when the rate moved. */
uint64_t
lsd_cc_tpb(struct lsd_bridge *b, struct ls_flow *f, int32_t idx, const struct ls_flow_pkt *pk,
	   uint64_t now)
{
	struct lsd_cc_flow *c = &b->cc->flow[idx];
	uint64_t rate = b->cc->mode[f->slice] == LS_CC_DCQCN ?
		ls_dcqcn_on_send(&c->dcqcn, &b->cc->dq[f->slice], now, 0) :
		delay_rate(b, f, c, pk, now);
	uint32_t kbps = (uint32_t)(rate / 1000);

	if (kbps != c->paced_kbps || f->tpb == 0) {
		uint64_t tpb = ls_wheel_tpb(b->hz, rate);

		/* the wait for its next frame was set at the old rate */
		ls_wheel_pace_rescale(&f->pace, f->tpb, tpb, now);
		c->paced_kbps = kbps;
		f->tpb = tpb;
	}
	return f->tpb;
}

static struct qp_set *
qp_set_of(struct lsd_bridge *b, const struct ls_flow_key *k, bool from_host)
{
	struct pair_key pk = {.vid = k->vid, .family = k->family};
	int32_t i;

	memcpy(pk.local, from_host ? k->src : k->dst, 16);
	memcpy(pk.remote, from_host ? k->dst : k->src, 16);
	i = rte_hash_lookup(b->cc->pairs, &pk);
	if (i < 0) {
		i = b->cc->n_pairs < b->cc->max_pairs ? rte_hash_add_key(b->cc->pairs, &pk) : -ENOSPC;
		if (i < 0) {
			b->st.qp_pairs_full++;
			return NULL;
		}
		b->cc->n_pairs++;
		memset(&b->cc->sets[i], 0, sizeof(b->cc->sets[i]));
		b->cc->sets[i].used = 1;
	}
	b->cc->sets[i].last_ms = b->cc->now_ms;
	return &b->cc->sets[i];
}

static struct qp_side *
side_find(struct qp_side *s, uint32_t qp)
{
	for (unsigned int i = 0; i < QP_SET; i++)
		if (s[i].qp == qp)
			return &s[i];
	return NULL;
}

/* qp is in the set (a new QP replaces the oldest). */
static struct qp_side *
side_note(struct qp_side *s, uint8_t *next, uint32_t qp)
{
	struct qp_side *e = side_find(s, qp);

	if (e == NULL) {
		e = &s[*next];
		*next = (uint8_t)((*next + 1) % QP_SET);
		*e = (struct qp_side){.qp = qp};
	}
	return e;
}

/* A request of flow f toward qp with psn: the flow keeps the PSN; its QP
 * joins the address pair's set the first time. */
static void
note_request(struct lsd_bridge *b, struct ls_flow *f, const struct ls_flow_key *k,
	     bool from_host, uint32_t qp, uint32_t psn)
{
	uint32_t was = f->cc, epoch = b->cc->epoch & 0x3f;
	struct qp_set *s;

	f->cc = CCW_KNOWN | CCW_PSN | epoch << 24 | psn;
	if ((was & CCW_KNOWN) && CCW_EPOCH(was) == epoch)
		return;
	s = qp_set_of(b, k, from_host);
	if (s == NULL)
		return; /* table full: try again after a sweep forgets pairs (the
			 * epoch), not a lookup per frame until then */
	if (from_host)
		side_note(s->rem, &s->next_rem, qp);
	else
		side_note(s->loc, &s->next_loc, qp);
}

/* The key of the flow that runs the other way from a frame with key ack:
 * its addresses swapped, toward qp (ACKs and CNPs name one QP; the
 * requests they answer go to its peer). */
static void
peer_key(const struct ls_flow_key *ack, uint32_t qp, struct ls_flow_key *k)
{
	*k = *ack;
	memcpy(k->src, ack->dst, 16);
	memcpy(k->dst, ack->src, 16);
	k->qp_label = rte_cpu_to_be_32(qp);
}

/* An ACK (key ack, PSN q) sent to QP `to` (on side to_side) acknowledges
 * requests its sender's QP got: the one on the other side whose flow's last
 * request is q or a little past it. Those flows run the other way: the
 * ACK's key with its addresses swapped and that QP. Pair the two.
 * @return the acknowledged flow's index, -1 when none matched. */
static int32_t
side_pair(struct lsd_bridge *b, struct qp_side *to_side, uint8_t *next, struct qp_side *other,
	  const struct ls_flow_key *ack, uint32_t to, uint32_t q)
{
	struct ls_flow_key k[QP_SET];
	const struct ls_flow_key *kp[QP_SET];
	struct qp_side *cand[QP_SET], *best = NULL, *t = side_note(to_side, next, to);
	uint32_t best_d = PSN_WINDOW;
	int32_t idx[QP_SET], best_idx = -1;
	unsigned int n = 0;

	if (t->peer != 0) {
		/* paired: its flow, while the ACK is not ahead of its requests
		 * and within PAIRED_WINDOW behind (a deep queue holds more than
		 * PSN_WINDOW of a QP's requests; a lookup, not 32) */
		const struct ls_flow_key *kp = &k[0];
		uint32_t w;

		peer_key(ack, t->peer, &k[0]);
		ls_flow_lookup_bulk(b->flows, &kp, 1, &idx[0]);
		w = idx[0] >= 0 ? ls_flow_at(b->flows, idx[0])->cc : 0;
		if ((w & CCW_PSN) && ((w - q) & PSN_MASK) < PAIRED_WINDOW)
			return idx[0];
	}
	for (unsigned int i = 0; i < QP_SET; i++) {
		if (other[i].qp == 0)
			continue;
		peer_key(ack, other[i].qp, &k[n]);
		kp[n] = &k[n];
		cand[n++] = &other[i];
	}
	if (n == 0)
		return -1;
	ls_flow_lookup_bulk(b->flows, kp, n, idx);
	for (unsigned int i = 0; i < n; i++) {
		uint32_t w = idx[i] >= 0 ? ls_flow_at(b->flows, idx[i])->cc : 0;
		uint32_t d = (w - q) & PSN_MASK;

		if ((w & CCW_PSN) && d < best_d) {
			best = cand[i];
			best_d = d;
			best_idx = idx[i];
		}
	}
	if (best == NULL || (best->peer == to && t->peer == best->qp))
		return best_idx;
	best->peer = to;
	t->peer = best->qp;
	b->st.qp_pairs_learnt++;
	return best_idx;
}

static uint32_t
bth_qp(const uint8_t *bth)
{
	return (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
}

static uint32_t
bth_psn(const uint8_t *bth)
{
	return (uint32_t)bth[9] << 16 | (uint32_t)bth[10] << 8 | bth[11];
}

/* A RoCEv2 frame of flow f from the host: requests note their PSN toward
 * the remote QP; ACKs pair the remote QP they go to with the host's QP
 * acked. */
void
lsd_cc_from_host(struct lsd_bridge *b, const uint8_t *fr, const struct ls_flow_pkt *pk,
		 struct ls_flow *f)
{
	const uint8_t *bth = fr + pk->bth_off;
	uint32_t qp = bth_qp(bth), psn = bth_psn(bth);
	struct qp_set *s;

	if (qp == 0 || pk->bth_opcode == LS_ROCE_OPCODE_CNP)
		return;
	if (pk->bth_opcode != OP_RC_ACK) {
		note_request(b, f, &pk->key, true, qp, psn);
		return;
	}
	s = qp_set_of(b, &pk->key, true);
	if (s != NULL)
		side_pair(b, s->rem, &s->next_rem, s->loc, &pk->key, qp, psn);
}

/* Flow idx's frame of len bytes goes (the pacer took it): DCQCN's byte
 * counter counts it. A stage it completes moves the rate at the next frame. */
void
lsd_cc_sent(struct lsd_bridge *b, const struct ls_flow *f, int32_t idx, uint32_t len,
	    uint64_t now)
{
	if (b->cc->mode[f->slice] == LS_CC_DCQCN)
		ls_dcqcn_on_send(&b->cc->flow[idx].dcqcn, &b->cc->dq[f->slice], now, len);
}

/*
 * Forget address pairs unused (no ACK, CNP, CE or new QP) for idle_ms,
 * looking at n positions of the table: it would otherwise fill
 * (qp_pairs_full) and new pairs go unlearnt. A sweep that forgot any bumps
 * the epoch, so the flows of a forgotten pair register their QPs again with
 * their next request. A cursor over positions, not rte_hash_iterate: that
 * walks on to the next key, the whole table when it is empty, which at
 * 1 M flows (131,072 positions) took 11% of the data path's core from
 * TCP-only traffic, a full walk every millisecond.
 */
void
lsd_cc_age(struct lsd_bridge *b, uint32_t now_ms, uint32_t idle_ms, unsigned int n)
{
	struct lsd_cc *cc = b->cc;
	void *key;

	cc->now_ms = now_ms;
	for (; n > 0; n--) {
		struct qp_set *s = &cc->sets[cc->age_iter];

		if (s->used && now_ms - s->last_ms > idle_ms &&
		    rte_hash_get_key_with_position(cc->pairs, (int32_t)cc->age_iter, &key) == 0 &&
		    rte_hash_del_key(cc->pairs, key) >= 0) {
			s->used = 0;
			cc->n_pairs--;
			cc->aged_this_sweep = true;
			b->st.qp_pairs_aged++;
		}
		if (++cc->age_iter >= cc->n_sets) {
			cc->age_iter = 0;
			if (cc->aged_this_sweep)
				cc->epoch++;
			cc->aged_this_sweep = false;
		}
	}
}

/* The flow's congestion line, for the burst loop's prefetch. */
const void *
lsd_cc_line(const struct lsd_bridge *b, int32_t idx)
{
	return &b->cc->flow[idx];
}

/* Notification point: a CNP to the sender of a CE-marked frame, at most one
 * per flow per interval, once its QP is known. */
static void
send_cnp(struct lsd_bridge *b, const uint8_t *fr, const struct ls_flow_pkt *pk,
	 uint32_t dest_qp)
{
	struct ls_roce_cnp_params cp = {.dscp = CNP_DSCP, .pkey = 0xffff, .dest_qp = dest_qp,
					.sport = (uint16_t)(b->sport_base)};
	uint32_t l2 = pk->l3_off;
	struct rte_mbuf *m;
	uint8_t *o;
	int n;

	if (b->cc->n_out == LSD_BURST || (m = rte_pktmbuf_alloc(lsd.pool)) == NULL) {
		b->st.cnp_no_mbuf++;
		return;
	}
	/* back where the frame came from: our host's address to its sender */
	o = rte_pktmbuf_mtod(m, uint8_t *);
	ls_flow_reply_hdr(fr, pk, o, &cp.src, &cp.dst);
	n = ls_roce_cnp_build(o + l2, RTE_MBUF_DEFAULT_DATAROOM - l2, &cp);
	if (n < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = m->pkt_len = l2 + (uint32_t)n;
	b->cc->out[b->cc->n_out++] = m;
	b->st.cnp_sent++;
}

/*
 * Shared increase (slice cc.ai_share): the host's QPs toward one remote
 * address that got a CNP lately (within SHARE_TIMERS increase periods T)
 * share one R_AI and R_HAI until their next CNP, as RFC 3124's congestion
 * manager shares one window among a host pair's connections. Per QP (the
 * paper, NICs), n QPs into one bottleneck raise their sum n times as fast
 * and the queue overshoots with n (docs/cc.md has the measurements). A
 * pair's QPs share at least both host links, where collectives' incasts
 * queue; QPs on paths with separate bottlenecks share too and climb slower
 * than they could. Grouping by data path measured worse (32 flows: queue
 * within threshold + BDP in 90-92% of samples, from 100%), as did a share
 * that lapsed after 20 T without a CNP (66%). A scan of 32 entries per CNP.
 */
static uint16_t
pair_share(struct lsd_bridge *b, struct qp_set *s, struct qp_side *l, uint16_t slice,
	   uint64_t now)
{
	uint32_t t = (uint32_t)(now >> SHARE_SHIFT), n = 0, w = b->cc->share_w[slice];

	l->cnp_t = (t & ~3u) | 1; /* never 0: 0 is "none" */
	for (unsigned int i = 0; i < QP_SET; i++)
		if (s->loc[i].peer != 0 && s->loc[i].cnp_t != 0 &&
		    t - (s->loc[i].cnp_t & ~3u) <= w)
			n++;
	return (uint16_t)RTE_MAX(n, 1u);
}

/* The pair's other QPs under DCQCN that sent lately: their rates' sum. */
struct pair_view {
	uint64_t rc_sum;
	unsigned int n;
};

static void
pair_view(struct lsd_bridge *b, const struct ls_flow_key *ack, const struct qp_set *s,
	  const struct qp_side *l, uint64_t now, struct pair_view *v)
{
	uint32_t now_ms = (uint32_t)(now / b->ms_div);
	struct ls_flow_key k[QP_SET];
	const struct ls_flow_key *kp[QP_SET];
	int32_t idx[QP_SET];
	unsigned int n = 0;

	*v = (struct pair_view){0};
	for (unsigned int i = 0; i < QP_SET; i++) {
		const struct qp_side *e = &s->loc[i];

		if (e == l || e->peer == 0)
			continue;
		peer_key(ack, e->peer, &k[n]);
		kp[n] = &k[n];
		n++;
	}
	if (n == 0)
		return;
	ls_flow_lookup_bulk(b->flows, kp, n, idx);
	for (unsigned int i = 0; i < n; i++) {
		const struct ls_flow *o = idx[i] >= 0 ? ls_flow_at(b->flows, idx[i]) : NULL;

		if (o != NULL && b->cc->mode[o->slice] == LS_CC_DCQCN &&
		    now_ms - o->last_ms <= FAIR_MS) {
			v->rc_sum += b->cc->flow[idx[i]].dcqcn.rc;
			v->n++;
		}
	}
}

/* now in qp_side.cnp_t units (never 0), and one T of slice in them */
static inline uint32_t
t_units(uint64_t now)
{
	return (uint32_t)(now >> SHARE_SHIFT) | 1;
}

static inline uint32_t
one_t(const struct lsd_bridge *b, uint16_t slice)
{
	return RTE_MAX(b->cc->held_w[slice] / HELD_TIMERS, 1u);
}

/*
 * An ACK from the fabric acknowledged the host's flow acked (frame fr): the
 * frames the fabric delivered to the pair, one request's worth each (RC
 * ACKs one request or several: a NIC that coalesces makes this low, which
 * only weakens the drain floor, rp_cut), in windows of one T.
 */
static void
dlv_note(struct lsd_bridge *b, struct qp_set *s, const uint8_t *fr,
	 const struct ls_flow_pkt *pk, int32_t acked, uint64_t now)
{
	const struct ls_flow *f = ls_flow_at(b->flows, acked);
	uint32_t t = t_units(now), w = one_t(b, f->slice), dt;

	/* an AETH whose syndrome says ACK (not a NAK: nothing delivered) */
	if (pk->bth_off + LS_ROCE_BTH_LEN + LS_ROCE_AETH_LEN > pk->l3_off + pk->l3_len ||
	    fr[pk->bth_off + LS_ROCE_BTH_LEN] >> 5 != 0 || f->pkts == 0)
		return;
	if (s->dlv_t0 == 0 || t - s->dlv_t0 > DLV_STALE_TIMERS * w) {
		/* a window opens at an ACK, whose frame came before it */
		s->dlv_t0 = t;
		s->dlv_acc = 0;
		return;
	}
	s->dlv_acc += (uint32_t)(f->bytes / f->pkts);
	dt = t - s->dlv_t0;
	if (dt < w)
		return;
	s->dlv_kbps = (uint32_t)RTE_MIN((uint64_t)s->dlv_acc * 8 * (b->hz / 1000) /
					((uint64_t)dt << SHARE_SHIFT), (uint64_t)UINT32_MAX);
	s->dlv_t = t;
	s->dlv_t0 = t;
	s->dlv_acc = 0;
}

/*
 * The drain floor, bits/s (0: none): 3/4 of what the fabric delivered to
 * the pair lately. A pair of QPs that start at line rate builds a queue
 * that takes many CNP intervals to drain, and each QP is cut at each of
 * them: the pair fell to 5% of the link and climbed back by additive
 * increase for 12-15 ms (docs/cc.md). Once the pair sends below what the
 * fabric delivers, its queue is draining: the CNPs that keep coming
 * describe the queue built before, not the rate now.
 */
static uint64_t
drain_floor(const struct lsd_bridge *b, const struct qp_set *s, uint16_t slice, uint64_t now)
{
	if (s->dlv_t == 0 || t_units(now) - s->dlv_t > DLV_STALE_TIMERS * one_t(b, slice))
		return 0;
	return (uint64_t)s->dlv_kbps * 1000 / 4 * 3;
}

/*
 * A CNP for the host's flow idx (its QP's entry l in set s; ack: a frame
 * from the fabric to that QP) cuts its rate. Fair cut (with cc.ai_share):
 * a CNP for a QP paced below 7/8 of the mean rate of its pair's QPs that
 * sent lately does not cut it (a QP's first CNP always does). A joiner at
 * line rate builds a queue that takes several CNP intervals to drain; cut
 * at each, with the initial α (halving) against the others' smaller one,
 * it fell to a fifth of its share and met them again only by additive
 * increase (docs/cc.md). Cutting the faster QPs first converges the pair
 * as max-min fairness would. A scan of up to 32 flows per CNP, as an ACK's
 * pairing does. Then the drain floor (drain_floor): the pair is not cut
 * below 3/4 of what the fabric delivers to it.
 */
static void
rp_cut(struct lsd_bridge *b, int32_t idx, const struct ls_flow_key *ack, struct qp_set *s,
       struct qp_side *l, uint64_t now)
{
	struct pair_view v;
	struct ls_dcqcn *d;
	struct ls_flow *f;
	uint64_t floor, rc;

	if (idx < 0 || b->cc->mode[(f = ls_flow_at(b->flows, idx))->slice] != LS_CC_DCQCN) {
		b->st.cnp_unmatched++;
		return;
	}
	d = &b->cc->flow[idx].dcqcn;
	b->cc->flow[idx].cnps++;
	if (!b->cc->share[f->slice]) {
		ls_dcqcn_on_cnp(d, &b->cc->dq[f->slice], now);
		return;
	}
	pair_view(b, ack, s, l, now, &v);
	/* rc < 7/8 of the mean of the others and itself */
	if (d->timer_next != UINT64_MAX && v.n != 0 &&
	    (unsigned __int128)d->rc * 8 * (v.n + 1) < (unsigned __int128)(v.rc_sum + d->rc) * 7) {
		b->st.cnp_fair_skipped++;
		return;
	}
	floor = drain_floor(b, s, f->slice, now);
	if (floor != 0 && v.rc_sum + d->rc <= floor) {
		b->st.cnp_drain_skipped++;
		return;
	}
	rc = d->rc;
	ls_dcqcn_on_cnp(d, &b->cc->dq[f->slice], now);
	if (floor != 0 && v.rc_sum + d->rc < floor) {
		d->rc = RTE_MIN(rc, floor - v.rc_sum);
		b->st.cnp_floored++;
	}
	d->share = pair_share(b, s, l, f->slice, now);
}

/*
 * Reaction point: a CNP from the fabric names the host's QP; the paced
 * flow is the host's frames to its peer QP. A CNP for a QP not paired yet
 * is held on its entry: a responder may send the CNP for a request before
 * the ACK that pairs the QP (lockstep-load --respond does), and 10 of 32
 * flows starting together at line rate lost their first CNP so. The ACK
 * that pairs it applies it (cc_held_ack), if within HELD_TIMERS T.
 */
static void
on_cnp(struct lsd_bridge *b, const struct ls_flow_pkt *pk, struct qp_set *s, uint32_t qp,
       uint64_t now)
{
	struct qp_side *l = side_find(s->loc, qp);
	struct ls_flow_key k;
	const struct ls_flow_key *kp = &k;
	int32_t idx;

	b->st.cnp_received++;
	if (l == NULL || l->peer == 0) {
		if (l == NULL)
			l = side_note(s->loc, &s->next_loc, qp);
		l->cnp_t = ((uint32_t)(now >> SHARE_SHIFT) & ~3u) | CNP_HELD | 1;
		b->st.cnp_held++;
		return;
	}
	peer_key(&pk->key, l->peer, &k);
	ls_flow_lookup_bulk(b->flows, &kp, 1, &idx);
	rp_cut(b, idx, &pk->key, s, l, now);
}

/* An ACK from the fabric to the host's QP qp acknowledged flow acked (just
 * paired, or already): a CNP held for qp is applied to it, if recent. */
static void
cc_held_ack(struct lsd_bridge *b, const struct ls_flow_key *ack, struct qp_set *s, uint32_t qp,
	    int32_t acked, uint64_t now)
{
	struct qp_side *l = side_find(s->loc, qp);
	uint32_t t = (uint32_t)(now >> SHARE_SHIFT);

	if (l == NULL || !(l->cnp_t & CNP_HELD))
		return;
	l->cnp_t &= ~CNP_HELD;
	if (t - (l->cnp_t & ~3u) > b->cc->held_w[ls_flow_at(b->flows, acked)->slice])
		return;
	b->st.cnp_held_applied++;
	rp_cut(b, acked, ack, s, l, now);
}

/* A RoCEv2 frame from the fabric (flow idx, its line f, or idx < 0). */
void
lsd_cc_from_fabric(struct lsd_bridge *b, const uint8_t *fr, const struct ls_flow_pkt *pk,
		   int32_t idx, uint64_t now)
{
	const uint8_t *bth = fr + pk->bth_off;
	uint32_t qp = bth_qp(bth), psn = bth_psn(bth);
	struct ls_flow *f = idx >= 0 ? ls_flow_at(b->flows, idx) : NULL;
	struct qp_set *s = NULL;
	struct lsd_cc_flow *c;
	struct qp_side *l;
	int32_t acked;

	if (qp == 0)
		return;
	if (pk->bth_opcode == LS_ROCE_OPCODE_CNP || pk->bth_opcode == OP_RC_ACK) {
		s = qp_set_of(b, &pk->key, false);
		if (s != NULL && pk->bth_opcode == LS_ROCE_OPCODE_CNP)
			on_cnp(b, pk, s, qp, now);
		else if (s != NULL && (acked = side_pair(b, s->loc, &s->next_loc, s->rem,
							 &pk->key, qp, psn)) >= 0) {
			cc_held_ack(b, &pk->key, s, qp, acked, now);
			if (b->cc->share[ls_flow_at(b->flows, acked)->slice])
				dlv_note(b, s, fr, pk, acked, now);
			if (b->fo_on)
				lsd_fo_ack(b, acked, now);
		}
		if (pk->bth_opcode == LS_ROCE_OPCODE_CNP)
			return;
	} else if (f != NULL) {
		note_request(b, f, &pk->key, false, qp, psn);
	}
	/* (a flow the table had no room for keeps no PSN: it cannot pair) */
	if (pk->ecn != 3 || f == NULL || !b->cc->np[f->slice])
		return;
	c = &b->cc->flow[idx];
	/* (an unpaired flow never sent a CNP, so it is never rate-limited) */
	if (c->last_cnp != 0 && now - c->last_cnp < b->cc->cnp_ticks[f->slice]) {
		b->st.cnp_rate_limited++;
		return;
	}
	if (s == NULL)
		s = qp_set_of(b, &pk->key, false);
	l = s != NULL ? side_find(s->loc, qp) : NULL;
	if (l == NULL || l->peer == 0) {
		b->st.cnp_unpaired++;
		return;
	}
	ls_cc_np_due(&c->last_cnp, now, b->cc->cnp_ticks[f->slice]);
	c->cnps++;
	send_cnp(b, fr, pk, l->peer);
}

/* The burst's CNPs, out on the fabric port. */
void
lsd_cc_flush(struct lsd_bridge *b)
{
	struct lsd_cc *cc = b->cc;

	if (cc->n_out == 0)
		return;
	lsd_bridge_send(b, LSD_FAB, cc->out, (uint16_t)cc->n_out);
	cc->n_out = 0;
}

/* What the operator sees of a flow's loop (control thread, plain loads). */
json_t *
lsd_cc_flow_json(const struct lsd_bridge *b, int32_t idx, const struct ls_flow *f)
{
	const struct lsd_cc_flow *c = &b->cc->flow[idx];
	uint8_t mode = b->cc->mode[f->slice];

	if (mode == LS_CC_DCQCN)
		return json_pack("{ss sI sI sf ss si si}", "mode", "dcqcn",
				 "rate_bps", (json_int_t)c->dcqcn.rc,
				 "target_bps", (json_int_t)c->dcqcn.rt,
				 "alpha", (double)c->dcqcn.alpha / LS_CC_ONE,
				 "state", ls_dcqcn_state_name(ls_dcqcn_state(&c->dcqcn,
									     &b->cc->dq[f->slice])),
				 "cnps", (int)c->cnps, "share", (int)RTE_MAX(c->dcqcn.share, 1));
	if (mode == LS_CC_DELAY)
		return json_pack("{ss sI si si}", "mode", "delay", "rate_bps",
				 (json_int_t)c->delay.rate, "decreases", (int)c->delay.decreases,
				 "increases", (int)c->delay.increases);
	return json_pack("{ss si}", "mode", "off", "cnps", (int)c->cnps);
}
