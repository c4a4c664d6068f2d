/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet capture to a nanosecond-resolution pcap file.
 *
 * The lcores never touch the file: while capture is on they copy each probe
 * sent or received (up to snaplen bytes) into an mbuf from a dedicated pool,
 * tag it with its timestamp and direction (an mbuf dynfield), and enqueue it
 * on a multi-producer ring. The control thread drains the ring and writes
 * with libpcap. A full ring or empty pool drops the copy (counted), never
 * the packet, so capture cannot slow the data path down. The file is bounded
 * by max_bytes: capture stops by itself when the next record would pass it.
 *
 * Files are written only into capture.dir, as new regular files with a plain
 * name: the control socket's clients may be less trusted than root, so they
 * must not be able to make the daemon truncate, follow a link to, or block
 * on any other path (docs/security.md).
 *
 * Timestamps are the daemon's clock (PTP time with the TSC source; the lab
 * timeline with the simulated clock), so a capture lines up with what
 * lockstepd measured.
 *
 * That capture holds probes only. For everything a port carries (ARP, ND,
 * the bridge's data path) this file also starts DPDK's packet capture
 * framework, rte_pdump, which Debian's dpdk-dumpcap uses: see
 * lsd_pdump_init() below and docs/control.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <pcap/pcap.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_pcapng.h>
#include <rte_pdump.h>
#include <rte_ring.h>
#include <rte_version.h>

#include "lockstepd.h"
#include "ls_ctl.h"

static struct {
	pcap_t *pcap;
	pcap_dumper_t *dumper;
	char file[LSD_CAP_PATH_LEN];
	uint64_t max_bytes;
	uint64_t bytes;
	uint64_t packets;
	uint64_t dropped_at_start; /* lcore drop counters when we started */
	bool truncated;            /* stopped because of max_bytes */
	bool pdump;                /* rte_pdump_init() done: dpdk-dumpcap may attach */
} capture_st;

/* The lcore side: a copy of m (at most snaplen bytes) for the control
 * thread to write, or a counted drop. */
void
lsd_capture_copy(struct lsd_lcore *lc, struct rte_mbuf *m, uint64_t ts_ns, bool tx)
{
	struct rte_mbuf *c;

	c = rte_pktmbuf_copy(m, lsd.cap.pool, 0, lsd.cap.snaplen);
	if (c == NULL) {
		lc->st.cap_dropped++;
		return;
	}
	/* pkt_len of the copy is the captured length; keep the wire length. */
	c->hash.usr = m->pkt_len;
	*lsd_cap_field(c) = (ts_ns & ~LSD_CAP_TX_BIT) | (tx ? LSD_CAP_TX_BIT : 0);
	if (rte_ring_mp_enqueue(lsd.cap.ring, c) != 0) {
		rte_pktmbuf_free(c);
		lc->st.cap_dropped++;
		return;
	}
	lc->st.cap_copied++;
}

static uint64_t
lcore_cap_dropped(void)
{
	return LSD_LCORES_SUM(cap_dropped);
}

int
lsd_capture_init(void)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = "lockstep_capture_ts",
		.size = sizeof(uint64_t),
		.align = __alignof__(uint64_t),
	};
	unsigned int n = lsd.cfg.capture.ring_size;

	lsd.ts_dynfield = rte_mbuf_dynfield_register(&desc);
	if (lsd.ts_dynfield < 0)
		return -rte_errno;
	lsd.cap.ring = rte_ring_create("ls_capture", n, (int)rte_socket_id(), RING_F_SC_DEQ);
	if (lsd.cap.ring == NULL)
		return -rte_errno;
	lsd.cap.pool = rte_pktmbuf_pool_create("ls_capture", n - 1, 64, 0,
					     (uint16_t)(RTE_PKTMBUF_HEADROOM +
							lsd.cfg.capture.snaplen),
					     (int)rte_socket_id());
	if (lsd.cap.pool == NULL)
		return -rte_errno;
	lsd.cap.snaplen = lsd.cfg.capture.snaplen;
	return 0;
}

