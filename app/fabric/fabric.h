/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-fabric internals.
 *
 * One polling lcore owns the whole emulated network: the host ports, every
 * channel's queue (lib/fabric), the event heap, the background generators and
 * the link schedules. A control thread (rte_ctrl_thread) serves the control
 * socket and writes the ground truth; it changes the network only through
 * messages on the lcore's ring, and reads counters and queue state with
 * relaxed loads. Truth records travel the other way on a ring, so the lcore
 * never touches a file.
 *
 * Time is the TSC mapped to CLOCK_MONOTONIC_RAW nanoseconds (drivers/clock),
 * the same timeline the appliances' simulated clocks are built on, so ground
 * truth and the appliances' truth line up.
 */
#ifndef LS_FABRIC_APP_H
#define LS_FABRIC_APP_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "../common/ls_gate.h"
#include "ls_clock.h"
#include "ls_fabric.h"
#include "ls_hist.h"

extern int lsf_logtype;
#define LSF_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, lsf_logtype, "lockstep-fabric: " fmt "\n", ##__VA_ARGS__)

#define LSF_BURST 32
#define LSF_MAX_GENS 64
#define LSF_MAX_FLAPS 64
#define LSF_RX_SLOW_NS 1000     /* see rx_hosts */
/* --tx-trailer (tx_at): an instant more than 10 ms after the poll, or more
 * than 1 s before it, is not believed. Ahead, no host asks for more than
 * its clock.tx_lead_ns (at most 1 ms); behind, a poll loop held up by a
 * busy host has been seen 11 ms late, and such a frame is late, not false. */
#define LSF_TX_AT_AHEAD_NS 10000000ULL
#define LSF_TX_AT_BEHIND_NS 1000000000ULL
#define LSF_WIRE_OVERHEAD 24   /* FCS 4 + preamble/SFD 8 + inter-frame gap 12 */
/* A channel is offered pkt_len + LSF_WIRE_OVERHEAD: with the Ethernet header
 * in pkt_len that is lib/fabric's L2 allowance, so the MTU is the IP packet's. */
_Static_assert(LSF_WIRE_OVERHEAD + 14 == LS_FAB_L2_BYTES, "frame bytes besides the IP packet");
/* Jumbo frames arrive from memif and net_pcap as chains of 2 KB mbufs; the
 * switches read one contiguous frame, so rx_hosts copies a chain into one
 * buffer of this pool (room for a 9216-byte IP packet, its Ethernet header
 * and VLAN tag, and the receive-stamp trailer --rx-trailer appends). */
#define LSF_JUMBO_ROOM 9472
#define LSF_JUMBO_MBUFS 1023

/* Per-switch and global counters (lcore-written). */
struct lsf_stats {
	uint64_t rx_pkts;          /* from host ports */
	uint64_t tx_pkts;          /* to host ports */
	uint64_t tx_dropped;       /* host port TX queue full */
	uint64_t arp_answered;
	uint64_t nd_answered;
	uint64_t icmp_time_exceeded;
	uint64_t icmp_rate_limited; /* time exceeded not sent: the switch's budget spent */
	uint64_t no_route;
	uint64_t bad;              /* unparsable at a switch */
	uint64_t not_ip;           /* neither IP nor ARP/ND we answer */
	uint64_t ignored;          /* ARP/ND a leaf does not answer (replies, for the
				    * host itself), ICMP errors about ICMP errors, a
				    * reply that could not be built: consumed silently */
	uint64_t alloc_failed;
	uint64_t host_down;        /* for a host whose memif is not connected */
	uint64_t gen_pkts;         /* background packets injected */
	uint64_t gen_dropped;
	uint64_t truth_dropped;    /* truth ring full */
	uint64_t truth_unwritten;  /* records not written: the file reached --truth-max-mb
				    * (control-thread-written) */
	uint64_t events;           /* deliveries processed */
	uint64_t idle_sleeps;
	uint64_t trailer_no_room;  /* --rx-trailer: no tailroom, sent without a stamp */
	uint64_t slow_rx_bursts;   /* host-port bursts that took over LSF_RX_SLOW_NS: their
				    * frames entered at the burst's end (rx_hosts) */
	uint64_t tx_at;            /* --tx-trailer: frames sent at their trailer's instant */
	uint64_t tx_at_late;       /* ... that reached us after it: sent when polled */
	uint64_t tx_at_bad;        /* ... whose instant was not believed (LSF_TX_AT_*) */
	uint64_t jumbo_copied;     /* chained frames copied into one jumbo buffer */
	uint64_t jumbo_no_buf;     /* ... not copied: jumbo pool empty (left chained: "bad") */
} __rte_cache_aligned;

