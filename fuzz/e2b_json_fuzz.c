// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_json_fuzz: every JSON request body parser of the E2B API
 * (e2b/e2b_json.c, with the network fields of e2b/e2b_net.c and the
 * egress policy syntax of lib/cube_net_policy.c).  The first byte picks
 * the parser, the rest is the body.  A parser either fills its structure
 * or returns -EINVAL with a reason and holds nothing (the leak checker
 * holds it to that: a refused body is never freed here); what it accepts
 * must be within the limits of e2b_json.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_backend.h"
#include "e2b_json.h"
#include "fuzz.h"

enum parser {
	P_JSON, P_NEW_SANDBOX, P_NETWORK, P_TIMEOUT, P_TIMEOUT_REQUIRED,
	P_FORK, P_START, P_SELECTOR, P_SIGNAL, P_INPUT, P_PATH, P_LIST_DIR,
	P_MOVE, P_WATCH, NR_PARSERS
};

static void check_refusal(int ret, const char *err)
{
	if (ret != -EINVAL || !err[0] || strnlen(err, E2B_MSG_MAX) == E2B_MSG_MAX)
		abort();
}

static void check_path(const char *p)
{
	if (!p || !e2b_path_valid(p) || strlen(p) > E2B_PATH_MAX)
		abort();
}

static void parse(enum parser which, const char *body, size_t len)
{
	char err[E2B_MSG_MAX] = "";
	struct e2b_new_sandbox ns;
	struct e2b_selector sel;
	struct e2b_start start;
	struct e2b_net net;
	struct json_object *o;
	unsigned int secs = 0, count = 0, depth = 0;
	unsigned char *input;
	size_t dlen;
	bool given, flag;
	char *path, *to;
	int ret = 0, sig;

	switch (which) {
	case P_JSON:
		o = e2b_json_parse(body, len, err);
		if (o)
			json_object_put(o);
		else if (!err[0])
			abort();
		return;
	case P_NEW_SANDBOX:
		ret = e2b_parse_new_sandbox(body, len, &ns, err);
		if (!ret) {
			if (ns.metadata.n > E2B_META_MAX || ns.env.n > E2B_META_MAX ||
			    strnlen(ns.template_id, sizeof(ns.template_id)) ==
			    sizeof(ns.template_id))
				abort();
			e2b_new_sandbox_free(&ns);
		}
		break;
	case P_NETWORK:
		ret = e2b_parse_network_update(body, len, &net, err);
		if (!ret)
			e2b_net_free(&net);
		break;
	case P_TIMEOUT:
	case P_TIMEOUT_REQUIRED:
		ret = e2b_parse_timeout(body, len, which == P_TIMEOUT_REQUIRED,
					&secs, &given, err);
		if (!ret && which == P_TIMEOUT_REQUIRED && !given)
			abort();
		break;
	case P_FORK:
		ret = e2b_parse_fork(body, len, &secs, &count, err);
		if (!ret && (count < 1 || count > E2B_FORK_MAX))
			abort();
		break;
	case P_START:
		ret = e2b_parse_start(body, len, &start, err);
		if (!ret)
			e2b_start_free(&start);
		break;
	case P_SELECTOR:
		ret = e2b_parse_selector_req(body, len, &sel, err);
		if (!ret)
			e2b_selector_free(&sel);
		break;
	case P_SIGNAL:
		ret = e2b_parse_signal(body, len, &sel, &sig, err);
		if (!ret) {
			if (sig != SIGTERM && sig != SIGKILL)
				abort();
			e2b_selector_free(&sel);
		}
		break;
	case P_INPUT:
		ret = e2b_parse_input(body, len, &sel, &input, &dlen, &flag, err);
		if (!ret) {
			if (dlen > E2B_INPUT_MAX || dlen > len)
				abort();
			if (dlen)
				memset(input, 0, dlen);	/* ASan: all of it is ours */
			free(input);
			e2b_selector_free(&sel);
		}
		break;
	case P_PATH:
		ret = e2b_parse_path(body, len, &path, err);
		if (!ret) {
			check_path(path);
			free(path);
		}
		break;
	case P_LIST_DIR:
		ret = e2b_parse_list_dir(body, len, &path, &depth, err);
		if (!ret) {
			check_path(path);
			free(path);
		}
		break;
	case P_MOVE:
		ret = e2b_parse_move(body, len, &path, &to, err);
		if (!ret) {
			check_path(path);
			check_path(to);
			free(path);
			free(to);
		}
		break;
	case P_WATCH:
		ret = e2b_parse_watch(body, len, &path, &flag, err);
		if (!ret) {
			check_path(path);
			free(path);
		}
		break;
	default:
		return;
	}
	if (ret)
		check_refusal(ret, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body;

	if (!size)
		return 0;
	/* exactly the body's bytes, not NUL-terminated: as the server has it */
	body = malloc(size - 1 ? size - 1 : 1);
	if (!body)
		return 0;
	memcpy(body, data + 1, size - 1);
	parse(data[0] % NR_PARSERS, body, size - 1);
	free(body);
	return 0;
}
