/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MTU probes on demand (path.mtu), and jumbo frames on the probe path.
 *
 * What a fleet audit asks before a job: does a packet of N bytes get to a
 * peer and back on every path? path.mtu sends a few STAMP test packets of
 * exactly N bytes (IP header to the end of the UDP payload; what the base
 * packet and our TLV leave is an RFC 8972 Extra Padding TLV) on each path
 * of a peer, with the path's own 5-tuple and flow label, so they cross the
 * links that path's probes cross. IPv4 carries DF, as every lockstep probe
 * does (ls_pkt_build_udp); IPv6 routers never fragment. A reflector answers
 * with the packet turned around in place, the same size (RFC 8762's
 * symmetric size; ours does, reflector.c), so a reply that comes back
 * crossed every link of the path both ways at N bytes. A link with a
 * smaller MTU drops it; nothing comes back.
 *
 * Off the fast path: the control thread builds the probes (from the jumbo
 * pool when larger than an mbuf) and hands them to the lcore that owns the
 * port (LSD_MSG_MTU; path discovery does the same, route.c), and a client
 * asks again until the run is done (LSD_MTU_WAIT_MS, or every probe back).
 * The lcore keeps no state for it: each probe names its run's slot in a
 * static table in the lockstep TLV (pair_member LS_STAMP_MEMBER_SINGLE: in
 * no coded pair; pair_id: generation, size, slot), and the lcore that gets
 * a reply checks it against the slot (generation, peer, T1 echoed,
 * sequence, size) and sets that probe's bit. The sender hands every reply
 * so marked to this file, never to clock sync (sender.c); regular probes
 * are members 0 and 1.
 *
 * A slot is reused only LSD_MTU_REUSE_MS after its run started, so no
 * lcore is still reading it for a reply of the old run (replies come back
 * within a round trip; later ones fail the generation check).
 *
 * Jumbo frames: the reflector and the sender read one contiguous frame,
 * and a frame longer than an mbuf (2 KB) arrives as a chain (memif, RX
 * scatter). The receive vector (rx.c) has a chain copied into one buffer
 * of the jumbo pool first (lsd_mtu_linear); only chains pay for it.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_random.h>

#include "lockstepd.h"
#include "ls_ctl.h"
#include "ls_stamp.h"

#define MTU_RUNS 16            /* slots: 4 bits of pair_id */
#define MTU_SIZES 8            /* sizes per run: 4 bits of pair_id (< 16) */
#define MTU_MAX_COUNT 8        /* probes per size and path: a byte of bits */
#define MTU_MAX_PROBES 1024    /* per run: sizes x paths x count */
#define MTU_FRESH_MS 10000     /* path.mtu answers a run this young again */
#define MTU_MIN 128            /* smallest size: headers, base packet, our TLV, padding */
#define MTU_BATCH 32           /* probes per message to the lcore (struct lsd_trace_tx) */

struct mtu_run {
	uint32_t gen;              /* (release) the run the slot holds, 0: none */
	const struct lsd_peer *peer;  /* compared, never followed: the peer may go */
	char name[LS_NAME_LEN];
	struct ls_addr addr;
	uint16_t n_paths, count, port_mtu, n_sizes;
	uint16_t size[MTU_SIZES];
	uint64_t t1;               /* every probe's T1: a reply must echo it */
	uint32_t seq0;             /* probe (s, p, k) is seq0 + (s * n_paths + p) * count + k */
	uint64_t sent_tsc;         /* 0: never started */
	int64_t started_ns;        /* UTC */
	uint8_t sent[MTU_SIZES][LS_MAX_PATHS];   /* (control) probes handed to the lcore */
	uint8_t got[MTU_SIZES][LS_MAX_PATHS];    /* (lcore) bit k: probe k came back */
	uint32_t resized;          /* (lcore) replies of another size than sent */
};

static struct mtu_run runs[MTU_RUNS];
static uint32_t next_gen = 1;

/* ---- lcore side ----------------------------------------------------------- */

