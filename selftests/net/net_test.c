// SPDX-License-Identifier: GPL-2.0
/*
 * net_test: the host side of sandbox networking, with a guest emulated by
 * frames written into the sandbox's tap fd: reachability under each
 * policy, every drop counted under its reason, live and atomic policy
 * changes, refused inputs, and that nothing outlives a sandbox.
 *
 * Each test builds its own world (net_util.h) in a fresh namespace that
 * plays the host.  With cube.ko loaded every sandbox is a module sandbox
 * that holds the namespace and the BPF link, as cube-shim does.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <linux/cube.h>

#include <bpf/bpf.h>
#include <nftables/libnftables.h>

#include "cube_test.h"
#include "cube_wait.h"
#include "net_util.h"

/* --- a sandbox with a network --- */

struct sbx {
	int sbfd;		/* module sandbox, -1 without cube.ko */
	uint64_t id;
	struct cube_net n;
	struct cube_net_handle h;
};

static uint64_t fake_id(void)
{
	static unsigned int k;

	return ((uint64_t)getpid() << 8) + ++k;
}

/* 0, or -errno with the reason in @err */
static int sbx_make(struct sbx *s, const struct cube_net_policy *p, char *err)
{
	struct cube_net_config cfg = { .policy = p, .resolver = INET_ADDR };
	struct cube_sandbox_create c = { 0 };
	unsigned int i;
	int dev, ret;

	s->sbfd = -1;
	s->h.outer_fd = s->h.fixed_fd = s->h.cfg_fd = s->h.counters_fd = -1;
	dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		s->sbfd = ioctl(dev, CUBE_IOC_SANDBOX_CREATE, &c);
		close(dev);
		if (s->sbfd < 0)
			return -errno;
		s->id = c.id;
	} else {
		s->id = fake_id();
	}
	cfg.sandbox_id = s->id;
	ret = cube_net_create(&cfg, &s->n, err);
	if (ret || p->mode == CUBE_NET_NONE)
		return ret;
	if (s->sbfd >= 0) {
		struct cube_fd_arg a = { .fd = s->n.netns_fd };

		if (ioctl(s->sbfd, CUBE_IOC_SANDBOX_SET_NETNS, &a))
			return -errno;
		for (i = 0; i < s->n.nlinks; i++) {
			a.fd = s->n.link_fds[i];
			if (ioctl(s->sbfd, CUBE_IOC_SANDBOX_ADD_BPF_LINK, &a))
				return -errno;
		}
		/* the module holds them now, as with cube-shim */
		close(s->n.netns_fd);
		s->n.netns_fd = -1;
		for (i = 0; i < s->n.nlinks; i++) {
			close(s->n.link_fds[i]);
			s->n.link_fds[i] = -1;
		}
	}
	/* found again the way cubectl finds it: by id, no pins */
	return cube_net_open(s->id, &s->h);
}

static void sbx_drop(struct sbx *s)
{
	cube_net_handle_close(&s->h);
	cube_net_close(&s->n);
	if (s->sbfd >= 0)
		close(s->sbfd);
	s->sbfd = -1;
}

static uint64_t count_of(struct sbx *s, enum cube_net_reason r)
{
	struct cube_net_counters c;

	if (cube_net_get_counters(&s->h, &c))
		return ~0ULL;
	return c.packets[r];
}

static struct cube_net_policy *policy(enum cube_net_mode m, const char *text)
{
	static struct cube_net_policy p;
	char err[CUBE_NET_ERR_MAX];

	memset(&p, 0, sizeof(p));
	p.mode = m;
	if (text && cube_net_policy_parse_text(text, "test", &p, err)) {
		ct_diag("policy: %s", err);
		return NULL;
	}
	return &p;
}

#define WORLD() do {							\
	ASSERT_EQ(getuid(), 0u);					\
	ASSERT_OK(nu_world());						\
} while (0)

