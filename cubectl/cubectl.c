// SPDX-License-Identifier: GPL-2.0
/*
 * cubectl: manage cube sandboxes, templates and pools.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cube_runtime.h"
#include "cubectl.h"
#include "nl_client.h"

const char *cc_prog = "cubectl";

int cc_err(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cc_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cc_code(int err)
{
	switch (-err) {
	case 0:
		return EX_OK;
	case ENOENT:
	case ESRCH:
		return EX_NOTFOUND;
	case ENOPKG:
		return EX_NOMODULE;
	case EPERM:
	case EACCES:
		return EX_PERM;
	case ETIMEDOUT:
		return EX_TIMEOUT;
	case EEXIST:
	case EBUSY:
	case EAGAIN:
	case EXDEV:
	case ENOSPC:
		return EX_CONFLICT;
	case EINVAL:
	case ERANGE:
		return EX_USAGE;
	default:
		return EX_FAIL;
	}
}

int cc_errno(int err, const char *what)
{
	switch (-err) {
	case ENOENT:
		return cc_err(EX_NOTFOUND, "%s: not found", what);
	case ENOPKG:
		return cc_err(EX_NOMODULE, "cube.ko is not loaded (no \"cube\" netlink family)");
	case EPERM:
	case EACCES:
		return cc_err(EX_PERM, "%s: permission denied (run as root)", what);
	default:
		return cc_err(cc_code(err), "%s: %s", what, strerror(-err));
	}
}

int cc_nl_open(struct cube_nl **nl)
{
	int ret = cube_nl_open(nl);

	if (!ret)
		return EX_OK;
	if (ret == -ENOPKG)
		return cc_err(EX_NOMODULE, "cube.ko is not loaded (no \"cube\" netlink family)");
	return cc_errno(ret, "netlink");
}

int cc_parse_id(const char *s, uint64_t *id)
{
	if (cube_parse_id(s, id))
		return cc_err(EX_USAGE, "invalid sandbox id '%s' (a positive decimal number)", s);
	return EX_OK;
}

int cc_parse_uint(const char *flag, const char *s, unsigned long min,
		  unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < min || v > max)
		return cc_err(EX_USAGE, "invalid value '%s' for %s (an integer in %lu..%lu)",
			      s, flag, min, max);
	*out = v;
	return EX_OK;
}

int cc_parse_label(const char *s, char *key, size_t klen, char *val,
		   size_t vlen)
{
	const char *eq = strchr(s, '=');
	size_t i, kl;

	if (!eq || eq == s)
		return cc_err(EX_USAGE, "invalid label '%s' (want KEY=VALUE)", s);
	kl = eq - s;
	if (kl >= klen)
		return cc_err(EX_USAGE, "label key too long in '%s' (at most %zu bytes)",
			      s, klen - 1);
	for (i = 0; i < kl; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '/' || ch == '-'))
			return cc_err(EX_USAGE, "invalid label key in '%s' ([A-Za-z0-9._/-])", s);
	}
	if (strlen(eq + 1) >= vlen)
		return cc_err(EX_USAGE, "label value too long in '%s' (at most %zu bytes)",
			      s, vlen - 1);
	for (i = 1; eq[i]; i++)
		if ((unsigned char)eq[i] < 0x20 || (unsigned char)eq[i] > 0x7e)
			return cc_err(EX_USAGE, "label value in '%s' is not printable", s);
	memcpy(key, s, kl);
	key[kl] = '\0';
	strcpy(val, eq + 1);
	return EX_OK;
}

void cc_json_print(struct json_object *o)
{
	puts(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						JSON_C_TO_STRING_NOSLASHESCAPE) :
	     "null");
	json_object_put(o);
}

void cc_bytes(uint64_t n, char *buf, size_t len)
{
	static const char units[] = "BKMGTP";
	double v = n;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)n);
	else
		snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

void cc_age(uint64_t created_ns, char *buf, size_t len)
{
	struct timespec now;
	uint64_t s;

	if (!created_ns) {
		snprintf(buf, len, "-");
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	s = (uint64_t)now.tv_sec > created_ns / 1000000000ULL ?
	    now.tv_sec - created_ns / 1000000000ULL : 0;
	if (s < 120)
		snprintf(buf, len, "%llus", (unsigned long long)s);
	else if (s < 7200)
		snprintf(buf, len, "%llum", (unsigned long long)s / 60);
	else if (s < 172800)
		snprintf(buf, len, "%lluh", (unsigned long long)s / 3600);
	else
		snprintf(buf, len, "%llud", (unsigned long long)s / 86400);
}

static const struct {
	const char *name;
	int (*fn)(struct cctx *c, int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "create", cmd_create, "create [--template T] [--vcpus N] [--memory MIB] [--timeout S] [--disk SIZE] [--net none|deny|internet|FILE] [--no-merge] [--label K=V]..." },
	{ "exec", cmd_exec, "exec [-i] [-t] [--env K=V]... [--cwd D] [--user U] [--timeout S] ID -- CMD [ARG]..." },
	{ "run", cmd_run, "run ID [--language L] CODE|-  (the code interpreter: text, images saved)" },
	{ "fork", cmd_fork, "fork ID" },
	{ "kill", cmd_kill, "kill ID..." },
	{ "ls", cmd_ls, "ls" },
	{ "inspect", cmd_inspect, "inspect ID" },
	{ "logs", cmd_logs, "logs ID" },
	{ "audit", cmd_audit, "audit [--tail N] ID  (what ran in it: the behaviour log)" },
	{ "cp", cmd_cp, "cp ID:PATH LOCAL | LOCAL ID:PATH  (LOCAL may be -)" },
	{ "events", cmd_events, "events" },
	{ "stats", cmd_stats, "stats [ID]" },
	{ "template", cmd_template, "template build NAME --kernel K [--initrd I] [--rootfs IMG] [--append ARGS] [--disk SIZE] [--run CMD]... | template ls | template rm NAME" },
	{ "pool", cmd_pool, "pool set TEMPLATE --size N [--low N] | pool ls" },
	{ "net", cmd_net, "net show ID | net set ID none|deny|internet|FILE" },
	{ "checkpoint", cmd_checkpoint, "checkpoint ID [NAME] | checkpoint ls ID | checkpoint rm ID NAME" },
	{ "rollback", cmd_rollback, "rollback ID [CHECKPOINT]  (back to a checkpoint, or to where it was restored from)" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: %s [--json] COMMAND [ARGS]\n\ncommands:\n", cc_prog);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %s\n", cmds[i].help);
	fprintf(f, "\nExit status: 0 ok, 1 failure, 2 usage, 3 not found, 4 cube.ko not loaded,\n"
		   "5 permission denied, 6 timeout, 7 conflict; exec: the command's status.\n"
		   "See cubectl(8).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cctx c = { 0 };
	size_t i;
	int opt;

	/* global options end at the command name */
	while ((opt = getopt_long(argc, argv, "+hj", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			c.json = true;
			break;
		case 'h':
			usage(stdout);
			return EX_OK;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EX_USAGE;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(argv[optind], cmds[i].name)) {
			char **sub = argv + optind;
			int subc = argc - optind;

			optind = 0;	/* reinitialise getopt (glibc): each command parses its own flags */
			return cmds[i].fn(&c, subc, sub);
		}
	}
	return cc_err(EX_USAGE, "unknown command '%s' (see %s --help)",
		      argv[optind], cc_prog);
}
