/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Argument helpers for command callbacks (ls_ctl.h): read one key of a
 * request's args, check its type and range, and on a bad value reply a
 * bad_args error that names the key and says what was expected, so every
 * command words its argument errors alike. Which keys a command takes at
 * all is checked by the server before the callback (ls_ctl_register_keys).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "ls_ctl.h"

/*
 * The end of every optional-argument helper: 0 when the key is absent, 1
 * when its value v is fine (ok), else the bad_args error replied (fmt says
 * what was expected) and -1.
 */
static int __attribute__((format(printf, 4, 5)))
arg_verdict(struct ls_ctl_req *req, const json_t *v, bool ok, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	int rc;

	if (v == NULL)
		return 0;
	if (ok)
		return 1;
	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "%s", rc < 0 ? "" : msg);
	if (rc >= 0)
		free(msg);
	return -1;
}

int
ls_ctl_arg_uint(struct ls_ctl_req *req, json_t *args, const char *key,
		uint64_t lo, uint64_t hi, uint64_t *out)
{
	json_t *v = json_object_get(args, key);
	json_int_t i = json_integer_value(v);
	int rc = arg_verdict(req, v, json_is_integer(v) && i >= (json_int_t)lo &&
			     i <= (json_int_t)hi,
			     "args.%s: expected an integer between %" PRIu64 " and %" PRIu64,
			     key, lo, hi);

	if (rc > 0)
		*out = (uint64_t)i;
	return rc;
}

int
ls_ctl_arg_num(struct ls_ctl_req *req, json_t *args, const char *key,
	       double lo, double hi, double *out)
{
	json_t *v = json_object_get(args, key);
	double d = json_number_value(v);
	int rc = arg_verdict(req, v, json_is_number(v) && d >= lo && d <= hi,
			     "args.%s: expected a number in %g..%g", key, lo, hi);

	if (rc > 0)
		*out = d;
	return rc;
}

int
ls_ctl_arg_str(struct ls_ctl_req *req, json_t *args, const char *key,
	       const char *what, const char **out)
{
	const char *s = json_string_value(json_object_get(args, key));

	if (s == NULL) {
		ls_ctl_reply_error(req, LS_CTL_E_BAD_ARGS, "args.%s: required string (%s)", key, what);
		return -1;
	}
	*out = s;
	return 1;
}
