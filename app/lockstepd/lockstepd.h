/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepd internals shared by the daemon's source files. Their names
 * start with lsd_/LSD_, so ls_ means a library (lib/, drivers/clock);
 * docs/design.md opens with the map of the rooms and who calls whom.
 *
 * Threads and ownership (the whole concurrency story in one place):
 *  - Each polling lcore (struct lsd_lcore) owns its ports' RX/TX queue 0, the
 *    peers reached through those ports (send schedule, sequence numbers,
 *    neighbour state, live path statistics) and its reflector rate-limit
 *    table. Nothing else writes them.
 *  - The control thread (an rte_ctrl_thread) serves the control socket,
 *    refits the TSC calibration, folds per-second path histograms into
 *    rolling windows and writes captures. It changes lcore state only by
 *    sending an lsd_msg through the lcore's rte_ring and waiting for the
 *    lcore to mark it done: peers are allocated by the control thread,
 *    handed to the lcore, and handed back before they are freed.
 *  - Counters are plain uint64_t written by one lcore and read by the control
 *    thread with relaxed atomic loads (64-bit aligned loads do not tear on
 *    the targets we build for).
 */
#ifndef LOCKSTEPD_H
#define LOCKSTEPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>
#include <rte_seqlock.h>
#include <rte_timer.h>

#include "../common/ls_gate.h"
#include "ls_clock.h"
#include "ls_common.h"
#include "ls_config.h"
#include "ls_pathstats.h"
#include "ls_pkt.h"
#include "ls_reflect.h"
#include "ls_stamp.h"

extern int lsd_logtype;
#define LSD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, lsd_logtype, "lockstepd: " fmt "\n", ##__VA_ARGS__)

#define LSD_CAP_NAME_MAX 128      /**< longest capture file name (bytes), capture.start */
#define LSD_CAP_PATH_LEN 400      /**< capture.dir (< 256) + '/' + name + NUL */
#define LSD_BURST 32              /**< RX/TX burst size */
#define LSD_RL_CACHE 256          /**< reflector rate-limit front cache slots (power of 2) */
#define LSD_HOUSEKEEP_US 1000     /**< per-lcore housekeeping timer period */
#define LSD_TICK_PEERS 64         /**< peers housekept every period, at least (sender.c) */
#define LSD_RESOLVE_RETRY_NS (1000ULL * 1000 * 1000)   /**< ARP/ND retry while unresolved */
#define LSD_RESOLVE_FIRST_NS (100ULL * 1000 * 1000)    /**< the first retry; doubles up to RETRY */
#define LSD_RESOLVE_REFRESH_NS (30ULL * 1000 * 1000 * 1000) /**< re-resolve a known neighbour */

/* What happened to each received packet: exactly one per packet, so the
 * counters add up to rx_pkts (the fuzz test checks this). One list gives
 * the enum (LS_RX_*) and the counter names "status" shows; the BAD_ ones
 * follow LS_PKT_ERR_* in order (datapath.c maps one onto the other). */
#define LSD_RX_DISP_LIST(_) \
	_(REFLECTED, "rx_reflected")              /* STAMP test packet answered */ \
	_(RATE_LIMITED, "rx_rate_limited")        /* STAMP test packet over its source's rate */ \
	_(REFL_DISABLED, "rx_reflector_disabled") /* STAMP test packet, reflector off */ \
	_(REFL_SHORT, "rx_stamp_short")    /* to the reflector port but shorter than 44 bytes */ \
	_(REFL_IP_OPTIONS, "rx_stamp_ip_options") /* test packet with IPv4 options: dropped, \
					    * echoed, a source route steers the reply */ \
	_(REFL_LOOP, "rx_reflector_loop")  /* to the reflector port from a reflector or system \
					    * port (< 1024): a reply could ping-pong */ \
	_(REPLY, "rx_reply")               /* reflected packet matched to one of our paths */ \
	_(REPLY_SHORT, "rx_reply_short")   /* from the reflector port, shorter than 44 bytes */ \
	_(REPLY_NO_PEER, "rx_reply_no_peer") /* reflected, from an address that is no peer */ \
	_(REPLY_NO_PATH, "rx_reply_no_path") /* reflected, to a port that is no path */ \
	_(REPLY_UNMATCHED, "rx_reply_unmatched") /* to no probe the path awaits, or T1 not \
					      * ours: forged or duplicate, not believed */ \
	_(MTU_REPLY, "rx_mtu_reply")       /* reply to a probe of path.mtu or path.train \
					    * (mtu.c, train.c) */ \
	_(ARP, "rx_arp")                   /* ARP handled (answered or learnt) */ \
	_(ND, "rx_nd")                     /* Neighbor Solicitation/Advertisement handled */ \
	_(L2_OTHER, "rx_l2_not_ours")      /* Ethernet destination neither ours nor group */ \
	_(L3_OTHER, "rx_l3_not_ours")      /* IP destination not ours, or ARP/ND for another */ \
	_(UDP_OTHER, "rx_udp_other_port")  /* UDP to a port we do not serve */ \
	_(OTHER, "rx_other")               /* well-formed but not for us (TCP, LLDP...) */ \
	_(ROUTE, "rx_route_icmp")          /* ICMP error about a path-discovery probe (route.c) */ \
	_(BAD_SRC_MAC, "rx_bad_source_mac") /* UDP from a group (multicast/broadcast) MAC */ \
	_(BAD_TRUNC, "rx_bad_truncated")   /* ls_pkt_parse rejections, one per reason */ \
	_(BAD_L3, "rx_bad_l3") \
	_(BAD_CSUM, "rx_bad_checksum") \
	_(BAD_FRAG, "rx_bad_fragment") \
	_(BAD_ARP, "rx_bad_arp") \
	_(BAD_ND, "rx_bad_nd") \
	_(BAD_VLAN, "rx_bad_vlan") \
	_(BAD_ADDR, "rx_bad_address")    /* source unspecified, loopback, multicast, \
					  * broadcast, ours or our subnet's broadcast */

