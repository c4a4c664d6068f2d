/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NIC clock source: hardware RX timestamps put on the TSC timeline.
 *
 * A NIC that supports RTE_ETH_RX_OFFLOAD_TIMESTAMP writes the value of its
 * device clock into an mbuf dynfield when the packet arrives. That stamp is
 * taken at the wire, so it is free of the poll-loop and ring-queueing delay
 * a software stamp (rdtsc after rx_burst) carries. But the value is in raw
 * device ticks "with no given time reference" (rte_ethdev.h), and transmit
 * stamps stay software (TSC) stamps. So we fit, per port, a line from
 * device ticks to the MONOTONIC_RAW nanoseconds of the TSC mapping, using
 * (rte_eth_read_clock, rdtsc) pairs: RX hardware stamps then land on the
 * very timeline the TX side uses, and every difference we compute is
 * between stamps of one clock. The fit is refreshed like the TSC one: the
 * slope over the whole baseline since the first pair, re-anchored at the
 * newest pair, published under a per-port seqlock.
 *
 * The same fit, inverted, gives the device clock value of an instant:
 * what a NIC that sends on a timestamp (RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP,
 * clock.tx_sched) takes in the mbuf's TX timestamp, in the units of
 * rte_eth_read_clock like its RX stamps (ls_clock_nic_ticks_at).
 *
 * Anything unexpected -- no fit yet, a stamp implausibly far from the
 * burst's software stamp (a wrapped or reset device counter) -- falls back
 * to the software stamp and is counted, so a misbehaving NIC degrades to
 * TSC precision instead of producing garbage delays.
 *
 * Not exercised on machines without such a NIC (memif, af_packet, tap lack
 * the offload): the probe says so and AUTO picks TSC.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_seqlock.h>

#include "ls_clock.h"

extern int ls_clock_logtype;
#define RTE_LOGTYPE_LS_CLOCK ls_clock_logtype

#define LS_NIC_TRIES 16                  /* read_clock brackets per pair */
#define LS_NIC_INIT_GAP_NS 20000000ULL   /* initial baseline, 20 ms */
#define LS_NIC_AHEAD_NS 1000000ULL       /* hw stamp may lead the burst by fit error */
#define LS_NIC_MAX_AGE_NS 1000000000ULL  /* a packet waiting > 1 s is implausible */
#define LS_KSTAMP_AHEAD_NS 20000ULL       /* kernel stamp may lead the burst by real_off error */

/*
 * ticks -> MONOTONIC_RAW ns of one port. The map reuses struct ls_tsc_map
 * with device ticks in place of TSC ticks (tai_off unused). map.mult == 0
 * means no fit yet.
 */
struct nic_fit {
	rte_seqlock_t lock;
	struct ls_tsc_map map;
	/* writer (control thread) private */
	uint64_t first_ticks;
	uint64_t first_ns;
	bool active;
};

static struct nic_fit nic_fits[RTE_MAX_ETHPORTS];

/* "port 3 (net_mlx5)", or without the driver when it cannot be asked. */
static void
port_desc(uint16_t port, char *buf, size_t len)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != NULL)
		snprintf(buf, len, "port %u (%s)", port, info.driver_name);
	else
		snprintf(buf, len, "port %u", port);
}

int
ls_clock_nic_probe(uint16_t port, char *why, size_t len)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	uint64_t t1 = 0, t2 = 0;
	char desc[64];
	int ret;

	if (why != NULL && len > 0)
		why[0] = '\0';
	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0) {
		if (why != NULL)
			snprintf(why, len, "port %u: no device info: %s", port,
				 rte_strerror(-ret));
		return -ENOTSUP;
	}
	snprintf(desc, sizeof(desc), "port %u (%s)", port,
		 info.driver_name != NULL ? info.driver_name : "?");

	if (!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP)) {
		if (why != NULL)
			snprintf(why, len, "%s: no RX timestamp offload", desc);
		return -ENOTSUP;
	}
	/* without the offload enabled at configure time no stamp ever arrives */
	if (rte_eth_dev_conf_get(port, &conf) == 0 &&
	    !(conf.rxmode.offloads & RTE_ETH_RX_OFFLOAD_TIMESTAMP)) {
		if (why != NULL)
			snprintf(why, len, "%s: RX timestamp offload not enabled "
				 "(see ls_clock_rx_offloads)", desc);
		return -ENOTSUP;
	}

	ret = rte_eth_read_clock(port, &t1);
	if (ret == 0) {
		rte_delay_us_block(10);
		ret = rte_eth_read_clock(port, &t2);
	}
	if (ret == -ENOTSUP) {
		if (why != NULL)
			snprintf(why, len, "%s: device clock not readable (read_clock unsupported)",
				 desc);
		return -ENOTSUP;
	}
	if (ret != 0) {
		if (why != NULL)
			snprintf(why, len, "%s: device clock read failed: %s (is the port started?)",
				 desc, rte_strerror(ret < 0 ? -ret : ret));
		return -ENOTSUP;
	}
	if (t2 <= t1) {
		if (why != NULL)
			snprintf(why, len, "%s: device clock does not advance", desc);
		return -ENOTSUP;
	}
	return 0;
}

