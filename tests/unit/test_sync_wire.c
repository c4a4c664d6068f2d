/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/sync tests, the wire form (ls_sync_wire.c) and reading fleet time.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_sync.h"

/* ---- 7. wire form ----------------------------------------------------- */

START_TEST(test_wire)
{
	struct ls_sync_state s, d;
	uint8_t buf[LS_SYNC_WIRE_LEN];

	ls_sync_state_init(&s, 0x01020304);
	s.ref_id = 0x0a0b0c0d;
	s.ref_seq = 0xfffffffe;
	s.hops = 0x1234;
	s.flags = LS_SYNC_F_SYNCED | LS_SYNC_F_HOLDOVER;
	s.t0 = BASE + 987654321;
	s.theta_ns = -1234567.890625; /* a multiple of 1/256 */
	s.phi = 87.123456789e-6;
	s.sigma_ns = 12.5;
	s.phi_sigma = 3.25e-9;
	s.t_good = 42;
	s.ref_seq_at = 43;
	ls_sync_wire_encode(&s, buf);
	ck_assert_uint_eq(buf[0], 2);
	ck_assert_uint_eq(buf[1], s.flags);
	ck_assert_uint_eq(buf[2], 0x12);
	ck_assert_uint_eq(buf[3], 0x34);
	ck_assert_uint_eq(buf[4], 0x01);
	ck_assert_uint_eq(buf[7], 0x04);
	ck_assert_uint_eq(buf[8], 0x0a);
	ck_assert_uint_eq(buf[16], (uint8_t)(s.t0 >> 56));
	ck_assert_uint_eq(buf[23], (uint8_t)s.t0);
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), 0);
	ck_assert_uint_eq(d.node_id, s.node_id);
	ck_assert_uint_eq(d.ref_id, s.ref_id);
	ck_assert_uint_eq(d.ref_seq, s.ref_seq);
	ck_assert_uint_eq(d.hops, s.hops);
	ck_assert_uint_eq(d.flags, s.flags);
	ck_assert_uint_eq(d.t0, s.t0);
	ck_assert(d.theta_ns == s.theta_ns);
	ck_assert(fabs(d.phi - s.phi) <= 0.5e-15);
	ck_assert(d.sigma_ns == 12.5);
	ck_assert(fabs(d.phi_sigma - s.phi_sigma) <= 0.5e-12);
	ck_assert_uint_eq(d.t_good, 0);
	ck_assert_uint_eq(d.ref_seq_at, 0);
	ck_assert(!(d.flags & LS_SYNC_F_EDGE));
	/* A reflector's own edge back to the asker. */
	ls_sync_wire_put_edge(buf, -6336937.5, -52.25e-6, 275.5);
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), 0);
	ck_assert(d.flags & LS_SYNC_F_EDGE);
	ck_assert(d.edge_back_ns == -6336937.5);
	ck_assert(fabs(d.edge_back_drift + 52.25e-6) <= 0.5e-12);
	ck_assert(d.edge_back_sigma == 275.5);
	ls_sync_wire_put_edge(buf, 0, 1.0, -1);
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), 0);
	ck_assert(d.edge_back_drift == (double)INT32_MAX * 1e-12);
	ck_assert(d.edge_back_sigma == 0);
	/* Rounding to the wire's units. */
	s.theta_ns = 1.0 / 1024;
	ls_sync_wire_encode(&s, buf);
	ls_sync_wire_decode(buf, &d);
	ck_assert(d.theta_ns == 0);
	s.theta_ns = 3.0 / 512;
	ls_sync_wire_encode(&s, buf);
	ls_sync_wire_decode(buf, &d);
	ck_assert(fabs(d.theta_ns - 3.0 / 512) <= 1.0 / 512);

	/* Saturation, not wrap-around. */
	s.theta_ns = 1e300;
	s.phi = -1e10;
	s.sigma_ns = 1e12;
	s.phi_sigma = 1.0;
	ls_sync_wire_encode(&s, buf);
	ls_sync_wire_decode(buf, &d);
	ck_assert(d.theta_ns == (double)INT64_MAX / 256);
	ck_assert(d.phi == (double)INT64_MIN * 1e-15);
	ck_assert(d.sigma_ns == (double)UINT32_MAX / 256);
	ck_assert(d.phi_sigma == (double)UINT32_MAX * 1e-12);
	s.theta_ns = -1e300;
	s.sigma_ns = -5;
	s.phi_sigma = NAN;
	ls_sync_wire_encode(&s, buf);
	ls_sync_wire_decode(buf, &d);
	ck_assert(d.theta_ns == (double)INT64_MIN / 256);
	ck_assert(d.sigma_ns == 0);
	ck_assert(d.phi_sigma == (double)UINT32_MAX * 1e-12);

	/* Never filled, or from the future: rejected. */
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), -EBADMSG);
	ls_sync_wire_encode(&s, buf);
	buf[0] = 3;
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), -EBADMSG);
	buf[0] = 1; /* the version before edge_back_sigma */
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), -EBADMSG);
	buf[0] = 0;
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), -EBADMSG);
}
END_TEST

