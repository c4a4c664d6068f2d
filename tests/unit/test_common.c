/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/common (ls_addr.c): address, prefix and MAC parsing and
 * formatting, and prefix membership. These types key every table in the
 * daemon, so the edge cases (bad text, odd prefix lengths, family mixing)
 * are what matter here.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ls_common.h"
#include "ls_test.h"

START_TEST(test_addr_parse)
{
	static const char *const bad[] = {
		"", "1.2.3", "1.2.3.256", "10.0.0.1/24", "fe80::1::2", "hello",
		"1.2.3.4 ", "::g",
	};
	struct ls_addr a;
	char buf[LS_ADDR_STRLEN];

	ck_assert_int_eq(ls_addr_parse("192.0.2.33", &a), 0);
	ck_assert_uint_eq(a.family, LS_AF_INET);
	ck_assert_uint_eq(a.a[0], 192);
	ck_assert_uint_eq(a.a[3], 33);
	for (int i = 4; i < 16; i++)
		ck_assert_uint_eq(a.a[i], 0);
	ck_assert_str_eq(ls_addr_fmt(&a, buf, sizeof(buf)), "192.0.2.33");

	ck_assert_int_eq(ls_addr_parse("2001:DB8::a:1", &a), 0);
	ck_assert_uint_eq(a.family, LS_AF_INET6);
	ck_assert_uint_eq(a.a[0], 0x20);
	ck_assert_uint_eq(a.a[1], 0x01);
	ck_assert_uint_eq(a.a[13], 0x0a);
	ck_assert_uint_eq(a.a[15], 0x01);
	ck_assert_str_eq(ls_addr_fmt(&a, buf, sizeof(buf)), "2001:db8::a:1");

	ck_assert_int_eq(ls_addr_parse("::ffff:10.1.2.3", &a), 0);
	ck_assert_uint_eq(a.family, LS_AF_INET6);
	ck_assert_int_eq(ls_addr_parse("::", &a), 0);
	ck_assert_str_eq(ls_addr_fmt(&a, buf, sizeof(buf)), "::");

	for (unsigned int i = 0; i < LS_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(ls_addr_parse(bad[i], &a) == -EINVAL, "%s", bad[i]);
		ck_assert_uint_eq(a.family, 0);
	}
	ck_assert_int_eq(ls_addr_parse(NULL, &a), -EINVAL);
	memset(&a, 0, sizeof(a));
	ck_assert_str_eq(ls_addr_fmt(&a, buf, sizeof(buf)), "-");
}
END_TEST

START_TEST(test_addr_eq)
{
	struct ls_addr x, y;

	ls_addr_parse("10.0.0.1", &x);
	ls_addr_parse("10.0.0.1", &y);
	ck_assert(ls_addr_eq(&x, &y));
	/* IPv4 compares only its 4 bytes */
	y.a[10] = 0x55;
	ck_assert(ls_addr_eq(&x, &y));
	ls_addr_parse("10.0.0.2", &y);
	ck_assert(!ls_addr_eq(&x, &y));
	ls_addr_parse("::ffff:10.0.0.1", &y);
	ck_assert(!ls_addr_eq(&x, &y));
	ls_addr_parse("fe80::1", &x);
	ls_addr_parse("fe80::1", &y);
	ck_assert(ls_addr_eq(&x, &y));
	y.a[8] = 1;
	ck_assert(!ls_addr_eq(&x, &y));
}
END_TEST

START_TEST(test_prefix_parse)
{
	static const char *const bad[] = {
		"10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "10.0.0.0/8x",
		"/8", "2001:db8::/129", "2001:db8::/abc", "foo/8",
		"10.0.0.0/99999999999999999999",
	};
	struct ls_prefix p;

	ck_assert_int_eq(ls_prefix_parse("10.1.0.0/16", &p), 0);
	ck_assert_uint_eq(p.addr.family, LS_AF_INET);
	ck_assert_uint_eq(p.plen, 16);
	ck_assert_uint_eq(p.addr.a[1], 1);
	ck_assert_int_eq(ls_prefix_parse("10.1.2.3", &p), 0);
	ck_assert_uint_eq(p.plen, 32);
	ck_assert_int_eq(ls_prefix_parse("2001:db8::/32", &p), 0);
	ck_assert_uint_eq(p.addr.family, LS_AF_INET6);
	ck_assert_uint_eq(p.plen, 32);
	ck_assert_int_eq(ls_prefix_parse("2001:db8::1", &p), 0);
	ck_assert_uint_eq(p.plen, 128);
	ck_assert_int_eq(ls_prefix_parse("0.0.0.0/0", &p), 0);
	ck_assert_uint_eq(p.plen, 0);
	ck_assert_int_eq(ls_prefix_parse("::/128", &p), 0);
	ck_assert_uint_eq(p.plen, 128);

	for (unsigned int i = 0; i < LS_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(ls_prefix_parse(bad[i], &p) == -EINVAL, "%s", bad[i]);
		ck_assert_uint_eq(p.addr.family, 0);
	}
	ck_assert_int_eq(ls_prefix_parse(NULL, &p), -EINVAL);
	/* longer than any address text */
	ck_assert_int_eq(ls_prefix_parse(
		"2001:0db8:0000:0000:0000:0000:0000:0001:ffff/64", &p), -EINVAL);
}
END_TEST

