/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link parameters in a topology file, and the allowed-key check every
 * object of the file goes through.
 *
 * Link parameters come in layers: built-in defaults, "defaults.link" (and
 * "defaults.host_link" on top of it for host links), the link's own keys,
 * then the per-direction object ("ab"/"ba", for hosts "up"/"down"). One
 * table describes the parameter keys and one function applies a layer, so
 * every layer is validated the same way. The rule that relates two keys
 * (buffer >= mtu) is checked on the merged result and reported at the
 * deepest layer that set either key: that is where the fix goes.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ls_fabric_priv.h"

/* Built-in link parameters: a 10 Gb/s link with 1 us of cable and switch. */
#define DEF_DELAY_NS 1000ULL
#define DEF_RATE_BPS 10000000000ULL
#define DEF_BUFFER 1048576U
#define DEF_ECN 131072U
#define DEF_MTU 9000U

#define MAX_DELAY_NS 10000000000ULL      /* 10 s: longer is a typo */
#define MAX_RATE_BPS 10000000000000ULL   /* 10 Tb/s keeps the link math in 64 bits */

/*
 * Link parameter keys: one table for every layer. Integers may be written
 * in exponent form ("rate_bps": 1e11) as long as the value is whole: line
 * rates are unreadable otherwise.
 */
enum pkind { PK_U64, PK_U32, PK_U16, PK_DBL };

struct pfield {
	const char *key;
	enum pkind kind;
	size_t off;
	double min, max;
};

#define PF(k, kind, m, lo, hi) \
	{ (k), (kind), offsetof(struct ls_fab_chan_params, m), (lo), (hi) }

static const struct pfield pfields[] = {
	PF("delay_ns", PK_U64, delay_ns, 0, (double)MAX_DELAY_NS),
	PF("rate_bps", PK_U64, rate_bps, 1, (double)MAX_RATE_BPS),
	PF("buffer_bytes", PK_U32, buffer_bytes, 0, 4294967295.0),
	PF("ecn_bytes", PK_U32, ecn_bytes, 0, 4294967295.0),
	PF("ecn_max_bytes", PK_U32, ecn_max_bytes, 0, 4294967295.0),
	PF("ecn_pmax", PK_DBL, ecn_pmax, 0, 1),
	PF("loss", PK_DBL, loss, 0, 1),
	PF("mtu", PK_U16, mtu, 68, 65535),
};

static const char *const defaults_keys[] = { "link", "host_link", NULL };
static const char *const no_keys[] = { NULL };

static bool
in_list(const char *const *keys, const char *k)
{
	for (; *keys != NULL; keys++)
		if (strcmp(*keys, k) == 0)
			return true;
	return false;
}

static bool
is_param_key(const char *k)
{
	for (size_t i = 0; i < LS_ARRAY_SIZE(pfields); i++)
		if (strcmp(pfields[i].key, k) == 0)
			return true;
	return false;
}

/* Reject a non-object, then the first unknown key in file order. */
int
ls_fab_check_keys(struct ls_jsonv *c, const char *path, const json_t *obj,
		  const char *const *keys, bool params)
{
	char kpath[LS_JSONV_PATH_LEN];
	const char *key;
	json_t *val;

	if (!json_is_object(obj))
		return ls_jsonv_fail(c, path, "expected object, got %s", ls_jsonv_kind(obj));
	/* jansson's iteration API is not const; nothing is modified */
	json_object_foreach((json_t *)(uintptr_t)obj, key, val) {
		if (in_list(keys, key) || (params && is_param_key(key)))
			continue;
		return ls_jsonv_fail(c, ls_jsonv_key(kpath, path, key), "unknown key");
	}
	return 0;
}

/*
 * Apply the parameter keys present in obj on top of *p. bm_path (LS_FAB_BM_LEN)
 * follows the deepest layers that set buffer_bytes or mtu, and an ECN
 * threshold (for the cross checks).
 */
static int
apply_params(struct ls_jsonv *c, const char *path, const json_t *obj,
	     struct ls_fab_chan_params *p, char *bm_path)
{
	char kpath[LS_JSONV_PATH_LEN];

