/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread's clock: its two readers of the configured clock
 * source, the TSC calibration refit, and the "clock" command.
 *
 * Each lcore owns its own reader (struct lsd_lcore.clock); the control
 * thread has two more, because the simulated clock's readers only move
 * forward: one follows time for the thread's own use (peers, sync steps),
 * the other answers questions about an arbitrary TSC reading ("clock" and
 * "sync" with args.tsc), which may lie in the past.
 *
 * Counters shown here are read from the lcores with relaxed loads.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>

#include <jansson.h>

#include <rte_cpuflags.h>
#include <rte_cycles.h>
#include <rte_lcore.h>

#include "lockstepd.h"
#include "ls_ctl.h"

static struct {
	struct ls_clock clock;         /* the control thread's own reader */
	struct ls_clock q_clock;       /* reader for truth at a given TSC (may go back) */
	uint64_t next_cal;             /* TSC of the next calibration refit */
	bool warned_unsent;
} ctl_clock;

static bool
tsc_invariant(void)
{
#if defined(RTE_ARCH_X86)
	return rte_cpu_get_flag_enabled(RTE_CPUFLAG_INVTSC) > 0;
#else
	return true; /* the generic timer counts at a fixed frequency by definition */
#endif
}

/* Past this, the counter's stated frequency is not its rate (ARM: CNTFRQ_EL0
 * as the firmware wrote it); sound hardware is within a few ppm. */
#define NOMINAL_PPM_MAX 1000.0

/* Say which counter the clock runs on, at what rate, and warn when the
 * CPU's stated rate is not the measured one: DPDK's rte_get_tsc_hz() is the
 * stated one on ARM, and it times lockstepd's intervals. */
static void
nominal_check(void)
{
	double hz = ls_tsc_cal_hz(&lsd.cal), ppm = ls_tsc_cal_nominal_ppm(&lsd.cal);

	LSD_LOG(INFO, "clock: counter %s, measured %.0f Hz", LS_TSC_COUNTER, hz);
	if (!isnan(ppm) && fabs(ppm) > NOMINAL_PPM_MAX)
		LSD_LOG(WARNING, "clock: %s counts at %.0f Hz, %.0f ppm from the %" PRIu64 " Hz "
			"the CPU states (CNTFRQ_EL0, from the firmware): timestamps use the "
			"measured rate, but intervals timed with rte_get_tsc_hz() (probe "
			"spacing, timeouts) are off by as much", LS_TSC_COUNTER, hz, ppm,
			ls_tsc_nominal_hz());
}

int
lsd_clock_init(void)
{
	uint16_t ports[LS_MAX_PORTS];
	int rc;

	/* The TSC is the time base of everything here and of fleet time's
	 * readers (lib/sync/ls_fleettime.h): say so when the CPU does not
	 * promise it runs at one rate through power states. */
	if (!tsc_invariant())
		LSD_LOG(WARNING, "the CPU does not report an invariant TSC (CPUID INVTSC): "
			"delays and fleet time may drift with power states");
	nominal_check();
	for (unsigned int i = 0; i < lsd.n_ports; i++)
		ports[i] = lsd.ports[i].port_id;
	rc = ls_clock_setup(&ctl_clock.clock, &lsd.cfg.clock, lsd.cfg.node_id, ports, lsd.n_ports,
			    &lsd.cal);
	if (rc == 0)
		rc = ls_clock_setup(&ctl_clock.q_clock, &lsd.cfg.clock, lsd.cfg.node_id, ports,
				    lsd.n_ports, &lsd.cal);
	return rc;
}

struct ls_clock *
lsd_clock_reader(void)
{
	return &ctl_clock.clock;
}

struct ls_clock *
lsd_clock_query_reader(void)
{
	return &ctl_clock.q_clock;
}

uint64_t
lsd_clock_now(void)
{
	return ls_clock_now(&ctl_clock.clock);
}

json_t *
lsd_clock_truth_at(uint64_t tsc)
{
	struct ls_clock *c = &ctl_clock.q_clock;
	uint64_t t;

	if (c->kind != LS_CLOCK_SIM)
		return NULL;
	t = ls_clock_true_from_tsc(c, tsc);
	return json_pack("{s:I, s:I, s:I, s:f}", "tsc", (json_int_t)tsc,
			 "true_ns", (json_int_t)t,
			 "local_ns", (json_int_t)ls_simclock_local(&c->sim, t),
			 "offset_ns", ls_simclock_offset(&c->sim, t));
}

/* Where receive stamps came from, over all lcores (each owns its clock). */
static json_t *
rx_stamps_json(void)
{
	uint64_t k = 0, kr = 0, hr = 0, tr = 0, tm = 0, trj = 0;
	unsigned int l;

#define LD(f) __atomic_load_n(&lsd.lcores[l].clock.f, __ATOMIC_RELAXED)
	RTE_LCORE_FOREACH(l) {
		k += LD(kstamps);
		kr += LD(kstamp_fallbacks);
		hr += LD(hw_fallbacks);
		tr += LD(tstamps);
		tm += LD(tstamp_missing);
		trj += LD(tstamp_fallbacks);
	}
#undef LD
	return json_pack("{s:b, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "trailer_mode", (int)lsd.cfg.clock.rx_trailer,
			 "kernel", (json_int_t)k, "kernel_rejected", (json_int_t)kr,
			 "nic_rejected", (json_int_t)hr, "trailer", (json_int_t)tr,
			 "trailer_missing", (json_int_t)tm, "trailer_rejected", (json_int_t)trj);
}

/* Replies that arrived with their send-time trailer still on, over all
 * lcores. */
static uint64_t
trailers_unsent(void)
{
	return LSD_LCORES_SUM(tx_trailer_unsent);
}

