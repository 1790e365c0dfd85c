// SPDX-License-Identifier: GPL-2.0
/*
 * cube-vmm: a minimal KVM virtual machine monitor for cube sandboxes.
 * See Documentation/vmm.rst and `cube-vmm --help`.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/cube.h>

#include "acpi.h"
#include "boot.h"
#include "checkpoint.h"
#include "control.h"
#include "cube_net_addr.h"
#include "cube_clone.h"
#include "cube_disk.h"
#include "devices.h"
#include "jail.h"
#include "sandbox.h"
#include "serial.h"
#include "snapshot.h"
#include "util.h"
#include "virtio_mmio.h"
#include "virtio_net.h"
#include "vm.h"
#include "vsock.h"

#define DEFAULT_MEM_MIB		256
/*
 * An idle guest should not wake its vCPU: no soft-lockup watchdog (its
 * hrtimer fires every 4 s), no pressure-stall averaging (every 2 s) and no
 * proactive compaction (kcompactd polls every 500 ms while it is on).
 */
#define DEFAULT_CMDLINE		"console=ttyS0 reboot=k panic=-1 pci=off " \
				"nomodeset quiet nowatchdog psi=0 " \
				"sysctl.vm.compaction_proactiveness=0"
#define EXIT_OK			0
#define EXIT_ERROR		1
#define EXIT_USAGE		2
#define EXIT_TIMEOUT		3

struct opts {
	const char *kernel;
	const char *initrd;
	const char *cmdline;
	const char *append;
	const char *rootfs;
	uint64_t mem_mib;
	uint64_t vcpus;
	const char *vsock_uds;
	uint64_t cid;
	const char *console_log;
	uint64_t console_max, console_rate;
	uint64_t timeout;
	const char *snapshot_out;
	const char *restore;
	const char *checkpoint_dir;
	uint64_t rollback_keep_mib;	/* UINT64_MAX: all */
	uint64_t trim_every;		/* seconds, 0: never */
	uint64_t merge_group;		/* 0: the trim merges nothing */
	bool verify_memory;
	bool no_cube;
	const char *control;
	const char *id;
	bool no_seccomp;
	bool no_cgroup;
	bool stats;
	int net_tap_fd;			/* -1: no network device */
	const char *net_mac;
	int sandbox_fd;			/* -1: no cube.ko sandbox */
	int vsock_broker_fd;		/* --vsock-connect-fd N, -1: none */
	int parent_fd;			/* --parent-fd N, -1: a supervisor of ours */
	const char *disk;		/* --disk PATH */
	int disk_fd;			/* --disk-fd N, then the disk's fd */
	const char *jail_root;		/* --jail-root DIR: the VM's only files */
	uid_t jail_uid;			/* --jail-user UID:GID, 0: none */
	gid_t jail_gid;
};

struct vmm {
	struct opts o;
	struct vm vm;
	struct serial serial;
	struct control ctl;
	struct snap_config cfg;
	struct snap_restore r;		/* --restore: the snapshot, opened */
	int mem_fd;			/* --restore: its guest memory */
	bool mem_shared;		/* mem_fd is a cube.ko clone */
	int trim_fd;			/* --trim-every's timer, -1: none */
	uint64_t trim_seen;		/* private pages at its last tick */
	uint64_t trim_left;		/* private pages the last trim left */
	unsigned long trims;		/* trims done ("trim", --trim-every) */
	uint64_t trimmed;		/* pages they gave back */
	uint64_t merged;		/* pages their merges shared */
	struct ckpt_set ck;		/* checkpoints and rollbacks */
	uint64_t disk_size;		/* the writable disk's, 0: none */
	int epoll_fd;
	int console_fd;
	bool paused;
	struct timespec t0;
};

static void usage(FILE *f)
{
	fputs(
"usage: cube-vmm --kernel BZIMAGE [--initrd FILE] [options]\n"
"       cube-vmm --restore DIR [options]\n"
"\n"
"  --kernel FILE        bzImage to boot (Linux 64-bit boot protocol)\n"
"  --initrd FILE        initramfs\n"
"  --cmdline S          kernel command line (default: \"" DEFAULT_CMDLINE "\")\n"
"  --append S           appended to the command line\n"
"  --rootfs IMG         read-only virtio-blk disk over IMG (a restore of a\n"
"                       snapshot with a disk needs it)\n"
"  --disk PATH          the sandbox's writable virtio-blk disk (GET_ID\n"
"                       \"cube-disk\"): a regular file, a multiple of 4096\n"
"                       bytes, 1 MiB..16 TiB; snapshots and checkpoints copy\n"
"                       it to disk.img (a restore of a snapshot with a disk\n"
"                       needs one at least as large: a copy of its disk.img)\n"
"  --disk-fd N          the same over the inherited read-write fd N\n"
"  --mem MiB            guest memory (32..3072, default 256)\n"
"  --vcpus N            vCPUs (1..16, default 1)\n"
"  --vsock-uds PATH     host side of virtio-vsock (hybrid Unix socket)\n"
"  --cid N              guest vsock CID (default 3)\n"
"  --net-tap-fd N       virtio-net over the inherited tap fd N (opened with\n"
"                       IFF_TAP|IFF_NO_PI|IFF_VNET_HDR); none: no network\n"
"  --net-mac MAC        the guest's MAC (default " CUBE_NET_GUEST_MAC ")\n"
"  --console-log FILE   serial console output (default: stdout)\n"
"  --console-max BYTES  at most this much in the console log, counting what\n"
"                       it held (4096..1 GiB, default 1 MiB); a file then\n"
"                       keeps its newest half, other output stops\n"
"  --console-rate BYTES at most this much console output a second, after a\n"
"                       burst of four seconds' worth (16..64 MiB, default\n"
"                       64 KiB); what is over is dropped and counted\n"
"  --timeout S          stop the VM after S seconds of wall time (exit 3)\n"
"  --control PATH       control socket: pause|resume|snapshot [DIR]|stop|status|\n"
"                       trim|checkpoint NAME|checkpoints|checkpoint-rm NAME|\n"
"                       rollback [NAME]\n"
"  --vsock-connect-fd N the inherited fd N is a SOCK_SEQPACKET socket to a\n"
"                       broker that connects guest-initiated vsock streams\n"
"                       for the VMM (vmm/vsock.h); jailed, guest connects\n"
"                       need it\n"
"  --checkpoint-dir DIR existing directory of the checkpoints (DIR/NAME/: the\n"
"                       vCPU and device state, the id of the cube.ko snapshot\n"
"                       of the memory), unless the request passes the record,\n"
"                       state and disk files (a jailed VMM: always); a\n"
"                       restore onto a cube clone only.\n"
"                       \"checkpoint NAME\" saves the running VM in place,\n"
"                       \"rollback NAME\" returns it there, \"rollback\" to the\n"
"                       restored snapshot (same process, same VM); at most\n"
"                       16 checkpoints, deleted when cube-vmm exits\n"
"  --trim-every S       for a restore onto a cube.ko clone: once the guest\n"
"                       settles (its private pages grew by less than 64 KiB\n"
"                       in S seconds, 1..3600), give back the pages that\n"
"                       hold the snapshot's contents again (as \"trim\"\n"
"                       does); then sleep until the next vsock connection\n"
"  --merge-group N      for a restore onto a cube.ko clone: each trim also\n"
"                       shares the pages that other clones of the snapshot\n"
"                       in group N (1..2^64-1, one per tenant: see cube.ko's\n"
"                       CUBE_IOC_CLONE_MERGE) hold with the same bytes at\n"
"                       the same offset\n"
"  --rollback-keep MiB  of the pages the guest wrote, how much a rollback to\n"
"                       the snapshot it runs on keeps, the snapshot copied\n"
"                       back into them (no fault when written again), rather\n"
"                       than frees (0..3072, default: all)\n"
"  --snapshot-out DIR   default directory of the snapshot request\n"
"  --restore DIR        resume the VM saved in DIR (memory: a /dev/cube clone\n"
"                       of DIR's memory, else the file mapped MAP_PRIVATE)\n"
"  --verify-memory      with --restore: check the memory file's crc32\n"
"  --no-cube            with --restore: map the memory file, no /dev/cube clone\n"
"  --cube-sandbox-fd N  the inherited fd N of the cube.ko sandbox this VM is:\n"
"                       a restore's clone is attached to it (its memory\n"
"                       counters); closed once the memory is set up\n"
"  --id NAME            sandbox id (cgroup name; default cube-vmm-<pid>)\n"
"  --parent-fd N        started by a supervisor (cube-shim) that made this\n"
"                       process pid 1 of a pid namespace of its own, holds\n"
"                       the other end of the pipe N for as long as it lives\n"
"                       and removes the cgroup once this process is gone:\n"
"                       the VMM joins its cgroup itself, with no supervisor\n"
"                       process of its own, and dies with that one\n"
"  --no-cgroup          no cgroup (development only: without it a VMM that\n"
"                       cannot make one refuses to start)\n"
"  --no-seccomp         no seccomp filters (development only)\n"
"  --jail-user UID:GID  once set up, run as UID:GID (neither 0) in new mount,\n"
"                       pid, IPC and network namespaces whose root is\n"
"                       --jail-root DIR (the sandbox's run directory); a\n"
"                       snapshot or checkpoint then goes only into files\n"
"                       passed with the request, and no file opens by name\n"
"                       (seccomp, Landlock)\n"
"  --jail-root DIR      the jail's root, needs --jail-user\n"
"  --stats              print VM exit (and network) counts and times at the end\n"
"  -v, --verbose        more messages\n"
"\n"
"Exit status: 0 the guest powered off or reset, or a stop request;\n"
"1 error; 2 usage; 3 timeout.\n"
"Environment: CUBE_NO_JAIL=1 is --no-cgroup --no-seccomp and no --jail-user\n"
"(development only).\n", f);
}

