/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data-path policy: parse, check, write back, save, classify (ls_policy.h).
 *
 * The parser rejects unknown keys and names the first bad key with its path
 * ("policy.slices[1].match.dscp[0]: 64 out of range 0..63"), the same
 * contract as the daemon's config, so a slice typed on the control socket
 * and one in the config file fail alike. Numbers for rates may be written
 * as integers or as reals (10e9), since people write rates that way.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ls_policy.h"

/* A key's reader; max bounds the readers of sets and ranges (0 elsewhere). */
typedef int (*key_fn)(const json_t *v, const struct ls_jsonv *jv, const char *path,
		      void *out, long long max);

struct key {
	const char *name;
	key_fn fn;
	size_t off;
	long long max;
};

#define UNUSED __attribute__((unused))

static int
walk(const json_t *obj, const struct ls_jsonv *jv, const char *path,
     const struct key *keys, size_t n, void *base)
{
	char kp[LS_JSONV_PATH_LEN];
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		return ls_jsonv_fail(jv, path, "expected object, got %s", ls_jsonv_kind(obj));
	json_object_foreach((json_t *)obj, k, v) {
		size_t i;

		for (i = 0; i < n && strcmp(keys[i].name, k) != 0; i++)
			;
		if (i == n)
			return ls_jsonv_fail(jv, ls_jsonv_key(kp, path, k), "unknown key");
	}
	for (size_t i = 0; i < n; i++) {
		int rc;

		v = json_object_get(obj, keys[i].name);
		if (v == NULL)
			continue;
		rc = keys[i].fn(v, jv, ls_jsonv_key(kp, path, keys[i].name),
				(char *)base + keys[i].off, keys[i].max);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
num_in(const json_t *v, const struct ls_jsonv *jv, const char *path, double lo, double hi,
       double *out)
{
	double d;

	if (!json_is_number(v))
		return ls_jsonv_fail(jv, path, "expected number, got %s", ls_jsonv_kind(v));
	d = json_number_value(v);
	if (!(d >= lo && d <= hi))
		return ls_jsonv_fail(jv, path, "%g out of range %g..%g", d, lo, hi);
	*out = d;
	return 0;
}

static int
int_in(const json_t *v, const struct ls_jsonv *jv, const char *path, long long lo,
       long long hi, long long *out)
{
	if (!json_is_integer(v))
		return ls_jsonv_fail(jv, path, "expected integer, got %s", ls_jsonv_kind(v));
	*out = json_integer_value(v);
	if (*out < lo || *out > hi)
		return ls_jsonv_fail(jv, path, "%lld out of range %lld..%lld", *out, lo, hi);
	return 0;
}

/* Rates: bits or packets per second, up to 10 Tb/s. */
static int
k_rate(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	double d;
	int rc = num_in(v, jv, path, 0, 1e13, &d);

	if (rc == 0)
		*(uint64_t *)out = (uint64_t)d;
	return rc;
}

/* An integer in [lo, hi] stored as uint32_t. */
static int
u32_in(const json_t *v, const struct ls_jsonv *jv, const char *path, long long lo,
       long long hi, uint32_t *out)
{
	long long x;
	int rc = int_in(v, jv, path, lo, hi, &x);

	if (rc == 0)
		*out = (uint32_t)x;
	return rc;
}

static int
k_weight(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	return u32_in(v, jv, path, 1, 1000, out);
}

static int
k_qlen(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	uint32_t *q = out;
	int rc = u32_in(v, jv, path, 16, 65536, q);

	if (rc == 0 && (*q & (*q - 1)) != 0)
		return ls_jsonv_fail(jv, path, "%u is not a power of two", *q);
	return rc;
}

static int
k_bool(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	if (!json_is_boolean(v))
		return ls_jsonv_fail(jv, path, "expected true or false, got %s", ls_jsonv_kind(v));
	*(bool *)out = json_is_true(v);
	return 0;
}

static int
k_name(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	const char *s;
	char q[LS_JSONV_QUOTE_MAX + 8];

	if (!json_is_string(v))
		return ls_jsonv_fail(jv, path, "expected string, got %s", ls_jsonv_kind(v));
	s = json_string_value(v);
	if (s[0] == '\0' || strlen(s) >= LS_SLICE_NAME_LEN)
		return ls_jsonv_fail(jv, path, "must be 1..%d characters",
				     LS_SLICE_NAME_LEN - 1);
	for (const char *p = s; *p != '\0'; p++)
		if (!ls_jsonv_name_char(*p))
			return ls_jsonv_fail(jv, path, "%s: only A-Z a-z 0-9 _ . - allowed",
					     ls_jsonv_quote(q, sizeof(q), s));
	snprintf(out, LS_SLICE_NAME_LEN, "%s", s);
	return 0;
}

/* A set of small integers as a bit mask: [46, 34] */
static int
int_set(const json_t *v, const struct ls_jsonv *jv, const char *path, int max,
	uint64_t *mask)
{
	char ip[LS_JSONV_PATH_LEN];
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return ls_jsonv_fail(jv, path, "expected a non-empty array of integers, got %s",
				     ls_jsonv_kind(v));
	*mask = 0;
	json_array_foreach(v, i, e) {
		long long x;
		int rc = int_in(e, jv, ls_jsonv_index(ip, path, i), 0, max, &x);

		if (rc < 0)
			return rc;
		*mask |= 1ULL << x;
	}
	return 0;
}

/* A set of small integers 0..max as a bit mask (uint64_t). */
static int
k_set(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
      long long max)
{
	return int_set(v, jv, path, (int)max, out);
}

static int
k_proto(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	long long x;

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "tcp") == 0)
			x = 6;
		else if (strcmp(json_string_value(v), "udp") == 0)
			x = 17;
		else
			return ls_jsonv_fail(jv, path, "expected \"tcp\", \"udp\" or 1..255");
	} else if (int_in(v, jv, path, 1, 255, &x) < 0) {
		return -EINVAL;
	}
	*(uint8_t *)out = (uint8_t)x;
	return 0;
}

