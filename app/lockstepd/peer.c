/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer registry and the control thread's messages to the lcores.
 *
 * The registry is the list of installed peers, in the order the control
 * socket shows them (a removal moves the last peer into the gap). Only the
 * control thread reads or writes it.
 *
 * An lcore's state changes only through a message on its ring: the control
 * thread queues an lsd_msg and waits up to LSD_MSG_WAIT_US for the lcore to
 * mark it done. Peers are allocated here, owned by the lcore while
 * installed, and freed only after the lcore has given them back
 * (LSD_MSG_PEER_DEL), so neither side ever sees freed memory.
 *
 * A message happens wholly or not at all: the lcore takes it and the
 * control thread gives up on it each by moving msg->state off QUEUED with a
 * compare-and-swap, so exactly one of them wins. A message given up on
 * (-ETIMEDOUT) is never applied, so the caller may free its peer: no peer
 * is left half added (issue 28: a peer.add that timed out used to leave
 * the lcore probing a peer the registry did not know). One the lcore took
 * is waited for to the end: it is being applied right now. The lcore still
 * reads a cancelled message's state when it dequeues it, so that message
 * is leaked (a few dozen bytes), never freed.
 *
 * This room knows nothing of clock sync or the socket: the callers above
 * (control.c) attach a new peer to sync.c and detach it before freeing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_timer.h>

#include "lockstepd.h"
#include "ls_ctl.h"

#define LSD_MSG_WAIT_US (2 * 1000 * 1000)

static struct {
	struct lsd_peer *peers[LS_MAX_PEERS];
	unsigned int n_peers;
	/* name and address -> index: peer.add looked both up by a scan of
	 * every peer, two cache misses each (~2 ms at 10,000 peers) */
	struct rte_hash *by_name, *by_addr;
	uint64_t removals;
} registry;

/* A name as a hash key (NUL-padded); -1 when too long to be a peer's. */
static int
reg_name_key(const char *name, char *k)
{
	size_t n = strnlen(name, LS_NAME_LEN);

	if (n == LS_NAME_LEN)
		return -1;
	memset(k, 0, LS_NAME_LEN);
	memcpy(k, name, n);
	return 0;
}

static int
reg_init(void)
{
	/* cuckoo tables fill to about 90%: twice the peers */
	struct rte_hash_parameters np = {
		.name = "lsd_peer_names", .entries = 2 * LS_MAX_PEERS, .key_len = LS_NAME_LEN,
		.hash_func = rte_jhash, .socket_id = SOCKET_ID_ANY,
	}, ap = np;

	if (registry.by_name != NULL)
		return 0;
	ap.name = "lsd_peer_addrs";
	ap.key_len = sizeof(struct lsd_addr_key); /* the lcores' key: one address, one peer */
	registry.by_name = rte_hash_create(&np);
	registry.by_addr = rte_hash_create(&ap);
	return registry.by_name != NULL && registry.by_addr != NULL ? 0 : -ENOMEM;
}

/* Index i's peer into the indexes (its entries point at i). */
static void
reg_index(unsigned int i)
{
	const struct lsd_peer *p = registry.peers[i];
	char nk[LS_NAME_LEN];
	struct lsd_addr_key ak;

	if (reg_name_key(p->name, nk) == 0)
		rte_hash_add_key_data(registry.by_name, nk, (void *)(uintptr_t)i);
	lsd_addr_key(&p->addr, &ak);
	rte_hash_add_key_data(registry.by_addr, &ak, (void *)(uintptr_t)i);
}

static void
reg_unindex(const struct lsd_peer *p)
{
	char nk[LS_NAME_LEN];
	struct lsd_addr_key ak;

	if (reg_name_key(p->name, nk) == 0)
		rte_hash_del_key(registry.by_name, nk);
	lsd_addr_key(&p->addr, &ak);
	rte_hash_del_key(registry.by_addr, &ak);
}

