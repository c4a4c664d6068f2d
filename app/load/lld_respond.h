/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's responder: RC ACKs and CNPs as the receiving NIC sends
 * them (respond.c). No allocation per frame beyond the answers' mbufs.
 */
#ifndef LLD_RESPOND_H
#define LLD_RESPOND_H

#include <stdint.h>

#include <jansson.h>

#include <rte_mempool.h>

#include "lld.h"

struct lld_resp {
	uint16_t port;
	struct rte_mempool *pool;
	uint32_t n_flows;
	uint64_t cnp_ticks;
	uint64_t *last_cnp;            /* [n_flows] */
	struct rte_mbuf *out[LLD_BURST];
	unsigned int n_out;
	uint64_t acks, cnps, ce, no_mbuf, tx_full;
};

/* @return a responder answering on port, or NULL (no memory). */
struct lld_resp *lld_resp_create(uint16_t port, struct rte_mempool *pool, uint32_t n_flows,
				 uint64_t cnp_ticks);
void lld_resp_free(struct lld_resp *r);

/* A lockstep-load frame of flow `flow` arrived at now: answer it if RC. */
void lld_resp_frame(struct lld_resp *r, const uint8_t *fr, uint32_t len, uint32_t flow,
		    uint64_t now);

/* Send the answers built since the last flush. */
void lld_resp_flush(struct lld_resp *r);

/* The report's "respond" member. */
json_t *lld_resp_json(const struct lld_resp *r);

#endif /* LLD_RESPOND_H */
