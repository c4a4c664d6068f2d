/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The polling loop of one lcore, in the shape of DPDK's l3fwd/ptpclient:
 * for each owned port, rx_burst -> the probe path's receive vector (rx.c);
 * the data path's two ports are polled by the bridge (bridge.c); then due
 * timers (coded-pair sends, housekeeping) and control messages.
 *
 * Nothing in here allocates, locks or makes a system call, except the
 * optional idle sleep when a loop found no work (lab use, where several
 * daemons share two cores).
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>
#include <rte_prefetch.h>

#include "bridge.h"
#include "lockstepd.h"
#include "ls_stamp.h"

static void
poll_port(struct lsd_lcore *lc, struct lsd_port *p, unsigned int *work)
{
	struct rte_mbuf *rx[LSD_BURST];
	uint16_t n;

	n = ls_app_rx(&p->gate, p->port_id, rx, LSD_BURST);
	if (n == 0)
		return;
	*work += n;
	lsd_rx_vector(lc, p, rx, n, rte_rdtsc());
}

static void
peer_filter_add(struct lsd_lcore *lc, const struct lsd_addr_key *k)
{
	uint32_t b = lsd_peer_filter_bit(k);

	lc->peer_filter[b / 64] |= 1ULL << (b % 64);
}

/* After a peer left: the filter of those that stay (a control-plane rate). */
static void
peer_filter_rebuild(struct lsd_lcore *lc)
{
	struct lsd_addr_key k;

	memset(lc->peer_filter, 0, sizeof(lc->peer_filter));
	for (uint32_t i = 0; i < lc->n_peers; i++) {
		lsd_addr_key(&lc->peers[i]->addr, &k);
		peer_filter_add(lc, &k);
	}
}

static void
apply_msg(struct lsd_lcore *lc, struct lsd_msg *msg)
{
	struct lsd_peer *peer = msg->peer;
	struct lsd_addr_key key;
	int rc = 0;

	switch (msg->type) {
	case LSD_MSG_PEER_ADD:
		if (lc->n_peers >= LS_MAX_PEERS) {
			rc = -ENOSPC;
			break;
		}
		lsd_addr_key(&peer->addr, &key);
		if (rte_hash_lookup(lc->peer_hash, &key) >= 0) {
			rc = -EEXIST;
			break;
		}
		rc = rte_hash_add_key_data(lc->peer_hash, &key, peer);
		if (rc < 0)
			break;
		/* peers[] stays dense so the housekeeping tick walks only live peers. */
		peer->slot = (int32_t)lc->n_peers;
		lc->peers[lc->n_peers++] = peer;
		peer_filter_add(lc, &key);
		lsd_reflector_forget(lc, &key);
		lsd_peer_set_nexthop(peer);
		lsd_sender_start_peer(lc, peer);
		break;
	case LSD_MSG_PEER_DEL:
		lsd_sender_stop_peer(lc, peer);
		if (peer->slot >= 0 && (uint32_t)peer->slot < lc->n_peers &&
		    lc->peers[peer->slot] == peer) {
			struct lsd_peer *last = lc->peers[lc->n_peers - 1];

			lsd_addr_key(&peer->addr, &key);
			rte_hash_del_key(lc->peer_hash, &key);
			lc->peers[peer->slot] = last;
			last->slot = peer->slot;
			lc->peers[--lc->n_peers] = NULL;
			peer_filter_rebuild(lc);
		} else {
			rc = -ENOENT;
		}
		peer->slot = -1;
		break;
	case LSD_MSG_PROBE_SET:
		peer->interval_us = msg->interval_us;
		break;
	case LSD_MSG_PEER_ACQUIRE:
		lsd_sender_acquire(peer);
		break;
	case LSD_MSG_POLICY:
		rc = lsd_bridges[lc->lcore_id] == NULL ? -ENOENT :
		     lsd_bridge_apply(lsd_bridges[lc->lcore_id], msg->ptr);
		break;
	case LSD_MSG_BALANCE:
		rc = lsd_bridges[lc->lcore_id] == NULL ? -ENOENT :
		     lsd_bal_apply(lsd_bridges[lc->lcore_id], msg->ptr);
		break;
	case LSD_MSG_SHARE:
		rc = lsd_bridges[lc->lcore_id] == NULL ? -ENOENT :
		     lsd_share_apply(lsd_bridges[lc->lcore_id], msg->ptr);
		break;
	case LSD_MSG_PING:
		break;
	case LSD_MSG_TRACE:
	case LSD_MSG_MTU: {
		struct lsd_trace_tx *tx = (struct lsd_trace_tx *)(uintptr_t)msg->ptr;

		lsd_tx_frames(lc, &lsd.ports[tx->port_idx], tx->m, tx->n,
			      msg->type == LSD_MSG_MTU ? &lc->st.tx_mtu : &lc->st.tx_trace);
		break;
	}
	}
	msg->result = rc;
	__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
}

