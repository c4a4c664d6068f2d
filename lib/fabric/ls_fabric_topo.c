/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fabric topology: turn a JSON document (docs/fabric.md) into struct
 * ls_fabric, or reject it with exactly one line "FILE: KEY: REASON".
 *
 * Why it is built this way:
 *  - Same conventions as lib/config: unknown keys are rejected (in file
 *    order, so the first typo is the one reported), every key is type and
 *    range checked against a table, and the key path in a message is the
 *    one a user would search the file for ("links[3].b", "hosts[0].mtu").
 *  - Link parameters come in layers (built-in, defaults, the link, each
 *    direction), all validated by one table: ls_fabric_params.c.
 *  - The whole fabric is validated before anyone may use it: names and
 *    addresses unique, link ends exist, hosts hang off leaves, every leaf
 *    has an uplink when there are spines, every host can reach every other
 *    host, and every switch has an address of each family the hosts use
 *    (it is the source of the ICMP errors the emulator generates). A fabric
 *    that loads is one the router and the emulator never have to second
 *    guess (ls_fabric_check.c).
 *  - Node and link numbering is fixed by file order (switches, then hosts;
 *    switch links, then one link per host), so channel ids, and with them
 *    ECMP choices and counters, are reproducible from the file alone.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_jhash.h>

#include "ls_fabric_priv.h"

#define MAX_CONV_MS 3600000LL            /* 1 hour */

/* Allowed keys per object kind; parameter keys are allowed where noted. */
static const char *const top_keys[] = {
	"defaults", "convergence_ms", "switches", "links", "hosts", NULL
};
static const char *const switch_keys[] = {
	"name", "role", "ipv4", "ipv6", "mac", "seed", NULL
};
static const char *const link_keys[] = { "name", "a", "b", "ab", "ba", NULL };
static const char *const host_keys[] = {
	"name", "leaf", "ipv4", "ipv6", "mac", "dev", "up", "down", NULL
};

/*
 * A string key. name: a node or link name (charset, 1..LS_FAB_NAME-1).
 * Missing and not required: *out stays NULL.
 */
static int
get_str(struct ls_jsonv *c, const char *parent, const json_t *obj, const char *key,
	bool required, size_t maxlen, bool name, const char **out)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const json_t *v = json_object_get(obj, key);
	const char *s;
	size_t len;

	*out = NULL;
	ls_jsonv_key(kpath, parent, key);
	if (v == NULL)
		return required ? ls_jsonv_fail(c, kpath, "required key missing") : 0;
	if (!json_is_string(v))
		return ls_jsonv_fail(c, kpath, "expected string, got %s", ls_jsonv_kind(v));
	s = json_string_value(v);
	len = strlen(s);
	if (len != json_string_length(v))
		return ls_jsonv_fail(c, kpath, "must not contain NUL characters");
	if (len == 0 && name)
		return ls_jsonv_fail(c, kpath, "must not be empty");
	if (len > maxlen)
		return ls_jsonv_fail(c, kpath, "must be at most %zu characters long, got %zu",
			    maxlen, len);
	if (name)
		for (size_t i = 0; i < len; i++)
			if (!ls_jsonv_name_char(s[i]))
				return ls_jsonv_fail(c, kpath,
					    "invalid character in \"%s\" (allowed: A-Z a-z 0-9 _ . -)",
					    ls_jsonv_quote(q, sizeof(q), s));
	*out = s;
	return 0;
}

/* An optional address key: *s NULL when absent; else kpath is its path and q
 * (LS_JSONV_QUOTE_MAX + 4 bytes) its value quoted, for messages. */
static int
get_quoted(struct ls_jsonv *c, const char *parent, const json_t *obj, const char *key,
	   char *kpath, char *q, const char **s)
{
	int rc = get_str(c, parent, obj, key, false, 255, false, s);

	if (rc < 0 || *s == NULL)
		return rc;
	ls_jsonv_key(kpath, parent, key);
	ls_jsonv_quote(q, LS_JSONV_QUOTE_MAX + 4, *s);
	return 0;
}

