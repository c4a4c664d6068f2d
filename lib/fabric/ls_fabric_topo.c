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
 *  - Link parameters come in layers: built-in defaults, "defaults.link"
 *    (and "defaults.host_link" on top of it for host links), the link's own
 *    keys, then the per-direction object ("ab"/"ba", for hosts "up"/"down").
 *    One table describes the parameter keys and one function applies a
 *    layer, so every layer is validated the same way. The rule that relates
 *    two keys (buffer >= mtu) is checked on the merged result and reported
 *    at the deepest layer that set either key: that is where the fix goes.
 *  - The whole fabric is validated before anyone may use it: names and
 *    addresses unique, link ends exist, hosts hang off leaves, every leaf
 *    has an uplink when there are spines, every host can reach every other
 *    host, and every switch has an address of each family the hosts use
 *    (it is the source of the ICMP errors the emulator generates). A fabric
 *    that loads is one the router and the emulator never have to second
 *    guess.
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

#include "ls_fabric.h"
#include "ls_jsonv.h"

/* Built-in link parameters: a 10 Gb/s link with 1 us of cable and switch. */
#define DEF_DELAY_NS 1000ULL
#define DEF_RATE_BPS 10000000000ULL
#define DEF_BUFFER 1048576U
#define DEF_ECN 131072U
#define DEF_MTU 9000U

#define MAX_DELAY_NS 10000000000ULL      /* 10 s: longer is a typo */
#define MAX_RATE_BPS 10000000000000ULL   /* 10 Tb/s keeps the link math in 64 bits */
#define MAX_CONV_MS 3600000LL            /* 1 hour */



/*
 * Link parameter keys: one table for every layer. Integers may be written
 * in exponent form ("rate_bps": 1e11) as long as the value is whole: line
 * rates are unreadable otherwise.
 */
enum pkind { PK_U64, PK_U32, PK_U16, PK_DBL };

struct pfield {
	const char *key;
	enum pkind kind;
	size_t off;
	double min, max;
};

#define PF(k, kind, m, lo, hi) \
	{ (k), (kind), offsetof(struct ls_fab_chan_params, m), (lo), (hi) }

static const struct pfield pfields[] = {
	PF("delay_ns", PK_U64, delay_ns, 0, (double)MAX_DELAY_NS),
	PF("rate_bps", PK_U64, rate_bps, 1, (double)MAX_RATE_BPS),
	PF("buffer_bytes", PK_U32, buffer_bytes, 0, 4294967295.0),
	PF("ecn_bytes", PK_U32, ecn_bytes, 0, 4294967295.0),
	PF("loss", PK_DBL, loss, 0, 1),
	PF("mtu", PK_U16, mtu, 68, 65535),
};

/* Allowed keys per object kind; parameter keys are allowed where noted. */
static const char *const top_keys[] = {
	"defaults", "convergence_ms", "switches", "links", "hosts", NULL
};
static const char *const defaults_keys[] = { "link", "host_link", NULL };
static const char *const switch_keys[] = {
	"name", "role", "ipv4", "ipv6", "mac", "seed", NULL
};
static const char *const link_keys[] = { "name", "a", "b", "ab", "ba", NULL };
static const char *const host_keys[] = {
	"name", "leaf", "ipv4", "ipv6", "mac", "dev", "up", "down", NULL
};
static const char *const no_keys[] = { NULL };

static bool
in_list(const char *const *keys, const char *k)
{
	for (; *keys != NULL; keys++)
		if (strcmp(*keys, k) == 0)
			return true;
	return false;
}

static bool
is_param_key(const char *k)
{
	for (size_t i = 0; i < LS_ARRAY_SIZE(pfields); i++)
		if (strcmp(pfields[i].key, k) == 0)
			return true;
	return false;
}

