// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_audit.c: cubectl audit, a sandbox's behaviour log (lib/cube_audit.h),
 * as a table for people or a JSON array for machines.  The log outlives
 * its sandbox, so an ID that no longer runs is fine.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cube_audit.h"
#include "cubectl.h"

enum { OPT_JSON = 1, OPT_TAIL };

/* Every object of one generation of the log appended to @all. */
static int read_generation(const char *id, int rotated, struct json_object *all)
{
	struct json_tokener *tok;
	char buf[8192], *line = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, ret = 0;

	fd = cube_audit_open(id, rotated);
	if (fd < 0)
		return fd;
	tok = json_tokener_new();
	if (!tok) {
		close(fd);
		return -ENOMEM;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		ssize_t i;

		for (i = 0; i < n; i++) {
			struct json_object *o;

			if (buf[i] != '\n') {
				if (len + 1 >= cap) {
					char *nl = realloc(line, cap ? cap * 2 : 1024);

					if (!nl) {
						ret = -ENOMEM;
						goto out;
					}
					line = nl;
					cap = cap ? cap * 2 : 1024;
				}
				line[len++] = buf[i];
				continue;
			}
			json_tokener_reset(tok);
			o = json_tokener_parse_ex(tok, line, len);
			len = 0;
			/* a damaged line is skipped, not fatal */
			if (o && json_object_is_type(o, json_type_object))
				json_object_array_add(all, o);
			else
				json_object_put(o);
		}
	}
	if (n < 0)
		ret = -errno;
out:
	free(line);
	json_tokener_free(tok);
	close(fd);
	return ret;
}

static const char *field(struct json_object *o, const char *k)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !v)
		return "-";
	return json_object_get_string(v);
}

static void print_row(struct json_object *o)
{
	bool first = true;

	printf("%-24s  %-12s  %-8s  ", field(o, "ts"), field(o, "event"),
	       field(o, "by"));
	json_object_object_foreach(o, k, v) {
		if (!strcmp(k, "ts") || !strcmp(k, "event") ||
		    !strcmp(k, "by") || !strcmp(k, "sandbox"))
			continue;
		printf("%s%s=%s", first ? "" : " ", k,
		       v ? json_object_to_json_string_ext(v,
				JSON_C_TO_STRING_PLAIN |
				JSON_C_TO_STRING_NOSLASHESCAPE) : "null");
		first = false;
	}
	putchar('\n');
}

int cmd_audit(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "tail", required_argument, NULL, OPT_TAIL },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long tail = 0;
	struct json_object *all;
	size_t i, n, from;
	int opt, ret, ret1;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_JSON:
			c->json = true;
			break;
		case OPT_TAIL:
			if (cc_parse_uint("--tail", optarg, 1, 1000000, &tail))
				return EX_USAGE;
			break;
		default:
			return cc_err(EX_USAGE, "usage: %s audit [--json] [--tail N] ID",
				      cc_prog);
		}
	}
	if (argc - optind != 1)
		return cc_err(EX_USAGE, "usage: %s audit [--json] [--tail N] ID",
			      cc_prog);
	if (!cube_audit_key_valid(argv[optind]))
		return cc_err(EX_USAGE, "'%s' is no sandbox id", argv[optind]);
	all = json_object_new_array();
	if (!all)
		return cc_errno(-ENOMEM, "audit");
	/* the rotated generation first: it is the older one */
	ret1 = read_generation(argv[optind], 1, all);
	ret = read_generation(argv[optind], 0, all);
	if (ret == -ENOENT && ret1 == -ENOENT) {
		json_object_put(all);
		return cc_err(EX_NOTFOUND, "sandbox %s has no behaviour log in %s",
			      argv[optind], cube_audit_dir());
	}
	if ((ret && ret != -ENOENT) || (ret1 && ret1 != -ENOENT)) {
		json_object_put(all);
		return cc_errno(ret && ret != -ENOENT ? ret : ret1,
				"behaviour log");
	}
	n = json_object_array_length(all);
	from = tail && tail < n ? n - tail : 0;
	if (c->json) {
		struct json_object *out = json_object_new_array();

		for (i = from; out && i < n; i++)
			json_object_array_add(out, json_object_get(
				json_object_array_get_idx(all, i)));
		json_object_put(all);
		if (!out)
			return cc_errno(-ENOMEM, "audit");
		cc_json_print(out);
		return EX_OK;
	}
	printf("%-24s  %-12s  %-8s  %s\n", "TIME", "EVENT", "BY", "DETAILS");
	for (i = from; i < n; i++)
		print_row(json_object_array_get_idx(all, i));
	json_object_put(all);
	return EX_OK;
}
