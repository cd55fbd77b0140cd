/* Network rules (src/util/netpolicy.c): parsing with precise refusals, matching names and
 * addresses, deny before allow, and the internal-address rule that stops DNS rebinding. */
#include <string.h>

#include "util/netpolicy.h"
#include "support.h"

static struct sbx_netrule rule(const char *text)
{
	struct sbx_netrule r;
	char why[200];

	ck_assert_msg(sbx_netrule_parse(text, strlen(text), &r, why, sizeof why) == 0,
	              "rule \"%s\" refused: %s", text, why);
	return r;
}

static const char *refusal(const char *text)
{
	static char why[200];
	struct sbx_netrule r;

	ck_assert_msg(sbx_netrule_parse(text, strlen(text), &r, why, sizeof why) < 0,
	              "rule \"%s\" accepted", text);
	return why;
}

static void assert_round_trip(const char *text, const char *canonical)
{
	struct sbx_netrule r = rule(text);
	char out[300];

	sbx_netrule_format(&r, out, sizeof out);
	ck_assert_str_eq(out, canonical);
}

START_TEST(test_rule_forms)
{
	struct sbx_netrule r = rule("Example.COM.");

	ck_assert_int_eq(r.kind, SBX_NETRULE_NAME);
	ck_assert_str_eq(r.name, "example.com");
	ck_assert_uint_eq(r.port, 0);
	r = rule("*.github.com:443");
	ck_assert_int_eq(r.kind, SBX_NETRULE_WILDCARD);
	ck_assert_str_eq(r.name, "github.com");
	ck_assert_uint_eq(r.port, 443);
	assert_round_trip("192.0.2.7", "192.0.2.7");
	assert_round_trip("192.0.2.0/24:8080", "192.0.2.0/24:8080");
	assert_round_trip("2001:db8::1", "2001:db8::1");
	assert_round_trip("[2001:db8::/32]:443", "[2001:db8::/32]:443");
	assert_round_trip("[::1]", "::1");
	/* An IPv4-mapped address and range are IPv4. */
	assert_round_trip("::ffff:10.0.0.1", "10.0.0.1");
	assert_round_trip("::ffff:10.0.0.0/104", "10.0.0.0/8");
	assert_round_trip("localhost:65535", "localhost:65535");
}
END_TEST

START_TEST(test_rule_refusals_say_why)
{
	ck_assert_ptr_nonnull(strstr(refusal(""), "empty"));
	ck_assert_ptr_nonnull(strstr(refusal("*"), "every host"));
	ck_assert_ptr_nonnull(strstr(refusal("a.*.com"), "only stand at the start"));
	ck_assert_ptr_nonnull(strstr(refusal("example.com:0"), "1..65535"));
	ck_assert_ptr_nonnull(strstr(refusal("example.com:65536"), "1..65535"));
	ck_assert_ptr_nonnull(strstr(refusal("example.com:http"), "not a number"));
	ck_assert_ptr_nonnull(strstr(refusal("10.1.2.3/8"), "beyond the prefix"));
	ck_assert_ptr_nonnull(strstr(refusal("10.0.0.0/33"), "0..32"));
	ck_assert_ptr_nonnull(strstr(refusal("[::1"), "']'"));
	ck_assert_ptr_nonnull(strstr(refusal("exa mple.com"), "letters"));
	ck_assert_ptr_nonnull(strstr(refusal("a..b"), "empty label"));
	/* The resolver's numeric spellings of 127.0.0.1 are neither names nor addresses. */
	ck_assert_ptr_nonnull(strstr(refusal("2130706433"), "dotted-quad"));
	ck_assert_ptr_nonnull(strstr(refusal("127.1"), "dotted-quad"));
	ck_assert_ptr_nonnull(strstr(refusal("0x7f.0x1"), "dotted-quad"));
	ck_assert_ptr_nonnull(strstr(refusal("fe80::1%eth0"), "not an IP address"));
}
END_TEST

static sbx_json *parse_json(const char *text)
{
	sbx_json *v = NULL;
	char err[200];

	ck_assert_msg(sbx_json_parse(text, strlen(text), &v, err, sizeof err) == 0, "%s", err);
	return v;
}

static const char *network_refusal(const char *text)
{
	static char err[400];
	struct sbx_network n;
	sbx_json *v = parse_json(text);

	ck_assert_msg(sbx_network_parse(v, &n, err, sizeof err) < 0, "%s accepted", text);
	sbx_json_free(v);
	return err;
}

