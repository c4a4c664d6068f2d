/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/ctl: the control socket server and client.
 *
 * Most tests run the server on a background thread that does nothing but
 * call ls_ctl_poll() in a loop, and talk to it from the test thread, either
 * through ls_ctl_call() or with raw bytes on the socket when the point is
 * to send something ls_ctl_call() never would (bad JSON, pipelined lines,
 * half a request). Commands are registered before the thread starts; the
 * server is single-threaded by design and only the poll thread touches it
 * afterwards. One test drives ls_ctl_poll() from the test thread itself,
 * interleaved with non-blocking client I/O, to check its return value and
 * ls_ctl_n_clients() without any thread.
 *
 * Every server lives in its own mkdtemp() directory so tests can run in
 * parallel and a failed test leaves nothing in the way of the next.
 */

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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
#include "ls_test.h"

#define TMO 5000 /* ms: generous, a passing test never waits this long */

/* ------------------------------------------------------------------ */
/* Test commands                                                      */
/* ------------------------------------------------------------------ */

static void
cmd_echo(struct ls_ctl_req *req, json_t *args, void *aux)
{
	(void)aux;
	ls_ctl_reply_ok(req, json_deep_copy(args));
}

static void
cmd_noreply(struct ls_ctl_req *req, json_t *args, void *aux)
{
	(void)req;
	(void)args;
	(void)aux;
}

static void
cmd_fail(struct ls_ctl_req *req, json_t *args, void *aux)
{
	(void)args;
	(void)aux;
	ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "nope %d", 42);
	/* A second reply must be ignored, not sent. */
	ls_ctl_reply_ok(req, json_string("late"));
}

/* {"n": N} -> a string of N 'x'. */
static void
cmd_big(struct ls_ctl_req *req, json_t *args, void *aux)
{
	size_t n = (size_t)json_integer_value(json_object_get(args, "n"));
	char *s = malloc(n + 1);

	(void)aux;
	memset(s, 'x', n);
	s[n] = '\0';
	ls_ctl_reply_ok(req, json_string(s));
	free(s);
}

static const struct {
	const char *name, *usage, *help;
	ls_ctl_cb cb;
} test_cmds[] = {
	{ "echo", "{...}", "reply with the arguments", cmd_echo },
	{ "noreply", "", "forget to reply", cmd_noreply },
	{ "fail", "", "reply an error", cmd_fail },
	{ "big", "{n}", "reply a string of n bytes", cmd_big },
};
#define N_TEST_CMDS (sizeof(test_cmds) / sizeof(test_cmds[0]))

/* ------------------------------------------------------------------ */
/* Server harness                                                     */
/* ------------------------------------------------------------------ */

struct srv {
	char dir[64];
	char path[128];
	struct ls_ctl *ctl;
	pthread_t thread;
	bool running;
	atomic_int stop;
};

static void
tmpdir(struct srv *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/ls_ctl_test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(s->dir));
	snprintf(s->path, sizeof(s->path), "%s/ctl.sock", s->dir);
}

static struct ls_ctl *
make_ctl(const char *path, unsigned int max_clients, size_t max_request,
	 mode_t mode)
{
	struct ls_ctl_params p = {
		.path = path,
		.mode = mode,
		.max_clients = max_clients,
		.max_request = max_request,
	};
	struct ls_ctl *ctl = ls_ctl_create(&p);
	unsigned int i;

	ck_assert_msg(ctl != NULL, "ls_ctl_create: %s", strerror(errno));
	for (i = 0; i < N_TEST_CMDS; i++)
		ck_assert_int_eq(ls_ctl_register(ctl, test_cmds[i].name,
						 test_cmds[i].usage,
						 test_cmds[i].help,
						 test_cmds[i].cb, NULL), 0);
	return ctl;
}

static void *
srv_loop(void *arg)
{
	struct srv *s = arg;

	while (!atomic_load(&s->stop))
		ck_assert_int_ge(ls_ctl_poll(s->ctl, 10), 0);
	return NULL;
}

static void
srv_start(struct srv *s, unsigned int max_clients, size_t max_request)
{
	memset(s, 0, sizeof(*s));
	tmpdir(s);
	s->ctl = make_ctl(s->path, max_clients, max_request, 0660);
	atomic_store(&s->stop, 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, srv_loop, s), 0);
	s->running = true;
}

