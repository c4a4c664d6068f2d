/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_flowtab: the data path's flow table (lib/flow, a bucketised cuckoo
 * hash with the key beside the state) against rte_hash laid out as the table
 * was before it (48-byte keys in rte_hash, extendable table, the 64-byte
 * state in an array indexed by rte_hash's position), same keys, same core,
 * same process, interleaved rounds.
 *
 * What is timed is what the bridge does per burst: a bulk lookup of 32 keys,
 * then for each hit the flow's state is prefetched and updated (packets,
 * bytes, last seen). Keys come in a random order over all flows, so at
 * 1 M flows nearly every lookup misses the caches, as the data path's do
 * when 1 M flows are active; the keys themselves are read in order (a
 * shuffled copy), as the bridge's are hot from parsing. Also timed: filling the table (every key added).
 *
 * Usage: bench_flowtab [EAL args] -- [--flows N] [--secs S] [--rounds R]
 * e.g. build/tools/bench/bench_flowtab --no-huge -m 1024 --no-pci -l 1 -- --flows 1048576
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>

#include "ls_flow.h"

#define BURST 32

static uint32_t n_flows = 1u << 20;
static double secs = 2.0;
static unsigned int rounds = 3;
static struct ls_flow_key *keys;    /* the flows, in the order added */
static struct ls_flow_key *stream;  /* the same keys shuffled: the lookups, read in order */

/* rte_hash as lib/flow used it: keys in rte_hash, state by position. */
struct rh {
	struct rte_hash *h;
	struct ls_flow *st;
};

static uint64_t
heap_bytes(void)
{
	struct rte_malloc_socket_stats s;
	uint64_t sum = 0;

	for (int i = 0; i < RTE_MAX_NUMA_NODES; i++)
		if (rte_malloc_get_socket_stats(i, &s) == 0)
			sum += s.heap_allocsz_bytes;
	return sum;
}

static int
rh_create(struct rh *r)
{
	struct rte_hash_parameters hp = {
		.name = "bench_rh", .entries = n_flows, .key_len = sizeof(struct ls_flow_key),
		.hash_func = rte_hash_crc, .socket_id = -1,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};

	r->h = rte_hash_create(&hp);
	if (r->h == NULL)
		return -1;
	r->st = rte_zmalloc("bench_rh_st", sizeof(*r->st) * (rte_hash_max_key_id(r->h) + 1), 64);
	return r->st == NULL ? -1 : 0;
}

static void
rh_free(struct rh *r)
{
	rte_hash_free(r->h);
	rte_free(r->st);
}

/* One pass over every flow in bursts; the state update the bridge makes. */
static uint64_t
pass_rh(struct rh *r, uint32_t ms)
{
	const void *kp[BURST];
	int32_t idx[BURST];
	uint64_t hits = 0;

	for (uint32_t i = 0; i + BURST <= n_flows; i += BURST) {
		for (unsigned int j = 0; j < BURST; j++)
			kp[j] = &stream[i + j];
		rte_hash_lookup_bulk(r->h, kp, BURST, idx);
		for (unsigned int j = 0; j < BURST; j++)
			if (idx[j] >= 0)
				rte_prefetch0(&r->st[idx[j]]);
		for (unsigned int j = 0; j < BURST; j++)
			if (idx[j] >= 0) {
				r->st[idx[j]].pkts++;
				r->st[idx[j]].bytes += 64;
				r->st[idx[j]].last_ms = ms;
				hits++;
			}
	}
	return hits;
}

static uint64_t
pass_ls(struct ls_flow_table *t, uint32_t ms)
{
	const struct ls_flow_key *kp[BURST];
	int32_t idx[BURST];
	uint64_t hits = 0;

	for (uint32_t i = 0; i + BURST <= n_flows; i += BURST) {
		for (unsigned int j = 0; j < BURST; j++)
			kp[j] = &stream[i + j];
		ls_flow_lookup_bulk(t, kp, BURST, idx);
		for (unsigned int j = 0; j < BURST; j++)
			if (idx[j] >= 0)
				rte_prefetch0(ls_flow_at(t, idx[j]));
		for (unsigned int j = 0; j < BURST; j++)
			if (idx[j] >= 0) {
				struct ls_flow *f = ls_flow_at(t, idx[j]);

				f->pkts++;
				f->bytes += 64;
				f->last_ms = ms;
				hits++;
			}
	}
	return hits;
}

/* Lookups per second over about secs of passes. */
static double
run(struct rh *r, struct ls_flow_table *t)
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc(), hits = 0, n = 0;

	do {
		hits += r != NULL ? pass_rh(r, (uint32_t)n) : pass_ls(t, (uint32_t)n);
		n += n_flows / BURST * BURST;
	} while (rte_rdtsc() - t0 < (uint64_t)(secs * (double)hz));
	if (hits != n) {
		fprintf(stderr, "bench_flowtab: %" PRIu64 " of %" PRIu64 " found\n", hits, n);
		exit(1);
	}
	return (double)n * (double)hz / (double)(rte_rdtsc() - t0);
}