static int
k_vid(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	struct ls_match *m = (struct ls_match *)((char *)out - offsetof(struct ls_match, vid));
	long long x;
	int rc = int_in(v, jv, path, 0, 4094, &x);

	if (rc == 0) {
		m->vid = (uint16_t)x;
		m->has_vid = true;
	}
	return rc;
}

static int
k_prefix(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	char q[LS_JSONV_QUOTE_MAX + 8];

	if (!json_is_string(v))
		return ls_jsonv_fail(jv, path, "expected string, got %s", ls_jsonv_kind(v));
	if (ls_prefix_parse(json_string_value(v), out) < 0)
		return ls_jsonv_fail(jv, path, "%s is not an address/prefix",
				     ls_jsonv_quote(q, sizeof(q), json_string_value(v)));
	return 0;
}

/* A value or an inclusive [lo, hi] range, stored as two integers. */
static int
range(const json_t *v, const struct ls_jsonv *jv, const char *path, long long max,
      long long *lo, long long *hi)
{
	char ip[LS_JSONV_PATH_LEN];

	if (json_is_integer(v)) {
		if (int_in(v, jv, path, 1, max, lo) < 0)
			return -EINVAL;
		*hi = *lo;
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) != 2)
		return ls_jsonv_fail(jv, path, "expected an integer or [low, high], got %s",
				     ls_jsonv_kind(v));
	if (int_in(json_array_get(v, 0), jv, ls_jsonv_index(ip, path, 0), 1, max, lo) < 0 ||
	    int_in(json_array_get(v, 1), jv, ls_jsonv_index(ip, path, 1), 1, max, hi) < 0)
		return -EINVAL;
	if (*lo > *hi)
		return ls_jsonv_fail(jv, path, "low %lld above high %lld", *lo, *hi);
	return 0;
}

/* Ranges are stored as two uint32_t, whatever their bound. */
static int
k_range(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max)
{
	long long lo, hi;
	uint32_t *r = out;

	if (range(v, jv, path, max, &lo, &hi) < 0)
		return -EINVAL;
	r[0] = (uint32_t)lo;
	r[1] = (uint32_t)hi;
	return 0;
}

