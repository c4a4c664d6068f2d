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
 * `wait` older than the flow's limit moves the flow: to a path its policy allows
 * that no flow to the same destination found silent within hold_ms, picked
 * by a hash of the flow (flows leaving one dead path spread over the rest
 * instead of piling onto its neighbour), among the paths another flow to it
 * was answered on since this one's wait began when there are two or more
 * (an answer proves both ways; an unknown path may cross the same dead
 * link). The path it left is marked silent for the destination for hold_ms. A flow never acknowledged (UD, one-way
 * traffic, an RC flow before its first ACK) is never moved: silence means
 * something only for a flow that was heard. A flow that moved on every path
 * without an ACK (a dead destination, not a dead path) stays where it is
 * until one comes: moving it further would only reorder.
 *
 * The limit comes from what the flow shows, as TCP's retransmission
 * time-out does (RFC 6298): each ACK that ends a wait is a sample of how
 * long this flow's requests wait for an answer (the round trip plus the
 * receiver's ACK coalescing); limit = srtt + 4 rttvar, kept within
 * [silence_us, 20 silence_us]. On a quiet fabric the floor rules; where
 * answers are late now and then, the limit grows with them instead of
 * moving healthy flows (a fixed 500 us moved ~100 healthy flows a second in
 * the two-core lab, whose processes wait ms for a CPU). A pause of the whole
 * fabric port is nobody's path (lsd_fo_request): silence counts from when
 * frames came again, and while the port is quiet only the limit's ceiling
 * moves a flow. The decisions are
 * lib/repath's (unit-tested without the EAL); this file is the glue: the
 * state beside the flow table, the policy's paths, counters, the log.
 *
 * Moves reach the event log (path.silent) through a ring the lcore writes
 * and the control thread reads (lsd_fo_events_poll): one record per move,
 * no lock; a record overwritten before it was read is counted, not shown.
 *
 * The way back. A moved flow returns to the path its policy gives it after
 * hold_ms, unless that path was found silent again for its destination in
 * the meantime (the mark is renewed by every flow that leaves it). If the
 * path is still dead, the flow costs one silence_us stall per hold_ms.
 *
 * From the probes, whichever is first. The probe mesh measures paths with
 * its own 5-tuple (dport 862), the data crosses the fabric with another
 * (4791). The route map traces both (route.c); a probe path and the data
 * paths whose traces cross the same routers share fate, and links.c hands
 * each probe path that set (lsd_peer_path.data_paths). When a probe path
 * goes unanswered (3 probes in a row, and since its last reply longer than
 * an interval plus 4 rttvar of its round trips, within [silence_us,
 * 20 silence_us]: the two-core lab's round trips vary by milliseconds;
 * judged when the lcore's fabric queue is drained so no reply waits unread,
 * only while another path of the peer still answers -- all of them
 * silent at once is the peer, or a held-up machine, not a path -- and not
 * within that time of a pause of the whole fabric port (silence_us / 2
 * without a frame): replies then come back late for every path, in an
 * order that makes the last ones look silent),
 * its data paths are marked silent for the peer's address for hold_ms, in a
 * table of their own. While such a mark lives, every flow's frame looks it
 * up, and a flow on a marked path moves -- heard or not, RC, UD or any
 * other kind with an entropy the bridge sets: the flows the ACK rule cannot
 * see -- preferably onto a path some probe stands for (a path no probe
 * watches is never marked, and would gather every flow that moves). A moved flow that is never acknowledged goes home the same way,
 * at its frames, after hold_ms unless its path was marked again. What
 * this costs: nothing while no mark lives (one branch); a hash and a load
 * per frame while one does. A probe path whose *reply* route died marks
 * data paths that may be fine: they move needlessly (a reorder, no loss).
 *
 * Memory: a bit in the flow line (heard: a flow never acknowledged costs
 * nothing more), 32 bytes per flow beside the flow table, a direct-mapped table of
 * per-destination marks (a collision merges two destinations' marks: they
 * avoid a few more paths for hold_ms, nothing worse). Nothing is allocated
 * per packet; a request costs a load and a compare, an ACK a store.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "bridge.h"
#include "ls_repath.h"

