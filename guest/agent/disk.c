// SPDX-License-Identifier: GPL-2.0
/*
 * disk.c: the sandbox's writable disk, when its template has one.
 *
 * The host gives the guest a second virtio-blk device, serial "cube-disk",
 * holding an ext4 file system that the root's overlay uses as its upper
 * (writable) layer: what the sandbox writes goes to that disk, not to guest
 * memory, and a full disk is ENOSPC inside the guest.  A sandbox created with
 * a larger disk than its template's gets a device of that size after its
 * restore; the host then asks (CUBE_MSG_DISK_GROW) for the file system to be
 * grown online to fill it.
 *
 * Kernel command line: cube.disk=1 says the device exists (the agent waits
 * for it as for the root image).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define DISK_SERIAL		"cube-disk"
#define DISK_WAIT_MS		20000
#define DISK_GROW_WAIT_MS	5000
/* <linux/ext4.h> is not a uapi header everywhere: the ioctl's number */
#ifndef EXT4_IOC_RESIZE_FS
#define EXT4_IOC_RESIZE_FS	_IOW('f', 16, uint64_t)
#endif

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The virtio-blk device whose serial is cube-disk, as "vdX"; 0 or -ENOENT. */
static int find_device(char *name, size_t len)
{
	struct dirent *de;
	int ret = -ENOENT;
	DIR *d = opendir("/sys/block");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[300], serial[32] = "";
		ssize_t n;
		int fd;

		if (strncmp(de->d_name, "vd", 2))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/serial", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, serial, sizeof(serial) - 1);
		close(fd);
		serial[n > 0 ? n : 0] = 0;
		serial[strcspn(serial, "\n")] = 0;
		if (!strcmp(serial, DISK_SERIAL) && strlen(de->d_name) < len) {
			strcpy(name, de->d_name);
			ret = 0;
			break;
		}
	}
	closedir(d);
	return ret;
}

/* The device's capacity in bytes, 0 if unknown. */
static uint64_t device_bytes(const char *name)
{
	char path[300], buf[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/block/%s/size", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strtoull(buf, NULL, 10) * 512;
}

/**
 * disk_mount() - mount the writable disk for the root's upper layer
 * @cfg: receives the device's name and an fd on the mounted file system
 * @dir: where to mount it
 *
 * Return: 0, or a negative errno (logged).
 */
int disk_mount(struct agent_config *cfg, const char *dir)
{
	char dev[64 + 8];
	int i, err = -ENOENT;

	for (i = 0; i < DISK_WAIT_MS / 5 && err; i++) {
		err = find_device(cfg->disk_dev, sizeof(cfg->disk_dev));
		if (err)
			sleep_ms(5);
	}
	if (err) {
		agent_log("no disk with serial %s appeared in %d ms",
			  DISK_SERIAL, DISK_WAIT_MS);
		return err;
	}
	snprintf(dev, sizeof(dev), "/dev/%s", cfg->disk_dev);
	for (i = 0; i < DISK_WAIT_MS / 5 && access(dev, F_OK); i++)
		sleep_ms(5);
	mkdir(dir, 0755);
	/*
	 * noinit_itable: the host made the file system with its inode tables
	 * left unwritten (they cost nothing on the host while sparse); the
	 * kernel must not zero them behind the guest's back.  discard: what
	 * the guest deletes is given back to the host.
	 */
	if (mount(dev, dir, "ext4", MS_NOSUID | MS_NODEV,
		  "noinit_itable,discard") < 0) {
		err = -errno;
		agent_log("mount %s on %s (ext4): %s", dev, dir, strerror(errno));
		return err;
	}
	cfg->disk_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfg->disk_fd < 0) {
		err = -errno;
		agent_log("opening %s: %s", dir, strerror(errno));
		return err;
	}
	return 0;
}

/* CUBE_MSG_DISK_GROW: SIZE -> OK | ERROR */
int disk_request(struct session *s, const struct cube_wire_msg *m)
{
	uint64_t size = cube_wire_u64(m->first[CUBE_ATTR_SIZE]), have = 0;
	uint64_t blocks;
	struct statfs sf;
	int i;

	if (!s->cfg->allow_system)
		return session_send_error(s, m->id, EPERM,
					  "disk changes are disabled (not the guest's init)");
	if (s->cfg->disk_fd < 0)
		return session_send_error(s, m->id, ENODEV,
					  "this sandbox has no writable disk");
	if (!size || size % 4096)
		return session_send_error(s, m->id, EINVAL,
					  "a disk size is a multiple of 4096 bytes");
	/* the device learns its new capacity from a configuration interrupt */
	for (i = 0; i <= DISK_GROW_WAIT_MS / 10; i++) {
		have = device_bytes(s->cfg->disk_dev);
		if (have >= size)
			break;
		sleep_ms(10);
	}
	if (have < size)
		return session_send_error(s, m->id, ENOSPC,
					  "the disk's device has %llu bytes, not %llu",
					  (unsigned long long)have,
					  (unsigned long long)size);
	if (fstatfs(s->cfg->disk_fd, &sf) < 0 || !sf.f_bsize)
		return session_send_error(s, m->id, errno ? errno : EIO,
					  "statfs of the disk: %s", strerror(errno));
	blocks = size / sf.f_bsize;
	if (ioctl(s->cfg->disk_fd, EXT4_IOC_RESIZE_FS, &blocks) < 0)
		return session_send_error(s, m->id, errno,
					  "growing the disk's file system to %llu blocks: %s",
					  (unsigned long long)blocks, strerror(errno));
	return session_send_ok(s, m->id);
}
