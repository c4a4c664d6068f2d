/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pingmesh-style pinglists: the config's "pinglist" names a fleet file
 * (every host of the fleet, as peer objects) and a K; each node probes K of
 * those hosts on top of its own peers[].
 *
 * Which K is rendezvous (highest-random-weight) hashing: host h scores
 * mix(seed, node id, name of h) and a node takes the K highest scores. So
 * one file serves the whole fleet, every node's list is different but
 * deterministic (the same node id gets the same list on every start and
 * every machine), the load is spread evenly (each host is chosen by about
 * K of the nodes), and a host joining or leaving the fleet changes only the
 * lists it enters or leaves, not everyone's. The node itself (a host with
 * its node name) and hosts already in peers[] (same name or address) are
 * skipped.
 *
 * A bad fleet file stops the start like a bad config: its errors name the
 * fleet file, the key ("hosts[12].addr") and the reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_config.h"
#include "ls_config_priv.h"

#define PL struct ls_conf_pinglist
static const struct field pinglist_fields[] = {
	F_STR("fleet", PL, fleet, 1, F_REQ),
	F_INT("k", PL, k, 1, LS_MAX_PEERS, 0),
	F_INT("seed", PL, seed, 0, (1LL << 53), 0),
};
#undef PL
const struct schema ls_config_pinglist_schema = SCHEMA(pinglist_fields, NULL);

/* splitmix64's finaliser: a full-avalanche 64-bit mix. */
static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* FNV-1a of a name, then mixed with the node and the seed. */
static uint64_t
score(const char *name, uint32_t node_id, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return mix64(h ^ mix64(seed ^ mix64((uint64_t)node_id + 1)));
}

struct scored {
	uint64_t s;
	unsigned int i;
};

static int
cmp_desc(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->s != y->s)
		return x->s < y->s ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i; /* ties: file order */
}

unsigned int
ls_pinglist_choose(const char *const *names, const uint8_t *skip, unsigned int n,
		   uint32_t node_id, uint64_t seed, unsigned int k, unsigned int *out)
{
	struct scored *v = malloc((n ? n : 1) * sizeof(*v));
	unsigned int m = 0, i;

	if (v == NULL)
		return 0;
	for (i = 0; i < n; i++)
		if (skip == NULL || !skip[i])
			v[m++] = (struct scored){ score(names[i], node_id, seed), i };
	qsort(v, m, sizeof(*v), cmp_desc);
	for (i = 0; i < m && i < k; i++)
		out[i] = v[i].i;
	free(v);
	return i;
}

/* The fleet file's path: as given if absolute, else beside the config. */
static int
fleet_path(const struct ls_config *cfg, char *buf, size_t len)
{
	const char *f = cfg->pinglist.fleet, *slash = strrchr(cfg->file, '/');
	int n;

	if (f[0] == '/' || slash == NULL)
		n = snprintf(buf, len, "%s", f);
	else
		n = snprintf(buf, len, "%.*s/%s", (int)(slash - cfg->file), cfg->file, f);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Whether host h is the node itself or already one of its peers[]. */
static uint8_t
is_taken(const struct ls_config *cfg, const struct ls_conf_peer *h)
{
	if (strcmp(h->name, cfg->node_name) == 0)
		return 1;
	for (unsigned int i = 0; i < cfg->n_peers; i++)
		if (strcmp(cfg->peers[i].name, h->name) == 0 ||
		    ls_addr_eq(&cfg->peers[i].addr, &h->addr))
			return 1;
	return 0;
}

/* Parse every host of the fleet file into hosts[] (errors name the file). */
static int
load_hosts(struct pctx *fc, const json_t *root, ls_config_peer_fn parse_peer,
	   struct ls_conf_peer **hosts, size_t *n)
{
	const json_t *arr = json_is_object(root) ? json_object_get(root, "hosts") : NULL;
	char ipath[LS_JSONV_PATH_LEN];
	json_t *seen;
	int rc = 0;

	if (!json_is_array(arr) || json_array_size(arr) == 0)
		return ls_jsonv_fail(&fc->jv, "hosts", "expected a non-empty array of hosts "
				     "(peer objects) under \"hosts\"");
	*n = json_array_size(arr);
	*hosts = calloc(*n, sizeof(**hosts));
	seen = json_object();
	if (*hosts == NULL || seen == NULL) {
		json_decref(seen);
		return ls_jsonv_fail(&fc->jv, NULL, "out of memory");
	}
	for (size_t i = 0; i < *n && rc == 0; i++) {
		struct ls_conf_peer *h = &(*hosts)[i];
		const json_t *prev;

		ls_jsonv_index(ipath, "hosts", i);
		rc = parse_peer(fc, ipath, json_array_get(arr, i), h);
		if (rc == 0 && (prev = json_object_get(seen, h->name)) != NULL)
			rc = ls_jsonv_fail(&fc->jv, ipath, "duplicate host name \"%s\" (also "
					   "hosts[%lld])", h->name,
					   (long long)json_integer_value(prev));
		if (rc == 0)
			json_object_set_new(seen, h->name, json_integer((json_int_t)i));
	}
	json_decref(seen);
	return rc;
}

int
ls_config_pinglist_apply(struct pctx *c, ls_config_peer_fn parse_peer)
{
	struct ls_config *cfg = c->out;
	char file[sizeof(cfg->file) + sizeof(cfg->pinglist.fleet)];
	struct pctx fc = { .jv = { .src = file, .err = c->jv.err, .errlen = c->jv.errlen },
			   .cfg = c->cfg, .out = c->out };
	struct ls_conf_peer *hosts = NULL, *np;
	const char **names = NULL;
	unsigned int *pick = NULL, got = 0;
	uint8_t *skip = NULL;
	json_t *root = NULL;
	size_t n = 0;
	int rc;

	if (fleet_path(cfg, file, sizeof(file)) < 0)
		return ls_jsonv_fail(&c->jv, "pinglist.fleet", "path too long");
	rc = ls_jsonv_load(&fc.jv, sizeof(file) - 1, &root);
	if (rc == 0)
		rc = load_hosts(&fc, root, parse_peer, &hosts, &n);
	json_decref(root);
	if (rc == 0) {
		names = calloc(n, sizeof(*names));
		skip = calloc(n, 1);
		pick = calloc(cfg->pinglist.k, sizeof(*pick));
		np = realloc(cfg->peers, (cfg->n_peers + cfg->pinglist.k) * sizeof(*np));
		if (np != NULL)
			cfg->peers = np;
		if (names == NULL || skip == NULL || pick == NULL || np == NULL)
			rc = ls_jsonv_fail(&c->jv, "pinglist", "out of memory");
	}
	if (rc == 0 && cfg->n_peers + cfg->pinglist.k > LS_MAX_PEERS)
		rc = ls_jsonv_fail(&c->jv, "pinglist.k", "%u with the %u peers[] is over %d",
				   cfg->pinglist.k, cfg->n_peers, LS_MAX_PEERS);
	if (rc == 0) {
		for (size_t i = 0; i < n; i++) {
			names[i] = hosts[i].name;
			skip[i] = is_taken(cfg, &hosts[i]);
		}
		got = ls_pinglist_choose(names, skip, (unsigned int)n, cfg->node_id,
					 cfg->pinglist.seed, cfg->pinglist.k, pick);
		for (unsigned int i = 0; i < got; i++)
			cfg->peers[cfg->n_peers++] = hosts[pick[i]];
	}
	free(names);
	free(skip);
	free(pick);
	free(hosts);
	return rc;
}
