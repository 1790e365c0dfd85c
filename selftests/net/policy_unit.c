// SPDX-License-Identifier: GPL-2.0
/*
 * policy_unit: the egress policy's file format and its precedence, natively
 * (no root, no kernel): lib/cube_net_policy.c alone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cube_test.h"
#include "cube_net_int.h"

static struct cube_net_policy pol;
static struct cube_net_entry ent[CUBE_EGRESS_TRIE_MAX];
static unsigned int nent;
static char err[CUBE_NET_ERR_MAX];

static int parse(const char *text)
{
	err[0] = '\0';
	memset(&pol, 0x5a, sizeof(pol));
	return cube_net_policy_parse_text(text, "p", &pol, err);
}

static int compile(void)
{
	return cube_net_policy_compile(&pol, 1, ent, &nent, err);
}

/* the verdict for "A.B.C.D" or an IPv6 address, port -1: none */
static unsigned int verdict(const char *dst, int port)
{
	uint8_t a[16] = { 0 };
	int fam = strchr(dst, ':') ? AF_INET6 : AF_INET;

	inet_pton(fam, dst, a);
	return cube_net_policy_eval(ent, nent, fam, a, port);
}

#define PASS	CUBE_EGRESS_PASS
#define POLICY	CUBE_EGRESS_DROP_POLICY
#define PRIVATE	CUBE_EGRESS_DROP_PRIVATE

TEST(cidr_forms)
{
	struct cube_net_rule r;

	ASSERT_OK(cube_net_parse_cidr("203.0.113.0/24", &r, err));
	EXPECT_EQ(r.family, AF_INET);
	EXPECT_EQ(r.plen, 24);
	EXPECT_EQ(r.port_lo, 0);
	ASSERT_OK(cube_net_parse_cidr("203.0.113.7", &r, err));
	EXPECT_EQ(r.plen, 32);
	ASSERT_OK(cube_net_parse_cidr("203.0.113.7:443", &r, err));
	EXPECT_EQ(r.port_lo, 443);
	EXPECT_EQ(r.port_hi, 443);
	ASSERT_OK(cube_net_parse_cidr("10.0.0.0/8:8000-8100", &r, err));
	EXPECT_EQ(r.port_lo, 8000);
	EXPECT_EQ(r.port_hi, 8100);
	ASSERT_OK(cube_net_parse_cidr("0.0.0.0/0", &r, err));
	EXPECT_EQ(r.plen, 0);
	ASSERT_OK(cube_net_parse_cidr("2001:db8::/32", &r, err));
	EXPECT_EQ(r.family, AF_INET6);
	EXPECT_EQ(r.plen, 32);
	ASSERT_OK(cube_net_parse_cidr("2001:db8::1", &r, err));
	EXPECT_EQ(r.plen, 128);
	EXPECT_EQ(r.port_lo, 0);
	ASSERT_OK(cube_net_parse_cidr("2001:db8::/32:443", &r, err));
	EXPECT_EQ(r.port_lo, 443);
	ASSERT_OK(cube_net_parse_cidr("[2001:db8::1]:53", &r, err));
	EXPECT_EQ(r.plen, 128);
	EXPECT_EQ(r.port_lo, 53);
	ASSERT_OK(cube_net_parse_cidr("[2001:db8::/48]:1-1024", &r, err));
	EXPECT_EQ(r.plen, 48);
	EXPECT_EQ(r.port_hi, 1024);
	ASSERT_OK(cube_net_parse_cidr("::/0", &r, err));
	EXPECT_EQ(r.plen, 0);
}

TEST(cidr_refused)
{
	static const char *const bad[] = {
		"", "banana", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4/33",
		"1.2.3.4/-1", "1.2.3.4/", "1.2.3.4/8", "10.0.0.1/8",
		"2001:db8::1/32", "2001:db8::/129", "1.2.3.4:0", "1.2.3.4:65536",
		"1.2.3.4:80-79", "1.2.3.4:80-", "1.2.3.4:-80", "1.2.3.4:http",
		"1.2.3.4:80x", "[2001:db8::1", "[2001:db8::1]x", "[1.2.3.4]:99999",
		"1.2.3.4/24/8", " 1.2.3.4", "1.2.3.0/024x",
		NULL,
	};
	struct cube_net_rule r;
	int i;

	for (i = 0; bad[i]; i++) {
		err[0] = '\0';
		EXPECT_EQ(cube_net_parse_cidr(bad[i], &r, err), -EINVAL);
		if (!err[0])
			ct_diag("no reason given for '%s'", bad[i]);
		EXPECT_NE(err[0], '\0');
	}
}