/* peer at the registry's end. */
static void
reg_append(struct lsd_peer *peer)
{
	registry.peers[registry.n_peers] = peer;
	reg_index(registry.n_peers++);
}

/* Index idx out: the last peer moves into its place. */
static void
reg_remove(unsigned int idx)
{
	reg_unindex(registry.peers[idx]);
	registry.removals++;
	registry.peers[idx] = registry.peers[--registry.n_peers];
	if (idx < registry.n_peers)
		reg_index(idx);
}

/* Outstanding-probe ring entries a peer probing every interval_us needs. */
uint32_t
lsd_peer_track_size(uint32_t interval_us)
{
	struct lsd_peer tmp = { .interval_us = interval_us };
	double pps = 2.0 * lsd.cfg.probe.acquire_rate * 1e6 / (double)interval_us;

	return ls_path_track_size(pps, lsd_peer_loss_timeout_ns(&tmp));
}

/*
 * Probes a path sends in window_ms, as a power of 2 in [16, max] (the
 * clock-sync estimators' size): two a pair, acquire_rate x as many for
 * the part of the window acquisition lasts, each interval as short as the
 * jitter makes it, and a pair more at each end. A pair a second needs 32
 * with a 2 s window, not 1024. A window longer than acquisition (sync's
 * window follows the rate: ls_sync_est_window_for) counts it only for
 * acquire_ms: "all of it at the acquisition rate, twice over", the rule
 * before, gave a 12 s window at a pair a second 256 probes, 8 KiB a path.
 */
uint32_t
lsd_peer_probes_in(const struct lsd_peer *peer, uint32_t window_ms, uint32_t max)
{
	double acq = lsd_acquire_on() ? RTE_MIN(window_ms, lsd.cfg.probe.acquire_ms) : 0;
	double fast = lsd_acquire_on() ? lsd.cfg.probe.acquire_rate : 1;
	double pairs = (acq * fast + (window_ms - acq)) * 1e3 / (double)peer->interval_us /
		       (1.0 - lsd.cfg.probe.jitter_pct / 100.0) + 2;
	double n = 2 * pairs;
	uint32_t c = 16;

	while (c < max && (double)c < n)
		c <<= 1;
	return c;
}

/*
 * One block from the C heap, not rte_malloc: the lcore needs no DMA-able
 * memory for a peer, and glibc gives freed memory back to the system
 * (malloc_trim after peer.del) where DPDK's heap keeps it. Layout: the
 * peer, its paths, their outstanding-probe rings, then the windows.
 */
