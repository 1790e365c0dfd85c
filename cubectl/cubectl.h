/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cubectl.h: what cubectl's command files share.
 *
 * Exit codes (documented in cubectl(8)):
 *   0  success
 *   1  failure not covered below
 *   2  usage: unknown command or flag, bad flag value
 *   3  not found: unknown sandbox, template or pool
 *   4  cube.ko is not loaded
 *   5  permission denied
 *   6  timed out
 *   7  conflict: already exists, busy, pool empty
 * cubectl exec exits with the command's status (128 + N when signal N
 * killed it) and with 125 when it could not run the command at all.
 */
#ifndef CUBECTL_H
#define CUBECTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

enum {
	EX_OK = 0,
	EX_FAIL = 1,
	EX_USAGE = 2,
	EX_NOTFOUND = 3,
	EX_NOMODULE = 4,
	EX_PERM = 5,
	EX_TIMEOUT = 6,
	EX_CONFLICT = 7,
	EX_EXEC_FAIL = 125,
};

struct cube_nl;

struct cctx {
	bool json;
};

extern const char *cc_prog;

/* "cubectl: <message>" on stderr; returns @code */
int cc_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the exit code for a negative errno */
int cc_code(int err);
/* an error line for @err about @what ("sandbox 7"), with its exit code */
int cc_errno(int err, const char *what);
/* open the netlink client or explain why not (returns an exit code) */
int cc_nl_open(struct cube_nl **nl);

/* argument checks: print the usage error themselves, return 0 or EX_USAGE */
int cc_parse_id(const char *s, uint64_t *id);
int cc_parse_uint(const char *flag, const char *s, unsigned long min,
		  unsigned long max, unsigned long *out);
int cc_parse_label(const char *s, char *key, size_t klen, char *val,
		   size_t vlen);

/* output */
void cc_json_print(struct json_object *o);	/* consumes @o */
void cc_bytes(uint64_t n, char *buf, size_t len);	/* "1.5G" */
void cc_age(uint64_t created_ns, char *buf, size_t len);	/* "3m" */

/* commands: (ctx, argc, argv) with argv[0] the command name */
int cmd_create(struct cctx *c, int argc, char **argv);
int cmd_fork(struct cctx *c, int argc, char **argv);
int cmd_run(struct cctx *c, int argc, char **argv);
int cmd_kill(struct cctx *c, int argc, char **argv);
int cmd_ls(struct cctx *c, int argc, char **argv);
int cmd_inspect(struct cctx *c, int argc, char **argv);
int cmd_logs(struct cctx *c, int argc, char **argv);
int cmd_audit(struct cctx *c, int argc, char **argv);
int cmd_stats(struct cctx *c, int argc, char **argv);
int cmd_exec(struct cctx *c, int argc, char **argv);
int cmd_cp(struct cctx *c, int argc, char **argv);
int cmd_events(struct cctx *c, int argc, char **argv);
int cmd_template(struct cctx *c, int argc, char **argv);
int cmd_pool(struct cctx *c, int argc, char **argv);
int cmd_net(struct cctx *c, int argc, char **argv);
int cmd_checkpoint(struct cctx *c, int argc, char **argv);
int cmd_rollback(struct cctx *c, int argc, char **argv);

#endif /* CUBECTL_H */
