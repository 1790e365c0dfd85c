// SPDX-License-Identifier: GPL-2.0
/*
 * agent_policy.c: which attributes each agent message may carry, in what
 * format and how large.  The one table both sides validate against.
 */
#include <limits.h>

#include "agent_proto.h"

#define STR(t, max)	.kind[t] = CUBE_WIRE_STRING, .max_len[t] = (max)
#define STRS(t, max)	STR(t, max), .multi[t] = true
#define BYTES(t, max)	.kind[t] = CUBE_WIRE_BYTES, .max_len[t] = (max)
#define U32(t)		.kind[t] = CUBE_WIRE_U32
#define U64(t)		.kind[t] = CUBE_WIRE_U64
#define FLAG(t)		.kind[t] = CUBE_WIRE_FLAG
#define REQ(t)		(1ULL << (t))

static const struct cube_wire_policy pol_empty;

static const struct cube_wire_policy pol_exec = {
	STRS(CUBE_ATTR_ARGV, CUBE_AGENT_MAX_STRING),
	STRS(CUBE_ATTR_ENV, CUBE_AGENT_MAX_STRING),
	STR(CUBE_ATTR_CWD, CUBE_AGENT_MAX_STRING),
	STR(CUBE_ATTR_USER, CUBE_AGENT_MAX_NAME),
	U32(CUBE_ATTR_TIMEOUT_MS),
	FLAG(CUBE_ATTR_PTY),
	U32(CUBE_ATTR_ROWS),
	U32(CUBE_ATTR_COLS),
	FLAG(CUBE_ATTR_KEEP),
	.required = REQ(CUBE_ATTR_ARGV),
};

static const struct cube_wire_policy pol_resize = {
	U32(CUBE_ATTR_ROWS),
	U32(CUBE_ATTR_COLS),
	.required = REQ(CUBE_ATTR_ROWS) | REQ(CUBE_ATTR_COLS),
};

static const struct cube_wire_policy pol_data = {
	BYTES(CUBE_ATTR_DATA, CUBE_AGENT_CHUNK),
	.required = REQ(CUBE_ATTR_DATA),
};

static const struct cube_wire_policy pol_signal = {
	U32(CUBE_ATTR_SIGNAL),
	.required = REQ(CUBE_ATTR_SIGNAL),
};

static const struct cube_wire_policy pol_file_write = {
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	U32(CUBE_ATTR_MODE),
	FLAG(CUBE_ATTR_APPEND),
	STR(CUBE_ATTR_META, CUBE_AGENT_MAX_STRING),
	STR(CUBE_ATTR_USER, CUBE_AGENT_MAX_NAME),
	.required = REQ(CUBE_ATTR_PATH),
};

static const struct cube_wire_policy pol_path = {
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	.required = REQ(CUBE_ATTR_PATH),
};

static const struct cube_wire_policy pol_mkdir = {
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	U32(CUBE_ATTR_MODE),
	FLAG(CUBE_ATTR_PARENTS),
	STR(CUBE_ATTR_USER, CUBE_AGENT_MAX_NAME),
	.required = REQ(CUBE_ATTR_PATH),
};

static const struct cube_wire_policy pol_remove = {
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	FLAG(CUBE_ATTR_RECURSIVE),
	.required = REQ(CUBE_ATTR_PATH),
};

static const struct cube_wire_policy pol_rename = {
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	STR(CUBE_ATTR_NEWPATH, CUBE_AGENT_MAX_STRING),
	.required = REQ(CUBE_ATTR_PATH) | REQ(CUBE_ATTR_NEWPATH),
};

static const struct cube_wire_policy pol_watch = {
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	FLAG(CUBE_ATTR_RECURSIVE),
	.required = REQ(CUBE_ATTR_PATH),
};

static const struct cube_wire_policy pol_fs_event = {
	U32(CUBE_ATTR_EVENT),
	STR(CUBE_ATTR_NAME, CUBE_AGENT_MAX_NAME),
	STR(CUBE_ATTR_PATH, CUBE_AGENT_MAX_STRING),
	.required = REQ(CUBE_ATTR_EVENT) | REQ(CUBE_ATTR_NAME),
};

static const struct cube_wire_policy pol_reseed = {
	BYTES(CUBE_ATTR_SEED, CUBE_AGENT_MAX_SEED),
	.required = REQ(CUBE_ATTR_SEED),
};

static const struct cube_wire_policy pol_identity = {
	STR(CUBE_ATTR_HOSTNAME, 65),
	STR(CUBE_ATTR_SANDBOX_ID, CUBE_AGENT_MAX_ID),
	U64(CUBE_ATTR_TIME_NS),
};

static const struct cube_wire_policy pol_disk_grow = {
	U64(CUBE_ATTR_SIZE),
	.required = REQ(CUBE_ATTR_SIZE),
};

