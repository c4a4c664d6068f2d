/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's STAMP reflector (--reflect): RFC 8762 stateless
 * reflection of IPv4 test packets on the RX port, by lib/reflect's fast
 * path (the one lockstepd's reflector uses): T2 on receipt, T3 just before
 * the burst leaves, both on the host's CLOCK_REALTIME, which lockstepd's
 * software clock follows too (one-way delays read as plausible figures).
 * What the fast path declines goes the long way (generic); VLAN-tagged
 * frames are left to the sink, which counts them as others.
 */
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "ls_pkt.h"
#include "ls_stamp.h"
#include "lld.h"
#include "lld_reflect.h"

#define STAMP_PORT 862

uint64_t
lld_refl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* Who has ip? asked by ip itself: the fabric learns our MAC from it. */
static void
announce(struct lld_refl *r, struct rte_mempool *pool)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct ls_mac mac;
	struct ls_addr a = {.family = LS_AF_INET};
	uint8_t buf[64];
	int len;

	if (m == NULL)
		return;
	memcpy(mac.b, r->me.mac, 6);
	memcpy(a.a, &r->me.ip, 4);
	len = ls_pkt_build_arp(buf, sizeof(buf), LS_ARP_REQUEST, &mac, &a, NULL, &a);
	if (len < 60) {
		memset(buf + len, 0, (size_t)(60 - len));
		len = 60;
	}
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), buf, (size_t)len);
	if (rte_eth_tx_burst(r->port, 0, &m, 1) != 1)
		rte_pktmbuf_free(m);
}

struct lld_refl *
lld_refl_create(uint16_t port, uint32_t ip, struct rte_mempool *pool)
{
	struct lld_refl *r = rte_zmalloc("lld_refl", sizeof(*r), 64);
	struct rte_ether_addr ea;

	if (r == NULL)
		return NULL;
	r->port = port;
	rte_eth_macaddr_get(port, &ea);
	memcpy(r->me.mac, ea.addr_bytes, 6);
	r->me.ip = ip;
	r->me.plen = 32;
	r->me.dst_port = STAMP_PORT;
	r->err_est = ls_stamp_err_est(false, true, 12, 1);
	announce(r, pool);
	return r;
}

void
lld_refl_free(struct lld_refl *r)
{
	if (r == NULL)
		return;
	rte_pktmbuf_free_bulk(r->out, r->n_out);
	rte_free(r);
}

/* What the fast path declines: lockstepd's probes that ask for the
 * reflector's sync state (TLV 253), IPv6. RFC 8762/8972 the long way: turn
 * the frame around, reflect the base packet and the TLVs, and flag the sync
 * TLV U (this reflector keeps no clock state to give). Untagged only. */
static bool
generic(struct lld_refl *r, uint8_t *f, uint32_t len, uint64_t rx_ns)
{
	struct ls_pkt_info pi;
	struct ls_stamp_tlv_result res;
	struct ls_mac mac;
	uint8_t *pl;

	if (ls_pkt_parse(f, len, true, &pi) != LS_PKT_UDP || pi.dport != STAMP_PORT ||
	    pi.l3_off != 14 || memcmp(f, r->me.mac, 6) != 0 ||
	    ls_reflect_src_port_bad(pi.sport, STAMP_PORT) || pi.payload_len < LS_STAMP_BASE_LEN ||
	    (pi.dst.family == LS_AF_INET && memcmp(pi.dst.a, &r->me.ip, 4) != 0))
		return false;
	pl = f + pi.payload_off;
	if (ls_stamp_reflect_inplace(pl, pi.payload_len, rx_ns, lld_refl_now_ns(), r->err_est,
				     pi.ttl) < 0)
		return false;
	ls_stamp_reflect_tlvs(pl + LS_STAMP_BASE_LEN, pi.payload_len - LS_STAMP_BASE_LEN, &res);
	if (res.sync_off >= 0)
		pl[LS_STAMP_BASE_LEN + res.sync_off - LS_STAMP_TLV_HDR_LEN] |= LS_STAMP_TLV_U;
	memcpy(mac.b, r->me.mac, 6);
	ls_pkt_udp_turnaround(f, &pi, &mac, 255);
	ls_pkt_udp_finalize(f, pi.payload_off + pi.payload_len, pi.dst.family);
	return true;
}

static void
queue(struct lld_refl *r, struct rte_mbuf *m, bool fast)
{
	m->ol_flags = 0;
	m->hash.usr = fast;    /* its T3 is written at the flush */
	if (r->n_out == LLD_BURST)
		lld_refl_flush(r);
	r->out[r->n_out++] = m;
}

bool
lld_refl_frame(struct lld_refl *r, struct rte_mbuf *m, uint64_t rx_ns)
{
	struct ls_reflect_v4 v;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);

	/* --reflect-any: this frame's destination is who we are */
	if (r->any && m->data_len >= 34 && f[12] == 0x08 && f[13] == 0x00) {
		memcpy(r->me.mac, f, 6);
		memcpy(&r->me.ip, f + 30, 4);
	}
	/* a sync TLV asks for clock state we have not got: the long way
	 * flags it U (unrecognized), so the asker knows */
	if (ls_reflect_v4_check(f, m->data_len, &r->me, &v) && v.sync_off == 0) {
		ls_reflect_v4_apply(f, &v, &r->me, rx_ns, r->err_est, true, 255);
		rte_pktmbuf_trim(m, (uint16_t)(m->data_len -
				 (LS_REFLECT_V4_PAYLOAD_OFF + v.payload_len)));
		queue(r, m, true);
		return true;
	}
	if (!generic(r, f, m->data_len, rx_ns))
		return false;
	queue(r, m, false);
	r->generic++;
	return true;
}

void
lld_refl_flush(struct lld_refl *r)
{
	uint64_t t3;

	if (r->n_out == 0)
		return;
	t3 = lld_refl_now_ns();
	for (unsigned int i = 0; i < r->n_out; i++)
		if (r->out[i]->hash.usr)
			ls_reflect_v4_put_t3(rte_pktmbuf_mtod(r->out[i], uint8_t *), t3, true);
	r->reflected += lld_send_or_drop(r->port, r->out, (uint16_t)r->n_out, &r->tx_full);
	r->n_out = 0;
}

json_t *
lld_refl_json(const struct lld_refl *r)
{
	return json_pack("{s:I, s:I, s:I}", "reflected", (json_int_t)r->reflected,
			 "generic", (json_int_t)r->generic, "tx_full", (json_int_t)r->tx_full);
}
