// SPDX-License-Identifier: GPL-2.0
/*
 * Built twice, as strict C99 and as C++11, with only the uapi header and
 * libc: the build itself checks that the header stands alone; the program
 * checks the ABI layout of its structures.
 */
#include <linux/cube.h>

#include <stddef.h>
#include <stdio.h>

static int failed;
static int n;

static void check(int ok, const char *what)
{
	printf("%sok %d %s\n", ok ? "" : "not ", ++n, what);
	failed |= !ok;
}

int main(void)
{
	printf("KTAP version 1\n1..5\n");
	check(sizeof(struct cube_version) == 16, "sizeof(struct cube_version) == 16");
	check(offsetof(struct cube_version, reserved) == 8,
	      "cube_version.reserved at offset 8");
	check(CUBE_IOC_VERSION == (2u << 30 | 16u << 16 | CUBE_IOCTL_MAGIC << 8 | 0u),
	      "CUBE_IOC_VERSION is _IOR(0xCB, 0, 16 bytes)");
	check(CUBE_CMD_MAX == __CUBE_CMD_MAX - 1 && CUBE_A_MAX == __CUBE_A_MAX - 1,
	      "command and attribute maxima");
	check(sizeof(CUBE_GENL_NAME) <= 16, "family name fits GENL_NAMSIZ");
	return failed;
}