/* The versions' rule (docs/sync.md, "Upgrades"). */
START_TEST(test_wire_versions)
{
	struct ls_sync_state s = {.flags = LS_SYNC_F_SYNCED, .node_id = 9, .ref_id = 1,
				  .theta_ns = 12.5, .sigma_ns = 3};
	struct ls_sync_state d;
	uint8_t buf[LS_SYNC_WIRE_LEN];

	/* The ask: zeros but our version, which no decode takes for a state
	 * (a reflector that left it as it came filled nothing). */
	memset(buf, 0xa5, sizeof(buf));
	ls_sync_wire_ask(buf);
	ck_assert_int_eq(buf[0], LS_SYNC_WIRE_VERSION);
	for (unsigned int i = 1; i < LS_SYNC_WIRE_LEN; i++)
		ck_assert_int_eq(buf[i], 0);
	ck_assert(!ls_sync_wire_filled(buf));
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), -EBADMSG);
	/* one byte past the version makes it filled */
	buf[LS_SYNC_WIRE_LEN - 1] = 1;
	ck_assert(ls_sync_wire_filled(buf));
	/* answerable: asks from before asks existed (0), ours, newer ones (the
	 * reflector answers in its newest); not below the oldest it encodes */
	ck_assert(ls_sync_wire_answerable(0));
	ck_assert(ls_sync_wire_answerable(LS_SYNC_WIRE_VERSION));
	ck_assert(ls_sync_wire_answerable(LS_SYNC_WIRE_VERSION + 1));
	ck_assert(ls_sync_wire_answerable(255));
	ck_assert(!ls_sync_wire_answerable(LS_SYNC_WIRE_VERSION_MIN - 1));
	/* what a reflector encodes, its asker decodes */
	ls_sync_wire_encode(&s, buf);
	ck_assert_int_eq(buf[0], LS_SYNC_WIRE_VERSION);
	ck_assert(ls_sync_wire_filled(buf));
	ck_assert_int_eq(ls_sync_wire_decode(buf, &d), 0);
}
END_TEST

/* ---- 8. reading fleet time -------------------------------------------- */

START_TEST(test_fleet_read)
{
	struct ls_sync_state s;
	struct ls_sync_node_conf c;
	struct ls_sync_reading r, r2;
	uint64_t local = BASE + 5555;

	ls_sync_node_conf_default(&c);
	ls_sync_state_init(&s, 1);
	ls_sync_fleet_read(&s, &c, local, &r);
	ck_assert_uint_eq(r.flags, 0);
	ck_assert_uint_eq(r.fleet_ns, local);
	ck_assert_uint_eq(r.earliest_ns, 0);
	ck_assert_uint_eq(r.latest_ns, UINT64_MAX);

	/* theta +2.4 ms at t0, phi -50 ppm: 1 s later the correction is 2.35 ms. */
	s.flags = LS_SYNC_F_SYNCED;
	s.t0 = local;
	s.t_good = local;
	s.theta_ns = 2400000.4;
	s.phi = -50e-6;
	s.sigma_ns = 4;
	s.phi_sigma = 1e-9;
	c.asym_bound_ns = 10;
	ls_sync_fleet_read(&s, &c, local, &r);
	ck_assert_uint_eq(r.fleet_ns, local - 2400000);
	ck_assert(r.half_ns == 22);
	ck_assert_uint_eq(r.earliest_ns, r.fleet_ns - 22);
	ck_assert_uint_eq(r.latest_ns, r.fleet_ns + 22);
	ls_sync_fleet_read(&s, &c, local + 1000000000ULL, &r);
	ck_assert_uint_eq(r.fleet_ns, local + 1000000000ULL - 2350000);
	ck_assert(fabs(r.half_ns - (22 + (3e-9 + 1e-6) * 1e9)) < 1e-6);
	/* Before t0 works the same way (signed differences). */
	ls_sync_fleet_read(&s, &c, local - 1000000000ULL, &r2);
	ck_assert_uint_eq(r2.fleet_ns, local - 1000000000ULL - 2450000);
	ck_assert(fabs(r2.half_ns - r.half_ns) < 1e-6);
	/* Clamped at the ends of the range. */
	s.t0 = 100;
	s.t_good = 100;
	s.phi = 0;
	ls_sync_fleet_read(&s, &c, 100, &r);
	ck_assert_uint_eq(r.fleet_ns, 0);
	ck_assert_uint_eq(r.earliest_ns, 0);
	s.theta_ns = -1000;
	s.t0 = UINT64_MAX - 10;
	s.t_good = s.t0;
	ls_sync_fleet_read(&s, &c, UINT64_MAX - 10, &r);
	ck_assert_uint_eq(r.fleet_ns, UINT64_MAX);
	ck_assert_uint_eq(r.latest_ns, UINT64_MAX);
}
END_TEST

void
sync_wire_tests(TCase *tc)
{
	tcase_add_test(tc, test_wire);
	tcase_add_test(tc, test_wire_versions);
	tcase_add_test(tc, test_fleet_read);
}