/* An address of the family asked for (what: "address", "prefix"), unicast. */
static int
check_unicast(struct ls_jsonv *c, const char *kpath, const char *q, const struct ls_addr *a,
	      int family, const char *what)
{
	if (a->family != family)
		return ls_jsonv_fail(c, kpath, "must be an IPv%d %s, got \"%s\"", family, what, q);
	if (!ls_addr_is_unicast(a))
		return ls_jsonv_fail(c, kpath, "must be a unicast address, got \"%s\"", q);
	return 0;
}

/*
 * Host part of a prefix all zeros (the network, or IPv6 subnet-router
 * anycast) or, for IPv4, all ones (the broadcast). /31, /32, /127, /128 have
 * no such addresses.
 */
static int
host_part(const struct ls_prefix *p)
{
	unsigned int bits = p->addr.family == LS_AF_INET ? 32 : 128;
	bool zeros = true, ones = true;

	if (p->plen + 1U >= bits)
		return 0;
	for (unsigned int i = p->plen; i < bits; i++) {
		bool bit = (p->addr.a[i / 8] >> (7 - i % 8)) & 1;

		zeros = zeros && !bit;
		ones = ones && bit;
	}
	if (zeros)
		return -1;
	if (ones && p->addr.family == LS_AF_INET)
		return 1;
	return 0;
}

/* An address key of the given family: a switch's plain unicast address
 * (!prefix), or a host interface's "addr/len", a usable host in its prefix. */
static int
get_ip(struct ls_jsonv *c, const char *parent, const json_t *obj, const char *key,
       int family, bool prefix, struct ls_prefix *out)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *s;
	int rc, hp;

	rc = get_quoted(c, parent, obj, key, kpath, q, &s);
	if (rc < 0 || s == NULL)
		return rc;
	if (!prefix) {
		if (ls_addr_parse(s, &out->addr) < 0)
			return ls_jsonv_fail(c, kpath, "not an IP address: \"%s\"", q);
		return check_unicast(c, kpath, q, &out->addr, family, "address");
	}
	/* a bare address would be a /32: almost always a forgotten length */
	if (strchr(s, '/') == NULL || ls_prefix_parse(s, out) < 0)
		return ls_jsonv_fail(c, kpath, "not an IPv%d prefix (%s): \"%s\"", family,
			    family == LS_AF_INET ? "a.b.c.d/len" : "x::y/len", q);
	rc = check_unicast(c, kpath, q, &out->addr, family, "prefix");
	if (rc < 0)
		return rc;
	hp = host_part(out);
	if (hp < 0)
		return ls_jsonv_fail(c, kpath,
			    "\"%s\" is the network address of its prefix, not a host in it", q);
	if (hp > 0)
		return ls_jsonv_fail(c, kpath,
			    "\"%s\" is the broadcast address of its prefix, not a host in it", q);
	return 0;
}

/* A switch address, into *out (left as is when the key is absent). */
static int
get_addr(struct ls_jsonv *c, const char *parent, const json_t *obj, const char *key,
	 int family, struct ls_addr *out)
{
	struct ls_prefix p = { .addr = *out };
	int rc = get_ip(c, parent, obj, key, family, false, &p);

	*out = p.addr;
	return rc;
}

static int
get_mac(struct ls_jsonv *c, const char *parent, const json_t *obj, struct ls_mac *m,
	bool *found)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *s;
	int rc;

	*found = false;
	rc = get_str(c, parent, obj, "mac", false, 255, false, &s);
	if (rc < 0 || s == NULL)
		return rc;
	ls_jsonv_key(kpath, parent, "mac");
	ls_jsonv_quote(q, sizeof(q), s);
	if (ls_mac_parse(s, m) < 0)
		return ls_jsonv_fail(c, kpath, "not a MAC address (aa:bb:cc:dd:ee:ff): \"%s\"", q);
	if (m->b[0] & 0x01)
		return ls_jsonv_fail(c, kpath, "must be a unicast MAC, got \"%s\"", q);
	if ((m->b[0] | m->b[1] | m->b[2] | m->b[3] | m->b[4] | m->b[5]) == 0)
		return ls_jsonv_fail(c, kpath, "must not be all zeros");
	*found = true;
	return 0;
}

