// SPDX-License-Identifier: GPL-2.0
/*
 * auth_test: API key checks, key files, tokens, the envd Basic user header.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2b_auth.h"
#include "cube_test.h"

TEST(secret_equal)
{
	ASSERT_TRUE(e2b_secret_equal("abc", "abc"));
	ASSERT_FALSE(e2b_secret_equal("abc", "abd"));
	ASSERT_FALSE(e2b_secret_equal("abc", "ab"));
	ASSERT_FALSE(e2b_secret_equal("abc", "abcd"));
	ASSERT_FALSE(e2b_secret_equal("abc", "abcabc"));
	ASSERT_FALSE(e2b_secret_equal("abc", ""));
	ASSERT_FALSE(e2b_secret_equal("abc", NULL));
	/* an empty secret never matches, not even an empty candidate */
	ASSERT_FALSE(e2b_secret_equal("", ""));
	ASSERT_FALSE(e2b_secret_equal("", NULL));
}

TEST(keys_check)
{
	struct e2b_keys k = { 0 };

	ASSERT_FALSE(e2b_keys_check(&k, "x"));
	ASSERT_EQ(e2b_keys_add(&k, "e2b_first"), 0);
	ASSERT_EQ(e2b_keys_add(&k, "second"), 0);
	ASSERT_TRUE(e2b_keys_check(&k, "e2b_first"));
	ASSERT_TRUE(e2b_keys_check(&k, "second"));
	ASSERT_FALSE(e2b_keys_check(&k, "secon"));
	ASSERT_FALSE(e2b_keys_check(&k, NULL));
	ASSERT_FALSE(e2b_keys_check(&k, ""));
	e2b_keys_free(&k);
	ASSERT_EQ(k.n, 0);
}

TEST(keys_add_rejects)
{
	char big[E2B_KEY_MAX + 2];
	struct e2b_keys k = { 0 };

	ASSERT_EQ(e2b_keys_add(&k, ""), -EINVAL);
	ASSERT_EQ(e2b_keys_add(&k, "has space"), -EINVAL);
	ASSERT_EQ(e2b_keys_add(&k, "tab\t"), -EINVAL);
	ASSERT_EQ(e2b_keys_add(&k, "del\x7f"), -EINVAL);
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ASSERT_EQ(e2b_keys_add(&k, big), -EINVAL);
	big[E2B_KEY_MAX] = '\0';
	ASSERT_EQ(e2b_keys_add(&k, big), 0);
	ASSERT_EQ(k.n, 1);
	e2b_keys_free(&k);
}

static void write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	ASSERT_TRUE(f != NULL);
	fputs(s, f);
	fclose(f);
}

TEST(keys_load)
{
	char path[] = "/tmp/cube-keys-XXXXXX";
	struct e2b_keys k = { 0 };
	int fd = mkstemp(path);

	ASSERT_GE(fd, 0);
	close(fd);
	write_file(path, "# comment\n\nkey-one\r\nkey-two\n");
	ASSERT_EQ(e2b_keys_load(&k, path), 0);
	ASSERT_EQ(k.n, 2);
	ASSERT_TRUE(e2b_keys_check(&k, "key-one"));
	ASSERT_TRUE(e2b_keys_check(&k, "key-two"));
	e2b_keys_free(&k);

	write_file(path, "# only a comment\n\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -ENOKEY);
	ASSERT_EQ(k.n, 0);

	write_file(path, "good\nbad key\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -EINVAL);
	ASSERT_EQ(k.n, 0);
	ASSERT_TRUE(k.keys == NULL);

	unlink(path);
	ASSERT_EQ(e2b_keys_load(&k, path), -ENOENT);
}

TEST(tokens)
{
	char a[E2B_TOKEN_LEN + 1], b[E2B_TOKEN_LEN + 1];
	size_t i;

	ASSERT_EQ(e2b_token_new(a), 0);
	ASSERT_EQ(e2b_token_new(b), 0);
	ASSERT_EQ(strlen(a), E2B_TOKEN_LEN);
	ASSERT_TRUE(strcmp(a, b) != 0);
	for (i = 0; i < E2B_TOKEN_LEN; i++)
		ASSERT_TRUE(strchr("0123456789abcdef", a[i]) != NULL);
}

TEST(bearer)
{
	ASSERT_STREQ(e2b_bearer("Bearer tok"), "tok");
	ASSERT_STREQ(e2b_bearer("bearer  tok"), "tok");
	ASSERT_TRUE(e2b_bearer("Basic abc") == NULL);
	ASSERT_TRUE(e2b_bearer("Bearer") == NULL);
	ASSERT_TRUE(e2b_bearer(NULL) == NULL);
}

TEST(basic_user)
{
	char u[E2B_USER_MAX + 1];

	/* base64("user:") and base64("root:") */
	ASSERT_EQ(e2b_basic_user("Basic dXNlcjo=", u), 0);
	ASSERT_STREQ(u, "user");
	ASSERT_EQ(e2b_basic_user("basic cm9vdDo=", u), 0);
	ASSERT_STREQ(u, "root");
	/* a password after the colon is ignored */
	ASSERT_EQ(e2b_basic_user("Basic cm9vdDpwdw==", u), 0);
	ASSERT_STREQ(u, "root");
	ASSERT_EQ(e2b_basic_user(NULL, u), 0);
	ASSERT_STREQ(u, "");
}

TEST(basic_user_rejects)
{
	char u[E2B_USER_MAX + 1];

	ASSERT_EQ(e2b_basic_user("Bearer dXNlcjo=", u), -EINVAL);
	ASSERT_EQ(e2b_basic_user("Basic !!!!", u), -EINVAL);
	/* base64("user") has no colon */
	ASSERT_EQ(e2b_basic_user("Basic dXNlcg==", u), -EINVAL);
	/* base64("../x:") is no user name */
	ASSERT_EQ(e2b_basic_user("Basic Li4veDo=", u), -EINVAL);
	/* base64(":") is an empty name */
	ASSERT_EQ(e2b_basic_user("Basic Og==", u), -EINVAL);
	/* base64("Root:"): upper case */
	ASSERT_EQ(e2b_basic_user("Basic Um9vdDo=", u), -EINVAL);
	/* far too long */
	ASSERT_EQ(e2b_basic_user("Basic YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE6", u), -EINVAL);
	/* base64("a\0b:") embeds a NUL */
	ASSERT_EQ(e2b_basic_user("Basic YQBiOg==", u), -EINVAL);
	ASSERT_STREQ(u, "");
}

TEST(user_valid)
{
	ASSERT_TRUE(e2b_user_valid("user"));
	ASSERT_TRUE(e2b_user_valid("_svc-1"));
	ASSERT_FALSE(e2b_user_valid(""));
	ASSERT_FALSE(e2b_user_valid("1user"));
	ASSERT_FALSE(e2b_user_valid("us er"));
	ASSERT_FALSE(e2b_user_valid("a/b"));
}

TEST_MAIN()
