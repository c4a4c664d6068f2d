/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/fabric: the link model's arithmetic is exact (times,
 * queue depth, ECN, drops), ECMP hashing spreads and is independent between
 * switches, routes on leaf-spine fabrics have the expected next hops and
 * follow link state after the convergence delay, and every class of bad
 * topology is rejected with one "FILE: KEY: REASON" line naming the key.
 *
 * Topologies are written in C with single quotes turned into double quotes
 * (readable cases), or generated (leaf-spine of any size, with the same
 * addressing plan as config/fabric/). The shipped examples are loaded too,
 * through LS_SOURCE_ROOT, so they cannot rot. Everything is pure: no EAL.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ls_fabric.h"
#include "ls_test.h"

#define ERR_LEN 512


/* -------------------------------------------------------------------------
 * Helpers
 */

/* Single quotes to double quotes, then JSON. */
static json_t *
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

static struct ls_fabric *
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
static void
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
static char *
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

static struct ls_fabric *
clos(int S, int L, int H, int conv_ms)
{
	char *t = clos_text(S, L, H, conv_ms);
	struct ls_fabric *f = fab_ok(t);

	free(t);
	return f;
}

static const struct ls_fab_route *
route(const struct ls_fabric *f, int sw, int host)
{
	return &f->routes[(size_t)sw * f->n_nodes + host];
}

static bool
route_has(const struct ls_fab_route *r, int chan)
{
	for (int i = 0; i < r->n; i++)
		if (r->chan[i] == chan)
			return true;
	return false;
}

static bool
is_role(const struct ls_fabric *f, int i, const char *role)
{
	return f->nodes[i].kind == LS_FAB_SWITCH && strcmp(f->nodes[i].role, role) == 0;
}

/*
 * The intact two-tier fabric: a leaf reaches a local host over its down
 * channel only and a remote host over one uplink per spine (in channel id
 * order); a spine over its link to the host's leaf; hosts route nothing.
 */
static void
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

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct flow {
	struct ls_addr src, dst;
	uint8_t proto;
	uint16_t sport, dport;
	uint32_t label;
};

/* Random flows, half IPv4 (UDP/TCP), half IPv6 with flow labels. */
static void
rand_flow(uint64_t *s, int i, struct flow *fl)
{
	uint64_t a = rnd(s), b = rnd(s), c = rnd(s);

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

static uint32_t
fhash(uint32_t seed, const struct flow *fl)
{
	return ls_fab_flow_hash(seed, &fl->src, &fl->dst, fl->proto, fl->sport, fl->dport,
				fl->label);
}

/* A lone channel with the given parameters (up, FIFO empty). */
static struct ls_fab_chan *
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

/* -------------------------------------------------------------------------
 * Link model
 */

START_TEST(test_link_single)
{
	struct ls_fab_chan *c = mkchan(1000, G10, 1 << 20, 0, 0, 9000);
	struct ls_fab_item it;
	bool ce = true;

	ck_assert_uint_eq(ls_fab_chan_head_ns(c), UINT64_MAX);
	ck_assert(!ls_fab_chan_pop(c, &it));
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 5000, 1500, true, (void *)c, 7, &ce),
			 LS_FAB_OK);
	ck_assert(!ce);
	/* 1500 B at 10 Gb/s = 1200 ns on the wire, then 1000 ns of delay */
	ck_assert_uint_eq(c->busy_until_ns, 6200);
	ck_assert_uint_eq(ls_fab_chan_head_ns(c), 7200);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 5000), 1500);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 5600), 750);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 6200), 0);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 4000), 2750); /* before arrival: by formula */
	ck_assert(ls_fab_chan_pop(c, &it));
	ck_assert_uint_eq(it.arrive_ns, 5000);
	ck_assert_uint_eq(it.depart_ns, 6200);
	ck_assert_uint_eq(it.deliver_ns, 7200);
	ck_assert_uint_eq(it.bytes, 1500);
	ck_assert(!it.lost);
	ck_assert_ptr_eq(it.pkt, c);
	ck_assert_uint_eq(it.tag, 7);
	ck_assert_uint_eq(c->st.pkts, 1);
	ck_assert_uint_eq(c->st.bytes, 1500);
	ck_assert_uint_eq(c->st.max_depth, 0);
	/* serialization rounds up: 100 B at 3 Gb/s = 266.67 ns -> 267 */
	c->p.rate_bps = 3000000000ULL;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 10000, 100, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_uint_eq(c->busy_until_ns, 10267);
	ck_assert_uint_eq(ls_fab_chan_depth(c, 10000), 100); /* 100.125 rounds down */
	free(c);
}
END_TEST

START_TEST(test_link_queue)
{
	struct ls_fab_chan *c = mkchan(1000, G10, 1 << 20, 0, 0, 9000);
	struct ls_fab_item it;
	const uint64_t t0 = 1000000;

	/* a burst at one instant: packet k waits for k packets */
	for (int k = 0; k < 10; k++) {
		ck_assert_uint_eq(ls_fab_chan_depth(c, t0), (uint64_t)k * 1500);
		ck_assert_int_eq(ls_fab_chan_enqueue(c, t0, 1500, false, NULL, k, NULL),
				 LS_FAB_OK);
	}
	ck_assert_uint_eq(c->st.max_depth, 9 * 1500);
	for (int k = 0; k < 10; k++) {
		ck_assert(ls_fab_chan_pop(c, &it));
		ck_assert_uint_eq(it.tag, k);
		ck_assert_uint_eq(it.depart_ns, t0 + (uint64_t)(k + 1) * 1200);
		ck_assert_uint_eq(it.deliver_ns, t0 + (uint64_t)(k + 1) * 1200 + 1000);
	}
	/* decays linearly, reaches 0 when the transmitter idles, stays 0 */
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 6000), 7500);
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 12000 - 8), 10);
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 12000), 0);
	ck_assert_uint_eq(ls_fab_chan_depth(c, t0 + 1000000000), 0);

	/* arrivals every 600 ns, half the service time: +750 B per arrival */
	{
		uint64_t t1 = 10000000;

		for (int k = 0; k < 20; k++) {
			uint64_t t = t1 + (uint64_t)k * 600;

			ck_assert_uint_eq(ls_fab_chan_depth(c, t), (uint64_t)k * 750);
			ck_assert_int_eq(ls_fab_chan_enqueue(c, t, 1500, false, NULL, k, NULL),
					 LS_FAB_OK);
			ck_assert(ls_fab_chan_pop(c, &it));
			ck_assert_uint_eq(it.depart_ns, t1 + (uint64_t)(k + 1) * 1200);
		}
		ck_assert_uint_eq(c->st.max_depth, 19 * 750);
	}
	/* an idle gap: the next packet starts at its arrival */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 50000000, 1500, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert(ls_fab_chan_pop(c, &it));
	ck_assert_uint_eq(it.depart_ns, 50001200);
	free(c);
}
END_TEST