/* Reject a non-object, then the first unknown key in file order. */
static int
check_keys(struct ls_jsonv *c, const char *path, const json_t *obj,
	   const char *const *keys, bool params)
{
	char kpath[LS_JSONV_PATH_LEN];
	const char *key;
	json_t *val;

	if (!json_is_object(obj))
		return ls_jsonv_fail(c, path, "expected object, got %s", ls_jsonv_kind(obj));
	/* jansson's iteration API is not const; nothing is modified */
	json_object_foreach((json_t *)(uintptr_t)obj, key, val) {
		if (in_list(keys, key) || (params && is_param_key(key)))
			continue;
		return ls_jsonv_fail(c, ls_jsonv_key(kpath, path, key), "unknown key");
	}
	return 0;
}

/*
 * Apply the parameter keys present in obj on top of *p. *bm_path follows the
 * deepest layer that set buffer_bytes or mtu (for the cross check).
 */
static int
apply_params(struct ls_jsonv *c, const char *path, const json_t *obj,
	     struct ls_fab_chan_params *p, char *bm_path)
{
	char kpath[LS_JSONV_PATH_LEN];

	for (size_t i = 0; i < LS_ARRAY_SIZE(pfields); i++) {
		const struct pfield *pf = &pfields[i];
		const json_t *v = json_object_get(obj, pf->key);
		char *dst = (char *)p + pf->off;
		double x;

		if (v == NULL)
			continue;
		ls_jsonv_key(kpath, path, pf->key);
		if (pf->kind == PK_DBL) {
			if (!json_is_number(v))
				return ls_jsonv_fail(c, kpath, "expected number, got %s",
					    ls_jsonv_kind(v));
			x = json_number_value(v);
			if (!(x >= pf->min && x <= pf->max))
				return ls_jsonv_fail(c, kpath, "must be between %g and %g, got %g",
					    pf->min, pf->max, x);
			memcpy(dst, &x, sizeof(x));
		} else {
			uint64_t u;

			if (json_is_integer(v)) {
				json_int_t iv = json_integer_value(v);

				if ((double)iv < pf->min || (double)iv > pf->max)
					return ls_jsonv_fail(c, kpath,
						    "must be between %.0f and %.0f, got %lld",
						    pf->min, pf->max, (long long)iv);
				u = (uint64_t)iv;
			} else if (json_is_real(v)) {
				x = json_real_value(v);
				if (x != floor(x))
					return ls_jsonv_fail(c, kpath, "must be a whole number, got %g", x);
				if (!(x >= pf->min && x <= pf->max))
					return ls_jsonv_fail(c, kpath,
						    "must be between %.0f and %.0f, got %g",
						    pf->min, pf->max, x);
				u = (uint64_t)x;
			} else {
				return ls_jsonv_fail(c, kpath, "expected integer, got %s",
					    ls_jsonv_kind(v));
			}
			if (pf->kind == PK_U64) {
				memcpy(dst, &u, sizeof(u));
			} else if (pf->kind == PK_U32) {
				uint32_t w = (uint32_t)u;

				memcpy(dst, &w, sizeof(w));
			} else {
				uint16_t w = (uint16_t)u;

				memcpy(dst, &w, sizeof(w));
			}
		}
		if (strcmp(pf->key, "buffer_bytes") == 0 || strcmp(pf->key, "mtu") == 0)
			snprintf(bm_path, LS_JSONV_PATH_LEN, "%s", path);
	}
	return 0;
}

/* The rule that ties two keys: a buffer must hold at least one full packet. */
static int
check_params(struct ls_jsonv *c, const struct ls_fab_chan_params *p, const char *bm_path)
{
	if (p->buffer_bytes < p->mtu)
		return ls_jsonv_fail(c, bm_path,
			    "buffer_bytes (%u) must be at least the mtu (%u)",
			    p->buffer_bytes, (unsigned int)p->mtu);
	return 0;
}

/*
 * Params of one link: base (defaults), the link object's own keys, then its
 * two direction objects. out[0] is a->b (host->leaf), out[1] b->a.
 */
