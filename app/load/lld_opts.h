/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockstep-load's options (docs/load.md): parsed and checked before the EAL
 * starts, so a bad one is named with its reason and the exit status is 2
 * without touching hugepages or devices. EAL-free; tests/unit/test_load.c
 * drives it.
 */
#ifndef LLD_OPTS_H
#define LLD_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "ls_common.h"
#include "lld_frame.h"

#define LLD_MAX_FLOWS (1u << 24)   /* RoCEv2 QPs are 24 bits */
#define LLD_MAX_LIST 8             /* entries of --proto, --family, --size */

struct lld_opts {
	const char *tx_port, *rx_port;   /* ethdev names or port ids; NULL: none */
	bool version;                    /* --version (with *help) */
	uint32_t flows;                  /* flows sent (and expected by the sink) */
	uint8_t shapes[LLD_MAX_LIST];    /* --proto, given to flows in turn */
	uint8_t n_shapes;
	uint8_t families[LLD_MAX_LIST];  /* --family */
	uint8_t n_families;
	uint16_t sizes[LLD_MAX_LIST];    /* --size, frame lengths */
	uint8_t n_sizes;
	uint8_t roce_op;                 /* --roce-op */
	uint8_t dscp;
	uint8_t ecn;                     /* --ecn codepoint */
	bool respond;                    /* --respond: the sink answers RoCEv2 as a NIC */
	bool reflect;                    /* --reflect: the sink's host reflects STAMP (IPv4) */
	bool reflect_any;                /* --reflect-any: ... for every address */
	uint32_t cnp_us;                 /* --cnp-us: one CNP per flow per interval */
	double rate_bps;                 /* per flow (--rate, or --total-rate / flows) */
	uint32_t fg_flows;               /* --fg-flows: flows 0..fg_flows-1 are foreground */
	double fg_rate_bps;              /* their rate, frame length and DSCP */
	uint16_t fg_size;
	uint8_t fg_dscp;
	double duration_s;               /* TX time; RX-only: how long to listen */
	struct ls_mac src_mac, dst_mac;
	bool src_mac_set;
	struct ls_addr src4, dst4, src6, dst6;
	uint16_t sport, dport;           /* bases: flow i uses sport + i % span */
	uint32_t qp;                     /* RoCEv2: flow i's QP is qp + i */
	uint32_t spread_us;              /* flows' first frames over this (us); 0: a period */
	uint32_t window_ms, settle_ms, linger_ms;
	uint32_t tx_delay_ms;            /* TX starts this long after the sink */
	uint32_t detail_flows, report_flows;
	uint32_t gaps;           /* longest gaps kept per flow (--gaps) */
	const char *report;              /* file, or NULL / "-" for stdout */
	uint32_t idle_sleep_us;
	double link_wait_s;
	uint64_t phase_bytes;            /* --phase-bytes: per flow per phase; 0: no phases */
	uint32_t phases;                 /* --phases (1 with --phase-bytes) */
	uint32_t phase_timeout_ms;       /* --phase-timeout-ms (10000 with --phase-bytes) */
};

/*
 * Parse argv[1..argc) (the part after "--"). Errors name the option and
 * the reason, into err. *check is set by --check, *help by --help and
 * by --version (o->version too).
 * @return 0, or -EINVAL.
 */
int lld_opts_parse(int argc, char **argv, struct lld_opts *o, bool *check, bool *help,
		   char *err, size_t len);

/* The usage text. */
extern const char lld_usage[];

/* Flow i's frame, from the options (MACs from the options or the caller). */
void lld_opts_flow(const struct lld_opts *o, uint32_t i, struct lld_flow_spec *s);

/*
 * A rate: a number with an optional k, M or G (powers of 10), e.g. "200M",
 * "2.5e8". @return 0 or -EINVAL.
 */
int lld_parse_rate(const char *s, double *out);

#endif /* LLD_OPTS_H */
