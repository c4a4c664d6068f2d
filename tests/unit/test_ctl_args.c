/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl tests, the errors and the argument helpers: ls_ctl_create() and
 * ls_ctl_register() refusing what they must, the client's ls_ctl_connect()
 * and ls_ctl_call() errors (no socket, stale socket, timeout, malformed
 * replies, peer gone), and ls_ctl_arg_*() with the allowed-key check of
 * ls_ctl_register_keys().
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "test_ctl.h"

/* ------------------------------------------------------------------ */
/* Create, register and client errors                                 */
/* ------------------------------------------------------------------ */

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

void
ctl_args_tests(TCase *tc)
{
	tcase_add_test(tc, test_create_errors);
	tcase_add_test(tc, test_register_errors);
	tcase_add_test(tc, test_client_errors);
	tcase_add_test(tc, test_arg_helpers);
}
