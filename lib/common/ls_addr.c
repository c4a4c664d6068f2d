/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address parsing and formatting. inet_pton/inet_ntop do the real work; this
 * file only folds both families into struct ls_addr and adds prefix checks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ls_common.h"

int
ls_addr_parse(const char *s, struct ls_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (s == NULL)
		return -EINVAL;
	if (inet_pton(AF_INET, s, out->a) == 1) {
		out->family = LS_AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, out->a) == 1) {
		out->family = LS_AF_INET6;
		return 0;
	}
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

int
ls_prefix_parse(const char *s, struct ls_prefix *out)
{
	char buf[LS_ADDR_STRLEN + 8];
	const char *slash;
	size_t alen;
	long plen;
	char *end;
	int rc;

	memset(out, 0, sizeof(*out));
	if (s == NULL)
		return -EINVAL;
	slash = strchr(s, '/');
	alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	rc = ls_addr_parse(buf, &out->addr);
	if (rc < 0)
		return rc;
	if (slash == NULL) {
		out->plen = out->addr.family == LS_AF_INET ? 32 : 128;
		return 0;
	}
	errno = 0;
	plen = strtol(slash + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == slash + 1 || plen < 0 ||
	    plen > (out->addr.family == LS_AF_INET ? 32 : 128)) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	out->plen = (uint8_t)plen;
	return 0;
}

const char *
ls_addr_fmt(const struct ls_addr *a, char *buf, size_t len)
{
	if (a->family == LS_AF_INET)
		inet_ntop(AF_INET, a->a, buf, (socklen_t)len);
	else if (a->family == LS_AF_INET6)
		inet_ntop(AF_INET6, a->a, buf, (socklen_t)len);
	else
		snprintf(buf, len, "-");
	return buf;
}

bool
ls_addr_is_unicast(const struct ls_addr *a)
{
	static const uint8_t zero[16];

	if (a->family == LS_AF_INET)
		return memcmp(a->a, zero, 4) != 0 && (a->a[0] & 0xf0) != 0xe0 &&
		       !(a->a[0] == 255 && a->a[1] == 255 && a->a[2] == 255 &&
			 a->a[3] == 255);
	return memcmp(a->a, zero, 16) != 0 && a->a[0] != 0xff;
}

bool
ls_prefix_contains(const struct ls_prefix *p, const struct ls_addr *addr)
{
	unsigned int full, rem;

	if (p->addr.family != addr->family)
		return false;
	full = p->plen / 8;
	rem = p->plen % 8;
	if (memcmp(p->addr.a, addr->a, full) != 0)
		return false;
	if (rem != 0) {
		uint8_t mask = (uint8_t)(0xff << (8 - rem));

		if ((p->addr.a[full] & mask) != (addr->a[full] & mask))
			return false;
	}
	return true;
}

bool
ls_prefix_bad_source(const struct ls_prefix *p, const struct ls_addr *src)
{
	uint32_t a, mine;

	if (p->addr.family == 0 || p->addr.family != src->family)
		return false;
	if (src->family != LS_AF_INET)
		return ls_addr_eq(&p->addr, src);
	memcpy(&a, src->a, 4);
	memcpy(&mine, p->addr.a, 4);
	return ls_prefix_bad_source_v4(ntohl(a), ntohl(mine), p->plen);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
ls_mac_parse(const char *s, struct ls_mac *out)
{
	memset(out, 0, sizeof(*out));
	/* Exactly "xx:xx:xx:xx:xx:xx" ('-' also accepted): sscanf's %2x would
	 * accept one-digit groups and leave garbage unchecked. */
	if (s == NULL || strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		int hi = hex_digit(s[3 * i]), lo = hex_digit(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':' && s[3 * i + 2] != '-')) {
			memset(out, 0, sizeof(*out));
			return -EINVAL;
		}
		out->b[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

const char *
ls_mac_fmt(const struct ls_mac *m, char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m->b[0], m->b[1],
		 m->b[2], m->b[3], m->b[4], m->b[5]);
	return buf;
}