#define MAKE(s, p) do {							\
	char err_[CUBE_NET_ERR_MAX] = "";				\
	int r_ = sbx_make(s, p, err_);					\
	if (r_)								\
		ct_diag("sandbox: %s (%s)", err_, strerror(-r_));	\
	ASSERT_EQ(r_, 0);						\
} while (0)

/* a probe that must not come through, counted under @reason */
#define BLOCKED(s, dst, proto, port, reason) do {			\
	uint64_t b_ = count_of(s, reason);				\
	EXPECT_EQ(nu_probe((s)->n.tap_fd, dst, proto, port, 400), 0);	\
	EXPECT_EQ(count_of(s, reason), b_ + 1);				\
} while (0)
#define REACHED(s, dst, proto, port)					\
	EXPECT_EQ(nu_probe((s)->n.tap_fd, dst, proto, port, 2000), 1)

/* --- reachability --- */

TEST(internet_reaches_public)
{
	struct sbx a;
	uint64_t passed;

	WORLD();
	MAKE(&a, policy(CUBE_NET_INTERNET, NULL));
	passed = count_of(&a, CUBE_NET_PASSED);
	REACHED(&a, INET_ADDR, 6, 80);
	REACHED(&a, INET_ADDR, 6, 443);
	REACHED(&a, INET_ADDR, 17, 7);
	REACHED(&a, INET_ADDR, 1, 1);
	/* DNS to the gateway reaches the resolver and answers from the gateway */
	REACHED(&a, CUBE_NET_DNS_IP, 17, 53);
	EXPECT_GE(count_of(&a, CUBE_NET_PASSED), passed + 5);
	sbx_drop(&a);
}

TEST(internet_blocks_the_rest)
{
	struct sbx a, b;
	char bns[INET_ADDRSTRLEN], bhost[INET_ADDRSTRLEN], ahost[INET_ADDRSTRLEN];
	struct nu_frame fr;
	uint64_t before;
	size_t len;

	WORLD();
	MAKE(&a, policy(CUBE_NET_INTERNET, NULL));
	MAKE(&b, policy(CUBE_NET_INTERNET, NULL));
	inet_ntop(AF_INET, &b.n.ns_addr, bns, sizeof(bns));
	inet_ntop(AF_INET, &b.n.host_addr, bhost, sizeof(bhost));
	inet_ntop(AF_INET, &a.n.host_addr, ahost, sizeof(ahost));
	EXPECT_NE(a.n.slot, b.n.slot);

	REACHED(&a, INET_ADDR, 6, 80);		/* the world works */
	BLOCKED(&a, MD_ADDR, 6, 80, CUBE_NET_DROP_METADATA);
	BLOCKED(&a, MD_ADDR, 17, 7, CUBE_NET_DROP_METADATA);
	BLOCKED(&a, CUBE_NET_GW_IP, 6, 80, CUBE_NET_DROP_METADATA);
	BLOCKED(&a, LAN_ADDR, 6, 80, CUBE_NET_DROP_PRIVATE);
	BLOCKED(&a, LAN_ADDR, 1, 1, CUBE_NET_DROP_PRIVATE);
	BLOCKED(&a, INET_HOST, 6, 80, CUBE_NET_DROP_HOST);
	BLOCKED(&a, "127.0.0.1", 6, 80, CUBE_NET_DROP_HOST);
	BLOCKED(&a, bns, 6, 80, CUBE_NET_DROP_HOST);
	BLOCKED(&a, bhost, 6, 80, CUBE_NET_DROP_HOST);
	BLOCKED(&a, ahost, 6, 80, CUBE_NET_DROP_HOST);
	BLOCKED(&a, INET_ADDR, 17, 53, CUBE_NET_DROP_DNS);
	BLOCKED(&a, INET_ADDR, 6, 53, CUBE_NET_DROP_DNS);

	/* another source address than the guest's */
	before = count_of(&a, CUBE_NET_DROP_SPOOF);
	len = nu_ip4(&fr, "10.9.9.9", INET_ADDR, 6, 30000, 80, NULL);
	ASSERT_EQ(write(a.n.tap_fd, &fr, len), (ssize_t)len);
	EXPECT_EQ(nu_reply(a.n.tap_fd, INET_ADDR, 6, 30000, 80, 400), 0);
	EXPECT_EQ(count_of(&a, CUBE_NET_DROP_SPOOF), before + 1);

	/* another ethertype */
	before = count_of(&a, CUBE_NET_DROP_PROTO);
	fr.f[12] = 0x88; fr.f[13] = 0xb5;
	ASSERT_EQ(write(a.n.tap_fd, &fr, len), (ssize_t)len);
	EXPECT_EQ(count_of(&a, CUBE_NET_DROP_PROTO), before + 1);

	/* the same with a non-blocking writer (tun's other receive path) */
	fcntl(a.n.tap_fd, F_SETFL, O_NONBLOCK);
	BLOCKED(&a, MD_ADDR, 6, 80, CUBE_NET_DROP_METADATA);
	BLOCKED(&a, LAN_ADDR, 6, 80, CUBE_NET_DROP_PRIVATE);
	REACHED(&a, INET_ADDR, 6, 80);

	/* B is blocked the same way towards A, and works */
	inet_ntop(AF_INET, &a.n.ns_addr, bns, sizeof(bns));
	BLOCKED(&b, bns, 17, 7, CUBE_NET_DROP_HOST);
	REACHED(&b, INET_ADDR, 17, 7);
	sbx_drop(&a);
	sbx_drop(&b);
}

