// SPDX-License-Identifier: GPL-2.0
/*
 * cube_net_bpf.c: a sandbox's egress program: loading and attaching it
 * (one copy per sandbox, from the skeleton), and finding it again by
 * sandbox id to read its counters and replace its policy.  Nothing is
 * pinned: the BPF link (held by cube.ko) keeps the program, and the
 * program its maps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "cube_egress.skel.h"
#include "cube_net_int.h"

#define PROG_NAME	"cube_egress"

static int fill_trie(int fd, const struct cube_net_entry *e, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &e[i].key, &e[i].val, BPF_NOEXIST))
			return -errno;
	return 0;
}

/* a new policy trie holding @p; returns its fd */
static int policy_trie(const struct cube_net_policy *p, uint32_t generation,
		       char *err)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	struct cube_net_entry *e;
	unsigned int n;
	int fd, ret;

	e = calloc(CUBE_EGRESS_TRIE_MAX, sizeof(*e));
	if (!e)
		return cube_net_err(err, -ENOMEM, "out of memory");
	ret = cube_net_policy_compile(p, generation, e, &n, err);
	if (ret)
		goto out;
	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "cube_policy_in",
			    sizeof(struct cube_egress_key),
			    sizeof(struct cube_egress_rules),
			    CUBE_EGRESS_TRIE_MAX, &o);
	if (fd < 0) {
		ret = cube_net_err(err, -errno, "cannot create a policy map: %s", strerror(errno));
		goto out;
	}
	ret = fill_trie(fd, e, n);
	if (ret) {
		close(fd);
		cube_net_err(err, ret, "cannot fill the policy map: %s", strerror(-ret));
		goto out;
	}
	ret = fd;
out:
	free(e);
	return ret;
}

int cube_net_bpf_attach(int ifindex, const struct cube_egress_cfg *cfg,
			const struct cube_net_policy *p,
			const struct cube_net_range *fixed, unsigned int nfixed,
			char *err)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = XDP_FLAGS_SKB_MODE);
	struct cube_egress *skel;
	uint32_t zero = 0, cls;
	unsigned int i;
	int inner, link, ret, fd;

	libbpf_set_print(NULL);
	skel = cube_egress__open_and_load();
	if (!skel) {
		ret = errno ? -errno : -EINVAL;
		return cube_net_err(err, ret, "cannot load the egress program: %s",
				    strerror(-ret));
	}
	fd = bpf_map__fd(skel->maps.cube_fixed);
	for (i = 0; i < nfixed; i++) {
		struct cube_egress_key k;

		cube_net_key(&k, fixed[i].family, fixed[i].addr, fixed[i].plen);
		cls = fixed[i].class;
		/* the first entry of a prefix wins: host before private */
		if (bpf_map_update_elem(fd, &k, &cls, BPF_NOEXIST) && errno != EEXIST) {
			ret = cube_net_err(err, -errno, "cannot fill the fixed map: %s", strerror(errno));
			goto out;
		}
	}
	inner = policy_trie(p, 1, err);
	if (inner < 0) {
		ret = inner;
		goto out;
	}
	ret = bpf_map_update_elem(bpf_map__fd(skel->maps.cube_policy), &zero, &inner, BPF_ANY);
	close(inner);
	if (ret ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.cube_cfg), &zero, cfg, BPF_ANY)) {
		ret = cube_net_err(err, -errno, "cannot set the egress maps: %s", strerror(errno));
		goto out;
	}
	link = bpf_link_create(bpf_program__fd(skel->progs.cube_egress), ifindex,
			       BPF_XDP, &lo);
	if (link < 0) {
		ret = cube_net_err(err, -errno, "cannot attach the egress program to tap0: %s",
				   strerror(errno));
		goto out;
	}
	ret = link;
out:
	/* the link holds the program, the program its maps */
	cube_egress__destroy(skel);
	return ret;
}

/* --- finding a running sandbox's program --- */

void cube_net_handle_close(struct cube_net_handle *h)
{
	int *fds[] = { &h->outer_fd, &h->fixed_fd, &h->cfg_fd, &h->counters_fd };
	unsigned int i;

	for (i = 0; i < 4; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

/* the maps of program @prog_fd, when it is a cube egress program */
static int open_prog(int prog_fd, struct cube_net_handle *h)
{
	struct bpf_prog_info pi = { 0 };
	uint32_t len = sizeof(pi), ids[8], i, zero = 0;
	struct cube_egress_cfg cfg;

	h->outer_fd = h->fixed_fd = h->cfg_fd = h->counters_fd = -1;
	pi.nr_map_ids = 8;
	pi.map_ids = (uint64_t)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &pi, &len))
		return -errno;
	if (pi.type != BPF_PROG_TYPE_XDP || strcmp(pi.name, PROG_NAME) ||
	    pi.nr_map_ids > 8)
		return -ENOENT;
	for (i = 0; i < pi.nr_map_ids; i++) {
		struct bpf_map_info mi = { 0 };
		uint32_t mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);
		int *slot = NULL;

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mlen)) {
			if (!strcmp(mi.name, "cube_policy"))
				slot = &h->outer_fd;
			else if (!strcmp(mi.name, "cube_fixed"))
				slot = &h->fixed_fd;
			else if (!strcmp(mi.name, "cube_cfg"))
				slot = &h->cfg_fd;
			else if (!strcmp(mi.name, "cube_counters"))
				slot = &h->counters_fd;
		}
		if (slot && *slot < 0)
			*slot = fd;
		else
			close(fd);
	}
	if (h->outer_fd < 0 || h->fixed_fd < 0 || h->cfg_fd < 0 || h->counters_fd < 0 ||
	    bpf_map_lookup_elem(h->cfg_fd, &zero, &cfg) ||
	    cfg.magic != CUBE_EGRESS_CFG_MAGIC) {
		cube_net_handle_close(h);
		return -ENOENT;
	}
	h->sandbox_id = cfg.sandbox_id;
	h->prog_id = pi.id;
	return 0;
}

