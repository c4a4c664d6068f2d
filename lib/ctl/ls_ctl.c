/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control socket server: the daemon's side of lockstep's unixctl-style
 * command channel (see ls_ctl.h for the protocol, docs/control.md for the
 * commands).
 *
 * Why it is built this way:
 *
 * - One thread, no blocking. lockstepd calls ls_ctl_poll() from its control
 *   thread between other periodic jobs, so nothing in here may wait on a
 *   client: every socket is O_NONBLOCK, reads take what is there, and
 *   replies go to a per-client output buffer that is flushed when poll(2)
 *   says the socket is writable. A client that stops reading only costs
 *   memory, and only up to LS_CTL_MAX_OUTPUT before it is dropped. While a
 *   client has more than LS_CTL_OUT_HIWAT bytes pending we stop reading its
 *   requests, so a pipelining client is throttled instead of dropped.
 *
 * - Framing is one JSON object per line. Input is processed as a byte
 *   stream: bytes accumulate until a newline, then the line is dispatched.
 *   A line is never allowed to grow past max_request (+1 for a '\r'), so a
 *   client cannot make us buffer without bound: once it does, it gets one
 *   "too_large" reply and everything up to the next newline is thrown
 *   away, after which the connection works normally again.
 *
 * - Exactly one reply per request. Callbacks reply synchronously through
 *   ls_ctl_reply_ok()/ls_ctl_reply_error(); the dispatcher notices a
 *   callback that forgot and answers "internal" for it, and ignores a
 *   second reply, so a client waiting for one line never hangs or gets
 *   out of step.
 *
 * - Every malformed request is answered, never punished with a disconnect:
 *   an operator typing into socat should see what they got wrong.
 *
 * - Writes use send(MSG_NOSIGNAL) so a client vanishing mid-reply is an
 *   EPIPE we handle, not a SIGPIPE that kills the daemon.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ls_ctl.h"
#include "ls_ctl_priv.h"

/* ------------------------------------------------------------------ */
/* Output                                                             */
/* ------------------------------------------------------------------ */

