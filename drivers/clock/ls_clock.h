/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Clock sources for timestamps: one interface, three sources.
 *
 *  - TSC (default): the CPU's invariant counter (the TSC on x86, the ARMv8
 *    generic timer's virtual count CNTVCT_EL0 on aarch64; ls_tsc_read)
 *    mapped to nanoseconds by a linear fit
 *    against CLOCK_MONOTONIC_RAW (the kernel derives that clock from the
 *    same counter with a fixed ratio, so the fit is exact up to sampling
 *    jitter and improves with its baseline), plus the CLOCK_TAI offset so
 *    timestamps are PTP time. The control thread refits every second
 *    (ls_tsc_cal_update) and publishes the mapping under a seqlock; lcores
 *    convert with one 128-bit multiply and no syscall.
 *  - NIC: the port's hardware clock (RX timestamp mbuf dynfield,
 *    rte_eth_read_clock), chosen when every port supports it; the control
 *    thread maintains a ticks -> TSC fit so software TX stamps share the
 *    NIC timebase. Falls back to TSC with a log line saying why.
 *  - SIM (lab): true time = the TSC mapping of CLOCK_MONOTONIC_RAW plus a
 *    fixed epoch (LS_SIM_EPOCH_NS), identical in every process on a host,
 *    and local = true + offset + drift * (true - start) + W(true), where W
 *    is a random walk with knots every LS_SIM_KNOT_NS whose steps come from
 *    a counter-based generator keyed by (seed, knot index). Any reader that
 *    advances to the same instant computes the same W, so the control
 *    thread can report the exact injected offset (ground truth) without
 *    sharing state with the lcores.
 */
#ifndef LS_CLOCK_H
#define LS_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_cycles.h>
#include <rte_seqlock.h>

/*
 * By path relative to this header: ls_clock_pure (drivers/meson.build) gets
 * only ls_common's include directory, yet needs the clock config types.
 */
#include "ls_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The "tsc" source's counter, and DPDK's rte_rdtsc(): the TSC on x86, the
 * generic timer's virtual count CNTVCT_EL0 on ARMv8 (the counter the Linux
 * kernel runs CLOCK_MONOTONIC_RAW on, and lib/sync's fleet-time readers
 * read). lockstepd passes rte_rdtsc() values to ls_clock_from_tsc() and
 * the calibration samples ls_tsc_read_precise(): both must be this one
 * counter, so a DPDK built to read the PMU cycle counter (which stops in
 * idle and is not synchronised across cores) is refused here.
 */
#if defined(RTE_ARCH_ARM64) && defined(RTE_ARM_EAL_RDTSC_USE_PMU)
#error "lockstep: rte_rdtsc() reads the PMU cycle counter (RTE_ARM_EAL_RDTSC_USE_PMU): " \
	"the clock needs the generic timer's CNTVCT_EL0"
#endif

#if defined(RTE_ARCH_ARM64)
#define LS_TSC_COUNTER "cntvct_el0" /**< the counter's name, for logs and status */
#else
#define LS_TSC_COUNTER "tsc"        /**< the counter's name, for logs and status */
#endif

/** The counter now (rte_rdtsc()). */
static inline uint64_t
ls_tsc_read(void)
{
#if defined(RTE_ARCH_ARM64)
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return rte_rdtsc();
#endif
}

/**
 * The counter, read in program order: not before earlier loads and stores
 * have completed (an isb on ARMv8, where the counter read is otherwise
 * free to run early; rte_rdtsc_precise() on x86). For brackets around a
 * clock_gettime().
 */
static inline uint64_t
ls_tsc_read_precise(void)
{
#if defined(RTE_ARCH_ARM64)
	uint64_t v;

	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
#else
	return rte_rdtsc_precise();
#endif
}

/**
 * The counter's frequency as the CPU states it, Hz: CNTFRQ_EL0 on ARMv8
 * (written by the firmware at boot; DPDK's rte_get_tsc_hz() returns it
 * too). 0 on x86, where the TSC's rate is not architectural: there the
 * calibration (ls_tsc_cal_init) is the only measure of it. The
 * calibration never uses this value; ls_tsc_cal_nominal_ppm() compares.
 */
