/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepctl audit: what audit.c collects from each daemon and what
 * audit_items.c judges it by. Internal to the tool.
 */
#ifndef LOCKSTEPCTL_AUDIT_H
#define LOCKSTEPCTL_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define AU_MAX_SIZES 8          /* path.mtu takes at most 8 sizes */

/* The items, in report order. */
enum au_item {
	AU_DAEMONS,             /* every socket answers, node names unique */
	AU_REACH,               /* every path of every pair up, loss under the bound */
	AU_MTU,                 /* padded probes of each size back on every path */
	AU_CAPACITY,            /* each path's capacity from packet trains (path.train) */
	AU_PATHS,               /* distinct router lists per pair */
	AU_LINKS,               /* ports up, at the fleet's speed */
	AU_FIRMWARE,            /* the fleet's driver, one firmware per driver */
	AU_CLOCK,               /* synced to one reference; the clock source */
	AU_N
};

struct au_opts {
	const char *window;     /* paths window for reach: 1s, 10s (default), 60s */
	double max_loss;        /* percent a path may lose in it */
	int sizes[AU_MAX_SIZES];/* path.mtu sizes */
	size_t n_sizes;
	unsigned int count;     /* path.mtu probes per size and path */
	unsigned int min_paths; /* distinct router lists a pair needs (1 through one router) */
	unsigned int max_ttl;   /* route's */
	double capacity_frac;   /* a path under this share of its pair's median fails */
	double min_gbps;        /* ... or under this (0: no floor) */
	unsigned int skip;      /* bit per enum au_item */
	bool verbose;           /* list passing checks too */
};

/* One daemon, as asked. Results are the replies' "result" objects. */
struct au_node {
	char *sock;
	char *name;             /* status.node, else the socket's label */
	int err;                /* EX_* when status failed: nothing else asked */
	char *why;              /* ... and why */
	json_t *status, *paths, *sync;
	json_t *mtu;            /* {peer: path.mtu result | {"error": why}} */
	json_t *trains;         /* {peer: path.train result | {"error": why}} */
	json_t *routes;         /* {peer: [route result | {"error": why}, per path]} */
};

extern const char *const au_item_names[AU_N];

/*
 * Judge one item over the fleet: {"item", "pass", "checks", "failed",
 * "summary", "rows": [{"node", ["peer" | "port"], "pass", "detail", ...}]}.
 */
json_t *au_judge(enum au_item it, const struct au_opts *o, const struct au_node *nodes,
		 size_t n);

#endif /* LOCKSTEPCTL_AUDIT_H */
