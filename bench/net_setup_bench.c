// SPDX-License-Identifier: GPL-2.0
/*
 * net_setup_bench: two helpers of net_bench.sh (root, cube's libcube).
 *
 *   net_setup_bench setup N   make and drop N sandbox networks (namespace,
 *                             tap, veth, NAT, egress program; policy
 *                             internet), and report how long making one
 *                             takes: what a create without a warm pool
 *                             adds for the network
 *   net_setup_bench memory N  make N sandbox networks and hold them: the
 *                             host's kernel memory one costs (its share
 *                             of an idle sandbox's), by /proc/meminfo
 *                             field and slab cache; then drop them and
 *                             say how much came back
 *   net_setup_bench detach ID detach sandbox ID's egress program from its
 *                             tap (for a measurement without it: the
 *                             sandbox then has no policy at all)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cube_net.h"
#include "kmem.h"

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

/* MemFree once it stops moving (by less than 256 KiB in a second) */
static long settled_free_kib(int max_s)
{
	long f0 = kib_field("/proc/meminfo", "MemFree:"), f1;
	int i;

	for (i = 0; i < max_s; i++) {
		sleep(1);
		f1 = kib_field("/proc/meminfo", "MemFree:");
		if (labs(f1 - f0) < 256)
			return f1;
		f0 = f1;
	}
	return f0;
}

/*
 * The network namespaces processes hold, as a thread's namespace or as an
 * open fd: how many distinct ones (their inode numbers, up to @max, into
 * @ino).  With @say, each one not in @ino0[0..n0) is printed with the
 * process that holds it.
 */
static int held_netns(unsigned long *ino, int max, const unsigned long *ino0,
		      int n0, bool say)
{
	char path[300], link[128], comm[32];
	struct dirent *p, *t;
	int n = 0, i, k;
	DIR *proc, *d;
	FILE *f;

	proc = opendir("/proc");
	while (proc && (p = readdir(proc))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		f = fopen(path, "r");
		if (!f || !fgets(comm, sizeof(comm), f))
			snprintf(comm, sizeof(comm), "?");
		if (f)
			fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		for (k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), k ? "/proc/%s/fd" : "/proc/%s/task",
				 p->d_name);
			d = opendir(path);
			while (d && (t = readdir(d))) {
				unsigned long v;
				ssize_t len;
				bool known = false;

				if (t->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), k ? "/proc/%s/fd/%s" :
					 "/proc/%s/task/%s/ns/net", p->d_name, t->d_name);
				len = readlink(path, link, sizeof(link) - 1);
				if (len <= 0)
					continue;
				link[len] = 0;
				if (sscanf(link, "net:[%lu]", &v) != 1)
					continue;
				for (i = 0; i < n; i++)
					known |= ino[i] == v;
				if (known || n >= max)
					continue;
				ino[n++] = v;
				for (i = 0; i < n0; i++)
					known |= ino0[i] == v;
				if (say && !known)
					printf("# network memory: pid %s (%s) holds net:[%lu] (%s)\n",
					       p->d_name, comm, v, k ? "an fd" : "a thread's namespace");
			}
			if (d)
				closedir(d);
		}
	}
	if (proc)
		closedir(proc);
	return n;
}

static void *netns_probe_run(void *arg)
{
	/* the namespace goes with the thread */
	return unshare(CLONE_NEWNET) ? arg : NULL;
}

/* make a network namespace and drop it: a round of the kernel's cleanup */
static void netns_probe(void)
{
	pthread_t t;

	if (!pthread_create(&t, NULL, netns_probe_run, NULL))
		pthread_join(t, NULL);
}

/*
 * The kernel memory @n sandbox networks hold (policy internet, as a
 * default sandbox has), per network: made one after the other and held,
 * the host's /proc/meminfo and slab caches read before and after.  A
 * namespace is freed by a kernel worker after its last user goes, all but
 * its struct net, which that worker frees on its next round (6.1's
 * net_complete_free(): after one more rcu_barrier()).  So after the drop,
 * once a second for up to $BENCH_NETNS_WAIT_S (60) seconds, a namespace
 * of our own is made and dropped, which makes such a round, until the
 * host's namespaces (the net_namespace slab cache's objects) are as many
 * as before, plus that last probe's; then how many were not, whether a
 * process holds them, and the MemFree not back.
 */