enum lsd_rx_disp {
#define LSD_RX_DISP_ENUM(sym, name) LSD_RX_ ## sym,
	LSD_RX_DISP_LIST(LSD_RX_DISP_ENUM)
#undef LSD_RX_DISP_ENUM
	LSD_RX_DISP_MAX
};

/* Per-lcore counters (written by that lcore only). */
struct lsd_lcore_stats {
	uint64_t rx_pkts;
	uint64_t rx_bursts;
	uint64_t disp[LSD_RX_DISP_MAX];
	uint64_t tx_probes;
	uint64_t tx_replies;
	uint64_t tx_arp;
	uint64_t tx_nd;
	uint64_t tx_dropped;       /* TX queue full: freed unsent */
	uint64_t alloc_failed;     /* mbuf pool empty */
	uint64_t probes_unresolved;/* probe due but next hop MAC unknown */
	uint64_t rl_overflow;      /* sources beyond the rate-limit table share one bucket */
	uint64_t rl_evicted;       /* idle buckets freed for newcomers (table full) */
	uint64_t cap_copied;
	uint64_t cap_dropped;      /* capture ring full or pool empty */
	uint64_t idle_sleeps;
	uint64_t tlv_unknown;      /* reflected TLVs flagged U */
	uint64_t tlv_malformed;    /* reflected TLVs flagged M */
	uint64_t foreign_replies;  /* replies whose lockstep TLV names another node */
	uint64_t sync_recs;        /* reply timestamps handed to the sync estimator */
	uint64_t sync_dropped;     /* ... not handed over: ring full */
	uint64_t sync_filled;      /* sync TLVs the reflector filled with our state */
	uint64_t sync_unanswerable; /* ... left unfilled: asked for a version we no longer encode */
	uint64_t tx_at;            /* frames sent to leave at their stamp (clock.tx_sched,
				    * clock.tx_trailer) */
	uint64_t tx_at_no_room;    /* tx_trailer: no tailroom for the trailer, sent without */
	uint64_t tx_vlan_failed;   /* no headroom to insert our 802.1Q tag: dropped */
	uint64_t tx_trace;         /* path-discovery probes sent (route.c) */
	uint64_t route_dropped;    /* ICMP answers to them not handed over: ring full */
	uint64_t tx_trailer_unsent; /* replies still carrying the peer's send-time trailer:
				     * nobody sent them at their instant */
	uint64_t tx_mtu;           /* path.mtu's probes sent (mtu.c) */
	uint64_t jumbo_copied;     /* chained frames copied into one jumbo buffer (mtu.c) */
} __rte_cache_aligned;

/* A local port as the daemon uses it. */
struct lsd_port {
	uint16_t port_id;
	unsigned int lcore;
	const struct ls_conf_port *conf;
	struct ls_mac mac;         /* MAC we send from and answer for */
	struct ls_prefix v4, v6;   /* our addresses (family 0 when unset) */
	struct ls_addr v6_ll;      /* our IPv6 link-local address (ND) */
	bool rx_cksum_offload;     /* NIC validates L4 checksums */
	bool rss_nic;              /* RSS spread: the mbufs' RSS hash is ls_flow_rss_hash */
	bool own_to_lead;          /* RSS spread: rte_flow sends our MAC's frames to queue 0 */
	bool fast_ok;              /* IPv4 reflector fast path usable (lib/reflect) */
	bool tx_per_packet;        /* driver sends frame by frame (net_pcap): stamp each */
	bool tx_sched;             /* clock.tx_sched: the NIC sends on the mbuf's TX timestamp */
	int tx_ts_field;           /* ... its dynfield offset */
	uint64_t tx_ts_flag;       /* ... and flag */
	struct ls_reflect_port fast; /* what the fast path matches against */
	uint16_t vlan;             /* 802.1Q VID of our frames here, 0: untagged */
	uint16_t vlan_tci;         /* ... with probe.pcp: ARP/ND and the default */
	bool vlan_offload;         /* the NIC inserts the tag (TX_OFFLOAD_VLAN_INSERT) */
	char driver[32];
	struct ls_app_gate gate;   /* memif: queues used while the link is up (lcore) */
};

/* One path (ECMP entropy value) to a peer. */
struct lsd_peer_path {
	struct rte_timer tim;      /* next coded pair */
	struct rte_timer pair_tim; /* second member when pair spacing > 0 */
	struct lsd_peer *peer;
	uint16_t idx;              /* path index */
	uint16_t sport;            /* UDP source port = entropy */
	uint32_t seq;              /* next sequence number */
	uint32_t pair_id;          /* next coded-pair id */
	uint8_t state_down;        /* consecutive losses reached down_after */
	uint8_t ev_down;           /* (control) the state the event log last reported */
	uint64_t acquire_end;      /* timer cycles: until then pairs go acquire_rate x as often */
	struct ls_path_live live;  /* lcore-owned statistics */
	/* forward queueing for the data path's delay mode (lcore): the one-way
	 * delay above its floor; a constant clock offset cancels out */
	int64_t fwd_min[2];        /* floor: min of this and the last epoch */
	uint64_t fwd_epoch_end;    /* TSC: when this epoch's minimum rolls over */
	int64_t q_ns;              /* last forward sample minus the floor */
	int64_t rev_min[2];        /* the same for the reverse direction (links.c: */
	int64_t q_rev_ns;          /*   slow senders) */
	uint64_t q_tsc;            /* TSC of that sample, 0: none yet */
	uint64_t data_paths;       /* (control writes) the bridge's data paths whose
				    * route is this probe path's (links.c) */
	uint8_t fo_silent;         /* (lcore) found silent for failover (bridge_fo.c) */
	uint32_t q_back_us;        /* the q sample's round trip: its probe left q_tsc less
				    * this (in the hole before fo_srtt: the sender's lines
				    * keep their layout) */
	int64_t fo_srtt, fo_rttvar; /* (lcore) its round trips, smoothed (RFC 6298 form,
				    * ns), while data_paths != 0 */
	int64_t q_sum;             /* (lcore) every q_ns sample added up, and how */
	uint64_t q_cnt;            /*   many: per-link queueing (linkq.c) */
};

