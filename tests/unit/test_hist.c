/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for the log-linear histogram.
 *
 * The histogram's promise is quantitative (every bucket boundary is right,
 * every quantile within LS_HIST_REL_ERR of the exact one), so the tests
 * check it against brute force: exact quantiles from sorted sample arrays
 * over several shapes of distribution, and bucket ranges against the bucket
 * function for magnitudes from every octave. Samples come from a seeded
 * generator so a failure reproduces.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ls_hist.h"
#include "ls_test.h"

#define NSAMP 200000

/* Box-Muller on (0, 1) draws: this suite's distributions were shaped with it. */
static double
rng_normal(void)
{
	return sqrt(-2.0 * log(ls_rng_unit_open())) * cos(2.0 * M_PI * ls_rng_unit_open());
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t *samples;

static struct ls_hist *
new_hist(void)
{
	/* calloc, not memset of a stack object: proves zeroed memory is valid. */
	struct ls_hist *h = calloc(1, sizeof(*h));

	ck_assert_ptr_nonnull(h);
	return h;
}

/* --- bucket layout ------------------------------------------------------- */

START_TEST(test_bucket_ranges_contiguous)
{
	uint64_t lo, hi, plo, phi;
	uint32_t b;

	ls_hist_bucket_range(0, &lo, &hi);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, 0);
	for (b = 1; b < LS_HIST_HALF; b++) {
		ls_hist_bucket_range(b - 1, &plo, &phi);
		ls_hist_bucket_range(b, &lo, &hi);
		ck_assert_uint_le(lo, hi);
		ck_assert_msg(lo == phi + 1, "bucket %u starts at %" PRIu64
			      " but bucket %u ends at %" PRIu64, b, lo, b - 1, phi);
		/* A bucket's own lower bound maps back to it. */
		ck_assert_uint_eq(ls_hist_bucket(lo), b);
		if (b < LS_HIST_HALF - 1)
			ck_assert_uint_eq(ls_hist_bucket(hi), b);
	}
	/* The last bucket also takes everything that saturates. */
	ls_hist_bucket_range(LS_HIST_HALF - 1, &lo, &hi);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert_uint_lt(lo, 1ULL << LS_HIST_MAX_EXP);
	/* Out of range: an empty range. */
	ls_hist_bucket_range(LS_HIST_HALF, &lo, &hi);
	ck_assert_uint_gt(lo, hi);
}
END_TEST

START_TEST(test_bucket_width_bound)
{
	uint64_t lo, hi;
	uint32_t b;

	/* Half a bucket over its lower bound is what bounds quantile error. */
	for (b = 1; b < LS_HIST_HALF; b++) {
		ls_hist_bucket_range(b, &lo, &hi);
		if (b == LS_HIST_HALF - 1)
			hi = (1ULL << LS_HIST_MAX_EXP) - 1;
		ck_assert_msg((double)(hi - lo) / 2.0 <= LS_HIST_REL_ERR * (double)lo,
			      "bucket %u [%" PRIu64 ",%" PRIu64 "] too wide", b, lo, hi);
	}
}
END_TEST

static void
check_mag(uint64_t mag)
{
	uint32_t b = ls_hist_bucket(mag);
	uint64_t lo, hi;

	ck_assert_uint_lt(b, LS_HIST_HALF);
	ls_hist_bucket_range(b, &lo, &hi);
	ck_assert_msg(lo <= mag && mag <= hi, "magnitude %" PRIu64 " in bucket %u"
		      " [%" PRIu64 ",%" PRIu64 "]", mag, b, lo, hi);
}

START_TEST(test_bucket_contains_every_octave)
{
	uint64_t base, off;
	int e, i;

	ls_rng_seed(1);
	for (e = 0; e < 64; e++) {
		base = 1ULL << e;
		check_mag(base);
		check_mag(base - 1);
		check_mag(base + 1);
		check_mag(base | (base - 1)); /* top of the octave */
		for (i = 0; i < 2000; i++) {
			off = e == 0 ? 0 : ls_rng_next() & (base - 1);
			check_mag(base | off);
		}
	}
	check_mag(UINT64_MAX);
	/* Monotonic over a dense sweep of the exact and first linear octaves. */
	for (off = 1; off < 4096; off++)
		ck_assert_uint_le(ls_hist_bucket(off - 1), ls_hist_bucket(off));
}
END_TEST

