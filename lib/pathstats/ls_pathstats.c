/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-path probe telemetry.
 *
 * A path's numbers are produced on an lcore that must never block and
 * consumed by a control thread that answers queries. Rather than lock, every
 * piece of state has exactly one writer:
 *
 *  - The lcore owns struct ls_path_live. Its counters only ever change by
 *    the owning lcore, which publishes them with relaxed atomic stores so a
 *    reader on another core never sees a torn value; single writer means no
 *    read-modify-write atomics are needed.
 *
 *  - Delay samples go into one of two histogram slots. A slot is not a
 *    dense histogram (4 KiB per metric) but a 64-key open-addressed table
 *    of the buckets the second's samples hit, with each metric's exact
 *    count/min/max/sum beside it: a path sees a few dozen distinct buckets
 *    a second, and at Pingmesh scale (80,000 paths) dense slots were most
 *    of a gigabyte. When the table fills up mid-second and the control
 *    thread has given the other slot back, the lcore hands the full one
 *    over early (marked partial: it closes no second) and goes on in the
 *    other, so a wide distribution costs hand-overs, not accuracy. Each
 *    slot carries an
 *    owner flag; whoever the flag names may touch the slot, nobody else.
 *    At a second boundary the lcore stamps the finished slot with its epoch
 *    and flips the flag to "control" with a release store, so the control
 *    thread's acquire load of the flag also makes the histogram contents
 *    visible. The control thread merges, zeroes, and flips the flag back the
 *    same way, so the lcore always starts a slot empty. If the control
 *    thread is slow the lcore does not wait and does not share: it drops the
 *    samples and counts them.
 *
 *  - The control thread owns struct ls_path_window: ten per-second
 *    histograms, six per-10-second histograms, all sparse (lib/hist's
 *    ls_shist: only non-empty buckets, on the heap, NULL when empty), and
 *    counter snapshots at the end of the last 11 seconds and of the last 7
 *    ten-second blocks (the 60 s window's counters cover the same six
 *    blocks as its distributions). Windowed counts are differences of
 *    snapshots, so the lcore
 *    keeps nothing but monotonic totals. The snapshot of a second is the
 *    copy of the totals the lcore put in the slot when it handed it over,
 *    so a second's counts and its histogram cover the same probes no matter
 *    when the control thread gets round to collecting.
 *
 * Loss is time-out based. Probes sit in a ring indexed by sequence number;
 * because probes are sent in order, the oldest one not yet resolved is
 * always the next to time out. ls_path_tick() therefore keeps a cursor
 * (track_head) and walks forward only while probes are due, so its cost is
 * proportional to what it actually resolves, not to the ring size.
 * consecutive_lost follows the order in which losses are declared, which is
 * what a "path down after N losses" rule on the lcore wants.
 *
 * The 10-second histograms are built by folding a block of ten 1 s
 * histograms once the block is complete, not by adding each second as it
 * arrives: with six slots, merging the block in progress would evict the
 * oldest complete block as soon as the next block started, leaving only
 * five complete ones. Folding complete blocks keeps six whole blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "ls_pathstats.h"

#define NS_PER_S 1000000000ULL
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#define SEC_SLOTS LS_PATH_SEC_SLOTS
#define DEC_SLOTS LS_PATH_DEC_SLOTS
#define SNAP_SLOTS LS_PATH_SNAP_SLOTS
#define BSNAP_SLOTS LS_PATH_BSNAP_SLOTS
#define TAB_MASK (LS_PATH_SLOT_KEYS - 1)
#define TAB_CNT_MAX ((1u << LS_PATH_SLOT_CNT_BITS) - 1)

_Static_assert((LS_PATH_SLOT_KEYS & TAB_MASK) == 0, "LS_PATH_SLOT_KEYS: a power of two");
_Static_assert(LS_PM_MAX * LS_SHIST_KEYS + 1 < (1u << (32 - LS_PATH_SLOT_CNT_BITS)),
	       "slot table keys must fit");

enum {
	TRK_FREE = 0,
	TRK_OUT = 1,
	TRK_ANSWERED = 2,
	TRK_LOST = 3,
};

enum {
	OWNER_LCORE = 0,
	OWNER_CONTROL = 1,
};

