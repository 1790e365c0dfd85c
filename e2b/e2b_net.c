// SPDX-License-Identifier: GPL-2.0
/*
 * e2b_net.c: E2B's network options to the egress policy of lib/cube_net.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <json-c/json.h>

#include "e2b_backend.h"
#include "e2b_net.h"

static int fail(char *err, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err, E2B_MSG_MAX, fmt, ap);
		va_end(ap);
	}
	return ret;
}

void e2b_net_init(struct e2b_net *n)
{
	memset(n, 0, sizeof(*n));
}

static void list_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void e2b_net_free(struct e2b_net *n)
{
	list_free(n->allow_out, n->n_allow);
	list_free(n->deny_out, n->n_deny);
	e2b_net_init(n);
}

static int list_copy(char ***dst, char **src, size_t n)
{
	size_t i;

	*dst = NULL;
	if (!n)
		return 0;
	*dst = calloc(n, sizeof(char *));
	if (!*dst)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		(*dst)[i] = strdup(src[i]);
		if (!(*dst)[i]) {
			list_free(*dst, i);
			*dst = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

int e2b_net_copy(struct e2b_net *dst, const struct e2b_net *src)
{
	struct e2b_net t = *src;

	t.allow_out = t.deny_out = NULL;
	if (list_copy(&t.allow_out, src->allow_out, src->n_allow))
		return -ENOMEM;
	if (list_copy(&t.deny_out, src->deny_out, src->n_deny)) {
		list_free(t.allow_out, t.n_allow);
		return -ENOMEM;
	}
	*dst = t;
	return 0;
}

bool e2b_net_is_default(const struct e2b_net *n)
{
	return n->internet != E2B_FALSE && !n->n_allow && !n->n_deny &&
	       !n->private_ports;
}

/* a name rather than an address: letters, digits, '-', '.', '*' */
static bool looks_like_domain(const char *s)
{
	bool alpha = false;
	size_t i;

	for (i = 0; s[i]; i++) {
		char c = s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    c == '*')
			alpha = true;
		else if (!((c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return alpha;
}

/* one entry of @what, an address or CIDR without ports, into @r */
static int parse_entry(const char *what, const char *s,
		       struct cube_net_rule *r, char *err)
{
	char e[CUBE_NET_ERR_MAX];

	if (cube_net_parse_cidr(s, r, e)) {
		if (looks_like_domain(s))
			return fail(err, -EINVAL,
				    "%s entry '%s': domain names are not supported by this server, only IP addresses and CIDRs",
				    what, s);
		return fail(err, -EINVAL, "%s entry '%s': %s", what, s, e);
	}
	if (r->port_lo)
		return fail(err, -EINVAL,
			    "%s entry '%s': ports are not supported, only IP addresses and CIDRs",
			    what, s);
	return 0;
}

static int parse_list(struct json_object *v, const char *what, char ***out,
		      size_t *n, char *err)
{
	struct cube_net_rule r;
	size_t i, len;
	char **list;

	if (!json_object_is_type(v, json_type_array))
		return fail(err, -EINVAL, "'%s' must be an array of strings",
			    what);
	len = json_object_array_length(v);
	if (len > E2B_NET_LIST_MAX)
		return fail(err, -EINVAL, "'%s' has more than %d entries", what,
			    E2B_NET_LIST_MAX);
	list = len ? calloc(len, sizeof(char *)) : NULL;
	if (len && !list)
		return fail(err, -ENOMEM, "out of memory");
	for (i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		const char *s;
		int ret;

		if (!e || !json_object_is_type(e, json_type_string)) {
			list_free(list, i);
			return fail(err, -EINVAL,
				    "'%s' must be an array of strings", what);
		}
		s = json_object_get_string(e);
		if (strlen(s) != (size_t)json_object_get_string_len(e) ||
		    !s[0] || strlen(s) > E2B_NET_ENTRY_MAX) {
			list_free(list, i);
			return fail(err, -EINVAL,
				    "'%s' entry %zu is empty, overlong (at most %d characters) or holds a NUL",
				    what, i, E2B_NET_ENTRY_MAX);
		}
		ret = parse_entry(what, s, &r, err);
		if (!ret) {
			list[i] = strdup(s);
			if (!list[i])
				ret = fail(err, -ENOMEM, "out of memory");
		}
		if (ret) {
			list_free(list, i);
			return ret;
		}
	}
	*out = list;
	*n = len;
	return 0;
}

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) ||
	    json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

/* a field we cannot honour: absent, null, false, or empty */
static bool empty_value(struct json_object *v)
{
	if (!v)
		return true;
	switch (json_object_get_type(v)) {
	case json_type_array:
		return !json_object_array_length(v);
	case json_type_object:
		return !json_object_object_length(v);
	case json_type_string:
		return !json_object_get_string_len(v);
	default:
		return false;
	}
}

static int parse_bool(struct json_object *v, const char *what, bool *out,
		      char *err)
{
	if (!json_object_is_type(v, json_type_boolean))
		return fail(err, -EINVAL, "'%s' must be true or false", what);
	*out = json_object_get_boolean(v);
	return 0;
}

int e2b_net_parse(struct json_object *body, bool update, struct e2b_net *out,
		  char *err)
{
	static const char *const unsupported[] = {
		"egressProxy", "rules", "httpsPorts", "maskRequestHost",
	};
	struct e2b_net n = { 0 };
	struct cube_net_policy *p;
	struct json_object *net, *v;
	const char *ai = "allow_internet_access";
	bool b = false;
	size_t i;
	int ret;

	e2b_net_init(out);
	v = get(body, ai);
	if (!v) {
		ai = "allowInternetAccess";
		v = get(body, ai);
	}
	if (v) {
		ret = parse_bool(v, ai, &b, err);
		if (ret)
			return ret;
		n.internet = b ? E2B_TRUE : E2B_FALSE;
	}
	net = update ? body : get(body, "network");
	if (net && !json_object_is_type(net, json_type_object))
		return fail(err, -EINVAL, "'network' must be an object");
	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		/* an update carries no maskRequestHost, httpsPorts */
		if (update && i >= 2)
			break;
		if (!empty_value(get(net, unsupported[i])))
			return fail(err, -EINVAL,
				    "network.%s is not supported by this server",
				    unsupported[i]);
	}
	v = update ? NULL : get(net, "allowPublicTraffic");
	if (v) {
		ret = parse_bool(v, "network.allowPublicTraffic", &b, err);
		if (ret)
			return ret;
		n.private_ports = !b;
	}
	v = get(net, "allowOut");
	if (v) {
		ret = parse_list(v, "allowOut", &n.allow_out, &n.n_allow, err);
		if (ret)
			goto out;
		n.has_allow = true;
	}
	v = get(net, "denyOut");
	if (v) {
		ret = parse_list(v, "denyOut", &n.deny_out, &n.n_deny, err);
		if (ret)
			goto out;
		n.has_deny = true;
	}
	/* that the policy can be built and set is part of being valid */
	p = malloc(sizeof(*p));
	ret = p ? e2b_net_policy(&n, p, err) : fail(err, -ENOMEM, "out of memory");
	free(p);
	if (ret)
		goto out;
	*out = n;
	return 0;
out:
	e2b_net_free(&n);
	return ret;
}

/* --- the policy --- */

static bool covers(const struct cube_net_rule *a, const struct cube_net_rule *b)
{
	unsigned int i;

	if (a->family != b->family || a->plen > b->plen)
		return false;
	for (i = 0; i < a->plen; i++) {
		uint8_t m = 0x80 >> (i % 8);

		if ((a->addr[i / 8] & m) != (b->addr[i / 8] & m))
			return false;
	}
	return true;
}

static bool all_traffic(const struct cube_net_rule *r)
{
	return r->plen == 0;
}

struct text {
	char *buf;
	size_t len, cap;
};

static int append(struct text *t, const char *action, const char *cidr)
{
	size_t need = strlen(action) + strlen(cidr) + 3;

	if (t->len + need > t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 1024;
		char *nb;

		while (nc < t->len + need)
			nc *= 2;
		nb = realloc(t->buf, nc);
		if (!nb)
			return -ENOMEM;
		t->buf = nb;
		t->cap = nc;
	}
	t->len += sprintf(t->buf + t->len, "%s %s\n", action, cidr);
	return 0;
}

static bool same(const struct cube_net_rule *a, const struct cube_net_rule *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

int e2b_net_policy(const struct e2b_net *n, struct cube_net_policy *p,
		   char *err)
{
	struct cube_net_rule *allow = NULL, *deny = NULL;
	bool deny_all = n->internet == E2B_FALSE, open4 = false, open6 = false;
	struct text t = { 0 };
	char e[CUBE_NET_ERR_MAX];
	size_t i, j;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	if (n->n_allow)
		allow = calloc(n->n_allow, sizeof(*allow));
	if (n->n_deny)
		deny = calloc(n->n_deny, sizeof(*deny));
	if ((n->n_allow && !allow) || (n->n_deny && !deny)) {
		ret = fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n->n_deny && !ret; i++) {
		ret = parse_entry("denyOut", n->deny_out[i], &deny[i], err);
		/* 0.0.0.0/0 is E2B's "all traffic": IPv6 too */
		if (!ret && all_traffic(&deny[i]))
			deny_all = true;
	}
	for (i = 0; i < n->n_allow && !ret; i++) {
		ret = parse_entry("allowOut", n->allow_out[i], &allow[i], err);
		if (!ret && all_traffic(&allow[i]))
			*(allow[i].family == AF_INET ? &open4 : &open6) = true;
	}
	if (ret)
		goto out;
	if (!n->n_allow && (deny_all || !n->n_deny)) {
		p->mode = deny_all ? CUBE_NET_DENY : CUBE_NET_INTERNET;
		goto out;
	}
	/* the base: everything public, or nothing; an allowed /0 wins */
	ret = append(&t, deny_all && !open4 ? "deny" : "allow", "0.0.0.0/0");
	if (!ret)
		ret = append(&t, deny_all && !open6 ? "deny" : "allow", "::/0");
	for (i = 0; i < n->n_allow && !ret; i++) {
		bool dup = all_traffic(&allow[i]);

		for (j = 0; j < i; j++)
			if (same(&allow[j], &allow[i]))
				dup = true;
		if (!dup)
			ret = append(&t, "allow", n->allow_out[i]);
	}
	for (i = 0; i < n->n_deny && !ret; i++) {
		bool moot = all_traffic(&deny[i]);	/* the base says it */

		/* allowed entries win in E2B: a deny inside one is moot */
		for (j = 0; j < n->n_allow; j++)
			if (covers(&allow[j], &deny[i]))
				moot = true;
		for (j = 0; j < i; j++)
			if (same(&deny[j], &deny[i]))
				moot = true;
		if (!moot)
			ret = append(&t, "deny", n->deny_out[i]);
	}
	if (ret) {
		fail(err, ret, "out of memory");
		goto out;
	}
	ret = cube_net_policy_parse_text(t.buf, "network", p, e);
	if (ret) {
		/* "network:LINE: why": the line is ours, the why names the entry */
		const char *why = e;

		if (!strncmp(why, "network:", 8)) {
			why += 8 + strspn(why + 8, "0123456789");
			why += strspn(why, ": ");
		}
		ret = fail(err, ret == -ENOMEM ? -ENOMEM : -EINVAL, "network: %s",
			   why);
	}
out:
	free(allow);
	free(deny);
	free(t.buf);
	return ret;
}

/* --- records and reports --- */

static struct json_object *list_json(char **v, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; a && i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

struct json_object *e2b_net_json(const struct e2b_net *n)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	if (n->has_allow)
		json_object_object_add(o, "allowOut",
				       list_json(n->allow_out, n->n_allow));
	if (n->has_deny)
		json_object_object_add(o, "denyOut",
				       list_json(n->deny_out, n->n_deny));
	json_object_object_add(o, "allowPublicTraffic",
			       json_object_new_boolean(!n->private_ports));
	return o;
}

static void list_from_json(struct json_object *a, char ***out, size_t *n,
			   bool *has)
{
	size_t i, len;

	if (!a || !json_object_is_type(a, json_type_array))
		return;
	len = json_object_array_length(a);
	if (len > E2B_NET_LIST_MAX)
		return;
	*has = true;
	if (!len)
		return;
	*out = calloc(len, sizeof(char *));
	if (!*out)
		return;
	for (i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(a, i);

		if (!e || !json_object_is_type(e, json_type_string))
			continue;
		(*out)[*n] = strdup(json_object_get_string(e));
		if ((*out)[*n])
			(*n)++;
	}
}

void e2b_net_from_json(struct json_object *network, struct json_object *ai,
		       struct e2b_net *n)
{
	struct json_object *v;

	e2b_net_free(n);
	if (ai && json_object_is_type(ai, json_type_boolean))
		n->internet = json_object_get_boolean(ai) ? E2B_TRUE : E2B_FALSE;
	if (!network || !json_object_is_type(network, json_type_object))
		return;
	v = get(network, "allowPublicTraffic");
	if (v && json_object_is_type(v, json_type_boolean))
		n->private_ports = !json_object_get_boolean(v);
	list_from_json(get(network, "allowOut"), &n->allow_out, &n->n_allow,
		       &n->has_allow);
	list_from_json(get(network, "denyOut"), &n->deny_out, &n->n_deny,
		       &n->has_deny);
}
