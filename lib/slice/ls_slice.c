/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The slice scheduler (see ls_slice.h for the service order and why).
 *
 * Bit masks of the slices with frames queued, of latency slices and of
 * slices with a minimum let each pick look only at slices that could send:
 * with 33 slices, walking all of them per packet took 39% of the data
 * path's time (tools/bench/bench_datapath.sh, "mix"). A slice's buckets are
 * refilled when it is looked at, from its own last refill.
 *
 * What every frame touches sits in a slice's first two cache lines, and a
 * frame and its length share one queue entry: with 32 busy slices a frame
 * per slice per burst is the common case, and each extra line per slice
 * was a miss per frame ("mix": the scheduler went from 27 to 56 cycles a
 * frame against one slice). A slice with no minimum and no maximum (the
 * `limited` flag clear) never reads its buckets.
 *
 * Token buckets count bytes * 8 * hz (or packets * hz) so that one clock tick
 * adds exactly rate tokens: refilling is a multiply, charging an add. Buckets
 * refill once per dequeue call for every slice (at most LS_SLICE_MAX, a few
 * cache lines), not per packet. A bucket with rate 0 is "unlimited" when it
 * is a maximum and "empty" when it is a minimum.
 */
#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ls_slice.h"

#define QUANTUM 2048              /* DRR bytes per unit of weight and visit */

struct bucket {
	uint64_t rate;     /* tokens per tick (bits/s or packets/s) */
	uint64_t cap;      /* depth in tokens */
	uint64_t tokens;
};

struct qent {
	void *obj;
	uint32_t len;
};

struct slice {
	/* line 0: every enqueue and dequeue */
	alignas(64) struct qent *q; /* FIFO, head/tail free-running */
	uint32_t head, tail, mask;
	bool used;
	bool limited;               /* a minimum or maximum is set */
	uint64_t deficit;
	uint64_t last;              /* clock of its buckets' last refill */
	uint64_t enq_pkts, enq_bytes, deq_pkts;
	/* line 1: the rest of the counters, then what limits read */
	uint64_t deq_bytes, sent_excess, sent_prio, sent_min, drops;
	struct bucket min_b, min_p, max_b, max_p;
	uint32_t share;             /* of conf's rates, LS_SLICE_SHARE_ONE: all */
	struct ls_slice_conf conf;
};

_Static_assert(offsetof(struct slice, deq_bytes) == 64, "a slice's first line holds what every frame touches");

struct ls_slice_sched {
	uint64_t hz, last;
	uint32_t overhead, burst_bytes, burst_pkts;
	uint32_t share;             /* new slices' share */
	struct bucket link;
	unsigned int n;             /* one past the highest used index */
	unsigned int rr, drr;       /* round-robin positions, phases 2 and 3 */
	bool drr_fresh;             /* drr's slice got its quantum this visit */
	uint64_t now;               /* clock of the dequeue in progress */
	uint64_t backlog;           /* bit k: slice k has frames queued */
	uint64_t lat_mask;          /* bit k: slice k is a latency slice */
	uint64_t min_mask;          /* bit k: slice k has a minimum */
	struct slice sl[LS_SLICE_MAX];
};

int
ls_slice_conf_check(const struct ls_slice_conf *c, const char **why)
{
	const char *w = NULL;

	if (c->name[0] == '\0' || memchr(c->name, '\0', LS_SLICE_NAME_LEN) == NULL)
		w = "name must be 1..31 characters";
	else if (c->max_bps != 0 && c->min_bps > c->max_bps)
		w = "min_bps above max_bps";
	else if (c->max_pps != 0 && c->min_pps > c->max_pps)
		w = "min_pps above max_pps";
	else if (c->weight < 1 || c->weight > 1000)
		w = "weight must be 1..1000";
	else if (c->qlen < 16 || c->qlen > 65536 || (c->qlen & (c->qlen - 1)) != 0)
		w = "qlen must be a power of two, 16..65536";
	if (why != NULL)
		*why = w;
	return w == NULL ? 0 : -EINVAL;
}

static void
bucket_init(struct bucket *b, uint64_t rate, uint64_t cap)
{
	b->rate = rate;
	b->cap = cap;
	b->tokens = cap;
}

