// SPDX-License-Identifier: GPL-2.0
/*
 * cube_net_policy.c: egress policies: the file format, its canonical text,
 * and the trie entries the program reads.
 *
 * A policy file holds lines "allow CIDR[:PORTS]" and "deny CIDR[:PORTS]",
 * '#' starts a comment.  CIDR is IPv4 "A.B.C.D[/LEN]" or IPv6 "ADDR[/LEN]"
 * ("[ADDR]" or "[ADDR/LEN]" before a port); PORTS is "P" or "LO-HI",
 * 1..65535.  The most specific prefix decides; at one prefix a rule with
 * ports wins over one without, and deny wins over allow.  Nothing that no
 * rule allows passes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cube_net_int.h"

int cube_net_err(char *err, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err, CUBE_NET_ERR_MAX, fmt, ap);
		va_end(ap);
	}
	return ret;
}

#define V4(a, b, c, d)	{ a, b, c, d }
const struct cube_net_range cube_net_builtin[] = {
	{ AF_INET, 16, V4(169, 254, 0, 0), CUBE_EGRESS_CLASS_METADATA },
	{ AF_INET6, 10, { 0xfe, 0x80 }, CUBE_EGRESS_CLASS_METADATA },
	{ AF_INET, 8, V4(127, 0, 0, 0), CUBE_EGRESS_CLASS_HOST },
	{ AF_INET6, 128, { [15] = 1 }, CUBE_EGRESS_CLASS_HOST },
	{ AF_INET, 8, V4(10, 0, 0, 0), CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET, 12, V4(172, 16, 0, 0), CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET, 16, V4(192, 168, 0, 0), CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET, 10, V4(100, 64, 0, 0), CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET, 8, V4(0, 0, 0, 0), CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET, 3, V4(224, 0, 0, 0), CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET6, 7, { 0xfc }, CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET6, 8, { 0xff }, CUBE_EGRESS_CLASS_PRIVATE },
	{ AF_INET6, 128, { 0 }, CUBE_EGRESS_CLASS_PRIVATE },
};
const unsigned int cube_net_nbuiltin =
	sizeof(cube_net_builtin) / sizeof(cube_net_builtin[0]);

static unsigned int alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* does @a/@plen (of @family) lie inside @b/@bplen? */
static bool prefix_in(int family, const uint8_t *a, unsigned int plen,
		      const uint8_t *b, unsigned int bplen)
{
	unsigned int i;

	(void)family;
	if (plen < bplen)
		return false;
	for (i = 0; i < bplen; i++) {
		uint8_t m = 0x80 >> (i % 8);

		if ((a[i / 8] & m) != (b[i / 8] & m))
			return false;
	}
	return true;
}

void cube_net_key(struct cube_egress_key *k, int family, const uint8_t *addr,
		  unsigned int plen)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = CUBE_EGRESS_KEY_BITS + plen;
	k->kind = family == AF_INET ? CUBE_EGRESS_KIND_V4 : CUBE_EGRESS_KIND_V6;
	memcpy(k->addr, addr, alen(family));
}

const char *cube_net_mode_name(enum cube_net_mode m)
{
	switch (m) {
	case CUBE_NET_NONE:
		return "none";
	case CUBE_NET_DENY:
		return "deny";
	case CUBE_NET_INTERNET:
		return "internet";
	case CUBE_NET_LIST:
		return "list";
	}
	return "?";
}

/* --- parsing --- */

static int parse_ports(const char *s, struct cube_net_rule *r, char *err)
{
	unsigned long lo, hi;
	char *end;

	if (*s < '0' || *s > '9')
		return cube_net_err(err, -EINVAL, "bad port '%s' (want PORT or LO-HI, 1..65535)", s);
	lo = strtoul(s, &end, 10);
	hi = lo;
	if (*end == '-') {
		if (end[1] < '0' || end[1] > '9')
			return cube_net_err(err, -EINVAL, "bad port range '%s' (want LO-HI)", s);
		hi = strtoul(end + 1, &end, 10);
	}
	if (*end || end - s > 11)
		return cube_net_err(err, -EINVAL, "bad port '%s' (want PORT or LO-HI, 1..65535)", s);
	if (!lo || lo > 65535 || !hi || hi > 65535)
		return cube_net_err(err, -EINVAL, "port out of range in '%s' (1..65535)", s);
	if (lo > hi)
		return cube_net_err(err, -EINVAL, "empty port range '%s' (LO > HI)", s);
	r->port_lo = lo;
	r->port_hi = hi;
	return 0;
}

