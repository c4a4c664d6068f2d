/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/sync tests, the network step (ls_sync_net.c): every round each
 * simulated node updates from the others' previous-round announcements,
 * passed through the wire encoding, as lockstepd does. Mesh, sparse graph,
 * ring, bad edges, reference death and re-election, holdover, cut-off.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_sync.h"

/* ---- 5. network effect ------------------------------------------------ */

#define MAXN 8
#define RTE_DIM_T(a) (sizeof(a) / sizeof((a)[0]))

struct net {
	unsigned int n;
	uint32_t id[MAXN];
	struct clk k[MAXN];
	bool link[MAXN][MAXN];     /* exchange announcements */
	bool edge[MAXN][MAXN];     /* i has an edge fit to j */
	double enoise[MAXN][MAXN]; /* error in i's fit of j */
	double esig[MAXN][MAXN];
	double dnoise[MAXN][MAXN]; /* error in i's drift to j */
	double dsig[MAXN][MAXN];   /* the drift sigma it claims (0: 1e-12) */
	bool dead[MAXN];
	struct ls_sync_node_conf conf[MAXN];
	struct ls_sync_state st[MAXN];
	uint8_t wire[MAXN][LS_SYNC_WIRE_LEN];
	bool heard[MAXN][MAXN];
	uint64_t rx[MAXN][MAXN];
	unsigned int nnb[MAXN], nb[MAXN][MAXN]; /* i's neighbour list */
	struct ls_sync_nbr_use use[MAXN][MAXN];
	int used[MAXN];
	bool back;                 /* reflectors hand back their own edge (LS_SYNC_F_EDGE) */
	double bedge[MAXN][MAXN];  /* j's fit of i at j's announcement, for i */
	double bdrift[MAXN][MAXN];
	double T;
};

static void
net_init(struct net *w, unsigned int n, const uint32_t *ids, uint64_t seed)
{
	unsigned int i, j;

	memset(w, 0, sizeof(*w));
	ls_rng_seed(seed);
	w->n = n;
	w->T = 1000 * SEC;
	for (i = 0; i < n; i++) {
		w->id[i] = ids[i];
		w->k[i].c = rng_sym(10 * MS);
		w->k[i].r = rng_sym(100e-6);
		ls_sync_node_conf_default(&w->conf[i]);
		w->conf[i].self_id = ids[i];
		ls_sync_state_init(&w->st[i], ids[i]);
		for (j = 0; j < n; j++) {
			w->enoise[i][j] = rng_sym(2);
			w->esig[i][j] = 5;
		}
	}
}

static void
net_link(struct net *w, unsigned int i, unsigned int j)
{
	w->link[i][j] = w->link[j][i] = true;
	w->edge[i][j] = w->edge[j][i] = true;
}

static void
net_mesh(struct net *w)
{
	for (unsigned int i = 0; i < w->n; i++)
		for (unsigned int j = i + 1; j < w->n; j++)
			net_link(w, i, j);
}

/* One round at true time T + dt: every live node updates from the others'
 * previous announcements, then all announce. */
static void
net_round(struct net *w, double dt)
{
	struct ls_sync_nbr nbrs[MAXN];
	uint64_t now[MAXN];
	unsigned int i, j;

	w->T += dt;
	for (i = 0; i < w->n; i++)
		now[i] = clk_at(&w->k[i], w->T);
	for (i = 0; i < w->n; i++) {
		unsigned int m = 0;

		if (w->dead[i])
			continue;
		for (j = 0; j < w->n; j++) {
			struct ls_sync_nbr *nb = &nbrs[m];

			if (!w->link[i][j])
				continue;
			memset(nb, 0, sizeof(*nb));
			nb->id = w->id[j];
			if (w->heard[i][j]) {
				uint8_t wb[LS_SYNC_WIRE_LEN];

				memcpy(wb, w->wire[j], sizeof(wb));
				if (w->back && w->edge[j][i])
					ls_sync_wire_put_edge(wb, w->bedge[j][i], w->bdrift[j][i],
							      w->esig[j][i]);
				ck_assert_int_eq(ls_sync_wire_decode(wb, &nb->st), 0);
				nb->has_state = true;
				nb->st_rx = w->rx[i][j];
			}
			if (w->edge[i][j]) {
				nb->has_edge = true;
				nb->edge.ok = true;
				nb->edge.t_ref = now[i];
				nb->edge.offset_ns = (double)(int64_t)(now[j] - now[i]) +
						     w->enoise[i][j];
				nb->edge.drift = (w->k[j].r - w->k[i].r) / (1 + w->k[i].r) +
						 w->dnoise[i][j];
				nb->edge.sigma_ns = w->esig[i][j];
				nb->edge.drift_sigma = w->dsig[i][j] > 0 ? w->dsig[i][j] : 1e-12;
				nb->edge.half_gap_ns = 10 * US;
			}
			w->nb[i][m++] = j;
		}
		w->nnb[i] = m;
		w->used[i] = ls_sync_node_update(&w->conf[i], nbrs, m, now[i], &w->st[i],
						 w->use[i]);
		ck_assert_uint_eq(w->st[i].t0, now[i]);
	}
	for (j = 0; j < w->n; j++) {
		if (w->dead[j])
			continue;
		ls_sync_wire_encode(&w->st[j], w->wire[j]);
		for (i = 0; i < w->n; i++) {
			/* j's own fit of i at its announcement (t0 = now[j]) */
			w->bedge[j][i] = (double)(int64_t)(now[i] - now[j]) + w->enoise[j][i];
			w->bdrift[j][i] = (w->k[i].r - w->k[j].r) / (1 + w->k[j].r) +
					  w->dnoise[j][i];
		}
		for (i = 0; i < w->n; i++)
			if (w->link[i][j]) {
				w->heard[i][j] = true;
				w->rx[i][j] = now[i];
			}
	}
}

