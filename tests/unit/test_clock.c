/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the EAL-free clock parts (ls_clock_pure): the TSC
 * calibration against the kernel's MONOTONIC_RAW, the fixed-point mapping
 * arithmetic, and the simulated clock (exact drift, reproducible wander,
 * wander statistics).
 *
 * The calibration test runs on whatever machine builds us -- often a busy
 * shared VM -- so it compares at the tightest of many brackets and allows
 * 2 us: far above what a correct fit produces (tens of ns), far below what a
 * wrong slope or anchor produces (a 1 ppm error alone is 1 us per second).
 *
 * The counter is the TSC on x86 and CNTVCT_EL0 on ARMv8: tools/test_arm64
 * runs this suite under qemu-aarch64, where the counter is qemu's (62.5 MHz,
 * from the host's clock) and a bracket takes microseconds.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ls_clock.h"
#include "ls_test.h"

#define T_NS_PER_S 1000000000ULL
#define HOUR_NS (3600ULL * T_NS_PER_S)

/* The counter's plausible rates: a TSC from 100 MHz to 10 GHz; ARM's
 * generic timer from 1 MHz to 1 GHz (ARMv8.6 fixes it at 1 GHz; earlier
 * SoCs run it at 19.2 to 200 MHz, qemu at 62.5 MHz). */
#if defined(RTE_ARCH_ARM64)
#define CTR_HZ_MIN 1e6
#define CTR_HZ_MAX 1.0e9
#else
#define CTR_HZ_MIN 1e8
#define CTR_HZ_MAX 1e10
#endif

static void
sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Tightest-bracket (counter, clock id ns) pair, like the calibration's own
 * sampling; the bracket's width in ticks to *width when not NULL. */
static void
tight_pair_of(clockid_t id, uint64_t *tsc, uint64_t *ns, uint64_t *width)
{
	uint64_t best = UINT64_MAX;
	int i;

	for (i = 0; i < 200; i++) {
		struct timespec ts;
		uint64_t t1 = ls_tsc_read_precise();
		uint64_t t2;

		clock_gettime(id, &ts);
		t2 = ls_tsc_read_precise();
		if (t2 - t1 < best) {
			best = t2 - t1;
			*tsc = t1 + (t2 - t1) / 2;
			*ns = (uint64_t)ts.tv_sec * T_NS_PER_S + (uint64_t)ts.tv_nsec;
		}
	}
	if (width != NULL)
		*width = best;
}

static void
tight_pair(uint64_t *tsc, uint64_t *ns)
{
	tight_pair_of(CLOCK_MONOTONIC_RAW, tsc, ns, NULL);
}

START_TEST(test_tsc_calibration)
{
	struct ls_tsc_cal cal;
	struct ls_tsc_map m;
	uint64_t tsc, ns, mapped;
	double ns_per_tick;
	int64_t err;
	int64_t tai_true;
	struct timespec a, b;

	ck_assert_int_eq(ls_tsc_cal_init(&cal, 200), 0);
	ns_per_tick = (double)cal.map.mult / 4294967296.0;
	ck_assert_msg(ns_per_tick >= 1e9 / CTR_HZ_MAX && ns_per_tick <= 1e9 / CTR_HZ_MIN,
		      "%f ns per tick", ns_per_tick);
	ck_assert_uint_eq(cal.n_updates, 0);

	/* right after init the map already tracks the kernel clock */
	tight_pair(&tsc, &ns);
	ls_tsc_cal_read(&cal, &m);
	err = (int64_t)(ls_tsc_map_ns(&m, tsc) - ns);
	ck_assert_msg(llabs(err) < 2000, "init: mapped - actual = %lld ns", (long long)err);

	sleep_ms(300);
	ls_tsc_cal_update(&cal);
	ck_assert_uint_eq(cal.n_updates, 1);
	/* a refit over a longer baseline changes the slope by a fraction of a ppm */
	ck_assert_msg(fabs(cal.ppm_step) < 20.0, "ppm_step %f", cal.ppm_step);

	/* later instant, extrapolated past the anchor */
	sleep_ms(250);
	tight_pair(&tsc, &ns);
	ls_tsc_cal_read(&cal, &m);
	mapped = ls_tsc_map_ns(&m, tsc);
	err = (int64_t)(mapped - ns);
	ck_assert_msg(llabs(err) < 2000, "update: mapped - actual = %lld ns", (long long)err);

	/* the TAI offset is CLOCK_TAI - CLOCK_MONOTONIC_RAW */
	clock_gettime(CLOCK_TAI, &a);
	clock_gettime(CLOCK_MONOTONIC_RAW, &b);
	tai_true = ((int64_t)a.tv_sec - (int64_t)b.tv_sec) * (int64_t)T_NS_PER_S +
		   (a.tv_nsec - b.tv_nsec);
	ck_assert_msg(llabs(m.tai_off - tai_true) < 1000000,
		      "tai_off %lld vs %lld", (long long)m.tai_off, (long long)tai_true);
}
END_TEST

