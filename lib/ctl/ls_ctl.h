/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lockstep control socket: newline-delimited JSON over a Unix domain
 * socket, modelled on Open vSwitch's unixctl.
 *
 * Request:  {"cmd": "NAME", "args": {...}}            (args optional)
 * Reply:    {"ok": true, "result": ...}
 *        or {"ok": false, "error": {"code": "...", "message": "..."}}
 *
 * Commands live in one table (name, usage, help, allowed argument keys,
 * callback, aux); each module registers its own. A callback
 * ends in exactly one reply, ls_ctl_reply_ok() or ls_ctl_reply_error(); if
 * it returns without one, the server answers an "internal" error for it, so
 * a client always gets an answer. "help" is built in and generated from the
 * table. Bad JSON, a request that is not an object, an unknown command and a
 * line longer than max_request each get an error reply and the connection
 * stays usable (an oversize line is discarded up to its newline).
 *
 * The server is single-threaded and non-blocking: ls_ctl_poll() serves every
 * client with poll(2) and returns, so the caller's control thread can do its
 * other periodic work between calls. Nothing here touches an lcore.
 *
 * The client half (ls_ctl_connect/ls_ctl_call) is what lockstepctl uses.
 */
#ifndef LS_CTL_H
#define LS_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Error codes used in replies. */
#define LS_CTL_E_BAD_JSON "bad_json"        /**< request line is not JSON */
#define LS_CTL_E_BAD_REQUEST "bad_request"  /**< not an object, no "cmd", args not an object */
#define LS_CTL_E_UNKNOWN "unknown_command"  /**< no such command */
#define LS_CTL_E_TOO_LARGE "too_large"      /**< request longer than max_request */
#define LS_CTL_E_BAD_ARGS "bad_args"        /**< args fail the command's checks */
#define LS_CTL_E_NOT_FOUND "not_found"      /**< named object does not exist */
#define LS_CTL_E_EXISTS "exists"            /**< named object already exists */
#define LS_CTL_E_BUSY "busy"                /**< try again */
#define LS_CTL_E_INTERNAL "internal"        /**< server-side failure */

struct ls_ctl;     /**< a server */
struct ls_ctl_req; /**< one request being served */

/**
 * Command callback. args is the request's "args" object (an empty object
 * when absent); borrowed. Must call ls_ctl_reply_ok() or
 * ls_ctl_reply_error() once.
 */
typedef void (*ls_ctl_cb)(struct ls_ctl_req *req, json_t *args, void *aux);

/** Server parameters. */
struct ls_ctl_params {
	const char *path;        /**< socket path (an existing stale socket is replaced) */
	mode_t mode;             /**< permission bits, e.g. 0660 */
	unsigned int max_clients;/**< concurrent connections; when all are taken, a newcomer
				  *   takes the slot of the client active longest ago (one
				  *   with no reply pending); if none, it gets "busy" */
	size_t max_request;      /**< longest request line in bytes, e.g. 65536 */
	unsigned int idle_timeout_ms; /**< close a client that completed no request and
				       *   took no reply bytes for this long (idle, or
				       *   dribbling half a line); 0: never */
};

/**
 * Create a server listening on params->path.
 * @return the server, or NULL with errno set (EADDRINUSE when a live server
 *         already answers on that path, ENAMETOOLONG, EACCES, ...).
 */
struct ls_ctl *ls_ctl_create(const struct ls_ctl_params *params);

/** Close every connection, remove the socket file, free. NULL is a no-op. */
void ls_ctl_free(struct ls_ctl *ctl);

/**
 * Register a command.
 * @param name   "peer.add"
 * @param usage  argument synopsis shown by help, e.g. "{name, addr, [port], [paths]}"
 * @param help   one-line description
 * @return 0, -EEXIST (duplicate name), -ENOSPC (table full), -EINVAL.
 */
int ls_ctl_register(struct ls_ctl *ctl, const char *name, const char *usage,
		    const char *help, ls_ctl_cb cb, void *aux);

/**
 * Register a command whose arguments the server checks before the callback
 * runs, as unixctl checks argument counts: a key of args that is not in keys
 * gets a bad_args reply ("args.KEY: unknown argument") and the callback is
 * not called, so a typo is never silently ignored.
 * @param keys  the allowed keys, separated by spaces ("peer path"); "" allows
 *              none; NULL checks nothing (same as ls_ctl_register())
 * @return as ls_ctl_register().
 */
int ls_ctl_register_keys(struct ls_ctl *ctl, const char *name, const char *usage,
			 const char *help, const char *keys, ls_ctl_cb cb, void *aux);

/**
 * Serve clients: accept, read, dispatch complete lines, write replies.
 * @param timeout_ms  longest wait for activity (0 = do not wait)
 * @return requests served, or a negative errno on a listening-socket failure.
 */
int ls_ctl_poll(struct ls_ctl *ctl, int timeout_ms);

/**
 * Run a command in this thread as if a client had sent it, for another
 * front end of the same data (lockstepd's /metrics): same table, same
 * argument checks, same callback. args is borrowed (NULL: none).
 * @return the result (new reference; json null for a null result), or NULL
 *         with "code: message" in err (unknown command, an error reply).
 */
json_t *ls_ctl_call_local(struct ls_ctl *ctl, const char *name, json_t *args, char *err,
			  size_t errlen);

/** Reply success with result (reference stolen; NULL means null). */
void ls_ctl_reply_ok(struct ls_ctl_req *req, json_t *result);

/** Reply an error with a code (LS_CTL_E_*) and a printf-style message. */
void ls_ctl_reply_error(struct ls_ctl_req *req, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * Argument helpers for callbacks. Each reads one optional (or, for
 * ls_ctl_arg_str, required) key of args; on a bad value it replies a
 * bad_args error naming the key and what was expected, and returns -1, so
 * a callback just returns. They return 1 when the key was present (*out
 * set), 0 when it was absent (*out untouched).
 */
/** An integer in [lo, hi]. */
int ls_ctl_arg_uint(struct ls_ctl_req *req, json_t *args, const char *key,
		    uint64_t lo, uint64_t hi, uint64_t *out);
/** A number (integer or real) in [lo, hi]. */
int ls_ctl_arg_num(struct ls_ctl_req *req, json_t *args, const char *key,
		   double lo, double hi, double *out);
/**
 * A required string; what says what it names ("peer name"). A missing or
 * non-string key replies "args.KEY: required string (WHAT)".
 * @return 1 with *out set, or -1.
 */
int ls_ctl_arg_str(struct ls_ctl_req *req, json_t *args, const char *key,
		   const char *what, const char **out);

/** Number of connected clients. */
unsigned int ls_ctl_n_clients(const struct ls_ctl *ctl);

/**
 * Client: connect to a server.
 * @return a connected fd, or a negative errno (-ENOENT: no socket file,
 *         -ECONNREFUSED: file but no server, -EACCES: permission).
 */
int ls_ctl_connect(const char *path);

/**
 * Client: send {"cmd": cmd, "args": args} and wait for one reply line.
 * @param args  borrowed; NULL for none
 * @param timeout_ms  give up after this long
 * @param reply  the parsed reply object (caller json_decref's it)
 * @return 0 when a reply was read (check its "ok"), or a negative errno
 *         (-ETIMEDOUT, -ECONNRESET, -EBADMSG for an unparsable reply).
 */
int ls_ctl_call(int fd, const char *cmd, json_t *args, int timeout_ms, json_t **reply);

#ifdef __cplusplus
}
#endif

#endif /* LS_CTL_H */