static int parse_addr(const char *a, const char *len, struct cube_net_rule *r,
		      const char *whole, char *err)
{
	unsigned long plen;
	uint8_t buf[16];
	unsigned int i, max;
	char *end;

	if (inet_pton(AF_INET, a, buf) == 1)
		r->family = AF_INET;
	else if (inet_pton(AF_INET6, a, buf) == 1)
		r->family = AF_INET6;
	else
		return cube_net_err(err, -EINVAL, "bad address '%s' in '%s'", a, whole);
	max = alen(r->family) * 8;
	plen = max;
	if (len) {
		if (*len < '0' || *len > '9' || strlen(len) > 3)
			return cube_net_err(err, -EINVAL, "bad prefix length '/%s' in '%s'", len, whole);
		plen = strtoul(len, &end, 10);
		if (*end || plen > max)
			return cube_net_err(err, -EINVAL, "prefix length /%s out of range in '%s' (0..%u)",
					    len, whole, max);
	}
	for (i = plen; i < max; i++)
		if (buf[i / 8] & (0x80 >> (i % 8)))
			return cube_net_err(err, -EINVAL, "'%s' has host bits set beyond /%lu", whole, plen);
	memset(r->addr, 0, sizeof(r->addr));
	memcpy(r->addr, buf, alen(r->family));
	r->plen = plen;
	return 0;
}

int cube_net_parse_cidr(const char *s, struct cube_net_rule *r, char *err)
{
	char buf[128], *addr, *len = NULL, *ports = NULL, *p;
	struct cube_net_rule t = { 0 };
	int ret;

	if (strlen(s) >= sizeof(buf))
		return cube_net_err(err, -EINVAL, "'%.40s...' is too long for a CIDR", s);
	strcpy(buf, s);
	addr = buf;
	if (buf[0] == '[') {
		/* [ADDR], [ADDR/LEN], then :PORTS */
		p = strchr(buf, ']');
		if (!p)
			return cube_net_err(err, -EINVAL, "missing ']' in '%s'", s);
		*p++ = '\0';
		addr = buf + 1;
		if (*p == ':')
			ports = p + 1;
		else if (*p)
			return cube_net_err(err, -EINVAL, "unexpected '%s' after ']' in '%s'", p, s);
		len = strchr(addr, '/');
	} else {
		len = strchr(addr, '/');
		if (len) {
			/* ADDR/LEN[:PORTS]: after the length a ':' is a port */
			ports = strchr(len, ':');
		} else if ((p = strchr(addr, ':')) && !strchr(p + 1, ':')) {
			/* one colon: A.B.C.D:PORTS (IPv6 has two or more) */
			ports = p;
		}
		if (ports)
			*ports++ = '\0';
	}
	if (len)
		*len++ = '\0';
	ret = parse_addr(addr, len, &t, s, err);
	if (ret)
		return ret;
	if (ports && (ret = parse_ports(ports, &t, err)))
		return ret;
	*r = t;
	return 0;
}

void cube_net_rule_format(const struct cube_net_rule *r, char *buf,
			  size_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(r->family, r->addr, a, sizeof(a));
	if (!r->port_lo)
		snprintf(buf, len, "%s/%u", a, r->plen);
	else if (r->family == AF_INET6 && r->port_lo == r->port_hi)
		snprintf(buf, len, "[%s/%u]:%u", a, r->plen, r->port_lo);
	else if (r->family == AF_INET6)
		snprintf(buf, len, "[%s/%u]:%u-%u", a, r->plen, r->port_lo, r->port_hi);
	else if (r->port_lo == r->port_hi)
		snprintf(buf, len, "%s/%u:%u", a, r->plen, r->port_lo);
	else
		snprintf(buf, len, "%s/%u:%u-%u", a, r->plen, r->port_lo, r->port_hi);
}