START_TEST(test_network_object)
{
	sbx_json *v = parse_json("{\"mode\":\"allowlist\",\"allow\":[\"pypi.org\",\"*.github.com\"],"
	                         "\"deny\":[\"evil.github.com\"]}");
	struct sbx_network n;
	char err[300];

	ck_assert_int_eq(sbx_network_parse(v, &n, err, sizeof err), 0);
	ck_assert_int_eq(n.mode, SBX_NET_ALLOWLIST);
	ck_assert_uint_eq(n.policy.n_allow, 2);
	ck_assert_uint_eq(n.policy.n_deny, 1);
	sbx_network_free(&n);
	sbx_json_free(v);

	ck_assert_str_eq(network_refusal("{\"mode\":\"allowlist\",\"allow\":[\"a.com\",\"b.com\","
	                                 "\"c.com:0\"]}"),
	                 "key 'network.allow[2]': \"c.com:0\": port \"0\" is not a number in "
	                 "1..65535");
	ck_assert_str_eq(network_refusal("{\"mode\":\"allowlist\",\"deny\":[1]}"),
	                 "key 'network.deny[0]': expected a string, got integer");
	ck_assert_str_eq(network_refusal("{\"allow\":[\"a.com\"]}"),
	                 "key 'network.allow': allow and deny lists need \"mode\": \"allowlist\"");
	ck_assert_ptr_nonnull(strstr(network_refusal("{\"mode\":\"open\"}"), "unknown mode 'open'"));
	ck_assert_ptr_nonnull(strstr(network_refusal("{\"mode\":\"none\",\"proxy\":1}"),
	                             "unknown key 'network.proxy'"));
	ck_assert_ptr_nonnull(strstr(network_refusal("{\"mode\":\"allowlist\",\"allow\":\"a\"}"),
	                             "expected an array"));
}
END_TEST

static struct sbx_netpolicy policy(const char *allow_deny_json, struct sbx_network *keep)
{
	sbx_json *v = parse_json(allow_deny_json);
	char err[300];

	ck_assert_msg(sbx_network_parse(v, keep, err, sizeof err) == 0, "%s", err);
	sbx_json_free(v);
	return keep->policy;
}

static struct sbx_netverdict check(const struct sbx_netpolicy *p, const char *host,
                                   uint16_t port)
{
	struct sbx_nettarget t;
	struct sbx_netverdict v;

	ck_assert_int_eq(sbx_nettarget_parse(host, strlen(host), port, &t), 0);
	sbx_netpolicy_check(p, &t, &v);
	return v;
}

START_TEST(test_matching)
{
	struct sbx_network n;
	struct sbx_netpolicy p = policy("{\"mode\":\"allowlist\",\"allow\":[\"pypi.org\","
	                                "\"*.github.com\",\"files.example:8443\",\"192.0.2.0/24\"],"
	                                "\"deny\":[\"gist.github.com\",\"192.0.2.66\"]}", &n);
	struct sbx_netverdict v;

	v = check(&p, "PyPI.org", 443);
	ck_assert(v.allowed);
	ck_assert(v.exact_name);
	ck_assert_str_eq(v.rule, "network.allow[0] pypi.org");
	ck_assert(!check(&p, "www.pypi.org", 443).allowed);
	v = check(&p, "api.github.com", 443);
	ck_assert(v.allowed);
	ck_assert(!v.exact_name);
	ck_assert(check(&p, "a.b.github.com.", 22).allowed);
	ck_assert(!check(&p, "github.com", 443).allowed);      /* wildcards: subdomains only */
	ck_assert(!check(&p, "evilgithub.com", 443).allowed);
	v = check(&p, "gist.github.com", 443);                   /* deny wins */
	ck_assert(!v.allowed);
	ck_assert_str_eq(v.rule, "network.deny[0] gist.github.com");
	ck_assert_ptr_nonnull(strstr(v.reason, "denied by network.deny[0]"));
	ck_assert(check(&p, "files.example", 8443).allowed);
	ck_assert(!check(&p, "files.example", 443).allowed);
	ck_assert(check(&p, "192.0.2.10", 80).allowed);
	ck_assert(check(&p, "[::ffff:192.0.2.10]", 80).allowed);
	ck_assert(!check(&p, "192.0.2.66", 80).allowed);
	v = check(&p, "198.51.100.1", 80);
	ck_assert(!v.allowed);
	ck_assert_str_eq(v.rule, "default");
	/* A name entry does not cover the name's addresses given by number. */
	ck_assert_ptr_nonnull(strstr(v.reason, "name entries do not cover addresses"));
	sbx_network_free(&n);
}
END_TEST

static struct sbx_netaddr addr(const char *text)
{
	struct sbx_nettarget t;

	ck_assert_int_eq(sbx_nettarget_parse(text, strlen(text), 1, &t), 0);
	ck_assert(!t.is_name);
	return t.addr;
}

