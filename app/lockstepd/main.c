/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstepd: the lockstep appliance.
 *
 *   lockstepd [EAL options] -- --config FILE [--check-config]
 *   lockstepd --help | --version
 *
 * Start-up order matters and is the same as DPDK's examples: the config is
 * parsed and validated before the EAL is touched (a bad file is reported by
 * name, key and reason, and nothing else happens), then the EAL, the mbuf
 * pool, timers, the TSC calibration, ports, per-lcore state, the control
 * socket, and finally one polling loop per lcore that owns a port. SIGINT
 * and SIGTERM set a flag that every loop checks; shutdown then stops the
 * loops, closes the capture and the socket (removing its file), logs final
 * statistics, stops rte_pdump (dpdk-dumpcap's hook, started once the rest
 * is up) and stops the ports.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_rcu_qsbr.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_timer.h>
#include <rte_version.h>

#include "../common/ls_app.h"
#include "bridge.h"
#include "lockstepd.h"
#include "ls_stamp.h"

static const char usage_text[] =
"Usage: lockstepd [EAL options] -- --config FILE [--check-config]\n"
"       lockstepd --help | --version\n"
"\n"
"lockstep appliance: STAMP (RFC 8762) probe mesh, reflector, per-path\n"
"telemetry and a control socket, on any DPDK port.\n"
"\n"
"Options (after the EAL options and \"--\"):\n"
"  -c, --config FILE   JSON configuration (see docs/config.md); required\n"
"      --check-config  validate FILE, print the result and exit (no EAL)\n"
"  -h, --help          this text\n"
"  -V, --version       print the version\n"
"\n"
"Useful EAL options (see the DPDK documentation for all):\n"
"  -l LIST             lcores; ports choose theirs with ports[].lcore\n"
"  --lcores '0@(0,1)'  let lcore 0 float over CPUs 0-1 (lab use)\n"
"  --vdev DEVARGS      virtual device (net_memif, net_af_packet, net_pcap, ...);\n"
"                      ports[].dev may also carry devargs itself\n"
"  -a PCI              allow a PCI device (an SR-IOV VF, mlx5 bifurcated)\n"
"  --no-huge -m MB     run without hugepages\n"
"  --file-prefix NAME  one per process when several run on a host\n"
"  --no-pci            no PCI scan (lab)\n"
"\n"
"Signals: SIGTERM/SIGINT stop it cleanly; SIGHUP makes the config file's\n"
"peers[] the peer list (the rest of the file takes effect at the next start).\n"
"\n"
"Exit status: 0 clean shutdown, 1 start-up or runtime failure, 2 bad usage\n"
"or configuration.\n";

const char *lsd_config_path;

/* App options come after "--"; --help/--version also work alone, before any
 * EAL parsing, so they never need hugepages or root. */
static int
parse_app_args(int argc, char **argv, bool *check_only)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check-config", no_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			lsd_config_path = optarg;
			break;
		case 'k':
			*check_only = true;
			break;
		case 'h':
		case 'V':
			ls_app_help_version(c == 'V', "lockstepd", usage_text);
		default:
			return ls_app_bad_option("lockstepd", argv[optind - 1], usage_text);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "lockstepd: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	if (lsd_config_path == NULL) {
		fprintf(stderr, "lockstepd: --config FILE is required\n%s", usage_text);
		return -EINVAL;
	}
	return 0;
}

