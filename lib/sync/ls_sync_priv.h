/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the rooms of lib/sync share and nobody else needs: clock
 * arithmetic on uint64 ns readings and the lower hull of a sample cloud
 * (the envelope fit's, reused by the floor-drift estimate). Not installed.
 */
#ifndef LS_SYNC_PRIV_H
#define LS_SYNC_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "ls_sync.h"

/* No figure is trusted beyond this, whatever a caller's fit claims. */
#define LS_SYNC_SIGMA_MIN 1e-6

/* a - b of two clock readings as a signed count: exact for |a - b| < 2^63. */
static inline int64_t
ns_diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/* Add a signed ns count to a clock reading, saturating at 0 and UINT64_MAX. */
static inline uint64_t
ns_add(uint64_t t, int64_t d)
{
	if (d >= 0)
		return t > UINT64_MAX - (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
	uint64_t m = (uint64_t)0 - (uint64_t)d;
	return t < m ? 0 : t - m;
}

/* qsort order of samples: by t, then d (ls_sync_fit.c). */
int ls_sync_pt_cmp(const void *x, const void *y);

/* Lower convex hull of p[0..n) (sorted by ls_sync_pt_cmp) into h, as
 * indices into p; returns the vertex count (ls_sync_fit.c). */
uint32_t ls_sync_lower_hull(struct ls_sync_pt *p, uint32_t n, uint32_t *h);

#endif /* LS_SYNC_PRIV_H */
