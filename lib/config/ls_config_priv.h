/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/config internals: the field-table machinery ls_config.c walks, shared
 * with the sections that live in files of their own (ls_config_bridge.c).
 * Not installed; nothing outside lib/config includes it.
 */
#ifndef LS_CONFIG_PRIV_H
#define LS_CONFIG_PRIV_H

#include <stddef.h>

#include <jansson.h>

#include "ls_config.h"
#include "ls_jsonv.h"

/* Parse context: where errors go and what cross references can see. */
struct pctx {
	struct ls_jsonv jv;            /* where errors go */
	const struct ls_config *cfg;   /* ports known so far (for peers) */
	struct ls_config *out;         /* config being built (ports, peers) */
};



/*
 * Field tables.
 */

struct field;

typedef int (*field_fn)(struct pctx *c, const char *path, const json_t *v,
			void *dst, const struct field *f);
typedef int (*post_fn)(struct pctx *c, const char *path, const json_t *obj,
		       void *base);

enum field_kind {
	FK_INT,   /* JSON integer in [min, max], stored in 1/2/4/8 bytes */
	FK_NUM,   /* JSON integer or real in [dmin, dmax], stored as double */
	FK_BOOL,  /* JSON true/false */
	FK_STR,   /* string of min..size-1 bytes copied into char[size] */
	FK_ENUM,  /* string out of names[], its index stored like FK_INT */
	FK_OBJ,   /* nested object described by sub (same base + off) */
	FK_ARR,   /* JSON array of [min, max] entries: fn() does the entries */
	FK_FUNC,  /* anything else: fn() does type check and store */
};

#define F_REQ  0x1 /* required key */
#define F_POW2 0x2 /* FK_INT: power of two */
#define F_NAME 0x4 /* FK_STR: name charset [A-Za-z0-9_.-] */

struct schema {
	const struct field *fields;
	size_t n;
	post_fn post;     /* cross-key checks once every field is in */
};

struct field {
	const char *key;
	enum field_kind kind;
	unsigned int flags;
	size_t off;                 /* from the base of the enclosing object */
	size_t size;                /* bytes at off */
	long long min, max;         /* FK_INT range; FK_STR minimum length */
	double dmin, dmax;          /* FK_NUM range */
	const char *const *names;   /* FK_ENUM choices, NULL-terminated */
	const struct schema *sub;   /* FK_OBJ */
	field_fn fn;                /* FK_FUNC */
};

#define MSIZE(T, m) sizeof(((T *)0)->m)

#define F_INT(k, T, m, lo, hi, fl) { .key = (k), .kind = FK_INT, \
	.flags = (fl), .off = offsetof(T, m), .size = MSIZE(T, m), \
	.min = (lo), .max = (hi) }
#define F_NUMBER(k, T, m, lo, hi) { .key = (k), .kind = FK_NUM, \
	.off = offsetof(T, m), .size = MSIZE(T, m), .dmin = (lo), .dmax = (hi) }
#define F_BOOL(k, T, m) { .key = (k), .kind = FK_BOOL, \
	.off = offsetof(T, m), .size = MSIZE(T, m) }
#define F_STR(k, T, m, minlen, fl) { .key = (k), .kind = FK_STR, \
	.flags = (fl), .off = offsetof(T, m), .size = MSIZE(T, m), \
	.min = (minlen) }
#define F_ENUM(k, T, m, choices) { .key = (k), .kind = FK_ENUM, \
	.off = offsetof(T, m), .size = MSIZE(T, m), .names = (choices) }
#define F_OBJ(k, off_, s, fl) { .key = (k), .kind = FK_OBJ, .flags = (fl), \
	.off = (off_), .sub = &(s) }
#define F_ARRAY(k, T, m, lo, hi, f, fl) { .key = (k), .kind = FK_ARR, .flags = (fl), \
	.off = offsetof(T, m), .size = MSIZE(T, m), .min = (lo), .max = (hi), .fn = (f) }
#define F_FUNC(k, T, m, f, fl) { .key = (k), .kind = FK_FUNC, .flags = (fl), \
	.off = offsetof(T, m), .size = MSIZE(T, m), .fn = (f) }

#define SCHEMA(tab, p) { .fields = (tab), .n = LS_ARRAY_SIZE(tab), .post = (p) }


/* Sections defined in their own files. */
extern const struct schema ls_config_bridge_schema;
extern const struct schema ls_config_route_schema;   /* ls_config_links.c */
extern const struct schema ls_config_links_schema;
extern const struct schema ls_config_pinglist_schema;

/* Parses one peer object, errors through c (ls_config.c hands its own to
 * the pinglist, which has no schema of its own for peers). */
typedef int (*ls_config_peer_fn)(struct pctx *c, const char *path, const json_t *obj,
				 struct ls_conf_peer *out);

/* Append the pinglist's peers to c->out->peers (ls_config_pinglist.c). */
int ls_config_pinglist_apply(struct pctx *c, ls_config_peer_fn parse_peer);

/* The bridge's defaults (docs/datapath.md lists the same values);
 * policy_file follows the node (node_post), policy is made by bridge_post. */
static inline void
ls_config_bridge_defaults(struct ls_conf_bridge *b)
{
	*b = (struct ls_conf_bridge){ .max_flows = 262144, .flow_idle_ms = 30000,
		.pace_max_delay_us = 10000, .wheel_slots = 65536, .wheel_slot_ns = 100,
		.mbufs = 16384,
		.failover = {.enabled = true, .silence_us = 500, .hold_ms = 2000},
		.balance = {.runs = 2} };
}

#endif /* LS_CONFIG_PRIV_H */