static int
setup_pool(void)
{
	unsigned int n = 4096;

	for (unsigned int i = 0; i < lsd.cfg.n_ports; i++)
		n += lsd.cfg.ports[i].rx_desc + lsd.cfg.ports[i].tx_desc + 2 * LSD_BURST;
	/* frames the data path holds: each lcore's pacing wheel and slice
	 * queues, and the rings between its lcores (bridge_spread.c) */
	if (lsd.cfg.bridge.enabled) {
		unsigned int nl = RTE_MAX(lsd.cfg.bridge.n_lcores, 1);

		n += lsd.cfg.bridge.mbufs * nl + (nl - 1) * 4 * 2048;
		/* the RSS spread: a queue per lcore on both ports, and in rings */
		for (unsigned int i = 0; nl > 1 && i < lsd.cfg.n_ports; i++)
			if (strcmp(lsd.cfg.ports[i].name, lsd.cfg.bridge.host_port) == 0 ||
			    strcmp(lsd.cfg.ports[i].name, lsd.cfg.bridge.fabric_port) == 0)
				n += (nl - 1) * (lsd.cfg.ports[i].rx_desc +
						 lsd.cfg.ports[i].tx_desc + 2048);
	}
	lsd.pool = rte_pktmbuf_pool_create("ls_mbuf", n, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					 (int)rte_socket_id());
	if (lsd.pool == NULL) {
		LSD_LOG(ERR, "cannot create a pool of %u mbufs: %s (try more memory: -m)",
		       n, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

/* The data path's other lcores (bridge.lcores after the first): they poll
 * its rings, own no port, and read the lead's peers under RCU. */
static int
setup_workers(void)
{
	const struct ls_conf_bridge *bc = &lsd.cfg.bridge;
	size_t sz;

	if (!bc->enabled || bc->n_lcores < 2)
		return 0;
	sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	lsd.qsbr = rte_zmalloc("lsd_qsbr", sz, RTE_CACHE_LINE_SIZE);
	if (lsd.qsbr == NULL || rte_rcu_qsbr_init(lsd.qsbr, RTE_MAX_LCORE) != 0)
		return -ENOMEM;
	for (unsigned int i = 1; i < bc->n_lcores; i++) {
		unsigned int l = bc->lcores[i];
		struct lsd_lcore *lc = &lsd.lcores[l];
		char name[RTE_RING_NAMESIZE];

		if (l >= RTE_MAX_LCORE || !rte_lcore_is_enabled(l)) {
			LSD_LOG(ERR, "%s: bridge.lcores[%u]: lcore %u is not enabled (add it to "
			       "the EAL's -l)", lsd_config_path, i, l);
			return -EINVAL;
		}
		lc->lcore_id = l;
		lc->active = true;
		lc->worker = true;
		snprintf(name, sizeof(name), "ls_msgs_%u", l);
		lc->msgs = rte_ring_create(name, LSD_MSG_RING, (int)rte_lcore_to_socket_id(l),
					   RING_F_SC_DEQ);
		if (lc->msgs == NULL)
			return -ENOMEM;
		lsd_lcore_setup(lc);
	}
	return 0;
}

/* The lead's peer table, read by the other data-path lcores: lock-free
 * lookups, and a deleted key's slot reused only after a grace period. */
static int
peers_shared(struct lsd_lcore *lc)
{
	struct rte_hash_rcu_config rc = {.v = lsd.qsbr, .mode = RTE_HASH_QSBR_MODE_DQ};

	return rte_hash_rcu_qsbr_add(lc->peer_hash, &rc) == 0 ? 0 : -ENOMEM;
}

/* Arm the memif teardown guard when a port is memif: the lcores that poll
 * ports report quiescence every loop (lsd_lcore_main). */
static int
setup_port_guard(void)
{
	bool memif = false;
	size_t sz;

	for (unsigned int i = 0; i < lsd.n_ports; i++)
		memif |= lsd.ports[i].gate.watch;
	if (!memif)
		return 0;
	sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	lsd.port_qsbr = rte_zmalloc("lsd_port_qsbr", sz, RTE_CACHE_LINE_SIZE);
	if (lsd.port_qsbr == NULL || rte_rcu_qsbr_init(lsd.port_qsbr, RTE_MAX_LCORE) != 0)
		return -ENOMEM;
	ls_app_gate_guard(lsd.port_qsbr);
	return 0;
}

static int
setup_lcores(void)
{
	uint16_t ports[LS_MAX_PORTS], kports[LS_MAX_PORTS];
	unsigned int n_k = 0, lead = RTE_MAX_LCORE;
	int rc = setup_workers();

	if (rc == 0)
		rc = setup_port_guard();
	if (rc < 0)
		return rc;
	if (lsd.qsbr != NULL)
		lead = lsd.ports[ls_config_port_index(&lsd.cfg, lsd.cfg.bridge.fabric_port)].lcore;
	for (unsigned int i = 0; i < lsd.n_ports; i++) {
		struct lsd_lcore *lc = &lsd.lcores[lsd.ports[i].lcore];

		lc->port_idx[lc->n_ports++] = (uint16_t)i;
		lc->active = true;
		ports[i] = lsd.ports[i].port_id;
		if (lsd.ports[i].conf->kernel_stamps)
			kports[n_k++] = lsd.ports[i].port_id;
	}
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		struct lsd_lcore *lc = &lsd.lcores[l];
		char name[RTE_HASH_NAMESIZE];
		struct rte_hash_parameters hp = {
			.entries = LS_MAX_PEERS,
			.key_len = sizeof(struct lsd_addr_key),
			.hash_func = rte_hash_crc,
			.socket_id = (int)rte_lcore_to_socket_id(l),
			.extra_flag = l == lead ? RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF : 0,
		};

		if (!lc->active || lc->worker)
			continue;
		lc->lcore_id = l;
		snprintf(name, sizeof(name), "ls_msgs_%u", l);
		lc->msgs = rte_ring_create(name, LSD_MSG_RING, hp.socket_id, RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "ls_sync_%u", l);
		lc->sync_ring = rte_ring_create_elem(name, sizeof(struct lsd_sync_rec), 4096,
						     hp.socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lc->sync_ring == NULL) {
			LSD_LOG(ERR, "lcore %u: cannot allocate its sync ring", l);
			return -ENOMEM;
		}
		snprintf(name, sizeof(name), "ls_route_%u", l);
		lc->route_ring = rte_ring_create_elem(name, sizeof(struct lsd_route_rec), 1024,
						      hp.socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lc->route_ring == NULL) {
			LSD_LOG(ERR, "lcore %u: cannot allocate its route ring", l);
			return -ENOMEM;
		}
		snprintf(name, sizeof(name), "ls_peers_%u", l);
		hp.name = name;
		lc->peer_hash = rte_hash_create(&hp);
		lc->peers = rte_zmalloc("ls_peers", sizeof(lc->peers[0]) * LS_MAX_PEERS, 0);
		if (lc->msgs == NULL || lc->peer_hash == NULL || lc->peers == NULL ||
		    (l == lead && peers_shared(lc) < 0)) {
			LSD_LOG(ERR, "lcore %u: cannot allocate its tables", l);
			return -ENOMEM;
		}
		rc = lsd_reflector_setup(lc);
		if (rc < 0)
			return rc;
		rc = ls_clock_setup(&lc->clock, &lsd.cfg.clock, lsd.cfg.node_id, ports,
				    lsd.n_ports, &lsd.cal);
		if (rc < 0)
			return rc;
		ls_clock_kstamp_setup(&lc->clock, kports, n_k);
		lsd_lcore_setup(lc);
	}
	return 0;
}

static void
log_final_stats(void)
{
	uint64_t rx = 0, probes = 0, replies = 0, refl = 0;
	unsigned int l;

	RTE_LCORE_FOREACH(l) {
		rx += lsd.lcores[l].st.rx_pkts;
		probes += lsd.lcores[l].st.tx_probes;
		replies += lsd.lcores[l].st.disp[LSD_RX_REPLY];
		refl += lsd.lcores[l].st.disp[LSD_RX_REFLECTED];
	}
	LSD_LOG(INFO, "final: rx %" PRIu64 " packets, probes sent %" PRIu64
	       ", replies matched %" PRIu64 ", reflected %" PRIu64, rx, probes, replies, refl);
}

static void
ensure_socket_dir(const char *path)
{
	char dir[sizeof(lsd.cfg.control.socket)];

	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0755) < 0 && errno != EEXIST)
		LSD_LOG(WARNING, "cannot create %s: %s", dir, strerror(errno));
}