/*
 * The "tsc" source's counter: it never goes back, it is the counter DPDK's
 * rte_rdtsc() reads (lockstepd stamps with that), and its stated frequency
 * is CNTFRQ_EL0 on ARMv8 (as DPDK reads it), none on x86. Reads in
 * program order (the precise ones): an ARM counter read may otherwise run
 * ahead of the one before it.
 */
START_TEST(test_tsc_counter)
{
	uint64_t prev = ls_tsc_read_precise(), first = prev, hz = ls_tsc_nominal_hz();
	unsigned int i;

	for (i = 0; i < 100000; i++) {
		uint64_t a = ls_tsc_read_precise();
		uint64_t b = rte_rdtsc_precise();
		uint64_t c = ls_tsc_read_precise();

		ck_assert_msg(a >= prev && b >= a && c >= b,
			      "counter back: %" PRIu64 ", then %" PRIu64 ", rte_rdtsc %" PRIu64
			      ", then %" PRIu64, prev, a, b, c);
		prev = c;
	}
	ck_assert_msg(prev > first, "the counter did not move in 300,000 reads");
	(void)ls_tsc_read(); /* the plain read builds and runs too */
#if defined(RTE_ARCH_ARM64)
	ck_assert_str_eq(LS_TSC_COUNTER, "cntvct_el0");
	ck_assert_uint_ne(hz, 0);
	ck_assert_uint_eq(hz, __rte_arm64_cntfrq());
	ck_assert_msg(hz >= CTR_HZ_MIN && hz <= CTR_HZ_MAX, "CNTFRQ_EL0 %" PRIu64 " Hz", hz);
#else
	ck_assert_str_eq(LS_TSC_COUNTER, "tsc");
	ck_assert_uint_eq(hz, 0);
#endif
}
END_TEST

/* |ticks converted - ns elapsed| within 1000 ppm of the interval, plus the
 * two brackets' widths, plus 20 us: generous for qemu-user, yet a counter
 * at the wrong rate (or not the counter the kernel keeps time by) is off by
 * far more over 50 ms. */
static void
check_tracks(const char *how, double conv_ns, double dn, double width_ns)
{
	double tol = dn * 1e-3 + width_ns + 20000.0;

	ck_assert_msg(fabs(conv_ns - dn) <= tol,
		      "%s: %.0f ns of counter over %.0f ns of CLOCK_MONOTONIC (tolerance %.0f)",
		      how, conv_ns, dn, tol);
}

/*
 * Counter ticks converted to ns track CLOCK_MONOTONIC over 50 ms: through
 * the calibration's measured rate on every architecture, and on ARMv8 also
 * through the rate the CPU states (CNTFRQ_EL0), which then agrees with the
 * measured one.
 */