struct rte_mbuf *
lsd_mtu_linear(struct lsd_lcore *lc, struct rte_mbuf *m)
{
	struct rte_mbuf *j;
	uint8_t *d;

	if (m->pkt_len > LSD_JUMBO_ROOM || lsd.jumbo == NULL)
		return m;
	j = rte_pktmbuf_alloc(lsd.jumbo);
	if (unlikely(j == NULL)) {
		lc->st.alloc_failed++;
		return m;
	}
	d = (uint8_t *)rte_pktmbuf_append(j, (uint16_t)m->pkt_len);
	/* rte_pktmbuf_read copies only what is not contiguous */
	if (d == NULL || rte_pktmbuf_read(m, 0, m->pkt_len, d) != d) {
		rte_pktmbuf_free(j);
		return m;
	}
	j->ol_flags = m->ol_flags;
	j->vlan_tci = m->vlan_tci;
	j->port = m->port;
	rte_pktmbuf_free(m);
	lc->st.jumbo_copied++;
	return j;
}

enum lsd_rx_disp
lsd_mtu_on_reply(const struct lsd_peer *peer, uint32_t path,
		 const struct ls_stamp_lockstep_tlv *t, const uint8_t *payload,
		 const struct ls_pkt_info *pi)
{
	struct mtu_run *r = &runs[t->pair_id % MTU_RUNS];
	uint32_t s = (t->pair_id >> 4) & 0xf, k;
	struct ls_stamp_reflector rf;

	if (__atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != t->pair_id >> 8 || r->peer != peer ||
	    s >= r->n_sizes || path >= r->n_paths)
		return LSD_RX_REPLY_UNMATCHED;
	ls_stamp_decode_reflector(payload, pi->payload_len, &rf);
	k = rf.sender_seq - r->seq0 - (s * r->n_paths + path) * r->count;
	/* 1 ns: an NTP-format T1 comes back rounded (sender.c) */
	if ((uint64_t)(rf.sender_ts_ns - r->t1 + 1) > 2 || k >= r->count)
		return LSD_RX_REPLY_UNMATCHED;
	if ((uint32_t)(pi->payload_off + pi->payload_len - pi->l3_off) != r->size[s])
		__atomic_fetch_add(&r->resized, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_or(&r->got[s][path], (uint8_t)(1u << k), __ATOMIC_RELAXED);
	return LSD_RX_MTU_REPLY;
}

/* ---- control thread: building and sending --------------------------------- */

int
lsd_mtu_init(void)
{
	lsd.jumbo = rte_pktmbuf_pool_create("ls_jumbo", LSD_JUMBO_MBUFS, 32, 0,
					    RTE_PKTMBUF_HEADROOM + LSD_JUMBO_ROOM,
					    (int)rte_socket_id());
	if (lsd.jumbo == NULL) {
		LSD_LOG(ERR, "cannot create the jumbo pool (%u x %u bytes): %s (try more memory: -m)",
			LSD_JUMBO_MBUFS, LSD_JUMBO_ROOM, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	return 0;
}

struct rte_mbuf *
lsd_mtu_probe(const struct lsd_peer *peer, uint16_t p, uint16_t size, uint32_t seq, uint64_t t1,
	      uint32_t pair_id)
{
	const struct lsd_port *port = &lsd.ports[peer->port_idx];
	const struct lsd_peer_path *pp = &peer->path[p];
	struct ls_pkt_udp_hdr h = {
		.src_mac = port->mac, .dst_mac = peer->mac,
		.src = peer->addr.family == LS_AF_INET ? port->v4.addr : port->v6.addr,
		.dst = peer->addr, .sport = pp->sport, .dport = lsd.cfg.probe.dst_port,
		.ttl = lsd.cfg.probe.ttl, .tos = peer->tos, .flow_label = pp->sport,
	};
	struct ls_stamp_lockstep_tlv t = {
		.node_id = lsd.cfg.node_id, .path_id = p, .pair_member = LSD_MTU_MEMBER,
		.version = 1, .pair_id = pair_id,
	};
	struct ls_stamp_sender snd = {
		.seq = seq, .err_est = lsd.send_ee, .ssid = (uint16_t)lsd.cfg.node_id, .ts_ns = t1,
	};
	uint16_t hlen = ls_pkt_udp_hdr_len(h.src.family);
	/* the UDP payload: size less the IP and UDP headers */
	uint16_t plen = (uint16_t)(size - (hlen - RTE_ETHER_HDR_LEN));
	uint32_t room = rte_pktmbuf_data_room_size(lsd.pool) - RTE_PKTMBUF_HEADROOM;
	struct rte_mbuf *m;
	uint8_t *f, *pl;
	size_t off = 0;

	m = rte_pktmbuf_alloc((uint32_t)hlen + plen <= room ? lsd.pool : lsd.jumbo);
	if (m == NULL)
		return NULL;
	f = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hlen + plen));
	if (f == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	pl = f + hlen;  /* written in place: ls_pkt_build_udp leaves it there */
	ls_stamp_encode_sender(pl, plen, &snd);
	if (ls_stamp_tlv_put_lockstep(pl + LS_STAMP_BASE_LEN, plen - LS_STAMP_BASE_LEN, &off, &t) < 0 ||
	    ls_stamp_tlv_put(pl + LS_STAMP_BASE_LEN, plen - LS_STAMP_BASE_LEN, &off, 0,
			     LS_STAMP_TLV_EXTRA_PADDING, NULL,
			     (uint16_t)(plen - LS_STAMP_BASE_LEN - off - LS_STAMP_TLV_HDR_LEN)) < 0 ||
	    ls_pkt_build_udp(f, hlen + plen, &h, pl, plen) < 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	m->vlan_tci = peer->vlan_tci;
	return m;
}

/* Probe k of size s on path p of run r. */
static struct rte_mbuf *
build(const struct mtu_run *r, const struct lsd_peer *peer, uint16_t s, uint16_t p, uint16_t k)
{
	return lsd_mtu_probe(peer, p, r->size[s], r->seq0 + ((uint32_t)s * r->n_paths + p) * r->count + k,
			     r->t1, r->gen << 8 | (uint32_t)s << 4 | (uint32_t)(r - runs));
}

int
lsd_mtu_send(const struct lsd_peer *peer, struct lsd_trace_tx *tx)
{
	int rc;

	tx->port_idx = peer->port_idx;
	rc = lsd_msg_call(lsd.ports[peer->port_idx].lcore, LSD_MSG_MTU, tx);
	if (rc == -ETIMEDOUT)
		return rc; /* the lcore may still read tx: leaked, as route.c does */
	if (rc == -ENOMEM || rc == -ENOBUFS)
		rte_pktmbuf_free_bulk(tx->m, tx->n);
	tx->n = 0;
	return rc;
}

/* Build and send every probe of run r, in batches; 0 or negative errno. */
static int
send_run(struct mtu_run *r, const struct lsd_peer *peer)
{
	struct lsd_trace_tx *tx = calloc(1, sizeof(*tx));
	int rc = 0;

	if (tx == NULL)
		return -ENOMEM;
	for (uint16_t s = 0; s < r->n_sizes && rc == 0; s++) {
		if (r->size[s] > r->port_mtu)
			continue; /* our own port would not carry it */
		for (uint16_t p = 0; p < r->n_paths && rc == 0; p++)
			for (uint16_t k = 0; k < r->count && rc == 0; k++) {
				tx->m[tx->n] = build(r, peer, s, p, k);
				if (tx->m[tx->n] == NULL)
					continue;
				tx->n++;
				r->sent[s][p]++;
				if (tx->n == MTU_BATCH)
					rc = lsd_mtu_send(peer, tx);
			}
	}
	if (rc == 0 && tx->n > 0)
		rc = lsd_mtu_send(peer, tx);
	if (rc != -ETIMEDOUT)
		free(tx);
	return rc;
}

/* A slot for a new run: the oldest, if it started LSD_MTU_REUSE_MS ago. */
static struct mtu_run *
free_slot(void)
{
	struct mtu_run *old = &runs[0];
	uint64_t hz = rte_get_tsc_hz();

	for (unsigned int i = 1; i < MTU_RUNS; i++)
		if (runs[i].sent_tsc < old->sent_tsc)
			old = &runs[i];
	if (old->sent_tsc != 0 && rte_rdtsc() - old->sent_tsc < LSD_MTU_REUSE_MS * hz / 1000)
		return NULL;
	return old;
}

static int
start(struct mtu_run *r, const struct lsd_peer *peer, const uint16_t *size, uint16_t n_sizes,
      uint16_t count)
{
	struct timespec ts;

	__atomic_store_n(&r->gen, 0, __ATOMIC_RELEASE);
	memset(r->sent, 0, sizeof(r->sent));
	memset(r->got, 0, sizeof(r->got));
	r->resized = 0;
	r->peer = peer;
	snprintf(r->name, sizeof(r->name), "%s", peer->name);
	r->addr = peer->addr;
	r->n_paths = peer->n_paths;
	r->count = count;
	r->port_mtu = lsd.ports[peer->port_idx].conf->mtu;
	r->n_sizes = n_sizes;
	memcpy(r->size, size, n_sizes * sizeof(*size));
	r->t1 = lsd_clock_now();
	r->seq0 = (uint32_t)rte_rand();
	clock_gettime(CLOCK_REALTIME, &ts);
	r->started_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	r->sent_tsc = rte_rdtsc();
	next_gen = (next_gen + 1) & 0xffffff;
	if (next_gen == 0)
		next_gen = 1;
	__atomic_store_n(&r->gen, next_gen, __ATOMIC_RELEASE);
	return send_run(r, peer);
}

/* ---- control thread: the command ----------------------------------------- */

static unsigned int
got_n(const struct mtu_run *r, uint16_t s, uint16_t p)
{
	return (unsigned int)__builtin_popcount(__atomic_load_n(&r->got[s][p], __ATOMIC_RELAXED));
}

/* Done: its wait is over, or every probe it sent came back. */
static bool
run_done(const struct mtu_run *r)
{
	if (rte_rdtsc() - r->sent_tsc >= LSD_MTU_WAIT_MS * rte_get_tsc_hz() / 1000)
		return true;
	for (uint16_t s = 0; s < r->n_sizes; s++)
		for (uint16_t p = 0; p < r->n_paths; p++)
			if (got_n(r, s, p) < r->sent[s][p])
				return false;
	return true;
}

/* One size: what was sent and came back, and the paths nothing came back on. */
static json_t *
size_json(const struct mtu_run *r, uint16_t s, bool done)
{
	unsigned int sent = 0, back = 0, ok = 0;
	json_t *failed = json_array();

	for (uint16_t p = 0; p < r->n_paths; p++) {
		sent += r->sent[s][p];
		back += got_n(r, s, p);
		if (got_n(r, s, p) > 0)
			ok++;
		else
			json_array_append_new(failed, json_integer(p));
	}
	return json_pack("{s:i, s:i, s:i, s:i, s:o, s:b, s:o}", "size", r->size[s],
			 "sent", (int)sent, "back", (int)back, "paths_ok", (int)ok,
			 "paths_failed", failed, "over_port_mtu", r->size[s] > r->port_mtu,
			 "ok", done ? json_boolean(ok == r->n_paths) : json_null());
}

static json_t *
run_json(const struct mtu_run *r)
{
	bool done = run_done(r);
	json_t *sizes = json_array(), *paths = json_array();
	char a[LS_ADDR_STRLEN];

	for (uint16_t s = 0; s < r->n_sizes; s++)
		json_array_append_new(sizes, size_json(r, s, done));
	for (uint16_t p = 0; p < r->n_paths; p++) {
		json_t *back = json_array();

		for (uint16_t s = 0; s < r->n_sizes; s++)
			json_array_append_new(back, json_integer(got_n(r, s, p)));
		json_array_append_new(paths, json_pack("{s:i, s:i, s:o}", "path", p,
						       "sport", lsd.cfg.probe.src_port_base + p,
						       "back", back));
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:i, s:o, s:o}",
			 "peer", r->name, "addr", ls_addr_fmt(&r->addr, a, sizeof(a)),
			 "family", r->addr.family == LS_AF_INET ? "ipv4" : "ipv6",
			 "state", done ? "done" : "probing", "started_ns",
			 (json_int_t)r->started_ns, "count", r->count, "port_mtu", r->port_mtu,
			 "wait_ms", LSD_MTU_WAIT_MS,
			 "resized", (int)__atomic_load_n(&r->resized, __ATOMIC_RELAXED),
			 "sizes", sizes, "paths", paths);
}

/* args.sizes: 1..MTU_SIZES integers in MTU_MIN..LSD_MTU_MAX; default the
 * audit's three. Replies bad_args and returns -1 when wrong. */
static int
sizes_arg(struct ls_ctl_req *req, json_t *args, uint16_t *size, uint16_t *n)
{
	static const uint16_t dflt[] = {1500, 4200, 9000};
	json_t *j = json_object_get(args, "sizes"), *v;
	size_t i;

	if (j == NULL) {
		memcpy(size, dflt, sizeof(dflt));
		*n = RTE_DIM(dflt);
		return 0;
	}
	if (!json_is_array(j) || json_array_size(j) == 0 || json_array_size(j) > MTU_SIZES)
		goto bad;
	json_array_foreach(j, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < MTU_MIN ||
		    json_integer_value(v) > LSD_MTU_MAX)
			goto bad;
		size[i] = (uint16_t)json_integer_value(v);
	}
	*n = (uint16_t)json_array_size(j);
	return 0;
bad:
	ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.sizes: expected 1 to %d integers "
			   "in %d..%d (bytes from the IP header on)", MTU_SIZES, MTU_MIN, LSD_MTU_MAX);
	return -1;
}