static int
link_params(struct ls_jsonv *c, const char *path, const json_t *obj,
	    const struct ls_fab_chan_params *base, const char *base_path,
	    const char *dir_a, const char *dir_b, struct ls_fab_chan_params out[2])
{
	const char *dirs[2] = { dir_a, dir_b };
	char common_bm[LS_JSONV_PATH_LEN], bm[LS_JSONV_PATH_LEN], dpath[LS_JSONV_PATH_LEN];
	struct ls_fab_chan_params common = *base;
	int rc;

	snprintf(common_bm, sizeof(common_bm), "%s", base_path);
	rc = apply_params(c, path, obj, &common, common_bm);
	if (rc < 0)
		return rc;
	for (int d = 0; d < 2; d++) {
		const json_t *v = json_object_get(obj, dirs[d]);

		out[d] = common;
		memcpy(bm, common_bm, sizeof(bm));
		if (v != NULL) {
			ls_jsonv_key(dpath, path, dirs[d]);
			rc = check_keys(c, dpath, v, no_keys, true);
			if (rc < 0)
				return rc;
			rc = apply_params(c, dpath, v, &out[d], bm);
			if (rc < 0)
				return rc;
		}
		rc = check_params(c, &out[d], bm);
		if (rc < 0)
			return rc;
	}
	return 0;
}

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

/* A switch address: plain unicast address of the given family. */
static int
get_addr(struct ls_jsonv *c, const char *parent, const json_t *obj, const char *key,
	 int family, struct ls_addr *out)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *s;
	int rc;

	rc = get_str(c, parent, obj, key, false, 255, false, &s);
	if (rc < 0 || s == NULL)
		return rc;
	ls_jsonv_key(kpath, parent, key);
	ls_jsonv_quote(q, sizeof(q), s);
	if (ls_addr_parse(s, out) < 0)
		return ls_jsonv_fail(c, kpath, "not an IP address: \"%s\"", q);
	if (out->family != family)
		return ls_jsonv_fail(c, kpath, "must be an IPv%d address, got \"%s\"", family, q);
	if (!ls_addr_is_unicast(out))
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

