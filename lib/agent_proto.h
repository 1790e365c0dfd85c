/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agent_proto.h: the wire protocol between the host and cube-agent, the
 * guest's PID 1.  Shared by the agent (guest/agent/) and the host client
 * (lib/agent_client.c).  Described in Documentation/agent-protocol.rst.
 *
 * A connection is a byte stream (AF_VSOCK in the guest, a Unix socket on
 * the host) carrying messages.  Every message is a 12-byte header followed
 * by @len bytes of payload; the payload is a sequence of attributes, each a
 * 4-byte header and a value padded to 4 bytes.  All integers are little
 * endian.  One connection runs one request at a time; concurrent commands
 * use several connections.
 */
#ifndef CUBE_AGENT_PROTO_H
#define CUBE_AGENT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* AF_VSOCK port the agent listens on in the guest. */
#define CUBE_AGENT_VSOCK_PORT		1024

/* Bumped when a message or attribute is added. */
#define CUBE_AGENT_PROTO_VERSION	4

/* Bounds, enforced by both sides on every message. */
#define CUBE_AGENT_MAX_PAYLOAD		(128 * 1024)
#define CUBE_AGENT_CHUNK		(32 * 1024)	/* data per DATA message */
#define CUBE_AGENT_MAX_ARGS		4096
#define CUBE_AGENT_MAX_ENV		4096
#define CUBE_AGENT_MAX_STRING		4096	/* argv/env/path bytes incl. NUL */
#define CUBE_AGENT_MAX_NAME		256	/* dirent name bytes incl. NUL */
/* where the agent keeps a file's metadata (CUBE_ATTR_META) */
#define CUBE_AGENT_META_XATTR		"trusted.cube.meta"
#define CUBE_AGENT_MAX_MESSAGE		1024	/* error text bytes incl. NUL */
#define CUBE_AGENT_MAX_ID		128	/* sandbox id / hostname incl. NUL */
#define CUBE_AGENT_MIN_SEED		16
#define CUBE_AGENT_MAX_SEED		512
#define CUBE_AGENT_MAX_TIMEOUT_MS	(7U * 24 * 3600 * 1000)
#define CUBE_AGENT_MAX_WATCHES		16	/* WATCH connections at once */
#define CUBE_AGENT_MAX_PARKED		64	/* KEEP commands without a connection */
#define CUBE_AGENT_PARK_BUFFER		(1024 * 1024)	/* output kept while parked */
#define CUBE_AGENT_PARK_TIMEOUT_MS	(10U * 60 * 1000)	/* then killed */

/**
 * struct cube_agent_hdr - header of every message
 * @len: payload bytes after the header, at most %CUBE_AGENT_MAX_PAYLOAD
 * @type: one of enum cube_agent_msg
 * @flags: zero
 * @id: request id chosen by the host; every answer to a request, and every
 *	event of a command, carries the id of the request it belongs to
 */
struct cube_agent_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
	uint32_t id;
};

#define CUBE_AGENT_HDR_LEN	12

/**
 * struct cube_agent_attr - header of one attribute inside a payload
 * @type: attribute type (enum cube_agent_attr_type)
 * @len: value bytes following this header (the padding to 4 not counted)
 */
struct cube_agent_attr {
	uint16_t type;
	uint16_t len;
};

#define CUBE_AGENT_ATTR_LEN	4
#define CUBE_AGENT_ALIGN(n)	(((n) + 3U) & ~3U)

/* Message types.  Host to agent: 0x01-0x7f; agent to host: 0x80-0xff. */
enum cube_agent_msg {
	CUBE_MSG_PING		= 0x01,	/* -> PONG */
	CUBE_MSG_EXEC		= 0x10,	/* ARGV+ ENV* CWD? USER? TIMEOUT? PTY? KEEP? */
	CUBE_MSG_STDIN		= 0x11,	/* DATA: bytes for the command */
	CUBE_MSG_STDIN_CLOSE	= 0x12,	/* close the command's stdin */
	CUBE_MSG_SIGNAL		= 0x13,	/* SIGNAL: to the command's group */
	CUBE_MSG_RESIZE		= 0x14,	/* ROWS COLS: the command's pty */
	CUBE_MSG_ATTACH		= 0x15,	/* PID: take a parked command over -> STARTED,
					 * then its events as after EXEC (version 4) */
	CUBE_MSG_FILE_WRITE	= 0x20,	/* PATH MODE? APPEND? META? USER? -> OK, then DATA* END */
	CUBE_MSG_FILE_READ	= 0x21,	/* PATH -> DATA* END | ERROR */
	CUBE_MSG_LIST		= 0x22,	/* PATH -> DIRENT* END | ERROR */
	CUBE_MSG_STAT		= 0x23,	/* PATH -> STAT | ERROR */
	CUBE_MSG_MKDIR		= 0x24,	/* PATH MODE? PARENTS? USER? -> OK | ERROR */
	CUBE_MSG_REMOVE		= 0x25,	/* PATH RECURSIVE? -> OK | ERROR */
	CUBE_MSG_RENAME		= 0x26,	/* PATH NEWPATH -> OK | ERROR */
	CUBE_MSG_WATCH		= 0x27,	/* PATH [RECURSIVE] -> OK, then FS_EVENT*; ERROR */
	CUBE_MSG_RESEED		= 0x30,	/* SEED -> OK | ERROR */
	CUBE_MSG_IDENTITY	= 0x31,	/* HOSTNAME? SANDBOX_ID? TIME_NS? */
	CUBE_MSG_DISK_GROW	= 0x32,	/* SIZE: grow the writable disk's file system
					 * to SIZE bytes -> OK | ERROR */
	CUBE_MSG_DATA		= 0x40,	/* DATA: one chunk, both directions */
	CUBE_MSG_END		= 0x41,	/* end of a DATA or DIRENT stream */

