/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The clock-sync commands, "sync" and "sync.points": sync.c builds the
 * JSON, this room checks the arguments and finds the peer.
 */
#include <jansson.h>

#include "lockstepd.h"
#include "ls_ctl.h"

static void
cmd_sync(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	uint64_t tsc = 0;

	if (lsd_clock_arg_tsc(req, args, &tsc) < 0)
		return;
	ls_ctl_reply_ok(req, lsd_sync_json(tsc));
}

static void
cmd_sync_points(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *name;
	uint64_t k = 0;
	json_t *o;
	int idx;

	if (ls_ctl_arg_uint(req, args, "path", 0, LS_MAX_PATHS - 1, &k) < 0)
		return;
	idx = lsd_peer_arg(req, args, &name);
	if (idx < 0)
		return;
	o = lsd_sync_points_json(lsd_peer_at((unsigned int)idx), (uint16_t)k);
	if (o == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "peer \"%s\" has no synced path %u", name,
				   (unsigned int)k);
		return;
	}
	ls_ctl_reply_ok(req, o);
}

void
lsd_sync_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "sync", "{[tsc]}",
			     "clock sync: own state, fleet time and bound (at tsc), "
			     "every neighbour's edge", "tsc", cmd_sync, NULL);
	ls_ctl_register_keys(ctl, "sync.points", "{peer, [path]}",
			     "one path's clock estimator: its stored probes and fits",
			     "peer path", cmd_sync_points, NULL);
}
