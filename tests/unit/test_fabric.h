/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lib/fabric suite's files share: topologies from JSON in C
 * strings (single quotes), generated leaf-spine fabrics with the addressing
 * plan of config/fabric/, route and flow helpers, and the function through
 * which test_fabric_topo.c (topology, routing, validation, files) hands its
 * tcases to fabric_suite() in test_fabric.c (link model, ECMP).
 */
#ifndef TEST_FABRIC_H
#define TEST_FABRIC_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_fabric.h"
#include "ls_test.h"

#define ERR_LEN 512

/* -------------------------------------------------------------------------
 * Helpers
 */

/* Single quotes to double quotes, then JSON. */
static inline json_t *
parse_q(const char *text)
{
	char *s = strdup(text);
	json_error_t jerr;
	json_t *root;

	ck_assert_ptr_nonnull(s);
	for (char *p = s; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	root = json_loads(s, 0, &jerr);
	ck_assert_msg(root != NULL, "test JSON does not parse: %s: %s", jerr.text, s);
	free(s);
	return root;
}

static inline struct ls_fabric *
fab_ok(const char *text)
{
	char err[ERR_LEN] = "";
	struct ls_fabric *f = NULL;
	json_t *root = parse_q(text);
	int rc;

	rc = ls_fab_from_json(root, "t.json", &f, err, sizeof(err));
	json_decref(root);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_ptr_nonnull(f);
	return f;
}

/* Must fail with "t.json: KEY: ...REASON..." on one line. */
static inline void
expect_bad(const char *text, const char *key, const char *reason, int line)
{
	char err[ERR_LEN] = "", want[300];
	struct ls_fabric *f = (struct ls_fabric *)(uintptr_t)1;
	json_t *root = parse_q(text);
	int rc;

	rc = ls_fab_from_json(root, "t.json", &f, err, sizeof(err));
	json_decref(root);
	ck_assert_msg(rc == -EINVAL, "line %d: rc %d, err \"%s\"", line, rc, err);
	ck_assert_msg(f == NULL, "line %d: *out set on error", line);
	snprintf(want, sizeof(want), "t.json: %s: ", key);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
		      "line %d: \"%s\" does not start with \"%s\"", line, err, want);
	ck_assert_msg(strstr(err + strlen(want), reason) != NULL,
		      "line %d: \"%s\" lacks \"%s\"", line, err, reason);
	ck_assert_msg(strchr(err, '\n') == NULL, "line %d: multi-line", line);
}
#define BAD(text, key, reason) expect_bad(text, key, reason, __LINE__)

/*
 * Leaf-spine with S spines, L leaves, H hosts per leaf; the addressing plan
 * of config/fabric/ (docs/fabric.md). Returns malloc'd JSON text.
 */
static inline char *
clos_text(int S, int L, int H, int conv_ms)
{
	size_t cap = 4096 + (size_t)(S + L + S * L + L * H) * 160;
	char *t = malloc(cap);
	size_t n = 0;
	int h = 1;

	ck_assert_ptr_nonnull(t);
#define ADD(...) (n += (size_t)snprintf(t + n, cap - n, __VA_ARGS__))
	ADD("{\"convergence_ms\": %d, \"switches\": [", conv_ms);
	for (int i = 1; i <= S; i++)
		ADD("%s{\"name\": \"spine%d\", \"role\": \"spine\", \"ipv4\": \"10.255.0.%d\", "
		    "\"ipv6\": \"fd00:ff::%d\"}", i > 1 ? ", " : "", i, i, i);
	for (int j = 1; j <= L; j++)
		ADD("%s{\"name\": \"leaf%d\", \"role\": \"leaf\", \"ipv4\": \"10.255.1.%d\", "
		    "\"ipv6\": \"fd00:ff::1:%d\"}", S + j > 1 ? ", " : "", j, j, j);
	ADD("], \"links\": [");
	for (int j = 1; j <= L; j++)
		for (int i = 1; i <= S; i++)
			ADD("%s{\"a\": \"leaf%d\", \"b\": \"spine%d\"}",
			    (j - 1) * S + i > 1 ? ", " : "", j, i);
	ADD("], \"hosts\": [");
	for (int j = 1; j <= L; j++)
		for (int k = 1; k <= H; k++, h++)
			ADD("%s{\"name\": \"h%d\", \"leaf\": \"leaf%d\", \"ipv4\": \"10.%d.0.%d/24\", "
			    "\"ipv6\": \"fd00:%d::%d/64\"}", h > 1 ? ", " : "", h, j, j, k, j, k);
	ADD("]}");
#undef ADD
	ck_assert_uint_lt(n, cap);
	return t;
}

