/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load: a workload generator and sink for lockstep labs.
 *
 *   lockstep-load [EAL options] -- --tx PORT --rx PORT --flows N --rate BPS ...
 *
 * One lcore does everything: it sends what the TX wheel says is due and
 * drains the RX port, in one loop, so a 2-core lab can give the generator
 * one core and lockstepd the other. The options are checked before the
 * EAL starts (exit 2 with the option and the reason); the report is
 * written when TX has ended and the RX port has been drained for
 * --linger-ms, or at SIGINT/SIGTERM. docs/load.md has the options, the
 * report's fields and examples.
 *
 * With --phase-bytes the process plays a collective job: the loop is also
 * the barrier between TX and the sink (lld_phase.h): every distinct frame
 * the sink takes is counted for its phase, and once per poll the barrier
 * says whether the phase is over, when TX's parked flows start the next.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "../common/ls_app.h"
#include "lld.h"
#include "lld_phase.h"
#include "lld_reflect.h"
#include "lld_respond.h"
#include "lld_sink.h"
#include "ls_clock.h"

RTE_LOG_REGISTER(lld_logtype, lockstep.load, INFO);

#define RING_SIZE 1024
#define POOL_SIZE 8191

static struct lld_opts opts;
static volatile int quit;

/* The TSC's rate as measured against CLOCK_MONOTONIC_RAW (200 ms, the
 * calibration lockstepd and the emulator use): rte_get_tsc_hz() is the
 * rate the CPU states (x86: its brand string), 0.15% off on the lab's VM,
 * which would put every rate and every report time off by as much. */
static uint64_t
tsc_hz(void)
{
	struct ls_tsc_cal cal = {0};

	(void)ls_tsc_cal_init(&cal, 200);   /* failed: the stated rate */
	return ls_tsc_hz(&cal);
}

static int
parse(int argc, char **argv, bool *check)
{
	char err[256];
	bool help;

	if (lld_opts_parse(argc, argv, &opts, check, &help, err, sizeof(err)) < 0) {
		fprintf(stderr, "lockstep-load: %s (--help lists the options)\n", err);
		return -EINVAL;
	}
	if (help)
		ls_app_help_version(opts.version, "lockstep-load", lld_usage);
	return 0;
}

static int
load(bool check_only, char *err, size_t len)
{
	(void)err;
	(void)len;
	if (!check_only)
		return 0;
	printf("lockstep-load: options ok (%u flows at %.0f b/s each)\n", opts.flows,
	       opts.rate_bps);
	return 1;
}

/* A port by ethdev name or id; exits 2 naming the option when there is none. */
static uint16_t
port_of(const char *opt, const char *name)
{
	uint16_t id;
	char *end;
	unsigned long v = strtoul(name, &end, 10);

	if (rte_eth_dev_get_port_by_name(name, &id) == 0)
		return id;
	if (end != name && *end == '\0' && v < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(v))
		return (uint16_t)v;
	fprintf(stderr, "lockstep-load: --%s: no port \"%s\" (give the device to the EAL, "
		"e.g. --vdev net_memif0,...; ports:", opt, name);
	RTE_ETH_FOREACH_DEV(id) {
		char n[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(id, n) == 0)
			fprintf(stderr, " %u=%s", id, n);
	}
	fprintf(stderr, ")\n");
	exit(2);
}

static uint16_t
max_size(void)
{
	uint16_t m = 0;

	for (uint8_t i = 0; i < opts.n_sizes; i++)
		m = opts.sizes[i] > m ? opts.sizes[i] : m;
	return m;
}

static int
port_setup(uint16_t port, struct rte_mempool *rx_pool)
{
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	uint16_t mtu = max_size() > 1514 ? (uint16_t)(max_size() - 14) : 1500;
	int rc;

	rc = rte_eth_dev_info_get(port, &info);
	if (rc < 0)
		return rc;
	if (mtu > 1500 && mtu > info.max_mtu) {
		fprintf(stderr, "lockstep-load: --size: %u needs an MTU of %u, port %u allows %u\n",
			max_size(), mtu, port, info.max_mtu);
		exit(2);
	}
	if (mtu > 1500)
		conf.rxmode.mtu = mtu;
	rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, RING_SIZE, rte_eth_dev_socket_id(port), NULL,
					    rx_pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, RING_SIZE, rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc == 0)
		rte_eth_promiscuous_enable(port);
	return rc;
}