static void
housekeep_cb(struct rte_timer *t __rte_unused, void *arg)
{
	struct lsd_lcore *lc = arg;
	uint64_t now = ls_clock_now(&lc->clock);

	lsd_sender_tick(lc, now);
	lsd_reflector_sweep(lc, now);
}

void
lsd_lcore_setup(struct lsd_lcore *lc)
{
	rte_timer_init(&lc->housekeep);
	lc->prng = rte_rdtsc() ^ ((uint64_t)lsd.cfg.node_id << 32) ^ lc->lcore_id;
	if (lc->prng == 0)
		lc->prng = 0x9e3779b97f4a7c15ULL;
}

/* Lab mode: give the core away, bounded so timers stay on time. A reader
 * of the lead's peers is off-line meanwhile, so no grace period waits. */
static void
idle_sleep(struct lsd_lcore *lc, const struct ls_conf_idle *idle, struct rte_rcu_qsbr *qs,
	   struct rte_rcu_qsbr *pq)
{
	if (qs != NULL)
		rte_rcu_qsbr_thread_offline(qs, lc->lcore_id);
	if (pq != NULL)
		rte_rcu_qsbr_thread_offline(pq, lc->lcore_id);
	rte_delay_us_sleep(idle->sleep_us);
	if (qs != NULL)
		rte_rcu_qsbr_thread_online(qs, lc->lcore_id);
	if (pq != NULL)
		rte_rcu_qsbr_thread_online(pq, lc->lcore_id);
	lc->st.idle_sleeps++;
}

static void
rcu_join(struct rte_rcu_qsbr *v, unsigned int id)
{
	if (v != NULL) {
		rte_rcu_qsbr_thread_register(v, id);
		rte_rcu_qsbr_thread_online(v, id);
	}
}

static void
rcu_leave(struct rte_rcu_qsbr *v, unsigned int id)
{
	if (v != NULL) {
		rte_rcu_qsbr_thread_offline(v, id);
		rte_rcu_qsbr_thread_unregister(v, id);
	}
}