/*
 * Counters are read concurrently by the control thread. Only the lcore
 * writes them, so a plain read followed by an atomic store is enough to keep
 * every published value whole.
 */
#define PUB_ADD(field, n) \
	__atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)
#define PUB_SUB(field, n) \
	__atomic_store_n(&(field), (field) - (n), __ATOMIC_RELAXED)

/* Serial-number order (RFC 1982 style): true when a comes after b. */
static inline bool
seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* ----------------------------------------------------------------------
 * lcore side
 * ---------------------------------------------------------------------- */

uint32_t
ls_path_track_size(double probes_per_s, uint64_t timeout_ns)
{
	double need = 2.0 * probes_per_s * ((double)timeout_ns / (double)NS_PER_S) + 16.0;
	uint32_t n = LS_PATH_TRACK_MIN;

	while (n < LS_PATH_TRACK_MAX && (double)n < need)
		n <<= 1;
	return n;
}

void
ls_path_live_init(struct ls_path_live *p, struct ls_path_track *track,
		  uint32_t n_track, uint64_t now_ns)
{
	memset(p, 0, sizeof(*p));
	memset(track, 0, (size_t)n_track * sizeof(*track));
	p->track = track;
	p->track_mask = n_track - 1;
	p->cur_epoch = (int64_t)(now_ns / NS_PER_S);
	p->epoch_end_ns = ((uint64_t)p->cur_epoch + 1) * NS_PER_S;
	p->cur = 0;
	p->slot[0].epoch = p->cur_epoch;
	p->slot[1].epoch = -1;
}

static void rotate(struct ls_path_live *p, int64_t epoch);

void
ls_path_on_send(struct ls_path_live *p, uint32_t seq, uint64_t now_ns)
{
	struct ls_path_track *t = &p->track[seq & p->track_mask];

	/*
	 * The cursor starts at the first probe ever sent; after that it only
	 * moves forward in ls_path_tick().
	 */
	if (unlikely(now_ns >= p->epoch_end_ns))
		rotate(p, (int64_t)(now_ns / NS_PER_S));
	if (p->c.sent == 0)
		p->track_head = seq;
	if (t->state == TRK_OUT) {
		/* Its slot is needed now; no reply can be matched to it any more. */
		PUB_ADD(p->c.lost, 1);
		PUB_ADD(p->consecutive_lost, 1);
	}
	t->seq = seq;
	t->state = TRK_OUT;
	t->tx_ns = now_ns;
	/*
	 * Tracked separately from the ring so that a sequence number the
	 * sender skipped (allocated, then never sent) does not stop the
	 * expiry cursor: the cursor runs up to here, not to the first gap.
	 */
	p->tx_next = seq + 1;
	PUB_ADD(p->c.sent, 1);
}

/*
 * Hand slot s over to the control thread (release: its contents become
 * visible with the flag). partial: mid-second, because its table filled.
 */
static inline void
hand_over(struct ls_path_live *p, struct ls_path_hslot *s, uint32_t partial)
{
	s->epoch = p->cur_epoch;
	s->c = p->c;
	s->partial = partial;
	__atomic_store_n(&s->owner, OWNER_CONTROL, __ATOMIC_RELEASE);
}

/*
 * Count one sample of metric m into slot s. The caller made sure of room
 * for a new key (record()); false only when the bucket's count is full.
 */
static inline bool
slot_add(struct ls_path_hslot *s, int m, int64_t v)
{
	uint32_t tk = (uint32_t)m * LS_SHIST_KEYS + ls_hist_key(v) + 1;
	uint32_t i = (tk * 2654435761u) >> (32 - 6);
	struct ls_path_mstat *ms = &s->m[m];

	_Static_assert(LS_PATH_SLOT_KEYS == 64, "the hash above takes 6 bits");
	_Static_assert(LS_PATH_SLOT_FILL + LS_PM_MAX < LS_PATH_SLOT_KEYS,
		       "the table never fills up completely");
	for (;;) {
		uint32_t e = s->tab[i];

		if (e == 0) {
			s->tab[i] = tk << LS_PATH_SLOT_CNT_BITS;
			s->used++;
			break;
		}
		if (e >> LS_PATH_SLOT_CNT_BITS == tk) {
			if ((e & TAB_CNT_MAX) == TAB_CNT_MAX)
				return false;
			break;
		}
		i = (i + 1) & TAB_MASK;
	}
	s->tab[i]++;
	if (ms->count == 0 || v < ms->min)
		ms->min = v;
	if (ms->count == 0 || v > ms->max)
		ms->max = v;
	ms->count++;
	ms->sum += (double)v;
	return true;
}