static void
client_kill(struct ls_ctl_client *c)
{
	c->dead = true;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Send as much pending output as the socket takes without blocking. */
static void
client_flush(struct ls_ctl_client *c)
{
	while (!c->dead && c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->out_off += (size_t)n;
			c->active_ms = now_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* EPIPE, ECONNRESET, ...: nobody is listening any more. */
		client_kill(c);
		return;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
}

/* Queue one reply line; the socket is written later by client_flush(). */
static void
client_queue(struct ls_ctl_client *c, const char *line, size_t len)
{
	size_t pending, need;

	if (c->dead)
		return;
	/* Compact first so the buffer does not creep forward forever. */
	if (c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	pending = c->out_len;
	need = pending + len + 1;
	if (need > LS_CTL_MAX_OUTPUT) {
		client_kill(c);
		return;
	}
	if (need > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(c->out, cap);
		if (p == NULL) {
			client_kill(c);
			return;
		}
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + pending, line, len);
	c->out[pending + len] = '\n';
	c->out_len = need;
}

/* Serialise a reply object onto the client's output; steals @reply. */
static void
client_send_json(struct ls_ctl_client *c, json_t *reply)
{
	char *s = NULL;

	if (reply != NULL)
		s = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	if (s == NULL) {
		/* Out of memory or an unencodable result: still answer. */
		static const char fallback[] =
			"{\"ok\":false,\"error\":{\"code\":\"internal\","
			"\"message\":\"cannot encode reply\"}}";
		client_queue(c, fallback, sizeof(fallback) - 1);
		return;
	}
	client_queue(c, s, strlen(s));
	free(s);
}

static json_t *
make_error(const char *code, const char *msg)
{
	return json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error",
			 "code", code, "message", msg);
}

static void
client_send_error(struct ls_ctl_client *c, const char *code, const char *msg)
{
	client_send_json(c, make_error(code, msg));
}

void
ls_ctl_reply_ok(struct ls_ctl_req *req, json_t *result)
{
	json_t *reply;

	if (req == NULL) {
		json_decref(result);
		return;
	}
	if (req->replied) {
		/* A second reply would desynchronise the client: drop it. */
		json_decref(result);
		return;
	}
	req->replied = true;
	if (req->client == NULL) {
		req->result = result;
		return;
	}
	reply = json_object();
	if (reply == NULL) {
		json_decref(result);
		client_send_json(req->client, NULL);
		return;
	}
	json_object_set_new(reply, "ok", json_true());
	json_object_set_new(reply, "result", result ? result : json_null());
	client_send_json(req->client, reply);
}

void
ls_ctl_reply_error(struct ls_ctl_req *req, const char *code, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	int rc;

	if (req == NULL || req->replied)
		return;
	req->replied = true;
	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc < 0)
		msg = NULL;
	if (req->client == NULL) {
		if (asprintf(&req->error, "%s: %s", code ? code : LS_CTL_E_INTERNAL,
			     msg ? msg : "") < 0)
			req->error = NULL;
	} else {
		client_send_error(req->client, code ? code : LS_CTL_E_INTERNAL,
				  msg ? msg : "");
	}
	free(msg);
}


/* ------------------------------------------------------------------ */
/* Commands                                                           */
/* ------------------------------------------------------------------ */

static struct ls_ctl_cmd *
cmd_find(struct ls_ctl *ctl, const char *name)
{
	unsigned int i;

	for (i = 0; i < ctl->n_cmds; i++)
		if (strcmp(ctl->cmds[i].name, name) == 0)
			return &ctl->cmds[i];
	return NULL;
}

static int
cmd_by_name(const void *a, const void *b)
{
	const struct ls_ctl_cmd *const *x = a;
	const struct ls_ctl_cmd *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* Built-in "help": the table itself, sorted so the output is stable. */
static void
help_cb(struct ls_ctl_req *req, json_t *args, void *aux)
{
	struct ls_ctl *ctl = aux;
	const struct ls_ctl_cmd *sorted[LS_CTL_MAX_COMMANDS];
	json_t *list;
	unsigned int i;

	(void)args;
	for (i = 0; i < ctl->n_cmds; i++)
		sorted[i] = &ctl->cmds[i];
	qsort(sorted, ctl->n_cmds, sizeof(sorted[0]), cmd_by_name);

	list = json_array();
	if (list == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_INTERNAL, "out of memory");
		return;
	}
	for (i = 0; i < ctl->n_cmds; i++)
		json_array_append_new(list, json_pack("{s:s, s:s, s:s}",
				      "cmd", sorted[i]->name,
				      "usage", sorted[i]->usage,
				      "help", sorted[i]->help));
	ls_ctl_reply_ok(req, list);
}

static bool
valid_name(const char *name)
{
	size_t i, len;

	if (name == NULL)
		return false;
	len = strlen(name);
	if (len == 0 || len >= LS_CTL_MAX_NAME)
		return false;
	/* Names are typed on command lines and matched exactly: keep them
	 * to printable, space-free ASCII. */
	for (i = 0; i < len; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return false;
	return true;
}

int
ls_ctl_register(struct ls_ctl *ctl, const char *name, const char *usage,
		const char *help, ls_ctl_cb cb, void *aux)
{
	return ls_ctl_register_keys(ctl, name, usage, help, NULL, cb, aux);
}

int
ls_ctl_register_keys(struct ls_ctl *ctl, const char *name, const char *usage,
		     const char *help, const char *keys, ls_ctl_cb cb, void *aux)
{
	struct ls_ctl_cmd *cmd;

	if (ctl == NULL || cb == NULL || !valid_name(name))
		return -EINVAL;
	if (cmd_find(ctl, name) != NULL)
		return -EEXIST;
	if (ctl->n_cmds >= LS_CTL_MAX_COMMANDS)
		return -ENOSPC;

	cmd = &ctl->cmds[ctl->n_cmds];
	cmd->name = strdup(name);
	cmd->usage = strdup(usage ? usage : "");
	cmd->help = strdup(help ? help : "");
	cmd->keys = keys ? strdup(keys) : NULL;
	if (cmd->name == NULL || cmd->usage == NULL || cmd->help == NULL ||
	    (keys != NULL && cmd->keys == NULL)) {
		free(cmd->name);
		free(cmd->usage);
		free(cmd->help);
		free(cmd->keys);
		memset(cmd, 0, sizeof(*cmd));
		return -ENOMEM;
	}
	cmd->cb = cb;
	cmd->aux = aux;
	ctl->n_cmds++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Requests                                                           */
/* ------------------------------------------------------------------ */

/* Is key one of the space-separated words of keys? */
static bool
key_listed(const char *keys, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = keys + strspn(keys, " "); *p != '\0'; p += strspn(p, " ")) {
		size_t w = strcspn(p, " ");

		if (w == n && memcmp(p, key, n) == 0)
			return true;
		p += w;
	}
	return false;
}

static int
check_keys(struct ls_ctl_req *req, json_t *args, const char *keys)
{
	const char *key;
	json_t *v;

	json_object_foreach(args, key, v) {
		if (!key_listed(keys, key)) {
			ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.%s: unknown argument", key);
			return -1;
		}
	}
	return 0;
}

json_t *
ls_ctl_call_local(struct ls_ctl *ctl, const char *name, json_t *args, char *err,
		  size_t errlen)
{
	struct ls_ctl_req req = {.ctl = ctl};
	struct ls_ctl_cmd *cmd = ctl ? cmd_find(ctl, name) : NULL;
	json_t *a = args ? json_incref(args) : json_object();

	if (cmd == NULL) {
		snprintf(err, errlen, "%s: unknown command \"%s\"", LS_CTL_E_UNKNOWN, name);
	} else if (cmd->keys == NULL || check_keys(&req, a, cmd->keys) == 0) {
		cmd->cb(&req, a, cmd->aux);
	}
	json_decref(a);
	if (req.error != NULL || (cmd != NULL && !req.replied)) {
		snprintf(err, errlen, "%s", req.error ? req.error : "internal: no reply");
		free(req.error);
		json_decref(req.result);
		return NULL;
	}
	return cmd != NULL ? (req.result ? req.result : json_null()) : NULL;
}

/* Handle one complete line (without its '\n'); returns 1 if it was a
 * request (answered), 0 if it was blank. */
static int
handle_line(struct ls_ctl *ctl, struct ls_ctl_client *c, char *line, size_t len)
{
	struct ls_ctl_req req = { .ctl = ctl, .client = c, .replied = false };
	struct ls_ctl_cmd *cmd;
	json_error_t jerr;
	json_t *msg, *jcmd, *args;
	const char *name;
	char buf[128];

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	if (len > ctl->max_request) {
		snprintf(buf, sizeof(buf), "request longer than %zu bytes",
			 ctl->max_request);
		client_send_error(c, LS_CTL_E_TOO_LARGE, buf);
		return 1;
	}

	msg = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
			 &jerr);
	if (msg == NULL) {
		char *m = NULL;

		if (asprintf(&m, "line %d column %d: %s", jerr.line,
			     jerr.column, jerr.text) < 0)
			m = NULL;
		client_send_error(c, LS_CTL_E_BAD_JSON, m ? m : "invalid JSON");
		free(m);
		return 1;
	}
	if (!json_is_object(msg)) {
		client_send_error(c, LS_CTL_E_BAD_REQUEST,
				  "request must be a JSON object");
		goto out;
	}
	jcmd = json_object_get(msg, "cmd");
	if (jcmd == NULL) {
		client_send_error(c, LS_CTL_E_BAD_REQUEST,
				  "request has no \"cmd\"");
		goto out;
	}
	if (!json_is_string(jcmd)) {
		client_send_error(c, LS_CTL_E_BAD_REQUEST,
				  "\"cmd\" must be a string");
		goto out;
	}
	args = json_object_get(msg, "args");
	if (args == NULL || json_is_null(args)) {
		args = json_object();
		if (args == NULL) {
			client_send_error(c, LS_CTL_E_INTERNAL, "out of memory");
			goto out;
		}
		json_object_set_new(msg, "args", args);
	} else if (!json_is_object(args)) {
		client_send_error(c, LS_CTL_E_BAD_REQUEST,
				  "\"args\" must be an object");
		goto out;
	}
	name = json_string_value(jcmd);
	cmd = cmd_find(ctl, name);
	if (cmd == NULL) {
		char *m = NULL;

		if (asprintf(&m, "unknown command \"%.64s\" (try \"help\")",
			     name) < 0)
			m = NULL;
		client_send_error(c, LS_CTL_E_UNKNOWN,
				  m ? m : "unknown command");
		free(m);
		goto out;
	}

	if (cmd->keys == NULL || check_keys(&req, args, cmd->keys) == 0)
		cmd->cb(&req, args, cmd->aux);
	if (!req.replied) {
		char *m = NULL;

		if (asprintf(&m, "command \"%s\" did not reply", cmd->name) < 0)
			m = NULL;
		client_send_error(c, LS_CTL_E_INTERNAL,
				  m ? m : "command did not reply");
		free(m);
	}
out:
	json_decref(msg);
	return 1;
}

/* Append bytes to the client's current line buffer. */
static int
client_append(struct ls_ctl_client *c, const char *p, size_t n)
{
	if (c->in_len + n > c->in_cap) {
		size_t cap = c->in_cap ? c->in_cap : 1024;
		char *q;

		while (cap < c->in_len + n)
			cap *= 2;
		q = realloc(c->in, cap);
		if (q == NULL)
			return -ENOMEM;
		c->in = q;
		c->in_cap = cap;
	}
	memcpy(c->in + c->in_len, p, n);
	c->in_len += n;
	return 0;
}

/*
 * Feed freshly read bytes through the line splitter, dispatching each
 * complete line. Returns the number of requests answered.
 */
static int
client_feed(struct ls_ctl *ctl, struct ls_ctl_client *c, const char *p,
	    size_t n)
{
	/* A line may carry one '\r' before its '\n' on top of max_request. */
	size_t limit = ctl->max_request + 1;
	const char *end = p + n;
	int served = 0;

	while (p < end && !c->dead) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *seg_end = nl ? nl : end;
		size_t seg = (size_t)(seg_end - p);

		if (!c->discarding) {
			if (c->in_len + seg > limit) {
				char buf[128];

				snprintf(buf, sizeof(buf),
					 "request longer than %zu bytes",
					 ctl->max_request);
				client_send_error(c, LS_CTL_E_TOO_LARGE, buf);
				served++;
				c->discarding = true;
				c->in_len = 0;
			} else if (client_append(c, p, seg) < 0) {
				client_kill(c);
				break;
			}
		}
		if (nl != NULL) {
			if (!c->discarding)
				served += handle_line(ctl, c, c->in, c->in_len);
			/* The oversize line, if any, ends here. */
			c->discarding = false;
			c->in_len = 0;
			p = nl + 1;
		} else {
			p = end;
		}
	}
	return served;
}