struct lsd_peer *
lsd_run_peer(struct ls_ctl_req *req, json_t *args, bool *fresh)
{
	json_t *jf = json_object_get(args, "fresh");
	const char *name;
	int idx = lsd_peer_arg(req, args, &name);

	if (idx < 0)
		return NULL;
	if (jf != NULL && !json_is_boolean(jf)) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.fresh: expected true or false");
		return NULL;
	}
	*fresh = json_is_true(jf);
	return lsd_peer_at((unsigned int)idx);
}

bool
lsd_run_resolved(struct ls_ctl_req *req, const struct lsd_peer *peer)
{
	if (__atomic_load_n(&peer->resolved, __ATOMIC_RELAXED))
		return true;
	ls_ctl_reply_error(req, LS_CTL_E_BUSY, "peer %s: next hop not resolved yet", peer->name);
	return false;
}

/* The newest run to the peer named, if it probed the same sizes, count times. */
static struct mtu_run *
newest(const char *name, const uint16_t *size, uint16_t n_sizes, uint16_t count)
{
	struct mtu_run *best = NULL;

	for (unsigned int i = 0; i < MTU_RUNS; i++) {
		struct mtu_run *r = &runs[i];

		if (r->sent_tsc != 0 && strcmp(r->name, name) == 0 &&
		    (best == NULL || r->sent_tsc > best->sent_tsc))
			best = r;
	}
	if (best == NULL || best->count != count || best->n_sizes != n_sizes ||
	    memcmp(best->size, size, n_sizes * sizeof(*size)) != 0)
		return NULL;
	return best;
}

