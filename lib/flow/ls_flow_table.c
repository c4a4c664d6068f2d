/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-lcore flow table: rte_hash holds the keys and hands out a
 * position per key; the position indexes an array of 64-byte ls_flow lines.
 * No data pointer is stored (rte_hash's key slot is enough), so a flow costs
 * its key slot plus one cache line. One writer (the owning lcore): the hash
 * is created without the multi-writer and read-write-concurrency flags, so
 * lookups take no lock.
 *
 * Ageing sweeps the state array a budget at a time (the lcore's housekeeping
 * tick), so one call never takes more than a few microseconds.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>

#include "ls_flow.h"

struct ls_flow_table {
	struct rte_hash *h;
	struct ls_flow *flows;
	uint32_t cap;
	uint32_t count;
	uint32_t sweep;
	uint64_t bytes;   /* EAL heap bytes the table took, measured at create */
};

static uint64_t
heap_allocated(void)
{
	struct rte_malloc_socket_stats st;
	uint64_t sum = 0;

	for (int s = 0; s < RTE_MAX_NUMA_NODES; s++)
		if (rte_malloc_get_socket_stats(s, &st) == 0)
			sum += st.heap_allocsz_bytes;
	return sum;
}

struct ls_flow_table *
ls_flow_table_create(const struct ls_flow_table_params *p)
{
	struct rte_hash_parameters hp = {
		.entries = p != NULL ? p->max_flows : 0,
		.key_len = sizeof(struct ls_flow_key),
		.hash_func = rte_hash_crc,
		/* a full bucket spills into the extendable table instead of
		 * failing an insert the capacity allows */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	uint64_t before = heap_allocated();
	struct ls_flow_table *t;

	if (p == NULL || p->name == NULL || p->max_flows < 8) {
		errno = EINVAL;
		return NULL;
	}
	hp.name = p->name;
	hp.socket_id = p->socket_id;
	t = rte_zmalloc_socket("ls_flow_table", sizeof(*t), 64, p->socket_id);
	if (t != NULL)
		t->h = rte_hash_create(&hp);
	if (t == NULL || t->h == NULL) {
		errno = t != NULL && rte_errno == EEXIST ? EEXIST : ENOMEM;
		ls_flow_table_free(t);
		return NULL;
	}
	/* rte_hash positions run 0 .. entries - 1 (it rounds its own slots up,
	 * but never hands out a position past what it was asked to hold). */
	t->cap = (uint32_t)rte_hash_max_key_id(t->h) + 1;
	t->flows = rte_zmalloc_socket("ls_flows", sizeof(struct ls_flow) * t->cap, 64,
				      p->socket_id);
	if (t->flows == NULL) {
		ls_flow_table_free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->bytes = heap_allocated() - before;
	return t;
}

/* rte_hash_free and rte_free take NULL. */
void
ls_flow_table_free(struct ls_flow_table *t)
{
	if (t != NULL)
		rte_hash_free(t->h), rte_free(t->flows);
	rte_free(t);
}

void
ls_flow_lookup_bulk(struct ls_flow_table *t, const struct ls_flow_key **keys,
		    unsigned int n, int32_t *idx)
{
	rte_hash_lookup_bulk(t->h, (const void **)keys, n, idx);
}

int32_t
ls_flow_add(struct ls_flow_table *t, const struct ls_flow_key *key)
{
	int32_t pos = rte_hash_add_key(t->h, key);

	if (pos < 0)
		return -ENOSPC;
	if ((uint32_t)pos >= t->cap)
		return -ENOSPC; /* cannot happen: positions stay under max_key_id */
	if (!t->flows[pos].used) {
		memset(&t->flows[pos], 0, sizeof(t->flows[pos]));
		t->flows[pos].used = 1;
		t->flows[pos].path = 0xff;
		t->count++;
	}
	return pos;
}

struct ls_flow *
ls_flow_at(struct ls_flow_table *t, int32_t idx)
{
	return &t->flows[idx];
}

const struct ls_flow_key *
ls_flow_key_at(const struct ls_flow_table *t, int32_t idx)
{
	void *key;

	if (idx < 0 || (uint32_t)idx >= t->cap || !t->flows[idx].used)
		return NULL;
	if (rte_hash_get_key_with_position(t->h, idx, &key) != 0)
		return NULL;
	return key;
}

int
ls_flow_del(struct ls_flow_table *t, int32_t idx)
{
	const struct ls_flow_key *k = ls_flow_key_at(t, idx);

	if (k == NULL)
		return -ENOENT;
	if (rte_hash_del_key(t->h, k) < 0)
		return -ENOENT;
	t->flows[idx].used = 0;
	t->count--;
	return 0;
}

unsigned int
ls_flow_age(struct ls_flow_table *t, uint32_t now_ms, uint32_t idle_ms, unsigned int budget)
{
	unsigned int removed = 0;

	for (; budget > 0; budget--) {
		struct ls_flow *f = &t->flows[t->sweep];

		if (f->used && now_ms - f->last_ms >= idle_ms &&
		    ls_flow_del(t, (int32_t)t->sweep) == 0)
			removed++;
		if (++t->sweep >= t->cap)
			t->sweep = 0;
	}
	return removed;
}

uint32_t
ls_flow_count(const struct ls_flow_table *t)
{
	return t->count;
}

uint32_t
ls_flow_capacity(const struct ls_flow_table *t)
{
	return t->cap;
}

uint64_t
ls_flow_table_bytes(const struct ls_flow_table *t)
{
	return t->bytes;
}
