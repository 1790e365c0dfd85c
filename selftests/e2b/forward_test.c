// SPDX-License-Identifier: GPL-2.0
/*
 * forward_test: envd-plane requests passed on to another sandbox port
 * (E2b-Sandbox-Port, what @e2b/code-interpreter's runCode sends): the
 * port header, the request head sent to the guest (hop-by-hop headers
 * left out, Content-Length and Connection: close of its own, what cannot
 * be sent refused) and the parser of the guest's answer head.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_forward.h"
#include "cube_test.h"

#define P(s)	s, strlen(s)

TEST(port_header)
{
	ASSERT_EQ(e2b_forward_port(NULL), 0);
	ASSERT_EQ(e2b_forward_port("49983"), 0);
	ASSERT_EQ(e2b_forward_port("49999"), 49999);
	ASSERT_EQ(e2b_forward_port("1"), 1);
	ASSERT_EQ(e2b_forward_port("65535"), 65535);
	ASSERT_EQ(e2b_forward_port("65536"), -EINVAL);
	ASSERT_EQ(e2b_forward_port("0"), -EINVAL);
	ASSERT_EQ(e2b_forward_port(""), -EINVAL);
	ASSERT_EQ(e2b_forward_port("-1"), -EINVAL);
	ASSERT_EQ(e2b_forward_port(" 80"), -EINVAL);
	ASSERT_EQ(e2b_forward_port("80x"), -EINVAL);
	ASSERT_EQ(e2b_forward_port("99999999999999999999"), -EINVAL);
}

TEST(request_head)
{
	struct e2b_forward_hdr h[] = {
		{ "Host", "127.0.0.1:43983" },
		{ "Content-Type", "application/json" },
		{ "Connection", "keep-alive" },
		{ "content-length", "17" },
		{ "Transfer-Encoding", "chunked" },
		{ "E2b-Sandbox-Port", "49999" },
		{ "X-Empty", "" },
	};
	size_t len;
	char *s;

	s = e2b_forward_head("POST", "/execute", NULL, h, 7, 17, &len);
	ASSERT_NE(s, NULL);
	ASSERT_EQ(len, strlen(s));
	ASSERT_STREQ(s, "POST /execute HTTP/1.0\r\n"
			"Host: 127.0.0.1:43983\r\n"
			"Content-Type: application/json\r\n"
			"E2b-Sandbox-Port: 49999\r\n"
			"X-Empty: \r\n"
			"Content-Length: 17\r\n"
			"Connection: close\r\n\r\n");
	free(s);

	s = e2b_forward_head("GET", "/contexts", "source=ci&a=b%20c", NULL, 0, 0, &len);
	ASSERT_NE(s, NULL);
	ASSERT_STREQ(s, "GET /contexts?source=ci&a=b%20c HTTP/1.0\r\n"
			"Content-Length: 0\r\nConnection: close\r\n\r\n");
	free(s);
	s = e2b_forward_head("GET", "/", "", NULL, 0, 0, &len);
	ASSERT_NE(s, NULL);
	ASSERT_EQ(strncmp(s, "GET / HTTP/1.0\r\n", 16), 0);
	free(s);
}

TEST(request_head_refusals)
{
	struct e2b_forward_hdr crlf[] = { { "X-A", "a\r\nX-Evil: 1" } };
	struct e2b_forward_hdr name[] = { { "X A", "a" } };
	struct e2b_forward_hdr colon[] = { { "X:A", "a" } };
	struct e2b_forward_hdr tab[] = { { "X-A", "a\tb" } };
	size_t len;
	char *s;

	errno = 0;
	ASSERT_EQ(e2b_forward_head("POST", "/a b", NULL, NULL, 0, 0, &len), NULL);
	ASSERT_EQ(errno, EINVAL);
	ASSERT_EQ(e2b_forward_head("POST", "execute", NULL, NULL, 0, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("PO ST", "/", NULL, NULL, 0, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("", "/", NULL, NULL, 0, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("GET", "/\r\n", NULL, NULL, 0, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("GET", "/", "a\nb", NULL, 0, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("GET", "/", NULL, crlf, 1, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("GET", "/", NULL, name, 1, 0, &len), NULL);
	ASSERT_EQ(e2b_forward_head("GET", "/", NULL, colon, 1, 0, &len), NULL);
	s = e2b_forward_head("GET", "/", NULL, tab, 1, 0, &len);
	ASSERT_NE(s, NULL);
	free(s);
}

TEST(reply_head)
{
	const char *ok = "HTTP/1.0 200 OK\r\nServer: x\r\n"
			 "content-type:  application/x-ndjson \r\n\r\n{\"a\":1}\n";
	const char *cl = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
	const char *noreason = "HTTP/1.0 404\r\nContent-Length: 12\r\n\r\n";
	struct e2b_forward_reply r;
	int n;

	n = e2b_forward_parse_reply(P(ok), &r);
	ASSERT_EQ(n, (int)(strstr(ok, "{") - ok));
	ASSERT_EQ(r.status, 200);
	ASSERT_STREQ(r.content_type, "application/x-ndjson");
	ASSERT_EQ(r.content_length, -1);
	ASSERT_FALSE(r.chunked);

	ASSERT_EQ(e2b_forward_parse_reply(P(cl), &r), (int)strlen(cl));
	ASSERT_EQ(r.status, 204);
	ASSERT_STREQ(r.content_type, "");
	ASSERT_EQ(r.content_length, 0);

	ASSERT_EQ(e2b_forward_parse_reply(P(noreason), &r), (int)strlen(noreason));
	ASSERT_EQ(r.status, 404);
	ASSERT_EQ(r.content_length, 12);

	/* every prefix is incomplete */
	for (size_t i = 0; i < strlen(cl); i++)
		ASSERT_EQ(e2b_forward_parse_reply(cl, i, &r), -EAGAIN);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), &r) > 0, 1);
	ASSERT_TRUE(r.chunked);
}

TEST(reply_head_refusals)
{
	static char big[E2B_FORWARD_HEAD_MAX + 10];
	struct e2b_forward_reply r;

	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/2 200 OK\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("SSH-2.0-x\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 20 OK\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 099 x\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 700 x\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 200 OK\nA: b\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 200 OK\r\nContent-Length: -1\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), &r), -EINVAL);
	ASSERT_EQ(e2b_forward_parse_reply(P("HTTP/1.0 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n"), &r), -EINVAL);
	memset(big, 'a', sizeof(big));
	memcpy(big, "HTTP/1.0 200 OK\r\nX: ", 20);
	ASSERT_EQ(e2b_forward_parse_reply(big, sizeof(big), &r), -E2BIG);
	ASSERT_EQ(e2b_forward_parse_reply(big, E2B_FORWARD_HEAD_MAX - 1, &r), -EAGAIN);
}

TEST_MAIN()
