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

/**
 * @name Per-link queueing (ls_tomo_queues)
 *
 * Each measured path's mean queueing over an interval is the sum of its
 * links' (a mean is additive, a median is not). Given the paths' means and
 * links, find each link's: non-negative least squares over the path-link
 * incidence, each path weighted (e.g. by its samples). Links crossed by
 * exactly the same paths cannot be told apart from one node's view: they
 * form a group, solved as one unknown; each member reports the group's
 * value (the queue is on one of them, or split) and the group's size. The
 * confidence a caller can show: the paths behind a link, the group's size
 * and the RMS residual of those paths (what the fit leaves unexplained).
 * @{
 */

/** A measured path. */
struct ls_tomo_qpath {
	const uint16_t *link;     /**< link ids */
	uint16_t n;               /**< how many */
	double q_ns;              /**< its mean queueing over the interval */
	double w;                 /**< its weight (samples); <= 0: left out */
};

/** A link's estimate. */
struct ls_tomo_qlink {
	double q_ns;              /**< queueing (>= 0); its group's */
	double resid_ns;          /**< RMS residual of the paths that cross it */
	uint32_t paths;           /**< measured paths that cross it (0: no estimate) */
	uint16_t group;           /**< the lowest id of the links with its path set */
	uint16_t shared;          /**< links in its group (1: told apart) */
};

/** Scratch the caller provides (no allocation here). */
struct ls_tomo_qwork {
	uint64_t *sig;            /**< [cap_links] */
	uint32_t *off;            /**< [cap_links + 1] */
	uint32_t *fill;           /**< [cap_links] */
	uint32_t *ent;            /**< [cap_entries]: path ids per link */
	double *r;                /**< [cap_paths]: residuals */
	uint32_t cap_links, cap_paths, cap_entries;
};

/**
 * Estimate every link's queueing.
 * @param p       the paths
 * @param out     [n_links] the estimates
 * @param sweeps  coordinate-descent sweeps at most (it stops when a sweep
 *                moves the values by under 1 ns in all; 200 is plenty)
 * @return the groups estimated, or -1: a link id >= n_links, or more than
 *         the scratch holds
 */
int ls_tomo_queues(const struct ls_tomo_qpath *p, uint32_t n_paths, uint32_t n_links,
		   struct ls_tomo_qlink *out, struct ls_tomo_qwork *w, uint32_t sweeps);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* LS_TOMO_H */
