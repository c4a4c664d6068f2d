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
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_hist.h"

/* Count, min, max and sum of a non-empty source into dst. An empty dst has
 * meaningless min/max: take the source's instead of comparing. */
static void
merge_summary(struct ls_hist *dst, uint64_t count, int64_t min, int64_t max, double sum)
{
	if (dst->count == 0 || min < dst->min)
		dst->min = min;
	if (dst->count == 0 || max > dst->max)
		dst->max = max;
	dst->count += count;
	dst->sum += sum;
}

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
	merge_summary(dst, src->count, src->min, src->max, src->sum);
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

/* ---- sparse histograms ------------------------------------------------ */

_Static_assert(sizeof(struct ls_shist) == 24, "a 24-byte header");

/* What follows the header in the sparse form. */
struct shist_tail {
	double sum;        /* sum of samples */
	uint32_t ent[];    /* key << LS_SHIST_CNT_BITS | count, ascending key */
};

_Static_assert(sizeof(struct ls_shist) % _Alignof(struct shist_tail) == 0,
	       "the tail follows the header unpadded");

#define ENT_KEY(e) ((e) >> LS_SHIST_CNT_BITS)
#define ENT_CNT(e) ((e) & LS_SHIST_CNT_MAX)
#define ENT(k, c) ((uint32_t)(k) << LS_SHIST_CNT_BITS | (uint32_t)(c))

static inline struct shist_tail *
tail(const struct ls_shist *h)
{
	return (struct shist_tail *)(uintptr_t)(h + 1);
}

/*
 * Append count c of key k to out[*n], folding it into the previous entry
 * when that has the same key and room; the rest starts a new entry.
 */
static void
emit(uint32_t *out, uint32_t *n, uint32_t k, uint32_t c)
{
	if (*n > 0 && ENT_KEY(out[*n - 1]) == k) {
		uint32_t room = LS_SHIST_CNT_MAX - ENT_CNT(out[*n - 1]);
		uint32_t take = c < room ? c : room;

		out[*n - 1] += take;
		c -= take;
	}
	if (c > 0)
		out[(*n)++] = ENT(k, c);
}

/*
 * Entries and sum of h in either form: the small form's are made from its
 * min and max into buf (keys order by value, so they come out sorted).
 */
static const uint32_t *
view(const struct ls_shist *h, uint32_t buf[LS_SHIST_SMALL], uint32_t *n, double *sum)
{
	if (h->count > LS_SHIST_SMALL) {
		*n = h->n;
		*sum = tail(h)->sum;
		return tail(h)->ent;
	}
	*n = 0;
	emit(buf, n, ls_hist_key(h->min), 1);
	*sum = (double)h->min;
	if (h->count == 2) {
		emit(buf, n, ls_hist_key(h->max), 1);
		*sum += (double)h->max;
	}
	return buf;
}

/*
 * A merge of two sorted entry lists, forward into a fresh array (the
 * simplest thing that is correct with split counts): the control thread
 * merges a handful of entries a second per histogram, so the allocation
 * is not worth avoiding. The array is sized for the worst case and then
 * trimmed to fit, so a window holds only what it uses.
 */
int
ls_shist_merge_keys(struct ls_shist **dst, const struct ls_shist_src *src)
{
	struct ls_shist *d = *dst, *r, *t;
	uint32_t dbuf[LS_SHIST_SMALL], dn = 0, i = 0, j = 0, n = 0;
	const uint32_t *de = NULL;
	double dsum = 0;
	uint64_t total;
	size_t head = sizeof(*r) + sizeof(struct shist_tail);

	if (src->count == 0)
		return 0;
	if (d != NULL && d->count == 0)
		d = NULL;
	if (d != NULL)
		de = view(d, dbuf, &dn, &dsum);
	total = (d != NULL ? d->count : 0) + src->count;
	if (total <= LS_SHIST_SMALL) {
		r = malloc(sizeof(*r));
		if (r == NULL)
			return -ENOMEM;
		r->n = 0;
	} else {
		r = malloc(head + (size_t)(dn + src->n) * sizeof(uint32_t));
		if (r == NULL)
			return -ENOMEM;
		while (i < dn || j < src->n) {
			uint32_t e;

			if (j >= src->n || (i < dn && ENT_KEY(de[i]) <= ENT_KEY(src->ent[j])))
				e = de[i++];
			else
				e = src->ent[j++];
			emit(tail(r)->ent, &n, ENT_KEY(e), ENT_CNT(e));
		}
		r->n = n;
		tail(r)->sum = dsum + src->sum;
		if (n < dn + src->n) {
			t = realloc(r, head + (size_t)n * sizeof(uint32_t));
			if (t != NULL)
				r = t;
		}
	}
	r->count = (uint32_t)total;
	r->min = d != NULL && d->min < src->min ? d->min : src->min;
	r->max = d != NULL && d->max > src->max ? d->max : src->max;
	free(*dst);
	*dst = r;
	return 0;
}

int
ls_shist_merge(struct ls_shist **dst, const struct ls_shist *src)
{
	uint32_t buf[LS_SHIST_SMALL];
	struct ls_shist_src s;

	if (src == NULL || src->count == 0)
		return 0;
	s.ent = view(src, buf, &s.n, &s.sum);
	s.count = src->count;
	s.min = src->min;
	s.max = src->max;
	return ls_shist_merge_keys(dst, &s);
}

int
ls_shist_add(struct ls_shist **h, int64_t v)
{
	uint32_t e = ENT(ls_hist_key(v), 1);
	struct ls_shist_src s = {
		.ent = &e, .n = 1, .count = 1, .min = v, .max = v, .sum = (double)v,
	};

	return ls_shist_merge_keys(h, &s);
}

void
ls_shist_to_dense(struct ls_hist *dst, const struct ls_shist *src)
{
	uint32_t buf[LS_SHIST_SMALL], n;
	const uint32_t *ent;
	double sum;

	if (src == NULL || src->count == 0)
		return;
	ent = view(src, buf, &n, &sum);
	merge_summary(dst, src->count, src->min, src->max, sum);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = ENT_KEY(ent[i]);

		if (k < LS_HIST_HALF)
			dst->neg[LS_HIST_HALF - 1 - k] += ENT_CNT(ent[i]);
		else
			dst->pos[k - LS_HIST_HALF] += ENT_CNT(ent[i]);
	}
}

void
ls_shist_free(struct ls_shist **h)
{
	free(*h);
	*h = NULL;
}

size_t
ls_shist_bytes(const struct ls_shist *h)
{
	/* What the heap holds for it, not what was asked for. */
	return h != NULL ? malloc_usable_size((void *)(uintptr_t)h) : 0;
}
