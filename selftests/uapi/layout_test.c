// SPDX-License-Identifier: GPL-2.0
/*
 * layout_test: every structure of uapi/linux/cube.h, field by field, at the
 * offset and with the size the ABI fixes, and every ioctl number with its
 * direction, number and argument size, written out here as numbers (never
 * derived from the header), so a moved, resized or inserted field is
 * caught.  The same table is checked twice: by static_assert, so such a
 * header does not build, and at run time, so the program (in the uapi
 * group of the VM harness) reports each field; build with
 * -DCUBE_LAYOUT_RUNTIME_ONLY to see the run-time report of a broken header.
 *
 * No implicit padding anywhere: each structure's fields cover it exactly,
 * which keeps 32-bit and 64-bit userspace on one layout.
 */
#include <assert.h>
#include <stddef.h>

#include "cube_test.h"
#include <linux/cube.h>

/* X(struct, field, offset, size): every field of every ioctl structure. */
#define CUBE_UAPI_FIELDS(X)						\
	X(cube_version, api_version, 0, 4)				\
	X(cube_version, genl_version, 4, 4)				\
	X(cube_version, reserved, 8, 8)					\
	X(cube_sandbox_create, flags, 0, 4)				\
	X(cube_sandbox_create, reserved, 4, 4)				\
	X(cube_sandbox_create, id, 8, 8)				\
	X(cube_fd_arg, fd, 0, 4)					\
	X(cube_fd_arg, flags, 4, 4)					\
	X(cube_sandbox_state_arg, state, 0, 4)				\
	X(cube_sandbox_state_arg, exit_reason, 4, 4)			\
	X(cube_sandbox_state_arg, reserved, 8, 8)			\
	X(cube_sandbox_limits, flags, 0, 4)				\
	X(cube_sandbox_limits, vcpus, 4, 4)				\
	X(cube_sandbox_limits, memory_bytes, 8, 8)			\
	X(cube_sandbox_limits, owner_uid, 16, 4)			\
	X(cube_sandbox_limits, reserved, 20, 4)				\
	X(cube_sandbox_limits, template_name, 24, 64)			\
	X(cube_sandbox_label, flags, 0, 4)				\
	X(cube_sandbox_label, reserved, 4, 4)				\
	X(cube_sandbox_label, key, 8, 64)				\
	X(cube_sandbox_label, value, 72, 128)				\
	X(cube_sandbox_info, id, 0, 8)					\
	X(cube_sandbox_info, state, 8, 4)				\
	X(cube_sandbox_info, exit_reason, 12, 4)			\
	X(cube_sandbox_info, flags, 16, 4)				\
	X(cube_sandbox_info, vcpus, 20, 4)				\
	X(cube_sandbox_info, vm_vcpus, 24, 4)				\
	X(cube_sandbox_info, nr_bpf_links, 28, 4)			\
	X(cube_sandbox_info, memory_bytes, 32, 8)			\
	X(cube_sandbox_info, netns_cookie, 40, 8)			\
	X(cube_sandbox_info, private_pages, 48, 8)			\
	X(cube_sandbox_info, shared_pages, 56, 8)			\
	X(cube_sandbox_info, vm_memory_bytes, 64, 8)			\
	X(cube_pool_arg, flags, 0, 4)					\
	X(cube_pool_arg, reserved, 4, 4)				\
	X(cube_pool_arg, name, 8, 64)					\
	X(cube_pool_arg, id, 72, 8)					\
	X(cube_pool_arg, owner_pid, 80, 4)				\
	X(cube_pool_arg, reserved2, 84, 4)				\
	X(cube_sandbox_ref, id, 0, 8)					\
	X(cube_sandbox_ref, flags, 8, 4)				\
	X(cube_sandbox_ref, reserved, 12, 4)				\
	X(cube_snapshot_create, source, 0, 4)				\
	X(cube_snapshot_create, fd, 4, 4)				\
	X(cube_snapshot_create, flags, 8, 4)				\
	X(cube_snapshot_create, reserved, 12, 4)			\
	X(cube_snapshot_create, offset, 16, 8)				\
	X(cube_snapshot_create, addr, 24, 8)				\
	X(cube_snapshot_create, length, 32, 8)				\
	X(cube_snapshot_create, id, 40, 8)				\
	X(cube_snapshot_id, id, 0, 8)					\
	X(cube_snapshot_id, flags, 8, 4)				\
	X(cube_snapshot_id, reserved, 12, 4)				\
	X(cube_snapshot_info, id, 0, 8)					\
	X(cube_snapshot_info, flags, 8, 4)				\
	X(cube_snapshot_info, depth, 12, 4)				\
	X(cube_snapshot_info, size, 16, 8)				\
	X(cube_snapshot_info, pages, 24, 8)				\
	X(cube_snapshot_info, parent_id, 32, 8)				\
	X(cube_snapshot_info, clones, 40, 8)				\
	X(cube_snapshot_info, children, 48, 8)				\
	X(cube_snapshot_info, ws_pages, 56, 8)				\
	X(cube_clone_create, snapshot_id, 0, 8)				\
	X(cube_clone_create, flags, 8, 4)				\
	X(cube_clone_create, fd, 12, 4)					\
	X(cube_clone_create, reserved, 16, 8)				\
	X(cube_clone_counters, snapshot_id, 0, 8)			\
	X(cube_clone_counters, size, 8, 8)				\
	X(cube_clone_counters, private_pages, 16, 8)			\
	X(cube_clone_counters, shared_pages, 24, 8)			\
	X(cube_clone_counters, faults, 32, 8)				\
	X(cube_clone_counters, cow_faults, 40, 8)			\
	X(cube_clone_counters, prefaulted, 48, 8)			\
	X(cube_clone_counters, around, 56, 8)				\
	X(cube_clone_counters, resets, 64, 8)				\
	X(cube_clone_rewind, keep_pages, 0, 8)				\
	X(cube_clone_rewind, flags, 8, 4)				\
	X(cube_clone_rewind, reserved, 12, 4)				\
	X(cube_clone_rewind, kept, 16, 8)				\
	X(cube_clone_rewind, dropped, 24, 8)				\
	X(cube_clone_trim, flags, 0, 4)					\
	X(cube_clone_trim, reserved, 4, 4)				\
	X(cube_clone_trim, scanned, 8, 8)				\
	X(cube_clone_trim, dropped, 16, 8)				\
	X(cube_clone_merge, group, 0, 8)				\
	X(cube_clone_merge, flags, 8, 4)				\
	X(cube_clone_merge, reserved, 12, 4)				\
	X(cube_clone_merge, scanned, 16, 8)				\
	X(cube_clone_merge, merged, 24, 8)				\
	X(cube_clone_merge, promoted, 32, 8)				\
	X(cube_mem_stats, snapshots, 0, 8)				\
	X(cube_mem_stats, clones, 8, 8)					\
	X(cube_mem_stats, shared_pages, 16, 8)				\
	X(cube_mem_stats, private_pages, 24, 8)