/* A host interface address "addr/len": must be a usable host in its prefix. */
static int
get_prefix(struct ls_jsonv *c, const char *parent, const json_t *obj, const char *key,
	   int family, struct ls_prefix *out)
{
	char kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *s;
	int rc, hp;

	rc = get_str(c, parent, obj, key, false, 255, false, &s);
	if (rc < 0 || s == NULL)
		return rc;
	ls_jsonv_key(kpath, parent, key);
	ls_jsonv_quote(q, sizeof(q), s);
	/* a bare address would be a /32: almost always a forgotten length */
	if (strchr(s, '/') == NULL || ls_prefix_parse(s, out) < 0)
		return ls_jsonv_fail(c, kpath, "not an IPv%d prefix (%s): \"%s\"", family,
			    family == LS_AF_INET ? "a.b.c.d/len" : "x::y/len", q);
	if (out->addr.family != family)
		return ls_jsonv_fail(c, kpath, "must be an IPv%d prefix, got \"%s\"", family, q);
	if (!ls_addr_is_unicast(&out->addr))
		return ls_jsonv_fail(c, kpath, "must be a unicast address, got \"%s\"", q);
	hp = host_part(out);
	if (hp < 0)
		return ls_jsonv_fail(c, kpath,
			    "\"%s\" is the network address of its prefix, not a host in it", q);
	if (hp > 0)
		return ls_jsonv_fail(c, kpath,
			    "\"%s\" is the broadcast address of its prefix, not a host in it", q);
	return 0;
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

/* Where in the file node i came from, for messages about it. */
static const char *
node_path(const struct ls_fabric *f, uint16_t i, char *buf)
{
	if (i < f->n_switches)
		snprintf(buf, LS_JSONV_PATH_LEN, "switches[%u]", (unsigned int)i);
	else
		snprintf(buf, LS_JSONV_PATH_LEN, "hosts[%u]", (unsigned int)(i - f->n_switches));
	return buf;
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
				    node_path(f, j, opath));
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

/* Parse switches[i] into nodes[i]. */
static int
parse_switch(struct ls_jsonv *c, struct ls_fabric *f, uint16_t i, const json_t *obj)
{
	static const char *const roles[] = { "leaf", "spine", NULL };
	struct ls_fab_node *n = &f->nodes[i];
	char path[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	const char *name, *role;
	const json_t *v;
	int rc;

	snprintf(path, sizeof(path), "switches[%u]", (unsigned int)i);
	rc = check_keys(c, path, obj, switch_keys, false);
	if (rc < 0)
		return rc;
	n->kind = LS_FAB_SWITCH;
	rc = get_str(c, path, obj, "name", true, LS_FAB_NAME - 1, true, &name);
	if (rc < 0)
		return rc;
	snprintf(n->name, sizeof(n->name), "%s", name);
	rc = check_node_name(c, f, i, path);
	if (rc < 0)
		return rc;
	rc = get_str(c, path, obj, "role", true, 255, false, &role);
	if (rc < 0)
		return rc;
	if (!in_list(roles, role))
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

/* Resolve links[i].a / .b to a switch. */
static int
link_end(struct ls_jsonv *c, struct ls_fabric *f, const char *path, const json_t *obj,
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

/* Slot of an address in f->addr_tab: looked up for every packet the
 * emulator routes, so a multiply-mix rather than jhash. */
static inline uint32_t
addr_slot_hash(const struct ls_addr *a)
{
	uint64_t h = a->family;
	uint64_t v0, v1;

	if (a->family == LS_AF_INET)
		return ls_fab_addr_hash_v4(a->a); /* shared with the inline lookup */
	memcpy(&v0, a->a, 8);
	memcpy(&v1, a->a + 8, 8);
	h ^= v0 ^ (v1 * 0xc2b2ae3d27d4eb4fULL);
	h *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(h >> 32);
}

/* Address equality without a memcmp call (per packet). */
static inline bool
addr_same(const struct ls_addr *x, const struct ls_addr *y)
{
	if (x->family != y->family)
		return false;
	if (x->family == LS_AF_INET) {
		uint32_t a, b;

		memcpy(&a, x->a, 4);
		memcpy(&b, y->a, 4);
		return a == b;
	}
	{
		uint64_t a0, a1, b0, b1;

		memcpy(&a0, x->a, 8);
		memcpy(&a1, x->a + 8, 8);
		memcpy(&b0, y->a, 8);
		memcpy(&b1, y->a + 8, 8);
		return a0 == b0 && a1 == b1;
	}
}

/* Insert a host's address (node idx) into the lookup table. */
static void
addr_tab_add(struct ls_fabric *f, const struct ls_addr *a, uint16_t idx)
{
	uint32_t h;

	if (a->family == 0)
		return;
	h = addr_slot_hash(a);
	while (f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)] != 0)
		h++;
	f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)] = (uint16_t)(idx + 1);
}