static inline void
record(struct ls_path_live *p, const int64_t samples[LS_PM_MAX])
{
	struct ls_path_hslot *s = &p->slot[p->cur];
	bool all = true;
	int m;

	/*
	 * Acquire pairs with the control thread's release when it hands back,
	 * so the zeroing it did is visible before we add. hist_dropped counts
	 * replies, not individual metric samples.
	 */
	if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) != OWNER_LCORE) {
		PUB_ADD(p->hist_dropped, 1);
		return;
	}
	/*
	 * Room for this reply's keys, all or nothing: when the table is past
	 * its fill mark, hand it over early if the other slot is ours.
	 */
	if (s->used > LS_PATH_SLOT_FILL - LS_PM_MAX) {
		if (__atomic_load_n(&p->slot[p->cur ^ 1].owner, __ATOMIC_ACQUIRE) !=
		    OWNER_LCORE) {
			PUB_ADD(p->hist_dropped, 1);
			return;
		}
		hand_over(p, s, 1);
		p->cur ^= 1;
		s = &p->slot[p->cur];
	}
	for (m = 0; m < LS_PM_MAX; m++)
		if (samples[m] != LS_PM_NONE)
			all &= slot_add(s, m, samples[m]);
	if (!all)
		PUB_ADD(p->hist_dropped, 1); /* a bucket met its count limit */
}

bool
ls_path_awaits(const struct ls_path_live *p, uint32_t seq, uint64_t *tx_ns)
{
	const struct ls_path_track *t = &p->track[seq & p->track_mask];

	if (t->seq != seq || (t->state != TRK_OUT && t->state != TRK_LOST))
		return false;
	*tx_ns = t->tx_ns;
	return true;
}

bool
ls_path_sent_at(const struct ls_path_live *p, uint32_t seq, uint64_t *tx_ns)
{
	const struct ls_path_track *t = &p->track[seq & p->track_mask];

	if (t->seq != seq || t->state == TRK_FREE)
		return false;
	*tx_ns = t->tx_ns;
	return true;
}

enum ls_path_rx
ls_path_on_reply(struct ls_path_live *p, uint32_t seq, uint64_t now_ns,
		 const int64_t samples[LS_PM_MAX])
{
	struct ls_path_track *t = &p->track[seq & p->track_mask];
	enum ls_path_rx rx;
	int m;

	if (t->seq != seq || t->state == TRK_FREE) {
		PUB_ADD(p->c.unknown, 1);
		return LS_PATH_RX_UNKNOWN;
	}
	switch (t->state) {
	case TRK_OUT:
		if (p->any_rx && seq_after(p->max_seq_rx, seq)) {
			PUB_ADD(p->c.reordered, 1);
			rx = LS_PATH_RX_REORDERED;
		} else {
			rx = LS_PATH_RX_OK;
		}
		PUB_ADD(p->c.received, 1);
		break;
	case TRK_LOST:
		/* It was counted lost at its time-out; it was only slow. */
		PUB_SUB(p->c.lost, 1);
		PUB_ADD(p->c.late, 1);
		rx = LS_PATH_RX_LATE;
		break;
	default:
		PUB_ADD(p->c.duplicated, 1);
		return LS_PATH_RX_DUP;
	}

	t->state = TRK_ANSWERED;
	if (unlikely(now_ns >= p->epoch_end_ns))
		rotate(p, (int64_t)(now_ns / NS_PER_S));
	if (!p->any_rx || seq_after(seq, p->max_seq_rx)) {
		__atomic_store_n(&p->max_seq_rx, seq, __ATOMIC_RELAXED);
		__atomic_store_n(&p->any_rx, true, __ATOMIC_RELAXED);
	}
	/* Any answer to a tracked probe proves the path passes traffic. */
	__atomic_store_n(&p->consecutive_lost, 0, __ATOMIC_RELAXED);
	for (m = 0; m < LS_PM_MAX; m++)
		if (samples[m] != LS_PM_NONE)
			__atomic_store_n(&p->last[m], samples[m], __ATOMIC_RELAXED);
	__atomic_store_n(&p->last_rx_ns, now_ns, __ATOMIC_RELAXED);
	record(p, samples);
	return rx;
}