/* Background traffic generator. */
struct lsf_gen {
	bool active;
	char name[32];
	bool pair;                 /* host pair (routed) or one channel */
	uint16_t chan;             /* channel mode: the channel */
	uint16_t src, dst;         /* pair mode: hosts */
	uint32_t flows;            /* pair mode: distinct 5-tuples spread by ECMP */
	uint64_t rate_bps;         /* offered load while on */
	uint32_t pkt_bytes;        /* wire bytes per packet */
	uint64_t on_ns, off_ns;    /* on/off bursts (off 0 = constant) */
	bool random;               /* on/off lengths exponential with those means */
	uint64_t burst_end_ns;     /* random: end of the current burst */
	uint64_t start_ns;
	uint64_t next_ns;          /* next packet */
	uint64_t gap_ns;           /* between packets while on */
	uint64_t sent, dropped;
	uint32_t seq;
};

/* A link flap schedule. */
struct lsf_flap {
	bool active;
	uint16_t chan[2];
	uint8_t n_chan;
	uint64_t down_ns, every_ns;
	uint64_t next_ns;          /* next transition */
	bool is_down;
	uint32_t count;            /* flaps left (0 = forever) */
};

/* Control -> lcore messages. */
enum lsf_msg_type {
	LSF_MSG_CHAN_SET = 1,      /* params and/or state of one channel */
	LSF_MSG_FLAP,              /* install a flap schedule */
	LSF_MSG_GEN_START,
	LSF_MSG_GEN_STOP,
	LSF_MSG_CONVERGENCE,
	LSF_MSG_ROUTE,             /* which channels a flow crosses (routes are the lcore's) */
};

struct lsf_msg {
	enum lsf_msg_type type;
	uint16_t chan;
	int8_t up;                           /* -1 unchanged */
	bool set_params;
	struct ls_fab_chan_params params;
	struct lsf_flap flap;
	struct lsf_gen gen;
	uint64_t convergence_ns;
	struct {                             /* ROUTE */
		uint16_t src, dst;           /* hosts */
		uint8_t family;
		uint8_t proto;
		uint16_t sport, dport;
		uint32_t flow_label;
		uint16_t n;                  /* out: channels crossed */
		uint16_t chan[16];
	} route;
	int result;
	uint32_t done;
};

/* Truth records (lcore -> control thread). */
enum lsf_truth_type {
	LSF_T_DEPTH = 1,           /* a channel's queue depth at a sample tick */
	LSF_T_LINK,                /* a channel went up or down */
	LSF_T_HOP,                 /* a probe crossed a channel */
	LSF_T_DROP,                /* a probe was dropped on a channel */
};

struct lsf_truth {
	uint8_t type;
	uint8_t up;                /* LINK */
	uint8_t verdict;           /* DROP: enum ls_fab_verdict or 255 = lost */
	uint16_t chan;
	uint64_t t_ns;             /* DEPTH/LINK: when; HOP: arrival */
	uint64_t due_ns;           /* LINK: when a flap schedule called for it
				    * (t_ns is later by however long the poll
				    * loop was held up); 0 = by command */
	uint64_t depth;            /* DEPTH: bytes; HOP: queue ahead of it, bytes */
	uint64_t depart_ns, deliver_ns; /* HOP */
	uint32_t ser_ns;           /* HOP: its own serialization time */
	/* HOP/DROP: which probe */
	uint8_t family;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint32_t seq;              /* STAMP sequence number (sender's) */
	bool stamp;                /* a STAMP packet (seq is valid); not: a trace's */
	bool reflected;            /* a reflector's answer (source port 862) */
	bool data;                 /* DROP: not a probe (a frame a dead link dropped) */
};