/* Read what the client sent and answer every complete request. */
static int
client_read(struct ls_ctl *ctl, struct ls_ctl_client *c)
{
	char buf[16384];
	size_t budget = LS_CTL_READ_BUDGET;
	int served = 0;

	while (!c->dead && !c->eof && budget > 0 &&
	       c->out_len - c->out_off <= LS_CTL_OUT_HIWAT) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0) {
			int k = client_feed(ctl, c, buf, (size_t)n);

			/* Bytes alone are no activity: half a line, dribbled, must
			 * not hold a slot for ever. */
			if (k > 0) {
				c->active_ms = now_ms();
				c->served = true;
			}
			served += k;
			budget -= (size_t)n < budget ? (size_t)n : budget;
			continue;
		}
		if (n == 0) {
			/* Half-close (e.g. socat on EOF): treat an unterminated
			 * last line as a request, then finish sending. */
			c->eof = true;
			if (c->in_len > 0 && !c->discarding)
				served += handle_line(ctl, c, c->in, c->in_len);
			c->in_len = 0;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			client_kill(c);
		break;
	}
	return served;
}

/* ------------------------------------------------------------------ */
/* Connections                                                        */
/* ------------------------------------------------------------------ */

static void
client_free(struct ls_ctl_client *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

/* Over the limit: say so, best effort, and hang up. */
static void
refuse_busy(int fd, unsigned int max_clients)
{
	char *line = NULL;
	int len;

	len = asprintf(&line, "{\"ok\":false,\"error\":{\"code\":\"%s\","
		       "\"message\":\"too many clients (max %u)\"}}\n",
		       LS_CTL_E_BUSY, max_clients);
	/* A fresh socket's buffer takes this short line whole; if it somehow
	 * does not, the client just sees the close. */
	if (len > 0)
		(void)send(fd, line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(line);
	close(fd);
}

/* a gives way before b: one that never made a request before one that did
 * (a quiet long-lived client outranks a crowd of idle newcomers), then the
 * one active longest ago. */
static bool
evict_first(const struct ls_ctl_client *a, const struct ls_ctl_client *b)
{
	if (a->served != b->served)
		return !a->served;
	return a->active_ms < b->active_ms;
}

/*
 * The table is full: a client with no reply pending gives its slot up
 * (evict_first), so an operator always gets in however many idle
 * connections are open. NULL when every client awaits a reply.
 */
static struct ls_ctl_client **
evictable(struct ls_ctl *ctl)
{
	struct ls_ctl_client **best = NULL;

	for (unsigned int i = 0; i < ctl->max_clients; i++) {
		struct ls_ctl_client *c = ctl->clients[i];

		if (c != NULL && c->out_len == c->out_off &&
		    (best == NULL || evict_first(c, *best)))
			best = &ctl->clients[i];
	}
	return best;
}

static int
accept_clients(struct ls_ctl *ctl)
{
	for (;;) {
		struct ls_ctl_client *c;
		unsigned int i;
		int fd;

		fd = accept4(ctl->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			switch (errno) {
			case EINTR:
				continue;
			case EAGAIN:
#if EAGAIN != EWOULDBLOCK
			case EWOULDBLOCK:
#endif
			case ECONNABORTED:
			case EPROTO:
				return 0;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				/* Resource shortage: leave the connection in
				 * the backlog and try again next round. */
				return 0;
			default:
				return -errno;
			}
		}
		if (ctl->n_clients >= ctl->max_clients) {
			struct ls_ctl_client **v = evictable(ctl);

			if (v == NULL) {
				refuse_busy(fd, ctl->max_clients);
				continue;
			}
			client_free(*v);
			*v = NULL;
			ctl->n_clients--;
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->active_ms = now_ms();
		for (i = 0; i < ctl->max_clients; i++)
			if (ctl->clients[i] == NULL)
				break;
		ctl->clients[i] = c;
		ctl->n_clients++;
	}
}

/* Close clients marked dead, those that hung up with nothing left to say,
 * and those idle past idle_timeout_ms. */
static void
reap_clients(struct ls_ctl *ctl)
{
	uint64_t now = ctl->idle_timeout_ms ? now_ms() : 0;
	unsigned int i;

	for (i = 0; i < ctl->max_clients; i++) {
		struct ls_ctl_client *c = ctl->clients[i];

		if (c == NULL)
			continue;
		if (c->dead || (c->eof && c->out_len == c->out_off) ||
		    (ctl->idle_timeout_ms && now - c->active_ms > ctl->idle_timeout_ms)) {
			client_free(c);
			ctl->clients[i] = NULL;
			ctl->n_clients--;
		}
	}
}

int
ls_ctl_poll(struct ls_ctl *ctl, int timeout_ms)
{
	struct ls_ctl_client **polled;
	unsigned int i, n = 0;
	int served = 0, rc;

	if (ctl == NULL)
		return -EINVAL;

	polled = ctl->polled;
	ctl->pfds[n].fd = ctl->listen_fd;
	ctl->pfds[n].events = POLLIN;
	ctl->pfds[n].revents = 0;
	polled[n++] = NULL;
	for (i = 0; i < ctl->max_clients; i++) {
		struct ls_ctl_client *c = ctl->clients[i];
		short ev = 0;

		if (c == NULL)
			continue;
		if (!c->eof && c->out_len - c->out_off <= LS_CTL_OUT_HIWAT)
			ev |= POLLIN;
		if (c->out_len > c->out_off)
			ev |= POLLOUT;
		ctl->pfds[n].fd = c->fd;
		ctl->pfds[n].events = ev;
		ctl->pfds[n].revents = 0;
		polled[n++] = c;
	}

	/* Negative waits until something happens, as for poll(2). */
	rc = poll(ctl->pfds, n, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	if (rc == 0) {
		reap_clients(ctl); /* idle time-outs */
		return 0;
	}

	for (i = 1; i < n; i++) {
		struct ls_ctl_client *c = polled[i];
		short re = ctl->pfds[i].revents;

		if (re & POLLNVAL) {
			client_kill(c);
			continue;
		}
		/* POLLHUP/POLLERR with data still queued: read it first, the
		 * recv() then reports the EOF or error itself. */
		if (re & (POLLIN | POLLHUP | POLLERR))
			served += client_read(ctl, c);
		/* Answer straight away; only leftovers wait for POLLOUT. */
		client_flush(c);
	}
	reap_clients(ctl);

	if (ctl->pfds[0].revents & (POLLERR | POLLNVAL))
		return -EIO;
	if (ctl->pfds[0].revents & POLLIN) {
		rc = accept_clients(ctl);
		if (rc < 0)
			return rc;
	}
	return served;
}

unsigned int
ls_ctl_n_clients(const struct ls_ctl *ctl)
{
	return ctl ? ctl->n_clients : 0;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                          */
/* ------------------------------------------------------------------ */

struct ls_ctl *
ls_ctl_create(const struct ls_ctl_params *params)
{
	struct sockaddr_un sun;
	struct ls_ctl *ctl = NULL;
	int rc, err;

	if (params == NULL || params->path == NULL || params->path[0] == '\0' ||
	    params->max_clients == 0 || params->max_request == 0 ||
	    (params->mode & ~(mode_t)0777) != 0) {
		errno = EINVAL;
		return NULL;
	}
	if (strlen(params->path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, params->path);

	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return NULL;
	ctl->listen_fd = -1;
	ctl->max_clients = params->max_clients;
	ctl->max_request = params->max_request;
	ctl->idle_timeout_ms = params->idle_timeout_ms;
	ctl->path = strdup(params->path);
	ctl->clients = calloc(ctl->max_clients, sizeof(*ctl->clients));
	ctl->pfds = calloc((size_t)ctl->max_clients + 1, sizeof(*ctl->pfds));
	ctl->polled = calloc((size_t)ctl->max_clients + 1,
			     sizeof(*ctl->polled));
	if (ctl->path == NULL || ctl->clients == NULL || ctl->pfds == NULL ||
	    ctl->polled == NULL) {
		err = ENOMEM;
		goto fail;
	}

	rc = ls_ctl_sock_clear_stale(&sun);
	if (rc < 0) {
		err = -rc;
		goto fail;
	}

	ctl->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
				SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0) {
		err = errno;
		goto fail;
	}

	err = ls_ctl_sock_listen(ctl, &sun, params->mode);
	if (err != 0)
		goto fail;

	rc = ls_ctl_register(ctl, "help", "",
			     "list commands with their arguments", help_cb, ctl);
	if (rc < 0) {
		err = -rc;
		unlink(sun.sun_path);
		goto fail;
	}
	return ctl;

fail:
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	free(ctl->polled);
	free(ctl->pfds);
	free(ctl->clients);
	free(ctl->path);
	free(ctl);
	errno = err;
	return NULL;
}

void
ls_ctl_free(struct ls_ctl *ctl)
{
	struct stat st;
	unsigned int i;

	if (ctl == NULL)
		return;
	for (i = 0; i < ctl->max_clients; i++) {
		if (ctl->clients[i] == NULL)
			continue;
		/* Last chance for replies already queued; never wait. */
		client_flush(ctl->clients[i]);
		client_free(ctl->clients[i]);
	}
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	/* Only remove the file if it is still ours: a newer daemon may have
	 * taken over the path after deciding ours was stale. */
	if (lstat(ctl->path, &st) == 0 && st.st_dev == ctl->dev &&
	    st.st_ino == ctl->ino)
		unlink(ctl->path);
	for (i = 0; i < ctl->n_cmds; i++) {
		free(ctl->cmds[i].name);
		free(ctl->cmds[i].usage);
		free(ctl->cmds[i].help);
		free(ctl->cmds[i].keys);
	}
	free(ctl->polled);
	free(ctl->pfds);
	free(ctl->clients);
	free(ctl->path);
	free(ctl);
}
