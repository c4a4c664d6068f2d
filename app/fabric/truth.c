/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ground truth: what the model did, as records for the control thread.
 *
 * The lcore fills fixed-size records (a probe's drop or link crossing, a
 * link going up or down, a queue depth that changed) from a mempool and
 * hands them over an rte_ring; the control thread writes them out as JSON
 * lines and returns them. Nothing here allocates or blocks: a full ring or
 * pool costs a record (counted in truth_dropped), never a packet.
 */
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "fabric.h"
#include "ls_pkt.h"
#include "ls_stamp.h"

void
lsf_probe_record(struct lsf_truth *t, const struct ls_pkt_info *pi,
		 const struct rte_mbuf *m)
{
	const uint8_t *pl = rte_pktmbuf_mtod(m, const uint8_t *) + pi->payload_off;

	t->family = pi->src.family;
	memcpy(t->src, pi->src.a, 16);
	memcpy(t->dst, pi->dst.a, 16);
	t->sport = pi->sport;
	t->dport = pi->dport;
	t->reflected = pi->sport == LS_STAMP_PORT;
	t->seq = 0;
	/* The sender's sequence number: at 0 in a test packet, at 24 in a
	 * reflected one (RFC 8762). Shorter payloads on port 862 are not STAMP
	 * (lockstepd's route traces): they have none. */
	t->stamp = (pi->dport == LS_STAMP_PORT || t->reflected) &&
		   pi->payload_len >= LS_STAMP_BASE_LEN;
	if (t->stamp) {
		const uint8_t *q = pl + (t->reflected ? 24 : 0);

		t->seq = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
	}
}

void
lsf_truth_push(const struct lsf_truth *t)
{
	void *obj;

	/* Records come from a mempool and go back to it once the control
	 * thread has written them: no allocation here. */
	if (rte_mempool_get(fab.truth_pool, &obj) != 0) {
		fab.st.truth_dropped++;
		return;
	}
	memcpy(obj, t, sizeof(*t));
	if (rte_ring_mp_enqueue(fab.truth, obj) != 0) {
		rte_mempool_put(fab.truth_pool, obj);
		fab.st.truth_dropped++;
	}
}

/* What each channel's last depth record said: only changes are written. */
static uint64_t last_depth[LS_FAB_MAX_CHANS];

void
lsf_sample_depths(uint64_t now)
{
	for (uint16_t c = 0; c < fab.fab->n_chans; c++) {
		uint64_t d = ls_fab_chan_depth(&fab.fab->chans[c], now);

		/* Only what changed: an idle fabric writes nothing. */
		if (d != last_depth[c]) {
			struct lsf_truth r = {.type = LSF_T_DEPTH, .chan = c, .t_ns = now, .depth = d};

			lsf_truth_push(&r);
			last_depth[c] = d;
		}
	}
}

/* Whether the next depth sample has anything to record: a queue holds bytes
 * or its last sample does not read 0 yet. An idle fabric records nothing. */
bool
lsf_depths_pending(uint64_t now)
{
	for (uint16_t c = 0; c < fab.fab->n_chans; c++)
		if (last_depth[c] != 0 || ls_fab_chan_depth(&fab.fab->chans[c], now) != 0)
			return true;
	return false;
}

