/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Flows of the workload's own traffic: what a frame is (ls_flow_parse: L2
 * with an optional 802.1Q tag, IPv4/IPv6, TCP/UDP, RoCEv2's BTH) and the
 * per-lcore table of flows with their state (ls_flow_table: one 64-byte
 * cache line of state per flow, its key in the line beside it).
 *
 * A flow's key:
 *  - TCP, UDP: the 5-tuple (addresses, ports, protocol) and the VLAN ID;
 *  - RoCEv2 (UDP destination port 4791): addresses, VLAN and the
 *    destination QP from the BTH. The UDP source port is left out: it is
 *    the ECMP entropy a NIC or lockstepd chooses, not the flow's identity;
 *  - other IP protocols: addresses, protocol, VLAN and, for IPv6, the flow
 *    label (which stands in for ports). TCP and UDP over IPv6 leave the
 *    label out: Linux changes it on a retransmission time-out (txhash
 *    rehash), which must not split a connection into two flows.
 * IPv4 addresses are kept IPv4-mapped (::ffff:a.b.c.d): one 48-byte key
 * for both families, compared as six words.
 *
 * Parsing is EAL-free. The table is a bucketised cuckoo hash of its own
 * (ls_flow_table.c says why not rte_hash, which it was until a benchmark
 * compared them): single writer, the lcore that owns the table, so no
 * locks; an entry holds the state line and the key beside it, so a lookup
 * touches one bucket line and the entry's two. Creating a table needs the
 * EAL's memory (rte_zmalloc); --no-huge is enough.
 */
#ifndef LS_FLOW_H
#define LS_FLOW_H

#include <stdbool.h>
#include <stdint.h>

#include "ls_wheel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LS_FLOW_ROCE_PORT 4791  /**< RoCEv2 UDP destination port */

/** Flow key (48 bytes, all fields in network byte order, padding zero). */
struct ls_flow_key {
	uint8_t src[16];      /**< source address (IPv4-mapped for IPv4) */
	uint8_t dst[16];      /**< destination address */
	uint16_t sport;       /**< TCP/UDP source port; 0 for RoCEv2 and non-port protocols */
	uint16_t dport;       /**< TCP/UDP destination port; 0 for non-port protocols */
	uint32_t qp_label;    /**< RoCEv2: destination QP; other IPv6: flow label; else 0 */
	uint8_t proto;        /**< IP protocol */
	uint8_t family;       /**< 4 or 6 */
	uint16_t vid;         /**< 802.1Q VLAN ID, 0 untagged */
	uint32_t pad;         /**< zero */
} __attribute__((aligned(8)));

/** What a frame is: ls_flow_parse's result. */
enum ls_flow_kind {
	LS_FLOW_K_OTHER = 0,  /**< IP, protocol without ports (ICMP, fragments, ...) */
	LS_FLOW_K_TCP,        /**< TCP */
	LS_FLOW_K_UDP,        /**< UDP, not RoCEv2 */
	LS_FLOW_K_ROCE,       /**< RoCEv2 (UDP 4791 with a whole BTH) */
};

/** ls_flow_parse results (negative: a malformed IP frame, passed on as is). */
#define LS_FLOW_NOT_IP 0          /**< not IP (ARP, LLDP, ...): pass through */
#define LS_FLOW_IP 1              /**< IP: key and offsets filled */
#define LS_FLOW_ERR_TRUNC (-1)    /**< headers longer than the frame */
#define LS_FLOW_ERR_L3 (-2)       /**< bad version, IHL or length */