START_TEST(test_tsc_tracks_monotonic)
{
	struct ls_tsc_cal cal;
	uint64_t c0, n0, w0, c1, n1, w1, hz = ls_tsc_nominal_hz();
	double dn, ns_per_tick;

	ck_assert_int_eq(ls_tsc_cal_init(&cal, 100), 0);
	ns_per_tick = (double)cal.map.mult / 4294967296.0;
	ck_assert(fabs(ls_tsc_cal_hz(&cal) * ns_per_tick - 1e9) < 1.0);
	tight_pair_of(CLOCK_MONOTONIC, &c0, &n0, &w0);
	sleep_ms(50);
	tight_pair_of(CLOCK_MONOTONIC, &c1, &n1, &w1);
	dn = (double)(n1 - n0);
	ck_assert(dn >= 50e6 && c1 > c0);
	check_tracks("measured rate", (double)(c1 - c0) * ns_per_tick, dn,
		     (double)(w0 + w1) * ns_per_tick);
	if (hz == 0) {
		ck_assert(isnan(ls_tsc_cal_nominal_ppm(&cal)));
		return;
	}
	check_tracks("CNTFRQ_EL0", (double)(c1 - c0) * 1e9 / (double)hz, dn,
		     (double)(w0 + w1) * 1e9 / (double)hz);
	ck_assert_msg(fabs(ls_tsc_cal_nominal_ppm(&cal)) < 1000.0,
		      "measured %.0f Hz, %.1f ppm from CNTFRQ_EL0's %" PRIu64,
		      ls_tsc_cal_hz(&cal), ls_tsc_cal_nominal_ppm(&cal), hz);
}
END_TEST

/* Reference of the map arithmetic in plain 128-bit integers. */
static uint64_t
ref_map(uint64_t tsc0, uint64_t ns0, uint64_t mult, uint64_t tsc)
{
	unsigned __int128 d;

	if (tsc >= tsc0) {
		d = (unsigned __int128)(tsc - tsc0) * mult;
		return ns0 + (uint64_t)(d >> 32);
	}
	d = (unsigned __int128)(tsc0 - tsc) * mult;
	return ns0 - (uint64_t)(d >> 32);
}

START_TEST(test_map_arithmetic)
{
	struct ls_tsc_map m = {
		.tsc0 = 1000000, .ns0 = 5000000000ULL, .mult = 1ULL << 32, .tai_off = 37,
	};

	/* 1 ns per tick, both sides of the anchor */
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 1000000), 5000000000ULL);
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 1000123), 5000000123ULL);
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 999877), 4999999877ULL);
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 0), 4999000000ULL);

	/* 1.5 ns per tick: exact halves */
	m.mult = 3ULL << 31;
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 1000002), 5000000003ULL);
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 999998), 4999999997ULL);

	/* a realistic 2.1 GHz TSC, a year away in either direction: no overflow */
	m.mult = (uint64_t)((1.0 / 2.1) * 4294967296.0);
	m.tsc0 = 1ULL << 62;
	m.ns0 = 1ULL << 61;
	{
		const uint64_t year_ticks = 2100000000ULL * 86400ULL * 365ULL;
		uint64_t fwd = ls_tsc_map_ns(&m, m.tsc0 + year_ticks);
		uint64_t back = ls_tsc_map_ns(&m, m.tsc0 - year_ticks);
		long double secs;

		ck_assert_uint_eq(fwd, ref_map(m.tsc0, m.ns0, m.mult, m.tsc0 + year_ticks));
		ck_assert_uint_eq(back, ref_map(m.tsc0, m.ns0, m.mult, m.tsc0 - year_ticks));
		secs = (long double)(fwd - m.ns0) / 1e9L;
		ck_assert(fabsl(secs - 86400.0L * 365.0L) < 1.0L);
		ck_assert_uint_eq(fwd - m.ns0, m.ns0 - back);
	}

	/* deltas near 2^63 ticks with mult near 2^33: the product needs 96+ bits */
	m.tsc0 = 0;
	m.ns0 = 0;
	m.mult = 3ULL << 32; /* 3 ns per tick */
	ck_assert_uint_eq(ls_tsc_map_ns(&m, 1ULL << 60), 3ULL << 60);
	m.tsc0 = UINT64_MAX;
	m.ns0 = UINT64_MAX;
	ck_assert_uint_eq(ls_tsc_map_ns(&m, UINT64_MAX - (1ULL << 61)),
			  UINT64_MAX - (3ULL << 61));

	/* random maps against the reference, monotone in tsc */
	{
		uint64_t x = 0x1234567;
		int i;

		for (i = 0; i < 10000; i++) {
			uint64_t t;

			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			m.tsc0 = x >> 8;
			m.ns0 = x >> 4;
			m.mult = (x >> 33) + 1;
			t = m.tsc0 + (int64_t)(x % 2000000001ULL) - 1000000000LL;
			ck_assert_uint_eq(ls_tsc_map_ns(&m, t), ref_map(m.tsc0, m.ns0, m.mult, t));
			ck_assert(ls_tsc_map_ns(&m, t) <= ls_tsc_map_ns(&m, t + 1000));
		}
	}
}
END_TEST

