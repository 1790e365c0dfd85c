// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_auth.c: API keys, envd access tokens, the envd user header.
 */
#include <ctype.h>
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

static bool name_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > E2B_KEY_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

int e2b_keys_add_named(struct e2b_keys *k, const char *name, const char *key)
{
	char **nk, **nn, *dup, *ndup;
	size_t i;

	if (!key_valid(key) || (name && !name_valid(name)))
		return -EINVAL;
	for (i = 0; name && i < k->n; i++)
		if (!strcmp(k->names[i], name))
			return -EINVAL;
	dup = strdup(key);
	if (name)
		ndup = strdup(name);
	else if (asprintf(&ndup, "key-%zu", k->n + 1) < 0)
		ndup = NULL;
	if (!dup || !ndup)
		goto nomem;
	nk = realloc(k->keys, (k->n + 1) * sizeof(*nk));
	if (!nk)
		goto nomem;
	k->keys = nk;
	nn = realloc(k->names, (k->n + 1) * sizeof(*nn));
	if (!nn)
		goto nomem;
	k->names = nn;
	nk[k->n] = dup;
	nn[k->n] = ndup;
	k->n++;
	return 0;
nomem:
	if (dup)
		explicit_bzero(dup, strlen(dup));
	free(dup);
	free(ndup);
	return -ENOMEM;
}

int e2b_keys_add(struct e2b_keys *k, const char *key)
{
	return e2b_keys_add_named(k, NULL, key);
}

void e2b_keys_free(struct e2b_keys *k)
{
	size_t i;

	for (i = 0; i < k->n; i++) {
		explicit_bzero(k->keys[i], strlen(k->keys[i]));
		free(k->keys[i]);
		free(k->names[i]);
	}
	free(k->keys);
	free(k->names);
	k->keys = NULL;
	k->names = NULL;
	k->n = 0;
}

int e2b_keys_load(struct e2b_keys *k, const char *path)
{
	struct e2b_keys nk = { 0 };
	char *line = NULL, *sp;
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
		sp = strchr(line, ' ');
		if (sp) {
			*sp = '\0';
			ret = e2b_keys_add_named(&nk, line, sp + 1);
		} else {
			ret = e2b_keys_add(&nk, line);
		}
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

const char *e2b_keys_find(const struct e2b_keys *k, const char *given)
{
	const char *name = NULL;
	size_t i;

	if (!given)
		return NULL;
	for (i = 0; i < k->n; i++)
		if (e2b_secret_equal(k->keys[i], given))
			name = k->names[i];
	return name;
}

bool e2b_keys_check(const struct e2b_keys *k, const char *given)
{
	return e2b_keys_find(k, given) != NULL;
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

/* --- SHA-256 (FIPS 180-4) --- */

/* the first 32 bits of the fractional parts of the square roots of the
 * first 8 primes, and of the cube roots of the first 64 */
static const uint32_t sha_h0[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5,
	0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
	0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5,
	0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], v[8], t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 64; i++)
		w[i] = w[i - 16] + w[i - 7] +
		       (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
		       (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10));
	memcpy(v, h, sizeof(v));
	for (i = 0; i < 64; i++) {
		t1 = v[7] + (ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25)) +
		     ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha_k[i] + w[i];
		t2 = (ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22)) +
		     ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + t2;
	}
	for (i = 0; i < 8; i++)
		h[i] += v[i];
}

void e2b_sha256(const void *data, size_t len, uint8_t out[32])
{
	const uint8_t *p = data;
	uint64_t bits = (uint64_t)len * 8;
	uint8_t tail[128] = { 0 };
	size_t rest, tlen;
	uint32_t h[8];
	int i;

	memcpy(h, sha_h0, sizeof(h));
	for (; len >= 64; p += 64, len -= 64)
		sha_block(h, p);
	/* the rest, 0x80, zeros, and the length in bits, big-endian */
	rest = len;
	memcpy(tail, p, rest);
	tail[rest] = 0x80;
	tlen = rest + 9 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tlen - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha_block(h, tail);
	if (tlen == 128)
		sha_block(h, tail + 64);
	for (i = 0; i < 8; i++) {
		out[4 * i] = h[i] >> 24;
		out[4 * i + 1] = h[i] >> 16;
		out[4 * i + 2] = h[i] >> 8;
		out[4 * i + 3] = h[i];
	}
}

/* --- the SDK's signature --- */

int e2b_file_signature(const char *path, const char *op, const char *user,
		       const char *token, const char *expiration,
		       char out[E2B_SIG_LEN])
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t d[33];
	char *raw, *o;
	int n, i;

	if (expiration)
		n = asprintf(&raw, "%s:%s:%s:%s:%s", path, op, user, token,
			     expiration);
	else
		n = asprintf(&raw, "%s:%s:%s:%s", path, op, user, token);
	if (n < 0)
		return -ENOMEM;
	e2b_sha256(raw, n, d);
	explicit_bzero(raw, n);
	free(raw);
	/* base64 of the 32 bytes: 43 characters, the '=' of padding left out */
	d[32] = 0;
	memcpy(out, "v1_", 3);
	o = out + 3;
	for (i = 0; i < 33; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 |
			     (i + 2 < 33 ? d[i + 2] : 0);

		*o++ = b64[v >> 18 & 63];
		*o++ = b64[v >> 12 & 63];
		*o++ = b64[v >> 6 & 63];
		*o++ = b64[v & 63];
	}
	out[3 + 43] = '\0';
	return 0;
}