/* path.mtu {peer, [sizes], [count], [fresh]}: the newest run to that peer
 * with those sizes and count (a new one when none is younger than
 * MTU_FRESH_MS, or fresh is true); ask again until "state" is "done". */
static void
cmd_path_mtu(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	uint16_t size[MTU_SIZES], n_sizes;
	struct lsd_peer *peer;
	struct mtu_run *r;
	uint64_t count = 2;
	bool fresh;
	int rc;

	if ((peer = lsd_run_peer(req, args, &fresh)) == NULL ||
	    sizes_arg(req, args, size, &n_sizes) < 0 ||
	    ls_ctl_arg_uint(req, args, "count", 1, MTU_MAX_COUNT, &count) < 0)
		return;
	if ((unsigned int)n_sizes * peer->n_paths * count > MTU_MAX_PROBES) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "sizes x paths x count: %u probes, "
				   "at most %d", (unsigned int)(n_sizes * peer->n_paths * count),
				   MTU_MAX_PROBES);
		return;
	}
	r = newest(peer->name, size, n_sizes, (uint16_t)count);
	if (r != NULL && r->peer == peer && !fresh &&
	    (!run_done(r) || rte_rdtsc() - r->sent_tsc < MTU_FRESH_MS * rte_get_tsc_hz() / 1000)) {
		ls_ctl_reply_ok(req, run_json(r));
		return;
	}
	if (!lsd_run_resolved(req, peer))
		return;
	r = free_slot();
	if (r == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BUSY, "%d MTU runs started in the last %d ms: "
				   "ask again later", MTU_RUNS, LSD_MTU_REUSE_MS);
		return;
	}
	rc = start(r, peer, size, n_sizes, (uint16_t)count);
	if (rc < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BUSY, "cannot send the probes: %s", strerror(-rc));
		return;
	}
	ls_ctl_reply_ok(req, run_json(r));
}

void
lsd_mtu_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "path.mtu", "{peer, [sizes], [count], [fresh]}",
			     "padded STAMP probes (DF) of each size on every path of a peer: "
			     "which came back; poll until state is done",
			     "peer sizes count fresh", cmd_path_mtu, NULL);
}