#define DEST_SLOTS 4096        /* destinations remembered (direct-mapped) */
#define T_SHIFT 10             /* flow clock: TSC >> 10 (~0.5 us at 2 GHz; wraps
				* after ~2200 s, differences are taken mod 2^32) */
#define FO_LOG 1024            /* moves the control thread may lag behind */
#define FO_MARK_PATHS 16       /* paths whose probe mark time is kept per destination */

/* One move, for the event log. */
struct fo_rec {
	uint64_t tsc;
	uint8_t dst[16];
	uint16_t vid;
	uint8_t family, from, to; /* from/to: path, 0xff the host's entropy */
	uint8_t by;                /* FO_BY_ACKS, FO_BY_PROBES */
	uint8_t pad[2];
	uint32_t limit_us;         /* the silence that moved it */
	uint32_t mark_ago;         /* flow clock from the path's mark to the move
				    * (by ACKs 0: the move is the verdict) */
};

enum { FO_BY_ACKS, FO_BY_PROBES };

struct lsd_fo {
	struct ls_repath_flow *flow;  /* [max_flows] */
	struct ls_repath_mark dest[DEST_SLOTS];
	struct ls_repath_mark pdest[DEST_SLOTS]; /* the probe mesh's marks */
	struct ls_repath_heard heard[DEST_SLOTS]; /* paths flows were answered on */
	uint64_t pcov[DEST_SLOTS]; /* with them: the data paths some probe stands for */
	/* when each path was first marked by the probes (flow clock): the
	 * decision, of which a flow's move at its next frame is the effect */
	uint32_t pmark_t[DEST_SLOTS][FO_MARK_PATHS];
	uint32_t probe_until;      /* flow clock: no probe mark lives after it */
	uint32_t probe_silence;    /* silence_us in ns (probe paths) */
	struct ls_repath_params p;
	uint64_t all;              /* bits of the paths 0..n_paths-1 */
	uint64_t per_us;           /* flow clock units per us, 32.32 */
	uint64_t head;             /* records written (lcore; release) */
	uint64_t tail;             /* records read (control thread) */
	struct fo_rec log[FO_LOG];
};

_Static_assert(sizeof(struct ls_repath_flow) == 32, "two flows per cache line");

/* What the probe mesh found, from the lead to the data path's other lcores
 * (many cores): each applies it to its own marks. */
struct fo_note {
	uint64_t cov;              /* the data paths some probe stands for (silent) */
	uint64_t paths;            /* data paths marked (silent) or cleared (heard) */
	uint32_t h;                /* the peer's address hash */
	uint32_t t;                /* flow clock */
	uint8_t heard;
};

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
					 sizeof(struct ls_repath_flow) * lsd.cfg.bridge.max_flows,
					 64, socket);
	if (b->fo->flow == NULL)
		return -ENOMEM;
	b->fo->p.silence = (uint32_t)((c->silence_us * per_us) >> T_SHIFT);
	b->fo->p.silence_max = 20 * b->fo->p.silence;
	b->fo->p.hold = (uint32_t)(((uint64_t)c->hold_ms * 1000 * per_us) >> T_SHIFT);
	b->fo->p.n_paths = RTE_MIN(b->n_paths, 64);
	b->fo->all = b->n_paths >= 64 ? ~0ULL : (1ULL << b->n_paths) - 1;
	b->fo->per_us = (per_us << 32) >> T_SHIFT;
	b->fo->probe_silence = c->silence_us * 1000;
	b->fab_pause = c->silence_us * per_us / 2;
	if (b->li > 0) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "lsd_fo_notes_%u", b->li);
		b->notes = rte_ring_create_elem(name, sizeof(struct fo_note), 256, socket,
						RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (b->notes == NULL)
			return -ENOMEM;
	}
	return 0;
}

void
lsd_fo_free(struct lsd_bridge *b)
{
	rte_ring_free(b->notes);
	b->notes = NULL;
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
		ls_repath_flow_init(&b->fo->flow[idx], &b->fo->p);
}

static inline uint32_t
fo_clock(uint64_t now)
{
	return (uint32_t)(now >> T_SHIFT) | 1; /* 0 means "none" */
}

/* Marks are per destination address, whatever the VLAN: ECMP hashes the
 * IP 5-tuple, so path k toward an address crosses the same links on every
 * VLAN, and the probes (untagged) mark by address alone (addr_hash). Keyed
 * with the VLAN, a tagged flow never saw the probes' marks. */