static void
sim_init(struct ls_simclock *s, int64_t off, double ppm, double wander, uint64_t seed,
	 uint64_t start)
{
	struct ls_conf_simclock p = {
		.offset_ns = off, .drift_ppm = ppm, .wander_ns = wander, .seed = seed,
	};

	ls_simclock_init(s, &p, start);
}

START_TEST(test_sim_drift_exact)
{
	static const double ppms[] = { 100.0, -100.0, 3.7, -0.25, 0.0 };
	static const uint64_t dts[] = {
		0, 1, 999, 10000000, 1234567891, T_NS_PER_S, 60 * T_NS_PER_S,
		HOUR_NS, HOUR_NS + 7, 10 * HOUR_NS + 123456789, 72 * HOUR_NS + 1,
	};
	const uint64_t start = LS_SIM_EPOCH_NS + 987654321012ULL;
	const int64_t off = -123456789;
	unsigned int i, j;

	for (i = 0; i < RTE_DIM(ppms); i++) {
		struct ls_simclock s;

		sim_init(&s, off, ppms[i], 0.0, 42, start);
		for (j = 0; j < RTE_DIM(dts); j++) {
			uint64_t t = start + dts[j];
			long double want = (long double)off +
				(long double)ppms[i] * 1e-6L * (long double)dts[j];
			double got = ls_simclock_offset(&s, t);
			uint64_t local = ls_simclock_local(&s, t);

			ck_assert_msg(fabsl((long double)got - want) < 1.0L,
				      "ppm %f dt %llu: got %.3f want %.3Lf", ppms[i],
				      (unsigned long long)dts[j], got, want);
			/* local time: true + offset rounded, exactly */
			ck_assert_msg(llabs((long long)(local - t) - llroundl(want)) <= 1,
				      "local off by %lld",
				      (long long)(local - t) - llroundl(want));
		}
		/* before the start the drift extrapolates backwards, no wander */
		ck_assert(fabsl((long double)ls_simclock_offset(&s, start - T_NS_PER_S) -
				((long double)off - (long double)ppms[i] * 1e-6L * 1e9L)) < 1.0L);
	}
}
END_TEST

