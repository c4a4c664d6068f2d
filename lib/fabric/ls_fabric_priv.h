/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/fabric internals shared by its files (not installed):
 *
 *   ls_fabric_topo.c   the JSON document -> struct ls_fabric
 *   ls_fabric_params.c link parameter layers and the allowed-key check
 *   ls_fabric_check.c  checks over the whole fabric once every piece parsed
 *   ls_fabric_addr.c   the host address table the emulator looks up per packet
 *   ls_fabric_route.c  routes, flow hash, routing view of link state
 *   ls_fabric_link.c   the link (channel) model
 */
#ifndef LS_FABRIC_PRIV_H
#define LS_FABRIC_PRIV_H

#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ls_fabric.h"
#include "ls_jsonv.h"

/* Reject a non-object, then the first key of obj (in file order) that is
 * not in keys (NULL-terminated) nor, with params, a link parameter key. */
int ls_fab_check_keys(struct ls_jsonv *c, const char *path, const json_t *obj,
		      const char *const *keys, bool params);

/* Where the keys of a rule between two keys were last set, for its
 * messages: two paths of LS_JSONV_PATH_LEN, the deepest layer that set
 * buffer_bytes or mtu, then the one that set ecn_bytes or ecn_max_bytes. */
#define LS_FAB_BM_LEN (2 * LS_JSONV_PATH_LEN)

/* Link parameter defaults: built-in <- defaults.link (*dl) <-
 * defaults.host_link (*dh, for host links). *_bm (LS_FAB_BM_LEN bytes): where
 * their keys were set. */
int ls_fab_defaults(struct ls_jsonv *c, const json_t *root, struct ls_fab_chan_params *dl,
		    char *dl_bm, struct ls_fab_chan_params *dh, char *dh_bm);

/* Params of one link: base (defaults; base_path, LS_FAB_BM_LEN: where its keys
 * were set), the link object's own keys, then its
 * two direction objects dir_a and dir_b. out[0] is a->b (host->leaf). */
int ls_fab_link_params(struct ls_jsonv *c, const char *path, const json_t *obj,
		       const struct ls_fab_chan_params *base, const char *base_path,
		       const char *dir_a, const char *dir_b, struct ls_fab_chan_params out[2]);

/* Where in the file node i came from ("switches[2]", "hosts[0]"), in buf
 * (LS_JSONV_PATH_LEN bytes), for messages about it. */
static inline const char *
ls_fab_node_path(const struct ls_fabric *f, uint16_t i, char *buf)
{
	if (i < f->n_switches)
		snprintf(buf, LS_JSONV_PATH_LEN, "switches[%u]", (unsigned int)i);
	else
		snprintf(buf, LS_JSONV_PATH_LEN, "hosts[%u]", (unsigned int)(i - f->n_switches));
	return buf;
}

/* Validate the whole fabric and fill the switches' outgoing channel lists;
 * n_sw_links is how many links join two switches (they come first). */
int ls_fab_check(struct ls_jsonv *c, struct ls_fabric *f, uint16_t n_sw_links);

/* Insert a host's address (node idx) into f->addr_tab; no-op without one. */
void ls_fab_addr_add(struct ls_fabric *f, const struct ls_addr *a, uint16_t idx);

#endif /* LS_FABRIC_PRIV_H */