/*
 * cubed's port proxy connects from the gateway's address inside the
 * namespace: the guest's answers (SYN-ACK, then ACKs) to the gateway pass
 * in every mode but none, a bare SYN to it does not.
 */
TEST(proxy_replies_to_the_gateway)
{
	enum cube_net_mode modes[] = { CUBE_NET_INTERNET, CUBE_NET_DENY };
	struct nu_frame fr;
	uint64_t passed;
	struct sbx a;
	size_t len, i;

	WORLD();
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		MAKE(&a, policy(modes[i], NULL));
		len = nu_ip4(&fr, CUBE_NET_GUEST_IP, CUBE_NET_GW_IP, 6, 8000,
			     40000, NULL);
		fr.f[14 + 20 + 13] = 0x12;		/* SYN|ACK */
		passed = count_of(&a, CUBE_NET_PASSED);
		ASSERT_EQ(write(a.n.tap_fd, &fr, len), (ssize_t)len);
		EXPECT_EQ(count_of(&a, CUBE_NET_PASSED), passed + 1);
		fr.f[14 + 20 + 13] = 0x10;		/* ACK */
		ASSERT_EQ(write(a.n.tap_fd, &fr, len), (ssize_t)len);
		EXPECT_EQ(count_of(&a, CUBE_NET_PASSED), passed + 2);
		/* a connection towards the namespace cannot be opened */
		BLOCKED(&a, CUBE_NET_GW_IP, 6, 40000, CUBE_NET_DROP_METADATA);
		sbx_drop(&a);
	}
}