static inline uint64_t
ls_tsc_nominal_hz(void)
{
#if defined(RTE_ARCH_ARM64)
	uint64_t hz;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz;
#else
	return 0;
#endif
}

#define LS_SIM_EPOCH_NS 1700000000000000000ULL /**< sim true time at MONOTONIC_RAW 0 */
#define LS_SIM_KNOT_NS 10000000ULL             /**< random-walk knot spacing, 10 ms */

/** A TSC -> CLOCK_MONOTONIC_RAW mapping: ns = ns0 + (tsc - tsc0) * mult / 2^32. */
struct ls_tsc_map {
	uint64_t tsc0;      /**< anchor TSC */
	uint64_t ns0;       /**< MONOTONIC_RAW ns at tsc0 */
	uint64_t mult;      /**< ns per tick, 32.32 fixed point */
	int64_t tai_off;    /**< CLOCK_TAI - CLOCK_MONOTONIC_RAW, ns */
	int64_t real_off;   /**< CLOCK_REALTIME - CLOCK_MONOTONIC_RAW at ns0, ns (kernel stamps) */
	double real_rate;   /**< d(real_off)/d(MONOTONIC_RAW): NTP or the hypervisor steer
			     *   REALTIME by ppm, which is microseconds per refit */
};

/**
 * MONOTONIC_RAW ns of a kernel receive stamp: CLOCK_REALTIME in whole
 * microseconds, as DPDK's net_pcap puts in the RX timestamp dynfield (from
 * the packet socket's stamp, taken when the frame entered the host stack).
 * The stamp is truncated to the microsecond; adding half of one centres
 * the error (+-500 ns, mean 0).
 */
static inline uint64_t
ls_kstamp_raw_ns(const struct ls_tsc_map *m, uint64_t realtime_us)
{
	uint64_t raw = realtime_us * 1000 + 500 - (uint64_t)m->real_off;

	/* real_off moves at real_rate: correct for the time since ns0 */
	return raw - (uint64_t)(int64_t)(m->real_rate * (double)(int64_t)(raw - m->ns0));
}

/** Convert a TSC reading to MONOTONIC_RAW ns with a map (handles tsc < tsc0). */
static inline uint64_t
ls_tsc_map_ns(const struct ls_tsc_map *m, uint64_t tsc)
{
	if (tsc >= m->tsc0)
		return m->ns0 + (uint64_t)(((unsigned __int128)(tsc - m->tsc0) * m->mult) >> 32);
	return m->ns0 - (uint64_t)(((unsigned __int128)(m->tsc0 - tsc) * m->mult) >> 32);
}

/**
 * Nanoseconds per tick in 32.32 fixed point between two (ticks, ns) points,
 * rounded to nearest: the slope of every mapping here (the TSC
 * calibration, a NIC's clock, fleet time in shared memory). Exact integer
 * division, so no double rounding however long the baseline.
 * @return the slope, or 0 when either coordinate does not increase or the
 *         slope does not fit in 64 bits.
 */
static inline uint64_t
ls_clock_slope_mult(uint64_t ticks_a, uint64_t ns_a, uint64_t ticks_b, uint64_t ns_b)
{
	unsigned __int128 num;

	if (ticks_b <= ticks_a || ns_b <= ns_a)
		return 0;
	num = (unsigned __int128)(ns_b - ns_a) << 32;
	num = (num + (ticks_b - ticks_a) / 2) / (ticks_b - ticks_a);
	return num > UINT64_MAX ? 0 : (uint64_t)num;
}

/**
 * The inverse of ls_tsc_map_ns: the tick at which the map reads ns (to
 * within a tick). For a NIC's fit (device ticks -> MONOTONIC_RAW), the
 * device clock value of an instant: what a NIC that sends on a timestamp
 * takes. mult must not be 0.
 */
static inline uint64_t
ls_tsc_map_ticks(const struct ls_tsc_map *m, uint64_t ns)
{
	if (ns >= m->ns0)
		return m->tsc0 + (uint64_t)((((unsigned __int128)(ns - m->ns0) << 32) +
					     m->mult / 2) / m->mult);
	return m->tsc0 - (uint64_t)((((unsigned __int128)(m->ns0 - ns) << 32) +
				     m->mult / 2) / m->mult);
}