static void
bucket_fill(struct bucket *b, uint64_t dt)
{
	if (b->rate == 0)
		return;
	if (dt >= (b->cap - b->tokens) / b->rate + 1)
		b->tokens = b->cap;
	else
		b->tokens += dt * b->rate;
}

/* A maximum: rate 0 is no limit. */
static inline bool
max_ok(const struct bucket *b, uint64_t cost)
{
	return b->rate == 0 || b->tokens >= cost;
}

static inline void
charge(struct bucket *b, uint64_t cost)
{
	if (b->rate != 0)
		b->tokens = b->tokens > cost ? b->tokens - cost : 0;
}

struct ls_slice_sched *
ls_slice_create(const struct ls_slice_params *p)
{
	struct ls_slice_sched *s;

	if (p == NULL || p->hz == 0 || p->link_bps == 0) {
		errno = EINVAL;
		return NULL;
	}
	s = aligned_alloc(alignof(struct ls_slice_sched), sizeof(*s));
	if (s == NULL)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->hz = p->hz;
	s->last = p->now;
	s->overhead = p->overhead ? p->overhead : LS_SLICE_OVERHEAD;
	s->burst_bytes = p->burst_bytes ? p->burst_bytes : 16384;
	s->burst_pkts = p->burst_pkts ? p->burst_pkts : 32;
	s->share = p->share && p->share < LS_SLICE_SHARE_ONE ? p->share : LS_SLICE_SHARE_ONE;
	bucket_init(&s->link, p->link_bps, (uint64_t)s->burst_bytes * 8 * s->hz);
	return s;
}

void
ls_slice_free(struct ls_slice_sched *s)
{
	if (s == NULL)
		return;
	for (unsigned int i = 0; i < LS_SLICE_MAX; i++)
		free(s->sl[i].q);
	free(s);
}

int
ls_slice_set_link(struct ls_slice_sched *s, uint64_t link_bps)
{
	if (link_bps == 0)
		return -EINVAL;
	s->link.rate = link_bps;
	return 0;
}

/* A configured rate at a share: 0 (none) stays 0, any other at least 1. */
static uint64_t
scaled(uint64_t rate, uint32_t share)
{
	uint64_t r;

	if (rate == 0 || share == LS_SLICE_SHARE_ONE)
		return rate;
	r = rate / LS_SLICE_SHARE_ONE * share + rate % LS_SLICE_SHARE_ONE * share /
	    LS_SLICE_SHARE_ONE;
	return r > 0 ? r : 1;
}

/* (Re)build a slice's buckets from its conf and share. Depths: the
 * scheduler's burst, so a slice idle for a while may send one burst at
 * once, never more. */
static void
slice_buckets(const struct ls_slice_sched *s, struct slice *sl)
{
	uint64_t cb = (uint64_t)s->burst_bytes * 8 * s->hz;
	uint64_t cp = (uint64_t)s->burst_pkts * s->hz;

	bucket_init(&sl->min_b, scaled(sl->conf.min_bps, sl->share), cb);
	bucket_init(&sl->min_p, scaled(sl->conf.min_pps, sl->share), cp);
	bucket_init(&sl->max_b, scaled(sl->conf.max_bps, sl->share), cb);
	bucket_init(&sl->max_p, scaled(sl->conf.max_pps, sl->share), cp);
}

int
ls_slice_set_share(struct ls_slice_sched *s, unsigned int idx, uint32_t share)
{
	struct slice *sl;

	if (idx >= s->n || !s->sl[idx].used)
		return -ENOENT;
	if (share > LS_SLICE_SHARE_ONE)
		return -EINVAL;
	sl = &s->sl[idx];
	sl->share = share;
	/* rates change, tokens stay: no burst from a new share */
	sl->min_b.rate = scaled(sl->conf.min_bps, share);
	sl->min_p.rate = scaled(sl->conf.min_pps, share);
	sl->max_b.rate = scaled(sl->conf.max_bps, share);
	sl->max_p.rate = scaled(sl->conf.max_pps, share);
	return 0;
}

int
ls_slice_find(const struct ls_slice_sched *s, const char *name)
{
	for (unsigned int i = 0; i < s->n; i++)
		if (s->sl[i].used && strcmp(s->sl[i].conf.name, name) == 0)
			return (int)i;
	return -ENOENT;
}

