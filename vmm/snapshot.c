// SPDX-License-Identifier: GPL-2.0
/* Saving and loading a VM's state; see snapshot.h. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cube_disk.h"
#include "devices.h"
#include "serial.h"
#include "snapshot.h"
#include "util.h"
#include "virtio_mmio.h"
#include "vm.h"
#include "vsock.h"

#define MAX_MSRS	1024
#define PAGE_SIZE	4096

static int snap_err(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int snap_err(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* Every MSR KVM lists that reads back on this vCPU. */
static int save_msrs(struct vm *vm, struct vcpu *vcpu, struct snap_buf *b)
{
	struct kvm_msr_list *list;
	struct kvm_msrs *msrs;
	uint32_t i, n = 0;
	int ret = 0;

	list = calloc(1, sizeof(*list) + MAX_MSRS * sizeof(uint32_t));
	msrs = calloc(1, sizeof(*msrs) + MAX_MSRS * sizeof(msrs->entries[0]));
	if (!list || !msrs) {
		ret = -ENOMEM;
		goto out;
	}
	list->nmsrs = MAX_MSRS;
	if (ioctl(vm->kvm_fd, KVM_GET_MSR_INDEX_LIST, list)) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < list->nmsrs; i++) {
		struct {
			struct kvm_msrs h;
			struct kvm_msr_entry e;
		} one = { .h.nmsrs = 1, .e.index = list->indices[i] };

		if (ioctl(vcpu->fd, KVM_GET_MSRS, &one) == 1)
			msrs->entries[n++] = one.e;
	}
	snap_add(b, SNAP_SEC_VCPU_MSRS, vcpu->id, msrs->entries,
		 n * sizeof(msrs->entries[0]));
out:
	free(list);
	free(msrs);
	return ret;
}

#define SAVE(ioc, type, obj) do {					\
	if (ioctl(vcpu->fd, ioc, &(obj)))				\
		return -errno;						\
	snap_add(b, type, vcpu->id, &(obj), sizeof(obj));		\
} while (0)

static int save_vcpu(struct vm *vm, struct vcpu *vcpu, struct snap_buf *b)
{
	struct kvm_mp_state mp;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
	struct kvm_xsave xsave;
	struct kvm_xcrs xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_debugregs dregs;
	struct kvm_cpuid2 *cpuid;
	int ret;

	/* MP state first: reading it makes KVM take pending INIT/SIPI. */
	SAVE(KVM_GET_MP_STATE, SNAP_SEC_VCPU_MP_STATE, mp);
	SAVE(KVM_GET_REGS, SNAP_SEC_VCPU_REGS, regs);
	SAVE(KVM_GET_SREGS, SNAP_SEC_VCPU_SREGS, sregs);
	SAVE(KVM_GET_FPU, SNAP_SEC_VCPU_FPU, fpu);
	SAVE(KVM_GET_XSAVE, SNAP_SEC_VCPU_XSAVE, xsave);
	SAVE(KVM_GET_XCRS, SNAP_SEC_VCPU_XCRS, xcrs);
	SAVE(KVM_GET_DEBUGREGS, SNAP_SEC_VCPU_DEBUGREGS, dregs);
	SAVE(KVM_GET_LAPIC, SNAP_SEC_VCPU_LAPIC, lapic);
	ret = save_msrs(vm, vcpu, b);
	if (ret)
		return ret;
	SAVE(KVM_GET_VCPU_EVENTS, SNAP_SEC_VCPU_EVENTS, events);

	cpuid = calloc(1, sizeof(*cpuid) + vm->cpuid->nent *
		       sizeof(cpuid->entries[0]));
	if (!cpuid)
		return -ENOMEM;
	cpuid->nent = vm->cpuid->nent;
	if (ioctl(vcpu->fd, KVM_GET_CPUID2, cpuid)) {
		ret = -errno;
		free(cpuid);
		return ret;
	}
	snap_add(b, SNAP_SEC_VCPU_CPUID, vcpu->id, cpuid->entries,
		 cpuid->nent * sizeof(cpuid->entries[0]));
	free(cpuid);
	return 0;
}

