// SPDX-License-Identifier: GPL-2.0
/*
 * init.c: the guest side of the agent as PID 1.  Mounts the kernel
 * filesystems, loads the modules the Debian cloud kernel needs from the
 * initramfs, configures the sandbox network when there is a network card
 * (net.c), mounts the read-only root image with an overlay over a writable
 * layer (a tmpfs, or the sandbox's writable disk: disk.c), makes the merged
 * tree the root and names the sandbox's resolver in its /etc/resolv.conf
 * (and localhost in /etc/hosts if the image has none).
 *
 * Kernel command line (all optional):
 *   cube.root=/dev/vda        the root image's block device
 *   cube.rootfstype=ext4      its filesystem (else ext4, erofs, squashfs)
 *   cube.disk=1               the writable layer is the disk with serial
 *                             cube-disk (disk.c), not a tmpfs
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define STAGE		"/cube"
#define LOWER		STAGE "/lower"
#define RW		STAGE "/rw"
#define NEWROOT		STAGE "/root"
#define DEVICE_WAIT_MS	20000

static int mount_at(const char *src, const char *dir, const char *type,
		    unsigned long flags, const char *data)
{
	mkdir(dir, 0755);
	if (mount(src, dir, type, flags, data) < 0) {
		int err = -errno;

		agent_log("mount %s on %s (%s): %s", src, dir, type, strerror(errno));
		return err;
	}
	return 0;
}

static void cmdline_value(const char *cmdline, const char *key, char *out,
			  size_t len, const char *def)
{
	size_t klen = strlen(key);
	const char *p = cmdline;

	snprintf(out, len, "%s", def);
	while (p && *p) {
		size_t w;

		p += strspn(p, " \n");
		w = strcspn(p, " \n");
		if (w > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			snprintf(out, len, "%.*s", (int)(w - klen - 1), p + klen + 1);
			return;
		}
		p += w;
	}
}

static int wait_for(const char *path)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	int i;

	for (i = 0; i < DEVICE_WAIT_MS / 5; i++) {
		if (!access(path, F_OK))
			return 0;
		nanosleep(&ts, NULL);
	}
	agent_log("%s did not appear in %d ms", path, DEVICE_WAIT_MS);
	return -ENODEV;
}

static int mount_lower(const char *dev, const char *fstype)
{
	static const char *const types[] = { "ext4", "erofs", "squashfs", NULL };
	const char *const *t;

	mkdir(LOWER, 0755);
	if (fstype[0])
		return mount_at(dev, LOWER, fstype, MS_RDONLY, NULL);
	for (t = types; *t; t++)
		if (!mount(dev, LOWER, *t, MS_RDONLY, NULL))
			return 0;
	agent_log("cannot mount %s as ext4, erofs or squashfs", dev);
	return -EINVAL;
}

static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	strcpy(ifr.ifr_name, "lo");
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

/* @disk: the upper layer is the writable disk (disk.c), else a tmpfs */
static int switch_root(struct agent_config *cfg, bool disk)
{
	int err;

	if (disk)
		err = disk_mount(cfg, RW);
	else
		err = mount_at("none", RW, "tmpfs", MS_NOSUID | MS_NODEV,
			       "mode=0755");
	if (err)
		return err;
	mkdir(RW "/upper", 0755);
	mkdir(RW "/work", 0755);
	err = mount_at("overlay", NEWROOT, "overlay", 0,
		       "lowerdir=" LOWER ",upperdir=" RW "/upper,workdir=" RW "/work");
	if (err)
		return err;
	mkdir(NEWROOT "/proc", 0555);
	mkdir(NEWROOT "/sys", 0555);
	mkdir(NEWROOT "/dev", 0755);
	if (mount("/proc", NEWROOT "/proc", NULL, MS_MOVE, NULL) < 0 ||
	    mount("/sys", NEWROOT "/sys", NULL, MS_MOVE, NULL) < 0 ||
	    mount("/dev", NEWROOT "/dev", NULL, MS_MOVE, NULL) < 0) {
		err = -errno;
		agent_log("moving /proc, /sys, /dev: %s", strerror(errno));
		return err;
	}
	mount_at("devpts", NEWROOT "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		 "mode=0620,ptmxmode=0666");
	mount_at("tmpfs", NEWROOT "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	mount_at("tmpfs", NEWROOT "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	mount_at("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	if (chdir(NEWROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 ||
	    chroot(".") < 0 || chdir("/") < 0) {
		err = -errno;
		agent_log("switching to the new root: %s", strerror(errno));
		return err;
	}
	return 0;
}

/**
 * init_guest() - prepare the guest as its PID 1
 * @cfg: receives the root, state directory and readiness
 *
 * On failure the agent still serves, from the initramfs, with ready = 0,
 * so the host can see what went wrong.
 *
 * Return: 0, or a negative errno (already logged).
 */
int init_guest(struct agent_config *cfg)
{
	char cmdline[4096] = "", dev[256], fstype[32], ifname[IFNAMSIZ];
	char disk[8];
	const char *what = NULL;
	ssize_t n;
	int fd, err, net;

	mount_at("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_at("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	mount_at("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	mount_at("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	if (fcntl(0, F_GETFD) < 0) {
		fd = open("/dev/console", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			if (fd > 2)
				close(fd);
		}
	}
	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, cmdline, sizeof(cmdline) - 1);
		cmdline[n > 0 ? n : 0] = 0;
		close(fd);
	}
	err = modules_load(cmdline);
	if (err)
		agent_log("loading modules: %s", strerror(-err));
	loopback_up();
	net = net_setup(ifname, &what);
	if (net < 0)
		agent_log("network %s: %s: %s", ifname, what, strerror(-net));
	cfg->root = "/";
	cfg->state = "/run/cube";
	cmdline_value(cmdline, "cube.root", dev, sizeof(dev), "/dev/vda");
	cmdline_value(cmdline, "cube.rootfstype", fstype, sizeof(fstype), "");
	cmdline_value(cmdline, "cube.disk", disk, sizeof(disk), "0");
	err = wait_for(dev);
	if (!err)
		err = mount_lower(dev, fstype);
	if (!err)
		err = switch_root(cfg, !strcmp(disk, "1"));
	if (err) {
		cfg->state = "/tmp";
		return err;
	}
	mkdir("/run/cube", 0755);
	if (net > 0) {
		err = net_write_resolv("/");
		if (err)
			agent_log("writing /etc/resolv.conf: %s", strerror(-err));
		err = net_write_hosts("/");
		if (err)
			agent_log("writing /etc/hosts: %s", strerror(-err));
	}
	cfg->ready = true;
	return 0;
}
