// SPDX-License-Identifier: GPL-2.0
/*
 * log_unit: cube-vmm's own messages are bounded (vmm/util.c).  A guest can
 * make the VMM complain in a loop; the log file on the host must not grow
 * with it: a burst, then a rate, then a cap on the bytes, with what was
 * dropped counted and said.  Native.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "cube_test.h"
#include "util.h"

/*
 * stderr into a fresh file opened with @flags (O_WRONLY: the log stops at
 * its cap; O_RDWR: it keeps its newest half); its path in @path.
 */
static int capture_as(char *path, size_t len, int flags)
{
	int fd;

	snprintf(path, len, "/tmp/log_unit.%d", getpid());
	fd = open(path, flags | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		return -1;
	close(fd);
	return 0;
}

static int capture(char *path, size_t len)
{
	return capture_as(path, len, O_WRONLY | O_APPEND);
}

/* Lines of @path that contain @what. */
static int count_lines(const char *path, const char *what)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

TEST(burst_then_rate_then_a_count_of_the_dropped)
{
	char path[64], note[96];
	int i, logged;

	ASSERT_OK(capture(path, sizeof(path)));
	vmm_log_set_limits(10, 20, 1 << 20);
	for (i = 0; i < 500; i++)
		pr_err("device reset by the guest (%d)", i);
	/* the burst, and a few the rate refilled meanwhile */
	logged = count_lines(path, "device reset");
	EXPECT_GE(logged, 20);
	EXPECT_LE(logged, 25);
	EXPECT_EQ(count_lines(path, "messages dropped"), 0);
	usleep(300 * 1000);
	pr_err("after a pause");
	EXPECT_EQ(count_lines(path, "after a pause"), 1);
	/* said once, with how many */
	snprintf(note, sizeof(note),
		 "cube-vmm: %d messages dropped (over 10 a second)",
		 500 - logged);
	EXPECT_EQ(count_lines(path, note), 1);
	unlink(path);
}

TEST(the_bytes_are_capped)
{
	char path[64];
	struct stat st;
	int i;

	ASSERT_OK(capture(path, sizeof(path)));
	vmm_log_set_limits(1000000, 1000000, 4096);
	for (i = 0; i < 1000; i++)
		pr_err("a message of about fifty bytes, number %04d", i);
	ASSERT_OK(stat(path, &st));
	EXPECT_LE(st.st_size, 4096 + 100);
	EXPECT_EQ(count_lines(path, "4096 bytes of messages logged: the rest are dropped"), 1);
	EXPECT_EQ(count_lines(path, "number 0999"), 0);
	/* and stays so */
	pr_err("later");
	EXPECT_EQ(count_lines(path, "later"), 0);
	unlink(path);
}

/*
 * A log open read-write (as cube-shim opens vmm.log) keeps its newest
 * half at the cap, says so, and stays appended to by other writers.
 */
TEST(a_read_write_log_keeps_its_newest)
{
	char path[64], first[64];
	struct stat st;
	FILE *f;
	int i;

	ASSERT_OK(capture_as(path, sizeof(path), O_RDWR | O_APPEND));
	vmm_log_set_limits(1000000, 1000000, 4096);
	EXPECT_EQ(vmm_log_rotate_fd(), STDERR_FILENO);
	for (i = 0; i < 1000; i++) {
		pr_err("a message of about fifty bytes, number %04d", i);
		ASSERT_OK(stat(path, &st));
		ASSERT_LE(st.st_size, 4096);
	}
	EXPECT_GT(st.st_size, 2048);
	EXPECT_EQ(count_lines(path, "number 0999"), 1);
	EXPECT_EQ(count_lines(path, "number 0000"), 0);
	EXPECT_GE(count_lines(path, "the log keeps its newest"), 1);
	EXPECT_EQ(count_lines(path, "the rest are dropped"), 0);
	/* it starts with a whole line */
	f = fopen(path, "r");
	ASSERT_NE(f, NULL);
	ASSERT_NE(fgets(first, sizeof(first), f), NULL);
	fclose(f);
	EXPECT_EQ(strncmp(first, "cube-vmm: ", 10), 0);
	/* still O_APPEND: a plain write lands at the end */
	ASSERT_EQ(write(STDERR_FILENO, "tail\n", 5), 5);
	ASSERT_OK(stat(path, &st));
	pr_err("after the tail");
	EXPECT_EQ(count_lines(path, "tail"), 2);
	EXPECT_EQ(fcntl(STDERR_FILENO, F_GETFL) & O_APPEND, O_APPEND);
	unlink(path);
}

/* What an earlier VMM of the sandbox left counts against the cap. */
TEST(an_earlier_log_counts)
{
	char path[64], fill[3000];
	int fd, i;

	snprintf(path, sizeof(path), "/tmp/log_unit.%d", getpid());
	memset(fill, 'x', sizeof(fill) - 1);
	fill[sizeof(fill) - 1] = '\n';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, fill, sizeof(fill)), (ssize_t)sizeof(fill));
	close(fd);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
	vmm_log_set_limits(1000000, 1000000, 4096);
	EXPECT_EQ(vmm_log_rotate_fd(), -1);
	for (i = 0; i < 100; i++)
		pr_err("a message of about fifty bytes, number %04d", i);
	/* about 1 KiB of room was left: some twenty messages */
	EXPECT_EQ(count_lines(path, "4096 bytes of messages logged: the rest are dropped"), 1);
	EXPECT_EQ(count_lines(path, "number 0030"), 0);
	unlink(path);
}

TEST_MAIN()