/* Array at the top level: missing is empty unless required. */
static int
get_array(struct ls_jsonv *c, const json_t *root, const char *key, bool required,
	  const json_t **out)
{
	const json_t *v = json_object_get(root, key);

	*out = v;
	if (v == NULL)
		return required ? ls_jsonv_fail(c, key, "required key missing") : 0;
	if (!json_is_array(v))
		return ls_jsonv_fail(c, key, "expected array, got %s", ls_jsonv_kind(v));
	if (required && json_array_size(v) == 0)
		return ls_jsonv_fail(c, key, "must not be empty");
	return 0;
}

/* An address must not be used twice anywhere (switches and hosts). */
static int
check_addr_unique(struct ls_jsonv *c, const struct ls_fabric *f, uint16_t self,
		  const struct ls_addr *a, const char *kpath)
{
	char abuf[LS_ADDR_STRLEN];

	if (a->family == 0)
		return 0;
	for (uint16_t j = 0; j < self; j++) {
		const struct ls_fab_node *o = &f->nodes[j];

		if ((o->addr4.family != 0 && ls_addr_eq(&o->addr4, a)) ||
		    (o->addr6.family != 0 && ls_addr_eq(&o->addr6, a)))
			return ls_jsonv_fail(c, kpath, "address %s already used by \"%s\"",
				    ls_addr_fmt(a, abuf, sizeof(abuf)), o->name);
	}
	return 0;
}

static int
check_mac_unique(struct ls_jsonv *c, const struct ls_fabric *f, uint16_t self,
		 const char *parent)
{
	char kpath[LS_JSONV_PATH_LEN], mbuf[LS_MAC_STRLEN];
	const struct ls_fab_node *n = &f->nodes[self];

	for (uint16_t j = 0; j < self; j++) {
		const struct ls_fab_node *o = &f->nodes[j];

		if ((o->kind == LS_FAB_SWITCH || o->mac_known) &&
		    memcmp(o->mac.b, n->mac.b, 6) == 0)
			return ls_jsonv_fail(c, ls_jsonv_key(kpath, parent, "mac"),
				    "MAC %s already used by \"%s\"",
				    ls_mac_fmt(&n->mac, mbuf, sizeof(mbuf)), o->name);
	}
	return 0;
}

static int
check_node_name(struct ls_jsonv *c, const struct ls_fabric *f, uint16_t self,
		const char *parent)
{
	char kpath[LS_JSONV_PATH_LEN], opath[LS_JSONV_PATH_LEN];

	for (uint16_t j = 0; j < self; j++)
		if (strcmp(f->nodes[j].name, f->nodes[self].name) == 0)
			return ls_jsonv_fail(c, ls_jsonv_key(kpath, parent, "name"),
				    "duplicate name \"%s\" (also %s)", f->nodes[self].name,
				    ls_fab_node_path(f, j, opath));
	return 0;
}

static int
set_link_name(struct ls_jsonv *c, struct ls_fabric *f, uint16_t li, const char *parent,
	      const char *given, const char *a, const char *b, const char *const *link_src)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4], def[2 * LS_FAB_NAME + 2];
	char *dst = f->link_names[li];

	if (given != NULL) {
		snprintf(dst, LS_FAB_NAME, "%s", given);
	} else {
		snprintf(def, sizeof(def), "%s-%s", a, b);
		if (strlen(def) >= LS_FAB_NAME)
			return ls_jsonv_fail(c, parent,
				    "default link name \"%s\" is longer than %d characters: set \"name\"",
				    ls_jsonv_quote(q, sizeof(q), def), LS_FAB_NAME - 1);
		memcpy(dst, def, strlen(def) + 1);
	}
	for (uint16_t j = 0; j < li; j++)
		if (strcmp(f->link_names[j], dst) == 0)
			return ls_jsonv_fail(c, given != NULL ? ls_jsonv_key(kpath, parent, "name") : parent,
				    "duplicate link name \"%s\" (also %s)", dst, link_src[j]);
	return 0;
}

/* What every node starts with: only known keys, its kind, a unique name.
 * Hosts may carry link parameter keys (for their host link). */