START_TEST(test_link_ecn)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 3000, 0, 9000);
	bool ce;

	/* burst: packet k sees 1500k queued; marked iff 1500k > 3000 */
	for (int k = 0; k < 8; k++) {
		ck_assert_int_eq(ls_fab_chan_enqueue(c, 100, 1500, true, NULL, 0, &ce), LS_FAB_OK);
		ck_assert_msg(ce == (k >= 3), "packet %d ce %d", k, ce);
	}
	ck_assert_uint_eq(c->st.ecn_marked, 5);
	/* not ECT: never marked, not counted */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 100, 1500, false, NULL, 0, &ce), LS_FAB_OK);
	ck_assert(!ce);
	ck_assert_uint_eq(c->st.ecn_marked, 5);
	/* threshold 0: ECN off */
	c->p.ecn_bytes = 0;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 100, 1500, true, NULL, 0, &ce), LS_FAB_OK);
	ck_assert(!ce);
	/* once the queue drains below the threshold, marks stop */
	c->p.ecn_bytes = 3000;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, c->busy_until_ns - 2400, 1500, true, NULL, 0,
					     &ce), LS_FAB_OK);
	ck_assert(!ce); /* saw exactly 3000: not above */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, c->busy_until_ns - 3700, 1500, true, NULL, 0,
					     &ce), LS_FAB_OK);
	ck_assert(ce); /* saw 4625 */
	free(c);
}
END_TEST

START_TEST(test_link_tail_drop)
{
	struct ls_fab_chan *c = mkchan(0, G10, 9000, 0, 0, 9000);
	int ok = 0;

	/* accepted while depth + 1500 <= 9000: depths 0..7500, six packets */
	for (int k = 0; k < 10; k++) {
		enum ls_fab_verdict v = ls_fab_chan_enqueue(c, 0, 1500, false, NULL, 0, NULL);

		ck_assert_int_eq(v, k < 6 ? LS_FAB_OK : LS_FAB_DROP_TAIL);
		ok += v == LS_FAB_OK;
	}
	ck_assert_int_eq(ok, 6);
	ck_assert_uint_eq(c->st.drop_tail, 4);
	ck_assert_uint_eq(c->st.pkts, 6);
	ck_assert_uint_eq(c->st.max_depth, 9000);
	/* one service time later 1500 B have left: exactly room for one more */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 1199, 1500, false, NULL, 0, NULL),
			 LS_FAB_DROP_TAIL);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 1200, 1500, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 1200, 1500, false, NULL, 0, NULL),
			 LS_FAB_DROP_TAIL);
	/* a smaller packet still fits where a big one does not */
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 2400, 1000, false, NULL, 0, NULL), LS_FAB_OK);
	free(c);

	/* FIFO slots: LS_FAB_FIFO packets, then tail drop even with buffer room */
	c = mkchan(0, G10, 0xffffffffU, 0, 0, 9000);
	for (int k = 0; k < LS_FAB_FIFO; k++)
		ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 64, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 64, false, NULL, 0, NULL), LS_FAB_DROP_TAIL);
	ck_assert(ls_fab_chan_pop(c, NULL));
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 64, false, NULL, 0, NULL), LS_FAB_OK);
	free(c);
}
END_TEST

START_TEST(test_link_loss)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 0, 0.1, 9000);
	struct ls_fab_item it;
	uint64_t lost = 0, t = 0;
	const int n = 100000;

	for (int k = 0; k < n; k++, t += 1000) {
		ck_assert_int_eq(ls_fab_chan_enqueue(c, t, 1000, true, NULL, 0, NULL), LS_FAB_OK);
		ck_assert(ls_fab_chan_pop(c, &it));
		lost += it.lost;
	}
	/* binomial sd ~95: +-600 is more than 6 sd */
	ck_assert_msg(lost > 9400 && lost < 10600, "lost %lu of %d", (unsigned long)lost, n);
	ck_assert_uint_eq(c->st.drop_loss, lost);
	ck_assert_uint_eq(c->st.pkts, n); /* lost packets used the link */
	ck_assert_uint_eq(c->st.bytes, (uint64_t)n * 1000);
	free(c);

	/* loss 0 and 1 are exact */
	c = mkchan(0, G10, 1 << 20, 0, 1.0, 9000);
	for (int k = 0; k < 100; k++) {
		ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 100, false, NULL, 0, NULL), LS_FAB_OK);
		ck_assert(ls_fab_chan_pop(c, &it));
		ck_assert(it.lost);
	}
	free(c);
}
END_TEST

START_TEST(test_link_mtu_down)
{
	struct ls_fab_chan *c = mkchan(0, G10, 1 << 20, 0, 0, 1500);
	bool ce = true;

	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1501, false, NULL, 0, &ce), LS_FAB_DROP_MTU);
	ck_assert(!ce);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1500, false, NULL, 0, NULL), LS_FAB_OK);
	ck_assert_uint_eq(c->st.drop_mtu, 1);
	c->up = false;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 100, false, NULL, 0, NULL), LS_FAB_DROP_DOWN);
	ck_assert_uint_eq(c->st.drop_down, 1);
	ck_assert_uint_eq(c->st.pkts, 1);
	/* a drop does not occupy the transmitter */
	ck_assert_uint_eq(c->busy_until_ns, 1200);
	free(c);
}
END_TEST

START_TEST(test_link_delay_change)
{
	struct ls_fab_chan *c = mkchan(100000, G10, 1 << 20, 0, 0, 9000);
	struct ls_fab_item it;
	uint64_t prev = 0;

	ck_assert_int_eq(ls_fab_chan_enqueue(c, 0, 1500, false, NULL, 1, NULL), LS_FAB_OK);
	c->p.delay_ns = 100;
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 5000, 1500, false, NULL, 2, NULL), LS_FAB_OK);
	ck_assert_int_eq(ls_fab_chan_enqueue(c, 200000, 1500, false, NULL, 3, NULL), LS_FAB_OK);
	for (uint32_t k = 1; k <= 3; k++) {
		ck_assert(ls_fab_chan_pop(c, &it));
		ck_assert_uint_eq(it.tag, k);
		ck_assert_uint_ge(it.deliver_ns, prev);
		prev = it.deliver_ns;
	}
	/* the second was held behind the first; the third is on the new delay */
	ck_assert_uint_eq(prev, 200000 + 1200 + 100);
	free(c);
}
END_TEST

/* -------------------------------------------------------------------------
 * ECMP
 */

START_TEST(test_hash_spread)
{
	static const int ns[] = { 2, 4, 8, 3 };
	uint64_t s = 42;
	const int flows = 10000;

	for (size_t m = 0; m < sizeof(ns) / sizeof(ns[0]); m++) {
		int cnt[8] = { 0 }, n = ns[m];
		double want = (double)flows / n;

		for (int i = 0; i < flows; i++) {
			struct flow fl;

			rand_flow(&s, i, &fl);
			cnt[fhash(0x1234567u, &fl) % (uint32_t)n]++;
		}
		for (int b = 0; b < n; b++)
			ck_assert_msg(cnt[b] > want * 0.9 && cnt[b] < want * 1.1,
				      "n %d bucket %d: %d (want %.0f)", n, b, cnt[b], want);
	}
}
END_TEST

