/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl's server internals: limits, and the server, client, command and
 * request structs, which only lib/ctl's sources touch (kept apart so that
 * ls_ctl.c stays the code: reading, dispatching, replying, connections;
 * ls_ctl_sock.c makes the listening socket's file).
 */
#ifndef LS_CTL_PRIV_H
#define LS_CTL_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "ls_ctl.h"

/** Most commands one server can hold; lockstepd registers a few dozen. */
#define LS_CTL_MAX_COMMANDS 128
/** Longest command name (including the NUL). */
#define LS_CTL_MAX_NAME 64
/** A client with this much unsent output is dropped: it is not reading. */
#define LS_CTL_MAX_OUTPUT (16u << 20)
/** Above this much unsent output we stop reading that client's requests. */
#define LS_CTL_OUT_HIWAT (256u << 10)
/** Bytes read from one client per poll round, so no client starves others. */
#define LS_CTL_READ_BUDGET (256u << 10)
/** listen(2) backlog; connections beyond max_clients are refused by us. */
#define LS_CTL_BACKLOG 16

struct ls_ctl_cmd {
	char *name;
	char *usage;
	char *help;
	char *keys;        /* allowed argument keys, space-separated; NULL: any */
	ls_ctl_cb cb;
	void *aux;
};

struct ls_ctl_client {
	int fd;
	char *in;          /* current partial line */
	size_t in_len;
	size_t in_cap;
	bool discarding;   /* skipping the rest of an oversize line */
	bool eof;          /* peer shut down its write side */
	bool dead;         /* close at the end of this round */
	uint64_t active_ms; /* accepted, last request served or reply bytes taken */
	bool served;       /* completed a request at least once */
	char *out;         /* pending reply bytes: out[out_off, out_len) */
	size_t out_off;
	size_t out_len;
	size_t out_cap;
};

struct ls_ctl {
	int listen_fd;
	char *path;
	dev_t dev;         /* identity of the socket file we created, so  */
	ino_t ino;         /* ls_ctl_free() never unlinks someone else's */
	unsigned int max_clients;
	size_t max_request;
	unsigned int idle_timeout_ms;
	struct ls_ctl_client **clients; /* max_clients slots, NULL when free */
	unsigned int n_clients;
	struct ls_ctl_cmd cmds[LS_CTL_MAX_COMMANDS];
	unsigned int n_cmds;
	struct pollfd *pfds;            /* scratch for ls_ctl_poll(): */
	struct ls_ctl_client **polled;  /* pfds[i] belongs to polled[i] */
};

struct ls_ctl_req {
	struct ls_ctl *ctl;
	struct ls_ctl_client *client; /* NULL: a local call (ls_ctl_call_local) */
	bool replied;
	json_t *result;               /* local call: the result, stolen */
	char *error;                  /* local call: "code: message", malloc'd */
};

struct sockaddr_un;

/** 0 when nothing is at sun's path or a dead socket was removed there;
 * -EADDRINUSE when a server answers there, -EEXIST for a file that is not
 * a socket, another negative errno on failure (ls_ctl_sock.c). */
int ls_ctl_sock_clear_stale(const struct sockaddr_un *sun);

/** Bind ctl->listen_fd to sun's path with exactly @mode and listen; the
 * file appears only once it listens. Sets ctl->dev/ino. 0 or an errno. */
int ls_ctl_sock_listen(struct ls_ctl *ctl, const struct sockaddr_un *sun, mode_t mode);

#endif /* LS_CTL_PRIV_H */
