/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both apps' main() do before their own start-up (lockstepd,
 * lockstep-fabric): split the command line at "--" and let SIGINT/SIGTERM
 * ask the process to quit.
 *
 * EAL options come before "--", the app's own after it. Without "--" the
 * whole line is the app's (--help and --check work without hugepages or
 * root) and the EAL gets just the program name.
 *
 * Header-only: a few lines that two programs include once each.
 */
#ifndef LS_APP_H
#define LS_APP_H

#include <signal.h>
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

static volatile int *ls_app_quit;

static void
ls_app_on_signal(int sig)
{
	(void)sig;
	*ls_app_quit = 1;
}

/* SIGINT and SIGTERM set *quit, which the app's loops watch. SIGPIPE is
 * ignored: a reader that goes away (a capture, a truth file, a socket) is
 * an EPIPE to handle, never a reason to die. */
static inline void
ls_app_catch_signals(volatile int *quit)
{
	ls_app_quit = quit;
	signal(SIGINT, ls_app_on_signal);
	signal(SIGTERM, ls_app_on_signal);
	signal(SIGPIPE, SIG_IGN);
}

#endif /* LS_APP_H */