/* Sequential ports on one address pair (a single client's connections) spread too. */
START_TEST(test_hash_spread_ports)
{
	struct ls_addr a, b;
	int cnt[4] = { 0 };

	ck_assert_int_eq(ls_addr_parse("10.1.0.1", &a), 0);
	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &b), 0);
	for (int p = 0; p < 10000; p++)
		cnt[ls_fab_flow_hash(99, &a, &b, 17, (uint16_t)(20000 + p), 4791, 0) % 4]++;
	for (int i = 0; i < 4; i++)
		ck_assert_msg(cnt[i] > 2250 && cnt[i] < 2750, "bucket %d: %d", i, cnt[i]);
}
END_TEST

START_TEST(test_hash_stable_independent)
{
	struct ls_fabric *f = clos(2, 2, 1, 0);
	uint32_t s1 = f->nodes[ls_fab_node_find(f, "leaf1")].seed;
	uint32_t s2 = f->nodes[ls_fab_node_find(f, "spine1")].seed;
	int joint[2][2] = { { 0 } }, same = 0;
	uint64_t s = 7;

	/* every switch gets its own seed */
	for (int i = 0; i < f->n_switches; i++)
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(f->nodes[i].seed, f->nodes[j].seed);
	for (int i = 0; i < 10000; i++) {
		struct flow fl, fl2;
		uint32_t h1, h2;

		rand_flow(&s, i, &fl);
		h1 = fhash(s1, &fl);
		h2 = fhash(s2, &fl);
		/* stable: the same flow hashes the same */
		ck_assert_uint_eq(h1, fhash(s1, &fl));
		same += h1 == h2;
		joint[h1 % 2][h2 % 2]++;
		/* every field counts */
		fl2 = fl;
		fl2.sport ^= 1;
		ck_assert_uint_ne(fhash(s1, &fl2), h1);
		fl2 = fl;
		fl2.proto ^= 1;
		ck_assert_uint_ne(fhash(s1, &fl2), h1);
		fl2 = fl;
		fl2.dst.a[3] ^= 1;
		ck_assert_uint_ne(fhash(s1, &fl2), h1);
		if (fl.src.family == LS_AF_INET6) {
			fl2 = fl;
			fl2.label ^= 1;
			ck_assert_uint_ne(fhash(s1, &fl2), h1);
		}
	}
	ck_assert_int_lt(same, 5);
	/* two switches choose independently: each of 4 cells ~2500 */
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			ck_assert_msg(joint[a][b] > 2250 && joint[a][b] < 2750,
				      "joint[%d][%d] = %d", a, b, joint[a][b]);
	ls_fab_free(f);
}
END_TEST

START_TEST(test_next_hop)
{
	struct ls_fabric *f = clos(4, 4, 4, 0);
	int leaf1 = ls_fab_node_find(f, "leaf1"), h16 = ls_fab_node_find(f, "h16");
	int h1 = ls_fab_node_find(f, "h1"), cnt[LS_FAB_MAX_CHANS] = { 0 };
	const struct ls_fab_route *r = route(f, leaf1, h16);
	uint64_t s = 3;

	ck_assert_int_ge(leaf1, 0);
	ck_assert_int_ge(h16, 0);
	ck_assert_uint_eq(r->n, 4);
	for (uint32_t h = 0; h < 1000; h++)
		ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, (uint16_t)h16, h),
				 r->chan[h % 4]);
	for (int i = 0; i < 10000; i++) {
		struct flow fl;
		int c;

		rand_flow(&s, i, &fl);
		c = ls_fab_next_hop(f, (uint16_t)leaf1, (uint16_t)h16,
				    fhash(f->nodes[leaf1].seed, &fl));
		ck_assert(route_has(r, c));
		cnt[c]++;
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(cnt[r->chan[i]] > 2250 && cnt[r->chan[i]] < 2750,
			      "chan %u: %d", r->chan[i], cnt[r->chan[i]]);
	/* local host: its down channel, whatever the hash */
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, (uint16_t)h1, 12345),
			 f->nodes[h1].down_chan);
	/* from a host, or to a switch: no route */
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)h1, (uint16_t)h16, 0), -ENETUNREACH);
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, 0, 0), -ENETUNREACH);
	ck_assert_int_eq(ls_fab_next_hop(f, (uint16_t)leaf1, f->n_nodes, 0), -EINVAL);
	ls_fab_free(f);
}
END_TEST

/* The flow hash is part of the model: which path a flow takes must not move
 * between versions (labs compare runs). Values from the first version of
 * this hash. */
START_TEST(test_hash_pinned)
{
	struct ls_addr a, b, c, d;

	ck_assert_int_eq(ls_addr_parse("10.1.0.1", &a), 0);
	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &b), 0);
	ck_assert_int_eq(ls_addr_parse("fd00:1::1", &c), 0);
	ck_assert_int_eq(ls_addr_parse("fd00:2::1", &d), 0);
	ck_assert_uint_eq(ls_fab_flow_hash(0x1234567u, &a, &b, 17, 49152, 862, 0), 0x5f75a094u);
	ck_assert_uint_eq(ls_fab_flow_hash(0xdeadbeefu, &b, &a, 6, 0, 0, 0), 0xbe30def8u);
	ck_assert_uint_eq(ls_fab_flow_hash(7, &a, &b, 1, 0, 0, 0), 0x9b1c4de4u);
	ck_assert_uint_eq(ls_fab_flow_hash(0x1234567u, &c, &d, 17, 49152, 862, 0xabcde),
			  0x651e78a9u);
	ck_assert_uint_eq(ls_fab_flow_hash(0, &c, &a, 17, 1, 2, 3), 0xd1189855u);
}
END_TEST

/* The emulator's IPv4 fast path hashes straight from the packet: it must give
 * exactly ls_fab_flow_hash, or ECMP would send a flow two ways. */
START_TEST(test_hash_v4_same)
{
	uint64_t s = 11;

	for (int i = 0; i < 100000; i++) {
		struct flow fl;
		uint32_t seed = (uint32_t)(s * 0x9e3779b97f4a7c15ULL >> 32);

		rand_flow(&s, 2 * i, &fl); /* even: IPv4 */
		ck_assert_int_eq(fl.src.family, LS_AF_INET);
		ck_assert_uint_eq(ls_fab_flow_hash_v4(seed, fl.src.a, fl.dst.a, fl.proto, fl.sport,
						      fl.dport),
				  ls_fab_flow_hash(seed, &fl.src, &fl.dst, fl.proto, fl.sport,
						   fl.dport, 0));
	}
}
END_TEST

/* ls_fab_mod is hash % n without a division, for every n a route can have. */
START_TEST(test_mod_exact)
{
	static const uint32_t edge[] = { 0, 1, 2, 3, 15, 16, 17, 0x7fffffffu, 0x80000000u,
					 0xfffffff0u, 0xfffffffeu, 0xffffffffu };
	uint64_t s = 5;

	for (uint8_t n = 1; n <= LS_FAB_MAX_ECMP; n++) {
		for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
			ck_assert_uint_eq(ls_fab_mod(edge[i], n), edge[i] % n);
		for (int i = 0; i < 200000; i++) {
			uint32_t h;

			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			h = (uint32_t)(s >> 32);
			ck_assert_uint_eq(ls_fab_mod(h, n), h % n);
			ck_assert_uint_eq(ls_fab_mod(n * (h / n) - 1, n), (n * (h / n) - 1) % n);
		}
	}
}
END_TEST

