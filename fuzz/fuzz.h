/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fuzz.h: what the harnesses share: libFuzzer's entry points and a cursor
 * that splits one input into the pieces a harness needs.
 */
#ifndef CUBE_FUZZ_H
#define CUBE_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline struct fuzz_in fuzz_in(const uint8_t *data, size_t size)
{
	return (struct fuzz_in){ .p = data, .left = size };
}

/* One byte, 0 once the input is used up. */
static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v = 0;

	if (in->left) {
		v = *in->p++;
		in->left--;
	}
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t v = fuzz_u8(in);

	return v | (uint16_t)fuzz_u8(in) << 8;
}

/*
 * The next piece up to a '\n' (excluded) or the end; NUL-terminated into
 * @buf of @size bytes, cut when longer.  False when nothing is left.
 */
static inline bool fuzz_line(struct fuzz_in *in, char *buf, size_t size)
{
	const uint8_t *nl;
	size_t n, take;

	if (!in->left)
		return false;
	nl = memchr(in->p, '\n', in->left);
	n = nl ? (size_t)(nl - in->p) : in->left;
	take = n < size - 1 ? n : size - 1;
	memcpy(buf, in->p, take);
	buf[take] = 0;
	in->p += n + (nl ? 1 : 0);
	in->left -= n + (nl ? 1 : 0);
	return true;
}

#endif /* CUBE_FUZZ_H */
