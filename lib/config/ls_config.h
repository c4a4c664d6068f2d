/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lockstepd configuration: a JSON file (parsed with jansson) validated into
 * plain structs.
 *
 * Every rejection names the file, the key path (e.g. "peers[2].addr") and
 * the reason, in one line: "FILE: KEY: REASON". Unknown keys are errors (a
 * typo must not silently fall back to a default). Defaults are documented in
 * docs/config.md and applied here, in one place.
 *
 * No EAL: the daemon parses its config before rte_eal_init() touches
 * anything, and unit tests run without hugepages.
 */
#ifndef LS_CONFIG_H
#define LS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ls_common.h"
#include "ls_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LS_MAX_PORTS 8          /**< ports per daemon */
#define LS_MAX_PEERS 16384      /**< peers per daemon (Pingmesh: 2-5k per server) */
#define LS_MAX_PATHS 64         /**< paths (ECMP entropy values) per peer */
#define LS_NAME_LEN 64          /**< names incl. NUL */
#define LS_ERR_LEN 512          /**< error message buffer */

/** Clock source selection. */
enum ls_clock_source {
	LS_CLOCK_AUTO = 0,  /**< NIC clock when every port supports it, else TSC */
	LS_CLOCK_TSC,       /**< TSC calibrated to ns */
	LS_CLOCK_NIC,       /**< NIC hardware clock (fails to start when absent) */
	LS_CLOCK_SIM,       /**< simulated: TSC + offset + drift + wander (lab) */
};

/** What a port is for. */
enum ls_port_role {
	LS_PORT_FABRIC = 0, /**< toward the fabric: probes, reflector, bridge's fabric side */
	LS_PORT_HOST,       /**< the bridge's host side: the host's own frames, no addresses */
};

/** One port. */
struct ls_conf_port {
	char name[32];            /**< port name used by peers ("p0") */
	char dev[256];            /**< ethdev name or devargs ("net_memif0,role=client,...", PCI) */
	struct ls_mac mac;        /**< MAC to use (when has_mac) */
	bool has_mac;             /**< mac set; else the port's own MAC */
	struct ls_prefix ipv4;    /**< IPv4 address/prefix (family 0 when unset) */
	struct ls_prefix ipv6;    /**< IPv6 address/prefix (family 0 when unset) */
	struct ls_addr gateway4;  /**< next hop for off-subnet IPv4 peers (family 0 = none) */
	struct ls_addr gateway6;  /**< next hop for off-subnet IPv6 peers */
	int lcore;                /**< lcore that polls this port, -1 = main lcore */
	uint16_t rx_desc;         /**< RX ring size, default 1024 */
	uint16_t tx_desc;         /**< TX ring size, default 1024 */
	uint16_t mtu;             /**< MTU, default 1500 */
	uint8_t role;             /**< enum ls_port_role, default fabric */
	uint16_t vlan;            /**< 802.1Q VLAN ID of lockstepd's own frames on this
				   *   port (probes, replies, ARP/ND), 0 = untagged */
	bool kernel_stamps;       /**< net_pcap: kernel RX stamps and TX frame by frame
				   *   (default); false: software stamps per burst and burst TX,
				   *   as a NIC without timestamps ("kernel_stamps": false) */
};

/** The data path: a bump in the wire between a host port and a fabric port. */
#define LS_BRIDGE_MAX_LCORES 16 /**< data-path lcores per bridge */

/** How the data path's frames reach its lcores (docs/datapath.md, "Many cores"). */
enum ls_spread {
	LS_SPREAD_AUTO,   /**< RSS where both ports can, else soft */
	LS_SPREAD_RSS,    /**< one queue per lcore on each port, RSS by address pair */
	LS_SPREAD_SOFT,   /**< the first lcore reads the ports and hands frames out */
};

