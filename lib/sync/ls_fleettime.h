/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Fleet time for any process on the host, read from shared memory.
 *
 * lockstepd keeps this node's clock synchronised to fleet time (see
 * ls_sync.h). Other processes - a training job stamping its collectives, a
 * tracer - want "what is fleet time now, and how sure are we" as cheaply as
 * reading a clock. So lockstepd publishes, in one 4 KiB page (a file under
 * /dev/shm or a hugepage mount), a linear map from the CPU's free-running
 * counter to fleet time plus a bound that widens with elapsed time:
 *
 *   fleet(ctr) = fleet0_ns + (ctr - ctr0) * mult / 2^32
 *   half(ctr)  = half0_ns + |fleet(ctr) - fleet0_ns| * half_ppb / 1e9
 *
 * and readers evaluate it themselves: rdtsc (x86) or cntvct_el0 (aarch64),
 * a few loads, a 128-bit multiply. No syscall, no lock, no daemon round
 * trip, and nothing a reader does can disturb the writer (the page is
 * mapped read-only).
 *
 * Consistency is a seqlock. The writer makes seq odd, stores the fields,
 * then makes seq even again (the next even number). A reader loads seq
 * (acquire), copies the fields, loads seq again after an acquire fence; if
 * either load was odd or they differ, the writer was in the middle of an
 * update and the reader tries again. Readers never write, so any number of
 * them cost the writer nothing; a writer that dies mid-update (seq left
 * odd) makes readers give up with -EAGAIN after a bounded number of tries
 * rather than spin forever. A writer that dies between updates leaves a
 * valid but ageing anchor: readings past fleet0_ns + stale_ns are flagged.
 *
 * Self-contained: libc, stdint, stdatomic-style builtins. Single writer.
 */
#ifndef LS_FLEETTIME_H
#define LS_FLEETTIME_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_FLEETTIME_MAGIC 0x4c534654u /**< "LSFT" */
#define LS_FLEETTIME_VERSION 1
#define LS_FLEETTIME_SIZE 4096         /**< bytes mapped: one page */

#define LS_FT_SYNCED 1u   /**< the map derives from a synchronised clock */
#define LS_FT_HOLDOVER 2u /**< the node lost its neighbours and extrapolates */
#define LS_FT_REF 4u      /**< this node is the reference (its clock is fleet time) */

/** Readers retry a torn read this many times before -EAGAIN. */
#define LS_FLEETTIME_RETRIES 10000

/** The published page (only the first bytes are used). Written by lockstepd. */
struct ls_fleettime_shm {
	uint32_t magic;      /**< LS_FLEETTIME_MAGIC once initialised */
	uint32_t version;    /**< LS_FLEETTIME_VERSION */
	uint32_t seq;        /**< seqlock: odd while the writer updates */
	uint32_t flags;      /**< LS_FT_* (0 = unsynced) */
	uint64_t ctr0;       /**< counter (x86 rdtsc / aarch64 cntvct_el0) at the anchor */
	uint64_t fleet0_ns;  /**< fleet time at ctr0 */
	uint64_t mult;       /**< fleet ns per counter tick, 32.32 fixed point */
	uint64_t half0_ns;   /**< half-width of the bound at ctr0 */
	uint64_t half_ppb;   /**< growth of the half-width per elapsed ns, parts per billion */
	uint64_t stale_ns;   /**< readings later than fleet0 + stale_ns are flagged stale
			      *   (the writer stopped) */
	uint32_t node_id;    /**< this node */
	uint32_t ref_id;     /**< the reference it follows */
	uint64_t updates;    /**< publications so far */
};

#ifdef __cplusplus
static_assert(sizeof(struct ls_fleettime_shm) <= LS_FLEETTIME_SIZE,
	      "ls_fleettime_shm must fit in one page");
#else
_Static_assert(sizeof(struct ls_fleettime_shm) <= LS_FLEETTIME_SIZE,
	       "ls_fleettime_shm must fit in one page");
#endif