/** A parsed frame. Offsets are from the start of the frame. */
struct ls_flow_pkt {
	struct ls_flow_key key; /**< the flow's key */
	uint16_t l3_off;      /**< IP header */
	uint16_t l4_off;      /**< TCP/UDP header, 0 when none */
	uint16_t bth_off;     /**< RoCEv2 BTH, 0 when none */
	uint16_t vlan_off;    /**< 802.1Q tag (its TPID), 0 when untagged */
	uint16_t l3_len;      /**< IP datagram length from its header */
	uint8_t kind;         /**< enum ls_flow_kind */
	uint8_t ecn;          /**< IP ECN bits: 0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE */
	uint8_t dscp;         /**< IP DSCP */
	uint8_t pcp;          /**< 802.1Q priority, 0 untagged */
	uint8_t bth_opcode;   /**< RoCEv2 BTH opcode */
	uint8_t first_frag;   /**< 1: not a fragment, or the first one */
	uint32_t label;       /**< IPv6 flow label (host order), 0 for IPv4 */
};

/**
 * Parse frame f of len bytes (the first segment of an mbuf: headers must
 * be in it). Reads at most the headers; never past len.
 * @return LS_FLOW_IP, LS_FLOW_NOT_IP or a negative LS_FLOW_ERR_*.
 */
int ls_flow_parse(const uint8_t *f, uint32_t len, struct ls_flow_pkt *out);

/**
 * The hash that spreads frames over a data path's lcores: of the IP
 * source and destination addresses only, and the same both ways (a frame
 * and its answer, addresses swapped, hash alike), so that a host pair's
 * flows and the ACKs and CNPs that answer them meet on one lcore. Reads
 * the L2 header (one 802.1Q tag) and the addresses, never past len.
 * @return the hash; 0 for what is not IPv4 or IPv6 (ARP, LLDP, runts).
 */
uint32_t ls_flow_spread_hash(const uint8_t *f, uint32_t len);

/** Bytes of ls_flow_rss_key: the longest RSS key NICs take (40 or 52). */
#define LS_FLOW_RSS_KEY_LEN 52

/**
 * The symmetric Toeplitz key (0x6d5a repeated) lockstepd gives a NIC's RSS
 * when the data path spreads by RSS: hashing the IP addresses only, a
 * frame and its answer land on one queue. A NIC whose key is shorter takes
 * its first bytes (the same pattern).
 */
extern const uint8_t ls_flow_rss_key[LS_FLOW_RSS_KEY_LEN];

/**
 * The Toeplitz hash a NIC's RSS computes over an IPv4 or IPv6 frame's
 * source and destination addresses (no ports) with key (at least 40 bytes
 * for IPv6), by rte_softrss: what a NIC without the hash in its mbufs
 * (RTE_MBUF_F_RX_RSS_HASH) would have given. Reads one 802.1Q tag and the
 * addresses, never past len.
 * @return the hash; 0 for what is not IPv4 or IPv6 (ARP, LLDP, runts).
 */
uint32_t ls_flow_rss_hash_key(const uint8_t *f, uint32_t len, const uint8_t *key);

/** ls_flow_rss_hash_key with ls_flow_rss_key, the same both ways (computed
 * from the addresses' 16-bit XOR fold: a few nanoseconds). */
uint32_t ls_flow_rss_hash(const uint8_t *f, uint32_t len);

/**
 * The data-path lcore of n (at most 64) that an RSS hash belongs to, as a
 * NIC's redirection table programmed with entry j -> (j mod 64) mod n sends
 * it, whatever the table's size (a power of two, at least 64).
 */
static inline unsigned int
ls_flow_rss_lcore(uint32_t h, unsigned int n)
{
	return (h & 63) % n;
}

struct ls_addr;

/**
 * Address a as flow keys hold it (ls_flow_key.src/dst: IPv4-mapped for
 * IPv4), written to out, for matching flows against a peer's address.
 */
void ls_flow_key_addr(const struct ls_addr *a, uint8_t out[16]);

/**
 * The start of a frame answering frame f (pk its parse: an IP frame), back
 * where f came from, as a NIC's CNP or ACK goes: the Ethernet header with
 * the MAC addresses swapped (f's source is the next hop back) and any VLAN
 * tag, priority included, kept, written to out (pk->l3_off bytes); and the
 * answer's IP source (f's destination) and destination (f's source).
 * @return pk->l3_off: where the answer's IP header goes in out.
 */
