/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock sync's per-peer state in lockstepd, shared by sync.c (which fills
 * it, on the control thread) and sync_json.c (which reports it).
 */
#ifndef LSD_SYNC_PRIV_H
#define LSD_SYNC_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ls_sync.h"

/* One path's estimator, its pair in waiting, its fits and its track. */
struct sync_path {
	struct ls_sync_est est;
	bool have_a;                /* first member of a pair waiting for the second */
	uint32_t a_pair;
	struct ls_sync_probe a;
	struct ls_sync_fit fit;     /* last estimate: from the track */
	struct ls_sync_fit win;     /* last window's own fit */
	struct ls_sync_track track; /* recent window fits (lib/sync) */
	double carry, carry_sigma;  /* the drift the track was carried at (NaN: none yet) */
};

/* One peer's clock sync (struct lsd_peer's sync), its paths after it. */
struct lsd_peer_sync {
	uint32_t node_id;           /* the peer's node id, from its sync TLV (0 unknown) */
	bool has_state;
	struct ls_sync_state st;    /* its latest announcement */
	uint64_t st_rx;             /* our local time it arrived */
	struct ls_sync_fit edge;    /* this peer's paths combined */
	uint64_t resets;            /* estimators reset after a clock step */
	bool reacquire;             /* reset since the last step: acquire it again */
	uint64_t reacquired;        /* ... asked of its lcore and done */
	uint32_t step_run;          /* probes in a row that did not fit the edge */
	uint64_t edge_since;        /* local ns the edge became ok (0: it is not) */
	uint64_t window_ns;         /* its paths' window (ls_sync_est_window_for) */
	uint16_t n_paths;
	struct sync_path path[];
};

/** A fit as the sync commands report it (null when not ok). */
json_t *lsd_sync_fit_json(const struct ls_sync_fit *f);

/** A node's state as the sync commands report it; self: ours (its private
 * fields too), else a neighbour's as it came off the wire. */
json_t *lsd_sync_state_json(const struct ls_sync_state *s, uint64_t now, bool self);

#endif /* LSD_SYNC_PRIV_H */
