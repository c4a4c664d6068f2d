/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the config suite's files share: test_config.c (the keys, files and
 * errors), test_config_pinglist.c (pinglists, issue 28) and
 * test_config_bridge.c (the data path's section).
 */
#ifndef TEST_CONFIG_H
#define TEST_CONFIG_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

#include "ls_config.h"

/* A valid minimal base: one node, one IPv4 port. */
#define NODE "'node': {'name': 'n1', 'id': 7}"
#define PORT0 "{'name': 'p0', 'dev': 'net_null0', 'ipv4': '10.0.0.1/24'}"
#define PORTS "'ports': [" PORT0 "]"
#define BASE NODE ", " PORTS

/* test_config.c's loaders: a bad file's one-line "FILE: KEY: ...reason..."
 * (untouched config), an exact message, a good file (checks fail the test) */
int config_load_text(const char *text, struct ls_config *cfg, char *err, size_t errlen,
		     char *path, size_t plen);
bool config_all_zero(const struct ls_config *cfg);
void config_expect_bad(const char *text, const char *key, const char *reason, int line);
void config_expect_exact(const char *text, const char *rest, int line);
void config_load_good(const char *text, struct ls_config *cfg);

void config_pinglist_tests(TCase *tc);
void config_bridge_tests(TCase *tc);

#endif
