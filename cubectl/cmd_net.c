// SPDX-License-Identifier: GPL-2.0
/*
 * cmd_net.c: cubectl net show ID, cubectl net set ID POLICY.
 *
 * A sandbox's egress program is found by its id among the loaded BPF
 * programs (lib/cube_net_bpf.c): nothing is pinned, so nothing outlives
 * the sandbox.  Root only, as every BPF object walk is.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cube_net.h"
#include "cube_runtime.h"
#include "cubectl.h"
#include "nl_client.h"

#define OPT_JSON	1000
#define NET_USAGE	"net show ID | net set ID none|deny|internet|FILE"

/* the sandbox exists (module), and has a network (its program) */
static int open_net(const char *arg, uint64_t id, struct cube_net_handle *h)
{
	struct cube_nl_sandbox sb;
	struct cube_nl *nl;
	int ret;

	ret = cc_nl_open(&nl);
	if (ret)
		return ret;
	ret = cube_nl_sandbox_get(nl, id, &sb);
	cube_nl_close(nl);
	if (ret == -ENOENT)
		return cc_err(EX_NOTFOUND, "sandbox %s: not found", arg);
	if (ret)
		return cc_errno(ret, arg);
	if (!(sb.flags & CUBE_SANDBOX_F_NETNS))
		return cc_err(EX_CONFLICT, "sandbox %s has no network (created with --net none)", arg);
	ret = cube_net_open(id, h);
	if (ret == -ENOENT)
		return cc_err(EX_CONFLICT, "sandbox %s has no egress policy program (created with --net none?)", arg);
	if (ret)
		return cc_errno(ret, "BPF programs");
	return EX_OK;
}

static struct json_object *rules_json(const struct cube_net_policy *p)
{
	struct json_object *a = json_object_new_array();
	unsigned int i;

	for (i = 0; i < p->nrules; i++) {
		const struct cube_net_rule *r = &p->rules[i];
		struct json_object *o = json_object_new_object();
		char cidr[INET6_ADDRSTRLEN + 8], addr[INET6_ADDRSTRLEN];

		inet_ntop(r->family, r->addr, addr, sizeof(addr));
		snprintf(cidr, sizeof(cidr), "%s/%u", addr, r->plen);
		json_object_object_add(o, "action", json_object_new_string(
				       r->action == CUBE_NET_ALLOW ? "allow" : "deny"));
		json_object_object_add(o, "cidr", json_object_new_string(cidr));
		if (r->port_lo) {
			json_object_object_add(o, "port_lo", json_object_new_int(r->port_lo));
			json_object_object_add(o, "port_hi", json_object_new_int(r->port_hi));
		}
		json_object_array_add(a, o);
	}
	return a;
}