static int save_vm_state(struct vm *vm, struct snap_buf *b)
{
	struct kvm_clock_data clock = { 0 };
	struct kvm_pit_state2 pit;
	struct kvm_irqchip chip;
	int i;

	for (i = KVM_IRQCHIP_PIC_MASTER; i <= KVM_IRQCHIP_IOAPIC; i++) {
		memset(&chip, 0, sizeof(chip));
		chip.chip_id = i;
		if (ioctl(vm->vm_fd, KVM_GET_IRQCHIP, &chip))
			return -errno;
		snap_add(b, SNAP_SEC_IRQCHIP, i, &chip, sizeof(chip));
	}
	if (ioctl(vm->vm_fd, KVM_GET_PIT2, &pit))
		return -errno;
	snap_add(b, SNAP_SEC_PIT, 0, &pit, sizeof(pit));
	if (ioctl(vm->vm_fd, KVM_GET_CLOCK, &clock))
		return -errno;
	clock.flags = 0;
	snap_add(b, SNAP_SEC_CLOCK, 0, &clock, sizeof(clock));
	return 0;
}

void snapshot_lock_devs(struct vm *vm, bool lock)
{
	int i;

	for (i = 0; i < VM_MAX_DEVS; i++) {
		if (!vm->devs[i])
			continue;
		if (lock)
			pthread_mutex_lock(&vm->devs[i]->lock);
		else
			pthread_mutex_unlock(&vm->devs[i]->lock);
	}
}

static void save_devs(struct vm *vm, struct snap_buf *b)
{
	static struct vsock_state vs;
	struct virtio_mmio_state ms;
	struct serial_regs sr;
	int i;

	serial_get_regs(vm->serial, &sr);
	snap_add(b, SNAP_SEC_SERIAL, 0, &sr, sizeof(sr));
	for (i = 0; i < VM_MAX_DEVS; i++) {
		if (!vm->devs[i])
			continue;
		virtio_mmio_save(vm->devs[i], &ms);
		snap_add(b, SNAP_SEC_VIRTIO, i, &ms, sizeof(ms));
	}
	if (vm->devs[VM_DEV_VSOCK]) {
		vsock_save(vm->devs[VM_DEV_VSOCK], &vs);
		snap_add(b, SNAP_SEC_VSOCK, 0, &vs,
			 offsetof(struct vsock_state, conns) +
			 vs.nr_conns * sizeof(vs.conns[0]));
	}
	if (vm->devs[VM_DEV_NET]) {
		struct virtio_net_state ns;

		virtio_net_save(vm->devs[VM_DEV_NET], &ns);
		snap_add(b, SNAP_SEC_NET, 0, &ns, sizeof(ns));
	}
	if (vm->devs[VM_DEV_DISK]) {
		struct snap_disk_state ds = {
			.size = virtio_blk_size(vm->devs[VM_DEV_DISK]),
		};

		snap_add(b, SNAP_SEC_DISK, 0, &ds, sizeof(ds));
	}
}