/** One reading. */
struct ls_fleettime {
	uint64_t fleet_ns;    /**< best estimate of fleet time */
	uint64_t earliest_ns; /**< fleet time is not earlier than this (0 unsynced) */
	uint64_t latest_ns;   /**< ... nor later than this (UINT64_MAX unsynced) */
	uint64_t ctr;         /**< the counter value the reading is for */
	uint32_t flags;       /**< LS_FT_* as published */
	bool stale;           /**< past fleet0 + stale_ns: the writer has stopped */
	uint32_t node_id;     /**< as published (read under the same seqlock) */
	uint32_t ref_id;      /**< as published */
};

/**
 * The free-running counter the page's map is in: TSC on x86 (invariant TSC
 * assumed: lockstepd warns at start, and `clock` reports invariant_tsc, when
 * CPUID does not promise it), the virtual counter on aarch64 (after an
 * isb so it is not read early). Elsewhere CLOCK_MONOTONIC_RAW ns, which the
 * vDSO serves without a syscall; the writer must use the same function.
 */
static inline uint64_t
ls_fleettime_counter(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* The fields a reader needs, copied under the seqlock. */
struct ls_fleettime_snap_ {
	uint32_t flags, node_id, ref_id;
	uint64_t ctr0, fleet0_ns, mult, half0_ns, half_ppb, stale_ns;
};

/**
 * Fleet time at counter value ctr (ls_fleettime_read() passes the counter
 * now; tests pass chosen values).
 * @return 0, -EINVAL (not an initialised page of this version), or -EAGAIN
 *         (the writer kept the page busy for LS_FLEETTIME_RETRIES tries).
 */
static inline int
ls_fleettime_read_at(const struct ls_fleettime_shm *s, uint64_t ctr, struct ls_fleettime *out)
{
	__extension__ typedef __int128 i128;
	__extension__ typedef unsigned __int128 u128;
	struct ls_fleettime_snap_ v;
	int64_t dctr, delta;
	uint64_t mag, half;
	u128 h;
	unsigned int tries;

	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != LS_FLEETTIME_MAGIC ||
	    __atomic_load_n(&s->version, __ATOMIC_RELAXED) != LS_FLEETTIME_VERSION)
		return -EINVAL;
	for (tries = 0;; tries++) {
		uint32_t q0, q1;

		if (tries >= LS_FLEETTIME_RETRIES)
			return -EAGAIN;
		q0 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (q0 & 1) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
			continue;
		}
		/* Relaxed atomic loads: the writer may be storing concurrently,
		 * and a plain copy would be a data race (and could tear). */
		v.flags = __atomic_load_n(&s->flags, __ATOMIC_RELAXED);
		v.node_id = __atomic_load_n(&s->node_id, __ATOMIC_RELAXED);
		v.ref_id = __atomic_load_n(&s->ref_id, __ATOMIC_RELAXED);
		v.ctr0 = __atomic_load_n(&s->ctr0, __ATOMIC_RELAXED);
		v.fleet0_ns = __atomic_load_n(&s->fleet0_ns, __ATOMIC_RELAXED);
		v.mult = __atomic_load_n(&s->mult, __ATOMIC_RELAXED);
		v.half0_ns = __atomic_load_n(&s->half0_ns, __ATOMIC_RELAXED);
		v.half_ppb = __atomic_load_n(&s->half_ppb, __ATOMIC_RELAXED);
		v.stale_ns = __atomic_load_n(&s->stale_ns, __ATOMIC_RELAXED);
		/* The fence keeps the field loads above the second seq load. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		q1 = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
		if (q0 == q1)
			break;
	}

	/* The reader's counter may lag the writer's anchor by a little (another
	 * core, or an anchor taken just now): the difference is signed. */
	dctr = (int64_t)(ctr - v.ctr0);
	{
		i128 p = (i128)dctr * (i128)(u128)v.mult;

		/* >> of a negative value is arithmetic with GCC/Clang: floor. */
		p >>= 32;
		if (p > INT64_MAX)
			delta = INT64_MAX;
		else if (p < INT64_MIN)
			delta = INT64_MIN;
		else
			delta = (int64_t)p;
	}
	if (delta >= 0)
		out->fleet_ns = v.fleet0_ns > UINT64_MAX - (uint64_t)delta ?
					UINT64_MAX : v.fleet0_ns + (uint64_t)delta;
	else
		out->fleet_ns = v.fleet0_ns < (uint64_t)0 - (uint64_t)delta ?
					0 : v.fleet0_ns - ((uint64_t)0 - (uint64_t)delta);

	mag = delta >= 0 ? (uint64_t)delta : (uint64_t)0 - (uint64_t)delta;
	h = (u128)mag * v.half_ppb / 1000000000u + v.half0_ns;
	half = h > UINT64_MAX ? UINT64_MAX : (uint64_t)h;

	out->ctr = ctr;
	out->flags = v.flags;
	out->node_id = v.node_id;
	out->ref_id = v.ref_id;
	out->stale = delta > 0 && (uint64_t)delta > v.stale_ns;
	if (!(v.flags & LS_FT_SYNCED)) {
		out->earliest_ns = 0;
		out->latest_ns = UINT64_MAX;
	} else {
		out->earliest_ns = out->fleet_ns < half ? 0 : out->fleet_ns - half;
		out->latest_ns = out->fleet_ns > UINT64_MAX - half ? UINT64_MAX :
								     out->fleet_ns + half;
	}
	return 0;
}