static int
node_begin(struct ls_jsonv *c, struct ls_fabric *f, uint16_t idx, const char *path,
	   const json_t *obj, const char *const *keys, enum ls_fab_kind kind)
{
	struct ls_fab_node *n = &f->nodes[idx];
	const char *name;
	int rc;

	rc = ls_fab_check_keys(c, path, obj, keys, kind == LS_FAB_HOST);
	if (rc < 0)
		return rc;
	n->kind = kind;
	rc = get_str(c, path, obj, "name", true, LS_FAB_NAME - 1, true, &name);
	if (rc < 0)
		return rc;
	snprintf(n->name, sizeof(n->name), "%s", name);
	return check_node_name(c, f, idx, path);
}

/* Parse switches[i] into nodes[i]. */
static int
parse_switch(struct ls_jsonv *c, struct ls_fabric *f, uint16_t i, const json_t *obj)
{
	struct ls_fab_node *n = &f->nodes[i];
	char path[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *role;
	const json_t *v;
	int rc;

	snprintf(path, sizeof(path), "switches[%u]", (unsigned int)i);
	rc = node_begin(c, f, i, path, obj, switch_keys, LS_FAB_SWITCH);
	if (rc < 0)
		return rc;
	rc = get_str(c, path, obj, "role", true, 255, false, &role);
	if (rc < 0)
		return rc;
	if (strcmp(role, "leaf") != 0 && strcmp(role, "spine") != 0)
		return ls_jsonv_fail(c, ls_jsonv_key(kpath, path, "role"),
			    "must be one of \"leaf\", \"spine\", got \"%s\"",
			    ls_jsonv_quote(q, sizeof(q), role));
	snprintf(n->role, sizeof(n->role), "%s", role);
	rc = get_addr(c, path, obj, "ipv4", LS_AF_INET, &n->addr4);
	if (rc == 0)
		rc = check_addr_unique(c, f, i, &n->addr4, ls_jsonv_key(kpath, path, "ipv4"));
	if (rc == 0)
		rc = get_addr(c, path, obj, "ipv6", LS_AF_INET6, &n->addr6);
	if (rc == 0)
		rc = check_addr_unique(c, f, i, &n->addr6, ls_jsonv_key(kpath, path, "ipv6"));
	if (rc == 0)
		rc = get_mac(c, path, obj, &n->mac, &n->mac_known);
	if (rc < 0)
		return rc;
	if (!n->mac_known) {
		/* locally administered, recognisable, unique per index */
		n->mac = (struct ls_mac){ { 0x02, 0xfa, 0x00, 0x00,
					    (uint8_t)((i + 1) >> 8), (uint8_t)(i + 1) } };
	}
	/* a switch's MAC is always known (it is ours); hosts use the flag */
	n->mac_known = true;
	rc = check_mac_unique(c, f, i, path);
	if (rc < 0)
		return rc;
	v = json_object_get(obj, "seed");
	if (v != NULL) {
		json_int_t s;

		ls_jsonv_key(kpath, path, "seed");
		if (!json_is_integer(v))
			return ls_jsonv_fail(c, kpath, "expected integer, got %s", ls_jsonv_kind(v));
		s = json_integer_value(v);
		if (s < 0 || s > (json_int_t)UINT32_MAX)
			return ls_jsonv_fail(c, kpath, "must be between 0 and %u, got %lld",
				    UINT32_MAX, (long long)s);
		n->seed = (uint32_t)s;
	} else {
		/*
		 * Distinct per switch so that consecutive switches do not make
		 * the same choice (ECMP polarization); from the name alone so
		 * that it survives reordering the file.
		 */
		n->seed = rte_jhash(n->name, (uint32_t)strlen(n->name), 0x6c737466u);
	}
	return 0;
}

/* Index of the node with this name among the first n, or -1. */
static int
find_node(const struct ls_fabric *f, uint16_t n, const char *name)
{
	for (uint16_t j = 0; j < n; j++)
		if (strcmp(f->nodes[j].name, name) == 0)
			return j;
	return -1;
}

/* Resolve a key naming a switch (links[i].a / .b, hosts[i].leaf). */
static int
switch_ref(struct ls_jsonv *c, struct ls_fabric *f, const char *path, const json_t *obj,
	 const char *key, uint16_t *out)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *s;
	int rc, j;

	rc = get_str(c, path, obj, key, true, 255, false, &s);
	if (rc < 0)
		return rc;
	ls_jsonv_key(kpath, path, key);
	j = find_node(f, f->n_switches, s);
	if (j < 0)
		return ls_jsonv_fail(c, kpath, "no switch named \"%s\"", ls_jsonv_quote(q, sizeof(q), s));
	*out = (uint16_t)j;
	return 0;
}