int cube_net_policy_parse_text(const char *text, const char *name,
			       struct cube_net_policy *out, char *err)
{
	struct cube_net_policy *p;
	const char *line = text;
	unsigned int lineno = 0;
	char e[CUBE_NET_ERR_MAX];
	int ret = 0;

	p = calloc(1, sizeof(*p));
	if (!p)
		return cube_net_err(err, -ENOMEM, "out of memory");
	p->mode = CUBE_NET_LIST;
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char buf[256], *w[3], *save, *c;
		struct cube_net_rule r;
		uint8_t action;
		int nw = 0;

		lineno++;
		if (n >= sizeof(buf)) {
			ret = cube_net_err(err, -EINVAL, "%s:%u: line too long (at most %zu bytes)",
					   name, lineno, sizeof(buf) - 1);
			goto out;
		}
		memcpy(buf, line, n);
		buf[n] = '\0';
		line += n + (nl ? 1 : 0);
		c = strchr(buf, '#');
		if (c)
			*c = '\0';
		for (c = strtok_r(buf, " \t\r", &save); c;
		     c = strtok_r(NULL, " \t\r", &save)) {
			if (nw == 3)
				break;
			w[nw++] = c;
		}
		if (!nw)
			continue;
		if (nw != 2) {
			ret = cube_net_err(err, -EINVAL, "%s:%u: want 'allow CIDR[:PORTS]' or 'deny CIDR[:PORTS]'",
					   name, lineno);
			goto out;
		}
		if (!strcmp(w[0], "allow")) {
			action = CUBE_NET_ALLOW;
		} else if (!strcmp(w[0], "deny")) {
			action = CUBE_NET_DENY_RULE;
		} else {
			ret = cube_net_err(err, -EINVAL, "%s:%u: unknown action '%s' (allow or deny)",
					   name, lineno, w[0]);
			goto out;
		}
		ret = cube_net_parse_cidr(w[1], &r, e);
		r.action = action;
		if (!ret && r.action == CUBE_NET_ALLOW) {
			/* accepted but never reachable: say so now */
			unsigned int i;

			for (i = 0; i < cube_net_nbuiltin; i++) {
				const struct cube_net_range *b = &cube_net_builtin[i];

				if (b->class != CUBE_EGRESS_CLASS_PRIVATE &&
				    b->family == r.family &&
				    prefix_in(r.family, r.addr, r.plen, b->addr, b->plen)) {
					snprintf(e, sizeof(e), "'%s' is never reachable (link-local or loopback)", w[1]);
					ret = -EINVAL;
				}
			}
		}
		if (ret) {
			ret = cube_net_err(err, ret, "%s:%u: %s", name, lineno, e);
			goto out;
		}
		if (p->nrules == CUBE_NET_RULES_MAX) {
			ret = cube_net_err(err, -E2BIG, "%s:%u: too many rules (at most %d)",
					   name, lineno, CUBE_NET_RULES_MAX);
			goto out;
		}
		p->rules[p->nrules++] = r;
	}
	/* that the program can hold it is part of being valid */
	{
		struct cube_net_entry *ent = calloc(CUBE_EGRESS_TRIE_MAX, sizeof(*ent));
		unsigned int n;

		if (!ent) {
			ret = cube_net_err(err, -ENOMEM, "out of memory");
			goto out;
		}
		ret = cube_net_policy_compile(p, 0, ent, &n, e);
		free(ent);
		if (ret) {
			ret = cube_net_err(err, ret, "%s: %s", name, e);
			goto out;
		}
	}
	*out = *p;
out:
	free(p);
	return ret;
}

static int read_file(const char *path, char **out, char *err)
{
	char *buf;
	ssize_t n, total = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cube_net_err(err, -errno, "cannot open policy file '%s': %s",
				    path, strerror(errno));
	buf = malloc(CUBE_NET_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return cube_net_err(err, -ENOMEM, "out of memory");
	}
	while ((n = read(fd, buf + total, CUBE_NET_FILE_MAX + 1 - total)) > 0) {
		total += n;
		if (total > CUBE_NET_FILE_MAX)
			break;
	}
	close(fd);
	if (n < 0) {
		int e = errno;

		free(buf);
		return cube_net_err(err, -e, "cannot read policy file '%s': %s", path, strerror(e));
	}
	if (total > CUBE_NET_FILE_MAX) {
		free(buf);
		return cube_net_err(err, -E2BIG, "policy file '%s' is larger than %d bytes",
				    path, CUBE_NET_FILE_MAX);
	}
	if (memchr(buf, '\0', total)) {
		free(buf);
		return cube_net_err(err, -EINVAL, "policy file '%s' is not text", path);
	}
	buf[total] = '\0';
	*out = buf;
	return 0;
}

