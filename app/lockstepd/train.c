/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet trains on demand (path.train): what each path of a peer can carry.
 *
 * The fleet audit's throughput check, short and harmless: on every path of
 * a peer, a train of count padded STAMP probes (path.mtu's, of one size)
 * leaves back to back in one burst; the narrowest link of the path spreads
 * them to its own serialization time, and they keep that spacing after it
 * (packet-train dispersion; Jacobson's packet pair, Dovrolis et al.'s
 * pathrate). The reflector stamps each arrival (T2), we stamp each reply
 * (T4): the forward capacity is the bits between the first and the last
 * probe back over their T2 spread, the round trip's (the narrower of the
 * two ways) over their T4 spread. Cross traffic and a descheduled core only
 * widen a spread, so each path's figure is the best of its trains (three
 * by default: a stall seldom hits all). A spread
 * the stamps do not resolve gives no figure ("unresolved": faster than this
 * node can measure): under TRAIN_QUANTA of the train's smallest positive
 * gap, that gap being the stamps' granularity where bursts share a stamp
 * (NIC stamps resolve a 10 Gb/s train's 1.2 us spacing; a lab lcore that
 * sleeps 200 us when idle stamps a burst at once). One unresolved train
 * makes the path unresolved: a stall can make a fast train look slow, no
 * stall makes a slow one look unresolved.
 *
 * Bits: the Ethernet frame (size from the IP header on, plus its header and
 * FCS, and a VLAN tag), not the preamble and gap, as a link's rate counts.
 *
 * The trains of a run go one at a time, path-major: the next leaves when
 * the last is back (or TRAIN_WAIT_MS after it left) and at least
 * TRAIN_GAP_MS after it, so they do not queue behind each other and the
 * peer's reflector (its rate limit, 20k pps and a burst of 256 by default)
 * refills between them. lsd_train_poll() sends them from the control loop.
 *
 * Probes are path.mtu's (mtu.c builds and hands them to the port's lcore):
 * lockstep TLV pair_member LSD_MTU_MEMBER, pair_id gen << 8 |
 * LSD_TRAIN_FLAG | slot; the sequence numbers name path, train and probe.
 * The lcore that gets a reply checks it against the slot (generation, peer,
 * T1 echoed, sequence, size), writes T2 and T4 and then sets the probe's
 * bit (release): the control thread reads stamps only behind a set bit.
 * A slot is reused only LSD_MTU_REUSE_MS after its last train left.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_random.h>

#include "lockstepd.h"
#include "ls_ctl.h"
#include "ls_stamp.h"

#define TRAIN_RUNS 16         /* slots: pair_id bits 0-3 */
#define TRAIN_MAX_COUNT 32    /* probes per train: one lcore burst, a word of bits */
#define TRAIN_MAX_TRAINS 4    /* trains per path */
#define TRAIN_GAP_MS 2        /* least time between two trains' departures */
#define TRAIN_WAIT_MS 30      /* a train's replies are awaited this long */
#define TRAIN_FRESH_MS 10000  /* path.train answers a run this young again */
#define TRAIN_L2_BYTES 18     /* Ethernet header and FCS */
#define TRAIN_QUANTA 4        /* a resolved spread spans this many smallest gaps */
#define TRAIN_POLL_NS 1000    /* a software stamp's quantum on a busy-polling lcore */

struct train {
	uint32_t got;                    /* (lcore, release) bit k: probe k back */
	uint8_t sent;                    /* (control) probes handed to the lcore */
	uint64_t sent_tsc;               /* (control) when, 0: not yet */
	uint64_t t2[TRAIN_MAX_COUNT];    /* (lcore) the reflector's receive stamp */
	uint64_t t4[TRAIN_MAX_COUNT];    /* (lcore) ours */
};