/* Take one message from the control thread, if any: whether there was one. */
static bool
take_msg(struct lsd_lcore *lc)
{
	uint32_t q = LSD_MSG_QUEUED;
	struct lsd_msg *msg;

	if (rte_ring_sc_dequeue(lc->msgs, (void **)&msg) != 0)
		return false;
	/* A message the control thread gave up on never happens. */
	if (__atomic_compare_exchange_n(&msg->state, &q, LSD_MSG_TAKEN, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		apply_msg(lc, msg);
	return true;
}

/*
 * Apply the control thread's messages, and poll no port, until the
 * config's peers are in (ctl_thread). A configured peer's probe that came
 * first was a stranger's: its reply fell to the shared overflow bucket of
 * a full rate-limit table (CI's test_ratelimit: 9 of the peer's 10
 * answered, the control thread late under load). Frames wait in the
 * ports' rings meanwhile: a second or two for a config of 10k peers.
 */
static void
await_peers(struct lsd_lcore *lc, struct rte_rcu_qsbr *qs, struct rte_rcu_qsbr *pq)
{
	while (!__atomic_load_n(&lsd.peers_ready, __ATOMIC_ACQUIRE) && !lsd.quit) {
		if (!take_msg(lc))
			rte_delay_us_sleep(10);
		if (qs != NULL)
			rte_rcu_qsbr_quiescent(qs, lc->lcore_id);
		if (pq != NULL)
			rte_rcu_qsbr_quiescent(pq, lc->lcore_id);
	}
}

/* hot, as are lsd_rx_vector and lsd_bridge_poll, the roots of the
 * per-frame work: after the many-cores change GCC's static estimate judged
 * the data path and the probe path cold and optimized them for size (no
 * alignment, rep stos for every parse's clearing: the reflector 17% and
 * bench_datapath's mix 15% slower, A/B against 651d2c0). The attribute
 * carries to what they call. */
__attribute__((hot)) int
lsd_lcore_main(void *arg __rte_unused)
{
	struct lsd_lcore *lc = &lsd.lcores[rte_lcore_id()];
	const struct ls_conf_idle *idle = &lsd.cfg.idle;
	uint64_t hk = rte_get_timer_hz() / (1000000 / LSD_HOUSEKEEP_US);
	struct rte_rcu_qsbr *qs = lc->worker ? lsd.qsbr : NULL;
	/* the memif teardown guard's readers: every polling lcore (a worker
	 * bursts on its own bridge queues when they spread by RSS) */
	struct rte_rcu_qsbr *pq = lsd.port_qsbr;
	uint32_t empty = 0;

	if (!lc->active)
		return 0;
	/* a data-path lcore without ports has no probes to time */
	if (!lc->worker)
		rte_timer_reset(&lc->housekeep, hk, PERIODICAL, rte_lcore_id(), housekeep_cb, lc);
	rcu_join(qs, lc->lcore_id);
	rcu_join(pq, lc->lcore_id);
	await_peers(lc, qs, pq);
	LSD_LOG(INFO, "lcore %u: polling %u port(s)%s", lc->lcore_id, lc->n_ports,
	       lc->worker ? " and the data path's rings" : "");

	while (!lsd.quit) {
		struct lsd_bridge *br = lsd_bridges[lc->lcore_id];
		unsigned int work = 0;

		for (uint16_t i = 0; i < lc->n_ports; i++) {
			struct lsd_port *p = &lsd.ports[lc->port_idx[i]];

			/* the bridge polls its two ports itself */
			if (br == NULL || (p != br->host && p != br->fab))
				poll_port(lc, p, &work);
		}
		if (br != NULL)
			lsd_bridge_poll(lc, br, &work);
		if (qs != NULL)
			rte_rcu_qsbr_quiescent(qs, lc->lcore_id);
		if (pq != NULL)
			rte_rcu_qsbr_quiescent(pq, lc->lcore_id);
		rte_timer_manage();
		/* A few per loop: a batch of peer adds (a config of 10k peers)
		 * must not stall the port's receive times for milliseconds. */
		for (int k = 0; k < LSD_MSG_PER_LOOP && take_msg(lc); k++)
			work++;
		if (work != 0 || !idle->backoff) {
			empty = 0;
			continue;
		}
		if (++empty >= idle->after_polls)
			idle_sleep(lc, idle, qs, pq);
	}
	rcu_leave(pq, lc->lcore_id);
	rcu_leave(qs, lc->lcore_id);
	rte_timer_stop_sync(&lc->housekeep);
	for (uint32_t s = 0; s < lc->n_peers; s++)
		lsd_sender_stop_peer(lc, lc->peers[s]);
	return 0;
}
