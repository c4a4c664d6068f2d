/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's responder (--respond): the sink answers RoCEv2 RC
 * requests as the receiving NIC would, so that whatever sits in between
 * (lockstepd's congestion control) sees real reverse traffic:
 *  - an RC ACK per request, to the requester's QP, with the request's PSN;
 *  - for a CE-marked request, a CNP to the requester's QP (the notification
 *    point), at most one per flow per --cnp-us, as NICs limit theirs.
 * The requester's QP is not in the request (its BTH names ours); we take it
 * to be the request's destination QP with bit 23 flipped, which is all a
 * device in the middle needs: a consistent pairing it can learn.
 * Answers leave on the port the request came in on, MACs mirrored.
 */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "ls_flow.h"
#include "ls_roce.h"
#include "lld.h"
#include "lld_respond.h"

#define REQUESTER_QP(qp) ((qp) ^ 0x800000u)
#define CNP_DSCP 48

struct lld_resp *
lld_resp_create(uint16_t port, struct rte_mempool *pool, uint32_t n_flows, uint64_t cnp_ticks)
{
	struct lld_resp *r = rte_zmalloc("lld_resp", sizeof(*r), 64);

	if (r == NULL)
		return NULL;
	r->last_cnp = rte_zmalloc("lld_resp_cnp", sizeof(uint64_t) * n_flows, 64);
	if (r->last_cnp == NULL) {
		rte_free(r);
		return NULL;
	}
	r->port = port;
	r->pool = pool;
	r->n_flows = n_flows;
	r->cnp_ticks = cnp_ticks;
	return r;
}

void
lld_resp_free(struct lld_resp *r)
{
	if (r == NULL)
		return;
	rte_free(r->last_cnp);
	rte_free(r);
}

/* An answer to request fr (its parse pk): MACs and VLAN mirrored, then the
 * ACK or CNP from the IP header on. */
static void
answer(struct lld_resp *r, const uint8_t *fr, const struct ls_flow_pkt *pk, bool cnp)
{
	const uint8_t *bth = fr + pk->bth_off;
	uint32_t qp = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
	uint32_t psn = (uint32_t)bth[9] << 16 | (uint32_t)bth[10] << 8 | bth[11];
	struct ls_roce_cnp_params p = {
		.dscp = cnp ? CNP_DSCP : pk->dscp, .pkey = 0xffff,
		.dest_qp = REQUESTER_QP(qp), .sport = ls_get_be16(fr + pk->l4_off),
	};
	struct rte_mbuf *m;
	uint8_t *o;
	int n;

	if (r->n_out == LLD_BURST || (m = rte_pktmbuf_alloc(r->pool)) == NULL) {
		r->no_mbuf++;
		return;
	}
	o = rte_pktmbuf_mtod(m, uint8_t *);
	ls_flow_reply_hdr(fr, pk, o, &p.src, &p.dst);
	n = cnp ? ls_roce_cnp_build(o + pk->l3_off, 128, &p) :
		ls_roce_ack_build(o + pk->l3_off, 128, &p, psn, psn);
	if (n < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = m->pkt_len = pk->l3_off + (uint32_t)n;
	r->out[r->n_out++] = m;
	if (cnp)
		r->cnps++;
	else
		r->acks++;
}

void
lld_resp_frame(struct lld_resp *r, const uint8_t *fr, uint32_t len, uint32_t flow, uint64_t now)
{
	struct ls_flow_pkt pk;

	if (ls_flow_parse(fr, len, &pk) != LS_FLOW_IP || pk.kind != LS_FLOW_K_ROCE ||
	    pk.bth_opcode >> 5 != 0)  /* RC requests only */
		return;
	if (pk.ecn == 3 && flow < r->n_flows) {
		r->ce++;
		if (r->last_cnp[flow] == 0 || now - r->last_cnp[flow] >= r->cnp_ticks) {
			r->last_cnp[flow] = now ? now : 1;
			answer(r, fr, &pk, true);
		}
	}
	answer(r, fr, &pk, false);
}

void
lld_resp_flush(struct lld_resp *r)
{
	lld_send_or_drop(r->port, r->out, (uint16_t)r->n_out, &r->tx_full);
	r->n_out = 0;
}

json_t *
lld_resp_json(const struct lld_resp *r)
{
	return json_pack("{sI sI sI sI sI}", "acks", (json_int_t)r->acks,
			 "cnps", (json_int_t)r->cnps, "ce", (json_int_t)r->ce,
			 "no_mbuf", (json_int_t)r->no_mbuf, "tx_full", (json_int_t)r->tx_full);
}