/*
 * Second boundary: give the finished slot away and move to the other one.
 * A slot the control thread still holds is skipped, not waited for; record()
 * drops into it until the flag comes back, and the slot then arrives empty
 * because the control thread zeroes before releasing.
 */
static void
rotate(struct ls_path_live *p, int64_t epoch)
{
	struct ls_path_hslot *s = &p->slot[p->cur];

	if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == OWNER_LCORE) {
		/*
		 * Stamped here, not when recording started: the slot may have
		 * come back mid-second, and whatever is in it belongs to the
		 * second that is ending. The counters ride along so the
		 * control thread's per-second counts end exactly where the
		 * histogram does, however late it gets round to collecting.
		 */
		hand_over(p, s, 0);
	}
	p->cur ^= 1;
	p->epoch_end_ns = ((uint64_t)epoch + 1) * NS_PER_S;
	/*
	 * The new slot's epoch is not written here: control may own it and
	 * be reading it. It gets stamped when it is handed over, above.
	 * Release after the hand-off: a control thread that sees the new
	 * epoch is guaranteed to see the slot of the previous one too.
	 */
	__atomic_store_n(&p->cur_epoch, epoch, __ATOMIC_RELEASE);
}

void
ls_path_tick(struct ls_path_live *p, uint64_t now_ns, uint64_t timeout_ns)
{
	int64_t epoch = (int64_t)(now_ns / NS_PER_S);

	if (epoch != p->cur_epoch)
		rotate(p, epoch);

	if (p->c.sent == 0)
		return;
	/*
	 * Nothing older than tx_next - ring size can still be in the
	 * ring unless the sender skipped numbers; those stragglers are
	 * counted when their slot is reused. Jumping keeps a sender that
	 * leapt far ahead from costing one step per skipped number.
	 */
	if ((uint32_t)(p->tx_next - p->track_head) > p->track_mask + 1)
		p->track_head = p->tx_next - (p->track_mask + 1);
	while (p->track_head != p->tx_next) {
		struct ls_path_track *t = &p->track[p->track_head & p->track_mask];

		/*
		 * Another sequence in the slot: a newer probe took it (the
		 * old one was counted lost then) or this number was never
		 * sent. Either way there is nothing to expire.
		 */
		if (t->seq != p->track_head) {
			p->track_head++;
			continue;
		}
		if (t->state != TRK_OUT) {
			p->track_head++;
			continue;
		}
		/* Probes go out in time order: the first one not due ends it. */
		if (now_ns < t->tx_ns || now_ns - t->tx_ns < timeout_ns)
			break;
		t->state = TRK_LOST;
		PUB_ADD(p->c.lost, 1);
		PUB_ADD(p->consecutive_lost, 1);
		p->track_head++;
	}
}

/* ----------------------------------------------------------------------
 * control side
 * ---------------------------------------------------------------------- */

static void
load_counters(const struct ls_path_live *p, struct ls_path_counters *c)
{
	c->sent = __atomic_load_n(&p->c.sent, __ATOMIC_RELAXED);
	c->received = __atomic_load_n(&p->c.received, __ATOMIC_RELAXED);
	c->lost = __atomic_load_n(&p->c.lost, __ATOMIC_RELAXED);
	c->late = __atomic_load_n(&p->c.late, __ATOMIC_RELAXED);
	c->reordered = __atomic_load_n(&p->c.reordered, __ATOMIC_RELAXED);
	c->duplicated = __atomic_load_n(&p->c.duplicated, __ATOMIC_RELAXED);
	c->unknown = __atomic_load_n(&p->c.unknown, __ATOMIC_RELAXED);
}

/* The low 32 bits of c, as the windows keep them. */
static void
snap_of(const struct ls_path_counters *c, struct ls_path_snap *out)
{
	out->sent = (uint32_t)c->sent;
	out->received = (uint32_t)c->received;
	out->lost = (uint32_t)c->lost;
	out->late = (uint32_t)c->late;
	out->reordered = (uint32_t)c->reordered;
	out->duplicated = (uint32_t)c->duplicated;
}