static unsigned int
net_index(const struct net *w, uint32_t id)
{
	for (unsigned int i = 0; i < w->n; i++)
		if (w->id[i] == id)
			return i;
	ck_abort_msg("no node %u", id);
	return 0;
}

/*
 * Fleet time now as node ref defines it: its clock through its own mapping.
 * That is its raw clock unless it took the role from a dead reference and
 * carries that one's timeline on (theta, phi not 0); a dead node's state is
 * stale, so then its raw clock.
 */
static uint64_t
net_fleet(const struct net *w, unsigned int ref)
{
	const struct ls_sync_state *s = &w->st[ref];
	uint64_t local = clk_at(&w->k[ref], w->T);
	struct ls_sync_reading rd;

	if (w->dead[ref] || !(s->flags & LS_SYNC_F_REF))
		return local;
	ls_sync_fleet_read(s, &w->conf[ref], local, &rd);
	return rd.fleet_ns;
}

/* True theta of node i (local - fleet) now, fleet as node ref defines it. */
static double
net_truth(const struct net *w, unsigned int i, unsigned int ref)
{
	return (double)(int64_t)(clk_at(&w->k[i], w->T) - net_fleet(w, ref));
}

/* Largest |theta - truth| over live nodes; all must be synced to ref_id. */
static double
net_err(const struct net *w, uint32_t ref_id)
{
	unsigned int ref = net_index(w, ref_id), i;
	double worst = 0;
	/* fleet time runs (1 + r_ref)(1 - phi_ref) per true second */
	double ref_phi = w->dead[ref] ? 0 : w->st[ref].phi;
	uint64_t truth_fleet = net_fleet(w, ref);

	for (i = 0; i < w->n; i++) {
		const struct ls_sync_state *s = &w->st[i];
		double tphi = 1 - (1 + w->k[ref].r) * (1 - ref_phi) / (1 + w->k[i].r);
		struct ls_sync_reading rd;

		if (w->dead[i])
			continue;
		ck_assert_msg(s->flags & LS_SYNC_F_SYNCED, "node %u unsynced", w->id[i]);
		ck_assert_msg(s->ref_id == ref_id, "node %u ref %u, not %u", w->id[i], s->ref_id,
			      ref_id);
		ck_assert_msg(fabs(s->phi - tphi) < 1e-12, "node %u phi %.3e truth %.3e",
			      w->id[i], s->phi, tphi);
		worst = fmax(worst, fabs(s->theta_ns - net_truth(w, i, ref)));
		/* The reading: near the truth and bracketing it. */
		ls_sync_fleet_read(s, &w->conf[i], clk_at(&w->k[i], w->T), &rd);
		ck_assert(rd.earliest_ns <= truth_fleet && truth_fleet <= rd.latest_ns);
		worst = fmax(worst, fabs((double)(int64_t)(rd.fleet_ns - truth_fleet)));
	}
	return worst;
}

/* Largest |reading - node tl's raw clock| over live synced nodes: how far
 * fleet time has moved off the timeline tl started. */
static double
net_off_timeline(const struct net *w, unsigned int tl)
{
	uint64_t want = clk_at(&w->k[tl], w->T);
	double worst = 0;

	for (unsigned int i = 0; i < w->n; i++) {
		struct ls_sync_reading rd;

		if (w->dead[i] || !(w->st[i].flags & LS_SYNC_F_SYNCED))
			continue;
		ls_sync_fleet_read(&w->st[i], &w->conf[i], clk_at(&w->k[i], w->T), &rd);
		worst = fmax(worst, fabs((double)(int64_t)(rd.fleet_ns - want)));
	}
	return worst;
}

/* Watches fleet time against node tl's raw clock round by round: the
 * largest distance from it, and the largest change between rounds (a step). */
struct timeline_watch {
	double off, step, prev;
};

