/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_sched: lockstep's per-flow shaping (what lockstepd's bridge does per
 * packet: ls_flow_parse, ls_flow_lookup_bulk, ls_wheel_pace, the wheel, one
 * slice) against DPDK's rte_sched doing the same shaping (one port, one
 * subport, one pipe per flow, one traffic class), on the same core in the
 * same process, with the same mbufs.
 *
 * The traffic is a closed loop: every flow owns `depth` mbufs (IPv4 UDP,
 * distinct addresses and ports per flow, generated once). All of them start
 * inside the scheduler; each loop iteration offers up to BURST packets from
 * the offered FIFO to the scheduler and dequeues one burst of up to BURST,
 * which go back to the tail of the offered FIFO (recycled, not freed).
 * Every flow therefore always has packets waiting: always backlogged. The
 * loop, the FIFO, the clock reads for the deadline and the per-flow counting
 * of dequeued packets are the same code for both.
 *
 * Two measurements per (flows, frame size):
 *  capacity: rates far above what a core can do (port and link 800 Gb/s,
 *    each flow 800 Gb/s / flows): the CPU is the limit; packets dequeued per
 *    second of wall time.
 *  accuracy: each flow shaped at R so that the aggregate is `load` (0.5) of
 *    rte_sched's capacity measured just before; port/link = link_factor (2)
 *    x flows x R so that only the per-flow shaper binds; each flow's output
 *    rate over `acc_secs` after a warm-up, against R.
 *
 * rte_sched classification: by default as DPDK's qos_sched example does, the
 * pipe read straight from the packet (here: the low bits of the IPv4
 * destination, which the generator sets to the flow's index); with
 * classify "lookup" (or "both", the default) also a second capacity run
 * that finds the pipe the way lockstep finds the flow (ls_flow_parse +
 * ls_flow_lookup_bulk on the same table), so the cost of finding the flow
 * is the same on both sides.
 *
 * Usage: bench_sched [EAL args] -- [--flows 1,1024,4096] [--sizes 64,1500]
 *   [--secs 3] [--acc-secs 2] [--warm 0.3] [--depth 8] [--load 0.5]
 *   [--link-factor 2] [--tc-period 40] [--classify addr|lookup|both]
 * e.g. build/tools/bench/bench_sched --no-huge --no-pci -m 1024 -l 1 --
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>
#include <rte_sched.h>
#include <rte_udp.h>

#include "ls_flow.h"
#include "ls_slice.h"
#include "ls_wheel.h"

#define BURST 32
#define MAX_LIST 16
#define CAP_PORT_BYTES 100000000000ULL /* capacity runs: 800 Gb/s */
#define SCHED_TC RTE_SCHED_TRAFFIC_CLASS_BE /* the one traffic class used */

static struct {
	uint32_t flows[MAX_LIST];
	unsigned int n_flows;
	uint32_t sizes[MAX_LIST];
	unsigned int n_sizes;
	double secs, acc_secs, warm, load, link_factor;
	uint32_t depth;
	uint32_t tc_period_ms;
	bool cls_addr, cls_lookup;
} opt = {
	.flows = {1, 1024, 4096}, .n_flows = 3,
	.sizes = {64, 1500}, .n_sizes = 2,
	.secs = 3, .acc_secs = 2, .warm = 0.3, .load = 0.5, .link_factor = 2,
	.depth = 8, .tc_period_ms = 40, .cls_addr = true, .cls_lookup = true,
};

static uint64_t hz;

/* ---- traffic ---------------------------------------------------------- */

/* One configuration's packets: P = flows * per-flow mbufs, all of them. */
struct traffic {
	uint32_t n_flows, size, per_flow, n_pkts;
	struct rte_mempool *mp;
	struct rte_mbuf **all;     /* every mbuf, to check none is lost */
	struct ls_flow_table *ft;  /* the N flows, pre-filled */
	uint32_t *pipe_of;         /* flow table index -> flow number */
	uint32_t *flow_idx;        /* flow number -> flow table index */
	uint64_t *cnt;             /* dequeued packets per flow */
};

/* The offered FIFO: packets waiting to be offered to the scheduler. */
struct fifo {
	struct rte_mbuf **q;
	uint32_t mask, head, tail;
};

static inline uint32_t fifo_count(const struct fifo *f) { return f->tail - f->head; }

static inline void
fifo_put(struct fifo *f, struct rte_mbuf **m, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		f->q[(f->tail + i) & f->mask] = m[i];
	f->tail += n;
}

static inline unsigned int
fifo_take(struct fifo *f, struct rte_mbuf **m, unsigned int max)
{
	unsigned int n = fifo_count(f);

	if (n > max)
		n = max;
	for (unsigned int i = 0; i < n; i++)
		m[i] = f->q[(f->head + i) & f->mask];
	f->head += n;
	return n;
}

static inline uint32_t
flow_of(struct rte_mbuf *m)
{
	return *(uint32_t *)rte_mbuf_to_priv(m);
}

static void
frame_fill(uint8_t *p, uint32_t size, uint32_t flow)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)p;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eh + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	memset(p, 0, size);
	memcpy(eh->dst_addr.addr_bytes, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(eh->src_addr.addr_bytes, "\x02\x00\x00\x00\x00\x01", 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(size - sizeof(*eh)));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	/* distinct addresses per flow: 10.0.0.0/8 source, 11.0.0.0/8 destination
	 * whose low bits are the flow's number (qos_sched-style classification) */
	ip->src_addr = rte_cpu_to_be_32(0x0a000000u | ((flow * 7919u + 1) & 0xffffff));
	ip->dst_addr = rte_cpu_to_be_32(0x0b000000u | (flow & 0xffffff));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16((uint16_t)(1024 + flow % 60000));
	udp->dst_port = rte_cpu_to_be_16((uint16_t)(5000 + flow / 60000));
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(size - sizeof(*eh) - sizeof(*ip)));
}

