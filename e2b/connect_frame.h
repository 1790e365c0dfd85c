/* SPDX-License-Identifier: GPL-2.0 */
/*
 * connect_frame.h: Connect-RPC envelopes and error codes.
 *
 * A streamed Connect message travels in an envelope: one flag byte, a 4-byte
 * big-endian payload length, then the payload (JSON here).  Flag bit 0x01
 * marks a compressed payload (never used nor accepted here), bit 0x02 the
 * end-of-stream message that closes a server stream.
 */
#ifndef CUBE_CONNECT_FRAME_H
#define CUBE_CONNECT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define CF_HDR_LEN		5
#define CF_FLAG_COMPRESSED	0x01
#define CF_FLAG_END_STREAM	0x02

/* Largest envelope payload a decoder accepts unless told otherwise. */
#define CF_DEFAULT_MAX		(1u << 20)

/**
 * cf_put_header() - write an envelope header
 * @hdr: CF_HDR_LEN bytes
 * @flags: CF_FLAG_*
 * @len: payload length
 */
void cf_put_header(uint8_t hdr[CF_HDR_LEN], uint8_t flags, uint32_t len);

/**
 * cf_frame() - a newly allocated envelope holding @payload
 * @flags: CF_FLAG_*
 * @payload: message bytes (may be NULL when @len is 0)
 * @len: their number
 * @out_len: set to the envelope's length
 *
 * Return: the envelope (free() it), NULL when out of memory or @len does not
 * fit the 32-bit length field.
 */
uint8_t *cf_frame(uint8_t flags, const void *payload, size_t len,
		  size_t *out_len);

/**
 * struct cf_decoder - incremental envelope parser
 * @max: largest accepted payload
 * @hdr: header bytes gathered so far
 * @hdr_have: how many
 * @flags: flags of the message being gathered
 * @buf: its payload
 * @len: its declared length
 * @have: payload bytes gathered
 */
struct cf_decoder {
	size_t max;
	uint8_t hdr[CF_HDR_LEN];
	size_t hdr_have;
	uint8_t flags;
	uint8_t *buf;
	size_t len;
	size_t have;
};

void cf_decoder_init(struct cf_decoder *d, size_t max);
void cf_decoder_free(struct cf_decoder *d);

/**
 * cf_decode() - feed bytes; stop at the end of the first complete message
 * @d: decoder
 * @data: input
 * @len: input length
 * @used: set to how many input bytes were consumed
 *
 * Return: 1 when a whole message is ready (cf_take() it), 0 when more input
 * is needed, -EMSGSIZE when the declared length exceeds the decoder's
 * limit, -EPROTO for a compressed or unknown-flag envelope, -ENOMEM.
 */
int cf_decode(struct cf_decoder *d, const void *data, size_t len,
	      size_t *used);

/**
 * cf_take() - take the message cf_decode() completed
 * @d: decoder
 * @flags: set to the message's flags
 * @len: set to its length
 *
 * Return: the payload, NUL-terminated (free() it); the decoder is reset for
 * the next message.
 */
uint8_t *cf_take(struct cf_decoder *d, uint8_t *flags, size_t *len);

/**
 * cf_pending() - whether a message was started but not finished
 * @d: decoder
 */
int cf_pending(const struct cf_decoder *d);

/**
 * enum cf_code - Connect error codes
 */
enum cf_code {
	CF_OK = 0,
	CF_CANCELED,
	CF_UNKNOWN,
	CF_INVALID_ARGUMENT,
	CF_DEADLINE_EXCEEDED,
	CF_NOT_FOUND,
	CF_ALREADY_EXISTS,
	CF_PERMISSION_DENIED,
	CF_RESOURCE_EXHAUSTED,
	CF_FAILED_PRECONDITION,
	CF_ABORTED,
	CF_OUT_OF_RANGE,
	CF_UNIMPLEMENTED,
	CF_INTERNAL,
	CF_UNAVAILABLE,
	CF_DATA_LOSS,
	CF_UNAUTHENTICATED,
	__CF_CODE_MAX
};

/** cf_code_name() - the code's wire name ("not_found"), NULL if unknown */
const char *cf_code_name(enum cf_code code);

/** cf_code_http() - HTTP status of a unary error with this code */
unsigned int cf_code_http(enum cf_code code);

/**
 * cf_code_from_errno() - the Connect code for a negative errno
 * @err: -errno (or a positive errno)
 */
enum cf_code cf_code_from_errno(int err);

#endif /* CUBE_CONNECT_FRAME_H */
