/*
 * usemem: write every byte of an anonymous (and optionally a file-backed MAP_SHARED) region,
 * PASSES times, so that a working set larger than the memory limit is reclaimed, swapped out and
 * refaulted between passes.
 *
 * Usage: usemem ANON_BYTES FILE_BYTES FILE_PATH PASSES
 * Output per pass:  pass <i> ns <ns> bytes <n> user_us <us> sys_us <us> majflt <n>
 * then:             total elapsed_ns <ns> user_us <us> sys_us <us> majflt <n>
 *
 * Every 8-byte word gets a value depending on its position and the pass, so pages are neither
 * zero nor same-filled (zram would store those for free) but still compress somewhat.  Timing is
 * CLOCK_MONOTONIC, CPU time getrusage(RUSAGE_SELF); 64-bit sizes throughout.
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

#define PAGE MMB_PAGE

static int64_t tv_us(struct timeval tv)
{
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void write_region(char *p, uint64_t bytes, uint64_t pass)
{
	for (uint64_t off = 0; off < bytes; off += PAGE) {
		uint64_t *w = (uint64_t *)(p + off);
		uint64_t seed = (off / PAGE) * 2654435761ULL + pass;
		for (unsigned i = 0; i < PAGE / 8; i++)
			w[i] = seed + (i & 7) * 0x0101010101010101ULL;
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s ANON_BYTES FILE_BYTES FILE_PATH PASSES\n", argv[0]);
		return 2;
	}
	uint64_t anon = mmb_u64_range(argv[1], "ANON_BYTES", 1ULL << 50) & ~(PAGE - 1);
	uint64_t fbytes = mmb_u64_range(argv[2], "FILE_BYTES", 1ULL << 50) & ~(PAGE - 1);
	int passes = mmb_int(argv[4], "PASSES", 1, 1000000);
	char *a = NULL, *f = NULL;
	if (anon) {
		a = mmap(NULL, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED) {
			perror("mmap anon");
			return 1;
		}
	}
	if (fbytes) {
		int fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, fbytes)) {
			perror(argv[3]);
			return 1;
		}
		f = mmap(NULL, fbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (f == MAP_FAILED) {
			perror("mmap file");
			return 1;
		}
		close(fd);
	}
	struct rusage r0, rp, rn;
	getrusage(RUSAGE_SELF, &r0);
	rp = r0;
	uint64_t t0 = now_ns();
	for (int pass = 0; pass < passes; pass++) {
		uint64_t s = now_ns();
		if (a)
			write_region(a, anon, pass);
		if (f)
			write_region(f, fbytes, pass);
		uint64_t ns = now_ns() - s;
		getrusage(RUSAGE_SELF, &rn);
		printf("pass %d ns %llu bytes %llu user_us %lld sys_us %lld majflt %ld\n", pass, (unsigned long long)ns,
		       (unsigned long long)(anon + fbytes), (long long)(tv_us(rn.ru_utime) - tv_us(rp.ru_utime)),
		       (long long)(tv_us(rn.ru_stime) - tv_us(rp.ru_stime)), rn.ru_majflt - rp.ru_majflt);
		fflush(stdout);
		rp = rn;
	}
	uint64_t elapsed = now_ns() - t0;
	printf("total elapsed_ns %llu user_us %lld sys_us %lld majflt %ld\n", (unsigned long long)elapsed,
	       (long long)(tv_us(rp.ru_utime) - tv_us(r0.ru_utime)), (long long)(tv_us(rp.ru_stime) - tv_us(r0.ru_stime)),
	       rp.ru_majflt - r0.ru_majflt);
	return 0;
}