/* --- quantiles ----------------------------------------------------------- */

/* Quantiles to check, in units of 1/10000 so exact ranks are integers. */
static const unsigned int qs[] = {
	1, 10, 100, 1000, 2500, 5000, 7500, 9000, 9900, 9990, 9999,
};

static void
check_quantiles(const char *name, int64_t *v, size_t n)
{
	struct ls_hist *h = new_hist();
	double exact_mean = 0.0;
	size_t i, k;

	for (i = 0; i < n; i++) {
		ls_hist_add(h, v[i]);
		exact_mean += (double)v[i];
	}
	exact_mean /= (double)n;
	qsort(v, n, sizeof(*v), cmp_i64);

	ck_assert_uint_eq(h->count, n);
	ck_assert_int_eq(h->min, v[0]);
	ck_assert_int_eq(h->max, v[n - 1]);
	ck_assert_int_eq(ls_hist_quantile(h, 0.0), v[0]);
	ck_assert_int_eq(ls_hist_quantile(h, 1.0), v[n - 1]);
	ck_assert_msg(fabs(ls_hist_mean(h) - exact_mean) <=
		      1e-9 * fabs(exact_mean) + 1e-6, "%s: mean %f vs %f",
		      name, ls_hist_mean(h), exact_mean);

	for (k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		uint64_t rank = ((uint64_t)qs[k] * n + 9999) / 10000;
		int64_t exact = v[rank - 1];
		int64_t got = ls_hist_quantile(h, qs[k] / 10000.0);
		double err = fabs((double)got - (double)exact);

		ck_assert_msg(err <= LS_HIST_REL_ERR * fabs((double)exact),
			      "%s: q=%.4f got %" PRId64 " exact %" PRId64
			      " (rel err %g > %g)", name, qs[k] / 10000.0, got,
			      exact, exact ? err / fabs((double)exact) : err,
			      LS_HIST_REL_ERR);
	}
	free(h);
}