TEST(arp_to_the_gateway)
{
	static const uint8_t gw[6] = CUBE_NET_GW_MAC_BYTES;
	static const uint8_t me[6] = CUBE_NET_GUEST_MAC_BYTES;
	struct in_addr g = nu_ip(CUBE_NET_GW_IP), s = nu_ip(CUBE_NET_GUEST_IP);
	struct nu_frame fr = { 0 };
	uint8_t *a = fr.f + 14;
	uint64_t passed, end;
	struct sbx x;
	int got = 0;

	WORLD();
	MAKE(&x, policy(CUBE_NET_DENY, NULL));
	memset(fr.f, 0xff, 6);
	memcpy(fr.f + 6, me, 6);
	fr.f[12] = 0x08; fr.f[13] = 0x06;
	a[1] = 1; a[2] = 0x08; a[4] = 6; a[5] = 4; a[7] = 1;
	memcpy(a + 8, me, 6);
	memcpy(a + 14, &s, 4);
	memcpy(a + 24, &g, 4);
	passed = count_of(&x, CUBE_NET_PASSED);
	ASSERT_EQ(write(x.n.tap_fd, &fr, sizeof(fr.vh) + 42), (ssize_t)(sizeof(fr.vh) + 42));
	EXPECT_EQ(count_of(&x, CUBE_NET_PASSED), passed + 1);
	end = nu_ms() + 2000;
	while (!got && nu_ms() < end) {
		struct pollfd p = { .fd = x.n.tap_fd, .events = POLLIN };
		struct nu_frame r;

		if (poll(&p, 1, 200) <= 0)
			continue;
		if (read(x.n.tap_fd, &r, sizeof(r)) >= (ssize_t)(sizeof(r.vh) + 42) &&
		    r.f[12] == 0x08 && r.f[13] == 0x06 && r.f[14 + 7] == 2 &&
		    !memcmp(r.f + 14 + 8, gw, 6))
			got = 1;
	}
	EXPECT_TRUE(got);
	/* deny: nothing else, DNS to the gateway included */
	BLOCKED(&x, INET_ADDR, 6, 80, CUBE_NET_DROP_POLICY);
	BLOCKED(&x, CUBE_NET_DNS_IP, 17, 53, CUBE_NET_DROP_POLICY);
	sbx_drop(&x);
}

TEST(allow_list)
{
	struct cube_net_policy *p;
	struct sbx a;

	WORLD();
	p = policy(CUBE_NET_LIST,
		   "# the test's list\n"
		   "allow 203.0.113.10/32:8080-8081\n"
		   "allow 10.1.0.0/24:80   # private, named\n"
		   "allow 203.0.113.0/24:9000\n"
		   "deny 203.0.113.10:9000\n"
		   "allow 0.0.0.0/0:22\n");
	ASSERT_TRUE(p != NULL);
	MAKE(&a, p);
	REACHED(&a, INET_ADDR, 6, 8080);
	REACHED(&a, INET_ADDR, 6, 8081);
	REACHED(&a, LAN_ADDR, 6, 80);
	REACHED(&a, INET_ADDR, 6, 22);
	REACHED(&a, CUBE_NET_DNS_IP, 17, 53);
	BLOCKED(&a, INET_ADDR, 6, 8090, CUBE_NET_DROP_POLICY);
	BLOCKED(&a, INET_ADDR, 6, 80, CUBE_NET_DROP_POLICY);
	BLOCKED(&a, INET_ADDR, 17, 7, CUBE_NET_DROP_POLICY);
	BLOCKED(&a, INET_ADDR, 1, 1, CUBE_NET_DROP_POLICY);
	/* the more specific deny wins over the /24's allow */
	BLOCKED(&a, INET_ADDR, 6, 9000, CUBE_NET_DROP_POLICY);
	BLOCKED(&a, LAN_ADDR, 6, 443, CUBE_NET_DROP_POLICY);
	/* 0.0.0.0/0:22 names no private range */
	BLOCKED(&a, LAN_ADDR, 6, 22, CUBE_NET_DROP_PRIVATE);
	/* nothing overrides the built-in denials */
	BLOCKED(&a, MD_ADDR, 6, 80, CUBE_NET_DROP_METADATA);
	BLOCKED(&a, INET_HOST, 6, 22, CUBE_NET_DROP_HOST);
	sbx_drop(&a);
}

/* --- changing the policy --- */