static inline uint32_t
dest_hash(const struct ls_flow_key *k)
{
	return rte_hash_crc(k->dst, sizeof(k->dst), 0);
}

static inline double
to_us(const struct lsd_fo *fo, uint64_t ticks)
{
	return (double)(ticks << 32) / (double)fo->per_us;
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

/* A move, for the event log (lsd_fo_events_poll). */
static void
log_move(struct lsd_fo *fo, const struct ls_flow_key *k, uint8_t from, uint8_t to,
	 uint32_t limit, uint64_t now, uint8_t by, uint32_t mark_ago)
{
	struct fo_rec *r = &fo->log[fo->head % FO_LOG];

	r->by = by;
	r->mark_ago = mark_ago;
	r->tsc = now;
	memcpy(r->dst, k->dst, sizeof(r->dst));
	r->vid = k->vid;
	r->family = k->family;
	r->from = from;
	r->to = to;
	r->limit_us = (uint32_t)to_us(fo, limit);
	__atomic_store_n(&fo->head, fo->head + 1, __ATOMIC_RELEASE);
}

/* Both tables' marks for destination hash h at t. */
static inline uint64_t
marks_of(const struct lsd_fo *fo, uint32_t h, uint32_t t)
{
	return ls_repath_marks(fo->dest, DEST_SLOTS, h, t) |
	       ls_repath_marks(fo->pdest, DEST_SLOTS, h, t);
}

/* Flow clock since the probes marked path k for destination hash h (0 when
 * not kept: paths from FO_MARK_PATHS on, or a mark older than a hold). */
static inline uint32_t
mark_ago(const struct lsd_fo *fo, uint32_t h, uint8_t k, uint32_t t)
{
	uint32_t ago;

	if (k >= FO_MARK_PATHS)
		return 0;
	ago = t - fo->pmark_t[h & (DEST_SLOTS - 1)][k];
	return ago <= fo->p.hold ? ago : 0;
}

/* Move flow f off its silent path (by its ACKs: the path is marked for the
 * destination; by the probes: it already is). */
static void
move(struct lsd_bridge *b, struct ls_flow *f, struct ls_repath_flow *s,
     const struct ls_flow_pkt *pk, uint32_t t, uint64_t now, uint8_t by)
{
	struct lsd_fo *fo = b->fo;
	uint32_t h = dest_hash(&pk->key);
	uint64_t allowed = policy_paths(b, pk);
	int k;

	/* moved by the probes: onto a path they also stand for when one is
	 * free, or a path no probe watches would gather every flow that
	 * ever moves (nothing would move them on) */
	if (by == FO_BY_PROBES && (allowed & fo->pcov[h & (DEST_SLOTS - 1)]) != 0)
		allowed &= fo->pcov[h & (DEST_SLOTS - 1)];
	/* heard: answered since this flow's oldest unanswered request left */
	k = ls_repath_pick(allowed, marks_of(fo, h, t),
			   ls_repath_heard_since(fo->heard, DEST_SLOTS, h, s->wait), f->path,
			   fo->p.n_paths, rte_hash_crc(&pk->key, sizeof(pk->key), s->moves));

	if (k < 0)
		return;
	if (by == FO_BY_ACKS)
		ls_repath_mark(fo->dest, DEST_SLOTS, h, f->path, t, &fo->p);
	ls_repath_moved(s, &fo->p, t, f->path);
	log_move(fo, &pk->key, f->path, (uint8_t)k, by == FO_BY_ACKS ? s->limit : fo->p.silence,
		 now, by, by == FO_BY_PROBES ? mark_ago(fo, h, f->path, t) : 0);
	f->path = (uint8_t)k;
	f->away = 1;
	if (by == FO_BY_ACKS)
		b->st.repaths++;
	else
		b->st.repaths_probe++;
}

struct home_arg {
	const struct lsd_fo *fo;
	uint32_t h, t;
};

static int
home_silent(void *arg, uint8_t home)
{
	const struct home_arg *a = arg;

	return marks_of(a->fo, a->h, a->t) >> home & 1;
}

/* A request of a heard RoCEv2 flow from the host, before it is steered:
 * note it, and move the flow if it has been silent too long, or bring it
 * home. */
void
lsd_fo_request(struct lsd_bridge *b, struct ls_flow *f, int32_t idx,
	       const struct ls_flow_pkt *pk, uint64_t now)
{
	struct ls_repath_flow *s = &b->fo->flow[idx];
	uint32_t t = fo_clock(now);
	struct home_arg ha = {.fo = b->fo, .h = dest_hash(&pk->key), .t = t};
	uint32_t resumed = fo_clock(b->fab_resumed_long);

	/* A pause of the whole fabric port as long as silence_us since the
	 * wait began (this lcore, the fabric or the peer held up: every answer
	 * comes late) is nobody's path: the silence counts from when frames
	 * came again. (Shorter gaps cannot make a flow silent by themselves;
	 * counting them would postpone the move of a flow whose path died.) */
	if (s->wait != 0 && b->fab_resumed_long != 0 && (int32_t)(resumed - s->wait) > 0)
		s->wait = resumed;
	/* ... and while the whole port is silent that long, it may be such a
	 * pause (the requests that come first when a held-up host resumes
	 * find no answer yet): a flow moves only after the limit's ceiling.
	 * (Probes keep a fabric port busy; silent with them too, every path
	 * is dead.) */
	if (s->wait != 0 && now - b->fab_last_rx > 2 * b->fab_pause &&
	    t - s->wait > s->limit && t - s->wait <= b->fo->p.silence_max)
		return;

	switch (ls_repath_on_request(s, &b->fo->p, t, home_silent, &ha)) {
	case LS_REPATH_MOVE:
		move(b, f, s, pk, t, now, FO_BY_ACKS);
		break;
	case LS_REPATH_HOME:
		f->path = s->home;
		f->away = 0;
		ls_repath_went_home(s);
		b->st.repath_returns++;
		break;
	case LS_REPATH_EXHAUSTED:
		b->st.repath_exhausted++;
		break;
	default:
		break;
	}
}

/* An ACK for flow idx's requests arrived from the fabric. */
void
lsd_fo_ack(struct lsd_bridge *b, int32_t idx, uint64_t now)
{
	struct ls_flow *f = ls_flow_at(b->flows, idx);
	uint32_t t = fo_clock(now);

	ls_repath_on_ack(&b->fo->flow[idx], &b->fo->p, t);
	f->heard = 1;
	if (f->path != 0xff)
		ls_repath_heard_note(b->fo->heard, DEST_SLOTS, dest_hash(ls_flow_key_at(b->flows, idx)),
				     f->path, t);
}

/* The `flows` view of a flow's failover (control thread, plain loads). */
json_t *
lsd_fo_flow_json(const struct lsd_bridge *b, int32_t idx)
{
	const struct ls_repath_flow *s = &b->fo->flow[idx];
	bool away = s->state & LS_REPATH_AWAY;

	return json_pack("{sb sb si so sf sf}", "heard", ls_flow_at(b->flows, idx)->heard,
			 "away", away, "moves", (int)s->moves,
			 "home", away && s->home != LS_REPATH_NO_PATH ?
			 json_integer(s->home) : json_null(),
			 "answer_us", to_us(b->fo, s->srtt >> 3),
			 "limit_us", to_us(b->fo, s->limit));
}

/* ---- control thread: moves into the event log ----------------------- */

struct fo_group {
	struct fo_rec r;           /* the first move of the group */
	uint64_t last_tsc;         /* the last move's */
	uint64_t mark_tsc;         /* the earliest mark of the group's moves */
	uint32_t flows, to[LS_POLICY_MAX_PATHS + 1], limit_min, limit_max;
};

/* A move's TSC as UTC ns, from a (tsc, UTC) pair read together. */
static int64_t
move_utc(uint64_t tsc, uint64_t tsc_now, int64_t utc_now, uint64_t hz)
{
	return utc_now - (int64_t)((double)(tsc_now - tsc) * 1e9 / (double)hz);
}

static json_t *
group_json(const struct fo_group *g, uint64_t tsc_now, int64_t utc_now, uint64_t hz)
{
	char a[64];
	json_t *to = json_object();

	inet_ntop(g->r.family == 4 ? AF_INET : AF_INET6, g->r.family == 4 ? g->r.dst + 12 : g->r.dst,
		  a, sizeof(a));
	for (unsigned int k = 0; k <= LS_POLICY_MAX_PATHS; k++)
		if (g->to[k] != 0) {
			char key[8];

			if (k == LS_POLICY_MAX_PATHS)
				snprintf(key, sizeof(key), "host");
			else
				snprintf(key, sizeof(key), "%u", k);
			json_object_set_new(to, key, json_integer(g->to[k]));
		}
	/* moved_ns: when the lcore moved the first and the last of them (the
	 * event's own time is the control pass's, up to a pass later);
	 * marked_ns: when the path was found silent (by probes: the mark,
	 * after which every frame of a flow on it goes elsewhere; a flow moves
	 * at its next frame) */
	return json_pack("{s:s, s:s, s:i, s:o, s:i, s:o, s:{s:i, s:i}, s:{s:I, s:I}, s:I}",
			 "dst", a,
			 "by", g->r.by == FO_BY_PROBES ? "probes" : "acks", "vid", g->r.vid,
			 "path", g->r.from == 0xff ? json_null() : json_integer(g->r.from),
			 "flows_moved", (int)g->flows, "to", to, "silence_us",
			 "min", (int)g->limit_min, "max", (int)g->limit_max, "moved_ns",
			 "first", (json_int_t)move_utc(g->r.tsc, tsc_now, utc_now, hz),
			 "last", (json_int_t)move_utc(g->last_tsc, tsc_now, utc_now, hz),
			 "marked_ns", (json_int_t)move_utc(g->mark_tsc, tsc_now, utc_now, hz));
}

/*
 * The moves since the last pass, one path.silent event per (destination,
 * path left): flows moved, where to, the silences that moved them. A
 * record the lcore overwrote before this read it is counted in
 * `moves_unlogged`, never shown torn: it is copied, then the head is
 * checked again.
 */
#define FO_GROUPS 64
void
lsd_fo_events_poll(struct lsd_bridge *b)
{
	static struct fo_group g[FO_GROUPS];
	struct lsd_fo *fo = b->fo;
	uint64_t head;
	unsigned int n = 0;

	if (fo == NULL)
		return;
	head = __atomic_load_n(&fo->head, __ATOMIC_ACQUIRE);
	if (head - fo->tail > FO_LOG) {
		b->fo_unlogged += head - fo->tail - FO_LOG;
		fo->tail = head - FO_LOG;
	}
	for (; fo->tail < head; fo->tail++) {
		struct fo_rec r = fo->log[fo->tail % FO_LOG];
		unsigned int i;

		if (__atomic_load_n(&fo->head, __ATOMIC_ACQUIRE) - fo->tail >= FO_LOG) {
			b->fo_unlogged++;
			continue;
		}
		for (i = 0; i < n; i++)
			if (g[i].r.from == r.from && g[i].r.vid == r.vid && g[i].r.by == r.by &&
			    memcmp(g[i].r.dst, r.dst, 16) == 0)
				break;
		if (i == n) {
			if (n == FO_GROUPS) {
				b->fo_unlogged++;
				continue;
			}
			memset(&g[n], 0, sizeof(g[n]));
			g[n].r = r;
			g[n].mark_tsc = UINT64_MAX;
			g[n].limit_min = UINT32_MAX;
			n++;
		}
		g[i].flows++;
		g[i].last_tsc = r.tsc;
		g[i].mark_tsc = RTE_MIN(g[i].mark_tsc, r.tsc - ((uint64_t)r.mark_ago << T_SHIFT));
		g[i].to[r.to == 0xff ? LS_POLICY_MAX_PATHS : r.to]++;
		g[i].limit_min = RTE_MIN(g[i].limit_min, r.limit_us);
		g[i].limit_max = RTE_MAX(g[i].limit_max, r.limit_us);
	}
	if (n > 0) {
		struct timespec ts;
		uint64_t tsc = rte_rdtsc();

		clock_gettime(CLOCK_REALTIME, &ts);
		for (unsigned int i = 0; i < n; i++)
			lsd_event("path.silent", LSD_EV_WARNING,
				  group_json(&g[i], tsc, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
					     b->hz));
	}
}

/* ---- the probe mesh's silent paths (lcore) -------------------------- */

/* A peer's address as flows key their destination (IPv4-mapped). */
static uint32_t
addr_hash(const struct ls_addr *a)
{
	uint8_t dst[16];

	ls_flow_key_addr(a, dst);
	return rte_hash_crc(dst, sizeof(dst), 0);
}

/* Whether another path of the peer answered within lim: a dead link
 * silences some paths, a dead or held-up peer (or our own lcore, or the
 * lab's emulator) all of them, and moving flows would not help then. */
static bool
peer_heard(const struct lsd_peer *peer, uint64_t now_ns, uint64_t lim)
{
	for (uint16_t p = 0; p < peer->n_paths; p++)
		if (now_ns - peer->path[p].live.last_rx_ns < lim)
			return true;
	return false;
}

/*
 * Whether another path of the peer answered a probe sent more than margin
 * after this path's oldest unanswered one. Jitter in how long answers take
 * (a held-up host, the lab's CPU-starved emulator: milliseconds) delays
 * every path alike, and then no later probe is answered first; a dead link
 * lets the others' later probes through. So this judges silence in about
 * three probe intervals and a round trip, where the absolute rule below
 * must wait out 4 rttvar of that jitter. margin: how much slower than
 * another this path may be before it counts as gone (a path queueing that
 * much more has degraded).
 */
static bool
overtaken(const struct lsd_peer *peer, const struct lsd_peer_path *pp, uint64_t margin)
{
	uint64_t t_miss, t_q;

	if (!ls_path_sent_at(&pp->live, pp->live.max_seq_rx + 1, &t_miss))
		return false;
	for (uint16_t p = 0; p < peer->n_paths; p++) {
		const struct ls_path_live *q = &peer->path[p].live;

		if (&peer->path[p] != pp && q->any_rx &&
		    ls_path_sent_at(q, q->max_seq_rx, &t_q) && t_q > t_miss + margin)
			return true;
	}
	return false;
}

/*
 * At each probe of a path that carries data (data_paths != 0): whether it
 * has gone silent, and if so its data paths are marked for the peer. Judged
 * only when the fabric's queue was drained by this pass, so that replies
 * waiting unread after the lcore was held up never read as silence.
 */
/* A probe verdict on this lcore's marks. */
static void
note_apply(struct lsd_bridge *b, const struct fo_note *n)
{
	struct lsd_fo *fo = b->fo;
	struct ls_repath_mark *e = &fo->pdest[n->h & (DEST_SLOTS - 1)];

	if (n->heard) {
		if (e->tag == (n->h | 1))
			e->silent &= ~n->paths;
		return;
	}
	fo->pcov[n->h & (DEST_SLOTS - 1)] = n->cov;
	/* a path newly marked: when (each probe renews the marks it finds) */
	for (uint64_t m = n->paths & ~ls_repath_marks(fo->pdest, DEST_SLOTS, n->h, n->t) &
			  ((1ULL << FO_MARK_PATHS) - 1); m != 0; m &= m - 1)
		fo->pmark_t[n->h & (DEST_SLOTS - 1)][__builtin_ctzll(m)] = n->t;
	for (uint64_t m = n->paths; m != 0; m &= m - 1)
		ls_repath_mark(fo->pdest, DEST_SLOTS, n->h, (uint8_t)__builtin_ctzll(m), n->t,
			       &fo->p);
	fo->probe_until = n->t + fo->p.hold;
	b->fo_probe_live = true;
}

/* ... and on the data path's other lcores (many cores). A full ring loses
 * the note there: those lcores' flows then move on their own ACKs only. */
static void
note_post(struct lsd_bridge *b, const struct fo_note *n)
{
	struct fo_note copy = *n;   /* the ring's API takes no const */

	for (unsigned int i = 1; i < lsd_bset.n; i++)
		if (lsd_bset.b[i]->notes == NULL ||
		    rte_ring_sp_enqueue_elem(lsd_bset.b[i]->notes, &copy, sizeof(copy)) != 0)
			b->st.fo_notes_lost++;
}

void
lsd_fo_probe_path(struct lsd_bridge *b, const struct lsd_peer *peer,
		  struct lsd_peer_path *pp, uint64_t data_paths, uint64_t now_ns)
{
	struct lsd_fo *fo = b->fo;
	const struct ls_path_live *l = &pp->live;
	struct fo_note note;
	/* the next reply is due an interval after the last, give or take how
	 * much round trips vary: 4 rttvar, as RFC 6298 allows them */
	uint64_t lim = (uint64_t)peer->interval_us * 1000 + 4 * (uint64_t)pp->fo_rttvar;
	uint32_t t, h;

	lim = RTE_MAX(lim, (uint64_t)fo->probe_silence);
	lim = RTE_MIN(lim, 20 * (uint64_t)fo->probe_silence);
	if (!l->any_rx || l->tx_next - 1 - l->max_seq_rx < 3 || !b->fab_drained)
		return;
	/* the absolute rule waits out a pause of the whole port, the one it is
	 * in too: in the lab every reply stops for half a ms now and then, and
	 * a path judged just before the pause began looked silent (the others
	 * had one more reply in) */
	if (!overtaken(peer, pp, RTE_MAX(2 * (uint64_t)peer->interval_us * 1000,
					 (uint64_t)fo->probe_silence / 2)) &&
	    (now_ns - l->last_rx_ns < lim || !peer_heard(peer, now_ns, lim) ||
	     rte_rdtsc() - b->fab_last_rx > b->fab_pause ||
	     (rte_rdtsc() - b->fab_resumed) * 1000000 / b->hz * 1000 < lim))
		return;
	t = fo_clock(rte_rdtsc());
	h = addr_hash(&peer->addr);
	note = (struct fo_note){.h = h, .t = t, .paths = data_paths & fo->all};
	for (uint16_t p = 0; p < peer->n_paths; p++)
		note.cov |= __atomic_load_n(&peer->path[p].data_paths, __ATOMIC_RELAXED);
	note_apply(b, &note);
	note_post(b, &note);
	if (!pp->fo_silent)
		b->st.probe_silences++;
	pp->fo_silent = 1;
}

/* A probe path found silent answers again: its data paths' marks for the
 * peer go (another silent path that shares some marks them again at its
 * next probe). Flows that moved stay away for hold_ms all the same. */
void
lsd_fo_probe_heard(struct lsd_bridge *b, const struct lsd_peer *peer, uint64_t data_paths)
{
	struct fo_note note = {.h = addr_hash(&peer->addr), .paths = data_paths, .heard = 1};

	note_apply(b, &note);
	note_post(b, &note);
}

/* The lead's notes, on another lcore of the data path. */
void
lsd_fo_notes(struct lsd_bridge *b)
{
	struct fo_note note;

	while (rte_ring_sc_dequeue_elem(b->notes, &note, sizeof(note)) == 0)
		note_apply(b, &note);
}

/*
 * A frame of a flow with a path while a probe mark lives or the flow is
 * away: a flow on a marked path moves; a flow never acknowledged goes home
 * after hold_ms unless its home is marked (an acknowledged one does at its
 * requests, lsd_fo_request).
 */
void
lsd_fo_frame(struct lsd_bridge *b, struct ls_flow *f, int32_t idx,
	     const struct ls_flow_pkt *pk, uint64_t now)
{
	struct lsd_fo *fo = b->fo;
	struct ls_repath_flow *s = &fo->flow[idx];
	uint32_t t = fo_clock(now);
	uint32_t h = dest_hash(&pk->key);
	uint64_t pm = 0, marks;

	if (b->fo_probe_live) {
		if ((int32_t)(t - fo->probe_until) >= 0)
			b->fo_probe_live = false;
		else
			pm = ls_repath_marks(fo->pdest, DEST_SLOTS, h, t);
	}
	if (pm >> f->path & 1) {
		/* every path marked: the peer, not a path; stay */
		if ((fo->all & ~pm) == 0) {
			b->st.repath_exhausted++;
			return;
		}
		move(b, f, s, pk, t, now, FO_BY_PROBES);
		return;
	}
	if (!f->away || f->heard || !(s->state & LS_REPATH_AWAY) ||
	    (int32_t)(t - s->until) < 0)
		return;
	marks = pm | ls_repath_marks(fo->dest, DEST_SLOTS, h, t);
	if (s->home != LS_REPATH_NO_PATH && (marks >> s->home & 1)) {
		s->until = t + fo->p.hold;
		return;
	}
	f->path = s->home;
	f->away = 0;
	ls_repath_went_home(s);
	b->st.repath_returns++;
}
