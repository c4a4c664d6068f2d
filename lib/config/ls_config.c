/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepd configuration: turn a JSON document into struct ls_config, or
 * reject it with exactly one line "FILE: KEY: REASON".
 *
 * Why it is built this way:
 *  - Every section is described by a table of fields (key, JSON kind, range,
 *    where it lands in the struct). One walker applies the tables, so type
 *    checks, range checks, "unknown key" and "required key missing" are
 *    written once and read the same everywhere. Only rules that relate two
 *    keys (gateway inside prefix, peer port exists, sim only with source
 *    "sim") live in small per-section "post" hooks.
 *  - The walker first rejects unknown keys (in file order, so the first typo
 *    in the file is the one reported), then visits the table in table order.
 *    Table order is dependency order: node before control (its socket
 *    default uses the node name), ports before peers (peers refer to ports).
 *  - Parsing fills a private copy; the caller's struct is written only on
 *    success, so a failed reload never leaves a half-updated config behind.
 *  - No EAL and no allocation besides the peer array: the daemon parses its
 *    config before rte_eal_init(), and the unit tests run without hugepages.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_config.h"
#include "ls_stamp.h"
#include "ls_config_priv.h"
#include "ls_jsonv.h"

/* Type check shared by every string-valued key. */
static int
want_string(struct pctx *c, const char *path, const json_t *v, const char **s)
{
	if (!json_is_string(v))
		return ls_jsonv_fail(&c->jv, path, "expected string, got %s", ls_jsonv_kind(v));
	*s = json_string_value(v);
	return 0;
}

/* Little-endian or not, memcpy of the right width is what the member holds. */
static void
store_int(void *dst, size_t size, long long v)
{
	switch (size) {
	case 1: {
		uint8_t x = (uint8_t)v;

		memcpy(dst, &x, sizeof(x));
		break;
	}
	case 2: {
		uint16_t x = (uint16_t)v;

		memcpy(dst, &x, sizeof(x));
		break;
	}
	case 4: {
		/* also right for int members: -1 wraps back to -1 */
		uint32_t x = (uint32_t)v;

		memcpy(dst, &x, sizeof(x));
		break;
	}
	default: {
		uint64_t x = (uint64_t)v;

		memcpy(dst, &x, sizeof(x));
		break;
	}
	}
}

static int
parse_field(struct pctx *c, const char *path, const json_t *v, void *base,
	    const struct field *f);

/*
 * Apply a schema to one JSON object: unknown keys first (file order), then
 * each field in table order, then the post hook.
 */
static int
parse_object(struct pctx *c, const char *path, const json_t *obj,
	     const struct schema *s, void *base)
{
	char kpath[LS_JSONV_PATH_LEN];
	const char *key;
	json_t *val;
	size_t i;
	int rc;

	if (!json_is_object(obj))
		return ls_jsonv_fail(&c->jv, path, "expected object, got %s", ls_jsonv_kind(obj));

	/* jansson's iteration API is not const; nothing is modified. */
	json_object_foreach((json_t *)(uintptr_t)obj, key, val) {
		for (i = 0; i < s->n; i++)
			if (strcmp(key, s->fields[i].key) == 0)
				break;
		if (i == s->n)
			return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, key), "unknown key");
	}

	for (i = 0; i < s->n; i++) {
		const struct field *f = &s->fields[i];
		const json_t *v = json_object_get(obj, f->key);

		ls_jsonv_key(kpath, path, f->key);
		if (v == NULL) {
			if (f->flags & F_REQ)
				return ls_jsonv_fail(&c->jv, kpath, "required key missing");
			continue;
		}
		rc = parse_field(c, kpath, v, base, f);
		if (rc < 0)
			return rc;
	}
	return s->post != NULL ? s->post(c, path, obj, base) : 0;
}

/* The JSON type a kind of field wants, if v is not of it; FK_OBJ and FK_FUNC check their own. */
static const char *
json_kind_missing(enum field_kind kind, const json_t *v)
{
	switch (kind) {
	case FK_INT:
		return json_is_integer(v) ? NULL : "integer";
	case FK_NUM:
		return json_is_number(v) ? NULL : "number";
	case FK_BOOL:
		return json_is_boolean(v) ? NULL : "boolean";
	case FK_STR:
	case FK_ENUM:
		return json_is_string(v) ? NULL : "string";
	case FK_ARR:
		return json_is_array(v) ? NULL : "array";
	default:
		return NULL;
	}
}