#define MK(name, fn, field, max) { name, fn, offsetof(struct ls_match, field), max }
static const struct key match_keys[] = {
	MK("dscp", k_set, dscp, 63), MK("pcp", k_set, pcp, 7), MK("proto", k_proto, proto, 0),
	MK("roce", k_bool, roce, 0), MK("vid", k_vid, vid, 0), MK("src", k_prefix, src, 0),
	MK("dst", k_prefix, dst, 0), MK("sport", k_range, sport, 65535),
	MK("dport", k_range, dport, 65535), MK("qp", k_range, qp, 0xffffff),
};
#undef MK

static int
k_match(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	memset(out, 0, sizeof(struct ls_match));
	return walk(v, jv, path, match_keys, LS_ARRAY_SIZE(match_keys), out);
}

/* One of n names, stored as its index (uint8_t); the error lists them. */
static int
enum_in(const json_t *v, const struct ls_jsonv *jv, const char *path,
	const char *const *names, unsigned int n, void *out)
{
	char want[128] = "";

	for (unsigned int i = 0; i < n; i++) {
		if (json_is_string(v) && strcmp(json_string_value(v), names[i]) == 0) {
			*(uint8_t *)out = (uint8_t)i;
			return 0;
		}
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s\"%s\"",
			 i == 0 ? "" : i + 1 == n ? " or " : ", ", names[i]);
	}
	return ls_jsonv_fail(jv, path, "expected %s", want);
}

static const char *const path_modes[] = {"keep", "pin", "spread", "avoid"};

static int
k_mode(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	return enum_in(v, jv, path, path_modes, LS_ARRAY_SIZE(path_modes), out);
}

static int
k_paths(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	struct ls_path_policy *pp =
		(struct ls_path_policy *)((char *)out - offsetof(struct ls_path_policy, paths));
	int rc = int_set(v, jv, path, LS_POLICY_MAX_PATHS - 1, &pp->paths);

	if (rc == 0)
		pp->first = (uint8_t)json_integer_value(json_array_get(v, 0));
	return rc;
}

static const struct key path_keys[] = {
	{"mode", k_mode, offsetof(struct ls_path_policy, mode)},
	{"paths", k_paths, offsetof(struct ls_path_policy, paths)},
};

static int
k_path(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max UNUSED)
{
	struct ls_path_policy *pp = out;
	int rc;

	memset(pp, 0, sizeof(*pp));
	rc = walk(v, jv, path, path_keys, LS_ARRAY_SIZE(path_keys), out);
	if (rc < 0)
		return rc;
	if (pp->mode != LS_PATH_KEEP && pp->paths == 0)
		return ls_jsonv_fail(jv, path, "mode \"%s\" needs \"paths\"", path_modes[pp->mode]);
	return 0;
}

static const char *const cc_modes[] = {"off", "dcqcn", "delay"};

static int
k_cc_mode(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	  long long max UNUSED)
{
	return enum_in(v, jv, path, cc_modes, LS_ARRAY_SIZE(cc_modes), out);
}

const char *
ls_policy_cc_mode_name(uint8_t mode)
{
	return mode < LS_ARRAY_SIZE(cc_modes) ? cc_modes[mode] : "?";
}

/* An integer 1..max (0..100 for a percentage) stored as uint32_t. */
static int
k_u32(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out, long long max)
{
	return u32_in(v, jv, path, max == 100 ? 0 : 1, max, out);
}

static int
k_bytes(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
	long long max)
{
	long long x;
	int rc = int_in(v, jv, path, 1, max, &x);

	if (rc == 0)
		*(uint64_t *)out = (uint64_t)x;
	return rc;
}

#define CK(name, fn, field, max) { name, fn, offsetof(struct ls_policy_cc, field), max }
static const struct key cc_keys[] = {
	CK("mode", k_cc_mode, mode, 0), CK("np", k_bool, np, 0),
	CK("cnp_interval_us", k_u32, cnp_interval_us, 1000000),
	CK("ai_bps", k_rate, ai_bps, 0), CK("hai_bps", k_rate, hai_bps, 0),
	CK("min_bps", k_rate, min_bps, 0), CK("k_us", k_u32, k_us, 10000000),
	CK("t_us", k_u32, t_us, 10000000), CK("byte_reset", k_bytes, byte_reset, 0xffffffffLL),
	CK("f", k_u32, f, 1000), CK("g_inv", k_u32, g_inv, 65536),
	CK("min_dec_pct", k_u32, min_dec_pct, 100), CK("target_us", k_u32, target_us, 100000),
	CK("clamp_tgt_rate", k_bool, clamp_tgt, 0), CK("ai_share", k_bool, ai_share, 0),
	CK("interval_us", k_u32, interval_us, 10000000), CK("beta_pct", k_u32, beta_pct, 100),
};
#undef CK