static void
timeline_watch(struct timeline_watch *tw, const struct net *w, unsigned int tl)
{
	double now = net_off_timeline(w, tl);

	tw->step = fmax(tw->step, fabs(now - tw->prev));
	tw->prev = now;
	tw->off = fmax(tw->off, now);
}

static void
net_run(struct net *w, unsigned int rounds)
{
	while (rounds-- > 0)
		net_round(w, 100 * MS);
}

static const uint32_t ids6[] = {7, 3, 12, 5, 9, 4};

/* The six-node mesh, run until every node is on id 3's timeline: the start
 * of the tests that then take one node's edges away. */
static void
net_mesh6_synced(struct net *w, uint64_t seed)
{
	net_init(w, 6, ids6, seed);
	net_mesh(w);
	net_run(w, 50);
	ck_assert(net_err(w, 3) < 10);
}

START_TEST(test_net_mesh)
{
	struct net w;
	unsigned int i;
	double e;

	net_init(&w, 6, ids6, 101);
	net_mesh(&w);
	net_run(&w, 60);
	e = net_err(&w, 3);
	printf("mesh of 6: worst error %.3f ns\n", e);
	ck_assert_msg(e < 10, "worst error %.3f", e);
	for (i = 0; i < w.n; i++) {
		const struct ls_sync_state *s = &w.st[i];

		if (w.id[i] == 3) {
			ck_assert_uint_eq(s->flags, LS_SYNC_F_SYNCED | LS_SYNC_F_REF);
			ck_assert_uint_eq(s->hops, 0);
			ck_assert(s->theta_ns == 0 && s->phi == 0 && s->sigma_ns == 0);
			ck_assert_int_eq(w.used[i], 0);
		} else {
			ck_assert_uint_eq(s->flags, LS_SYNC_F_SYNCED);
			ck_assert_uint_eq(s->hops, 1);
			ck_assert_int_eq(w.used[i], 5);
			/* never below the direct edge's own 5 ns: the other
			 * candidates come through neighbours that derive from the
			 * same reference, and may not vouch for each other */
			ck_assert_msg(s->sigma_ns >= 5 && s->sigma_ns < 8, "sigma %.3f", s->sigma_ns);
			ck_assert_msg(s->bound_sigma_ns >= s->sigma_ns && s->bound_sigma_ns < 8,
				      "bound sigma %.3f", s->bound_sigma_ns);
			ck_assert_uint_eq(s->t_good, s->t0);
		}
		/* everyone has the reference's sequence, at most a round old */
		ck_assert_uint_le(w.st[net_index(&w, 3)].ref_seq - s->ref_seq, 1);
	}
}
END_TEST

/*
 * Every node sees its peers 200 ns ahead (an early transmit stamp biases all
 * of a node's edges one way). One-sided edges add the bias up around the
 * mesh; with the reflector's own estimate handed back, the two directions
 * cancel it.
 */
START_TEST(test_net_directional_bias)
{
	struct net w;
	double e_one, e_two;
	unsigned int i, j;

	net_init(&w, 6, ids6, 202);
	net_mesh(&w);
	for (i = 0; i < w.n; i++)
		for (j = 0; j < w.n; j++)
			w.enoise[i][j] = 200;
	net_run(&w, 60);
	e_one = 0;
	for (i = 0; i < w.n; i++)
		e_one = fmax(e_one, fabs(w.st[i].theta_ns - net_truth(&w, i, net_index(&w, 3))));

	net_init(&w, 6, ids6, 202);
	net_mesh(&w);
	w.back = true;
	for (i = 0; i < w.n; i++)
		for (j = 0; j < w.n; j++)
			w.enoise[i][j] = 200;
	net_run(&w, 60);
	e_two = net_err(&w, 3);
	printf("directional bias 200 ns: one-sided edges %.1f ns, two-sided %.3f ns\n",
	       e_one, e_two);
	ck_assert_msg(e_one > 150, "one-sided %.1f", e_one);
	ck_assert_msg(e_two < 5, "two-sided %.3f", e_two);
}
END_TEST

/*
 * One side of an edge is bad and knows it (a node whose probes to the
 * reference have not met an empty queue for a while: 40 us off, sigma
 * 4 us), the other side is clean. An even two-sided average would keep
 * half the error; the clean side must win.
 */
START_TEST(test_net_uneven_sides)
{
	struct net w;
	unsigned int a, r;
	double e;

	net_init(&w, 6, ids6, 303);
	net_mesh(&w);
	w.back = true;
	a = net_index(&w, 12);
	r = net_index(&w, 3);
	w.enoise[a][r] = -40000;
	w.esig[a][r] = 4000;
	net_run(&w, 60);
	e = net_err(&w, 3);
	printf("one bad side (40 us, sigma 4 us) of a two-sided edge: worst error %.1f ns\n", e);
	ck_assert_msg(e < 200, "worst error %.1f", e);
}
END_TEST