struct lsd_peer *
lsd_peer_new(const struct ls_conf_peer *cp)
{
	uint16_t n_paths = cp->paths ? cp->paths : lsd.cfg.probe.paths;
	int port = cp->port[0] ? ls_config_port_index(&lsd.cfg, cp->port) : 0;
	uint32_t interval = cp->interval_us ? cp->interval_us : lsd.cfg.probe.interval_us;
	uint32_t n_track = lsd_peer_track_size(interval);
	size_t head = RTE_ALIGN_CEIL(sizeof(struct lsd_peer) +
				     n_paths * sizeof(struct lsd_peer_path), RTE_CACHE_LINE_SIZE);
	size_t rings = (size_t)n_paths * n_track * sizeof(struct ls_path_track);
	size_t size = RTE_ALIGN_CEIL(head + rings + n_paths * sizeof(struct ls_path_window),
				     RTE_CACHE_LINE_SIZE);
	uint64_t now = lsd_clock_now();
	struct ls_path_track *track;
	struct lsd_peer *peer;

	if (port < 0)
		return NULL;
	peer = aligned_alloc(RTE_CACHE_LINE_SIZE, size);
	if (peer == NULL)
		return NULL;
	memset(peer, 0, head);
	track = (struct ls_path_track *)((char *)peer + head);
	peer->win = (struct ls_path_window *)((char *)track + rings);
	snprintf(peer->name, sizeof(peer->name), "%s", cp->name);
	peer->addr = cp->addr;
	peer->port_idx = (uint16_t)port;
	peer->interval_us = interval;
	peer->n_paths = n_paths;
	peer->n_track = n_track;
	peer->slot = -1;
	peer->asym_ns = cp->asym_ns;
	peer->dscp_conf = cp->dscp;
	peer->pcp_conf = cp->pcp;
	peer->tos = (uint8_t)((cp->dscp >= 0 ? cp->dscp : lsd.cfg.probe.dscp) << 2);
	/* probes ride the class they watch: RoCE's PFC priority on a VLAN port */
	peer->vlan_tci = (uint16_t)((cp->pcp >= 0 ? cp->pcp : lsd.cfg.probe.pcp) << 13 |
				    lsd.ports[port].vlan);
	if (cp->has_mac) {
		peer->mac = cp->mac;
		peer->resolved = true;
		peer->static_mac = true;
	}
	for (uint16_t i = 0; i < n_paths; i++) {
		struct lsd_peer_path *pp = &peer->path[i];

		pp->peer = peer;
		pp->idx = i;
		pp->sport = (uint16_t)(lsd.cfg.probe.src_port_base + i);
		rte_timer_init(&pp->tim);
		rte_timer_init(&pp->pair_tim);
		ls_path_live_init(&pp->live, track + (size_t)i * n_track, n_track, now);
		ls_path_window_init(&peer->win[i]);
	}
	return peer;
}

/* The block lsd_peer_new() allocated, for the memory figures. */
size_t
lsd_peer_bytes(const struct lsd_peer *peer)
{
	size_t n = RTE_ALIGN_CEIL(sizeof(*peer) + peer->n_paths * sizeof(peer->path[0]),
				  RTE_CACHE_LINE_SIZE) +
		   (size_t)peer->n_paths * peer->n_track * sizeof(struct ls_path_track);

	for (uint16_t i = 0; i < peer->n_paths; i++)
		n += ls_path_window_bytes(&peer->win[i]);
	return n;
}

void
lsd_peer_free(struct lsd_peer *peer)
{
	if (peer == NULL)
		return;
	for (uint16_t i = 0; i < peer->n_paths; i++)
		ls_path_window_free(&peer->win[i]);
	free(peer);
}

/* How long to wait for an lcore: LSD_MSG_WAIT_US, or for tests the
 * environment's LOCKSTEPD_TEST_MSG_WAIT_US (to make time-outs happen). */
static uint64_t
msg_wait_us(void)
{
	static uint64_t wait;

	if (wait == 0) {
		const char *e = getenv("LOCKSTEPD_TEST_MSG_WAIT_US");

		wait = e != NULL && strtoull(e, NULL, 10) > 0 ? strtoull(e, NULL, 10) :
								   LSD_MSG_WAIT_US;
	}
	return wait;
}

int
lsd_msg_post(unsigned int lcore, struct lsd_msg *m)
{
	m->done = 0;
	m->state = LSD_MSG_QUEUED;
	return rte_ring_mp_enqueue(lsd.lcores[lcore].msgs, m) != 0 ? -ENOBUFS : 0;
}

#define MSG_SPIN_US 100

/* Wait for a posted m until deadline (timer cycles), then give up on it
 * unless the lcore has taken it: its result, or -ETIMEDOUT (never applied). */
