/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control socket client: connect to a lockstepd control socket and make
 * one synchronous call at a time. This is all lockstepctl needs, and the
 * unit tests use it to drive the server.
 *
 * Why it is built this way:
 *
 * - Errors come back as negative errnos that say *why* a call failed,
 *   because lockstepctl turns them into distinct exit codes: no socket
 *   file (-ENOENT) and a file nobody listens on (-ECONNREFUSED) both mean
 *   "daemon not running", -EACCES means "wrong group", -ETIMEDOUT and
 *   -EBADMSG mean the daemon is there but not answering sensibly.
 *
 * - The call is bounded by one deadline covering both the send and the
 *   reply, using poll(2) on a non-blocking socket, so a wedged daemon can
 *   never hang a monitoring script.
 *
 * - There is no per-fd state: the reply line is read with MSG_PEEK first
 *   and only the bytes up to its newline are consumed, so anything after
 *   it stays in the socket for the next call.
 *
 * - If the server hangs up before our request is out (a "busy" refusal
 *   arrives that way), we still read what it said before the hang-up,
 *   so the caller sees the server's reason rather than a bare EPIPE.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ls_ctl.h"

/** Largest reply accepted; "paths" on a big mesh is well under this. */
#define LS_CTL_MAX_REPLY (64u << 20)

int
ls_ctl_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	if (path == NULL || path[0] == '\0')
		return -EINVAL;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A blocking connect on a Unix socket completes at once unless the
	 * listen backlog is full, and then it waits for room: fine here. */
	while (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int err = errno;

		if (err == EINTR)
			continue;
		close(fd);
		return -err;
	}
	return fd;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before @deadline, -1 (forever) when there is none. */
static int
remaining(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	if (left <= 0)
		return 0;
	return left > 1000000000 ? 1000000000 : (int)left;
}

/* Wait for @events on @fd; 0 when ready, -ETIMEDOUT or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	for (;;) {
		int ms = remaining(deadline);
		int rc;

		if (ms == 0)
			return -ETIMEDOUT;
		rc = poll(&pfd, 1, ms);
		if (rc > 0)
			return 0;
		if (rc == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Send the whole buffer before the deadline. */
static int
send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(fd, buf + off, len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		int rc;

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Read one line (without the '\n') into a malloc'd buffer. Bytes after
 * the newline are left unread in the socket.
 */
static int
recv_line(int fd, int64_t deadline, char **linep, size_t *lenp)
{
	char *line = NULL;
	size_t len = 0, cap = 0;
	char buf[65536];
	int rc;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		size_t take;
		char *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				rc = -errno;
				goto fail;
			}
			rc = wait_fd(fd, POLLIN, deadline);
			if (rc < 0)
				goto fail;
			continue;
		}
		if (n == 0) {
			/* Closed before a full line: no reply is coming. */
			rc = -ECONNRESET;
			goto fail;
		}
		nl = memchr(buf, '\n', (size_t)n);
		take = nl ? (size_t)(nl - buf) + 1 : (size_t)n;
		if (len + take > LS_CTL_MAX_REPLY) {
			rc = -EMSGSIZE;
			goto fail;
		}
		if (len + take > cap) {
			size_t ncap = cap ? cap : 4096;
			char *p;

			while (ncap < len + take)
				ncap *= 2;
			p = realloc(line, ncap);
			if (p == NULL) {
				rc = -ENOMEM;
				goto fail;
			}
			line = p;
			cap = ncap;
		}
		/* Consume exactly what we peeked (or up to the newline). */
		n = recv(fd, line + len, take, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = -errno;
			goto fail;
		}
		len += (size_t)n;
		if (nl != NULL && (size_t)n == take) {
			len--; /* drop the '\n' */
			if (len > 0 && line[len - 1] == '\r')
				len--;
			*linep = line;
			*lenp = len;
			return 0;
		}
	}
fail:
	free(line);
	return rc;
}

int
ls_ctl_call(int fd, const char *cmd, json_t *args, int timeout_ms,
	    json_t **reply)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	json_t *req, *r;
	char *s, *line = NULL;
	size_t len;
	int rc, send_rc;

	if (reply != NULL)
		*reply = NULL;
	if (fd < 0 || cmd == NULL || reply == NULL ||
	    (args != NULL && !json_is_object(args)))
		return -EINVAL;

	req = json_object();
	if (req == NULL)
		return -ENOMEM;
	json_object_set_new(req, "cmd", json_string(cmd));
	if (args != NULL)
		json_object_set(req, "args", args);
	s = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (s == NULL)
		return -ENOMEM;
	len = strlen(s);
	/* Room for the newline: jansson's buffer is exactly len + 1. */
	{
		char *t = realloc(s, len + 2);

		if (t == NULL) {
			free(s);
			return -ENOMEM;
		}
		s = t;
	}
	s[len++] = '\n';
	s[len] = '\0';

	send_rc = send_all(fd, s, len, deadline);
	free(s);
	if (send_rc < 0 && send_rc != -EPIPE && send_rc != -ECONNRESET)
		return send_rc;

	/* Even after EPIPE, whatever the server said before hanging up is
	 * still queued for us (typically a "busy" refusal). */
	rc = recv_line(fd, deadline, &line, &len);
	if (rc < 0)
		return rc;

	r = json_loadb(line, len, 0, NULL);
	free(line);
	if (r == NULL || !json_is_object(r) ||
	    !json_is_boolean(json_object_get(r, "ok"))) {
		json_decref(r);
		return -EBADMSG;
	}
	*reply = r;
	return 0;
}
