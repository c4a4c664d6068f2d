/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Boolean network tomography from one node's view: which links explain a
 * set of bad (dead or hot) paths, given the links of good paths. The
 * decisions only, over link ids the caller assigns; no EAL, no allocation.
 *
 * A link on a good path is good. A bad path is explained by its links that
 * are not good. ls_tomo_pick is one step of a greedy set cover: it takes
 * the not-good link that explains the most bad paths not yet explained,
 * together with every link that explains exactly the same ones (they cannot
 * be told apart from this view: one suspect, several candidates), and
 * marks those paths explained. Calling it until it returns 0 covers every
 * bad path that any not-good link explains; the rest (all their links are
 * good elsewhere: a reply path died, invisible from here) stay uncovered.
 */
#ifndef LS_TOMO_H
#define LS_TOMO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A bad path: the ids of the links it crosses. */
struct ls_tomo_path {
	const uint16_t *link;     /**< link ids */
	uint16_t n;               /**< how many */
	uint16_t covered;         /**< 0, or the step (ls_tomo_pick's mark) that explained it */
};

/**
 * One step of the cover.
 * @param good     [n_links] non-zero: the link is on a good path
 * @param count    [n_links] scratch
 * @param bad      the bad paths; those this step explains get covered = mark
 * @param cand     out: the suspect's candidate links, in id order
 * @param cap      room in cand
 * @param n_cand   out: how many (may exceed cap: only cap are written)
 * @param mark     non-zero, written to the paths this step explains
 * @return the number of bad paths this step explained; 0 when none is left
 *         that a not-good link explains
 */
uint32_t ls_tomo_pick(const uint8_t *good, uint32_t *count, uint32_t n_links,
		      struct ls_tomo_path *bad, uint32_t n_bad, uint16_t *cand, uint32_t cap,
		      uint32_t *n_cand, uint16_t mark);

#ifdef __cplusplus
}
#endif

#endif /* LS_TOMO_H */
