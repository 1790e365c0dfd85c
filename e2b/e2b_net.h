/* SPDX-License-Identifier: GPL-2.0 */
/*
 * e2b_net.h: a sandbox's network settings as E2B states them, and the
 * egress policy (lib/cube_net.h) they stand for.
 *
 * E2B says it with allow_internet_access (false: nothing out) and the
 * network object of a create (allowOut, denyOut: CIDRs or IP addresses,
 * where allowed entries win over denied ones; allowPublicTraffic: whether
 * the sandbox's ports need the traffic access token).  The same lists come
 * in PUT /sandboxes/{id}/network, which replaces them all.
 *
 * Entries are IPv4 or IPv6 addresses (a /32 or /128) or CIDRs, checked by
 * cube_net_parse_cidr(); domain names, ports, egress proxies, transform
 * rules, httpsPorts and maskRequestHost cannot be honoured and are refused
 * with a message naming the field or entry.  The whole policy is then
 * built and checked by cube_net_policy_parse_text(), so what passes here
 * can be set on a sandbox.
 */
#ifndef CUBE_E2B_NET_H
#define CUBE_E2B_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "cube_net.h"

/* entries of allowOut or denyOut */
#define E2B_NET_LIST_MAX	100
/* characters of one entry */
#define E2B_NET_ENTRY_MAX	64

struct json_object;

/**
 * struct e2b_net - what a create or an update asked for; all zero is
 * the default (nothing said: internet, public ports)
 * @internet: allow_internet_access: E2B_UNSET, E2B_FALSE, E2B_TRUE
 * @allow_out, @n_allow: allowOut as given (NULL, 0 when absent)
 * @deny_out, @n_deny: denyOut as given
 * @has_allow, @has_deny: the list was given (it may be empty)
 * @private_ports: network.allowPublicTraffic was false: the sandbox's
 *	ports need its traffic access token
 */
enum e2b_tristate { E2B_UNSET, E2B_FALSE, E2B_TRUE };

struct e2b_net {
	enum e2b_tristate internet;
	char **allow_out;
	size_t n_allow;
	char **deny_out;
	size_t n_deny;
	bool has_allow, has_deny;
	bool private_ports;
};

void e2b_net_init(struct e2b_net *n);
void e2b_net_free(struct e2b_net *n);
int e2b_net_copy(struct e2b_net *dst, const struct e2b_net *src);

/**
 * e2b_net_parse() - the network fields of a request body
 * @body: the request's JSON object
 * @update: a PUT /network body (allowOut, denyOut, allow_internet_access
 *	at the top) rather than a create (allow_internet_access at the top,
 *	the lists in "network")
 * @out: filled on success (free it with e2b_net_free())
 * @err: the reason otherwise (E2B_MSG_MAX bytes)
 *
 * The policy is built and checked too: a body that parses describes a
 * policy that can be set.
 *
 * Return: 0, -EINVAL (the request is wrong: 400), -ENOMEM.
 */
int e2b_net_parse(struct json_object *body, bool update, struct e2b_net *out,
		  char *err);

/* whether @n asks for no more than the default ("internet", public) */
bool e2b_net_is_default(const struct e2b_net *n);

/**
 * e2b_net_policy() - the egress policy @n stands for
 *
 * Nothing said: "internet".  allow_internet_access false and no allowOut:
 * "deny".  Otherwise a list: "allow 0.0.0.0/0" and "allow ::/0" (or
 * "deny" of both when internet access is off, or when denyOut names
 * 0.0.0.0/0 or ::/0, E2B's "all traffic"), each allowOut entry allowed,
 * each denyOut entry denied unless an allowOut entry covers it (in E2B an
 * allowed entry always wins).  Public addresses only, unless an entry
 * names a private range itself (lib/cube_net.h).
 *
 * Return: 0, or -EINVAL / -E2BIG with @err naming the entry.
 */
int e2b_net_policy(const struct e2b_net *n, struct cube_net_policy *p,
		   char *err);

/*
 * The form kept in records and reported by GET /sandboxes/{id}:
 * {"allowOut": [...], "denyOut": [...], "allowPublicTraffic": b} (lists only
 * when given).  e2b_net_from_json() reads it back (and the record's
 * "allow_internet_access"), skipping what does not fit.
 */
struct json_object *e2b_net_json(const struct e2b_net *n);
void e2b_net_from_json(struct json_object *network, struct json_object *ai,
		       struct e2b_net *n);

#endif /* CUBE_E2B_NET_H */