static int
traffic_make(struct traffic *t, uint32_t n_flows, uint32_t size, unsigned int seq)
{
	char name[64];
	uint32_t per_flow = opt.depth;
	uint32_t i;

	memset(t, 0, sizeof(*t));
	/* one flow alone still fills bursts: at least 256 packets in flight */
	if (per_flow * n_flows < 256)
		per_flow = (256 + n_flows - 1) / n_flows;
	if ((uint64_t)per_flow * n_flows > 65536) {
		fprintf(stderr, "flows x depth = %" PRIu64 " > 65536 (the slice queue's limit)\n",
			(uint64_t)per_flow * n_flows);
		return -1;
	}
	t->n_flows = n_flows;
	t->size = size;
	t->per_flow = per_flow;
	t->n_pkts = per_flow * n_flows;
	snprintf(name, sizeof(name), "bench_mp_%u", seq);
	t->mp = rte_pktmbuf_pool_create(name, t->n_pkts + 64, 0, 8,
					(uint16_t)(RTE_PKTMBUF_HEADROOM + RTE_ALIGN_CEIL(size, 64)),
					(int)rte_socket_id());
	t->all = calloc(t->n_pkts, sizeof(*t->all));
	t->flow_idx = calloc(n_flows, sizeof(uint32_t));
	t->cnt = calloc(n_flows, sizeof(uint64_t));
	if (t->mp == NULL || t->all == NULL || t->flow_idx == NULL ||
	    t->cnt == NULL) {
		fprintf(stderr, "no memory for %u packets (try a larger -m)\n", t->n_pkts);
		return -1;
	}
	if (rte_pktmbuf_alloc_bulk(t->mp, t->all, t->n_pkts) != 0) {
		fprintf(stderr, "mbuf alloc failed\n");
		return -1;
	}
	/* packets interleaved by flow: flow = i % n_flows */
	for (i = 0; i < t->n_pkts; i++) {
		struct rte_mbuf *m = t->all[i];
		uint32_t flow = i % n_flows;

		frame_fill(rte_pktmbuf_mtod(m, uint8_t *), size, flow);
		m->data_len = (uint16_t)size;
		m->pkt_len = size;
		*(uint32_t *)rte_mbuf_to_priv(m) = flow;
	}
	snprintf(name, sizeof(name), "bench_ft_%u", seq);
	t->ft = ls_flow_table_create(&(struct ls_flow_table_params){
		.name = name, .max_flows = n_flows * 2 > 1024 ? n_flows * 2 : 1024,
		.socket_id = SOCKET_ID_ANY});
	if (t->ft == NULL) {
		fprintf(stderr, "flow table: %s\n", strerror(errno));
		return -1;
	}
	t->pipe_of = calloc(ls_flow_capacity(t->ft), sizeof(uint32_t));
	if (t->pipe_of == NULL)
		return -1;
	for (i = 0; i < n_flows; i++) {
		struct ls_flow_pkt pk;
		int32_t idx;

		if (ls_flow_parse(rte_pktmbuf_mtod(t->all[i], const uint8_t *), size, &pk) !=
		    LS_FLOW_IP)
			return -1;
		idx = ls_flow_add(t->ft, &pk.key);
		if (idx < 0 || ls_flow_count(t->ft) != i + 1) {
			fprintf(stderr, "flow %u: add failed or not distinct\n", i);
			return -1;
		}
		t->pipe_of[idx] = i;
		t->flow_idx[i] = (uint32_t)idx;
	}
	return 0;
}