/* The inline IPv4 host lookup (the emulator's, per packet) finds every host
 * of a large fabric and nothing else, like the generic one. */
START_TEST(test_host_by_v4)
{
	struct ls_fabric *f = clos(2, 16, 16, 0); /* 256 hosts: 10.<leaf>.0.<host> */
	uint64_t s = 9;
	int found = 0;

	for (uint16_t i = 0; i < f->n_nodes; i++) {
		const struct ls_fab_node *n = &f->nodes[i];

		if (n->kind != LS_FAB_HOST || n->addr4.family != LS_AF_INET)
			continue;
		ck_assert_int_eq(ls_fab_host_by_v4(f, n->addr4.a), i);
		ck_assert_int_eq(ls_fab_host_by_addr(f, &n->addr4), i);
		found++;
	}
	ck_assert_int_eq(found, 256);
	for (int i = 0; i < 100000; i++) {
		struct ls_addr a = { .family = LS_AF_INET };
		uint32_t v = (uint32_t)rnd(&s);
		int want = -1;

		memcpy(a.a, &v, 4);
		if (i & 1) { /* near the hosts' addresses */
			a.a[0] = 10;
			a.a[1] %= 20;
			a.a[2] = (uint8_t)(a.a[2] < 200 ? 0 : 1);
			a.a[3] %= 20;
		}
		for (uint16_t k = f->n_switches; k < f->n_nodes; k++)
			if (ls_addr_eq(&f->nodes[k].addr4, &a))
				want = k;
		ck_assert_int_eq(ls_fab_host_by_v4(f, a.a), want);
	}
	ls_fab_free(f);
}
END_TEST

/* -------------------------------------------------------------------------
 * Topology and routing
 */

#define SW3 "'switches': [{'name': 'spine1', 'role': 'spine', 'ipv4': '10.255.0.1'}, " \
	"{'name': 'leaf1', 'role': 'leaf', 'ipv4': '10.255.1.1'}, " \
	"{'name': 'leaf2', 'role': 'leaf', 'ipv4': '10.255.1.2'}]"
#define LK2 "'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'spine1'}]"
#define H1 "{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24'}"
#define H2 "{'name': 'h2', 'leaf': 'leaf2', 'ipv4': '10.2.0.1/24'}"
#define HS2 "'hosts': [" H1 ", " H2 "]"
#define BASE SW3 ", " LK2 ", " HS2

START_TEST(test_topo_basic)
{
	struct ls_fabric *f = fab_ok("{" BASE "}");
	struct ls_addr a;
	char buf[LS_MAC_STRLEN];

	ck_assert_str_eq(f->file, "t.json");
	ck_assert_uint_eq(f->n_switches, 3);
	ck_assert_uint_eq(f->n_nodes, 5);
	ck_assert_uint_eq(f->n_links, 4);
	ck_assert_uint_eq(f->n_chans, 8);
	ck_assert_uint_eq(f->convergence_ns, 0);
	ck_assert_str_eq(f->link_names[0], "leaf1-spine1");
	ck_assert_str_eq(f->link_names[1], "leaf2-spine1");
	ck_assert_str_eq(f->link_names[2], "h1-leaf1");
	ck_assert_str_eq(f->link_names[3], "h2-leaf2");
	ck_assert_int_eq(ls_fab_link_find(f, "h2-leaf2"), 3);
	ck_assert_int_eq(ls_fab_link_find(f, "nope"), -1);
	ck_assert_int_eq(ls_fab_node_find(f, "spine1"), 0);
	ck_assert_int_eq(ls_fab_node_find(f, "h2"), 4);
	ck_assert_int_eq(ls_fab_node_find(f, "nope"), -1);
	/* channels: 2i = a->b (host->leaf), 2i+1 = b->a */
	for (int k = 0; k < f->n_chans; k++) {
		ck_assert_uint_eq(f->chans[k].id, k);
		ck_assert_uint_eq(f->chans[k].link, k / 2);
		ck_assert(f->chans[k].up && f->chans[k].route_up);
		ck_assert_uint_eq(f->chans[k].route_at_ns, 0);
		ck_assert_uint_eq(f->chans[k].p.delay_ns, 1000);
		ck_assert_uint_eq(f->chans[k].p.rate_bps, G10);
		ck_assert_uint_eq(f->chans[k].p.buffer_bytes, 1048576);
		ck_assert_uint_eq(f->chans[k].p.ecn_bytes, 131072);
		ck_assert_uint_eq(f->chans[k].p.mtu, 9000);
		ck_assert(f->chans[k].p.loss == 0);
	}
	ck_assert_uint_eq(f->chans[0].from, 1);
	ck_assert_uint_eq(f->chans[0].to, 0);
	ck_assert_uint_eq(f->chans[1].from, 0);
	ck_assert_uint_eq(f->nodes[3].kind, LS_FAB_HOST);
	ck_assert_uint_eq(f->nodes[3].leaf, 1);
	ck_assert_uint_eq(f->nodes[3].up_chan, 4);
	ck_assert_uint_eq(f->nodes[3].down_chan, 5);
	ck_assert_uint_eq(f->chans[4].from, 3);
	ck_assert_uint_eq(f->chans[4].to, 1);
	ck_assert_uint_eq(f->nodes[3].plen4, 24);
	ck_assert(!f->nodes[3].mac_known);
	ck_assert_str_eq(f->nodes[3].dev, "");
	/* outgoing lists in channel order */
	ck_assert_uint_eq(f->nodes[0].n_out, 2);
	ck_assert_uint_eq(f->nodes[0].out[0], 1);
	ck_assert_uint_eq(f->nodes[0].out[1], 3);
	ck_assert_uint_eq(f->nodes[1].n_out, 2);
	ck_assert_uint_eq(f->nodes[1].out[0], 0);
	ck_assert_uint_eq(f->nodes[1].out[1], 5);
	ck_assert_str_eq(ls_mac_fmt(&f->nodes[1].mac, buf, sizeof(buf)), "02:fa:00:00:00:02");
	ck_assert_str_eq(f->nodes[0].role, "spine");
	/* address lookup: hosts only */
	ck_assert_int_eq(ls_addr_parse("10.2.0.1", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), 4);
	ck_assert_int_eq(ls_addr_parse("10.2.0.2", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), -1);
	ck_assert_int_eq(ls_addr_parse("10.255.0.1", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), -1);
	check_clos_routes(f);
	ls_fab_free(f);
	ls_fab_free(NULL);
}
END_TEST