static int
parse_field(struct pctx *c, const char *path, const json_t *v, void *base,
	    const struct field *f)
{
	char *dst = (char *)base + f->off;
	char q[LS_JSONV_QUOTE_MAX + 4];
	const char *want = json_kind_missing(f->kind, v);
	const char *s = NULL;
	size_t len, i;

	if (want != NULL)
		return ls_jsonv_fail(&c->jv, path, "expected %s, got %s", want, ls_jsonv_kind(v));
	switch (f->kind) {
	case FK_INT: {
		json_int_t x = json_integer_value(v);

		if (x < f->min || x > f->max)
			return ls_jsonv_fail(&c->jv, path, "must be between %lld and %lld, got %lld",
				    f->min, f->max, (long long)x);
		if ((f->flags & F_POW2) && (x & (x - 1)) != 0)
			return ls_jsonv_fail(&c->jv, path, "must be a power of 2, got %lld",
				    (long long)x);
		store_int(dst, f->size, x);
		return 0;
	}
	case FK_NUM: {
		double x = json_number_value(v);

		if (!(x >= f->dmin && x <= f->dmax))
			return ls_jsonv_fail(&c->jv, path, "must be between %g and %g, got %g",
				    f->dmin, f->dmax, x);
		memcpy(dst, &x, sizeof(x));
		return 0;
	}
	case FK_BOOL: {
		bool b = json_is_true(v);

		memcpy(dst, &b, sizeof(b));
		return 0;
	}
	case FK_STR:
		s = json_string_value(v);
		len = strlen(s);
		/* an embedded NUL would silently shorten the value */
		if (len != json_string_length(v))
			return ls_jsonv_fail(&c->jv, path, "must not contain NUL characters");
		if (len == 0 && f->min > 0)
			return ls_jsonv_fail(&c->jv, path, "must not be empty");
		if (len >= f->size)
			return ls_jsonv_fail(&c->jv, path, "must be at most %zu characters long, got %zu",
				    f->size - 1, len);
		if (f->flags & F_NAME) {
			for (i = 0; i < len; i++)
				if (!ls_jsonv_name_char(s[i]))
					return ls_jsonv_fail(&c->jv, path,
						    "invalid character in \"%s\" (allowed: A-Z a-z 0-9 _ . -)",
						    ls_jsonv_quote(q, sizeof(q), s));
		}
		memcpy(dst, s, len + 1);
		return 0;
	case FK_ENUM: {
		char list[128] = "";

		s = json_string_value(v);
		for (i = 0; f->names[i] != NULL; i++) {
			if (strcmp(s, f->names[i]) == 0) {
				store_int(dst, f->size, (long long)i);
				return 0;
			}
		}
		for (i = 0; f->names[i] != NULL; i++) {
			len = strlen(list);
			snprintf(list + len, sizeof(list) - len, "%s\"%s\"",
				 i == 0 ? "" : ", ", f->names[i]);
		}
		return ls_jsonv_fail(&c->jv, path, "must be one of %s, got \"%s\"", list,
			    ls_jsonv_quote(q, sizeof(q), s));
	}
	case FK_OBJ:
		return parse_object(c, path, v, f->sub, dst);
	case FK_ARR:
		len = json_array_size(v);
		if (f->min > 0 && (len < (size_t)f->min || len > (size_t)f->max))
			return ls_jsonv_fail(&c->jv, path, "must have %lld to %lld entries, got %zu",
				    f->min, f->max, len);
		if (len > (size_t)f->max)
			return ls_jsonv_fail(&c->jv, path, "must have at most %lld entries, got %zu",
				    f->max, len);
		return f->fn(c, path, v, dst, f);
	case FK_FUNC:
		return f->fn(c, path, v, dst, f);
	}
	return ls_jsonv_fail(&c->jv, path, "internal error: bad field kind");
}

/*
 * Addresses and interface prefixes: one FK_FUNC callback, told by the field
 * which one it reads (max: 1 for a prefix) and the address family the key
 * wants (min: LS_AF_INET, LS_AF_INET6 or 0 for either).
 *
 * A prefix needs its "/len": ls_prefix_parse would read a bare address as a
 * host route, which on an interface means "nothing is on-link" and is almost
 * always a forgotten length.
 */
static int
fn_ip(struct pctx *c, const char *path, const json_t *v, void *dst,
      const struct field *f)
{
	int family = (int)f->min;
	bool prefix = f->max != 0;
	char q[LS_JSONV_QUOTE_MAX + 4];
	const char *s = NULL;
	struct ls_addr *a;
	int rc;

	rc = want_string(c, path, v, &s);
	if (rc < 0)
		return rc;
	ls_jsonv_quote(q, sizeof(q), s);
	if (prefix) {
		struct ls_prefix *p = dst;

		if (strchr(s, '/') == NULL || ls_prefix_parse(s, p) < 0)
			return ls_jsonv_fail(&c->jv, path, "not an IPv%d prefix (%s): \"%s\"", family,
				    family == LS_AF_INET ? "a.b.c.d/len" : "x::y/len", q);
		a = &p->addr;
	} else {
		a = dst;
		if (ls_addr_parse(s, a) < 0)
			return ls_jsonv_fail(&c->jv, path, "not an IP address: \"%s\"", q);
	}
	if (family != 0 && a->family != family)
		return ls_jsonv_fail(&c->jv, path, "must be an IPv%d %s, got \"%s\"", family,
			    prefix ? "prefix" : "address", q);
	if (!ls_addr_is_unicast(a))
		return ls_jsonv_fail(&c->jv, path, "must be a unicast address, got \"%s\"", q);
	return 0;
}

#define F_IP(k, T, m, fam, pfx, fl) { .key = (k), .kind = FK_FUNC, .flags = (fl), \
	.off = offsetof(T, m), .size = MSIZE(T, m), .min = (fam), .max = (pfx), .fn = fn_ip }
#define F_ADDR(k, T, m, fam, fl)	F_IP(k, T, m, fam, 0, fl)
#define F_PREFIX(k, T, m, fam, fl)	F_IP(k, T, m, fam, 1, fl)

