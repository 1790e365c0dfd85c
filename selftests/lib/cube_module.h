/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cube_module.h: the selftests' view of cube.ko itself: its reference
 * count, and unloading and loading it again from $CUBE_KO.  Include after
 * cube_test.h.
 */
#ifndef CUBE_MODULE_H
#define CUBE_MODULE_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* whether @s names a file cube.ko made: /dev/cube, a clone, a sandbox */
static inline int ct_is_cube_file(const char *s)
{
	return strstr(s, "/dev/cube") || strstr(s, "cube-clone") ||
	       strstr(s, "cube-sandbox");
}

/*
 * Log each process that holds a file of cube.ko open or mapped (its pid,
 * name and the file), for a test that finds the module in use.  Returns
 * how many were found.
 */
static inline int ct_log_module_holders(void)
{
	char path[PATH_MAX], link[PATH_MAX], comm[64], line[512];
	struct dirent *p, *f;
	DIR *proc, *fds;
	FILE *maps;
	int found = 0;
	ssize_t n;

	proc = opendir("/proc");
	while (proc && (p = readdir(proc))) {
		int held = 0;

		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		maps = fopen(path, "r");
		if (!maps || !fgets(comm, sizeof(comm), maps))
			snprintf(comm, sizeof(comm), "?");
		if (maps)
			fclose(maps);
		comm[strcspn(comm, "\n")] = 0;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		while (fds && (f = readdir(fds))) {
			snprintf(path, sizeof(path), "/proc/%s/fd/%s",
				 p->d_name, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = 0;
			if (ct_is_cube_file(link)) {
				ct_diag("pid %s (%s) holds fd %s: %s", p->d_name,
					comm, f->d_name, link);
				held = 1;
			}
		}
		if (fds)
			closedir(fds);
		snprintf(path, sizeof(path), "/proc/%s/maps", p->d_name);
		maps = fopen(path, "r");
		while (maps && fgets(line, sizeof(line), maps)) {
			if (!ct_is_cube_file(line))
				continue;
			line[strcspn(line, "\n")] = 0;
			ct_diag("pid %s (%s) maps %s", p->d_name, comm, line);
			held = 1;
			break;
		}
		if (maps)
			fclose(maps);
		found += held;
	}
	if (proc)
		closedir(proc);
	return found;
}

/*
 * Wait up to @timeout_s for cube.ko's references to drop to @refs: the
 * processes of a test before may still be exiting (a SIGKILLed VMM gives
 * its clone back as its memory goes).  Returns the count it ended with;
 * when that is not @refs, who holds the module has been logged.
 */
static inline int ct_module_settle(int refs, int timeout_s)
{
	int i, n = ct_module_refs();

	for (i = 0; n > refs && i < timeout_s * 10; i++) {
		usleep(100000);
		n = ct_module_refs();
	}
	if (n > refs && !ct_log_module_holders())
		ct_diag("no process holds a file of cube.ko: the %d references are the kernel's",
			n - refs);
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
	if (ct_module_settle(0, 30) != 0)
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
