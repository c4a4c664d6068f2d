/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Contention avoidance's decisions (ls_balance.h says what and why).
 */
#include <stdbool.h>
#include <string.h>

#include "ls_balance.h"

#define MAX_I64(a, b) ((a) > (b) ? (a) : (b))

static uint64_t
next_rand(struct ls_balance *s)
{
	/* xorshift64: a different draw per node and round is all it needs */
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

void
ls_balance_init(struct ls_balance *s, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed != 0 ? seed : 0x9e3779b97f4a7c15ULL;
}

static uint16_t
n_of(const struct ls_balance_params *p)
{
	return p->n_paths < LS_BALANCE_MAX_PATHS ? p->n_paths : LS_BALANCE_MAX_PATHS;
}

static void
cool(struct ls_balance_pstate *ps)
{
	ps->act_at = 0;
	ps->runs = 0;
}

/* A new sample of a path, at least span_ns after the last one compared:
 * building or not. Closer ones are not compared: over a short span the
 * measurement's noise passes for a slope. */
static void
note(struct ls_balance_pstate *ps, const struct ls_balance_params *p,
     const struct ls_balance_sample *x)
{
	bool building;

	if (ps->t_last != 0 && x->t_ns - ps->t_last < p->span_ns)
		return;
	building = ps->t_last != 0 && ps->q_last >= 0 &&
		   (x->q_ns - ps->q_last) * 2 >= (int64_t)(x->t_ns - ps->t_last);
	ps->runs = building ? (ps->runs < 255 ? ps->runs + 1 : 255) : 0;
	ps->q_last = x->q_ns;
	ps->t_last = x->t_ns;
}

/*
 * Whether hot path ps acts now: a sample measured after its wait ended
 * still shows the queue building. One measured before could predate
 * another node's move that already ended the collision (both would jump);
 * one after it shows the queue standing. The wait is counted in the
 * samples' time (when their probes left), not in when they arrive: they
 * arrive a queue's delay late, and by then the collision's burst may be
 * over. An episode whose queue stopped building on average since it
 * turned hot ends.
 */
static bool
acts(struct ls_balance_pstate *ps, const struct ls_balance_sample *x)
{
	if (x->t_ns <= ps->t0)
		return false;
	if ((x->q_ns - ps->q0) * 2 < (int64_t)(x->t_ns - ps->t0)) {
		cool(ps);
		return false;
	}
	return x->t_ns >= ps->act_at && ps->runs > 0;
}

int
ls_balance_observe(struct ls_balance *s, const struct ls_balance_params *p,
		   const struct ls_balance_sample *smp, uint64_t now_ns)
{
	int due = -1;
	int64_t due_q = -1;

	for (uint16_t j = 0; j < n_of(p); j++) {
		struct ls_balance_pstate *ps = &s->path[j];
		const struct ls_balance_sample *x = &smp[j];

		if (x->q_ns < 0) {
			memset(ps, 0, sizeof(*ps));
			ps->q_last = -1;
			continue;
		}
		if (x->t_ns > ps->t_seen) {
			/* the mean of the last ~32 samples and their spread: a
			 * link busy at its rate queues a little more than an
			 * idle one, by less than one sample's noise (target) */
			if (ps->t_seen == 0) {
				ps->q_slow = x->q_ns;
				ps->q_dev = 0;
			} else {
				int64_t e = x->q_ns - ps->q_slow;

				ps->q_slow += e / 32;
				ps->q_dev += ((e < 0 ? -e : e) - ps->q_dev) / 32;
			}
			ps->t_seen = x->t_ns;
		}
		if (x->t_ns > ps->t_last)
			note(ps, p, x);
		if (x->q_ns < p->hot_ns / 2) {
			cool(ps);
			continue;
		}
		if (ps->act_at == 0) {
			if (ps->runs < (p->runs > 0 ? p->runs : 1) || x->q_ns < p->hot_ns)
				continue;
			ps->q0 = x->q_ns;
			ps->t0 = x->t_ns;
			ps->act_at = (x->t_ns + (p->jitter_ns > 0 ? next_rand(s) % p->jitter_ns : 0)) | 1;
		}
		if (!acts(ps, x))
			continue;
		/* a coin: another node that sees the same building queue may
		 * act within a queue's delay of us, before either move can show
		 * (the lab: two nodes took turns on one pair of links in 5 of
		 * 20 seeds); heads we act, tails this episode ends and the path
		 * must build `runs` more samples first */
		if (next_rand(s) & 1) {
			cool(ps);
			continue;
		}
		if (x->q_ns > due_q) {
			due = j;
			due_q = x->q_ns;
		}
	}
	return due >= 0 && now_ns >= s->settle_until ? due : -1;
}

/* Whether path t may take flows from hot: cool, allowed, and not one whose
 * flows of ours would then be as many as stay behind. */
static bool
eligible(const struct ls_balance *s, const struct ls_balance_params *p,
	 const struct ls_balance_path *in, int hot, uint64_t allowed, uint16_t t)
{
	const struct ls_balance_path *c = &in[t];

	return t != hot && (allowed >> t & 1) && c->q_ns >= 0 && c->q_ns < p->hot_ns / 2 &&
	       s->path[t].runs == 0 && (c->flows == 0 || c->flows + 1 < in[hot].flows);
}

/*
 * A cool path with the fewest of our flows and, among those, a slow mean
 * queueing within the noise of the least, chosen at random among them;
 * or -1. The noise is the least path's own: the mean absolute deviation
 * of its samples (at least hot_ns / 256, for a fabric so quiet that it
 * has none). A path carrying someone else's flow at its rate queues more
 * than an idle one by about a frame time, which the fast mean's eight
 * samples and a margin scaled to hot_ns could not tell apart (the lab,
 * seed 4 of bench_contention: idle spine 0.75 ms, one flow 1.99 ms, both
 * inside "twice the least plus hot / 16"; one job's moves landed on the
 * other's spines 3 times in 4 and the jobs took turns for 18 moves).
 * At random within the noise, not the least: nodes that see the same
 * queues would all pick the same path (the lab: 8 of 20 seeds ended with
 * two nodes taking turns on one pair of links).
 */
static int
target(struct ls_balance *s, const struct ls_balance_params *p, const struct ls_balance_path *in,
       int hot, uint64_t allowed)
{
	uint32_t fewest = UINT32_MAX, ties = 0;
	int64_t least = INT64_MAX, band = 0;
	int best = -1;

	for (uint16_t t = 0; t < n_of(p); t++) {
		if (!eligible(s, p, in, hot, allowed, t) || in[t].flows > fewest)
			continue;
		if (in[t].flows < fewest || s->path[t].q_slow < least) {
			least = s->path[t].q_slow;
			band = s->path[t].q_dev;
		}
		fewest = in[t].flows;
	}
	band = MAX_I64(band, p->hot_ns / 256);
	for (uint16_t t = 0; t < n_of(p); t++) {
		if (!eligible(s, p, in, hot, allowed, t) || in[t].flows != fewest ||
		    s->path[t].q_slow > least + band)
			continue;
		if (next_rand(s) % ++ties == 0)
			best = t;   /* reservoir: each one equally likely */
	}
	return best;
}

void
ls_balance_cool(struct ls_balance *s, uint16_t j)
{
	if (j < LS_BALANCE_MAX_PATHS)
		cool(&s->path[j]);
}

int
ls_balance_pick(struct ls_balance *s, const struct ls_balance_params *p,
		const struct ls_balance_path *in, int hot, uint64_t allowed,
		uint64_t now_ns, struct ls_balance_move *mv)
{
	uint32_t k, n;
	int t;

	if (hot < 0 || hot >= n_of(p))
		return 0;
	/* the jitter again: two nodes that moved together would otherwise
	 * come out of settling together and move together again */
	s->settle_until = now_ns + p->settle_ns + (p->jitter_ns > 0 ? next_rand(s) % p->jitter_ns : 0);
	cool(&s->path[hot]);  /* hot again only after `runs` more samples: the move's effect first */
	k = in[hot].flows;
	if (k == 0)
		return 0;
	t = target(s, p, in, hot, allowed);
	if (t < 0)
		return 0;
	for (n = k / 2 > 0 ? k / 2 : 1; n > 1 && in[t].flows + n > k - n; n--)
		;
	*mv = (struct ls_balance_move){.from = (uint8_t)hot, .to = (uint8_t)t, .flows = n,
				       .q_from = in[hot].q_ns, .q_to = in[t].q_ns};
	return 1;
}
