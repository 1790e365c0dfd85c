// SPDX-License-Identifier: GPL-2.0
/* Checkpoints and in-place rollbacks; see checkpoint.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/cube.h>

#include "checkpoint.h"
#include "cube_disk.h"
#include "devices.h"
#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"
#include "vsock.h"

/* The target of "rollback" without a name (no checkpoint is named so). */
#define BASE_TARGET	"@restore"

static int serr(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int serr(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* A new clone fd of the restore snapshot, or -errno. */
static int base_clone(struct ckpt_set *s)
{
	struct cube_clone_create cr = { .snapshot_id = s->base_id };
	int fd = ioctl(s->dev_fd, CUBE_IOC_CLONE_CREATE, &cr);

	return fd < 0 ? -errno : fd;
}

int ckpt_init(struct ckpt_set *s, const char *dir, char *err, size_t errlen)
{
	struct cube_clone_counters cc;

	s->dir_fd = s->dev_fd = s->base_spare_fd = -1;
	if (dir) {
		s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->dir_fd < 0)
			return serr(err, errlen, -errno, "--checkpoint-dir %s: %s",
				    dir, strerror(errno));
	}
	if (!s->mem_shared)
		return 0;
	if (ioctl(*s->mem_fd, CUBE_IOC_CLONE_COUNTERS, &cc))
		return serr(err, errlen, -errno, "CUBE_IOC_CLONE_COUNTERS: %s",
			    strerror(errno));
	s->base_id = cc.snapshot_id;
	s->dev_fd = open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (s->dev_fd < 0)
		return serr(err, errlen, -errno, "/dev/%s: %s",
			    CUBE_DEVICE_NAME, strerror(errno));
	if (!s->want_spare)
		return 0;
	/* Costs no page until mapped; only the snapshot's owner may make it. */
	s->base_spare_fd = base_clone(s);
	if (s->base_spare_fd < 0)
		return serr(err, errlen, s->base_spare_fd,
			    "CUBE_IOC_CLONE_CREATE of snapshot %llu: %s",
			    (unsigned long long)s->base_id,
			    strerror(-s->base_spare_fd));
	return 0;
}

static struct ckpt *find(struct ckpt_set *s, const char *name, unsigned int *idx)
{
	unsigned int i;

	for (i = 0; i < s->nr; i++)
		if (!strcmp(s->c[i]->name, name)) {
			if (idx)
				*idx = i;
			return s->c[i];
		}
	return NULL;
}

/* The files of a checkpoint passed with its request (see checkpoint.h). */
static const char *check_fds(const int *fds, int nfds)
{
	if (nfds != CKPT_FDS)
		return "pass the record, state and disk files, three descriptors";
	return check_rw_files(fds, nfds);
}

/* Remove DIR/name and what it holds of ours; 0 or -errno. */
static int remove_dir(struct ckpt_set *s, const char *name)
{
	static const char *const files[] = CUBE_CKPT_FILES;
	unsigned int i;
	int dfd;

	dfd = openat(s->dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		     O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	for (i = 0; i < ARRAY_SIZE(files); i++)
		unlinkat(dfd, files[i], 0);
	close(dfd);
	if (unlinkat(s->dir_fd, name, AT_REMOVEDIR))
		return -errno;
	return 0;
}

static int write_file(int dfd, const char *name, const char *tmp,
		      const void *buf, size_t len)
{
	int fd, ret;

	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	ret = write_full(fd, buf, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && renameat(dfd, tmp, dfd, name))
		ret = -errno;
	if (ret)
		unlinkat(dfd, tmp, 0);
	return ret;
}

/* The file passed as fd holds exactly buf, on disk; 0 or -errno. */
static int put_file(int fd, const void *buf, size_t len)
{
	int ret = 0;

	if (ftruncate(fd, 0))
		return -errno;
	ret = pwrite_full(fd, buf, len, 0);
	if (!ret && fsync(fd))
		ret = -errno;
	return ret;
}

/*
 * The live disk's copy: into a new DIR/disk.img (dfd), or into the file
 * disk_fd passed with the request (emptied; left empty without a disk).
 */
static int save_disk(struct ckpt_set *s, int dfd, int disk_fd, char *err,
		     size_t errlen)
{
	struct virtio_mmio *t = s->vm->devs[VM_DEV_DISK];
	int ret;

	if (disk_fd < 0)
		return snapshot_save_disk(s->vm, dfd, err, errlen);
	if (ftruncate(disk_fd, 0))
		return serr(err, errlen, -errno, "disk file: %s",
			    strerror(errno));
	if (!t)
		return 0;
	ret = cube_disk_copy(virtio_blk_fd(t), disk_fd, virtio_blk_size(t));
	if (ret)
		serr(err, errlen, ret, "copying the disk: %s", strerror(-ret));
	return ret;
}

/*
 * The paused part: the state, the module snapshot of the clone and the
 * disk's copy into directory dfd, with every device locked so no device
 * thread writes guest memory or the disk in between.
 */
static int take(struct ckpt_set *s, int dfd, int disk_fd, struct snap_buf *b,
		uint64_t *id, char *err, size_t errlen)
{
	struct cube_snapshot_create sc = {
		.source = CUBE_SNAPSHOT_SRC_CLONE,
		.fd = *s->mem_fd,
	};
	bool was_paused = *s->paused;
	int ret;

	if (!was_paused)
		vm_pause(s->vm);
	snapshot_lock_devs(s->vm, true);
	ret = snapshot_save_state(s->vm, s->cfg, b, err, errlen);
	if (!ret && ioctl(s->dev_fd, CUBE_IOC_SNAPSHOT_CREATE, &sc)) {
		ret = serr(err, errlen, -errno, "CUBE_IOC_SNAPSHOT_CREATE: %s",
			   errno == EMLINK ? "too many snapshots of snapshots (roll back to the restore snapshot first)" :
			   strerror(errno));
		snap_buf_free(b);
	}
	if (!ret) {
		ret = save_disk(s, dfd, disk_fd, err, errlen);
		if (ret)
			snap_buf_free(b);
	}
	snapshot_lock_devs(s->vm, false);
	if (!was_paused)
		vm_resume(s->vm);
	*id = sc.id;
	return ret;
}

static void del_snapshot(struct ckpt_set *s, uint64_t id)
{
	struct cube_snapshot_id del = { .id = id };

	ioctl(s->dev_fd, CUBE_IOC_SNAPSHOT_DELETE, &del);
}

void ckpt_checkpoint(struct ckpt_set *s, const char *name, const int *fds,
		     int nfds, char *reply, size_t len)
{
	struct cube_snapshot_info info = { 0 };
	struct snap_buf b = { 0 };
	char err[256], rec[96];
	struct ckpt *c = NULL;
	uint64_t t0, id = 0;
	const char *bad;
	int dfd = -1, ret, n;

	if (nfds && (bad = check_fds(fds, nfds))) {
		snprintf(reply, len, "ERR %s", bad);
		return;
	}
	if (!nfds && s->dir_fd < 0) {
		snprintf(reply, len, "ERR no --checkpoint-dir (or pass the record, state and disk files)");
		return;
	}
	if (!name || !cube_ckpt_name_ok(name)) {
		snprintf(reply, len, "ERR bad checkpoint name");
		return;
	}
	if (!s->mem_shared) {
		snprintf(reply, len, "ERR checkpoints need guest memory on a cube.ko clone");
		return;
	}
	if (find(s, name, NULL)) {
		snprintf(reply, len, "ERR checkpoint %s exists", name);
		return;
	}
	if (s->nr >= CKPT_MAX) {
		snprintf(reply, len, "ERR too many checkpoints (at most %d): remove one with checkpoint-rm",
			 CKPT_MAX);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(reply, len, "ERR out of memory");
		return;
	}
	c->st.mem_fd = -1;
	c->disk_fd = -1;
	c->in_dir = !nfds;
	snprintf(c->name, sizeof(c->name), "%s", name);
	if (c->in_dir && mkdirat(s->dir_fd, name, 0700)) {
		if (errno == EEXIST)
			snprintf(reply, len, "ERR checkpoint %s exists", name);
		else
			snprintf(reply, len, "ERR checkpoint %s: %s", name,
				 strerror(errno));
		free(c);
		return;
	}
	if (c->in_dir) {
		dfd = openat(s->dir_fd, name, O_RDONLY | O_DIRECTORY |
			     O_CLOEXEC | O_NOFOLLOW);
		if (dfd < 0) {
			ret = serr(err, sizeof(err), -errno, "%s: %s", name,
				   strerror(errno));
			goto fail;
		}
	}
	t0 = now_us();
	ret = take(s, dfd, nfds ? fds[CKPT_FD_DISK] : -1, &b, &id, err,
		   sizeof(err));
	if (ret)
		goto fail;
	n = (now_us() - t0 + 500) / 1000;
	info.id = id;
	if (ioctl(s->dev_fd, CUBE_IOC_SNAPSHOT_INFO, &info)) {
		ret = serr(err, sizeof(err), -errno,
			   "CUBE_IOC_SNAPSHOT_INFO: %s", strerror(errno));
		goto fail;
	}
	c->rec.id = id;
	c->rec.parent_id = info.parent_id;
	c->rec.size = info.size;
	/* The record first: from now on a killed VMM's snapshot is found. */
	ret = cube_ckpt_rec_format(&c->rec, rec, sizeof(rec));
	if (ret >= 0 && nfds)
		ret = put_file(fds[CKPT_FD_REC], rec, ret);
	else if (ret >= 0)
		ret = write_file(dfd, CUBE_CKPT_REC_FILE, CUBE_CKPT_REC_TMP,
				 rec, ret);
	if (!ret && nfds)
		ret = put_file(fds[CKPT_FD_STATE], b.data, b.len);
	else if (!ret)
		ret = write_file(dfd, CUBE_CKPT_STATE_FILE,
				 CUBE_CKPT_STATE_FILE ".tmp", b.data, b.len);
	if (ret) {
		serr(err, sizeof(err), ret, "writing %s: %s", name,
		     strerror(-ret));
		goto fail;
	}
	/* What a rollback loads is what the file says, checked now. */
	if (nfds)
		ret = snapshot_read_state_fd(fds[CKPT_FD_STATE], &c->st, err,
					     sizeof(err));
	else
		ret = snapshot_read_state(dfd, &c->st, err, sizeof(err));
	if (ret)
		goto fail;
	/* Its disk is held from now: a rollback opens nothing. */
	if (s->vm->devs[VM_DEV_DISK]) {
		if (nfds)
			c->disk_fd = fcntl(fds[CKPT_FD_DISK], F_DUPFD_CLOEXEC, 3);
		else
			c->disk_fd = openat(dfd, CUBE_DISK_FILE, O_RDONLY |
					    O_CLOEXEC | O_NOFOLLOW);
		if (c->disk_fd < 0) {
			ret = serr(err, sizeof(err), -errno, "%s: %s",
				   CUBE_DISK_FILE, strerror(errno));
			snapshot_close(&c->st);
			goto fail;
		}
	}
	if (dfd >= 0)
		close(dfd);
	snap_buf_free(&b);
	s->c[s->nr++] = c;
	s->checkpoints++;
	snprintf(reply, len, "OK checkpoint %s %d ms pages=%llu", name, n,
		 (unsigned long long)info.pages);
	return;
fail:
	if (dfd >= 0)
		close(dfd);
	if (id)
		del_snapshot(s, id);
	/* the record passed names no snapshot; the caller removes its files */
	if (nfds && ftruncate(fds[CKPT_FD_REC], 0))
		pr_err("checkpoint %s: cannot empty its record: %s", name,
		       strerror(errno));
	else if (!nfds)
		remove_dir(s, name);
	snap_buf_free(&b);
	free(c);
	snprintf(reply, len, "ERR checkpoint %s: %s", name, err);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp((*(struct ckpt * const *)a)->name,
		      (*(struct ckpt * const *)b)->name);
}

void ckpt_list(struct ckpt_set *s, char *reply, size_t len)
{
	struct ckpt *sorted[CKPT_MAX];
	size_t n;
	unsigned int i;

	memcpy(sorted, s->c, s->nr * sizeof(sorted[0]));
	qsort(sorted, s->nr, sizeof(sorted[0]), cmp_names);
	n = snprintf(reply, len, "OK");
	for (i = 0; i < s->nr && n < len; i++)
		n += snprintf(reply + n, len - n, " %s", sorted[i]->name);
}

static void ckpt_free(struct ckpt_set *s, struct ckpt *c)
{
	del_snapshot(s, c->rec.id);
	/* files passed with the request are their sender's to remove */
	if (c->in_dir)
		remove_dir(s, c->name);
	if (c->disk_fd >= 0)
		close(c->disk_fd);
	snapshot_close(&c->st);
	free(c);
}

void ckpt_remove(struct ckpt_set *s, const char *name, char *reply,
		 size_t len)
{
	unsigned int i;
	struct ckpt *c;

	if (!name || !cube_ckpt_name_ok(name)) {
		snprintf(reply, len, "ERR bad checkpoint name");
		return;
	}
	c = find(s, name, &i);
	if (!c) {
		snprintf(reply, len, "ERR no checkpoint %s", name);
		return;
	}
	s->c[i] = s->c[--s->nr];
	ckpt_free(s, c);
	snprintf(reply, len, "OK removed %s", name);
}

/*
 * Guest memory goes back to snapshot id: the clone rewound when it is a
 * clone of id (up to keep_pages of the pages the guest wrote keep their
 * place, the snapshot copied back in; *kept says how many, *pages how
 * many there were), else new_fd (a clone of id) mapped over the old clone
 * (of old_id; *pages left as it is).
 * The devices are locked, the vCPUs paused.  Returns 0, or -errno with
 * the memory as it was.
 */
static int swap_memory(struct ckpt_set *s, int new_fd, uint64_t old_id,
		       uint64_t *pages, uint64_t *kept)
{
	struct cube_clone_rewind rw = { .keep_pages = s->keep_pages };
	struct vm *vm = s->vm;
	void *p;

	*kept = 0;
	if (new_fd < 0) {
		if (ioctl(*s->mem_fd, CUBE_IOC_CLONE_REWIND, &rw))
			return -errno;
		*kept = rw.kept;
		*pages = rw.kept + rw.dropped;
		return 0;
	}
	/* KVM's MMU notifier drops its mappings of the old pages. */
	p = mmap(vm->mem.host, vm->mem.size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, new_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	madvise(vm->mem.host, vm->mem.size, MADV_DONTDUMP);
	/*
	 * The old clone's pages go now, even if a cube.ko sandbox still
	 * holds the clone for its counters.  A clone of the base becomes the
	 * spare again when the spare was spent.
	 */
	ioctl(*s->mem_fd, CUBE_IOC_CLONE_RESET);
	if (new_fd == s->base_spare_fd)
		s->base_spare_fd = -1;
	if (s->want_spare && s->base_spare_fd < 0 && old_id == s->base_id)
		s->base_spare_fd = *s->mem_fd;
	else
		close(*s->mem_fd);
	*s->mem_fd = new_fd;
	return 0;
}

/*
 * The disk of a rollback's target (NULL: the restore snapshot), held since
 * it was taken: a checkpoint's copy, or the restore snapshot's disk.img
 * opened at start-up.  -1 for a VM without a disk; -2 with err set when
 * the target's disk cannot be had.
 */
static int target_disk(struct ckpt_set *s, const struct ckpt *c,
		       const struct snap_restore *st, char *err, size_t errlen)
{
	struct stat sb;

	if (!s->vm->devs[VM_DEV_DISK])
		return -1;
	if (!c) {
		if (s->base_disk_fd < 0) {
			serr(err, errlen, 0, "no usable %s of the restore snapshot at start (missing, another size, or the live disk itself)",
			     CUBE_DISK_FILE);
			return -2;
		}
		return s->base_disk_fd;
	}
	if (c->disk_fd < 0 || fstat(c->disk_fd, &sb) || !S_ISREG(sb.st_mode) ||
	    (uint64_t)sb.st_size != st->disk.size) {
		serr(err, errlen, 0, "%s is not the checkpoint's disk",
		     CUBE_DISK_FILE);
		return -2;
	}
	return c->disk_fd;
}

/*
 * The live disk becomes exactly the target's: emptied, the copy put in,
 * then grown back to its own size (zeroes past the target's).  Devices
 * locked, vCPUs paused.  0 or -errno (the disk is then undefined).
 */
static int put_disk(struct ckpt_set *s, int src_fd, uint64_t size)
{
	struct virtio_mmio *t = s->vm->devs[VM_DEV_DISK];
	int fd = virtio_blk_fd(t), ret;

	if (ftruncate(fd, 0))
		return -errno;
	ret = cube_disk_copy(src_fd, fd, size);
	if (!ret && ftruncate(fd, virtio_blk_size(t)))
		ret = -errno;
	return ret;
}

void ckpt_rollback(struct ckpt_set *s, const char *name, char *reply,
		   size_t len)
{
	struct cube_clone_counters cc;
	struct snap_restore *st;
	struct ckpt *c = NULL;
	const char *target;
	bool was_paused;
	uint64_t id, t0, t_mem, t_state, pages, kept;
	char err[256];
	int new_fd = -1, disk_fd, ret;

	if (name && !cube_ckpt_name_ok(name)) {
		snprintf(reply, len, "ERR bad checkpoint name");
		return;
	}
	if (!s->mem_shared || !s->base) {
		snprintf(reply, len, "ERR rollback needs guest memory on a cube.ko clone");
		return;
	}
	if (name) {
		c = find(s, name, NULL);
		if (!c) {
			snprintf(reply, len, "ERR no checkpoint %s", name);
			return;
		}
		st = &c->st;
		id = c->rec.id;
		target = c->name;
	} else {
		st = s->base;
		id = s->base_id;
		target = BASE_TARGET;
	}
	/* Everything that can fail, before the guest is touched. */
	if (snapshot_check_devs(s->vm, st, err, sizeof(err))) {
		snprintf(reply, len, "ERR rollback %s: %s", target, err);
		return;
	}
	disk_fd = target_disk(s, c, st, err, sizeof(err));
	if (disk_fd == -2) {
		snprintf(reply, len, "ERR rollback %s: %s", target, err);
		return;
	}
	if (ioctl(*s->mem_fd, CUBE_IOC_CLONE_COUNTERS, &cc)) {
		snprintf(reply, len, "ERR rollback %s: CUBE_IOC_CLONE_COUNTERS: %s",
			 target, strerror(errno));
		return;
	}
	if (cc.snapshot_id != id && id == s->base_id && s->base_spare_fd >= 0) {
		/* Never mapped, or reset when it became the spare. */
		new_fd = s->base_spare_fd;
	} else if (cc.snapshot_id != id) {
		struct cube_clone_create cr = { .snapshot_id = id };

		new_fd = ioctl(s->dev_fd, CUBE_IOC_CLONE_CREATE, &cr);
		if (new_fd < 0) {
			snprintf(reply, len, "ERR rollback %s: CUBE_IOC_CLONE_CREATE: %s",
				 target, strerror(errno));
			return;
		}
	}
	t0 = now_us();
	was_paused = *s->paused;
	if (!was_paused)
		vm_pause(s->vm);
	snapshot_lock_devs(s->vm, true);
	pages = cc.private_pages;	/* the guest may write on until paused */
	ret = swap_memory(s, new_fd, cc.snapshot_id, &pages, &kept);
	t_mem = now_us();
	if (ret) {
		snapshot_lock_devs(s->vm, false);
		if (!was_paused)
			vm_resume(s->vm);
		if (new_fd >= 0 && new_fd != s->base_spare_fd)
			close(new_fd);
		snprintf(reply, len, "ERR rollback %s: guest memory: %s",
			 target, strerror(-ret));
		return;
	}
	/* The disk of the same instant as the memory. */
	if (disk_fd >= 0) {
		ret = put_disk(s, disk_fd, st->disk.size);
		if (ret)
			serr(err, sizeof(err), ret, "the disk: %s",
			     strerror(-ret));
	}
	if (!ret) {
		if (s->vm->devs[VM_DEV_VSOCK])
			vsock_drop_all(s->vm->devs[VM_DEV_VSOCK]);
		ret = snapshot_reload(s->vm, st, err, sizeof(err));
	}
	/* The guest of the target knew a smaller disk: it reads it again. */
	if (!ret && disk_fd >= 0 &&
	    st->disk.size < virtio_blk_size(s->vm->devs[VM_DEV_DISK]))
		virtio_mmio_config_changed(s->vm->devs[VM_DEV_DISK]);
	snapshot_lock_devs(s->vm, false);
	t_state = now_us();
	if (ret) {
		/* Checked before: the disk's copy failed, or KVM refused a state it took once. */
		vm_request_exit(s->vm, VM_EXIT_ERROR, "rollback %s: %s",
				target, err);
		snprintf(reply, len, "ERR rollback %s: %s (the VM stops)",
			 target, err);
		return;
	}
	if (!was_paused)
		vm_resume(s->vm);
	s->rollbacks++;
	/*
	 * pages: what the guest had written, of which kept stay its own;
	 * mem_us: the clone rewound or swapped; state_us: disk, devices, vCPUs
	 */
	snprintf(reply, len, "OK rollback %s %llu us pages=%llu kept=%llu mem_us=%llu state_us=%llu",
		 target, (unsigned long long)(now_us() - t0),
		 (unsigned long long)pages,
		 (unsigned long long)kept,
		 (unsigned long long)(t_mem - t0),
		 (unsigned long long)(t_state - t_mem));
}

void ckpt_fini(struct ckpt_set *s)
{
	while (s->nr)
		ckpt_free(s, s->c[--s->nr]);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	if (s->dev_fd >= 0)
		close(s->dev_fd);
	if (s->base_spare_fd >= 0)
		close(s->base_spare_fd);
	if (s->base_disk_fd >= 0)
		close(s->base_disk_fd);
	s->dir_fd = s->dev_fd = s->base_disk_fd = s->base_spare_fd = -1;
}
