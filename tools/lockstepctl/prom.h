/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mesh --prometheus: a fleet's paths from a Prometheus server (prom.c).
 */
#ifndef LOCKSTEPCTL_PROM_H
#define LOCKSTEPCTL_PROM_H

#include <jansson.h>

/*
 * Ask the Prometheus server at base (http://host:port) for every
 * lockstepd it scrapes. *nodes: an array of {"name", "result", "group"}, sorted by
 * name, where result has the shape of a daemon's "paths" reply (metric's
 * field per path: rtt, fwd, rev or loss) or is null for an instance whose
 * scrape fails. group_label (may be NULL): "group" is that label of the
 * node's series (a target label such as leaf or rack, set in Prometheus's
 * scrape configuration), or null. @return EX_OK, or EX_PROTO with the reason on stderr.
 */
int prom_mesh(const char *base, const char *metric, const char *group_label, int timeout_ms,
	      json_t **nodes);

#endif /* LOCKSTEPCTL_PROM_H */