struct ls_conf_bridge {
	bool enabled;             /**< a "bridge" section is present */
	char host_port[32];       /**< ports[].name of the host side (role "host") */
	char fabric_port[32];     /**< ports[].name of the fabric side */
	uint64_t link_bps;        /**< shaped rate toward the fabric, wire bits/s (required) */
	uint32_t max_flows;       /**< flow table size per lcore, default 262144 */
	uint32_t flow_idle_ms;    /**< a flow idle this long is forgotten, default 30000 */
	uint32_t pace_max_delay_us; /**< a paced packet due later than this is dropped,
				     *   default 10000 */
	uint32_t wheel_slots;     /**< pacing wheel slots, power of two, default 65536 */
	uint32_t mbufs;           /**< frames the data path may hold (wheel, slice
				   *   queues), default 16384 */
	uint32_t wheel_slot_ns;   /**< slot width (rounded to a power of two of TSC
				   *   ticks), default 100 */
	char policy_file[256];    /**< state file: policy saved on every change and
				   *   restored at start, default
				   *   /var/lib/lockstep/<node>.policy.json, "" = none */
	struct ls_policy *policy; /**< initial policy (malloc'd; used when the state
				   *   file does not exist yet) */
	struct ls_conf_failover {
		bool enabled;         /**< move silent RoCEv2 RC flows, default true */
		uint32_t silence_us;  /**< a flow with a request unacknowledged this
				       *   long moves to another path, default 500 */
		uint32_t hold_ms;     /**< a moved flow stays off its path (and the
				       *   path is avoided for its destination) this
				       *   long, default 2000 */
	} failover;               /**< "failover": repath on silence (docs/datapath.md) */
	struct ls_conf_balance {
		bool enabled;         /**< move flows off paths that turn hot, default false */
		uint32_t hot_us;      /**< building forward queueing that makes a path
				       *   hot, default 0: links.hot_us */
		uint32_t interval_us; /**< a round per destination this often, default
				       *   0: half probe.interval_us (the control
				       *   thread's pace bounds it) */
		uint8_t runs;         /**< building samples over hot_us before moving, default 2 */
		uint32_t jitter_us;   /**< random wait before a move, default 0: ten
				       *   probe intervals */
		uint32_t settle_us;   /**< after a move, none toward the destination for
				       *   this long, default 0: ten probe intervals */
	} balance;                /**< "balance": contention avoidance (docs/datapath.md) */
	/** lcores carrying the data path, the fabric port's first (it also runs
	 *  the probe mesh); none = that lcore alone */
	uint16_t lcores[LS_BRIDGE_MAX_LCORES];
	uint8_t n_lcores;
	uint8_t spread;           /**< how frames reach them: LS_SPREAD_* */
};

/** Probe defaults (per peer overrides below). */
struct ls_conf_probe {
	uint32_t interval_us;     /**< time between coded pairs on one path, default 10000 */
	uint16_t paths;           /**< paths per peer, default 4 */
	uint16_t dst_port;        /**< reflector UDP port, default 862 */
	uint16_t src_port_base;   /**< path i uses source port base+i, default 49152 */
	uint32_t pair_spacing_ns; /**< intended spacing inside a pair, default 0 (back to back) */
	uint8_t jitter_pct;       /**< +/- jitter of the interval in percent, default 10 */
	uint32_t loss_timeout_us; /**< reply time-out, default 0 = max(interval, 50 ms) */
	uint8_t ttl;              /**< TTL / hop limit, default 255 */
	uint8_t dscp;             /**< DSCP, default 0 */
	uint8_t pcp;              /**< 802.1Q priority on VLAN ports, default 0 */
	uint16_t pad;             /**< extra padding bytes (RFC 8972 Extra Padding TLV), default 0 */
	uint16_t down_after;      /**< consecutive losses that mark a path down, default 3 */
	uint32_t acquire_ms;      /**< after a peer is added, probe faster for this long, default 4000 */
	uint8_t acquire_rate;     /**< ... this many times as often, default 4 (1: off) */
};

/** One peer. */
struct ls_conf_peer {
	char name[LS_NAME_LEN];   /**< peer name (unique) */
	struct ls_addr addr;      /**< peer's reflector address */
	char port[32];            /**< local port name to reach it on (default: first port) */
	uint32_t interval_us;     /**< 0 = probe default */
	uint16_t paths;           /**< 0 = probe default */
	struct ls_mac mac;        /**< static next-hop MAC (when has_mac): no ARP/ND */
	bool has_mac;             /**< mac set */
	double asym_ns;           /**< calibrated path asymmetry toward this peer: forward
				   *   minus reverse propagation floor, ns, default 0 */
	int8_t dscp;              /**< probes' DSCP toward this peer, -1 = probe default */
	int8_t pcp;               /**< probes' 802.1Q priority, -1 = probe default */
};

/**
 * Pingmesh-style pinglist: K peers chosen from a fleet file, a different
 * but deterministic choice for every node id (rendezvous hashing: each host
 * scores hash(seed, node id, host name), the K highest are taken), so one
 * file configures a whole fleet and each host's peers stay put when others
 * join or leave.
 */
struct ls_conf_pinglist {
	char fleet[256];          /**< fleet file: {"hosts": [peer objects]}, relative to the
				   *   config file's directory; "" = no pinglist */
	uint32_t k;               /**< peers to take, 1..LS_MAX_PEERS, default 16 */
	uint64_t seed;            /**< mixes the choice (a fleet-wide constant), default 0 */
};