START_TEST(test_prefix_contains)
{
	struct ls_prefix p;
	struct ls_addr a;

	ls_prefix_parse("10.1.0.0/16", &p);
	ls_addr_parse("10.1.255.3", &a);
	ck_assert(ls_prefix_contains(&p, &a));
	ls_addr_parse("10.2.0.1", &a);
	ck_assert(!ls_prefix_contains(&p, &a));

	/* a length that is not a multiple of 8 */
	ls_prefix_parse("192.168.4.0/22", &p);
	ls_addr_parse("192.168.7.255", &a);
	ck_assert(ls_prefix_contains(&p, &a));
	ls_addr_parse("192.168.8.0", &a);
	ck_assert(!ls_prefix_contains(&p, &a));
	ls_addr_parse("192.168.3.255", &a);
	ck_assert(!ls_prefix_contains(&p, &a));

	ls_prefix_parse("0.0.0.0/0", &p);
	ck_assert(ls_prefix_contains(&p, &a));
	ls_prefix_parse("192.168.3.255/32", &p);
	ck_assert(ls_prefix_contains(&p, &a));
	a.a[3] = 254;
	ck_assert(!ls_prefix_contains(&p, &a));

	ls_prefix_parse("2001:db8:ab00::/41", &p);
	ls_addr_parse("2001:db8:ab7f:ffff::1", &a);
	ck_assert(ls_prefix_contains(&p, &a));
	ls_addr_parse("2001:db8:ab80::", &a);
	ck_assert(!ls_prefix_contains(&p, &a));
	ls_prefix_parse("fe80::1/128", &p);
	ls_addr_parse("fe80::1", &a);
	ck_assert(ls_prefix_contains(&p, &a));

	/* families never mix, even ::/0 against IPv4 */
	ls_prefix_parse("::/0", &p);
	ls_addr_parse("10.0.0.1", &a);
	ck_assert(!ls_prefix_contains(&p, &a));
}
END_TEST

START_TEST(test_mac)
{
	static const char *const bad[] = {
		"", "00:11:22:33:44", "00:11:22:33:44:55:66", "0g:11:22:33:44:55",
		"00.11.22.33.44.55", "001122334455", "00:11:22:33:44:55 ",
		/* regression: sscanf %2x accepted one-digit groups and trailing junk */
		"00:11:22:33:44:5g", "0:11:22:33:44:555",
	};
	struct ls_mac m;
	char buf[LS_MAC_STRLEN];

	ck_assert_int_eq(ls_mac_parse("02:1A:b3:00:ff:09", &m), 0);
	ck_assert_uint_eq(m.b[0], 0x02);
	ck_assert_uint_eq(m.b[1], 0x1a);
	ck_assert_uint_eq(m.b[2], 0xb3);
	ck_assert_uint_eq(m.b[4], 0xff);
	ck_assert_uint_eq(m.b[5], 0x09);
	ck_assert_str_eq(ls_mac_fmt(&m, buf, sizeof(buf)), "02:1a:b3:00:ff:09");
	ck_assert_int_eq(ls_mac_parse("02-1a-b3-00-ff-09", &m), 0);
	ck_assert_uint_eq(m.b[5], 0x09);
	for (unsigned int i = 0; i < LS_ARRAY_SIZE(bad); i++)
		ck_assert_msg(ls_mac_parse(bad[i], &m) == -EINVAL, "%s", bad[i]);
	ck_assert_int_eq(ls_mac_parse(NULL, &m), -EINVAL);
	/* short buffer truncates, never overflows */
	ck_assert_int_eq(ls_mac_parse("02:1a:b3:00:ff:09", &m), 0);
	memset(buf, 'x', sizeof(buf));
	ls_mac_fmt(&m, buf, 6);
	ck_assert_str_eq(buf, "02:1a");
	ck_assert_uint_eq(buf[6], 'x');
}
END_TEST

static Suite *
common_suite(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("addr");

	tcase_add_test(tc, test_addr_parse);
	tcase_add_test(tc, test_addr_eq);
	tcase_add_test(tc, test_prefix_parse);
	tcase_add_test(tc, test_prefix_contains);
	tcase_add_test(tc, test_mac);
	suite_add_tcase(s, tc);
	return s;
}

LS_TEST_MAIN(common_suite)
