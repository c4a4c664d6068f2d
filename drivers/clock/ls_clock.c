/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The clock as the datapath sees it: one ls_clock per thread that converts
 * TSC readings into the chosen timeline, and the logic that picks the
 * source at start-up.
 *
 * Every source starts from the same TSC -> MONOTONIC_RAW mapping (the NIC
 * source converts device ticks onto it, the SIM source adds a simulated
 * error to it), so the hot path is always: maybe refresh the cached map
 * (a seqlock copy every ~100 ms, not every packet), one multiply, then a
 * per-source adjustment.
 *
 * Each thread must own its ls_clock: the cached map and, above all, the
 * simulated clock's random-walk reader are mutable state. Threads agree
 * anyway because the cache is a copy of one shared calibration and the
 * random walk is a pure function of (seed, knot).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_log.h>

#include "ls_clock.h"

RTE_LOG_REGISTER(ls_clock_logtype, lockstep.clock, INFO);
#define RTE_LOGTYPE_LS_CLOCK ls_clock_logtype

#define LS_CLOCK_REFRESH_NS 100000000ULL /* cached map lifetime, 100 ms */

/* Re-read the shared calibration into the thread's cache. */
static void
refresh_map(struct ls_clock *c, uint64_t tsc)
{
	ls_tsc_cal_read(c->cal, &c->map);
	c->map_tsc = tsc;
	/*
	 * Convert 100 ms into ticks once per refresh so the per-call check is
	 * a subtraction and a compare.
	 */
	if (c->map.mult != 0)
		c->map_refresh = (uint64_t)(((unsigned __int128)LS_CLOCK_REFRESH_NS << 32) /
					    c->map.mult);
	else
		c->map_refresh = 0;
}

/* MONOTONIC_RAW ns for tsc through the (refreshed when stale) cache. */
static inline uint64_t
raw_ns(struct ls_clock *c, uint64_t tsc)
{
	/*
	 * Signed: a burst stamp read before the last refresh is not stale,
	 * and must not trigger a refresh per packet.
	 */
	if ((int64_t)(tsc - c->map_tsc) > (int64_t)c->map_refresh)
		refresh_map(c, tsc);
	return ls_tsc_map_ns(&c->map, tsc);
}

uint64_t
ls_clock_from_tsc(struct ls_clock *c, uint64_t tsc)
{
	/* NIC too: device ticks are fitted onto this same timeline
	 * (ls_clock_nic.c), so software stamps need nothing extra */
	return ls_clock_local_from_raw(c, raw_ns(c, tsc));
}

uint64_t
ls_clock_tx_ts(struct ls_clock *c, uint64_t tsc, uint16_t port, uint64_t *at)
{
	uint64_t local;

	*at = 0;
	if (c->tx_lead_tsc == 0)
		return ls_clock_from_tsc(c, tsc);
	/* Both from the one TSC instant, so the payload's stamp and the
	 * instant the frame is sent at are the same moment. */
	local = ls_clock_from_tsc(c, tsc + c->tx_lead_tsc);
	if (!c->tx_sched) {
		*at = raw_ns(c, tsc + c->tx_lead_tsc) + LS_SIM_EPOCH_NS;
		return local;
	}
	if (ls_clock_nic_ticks_at(port, raw_ns(c, tsc + c->tx_lead_tsc), at) != 0) {
		c->tx_sched_nofit++;
		*at = 0;
		return ls_clock_from_tsc(c, tsc);
	}
	return local;
}

uint64_t
ls_clock_true_from_tsc(struct ls_clock *c, uint64_t tsc)
{
	uint64_t ns = raw_ns(c, tsc);

	if (c->kind == LS_CLOCK_SIM)
		return ns + LS_SIM_EPOCH_NS;
	return ns + (uint64_t)c->map.tai_off;
}

void
ls_clock_truth_now(struct ls_clock *c, struct ls_clock_truth *t)
{
	uint64_t tsc = rte_rdtsc();

	memset(t, 0, sizeof(*t));
	t->true_ns = ls_clock_true_from_tsc(c, tsc);
	if (c->kind == LS_CLOCK_SIM) {
		t->offset_ns = ls_simclock_offset(&c->sim, t->true_ns);
		t->local_ns = ls_simclock_local(&c->sim, t->true_ns);
		t->drift_ppm = c->sim.drift_ppm;
	} else {
		/* real clocks: no known error to report */
		t->local_ns = t->true_ns;
	}
}

const char *
ls_clock_name(const struct ls_clock *c)
{
	switch (c->kind) {
	case LS_CLOCK_TSC:
		return "tsc";
	case LS_CLOCK_NIC:
		return "nic";
	case LS_CLOCK_SIM:
		return "sim";
	case LS_CLOCK_AUTO:
	default:
		return "auto";
	}
}

