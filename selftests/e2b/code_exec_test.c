// SPDX-License-Identifier: GPL-2.0
/*
 * code_exec_test: the parser of the code interpreter's answer lines that
 * cubectl run uses (e2b/code_exec.c): each message type, images, and
 * lines it refuses.
 */
#include <errno.h>
#include <string.h>

#include "code_exec.h"
#include "cube_test.h"

#define P(s)	s, strlen(s)

TEST(messages)
{
	struct code_event ev;
	const char *ext;

	ASSERT_EQ(code_event_parse(P("{\"type\":\"stdout\",\"text\":\"4\\n\"}"), &ev), 0);
	ASSERT_EQ(ev.type, CODE_STDOUT);
	ASSERT_STREQ(ev.text, "4\n");
	code_event_free(&ev);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"stderr\",\"text\":\"e\"}"), &ev), 0);
	ASSERT_EQ(ev.type, CODE_STDERR);
	code_event_free(&ev);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"result\",\"is_main_result\":true,\"text\":\"42\"}"), &ev), 0);
	ASSERT_EQ(ev.type, CODE_RESULT);
	ASSERT_TRUE(ev.is_main);
	ASSERT_STREQ(ev.text, "42");
	ASSERT_EQ(code_event_image(&ev, &ext), NULL);
	code_event_free(&ev);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"result\",\"is_main_result\":false,\"text\":\"<Figure>\",\"png\":\"iVBO\"}"), &ev), 0);
	ASSERT_FALSE(ev.is_main);
	ASSERT_STREQ(code_event_image(&ev, &ext), "iVBO");
	ASSERT_STREQ(ext, "png");
	code_event_free(&ev);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"error\",\"name\":\"ZeroDivisionError\",\"value\":\"division by zero\",\"traceback\":\"tb\"}"), &ev), 0);
	ASSERT_EQ(ev.type, CODE_ERROR);
	ASSERT_STREQ(ev.name, "ZeroDivisionError");
	ASSERT_STREQ(ev.value, "division by zero");
	ASSERT_STREQ(ev.traceback, "tb");
	code_event_free(&ev);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"number_of_executions\",\"execution_count\":7}"), &ev), 0);
	ASSERT_EQ(ev.type, CODE_COUNT);
	ASSERT_EQ(ev.count, 7);
	code_event_free(&ev);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"something_new\"}"), &ev), 0);
	ASSERT_EQ(ev.type, CODE_OTHER);
	code_event_free(&ev);
}

TEST(refusals)
{
	struct code_event ev;

	ASSERT_EQ(code_event_parse(P(""), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("[1]"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"text\":\"x\"}"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"type\":1}"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"stdout\"}"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"error\",\"value\":\"v\"}"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"number_of_executions\"}"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"stdout\",\"text\":\"a\"} x"), &ev), -EINVAL);
	ASSERT_EQ(code_event_parse(P("{\"type\":\"stdout\",\"text\":\"a\""), &ev), -EINVAL);
}

TEST_MAIN()
