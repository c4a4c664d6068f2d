/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fleet time for the rest of the host through chronyd (sync.chrony_sock):
 * once a second, while this node is synced, one sample to chronyd's SOCK
 * refclock (`refclock SOCK PATH` in chrony.conf): the system clock's time
 * at an instant and fleet time's offset from it at that instant. chronyd
 * then serves it to every process on the host (and, if configured, steers
 * the system clock to it) as it does any reference clock; its own filter
 * and the refclock's `precision` carry the error, since the SOCK protocol
 * has no field for a bound (docs/sync.md says what to set).
 *
 * The instant pairs CLOCK_REALTIME with the TSC that lockstepd's clock
 * reads: the tightest of three reads (the least TSC elapsed around the
 * clock_gettime call). The datagram is non-blocking and best effort: a
 * chronyd that is not running yet (ENOENT, ECONNREFUSED) or is slow
 * (EAGAIN) costs a counted error, never a stall.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "lockstepd.h"
#include "ls_sync.h"

#define CHRONY_SOCK_MAGIC 0x534f434b  /* "SOCK": chrony's refclock_sock.c */

/* chrony's struct sock_sample (refclock_sock.c), native byte order. */
struct chrony_sample {
	struct timeval tv;  /* system time of the measurement */
	double offset;      /* true time less system time, s */
	int pulse;          /* 0: not a PPS edge */
	int leap;           /* 0: no leap second pending */
	int pad;
	int magic;          /* CHRONY_SOCK_MAGIC */
};

static struct {
	int fd;
	struct sockaddr_un to;
	uint64_t next_tsc;
	uint64_t sent, errors, unsynced;
	int last_errno;
	double last_offset_s, last_half_s;
} ch = {.fd = -1};

/* sync.chrony_sock at start-up: "" is none. chronyd need not be up yet. */
int
lsd_chrony_open(const char *path)
{
	int rc = 0;

	if (path[0] == '\0')
		return 0;
	if (strlen(path) >= sizeof(ch.to.sun_path))
		rc = -ENAMETOOLONG;
	else if ((ch.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		rc = -errno;
	if (rc < 0) {
		LSD_LOG(ERR, "%s: sync.chrony_sock: %s: %s", lsd.cfg.file, path, strerror(-rc));
		return rc;
	}
	ch.to.sun_family = AF_UNIX;
	memcpy(ch.to.sun_path, path, strlen(path) + 1);
	LSD_LOG(INFO, "sync: fleet time to chronyd's refclock at %s", path);
	return 0;
}

void
lsd_chrony_close(void)
{
	if (ch.fd >= 0)
		close(ch.fd);
	ch.fd = -1;
}

/* CLOCK_REALTIME and the TSC at (nearly) the same instant. */
static void
instant(struct timespec *rt, uint64_t *tsc)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		struct timespec t;
		uint64_t a = rte_rdtsc(), b;

		clock_gettime(CLOCK_REALTIME, &t);
		b = rte_rdtsc();
		if (b - a < best) {
			best = b - a;
			*rt = t;
			*tsc = a + (b - a) / 2;
		}
	}
}

void
lsd_chrony_poll(uint64_t tsc, struct ls_clock *clock, const struct ls_sync_state *self,
		const struct ls_sync_node_conf *nconf)
{
	struct chrony_sample s;
	struct ls_sync_reading r;
	struct timespec rt = {0};
	uint64_t at = 0;
	int64_t off_ns;

	if (ch.fd < 0 || tsc < ch.next_tsc)
		return;
	ch.next_tsc = tsc + rte_get_tsc_hz();
	instant(&rt, &at);
	ls_sync_fleet_read(self, nconf, ls_clock_from_tsc(clock, at), &r);
	if (r.flags == 0) {
		ch.unsynced++;   /* chronyd hears nothing rather than a guess */
		return;
	}
	off_ns = (int64_t)(r.fleet_ns - (uint64_t)lsd.cfg.sync.chrony_offset_ns) -
		 ((int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec);
	memset(&s, 0, sizeof(s));
	s.tv.tv_sec = rt.tv_sec;
	s.tv.tv_usec = rt.tv_nsec / 1000;
	/* true less system time is the same at tv's microsecond as at rt's
	 * nanosecond: both clocks moved on by the same amount */
	s.offset = (double)off_ns / 1e9;
	s.magic = CHRONY_SOCK_MAGIC;
	if (sendto(ch.fd, &s, sizeof(s), 0, (const struct sockaddr *)&ch.to,
		   sizeof(ch.to)) != (ssize_t)sizeof(s)) {
		ch.errors++;
		ch.last_errno = errno;
		return;
	}
	ch.sent++;
	ch.last_offset_s = s.offset;
	ch.last_half_s = r.half_ns / 1e9;
}

json_t *
lsd_chrony_json(void)
{
	if (ch.fd < 0)
		return json_null();
	return json_pack("{ss sI sI sI ss sf sf}", "sock", ch.to.sun_path,
			 "sent", (json_int_t)ch.sent, "errors", (json_int_t)ch.errors,
			 "unsynced", (json_int_t)ch.unsynced,
			 "last_error", ch.last_errno ? strerror(ch.last_errno) : "",
			 "last_offset_s", ch.last_offset_s, "last_half_s", ch.last_half_s);
}
