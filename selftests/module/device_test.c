// SPDX-License-Identifier: GPL-2.0
/*
 * device_test: /dev/cube exists, is root-only, and answers its basic ioctls.
 */
#include <fcntl.h>
#include <linux/cube.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cube_test.h"

#define DEV "/dev/" CUBE_DEVICE_NAME

TEST(node_is_root_only_char_device)
{
	struct stat st;

	ASSERT_OK(stat(DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(st.st_mode & 07777, 0600u);
	EXPECT_EQ(st.st_uid, 0u);
	EXPECT_EQ(major(st.st_rdev), 10u);	/* a misc device */
}

TEST(version_ioctl)
{
	struct cube_version v;
	int fd;

	fd = open(DEV, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	memset(&v, 0xff, sizeof(v));
	ASSERT_OK(ioctl(fd, CUBE_IOC_VERSION, &v));
	EXPECT_EQ(v.api_version, (unsigned int)CUBE_API_VERSION);
	EXPECT_EQ(v.genl_version, (unsigned int)CUBE_GENL_VERSION);
	EXPECT_EQ(v.reserved, 0ull);
	EXPECT_ERRNO(ioctl(fd, CUBE_IOC_VERSION, (void *)8), EFAULT);
	close(fd);
}

TEST(unknown_ioctls_are_enotty)
{
	int fd = open(DEV, O_RDWR | O_CLOEXEC);

	ASSERT_GE(fd, 0);
	/* same number, other size or direction */
	EXPECT_ERRNO(ioctl(fd, _IOR(CUBE_IOCTL_MAGIC, 0x00, __u32), 0), ENOTTY);
	EXPECT_ERRNO(ioctl(fd, _IOW(CUBE_IOCTL_MAGIC, 0x00, struct cube_version), 0),
		     ENOTTY);
	/* other magic, unused numbers */
	EXPECT_ERRNO(ioctl(fd, _IO('K', 0x00), 0), ENOTTY);
	EXPECT_ERRNO(ioctl(fd, _IO(CUBE_IOCTL_MAGIC, 0xff), 0), ENOTTY);
	EXPECT_ERRNO(ioctl(fd, _IO(CUBE_IOCTL_MAGIC, 0x0f), 0), ENOTTY);
	close(fd);
}

TEST(unprivileged_open_is_refused)
{
	struct passwd *pw = getpwnam("nobody");
	uid_t uid = pw ? pw->pw_uid : 65534;

	ASSERT_OK(setgid(uid));
	ASSERT_OK(setuid(uid));
	EXPECT_ERRNO(open(DEV, O_RDWR | O_CLOEXEC), EACCES);
}

TEST_MAIN()