static void
traffic_free(struct traffic *t)
{
	rte_pktmbuf_free_bulk(t->all, t->n_pkts);
	ls_flow_table_free(t->ft);
	rte_mempool_free(t->mp);
	free(t->all);
	free(t->pipe_of);
	free(t->flow_idx);
	free(t->cnt);
}

static int
fifo_init(struct fifo *f, const struct traffic *t)
{
	f->mask = rte_align32pow2(t->n_pkts + 2 * BURST) - 1;
	f->q = calloc(f->mask + 1, sizeof(*f->q));
	f->head = f->tail = 0;
	if (f->q == NULL)
		return -1;
	fifo_put(f, t->all, t->n_pkts);
	return 0;
}

/* ---- results ------------------------------------------------------------ */

struct result {
	double mpps;          /* dequeued packets / s of wall time */
	double mpps_cpu;      /* dequeued packets / s of this thread's CPU time */
	double cpu_share;     /* CPU time / wall time: below 1 when the core is shared */
	double err_mean;      /* accuracy: mean of (rate - R) / R, % */
	double err_abs_mean;  /* mean |error|, % */
	double err_worst;     /* worst |error|, % */
	double agg_ratio;     /* aggregate output / (flows x R) */
	uint64_t lost;        /* mbufs not recovered at the end (must be 0) */
	uint64_t late;        /* lockstep: packets paced beyond lockstepd's 10 ms limit */
};

static double
thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Per-flow rates between two count snapshots against R (bytes/s). */
static void
rate_errors(const struct traffic *t, const uint64_t *c0, double secs, double r_bytes,
	    struct result *res)
{
	double sum = 0, sum_abs = 0, worst = 0, tot = 0;

	for (uint32_t i = 0; i < t->n_flows; i++) {
		double rate = (double)(t->cnt[i] - c0[i]) * t->size / secs;
		double e = (rate - r_bytes) / r_bytes * 100.0;

		tot += rate;
		sum += e;
		sum_abs += fabs(e);
		if (fabs(e) > worst)
			worst = fabs(e);
	}
	res->err_mean = sum / t->n_flows;
	res->err_abs_mean = sum_abs / t->n_flows;
	res->err_worst = worst;
	res->agg_ratio = tot / (r_bytes * t->n_flows);
}

/*
 * The shared measurement loop. A scheduler is two calls: offer n packets
 * (classify + enqueue) and dequeue up to BURST. Warm up, snapshot, run,
 * snapshot: the same for both schedulers.
 */
struct sched_ops {
	void *ctx;
	void (*offer)(void *ctx, struct rte_mbuf **m, unsigned int n, uint64_t now);
	unsigned int (*dequeue)(void *ctx, struct rte_mbuf **m, uint64_t now);
};

static void
run_loop(struct traffic *t, struct fifo *f, const struct sched_ops *ops, double secs,
	 bool accuracy, double r_bytes, struct result *res)
{
	struct rte_mbuf *m[BURST];
	uint64_t *c0 = calloc(t->n_flows, sizeof(uint64_t));
	uint64_t start = rte_rdtsc(), t0 = 0, t1, warm_end, end;
	uint64_t deq0 = 0, deq = 0;
	bool measuring = false;
	double cpu0 = 0;

	warm_end = start + (uint64_t)(opt.warm * (double)hz);
	end = warm_end + (uint64_t)(secs * (double)hz);
	for (;;) {
		uint64_t now = rte_rdtsc();
		unsigned int n;

		if (unlikely(!measuring && now >= warm_end)) {
			measuring = true;
			t0 = now;
			cpu0 = thread_cpu();
			deq0 = deq;
			memcpy(c0, t->cnt, t->n_flows * sizeof(uint64_t));
		}
		if (unlikely(now >= end))
			break;
		n = fifo_take(f, m, BURST);
		if (n > 0)
			ops->offer(ops->ctx, m, n, now);
		n = ops->dequeue(ops->ctx, m, now);
		for (unsigned int i = 0; i < n; i++)
			t->cnt[flow_of(m[i])]++;
		deq += n;
		fifo_put(f, m, n);
	}
	t1 = rte_rdtsc();
	res->mpps = (double)(deq - deq0) / ((double)(t1 - t0) / (double)hz) / 1e6;
	res->mpps_cpu = (double)(deq - deq0) / (thread_cpu() - cpu0) / 1e6;
	res->cpu_share = (thread_cpu() - cpu0) / ((double)(t1 - t0) / (double)hz);
	if (accuracy)
		rate_errors(t, c0, (double)(t1 - t0) / (double)hz, r_bytes, res);
	free(c0);
}