static int
parse_host(struct ls_jsonv *c, struct ls_fabric *f, uint16_t hi, uint16_t li,
	   const json_t *obj, const struct ls_fab_chan_params *base,
	   const char *base_path, const char *const *link_src)
{
	uint16_t idx = (uint16_t)(f->n_switches + hi);
	struct ls_fab_node *n = &f->nodes[idx];
	char path[LS_JSONV_PATH_LEN], kpath[LS_JSONV_PATH_LEN], q[LS_JSONV_QUOTE_MAX + 4];
	struct ls_fab_chan_params p[2];
	struct ls_prefix p4, p6;
	const char *name, *leaf, *dev = NULL;
	int rc, l;

	snprintf(path, sizeof(path), "hosts[%u]", (unsigned int)hi);
	rc = check_keys(c, path, obj, host_keys, true);
	if (rc < 0)
		return rc;
	n->kind = LS_FAB_HOST;
	rc = get_str(c, path, obj, "name", true, LS_FAB_NAME - 1, true, &name);
	if (rc < 0)
		return rc;
	snprintf(n->name, sizeof(n->name), "%s", name);
	rc = check_node_name(c, f, idx, path);
	if (rc < 0)
		return rc;
	rc = get_str(c, path, obj, "leaf", true, 255, false, &leaf);
	if (rc < 0)
		return rc;
	ls_jsonv_key(kpath, path, "leaf");
	l = find_node(f, f->n_switches, leaf);
	if (l < 0)
		return ls_jsonv_fail(c, kpath, "no switch named \"%s\"", ls_jsonv_quote(q, sizeof(q), leaf));
	if (strcmp(f->nodes[l].role, "leaf") != 0)
		return ls_jsonv_fail(c, kpath, "\"%s\" is a %s, hosts attach to leaves",
			    f->nodes[l].name, f->nodes[l].role);
	n->leaf = (uint16_t)l;

	memset(&p4, 0, sizeof(p4));
	memset(&p6, 0, sizeof(p6));
	rc = get_prefix(c, path, obj, "ipv4", LS_AF_INET, &p4);
	if (rc == 0)
		rc = check_addr_unique(c, f, idx, &p4.addr, ls_jsonv_key(kpath, path, "ipv4"));
	if (rc == 0)
		rc = get_prefix(c, path, obj, "ipv6", LS_AF_INET6, &p6);
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

	rc = link_params(c, path, obj, base, base_path, "up", "down", p);
	if (rc < 0)
		return rc;
	rc = set_link_name(c, f, li, path, NULL, n->name, f->nodes[l].name, link_src);
	if (rc < 0)
		return rc;
	n->up_chan = (uint16_t)(2 * li);
	n->down_chan = (uint16_t)(2 * li + 1);
	chan_init(f, n->up_chan, li, idx, (uint16_t)l, &p[0]);
	chan_init(f, n->down_chan, li, (uint16_t)l, idx, &p[1]);
	addr_tab_add(f, &n->addr4, idx);
	addr_tab_add(f, &n->addr6, idx);
	return 0;
}

/* Checks over the whole fabric, once every piece parsed on its own. */
static int
check_fabric(struct ls_jsonv *c, struct ls_fabric *f, uint16_t n_sw_links)
{
	uint16_t queue[LS_FAB_MAX_NODES];
	bool seen[LS_FAB_MAX_NODES];
	char path[LS_JSONV_PATH_LEN];
	bool spines = false;
	int v4_host = -1, v6_host = -1;
	unsigned int qh = 0, qt = 0;

	for (uint16_t i = 0; i < f->n_switches; i++)
		spines = spines || strcmp(f->nodes[i].role, "spine") == 0;

	/* a leaf with no way up is a wiring mistake, not a design */
	for (uint16_t i = 0; spines && i < f->n_switches; i++) {
		bool up = false;

		if (strcmp(f->nodes[i].role, "leaf") != 0)
			continue;
		for (uint16_t k = 0; k < n_sw_links && !up; k++) {
			const struct ls_fab_chan *ch = &f->chans[2 * k];
			uint16_t other = ch->from == i ? ch->to : ch->to == i ? ch->from : i;

			up = other != i && strcmp(f->nodes[other].role, "spine") == 0;
		}
		if (!up)
			return ls_jsonv_fail(c, node_path(f, i, path),
				    "leaf \"%s\" has no link to a spine", f->nodes[i].name);
	}

	/* outgoing channel lists, in channel id order (ECMP order) */
	for (uint16_t k = 0; k < f->n_chans; k++) {
		struct ls_fab_node *n = &f->nodes[f->chans[k].from];

		if (n->kind != LS_FAB_SWITCH)
			continue;
		if (n->n_out >= LS_ARRAY_SIZE(n->out))
			return ls_jsonv_fail(c, node_path(f, f->chans[k].from, path),
				    "more than %zu links (hosts included)",
				    LS_ARRAY_SIZE(n->out));
		n->out[n->n_out++] = k;
	}

	/* every host reaches the first one: the switch graph is connected where it matters */
	memset(seen, 0, sizeof(seen));
	queue[qt++] = f->nodes[f->n_switches].leaf;
	seen[queue[0]] = true;
	while (qh < qt) {
		uint16_t u = queue[qh++];

		for (uint16_t k = 0; k < n_sw_links; k++) {
			const struct ls_fab_chan *ch = &f->chans[2 * k];
			uint16_t w;

			if (ch->from == u)
				w = ch->to;
			else if (ch->to == u)
				w = ch->from;
			else
				continue;
			if (!seen[w]) {
				seen[w] = true;
				queue[qt++] = w;
			}
		}
	}
	for (uint16_t i = f->n_switches; i < f->n_nodes; i++) {
		if (!seen[f->nodes[i].leaf])
			return ls_jsonv_fail(c, node_path(f, i, path), "cannot reach %s",
				    f->nodes[f->n_switches].name);
		if (v4_host < 0 && f->nodes[i].addr4.family != 0)
			v4_host = i;
		if (v6_host < 0 && f->nodes[i].addr6.family != 0)
			v6_host = i;
	}

	/* switches source ICMP errors in the family of the packet they answer */
	for (uint16_t i = 0; i < f->n_switches; i++) {
		const struct ls_fab_node *n = &f->nodes[i];
		char hpath[LS_JSONV_PATH_LEN];

		if (v4_host >= 0 && n->addr4.family == 0)
			return ls_jsonv_fail(c, node_path(f, i, path),
				    "needs an \"ipv4\" address: %s (%s) uses IPv4 and switches source ICMP errors",
				    node_path(f, (uint16_t)v4_host, hpath),
				    f->nodes[v4_host].name);
		if (v6_host >= 0 && n->addr6.family == 0)
			return ls_jsonv_fail(c, node_path(f, i, path),
				    "needs an \"ipv6\" address: %s (%s) uses IPv6 and switches source ICMP errors",
				    node_path(f, (uint16_t)v6_host, hpath),
				    f->nodes[v6_host].name);
	}
	return 0;
}