START_TEST(test_sim_wander_deterministic)
{
	const uint64_t start = LS_SIM_EPOCH_NS + 5555;
	struct ls_simclock a, b, c;
	static double rec[2000];
	uint64_t t;
	int i;

	sim_init(&a, 1000, 12.5, 50.0, 7, start);
	sim_init(&b, 1000, 12.5, 50.0, 7, start);
	sim_init(&c, 1000, 12.5, 50.0, 7, start);

	/* a jumps far ahead first, then both walk; b steps every ~1.3 ms */
	(void)ls_simclock_offset(&a, start + 20 * T_NS_PER_S);
	for (i = 0; i < 2000; i++) {
		t = start + (uint64_t)i * 1300017ULL;
		rec[i] = ls_simclock_offset(&b, t);
	}
	/* a goes backwards through the same instants: bit-for-bit equal */
	for (i = 1999; i >= 0; i--) {
		t = start + (uint64_t)i * 1300017ULL;
		ck_assert_msg(ls_simclock_offset(&a, t) == rec[i], "backwards i=%d", i);
	}
	/* c visits them in a scrambled order */
	for (i = 0; i < 2000; i++) {
		int j = (int)(((uint64_t)i * 7919) % 2000);

		t = start + (uint64_t)j * 1300017ULL;
		ck_assert_msg(ls_simclock_offset(&c, t) == rec[j], "scrambled j=%d", j);
	}
	/* W is continuous: at a knot and 1 ns either side */
	t = start + 37 * LS_SIM_KNOT_NS;
	ck_assert(fabs(ls_simclock_offset(&a, t) - ls_simclock_offset(&a, t - 1)) < 0.01);
	ck_assert(fabs(ls_simclock_offset(&a, t + 1) - ls_simclock_offset(&a, t)) < 0.01);
	/* linear between knots: the midpoint is the mean of the ends */
	{
		double w0 = ls_simclock_offset(&b, t);
		double w1 = ls_simclock_offset(&b, t + LS_SIM_KNOT_NS);
		double wm = ls_simclock_offset(&b, t + LS_SIM_KNOT_NS / 2);

		ck_assert(fabs(wm - (w0 + w1) / 2) < 1e-6);
	}
	/* at the start W = 0 */
	ck_assert(ls_simclock_offset(&c, start) == 1000.0);
	/* the wander actually wanders */
	ck_assert(fabs(rec[1999] - (1000.0 + 12.5e-6 * 1999.0 * 1300017.0)) > 1e-3);
}
END_TEST

START_TEST(test_sim_seeds_differ)
{
	const uint64_t start = LS_SIM_EPOCH_NS;
	struct ls_simclock a, b;
	int i, same = 0;

	sim_init(&a, 0, 0.0, 100.0, 1, start);
	sim_init(&b, 0, 0.0, 100.0, 2, start);
	for (i = 1; i <= 100; i++) {
		uint64_t t = start + (uint64_t)i * 10 * LS_SIM_KNOT_NS;

		if (ls_simclock_offset(&a, t) == ls_simclock_offset(&b, t))
			same++;
	}
	ck_assert_int_eq(same, 0);
}
END_TEST

START_TEST(test_sim_wander_statistics)
{
	/*
	 * W(T) = sum of T/knot independent N(0, wander^2 * knot) steps, so
	 * Var W(T) = wander^2 * T. 2000 seeds give the sample variance a
	 * relative std-dev of sqrt(2/2000) ~ 3%; allow 15% (5 sigma).
	 */
	const unsigned int n = 2000;
	const double wander = 40.0;
	const uint64_t start = LS_SIM_EPOCH_NS + 1;
	double s1 = 0, s2 = 0, q1 = 0, q2 = 0, mean, var1, var2;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct ls_simclock s;
		double w1, w2;

		sim_init(&s, 0, 0.0, wander, 1000 + i, start);
		w1 = ls_simclock_offset(&s, start + 1 * T_NS_PER_S);
		w2 = ls_simclock_offset(&s, start + 9 * T_NS_PER_S);
		s1 += w1;
		q1 += w1 * w1;
		s2 += w2;
		q2 += w2 * w2;
	}
	mean = s2 / n;
	var1 = q1 / n - (s1 / n) * (s1 / n);
	var2 = q2 / n - mean * mean;
	ck_assert_msg(fabs(var1 / (wander * wander * 1.0) - 1.0) < 0.15, "var(1 s) %f", var1);
	ck_assert_msg(fabs(var2 / (wander * wander * 9.0) - 1.0) < 0.15, "var(9 s) %f", var2);
	ck_assert_msg(fabs(mean) < 5.0 * sqrt(wander * wander * 9.0 / n), "mean %f", mean);
}
END_TEST