/* X(struct, size) */
#define CUBE_UAPI_STRUCTS(X)						\
	X(cube_version, 16)						\
	X(cube_sandbox_create, 16)					\
	X(cube_fd_arg, 8)						\
	X(cube_sandbox_state_arg, 16)					\
	X(cube_sandbox_limits, 88)					\
	X(cube_sandbox_label, 200)					\
	X(cube_sandbox_info, 72)					\
	X(cube_pool_arg, 88)						\
	X(cube_sandbox_ref, 16)						\
	X(cube_snapshot_create, 48)					\
	X(cube_snapshot_id, 16)						\
	X(cube_snapshot_info, 64)					\
	X(cube_clone_create, 24)					\
	X(cube_clone_counters, 72)					\
	X(cube_clone_rewind, 32)					\
	X(cube_clone_trim, 24)						\
	X(cube_clone_merge, 40)						\
	X(cube_mem_stats, 32)

/*
 * X(command, direction, number, argument size): _IOC_WRITE is 1 and
 * _IOC_READ 2 on the architectures cube builds for (x86, arm64).
 */
#define CUBE_UAPI_IOCTLS(X)						\
	X(CUBE_IOC_VERSION, 2, 0x00, 16)				\
	X(CUBE_IOC_SANDBOX_CREATE, 3, 0x10, 16)				\
	X(CUBE_IOC_POOL_TAKE, 3, 0x11, 88)				\
	X(CUBE_IOC_SANDBOX_NETNS_OPEN, 1, 0x12, 16)			\
	X(CUBE_IOC_SANDBOX_BIND_VM, 1, 0x18, 8)				\
	X(CUBE_IOC_SANDBOX_SET_NETNS, 1, 0x19, 8)			\
	X(CUBE_IOC_SANDBOX_ADD_BPF_LINK, 1, 0x1a, 8)			\
	X(CUBE_IOC_SANDBOX_SET_CLONE, 1, 0x1b, 8)			\
	X(CUBE_IOC_SANDBOX_SET_STATE, 1, 0x1c, 16)			\
	X(CUBE_IOC_SANDBOX_SET_LIMITS, 1, 0x1d, 88)			\
	X(CUBE_IOC_SANDBOX_SET_LABEL, 1, 0x1e, 200)			\
	X(CUBE_IOC_SANDBOX_GET_INFO, 2, 0x1f, 72)			\
	X(CUBE_IOC_SANDBOX_POOL_ENTER, 1, 0x20, 88)			\
	X(CUBE_IOC_SANDBOX_POOL_LEAVE, 0, 0x21, 0)			\
	X(CUBE_IOC_SNAPSHOT_CREATE, 3, 0x30, 48)			\
	X(CUBE_IOC_SNAPSHOT_DELETE, 1, 0x31, 16)			\
	X(CUBE_IOC_SNAPSHOT_INFO, 3, 0x32, 64)				\
	X(CUBE_IOC_CLONE_CREATE, 3, 0x33, 24)				\
	X(CUBE_IOC_MEM_STATS, 2, 0x34, 32)				\
	X(CUBE_IOC_CLONE_RESET, 0, 0x40, 0)				\
	X(CUBE_IOC_CLONE_COUNTERS, 2, 0x41, 72)				\
	X(CUBE_IOC_CLONE_REWIND, 3, 0x42, 32)				\
	X(CUBE_IOC_CLONE_TRIM, 3, 0x43, 24)				\
	X(CUBE_IOC_CLONE_MERGE, 3, 0x44, 40)