/* ---- rte_sched ---------------------------------------------------------- */

struct rs {
	struct rte_sched_port *port;
	struct traffic *t;
	bool lookup;          /* classify with ls_flow_parse + lookup, not the address */
	uint32_t pipe_mask;
	uint64_t dropped;
};

static void
rs_offer(void *ctx, struct rte_mbuf **m, unsigned int n, uint64_t now)
{
	struct rs *s = ctx;
	unsigned int i;
	int got;

	(void)now;
	if (!s->lookup) {
		/* qos_sched-style: the pipe is in the packet (destination address) */
		for (i = 0; i < n; i++) {
			const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(
				m[i], const struct rte_ipv4_hdr *, sizeof(struct rte_ether_hdr));
			uint32_t pipe = rte_be_to_cpu_32(ip->dst_addr) & s->pipe_mask;

			rte_sched_port_pkt_write(s->port, m[i], 0, pipe, SCHED_TC, 0,
						 RTE_COLOR_GREEN);
		}
	} else {
		/* the same classification work lockstep does */
		struct ls_flow_pkt pk[BURST];
		const struct ls_flow_key *keys[BURST];
		int32_t idx[BURST];

		for (i = 0; i < n && i < 4; i++)
			rte_prefetch0(rte_pktmbuf_mtod(m[i], void *));
		for (i = 0; i < n; i++) {
			if (i + 4 < n)
				rte_prefetch0(rte_pktmbuf_mtod(m[i + 4], void *));
			ls_flow_parse(rte_pktmbuf_mtod(m[i], const uint8_t *), m[i]->data_len,
				      &pk[i]);
			keys[i] = &pk[i].key;
		}
		ls_flow_lookup_bulk(s->t->ft, keys, n, idx);
		for (i = 0; i < n; i++)
			rte_sched_port_pkt_write(s->port, m[i], 0,
						 idx[i] < 0 ? 0 : s->t->pipe_of[idx[i]],
						 SCHED_TC, 0, RTE_COLOR_GREEN);
	}
	got = rte_sched_port_enqueue(s->port, m, n);
	s->dropped += n - (unsigned int)got; /* freed by rte_sched: counted as lost */
}

static unsigned int
rs_dequeue(void *ctx, struct rte_mbuf **m, uint64_t now)
{
	struct rs *s = ctx;

	(void)now;
	return (unsigned int)rte_sched_port_dequeue(s->port, m, BURST);
}

/*
 * One rte_sched run. r_bytes: each pipe's rate (bytes/s of frame: the
 * frame overhead is 0 so R means the same as for lockstep, which paces
 * m->pkt_len); port_bytes: port and subport rate.
 */