static void
chan_init(struct ls_fabric *f, uint16_t id, uint16_t link, uint16_t from, uint16_t to,
	  const struct ls_fab_chan_params *p)
{
	struct ls_fab_chan *ch = &f->chans[id];

	ch->id = id;
	ch->link = link;
	ch->from = from;
	ch->to = to;
	ch->p = *p;
	ch->up = true;
	ch->route_up = true;
	ch->route_at_ns = 0;
	/* per-channel loss stream: reproducible from the file alone */
	ch->rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1) ^ 0x6c6f7373ULL;
}

static int
parse_host(struct ls_jsonv *c, struct ls_fabric *f, uint16_t hi, uint16_t li,
	   const json_t *obj, const struct ls_fab_chan_params *base,
	   const char *base_path, const char *const *link_src)
{
	uint16_t idx = (uint16_t)(f->n_switches + hi);
	struct ls_fab_node *n = &f->nodes[idx];
	char path[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN];
	struct ls_fab_chan_params p[2];
	struct ls_prefix p4, p6;
	const char *dev = NULL;
	uint16_t l;
	int rc;

	snprintf(path, sizeof(path), "hosts[%u]", (unsigned int)hi);
	rc = node_begin(c, f, idx, path, obj, host_keys, LS_FAB_HOST);
	if (rc == 0)
		rc = switch_ref(c, f, path, obj, "leaf", &l);
	if (rc < 0)
		return rc;
	if (strcmp(f->nodes[l].role, "leaf") != 0)
		return ls_jsonv_fail(c, ls_jsonv_key(kpath, path, "leaf"),
			    "\"%s\" is a %s, hosts attach to leaves",
			    f->nodes[l].name, f->nodes[l].role);
	n->leaf = l;

	memset(&p4, 0, sizeof(p4));
	memset(&p6, 0, sizeof(p6));
	rc = get_ip(c, path, obj, "ipv4", LS_AF_INET, true, &p4);
	if (rc == 0)
		rc = check_addr_unique(c, f, idx, &p4.addr, ls_jsonv_key(kpath, path, "ipv4"));
	if (rc == 0)
		rc = get_ip(c, path, obj, "ipv6", LS_AF_INET6, true, &p6);
	if (rc == 0)
		rc = check_addr_unique(c, f, idx, &p6.addr, ls_jsonv_key(kpath, path, "ipv6"));
	if (rc < 0)
		return rc;
	if (p4.addr.family == 0 && p6.addr.family == 0)
		return ls_jsonv_fail(c, path, "needs an address: \"ipv4\" or \"ipv6\" (or both)");
	n->addr4 = p4.addr;
	n->plen4 = p4.addr.family != 0 ? p4.plen : 0;
	n->addr6 = p6.addr;
	n->plen6 = p6.addr.family != 0 ? p6.plen : 0;
	rc = get_mac(c, path, obj, &n->mac, &n->mac_known);
	if (rc == 0 && n->mac_known)
		rc = check_mac_unique(c, f, idx, path);
	if (rc == 0)
		rc = get_str(c, path, obj, "dev", false, sizeof(n->dev) - 1, false, &dev);
	if (rc < 0)
		return rc;
	if (dev != NULL)
		snprintf(n->dev, sizeof(n->dev), "%s", dev);

	rc = ls_fab_link_params(c, path, obj, base, base_path, "up", "down", p);
	if (rc < 0)
		return rc;
	rc = set_link_name(c, f, li, path, NULL, n->name, f->nodes[l].name, link_src);
	if (rc < 0)
		return rc;
	n->up_chan = (uint16_t)(2 * li);
	n->down_chan = (uint16_t)(2 * li + 1);
	chan_init(f, n->up_chan, li, idx, l, &p[0]);
	chan_init(f, n->down_chan, li, l, idx, &p[1]);
	ls_fab_addr_add(f, &n->addr4, idx);
	ls_fab_addr_add(f, &n->addr6, idx);
	return 0;
}