static bool
link_up(uint16_t port)
{
	struct rte_eth_link l;

	return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

/* A tag of this boot's TSC: FNV-1a of the kernel's boot id. */
static uint32_t
tsc_tag(void)
{
	char id[64] = "";
	uint32_t h = 2166136261u;
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	if (f != NULL) {
		if (fgets(id, sizeof(id), f) == NULL)
			id[0] = '\0';
		fclose(f);
	}
	if (id[0] == '\0')   /* no boot id: only this process's frames match */
		snprintf(id, sizeof(id), "%d-%" PRIu64, getpid(), rte_rdtsc());
	for (const char *p = id; *p && *p != '\n'; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h;
}

static void
rx_poll(uint16_t port, struct lld_sink *s, struct lld_phase *ph, struct lld_resp *resp,
	struct lld_refl *refl, bool *got)
{
	struct rte_mbuf *m[LLD_BURST];
	uint16_t n = rte_eth_rx_burst(port, 0, m, LLD_BURST);
	uint64_t now = rte_rdtsc(), rx_ns = refl != NULL && n > 0 ? lld_refl_now_ns() : 0;
	struct lld_rx r;

	*got = n > 0;
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *f = rte_pktmbuf_mtod(m[i], const uint8_t *);

		if (refl != NULL && lld_refl_frame(refl, m[i], rx_ns)) {
			m[i] = NULL;   /* reflected: the reflector's now */
			continue;
		}
		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(m[i + 1], void *));
		if (lld_frame_parse(f, m[i]->data_len, &r) == 0) {
			if (lld_sink_frame(s, &r, m[i]->pkt_len, now) && ph != NULL)
				lld_phase_rx(ph, r.flow, r.seq);
			if (resp != NULL && r.shape == LLD_ROCE)
				lld_resp_frame(resp, f, m[i]->data_len, r.flow, now);
		} else {
			lld_sink_other(s);
		}
	}
	rte_pktmbuf_free_bulk(m, n);
	if (resp != NULL)
		lld_resp_flush(resp);
	if (refl != NULL)
		lld_refl_flush(refl);
}

/* With --respond, what comes back to the TX port (a device in the middle
 * forwards the responder's ACKs and CNPs to their requester): counted,
 * dropped. Only then: polling a memif client's TX port for RX in zero-copy
 * mode stalled its transmit (bridge-pacing lost every frame). */
static uint64_t
tx_port_drain(uint16_t port)
{
	struct rte_mbuf *m[LLD_BURST];
	uint16_t n = rte_eth_rx_burst(port, 0, m, LLD_BURST);

	rte_pktmbuf_free_bulk(m, n);
	return n;
}

struct run {
	struct lld_tx tx;
	struct lld_sink *sink;
	struct lld_phase *phase;       /* --phase-bytes; NULL: no phases */
	struct lld_resp *resp;
	struct lld_refl *refl;
	uint64_t tx_port_rx;           /* frames that came back to the TX port */
	uint16_t tx_port, rx_port;
	bool has_tx, has_rx;
	struct rte_mempool *rx_pool;
	uint64_t hz, start, stop;
	uint64_t start_raw_ns;      /* start on CLOCK_MONOTONIC_RAW */
};

/*
 * The barrier, once per poll: when the phase is over (every flow's frames
 * in, or the timeout), the next starts at once; after the last, TX's time
 * ends and the linger runs from here. After --duration's cap a phase may
 * still end (its frames arrive), but no other starts.
 * @return true when a phase ended.
 */
static bool
phase_step(struct run *r)
{
	uint64_t now;
	int st;

	if (r->tx.parked == r->tx.n_flows)
		lld_phase_sent(r->phase, r->tx.parked_at);
	now = rte_rdtsc();   /* after rx_poll: the phase ends after its last arrival */
	st = lld_phase_poll(r->phase, now);
	if (st == LLD_PHASE_RUNNING || now >= r->tx.end)
		return st != LLD_PHASE_RUNNING;
	if (st == LLD_PHASE_ENDED) {
		lld_phase_begin(r->phase, now);
		lld_tx_phase_next(&r->tx, now);
	} else {
		lld_tx_phase_stop(&r->tx, now);
		lld_sink_set_end(r->sink, now);
		r->stop = now + r->hz / 1000 * opts.linger_ms;
	}
	return true;
}

/* Empty polls in a row, and the next frame's time found over them. */
struct idle {
	uint64_t polls;
	uint64_t due;          /* earliest due time of flows [0, scanned) */
	uint32_t scanned;
};