static int
rs_run(struct traffic *t, bool lookup, bool accuracy, uint64_t r_bytes, uint64_t port_bytes,
       double secs, struct result *res)
{
	struct rte_sched_subport_profile_params spp = {0};
	struct rte_sched_pipe_params pp[2];
	struct rte_sched_subport_params sp = {0};
	struct rte_sched_port_params portp = {0};
	uint32_t n_pipes = rte_align32pow2(t->n_flows);
	uint32_t qsize = rte_align32pow2(t->per_flow);
	struct rs s = {.t = t, .lookup = lookup, .pipe_mask = n_pipes - 1};
	struct fifo f;
	uint64_t deadline;
	uint32_t i;

	if (qsize < 16)
		qsize = 16;
	spp.tb_rate = port_bytes;
	spp.tb_size = 1000000;
	for (i = 0; i < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; i++)
		spp.tc_rate[i] = port_bytes;
	spp.tc_period = 10;
	portp = (struct rte_sched_port_params){
		.name = "bench", .socket = (int)rte_socket_id(), .rate = port_bytes,
		.mtu = 1518, .frame_overhead = 0, .n_subports_per_port = 1,
		.subport_profiles = &spp, .n_subport_profiles = 1, .n_max_subport_profiles = 1,
		.n_pipes_per_subport = n_pipes,
	};
	memset(pp, 0, sizeof(pp));
	/* profile 0: the flow's shaping; profile 1: unshaped, to drain at the end */
	pp[0].tb_rate = r_bytes;
	/* bucket: 1 ms of the rate (8 frames at least) so that the time between
	 * the grinder's visits to a backlogged pipe never overflows it */
	pp[0].tb_size = r_bytes / 1000 > 8ULL * t->size ? r_bytes / 1000 : 8ULL * t->size;
	if (!accuracy)
		pp[0].tb_size = 1000000;
	pp[0].tc_rate[SCHED_TC] = r_bytes;
	pp[0].tc_period = accuracy ? opt.tc_period_ms : 10;
	pp[0].tc_ov_weight = 1;
	for (i = 0; i < RTE_SCHED_BE_QUEUES_PER_PIPE; i++)
		pp[0].wrr_weights[i] = 1;
	pp[1] = pp[0];
	pp[1].tb_rate = port_bytes;
	pp[1].tb_size = 1000000;
	pp[1].tc_rate[SCHED_TC] = port_bytes;
	pp[1].tc_period = 10;
	sp.n_pipes_per_subport_enabled = n_pipes;
	sp.qsize[SCHED_TC] = (uint16_t)qsize;
	sp.pipe_profiles = pp;
	sp.n_pipe_profiles = 2;
	sp.n_max_pipe_profiles = 2;
	s.port = rte_sched_port_config(&portp);
	if (s.port == NULL || rte_sched_subport_config(s.port, 0, &sp, 0) != 0) {
		fprintf(stderr, "rte_sched: port/subport config failed (%u pipes)\n", n_pipes);
		rte_sched_port_free(s.port);
		return -1;
	}
	/* not oversubscribed: switch the BE oversubscription logic off */
	rte_sched_subport_tc_ov_config(s.port, 0, false);
	for (i = 0; i < n_pipes; i++)
		if (rte_sched_pipe_config(s.port, 0, i, 0) != 0) {
			fprintf(stderr, "rte_sched: pipe %u config failed\n", i);
			rte_sched_port_free(s.port);
			return -1;
		}
	if (fifo_init(&f, t) != 0)
		return -1;
	/* everything into the scheduler first: always backlogged */
	while (fifo_count(&f) > 0) {
		struct rte_mbuf *m[BURST];
		unsigned int n = fifo_take(&f, m, BURST);

		rs_offer(&s, m, n, 0);
	}
	memset(t->cnt, 0, t->n_flows * sizeof(uint64_t));
	run_loop(t, &f, &(struct sched_ops){.ctx = &s, .offer = rs_offer, .dequeue = rs_dequeue},
		 secs, accuracy, (double)r_bytes, res);
	/* drain: every pipe unshaped, dequeue until all mbufs are back */
	for (i = 0; i < n_pipes; i++)
		rte_sched_pipe_config(s.port, 0, i, 1);
	deadline = rte_rdtsc() + 5 * hz;
	while (fifo_count(&f) + s.dropped < t->n_pkts && rte_rdtsc() < deadline) {
		struct rte_mbuf *m[BURST];
		unsigned int n = (unsigned int)rte_sched_port_dequeue(s.port, m, BURST);

		fifo_put(&f, m, n);
	}
	res->lost = t->n_pkts - fifo_count(&f);
	rte_sched_port_free(s.port); /* frees whatever is still queued */
	/* the mbufs stay with the traffic: t->all is the set, fifo just held them */
	free(f.q);
	return 0;
}

/* ---- lockstep ----------------------------------------------------------- */

struct lk {
	struct traffic *t;
	struct ls_wheel *wheel;
	struct ls_slice_sched *sched;
	uint64_t max_delay;
	uint64_t late, slice_full;
	struct fifo *f;
};

/* What lockstepd's from_host does per burst (bridge.c), minus steering. */
static void
lk_offer(void *ctx, struct rte_mbuf **m, unsigned int n, uint64_t now)
{
	struct lk *k = ctx;
	struct ls_flow_pkt pk[BURST];
	const struct ls_flow_key *keys[BURST];
	int32_t idx[BURST];
	uint8_t slot[BURST];
	uint32_t now_ms = (uint32_t)(now / (hz / 1000));
	unsigned int i, nk = 0;

	/* lockstepd's bridge gets its mbufs from rx_burst, their headers just
	 * written by the PMD; here they come back from the FIFO cold (32,768 at
	 * 4,096 flows), and rte_sched's enqueue prefetches them itself: ask for
	 * the burst's headers first, as the PMD would have left them */
	for (i = 0; i < n; i++)
		rte_prefetch0(m[i]);
	for (i = 0; i < n && i < 4; i++)
		rte_prefetch0(rte_pktmbuf_mtod(m[i], void *));
	for (i = 0; i < n; i++) {
		if (i + 4 < n)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 4], void *));
		slot[i] = 0xff;
		if (ls_flow_parse(rte_pktmbuf_mtod(m[i], const uint8_t *), m[i]->data_len,
				  &pk[i]) == LS_FLOW_IP) {
			slot[i] = (uint8_t)nk;
			keys[nk++] = &pk[i].key;
		}
	}
	if (nk > 0)
		ls_flow_lookup_bulk(k->t->ft, keys, nk, idx);
	for (i = 0; i < n; i++) {
		struct ls_flow *fl;
		uint64_t at;

		if (unlikely(slot[i] == 0xff || idx[slot[i]] < 0)) {
			/* cannot happen with this traffic; keep the packet in the loop */
			fifo_put(k->f, &m[i], 1);
			continue;
		}
		fl = ls_flow_at(k->t->ft, idx[slot[i]]);
		fl->pkts++;
		fl->bytes += m[i]->pkt_len;
		fl->last_ms = now_ms;
		at = ls_wheel_pace(&fl->pace, fl->tpb, m[i]->pkt_len, now);
		if (unlikely(at - now > k->max_delay))
			k->late++; /* lockstepd would drop it; the closed loop keeps it */
		if (unlikely(ls_wheel_insert(k->wheel, m[i], (uint32_t)fl->slice << 18 | m[i]->pkt_len,
					     at) < 0))
			fifo_put(k->f, &m[i], 1);
	}
}

