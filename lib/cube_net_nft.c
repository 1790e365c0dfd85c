// SPDX-License-Identifier: GPL-2.0
/*
 * cube_net_nft.c: the nftables rules of a sandbox's namespace (SNAT of the
 * guest, DNAT of DNS to the resolver, forwarding) and the host's one shared
 * table, through libnftables.  Each runs in the calling thread's namespace
 * and is one transaction: it applies whole or not at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nftables/libnftables.h>

#include "cube_net_addr.h"
#include "cube_net_int.h"

static int nft_apply(const char *rules, char *err)
{
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	const char *msg;
	int ret;

	if (!nft)
		return cube_net_err(err, -ENOMEM, "nftables: cannot create a context");
	nft_ctx_buffer_error(nft);
	nft_ctx_buffer_output(nft);
	ret = nft_run_cmd_from_buffer(nft, rules);
	if (ret) {
		size_t n;
		char one[200];

		msg = nft_ctx_get_error_buffer(nft);
		/* the first line says it; the rest repeats the rule */
		n = msg ? strcspn(msg, "\n") : 0;
		snprintf(one, sizeof(one), "%.*s", (int)(n < 199 ? n : 199), msg ? msg : "");
		cube_net_err(err, -EIO, "nftables: %s", one[0] ? one : "failed");
	}
	nft_ctx_free(nft);
	return ret ? -EIO : 0;
}

int cube_net_nft_sandbox(struct in_addr ns_addr, struct in_addr resolver,
			 char *err)
{
	char ns[INET_ADDRSTRLEN], res[INET_ADDRSTRLEN], dns[512] = "";
	char *rules;
	int ret;

	inet_ntop(AF_INET, &ns_addr, ns, sizeof(ns));
	if (resolver.s_addr != INADDR_ANY) {
		inet_ntop(AF_INET, &resolver, res, sizeof(res));
		snprintf(dns, sizeof(dns),
			 "\t\tiifname \"tap0\" ip daddr %s udp dport 53 dnat to %s:53\n"
			 "\t\tiifname \"tap0\" ip daddr %s tcp dport 53 dnat to %s:53\n",
			 CUBE_NET_DNS_IP, res, CUBE_NET_DNS_IP, res);
	}
	if (asprintf(&rules,
		     "table ip cube {\n"
		     "\tchain prerouting {\n"
		     "\t\ttype nat hook prerouting priority -100; policy accept;\n"
		     "%s"
		     "\t}\n"
		     "\tchain postrouting {\n"
		     "\t\ttype nat hook postrouting priority 100; policy accept;\n"
		     "\t\toifname \"eth0\" ip saddr %s snat to %s\n"
		     "\t}\n"
		     "\tchain forward {\n"
		     "\t\ttype filter hook forward priority 0; policy drop;\n"
		     "\t\tiifname \"tap0\" oifname \"eth0\" ip saddr %s accept\n"
		     "\t\tiifname \"eth0\" oifname \"tap0\" ct state established,related accept\n"
		     "\t}\n"
		     "\tchain input {\n"
		     "\t\ttype filter hook input priority 0; policy drop;\n"
		     "\t\tiif \"lo\" accept\n"
		     "\t\tct state established,related accept\n"
		     "\t}\n"
		     "}\n",
		     dns, CUBE_NET_GUEST_IP, ns, CUBE_NET_GUEST_IP) < 0)
		return cube_net_err(err, -ENOMEM, "out of memory");
	ret = nft_apply(rules, err);
	free(rules);
	return ret;
}

int cube_net_nft_host(const char *range, char *err)
{
	char *rules;
	int ret;

	/* add (idempotent) then flush and refill, in one transaction */
	if (asprintf(&rules,
		     "add table ip cube\n"
		     "add chain ip cube postrouting { type nat hook postrouting priority 100; policy accept; }\n"
		     "add chain ip cube forward { type filter hook forward priority 0; policy accept; }\n"
		     "add chain ip cube input { type filter hook input priority 0; policy accept; }\n"
		     "flush chain ip cube postrouting\n"
		     "flush chain ip cube forward\n"
		     "flush chain ip cube input\n"
		     "add rule ip cube postrouting ip saddr %s oifname != \"cube*\" masquerade\n"
		     "add rule ip cube forward iifname \"cube*\" oifname \"cube*\" drop\n"
		     "add rule ip cube input iifname \"cube*\" ct state established,related accept\n"
		     "add rule ip cube input iifname \"cube*\" meta l4proto { tcp, udp } th dport 53 accept\n"
		     "add rule ip cube input iifname \"cube*\" drop\n",
		     range) < 0)
		return cube_net_err(err, -ENOMEM, "out of memory");
	ret = nft_apply(rules, err);
	free(rules);
	return ret;
}
