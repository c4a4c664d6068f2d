/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The config's "route" (background path discovery) and "links" (link
 * inference) sections: docs/config.md.
 */
#include "ls_config.h"
#include "ls_config_priv.h"

static const struct field route_fields[] = {
	F_BOOL("enabled", struct ls_conf_route, enabled),
	F_INT("refresh_s", struct ls_conf_route, refresh_s, 1, 86400, 0),
	F_INT("traces_per_s", struct ls_conf_route, traces_per_s, 1, 10000, 0),
	F_INT("max_ttl", struct ls_conf_route, max_ttl, 1, 31, 0),
};
const struct schema ls_config_route_schema = SCHEMA(route_fields, NULL);

static const struct field links_fields[] = {
	F_INT("hot_us", struct ls_conf_links, hot_us, 1, 10000000, 0),
};
const struct schema ls_config_links_schema = SCHEMA(links_fields, NULL);
