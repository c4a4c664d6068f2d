/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many cores: the data path's lcores and how frames reach them
 * (docs/datapath.md, "Many cores").
 *
 * Each lcore owns the flows of the host pairs that hash to it
 * (ls_flow_spread_hash: the IP addresses only, the same both ways), with its
 * own flow table, wheel, slice scheduler and congestion control: no lock
 * between lcores. A RoCEv2 QP's requests and the ACKs and CNPs that answer
 * them carry different 5-tuples (each end picks its UDP source port) but
 * the same addresses, so they meet on one lcore, as QP pairing, failover's
 * ACK timing and the shared increase need.
 *
 * The soft spread, for ports with one queue (the lab's memif, pcap, null
 * and af_packet vdevs, a tap): the lead (the fabric port's lcore, which also
 * runs the probe mesh) reads both ports' queue 0, keeps what is its own and
 * what is not IP, takes what is for lockstepd itself off the fabric side as
 * before, and puts every other frame on the ring of the lcore its address
 * pair hashes to. That lcore sends what it is done with back on its own out
 * ring, one per side, and the lead puts those on the ports: the ports'
 * queues stay single-threaded. A ring full on the way out is a drop,
 * counted (spread_drops_* on the lead, tx_drops_* on the other).
 *
 * The RSS spread, for ports with a queue per lcore (port_rss.c): each
 * lcore reads and writes queue i of both ports itself. Where the NIC hashes
 * as lockstepd does (ls_flow_rss_hash: Toeplitz over the addresses, the
 * symmetric key), what lcore i reads is its own and the check costs a
 * look at the mbuf's hash; whatever lands on the wrong queue (a NIC that
 * hashes otherwise or not at all, the lab's af_packet fanout) is handed to
 * its owner's in ring, multi-producer, and frames for lockstepd itself
 * read off the fabric by another lcore go to the lead's (spread_to_lead).
 * A frame that came through a ring is never sorted again: no ping-pong.
 *
 * The soft spread's rings are single-producer, single-consumer: each
 * joins two lcores; the RSS spread's in rings take any lcore's frames.
 * Nothing here allocates; the rings are made at start.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include "bridge.h"
#include "ls_flow.h"

#define SPREAD_RING 2048          /* frames per ring: 200 us at 10 Mpps */

struct lsd_bridge_set lsd_bset;

int
lsd_spread_create(struct lsd_bridge *b)
{
	static const char *const side[2] = {"host", "fab"};
	int socket = (int)rte_lcore_to_socket_id(lsd_bset.lcore[b->li]);
	char name[RTE_RING_NAMESIZE];

	if (!b->ring_io && !b->rss)
		return 0;
	for (int s = 0; s < 2; s++) {
		snprintf(name, sizeof(name), "lsd_in_%s_%u", side[s], b->li);
		b->in[s] = rte_ring_create(name, SPREAD_RING, socket,
					   b->rss ? RING_F_SC_DEQ : RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (b->in[s] == NULL)
			return -ENOMEM;
		if (b->rss)
			continue;
		snprintf(name, sizeof(name), "lsd_out_%s_%u", side[s], b->li);
		b->out[s] = rte_ring_create(name, SPREAD_RING, socket,
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (b->out[s] == NULL)
			return -ENOMEM;
	}
	return 0;
}

static void
ring_drain_free(struct rte_ring *r)
{
	struct rte_mbuf *m[LSD_BURST];
	unsigned int n;

	while (r != NULL && (n = rte_ring_dequeue_burst(r, (void **)m, LSD_BURST, NULL)) > 0)
		rte_pktmbuf_free_bulk(m, n);
}

void
lsd_spread_free(struct lsd_bridge *b)
{
	for (int s = 0; s < 2; s++) {
		ring_drain_free(b->in[s]);
		ring_drain_free(b->out[s]);
		rte_ring_free(b->in[s]);
		rte_ring_free(b->out[s]);
		b->in[s] = b->out[s] = NULL;
	}
}

/* The lead's, in the RSS spread: what only it handles (probes and their
 * replies to our MAC, ARP and ND, multicast, the routers' answers to path
 * discovery), read off the fabric by another lcore. */
static inline bool
for_lead(const struct lsd_bridge *b, const uint8_t *f, uint32_t len)
{
	if (len < 14)
		return true;
	return memcmp(f, b->fab->mac.b, 6) == 0 || (f[0] & 1) != 0 || lsd_route_maybe(f, len);
}

/* The lcore of n that owns frame m read on side; FOR_LEAD: the lead's,
 * for lockstepd itself. */
#define FOR_LEAD LS_BRIDGE_MAX_LCORES
static inline unsigned int
owner(const struct lsd_bridge *b, int side, const struct rte_mbuf *m, unsigned int n)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct lsd_port *p = side == LSD_HOST ? b->host : b->fab;

	if (!b->rss)
		return (unsigned int)(((uint64_t)ls_flow_spread_hash(f, m->data_len) * n) >> 32);
	if (side == LSD_FAB && b->li != 0 && for_lead(b, f, m->data_len))
		return FOR_LEAD;
	if (p->rss_nic && (m->ol_flags & RTE_MBUF_F_RX_RSS_HASH))
		return ls_flow_rss_lcore(m->hash.rss, n);
	return ls_flow_rss_lcore(ls_flow_rss_hash(f, m->data_len), n);
}

uint16_t
lsd_spread_out(struct lsd_bridge *b, int side, struct rte_mbuf **m, uint16_t n)
{
	struct rte_mbuf *to[LS_BRIDGE_MAX_LCORES][LSD_BURST];
	/* 32 bytes, two vector stores (a loop to nl became rep stosb) */
	uint16_t cnt[LS_BRIDGE_MAX_LCORES] = {0};
	unsigned int nl = lsd_bset.n, me = b->li, j;
	uint16_t keep = 0;

	for (uint16_t i = 0; i < n; i++) {
		j = owner(b, side, m[i], nl);
		if (unlikely(j == FOR_LEAD)) {
			b->st.spread_to_lead++;
			j = 0;
		}
		if (j == me)
			m[keep++] = m[i];
		else
			to[j][cnt[j]++] = m[i];
	}
	for (j = 0; j < nl; j++) {
		unsigned int sent;

		if (cnt[j] == 0)
			continue;
		sent = rte_ring_enqueue_burst(lsd_bset.b[j]->in[side], (void **)to[j], cnt[j],
					      NULL);
		b->st.spread_out += sent;
		if (sent < cnt[j]) {
			*(side == LSD_HOST ? &b->st.spread_drops_host : &b->st.spread_drops_fabric) +=
				cnt[j] - sent;
			rte_pktmbuf_free_bulk(&to[j][sent], cnt[j] - sent);
		}
	}
	return keep;
}

void
lsd_spread_drain(struct lsd_bridge *b, unsigned int *work)
{
	struct rte_mbuf *m[LSD_BURST];

	for (unsigned int j = 1; j < lsd_bset.n; j++)
		for (int s = 0; s < 2; s++) {
			uint16_t n = (uint16_t)rte_ring_sc_dequeue_burst(lsd_bset.b[j]->out[s],
									 (void **)m, LSD_BURST, NULL);

			if (n == 0)
				continue;
			*work += n;
			lsd_bridge_send(b, s, m, n);
		}
}

uint64_t
lsd_spread_held(const struct lsd_bridge *b)
{
	return b->ring_io ? rte_ring_count(b->out[LSD_HOST]) + rte_ring_count(b->out[LSD_FAB]) : 0;
}
