// SPDX-License-Identifier: GPL-2.0
/*
 * path.c: resolve host-given paths inside the agent's root.  Every lookup
 * goes through openat2(RESOLVE_IN_ROOT), so ".." and symlinks cannot leave
 * the root whatever the sandbox has put there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

/**
 * root_open() - open a path of the sandbox
 * @cfg: agent configuration (its rootfd)
 * @path: absolute path inside the root
 * @flags: open flags (O_CLOEXEC is added)
 * @mode: mode for O_CREAT
 *
 * Return: a file descriptor, or a negative errno.
 */
int root_open(const struct agent_config *cfg, const char *path, int flags,
	      mode_t mode)
{
	struct open_how how = {
		.flags = flags | O_CLOEXEC,
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (path[0] != '/')
		return -EINVAL;
	while (path[0] == '/')
		path++;
	if (!path[0])
		path = ".";
	do {
		fd = syscall(SYS_openat2, cfg->rootfd, path, &how, sizeof(how));
	} while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : (int)fd;
}

/**
 * root_parent() - open the directory holding a path's last component
 * @cfg: agent configuration
 * @path: absolute path inside the root, not "/"
 * @name: receives the last component (NAME_MAX + 1 bytes)
 *
 * Return: an O_PATH directory descriptor, or a negative errno: -EINVAL for
 * a relative path, the root itself, or a last component of "." or "..".
 */
int root_parent(const struct agent_config *cfg, const char *path, char *name)
{
	char dir[CUBE_AGENT_MAX_STRING];
	size_t len = strlen(path);
	const char *slash;

	if (path[0] != '/' || len >= sizeof(dir))
		return -EINVAL;
	memcpy(dir, path, len + 1);
	while (len > 1 && dir[len - 1] == '/')
		dir[--len] = 0;
	slash = strrchr(dir, '/');
	if (!slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return -EINVAL;
	if (strlen(slash + 1) > NAME_MAX)
		return -ENAMETOOLONG;
	strcpy(name, slash + 1);
	dir[slash - dir + 1] = 0;
	return root_open(cfg, dir, O_PATH | O_DIRECTORY, 0);
}