/*
 * The peer's clock relative to ours, for synced one-way delays: written by
 * the control thread after each sync step, read by the lcore per reply
 * (seqlock, as the TSC calibration).
 */
struct lsd_peer_owd {
	rte_seqlock_t lock;
	bool valid;
	uint64_t t0;               /* our local time off_ns refers to */
	double off_ns;             /* fleet-consistent local_peer - local_self at t0 */
	double drift;              /* its rate of change */
	bool edge_valid;           /* our own edge estimate to the peer's node, at the */
	double edge_ns;            /*   sync step's instant (= our announced t0): the */
	double edge_drift;         /*   reflector hands it back to that node */
	double edge_sigma;
};

/* Hash keys are 16 bytes, IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), so
 * rte_hash uses its vectorised 16-byte compare and CRC32 hashing. Built and
 * compared as two 64-bit words, in registers: a key stored with one 16-byte
 * store and read back as two 8-byte loads stalls on store forwarding. */
struct lsd_addr_key {
	uint64_t w[2];
};

static inline void
lsd_addr_key(const struct ls_addr *a, struct lsd_addr_key *k)
{
	if (a->family == LS_AF_INET6) {
		memcpy(&k->w[0], &a->a[0], 8);
		memcpy(&k->w[1], &a->a[8], 8);
	} else {
		uint32_t v4;

		memcpy(&v4, a->a, 4);
		k->w[0] = 0;
		k->w[1] = (uint64_t)v4 << 32 | rte_cpu_to_be_32(0xffff);
	}
}

static inline bool
lsd_addr_key_eq(const struct lsd_addr_key *x, const struct lsd_addr_key *y)
{
	return x->w[0] == y->w[0] && x->w[1] == y->w[1];
}

/* An lcore's peer filter: a bit per hash of its peers' addresses, so that
 * a frame from an address that is no peer (a reflector's askers) skips the
 * peer table. False positives only (a lookup that misses). */
#define LSD_PEER_FILTER_BITS 65536

static inline uint32_t
lsd_peer_filter_bit(const struct lsd_addr_key *k)
{
	uint64_t x = (k->w[0] ^ k->w[1] * 0x9e3779b97f4a7c15ULL) * 0xc2b2ae3d27d4eb4fULL;

	return (uint32_t)(x >> 48);
}

/* Reflector per-source token bucket. */
struct lsd_rl_bucket {
	uint64_t last_ns;
	uint64_t tokens_ns;    /* tokens scaled: one packet = 1e9 units */
	struct lsd_addr_key key;
	bool used;
};

struct lsd_peer_sync;               /* sync.c, control thread only */

/* A peer: allocated by the control thread, owned by its lcore once added. */
struct lsd_peer {
	char name[LS_NAME_LEN];
	struct ls_addr addr;
	struct ls_addr nexthop;    /* addr, or the port's gateway when off-link */
	uint16_t port_idx;         /* index into lsd.ports */
	uint16_t vlan_tci;         /* its probes' 802.1Q tag on a VLAN port (PCP | VID) */
	uint32_t interval_us;
	uint16_t n_paths;
	uint8_t tos;               /* its probes' TOS / traffic class (DSCP << 2) */
	int8_t dscp_conf;          /* configured per peer, -1: probe.dscp */
	uint32_t n_track;          /* entries of each path's outstanding-probe ring */
	int32_t slot;              /* index in its lcore's peer table */
	double asym_ns;            /* configured path asymmetry (clock sync) */
	/* neighbour resolution (lcore) */
	struct ls_mac mac;
	bool resolved;
	bool static_mac;           /* configured MAC: never ARP/ND for it */
	uint8_t resolve_tries;     /* requests sent while unresolved (the back-off) */
	uint64_t next_resolve_ns;
	bool sync_speaker;         /* (lcore) its reflector fills our sync TLV: its
				    * one-way delays wait for an offset, not raw */
	int8_t pcp_conf;           /* configured per peer, -1: probe.pcp (in the hole
				    * before first_reply_ns: the layout stays the base's) */
	uint16_t sync_paths;       /* (control writes) its first paths clock sync estimates
				    * from: only they acquire (sync.c, sync.path_budget) */
	uint64_t first_reply_ns;   /* (lcore) our time of its first reply, 0 before */
	struct lsd_rl_bucket rl;   /* (lcore) its probes' rate limit: a bucket of its own,
				    * out of strangers' reach (reflector.c) */
	struct lsd_peer_owd owd;    /* control writes, lcore reads */
	/* control-thread side */
	struct ls_path_window *win; /* n_paths windows (same block), owned by the control thread */
	struct lsd_peer_sync *sync; /* clock-sync estimators (sync.c) */
	struct lsd_peer_path path[]; /* n_paths */
};