int cube_net_policy_parse_arg(const char *arg, struct cube_net_policy *p,
			      char *err)
{
	char *text = NULL;
	int ret;

	if (!arg || !*arg)
		return cube_net_err(err, -EINVAL, "empty network policy (none, deny, internet or a file)");
	if (!strcmp(arg, "none") || !strcmp(arg, "deny") || !strcmp(arg, "internet")) {
		p->mode = !strcmp(arg, "none") ? CUBE_NET_NONE :
			  !strcmp(arg, "deny") ? CUBE_NET_DENY : CUBE_NET_INTERNET;
		p->nrules = 0;
		return 0;
	}
	ret = read_file(arg, &text, err);
	if (ret)
		return ret;
	ret = cube_net_policy_parse_text(text, arg, p, err);
	free(text);
	return ret;
}

int cube_net_policy_encode(const struct cube_net_policy *p, char *buf,
			   size_t len)
{
	size_t off;
	unsigned int i;
	int n;

	if (p->mode != CUBE_NET_LIST) {
		n = snprintf(buf, len, "%s", cube_net_mode_name(p->mode));
		return (size_t)n >= len ? -ENOSPC : n;
	}
	n = snprintf(buf, len, "rules:");
	if ((size_t)n >= len)
		return -ENOSPC;
	off = n;
	for (i = 0; i < p->nrules; i++) {
		char c[96];

		cube_net_rule_format(&p->rules[i], c, sizeof(c));
		n = snprintf(buf + off, len - off, "%s %s\n",
			     p->rules[i].action == CUBE_NET_ALLOW ? "allow" : "deny", c);
		if ((size_t)n >= len - off)
			return -ENOSPC;
		off += n;
	}
	return off;
}

int cube_net_policy_decode(const char *s, struct cube_net_policy *p,
			   char *err)
{
	if (!strncmp(s, "rules:", 6))
		return cube_net_policy_parse_text(s + 6, "policy", p, err);
	if (!strcmp(s, "none") || !strcmp(s, "deny") || !strcmp(s, "internet"))
		return cube_net_policy_parse_arg(s, p, err);
	return cube_net_err(err, -EINVAL, "bad encoded network policy '%.32s'", s);
}

/* --- compiling into trie entries --- */

static bool names_private(const struct cube_net_rule *r)
{
	unsigned int i;

	for (i = 0; i < cube_net_nbuiltin; i++) {
		const struct cube_net_range *b = &cube_net_builtin[i];

		if (b->class == CUBE_EGRESS_CLASS_PRIVATE && b->family == r->family &&
		    prefix_in(r->family, r->addr, r->plen, b->addr, b->plen))
			return true;
	}
	return false;
}

static bool same_prefix(const struct cube_net_rule *a,
			const struct cube_net_rule *b)
{
	return a->family == b->family && a->plen == b->plen &&
	       !memcmp(a->addr, b->addr, 16);
}

/*
 * Rules of one prefix level into @v, in the order they are checked: with
 * ports (deny, then allow), then without (deny, then allow).  Returns true
 * when the level has a rule without ports: wider levels are then never
 * reached.
 */
static int add_level(const struct cube_net_rule *rules, unsigned int n,
		     const struct cube_net_rule *level, bool own,
		     struct cube_egress_rules *v, bool *closed)
{
	static const struct { bool ports; uint8_t action; } order[] = {
		{ true, CUBE_NET_DENY_RULE }, { true, CUBE_NET_ALLOW },
		{ false, CUBE_NET_DENY_RULE }, { false, CUBE_NET_ALLOW },
	};
	unsigned int o, i;

