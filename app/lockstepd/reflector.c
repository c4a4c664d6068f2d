/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * STAMP Session-Reflector (RFC 8762, stateless mode) with a per-source
 * rate limit.
 *
 * The reflector turns the received mbuf around in place: it answers any
 * RFC 8762 sender, not only lockstep, copying the fields the RFC says to
 * copy (ls_stamp_reflect_inplace) and handling TLVs per RFC 8972 (unknown
 * ones flagged U, a malformed one flagged M). A reply is never longer than
 * the request, and each source address gets a token bucket (rate_pps,
 * burst), so the reflector cannot be used to amplify or reflect a flood.
 * Configured peers have a bucket of their own (in struct lsd_peer): strangers
 * can neither share it nor push it out. Other sources live in an
 * lcore-private rte_hash seeded with a per-process random value (collisions
 * cannot be planned) with an extendable table (an add fails only when it is
 * full). When it is full, the bucket idle longest among a few sampled is
 * evicted if it has been idle LS_RL_EVICT_IDLE_NS; otherwise newcomers share
 * one overflow bucket (so a spoofed-source flood is still bounded in total).
 * A sweep in housekeeping frees buckets idle for LS_RL_IDLE_NS.
 *
 * The transmit timestamp (T3) is written later, by the burst loop, right
 * before tx_burst; this file leaves the payload offset in m->hash.usr and
 * the family in m->packet_type for it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "lockstepd.h"
#include "ls_sync.h"
#include "ls_stamp.h"

#define LS_RL_IDLE_NS (10ULL * LS_NS_PER_S)
#define LS_RL_SWEEP_PER_TICK 64
#define LS_RL_EVICT_IDLE_NS (1ULL * LS_NS_PER_S) /* a full table evicts buckets idle this long */
#define LS_RL_EVICT_SAMPLE 8    /* buckets looked at per eviction (sampled LRU) */

int
lsd_reflector_setup(struct lsd_lcore *lc)
{
	char name[RTE_HASH_NAMESIZE];
	uint32_t n = lsd.cfg.reflector.max_sources;
	struct rte_hash_parameters hp = {
		.entries = n < 16 ? 16 : n,
		.key_len = sizeof(struct lsd_addr_key),
		.hash_func = rte_hash_crc,
		.socket_id = (int)rte_lcore_to_socket_id(lc->lcore_id),
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};

	/* A seed nobody outside knows: spoofed sources cannot be chosen to
	 * collide in the table or in its front cache. */
	if (getrandom(&lc->rl_seed, sizeof(lc->rl_seed), 0) != sizeof(lc->rl_seed))
		lc->rl_seed = rte_rand();
	hp.hash_func_init_val = (uint32_t)lc->rl_seed;
	snprintf(name, sizeof(name), "ls_rl_%u", lc->lcore_id);
	hp.name = name;
	lc->rl_hash = rte_hash_create(&hp);
	if (lc->rl_hash == NULL)
		return -ENOMEM;
	lc->rl = rte_zmalloc_socket("ls_rl", sizeof(*lc->rl) * (n + 1), 0, hp.socket_id);
	if (lc->rl == NULL)
		return -ENOMEM;
	return 0;
}

/* Token bucket in nanosecond units: one packet costs 1e9 tokens, tokens
 * accrue at rate_pps per ns. Integer-only so it is exact and cheap. */
static bool
rl_admit(struct lsd_rl_bucket *b, uint64_t now_ns)
{
	const uint64_t rate = lsd.cfg.reflector.rate_pps;
	const uint64_t cap = (uint64_t)lsd.cfg.reflector.burst * LS_NS_PER_S;

	if (now_ns > b->last_ns) {
		uint64_t dt = now_ns - b->last_ns;

		/* Clamp dt so dt * rate cannot overflow. */
		if (dt > 100 * LS_NS_PER_S)
			dt = 100 * LS_NS_PER_S;
		b->tokens_ns += dt * rate;
		if (b->tokens_ns > cap)
			b->tokens_ns = cap;
	}
	b->last_ns = now_ns;
	if (b->tokens_ns < LS_NS_PER_S)
		return false;
	b->tokens_ns -= LS_NS_PER_S;
	return true;
}

