// SPDX-License-Identifier: GPL-2.0
/*
 * cube_sandbox_fork.c: a new sandbox from a running one's snapshot, with
 * its parent's egress policy.  A file of its own because it reads that
 * policy through libbpf (lib/cube_net_bpf.c), which cube-shim, linking
 * the rest of cube_runtime.c, must not map.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cube_net.h"
#include "cube_runtime.h"

int cube_sandbox_fork(uint64_t id, const char *template_name, uint64_t *nid,
		      char *err)
{
	static unsigned int seq;
	struct cube_template t;
	struct cube_launch l = { .tmpl = &t, .own_snapshot = true };
	char ctl[PATH_MAX], req[PATH_MAX + 64], reply[512];
	struct cube_net_policy *policy = NULL;
	struct timespec now;
	int ret;

	ret = cube_template_load(template_name, &t, err);
	if (ret)
		return ret;
	ret = cube_sandbox_path(ctl, sizeof(ctl), id, "control");
	if (ret)
		return ret;
	/*
	 * The fork starts with its parent's egress policy as it is now, never
	 * with a wider one: a parent without an egress program has policy
	 * none (a device with nowhere to go).
	 */
	if (t.net) {
		struct cube_net_handle h;

		policy = calloc(1, sizeof(*policy));
		if (!policy)
			return -ENOMEM;
		ret = cube_net_open(id, &h);
		if (!ret) {
			ret = cube_net_get_policy(&h, policy, NULL);
			cube_net_handle_close(&h);
		} else if (ret == -ENOENT) {
			policy->mode = CUBE_NET_NONE;
			ret = 0;
		}
		if (ret) {
			cube_set_err(err, "cannot read sandbox %llu's network policy: %s",
				(unsigned long long)id, strerror(-ret));
			free(policy);
			return ret;
		}
		l.net = policy;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(req, sizeof(req), "%s/forks", cube_state_dir());
	mkdir(cube_state_dir(), 0755);
	mkdir(req, 0700);
	if (snprintf(t.snapshot, sizeof(t.snapshot), "%s/forks/%llu-%lld-%ld-%u",
		     cube_state_dir(), (unsigned long long)id,
		     (long long)now.tv_sec, now.tv_nsec, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED)) >=
	    (int)sizeof(t.snapshot)) {
		free(policy);
		return -ENAMETOOLONG;
	}
	ret = cube_control_snapshot(ctl, t.snapshot, reply, sizeof(reply));
	if (ret) {
		cube_remove_tree(t.snapshot);
		cube_set_err(err, "cannot snapshot sandbox %llu: %s",
			(unsigned long long)id, reply[0] ? reply : strerror(-ret));
		free(policy);
		return ret == -ECONNREFUSED ? -ENOENT : ret;
	}
	ret = cube_sandbox_launch(&l, nid, err);
	if (ret)
		cube_remove_tree(t.snapshot);	/* the shim never ran */
	free(policy);
	return ret;
}
