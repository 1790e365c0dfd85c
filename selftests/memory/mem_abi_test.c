// SPDX-License-Identifier: GPL-2.0
/*
 * mem_abi_test: the layout of the snapshot and clone ioctl structures and
 * their command numbers, as the ABI promises (the same on 32-bit and 64-bit
 * userspace: no implicit padding).  Native, no /dev/cube needed.
 */
#include <stddef.h>

#include "cube_test.h"
#include <linux/cube.h>

#define CHECK_SIZE(t, n)	ASSERT_EQ(sizeof(struct t), (size_t)(n))
#define CHECK_OFF(t, f, n)	ASSERT_EQ(offsetof(struct t, f), (size_t)(n))

TEST(struct_layout)
{
	CHECK_SIZE(cube_snapshot_create, 48);
	CHECK_OFF(cube_snapshot_create, fd, 4);
	CHECK_OFF(cube_snapshot_create, offset, 16);
	CHECK_OFF(cube_snapshot_create, addr, 24);
	CHECK_OFF(cube_snapshot_create, length, 32);
	CHECK_OFF(cube_snapshot_create, id, 40);
	CHECK_SIZE(cube_snapshot_id, 16);
	CHECK_SIZE(cube_snapshot_info, 64);
	CHECK_OFF(cube_snapshot_info, size, 16);
	CHECK_OFF(cube_snapshot_info, ws_pages, 56);
	CHECK_SIZE(cube_clone_create, 24);
	CHECK_OFF(cube_clone_create, fd, 12);
	CHECK_SIZE(cube_clone_counters, 72);
	CHECK_OFF(cube_clone_counters, around, 56);
	CHECK_SIZE(cube_mem_stats, 32);
}

TEST(command_numbers)
{
	unsigned int cmds[] = {
		CUBE_IOC_SNAPSHOT_CREATE, CUBE_IOC_SNAPSHOT_DELETE,
		CUBE_IOC_SNAPSHOT_INFO, CUBE_IOC_CLONE_CREATE,
		CUBE_IOC_MEM_STATS, CUBE_IOC_CLONE_RESET,
		CUBE_IOC_CLONE_COUNTERS, CUBE_IOC_CLONE_REWIND,
		CUBE_IOC_CLONE_TRIM, CUBE_IOC_CLONE_MERGE,
	};
	unsigned int i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(_IOC_TYPE(cmds[i]), CUBE_IOCTL_MAGIC);
		EXPECT_GE(_IOC_NR(cmds[i]), 0x30u);
		EXPECT_LE(_IOC_NR(cmds[i]), 0x4fu);
	}
	EXPECT_EQ(_IOC_SIZE(CUBE_IOC_SNAPSHOT_CREATE),
		  sizeof(struct cube_snapshot_create));
	EXPECT_EQ(_IOC_DIR(CUBE_IOC_SNAPSHOT_CREATE),
		  (unsigned int)(_IOC_READ | _IOC_WRITE));
	EXPECT_EQ(_IOC_DIR(CUBE_IOC_SNAPSHOT_DELETE), (unsigned int)_IOC_WRITE);
	EXPECT_EQ(_IOC_DIR(CUBE_IOC_CLONE_COUNTERS), (unsigned int)_IOC_READ);
	EXPECT_EQ(_IOC_SIZE(CUBE_IOC_CLONE_RESET), 0u);
	EXPECT_EQ(_IOC_SIZE(CUBE_IOC_CLONE_REWIND),
		  sizeof(struct cube_clone_rewind));
	EXPECT_EQ(_IOC_DIR(CUBE_IOC_CLONE_REWIND),
		  (unsigned int)(_IOC_READ | _IOC_WRITE));
	EXPECT_EQ(_IOC_SIZE(CUBE_IOC_CLONE_TRIM),
		  sizeof(struct cube_clone_trim));
	EXPECT_EQ(_IOC_SIZE(CUBE_IOC_CLONE_MERGE),
		  sizeof(struct cube_clone_merge));
	EXPECT_EQ(CUBE_SNAPSHOT_A_MAX, 9);
	EXPECT_EQ(CUBE_CLONE_F_ALL, 3u);
}

TEST_MAIN()