	CUBE_MSG_OK		= 0x80,	/* request done */
	CUBE_MSG_ERROR		= 0x81,	/* ERRNO MESSAGE */
	CUBE_MSG_PONG		= 0x82,	/* VERSION READY SANDBOX_ID? HOSTNAME? */
	CUBE_MSG_STARTED	= 0x83,	/* PID */
	CUBE_MSG_STDOUT		= 0x84,	/* DATA */
	CUBE_MSG_STDERR		= 0x85,	/* DATA */
	CUBE_MSG_EXIT		= 0x86,	/* EXIT_CODE | TERM_SIGNAL, TIMED_OUT? */
	CUBE_MSG_DIRENT		= 0x87,	/* NAME FTYPE SIZE MODE MTIME_NS META? */
	CUBE_MSG_STAT_REPLY	= 0x88,	/* FTYPE SIZE MODE MTIME_NS UID GID META? */
	CUBE_MSG_FS_EVENT	= 0x89,	/* EVENT NAME [PATH]: in a watched directory;
					 * PATH: below it (recursive), relative */
};

/* Attribute types and their value formats. */
enum cube_agent_attr_type {
	CUBE_ATTR_UNSPEC,
	CUBE_ATTR_ARGV,		/* string, repeated in order */
	CUBE_ATTR_ENV,		/* string "NAME=VALUE", repeated */
	CUBE_ATTR_CWD,		/* string */
	CUBE_ATTR_USER,		/* string: user name or decimal uid */
	CUBE_ATTR_TIMEOUT_MS,	/* u32, 0 = none */
	CUBE_ATTR_DATA,		/* bytes, at most CUBE_AGENT_CHUNK */
	CUBE_ATTR_SIGNAL,	/* u32, 1..64 */
	CUBE_ATTR_PID,		/* u32 */
	CUBE_ATTR_EXIT_CODE,	/* u32, 0..255 */
	CUBE_ATTR_TERM_SIGNAL,	/* u32, 1..64 */
	CUBE_ATTR_TIMED_OUT,	/* flag (empty) */
	CUBE_ATTR_PATH,		/* string, absolute */
	CUBE_ATTR_NEWPATH,	/* string, absolute */
	CUBE_ATTR_MODE,		/* u32, permission bits 07777 */
	CUBE_ATTR_APPEND,	/* flag */
	CUBE_ATTR_PARENTS,	/* flag */
	CUBE_ATTR_RECURSIVE,	/* flag */
	CUBE_ATTR_NAME,		/* string, no '/', not "." or ".." */
	CUBE_ATTR_FTYPE,	/* u32, enum cube_agent_ftype */
	CUBE_ATTR_SIZE,		/* u64 */
	CUBE_ATTR_MTIME_NS,	/* u64, ns since the epoch */
	CUBE_ATTR_UID,		/* u32 */
	CUBE_ATTR_GID,		/* u32 */
	CUBE_ATTR_ERRNO,	/* u32, a Linux errno, 1..4095 */
	CUBE_ATTR_MESSAGE,	/* string */
	CUBE_ATTR_VERSION,	/* u32 */
	CUBE_ATTR_READY,	/* u32, 0 or 1 */
	CUBE_ATTR_SANDBOX_ID,	/* string */
	CUBE_ATTR_HOSTNAME,	/* string */
	CUBE_ATTR_TIME_NS,	/* u64, CLOCK_REALTIME in ns */
	CUBE_ATTR_SEED,		/* bytes, CUBE_AGENT_MIN_SEED..MAX_SEED */
	CUBE_ATTR_PTY,		/* flag: run on a pseudo-terminal */
	CUBE_ATTR_ROWS,		/* u32, 1..65535 */
	CUBE_ATTR_COLS,		/* u32, 1..65535 */
	CUBE_ATTR_EVENT,	/* u32, enum cube_agent_fs_event */
	CUBE_ATTR_META,		/* string: a file's metadata, "key=value\n" lines */
	CUBE_ATTR_KEEP,		/* flag: park the command when the connection breaks
				 * (version 4) */
	CUBE_ATTR_MAX = CUBE_ATTR_KEEP,
};

