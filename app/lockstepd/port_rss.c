/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RSS spread's side of the ports (docs/datapath.md, "Many cores"): the
 * bridge's two ports with a queue per data-path lcore, lcore i on queue i
 * of both, and the NIC asked to hash as lockstepd does.
 *
 * What the NIC is asked: Toeplitz over the IP addresses only with the
 * symmetric key (ls_flow_rss_key), and a redirection table whose entry j
 * is (j mod 64) mod n, so that a hash h lands on queue ls_flow_rss_lcore(h)
 * on both ports, whatever each table's size. A NIC that takes all of it
 * hashes a frame and its answer alike and every lcore reads only its own
 * address pairs. Whatever it does not take (another key, ports in the hash,
 * a fixed table, or no RSS at all: the lab's af_packet spreads by the
 * kernel's fanout), the lcores check every frame's owner in software and
 * hand the others on (bridge_spread.c): slower, never wrong.
 *
 * The fabric port also gets, where rte_flow can, a rule sending frames to
 * our own MAC (probes, replies, ARP/ND answers) to queue 0, the lead's,
 * so that they are stamped at the lead's RX; elsewhere the lcore that
 * reads them hands them to the lead (counted).
 */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_flow.h>

#include "lockstepd.h"
#include "ls_flow.h"

/* What lockstepd asks the NIC to hash: the addresses, no ports. */
#define RSS_IP (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_FRAG_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_OTHER | \
		RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_FRAG_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_OTHER)
/* ... and what would put ports in it */
#define RSS_L4 (RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP | \
		RTE_ETH_RSS_NONFRAG_IPV4_SCTP | RTE_ETH_RSS_NONFRAG_IPV6_TCP | \
		RTE_ETH_RSS_NONFRAG_IPV6_UDP | RTE_ETH_RSS_NONFRAG_IPV6_SCTP | \
		RTE_ETH_RSS_L4_SRC_ONLY | RTE_ETH_RSS_L4_DST_ONLY)

static bool
is_bridge_port(const struct ls_conf_port *cp)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;

	return bc->enabled && (strcmp(cp->name, bc->host_port) == 0 ||
			       strcmp(cp->name, bc->fabric_port) == 0);
}

/* Can port id give n lcores a queue each, with RSS? */
static bool
rss_able(uint16_t id, unsigned int n, const char **why)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(id, &info) != 0) {
		*why = "no device information";
		return false;
	}
	if (info.max_rx_queues < n || info.max_tx_queues < n) {
		*why = "fewer queues than lcores";
		return false;
	}
	if ((info.flow_type_rss_offloads & RSS_IP) == 0) {
		*why = "no RSS over IP addresses";
		return false;
	}
	return true;
}

int
lsd_rss_plan(uint16_t host_id, uint16_t fab_id)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;
	unsigned int n = bc->n_lcores;
	const char *why = NULL;

	/* (port.c's bridge_plan: a bridge of two lcores or more, one queue set) */
	if (bc->spread == LS_SPREAD_SOFT)
		return 0;
	if (bc->spread == LS_SPREAD_AUTO &&
	    (!rss_able(host_id, n, &why) || !rss_able(fab_id, n, &why))) {
		LSD_LOG(INFO, "bridge: the soft spread (a port has %s)", why);
		return 0;
	}
	lsd.bridge_queues = (uint16_t)n;
	return 0;
}

uint16_t
lsd_rss_queues(const struct ls_conf_port *cp)
{
	return is_bridge_port(cp) ? lsd.bridge_queues : 1;
}

void
lsd_rss_conf(struct lsd_port *p, const struct rte_eth_dev_info *info, struct rte_eth_conf *conf)
{
	static uint8_t key[LS_FLOW_RSS_KEY_LEN];
	uint64_t hf = info->flow_type_rss_offloads & RSS_IP;

	if (lsd_rss_queues(p->conf) < 2)
		return;
	if (hf == 0) {
		/* spread "rss" on a port with no RSS: it spreads as it does */
		LSD_LOG(WARNING, "port %s: %s has no RSS over IP addresses: its queues fill by "
		       "its own means and every frame's lcore is checked in software",
		       p->conf->name, p->driver);
		return;
	}
	memcpy(key, ls_flow_rss_key, sizeof(key));
	conf->rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	conf->rx_adv_conf.rss_conf.rss_key = key;
	conf->rx_adv_conf.rss_conf.rss_key_len =
		info->hash_key_size != 0 && info->hash_key_size <= sizeof(key) ?
		info->hash_key_size : 40;
	conf->rx_adv_conf.rss_conf.rss_hf = hf;
	conf->rxmode.offloads |= info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_RSS_HASH;
}