struct train_run {
	uint32_t gen;                    /* (release) the run the slot holds, 0: none */
	const struct lsd_peer *peer;     /* compared, never followed: the peer may go */
	char name[LS_NAME_LEN];
	struct ls_addr addr;
	uint16_t n_paths, count, trains, size, vlan;
	uint16_t next;                   /* (control) next train: path * trains + t */
	uint64_t t1;                     /* every probe's T1: a reply must echo it */
	uint32_t seq0;                   /* probe (p, t, k): seq0 + (p * trains + t) * count + k */
	uint64_t start_tsc, last_tsc;    /* first and last train's departure */
	int64_t started_ns;              /* UTC */
	uint32_t resized;                /* (lcore) replies of another size than sent */
	struct train *tr;                /* LS_MAX_PATHS * TRAIN_MAX_TRAINS (135 KB), the slot's */
};

static struct train_run runs[TRAIN_RUNS];
static uint32_t next_gen = 1;

static uint64_t
ms_tsc(uint64_t ms)
{
	return ms * rte_get_tsc_hz() / 1000;
}

/* ---- lcore side ----------------------------------------------------------- */

enum lsd_rx_disp
lsd_train_on_reply(const struct lsd_peer *peer, uint32_t path,
		   const struct ls_stamp_lockstep_tlv *t, const uint8_t *payload,
		   const struct ls_pkt_info *pi, uint64_t rx_ns)
{
	struct train_run *r = &runs[t->pair_id % TRAIN_RUNS];
	struct ls_stamp_reflector rf;
	struct train *tr;
	uint32_t i, k;

	/* gen 0 is a slot unused or being restarted: never a run */
	if (t->pair_id >> 8 == 0 || __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != t->pair_id >> 8 ||
	    r->peer != peer || path >= r->n_paths || r->count == 0 || r->trains == 0)
		return LSD_RX_REPLY_UNMATCHED;
	ls_stamp_decode_reflector(payload, pi->payload_len, &rf);
	i = rf.sender_seq - r->seq0;
	k = i % r->count;
	i /= r->count;          /* the train: path * trains + t */
	/* 1 ns: an NTP-format T1 comes back rounded (sender.c). The bounds
	 * against the block's size hold whatever a restart of the slot races
	 * with: its block is the largest a run can need, never freed. */
	if ((uint64_t)(rf.sender_ts_ns - r->t1 + 1) > 2 || rf.sender_seq - r->seq0 >=
	    (uint32_t)r->n_paths * r->trains * r->count || i / r->trains != path ||
	    i >= LS_MAX_PATHS * TRAIN_MAX_TRAINS || k >= TRAIN_MAX_COUNT)
		return LSD_RX_REPLY_UNMATCHED;
	if ((uint32_t)(pi->payload_off + pi->payload_len - pi->l3_off) != r->size) {
		__atomic_fetch_add(&r->resized, 1, __ATOMIC_RELAXED);
		return LSD_RX_MTU_REPLY;
	}
	tr = &r->tr[i];
	tr->t2[k] = rf.rx_ns;
	tr->t4[k] = rx_ns;
	__atomic_fetch_or(&tr->got, 1u << k, __ATOMIC_RELEASE);
	return LSD_RX_MTU_REPLY;
}

/* ---- control thread: sending ---------------------------------------------- */

/* Train i (path-major) of run r, built and handed to the lcore in one burst. */
static int
send_train(struct train_run *r, const struct lsd_peer *peer, uint16_t i)
{
	struct lsd_trace_tx *tx = calloc(1, sizeof(*tx));
	struct train *tr = &r->tr[i];
	int rc;

	if (tx == NULL)
		return -ENOMEM;
	for (uint16_t k = 0; k < r->count; k++) {
		tx->m[tx->n] = lsd_mtu_probe(peer, i / r->trains, r->size,
					     r->seq0 + (uint32_t)i * r->count + k, r->t1,
					     r->gen << 8 | LSD_TRAIN_FLAG | (uint32_t)(r - runs));
		if (tx->m[tx->n] != NULL)
			tx->n++;
	}
	tr->sent = (uint8_t)tx->n;
	tr->sent_tsc = rte_rdtsc();
	r->last_tsc = tr->sent_tsc;
	rc = tx->n == 0 ? -ENOBUFS : lsd_mtu_send(peer, tx);
	if (rc != -ETIMEDOUT)
		free(tx);
	return rc;
}