/* The table is full: free the bucket idle longest among a few from the
 * sweep cursor on, if it has been idle LS_RL_EVICT_IDLE_NS (a sampled LRU;
 * sources active within that time keep theirs). */
static bool
rl_evict(struct lsd_lcore *lc, uint64_t now_ns)
{
	const uint32_t n = lsd.cfg.reflector.max_sources;
	struct lsd_rl_bucket *old = NULL;
	uint32_t i = lc->rl_sweep;

	for (int k = 0; k < LS_RL_EVICT_SAMPLE; k++, i = i + 1 < n ? i + 1 : 0) {
		struct lsd_rl_bucket *b = &lc->rl[i];

		if (b->used && (old == NULL || b->last_ns < old->last_ns))
			old = b;
	}
	lc->rl_sweep = i;
	if (old == NULL || now_ns < old->last_ns + LS_RL_EVICT_IDLE_NS)
		return false;
	rte_hash_del_key(lc->rl_hash, &old->key);
	memset(old, 0, sizeof(*old));
	lc->st.rl_evicted++;
	return true;
}

/* A front-cache entry naming a peer's slot (lc->peers) rather than a bucket */
#define RL_CACHE_PEER 0x80000000u

/* Multiplicative hash of the seeded key: the top bits mix every byte. */
static inline uint32_t
rl_slot(const struct lsd_lcore *lc, const struct lsd_addr_key *key)
{
	return (uint32_t)(((key->w[0] ^ key->w[1] ^ lc->rl_seed) * 0x9e3779b97f4a7c15ULL) >> 56) &
	       (LSD_RL_CACHE - 1);
}

void
lsd_reflector_forget(struct lsd_lcore *lc, const struct lsd_addr_key *key)
{
	lc->rl_cache[rl_slot(lc, key)] = 0;
}

/*
 * src's bucket when the front cache knows it, and in *peer the peer it is
 * or NULL (for the sync fill): a cache entry tells which, as a peer's
 * arrival clears its address's entry (lsd_reflector_forget). NULL: ask
 * rl_bucket_slow(). Inline, as every probe takes it: the call alone was a
 * third of rl_bucket's cycles at 8 M replies/s.
 */
static inline struct lsd_rl_bucket *
rl_bucket_cached(struct lsd_lcore *lc, const struct lsd_addr_key *key, uint32_t slot,
		 struct lsd_peer **peer)
{
	uint32_t c = lc->rl_cache[slot];

	*peer = NULL;
	if (c & RL_CACHE_PEER) {
		/* a peer's bucket: trusted while its slot holds that address */
		struct lsd_addr_key pk;

		c &= ~RL_CACHE_PEER;
		if (c - 1 < lc->n_peers) {
			lsd_addr_key(&lc->peers[c - 1]->addr, &pk);
			if (lsd_addr_key_eq(&pk, key)) {
				*peer = lc->peers[c - 1];
				return &(*peer)->rl;
			}
		}
	} else if (likely(c != 0 && lc->rl[c - 1].used &&
			  lsd_addr_key_eq(&lc->rl[c - 1].key, key))) {
		return &lc->rl[c - 1];
	}
	return NULL;
}

/* The same through the peer table and the bucket table, filling the cache. */
static __rte_noinline struct lsd_rl_bucket *
rl_bucket_slow(struct lsd_lcore *lc, const struct lsd_addr_key *pkey, uint32_t slot,
	       uint64_t now_ns, struct lsd_peer **peer)
{
	const uint32_t n = lsd.cfg.reflector.max_sources;
	struct lsd_addr_key key = *pkey;
	uint32_t c;
	int32_t pos;

	c = lsd_peer_filter_bit(&key);
	if ((lc->peer_filter[c / 64] >> (c % 64) & 1) &&
	    rte_hash_lookup_data(lc->peer_hash, &key, (void **)peer) >= 0 && *peer != NULL) {
		if ((*peer)->slot >= 0)
			lc->rl_cache[slot] = (uint32_t)((*peer)->slot + 1) | RL_CACHE_PEER;
		return &(*peer)->rl;
	}
	*peer = NULL;
	pos = rte_hash_lookup(lc->rl_hash, &key);
	if (pos < 0) {
		pos = rte_hash_add_key(lc->rl_hash, &key);
		if (pos == -ENOSPC && rl_evict(lc, now_ns))
			pos = rte_hash_add_key(lc->rl_hash, &key);
		if (pos < 0 || (uint32_t)pos >= n) {
			if (pos >= 0)
				rte_hash_del_key(lc->rl_hash, &key);
			lc->st.rl_overflow++;
			return &lc->rl[n];
		}
		lc->rl[pos].used = true;
		lc->rl[pos].key = key;
		lc->rl[pos].last_ns = now_ns;
		lc->rl[pos].tokens_ns = (uint64_t)lsd.cfg.reflector.burst * LS_NS_PER_S;
	} else if ((uint32_t)pos >= n) {
		return &lc->rl[n];
	}
	lc->rl_cache[slot] = (uint32_t)pos + 1;
	return &lc->rl[pos];
}