/*
 * Two nodes joined to each other by a clean edge (5 ns) and to the
 * reference only by edges 2.5 us off that say sigma 1 us (honest: within
 * 3 sigma). They must not vouch for each other: each one's sigma stays
 * that of its edges to the reference, so the readings still bracket the
 * truth (net_err checks every reading).
 */
START_TEST(test_net_no_vouching)
{
	static const uint32_t ids[] = {1, 2, 3};
	struct net w;
	double e;

	net_init(&w, 3, ids, 505);
	net_mesh(&w);
	for (unsigned int i = 1; i < 3; i++) {
		w.enoise[i][0] = 2500;
		w.esig[i][0] = 1000;
	}
	net_run(&w, 60);
	e = net_err(&w, 1);
	printf("no vouching: error %.0f ns, sigmas %.0f and %.0f ns\n", e, w.st[1].sigma_ns,
	       w.st[2].sigma_ns);
	ck_assert_msg(e > 2000, "the edges' error must show: %.0f", e);
	for (unsigned int i = 1; i < 3; i++)
		ck_assert_msg(w.st[i].sigma_ns >= 1000, "node %u sigma %.1f", w.id[i],
			      w.st[i].sigma_ns);
}
END_TEST

/*
 * A node whose edge to the reference is 120 us off and says so (sigma
 * 250 us: a path under heavy load that has not pinned its floors yet),
 * while its edges to two neighbours that hear the reference cleanly are
 * clean. The unsure edge must not be where the robust average starts: from
 * there the clean candidates lie thousands of their own sigmas off and
 * were cut, leaving the node 120 us off.
 */
START_TEST(test_net_unsure_reference_edge)
{
	static const uint32_t ids[] = {1, 2, 3, 4};
	struct net w;
	unsigned int a;
	double e;

	net_init(&w, 4, ids, 808);
	net_mesh(&w);
	a = net_index(&w, 4);
	w.enoise[a][0] = 120000;
	w.esig[a][0] = 250000;
	net_run(&w, 20);
	e = fabs(w.st[a].theta_ns - net_truth(&w, a, 0));
	printf("unsure edge to the reference (120 us off, sigma 250 us): error %.1f ns, "
	       "sigma %.1f ns\n", e, w.st[a].sigma_ns);
	ck_assert_msg(e < 50, "error %.1f", e);
	ck_assert_msg(net_err(&w, 1) < 50, "worst error %.1f", net_err(&w, 1));
}
END_TEST

/*
 * After a restart: the reference's own fit of node 4 (handed back, two-
 * sided) is unsure in offset (5 us against 1 us) and 40 ppm off in drift,
 * which the wire carries no sigma for. Mixed in at the offsets' weight,
 * it moved node 4's drift candidate from the reference 3 ppm while that
 * claimed 0.2 ppm, and the robust average then cut the right ones. The
 * two sides' disagreement must widen the candidate's drift sigma.
 */
START_TEST(test_net_back_drift_disagrees)
{
	static const uint32_t ids[] = {1, 2, 3, 4};
	struct net w;
	unsigned int a, i, j;
	double tphi;

	net_init(&w, 4, ids, 1010);
	net_mesh(&w);
	w.back = true;
	a = net_index(&w, 4);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++) {
			w.esig[i][j] = 1000;
			w.dsig[i][j] = 2e-7;
		}
	w.esig[0][a] = 5000;
	w.dnoise[0][a] = 40e-6;
	net_run(&w, 30);
	tphi = 1 - (1 + w.k[0].r) / (1 + w.k[a].r);
	printf("back drift 40 ppm off: node 4 phi error %+.4f ppm, sigma %.4f ppm\n",
	       (w.st[a].phi - tphi) * 1e6, w.st[a].phi_sigma * 1e6);
	ck_assert_msg(fabs(w.st[a].phi - tphi) < 0.5e-6, "phi off %.3f ppm",
		      (w.st[a].phi - tphi) * 1e6);
}
END_TEST

/*
 * Two leaves of three: the reference's (ids 1, 2, 3) and a far one (4, 5,
 * 6). Every edge across is loaded: offset sigma 300 ns, drift sigma
 * 0.1 ppm, and the far leaf's fits of it are 1.5 ppm off (the first
 * seconds at 90% load in the lab, when the leaves' only links are busy);
 * within a leaf, 50 ns and 0.05 ppm, both honest. The reference's leaf must keep the
 * drift its clean edges give, not follow the far leaf's agreement; and the
 * far leaf, whose candidates all share that error, must not claim its
 * drift better than the edges it came through (no vouching).
 */
