/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The start-up both apps share (see ls_app.h): one place for the order
 * options → file → check-only → EAL, and for the exit statuses it gives.
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_version.h>

#include "ls_app.h"

void
ls_app_help_version(bool version, const char *name, const char *usage)
{
	if (version)
		printf("%s %s (%s)\n", name, LS_APP_VERSION, rte_version());
	else
		fputs(usage, stdout);
	exit(0);
}

int
ls_app_bad_option(const char *name, const char *opt, const char *usage)
{
	fprintf(stderr, "%s: unknown option \"%s\"\n%s", name, opt, usage);
	return -EINVAL;
}

static volatile int *ls_app_quit, *ls_app_reload;

static void
ls_app_on_signal(int sig)
{
	if (sig == SIGHUP)
		*ls_app_reload = 1;
	else
		*ls_app_quit = 1;
}

/* A crash leaves its stack in the log (addresses resolve with addr2line
 * against the same binary), then dies of the same signal so the exit
 * status and any core are what they would have been. */
static void
ls_app_on_fatal(int sig)
{
	static const char msg[] = "fatal signal, stack follows\n";
	void *frames[48];
	int n = backtrace(frames, 48);

	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) > 0)
		backtrace_symbols_fd(frames, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
ls_app_catch_fatal(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	void *warm;

	backtrace(&warm, 1); /* loads libgcc now, not inside the handler */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], ls_app_on_fatal);
}

void
ls_app_start(const struct ls_app_start *s, int argc, char **argv)
{
	struct ls_app_argv av;
	bool check_only = false;
	char err[512];
	int rc;

	ls_app_split_argv(argc, argv, &av);
	if (s->parse(av.app_argc, av.app_argv, &check_only) < 0)
		exit(2);
	rc = s->load(check_only, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", s->name, err);
		exit(2);
	}
	if (rc > 0)
		exit(0);
	if (rte_eal_init(av.eal_argc, argv) < 0) {
		fprintf(stderr, "%s: EAL initialisation failed%s%s (EAL messages above)\n",
			s->name, rte_errno ? ": " : "", rte_errno ? rte_strerror(rte_errno) : "");
		exit(1);
	}
	/* SIGINT and SIGTERM set *quit, which the app's loops watch. SIGPIPE
	 * is ignored: a reader that goes away (a capture, a truth file, a
	 * socket) is an EPIPE to handle, never a reason to die. */
	ls_app_quit = s->quit;
	signal(SIGINT, ls_app_on_signal);
	signal(SIGTERM, ls_app_on_signal);
	signal(SIGPIPE, SIG_IGN);
	ls_app_catch_fatal();
	/* a terminal hang-up or a reload request never kills a daemon */
	ls_app_reload = s->reload;
	signal(SIGHUP, s->reload != NULL ? ls_app_on_signal : SIG_IGN);
}

/* A memif server port (role server is memif's default) keeps its socket
 * listening to the process's end; its file, when it has one (abstract
 * sockets, also the default, have none), is removed here. false: not a
 * memif server, close it as any port. */
static bool
ls_app_memif_server_leave(const struct rte_eth_dev_info *di)
{
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *role, *sock, *abstract;

	if (di->driver_name == NULL || strcmp(di->driver_name, "net_memif") != 0)
		return false;
	da = rte_dev_devargs(di->device);
	kv = da != NULL && da->args != NULL ? rte_kvargs_parse(da->args, NULL) : NULL;
	role = kv != NULL ? rte_kvargs_get(kv, "role") : NULL;
	if (role != NULL && strcmp(role, "client") == 0) {
		rte_kvargs_free(kv);
		return false;
	}
	sock = kv != NULL ? rte_kvargs_get(kv, "socket") : NULL;
	abstract = kv != NULL ? rte_kvargs_get(kv, "socket-abstract") : NULL;
	if (sock != NULL && abstract != NULL && strcmp(abstract, "no") == 0)
		unlink(sock);
	rte_kvargs_free(kv);
	return true;
}

bool
ls_app_ports_close(const uint16_t *ports, unsigned int n)
{
	bool all = true;

	for (unsigned int i = 0; i < n; i++) {
		struct rte_eth_dev_info di;

		if (rte_eth_dev_info_get(ports[i], &di) == 0 && ls_app_memif_server_leave(&di)) {
			all = false;
			continue;
		}
		/* a memif client closes as any port: its peer gets a clean
		 * disconnect (leaving one open crashed a peer polling it in
		 * zero-copy mode, its regions unmapped under its burst) */
		rte_eth_dev_stop(ports[i]);
		rte_eth_dev_close(ports[i]);
	}
	return all;
}
