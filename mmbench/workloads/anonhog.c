/*
 * anonhog: a background anonymous-memory consumer (MMTests' POSTMARK_BACKGROUND_MMAP).
 *
 * Usage: anonhog SIZE_BYTES BLOCK_BYTES PERIOD_MS
 *
 * Maps SIZE bytes of private anonymous memory, writes every page once, prints
 *   ready fault_ns <ns> bytes <n>
 * and then every PERIOD_MS rewrites the next BLOCK bytes of the region (wrapping around), so the
 * region stays in use and competes with page cache for the memory budget.  Each rewrite prints
 *   rewrite <index> <offset> <ns>
 * (CLOCK_MONOTONIC time of the memset, which includes any swap-in or reclaim it had to wait for).
 * Runs until SIGTERM/SIGINT, then prints "done rewrites <n>" and exits 0.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s SIZE_BYTES BLOCK_BYTES PERIOD_MS\n", argv[0]);
		return 2;
	}
	uint64_t size = mmb_u64(argv[1], "SIZE_BYTES");
	uint64_t block = mmb_u64(argv[2], "BLOCK_BYTES");
	long period_ms = mmb_long(argv[3], "PERIOD_MS", 1, LONG_MAX);
	long pg = sysconf(_SC_PAGESIZE);
	size = (size + pg - 1) & ~(uint64_t)(pg - 1);
	if (size == 0 || block == 0 || period_ms <= 0) {
		fprintf(stderr, "anonhog: size, block and period must be positive\n");
		return 2;
	}
	if (block > size)
		block = size;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: nanosleep returns early */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("anonhog: mmap");
		return 1;
	}
	uint64_t t0 = now_ns();
	for (uint64_t off = 0; off < size && !stop; off += pg)
		p[off] = (char)(off >> 12);
	printf("ready fault_ns %llu bytes %llu\n", (unsigned long long)(now_ns() - t0), (unsigned long long)size);

	uint64_t off = 0, n = 0;
	while (!stop) {
		struct timespec ts = { period_ms / 1000, (period_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		if (stop)
			break;
		uint64_t len = block;
		if (off + len > size)
			len = size - off;
		uint64_t t = now_ns();
		memset(p + off, (int)(n & 0xff) | 1, len);
		printf("rewrite %llu %llu %llu\n", (unsigned long long)n, (unsigned long long)off,
		       (unsigned long long)(now_ns() - t));
		n++;
		off += len;
		if (off >= size)
			off = 0;
	}
	printf("done rewrites %llu\n", (unsigned long long)n);
	return 0;
}
