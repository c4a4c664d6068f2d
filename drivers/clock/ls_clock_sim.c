/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The simulated clock of the lab: a node clock that is wrong in a known way.
 *
 *   offset(t) = offset_ns + drift_ppm * 1e-6 * (t - start_ns) + W(t)
 *
 * where t is true time and W a random walk: knots every LS_SIM_KNOT_NS
 * (knot 0 at start_ns, W = 0 there), knot-to-knot steps drawn from
 * Normal(0, wander_ns * sqrt(knot seconds)) and straight lines in between
 * (a clock's phase is continuous; a step function would look like packets
 * jumping in time).
 *
 * Why a counter-based generator: the step of knot k is a pure function of
 * (seed, k), so every reader -- each lcore's copy, the control thread
 * reporting ground truth, a test -- that walks to the same knot sums the same
 * doubles in the same order and gets W bit for bit, with no shared state and
 * no locks. A reader only keeps W at its current knot and the next one.
 * Walking forward costs one step per knot crossed (100 per simulated
 * second); one knot back is kept (kernel receive stamps can be a little
 * older than the software stamp read before them); further back restarts
 * from knot 0 (the rare backward query pays for the replay).
 *
 * Precision: t is ~1.7e18 ns (LS_SIM_EPOCH_NS) and a double has 53 bits
 * (~256 ns resolution there), so t itself is never converted; only
 * t - start_ns (int64) is, which is exact up to 2^53 ns (104 days). The
 * drift term then carries a relative error of ~1e-16: far below 1 ns even
 * days into a run at +-100 ppm.
 *
 * Pure C with libm; no EAL.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ls_clock.h"

#define LS_GOLDEN 0x9e3779b97f4a7c15ULL

/* splitmix64's output function: a bijective 64-bit mixer. */
static inline uint64_t
mix64(uint64_t z)
{
	z += LS_GOLDEN;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Standard normal for knot k of seed: two uniforms from two distinct
 * counter values, then Box-Muller (the cosine half only; one draw per knot
 * keeps the knot -> value map trivial).
 */
static double
knot_normal(uint64_t seed, uint64_t k)
{
	/* mix the seed first so seeds 1, 2, 3 give unrelated streams */
	uint64_t base = mix64(seed ^ 0x6c6f636b73746570ULL);
	uint64_t r1 = mix64(base + (2 * k) * LS_GOLDEN);
	uint64_t r2 = mix64(base + (2 * k + 1) * LS_GOLDEN);
	double u1 = (double)((r1 >> 11) + 1) * 0x1p-53;  /* (0, 1] */
	double u2 = (double)(r2 >> 11) * 0x1p-53;        /* [0, 1) */

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* W(k) -> W(k+1) step for knot index k+1 (knot 0 has no step). */
static inline double
knot_step(const struct ls_simclock *s, int64_t k1)
{
	/* std-dev per knot: wander_ns per sqrt(second) times sqrt(knot seconds) */
	const double knot_s = (double)LS_SIM_KNOT_NS * 1e-9;

	return s->wander_ns * sqrt(knot_s) * knot_normal(s->seed, (uint64_t)k1);
}

static void
reader_reset(struct ls_simclock *s)
{
	s->knot = 0;
	s->w_prev = 0.0;
	s->w_knot = 0.0;
	s->w_next = s->wander_ns != 0.0 ? knot_step(s, 1) : 0.0;
}

void
ls_simclock_init(struct ls_simclock *s, const struct ls_conf_simclock *p, uint64_t start_ns)
{
	memset(s, 0, sizeof(*s));
	s->offset_ns = p->offset_ns;
	s->drift_ppm = p->drift_ppm;
	s->wander_ns = p->wander_ns;
	s->seed = p->seed;
	s->start_ns = start_ns;
	reader_reset(s);
}

/* W at true time t (t >= start_ns); moves the reader to t's knot. */
static double
wander_at(struct ls_simclock *s, uint64_t dt)
{
	int64_t k = (int64_t)(dt / LS_SIM_KNOT_NS);
	uint64_t in_knot = dt % LS_SIM_KNOT_NS;

	/*
	 * One knot back is common (a kernel receive stamp a little older than
	 * the burst's software stamp read just before it) and costs nothing:
	 * the previous knot's W is kept. Further back replays from knot 0.
	 */
	if (k == s->knot - 1 && s->knot > 0) {
		if (in_knot == 0)
			return s->w_prev;
		return s->w_prev + (s->w_knot - s->w_prev) *
			((double)in_knot / (double)LS_SIM_KNOT_NS);
	}
	if (k < s->knot)
		reader_reset(s);
	/*
	 * Sequential sums in a fixed order: this loop is the only way W is
	 * ever computed, which is what makes it reproducible bit for bit.
	 */
	while (s->knot < k) {
		s->knot++;
		s->w_prev = s->w_knot;
		s->w_knot = s->w_next;
		s->w_next = s->w_knot + knot_step(s, s->knot + 1);
	}
	if (in_knot == 0)
		return s->w_knot;
	return s->w_knot + (s->w_next - s->w_knot) *
		((double)in_knot / (double)LS_SIM_KNOT_NS);
}

double
ls_simclock_offset(struct ls_simclock *s, uint64_t true_ns)
{
	/* int64 difference first: true_ns itself does not fit a double exactly */
	int64_t dt = (int64_t)(true_ns - s->start_ns);
	double off = (double)s->offset_ns + s->drift_ppm * 1e-6 * (double)dt;

	/* before the start the walk has not begun: W = 0, drift extrapolates */
	if (dt > 0 && s->wander_ns != 0.0)
		off += wander_at(s, (uint64_t)dt);
	return off;
}
