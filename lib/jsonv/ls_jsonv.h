/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Validating JSON files (jansson) with errors a person can act on: one line,
 * "FILE: KEY: REASON", where KEY is the path to the offending value
 * ("peers[3].addr") and any user text quoted back is cut short and cleaned
 * of control characters. Shared by every lockstep file format (lockstepd's
 * config, lockstep-fabric's topology), so they report errors the same way.
 * No EAL.
 */
#ifndef LS_JSONV_H
#define LS_JSONV_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LS_JSONV_PATH_LEN 160  /**< key path buffers ("peers[4095].interval_us") */
#define LS_JSONV_QUOTE_MAX 80  /**< longest piece of user text quoted in a message */

/** Where errors go. */
struct ls_jsonv {
	const char *src;   /**< file name for messages; NULL = none */
	char *err;         /**< message buffer (may be NULL) */
	size_t errlen;     /**< its size */
};

/**
 * Write "SRC: PATH: REASON" (parts absent when NULL or empty) into v->err.
 * @return -EINVAL, so callers can `return ls_jsonv_fail(...)`.
 */
int ls_jsonv_fail(const struct ls_jsonv *v, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Copy user text for a message: control characters become '?', long text is cut ("..."). */
const char *ls_jsonv_quote(char *buf, size_t len, const char *s);

/** "parent.key", or "key" at the top, into buf (LS_JSONV_PATH_LEN). */
const char *ls_jsonv_key(char *buf, const char *parent, const char *key);

/** "parent[i]" into buf (LS_JSONV_PATH_LEN). */
const char *ls_jsonv_index(char *buf, const char *parent, size_t i);

/** "object", "array", "string", "integer", "real", "boolean", "null". */
const char *ls_jsonv_kind(const json_t *v);

/** Names of things (nodes, ports, peers, links): [A-Za-z0-9_.-]. */
bool ls_jsonv_name_char(char ch);

/**
 * Open and parse a JSON file; duplicate keys are errors. The real errno of
 * an open failure is returned (jansson would fold it into text), and an
 * empty file or a directory is named as such.
 * @param max_name  longest file name the caller can keep (-ENAMETOOLONG beyond)
 * @return 0 and *root (json_decref it), or a negative errno with v->err set
 *         ("FILE: line L column C: TEXT" for syntax errors).
 */
int ls_jsonv_load(const struct ls_jsonv *v, size_t max_name, json_t **root);

/**
 * Write j to file atomically: a new temporary file beside it (never through
 * a link someone left there), fsync, rename over file. A reader sees the
 * old file or the new one, never a part.
 * @return 0, or a negative errno with "FILE: reason" in err.
 */
int ls_jsonv_save(const json_t *j, const char *file, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* LS_JSONV_H */