static int
build(struct ls_jsonv *c, const json_t *root, struct ls_fabric *f)
{
	struct ls_fab_chan_params dl = {
		.delay_ns = DEF_DELAY_NS, .rate_bps = DEF_RATE_BPS,
		.buffer_bytes = DEF_BUFFER, .ecn_bytes = DEF_ECN, .loss = 0,
		.mtu = DEF_MTU,
	};
	struct ls_fab_chan_params dh;
	char dl_bm[LS_JSONV_PATH_LEN] = "", dh_bm[LS_JSONV_PATH_LEN] = "", path[LS_JSONV_PATH_LEN];
	const char **link_src = NULL;
	const json_t *defaults, *switches, *links, *hosts, *v;
	size_t n_sw, n_l, n_h;
	int rc;

	rc = check_keys(c, "", root, top_keys, false);
	if (rc < 0)
		return rc;

	/* defaults: built-in <- defaults.link <- defaults.host_link (host links) */
	defaults = json_object_get(root, "defaults");
	if (defaults != NULL) {
		rc = check_keys(c, "defaults", defaults, defaults_keys, false);
		if (rc < 0)
			return rc;
	}
	v = defaults != NULL ? json_object_get(defaults, "link") : NULL;
	if (v != NULL) {
		rc = check_keys(c, "defaults.link", v, no_keys, true);
		if (rc == 0)
			rc = apply_params(c, "defaults.link", v, &dl, dl_bm);
		if (rc == 0)
			rc = check_params(c, &dl, dl_bm);
		if (rc < 0)
			return rc;
	}
	dh = dl;
	memcpy(dh_bm, dl_bm, sizeof(dh_bm));
	v = defaults != NULL ? json_object_get(defaults, "host_link") : NULL;
	if (v != NULL) {
		rc = check_keys(c, "defaults.host_link", v, no_keys, true);
		if (rc == 0)
			rc = apply_params(c, "defaults.host_link", v, &dh, dh_bm);
		if (rc == 0)
			rc = check_params(c, &dh, dh_bm);
		if (rc < 0)
			return rc;
	}

	v = json_object_get(root, "convergence_ms");
	if (v != NULL) {
		json_int_t ms;

		if (!json_is_integer(v))
			return ls_jsonv_fail(c, "convergence_ms", "expected integer, got %s",
				    ls_jsonv_kind(v));
		ms = json_integer_value(v);
		if (ms < 0 || ms > MAX_CONV_MS)
			return ls_jsonv_fail(c, "convergence_ms", "must be between 0 and %lld, got %lld",
				    MAX_CONV_MS, (long long)ms);
		f->convergence_ns = (uint64_t)ms * 1000000ULL;
	}

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
	/* "links[3]" / "hosts[0]" per link, for duplicate-name messages */
	link_src = calloc(f->n_links, sizeof(*link_src));
	if (f->chans == NULL || f->routes == NULL || link_src == NULL) {
		rc = -ENOMEM;
		ls_jsonv_fail(c, NULL, "out of memory");
		goto out;
	}
	{
		/* one buffer for every "links[i]"/"hosts[i]" label */
		static const size_t lab = 24;
		char *labels = calloc(f->n_links, lab);

		if (labels == NULL) {
			rc = -ENOMEM;
			ls_jsonv_fail(c, NULL, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < f->n_links; i++) {
			if (i < n_l)
				snprintf(labels + i * lab, lab, "links[%zu]", i);
			else
				snprintf(labels + i * lab, lab, "hosts[%zu]", i - n_l);
			link_src[i] = labels + i * lab;
		}
	}

	for (size_t i = 0; i < n_sw; i++) {
		rc = parse_switch(c, f, (uint16_t)i, json_array_get(switches, i));
		if (rc < 0)
			goto out;
	}

	for (size_t i = 0; i < n_l; i++) {
		const json_t *obj = json_array_get(links, i);
		struct ls_fab_chan_params p[2];
		const char *name;
		uint16_t a, b;

		snprintf(path, sizeof(path), "links[%zu]", i);
		rc = check_keys(c, path, obj, link_keys, true);
		if (rc == 0)
			rc = get_str(c, path, obj, "name", false, LS_FAB_NAME - 1, true, &name);
		if (rc == 0)
			rc = link_end(c, f, path, obj, "a", &a);
		if (rc == 0)
			rc = link_end(c, f, path, obj, "b", &b);
		if (rc < 0)
			goto out;
		if (a == b) {
			char kpath[LS_JSONV_PATH_LEN];

			rc = ls_jsonv_fail(c, ls_jsonv_key(kpath, path, "b"),
				  "same switch as \"a\" (\"%s\"): a link to itself",
				  f->nodes[a].name);
			goto out;
		}
		rc = link_params(c, path, obj, &dl, dl_bm, "ab", "ba", p);
		if (rc == 0)
			rc = set_link_name(c, f, (uint16_t)i, path, name, f->nodes[a].name,
					   f->nodes[b].name, link_src);
		if (rc < 0)
			goto out;
		chan_init(f, (uint16_t)(2 * i), (uint16_t)i, a, b, &p[0]);
		chan_init(f, (uint16_t)(2 * i + 1), (uint16_t)i, b, a, &p[1]);
	}

	for (size_t i = 0; i < n_h; i++) {
		rc = parse_host(c, f, (uint16_t)i, (uint16_t)(n_l + i), json_array_get(hosts, i),
				&dh, dh_bm, link_src);
		if (rc < 0)
			goto out;
	}

	rc = check_fabric(c, f, (uint16_t)n_l);
	if (rc < 0)
		goto out;
	f->route_next_ns = UINT64_MAX;
	ls_fab_routes_compute(f);
out:
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

/* Per packet in the emulator: a hash probe rather than a scan of every host. */
int
ls_fab_host_by_addr(const struct ls_fabric *f, const struct ls_addr *a)
{
	uint32_t h;

	if (f == NULL || a == NULL ||
	    (a->family != LS_AF_INET && a->family != LS_AF_INET6))
		return -1;
	if (a->family == LS_AF_INET)
		return ls_fab_host_by_v4(f, a->a);
	h = addr_slot_hash(a);
	for (uint32_t k = 0; k < LS_FAB_ADDR_TAB; k++, h++) {
		uint16_t e = f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)];
		const struct ls_fab_node *n;

		if (e == 0)
			return -1;
		n = &f->nodes[e - 1];
		if (addr_same(a->family == LS_AF_INET ? &n->addr4 : &n->addr6, a))
			return e - 1;
	}
	return -1;
}