TEST(file_refused_and_untouched)
{
	static const char *const bad[] = {
		"allow\n",
		"allow 1.2.3.4 5.6.7.8\n",
		"permit 1.2.3.4\n",
		"Allow 1.2.3.4\n",
		"allow 1.2.3.4\ndeny 10.0.0.1/8\n",
		"allow 169.254.169.254\n",	/* never reachable */
		"allow fe80::/64\n",
		"allow 127.0.0.1:80\n",
		NULL,
	};
	char big[300 * 32];
	int i, off = 0;

	for (i = 0; bad[i]; i++) {
		EXPECT_EQ(parse(bad[i]), -EINVAL);
		EXPECT_EQ(pol.nrules, 0x5a5a5a5au);	/* not written */
		EXPECT_NE(strstr(err, "p:"), NULL);
	}
	/* the line number is named */
	EXPECT_EQ(parse("# fine\nallow 1.2.3.4\n\ndeny nope\n"), -EINVAL);
	EXPECT_NE(strstr(err, "p:4:"), NULL);
	/* too many rules */
	for (i = 0; i < CUBE_NET_RULES_MAX + 1; i++)
		off += snprintf(big + off, sizeof(big) - off, "deny 198.18.%d.%d\n", i / 250, i % 250);
	EXPECT_EQ(parse(big), -E2BIG);
	/* too many port rules for one prefix, inherited ones counted */
	off = 0;
	for (i = 0; i < 10; i++)
		off += snprintf(big + off, sizeof(big) - off, "allow 0.0.0.0/0:%d\n", 100 + i);
	for (i = 0; i < 7; i++)
		off += snprintf(big + off, sizeof(big) - off, "allow 203.0.113.0/24:%d\n", 200 + i);
	EXPECT_EQ(parse(big), -E2BIG);
	EXPECT_NE(strstr(err, "203.0.113.0/24"), NULL);
	/* a long line */
	memset(big, 'a', 400);
	big[400] = '\0';
	EXPECT_EQ(parse(big), -EINVAL);
}

TEST(args_and_files)
{
	char path[] = "/tmp/cube-policy-XXXXXX";
	const char *text = "allow 203.0.113.0/24:443 # web\n\tdeny 203.0.113.9\n";
	int fd;

	ASSERT_OK(cube_net_policy_parse_arg("internet", &pol, err));
	EXPECT_EQ(pol.mode, CUBE_NET_INTERNET);
	ASSERT_OK(cube_net_policy_parse_arg("deny", &pol, err));
	EXPECT_EQ(pol.mode, CUBE_NET_DENY);
	ASSERT_OK(cube_net_policy_parse_arg("none", &pol, err));
	EXPECT_EQ(pol.mode, CUBE_NET_NONE);
	EXPECT_EQ(cube_net_policy_parse_arg("", &pol, err), -EINVAL);
	EXPECT_EQ(cube_net_policy_parse_arg("/nonexistent/policy", &pol, err), -ENOENT);
	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ASSERT_OK(cube_net_policy_parse_arg(path, &pol, err));
	EXPECT_EQ(pol.mode, CUBE_NET_LIST);
	EXPECT_EQ(pol.nrules, 2u);
	/* binary content */
	fd = open(path, O_WRONLY | O_TRUNC);
	ASSERT_EQ(write(fd, "allow 1.2.3.4\0", 14), 14);
	close(fd);
	EXPECT_EQ(cube_net_policy_parse_arg(path, &pol, err), -EINVAL);
	unlink(path);
}

TEST(encode_round_trip)
{
	struct cube_net_policy back;
	char buf[16384];
	unsigned int i;

	ASSERT_OK(parse("allow 203.0.113.0/24:443\ndeny 2001:db8::/32\n"
			"allow [2001:db8::1]:80-90\nallow 10.0.0.0/8\n"));
	ASSERT_GT(cube_net_policy_encode(&pol, buf, sizeof(buf)), 0);
	ASSERT_OK(cube_net_policy_decode(buf, &back, err));
	EXPECT_EQ(back.mode, CUBE_NET_LIST);
	ASSERT_EQ(back.nrules, pol.nrules);
	for (i = 0; i < pol.nrules; i++)
		EXPECT_EQ(memcmp(&back.rules[i], &pol.rules[i], sizeof(pol.rules[i])), 0);
	EXPECT_EQ(cube_net_policy_encode(&pol, buf, 10), -ENOSPC);
	pol.mode = CUBE_NET_INTERNET;
	ASSERT_GT(cube_net_policy_encode(&pol, buf, sizeof(buf)), 0);
	EXPECT_STREQ(buf, "internet");
	EXPECT_EQ(cube_net_policy_decode("rules:allow nope\n", &back, err), -EINVAL);
	EXPECT_EQ(cube_net_policy_decode("everything", &back, err), -EINVAL);
	/* compiled and read back: the own rules only */
	ASSERT_OK(parse("allow 203.0.113.0/24:443\ndeny 203.0.113.9\nallow 0.0.0.0/0:22\n"));
	ASSERT_OK(compile());
	ASSERT_OK(cube_net_policy_decompile(ent, nent, &back, NULL));
	EXPECT_EQ(back.nrules, 3u);
}