static void
make_keys(void)
{
	uint32_t *order = malloc(sizeof(*order) * n_flows);

	keys = calloc(n_flows, sizeof(*keys));
	stream = calloc(n_flows, sizeof(*stream));
	if (keys == NULL || stream == NULL || order == NULL) {
		fprintf(stderr, "bench_flowtab: out of memory\n");
		exit(1);
	}
	/* IPv4-mapped addresses counting up, ports counting, as a cluster's */
	for (uint32_t i = 0; i < n_flows; i++) {
		struct ls_flow_key *k = &keys[i];

		k->src[10] = k->src[11] = k->dst[10] = k->dst[11] = 0xff;
		k->src[12] = 10;
		k->src[13] = (uint8_t)(i >> 16);
		k->src[14] = (uint8_t)(i >> 8);
		k->src[15] = (uint8_t)i;
		k->dst[12] = 10;
		k->dst[13] = 200;
		k->dst[15] = (uint8_t)(i % 97);
		k->sport = (uint16_t)(1024 + i % 50000);
		k->dport = 0xb712;  /* 4791, network order on little-endian */
		k->proto = 17;
		k->family = 4;
		order[i] = i;
	}
	for (uint32_t i = n_flows - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(((uint64_t)rand() << 31 ^ (uint64_t)rand()) % (i + 1));
		uint32_t x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (uint32_t i = 0; i < n_flows; i++)
		stream[i] = keys[order[i]];
	free(order);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"flows", required_argument, NULL, 'f'},
		{"secs", required_argument, NULL, 's'},
		{"rounds", required_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	struct ls_flow_table *t;
	struct rh r;
	uint64_t b0, b1, b2, c0, c1, c2;
	double hz, lr = 0, ll = 0;
	int n = rte_eal_init(argc, argv), o;

	if (n < 0) {
		fprintf(stderr, "bench_flowtab: EAL init failed\n");
		return 1;
	}
	argc -= n;
	argv += n;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'f')
			n_flows = (uint32_t)strtoul(optarg, NULL, 0);
		else if (o == 's')
			secs = strtod(optarg, NULL);
		else if (o == 'r')
			rounds = (unsigned int)strtoul(optarg, NULL, 0);
		else
			return 2;
	}
	if (n_flows < BURST || rounds < 1) {
		fprintf(stderr, "bench_flowtab: --flows >= %d, --rounds >= 1\n", BURST);
		return 2;
	}
	hz = (double)rte_get_tsc_hz();
	make_keys();
	b0 = heap_bytes();
	if (rh_create(&r) < 0) {
		fprintf(stderr, "bench_flowtab: rte_hash of %u: out of memory (-m)\n", n_flows);
		return 1;
	}
	b1 = heap_bytes();
	t = ls_flow_table_create(&(struct ls_flow_table_params){
		.name = "bench_ls", .max_flows = n_flows, .socket_id = -1});
	if (t == NULL) {
		fprintf(stderr, "bench_flowtab: ls_flow_table of %u: out of memory (-m)\n", n_flows);
		return 1;
	}
	b2 = heap_bytes();
	c0 = rte_rdtsc();
	for (uint32_t i = 0; i < n_flows; i++)
		if (rte_hash_add_key(r.h, &keys[i]) < 0) {
			fprintf(stderr, "bench_flowtab: rte_hash refused flow %u\n", i);
			return 1;
		}
	c1 = rte_rdtsc();
	for (uint32_t i = 0; i < n_flows; i++)
		if (ls_flow_add(t, &keys[i]) < 0) {
			fprintf(stderr, "bench_flowtab: ls_flow_table refused flow %u\n", i);
			return 1;
		}
	c2 = rte_rdtsc();
	printf("bench_flowtab: %u flows, burst %d, %.2f GHz; add: rte_hash %.0f cycles/flow, "
	       "ls_flow %.0f; bytes/flow: rte_hash + state %.1f, ls_flow %.1f\n",
	       n_flows, BURST, hz / 1e9, (double)(c1 - c0) / n_flows, (double)(c2 - c1) / n_flows,
	       (double)(b1 - b0) / n_flows, (double)(b2 - b1) / n_flows);
	for (unsigned int i = 0; i < rounds; i++) {
		double a = run(&r, NULL), b = run(NULL, t);

		printf("bench_flowtab: round %u: rte_hash %.2f M lookups/s (%.0f cycles), "
		       "ls_flow %.2f M/s (%.0f cycles), ls_flow / rte_hash %.3f\n",
		       i + 1, a / 1e6, hz / a, b / 1e6, hz / b, b / a);
		lr += a / rounds;
		ll += b / rounds;
	}
	printf("bench_flowtab: summary: rte_hash %.2f M/s (%.0f cycles/lookup), ls_flow %.2f M/s "
	       "(%.0f cycles/lookup), ratio %.3f\n", lr / 1e6, hz / lr, ll / 1e6, hz / ll, ll / lr);
	ls_flow_table_free(t);
	rh_free(&r);
	free(keys);
	free(stream);
	rte_eal_cleanup();
	return 0;
}
