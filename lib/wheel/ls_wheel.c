/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Carousel's timing wheel (see ls_wheel.h for why and how it is used).
 *
 * Slots are numbered by absolute time (t >> slot_shift); slot s lives at
 * index s & mask. The wheel only ever holds slots in [cur, cur + n_slots):
 * an insert further ahead is parked in the window's last slot with its
 * exact time and re-slotted when extraction reaches it, so the index of an
 * occupied slot is never ambiguous. A slot is released once it has ended
 * (now >= (s + 1) << slot_shift): a packet leaves at most one slot late and
 * never early, so pacing never exceeds a flow's rate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ls_wheel.h"

#define NIL UINT32_MAX

struct node {
	void *obj;
	uint64_t at;
	uint32_t next;
	uint32_t tag;   /* in what would be padding: 24 bytes either way */
};

struct ls_wheel {
	uint32_t n_slots, mask, shift, capacity;
	uint64_t cur;              /* first slot not yet released */
	uint32_t free_head;        /* free node list */
	uint32_t *head, *tail;     /* per slot FIFO of nodes */
	uint64_t *busy;            /* bitmap: slot index holds nodes */
	struct node *nodes;
	struct ls_wheel_stats st;
};

/* One allocation holds the wheel and its arrays, in this order: fewer
 * pages to touch and one free. */
struct ls_wheel *
ls_wheel_create(const struct ls_wheel_params *p)
{
	size_t heads, busy, nodes;
	struct ls_wheel *w;
	uint32_t i;

	if (p == NULL || p->n_slots < 64 || (p->n_slots & (p->n_slots - 1)) != 0 ||
	    p->slot_shift > 40 || p->capacity == 0 || p->capacity == NIL) {
		errno = EINVAL;
		return NULL;
	}
	heads = sizeof(uint32_t) * p->n_slots;
	busy = sizeof(uint64_t) * (p->n_slots / 64);
	nodes = sizeof(struct node) * p->capacity;
	w = calloc(1, sizeof(*w) + 2 * heads + busy + nodes);
	if (w == NULL)
		return NULL;
	w->nodes = (struct node *)(w + 1);
	w->busy = (uint64_t *)((char *)w->nodes + nodes);
	w->head = (uint32_t *)((char *)w->busy + busy);
	w->tail = w->head + p->n_slots;
	w->n_slots = p->n_slots;
	w->mask = p->n_slots - 1;
	w->shift = p->slot_shift;
	w->capacity = p->capacity;
	w->cur = p->now >> p->slot_shift;
	memset(w->head, 0xff, heads);
	for (i = 0; i < p->capacity; i++)
		w->nodes[i].next = i + 1 < p->capacity ? i + 1 : NIL;
	w->free_head = 0;
	return w;
}

void
ls_wheel_free(struct ls_wheel *w)
{
	free(w);
}

/* Append node n to the slot for time at (clamped into the window). */
static void
slot_append(struct ls_wheel *w, uint32_t n)
{
	uint64_t s = w->nodes[n].at >> w->shift;
	uint32_t idx;

	if (s < w->cur)
		s = w->cur;
	else if (s >= w->cur + w->n_slots) {
		s = w->cur + w->n_slots - 1;
		w->st.parked++;
	}
	idx = (uint32_t)s & w->mask;
	w->nodes[n].next = NIL;
	if (w->head[idx] == NIL) {
		w->head[idx] = n;
		w->busy[idx >> 6] |= 1ULL << (idx & 63);
	} else {
		w->nodes[w->tail[idx]].next = n;
	}
	w->tail[idx] = n;
}

int
ls_wheel_insert(struct ls_wheel *w, void *obj, uint32_t tag, uint64_t at)
{
	uint32_t n = w->free_head;

	if (n == NIL) {
		w->st.full++;
		return -ENOSPC;
	}
	w->free_head = w->nodes[n].next;
	w->nodes[n].obj = obj;
	w->nodes[n].at = at;
	w->nodes[n].tag = tag;
	slot_append(w, n);
	w->st.inserted++;
	w->st.held++;
	return 0;
}

/* The first occupied slot in [from, limit), or limit. Only the window
 * [cur, cur + n_slots) can hold nodes, so at most one revolution is read. */
static uint64_t
next_busy(const struct ls_wheel *w, uint64_t from, uint64_t limit)
{
	uint64_t span = limit - from, pos = from;

	if (span > w->n_slots)
		span = w->n_slots;
	while (span > 0) {
		uint32_t idx = (uint32_t)pos & w->mask;
		uint32_t bit = idx & 63;
		uint64_t avail = 64 - bit, bits = w->busy[idx >> 6] >> bit;

		if (avail > span)
			avail = span;
		if (avail < 64)
			bits &= (1ULL << avail) - 1;
		if (bits != 0)
			return pos + (uint64_t)__builtin_ctzll(bits);
		pos += avail;
		span -= avail;
	}
	return limit;
}

unsigned int
ls_wheel_extract(struct ls_wheel *w, uint64_t now, void **out, uint32_t *tags,
		 unsigned int max)
{
	uint64_t limit = now >> w->shift; /* slots before this one have ended */
	unsigned int got = 0;

	while (got < max && w->cur < limit) {
		uint32_t idx, n;

		w->cur = next_busy(w, w->cur, limit);
		if (w->cur >= limit)
			break;
		idx = (uint32_t)w->cur & w->mask;
		/* detach the slot's list: parked nodes re-slot behind cur */
		n = w->head[idx];
		w->head[idx] = NIL;
		w->busy[idx >> 6] &= ~(1ULL << (idx & 63));
		while (n != NIL) {
			uint32_t next = w->nodes[n].next;

			if ((w->nodes[n].at >> w->shift) > w->cur) {
				/* parked beyond the horizon: not due yet */
				slot_append(w, n);
			} else if (got < max) {
				if (tags != NULL)
					tags[got] = w->nodes[n].tag;
				out[got++] = w->nodes[n].obj;
				w->nodes[n].next = w->free_head;
				w->free_head = n;
				w->st.held--;
				w->st.extracted++;
			} else {
				/* out is full: the rest stays at the head of this slot */
				w->head[idx] = n;
				w->busy[idx >> 6] |= 1ULL << (idx & 63);
				while (w->nodes[n].next != NIL)
					n = w->nodes[n].next;
				w->tail[idx] = n;
				return got;
			}
			n = next;
		}
		w->cur++;
	}
	if (w->cur < limit && w->st.held == 0)
		w->cur = limit;
	return got;
}

void
ls_wheel_stats(const struct ls_wheel *w, struct ls_wheel_stats *st)
{
	*st = w->st;
}