START_TEST(test_topo_params)
{
	struct ls_fabric *f = fab_ok("{'defaults': {'link': {'delay_ns': 2000, 'mtu': 1500}, "
		"'host_link': {'rate_bps': 1e11, 'buffer_bytes': 65536}}, 'convergence_ms': 5, "
		"'switches': [{'name': 's', 'role': 'spine', 'ipv6': 'fd00:ff::1', 'seed': 77, "
		"'mac': '02:00:00:00:00:aa'}, "
		"{'name': 'l1', 'role': 'leaf', 'ipv6': 'fd00:ff::2'}, "
		"{'name': 'l2', 'role': 'leaf', 'ipv6': 'fd00:ff::3'}], "
		"'links': [{'name': 'up1', 'a': 'l1', 'b': 's', 'delay_ns': 5000, "
		"'ab': {'rate_bps': 1000000000}, 'ba': {'loss': 0.5}}, {'a': 'l2', 'b': 's'}], "
		"'hosts': [{'name': 'x', 'leaf': 'l1', 'ipv6': 'fd00:1::5/64', 'mac': '02:00:00:00:00:01', "
		"'dev': 'net_memif0,id=1', 'up': {'delay_ns': 7}, 'down': {'ecn_bytes': 0}}, "
		"{'name': 'y', 'leaf': 'l2', 'ipv6': 'fd00:2::5/64', 'mtu': 9000, 'buffer_bytes': 9000}]}");
	struct ls_addr a;

	ck_assert_uint_eq(f->convergence_ns, 5000000);
	ck_assert_uint_eq(f->nodes[0].seed, 77);
	ck_assert_uint_eq(f->nodes[0].mac.b[5], 0xaa);
	ck_assert_str_eq(f->link_names[0], "up1");
	ck_assert_str_eq(f->link_names[1], "l2-s");
	ck_assert_uint_eq(f->chans[0].p.delay_ns, 5000);
	ck_assert_uint_eq(f->chans[0].p.rate_bps, 1000000000);
	ck_assert(f->chans[0].p.loss == 0);
	ck_assert_uint_eq(f->chans[1].p.delay_ns, 5000);
	ck_assert_uint_eq(f->chans[1].p.rate_bps, G10);
	ck_assert(f->chans[1].p.loss == 0.5);
	ck_assert_uint_eq(f->chans[1].p.mtu, 1500);
	ck_assert_uint_eq(f->chans[2].p.delay_ns, 2000);
	/* host links: built-in <- defaults.link <- defaults.host_link <- host <- up/down */
	ck_assert_uint_eq(f->chans[4].p.delay_ns, 7);
	ck_assert_uint_eq(f->chans[4].p.rate_bps, 100000000000ULL);
	ck_assert_uint_eq(f->chans[4].p.buffer_bytes, 65536);
	ck_assert_uint_eq(f->chans[4].p.mtu, 1500);
	ck_assert_uint_eq(f->chans[4].p.ecn_bytes, 131072);
	ck_assert_uint_eq(f->chans[5].p.delay_ns, 2000);
	ck_assert_uint_eq(f->chans[5].p.ecn_bytes, 0);
	ck_assert_uint_eq(f->chans[6].p.mtu, 9000);
	ck_assert_uint_eq(f->chans[6].p.buffer_bytes, 9000);
	ck_assert(f->nodes[3].mac_known);
	ck_assert_str_eq(f->nodes[3].dev, "net_memif0,id=1");
	ck_assert_uint_eq(f->nodes[3].plen6, 64);
	ck_assert_uint_eq(f->nodes[3].addr4.family, 0);
	ck_assert_int_eq(ls_addr_parse("fd00:2::5", &a), 0);
	ck_assert_int_eq(ls_fab_host_by_addr(f, &a), 4);
	ls_fab_free(f);
}
END_TEST

/* Link down/up, both directions, immediate convergence. */
static void
check_link_down(struct ls_fabric *f)
{
	int leaf1 = ls_fab_node_find(f, "leaf1"), spine1 = ls_fab_node_find(f, "spine1");
	int l = ls_fab_link_find(f, "leaf1-spine1");
	int spines = 0, leaves = 0;
	uint16_t up = (uint16_t)(2 * l), down = (uint16_t)(2 * l + 1);

	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(f->chans[up].from, leaf1);
	ck_assert_int_eq(f->chans[up].to, spine1);
	for (int i = 0; i < f->n_switches; i++) {
		spines += is_role(f, i, "spine");
		leaves += is_role(f, i, "leaf");
	}
	f->convergence_ns = 0;
	ls_fab_link_set_up(f, (uint16_t)l, false, 1000);
	ck_assert(!f->chans[up].up && !f->chans[up].route_up);
	ck_assert(!f->chans[down].up && !f->chans[down].route_up);
	for (int h = f->n_switches; h < f->n_nodes; h++) {
		bool local = f->nodes[h].leaf == leaf1;

		for (int s = 0; s < f->n_switches; s++) {
			const struct ls_fab_route *r = route(f, s, h);

			ck_assert(!route_has(r, up) && !route_has(r, down));
			if (s == leaf1 && !local)
				ck_assert_int_eq(r->n, spines - 1);
			else if (is_role(f, s, "leaf") && local && s != leaf1)
				/* remote leaves no longer go through spine1 */
				ck_assert_int_eq(r->n, spines - 1);
			else if (s == spine1 && local)
				/* spine1 detours through every other leaf */
				ck_assert_int_eq(r->n, leaves - 1);
		}
	}
	ls_fab_link_set_up(f, (uint16_t)l, true, 2000);
	check_clos_routes(f);

	/* one direction only: leaf1 stops using it, spine1 still reaches leaf1 */
	ls_fab_chan_set_up(f, up, false, 3000);
	for (int h = f->n_switches; h < f->n_nodes; h++) {
		if (f->nodes[h].leaf != leaf1) {
			ck_assert_int_eq(route(f, leaf1, h)->n, spines - 1);
		} else {
			ck_assert_int_eq(route(f, spine1, h)->n, 1);
			ck_assert_int_eq(route(f, spine1, h)->chan[0], down);
		}
	}
	ls_fab_chan_set_up(f, up, true, 4000);
	check_clos_routes(f);
}

