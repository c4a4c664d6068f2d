/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-fabric: an emulated leaf-spine network for lockstep labs.
 *
 *   lockstep-fabric [EAL options] -- --topo FILE [--dir DIR] [--socket PATH]
 *                   [--truth FILE] [--sample-us N] [--hops] [--idle-sleep-us N]
 *                   [--no-fastpath] [--rx-trailer]
 *   lockstep-fabric --help | -- --topo FILE --check
 *
 * Each host of the topology is one DPDK port of the emulator (by default a
 * memif server socket DIR/<host>.sock that the host's lockstepd connects
 * to as a client). The topology is validated before the EAL starts; a bad
 * file is reported by name, key and reason and the exit status is 2.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_version.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_mempool.h>

#include "../common/ls_app.h"
#include "fabric.h"

RTE_LOG_REGISTER(lsf_logtype, lockstep.fabric, INFO);

struct lsf_global fab;

static const char usage_text[] =
"Usage: lockstep-fabric [EAL options] -- --topo FILE [options]\n"
"\n"
"An emulated leaf-spine network: per-link delay, rate, queues, ECN, loss,\n"
"ECMP, TTL and ICMP, run-time faults, background traffic and ground truth.\n"
"\n"
"Options (after the EAL options and \"--\"):\n"
"  -t, --topo FILE        topology (docs/fabric.md); required\n"
"  -d, --dir DIR          where the hosts' memif sockets go (default /run/lockstep/fabric)\n"
"  -s, --socket PATH      control socket (default DIR/fabric.sock)\n"
"  -T, --truth FILE       write ground truth as JSON lines (docs/fabric.md)\n"
"      --sample-us N      queue-depth sampling interval, us (default 10; 0 = off)\n"
"      --truth-max-mb N   stop writing the truth file past N MB (default 1024; 0 = no\n"
"                         limit); what is not written is counted in truth_unwritten\n"
"      --icmp-rate N      ICMP errors (time exceeded) a switch sends per second, a\n"
"                         burst of N/10 (default 1000; 0 = no limit; RFC 4443 2.4 f)\n"
"      --hops             record every probe's crossing of every link in the truth\n"
"      --idle-sleep-us N  sleep up to N us when idle, never past the next event\n"
"                         (default 0: busy poll; labs sharing cores use ~50)\n"
"      --no-fastpath      route every packet the generic way (same results,\n"
"                         slower: for differential tests)\n"
"      --rx-trailer       act as a NIC with receive stamps: append to every frame\n"
"                         delivered to a host the instant it arrived there, as a\n"
"                         12-byte trailer (lockstepd's clock.rx_trailer strips and\n"
"                         uses it)\n"
"      --tx-trailer       act as a NIC that sends on a timestamp: a frame from a\n"
"                         host that ends in a send-time trailer (lockstepd's\n"
"                         clock.tx_trailer) enters the network at that instant,\n"
"                         trailer removed\n"
"      --check            validate the topology and exit\n"
"  -h, --help             this text\n"
"  -V, --version          print the version\n"
"\n"
"Exit status: 0 clean shutdown, 1 failure, 2 bad usage or topology.\n";

static const char *fab_topo_path;

