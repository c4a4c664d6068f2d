/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce_tool: lib/roce on the command line, for cross-checks against other
 * implementations (test_roce_scapy.py drives it with scapy's RoCE layer)
 * and a quick timing of the source-port rewrite.
 *
 *   roce_tool icrc           hex IP packets on stdin, one a line; prints
 *                            the computed ICRC (crc32() value, %08x) and
 *                            "ok"/"bad" for the one carried, or "error N"
 *   roce_tool sport PORT     hex IP packets on stdin; prints each with its
 *                            source port rewritten by ls_roce_set_sport()
 *   roce_tool cnp SRC DST QP PKEY SPORT DSCP ECN
 *                            prints a CNP from ls_roce_cnp_build() in hex
 *   roce_tool bench          ns per full ICRC vs incremental update
 *
 * Packets start at the IP header, as the library takes them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ls_roce.h"

#define MAX_PKT 65536

static int
unhex(const char *s, uint8_t *out, uint32_t cap)
{
	uint32_t n = 0;

	while (*s && *s != '\n' && *s != '\r') {
		unsigned int v;

		if (n >= cap || sscanf(s, "%2x", &v) != 1 || !s[1])
			return -EINVAL;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return (int)n;
}

static void
print_hex(const uint8_t *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		printf("%02x", p[i]);
	printf("\n");
}

static int
for_each_line(int (*fn)(uint8_t *pkt, uint32_t len, void *arg), void *arg)
{
	static char line[2 * MAX_PKT + 4];
	static uint8_t pkt[MAX_PKT];

	while (fgets(line, sizeof(line), stdin)) {
		int n = unhex(line, pkt, sizeof(pkt));

		if (n < 0) {
			printf("error %d\n", n);
			continue;
		}
		fn(pkt, (uint32_t)n, arg);
		fflush(stdout);
	}
	return 0;
}

static int
do_icrc(uint8_t *pkt, uint32_t len, void *arg)
{
	uint32_t icrc;
	int rc;

	(void)arg;
	rc = ls_roce_icrc_compute(pkt, len, &icrc);
	if (rc < 0) {
		printf("error %d\n", rc);
		return 0;
	}
	printf("%08x %s\n", icrc, ls_roce_icrc_check(pkt, len) == 0 ? "ok" : "bad");
	return 0;
}

static int
do_sport(uint8_t *pkt, uint32_t len, void *arg)
{
	int rc = ls_roce_set_sport(pkt, len, *(uint16_t *)arg, NULL);

	if (rc < 0)
		printf("error %d\n", rc);
	else
		print_hex(pkt, len);
	return 0;
}

static int
do_cnp(char **argv)
{
	struct ls_roce_cnp_params p = { 0 };
	uint8_t buf[LS_ROCE_CNP_LEN6];
	int n;

	if (ls_addr_parse(argv[0], &p.src) < 0 ||
	    ls_addr_parse(argv[1], &p.dst) < 0) {
		fprintf(stderr, "roce_tool: bad address\n");
		return 2;
	}
	p.dest_qp = (uint32_t)strtoul(argv[2], NULL, 0);
	p.pkey = (uint16_t)strtoul(argv[3], NULL, 0);
	p.sport = (uint16_t)strtoul(argv[4], NULL, 0);
	p.dscp = (uint8_t)strtoul(argv[5], NULL, 0);
	p.ecn = (uint8_t)strtoul(argv[6], NULL, 0);
	n = ls_roce_cnp_build(buf, sizeof(buf), &p);
	if (n < 0) {
		fprintf(stderr, "roce_tool: cnp: %s\n", strerror(-n));
		return 1;
	}
	print_hex(buf, (uint32_t)n);
	return 0;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* A plain IPv4 RoCEv2 packet with plen payload bytes, ICRC set. */
static uint32_t
bench_packet(uint8_t *buf, uint32_t plen)
{
	struct ls_roce_bth bth = { .opcode = 0x0a, .pkey = 0xffff,
				   .dest_qp = 0x1234, .psn = 1 };
	uint32_t n = 20 + 8 + 12 + plen + 4;

	memset(buf, 0, n);
	for (uint32_t i = 0; i < plen; i++)
		buf[40 + i] = (uint8_t)(i * 31 + 7);
	buf[0] = 0x45;
	buf[2] = (uint8_t)(n >> 8);
	buf[3] = (uint8_t)n;
	buf[8] = 64;
	buf[9] = 17;
	buf[22] = LS_ROCE_UDP_PORT >> 8;
	buf[23] = LS_ROCE_UDP_PORT & 0xff;
	buf[24] = (uint8_t)((n - 20) >> 8);
	buf[25] = (uint8_t)(n - 20);
	ls_roce_bth_put(buf + 28, 12, &bth);
	ls_roce_icrc_set(buf, n);
	return n;
}

/*
 * The machine this runs on is usually shared: time many short rounds and
 * keep each variant's fastest, which is the closest to its own cost.
 */
#define BENCH_ROUNDS 40
#define BENCH_ITERS 5000

static int
do_bench(void)
{
	static const uint32_t sizes[] = { 1024, 4096 };
	static uint8_t buf[8192];

	for (unsigned int s = 0; s < 2; s++) {
		struct ls_roce_shift_cache cache;
		uint32_t n = bench_packet(buf, sizes[s]);
		double best[3] = { 1e18, 1e18, 1e18 };

		memset(&cache, 0, sizeof(cache));
		for (int r = 0; r < BENCH_ROUNDS; r++) {
			double t[4];

			t[0] = now_ns();
			for (int i = 0; i < BENCH_ITERS; i++) {
				buf[21] = (uint8_t)i;   /* new port, full recompute */
				ls_roce_icrc_set(buf, n);
			}
			t[1] = now_ns();
			for (int i = 0; i < BENCH_ITERS; i++)
				ls_roce_set_sport(buf, n, (uint16_t)(i + 1), NULL);
			t[2] = now_ns();
			for (int i = 0; i < BENCH_ITERS; i++)
				ls_roce_set_sport(buf, n, (uint16_t)(i + 1), &cache);
			t[3] = now_ns();
			for (int k = 0; k < 3; k++)
				if ((t[k + 1] - t[k]) / BENCH_ITERS < best[k])
					best[k] = (t[k + 1] - t[k]) / BENCH_ITERS;
		}
		if (ls_roce_icrc_check(buf, n) != 0) {
			fprintf(stderr, "roce_tool: bench: ICRC wrong after the loop\n");
			return 1;
		}
		printf("payload %4u B (IPv4 packet %u B): full recompute %7.1f ns, "
		       "set_sport %6.1f ns, set_sport cached %6.1f ns\n",
		       sizes[s], n, best[0], best[1], best[2]);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "icrc") == 0)
		return for_each_line(do_icrc, NULL);
	if (argc == 3 && strcmp(argv[1], "sport") == 0) {
		uint16_t port = (uint16_t)strtoul(argv[2], NULL, 0);

		return for_each_line(do_sport, &port);
	}
	if (argc == 9 && strcmp(argv[1], "cnp") == 0)
		return do_cnp(argv + 2);
	if (argc == 2 && strcmp(argv[1], "bench") == 0)
		return do_bench();
	fprintf(stderr, "usage: roce_tool icrc | sport PORT | "
		"cnp SRC DST QP PKEY SPORT DSCP ECN | bench\n");
	return 2;
}
