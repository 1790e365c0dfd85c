/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_json.h: JSON request bodies to request structures, and structures to
 * JSON response bodies (json-c).
 *
 * Parsers take the raw body, check every field's type and range, and either
 * fill the structure completely or leave it empty and return -EINVAL with a
 * one-line reason in @err (E2B_MSG_MAX bytes).  Unknown fields are ignored,
 * as the SDK's own server does; a body that is not one JSON object, or has
 * bytes after it, is rejected.
 */
#ifndef CUBE_E2B_JSON_H
#define CUBE_E2B_JSON_H

#include <json-c/json.h>

#include "e2b_backend.h"

/* Limits on what a request may carry. */
#define E2B_META_MAX		64	/* metadata / env entries */
#define E2B_META_KEY_MAX	256
#define E2B_META_VAL_MAX	4096
#define E2B_ARGS_MAX		4096
#define E2B_ARG_LEN_MAX		(128 * 1024)
#define E2B_PATH_MAX		4096
#define E2B_INPUT_MAX		(1024 * 1024)	/* decoded stdin bytes a call */

/**
 * e2b_fail() - a request's fault: its reason into @err (E2B_MSG_MAX bytes,
 * when @err is not NULL)
 *
 * Return: -EINVAL, for the caller to return.
 */
int e2b_fail(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** e2b_json_parse() - the body as one JSON object; NULL + @err if not */
struct json_object *e2b_json_parse(const char *body, size_t len, char *err);

/* --- control plane --- */
int e2b_parse_new_sandbox(const char *body, size_t len,
			  struct e2b_new_sandbox *out, char *err);
void e2b_new_sandbox_free(struct e2b_new_sandbox *r);
/* PUT /sandboxes/{id}/network: allowOut, denyOut, allow_internet_access */
int e2b_parse_network_update(const char *body, size_t len,
			     struct e2b_net *out, char *err);
/* {"timeout": N}: @required makes a missing timeout an error */
int e2b_parse_timeout(const char *body, size_t len, bool required,
		      unsigned int *secs, bool *given, char *err);

/* {"timeout"?: N, "count"?: 1..E2B_FORK_MAX} */
#define E2B_FORK_MAX	16
int e2b_parse_fork(const char *body, size_t len, unsigned int *secs,
		   unsigned int *count, char *err);

struct json_object *e2b_json_sandbox(const struct e2b_sandbox *sb,
				     bool with_token);
struct json_object *e2b_json_sandbox_detail(const struct e2b_sandbox *sb);
struct json_object *e2b_json_listed(const struct e2b_sandbox *sb);
/* {"code": status, "message": msg} */
struct json_object *e2b_json_error(unsigned int status, const char *msg);

/* RFC 3339 UTC, "2024-01-02T03:04:05Z" */
void e2b_time_str(time_t t, char buf[32]);

/* --- envd: process.Process --- */
int e2b_parse_start(const char *body, size_t len, struct e2b_start *out,
		    char *err);
int e2b_parse_selector_req(const char *body, size_t len,
			   struct e2b_selector *out, char *err);
/* SendSignalRequest: @sig set to SIGTERM / SIGKILL */
int e2b_parse_signal(const char *body, size_t len, struct e2b_selector *sel,
		     int *sig, char *err);
/* SendInputRequest: @data (free() it) set to the decoded stdin bytes */
int e2b_parse_input(const char *body, size_t len, struct e2b_selector *sel,
		    unsigned char **data, size_t *dlen, bool *pty, char *err);
void e2b_selector_free(struct e2b_selector *sel);

/* ProcessEvent wrapped in {"event": ...}; NULL when out of memory */
struct json_object *e2b_json_proc_event(const struct e2b_event *ev);
struct json_object *e2b_json_keepalive(void);
struct json_object *e2b_json_proc_list(const struct e2b_proc_info *p,
				       size_t n);

/* --- envd: filesystem.Filesystem --- */
/* {"path": ...}: @path (free() it) */
int e2b_parse_path(const char *body, size_t len, char **path, char *err);
int e2b_parse_list_dir(const char *body, size_t len, char **path,
		       unsigned int *depth, char *err);
int e2b_parse_move(const char *body, size_t len, char **from, char **to,
		   char *err);
int e2b_parse_watch(const char *body, size_t len, char **path,
		    bool *recursive, char *err);

/* a path in a request: absolute or relative, no NUL, not overlong */
bool e2b_path_valid(const char *p);

struct json_object *e2b_json_entry(const struct e2b_entry *e);
/* {"entry": EntryInfo} */
struct json_object *e2b_json_entry_resp(const struct e2b_entry *e);
struct json_object *e2b_json_entries(const struct e2b_entry *e, size_t n);
/* the /files upload answer: [{"name","path","type":"file"}] */
struct json_object *e2b_json_upload(const struct e2b_entry *e, size_t n);

/* Connect error body {"code": "...", "message": "..."} */
struct json_object *e2b_json_connect_error(const char *code,
					   const char *msg);
/* end-of-stream body: {} or {"error": {...}} */
struct json_object *e2b_json_end_stream(const char *code, const char *msg);

#endif /* CUBE_E2B_JSON_H */
