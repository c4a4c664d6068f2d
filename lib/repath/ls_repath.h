/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Repathing on silence: when a flow whose requests are acknowledged stops
 * hearing back, move it to another path (ECMP entropy value), and bring it
 * back later. The decisions only: the caller owns the flows, rewrites the
 * entropy and keeps the clock. No EAL; no allocation.
 *
 * Time is a caller's 32-bit clock ("ticks", any unit; differences are taken
 * mod 2^32, so a wait must stay under 2^31 ticks). A flow remembers when
 * its oldest unacknowledged request left (`wait`); an acknowledgement ends
 * the wait and is a sample of how long this flow's requests wait for an
 * answer. The limit that moves the flow is srtt + 4 rttvar of those samples
 * (RFC 6298's estimator, in the integer form of its appendix), kept within
 * [silence, silence_max]: on a quiet fabric the floor rules, where answers
 * come late now and then the limit grows with them instead of moving
 * healthy flows.
 *
 * Per destination, a direct-mapped table remembers the paths flows found
 * silent for `hold` ticks: flows leaving a path avoid the ones others just
 * left, and a moved flow goes home only when its path was not found silent
 * again meanwhile.
 */
#ifndef LS_REPATH_H
#define LS_REPATH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Settings, in the caller's ticks. */
struct ls_repath_params {
	uint32_t silence;         /**< the limit's floor */
	uint32_t silence_max;     /**< the limit's ceiling (>= silence) */
	uint32_t hold;            /**< a moved flow stays away; a mark lasts */
	uint16_t n_paths;         /**< paths 0..n_paths-1 (<= 64) */
};

#define LS_REPATH_AWAY 0x1        /**< state: moved off its home path */
#define LS_REPATH_NO_PATH 0xff    /**< a path value: the host's own entropy */

/** One flow's state: 32 bytes, zero-initialised then ls_repath_flow_init. */
struct ls_repath_flow {
	uint32_t wait;            /**< ticks of the oldest unacked request, 0: none */
	uint32_t until;           /**< AWAY: when to go home */
	uint32_t moves;           /**< times moved */
	uint32_t srtt;            /**< smoothed answer time x 8; 0: no sample yet */
	uint32_t rttvar;          /**< its mean deviation x 4 */
	uint32_t limit;           /**< the silence that moves the flow */
	uint8_t home;             /**< the path it had before moving */
	uint8_t state;            /**< LS_REPATH_AWAY */
	uint8_t tries;            /**< moves since the last acknowledgement */
	uint8_t pad[5];
};

/** What a request should do (ls_repath_on_request). */
enum ls_repath_verdict {
	LS_REPATH_STAY = 0,       /**< nothing to do */
	LS_REPATH_MOVE,           /**< silent past its limit: pick a new path and ls_repath_moved */
	LS_REPATH_HOME,           /**< hold is over: back to `home` (ls_repath_went_home) */
	LS_REPATH_EXHAUSTED,      /**< silent on n_paths paths since the last answer: stay */
};

/** A flow starts (or its policy changed). */
void ls_repath_flow_init(struct ls_repath_flow *s, const struct ls_repath_params *p);

/** An acknowledgement for the flow's requests at tick t. */
void ls_repath_on_ack(struct ls_repath_flow *s, const struct ls_repath_params *p, uint32_t t);

/**
 * A request of the flow at tick t (0 is not a valid tick: pass t | 1).
 * @param home_silent whether the flow's home path is marked silent for its
 *   destination now (asked only when the verdict could be HOME; may be NULL
 *   when the caller keeps no marks)
 * @return an enum ls_repath_verdict
 */
int ls_repath_on_request(struct ls_repath_flow *s, const struct ls_repath_params *p, uint32_t t,
			 int (*home_silent)(void *arg, uint8_t home), void *arg);

/** The flow moved at tick t from path `from` (its home when first moved). */
void ls_repath_moved(struct ls_repath_flow *s, const struct ls_repath_params *p, uint32_t t,
		     uint8_t from);

/** The flow went back to its home path. */
void ls_repath_went_home(struct ls_repath_flow *s);

/**
 * Where to: a path in `allowed` and not in `silent` (nor `cur`), else any
 * of the n_paths not silent, else any but `cur`; picked by `hash` so flows
 * leaving one path spread over the rest. Among those candidates, the ones
 * in `heard` come first when there are two or more: a path another flow was
 * just answered on works both ways, while one nobody was answered on may
 * cross the same dead link (each wrong pick costs the flow another silence);
 * with a single one, every flow that leaves would pile onto it.
 * @return the path, or -1 when n_paths < 2
 */
int ls_repath_pick(uint64_t allowed, uint64_t silent, uint64_t heard, uint8_t cur,
		   uint16_t n_paths, uint32_t hash);

/** A destination's marks: the paths flows found silent toward it. */
struct ls_repath_mark {
	uint32_t tag;             /**< the destination's hash | 1; 0: empty */
	uint32_t until;           /**< the marks hold until then */
	uint64_t silent;          /**< bit k: path k */
};

/** The marks of destination hash h in table m[n] (n a power of two) still valid at t. */
uint64_t ls_repath_marks(const struct ls_repath_mark *m, uint32_t n, uint32_t h, uint32_t t);

/** Mark path k silent for destination hash h at t, for p->hold. */
void ls_repath_mark(struct ls_repath_mark *m, uint32_t n, uint32_t h, uint8_t k, uint32_t t,
		    const struct ls_repath_params *p);

/** Paths 0..LS_REPATH_HEARD_PATHS-1 have their answers remembered. */
#define LS_REPATH_HEARD_PATHS 16

/** A destination's answers: when a flow toward it was last acknowledged on
 *  each path (one flow's ACK says the path works both ways). */
struct ls_repath_heard {
	uint32_t tag;             /**< the destination's hash | 1; 0: empty */
	uint32_t t[LS_REPATH_HEARD_PATHS]; /**< tick of the last answer; 0: none */
};

/** An acknowledgement at tick t of a flow on path k toward destination
 *  hash h (table m[n], n a power of two; a collision takes the slot over). */
void ls_repath_heard_note(struct ls_repath_heard *m, uint32_t n, uint32_t h, uint8_t k,
			  uint32_t t);

/** The paths some flow toward destination hash h was answered on after
 *  tick `since` (bit k: path k). */
uint64_t ls_repath_heard_since(const struct ls_repath_heard *m, uint32_t n, uint32_t h,
			       uint32_t since);

#ifdef __cplusplus
}
#endif

#endif /* LS_REPATH_H */