int snapshot_save_disk(struct vm *vm, int dfd, char *err, size_t errlen)
{
	struct virtio_mmio *t = vm->devs[VM_DEV_DISK];
	int fd, ret;

	/* A disk.img of an earlier snapshot into dfd is not this one's. */
	if (unlinkat(dfd, CUBE_DISK_FILE, 0) && errno != ENOENT)
		return snap_err(err, errlen, -errno, "cannot replace %s: %s",
				CUBE_DISK_FILE, strerror(errno));
	if (!t)
		return 0;
	fd = openat(dfd, CUBE_DISK_FILE, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return snap_err(err, errlen, -errno, "cannot create %s: %s",
				CUBE_DISK_FILE, strerror(errno));
	ret = cube_disk_copy(virtio_blk_fd(t), fd, virtio_blk_size(t));
	close(fd);
	if (ret) {
		unlinkat(dfd, CUBE_DISK_FILE, 0);
		return snap_err(err, errlen, ret, "copying the disk: %s",
				strerror(-ret));
	}
	return 0;
}

/* Guest memory into the empty file fd, zero pages left as holes; the crc. */
static int write_memory(struct vm *vm, int fd, uint32_t *crc, char *err,
			size_t errlen)
{
	static const uint8_t zero[PAGE_SIZE];
	const uint8_t *p = vm->mem.host;
	uint64_t off = 0, size = vm->mem.size;

	if (ftruncate(fd, size))
		return snap_err(err, errlen, -errno, "memory file: %s",
				strerror(errno));
	*crc = snap_crc32(p, size);
	while (off < size) {
		uint64_t run = 0;

		/* Gather a run of non-zero pages, write it in one go. */
		while (off + run < size && run < (64ULL << 20) &&
		       memcmp(p + off + run, zero, PAGE_SIZE))
			run += PAGE_SIZE;
		if (run) {
			if (lseek(fd, off, SEEK_SET) < 0 ||
			    write_full(fd, p + off, run))
				return snap_err(err, errlen, -EIO,
						"writing memory file: %s",
						strerror(errno));
			off += run;
		} else {
			off += PAGE_SIZE;
		}
	}
	if (fsync(fd))
		return snap_err(err, errlen, -errno, "memory file: %s",
				strerror(errno));
	return 0;
}

/* Guest memory to dir/memory; returns crc. */
static int save_memory(struct vm *vm, int dfd, uint32_t *crc, char *err,
		       size_t errlen)
{
	int fd, ret;

	unlinkat(dfd, "memory", 0);
	fd = openat(dfd, "memory",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return snap_err(err, errlen, -errno, "cannot create memory file: %s",
				strerror(errno));
	ret = write_memory(vm, fd, crc, err, errlen);
	close(fd);
	return ret;
}

/* The state sections of a paused VM whose devices are locked. */
static int save_state(struct vm *vm, const struct snap_config *cfg,
		      struct snap_buf *b, char *err, size_t errlen)
{
	int i, ret;

	snap_add(b, SNAP_SEC_CONFIG, 0, cfg, sizeof(*cfg));
	ret = save_vm_state(vm, b);
	if (ret)
		return snap_err(err, errlen, ret, "saving VM state: %s",
				strerror(-ret));
	for (i = 0; i < vm->nr_vcpus; i++) {
		ret = save_vcpu(vm, &vm->vcpus[i], b);
		if (ret)
			return snap_err(err, errlen, ret, "saving vCPU %d: %s",
					i, strerror(-ret));
	}
	save_devs(vm, b);
	return 0;
}

int snapshot_save_state(struct vm *vm, const struct snap_config *cfg,
			struct snap_buf *b, char *err, size_t errlen)
{
	int ret;

	snap_buf_init(b);
	ret = save_state(vm, cfg, b, err, errlen);
	if (!ret) {
		ret = snap_finish(b, vm->mem.size, 0, vm->nr_vcpus);
		if (ret)
			snap_err(err, errlen, ret, "building state: %s",
				 strerror(-ret));
	}
	if (ret)
		snap_buf_free(b);
	return ret;
}

int snapshot_save(struct vm *vm, const struct snap_config *cfg,
		  const char *dir, char *err, size_t errlen)
{
	int dfd, ret;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return snap_err(err, errlen, -errno, "cannot create %s: %s",
				dir, strerror(errno));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return snap_err(err, errlen, -errno, "cannot open %s: %s", dir,
				strerror(errno));
	ret = snapshot_save_at(vm, cfg, dfd, err, errlen);
	close(dfd);
	return ret;
}

int snapshot_save_at(struct vm *vm, const struct snap_config *cfg, int dfd,
		     char *err, size_t errlen)
{
	struct snap_buf b;
	uint32_t crc = 0;
	int fd, ret;

	snap_buf_init(&b);
	snapshot_lock_devs(vm, true);
	ret = save_state(vm, cfg, &b, err, errlen);
	if (!ret)
		ret = save_memory(vm, dfd, &crc, err, errlen);
	/* The disk at the same instant as the memory, the vCPUs paused. */
	if (!ret)
		ret = snapshot_save_disk(vm, dfd, err, errlen);
	snapshot_lock_devs(vm, false);
	if (ret)
		goto out;
	ret = snap_finish(&b, vm->mem.size, crc, vm->nr_vcpus);
	if (ret) {
		snap_err(err, errlen, ret, "building state: %s", strerror(-ret));
		goto out;
	}
	/* The state file is written last, atomically: it commits the snapshot. */
	fd = openat(dfd, "state.tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		ret = snap_err(err, errlen, -errno, "cannot create state: %s",
			       strerror(errno));
		goto out;
	}
	ret = write_full(fd, b.data, b.len);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (!ret && renameat(dfd, "state.tmp", dfd, "state"))
		ret = -errno;
	if (ret) {
		unlinkat(dfd, "state.tmp", 0);
		snap_err(err, errlen, ret, "writing state: %s", strerror(-ret));
	}
out:
	snap_buf_free(&b);
	return ret;
}

int snapshot_save_files(struct vm *vm, const struct snap_config *cfg,
			const int fds[SNAP_FDS], char *err, size_t errlen)
{
	struct virtio_mmio *t = vm->devs[VM_DEV_DISK];
	struct snap_buf b;
	uint32_t crc = 0;
	int ret;

	snap_buf_init(&b);
	snapshot_lock_devs(vm, true);
	ret = save_state(vm, cfg, &b, err, errlen);
	if (!ret && ftruncate(fds[SNAP_FD_MEMORY], 0))
		ret = snap_err(err, errlen, -errno, "memory file: %s",
			       strerror(errno));
	if (!ret)
		ret = write_memory(vm, fds[SNAP_FD_MEMORY], &crc, err, errlen);
	/* The disk at the same instant as the memory, the vCPUs paused. */
	if (!ret && t) {
		ret = cube_disk_copy(virtio_blk_fd(t), fds[SNAP_FD_DISK],
				     virtio_blk_size(t));
		if (ret)
			snap_err(err, errlen, ret, "copying the disk: %s",
				 strerror(-ret));
	}
	snapshot_lock_devs(vm, false);
	if (ret)
		goto out;
	ret = snap_finish(&b, vm->mem.size, crc, vm->nr_vcpus);
	if (ret) {
		snap_err(err, errlen, ret, "building state: %s", strerror(-ret));
		goto out;
	}
	if (ftruncate(fds[SNAP_FD_STATE], 0) ||
	    lseek(fds[SNAP_FD_STATE], 0, SEEK_SET) < 0)
		ret = -errno;
	if (!ret)
		ret = write_full(fds[SNAP_FD_STATE], b.data, b.len);
	if (!ret && fsync(fds[SNAP_FD_STATE]))
		ret = -errno;
	if (ret)
		snap_err(err, errlen, ret, "writing state: %s", strerror(-ret));
out:
	snap_buf_free(&b);
	return ret;
}

/* All of the regular file fd (called name in errors) into *data. */
static int read_fd(int fd, const char *name, void **data, size_t *len,
		   char *err, size_t errlen)
{
	struct stat st;
	void *p;
	int ret;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return snap_err(err, errlen, -EINVAL, "%s is not a regular file",
				name);
	if ((uint64_t)st.st_size > SNAP_MAX_FILE)
		return snap_err(err, errlen, -EFBIG, "%s is too big", name);
	p = malloc(st.st_size ? st.st_size : 1);
	if (!p)
		return snap_err(err, errlen, -ENOMEM, "out of memory");
	ret = pread_full(fd, p, st.st_size, 0);
	if (ret) {
		free(p);
		return snap_err(err, errlen, ret, "reading %s: %s", name,
				strerror(-ret));
	}
	*data = p;
	*len = st.st_size;
	return 0;
}

static int read_file(int dfd, const char *name, void **data, size_t *len,
		     char *err, size_t errlen)
{
	int fd, ret;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return snap_err(err, errlen, -errno, "cannot open %s: %s", name,
				strerror(errno));
	ret = read_fd(fd, name, data, len, err, errlen);
	close(fd);
	return ret;
}

static const struct snap_section *need(const struct snap_image *img,
				       uint32_t type, uint32_t id, size_t size,
				       char *err, size_t errlen)
{
	const struct snap_section *s = snap_find(img, type, id);

	if (!s) {
		snap_err(err, errlen, -EINVAL, "missing section %#x/%u", type, id);
		return NULL;
	}
	if (size && s->size != size) {
		snap_err(err, errlen, -EINVAL,
			 "section %#x/%u has %llu bytes, expected %zu", type, id,
			 (unsigned long long)s->size, size);
		return NULL;
	}
	return s;
}

/* Every section a vCPU's load needs, of the size it needs. */
static int check_vcpus(const struct snap_restore *r, char *err, size_t errlen)
{
	static const struct {
		uint32_t type;
		size_t size;
	} secs[] = {
		{ SNAP_SEC_VCPU_CPUID, 0 },
		{ SNAP_SEC_VCPU_MP_STATE, sizeof(struct kvm_mp_state) },
		{ SNAP_SEC_VCPU_REGS, sizeof(struct kvm_regs) },
		{ SNAP_SEC_VCPU_SREGS, sizeof(struct kvm_sregs) },
		{ SNAP_SEC_VCPU_FPU, sizeof(struct kvm_fpu) },
		{ SNAP_SEC_VCPU_XSAVE, sizeof(struct kvm_xsave) },
		{ SNAP_SEC_VCPU_XCRS, sizeof(struct kvm_xcrs) },
		{ SNAP_SEC_VCPU_DEBUGREGS, sizeof(struct kvm_debugregs) },
		{ SNAP_SEC_VCPU_LAPIC, sizeof(struct kvm_lapic_state) },
		{ SNAP_SEC_VCPU_MSRS, 0 },
		{ SNAP_SEC_VCPU_EVENTS, sizeof(struct kvm_vcpu_events) },
	};
	const struct snap_section *s;
	uint32_t v;
	size_t i;

	for (v = 0; v < r->cfg.nr_vcpus; v++) {
		for (i = 0; i < ARRAY_SIZE(secs); i++)
			if (!need(&r->img, secs[i].type, v, secs[i].size, err,
				  errlen))
				return -EINVAL;
		s = snap_find(&r->img, SNAP_SEC_VCPU_MSRS, v);
		if (s->size % sizeof(struct kvm_msr_entry) ||
		    s->size / sizeof(struct kvm_msr_entry) > MAX_MSRS)
			return snap_err(err, errlen, -EINVAL,
					"vCPU %u: bad MSR section", v);
		s = snap_find(&r->img, SNAP_SEC_VCPU_CPUID, v);
		if (!s->size || s->size % sizeof(struct kvm_cpuid_entry2) ||
		    s->size / sizeof(struct kvm_cpuid_entry2) > 4096)
			return snap_err(err, errlen, -EINVAL,
					"vCPU %u: bad CPUID section", v);
	}
	return 0;
}

/* Index r->file (r->file_len bytes) and check what a load needs. */
static int parse_state(struct snap_restore *r, char *err, size_t errlen)
{
	const struct snap_section *s;
	char perr[160];
	int ret, i;

	ret = snap_parse(r->file, r->file_len, &r->img, perr, sizeof(perr));
	if (ret)
		return snap_err(err, errlen, ret, "state: %s", perr);
	ret = -EINVAL;
	s = need(&r->img, SNAP_SEC_CONFIG, 0, sizeof(r->cfg), err, errlen);
	if (!s)
		return ret;
	memcpy(&r->cfg, s->data, sizeof(r->cfg));
	r->cfg.rootfs[sizeof(r->cfg.rootfs) - 1] = 0;
	if (r->cfg.flags & ~SNAP_CFG_ALL)
		return snap_err(err, errlen, ret,
				"state: unknown device flags %#x",
				r->cfg.flags & ~SNAP_CFG_ALL);
	if (r->cfg.flags & SNAP_CFG_NET) {
		s = need(&r->img, SNAP_SEC_NET, 0, sizeof(r->net), err, errlen);
		if (!s)
			return ret;
		memcpy(&r->net, s->data, sizeof(r->net));
	}
	if (r->cfg.flags & SNAP_CFG_DISK) {
		s = need(&r->img, SNAP_SEC_DISK, 0, sizeof(r->disk), err,
			 errlen);
		if (!s)
			return ret;
		memcpy(&r->disk, s->data, sizeof(r->disk));
		if (r->disk.reserved[0] || r->disk.reserved[1] ||
		    r->disk.size % CUBE_DISK_ALIGN ||
		    r->disk.size < CUBE_DISK_MIN || r->disk.size > CUBE_DISK_MAX)
			return snap_err(err, errlen, ret,
					"state: bad disk section");
	}
	if (r->cfg.mem_size != r->img.hdr.mem_size ||
	    r->cfg.nr_vcpus != r->img.hdr.nr_vcpus ||
	    r->cfg.mem_size < VM_MEM_MIN || r->cfg.mem_size > VM_MEM_MAX ||
	    r->cfg.mem_size % PAGE_SIZE || !r->cfg.nr_vcpus ||
	    r->cfg.nr_vcpus > VM_MAX_VCPUS)
		return snap_err(err, errlen, ret, "state: bad VM configuration");
	for (i = KVM_IRQCHIP_PIC_MASTER; i <= KVM_IRQCHIP_IOAPIC; i++) {
		s = need(&r->img, SNAP_SEC_IRQCHIP, i, sizeof(struct kvm_irqchip),
			 err, errlen);
		if (!s)
			return ret;
		if (((const struct kvm_irqchip *)s->data)->chip_id != (uint32_t)i)
			return snap_err(err, errlen, ret, "irqchip %d: bad id", i);
	}
	if (!need(&r->img, SNAP_SEC_PIT, 0, sizeof(struct kvm_pit_state2), err,
		  errlen) ||
	    !need(&r->img, SNAP_SEC_CLOCK, 0, sizeof(struct kvm_clock_data),
		  err, errlen) ||
	    !need(&r->img, SNAP_SEC_SERIAL, 0, sizeof(struct serial_regs), err,
		  errlen))
		return ret;
	return check_vcpus(r, err, errlen);
}

int snapshot_read_state(int dfd, struct snap_restore *r, char *err,
			size_t errlen)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->mem_fd = -1;
	ret = read_file(dfd, "state", &r->file, &r->file_len, err, errlen);
	if (!ret)
		ret = parse_state(r, err, errlen);
	if (ret)
		snapshot_close(r);
	return ret;
}

