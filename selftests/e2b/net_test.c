// SPDX-License-Identifier: GPL-2.0
/*
 * net_test: E2B's network options (allow_internet_access, network.allowOut,
 * denyOut, allowPublicTraffic; the PUT /network body) to the egress policy
 * of lib/cube_net: the mapping, every refusal with the entry it names, and
 * the record form read back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_json.h"
#include "e2b_net.h"
#include "cube_test.h"

/* "allow 1.1.1.1/32;deny 0.0.0.0/0;..." in the policy's order */
static void rules_text(const struct cube_net_policy *p, char *out, size_t len)
{
	unsigned int i;
	size_t o = 0;

	out[0] = '\0';
	for (i = 0; i < p->nrules && o < len; i++) {
		char r[80];

		cube_net_rule_format(&p->rules[i], r, sizeof(r));
		o += snprintf(out + o, len - o, "%s%s %s", i ? ";" : "",
			      p->rules[i].action == CUBE_NET_ALLOW ? "allow" :
			      "deny", r);
	}
}

/* a create body with @network (JSON text or NULL) and @extra fields */
static int create(const char *extra, const char *network,
		  struct e2b_new_sandbox *r, char *err)
{
	char body[16384];

	snprintf(body, sizeof(body), "{\"templateID\":\"base\"%s%s%s%s}",
		 extra ? "," : "", extra ? extra : "",
		 network ? ",\"network\":" : "", network ? network : "");
	return e2b_parse_new_sandbox(body, strlen(body), r, err);
}

/* the policy of a create with @network, as rules text; its mode */
static int policy_of(const char *extra, const char *network, char *text,
		     size_t len)
{
	static struct cube_net_policy p;
	struct e2b_new_sandbox r;
	char err[E2B_MSG_MAX] = "";
	int ret;

	ret = create(extra, network, &r, err);
	if (ret) {
		TH_LOG("refused: %s", err);
		return -1;
	}
	ret = e2b_net_policy(&r.net, &p, err);
	e2b_new_sandbox_free(&r);
	if (ret) {
		TH_LOG("no policy: %s", err);
		return -1;
	}
	rules_text(&p, text, len);
	return p.mode;
}

TEST(defaults_are_internet)
{
	char t[1024];

	ASSERT_EQ(policy_of(NULL, NULL, t, sizeof(t)), CUBE_NET_INTERNET);
	ASSERT_EQ(policy_of("\"allow_internet_access\":true", NULL, t, sizeof(t)),
		  CUBE_NET_INTERNET);
	ASSERT_EQ(policy_of(NULL, "{}", t, sizeof(t)), CUBE_NET_INTERNET);
	ASSERT_EQ(policy_of(NULL, "{\"allowPublicTraffic\":true,\"rules\":{}}",
			    t, sizeof(t)), CUBE_NET_INTERNET);
}

TEST(no_internet_is_deny)
{
	struct e2b_new_sandbox r;
	char t[1024];

	ASSERT_EQ(policy_of("\"allow_internet_access\":false", NULL, t, sizeof(t)),
		  CUBE_NET_DENY);
	/* the camel-case spelling some clients send */
	ASSERT_EQ(policy_of("\"allowInternetAccess\":false", NULL, t, sizeof(t)),
		  CUBE_NET_DENY);
	/* E2B's "all traffic" in denyOut is the same */
	ASSERT_EQ(policy_of(NULL, "{\"denyOut\":[\"0.0.0.0/0\"]}", t, sizeof(t)),
		  CUBE_NET_DENY);
	ASSERT_EQ(create("\"allow_internet_access\":false", NULL, &r, NULL), 0);
	ASSERT_EQ(r.net.internet, E2B_FALSE);
	ASSERT_FALSE(e2b_net_is_default(&r.net));
	e2b_new_sandbox_free(&r);
}