/* The keys, then what no single key can check: hyper increase is the
 * faster one, and a floor of zero would let a flow stop for good. */
static int
k_cc(const json_t *v, const struct ls_jsonv *jv, const char *path, void *out,
     long long max UNUSED)
{
	const struct ls_policy_cc *c = out;
	int rc = walk(v, jv, path, cc_keys, LS_ARRAY_SIZE(cc_keys), out);

	if (rc == 0 && c->hai_bps < c->ai_bps)
		rc = ls_jsonv_fail(jv, path, "hai_bps %llu below ai_bps %llu",
				   (unsigned long long)c->hai_bps, (unsigned long long)c->ai_bps);
	if (rc == 0 && c->min_bps == 0)
		rc = ls_jsonv_fail(jv, path, "min_bps must be above 0");
	if (rc == 0 && c->interval_us == 0)
		rc = ls_jsonv_fail(jv, path, "interval_us must be above 0");
	if (rc == 0 && c->beta_pct == 0)
		rc = ls_jsonv_fail(jv, path, "beta_pct must be 1..100");
	return rc;
}

#define SK(name, fn, field) { name, fn, offsetof(struct ls_policy_slice, field) }
static const struct key slice_keys[] = {
	SK("name", k_name, conf.name), SK("min_bps", k_rate, conf.min_bps),
	SK("max_bps", k_rate, conf.max_bps), SK("min_pps", k_rate, conf.min_pps),
	SK("max_pps", k_rate, conf.max_pps), SK("weight", k_weight, conf.weight),
	SK("latency", k_bool, conf.latency), SK("qlen", k_qlen, conf.qlen),
	SK("flow_bps", k_rate, flow_bps), SK("match", k_match, match),
	SK("path", k_path, path), SK("cc", k_cc, cc),
};
#undef SK

void
ls_policy_slice_defaults(struct ls_policy_slice *s)
{
	memset(s, 0, sizeof(*s));
	s->conf.weight = 1;
	s->conf.qlen = 4096;
	/* DCQCN: the paper's K, T, B, F, g, R_AI and target clamp; ConnectX's
	 * rpg_min_rate and rpg_min_dec_fac; the NP's interval is the paper's N;
	 * the shared increase is lockstep's (docs/cc.md) */
	s->cc = (struct ls_policy_cc){
		.cnp_interval_us = 50, .ai_bps = 40000000, .hai_bps = 200000000,
		.min_bps = 1000000, .k_us = 55, .t_us = 55, .byte_reset = 10u << 20, .f = 5,
		.g_inv = 256, .min_dec_pct = 50, .target_us = 10, .interval_us = 20, .beta_pct = 50,
		.clamp_tgt = true, .ai_share = true,
	};
}

int
ls_policy_slice_from_json(const json_t *obj, const struct ls_jsonv *jv, const char *path,
			  struct ls_policy_slice *out)
{
	const char *why;
	int rc;

	ls_policy_slice_defaults(out);
	rc = walk(obj, jv, path, slice_keys, LS_ARRAY_SIZE(slice_keys), out);
	if (rc < 0)
		return rc;
	if (out->conf.name[0] == '\0') {
		char kp[LS_JSONV_PATH_LEN];

		return ls_jsonv_fail(jv, ls_jsonv_key(kp, path, "name"), "required key missing");
	}
	if (ls_slice_conf_check(&out->conf, &why) < 0)
		return ls_jsonv_fail(jv, path, "%s", why);
	return 0;
}

#define RK(name, fn, field) { name, fn, offsetof(struct ls_policy_rule, field) }
static const struct key rule_keys[] = {
	RK("name", k_name, name), RK("match", k_match, match), RK("path", k_path, path),
	RK("slice", k_name, slice),
};
#undef RK