/* The config, and on --check-config the verdict (1: done). */
static int
lsd_load(bool check_only, char *err, size_t len)
{
	int rc = ls_config_load(lsd_config_path, &lsd.cfg, err, len);

	if (rc < 0 || !check_only)
		return rc;
	printf("%s: ok (node %s, %u port(s), %u peer(s))\n", lsd_config_path,
	       lsd.cfg.node_name, lsd.cfg.n_ports, lsd.cfg.n_peers);
	ls_config_free(&lsd.cfg);
	return 1;
}

int
main(int argc, char **argv)
{
	static const struct ls_app_start start = {
		.name = "lockstepd", .parse = parse_app_args, .load = lsd_load, .quit = &lsd.quit,
		.reload = &lsd.reload,
	};
	int rc;

	ls_app_start(&start, argc, argv);
	lsd_log_set_level(lsd_log_level_from_name(lsd.cfg.log_level));
	lsd.refl_ptp = !lsd.cfg.reflector.ntp_format;
	lsd.refl_ee = ls_stamp_err_est(false, lsd.refl_ptp, 12, 1);
	lsd.send_ee = ls_stamp_err_est(false, true, 12, 1);
	lsd.start_tsc = rte_rdtsc();

	rc = setup_pool();
	if (rc == 0)
		rc = lsd_mtu_init();
	if (rc == 0)
		rc = rte_timer_subsystem_init();
	if (rc == 0)
		rc = ls_tsc_cal_init(&lsd.cal, 200);
	if (rc == 0)
		rc = lsd_capture_init();
	if (rc == 0)
		rc = lsd_ports_init();
	if (rc == 0)
		rc = setup_lcores();
	if (rc == 0)
		rc = lsd_bridge_init();
	if (rc == 0) {
		ensure_socket_dir(lsd.cfg.control.socket);
		rc = lsd_control_start();
	}
	if (rc < 0) {
		LSD_LOG(ERR, "start-up failed: %s", strerror(-rc));
		lsd.quit = 1;
		lsd_control_join();
		if (lsd_ports_stop())
			rte_eal_cleanup();
		ls_config_free(&lsd.cfg);
		return 1;
	}
	lsd_pdump_init();
	LSD_LOG(INFO, "node %s (id %u) running: %u port(s), %u configured peer(s)",
	       lsd.cfg.node_name, lsd.cfg.node_id, lsd.n_ports, lsd.cfg.n_peers);

	rte_eal_mp_remote_launch(lsd_lcore_main, NULL, SKIP_MAIN);
	if (lsd.lcores[rte_get_main_lcore()].active)
		lsd_lcore_main(NULL);
	else
		while (!lsd.quit)
			rte_delay_us_sleep(10000);
	rte_eal_mp_wait_lcore();

	LSD_LOG(INFO, "shutting down");
	lsd_control_join();
	log_final_stats();
	lsd_control_free_peers();
	lsd_bridge_fini();
	lsd_bridge_ctl_fini();
	lsd_pdump_fini();
	if (lsd_ports_stop())
		rte_eal_cleanup();
	ls_config_free(&lsd.cfg);
	return lsd.exit_code;
}