/** Clock synchronisation (lib/sync). */
struct ls_conf_sync {
	bool enabled;             /**< estimate, solve and serve fleet time, default true */
	uint32_t window_ms;       /**< envelope-fit window, default 2000 */
	uint32_t interval_ms;     /**< fit + network-effect step period, default 500 */
	uint32_t purity_tol_ns;   /**< coded-pair purity tolerance, default 200 */
	uint32_t outlier_ns;      /**< drop an envelope support point lying more than this
				   *   below the rest (a timestamp fault), 0 = off (default:
				   *   under load a genuine floor sample is often alone) */
	uint32_t reference;       /**< reference node id, default 0 = elect the lowest id */
	double holdover_ppm;      /**< bound growth while not updated, default 1 */
	double wander_ns;         /**< oscillator wander between two nodes' clocks, ns per
				   *   sqrt(s), default 10 */
	double asym_bound_ns;     /**< uncalibrated asymmetry allowance in the bound, default 0 */
	uint16_t paths;           /**< paths of each peer clock sync estimates (the first
				   *   ones), default LS_MAX_PATHS = all */
	uint32_t path_budget;     /**< paths clock sync estimates from in all: past it
				   *   each peer gets budget / peers (at least 1),
				   *   default 4096, 0 = no limit */
	char shm[108];            /**< fleet-time shared memory file, default
				   *   /dev/shm/lockstep-<node>.fleettime, "" = none */
	char chrony_sock[108];    /**< chronyd's SOCK refclock socket to feed fleet time
				   *   to, default "" = none */
	int64_t chrony_offset_ns; /**< subtracted from fleet time for chronyd: the
				   *   fleet's timescale less the system clock's (a
				   *   TAI fleet for a UTC host: 37e9), default 0 */
};

/** Reflector. */
struct ls_conf_reflector {
	bool enabled;             /**< answer STAMP packets, default true */
	uint32_t rate_pps;        /**< per-source rate limit, default 20000 */
	uint32_t burst;           /**< per-source burst, default 256 */
	uint32_t max_sources;     /**< sources tracked for rate limiting, default 4096 */
	bool ntp_format;          /**< reply timestamps in NTP format, default false (PTPv2) */
};

/** Simulated clock parameters (lab). */
struct ls_conf_simclock {
	int64_t offset_ns;        /**< constant offset from true time */
	double drift_ppm;         /**< frequency error in ppm */
	double wander_ns;         /**< random-walk step std-dev per sqrt(second), ns */
	uint64_t seed;            /**< random-walk seed, default node id */
};

/** Clock. */
struct ls_conf_clock {
	enum ls_clock_source source;  /**< default AUTO */
	struct ls_conf_simclock sim;  /**< used when source is SIM */
	bool rx_trailer;              /**< receive stamps from a frame trailer (lab emulator's
				       *   --rx-trailer; TSC or SIM source only), default false */
	bool tx_trailer;              /**< send at the stamped instant: T1/T3 tx_lead_ns ahead,
				       *   the instant in a trailer (lab emulator's --tx-trailer;
				       *   TSC or SIM source only), default false */
	bool tx_sched;                /**< send at the stamped instant on the NIC: T1/T3
				       *   tx_lead_ns ahead, the instant in the mbuf's TX
				       *   timestamp (RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP; NIC
				       *   source only), default false */
	uint32_t tx_lead_ns;          /**< how far ahead (tx_trailer, tx_sched), default 20000 */
};

/** Control socket. */
struct ls_conf_control {
	char socket[108];         /**< path, default /run/lockstep/<node>.sock */
	uint32_t mode;            /**< permission bits, default 0660 */
	uint32_t max_clients;     /**< concurrent clients, default 16 */
	uint32_t idle_timeout_ms; /**< drop a client idle (or dribbling half a line) this
				   *   long, default 60000 */
	char peers_file[256];     /**< the peer list as changed at run time (peer.add/del,
				   *   probe.set), restored at start; default
				   *   /var/lib/lockstep/<node>.peers.json, "" none */
};

/** Idle back-off of the polling lcores (lab use on shared cores). */
struct ls_conf_idle {
	bool backoff;             /**< sleep when idle, default false */
	uint32_t after_polls;     /**< empty polls before sleeping, default 256 */
	uint32_t sleep_us;        /**< sleep length, default 100 */
};

