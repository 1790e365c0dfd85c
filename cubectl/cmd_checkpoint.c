// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_checkpoint.c: cubectl checkpoint ID [NAME], checkpoint ls ID,
 * checkpoint rm ID NAME and rollback ID [CHECKPOINT]: a running sandbox
 * saved in place and put back (lib/cube_runtime.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cube_runtime.h"
#include "cubectl.h"

#define OPT_JSON	1000

#define CP_SYN	"ID [NAME] | checkpoint ls [--json] ID | checkpoint rm ID NAME"
#define RB_SYN	"[--json] ID [CHECKPOINT]"

static int bad_usage(const char *cmd, const char *syn)
{
	return cc_err(EX_USAGE, "usage: %s %s %s", cc_prog, cmd, syn);
}

/* a runtime failure: the exit status by errno, the runtime's reason */
static int cp_error(int ret, const char *err)
{
	return cc_err(cc_code(ret), "%s", err[0] ? err : strerror(-ret));
}

/* only --json; the rest are positional (at most @max of them) */
static int parse_flags(struct cctx *c, int argc, char **argv, int min,
		       int max)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_JSON)
			return -EINVAL;
		c->json = true;
	}
	if (argc - optind < min || argc - optind > max)
		return -EINVAL;
	return 0;
}

static int check_name(const char *name)
{
	if (cube_cp_name_valid(name))
		return EX_OK;
	return cc_err(EX_USAGE, "bad checkpoint name '%s' (1-64 of A-Z a-z 0-9 . _ -, not starting with .)",
		      name);
}

/* "cp-<n>": the first n no checkpoint of the sandbox is named after */
static int default_name(uint64_t id, char *name, size_t len, char *err)
{
	char (*v)[CUBE_CP_NAME_MAX] = NULL;
	unsigned int n;
	size_t cnt = 0, i;
	int ret;

	ret = cube_sandbox_cp_list(id, &v, &cnt, err);
	if (ret)
		return ret;
	for (n = 1;; n++) {
		snprintf(name, len, "cp-%u", n);
		for (i = 0; i < cnt; i++)
			if (!strcmp(v[i], name))
				break;
		if (i == cnt)
			break;
	}
	free(v);
	return 0;
}

static int cp_create(struct cctx *c, int argc, char **argv)
{
	char name[CUBE_CP_NAME_MAX], err[CUBE_ERR_MAX] = "";
	unsigned long long pages_ull;
	unsigned int ms, tries;
	uint64_t id, pages;
	int ret;

	if (parse_flags(c, argc, argv, 1, 2))
		return bad_usage("checkpoint", CP_SYN);
	if (cc_parse_id(argv[optind], &id))
		return EX_USAGE;
	if (optind + 1 < argc) {
		if (check_name(argv[optind + 1]))
			return EX_USAGE;
		snprintf(name, sizeof(name), "%s", argv[optind + 1]);
		ret = cube_sandbox_cp_create(id, name, &ms, &pages, err);
	} else {
		/* another caller may take the same default name first */
		for (tries = 0; tries < 8; tries++) {
			ret = default_name(id, name, sizeof(name), err);
			if (!ret)
				ret = cube_sandbox_cp_create(id, name, &ms,
							     &pages, err);
			if (ret != -EEXIST)
				break;
		}
	}
	if (ret)
		return cp_error(ret, err);
	pages_ull = pages;
	if (c->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "ms", json_object_new_int64(ms));
		json_object_object_add(o, "pages",
				       json_object_new_int64(pages_ull));
		cc_json_print(o);
	} else {
		printf("%s\n", name);
	}
	return EX_OK;
}

static int cp_ls(struct cctx *c, int argc, char **argv)
{
	char (*v)[CUBE_CP_NAME_MAX] = NULL, err[CUBE_ERR_MAX] = "";
	size_t n = 0, i;
	uint64_t id;
	int ret;

	if (parse_flags(c, argc, argv, 1, 1))
		return bad_usage("checkpoint ls", "[--json] ID");
	if (cc_parse_id(argv[optind], &id))
		return EX_USAGE;
	ret = cube_sandbox_cp_list(id, &v, &n, err);
	if (ret)
		return cp_error(ret, err);
	if (c->json) {
		struct json_object *a = json_object_new_array();

		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "name",
					       json_object_new_string(v[i]));
			json_object_array_add(a, o);
		}
		cc_json_print(a);
	} else {
		printf("NAME\n");
		for (i = 0; i < n; i++)
			printf("%s\n", v[i]);
	}
	free(v);
	return EX_OK;
}

static int cp_rm(struct cctx *c, int argc, char **argv)
{
	char err[CUBE_ERR_MAX] = "";
	uint64_t id;
	int ret;

	if (parse_flags(c, argc, argv, 2, 2))
		return bad_usage("checkpoint rm", "ID NAME");
	if (cc_parse_id(argv[optind], &id) || check_name(argv[optind + 1]))
		return EX_USAGE;
	ret = cube_sandbox_cp_remove(id, argv[optind + 1], err);
	if (ret)
		return cp_error(ret, err);
	if (!c->json)
		printf("%s\n", argv[optind + 1]);
	return EX_OK;
}

int cmd_checkpoint(struct cctx *c, int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "ls"))
		return cp_ls(c, argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "rm"))
		return cp_rm(c, argc - 1, argv + 1);
	return cp_create(c, argc, argv);
}

int cmd_rollback(struct cctx *c, int argc, char **argv)
{
	char err[CUBE_ERR_MAX] = "";
	struct cube_rollback r;
	const char *name = NULL;
	uint64_t id;
	int ret;

	if (parse_flags(c, argc, argv, 1, 2))
		return bad_usage("rollback", RB_SYN);
	if (cc_parse_id(argv[optind], &id))
		return EX_USAGE;
	if (optind + 1 < argc) {
		name = argv[optind + 1];
		if (check_name(name))
			return EX_USAGE;
	}
	ret = cube_sandbox_rollback(id, name, &r, err);
	if (ret)
		return cp_error(ret, err);
	if (c->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "target",
				       json_object_new_string(r.target));
		json_object_object_add(o, "us", json_object_new_int64(r.vmm_us));
		json_object_object_add(o, "pages",
				       json_object_new_int64(r.pages));
		json_object_object_add(o, "total_us",
				       json_object_new_int64(r.total_us));
		cc_json_print(o);
	} else {
		printf("rolled back to %s in %llu us (%llu pages), %llu us in all\n",
		       r.target, (unsigned long long)r.vmm_us,
		       (unsigned long long)r.pages,
		       (unsigned long long)r.total_us);
	}
	return EX_OK;
}
