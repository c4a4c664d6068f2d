/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The announcement's wire form: a fixed LS_SYNC_WIRE_LEN-byte record,
 * big-endian, values as scaled integers (ls_sync.h has the layout). Fixed
 * point rather than doubles so the record reads the same on any host, and
 * saturated so a runaway estimate cannot wrap into a plausible one.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "ls_common.h"
#include "ls_sync.h"

/* ---- wire form -------------------------------------------------------- */

/* v in units, rounded, saturated to int64; NaN -> 0. */
static int64_t
sat_i64(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 9223372036854775808.0)
		return INT64_MAX;
	if (v <= -9223372036854775808.0)
		return INT64_MIN;
	return llround(v);
}

/* v in units, rounded, saturated to int32; NaN -> 0. */
static int32_t
sat_i32(double v)
{
	int64_t x = sat_i64(v);

	return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : (int32_t)x;
}

/* v in units, rounded, saturated to uint32; NaN -> max (unknown = worst). */
static uint32_t
sat_u32(double v)
{
	if (isnan(v) || v >= 4294967295.0)
		return UINT32_MAX;
	if (v <= 0)
		return 0;
	return (uint32_t)llround(v);
}

/* 2: edge_back_drift int32, edge_back_sigma */
#define WIRE_VERSION LS_SYNC_WIRE_VERSION

void
ls_sync_wire_ask(uint8_t *buf)
{
	memset(buf, 0, LS_SYNC_WIRE_LEN);
	buf[0] = LS_SYNC_WIRE_VERSION;
}

int
ls_sync_wire_filled(const uint8_t *buf)
{
	for (unsigned int i = 1; i < LS_SYNC_WIRE_LEN; i++)
		if (buf[i] != 0)
			return 1;
	return 0;
}

void
ls_sync_wire_encode(const struct ls_sync_state *s, uint8_t *buf)
{
	buf[0] = WIRE_VERSION;
	buf[1] = s->flags;
	ls_put_be16(buf + 2, s->hops);
	ls_put_be32(buf + 4, s->node_id);
	ls_put_be32(buf + 8, s->ref_id);
	ls_put_be32(buf + 12, s->ref_seq);
	ls_put_be64(buf + 16, s->t0);
	ls_put_be64(buf + 24, (uint64_t)sat_i64(s->theta_ns * 256.0));
	ls_put_be64(buf + 32, (uint64_t)sat_i64(s->phi * 1e15));
	ls_put_be32(buf + 40, sat_u32(s->sigma_ns * 256.0));
	ls_put_be32(buf + 44, sat_u32(s->phi_sigma * 1e12));
	ls_put_be64(buf + 48, (uint64_t)sat_i64(s->edge_back_ns * 256.0));
	ls_put_be32(buf + 56, (uint32_t)sat_i32(s->edge_back_drift * 1e12));
	ls_put_be32(buf + 60, sat_u32(s->edge_back_sigma * 256.0));
}

void
ls_sync_wire_put_edge(uint8_t *buf, double edge_ns, double drift, double sigma_ns)
{
	buf[1] |= LS_SYNC_F_EDGE;
	ls_put_be64(buf + 48, (uint64_t)sat_i64(edge_ns * 256.0));
	ls_put_be32(buf + 56, (uint32_t)sat_i32(drift * 1e12));
	ls_put_be32(buf + 60, sat_u32(sigma_ns * 256.0));
}

int
ls_sync_wire_decode(const uint8_t *buf, struct ls_sync_state *s)
{
	if (!ls_sync_wire_filled(buf) || buf[0] < LS_SYNC_WIRE_VERSION_MIN ||
	    buf[0] > LS_SYNC_WIRE_VERSION)
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	s->flags = buf[1];
	s->hops = ls_get_be16(buf + 2);
	s->node_id = ls_get_be32(buf + 4);
	s->ref_id = ls_get_be32(buf + 8);
	s->ref_seq = ls_get_be32(buf + 12);
	s->t0 = ls_get_be64(buf + 16);
	s->theta_ns = (double)(int64_t)ls_get_be64(buf + 24) / 256.0;
	s->phi = (double)(int64_t)ls_get_be64(buf + 32) * 1e-15;
	s->sigma_ns = (double)ls_get_be32(buf + 40) / 256.0;
	s->phi_sigma = (double)ls_get_be32(buf + 44) * 1e-12;
	s->edge_back_ns = (double)(int64_t)ls_get_be64(buf + 48) / 256.0;
	s->edge_back_drift = (double)(int32_t)ls_get_be32(buf + 56) * 1e-12;
	s->edge_back_sigma = (double)ls_get_be32(buf + 60) / 256.0;
	return 0;
}