/* Which instants a frame's stamp may name: within a knot of the reader. */
START_TEST(test_sim_near)
{
	const uint64_t start = LS_SIM_EPOCH_NS;
	const uint64_t now = start + 1000 * LS_SIM_KNOT_NS + 3000000; /* 10 s in */
	struct ls_simclock s, still;

	sim_init(&s, 0, 0.0, 20.0, 1, start);
	(void)ls_simclock_offset(&s, now);
	ck_assert(ls_simclock_near(&s, now));
	ck_assert(ls_simclock_near(&s, now - 5000000));                /* 5 ms back */
	ck_assert(ls_simclock_near(&s, now - LS_SIM_KNOT_NS));         /* a knot back */
	ck_assert(ls_simclock_near(&s, now + LS_SIM_KNOT_NS / 2));
	ck_assert(!ls_simclock_near(&s, now - 3 * LS_SIM_KNOT_NS));    /* would replay */
	ck_assert(!ls_simclock_near(&s, now + 3 * LS_SIM_KNOT_NS));    /* would walk on */
	ck_assert(!ls_simclock_near(&s, start + 3600ULL * 1000000000ULL)); /* an hour on */
	ck_assert(ls_simclock_near(&s, 0));                            /* before start: no walk */
	/* without wander nothing is walked */
	sim_init(&still, 0, 0.0, 0.0, 1, start);
	(void)ls_simclock_offset(&still, now);
	ck_assert(ls_simclock_near(&still, start + 3600ULL * 1000000000ULL));
}
END_TEST

/* ls_tsc_map_ticks inverts ls_tsc_map_ns to within a tick (or the ticks
 * of one ns, for a device clock faster than 1 GHz: the map truncates to the
 * ns), on both sides of the anchor (a NIC's TX timestamp is the device
 * tick of an instant: clock.tx_sched). */
START_TEST(test_map_ticks)
{
	static const double ns_per_tick[] = {1.0, 1.000037, 0.999952, 4.0 / 3.0, 0.25};

	for (unsigned int i = 0; i < RTE_DIM(ns_per_tick); i++) {
		struct ls_tsc_map m = {.tsc0 = 5000000000000ULL, .ns0 = 90000000000000ULL,
				       .mult = (uint64_t)(ns_per_tick[i] * 4294967296.0)};
		uint64_t tol = (uint64_t)ceil(1.0 / ns_per_tick[i]) + 1;

		for (int64_t d = -3000000000LL; d <= 3000000000LL; d += 123456789) {
			uint64_t tick = (uint64_t)((int64_t)m.tsc0 + d);
			uint64_t ns = ls_tsc_map_ns(&m, tick);
			uint64_t back = ls_tsc_map_ticks(&m, ns);

			ck_assert_msg(back + tol >= tick && back <= tick + tol,
				      "%.6f ns/tick: tick %" PRIu64 " -> %" PRIu64 " ns -> %" PRIu64,
				      ns_per_tick[i], tick, ns, back);
			/* and the instant of the returned tick is that ns, to a tick */
			ck_assert(llabs((long long)(ls_tsc_map_ns(&m, back) - ns)) <=
				  (long long)(ns_per_tick[i] + 1));
		}
	}
}
END_TEST

