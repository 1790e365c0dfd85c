// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot_fuzz: the restore path that consumes a state file.  The input
 * (after a first byte that, when odd, makes its checksums right: see
 * snap_fix.h) is written as a snapshot directory's state file next to a
 * memory file of VM_MEM_MIN bytes; snapshot_open() reads and checks it
 * as cube-vmm does, and what it accepts is loaded by snapshot_load() into
 * a VM whose vsock, rng and virtio-net devices are the VMM's own, over a
 * stand-in for KVM (vmm_shim.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_vm.h"
#include "fuzz.h"
#include "snap_fix.h"
#include "snapshot.h"
#include "util.h"
#include "vm.h"

static struct vm *vm;
static char dir[64];
static char state_path[96];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void cleanup(void)
{
	char path[96];

	unlink(state_path);
	snprintf(path, sizeof(path), "%s/memory", dir);
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[96];
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/cube-fuzz-snapshot.XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp");
	snprintf(state_path, sizeof(state_path), "%s/state", dir);
	snprintf(path, sizeof(path), "%s/memory", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, VM_MEM_MIN))
		die("memory file");
	close(fd);
	atexit(cleanup);
	vm = fake_vm();
	return 0;
}

static void write_state(const uint8_t *data, size_t size)
{
	int fd = open(state_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0600);

	if (fd < 0 || write_full(fd, data, size))
		die("state file");
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snap_restore r;
	char err[256];
	uint8_t *buf;
	int ret;

	if (!size)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	if (data[0] & 1)
		snap_fix(buf, size - 1);
	write_state(buf, size - 1);
	free(buf);

	err[0] = 0;
	ret = snapshot_open(&r, dir, false, err, sizeof(err));
	if (ret) {
		if (ret > 0 || !err[0] || r.file || r.img.secs || r.mem_fd >= 0)
			abort();	/* refused: says why, holds nothing */
		return 0;
	}
	if (!r.cfg.nr_vcpus || r.cfg.nr_vcpus > VM_MAX_VCPUS ||
	    r.cfg.mem_size != VM_MEM_MIN || r.mem_fd < 0)
		abort();
	vm->nr_vcpus = r.cfg.nr_vcpus;
	err[0] = 0;
	ret = snapshot_load(vm, &r, err, sizeof(err));
	if (ret && (ret > 0 || !err[0]))
		abort();
	snapshot_close(&r);
	return 0;
}
