/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port set-up: find (or hot-plug) each configured device, configure one RX
 * and one TX queue, pick the MAC we answer for, and start it.
 *
 * A port is named in the config either by its ethdev name ("net_memif0",
 * "0000:03:00.0") or by full devargs ("net_memif0,role=client,socket=...").
 * When no ethdev of that name exists yet we probe the devargs ourselves, so
 * a config file alone is enough and EAL --vdev/-a arguments stay optional.
 *
 * One RX and one TX queue per port, owned by its lcore; the data path's
 * two ports have one per data-path lcore when they spread by RSS
 * (port_rss.c), queue 0 the lead's, where the probes come and go.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "../common/ls_app.h"
#include "lockstepd.h"

#define LS_PORT_START_TRIES 100 /* x 100 ms */

static int
port_lookup(const struct ls_conf_port *cp, uint16_t *port_id)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	const char *comma = strchr(cp->dev, ',');
	size_t n = comma ? (size_t)(comma - cp->dev) : strlen(cp->dev);
	int rc;

	if (n >= sizeof(name))
		return -ENAMETOOLONG;
	memcpy(name, cp->dev, n);
	name[n] = '\0';
	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	rc = rte_dev_probe(cp->dev);
	if (rc < 0) {
		LSD_LOG(ERR, "port %s: cannot probe device \"%s\": %s", cp->name,
		       cp->dev, strerror(-rc));
		return rc;
	}
	if (rte_eth_dev_get_port_by_name(name, port_id) != 0) {
		LSD_LOG(ERR, "port %s: device \"%s\" probed but no ethdev named \"%s\"",
		       cp->name, cp->dev, name);
		return -ENODEV;
	}
	return 0;
}

/* The IPv6 link-local address we answer ND for: EUI-64 from the MAC. */
static void
make_link_local(const struct ls_mac *mac, struct ls_addr *ll)
{
	memset(ll, 0, sizeof(*ll));
	ll->family = LS_AF_INET6;
	ll->a[0] = 0xfe;
	ll->a[1] = 0x80;
	ll->a[8] = mac->b[0] ^ 0x02;
	ll->a[9] = mac->b[1];
	ll->a[10] = mac->b[2];
	ll->a[11] = 0xff;
	ll->a[12] = 0xfe;
	ll->a[13] = mac->b[3];
	ll->a[14] = mac->b[4];
	ll->a[15] = mac->b[5];
}

/* Offloads we use when the device has them, then rte_eth_dev_configure. */
static int
port_configure(struct lsd_port *p, const struct ls_conf_port *cp,
	       const struct rte_eth_dev_info *info, bool want_hw_ts)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	if (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM &&
	    info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_UDP_CKSUM |
					RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
		p->rx_cksum_offload = true;
	}
	if (want_hw_ts && (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP))
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	if (lsd.cfg.clock.tx_sched) {
		if (!(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP)) {
			LSD_LOG(ERR, "port %s: %s does not send on a timestamp "
			       "(RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP), which clock.tx_sched needs "
			       "(mlx5: ConnectX-6 Dx with devarg tx_pp, or ConnectX-7 and later)",
			       cp->name, p->driver);
			return -ENOTSUP;
		}
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP;
	}
	/* Jumbo frames (issue 30 item 11: a 9000 MTU with 2 KB mbufs): when a
	 * frame is longer than one mbuf holds, RX scatter into a chain and
	 * chains on TX, where the port offers them (the data path takes
	 * chained frames); where it does not, say so. The MTU is set after
	 * the queues (port_start). */
	{
		uint32_t room = rte_pktmbuf_data_room_size(lsd.pool) - RTE_PKTMBUF_HEADROOM;
		uint32_t frame = cp->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + RTE_VLAN_HLEN;

		if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
			conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
		if (frame > room && (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
			conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
		else if (frame > room)
			LSD_LOG(WARNING, "port %s: MTU %u makes frames of up to %u bytes, an mbuf "
			       "holds %u and %s offers no RX scatter offload: unless it chains "
			       "by itself (memif does), longer frames are dropped", cp->name,
			       cp->mtu, frame, room, p->driver);
	}
	/* our frames' 802.1Q tag: the NIC inserts it where it can, else tx.c */
	p->vlan = cp->vlan;
	p->vlan_tci = (uint16_t)(lsd.cfg.probe.pcp << 13 | cp->vlan);
	if (cp->vlan != 0 && (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_VLAN_INSERT)) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_VLAN_INSERT;
		p->vlan_offload = true;
	}
	lsd_rss_conf(p, info, &conf);
	rc = rte_eth_dev_configure(p->port_id, lsd_rss_queues(cp), lsd_rss_queues(cp), &conf);
	if (rc < 0) {
		LSD_LOG(ERR, "port %s: configure failed: %s", cp->name, strerror(-rc));
		return rc;
	}
	/* configuring the offload registered the field and flag: look them up */
	if (lsd.cfg.clock.tx_sched) {
		if (rte_mbuf_dyn_tx_timestamp_register(&p->tx_ts_field, &p->tx_ts_flag) != 0) {
			LSD_LOG(ERR, "port %s: no TX timestamp dynfield: %s", cp->name,
			       rte_strerror(rte_errno));
			return -ENOTSUP;
		}
		p->tx_sched = true;
	}
	return 0;
}

