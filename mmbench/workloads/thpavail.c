/*
 * thpavail: fault in one anonymous mapping while the machine is full of page cache and IO, and
 * report how many huge pages it got and at what cost.
 *
 * Usage: thpavail SIZE_BYTES MADV_HUGEPAGE(0|1)
 * Output:
 *   unit <index> <ns> <huge:1|0|-1>          one line per 2 MiB unit (latency of its first touch)
 *   user_us <n> sys_us <n> elapsed_ns <n> thp_fault_alloc <d> thp_fault_fallback <d>
 *       anon_huge_kb <kb> units <n>
 *
 * user/sys come from getrusage(RUSAGE_SELF) around the touch loop, elapsed from CLOCK_MONOTONIC.
 * thp_fault_alloc/thp_fault_fallback are /proc/vmstat deltas around the touch loop, read whole
 * with a growing buffer (MMTests' alloc used 4 KiB, which modern kernels overflow).  They are
 * system-wide counters; THP Active (anon_huge_kb) is the mapping's own smaps AnonHugePages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define UNIT (2UL << 20)

/* Read a whole file into a malloc'd, NUL-terminated buffer that grows as needed. */

static int64_t tv_us(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SIZE_BYTES MADV_HUGEPAGE(0|1)\n", argv[0]);
		return 2;
	}
	uint64_t size = strtoull(argv[1], NULL, 0) & ~(UNIT - 1);
	int madv = atoi(argv[2]);
	if (!size) {
		fprintf(stderr, "size must be at least 2 MiB\n");
		return 2;
	}
	char *raw = mmap(NULL, size + UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char *p = (char *)(((uintptr_t)raw + UNIT - 1) & ~(UNIT - 1));
	if (madv && madvise(p, size, MADV_HUGEPAGE))
		fprintf(stderr, "madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	uint64_t units = size / UNIT;
	uint64_t *lat = calloc(units, sizeof(*lat));
	if (!lat)
		return 1;

	char *before = slurp("/proc/vmstat");
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t t0 = now_ns();
	for (uint64_t u = 0; u < units; u++) {
		char *b = p + u * UNIT;
		uint64_t s = now_ns();
		for (uint64_t off = 0; off < UNIT; off += 4096)
			b[off] = 1;
		lat[u] = now_ns() - s;
	}
	uint64_t elapsed = now_ns() - t0;
	getrusage(RUSAGE_SELF, &r1);
	char *after = slurp("/proc/vmstat");

	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpf = open("/proc/kpageflags", O_RDONLY);
	for (uint64_t u = 0; u < units; u++)
		printf("unit %llu %llu %d\n", (unsigned long long)u, (unsigned long long)lat[u],
		       unit_is_huge(pagemap, kpf, (uintptr_t)(p + u * UNIT)));
	long long fa = -1, ff = -1;
	if (before && after) {
		fa = vmstat_field(after, "thp_fault_alloc") - vmstat_field(before, "thp_fault_alloc");
		ff = vmstat_field(after, "thp_fault_fallback") - vmstat_field(before, "thp_fault_fallback");
	}
	printf("user_us %lld sys_us %lld elapsed_ns %llu thp_fault_alloc %lld thp_fault_fallback %lld "
	       "anon_huge_kb %ld units %llu\n",
	       (long long)(tv_us(r1.ru_utime) - tv_us(r0.ru_utime)),
	       (long long)(tv_us(r1.ru_stime) - tv_us(r0.ru_stime)), (unsigned long long)elapsed, fa, ff,
	       smaps_anon_huge_kb((uintptr_t)p), (unsigned long long)units);
	return 0;
}
