/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Data-path policy: the slices (shares of the link, see lib/slice) with the
 * flows each one takes, and which paths flows are steered onto. One policy
 * object is the whole of what an operator sets; it is parsed and checked
 * here (file/key/reason errors, like the daemon's config), written back as
 * JSON, and saved atomically to the state file on every change so a restart
 * loses nothing.
 *
 * Classification runs once per new flow, on the lcore that owns the flow:
 *  - flow rules ("flows": a match and a path policy) are tried in order; the
 *    first match gives the path policy (and may name a slice);
 *  - slices are tried in order; the first whose match fits takes the flow;
 *    a slice called "default" (always present; added with weight 1 when the
 *    policy leaves it out) takes what nothing else does.
 * A match is an AND of the fields given: DSCP set, VLAN PCP set, VLAN ID,
 * protocol, RoCEv2, source/destination prefixes, source/destination port
 * ranges, RoCEv2 destination-QP range. An empty match fits everything.
 *
 * Paths: path k is ECMP entropy value probe.src_port_base + k, the same
 * value the probe mesh uses for its path k, so telemetry and policy name
 * paths alike. "pin" puts flows on the first listed path, "spread" hashes
 * flows over the listed paths, "avoid" hashes them over the paths not
 * listed; "keep" leaves the entropy the host chose.
 *
 * EAL-free: jansson and plain C.
 */
#ifndef LS_POLICY_H
#define LS_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ls_common.h"
#include "ls_flow.h"
#include "ls_jsonv.h"
#include "ls_slice.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LS_POLICY_MAX_RULES 256   /**< flow rules */
#define LS_POLICY_MAX_PATHS 64    /**< path indices 0..63 */

/** Which flows a slice or rule takes. Unset fields match anything. */
struct ls_match {
	uint64_t dscp;            /**< bit d: DSCP d matches; 0 = any */
	uint64_t pcp;             /**< bit p: VLAN PCP p matches; 0 = any */
	uint8_t proto;            /**< IP protocol; 0 = any */
	bool roce;                /**< RoCEv2 only */
	bool has_vid;             /**< vid set */
	uint16_t vid;             /**< VLAN ID */
	struct ls_prefix src;     /**< source prefix; family 0 = any */
	struct ls_prefix dst;     /**< destination prefix; family 0 = any */
	uint32_t sport[2];        /**< source port range; {0, 0} = any */
	uint32_t dport[2];        /**< destination port range; {0, 0} = any */
	uint32_t qp[2];           /**< RoCEv2 destination QP range; {0, 0} = any */
};

/** How flows are steered. */
enum ls_path_mode {
	LS_PATH_KEEP = 0,         /**< leave the entropy the host set */
	LS_PATH_PIN,              /**< the first path listed */
	LS_PATH_SPREAD,           /**< hash over the paths listed */
	LS_PATH_AVOID,            /**< hash over the paths not listed */
};

/** A path policy. */
struct ls_path_policy {
	uint8_t mode;             /**< enum ls_path_mode */
	uint8_t first;            /**< PIN: the path */
	uint64_t paths;           /**< bit k: path k listed */
};

/** Congestion control of a slice's flows (lib/cc). */
enum ls_cc_mode {
	LS_CC_OFF = 0,            /**< pace at flow_bps (or not at all) */
	LS_CC_DCQCN,              /**< DCQCN reaction point, driven by CNPs from the fabric */
	LS_CC_DELAY,              /**< delay mode, driven by the path's one-way delay */
};

/** A slice's congestion-control settings; defaults in docs/cc.md. */
struct ls_policy_cc {
	uint8_t mode;             /**< enum ls_cc_mode */
	bool np;                  /**< answer CE-marked RoCEv2 from the fabric with CNPs */
	uint32_t cnp_interval_us; /**< at most one CNP per QP per this */
	uint64_t ai_bps;          /**< DCQCN R_AI; delay mode: increase per interval */
	uint64_t hai_bps;         /**< DCQCN R_HAI */
	uint64_t min_bps;         /**< floor of the CC rate */
	uint32_t k_us;            /**< DCQCN α update period K */
	uint32_t t_us;            /**< DCQCN rate increase timer T */
	uint64_t byte_reset;      /**< DCQCN byte counter B, bytes */
	uint32_t f;               /**< DCQCN fast recovery stages F */
	uint32_t g_inv;           /**< DCQCN g = 1 / g_inv */
	uint32_t min_dec_pct;     /**< DCQCN: one CNP keeps at least this % of the rate */
	bool ai_share;            /**< DCQCN: a host pair's QPs with recent CNPs share
				   *   one R_AI and R_HAI (false: one each) */
	bool clamp_tgt;           /**< DCQCN: every CNP sets the target to the rate
				   *   (ConnectX clamp_tgt_rate; false: only after a
				   *   timer increase) */
	uint32_t target_us;       /**< delay mode: target queueing delay */
	uint32_t beta_pct;        /**< delay mode: decrease gain β, percent */
	uint32_t interval_us;     /**< delay mode: at most one change per interval
				   *   (about one RTT) */
};

/** One slice: its shares, per-flow pacing, what it takes, how it steers. */
struct ls_policy_slice {
	struct ls_slice_conf conf;  /**< name and shares (lib/slice) */
	uint64_t flow_bps;          /**< pace each flow at this rate; 0 unpaced */
	struct ls_match match;      /**< which flows */
	struct ls_path_policy path; /**< steering for its flows */
	struct ls_policy_cc cc;     /**< congestion control of its flows */
};

/** One flow rule: a path policy (and optionally a slice) for matching flows. */
struct ls_policy_rule {
	char name[LS_SLICE_NAME_LEN]; /**< unique name */
	struct ls_match match;      /**< which flows */
	struct ls_path_policy path; /**< steering */
	char slice[LS_SLICE_NAME_LEN]; /**< slice to put them in; "" = by slice matches */
};

/** The whole policy. */
struct ls_policy {
	uint32_t n_slices;                              /**< slices in use */
	struct ls_policy_slice slices[LS_SLICE_MAX];    /**< in match order */
	uint32_t n_rules;                               /**< rules in use */
	struct ls_policy_rule rules[LS_POLICY_MAX_RULES]; /**< in match order */
};

/** Defaults a new slice gets for keys left out. */
void ls_policy_slice_defaults(struct ls_policy_slice *s);

/**
 * Parse a policy object {"slices": [...], "flows": [...]}; errors name the
 * key path below path (e.g. "bridge.policy.slices[2].max_bps").
 * @return 0 or a negative errno with the message in jv.
 */
int ls_policy_from_json(const json_t *obj, const struct ls_jsonv *jv, const char *path,
			struct ls_policy *out);

/** Parse one slice object (for the control socket's slice.set). */
int ls_policy_slice_from_json(const json_t *obj, const struct ls_jsonv *jv,
			      const char *path, struct ls_policy_slice *out);

/** Parse one flow rule object (for flow.policy). */
int ls_policy_rule_from_json(const json_t *obj, const struct ls_jsonv *jv,
			     const char *path, struct ls_policy_rule *out);

/** Add "default" if absent. @return 0 or -ENOSPC. */
int ls_policy_finish(struct ls_policy *p);

/** @return the policy as JSON (the same shape ls_policy_from_json reads). */
json_t *ls_policy_to_json(const struct ls_policy *p);

/** @return one slice as JSON. */
json_t *ls_policy_slice_to_json(const struct ls_policy_slice *s);

/** "off", "dcqcn" or "delay". */
const char *ls_policy_cc_mode_name(uint8_t mode);

/**
 * Write the policy to file atomically (a temporary file in the same
 * directory, fsync, rename): a crash leaves the old or the new file whole.
 * @return 0 or a negative errno with a message in err.
 */
int ls_policy_save(const struct ls_policy *p, const char *file, char *err, size_t errlen);

/**
 * Read a policy file. @return 0, -ENOENT when there is none (not an error
 * at first start), or a negative errno with "FILE: KEY: REASON" in err.
 */
int ls_policy_load(const char *file, struct ls_policy *out, char *err, size_t errlen);

/** @return the index of slice name, or -1. */
int ls_policy_slice_index(const struct ls_policy *p, const char *name);

/** @return the index of rule name, or -1. */
int ls_policy_rule_index(const struct ls_policy *p, const char *name);

/** @return true when the parsed frame fits m. */
bool ls_match_fits(const struct ls_match *m, const struct ls_flow_pkt *pkt);

/**
 * Classify a new flow: its slice index (into p->slices) and its path
 * policy (a rule's, else its slice's).
 */
void ls_policy_classify(const struct ls_policy *p, const struct ls_flow_pkt *pkt,
			uint32_t *slice, struct ls_path_policy *path);

/**
 * The path a flow takes under pp: hash picks among the allowed paths of
 * 0..n_paths-1. @return the path index, or -1 for KEEP (or nothing allowed).
 */
int ls_path_pick(const struct ls_path_policy *pp, uint32_t hash, uint16_t n_paths);

#ifdef __cplusplus
}
#endif

#endif /* LS_POLICY_H */
