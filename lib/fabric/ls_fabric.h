/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The lab fabric's model: a leaf-spine topology, its routing, and its links.
 *
 * Pure logic (no EAL), driven by app/fabric (lockstep-fabric), which moves
 * real packets through it. Three parts:
 *
 *  - Topology from JSON (jansson): switches (leaves, spines), links between
 *    them with per-direction parameters, hosts attached to leaves. Errors
 *    name the file, key path and reason, like lib/config.
 *  - Routing: every host address is a route; each switch forwards towards it
 *    over all equal-cost (fewest-hops) next hops, choosing one by a seeded
 *    hash of the 5-tuple and IPv6 flow label (ECMP), as real switches do.
 *    Routing sees a link through a "routing view" that follows the real link
 *    state after a configurable convergence delay: for that long after a
 *    failure, flows keep hashing onto the dead link and are lost, as in a
 *    real fabric until routing reconverges.
 *  - Links: each direction is a channel with a FIFO: serialization at the
 *    link rate, propagation delay, tail drop at the buffer limit, ECN CE
 *    marking of ECT packets when the queue exceeds a threshold, and random
 *    loss. The queue is computed exactly from the transmitter's busy-until
 *    time (a FIFO at constant rate needs nothing else), so the depth at any
 *    instant, the ground truth, is known without simulation steps.
 *
 * Time is nanoseconds on the caller's timeline (the emulator uses the TSC
 * mapped to CLOCK_MONOTONIC_RAW, the same clock the appliances' simulated
 * clocks are built on).
 */
#ifndef LS_FABRIC_H
#define LS_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "ls_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LS_FAB_MAX_NODES 512      /**< switches + hosts */
#define LS_FAB_MAX_CHANS 4096     /**< channels (2 per link, incl. host links) */
#define LS_FAB_MAX_ECMP 16        /**< equal-cost next hops kept per route */
#define LS_FAB_FIFO 8192          /**< packets in flight per channel (power of 2) */
#define LS_FAB_NAME 32            /**< names incl. NUL */
#define LS_FAB_ADDR_TAB 2048      /**< host address hash slots (power of 2, >= 4 * max hosts) */
/** Bytes a channel is offered for a frame besides its IP packet: the
 * Ethernet header (14), FCS (4), preamble and SFD (8) and inter-frame gap
 * (12). Serialization counts them; the MTU, like a router's, is the IP
 * packet's size, so a channel compares bytes - LS_FAB_L2_BYTES with it. */
#define LS_FAB_L2_BYTES 38

/** Parameters of one direction of a link. */
struct ls_fab_chan_params {
	uint64_t delay_ns;      /**< propagation delay */
	uint64_t rate_bps;      /**< line rate, bit/s (> 0) */
	uint32_t buffer_bytes;  /**< queue limit: tail drop beyond it */
	uint32_t ecn_bytes;     /**< CE-mark ECT packets when the queue exceeds this (0 = never);
				 *   with ecn_max_bytes, RED-ECN's K_min */
	double loss;            /**< random loss probability, 0..1 */
	uint16_t mtu;           /**< largest IP packet, bytes: larger ones (bytes offered
				 *   beyond mtu + LS_FAB_L2_BYTES) are dropped, counted */
	/* RED-ECN last: in mtu's padding and after it, so the fields every
	 * packet reads keep their places */
	uint32_t ecn_max_bytes; /**< RED-ECN's K_max: between ecn_bytes and this the mark's
				 *   probability rises linearly to ecn_pmax, beyond it every
				 *   ECT packet is marked (0: a step at ecn_bytes) */
	double ecn_pmax;        /**< RED-ECN's P_max, 0..1 */
};

/** Per-channel counters (monotonic). */
struct ls_fab_chan_stats {
	uint64_t pkts;          /**< packets accepted onto the link */
	uint64_t bytes;         /**< bytes accepted */
	uint64_t drop_tail;     /**< dropped: queue full (buffer or FIFO slots) */
	uint64_t drop_loss;     /**< dropped: random loss (they used the link) */
	uint64_t drop_down;     /**< dropped: link down */
	uint64_t drop_mtu;      /**< dropped: larger than the MTU */
	uint64_t ecn_marked;    /**< CE marks applied */
	uint64_t max_depth;     /**< largest queue seen at an arrival, bytes */
};

