/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock sync's JSON: fits and states (for sync.c's "sync" report too), a
 * peer's paths (peer reports) and a path's estimator ("sync.points"), from
 * sync_priv.h's structures. Apart from sync.c, so that it stays under the
 * size rules and the steps (sync.c) and the commands (sync_cmd.c) each
 * depend on this file rather than on each other.
 */
#include <math.h>
#include <stdint.h>

#include <jansson.h>

#include <rte_seqlock.h>

#include "lockstepd.h"
#include "sync_priv.h"

static const char *
status_name(uint8_t flags)
{
	if (flags & LS_SYNC_F_REF)
		return "reference";
	if (flags & LS_SYNC_F_HOLDOVER)
		return "holdover";
	if (flags & LS_SYNC_F_SYNCED)
		return "synced";
	return "unsynced";
}

json_t *
lsd_sync_fit_json(const struct ls_sync_fit *f)
{
	if (!f->ok)
		return json_null();
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i}",
			 "t_ref_ns", (json_int_t)f->t_ref,
			 "offset_ns", f->offset_ns, "drift_ppm", f->drift * 1e6,
			 "sigma_ns", f->sigma_ns, "drift_sigma_ppm", f->drift_sigma * 1e6,
			 "half_gap_ns", f->half_gap_ns,
			 "n_fwd", (int)f->n_fwd, "n_rev", (int)f->n_rev,
			 "outliers", (int)f->n_outliers);
}

json_t *
lsd_sync_state_json(const struct ls_sync_state *s, uint64_t now, bool self)
{
	json_t *o = json_pack("{s:i, s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f}",
			      "node_id", (int)s->node_id, "status", status_name(s->flags),
			      "ref_id", (int)s->ref_id, "ref_seq", (int)s->ref_seq,
			      "hops", (int)s->hops, "theta_ns", s->theta_ns,
			      "phi_ppm", s->phi * 1e6, "sigma_ns", s->sigma_ns,
			      "phi_sigma_ppm", s->phi_sigma * 1e6,
			      "age_ms", s->t_good && now > s->t_good ?
					(double)(now - s->t_good) / 1e6 : -1.0);

	/* our own state only: a neighbour's comes off the wire without it */
	if (self) {
		json_object_set_new(o, "bound_sigma_ns", json_real(s->bound_sigma_ns));
		json_object_set_new(o, "wander_obs_ns", isfinite(s->wander_obs_ns) ?
				    json_real(s->wander_obs_ns) : json_null());
		json_object_set_new(o, "lag_ms", json_real(s->lag_ns / 1e6));
		json_object_set_new(o, "cluster_ns", json_real(s->cluster_ns));
		json_object_set_new(o, "cluster_n", json_integer(s->cluster_n));
	}
	return o;
}

/*
 * One path's estimator as it stands: every stored probe (oldest first, four
 * stamps in their own clocks and the pair's purity mask, 0 for second
 * members and single probes), the drift its last window was fitted at and
 * both of its fits. What an operator (or a diagnosis against the lab's
 * ground truth) needs to see why a path's offset is what it is.
 */
json_t *
lsd_sync_points_json(const struct lsd_peer *peer, uint16_t k)
{
	const struct lsd_peer_sync *ps = peer->sync;
	const struct sync_path *sp;
	const struct ls_sync_est *e;
	json_t *pts;

	if (ps == NULL || k >= ps->n_paths)
		return NULL;
	sp = &ps->path[k];
	e = &sp->est;
	pts = json_array();
	for (uint32_t i = 0; i < e->n; i++) {
		uint32_t j = (e->head - e->n + i) & (e->cap - 1);
		const struct ls_sync_probe *p = &e->ring[j];

		json_array_append_new(pts, json_pack("[I, I, I, I, i]", (json_int_t)p->t1,
			(json_int_t)p->t2, (json_int_t)p->t3, (json_int_t)p->t4, (int)e->pure[j]));
	}
	/* jansson takes no NaN: a window fitted free has no fixed drift */
	return json_pack("{s:i, s:I, s:o, s:o, s:o, s:o}", "path", (int)k,
			 "window_ns", (json_int_t)e->conf.window_ns,
			 "fixed_drift_ppm", isfinite(e->conf.fixed_drift) ?
				json_real(e->conf.fixed_drift * 1e6) : json_null(),
			 "fit", lsd_sync_fit_json(&sp->fit), "window", lsd_sync_fit_json(&sp->win),
			 "probes", pts);
}

json_t *
lsd_sync_peer_json(const struct lsd_peer *peer)
{
	const struct lsd_peer_sync *ps = peer->sync;
	struct lsd_peer_owd w;
	json_t *paths;
	uint32_t sn;

	if (ps == NULL)
		return json_null();
	do {
		sn = rte_seqlock_read_begin(&peer->owd.lock);
		w = peer->owd;
	} while (rte_seqlock_read_retry(&peer->owd.lock, sn));
	paths = json_array();
	for (uint16_t k = 0; k < ps->n_paths; k++) {
		const struct ls_sync_est *e = &ps->path[k].est;

		json_array_append_new(paths, json_pack("{s:o, s:o, s:I, s:I, s:I, s:I}",
			"fit", lsd_sync_fit_json(&ps->path[k].fit),
			"window", lsd_sync_fit_json(&ps->path[k].win),
			"fwd_kept", (json_int_t)e->fwd_kept, "fwd_rejected", (json_int_t)e->fwd_rejected,
			"rev_kept", (json_int_t)e->rev_kept, "rev_rejected", (json_int_t)e->rev_rejected));
	}
	return json_pack("{s:i, s:b, s:f, s:f, s:I, s:I, s:o}", "node_id", (int)ps->node_id,
			 "owd_synced", w.valid, "peer_offset_ns", w.off_ns,
			 "peer_drift_ppm", w.drift * 1e6, "resets", (json_int_t)ps->resets,
			 "reacquired", (json_int_t)ps->reacquired, "paths", paths);
}