TEST(live_change)
{
	struct cube_net_policy cur;
	char err[CUBE_NET_ERR_MAX];
	struct cube_net_handle h2;
	uint32_t gen, gen2, prog;
	struct sbx a;

	WORLD();
	MAKE(&a, policy(CUBE_NET_INTERNET, NULL));
	prog = a.h.prog_id;
	REACHED(&a, INET_ADDR, 6, 80);
	ASSERT_OK(cube_net_get_policy(&a.h, &cur, &gen));
	EXPECT_EQ(cur.mode, CUBE_NET_INTERNET);

	ASSERT_OK(cube_net_set_policy(&a.h, policy(CUBE_NET_DENY, NULL), err));
	BLOCKED(&a, INET_ADDR, 6, 80, CUBE_NET_DROP_POLICY);
	BLOCKED(&a, CUBE_NET_DNS_IP, 17, 53, CUBE_NET_DROP_POLICY);

	ASSERT_OK(cube_net_set_policy(&a.h, policy(CUBE_NET_LIST,
				"allow 203.0.113.10/32:443\n"), err));
	REACHED(&a, INET_ADDR, 6, 443);
	BLOCKED(&a, INET_ADDR, 6, 80, CUBE_NET_DROP_POLICY);
	ASSERT_OK(cube_net_get_policy(&a.h, &cur, &gen2));
	EXPECT_EQ(cur.mode, CUBE_NET_LIST);
	EXPECT_EQ(cur.nrules, 1u);
	EXPECT_EQ(cur.rules[0].port_lo, 443);
	EXPECT_EQ(gen2, gen + 2);

	/* the same program and link: nothing was restarted */
	ASSERT_OK(cube_net_open(a.id, &h2));
	EXPECT_EQ(h2.prog_id, prog);
	cube_net_handle_close(&h2);

	/* refused changes leave the policy as it was */
	EXPECT_EQ(cube_net_set_policy(&a.h, policy(CUBE_NET_NONE, NULL), err), -EINVAL);
	{
		static struct cube_net_policy big;
		int i;

		big.mode = CUBE_NET_LIST;
		big.nrules = 20;
		for (i = 0; i < 20; i++) {
			big.rules[i] = (struct cube_net_rule){ .action = CUBE_NET_ALLOW,
				.family = AF_INET, .plen = 32, .addr = { 203, 0, 113, 10 },
				.port_lo = 100 + i, .port_hi = 100 + i };
		}
		EXPECT_EQ(cube_net_set_policy(&a.h, &big, err), -E2BIG);
		ct_diag("refused as it should: %s", err);
	}
	ASSERT_OK(cube_net_get_policy(&a.h, &cur, &gen));
	EXPECT_EQ(gen, gen2);
	REACHED(&a, INET_ADDR, 6, 443);
	sbx_drop(&a);
}

/*
 * Atomicity: two equivalent policies whose one rule for the probed address
 * is the last of many; a writer swaps them without pause while the guest
 * probes.  An update in place would leave windows without that rule.
 */
TEST(atomic_swap)
{
	static struct cube_net_policy p1, p2;
	int i, ok = 0, tries = 150;
	uint64_t drops;
	struct sbx a;
	pid_t w;

	WORLD();
	for (i = 0; i < 200; i++) {
		struct cube_net_rule r = { .action = CUBE_NET_DENY_RULE,
			.family = AF_INET, .plen = 32,
			.addr = { 198, 18, i / 100, i % 100 } };

		p1.rules[i] = r;
		r.addr[0] = 198; r.addr[1] = 19;
		p2.rules[i] = r;
	}
	p1.rules[200] = p2.rules[200] = (struct cube_net_rule){ .action = CUBE_NET_ALLOW,
		.family = AF_INET, .plen = 32, .addr = { 203, 0, 113, 10 } };
	p1.mode = p2.mode = CUBE_NET_LIST;
	p1.nrules = p2.nrules = 201;
	MAKE(&a, &p1);
	drops = count_of(&a, CUBE_NET_DROP_POLICY);
	w = fork();
	ASSERT_GE(w, 0);
	if (!w) {
		char err[CUBE_NET_ERR_MAX];

		for (i = 0;; i++)
			if (cube_net_set_policy(&a.h, i & 1 ? &p1 : &p2, err))
				_exit(1);
	}
	for (i = 0; i < tries; i++)
		ok += nu_probe(a.n.tap_fd, INET_ADDR, 17, 7, 2000) == 1;
	kill(w, SIGKILL);
	waitpid(w, NULL, 0);
	EXPECT_EQ(ok, tries);
	EXPECT_EQ(count_of(&a, CUBE_NET_DROP_POLICY), drops);
	sbx_drop(&a);
}

