/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data-path policy: written back as JSON, saved and loaded atomically, and
 * applied to new flows (classification and path choice).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ls_policy.h"

static json_t *
mask_json(uint64_t m)
{
	json_t *a = json_array();

	for (int i = 0; i < 64; i++)
		if (m & (1ULL << i))
			json_array_append_new(a, json_integer(i));
	return a;
}

static json_t *
range_json(uint32_t lo, uint32_t hi)
{
	if (lo == hi)
		return json_integer(lo);
	return json_pack("[II]", (json_int_t)lo, (json_int_t)hi);
}

static void
prefix_set(json_t *o, const char *k, const struct ls_prefix *p)
{
	char a[64], s[80];

	if (p->addr.family == 0)
		return;
	ls_addr_fmt(&p->addr, a, sizeof(a));
	snprintf(s, sizeof(s), "%s/%u", a, p->plen);
	json_object_set_new(o, k, json_string(s));
}

static json_t *
match_json(const struct ls_match *m)
{
	json_t *o = json_object();

	if (m->dscp)
		json_object_set_new(o, "dscp", mask_json(m->dscp));
	if (m->pcp)
		json_object_set_new(o, "pcp", mask_json(m->pcp));
	if (m->proto)
		json_object_set_new(o, "proto", json_integer(m->proto));
	if (m->roce)
		json_object_set_new(o, "roce", json_true());
	if (m->has_vid)
		json_object_set_new(o, "vid", json_integer(m->vid));
	prefix_set(o, "src", &m->src);
	prefix_set(o, "dst", &m->dst);
	if (m->sport[1])
		json_object_set_new(o, "sport", range_json(m->sport[0], m->sport[1]));
	if (m->dport[1])
		json_object_set_new(o, "dport", range_json(m->dport[0], m->dport[1]));
	if (m->qp[1])
		json_object_set_new(o, "qp", range_json(m->qp[0], m->qp[1]));
	return o;
}

static const char *const modes[] = {"keep", "pin", "spread", "avoid"};

static json_t *
path_json(const struct ls_path_policy *pp)
{
	json_t *o = json_pack("{ss}", "mode", modes[pp->mode & 3]);
	json_t *a;

	if (pp->mode == LS_PATH_KEEP)
		return o;
	/* pin keeps its path first, as written */
	a = json_array();
	if (pp->mode == LS_PATH_PIN)
		json_array_append_new(a, json_integer(pp->first));
	for (int i = 0; i < 64; i++)
		if ((pp->paths & (1ULL << i)) && !(pp->mode == LS_PATH_PIN && i == pp->first))
			json_array_append_new(a, json_integer(i));
	json_object_set_new(o, "paths", a);
	return o;
}

static json_t *
cc_json(const struct ls_policy_cc *c)
{
	return json_pack("{ss sb si sI sI sI si si sI si si si sb sb si si si}",
			 "mode", ls_policy_cc_mode_name(c->mode), "np", c->np,
			 "cnp_interval_us", (int)c->cnp_interval_us, "ai_bps", (json_int_t)c->ai_bps,
			 "hai_bps", (json_int_t)c->hai_bps, "min_bps", (json_int_t)c->min_bps,
			 "k_us", (int)c->k_us, "t_us", (int)c->t_us,
			 "byte_reset", (json_int_t)c->byte_reset, "f", (int)c->f,
			 "g_inv", (int)c->g_inv, "min_dec_pct", (int)c->min_dec_pct,
			 "clamp_tgt_rate", c->clamp_tgt, "ai_share", c->ai_share, "target_us", (int)c->target_us, "interval_us", (int)c->interval_us,
			 "beta_pct", (int)c->beta_pct);
}

json_t *
ls_policy_slice_to_json(const struct ls_policy_slice *s)
{
	const struct ls_slice_conf *c = &s->conf;

	return json_pack("{ss sI sI sI sI si sb si sI so so so}", "name", c->name,
			 "min_bps", (json_int_t)c->min_bps, "max_bps", (json_int_t)c->max_bps,
			 "min_pps", (json_int_t)c->min_pps, "max_pps", (json_int_t)c->max_pps,
			 "weight", (int)c->weight, "latency", c->latency, "qlen", (int)c->qlen,
			 "flow_bps", (json_int_t)s->flow_bps, "match", match_json(&s->match),
			 "path", path_json(&s->path), "cc", cc_json(&s->cc));
}

static json_t *
rule_json(const struct ls_policy_rule *r)
{
	json_t *o = json_pack("{ss so so}", "name", r->name, "match", match_json(&r->match),
			      "path", path_json(&r->path));

	if (r->slice[0] != '\0')
		json_object_set_new(o, "slice", json_string(r->slice));
	return o;
}

json_t *
ls_policy_to_json(const struct ls_policy *p)
{
	json_t *sl = json_array(), *fl = json_array();

	for (uint32_t i = 0; i < p->n_slices; i++)
		json_array_append_new(sl, ls_policy_slice_to_json(&p->slices[i]));
	for (uint32_t i = 0; i < p->n_rules; i++)
		json_array_append_new(fl, rule_json(&p->rules[i]));
	return json_pack("{so so}", "slices", sl, "flows", fl);
}

