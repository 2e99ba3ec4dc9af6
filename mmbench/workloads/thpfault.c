/*
 * thpfault: N threads fault anonymous memory one 2 MiB unit at a time (thpscale/thpchallenge
 * style); every unit's first-touch latency is timed and classified huge or base.
 *
 * Usage: thpfault SIZE_BYTES THREADS MADV_HUGEPAGE(0|1) HOLES_BYTES
 *   SIZE_BYTES is split evenly between the threads.  HOLES_BYTES > 0: before the barrier each
 *   thread faults its share of HOLES_BYTES and munmaps the first 1 MiB of every 2 MiB of it, so
 *   free memory is left in pieces no huge page fits in (the other halves stay mapped).
 * Output: fault <thread> <huge:1|0|-1> <ns>   one line per 2 MiB unit
 *         summary threads <n> units <n> wall_ns <ns>
 *
 * Latency is CLOCK_MONOTONIC around writing one byte to every 4 KiB page of the unit: nothing
 * else is inside the timed region.  Huge or base is decided after all threads are done, from
 * /proc/self/pagemap + /proc/kpageflags (KPF_THP; -1 when unavailable).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define UNIT MMB_UNIT
#define HALF (1UL << 20)

struct worker {
	pthread_t tid;
	int idx;
	uint64_t units;
	uint64_t holes;
	char *region;
	uint64_t *lat;
	int err;
};

static pthread_barrier_t start_barrier, done_barrier;
static int madv;

static void *worker(void *arg)
{
	struct worker *w = arg;
	if (w->holes) {
		char *h = map_aligned(w->holes);
		if (!h) {
			w->err = errno;
		} else {
			madvise(h, w->holes, MADV_NOHUGEPAGE); /* base pages, so the holes are 1 MiB */
			for (uint64_t off = 0; off < w->holes; off += MMB_PAGE)
				h[off] = 1;
			for (uint64_t off = 0; off + UNIT <= w->holes; off += UNIT)
				munmap(h + off, HALF);
		}
	}
	uint64_t size = w->units * UNIT;
	w->region = map_aligned(size);
	if (!w->region)
		w->err = errno;
	else if (madv && madvise(w->region, size, MADV_HUGEPAGE))
		fprintf(stderr, "madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
	mmb_pt(pthread_barrier_wait(&start_barrier), "pthread_barrier_wait");
	if (!w->err) {
		for (uint64_t u = 0; u < w->units; u++) {
			char *b = w->region + u * UNIT;
			uint64_t s = now_ns();
			for (uint64_t off = 0; off < UNIT; off += MMB_PAGE)
				b[off] = 1;
			w->lat[u] = now_ns() - s;
		}
	}
	mmb_pt(pthread_barrier_wait(&done_barrier), "pthread_barrier_wait");
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s SIZE_BYTES THREADS MADV_HUGEPAGE(0|1) HOLES_BYTES\n", argv[0]);
		return 2;
	}
	uint64_t size = mmb_u64_range(argv[1], "SIZE_BYTES", 1ULL << 50);
	int n = mmb_int(argv[2], "THREADS", 1, 4096);
	madv = mmb_int(argv[3], "MADV_HUGEPAGE", 0, 1);
	uint64_t holes = mmb_u64_range(argv[4], "HOLES_BYTES", 1ULL << 50);
	if (n < 1 || size / n < UNIT) {
		fprintf(stderr, "need at least one 2 MiB unit per thread\n");
		return 2;
	}
	struct worker *ws = mmb_xcalloc(n, sizeof(*ws));
	uint64_t units = size / n / UNIT;
	uint64_t *lat_all = mmb_xcalloc((size_t)n * units, sizeof(uint64_t));
	mmb_pt(pthread_barrier_init(&start_barrier, NULL, n + 1), "pthread_barrier_init");
	mmb_pt(pthread_barrier_init(&done_barrier, NULL, n + 1), "pthread_barrier_init");
	for (int i = 0; i < n; i++) {
		ws[i].idx = i;
		ws[i].units = units;
		ws[i].holes = (holes / n) & ~(UNIT - 1);
		ws[i].lat = lat_all + (size_t)i * units;
		mmb_pt(pthread_create(&ws[i].tid, NULL, worker, &ws[i]), "pthread_create");
	}
	mmb_pt(pthread_barrier_wait(&start_barrier), "pthread_barrier_wait");
	uint64_t t0 = now_ns();
	mmb_pt(pthread_barrier_wait(&done_barrier), "pthread_barrier_wait");
	uint64_t wall = now_ns() - t0;
	int pagemap = open("/proc/self/pagemap", O_RDONLY);
	int kpf = open("/proc/kpageflags", O_RDONLY);
	uint64_t total = 0;
	for (int i = 0; i < n; i++) {
		mmb_pt(pthread_join(ws[i].tid, NULL), "pthread_join");
		if (ws[i].err) {
			fprintf(stderr, "thread %d: mmap: %s\n", i, strerror(ws[i].err));
			return 1;
		}
		for (uint64_t u = 0; u < ws[i].units; u++)
			printf("fault %d %d %llu\n", i, unit_is_huge(pagemap, kpf, (uintptr_t)(ws[i].region + u * UNIT)),
			       (unsigned long long)ws[i].lat[u]);
		total += ws[i].units;
	}
	printf("summary threads %d units %llu wall_ns %llu\n", n, (unsigned long long)total, (unsigned long long)wall);
	free(lat_all);
	free(ws);
	return 0;
}