uint16_t ls_flow_reply_hdr(const uint8_t *f, const struct ls_flow_pkt *pk, uint8_t *out,
			   struct ls_addr *src, struct ls_addr *dst);

/** Flow state: one cache line. Owned by the lcore that owns the table. */
struct ls_flow {
	uint64_t pkts;        /**< packets forwarded */
	uint64_t bytes;       /**< bytes forwarded (frame length) */
	struct ls_pace pace;  /**< pacing clock (ls_wheel_pace) */
	uint64_t tpb;         /**< pacing rate, ticks per byte 32.32; 0 unpaced */
	uint32_t ce;          /**< packets seen with ECN CE */
	uint32_t drops;       /**< packets dropped (pacing delay or slice queue full) */
	uint32_t last_ms;     /**< last packet, table clock in ms (ageing) */
	uint16_t slice;       /**< slice index */
	uint16_t gen;         /**< policy generation slice and path were chosen under */
	uint32_t cc;          /**< the user's congestion-control word; zero when added */
	uint8_t path;         /**< path index steered to, 0xff none */
	uint8_t kind;         /**< enum ls_flow_kind */
	uint8_t dir : 1;      /**< 0 host->fabric, 1 fabric->host */
	uint8_t heard : 1;    /**< the user's: an acknowledgement was seen for it
			       *   (lockstepd's failover; zero when added) */
	uint8_t away : 1;     /**< the user's: moved off the path its policy gives it
			       *   (lockstepd's failover; zero when added) */
	uint8_t spare : 5;    /**< zero */
	uint8_t used;         /**< 1 while the entry holds a flow */
} __attribute__((aligned(64)));

struct ls_flow_table; /**< opaque */

/** Parameters of ls_flow_table_create(). */
struct ls_flow_table_params {
	const char *name;     /**< the table's name (required) */
	uint32_t max_flows;   /**< capacity (e.g. 1 << 20) */
	int socket_id;        /**< NUMA socket for the memory (SOCKET_ID_ANY = -1) */
};

/** @return a table, or NULL (errno: EINVAL, ENOMEM). Needs the EAL. */
struct ls_flow_table *ls_flow_table_create(const struct ls_flow_table_params *p);

/** Free a table. */
void ls_flow_table_free(struct ls_flow_table *t);

/**
 * Look up n keys at once: a burst's buckets (64 at a time), then its
 * entries, are prefetched together so that the misses overlap.
 * idx[i] is the flow's index, or a negative value when absent.
 */
void ls_flow_lookup_bulk(struct ls_flow_table *t, const struct ls_flow_key **keys,
			 unsigned int n, int32_t *idx);

/**
 * Add a flow (or find it if present); its state is zeroed when new.
 * @return its index, or -ENOSPC when the table is full.
 */
int32_t ls_flow_add(struct ls_flow_table *t, const struct ls_flow_key *key);

/** The state of flow idx (from lookup or add). */
struct ls_flow *ls_flow_at(struct ls_flow_table *t, int32_t idx);

/** The key of flow idx, or NULL. */
const struct ls_flow_key *ls_flow_key_at(const struct ls_flow_table *t, int32_t idx);

/** Remove flow idx. @return 0 or -ENOENT. */
int ls_flow_del(struct ls_flow_table *t, int32_t idx);

/**
 * Age out flows idle for idle_ms or longer at now_ms, looking at no more
 * than budget entries (a sweep resumes where the last one stopped).
 * @return flows removed.
 */
unsigned int ls_flow_age(struct ls_flow_table *t, uint32_t now_ms, uint32_t idle_ms,
			 unsigned int budget);

/** Flows in the table now. */
uint32_t ls_flow_count(const struct ls_flow_table *t);

/** Capacity (one past the highest index). */
uint32_t ls_flow_capacity(const struct ls_flow_table *t);

/** Bytes the table took from the EAL heap at create (buckets, entries). */
uint64_t ls_flow_table_bytes(const struct ls_flow_table *t);

#ifdef __cplusplus
}
#endif

#endif /* LS_FLOW_H */