uint64_t
ls_clock_rx_offloads(uint16_t port, const struct ls_conf_clock *conf)
{
	struct rte_eth_dev_info info;

	if (conf->source != LS_CLOCK_AUTO && conf->source != LS_CLOCK_NIC)
		return 0;
	if (rte_eth_dev_info_get(port, &info) != 0)
		return 0;
	return info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP;
}

/*
 * One (device ticks, MONOTONIC_RAW ns) pair: read_clock bracketed by two
 * TSC reads, tightest of several, TSC midpoint mapped through cal.
 */
static int
nic_pair(uint16_t port, const struct ls_tsc_map *tm, uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX, mid = 0;
	unsigned int i;
	int ok = 0;

	for (i = 0; i < LS_NIC_TRIES; i++) {
		uint64_t t1, t2, v;

		t1 = rte_rdtsc_precise();
		if (rte_eth_read_clock(port, &v) != 0)
			return -EIO;
		t2 = rte_rdtsc_precise();
		if (t2 < t1 || t2 - t1 >= best)
			continue;
		best = t2 - t1;
		mid = t1 + (t2 - t1) / 2;
		*ticks = v;
		ok = 1;
	}
	if (!ok)
		return -EIO;
	*ns = ls_tsc_map_ns(tm, mid);
	return 0;
}

static void
fit_publish(struct nic_fit *f, uint64_t ticks, uint64_t ns, uint64_t mult)
{
	struct ls_tsc_map m = { .tsc0 = ticks, .ns0 = ns, .mult = mult, .tai_off = 0 };

	rte_seqlock_write_lock(&f->lock);
	f->map = m;
	rte_seqlock_write_unlock(&f->lock);
}

/* Start the fit of one port: two pairs LS_NIC_INIT_GAP_NS apart. */
static int
fit_start(uint16_t port, const struct ls_tsc_cal *cal, char *why, size_t len)
{
	struct nic_fit *f = &nic_fits[port];
	struct timespec gap = { .tv_sec = 0, .tv_nsec = (long)LS_NIC_INIT_GAP_NS };
	struct ls_tsc_map tm;
	uint64_t k0, n0, k1, n1, mult;
	char desc[64];

	if (f->active)
		return 0; /* another ls_clock already started it */
	port_desc(port, desc, sizeof(desc));
	rte_seqlock_init(&f->lock);

	ls_tsc_cal_read(cal, &tm);
	if (nic_pair(port, &tm, &k0, &n0) != 0)
		goto unreadable;
	nanosleep(&gap, NULL);
	ls_tsc_cal_read(cal, &tm);
	if (nic_pair(port, &tm, &k1, &n1) != 0)
		goto unreadable;
	mult = ls_clock_slope_mult(k0, n0, k1, n1);
	if (mult == 0) {
		snprintf(why, len, "%s: device clock does not advance with the TSC", desc);
		return -ENOTSUP;
	}
	f->first_ticks = k0;
	f->first_ns = n0;
	fit_publish(f, k1, n1, mult);
	f->active = true;
	return 0;

unreadable:
	snprintf(why, len, "%s: device clock read failed", desc);
	return -ENOTSUP;
}

int
ls_clock_nic_attach(struct ls_clock *c, const uint16_t *ports, unsigned int n_ports,
		    const struct ls_tsc_cal *cal, char *why, size_t len)
{
	uint64_t flag = 0;
	unsigned int i;
	int off = -1, ret;

	for (i = 0; i < n_ports; i++) {
		if (ports[i] >= RTE_MAX_ETHPORTS) {
			snprintf(why, len, "port %u: invalid port id", ports[i]);
			return -EINVAL;
		}
		ret = fit_start(ports[i], cal, why, len);
		if (ret != 0)
			return ret;
	}
	/* the PMD registers it too when the offload is on; this finds it */
	ret = rte_mbuf_dyn_rx_timestamp_register(&off, &flag);
	if (ret != 0 || off < 0) {
		snprintf(why, len, "cannot register the RX timestamp dynfield: %s",
			 rte_strerror(rte_errno));
		return -ENOTSUP;
	}
	c->ts_dynfield = off;
	c->ts_dynflag = flag;
	return 0;
}

