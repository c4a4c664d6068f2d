/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests for lib/policy: the policy's JSON round trip (what is saved is
 * what is read back), errors that name file, key and reason, atomic save and
 * load, classification (rules before slices, first match wins, the default
 * slice) and path choice (pin, spread, avoid spread flows evenly).
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ls_policy.h"

static const char *good =
	"{\"slices\": ["
	" {\"name\": \"infer\", \"latency\": true, \"max_bps\": 2e9, \"match\": {\"dscp\": [46, 34]}},"
	" {\"name\": \"train\", \"min_bps\": 5000000000, \"weight\": 4, \"flow_bps\": 1e9,"
	"  \"match\": {\"roce\": true, \"qp\": [1000, 2000]}, \"path\": {\"mode\": \"spread\", \"paths\": [0, 1, 2]},"
	"  \"cc\": {\"mode\": \"dcqcn\", \"np\": true, \"ai_bps\": 5e6, \"g_inv\": 16, \"min_dec_pct\": 0,"
	"   \"clamp_tgt_rate\": false, \"ai_share\": false}},"
	" {\"name\": \"web\", \"match\": {\"proto\": \"tcp\", \"dport\": 443, \"dst\": \"10.1.0.0/16\"}}"
	"], \"flows\": ["
	" {\"name\": \"iperf\", \"match\": {\"dport\": [5201, 5210]}, \"path\": {\"mode\": \"pin\", \"paths\": [3]}, \"slice\": \"web\"}"
	"]}";

static int
parse(const char *text, struct ls_policy *p, char *err, size_t len)
{
	struct ls_jsonv jv = {.src = "pol.json", .err = err, .errlen = len};
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int rc;

	ck_assert_msg(j != NULL, "test JSON: %s", je.text);
	rc = ls_policy_from_json(j, &jv, "policy", p);
	json_decref(j);
	return rc;
}