START_TEST(test_net_drift_group)
{
	static const uint32_t ids[] = {1, 2, 3, 4, 5, 6};
	struct net w;
	unsigned int i, j;

	net_init(&w, 6, ids, 909);
	net_mesh(&w);
	for (i = 0; i < 6; i++)
		for (j = 0; j < 6; j++) {
			w.esig[i][j] = 50;
			w.dsig[i][j] = 5e-8;
			if ((i < 3) != (j < 3)) {
				w.dnoise[i][j] = i < 3 ? 0 : 1.5e-6;
				w.esig[i][j] = 300;
				w.dsig[i][j] = 1e-7;
			}
		}
	net_run(&w, 60);
	for (i = 1; i < 6; i++) {
		const struct ls_sync_state *s = &w.st[i];
		double tphi = 1 - (1 + w.k[0].r) / (1 + w.k[i].r);

		printf("drift group: node %u phi error %+.4f ppm, sigma %.4f ppm\n", w.id[i],
		       (s->phi - tphi) * 1e6, s->phi_sigma * 1e6);
		ck_assert_msg(s->flags & LS_SYNC_F_SYNCED, "node %u unsynced", w.id[i]);
		if (i < 3)
			ck_assert_msg(fabs(s->phi - tphi) < 0.05e-6, "node %u phi off %.4f ppm",
				      w.id[i], (s->phi - tphi) * 1e6);
		else
			ck_assert_msg(s->phi_sigma >= 0.9e-7, "node %u phi sigma %.4f ppm",
				      w.id[i], s->phi_sigma * 1e6);
	}
}
END_TEST

/*
 * A two-sided edge whose sides disagree: ours says sigma 100 ns but is
 * 3 us off, the reference's side is right but says sigma 5 us. Ours
 * dominates the mix, and nothing says which side is wrong; the edge's
 * sigma must grow to cover the disagreement so the reading brackets the
 * truth (net_err).
 */
START_TEST(test_net_sides_disagree)
{
	static const uint32_t ids[] = {1, 2};
	struct net w;
	double e;

	net_init(&w, 2, ids, 606);
	net_mesh(&w);
	w.back = true;
	w.enoise[1][0] = 3000;
	w.esig[1][0] = 100;
	w.esig[0][1] = 5000;
	net_run(&w, 30);
	e = net_err(&w, 1);
	printf("sides disagree by 3 us: error %.0f ns, sigma %.0f ns\n", e, w.st[1].sigma_ns);
	ck_assert_msg(e > 2500, "our side must dominate: %.0f", e);
	ck_assert_msg(w.st[1].sigma_ns >= 1000, "sigma %.1f", w.st[1].sigma_ns);
}
END_TEST

START_TEST(test_net_sparse)
{
	static const uint32_t ids[] = {21, 14, 30, 8, 11, 25, 17, 40};
	struct net w;
	unsigned int i;
	double e;

	/* Wagner graph: a ring of 8 plus the four long diagonals, 3 each. */
	net_init(&w, 8, ids, 202);
	for (i = 0; i < 8; i++) {
		net_link(&w, i, (i + 1) % 8);
		if (i < 4)
			net_link(&w, i, i + 4);
	}
	net_run(&w, 200);
	e = net_err(&w, 8);
	printf("sparse 8: worst error %.3f ns\n", e);
	ck_assert_msg(e < 10, "worst error %.3f", e);
	for (i = 0; i < w.n; i++)
		ck_assert_uint_le(w.st[i].hops, 2);
}
END_TEST

START_TEST(test_net_ring)
{
	static const uint32_t ids[] = {5, 2, 9, 1, 6};
	struct net w;
	double e;

	net_init(&w, 5, ids, 303);
	for (unsigned int i = 0; i < 5; i++)
		net_link(&w, i, (i + 1) % 5);
	net_run(&w, 300);
	e = net_err(&w, 1);
	printf("ring of 5: worst error %.3f ns\n", e);
	ck_assert_msg(e < 10, "worst error %.3f", e);
	ck_assert_uint_eq(w.st[net_index(&w, 5)].hops, 2);
	ck_assert_uint_eq(w.st[net_index(&w, 6)].hops, 1);
}
END_TEST

START_TEST(test_net_inconsistent_edge)
{
	struct net w;
	unsigned int i, m, a = 2, b = 4; /* ids 12 and 9, neither the reference */
	double e;

	net_init(&w, 6, ids6, 404);
	net_mesh(&w);
	for (i = 0; i < w.n; i++)
		for (m = 0; m < w.n; m++) {
			w.esig[i][m] = 10;
			w.enoise[i][m] = rng_sym(1);
		}
	w.enoise[a][b] += 1000;
	w.enoise[b][a] += 1000;
	net_run(&w, 80);
	e = net_err(&w, 3);
	printf("mesh with a bad edge: worst error %.3f ns\n", e);
	ck_assert_msg(e < 20, "worst error %.3f", e);
	for (i = 0; i < w.n; i++)
		for (m = 0; m < w.nnb[i]; m++) {
			unsigned int j = w.nb[i][m];
			const struct ls_sync_nbr_use *u = &w.use[i][m];
			bool bad = (i == a && j == b) || (i == b && j == a);

			if (w.id[i] == 3)
				continue; /* the reference uses nobody */
			ck_assert_msg(u->rejected == bad, "node %u nbr %u rejected %d", w.id[i],
				      w.id[j], u->rejected);
			ck_assert(u->used == !bad);
			if (bad) {
				ck_assert(u->weight == 0);
				ck_assert(fabs(fabs(u->residual_ns) - 1000) < 30);
			} else {
				ck_assert(u->weight > 0);
				ck_assert(fabs(u->residual_ns) < 30);
			}
		}
}
END_TEST