/* --- none, refusals --- */

static int count_ifs(const char *prefix)
{
	struct if_nameindex *l = if_nameindex(), *i;
	int n = 0;

	for (i = l; i && i->if_index; i++)
		n += !strncmp(i->if_name, prefix, strlen(prefix));
	if_freenameindex(l);
	return n;
}

/* programs / maps / links of ours */
static int count_bpf(int what)
{
	uint32_t id = 0;
	int n = 0, fd, ret;

	for (;;) {
		ret = what == 0 ? bpf_prog_get_next_id(id, &id) :
		      what == 1 ? bpf_map_get_next_id(id, &id) :
				  bpf_link_get_next_id(id, &id);
		if (ret)
			break;
		fd = what == 0 ? bpf_prog_get_fd_by_id(id) :
		     what == 1 ? bpf_map_get_fd_by_id(id) : bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue;
		if (what == 0) {
			struct bpf_prog_info pi = { 0 };
			uint32_t l = sizeof(pi);

			n += !bpf_obj_get_info_by_fd(fd, &pi, &l) && !strcmp(pi.name, "cube_egress");
		} else if (what == 1) {
			struct bpf_map_info mi = { 0 };
			uint32_t l = sizeof(mi);

			n += !bpf_obj_get_info_by_fd(fd, &mi, &l) && !strncmp(mi.name, "cube_", 5);
		} else {
			struct bpf_link_info li = { 0 };
			uint32_t l = sizeof(li);

			n += !bpf_obj_get_info_by_fd(fd, &li, &l) && li.type == BPF_LINK_TYPE_XDP;
		}
		close(fd);
	}
	return n;
}

/* lines of the ruleset of our namespace */
static int count_nft(void)
{
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
	const char *out;
	int n = -1;

	if (!nft)
		return -1;
	nft_ctx_buffer_output(nft);
	nft_ctx_buffer_error(nft);
	if (!nft_run_cmd_from_buffer(nft, "list ruleset")) {
		out = nft_ctx_get_output_buffer(nft);
		for (n = 0; out && *out; out++)
			n += *out == '\n';
	}
	nft_ctx_free(nft);
	return n;
}

struct counts {
	int ifs, progs, maps, links, nft;
};

static void counts(struct counts *c)
{
	c->ifs = count_ifs("cube");
	c->progs = count_bpf(0);
	c->maps = count_bpf(1);
	c->links = count_bpf(2);
	c->nft = count_nft();
}

