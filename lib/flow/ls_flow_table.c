/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-lcore flow table: a bucketised cuckoo hash whose entries hold the
 * key beside the state.
 *
 * Why not rte_hash (which this table was until tools/bench/bench_flowtab
 * measured both): rte_hash keeps its keys in a store of its own, so a
 * lookup at 1 M flows misses on three lines (bucket, key, then the state the
 * caller keeps by position), and a 48-byte key behind rte_hash's 8-byte data
 * pointer straddles two lines one time in four. Here an entry is 128 bytes,
 * aligned: the 64-byte state, then the key. A lookup touches the bucket and
 * the entry's two adjacent lines, fetched together.
 *
 * Buckets are one cache line: 8 slots of a 16-bit signature and an entry
 * index. A key lives in its primary bucket or its alternate (primary XOR a
 * function of the signature, so either gives the other). There are two
 * slots per flow of capacity; an insert goes to the primary, else the
 * alternate, else moves a resident of either bucket to its own other
 * bucket (two moves deep at most). The hash is CRC32-C (rte_hash_crc: an instruction on x86 and
 * ARMv8) seeded at random per table, so keys cannot be chosen offline to
 * collide; a key that finds no room is refused (the bridge counts it in
 * flows_full and forwards the frame unmanaged).
 *
 * One writer (the owning lcore); no locks. The control thread may read
 * state and keys (flows command): an entry's key is written before its
 * slot is published and stays until the flow is removed.
 *
 * Ageing sweeps the entries a budget at a time (the lcore's housekeeping
 * tick), so one call never takes more than a few microseconds.
 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_random.h>
#include <rte_vect.h>

#include "ls_flow.h"

#define SLOTS 8
#define BULK_MAX 64

struct bkt {
	uint16_t sig[SLOTS];  /* 0: the slot is free */
	uint32_t idx[SLOTS];
	uint8_t pad[16];
} __attribute__((aligned(64)));

struct ent {
	struct ls_flow f;         /* first line: what the data path reads and writes */
	struct ls_flow_key key;   /* second line: compared on lookup */
	uint8_t pad[16];
} __attribute__((aligned(128)));

_Static_assert(sizeof(struct bkt) == 64, "a bucket is one line");
_Static_assert(sizeof(struct ent) == 128, "an entry is two lines");

struct ls_flow_table {
	struct bkt *bkt;
	struct ent *ent;
	uint32_t *free;     /* stack of free entry indexes */
	uint32_t n_free;
	uint32_t mask;      /* buckets - 1 */
	uint32_t seed;
	uint32_t cap;
	uint32_t count;
	uint32_t sweep;
	uint64_t bytes;     /* EAL heap bytes the table took, measured at create */
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

/* CRC is linear: keys that differ in a pattern (addresses and ports
 * counting up) get hashes that differ in a pattern too, and fill some
 * buckets while others stay empty. A multiply-xorshift finaliser (murmur3's)
 * spreads them. */
static inline uint32_t
hash(const struct ls_flow_table *t, const struct ls_flow_key *k)
{
	uint32_t h = rte_hash_crc(k, sizeof(*k), t->seed);

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	return h ^ h >> 16;
}

/* The bucket uses the hash's low bits, the signature its high ones. */
static inline uint16_t
sig_of(uint32_t h)
{
	uint16_t s = (uint16_t)(h >> 16);

	return s != 0 ? s : 1;
}

/* Primary and alternate are each other's XOR with this (never 0). */
static inline uint32_t
alt_of(const struct ls_flow_table *t, uint16_t sig)
{
	uint32_t a = ((uint32_t)sig * 0x9e3779b1u >> 8) & t->mask;

	return a != 0 ? a : 1;
}

static inline bool
key_eq(const struct ls_flow_key *a, const struct ls_flow_key *b)
{
	const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;

	return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]) |
		(x[4] ^ y[4]) | (x[5] ^ y[5])) == 0;
}

/* Slots of b holding sig, as a bit mask (bit j: slot j). The eight
 * signatures are one 16-byte vector: one compare instead of eight (the
 * loop was a fifth of a lookup's cycles with the table in cache). */
static inline unsigned int
sig_match(const struct bkt *b, uint16_t sig)
{
#if defined(RTE_ARCH_X86)
	__m128i eq = _mm_cmpeq_epi16(_mm_load_si128((const __m128i *)b->sig),
				     _mm_set1_epi16((short)sig));

	/* 16-bit lanes of all ones or zeros to bytes, one bit each */
	return (unsigned int)_mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128()));
