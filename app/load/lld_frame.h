/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's frames: what the generator sends and the sink reads.
 *
 * Three shapes, each over IPv4 or IPv6, in the form lockstepd's data path
 * classifies them (lib/flow):
 *  - RoCEv2: UDP to 4791, a BTH (RC SEND Only, or RC RDMA WRITE Only with
 *    its RETH), destination QP per flow, PSN = the flow's sequence (24
 *    bits), and a valid ICRC (lib/roce). The UDP checksum is 0 over IPv4,
 *    as RoCEv2 NICs send it, and computed over IPv6 (RFC 8200);
 *  - UDP: plain datagrams, checksum filled;
 *  - TCP: well-formed segments (ACK|PSH, sequence numbers advancing by the
 *    payload), checksum filled; there is no connection behind them.
 *
 * Every frame's payload starts with a 32-byte lockstep-load header
 * (network byte order):
 *
 *   0  magic "LSLD" (32)    4  version (8), shape (8), reserved (16)
 *   8  flow index (32)     12  TSC domain tag (32): equal tags, same TSC
 *  16  per-flow sequence (64), from 0
 *  24  TX TSC (64): read when the frame's burst was built
 *
 * and the rest of the payload is zeros, so a frame costs a copy of its
 * headers, a checksum over about 100 bytes and, for RoCEv2, one CRC pass.
 * The domain tag comes from the kernel's boot id: frames whose tag is the
 * sink's own were stamped with the same TSC, so their one-way delay is
 * the difference of two TSC readings.
 *
 * Lengths are frame lengths from the Ethernet header to the end of the
 * payload, without the FCS (what DPDK's pkt_len counts and lockstepd paces).
 * A RoCEv2 frame's IB payload (after BTH and RETH, before the ICRC) must be
 * a multiple of 4 bytes (PadCnt 0): lld_frame_fit_len() rounds down to one.
 *
 * EAL-free: the app and tests/unit/test_load.c compile the same code.
 */
#ifndef LLD_FRAME_H
#define LLD_FRAME_H

#include <stdint.h>

#include "ls_common.h"

#define LLD_MAGIC 0x4c534c44u     /* "LSLD" */
#define LLD_VERSION 1
#define LLD_HDR_LEN 32            /* the lockstep-load header */
#define LLD_TMPL_MAX 96           /* Ethernet .. RETH: 14 + 40 + 8 + 12 + 16 = 90 */
#define LLD_LEN_MAX 9018          /* 9000-byte MTU + Ethernet header + 802.1Q */

#define LLD_OP_SEND_ONLY 0x04     /* RC SEND Only (IBA 9.2, table 35) */
#define LLD_OP_WRITE_ONLY 0x0a    /* RC RDMA WRITE Only, with a RETH */
#define LLD_RETH_LEN 16           /* virtual address, R_Key, DMA length */

/* A frame's shape. */
enum lld_shape {
	LLD_ROCE = 0,
	LLD_UDP,
	LLD_TCP,
	LLD_SHAPES
};

/* One flow's frame, as the options describe it. */
struct lld_flow_spec {
	uint8_t shape;            /* enum lld_shape */
	uint8_t roce_op;          /* LLD_OP_SEND_ONLY or LLD_OP_WRITE_ONLY */
	uint8_t dscp;             /* 0..63 */
	uint8_t ecn;              /* ECN codepoint 0..3 (2: ECT(0), as RoCE NICs send) */
	uint16_t len;             /* frame length (see the file comment) */
	uint32_t flow;            /* flow index, in the lockstep-load header */
	struct ls_mac src_mac, dst_mac;
	struct ls_addr src, dst;  /* same family: it picks IPv4 or IPv6 */
	uint16_t sport, dport;    /* dport is 4791 for RoCEv2 whatever is given */
	uint32_t qp;              /* RoCEv2 destination QP, 24 bits */
	uint32_t flow_label;      /* IPv6 flow label, 20 bits */
};

/* A flow's headers, built once; lld_frame_write() fills a frame from it. */
struct lld_tmpl {
	uint8_t hdr[LLD_TMPL_MAX]; /* Ethernet up to the lockstep-load header */
	uint16_t len;              /* frame length */
	uint8_t hdr_len;           /* bytes of hdr: where the lld header goes */
	uint8_t l4_off;            /* UDP or TCP header */
	uint8_t shape;             /* enum lld_shape */
	uint8_t family;            /* LS_AF_INET or LS_AF_INET6 */
	uint8_t l4_csum;           /* fill the L4 checksum (not RoCEv2 over IPv4) */
	uint16_t payload_len;      /* L4 payload (RoCEv2: IB payload, no ICRC) */
	uint32_t flow;             /* flow index */
	uint32_t pseudo;           /* pseudo-header sum, folded */
	uint32_t psn0;             /* RoCEv2: the PSN of sequence 0 (24 bits) */
};

/* What the sink reads from a received frame. */
struct lld_rx {
	uint32_t flow;             /* flow index */
	uint32_t tag;              /* TSC domain tag */
	uint64_t seq;              /* per-flow sequence */
	uint64_t tx_tsc;           /* TX TSC */
	uint32_t payload_len;      /* goodput bytes: L4 payload (RoCEv2: IB payload) */
	uint8_t shape;             /* enum lld_shape */
};

/* Headers before the lockstep-load header, and the smallest frame. */
uint16_t lld_frame_hdr_len(uint8_t shape, uint8_t family, uint8_t roce_op);
uint16_t lld_frame_min_len(uint8_t shape, uint8_t family, uint8_t roce_op);

/* The longest valid frame length <= len (RoCEv2: IB payload a multiple of 4). */
uint16_t lld_frame_fit_len(uint8_t shape, uint8_t family, uint8_t roce_op, uint16_t len);

/* "roce", "udp", "tcp". */
const char *lld_shape_name(uint8_t shape);

/*
 * Build flow s's template.
 * @return 0, or -EINVAL with the reason in err (length out of range or not
 *         fitted, families mixed, QP or label too wide).
 */
int lld_frame_tmpl(const struct lld_flow_spec *s, struct lld_tmpl *t, char *err, size_t len);

/*
 * Write frame number seq of t's flow into f (t->len bytes writable):
 * headers, lockstep-load header, zero payload, PSN or TCP sequence,
 * checksums and ICRC.
 */
void lld_frame_write(const struct lld_tmpl *t, uint8_t *f, uint64_t seq, uint64_t tx_tsc,
		     uint32_t tag);

/*
 * Read a received frame (its first len bytes; headers must be there).
 * @return 0, or -1 when it is not a lockstep-load frame (not IP, not one
 *         of the shapes, no magic, other version).
 */
int lld_frame_parse(const uint8_t *f, uint32_t len, struct lld_rx *r);

#endif /* LLD_FRAME_H */