static bool counts_eq(const struct counts *a, const struct counts *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* namespaces go in the background: wait for the counts to return */
static bool counts_settle(const struct counts *want, struct counts *now)
{
	uint64_t end = nu_ms() + 30000;

	do {
		counts(now);
		if (counts_eq(want, now))
			return true;
		usleep(100000);
	} while (nu_ms() < end);
	return false;
}

static void counts_diag(const char *what, const struct counts *c)
{
	ct_diag("%s: cube* devices %d, cube_egress programs %d, cube_ maps %d, XDP links %d, nft lines %d",
		what, c->ifs, c->progs, c->maps, c->links, c->nft);
}

TEST(none_has_no_device)
{
	struct counts before, after;
	struct cube_net_handle h;
	struct sbx a;

	WORLD();
	counts(&before);
	MAKE(&a, policy(CUBE_NET_NONE, NULL));
	EXPECT_EQ(a.n.netns_fd, -1);
	EXPECT_EQ(a.n.tap_fd, -1);
	EXPECT_EQ(a.n.nlinks, 0u);
	counts(&after);
	EXPECT_TRUE(counts_eq(&before, &after));
	EXPECT_EQ(cube_net_open(a.id, &h), -ENOENT);
	if (a.sbfd >= 0) {
		struct cube_sandbox_info info;

		ASSERT_OK(ioctl(a.sbfd, CUBE_IOC_SANDBOX_GET_INFO, &info));
		EXPECT_EQ(info.netns_cookie, 0ull);
		EXPECT_EQ(info.nr_bpf_links, 0u);
	}
	sbx_drop(&a);
}

TEST(bad_config_leaves_nothing)
{
	struct cube_net_config cfg = { .sandbox_id = 1,
		.policy = policy(CUBE_NET_INTERNET, NULL) };
	static const char *const ranges[] = { "10.200.0.0", "10.200.0.1/16",
		"10.200.0.0/31", "10.200.0.0/8", "fd00::/16", "banana", NULL };
	char err[CUBE_NET_ERR_MAX];
	struct counts before, after;
	struct cube_net n;
	int i;

	WORLD();
	/* the host table exists from an earlier sandbox */
	ASSERT_OK(cube_net_host_setup(NULL, err));
	counts(&before);
	for (i = 0; ranges[i]; i++) {
		cfg.range = ranges[i];
		EXPECT_EQ(cube_net_create(&cfg, &n, err), -EINVAL);
		ct_diag("range %s: %s", ranges[i], err);
	}
	cfg.range = NULL;
	cfg.resolver = "not-an-address";
	EXPECT_EQ(cube_net_create(&cfg, &n, err), -EINVAL);
	counts(&after);
	EXPECT_TRUE(counts_eq(&before, &after));
	EXPECT_EQ(cube_net_open(~0ULL - 7, &(struct cube_net_handle){ 0 }), -ENOENT);
}

/*
 * 50 sandboxes made and ended, every other one by SIGKILL of the process
 * that holds its fds (the module's sandbox fd included): no device, no
 * program, map or link, no rule stays.  The host's veth end goes only when
 * the namespace is destroyed, so its absence also says the namespace went.
 */
TEST(cycles_leave_nothing)
{
	struct counts base, now;
	char err[CUBE_NET_ERR_MAX];
	int i, st;

	WORLD();
	/* the host's shared table is made once and stays */
	ASSERT_OK(cube_net_host_setup(NULL, err));
	counts(&base);
	counts_diag("before", &base);
	for (i = 0; i < 50; i++) {
		int sync[2];
		pid_t pid;
		char c;

		ASSERT_OK(pipe(sync));
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			struct sbx s;

			close(sync[0]);
			if (sbx_make(&s, policy(i % 3 ? CUBE_NET_INTERNET : CUBE_NET_DENY, NULL), err)) {
				fprintf(stderr, "# cycle %d: %s\n", i, err);
				_exit(1);
			}
			if (write(sync[1], "k", 1) != 1)
				_exit(1);
			if (i % 2)
				pause();	/* killed holding everything */
			sbx_drop(&s);
			_exit(0);
		}
		close(sync[1]);
		EXPECT_EQ(read(sync[0], &c, 1), 1);
		close(sync[0]);
		if (i % 2)
			kill(pid, SIGKILL);
		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		if (i % 2)
			EXPECT_KILLED(st, SIGKILL);
		else
			EXPECT_EXIT(st, 0);
	}
	if (!counts_settle(&base, &now)) {
		counts_diag("before", &base);
		counts_diag("after", &now);
		EXPECT_TRUE(false);
	}
}

/* --- cubectl net, on a sandbox made here --- */

/* run ./cubectl with @args in the namespace the test started in (the
 * module's generic-netlink family lives there); its exit status, its
 * stdout in @out */
static int cubectl(char *out, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int cubectl(char *out, size_t len, const char *fmt, ...)
{
	char cmd[512], args[400], sink[4096];
	size_t n = 0;
	int p[2], st;
	va_list ap;
	ssize_t r;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "./cubectl %s", args);
	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(p[1], 1);
		if (setns(nu_orig_ns, CLONE_NEWNET))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char *dst = out && n + 1 < len ? out + n : sink;
		size_t room = out && n + 1 < len ? len - 1 - n : sizeof(sink);

		r = read(p[0], dst, room);
		if (r <= 0)
			break;
		if (dst != sink)
			n += r;
	}
	if (out)
		out[n] = '\0';
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return ct_exit_code(st);
}

