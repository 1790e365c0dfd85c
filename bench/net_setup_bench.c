// SPDX-License-Identifier: GPL-2.0
/*
 * net_setup_bench: two helpers of net_bench.sh (root, cube's libcube).
 *
 *   net_setup_bench setup N   make and drop N sandbox networks (namespace,
 *                             tap, veth, NAT, egress program; policy
 *                             internet), and report how long making one
 *                             takes: what a create without a warm pool
 *                             adds for the network
 *   net_setup_bench detach ID detach sandbox ID's egress program from its
 *                             tap (for a measurement without it: the
 *                             sandbox then has no policy at all)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cube_net.h"

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int setup(unsigned int n)
{
	struct cube_net_policy internet = { .mode = CUBE_NET_INTERNET };
	double *ms = calloc(n, sizeof(*ms));
	char err[CUBE_NET_ERR_MAX];
	unsigned int i;

	if (!ms)
		return 1;
	for (i = 0; i < n; i++) {
		struct cube_net_config cfg = {
			.sandbox_id = (UINT64_C(1) << 61) | i,
			.policy = &internet,
		};
		struct cube_net net;
		double t0 = now_ms();
		int ret = cube_net_create(&cfg, &net, err);

		ms[i] = now_ms() - t0;
		if (ret) {
			fprintf(stderr, "net_setup_bench: %s\n", err);
			free(ms);
			return 1;
		}
		cube_net_close(&net);	/* the kernel takes it all down */
		usleep(100 * 1000);
	}
	qsort(ms, n, sizeof(*ms), cmp_double);
	printf("# network set-up per sandbox (namespace, tap, veth, NAT, egress program): p50 %.1f ms, p95 %.1f ms, max %.1f ms (%u)\n",
	       ms[n / 2], ms[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1],
	       ms[n - 1], n);
	printf("bench: figure=net_setup runs=%u p50_ms=%.1f p95_ms=%.1f max_ms=%.1f\n",
	       n, ms[n / 2], ms[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1],
	       ms[n - 1]);
	free(ms);
	return 0;
}

/* the link that attaches @prog_id */
static int link_of(uint32_t prog_id)
{
	uint32_t id = 0;

	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info info;
		uint32_t len = sizeof(info);
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    info.prog_id == prog_id)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

static int detach(uint64_t id)
{
	struct cube_net_handle h;
	int ret, fd;

	ret = cube_net_open(id, &h);
	if (ret) {
		fprintf(stderr, "net_setup_bench: sandbox %llu: %s\n",
			(unsigned long long)id, strerror(-ret));
		return 1;
	}
	fd = link_of(h.prog_id);
	cube_net_handle_close(&h);
	if (fd < 0 || bpf_link_detach(fd)) {
		fprintf(stderr, "net_setup_bench: cannot detach: %s\n",
			strerror(fd < 0 ? -fd : errno));
		return 1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long long v;

	if (argc != 3)
		goto usage;
	v = strtoull(argv[2], &end, 10);
	if (*end || !v)
		goto usage;
	if (!strcmp(argv[1], "setup") && v <= 1000)
		return setup(v);
	if (!strcmp(argv[1], "detach"))
		return detach(v);
usage:
	fprintf(stderr, "usage: net_setup_bench setup N | detach ID\n");
	return 2;
}
