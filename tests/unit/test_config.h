/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the config suite's files share: test_config.c (the keys, files and
 * errors) and test_config_pinglist.c (pinglists, issue 28).
 */
#ifndef TEST_CONFIG_H
#define TEST_CONFIG_H

#include <check.h>
#include <stddef.h>

#include "ls_config.h"

/* A valid minimal base: one node, one IPv4 port. */
#define NODE "'node': {'name': 'n1', 'id': 7}"
#define PORT0 "{'name': 'p0', 'dev': 'net_null0', 'ipv4': '10.0.0.1/24'}"
#define PORTS "'ports': [" PORT0 "]"
#define BASE NODE ", " PORTS

void config_pinglist_tests(TCase *tc);

#endif