static inline struct ls_fabric *
clos(int S, int L, int H, int conv_ms)
{
	char *t = clos_text(S, L, H, conv_ms);
	struct ls_fabric *f = fab_ok(t);

	free(t);
	return f;
}

static inline const struct ls_fab_route *
route(const struct ls_fabric *f, int sw, int host)
{
	return &f->routes[(size_t)sw * f->n_nodes + host];
}

static inline bool
route_has(const struct ls_fab_route *r, int chan)
{
	for (int i = 0; i < r->n; i++)
		if (r->chan[i] == chan)
			return true;
	return false;
}

static inline bool
is_role(const struct ls_fabric *f, int i, const char *role)
{
	return f->nodes[i].kind == LS_FAB_SWITCH && strcmp(f->nodes[i].role, role) == 0;
}

/*
 * The intact two-tier fabric: a leaf reaches a local host over its down
 * channel only and a remote host over one uplink per spine (in channel id
 * order); a spine over its link to the host's leaf; hosts route nothing.
 */
static inline void
check_clos_routes(const struct ls_fabric *f)
{
	int spines = 0;

	for (int i = 0; i < f->n_switches; i++)
		spines += is_role(f, i, "spine");
	for (int h = f->n_switches; h < f->n_nodes; h++) {
		const struct ls_fab_node *host = &f->nodes[h];

		for (int s = 0; s < f->n_nodes; s++) {
			const struct ls_fab_route *r = route(f, s, h);

			if (f->nodes[s].kind == LS_FAB_HOST) {
				ck_assert_uint_eq(r->n, 0);
				continue;
			}
			if (s == host->leaf) {
				ck_assert_uint_eq(r->n, 1);
				ck_assert_uint_eq(r->chan[0], host->down_chan);
			} else if (is_role(f, s, "leaf")) {
				ck_assert_int_eq(r->n, spines);
				for (int i = 0; i < r->n; i++) {
					const struct ls_fab_chan *c = &f->chans[r->chan[i]];

					ck_assert_int_eq(c->from, s);
					ck_assert(is_role(f, c->to, "spine"));
					if (i > 0)
						ck_assert_uint_gt(r->chan[i], r->chan[i - 1]);
				}
			} else {
				ck_assert_uint_eq(r->n, 1);
				ck_assert_int_eq(f->chans[r->chan[0]].from, s);
				ck_assert_int_eq(f->chans[r->chan[0]].to, host->leaf);
			}
		}
	}
}

struct flow {
	struct ls_addr src, dst;
	uint8_t proto;
	uint16_t sport, dport;
	uint32_t label;
};

/* Random flows, half IPv4 (UDP/TCP), half IPv6 with flow labels. */
static inline void
rand_flow(uint64_t *s, int i, struct flow *fl)
{
	uint64_t a = ls_fab_rand(s), b = ls_fab_rand(s), c = ls_fab_rand(s);

	memset(fl, 0, sizeof(*fl));
	if (i & 1) {
		fl->src.family = fl->dst.family = LS_AF_INET6;
		memcpy(fl->src.a, &a, 8);
		memcpy(fl->src.a + 8, &b, 8);
		fl->src.a[0] = 0xfd;
		memcpy(fl->dst.a, &b, 8);
		memcpy(fl->dst.a + 8, &a, 8);
		fl->dst.a[0] = 0xfd;
		fl->label = (uint32_t)(c >> 40) & 0xfffff;
	} else {
		fl->src.family = fl->dst.family = LS_AF_INET;
		memcpy(fl->src.a, &a, 4);
		memcpy(fl->dst.a, &b, 4);
	}
	fl->proto = (c & 1) ? 17 : 6;
	fl->sport = (uint16_t)(c >> 8);
	fl->dport = (uint16_t)(c >> 24);
}

static inline uint32_t
fhash(uint32_t seed, const struct flow *fl)
{
	return ls_fab_flow_hash(seed, &fl->src, &fl->dst, fl->proto, fl->sport, fl->dport,
				fl->label);
}

/* A lone channel with the given parameters (up, FIFO empty). */
static inline struct ls_fab_chan *
mkchan(uint64_t delay, uint64_t rate, uint32_t buffer, uint32_t ecn, double loss,
       uint16_t mtu)
{
	struct ls_fab_chan *c = calloc(1, sizeof(*c));

	ck_assert_ptr_nonnull(c);
	c->p = (struct ls_fab_chan_params){ .delay_ns = delay, .rate_bps = rate,
		.buffer_bytes = buffer, .ecn_bytes = ecn, .loss = loss, .mtu = mtu };
	c->up = c->route_up = true;
	c->rng = 12345;
	return c;
}

#define G10 10000000000ULL

/* Adds the topology, validation and files tcases to the suite. */
void fabric_topo_tcases(Suite *s);

#endif /* TEST_FABRIC_H */