/* Messages from the control thread to an lcore. */
enum lsd_msg_type {
	LSD_MSG_PEER_ADD = 1,   /* install msg->peer and start probing */
	LSD_MSG_PEER_DEL,       /* stop probing msg->peer and give it back */
	LSD_MSG_PROBE_SET,      /* change msg->peer's interval (0 = all peers) */
	LSD_MSG_PEER_ACQUIRE,   /* acquire msg->peer again (sender.c, acquisition) */
	LSD_MSG_POLICY,         /* run the data-path policy msg->ptr (bridge.c) */
	LSD_MSG_TRACE,          /* send path-discovery probes msg->ptr (route.c) */
	LSD_MSG_BALANCE,        /* move flows off a hot path: order msg->ptr (bridge_bal.c) */
	LSD_MSG_SHARE,          /* the lcore's share of link and slices msg->ptr (bridge_share.c) */
	LSD_MSG_MTU,            /* send path.mtu's probes msg->ptr (mtu.c) */
	LSD_MSG_PING,           /* nothing: the watchdog's proof of a polling lcore (notify.c) */
};

struct lsd_msg {
	enum lsd_msg_type type;
	struct lsd_peer *peer;
	uint32_t interval_us;
	const void *ptr;       /* LSD_MSG_POLICY: the new struct ls_policy */
	int result;            /* 0 or negative errno, set by the lcore */
	uint32_t state;        /* LSD_MSG_QUEUED, then TAKEN (lcore) or CANCELLED (control) */
	uint32_t done;         /* set (release) by the lcore when handled */
};

/* msg->state: whoever moves it off QUEUED first (compare-and-swap) decides
 * whether the message happens at all (peer.c, lsd_msg_send). */
enum {
	LSD_MSG_QUEUED = 0,
	LSD_MSG_TAKEN,
	LSD_MSG_CANCELLED,
};

/* Timestamps of one reply for the sync estimator: lcore -> control thread
 * through the lcore's sync ring (fixed-size ring elements, no mbufs). The
 * peer pointer stays valid: the control thread drains the rings after an
 * lcore has given a peer back and before freeing it. */
struct lsd_sync_rec {
	struct lsd_peer *peer;
	uint16_t path;
	uint8_t member;            /* coded-pair member, 0 or 1 */
	uint8_t has_state;         /* state[] holds the reflector's sync TLV value */
	uint32_t pair_id;
	uint64_t t1, t2, t3, t4;
	uint8_t state[LS_STAMP_SYNC_LEN];
};

/* Our clock-sync state as the reflector writes it into sync TLVs. */
struct lsd_sync_pub {
	rte_seqlock_t lock;
	bool valid;
	uint16_t wire_sum;      /* ls_reflect_sum() of wire: the fast path's checksum */
	uint8_t wire[LS_STAMP_SYNC_LEN];
};

/* One polling lcore. */
struct lsd_lcore {
	unsigned int lcore_id;
	uint16_t n_ports;
	uint16_t port_idx[LS_MAX_PORTS];
	struct rte_ring *msgs;             /* control -> lcore */
	struct rte_ring *sync_ring;        /* struct lsd_sync_rec, lcore -> control */
	struct rte_ring *route_ring;       /* struct lsd_route_rec, lcore -> control */
	struct ls_clock clock;
	struct rte_hash *peer_hash;        /* ls_addr -> slot */
	struct lsd_peer **peers;            /* LS_MAX_PEERS slots */
	uint32_t n_peers;
	uint32_t tick_next;                /* next peer the housekeeping visits */
	struct rte_timer housekeep;
	uint64_t prng;                     /* xorshift state for jitter */
	uint64_t t2_ns, t2;                /* the reflector's last T2 and its bytes */
	struct rte_hash *rl_hash;          /* source ls_addr -> bucket */
	struct lsd_rl_bucket *rl;           /* max_sources + 1 (last = overflow) */
	uint32_t rl_sweep;                 /* next bucket to check for idleness */
	uint64_t rl_seed;                  /* random: rl_hash's seed, front cache mix */
	/* Direct-mapped front cache of rl_hash: a slot names a bucket and is
	 * trusted only while that bucket still holds the same key, so a sweep
	 * that frees a bucket needs no invalidation here. */
	uint32_t rl_cache[LSD_RL_CACHE];    /* bucket index + 1, or a peer's slot + 1 with the
					    * top bit (reflector.c), 0 = empty */
	struct lsd_lcore_stats st;
	bool active;
	bool worker;                       /* a data-path lcore that owns no port */
	/* lsd_peer_filter_bit of each peer: 8 KB, last, away from the
	 * fields every probe and reply touch */
	uint64_t peer_filter[LSD_PEER_FILTER_BITS / 64] __rte_cache_aligned;
};

/* Capture state shared by lcores (read) and the control thread (write). */
struct lsd_capture_shared {
	volatile uint32_t on;              /* lcores copy packets while set */
	uint32_t snaplen;
	struct rte_ring *ring;             /* mbuf copies, MP/SC */
	struct rte_mempool *pool;
};

/* Process-wide state. Written during start-up; read-only afterwards except
 * where noted. */