int snapshot_read_state_fd(int fd, struct snap_restore *r, char *err,
			   size_t errlen)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->mem_fd = -1;
	ret = read_fd(fd, "state", &r->file, &r->file_len, err, errlen);
	if (!ret)
		ret = parse_state(r, err, errlen);
	if (ret)
		snapshot_close(r);
	return ret;
}

int snapshot_open(struct snap_restore *r, const char *dir, bool verify_mem,
		  char *err, size_t errlen)
{
	struct stat st;
	int dfd, ret;

	memset(r, 0, sizeof(*r));
	r->mem_fd = -1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return snap_err(err, errlen, -errno, "cannot open %s: %s", dir,
				strerror(errno));
	ret = snapshot_read_state(dfd, r, err, errlen);
	if (ret)
		goto fail;

	r->mem_fd = openat(dfd, "memory", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (r->mem_fd < 0) {
		ret = snap_err(err, errlen, -errno, "cannot open memory: %s",
			       strerror(errno));
		goto fail;
	}
	if (fstat(r->mem_fd, &st) || !S_ISREG(st.st_mode)) {
		ret = snap_err(err, errlen, -EINVAL,
			       "memory is not a regular file");
		goto fail;
	}
	if ((uint64_t)st.st_size != r->cfg.mem_size) {
		ret = snap_err(err, errlen, -ENODATA,
			       "memory file has %lld bytes, the state says %llu",
			       (long long)st.st_size,
			       (unsigned long long)r->cfg.mem_size);
		goto fail;
	}
	if (verify_mem) {
		void *m = mmap(NULL, r->cfg.mem_size, PROT_READ, MAP_PRIVATE,
			       r->mem_fd, 0);

		if (m == MAP_FAILED) {
			ret = snap_err(err, errlen, -errno, "mapping memory: %s",
				       strerror(errno));
			goto fail;
		}
		ret = snap_crc32(m, r->cfg.mem_size) == r->img.hdr.mem_crc32 ?
		      0 : -EBADMSG;
		munmap(m, r->cfg.mem_size);
		if (ret) {
			snap_err(err, errlen, ret, "memory checksum mismatch");
			goto fail;
		}
	}
	close(dfd);
	return 0;
fail:
	close(dfd);
	snapshot_close(r);
	return ret;
}

void snapshot_close(struct snap_restore *r)
{
	snap_image_free(&r->img);
	free(r->file);
	r->file = NULL;
	if (r->mem_fd >= 0)
		close(r->mem_fd);
	r->mem_fd = -1;
}

static int set_msrs(struct vcpu *vcpu, const struct snap_section *s)
{
	size_t n = s->size / sizeof(struct kvm_msr_entry);
	struct kvm_msrs *msrs;
	size_t done = 0;
	int r;

	if (s->size % sizeof(struct kvm_msr_entry) || n > MAX_MSRS)
		return -EINVAL;
	msrs = calloc(1, sizeof(*msrs) + n * sizeof(msrs->entries[0]));
	if (!msrs)
		return -ENOMEM;
	memcpy(msrs->entries, s->data, s->size);
	/* KVM stops at the first MSR it refuses: skip that one, go on. */
	while (done < n) {
		struct kvm_msrs *part = (void *)((char *)msrs +
				done * sizeof(msrs->entries[0]));
		struct kvm_msrs hdr = *part;

		part->nmsrs = n - done;
		part->pad = 0;
		r = ioctl(vcpu->fd, KVM_SET_MSRS, part);
		*part = hdr;
		if (r < 0) {
			free(msrs);
			return -errno;
		}
		done += r;
		if (done < n) {
			pr_info("vCPU %d: MSR %#x not restored", vcpu->id,
				msrs->entries[done].index);
			done++;
		}
	}
	free(msrs);
	return 0;
}

/* The cpuid section holds raw entries; KVM wants a kvm_cpuid2 header. */
static int set_cpuid(struct vcpu *vcpu, const struct snap_section *s)
{
	size_t n = s->size / sizeof(struct kvm_cpuid_entry2);
	struct kvm_cpuid2 *c;
	int ret = 0;

	if (s->size % sizeof(struct kvm_cpuid_entry2) || !n || n > 4096)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + s->size);
	if (!c)
		return -ENOMEM;
	c->nent = n;
	memcpy(c->entries, s->data, s->size);
	if (ioctl(vcpu->fd, KVM_SET_CPUID2, c))
		ret = -errno;
	free(c);
	return ret;
}