TEST(lists_map_to_rules)
{
	char t[2048];

	/* addresses become /32 and /128; the base allows the rest */
	ASSERT_EQ(policy_of(NULL, "{\"denyOut\":[\"8.8.8.8\",\"2001:db8::1\",\"10.0.0.0/8\"]}",
			    t, sizeof(t)), CUBE_NET_LIST);
	ASSERT_STREQ(t, "allow 0.0.0.0/0;allow ::/0;deny 8.8.8.8/32;"
		     "deny 2001:db8::1/128;deny 10.0.0.0/8");
	/* an allow list under "deny all": E2B's usual form */
	ASSERT_EQ(policy_of(NULL, "{\"allowOut\":[\"1.1.1.1\",\"192.168.1.0/24\"],"
			    "\"denyOut\":[\"0.0.0.0/0\"]}", t, sizeof(t)),
		  CUBE_NET_LIST);
	ASSERT_STREQ(t, "deny 0.0.0.0/0;deny ::/0;allow 1.1.1.1/32;"
		     "allow 192.168.1.0/24");
	/* the same with allow_internet_access false */
	ASSERT_EQ(policy_of("\"allow_internet_access\":false",
			    "{\"allowOut\":[\"1.1.1.1\"]}", t, sizeof(t)),
		  CUBE_NET_LIST);
	ASSERT_STREQ(t, "deny 0.0.0.0/0;deny ::/0;allow 1.1.1.1/32");
}

TEST(allowed_entries_win)
{
	char t[2048];

	/* a deny inside an allowed range is moot in E2B: dropped here */
	ASSERT_EQ(policy_of(NULL, "{\"allowOut\":[\"8.8.0.0/16\"],"
			    "\"denyOut\":[\"8.8.8.8\",\"9.9.9.9\",\"8.8.0.0/16\"]}",
			    t, sizeof(t)), CUBE_NET_LIST);
	ASSERT_STREQ(t, "allow 0.0.0.0/0;allow ::/0;allow 8.8.0.0/16;"
		     "deny 9.9.9.9/32");
	/* an allowed 0.0.0.0/0 opens IPv4 whatever else is said */
	ASSERT_EQ(policy_of("\"allow_internet_access\":false",
			    "{\"allowOut\":[\"0.0.0.0/0\"]}", t, sizeof(t)),
		  CUBE_NET_LIST);
	ASSERT_STREQ(t, "allow 0.0.0.0/0;deny ::/0");
	/* duplicates once */
	ASSERT_EQ(policy_of(NULL, "{\"denyOut\":[\"1.2.3.4\",\"1.2.3.4/32\"]}",
			    t, sizeof(t)), CUBE_NET_LIST);
	ASSERT_STREQ(t, "allow 0.0.0.0/0;allow ::/0;deny 1.2.3.4/32");
}

static void expect_bad(const char *extra, const char *network,
		       const char *needle)
{
	struct e2b_new_sandbox r;
	char err[E2B_MSG_MAX] = "";

	EXPECT_EQ(create(extra, network, &r, err), -EINVAL);
	if (!strstr(err, needle))
		TH_LOG("network %s: error '%s' lacks '%s'", network, err,
		       needle);
	EXPECT_TRUE(strstr(err, needle) != NULL);
	/* nothing is left of a refused request */
	EXPECT_STREQ(r.template_id, "");
	EXPECT_EQ(r.net.n_allow, 0);
	EXPECT_EQ(r.net.n_deny, 0);
}

