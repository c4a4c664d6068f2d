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
 * statistics and stops the ports.
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
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_timer.h>
#include <rte_version.h>

#include "bridge.h"
#include "lockstepd.h"
#include "ls_stamp.h"

RTE_LOG_REGISTER(ls_logtype, lockstep.daemon, INFO);

struct ls_global g;

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
"Exit status: 0 clean shutdown, 1 start-up or runtime failure, 2 bad usage\n"
"or configuration.\n";

static void
on_signal(int sig)
{
	(void)sig;
	g.quit = 1;
}

/* App options come after "--"; --help/--version also work alone, before any
 * EAL parsing, so they never need hugepages or root. */
static int
parse_app_args(int argc, char **argv, const char **config, bool *check_only)
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
			*config = optarg;
			break;
		case 'k':
			*check_only = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("lockstepd 0.1.0 (DPDK %s)\n", rte_version());
			exit(0);
		default:
			fprintf(stderr, "lockstepd: unknown option \"%s\"\n%s",
				argv[optind - 1], usage_text);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "lockstepd: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	if (*config == NULL) {
		fprintf(stderr, "lockstepd: --config FILE is required\n%s", usage_text);
		return -EINVAL;
	}
	return 0;
}

static int
setup_pool(void)
{
	unsigned int n = 4096;

	for (unsigned int i = 0; i < g.cfg.n_ports; i++)
		n += g.cfg.ports[i].rx_desc + g.cfg.ports[i].tx_desc + 2 * LS_BURST;
	/* frames the data path holds: pacing wheel and slice queues */
	if (g.cfg.bridge.enabled)
		n += g.cfg.bridge.mbufs;
	g.pool = rte_pktmbuf_pool_create("ls_mbuf", n, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					 (int)rte_socket_id());
	if (g.pool == NULL) {
		LS_LOG(ERR, "cannot create a pool of %u mbufs: %s (try more memory: -m)",
		       n, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

static int
setup_lcores(void)
{
	uint16_t ports[LS_MAX_PORTS];

	for (unsigned int i = 0; i < g.n_ports; i++) {
		struct ls_lcore *lc = &g.lcores[g.ports[i].lcore];

		lc->port_idx[lc->n_ports++] = (uint16_t)i;
		lc->active = true;
		ports[i] = g.ports[i].port_id;
	}
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		struct ls_lcore *lc = &g.lcores[l];
		char name[RTE_HASH_NAMESIZE];
		struct rte_hash_parameters hp = {
			.entries = LS_MAX_PEERS,
			.key_len = sizeof(struct ls_addr_key),
			.hash_func = rte_hash_crc,
			.socket_id = (int)rte_lcore_to_socket_id(l),
		};
		int rc;

		if (!lc->active)
			continue;
		lc->lcore_id = l;
		snprintf(name, sizeof(name), "ls_msgs_%u", l);
		lc->msgs = rte_ring_create(name, 64, hp.socket_id, RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "ls_sync_%u", l);
		lc->sync_ring = rte_ring_create_elem(name, sizeof(struct ls_sync_rec), 4096,
						     hp.socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lc->sync_ring == NULL) {
			LS_LOG(ERR, "lcore %u: cannot allocate its sync ring", l);
			return -ENOMEM;
		}
		snprintf(name, sizeof(name), "ls_peers_%u", l);
		hp.name = name;
		lc->peer_hash = rte_hash_create(&hp);
		lc->peers = rte_zmalloc("ls_peers", sizeof(lc->peers[0]) * LS_MAX_PEERS, 0);
		if (lc->msgs == NULL || lc->peer_hash == NULL || lc->peers == NULL) {
			LS_LOG(ERR, "lcore %u: cannot allocate its tables", l);
			return -ENOMEM;
		}
		rc = ls_reflector_setup(lc);
		if (rc < 0)
			return rc;
		rc = ls_clock_setup(&lc->clock, &g.cfg.clock, g.cfg.node_id, ports,
				    g.n_ports, &g.cal);
		if (rc < 0)
			return rc;
		ls_clock_kstamp_setup(&lc->clock, ports, g.n_ports);
		ls_lcore_setup(lc);
	}
	return 0;
}

static void
log_final_stats(void)
{
	uint64_t rx = 0, probes = 0, replies = 0, refl = 0;
	unsigned int l;

	RTE_LCORE_FOREACH(l) {
		rx += g.lcores[l].st.rx_pkts;
		probes += g.lcores[l].st.tx_probes;
		replies += g.lcores[l].st.disp[LS_RX_REPLY];
		refl += g.lcores[l].st.disp[LS_RX_REFLECTED];
	}
	LS_LOG(INFO, "final: rx %" PRIu64 " packets, probes sent %" PRIu64
	       ", replies matched %" PRIu64 ", reflected %" PRIu64, rx, probes, replies, refl);
}

static void
ensure_socket_dir(const char *path)
{
	char dir[sizeof(g.cfg.control.socket)];

	snprintf(dir, sizeof(dir), "%s", path);
	if (mkdir(dirname(dir), 0755) < 0 && errno != EEXIST)
		LS_LOG(WARNING, "cannot create %s: %s", dir, strerror(errno));
}

int
main(int argc, char **argv)
{
	const char *config = NULL;
	bool check_only = false;
	char err[LS_ERR_LEN];
	int app_argc, ret, rc;
	char **app_argv;
	int dashdash = -1;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dashdash = i;
			break;
		}
	if (dashdash < 0) {
		/* Only --help/--version (or app options alone) make sense here. */
		app_argc = argc;
		app_argv = argv;
	} else {
		app_argc = argc - dashdash;
		app_argv = argv + dashdash;
	}
	if (parse_app_args(app_argc, app_argv, &config, &check_only) < 0)
		return 2;
	rc = ls_config_load(config, &g.cfg, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "lockstepd: %s\n", err);
		return 2;
	}
	if (check_only) {
		printf("%s: ok (node %s, %u port(s), %u peer(s))\n", config,
		       g.cfg.node_name, g.cfg.n_ports, g.cfg.n_peers);
		ls_config_free(&g.cfg);
		return 0;
	}
	if (dashdash < 0) {
		/* No EAL arguments at all: give the EAL just the program name. */
		argc = 1;
	}

	ret = rte_eal_init(dashdash < 0 ? 1 : dashdash, argv);
	if (ret < 0) {
		fprintf(stderr, "lockstepd: EAL initialisation failed%s%s (EAL messages above)\n",
			rte_errno ? ": " : "", rte_errno ? rte_strerror(rte_errno) : "");
		ls_config_free(&g.cfg);
		return 1;
	}
	rte_log_set_level_pattern("lockstep*", (uint32_t)ls_log_level_from_name(g.cfg.log_level));
	rte_log_set_level(ls_logtype, (uint32_t)ls_log_level_from_name(g.cfg.log_level));
	g.refl_ptp = !g.cfg.reflector.ntp_format;
	g.refl_ee = ls_stamp_err_est(false, g.refl_ptp, 12, 1);
	g.send_ee = ls_stamp_err_est(false, true, 12, 1);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	g.start_tsc = rte_rdtsc();

	rc = setup_pool();
	if (rc == 0)
		rc = rte_timer_subsystem_init();
	if (rc == 0)
		rc = ls_tsc_cal_init(&g.cal, 200);
	if (rc == 0)
		rc = ls_capture_init();
	if (rc == 0)
		rc = ls_ports_init();
	if (rc == 0)
		rc = setup_lcores();
	if (rc == 0)
		rc = lsd_bridge_init();
	if (rc == 0) {
		ensure_socket_dir(g.cfg.control.socket);
		rc = ls_control_start();
	}
	if (rc < 0) {
		LS_LOG(ERR, "start-up failed: %s", strerror(-rc));
		g.quit = 1;
		ls_control_join();
		ls_ports_stop();
		ls_config_free(&g.cfg);
		rte_eal_cleanup();
		return 1;
	}
	LS_LOG(INFO, "node %s (id %u) running: %u port(s), %u configured peer(s)",
	       g.cfg.node_name, g.cfg.node_id, g.n_ports, g.cfg.n_peers);

	rte_eal_mp_remote_launch(ls_lcore_main, NULL, SKIP_MAIN);
	if (g.lcores[rte_get_main_lcore()].active)
		ls_lcore_main(NULL);
	else
		while (!g.quit)
			rte_delay_us_sleep(10000);
	rte_eal_mp_wait_lcore();

	LS_LOG(INFO, "shutting down");
	ls_control_join();
	log_final_stats();
	ls_control_free_peers();
	lsd_bridge_fini();
	lsd_bridge_ctl_fini();
	ls_ports_stop();
	ls_config_free(&g.cfg);
	rte_eal_cleanup();
	return g.exit_code;
}