/* MAC: ls_mac_parse accepts exactly "xx:xx:xx:xx:xx:xx" (or '-'). */
static int
fn_mac(struct pctx *c, const char *path, const json_t *v, void *dst,
       const struct field *f)
{
	struct ls_mac *m = dst;
	char q[LS_JSONV_QUOTE_MAX + 4];
	const char *s = NULL;
	int rc;

	(void)f;
	rc = want_string(c, path, v, &s);
	if (rc < 0)
		return rc;
	ls_jsonv_quote(q, sizeof(q), s);
	if (ls_mac_parse(s, m) < 0)
		return ls_jsonv_fail(&c->jv, path, "not a MAC address (aa:bb:cc:dd:ee:ff): \"%s\"", q);
	if (m->b[0] & 0x01)
		return ls_jsonv_fail(&c->jv, path, "must be a unicast MAC, got \"%s\"", q);
	if ((m->b[0] | m->b[1] | m->b[2] | m->b[3] | m->b[4] | m->b[5]) == 0)
		return ls_jsonv_fail(&c->jv, path, "must not be all zeros");
	return 0;
}

/*
 * File mode as a string of octal digits: JSON has no octal literals, and a
 * bare 660 would silently mean 01224.
 */
static int
fn_mode(struct pctx *c, const char *path, const json_t *v, void *dst,
	const struct field *f)
{
	char q[LS_JSONV_QUOTE_MAX + 4];
	unsigned long m = 0;
	const char *s = NULL;
	size_t i, len;

	(void)f;
	if (!json_is_string(v))
		return ls_jsonv_fail(&c->jv, path, "expected string of octal digits like \"0660\", got %s",
			    ls_jsonv_kind(v));
	s = json_string_value(v);
	len = strlen(s);
	ls_jsonv_quote(q, sizeof(q), s);
	if (len == 0 || len > 4)
		return ls_jsonv_fail(&c->jv, path, "expected octal digits like \"0660\", got \"%s\"", q);
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '7')
			return ls_jsonv_fail(&c->jv, path, "expected octal digits like \"0660\", got \"%s\"", q);
		m = m * 8 + (unsigned long)(s[i] - '0');
	}
	if (m > 0777)
		return ls_jsonv_fail(&c->jv, path, "must be at most 0777, got \"%s\"", q);
	*(uint32_t *)dst = (uint32_t)m;
	return 0;
}

static const char *const log_levels[] = {
	"emerg", "alert", "crit", "error", "warning", "notice", "info", "debug",
	NULL
};

/* log.level is kept as text: the daemon maps it to its own logger. */
static int
fn_log_level(struct pctx *c, const char *path, const json_t *v, void *dst,
	     const struct field *f)
{
	struct field e = { .kind = FK_ENUM, .size = sizeof(int),
			   .names = log_levels };
	int idx;
	int rc;

	rc = parse_field(c, path, v, &idx, &e);
	if (rc < 0)
		return rc;
	snprintf(dst, f->size, "%s", log_levels[idx]);
	return 0;
}

/*
 * Sections.
 */

static int
node_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	struct ls_config *cfg = base;

	(void)c;
	(void)path;
	(void)obj;
	/* Defaults that depend on the node; later sections may override them. */
	snprintf(cfg->control.socket, sizeof(cfg->control.socket),
		 "/run/lockstep/%s.sock", cfg->node_name);
	cfg->clock.sim.seed = cfg->node_id;
	snprintf(cfg->sync.shm, sizeof(cfg->sync.shm), "/dev/shm/lockstep-%s.fleettime",
		 cfg->node_name);
	snprintf(cfg->bridge.policy_file, sizeof(cfg->bridge.policy_file),
		 "/var/lib/lockstep/%s.policy.json", cfg->node_name);
	snprintf(cfg->control.peers_file, sizeof(cfg->control.peers_file),
		 "/var/lib/lockstep/%s.peers.json", cfg->node_name);
	return 0;
}

static const struct field node_fields[] = {
	F_STR("name", struct ls_config, node_name, 1, F_REQ | F_NAME),
	F_INT("id", struct ls_config, node_id, 1, UINT32_MAX, F_REQ),
};
static const struct schema node_schema = SCHEMA(node_fields, node_post);

static int
port_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	struct ls_conf_port *p = base;
	char kpath[LS_JSONV_PATH_LEN];
	char a[LS_ADDR_STRLEN], q[LS_ADDR_STRLEN];

	p->has_mac = json_object_get(obj, "mac") != NULL;
	if (p->role == LS_PORT_HOST) {
		/* the host's frames pass through; lockstepd speaks on the fabric side */
		if (p->ipv4.addr.family || p->ipv6.addr.family || p->gateway4.family ||
		    p->gateway6.family)
			return ls_jsonv_fail(&c->jv, path, "a host port has no addresses of its own");
		return 0;
	}
	if (p->ipv4.addr.family == 0 && p->ipv6.addr.family == 0)
		return ls_jsonv_fail(&c->jv, path, "needs at least one of ipv4, ipv6");
	if (p->gateway4.family != 0) {
		ls_jsonv_key(kpath, path, "gateway4");
		ls_addr_fmt(&p->gateway4, q, sizeof(q));
		if (p->ipv4.addr.family == 0)
			return ls_jsonv_fail(&c->jv, kpath, "set but the port has no ipv4");
		ls_addr_fmt(&p->ipv4.addr, a, sizeof(a));
		if (!ls_prefix_contains(&p->ipv4, &p->gateway4))
			return ls_jsonv_fail(&c->jv, kpath, "%s is not inside ipv4 %s/%u", q, a,
				    p->ipv4.plen);
		if (ls_addr_eq(&p->ipv4.addr, &p->gateway4))
			return ls_jsonv_fail(&c->jv, kpath, "%s is the port's own address", q);
	}
	if (p->gateway6.family != 0) {
		/* IPv6 next hops are usually link-local: no containment check. */
		ls_jsonv_key(kpath, path, "gateway6");
		ls_addr_fmt(&p->gateway6, q, sizeof(q));
		if (p->ipv6.addr.family == 0)
			return ls_jsonv_fail(&c->jv, kpath, "set but the port has no ipv6");
		if (ls_addr_eq(&p->ipv6.addr, &p->gateway6))
			return ls_jsonv_fail(&c->jv, kpath, "%s is the port's own address", q);
	}
	return 0;
}

