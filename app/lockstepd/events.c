/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event log: what changed, when, and on what evidence, for operators
 * (lockstepctl events [--follow]) and for what acts on it later (failover,
 * the fleet's views). Control thread only.
 *
 * Events are JSON objects {seq, time_ns (UTC), fleet_ns (null while the
 * clock is unsynced), node, type, severity, ...}: kept in memory (the last
 * events.keep, for the "events" command) and, with events.file set,
 * appended to that file as JSON lines, flushed one by one (a reader tailing
 * it sees whole lines).
 *
 * Sources so far, polled every control-loop pass (<= 10 ms after the lcore
 * or the sync step changed them; 512 peers a pass, so 10k peers in ~200 ms):
 *   path.down / path.up     a path reached probe.down_after consecutive
 *                           losses / answered again (evidence: counters)
 *   peer.down / peer.up     every path of a peer down / one back
 *   clock.state             what fleet-time readers see changed: reference,
 *                           synced, holdover, unsynced, or the reference id
 * and, through lsd_event from bridge_fo.c (the control loop polls it too):
 *   path.silent             the data path moved flows off a path their
 *                           requests went unacknowledged on (failover)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_malloc.h>

#include <rte_cycles.h>

#include "lockstepd.h"
#include "ls_ctl.h"
#include "ls_fleettime.h"

/* lcore-written fields, read here without tearing */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static const char *const sev_names[] = {
	[LSD_EV_INFO] = "info", [LSD_EV_WARNING] = "warning", [LSD_EV_ERROR] = "error",
};

static struct {
	char **ring;              /* the last `keep` events, by seq % keep, as compact
				   * JSON: one block each, not a tree of a few dozen
				   * small ones (4,096 trees spread over the control
				   * thread's heap pinned 48 MiB of pages after 10k
				   * peers came and went, docs/benchmarks.md) */
	uint32_t keep;
	uint64_t seq;             /* events so far; the next gets seq + 1 */
	FILE *file;
	json_t *counts;           /* events per type */
	char clock_status[16];    /* what clock.state last said */
	uint32_t clock_ref;
} ev;

int
lsd_events_init(void)
{
	ev.keep = lsd.cfg.events.keep;
	ev.ring = calloc(ev.keep, sizeof(*ev.ring));
	ev.counts = json_object();
	if (ev.ring == NULL || ev.counts == NULL)
		return -ENOMEM;
	if (lsd.cfg.events.file[0] != '\0') {
		ev.file = fopen(lsd.cfg.events.file, "a");
		if (ev.file == NULL) {
			int rc = -errno;

			LSD_LOG(ERR, "%s: events.file: cannot open %s: %s", lsd.cfg.file,
				lsd.cfg.events.file, strerror(errno));
			return rc;
		}
	}
	return 0;
}

void
lsd_events_fini(void)
{
	for (uint32_t i = 0; ev.ring != NULL && i < ev.keep; i++)
		free(ev.ring[i]);
	free(ev.ring);
	ev.ring = NULL;
	json_decref(ev.counts);
	ev.counts = NULL;
	if (ev.file != NULL)
		fclose(ev.file);
	ev.file = NULL;
}

void
lsd_event(const char *type, enum lsd_ev_sev sev, json_t *o)
{
	struct timespec ts;
	struct ls_fleettime ft;
	bool synced = lsd_fleettime_read(&ft) == 0 && (ft.flags & (LS_FT_SYNCED | LS_FT_REF)) &&
		      !ft.stale;
	json_t *n;
	char *line;

	if (o == NULL || ev.ring == NULL) {
		json_decref(o);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(o, "seq", json_integer((json_int_t)++ev.seq));
	json_object_set_new(o, "time_ns", json_integer((json_int_t)ts.tv_sec * 1000000000 +
						       ts.tv_nsec));
	json_object_set_new(o, "fleet_ns", synced ? json_integer((json_int_t)ft.fleet_ns) :
						      json_null());
	json_object_set_new(o, "node", json_string(lsd.cfg.node_name));
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "severity", json_string(sev_names[sev]));
	n = json_object_get(ev.counts, type);
	json_object_set_new(ev.counts, type, json_integer(json_integer_value(n) + 1));
	line = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (ev.file != NULL && line != NULL) {
		fputs(line, ev.file);
		fputc('\n', ev.file);
		fflush(ev.file);
	}
	/* (out of memory: the slot stays empty, the seq counted) */
	free(ev.ring[ev.seq % ev.keep]);
	ev.ring[ev.seq % ev.keep] = line;
}

static json_t *
path_evidence(const struct lsd_peer *peer, const struct lsd_peer_path *pp)
{
	return json_pack("{s:s, s:i, s:i, s:{s:I, s:I, s:I}}", "peer", peer->name,
			 "path", pp->idx, "sport", pp->sport, "evidence",
			 "consecutive_lost", (json_int_t)LOAD(pp->live.consecutive_lost),
			 "received", (json_int_t)LOAD(pp->live.c.received),
			 "lost", (json_int_t)LOAD(pp->live.c.lost));
}

/* One peer's paths: an event per path that changed, and one for the peer
 * when all its paths went down or the first came back. */
static void
poll_peer(struct lsd_peer *peer)
{
	unsigned int down = 0, was_down = 0;

	if (!LOAD(peer->resolved))
		return;
	for (uint16_t i = 0; i < peer->n_paths; i++) {
		struct lsd_peer_path *pp = &peer->path[i];
		uint8_t now = LOAD(pp->state_down);

		was_down += pp->ev_down;
		down += now;
		if (now == pp->ev_down)
			continue;
		pp->ev_down = now;
		lsd_event(now ? "path.down" : "path.up", now ? LSD_EV_WARNING : LSD_EV_INFO,
			  path_evidence(peer, pp));
	}
	if ((down == peer->n_paths) != (was_down == peer->n_paths))
		lsd_event(down == peer->n_paths ? "peer.down" : "peer.up",
			  down == peer->n_paths ? LSD_EV_ERROR : LSD_EV_INFO,
			  json_pack("{s:s, s:i, s:i}", "peer", peer->name, "paths", peer->n_paths,
				    "paths_down", down));
}

/* The state fleet-time readers see (the shared page, published every
 * 100 ms): reference, synced, holdover or unsynced, and the reference. */
static void
poll_clock(void)
{
	struct ls_fleettime ft;
	const char *status;
	uint32_t ref;

	if (lsd_fleettime_read(&ft) < 0)
		return;
	status = ft.stale ? "unsynced" : ft.flags & LS_FT_REF ? "reference" :
		 ft.flags & LS_FT_HOLDOVER ? "holdover" :
		 ft.flags & LS_FT_SYNCED ? "synced" : "unsynced";
	ref = ft.ref_id;
	if (strcmp(status, ev.clock_status) == 0 && ref == ev.clock_ref)
		return;
	lsd_event("clock.state", strcmp(status, "unsynced") == 0 && ev.clock_status[0] ?
		  LSD_EV_WARNING : LSD_EV_INFO,
		  json_pack("{s:s, s:s, s:i, s:i}", "status", status, "was",
			    ev.clock_status[0] ? ev.clock_status : "start", "ref_id", (int)ref,
			    "was_ref_id", (int)ev.clock_ref));
	snprintf(ev.clock_status, sizeof(ev.clock_status), "%s", status);
	ev.clock_ref = ref;
}

/* Up to EV_PEERS_PER_PASS peers, every pass; more, and each peer once per
 * EV_SWEEP_MS, a share of them each pass by the time since the last (the
 * control loop spins while sync or the windows have work: 512 peers a
 * pass was each of 10k peers' paths read ~100 times a second). A pass
 * stops after EV_SLICE_US and owes the rest to the next: when thousands
 * of paths go down at once each event is a JSON object and a line of the
 * file, and 500 of them in one go held a peer.add for 15 ms. */
#define EV_PEERS_PER_PASS 512
#define EV_SWEEP_MS 200
#define EV_SLICE_US 200

void
lsd_events_poll(void)
{
	static unsigned int next, owed;
	static uint64_t last;
	uint64_t now = rte_rdtsc(), end = now + rte_get_tsc_hz() / 1000000 * EV_SLICE_US;
	unsigned int n = lsd_peer_count(), k = n, j;

	if (n > EV_PEERS_PER_PASS) {
		uint64_t due = (now - last) * n / (rte_get_tsc_hz() / 1000 * EV_SWEEP_MS);

		if (due > 0)
			last = now;     /* else the time adds up to a peer */
		k = (unsigned int)RTE_MIN(owed + due, (uint64_t)n);
	}
	for (j = 0; j < k; j++, next++) {
		lsd_peer_prefetch_ahead(next % n);
		poll_peer(lsd_peer_at(next % n));
		if (rte_rdtsc() > end) {   /* each peer: one in a storm is 8 events */
			j++, next++;
			break;
		}
	}
	owed = n > EV_PEERS_PER_PASS ? k - j : 0;
	if (n != 0)
		next %= n;
	poll_clock();
}

/* events {[since], [max]}: events after seq `since` (default: the last
 * `max`, default 100), oldest first, and `next` to ask from. */
static void
cmd_events(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	json_t *js = json_object_get(args, "since"), *jm = json_object_get(args, "max");
	uint64_t max = 100, since, first, last;
	json_t *a;

	if ((js != NULL && (!json_is_integer(js) || json_integer_value(js) < 0)) ||
	    (jm != NULL && (!json_is_integer(jm) || json_integer_value(jm) < 1 ||
			    json_integer_value(jm) > 100000))) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
				   "args.since: an integer >= 0; args.max: 1..100000");
		return;
	}
	if (jm != NULL)
		max = (uint64_t)json_integer_value(jm);
	since = js != NULL ? (uint64_t)json_integer_value(js) : (ev.seq > max ? ev.seq - max : 0);
	/* what is still kept: the last `keep` */
	first = since + 1;
	if (ev.seq >= ev.keep && first <= ev.seq - ev.keep)
		first = ev.seq - ev.keep + 1;
	a = json_array();
	last = first - 1;
	for (uint64_t s = first; s <= ev.seq && json_array_size(a) < max; s++) {
		const char *line = ev.ring[s % ev.keep];

		last = s;
		if (line != NULL)
			json_array_append_new(a, json_loads(line, 0, NULL));
	}
	ls_ctl_reply_ok(req, json_pack("{s:o, s:I, s:I, s:O, s:s?}", "events", a,
				       "next", (json_int_t)last,
				       "missed", (json_int_t)(first - since - 1),
				       "counts", ev.counts,
				       "file", ev.file != NULL ? lsd.cfg.events.file : NULL));
}

void
lsd_events_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "events", "{[since], [max]}",
			     "events after seq since (default the last max, 100), oldest first",
			     "since max", cmd_events, NULL);
}