/* X(constant, value): values that travel in the structures above. */
#define CUBE_UAPI_VALUES(X)						\
	X(CUBE_IOCTL_MAGIC, 0xCB)					\
	X(CUBE_NAME_MAX, 64)						\
	X(CUBE_LABEL_VALUE_MAX, 128)					\
	X(CUBE_SANDBOX_CREATING, 0)					\
	X(CUBE_SANDBOX_READY, 1)					\
	X(CUBE_SANDBOX_RUNNING, 2)					\
	X(CUBE_SANDBOX_PAUSED, 3)					\
	X(CUBE_SANDBOX_EXITED, 4)					\
	X(CUBE_EXIT_NONE, 0)						\
	X(CUBE_EXIT_SHUTDOWN, 1)					\
	X(CUBE_EXIT_CRASH, 2)						\
	X(CUBE_EXIT_KILLED, 3)						\
	X(CUBE_EXIT_ERROR, 4)						\
	X(CUBE_EXIT_CLOSED, 5)						\
	X(CUBE_SANDBOX_F_KILL_REQUESTED, 0x1)				\
	X(CUBE_SANDBOX_F_POOLED, 0x2)					\
	X(CUBE_SANDBOX_F_TAKEN, 0x4)					\
	X(CUBE_SANDBOX_F_VM, 0x8)					\
	X(CUBE_SANDBOX_F_NETNS, 0x10)					\
	X(CUBE_SANDBOX_F_CLONE, 0x20)					\
	X(CUBE_LABEL_F_DELETE, 0x1)					\
	X(CUBE_SNAPSHOT_SRC_MEMFD, 1)					\
	X(CUBE_SNAPSHOT_SRC_USER, 2)					\
	X(CUBE_SNAPSHOT_SRC_CLONE, 3)					\
	X(CUBE_CLONE_F_PREFAULT, 0x1)					\
	X(CUBE_CLONE_F_RECORD, 0x2)

#define FIELD_SIZE(t, f)	sizeof(((struct t *)0)->f)

