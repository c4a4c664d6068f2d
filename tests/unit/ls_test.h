/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every unit suite shares: the runner, a seeded generator, a scratch
 * directory.
 *
 * A suite file ends in LS_TEST_MAIN(suite_fn) instead of writing its own
 * main; check runs every test in a forked child (forced, so a crash is a
 * failed test rather than a dead runner) and the exit status is the
 * verdict meson reads. A suite split over several .c files links
 * tests/unit/ls_test.c, which holds the shared state, so the files never
 * call one another except for the part functions the main file collects.
 *
 * The generator is splitmix64: small, seedable, and good enough to shape
 * test distributions. Tests seed it (ls_rng_seed) before drawing so a
 * failure reproduces; in fork mode each test starts from the seed it sets.
 */
#ifndef LS_TEST_H
#define LS_TEST_H

#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

/** splitmix64 state; set it with ls_rng_seed(). */
extern uint64_t ls_rng_state;

/** Scratch directory made by LS_TEST_MAIN_TMPDIR, removed at exit. */
extern char ls_test_tmpdir[256];

static inline void
ls_rng_seed(uint64_t seed)
{
	ls_rng_state = seed;
}

static inline uint64_t
ls_rng_next(void)
{
	uint64_t z = (ls_rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double
ls_rng_unit(void)
{
	return (double)(ls_rng_next() >> 11) / 9007199254740992.0;
}

/* Uniform in (0, 1): never 0, so log() is safe. */
static inline double
ls_rng_unit_open(void)
{
	return ((double)(ls_rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline double
ls_rng_normal(void)
{
	double u = 1.0 - ls_rng_unit();

	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * ls_rng_unit());
}

/**
 * Run a suite: fork mode, the normal report, EXIT_SUCCESS only when no
 * test failed. setup (may be NULL) runs first and a nonzero return fails
 * the run; teardown (may be NULL) runs after.
 */
int ls_test_main(Suite *(*suite_fn)(void), int (*setup)(void), void (*teardown)(void));

/** Make ls_test_tmpdir ($TMPDIR or /tmp, then name.XXXXXX); 0 or -1. */
int ls_test_tmpdir_make(const char *name);

/** Remove the files the tests wrote in ls_test_tmpdir, then the directory. */
void ls_test_tmpdir_remove(void);

/**
 * Write text to ls_test_tmpdir/name with every single quote turned into a
 * double one (JSON in C strings without escapes); returns path.
 */
const char *ls_test_write_json(const char *name, const char *text, char *path, size_t len);

#define LS_TEST_MAIN_WITH(suite_fn, setup, teardown) \
	int \
	main(void) \
	{ \
		return ls_test_main(suite_fn, setup, teardown); \
	}

#define LS_TEST_MAIN(suite_fn) LS_TEST_MAIN_WITH(suite_fn, NULL, NULL)

/*
 * A suite whose tests need the EAL (mempools, rte_hash, the interrupt
 * thread): the EAL up without hugepages or devices (mem_mb MB, a file
 * prefix of its own), every test in this process (EAL state does not
 * survive a fork).
 */
int ls_test_main_eal(Suite *(*suite_fn)(void), const char *name, const char *mem_mb);

#define LS_TEST_MAIN_EAL(suite_fn, name, mem_mb) \
	int \
	main(void) \
	{ \
		return ls_test_main_eal(suite_fn, name, mem_mb); \
	}

/* A suite that writes files gets ls_test_tmpdir, named after the suite. */
#define LS_TEST_MAIN_TMPDIR(suite_fn, name) \
	static int \
	ls_test_tmpdir_setup(void) \
	{ \
		return ls_test_tmpdir_make(name); \
	} \
	LS_TEST_MAIN_WITH(suite_fn, ls_test_tmpdir_setup, ls_test_tmpdir_remove)

#endif /* LS_TEST_H */