int cube_net_open(uint64_t sandbox_id, struct cube_net_handle *h)
{
	uint32_t id = 0;

	h->outer_fd = h->fixed_fd = h->cfg_fd = h->counters_fd = -1;
	while (!bpf_prog_get_next_id(id, &id)) {
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0) {
			if (errno == ENOENT)
				continue;	/* gone meanwhile */
			return -errno;
		}
		if (!open_prog(fd, h)) {
			close(fd);
			if (h->sandbox_id == sandbox_id)
				return 0;
			cube_net_handle_close(h);
			continue;
		}
		close(fd);
	}
	return errno == ENOENT ? -ENOENT : -errno;
}

int cube_net_open_link(int link_fd, struct cube_net_handle *h)
{
	struct bpf_link_info li = { 0 };
	uint32_t len = sizeof(li);
	int fd, ret;

	h->outer_fd = h->fixed_fd = h->cfg_fd = h->counters_fd = -1;
	if (bpf_obj_get_info_by_fd(link_fd, &li, &len))
		return -errno;
	fd = bpf_prog_get_fd_by_id(li.prog_id);
	if (fd < 0)
		return -errno;
	ret = open_prog(fd, h);
	close(fd);
	return ret;
}

/* --- policy and counters --- */

static int current_trie(struct cube_net_handle *h)
{
	uint32_t zero = 0, id;
	int fd;

	if (bpf_map_lookup_elem(h->outer_fd, &zero, &id))
		return -errno;
	fd = bpf_map_get_fd_by_id(id);
	return fd < 0 ? -errno : fd;
}

int cube_net_get_policy(struct cube_net_handle *h, struct cube_net_policy *p,
			uint32_t *generation)
{
	struct cube_egress_key k, next, *prev = NULL;
	struct cube_net_entry *e;
	unsigned int n = 0;
	int fd, ret = 0;

	fd = current_trie(h);
	if (fd < 0)
		return fd;
	e = calloc(CUBE_EGRESS_TRIE_MAX, sizeof(*e));
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	while (n < CUBE_EGRESS_TRIE_MAX && !bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &e[n].val))
			continue;
		e[n++].key = k;
	}
	close(fd);
	ret = cube_net_policy_decompile(e, n, p, generation);
	free(e);
	return ret;
}

int cube_net_set_policy(struct cube_net_handle *h,
			const struct cube_net_policy *p, char *err)
{
	struct cube_egress_key hk = { .prefixlen = CUBE_EGRESS_KEY_BITS };
	struct cube_egress_rules hv = { 0 };
	uint32_t zero = 0, gen = 0;
	int fd, inner, ret;

	if (p->mode == CUBE_NET_NONE)
		return cube_net_err(err, -EINVAL, "a running sandbox keeps its network device: use 'deny' to cut it off");
	fd = current_trie(h);
	if (fd >= 0) {
		if (!bpf_map_lookup_elem(fd, &hk, &hv))
			gen = hv.generation;
		close(fd);
	}
	inner = policy_trie(p, gen + 1, err);
	if (inner < 0)
		return inner;
	/* the swap: one update of the outer map's one slot */
	ret = bpf_map_update_elem(h->outer_fd, &zero, &inner, BPF_ANY) ? -errno : 0;
	close(inner);
	if (ret)
		return cube_net_err(err, ret, "cannot replace the policy: %s", strerror(-ret));
	return 0;
}

int cube_net_get_counters(struct cube_net_handle *h,
			  struct cube_net_counters *c)
{
	int ncpu = libbpf_num_possible_cpus();
	struct cube_egress_count *v;
	uint32_t r;
	int i;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	for (r = 0; r < CUBE_NET_NR_REASONS; r++) {
		if (bpf_map_lookup_elem(h->counters_fd, &r, v)) {
			int e = -errno;

			free(v);
			return e;
		}
		for (i = 0; i < ncpu; i++) {
			c->packets[r] += v[i].packets;
			c->bytes[r] += v[i].bytes;
		}
	}
	free(v);
	return 0;
}

int cube_net_get_info(struct cube_net_handle *h, struct cube_net_info *info)
{
	struct cube_egress_cfg cfg;
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(h->cfg_fd, &zero, &cfg))
		return -errno;
	info->slot = cfg.slot;
	info->ns_addr.s_addr = cfg.ns_ip;
	info->host_addr.s_addr = cfg.host_ip;
	info->resolver.s_addr = cfg.resolver_ip;
	return 0;
}

const char *cube_net_reason_name(enum cube_net_reason r)
{
	static const char *const names[CUBE_NET_NR_REASONS] = {
		[CUBE_NET_PASSED] = "passed",
		[CUBE_NET_DROP_POLICY] = "policy",
		[CUBE_NET_DROP_METADATA] = "metadata",
		[CUBE_NET_DROP_PRIVATE] = "private",
		[CUBE_NET_DROP_HOST] = "host",
		[CUBE_NET_DROP_DNS] = "dns",
		[CUBE_NET_DROP_SPOOF] = "spoof",
		[CUBE_NET_DROP_PROTO] = "proto",
	};

	return (unsigned int)r < CUBE_NET_NR_REASONS ? names[r] : "?";
}

_Static_assert((int)CUBE_NET_NR_REASONS == (int)CUBE_EGRESS_NR_REASONS,
	       "reasons of cube_net.h and cube_egress.h");
