// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_shim.c: what the E2B dispatch harness links instead of e2b_proxy.c
 * and lib/cube_runtime.c.  A forwarded request's connection to a sandbox
 * port is the socket the harness set in fuzz_port_fd (its far end plays the
 * sandbox's answer), or refused when there is none.
 */
#include <errno.h>

#include "cube_runtime.h"
#include "e2b_proxy.h"
#include "e2b_shim.h"

int fuzz_port_fd = -1;

int e2b_proxy_dial(int netns_fd, unsigned int port)
{
	int fd = fuzz_port_fd;

	fuzz_port_fd = -1;
	return fd >= 0 ? fd : -ECONNREFUSED;
}

/*
 * The behaviour log's lines are built for every request that succeeds,
 * and written nowhere: a state directory under /proc cannot be made.
 */
const char *cube_state_dir(void)
{
	return "/proc/cube-fuzz-no-state";
}