int
ls_clock_nic_update(const struct ls_tsc_cal *cal)
{
	struct ls_tsc_map tm;
	unsigned int p;
	int ret = 0;

	ls_tsc_cal_read(cal, &tm);
	for (p = 0; p < RTE_MAX_ETHPORTS; p++) {
		struct nic_fit *f = &nic_fits[p];
		uint64_t ticks, ns, mult;

		if (!f->active)
			continue;
		if (nic_pair((uint16_t)p, &tm, &ticks, &ns) != 0) {
			ret = -EIO;
			continue;
		}
		/* whole-baseline slope: its error shrinks as the run goes on */
		mult = ls_clock_slope_mult(f->first_ticks, f->first_ns, ticks, ns);
		if (mult == 0) {
			/* counter reset or wrapped: start the baseline over */
			f->first_ticks = ticks;
			f->first_ns = ns;
			ret = -EIO;
			continue;
		}
		fit_publish(f, ticks, ns, mult);
	}
	return ret;
}

/*
 * A stamp from outside the poll loop (kernel, NIC, trailer) is taken before
 * the burst's software stamp sw: one later than sw by more than ahead (the
 * conversion's own error) or older than a second is not a stamp of this
 * packet.
 */
static inline bool
implausible(uint64_t ts, uint64_t sw, uint64_t ahead)
{
	return (int64_t)(ts - sw) > (int64_t)ahead ||
	       (int64_t)(sw - ts) > (int64_t)LS_NIC_MAX_AGE_NS;
}

/*
 * A kernel stamp on the clock's timeline. The software stamp sw was read
 * after the stamp was taken, so a kernel stamp later than sw (beyond its
 * microsecond truncation and the real_off sampling error) or older than a
 * second is not plausible: a clock step of CLOCK_REALTIME between two
 * calibration refits, most likely. Fall back and count it.
 */
static uint64_t
kernel_rx_ts(struct ls_clock *c, const struct rte_mbuf *m, uint64_t sw)
{
	uint64_t us = *RTE_MBUF_DYNFIELD(m, c->kts_dynfield, const rte_mbuf_timestamp_t *);
	/* the caller's ls_clock_from_tsc for sw refreshed c->map: real_off is current */
	uint64_t ts = ls_clock_local_from_raw(c, ls_kstamp_raw_ns(&c->map, us));

	if (implausible(ts, sw, LS_KSTAMP_AHEAD_NS)) {
		c->kstamp_fallbacks++;
		return sw;
	}
	c->kstamps++;
	return ts;
}

/* The stamp of the lab emulator's trailer (ls_clock_trailer.c), trailer removed. */
static uint64_t
trailer_rx_ts(struct ls_clock *c, struct rte_mbuf *m, uint64_t sw)
{
	struct rte_mbuf *last = rte_pktmbuf_lastseg(m);
	uint64_t true_ns, ts;

	/* in the last segment, whole (the emulator writes it there) */
	if (ls_rx_trailer_get(rte_pktmbuf_mtod(last, const uint8_t *), last->data_len,
			      &true_ns) != 0) {
		c->tstamp_missing++;
		return sw;
	}
	rte_pktmbuf_trim(m, LS_RX_TRAILER_LEN);
	/*
	 * The caller's ls_clock_from_tsc for sw refreshed c->map (tai_off is
	 * current) and moved the simulated clock's walk to the burst: a stamp
	 * more than a knot (10 ms) from there is refused before it is
	 * converted, since converting it would replay the walk.
	 */
	if (c->kind == LS_CLOCK_SIM && !ls_simclock_near(&c->sim, true_ns)) {
		c->tstamp_fallbacks++;
		return sw;
	}
	/* The emulator stamps the instant the model delivered the frame, at
	 * or before it sent it: a stamp after sw is a TSC-map refit's error at
	 * most. */
	ts = ls_clock_local_from_raw(c, true_ns - LS_SIM_EPOCH_NS);
	if (implausible(ts, sw, LS_KSTAMP_AHEAD_NS)) {
		c->tstamp_fallbacks++;
		return sw;
	}
	c->tstamps++;
	return ts;
}