/*
 * A group of the reference's descendants that is wrong together must come
 * back to the reference. Every non-reference node's theta is moved at once
 * by 6 to 20 edge sigmas: each then sees the reference's candidate that far
 * away and four neighbours agreeing with each other. A robust average
 * started from their median would cut the reference and keep the group
 * where it is; the step starts from the reference's candidate instead
 * (docs/sync.md), and this guards that.
 */
START_TEST(test_net_wrong_group)
{
	static const double shift[] = {900, 1100, 1350, 1600, 2000, 3000};
	double worst = 0;

	for (unsigned int k = 0; k < RTE_DIM_T(shift); k++) {
		struct net w;
		unsigned int i, j;
		double e;

		net_init(&w, 6, ids6, 505 + k);
		net_mesh(&w);
		for (i = 0; i < w.n; i++)
			for (j = 0; j < w.n; j++) {
				w.esig[i][j] = 150;
				w.enoise[i][j] = rng_sym(20);
			}
		net_run(&w, 40);
		ck_assert_msg(net_err(&w, 3) < 50, "converged first: %.1f", net_err(&w, 3));
		for (i = 0; i < w.n; i++)
			if (w.id[i] != 3) {
				w.st[i].theta_ns += shift[k] * (1 + 0.1 * rng_sym(1));
				ls_sync_wire_encode(&w.st[i], w.wire[i]);
			}
		net_run(&w, 40);
		e = net_err(&w, 3);
		printf("wrong group moved by %.0f ns: worst error after 40 rounds %.1f ns\n",
		       shift[k], e);
		worst = fmax(worst, e);
	}
	ck_assert_msg(worst < 50, "worst error %.1f", worst);
}
END_TEST

/*
 * The reference dies: the others hold together for ref_timeout, then the
 * next lowest id takes over and carries fleet time on along the dead one's
 * timeline: no step, the readings leave it only by what the drift
 * estimates' error adds up to. It comes back and the lowest id wins again
 * with its own clock, which the timeline still is to within that error.
 */
START_TEST(test_net_reference_dies)
{
	struct net w;
	unsigned int r, i, dead = 1; /* ids6[1] == 3 */
	struct timeline_watch tw = {0};
	double e;

	net_init(&w, 6, ids6, 505);
	net_mesh(&w);
	/* long enough for its ref_seq to pass LS_SYNC_SEQ_RESTART (see below) */
	net_run(&w, 200);
	ck_assert(net_err(&w, 3) < 10);
	w.dead[dead] = true;
	/* Nodes hold together for ref_timeout (5 s) without re-electing. */
	for (r = 0; r < 45; r++) {
		net_round(&w, 100 * MS);
		for (i = 0; i < w.n; i++)
			if (!w.dead[i]) {
				ck_assert_uint_eq(w.st[i].ref_id, 3);
				ck_assert(!(w.st[i].flags & LS_SYNC_F_REF));
			}
		timeline_watch(&tw, &w, dead);
	}
	/* Then the next lowest (4) takes over; nobody else ever claims it. */
	for (r = 0; r < 60; r++) {
		net_round(&w, 100 * MS);
		for (i = 0; i < w.n; i++)
			if (!w.dead[i] && (w.st[i].flags & LS_SYNC_F_REF))
				ck_assert_msg(w.id[i] == 4, "node %u claims the reference",
					      w.id[i]);
		timeline_watch(&tw, &w, dead);
	}
	e = net_err(&w, 4);
	printf("after the reference died: worst error %.3f ns; fleet time within %.0f ns of "
	       "the dead reference's timeline (4's clock is %.0f ns off it), largest "
	       "change in a round %.0f ns\n",
	       e, tw.off, net_truth(&w, net_index(&w, 4), dead), tw.step);
	ck_assert(e < 10);
	ck_assert(w.st[net_index(&w, 4)].flags & LS_SYNC_F_REF);
	/* 10 s without the reference: only its drift estimate's error adds up */
	ck_assert_msg(tw.off < 50, "fleet time %.1f ns off the old timeline", tw.off);
	ck_assert_msg(tw.step < 5, "fleet time stepped %.1f ns in a round", tw.step);

	/* It comes back, counting ref_seq from 1 again: the mesh takes that for
	 * a restart (not a dead reference's stale value) and the lowest id wins
	 * again. */
	ls_sync_state_init(&w.st[dead], 3);
	w.dead[dead] = false;
	for (r = 0; r < 30; r++) {
		net_round(&w, 100 * MS);
		timeline_watch(&tw, &w, dead);
	}
	e = net_err(&w, 3);
	ck_assert(e < 10);
	ck_assert_msg(tw.off < 50, "fleet time %.1f ns off the old timeline", tw.off);
	ck_assert_msg(tw.step < 50, "fleet time stepped %.1f ns when 3 came back", tw.step);
}
END_TEST

