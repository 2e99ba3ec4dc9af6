/*
 * highalloc: high-order allocation success and latency.
 *
 *   highalloc hugetlb FROM COUNT STEP
 *       Grow /proc/sys/vm/nr_hugepages from FROM towards FROM+COUNT, STEP pages per write, and
 *       time every write (CLOCK_MONOTONIC).  The caller has journaled the original value and puts
 *       it back afterwards.  Output per write:  step <requested> <pool_now> <ns>
 *       then:  hugetlb requested <n> got <n> ns <total>
 *   highalloc collapse BYTES
 *       Fault BYTES of anonymous memory with base pages, then MADV_COLLAPSE it one 2 MiB unit at
 *       a time (each call timed).  Output per unit:  collapse <index> <ok:1|0> <ns> <errno>
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

#define UNIT MMB_UNIT
#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

static long read_pool(void)
{
	char buf[64];
	int fd = open(NR_HUGEPAGES, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atol(buf);
}

static int hugetlb(long from, long count, long step)
{
	uint64_t total = 0;
	long got = 0;
	for (long want = from + step; want - step < from + count; want += step) {
		if (want > from + count)
			want = from + count;
		char buf[64];
		int len = snprintf(buf, sizeof(buf), "%ld\n", want);
		int fd = open(NR_HUGEPAGES, O_WRONLY);
		if (fd < 0) {
			perror(NR_HUGEPAGES);
			return 1;
		}
		uint64_t s = now_ns();
		ssize_t w = write(fd, buf, len);
		uint64_t ns = now_ns() - s;
		int err = errno;
		close(fd);
		if (w < 0 && err != ENOMEM) {
			fprintf(stderr, "write %s: %s\n", NR_HUGEPAGES, strerror(err));
			return 1;
		}
		total += ns;
		long pool = read_pool();
		got = pool - from;
		printf("step %ld %ld %llu\n", want, pool, (unsigned long long)ns);
	}
	printf("hugetlb requested %ld got %ld ns %llu\n", count, got, (unsigned long long)total);
	return 0;
}

static int collapse(uint64_t bytes)
{
	bytes &= ~(UNIT - 1);
	char *raw = mmap(NULL, bytes + UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char *p = (char *)(((uintptr_t)raw + UNIT - 1) & ~(UNIT - 1));
	madvise(p, bytes, MADV_NOHUGEPAGE); /* base pages first, whatever thp.enabled says */
	for (uint64_t off = 0; off < bytes; off += MMB_PAGE)
		p[off] = 1;
	madvise(p, bytes, MADV_HUGEPAGE); /* clears VM_NOHUGEPAGE, which MADV_COLLAPSE refuses */
	for (uint64_t u = 0; u < bytes / UNIT; u++) {
		uint64_t s = now_ns();
		int rc = madvise(p + u * UNIT, UNIT, MADV_COLLAPSE);
		uint64_t ns = now_ns() - s;
		printf("collapse %llu %d %llu %d\n", (unsigned long long)u, rc == 0, (unsigned long long)ns,
		       rc == 0 ? 0 : errno);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "hugetlb"))
		return hugetlb(mmb_long(argv[2], "FROM", 0, LONG_MAX / 4), mmb_long(argv[3], "COUNT", 0, LONG_MAX / 4),
			       mmb_long(argv[4], "STEP", 1, LONG_MAX / 4));
	if (argc == 3 && !strcmp(argv[1], "collapse"))
		return collapse(mmb_u64_range(argv[2], "BYTES", 1ULL << 50));
	fprintf(stderr, "usage: %s hugetlb FROM COUNT STEP | collapse BYTES\n", argv[0]);
	return 2;
}
