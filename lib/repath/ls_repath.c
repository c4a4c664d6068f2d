/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Repathing on silence (ls_repath.h): the per-flow wait, its RFC 6298
 * estimator, the verdict of a request, the choice of a path and the
 * per-destination marks.
 */
#include <string.h>

#include "ls_repath.h"

void
ls_repath_flow_init(struct ls_repath_flow *s, const struct ls_repath_params *p)
{
	memset(s, 0, sizeof(*s));
	s->limit = p->silence;
}

void
ls_repath_on_ack(struct ls_repath_flow *s, const struct ls_repath_params *p, uint32_t t)
{
	if (s->wait != 0) {
		int32_t r = (int32_t)(t - s->wait), d;
		uint32_t lim;

		if (r < 0)
			r = 0;
		if (s->srtt == 0) {
			s->srtt = (uint32_t)r << 3;
			s->rttvar = (uint32_t)r << 1;
		} else {
			/* srtt += (r - srtt) / 8; rttvar += (|r - srtt| - rttvar) / 4 */
			d = r - (int32_t)(s->srtt >> 3);
			s->srtt = (uint32_t)((int32_t)s->srtt + d);
			if (d < 0)
				d = -d;
			s->rttvar = (uint32_t)((int32_t)s->rttvar + d - (int32_t)(s->rttvar >> 2));
		}
		lim = (s->srtt >> 3) + s->rttvar;
		s->limit = lim < p->silence ? p->silence : lim > p->silence_max ? p->silence_max : lim;
	}
	s->wait = 0;
	s->tries = 0;
}

int
ls_repath_on_request(struct ls_repath_flow *s, const struct ls_repath_params *p, uint32_t t,
		     int (*home_silent)(void *arg, uint8_t home), void *arg)
{
	if (s->wait == 0) {
		s->wait = t;
	} else if (t - s->wait > s->limit) {
		if (s->tries >= p->n_paths) {
			/* silent on every path since the last answer: the peer,
			 * not a path; moving on would only reorder */
			s->wait = t;
			return LS_REPATH_EXHAUSTED;
		}
		return LS_REPATH_MOVE;
	}
	if ((s->state & LS_REPATH_AWAY) && (int32_t)(t - s->until) >= 0) {
		if (s->home != LS_REPATH_NO_PATH && home_silent != NULL &&
		    home_silent(arg, s->home)) {
			s->until = t + p->hold; /* found silent again meanwhile */
			return LS_REPATH_STAY;
		}
		return LS_REPATH_HOME;
	}
	return LS_REPATH_STAY;
}

void
ls_repath_moved(struct ls_repath_flow *s, const struct ls_repath_params *p, uint32_t t,
		uint8_t from)
{
	if (!(s->state & LS_REPATH_AWAY))
		s->home = from;
	s->state |= LS_REPATH_AWAY;
	s->until = t + p->hold;
	s->wait = t;              /* the new path gets a limit of its own */
	s->tries++;
	s->moves++;
}

void
ls_repath_went_home(struct ls_repath_flow *s)
{
	s->state &= (uint8_t)~LS_REPATH_AWAY;
}

int
ls_repath_pick(uint64_t allowed, uint64_t silent, uint64_t heard, uint8_t cur,
	       uint16_t n_paths, uint32_t hash)
{
	uint64_t all = n_paths >= 64 ? ~0ULL : (1ULL << n_paths) - 1;
	uint64_t c = cur < 64 ? 1ULL << cur : 0, want;
	unsigned int k;

	if (n_paths < 2)
		return -1;
	silent |= c;
	want = allowed & all & ~silent;
	if (want == 0)
		want = all & ~silent;
	if (want == 0)
		want = all & ~c;
	if (want == 0)
		return -1;
	/* two at least, or every flow leaving a dead path piles onto the
	 * one path answered first */
	if (__builtin_popcountll(want & heard) >= 2)
		want &= heard;
	/* the (hash mod n)-th candidate */
	for (k = hash % (unsigned int)__builtin_popcountll(want); k > 0; k--)
		want &= want - 1;
	return __builtin_ctzll(want);
}

uint64_t
ls_repath_marks(const struct ls_repath_mark *m, uint32_t n, uint32_t h, uint32_t t)
{
	const struct ls_repath_mark *e = &m[h & (n - 1)];

	return e->tag == (h | 1) && (int32_t)(e->until - t) > 0 ? e->silent : 0;
}

void
ls_repath_mark(struct ls_repath_mark *m, uint32_t n, uint32_t h, uint8_t k, uint32_t t,
	       const struct ls_repath_params *p)
{
	struct ls_repath_mark *e = &m[h & (n - 1)];

	if (k >= 64)
		return;
	/* a collision takes the slot over: the other destination forgets its
	 * marks (its flows may try a silent path again, a silence each) */
	if (e->tag != (h | 1) || (int32_t)(e->until - t) <= 0) {
		e->tag = h | 1;
		e->silent = 0;
	}
	e->silent |= 1ULL << k;
	e->until = t + p->hold;
}

void
ls_repath_heard_note(struct ls_repath_heard *m, uint32_t n, uint32_t h, uint8_t k, uint32_t t)
{
	struct ls_repath_heard *e = &m[h & (n - 1)];

	if (k >= LS_REPATH_HEARD_PATHS)
		return;
	if (e->tag != (h | 1)) {
		memset(e, 0, sizeof(*e));
		e->tag = h | 1;
	}
	e->t[k] = t | 1;
}

uint64_t
ls_repath_heard_since(const struct ls_repath_heard *m, uint32_t n, uint32_t h, uint32_t since)
{
	const struct ls_repath_heard *e = &m[h & (n - 1)];
	uint64_t out = 0;

	if (e->tag != (h | 1))
		return 0;
	for (unsigned int k = 0; k < LS_REPATH_HEARD_PATHS; k++)
		if (e->t[k] != 0 && (int32_t)(e->t[k] - since) > 0)
			out |= 1ULL << k;
	return out;
}
