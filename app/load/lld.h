/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load: the generator's side (tx.c) and what main.c shares with it.
 * The frames (lld_frame.h), the sink (lld_sink.h) and the options
 * (lld_opts.h) are EAL-free and unit-tested; this part owns mbufs and ports.
 */
#ifndef LLD_H
#define LLD_H

#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "ls_wheel.h"
#include "lld_frame.h"
#include "lld_opts.h"
#include "lld_phase.h"

#define LLD_BURST 32

extern int lld_logtype;
#define LLD_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, lld_logtype, "lockstep-load: " fmt "\n", ##__VA_ARGS__)

/* Send n answers (ACKs, CNPs, reflections) on port's queue 0: what the
 * port does not take is freed and counted in *full (answers are not worth
 * holding: the next one supersedes them). @return the number sent. */
static inline uint16_t
lld_send_or_drop(uint16_t port, struct rte_mbuf **m, uint16_t n, uint64_t *full)
{
	uint16_t sent = n > 0 ? rte_eth_tx_burst(port, 0, m, n) : 0;

	if (sent < n) {
		*full += n - sent;
		rte_pktmbuf_free_bulk(&m[sent], n - sent);
	}
	return sent;
}

/* A flow's pacing clock: the next frame's time, exact over any run (the
 * fractional tick is carried, as lib/wheel's ls_pace). */
struct lld_txflow {
	uint64_t next;        /* TSC the next frame is due */
	uint64_t tpb;         /* ticks per byte, 32.32 */
	uint64_t seq;         /* next sequence = frames sent */
	uint32_t frac;        /* fractional tick carried */
	uint32_t left;        /* --phase-bytes: frames left in this phase */
};

struct lld_tx {
	uint16_t port;
	struct rte_mempool *pool;
	struct ls_wheel *wheel;       /* flows by due time (elements: index + 1) */
	struct lld_tmpl *tmpl;        /* per flow */
	struct lld_txflow *fl;        /* per flow */
	uint32_t n_flows;
	uint32_t active;              /* flows on the wheel: a frame due before the end */
	uint32_t parked;              /* flows off the wheel at the phase barrier */
	uint64_t parked_at;           /* TSC the last of them parked */
	uint64_t phase_bytes;         /* --phase-bytes per flow per phase; 0: no phases */
	uint64_t spread;              /* --spread-us in ticks; 0: a period */
	uint32_t tag;                 /* TSC domain tag */
	uint64_t hz, start, end;      /* TSC: TX runs in [start, end) */
	uint64_t max_lag;             /* a flow further behind restarts its clock */
	struct rte_mbuf *pend[LLD_BURST];   /* built, not yet taken by the port */
	uint16_t n_pend, pend_off;
	/* counters */
	uint64_t pkts, bytes;
	uint64_t full;                /* polls the port took fewer frames than offered */
	uint64_t late;                /* flow clocks restarted: more than max_lag behind */
	uint64_t alloc_fail;          /* polls without mbufs */
	uint64_t lag_max;             /* worst lateness of a frame, ticks */
};

/*
 * Build every flow's template and clock (100k flows take a while: before
 * the start, so no flow begins late).
 * hz: the TSC's measured rate (rates and times are timed with it).
 * @return 0 or a negative errno (message logged).
 */
int lld_tx_init(struct lld_tx *t, const struct lld_opts *o, uint16_t port,
		struct rte_mempool *pool, uint32_t tag, uint64_t hz);

/*
 * Put the flows on the wheel: TX runs in [start, end), flows spread evenly
 * over one period from start so that n flows at one rate leave in turn.
 * Start far enough ahead for the inserts (about 50 ns a flow).
 */
void lld_tx_start(struct lld_tx *t, uint64_t start, uint64_t end);
void lld_tx_free(struct lld_tx *t);

/* Send what is due at now. @return frames handed to the port. */
unsigned int lld_tx_poll(struct lld_tx *t, uint64_t now);

/*
 * Phases (--phase-bytes): a flow that has sent its frames of the phase
 * leaves the wheel (parked; every flow parked: parked == n_flows). Start
 * the next phase at now: every flow back on the wheel, spread from now as
 * at the start, its pacing clock restarted.
 */
void lld_tx_phase_next(struct lld_tx *t, uint64_t now);

/* The last phase ended at now: TX is over, its time ends here. */
void lld_tx_phase_stop(struct lld_tx *t, uint64_t now);

/*
 * The TSC the next frame of flows [from, to) is due: 0 while frames wait
 * for the port, UINT64_MAX when none of them is on the wheel (parked or
 * done). A walk over the flows: for the idle back-off, a slice per empty
 * poll, never per frame.
 */
uint64_t lld_tx_next_due(const struct lld_tx *t, uint32_t from, uint32_t to);

/* True once every frame due before the end has been handed to the port
 * and no flow waits at a phase barrier. */
static inline int
lld_tx_done(const struct lld_tx *t)
{
	return t->active == 0 && t->parked == 0 && t->n_pend == 0;
}

#endif /* LLD_H */