START_TEST(test_parse_and_round_trip)
{
	static struct ls_policy p, q;
	char err[512];
	json_t *a, *b;

	ck_assert_int_eq(parse(good, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.n_slices, 4);  /* default added */
	ck_assert_str_eq(p.slices[3].conf.name, "default");
	ck_assert(p.slices[0].conf.latency);
	ck_assert_uint_eq(p.slices[0].conf.max_bps, 2000000000ULL);
	ck_assert_uint_eq(p.slices[0].match.dscp, (1ULL << 46) | (1ULL << 34));
	ck_assert_uint_eq(p.slices[1].conf.weight, 4);
	ck_assert_uint_eq(p.slices[1].flow_bps, 1000000000ULL);
	ck_assert_uint_eq(p.slices[1].match.qp[1], 2000);
	ck_assert_uint_eq(p.slices[1].path.mode, LS_PATH_SPREAD);
	ck_assert_uint_eq(p.rules[0].path.first, 3);
	ck_assert_uint_eq(p.slices[1].cc.mode, LS_CC_DCQCN);
	ck_assert(p.slices[1].cc.np);
	ck_assert_uint_eq(p.slices[1].cc.ai_bps, 5000000);
	ck_assert_uint_eq(p.slices[1].cc.g_inv, 16);
	ck_assert_uint_eq(p.slices[1].cc.min_dec_pct, 0);
	ck_assert_uint_eq(p.slices[1].cc.k_us, 55);   /* left out: the default */
	ck_assert(!p.slices[1].cc.clamp_tgt && !p.slices[1].cc.ai_share);
	ck_assert(p.slices[0].cc.clamp_tgt && p.slices[0].cc.ai_share); /* the defaults */
	ck_assert_uint_eq(p.slices[0].cc.mode, LS_CC_OFF);
	a = ls_policy_to_json(&p);
	{
		char *s = json_dumps(a, 0);

		ck_assert_int_eq(parse(s, &q, err, sizeof(err)), 0);
		free(s);
	}
	b = ls_policy_to_json(&q);
	ck_assert(json_equal(a, b));
	json_decref(a);
	json_decref(b);
}
END_TEST

START_TEST(test_errors_name_key)
{
	static struct ls_policy p;
	char err[512];
	const struct { const char *text, *want; } cases[] = {
		{"{\"slices\": [{\"name\": \"a\", \"dscp\": 1}]}",
		 "pol.json: policy.slices[0].dscp: unknown key"},
		{"{\"slices\": [{\"name\": \"a\", \"match\": {\"dscp\": [64]}}]}",
		 "pol.json: policy.slices[0].match.dscp[0]: 64 out of range 0..63"},
		{"{\"slices\": [{\"name\": \"a\", \"min_bps\": 5, \"max_bps\": 4}]}",
		 "pol.json: policy.slices[0]: min_bps above max_bps"},
		{"{\"slices\": [{\"weight\": 2}]}",
		 "pol.json: policy.slices[0].name: required key missing"},
		{"{\"slices\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}",
		 "pol.json: policy.slices[1]: name \"a\" used twice"},
		{"{\"flows\": [{\"name\": \"r\", \"path\": {\"mode\": \"pin\"}}]}",
		 "pol.json: policy.flows[0].path: mode \"pin\" needs \"paths\""},
		{"{\"flows\": [{\"name\": \"r\", \"slice\": \"nope\"}]}",
		 "pol.json: policy.flows[0].slice: no slice \"nope\""},
		{"{\"slices\": [{\"name\": \"a\", \"qlen\": 100}]}",
		 "pol.json: policy.slices[0].qlen: 100 is not a power of two"},
		{"{\"slices\": [{\"name\": \"a\", \"match\": {\"dport\": [9, 8]}}]}",
		 "pol.json: policy.slices[0].match.dport: low 9 above high 8"},
		{"{\"slices\": [{\"name\": \"a b\"}]}",
		 "pol.json: policy.slices[0].name: a b: only A-Z a-z 0-9 _ . - allowed"},
		{"{\"slicez\": []}", "pol.json: policy.slicez: unknown key"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"mode\": \"bbr\"}}]}",
		 "pol.json: policy.slices[0].cc.mode: expected \"off\", \"dcqcn\" or \"delay\""},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"t_us\": 0}}]}",
		 "pol.json: policy.slices[0].cc.t_us: 0 out of range 1..10000000"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"ai_bps\": 5e8}}]}",
		 "pol.json: policy.slices[0].cc: hai_bps 200000000 below ai_bps 500000000"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"min_bps\": 0}}]}",
		 "pol.json: policy.slices[0].cc: min_bps must be above 0"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"min_dec_pct\": 101}}]}",
		 "pol.json: policy.slices[0].cc.min_dec_pct: 101 out of range 0..100"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"beta_pct\": 101}}]}",
		 "pol.json: policy.slices[0].cc.beta_pct: 101 out of range 0..100"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"beta_pct\": 0}}]}",
		 "pol.json: policy.slices[0].cc: beta_pct must be 1..100"},
		{"{\"slices\": [{\"name\": \"a\", \"cc\": {\"byte_reset\": 5000000000}}]}",
		 "pol.json: policy.slices[0].cc.byte_reset: 5000000000 out of range 1..4294967295"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_lt(parse(cases[i].text, &p, err, sizeof(err)), 0);
		ck_assert_str_eq(err, cases[i].want);
	}
}
END_TEST

START_TEST(test_save_load)
{
	static struct ls_policy p, q;
	char err[512], dir[] = "/tmp/lspolXXXXXX", file[600];
	struct stat st;
	json_t *a, *b;

	ck_assert_int_eq(parse(good, &p, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/policy.json", dir);
	ck_assert_int_eq(ls_policy_load(file, &q, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(ls_policy_save(&p, file, err, sizeof(err)), 0);
	ck_assert_int_eq(stat(file, &st), 0);
	ck_assert_int_eq(ls_policy_load(file, &q, err, sizeof(err)), 0);
	a = ls_policy_to_json(&p);
	b = ls_policy_to_json(&q);
	ck_assert(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	/* a broken file names itself and the reason */
	{
		FILE *f = fopen(file, "w");

		fputs("{\"slices\": [", f);
		fclose(f);
	}
	ck_assert_int_lt(ls_policy_load(file, &q, err, sizeof(err)), 0);
	ck_assert_msg(strncmp(err, file, strlen(file)) == 0, "err: %s", err);
	unlink(file);
	/* no directory: an error, nothing left behind */
	snprintf(file, sizeof(file), "%s/none/policy.json", dir);
	ck_assert_int_lt(ls_policy_save(&p, file, err, sizeof(err)), 0);
	rmdir(dir);
}
END_TEST

static struct ls_flow_pkt
pkt(uint8_t proto, int roce, uint32_t dst, uint16_t dport, uint32_t qp, uint8_t dscp)
{
	struct ls_flow_pkt k;

	memset(&k, 0, sizeof(k));
	k.key.family = 4;
	k.key.proto = proto;
	k.key.dst[10] = k.key.dst[11] = 0xff;
	dst = htonl(dst);
	memcpy(&k.key.dst[12], &dst, 4);
	k.key.dport = htons(dport);
	k.l4_off = 34;
	k.dscp = dscp;
	if (roce) {
		k.kind = LS_FLOW_K_ROCE;
		k.key.qp_label = htonl(qp);
	} else {
		k.kind = proto == 6 ? LS_FLOW_K_TCP : LS_FLOW_K_UDP;
	}
	return k;
}

START_TEST(test_classify)
{
	static struct ls_policy p;
	struct ls_path_policy pp;
	struct ls_flow_pkt k;
	char err[512];
	uint32_t s;

	ck_assert_int_eq(parse(good, &p, err, sizeof(err)), 0);
	k = pkt(17, 0, 0x0a000001, 53, 0, 46);           /* DSCP 46 */
	ls_policy_classify(&p, &k, &s, &pp);
	ck_assert_str_eq(p.slices[s].conf.name, "infer");
	k = pkt(17, 1, 0x0a000001, 4791, 1500, 26);      /* RoCE QP 1500 */
	ls_policy_classify(&p, &k, &s, &pp);
	ck_assert_str_eq(p.slices[s].conf.name, "train");
	ck_assert_uint_eq(pp.mode, LS_PATH_SPREAD);
	k = pkt(17, 1, 0x0a000001, 4791, 2500, 26);      /* QP out of range */
	ls_policy_classify(&p, &k, &s, &pp);
	ck_assert_str_eq(p.slices[s].conf.name, "default");
	k = pkt(6, 0, 0x0a010203, 443, 0, 0);            /* tcp/443 into 10.1/16 */
	ls_policy_classify(&p, &k, &s, &pp);
	ck_assert_str_eq(p.slices[s].conf.name, "web");
	k = pkt(6, 0, 0x0a020203, 443, 0, 0);            /* outside 10.1/16 */
	ls_policy_classify(&p, &k, &s, &pp);
	ck_assert_str_eq(p.slices[s].conf.name, "default");
	k = pkt(6, 0, 0x0a020203, 5205, 0, 46);          /* the rule wins over dscp */
	ls_policy_classify(&p, &k, &s, &pp);
	ck_assert_str_eq(p.slices[s].conf.name, "web");
	ck_assert_uint_eq(pp.mode, LS_PATH_PIN);
	ck_assert_int_eq(ls_path_pick(&pp, 12345, 8), 3);
}
END_TEST

START_TEST(test_path_pick)
{
	struct ls_path_policy pp = {.mode = LS_PATH_SPREAD, .paths = 0x16}; /* 1, 2, 4 */
	unsigned int hits[8] = {0};

	for (uint32_t h = 0; h < 30000; h++)
		hits[ls_path_pick(&pp, h, 8)]++;
	ck_assert_uint_eq(hits[1], 10000);
	ck_assert_uint_eq(hits[2], 10000);
	ck_assert_uint_eq(hits[4], 10000);
	pp.mode = LS_PATH_AVOID;
	memset(hits, 0, sizeof(hits));
	for (uint32_t h = 0; h < 5000; h++)
		hits[ls_path_pick(&pp, h, 6)]++;     /* 0, 3, 5 left */
	ck_assert_uint_eq(hits[0] + hits[3] + hits[5], 5000);
	ck_assert_uint_gt(hits[0], 1500);
	ck_assert_uint_gt(hits[5], 1500);
	pp.paths = 0x3f;                            /* nothing left */
	ck_assert_int_eq(ls_path_pick(&pp, 1, 6), -1);
	pp.mode = LS_PATH_KEEP;
	ck_assert_int_eq(ls_path_pick(&pp, 1, 6), -1);
	pp.mode = LS_PATH_PIN;
	pp.first = 9;
	ck_assert_int_eq(ls_path_pick(&pp, 1, 6), -1); /* no such path */
}
END_TEST

static Suite *
policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_and_round_trip);
	tcase_add_test(tc, test_errors_name_key);
	tcase_add_test(tc, test_save_load);
	tcase_add_test(tc, test_classify);
	tcase_add_test(tc, test_path_pick);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(policy_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