/*
 * A far leaf: three nodes joined to each other by tight edges (5 ns) and
 * to the reference's leaf only by loose ones (2 us), each node's loose
 * edges off by its own amount (+1.5, -0.6, -0.9 us: each node alone is
 * that far off). Pooled as a cluster, every far node reads the mean of the
 * three, and they agree to within their edges. Without clusters
 * (cluster_ratio 0) each node reads its own theta, which settles halfway
 * between what its own edges say and the mean: 1.2 us apart.
 */
static void
cluster_run(double ratio, double *spread, double *worst)
{
	static const unsigned int near[] = {1, 3, 5}, far[] = {0, 2, 4};
	static const double bias[] = {1500, -600, -900};
	unsigned int a, b, i, ref;
	double lo = INFINITY, hi = -INFINITY;
	struct net w;

	net_init(&w, 6, ids6, 909); /* the reference is id 3, index 1 */
	net_mesh(&w);
	ref = net_index(&w, 3);
	for (i = 0; i < w.n; i++)
		w.conf[i].cluster_ratio = ratio;
	for (a = 0; a < 3; a++)
		for (b = 0; b < 3; b++) {
			unsigned int n = near[a], f = far[b];

			w.esig[f][n] = w.esig[n][f] = 2000;
			/* f's fit of n is off by -bias: f's candidate is off by +bias */
			w.enoise[f][n] = -bias[b];
			w.enoise[n][f] = rng_sym(500);
		}
	net_run(&w, 60);
	*worst = 0;
	for (b = 0; b < 3; b++) {
		unsigned int f = far[b];
		struct ls_sync_reading rd;
		uint64_t truth = clk_at(&w.k[ref], w.T);
		double e;

		ls_sync_fleet_read(&w.st[f], &w.conf[f], clk_at(&w.k[f], w.T), &rd);
		ck_assert(rd.earliest_ns <= truth && truth <= rd.latest_ns);
		e = (double)(int64_t)(rd.fleet_ns - truth);
		lo = fmin(lo, e);
		hi = fmax(hi, e);
		*worst = fmax(*worst, fabs(e));
		ck_assert_uint_eq(w.st[f].cluster_n, ratio > 0 ? 2 : 0);
	}
	*spread = hi - lo;
}

START_TEST(test_net_cluster)
{
	double spread, worst;

	cluster_run(0, &spread, &worst);
	printf("far leaf without clusters: readings %.0f ns apart, worst %.0f ns\n", spread,
	       worst);
	ck_assert(spread > 500);
	cluster_run(2, &spread, &worst);
	printf("far leaf pooled as a cluster: readings %.1f ns apart, worst %.1f ns\n", spread,
	       worst);
	ck_assert_msg(spread < 20, "%.1f", spread);
	ck_assert_msg(worst < 100, "%.1f", worst);
}
END_TEST

START_TEST(test_net_configured_reference)
{
	struct net w;
	unsigned int i;

	net_init(&w, 6, ids6, 606);
	net_mesh(&w);
	for (i = 0; i < w.n; i++)
		w.conf[i].reference_id = 9;
	net_run(&w, 50);
	ck_assert(net_err(&w, 9) < 10);
	ck_assert(w.st[net_index(&w, 9)].flags & LS_SYNC_F_REF);
	ck_assert(!(w.st[net_index(&w, 3)].flags & LS_SYNC_F_REF));
}
END_TEST

/*
 * A node cut off from every neighbour (no announcements, no edges) for
 * longer than ref_timeout holds over on its reference's timeline: it must
 * not elect itself, which would make fleet time its own clock (a jump of
 * its whole offset, under a narrow bound). Back in touch, it syncs again.
 */