static int
slice_alloc_queue(struct slice *sl, uint32_t qlen)
{
	struct qent *q = malloc(sizeof(*q) * qlen);

	if (q == NULL)
		return -ENOMEM;
	free(sl->q);
	sl->q = q;
	sl->mask = qlen - 1;
	sl->head = sl->tail = 0;
	return 0;
}

int
ls_slice_set(struct ls_slice_sched *s, const struct ls_slice_conf *c)
{
	int idx = ls_slice_find(s, c->name);
	bool fresh = idx < 0;
	struct bucket was[4];
	struct slice *sl;
	int rc;

	if (ls_slice_conf_check(c, NULL) != 0)
		return -EINVAL;
	if (idx < 0) {
		for (idx = 0; idx < LS_SLICE_MAX && s->sl[idx].used; idx++)
			;
		if (idx == LS_SLICE_MAX)
			return -ENOSPC;
		sl = &s->sl[idx];
		sl->enq_pkts = sl->enq_bytes = sl->deq_pkts = sl->deq_bytes = 0;
		sl->sent_excess = sl->sent_prio = sl->sent_min = sl->drops = 0;
		sl->deficit = 0;
		sl->share = s->share;
		rc = slice_alloc_queue(sl, c->qlen);
		if (rc < 0)
			return rc;
	} else {
		sl = &s->sl[idx];
		if (c->qlen != sl->conf.qlen) {
			if (sl->tail != sl->head)
				return -EBUSY;
			rc = slice_alloc_queue(sl, c->qlen);
			if (rc < 0)
				return rc;
		}
	}
	was[0] = sl->min_b, was[1] = sl->min_p, was[2] = sl->max_b, was[3] = sl->max_p;
	sl->conf = *c;
	sl->limited = c->min_bps != 0 || c->min_pps != 0 || c->max_bps != 0 || c->max_pps != 0;
	slice_buckets(s, sl);
	if (!fresh) {
		/* a slice set again keeps what it had: a policy change elsewhere
		 * gave every slice a full burst (bridge fuzz: 200 changes let a
		 * 1 Mb/s slice through uncapped) */
		struct bucket *now[4] = {&sl->min_b, &sl->min_p, &sl->max_b, &sl->max_p};

		for (int k = 0; k < 4; k++)
			if (was[k].rate != 0 && was[k].tokens < now[k]->tokens)
				now[k]->tokens = was[k].tokens;
	} else {
		sl->last = s->last;
	}
	sl->used = true;
	s->lat_mask = (s->lat_mask & ~(1ULL << idx)) | ((uint64_t)c->latency << idx);
	s->min_mask = (s->min_mask & ~(1ULL << idx)) |
		      ((uint64_t)(c->min_bps != 0 || c->min_pps != 0) << idx);
	if ((unsigned int)idx >= s->n)
		s->n = (unsigned int)idx + 1;
	return idx;
}

int
ls_slice_del(struct ls_slice_sched *s, unsigned int idx)
{
	if (idx >= s->n || !s->sl[idx].used)
		return -ENOENT;
	if (s->sl[idx].tail != s->sl[idx].head)
		return -EBUSY;
	s->sl[idx].used = false;
	s->lat_mask &= ~(1ULL << idx);
	s->min_mask &= ~(1ULL << idx);
	while (s->n > 0 && !s->sl[s->n - 1].used)
		s->n--;
	return 0;
}

int
ls_slice_enqueue(struct ls_slice_sched *s, unsigned int idx, void *obj, uint32_t len)
{
	struct slice *sl;

	if (idx >= s->n || !s->sl[idx].used)
		return -ENOENT;
	sl = &s->sl[idx];
	if (sl->tail - sl->head > sl->mask) {
		sl->drops++;
		return -ENOBUFS;
	}
	sl->q[sl->tail & sl->mask] = (struct qent){obj, len};
	sl->tail++;
	s->backlog |= 1ULL << idx;
	sl->enq_pkts++;
	sl->enq_bytes += len;
	return 0;
}

static void
refill(struct ls_slice_sched *s, uint64_t now)
{
	uint64_t dt = now > s->last ? now - s->last : 0;

	s->now = now;
	if (dt == 0)
		return;
	s->last = now;
	bucket_fill(&s->link, dt);
}

/* Bring a slice's buckets up to the dequeue's clock. Inlined always: it
 * is a test and a return for a slice without limits, once per frame picked,
 * and GCC left it out of line in one build. */