static inline struct lsd_rl_bucket *
rl_bucket(struct lsd_lcore *lc, const struct ls_addr *src, uint64_t now_ns,
	  struct lsd_peer **peer)
{
	struct lsd_addr_key key;
	struct lsd_rl_bucket *b;
	uint32_t slot;

	lsd_addr_key(src, &key);
	slot = rl_slot(lc, &key);
	b = rl_bucket_cached(lc, &key, slot, peer);
	return likely(b != NULL) ? b : rl_bucket_slow(lc, &key, slot, now_ns, peer);
}

void
lsd_reflector_sweep(struct lsd_lcore *lc, uint64_t now_ns)
{
	const uint32_t n = lsd.cfg.reflector.max_sources;

	for (int i = 0; i < LS_RL_SWEEP_PER_TICK; i++) {
		struct lsd_rl_bucket *b = &lc->rl[lc->rl_sweep];

		if (b->used && now_ns > b->last_ns + LS_RL_IDLE_NS) {
			rte_hash_del_key(lc->rl_hash, &b->key);
			memset(b, 0, sizeof(*b));
		}
		if (++lc->rl_sweep >= n)
			lc->rl_sweep = 0;
	}
}

/*
 * Fill a sync TLV's value with our clock-sync state (RFC 8972 style: the
 * reflector fills a TLV the sender sent zeroed): from start-up on, first as
 * "not synced yet". False (value untouched) while nothing is published.
 * Both paths fill the packet in place; *sum is the value's ones'-complement
 * sum (the published one's unless a peer's edge went in), which the fast
 * path folds into the checksum (lib/reflect) without reading the frame back.
 */
static inline bool
sync_fill(struct lsd_lcore *lc, uint8_t *value, const struct lsd_peer *peer, uint16_t *sum)
{
	struct lsd_peer_owd w;
	uint32_t sn;
	bool valid;

	/* an asker that reads only versions older than any we encode: its ask
	 * goes back as it came (ls_sync.h, versions) */
	if (unlikely(!ls_sync_wire_answerable(value[0]))) {
		lc->st.sync_unanswerable++;
		return false;
	}
	do {
		sn = rte_seqlock_read_begin(&lsd.sync_pub.lock);
		valid = lsd.sync_pub.valid;
		if (valid) {
			memcpy(value, lsd.sync_pub.wire, LS_STAMP_SYNC_LEN);
			*sum = lsd.sync_pub.wire_sum;
		}
	} while (rte_seqlock_read_retry(&lsd.sync_pub.lock, sn));
	if (!valid)
		return false;
	lc->st.sync_filled++;
	/*
	 * When the asker is a peer of ours (on this lcore), add our own
	 * estimate of the edge between us: it averages it with its own, and
	 * a bias both directions share cancels (lib/sync, LS_SYNC_F_EDGE).
	 */
	if (peer == NULL)
		return true;
	do {
		sn = rte_seqlock_read_begin(&peer->owd.lock);
		w = peer->owd;
	} while (rte_seqlock_read_retry(&peer->owd.lock, sn));
	if (w.edge_valid) {
		ls_sync_wire_put_edge(value, w.edge_ns, w.edge_drift, w.edge_sigma);
		*sum = ls_reflect_sum(value, LS_STAMP_SYNC_LEN);
	}
	return true;
}

