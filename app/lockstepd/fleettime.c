/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fleet time in shared memory (sync.shm): the mapping TSC -> fleet time
 * with its bound, for other processes on the host to read without a system
 * call (lib/sync/ls_fleettime.h is the reader's side). sync.c hands over
 * its state on every poll; this room republishes it every 100 ms.
 *
 * The file is created exclusively, never through a link; one that exists
 * already is adopted only when it is a regular file of ours that nobody
 * else may write (a crash left it), else start-up fails saying why: a
 * local user must not be able to hand us a file they can write (forged
 * fleet time for every reader) or truncate (SIGBUS). At a clean exit the
 * page is marked unsynced and the file removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "lockstepd.h"
#include "ls_fleettime.h"
#include "ls_sync.h"

#define LS_SYNC_SHM_NS 100000000ULL /* shared-memory refresh, 100 ms */

static struct {
	struct ls_fleettime_shm *shm;
	uint64_t next_tsc;               /* next publication */
	uint64_t prev_tsc, prev_fleet;   /* the last one */
} fleet_shm;

/* An existing file at path: ours, regular, one link, not group/other
 * writable; returns its fd (O_RDWR) or -errno with why in err. */
static int
adopt(const char *path, char *err, size_t len)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		snprintf(err, len, "%s", errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return errno == ELOOP ? -EPERM : -errno;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		snprintf(err, len, "exists and is not ours to adopt (owner uid %u, mode %04o, "
			 "%lu link(s); need a regular file of uid %u, not group/other "
			 "writable): remove it", (unsigned int)st.st_uid,
			 (unsigned int)(st.st_mode & 07777), (unsigned long)st.st_nlink,
			 (unsigned int)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

int
lsd_fleettime_open(const char *path, char *err, size_t len)
{
	bool fresh = true;
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		fd = adopt(path, err, len);
		if (fd < 0)
			return fd;
		fresh = false;
	} else if (fd < 0) {
		snprintf(err, len, "%s", strerror(errno));
		return -errno;
	}
	/* 0644 whatever the umask; the size a reader maps */
	if (fchmod(fd, 0644) != 0 || fstat(fd, &st) != 0 ||
	    (st.st_size != 4096 && ftruncate(fd, 4096) != 0)) {
		int e = errno;

		snprintf(err, len, "%s", strerror(e));
		close(fd);
		return -e;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		snprintf(err, len, "mmap: %s", strerror(errno));
		return -errno;
	}
	fleet_shm.shm = p;
	if (fresh || fleet_shm.shm->magic != LS_FLEETTIME_MAGIC ||
	    fleet_shm.shm->version != LS_FLEETTIME_VERSION) {
		ls_fleettime_init(fleet_shm.shm);
	} else {
		/* Our own page from an earlier run: keep seq counting up for
		 * readers that still map it; "unsynced" until we publish. */
		struct ls_fleettime_shm v = *fleet_shm.shm;

		v.flags = 0;
		ls_fleettime_publish(fleet_shm.shm, &v);
	}
	return 0;
}

/* sync.shm at start-up: "" is none; a file we may not use stops the
 * daemon, naming it and why. */
int
lsd_fleettime_start(const char *path)
{
	char why[200];
	int rc;

	if (path[0] == '\0')
		return 0;
	rc = lsd_fleettime_open(path, why, sizeof(why));
	if (rc < 0) {
		LSD_LOG(ERR, "%s: sync.shm: cannot create %s: %s", lsd.cfg.file, path, why);
		return rc;
	}
	LSD_LOG(INFO, "sync: fleet time in %s", path);
	return 0;
}

void
lsd_fleettime_close(void)
{
	struct ls_fleettime_shm v;

	if (fleet_shm.shm == NULL)
		return;
	v = *fleet_shm.shm;
	/* readers see "unsynced", not a frozen mapping that looks fine */
	v.flags = 0;
	ls_fleettime_publish(fleet_shm.shm, &v);
	munmap(fleet_shm.shm, 4096);
	fleet_shm.shm = NULL;
	if (lsd.cfg.sync.shm[0] != '\0')
		unlink(lsd.cfg.sync.shm);
}

uint64_t
lsd_fleettime_updates(void)
{
	return fleet_shm.shm ? fleet_shm.shm->updates : 0;
}

/*
 * Publish TSC -> fleet time. The slope comes from the previous publication
 * to this one (both in the past: the simulated clock's reader only moves
 * forward), so a reader extrapolates the last 100 ms; between publications
 * that is exact for a linear clock and follows a simulated clock's wander
 * within its 100 ms change.
 */
static void
publish(uint64_t tsc, struct ls_clock *clock, const struct ls_sync_state *self,
	const struct ls_sync_node_conf *nconf)
{
	struct ls_fleettime_shm v;
	struct ls_sync_reading r, r1;
	uint64_t local = ls_clock_from_tsc(clock, tsc);

	ls_sync_fleet_read(self, nconf, local, &r);
	ls_sync_fleet_read(self, nconf, local + 1000000000ULL, &r1);
	memset(&v, 0, sizeof(v));
	v.flags = r.flags & (LS_FT_SYNCED | LS_FT_HOLDOVER | LS_FT_REF);
	v.ctr0 = tsc;
	v.fleet0_ns = r.fleet_ns;
	v.mult = fleet_shm.prev_tsc != 0 ?
		 ls_clock_slope_mult(fleet_shm.prev_tsc, fleet_shm.prev_fleet, tsc, r.fleet_ns) : 0;
	if (v.mult == 0) /* the first publication, or fleet time stood still */
		v.mult = ls_clock_slope_mult(0, 0, rte_get_tsc_hz(), LS_NS_PER_S);
	v.half0_ns = r.flags ? (uint64_t)llround(r.half_ns) : UINT64_MAX;
	v.half_ppb = r.flags && r1.half_ns > r.half_ns ? (uint64_t)llround(r1.half_ns - r.half_ns) : 0;
	v.stale_ns = 10 * LS_SYNC_SHM_NS;
	v.node_id = lsd.cfg.node_id;
	v.ref_id = self->ref_id;
	v.updates = fleet_shm.shm->updates + 1;
	ls_fleettime_publish(fleet_shm.shm, &v);
	fleet_shm.prev_tsc = tsc;
	fleet_shm.prev_fleet = r.fleet_ns;
}

void
lsd_fleettime_poll(uint64_t tsc, struct ls_clock *clock, const struct ls_sync_state *self,
		   const struct ls_sync_node_conf *nconf)
{
	if (fleet_shm.shm == NULL || tsc < fleet_shm.next_tsc)
		return;
	publish(tsc, clock, self, nconf);
	fleet_shm.next_tsc = tsc + rte_get_tsc_hz() / (1000000000ULL / LS_SYNC_SHM_NS);
}

/* Our own page, read as any local reader reads it (the event log's
 * times): -ENOENT without one (sync off, or sync.shm ""). */
int
lsd_fleettime_read(struct ls_fleettime *out)
{
	if (fleet_shm.shm == NULL)
		return -ENOENT;
	return ls_fleettime_read(fleet_shm.shm, out);
}
