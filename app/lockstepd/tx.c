/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit helpers every lcore-side room shares (the burst loop, the
 * sender, neighbour resolution): one tx_burst with the unsent rest freed and
 * counted, and the request that a frame leave at its stamp.
 *
 * They sit below the rooms that send so that none of those has to call
 * back into the burst loop's file; LTO inlines them into their callers.
 */
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include "lockstepd.h"

void
lsd_tx_at(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf *m, uint64_t at)
{
	uint8_t *t;

	if (p->tx_sched) {
		/* the NIC holds the frame until its clock reads at */
		*RTE_MBUF_DYNFIELD(m, p->tx_ts_field, rte_mbuf_timestamp_t *) = at;
		m->ol_flags |= p->tx_ts_flag;
		lc->st.tx_at++;
		return;
	}
	/* the frame's own bytes are final (checksums, capture) by now */
	t = (uint8_t *)rte_pktmbuf_append(m, LS_RX_TRAILER_LEN);
	if (unlikely(t == NULL)) {
		lc->st.tx_at_no_room++;
		return;
	}
	ls_tx_trailer_put(t, at);
	lc->st.tx_at++;
}

/*
 * Tag our frames on a VLAN port: m->vlan_tci as the builder left it (a
 * probe: its peer's PCP; a reply: the request's tag, so it comes back in
 * the class it went out in), else the port's default; the VID is always
 * the port's. The NIC inserts the tag when it can; otherwise
 * rte_vlan_insert moves the two MAC addresses 4 bytes into the headroom.
 * A frame that cannot take a tag (no headroom, shared) is dropped and
 * counted rather than sent untagged into the wrong VLAN.
 */
static uint16_t
vlan_tag(struct lsd_lcore *lc, const struct lsd_port *p, struct rte_mbuf **m, uint16_t n)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *x = m[i];

		/* a builder that chose a tag set its VID; fresh mbufs hold 0 */
		x->vlan_tci = (uint16_t)((((x->vlan_tci & 0x0fff) ? x->vlan_tci : p->vlan_tci) &
					  0xf000) | p->vlan);
		if (p->vlan_offload) {
			x->ol_flags |= RTE_MBUF_F_TX_VLAN;
		} else if (unlikely(rte_vlan_insert(&x) != 0)) {
			lc->st.tx_vlan_failed++;
			rte_pktmbuf_free(x);
			continue;
		}
		m[k++] = x;
	}
	return k;
}

void
lsd_tx_frames(struct lsd_lcore *lc, struct lsd_port *p, struct rte_mbuf **m,
	     uint16_t n, uint64_t *counter)
{
	uint16_t sent;

	if (p->vlan != 0)
		n = vlan_tag(lc, p, m, n);
	sent = ls_app_tx(&p->gate, p->port_id, m, n);

	*counter += sent;
	if (unlikely(sent < n)) {
		lc->st.tx_dropped += n - sent;
		rte_pktmbuf_free_bulk(&m[sent], n - sent);
	}
}
