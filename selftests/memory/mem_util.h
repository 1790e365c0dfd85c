/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mem_util.h: helpers of the memory selftests (snapshots and clones).
 * Each returns what the ioctl returned: -1 with errno set on failure.
 */
#ifndef MEM_UTIL_H
#define MEM_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/cube.h>

#define PAGE		4096UL
#define MiB		(1UL << 20)

static inline int mem_open_dev(void)
{
	return open("/dev/" CUBE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
}

static inline int mem_snapshot_user(int dev, const void *addr, uint64_t len,
				    uint64_t *id)
{
	struct cube_snapshot_create c = {
		.source = CUBE_SNAPSHOT_SRC_USER,
		.fd = -1,
		.addr = (uintptr_t)addr,
		.length = len,
	};
	int ret = ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c);

	if (!ret)
		*id = c.id;
	return ret;
}

static inline int mem_snapshot_memfd(int dev, int fd, uint64_t off,
				     uint64_t len, uint64_t *id)
{
	struct cube_snapshot_create c = {
		.source = CUBE_SNAPSHOT_SRC_MEMFD,
		.fd = fd,
		.offset = off,
		.length = len,
	};
	int ret = ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c);

	if (!ret)
		*id = c.id;
	return ret;
}

static inline int mem_snapshot_clone(int dev, int clone, uint64_t *id)
{
	struct cube_snapshot_create c = {
		.source = CUBE_SNAPSHOT_SRC_CLONE,
		.fd = clone,
	};
	int ret = ioctl(dev, CUBE_IOC_SNAPSHOT_CREATE, &c);

	if (!ret)
		*id = c.id;
	return ret;
}

static inline int mem_snapshot_delete(int dev, uint64_t id)
{
	struct cube_snapshot_id d = { .id = id };

	return ioctl(dev, CUBE_IOC_SNAPSHOT_DELETE, &d);
}

static inline int mem_snapshot_info(int dev, uint64_t id,
				    struct cube_snapshot_info *info)
{
	memset(info, 0, sizeof(*info));
	info->id = id;
	return ioctl(dev, CUBE_IOC_SNAPSHOT_INFO, info);
}

static inline int mem_clone(int dev, uint64_t id, uint32_t flags)
{
	struct cube_clone_create c = { .snapshot_id = id, .flags = flags };

	return ioctl(dev, CUBE_IOC_CLONE_CREATE, &c);
}

static inline int mem_counters(int clone, struct cube_clone_counters *c)
{
	return ioctl(clone, CUBE_IOC_CLONE_COUNTERS, c);
}

static inline int mem_stats(int dev, struct cube_mem_stats *st)
{
	return ioctl(dev, CUBE_IOC_MEM_STATS, st);
}

/*
 * The next snapshot id, found by taking and deleting a one-page snapshot:
 * ids grow, so the snapshots a test made lie between two probes.
 */
static inline uint64_t mem_probe_id(int dev)
{
	static const char page[PAGE] __attribute__((aligned(PAGE)));
	uint64_t id = 0;

	if (mem_snapshot_user(dev, page, PAGE, &id))
		return 0;
	mem_snapshot_delete(dev, id);
	return id;
}

/* Delete whatever snapshot is left with an id between two probes. */
static inline void mem_delete_since(int dev, uint64_t first)
{
	uint64_t last = mem_probe_id(dev), id;

	if (!first || !last)
		return;
	for (id = first + 1; id < last; id++)
		mem_snapshot_delete(dev, id);
}

/* A shared read-write mapping of a whole clone. */
static inline void *mem_map(int clone, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, clone, 0);
}

/* An anonymous region with @pattern's byte (page index + seed) in some pages. */
static inline void *mem_region(size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

#endif /* MEM_UTIL_H */