static int
parse_args(int argc, char **argv, bool *check)
{
	/* Long-only options get a capital letter getopt_long returns. */
	static const struct option opts[] = {
		/* where things are */
		{"topo", required_argument, NULL, 't'}, {"dir", required_argument, NULL, 'd'},
		{"socket", required_argument, NULL, 's'},
		/* ground truth */
		{"truth", required_argument, NULL, 'T'}, {"sample-us", required_argument, NULL, 'S'},
		{"hops", no_argument, NULL, 'H'}, {"truth-max-mb", required_argument, NULL, 'M'},
		{"icmp-rate", required_argument, NULL, 'P'},
		/* how the loop runs, and which NIC it plays */
		{"idle-sleep-us", required_argument, NULL, 'I'}, {"no-fastpath", no_argument, NULL, 'F'},
		{"rx-trailer", no_argument, NULL, 'R'}, {"tx-trailer", no_argument, NULL, 'X'},
		{"check", no_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	char *end;
	long v;
	int c;

	snprintf(fab.sock_dir, sizeof(fab.sock_dir), "/run/lockstep/fabric");
	fab.sample_ns = 10000;
	fab.icmp_rate = 1000;
	fab.truth_max_bytes = 1024ULL << 20;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:d:s:T:hV", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			fab_topo_path = optarg;
			break;
		case 'd':
			snprintf(fab.sock_dir, sizeof(fab.sock_dir), "%s", optarg);
			break;
		case 's':
			snprintf(fab.socket, sizeof(fab.socket), "%s", optarg);
			break;
		case 'T':
			snprintf(fab.truth_file, sizeof(fab.truth_file), "%s", optarg);
			break;
		case 'S':
		case 'I':
		case 'M':
		case 'P':
			v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 1000000) {
				fprintf(stderr, "lockstep-fabric: --%s: expected 0..1000000, got \"%s\"\n",
					c == 'S' ? "sample-us" : c == 'I' ? "idle-sleep-us" :
					c == 'M' ? "truth-max-mb" : "icmp-rate", optarg);
				return -EINVAL;
			}
			if (c == 'S')
				fab.sample_ns = (uint64_t)v * 1000;
			else if (c == 'I')
				fab.idle_sleep_us = (uint32_t)v;
			else if (c == 'M')
				fab.truth_max_bytes = (uint64_t)v << 20;
			else
				fab.icmp_rate = (uint32_t)v;
			break;
		case 'H':
			fab.hop_records = true;
			break;
		case 'F':
			fab.no_fastpath = true;
			break;
		case 'R':
			fab.rx_trailer = true;
			break;
		case 'X':
			fab.tx_trailer = true;
			break;
		case 'C':
			*check = true;
			break;
		case 'h':
		case 'V':
			ls_app_help_version(c == 'V', "lockstep-fabric", usage_text);
		default:
			return ls_app_bad_option("lockstep-fabric", argv[optind - 1], usage_text);
		}
	}
	if (fab_topo_path == NULL) {
		fprintf(stderr, "lockstep-fabric: --topo FILE is required\n%s", usage_text);
		return -EINVAL;
	}
	if (fab.socket[0] == '\0')
		snprintf(fab.socket, sizeof(fab.socket), "%s/fabric.sock", fab.sock_dir);
	return 0;
}