static unsigned int
got_n(const struct train *tr)
{
	return (unsigned int)__builtin_popcount(__atomic_load_n(&tr->got, __ATOMIC_ACQUIRE));
}

/* The train before r->next is back, or waited for long enough. */
static bool
ready(const struct train_run *r, uint64_t now)
{
	const struct train *tr;

	if (r->next == 0)
		return true;
	tr = &r->tr[r->next - 1];
	if (now - tr->sent_tsc < ms_tsc(TRAIN_GAP_MS))
		return false;
	return got_n(tr) >= tr->sent || now - tr->sent_tsc >= ms_tsc(TRAIN_WAIT_MS);
}

/* A peer that is still the one the run was started for, or NULL. */
static struct lsd_peer *
run_peer(const struct train_run *r)
{
	int idx = lsd_peer_find(r->name);
	struct lsd_peer *p = idx < 0 ? NULL : lsd_peer_at((unsigned int)idx);

	return p == r->peer ? p : NULL;
}

bool
lsd_train_poll(void)
{
	uint64_t now = rte_rdtsc();
	bool busy = false;

	for (unsigned int j = 0; j < TRAIN_RUNS; j++) {
		struct train_run *r = &runs[j];
		uint16_t total = (uint16_t)(r->n_paths * r->trains);
		struct lsd_peer *peer;

		if (r->gen == 0 || r->next >= total)
			continue;
		busy = true;
		if (!ready(r, now))
			continue;
		peer = run_peer(r);
		if (peer == NULL || send_train(r, peer, r->next) < 0)
			r->next = total;    /* gone, or the lcore did not take it: stop */
		else
			r->next++;
	}
	return busy;
}

/* ---- control thread: the figures ------------------------------------------ */

static bool
run_done(const struct train_run *r)
{
	const struct train *tr;

	if (r->next < r->n_paths * r->trains)
		return false;
	tr = &r->tr[r->next - 1];
	return got_n(tr) >= tr->sent || rte_rdtsc() - r->last_tsc >= ms_tsc(TRAIN_WAIT_MS);
}

/*
 * One train's Mb/s in stamps st (fwd: the reflector's T2, else our T4): the
 * frames between the first and the last probe back over their spread. A
 * spread under TRAIN_QUANTA of its smallest positive gap is the stamps'
 * granularity, not the path's spacing (a lab's lcore that sleeps when idle
 * stamps whole bursts at once): -1, unresolved. 0 when fewer than 5 came back.
 */
static double
train_mbps(const struct train_run *r, const struct train *tr, bool fwd)
{
	uint32_t got = __atomic_load_n(&tr->got, __ATOMIC_ACQUIRE);
	const uint64_t *st = fwd ? tr->t2 : tr->t4;
	uint64_t gmin = UINT64_MAX, span;
	int first = -1, last = -1;

	if (__builtin_popcount(got) < 5)
		return 0;
	for (int k = 0; k < r->count; k++) {
		if (!(got & (1u << k)))
			continue;
		if (last >= 0 && st[k] > st[last])
			gmin = RTE_MIN(gmin, st[k] - st[last]);
		if (first < 0)
			first = k;
		last = k;
	}
	span = st[last] > st[first] ? st[last] - st[first] : 0;
	if (gmin == UINT64_MAX || span < TRAIN_QUANTA * gmin)
		return -1;
	return 8.0 * (last - first) * (r->size + TRAIN_L2_BYTES + (r->vlan ? 4 : 0)) /
	       (double)span * 1e3;
}

/* The best of path p's trains, since cross traffic and stalls only widen
 * a spread; an unresolved one is faster than any figure: -1. 0 when none
 * came back. */
static double
path_mbps(const struct train_run *r, uint16_t p, bool fwd)
{
	double best = 0;

	for (uint16_t t = 0; t < r->trains; t++) {
		double v = train_mbps(r, &r->tr[p * r->trains + t], fwd);

		if (v < 0)
			return -1;
		best = RTE_MAX(best, v);
	}
	return best;
}

