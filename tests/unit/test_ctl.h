/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lib/ctl suite's files share: the test commands (echo, noreply,
 * fail, big), the server harness (a struct srv in its own mkdtemp()
 * directory, polled on a background thread), the client helpers that
 * connect, send raw bytes and call, a stale-socket maker, and the function
 * through which test_ctl_args.c (create, register and client errors,
 * argument helpers and the allowed-key check) hands its tests to
 * ctl_suite() in test_ctl.c (the server itself).
 */
#ifndef TEST_CTL_H
#define TEST_CTL_H

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "ls_ctl.h"
#include "ls_test.h"

#define TMO 5000 /* ms: generous, a passing test never waits this long */

/* ------------------------------------------------------------------ */
/* Test commands                                                      */
/* ------------------------------------------------------------------ */

static inline void
cmd_echo(struct ls_ctl_req *req, json_t *args, void *aux)
{
	(void)aux;
	ls_ctl_reply_ok(req, json_deep_copy(args));
}

static inline void
cmd_noreply(struct ls_ctl_req *req, json_t *args, void *aux)
{
	(void)req;
	(void)args;
	(void)aux;
}

static inline void
cmd_fail(struct ls_ctl_req *req, json_t *args, void *aux)
{
	(void)args;
	(void)aux;
	ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "nope %d", 42);
	/* A second reply must be ignored, not sent. */
	ls_ctl_reply_ok(req, json_string("late"));
}

/* {"n": N} -> a string of N 'x'. */
static inline void
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

static inline void
tmpdir(struct srv *s)
{
	snprintf(s->dir, sizeof(s->dir), "/tmp/ls_ctl_test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(s->dir));
	snprintf(s->path, sizeof(s->path), "%s/ctl.sock", s->dir);
}

static inline struct ls_ctl *
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

static inline void *
srv_loop(void *arg)
{
	struct srv *s = arg;

	while (!atomic_load(&s->stop))
		ck_assert_int_ge(ls_ctl_poll(s->ctl, 10), 0);
	return NULL;
}

/* A server with an idle time-out (ms; 0: none). */
static inline void
srv_start_idle(struct srv *s, unsigned int max_clients, size_t max_request,
	       unsigned int idle_ms)
{
	struct ls_ctl_params p = {.mode = 0660, .max_clients = max_clients,
				  .max_request = max_request, .idle_timeout_ms = idle_ms};

	memset(s, 0, sizeof(*s));
	tmpdir(s);
	p.path = s->path;
	s->ctl = ls_ctl_create(&p);
	ck_assert_msg(s->ctl != NULL, "ls_ctl_create: %s", strerror(errno));
	for (unsigned int i = 0; i < N_TEST_CMDS; i++)
		ck_assert_int_eq(ls_ctl_register(s->ctl, test_cmds[i].name, test_cmds[i].usage,
						 test_cmds[i].help, test_cmds[i].cb, NULL), 0);
	atomic_store(&s->stop, 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, srv_loop, s), 0);
	s->running = true;
}

static inline void
srv_start(struct srv *s, unsigned int max_clients, size_t max_request)
{
	memset(s, 0, sizeof(*s));
	tmpdir(s);
	s->ctl = make_ctl(s->path, max_clients, max_request, 0660);
	atomic_store(&s->stop, 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, srv_loop, s), 0);
	s->running = true;
}

static inline void
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

static inline int
conn(const char *path)
{
	int fd = ls_ctl_connect(path);

	ck_assert_msg(fd >= 0, "connect %s: %s", path, strerror(-fd));
	return fd;
}

static inline void
raw_send(int fd, const char *s)
{
	size_t len = strlen(s), off = 0;

	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);

		ck_assert_msg(n > 0, "send: %s", strerror(errno));
		off += (size_t)n;
	}
}

/* Reply is ok and its result is the echo {"i": i}. */
static inline void
assert_echo_i(json_t *r, int i)
{
	ck_assert_ptr_nonnull(r);
	ck_assert(json_is_true(json_object_get(r, "ok")));
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(r, "result"), "i")), i);
	json_decref(r);
}

static inline json_t *
call(int fd, const char *cmd, json_t *args)
{
	json_t *r = NULL;
	int rc = ls_ctl_call(fd, cmd, args, TMO, &r);

	ck_assert_msg(rc == 0, "ls_ctl_call %s: %s", cmd, strerror(-rc));
	ck_assert_ptr_nonnull(r);
	return r;
}

static inline void
call_echo(int fd, int i)
{
	json_t *args = json_pack("{s:i}", "i", i);

	assert_echo_i(call(fd, "echo", args), i);
	json_decref(args);
}

/* Leave a socket file with nobody listening on it, as a crash would. */
static inline void
make_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	strcpy(sun.sun_path, path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);
}

/* Adds the error and argument-helper tests to the server tcase. */
void ctl_args_tests(TCase *tc);

#endif /* TEST_CTL_H */