/*
 * The idle back-off (--idle-sleep-us): after 1000 empty polls, sleep while
 * TX has nothing to send, or nothing due within twice the sleep (every flow
 * at the phase barrier, or slow flows: a lab slowed 1000 times sends a
 * frame a millisecond and need not hold a core for it). The next frame's
 * time is found over the 1000 polls, a thousandth of the flows each, so a
 * million flows add no stall; nothing joins the wheel meanwhile (a send or
 * a phase's start ends the idle stretch).
 */
static bool
may_sleep(struct run *r, uint64_t now, struct idle *id)
{
	uint32_t n = r->tx.n_flows, to;

	if (opts.idle_sleep_us == 0 || id->polls == 0)
		return false;
	if (!r->has_tx || lld_tx_done(&r->tx))
		return id->polls > 1000;
	if (id->scanned < n) {
		to = id->scanned + n / 1000 + 1 < n ? id->scanned + n / 1000 + 1 : n;
		id->due = RTE_MIN(id->due, lld_tx_next_due(&r->tx, id->scanned, to));
		id->scanned = to;
	}
	if (id->polls <= 1000 || id->scanned < n || r->tx.n_pend > 0)
		return false;
	return id->due > now && id->due - now > r->hz / 1000000 * 2 * opts.idle_sleep_us;
}

/* The one polling loop: TX what is due, drain RX, until stop or a signal. */
static void
run_loop(struct run *r)
{
	struct idle id = {.due = UINT64_MAX};

	while (!quit) {
		uint64_t now = rte_rdtsc();
		bool got = false, tx_busy = false, moved = false;

		if (r->has_tx) {
			moved = lld_tx_poll(&r->tx, now) > 0;
			tx_busy = !lld_tx_done(&r->tx);
		}
		if (r->has_rx)
			rx_poll(r->rx_port, r->sink, r->phase, r->resp, r->refl, &got);
		if (r->phase != NULL && phase_step(r)) {
			moved = true;
			tx_busy = !lld_tx_done(&r->tx);
		}
		if (opts.respond && r->has_tx && r->rx_port != r->tx_port)
			r->tx_port_rx += tx_port_drain(r->tx_port);
		if (now >= r->stop && !tx_busy)
			break;
		if (got || moved)
			id = (struct idle){.due = UINT64_MAX};
		else
			id.polls++;
		if (may_sleep(r, now, &id))
			usleep(opts.idle_sleep_us);
	}
}

static json_t *
tx_json(const struct run *r)
{
	const struct lld_tx *t = &r->tx;
	double secs = (double)(t->end - t->start) / (double)r->hz;
	char name[RTE_ETH_NAME_MAX_LEN] = "";

	rte_eth_dev_get_name_by_port(r->tx_port, name);
	return json_pack("{ss si sf sI sI sf sf sI sI sI sf}", "port", name,
			 "flows", (int)t->n_flows, "rate_bps_per_flow", opts.rate_bps,
			 "pkts", (json_int_t)t->pkts, "bytes", (json_int_t)t->bytes,
			 "duration_s", secs, "rate_bps", (double)t->bytes * 8 / secs,
			 "late", (json_int_t)t->late, "port_full", (json_int_t)t->full,
			 "alloc_fail", (json_int_t)t->alloc_fail,
			 "lag_max_us", (double)t->lag_max * 1e6 / (double)r->hz);
}

static json_t *
port_json(uint16_t port)
{
	struct rte_eth_stats st;

	if (rte_eth_stats_get(port, &st) != 0)
		return json_null();
	return json_pack("{sI sI sI sI}", "ipackets", (json_int_t)st.ipackets,
			 "imissed", (json_int_t)st.imissed, "rx_nombuf", (json_int_t)st.rx_nombuf,
			 "oerrors", (json_int_t)st.oerrors);
}