START_TEST(test_resolved_addresses)
{
	struct sbx_network n;
	struct sbx_netpolicy p = policy("{\"mode\":\"allowlist\",\"allow\":[\"localhost\","
	                                "\"*.corp.test\",\"10.1.0.0/16\"],\"deny\":[\"203.0.113.9\"]}",
	                                &n);
	struct sbx_netverdict v = { 0 };
	struct sbx_netaddr loop = addr("127.0.0.1"), pub = addr("203.0.113.5");

	/* An exact name may resolve anywhere; a wildcard match not into internal ranges... */
	ck_assert(sbx_netpolicy_check_address(&p, &loop, 80, true, &v));
	ck_assert(!sbx_netpolicy_check_address(&p, &loop, 80, false, &v));
	ck_assert_str_eq(v.rule, "internal-address");
	ck_assert_ptr_nonnull(strstr(v.reason, "127.0.0.1, a loopback"));
	ck_assert(sbx_netpolicy_check_address(&p, &pub, 443, false, &v));
	/* ...unless an address range of the allow list covers them. */
	struct sbx_netaddr inside = addr("10.1.2.3"), outside = addr("10.2.0.1");
	ck_assert(sbx_netpolicy_check_address(&p, &inside, 443, false, &v));
	ck_assert(!sbx_netpolicy_check_address(&p, &outside, 443, false, &v));
	/* An exact entry decides before a wildcard that also matches, wherever it is listed. */
	struct sbx_network n2;
	struct sbx_netpolicy p2 = policy("{\"mode\":\"allowlist\",\"allow\":[\"*.corp.test\","
	                                 "\"db.corp.test\"]}", &n2);
	struct sbx_netverdict v2 = check(&p2, "db.corp.test", 5432);
	ck_assert(v2.exact_name);
	ck_assert_str_eq(v2.rule, "network.allow[1] db.corp.test");
	sbx_network_free(&n2);
	/* Deny ranges apply to resolved addresses, even for exact names. */
	struct sbx_netaddr denied = addr("203.0.113.9");
	ck_assert(!sbx_netpolicy_check_address(&p, &denied, 443, true, &v));
	ck_assert_str_eq(v.rule, "network.deny[0] 203.0.113.9");
	sbx_network_free(&n);
}
END_TEST

START_TEST(test_internal_ranges)
{
	const char *internal[] = { "127.0.0.1", "10.0.0.1", "172.31.255.255", "192.168.1.1",
	                           "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1",
	                           "255.255.255.255", "::1", "::", "fe80::1", "fd00::1",
	                           "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1",
	                           "ff02::1" };
	const char *public[] = { "203.0.113.5", "198.51.100.1", "8.8.8.8", "172.32.0.1",
	                         "2001:db8::1", "64:ff9b::808:808", "2606:4700::1" };

	for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
		struct sbx_netaddr a = addr(internal[i]);
		ck_assert_msg(sbx_netaddr_internal(&a), "%s counted as public", internal[i]);
	}
	for (size_t i = 0; i < sizeof public / sizeof public[0]; i++) {
		struct sbx_netaddr a = addr(public[i]);
		ck_assert_msg(!sbx_netaddr_internal(&a), "%s counted as internal", public[i]);
	}
}
END_TEST

START_TEST(test_targets)
{
	struct sbx_nettarget t;

	ck_assert_int_eq(sbx_nettarget_parse("[2001:db8::1]", 13, 443, &t), 0);
	ck_assert(!t.is_name);
	ck_assert_int_eq(sbx_nettarget_parse("Example.Com.", 12, 443, &t), 0);
	ck_assert_str_eq(t.name, "example.com");
	ck_assert_int_eq(sbx_nettarget_parse("2130706433", 10, 80, &t), -1);
	ck_assert_int_eq(sbx_nettarget_parse("0x7f000001", 10, 80, &t), -1);
	ck_assert_int_eq(sbx_nettarget_parse("a\0b.com", 7, 80, &t), -1);
	ck_assert_int_eq(sbx_nettarget_parse("", 0, 80, &t), -1);
	ck_assert_int_eq(sbx_nettarget_parse("a/b", 3, 80, &t), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("netpolicy");
	TCase *tc = tcase_create("netpolicy");

	tcase_add_test(tc, test_rule_forms);
	tcase_add_test(tc, test_rule_refusals_say_why);
	tcase_add_test(tc, test_network_object);
	tcase_add_test(tc, test_matching);
	tcase_add_test(tc, test_resolved_addresses);
	tcase_add_test(tc, test_internal_ranges);
	tcase_add_test(tc, test_targets);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
