/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-link queueing from per-path queueing (ls_tomo.h, ls_tomo_queues):
 * non-negative least squares over the path-link incidence, solved by
 * cyclic coordinate descent with each link's value clamped at zero.
 *
 * Why this and not a library: the system is one node's view (hundreds of
 * paths, tens of links, each path a handful of links), sparse, rebuilt
 * every second; LAPACK-style NNLS (Lawson-Hanson) would need dense
 * matrices and allocation for nothing. Coordinate descent on a convex
 * quadratic with box constraints converges to the NNLS optimum; a few
 * tens of sweeps reach a microsecond on the lab's systems (unit test).
 *
 * Links that every path crosses together (the same set of paths) cannot
 * be told apart from this view: they form one group, solved as one
 * unknown; each member reports the group's value and the group's size.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ls_tomo.h"

/* A link's path set as one value: a sum of mixed path ids (order-free).
 * Equal sets give equal values; a collision of unequal sets joins two
 * groups (their value is then shared, not wrong). */
static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ x >> 33;
}

/*
 * Why the order and the shrink: from one node the path sets are not
 * independent (our uplink's paths are the union of the leaf-spine links'),
 * so a queue every path sees could be our uplink's alone or split over
 * all the spines. The fit takes the fewest queueing links that explain
 * it: links crossed by more paths are fitted first, and every step gives
 * up SHRINK_NS (an L1 penalty; each estimate is that much low at most),
 * so a share the wider link already explains is not spread again.
 */
#define SHRINK_NS 10.0

static int
wider_first(const void *a, const void *b, void *arg)
{
	const struct ls_tomo_qlink *out = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (out[x].paths != out[y].paths)
		return out[x].paths > out[y].paths ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Each link's path set (sig, paths) and the incidence as path lists per
 * link (CSR: off, ent); -1 when a link id is out of range or ent is full. */
static int
incidence(const struct ls_tomo_qpath *p, uint32_t n_paths, uint32_t n_links,
	  struct ls_tomo_qlink *out, struct ls_tomo_qwork *w)
{
	uint32_t e = 0;

	for (uint32_t l = 0; l < n_links; l++)
		w->sig[l] = 0;
	for (uint32_t i = 0; i < n_paths; i++) {
		if (p[i].w <= 0)
			continue;
		for (uint16_t j = 0; j < p[i].n; j++) {
			uint16_t l = p[i].link[j];

			if (l >= n_links)
				return -1;
			w->sig[l] += mix(i + 1);
			out[l].paths++;
		}
	}
	for (uint32_t l = 0; l < n_links; l++) {
		w->off[l] = e;
		e += out[l].paths;
	}
	if (e > w->cap_entries)
		return -1;
	w->off[n_links] = e;
	for (uint32_t l = 0; l < n_links; l++)
		w->fill[l] = w->off[l];
	for (uint32_t i = 0; i < n_paths; i++) {
		if (p[i].w <= 0)
			continue;
		for (uint16_t j = 0; j < p[i].n; j++)
			w->ent[w->fill[p[i].link[j]]++] = i;
	}
	return 0;
}

/* Groups (the first link of each path set leads it), their leaders in
 * w->fill, those crossed by more paths first; @return how many. */
static uint32_t
groups(uint32_t n_links, struct ls_tomo_qlink *out, struct ls_tomo_qwork *w)
{
	uint32_t ng = 0;

	for (uint32_t l = 0; l < n_links; l++) {
		out[l].group = (uint16_t)l;
		if (out[l].paths == 0)
			continue;
		for (uint32_t k = 0; k < l; k++)
			if (out[k].paths == out[l].paths && w->sig[k] == w->sig[l]) {
				out[l].group = out[k].group;
				break;
			}
	}
	for (uint32_t l = 0; l < n_links; l++)
		if (out[l].paths > 0 && out[l].group == l)
			w->fill[ng++] = l;
	qsort_r(w->fill, ng, sizeof(w->fill[0]), wider_first, out);
	return ng;
}

/* Coordinate descent over the ng group leaders; w->r holds q - A x. */
static void
descend(const struct ls_tomo_qpath *p, uint32_t n_paths, uint32_t ng,
	struct ls_tomo_qlink *out, struct ls_tomo_qwork *w, uint32_t sweeps)
{
	for (uint32_t i = 0; i < n_paths; i++)
		w->r[i] = p[i].q_ns;
	for (uint32_t s = 0; s < sweeps; s++) {
		double moved = 0;

		for (uint32_t g = 0; g < ng; g++) {
			uint32_t l = w->fill[g];
			double num = 0, den = 0, d;

			for (uint32_t k = w->off[l]; k < w->off[l + 1]; k++) {
				num += p[w->ent[k]].w * w->r[w->ent[k]];
				den += p[w->ent[k]].w;
			}
			d = num / den - SHRINK_NS;
			if (out[l].q_ns + d < 0)
				d = -out[l].q_ns;
			if (d == 0)
				continue;
			out[l].q_ns += d;
			for (uint32_t k = w->off[l]; k < w->off[l + 1]; k++)
				w->r[w->ent[k]] -= d;
			moved += fabs(d);
		}
		if (moved < 1.0)   /* under a nanosecond in all: done */
			break;
	}
}

int
ls_tomo_queues(const struct ls_tomo_qpath *p, uint32_t n_paths, uint32_t n_links,
	       struct ls_tomo_qlink *out, struct ls_tomo_qwork *w, uint32_t sweeps)
{
	uint32_t ng;

	if (n_links > w->cap_links || n_paths > w->cap_paths)
		return -1;
	memset(out, 0, sizeof(*out) * n_links);
	if (incidence(p, n_paths, n_links, out, w) < 0)
		return -1;
	ng = groups(n_links, out, w);
	descend(p, n_paths, ng, out, w, sweeps);
	/* members take their group's value; each link its paths' residual */
	for (uint32_t l = 0; l < n_links; l++) {
		double ss = 0, ws = 0;

		if (out[l].group != l)
			out[l].q_ns = out[out[l].group].q_ns;
		for (uint32_t k = w->off[l]; k < w->off[l + 1]; k++) {
			ss += p[w->ent[k]].w * w->r[w->ent[k]] * w->r[w->ent[k]];
			ws += p[w->ent[k]].w;
		}
		out[l].resid_ns = ws > 0 ? sqrt(ss / ws) : 0;
	}
	for (uint32_t l = 0; l < n_links; l++)
		if (out[l].paths > 0)
			out[out[l].group].shared++;
	for (uint32_t l = 0; l < n_links; l++)
		out[l].shared = out[out[l].group].shared;
	return (int)ng;
}