/* Same order as enum ls_port_role. */
static const char *const port_roles[] = { "fabric", "host", NULL };

#define PORT struct ls_conf_port
static const struct field port_fields[] = {
	F_ENUM("role", PORT, role, port_roles),
	F_STR("name", PORT, name, 1, F_REQ | F_NAME),
	F_STR("dev", PORT, dev, 1, F_REQ),
	F_FUNC("mac", PORT, mac, fn_mac, 0),
	F_PREFIX("ipv4", PORT, ipv4, LS_AF_INET, 0),
	F_PREFIX("ipv6", PORT, ipv6, LS_AF_INET6, 0),
	F_ADDR("gateway4", PORT, gateway4, LS_AF_INET, 0),
	F_ADDR("gateway6", PORT, gateway6, LS_AF_INET6, 0),
	F_INT("lcore", PORT, lcore, -1, 1023, 0),
	F_INT("rx_desc", PORT, rx_desc, 64, 16384, F_POW2),
	F_INT("tx_desc", PORT, tx_desc, 64, 16384, F_POW2),
	F_INT("mtu", PORT, mtu, 576, 9216, 0),
	F_INT("vlan", PORT, vlan, 1, 4094, 0),
	F_BOOL("kernel_stamps", PORT, kernel_stamps),
};
#undef PORT
static const struct schema port_schema = SCHEMA(port_fields, port_post);

/* Length of the device name in devargs: "net_memif0,role=..." -> 10. */
static size_t
dev_name_len(const char *dev)
{
	return strcspn(dev, ",");
}

static int
fn_ports(struct pctx *c, const char *path, const json_t *v, void *dst,
	 const struct field *f)
{
	struct ls_conf_port *ports = dst;
	char ipath[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN];
	char q[LS_JSONV_QUOTE_MAX + 4], d[LS_JSONV_QUOTE_MAX + 4];
	size_t n = json_array_size(v), i, j;
	int rc;

	(void)f;
	for (i = 0; i < n; i++) {
		struct ls_conf_port *p = &ports[i];

		memset(p, 0, sizeof(*p));
		p->lcore = -1;
		p->rx_desc = p->tx_desc = 1024;
		p->mtu = 1500;
		p->kernel_stamps = true;
		ls_jsonv_index(ipath, path, i);
		rc = parse_object(c, ipath, json_array_get(v, i), &port_schema, p);
		if (rc < 0)
			return rc;
		for (j = 0; j < i; j++) {
			const struct ls_conf_port *o = &ports[j];
			size_t dl = dev_name_len(p->dev);

			if (strcmp(o->name, p->name) == 0)
				return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, ipath, "name"),
					    "duplicate port name \"%s\" (also %s[%zu])",
					    p->name, path, j);
			/* EAL probes a device once, whatever devargs follow */
			if (dev_name_len(o->dev) == dl &&
			    strncmp(o->dev, p->dev, dl) == 0) {
				snprintf(d, sizeof(d), "%.*s",
					 (int)(dl < LS_JSONV_QUOTE_MAX ? dl : LS_JSONV_QUOTE_MAX), p->dev);
				return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, ipath, "dev"),
					    "duplicate device \"%s\" (also %s[%zu])",
					    ls_jsonv_quote(q, sizeof(q), d), path, j);
			}
		}
		c->out->n_ports = (unsigned int)(i + 1);
	}
	return 0;
}

static int
peer_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	struct ls_conf_peer *p = base;
	const struct ls_conf_port *port;
	char kpath[LS_JSONV_PATH_LEN];
	int idx;

	p->has_mac = json_object_get(obj, "mac") != NULL;
	p->dscp = json_object_get(obj, "dscp") ? p->dscp : -1;   /* unset: the probe's */
	p->pcp = json_object_get(obj, "pcp") ? p->pcp : -1;
	if (p->port[0] == '\0') {
		if (c->cfg == NULL || c->cfg->n_ports == 0)
			return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "port"),
				    "no ports defined");
		/* default: the first port */
		snprintf(p->port, sizeof(p->port), "%s", c->cfg->ports[0].name);
	}
	idx = ls_config_port_index(c->cfg, p->port);
	if (idx < 0)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "port"),
			    "port \"%s\" not defined", p->port);
	port = &c->cfg->ports[idx];
	if ((p->addr.family == LS_AF_INET && port->ipv4.addr.family == 0) ||
	    (p->addr.family == LS_AF_INET6 && port->ipv6.addr.family == 0))
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "addr"),
			    "peer address family has no address on port \"%s\"",
			    p->port);
	return 0;
}