/** One packet in a channel's FIFO. */
struct ls_fab_item {
	uint64_t arrive_ns;     /**< when it reached the transmitter */
	uint64_t depart_ns;     /**< when its last bit left the transmitter */
	uint64_t deliver_ns;    /**< when its last bit reaches the far end */
	uint32_t bytes;         /**< wire bytes */
	bool lost;              /**< dropped on the wire: discard at delivery */
	void *pkt;              /**< the caller's packet (an mbuf), or NULL for background */
	uint32_t tag;           /**< caller's tag (e.g. background flow id) */
};

/** One direction of a link. */
struct ls_fab_chan {
	uint16_t id;                    /**< index in fabric.chans */
	uint16_t link;                  /**< index of its link (name in fabric.link_names) */
	uint16_t from, to;              /**< node indices */
	struct ls_fab_chan_params p;    /**< current parameters */
	bool up;                        /**< real state: down drops everything */
	bool route_up;                  /**< what routing believes */
	uint64_t route_at_ns;           /**< when route_up catches up with up (0 = nothing pending) */
	uint64_t busy_until_ns;         /**< transmitter busy until (last accepted packet out) */
	uint64_t rng;                   /**< loss generator state */
	struct ls_fab_chan_stats st;    /**< counters */
	uint32_t ser_bytes;             /**< cache: size of the last serialization computed */
	uint64_t ser_rate;              /**< cache: the rate it was computed at */
	uint64_t ser_cached;            /**< cache: its serialization time, ns */
	uint32_t head, tail;            /**< FIFO indices (free-running) */
	struct ls_fab_item fifo[LS_FAB_FIFO]; /**< in flight, in delivery order */
};

/** Node kinds. */
enum ls_fab_kind {
	LS_FAB_SWITCH = 1,
	LS_FAB_HOST = 2,
};

/** A switch or a host. */
struct ls_fab_node {
	char name[LS_FAB_NAME];         /**< unique name */
	enum ls_fab_kind kind;          /**< switch or host */
	char role[16];                  /**< switches: "leaf" or "spine" */
	uint32_t seed;                  /**< switches: ECMP hash seed */
	struct ls_addr addr4, addr6;    /**< switches: own addresses (ICMP source); hosts: host address */
	uint8_t plen4, plen6;           /**< hosts: prefix lengths of their interface */
	struct ls_mac mac;              /**< switches: MAC (leaves answer ARP/ND with it); hosts: from config, or learnt */
	bool mac_known;                 /**< hosts: mac valid (switches: always true) */
	char dev[256];                  /**< hosts: the emulator's DPDK device for it (devargs) */
	uint16_t leaf;                  /**< hosts: the leaf it hangs off */
	uint16_t up_chan;               /**< hosts: channel host -> leaf */
	uint16_t down_chan;             /**< hosts: channel leaf -> host */
	uint16_t n_out;                 /**< switches: outgoing channels */
	uint16_t out[64];               /**< switches: their ids */
};

/** A route: the equal-cost next-hop channels from one switch to one host. */
struct ls_fab_route {
	uint8_t n;                      /**< next hops (0: unreachable) */
	uint16_t chan[LS_FAB_MAX_ECMP]; /**< channel ids */
};

/** The fabric. */
struct ls_fabric {
	char file[256];                          /**< where it came from */
	struct ls_fab_node nodes[LS_FAB_MAX_NODES];
	uint16_t n_nodes;
	struct ls_fab_chan *chans;               /**< n_chans (malloc'd: large) */
	uint16_t n_chans;
	char link_names[LS_FAB_MAX_CHANS / 2][LS_FAB_NAME]; /**< link i = chans 2i (a->b), 2i+1 (b->a) */
	uint16_t n_links;
	uint64_t convergence_ns;                 /**< routing reconvergence delay */
	struct ls_fab_route *routes;             /**< [n_nodes * n_nodes]: routes[sw * n_nodes + host] */
	uint16_t n_switches;                     /**< nodes[0, n_switches) are switches, the rest hosts */
	uint64_t route_next_ns;                  /**< earliest pending chans[].route_at_ns (a lower
						      bound), UINT64_MAX when none: keeps ls_fab_tick cheap */
	uint16_t addr_tab[LS_FAB_ADDR_TAB];      /**< host addresses (v4 and v6), open addressing:
						      node index + 1, 0 = empty (ls_fab_host_by_addr) */
};

/**
 * Load and validate a topology file. JSON schema: docs/fabric.md.
 * Errors: "FILE: KEY: REASON" (dangling link ends, duplicate names or
 * addresses, hosts not on a leaf, hosts unreachable from each other, bad
 * parameters).
 * @return 0 and *out (free with ls_fab_free), or a negative errno.
 */
int ls_fab_load(const char *file, struct ls_fabric **out, char *err, size_t errlen);