/*
 * dpdk-dumpcap is a DPDK secondary process: it maps our memory, then asks
 * over the EAL's multi-process channel for rx/tx callbacks on the ports it
 * captures, which copy each frame into its own pool and ring on the lcore
 * that polls the port. rte_pdump_init() only registers the handler for
 * that request and a statistics memzone (2 MiB with Debian's 32 ports x
 * 1024 queues), so a frame costs nothing until a capture is running: no
 * config key, it is on wherever it can work. A secondary needs hugepage
 * memory (a --no-huge process's memory is a memfd no other process can
 * open) and the channel (--in-memory and --no-shconf turn it off); without
 * them pdump stays off and the log says why. Failing to start it is not
 * fatal: the daemon's own work does not need it.
 */
static int
mp_probe_nop(const struct rte_mp_msg *msg __rte_unused, const void *peer __rte_unused)
{
	return 0;
}

/* The EAL's multi-process channel is up (not --in-memory, --no-shconf). */
static bool
mp_channel_up(void)
{
	if (rte_mp_action_register("ls_mp_probe", mp_probe_nop) < 0)
		return rte_errno != ENOTSUP;
	rte_mp_action_unregister("ls_mp_probe");
	return true;
}

#if RTE_VERSION < RTE_VERSION_NUM(23, 11, 0, 0)
/*
 * DPDK 22.11's pcapng sets its TSC-to-time base lazily, in the first copy,
 * from a TSC read after the one pdump took for that copy's burst: the first
 * delta is negative, wraps, and every capture from this process is stamped
 * 2^64 TSC ticks late (244 years at 2.4 GHz). One copy now, stamped a
 * second ahead, sets the base before any capture can. (23.11 converts in
 * the capturing process, which also ends 22.11's race between lcores that
 * move the shared base on: docs/control.md.)
 */
static void
pcapng_base_start(void)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(lsd.pool), *c = NULL;

	if (m != NULL && lsd.n_ports > 0)
		c = rte_pcapng_copy(lsd.ports[0].port_id, 0, m, lsd.pool, 64,
				    rte_get_tsc_cycles() + rte_get_tsc_hz(),
				    RTE_PCAPNG_DIRECTION_UNKNOWN);
	rte_pktmbuf_free(c);
	rte_pktmbuf_free(m);
}
#else
static void
pcapng_base_start(void)
{
}
#endif

/* After the ports and the pool, before the lcores poll. */
void
lsd_pdump_init(void)
{
	const char *prefix = strrchr(rte_eal_get_runtime_dir(), '/');
	const char *why = !rte_eal_has_hugepages() ? "--no-huge" :
			  !mp_channel_up() ? "--in-memory or --no-shconf" : NULL;

	if (why != NULL) {
		LSD_LOG(INFO, "pdump: off (%s: dpdk-dumpcap cannot attach)", why);
		return;
	}
	if (rte_pdump_init() < 0) {
		LSD_LOG(WARNING, "pdump: cannot start, dpdk-dumpcap will not attach: %s",
		       rte_strerror(rte_errno));
		return;
	}
	pcapng_base_start();
	capture_st.pdump = true;
	LSD_LOG(INFO, "pdump: ready for dpdk-dumpcap --file-prefix=%s",
	       prefix != NULL ? prefix + 1 : "rte");
}

/* After the lcores have stopped: no callback runs any more. */
void
lsd_pdump_fini(void)
{
	if (capture_st.pdump)
		rte_pdump_uninit();
	capture_st.pdump = false;
}

/* A plain file name: no directory part, not hidden, no "." or "..", no
 * control characters, short enough that status never cuts it. */
static bool
name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > LSD_CAP_NAME_MAX || name[0] == '.' || strchr(name, '/') != NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return true;
}

/*
 * Create name in capture.dir: new (O_EXCL: never truncate, never follow a
 * link or open a FIFO someone left there), non-blocking, 0640, and a
 * regular file. Returns a stdio stream for pcap_dump_fopen, or NULL.
 */