#define PEER struct ls_conf_peer
static const struct field peer_fields[] = {
	F_STR("name", PEER, name, 1, F_REQ | F_NAME),
	F_ADDR("addr", PEER, addr, 0, F_REQ),
	F_STR("port", PEER, port, 1, 0),
	F_INT("interval_us", PEER, interval_us, 100, 60000000, 0),
	F_INT("paths", PEER, paths, 1, LS_MAX_PATHS, 0),
	F_FUNC("mac", PEER, mac, fn_mac, 0),
	F_NUMBER("asym_ns", PEER, asym_ns, -1e9, 1e9),
	F_INT("dscp", PEER, dscp, 0, 63, 0),
	F_INT("pcp", PEER, pcp, 0, 7, 0),
};
#undef PEER
static const struct schema peer_schema = SCHEMA(peer_fields, peer_post);

static int
fn_peers(struct pctx *c, const char *path, const json_t *v, void *dst,
	 const struct field *f)
{
	struct ls_config *cfg = c->out;
	char ipath[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN];
	size_t n = json_array_size(v), i;
	json_t *seen;
	int rc = 0;

	(void)dst;
	(void)f;
	if (n == 0)
		return 0;
	cfg->peers = calloc(n, sizeof(*cfg->peers));
	if (cfg->peers == NULL) {
		ls_jsonv_fail(&c->jv, path, "out of memory");
		return -ENOMEM;
	}
	/* names seen so far -> index, in a jansson object (a hash table): a
	 * pairwise check was 134M compares at 16k peers */
	seen = json_object();
	if (seen == NULL)
		return ls_jsonv_fail(&c->jv, path, "out of memory");
	for (i = 0; i < n; i++) {
		struct ls_conf_peer *p = &cfg->peers[i];
		json_t *prev;

		ls_jsonv_index(ipath, path, i);
		rc = parse_object(c, ipath, json_array_get(v, i), &peer_schema, p);
		if (rc < 0)
			break;
		prev = json_object_get(seen, p->name);
		if (prev != NULL) {
			rc = ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, ipath, "name"),
					   "duplicate peer name \"%s\" (also %s[%zu])",
					   p->name, path, (size_t)json_integer_value(prev));
			break;
		}
		if (json_object_set_new(seen, p->name, json_integer((json_int_t)i)) != 0) {
			rc = ls_jsonv_fail(&c->jv, path, "out of memory");
			break;
		}
		cfg->n_peers = (unsigned int)(i + 1);
	}
	json_decref(seen);
	return rc < 0 ? rc : 0;
}

#define PROBE struct ls_conf_probe
static const struct field probe_fields[] = {
	F_INT("interval_us", PROBE, interval_us, 100, 60000000, 0),
	F_INT("paths", PROBE, paths, 1, LS_MAX_PATHS, 0),
	F_INT("dst_port", PROBE, dst_port, 1, 65535, 0),
	/* every path's source port (base + i) must stay a valid port */
	F_INT("src_port_base", PROBE, src_port_base, 1024,
	      65535 - LS_MAX_PATHS + 1, 0),
	F_INT("pair_spacing_ns", PROBE, pair_spacing_ns, 0, 1000000, 0),
	F_INT("jitter_pct", PROBE, jitter_pct, 0, 50, 0),
	F_INT("loss_timeout_us", PROBE, loss_timeout_us, 0, 60000000, 0),
	F_INT("ttl", PROBE, ttl, 1, 255, 0),
	F_INT("dscp", PROBE, dscp, 0, 63, 0),
	F_INT("pcp", PROBE, pcp, 0, 7, 0),
	F_INT("pad", PROBE, pad, 0, 1400, 0),
	F_INT("down_after", PROBE, down_after, 1, 1000, 0),
	F_INT("acquire_ms", PROBE, acquire_ms, 0, 600000, 0),
	F_INT("acquire_rate", PROBE, acquire_rate, 1, 16, 0),
};
#undef PROBE
static const struct schema probe_schema = SCHEMA(probe_fields, NULL);

/* Index 0 = ptp stores ntp_format = false. */
static const char *const ts_formats[] = { "ptp", "ntp", NULL };

#define REFL struct ls_conf_reflector
static const struct field reflector_fields[] = {
	F_BOOL("enabled", REFL, enabled),
	F_INT("rate_pps", REFL, rate_pps, 1, 100000000, 0),
	F_INT("burst", REFL, burst, 1, 1000000, 0),
	F_INT("max_sources", REFL, max_sources, 16, 1048576, 0),
	F_ENUM("timestamp_format", REFL, ntp_format, ts_formats),
};
#undef REFL
static const struct schema reflector_schema = SCHEMA(reflector_fields, NULL);

#define SIM struct ls_conf_simclock
static const struct field sim_fields[] = {
	F_INT("offset_ns", SIM, offset_ns, -1000000000000LL, 1000000000000LL, 0),
	F_NUMBER("drift_ppm", SIM, drift_ppm, -1000.0, 1000.0),
	F_NUMBER("wander_ns", SIM, wander_ns, 0.0, 1e6),
	F_INT("seed", SIM, seed, 0, INT64_MAX, 0),
};
#undef SIM
static const struct schema sim_schema = SCHEMA(sim_fields, NULL);