/* Frames sent at their stamp (clock.tx_sched on the NIC, clock.tx_trailer
 * in the lab), over all lcores. */
static json_t *
tx_stamps_json(void)
{
	uint64_t ta = 0, tan = 0, tnf = 0;
	unsigned int l;

	RTE_LCORE_FOREACH(l) {
		ta += __atomic_load_n(&lsd.lcores[l].st.tx_at, __ATOMIC_RELAXED);
		tan += __atomic_load_n(&lsd.lcores[l].st.tx_at_no_room, __ATOMIC_RELAXED);
		tnf += __atomic_load_n(&lsd.lcores[l].clock.tx_sched_nofit, __ATOMIC_RELAXED);
	}
	return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I}",
			 "mode", lsd.cfg.clock.tx_sched ? "nic" :
				 lsd.cfg.clock.tx_trailer ? "trailer" : "software",
			 "lead_ns", (int)lsd.cfg.clock.tx_lead_ns, "scheduled", (json_int_t)ta,
			 "no_room", (json_int_t)tan, "unfitted", (json_int_t)tnf,
			 "unsent_seen", (json_int_t)trailers_unsent());
}

json_t *
lsd_clock_json(void)
{
	struct ls_clock *c = &ctl_clock.clock;
	struct ls_tsc_map map;
	json_t *o;

	ls_tsc_cal_read(&lsd.cal, &map);
	o = json_pack("{s:s, s:I, s:{s:s, s:I, s:f, s:I, s:I, s:f}}",
		      "source", ls_clock_name(c),
		      "now_ns", (json_int_t)ls_clock_now(c),
		      "calibration",
		      "counter", LS_TSC_COUNTER,
		      "nominal_hz", (json_int_t)ls_tsc_nominal_hz(),
		      "tsc_hz", map.mult ? 1e9 * 4294967296.0 / (double)map.mult : 0.0,
		      "tai_offset_ns", (json_int_t)map.tai_off,
		      "refits", (json_int_t)lsd.cal.n_updates,
		      "last_step_ppm", lsd.cal.ppm_step);
	json_object_set_new(o, "invariant_tsc", json_boolean(tsc_invariant()));
	json_object_set_new(o, "rx_stamps", rx_stamps_json());
	json_object_set_new(o, "tx_stamps", tx_stamps_json());
	if (c->kind == LS_CLOCK_SIM) {
		struct ls_clock_truth t;

		ls_clock_truth_now(c, &t);
		json_object_set_new(o, "truth",
			json_pack("{s:I, s:I, s:f, s:f}", "true_ns", (json_int_t)t.true_ns,
				  "local_ns", (json_int_t)t.local_ns,
				  "offset_ns", t.offset_ns, "drift_ppm", t.drift_ppm));
		json_object_set_new(o, "sim",
			json_pack("{s:I, s:f, s:f, s:I}",
				  "offset_ns", (json_int_t)lsd.cfg.clock.sim.offset_ns,
				  "drift_ppm", lsd.cfg.clock.sim.drift_ppm,
				  "wander_ns", lsd.cfg.clock.sim.wander_ns,
				  "seed", (json_int_t)c->sim.seed));
	}
	return o;
}

/* Once a second: refit the TSC calibration (and the NIC clocks' maps). */
void
lsd_clock_tick(uint64_t tsc)
{
	if (ctl_clock.next_cal == 0)
		ctl_clock.next_cal = tsc + rte_get_tsc_hz();
	if (tsc < ctl_clock.next_cal)
		return;
	ls_tsc_cal_update(&lsd.cal);
	ls_clock_nic_update(&lsd.cal);
	ctl_clock.next_cal = tsc + rte_get_tsc_hz();
	if (!ctl_clock.warned_unsent && trailers_unsent() > 0) {
		ctl_clock.warned_unsent = true;
		LSD_LOG(WARNING, "replies arrive with a send-time trailer still on: "
		       "nothing sends frames at their stamp, so T1/T3 are a "
		       "lead early (a lab emulator without --tx-trailer?); "
		       "status clock.tx_stamps.unsent_seen counts them");
	}
}

int
lsd_clock_arg_tsc(struct ls_ctl_req *req, json_t *args, uint64_t *tsc)
{
	const uint64_t now = rte_rdtsc(), span = LSD_TSC_ARG_SPAN_S * rte_get_tsc_hz();

	*tsc = 0;
	if (ls_ctl_arg_uint(req, args, "tsc", 1, INT64_MAX, tsc) < 0)
		return -EINVAL;
	/* The simulated clock walks its wander 10 ms a step up to the instant:
	 * an instant hours away held the control thread for hours (issue 27 L3). */
	if (*tsc != 0 && (*tsc + span < now || *tsc > now + span)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
				   "args.tsc: must be within %d s of now (TSC %" PRIu64 ")",
				   LSD_TSC_ARG_SPAN_S, now);
		return -EINVAL;
	}
	return 0;
}

static void
cmd_clock(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	json_t *o, *t;
	uint64_t tsc = 0;

	if (lsd_clock_arg_tsc(req, args, &tsc) < 0)
		return;
	o = lsd_clock_json();
	/* every process on the host reads the same TSC: a test names one
	 * instant to all daemons and compares their answers exactly */
	if (tsc == 0)
		tsc = rte_rdtsc();
	json_object_set_new(o, "tsc", json_integer((json_int_t)tsc));
	t = lsd_clock_truth_at(tsc);
	if (t != NULL)
		json_object_set_new(o, "truth_at", t);
	ls_ctl_reply_ok(req, o);
}

void
lsd_clock_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "clock", "{[tsc]}",
			     "clock source, calibration, and ground truth when simulated (at tsc)",
			     "tsc", cmd_clock, NULL);
}
