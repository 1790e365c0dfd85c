// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_pool.c: cubectl pool set / ls.  A template's warm pool carries the
 * template's name; cubed keeps it filled to its size.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cube_runtime.h"
#include "cubectl.h"
#include "nl_client.h"

static int pool_set(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "low", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long size = 0, low = 0;
	bool have_size = false, have_low = false;
	struct cube_template t;
	struct cube_nl_pool p;
	char err[CUBE_ERR_MAX];
	struct cube_nl *nl;
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (cc_parse_uint("--size", optarg, 0, CUBE_POOL_TARGET_MAX, &size))
				return EX_USAGE;
			have_size = true;
			break;
		case 'l':
			if (cc_parse_uint("--low", optarg, 0, CUBE_POOL_TARGET_MAX, &low))
				return EX_USAGE;
			have_low = true;
			break;
		default:
			return cc_err(EX_USAGE, "usage: %s pool set TEMPLATE --size N [--low N]", cc_prog);
		}
	}
	if (optind + 1 != argc || !have_size)
		return cc_err(EX_USAGE, "usage: %s pool set TEMPLATE --size N [--low N]", cc_prog);
	if (have_low && low > size)
		return cc_err(EX_USAGE, "--low %lu is above --size %lu", low, size);
	if (!have_low)
		low = size;	/* refill after every take */
	if (!cube_name_valid(argv[optind]))
		return cc_err(EX_USAGE, "invalid template name '%s'", argv[optind]);
	if (size && cube_template_load(argv[optind], &t, err))
		return cc_err(EX_NOTFOUND, "%s", err);
	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_pool_get(nl, argv[optind], &p);
	if (ret && ret != -ENOENT) {
		cube_nl_close(nl);
		return cc_errno(ret, "pool");
	}
	if (size == 0) {
		/* size 0 removes the pool */
		if (ret == -ENOENT) {
			cube_nl_close(nl);
			return cc_err(EX_NOTFOUND, "no pool for template '%s'", argv[optind]);
		}
		ret = cube_nl_pool_del(nl, argv[optind]);
	} else if (ret == -ENOENT) {
		ret = cube_nl_pool_new(nl, argv[optind], argv[optind], size, low);
	} else {
		ret = cube_nl_pool_set(nl, argv[optind], size, low);
	}
	cube_nl_close(nl);
	if (ret)
		return cc_errno(ret, argv[optind]);
	return EX_OK;
}

static int pool_ls(struct cctx *c)
{
	struct cube_nl_pool *v;
	struct cube_nl *nl;
	size_t n, i;
	int ret;

	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_pool_dump(nl, &v, &n);
	cube_nl_close(nl);
	if (ret)
		return cc_errno(ret, "pools");
	if (c->json) {
		struct json_object *arr = json_object_new_array();

		for (i = 0; i < n; i++) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "name", json_object_new_string(v[i].name));
			json_object_object_add(o, "template",
					       json_object_new_string(v[i].template_name));
			json_object_object_add(o, "size", json_object_new_int64(v[i].size));
			json_object_object_add(o, "target", json_object_new_int64(v[i].target));
			json_object_object_add(o, "low", json_object_new_int64(v[i].low));
			json_object_object_add(o, "taken", json_object_new_int64(v[i].taken));
			json_object_array_add(arr, o);
		}
		cc_json_print(arr);
	} else {
		printf("%-20s %-20s %5s %6s %5s %7s\n", "POOL", "TEMPLATE", "READY",
		       "TARGET", "LOW", "TAKEN");
		for (i = 0; i < n; i++)
			printf("%-20s %-20s %5u %6u %5u %7llu\n", v[i].name,
			       v[i].template_name, v[i].size, v[i].target, v[i].low,
			       (unsigned long long)v[i].taken);
	}
	free(v);
	return EX_OK;
}

int cmd_pool(struct cctx *c, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && !strcmp(argv[i], "--json"); i++)
		c->json = true;
	if (i >= argc)
		return cc_err(EX_USAGE, "usage: %s pool set|ls ...", cc_prog);
	optind = 0;	/* reinitialise getopt for the subcommand */
	if (!strcmp(argv[i], "set"))
		return pool_set(argc - i, argv + i);
	if (!strcmp(argv[i], "ls")) {
		if (i + 1 < argc && !strcmp(argv[i + 1], "--json")) {
			c->json = true;
			i++;
		}
		if (i + 1 != argc)
			return cc_err(EX_USAGE, "usage: %s pool ls [--json]", cc_prog);
		return pool_ls(c);
	}
	return cc_err(EX_USAGE, "unknown pool command '%s' (set, ls)", argv[i]);
}
