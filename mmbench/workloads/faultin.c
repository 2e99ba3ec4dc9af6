/*
 * faultin: map an anonymous region, touch it one 2 MiB unit at a time and time each unit.
 * Used by the faultin workload and, under page cache and IO pressure, by thpavail.
 *
 * Usage: faultin SIZE_BYTES MADV_HUGEPAGE(0|1)
 * Output, one line per 2 MiB unit:  unit <index> <nanoseconds> <huge:1|0|-1>
 * then one line:  total_ns <ns> bytes <n> user_us <n> sys_us <n> thp_fault_alloc <d>
 *                 thp_fault_fallback <d> anon_huge_kb <kb> units <n>
 *
 * Timing uses CLOCK_MONOTONIC around the first write to every 4 KiB page of the unit; nothing
 * else (no sleeps, no I/O) is inside the timed region.  user/sys are getrusage(RUSAGE_SELF)
 * around the whole touch loop.  thp_fault_alloc/fallback are /proc/vmstat deltas around it (read
 * whole, no fixed buffer; system-wide counters, -1 when the kernel lacks them).  Whether a unit
 * ended up backed by a huge page is read afterwards from /proc/self/pagemap + /proc/kpageflags;
 * anon_huge_kb is the mapping's own AnonHugePages from /proc/self/smaps.  Sizes are 64-bit
 * throughout (MMTests' alloc overflowed an int above 2 GiB).
 */
#include <sys/resource.h>

#include "mmbench_util.h"

static int64_t tv_us(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static long long delta(const char *before, const char *after, const char *name)
{
	long long a = vmstat_field(after, name), b = vmstat_field(before, name);
	return (a < 0 || b < 0) ? -1 : a - b;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SIZE_BYTES MADV_HUGEPAGE(0|1)\n", argv[0]);
		return 2;
	}
	uint64_t size = mmb_u64_range(argv[1], "SIZE_BYTES", 1ULL << 50);
	int madv = mmb_int(argv[2], "MADV_HUGEPAGE", 0, 1);
	size = (size + MMB_UNIT - 1) & ~(MMB_UNIT - 1);
	if (size == 0) {
		fprintf(stderr, "size must be at least one THP (%llu bytes)\n", (unsigned long long)MMB_UNIT);
		return 2;
	}
	char *p = map_aligned(size);
	if (!p) {
		perror("mmap");
		return 1;
	}
	if (madv && madvise(p, size, MADV_HUGEPAGE) != 0)
		fprintf(stderr, "madvise(MADV_HUGEPAGE): %s\n", strerror(errno));

	uint64_t units = size / MMB_UNIT;
	uint64_t *lat = mmb_xcalloc(units, sizeof(*lat));
	char *before = slurp("/proc/vmstat");
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t t0 = now_ns();
	for (uint64_t u = 0; u < units; u++) {
		char *base = p + u * MMB_UNIT;
		uint64_t s = now_ns();
		for (uint64_t off = 0; off < MMB_UNIT; off += MMB_PAGE)
			base[off] = 1;
		lat[u] = now_ns() - s;
	}
	uint64_t total = now_ns() - t0;
	getrusage(RUSAGE_SELF, &r1);
	char *after = slurp("/proc/vmstat");

	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpf = open("/proc/kpageflags", O_RDONLY);
	for (uint64_t u = 0; u < units; u++)
		printf("unit %llu %llu %d\n", (unsigned long long)u, (unsigned long long)lat[u],
		       unit_is_huge(pagemap, kpf, (uintptr_t)(p + u * MMB_UNIT)));
	long long fa = -1, ff = -1;
	if (before && after) {
		fa = delta(before, after, "thp_fault_alloc");
		ff = delta(before, after, "thp_fault_fallback");
	}
	printf("total_ns %llu bytes %llu user_us %lld sys_us %lld thp_fault_alloc %lld "
	       "thp_fault_fallback %lld anon_huge_kb %ld units %llu\n",
	       (unsigned long long)total, (unsigned long long)size,
	       (long long)(tv_us(r1.ru_utime) - tv_us(r0.ru_utime)),
	       (long long)(tv_us(r1.ru_stime) - tv_us(r0.ru_stime)), fa, ff,
	       smaps_anon_huge_kb((uintptr_t)p), (unsigned long long)units);
	return 0;
}