START_TEST(test_quantile_uniform)
{
	size_t i;

	ls_rng_seed(11);
	for (i = 0; i < NSAMP; i++)
		samples[i] = (int64_t)(ls_rng_next() % 10000000);
	check_quantiles("uniform", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_small_exact)
{
	size_t i;

	/* Small magnitudes have width-1 buckets: quantiles must be exact. */
	ls_rng_seed(12);
	for (i = 0; i < NSAMP; i++)
		samples[i] = (int64_t)(ls_rng_next() % 32);
	check_quantiles("small", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_exponential)
{
	size_t i;

	ls_rng_seed(13);
	for (i = 0; i < NSAMP; i++)
		samples[i] = (int64_t)(-50000.0 * log(ls_rng_unit_open()));
	check_quantiles("exponential", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_lognormal)
{
	size_t i;

	ls_rng_seed(14);
	for (i = 0; i < NSAMP; i++)
		samples[i] = (int64_t)exp(10.0 + 1.5 * rng_normal());
	check_quantiles("lognormal", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_bimodal)
{
	size_t i;

	ls_rng_seed(15);
	for (i = 0; i < NSAMP; i++) {
		if (ls_rng_next() % 100 < 97)
			samples[i] = (int64_t)(8000.0 + 300.0 * rng_normal());
		else
			samples[i] = (int64_t)(3000000.0 + 200000.0 * rng_normal());
	}
	check_quantiles("bimodal", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_negative)
{
	size_t i;

	ls_rng_seed(16);
	for (i = 0; i < NSAMP; i++)
		samples[i] = -1000 - (int64_t)(ls_rng_next() % 5000000);
	check_quantiles("negative", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_mixed_sign)
{
	size_t i;

	/* Raw one-way delays between offset clocks straddle zero. */
	ls_rng_seed(17);
	for (i = 0; i < NSAMP; i++)
		samples[i] = (int64_t)(20000.0 + 100000.0 * rng_normal());
	check_quantiles("mixed", samples, NSAMP);
}
END_TEST

START_TEST(test_quantile_constant)
{
	size_t i;
	struct ls_hist *h = new_hist();

	for (i = 0; i < NSAMP; i++)
		samples[i] = 123456789;
	check_quantiles("constant", samples, NSAMP);
	/* Clamping to [min, max] makes a constant exact, not merely close. */
	for (i = 0; i < 1000; i++)
		ls_hist_add(h, -777777);
	ck_assert_int_eq(ls_hist_quantile(h, 0.5), -777777);
	ck_assert_int_eq(ls_hist_quantile(h, 0.999), -777777);
	free(h);
}
END_TEST

START_TEST(test_quantile_wide_range)
{
	size_t i;

	/* Log-uniform over every octave the histogram resolves, both signs. */
	ls_rng_seed(18);
	for (i = 0; i < NSAMP; i++) {
		double mag = exp(ls_rng_unit_open() * log((double)(1ULL << LS_HIST_MAX_EXP) - 1));
		samples[i] = (int64_t)mag * ((ls_rng_next() & 1) ? -1 : 1);
	}
	check_quantiles("wide", samples, NSAMP);
}
END_TEST

START_TEST(test_empty)
{
	struct ls_hist *h = new_hist();

	ck_assert_int_eq(ls_hist_quantile(h, 0.5), 0);
	ck_assert_int_eq(ls_hist_quantile(h, 0.0), 0);
	ck_assert_int_eq(ls_hist_quantile(h, 1.0), 0);
	ck_assert(ls_hist_mean(h) == 0.0);
	ls_hist_add(h, 5);
	ls_hist_reset(h);
	ck_assert_uint_eq(h->count, 0);
	ck_assert_int_eq(ls_hist_quantile(h, 0.5), 0);
	/* After reset the first sample sets min and max afresh. */
	ls_hist_add(h, 1000);
	ck_assert_int_eq(h->min, 1000);
	ck_assert_int_eq(h->max, 1000);
	ck_assert_int_eq(ls_hist_quantile(h, 0.5), 1000);
	ck_assert(ls_hist_mean(h) == 1000.0);
	free(h);
}
END_TEST

/* --- merge --------------------------------------------------------------- */

START_TEST(test_merge_equals_add_all)
{
	struct ls_hist *all = new_hist(), *part[3], *m = new_hist();
	int64_t v;
	size_t i;
	int j;

	for (j = 0; j < 3; j++)
		part[j] = new_hist();
	ls_rng_seed(21);
	for (i = 0; i < NSAMP; i++) {
		v = (int64_t)(30000.0 + 200000.0 * rng_normal());
		if (i % 1000 == 0)
			v = (int64_t)(ls_rng_next() >> 1); /* some saturate */
		ls_hist_add(all, v);
		ls_hist_add(part[ls_rng_next() % 3], v);
	}
	/* Merging into an empty histogram must take min/max as they are. */
	for (j = 0; j < 3; j++)
		ls_hist_merge(m, part[j]);
	ck_assert_uint_eq(m->count, all->count);
	ck_assert_int_eq(m->min, all->min);
	ck_assert_int_eq(m->max, all->max);
	ck_assert_uint_eq(m->overflow, all->overflow);
	ck_assert_uint_gt(m->overflow, 0);
	ck_assert(memcmp(m->pos, all->pos, sizeof(m->pos)) == 0);
	ck_assert(memcmp(m->neg, all->neg, sizeof(m->neg)) == 0);
	ck_assert(fabs(m->sum - all->sum) <= 1e-9 * fabs(all->sum));
	for (j = 0; j <= 1000; j++)
		ck_assert_int_eq(ls_hist_quantile(m, j / 1000.0),
				 ls_hist_quantile(all, j / 1000.0));

	/* Merging an empty histogram changes nothing. */
	ls_hist_reset(part[0]);
	ls_hist_merge(m, part[0]);
	ck_assert_uint_eq(m->count, all->count);
	ck_assert_int_eq(m->min, all->min);

	for (j = 0; j < 3; j++)
		free(part[j]);
	free(all);
	free(m);
}
END_TEST

/* A batch adds exactly what one sample at a time adds. */
START_TEST(test_add_n_equals_add)
{
	struct ls_hist *one = new_hist(), *batch = new_hist();
	static int64_t v[300];

	ls_rng_seed(33);
	for (int round = 0; round < 2000; round++) {
		unsigned int n = (unsigned int)(ls_rng_next() % 300);

		for (unsigned int i = 0; i < n; i++) {
			v[i] = (int64_t)(ls_rng_next() % 2000000) - 100000;
			if (ls_rng_next() % 500 == 0) /* some saturate, both signs */
				v[i] = (int64_t)(ls_rng_next() >> 24) * (ls_rng_next() & 1 ? 1 : -1);
			ls_hist_add(one, v[i]);
		}
		ls_hist_add_n(batch, v, n);
		ck_assert_uint_eq(batch->count, one->count);
		if (one->count) {
			ck_assert_int_eq(batch->min, one->min);
			ck_assert_int_eq(batch->max, one->max);
		}
		ck_assert_uint_eq(batch->overflow, one->overflow);
		ck_assert(batch->sum == one->sum);
	}
	ck_assert_uint_gt(one->overflow, 0);
	ck_assert(memcmp(batch->pos, one->pos, sizeof(one->pos)) == 0);
	ck_assert(memcmp(batch->neg, one->neg, sizeof(one->neg)) == 0);
	free(one);
	free(batch);
}
END_TEST

START_TEST(test_merge_minmax)
{
	struct ls_hist *a = new_hist(), *b = new_hist(), *c = new_hist();

	/* An empty dst's zeroed min/max must not leak into the result. */
	ls_hist_add(c, 700);
	ls_hist_add(c, 900);
	ls_hist_merge(b, c);
	ck_assert_int_eq(b->min, 700);
	ck_assert_int_eq(b->max, 900);
	ls_hist_reset(c);
	ls_hist_add(c, -900);
	ls_hist_add(c, -700);
	ls_hist_reset(b);
	ls_hist_merge(b, c);
	ck_assert_int_eq(b->min, -900);
	ck_assert_int_eq(b->max, -700);
	ls_hist_reset(b);
	free(c);

	ls_hist_add(a, 50);
	ls_hist_add(b, -20);
	ls_hist_add(b, 10);
	ls_hist_merge(a, b);
	ck_assert_int_eq(a->min, -20);
	ck_assert_int_eq(a->max, 50);
	ck_assert_uint_eq(a->count, 3);
	ck_assert_int_eq(ls_hist_quantile(a, 0.5), 10);
	free(a);
	free(b);
}
END_TEST

/* --- saturation ---------------------------------------------------------- */

START_TEST(test_overflow_saturates)
{
	struct ls_hist *h = new_hist();
	const int64_t big = (int64_t)1 << LS_HIST_MAX_EXP;

	ls_hist_add(h, big - 1);     /* largest that does not saturate */
	ck_assert_uint_eq(h->overflow, 0);
	ls_hist_add(h, big);
	ls_hist_add(h, -big);
	ls_hist_add(h, INT64_MAX);
	ls_hist_add(h, INT64_MIN);
	ck_assert_uint_eq(h->overflow, 4);
	ck_assert_uint_eq(h->count, 5);
	ck_assert_uint_eq(h->pos[LS_HIST_HALF - 1], 3);
	ck_assert_uint_eq(h->neg[LS_HIST_HALF - 1], 2);
	ck_assert_int_eq(h->min, INT64_MIN);
	ck_assert_int_eq(h->max, INT64_MAX);
	ck_assert_int_eq(ls_hist_quantile(h, 0.0), INT64_MIN);
	ck_assert_int_eq(ls_hist_quantile(h, 1.0), INT64_MAX);
	/* Quantiles in the saturated bucket stay inside [min, max]. */
	ck_assert_int_ge(ls_hist_quantile(h, 0.9), big / 2);
	ck_assert_int_le(ls_hist_quantile(h, 0.1), -big / 2);
	free(h);
}
END_TEST


/* --- sparse histograms ---------------------------------------------------- */

/*
 * A sparse histogram built from pieces (as the windows build one from
 * seconds) must be bucket for bucket the dense one, so its quantiles keep
 * the 1/32 bound: checked against exact quantiles of a wide mixed-sign
 * distribution.
 */
START_TEST(test_shist_accuracy)
{
	static const double qs[] = { 0.01, 0.1, 0.5, 0.9, 0.99, 0.999 };
	struct ls_shist *parts[10] = { NULL }, *all = NULL;
	struct ls_hist *dense = calloc(1, sizeof(*dense));
	struct ls_hist *back = calloc(1, sizeof(*back));
	int i;

	ck_assert_ptr_nonnull(dense);
	ck_assert_ptr_nonnull(back);
	ls_rng_seed(28);
	for (i = 0; i < NSAMP; i++) {
		double x = exp(8.0 + 2.0 * rng_normal());

		samples[i] = (int64_t)(i % 7 == 0 ? -x : x);
		ck_assert_int_eq(ls_shist_add(&parts[i % 10], samples[i]), 0);
		ls_hist_add(dense, samples[i]);
	}
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(ls_shist_merge(&all, parts[i]), 0);
	ls_shist_to_dense(back, all);
	ck_assert_uint_eq(back->count, NSAMP);
	ck_assert_int_eq(back->min, dense->min);
	ck_assert_int_eq(back->max, dense->max);
	ck_assert_mem_eq(back->pos, dense->pos, sizeof(dense->pos));
	ck_assert_mem_eq(back->neg, dense->neg, sizeof(dense->neg));
	qsort(samples, NSAMP, sizeof(*samples), cmp_i64);
	for (i = 0; i < (int)(sizeof(qs) / sizeof(qs[0])); i++) {
		int64_t want = samples[(size_t)ceil(qs[i] * NSAMP) - 1];
		int64_t got = ls_hist_quantile(back, qs[i]);

		ck_assert_msg(fabs((double)(got - want)) <= fabs((double)want) * LS_HIST_REL_ERR,
			      "q %.3f: got %" PRId64 " want %" PRId64, qs[i], got, want);
	}
	/* Only non-empty buckets are held. */
	ck_assert_uint_lt(ls_shist_bytes(all), sizeof(struct ls_hist));
	for (i = 0; i < 10; i++)
		ls_shist_free(&parts[i]);
	ls_shist_free(&all);
	free(dense);
	free(back);
}
END_TEST

/* Emptying gives the memory back: an empty histogram is NULL, 0 bytes. */
START_TEST(test_shist_give_back)
{
	struct ls_shist *h = NULL;

	ck_assert_uint_eq(ls_shist_bytes(h), 0);
	ck_assert_int_eq(ls_shist_merge(&h, NULL), 0);
	ck_assert_ptr_null(h);
	for (int i = 1; i <= 1000; i++)
		ck_assert_int_eq(ls_shist_add(&h, i * 1000), 0);
	ck_assert_uint_eq(h->count, 1000);
	ck_assert_uint_gt(ls_shist_bytes(h), 0);
	ls_shist_free(&h);
	ck_assert_ptr_null(h);
	ck_assert_uint_eq(ls_shist_bytes(h), 0);
}
END_TEST

/* A bucket whose count passes one entry's limit goes on in a second entry. */
START_TEST(test_shist_split_counts)
{
	uint32_t e = (uint32_t)ls_hist_key(5000) << LS_SHIST_CNT_BITS | LS_SHIST_CNT_MAX;
	struct ls_shist_src src = {
		.ent = &e, .n = 1, .count = LS_SHIST_CNT_MAX, .min = 5000, .max = 5000,
		.sum = 5000.0 * LS_SHIST_CNT_MAX,
	};
	struct ls_shist *h = NULL;
	struct ls_hist *d = calloc(1, sizeof(*d));

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(ls_shist_merge_keys(&h, &src), 0);
	ck_assert_int_eq(ls_shist_merge_keys(&h, &src), 0);
	ck_assert_int_eq(ls_shist_add(&h, 5000), 0);
	ck_assert_uint_eq(h->n, 3); /* MAX, MAX, 1 */
	ck_assert_uint_eq(h->count, 2ull * LS_SHIST_CNT_MAX + 1);
	ls_shist_to_dense(d, h);
	ck_assert_uint_eq(d->pos[ls_hist_bucket(5000)], 2ull * LS_SHIST_CNT_MAX + 1);
	ls_shist_free(&h);
	free(d);
}
END_TEST

/*
 * One or two samples are kept as just min and max (the small form), and
 * must read back as the same histogram as the dense one, sum included,
 * alone and merged into a bigger one in either order.
 */
START_TEST(test_shist_small_form)
{
	static const int64_t v[] = { 700, -3000000, 700, 123456789 };
	struct ls_shist *a = NULL, *b = NULL, *ab = NULL, *ba = NULL;
	struct ls_hist *dense = calloc(1, sizeof(*dense));
	struct ls_hist *back = calloc(1, sizeof(*back));

	ck_assert_ptr_nonnull(dense);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(ls_shist_add(&a, v[0]), 0);
	ck_assert_int_eq(ls_shist_add(&a, v[1]), 0);
	ck_assert_uint_eq(a->count, LS_SHIST_SMALL);
	ck_assert_uint_eq(a->n, 0);
	ck_assert_uint_lt(ls_shist_bytes(a), sizeof(struct ls_shist) + 16);
	ls_hist_add(dense, v[0]);
	ls_hist_add(dense, v[1]);
	ls_shist_to_dense(back, a);
	ck_assert_mem_eq(back, dense, sizeof(*dense));

	ck_assert_int_eq(ls_shist_add(&b, v[2]), 0);
	ck_assert_int_eq(ls_shist_add(&b, v[3]), 0);
	ck_assert_int_eq(ls_shist_merge(&ab, a), 0);
	ck_assert_int_eq(ls_shist_merge(&ab, b), 0);
	ck_assert_int_eq(ls_shist_merge(&ba, b), 0);
	ck_assert_int_eq(ls_shist_merge(&ba, a), 0);
	ck_assert_uint_eq(ab->count, 4);
	ck_assert_uint_eq(ab->n, 3);
	ls_hist_add(dense, v[2]);
	ls_hist_add(dense, v[3]);
	ls_hist_reset(back);
	ls_shist_to_dense(back, ab);
	ck_assert_mem_eq(back, dense, sizeof(*dense));
	ls_hist_reset(back);
	ls_shist_to_dense(back, ba);
	ck_assert_mem_eq(back, dense, sizeof(*dense));
	ls_shist_free(&a);
	ls_shist_free(&b);
	ls_shist_free(&ab);
	ls_shist_free(&ba);
	free(dense);
	free(back);
}
END_TEST

static Suite *
hist_suite(void)
{
	Suite *s = suite_create("hist");
	TCase *tc;

	tc = tcase_create("buckets");
	tcase_add_test(tc, test_bucket_ranges_contiguous);
	tcase_add_test(tc, test_bucket_width_bound);
	tcase_add_test(tc, test_bucket_contains_every_octave);
	suite_add_tcase(s, tc);

	tc = tcase_create("quantiles");
	tcase_add_test(tc, test_quantile_uniform);
	tcase_add_test(tc, test_quantile_small_exact);
	tcase_add_test(tc, test_quantile_exponential);
	tcase_add_test(tc, test_quantile_lognormal);
	tcase_add_test(tc, test_quantile_bimodal);
	tcase_add_test(tc, test_quantile_negative);
	tcase_add_test(tc, test_quantile_mixed_sign);
	tcase_add_test(tc, test_quantile_constant);
	tcase_add_test(tc, test_quantile_wide_range);
	tcase_add_test(tc, test_empty);
	suite_add_tcase(s, tc);

	tc = tcase_create("merge");
	tcase_add_test(tc, test_merge_equals_add_all);
	tcase_add_test(tc, test_merge_minmax);
	tcase_add_test(tc, test_add_n_equals_add);
	tcase_add_test(tc, test_overflow_saturates);
	suite_add_tcase(s, tc);

	tc = tcase_create("sparse");
	tcase_add_test(tc, test_shist_accuracy);
	tcase_add_test(tc, test_shist_give_back);
	tcase_add_test(tc, test_shist_split_counts);
	tcase_add_test(tc, test_shist_small_form);
	suite_add_tcase(s, tc);
	return s;
}

static int
alloc_samples(void)
{
	samples = malloc(NSAMP * sizeof(*samples));
	return samples == NULL ? -1 : 0;
}

static void
free_samples(void)
{
	free(samples);
}

LS_TEST_MAIN_WITH(hist_suite, alloc_samples, free_samples)