/* A figure for JSON: null when unresolved or not measured. */
static json_t *
mbps_json(double v)
{
	return v > 0 ? json_real(v) : json_null();
}

static json_t *
path_json(const struct train_run *r, uint16_t p)
{
	double fwd = path_mbps(r, p, true), rtt = path_mbps(r, p, false);
	unsigned int sent = 0, back = 0;

	for (uint16_t t = 0; t < r->trains; t++) {
		sent += r->tr[p * r->trains + t].sent;
		back += got_n(&r->tr[p * r->trains + t]);
	}
	return json_pack("{s:i, s:i, s:i, s:i, s:o, s:o, s:b, s:b}", "path", p,
			 "sport", lsd.cfg.probe.src_port_base + p, "sent", (int)sent,
			 "back", (int)back, "fwd_mbps", mbps_json(fwd), "rtt_mbps", mbps_json(rtt),
			 "fwd_unresolved", fwd < 0, "rtt_unresolved", rtt < 0);
}

/*
 * The most a train can resolve in our stamps (T4), Mb/s: its frames over
 * TRAIN_QUANTA stamp quanta, a quantum being a poll (TRAIN_POLL_NS) or, with
 * idle back-off (the lab), a sleep. A figure above it is "fast"; the
 * audit does not hold one against an unresolved sibling. A NIC's stamps
 * are finer: the figure is then an underestimate (fewer paths judged).
 */
static double
resolution_mbps(const struct train_run *r)
{
	double q = lsd.cfg.idle.backoff ? lsd.cfg.idle.sleep_us * 1e3 : TRAIN_POLL_NS;

	return 8.0 * (r->count - 1) * (r->size + TRAIN_L2_BYTES + (r->vlan ? 4 : 0)) /
	       (TRAIN_QUANTA * q) * 1e3;
}

static json_t *
run_json(const struct train_run *r)
{
	json_t *paths = json_array();
	char a[LS_ADDR_STRLEN];

	for (uint16_t p = 0; p < r->n_paths; p++)
		json_array_append_new(paths, path_json(r, p));
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:i, s:f, s:i, s:o}",
			 "peer", r->name, "addr", ls_addr_fmt(&r->addr, a, sizeof(a)),
			 "family", r->addr.family == LS_AF_INET ? "ipv4" : "ipv6",
			 "state", run_done(r) ? "done" : "probing",
			 "started_ns", (json_int_t)r->started_ns, "size", r->size,
			 "count", r->count, "trains", r->trains, "frame_bytes",
			 r->size + TRAIN_L2_BYTES + (r->vlan ? 4 : 0),
			 "resolution_mbps", resolution_mbps(r), "resized", (int)__atomic_load_n(&r->resized, __ATOMIC_RELAXED),
			 "paths", paths);
}

/* ---- control thread: the command ----------------------------------------- */

/* A slot for a new run: the oldest, once LSD_MTU_REUSE_MS have passed since
 * its last train left (no lcore still reads it); its trains allocated. */
static struct train_run *
free_slot(void)
{
	struct train_run *old = &runs[0];

	for (unsigned int i = 1; i < TRAIN_RUNS; i++)
		if (runs[i].start_tsc < old->start_tsc)
			old = &runs[i];
	if (old->start_tsc != 0 && (old->next < old->n_paths * old->trains ||
				    rte_rdtsc() - old->last_tsc < ms_tsc(LSD_MTU_REUSE_MS)))
		return NULL;
	return old;
}