	for (o = 0; o < 4; o++) {
		for (i = 0; i < n; i++) {
			const struct cube_net_rule *r = &rules[i];
			struct cube_egress_port_rule *pr;
			unsigned int j;

			if (!same_prefix(r, level) || r->action != order[o].action ||
			    (r->port_lo != 0) != order[o].ports)
				continue;
			/* a duplicate adds nothing */
			for (j = 0; j < v->nrules; j++)
				if (v->r[j].action == r->action &&
				    v->r[j].lo == (r->port_lo ? r->port_lo : 0) &&
				    v->r[j].hi == (r->port_lo ? r->port_hi : 65535))
					break;
			if (j < v->nrules)
				continue;
			if (v->nrules == CUBE_EGRESS_PORT_RULES)
				return -E2BIG;
			pr = &v->r[v->nrules++];
			pr->action = r->action == CUBE_NET_ALLOW ? CUBE_EGRESS_ALLOW : CUBE_EGRESS_DENY;
			pr->lo = r->port_lo ? r->port_lo : 0;
			pr->hi = r->port_lo ? r->port_hi : 65535;
			pr->flags = (r->port_lo ? 0 : CUBE_EGRESS_R_ANY) |
				    (own ? CUBE_EGRESS_R_OWN : 0) |
				    (r->action == CUBE_NET_ALLOW && names_private(r) ?
				     CUBE_EGRESS_R_PRIVATE : 0);
			if (!r->port_lo)
				*closed = true;
		}
	}
	return 0;
}

int cube_net_policy_compile(const struct cube_net_policy *p,
			    uint32_t generation, struct cube_net_entry *out,
			    unsigned int *n, char *err)
{
	static const struct cube_net_rule internet[] = {
		{ .action = CUBE_NET_ALLOW, .family = AF_INET, .plen = 0 },
		{ .action = CUBE_NET_ALLOW, .family = AF_INET6, .plen = 0 },
	};
	const struct cube_net_rule *rules = p->rules;
	unsigned int nr = p->nrules, i, j, cnt = 0;
	struct cube_net_entry *h = &out[cnt++];

	if (p->mode == CUBE_NET_INTERNET) {
		rules = internet;
		nr = 2;
	} else if (p->mode != CUBE_NET_LIST) {
		nr = 0;
	}
	if (nr > CUBE_NET_RULES_MAX)
		return cube_net_err(err, -E2BIG, "too many rules (at most %d)", CUBE_NET_RULES_MAX);
	memset(h, 0, sizeof(*h));
	h->key.prefixlen = CUBE_EGRESS_KEY_BITS;
	h->key.kind = CUBE_EGRESS_KIND_HDR;
	h->val.mode = p->mode == CUBE_NET_INTERNET ? CUBE_EGRESS_MODE_INTERNET :
		      p->mode == CUBE_NET_LIST ? CUBE_EGRESS_MODE_LIST : CUBE_EGRESS_MODE_DENY;
	h->val.hflags = p->mode == CUBE_NET_DENY ? 0 : CUBE_EGRESS_H_DNS;
	h->val.generation = generation;

	for (i = 0; i < nr; i++) {
		const struct cube_net_rule *r = &rules[i];
		struct cube_net_entry *e;
		bool closed = false;
		int ret;

		for (j = 0; j < i; j++)
			if (same_prefix(&rules[j], r))
				break;
		if (j < i)
			continue;	/* this prefix is done */
		e = &out[cnt++];
		memset(e, 0, sizeof(*e));
		cube_net_key(&e->key, r->family, r->addr, r->plen);
		ret = add_level(rules, nr, r, true, &e->val, &closed);
		/* then the wider prefixes of the policy, most specific first */
		for (int plen = (int)r->plen - 1; !ret && !closed && plen >= 0; plen--) {
			for (j = 0; j < nr; j++) {
				if (rules[j].family == r->family && rules[j].plen == plen &&
				    prefix_in(r->family, r->addr, r->plen, rules[j].addr, plen))
					break;
			}
			if (j < nr)
				ret = add_level(rules, nr, &rules[j], false, &e->val, &closed);
		}
		if (ret) {
			char c[INET6_ADDRSTRLEN];

			inet_ntop(r->family, r->addr, c, sizeof(c));
			return cube_net_err(err, -E2BIG, "too many port rules apply to %s/%u (at most %d, counting those of wider prefixes)",
					    c, r->plen, CUBE_EGRESS_PORT_RULES);
		}
	}
	*n = cnt;
	return 0;
}