/* The receive-stamp trailer: round trip, byte order, and what is refused. */
START_TEST(test_rx_trailer)
{
	uint8_t f[64 + LS_RX_TRAILER_LEN];
	const uint64_t ns = LS_SIM_EPOCH_NS + 0x0102030405060708ULL;
	uint64_t got = 0;

	memset(f, 0xab, sizeof(f));
	ls_rx_trailer_put(f + 64, ns);
	/* big endian, then the magic */
	ck_assert_uint_eq(f[64], (uint8_t)(ns >> 56));
	ck_assert_uint_eq(f[71], 0x08);
	ck_assert_int_eq(memcmp(f + 72, "LSTS", 4), 0);
	ck_assert_int_eq(ls_rx_trailer_get(f, sizeof(f), &got), 0);
	ck_assert_uint_eq(got, ns);
	/* the smallest frame that holds one: an Ethernet header and the trailer */
	ck_assert_int_eq(ls_rx_trailer_get(f + 64 - LS_RX_TRAILER_MIN_FRAME,
					   LS_RX_TRAILER_MIN_FRAME + LS_RX_TRAILER_LEN, &got), 0);
	ck_assert_uint_eq(got, ns);
	/* one byte shorter: refused, *ns untouched */
	got = 7;
	ck_assert_int_eq(ls_rx_trailer_get(f + 65 - LS_RX_TRAILER_MIN_FRAME,
					   LS_RX_TRAILER_MIN_FRAME + LS_RX_TRAILER_LEN - 1, &got),
			 -EINVAL);
	ck_assert_int_eq(ls_rx_trailer_get(NULL, 100, &got), -EINVAL);
	ck_assert_uint_eq(got, 7);
	/* a frame without one (the magic is checked, any byte of it) */
	for (int i = 0; i < 4; i++) {
		uint8_t g[sizeof(f)];

		memcpy(g, f, sizeof(f));
		g[72 + i] ^= 0x20;
		ck_assert_int_eq(ls_rx_trailer_get(g, sizeof(g), &got), -ENOENT);
	}
	ck_assert_int_eq(ls_rx_trailer_get(f, sizeof(f) - 1, &got), -ENOENT);
	ck_assert_uint_eq(got, 7);
}
END_TEST

/* The send-time trailer: same shape, its own magic, so neither end takes
 * the other's for its own (a frame can carry a send-time trailer the
 * emulator did not strip, and a receive stamp after it). */
START_TEST(test_tx_trailer)
{
	uint8_t f[64 + 2 * LS_RX_TRAILER_LEN];
	const uint64_t ns = LS_SIM_EPOCH_NS + 0x1112131415161718ULL;
	uint64_t got = 0;

	memset(f, 0xab, sizeof(f));
	ls_tx_trailer_put(f + 64, ns);
	ck_assert_uint_eq(f[64], (uint8_t)(ns >> 56));
	ck_assert_uint_eq(f[71], 0x18);
	ck_assert_int_eq(memcmp(f + 72, "LSTX", 4), 0);
	ck_assert_int_eq(ls_tx_trailer_get(f, 64 + LS_RX_TRAILER_LEN, &got), 0);
	ck_assert_uint_eq(got, ns);
	got = 7;
	ck_assert_int_eq(ls_rx_trailer_get(f, 64 + LS_RX_TRAILER_LEN, &got), -ENOENT);
	ck_assert_int_eq(ls_tx_trailer_get(f, LS_RX_TRAILER_MIN_FRAME + LS_RX_TRAILER_LEN - 1,
					   &got), -EINVAL);
	ck_assert_int_eq(ls_tx_trailer_get(NULL, 100, &got), -EINVAL);
	ck_assert_uint_eq(got, 7);
	/* a receive stamp appended after it is the receiver's; the send time
	 * is no longer last, so it is not read as one */
	ls_rx_trailer_put(f + 64 + LS_RX_TRAILER_LEN, ns + 5);
	ck_assert_int_eq(ls_tx_trailer_get(f, sizeof(f), &got), -ENOENT);
	ck_assert_int_eq(ls_rx_trailer_get(f, sizeof(f), &got), 0);
	ck_assert_uint_eq(got, ns + 5);
}
END_TEST

static Suite *
clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc;

	tc = tcase_create("tsc");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tsc_calibration);
	tcase_add_test(tc, test_tsc_counter);
	tcase_add_test(tc, test_tsc_tracks_monotonic);
	tcase_add_test(tc, test_map_arithmetic);
	suite_add_tcase(s, tc);

	tc = tcase_create("sim");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_sim_drift_exact);
	tcase_add_test(tc, test_sim_wander_deterministic);
	tcase_add_test(tc, test_sim_seeds_differ);
	tcase_add_test(tc, test_sim_wander_statistics);
	tcase_add_test(tc, test_sim_near);
	suite_add_tcase(s, tc);

	tc = tcase_create("trailer");
	tcase_add_test(tc, test_map_ticks);
	tcase_add_test(tc, test_rx_trailer);
	tcase_add_test(tc, test_tx_trailer);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(clock_suite)