static int memory(unsigned int n)
{
	struct cube_net_policy internet = { .mode = CUBE_NET_INTERNET };
	struct slab_use *c0 = calloc(2 * MAX_SLAB_CACHES, sizeof(*c0));
	struct slab_use *c1 = c0 + MAX_SLAB_CACHES;
	struct cube_net *nets = calloc(n, sizeof(*nets));
	long m0[NR_KMEM_FIELDS], m1[NR_KMEM_FIELDS], ns0, ns1, ns = -1;
	const char *w = getenv("BENCH_NETNS_WAIT_S");
	unsigned long held0[64], held1[64];
	int h0, h1, wait_s = w ? atoi(w) : 60;
	char err[CUBE_NET_ERR_MAX];
	double t0;
	unsigned int i, made = 0;
	int n0, n1, ret = 1;
	size_t f;

	if (!c0 || !nets)
		goto out;
	slab_shrink(NULL);
	settled_free_kib(30);
	kmem_read(m0);
	n0 = slab_snapshot(c0, MAX_SLAB_CACHES);
	ns0 = slab_objects("net_namespace");
	h0 = held_netns(held0, 64, NULL, 0, false);
	for (i = 0; i < n; i++, made++) {
		struct cube_net_config cfg = {
			.sandbox_id = (UINT64_C(1) << 61) | (1 << 20) | i,
			.policy = &internet,
		};

		if (cube_net_create(&cfg, &nets[i], err)) {
			fprintf(stderr, "net_setup_bench: network %u: %s\n", i,
				err);
			goto drop;
		}
	}
	settled_free_kib(30);
	kmem_read(m1);
	n1 = slab_snapshot(c1, MAX_SLAB_CACHES);
	ns1 = slab_objects("net_namespace");
	printf("# network memory: per sandbox network held (%u; namespace, tap, veth, NAT, egress program), the host's /proc/meminfo moved by (KiB):",
	       made);
	for (f = 0; f < NR_KMEM_FIELDS; f++)
		printf(" %s %+ld", kmem_fields[f], (m1[f] - m0[f]) / (long)made);
	printf("\nbench: figure=net_memory made=%u", made);
	for (f = 0; f < NR_KMEM_FIELDS; f++)
		printf(" %s_kib=%ld", kmem_fields[f], (m1[f] - m0[f]) / (long)made);
	printf(" netns_made=%ld\n", ns1 - ns0);
	if (n0 >= 0 && n1 >= 0) {
		print_slab_growth(c0, n0, c1, n1, made, false, "network memory",
				  "sandbox network");
		print_slab_growth(c0, n0, c1, n1, made, true, "net_memory",
				  "sandbox network");
	}
	ret = 0;
drop:
	for (i = 0; i < made; i++)
		cube_net_close(&nets[i]);
	t0 = now_ms();
	for (i = 1; made && now_ms() - t0 < wait_s * 1e3; i++) {
		sleep(1);
		netns_probe();
		ns = slab_objects("net_namespace");
		if (ns <= ns0 + 1)	/* the probe's own struct net */
			break;
		if (!(i % 30))
			printf("# network memory: %.0f s after the drop, %ld namespaces more than before, MemFree %+ld KiB\n",
			       (now_ms() - t0) / 1e3, ns - ns0 - 1,
			       kib_field("/proc/meminfo", "MemFree:") - m0[0]);
	}
	ns = ns > ns0 + 1 ? ns - ns0 - 1 : 0;
	if (made) {
		double waited = (now_ms() - t0) / 1e3;
		long back;

		h1 = held_netns(held1, 64, held0, h0, true);
		slab_shrink(NULL);	/* the slabs' empty pages, freed */
		back = settled_free_kib(30);
		printf("# network memory: the %u dropped, %ld namespaces more than before after %.1f s (processes hold %d, %d before); then %ld KiB of MemFree not back\n",
		       made, ns, waited, h1, h0, m0[0] - back);
		printf("bench: figure=net_memory_drop made=%u netns_left=%ld wait_s=%.1f netns_held_by_processes=%d memfree_not_back_kib=%ld\n",
		       made, ns, waited, h1 - h0, m0[0] - back);
	}
out:
	free(nets);
	free(c0);
	return ret;
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
	if (!strcmp(argv[1], "memory") && v <= 1000)
		return memory(v);
	if (!strcmp(argv[1], "detach"))
		return detach(v);
usage:
	fprintf(stderr, "usage: net_setup_bench setup N | memory N | detach ID\n");
	return 2;
}
