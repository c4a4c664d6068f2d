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
 */
#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>

#include "ls_clock.h"

static const uint8_t trailer_magic[4] = {'L', 'S', 'T', 'S'};

void
ls_rx_trailer_put(uint8_t *dst, uint64_t ns)
{
	rte_be64_t be = rte_cpu_to_be_64(ns);

	memcpy(dst, &be, sizeof(be)); /* dst has no alignment */
	memcpy(dst + 8, trailer_magic, sizeof(trailer_magic));
}

int
ls_rx_trailer_get(const uint8_t *frame, uint32_t len, uint64_t *ns)
{
	const uint8_t *t;
	rte_be64_t be;

	if (frame == NULL || len < LS_RX_TRAILER_MIN_FRAME + LS_RX_TRAILER_LEN)
		return -EINVAL;
	t = frame + len - LS_RX_TRAILER_LEN;
	if (memcmp(t + 8, trailer_magic, sizeof(trailer_magic)) != 0)
		return -ENOENT;
	memcpy(&be, t, sizeof(be));
	*ns = rte_be_to_cpu_64(be);
	return 0;
}
