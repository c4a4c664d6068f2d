/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port's queues used only while its link is up, for memif (lcore side).
 *
 * DPDK 22.11's memif PMD reads a queue's ring address before it checks that
 * the connection is up, and a server learns the client's regions unmapped
 * (address NULL), mapping them only when the client says "connect", on the
 * interrupt thread. A burst on a server port while its client connects can
 * so read the ring through a region not mapped yet: lockstepd died in
 * net_memif's rx once in 6 local runs of bridge-pacing, right as
 * lockstep-load connected. The PMD marks the link up after the mapping, so a
 * burst that follows a look at the link is safe.
 *
 * Disconnecting has the same kind of race: the PMD marks the link down,
 * then unmaps the regions, and a burst after the unmapping reads a freed
 * ring address (lockstepd died in net_memif's rx as lockstep-load exited at
 * the end of a cc-delay run). So a memif port's link is looked at before
 * every burst (a function call reading the link word, on memif only), and
 * the guard (ls_gate.c) closes what is left: a burst that looked before
 * the link went down and is still running when the PMD unmaps. The PMD
 * unmaps on the EAL interrupt thread, through munmap(), which this
 * process defines: there it waits for a grace period of the polling
 * lcores (RCU QSBR, each reports once a loop, outside its bursts), so
 * every burst that could have seen the link up has ended first.
 *
 * Other drivers are not watched.
 */
#ifndef LS_GATE_H
#define LS_GATE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_ethdev.h>

struct ls_app_gate {
	bool watch;        /* memif: look at the link before each burst */
};

struct rte_rcu_qsbr;

/*
 * Arm the teardown guard: from now on munmap() on the EAL interrupt thread
 * waits until every reader online in v has reported quiescence (v NULL:
 * disarmed). Each lcore that bursts on a watched port registers in v and
 * reports outside its bursts; it goes offline while it sleeps. A reader
 * stopped inside a burst holds a memif teardown until it runs again.
 */
void ls_app_gate_guard(struct rte_rcu_qsbr *v);

/* The interrupt thread's unmappings that waited for the guard (a memif
 * teardown unmaps a region or two). */
uint64_t ls_app_gate_waits(void);

static inline void
ls_app_gate_init(struct ls_app_gate *g, uint16_t port)
{
	struct rte_eth_dev_info di;

	g->watch = rte_eth_dev_info_get(port, &di) == 0 && di.driver_name != NULL &&
		   strcmp(di.driver_name, "net_memif") == 0;
}

static inline bool
ls_app_link_up(uint16_t port)
{
	struct rte_eth_link l;

	return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

/* Whether the port's queues may be used now. */
static inline bool
ls_app_gate_open(struct ls_app_gate *g, uint16_t port)
{
	return likely(!g->watch) || ls_app_link_up(port);
}

/* rx burst on queue q behind the gate. */
static inline uint16_t
ls_app_rx_q(struct ls_app_gate *g, uint16_t port, uint16_t q, struct rte_mbuf **m, uint16_t n)
{
	if (unlikely(!ls_app_gate_open(g, port)))
		return 0;
	return rte_eth_rx_burst(port, q, m, n);
}

/* tx burst on queue q behind the gate: 0 sent while it is shut. */
static inline uint16_t
ls_app_tx_q(struct ls_app_gate *g, uint16_t port, uint16_t q, struct rte_mbuf **m, uint16_t n)
{
	return likely(ls_app_gate_open(g, port)) ? rte_eth_tx_burst(port, q, m, n) : 0;
}

/* ... on queue 0. */
static inline uint16_t
ls_app_rx(struct ls_app_gate *g, uint16_t port, struct rte_mbuf **m, uint16_t n)
{
	return ls_app_rx_q(g, port, 0, m, n);
}

static inline uint16_t
ls_app_tx(struct ls_app_gate *g, uint16_t port, struct rte_mbuf **m, uint16_t n)
{
	return ls_app_tx_q(g, port, 0, m, n);
}

#endif /* LS_GATE_H */
