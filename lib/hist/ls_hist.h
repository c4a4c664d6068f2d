/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Fixed-memory log-linear histogram of signed 64-bit values (nanoseconds).
 *
 * Magnitudes below 2^LS_HIST_SUB_BITS go one per bucket; above, every
 * power-of-two octave [2^e, 2^(e+1)) is split into 2^LS_HIST_SUB_BITS equal
 * buckets (the HdrHistogram idea). A quantile is reported as the midpoint of
 * its bucket clamped to [min, max], so its relative error is at most
 * 2^-(LS_HIST_SUB_BITS+1) (LS_HIST_REL_ERR). Negative values (raw one-way
 * delays between unsynchronized clocks can be negative) use a mirrored set
 * of buckets. Magnitudes at or above 2^LS_HIST_MAX_EXP saturate in the last
 * bucket and are counted in `overflow`; min and max stay exact.
 *
 * Adding is a handful of integer operations (clz, shift, increment) and is
 * inline for the fast path. Memory is constant: sizeof(struct ls_hist).
 */
#ifndef LS_HIST_H
#define LS_HIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_HIST_SUB_BITS 4     /**< 16 buckets per octave */
#define LS_HIST_MAX_EXP 36     /**< magnitudes up to 2^36 ns (~68.7 s) */
/** Buckets per sign. */
#define LS_HIST_HALF ((LS_HIST_MAX_EXP - LS_HIST_SUB_BITS + 1) << LS_HIST_SUB_BITS)
/** Relative error bound of a reported quantile. */
#define LS_HIST_REL_ERR (1.0 / (double)(2 << LS_HIST_SUB_BITS))

/** A histogram. Zero-initialised memory is a valid empty histogram. */
struct ls_hist {
	uint64_t count;          /**< samples */
	int64_t min;             /**< smallest sample (valid when count > 0) */
	int64_t max;             /**< largest sample (valid when count > 0) */
	int64_t sum_hi;          /**< reserved: keeps the struct 8-byte aligned */
	double sum;              /**< sum of samples (for the mean) */
	uint64_t overflow;       /**< samples whose magnitude saturated */
	uint32_t pos[LS_HIST_HALF]; /**< buckets for values >= 0 */
	uint32_t neg[LS_HIST_HALF]; /**< buckets for values < 0, by magnitude */
};

/** Bucket index of a magnitude (exposed for tests and inline add). */
static inline uint32_t
ls_hist_bucket(uint64_t mag)
{
	uint32_t e;

	if (mag < (1ULL << LS_HIST_SUB_BITS))
		return (uint32_t)mag;
	if (mag >= (1ULL << LS_HIST_MAX_EXP))
		return LS_HIST_HALF - 1;
	e = 63u - (uint32_t)__builtin_clzll(mag); /* octave: 2^e <= mag */
	return ((e - LS_HIST_SUB_BITS + 1) << LS_HIST_SUB_BITS) +
	       (uint32_t)((mag >> (e - LS_HIST_SUB_BITS)) & ((1u << LS_HIST_SUB_BITS) - 1));
}

/** Add one sample. */
static inline void
ls_hist_add(struct ls_hist *h, int64_t v)
{
	uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	uint32_t b = ls_hist_bucket(mag);

	if (h->count == 0 || v < h->min)
		h->min = v;
	if (h->count == 0 || v > h->max)
		h->max = v;
	h->count++;
	h->sum += (double)v;
	if (mag >= (1ULL << LS_HIST_MAX_EXP))
		h->overflow++;
	if (v < 0)
		h->neg[b]++;
	else
		h->pos[b]++;
}

/**
 * Add n samples: the same histogram as n ls_hist_add() calls, cheaper for a
 * batch. Count, min, max, sum and overflow are kept in registers and stored
 * once (per sample, each is a load-add-store chain through memory, the
 * sum's through a floating-point add as well). The sum is accumulated as an
 * integer and added once: the same double as n sequential additions
 * whenever the sums involved are integers below 2^53 in magnitude (where
 * doubles are exact: about 104 days of nanoseconds), more accurate beyond.
 */
static inline void
ls_hist_add_n(struct ls_hist *h, const int64_t *v, unsigned int n)
{
	int64_t lo, hi;
	__int128 sum = 0;
	uint64_t over = 0;

	if (n == 0)
		return;
	lo = hi = v[0];
	for (unsigned int i = 0; i < n; i++) {
		uint64_t mag = v[i] < 0 ? (uint64_t)0 - (uint64_t)v[i] : (uint64_t)v[i];
		uint32_t b = ls_hist_bucket(mag);

		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
		sum += v[i];
		over += mag >= (1ULL << LS_HIST_MAX_EXP);
		if (v[i] < 0)
			h->neg[b]++;
		else
			h->pos[b]++;
	}
	if (h->count == 0 || lo < h->min)
		h->min = lo;
	if (h->count == 0 || hi > h->max)
		h->max = hi;
	h->count += n;
	h->sum += (double)sum;
	h->overflow += over;
}