/** Capture defaults. */
struct ls_conf_capture {
	uint32_t snaplen;         /**< bytes kept per packet, default 256 */
	uint64_t max_bytes;       /**< file size bound, default 64 MiB */
	uint32_t ring_size;       /**< lcore -> writer ring, default 4096 */
	char dir[256];            /**< the only directory captures are written to (absolute),
				   *   default /var/lib/lockstep/capture */
};

/** Prometheus exposition (/metrics over HTTP): off unless port is set. */
struct ls_conf_metrics {
	struct ls_addr address;   /**< listen address, default 127.0.0.1 */
	uint32_t port;            /**< TCP port, 0 = off (the default) */
};

/** Path discovery in the background: the route map link inference reads
 *  (app/lockstepd/route.c, links.c). */
struct ls_conf_route {
	bool enabled;             /**< trace every path in the background, default true */
	uint32_t refresh_s;       /**< trace a path again after this long, default 300 */
	uint32_t traces_per_s;    /**< background traces started per second, default 20 */
	uint8_t max_ttl;          /**< TTLs probed, default 8 */
};

/** Link inference (app/lockstepd/links.c). */
struct ls_conf_links {
	uint32_t hot_us;          /**< forward queueing that makes a path hot, default 200 */
};

/** The event log (app/lockstepd/events.c). */
struct ls_conf_events {
	char file[256];           /**< JSON lines appended here, "" = none (the default) */
	uint32_t keep;            /**< events kept for the "events" command, default 4096 */
};

/** The whole configuration. */
struct ls_config {
	char file[256];                      /**< file it came from */
	char node_name[LS_NAME_LEN];         /**< node name */
	uint32_t node_id;                    /**< node id, >= 1 */
	struct ls_conf_port ports[LS_MAX_PORTS]; /**< ports */
	unsigned int n_ports;                /**< ports used */
	struct ls_conf_peer *peers;          /**< peers (malloc'd, n_peers) */
	unsigned int n_peers;                /**< peers */
	struct ls_conf_probe probe;          /**< probe defaults */
	struct ls_conf_reflector reflector;  /**< reflector */
	struct ls_conf_clock clock;          /**< clock */
	struct ls_conf_control control;      /**< control socket */
	struct ls_conf_idle idle;            /**< idle back-off */
	struct ls_conf_capture capture;
	struct ls_conf_metrics metrics;      /**< capture */
	struct ls_conf_sync sync;            /**< clock synchronisation */
	struct ls_conf_events events;        /**< event log */
	struct ls_conf_route route;          /**< background path discovery */
	struct ls_conf_links links;          /**< link inference */
	struct ls_conf_pinglist pinglist;    /**< peers[] += K hosts of a fleet file */
	char log_level[16];                  /**< "error".."debug", default "info" */
	struct ls_conf_bridge bridge;        /**< data path (bridge.enabled) */
};

/**
 * Load and validate a config file.
 * @param path  file to read
 * @param cfg   filled on success (free with ls_config_free)
 * @param err   on failure: "PATH: KEY: REASON" (or "PATH: line L: ..." for JSON syntax)
 * @return 0, or a negative errno (-ENOENT, -EINVAL, ...).
 */
int ls_config_load(const char *path, struct ls_config *cfg, char *err, size_t errlen);

/**
 * Validate an already parsed JSON document (used by ls_config_load and tests).
 * @param src  name used in error messages (the file name)
 */
int ls_config_from_json(const json_t *root, const char *src, struct ls_config *cfg,
			char *err, size_t errlen);

/**
 * Validate one peer object (the same rules as in the file) against cfg's
 * ports and probe limits; used by the control socket's peer.add.
 * @param where  key path prefix for errors ("args")
 */
int ls_config_parse_peer(const json_t *obj, const struct ls_config *cfg, const char *where,
			 struct ls_conf_peer *out, char *err, size_t errlen);

/**
 * The pinglist's choice: indexes of the k of n host names that score
 * highest for node_id (rendezvous hashing), best first, skipping those
 * with skip[i] != 0 (skip may be NULL). The same inputs give the same list.
 * @param out  at least k entries
 * @return entries written to out (at most k)
 */
unsigned int ls_pinglist_choose(const char *const *names, const uint8_t *skip, unsigned int n,
				uint32_t node_id, uint64_t seed, unsigned int k,
				unsigned int *out);

/** Release memory held by cfg (peers). */
void ls_config_free(struct ls_config *cfg);

/** Name of a clock source ("auto", "tsc", "nic", "sim"). */
const char *ls_clock_source_name(enum ls_clock_source s);

/** Index of the port named name, or -1. */
int ls_config_port_index(const struct ls_config *cfg, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* LS_CONFIG_H */
