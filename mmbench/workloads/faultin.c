/*
 * faultin: map an anonymous region, touch it one 2 MiB unit at a time and time each unit.
 *
 * Usage: faultin SIZE_BYTES MADV_HUGEPAGE(0|1)
 * Output, one line per 2 MiB unit:  unit <index> <nanoseconds> <huge:1|0|-1>
 * then:  total_ns <ns> bytes <n> anon_huge_kb <kb> units <n>
 *
 * Timing uses CLOCK_MONOTONIC around the first write to every 4 KiB page of the unit; nothing
 * else (no sleeps, no I/O) is inside the timed region.  Whether a unit ended up backed by a huge
 * page is read afterwards from /proc/self/pagemap + /proc/kpageflags (KPF_THP, needs root; -1 when
 * unavailable); the mapping's AnonHugePages comes from /proc/self/smaps.  Sizes are 64-bit
 * throughout (MMTests' alloc overflowed an int above 2 GiB).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define UNIT (2UL << 20)

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SIZE_BYTES MADV_HUGEPAGE(0|1)\n", argv[0]);
		return 2;
	}
	uint64_t size = strtoull(argv[1], NULL, 0);
	int madv = atoi(argv[2]);
	size = (size + UNIT - 1) & ~(UNIT - 1);
	if (size == 0) {
		fprintf(stderr, "size must be at least 2 MiB\n");
		return 2;
	}
	/* Over-allocate by one unit so the region can be 2 MiB aligned (THP needs alignment). */
	char *raw = mmap(NULL, size + UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char *p = (char *)(((uintptr_t)raw + UNIT - 1) & ~(UNIT - 1));
	if (madv && madvise(p, size, MADV_HUGEPAGE) != 0)
		fprintf(stderr, "madvise(MADV_HUGEPAGE): %s\n", strerror(errno));

	uint64_t units = size / UNIT;
	uint64_t *lat = calloc(units, sizeof(*lat));
	if (!lat)
		return 1;
	uint64_t t0 = now_ns();
	for (uint64_t u = 0; u < units; u++) {
		char *base = p + u * UNIT;
		uint64_t s = now_ns();
		for (uint64_t off = 0; off < UNIT; off += 4096)
			base[off] = 1;
		lat[u] = now_ns() - s;
	}
	uint64_t total = now_ns() - t0;

	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpf = open("/proc/kpageflags", O_RDONLY);
	for (uint64_t u = 0; u < units; u++)
		printf("unit %llu %llu %d\n", (unsigned long long)u, (unsigned long long)lat[u],
		       unit_is_huge(pagemap, kpf, (uintptr_t)(p + u * UNIT)));
	printf("total_ns %llu bytes %llu anon_huge_kb %ld units %llu\n", (unsigned long long)total,
	       (unsigned long long)size, smaps_anon_huge_kb((uintptr_t)p), (unsigned long long)units);
	return 0;
}
