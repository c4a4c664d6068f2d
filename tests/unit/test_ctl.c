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
 * The create/register/client-error and argument-helper tests are in
 * test_ctl_args.c, the shared commands, harness and helpers in test_ctl.h.
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

#include "test_ctl.h"

/* ------------------------------------------------------------------ */
/* Raw replies                                                        */
/* ------------------------------------------------------------------ */

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

/* Regression (issue 27 L5): with every slot taken by idle clients, the
 * operator was refused ("busy"). Now the client active longest ago gives
 * way; the others are unaffected. */
START_TEST(test_full_evicts_oldest_idle)
{
	struct srv s;
	int a, b, c;

	srv_start(&s, 2, 65536);
	a = conn(s.path);
	b = conn(s.path);
	/* A reply proves the server has accepted both; a is now the older. */
	call_echo(a, 1);
	call_echo(b, 2);

	c = conn(s.path);
	call_echo(c, 3);
	ck_assert(raw_closed(a, TMO));
	call_echo(b, 4);
	call_echo(c, 5);
	close(a);
	close(b);
	close(c);
	srv_stop(&s);
}
END_TEST

/* Idle clients and clients dribbling half a line are dropped after the
 * idle time-out; one that keeps making requests is not. */
START_TEST(test_idle_timeout)
{
	struct srv s;
	int idle, half, busy;

	srv_start_idle(&s, 4, 65536, 300);
	idle = conn(s.path);
	half = conn(s.path);
	busy = conn(s.path);
	for (int i = 0; i < 8; i++) {
		/* bytes, but never a whole request (EPIPE once it is dropped) */
		(void)send(half, " ", 1, MSG_NOSIGNAL);
		call_echo(busy, i);
		sleep_ms(100);
	}
	/* 800 ms > 300 ms: both gone (within TMO), busy still served */
	ck_assert(raw_closed(idle, TMO));
	ck_assert(raw_closed(half, TMO));
	call_echo(busy, 99);
	close(idle);
	close(half);
	close(busy);
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
	tcase_add_test(tc, test_full_evicts_oldest_idle);
	tcase_add_test(tc, test_idle_timeout);
	tcase_add_test(tc, test_slow_reader);
	tcase_add_test(tc, test_half_close);
	tcase_add_test(tc, test_poll_inline);
	tcase_add_test(tc, test_mode);
	tcase_add_test(tc, test_stale_replaced);
	tcase_add_test(tc, test_not_a_socket);
	tcase_add_test(tc, test_live_in_use);
	tcase_add_test(tc, test_free_unlinks);
	ctl_args_tests(tc);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(ctl_suite)
