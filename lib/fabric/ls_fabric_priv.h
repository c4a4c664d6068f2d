/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/fabric internals shared by its files (not installed):
 *
 *   ls_fabric_topo.c   the JSON document -> struct ls_fabric
 *   ls_fabric_check.c  checks over the whole fabric once every piece parsed
 *   ls_fabric_addr.c   the host address table the emulator looks up per packet
 *   ls_fabric_route.c  routes, flow hash, routing view of link state
 *   ls_fabric_link.c   the link (channel) model
 */
#ifndef LS_FABRIC_PRIV_H
#define LS_FABRIC_PRIV_H

#include <stdint.h>

#include "ls_fabric.h"
#include "ls_jsonv.h"

/* Where in the file node i came from ("switches[2]", "hosts[0]"), in buf
 * (LS_JSONV_PATH_LEN bytes), for messages about it. */
const char *ls_fab_node_path(const struct ls_fabric *f, uint16_t i, char *buf);

/* Validate the whole fabric and fill the switches' outgoing channel lists;
 * n_sw_links is how many links join two switches (they come first). */
int ls_fab_check(struct ls_jsonv *c, struct ls_fabric *f, uint16_t n_sw_links);

/* Insert a host's address (node idx) into f->addr_tab; no-op without one. */
void ls_fab_addr_add(struct ls_fabric *f, const struct ls_addr *a, uint16_t idx);

#endif /* LS_FABRIC_PRIV_H */