static void
srv_stop(struct srv *s)
{
	if (s->running) {
		atomic_store(&s->stop, 1);
		pthread_join(s->thread, NULL);
		s->running = false;
	}
	ls_ctl_free(s->ctl);
	s->ctl = NULL;
	unlink(s->path);
	rmdir(s->dir);
}

/* ------------------------------------------------------------------ */
/* Client helpers                                                     */
/* ------------------------------------------------------------------ */

static int
conn(const char *path)
{
	int fd = ls_ctl_connect(path);

	ck_assert_msg(fd >= 0, "connect %s: %s", path, strerror(-fd));
	return fd;
}

static void
raw_send(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;

	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);

		ck_assert_msg(n > 0, "send: %s", strerror(errno));
		off += (size_t)n;
	}
}

/* Read one reply line; NULL on EOF or timeout. Peek, then consume only
 * up to the newline so the next reply stays in the socket. */
static json_t *
raw_reply(int fd, int timeout_ms)
{
	static char buf[65536];
	char *line = NULL;
	size_t len = 0;
	json_t *r;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		char *nl;
		size_t take;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			goto fail;
		n = recv(fd, buf, sizeof(buf), MSG_PEEK);
		if (n <= 0)
			goto fail;
		nl = memchr(buf, '\n', (size_t)n);
		take = nl ? (size_t)(nl - buf) + 1 : (size_t)n;
		line = realloc(line, len + take);
		ck_assert_int_eq(recv(fd, line + len, take, 0), (ssize_t)take);
		len += take;
		if (nl != NULL)
			break;
	}
	r = json_loadb(line, len - 1, 0, NULL);
	ck_assert_msg(r != NULL, "reply is not JSON: %.*s", (int)len, line);
	free(line);
	return r;
fail:
	free(line);
	return NULL;
}

/* Is the connection closed (EOF/reset) within timeout_ms? */
static bool
raw_closed(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char ch;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return false;
	return recv(fd, &ch, 1, MSG_DONTWAIT) <= 0;
}

static void
assert_error(json_t *r, const char *code)
{
	json_t *err;

	ck_assert_ptr_nonnull(r);
	ck_assert(json_is_false(json_object_get(r, "ok")));
	err = json_object_get(r, "error");
	ck_assert(json_is_object(err));
	ck_assert_str_eq(json_string_value(json_object_get(err, "code")), code);
	ck_assert(json_is_string(json_object_get(err, "message")));
	json_decref(r);
}

/* Reply is ok and its result is the echo {"i": i}. */
static void
assert_echo_i(json_t *r, int i)
{
	ck_assert_ptr_nonnull(r);
	ck_assert(json_is_true(json_object_get(r, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(r, "result"), "i")), i);
	json_decref(r);
}

static json_t *
call(int fd, const char *cmd, json_t *args)
{
	json_t *r = NULL;
	int rc = ls_ctl_call(fd, cmd, args, TMO, &r);

	ck_assert_msg(rc == 0, "ls_ctl_call %s: %s", cmd, strerror(-rc));
	ck_assert_ptr_nonnull(r);
	return r;
}