/* What lockstepd's to_fabric does: wheel -> slice, one slice burst out. */
static unsigned int
lk_dequeue(void *ctx, struct rte_mbuf **m, uint64_t now)
{
	struct lk *k = ctx;
	void *out[BURST];
	uint32_t tags[BURST];
	unsigned int n;

	(void)now;
	now = rte_rdtsc(); /* lockstepd reads the clock again before to_fabric */
	while ((n = ls_wheel_extract(k->wheel, now, out, tags, BURST)) > 0)
		for (unsigned int i = 0; i < n; i++) {
			struct rte_mbuf *p = out[i];

			/* slice and length from the tag, as lockstepd's to_fabric */
			if (unlikely(ls_slice_enqueue(k->sched, tags[i] >> 18, p,
						      tags[i] & ((1u << 18) - 1)) < 0)) {
				k->slice_full++;
				fifo_put(k->f, &p, 1);
			}
		}
	return ls_slice_dequeue(k->sched, now, (void **)m, BURST);
}

/* One lockstep run: each flow paced at r_bytes (bytes/s of frame), one
 * slice, link link_bits (wire bits/s, the slice counts 24 B overhead). */
static int
lk_run(struct traffic *t, bool accuracy, uint64_t r_bytes, uint64_t link_bits, double secs,
       struct result *res)
{
	struct lk k = {.t = t};
	struct ls_slice_conf sc = {.name = "default", .weight = 1};
	struct fifo f;
	uint64_t tpb = ls_wheel_tpb(hz, r_bytes * 8);
	uint32_t shift = 0, i;
	int sl;

	/* lockstepd's defaults: 65536 slots of the largest 2^k ticks <= 100 ns */
	while ((hz << (shift + 1)) / 1000000000ULL <= 100 && shift < 30)
		shift++;
	k.max_delay = hz / 1000000 * 10000; /* pace_max_delay_us default */
	k.f = &f;
	k.wheel = ls_wheel_create(&(struct ls_wheel_params){
		.n_slots = 65536, .slot_shift = shift, .capacity = t->n_pkts,
		.now = rte_rdtsc()});
	k.sched = ls_slice_create(&(struct ls_slice_params){
		.hz = hz, .link_bps = link_bits,
		/* a bucket that holds a burst of 32 frames at least (like rte_sched's
		 * tb_size: not the limit) */
		.burst_bytes = 64 * (t->size + LS_SLICE_OVERHEAD) > 16384 ?
			       64 * (t->size + LS_SLICE_OVERHEAD) : 16384,
		.now = rte_rdtsc()});
	sc.qlen = rte_align32pow2(t->n_pkts);
	if (sc.qlen < 16)
		sc.qlen = 16;
	if (k.wheel == NULL || k.sched == NULL || (sl = ls_slice_set(k.sched, &sc)) < 0) {
		fprintf(stderr, "lockstep: wheel/slice create failed\n");
		return -1;
	}
	for (i = 0; i < t->n_flows; i++) {
		struct ls_flow *fl = ls_flow_at(t->ft, (int32_t)t->flow_idx[i]);

		memset(&fl->pace, 0, sizeof(fl->pace));
		fl->tpb = tpb;
		fl->slice = (uint16_t)sl;
		fl->path = 0xff;
	}
	if (fifo_init(&f, t) != 0)
		return -1;
	{
		struct rte_mbuf *m[BURST];
		uint64_t now = rte_rdtsc();

		/* everything into the scheduler first: always backlogged */
		while (fifo_count(&f) > 0) {
			unsigned int n = fifo_take(&f, m, BURST);

			lk_offer(&k, m, n, now);
		}
	}
	memset(t->cnt, 0, t->n_flows * sizeof(uint64_t));
	run_loop(t, &f, &(struct sched_ops){.ctx = &k, .offer = lk_offer, .dequeue = lk_dequeue},
		 secs, accuracy, (double)r_bytes, res);
	/* drain: all of the wheel, then the slice */
	{
		void *out[BURST];
		unsigned int n;

		while ((n = ls_wheel_extract(k.wheel, UINT64_MAX, out, NULL, BURST)) > 0)
			fifo_put(&f, (struct rte_mbuf **)out, n);
		while ((n = ls_slice_drain(k.sched, (unsigned int)sl, out, BURST)) > 0)
			fifo_put(&f, (struct rte_mbuf **)out, n);
	}
	res->lost = t->n_pkts - fifo_count(&f);
	res->late = k.late;
	if (k.slice_full > 0)
		fprintf(stderr, "lockstep: %" PRIu64 " slice-full re-offers\n", k.slice_full);
	ls_wheel_free(k.wheel);
	ls_slice_free(k.sched);
	free(f.q);
	return 0;
}