/* Entry j -> (j mod 64) mod n: ls_flow_rss_lcore's mapping at any size. */
static int
rss_reta(struct lsd_port *p, const struct rte_eth_dev_info *info, unsigned int n)
{
	struct rte_eth_rss_reta_entry64 r[RTE_ETH_RSS_RETA_SIZE_512 / RTE_ETH_RETA_GROUP_SIZE];
	unsigned int size = info->reta_size;

	if (size < 64 || size > RTE_ETH_RSS_RETA_SIZE_512 || (size & (size - 1)) != 0)
		return -ENOTSUP;
	memset(r, 0, sizeof(r));
	for (unsigned int j = 0; j < size; j++) {
		r[j / RTE_ETH_RETA_GROUP_SIZE].mask |= 1ULL << (j % RTE_ETH_RETA_GROUP_SIZE);
		r[j / RTE_ETH_RETA_GROUP_SIZE].reta[j % RTE_ETH_RETA_GROUP_SIZE] =
			(uint16_t)ls_flow_rss_lcore(j, n);
	}
	return rte_eth_dev_rss_reta_update(p->port_id, r, (uint16_t)size);
}

/* Did the NIC take the key and the hash types? Then its mbufs' hash is
 * lockstepd's (RTE_MBUF_F_RX_RSS_HASH) and no lcore hashes again. */
static bool
rss_took(struct lsd_port *p, const struct rte_eth_dev_info *info)
{
	uint8_t key[64];
	struct rte_eth_rss_conf rc = {.rss_key = key, .rss_key_len = sizeof(key)};
	uint8_t len = info->hash_key_size != 0 && info->hash_key_size <= sizeof(key) ?
		      info->hash_key_size : 40;

	if (rte_eth_dev_rss_hash_conf_get(p->port_id, &rc) != 0)
		return false;
	if ((rc.rss_hf & RSS_IP) == 0 || (rc.rss_hf & RSS_L4) != 0)
		return false;
	return memcmp(key, ls_flow_rss_key, RTE_MIN(len, (uint8_t)sizeof(key))) == 0;
}

/* Frames to our MAC to queue 0 (the lead's), where the NIC can. */
static bool
own_to_lead(struct lsd_port *p)
{
	struct rte_flow_attr attr = {.ingress = 1};
	struct rte_flow_item_eth spec, mask;
	struct rte_flow_action_queue q = {.index = 0};
	struct rte_flow_item pat[] = {
		{.type = RTE_FLOW_ITEM_TYPE_ETH, .spec = &spec, .mask = &mask},
		{.type = RTE_FLOW_ITEM_TYPE_END},
	};
	struct rte_flow_action act[] = {
		{.type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &q},
		{.type = RTE_FLOW_ACTION_TYPE_END},
	};
	struct rte_flow_error err;

	memset(&spec, 0, sizeof(spec));
	memset(&mask, 0, sizeof(mask));
	memcpy(spec.hdr.dst_addr.addr_bytes, p->mac.b, 6);
	memset(mask.hdr.dst_addr.addr_bytes, 0xff, 6);
	if (rte_flow_validate(p->port_id, &attr, pat, act, &err) != 0)
		return false;
	return rte_flow_create(p->port_id, &attr, pat, act, &err) != NULL;
}

void
lsd_rss_started(struct lsd_port *p)
{
	unsigned int n = lsd_rss_queues(p->conf);
	struct rte_eth_dev_info info;
	int rc;

	if (n < 2 || rte_eth_dev_info_get(p->port_id, &info) != 0)
		return;
	if ((info.flow_type_rss_offloads & RSS_IP) != 0) {
		rc = rss_reta(p, &info, n);
		if (rc < 0)
			LSD_LOG(WARNING, "port %s: redirection table not set (%s): frames on "
			       "the wrong lcore are handed on", p->conf->name, strerror(-rc));
		p->rss_nic = rc == 0 && rss_took(p, &info);
	}
	if (strcmp(p->conf->name, lsd.cfg.bridge.fabric_port) == 0)
		p->own_to_lead = own_to_lead(p);
	LSD_LOG(INFO, "port %s: %u queues, %s%s", p->conf->name, n,
	       p->rss_nic ? "the NIC's RSS hash is lockstepd's" :
	       "each frame's lcore checked in software",
	       p->own_to_lead ? ", frames to our MAC to queue 0 (rte_flow)" : "");
}