/*
 * a - b modulo 2^32, floored at zero. Counters are monotonic except lost,
 * which drops when a late reply reclaims a probe declared lost before b was
 * taken; a window cannot have lost a negative number of probes.
 */
static uint64_t
sub0(uint32_t a, uint32_t b)
{
	int32_t d = (int32_t)(a - b);

	return d > 0 ? (uint64_t)d : 0;
}

/* The same over whole counters, for totals since a reset long ago. */
static uint64_t
total_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/*
 * The window's seconds and 10 s blocks are kept as 32-bit offsets from
 * epoch0 (-1 none): history reaches back 70 s, so they only overflow after
 * 68 years without a reset.
 */
static inline int64_t
sec_of(const struct ls_path_window *w, int32_t r)
{
	return r < 0 ? -1 : w->epoch0 + r;
}

static inline int32_t
sec_rel(const struct ls_path_window *w, int64_t e)
{
	return (int32_t)(e - w->epoch0);
}

static inline int64_t
blk_of(const struct ls_path_window *w, int32_t r)
{
	return r < 0 ? -1 : w->epoch0 / 10 + r;
}

static inline int32_t
blk_rel(const struct ls_path_window *w, int64_t d)
{
	return (int32_t)(d - w->epoch0 / 10);
}

static void
free_hists(struct ls_shist *h[LS_PM_MAX])
{
	for (int m = 0; m < LS_PM_MAX; m++)
		ls_shist_free(&h[m]);
}

static void
clear_history(struct ls_path_window *w)
{
	int i;

	w->last_epoch = -1;
	for (i = 0; i < SEC_SLOTS; i++) {
		free_hists(w->sec[i]);
		w->sec_epoch[i] = -1;
	}
	for (i = 0; i < DEC_SLOTS; i++) {
		free_hists(w->dec[i]);
		w->dec_epoch[i] = -1;
	}
	memset(w->snap, 0, sizeof(w->snap));
	for (i = 0; i < SNAP_SLOTS; i++)
		w->snap_epoch[i] = -1;
	memset(w->bsnap, 0, sizeof(w->bsnap));
	for (i = 0; i < BSNAP_SLOTS; i++)
		w->bsnap_block[i] = -1;
}

void
ls_path_window_init(struct ls_path_window *w)
{
	/* The memory may be garbage: no pointer in it is ours to free. */
	memset(w, 0, sizeof(*w));
	clear_history(w);
}

void
ls_path_window_free(struct ls_path_window *w)
{
	clear_history(w);
}

size_t
ls_path_window_bytes(const struct ls_path_window *w)
{
	size_t n = sizeof(*w);
	int i, m;

	for (m = 0; m < LS_PM_MAX; m++) {
		for (i = 0; i < SEC_SLOTS; i++)
			n += ls_shist_bytes(w->sec[i][m]);
		for (i = 0; i < DEC_SLOTS; i++)
			n += ls_shist_bytes(w->dec[i][m]);
	}
	return n;
}

static void
merge_into(struct ls_path_window *w, struct ls_shist **dst, const struct ls_shist *src)
{
	if (ls_shist_merge(dst, src) != 0)
		w->nomem++;
}

/* Build 10 s block d from whatever of its seconds the 1 s ring holds. */
static void
fold_block(struct ls_path_window *w, int64_t d)
{
	int di = (int)(d % DEC_SLOTS);
	int i, m;

	free_hists(w->dec[di]);
	w->dec_epoch[di] = blk_rel(w, d);
	for (i = 0; i < SEC_SLOTS; i++) {
		int64_t e = sec_of(w, w->sec_epoch[i]);

		if (e < 0 || e / 10 != d)
			continue;
		for (m = 0; m < LS_PM_MAX; m++)
			merge_into(w, &w->dec[di][m], w->sec[i][m]);
	}
}