/** The calibration shared by the control thread (writer) and lcores (readers). */
struct ls_tsc_cal {
	rte_seqlock_t lock;     /**< guards map */
	struct ls_tsc_map map;  /**< current mapping */
	/* writer-private fit state */
	uint64_t first_tsc;     /**< first sample, TSC */
	uint64_t first_ns;      /**< first sample, MONOTONIC_RAW */
	uint32_t n_updates;     /**< refits done */
	double ppm_step;        /**< last change of the slope, ppm (for status) */
	int64_t anchor_step_ns; /**< last re-anchor jump, new - old map at the sample, ns */
	int64_t anchor_step_max; /**< largest |jump| after the first few refits, ns */
	uint64_t width_ns;      /**< bracket width of the last sample, ns */
};

/**
 * Initial calibration: sample (TSC, MONOTONIC_RAW) pairs over about ms
 * milliseconds (taking the tightest bracket of each sample) and fit.
 * @return 0, or -EIO when the clocks cannot be read.
 */
int ls_tsc_cal_init(struct ls_tsc_cal *cal, unsigned int ms);

/** Refit with a new sample (control thread, about once a second). */
void ls_tsc_cal_update(struct ls_tsc_cal *cal);

/** The counter's frequency the calibration measured, Hz (0 before ls_tsc_cal_init);
 *  on the writer's thread, as ls_tsc_cal_update. */
double ls_tsc_cal_hz(const struct ls_tsc_cal *cal);

/** The rate to time intervals and rates with: the measured one, or
 *  rte_get_tsc_hz() (the rate the CPU states: 0.15% off on the lab's x86
 *  VM) before ls_tsc_cal_init. */
uint64_t ls_tsc_hz(const struct ls_tsc_cal *cal);

/**
 * How far the measured frequency is from the one the CPU states
 * (ls_tsc_nominal_hz), ppm: a few ppm on sound hardware; thousands when
 * the firmware wrote CNTFRQ_EL0 wrong, which then misleads every
 * rte_get_tsc_hz() interval in lockstepd (it warns at start). NAN where
 * the CPU states none (x86) or before ls_tsc_cal_init. Writer's thread.
 */
double ls_tsc_cal_nominal_ppm(const struct ls_tsc_cal *cal);

/** Read the current map (lcores; lock-free, retries on a concurrent update). */
static inline void
ls_tsc_cal_read(const struct ls_tsc_cal *cal, struct ls_tsc_map *out)
{
	uint32_t sn;

	do {
		sn = rte_seqlock_read_begin(&cal->lock);
		*out = cal->map;
	} while (rte_seqlock_read_retry(&cal->lock, sn));
}

/** Simulated clock parameters and per-reader state. */
struct ls_simclock {
	int64_t offset_ns;   /**< constant offset */
	double drift_ppm;    /**< frequency error */
	double wander_ns;    /**< random-walk std-dev per sqrt(second) */
	uint64_t seed;       /**< random-walk seed */
	uint64_t start_ns;   /**< true time drift is measured from */
	/* reader state: W at knot k */
	int64_t knot;        /**< index of the last knot computed */
	double w_prev;       /**< W at knot - 1, ns (one step back is free) */
	double w_knot;       /**< W at that knot, ns */
	double w_next;       /**< W at knot + 1, ns */
};

/**
 * Whether reading the clock at true_ns costs at most a step or two of the
 * walk: true_ns within one knot of the reader's position (or before the
 * start, where there is no walk). Anything else replays or walks far,
 * milliseconds per simulated hour: a stamp from a frame must pass this
 * before it is converted, or one forged stamp could stall an lcore.
 */
static inline bool
ls_simclock_near(const struct ls_simclock *s, uint64_t true_ns)
{
	int64_t dt = (int64_t)(true_ns - s->start_ns);
	int64_t k;

	if (dt <= 0 || s->wander_ns == 0.0)
		return true;
	k = dt / (int64_t)LS_SIM_KNOT_NS;
	return k >= s->knot - 1 && k <= s->knot + 1;
}