static const struct cube_wire_policy pol_error = {
	U32(CUBE_ATTR_ERRNO),
	STR(CUBE_ATTR_MESSAGE, CUBE_AGENT_MAX_MESSAGE),
	.required = REQ(CUBE_ATTR_ERRNO),
};

static const struct cube_wire_policy pol_pong = {
	U32(CUBE_ATTR_VERSION),
	U32(CUBE_ATTR_READY),
	STR(CUBE_ATTR_SANDBOX_ID, CUBE_AGENT_MAX_ID),
	STR(CUBE_ATTR_HOSTNAME, 65),
	.required = REQ(CUBE_ATTR_VERSION) | REQ(CUBE_ATTR_READY),
};

static const struct cube_wire_policy pol_started = {
	U32(CUBE_ATTR_PID),
	.required = REQ(CUBE_ATTR_PID),
};

static const struct cube_wire_policy pol_exit = {
	U32(CUBE_ATTR_EXIT_CODE),
	U32(CUBE_ATTR_TERM_SIGNAL),
	FLAG(CUBE_ATTR_TIMED_OUT),
};

static const struct cube_wire_policy pol_end = {
	U64(CUBE_ATTR_SIZE),
};

static const struct cube_wire_policy pol_dirent = {
	STR(CUBE_ATTR_NAME, CUBE_AGENT_MAX_NAME),
	U32(CUBE_ATTR_FTYPE),
	U64(CUBE_ATTR_SIZE),
	U32(CUBE_ATTR_MODE),
	U64(CUBE_ATTR_MTIME_NS),
	STR(CUBE_ATTR_META, CUBE_AGENT_MAX_STRING),
	.required = REQ(CUBE_ATTR_NAME) | REQ(CUBE_ATTR_FTYPE) |
		    REQ(CUBE_ATTR_SIZE) | REQ(CUBE_ATTR_MODE) |
		    REQ(CUBE_ATTR_MTIME_NS),
};

static const struct cube_wire_policy pol_stat = {
	U32(CUBE_ATTR_FTYPE),
	U64(CUBE_ATTR_SIZE),
	U32(CUBE_ATTR_MODE),
	U64(CUBE_ATTR_MTIME_NS),
	U32(CUBE_ATTR_UID),
	U32(CUBE_ATTR_GID),
	STR(CUBE_ATTR_META, CUBE_AGENT_MAX_STRING),
	.required = REQ(CUBE_ATTR_FTYPE) | REQ(CUBE_ATTR_SIZE) |
		    REQ(CUBE_ATTR_MODE) | REQ(CUBE_ATTR_MTIME_NS) |
		    REQ(CUBE_ATTR_UID) | REQ(CUBE_ATTR_GID),
};

/**
 * cube_wire_policy() - the policy of a message type
 * @type: enum cube_agent_msg
 *
 * Return: the policy, or NULL for a type that does not exist.
 */
const struct cube_wire_policy *cube_wire_policy(uint16_t type)
{
	switch (type) {
	case CUBE_MSG_PING:
	case CUBE_MSG_STDIN_CLOSE:
	case CUBE_MSG_OK:
		return &pol_empty;
	case CUBE_MSG_EXEC:
		return &pol_exec;
	case CUBE_MSG_STDIN:
	case CUBE_MSG_DATA:
	case CUBE_MSG_STDOUT:
	case CUBE_MSG_STDERR:
		return &pol_data;
	case CUBE_MSG_SIGNAL:
		return &pol_signal;
	case CUBE_MSG_ATTACH:
		return &pol_started;
	case CUBE_MSG_RESIZE:
		return &pol_resize;
	case CUBE_MSG_FILE_WRITE:
		return &pol_file_write;
	case CUBE_MSG_FILE_READ:
	case CUBE_MSG_LIST:
	case CUBE_MSG_STAT:
		return &pol_path;
	case CUBE_MSG_WATCH:
		return &pol_watch;
	case CUBE_MSG_MKDIR:
		return &pol_mkdir;
	case CUBE_MSG_REMOVE:
		return &pol_remove;
	case CUBE_MSG_RENAME:
		return &pol_rename;
	case CUBE_MSG_RESEED:
		return &pol_reseed;
	case CUBE_MSG_DISK_GROW:
		return &pol_disk_grow;
	case CUBE_MSG_IDENTITY:
		return &pol_identity;
	case CUBE_MSG_END:
		return &pol_end;
	case CUBE_MSG_ERROR:
		return &pol_error;
	case CUBE_MSG_PONG:
		return &pol_pong;
	case CUBE_MSG_STARTED:
		return &pol_started;
	case CUBE_MSG_EXIT:
		return &pol_exit;
	case CUBE_MSG_DIRENT:
		return &pol_dirent;
	case CUBE_MSG_STAT_REPLY:
		return &pol_stat;
	case CUBE_MSG_FS_EVENT:
		return &pol_fs_event;
	default:
		return NULL;
	}
}
