/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's phase barrier (lld_phase.h has the design).
 *
 * Per flow: owed[i], the frames of the running phase not yet received;
 * globally: flows_left, the flows that still owe any. A frame of the
 * running phase decrements its flow's counter, and the flow's last one
 * decrements flows_left, so the barrier is a comparison per poll. Walks
 * over the flows happen once per phase (begin, a timeout's count of the
 * missing frames), never per frame.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lld_phase.h"

struct lld_phase {
	struct lld_phase_params p;
	uint32_t *frames;        /* per flow: frames per phase */
	uint32_t *owed;          /* per flow: frames of the running phase not yet here */
	uint64_t *t_start, *t_end;  /* per phase: TSC it began and ended */
	uint32_t k;              /* phases begun; the running one is k (1-based) */
	uint32_t flows_left;     /* flows that owe frames of the running phase */
	uint32_t done, timeouts;
	uint64_t lost, late;     /* missing at timeouts; arrived after their phase */
	uint64_t sent_at;        /* TSC the running phase's last frame left */
	bool running, sent;
};

struct lld_phase *
lld_phase_create(const struct lld_phase_params *p, const uint32_t *frames)
{
	struct lld_phase *ph;

	if (p == NULL || frames == NULL || p->n_flows == 0 || p->count == 0 || p->hz == 0) {
		errno = EINVAL;
		return NULL;
	}
	for (uint32_t i = 0; i < p->n_flows; i++)
		if (frames[i] == 0) {
			errno = EINVAL;
			return NULL;
		}
	ph = calloc(1, sizeof(*ph));
	if (ph == NULL)
		return NULL;
	ph->p = *p;
	ph->frames = malloc(sizeof(*ph->frames) * p->n_flows);
	ph->owed = calloc(p->n_flows, sizeof(*ph->owed));
	ph->t_start = calloc(p->count, sizeof(*ph->t_start));
	ph->t_end = calloc(p->count, sizeof(*ph->t_end));
	if (ph->frames == NULL || ph->owed == NULL || ph->t_start == NULL || ph->t_end == NULL) {
		lld_phase_free(ph);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(ph->frames, frames, sizeof(*ph->frames) * p->n_flows);
	return ph;
}

void
lld_phase_free(struct lld_phase *ph)
{
	if (ph == NULL)
		return;
	free(ph->frames);
	free(ph->owed);
	free(ph->t_start);
	free(ph->t_end);
	free(ph);
}

void
lld_phase_begin(struct lld_phase *ph, uint64_t now)
{
	if (ph->running || ph->k == ph->p.count)
		return;
	memcpy(ph->owed, ph->frames, sizeof(*ph->owed) * ph->p.n_flows);
	ph->flows_left = ph->p.n_flows;
	ph->t_start[ph->k++] = now;
	ph->running = true;
	ph->sent = false;
}

void
lld_phase_rx(struct lld_phase *ph, uint32_t flow, uint64_t seq)
{
	uint64_t base;

	if (flow >= ph->p.n_flows || ph->k == 0)
		return;
	/* the running phase's frames are numbered [base, base + frames) */
	base = (uint64_t)ph->frames[flow] * (ph->k - 1);
	if (!ph->running || seq < base) {
		ph->late++;      /* its phase ended without it: counted lost there */
		return;
	}
	if (seq - base >= ph->frames[flow] || ph->owed[flow] == 0)
		return;          /* not of this phase (TX parks: should not happen) */
	if (--ph->owed[flow] == 0)
		ph->flows_left--;
}

void
lld_phase_sent(struct lld_phase *ph, uint64_t at)
{
	if (ph->running && !ph->sent) {
		ph->sent = true;
		ph->sent_at = at;
	}
}

int
lld_phase_poll(struct lld_phase *ph, uint64_t now)
{
	if (!ph->running)
		return LLD_PHASE_RUNNING;
	if (ph->flows_left > 0) {
		if (!ph->sent || now < ph->sent_at || now - ph->sent_at < ph->p.timeout)
			return LLD_PHASE_RUNNING;
		/* the timeout: what is still owed is lost in this phase */
		for (uint32_t i = 0; i < ph->p.n_flows; i++)
			ph->lost += ph->owed[i];
		ph->timeouts++;
	}
	ph->t_end[ph->k - 1] = now;
	ph->done++;
	ph->running = false;
	return ph->done == ph->p.count ? LLD_PHASE_LAST : LLD_PHASE_ENDED;
}

uint32_t
lld_phase_done(const struct lld_phase *ph)
{
	return ph->done;
}

/* ---- report ---------------------------------------------------------- */

static double
secs(const struct lld_phase *ph, uint64_t ticks)
{
	return (double)ticks / (double)ph->p.hz;
}

static double
jct(const struct lld_phase *ph)
{
	return ph->done == 0 ? 0.0 : secs(ph, ph->t_end[ph->done - 1] - ph->t_start[0]);
}

json_t *
lld_phase_report(const struct lld_phase *ph)
{
	json_t *dur = json_array(), *start = json_array();

	for (uint32_t k = 0; k < ph->k; k++)
		json_array_append_new(start, json_real(ph->t_start[k] < ph->p.start ? 0.0 :
						       secs(ph, ph->t_start[k] - ph->p.start)));
	for (uint32_t k = 0; k < ph->done; k++)
		json_array_append_new(dur, json_real(secs(ph, ph->t_end[k] - ph->t_start[k])));
	return json_pack("{sI sI sI sI so so so sI sI sI}",
			 "bytes_per_flow", (json_int_t)ph->p.bytes,
			 "frames_per_flow", (json_int_t)ph->frames[0],
			 "count", (json_int_t)ph->p.count, "done", (json_int_t)ph->done,
			 "jct_s", ph->done > 0 ? json_real(jct(ph)) : json_null(),
			 "durations_s", dur, "start_s", start,
			 "timeouts", (json_int_t)ph->timeouts,
			 "lost_frames", (json_int_t)ph->lost,
			 "late_frames", (json_int_t)ph->late);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void
lld_phase_summary(const struct lld_phase *ph, FILE *f)
{
	uint64_t *d = ph->done > 0 ? malloc(sizeof(*d) * ph->done) : NULL;

	fprintf(f, "lockstep-load: phases: %u of %u done", ph->done, ph->p.count);
	if (d != NULL) {
		for (uint32_t k = 0; k < ph->done; k++)
			d[k] = ph->t_end[k] - ph->t_start[k];
		qsort(d, ph->done, sizeof(*d), cmp_u64);
		/* the median of an even count: the mean of the middle two */
		fprintf(f, ", JCT %.3f s, phase min/median/max %.3f/%.3f/%.3f s", jct(ph),
			secs(ph, d[0]), (secs(ph, d[(ph->done - 1) / 2]) +
					 secs(ph, d[ph->done / 2])) / 2,
			secs(ph, d[ph->done - 1]));
		free(d);
	}
	fprintf(f, ", %u timed out", ph->timeouts);
	if (ph->lost > 0 || ph->late > 0)
		fprintf(f, " (%" PRIu64 " frames lost at timeouts, %" PRIu64 " came later)",
			ph->lost, ph->late);
	fputc('\n', f);
}