struct lsf_port {
	uint16_t port_id;
	uint16_t host;             /* node index */
	bool kstamp;               /* net_pcap: frames carry the kernel's receive stamp */
	struct rte_eth_dev_tx_buffer *txb;
	struct ls_app_gate gate;   /* memif: queues used while the link is up */
};

struct lsf_global {
	struct ls_fabric *fab;
	struct lsf_port ports[LS_FAB_MAX_NODES];
	int16_t port_of_host[LS_FAB_MAX_NODES];
	uint16_t n_ports;
	struct rte_mempool *pool;
	struct rte_mempool *jumbo; /* LSF_JUMBO_ROOM buffers for chained frames */
	struct rte_ring *msgs;
	struct rte_ring *truth;    /* lsf_truth records, lcore -> control thread */
	struct rte_mempool *truth_pool;
	struct ls_tsc_cal cal;     /* refit by the control thread */
	int kts_dynfield;          /* RX timestamp dynfield (kernel stamps), -1 none */
	uint64_t kts_dynflag;
	struct ls_tsc_map map;     /* the lcore's cached copy */
	uint64_t map_tsc;          /* when it was refreshed */
	uint64_t map_every;        /* refresh interval, TSC ticks (~100 ms) */
	struct lsf_stats st;
	/* How late deliveries to hosts leave versus their computed time: the
	 * error the emulator adds to its model (lcore-written; the control
	 * thread's reads are a slightly racy snapshot, fine for monitoring). */
	struct ls_hist late;
	/* Time from one poll of the host ports to the next: a frame a host
	 * sends waits up to that long for its ingress time (rx_hosts), which
	 * is one-sided noise on every transmit stamp in the lab, the part of
	 * the lab's error the receive trailer cannot remove (same racy
	 * snapshot as late). */
	struct ls_hist poll_gap;
	struct lsf_gen gens[LSF_MAX_GENS];
	struct lsf_flap flaps[LSF_MAX_FLAPS];
	uint64_t sample_ns;        /* truth depth sampling interval (0 = off) */
	uint32_t icmp_rate;        /* ICMP errors per second per switch (burst: a tenth) */
	uint64_t truth_max_bytes;  /* stop writing the truth file past this (0: no limit) */
	/* per switch: ICMP error tokens, 1/1000 of one, and when last refilled */
	uint64_t icmp_tokens[LS_FAB_MAX_NODES], icmp_refill[LS_FAB_MAX_NODES];
	bool hop_records;          /* per-hop records for probes */
	bool no_fastpath;          /* every packet through the generic path (differential tests) */
	bool rx_trailer;           /* append the delivery instant to frames to hosts (NIC stamps) */
	bool tx_trailer;           /* send frames from hosts at their trailer's instant */
	uint32_t idle_sleep_us;    /* 0 = busy poll */
	char socket[108];
	char truth_file[256];
	char sock_dir[200];
	/* the loop, the one reader of the memif teardown guard (ls_gate.h);
	 * NULL when no host port is memif */
	struct rte_rcu_qsbr *qsbr;
	volatile int quit;
	unsigned int lcore;
};

extern struct lsf_global fab;

/* Now on the lab's true timeline: CLOCK_MONOTONIC_RAW + LS_SIM_EPOCH_NS,
 * exactly what simulated clocks call true time. Lcore only (cached map). */
uint64_t lsf_now(void);
/* The same from any thread (reads the shared calibration). */
uint64_t lsf_now_any(void);

int lsf_loop(void *arg);
int lsf_control_start(void);
void lsf_control_stop(void);
int lsf_msg_send(struct lsf_msg *m);

/* truth.c: ground-truth records, lcore side */
void lsf_truth_push(const struct lsf_truth *t);
struct ls_pkt_info;
void lsf_probe_record(struct lsf_truth *t, const struct ls_pkt_info *pi,
		      const struct rte_mbuf *m);
void lsf_sample_depths(uint64_t now);
bool lsf_depths_pending(uint64_t now);

/* traffic.c: generators, flaps and control messages, lcore side */
void lsf_virtual_at(uint16_t node, uint32_t tag, uint64_t t);
unsigned int lsf_run_gens(uint64_t now, uint64_t *next);
void lsf_run_flaps(uint64_t now, uint64_t *next);
void lsf_apply_msg(struct lsf_msg *msg, uint64_t now);

#endif /* LS_FABRIC_APP_H */