static int
start(struct train_run *r, const struct lsd_peer *peer, uint16_t size, uint16_t count,
      uint16_t trains)
{
	struct timespec ts;

	/* the largest a run needs, once per slot and kept: a late reply racing
	 * a restart writes into this block, never into freed memory */
	if (r->tr == NULL)
		r->tr = calloc(LS_MAX_PATHS * TRAIN_MAX_TRAINS, sizeof(*r->tr));
	if (r->tr == NULL)
		return -ENOMEM;
	__atomic_store_n(&r->gen, 0, __ATOMIC_RELEASE);
	memset(r->tr, 0, (size_t)peer->n_paths * trains * sizeof(*r->tr));
	r->resized = 0;
	r->peer = peer;
	snprintf(r->name, sizeof(r->name), "%s", peer->name);
	r->addr = peer->addr;
	r->n_paths = peer->n_paths;
	r->count = count;
	r->trains = trains;
	r->size = size;
	r->vlan = peer->vlan_tci != 0;
	r->next = 0;
	r->t1 = lsd_clock_now();
	r->seq0 = (uint32_t)rte_rand();
	clock_gettime(CLOCK_REALTIME, &ts);
	r->started_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	r->start_tsc = r->last_tsc = rte_rdtsc();
	next_gen = (next_gen + 1) & 0xffffff;
	if (next_gen == 0)
		next_gen = 1;
	__atomic_store_n(&r->gen, next_gen, __ATOMIC_RELEASE);
	return 0;
}

/* The newest run to the peer named with these parameters, or NULL. */
static struct train_run *
newest(const char *name, uint16_t size, uint16_t count, uint16_t trains)
{
	struct train_run *best = NULL;

	for (unsigned int i = 0; i < TRAIN_RUNS; i++)
		if (runs[i].start_tsc != 0 && strcmp(runs[i].name, name) == 0 &&
		    (best == NULL || runs[i].start_tsc > best->start_tsc))
			best = &runs[i];
	if (best == NULL || best->size != size || best->count != count || best->trains != trains)
		return NULL;
	return best;
}

/* path.train {peer, [size], [count], [trains], [fresh]}: the newest run to
 * that peer with those parameters (a new one when none is younger than
 * TRAIN_FRESH_MS, or fresh is true); ask again until "state" is "done". */
static void
cmd_path_train(struct ls_ctl_req *req, json_t *args, void *aux __rte_unused)
{
	uint64_t size = 1500, count = TRAIN_MAX_COUNT, trains = 3;
	const struct ls_conf_port *pc;
	struct lsd_peer *peer;
	struct train_run *r;
	bool fresh;

	if ((peer = lsd_run_peer(req, args, &fresh)) == NULL ||
	    ls_ctl_arg_uint(req, args, "size", 128, LSD_MTU_MAX, &size) < 0 ||
	    ls_ctl_arg_uint(req, args, "count", 2, TRAIN_MAX_COUNT, &count) < 0 ||
	    ls_ctl_arg_uint(req, args, "trains", 1, TRAIN_MAX_TRAINS, &trains) < 0)
		return;
	pc = lsd.ports[peer->port_idx].conf;
	if (size > pc->mtu) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.size: %u is over port %s's MTU %u",
				   (unsigned int)size, pc->name, pc->mtu);
		return;
	}
	r = newest(peer->name, (uint16_t)size, (uint16_t)count, (uint16_t)trains);
	if (r != NULL && r->peer == peer && !fresh &&
	    (!run_done(r) || rte_rdtsc() - r->start_tsc < ms_tsc(TRAIN_FRESH_MS))) {
		ls_ctl_reply_ok(req, run_json(r));
		return;
	}
	if (!lsd_run_resolved(req, peer))
		return;
	r = free_slot();
	if (r == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BUSY, "%d train runs under way or done in the "
				   "last %d ms: ask again later", TRAIN_RUNS, LSD_MTU_REUSE_MS);
		return;
	}
	if (start(r, peer, (uint16_t)size, (uint16_t)count, (uint16_t)trains) < 0) {
		ls_ctl_reply_error(req, LS_CTL_E_BUSY, "no memory for the run");
		return;
	}
	lsd_train_poll();   /* the first train leaves now */
	ls_ctl_reply_ok(req, run_json(r));
}

void
lsd_train_register(struct ls_ctl *ctl)
{
	ls_ctl_register_keys(ctl, "path.train", "{peer, [size], [count], [trains], [fresh]}",
			     "back-to-back trains of padded STAMP probes on every path of a peer: "
			     "each path's capacity from their spread; poll until state is done",
			     "peer size count trains fresh", cmd_path_train, NULL);
}
