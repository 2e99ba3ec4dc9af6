/*
 * mmbench_util.h: helpers shared by the C workload programs (header-only, static functions).
 *
 * now_ns()            CLOCK_MONOTONIC in nanoseconds: every timed region uses it.
 * map_aligned()       anonymous mapping aligned to 2 MiB (a THP needs the alignment).
 * unit_is_huge()      is the page at addr part of a THP: /proc/self/pagemap + /proc/kpageflags
 *                     (KPF_THP); 1, 0, or -1 when unknowable (no CAP_SYS_ADMIN hides PFNs).
 * slurp()             a whole /proc file in one growing buffer: never a fixed-size buffer
 *                     (MMTests' thpavail read /proc/vmstat into 4 KiB, which modern kernels overflow).
 * vmstat_field()      one counter from /proc/vmstat text, -1 when the kernel lacks it.
 * smaps_anon_huge_kb() AnonHugePages of the mapping containing addr, from /proc/self/smaps.
 *
 * build.py hashes this header with each program, so an edit here rebuilds them all.
 */
#ifndef MMBENCH_UTIL_H
#define MMBENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MMB_UNIT (2UL << 20)
#define MMB_KPF_THP 22 /* include/uapi/linux/kernel-page-flags.h */

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline char *map_aligned(uint64_t size)
{
	/* Over-allocate by one unit so the region can start on a 2 MiB boundary. */
	char *raw = mmap(NULL, size + MMB_UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	return (char *)(((uintptr_t)raw + MMB_UNIT - 1) & ~(MMB_UNIT - 1));
}

static inline int unit_is_huge(int pagemap, int kpageflags, uintptr_t addr)
{
	uint64_t entry, flags;
	if (pagemap < 0 || kpageflags < 0 || pread(pagemap, &entry, 8, (addr / 4096) * 8) != 8)
		return -1;
	if (!(entry & (1ULL << 63)))
		return 0;
	uint64_t pfn = entry & ((1ULL << 55) - 1);
	if (!pfn || pread(kpageflags, &flags, 8, pfn * 8) != 8)
		return -1;
	return (flags >> MMB_KPF_THP) & 1;
}

static inline char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

static inline long long vmstat_field(const char *text, const char *name)
{
	size_t nl = strlen(name);
	const char *p = text;
	while (p && *p) {
		if (!strncmp(p, name, nl) && p[nl] == ' ')
			return atoll(p + nl + 1);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

static inline long smaps_anon_huge_kb(uintptr_t addr)
{
	char *text = slurp("/proc/self/smaps");
	long kb = -1;
	int in = 0;
	if (!text)
		return -1;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long lo, hi;
		char *dash = strchr(line, '-'), *sp = strchr(line, ' ');
		if (dash && sp && dash < sp && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			in = addr >= lo && addr < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	free(text);
	return kb;
}

#endif
