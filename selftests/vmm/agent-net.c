// SPDX-License-Identifier: GPL-2.0
/*
 * agent-net: the guest agent's network set-up (guest/agent/net.c), run in
 * the L2 guest of the vmm network tests, so they check the agent's own
 * code against cube-vmm's device.
 *
 *   agent-net [ROOT]   configure the card, then write ROOT/etc/resolv.conf
 *                      and ROOT/etc/hosts
 *
 * Prints "CUBE-L2-AGENT-NET <result> <interface>" (result: 1 configured,
 * 0 no card, else an error) and, with ROOT, "CUBE-L2-AGENT-RESOLV <result>"
 * and "CUBE-L2-AGENT-HOSTS <result>".
 */
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

int main(int argc, char **argv)
{
	char ifname[IFNAMSIZ];
	const char *what = "";
	int ret = net_setup(ifname, &what);

	printf("CUBE-L2-AGENT-NET %d %s\n", ret, ifname);
	if (ret < 0)
		printf("agent-net: %s: %s\n", what, strerror(-ret));
	if (argc > 1 && ret > 0) {
		printf("CUBE-L2-AGENT-RESOLV %d\n", net_write_resolv(argv[1]));
		printf("CUBE-L2-AGENT-HOSTS %d\n", net_write_hosts(argv[1]));
	}
	return ret < 0;
}