/* ---- main --------------------------------------------------------------- */

static unsigned int
parse_list(const char *s, uint32_t *out)
{
	unsigned int n = 0;
	char *end;

	while (*s != '\0' && n < MAX_LIST) {
		out[n++] = (uint32_t)strtoul(s, &end, 0);
		if (*end != ',')
			break;
		s = end + 1;
	}
	return n;
}

static int
parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{"flows", 1, NULL, 'f'}, {"sizes", 1, NULL, 'z'}, {"secs", 1, NULL, 's'},
		{"acc-secs", 1, NULL, 'a'}, {"warm", 1, NULL, 'w'}, {"depth", 1, NULL, 'd'},
		{"load", 1, NULL, 'l'}, {"link-factor", 1, NULL, 'k'},
		{"tc-period", 1, NULL, 't'}, {"classify", 1, NULL, 'c'}, {NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'f': opt.n_flows = parse_list(optarg, opt.flows); break;
		case 'z': opt.n_sizes = parse_list(optarg, opt.sizes); break;
		case 's': opt.secs = atof(optarg); break;
		case 'a': opt.acc_secs = atof(optarg); break;
		case 'w': opt.warm = atof(optarg); break;
		case 'd': opt.depth = (uint32_t)atoi(optarg); break;
		case 'l': opt.load = atof(optarg); break;
		case 'k': opt.link_factor = atof(optarg); break;
		case 't': opt.tc_period_ms = (uint32_t)atoi(optarg); break;
		case 'c':
			opt.cls_addr = strcmp(optarg, "lookup") != 0;
			opt.cls_lookup = strcmp(optarg, "addr") != 0;
			break;
		default:
			return -1;
		}
	}
	for (unsigned int i = 0; i < opt.n_sizes; i++)
		if (opt.sizes[i] < 64 || opt.sizes[i] > 1518)
			return -1;
	for (unsigned int i = 0; i < opt.n_flows; i++)
		if (opt.flows[i] == 0)
			return -1;
	return opt.depth == 0 || opt.secs <= 0 || opt.acc_secs <= 0 ? -1 : 0;
}

