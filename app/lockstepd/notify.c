/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * systemd's notification protocol (Type=notify, WatchdogSec=): READY=1 once
 * the config's peers are in and the lcores poll, WATCHDOG=1 while every
 * lcore keeps taking messages, STOPPING=1 at a clean stop.
 *
 * The watchdog means the daemon, not only its control thread: each period
 * every active lcore gets a no-op message (LSD_MSG_PING, one static message
 * each, posted again only once taken), and WATCHDOG=1 goes only when all
 * took the last one. An lcore stuck in a loop or a driver call then stops
 * the pings, and systemd restarts the daemon after WatchdogSec.
 *
 * Written by hand, not with libsystemd's sd_notify(): the protocol is one
 * datagram of text to $NOTIFY_SOCKET (a path, or '@' for the abstract
 * namespace), a stable interface systemd documents for reimplementation
 * (sd_notify(3)), and libsystemd would be one more library in the DPU's
 * cross-build sysroot. Without $NOTIFY_SOCKET everything here is a no-op.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "lockstepd.h"

static struct {
	int fd;                       /* -1: not under systemd's notify */
	struct sockaddr_un to;
	socklen_t to_len;
	uint64_t period_tsc;          /* half of WATCHDOG_USEC, 0: no watchdog */
	uint64_t next_tsc;
	uint64_t pings, missed;
	bool stuck_said;
	struct lsd_msg ping[RTE_MAX_LCORE];
} nt = { .fd = -1 };

static void
say(const char *msg)
{
	if (nt.fd >= 0 &&
	    sendto(nt.fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&nt.to, nt.to_len) < 0)
		LSD_LOG(WARNING, "systemd notify: %s", strerror(errno));
}

/* WATCHDOG_USEC for us (WATCHDOG_PID unset or ours): the ping period. */
static void
watchdog_setup(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (us == NULL || (pid != NULL && strtol(pid, NULL, 10) != (long)getpid()))
		return;
	errno = 0;
	v = strtoull(us, &end, 10);
	if (errno || *end || v == 0) {
		LSD_LOG(WARNING, "systemd notify: WATCHDOG_USEC=%s: not a number of us, no pings", us);
		return;
	}
	nt.period_tsc = v / 2 * rte_get_tsc_hz() / 1000000;
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		nt.ping[l].type = LSD_MSG_PING;
		nt.ping[l].done = 1;   /* free to post */
	}
}

void
lsd_notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n;

	if (path == NULL || path[0] == '\0')
		return;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(nt.to.sun_path)) {
		LSD_LOG(WARNING, "systemd notify: NOTIFY_SOCKET=%s: not a socket path", path);
		return;
	}
	nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (nt.fd < 0) {
		LSD_LOG(WARNING, "systemd notify: socket: %s", strerror(errno));
		return;
	}
	nt.to.sun_family = AF_UNIX;
	memcpy(nt.to.sun_path, path, n);
	if (path[0] == '@')
		nt.to.sun_path[0] = '\0';
	nt.to_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	watchdog_setup();
}

void
lsd_notify_ready(void)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%u peers, %u ports\nMAINPID=%ld",
		 lsd_peer_count(), lsd.n_ports, (long)getpid());
	say(msg);
	nt.next_tsc = rte_rdtsc();
}

void
lsd_notify_stopping(void)
{
	say("STOPPING=1");
}

/* Every active lcore took its last ping; post the next ones. */
static bool
lcores_alive(void)
{
	bool alive = true;

	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++) {
		struct lsd_msg *m = &nt.ping[l];

		if (!lsd.lcores[l].active)
			continue;
		if (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
			if (!nt.stuck_said)
				LSD_LOG(ERR, "lcore %u has not taken a message for %.1f s: no watchdog "
					"ping (systemd restarts the daemon after WatchdogSec)", l,
					(double)nt.period_tsc / rte_get_tsc_hz());
			nt.stuck_said = true;
			alive = false;
			continue;
		}
		if (lsd_msg_post(l, m) < 0)
			m->done = 1;   /* ring full: try again next period */
	}
	return alive;
}

void
lsd_notify_poll(uint64_t now_tsc)
{
	if (nt.fd < 0 || nt.period_tsc == 0 || now_tsc < nt.next_tsc || nt.next_tsc == 0)
		return;
	nt.next_tsc = now_tsc + nt.period_tsc;
	if (!lcores_alive()) {
		nt.missed++;
		return;
	}
	nt.pings++;
	say("WATCHDOG=1");
}
