// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_shim.c: what the E2B dispatch harness links instead of e2b_proxy.c.
 * A forwarded request's connection to a sandbox port is the socket the
 * harness set in fuzz_port_fd (its far end plays the sandbox's answer), or
 * refused when there is none.
 */
#include <errno.h>

#include "e2b_proxy.h"
#include "e2b_shim.h"

int fuzz_port_fd = -1;

int e2b_proxy_dial(int netns_fd, unsigned int port)
{
	int fd = fuzz_port_fd;

	fuzz_port_fd = -1;
	return fd >= 0 ? fd : -ECONNREFUSED;
}
