/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TSC calibration: turns the CPU's invariant counter into CLOCK_MONOTONIC_RAW
 * nanoseconds (and, with a sampled offset, into CLOCK_TAI / PTP time).
 * The counter is the TSC on x86 and the generic timer's virtual count
 * (CNTVCT_EL0) on ARMv8: ls_tsc_read_precise() in ls_clock.h. Either way
 * its frequency is measured here, not taken from the CPU: x86 does not
 * state the TSC's, and ARM's stated one (CNTFRQ_EL0) is only what the
 * firmware wrote; ls_tsc_cal_nominal_ppm() compares the two.
 *
 * Why not just call clock_gettime() per packet? It costs tens of ns even
 * through the vDSO, and the datapath stamps every packet. rdtsc plus one
 * 128-bit multiply is a few ns. The kernel itself derives MONOTONIC_RAW from
 * the TSC with a fixed ratio (when the clocksource is "tsc"; on ARMv8 from
 * CNTVCT_EL0, clocksource "arch_sys_counter"), so a straight
 * line fitted to (tsc, raw_ns) pairs is exact up to the jitter of reading the
 * two clocks "at the same time", and that jitter's effect on the slope
 * shrinks as 1/baseline. So:
 *
 *  - every sample brackets one clock_gettime() between two rdtscs, repeats
 *    and keeps the tightest bracket (the one least disturbed by interrupts
 *    or a preempting hypervisor), using the bracket's midpoint;
 *  - the initial calibration least-squares fits samples spread over a few
 *    hundred ms;
 *  - each update (control thread, ~1 Hz) refits the slope between the first
 *    point and a fresh sample -- the longest baseline available -- and
 *    re-anchors at the fresh sample so offset errors never accumulate.
 *
 * The mapping is published under a seqlock; lcores copy it without taking
 * a lock or making a syscall. Nothing here needs the EAL (the counter reads
 * and the seqlock are header-only), so unit tests run it directly.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_seqlock.h>

#include "ls_clock.h"

/* Brackets tried per sample: enough that one usually misses every interrupt. */
#define LS_TSC_TRIES 32
/* Samples of the initial least-squares fit. */
#define LS_TSC_INIT_SAMPLES 64

/* One (tsc, ns) pair, plus the bracket width it came with. */
struct tsc_sample {
	uint64_t tsc;
	uint64_t ns;
	uint64_t width;
};

static inline uint64_t
ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/*
 * Read clock id bracketed by two TSC reads, LS_TSC_TRIES times, and keep the
 * tightest bracket. ls_tsc_read_precise() orders the counter read against
 * the surrounding loads so the bracket really contains the clock read.
 */
static int
tight_sample(clockid_t id, struct tsc_sample *out)
{
	struct timespec ts;
	unsigned int i;
	int ok = 0;

	out->width = UINT64_MAX;
	for (i = 0; i < LS_TSC_TRIES; i++) {
		uint64_t t1, t2;

		t1 = ls_tsc_read_precise();
		if (clock_gettime(id, &ts) != 0)
			return -EIO;
		t2 = ls_tsc_read_precise();
		if (t2 < t1)
			continue;
		if (t2 - t1 < out->width) {
			out->width = t2 - t1;
			out->tsc = t1 + (t2 - t1) / 2;
			out->ns = ts_ns(&ts);
			ok = 1;
		}
	}
	return ok ? 0 : -EIO;
}

/*
 * A clock (TAI, REALTIME) - CLOCK_MONOTONIC_RAW, from a read bracketed by two RAW
 * reads (tightest of several). The difference moves slowly when NTP/PTP
 * slews the system clock, hence the refresh in every update.
 */
static int
sample_off(clockid_t id, int64_t *off)
{
	struct timespec r1, tai, r2;
	uint64_t best = UINT64_MAX;
	unsigned int i;
	int ok = 0;

	for (i = 0; i < LS_TSC_TRIES; i++) {
		uint64_t a, b;

		if (clock_gettime(CLOCK_MONOTONIC_RAW, &r1) != 0 ||
		    clock_gettime(id, &tai) != 0 ||
		    clock_gettime(CLOCK_MONOTONIC_RAW, &r2) != 0)
			return -EIO;
		a = ts_ns(&r1);
		b = ts_ns(&r2);
		if (b < a || b - a >= best)
			continue;
		best = b - a;
		*off = (int64_t)(ts_ns(&tai) - (a + (b - a) / 2));
		ok = 1;
	}
	return ok ? 0 : -EIO;
}

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ULL),
		.tv_nsec = (long)(ns % 1000000000ULL),
	};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int
