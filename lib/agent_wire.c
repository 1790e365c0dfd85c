// SPDX-License-Identifier: GPL-2.0
/*
 * agent_wire.c: encoding and strict decoding of cube agent messages.
 * Used by both the host client and the agent; nothing here trusts its
 * input.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

int cube_wire_parse_hdr(const uint8_t *buf, struct cube_agent_hdr *hdr)
{
	hdr->len = get32(buf);
	hdr->type = get16(buf + 4);
	hdr->flags = get16(buf + 6);
	hdr->id = get32(buf + 8);
	if (hdr->len > CUBE_AGENT_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (hdr->flags)
		return -EPROTO;
	return 0;
}

static int check_value(const struct cube_wire_policy *pol, uint16_t type,
		       const uint8_t *v, uint16_t len, const char **why)
{
	switch (pol->kind[type]) {
	case CUBE_WIRE_U32:
		if (len != 4) {
			*why = "u32 attribute of wrong length";
			return -EINVAL;
		}
		return 0;
	case CUBE_WIRE_U64:
		if (len != 8) {
			*why = "u64 attribute of wrong length";
			return -EINVAL;
		}
		return 0;
	case CUBE_WIRE_FLAG:
		if (len) {
			*why = "flag attribute with a value";
			return -EINVAL;
		}
		return 0;
	case CUBE_WIRE_STRING:
		if (len < 2 || len > pol->max_len[type]) {
			*why = "string attribute empty or too long";
			return -EINVAL;
		}
		if (v[len - 1] || memchr(v, 0, len - 1)) {
			*why = "string attribute not NUL-terminated or with a NUL inside";
			return -EINVAL;
		}
		return 0;
	case CUBE_WIRE_BYTES:
		if (len > pol->max_len[type]) {
			*why = "bytes attribute too long";
			return -EINVAL;
		}
		return 0;
	default:
		*why = "attribute not allowed in this message";
		return -EINVAL;
	}
}

int cube_wire_parse(const struct cube_agent_hdr *hdr, const uint8_t *payload,
		    const struct cube_wire_policy *pol, struct cube_wire_msg *msg,
		    const char **why)
{
	uint32_t off = 0;
	unsigned int t;
	int err;

	memset(msg, 0, sizeof(*msg));
	msg->type = hdr->type;
	msg->id = hdr->id;
	msg->payload = payload;
	msg->len = hdr->len;
	*why = NULL;
	if (!pol) {
		*why = "unknown message type";
		return -EOPNOTSUPP;
	}
	while (off < hdr->len) {
		const struct cube_agent_attr *a;
		uint16_t type, len;

		if (hdr->len - off < CUBE_AGENT_ATTR_LEN) {
			*why = "truncated attribute header";
			return -EPROTO;
		}
		a = (const struct cube_agent_attr *)(payload + off);
		type = get16(payload + off);
		len = get16(payload + off + 2);
		if (CUBE_AGENT_ALIGN((uint32_t)len) > hdr->len - off - CUBE_AGENT_ATTR_LEN) {
			*why = "attribute runs past the payload";
			return -EPROTO;
		}
		if (type == CUBE_ATTR_UNSPEC || type > CUBE_ATTR_MAX) {
			*why = "unknown attribute type";
			return -EINVAL;
		}
		err = check_value(pol, type, payload + off + CUBE_AGENT_ATTR_LEN,
				  len, why);
		if (err)
			return err;
		if (msg->count[type] && !pol->multi[type]) {
			*why = "attribute repeated";
			return -EINVAL;
		}
		if (!msg->count[type]++)
			msg->first[type] = a;
		off += CUBE_AGENT_ATTR_LEN + CUBE_AGENT_ALIGN((uint32_t)len);
	}
	for (t = 1; t <= CUBE_ATTR_MAX; t++) {
		if ((pol->required & (1ULL << t)) && !msg->count[t]) {
			*why = "required attribute missing";
			return -EINVAL;
		}
	}
	return 0;
}

const void *cube_wire_value(const struct cube_agent_attr *a)
{
	return (const uint8_t *)a + CUBE_AGENT_ATTR_LEN;
}

uint16_t cube_wire_len(const struct cube_agent_attr *a)
{
	return get16((const uint8_t *)a + 2);
}

uint32_t cube_wire_u32(const struct cube_agent_attr *a)
{
	return get32(cube_wire_value(a));
}

uint64_t cube_wire_u64(const struct cube_agent_attr *a)
{
	uint64_t v;

	memcpy(&v, cube_wire_value(a), sizeof(v));
	return le64toh(v);
}

const struct cube_agent_attr *cube_wire_next(const struct cube_wire_msg *msg,
					     const struct cube_agent_attr *a)
{
	const uint8_t *p = (const uint8_t *)a;
	uint16_t type = get16(p);
	uint32_t off;

	off = (uint32_t)(p - msg->payload) + CUBE_AGENT_ATTR_LEN +
	      CUBE_AGENT_ALIGN((uint32_t)cube_wire_len(a));
	/* the message was validated: every header in range is whole */
	while (off < msg->len) {
		if (get16(msg->payload + off) == type)
			return (const struct cube_agent_attr *)(msg->payload + off);
		off += CUBE_AGENT_ATTR_LEN +
		       CUBE_AGENT_ALIGN((uint32_t)get16(msg->payload + off + 2));
	}
	return NULL;
}