/** Empty a histogram. */
void ls_hist_reset(struct ls_hist *h);

/** dst += src. */
void ls_hist_merge(struct ls_hist *dst, const struct ls_hist *src);

/**
 * Value at quantile q in [0, 1] (0.5 = median, 0.999 = p99.9): the midpoint
 * of the bucket holding the ceil(q*count)-th smallest sample, clamped to
 * [min, max]; q <= 0 gives min and q >= 1 gives max exactly.
 * @return the value, or 0 for an empty histogram.
 */
int64_t ls_hist_quantile(const struct ls_hist *h, double q);

/** Mean of the samples, 0 for an empty histogram. */
double ls_hist_mean(const struct ls_hist *h);

/** Smallest and largest magnitude that fall into bucket b (for tests). */
void ls_hist_bucket_range(uint32_t b, uint64_t *lo, uint64_t *hi);

/*
 * Sparse histogram: the same buckets, only the non-empty ones, on the heap.
 *
 * For the control thread, which keeps many histograms per path (rolling
 * windows) where a dense struct ls_hist would be 4 KiB each however few
 * samples it holds. Buckets are named by a key that orders them by value:
 * key = LS_HIST_HALF - 1 - b for a negative value in bucket b,
 * LS_HIST_HALF + b for a value >= 0. An empty histogram is a NULL pointer:
 * emptying frees its memory. It keeps no overflow count
 * (ls_shist_to_dense() adds none); saturated magnitudes still land in the
 * last bucket.
 *
 * Two forms, told apart by count:
 *  - small (count <= LS_SHIST_SMALL): struct ls_shist alone. One or two
 *    samples are their min and max, so buckets and sum follow from those
 *    (a 1 s window slot of a path probed at a pair a second is one of these).
 *  - sparse: struct ls_shist, then the sum (double) and the entries, sorted
 *    by key, one 32-bit word each: key << LS_SHIST_CNT_BITS | count. A count
 *    that would pass LS_SHIST_CNT_MAX continues in a second entry with the
 *    same key, so nothing is ever clamped.
 */

#define LS_SHIST_CNT_BITS 21                       /**< count bits per entry */
#define LS_SHIST_CNT_MAX ((1u << LS_SHIST_CNT_BITS) - 1) /**< largest count per entry */
#define LS_SHIST_KEYS (2 * LS_HIST_HALF)           /**< number of keys */
#define LS_SHIST_SMALL 2                           /**< most samples of the small form */

/**
 * A sparse histogram's header (allocated; NULL is the empty one), the whole
 * of the small form. 24 bytes: at a probe pair a second, a path's 48 window
 * histograms hold a handful of buckets each, so headers are most of them.
 */
struct ls_shist {
	uint32_t n;        /**< entries (sparse form; 0 in the small form) */
	uint32_t count;    /**< samples (at most 2^32 - 1: a window's slot holds seconds) */
	int64_t min;       /**< smallest sample */
	int64_t max;       /**< largest sample */
};

/** Key of a value (orders buckets by value, see above). */
static inline uint32_t
ls_hist_key(int64_t v)
{
	uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	uint32_t b = ls_hist_bucket(mag);

	return v < 0 ? LS_HIST_HALF - 1 - b : LS_HIST_HALF + b;
}

/**
 * Summary of a run of samples given as keyed counts (ls_shist_merge_keys).
 * With one or two samples, min and max must be them (the small form keeps
 * nothing else).
 */
struct ls_shist_src {
	const uint32_t *ent; /**< entries as in the sparse form, ascending key */
	uint32_t n;          /**< entries */
	uint64_t count;      /**< samples (sum of the entries' counts) */
	int64_t min;         /**< smallest sample */
	int64_t max;         /**< largest sample */
	double sum;          /**< sum of samples */
};

/**
 * *dst += src. Allocates a new entry array when the result needs one and
 * frees the old one.
 * @return 0, or -ENOMEM with *dst unchanged.
 */
int ls_shist_merge_keys(struct ls_shist **dst, const struct ls_shist_src *src);

/** *dst += src (src may be NULL). @return 0 or -ENOMEM (*dst unchanged). */
int ls_shist_merge(struct ls_shist **dst, const struct ls_shist *src);

/** Add one sample. @return 0 or -ENOMEM (*h unchanged). */
int ls_shist_add(struct ls_shist **h, int64_t v);

/** dst += src, into a dense histogram (src may be NULL). */
void ls_shist_to_dense(struct ls_hist *dst, const struct ls_shist *src);

/** Empty *h and give its memory back; *h becomes NULL. */
void ls_shist_free(struct ls_shist **h);

/**
 * Heap bytes *h holds: its block's usable size (malloc_usable_size), which
 * the allocator may have rounded up from what was asked.
 */
size_t ls_shist_bytes(const struct ls_shist *h);

#ifdef __cplusplus
}
#endif

#endif /* LS_HIST_H */