ls_tsc_cal_init(struct ls_tsc_cal *cal, unsigned int ms)
{
	struct tsc_sample s[LS_TSC_INIT_SAMPLES];
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n, den, slope, icpt;
	uint64_t gap_ns, mult;
	int64_t tai_off, real_off;
	unsigned int i;

	memset(cal, 0, sizeof(*cal));
	rte_seqlock_init(&cal->lock);
	if (ms == 0)
		ms = 1;
	gap_ns = (uint64_t)ms * 1000000ULL / (LS_TSC_INIT_SAMPLES - 1);

	for (i = 0; i < LS_TSC_INIT_SAMPLES; i++) {
		if (i > 0)
			sleep_ns(gap_ns);
		if (tight_sample(CLOCK_MONOTONIC_RAW, &s[i]) != 0)
			return -EIO;
	}
	if (sample_off(CLOCK_TAI, &tai_off) != 0 ||
	    sample_off(CLOCK_REALTIME, &real_off) != 0)
		return -EIO;

	/*
	 * Least squares on offsets from the first sample: the values stay
	 * small (< 2^40 for any sane ms) so doubles lose nothing that matters.
	 */
	for (i = 0; i < LS_TSC_INIT_SAMPLES; i++) {
		double x = (double)(s[i].tsc - s[0].tsc);
		double y = (double)(int64_t)(s[i].ns - s[0].ns);

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	n = LS_TSC_INIT_SAMPLES;
	den = n * sxx - sx * sx;
	if (!(den > 0))
		return -EIO;
	slope = (n * sxy - sx * sy) / den;
	icpt = (sy - slope * sx) / n;
	if (!(slope > 0))
		return -EIO;
	mult = (uint64_t)llround(slope * 4294967296.0);

	/*
	 * Both ends of the baseline are taken from the fitted line rather
	 * than single samples: the first point anchors every later refit, so
	 * its noise is worth averaging away.
	 */
	cal->first_tsc = s[0].tsc;
	cal->first_ns = s[0].ns + (uint64_t)(int64_t)llround(icpt);
	cal->map.tsc0 = s[LS_TSC_INIT_SAMPLES - 1].tsc;
	cal->map.ns0 = cal->first_ns + (uint64_t)llround(slope *
		(double)(cal->map.tsc0 - cal->first_tsc));
	cal->map.mult = mult;
	cal->map.tai_off = tai_off;
	cal->map.real_off = real_off;
	cal->n_updates = 0;
	cal->ppm_step = 0;
	cal->anchor_step_ns = 0;
	return 0;
}

void
ls_tsc_cal_update(struct ls_tsc_cal *cal)
{
	struct tsc_sample s;
	struct ls_tsc_map m = cal->map; /* only this thread writes the map */
	int64_t tai_off = m.tai_off, real_off = m.real_off;
	uint64_t mult;

	uint64_t m0_ns = m.ns0;
	int64_t m0_real = m.real_off;

	if (tight_sample(CLOCK_MONOTONIC_RAW, &s) != 0)
		return;
	(void)sample_off(CLOCK_TAI, &tai_off);
	(void)sample_off(CLOCK_REALTIME, &real_off);

	mult = ls_clock_slope_mult(cal->first_tsc, cal->first_ns, s.tsc, s.ns);
	if (mult == 0)
		return; /* TSC or clock went backwards: keep the old map */

	cal->ppm_step = ((double)mult - (double)m.mult) / (double)m.mult * 1e6;
	cal->anchor_step_ns = (int64_t)(s.ns - ls_tsc_map_ns(&m, s.tsc));
	cal->width_ns = (uint64_t)(((unsigned __int128)s.width * m.mult) >> 32);
	if (cal->n_updates >= 5 && llabs(cal->anchor_step_ns) > cal->anchor_step_max)
		cal->anchor_step_max = llabs(cal->anchor_step_ns);

	/*
	 * Re-anchor at the fresh sample. With the slope through the first
	 * point, the line passes through it anyway; anchoring here bounds the
	 * error of extrapolating to the next update by one sample's jitter
	 * plus a second's worth of slope error.
	 */
	m.tsc0 = s.tsc;
	m.ns0 = s.ns;
	m.mult = mult;
	m.tai_off = tai_off;
	/*
	 * REALTIME is steered (2 ppm here, more under NTP slewing): learn
	 * the rate between refits so kernel stamps between them stay on the
	 * line, not on a sawtooth of up to a refit's worth of drift.
	 */
	if (s.ns > m0_ns && m0_ns != 0) {
		double r = (double)(real_off - m0_real) / (double)(s.ns - m0_ns);

		/* a step (settimeofday) is not a rate: keep the old one */
		if (r > -1e-3 && r < 1e-3)
			m.real_rate = r;
	}
	m.real_off = real_off;

	rte_seqlock_write_lock(&cal->lock);
	cal->map = m;
	rte_seqlock_write_unlock(&cal->lock);
	cal->n_updates++;
}

double
ls_tsc_cal_hz(const struct ls_tsc_cal *cal)
{
	return cal->map.mult != 0 ? 1e9 * 4294967296.0 / (double)cal->map.mult : 0.0;
}

uint64_t
ls_tsc_hz(const struct ls_tsc_cal *cal)
{
	double hz = ls_tsc_cal_hz(cal);

	return hz > 0 ? (uint64_t)hz : rte_get_tsc_hz();
}

double
ls_tsc_cal_nominal_ppm(const struct ls_tsc_cal *cal)
{
	double hz = ls_tsc_cal_hz(cal), nominal = (double)ls_tsc_nominal_hz();

	if (hz == 0.0 || nominal == 0.0)
		return NAN;
	return (hz - nominal) / nominal * 1e6;
}