static inline __attribute__((always_inline)) void
slice_refill(const struct ls_slice_sched *s, struct slice *sl)
{
	uint64_t dt = s->now > sl->last ? s->now - sl->last : 0;

	if (dt == 0 || !sl->limited)
		return;
	sl->last = s->now;
	bucket_fill(&sl->min_b, dt);
	bucket_fill(&sl->min_p, dt);
	bucket_fill(&sl->max_b, dt);
	bucket_fill(&sl->max_p, dt);
}

static inline uint64_t
cost_bytes(const struct ls_slice_sched *s, uint32_t len)
{
	return (uint64_t)(len + s->overhead) * 8 * s->hz;
}

static inline uint32_t
head_len(const struct slice *sl)
{
	return sl->q[sl->head & sl->mask].len;
}

static inline bool
under_max(const struct ls_slice_sched *s, const struct slice *sl)
{
	return !sl->limited || (max_ok(&sl->max_b, cost_bytes(s, head_len(sl))) &&
				max_ok(&sl->max_p, s->hz));
}

/* Under its guaranteed minimum: some minimum is set and every set one has
 * the tokens for the head packet. */
static inline bool
under_min(const struct ls_slice_sched *s, const struct slice *sl)
{
	if (sl->min_b.rate == 0 && sl->min_p.rate == 0)
		return false;
	return max_ok(&sl->min_b, cost_bytes(s, head_len(sl))) &&
	       max_ok(&sl->min_p, s->hz);
}

enum phase { PH_PRIO, PH_MIN, PH_EXCESS };

/* The first slice of mask at or after from, wrapping; -1 when mask is 0. */
static inline int
next_bit(uint64_t mask, unsigned int from)
{
	uint64_t hi = from < 64 ? mask & (~0ULL << from) : 0;

	if (hi != 0)
		return __builtin_ctzll(hi);
	return mask != 0 ? __builtin_ctzll(mask) : -1;
}

/* Phase 3: deficit round robin by weight among backlogged slices under
 * their max. A visit adds one quantum; a slice whose head frame needs more
 * waits for its next visit (bounded: a quantum unit is 2048 bytes, a frame
 * at most 9216 plus overhead). */
static int
pick_excess(struct ls_slice_sched *s)
{
	unsigned int tries = 2 * (unsigned int)__builtin_popcountll(s->backlog) *
			     (9216 / QUANTUM + 2);

	for (; tries > 0; tries--) {
		int k = next_bit(s->backlog, s->drr);
		struct slice *sl;

		if (k < 0)
			return -1;
		if ((unsigned int)k != s->drr)
			s->drr_fresh = false;
		s->drr = (unsigned int)k;
		sl = &s->sl[k];
		slice_refill(s, sl);
		if (under_max(s, sl)) {
			if (!s->drr_fresh) {
				sl->deficit += (uint64_t)sl->conf.weight * QUANTUM;
				s->drr_fresh = true;
			}
			if (sl->deficit >= head_len(sl))
				return k;
		}
		s->drr = (unsigned int)k + 1;
		s->drr_fresh = false;
	}
	return -1;
}

static int
pick(struct ls_slice_sched *s, enum phase *ph)
{
	uint64_t m = s->backlog & s->lat_mask;

	while (m != 0) {
		int k = __builtin_ctzll(m);
		struct slice *sl = &s->sl[k];

		m &= m - 1;
		slice_refill(s, sl);
		if (under_max(s, sl)) {
			*ph = PH_PRIO;
			return k;
		}
	}
	m = s->backlog & s->min_mask;
	for (unsigned int left = (unsigned int)__builtin_popcountll(m); left > 0; left--) {
		int k = next_bit(m, s->rr);
		struct slice *sl = &s->sl[k];

		m &= ~(1ULL << k);
		slice_refill(s, sl);
		if (under_min(s, sl) && under_max(s, sl)) {
			s->rr = (unsigned int)k + 1;
			*ph = PH_MIN;
			return k;
		}
	}
	*ph = PH_EXCESS;
	return pick_excess(s);
}

