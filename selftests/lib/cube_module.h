/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_module.h: the selftests' view of cube.ko itself: its reference
 * count, and unloading and loading it again from $CUBE_KO.  Include after
 * cube_test.h.
 */
#ifndef CUBE_MODULE_H
#define CUBE_MODULE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* cube.ko's reference count, or -1 when it is not loaded. */
static inline int ct_module_refs(void)
{
	FILE *f = fopen("/sys/module/cube/refcnt", "r");
	int n = -1;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/*
 * Unload cube.ko and load it again from $CUBE_KO: every snapshot goes and
 * the next one gets the first sequence number of the new load.  The caller
 * holds no /dev/cube fd, clone fd or mapping; skips when another does.
 */
static inline void ct_reload_module(void)
{
	const char *ko = getenv("CUBE_KO");
	int fd, dev = -1, i;

	if (!ko || access(ko, R_OK))
		SKIP("no $CUBE_KO to reload the module from");
	if (ct_module_refs() != 0)
		SKIP("cube.ko is in use by others (%d references)",
		     ct_module_refs());
	ASSERT_EQ(syscall(SYS_delete_module, "cube", O_NONBLOCK), 0);
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(syscall(SYS_finit_module, fd, "", 0), 0);
	close(fd);
	for (i = 0; i < 100; i++) {
		dev = open("/dev/cube", O_RDWR | O_CLOEXEC);
		if (dev >= 0)
			break;
		usleep(10000);
	}
	ASSERT_GE(dev, 0);
	close(dev);
}

#endif /* CUBE_MODULE_H */
