/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive stamps carried in a frame trailer: the wire format.
 *
 * A NIC with hardware receive timestamps hands the stamp over beside the
 * frame (an mbuf dynfield). Virtual devices cannot: net_memif and net_pcap
 * move bytes only. The lab's fabric emulator therefore plays that NIC's
 * part in the one way those devices allow: it appends to every frame it
 * delivers to a host the instant the frame reached that host in the
 * emulated network, and lockstepd (clock.rx_trailer) takes the stamp from
 * there and strips it before anything else sees the frame. Timing-capture
 * switches and taps do the same on real wires, with their own formats; this
 * one is lockstep's own, so it says what it is:
 *
 *   ... frame ... | stamp: 8 bytes, big endian | magic "LSTS" (4 bytes)
 *
 * The stamp is nanoseconds on the host's shared timeline (LS_SIM_EPOCH_NS
 * plus CLOCK_MONOTONIC_RAW as the TSC calibration maps it), the "true" time
 * of the simulated clocks, so it only means something on the host that
 * wrote it.
 *
 * The send-time trailer is the same shape the other way (magic "LSTX"):
 * a NIC that sends on a timestamp (mlx5's send scheduling, DPDK's
 * RTE_ETH_TX_OFFLOAD_SEND_ON_TIMESTAMP) takes the instant a frame is to
 * leave beside it, in an mbuf dynfield. lockstepd (clock.tx_trailer)
 * stamps T1 and T3 a lead ahead, appends that instant, and the emulator
 * (--tx-trailer) strips it and puts the frame on the wire then, so the
 * stamp in the payload is the instant the frame entered the network.
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>

#include "ls_clock.h"

static const uint8_t rx_magic[4] = {'L', 'S', 'T', 'S'};
static const uint8_t tx_magic[4] = {'L', 'S', 'T', 'X'};

static void
trailer_put(uint8_t *dst, uint64_t ns, const uint8_t *magic)
{
	rte_be64_t be = rte_cpu_to_be_64(ns);

	memcpy(dst, &be, sizeof(be)); /* dst has no alignment */
	memcpy(dst + 8, magic, 4);
}

static int
trailer_get(const uint8_t *frame, uint32_t len, uint64_t *ns, const uint8_t *magic)
{
	const uint8_t *t;
	rte_be64_t be;

	if (frame == NULL || len < LS_RX_TRAILER_MIN_FRAME + LS_RX_TRAILER_LEN)
		return -EINVAL;
	t = frame + len - LS_RX_TRAILER_LEN;
	if (memcmp(t + 8, magic, 4) != 0)
		return -ENOENT;
	memcpy(&be, t, sizeof(be));
	*ns = rte_be_to_cpu_64(be);
	return 0;
}

/* ls_rx_trailer_put/get and ls_tx_trailer_put/get: one pair per magic. */
#define TRAILER_KIND(kind) \
void \
ls_ ## kind ## _trailer_put(uint8_t *dst, uint64_t ns) \
{ \
	trailer_put(dst, ns, kind ## _magic); \
} \
\
int \
ls_ ## kind ## _trailer_get(const uint8_t *frame, uint32_t len, uint64_t *ns) \
{ \
	return trailer_get(frame, len, ns, kind ## _magic); \
}

TRAILER_KIND(rx)
TRAILER_KIND(tx)
