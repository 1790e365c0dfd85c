// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_events.c: cubectl events, the module's "events" multicast group,
 * live, one line (or one JSON object) per event, until interrupted.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cubectl.h"
#include "nl_client.h"

static void print_event(struct cctx *c, const struct cube_nl_event *ev)
{
	struct json_object *o;

	if (c->json) {
		o = json_object_new_object();
		json_object_object_add(o, "event",
				       json_object_new_string(cube_nl_event_name(ev->cmd)));
		json_object_object_add(o, "time", json_object_new_int64(time(NULL)));
		if (ev->has_sandbox) {
			json_object_object_add(o, "id",
					       json_object_new_int64(ev->sandbox.id));
			json_object_object_add(o, "state",
					       json_object_new_string(cube_nl_state_name(ev->sandbox.state)));
			json_object_object_add(o, "template",
					       json_object_new_string(ev->sandbox.template_name));
			if (ev->cmd == CUBE_CMD_EVENT_SANDBOX_EXIT)
				json_object_object_add(o, "exit_reason",
						       json_object_new_string(cube_nl_exit_name(ev->sandbox.exit_reason)));
		}
		if (ev->has_pool) {
			json_object_object_add(o, "pool",
					       json_object_new_string(ev->pool.name));
			json_object_object_add(o, "size",
					       json_object_new_int64(ev->pool.size));
			json_object_object_add(o, "target",
					       json_object_new_int64(ev->pool.target));
		}
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		printf("%s", cube_nl_event_name(ev->cmd));
		if (ev->has_sandbox) {
			printf(" id=%llu state=%s", (unsigned long long)ev->sandbox.id,
			       cube_nl_state_name(ev->sandbox.state));
			if (ev->sandbox.template_name[0])
				printf(" template=%s", ev->sandbox.template_name);
			if (ev->cmd == CUBE_CMD_EVENT_SANDBOX_EXIT)
				printf(" reason=%s", cube_nl_exit_name(ev->sandbox.exit_reason));
		}
		if (ev->has_pool)
			printf(" pool=%s size=%u target=%u", ev->pool.name,
			       ev->pool.size, ev->pool.target);
		putchar('\n');
	}
	fflush(stdout);
}

int cmd_events(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "count", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long count = 0, seen = 0;
	struct cube_nl_event ev;
	struct cube_nl *nl;
	sigset_t mask;
	int opt, ret, sfd;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'J':
			c->json = true;
			break;
		case 'n':
			if (cc_parse_uint("--count", optarg, 1, 1000000, &count))
				return EX_USAGE;
			break;
		default:
			return cc_err(EX_USAGE, "usage: %s events [--json] [--count N]", cc_prog);
		}
	}
	if (optind != argc)
		return cc_err(EX_USAGE, "usage: %s events [--json] [--count N]", cc_prog);
	ret = cube_nl_events_open(&nl);
	if (ret == -ENOPKG)
		return cc_err(EX_NOMODULE, "cube.ko is not loaded (no \"cube\" netlink family)");
	if (ret)
		return cc_errno(ret, "events");
	cube_nl_set_nonblocking(nl);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = cube_nl_fd(nl), .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN)
			break;
		while ((ret = cube_nl_event_next(nl, &ev)) == 0) {
			print_event(c, &ev);
			if (count && ++seen >= count)
				goto out;
		}
		if (ret == -ENOBUFS)
			fprintf(stderr, "%s: events were lost (the reader was too slow)\n",
				cc_prog);
		else if (ret != -EAGAIN && ret != -EBADMSG) {
			cube_nl_close(nl);
			return cc_errno(ret, "events");
		}
	}
out:
	cube_nl_close(nl);
	close(sfd);
	return EX_OK;
}
