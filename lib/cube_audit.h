/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_audit.h: the behaviour log, what happened in each sandbox, for
 * operators, after the fact.
 *
 * One file a sandbox, $CUBE_AUDIT_DIR/<sandbox>.jsonl (default
 * $CUBE_STATE_DIR/audit), one JSON object a line:
 *
 *	{"ts":"2026-12-04T18:20:01.123Z","sandbox":"42","event":"command",
 *	 "by":"cubectl",...}
 *
 * The fields after "event" are the caller's.  What goes in is chosen by
 * the caller field by field, so that no value can carry a secret by
 * accident: environment variables appear as their names only
 * (cube_audit_env_names()), file contents and tokens never.
 *
 * Bounds: a line is at most %CUBE_AUDIT_LINE_MAX bytes (longer strings are
 * cut and marked); a sandbox's file is rotated to "<sandbox>.jsonl.1" when
 * it passes %CUBE_AUDIT_FILE_MAX bytes, so a sandbox holds at most twice
 * that; the directory as a whole is trimmed, oldest file first, when it
 * passes $CUBE_AUDIT_MAX_BYTES (default %CUBE_AUDIT_DIR_MAX).
 *
 * Writing is best effort: cube_audit() returns what went wrong so callers
 * may count it, but a sandbox operation never fails because its log line
 * could not be written.
 */
#ifndef CUBE_AUDIT_H
#define CUBE_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define CUBE_AUDIT_LINE_MAX	(16 * 1024)
#define CUBE_AUDIT_STR_MAX	1024		/* longest string value kept */
#define CUBE_AUDIT_LIST_MAX	64		/* longest list kept */
#define CUBE_AUDIT_FILE_MAX	(256 * 1024)
#define CUBE_AUDIT_DIR_MAX	(64ULL << 20)
#define CUBE_AUDIT_KEY_MAX	64

/* $CUBE_AUDIT_DIR when absolute, else "<state dir>/audit" */
const char *cube_audit_dir(void);

/* 1..CUBE_AUDIT_KEY_MAX-1 bytes of [A-Za-z0-9_-]: a sandbox's log name */
int cube_audit_key_valid(const char *key);

/**
 * cube_audit() - append one event to a sandbox's log
 * @sandbox: the sandbox's id as users know it (cube id or E2B id)
 * @event: what happened ("created", "command", "file_write", ...)
 * @by: who asked ("cubectl", "api", "cubed"...)
 * @fields: more fields, or NULL; always consumed (put), whatever happens
 *
 * Return: 0, -EINVAL for a bad @sandbox or @event, -errno of the write.
 */
int cube_audit(const char *sandbox, const char *event, const char *by,
	       struct json_object *fields);

/* cube_audit() for a sandbox known by its cube id */
int cube_audit_id(uint64_t id, const char *event, const char *by,
		  struct json_object *fields);

/**
 * cube_audit_strv() - a JSON array of at most %CUBE_AUDIT_LIST_MAX strings,
 * each cut to %CUBE_AUDIT_STR_MAX bytes; NULL when out of memory
 */
struct json_object *cube_audit_strv(const char *const *v, size_t n);

/**
 * cube_audit_env_names() - the names of "NAME=value" strings, as a JSON
 * array (values are never copied); NULL when out of memory
 */
struct json_object *cube_audit_env_names(const char *const *env, size_t n);

/* a string value cut to %CUBE_AUDIT_STR_MAX bytes (NULL, JSON null, for NULL) */
struct json_object *cube_audit_str(const char *s);

/**
 * cube_audit_open() - open a sandbox's log for reading
 * @sandbox: as given to cube_audit()
 * @rotated: the older generation ("<sandbox>.jsonl.1") instead
 * Return: a read-only fd, or -errno (-ENOENT: no log).
 */
int cube_audit_open(const char *sandbox, int rotated);

#endif