/* Convergence delay: routing keeps the dead link until tick(now + delay). */
static void
check_convergence(struct ls_fabric *f)
{
	int leaf1 = ls_fab_node_find(f, "leaf1");
	int l = ls_fab_link_find(f, "leaf1-spine1");
	uint16_t up = (uint16_t)(2 * l);
	const uint64_t t0 = 1000000000ULL, conv = 5000000ULL;
	int remote = -1;

	for (int h = f->n_switches; h < f->n_nodes && remote < 0; h++)
		if (f->nodes[h].leaf != leaf1)
			remote = h;
	ck_assert_int_ge(remote, 0);
	f->convergence_ns = conv;
	ck_assert(!ls_fab_tick(f, t0)); /* nothing pending */
	ls_fab_chan_set_up(f, up, false, t0);
	ck_assert(!f->chans[up].up);
	ck_assert(f->chans[up].route_up);
	ck_assert_uint_eq(f->chans[up].route_at_ns, t0 + conv);
	ck_assert(route_has(route(f, leaf1, remote), up));
	/* the stale route still hashes flows onto the dead channel: they drop */
	ck_assert_int_eq(ls_fab_chan_enqueue(&f->chans[up], t0 + 1, 100, false, NULL, 0, NULL),
			 LS_FAB_DROP_DOWN);
	ck_assert(!ls_fab_tick(f, t0 + conv - 1));
	ck_assert(route_has(route(f, leaf1, remote), up));
	ck_assert(ls_fab_tick(f, t0 + conv));
	ck_assert(!f->chans[up].route_up);
	ck_assert_uint_eq(f->chans[up].route_at_ns, 0);
	ck_assert(!route_has(route(f, leaf1, remote), up));
	ck_assert(!ls_fab_tick(f, t0 + 2 * conv));

	/* back up: routing ignores it until the delay passes */
	ls_fab_chan_set_up(f, up, true, t0 + 10 * conv);
	ck_assert(f->chans[up].up);
	ck_assert(!route_has(route(f, leaf1, remote), up));
	ck_assert(!ls_fab_tick(f, t0 + 11 * conv - 1));
	ck_assert(ls_fab_tick(f, t0 + 11 * conv));
	check_clos_routes(f);

	/* a flap shorter than the delay is never seen by routing */
	ls_fab_chan_set_up(f, up, false, t0 + 20 * conv);
	ls_fab_chan_set_up(f, up, true, t0 + 20 * conv + 1000);
	ck_assert(!ls_fab_tick(f, t0 + 22 * conv));
	check_clos_routes(f);

	/* two pending changes at different times: each applies at its time */
	ls_fab_chan_set_up(f, up, false, t0 + 30 * conv);
	ls_fab_chan_set_up(f, (uint16_t)(up + 1), false, t0 + 30 * conv + 1000);
	ck_assert(ls_fab_tick(f, t0 + 31 * conv));
	ck_assert(!f->chans[up].route_up && f->chans[up + 1].route_up);
	ck_assert(!ls_fab_tick(f, t0 + 31 * conv + 999));
	ck_assert(ls_fab_tick(f, t0 + 31 * conv + 1000));
	ck_assert(!f->chans[up + 1].route_up);
	ls_fab_link_set_up(f, (uint16_t)l, true, t0 + 40 * conv);
	ck_assert(ls_fab_tick(f, t0 + 41 * conv));
	check_clos_routes(f);
}

START_TEST(test_routes_clos)
{
	static const int sizes[][3] = { { 2, 2, 2 }, { 4, 4, 4 }, { 3, 5, 1 }, { 1, 2, 3 } };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ls_fabric *f = clos(sizes[i][0], sizes[i][1], sizes[i][2], 0);

		ck_assert_uint_eq(f->n_nodes,
				  sizes[i][0] + sizes[i][1] * (1 + sizes[i][2]));
		check_clos_routes(f);
		if (sizes[i][0] > 1) {
			check_link_down(f);
			check_convergence(f);
		}
		ls_fab_free(f);
	}
}
END_TEST

START_TEST(test_routes_host_down)
{
	struct ls_fabric *f = clos(2, 2, 2, 0);
	int h3 = ls_fab_node_find(f, "h3");

	ls_fab_chan_set_up(f, f->nodes[h3].down_chan, false, 0);
	for (int s = 0; s < f->n_nodes; s++)
		ck_assert_uint_eq(route(f, s, h3)->n, 0);
	ck_assert_int_eq(ls_fab_next_hop(f, 0, (uint16_t)h3, 0), -ENETUNREACH);
	/* the host's up channel is not a route: nothing else changes */
	ls_fab_chan_set_up(f, f->nodes[h3].down_chan, true, 0);
	ls_fab_chan_set_up(f, f->nodes[h3].up_chan, false, 0);
	check_clos_routes(f);
	ls_fab_free(f);
}
END_TEST

/* Parallel links and a longer path: ECMP over both, leaf-to-leaf link used. */
START_TEST(test_routes_graph)
{
	struct ls_fabric *f = fab_ok("{'switches': ["
		"{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}, "
		"{'name': 'b', 'role': 'leaf', 'ipv4': '10.255.0.2'}, "
		"{'name': 'c', 'role': 'leaf', 'ipv4': '10.255.0.3'}], "
		"'links': [{'name': 'ab1', 'a': 'a', 'b': 'b'}, {'name': 'ab2', 'a': 'a', 'b': 'b'}, "
		"{'a': 'b', 'b': 'c'}], "
		"'hosts': [{'name': 'ha', 'leaf': 'a', 'ipv4': '10.1.0.1/24'}, "
		"{'name': 'hc', 'leaf': 'c', 'ipv4': '10.3.0.1/24'}]}");
	int ha = ls_fab_node_find(f, "ha"), hc = ls_fab_node_find(f, "hc");

	ck_assert_uint_eq(route(f, 0, hc)->n, 2);
	ck_assert_uint_eq(route(f, 0, hc)->chan[0], 0);
	ck_assert_uint_eq(route(f, 0, hc)->chan[1], 2);
	ck_assert_uint_eq(route(f, 1, hc)->n, 1);
	ck_assert_uint_eq(route(f, 1, hc)->chan[0], 4);
	ck_assert_uint_eq(route(f, 2, ha)->n, 1);
	ck_assert_uint_eq(route(f, 1, ha)->n, 2);
	ck_assert_uint_eq(route(f, 1, ha)->chan[0], 1);
	ck_assert_uint_eq(route(f, 1, ha)->chan[1], 3);
	/* cut b-c: hc unreachable from a and b, reachable from c */
	ls_fab_link_set_up(f, 2, false, 0);
	ck_assert_uint_eq(route(f, 0, hc)->n, 0);
	ck_assert_uint_eq(route(f, 1, hc)->n, 0);
	ck_assert_uint_eq(route(f, 2, hc)->n, 1);
	ls_fab_free(f);
}
END_TEST

/* -------------------------------------------------------------------------
 * Validation: one case per class, the key path must be in the message
 */

START_TEST(test_bad_keys_types)
{
	BAD("{" BASE ", 'bogus': 1}", "bogus", "unknown key");
	BAD("{'defaults': {'lnk': {}}, " BASE "}", "defaults.lnk", "unknown key");
	BAD("{'defaults': {'link': {'dealy_ns': 1}}, " BASE "}", "defaults.link.dealy_ns",
	    "unknown key");
	BAD("{'switches': [{'name': 'l', 'role': 'leaf', 'colour': 'red'}], " HS2 "}",
	    "switches[0].colour", "unknown key");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ab': {'name': 'x'}}], " HS2 "}",
	    "links[0].ab.name", "unknown key");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24', 'gateway': '10.2.0.254'}]}", "hosts[1].gateway", "unknown key");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24', 'up': {'a': 1}}]}", "hosts[1].up.a", "unknown key");
	/* wrong types */
	BAD("{'switches': {}, " HS2 "}", "switches", "expected array, got object");
	BAD("{'switches': [{'name': 5, 'role': 'leaf'}], " HS2 "}", "switches[0].name",
	    "expected string, got integer");
	BAD("{'switches': ['leaf1'], " HS2 "}", "switches[0]", "expected object, got string");
	BAD("{'convergence_ms': '5', " BASE "}", "convergence_ms", "expected integer");
	BAD("{'defaults': {'link': {'rate_bps': '10G'}}, " BASE "}", "defaults.link.rate_bps",
	    "expected integer, got string");
	BAD("{'defaults': {'link': {'loss': true}}, " BASE "}", "defaults.link.loss",
	    "expected number, got boolean");
	BAD("{'defaults': {'link': {'mtu': 1500.5}}, " BASE "}", "defaults.link.mtu",
	    "whole number");
	BAD("{'switches': [{'name': 's', 'role': 'leaf', 'ipv4': '10.0.0.1', 'seed': -1}], "
	    "'hosts': [{'name': 'h', 'leaf': 's', 'ipv4': '10.1.0.1/24'}]}", "switches[0].seed",
	    "between 0 and");
	/* required keys, bad values */
	BAD("{" SW3 ", " LK2 "}", "hosts", "required key missing");
	BAD("{'switches': [], " HS2 "}", "switches", "must not be empty");
	BAD("{'switches': [{'role': 'leaf'}], " HS2 "}", "switches[0].name",
	    "required key missing");
	BAD("{'switches': [{'name': 'l 1', 'role': 'leaf'}], " HS2 "}", "switches[0].name",
	    "invalid character");
	BAD("{'switches': [{'name': 'l', 'role': 'core'}], " HS2 "}", "switches[0].role",
	    "must be one of");
	BAD("{'switches': [{'name': 'l', 'role': 'leaf', 'ipv4': 'fd00::1'}], " HS2 "}",
	    "switches[0].ipv4", "must be an IPv4 address");
	BAD("{'switches': [{'name': 'l', 'role': 'leaf', 'mac': '01:00:00:00:00:01'}], " HS2 "}",
	    "switches[0].mac", "unicast MAC");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1'}]}",
	    "hosts[0].ipv4", "not an IPv4 prefix");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1'}]}", "hosts[0]",
	    "needs an address");
}
END_TEST