static int
parse_convergence(struct ls_jsonv *c, const json_t *root, struct ls_fabric *f)
{
	const json_t *v = json_object_get(root, "convergence_ms");
	json_int_t ms;

	if (v == NULL)
		return 0;
	if (!json_is_integer(v))
		return ls_jsonv_fail(c, "convergence_ms", "expected integer, got %s",
			    ls_jsonv_kind(v));
	ms = json_integer_value(v);
	if (ms < 0 || ms > MAX_CONV_MS)
		return ls_jsonv_fail(c, "convergence_ms", "must be between 0 and %lld, got %lld",
			    MAX_CONV_MS, (long long)ms);
	f->convergence_ns = (uint64_t)ms * 1000000ULL;
	return 0;
}

/* Numbering (switches, then hosts; switch links, then one link per host) and
 * the arrays it sizes. *link_src gets a "links[i]"/"hosts[i]" label per
 * link, for duplicate-name messages, all in one buffer at (*link_src)[0]. */
static int
alloc_fabric(struct ls_jsonv *c, struct ls_fabric *f, size_t n_sw, size_t n_l, size_t n_h,
	     const char ***link_src)
{
	static const size_t lab = 24;
	char *labels;

	if (n_sw + n_h > LS_FAB_MAX_NODES)
		return ls_jsonv_fail(c, "hosts", "too many nodes: %zu switches + %zu hosts, at most %d",
			    n_sw, n_h, LS_FAB_MAX_NODES);
	if (n_l + n_h > LS_FAB_MAX_CHANS / 2)
		return ls_jsonv_fail(c, "links", "too many links: %zu + %zu host links, at most %d",
			    n_l, n_h, LS_FAB_MAX_CHANS / 2);
	f->n_switches = (uint16_t)n_sw;
	f->n_nodes = (uint16_t)(n_sw + n_h);
	f->n_links = (uint16_t)(n_l + n_h);
	f->n_chans = (uint16_t)(2 * f->n_links);
	f->chans = calloc(f->n_chans, sizeof(*f->chans));
	f->routes = calloc((size_t)f->n_nodes * f->n_nodes, sizeof(*f->routes));
	*link_src = calloc(f->n_links, sizeof(**link_src));
	if (f->chans == NULL || f->routes == NULL || *link_src == NULL)
		goto oom;
	labels = calloc(f->n_links, lab);
	if (labels == NULL)
		goto oom;
	for (size_t i = 0; i < f->n_links; i++) {
		if (i < n_l)
			snprintf(labels + i * lab, lab, "links[%zu]", i);
		else
			snprintf(labels + i * lab, lab, "hosts[%zu]", i - n_l);
		(*link_src)[i] = labels + i * lab;
	}
	return 0;
oom:
	ls_jsonv_fail(c, NULL, "out of memory");
	return -ENOMEM;
}

/* Parse links[i] into link i and its channels 2i (a -> b) and 2i + 1. */
static int
parse_link(struct ls_jsonv *c, struct ls_fabric *f, size_t i, const json_t *obj,
	   const struct ls_fab_chan_params *dl, const char *dl_bm, const char *const *link_src)
{
	char path[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN];
	struct ls_fab_chan_params p[2];
	const char *name;
	uint16_t a, b;
	int rc;

	snprintf(path, sizeof(path), "links[%zu]", i);
	rc = ls_fab_check_keys(c, path, obj, link_keys, true);
	if (rc == 0)
		rc = get_str(c, path, obj, "name", false, LS_FAB_NAME - 1, true, &name);
	if (rc == 0)
		rc = switch_ref(c, f, path, obj, "a", &a);
	if (rc == 0)
		rc = switch_ref(c, f, path, obj, "b", &b);
	if (rc < 0)
		return rc;
	if (a == b)
		return ls_jsonv_fail(c, ls_jsonv_key(kpath, path, "b"),
				     "same switch as \"a\" (\"%s\"): a link to itself",
				     f->nodes[a].name);
	rc = ls_fab_link_params(c, path, obj, dl, dl_bm, "ab", "ba", p);
	if (rc == 0)
		rc = set_link_name(c, f, (uint16_t)i, path, name, f->nodes[a].name,
				   f->nodes[b].name, link_src);
	if (rc < 0)
		return rc;
	chan_init(f, (uint16_t)(2 * i), (uint16_t)i, a, b, &p[0]);
	chan_init(f, (uint16_t)(2 * i + 1), (uint16_t)i, b, a, &p[1]);
	return 0;
}

