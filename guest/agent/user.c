// SPDX-License-Identifier: GPL-2.0
/*
 * user.c: look a user up in the sandbox's /etc/passwd and /etc/group (the
 * files inside the root, read with the stdio parsers, no NSS).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

static FILE *root_fopen(const struct agent_config *cfg, const char *path)
{
	int fd = root_open(cfg, path, O_RDONLY, 0);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

static int parse_id(const char *s, unsigned long *v)
{
	char *end;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno || *end || *v >= 0xffffffffUL)
		return -EINVAL;
	return 0;
}

static void lookup_groups(const struct agent_config *cfg, const char *user,
			  struct agent_user *u)
{
	struct group *gr;
	FILE *f;
	int i;

	u->groups[0] = u->gid;
	u->ngroups = 1;
	f = root_fopen(cfg, "/etc/group");
	if (!f)
		return;
	while ((gr = fgetgrent(f)) && u->ngroups < (int)(sizeof(u->groups) / sizeof(u->groups[0]))) {
		if (gr->gr_gid == u->gid)
			continue;
		for (i = 0; gr->gr_mem && gr->gr_mem[i]; i++) {
			if (!strcmp(gr->gr_mem[i], user)) {
				u->groups[u->ngroups++] = gr->gr_gid;
				break;
			}
		}
	}
	fclose(f);
}

/**
 * user_lookup() - resolve a user name or decimal uid
 * @cfg: agent configuration
 * @name: user name, or a uid (a uid missing from /etc/passwd runs with the
 *	same gid and home "/")
 * @u: result
 *
 * Return: 0, or -ESRCH when no such user name exists.
 */
int user_lookup(const struct agent_config *cfg, const char *name,
		struct agent_user *u)
{
	unsigned long id;
	bool numeric = !parse_id(name, &id);
	struct passwd *pw;
	FILE *f;

	memset(u, 0, sizeof(*u));
	f = root_fopen(cfg, "/etc/passwd");
	while (f && (pw = fgetpwent(f))) {
		if (numeric ? pw->pw_uid != id : strcmp(pw->pw_name, name))
			continue;
		u->uid = pw->pw_uid;
		u->gid = pw->pw_gid;
		snprintf(u->home, sizeof(u->home), "%s",
			 pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : "/");
		lookup_groups(cfg, pw->pw_name, u);
		fclose(f);
		return 0;
	}
	if (f)
		fclose(f);
	if (!numeric)
		return -ESRCH;
	u->uid = id;
	u->gid = id;
	u->groups[0] = id;
	u->ngroups = 1;
	strcpy(u->home, "/");
	return 0;
}
