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

/** Parameters of one direction of a link. */
struct ls_fab_chan_params {
	uint64_t delay_ns;      /**< propagation delay */
	uint64_t rate_bps;      /**< line rate, bit/s (> 0) */
	uint32_t buffer_bytes;  /**< queue limit: tail drop beyond it */
	uint32_t ecn_bytes;     /**< CE-mark ECT packets when the queue exceeds this (0 = never) */
	double loss;            /**< random loss probability, 0..1 */
	uint16_t mtu;           /**< larger packets are dropped (counted) */
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

/** Recompute every route from the channels' route_up view. */
void ls_fab_routes_compute(struct ls_fabric *f);

/**
 * Seeded ECMP hash of a flow: addresses, protocol, ports, IPv6 flow label.
 * Stable for a flow, spread over flows.
 */
uint32_t ls_fab_flow_hash(uint32_t seed, const struct ls_addr *src, const struct ls_addr *dst,
			  uint8_t proto, uint16_t sport, uint16_t dport, uint32_t flow_label);

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
 * ecn_bytes, *ce is set and counted.
 */
enum ls_fab_verdict ls_fab_chan_enqueue(struct ls_fab_chan *c, uint64_t arrival_ns,
					uint32_t bytes, bool ect, void *pkt, uint32_t tag,
					bool *ce);

/** Bytes queued (not yet transmitted) at time t, including the one in service. */
uint64_t ls_fab_chan_depth(const struct ls_fab_chan *c, uint64_t t);

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
