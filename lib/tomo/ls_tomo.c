/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Boolean network tomography, one greedy step at a time (ls_tomo.h).
 * O(bad paths x hops) per link counted, O(links x bad paths x hops) to find
 * the best link's twins: small at one node's view (thousands of links, a
 * few dead paths).
 */
#include <stdbool.h>
#include <string.h>

#include "ls_tomo.h"

static bool
crosses(const struct ls_tomo_path *p, uint32_t l)
{
	for (uint16_t j = 0; j < p->n; j++)
		if (p->link[j] == l)
			return true;
	return false;
}

uint32_t
ls_tomo_pick(const uint8_t *good, uint32_t *count, uint32_t n_links,
	     struct ls_tomo_path *bad, uint32_t n_bad, uint16_t *cand, uint32_t cap,
	     uint32_t *n_cand, uint16_t mark)
{
	uint32_t best = 0, bi = 0, n = 0;

	*n_cand = 0;
	memset(count, 0, sizeof(*count) * n_links);
	for (uint32_t k = 0; k < n_bad; k++)
		for (uint16_t j = 0; !bad[k].covered && j < bad[k].n; j++)
			if (bad[k].link[j] < n_links)
				count[bad[k].link[j]]++;
	for (uint32_t i = 0; i < n_links; i++)
		if (!good[i] && count[i] > best) {
			best = count[i];
			bi = i;
		}
	if (best == 0)
		return 0;
	/* the best's twins: not good, on exactly the same uncovered bad paths
	 * (same count, and no uncovered bad path has one but not the other) */
	for (uint32_t i = 0; i < n_links; i++) {
		bool same = !good[i] && count[i] == best;

		for (uint32_t k = 0; same && k < n_bad; k++)
			if (!bad[k].covered)
				same = crosses(&bad[k], bi) == crosses(&bad[k], i);
		if (!same)
			continue;
		if (*n_cand < cap)
			cand[*n_cand] = (uint16_t)i;
		(*n_cand)++;
	}
	for (uint32_t k = 0; k < n_bad; k++)
		if (!bad[k].covered && crosses(&bad[k], bi)) {
			bad[k].covered = mark;
			n++;
		}
	return n;
}
