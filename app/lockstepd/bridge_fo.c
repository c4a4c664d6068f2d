/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Failover in the data path: a RoCEv2 RC flow whose requests go
 * unacknowledged moves to another path (its entropy rewritten, as steering
 * does), and goes back after hold_ms.
 *
 * Why from the data. A dead link shows first in the flows that cross it:
 * their acknowledgements stop. The probe mesh names paths by the entropy its
 * own 5-tuple hashes with, and a fabric that hashes the destination port too
 * sends data with the same entropy elsewhere (docs/datapath.md, "A limit to
 * know"), so probe paths say which *probe* paths died, not which flows. A
 * flow's own ACKs say it for that flow, whatever the fabric hashes. (The
 * idea is Google's Protective ReRoute: repath a connection when it stops
 * making progress; here the appliance does it for the host's NIC.)
 *
 * The rule. Each flow remembers when its oldest unacknowledged request left
 * (`wait`, set by a request when none is pending, cleared by an ACK that the
 * pairing of bridge_cc.c attributes to the flow). A request that finds
 * `wait` older than silence_us moves the flow: to a path its policy allows
 * that no flow to the same destination found silent within hold_ms, picked
 * by a hash of the flow (flows leaving one dead path spread over the rest
 * instead of piling onto its neighbour). The path it left is marked silent
 * for the destination for hold_ms. A flow never acknowledged (UD, one-way
 * traffic, an RC flow before its first ACK) is never moved: silence means
 * something only for a flow that was heard. A flow that moved on every path
 * without an ACK (a dead destination, not a dead path) stays where it is
 * until one comes: moving it further would only reorder.
 *
 * The way back. A moved flow returns to the path its policy gives it after
 * hold_ms, unless that path was found silent again for its destination in
 * the meantime (the mark is renewed by every flow that leaves it). If the
 * path is still dead, the flow costs one silence_us stall per hold_ms.
 *
 * Memory: a bit in the flow line (heard: a flow never acknowledged costs
 * nothing more), 16 bytes per flow beside the flow table, a direct-mapped table of
 * per-destination marks (a collision merges two destinations' marks: they
 * avoid a few more paths for hold_ms, nothing worse). Nothing is allocated
 * per packet; a request costs a load and a compare, an ACK a store.
 */
#include <errno.h>
#include <string.h>

#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "bridge.h"

#define DEST_SLOTS 4096        /* destinations remembered (direct-mapped) */
#define T_SHIFT 10             /* flow clock: TSC >> 10 (~0.5 us at 2 GHz; wraps
				* after ~2200 s, differences are taken mod 2^32) */
#define FO_AWAY 0x1            /* moved off its policy's path */

struct lsd_fo_flow {
	uint32_t wait;             /* flow clock of the oldest unacked request, 0: none */
	uint32_t until;            /* AWAY: flow clock of the return */
	uint32_t moves;            /* times moved */
	uint8_t home;              /* the policy's path (0xff: the host's entropy) */
	uint8_t state;             /* FO_AWAY */
	uint8_t tries;             /* moves since the last ACK */
	uint8_t pad;
};

struct fo_dest {
	uint32_t tag;              /* hash of the destination, 0: empty */
	uint32_t until;            /* marks valid until this flow clock */
	uint64_t silent;           /* bit k: path k found silent */
};

struct lsd_fo {
	struct lsd_fo_flow *flow;  /* [max_flows] */
	struct fo_dest dest[DEST_SLOTS];
	uint32_t silence, hold;    /* flow clock units */
	uint64_t all;              /* bits of the paths 0..n_paths-1 */
};

_Static_assert(sizeof(struct lsd_fo_flow) == 16, "four flows per cache line");

int
lsd_fo_create(struct lsd_bridge *b, int socket)
{
	const struct ls_conf_failover *c = &lsd.cfg.bridge.failover;
	uint64_t per_us = b->hz / 1000000;

	b->fo_on = c->enabled && b->n_paths > 1;
	if (!b->fo_on)
		return 0;
	b->fo = rte_zmalloc_socket("lsd_fo", sizeof(*b->fo), 64, socket);
	if (b->fo == NULL)
		return -ENOMEM;
	b->fo->flow = rte_zmalloc_socket("lsd_fo_flow",
					 sizeof(struct lsd_fo_flow) * lsd.cfg.bridge.max_flows,
					 64, socket);
	if (b->fo->flow == NULL)
		return -ENOMEM;
	b->fo->silence = (uint32_t)((c->silence_us * per_us) >> T_SHIFT);
	b->fo->hold = (uint32_t)(((uint64_t)c->hold_ms * 1000 * per_us) >> T_SHIFT);
	b->fo->all = b->n_paths >= 64 ? ~0ULL : (1ULL << b->n_paths) - 1;
	return 0;
}

void
lsd_fo_free(struct lsd_bridge *b)
{
	if (b->fo == NULL)
		return;
	rte_free(b->fo->flow);
	rte_free(b->fo);
	b->fo = NULL;
}

/* A new flow, or one classified again (its policy's path is its home). */
void
lsd_fo_flow_init(struct lsd_bridge *b, int32_t idx)
{
	if (b->fo_on)
		memset(&b->fo->flow[idx], 0, sizeof(b->fo->flow[idx]));
}