int
ls_policy_rule_from_json(const json_t *obj, const struct ls_jsonv *jv, const char *path,
			 struct ls_policy_rule *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = walk(obj, jv, path, rule_keys, LS_ARRAY_SIZE(rule_keys), out);
	if (rc == 0 && out->name[0] == '\0') {
		char kp[LS_JSONV_PATH_LEN];

		return ls_jsonv_fail(jv, ls_jsonv_key(kp, path, "name"), "required key missing");
	}
	return rc;
}

int
ls_policy_slice_index(const struct ls_policy *p, const char *name)
{
	for (uint32_t i = 0; i < p->n_slices; i++)
		if (strcmp(p->slices[i].conf.name, name) == 0)
			return (int)i;
	return -1;
}

int
ls_policy_rule_index(const struct ls_policy *p, const char *name)
{
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (strcmp(p->rules[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int
parse_list(const json_t *v, const struct ls_jsonv *jv, const char *path, size_t max,
	   bool slices, struct ls_policy *out)
{
	char ip[LS_JSONV_PATH_LEN];
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		return ls_jsonv_fail(jv, path, "expected array, got %s", ls_jsonv_kind(v));
	if (json_array_size(v) > max)
		return ls_jsonv_fail(jv, path, "more than %zu entries", max);
	json_array_foreach(v, i, e) {
		const char *name;
		int rc;

		ls_jsonv_index(ip, path, i);
		if (slices) {
			rc = ls_policy_slice_from_json(e, jv, ip, &out->slices[i]);
			name = out->slices[i].conf.name;
		} else {
			rc = ls_policy_rule_from_json(e, jv, ip, &out->rules[i]);
			name = out->rules[i].name;
		}
		if (rc < 0)
			return rc;
		if ((slices ? ls_policy_slice_index(out, name) : ls_policy_rule_index(out, name)) >= 0)
			return ls_jsonv_fail(jv, ip, "name \"%s\" used twice", name);
		if (slices)
			out->n_slices = (uint32_t)i + 1;
		else
			out->n_rules = (uint32_t)i + 1;
	}
	return 0;
}

int
ls_policy_finish(struct ls_policy *p)
{
	if (ls_policy_slice_index(p, "default") >= 0)
		return 0;
	if (p->n_slices >= LS_SLICE_MAX)
		return -ENOSPC;
	ls_policy_slice_defaults(&p->slices[p->n_slices]);
	snprintf(p->slices[p->n_slices].conf.name, LS_SLICE_NAME_LEN, "default");
	p->n_slices++;
	return 0;
}

int
ls_policy_from_json(const json_t *obj, const struct ls_jsonv *jv, const char *path,
		    struct ls_policy *out)
{
	char kp[LS_JSONV_PATH_LEN];
	const char *k;
	json_t *v;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(obj))
		return ls_jsonv_fail(jv, path, "expected object, got %s", ls_jsonv_kind(obj));
	json_object_foreach((json_t *)obj, k, v)
		if (strcmp(k, "slices") != 0 && strcmp(k, "flows") != 0)
			return ls_jsonv_fail(jv, ls_jsonv_key(kp, path, k), "unknown key");
	v = json_object_get(obj, "slices");
	if (v != NULL && (rc = parse_list(v, jv, ls_jsonv_key(kp, path, "slices"),
					  LS_SLICE_MAX, true, out)) < 0)
		return rc;
	v = json_object_get(obj, "flows");
	if (v != NULL && (rc = parse_list(v, jv, ls_jsonv_key(kp, path, "flows"),
					  LS_POLICY_MAX_RULES, false, out)) < 0)
		return rc;
	for (uint32_t i = 0; i < out->n_rules; i++)
		if (out->rules[i].slice[0] != '\0' &&
		    ls_policy_slice_index(out, out->rules[i].slice) < 0 &&
		    strcmp(out->rules[i].slice, "default") != 0) {
			char ip[LS_JSONV_PATH_LEN];

			ls_jsonv_index(ip, ls_jsonv_key(kp, path, "flows"), i);
			return ls_jsonv_fail(jv, ls_jsonv_key(kp, ip, "slice"),
					     "no slice \"%s\"", out->rules[i].slice);
		}
	if (ls_policy_finish(out) < 0)
		return ls_jsonv_fail(jv, path, "no room for the default slice");
	return 0;
}