TEST(refusals_name_the_entry)
{
	expect_bad(NULL, "[]", "'network' must be an object");
	expect_bad(NULL, "{\"allowOut\":\"1.1.1.1\"}", "'allowOut' must be an array");
	expect_bad(NULL, "{\"denyOut\":[1]}", "'denyOut' must be an array of strings");
	expect_bad(NULL, "{\"denyOut\":[\"\"]}", "empty");
	expect_bad(NULL, "{\"allowOut\":[\"example.com\"]}",
		   "allowOut entry 'example.com': domain names are not supported");
	expect_bad(NULL, "{\"allowOut\":[\"*.example.com\"]}", "'*.example.com'");
	expect_bad(NULL, "{\"denyOut\":[\"300.1.1.1\"]}", "denyOut entry '300.1.1.1'");
	expect_bad(NULL, "{\"denyOut\":[\"10.0.0.1/8\"]}", "host bits");
	expect_bad(NULL, "{\"denyOut\":[\"10.0.0.0/33\"]}", "'10.0.0.0/33'");
	expect_bad(NULL, "{\"allowOut\":[\"1.2.3.4:80\"]}", "ports are not supported");
	expect_bad(NULL, "{\"allowOut\":[\"169.254.169.254\"]}", "never reachable");
	expect_bad(NULL, "{\"allowOut\":[\"127.0.0.1\"]}", "127.0.0.1");
	expect_bad(NULL, "{\"allowOut\":[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}",
		   "overlong");
	expect_bad(NULL, "{\"allowPublicTraffic\":\"no\"}", "allowPublicTraffic");
	expect_bad(NULL, "{\"egressProxy\":{\"address\":\"p:1080\"}}", "egressProxy");
	expect_bad(NULL, "{\"rules\":{\"a.com\":[{}]}}", "network.rules");
	expect_bad(NULL, "{\"httpsPorts\":[3000]}", "httpsPorts");
	expect_bad(NULL, "{\"maskRequestHost\":\"x\"}", "maskRequestHost");
	expect_bad("\"allow_internet_access\":1", NULL, "allow_internet_access");
}

TEST(too_many_entries)
{
	char net[8192];
	size_t o;
	int i;

	o = snprintf(net, sizeof(net), "{\"denyOut\":[");
	for (i = 0; i <= E2B_NET_LIST_MAX; i++)
		o += snprintf(net + o, sizeof(net) - o, "%s\"1.1.%d.%d\"",
			      i ? "," : "", i / 256, i % 256);
	snprintf(net + o, sizeof(net) - o, "]}");
	expect_bad(NULL, net, "more than 100 entries");
}

TEST(the_most_entries_fit)
{
	char net[16384], t[16];
	size_t o;
	int i;

	/* both lists full: what the policy holds at most */
	o = snprintf(net, sizeof(net), "{\"allowOut\":[");
	for (i = 0; i < E2B_NET_LIST_MAX; i++)
		o += snprintf(net + o, sizeof(net) - o, "%s\"1.1.%d.0/24\"",
			      i ? "," : "", i);
	o += snprintf(net + o, sizeof(net) - o, "],\"denyOut\":[");
	for (i = 0; i < E2B_NET_LIST_MAX; i++)
		o += snprintf(net + o, sizeof(net) - o, "%s\"2.2.%d.0/24\"",
			      i ? "," : "", i);
	snprintf(net + o, sizeof(net) - o, "]}");
	ASSERT_EQ(policy_of(NULL, net, t, sizeof(t)), CUBE_NET_LIST);
}

TEST(public_traffic)
{
	struct e2b_new_sandbox r;

	ASSERT_EQ(create(NULL, "{\"allowPublicTraffic\":false}", &r, NULL), 0);
	ASSERT_TRUE(r.net.private_ports);
	ASSERT_FALSE(e2b_net_is_default(&r.net));
	e2b_new_sandbox_free(&r);
	ASSERT_EQ(create(NULL, "{\"allowPublicTraffic\":true}", &r, NULL), 0);
	ASSERT_FALSE(r.net.private_ports);
	e2b_new_sandbox_free(&r);
}

TEST(update_body)
{
	static const char body[] = "{\"allowOut\":[\"1.1.1.1\"],"
		"\"allow_internet_access\":false,\"rules\":{}}";
	struct cube_net_policy *p = malloc(sizeof(*p));
	char err[E2B_MSG_MAX] = "", t[256];
	struct e2b_net n;

	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(e2b_parse_network_update(body, strlen(body), &n, err), 0);
	ASSERT_EQ(n.internet, E2B_FALSE);
	ASSERT_EQ(n.n_allow, 1);
	ASSERT_EQ(e2b_net_policy(&n, p, err), 0);
	rules_text(p, t, sizeof(t));
	ASSERT_STREQ(t, "deny 0.0.0.0/0;deny ::/0;allow 1.1.1.1/32");
	e2b_net_free(&n);
	/* an empty update clears everything: back to internet */
	ASSERT_EQ(e2b_parse_network_update("{}", 2, &n, err), 0);
	ASSERT_TRUE(e2b_net_is_default(&n));
	ASSERT_EQ(e2b_parse_network_update("{\"denyOut\":[\"x.y\"]}", 19, &n, err),
		  -EINVAL);
	ASSERT_TRUE(strstr(err, "'x.y'") != NULL);
	ASSERT_EQ(e2b_parse_network_update("{\"egressProxy\":{\"address\":\"a:1\"}}",
					   34, &n, err), -EINVAL);
	ASSERT_EQ(e2b_parse_network_update("[", 1, &n, err), -EINVAL);
	free(p);
}