enum cube_agent_fs_event {
	CUBE_FS_CREATE = 1,	/* created, or moved in */
	CUBE_FS_WRITE,		/* written to */
	CUBE_FS_REMOVE,		/* removed */
	CUBE_FS_RENAME,		/* moved away (or renamed) */
	CUBE_FS_CHMOD,		/* attributes changed */
	CUBE_FS_EVENT_MAX = CUBE_FS_CHMOD,
};

enum cube_agent_ftype {
	CUBE_FTYPE_OTHER,
	CUBE_FTYPE_FILE,
	CUBE_FTYPE_DIR,
	CUBE_FTYPE_SYMLINK,
	CUBE_FTYPE_MAX = CUBE_FTYPE_SYMLINK,
};

/* --- encoding and decoding, lib/agent_wire.c --- */

enum cube_wire_kind {
	CUBE_WIRE_NONE,		/* attribute not allowed */
	CUBE_WIRE_U32,
	CUBE_WIRE_U64,
	CUBE_WIRE_FLAG,
	CUBE_WIRE_STRING,	/* NUL-terminated, no NUL inside, not empty */
	CUBE_WIRE_BYTES,
};

/**
 * struct cube_wire_policy - what one message may carry
 * @kind: per attribute type, its format (NONE: not allowed)
 * @max_len: per attribute type, the largest value (bytes, incl. NUL)
 * @multi: per attribute type, whether it may repeat
 * @required: bitmask (1 << type) of attributes that must be present
 */
struct cube_wire_policy {
	uint8_t kind[CUBE_ATTR_MAX + 1];
	uint16_t max_len[CUBE_ATTR_MAX + 1];
	bool multi[CUBE_ATTR_MAX + 1];
	uint64_t required;
};

/**
 * struct cube_wire_msg - a parsed, validated message
 * @type: header type
 * @id: header id
 * @payload: payload bytes (points into the caller's buffer)
 * @len: payload length
 * @first: per attribute type, its first occurrence (NULL: absent)
 * @count: per attribute type, how many times it occurs
 */
struct cube_wire_msg {
	uint16_t type;
	uint32_t id;
	const uint8_t *payload;
	uint32_t len;
	const struct cube_agent_attr *first[CUBE_ATTR_MAX + 1];
	uint32_t count[CUBE_ATTR_MAX + 1];
};

/* The policy of a message type, NULL when the type does not exist. */
const struct cube_wire_policy *cube_wire_policy(uint16_t type);

/* Header: returns 0 or -EMSGSIZE (len too big) / -EPROTO (flags set). */
int cube_wire_parse_hdr(const uint8_t *buf, struct cube_agent_hdr *hdr);
/* Payload against a policy: 0 or -EPROTO/-EINVAL; @why says what failed. */
int cube_wire_parse(const struct cube_agent_hdr *hdr, const uint8_t *payload,
		    const struct cube_wire_policy *pol, struct cube_wire_msg *msg,
		    const char **why);

const void *cube_wire_value(const struct cube_agent_attr *a);
uint16_t cube_wire_len(const struct cube_agent_attr *a);
uint32_t cube_wire_u32(const struct cube_agent_attr *a);
uint64_t cube_wire_u64(const struct cube_agent_attr *a);
/* Next attribute of the same type after @a (NULL at the end). */
const struct cube_agent_attr *cube_wire_next(const struct cube_wire_msg *msg,
					     const struct cube_agent_attr *a);

/**
 * struct cube_wire_buf - a message being built
 * @data: header + payload
 * @len: bytes used
 * @cap: bytes allocated
 * @err: first error (-ENOMEM, -EMSGSIZE); later puts do nothing
 */
struct cube_wire_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int err;
};

void cube_wire_start(struct cube_wire_buf *b, uint16_t type, uint32_t id);
void cube_wire_put(struct cube_wire_buf *b, uint16_t type, const void *val,
		   size_t len);
void cube_wire_put_u32(struct cube_wire_buf *b, uint16_t type, uint32_t v);
void cube_wire_put_u64(struct cube_wire_buf *b, uint16_t type, uint64_t v);
void cube_wire_put_str(struct cube_wire_buf *b, uint16_t type, const char *s);
void cube_wire_put_flag(struct cube_wire_buf *b, uint16_t type);
/* Writes the final length into the header; returns b->err. */
int cube_wire_finish(struct cube_wire_buf *b);
void cube_wire_free(struct cube_wire_buf *b);

#endif /* CUBE_AGENT_PROTO_H */