static FILE *
capture_create(const char *name, char *err, size_t len)
{
	const char *dir = lsd.cfg.capture.dir;
	struct stat st;
	int dfd, fd, e;
	FILE *fp;

	if (!name_ok(name)) {
		snprintf(err, len, "args.file: '%s' is not a plain file name (captures go into "
			 "capture.dir %s: no '/', no leading '.', at most %d bytes)",
			 name, dir, LSD_CAP_NAME_MAX);
		return NULL;
	}
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		snprintf(err, len, "capture.dir %s: %s", dir, strerror(errno));
		return NULL;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, len, "capture.dir %s: %s", dir, strerror(errno));
		return NULL;
	}
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0640);
	e = errno;
	close(dfd);
	if (fd < 0) {
		snprintf(err, len, "cannot create %s/%s: %s%s", dir, name, strerror(e),
			 e == EEXIST ? " (a capture is always a new file)" : "");
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, len, "%s/%s: not a regular file", dir, name);
		close(fd);
		return NULL;
	}
	fp = fdopen(fd, "wb");
	if (fp == NULL) {
		snprintf(err, len, "%s/%s: %s", dir, name, strerror(errno));
		close(fd);
	}
	return fp;
}

int
lsd_capture_start(const char *file, uint32_t snaplen, uint64_t max_bytes, char *err,
		 size_t len)
{
	FILE *fp;

	if (capture_st.dumper != NULL) {
		snprintf(err, len, "capture already running to %s", capture_st.file);
		return -EBUSY;
	}
	if (snaplen == 0 || snaplen > lsd.cfg.capture.snaplen)
		snaplen = lsd.cfg.capture.snaplen;
	capture_st.pcap = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)snaplen,
							PCAP_TSTAMP_PRECISION_NANO);
	if (capture_st.pcap == NULL) {
		snprintf(err, len, "pcap_open_dead failed");
		return -ENOMEM;
	}
	fp = capture_create(file, err, len);
	capture_st.dumper = fp != NULL ? pcap_dump_fopen(capture_st.pcap, fp) : NULL;
	if (capture_st.dumper == NULL) {
		if (fp != NULL) {
			snprintf(err, len, "cannot write %s: %s", file, pcap_geterr(capture_st.pcap));
			fclose(fp);
		}
		pcap_close(capture_st.pcap);
		capture_st.pcap = NULL;
		return -EIO;
	}
	snprintf(capture_st.file, sizeof(capture_st.file), "%s/%s", lsd.cfg.capture.dir, file);
	capture_st.max_bytes = max_bytes ? max_bytes : lsd.cfg.capture.max_bytes;
	capture_st.bytes = 24; /* pcap file header */
	capture_st.packets = 0;
	capture_st.truncated = false;
	capture_st.dropped_at_start = lcore_cap_dropped();
	lsd.cap.snaplen = snaplen;
	/* Copies that landed after the previous capture stopped are not ours. */
	{
		struct rte_mbuf *m;

		while (rte_ring_sc_dequeue(lsd.cap.ring, (void **)&m) == 0)
			rte_pktmbuf_free(m);
	}
	__atomic_store_n(&lsd.cap.on, 1, __ATOMIC_RELEASE);
	LSD_LOG(INFO, "capture: started to %s (snaplen %u, max %" PRIu64 " bytes)",
	       capture_st.file, snaplen, capture_st.max_bytes);
	return 0;
}

static void
write_one(struct rte_mbuf *m)
{
	struct pcap_pkthdr h;
	uint64_t ts = *lsd_cap_field(m) & ~LSD_CAP_TX_BIT;
	uint32_t caplen = rte_pktmbuf_data_len(m);

	if (capture_st.dumper == NULL || capture_st.bytes + 16 + caplen > capture_st.max_bytes) {
		if (capture_st.dumper != NULL && !capture_st.truncated) {
			capture_st.truncated = true;
			__atomic_store_n(&lsd.cap.on, 0, __ATOMIC_RELEASE);
			LSD_LOG(WARNING, "capture: %s reached %" PRIu64 " bytes, stopped",
			       capture_st.file, capture_st.max_bytes);
		}
		return;
	}
	/* With nanosecond precision libpcap stores nanoseconds in tv_usec. */
	h.ts.tv_sec = (time_t)(ts / LS_NS_PER_S);
	h.ts.tv_usec = (suseconds_t)(ts % LS_NS_PER_S);
	h.caplen = caplen;
	h.len = (uint32_t)m->hash.usr;
	if (h.len < caplen)
		h.len = caplen;
	pcap_dump((u_char *)capture_st.dumper, &h, rte_pktmbuf_mtod(m, const u_char *));
	capture_st.bytes += 16 + caplen;
	capture_st.packets++;
}

