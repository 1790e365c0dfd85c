/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmem.h: the benchmarks' view of the host kernel's memory: /proc/meminfo
 * fields and slab caches, read before and after a run made some objects
 * (sandboxes, networks), so that the change is given per object.
 */
#ifndef CUBE_BENCH_KMEM_H
#define CUBE_BENCH_KMEM_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a "Key:   N kB" field of a /proc file (the sum of all that start with
 * @key), -1 when none */
static inline long kib_field(const char *path, const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key))) {
			char *c = strchr(line, ':');

			if (c)
				v = (v < 0 ? 0 : v) + strtol(c + 1, NULL, 10);
		}
	fclose(f);
	return v;
}

/* The host's /proc/meminfo fields a run reports the change of. */
static const char *const kmem_fields[] = {
	"MemFree", "Cached", "AnonPages", "Shmem", "Slab", "SUnreclaim",
	"KernelStack", "PageTables", "SecPageTables", "Percpu", "VmallocUsed",
};
#define NR_KMEM_FIELDS	(sizeof(kmem_fields) / sizeof(kmem_fields[0]))

static inline void kmem_read(long *v)
{
	char key[32];
	size_t i;

	for (i = 0; i < NR_KMEM_FIELDS; i++) {
		snprintf(key, sizeof(key), "%s:", kmem_fields[i]);
		v[i] = kib_field("/proc/meminfo", key);
	}
}

/* One slab cache's memory in use: active objects times their size. */
struct slab_use {
	char name[64];
	long kib;
};

#define MAX_SLAB_CACHES	1024

/*
 * Every slab cache's use from /proc/slabinfo into @c (at most @max);
 * returns how many, or -1 when slabinfo cannot be read.
 */
static inline int slab_snapshot(struct slab_use *c, int max)
{
	unsigned long active, total, size;
	char line[512], name[64];
	FILE *f = fopen("/proc/slabinfo", "re");
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %lu %lu %lu", name, &active, &total,
			   &size) != 4)
			continue;	/* the version and header lines */
		snprintf(c[n].name, sizeof(c[n].name), "%s", name);
		c[n].kib = (long)(active * size / 1024);
		n++;
	}
	fclose(f);
	return n;
}

/*
 * Have slab cache @name (every cache when NULL) give its CPUs' slabs back
 * and free its empty ones: until then /proc/slabinfo counts the free
 * objects of a CPU's slabs as active, and their pages are not free.
 */
static inline void slab_shrink(const char *name)
{
	char path[320];
	struct dirent *e;
	DIR *d;
	int fd;

	d = name ? NULL : opendir("/sys/kernel/slab");
	while (name || (d && (e = readdir(d)))) {
		/* each cache once: its aliases are symbolic links */
		if (!name && (e->d_type != DT_DIR || e->d_name[0] == '.'))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/slab/%s/shrink",
			 name ? name : e->d_name);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, "1", 1) != 1) {
				/* not shrunk: its counts stay a bound */
			}
			close(fd);
		}
		if (name)
			break;
	}
	if (d)
		closedir(d);
}

/*
 * The objects in use in slab cache @name, -1 when it is not listed: read
 * from /proc/slabinfo once the cache was shrunk.
 */
static inline long slab_objects(const char *name)
{
	char line[512], n[64];
	unsigned long active;
	FILE *f;
	long v = -1;

	slab_shrink(name);
	f = fopen("/proc/slabinfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu", n, &active) == 2 &&
		    !strcmp(n, name)) {
			v = (long)active;
			break;
		}
	fclose(f);
	return v;
}

/* A cache's KiB in @c, 0 when it is not there. */
static inline long slab_kib(const struct slab_use *c, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].kib;
	return 0;
}

/*
 * Which slab caches a run grew, per @unit it made (@made of them): the ten
 * that grew most and all of them together (the rest of meminfo's Slab
 * growth is kmalloc's page-sized allocations, which slabinfo does not
 * list).  Prints the comment line, or figure=@what_slab when @fig.
 */
#define SLAB_TOP	10

static inline void print_slab_growth(const struct slab_use *a, int na,
				     const struct slab_use *b, int nb,
				     int made, bool fig, const char *what,
				     const char *unit)
{
	int top[SLAB_TOP];
	long grew[SLAB_TOP] = { 0 }, all = 0;
	int i, j, k;

	for (j = 0; j < SLAB_TOP; j++)
		top[j] = -1;
	for (i = 0; i < nb; i++) {
		long d = b[i].kib - slab_kib(a, na, b[i].name);

		all += d;
		for (j = 0; j < SLAB_TOP; j++) {
			if (d <= grew[j] && top[j] >= 0)
				continue;
			for (k = SLAB_TOP - 1; k > j; k--) {
				top[k] = top[k - 1];
				grew[k] = grew[k - 1];
			}
			top[j] = i;
			grew[j] = d;
			break;
		}
	}
	if (fig)
		printf("bench: figure=%s_slab made=%d all_caches_kib=%ld top=\"",
		       what, made, all / made);
	else
		printf("# %s: slab caches, per %s made (%d): all %+ld KiB; grew most:",
		       what, unit, made, all / made);
	for (j = 0; j < SLAB_TOP && top[j] >= 0 && grew[j] > 0; j++)
		printf(fig ? "%s%s:%ld" : "%s %s %+ld", j && fig ? "," : "",
		       b[top[j]].name, grew[j] / made);
	printf(fig ? "\"\n" : "\n");
}

#endif /* CUBE_BENCH_KMEM_H */