/* First port failing the probe, its reason in why; -1 when all pass. */
static int
first_unsupported(const uint16_t *ports, unsigned int n_ports, char *why, size_t len)
{
	unsigned int i;

	for (i = 0; i < n_ports; i++)
		if (ls_clock_nic_probe(ports[i], why, len) != 0)
			return (int)i;
	return -1;
}

int
ls_clock_setup(struct ls_clock *c, const struct ls_conf_clock *conf, uint32_t node_id,
	       const uint16_t *ports, unsigned int n_ports, const struct ls_tsc_cal *cal)
{
	struct ls_conf_simclock sp;
	char why[256];
	int ret;

	if (c == NULL || conf == NULL || cal == NULL || (n_ports > 0 && ports == NULL))
		return -EINVAL;

	memset(c, 0, sizeof(*c));
	c->cal = cal;
	c->kind = LS_CLOCK_TSC;
	c->nic_port = n_ports > 0 ? ports[0] : 0;
	c->ts_dynfield = -1;
	c->ts_dynflag = 0;
	c->kts_dynfield = -1;
	c->rx_trailer = conf->rx_trailer;
	refresh_map(c, rte_rdtsc());
	if (c->rx_trailer)
		RTE_LOG(INFO, LS_CLOCK, "clock: RX stamps from the frame trailer the lab's "
			"emulator appends (clock.rx_trailer)\n");
	if (conf->tx_trailer || conf->tx_sched) {
		c->tx_lead_tsc = (uint64_t)((double)conf->tx_lead_ns * (double)rte_get_tsc_hz() / 1e9);
		if (c->tx_lead_tsc == 0)
			c->tx_lead_tsc = 1;
		c->tx_sched = conf->tx_sched;
		RTE_LOG(INFO, LS_CLOCK, "clock: T1 and T3 %u ns ahead, sent then by %s\n",
			conf->tx_lead_ns, conf->tx_sched ?
			"the NIC (clock.tx_sched)" : "the lab's emulator (clock.tx_trailer)");
	}

	switch (conf->source) {
	case LS_CLOCK_TSC:
		RTE_LOG(INFO, LS_CLOCK, "clock: using tsc: configured\n");
		return 0;

	case LS_CLOCK_SIM:
		sp = conf->sim;
		if (sp.seed == 0)
			sp.seed = node_id;
		/*
		 * Start at the calibration's first point, not "now": every
		 * ls_clock set up from this cal (each lcore's, the control
		 * thread's) must share start_ns or their drift terms differ.
		 */
		ls_simclock_init(&c->sim, &sp, cal->first_ns + LS_SIM_EPOCH_NS);
		c->kind = LS_CLOCK_SIM;
		RTE_LOG(INFO, LS_CLOCK,
			"clock: using sim: offset %" PRId64 " ns, drift %.3f ppm, "
			"wander %.1f ns/sqrt(s), seed %" PRIu64 "\n",
			sp.offset_ns, sp.drift_ppm, sp.wander_ns, sp.seed);
		return 0;

	case LS_CLOCK_NIC:
		if (n_ports == 0) {
			RTE_LOG(ERR, LS_CLOCK, "clock: nic requested but no ports\n");
			return -ENOTSUP;
		}
		if (first_unsupported(ports, n_ports, why, sizeof(why)) >= 0) {
			RTE_LOG(ERR, LS_CLOCK, "clock: nic requested but %s\n", why);
			return -ENOTSUP;
		}
		ret = ls_clock_nic_attach(c, ports, n_ports, cal, why, sizeof(why));
		if (ret != 0) {
			RTE_LOG(ERR, LS_CLOCK, "clock: nic requested but %s\n", why);
			return ret;
		}
		c->kind = LS_CLOCK_NIC;
		RTE_LOG(INFO, LS_CLOCK, "clock: using nic: port %u clock, %u port(s)\n",
			c->nic_port, n_ports);
		return 0;

	case LS_CLOCK_AUTO:
	default:
		if (n_ports == 0) {
			RTE_LOG(INFO, LS_CLOCK, "clock: using tsc: no ports\n");
			return 0;
		}
		if (first_unsupported(ports, n_ports, why, sizeof(why)) >= 0) {
			RTE_LOG(INFO, LS_CLOCK, "clock: using tsc: %s\n", why);
			return 0;
		}
		if (ls_clock_nic_attach(c, ports, n_ports, cal, why, sizeof(why)) != 0) {
			c->ts_dynfield = -1;
			c->ts_dynflag = 0;
			RTE_LOG(INFO, LS_CLOCK, "clock: using tsc: %s\n", why);
			return 0;
		}
		c->kind = LS_CLOCK_NIC;
		RTE_LOG(INFO, LS_CLOCK,
			"clock: using nic: every port has RX timestamps and a readable clock\n");
		return 0;
	}
}