/** Same from parsed JSON; src names it in errors. */
int ls_fab_from_json(const json_t *root, const char *src, struct ls_fabric **out,
		     char *err, size_t errlen);

/** Free a fabric. NULL is a no-op. */
void ls_fab_free(struct ls_fabric *f);

/** Node index by name, or -1. */
int ls_fab_node_find(const struct ls_fabric *f, const char *name);

/** Link index by name, or -1. */
int ls_fab_link_find(const struct ls_fabric *f, const char *name);

/** Host index whose address equals a (v4 or v6), or -1. */
int ls_fab_host_by_addr(const struct ls_fabric *f, const struct ls_addr *a);

/** Slot hash of an IPv4 host address in addr_tab (a multiply-mix: per packet). */
static inline uint32_t
ls_fab_addr_hash_v4(const void *a4)
{
	uint32_t v;

	memcpy(&v, a4, 4);
	return (uint32_t)(((uint64_t)LS_AF_INET ^ v) * 0x9e3779b97f4a7c15ULL >> 32);
}

/**
 * ls_fab_host_by_addr() of an IPv4 address as it sits in a packet (4 bytes,
 * network order), inline for the emulator's per-packet path; the library's
 * IPv4 lookups are this one.
 */
static inline int
ls_fab_host_by_v4(const struct ls_fabric *f, const void *a4)
{
	uint32_t h = ls_fab_addr_hash_v4(a4), want;

	memcpy(&want, a4, 4);
	for (uint32_t k = 0; k < LS_FAB_ADDR_TAB; k++, h++) {
		uint16_t e = f->addr_tab[h & (LS_FAB_ADDR_TAB - 1)];
		const struct ls_fab_node *n;
		uint32_t have;

		if (e == 0)
			return -1;
		n = &f->nodes[e - 1];
		memcpy(&have, n->addr4.a, 4);
		if (n->addr4.family == LS_AF_INET && have == want)
			return e - 1;
	}
	return -1;
}

/** Recompute every route from the channels' route_up view. */
void ls_fab_routes_compute(struct ls_fabric *f);

/**
 * Seeded ECMP hash of a flow: addresses, protocol, ports, IPv6 flow label.
 * Stable for a flow, spread over flows.
 */
uint32_t ls_fab_flow_hash(uint32_t seed, const struct ls_addr *src, const struct ls_addr *dst,
			  uint8_t proto, uint16_t sport, uint16_t dport, uint32_t flow_label);

/**
 * The flow hash over its words (an even number n of them): what
 * ls_fab_flow_hash computes once it has laid out addresses, protocol and flow
 * label, and ports. Inline so that the emulator's IPv4 fast path
 * (ls_fab_flow_hash_v4) hashes a packet straight from its header with the
 * very same function, not a copy that could drift.
 */
