/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lsfleettime: print fleet time as any process on the host sees it.
 *
 * It maps lockstepd's shared page (sync.shm in the daemon's configuration)
 * read-only and evaluates it exactly as a library user would, through
 * ls_fleettime.h: no daemon round trip, no syscall per reading. So it is
 * both a debugging aid (is the page there, is it fresh, how wide is the
 * bound) and a worked example of the reader side.
 *
 * Output is one JSON object per line, easy to feed to jq or a plotting
 * script:
 *   {"ctr":..,"fleet_ns":..,"earliest_ns":..,"latest_ns":..,"half_ns":..,
 *    "flags":..,"stale":false,"node_id":..,"ref_id":..}
 * Exit status: 0, 1 on any error (message on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ls_fleettime.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: lsfleettime PATH [--count N] [--interval-ms M]\n"
		   "  Read fleet time from lockstepd's shared page at PATH and print\n"
		   "  one JSON line per reading.\n"
		   "  --count N        readings to take (default 1, 0 = until killed)\n"
		   "  --interval-ms M  pause between readings (default 1000)\n");
}

/* Parse a non-negative decimal that fits in max; -1 on garbage. */
static int
parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0' || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

int
main(int argc, char **argv)
{
	const struct ls_fleettime_shm *shm = NULL;
	const char *path = NULL;
	uint64_t count = 1, interval_ms = 1000, i;
	int a, rc;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--count") == 0) {
			if (parse_u64(a + 1 < argc ? argv[++a] : NULL, UINT64_MAX, &count) != 0) {
				fprintf(stderr, "lsfleettime: --count needs a number\n");
				return 2;
			}
		} else if (strcmp(argv[a], "--interval-ms") == 0) {
			if (parse_u64(a + 1 < argc ? argv[++a] : NULL, 86400000, &interval_ms) != 0) {
				fprintf(stderr, "lsfleettime: --interval-ms needs a number of ms\n");
				return 2;
			}
		} else if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (argv[a][0] == '-' || path != NULL) {
			usage(stderr);
			return 2;
		} else {
			path = argv[a];
		}
	}
	if (path == NULL) {
		usage(stderr);
		return 2;
	}

	rc = ls_fleettime_map(path, &shm);
	if (rc != 0) {
		fprintf(stderr, "lsfleettime: %s: %s\n", path,
			rc == -EINVAL ? "too short to be a fleet-time page" : strerror(-rc));
		return 1;
	}
	for (i = 0; count == 0 || i < count; i++) {
		struct ls_fleettime t;

		if (i > 0 && interval_ms > 0) {
			struct timespec ts = {
				.tv_sec = (time_t)(interval_ms / 1000),
				.tv_nsec = (long)(interval_ms % 1000) * 1000000L,
			};

			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
		}
		rc = ls_fleettime_read(shm, &t);
		if (rc != 0) {
			fprintf(stderr, "lsfleettime: %s: %s\n", path,
				rc == -EINVAL ? "not a fleet-time page (bad magic or version)" :
				rc == -EAGAIN ? "writer busy (update never completed)" :
						strerror(-rc));
			ls_fleettime_unmap(shm);
			return 1;
		}
		printf("{\"ctr\":%" PRIu64 ",\"fleet_ns\":%" PRIu64 ",\"earliest_ns\":%" PRIu64
		       ",\"latest_ns\":%" PRIu64 ",\"half_ns\":%" PRIu64 ",\"flags\":%" PRIu32
		       ",\"stale\":%s,\"node_id\":%" PRIu32 ",\"ref_id\":%" PRIu32 "}\n",
		       t.ctr, t.fleet_ns, t.earliest_ns, t.latest_ns,
		       (t.latest_ns - t.earliest_ns) / 2, t.flags, t.stale ? "true" : "false",
		       t.node_id, t.ref_id);
		fflush(stdout);
	}
	ls_fleettime_unmap(shm);
	return 0;
}