#elif defined(RTE_ARCH_ARM64)
	static const uint8_t bit[8] = {1, 2, 4, 8, 16, 32, 64, 128};
	uint8x8_t eq = vmovn_u16(vceqq_u16(vld1q_u16(b->sig), vdupq_n_u16(sig)));

	return vaddv_u8(vand_u8(eq, vld1_u8(bit)));
#else
	unsigned int m = 0;

	for (unsigned int j = 0; j < SLOTS; j++)
		m |= (unsigned int)(b->sig[j] == sig) << j;
	return m;
#endif
}

static int32_t
find_in(const struct ls_flow_table *t, const struct bkt *b, uint16_t sig,
	const struct ls_flow_key *k)
{
	for (unsigned int m = sig_match(b, sig); m != 0; m &= m - 1) {
		uint32_t i = b->idx[__builtin_ctz(m)];

		if (key_eq(&t->ent[i].key, k))
			return (int32_t)i;
	}
	return -1;
}

static int32_t
find(const struct ls_flow_table *t, const struct ls_flow_key *k, uint32_t h)
{
	uint16_t sig = sig_of(h);
	uint32_t b1 = h & t->mask;
	int32_t i = find_in(t, &t->bkt[b1], sig, k);

	return i >= 0 ? i : find_in(t, &t->bkt[b1 ^ alt_of(t, sig)], sig, k);
}