#ifndef CUBE_LAYOUT_RUNTIME_ONLY
#define STATIC_FIELD(t, f, off, size)					\
	static_assert(offsetof(struct t, f) == (off) &&			\
		      FIELD_SIZE(t, f) == (size),			\
		      "struct " #t "." #f ": not " #size " bytes at " #off);
#define STATIC_STRUCT(t, size)						\
	static_assert(sizeof(struct t) == (size),			\
		      "struct " #t ": not " #size " bytes");
#define STATIC_IOCTL(cmd, dir, nr, size)				\
	static_assert(_IOC_TYPE(cmd) == 0xCB && _IOC_DIR(cmd) == (dir) &&	\
		      _IOC_NR(cmd) == (nr) && _IOC_SIZE(cmd) == (size), \
		      #cmd ": not dir " #dir ", nr " #nr ", " #size " bytes");
#define STATIC_VALUE(c, v)						\
	static_assert((c) == (v), #c " is not " #v);

CUBE_UAPI_FIELDS(STATIC_FIELD)
CUBE_UAPI_STRUCTS(STATIC_STRUCT)
CUBE_UAPI_IOCTLS(STATIC_IOCTL)
CUBE_UAPI_VALUES(STATIC_VALUE)
#endif

struct field_want {
	const char *type, *field;
	size_t off, size, want_off, want_size;
};

#define FIELD_ENTRY(t, f, o, s)						\
	{ #t, #f, offsetof(struct t, f), FIELD_SIZE(t, f), o, s },

static const struct field_want fields[] = { CUBE_UAPI_FIELDS(FIELD_ENTRY) };

struct struct_want {
	const char *type;
	size_t size, want;
};

#define STRUCT_ENTRY(t, s)	{ #t, sizeof(struct t), s },

static const struct struct_want structs[] = { CUBE_UAPI_STRUCTS(STRUCT_ENTRY) };

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

TEST(fields_at_their_offsets)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(fields); i++) {
		const struct field_want *w = &fields[i];

		if (w->off != w->want_off || w->size != w->want_size)
			CT_FAIL_AT(0, "struct %s.%s: %zu bytes at %zu, the ABI says %zu at %zu",
				   w->type, w->field, w->size, w->off,
				   w->want_size, w->want_off);
	}
}

TEST(structs_have_their_sizes_and_no_padding)
{
	size_t i, j;

	for (i = 0; i < ARRAY_LEN(structs); i++) {
		const struct struct_want *w = &structs[i];
		size_t covered = 0, fields_seen = 0;

		if (w->size != w->want)
			CT_FAIL_AT(0, "struct %s: %zu bytes, the ABI says %zu",
				   w->type, w->size, w->want);
		/* the listed fields, back to back, fill it: no hole, no extra */
		for (j = 0; j < ARRAY_LEN(fields); j++) {
			if (strcmp(fields[j].type, w->type))
				continue;
			if (fields[j].off != covered)
				CT_FAIL_AT(0, "struct %s.%s: at %zu, after %zu bytes of fields",
					   w->type, fields[j].field,
					   fields[j].off, covered);
			covered = fields[j].off + fields[j].size;
			fields_seen++;
		}
		if (!fields_seen || covered != w->size)
			CT_FAIL_AT(0, "struct %s: its fields cover %zu of %zu bytes",
				   w->type, covered, w->size);
	}
}

static void check_ioctl(const char *name, unsigned int cmd, unsigned int dir,
			unsigned int nr, unsigned int size)
{
	unsigned int want = dir << 30 | size << 16 | 0xCBu << 8 | nr;

	if (cmd != want)
		CT_FAIL_AT(0, "%s is %#x (dir %u, type %#x, nr %#x, %u bytes), the ABI says %#x (dir %u, nr %#x, %u bytes)",
			   name, cmd, _IOC_DIR(cmd), _IOC_TYPE(cmd),
			   _IOC_NR(cmd), _IOC_SIZE(cmd), want, dir, nr, size);
}

#define CHECK_IOCTL(cmd, dir, nr, size)	check_ioctl(#cmd, cmd, dir, nr, size);

TEST(ioctl_numbers)
{
	EXPECT_EQ(_IOC_WRITE, 1u);
	EXPECT_EQ(_IOC_READ, 2u);
	CUBE_UAPI_IOCTLS(CHECK_IOCTL)
}

#define CHECK_VALUE(c, v)	EXPECT_EQ((long long)(c), (long long)(v));

TEST(constant_values)
{
	CUBE_UAPI_VALUES(CHECK_VALUE)
}

TEST_MAIN()