/* A slot's table, metric by metric, as sorted sparse entries. */
static void
slot_metric(const struct ls_path_hslot *s, int m, uint32_t *ent, uint32_t *n)
{
	uint32_t lo = (uint32_t)m * LS_SHIST_KEYS + 1, k = 0;

	for (uint32_t i = 0; i < LS_PATH_SLOT_KEYS; i++) {
		uint32_t tk = s->tab[i] >> LS_PATH_SLOT_CNT_BITS;
		uint32_t e, j;

		if (tk < lo || tk >= lo + LS_SHIST_KEYS)
			continue;
		/* ls_shist's counts are wider than the table's: one entry each */
		e = (tk - lo) << LS_SHIST_CNT_BITS | (s->tab[i] & TAB_CNT_MAX);
		for (j = k++; j > 0 && ent[j - 1] > e; j--)
			ent[j] = ent[j - 1];
		ent[j] = e;
	}
	*n = k;
}

static void
merge_second(struct ls_path_window *w, int64_t e, const struct ls_path_hslot *slot)
{
	int si = (int)(e % SEC_SLOTS);
	int di = (int)((e / 10) % DEC_SLOTS);
	int64_t old = sec_of(w, w->sec_epoch[si]);
	uint32_t ent[LS_PATH_SLOT_KEYS];
	int m;

	if (old < e) {
		/*
		 * First overwrite of a second from an unfolded block means
		 * that block is over: fold it while all its seconds are
		 * still here. Normally collect() has folded it already.
		 */
		if (old >= 0 && old / 10 < e / 10 &&
		    blk_of(w, w->dec_epoch[(old / 10) % DEC_SLOTS]) < old / 10)
			fold_block(w, old / 10);
		free_hists(w->sec[si]);
		w->sec_epoch[si] = sec_rel(w, e);
		old = e;
	}
	for (m = 0; m < LS_PM_MAX; m++) {
		struct ls_shist_src src;

		if (slot->m[m].count == 0)
			continue;
		slot_metric(slot, m, ent, &src.n);
		src.ent = ent;
		src.count = slot->m[m].count;
		src.min = slot->m[m].min;
		src.max = slot->m[m].max;
		src.sum = slot->m[m].sum;
		if (old == e && ls_shist_merge_keys(&w->sec[si][m], &src) != 0)
			w->nomem++;
		/* A straggler for a block already folded still belongs in it. */
		if (blk_of(w, w->dec_epoch[di]) == e / 10 &&
		    ls_shist_merge_keys(&w->dec[di][m], &src) != 0)
			w->nomem++;
	}
}

/* Returns whether the slot brought a counter snapshot for a new second. */
static bool
take_slot(struct ls_path_window *w, struct ls_path_hslot *s)
{
	int64_t e = s->epoch;
	bool snapped = false;

	/* Before epoch0 is before any window: nothing to keep. */
	if (e >= 0) {
		if (e >= w->epoch0)
			merge_second(w, e, s);
		/*
		 * Only seconds not yet closed: older ones were filled in. A
		 * partial slot closes nothing: its second goes on.
		 */
		if (!s->partial && e > w->last_epoch) {
			if (e >= w->epoch0) {
				snap_of(&s->c, &w->snap[e % SNAP_SLOTS]);
				w->snap_epoch[e % SNAP_SLOTS] = sec_rel(w, e);
			}
			snapped = true;
		}
	}
	/* Empty before handing back: the lcore adds without clearing. */
	memset(s->tab, 0, sizeof(s->tab));
	memset(s->m, 0, sizeof(s->m));
	s->used = 0;
	s->partial = 0;
	__atomic_store_n(&s->owner, OWNER_LCORE, __ATOMIC_RELEASE);
	return snapped;
}

/*
 * Give every second from..last that has none a snapshot: the next newer
 * one (carry walks down from last), and copy block ends into bsnap.
 */
static void
fill_snapshots(struct ls_path_window *w, int64_t from, int64_t last,
	       struct ls_path_snap carry)
{
	for (int64_t e = last; e >= from; e--) {
		bool in_ring = e > last - SNAP_SLOTS;

		if (in_ring && sec_of(w, w->snap_epoch[e % SNAP_SLOTS]) == e) {
			carry = w->snap[e % SNAP_SLOTS];
		} else if (in_ring) {
			w->snap[e % SNAP_SLOTS] = carry;
			w->snap_epoch[e % SNAP_SLOTS] = sec_rel(w, e);
		}
		if (e % 10 == 9) {
			w->bsnap[(e / 10) % BSNAP_SLOTS] = carry;
			w->bsnap_block[(e / 10) % BSNAP_SLOTS] = blk_rel(w, e / 10);
		}
	}
}