START_TEST(test_bad_ranges)
{
	BAD("{'defaults': {'link': {'rate_bps': 0}}, " BASE "}", "defaults.link.rate_bps",
	    "must be between 1 and");
	BAD("{'defaults': {'host_link': {'delay_ns': 10000000001}}, " BASE "}",
	    "defaults.host_link.delay_ns", "must be between 0 and 10000000000");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'loss': 1.5}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].loss", "between 0 and 1");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ba': {'loss': -0.1}}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].ba.loss", "between 0 and 1");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24', "
	    "'mtu': 67}]}", "hosts[0].mtu", "between 68 and 65535");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24', "
	    "'mtu': 65536}]}", "hosts[0].mtu", "between 68 and 65535");
	BAD("{'convergence_ms': -1, " BASE "}", "convergence_ms", "between 0 and");
	/* buffer < mtu: reported where the deciding key was set */
	BAD("{'defaults': {'link': {'buffer_bytes': 4000}}, " BASE "}", "defaults.link",
	    "buffer_bytes (4000) must be at least the mtu (9000)");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1', 'ab': {'buffer_bytes': 1000}}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[0].ab",
	    "must be at least the mtu");
	BAD("{'defaults': {'link': {'buffer_bytes': 9000}}, " SW3 ", 'links': "
	    "[{'a': 'leaf1', 'b': 'spine1', 'mtu': 9001}, {'a': 'leaf2', 'b': 'spine1'}], " HS2 "}",
	    "links[0]", "must be at least the mtu (9001)");
	/* host link: buffer from defaults.host_link, mtu from the host */
	BAD("{'defaults': {'host_link': {'buffer_bytes': 1500, 'mtu': 1500}}, " SW3 ", " LK2 ", "
	    "'hosts': [{'name': 'h1', 'leaf': 'leaf1', 'ipv4': '10.1.0.1/24', "
	    "'down': {'mtu': 1600}}]}", "hosts[0].down", "at least the mtu (1600)");
	/* defaults are checked on their own: they apply to links that set nothing */
	BAD("{'defaults': {'host_link': {'buffer_bytes': 1500}}, " BASE "}", "defaults.host_link",
	    "buffer_bytes (1500) must be at least the mtu (9000)");
}
END_TEST

START_TEST(test_bad_duplicates)
{
	BAD("{'switches': [{'name': 'x', 'role': 'leaf', 'ipv4': '10.255.0.1'}, "
	    "{'name': 'x', 'role': 'leaf', 'ipv4': '10.255.0.2'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'x', 'ipv4': '10.1.0.1/24'}]}",
	    "switches[1].name", "duplicate name \"x\" (also switches[0])");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'leaf2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24'}]}", "hosts[1].name", "duplicate name \"leaf2\" (also switches[2])");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h1', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24'}]}", "hosts[1].name", "duplicate name \"h1\" (also hosts[0])");
	BAD("{" SW3 ", 'links': [{'name': 'u', 'a': 'leaf1', 'b': 'spine1'}, "
	    "{'name': 'u', 'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[1].name",
	    "duplicate link name \"u\" (also links[0])");
	/* a default name that collides: parallel links need names */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf1', 'b': 'spine1'}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "links[1]",
	    "duplicate link name \"leaf1-spine1\"");
	/* a host link's name taken by a switch link */
	BAD("{" SW3 ", 'links': [{'name': 'h1-leaf1', 'a': 'leaf1', 'b': 'spine1'}, "
	    "{'a': 'leaf2', 'b': 'spine1'}], " HS2 "}", "hosts[0]",
	    "duplicate link name \"h1-leaf1\" (also links[0])");
	/* addresses: across switches and hosts, both families */
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.255.1.1/16'}]}", "hosts[1].ipv4", "address 10.255.1.1 already used by \"leaf1\"");
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.1.0.1/24'}]}", "hosts[1].ipv4", "already used by \"h1\"");
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv6': 'fd00::1'}, "
	    "{'name': 'b', 'role': 'leaf', 'ipv6': 'fd00::1'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'a', 'ipv6': 'fd00:1::1/64'}]}", "switches[1].ipv6",
	    "already used by \"a\"");
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'a', 'ipv4': '10.1.0.1/24', "
	    "'mac': '02:fa:00:00:00:01'}]}", "hosts[0].mac", "already used by \"a\"");
}
END_TEST

