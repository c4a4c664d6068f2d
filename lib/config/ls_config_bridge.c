/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The config's "bridge" section (the data path, docs/datapath.md): the two
 * ports and their roles, the shaped link, the tables' sizes, the state file
 * and the starting policy, which lib/policy checks with the same
 * file/key/reason errors as every other key.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_config.h"
#include "ls_config_priv.h"
#include "ls_policy.h"

static int
fn_policy(struct pctx *c, const char *path, const json_t *v, void *dst,
	  const struct field *f __attribute__((unused)))
{
	struct ls_policy **pp = dst;

	if (*pp == NULL)
		*pp = malloc(sizeof(**pp));
	if (*pp == NULL)
		return ls_jsonv_fail(&c->jv, path, "out of memory");
	return ls_policy_from_json(v, &c->jv, path, *pp);
}

static int
fn_lcores(struct pctx *c, const char *path, const json_t *v, void *dst,
	  const struct field *f __attribute__((unused)))
{
	struct ls_conf_bridge *b = (struct ls_conf_bridge *)((char *)dst -
				    offsetof(struct ls_conf_bridge, lcores));
	char ipath[LS_JSONV_PATH_LEN];
	size_t i;
	json_t *e;

	json_array_foreach(v, i, e) {
		json_int_t x = json_integer_value(e);

		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		if (!json_is_integer(e) || x < 0 || x > 1023)
			return ls_jsonv_fail(&c->jv, ipath, "expected an lcore id 0..1023");
		for (size_t k = 0; k < i; k++)
			if (b->lcores[k] == x)
				return ls_jsonv_fail(&c->jv, ipath, "lcore %lld is listed twice",
						     (long long)x);
		b->lcores[i] = (uint16_t)x;
	}
	b->n_lcores = (uint8_t)json_array_size(v);
	return 0;
}

/* The data path's lcores: the fabric port's first (the probe mesh and the
 * ports' queue 0 are its), the others polling no port of their own. */
static int
bridge_lcores(struct pctx *c, const char *path, struct ls_conf_bridge *b, int f)
{
	char kpath[LS_JSONV_PATH_LEN], ipath[LS_JSONV_PATH_LEN];
	int fl = c->cfg->ports[f].lcore;

	ls_jsonv_key(kpath, path, "lcores");
	if (b->n_lcores == 0)
		return 0;
	if (fl < 0)
		return ls_jsonv_fail(&c->jv, kpath, "ports[\"%s\"] needs an \"lcore\" of its own "
				     "to lead the data path's lcores", b->fabric_port);
	if (b->lcores[0] != fl)
		return ls_jsonv_fail(&c->jv, kpath, "must start with %d, the fabric port's lcore",
				     fl);
	for (unsigned int i = 1; i < b->n_lcores; i++)
		for (unsigned int p = 0; p < c->cfg->n_ports; p++)
			if (c->cfg->ports[p].lcore == b->lcores[i]) {
				snprintf(ipath, sizeof(ipath), "%s[%u]", kpath, i);
				return ls_jsonv_fail(&c->jv, ipath, "lcore %u polls port \"%s\": "
						     "the data path's other lcores poll no port",
						     b->lcores[i], c->cfg->ports[p].name);
			}
	return 0;
}

static int
bridge_port(struct pctx *c, const char *path, const char *key, const char *name,
	    uint8_t role)
{
	char kpath[LS_JSONV_PATH_LEN];
	int i = ls_config_port_index(c->cfg, name);

	ls_jsonv_key(kpath, path, key);
	if (i < 0)
		return ls_jsonv_fail(&c->jv, kpath, "no port \"%s\"", name);
	if (c->cfg->ports[i].role != role)
		return ls_jsonv_fail(&c->jv, kpath, "port \"%s\" needs \"role\": \"%s\"",
				     name, role == LS_PORT_HOST ? "host" : "fabric");
	return i;
}

static int
bridge_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	struct ls_conf_bridge *b = base;
	char kpath[LS_JSONV_PATH_LEN];
	int h, f;

	(void)obj;
	b->enabled = true;
	h = bridge_port(c, path, "host_port", b->host_port, LS_PORT_HOST);
	if (h < 0)
		return h;
	f = bridge_port(c, path, "fabric_port", b->fabric_port, LS_PORT_FABRIC);
	if (f < 0)
		return f;
	/* one lcore owns both sides: no locks between them */
	if (c->cfg->ports[h].lcore != c->cfg->ports[f].lcore)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "host_port"),
				     "must be polled by the same lcore as the fabric port");
	if (bridge_lcores(c, path, b, f) < 0)
		return -EINVAL;
	if (b->policy == NULL) {
		b->policy = calloc(1, sizeof(*b->policy));
		if (b->policy == NULL || ls_policy_finish(b->policy) < 0)
			return ls_jsonv_fail(&c->jv, path, "out of memory");
	}
	return 0;
}

#define FO struct ls_conf_failover
static const struct field failover_fields[] = {
	F_BOOL("enabled", FO, enabled),
	F_INT("silence_us", FO, silence_us, 20, 10000000, 0),
	F_INT("hold_ms", FO, hold_ms, 1, 3600000, 0),
};
#undef FO
static const struct schema failover_schema = SCHEMA(failover_fields, NULL);

#define BAL struct ls_conf_balance
static const struct field balance_fields[] = {
	F_BOOL("enabled", BAL, enabled),
	F_INT("hot_us", BAL, hot_us, 0, 10000000, 0),
	F_INT("interval_us", BAL, interval_us, 0, 10000000, 0),
	F_INT("runs", BAL, runs, 1, 100, 0),
	F_INT("jitter_us", BAL, jitter_us, 0, 100000000, 0),
	F_INT("settle_us", BAL, settle_us, 0, 100000000, 0),
};
#undef BAL
static const struct schema balance_schema = SCHEMA(balance_fields, NULL);

static const char *const spread_names[] = {"auto", "rss", "soft", NULL};

#define BR struct ls_conf_bridge
static const struct field bridge_fields[] = {
	F_STR("host_port", BR, host_port, 1, F_REQ | F_NAME),
	F_STR("fabric_port", BR, fabric_port, 1, F_REQ | F_NAME),
	F_INT("link_bps", BR, link_bps, 1000000, 10000000000000LL, F_REQ),
	F_INT("max_flows", BR, max_flows, 1024, 16777216, 0),
	F_INT("flow_idle_ms", BR, flow_idle_ms, 100, 86400000, 0),
	F_INT("pace_max_delay_us", BR, pace_max_delay_us, 10, 1000000, 0),
	F_INT("wheel_slots", BR, wheel_slots, 1024, 1 << 22, F_POW2),
	F_INT("wheel_slot_ns", BR, wheel_slot_ns, 10, 100000, 0),
	F_INT("mbufs", BR, mbufs, 1024, 4194304, 0),
	F_STR("policy_file", BR, policy_file, 0, 0),
	F_FUNC("policy", BR, policy, fn_policy, 0),
	F_OBJ("failover", offsetof(BR, failover), failover_schema, 0),
	F_OBJ("balance", offsetof(BR, balance), balance_schema, 0),
	F_ARRAY("lcores", BR, lcores, 0, LS_BRIDGE_MAX_LCORES, fn_lcores, 0),
	F_ENUM("spread", BR, spread, spread_names),
};
#undef BR
const struct schema ls_config_bridge_schema = SCHEMA(bridge_fields, bridge_post);