void
lsd_capture_drain(void)
{
	struct rte_mbuf *m[64];
	unsigned int n;

	do {
		n = rte_ring_sc_dequeue_burst(lsd.cap.ring, (void **)m, RTE_DIM(m), NULL);
		for (unsigned int i = 0; i < n; i++) {
			write_one(m[i]);
			rte_pktmbuf_free(m[i]);
		}
	} while (n > 0);
}

int
lsd_capture_stop(void)
{
	if (capture_st.dumper == NULL)
		return -ENOENT;
	__atomic_store_n(&lsd.cap.on, 0, __ATOMIC_RELEASE);
	/* Copies already in flight still belong to this file. */
	rte_delay_us_sleep(1000);
	lsd_capture_drain();
	pcap_dump_close(capture_st.dumper);
	pcap_close(capture_st.pcap);
	capture_st.dumper = NULL;
	capture_st.pcap = NULL;
	LSD_LOG(INFO, "capture: %s closed, %" PRIu64 " packets, %" PRIu64 " bytes",
	       capture_st.file, capture_st.packets, capture_st.bytes);
	return 0;
}

void
lsd_capture_status(struct lsd_capture_status *st)
{
	st->active = capture_st.dumper != NULL && lsd.cap.on;
	snprintf(st->file, sizeof(st->file), "%s", capture_st.file);
	st->packets = capture_st.packets;
	st->bytes = capture_st.bytes;
	st->dropped = lcore_cap_dropped() - capture_st.dropped_at_start;
}

/* ---- commands ------------------------------------------------------------ */

static void
cmd_capture_start(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	const char *file = json_string_value(json_object_get(args, "file"));
	uint64_t snaplen = 0, max_bytes = 0;
	char err[300];
	int rc;

	if (ls_ctl_arg_uint(req, args, "snaplen", 64, 65535, &snaplen) < 0 ||
	    ls_ctl_arg_uint(req, args, "max_bytes", 4096, 1ULL << 40, &max_bytes) < 0)
		return;
	if (file == NULL || file[0] == '\0') {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS,
				   "args.file: required string (file name in capture.dir)");
		return;
	}
	rc = lsd_capture_start(file, (uint32_t)snaplen, max_bytes, err, sizeof(err));
	if (rc < 0) {
		ls_ctl_reply_error(req, rc == -EBUSY ? LS_CTL_E_BUSY : LS_CTL_E_BAD_ARGS, "%s", err);
		return;
	}
	ls_ctl_reply_ok(req, json_pack("{s:s}", "file", capture_st.file));
}

static void
cmd_capture_stop(struct ls_ctl_req *req, json_t *args __rte_unused, void *aux __rte_unused)
{
	struct lsd_capture_status cs;

	if (lsd_capture_stop() < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no capture running");
		return;
	}
	lsd_capture_status(&cs);
	ls_ctl_reply_ok(req, json_pack("{s:s, s:I, s:I, s:I}", "file", cs.file,
				       "packets", (json_int_t)cs.packets,
				       "bytes", (json_int_t)cs.bytes,
				       "dropped", (json_int_t)cs.dropped));
}

void
lsd_capture_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "capture.start", "{file, [snaplen], [max_bytes]}",
			     "write probes sent and received to a new pcap file in capture.dir",
			     "file snaplen max_bytes", cmd_capture_start, NULL);
	ls_ctl_register_keys(ctl, "capture.stop", "", "close the capture file", NULL,
			     cmd_capture_stop, NULL);
}