START_TEST(test_bad_structure)
{
	/* dangling link end, link to a host, link to itself */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'spine1'}, "
	    "{'name': 'l1s1b', 'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'spine9'}], " HS2 "}",
	    "links[3].b", "no switch named \"spine9\"");
	BAD("{" SW3 ", 'links': [{'a': 'h1', 'b': 'spine1'}], " HS2 "}", "links[0].a",
	    "no switch named \"h1\"");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'leaf1'}], " HS2 "}", "links[0].b",
	    "a link to itself");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1'}], " HS2 "}", "links[0].b", "required key missing");
	/* host on a spine, on nothing */
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'spine1', "
	    "'ipv4': '10.1.0.1/24'}]}", "hosts[0].leaf", "\"spine1\" is a spine");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf7', "
	    "'ipv4': '10.1.0.1/24'}]}", "hosts[0].leaf", "no switch named \"leaf7\"");
	/* a leaf without uplink when there are spines */
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}], 'hosts': [" H1 "]}",
	    "switches[2]", "leaf \"leaf2\" has no link to a spine");
	BAD("{" SW3 ", 'links': [{'a': 'leaf1', 'b': 'spine1'}, {'a': 'leaf2', 'b': 'leaf1'}], "
	    "'hosts': [" H1 "]}", "switches[2]", "no link to a spine");
	/* hosts that cannot reach each other (no spines: two islands) */
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}, "
	    "{'name': 'b', 'role': 'leaf', 'ipv4': '10.255.0.2'}, "
	    "{'name': 'c', 'role': 'leaf', 'ipv4': '10.255.0.3'}], "
	    "'links': [{'a': 'a', 'b': 'b'}], "
	    "'hosts': [{'name': 'h1', 'leaf': 'a', 'ipv4': '10.1.0.1/24'}, "
	    "{'name': 'h2', 'leaf': 'b', 'ipv4': '10.2.0.1/24'}, "
	    "{'name': 'h3', 'leaf': 'c', 'ipv4': '10.3.0.1/24'}]}", "hosts[2]", "cannot reach h1");
	/* host address not a host of its own prefix */
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', "
	    "'ipv4': '10.1.0.0/24'}]}", "hosts[0].ipv4", "network address");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', "
	    "'ipv4': '10.1.0.255/24'}]}", "hosts[0].ipv4", "broadcast address");
	BAD("{" SW3 ", " LK2 ", 'hosts': [{'name': 'h1', 'leaf': 'leaf1', "
	    "'ipv4': '10.1.0.1/24', 'ipv6': 'fd00:1::/64'}]}", "hosts[0].ipv6", "network address");
	/* a switch without an address of a family the hosts use */
	BAD("{" SW3 ", " LK2 ", 'hosts': [" H1 ", {'name': 'h2', 'leaf': 'leaf2', "
	    "'ipv4': '10.2.0.1/24', 'ipv6': 'fd00:2::1/64'}]}", "switches[0]",
	    "needs an \"ipv6\" address: hosts[1] (h2) uses IPv6");
	BAD("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv6': 'fd00::1'}], "
	    "'hosts': [{'name': 'h', 'leaf': 'a', 'ipv4': '10.1.0.1/24'}]}", "switches[0]",
	    "needs an \"ipv4\" address");
}
END_TEST

START_TEST(test_good_edge_cases)
{
	struct ls_fabric *f;

	/* a single leaf, no links: fine; /31 and /32 have no network address */
	f = fab_ok("{'switches': [{'name': 'a', 'role': 'leaf', 'ipv4': '10.255.0.1'}], "
		   "'hosts': [{'name': 'h1', 'leaf': 'a', 'ipv4': '10.1.0.0/31'}, "
		   "{'name': 'h2', 'leaf': 'a', 'ipv4': '10.1.0.1/31'}, "
		   "{'name': 'h3', 'leaf': 'a', 'ipv4': '10.1.0.9/32'}]}");
	ck_assert_uint_eq(f->n_links, 3);
	ck_assert_uint_eq(route(f, 0, 2)->n, 1);
	ck_assert_uint_eq(route(f, 0, 2)->chan[0], f->nodes[2].down_chan);
	ls_fab_free(f);
}
END_TEST

/* -------------------------------------------------------------------------
 * Files
 */

START_TEST(test_load_files)
{
	char path[512], err[ERR_LEN], want[700];
	struct ls_fabric *f = NULL;
	int rc;

	ls_test_write_json("good.json", "{" BASE "}", path, sizeof(path));
	rc = ls_fab_load(path, &f, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(f->file, path);
	ls_fab_free(f);

	ls_test_write_json("syntax.json", "{\n  'switches': [\n    {'name': 'a',}\n  ]\n}\n", path,
		   sizeof(path));
	rc = ls_fab_load(path, &f, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(f);
	snprintf(want, sizeof(want), "%s: line 3 column ", path);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "\"%s\"", err);

	ls_test_write_json("dup.json", "{'hosts': [], 'hosts': []}", path, sizeof(path));
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "duplicate") != NULL, "\"%s\"", err);

	ls_test_write_json("empty.json", "", path, sizeof(path));
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "empty file") != NULL, "\"%s\"", err);

	ls_test_write_json("bad.json", "{" BASE ", 'x': 1}", path, sizeof(path));
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: x: unknown key", path);
	ck_assert_str_eq(err, want);

	snprintf(path, sizeof(path), "%s/missing.json", ls_test_tmpdir);
	ck_assert_int_eq(ls_fab_load(path, &f, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(ls_fab_load(ls_test_tmpdir, &f, err, sizeof(err)), -EISDIR);
	unlink(path);
}
END_TEST

START_TEST(test_example_files)
{
	const char *root = getenv("LS_SOURCE_ROOT");
	char dir[512], path[1024], err[ERR_LEN];
	struct dirent *de;
	int count = 0;
	DIR *d;

	if (root == NULL) {
		printf("test_fabric: LS_SOURCE_ROOT unset, skipping config/fabric check\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/config/fabric", root);
	d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		struct ls_fabric *f = NULL;
		int rc, S = 0, L = 0, H;

		if (len < 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rc = ls_fab_load(path, &f, err, sizeof(err));
		ck_assert_msg(rc == 0, "%s", err);
		for (int i = 0; i < f->n_switches; i++) {
			S += is_role(f, i, "spine");
			L += is_role(f, i, "leaf");
		}
		H = (f->n_nodes - f->n_switches) / L;
		/* the name says spines x leaves x hosts per leaf */
		snprintf(path, sizeof(path), "%dx%dx%d.json", S, L, H);
		ck_assert_str_eq(de->d_name, path);
		check_clos_routes(f);
		check_link_down(f);
		check_convergence(f);
		ls_fab_free(f);
		count++;
	}
	closedir(d);
	ck_assert_int_ge(count, 2);
}
END_TEST

static Suite *
fabric_suite(void)
{
	Suite *s = suite_create("fabric");
	TCase *tc;

	tc = tcase_create("link");
	tcase_add_test(tc, test_link_single);
	tcase_add_test(tc, test_link_queue);
	tcase_add_test(tc, test_link_ecn);
	tcase_add_test(tc, test_link_tail_drop);
	tcase_add_test(tc, test_link_loss);
	tcase_add_test(tc, test_link_mtu_down);
	tcase_add_test(tc, test_link_delay_change);
	suite_add_tcase(s, tc);

	tc = tcase_create("ecmp");
	tcase_add_test(tc, test_hash_spread);
	tcase_add_test(tc, test_hash_spread_ports);
	tcase_add_test(tc, test_hash_stable_independent);
	tcase_add_test(tc, test_next_hop);
	tcase_add_test(tc, test_hash_pinned);
	tcase_add_test(tc, test_hash_v4_same);
	tcase_add_test(tc, test_mod_exact);
	tcase_add_test(tc, test_host_by_v4);
	suite_add_tcase(s, tc);

	tc = tcase_create("topology");
	tcase_add_test(tc, test_topo_basic);
	tcase_add_test(tc, test_topo_params);
	tcase_add_test(tc, test_routes_clos);
	tcase_add_test(tc, test_routes_host_down);
	tcase_add_test(tc, test_routes_graph);
	tcase_add_test(tc, test_good_edge_cases);
	suite_add_tcase(s, tc);

	tc = tcase_create("validation");
	tcase_add_test(tc, test_bad_keys_types);
	tcase_add_test(tc, test_bad_ranges);
	tcase_add_test(tc, test_bad_duplicates);
	tcase_add_test(tc, test_bad_structure);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_test(tc, test_load_files);
	tcase_add_test(tc, test_example_files);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN_TMPDIR(fabric_suite, "test_fabric")