TEST(record_round_trip)
{
	struct e2b_new_sandbox r;
	struct json_object *o, *ai;
	struct e2b_net back = { 0 };

	ASSERT_EQ(create("\"allow_internet_access\":false",
			 "{\"allowOut\":[\"1.1.1.1\"],\"denyOut\":[],"
			 "\"allowPublicTraffic\":false}", &r, NULL), 0);
	o = e2b_net_json(&r.net);
	ASSERT_TRUE(o != NULL);
	ASSERT_STREQ(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		     "{\"allowOut\":[\"1.1.1.1\"],\"denyOut\":[],\"allowPublicTraffic\":false}");
	ai = json_object_new_boolean(0);
	e2b_net_from_json(o, ai, &back);
	ASSERT_EQ(back.internet, E2B_FALSE);
	ASSERT_EQ(back.n_allow, 1);
	ASSERT_STREQ(back.allow_out[0], "1.1.1.1");
	ASSERT_TRUE(back.has_deny);
	ASSERT_EQ(back.n_deny, 0);
	ASSERT_TRUE(back.private_ports);
	json_object_put(o);
	json_object_put(ai);
	e2b_net_free(&back);
	e2b_new_sandbox_free(&r);
}

TEST(sandbox_reports)
{
	struct e2b_sandbox sb = { 0 };
	struct json_object *o, *v, *n;

	strcpy(sb.id, "7");
	strcpy(sb.template_id, "base");
	strcpy(sb.envd_token, "tok");
	/* nothing said: allowInternetAccess null, domain null, no token */
	o = e2b_json_sandbox_detail(&sb);
	ASSERT_TRUE(json_object_object_get_ex(o, "allowInternetAccess", &v));
	ASSERT_TRUE(v == NULL);
	ASSERT_TRUE(json_object_object_get_ex(o, "domain", &v));
	ASSERT_TRUE(v == NULL);
	ASSERT_TRUE(json_object_object_get_ex(o, "trafficAccessToken", &v));
	ASSERT_TRUE(v == NULL);
	json_object_put(o);
	sb.domain = "localhost:3001";
	strcpy(sb.traffic_token, "abc");
	sb.net.internet = E2B_FALSE;
	sb.net.private_ports = true;
	o = e2b_json_sandbox_detail(&sb);
	ASSERT_TRUE(json_object_object_get_ex(o, "allowInternetAccess", &v));
	ASSERT_TRUE(json_object_is_type(v, json_type_boolean));
	ASSERT_FALSE(json_object_get_boolean(v));
	ASSERT_TRUE(json_object_object_get_ex(o, "domain", &v));
	ASSERT_STREQ(json_object_get_string(v), "localhost:3001");
	ASSERT_TRUE(json_object_object_get_ex(o, "network", &n));
	ASSERT_TRUE(json_object_object_get_ex(n, "allowPublicTraffic", &v));
	ASSERT_FALSE(json_object_get_boolean(v));
	json_object_put(o);
	o = e2b_json_sandbox(&sb, true);
	ASSERT_TRUE(json_object_object_get_ex(o, "trafficAccessToken", &v));
	ASSERT_STREQ(json_object_get_string(v), "abc");
	ASSERT_TRUE(json_object_object_get_ex(o, "domain", &v));
	ASSERT_STREQ(json_object_get_string(v), "localhost:3001");
	json_object_put(o);
}

TEST_MAIN()
