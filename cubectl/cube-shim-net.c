// SPDX-License-Identifier: GPL-2.0
/*
 * cube-shim-net: the part of cube-shim that needs libbpf and libnftables.
 * cube-shim runs it for a moment, twice in a sandbox's life, so that the
 * shim itself, which lives as long as its sandbox, maps neither: their
 * relocated data alone cost every sandbox some 170 KiB of anonymous memory.
 * Never run by hand.
 *
 *   cube-shim-net create ID POLICY
 *	fd 3: sandbox ID's fd (cube.ko); fd 4: a SOCK_SEQPACKET socket.
 *	Builds the sandbox's network with the encoded POLICY
 *	(lib/cube_net.c), hands its namespace and BPF links to cube.ko on
 *	the sandbox fd, and sends one message on the socket: "OK" with the
 *	tap's fd, or "ERR <errno> <reason>" with nothing made.
 *
 *   cube-shim-net audit ID
 *	Writes the behaviour log's "network" line of sandbox ID: what its
 *	egress program passed and dropped, by reason (none for a sandbox
 *	without a program).  The shim runs it at the end, while its sandbox
 *	fd still holds the program.
 *
 * Exit status 0, 1 on failure (said on the socket), 2 for bad arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/cube.h>

#include "cube_audit.h"
#include "cube_net.h"
#include "cube_runtime.h"

#define SANDBOX_FD	3
#define SOCKET_FD	4

/* "OK" with @fd, or "ERR <-ret> <msg>" without */
static int answer(int ret, const char *msg, int fd)
{
	char text[CUBE_NET_ERR_MAX + 32];
	size_t len;

	if (ret)
		len = snprintf(text, sizeof(text), "ERR %d %s", -ret, msg);
	else
		len = snprintf(text, sizeof(text), "OK");
	if (len >= sizeof(text))
		len = sizeof(text) - 1;
	return cube_send_fds(SOCKET_FD, text, len, &fd, !ret);
}

static int create(uint64_t id, const char *policy_arg)
{
	static struct cube_net_policy policy;	/* some 7 KiB */
	struct cube_net_config cfg = { .sandbox_id = id, .policy = &policy };
	char err[CUBE_NET_ERR_MAX] = "";
	struct cube_fd_arg a = { 0 };
	struct cube_net net;
	unsigned int i;
	int ret;

	if (cube_net_policy_decode(policy_arg, &policy, err) ||
	    policy.mode == CUBE_NET_NONE) {
		answer(-EINVAL, err[0] ? err : "no network to build", -1);
		return 1;
	}
	ret = cube_net_create(&cfg, &net, err);
	if (ret) {
		answer(ret, err[0] ? err : strerror(-ret), -1);
		return 1;
	}
	a.fd = net.netns_fd;
	if (ioctl(SANDBOX_FD, CUBE_IOC_SANDBOX_SET_NETNS, &a)) {
		ret = -errno;
		goto fail;
	}
	for (i = 0; i < net.nlinks; i++) {
		a.fd = net.link_fds[i];
		if (ioctl(SANDBOX_FD, CUBE_IOC_SANDBOX_ADD_BPF_LINK, &a)) {
			ret = -errno;
			goto fail;
		}
	}
	/* cube.ko holds the namespace and the links now: the tap goes back */
	ret = answer(0, NULL, net.tap_fd);
	cube_net_close(&net);
	return ret ? 1 : 0;
fail:
	/*
	 * What cube.ko took already goes with the sandbox, which fails; the
	 * rest goes with these fds.
	 */
	snprintf(err, sizeof(err), "cannot hand the sandbox's network to cube.ko: %s",
		 strerror(-ret));
	answer(ret, err, -1);
	cube_net_close(&net);
	return 1;
}

static int audit(uint64_t id)
{
	struct json_object *f, *drops;
	struct cube_net_counters c;
	struct cube_net_handle h;
	int r;

	if (cube_net_open(id, &h))
		return 0;	/* no program: no network line */
	r = cube_net_get_counters(&h, &c);
	cube_net_handle_close(&h);
	if (r)
		return 1;
	f = json_object_new_object();
	drops = json_object_new_object();
	if (!f || !drops) {
		json_object_put(f);
		json_object_put(drops);
		return 1;
	}
	json_object_object_add(f, "passed_packets", json_object_new_int64(
		c.packets[CUBE_NET_PASSED]));
	json_object_object_add(f, "passed_bytes", json_object_new_int64(
		c.bytes[CUBE_NET_PASSED]));
	for (r = CUBE_NET_PASSED + 1; r < CUBE_NET_NR_REASONS; r++)
		if (c.packets[r])
			json_object_object_add(drops, cube_net_reason_name(r),
					       json_object_new_int64(c.packets[r]));
	json_object_object_add(f, "dropped_packets", drops);
	cube_audit_id(id, "network", "cube-shim", f);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t id;

	if (argc >= 3 && !cube_parse_id(argv[2], &id)) {
		if (argc == 4 && !strcmp(argv[1], "create"))
			return create(id, argv[3]);
		if (argc == 3 && !strcmp(argv[1], "audit"))
			return audit(id);
	}
	fprintf(stderr, "cube-shim-net: internal helper of cube-shim; bad arguments\n");
	return 2;
}