/* --- building --- */

static void reserve(struct cube_wire_buf *b, size_t more)
{
	size_t want, cap;
	uint8_t *p;

	if (b->err)
		return;
	if (b->len + more > CUBE_AGENT_HDR_LEN + CUBE_AGENT_MAX_PAYLOAD) {
		b->err = -EMSGSIZE;
		return;
	}
	want = b->len + more;
	if (want <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return;
	}
	b->data = p;
	b->cap = cap;
}

void cube_wire_start(struct cube_wire_buf *b, uint16_t type, uint32_t id)
{
	uint16_t t = htole16(type), z = 0;
	uint32_t i = htole32(id), l = 0;

	b->len = 0;
	b->err = 0;
	reserve(b, CUBE_AGENT_HDR_LEN);
	if (b->err)
		return;
	memcpy(b->data, &l, 4);
	memcpy(b->data + 4, &t, 2);
	memcpy(b->data + 6, &z, 2);
	memcpy(b->data + 8, &i, 4);
	b->len = CUBE_AGENT_HDR_LEN;
}

void cube_wire_put(struct cube_wire_buf *b, uint16_t type, const void *val,
		   size_t len)
{
	uint16_t t = htole16(type), l = htole16((uint16_t)len);
	size_t pad;

	if (len > UINT16_MAX && !b->err)
		b->err = -EMSGSIZE;
	reserve(b, CUBE_AGENT_ATTR_LEN + CUBE_AGENT_ALIGN(len));
	if (b->err)
		return;
	memcpy(b->data + b->len, &t, 2);
	memcpy(b->data + b->len + 2, &l, 2);
	if (len)
		memcpy(b->data + b->len + CUBE_AGENT_ATTR_LEN, val, len);
	pad = CUBE_AGENT_ALIGN(len) - len;
	memset(b->data + b->len + CUBE_AGENT_ATTR_LEN + len, 0, pad);
	b->len += CUBE_AGENT_ATTR_LEN + CUBE_AGENT_ALIGN(len);
}

void cube_wire_put_u32(struct cube_wire_buf *b, uint16_t type, uint32_t v)
{
	v = htole32(v);
	cube_wire_put(b, type, &v, sizeof(v));
}

void cube_wire_put_u64(struct cube_wire_buf *b, uint16_t type, uint64_t v)
{
	v = htole64(v);
	cube_wire_put(b, type, &v, sizeof(v));
}

void cube_wire_put_str(struct cube_wire_buf *b, uint16_t type, const char *s)
{
	cube_wire_put(b, type, s, strlen(s) + 1);
}

void cube_wire_put_flag(struct cube_wire_buf *b, uint16_t type)
{
	cube_wire_put(b, type, NULL, 0);
}

int cube_wire_finish(struct cube_wire_buf *b)
{
	uint32_t l;

	if (b->err)
		return b->err;
	l = htole32((uint32_t)(b->len - CUBE_AGENT_HDR_LEN));
	memcpy(b->data, &l, 4);
	return 0;
}

void cube_wire_free(struct cube_wire_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
