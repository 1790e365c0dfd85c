// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm's virtio-net with a real tap.  Each test makes its own network
 * namespace in L1 with a tap set up as the host side of a sandbox is
 * (lib/cube_net_addr.h: 169.254.0.22/30, the fixed gateway MAC), boots the
 * L2 guest with --net-tap-fd, where the guest agent's network code
 * (agent-net) configures eth0, and shows frames both ways: the guest pings
 * the gateway, echoes UDP datagrams of every size up to and beyond one
 * frame, sends its own beacons, takes a TCP bulk transfer.  A snapshot
 * restored onto a new tap in a new namespace works with no guest
 * reconfiguration; no --net-tap-fd means no eth0; bad fds and mismatched
 * restores are refused.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>

#include <linux/if_tun.h>

#include "cube_net_addr.h"
#include "vmm_util.h"

#define TAP_NAME	"cubetap0"
#define ECHO_PORT	7
#define BEACON_PORT	9999
#define SINK_PORT	5001
#define BULK_BYTES	(4 << 20)

static void if_flags_up(int s, const char *name)
{
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	ASSERT_EQ(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	ASSERT_EQ(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
}

static void set_in_addr(int s, unsigned long req, const char *name,
			const char *addr)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	sin->sin_family = AF_INET;
	ASSERT_EQ(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
	ASSERT_EQ(ioctl(s, req, &ifr), 0);
}

/* A new network namespace for this test process, with lo up. */
static void new_netns(void)
{
	int s;

	ASSERT_EQ(unshare(CLONE_NEWNET), 0);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_GE(s, 0);
	if_flags_up(s, "lo");
	close(s);
}

/* Open a tap (not close-on-exec: cube-vmm inherits it); SKIP without tun. */
static int tap_open(int flags)
{
	struct ifreq ifr = { 0 };
	int fd = open("/dev/net/tun", O_RDWR);

	if (fd < 0 && (errno == ENOENT || errno == ENODEV)) {
		if (system("modprobe tun 2>/dev/null")) {
			/* not there: the open below says so */
		}
		fd = open("/dev/net/tun", O_RDWR);
	}
	if (fd < 0)
		SKIP("no /dev/net/tun (%s): L1 needs the tun module",
		     strerror(errno));
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", TAP_NAME);
	ifr.ifr_flags = flags;
	ASSERT_EQ(ioctl(fd, TUNSETIFF, &ifr), 0);
	return fd;
}

/* The host side of a sandbox: the tap as gateway, its fixed MAC. */
static int sandbox_tap(void)
{
	static const uint8_t gw_mac[6] = CUBE_NET_GW_MAC_BYTES;
	struct ifreq ifr = { 0 };
	int fd = tap_open(IFF_TAP | IFF_NO_PI | IFF_VNET_HDR);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(s, 0);
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", TAP_NAME);
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, gw_mac, 6);
	ASSERT_EQ(ioctl(s, SIOCSIFHWADDR, &ifr), 0);
	set_in_addr(s, SIOCSIFADDR, TAP_NAME, CUBE_NET_GW_IP);
	set_in_addr(s, SIOCSIFNETMASK, TAP_NAME, CUBE_NET_NETMASK);
	if_flags_up(s, TAP_NAME);
	close(s);
	return fd;
}

struct vmm_run {
	char dir[128];
	char log[192];
	char err[192];
	char ctl[192];
	pid_t pid;
};

/* Boot the L2 guest in mode; tap_fd < 0: no network device. */
static void boot(struct vmm_run *r, const char *tag, const char *mode,
		 int tap_fd, const char *mac)
{
	char append[64], fdarg[16];
	const char *argv[32];
	int n = 0;

	mk_scratch(r->dir, sizeof(r->dir), tag);
	snprintf(r->log, sizeof(r->log), "%s/console.log", r->dir);
	snprintf(r->err, sizeof(r->err), "%s/stderr", r->dir);
	snprintf(r->ctl, sizeof(r->ctl), "%s/control", r->dir);
	snprintf(append, sizeof(append), "cube.test=%s", mode);
	snprintf(fdarg, sizeof(fdarg), "%d", tap_fd);
	argv[n++] = "cube-vmm";
	argv[n++] = "--kernel";
	argv[n++] = l2_kernel();
	argv[n++] = "--initrd";
	argv[n++] = L2_INITRD;
	argv[n++] = "--append";
	argv[n++] = append;
	argv[n++] = "--mem";
	argv[n++] = "192";
	argv[n++] = "--console-log";
	argv[n++] = r->log;
	argv[n++] = "--control";
	argv[n++] = r->ctl;
	argv[n++] = "--timeout";
	argv[n++] = "360";
	argv[n++] = "--stats";
	if (tap_fd >= 0) {
		argv[n++] = "--net-tap-fd";
		argv[n++] = fdarg;
	}
	if (mac) {
		argv[n++] = "--net-mac";
		argv[n++] = mac;
	}
	argv[n] = NULL;
	r->pid = vmm_spawn(argv, r->err);
	ASSERT_GT(r->pid, 0);
}

static void restore(struct vmm_run *r, const char *snap, int tap_fd)
{
	char fdarg[16];
	const char *argv[24];
	int n = 0;

	snprintf(r->log, sizeof(r->log), "%s/clone.log", r->dir);
	snprintf(r->err, sizeof(r->err), "%s/clone.err", r->dir);
	snprintf(r->ctl, sizeof(r->ctl), "%s/control-clone", r->dir);
	snprintf(fdarg, sizeof(fdarg), "%d", tap_fd);
	argv[n++] = "cube-vmm";
	argv[n++] = "--restore";
	argv[n++] = snap;
	argv[n++] = "--no-cube";
	argv[n++] = "--console-log";
	argv[n++] = r->log;
	argv[n++] = "--control";
	argv[n++] = r->ctl;
	argv[n++] = "--timeout";
	argv[n++] = "300";
	if (tap_fd >= 0) {
		argv[n++] = "--net-tap-fd";
		argv[n++] = fdarg;
	}
	argv[n] = NULL;
	r->pid = vmm_spawn(argv, r->err);
	ASSERT_GT(r->pid, 0);
}

static void wait_console(struct vmm_run *r, const char *needle)
{
	if (!wait_for(r->log, needle, BOOT_TIMEOUT, r->pid)) {
		TH_LOG("no '%s' on the console", needle);
		dump_file("console", r->log);
		dump_file("stderr", r->err);
		kill(r->pid, SIGKILL);
		ASSERT_TRUE(0);
	}
}

/* The first console line holding needle, for strstr checks ("" if none). */
static char *console_line(struct vmm_run *r, const char *needle)
{
	static char line[512];
	char *s = slurp(r->log), *p = strstr(s, needle);

	line[0] = 0;
	if (p)
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\r\n"), p);
	free(s);
	return line;
}

/* The agent's network code set the guest up (l2-init.sh, mode net). */
static void check_guest_config(struct vmm_run *r, const char *mac)
{
	char *l;

	EXPECT_TRUE(file_has(r->log, "CUBE-L2-AGENT-NET 1 eth0"));
	EXPECT_TRUE(file_has(r->log, "CUBE-L2-AGENT-RESOLV 0"));
	EXPECT_TRUE(file_has(r->log, "CUBE-L2-RESOLV nameserver " CUBE_NET_DNS_IP));
	EXPECT_FALSE(file_has(r->log, "CUBE-L2-RESOLV-STILL-A-LINK"));
	EXPECT_TRUE(file_has(r->log, "CUBE-L2-AGENT-HOSTS 0"));
	EXPECT_TRUE(file_has(r->log, "CUBE-L2-HOSTS 2"));
	l = console_line(r, "CUBE-L2-NET-UP ");
	TH_LOG("%s", l);
	EXPECT_TRUE(strstr(l, mac) != NULL);
	EXPECT_TRUE(strstr(l, "inet " CUBE_NET_GUEST_IP "/30") != NULL);
	EXPECT_TRUE(strstr(l, "default via " CUBE_NET_GW_IP " dev eth0") != NULL);
	EXPECT_TRUE(strstr(l, "mtu 1500") != NULL);
	/* The guest reached its gateway. */
	EXPECT_TRUE(file_has(r->log, "CUBE-L2-NET-PING-OK"));
}

static void stop(struct vmm_run *r)
{
	char reply[128];
	int st;

	ASSERT_EQ(control(r->ctl, "stop", reply, sizeof(reply)), 0);
	st = vmm_wait(r->pid, 60);
	ASSERT_NE(st, -1);
	if (!ct_exited_with(st, 0))
		dump_file("stderr", r->err);
	EXPECT_EXIT(st, 0);
}

static int udp_socket(unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, CUBE_NET_GW_IP, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct sockaddr_in guest_addr(unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, CUBE_NET_GUEST_IP, &sa.sin_addr);
	return sa;
}

/* One datagram of len pattern bytes to the guest's echo port and back. */
static int udp_echo(int fd, size_t len, unsigned int seed, int tries)
{
	struct sockaddr_in to = guest_addr(ECHO_PORT);
	static char out[65536], in[65536];
	size_t i;

	for (i = 0; i < len; i++)
		out[i] = (char)(i * 11 + seed);
	while (tries-- > 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double end = now_s() + 5;

		if (sendto(fd, out, len, 0, (struct sockaddr *)&to,
			   sizeof(to)) != (ssize_t)len)
			return -1;
		while (now_s() < end && poll(&p, 1, 500) >= 0) {
			ssize_t n;

			if (!(p.revents & POLLIN))
				continue;
			n = recv(fd, in, sizeof(in), 0);
			/* An answer to an earlier try: look further. */
			if (n == (ssize_t)len && !memcmp(in, out, len))
				return 0;
		}
	}
	return -1;
}

/* A beacon the guest sent by itself, within timeout seconds. */
static int wait_beacon(int fd, double timeout)
{
	double end = now_s() + timeout;
	char buf[64];

	while (now_s() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		char a[INET_ADDRSTRLEN];
		ssize_t n;

		if (poll(&p, 1, 500) <= 0)
			continue;
		n = recvfrom(fd, buf, sizeof(buf) - 1, 0,
			     (struct sockaddr *)&from, &fl);
		if (n <= 0)
			continue;
		buf[n] = 0;
		inet_ntop(AF_INET, &from.sin_addr, a, sizeof(a));
		if (!strncmp(buf, "beacon ", 7) && !strcmp(a, CUBE_NET_GUEST_IP))
			return 0;
	}
	return -1;
}

/* Send BULK_BYTES over TCP to the guest's sink; its count must match. */
static void tcp_bulk(void)
{
	struct sockaddr_in to = guest_addr(SINK_PORT);
	static char buf[65536];
	size_t left = BULK_BYTES;
	double t0;
	char line[32];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_GE(fd, 0);
	memset(buf, 0x5a, sizeof(buf));
	t0 = now_s();
	ASSERT_EQ(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	while (left) {
		ssize_t n = write(fd, buf, left < sizeof(buf) ? left : sizeof(buf));

		ASSERT_GT(n, 0);
		left -= n;
	}
	ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
	ASSERT_GE(read_line(fd, line, sizeof(line), 120000), 0);
	EXPECT_EQ(strtoull(line, NULL, 10), BULK_BYTES);
	TH_LOG("net: %d MiB host to guest over TCP in %.2f s (%.1f Mbit/s)",
	       BULK_BYTES >> 20, now_s() - t0,
	       BULK_BYTES * 8 / 1e6 / (now_s() - t0));
	close(fd);
}

TEST(traffic_both_ways)
{
	static const size_t sizes[] = { 1, 64, 1000, 1472, 1473, 4000, 20000 };
	struct vmm_run r;
	int tap, fd, bfd, i;

	need_kvm();
	new_netns();
	tap = sandbox_tap();
	boot(&r, "net", "net", tap, NULL);
	close(tap);
	wait_console(&r, "CUBE-L2-NET-READY");
	check_guest_config(&r, CUBE_NET_GUEST_MAC);

	fd = udp_socket(0);
	ASSERT_GE(fd, 0);
	/* One frame, a full one, then fragmented datagrams of 2..14 frames. */
	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		int ret = udp_echo(fd, sizes[i], i, 3);

		if (ret)
			TH_LOG("no echo of %zu bytes", sizes[i]);
		EXPECT_EQ(ret, 0);
	}
	/* A burst: every datagram comes back. */
	for (i = 0; i < 32; i++)
		EXPECT_EQ(udp_echo(fd, 512, 100 + i, 2), 0);
	bfd = udp_socket(BEACON_PORT);
	ASSERT_GE(bfd, 0);
	EXPECT_EQ(wait_beacon(bfd, 20), 0);
	tcp_bulk();
	close(fd);
	close(bfd);
	stop(&r);
	/* The device's counters: thousands of frames each way, none lost. */
	{
		char *e = slurp(r.err), *p = strstr(e, "stats: net ");
		unsigned long long rx = 0, rxd = 1, tx = 0, txd = 1;

		ASSERT_TRUE(p != NULL);
		EXPECT_EQ(sscanf(p, "stats: net rx=%llu rx_dropped=%llu tx=%llu tx_dropped=%llu",
				 &rx, &rxd, &tx, &txd), 4);
		TH_LOG("frames: rx %llu (dropped %llu), tx %llu (dropped %llu)",
		       rx, rxd, tx, txd);
		EXPECT_GT(rx, (BULK_BYTES / 1514));
		EXPECT_GT(tx, 100);
		EXPECT_EQ(rxd, 0);
		EXPECT_EQ(txd, 0);
		free(e);
	}
	rm_tree(r.dir);
}

TEST(snapshot_restores_onto_a_new_tap)
{
	char req[256], reply[256], snap[192];
	struct vmm_run r;
	int tap, fd, bfd, st;

	need_kvm();
	new_netns();
	tap = sandbox_tap();
	boot(&r, "netsnap", "net", tap, "06:cb:00:00:00:99");
	close(tap);
	wait_console(&r, "CUBE-L2-NET-READY");
	check_guest_config(&r, "06:cb:00:00:00:99");
	fd = udp_socket(0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(udp_echo(fd, 1000, 1, 3), 0);
	close(fd);
	snprintf(snap, sizeof(snap), "%s/snap", r.dir);
	snprintf(req, sizeof(req), "snapshot %s", snap);
	ASSERT_EQ(control(r.ctl, req, reply, sizeof(reply)), 0);
	TH_LOG("%s", reply);
	ASSERT_EQ(strncmp(reply, "OK snapshot", 11), 0);
	stop(&r);

	/* The snapshot has a network device: a restore without one fails. */
	restore(&r, snap, -1);
	st = vmm_wait(r.pid, 60);
	EXPECT_EXIT(st, 1);
	EXPECT_TRUE(file_has(r.err, "the snapshot has a network device: give --net-tap-fd"));

	/*
	 * Another sandbox: a new namespace and tap with the same addresses.
	 * The clone answers at once, and its own traffic (beacons, through
	 * the ARP entry of the old gateway) gets out: no reconfiguration.
	 */
	new_netns();
	tap = sandbox_tap();
	restore(&r, snap, tap);
	close(tap);
	fd = udp_socket(0);
	bfd = udp_socket(BEACON_PORT);
	ASSERT_GE(fd, 0);
	ASSERT_GE(bfd, 0);
	if (udp_echo(fd, 1400, 2, 6)) {
		dump_file("clone console", r.log);
		dump_file("clone stderr", r.err);
		ASSERT_TRUE(0);
	}
	EXPECT_EQ(wait_beacon(bfd, 20), 0);
	EXPECT_EQ(udp_echo(fd, 4000, 3, 3), 0);
	tcp_bulk();
	close(fd);
	close(bfd);
	stop(&r);
	rm_tree(r.dir);
}

TEST(no_tap_no_eth0)
{
	char req[256], reply[256], snap[192];
	struct vmm_run r;
	int tap, st;

	need_kvm();
	new_netns();
	boot(&r, "nonet", "netdevs", -1, NULL);
	wait_console(&r, "CUBE-L2-NETDEVS");
	/* The agent's code finds no card and does nothing. */
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-AGENT-NET 0"));
	EXPECT_FALSE(file_has(r.log, "CUBE-L2-AGENT-NET 1"));
	EXPECT_TRUE(file_has(r.log, "CUBE-L2-NETDEVS lo \n") ||
		    file_has(r.log, "CUBE-L2-NETDEVS lo \r"));
	EXPECT_FALSE(file_has(r.log, "eth0"));
	/* Its snapshot has no network device: a restore with one fails. */
	snprintf(snap, sizeof(snap), "%s/snap", r.dir);
	snprintf(req, sizeof(req), "snapshot %s", snap);
	ASSERT_EQ(control(r.ctl, req, reply, sizeof(reply)), 0);
	ASSERT_EQ(strncmp(reply, "OK snapshot", 11), 0);
	stop(&r);
	tap = sandbox_tap();
	restore(&r, snap, tap);
	close(tap);
	st = vmm_wait(r.pid, 60);
	EXPECT_EXIT(st, 1);
	EXPECT_TRUE(file_has(r.err, "the snapshot has no network device: drop --net-tap-fd"));
	rm_tree(r.dir);
}

/* cube-vmm --kernel ... extra...; its exit status, stderr in r->err. */
static int run_bad(struct vmm_run *r, const char *a1, const char *a2,
		   const char *a3, const char *a4)
{
	const char *argv[16];
	int n = 0, st;

	argv[n++] = "cube-vmm";
	argv[n++] = "--kernel";
	argv[n++] = l2_kernel();
	argv[n++] = "--no-cgroup";
	argv[n++] = a1;
	argv[n++] = a2;
	if (a3) {
		argv[n++] = a3;
		argv[n++] = a4;
	}
	argv[n] = NULL;
	r->pid = vmm_spawn(argv, r->err);
	st = vmm_wait(r->pid, 30);
	return ct_exit_code(st);
}

TEST(bad_tap_fds_are_refused)
{
	struct vmm_run r;
	char fdarg[16];
	int fd;

	need_kvm();
	new_netns();
	mk_scratch(r.dir, sizeof(r.dir), "netbad");
	snprintf(r.err, sizeof(r.err), "%s/stderr", r.dir);

	fd = open("/dev/null", O_RDWR);
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	EXPECT_EQ(run_bad(&r, "--net-tap-fd", fdarg, NULL, NULL), 1);
	EXPECT_TRUE(file_has(r.err, "not a tap device"));
	close(fd);
	EXPECT_EQ(run_bad(&r, "--net-tap-fd", "999", NULL, NULL), 1);
	EXPECT_TRUE(file_has(r.err, "not an open file descriptor"));

	fd = tap_open(IFF_TAP | IFF_NO_PI);	/* no IFF_VNET_HDR */
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	EXPECT_EQ(run_bad(&r, "--net-tap-fd", fdarg, NULL, NULL), 1);
	EXPECT_TRUE(file_has(r.err, "IFF_NO_PI | IFF_VNET_HDR"));
	close(fd);
	fd = tap_open(IFF_TUN | IFF_NO_PI | IFF_VNET_HDR);
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	EXPECT_EQ(run_bad(&r, "--net-tap-fd", fdarg, NULL, NULL), 1);
	EXPECT_TRUE(file_has(r.err, "a tun device, not a tap"));
	close(fd);

	fd = tap_open(IFF_TAP | IFF_NO_PI | IFF_VNET_HDR);
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	EXPECT_EQ(run_bad(&r, "--net-tap-fd", fdarg, "--net-mac", "01:00:5e:00:00:01"), 1);
	EXPECT_TRUE(file_has(r.err, "is not a unicast MAC address"));
	close(fd);
	EXPECT_EQ(run_bad(&r, "--net-mac", CUBE_NET_GUEST_MAC, NULL, NULL), 2);
	EXPECT_TRUE(file_has(r.err, "--net-mac needs --net-tap-fd"));
	rm_tree(r.dir);
}

VMM_TEST_MAIN()
