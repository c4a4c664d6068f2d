/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clock sync's state in lockstepd, shared by sync.c (samples in, the fit
 * step), sync_net.c (the neighbour nodes and the network step) and
 * sync_json.c (which reports it); all of it on the control thread.
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
	int32_t node;               /* its node in the table a step builds (-1: none) */
	struct lsd_peer_sync *node_next; /* ... the node's next peer, in peer order */
	uint16_t n_paths;
	struct sync_path path[];
};

struct rte_hash;

#define LS_SYNC_MAX_NBRS 4096       /* neighbour nodes in the network step */
#define EDGE_MAX_TRACKS (LS_MAX_PATHS * 4) /* an edge's paths: a node's peers (v4, v6) */

/* One neighbour node: every peer that is the same node, one edge. */
struct sync_node {
	struct ls_sync_nbr nbr;
	struct ls_sync_nbr_use use;
	double ntp_ns, ptp_ns, min_rtt_ns; /* baselines (drift-corrected to now) */
	uint32_t n_base;
	uint64_t fwd_kept, fwd_rej, rev_kept, rev_rej;
	/* while a step builds the table: its peers, in peer order */
	struct lsd_peer_sync *first, *last;
	unsigned int n_peers;
};

/* Neighbour nodes in the order their first peer comes in the peer list,
 * and an index from node id to position (finding a node was a scan: peers
 * x nodes once 10,000 peers reply with distinct ids). */
struct sync_nodes {
	struct sync_node *node;     /* LS_SYNC_MAX_NBRS */
	unsigned int n;
	struct rte_hash *ids;       /* node id -> position + 1 */
};

/* Where the network step is (sync_net.c: it runs in slices). */
enum sync_net_phase {
	NET_IDLE,
	NET_GATHER,                 /* each node's newest announcement, peer by peer */
	NET_PUBLISH,                /* each peer's clock for synced delays */
};

struct lsd_peer;
struct ls_clock;

/* Clock sync's state (sync.c sets it up). */
struct lsd_sync_ctx {
	bool on;
	struct ls_sync_node_conf nconf;
	struct ls_sync_est_conf econf;
	double wander_ns;           /* sync.wander_ns: the tracks' allowance */
	struct ls_sync_state self;
	struct ls_clock *clock;     /* the control thread's readers (clock.c): sync */
	struct ls_clock *q_clock;   /*   runs there too; q_clock for queries at a TSC */
	uint64_t next_step_tsc, next_net_tsc;
	uint64_t step_tsc;          /* sync interval in TSC ticks */
	bool stepping;              /* a fit step is under way (fit_slice) */
	unsigned int step_cursor;   /* ... the next peer it fits */
	unsigned int edge_cursor;   /* ... then the next node whose edge it sets */
	unsigned int step_passes;   /* ... control-loop passes it took so far */
	uint64_t step_at;           /* ... its instant: TSC */
	uint64_t step_now;          /* ... and local time, every path's fit's t_ref */
	enum sync_net_phase net;    /* a network step under way (NET_IDLE: none) */
	unsigned int net_cursor;    /* ... the next peer it gathers or publishes */
	uint64_t net_now;           /* ... its instant, local time */
	bool net_spread;            /* ... its gather took more than one pass */
	bool net_waited;            /* ... its update waited for a pass of its own */
	struct sync_nodes *net_tab; /* ... its table: a fit step's new one takes
				     * over once updated (commands never see one
				     * with edges and no states) */
	uint64_t steps;             /* fit steps (each also a network step) */
	uint64_t net_steps;         /* network steps */
	uint64_t last_step_tsc;     /* when the last step ran (its "now") */
	uint64_t recs, resets;
	struct lsd_peer *peers[LS_MAX_PEERS]; /* attached peers, in attach order */
	unsigned int n_peers;
	struct sync_nodes tab[2];   /* the nodes: one in use, one a step builds */
	struct sync_nodes *nodes;   /* in use: the last step's (commands read it) */
	struct sync_nodes *next;    /* the one the step under way builds */
	struct ls_sync_track_ws *ws; /* scratch for fitting an edge's tracks */
	struct ls_sync_wobs wobs;    /* our estimate over time: the bound's walk */
};

extern struct lsd_sync_ctx lsd_sync_st;

/* sync_net.c */
/* An edge from the paths of ps and, when chain, the peers after it on its
 * node's list (node_next). 0 or -ENODATA. */
int lsd_sync_edge_fit(const struct lsd_peer_sync *ps, bool chain, uint64_t now,
		      struct ls_sync_fit *out);
int lsd_sync_nodes_init(void);
void lsd_sync_nodes_fini(void);
/* A step begins: the table it builds starts empty. */
void lsd_sync_nodes_begin(void);
/* One fitted peer into the table the step builds (its node's counters,
 * baselines and peer list). */
void lsd_sync_node_take(struct lsd_peer_sync *ps, uint64_t now);
/* A peer leaves mid-step: off its node's list in the table being built. */
void lsd_sync_node_drop(struct lsd_peer_sync *ps);
/* The nodes' edges, until the TSC end; true when all are set. */
bool lsd_sync_nodes_slice(uint64_t end);
/* A network step at now (local time) on the table in use, or after a fit
 * step (fresh) on the one it built, run by lsd_sync_net_slice. */
void lsd_sync_net_begin(uint64_t now, bool fresh);
/* The network step under way, in the pass that began at the TSC start,
 * until the TSC end; true when done. */
bool lsd_sync_net_slice(uint64_t start, uint64_t end);
#define LSD_NET_UPDATE_ALONE 512    /* peers past which the update waits for a pass */
/* Whether network steps between fit steps pay. */
bool lsd_sync_net_fast(void);

/** A fit as the sync commands report it (null when not ok). */
json_t *lsd_sync_fit_json(const struct ls_sync_fit *f);

/** A node's state as the sync commands report it; self: ours (its private
 * fields too), else a neighbour's as it came off the wire. */
json_t *lsd_sync_state_json(const struct ls_sync_state *s, uint64_t now, bool self);

#endif /* LSD_SYNC_PRIV_H */
