/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Log-linear histogram: the slow half.
 *
 * Adding a sample happens on the lcore fast path, so it lives inline in
 * ls_hist.h and touches one counter. Everything here runs on the control
 * thread a few times per second: emptying, merging per-second histograms into
 * windows, and reading quantiles. None of it allocates; a histogram is one
 * flat struct so the control thread can keep dozens of them in fixed arrays.
 *
 * Bucket layout (LS_HIST_SUB_BITS = s, 2^s = n):
 *  - buckets 0 .. n-1 hold magnitudes 0 .. n-1, one each;
 *  - for every octave e >= s, buckets (e-s+1)*n .. (e-s+1)*n + n-1 split
 *    [2^e, 2^(e+1)) into n equal parts of width 2^(e-s). The first of these
 *    octaves (e = s) has width 1, so the exact range simply continues.
 * The quantile is reported as the bucket midpoint: half a bucket width over
 * a lower bound of at least 2^e keeps the error under 2^-(s+1).
 */
#include <math.h>
#include <string.h>

#include "ls_hist.h"

void
ls_hist_reset(struct ls_hist *h)
{
	memset(h, 0, sizeof(*h));
}

void
ls_hist_merge(struct ls_hist *dst, const struct ls_hist *src)
{
	uint32_t b;

	if (src->count == 0)
		return;
	/* An empty dst has meaningless min/max: take src's instead of comparing. */
	if (dst->count == 0 || src->min < dst->min)
		dst->min = src->min;
	if (dst->count == 0 || src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	dst->overflow += src->overflow;
	for (b = 0; b < LS_HIST_HALF; b++) {
		dst->pos[b] += src->pos[b];
		dst->neg[b] += src->neg[b];
	}
}

/*
 * Range of bucket b as if the last bucket did not also absorb saturated
 * magnitudes. Quantiles use this one: a midpoint computed over "up to
 * UINT64_MAX" would be nonsense, and clamping to max handles saturation.
 */
static void
bucket_span(uint32_t b, uint64_t *lo, uint64_t *hi)
{
	uint32_t e, sub;

	if (b < (1u << LS_HIST_SUB_BITS)) {
		*lo = b;
		*hi = b;
		return;
	}
	e = (b >> LS_HIST_SUB_BITS) + LS_HIST_SUB_BITS - 1;
	sub = b & ((1u << LS_HIST_SUB_BITS) - 1);
	*lo = (1ULL << e) + ((uint64_t)sub << (e - LS_HIST_SUB_BITS));
	*hi = *lo + (1ULL << (e - LS_HIST_SUB_BITS)) - 1;
}

void
ls_hist_bucket_range(uint32_t b, uint64_t *lo, uint64_t *hi)
{
	if (b >= LS_HIST_HALF) {
		/* No such bucket: an empty range rather than a plausible lie. */
		*lo = UINT64_MAX;
		*hi = 0;
		return;
	}
	bucket_span(b, lo, hi);
	/* The last bucket is where saturated magnitudes land too. */
	if (b == LS_HIST_HALF - 1)
		*hi = UINT64_MAX;
}

/*
 * ceil(q * n), except that a product within rounding noise of an integer is
 * taken as that integer: 0.999 * 100000 is 99900.00000000001 in binary, and
 * the caller meant rank 99900, not 99901.
 */
static uint64_t
rank_of(double q, uint64_t n)
{
	double x = q * (double)n;
	double r = nearbyint(x);
	uint64_t k;

	if (fabs(x - r) <= 1e-9 * (x > 1.0 ? x : 1.0))
		k = (uint64_t)r;
	else
		k = (uint64_t)ceil(x);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return k;
}

static int64_t
clamp_mid(const struct ls_hist *h, uint32_t b, int neg)
{
	uint64_t lo, hi, mid;
	int64_t v;

	bucket_span(b, &lo, &hi);
	mid = lo + (hi - lo) / 2;
	v = neg ? -(int64_t)mid : (int64_t)mid;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

int64_t
ls_hist_quantile(const struct ls_hist *h, double q)
{
	uint64_t rank, acc = 0;
	uint32_t b;

	if (h->count == 0)
		return 0;
	/* Written so that a NaN q lands on min rather than in a float cast. */
	if (!(q > 0.0))
		return h->min;
	if (q >= 1.0)
		return h->max;
	rank = rank_of(q, h->count);

	/* Ascending value order: most negative first, i.e. neg[] backwards. */
	for (b = LS_HIST_HALF; b-- > 0;) {
		acc += h->neg[b];
		if (acc >= rank)
			return clamp_mid(h, b, 1);
	}
	for (b = 0; b < LS_HIST_HALF; b++) {
		acc += h->pos[b];
		if (acc >= rank)
			return clamp_mid(h, b, 0);
	}
	/* Only reachable if the buckets disagree with count (32-bit wrap). */
	return h->max;
}

double
ls_hist_mean(const struct ls_hist *h)
{
	if (h->count == 0)
		return 0.0;
	return h->sum / (double)h->count;
}