/** Set up a simulated clock starting at true time start_ns. */
void ls_simclock_init(struct ls_simclock *s, const struct ls_conf_simclock *p, uint64_t start_ns);

/** Offset local - true at true time true_ns (advances the reader state). */
double ls_simclock_offset(struct ls_simclock *s, uint64_t true_ns);

/** Local time at true time true_ns. */
static inline uint64_t
ls_simclock_local(struct ls_simclock *s, uint64_t true_ns)
{
	double off = ls_simclock_offset(s, true_ns);

	/* round to nearest: a plain cast would bias every offset toward 0 */
	return true_ns + (uint64_t)(int64_t)(off < 0 ? off - 0.5 : off + 0.5);
}

/** A clock as used by one lcore (each lcore owns its own copy). */
struct ls_clock {
	enum ls_clock_source kind;     /**< TSC, NIC or SIM (never AUTO once set up) */
	const struct ls_tsc_cal *cal;  /**< shared TSC calibration */
	struct ls_tsc_map map;         /**< lcore's cached copy of the map */
	uint64_t map_tsc;              /**< when the cache was refreshed */
	struct ls_simclock sim;        /**< SIM state */
	uint16_t nic_port;             /**< NIC: port whose clock is used */
	int ts_dynfield;               /**< NIC: RX timestamp dynfield offset, -1 none */
	uint64_t ts_dynflag;           /**< NIC: RX timestamp dynflag mask */
	uint64_t map_refresh;          /**< TSC ticks between cache refreshes (~100 ms) */
	uint64_t hw_fallbacks;         /**< NIC: hardware stamps rejected (no fit, implausible) */
	uint64_t kstamp_ports;         /**< ports (bit = port id < 64) whose RX stamps are kernel
					*   CLOCK_REALTIME microseconds (net_pcap on an interface) */
	int kts_dynfield;              /**< RX timestamp dynfield offset for those, -1 none */
	uint64_t kts_dynflag;          /**< RX timestamp dynflag mask for those */
	uint64_t kstamps;              /**< kernel stamps used */
	uint64_t kstamp_fallbacks;     /**< kernel stamps rejected as implausible */
	bool rx_trailer;               /**< RX stamps come from a frame trailer (lab emulator) */
	uint64_t tstamps;              /**< trailer stamps used */
	uint64_t tstamp_missing;       /**< frames without a trailer (software stamp used) */
	uint64_t tstamp_fallbacks;     /**< trailer stamps rejected as implausible */
	uint64_t tx_lead_tsc;          /**< clock.tx_trailer or tx_sched: send this far ahead
					*   (TSC ticks), 0 off */
	bool tx_sched;                 /**< the instant is for the NIC (device ticks), not a
					*   send-time trailer (lab timeline) */
	uint64_t tx_sched_nofit;       /**< tx_sched: sent unscheduled, the port's device
					*   clock not fitted yet */
};

/**
 * Local time of a MONOTONIC_RAW instant (ns) on this clock's timeline, with
 * the cached map as it is (callers refresh it first, e.g. through
 * ls_clock_from_tsc): SIM evaluates the simulated clock at the lab's true
 * time raw + LS_SIM_EPOCH_NS, the others add the TAI offset (NIC ticks are
 * fitted onto this same timeline).
 */
static inline uint64_t
ls_clock_local_from_raw(struct ls_clock *c, uint64_t raw)
{
	if (c->kind == LS_CLOCK_SIM)
		return ls_simclock_local(&c->sim, raw + LS_SIM_EPOCH_NS);
	return raw + (uint64_t)c->map.tai_off;
}

/**
 * Local time for a TSC reading in this clock's timeline (ns since 1970,
 * PTP/TAI for TSC; LS_SIM_EPOCH_NS-based for SIM).
 */
uint64_t ls_clock_from_tsc(struct ls_clock *c, uint64_t tsc);

/** Local time now. */
static inline uint64_t
ls_clock_now(struct ls_clock *c)
{
	return ls_clock_from_tsc(c, rte_rdtsc());
}

