/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_auth.h: API keys, envd access tokens, the envd user header.
 *
 * Every secret comparison here takes time that depends only on the length
 * of the secret configured on the server, never on where a guess differs.
 */
#ifndef CUBE_E2B_AUTH_H
#define CUBE_E2B_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define E2B_KEY_MAX	256	/* longest accepted API key */
#define E2B_TOKEN_LEN	32	/* hex characters of a generated token */
#define E2B_USER_MAX	32	/* longest Linux user name */

/**
 * e2b_secret_equal() - compare a secret with a candidate in constant time
 * @secret: the configured value
 * @given: what the client sent (may be NULL)
 */
bool e2b_secret_equal(const char *secret, const char *given);

#define E2B_KEY_NAME_MAX	32	/* longest name of a key */

/**
 * struct e2b_keys - the API keys a server accepts
 * @keys: NUL-terminated keys
 * @names: their names, what logs say instead of the key ("key-N", the
 *	N-th key, unless the keys file names it)
 * @n: their number
 */
struct e2b_keys {
	char **keys;
	char **names;
	size_t n;
};

/**
 * e2b_keys_load() - read keys from a file, one a line
 * @k: filled on success (e2b_keys_free() it)
 * @path: the file; blank lines and lines starting with '#' are skipped; a
 *	line is a key, or a name, one space and a key
 *
 * Return: 0, -errno of opening or reading it, -EINVAL when a line is longer
 * than %E2B_KEY_MAX or holds a control character, more than one space, or a
 * name that is not 1..%E2B_KEY_NAME_MAX of [A-Za-z0-9._-] or is taken,
 * -ENOKEY when the file holds no key.
 */
int e2b_keys_load(struct e2b_keys *k, const char *path);

/**
 * e2b_keys_add() - accept one more key, named "key-N"
 *
 * Return: 0, -EINVAL for an empty, overlong or unprintable key, -ENOMEM.
 */
int e2b_keys_add(struct e2b_keys *k, const char *key);

/**
 * e2b_keys_add_named() - accept one more key, with a name (NULL: "key-N")
 *
 * Return: 0, -EINVAL for a bad key or name or a name already taken,
 * -ENOMEM.
 */
int e2b_keys_add_named(struct e2b_keys *k, const char *name, const char *key);

void e2b_keys_free(struct e2b_keys *k);

/**
 * e2b_keys_check() - whether @given is one of the keys
 *
 * Every key is compared, whatever matched, so the answer's timing tells
 * nothing about which key matched or how much of it.
 */
bool e2b_keys_check(const struct e2b_keys *k, const char *given);

/**
 * e2b_keys_find() - the name of the key @given is, or NULL
 *
 * Compares every key, as e2b_keys_check() does.
 */
const char *e2b_keys_find(const struct e2b_keys *k, const char *given);

/**
 * e2b_token_new() - a fresh random token
 * @buf: at least %E2B_TOKEN_LEN + 1 bytes
 *
 * Return: 0 or -errno of getrandom().
 */
int e2b_token_new(char buf[E2B_TOKEN_LEN + 1]);

/**
 * e2b_bearer() - the token of an "Authorization: Bearer <token>" header
 *
 * Return: a pointer into @hdr, NULL when @hdr is NULL or no Bearer header.
 */
const char *e2b_bearer(const char *hdr);

/**
 * e2b_basic_user() - the user named by "Authorization: Basic b64(user:)"
 * @hdr: the header value, NULL when absent
 * @user: set to the name ("" when @hdr is NULL)
 *
 * Return: 0; -EINVAL when the header is malformed or the name is no valid
 * Linux user name ([a-z_][a-z0-9_-]*, at most %E2B_USER_MAX characters).
 */
int e2b_basic_user(const char *hdr, char user[E2B_USER_MAX + 1]);

/** e2b_user_valid() - whether @s is a user name e2b_basic_user() accepts */
bool e2b_user_valid(const char *s);

/*
 * Signed file URLs, the SDK's uploadUrl() and downloadUrl().  The SDK
 * signs "<path>:<operation>:<user>:<envdAccessToken>" (":<expiration>"
 * appended when the URL expires) with SHA-256 and sends "v1_" + the
 * digest in base64 without padding as the `signature` argument of GET
 * /files (operation "read") or POST /files ("write"), beside `path`,
 * `username` and `signature_expiration` (Unix seconds).
 */

/* "v1_" + 43 base64 characters + NUL */
#define E2B_SIG_LEN	(3 + 43 + 1)

/** e2b_sha256() - the SHA-256 digest of @len bytes at @data */
void e2b_sha256(const void *data, size_t len, uint8_t out[32]);

/**
 * e2b_file_signature() - the signature the SDK makes
 * @path, @op, @user, @token: as signed ("" for no path or user)
 * @expiration: the decimal Unix time, or NULL for a URL that never expires
 * @out: receives "v1_..." (E2B_SIG_LEN bytes)
 *
 * Return: 0, or -ENOMEM.
 */
int e2b_file_signature(const char *path, const char *op, const char *user,
		       const char *token, const char *expiration,
		       char out[E2B_SIG_LEN]);

#endif /* CUBE_E2B_AUTH_H */
