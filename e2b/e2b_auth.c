// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_auth.c: API keys, envd access tokens, the envd user header.
 */
#include <errno.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "e2b_auth.h"

bool e2b_secret_equal(const char *secret, const char *given)
{
	size_t ls = strlen(secret), lg, i;
	volatile unsigned char diff;

	if (!given)
		given = "";
	lg = strnlen(given, E2B_KEY_MAX + 1);
	diff = ls != lg;
	/*
	 * Walk the secret's length whatever was given; index the candidate
	 * modulo its length so a short guess reads only its own bytes.
	 */
	for (i = 0; i < ls; i++) {
		unsigned char g = lg ? (unsigned char)given[i % lg] : 0;

		diff |= (unsigned char)secret[i] ^ g;
	}
	return !ls ? false : diff == 0;
}

static bool key_valid(const char *key)
{
	size_t n = strlen(key), i;

	if (!n || n > E2B_KEY_MAX)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)key[i] <= 0x20 || (unsigned char)key[i] >= 0x7f)
			return false;
	return true;
}

int e2b_keys_add(struct e2b_keys *k, const char *key)
{
	char **nk, *dup;

	if (!key_valid(key))
		return -EINVAL;
	dup = strdup(key);
	if (!dup)
		return -ENOMEM;
	nk = realloc(k->keys, (k->n + 1) * sizeof(*nk));
	if (!nk) {
		free(dup);
		return -ENOMEM;
	}
	nk[k->n++] = dup;
	k->keys = nk;
	return 0;
}

void e2b_keys_free(struct e2b_keys *k)
{
	size_t i;

	for (i = 0; i < k->n; i++) {
		explicit_bzero(k->keys[i], strlen(k->keys[i]));
		free(k->keys[i]);
	}
	free(k->keys);
	k->keys = NULL;
	k->n = 0;
}

int e2b_keys_load(struct e2b_keys *k, const char *path)
{
	struct e2b_keys nk = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int ret = 0;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	while ((len = getline(&line, &cap, f)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		ret = e2b_keys_add(&nk, line);
		if (ret)
			break;
	}
	if (!ret && ferror(f))
		ret = -EIO;
	fclose(f);
	if (line) {
		explicit_bzero(line, cap);
		free(line);
	}
	if (!ret && !nk.n)
		ret = -ENOKEY;
	if (ret) {
		e2b_keys_free(&nk);
		return ret;
	}
	*k = nk;
	return 0;
}

bool e2b_keys_check(const struct e2b_keys *k, const char *given)
{
	bool ok = false;
	size_t i;

	if (!given)
		return false;
	for (i = 0; i < k->n; i++)
		ok |= e2b_secret_equal(k->keys[i], given);
	return ok;
}

int e2b_token_new(char buf[E2B_TOKEN_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[E2B_TOKEN_LEN / 2];
	size_t got = 0;
	int i;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += n;
	}
	for (i = 0; i < E2B_TOKEN_LEN / 2; i++) {
		buf[2 * i] = hex[raw[i] >> 4];
		buf[2 * i + 1] = hex[raw[i] & 15];
	}
	buf[E2B_TOKEN_LEN] = '\0';
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

const char *e2b_bearer(const char *hdr)
{
	if (!hdr || strncasecmp(hdr, "Bearer ", 7))
		return NULL;
	hdr += 7;
	while (*hdr == ' ')
		hdr++;
	return hdr;
}

bool e2b_user_valid(const char *s)
{
	size_t i;

	if (!s[0] || strlen(s) > E2B_USER_MAX)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (i = 1; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

int e2b_basic_user(const char *hdr, char user[E2B_USER_MAX + 1])
{
	unsigned char dec[E2B_USER_MAX + 8];
	char *colon;
	int n;

	user[0] = '\0';
	if (!hdr)
		return 0;
	if (strncasecmp(hdr, "Basic ", 6))
		return -EINVAL;
	hdr += 6;
	while (*hdr == ' ')
		hdr++;
	/* b64_pton needs room for the whole decoded value */
	if (strlen(hdr) > (sizeof(dec) - 1) / 3 * 4)
		return -EINVAL;
	n = b64_pton(hdr, dec, sizeof(dec) - 1);
	if (n < 0)
		return -EINVAL;
	dec[n] = '\0';
	if (memchr(dec, '\0', n))
		return -EINVAL;
	colon = strchr((char *)dec, ':');
	if (!colon)
		return -EINVAL;
	*colon = '\0';
	if (!e2b_user_valid((char *)dec))
		return -EINVAL;
	strcpy(user, (char *)dec);
	return 0;
}