struct ls_flow_table *
ls_flow_table_create(const struct ls_flow_table_params *p)
{
	uint64_t before = heap_allocated();
	struct ls_flow_table *t;
	uint32_t nb;

	if (p == NULL || p->name == NULL || p->max_flows < 8 || p->max_flows > 1u << 30) {
		errno = EINVAL;
		return NULL;
	}
	/* two slots per flow: buckets = capacity rounded up to a power of two / 4 */
	nb = RTE_MAX(rte_align32pow2(p->max_flows) / (SLOTS / 2), 8u);
	t = rte_zmalloc_socket("ls_flow_table", sizeof(*t), 64, p->socket_id);
	if (t == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	t->cap = p->max_flows;
	t->mask = nb - 1;
	t->seed = (uint32_t)rte_rand();
	t->bkt = rte_zmalloc_socket("ls_flow_bkt", sizeof(*t->bkt) * nb, 64, p->socket_id);
	t->ent = rte_zmalloc_socket("ls_flow_ent", sizeof(*t->ent) * t->cap, 128, p->socket_id);
	t->free = rte_malloc_socket("ls_flow_free", sizeof(*t->free) * t->cap, 64, p->socket_id);
	if (t->bkt == NULL || t->ent == NULL || t->free == NULL) {
		ls_flow_table_free(t);
		errno = ENOMEM;
		return NULL;
	}
	/* hand out low indexes first */
	for (uint32_t i = 0; i < t->cap; i++)
		t->free[i] = t->cap - 1 - i;
	t->n_free = t->cap;
	t->bytes = heap_allocated() - before;
	return t;
}

/* rte_free takes NULL. */
void
ls_flow_table_free(struct ls_flow_table *t)
{
	if (t != NULL) {
		rte_free(t->bkt);
		rte_free(t->ent);
		rte_free(t->free);
	}
	rte_free(t);
}

void
ls_flow_lookup_bulk(struct ls_flow_table *t, const struct ls_flow_key **keys,
		    unsigned int n, int32_t *idx)
{
	uint32_t h[BULK_MAX];
	int32_t cand[BULK_MAX];
	unsigned int i;

	for (; n > BULK_MAX; n -= BULK_MAX, keys += BULK_MAX, idx += BULK_MAX)
		ls_flow_lookup_bulk(t, keys, BULK_MAX, idx);
	/* Three passes so the misses of a burst overlap: every bucket is
	 * asked for, then every candidate entry (both lines), then the keys
	 * are compared. A signature that does not find its key in the
	 * primary bucket goes the slow way (other matches, the alternate). */
	for (i = 0; i < n; i++) {
		h[i] = hash(t, keys[i]);
		rte_prefetch0(&t->bkt[h[i] & t->mask]);
	}
	for (i = 0; i < n; i++) {
		unsigned int m = sig_match(&t->bkt[h[i] & t->mask], sig_of(h[i]));

		cand[i] = -1;
		if (m != 0) {
			cand[i] = (int32_t)t->bkt[h[i] & t->mask].idx[__builtin_ctz(m)];
			rte_prefetch0(&t->ent[cand[i]].f);
			rte_prefetch0(&t->ent[cand[i]].key);
		}
	}
	for (i = 0; i < n; i++)
		idx[i] = cand[i] >= 0 && key_eq(&t->ent[cand[i]].key, keys[i]) ? cand[i] :
			 find(t, keys[i], h[i]);
}

/* A free slot of bucket b, or -1. */
static inline int
free_slot(const struct bkt *b)
{
	unsigned int m = sig_match(b, 0);

	return m != 0 ? __builtin_ctz(m) : -1;
}

/* Free a slot in bucket b by moving one of its residents to that
 * resident's other bucket, making room there the same way when depth
 * allows (a breadth of 8, so depth 2 looks at up to 72 buckets; only an
 * insert into two full buckets comes here). @return the freed slot, or -1. */
static int
make_room(struct ls_flow_table *t, uint32_t b, unsigned int depth)
{
	struct bkt *bk = &t->bkt[b];

	for (unsigned int d = 1; d <= depth; d++)
		for (unsigned int j = 0; j < SLOTS; j++) {
			uint32_t ob = b ^ alt_of(t, bk->sig[j]);
			struct bkt *o = &t->bkt[ob];
			int s = d == 1 ? free_slot(o) : make_room(t, ob, d - 1);

			if (s < 0)
				continue;
			o->idx[s] = bk->idx[j];
			o->sig[s] = bk->sig[j];  /* findable in both for a moment */
			bk->sig[j] = 0;
			return (int)j;
		}
	return -1;
}

int32_t
ls_flow_add(struct ls_flow_table *t, const struct ls_flow_key *key)
{
	uint32_t h = hash(t, key), b1 = h & t->mask, b2;
	uint16_t sig = sig_of(h);
	int32_t pos = find(t, key, h);
	uint32_t b;
	int s;

	if (pos >= 0)
		return pos;
	if (t->n_free == 0)
		return -ENOSPC;
	b2 = b1 ^ alt_of(t, sig);
	if ((s = free_slot(&t->bkt[b = b1])) < 0 && (s = free_slot(&t->bkt[b = b2])) < 0 &&
	    (s = make_room(t, b = b1, 2)) < 0 && (s = make_room(t, b = b2, 2)) < 0)
		return -ENOSPC;
	pos = (int32_t)t->free[--t->n_free];
	memset(&t->ent[pos].f, 0, sizeof(t->ent[pos].f));
	t->ent[pos].key = *key;
	t->ent[pos].f.used = 1;
	t->ent[pos].f.path = 0xff;
	t->bkt[b].idx[s] = (uint32_t)pos;
	t->bkt[b].sig[s] = sig;
	t->count++;
	return pos;
}

struct ls_flow *
ls_flow_at(struct ls_flow_table *t, int32_t idx)
{
	return &t->ent[idx].f;
}

const struct ls_flow_key *
ls_flow_key_at(const struct ls_flow_table *t, int32_t idx)
{
	if (idx < 0 || (uint32_t)idx >= t->cap || !t->ent[idx].f.used)
		return NULL;
	return &t->ent[idx].key;
}

/* Clear the slot that points at idx in bucket b. */
static bool
unlink_in(struct bkt *b, uint16_t sig, uint32_t idx)
{
	for (unsigned int m = sig_match(b, sig); m != 0; m &= m - 1) {
		unsigned int j = (unsigned int)__builtin_ctz(m);

		if (b->idx[j] == idx) {
			b->sig[j] = 0;
			return true;
		}
	}
	return false;
}

int
ls_flow_del(struct ls_flow_table *t, int32_t idx)
{
	uint32_t h, b1;
	uint16_t sig;

	if (ls_flow_key_at(t, idx) == NULL)
		return -ENOENT;
	h = hash(t, &t->ent[idx].key);
	sig = sig_of(h);
	b1 = h & t->mask;
	if (!unlink_in(&t->bkt[b1], sig, (uint32_t)idx) &&
	    !unlink_in(&t->bkt[b1 ^ alt_of(t, sig)], sig, (uint32_t)idx))
		return -ENOENT; /* cannot happen: a used entry is in a bucket */
	t->ent[idx].f.used = 0;
	t->free[t->n_free++] = (uint32_t)idx;
	t->count--;
	return 0;
}

unsigned int
ls_flow_age(struct ls_flow_table *t, uint32_t now_ms, uint32_t idle_ms, unsigned int budget)
{
	unsigned int removed = 0;

	for (; budget > 0; budget--) {
		struct ls_flow *f = &t->ent[t->sweep].f;

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