/** True time for a TSC reading (SIM: the shared lab timeline; others: local). */
uint64_t ls_clock_true_from_tsc(struct ls_clock *c, uint64_t tsc);

/** Ground truth of a clock at an instant (control socket "clock"). */
struct ls_clock_truth {
	uint64_t true_ns;      /**< true time */
	uint64_t local_ns;     /**< clock's local time */
	double offset_ns;      /**< local - true */
	double drift_ppm;      /**< configured drift */
};

/**
 * Fill truth for the current instant. This advances c's simulated-clock
 * reader, so c must belong to the calling thread: the control thread sets up
 * its own ls_clock with the same conf and cal as the lcores (ls_clock_setup
 * derives the SIM start from cal, so every such instance computes the same
 * offsets) and never passes an lcore's clock here.
 */
void ls_clock_truth_now(struct ls_clock *c, struct ls_clock_truth *t);


struct rte_mbuf;

/**
 * Check whether a port can give hardware timestamps: RX timestamp offload
 * capability and a readable device clock (rte_eth_read_clock).
 * @param why  on -ENOTSUP, the reason in words ("net_memif has no RX
 *             timestamp offload")
 * @return 0 when supported, -ENOTSUP otherwise.
 */
int ls_clock_nic_probe(uint16_t port, char *why, size_t len);

/**
 * RX offloads to request when configuring a port: RTE_ETH_RX_OFFLOAD_TIMESTAMP
 * when the source may become NIC (AUTO or NIC) and the port has the
 * capability, else 0. Hardware stamps only arrive when the offload was
 * enabled at rte_eth_dev_configure time, i.e. before ls_clock_setup runs.
 */
uint64_t ls_clock_rx_offloads(uint16_t port, const struct ls_conf_clock *conf);

/**
 * Refit the device-clock -> TSC-timeline conversion of every port a NIC
 * clock was set up on (control thread, about once a second, after
 * ls_tsc_cal_update). No-op when no NIC clock is in use.
 * @return 0, or -EIO when a port's clock could not be read (old fit kept).
 */
int ls_clock_nic_update(const struct ls_tsc_cal *cal);

/**
 * Internal to the clock driver (ls_clock.c -> ls_clock_nic.c): start the
 * per-port fits and the RX timestamp dynfield for a NIC clock.
 * @return 0, or a negative errno with the reason in why.
 */
int ls_clock_nic_attach(struct ls_clock *c, const uint16_t *ports, unsigned int n_ports,
			const struct ls_tsc_cal *cal, char *why, size_t len);

/**
 * Pick and set up the clock of an lcore: AUTO becomes NIC when every port
 * passes ls_clock_nic_probe(), else TSC; NIC fails with -ENOTSUP when a port
 * lacks support; SIM wraps the TSC mapping. Logs one line saying which
 * source and why. Call it from the main/control thread after the ports are
 * started (rte_eth_read_clock needs a running device), once per ls_clock;
 * copying a set-up ls_clock to its lcore is fine. SIM clocks start at cal's
 * first sample, so all clocks set up from one cal share one simulated clock.
 * @param ports  the ports this daemon polls (the first gives the NIC clock)
 * @return 0 or a negative errno.
 */
int ls_clock_setup(struct ls_clock *c, const struct ls_conf_clock *conf, uint32_t node_id,
		   const uint16_t *ports, unsigned int n_ports, const struct ls_tsc_cal *cal);

/**
 * Receive timestamp of a packet: with rx_trailer, the stamp of the
 * trailer the lab's emulator appends, which is removed from the mbuf (a
 * frame without one keeps its bytes and gets sw, counted in
 * tstamp_missing; a stamp later than sw by more than 20 us or older than a
 * second, SIM: more than about 10 ms from sw (ls_simclock_near), gets sw
 * too, counted in tstamp_fallbacks); else the hardware stamp converted to
 * the clock's timeline when the source is NIC and the mbuf carries one; the
 * kernel's stamp when the port is one of kstamp_ports (TSC and SIM
 * sources: the stamp is put on MONOTONIC_RAW through the calibration's
 * real_off, then through the clock like any TSC reading); else the burst's
 * software stamp.
 * @param sw  the burst's software stamp, ls_clock_from_tsc(c, rdtsc right
 *            after rx_burst): converted once per burst by the caller (that
 *            call also refreshes c's cached map, which the conversions here
 *            rely on), and the plausibility reference for hardware stamps
 */