/**
 * Fleet time now.
 * @return as ls_fleettime_read_at().
 */
static inline int
ls_fleettime_read(const struct ls_fleettime_shm *s, struct ls_fleettime *out)
{
	return ls_fleettime_read_at(s, ls_fleettime_counter(), out);
}

/**
 * Writer: make a zeroed page valid (magic last, so a reader never sees the
 * magic with a half-written header).
 */
static inline void
ls_fleettime_init(struct ls_fleettime_shm *s)
{
	memset(s, 0, sizeof(*s));
	__atomic_store_n(&s->version, LS_FLEETTIME_VERSION, __ATOMIC_RELAXED);
	__atomic_store_n(&s->magic, LS_FLEETTIME_MAGIC, __ATOMIC_RELEASE);
}

/**
 * Writer: publish v's fields (all but magic, version and seq). One writer
 * at a time; readers never block it.
 */
static inline void
ls_fleettime_publish(struct ls_fleettime_shm *s, const struct ls_fleettime_shm *v)
{
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);

	/* Odd first, and the release fence keeps every field store below it:
	 * a reader that sees any new field also sees seq odd or changed. */
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->flags, v->flags, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ctr0, v->ctr0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->fleet0_ns, v->fleet0_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->mult, v->mult, __ATOMIC_RELAXED);
	__atomic_store_n(&s->half0_ns, v->half0_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->half_ppb, v->half_ppb, __ATOMIC_RELAXED);
	__atomic_store_n(&s->stale_ns, v->stale_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->node_id, v->node_id, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ref_id, v->ref_id, __ATOMIC_RELAXED);
	__atomic_store_n(&s->updates, v->updates, __ATOMIC_RELAXED);
	/* Even again, release: the fields are visible before it is. */
	__atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
}

/**
 * Map a published page read-only. The descriptor is closed at once; the
 * mapping stays valid until ls_fleettime_unmap() (or exit). Only a regular
 * file owned by root or by the caller that nobody else may write is
 * believed: anyone else could forge fleet time in it.
 * @return 0, or -errno (-EINVAL when the file is shorter than the struct,
 *         -EPERM when its owner or mode is not to be trusted).
 */
static inline int
ls_fleettime_map(const char *path, const struct ls_fleettime_shm **out)
{
	struct stat st;
	void *p;
	int fd, err;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Touching a mapping past the end of its file is SIGBUS: check first. */
	if (fstat(fd, &st) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
	    (st.st_uid != 0 && st.st_uid != geteuid())) {
		close(fd);
		return -EPERM;
	}
	if (st.st_size < (off_t)sizeof(struct ls_fleettime_shm)) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, LS_FLEETTIME_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	err = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err != 0)
		return err;
	*out = (const struct ls_fleettime_shm *)p;
	return 0;
}

/** Undo ls_fleettime_map(). */
static inline void
ls_fleettime_unmap(const struct ls_fleettime_shm *s)
{
	munmap((void *)(uintptr_t)s, LS_FLEETTIME_SIZE);
}

#ifdef __cplusplus
}
#endif

#endif /* LS_FLEETTIME_H */