/* Same order as enum ls_clock_source. */
static const char *const clock_sources[] = { "auto", "tsc", "nic", "sim", NULL };

static int
clock_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	const struct ls_conf_clock *clk = base;
	char kpath[LS_JSONV_PATH_LEN];

	if (json_object_get(obj, "sim") != NULL && clk->source != LS_CLOCK_SIM)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "sim"),
			    "allowed only when source is \"sim\"");
	/* the trailer's stamps are on the host's TSC timeline, not a NIC's */
	if (clk->rx_trailer && clk->source != LS_CLOCK_SIM && clk->source != LS_CLOCK_TSC)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "rx_trailer"),
			    "needs source \"sim\" or \"tsc\" (its stamps are on this host's TSC timeline)");
	if (clk->tx_trailer && clk->source != LS_CLOCK_SIM && clk->source != LS_CLOCK_TSC)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "tx_trailer"),
			    "needs source \"sim\" or \"tsc\" (its instants are on this host's TSC timeline)");
	/* the NIC takes the instant in its own clock's units */
	if (clk->tx_sched && clk->source != LS_CLOCK_NIC)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "tx_sched"),
			    "needs source \"nic\" (the NIC sends on its own clock)");
	if (clk->tx_sched && clk->tx_trailer)
		return ls_jsonv_fail(&c->jv, ls_jsonv_key(kpath, path, "tx_sched"),
			    "not with tx_trailer (one sends on the NIC, the other in the lab)");
	return 0;
}

static const struct field clock_fields[] = {
	F_ENUM("source", struct ls_conf_clock, source, clock_sources),
	F_OBJ("sim", offsetof(struct ls_conf_clock, sim), sim_schema, 0),
	F_BOOL("rx_trailer", struct ls_conf_clock, rx_trailer),
	F_BOOL("tx_trailer", struct ls_conf_clock, tx_trailer),
	F_BOOL("tx_sched", struct ls_conf_clock, tx_sched),
	F_INT("tx_lead_ns", struct ls_conf_clock, tx_lead_ns, 1000, 1000000, 0),
};
static const struct schema clock_schema = SCHEMA(clock_fields, clock_post);

#define CTL struct ls_conf_control
static const struct field control_fields[] = {
	/* sizeof(sun_path) is 108 */
	F_STR("socket", CTL, socket, 1, 0),
	F_FUNC("mode", CTL, mode, fn_mode, 0),
	F_INT("max_clients", CTL, max_clients, 1, 1024, 0),
	F_INT("idle_timeout_ms", CTL, idle_timeout_ms, 100, 86400000, 0),
	F_STR("peers_file", CTL, peers_file, 0, 0),
};
#undef CTL
static const struct schema control_schema = SCHEMA(control_fields, NULL);

#define IDLE struct ls_conf_idle
static const struct field idle_fields[] = {
	F_BOOL("backoff", IDLE, backoff),
	F_INT("after_polls", IDLE, after_polls, 1, 1000000, 0),
	F_INT("sleep_us", IDLE, sleep_us, 1, 100000, 0),
};
#undef IDLE
static const struct schema idle_schema = SCHEMA(idle_fields, NULL);

/* capture.start names a file inside dir: it must not depend on the
 * daemon's working directory. */
static int
capture_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	const struct ls_conf_capture *cap = base;
	char kpath[LS_JSONV_PATH_LEN];

	(void)obj;
	ls_jsonv_key(kpath, path, "dir");
	if (cap->dir[0] != '/')
		return ls_jsonv_fail(&c->jv, kpath, "must be an absolute path");
	return 0;
}

#define CAP struct ls_conf_capture
static const struct field capture_fields[] = {
	F_INT("snaplen", CAP, snaplen, 64, 65535, 0),
	F_INT("max_bytes", CAP, max_bytes, 4096, 1LL << 40, 0),
	F_INT("ring_size", CAP, ring_size, 64, 1048576, F_POW2),
	F_STR("dir", CAP, dir, 1, 0),
};
#undef CAP
static const struct schema capture_schema = SCHEMA(capture_fields, capture_post);

static const struct field metrics_fields[] = {
	F_ADDR("address", struct ls_conf_metrics, address, 0, 0),
	F_INT("port", struct ls_conf_metrics, port, 0, 65535, 0),
};
static const struct schema metrics_schema = SCHEMA(metrics_fields, NULL);