TEST(cubectl_net)
{
	char out[8192], path[] = "/tmp/cube-net-XXXXXX";
	struct cube_net_policy cur;
	uint32_t gen, gen2;
	struct sbx a, n;
	int fd;

	if (access("/dev/cube", F_OK) || access("./cubectl", X_OK))
		SKIP("needs cube.ko and ./cubectl");
	WORLD();
	MAKE(&a, policy(CUBE_NET_INTERNET, NULL));
	MAKE(&n, policy(CUBE_NET_NONE, NULL));
	REACHED(&a, INET_ADDR, 6, 80);
	EXPECT_EQ(cubectl(out, sizeof(out), "--json net show %llu", (unsigned long long)a.id), 0);
	EXPECT_NE(strstr(out, "\"internet\""), NULL);
	EXPECT_NE(strstr(out, "\"passed\""), NULL);
	EXPECT_EQ(cubectl(out, sizeof(out), "net show %llu", (unsigned long long)a.id), 0);
	EXPECT_NE(strstr(out, "VERDICT"), NULL);
	ASSERT_OK(cube_net_get_policy(&a.h, &cur, &gen));

	/* refusals change nothing */
	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, "allow 203.0.113.10/32:80\nallow 10.0.0.1/8\n", 43), 43);
	close(fd);
	EXPECT_EQ(cubectl(NULL, 0, "net set %llu %s 2>/dev/null", (unsigned long long)a.id, path), 2);
	EXPECT_EQ(cubectl(NULL, 0, "net set %llu /nonexistent 2>/dev/null", (unsigned long long)a.id), 2);
	EXPECT_EQ(cubectl(NULL, 0, "net set %llu none 2>/dev/null", (unsigned long long)a.id), 2);
	EXPECT_EQ(cubectl(NULL, 0, "net set 999999999 deny 2>/dev/null"), 3);
	EXPECT_EQ(cubectl(NULL, 0, "net set %llu deny 2>/dev/null", (unsigned long long)n.id), 7);
	EXPECT_EQ(cubectl(NULL, 0, "net show %llu 2>/dev/null", (unsigned long long)n.id), 7);
	ASSERT_OK(cube_net_get_policy(&a.h, &cur, &gen2));
	EXPECT_EQ(gen2, gen);
	REACHED(&a, INET_ADDR, 6, 80);

	/* a good file, live */
	fd = open(path, O_WRONLY | O_TRUNC);
	ASSERT_EQ(write(fd, "allow 203.0.113.10/32:443\n", 26), 26);
	close(fd);
	EXPECT_EQ(cubectl(NULL, 0, "net set %llu %s", (unsigned long long)a.id, path), 0);
	unlink(path);
	REACHED(&a, INET_ADDR, 6, 443);
	BLOCKED(&a, INET_ADDR, 6, 80, CUBE_NET_DROP_POLICY);
	EXPECT_EQ(cubectl(out, sizeof(out), "--json net show %llu", (unsigned long long)a.id), 0);
	EXPECT_NE(strstr(out, "\"list\""), NULL);
	EXPECT_NE(strstr(out, "203.0.113.10/32"), NULL);
	EXPECT_EQ(cubectl(NULL, 0, "net set %llu deny", (unsigned long long)a.id), 0);
	BLOCKED(&a, INET_ADDR, 6, 443, CUBE_NET_DROP_POLICY);
	sbx_drop(&a);
	sbx_drop(&n);
}

int main(int argc, char **argv)
{
	/* TCG in L1 is slow; the cycles take a while */
	setenv("CUBE_TEST_TIMEOUT", "300", 0);
	return ct_main(argc, argv);
}