static int
port_open(uint16_t host)
{
	struct ls_fab_node *h = &fab.fab->nodes[host];
	struct rte_eth_conf conf = {0};
	char name[RTE_ETH_NAME_MAX_LEN];
	struct lsf_port *p = &fab.ports[fab.n_ports];
	size_t n;
	int rc;

	if (h->dev[0] == '\0')
		snprintf(h->dev, sizeof(h->dev),
			 "net_memif%u,role=server,id=0,socket=%s/%s.sock,socket-abstract=no",
			 fab.n_ports, fab.sock_dir, h->name);
	n = strcspn(h->dev, ",");
	snprintf(name, sizeof(name), "%.*s", (int)n, h->dev);
	if (rte_eth_dev_get_port_by_name(name, &p->port_id) != 0) {
		rc = rte_dev_probe(h->dev);
		if (rc < 0 || rte_eth_dev_get_port_by_name(name, &p->port_id) != 0) {
			LSF_LOG(ERR, "host %s: cannot open device \"%s\": %s", h->name, h->dev,
				strerror(rc < 0 ? -rc : ENODEV));
			return rc < 0 ? rc : -ENODEV;
		}
	}
	rc = rte_eth_dev_configure(p->port_id, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(p->port_id, 0, 1024,
					    rte_eth_dev_socket_id(p->port_id), NULL, fab.pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(p->port_id, 0, 1024,
					    rte_eth_dev_socket_id(p->port_id), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(p->port_id);
	if (rc < 0) {
		LSF_LOG(ERR, "host %s: port %s: %s", h->name, name, strerror(-rc));
		return rc;
	}
	rte_eth_promiscuous_enable(p->port_id);
	p->txb = rte_zmalloc_socket("lsf_txb", RTE_ETH_TX_BUFFER_SIZE(LSF_BURST), 0,
				    rte_eth_dev_socket_id(p->port_id));
	if (p->txb == NULL)
		return -ENOMEM;
	rte_eth_tx_buffer_init(p->txb, LSF_BURST);
	ls_app_gate_init(&p->gate, p->port_id);
	p->host = host;
	/*
	 * net_pcap on an interface stamps each frame with the packet socket's
	 * receive time: the moment the host's frame reached the wire, free of
	 * our polling delay. Ingress is then taken from that stamp, so a sleep
	 * in this loop does not add to the modelled delay.
	 */
	if (ls_clock_kstamp_port(p->port_id, &fab.kts_dynfield, &fab.kts_dynflag)) {
		p->kstamp = true;
		LSF_LOG(INFO, "host %s: ingress time from kernel stamps (net_pcap)", h->name);
	}
	fab.port_of_host[host] = (int16_t)fab.n_ports++;
	return 0;
}

/* Arm the memif teardown guard when a host port is memif; the loop is its
 * reader. */
static int
guard_ports(void)
{
	bool memif = false;
	size_t sz = rte_rcu_qsbr_get_memsize(1);

	for (uint16_t i = 0; i < fab.n_ports; i++)
		memif |= fab.ports[i].gate.watch;
	if (!memif)
		return 0;
	fab.qsbr = rte_zmalloc("lsf_qsbr", sz, RTE_CACHE_LINE_SIZE);
	if (fab.qsbr == NULL || rte_rcu_qsbr_init(fab.qsbr, 1) != 0)
		return -ENOMEM;
	ls_app_gate_guard(fab.qsbr);
	return 0;
}

/* The topology, and on --check the verdict (1: done). */
static int
fab_load(bool check_only, char *err, size_t len)
{
	int rc = ls_fab_load(fab_topo_path, &fab.fab, err, len);

	if (rc < 0 || !check_only)
		return rc;
	printf("%s: ok (%u nodes, %u links)\n", fab_topo_path, fab.fab->n_nodes, fab.fab->n_links);
	ls_fab_free(fab.fab);
	return 1;
}

int
main(int argc, char **argv)
{
	static const struct ls_app_start start = {
		.name = "lockstep-fabric", .parse = parse_args, .load = fab_load, .quit = &fab.quit,
	};
	int rc;

	ls_app_start(&start, argc, argv);
	mkdir(fab.sock_dir, 0755);
	for (unsigned int i = 0; i < LS_FAB_MAX_NODES; i++)
		fab.port_of_host[i] = -1;

	rc = ls_tsc_cal_init(&fab.cal, 200);
	fab.map_every = rte_get_tsc_hz() / 10;
	fab.pool = rte_pktmbuf_pool_create("lsf_mbuf", 32767, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					 (int)rte_socket_id());
	fab.jumbo = rte_pktmbuf_pool_create("lsf_jumbo", LSF_JUMBO_MBUFS, 64, 0,
					  RTE_PKTMBUF_HEADROOM + LSF_JUMBO_ROOM, (int)rte_socket_id());
	fab.msgs = rte_ring_create("lsf_msgs", 64, (int)rte_socket_id(), RING_F_SC_DEQ);
	fab.truth = rte_ring_create("lsf_truth", 65536, (int)rte_socket_id(), RING_F_SC_DEQ);
	fab.truth_pool = rte_mempool_create("lsf_truth", 65535, sizeof(struct lsf_truth), 256, 0,
					  NULL, NULL, NULL, NULL, (int)rte_socket_id(), 0);
	if (rc < 0 || fab.pool == NULL || fab.jumbo == NULL || fab.msgs == NULL || fab.truth == NULL ||
	    fab.truth_pool == NULL) {
		LSF_LOG(ERR, "start-up: out of memory (try -m 512)");
		rc = -ENOMEM;
	}
	for (uint16_t i = 0; rc == 0 && i < fab.fab->n_nodes; i++)
		if (fab.fab->nodes[i].kind == LS_FAB_HOST)
			rc = port_open(i);
	if (rc == 0)
		rc = guard_ports();
	if (rc == 0)
		rc = lsf_control_start();
	if (rc < 0) {
		LSF_LOG(ERR, "start-up failed: %s", strerror(-rc));
		fab.quit = 1;
		lsf_control_stop();
		for (uint16_t i = 0; i < fab.n_ports; i++)
			rte_eth_dev_stop(fab.ports[i].port_id);
		ls_fab_free(fab.fab);
		rte_eal_cleanup();
		return 1;
	}
	fab.lcore = rte_lcore_id();
	LSF_LOG(INFO, "%s: %u switches and hosts, %u links, %u host ports; control %s",
		fab_topo_path, fab.fab->n_nodes, fab.fab->n_links, fab.n_ports, fab.socket);
	lsf_loop(NULL);

	LSF_LOG(INFO, "shutting down: rx %" PRIu64 " tx %" PRIu64 " events %" PRIu64,
		fab.st.rx_pkts, fab.st.tx_pkts, fab.st.events);
	lsf_control_stop();
	{
		uint16_t ids[RTE_MAX_ETHPORTS];

		for (uint16_t i = 0; i < fab.n_ports; i++)
			ids[i] = fab.ports[i].port_id;
		if (ls_app_ports_close(ids, fab.n_ports))
			rte_eal_cleanup();
	}
	ls_fab_free(fab.fab);
	return 0;
}