static int
report(struct run *r)
{
	json_t *root = json_pack("{ss sI sI sf}", "tool", "lockstep-load",
				 "tsc_hz", (json_int_t)r->hz,
				 "start_raw_ns", (json_int_t)r->start_raw_ns,
				 "elapsed_s", (double)(rte_rdtsc() - r->start) / (double)r->hz);
	uint64_t *sent = NULL;
	FILE *f = stdout;
	int rc;

	if (r->has_tx) {
		json_object_set_new(root, "tx", tx_json(r));
		json_object_set_new(json_object_get(root, "tx"), "port_rx",
				    json_integer((json_int_t)r->tx_port_rx));
		fprintf(stderr, "lockstep-load: tx: %u flows, %" PRIu64 " frames, %.4f Mb/s "
			"(%.1f b/s per flow), late %" PRIu64 ", port full %" PRIu64 "\n",
			r->tx.n_flows, r->tx.pkts,
			json_real_value(json_object_get(json_object_get(root, "tx"), "rate_bps")) / 1e6,
			opts.rate_bps, r->tx.late, r->tx.full);
		sent = malloc(sizeof(*sent) * r->tx.n_flows);
		for (uint32_t i = 0; sent != NULL && i < r->tx.n_flows; i++)
			sent[i] = r->tx.fl[i].seq;
	}
	if (r->has_rx) {
		json_t *rx;

		lld_sink_finish(r->sink);
		rx = lld_sink_report(r->sink, sent,
				     opts.report_flows);
		json_object_update(root, rx);
		json_decref(rx);
		json_object_set_new(json_object_get(root, "rx"), "port_stats", port_json(r->rx_port));
		if (r->resp != NULL)
			json_object_set_new(root, "respond", lld_resp_json(r->resp));
		if (r->refl != NULL)
			json_object_set_new(root, "reflect", lld_refl_json(r->refl));
		lld_sink_summary(r->sink, stderr);
	}
	if (r->phase != NULL) {
		json_object_set_new(root, "phases", lld_phase_report(r->phase));
		lld_phase_summary(r->phase, stderr);
	}
	free(sent);
	if (opts.report != NULL && strcmp(opts.report, "-") != 0) {
		f = fopen(opts.report, "w");
		if (f == NULL) {
			fprintf(stderr, "lockstep-load: --report: %s: %s\n", opts.report,
				strerror(errno));
			json_decref(root);
			return -errno;
		}
	}
	rc = json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
	fputc('\n', f);
	if (f != stdout)
		rc |= fclose(f);
	json_decref(root);
	return rc == 0 ? 0 : -EIO;
}