#define LOAD(ioc, type, T) do {						\
	s = need(&r->img, type, vcpu->id, sizeof(T), err, errlen);	\
	if (!s)								\
		return -EINVAL;						\
	if (ioctl(vcpu->fd, ioc, s->data))				\
		return snap_err(err, errlen, -errno, "vCPU %d: %s: %s",	\
				vcpu->id, #ioc, strerror(errno));	\
} while (0)

/*
 * A vCPU that has run keeps its CPUID (KVM refuses to change it; a
 * rollback's is the one the restore set).
 */
static int load_vcpu(struct vcpu *vcpu, struct snap_restore *r, bool cpuid,
		     char *err, size_t errlen)
{
	const struct snap_section *s;
	int ret;

	if (cpuid) {
		s = need(&r->img, SNAP_SEC_VCPU_CPUID, vcpu->id, 0, err,
			 errlen);
		if (!s)
			return -EINVAL;
		ret = set_cpuid(vcpu, s);
		if (ret)
			return snap_err(err, errlen, ret, "vCPU %d: CPUID: %s",
					vcpu->id, strerror(-ret));
	}
	LOAD(KVM_SET_MP_STATE, SNAP_SEC_VCPU_MP_STATE, struct kvm_mp_state);
	LOAD(KVM_SET_REGS, SNAP_SEC_VCPU_REGS, struct kvm_regs);
	LOAD(KVM_SET_SREGS, SNAP_SEC_VCPU_SREGS, struct kvm_sregs);
	LOAD(KVM_SET_FPU, SNAP_SEC_VCPU_FPU, struct kvm_fpu);
	LOAD(KVM_SET_XSAVE, SNAP_SEC_VCPU_XSAVE, struct kvm_xsave);
	LOAD(KVM_SET_XCRS, SNAP_SEC_VCPU_XCRS, struct kvm_xcrs);
	LOAD(KVM_SET_DEBUGREGS, SNAP_SEC_VCPU_DEBUGREGS, struct kvm_debugregs);
	LOAD(KVM_SET_LAPIC, SNAP_SEC_VCPU_LAPIC, struct kvm_lapic_state);
	s = need(&r->img, SNAP_SEC_VCPU_MSRS, vcpu->id, 0, err, errlen);
	if (!s)
		return -EINVAL;
	ret = set_msrs(vcpu, s);
	if (ret)
		return snap_err(err, errlen, ret, "vCPU %d: MSRs: %s", vcpu->id,
				strerror(-ret));
	LOAD(KVM_SET_VCPU_EVENTS, SNAP_SEC_VCPU_EVENTS, struct kvm_vcpu_events);
	return 0;
}