struct lsd_global {
	struct ls_config cfg;
	struct lsd_port ports[LS_MAX_PORTS];
	unsigned int n_ports;
	struct lsd_lcore lcores[RTE_MAX_LCORE];
	struct rte_mempool *pool;
	struct rte_mempool *jumbo;         /* LSD_JUMBO_ROOM buffers: chained frames made one,
					    * path.mtu's large probes (mtu.c) */
	struct ls_tsc_cal cal;             /* refit by the control thread */
	struct lsd_capture_shared cap;
	int ts_dynfield;                   /* capture timestamp/direction dynfield */
	uint64_t loss_timeout_ns_default;
	uint16_t refl_ee;                  /* reflector Error Estimate */
	uint16_t send_ee;                  /* sender Error Estimate (PTPv2 format) */
	bool refl_ptp;                     /* reflector timestamps in PTPv2 format */
	volatile int quit;
	volatile int reload;          /* SIGHUP: the control thread reloads the peers */
	volatile int peers_ready;     /* the config's peers are in: lcores may poll ports */
	int exit_code;
	uint64_t start_tsc;
	struct lsd_sync_pub sync_pub;       /* written by the control thread */
	/* Readers of the lead lcore's peers from other data-path lcores (the
	 * delay mode): they report quiescence every loop, and a peer is freed
	 * only after a grace period (NULL with one data-path lcore). */
	struct rte_rcu_qsbr *qsbr;
	/* The lcores that burst on memif ports, for the teardown guard
	 * (ls_gate.h); NULL when no port is memif. */
	struct rte_rcu_qsbr *port_qsbr;
	/* The bridge ports' queues: one, or one per data-path lcore when they
	 * spread by RSS (port_rss.c) */
	uint16_t bridge_queues;
};

struct rte_rcu_qsbr;
extern struct lsd_global lsd;
extern const char *lsd_config_path;   /* --config (main.c), for errors */

/* One lcore counter summed over all lcores (relaxed loads, see the top). */
static inline uint64_t
lsd_lcores_sum(size_t off)
{
	uint64_t n = 0;
	unsigned int l;

	RTE_LCORE_FOREACH(l)
		n += __atomic_load_n((const uint64_t *)((const char *)&lsd.lcores[l].st + off),
				     __ATOMIC_RELAXED);
	return n;
}
#define LSD_LCORES_SUM(field) lsd_lcores_sum(offsetof(struct lsd_lcore_stats, field))

/* Capture timestamp dynfield: time in ns plus direction in the top bit. */
#define LSD_CAP_TX_BIT (1ULL << 63)
static inline uint64_t *
lsd_cap_field(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, lsd.ts_dynfield, uint64_t *);
}

/* port.c */
int lsd_ports_init(void);
/* port_rss.c: the RSS spread's queues, hash and redirection table */
int lsd_rss_plan(uint16_t host_id, uint16_t fab_id);
uint16_t lsd_rss_queues(const struct ls_conf_port *cp);
void lsd_rss_conf(struct lsd_port *p, const struct rte_eth_dev_info *info,
		  struct rte_eth_conf *conf);
void lsd_rss_started(struct lsd_port *p);
bool lsd_ports_stop(void);
bool lsd_port_owns(const struct lsd_port *p, const struct ls_addr *a);
bool lsd_port_bad_source(const struct lsd_port *p, const struct ls_addr *src);

/* datapath.c */
int lsd_lcore_main(void *arg);
void lsd_lcore_setup(struct lsd_lcore *lc);

/* tx.c */
/* Ask for m to leave p at at (ls_clock_tx_ts): clock.tx_sched, in the
 * mbuf's TX timestamp for the NIC; clock.tx_trailer, in a send-time trailer
 * for the lab's emulator. */
void lsd_tx_at(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m, uint64_t at);
void lsd_tx_frames(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf **m,
		  uint16_t n, uint64_t *counter);
/* Classify a vector of frames received on p at tsc (the probe path). */
void lsd_rx_vector(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf **rx, uint16_t n,
		   uint64_t tsc);
/* Learn from a broadcast/multicast frame (ARP, ND) without taking it. */
void lsd_rx_peek(struct lsd_lcore *lc, struct lsd_port *p, const struct rte_mbuf *m);

/* sender.c */
void lsd_sender_start_peer(struct lsd_lcore *lc, struct lsd_peer *peer);
void lsd_sender_stop_peer(struct lsd_lcore *lc, struct lsd_peer *peer);
void lsd_sender_acquire(struct lsd_peer *peer);

/* Acquisition is on: probe.acquire_ms > 0 and probe.acquire_rate > 1. */
static inline bool
lsd_acquire_on(void)
{
	return lsd.cfg.probe.acquire_ms > 0 && lsd.cfg.probe.acquire_rate > 1;
}
/* What lsd_peer_queue_ns says of a path whose probes are being lost: a
 * queue far past any target (10 s), so the delay mode cuts by its most. */
#define LSD_QUEUE_LOST_NS 10000000000LL

/* Forward queueing delay toward addr on data path (0xff: the worst of its
 * paths; the probe paths paired with it once routes are traced, else probe
 * path of the same index)
 * from samples no older than max_age TSC ticks; LSD_QUEUE_LOST_NS when its
 * probes are lost since the last reply, unless that reply put the queue on
 * the reverse path (past target_ns there, within it forward); -1 when none.
 * *at: when the sample's probe left (now for a loss). */
int64_t lsd_peer_queue_ns(struct lsd_lcore *lc, const struct ls_addr *addr, uint8_t path,
			  uint64_t now, uint64_t max_age, int64_t target_ns, uint64_t *at);
void lsd_sender_on_reply(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m,
			const struct ls_pkt_info *pi, uint64_t rx_ns);
void lsd_sender_tick(struct lsd_lcore *lc, uint64_t now_ns);
/* A probe's loss time-out: probe.loss_timeout_us, else the peer's
 * interval and at least 50 ms. */