bool
lsd_reflector_handle(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m,
		    const struct ls_pkt_info *pi, uint64_t rx_ns)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *payload = f + pi->payload_off;
	struct ls_stamp_tlv_result tr;
	struct lsd_peer *peer;
	enum lsd_rx_disp d;
	uint16_t sum;

	if (!lsd.cfg.reflector.enabled) {
		d = LSD_RX_REFL_DISABLED;
		goto drop;
	}
	if (pi->payload_len < LS_STAMP_BASE_LEN) {
		d = LSD_RX_REFL_SHORT;
		goto drop;
	}
	if (pi->src.family == LS_AF_INET && pi->l4_off - pi->l3_off > 20) {
		d = LSD_RX_REFL_IP_OPTIONS;
		goto drop;
	}
	if (!rl_admit(rl_bucket(lc, &pi->src, rx_ns, &peer), rx_ns)) {
		d = LSD_RX_RATE_LIMITED;
		goto drop;
	}
	ls_stamp_reflect_inplace(payload, pi->payload_len, rx_ns, rx_ns, lsd.refl_ee, pi->ttl);
	ls_stamp_reflect_tlvs(payload + LS_STAMP_BASE_LEN,
			      pi->payload_len - LS_STAMP_BASE_LEN, &tr);
	/* Separate loads: GCC would merge both updates into one 8-byte load over
	 * the callee's 2-byte stores, a store-forwarding stall on every probe. */
	if (unlikely(tr.n_unknown != 0))
		lc->st.tlv_unknown += tr.n_unknown;
	if (unlikely(tr.n_malformed != 0))
		lc->st.tlv_malformed += tr.n_malformed;
	if (tr.sync_off >= 0)
		sync_fill(lc, payload + LS_STAMP_BASE_LEN + tr.sync_off, peer, &sum);
	ls_pkt_udp_turnaround(f, pi, &p->mac, lsd.cfg.probe.ttl);
	/* Trailing Ethernet padding is not ours to echo. */
	rte_pktmbuf_trim(m, (uint16_t)(m->data_len - (pi->payload_off + pi->payload_len)));
	m->hash.usr = pi->payload_off;
	m->packet_type = pi->src.family == LS_AF_INET6 ? RTE_PTYPE_L3_IPV6 : RTE_PTYPE_L3_IPV4;
	m->ol_flags = 0;
	lc->st.disp[LSD_RX_REFLECTED]++;
	return true;
drop:
	lc->st.disp[d]++;
	rte_pktmbuf_free(m);
	return false;
}

bool
lsd_reflector_fast(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m,
		  const struct ls_reflect_v4 *r, uint64_t rx_ns)
{
	struct ls_addr src = {.family = LS_AF_INET};
	struct lsd_peer *peer;

	memcpy(src.a, &r->src, 4);
	if (!rl_admit(rl_bucket(lc, &src, rx_ns, &peer), rx_ns)) {
		lc->st.disp[LSD_RX_RATE_LIMITED]++;
		rte_pktmbuf_free(m);
		return false;
	}
	/* a software clock stamps a whole burst alike: T2's bytes once */
	if (rx_ns != lc->t2_ns) {
		lc->t2_ns = rx_ns;
		lc->t2 = ls_reflect_ts(rx_ns, lsd.refl_ptp);
	}
	ls_reflect_v4_apply_ts(rte_pktmbuf_mtod(m, uint8_t *), r, &p->fast, lc->t2,
			       lsd.refl_ee, lsd.cfg.probe.ttl);
	/* the value straight into the frame; the checksum from two sums: the
	 * old value's (check() summed it anyway) and the published one's */
	if (r->sync_off != 0) {
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		uint16_t sum;

		if (sync_fill(lc, f + LS_REFLECT_V4_PAYLOAD_OFF + r->sync_off, peer, &sum))
			ls_reflect_v4_fill_sums(f, r->sync_sum, sum);
	}
	/* Trailing Ethernet padding is not ours to echo. */
	rte_pktmbuf_trim(m, (uint16_t)(m->data_len -
			 (LS_REFLECT_V4_PAYLOAD_OFF + r->payload_len)));
	m->hash.usr = LSD_REPLY_FAST;
	m->ol_flags = 0;
	lc->st.disp[LSD_RX_REFLECTED]++;
	return true;
}