static void dev_lock(struct virtio_mmio *t, bool locked, bool lock)
{
	if (locked)
		return;
	if (lock)
		pthread_mutex_lock(&t->lock);
	else
		pthread_mutex_unlock(&t->lock);
}

/* @locked: the caller holds every device's lock (snapshot_lock_devs()). */
static int load_devs(struct vm *vm, struct snap_restore *r, bool locked,
		     char *err, size_t errlen)
{
	static struct vsock_state vs;
	const struct snap_section *s;
	int i;

	s = snap_find(&r->img, SNAP_SEC_SERIAL, 0);
	serial_set_regs(vm->serial, s->data);
	for (i = 0; i < VM_MAX_DEVS; i++) {
		struct virtio_mmio *t = vm->devs[i];
		int ret;

		if (!t)
			continue;
		s = need(&r->img, SNAP_SEC_VIRTIO, i,
			 sizeof(struct virtio_mmio_state), err, errlen);
		if (!s)
			return -EINVAL;
		dev_lock(t, locked, true);
		ret = virtio_mmio_load(t, s->data);
		dev_lock(t, locked, false);
		if (ret)
			return snap_err(err, errlen, ret,
					"device %d: state does not fit", i);
	}
	if (vm->devs[VM_DEV_VSOCK]) {
		struct virtio_mmio *t = vm->devs[VM_DEV_VSOCK];
		int ret;

		s = need(&r->img, SNAP_SEC_VSOCK, 0, 0, err, errlen);
		if (!s)
			return -EINVAL;
		memset(&vs, 0, sizeof(vs));
		if (s->size < offsetof(struct vsock_state, conns) ||
		    s->size > sizeof(vs))
			return snap_err(err, errlen, -EINVAL,
					"vsock section has a bad size");
		memcpy(&vs, s->data, s->size);
		if (s->size != offsetof(struct vsock_state, conns) +
		    (uint64_t)vs.nr_conns * sizeof(vs.conns[0]))
			return snap_err(err, errlen, -EINVAL,
					"vsock section has a bad size");
		dev_lock(t, locked, true);
		ret = vsock_load(t, &vs);
		dev_lock(t, locked, false);
		if (ret)
			return snap_err(err, errlen, ret, "vsock state");
	}
	if (vm->devs[VM_DEV_NET]) {
		struct virtio_mmio *t = vm->devs[VM_DEV_NET];
		int ret;

		dev_lock(t, locked, true);
		ret = virtio_net_load(t, &r->net);
		dev_lock(t, locked, false);
		if (ret)
			return snap_err(err, errlen, ret, "virtio-net state");
	}
	return 0;
}

