// SPDX-License-Identifier: GPL-2.0
/*
 * auth_test: API key checks, key files, tokens, the envd Basic user header.
 */
#include <errno.h>
#include <stdint.h>
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

static void hex_of(const uint8_t d[32], char out[65])
{
	int i;

	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* FIPS 180-4's examples, and lengths around the padding's edges */
TEST(sha256)
{
	static const struct {
		const char *in;
		size_t repeat;
		const char *hex;
	} v[] = {
		{ "", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "a", 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
		{ "x", 55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072" },
		{ "x", 56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e" },
		{ "x", 64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c" },
	};
	char hex[65];
	uint8_t d[32];
	size_t i, k, len;
	char *buf;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		len = v[i].repeat > 1 ? v[i].repeat : strlen(v[i].in);
		buf = malloc(len + 1);
		ASSERT_TRUE(buf != NULL);
		if (v[i].repeat > 1)
			for (k = 0; k < len; k++)
				buf[k] = v[i].in[0];
		else
			memcpy(buf, v[i].in, len);
		e2b_sha256(buf, len, d);
		hex_of(d, hex);
		ASSERT_STREQ(hex, v[i].hex);
		free(buf);
	}
}

/* what the SDK's uploadUrl() and downloadUrl() send */
TEST(file_signature)
{
	char sig[E2B_SIG_LEN];

	ASSERT_EQ(e2b_file_signature("/a", "read", "user", "tok", "1700000000", sig), 0);
	ASSERT_STREQ(sig, "v1_Sdg3QDTqNFC8Rq818JyMOaFFivjp88ds9Iq8t3oFrQY");
	ASSERT_EQ(e2b_file_signature("/home/user/f.txt", "write", "",
				     "0123456789abcdef0123456789abcdef", NULL, sig), 0);
	ASSERT_STREQ(sig, "v1_IFxSnFaMI7ogXTKyBh9wK38JdEMVwNolGz9dt33w20k");
	ASSERT_EQ(e2b_file_signature("", "write", "", "t", NULL, sig), 0);
	ASSERT_STREQ(sig, "v1_dfahhNbqCfcJiBAATIEu+2A9yQ4Xid1Wb6lu0GVgCos");
	ASSERT_EQ(strlen(sig), E2B_SIG_LEN - 1);
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

	/* a line may name its key; unnamed keys are "key-N" */
	write_file(path, "ci e2b_ci_secret\nbare_secret\nops.team-2 other\n");
	ASSERT_EQ(e2b_keys_load(&k, path), 0);
	ASSERT_EQ(k.n, 3);
	EXPECT_STREQ(e2b_keys_find(&k, "e2b_ci_secret"), "ci");
	EXPECT_STREQ(e2b_keys_find(&k, "bare_secret"), "key-2");
	EXPECT_STREQ(e2b_keys_find(&k, "other"), "ops.team-2");
	EXPECT_TRUE(e2b_keys_find(&k, "ci") == NULL);
	EXPECT_TRUE(e2b_keys_find(&k, NULL) == NULL);
	e2b_keys_free(&k);

	/* two spaces, a bad name, a taken name: the whole file is refused */
	write_file(path, "good\nbad key here\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -EINVAL);
	ASSERT_EQ(k.n, 0);
	ASSERT_TRUE(k.keys == NULL);
	write_file(path, "na/me key\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -EINVAL);
	write_file(path, " key\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -EINVAL);
	write_file(path, "a key1\na key2\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -EINVAL);
	write_file(path, "0123456789012345678901234567890123 key\n");
	ASSERT_EQ(e2b_keys_load(&k, path), -EINVAL);
	ASSERT_TRUE(k.keys == NULL && k.names == NULL);

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