static int
build(struct ls_jsonv *c, const json_t *root, struct ls_fabric *f)
{
	struct ls_fab_chan_params dl, dh;
	char dl_bm[LS_FAB_BM_LEN] = "", dh_bm[LS_FAB_BM_LEN] = "";
	const char **link_src = NULL;
	const json_t *switches, *links, *hosts;
	size_t n_sw, n_l, n_h;
	int rc;

	rc = ls_fab_check_keys(c, "", root, top_keys, false);
	if (rc == 0)
		rc = ls_fab_defaults(c, root, &dl, dl_bm, &dh, dh_bm);
	if (rc == 0)
		rc = parse_convergence(c, root, f);
	if (rc == 0)
		rc = get_array(c, root, "switches", true, &switches);
	if (rc == 0)
		rc = get_array(c, root, "links", false, &links);
	if (rc == 0)
		rc = get_array(c, root, "hosts", true, &hosts);
	if (rc < 0)
		return rc;
	n_sw = json_array_size(switches);
	n_l = links != NULL ? json_array_size(links) : 0;
	n_h = json_array_size(hosts);
	rc = alloc_fabric(c, f, n_sw, n_l, n_h, &link_src);
	for (size_t i = 0; rc == 0 && i < n_sw; i++)
		rc = parse_switch(c, f, (uint16_t)i, json_array_get(switches, i));
	for (size_t i = 0; rc == 0 && i < n_l; i++)
		rc = parse_link(c, f, i, json_array_get(links, i), &dl, dl_bm, link_src);
	for (size_t i = 0; rc == 0 && i < n_h; i++)
		rc = parse_host(c, f, (uint16_t)i, (uint16_t)(n_l + i), json_array_get(hosts, i),
				&dh, dh_bm, link_src);
	if (rc == 0)
		rc = ls_fab_check(c, f, (uint16_t)n_l);
	if (rc == 0) {
		f->route_next_ns = UINT64_MAX;
		ls_fab_routes_compute(f);
	}
	if (link_src != NULL) {
		free((void *)(uintptr_t)link_src[0]);
		free(link_src);
	}
	return rc;
}

int
ls_fab_from_json(const json_t *root, const char *src, struct ls_fabric **out,
		 char *err, size_t errlen)
{
	struct ls_jsonv c = { .src = src, .err = err, .errlen = errlen };
	struct ls_fabric *f;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (out == NULL)
		return ls_jsonv_fail(&c, NULL, "no output pointer");
	*out = NULL;
	if (root == NULL)
		return ls_jsonv_fail(&c, NULL, "no JSON document");
	/* large (nodes, link names) but mostly untouched: calloc keeps it lazy */
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		ls_jsonv_fail(&c, NULL, "out of memory");
		return -ENOMEM;
	}
	if (src != NULL)
		snprintf(f->file, sizeof(f->file), "%s", src);
	rc = build(&c, root, f);
	if (rc < 0) {
		ls_fab_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

int
ls_fab_load(const char *file, struct ls_fabric **out, char *err, size_t errlen)
{
	const struct ls_jsonv jv = { .src = file, .err = err, .errlen = errlen };
	json_t *root;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (out != NULL)
		*out = NULL;
	rc = ls_jsonv_load(&jv, sizeof(((struct ls_fabric *)0)->file) - 1, &root);
	if (rc < 0)
		return rc;
	rc = ls_fab_from_json(root, file, out, err, errlen);
	json_decref(root);
	return rc;
}

void
ls_fab_free(struct ls_fabric *f)
{
	if (f == NULL)
		return;
	free(f->chans);
	free(f->routes);
	free(f);
}

int
ls_fab_node_find(const struct ls_fabric *f, const char *name)
{
	if (f == NULL || name == NULL)
		return -1;
	return find_node(f, f->n_nodes, name);
}

int
ls_fab_link_find(const struct ls_fabric *f, const char *name)
{
	if (f == NULL || name == NULL)
		return -1;
	for (uint16_t i = 0; i < f->n_links; i++)
		if (strcmp(f->link_names[i], name) == 0)
			return i;
	return -1;
}