static void
call_echo(int fd, int i)
{
	json_t *args = json_pack("{s:i}", "i", i);

	assert_echo_i(call(fd, "echo", args), i);
	json_decref(args);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* Tests                                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_echo)
{
	struct srv s;
	json_t *args, *r;
	int fd;

	srv_start(&s, 4, 65536);
	fd = conn(s.path);

	args = json_pack("{s:i, s:s, s:[i,i]}", "a", 1, "b", "two", "c", 3, 4);
	r = call(fd, "echo", args);
	ck_assert(json_is_true(json_object_get(r, "ok")));
	ck_assert(json_equal(json_object_get(r, "result"), args));
	json_decref(r);
	json_decref(args);

	/* No args: the callback sees an empty object. */
	r = call(fd, "echo", NULL);
	ck_assert(json_is_object(json_object_get(r, "result")));
	ck_assert_int_eq(json_object_size(json_object_get(r, "result")), 0);
	json_decref(r);

	/* "args": null is the same as absent. */
	raw_send(fd, "{\"cmd\":\"echo\",\"args\":null}\n");
	r = raw_reply(fd, TMO);
	ck_assert(json_is_true(json_object_get(r, "ok")));
	ck_assert_int_eq(json_object_size(json_object_get(r, "result")), 0);
	json_decref(r);

	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_help)
{
	struct srv s;
	json_t *r, *list, *e;
	const char *prev = "";
	size_t i, j;
	int fd;

	srv_start(&s, 4, 65536);
	fd = conn(s.path);
	r = call(fd, "help", NULL);
	ck_assert(json_is_true(json_object_get(r, "ok")));
	list = json_object_get(r, "result");
	ck_assert(json_is_array(list));
	/* Every registered command plus "help" itself. */
	ck_assert_uint_eq(json_array_size(list), N_TEST_CMDS + 1);

	json_array_foreach(list, i, e) {
		const char *name = json_string_value(json_object_get(e, "cmd"));

		ck_assert_ptr_nonnull(name);
		ck_assert(json_is_string(json_object_get(e, "usage")));
		ck_assert(json_is_string(json_object_get(e, "help")));
		ck_assert_msg(strcmp(prev, name) < 0, "help not sorted");
		prev = name;
	}
	for (j = 0; j < N_TEST_CMDS; j++) {
		bool found = false;

		json_array_foreach(list, i, e) {
			if (strcmp(json_string_value(json_object_get(e, "cmd")),
				   test_cmds[j].name) != 0)
				continue;
			found = true;
			ck_assert_str_eq(json_string_value(
				json_object_get(e, "usage")), test_cmds[j].usage);
			ck_assert_str_eq(json_string_value(
				json_object_get(e, "help")), test_cmds[j].help);
		}
		ck_assert_msg(found, "help lacks %s", test_cmds[j].name);
	}
	json_decref(r);
	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_noreply_and_error)
{
	struct srv s;
	json_t *r, *err;
	int fd;

	srv_start(&s, 4, 65536);
	fd = conn(s.path);

	assert_error(call(fd, "noreply", NULL), LS_CTL_E_INTERNAL);

	r = call(fd, "fail", NULL);
	err = json_object_get(r, "error");
	ck_assert_str_eq(json_string_value(json_object_get(err, "code")),
			 LS_CTL_E_BAD_ARGS);
	ck_assert_str_eq(json_string_value(json_object_get(err, "message")),
			 "nope 42");
	json_decref(r);

	/* The ignored second reply of "fail" must not be waiting in the
	 * stream: the next call gets its own answer. */
	call_echo(fd, 7);
	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_bad_requests)
{
	struct srv s;
	int fd;

	srv_start(&s, 4, 65536);
	fd = conn(s.path);

	raw_send(fd, "this is not json\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_JSON);
	raw_send(fd, "{\"cmd\": \"echo\"\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_JSON);
	raw_send(fd, "[1, 2, 3]\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "\"echo\"\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "{}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "{\"args\": {}}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "{\"cmd\": 5}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "{\"cmd\": \"echo\", \"args\": [1]}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "{\"cmd\": \"echo\", \"args\": \"x\"}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_BAD_REQUEST);
	raw_send(fd, "{\"cmd\": \"no.such\"}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_UNKNOWN);

	/* Still the same connection, still working. */
	call_echo(fd, 1);
	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_too_large)
{
	struct srv s;
	char big[1200], exact[257];
	int fd, i;

	srv_start(&s, 4, 256);
	fd = conn(s.path);

	/* Oversize line in one write, followed by a good request. */
	memset(big, 'x', sizeof(big) - 2);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	raw_send(fd, big);
	raw_send(fd, "{\"cmd\":\"echo\",\"args\":{\"i\":1}}\n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_TOO_LARGE);
	assert_echo_i(raw_reply(fd, TMO), 1);

	/* Oversize line dribbled in pieces: one too_large, sent as soon as
	 * the limit is passed, then the rest is discarded quietly. */
	big[sizeof(big) - 2] = '\0';
	for (i = 0; i < 4; i++) {
		raw_send(fd, big);
		sleep_ms(20);
	}
	assert_error(raw_reply(fd, TMO), LS_CTL_E_TOO_LARGE);
	raw_send(fd, "tail of the big line\n");
	call_echo(fd, 2);

	/* Exactly max_request bytes (plus CRLF) is accepted. */
	memset(exact, ' ', 256);
	memcpy(exact, "{\"cmd\":\"echo\",\"args\":{\"i\":3}}", 29);
	exact[256] = '\0';
	raw_send(fd, exact);
	raw_send(fd, "\r\n");
	assert_echo_i(raw_reply(fd, TMO), 3);
	/* One byte more is not. */
	raw_send(fd, exact);
	raw_send(fd, " \n");
	assert_error(raw_reply(fd, TMO), LS_CTL_E_TOO_LARGE);

	call_echo(fd, 4);
	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_pipelined)
{
	struct srv s;
	int fd, i;

	srv_start(&s, 4, 65536);
	fd = conn(s.path);

	/* Several requests in one write, CRLF and blank lines mixed in. */
	raw_send(fd, "{\"cmd\":\"echo\",\"args\":{\"i\":0}}\n"
		     "\n"
		     "{\"cmd\":\"echo\",\"args\":{\"i\":1}}\r\n"
		     "\r\n"
		     "{\"cmd\":\"nope\"}\n"
		     "{\"cmd\":\"echo\",\"args\":{\"i\":2}}\n"
		     "{\"cmd\":\"noreply\"}\n"
		     "{\"cmd\":\"echo\",\"args\":{\"i\":3}}\n");
	assert_echo_i(raw_reply(fd, TMO), 0);
	assert_echo_i(raw_reply(fd, TMO), 1);
	assert_error(raw_reply(fd, TMO), LS_CTL_E_UNKNOWN);
	assert_echo_i(raw_reply(fd, TMO), 2);
	assert_error(raw_reply(fd, TMO), LS_CTL_E_INTERNAL);
	assert_echo_i(raw_reply(fd, TMO), 3);
	/* Blank lines got no reply. */
	ck_assert_ptr_null(raw_reply(fd, 100));

	/* Many at once, each one answered, in order. */
	{
		char *buf = malloc(200 * 40), *p = buf;

		for (i = 0; i < 200; i++)
			p += sprintf(p, "{\"cmd\":\"echo\",\"args\":{\"i\":%d}}\n",
				     i);
		raw_send(fd, buf);
		free(buf);
	}
	for (i = 0; i < 200; i++)
		assert_echo_i(raw_reply(fd, TMO), i);

	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_two_clients)
{
	struct srv s;
	int a, b;

	srv_start(&s, 4, 65536);
	a = conn(s.path);
	b = conn(s.path);

	call_echo(a, 1);
	call_echo(b, 2);
	/* Half a request from a must not hold up b. */
	raw_send(a, "{\"cmd\":\"echo\",");
	call_echo(b, 3);
	raw_send(a, "\"args\":{\"i\":4}}\n");
	assert_echo_i(raw_reply(a, TMO), 4);
	call_echo(a, 5);
	call_echo(b, 6);

	close(a);
	close(b);
	srv_stop(&s);
}
END_TEST

START_TEST(test_busy)
{
	struct srv s;
	json_t *r = NULL;
	int a, b, c, d, rc, tries;

	srv_start(&s, 2, 65536);
	a = conn(s.path);
	b = conn(s.path);
	/* A reply proves the server has accepted both. */
	call_echo(a, 1);
	call_echo(b, 2);

	c = conn(s.path);
	rc = ls_ctl_call(c, "echo", NULL, TMO, &r);
	ck_assert_int_eq(rc, 0);
	assert_error(r, LS_CTL_E_BUSY);
	ck_assert(raw_closed(c, TMO));
	close(c);

	/* The others are unaffected. */
	call_echo(a, 3);
	call_echo(b, 4);

	/* Once a slot frees up, a new client gets in. */
	close(a);
	for (tries = 0; tries < 200; tries++) {
		d = conn(s.path);
		rc = ls_ctl_call(d, "echo", NULL, TMO, &r);
		if (rc == 0 && json_is_true(json_object_get(r, "ok")))
			break;
		json_decref(r);
		r = NULL;
		close(d);
		d = -1;
		sleep_ms(10);
	}
	ck_assert_int_ge(d, 0);
	json_decref(r);
	close(d);
	close(b);
	srv_stop(&s);
}
END_TEST

START_TEST(test_slow_reader)
{
	struct srv s;
	json_t *args, *r;
	int slow, fast, i;
	const size_t n = 3u << 20;

	srv_start(&s, 4, 65536);
	slow = conn(s.path);
	fast = conn(s.path);

	/* Replies much larger than a socket buffer, not read for a while:
	 * the server must keep serving others meanwhile. */
	raw_send(slow, "{\"cmd\":\"big\",\"args\":{\"n\":3145728}}\n"
		       "{\"cmd\":\"big\",\"args\":{\"n\":3145728}}\n");
	sleep_ms(100);
	for (i = 0; i < 10; i++)
		call_echo(fast, i);

	for (i = 0; i < 2; i++) {
		r = raw_reply(slow, TMO);
		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(json_string_length(json_object_get(r, "result")),
				  n);
		json_decref(r);
	}
	call_echo(slow, 99);

	/* A reply beyond the output cap drops that client, only that one. */
	args = json_pack("{s:i}", "n", 17 << 20);
	r = NULL;
	ck_assert_int_eq(ls_ctl_call(slow, "big", args, TMO, &r), -ECONNRESET);
	json_decref(args);
	call_echo(fast, 100);

	close(slow);
	close(fast);
	srv_stop(&s);
}
END_TEST

START_TEST(test_half_close)
{
	struct srv s;
	int fd;

	srv_start(&s, 4, 65536);
	fd = conn(s.path);
	/* No trailing newline, then EOF: still a request, still answered. */
	raw_send(fd, "{\"cmd\":\"echo\",\"args\":{\"i\":1}}\n"
		     "{\"cmd\":\"echo\",\"args\":{\"i\":2}}");
	shutdown(fd, SHUT_WR);
	assert_echo_i(raw_reply(fd, TMO), 1);
	assert_echo_i(raw_reply(fd, TMO), 2);
	ck_assert(raw_closed(fd, TMO));
	close(fd);
	srv_stop(&s);
}
END_TEST

/* No thread: the test thread alternates client I/O and ls_ctl_poll(). */
START_TEST(test_poll_inline)
{
	struct srv s;
	json_t *r;
	int fd, served = 0, i;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);
	s.ctl = make_ctl(s.path, 4, 65536, 0600);

	ck_assert_int_eq(ls_ctl_poll(s.ctl, 0), 0);
	ck_assert_uint_eq(ls_ctl_n_clients(s.ctl), 0);
	fd = conn(s.path);
	ck_assert_int_eq(ls_ctl_poll(s.ctl, 100), 0); /* accepts */
	ck_assert_uint_eq(ls_ctl_n_clients(s.ctl), 1);

	raw_send(fd, "{\"cmd\":\"echo\",\"args\":{\"i\":1}}\n{\"cmd\":\"x\"}\n");
	for (i = 0; i < 50 && served < 2; i++)
		served += ls_ctl_poll(s.ctl, 10);
	ck_assert_int_eq(served, 2);
	assert_echo_i(raw_reply(fd, TMO), 1);
	assert_error(raw_reply(fd, TMO), LS_CTL_E_UNKNOWN);

	/* Nothing pending: a zero timeout returns at once with 0. */
	ck_assert_int_eq(ls_ctl_poll(s.ctl, 0), 0);

	close(fd);
	for (i = 0; i < 50 && ls_ctl_n_clients(s.ctl) > 0; i++)
		ls_ctl_poll(s.ctl, 10);
	ck_assert_uint_eq(ls_ctl_n_clients(s.ctl), 0);

	/* A reply sitting in the queue when the server is freed is fine. */
	fd = conn(s.path);
	raw_send(fd, "{\"cmd\":\"help\"}\n");
	for (i = 0; i < 50 && served < 3; i++)
		served += ls_ctl_poll(s.ctl, 10);
	r = raw_reply(fd, TMO);
	ck_assert(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	srv_stop(&s);
	ck_assert(raw_closed(fd, TMO));
	close(fd);
}
END_TEST

START_TEST(test_mode)
{
	static const mode_t modes[] = { 0600, 0640, 0660, 0666 };
	static const mode_t umasks[] = { 0, 022, 077 };
	size_t i, j;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		for (j = 0; j < sizeof(umasks) / sizeof(umasks[0]); j++) {
			struct srv s;
			struct stat st;
			mode_t old;

			memset(&s, 0, sizeof(s));
			tmpdir(&s);
			old = umask(umasks[j]);
			s.ctl = make_ctl(s.path, 4, 65536, modes[i]);
			/* The process umask is left as it was. */
			ck_assert_uint_eq(umask(old), umasks[j]);
			ck_assert_int_eq(stat(s.path, &st), 0);
			ck_assert(S_ISSOCK(st.st_mode));
			ck_assert_uint_eq(st.st_mode & 07777, modes[i]);
			srv_stop(&s);
		}
	}
}
END_TEST

/* Leave a socket file with nobody listening on it, as a crash would. */
static void
make_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	strcpy(sun.sun_path, path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
}

START_TEST(test_stale_replaced)
{
	struct srv s;
	struct stat st;
	int fd;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);
	make_stale(s.path);
	ck_assert_int_eq(stat(s.path, &st), 0);
	ck_assert_int_eq(ls_ctl_connect(s.path), -ECONNREFUSED);

	s.ctl = make_ctl(s.path, 4, 65536, 0660);
	ck_assert_int_eq(pthread_create(&s.thread, NULL, srv_loop, &s), 0);
	s.running = true;
	fd = conn(s.path);
	call_echo(fd, 1);
	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_not_a_socket)
{
	struct ls_ctl_params p = { .mode = 0600, .max_clients = 1,
				   .max_request = 1024 };
	struct srv s;
	FILE *f;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);
	f = fopen(s.path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	p.path = s.path;
	errno = 0;
	ck_assert_ptr_null(ls_ctl_create(&p));
	ck_assert_int_eq(errno, EEXIST);
	/* And it is left alone. */
	ck_assert_int_eq(access(s.path, F_OK), 0);
	unlink(s.path);
	rmdir(s.dir);
}
END_TEST

START_TEST(test_live_in_use)
{
	struct srv s;
	struct ls_ctl_params p = { .mode = 0660, .max_clients = 4,
				   .max_request = 1024 };
	int fd;

	srv_start(&s, 4, 65536);
	p.path = s.path;
	errno = 0;
	ck_assert_ptr_null(ls_ctl_create(&p));
	ck_assert_int_eq(errno, EADDRINUSE);

	/* The live server keeps its socket and keeps answering. */
	ck_assert_int_eq(access(s.path, F_OK), 0);
	fd = conn(s.path);
	call_echo(fd, 1);
	close(fd);
	srv_stop(&s);
}
END_TEST

START_TEST(test_free_unlinks)
{
	struct srv s;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);
	s.ctl = make_ctl(s.path, 4, 65536, 0660);
	ck_assert_int_eq(access(s.path, F_OK), 0);
	ls_ctl_free(s.ctl);
	ck_assert_int_eq(access(s.path, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(ls_ctl_connect(s.path), -ENOENT);
	ls_ctl_free(NULL);
	rmdir(s.dir);
}
END_TEST

START_TEST(test_create_errors)
{
	struct ls_ctl_params p = { .mode = 0660, .max_clients = 4,
				   .max_request = 1024 };
	char longpath[200];

	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	p.path = longpath;
	errno = 0;
	ck_assert_ptr_null(ls_ctl_create(&p));
	ck_assert_int_eq(errno, ENAMETOOLONG);

	p.path = "/nonexistent-dir-for-ls-ctl/ctl.sock";
	ck_assert_ptr_null(ls_ctl_create(&p));
	ck_assert_int_eq(errno, ENOENT);

	ck_assert_ptr_null(ls_ctl_create(NULL));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_register_errors)
{
	struct srv s;
	char name[32];
	int i, rc = 0;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);
	s.ctl = make_ctl(s.path, 4, 65536, 0660);
	ck_assert_int_eq(ls_ctl_register(s.ctl, "echo", "", "", cmd_echo, NULL),
			 -EEXIST);
	ck_assert_int_eq(ls_ctl_register(s.ctl, "help", "", "", cmd_echo, NULL),
			 -EEXIST);
	ck_assert_int_eq(ls_ctl_register(s.ctl, "x", "", "", NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(ls_ctl_register(s.ctl, "", "", "", cmd_echo, NULL),
			 -EINVAL);
	ck_assert_int_eq(ls_ctl_register(s.ctl, "a b", "", "", cmd_echo, NULL),
			 -EINVAL);
	ck_assert_int_eq(ls_ctl_register(NULL, "y", "", "", cmd_echo, NULL),
			 -EINVAL);
	/* NULL usage/help are allowed and become "". */
	ck_assert_int_eq(ls_ctl_register(s.ctl, "z", NULL, NULL, cmd_echo,
					 NULL), 0);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "fill.%d", i);
		rc = ls_ctl_register(s.ctl, name, "", "", cmd_echo, NULL);
		if (rc != 0)
			break;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_gt(i, 50);
	srv_stop(&s);
}
END_TEST

START_TEST(test_client_errors)
{
	struct srv s;
	json_t *r = NULL;
	int sv[2], fd;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);

	/* No socket file. */
	ck_assert_int_eq(ls_ctl_connect(s.path), -ENOENT);
	/* A socket file nobody listens on. */
	make_stale(s.path);
	ck_assert_int_eq(ls_ctl_connect(s.path), -ECONNREFUSED);
	unlink(s.path);

	/* A server that is never polled: connect works (backlog), the call
	 * times out. */
	s.ctl = make_ctl(s.path, 4, 65536, 0660);
	fd = conn(s.path);
	ck_assert_int_eq(ls_ctl_call(fd, "echo", NULL, 100, &r), -ETIMEDOUT);
	ck_assert_ptr_null(r);
	close(fd);
	srv_stop(&s);

	/* Malformed replies. */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	raw_send(sv[1], "this is not json\n");
	ck_assert_int_eq(ls_ctl_call(sv[0], "x", NULL, TMO, &r), -EBADMSG);
	raw_send(sv[1], "[1]\n");
	ck_assert_int_eq(ls_ctl_call(sv[0], "x", NULL, TMO, &r), -EBADMSG);
	raw_send(sv[1], "{\"result\":1}\n");
	ck_assert_int_eq(ls_ctl_call(sv[0], "x", NULL, TMO, &r), -EBADMSG);
	/* Two replies in one write: each call takes exactly one. */
	raw_send(sv[1], "{\"ok\":true,\"result\":1}\n{\"ok\":true,\"result\":2}\n");
	ck_assert_int_eq(ls_ctl_call(sv[0], "x", NULL, TMO, &r), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "result")), 1);
	json_decref(r);
	ck_assert_int_eq(ls_ctl_call(sv[0], "x", NULL, TMO, &r), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "result")), 2);
	json_decref(r);
	/* Args must be an object. */
	r = json_integer(1);
	{
		json_t *out = NULL;

		ck_assert_int_eq(ls_ctl_call(sv[0], "x", r, TMO, &out), -EINVAL);
	}
	json_decref(r);
	/* The peer goes away without answering. */
	raw_send(sv[1], "{\"ok\":tr");
	close(sv[1]);
	ck_assert_int_eq(ls_ctl_call(sv[0], "x", NULL, TMO, &r), -ECONNRESET);
	close(sv[0]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Argument helpers and the allowed-key check                         */
/* ------------------------------------------------------------------ */

static atomic_int args_calls;

/* {s, [u], [x]} -> {"s", "u", "x", "got"}: got = 2 * (u given) + (x given). */
static void
cmd_args(struct ls_ctl_req *req, json_t *args, void *aux)
{
	const char *str;
	uint64_t u = 0;
	double x = 0;
	int hu, hx;

	(void)aux;
	atomic_fetch_add(&args_calls, 1);
	if ((hu = ls_ctl_arg_uint(req, args, "u", 1, 10, &u)) < 0 ||
	    (hx = ls_ctl_arg_num(req, args, "x", 0.5, 2, &x)) < 0 ||
	    ls_ctl_arg_str(req, args, "s", "a name", &str) < 0)
		return;
	ls_ctl_reply_ok(req, json_pack("{s:s, s:I, s:f, s:i}", "s", str, "u", (json_int_t)u,
				       "x", x, "got", 2 * hu + hx));
}

/* The reply is a bad_args error saying exactly msg. */
static void
assert_bad_args(json_t *r, const char *msg)
{
	json_t *err = json_object_get(r, "error");

	ck_assert(json_is_false(json_object_get(r, "ok")));
	ck_assert_str_eq(json_string_value(json_object_get(err, "code")), LS_CTL_E_BAD_ARGS);
	ck_assert_str_eq(json_string_value(json_object_get(err, "message")), msg);
	json_decref(r);
}

static json_t *
call_str(int fd, const char *cmd, const char *args_json)
{
	json_t *args = json_loads(args_json, 0, NULL), *r;

	ck_assert_ptr_nonnull(args);
	r = call(fd, cmd, args);
	json_decref(args);
	return r;
}

START_TEST(test_arg_helpers)
{
	struct srv s;
	json_t *r, *res;
	int fd;

	memset(&s, 0, sizeof(s));
	tmpdir(&s);
	s.ctl = make_ctl(s.path, 4, 65536, 0660);
	ck_assert_int_eq(ls_ctl_register_keys(s.ctl, "args", "{s, [u], [x]}", "", "s  u x",
					      cmd_args, NULL), 0);
	ck_assert_int_eq(ls_ctl_register_keys(s.ctl, "none", "", "", "", cmd_echo, NULL), 0);
	ck_assert_int_eq(ls_ctl_register_keys(s.ctl, "args", "", "", "s", cmd_args, NULL),
			 -EEXIST);
	ck_assert_int_eq(ls_ctl_register_keys(s.ctl, "nocb", "", "", "s", NULL, NULL), -EINVAL);
	ck_assert_int_eq(pthread_create(&s.thread, NULL, srv_loop, &s), 0);
	s.running = true;
	fd = conn(s.path);

	r = call_str(fd, "args", "{\"s\": \"hi\", \"u\": 3, \"x\": 1.5}");
	ck_assert(json_is_true(json_object_get(r, "ok")));
	res = json_object_get(r, "result");
	ck_assert_str_eq(json_string_value(json_object_get(res, "s")), "hi");
	ck_assert_int_eq(json_integer_value(json_object_get(res, "u")), 3);
	ck_assert(json_real_value(json_object_get(res, "x")) == 1.5);
	ck_assert_int_eq(json_integer_value(json_object_get(res, "got")), 3);
	json_decref(r);
	/* absent optional keys leave their defaults; an integer is a number */
	r = call_str(fd, "args", "{\"s\": \"\", \"x\": 2}");
	res = json_object_get(r, "result");
	ck_assert_int_eq(json_integer_value(json_object_get(res, "u")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(res, "got")), 1);
	json_decref(r);

	assert_bad_args(call_str(fd, "args", "{\"s\": \"hi\", \"u\": 11}"),
			"args.u: expected an integer between 1 and 10");
	assert_bad_args(call_str(fd, "args", "{\"s\": \"hi\", \"u\": 1.0}"),
			"args.u: expected an integer between 1 and 10");
	assert_bad_args(call_str(fd, "args", "{\"s\": \"hi\", \"x\": \"1\"}"),
			"args.x: expected a number in 0.5..2");
	assert_bad_args(call_str(fd, "args", "{\"s\": \"hi\", \"x\": 0.25}"),
			"args.x: expected a number in 0.5..2");
	assert_bad_args(call_str(fd, "args", "{}"), "args.s: required string (a name)");
	assert_bad_args(call_str(fd, "args", "{\"s\": 1}"), "args.s: required string (a name)");

	/* Unknown keys are refused before the callback runs: not even once. */
	atomic_store(&args_calls, 0);
	assert_bad_args(call_str(fd, "args", "{\"s\": \"hi\", \"uu\": 1}"),
			"args.uu: unknown argument");
	assert_bad_args(call_str(fd, "args", "{\"s\": \"hi\", \"\": 1}"),
			"args.: unknown argument");
	assert_bad_args(call_str(fd, "none", "{\"a\": 1}"), "args.a: unknown argument");
	ck_assert_int_eq(atomic_load(&args_calls), 0);
	/* "" allows no key, but no key at all is fine; NULL (echo) allows any */
	r = call_str(fd, "none", "{}");
	ck_assert(json_is_true(json_object_get(r, "ok")));
	json_decref(r);
	call_echo(fd, 7);
	close(fd);
	srv_stop(&s);
}
END_TEST

static Suite *
ctl_suite(void)
{
	Suite *s = suite_create("ctl");
	TCase *tc = tcase_create("server");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_echo);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_noreply_and_error);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_too_large);
	tcase_add_test(tc, test_pipelined);
	tcase_add_test(tc, test_two_clients);
	tcase_add_test(tc, test_busy);
	tcase_add_test(tc, test_slow_reader);
	tcase_add_test(tc, test_half_close);
	tcase_add_test(tc, test_poll_inline);
	tcase_add_test(tc, test_mode);
	tcase_add_test(tc, test_stale_replaced);
	tcase_add_test(tc, test_not_a_socket);
	tcase_add_test(tc, test_live_in_use);
	tcase_add_test(tc, test_free_unlinks);
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_register_errors);
	tcase_add_test(tc, test_client_errors);
	tcase_add_test(tc, test_arg_helpers);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(ctl_suite)