static inline uint64_t
lsd_peer_loss_timeout_ns(const struct lsd_peer *peer)
{
	uint64_t t = (uint64_t)lsd.cfg.probe.loss_timeout_us * 1000;

	if (t == 0) {
		t = (uint64_t)peer->interval_us * 1000;
		if (t < 50ULL * 1000 * 1000)
			t = 50ULL * 1000 * 1000;
	}
	return t;
}

/* reflector.c */
int lsd_reflector_setup(struct lsd_lcore *lc);
/* Returns true when m was turned into a reply (caller transmits it). */
bool lsd_reflector_handle(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m,
			 const struct ls_pkt_info *pi, uint64_t rx_ns);
void lsd_reflector_sweep(struct lsd_lcore *lc, uint64_t now_ns);
/* A peer arrived at key: drop its address's rate-limit front-cache entry,
 * which may name a stranger's bucket (the entry also tells the sync fill
 * whether the asker is a peer). */
void lsd_reflector_forget(struct lsd_lcore *lc, const struct lsd_addr_key *key);
/* The fast path (lib/reflect) for a frame ls_reflect_v4_check() accepted;
 * true when m became a reply. */
bool lsd_reflector_fast(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m,
		       const struct ls_reflect_v4 *r, uint64_t rx_ns);
/* A reply's m->hash.usr: the STAMP payload offset for the generic path, or
 * LSD_REPLY_FAST when T3 and the UDP checksum are finished by lib/reflect. */
#define LSD_REPLY_FAST 0

/* mtu.c: path.mtu (padded probes on demand) and jumbo frames on the probe path */
#define LSD_MTU_MAX 9216         /* largest size path.mtu sends (the largest port MTU) */
#define LSD_JUMBO_ROOM 9472      /* jumbo buffer: LSD_MTU_MAX + Ethernet, VLAN, trailer */
#define LSD_JUMBO_MBUFS 255
#define LSD_MTU_MEMBER LS_STAMP_MEMBER_SINGLE /* lockstep TLV pair_member of its probes */
#define LSD_MTU_WAIT_MS 500      /* a run waits this long for its replies */
#define LSD_MTU_REUSE_MS 2000    /* a run's slot is not reused sooner */
int lsd_mtu_init(void);
/* A chained frame copied into one jumbo buffer (m freed), or m as it was
 * (too long, no buffer). */
struct rte_mbuf *lsd_mtu_linear(struct lsd_lcore *lc, struct rte_mbuf *m);
/* A reply whose lockstep TLV says LSD_MTU_MEMBER: its disposition. */
enum lsd_rx_disp lsd_mtu_on_reply(const struct lsd_peer *peer, uint32_t path,
				  const struct ls_stamp_lockstep_tlv *t, const uint8_t *payload,
				  const struct ls_pkt_info *pi);

/* route.c: path discovery (TTL-limited probes with a path's own 5-tuple,
 * hops from the ICMP errors). lcore side: */
struct lsd_route_rec {
	uint64_t tsc;              /* when the ICMP error arrived */
	struct ls_addr from;       /* who sent it */
	uint8_t id, ttl;           /* the probe's trace and TTL (from its tag) */
	uint8_t type, code;
};
/* The probes of one trace, for the lcore that owns the port. */
struct lsd_trace_tx {
	struct rte_mbuf *m[32];
	uint16_t n, port_idx;
};
/* A frame that may be an ICMP error about our probes: true when it was
 * (handed to the control thread; the caller frees the mbuf). */
bool lsd_route_rx(struct lsd_lcore *lc, const struct lsd_port *p, const uint8_t *frame,
		  uint32_t len, uint64_t tsc);
/* Cheap pre-check for the bridge's fabric side: ICMP or ICMPv6 at all. */
static inline bool
lsd_route_maybe(const uint8_t *f, uint32_t len)
{
	return len >= 54 && ((f[12] == 0x08 && f[13] == 0x00 && f[23] == 1) ||
			     (f[12] == 0x86 && f[13] == 0xdd && f[20] == 58));
}
/* control thread */
struct ls_ctl;
#define LSD_ROUTE_HOPS 8 /* routers kept per path: a 3-tier Clos has 5 */
/* A path's last background trace: the routers in TTL order (family 0:
 * that TTL drew no answer). */
struct lsd_route_path {
	int64_t traced_ns;         /* UTC start of the trace, 0: none yet */
	bool complete;             /* every TTL answered up to the last router, the
				    * next reached the peer */
	bool stale;                /* its route may have changed: trace again */
	uint8_t n;
	uint64_t key;              /* the n routers as one value (never 0), set when
				    * filed: paths that share it share fate */
	struct ls_addr hop[LSD_ROUTE_HOPS];
};
int lsd_route_init(void);
const struct lsd_route_path *lsd_route_map(const struct lsd_peer *peer, uint16_t path);
void lsd_route_stale(const struct lsd_peer *peer, uint16_t path);
/* the same path traced with the data's 5-tuple (dport 4791), where the
 * bridge does failover toward peer; NULL otherwise or not yet */
const struct lsd_route_path *lsd_route_data_map(const struct lsd_peer *peer, uint16_t path);
/* A peer's whole map (data: the data's), *n paths of it (0 and NULL: none);
 * an entry whose traced_ns is 0 has no trace yet. One lookup for all of a
 * peer's paths (links.c walks 80,000 of them). */
const struct lsd_route_path *lsd_route_peer_map(const struct lsd_peer *peer, bool data,
						uint16_t *n);
void lsd_route_poll(void);
/* links.c (control thread): link inference over the route map; true while
 * a pass is under way (the control loop then does not wait on the socket) */