int
ls_policy_save(const struct ls_policy *p, const char *file, char *err, size_t errlen)
{
	json_t *j = ls_policy_to_json(p);
	int rc = ls_jsonv_save(j, file, err, errlen);

	json_decref(j);
	return rc;
}

int
ls_policy_load(const char *file, struct ls_policy *out, char *err, size_t errlen)
{
	const struct ls_jsonv jv = { .src = file, .err = err, .errlen = errlen };
	json_error_t je;
	json_t *root;
	int rc;

	if (access(file, F_OK) != 0 && errno == ENOENT)
		return -ENOENT;
	root = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL)
		return ls_jsonv_fail(&jv, NULL, "line %d: %s", je.line, je.text);
	rc = ls_policy_from_json(root, &jv, "", out);
	json_decref(root);
	return rc;
}

static bool
in_range(uint32_t v, uint32_t lo, uint32_t hi)
{
	return hi == 0 || (v >= lo && v <= hi);
}

static void
key_addr(const uint8_t *a16, uint8_t family, struct ls_addr *out)
{
	memset(out, 0, sizeof(*out));
	out->family = family == 4 ? LS_AF_INET : LS_AF_INET6;
	if (family == 4)
		memcpy(out->a, a16 + 12, 4);
	else
		memcpy(out->a, a16, 16);
}

bool
ls_match_fits(const struct ls_match *m, const struct ls_flow_pkt *pkt)
{
	const struct ls_flow_key *k = &pkt->key;
	struct ls_addr a;

	if (m->dscp && !(m->dscp & (1ULL << pkt->dscp)))
		return false;
	if (m->pcp && (!pkt->vlan_off || !(m->pcp & (1u << pkt->pcp))))
		return false;
	if (m->proto && m->proto != k->proto)
		return false;
	if (m->roce && pkt->kind != LS_FLOW_K_ROCE)
		return false;
	if (m->has_vid && (!pkt->vlan_off || __builtin_bswap16(k->vid) != m->vid))
		return false;
	if (!in_range(__builtin_bswap16(k->dport), m->dport[0], m->dport[1]) ||
	    (m->dport[1] && pkt->l4_off == 0))
		return false;
	/* a RoCEv2 key has no source port: read the frame's through l4 only */
	if (m->sport[1] && (pkt->l4_off == 0 || pkt->kind == LS_FLOW_K_ROCE ||
			    !in_range(__builtin_bswap16(k->sport), m->sport[0], m->sport[1])))
		return false;
	if (m->qp[1] && (pkt->kind != LS_FLOW_K_ROCE ||
			 !in_range(__builtin_bswap32(k->qp_label), m->qp[0], m->qp[1])))
		return false;
	if (m->src.addr.family) {
		key_addr(k->src, k->family, &a);
		if (!ls_prefix_contains(&m->src, &a))
			return false;
	}
	if (m->dst.addr.family) {
		key_addr(k->dst, k->family, &a);
		if (!ls_prefix_contains(&m->dst, &a))
			return false;
	}
	return true;
}

void
ls_policy_classify(const struct ls_policy *p, const struct ls_flow_pkt *pkt,
		   uint32_t *slice, struct ls_path_policy *path)
{
	const struct ls_policy_rule *rule = NULL;
	int def = ls_policy_slice_index(p, "default");
	uint32_t i;

	for (i = 0; i < p->n_rules; i++)
		if (ls_match_fits(&p->rules[i].match, pkt)) {
			rule = &p->rules[i];
			break;
		}
	*slice = def < 0 ? 0 : (uint32_t)def;
	if (rule != NULL && rule->slice[0] != '\0' &&
	    ls_policy_slice_index(p, rule->slice) >= 0) {
		*slice = (uint32_t)ls_policy_slice_index(p, rule->slice);
	} else {
		for (i = 0; i < p->n_slices; i++)
			if ((int)i != def && ls_match_fits(&p->slices[i].match, pkt)) {
				*slice = i;
				break;
			}
	}
	*path = rule != NULL ? rule->path : p->slices[*slice].path;
}

int
ls_path_pick(const struct ls_path_policy *pp, uint32_t hash, uint16_t n_paths)
{
	uint64_t allowed, all = n_paths >= 64 ? ~0ULL : (1ULL << n_paths) - 1;
	unsigned int n, k;

	switch (pp->mode) {
	case LS_PATH_PIN:
		return pp->first < n_paths ? pp->first : -1;
	case LS_PATH_SPREAD:
		allowed = pp->paths & all;
		break;
	case LS_PATH_AVOID:
		allowed = ~pp->paths & all;
		break;
	default:
		return -1;
	}
	n = (unsigned int)__builtin_popcountll(allowed);
	if (n == 0)
		return -1;
	/* the (hash mod n)-th allowed path */
	for (k = hash % n; k > 0; k--)
		allowed &= allowed - 1;
	return __builtin_ctzll(allowed);
}