START_TEST(test_net_cut_off)
{
	struct net w;
	unsigned int x = 0, j, r; /* id 7 */
	uint32_t ref;
	double e;

	net_mesh6_synced(&w, 808);
	ref = w.st[x].ref_id;
	ck_assert_uint_eq(ref, 3);
	for (j = 0; j < w.n; j++)
		w.link[x][j] = w.link[j][x] = w.edge[x][j] = w.edge[j][x] = false;
	/* 8 s: past state_timeout (3 s) and ref_timeout (5 s) */
	for (r = 0; r < 80; r++) {
		net_round(&w, 100 * MS);
		ck_assert_uint_eq(w.st[x].flags, LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER);
		ck_assert_uint_eq(w.st[x].ref_id, ref);
	}
	e = fabs(w.st[x].theta_ns - net_truth(&w, x, net_index(&w, 3)));
	ck_assert_msg(e < 10, "cut-off holdover error %.3f ns after 8 s", e);
	for (j = 1; j < w.n; j++)
		ck_assert_uint_eq(w.st[j].flags & LS_SYNC_F_HOLDOVER, 0);
	for (j = 0; j < w.n; j++)
		w.link[x][j] = w.link[j][x] = w.edge[x][j] = w.edge[j][x] = j != x;
	net_run(&w, 5);
	ck_assert_uint_eq(w.st[x].flags, LS_SYNC_F_SYNCED);
	ck_assert(net_err(&w, 3) < 10);
}
END_TEST

START_TEST(test_net_holdover)
{
	struct net w;
	struct ls_sync_state before;
	struct ls_sync_reading r1, r2, r3;
	unsigned int x = 0, j, r; /* id 7 */
	uint64_t tg;
	double e;

	net_mesh6_synced(&w, 707);
	for (j = 0; j < w.n; j++)
		w.edge[x][j] = w.edge[j][x] = false;
	before = w.st[x];
	for (r = 0; r < 30; r++) {
		net_round(&w, 100 * MS);
		ck_assert_uint_eq(w.st[x].flags, LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER);
		ck_assert_int_eq(w.used[x], 0);
	}
	/* theta moved along phi, t_good stayed; still right (phi is). */
	ck_assert(w.st[x].phi == before.phi);
	ck_assert(fabs(w.st[x].theta_ns - (before.theta_ns +
					   before.phi * (double)(int64_t)(w.st[x].t0 - before.t0))) <
		  1e-3);
	ck_assert_uint_eq(w.st[x].t_good, before.t_good);
	e = fabs(w.st[x].theta_ns - net_truth(&w, x, net_index(&w, 3)));
	ck_assert_msg(e < 10, "holdover error %.3f", e);
	/* The others are fine without x. */
	for (j = 1; j < w.n; j++)
		ck_assert_uint_eq(w.st[j].flags & LS_SYNC_F_HOLDOVER, 0);
	/* The reading's half-width grows linearly with time since t_good. */
	tg = w.st[x].t_good;
	ls_sync_fleet_read(&w.st[x], &w.conf[x], tg + 1000000000ULL, &r1);
	ls_sync_fleet_read(&w.st[x], &w.conf[x], tg + 2000000000ULL, &r2);
	ls_sync_fleet_read(&w.st[x], &w.conf[x], tg + 3000000000ULL, &r3);
	ck_assert(r2.half_ns - r1.half_ns >= 1000); /* holdover_ppm 1: 1 us per s */
	ck_assert(fabs((r3.half_ns - r2.half_ns) - (r2.half_ns - r1.half_ns)) < 1e-6);
	ck_assert_uint_eq(r1.flags, LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER);
	/* Edges back: synced again, holdover cleared. */
	for (j = 0; j < w.n; j++)
		w.edge[x][j] = w.edge[j][x] = true;
	net_run(&w, 3);
	ck_assert_uint_eq(w.st[x].flags, LS_SYNC_F_SYNCED);
	ck_assert(net_err(&w, 3) < 10);

	/* A node that never synced does not pretend to hold over. */
	{
		struct ls_sync_state s;
		struct ls_sync_node_conf c;

		ls_sync_node_conf_default(&c);
		c.self_id = 50;
		c.reference_id = 3;
		ls_sync_state_init(&s, 50);
		ck_assert_int_eq(ls_sync_node_update(&c, NULL, 0, BASE, &s, NULL), 0);
		ck_assert_uint_eq(s.flags, 0);
	}
}
END_TEST

void
sync_net_tests(TCase *tc)
{
	tcase_add_test(tc, test_net_mesh);
	tcase_add_test(tc, test_net_directional_bias);
	tcase_add_test(tc, test_net_uneven_sides);
	tcase_add_test(tc, test_net_no_vouching);
	tcase_add_test(tc, test_net_sides_disagree);
	tcase_add_test(tc, test_net_drift_group);
	tcase_add_test(tc, test_net_unsure_reference_edge);
	tcase_add_test(tc, test_net_back_drift_disagrees);
	tcase_add_test(tc, test_net_sparse);
	tcase_add_test(tc, test_net_ring);
	tcase_add_test(tc, test_net_inconsistent_edge);
	tcase_add_test(tc, test_net_wrong_group);
	tcase_add_test(tc, test_net_reference_dies);
	tcase_add_test(tc, test_net_configured_reference);
	tcase_add_test(tc, test_net_holdover);
	tcase_add_test(tc, test_net_cut_off);
	tcase_add_test(tc, test_net_cluster);
}