static inline uint32_t
fo_clock(uint64_t now)
{
	uint32_t t = (uint32_t)(now >> T_SHIFT);

	return t != 0 ? t : 1; /* 0 means "none" */
}

static struct fo_dest *
dest_of(struct lsd_fo *fo, const struct ls_flow_key *k, uint32_t *tag)
{
	uint32_t h = rte_hash_crc(k->dst, sizeof(k->dst), k->vid);

	*tag = h | 1;
	return &fo->dest[h % DEST_SLOTS];
}

/* Paths found silent toward the flow's destination (still within hold). */
static uint64_t
dest_silent(struct lsd_fo *fo, const struct ls_flow_key *k, uint32_t t)
{
	uint32_t tag;
	const struct fo_dest *d = dest_of(fo, k, &tag);

	return d->tag == tag && (int32_t)(d->until - t) > 0 ? d->silent : 0;
}

static void
dest_mark(struct lsd_fo *fo, const struct ls_flow_key *k, uint8_t path, uint32_t t)
{
	uint32_t tag;
	struct fo_dest *d = dest_of(fo, k, &tag);

	if (d->tag != tag || (int32_t)(d->until - t) <= 0) {
		d->tag = tag;
		d->silent = 0;
	}
	d->silent |= 1ULL << path;
	d->until = t + fo->hold;
}

/* The paths the flow's policy lets it take (keep and pin: any). */
static uint64_t
policy_paths(const struct lsd_bridge *b, const struct ls_flow_pkt *pk)
{
	struct ls_path_policy pp;
	uint32_t ps;

	ls_policy_classify(b->policy, pk, &ps, &pp);
	if (pp.mode == LS_PATH_SPREAD)
		return pp.paths & b->fo->all;
	if (pp.mode == LS_PATH_AVOID)
		return ~pp.paths & b->fo->all;
	return b->fo->all;
}

/* Move flow f off its silent path. */
static void
move(struct lsd_bridge *b, struct ls_flow *f, struct lsd_fo_flow *s,
     const struct ls_flow_pkt *pk, uint32_t t)
{
	struct lsd_fo *fo = b->fo;
	uint64_t cur = f->path < 64 ? 1ULL << f->path : 0;
	uint64_t silent = dest_silent(fo, &pk->key, t) | cur;
	uint64_t want = policy_paths(b, pk) & ~silent;
	struct ls_path_policy alt = {.mode = LS_PATH_AVOID};
	int k;

	if (s->tries >= b->n_paths) {
		/* silent on every path since the last ACK: the peer, not a path */
		b->st.repath_exhausted++;
		s->wait = t;
		return;
	}
	if (want == 0)
		want = fo->all & ~silent;
	if (want == 0)
		want = fo->all & ~cur;
	alt.paths = ~want;
	k = ls_path_pick(&alt, rte_hash_crc(&pk->key, sizeof(pk->key), s->moves), b->n_paths);
	if (k < 0)
		return;
	if (f->path < 64)
		dest_mark(fo, &pk->key, f->path, t);
	if (!(s->state & FO_AWAY))
		s->home = f->path;
	s->state |= FO_AWAY;
	s->until = t + fo->hold;
	s->wait = t;              /* the new path gets silence_us of its own */
	s->tries++;
	s->moves++;
	f->path = (uint8_t)k;
	b->st.repaths++;
}

/* A request of a RoCEv2 flow from the host, before it is steered: note it,
 * and move the flow if it has been silent too long, or bring it home. */
void
lsd_fo_request(struct lsd_bridge *b, struct ls_flow *f, int32_t idx,
	       const struct ls_flow_pkt *pk, uint64_t now)
{
	struct lsd_fo_flow *s = &b->fo->flow[idx];
	uint32_t t = fo_clock(now);

	if (s->wait == 0) {
		s->wait = t;
	} else if (t - s->wait > b->fo->silence) {
		move(b, f, s, pk, t);
		return;
	}
	if ((s->state & FO_AWAY) && (int32_t)(t - s->until) >= 0) {
		if (s->home < 64 && (dest_silent(b->fo, &pk->key, t) >> s->home & 1)) {
			s->until = t + b->fo->hold; /* found silent again meanwhile */
			return;
		}
		f->path = s->home;
		s->state &= (uint8_t)~FO_AWAY;
		b->st.repath_returns++;
	}
}

/* An ACK for flow idx's requests arrived from the fabric. */
void
lsd_fo_ack(struct lsd_bridge *b, int32_t idx)
{
	struct lsd_fo_flow *s = &b->fo->flow[idx];

	s->wait = 0;
	s->tries = 0;
	ls_flow_at(b->flows, idx)->heard = 1;
}

/* The `flows` view of a flow's failover (control thread, plain loads). */
json_t *
lsd_fo_flow_json(const struct lsd_bridge *b, int32_t idx)
{
	const struct lsd_fo_flow *s = &b->fo->flow[idx];

	return json_pack("{sb sb si so}", "heard", ls_flow_at(b->flows, idx)->heard,
			 "away", (s->state & FO_AWAY) != 0, "moves", (int)s->moves,
			 "home", (s->state & FO_AWAY) && s->home != 0xff ?
			 json_integer(s->home) : json_null());
}