void
ls_path_window_collect(struct ls_path_window *w, struct ls_path_live *p)
{
	/*
	 * Read the lcore's second before looking at the slots. The acquire
	 * pairs with rotate(): every slot handed over for an earlier second
	 * is then visible below. A slot handed over after this load may be
	 * seen too, hence the max() further down.
	 */
	int64_t cur = __atomic_load_n(&p->cur_epoch, __ATOMIC_ACQUIRE);
	struct ls_path_hslot *s0 = &p->slot[0], *s1 = &p->slot[1];
	bool own0 = __atomic_load_n(&s0->owner, __ATOMIC_ACQUIRE) == OWNER_CONTROL;
	bool own1 = __atomic_load_n(&s1->owner, __ATOMIC_ACQUIRE) == OWNER_CONTROL;
	int64_t last = cur - 1, from, d, dl;
	struct ls_path_counters live;
	struct ls_path_snap carry;
	bool snapped = false;

	if (own0 && !s0->partial && s0->epoch > last)
		last = s0->epoch;
	if (own1 && !s1->partial && s1->epoch > last)
		last = s1->epoch;
	/* History starts: a block boundary before all it will ever look at. */
	if (w->last_epoch < 0) {
		int64_t e0 = last - 10 * (BSNAP_SLOTS + 1);

		w->epoch0 = e0 > 0 ? e0 - e0 % 10 : 0;
	}
	/* Oldest second first, so the 1 s ring only ever moves forward. */
	if (own0 && own1 && s1->epoch < s0->epoch) {
		snapped |= take_slot(w, s1);
		snapped |= take_slot(w, s0);
	} else {
		if (own0)
			snapped |= take_slot(w, s0);
		if (own1)
			snapped |= take_slot(w, s1);
	}

	if (last <= w->last_epoch)
		return;

	/*
	 * Every second that ended since the last call needs a snapshot. The
	 * ones whose slot came in carry exact counters from the lcore. A
	 * second without (its slot was still ours, so the lcore kept none)
	 * takes the next newer snapshot, or the live counters if none is
	 * newer: its activity is attributed to a neighbour, snapshots stay
	 * monotonic and no window spans a hole. Right after init or reset
	 * only the newest second is filled, and from `base` if nothing older
	 * came in: activity since then belongs to the seconds that follow,
	 * not to one that ended before history started.
	 */
	if (w->last_epoch < 0) {
		from = last;
		if (snapped)
			load_counters(p, &live);
		else
			live = w->base;
	} else {
		from = w->last_epoch + 1;
		if (from < last - 10 * BSNAP_SLOTS)
			from = last - 10 * BSNAP_SLOTS;
		load_counters(p, &live);
	}
	snap_of(&live, &carry);
	fill_snapshots(w, from, last, carry);

	/* Fold every 10 s block that has just become complete. */
	dl = (last + 1) / 10 - 1;
	for (d = dl - (DEC_SLOTS - 1); d <= dl; d++) {
		if (d >= 0 && blk_of(w, w->dec_epoch[d % DEC_SLOTS]) < d)
			fold_block(w, d);
	}
	w->last_epoch = last;
}

static void
fill_dist(const struct ls_hist *h, struct ls_path_dist *d)
{
	d->count = h->count;
	if (h->count == 0) {
		memset(d, 0, sizeof(*d));
		return;
	}
	d->min = h->min;
	d->max = h->max;
	d->p50 = ls_hist_quantile(h, 0.5);
	d->p99 = ls_hist_quantile(h, 0.99);
	d->p999 = ls_hist_quantile(h, 0.999);
	d->mean = ls_hist_mean(h);
}

/* Counters at the end of 10 s block d, or NULL. */
static const struct ls_path_snap *
block_end(const struct ls_path_window *w, int64_t d)
{
	if (d < 0 || blk_of(w, w->bsnap_block[d % BSNAP_SLOTS]) != d)
		return NULL;
	return &w->bsnap[d % BSNAP_SLOTS];
}