static void *
take(struct ls_slice_sched *s, struct slice *sl, enum phase ph, uint32_t *len)
{
	struct qent e = sl->q[sl->head & sl->mask];
	uint64_t cb = cost_bytes(s, e.len);

	sl->head++;
	if (sl->head == sl->tail) {
		s->backlog &= ~(1ULL << (sl - s->sl));
		sl->deficit = 0;
	}
	charge(&s->link, cb);
	if (sl->limited) {
		charge(&sl->max_b, cb);
		charge(&sl->max_p, s->hz);
		if (ph != PH_EXCESS) {
			charge(&sl->min_b, cb);
			charge(&sl->min_p, s->hz);
		}
	}
	if (ph == PH_EXCESS && sl->head != sl->tail)
		sl->deficit -= e.len;
	*len = e.len;
	return e.obj;
}

/* A run's frames and bytes into sl's counters, once per run: per frame,
 * GCC made the two counters one 16-byte add across the slice's two lines,
 * and each frame's load waited on the last frame's split store (two fifths
 * of the bridge's to_fabric in perf). */
static inline void
count_run(struct slice *sl, enum phase ph, unsigned int n, uint64_t bytes)
{
	sl->deq_pkts += n;
	sl->deq_bytes += bytes;
	if (ph == PH_PRIO)
		sl->sent_prio += n;
	else if (ph == PH_MIN)
		sl->sent_min += n;
	else
		sl->sent_excess += n;
}

/* Would the next pick choose sl again, in the same phase? Within one
 * dequeue the clock stands still and only sl's buckets and queue changed,
 * so the slices pick passed over are still passed over: a latency slice
 * keeps the lead while under its maximum, an excess slice while its
 * deficit covers its head. A minimum slice hands over to the next one
 * (round robin), so it is picked afresh. */
static inline bool
again(const struct ls_slice_sched *s, const struct slice *sl, enum phase ph)
{
	if (sl->head == sl->tail || ph == PH_MIN || !under_max(s, sl))
		return false;
	return ph == PH_PRIO || sl->deficit >= head_len(sl);
}

unsigned int
ls_slice_dequeue(struct ls_slice_sched *s, uint64_t now, void **out, unsigned int max)
{
	unsigned int got = 0;

	refill(s, now);
	while (got < max) {
		enum phase ph;
		int k = pick(s, &ph);
		struct slice *sl;
		unsigned int n = 0;
		uint64_t bytes = 0;
		bool link_ok = true;

		if (k < 0)
			break;
		/* a run from the chosen slice: one pick per run, not per frame */
		sl = &s->sl[k];
		do {
			uint32_t len;

			if (!max_ok(&s->link, cost_bytes(s, head_len(sl)))) {
				link_ok = false;
				break;
			}
			out[got++] = take(s, sl, ph, &len);
			n++;
			bytes += len;
		} while (got < max && again(s, sl, ph));
		count_run(sl, ph, n, bytes);
		if (!link_ok)
			break;
	}
	return got;
}

unsigned int
ls_slice_drain(struct ls_slice_sched *s, unsigned int idx, void **out, unsigned int max)
{
	struct slice *sl;
	unsigned int got = 0;

	if (idx >= s->n || !s->sl[idx].used)
		return 0;
	sl = &s->sl[idx];
	while (got < max && sl->tail != sl->head) {
		out[got++] = sl->q[sl->head & sl->mask].obj;
		sl->head++;
	}
	if (sl->tail == sl->head)
		s->backlog &= ~(1ULL << idx);
	return got;
}

int
ls_slice_get(const struct ls_slice_sched *s, unsigned int idx, struct ls_slice_conf *c,
	     struct ls_slice_stats *st)
{
	const struct slice *sl;

	if (idx >= s->n || !s->sl[idx].used)
		return -ENOENT;
	sl = &s->sl[idx];
	if (c != NULL)
		*c = sl->conf;
	if (st != NULL) {
		*st = (struct ls_slice_stats){
			.enq_pkts = sl->enq_pkts, .enq_bytes = sl->enq_bytes,
			.deq_pkts = sl->deq_pkts, .deq_bytes = sl->deq_bytes,
			.drops = sl->drops, .sent_prio = sl->sent_prio,
			.sent_min = sl->sent_min, .sent_excess = sl->sent_excess,
			.backlog = sl->tail - sl->head};
	}
	return 0;
}

unsigned int
ls_slice_count(const struct ls_slice_sched *s)
{
	return s->n;
}