static int
msg_wait(struct lsd_msg *m, uint64_t deadline)
{
	uint32_t q = LSD_MSG_QUEUED;
	uint64_t spin = rte_get_timer_cycles() +
			(lsd.cfg.idle.backoff ? 0 : rte_get_timer_hz() / 1000000 * MSG_SPIN_US);

	/* A polling lcore takes a message within a loop, microseconds: a
	 * sleep (50 us asked, often hundreds given on a busy host) was most
	 * of a peer.add. Spin that long first, then sleep; not for lcores
	 * that sleep when idle (idle.backoff, labs that share cores), where
	 * the spin would take the CPU they wait for. */
	while (rte_get_timer_cycles() < spin)
		if (__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
			return m->result;
		else
			rte_pause();
	while (rte_get_timer_cycles() < deadline) {
		if (__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
			return m->result;
		rte_delay_us_sleep(50);
	}
	if (__atomic_compare_exchange_n(&m->state, &q, LSD_MSG_CANCELLED, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -ETIMEDOUT;      /* never applied, never will be */
	/* The lcore took it before we gave up: it is being applied now. */
	while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
		rte_pause();
	return m->result;
}

static uint64_t
msg_deadline(void)
{
	return rte_get_timer_cycles() + msg_wait_us() * rte_get_timer_hz() / 1000000;
}

int
lsd_msg_send(unsigned int lcore, struct lsd_msg *m)
{
	int rc = lsd_msg_post(lcore, m);

	return rc < 0 ? rc : msg_wait(m, msg_deadline());
}

int
lsd_msg_call(unsigned int lcore, enum lsd_msg_type type, const void *ptr)
{
	/* on the heap: a message given up on is still read by the lcore */
	struct lsd_msg *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL)
		return -ENOMEM;
	m->type = type;
	m->ptr = ptr;
	rc = lsd_msg_send(lcore, m);
	if (rc != -ETIMEDOUT)
		free(m);
	return rc;
}

/* A message about peer, or NULL. Messages live on the heap: after a
 * time-out the lcore still reads its state, so it is leaked, not freed. */
static struct lsd_msg *
msg_new(struct lsd_peer *peer, enum lsd_msg_type type, uint32_t interval_us)
{
	struct lsd_msg *m = calloc(1, sizeof(*m));

	if (m != NULL) {
		m->type = type;
		m->peer = peer;
		m->interval_us = interval_us;
	}
	return m;
}

/* Send m to the lcore that owns (or will own) its peer and wait. */
static int
msg_call(struct lsd_msg *m)
{
	int rc = lsd_msg_send(lsd.ports[m->peer->port_idx].lcore, m);

	if (rc != -ETIMEDOUT)
		free(m);
	return rc;
}

/* One message about a peer to the lcore that owns (or will own) it. */
static int
peer_msg(struct lsd_peer *peer, enum lsd_msg_type type, uint32_t interval_us)
{
	struct lsd_msg *m = msg_new(peer, type, interval_us);

	return m != NULL ? msg_call(m) : -ENOMEM;
}

int
lsd_peer_set_interval(struct lsd_peer *peer, uint32_t interval_us)
{
	return peer_msg(peer, LSD_MSG_PROBE_SET, interval_us);
}

int
lsd_peer_acquire(struct lsd_peer *peer)
{
	return peer_msg(peer, LSD_MSG_PEER_ACQUIRE, 0);
}

struct lsd_peer *
lsd_peer_at(unsigned int i)
{
	return registry.peers[i];
}

unsigned int
lsd_peer_count(void)
{
	return registry.n_peers;
}

void
lsd_peer_prefetch_ahead(unsigned int i)
{
	const unsigned int n = registry.n_peers;
	const struct lsd_peer *next;

	if (n < 2)
		return;
	rte_prefetch0(registry.peers[(i + 2) % n]);
	next = registry.peers[(i + 1) % n];
	for (uint16_t k = 0; k < next->n_paths; k++) {
		rte_prefetch0(&next->path[k].state_down);
		rte_prefetch0(&next->path[k].q_tsc);
	}
}

int
lsd_peer_find(const char *name)
{
	char nk[LS_NAME_LEN];
	void *i;

	if (registry.by_name == NULL || reg_name_key(name, nk) < 0 ||
	    rte_hash_lookup_data(registry.by_name, nk, &i) < 0)
		return -1;
	return (int)(uintptr_t)i;
}

int
lsd_peer_find_addr(const struct ls_addr *a)
{
	struct lsd_addr_key ak;
	void *i;

	lsd_addr_key(a, &ak);
	if (registry.by_addr == NULL || rte_hash_lookup_data(registry.by_addr, &ak, &i) < 0)
		return -1;
	return (int)(uintptr_t)i;
}

int
lsd_peer_install(struct lsd_peer *peer)
{
	int rc = reg_init();

	if (rc == 0)
		rc = peer_msg(peer, LSD_MSG_PEER_ADD, 0);
	if (rc == 0)
		reg_append(peer);
	return rc;
}

/*
 * Install n peers (at most LSD_PEER_BATCH) with their messages queued
 * together, so an lcore takes them in one go instead of one wake-up each
 * (a config of 10k peers). rc[i] is each one's result, as
 * lsd_peer_install's; the ones that worked are in the registry, in order.
 */
void
lsd_peer_install_batch(struct lsd_peer *const *peers, unsigned int n, int *rc)
{
	static struct lsd_msg *m[LSD_PEER_BATCH];  /* control thread only */
	uint64_t deadline;
	unsigned int i;

	if (reg_init() < 0) {
		for (i = 0; i < n; i++)
			rc[i] = -ENOMEM;
		return;
	}
	for (i = 0; i < n && i < LSD_PEER_BATCH; i++) {
		m[i] = msg_new(peers[i], LSD_MSG_PEER_ADD, 0);
		rc[i] = m[i] == NULL ? -ENOMEM :
			lsd_msg_post(lsd.ports[peers[i]->port_idx].lcore, m[i]);
	}
	deadline = msg_deadline();
	for (i = 0; i < n && i < LSD_PEER_BATCH; i++) {
		if (rc[i] == 0)
			rc[i] = msg_wait(m[i], deadline);
		if (rc[i] != -ETIMEDOUT)
			free(m[i]);
		if (rc[i] == 0)
			reg_append(peers[i]);
	}
}

/*
 * Take peer idx out of the registry and back from its lcore: 0 when it is
 * back (free it), -ENOMEM or -ETIMEDOUT with the peer still installed and
 * in the registry (at the end of it, when it timed out).
 */
int
lsd_peer_uninstall(unsigned int idx)
{
	struct lsd_peer *peer = registry.peers[idx];
	struct lsd_msg *m = msg_new(peer, LSD_MSG_PEER_DEL, 0);

	if (m == NULL)
		return -ENOMEM;
	/* Out of the registry first: nothing here reads it from now on. */
	reg_remove(idx);
	if (msg_call(m) == -ETIMEDOUT) {
		/* never delivered: the lcore still has it, and so do we */
		reg_append(peer);
		return -ETIMEDOUT;
	}
	/* whatever else the lcore says, it no longer holds the peer; the
	 * data path's other lcores may have read it just now (the delay
	 * mode): they let go within a loop */
	if (lsd.qsbr != NULL)
		rte_rcu_qsbr_synchronize(lsd.qsbr, RTE_QSBR_THRID_INVALID);
	return 0;
}

uint64_t
lsd_peer_removals(void)
{
	return registry.removals;
}

void
lsd_peer_forget_all(void)
{
	registry.removals++;
	registry.n_peers = 0;
	if (registry.by_name != NULL) {
		rte_hash_reset(registry.by_name);
		rte_hash_reset(registry.by_addr);
	}
}

/* The peer args.peer names, or -1 with the error replied. */
int
lsd_peer_arg(struct ls_ctl_req *req, json_t *args, const char **name)
{
	int idx;

	if (ls_ctl_arg_str(req, args, "peer", "peer name", name) < 0)
		return -1;
	idx = lsd_peer_find(*name);
	if (idx < 0)
		ls_ctl_reply_error(req, LS_CTL_E_NOT_FOUND, "no peer named \"%s\"", *name);
	return idx;
}
