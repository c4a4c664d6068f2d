/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both apps' main() do before their own start-up (lockstepd,
 * lockstep-fabric): split the command line at "--", read the app's options and
 * its file, answer a check-only run, bring the EAL up, and let SIGINT/SIGTERM
 * ask the process to quit.
 *
 * EAL options come before "--", the app's own after it. Without "--" the
 * whole line is the app's (--help and --check work without hugepages or
 * root) and the EAL gets just the program name.
 *
 * ls_app_start() lives in ls_app.c, which both executables compile; the rest
 * is a few inline lines.
 */
#ifndef LS_APP_H
#define LS_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct ls_app_argv {
	int eal_argc;      /* argv[0 .. eal_argc) for rte_eal_init() */
	int app_argc;      /* the app's options: app_argv[1 .. app_argc) */
	char **app_argv;
};

static inline void
ls_app_split_argv(int argc, char **argv, struct ls_app_argv *a)
{
	int dashdash = -1;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dashdash = i;
			break;
		}
	a->eal_argc = dashdash < 0 ? 1 : dashdash;
	a->app_argc = dashdash < 0 ? argc : argc - dashdash;
	a->app_argv = dashdash < 0 ? argv : argv + dashdash;
}

/* What differs between the apps' start-ups; the order is ls_app_start()'s. */
struct ls_app_start {
	const char *name;  /* program name for messages */
	/* The app's own options; < 0 on bad usage (already printed). */
	int (*parse)(int argc, char **argv, bool *check_only);
	/* The app's file (config or topology): < 0 with the reason in err;
	 * on a check-only run it prints "FILE: ok (...)", frees, returns 1. */
	int (*load)(bool check_only, char *err, size_t len);
	volatile int *quit;      /* set by SIGINT/SIGTERM once the EAL is up */
	volatile int *reload;    /* set by SIGHUP; NULL: SIGHUP is ignored */
};

#define LS_APP_VERSION LS_VERSION  /* meson.build's project version */

/* --help (usage on stdout) or --version ("NAME 0.1.0 (DPDK x.y)"), then
 * exit 0: the two options every program here answers before the EAL. */
void ls_app_help_version(bool version, const char *name, const char *usage)
	__attribute__((noreturn));

/* An option getopt did not know: name it and the usage on stderr, -EINVAL. */
int ls_app_bad_option(const char *name, const char *opt, const char *usage);

/*
 * Runs parse, load, the check-only answer, rte_eal_init() and catches
 * SIGINT/SIGTERM. Returns when the EAL is up and the app goes on; otherwise
 * ends the process (as rte_exit does) with 0 check-only ok, 1 EAL failed,
 * 2 bad usage or file. What load() made is left to the process's end.
 */
void ls_app_start(const struct ls_app_start *s, int argc, char **argv);

/*
 * At exit: stop and close ports[0..n-1], except memif *server* ports, which
 * are left for the process's end to close (their clients see the control
 * socket close, as when a process is killed); their socket file is
 * removed. DPDK 22.11's memif frees a listener's interrupt handle on close
 * without unregistering it, and the interrupt thread then reads freed
 * memory the next time it rebuilds its wait list (a crash in
 * rte_intr_fd_get when memif peers shut down together). A memif client
 * closes as any port. rte_eal_cleanup() closes devices too, so with a port
 * left open the caller skips it.
 * @return true if every port was closed (rte_eal_cleanup() is safe).
 */
bool ls_app_ports_close(const uint16_t *ports, unsigned int n);

#endif /* LS_APP_H */
