/*
 * stutter: latency of a small mmap + fault + munmap loop, for running beside memory pressure.
 *
 * Usage: stutter DURATION_S MAP_BYTES INTERVAL_US THP(0|1)
 * Output: lat <ns>     one line per sample
 *         summary samples <n> wall_ns <ns>
 *
 * The timed region is exactly mmap, one write per 4 KiB page, munmap (CLOCK_MONOTONIC).  The
 * optional pause between samples is outside it (MMTests' stutterp slept 5 ms inside its
 * measured latency).  Samples are kept in memory and printed at the end, so output does not
 * perturb the loop.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s DURATION_S MAP_BYTES INTERVAL_US THP(0|1)\n", argv[0]);
		return 2;
	}
	double duration = mmb_double(argv[1], "DURATION_S", 0);
	uint64_t bytes = mmb_u64_range(argv[2], "MAP_BYTES", 1ULL << 50) & ~(MMB_PAGE - 1);
	long interval_us = mmb_long(argv[3], "INTERVAL_US", 0, LONG_MAX);
	int thp = mmb_int(argv[4], "THP", 0, 1);
	if (!bytes) {
		fprintf(stderr, "MAP_BYTES must be at least one page (%llu bytes)\n", (unsigned long long)MMB_PAGE);
		return 2;
	}
	size_t cap = 1 << 16, n = 0;
	uint64_t *lat = mmb_xmalloc(cap * sizeof(*lat));
	struct timespec pause = { interval_us / 1000000, (interval_us % 1000000) * 1000 };
	uint64_t start = now_ns(), end = start + (uint64_t)(duration * 1e9);
	while (now_ns() < end) {
		uint64_t s = now_ns();
		char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		if (!thp)
			madvise(p, bytes, MADV_NOHUGEPAGE);
		for (uint64_t off = 0; off < bytes; off += MMB_PAGE)
			p[off] = 1;
		munmap(p, bytes);
		uint64_t d = now_ns() - s;
		if (n == cap) {
			cap *= 2;
			lat = mmb_xrealloc(lat, cap * sizeof(*lat));
		}
		lat[n++] = d;
		if (interval_us > 0)
			nanosleep(&pause, NULL);
	}
	uint64_t wall = now_ns() - start;
	for (size_t i = 0; i < n; i++)
		printf("lat %llu\n", (unsigned long long)lat[i]);
	printf("summary samples %zu wall_ns %llu\n", n, (unsigned long long)wall);
	return 0;
}