TEST(precedence)
{
	ASSERT_OK(parse("allow 203.0.113.0/24\n"
			"deny 203.0.113.9\n"
			"deny 203.0.113.0/24:25\n"
			"allow 203.0.113.7/32:25\n"
			"allow 198.51.100.0/24:8000-8100\n"
			"deny 198.51.100.0/24:8080\n"
			"allow 10.1.0.0/16:80\n"
			"allow 0.0.0.0/0:443\n"
			"allow 2001:db8::/32\n"
			"deny 2001:db8:1::/48\n"));
	ASSERT_OK(compile());
	EXPECT_EQ(verdict("203.0.113.5", 80), PASS);
	EXPECT_EQ(verdict("203.0.113.5", -1), PASS);	/* ICMP */
	EXPECT_EQ(verdict("203.0.113.9", 80), POLICY);	/* the /32 wins */
	EXPECT_EQ(verdict("203.0.113.5", 25), POLICY);	/* ports win at one prefix */
	EXPECT_EQ(verdict("203.0.113.7", 25), PASS);	/* the /32 wins */
	EXPECT_EQ(verdict("203.0.113.7", 80), PASS);	/* inherited from the /24 */
	EXPECT_EQ(verdict("198.51.100.1", 8000), PASS);
	EXPECT_EQ(verdict("198.51.100.1", 8100), PASS);
	EXPECT_EQ(verdict("198.51.100.1", 8080), POLICY);	/* deny wins at one prefix */
	EXPECT_EQ(verdict("198.51.100.1", 8101), POLICY);
	EXPECT_EQ(verdict("198.51.100.1", 443), PASS);	/* from 0.0.0.0/0 */
	EXPECT_EQ(verdict("198.51.100.1", -1), POLICY);
	EXPECT_EQ(verdict("192.0.2.1", 80), POLICY);	/* nothing allows it */
	EXPECT_EQ(verdict("10.1.2.3", 80), PASS);	/* named private */
	EXPECT_EQ(verdict("10.1.2.3", 443), PRIVATE);	/* 0.0.0.0/0 names none */
	EXPECT_EQ(verdict("10.2.0.1", 80), POLICY);
	EXPECT_EQ(verdict("192.168.1.1", 443), PRIVATE);
	EXPECT_EQ(verdict("2001:db8::5", 80), PASS);
	EXPECT_EQ(verdict("2001:db8:1::5", 80), POLICY);
	EXPECT_EQ(verdict("2001:db9::5", 80), POLICY);
}

TEST(modes)
{
	memset(&pol, 0, sizeof(pol));
	pol.mode = CUBE_NET_INTERNET;
	ASSERT_OK(compile());
	EXPECT_EQ(ent[0].key.kind, CUBE_EGRESS_KIND_HDR);
	EXPECT_TRUE(ent[0].val.hflags & CUBE_EGRESS_H_DNS);
	EXPECT_EQ(verdict("203.0.113.5", 80), PASS);
	EXPECT_EQ(verdict("203.0.113.5", -1), PASS);
	EXPECT_EQ(verdict("2001:db8::1", 443), PASS);
	EXPECT_EQ(verdict("10.0.0.1", 80), PRIVATE);
	EXPECT_EQ(verdict("172.16.0.1", 80), PRIVATE);
	EXPECT_EQ(verdict("100.64.0.1", 80), PRIVATE);
	EXPECT_EQ(verdict("fd00::1", 80), PRIVATE);
	EXPECT_EQ(verdict("224.0.0.1", 80), PRIVATE);
	pol.mode = CUBE_NET_DENY;
	ASSERT_OK(compile());
	EXPECT_EQ(nent, 1u);
	EXPECT_FALSE(ent[0].val.hflags & CUBE_EGRESS_H_DNS);
	EXPECT_EQ(verdict("203.0.113.5", 80), POLICY);
	EXPECT_EQ(verdict("2001:db8::1", 80), POLICY);
	ASSERT_OK(parse(""));
	EXPECT_EQ(pol.mode, CUBE_NET_LIST);
	EXPECT_EQ(pol.nrules, 0u);
}

TEST_MAIN()