bool lsd_links_poll(void);
void lsd_links_register(struct ls_ctl *ctl);
/* linkq.c (control thread): per-link queueing, fed by links.c's pass. begin:
 * whether this pass estimates (once a second); row: a live traced path
 * (its links, from_a[j]: link j crossed from its a end); solve: at the
 * pass's end, over its n_links links (each link's two ends at a and b,
 * stride bytes apart). */
bool lsd_linkq_begin(unsigned int n_peers);
void lsd_linkq_row(unsigned int pi, const struct lsd_peer *peer, uint16_t p, const uint16_t *ids,
		   const uint8_t *from_a, uint16_t m);
void lsd_linkq_solve(const struct ls_addr *a, const struct ls_addr *b, size_t stride,
		     uint32_t n_links);
void lsd_linkq_register(struct ls_ctl *ctl);
void lsd_route_register(struct ls_ctl *ctl);
void lsd_mtu_register(struct ls_ctl *ctl);
/* notify.c: systemd's notification protocol (control thread) */
void lsd_notify_init(void);
void lsd_notify_ready(void);
void lsd_notify_poll(uint64_t now_tsc);
void lsd_notify_stopping(void);
/* (control) A padded STAMP probe of size bytes (IP header on) on path p of
 * peer, DF, with the path's own 5-tuple and flow label, member
 * LSD_MTU_MEMBER and pair_id; NULL when no buffer. */
struct rte_mbuf *lsd_mtu_probe(const struct lsd_peer *peer, uint16_t p, uint16_t size,
			       uint32_t seq, uint64_t t1, uint32_t pair_id);
/* (control) Hand tx's probes to the lcore of the peer's port, which sends
 * them in one burst; 0 or negative errno (-ETIMEDOUT: tx leaked). */
int lsd_mtu_send(const struct lsd_peer *peer, struct lsd_trace_tx *tx);

/* train.c: path.train, packet trains for each path's capacity (the audit) */
#define LSD_TRAIN_FLAG 0x80u     /* pair_id bit of a train probe (path.mtu's size < 8) */
/* A reply to a train probe: its disposition (lcore, rx_ns our receive time). */
enum lsd_rx_disp lsd_train_on_reply(const struct lsd_peer *peer, uint32_t path,
				    const struct ls_stamp_lockstep_tlv *t, const uint8_t *payload,
				    const struct ls_pkt_info *pi, uint64_t rx_ns);
/* (control) Send the trains that are due; true while a run still sends. */
bool lsd_train_poll(void);
void lsd_train_register(struct ls_ctl *ctl);

/* neigh.c */
void lsd_neigh_rx_arp(struct lsd_lcore *lc, struct lsd_port *p, const struct ls_pkt_info *pi);
void lsd_neigh_rx_nd(struct lsd_lcore *lc, struct lsd_port *p, const struct ls_pkt_info *pi,
		    bool is_ns);
void lsd_neigh_resolve(struct lsd_lcore *lc, struct lsd_peer *peer, uint64_t now_ns);
void lsd_peer_set_nexthop(struct lsd_peer *peer);

struct ls_ctl;
struct ls_ctl_req;
struct json_t;

/* peer.c (control thread): the registry and the messages to the lcores */
struct lsd_peer *lsd_peer_new(const struct ls_conf_peer *cp);
void lsd_peer_free(struct lsd_peer *peer);
uint32_t lsd_peer_track_size(uint32_t interval_us);
uint32_t lsd_peer_probes_in(const struct lsd_peer *peer, uint32_t window_ms, uint32_t max);
size_t lsd_peer_bytes(const struct lsd_peer *peer);
int lsd_msg_send(unsigned int lcore, struct lsd_msg *m);
/* Queue m for an lcore without waiting (m->done set when handled): 0 or
 * -ENOBUFS. */
int lsd_msg_post(unsigned int lcore, struct lsd_msg *m);
/* A message of type carrying ptr to an lcore, and wait: the lcore's result,
 * or -ENOMEM, -ENOBUFS, -ETIMEDOUT. After -ETIMEDOUT the lcore may still
 * read ptr: the caller must leak it. */
int lsd_msg_call(unsigned int lcore, enum lsd_msg_type type, const void *ptr);
unsigned int lsd_peer_count(void);
struct lsd_peer *lsd_peer_at(unsigned int i);
/* (control) A pass over the peers in index order, at peer i: ask for the
 * next peer's path lines that such passes read (state, queueing sample)
 * and the header of the one after, so that their cache misses overlap
 * this peer's work instead of queueing after it (10k peers x 8 paths). */
void lsd_peer_prefetch_ahead(unsigned int i);
int lsd_peer_find(const char *name);
int lsd_peer_find_addr(const struct ls_addr *a);
int lsd_peer_arg(struct ls_ctl_req *req, struct json_t *args, const char **name);
/* (control) path.mtu's and path.train's args.peer and args.fresh: the peer,
 * or NULL (replied bad_args or not_found). */
struct lsd_peer *lsd_run_peer(struct ls_ctl_req *req, struct json_t *args, bool *fresh);
/* (control) The peer's next hop is resolved; else replied busy. */
bool lsd_run_resolved(struct ls_ctl_req *req, const struct lsd_peer *peer);
int lsd_peer_install(struct lsd_peer *peer);
#define LSD_MSG_RING 1024  /* messages an lcore's ring holds */
#define LSD_MSG_PER_LOOP 16 /* messages an lcore applies per loop: a bound on its stall */
#define LSD_PEER_BATCH 256 /* peers per lsd_peer_install_batch (< LSD_MSG_RING) */
void lsd_peer_install_batch(struct lsd_peer *const *peers, unsigned int n, int *rc);
int lsd_peer_uninstall(unsigned int idx);
/* Peers taken out of the registry so far: a walk over it in slices restarts
 * when this moved (pointers it kept may be freed, indexes moved). */