int cube_net_policy_decompile(const struct cube_net_entry *e, unsigned int n,
			      struct cube_net_policy *p, uint32_t *generation)
{
	unsigned int i, j;

	p->mode = CUBE_NET_DENY;
	p->nrules = 0;
	for (i = 0; i < n; i++) {
		if (e[i].key.kind != CUBE_EGRESS_KIND_HDR)
			continue;
		p->mode = e[i].val.mode == CUBE_EGRESS_MODE_INTERNET ? CUBE_NET_INTERNET :
			  e[i].val.mode == CUBE_EGRESS_MODE_LIST ? CUBE_NET_LIST : CUBE_NET_DENY;
		if (generation)
			*generation = e[i].val.generation;
	}
	if (p->mode != CUBE_NET_LIST)
		return 0;
	for (i = 0; i < n; i++) {
		const struct cube_net_entry *x = &e[i];

		if (x->key.kind == CUBE_EGRESS_KIND_HDR)
			continue;
		for (j = 0; j < x->val.nrules && j < CUBE_EGRESS_PORT_RULES; j++) {
			const struct cube_egress_port_rule *pr = &x->val.r[j];
			struct cube_net_rule *r;

			if (!(pr->flags & CUBE_EGRESS_R_OWN))
				continue;
			if (p->nrules == CUBE_NET_RULES_MAX)
				return -E2BIG;
			r = &p->rules[p->nrules++];
			memset(r, 0, sizeof(*r));
			r->action = pr->action == CUBE_EGRESS_ALLOW ? CUBE_NET_ALLOW : CUBE_NET_DENY_RULE;
			r->family = x->key.kind == CUBE_EGRESS_KIND_V4 ? AF_INET : AF_INET6;
			r->plen = x->key.prefixlen - CUBE_EGRESS_KEY_BITS;
			memcpy(r->addr, x->key.addr, 16);
			if (!(pr->flags & CUBE_EGRESS_R_ANY)) {
				r->port_lo = pr->lo;
				r->port_hi = pr->hi;
			}
		}
	}
	return 0;
}

unsigned int cube_net_policy_eval(const struct cube_net_entry *e,
				  unsigned int n, int family,
				  const uint8_t *addr, int port)
{
	const struct cube_net_entry *best = NULL;
	bool private = false;
	unsigned int i, j;
	int kind = family == AF_INET ? CUBE_EGRESS_KIND_V4 : CUBE_EGRESS_KIND_V6;

	for (i = 0; i < cube_net_nbuiltin; i++) {
		const struct cube_net_range *b = &cube_net_builtin[i];

		if (b->family == family && b->class == CUBE_EGRESS_CLASS_PRIVATE &&
		    prefix_in(family, addr, alen(family) * 8, b->addr, b->plen))
			private = true;
	}
	for (i = 0; i < n; i++) {
		unsigned int plen = e[i].key.prefixlen - CUBE_EGRESS_KEY_BITS;

		if (e[i].key.kind != kind ||
		    !prefix_in(family, addr, alen(family) * 8, e[i].key.addr, plen))
			continue;
		if (!best || best->key.prefixlen < e[i].key.prefixlen)
			best = &e[i];
	}
	if (!best)
		return CUBE_EGRESS_DROP_POLICY;
	for (j = 0; j < best->val.nrules; j++) {
		const struct cube_egress_port_rule *r = &best->val.r[j];

		if (port >= 0 ? (port < r->lo || port > r->hi) : !(r->flags & CUBE_EGRESS_R_ANY))
			continue;
		if (r->action != CUBE_EGRESS_ALLOW)
			return CUBE_EGRESS_DROP_POLICY;
		if (private && !(r->flags & CUBE_EGRESS_R_PRIVATE))
			return CUBE_EGRESS_DROP_PRIVATE;
		return CUBE_EGRESS_PASS;
	}
	return CUBE_EGRESS_DROP_POLICY;
}