static int load(struct vm *vm, struct snap_restore *r, bool live, char *err,
		size_t errlen)
{
	const struct snap_section *s;
	int i, ret;

	for (i = KVM_IRQCHIP_PIC_MASTER; i <= KVM_IRQCHIP_IOAPIC; i++) {
		s = snap_find(&r->img, SNAP_SEC_IRQCHIP, i);
		if (((const struct kvm_irqchip *)s->data)->chip_id != (uint32_t)i)
			return snap_err(err, errlen, -EINVAL, "irqchip %d: bad id", i);
		if (ioctl(vm->vm_fd, KVM_SET_IRQCHIP, s->data))
			return snap_err(err, errlen, -errno, "KVM_SET_IRQCHIP: %s",
					strerror(errno));
	}
	s = snap_find(&r->img, SNAP_SEC_PIT, 0);
	if (ioctl(vm->vm_fd, KVM_SET_PIT2, s->data))
		return snap_err(err, errlen, -errno, "KVM_SET_PIT2: %s",
				strerror(errno));
	for (i = 0; i < vm->nr_vcpus; i++) {
		ret = load_vcpu(&vm->vcpus[i], r, !live, err, errlen);
		if (ret)
			return ret;
	}
	ret = load_devs(vm, r, live, err, errlen);
	if (ret)
		return ret;
	s = snap_find(&r->img, SNAP_SEC_CLOCK, 0);
	{
		struct kvm_clock_data clock;

		memcpy(&clock, s->data, sizeof(clock));
		clock.flags = 0;
		if (ioctl(vm->vm_fd, KVM_SET_CLOCK, &clock))
			return snap_err(err, errlen, -errno, "KVM_SET_CLOCK: %s",
					strerror(errno));
	}
	return 0;
}