/* One RX and one TX queue, the MTU, and start (memif clients wait). */
static int
port_start(struct lsd_port *p, const struct ls_conf_port *cp)
{
	uint16_t nb_rx = cp->rx_desc, nb_tx = cp->tx_desc;
	int rc;

	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nb_rx, &nb_tx);
	if (rc < 0)
		return rc;
	for (uint16_t q = 0; q < lsd_rss_queues(cp); q++) {
		rc = rte_eth_rx_queue_setup(p->port_id, q, nb_rx,
					    rte_eth_dev_socket_id(p->port_id), NULL, lsd.pool);
		if (rc < 0) {
			LSD_LOG(ERR, "port %s: RX queue %u setup failed: %s", cp->name, q,
			       strerror(-rc));
			return rc;
		}
		rc = rte_eth_tx_queue_setup(p->port_id, q, nb_tx,
					    rte_eth_dev_socket_id(p->port_id), NULL);
		if (rc < 0) {
			LSD_LOG(ERR, "port %s: TX queue %u setup failed: %s", cp->name, q,
			       strerror(-rc));
			return rc;
		}
	}
	if (cp->mtu != 1500) {
		rc = rte_eth_dev_set_mtu(p->port_id, cp->mtu);
		if (rc < 0)
			LSD_LOG(WARNING, "port %s: cannot set MTU %u: %s", cp->name,
			       cp->mtu, strerror(-rc));
	}
	/* A memif client cannot start before its server listens; appliances
	 * connected back to back come up in any order, so wait a little. */
	for (int tries = 0; (rc = rte_eth_dev_start(p->port_id)) < 0 &&
	     tries < LS_PORT_START_TRIES && !lsd.quit; tries++) {
		if (tries == 0)
			LSD_LOG(INFO, "port %s: start failed (%s), retrying for %d s",
			       cp->name, strerror(-rc), LS_PORT_START_TRIES / 10);
		rte_delay_us_sleep(100 * 1000);
	}
	if (rc < 0) {
		LSD_LOG(ERR, "port %s: start failed: %s", cp->name, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Our MAC and addresses, and what the reflector's fast path matches. */
static void
port_addresses(struct lsd_port *p, const struct ls_conf_port *cp)
{
	struct rte_ether_addr ea;
	int rc;

	/* The configured MAC wins; when the PMD cannot take it, listen
	 * promiscuously and filter in software instead. */
	if (cp->has_mac) {
		memcpy(ea.addr_bytes, cp->mac.b, 6);
		rc = rte_eth_dev_default_mac_addr_set(p->port_id, &ea);
		if (rc < 0) {
			LSD_LOG(INFO, "port %s: %s cannot set MAC (%s); using promiscuous mode",
			       cp->name, p->driver, strerror(-rc));
			rte_eth_promiscuous_enable(p->port_id);
		}
		p->mac = cp->mac;
	} else {
		rte_eth_macaddr_get(p->port_id, &ea);
		memcpy(p->mac.b, ea.addr_bytes, 6);
	}
	/* ND solicitations go to solicited-node multicast groups. */
	if (cp->ipv6.addr.family)
		rte_eth_allmulticast_enable(p->port_id);
	p->v4 = cp->ipv4;
	p->v6 = cp->ipv6;
	if (p->v4.addr.family && lsd.cfg.reflector.enabled) {
		p->fast_ok = true;
		memcpy(p->fast.mac, p->mac.b, 6);
		memcpy(&p->fast.ip, p->v4.addr.a, 4);
		p->fast.plen = p->v4.plen;
		p->fast.dst_port = lsd.cfg.probe.dst_port;
	}
	make_link_local(&p->mac, &p->v6_ll);
}

static int
port_setup(struct lsd_port *p, const struct ls_conf_port *cp, bool want_hw_ts)
{
	struct rte_eth_dev_info info;
	int rc;

	memset(p, 0, sizeof(*p));
	p->conf = cp;
	p->lcore = cp->lcore < 0 ? rte_get_main_lcore() : (unsigned int)cp->lcore;
	if (!rte_lcore_is_enabled(p->lcore)) {
		LSD_LOG(ERR, "port %s: lcore %u is not enabled in the EAL core list",
		       cp->name, p->lcore);
		return -EINVAL;
	}
	rc = port_lookup(cp, &p->port_id);
	if (rc < 0)
		return rc;
	rc = rte_eth_dev_info_get(p->port_id, &info);
	if (rc < 0)
		return rc;
	snprintf(p->driver, sizeof(p->driver), "%s", info.driver_name);
	p->tx_per_packet = strcmp(p->driver, "net_pcap") == 0 && cp->kernel_stamps;
	ls_app_gate_init(&p->gate, p->port_id);
	rc = port_configure(p, cp, &info, want_hw_ts);
	if (rc == 0)
		rc = port_start(p, cp);
	if (rc < 0)
		return rc;
	port_addresses(p, cp);
	lsd_rss_started(p);
	return 0;
}

/* A memif port that connects out: the PMD's default role, or role=client
 * (role=slave in older DPDKs). */
static bool
memif_client(const struct lsd_port *p)
{
	return strcmp(p->driver, "net_memif") == 0 &&
	       strstr(p->conf->dev, "role=server") == NULL &&
	       strstr(p->conf->dev, "role=master") == NULL;
}

/*
 * A memif server answers a client that connects after the server's device
 * is probed but before it is started with "ID not found", and the client's
 * PMD never tries again: that link stays down for good (seen once in 27
 * test runs with a busy CPU, n1-n2 of a four-node mesh; appliances wired
 * back to back come up in any order). So at start-up, give each client
 * whose link is still down a second after its last start a fresh start,
 * which connects anew, until every link is up or LS_PORT_START_TRIES
 * tenths of a second pass. Only here, before any lcore polls the ports:
 * stopping a port under a running rx_burst is not safe.
 */
static void
memif_clients_connect(void)
{
	unsigned int since[LS_MAX_PORTS] = {0};
	unsigned int tries, restarts = 0;

	for (tries = 0; tries < LS_PORT_START_TRIES && !lsd.quit; tries++) {
		bool all_up = true;

		for (unsigned int i = 0; i < lsd.n_ports; i++) {
			struct lsd_port *p = &lsd.ports[i];
			struct rte_eth_link link;

			if (!memif_client(p) ||
			    (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
			     link.link_status == RTE_ETH_LINK_UP))
				continue;
			all_up = false;
			if (++since[i] < 10)
				continue;
			since[i] = 0;
			restarts++;
			LSD_LOG(INFO, "port %s: memif link still down; connecting again",
			       p->conf->name);
			rte_eth_dev_stop(p->port_id);
			if (rte_eth_dev_start(p->port_id) < 0)
				LSD_LOG(INFO, "port %s: start failed; trying again",
				       p->conf->name);
		}
		if (all_up)
			return;
		rte_delay_us_sleep(100 * 1000);
	}
	for (unsigned int i = 0; i < lsd.n_ports; i++) {
		struct rte_eth_link link;

		if (memif_client(&lsd.ports[i]) &&
		    (rte_eth_link_get_nowait(lsd.ports[i].port_id, &link) != 0 ||
		     link.link_status != RTE_ETH_LINK_UP))
			LSD_LOG(WARNING, "port %s: memif link down after %d s and %u "
			       "fresh starts; carrying on without it",
			       lsd.ports[i].conf->name, LS_PORT_START_TRIES / 10, restarts);
	}
}

/* Before any port is configured: how many queues the bridge's two take
 * (both ports' capabilities decide "auto"). */
static int
bridge_plan(void)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;
	uint16_t id[2];
	int rc;

	lsd.bridge_queues = 1;
	if (!bc->enabled || bc->n_lcores < 2)
		return 0;
	for (int s = 0; s < 2; s++) {
		int i = ls_config_port_index(&lsd.cfg, s == 0 ? bc->host_port : bc->fabric_port);

		rc = i < 0 ? -EINVAL : port_lookup(&lsd.cfg.ports[i], &id[s]);
		if (rc < 0)
			return rc;
	}
	return lsd_rss_plan(id[0], id[1]);
}

int
lsd_ports_init(void)
{
	bool want_hw_ts = lsd.cfg.clock.source == LS_CLOCK_AUTO ||
			  lsd.cfg.clock.source == LS_CLOCK_NIC;
	char mac[LS_MAC_STRLEN];
	int rc = bridge_plan();

	if (rc < 0)
		return rc;
	for (unsigned int i = 0; i < lsd.cfg.n_ports; i++) {
		struct lsd_port *p = &lsd.ports[i];

		rc = port_setup(p, &lsd.cfg.ports[i], want_hw_ts);

		if (rc < 0) {
			LSD_LOG(ERR, "%s: ports[%u] (%s, dev \"%s\"): cannot start: %s",
			       lsd.cfg.file, i, lsd.cfg.ports[i].name, lsd.cfg.ports[i].dev,
			       strerror(-rc));
			lsd.n_ports = i;
			return rc;
		}
		lsd.n_ports = i + 1;
		LSD_LOG(INFO, "port %s: ethdev %u (%s), mac %s, lcore %u%s",
		       p->conf->name, p->port_id, p->driver,
		       ls_mac_fmt(&p->mac, mac, sizeof(mac)), p->lcore,
		       p->rx_cksum_offload ? ", rx checksum offload" : "");
	}
	memif_clients_connect();
	return 0;
}

bool
lsd_ports_stop(void)
{
	uint16_t ids[RTE_MAX_ETHPORTS];

	for (unsigned int i = 0; i < lsd.n_ports; i++) {
		struct rte_eth_stats s;

		if (rte_eth_stats_get(lsd.ports[i].port_id, &s) == 0)
			LSD_LOG(INFO, "port %s: final: rx %" PRIu64 " tx %" PRIu64
			       " missed %" PRIu64 " rx-errors %" PRIu64 " tx-errors %" PRIu64,
			       lsd.ports[i].conf->name, s.ipackets, s.opackets, s.imissed,
			       s.ierrors, s.oerrors);
		ids[i] = lsd.ports[i].port_id;
	}
	return ls_app_ports_close(ids, lsd.n_ports);
}

bool
lsd_port_owns(const struct lsd_port *p, const struct ls_addr *a)
{
	if (a->family == LS_AF_INET)
		return p->v4.addr.family && ls_addr_eq(&p->v4.addr, a);
	if (a->family == LS_AF_INET6)
		return (p->v6.addr.family && ls_addr_eq(&p->v6.addr, a)) ||
		       ls_addr_eq(&p->v6_ll, a);
	return false;
}

bool
lsd_port_bad_source(const struct lsd_port *p, const struct ls_addr *src)
{
	return lsd_port_owns(p, src) || ls_prefix_bad_source(&p->v4, src);
}