uint64_t ls_clock_rx_ts(struct ls_clock *c, struct rte_mbuf *m, uint64_t sw);

/**
 * Note the ports whose RX stamps come from the kernel (driver net_pcap on
 * an interface, which stamps every received frame with the packet socket's
 * CLOCK_REALTIME time in microseconds; not one reading a file, whose
 * stamps are the file's) so ls_clock_rx_ts() uses them.
 * Logs one line per such port. No-op for NIC clocks.
 * @return number of such ports.
 */
unsigned int ls_clock_kstamp_setup(struct ls_clock *c, const uint16_t *ports, unsigned int n_ports);

/**
 * Whether frames received on port carry the kernel's receive stamp (driver
 * net_pcap on an interface: iface=, rx_iface= or rx_iface_in=, not rx_pcap=);
 * if so, where: the RX timestamp dynfield offset
 * and dynflag mask. Also for other users of such ports (lockstep-fabric's
 * ingress times).
 */
bool ls_clock_kstamp_port(uint16_t port, int *field, uint64_t *flag);

#define LS_RX_TRAILER_LEN 12      /**< stamp (8 bytes, big endian) + magic "LSTS" */
#define LS_RX_TRAILER_MIN_FRAME 14 /**< a trailer follows at least an Ethernet header */

/**
 * Write a receive-stamp trailer (LS_RX_TRAILER_LEN bytes) at dst: ns, the
 * instant the frame reached the host, on the host's shared timeline
 * (LS_SIM_EPOCH_NS + MONOTONIC_RAW). See ls_clock_trailer.c.
 */
void ls_rx_trailer_put(uint8_t *dst, uint64_t ns);

/**
 * Read the receive-stamp trailer at the end of a frame of len bytes.
 * @return 0 with *ns set; -EINVAL when the frame is too short to hold one
 *         after an Ethernet header; -ENOENT when its last bytes are not a
 *         trailer (no magic).
 */
int ls_rx_trailer_get(const uint8_t *frame, uint32_t len, uint64_t *ns);

/**
 * Write a send-time trailer (LS_RX_TRAILER_LEN bytes, magic "LSTX") at
 * dst: ns, the instant the frame is to enter the network, on the host's
 * shared timeline (clock.tx_trailer; the emulator's --tx-trailer strips it
 * and sends the frame then). See ls_clock_trailer.c.
 */
void ls_tx_trailer_put(uint8_t *dst, uint64_t ns);

/**
 * Read the send-time trailer at the end of a frame of len bytes.
 * @return as ls_rx_trailer_get().
 */
int ls_tx_trailer_get(const uint8_t *frame, uint32_t len, uint64_t *ns);

/**
 * The transmit stamp for frames about to be sent on port at TSC tsc. With
 * clock.tx_trailer or tx_sched, the instant tx_lead_ns ahead at which they
 * are asked to leave, and in *at that instant as the sender hands it over:
 * on the host's shared timeline for the send-time trailer (tx_trailer), in
 * the port's device clock ticks for the mbuf's TX timestamp (tx_sched).
 * Else, or while the port's device clock has no fit yet (tx_sched, counted
 * in tx_sched_nofit), the reading at tsc and *at 0: send at once.
 */
uint64_t ls_clock_tx_ts(struct ls_clock *c, uint64_t tsc, uint16_t port, uint64_t *at);

/**
 * Device clock ticks of the MONOTONIC_RAW instant raw on port, through the
 * port's fit (NIC source).
 * @return 0, or -EAGAIN when the port has no fit (yet).
 */
int ls_clock_nic_ticks_at(uint16_t port, uint64_t raw, uint64_t *ticks);

/** Name of the source in use ("tsc", "nic", "sim"). */
const char *ls_clock_name(const struct ls_clock *c);

#ifdef __cplusplus
}
#endif

#endif /* LS_CLOCK_H */