int
main(int argc, char **argv)
{
	unsigned int seq = 0;
	int ret = rte_eal_init(argc, argv);

	if (ret < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	if (parse_args(argc - ret, argv + ret) != 0) {
		fprintf(stderr, "usage: bench_sched [EAL] -- [--flows 1,1024,4096] "
			"[--sizes 64,1500] [--secs 3] [--acc-secs 2] [--warm 0.3] [--depth 8] "
			"[--load 0.5] [--link-factor 2] [--tc-period 40] "
			"[--classify addr|lookup|both]\n");
		return 2;
	}
	hz = rte_get_tsc_hz();
	printf("# bench_sched: lcore %u, TSC %.3f GHz, burst %d, capacity %.1f s, accuracy "
	       "%.1f s (after %.1f s warm-up), load %.2f of rte_sched's capacity, "
	       "link %.1fx flows x R, rte_sched pipe tc_period %u ms\n",
	       rte_lcore_id(), (double)hz / 1e9, BURST, opt.secs, opt.acc_secs, opt.warm,
	       opt.load, opt.link_factor, opt.tc_period_ms);
	printf("# rte_sched = pipe from the packet's address (qos_sched style); "
	       "rte_sched+lk = pipe found by ls_flow_parse + ls_flow_lookup_bulk\n");
	printf("# Mpps = dequeued packets per second of the thread's CPU time (per core); "
	       "wall-clock rates and the CPU share the thread got on the '#' line below\n");
	printf("%6s %5s %5s | %8s %8s %8s | %6s %6s | %-24s | %-24s | %s\n",
	       "flows", "frame", "depth", "rs Mpps", "rs+lk", "lk Mpps", "lk/rs", "lk/rs+",
	       "rte_sched err%: mean |mean| worst", "lockstep err%: mean |mean| worst", "R Mb/s");
	for (unsigned int fi = 0; fi < opt.n_flows; fi++)
		for (unsigned int si = 0; si < opt.n_sizes; si++) {
			struct traffic t;
			struct result rs_cap = {0}, rsl_cap = {0}, lk_cap = {0}, rs_acc = {0},
				      lk_acc = {0};
			uint32_t nf = opt.flows[fi], size = opt.sizes[si];
			uint64_t r_bytes, port_bytes;
			double base;

			if (traffic_make(&t, nf, size, seq++) != 0)
				return 1;
			/* capacity: port 800 Gb/s, each flow an equal share: never binds */
			r_bytes = CAP_PORT_BYTES / nf;
			if (opt.cls_addr && rs_run(&t, false, false, r_bytes, CAP_PORT_BYTES,
						   opt.secs, &rs_cap) != 0)
				return 1;
			if (opt.cls_lookup && rs_run(&t, true, false, r_bytes, CAP_PORT_BYTES,
						     opt.secs, &rsl_cap) != 0)
				return 1;
			if (lk_run(&t, false, r_bytes,
				   CAP_PORT_BYTES * 8 * (size + LS_SLICE_OVERHEAD) / size, opt.secs,
				   &lk_cap) != 0)
				return 1;
			/* accuracy: aggregate = load x rte_sched's capacity */
			base = opt.cls_addr ? rs_cap.mpps : rsl_cap.mpps;
			r_bytes = (uint64_t)(opt.load * base * 1e6 * size / nf);
			port_bytes = (uint64_t)(opt.link_factor * (double)r_bytes * nf);
			if (rs_run(&t, !opt.cls_addr, true, r_bytes, port_bytes, opt.acc_secs,
				   &rs_acc) != 0)
				return 1;
			if (lk_run(&t, true, r_bytes,
				   port_bytes * 8 * (size + LS_SLICE_OVERHEAD) / size, opt.acc_secs,
				   &lk_acc) != 0)
				return 1;
			if (rs_cap.lost + rsl_cap.lost + lk_cap.lost + rs_acc.lost + lk_acc.lost > 0) {
				fprintf(stderr, "mbufs lost (rte_sched %" PRIu64 "/%" PRIu64 "/%" PRIu64
					", lockstep %" PRIu64 "/%" PRIu64 "): cannot measure\n",
					rs_cap.lost, rsl_cap.lost, rs_acc.lost, lk_cap.lost,
					lk_acc.lost);
				return 1;
			}
			printf("%6u %5u %5u | %8.3f %8.3f %8.3f | %6.2f %6.2f | "
			       "%+7.3f %6.3f %8.3f | %+7.3f %6.3f %8.3f | %.3f\n",
			       nf, size, t.per_flow, rs_cap.mpps_cpu, rsl_cap.mpps_cpu,
			       lk_cap.mpps_cpu,
			       rs_cap.mpps_cpu > 0 ? lk_cap.mpps_cpu / rs_cap.mpps_cpu : 0,
			       rsl_cap.mpps_cpu > 0 ? lk_cap.mpps_cpu / rsl_cap.mpps_cpu : 0,
			       rs_acc.err_mean, rs_acc.err_abs_mean, rs_acc.err_worst,
			       lk_acc.err_mean, lk_acc.err_abs_mean, lk_acc.err_worst,
			       (double)r_bytes * 8 / 1e6);
			printf("#   wall Mpps rs %.3f rs+lk %.3f lk %.3f (CPU share %.2f %.2f %.2f); "
			       "accuracy: out/(flows x R) rs %.4f lk %.4f (CPU share %.2f %.2f), "
			       "mean |err| above; lockstep paced > 10 ms ahead: %" PRIu64 "\n",
			       rs_cap.mpps, rsl_cap.mpps, lk_cap.mpps, rs_cap.cpu_share,
			       rsl_cap.cpu_share, lk_cap.cpu_share, rs_acc.agg_ratio,
			       lk_acc.agg_ratio, rs_acc.cpu_share, lk_acc.cpu_share, lk_acc.late);
			fflush(stdout);
			traffic_free(&t);
		}
	rte_eal_cleanup();
	return 0;
}