uint64_t lsd_peer_removals(void);
void lsd_peer_forget_all(void);
int lsd_peer_set_interval(struct lsd_peer *peer, uint32_t interval_us);
/* Acquire an installed peer again (LSD_MSG_PEER_ACQUIRE): 0 or negative errno. */
int lsd_peer_acquire(struct lsd_peer *peer);

/* clock.c (control thread) */
int lsd_clock_init(void);
struct ls_clock *lsd_clock_reader(void);
struct ls_clock *lsd_clock_query_reader(void);
uint64_t lsd_clock_now(void);
void lsd_clock_tick(uint64_t tsc);
struct json_t *lsd_clock_json(void);
/* Simulated clock's ground truth at a TSC reading (NULL unless SIM). */
struct json_t *lsd_clock_truth_at(uint64_t tsc);
/* args.tsc of the clock and sync commands: 0 when absent, else within
 * LSD_TSC_ARG_SPAN_S of now; replies bad_args and returns -EINVAL if not. */
#define LSD_TSC_ARG_SPAN_S 60
int lsd_clock_arg_tsc(struct ls_ctl_req *req, struct json_t *args, uint64_t *tsc);
void lsd_clock_register(struct ls_ctl *ctl);

/* log.c */
int lsd_log_level_from_name(const char *s);
void lsd_log_set_level(int lvl);
void lsd_log_register(struct ls_ctl *ctl);

/* control.c */
int lsd_control_start(void);
/* peer_state.c (control thread): the peer list saved on change, restored at start */
int lsd_peers_save(void);
int lsd_peers_restore(char *err, size_t errlen);
/* metrics.c (control thread): Prometheus /metrics from the control commands */
struct ls_ctl;
int lsd_metrics_start(struct ls_ctl *ctl);
void lsd_metrics_poll(void);
void lsd_metrics_stop(void);
/* telemetry.c: /lockstep/... DPDK telemetry commands, served by the control thread */
int lsd_telemetry_start(struct ls_ctl *ctl);
void lsd_telemetry_poll(void);
void lsd_control_join(void);
void lsd_control_free_peers(void);

/* sync.c (control thread) */
int lsd_sync_init(struct ls_clock *clock, struct ls_clock *q_clock);
void lsd_sync_fini(void);
int lsd_sync_peer_attach(struct lsd_peer *peer);
void lsd_sync_peer_detach(struct lsd_peer *peer);
/* (control) The peer's interval changed: its paths' windows and rings
 * follow it. 0, or -ENOMEM (a path kept its old ring and window). */
int lsd_sync_peer_interval(struct lsd_peer *peer);
void lsd_sync_drain(void);
/* One control-loop pass of sync's work; true while a fit step is under way
 * (the loop should come back without waiting). */
bool lsd_sync_poll(uint64_t tsc);
struct json_t *lsd_sync_json(uint64_t tsc);
struct json_t *lsd_sync_peer_json(const struct lsd_peer *peer);
struct json_t *lsd_sync_points_json(const struct lsd_peer *peer, uint16_t path);

/* sync_cmd.c */
void lsd_sync_register(struct ls_ctl *ctl);

/* fleettime.c (control thread): fleet time in shared memory */
struct ls_sync_state;
struct ls_sync_node_conf;
int lsd_fleettime_open(const char *path, char *err, size_t len);
int lsd_fleettime_start(const char *path);
void lsd_fleettime_close(void);
void lsd_fleettime_poll(uint64_t tsc, struct ls_clock *clock, const struct ls_sync_state *self,
			const struct ls_sync_node_conf *nconf);
uint64_t lsd_fleettime_updates(void);
struct ls_fleettime;
int lsd_fleettime_read(struct ls_fleettime *out);

/* chrony.c (control thread): fleet time to chronyd's SOCK refclock */
int lsd_chrony_open(const char *path);
void lsd_chrony_close(void);
void lsd_chrony_poll(uint64_t tsc, struct ls_clock *clock, const struct ls_sync_state *self,
		     const struct ls_sync_node_conf *nconf);
json_t *lsd_chrony_json(void);

/* events.c (control thread): the event log */
enum lsd_ev_sev { LSD_EV_INFO, LSD_EV_WARNING, LSD_EV_ERROR };
int lsd_events_init(void);
void lsd_events_fini(void);
void lsd_events_poll(void);
/* Log an event of type with the fields of o (taken; seq, times, node, type
 * and severity are added). */
void lsd_event(const char *type, enum lsd_ev_sev sev, struct json_t *o);
void lsd_events_register(struct ls_ctl *ctl);

/* capture.c */
int lsd_capture_init(void);
/* rte_pdump, for dpdk-dumpcap: before the lcores start / after they stop */
void lsd_pdump_init(void);
void lsd_pdump_fini(void);
int lsd_capture_start(const char *file, uint32_t snaplen, uint64_t max_bytes, char *err, size_t len);
int lsd_capture_stop(void);
void lsd_capture_drain(void);
struct lsd_capture_status {
	bool active;
	char file[LSD_CAP_PATH_LEN];
	uint64_t packets, bytes, dropped;
};
void lsd_capture_status(struct lsd_capture_status *st);
/* lcore side: copy m for the capture file */
void lsd_capture_copy(struct lsd_lcore *lc, struct rte_mbuf *m, uint64_t ts_ns, bool tx);
void lsd_capture_register(struct ls_ctl *ctl);

#endif /* LOCKSTEPD_H */