/*
 * net_pcap stamps what it reads from an interface with the kernel's receive
 * time, and what it reads from a file (rx_pcap=) with the file's record
 * times: those are when the file was written, and taking them for ingress
 * put frames up to a second in the past, out of order, into the emulator's
 * queues (tail drops of a 2000-frame replay on a loaded machine).
 */
static bool
pcap_on_interface(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = rte_dev_devargs(info->device);
	struct rte_kvargs *kv;
	bool live;

	kv = da != NULL && da->args != NULL ? rte_kvargs_parse(da->args, NULL) : NULL;
	if (kv == NULL)
		return false;
	live = rte_kvargs_count(kv, "iface") + rte_kvargs_count(kv, "rx_iface") +
	       rte_kvargs_count(kv, "rx_iface_in") > 0;
	rte_kvargs_free(kv);
	return live;
}

bool
ls_clock_kstamp_port(uint16_t port, int *field, uint64_t *flag)
{
	struct rte_eth_dev_info info;
	int fd = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
	int fl = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, NULL);

	if (fd < 0 || fl < 0 || rte_eth_dev_info_get(port, &info) != 0 ||
	    info.driver_name == NULL || strcmp(info.driver_name, "net_pcap") != 0 ||
	    !pcap_on_interface(&info))
		return false;
	*field = fd;
	*flag = 1ULL << fl;
	return true;
}

unsigned int
ls_clock_kstamp_setup(struct ls_clock *c, const uint16_t *ports, unsigned int n_ports)
{
	unsigned int i, n = 0;

	if (c->kind == LS_CLOCK_NIC)
		return 0;
	for (i = 0; i < n_ports; i++) {
		if (ports[i] >= 64 || !ls_clock_kstamp_port(ports[i], &c->kts_dynfield,
							    &c->kts_dynflag))
			continue;
		c->kstamp_ports |= 1ULL << ports[i];
		n++;
		RTE_LOG(INFO, LS_CLOCK, "clock: port %u (net_pcap): RX stamps from the kernel "
			"(CLOCK_REALTIME, 1 us resolution)\n", ports[i]);
	}
	return n;
}

int
ls_clock_nic_ticks_at(uint16_t port, uint64_t raw, uint64_t *ticks)
{
	const struct nic_fit *f;
	struct ls_tsc_map fm;
	uint32_t sn;

	if (port >= RTE_MAX_ETHPORTS)
		return -EAGAIN;
	f = &nic_fits[port];
	do {
		sn = rte_seqlock_read_begin(&f->lock);
		fm = f->map;
	} while (rte_seqlock_read_retry(&f->lock, sn));
	if (fm.mult == 0)
		return -EAGAIN;
	*ticks = ls_tsc_map_ticks(&fm, raw);
	return 0;
}

uint64_t
ls_clock_rx_ts(struct ls_clock *c, struct rte_mbuf *m, uint64_t sw)
{
	const struct nic_fit *f;
	struct ls_tsc_map fm;
	uint64_t ticks, hw;
	uint32_t sn;

	if (c->rx_trailer)
		return trailer_rx_ts(c, m, sw);
	if (c->kstamp_ports != 0 && (m->ol_flags & c->kts_dynflag) && m->port < 64 &&
	    (c->kstamp_ports >> m->port & 1))
		return kernel_rx_ts(c, m, sw);
	if (c->kind != LS_CLOCK_NIC || c->ts_dynfield < 0 || !(m->ol_flags & c->ts_dynflag))
		return sw;
	if (m->port >= RTE_MAX_ETHPORTS)
		goto fallback;
	f = &nic_fits[m->port];
	ticks = *RTE_MBUF_DYNFIELD(m, c->ts_dynfield, const rte_mbuf_timestamp_t *);
	do {
		sn = rte_seqlock_read_begin(&f->lock);
		fm = f->map;
	} while (rte_seqlock_read_retry(&f->lock, sn));
	if (fm.mult == 0)
		goto fallback;

	/* the caller's ls_clock_from_tsc for sw refreshed c->map: tai_off is current */
	hw = ls_tsc_map_ns(&fm, ticks) + (uint64_t)c->map.tai_off;
	if (implausible(hw, sw, LS_NIC_AHEAD_NS))
		goto fallback;
	return hw;

fallback:
	c->hw_fallbacks++;
	return sw;
}