enum {
	OPT_KERNEL = 256, OPT_INITRD, OPT_CMDLINE, OPT_APPEND, OPT_ROOTFS,
	OPT_MEM, OPT_VCPUS, OPT_VSOCK, OPT_CID, OPT_CONSOLE, OPT_TIMEOUT,
	OPT_SNAPOUT, OPT_RESTORE, OPT_VERIFY, OPT_CONTROL, OPT_ID,
	OPT_NOSECCOMP, OPT_NOCGROUP, OPT_STATS, OPT_NOCUBE, OPT_NETFD,
	OPT_NETMAC, OPT_SANDBOXFD, OPT_CONSOLE_MAX, OPT_CONSOLE_RATE,
	OPT_CKPTDIR, OPT_VSOCK_BROKER, OPT_ROLLBACK_KEEP, OPT_TRIM_EVERY, OPT_MERGE_GROUP, OPT_DISK, OPT_DISKFD, OPT_JAIL_USER, OPT_JAIL_ROOT,
	OPT_PARENT_FD,
};

static const struct option long_opts[] = {
	{ "kernel", required_argument, NULL, OPT_KERNEL },
	{ "initrd", required_argument, NULL, OPT_INITRD },
	{ "cmdline", required_argument, NULL, OPT_CMDLINE },
	{ "append", required_argument, NULL, OPT_APPEND },
	{ "rootfs", required_argument, NULL, OPT_ROOTFS },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "disk-fd", required_argument, NULL, OPT_DISKFD },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "vsock-uds", required_argument, NULL, OPT_VSOCK },
	{ "cid", required_argument, NULL, OPT_CID },
	{ "net-tap-fd", required_argument, NULL, OPT_NETFD },
	{ "vsock-connect-fd", required_argument, NULL, OPT_VSOCK_BROKER },
	{ "net-mac", required_argument, NULL, OPT_NETMAC },
	{ "cube-sandbox-fd", required_argument, NULL, OPT_SANDBOXFD },
	{ "console-log", required_argument, NULL, OPT_CONSOLE },
	{ "console-max", required_argument, NULL, OPT_CONSOLE_MAX },
	{ "console-rate", required_argument, NULL, OPT_CONSOLE_RATE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "snapshot-out", required_argument, NULL, OPT_SNAPOUT },
	{ "restore", required_argument, NULL, OPT_RESTORE },
	{ "checkpoint-dir", required_argument, NULL, OPT_CKPTDIR },
	{ "rollback-keep", required_argument, NULL, OPT_ROLLBACK_KEEP },
	{ "trim-every", required_argument, NULL, OPT_TRIM_EVERY },
	{ "merge-group", required_argument, NULL, OPT_MERGE_GROUP },
	{ "verify-memory", no_argument, NULL, OPT_VERIFY },
	{ "no-cube", no_argument, NULL, OPT_NOCUBE },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "id", required_argument, NULL, OPT_ID },
	{ "no-seccomp", no_argument, NULL, OPT_NOSECCOMP },
	{ "no-cgroup", no_argument, NULL, OPT_NOCGROUP },
	{ "parent-fd", required_argument, NULL, OPT_PARENT_FD },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "jail-user", required_argument, NULL, OPT_JAIL_USER },
	{ "jail-root", required_argument, NULL, OPT_JAIL_ROOT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int num_opt(const char *name, const char *s, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	if (parse_u64(s, min, max, out)) {
		pr_err("--%s: '%s' is not a number in %llu..%llu", name, s,
		       (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	return 0;
}

/* "UID:GID", both decimal, neither 0 (the jail is never root's) */
static int parse_ids(const char *s, uid_t *uid, gid_t *gid)
{
	unsigned long long u, g;
	char *end;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		goto bad;
	u = strtoull(s, &end, 10);
	if (end == s || *end != ':' || errno || !isdigit((unsigned char)end[1]))
		goto bad;
	s = end + 1;
	g = strtoull(s, &end, 10);
	if (end == s || *end || errno || !u || !g || u >= UINT32_MAX ||
	    g >= UINT32_MAX)
		goto bad;
	*uid = u;
	*gid = g;
	return 0;
bad:
	pr_err("--jail-user: want UID:GID, both from 1 to %u", UINT32_MAX - 1);
	return -1;
}

static int parse_opts(struct opts *o, int argc, char **argv)
{
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->net_tap_fd = -1;
	o->sandbox_fd = -1;
	o->vsock_broker_fd = -1;
	o->parent_fd = -1;
	o->disk_fd = -1;
	o->mem_mib = DEFAULT_MEM_MIB;
	o->vcpus = 1;
	o->cid = VSOCK_DEFAULT_CID;
	o->rollback_keep_mib = UINT64_MAX;
	while ((c = getopt_long(argc, argv, "vh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_KERNEL: o->kernel = optarg; break;
		case OPT_INITRD: o->initrd = optarg; break;
		case OPT_CMDLINE: o->cmdline = optarg; break;
		case OPT_APPEND: o->append = optarg; break;
		case OPT_ROOTFS: o->rootfs = optarg; break;
		case OPT_DISK: o->disk = optarg; break;
		case OPT_DISKFD:
			if (num_opt("disk-fd", optarg, 0, INT32_MAX, &v))
				return -1;
			o->disk_fd = v;
			break;
		case OPT_MEM:
			if (num_opt("mem", optarg, VM_MEM_MIN >> 20,
				    VM_MEM_MAX >> 20, &o->mem_mib))
				return -1;
			break;
		case OPT_VCPUS:
			if (num_opt("vcpus", optarg, 1, VM_MAX_VCPUS, &o->vcpus))
				return -1;
			break;
		case OPT_VSOCK: o->vsock_uds = optarg; break;
		case OPT_CID:
			if (num_opt("cid", optarg, 3, UINT32_MAX - 1, &o->cid))
				return -1;
			break;
		case OPT_VSOCK_BROKER:
			if (num_opt("vsock-connect-fd", optarg, 0, INT32_MAX, &v))
				return -1;
			o->vsock_broker_fd = v;
			break;
		case OPT_PARENT_FD:
			if (num_opt("parent-fd", optarg, 3, INT32_MAX, &v))
				return -1;
			o->parent_fd = v;
			break;
		case OPT_NETFD:
			if (num_opt("net-tap-fd", optarg, 0, INT32_MAX, &v))
				return -1;
			o->net_tap_fd = v;
			break;
		case OPT_NETMAC: o->net_mac = optarg; break;
		case OPT_SANDBOXFD:
			if (num_opt("cube-sandbox-fd", optarg, 0, INT32_MAX, &v))
				return -1;
			o->sandbox_fd = v;
			break;
		case OPT_CONSOLE: o->console_log = optarg; break;
		case OPT_CONSOLE_MAX:
			if (num_opt("console-max", optarg, 4096, 1ULL << 30,
				    &o->console_max))
				return -1;
			break;
		case OPT_CONSOLE_RATE:
			if (num_opt("console-rate", optarg, 16, 64ULL << 20,
				    &o->console_rate))
				return -1;
			break;
		case OPT_TIMEOUT:
			if (num_opt("timeout", optarg, 1, 7 * 24 * 3600,
				    &o->timeout))
				return -1;
			break;
		case OPT_SNAPOUT: o->snapshot_out = optarg; break;
		case OPT_RESTORE: o->restore = optarg; break;
		case OPT_CKPTDIR: o->checkpoint_dir = optarg; break;
		case OPT_TRIM_EVERY:
			if (num_opt("trim-every", optarg, 1, 3600,
				    &o->trim_every))
				return -1;
			break;
		case OPT_MERGE_GROUP:
			if (num_opt("merge-group", optarg, 1, UINT64_MAX,
				    &o->merge_group))
				return -1;
			break;
		case OPT_ROLLBACK_KEEP:
			if (num_opt("rollback-keep", optarg, 0, 3072,
				    &o->rollback_keep_mib))
				return -1;
			break;
		case OPT_VERIFY: o->verify_memory = true; break;
		case OPT_NOCUBE: o->no_cube = true; break;
		case OPT_CONTROL: o->control = optarg; break;
		case OPT_ID: o->id = optarg; break;
		case OPT_NOSECCOMP: o->no_seccomp = true; break;
		case OPT_NOCGROUP: o->no_cgroup = true; break;
		case OPT_STATS: o->stats = true; break;
		case OPT_JAIL_USER:
			if (parse_ids(optarg, &o->jail_uid, &o->jail_gid))
				return -1;
			break;
		case OPT_JAIL_ROOT: o->jail_root = optarg; break;
		case 'v': vmm_verbose = 1; break;
		case 'h': usage(stdout); exit(EXIT_OK);
		default: return -1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!o->kernel == !o->restore) {
		pr_err("give exactly one of --kernel and --restore");
		return -1;
	}
	if (o->restore && (o->initrd || o->cmdline || o->append)) {
		pr_err("--initrd, --cmdline and --append need --kernel");
		return -1;
	}
	if (o->verify_memory && !o->restore) {
		pr_err("--verify-memory needs --restore");
		return -1;
	}
	if (o->net_mac && o->net_tap_fd < 0) {
		pr_err("--net-mac needs --net-tap-fd");
		return -1;
	}
	if (o->net_mac && o->restore) {
		pr_err("--net-mac: a restored guest keeps the snapshot's MAC");
		return -1;
	}
	if (o->disk && o->disk_fd >= 0) {
		pr_err("give one of --disk and --disk-fd, not both");
		return -1;
	}
	if (o->no_cube && !o->restore) {
		pr_err("--no-cube needs --restore");
		return -1;
	}
	/* like --trim-every, nothing to do on a restore that is no clone */
	if (o->merge_group && !o->restore) {
		pr_err("--merge-group needs --restore");
		return -1;
	}
	if (!o->jail_root != !o->jail_uid) {
		pr_err("--jail-user and --jail-root go together");
		return -1;
	}
	if (o->jail_root && o->jail_root[0] != '/') {
		pr_err("--jail-root: '%s' is not an absolute path", o->jail_root);
		return -1;
	}
	if (o->jail_root && o->checkpoint_dir) {
		pr_err("--checkpoint-dir: a jailed VMM opens no file by name (checkpoint requests pass their files)");
		return -1;
	}
	return 0;
}

static void *map_file(const char *path, size_t *len, const char *what)
{
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("cannot open %s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size) {
		pr_err("%s %s is not a non-empty regular file", what, path);
		close(fd);
		return NULL;
	}
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		pr_err("cannot map %s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	*len = st.st_size;
	return p;
}

/*
 * The writable disk, before the jail: --disk PATH opened (no symlink),
 * or the inherited --disk-fd made close-on-exec; checked either way.
 */
static int open_disk(struct vmm *m)
{
	struct opts *o = &m->o;
	const char *err = NULL;
	char what[64];
	int fd;

	if (o->disk) {
		fd = open(o->disk, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			pr_err("--disk %s: %s", o->disk,
			       errno == ELOOP ? "is a symbolic link" :
			       strerror(errno));
			return -1;
		}
		snprintf(what, sizeof(what), "--disk %s", o->disk);
		o->disk_fd = fd;
	} else {
		snprintf(what, sizeof(what), "--disk-fd %d", o->disk_fd);
		if (fcntl(o->disk_fd, F_SETFD, FD_CLOEXEC)) {
			pr_err("%s: not an open file descriptor", what);
			o->disk_fd = -1;
			return -1;
		}
	}
	if (virtio_blk_disk_check(o->disk_fd, &m->disk_size, &err)) {
		pr_err("%s: %s", what, err);
		return -1;
	}
	return 0;
}

static int create_net(struct vmm *m, const uint8_t mac[6])
{
	struct vm *vm = &m->vm;
	const char *err = NULL;
	int fd = m->o.net_tap_fd;

	m->o.net_tap_fd = -1;	/* the device owns it now */
	vm->devs[VM_DEV_NET] = virtio_net_create(vm, VM_MMIO_BASE +
			VM_DEV_NET * VM_MMIO_STRIDE,
			VM_VIRTIO_IRQ_BASE + VM_DEV_NET, fd, mac, &err);
	if (!vm->devs[VM_DEV_NET]) {
		pr_err("virtio-net: %s", err);
		return -1;
	}
	return 0;
}

static int create_devices(struct vmm *m, const char *rootfs,
			  const uint8_t *mac)
{
	struct vm *vm = &m->vm;
	const char *err = NULL;

	vm->devs[VM_DEV_VSOCK] = vsock_create(vm, VM_MMIO_BASE +
			VM_DEV_VSOCK * VM_MMIO_STRIDE,
			VM_VIRTIO_IRQ_BASE + VM_DEV_VSOCK, m->o.cid,
			m->o.vsock_uds, &err);
	if (!vm->devs[VM_DEV_VSOCK]) {
		pr_err("virtio-vsock: %s", err ? err : "cannot create");
		return -1;
	}
	if (m->o.vsock_broker_fd >= 0) {
		int type = 0;
		socklen_t tl = sizeof(type);

		if (getsockopt(m->o.vsock_broker_fd, SOL_SOCKET, SO_TYPE, &type,
			       &tl) || type != SOCK_SEQPACKET) {
			pr_err("--vsock-connect-fd %d: not a SOCK_SEQPACKET socket",
			       m->o.vsock_broker_fd);
			return -1;
		}
		vsock_set_broker(vm->devs[VM_DEV_VSOCK], m->o.vsock_broker_fd);
		m->o.vsock_broker_fd = -1;	/* the device's now */
	}
	vm->devs[VM_DEV_RNG] = virtio_rng_create(vm, VM_MMIO_BASE +
			VM_DEV_RNG * VM_MMIO_STRIDE,
			VM_VIRTIO_IRQ_BASE + VM_DEV_RNG);
	if (!vm->devs[VM_DEV_RNG]) {
		pr_err("virtio-rng: out of memory");
		return -1;
	}
	if (rootfs) {
		vm->devs[VM_DEV_BLK] = virtio_blk_create(vm, VM_MMIO_BASE +
				VM_DEV_BLK * VM_MMIO_STRIDE,
				VM_VIRTIO_IRQ_BASE + VM_DEV_BLK, rootfs, &err);
		if (!vm->devs[VM_DEV_BLK]) {
			pr_err("--rootfs %s: %s", rootfs, err);
			return -1;
		}
	}
	if (mac && create_net(m, mac))
		return -1;
	if (m->o.disk_fd >= 0) {
		int fd = m->o.disk_fd;

		m->o.disk_fd = -1;	/* the device owns it now */
		vm->devs[VM_DEV_DISK] = virtio_blk_create_disk(vm,
				VM_MMIO_BASE + VM_DEV_DISK * VM_MMIO_STRIDE,
				VM_VIRTIO_IRQ_BASE + VM_DEV_DISK, fd,
				m->disk_size);
		if (!vm->devs[VM_DEV_DISK]) {
			pr_err("virtio-blk (disk): out of memory");
			return -1;
		}
	}
	return 0;
}

static int boot_kernel(struct vmm *m)
{
	struct acpi_mmio_dev adevs[VM_MAX_DEVS];
	struct boot_image img = { 0 };
	const char *err = NULL;
	char *cmdline = NULL;
	uint64_t entry;
	int i, n = 0, ret = -1;

	img.kernel = map_file(m->o.kernel, &img.kernel_size, "kernel");
	if (!img.kernel)
		return -1;
	if (m->o.initrd) {
		img.initrd = map_file(m->o.initrd, &img.initrd_size, "initrd");
		if (!img.initrd)
			goto out;
	}
	if (asprintf(&cmdline, "%s%s%s",
		     m->o.cmdline ? m->o.cmdline : DEFAULT_CMDLINE,
		     m->o.append ? " " : "", m->o.append ? m->o.append : "") < 0) {
		cmdline = NULL;
		goto out;
	}
	img.cmdline = cmdline;
	if (boot_load_linux(&m->vm.mem, &img, &entry, &err)) {
		pr_err("%s: %s", m->o.kernel, err);
		goto out;
	}
	for (i = 0; i < VM_MAX_DEVS; i++) {
		struct virtio_mmio *t = m->vm.devs[i];

		if (!t)
			continue;
		adevs[n].base = t->base;
		adevs[n].size = VM_MMIO_SIZE;
		adevs[n].irq = t->irq;
		n++;
	}
	if (acpi_build(&m->vm.mem, BOOT_ACPI_ADDR, 0x100000, m->vm.nr_vcpus,
		       adevs, n)) {
		pr_err("cannot build the ACPI tables");
		goto out;
	}
	for (i = 0; i < m->vm.nr_vcpus; i++) {
		ret = boot_setup_vcpu(&m->vm.vcpus[i], entry);
		if (ret) {
			pr_err("vCPU %d setup: %s", i, strerror(-ret));
			goto out;
		}
	}
	ret = 0;
out:
	free(cmdline);
	if (img.kernel)
		munmap((void *)img.kernel, img.kernel_size);
	if (img.initrd)
		munmap((void *)img.initrd, img.initrd_size);
	return ret;
}

/* The files a snapshot request passed: regular, writable, three apart. */
static const char *check_snapshot_fds(const int *fds, int nfds)
{
	if (nfds != SNAP_FDS)
		return "pass the state, memory and disk files, three descriptors";
	return check_rw_files(fds, nfds);
}

/*
 * "snapshot [DIR]": into DIR, or into the state, memory and disk files
 * passed with the request (@fds).  A jailed VMM names and opens nothing:
 * only the second form.
 */
static void do_snapshot(struct vmm *m, const char *dir, const int *fds,
			int nfds, char *reply, size_t len)
{
	char err[256];
	bool was_paused = m->paused;
	struct timespec a, b;
	const char *bad;
	int ret;

	if (nfds && dir) {
		snprintf(reply, len, "ERR give a directory or pass the files, not both");
		return;
	}
	if (nfds && (bad = check_snapshot_fds(fds, nfds))) {
		snprintf(reply, len, "ERR %s", bad);
		return;
	}
	if (!nfds && !dir)
		dir = m->o.snapshot_out;
	if (!nfds && (!dir || !*dir)) {
		snprintf(reply, len, "ERR no snapshot directory (give one, pass the files or --snapshot-out)");
		return;
	}
	if (!nfds && m->o.jail_root) {
		snprintf(reply, len, "ERR a jailed VMM writes a snapshot only into files passed with the request");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (!was_paused)
		vm_pause(&m->vm);
	if (nfds)
		ret = snapshot_save_files(&m->vm, &m->cfg, fds, err, sizeof(err));
	else
		ret = snapshot_save(&m->vm, &m->cfg, dir, err, sizeof(err));
	if (ret)
		snprintf(reply, len, "ERR snapshot: %s", err);
	else {
		clock_gettime(CLOCK_MONOTONIC, &b);
		snprintf(reply, len, "OK snapshot %s %ld ms", dir ? dir : "(files)",
			 (b.tv_sec - a.tv_sec) * 1000 +
			 (b.tv_nsec - a.tv_nsec) / 1000000);
	}
	if (!was_paused)
		vm_resume(&m->vm);
}

/*
 * "status": run state, size, VM exits and, for a restore onto a cube.ko
 * clone, the clone's counters: what the host paid for this sandbox's
 * memory (faults handled, private copies, private pages).
 */
static void status_reply(struct vmm *m, char *reply, size_t len)
{
	struct cube_clone_counters cc;
	int n;

	n = snprintf(reply, len, "OK %s vcpus=%d mem=%llu exits=%lu",
		     m->paused ? "paused" : "running", m->vm.nr_vcpus,
		     (unsigned long long)(m->vm.mem.size >> 20),
		     vm_total_exits(&m->vm));
	if (n >= 0 && (size_t)n < len && m->mem_shared && m->mem_fd >= 0 &&
	    !ioctl(m->mem_fd, CUBE_IOC_CLONE_COUNTERS, &cc))
		n += snprintf(reply + n, len - n,
			      " clone_faults=%llu clone_cow_faults=%llu clone_private_pages=%llu clone_around=%llu",
			      (unsigned long long)cc.faults,
			      (unsigned long long)cc.cow_faults,
			      (unsigned long long)cc.private_pages,
			      (unsigned long long)cc.around);
	if (n >= 0 && (size_t)n < len)
		snprintf(reply + n, len - n,
			 " checkpoints=%u rollbacks=%lu trims=%lu trimmed=%llu merged=%llu",
			 m->ck.nr, m->ck.rollbacks, m->trims,
			 (unsigned long long)m->trimmed,
			 (unsigned long long)m->merged);
}

/*
 * "trim": the clone gives back the private pages that hold the snapshot's
 * contents again (CUBE_IOC_CLONE_TRIM) and, with --merge-group, shares
 * those its group's clones hold too (CUBE_IOC_CLONE_MERGE); safe while the
 * guest runs.
 */
static void trim_reply(struct vmm *m, char *reply, size_t len)
{
	struct cube_clone_merge mg = { .group = m->o.merge_group };
	struct cube_clone_trim tr = { 0 };
	uint64_t t0 = now_us();

	if (!m->mem_shared || m->mem_fd < 0) {
		snprintf(reply, len, "ERR trim needs guest memory on a cube.ko clone");
		return;
	}
	if (ioctl(m->mem_fd, CUBE_IOC_CLONE_TRIM, &tr)) {
		snprintf(reply, len, "ERR trim: CUBE_IOC_CLONE_TRIM: %s",
			 strerror(errno));
		return;
	}
	m->trim_left = tr.scanned - tr.dropped;
	m->trims++;
	m->trimmed += tr.dropped;
	if (mg.group && ioctl(m->mem_fd, CUBE_IOC_CLONE_MERGE, &mg)) {
		snprintf(reply, len, "ERR trim: CUBE_IOC_CLONE_MERGE: %s",
			 strerror(errno));
		return;
	}
	m->trim_left -= mg.merged + mg.promoted;
	m->merged += mg.merged + mg.promoted;
	snprintf(reply, len, "OK trim scanned=%llu dropped=%llu merged=%llu promoted=%llu us=%llu",
		 (unsigned long long)tr.scanned,
		 (unsigned long long)tr.dropped,
		 (unsigned long long)mg.merged,
		 (unsigned long long)mg.promoted,
		 (unsigned long long)(now_us() - t0));
}

/*
 * --trim-every: the guest has settled when its private pages grew by less
 * than this in one period, and is trimmed then if it made at least this
 * much its own since the last trim.
 */
#define TRIM_SETTLED		((64 << 10) / 4096)

/*
 * (Re)start --trim-every's period: at the start, on a tick that found the
 * guest busy, and from the vsock thread on each new connection (a
 * command, a file, a guest's connect), the one sign of work an idle
 * sandbox's VMM sees; the guest is looked at a period after the last.
 */
static int trim_arm_fd(int fd, uint64_t seconds)
{
	struct itimerspec its = { .it_value.tv_sec = seconds };

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static void trim_arm(void *arg)
{
	struct vmm *m = arg;

	trim_arm_fd(m->trim_fd, m->o.trim_every);
}

/*
 * --trim-every's tick: while the guest's private pages grow, another
 * period; once they settle, one trim if they grew since the last, and no
 * tick more until trim_arm().  An idle sandbox's VMM is not woken again.
 */
static void trim_tick(struct vmm *m)
{
	struct cube_clone_counters cc;
	char reply[128];
	uint64_t cnt, seen;

	if (read(m->trim_fd, &cnt, sizeof(cnt)) < 0) {
		/* spurious */
	}
	if (m->mem_fd < 0 || ioctl(m->mem_fd, CUBE_IOC_CLONE_COUNTERS, &cc))
		return;
	seen = m->trim_seen;
	m->trim_seen = cc.private_pages;
	if (cc.private_pages < m->trim_left)
		m->trim_left = cc.private_pages;	/* after a rollback */
	if (cc.private_pages >= seen + TRIM_SETTLED) {
		trim_arm(m);				/* still busy */
		return;
	}
	if (cc.private_pages < m->trim_left + TRIM_SETTLED)
		return;
	trim_reply(m, reply, sizeof(reply));
	m->trim_seen = m->trim_left;
	pr_info("--trim-every: %s", reply);
}

/* pid 1 of its namespace ignores a default-action SIGALRM: the backstop */
static void backstop(int sig)
{
	(void)sig;
	_exit(EXIT_TIMEOUT);
}

/*
 * --jail-user/--jail-root: the sandbox's own uid and gid, namespaces and
 * root (jail.c); the socket paths become the jail's.  Fails closed.
 */
static int enter_jail(struct vmm *m)
{
	struct jail_user j = {
		.root = m->o.jail_root, .uid = m->o.jail_uid,
		.gid = m->o.jail_gid,
	};
	size_t rl = strlen(m->o.jail_root);
	const char *what = "";
	int ret;

	while (rl > 1 && m->o.jail_root[rl - 1] == '/')
		rl--;
	if ((m->o.vsock_uds && (strncmp(m->o.vsock_uds, m->o.jail_root, rl) ||
				m->o.vsock_uds[rl] != '/')) ||
	    (m->ctl.path && (strncmp(m->ctl.path, m->o.jail_root, rl) ||
			     m->ctl.path[rl] != '/'))) {
		pr_err("--jail-root %s: the vsock and control sockets must be inside it",
		       m->o.jail_root);
		return -EXDEV;
	}
	/*
	 * The root is root's; the jail's group may pass through it (to the
	 * sockets of guest-initiated vsock streams) but not list it or read
	 * what root keeps there (the logs), nor may anyone else.
	 */
	if (chown(m->o.jail_root, 0, j.gid) || chmod(m->o.jail_root, 0710)) {
		ret = -errno;
		pr_err("cannot set up the jail (the root's owner and mode): %s",
		       strerror(-ret));
		return ret;
	}
	ret = jail_enter(&j, &what);
	if (ret) {
		pr_err("cannot set up the jail (%s): %s", what, strerror(-ret));
		return ret;
	}
	vsock_rebase(m->vm.devs[VM_DEV_VSOCK], rl);
	if (m->ctl.path)
		memmove(m->ctl.path, m->ctl.path + rl, strlen(m->ctl.path + rl) + 1);
	/* its sockets' files are the run directory's, root's to remove */
	m->ctl.keep_path = true;
	if (getpid() == 1)
		signal(SIGALRM, backstop);
	pr_info("jailed: uid %u gid %u, root %s", (unsigned)m->o.jail_uid,
		(unsigned)m->o.jail_gid, m->o.jail_root);
	return 0;
}

static void control_request(void *arg, char *req, const int *fds, int nfds,
			    char *reply, size_t len)
{
	struct vmm *m = arg;
	char *cmd = strtok(req, " "), *a1 = strtok(NULL, " ");
	bool more = a1 && strtok(NULL, " ");

	if (!cmd) {
		snprintf(reply, len, "ERR empty request");
	} else if (!strcmp(cmd, "pause") && !a1) {
		if (!m->paused)
			vm_pause(&m->vm);
		m->paused = true;
		snprintf(reply, len, "OK paused");
	} else if (!strcmp(cmd, "resume") && !a1) {
		if (m->paused)
			vm_resume(&m->vm);
		m->paused = false;
		snprintf(reply, len, "OK running");
	} else if (!strcmp(cmd, "snapshot") && !more) {
		do_snapshot(m, a1, fds, nfds, reply, len);
	} else if (!strcmp(cmd, "stop") && !a1) {
		vm_request_exit(&m->vm, VM_EXIT_STOP, "stop request");
		snprintf(reply, len, "OK stopping");
	} else if (!strcmp(cmd, "status") && !a1) {
		status_reply(m, reply, len);
	} else if (!strcmp(cmd, "trim") && !a1) {
		trim_reply(m, reply, len);
	} else if (!strcmp(cmd, "checkpoint")) {
		ckpt_checkpoint(&m->ck, more ? NULL : a1, fds, nfds, reply,
				len);
	} else if (!strcmp(cmd, "checkpoints") && !a1) {
		ckpt_list(&m->ck, reply, len);
	} else if (!strcmp(cmd, "checkpoint-rm")) {
		ckpt_remove(&m->ck, more ? NULL : a1, reply, len);
	} else if (!strcmp(cmd, "rollback")) {
		ckpt_rollback(&m->ck, more ? "" : a1, reply, len);
	} else {
		snprintf(reply, len, "ERR unknown request '%s'", cmd);
	}
}

static void watch(void *arg, int fd, bool add)
{
	struct vmm *m = arg;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	epoll_ctl(m->epoll_fd, add ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev);
}

static int main_loop(struct vmm *m, int sig_fd, int timer_fd)
{
	struct epoll_event evs[16];

	for (;;) {
		int i, n;

		pthread_mutex_lock(&m->vm.lock);
		n = m->vm.exit;
		pthread_mutex_unlock(&m->vm.lock);
		if (n != VM_RUNNING)
			return 0;
		n = epoll_wait(m->epoll_fd, evs, ARRAY_SIZE(evs), -1);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			uint64_t cnt;

			if (fd == m->vm.event_fd) {
				if (read(fd, &cnt, sizeof(cnt)) < 0) {
					/* spurious */
				}
			} else if (fd == sig_fd) {
				struct signalfd_siginfo si;

				if (read(fd, &si, sizeof(si)) == sizeof(si))
					vm_request_exit(&m->vm, VM_EXIT_STOP,
							"signal %u", si.ssi_signo);
			} else if (fd == m->trim_fd) {
				trim_tick(m);
			} else if (fd == timer_fd) {
				vm_request_exit(&m->vm, VM_EXIT_TIMEOUT,
						"timeout after %llu s",
						(unsigned long long)m->o.timeout);
			} else if (control_owns(&m->ctl, fd)) {
				control_event(&m->ctl, fd, control_request, m);
			}
		}
	}
}

static int setup_restore(struct vmm *m, struct snap_restore *r)
{
	char err[256];
	int ret;

	ret = snapshot_open(r, m->o.restore, m->o.verify_memory, err,
			    sizeof(err));
	if (ret) {
		pr_err("cannot restore %s: %s", m->o.restore, err);
		return -1;
	}
	m->cfg = r->cfg;
	m->o.mem_mib = r->cfg.mem_size >> 20;
	m->o.vcpus = r->cfg.nr_vcpus;
	/*
	 * The disk is the caller's to name: the path a state file records is
	 * never opened (a paused sandbox's state is written by its own VMM).
	 */
	if ((r->cfg.flags & SNAP_CFG_BLK) && !m->o.rootfs) {
		pr_err("the snapshot has a disk (it was %s): give --rootfs IMG",
		       r->cfg.rootfs[0] ? r->cfg.rootfs : "unnamed");
		return -1;
	}
	if (!(r->cfg.flags & SNAP_CFG_BLK) && m->o.rootfs) {
		pr_err("the snapshot has no rootfs: drop --rootfs");
		return -1;
	}
	if ((r->cfg.flags & SNAP_CFG_NET) && m->o.net_tap_fd < 0) {
		pr_err("the snapshot has a network device: give --net-tap-fd");
		return -1;
	}
	if (!(r->cfg.flags & SNAP_CFG_NET) && m->o.net_tap_fd >= 0) {
		pr_err("the snapshot has no network device: drop --net-tap-fd");
		return -1;
	}
	/*
	 * The writable disk is a copy of the snapshot's disk.img the caller
	 * made (never this VMM), as large or larger: a larger one is the
	 * guest's to grow into (a configuration change once it runs).
	 */
	if ((r->cfg.flags & SNAP_CFG_DISK) && m->o.disk_fd < 0) {
		pr_err("the snapshot has a writable disk: give --disk or --disk-fd (a copy of its %s)",
		       CUBE_DISK_FILE);
		return -1;
	}
	if (!(r->cfg.flags & SNAP_CFG_DISK) && m->o.disk_fd >= 0) {
		pr_err("the snapshot has no writable disk: drop --disk/--disk-fd");
		return -1;
	}
	if (m->disk_size && m->disk_size < r->disk.size) {
		pr_err("the disk has %llu bytes, smaller than the snapshot's %llu",
		       (unsigned long long)m->disk_size,
		       (unsigned long long)r->disk.size);
		return -1;
	}
	return 0;
}

/*
 * "rollback" to the restore snapshot puts its disk.img back: opened now,
 * before the jail.  Without it the VM runs, and that rollback is refused.
 */
static void open_restore_disk(struct vmm *m)
{
	struct stat st, live;
	int dfd, fd;

	if (!(m->r.cfg.flags & SNAP_CFG_DISK))
		return;
	dfd = open(m->o.restore, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	fd = openat(dfd, CUBE_DISK_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	close(dfd);
	if (fd < 0) {
		pr_info("%s/%s: %s (no rollback to the restore snapshot)",
			m->o.restore, CUBE_DISK_FILE, strerror(errno));
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != m->r.disk.size) {
		pr_info("%s/%s is not the snapshot's disk (no rollback to the restore snapshot)",
			m->o.restore, CUBE_DISK_FILE);
		close(fd);
		return;
	}
	/* the VM runs on that very file (a resume): it is no restore point */
	if (!fstat(m->o.disk_fd, &live) && live.st_dev == st.st_dev &&
	    live.st_ino == st.st_ino) {
		pr_info("the disk is %s/%s itself (no rollback to the restore snapshot)",
			m->o.restore, CUBE_DISK_FILE);
		close(fd);
		return;
	}
	m->ck.base_disk_fd = fd;
}

/*
 * The guest memory of a restore: a clone fd of DIR's module snapshot
 * (*shared set), or the memory file itself when there is no /dev/cube.
 */
static int restore_mem_fd(struct vmm *m, struct snap_restore *r, bool *shared)
{
	char err[256];
	int fd;

	*shared = false;
	if (m->o.no_cube)
		return r->mem_fd;
	fd = cube_clone_open(m->o.restore, r->mem_fd, r->cfg.mem_size, err,
			     sizeof(err));
	if (fd == -ENODEV) {
		pr_info("no /dev/cube: memory file mapped MAP_PRIVATE");
		return r->mem_fd;
	}
	if (fd < 0) {
		pr_err("cannot restore %s onto a cube clone: %s (--no-cube maps the file)",
		       m->o.restore, err);
		return -1;
	}
	*shared = true;
	/*
	 * The module sandbox reports the memory of the clone attached to it
	 * (netlink, cubectl, the E2B metrics): this one, the guest's.
	 */
	if (m->o.sandbox_fd >= 0) {
		struct cube_fd_arg a = { .fd = fd };

		if (ioctl(m->o.sandbox_fd, CUBE_IOC_SANDBOX_SET_CLONE, &a))
			pr_err("cannot attach the clone to the cube sandbox: %s",
			       strerror(errno));
	}
	return fd;
}

static double elapsed_ms(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1e3 + (b.tv_nsec - a->tv_nsec) / 1e6;
}

static int run(struct vmm *m)
{
	struct snap_restore *r = &m->r;
	struct vm *vm = &m->vm;
	struct epoll_event ev = { .events = EPOLLIN };
	int sig_fd = -1, timer_fd = -1, ret = EXIT_ERROR, i;
	int mem_fd = m->mem_fd;
	bool mem_shared = m->mem_shared;
	uint8_t mac[6] = CUBE_NET_GUEST_MAC_BYTES;
	uint64_t snap_disk = r->disk.size;
	sigset_t sigs;
	char err[256];

	if (m->o.restore)
		memcpy(mac, r->net.mac, sizeof(mac));
	else if (m->o.net_mac && net_parse_mac(m->o.net_mac, mac)) {
		pr_err("--net-mac: '%s' is not a unicast MAC address (xx:xx:xx:xx:xx:xx)",
		       m->o.net_mac);
		goto out;
	}
	if (m->o.net_tap_fd >= 0) {
		const char *terr = NULL;

		if (net_tap_setup(m->o.net_tap_fd, &terr)) {
			pr_err("--net-tap-fd %d: %s", m->o.net_tap_fd, terr);
			goto out;
		}
	}
	if (m->o.console_log) {
		/* read too: at its cap the log's newest half moves down */
		m->console_fd = open(m->o.console_log, O_RDWR | O_CREAT |
				     O_APPEND | O_CLOEXEC, 0644);
		if (m->console_fd < 0) {
			pr_err("cannot open console log %s: %s",
			       m->o.console_log, strerror(errno));
			goto out;
		}
	} else {
		m->console_fd = STDOUT_FILENO;
	}
	/* Signals go to the main loop only; threads inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* the sandbox holds the clone now: the VMM needs its fd no more */
	if (m->o.sandbox_fd >= 0) {
		close(m->o.sandbox_fd);
		m->o.sandbox_fd = -1;
	}
	/*
	 * The mapping holds the clone; its fd stays open only to answer
	 * "status" with the clone's counters (CUBE_IOC_CLONE_COUNTERS).
	 */
	i = vm_create(vm, m->o.mem_mib << 20, m->o.vcpus, mem_fd, mem_shared);
	if (i)
		goto out;
	vm->serial = &m->serial;
	serial_init(&m->serial, vm, m->console_fd);
	serial_set_limits(&m->serial,
			  m->o.console_max ?: SERIAL_DEFAULT_MAX,
			  m->o.console_rate ?: SERIAL_DEFAULT_RATE);
	if (create_devices(m, m->o.rootfs, m->o.net_tap_fd >= 0 ? mac : NULL))
		goto out;
	if (!m->o.restore) {
		m->cfg.mem_size = vm->mem.size;
		m->cfg.nr_vcpus = vm->nr_vcpus;
		m->cfg.guest_cid = m->o.cid;
		if (m->o.rootfs) {
			m->cfg.flags |= SNAP_CFG_BLK;
			m->cfg.blk_size = virtio_blk_size(vm->devs[VM_DEV_BLK]);
			snprintf(m->cfg.rootfs, sizeof(m->cfg.rootfs), "%s",
				 m->o.rootfs);
		}
		if (vm->devs[VM_DEV_NET])
			m->cfg.flags |= SNAP_CFG_NET;
		if (vm->devs[VM_DEV_DISK])
			m->cfg.flags |= SNAP_CFG_DISK;
		if (boot_kernel(m))
			goto out;
	} else {
		if (vm->devs[VM_DEV_BLK] &&
		    virtio_blk_size(vm->devs[VM_DEV_BLK]) != r->cfg.blk_size) {
			pr_err("--rootfs %s: size differs from the snapshot's image",
			       m->o.rootfs);
			goto out;
		}
		m->cfg.guest_cid = m->o.cid;
		if (snapshot_load(vm, r, err, sizeof(err))) {
			pr_err("cannot restore %s: %s", m->o.restore, err);
			goto out;
		}
		/* A rollback loads the state again; the file is not needed. */
		if (mem_shared) {
			close(r->mem_fd);
			r->mem_fd = -1;
			m->ck.base = r;
		} else {
			snapshot_close(r);
		}
	}

	m->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (m->epoll_fd < 0 || sig_fd < 0) {
		pr_err("epoll/signalfd: %s", strerror(errno));
		goto out;
	}
	ev.data.fd = vm->event_fd;
	epoll_ctl(m->epoll_fd, EPOLL_CTL_ADD, vm->event_fd, &ev);
	ev.data.fd = sig_fd;
	epoll_ctl(m->epoll_fd, EPOLL_CTL_ADD, sig_fd, &ev);
	if (m->o.timeout) {
		struct itimerspec its = { .it_value.tv_sec = m->o.timeout };

		timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (timer_fd < 0 || timerfd_settime(timer_fd, 0, &its, NULL)) {
			pr_err("timerfd: %s", strerror(errno));
			goto out;
		}
		ev.data.fd = timer_fd;
		epoll_ctl(m->epoll_fd, EPOLL_CTL_ADD, timer_fd, &ev);
		/* Backstop: whatever hangs, the process dies soon after. */
		alarm(m->o.timeout + 10);
	}
	if (m->o.trim_every && m->mem_shared) {
		m->trim_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (m->trim_fd < 0) {
			pr_err("timerfd: %s", strerror(errno));
			goto out;
		}
		ret = trim_arm_fd(m->trim_fd, m->o.trim_every);
		if (ret) {
			pr_err("timerfd_settime: %s", strerror(-ret));
			goto out;
		}
		ev.data.fd = m->trim_fd;
		epoll_ctl(m->epoll_fd, EPOLL_CTL_ADD, m->trim_fd, &ev);
		/* before vsock_start(): the thread reads it unlocked */
		vsock_set_activity(vm->devs[VM_DEV_VSOCK], trim_arm, m);
	}
	control_set_watch(watch, m);
	if (m->o.control) {
		ret = control_open(&m->ctl, m->o.control);
		if (ret) {
			pr_err("--control %s: %s", m->o.control, strerror(-ret));
			ret = EXIT_ERROR;
			goto out;
		}
	}
	/*
	 * The jail, before any thread starts: threads inherit the limits, no
	 * capabilities and no_new_privs (capabilities are per thread: dropped
	 * after, the threads would keep them).
	 */
	/* Files as big as a snapshot's memory, or as the disk (its copies). */
	ret = jail_rlimits(MAX(vm->mem.size + JAIL_FSIZE_SLACK, m->disk_size));
	if (ret) {
		pr_err("cannot set the resource limits: %s", strerror(-ret));
		ret = EXIT_ERROR;
		goto out;
	}
	if (m->o.jail_root && (ret = enter_jail(m))) {
		ret = EXIT_ERROR;
		goto out;
	}
	/* the new uid cleared the parent-death signal: set again, checked */
	ret = sandbox_watch_parent();
	sandbox_release_parent();
	if (ret) {
		pr_err("the cgroup supervisor is gone: %s", strerror(-ret));
		ret = EXIT_ERROR;
		goto out;
	}
	if ((ret = sandbox_drop_caps())) {
		pr_err("cannot drop capabilities: %s", strerror(-ret));
		ret = EXIT_ERROR;
		goto out;
	}
	/* jailed: no file by name at all (its files are passed to it) */
	if (m->o.jail_root) {
		ret = jail_landlock(-1);
		if (ret < 0) {
			pr_err("cannot set up the jail (Landlock): %s",
			       strerror(-ret));
			ret = EXIT_ERROR;
			goto out;
		}
		if (ret > 0)
			pr_info("no Landlock in this kernel: the jail goes without it");
	}
	if (!m->o.no_seccomp && (ret = jail_vcpu_prepare(vm))) {
		pr_err("cannot build the vCPU seccomp filters: %s (--no-seccomp runs without, for development)",
		       strerror(-ret));
		ret = EXIT_ERROR;
		goto out;
	}
#ifdef CUBE_VMM_TEST_HOOKS
	jail_test_escape(false);
#endif
	ret = EXIT_ERROR;
	if (vsock_start(vm->devs[VM_DEV_VSOCK]) ||
	    (vm->devs[VM_DEV_NET] && virtio_net_start(vm->devs[VM_DEV_NET])) ||
	    vm_start_vcpus(vm)) {
		pr_err("cannot start threads");
		goto out;
	}
	/* every thread's list; each vCPU adds its own before it first runs */
	if (!m->o.no_seccomp &&
	    (ret = sandbox_seccomp(m->mem_shared, !!vm->devs[VM_DEV_DISK],
				   !m->o.jail_root))) {
		pr_err("cannot install the seccomp filter: %s (--no-seccomp runs without, for development)",
		       strerror(-ret));
		ret = EXIT_ERROR;
		goto out;
	}
#ifdef CUBE_VMM_TEST_HOOKS
	jail_test_hook("main", vm->vm_fd);
	jail_test_escape(true);
#endif
	pr_info("%s in %.1f ms", m->o.restore ? "restored" : "set up",
		elapsed_ms(&m->t0));
	vm_go(vm);
	/* Restored onto a larger disk: the guest reads its capacity again. */
	if (m->o.restore && vm->devs[VM_DEV_DISK] && m->disk_size > snap_disk) {
		struct virtio_mmio *t = vm->devs[VM_DEV_DISK];

		pthread_mutex_lock(&t->lock);
		virtio_mmio_config_changed(t);
		pthread_mutex_unlock(&t->lock);
	}
	ret = main_loop(m, sig_fd, timer_fd);
	if (ret)
		vm_request_exit(vm, VM_EXIT_ERROR, "main loop: %s",
				strerror(-ret));

	switch (vm->exit) {
	case VM_EXIT_SHUTDOWN:
	case VM_EXIT_STOP:
		pr_info("VM stopped: %s", vm->exit_msg);
		ret = EXIT_OK;
		break;
	case VM_EXIT_TIMEOUT:
		pr_err("VM killed: %s", vm->exit_msg);
		ret = EXIT_TIMEOUT;
		break;
	default:
		pr_err("VM failed: %s", vm->exit_msg);
		ret = EXIT_ERROR;
		break;
	}
out:
	vm_join_vcpus(vm);
	if (m->o.stats) {
		unsigned long total = vm_total_exits(vm);
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "cube-vmm: stats: exits=%lu wall_ms=%.1f "
			"maxrss_kb=%ld minflt=%ld majflt=%ld\n", total,
			elapsed_ms(&m->t0), ru.ru_maxrss, ru.ru_minflt,
			ru.ru_majflt);
		if (vm->devs[VM_DEV_NET]) {
			struct virtio_net_stats ns;

			virtio_net_get_stats(vm->devs[VM_DEV_NET], &ns);
			fprintf(stderr, "cube-vmm: stats: net rx=%llu rx_dropped=%llu "
				"tx=%llu tx_dropped=%llu\n",
				(unsigned long long)ns.rx_packets,
				(unsigned long long)ns.rx_dropped,
				(unsigned long long)ns.tx_packets,
				(unsigned long long)ns.tx_dropped);
		}
	}
	control_close(&m->ctl);
	vsock_destroy(vm->devs[VM_DEV_VSOCK]);
	virtio_rng_destroy(vm->devs[VM_DEV_RNG]);
	virtio_blk_destroy(vm->devs[VM_DEV_BLK]);
	virtio_net_destroy(vm->devs[VM_DEV_NET]);
	virtio_blk_destroy(vm->devs[VM_DEV_DISK]);
	for (i = 0; i < VM_MAX_DEVS; i++)
		vm->devs[i] = NULL;
	if (vm->serial)
		serial_flush(vm->serial);
	ckpt_fini(&m->ck);
	snapshot_close(r);
	vm_destroy(vm);
	if (mem_shared && m->mem_fd >= 0) {
		close(m->mem_fd);
		m->mem_fd = -1;
	}
	if (sig_fd >= 0)
		close(sig_fd);
	if (timer_fd >= 0)
		close(timer_fd);
	if (m->trim_fd >= 0)
		close(m->trim_fd);
	return ret;
}

int main(int argc, char **argv)
{
	static struct vmm m;
	struct cgroup_limits lim = { 0 };
	int parent_close[9];
	char name[64];
	const char *err = NULL;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &m.t0);
	m.ctl.listen_fd = -1;
	for (ret = 0; ret < CONTROL_MAX_CLIENTS; ret++)
		m.ctl.clients[ret].fd = -1;
	m.epoll_fd = -1;
	m.trim_fd = -1;
	m.r.mem_fd = -1;
	m.ck.base_disk_fd = m.ck.base_spare_fd = -1;
	m.ck.dir_fd = m.ck.dev_fd = -1;
	if (parse_opts(&m.o, argc, argv)) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/*
	 * A restore (a sandbox: many, long-lived) runs without transparent
	 * huge pages: with THP "always" (Debian's default) khugepaged turns
	 * any 2 MiB range of a thread stack or heap that holds one page into
	 * a huge page, 2 MiB of host memory for a few KiB in use.  Its guest
	 * memory is the module's or a snapshot file's, never THP anyway.  A
	 * fresh boot (a template's build: one, short) keeps huge pages for
	 * its anonymous guest memory, which faults in 2 MiB at a time.
	 */
	if (m.o.restore && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		pr_err("PR_SET_THP_DISABLE: %s (huge pages may inflate this VMM)",
		       strerror(errno));
	/*
	 * Development on a host without cgroup v2 or seccomp: the whole
	 * stack (cubectl, cubed, cube-shim) passes its environment down.
	 */
	if (getenv("CUBE_NO_JAIL") && !strcmp(getenv("CUBE_NO_JAIL"), "1")) {
		m.o.no_cgroup = m.o.no_seccomp = true;
		m.o.jail_root = NULL;
		m.o.jail_uid = m.o.jail_gid = 0;
		pr_err("CUBE_NO_JAIL=1: no cgroup, no seccomp, no jail user (development only)");
	}
	/* nothing a supervisor left open reaches the VM: stdio and ours only */
	{
		int keep[5] = { m.o.net_tap_fd, m.o.sandbox_fd, m.o.disk_fd,
				m.o.vsock_broker_fd, m.o.parent_fd };

		ret = jail_close_fds(keep, 5);
		if (ret) {
			pr_err("cannot close inherited file descriptors: %s",
			       strerror(-ret));
			return EXIT_ERROR;
		}
	}
	/* the supervisor that started us, watched as our own would be */
	if (m.o.parent_fd >= 0)
		sandbox_set_parent(m.o.parent_fd);
	/*
	 * A restore's shape (and so its limits) is the snapshot's.  Its
	 * memory is set up before the cgroup too: the first restore of a
	 * directory makes the module snapshot, whose pages are charged to
	 * the cgroup of the task that makes it; they are the template's, to
	 * be shared by every clone, not this sandbox's to pay for.
	 */
	if ((m.o.disk || m.o.disk_fd >= 0) && open_disk(&m))
		return EXIT_ERROR;
	m.mem_fd = -1;
	if (m.o.restore) {
		if (setup_restore(&m, &m.r))
			return EXIT_ERROR;
		open_restore_disk(&m);
		m.mem_fd = restore_mem_fd(&m, &m.r, &m.mem_shared);
		if (m.mem_fd < 0)
			return EXIT_ERROR;
	}
	m.ck.vm = &m.vm;
	m.ck.cfg = &m.cfg;
	m.ck.mem_fd = &m.mem_fd;
	m.ck.mem_shared = m.mem_shared;
	m.ck.paused = &m.paused;
	m.ck.keep_pages = m.o.rollback_keep_mib == UINT64_MAX ? UINT64_MAX :
			  m.o.rollback_keep_mib << (20 - 12);
	/* once jailed, it may not clone root's restore snapshot itself */
	m.ck.want_spare = m.o.jail_root;
	{
		char err2[256];

		if (ckpt_init(&m.ck, m.o.checkpoint_dir, err2, sizeof(err2))) {
			pr_err("%s", err2);
			return EXIT_ERROR;
		}
	}
	if (!m.o.no_cgroup) {
		snprintf(name, sizeof(name), "cube-vmm-%d", (int)getpid());
		lim.name = m.o.id ? m.o.id : name;
		lim.cpu_quota_us = m.o.vcpus * 100000;
		/* Guest memory plus the VMM's own (buffers, page tables). */
		lim.memory_max = (m.o.mem_mib << 20) + (128ULL << 20);
		lim.pids_max = m.o.vcpus + 16;
		/* the VM's, not the supervisor's to hold while it waits */
		parent_close[0] = m.o.sandbox_fd;
		parent_close[1] = m.mem_shared ? m.mem_fd : -1;
		parent_close[2] = m.r.mem_fd;
		parent_close[3] = m.ck.dir_fd;
		parent_close[4] = m.ck.dev_fd;
		parent_close[5] = m.o.disk_fd;
		parent_close[6] = m.ck.base_disk_fd;
		parent_close[7] = m.ck.base_spare_fd;
		parent_close[8] = m.o.vsock_broker_fd;
		lim.parent_close = parent_close;
		lim.nr_parent_close = ARRAY_SIZE(parent_close);
		/* the VM process: pid 1 of a namespace of its own */
		if (m.o.parent_fd >= 0) {
			/* made so by the supervisor that started us */
			if (m.o.jail_root && getpid() != 1) {
				pr_err("--parent-fd: the jail needs this process to be pid 1 of a pid namespace of its own");
				return EXIT_ERROR;
			}
			ret = sandbox_cgroup_join(&lim, &err);
		} else if (m.o.jail_root && (ret = jail_pid_ns())) {
			pr_err("cannot set up the jail (a new pid namespace): %s",
			       strerror(-ret));
			return EXIT_ERROR;
		} else {
			ret = sandbox_cgroup_enter(&lim, &err);
		}
		if (ret < 0) {
			pr_err("cgroup: %s: %s", err, strerror(-ret));
			return EXIT_ERROR;
		}
		/* fail closed: no VM without its cpu and memory bounds */
		if (ret > 0) {
			pr_err("cgroup: /sys/fs/cgroup is not a writable cgroup v2 mount, so the VM's cpu and memory cannot be bounded (--no-cgroup runs without, for development)");
			return EXIT_ERROR;
		}
	}
	return run(&m);
}