static const struct field sync_fields[] = {
	F_BOOL("enabled", struct ls_conf_sync, enabled),
	F_INT("window_ms", struct ls_conf_sync, window_ms, 100, 600000, 0),
	F_INT("paths", struct ls_conf_sync, paths, 1, LS_MAX_PATHS, 0),
	F_INT("path_budget", struct ls_conf_sync, path_budget, 0, LS_MAX_PEERS * LS_MAX_PATHS, 0),
	F_INT("interval_ms", struct ls_conf_sync, interval_ms, 10, 60000, 0),
	F_INT("purity_tol_ns", struct ls_conf_sync, purity_tol_ns, 0, 1000000000, 0),
	F_INT("outlier_ns", struct ls_conf_sync, outlier_ns, 0, 1000000000, 0),
	F_INT("reference", struct ls_conf_sync, reference, 0, UINT32_MAX, 0),
	F_NUMBER("holdover_ppm", struct ls_conf_sync, holdover_ppm, 0.0, 1000.0),
	F_NUMBER("wander_ns", struct ls_conf_sync, wander_ns, 0.0, 1e6),
	F_NUMBER("asym_bound_ns", struct ls_conf_sync, asym_bound_ns, 0.0, 1e9),
	F_STR("shm", struct ls_conf_sync, shm, 0, 0),
	F_STR("chrony_sock", struct ls_conf_sync, chrony_sock, 0, 0),
	F_INT("chrony_offset_ns", struct ls_conf_sync, chrony_offset_ns,
	      -4000000000000000000LL, 4000000000000000000LL, 0),
};
static const struct schema sync_schema = SCHEMA(sync_fields, NULL);

static const struct field events_fields[] = {
	F_STR("file", struct ls_conf_events, file, 0, 0),
	F_INT("keep", struct ls_conf_events, keep, 16, 1000000, 0),
};
static const struct schema events_schema = SCHEMA(events_fields, NULL);

static const struct field log_fields[] = {
	F_FUNC("level", struct ls_config, log_level, fn_log_level, 0),
};
static const struct schema log_schema = SCHEMA(log_fields, NULL);

#define CFG struct ls_config
/* Dependency order: node (socket default, seed) first, ports before peers. */
static const struct field top_fields[] = {
	F_OBJ("node", 0, node_schema, F_REQ),
	F_ARRAY("ports", CFG, ports, 1, LS_MAX_PORTS, fn_ports, F_REQ),
	F_OBJ("probe", offsetof(CFG, probe), probe_schema, 0),
	F_ARRAY("peers", CFG, peers, 0, LS_MAX_PEERS, fn_peers, 0),
	F_OBJ("reflector", offsetof(CFG, reflector), reflector_schema, 0),
	F_OBJ("clock", offsetof(CFG, clock), clock_schema, 0),
	F_OBJ("control", offsetof(CFG, control), control_schema, 0),
	F_OBJ("idle", offsetof(CFG, idle), idle_schema, 0),
	F_OBJ("capture", offsetof(CFG, capture), capture_schema, 0),
	F_OBJ("sync", offsetof(CFG, sync), sync_schema, 0),
	F_OBJ("metrics", offsetof(CFG, metrics), metrics_schema, 0),
	F_OBJ("events", offsetof(CFG, events), events_schema, 0),
	F_OBJ("route", offsetof(CFG, route), ls_config_route_schema, 0),
	F_OBJ("links", offsetof(CFG, links), ls_config_links_schema, 0),
	F_OBJ("log", 0, log_schema, 0),
	F_OBJ("bridge", offsetof(CFG, bridge), ls_config_bridge_schema, 0),
	F_OBJ("pinglist", offsetof(CFG, pinglist), ls_config_pinglist_schema, 0),
};
#undef CFG

/* One peer object (the pinglist's fleet hosts). */
static int
peer_in(struct pctx *c, const char *path, const json_t *obj, struct ls_conf_peer *out)
{
	memset(out, 0, sizeof(*out));
	return parse_object(c, path, obj, &peer_schema, out);
}

/*
 * The largest probe (the first of a pair: base packet, lockstep TLV, sync
 * TLV, padding TLV) must fit every port's MTU it may leave by, or it is
 * dropped on the way and the path looks dead (issue 27 L9).
 */
static int
top_post(struct pctx *c, const char *path, const json_t *obj, void *base)
{
	const struct ls_config *cfg = base;
	unsigned int udp = 8 + LS_STAMP_BASE_LEN + LS_STAMP_TLV_HDR_LEN + LS_STAMP_LOCKSTEP_LEN +
			   (cfg->sync.enabled ? LS_STAMP_TLV_HDR_LEN + LS_STAMP_SYNC_LEN : 0) +
			   (cfg->probe.pad ? LS_STAMP_TLV_HDR_LEN + cfg->probe.pad : 0);

	(void)path;
	(void)obj;
	for (unsigned int i = 0; i < cfg->n_ports; i++) {
		const struct ls_conf_port *p = &cfg->ports[i];
		unsigned int ip = (p->ipv6.addr.family ? 40 : 20) + udp;

		if (p->role != LS_PORT_HOST && (p->ipv4.addr.family || p->ipv6.addr.family) &&
		    ip > p->mtu)
			return ls_jsonv_fail(&c->jv, "probe.pad", "%u makes %u-byte probes, over "
					     "ports[%u] (%s) mtu %u", cfg->probe.pad, ip, i,
					     p->name, p->mtu);
	}
	return cfg->pinglist.fleet[0] ? ls_config_pinglist_apply(c, peer_in) : 0;
}
static const struct schema top_schema = SCHEMA(top_fields, top_post);

