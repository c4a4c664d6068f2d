/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lib/pkt suite's files share: two MACs, frame builders and exact
 * parsing (frames copied to heap buffers of exactly their length), checksum
 * fix-ups, the xorshift64* generator, and the function through which
 * test_pkt_switch.c (TTL, ECN, Time Exceeded) hands its tests to pkt_suite()
 * in test_pkt.c (build/parse, turnaround, fuzz).
 */
#ifndef TEST_PKT_H
#define TEST_PKT_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ls_pkt.h"
#include "ls_test.h"

static struct ls_mac mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a } };
static struct ls_mac mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b } };

static inline struct ls_addr
addr(const char *s)
{
	struct ls_addr a;

	ck_assert_int_eq(ls_addr_parse(s, &a), 0);
	return a;
}

/* Parse a copy of exactly len bytes so overreads leave the allocation. */
static inline int
parse_exact(const uint8_t *frame, uint32_t len, bool verify,
	    struct ls_pkt_info *pi)
{
	uint8_t *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, frame, len);
	rc = ls_pkt_parse(copy, len, verify, pi);
	free(copy);
	return rc;
}

static inline struct ls_pkt_udp_hdr
udp_hdr(uint8_t family)
{
	struct ls_pkt_udp_hdr h = {
		.src_mac = mac_a, .dst_mac = mac_b,
		.sport = 40000, .dport = 862, .ttl = 63, .tos = 0xb8,
		.flow_label = 0xabcde,
	};

	h.src = addr(family == LS_AF_INET ? "10.0.0.1" : "2001:db8::1");
	h.dst = addr(family == LS_AF_INET ? "10.0.0.2" : "2001:db8::2");
	return h;
}

static inline int
build_probe(uint8_t *buf, uint32_t cap, uint8_t family, uint16_t plen)
{
	struct ls_pkt_udp_hdr h = udp_hdr(family);
	uint8_t payload[1500];

	for (unsigned int i = 0; i < plen; i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	return ls_pkt_build_udp(buf, cap, &h, payload, plen);
}

static inline void
ipv4_recsum(uint8_t *frame)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + 14);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

static inline void
icmp6_recsum(uint8_t *frame)
{
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(frame + 14);
	uint16_t ck;

	frame[54 + 2] = frame[54 + 3] = 0;
	ck = rte_ipv6_udptcp_cksum(ip, frame + 54);
	memcpy(frame + 54 + 2, &ck, 2);
}

/* Small deterministic PRNG (xorshift64*): reproducible failures. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static inline uint32_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

/* A parse result within its contract. The fuzz loops count the ones that
 * are not and assert once: check records every passing assertion. */
static inline bool
fuzz_result_ok(int rc, uint32_t len, const struct ls_pkt_info *pi)
{
	if (!(rc >= -LS_PKT_ERR_MAX && rc <= LS_PKT_OTHER && rc != 0))
		return false;
	return rc != LS_PKT_UDP || ((uint32_t)pi->payload_off + pi->payload_len <= len &&
				    pi->payload_off >= pi->l4_off + 8);
}

/* Adds the switch-helper tests to the build_parse tcase. */
void pkt_switch_tests(TCase *tc);

#endif /* TEST_PKT_H */