static int net_show(struct cctx *c, const char *arg, uint64_t id)
{
	static struct cube_net_policy p;
	struct cube_net_counters cnt;
	struct cube_net_handle h;
	struct cube_net_info info;
	char ns[INET_ADDRSTRLEN], host[INET_ADDRSTRLEN], res[INET_ADDRSTRLEN];
	uint32_t gen = 0;
	unsigned int i;
	int ret;

	ret = open_net(arg, id, &h);
	if (ret)
		return ret;
	ret = cube_net_get_policy(&h, &p, &gen);
	if (!ret)
		ret = cube_net_get_counters(&h, &cnt);
	if (!ret)
		ret = cube_net_get_info(&h, &info);
	cube_net_handle_close(&h);
	if (ret)
		return cc_errno(ret, "egress maps");
	inet_ntop(AF_INET, &info.ns_addr, ns, sizeof(ns));
	inet_ntop(AF_INET, &info.host_addr, host, sizeof(host));
	if (info.resolver.s_addr)
		inet_ntop(AF_INET, &info.resolver, res, sizeof(res));
	else
		strcpy(res, "-");
	if (c->json) {
		struct json_object *o = json_object_new_object(), *co = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_int64(id));
		json_object_object_add(o, "policy", json_object_new_string(cube_net_mode_name(p.mode)));
		json_object_object_add(o, "generation", json_object_new_int64(gen));
		json_object_object_add(o, "rules", rules_json(&p));
		json_object_object_add(o, "slot", json_object_new_int(info.slot));
		json_object_object_add(o, "netns_address", json_object_new_string(ns));
		json_object_object_add(o, "host_address", json_object_new_string(host));
		json_object_object_add(o, "resolver", json_object_new_string(res));
		for (i = 0; i < CUBE_NET_NR_REASONS; i++) {
			struct json_object *r = json_object_new_object();

			json_object_object_add(r, "packets", json_object_new_int64(cnt.packets[i]));
			json_object_object_add(r, "bytes", json_object_new_int64(cnt.bytes[i]));
			json_object_object_add(co, cube_net_reason_name(i), r);
		}
		json_object_object_add(o, "counters", co);
		{
			char ifn[IF_NAMESIZE];

			snprintf(ifn, sizeof(ifn), "cube%u", info.slot);
			json_object_object_add(o, "host_ifname", json_object_new_string(ifn));
		}
		cc_json_print(o);
		return EX_OK;
	}
	printf("sandbox     %llu\n", (unsigned long long)id);
	printf("policy      %s (generation %u)\n", cube_net_mode_name(p.mode), gen);
	for (i = 0; i < p.nrules; i++) {
		char r[96];

		cube_net_rule_format(&p.rules[i], r, sizeof(r));
		printf("            %s %s\n",
		       p.rules[i].action == CUBE_NET_ALLOW ? "allow" : "deny", r);
	}
	printf("address     %s (host cube%u %s)\n", ns, info.slot, host);
	printf("resolver    %s\n\n", res);
	printf("%-10s %12s %12s\n", "VERDICT", "PACKETS", "BYTES");
	for (i = 0; i < CUBE_NET_NR_REASONS; i++) {
		char b[16];

		cc_bytes(cnt.bytes[i], b, sizeof(b));
		printf("%-10s %12llu %12s\n", cube_net_reason_name(i),
		       (unsigned long long)cnt.packets[i], b);
	}
	return EX_OK;
}

static int net_set(struct cctx *c, const char *arg, uint64_t id,
		   const char *spec)
{
	static struct cube_net_policy p;
	char err[CUBE_NET_ERR_MAX];
	struct cube_net_handle h;
	int ret;

	/* validated before anything is touched */
	ret = cube_net_policy_parse_arg(spec, &p, err);
	if (ret)
		return cc_err(EX_USAGE, "%s", err);
	if (p.mode == CUBE_NET_NONE)
		return cc_err(EX_USAGE, "a running sandbox keeps its network device: use 'deny' to cut it off");
	ret = open_net(arg, id, &h);
	if (ret)
		return ret;
	ret = cube_net_set_policy(&h, &p, err);
	cube_net_handle_close(&h);
	if (ret)
		return cc_err(cc_code(ret), "%s", err);
	if (c->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_int64(id));
		json_object_object_add(o, "policy", json_object_new_string(cube_net_mode_name(p.mode)));
		json_object_object_add(o, "rules", json_object_new_int(p.nrules));
		cc_json_print(o);
	}
	return EX_OK;
}

int cmd_net(struct cctx *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	const char *sub;
	uint64_t id;
	int opt;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != OPT_JSON)
			return cc_err(EX_USAGE, "usage: %s %s", cc_prog, NET_USAGE);
		c->json = true;
	}
	if (optind >= argc)
		return cc_err(EX_USAGE, "usage: %s %s", cc_prog, NET_USAGE);
	sub = argv[optind];
	if (!strcmp(sub, "show") && optind + 2 == argc) {
		if (cc_parse_id(argv[optind + 1], &id))
			return EX_USAGE;
		return net_show(c, argv[optind + 1], id);
	}
	if (!strcmp(sub, "set") && optind + 3 == argc) {
		if (cc_parse_id(argv[optind + 1], &id))
			return EX_USAGE;
		return net_set(c, argv[optind + 1], id, argv[optind + 2]);
	}
	return cc_err(EX_USAGE, "usage: %s %s", cc_prog, NET_USAGE);
}
