/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's STAMP reflector (--reflect): the sink's host answers
 * lockstepd's probes, as a GPU host's own lockstepd would, so a test can
 * put a probe mesh and a data path on the same destination with one
 * process there (reflect.c).
 */
#ifndef LLD_REFLECT_H
#define LLD_REFLECT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "lld.h"
#include "ls_reflect.h"

struct lld_refl {
	uint16_t port;
	struct ls_reflect_port me;
	uint16_t err_est;
	bool any;          /* answer for every IPv4 address and MAC (--reflect-any) */
	struct rte_mbuf *out[LLD_BURST];
	unsigned int n_out;
	uint64_t reflected, generic, tx_full;
};

/* A reflector answering IPv4 STAMP test packets to UDP 862 for ip (network
 * order) on port; it announces ip with a gratuitous ARP from pool, so that
 * the fabric learns the port's MAC. NULL when out of memory. */
struct lld_refl *lld_refl_create(uint16_t port, uint32_t ip, struct rte_mempool *pool);
void lld_refl_free(struct lld_refl *r);

/* Whether m was a test packet for us: then it is reflected (owned). */
bool lld_refl_frame(struct lld_refl *r, struct rte_mbuf *m, uint64_t rx_ns);

/* Send the replies queued since the last flush. */
void lld_refl_flush(struct lld_refl *r);

/* Now on CLOCK_REALTIME, in ns. */
uint64_t lld_refl_now_ns(void);

json_t *lld_refl_json(const struct lld_refl *r);

#endif /* LLD_REFLECT_H */