	for (size_t i = 0; i < LS_ARRAY_SIZE(pfields); i++) {
		const struct pfield *pf = &pfields[i];
		const json_t *v = json_object_get(obj, pf->key);
		char *dst = (char *)p + pf->off;
		double x;

		if (v == NULL)
			continue;
		ls_jsonv_key(kpath, path, pf->key);
		if (pf->kind == PK_DBL) {
			if (!json_is_number(v))
				return ls_jsonv_fail(c, kpath, "expected number, got %s",
					    ls_jsonv_kind(v));
			x = json_number_value(v);
			if (!(x >= pf->min && x <= pf->max))
				return ls_jsonv_fail(c, kpath, "must be between %g and %g, got %g",
					    pf->min, pf->max, x);
			memcpy(dst, &x, sizeof(x));
		} else {
			uint64_t u;

			if (json_is_integer(v)) {
				json_int_t iv = json_integer_value(v);

				if ((double)iv < pf->min || (double)iv > pf->max)
					return ls_jsonv_fail(c, kpath,
						    "must be between %.0f and %.0f, got %lld",
						    pf->min, pf->max, (long long)iv);
				u = (uint64_t)iv;
			} else if (json_is_real(v)) {
				x = json_real_value(v);
				if (x != floor(x))
					return ls_jsonv_fail(c, kpath, "must be a whole number, got %g", x);
				if (!(x >= pf->min && x <= pf->max))
					return ls_jsonv_fail(c, kpath,
						    "must be between %.0f and %.0f, got %g",
						    pf->min, pf->max, x);
				u = (uint64_t)x;
			} else {
				return ls_jsonv_fail(c, kpath, "expected integer, got %s",
					    ls_jsonv_kind(v));
			}
			if (pf->kind == PK_U64) {
				memcpy(dst, &u, sizeof(u));
			} else if (pf->kind == PK_U32) {
				uint32_t w = (uint32_t)u;

				memcpy(dst, &w, sizeof(w));
			} else {
				uint16_t w = (uint16_t)u;

				memcpy(dst, &w, sizeof(w));
			}
		}
		if (strcmp(pf->key, "buffer_bytes") == 0 || strcmp(pf->key, "mtu") == 0)
			snprintf(bm_path, LS_JSONV_PATH_LEN, "%s", path);
		if (strcmp(pf->key, "ecn_bytes") == 0 || strcmp(pf->key, "ecn_max_bytes") == 0)
			snprintf(bm_path + LS_JSONV_PATH_LEN, LS_JSONV_PATH_LEN, "%s", path);
	}
	return 0;
}

/* The rule that ties two keys: a buffer must hold at least one full packet. */
static int
check_params(struct ls_jsonv *c, const struct ls_fab_chan_params *p, const char *bm_path)
{
	if (p->buffer_bytes < p->mtu)
		return ls_jsonv_fail(c, bm_path,
			    "buffer_bytes (%u) must be at least the mtu (%u)",
			    p->buffer_bytes, (unsigned int)p->mtu);
	if (p->ecn_max_bytes != 0 && (p->ecn_bytes == 0 || p->ecn_max_bytes <= p->ecn_bytes))
		return ls_jsonv_fail(c, bm_path + LS_JSONV_PATH_LEN,
			    "ecn_max_bytes (%u) must be above ecn_bytes (%u), which must not be 0",
			    p->ecn_max_bytes, p->ecn_bytes);
	return 0;
}

/*
 * Params of one link: base (defaults), the link object's own keys, then its
 * two direction objects. out[0] is a->b (host->leaf), out[1] b->a.
 */
int
ls_fab_link_params(struct ls_jsonv *c, const char *path, const json_t *obj,
		   const struct ls_fab_chan_params *base, const char *base_path,
		   const char *dir_a, const char *dir_b, struct ls_fab_chan_params out[2])
{
	const char *dirs[2] = { dir_a, dir_b };
	char common_bm[LS_FAB_BM_LEN], bm[LS_FAB_BM_LEN], dpath[LS_JSONV_PATH_LEN];
	struct ls_fab_chan_params common = *base;
	int rc;

	memcpy(common_bm, base_path, LS_FAB_BM_LEN);
	rc = apply_params(c, path, obj, &common, common_bm);
	if (rc < 0)
		return rc;
	for (int d = 0; d < 2; d++) {
		const json_t *v = json_object_get(obj, dirs[d]);

		out[d] = common;
		memcpy(bm, common_bm, sizeof(bm));
		if (v != NULL) {
			ls_jsonv_key(dpath, path, dirs[d]);
			rc = ls_fab_check_keys(c, dpath, v, no_keys, true);
			if (rc < 0)
				return rc;
			rc = apply_params(c, dpath, v, &out[d], bm);
			if (rc < 0)
				return rc;
		}
		rc = check_params(c, &out[d], bm);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* One layer of link defaults, when the file has it. */
static int
default_layer(struct ls_jsonv *c, const char *path, const json_t *v,
	      struct ls_fab_chan_params *p, char *bm)
{
	int rc;

	if (v == NULL)
		return 0;
	rc = ls_fab_check_keys(c, path, v, no_keys, true);
	if (rc == 0)
		rc = apply_params(c, path, v, p, bm);
	if (rc == 0)
		rc = check_params(c, p, bm);
	return rc;
}

int
ls_fab_defaults(struct ls_jsonv *c, const json_t *root, struct ls_fab_chan_params *dl,
		char *dl_bm, struct ls_fab_chan_params *dh, char *dh_bm)
{
	const json_t *defaults = json_object_get(root, "defaults");
	int rc;

	*dl = (struct ls_fab_chan_params){
		.delay_ns = DEF_DELAY_NS, .rate_bps = DEF_RATE_BPS,
		.buffer_bytes = DEF_BUFFER, .ecn_bytes = DEF_ECN, .loss = 0,
		.mtu = DEF_MTU,
	};

	if (defaults != NULL) {
		rc = ls_fab_check_keys(c, "defaults", defaults, defaults_keys, false);
		if (rc < 0)
			return rc;
	}
	rc = default_layer(c, "defaults.link",
			   defaults != NULL ? json_object_get(defaults, "link") : NULL, dl, dl_bm);
	if (rc < 0)
		return rc;
	*dh = *dl;
	memcpy(dh_bm, dl_bm, LS_FAB_BM_LEN);
	return default_layer(c, "defaults.host_link",
			     defaults != NULL ? json_object_get(defaults, "host_link") : NULL,
			     dh, dh_bm);
}