int snapshot_load(struct vm *vm, struct snap_restore *r, char *err,
		  size_t errlen)
{
	return load(vm, r, false, err, errlen);
}

int snapshot_check_devs(struct vm *vm, const struct snap_restore *r,
			char *err, size_t errlen)
{
	const struct virtio_mmio_state *ms;
	const struct snap_section *s;
	int i;

	if (r->cfg.mem_size != vm->mem.size ||
	    r->cfg.nr_vcpus != (uint32_t)vm->nr_vcpus ||
	    !(r->cfg.flags & SNAP_CFG_BLK) != !vm->devs[VM_DEV_BLK] ||
	    !(r->cfg.flags & SNAP_CFG_NET) != !vm->devs[VM_DEV_NET] ||
	    !(r->cfg.flags & SNAP_CFG_DISK) != !vm->devs[VM_DEV_DISK])
		return snap_err(err, errlen, -EINVAL,
				"the state is of another VM shape");
	if (vm->devs[VM_DEV_DISK] &&
	    r->disk.size > virtio_blk_size(vm->devs[VM_DEV_DISK]))
		return snap_err(err, errlen, -EINVAL,
				"its disk is larger than this VM's");
	for (i = 0; i < VM_MAX_DEVS; i++) {
		if (!vm->devs[i])
			continue;
		s = need(&r->img, SNAP_SEC_VIRTIO, i,
			 sizeof(struct virtio_mmio_state), err, errlen);
		if (!s)
			return -EINVAL;
		ms = (const void *)s->data;
		if (ms->device_id != vm->devs[i]->ops->device_id ||
		    ms->nr_queues != vm->devs[i]->ops->nr_queues)
			return snap_err(err, errlen, -EINVAL,
					"device %d: state does not fit", i);
	}
	if (vm->devs[VM_DEV_VSOCK]) {
		s = need(&r->img, SNAP_SEC_VSOCK, 0, 0, err, errlen);
		if (!s)
			return -EINVAL;
		if (s->size < offsetof(struct vsock_state, conns) ||
		    s->size > sizeof(struct vsock_state))
			return snap_err(err, errlen, -EINVAL,
					"vsock section has a bad size");
	}
	return 0;
}

int snapshot_reload(struct vm *vm, struct snap_restore *r, char *err,
		    size_t errlen)
{
	return load(vm, r, true, err, errlen);
}