static inline uint32_t
ls_fab_hash_words(uint32_t seed, const uint32_t *w, unsigned int n)
{
	/* 64 bits at a time, one multiply each, then the murmur3 finaliser so
	 * every input bit reaches the low bits that the modulo by the number of
	 * next hops keeps (cheaper than jhash, same spread and seed
	 * independence in the unit tests). */
	uint64_t h = ((uint64_t)seed << 32 | seed) ^ (0x9e3779b97f4a7c15ULL * n);

	for (unsigned int i = 0; i < n; i += 2) {
		h ^= (uint64_t)w[i] << 32 | w[i + 1];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h ^ (uint32_t)(h >> 32);
}

/**
 * ls_fab_flow_hash() of an IPv4 flow (no flow label), from the addresses as
 * they sit in the packet (network order, 4 bytes each): the same value,
 * without building ls_addr structures first.
 */
static inline uint32_t
ls_fab_flow_hash_v4(uint32_t seed, const void *src4, const void *dst4, uint8_t proto,
		    uint16_t sport, uint16_t dport)
{
	uint32_t w[4];

	memcpy(&w[0], src4, 4);
	memcpy(&w[1], dst4, 4);
	w[2] = (uint32_t)proto << 24;
	w[3] = (uint32_t)sport << 16 | dport;
	return ls_fab_hash_words(seed, w, 4);
}

/**
 * hash % n for 1 <= n <= LS_FAB_MAX_ECMP without a division (a 32-bit div
 * is the slowest instruction of a routing decision): Lemire, Kaser and
 * Kurz, "Faster remainder by direct computation" (2019), exact for every
 * 32-bit hash and divisor; with M = ceil(2^64 / n), hash % n is the high
 * 64 bits of (M * hash mod 2^64) * n. (For n = 1, M wraps to 0: still right.)
 */
static inline uint32_t
ls_fab_mod(uint32_t hash, uint8_t n)
{
#define LS_FAB_MOD_M(d) (UINT64_MAX / (d) + 1)
	static const uint64_t m[LS_FAB_MAX_ECMP + 1] = {
		0, LS_FAB_MOD_M(1), LS_FAB_MOD_M(2), LS_FAB_MOD_M(3), LS_FAB_MOD_M(4),
		LS_FAB_MOD_M(5), LS_FAB_MOD_M(6), LS_FAB_MOD_M(7), LS_FAB_MOD_M(8),
		LS_FAB_MOD_M(9), LS_FAB_MOD_M(10), LS_FAB_MOD_M(11), LS_FAB_MOD_M(12),
		LS_FAB_MOD_M(13), LS_FAB_MOD_M(14), LS_FAB_MOD_M(15), LS_FAB_MOD_M(16),
	};
#undef LS_FAB_MOD_M
	uint64_t low = m[n] * hash;

	return (uint32_t)(((unsigned __int128)low * n) >> 64);
}

/** The route from switch sw to host (no range checks: the caller's indices are valid). */
static inline const struct ls_fab_route *
ls_fab_route_get(const struct ls_fabric *f, uint16_t sw, uint16_t host)
{
	return &f->routes[(size_t)sw * f->n_nodes + host];
}

/**
 * Next hop at switch sw towards host: one of the route's channels chosen by
 * hash (modulo the number of next hops).
 * @return a channel id, -ENETUNREACH (no route), or -EINVAL (index out of range).
 */
int ls_fab_next_hop(const struct ls_fabric *f, uint16_t sw, uint16_t host, uint32_t hash);

/**
 * Change a link direction's real state at now_ns. Routing follows after
 * f->convergence_ns (ls_fab_tick applies it).
 */
void ls_fab_chan_set_up(struct ls_fabric *f, uint16_t chan, bool up, uint64_t now_ns);

/** Both directions of link (chans 2 * link and 2 * link + 1) at once. */
void ls_fab_link_set_up(struct ls_fabric *f, uint16_t link, bool up, uint64_t now_ns);

/**
 * Apply routing-view changes that are due. Returns true when routes were
 * recomputed.
 */
bool ls_fab_tick(struct ls_fabric *f, uint64_t now_ns);

/** Verdict of ls_fab_chan_enqueue(). */
enum ls_fab_verdict {
	LS_FAB_OK = 0,          /**< queued; *ce tells whether to CE-mark it */
	LS_FAB_DROP_TAIL,       /**< buffer (or FIFO slots) full */
	LS_FAB_DROP_DOWN,       /**< link down */
	LS_FAB_DROP_MTU,        /**< too big */
};

/**
 * Offer a packet to a channel at arrival_ns (its last bit arrived at the
 * transmitter). On LS_FAB_OK the item is queued with its departure and
 * delivery times (a randomly lost packet is queued too, marked lost: it
 * used the link). ECN: when ect and the queue ahead of it exceeds
 * ecn_bytes (and, with ecn_max_bytes, by RED-ECN's probability), *ce is set
 * and counted.
 */
enum ls_fab_verdict ls_fab_chan_enqueue(struct ls_fab_chan *c, uint64_t arrival_ns,
					uint32_t bytes, bool ect, void *pkt, uint32_t tag,
					bool *ce);

/** Bytes queued (not yet transmitted) at time t, including the one in service. */
uint64_t ls_fab_chan_depth(const struct ls_fab_chan *c, uint64_t t);

/*
 * The link model's per-packet arithmetic, inline: the emulator runs it two
 * or more times per packet, and a call with seven arguments and a verdict
 * through memory cost as much as the work. ls_fab_chan_enqueue() and
 * ls_fab_chan_depth() are these; why the model is built this way is in
 * ls_fabric_link.c.
 */

#define LS_FAB_NS_BITS 8000000000ULL /**< ns per second * bits per byte */

/** ls_fab_chan_depth(), inline. */
static inline uint64_t
ls_fab_chan_depth_inline(const struct ls_fab_chan *c, uint64_t t)
{
	uint64_t dt, prod;

	if (c->busy_until_ns <= t)
		return 0;
	dt = c->busy_until_ns - t;
	/* Per packet: stay in 64 bits (the division by a constant becomes a
	 * multiply); only a long backlog at a high rate needs 128. */
	if (!__builtin_mul_overflow(dt, c->p.rate_bps, &prod))
		return prod / LS_FAB_NS_BITS;
	return (uint64_t)((unsigned __int128)dt * c->p.rate_bps / LS_FAB_NS_BITS);
}

/** ceil(bytes * 8e9 / rate): bytes <= 65535 and rate <= 1e13 fit in 64 bits. */
static inline uint64_t
ls_fab_ser_ns(uint32_t bytes, uint64_t rate_bps)
{
	if (rate_bps == 0)
		return 0;
	return ((uint64_t)bytes * LS_FAB_NS_BITS + rate_bps - 1) / rate_bps;
}

/** splitmix64: any state (even 0) gives a full-period, well mixed stream. */
static inline uint64_t
ls_fab_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/** ls_fab_chan_enqueue(), inline (always: left to itself, GCC keeps one
 * out-of-line copy, which is the call this exists to avoid). */
static inline __attribute__((always_inline)) enum ls_fab_verdict
ls_fab_chan_enqueue_inline(struct ls_fab_chan *c, uint64_t arrival_ns, uint32_t bytes,
			   bool ect, void *pkt, uint32_t tag, bool *ce)
{
	struct ls_fab_item *it;
	uint64_t d, start, deliver;
	bool lost = false, mark;

	if (ce != NULL)
		*ce = false;
	if (!c->up) {
		c->st.drop_down++;
		return LS_FAB_DROP_DOWN;
	}
	if (bytes > (uint32_t)c->p.mtu + LS_FAB_L2_BYTES) {
		c->st.drop_mtu++;
		return LS_FAB_DROP_MTU;
	}
	d = ls_fab_chan_depth_inline(c, arrival_ns);
	/* what this arrival saw, whether or not it fits */
	if (d > c->st.max_depth)
		c->st.max_depth = d;
	if (d + bytes > c->p.buffer_bytes || c->tail - c->head >= LS_FAB_FIFO) {
		c->st.drop_tail++;
		return LS_FAB_DROP_TAIL;
	}

	start = arrival_ns > c->busy_until_ns ? arrival_ns : c->busy_until_ns;
	/* Packets repeat sizes: skip the division by the rate when we can. */
	if (bytes != c->ser_bytes || c->p.rate_bps != c->ser_rate) {
		c->ser_bytes = bytes;
		c->ser_rate = c->p.rate_bps;
		c->ser_cached = ls_fab_ser_ns(bytes, c->p.rate_bps);
	}
	c->busy_until_ns = start + c->ser_cached;
	deliver = c->busy_until_ns + c->p.delay_ns;
	if (c->tail != c->head) {
		uint64_t prev = c->fifo[(c->tail - 1) & (LS_FAB_FIFO - 1)].deliver_ns;

		if (deliver < prev)
			deliver = prev;
	}

	/* 53 random bits as a uniform double in [0, 1) */
	if (c->p.loss > 0)
		lost = (double)(ls_fab_rand(&c->rng) >> 11) * 0x1.0p-53 < c->p.loss;
	mark = !lost && ect && c->p.ecn_bytes != 0 && d > c->p.ecn_bytes;
	/* RED-ECN (as DCQCN's switches): below K_max a mark with probability
	 * P_max (d - K_min) / (K_max - K_min) */
	if (mark && d <= c->p.ecn_max_bytes)
		mark = (double)(ls_fab_rand(&c->rng) >> 11) * 0x1.0p-53 * (double)(c->p.ecn_max_bytes -
			c->p.ecn_bytes) < c->p.ecn_pmax * (double)(d - c->p.ecn_bytes);

	c->st.pkts++;
	c->st.bytes += bytes;
	if (lost)
		c->st.drop_loss++;
	if (mark) {
		c->st.ecn_marked++;
		if (ce != NULL)
			*ce = true;
	}

	it = &c->fifo[c->tail & (LS_FAB_FIFO - 1)];
	it->arrive_ns = arrival_ns;
	it->depart_ns = c->busy_until_ns;
	it->deliver_ns = deliver;
	it->bytes = bytes;
	it->lost = lost;
	it->pkt = pkt;
	it->tag = tag;
	c->tail++;
	return LS_FAB_OK;
}

/** Delivery time of the oldest item, or UINT64_MAX when empty. */
static inline uint64_t
ls_fab_chan_head_ns(const struct ls_fab_chan *c)
{
	return c->head == c->tail ? UINT64_MAX :
	       c->fifo[c->head & (LS_FAB_FIFO - 1)].deliver_ns;
}

/** Remove the oldest item into *it. @return false when empty. */
bool ls_fab_chan_pop(struct ls_fab_chan *c, struct ls_fab_item *it);

#ifdef __cplusplus
}
#endif

#endif /* LS_FABRIC_H */