/* Pools, ports, links; exits on failure. */
static void
setup_ports(struct run *r)
{
	uint16_t room = (uint16_t)RTE_MAX((uint32_t)max_size() + RTE_PKTMBUF_HEADROOM,
					  (uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE);
	struct rte_mempool *rx_pool, *tx_pool;
	uint64_t until;

	rx_pool = rte_pktmbuf_pool_create("lld_rx", POOL_SIZE, 256, 0, room, (int)rte_socket_id());
	tx_pool = rte_pktmbuf_pool_create("lld_tx", POOL_SIZE, 256, 0, room, (int)rte_socket_id());
	if (rx_pool == NULL || tx_pool == NULL)
		rte_exit(1, "lockstep-load: cannot create mbuf pools: %s (more -m?)\n",
			 rte_strerror(rte_errno));
	r->tx.pool = tx_pool;
	r->rx_pool = rx_pool;
	if (r->has_tx && port_setup(r->tx_port, rx_pool) < 0)
		rte_exit(1, "lockstep-load: --tx: cannot start port %u\n", r->tx_port);
	if (r->has_rx && (!r->has_tx || r->rx_port != r->tx_port) &&
	    port_setup(r->rx_port, rx_pool) < 0)
		rte_exit(1, "lockstep-load: --rx: cannot start port %u\n", r->rx_port);
	until = rte_rdtsc() + (uint64_t)(opts.link_wait_s * (double)r->hz);
	while (!quit && rte_rdtsc() < until &&
	       !((!r->has_tx || link_up(r->tx_port)) && (!r->has_rx || link_up(r->rx_port))))
		rte_delay_ms(10);
	if ((r->has_tx && !link_up(r->tx_port)) || (r->has_rx && !link_up(r->rx_port)))
		rte_exit(1, "lockstep-load: link down after %.1f s (--link-wait)\n",
			 opts.link_wait_s);
}

/* The barrier of --phase-bytes; phase 1 begins with TX. Exits on failure. */
static void
phases_setup(struct run *r)
{
	struct lld_phase_params pp = {
		.n_flows = opts.flows, .count = opts.phases, .bytes = opts.phase_bytes,
		.hz = r->hz, .start = r->start, .timeout = r->hz / 1000 * opts.phase_timeout_ms,
	};
	uint32_t *frames = malloc(sizeof(*frames) * opts.flows);

	if (frames == NULL)
		rte_exit(1, "lockstep-load: no memory for the phases\n");
	/* the same count TX parks at: the frames' lengths after rounding */
	for (uint32_t i = 0; i < opts.flows; i++)
		frames[i] = lld_phase_frames(opts.phase_bytes, r->tx.tmpl[i].len);
	r->phase = lld_phase_create(&pp, frames);
	free(frames);
	if (r->phase == NULL)
		rte_exit(1, "lockstep-load: cannot create the phases: %s\n", strerror(errno));
	lld_phase_begin(r->phase, r->tx.start);
}

int
main(int argc, char **argv)
{
	static const struct ls_app_start start = {
		.name = "lockstep-load", .parse = parse, .load = load, .quit = &quit,
	};
	static struct run r;
	uint32_t tag;
	int rc;

	ls_app_start(&start, argc, argv);
	r.hz = tsc_hz();
	r.has_tx = opts.tx_port != NULL;
	r.has_rx = opts.rx_port != NULL;
	if (r.has_tx)
		r.tx_port = port_of("tx", opts.tx_port);
	if (r.has_rx)
		r.rx_port = port_of("rx", opts.rx_port);
	setup_ports(&r);
	tag = tsc_tag();
	if (r.has_tx && lld_tx_init(&r.tx, &opts, r.tx_port, r.tx.pool, tag, r.hz) < 0)
		rte_exit(1, "lockstep-load: cannot set up TX\n");
	/* a lead for the wheel's inserts and the sink's set-up (20 ms and
	 * 300 ns a flow): the first frames do not start late */
	r.start = rte_rdtsc() + r.hz / 50 + r.hz / 10000000 * 3 * opts.flows;
	{
		/* the start on CLOCK_MONOTONIC_RAW (the lab timeline's base), so
		 * a test can place the report's times among the emulator's */
		struct timespec ts;
		uint64_t t0 = rte_rdtsc();

		clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
		r.start_raw_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec +
				 (uint64_t)((double)(r.start - t0) * 1e9 / (double)r.hz);
	}
	if (r.has_tx) {
		/* --tx-delay-ms: the sink (and reflector, responder) run first */
		uint64_t tx0 = r.start + r.hz / 1000 * opts.tx_delay_ms;
		uint64_t end = tx0 + (uint64_t)(opts.duration_s * (double)r.hz);

		lld_tx_start(&r.tx, tx0, end);
		r.stop = end + r.hz / 1000 * opts.linger_ms;
	} else {
		r.stop = r.start + (uint64_t)(opts.duration_s * (double)r.hz);
	}
	if (r.has_rx) {
		struct lld_sink_params sp = {
			.n_flows = opts.flows, .hz = r.hz, .start = r.start,
			.window = r.hz / 1000 * opts.window_ms,
			.n_windows = (uint32_t)((r.stop - r.start) / (r.hz / 1000 * opts.window_ms)) + 2,
			.settle = r.hz / 1000 * opts.settle_ms,
			.detail_flows = opts.detail_flows, .tag = tag,
			.fg_flows = opts.fg_flows, .n_gaps = opts.gaps,
		};

		r.sink = lld_sink_create(&sp);
		if (r.sink == NULL)
			rte_exit(1, "lockstep-load: cannot create the sink: %s\n", strerror(errno));
		if (r.has_tx)   /* what arrives after TX has ended is counted, not measured */
			lld_sink_set_end(r.sink, r.tx.end);
		if (opts.respond) {
			r.resp = lld_resp_create(r.rx_port, r.tx.pool != NULL ? r.tx.pool : r.rx_pool,
						 opts.flows, r.hz / 1000000 * opts.cnp_us);
			if (r.resp == NULL)
				rte_exit(1, "lockstep-load: cannot create the responder\n");
		}
		if (opts.reflect) {
			uint32_t ip;

			memcpy(&ip, opts.dst4.a, 4);
			r.refl = lld_refl_create(r.rx_port, ip, r.tx.pool != NULL ? r.tx.pool :
						 r.rx_pool);
			if (r.refl == NULL)
				rte_exit(1, "lockstep-load: cannot create the reflector\n");
			r.refl->any = opts.reflect_any;
		}
	}
	if (opts.phase_bytes > 0)
		phases_setup(&r);
	run_loop(&r);
	rc = report(&r);
	if (r.has_tx)
		lld_tx_free(&r.tx);
	lld_sink_free(r.sink);
	lld_phase_free(r.phase);
	lld_resp_free(r.resp);
	lld_refl_free(r.refl);
	{
		uint16_t ids[2];
		unsigned int n = 0;

		if (r.has_tx)
			ids[n++] = r.tx_port;
		if (r.has_rx && (!r.has_tx || r.rx_port != r.tx_port))
			ids[n++] = r.rx_port;
		if (ls_app_ports_close(ids, n))
			rte_eal_cleanup();
	}
	return rc == 0 ? 0 : 1;
}
