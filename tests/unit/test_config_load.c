/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The config suite's loaders (test_config.h): config text with ' for " is
 * written to the test's tmpdir and loaded; a bad file must give one
 * "FILE: KEY: ...reason..." line and leave the config untouched.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ls_config.h"
#include "ls_test.h"
#include "test_config.h"

int
config_load_text(const char *text, struct ls_config *cfg, char *err, size_t errlen,
	  char *path, size_t plen)
{
	ls_test_write_json("t.json", text, path, plen);
	return ls_config_load(path, cfg, err, errlen);
}

/* True when every byte of the struct is zero (config untouched on error). */
bool
config_all_zero(const struct ls_config *cfg)
{
	const unsigned char *p = (const unsigned char *)cfg;

	for (size_t i = 0; i < sizeof(*cfg); i++)
		if (p[i] != 0)
			return false;
	return true;
}

/*
 * Load text that must fail; check the message is exactly one line of the
 * shape "PATH: KEY: ..." and contains reason.
 */
void
config_expect_bad(const char *text, const char *key, const char *reason, int line)
{
	char path[512], err[LS_ERR_LEN], want[700];
	struct ls_config cfg;
	int rc;

	memset(&cfg, 0xa5, sizeof(cfg));
	rc = config_load_text(text, &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_msg(rc == -EINVAL, "line %d: rc %d, err \"%s\"", line, rc, err);
	snprintf(want, sizeof(want), "%s: %s: ", path, key);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
		      "line %d: \"%s\" does not start with \"%s\"", line, err, want);
	ck_assert_msg(strstr(err + strlen(want), reason) != NULL,
		      "line %d: \"%s\" lacks \"%s\"", line, err, reason);
	ck_assert_msg(strchr(err, '\n') == NULL, "line %d: multi-line", line);
	ck_assert_msg(config_all_zero(&cfg), "line %d: cfg touched on error", line);
}

/* Exact message match: "PATH: " + rest. */
void
config_expect_exact(const char *text, const char *rest, int line)
{
	char path[512], err[LS_ERR_LEN], want[700];
	struct ls_config cfg;
	int rc;

	rc = config_load_text(text, &cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_msg(rc == -EINVAL, "line %d: rc %d", line, rc);
	snprintf(want, sizeof(want), "%s: %s", path, rest);
	ck_assert_msg(strcmp(err, want) == 0, "line %d: got \"%s\", want \"%s\"",
		      line, err, want);
}

void
config_load_good(const char *text, struct ls_config *cfg)
{
	char path[512], err[LS_ERR_LEN];
	int rc;

	err[0] = '\0';
	rc = config_load_text(text, cfg, err, sizeof(err), path, sizeof(path));
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_str_eq(cfg->file, path);
}
