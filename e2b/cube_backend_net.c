// SPDX-License-Identifier: GPL-2.0
/*
 * cube_backend_net.c: the E2B backend's network side: the egress policy
 * of a launch, live changes (PUT /sandboxes/{id}/network), and what the
 * port proxy asks of the sandboxes (their namespace, token and liveness).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/cube.h>

#include "cube_backend_int.h"
#include "cube_net.h"
#include "e2b_proxy.h"
#include "nl_client.h"

/* one policy change at a time: the record follows the program */
static pthread_mutex_t update_lock = PTHREAD_MUTEX_INITIALIZER;

int cube_be_net_launch_policy(const struct e2b_net *n,
			      const struct cube_template *t,
			      struct cube_net_policy **out, char *msg)
{
	struct cube_net_policy *p;
	int ret;

	*out = NULL;
	if (e2b_net_is_default(n))
		return 0;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	ret = e2b_net_policy(n, p, msg);
	if (ret) {
		free(p);
		return ret;
	}
	if (p->mode == CUBE_NET_INTERNET) {
		free(p);
		return 0;
	}
	if (!t->net) {
		bool deny = p->mode == CUBE_NET_DENY;

		free(p);
		if (deny)
			return 0;	/* no device: nothing goes out */
		snprintf(msg, E2B_MSG_MAX,
			 "template '%s' has no network device: allowOut/denyOut cannot be honoured",
			 t->name);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int cube_be_net_apply(uint64_t id, const struct e2b_net *n, char *msg)
{
	struct cube_net_handle h;
	struct cube_net_policy *p;
	char err[CUBE_NET_ERR_MAX];
	int ret;

	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	ret = e2b_net_policy(n, p, msg);
	if (ret)
		goto out;
	ret = cube_net_open(id, &h);
	if (ret == -ENOENT) {
		snprintf(msg, E2B_MSG_MAX,
			 "the sandbox has no network device (its template was built with --net none)");
		ret = -ENETDOWN;
		goto out;
	}
	if (ret) {
		snprintf(msg, E2B_MSG_MAX, "cannot reach the sandbox's egress policy: %s",
			 strerror(-ret));
		goto out;
	}
	ret = cube_net_set_policy(&h, p, err);
	if (ret)
		snprintf(msg, E2B_MSG_MAX, "cannot set the policy: %.200s", err);
	cube_net_handle_close(&h);
out:
	free(p);
	return ret;
}

int cube_be_set_network(void *be, const char *sid, const struct e2b_net *net,
			char *msg)
{
	struct cube_backend *b = be;
	struct e2b_net copy;
	struct sbx *s;
	uint64_t id;
	int ret;

	pthread_mutex_lock(&update_lock);
	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret)
		id = s->id;
	pthread_mutex_unlock(&b->lock);
	if (ret)
		goto out;
	ret = cube_be_net_apply(id, net, msg);
	if (ret)
		goto out;
	ret = e2b_net_copy(&copy, net);
	if (ret)
		goto out;
	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sid, &s);
	if (!ret && s->id == id) {
		/* an update says nothing of the ports' token: it stays */
		copy.private_ports = s->net.private_ports;
		e2b_net_free(&s->net);
		s->net = copy;
		memset(&copy, 0, sizeof(copy));
		ret = cube_be_meta_save(s);
	}
	pthread_mutex_unlock(&b->lock);
	e2b_net_free(&copy);
out:
	pthread_mutex_unlock(&update_lock);
	return ret;
}

/* --- the port proxy's view --- */

static int proxy_resolve(void *ctx, const char *sandbox,
			 struct e2b_proxy_target *t)
{
	struct cube_backend *b = ctx;
	struct sbx *s;
	uint64_t id;
	int ret, fd;

	pthread_mutex_lock(&b->lock);
	ret = cube_be_lookup_locked(b, sandbox, &s);
	if (!ret) {
		id = s->id;
		strcpy(t->token, s->traffic);
	}
	pthread_mutex_unlock(&b->lock);
	if (ret)
		return ret;
	fd = cube_sandbox_netns(id);
	if (fd == -ENOENT) {
		/* gone meanwhile, or never had a network */
		pthread_mutex_lock(&b->lock);
		ret = cube_be_lookup_locked(b, sandbox, &s);
		pthread_mutex_unlock(&b->lock);
		return ret ? ret : -ENETDOWN;
	}
	if (fd < 0)
		return fd;
	t->netns_fd = fd;
	t->key = id;
	return 0;
}

static bool proxy_alive(void *ctx, uint64_t key)
{
	struct cube_backend *b = ctx;
	struct cube_nl_sandbox ns;
	int ret;

	pthread_mutex_lock(&b->lock);
	ret = cube_nl_sandbox_get(b->nl, key, &ns);
	pthread_mutex_unlock(&b->lock);
	if (ret == -ENOENT)
		return false;
	if (ret)
		return true;	/* cannot tell: asked again soon */
	/* a kill was asked for: its traffic stops now */
	if (ns.flags & CUBE_SANDBOX_F_KILL_REQUESTED)
		return false;
	return ns.state != CUBE_SANDBOX_EXITED;
}

const struct e2b_proxy_ops cube_backend_proxy_ops = {
	.resolve = proxy_resolve,
	.alive = proxy_alive,
};