/* Every default in one place (docs/config.md lists the same values). */
static void
set_defaults(struct ls_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->probe.interval_us = 10000;
	cfg->probe.paths = 4;
	cfg->probe.dst_port = 862;
	cfg->probe.src_port_base = 49152;
	cfg->probe.pair_spacing_ns = 0;
	cfg->probe.jitter_pct = 10;
	cfg->probe.loss_timeout_us = 0; /* the daemon resolves max(interval, 50 ms) */
	cfg->probe.ttl = 255;
	cfg->probe.dscp = 0;
	cfg->probe.pad = 0;
	cfg->probe.down_after = 3;
	cfg->probe.acquire_ms = 4000;
	cfg->probe.acquire_rate = 4; /* 4x for the first 4 s: see docs/sync.md */
	cfg->reflector.enabled = true;
	cfg->reflector.rate_pps = 20000;
	cfg->reflector.burst = 256;
	cfg->reflector.max_sources = 4096;
	cfg->reflector.ntp_format = false;
	cfg->clock.source = LS_CLOCK_AUTO;
	cfg->clock.tx_lead_ns = 20000;
	cfg->control.mode = 0660;
	cfg->control.max_clients = 16;
	cfg->control.idle_timeout_ms = 60000;
	cfg->idle.backoff = false;
	cfg->idle.after_polls = 256;
	cfg->idle.sleep_us = 100;
	cfg->capture.snaplen = 256;
	cfg->capture.max_bytes = 64ULL << 20;
	cfg->capture.ring_size = 4096;
	snprintf(cfg->capture.dir, sizeof(cfg->capture.dir), "/var/lib/lockstep/capture");
	ls_addr_parse("127.0.0.1", &cfg->metrics.address);
	cfg->events.keep = 4096;
	cfg->route = (struct ls_conf_route){.enabled = true, .refresh_s = 300, .traces_per_s = 20,
					    .max_ttl = 8};
	cfg->links.hot_us = 200;
	cfg->sync = (struct ls_conf_sync){.enabled = true, .window_ms = 2000, .paths = LS_MAX_PATHS,
					  .path_budget = 4096, .interval_ms = 250,
					  .purity_tol_ns = 200, .holdover_ppm = 1.0,
					  .wander_ns = 10.0}; /* shm: node_post */
	cfg->pinglist.k = 16;
	snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
	ls_config_bridge_defaults(&cfg->bridge);
	/* control.socket and clock.sim.seed follow the node: see node_post */
}

/*
 * Public API.
 */

int
ls_config_from_json(const json_t *root, const char *src, struct ls_config *cfg,
		    char *err, size_t errlen)
{
	struct pctx c = { .jv = { .src = src, .err = err, .errlen = errlen } };
	struct ls_config *tmp;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	memset(cfg, 0, sizeof(*cfg));
	if (root == NULL)
		return ls_jsonv_fail(&c.jv, NULL, "no JSON document");
	if (!json_is_object(root))
		return ls_jsonv_fail(&c.jv, NULL, "expected an object at the top level, got %s",
			    ls_jsonv_kind(root));
	/* ~4 KiB with the port array: heap, to stay friendly to small stacks */
	tmp = malloc(sizeof(*tmp));
	if (tmp == NULL) {
		ls_jsonv_fail(&c.jv, NULL, "out of memory");
		return -ENOMEM;
	}
	set_defaults(tmp);
	if (src != NULL)
		snprintf(tmp->file, sizeof(tmp->file), "%s", src);
	c.cfg = tmp;
	c.out = tmp;
	rc = parse_object(&c, "", root, &top_schema, tmp);
	if (rc < 0) {
		ls_config_free(tmp);
		free(tmp);
		return rc;
	}
	*cfg = *tmp;
	free(tmp);
	return 0;
}

int
ls_config_load(const char *path, struct ls_config *cfg, char *err, size_t errlen)
{
	const struct ls_jsonv jv = { .src = path, .err = err, .errlen = errlen };
	json_t *root = NULL;
	int rc;

	/* Failed, cfg is left empty; err always holds the reason (ls_jsonv_load
	 * writes it on every failure, ls_config_from_json clears or writes it). */
	memset(cfg, 0, sizeof(*cfg));
	rc = ls_jsonv_load(&jv, sizeof(cfg->file) - 1, &root);
	if (rc == 0)
		rc = ls_config_from_json(root, path, cfg, err, errlen);
	json_decref(root);
	return rc;
}

int
ls_config_parse_peer(const json_t *obj, const struct ls_config *cfg, const char *where,
		     struct ls_conf_peer *out, char *err, size_t errlen)
{
	struct pctx c = { .jv = { .src = NULL, .err = err, .errlen = errlen }, .cfg = cfg };
	struct ls_conf_peer p;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (obj == NULL)
		return ls_jsonv_fail(&c.jv, where, "missing peer object");
	rc = parse_object(&c, where != NULL ? where : "", obj, &peer_schema, &p);
	if (rc < 0)
		return rc;
	*out = p;
	return 0;
}

void
ls_config_free(struct ls_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->peers);
	cfg->peers = NULL;
	cfg->n_peers = 0;
	free(cfg->bridge.policy);
	cfg->bridge.policy = NULL;
}

const char *
ls_clock_source_name(enum ls_clock_source s)
{
	if ((unsigned int)s < LS_ARRAY_SIZE(clock_sources) - 1)
		return clock_sources[s];
	return "?";
}

int
ls_config_port_index(const struct ls_config *cfg, const char *name)
{
	if (cfg == NULL || name == NULL)
		return -1;
	for (unsigned int i = 0; i < cfg->n_ports && i < LS_MAX_PORTS; i++)
		if (strcmp(cfg->ports[i].name, name) == 0)
			return (int)i;
	return -1;
}