/*
 * Windows end at the newest complete second L (w->last_epoch):
 *  - 1s: second L;
 *  - 10s: seconds L-9 .. L;
 *  - 60s: counters and distributions over the six newest complete 10 s
 *    blocks, which end at the last multiple of ten seconds and so lag L by
 *    0-9 s. That is the price of keeping 60 s in six histograms and seven
 *    snapshots instead of sixty each.
 */
void
ls_path_window_query(const struct ls_path_window *w, const struct ls_path_live *p,
		     enum ls_path_win win, struct ls_path_summary *out)
{
	static const int span[LS_WIN_MAX] = { 1, 10, 60 };
	const struct ls_path_snap *end, *start;
	struct ls_path_snap base;
	struct ls_hist tmp;
	int64_t L = w->last_epoch, s, dl;
	int i, m;

	(void)p; /* everything needed was snapshotted by collect() */
	memset(out, 0, sizeof(*out));
	if (L < 0 || (unsigned int)win >= LS_WIN_MAX ||
	    sec_of(w, w->snap_epoch[L % SNAP_SLOTS]) != L)
		return;

	snap_of(&w->base, &base);
	dl = (L + 1) / 10 - 1;
	if (win == LS_WIN_60S) {
		end = block_end(w, dl);
		if (end == NULL)
			end = &base;
		start = block_end(w, dl - DEC_SLOTS);
	} else {
		end = &w->snap[L % SNAP_SLOTS];
		s = L - span[win];
		start = s >= 0 && sec_of(w, w->snap_epoch[s % SNAP_SLOTS]) == s ?
			&w->snap[s % SNAP_SLOTS] : NULL;
	}
	if (start == NULL)
		start = &base;
	out->sent = sub0(end->sent, start->sent);
	out->received = sub0(end->received, start->received);
	out->lost = sub0(end->lost, start->lost);
	out->late = sub0(end->late, start->late);
	out->reordered = sub0(end->reordered, start->reordered);
	out->duplicated = sub0(end->duplicated, start->duplicated);
	if (out->received + out->lost > 0)
		out->loss_pct = 100.0 * (double)out->lost /
				(double)(out->received + out->lost);

	for (m = 0; m < LS_PM_MAX; m++) {
		ls_hist_reset(&tmp);
		if (win == LS_WIN_60S) {
			for (i = 0; i < DEC_SLOTS; i++) {
				int64_t d = blk_of(w, w->dec_epoch[i]);

				if (d >= 0 && d > dl - DEC_SLOTS && d <= dl)
					ls_shist_to_dense(&tmp, w->dec[i][m]);
			}
		} else {
			for (i = 0; i < SEC_SLOTS; i++) {
				int64_t e = sec_of(w, w->sec_epoch[i]);

				if (e >= 0 && e > L - span[win] && e <= L)
					ls_shist_to_dense(&tmp, w->sec[i][m]);
			}
		}
		fill_dist(&tmp, &out->d[m]);
	}
}

void
ls_path_window_totals(const struct ls_path_window *w, const struct ls_path_live *p,
		      struct ls_path_counters *out)
{
	struct ls_path_counters c;

	load_counters(p, &c);
	out->sent = total_sub(c.sent, w->base.sent);
	out->received = total_sub(c.received, w->base.received);
	out->lost = total_sub(c.lost, w->base.lost);
	out->late = total_sub(c.late, w->base.late);
	out->reordered = total_sub(c.reordered, w->base.reordered);
	out->duplicated = total_sub(c.duplicated, w->base.duplicated);
	out->unknown = total_sub(c.unknown, w->base.unknown);
}

void
ls_path_window_reset(struct ls_path_window *w, const struct ls_path_live *p)
{
	load_counters(p, &w->base);
	clear_history(w);
}

const char *
ls_path_win_name(enum ls_path_win w)
{
	switch (w) {
	case LS_WIN_1S:
		return "1s";
	case LS_WIN_10S:
		return "10s";
	case LS_WIN_60S:
		return "60s";
	default:
		return "?";
	}
}

const char *
ls_path_metric_name(enum ls_path_metric m)
{
	switch (m) {
	case LS_PM_RTT:
		return "rtt";
	case LS_PM_FWD:
		return "fwd";
	case LS_PM_REV:
		return "rev";
	default:
		return "?";
	}
}
