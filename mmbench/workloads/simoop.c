/*
 * simoop: a simulated mixed server workload for reclaim latency (in the style of Chris Mason's
 * simoop; written from scratch for mmbench).
 *
 * Usage: simoop -d DIR [-w WSS_BYTES] [-t WORKERS] [-r READERS] [-W WRITERS] [-a ALLOCATORS]
 *               [-n NFILES] [-f FILE_BYTES] [-R READ_BYTES] [-X WRITE_BYTES] [-M ALLOC_BYTES]
 *               [-T RUNTIME_S] [-u WARMUP_S] [-L WARMUP_LIMIT_S] [-i INTERVAL_S] [-s STALL_US]
 *               [-p PAGES_PER_OP]
 *
 * Threads:
 *   workers     own WSS/WORKERS bytes of anonymous memory each (faulted at start); one unit of work
 *               touches PAGES_PER_OP random pages of it (read + write of a cache line).  A unit
 *               that takes longer than STALL_US is a stall (typically swap-in or direct reclaim).
 *   readers     pread READ_BYTES at a random aligned offset of a random file   -> Read latency
 *   writers     pwrite WRITE_BYTES at a random aligned offset of a random file -> Write latency
 *   allocators  mmap ALLOC_BYTES, write every page, munmap                     -> Allocation latency
 *               (the time of mmap + touching every page; munmap is not timed)
 * The NFILES files of FILE_BYTES are created in DIR first (not timed).
 *
 * Warm-up: at least WARMUP_S, and until every thread has done work (each worker has faulted its
 * share of the working set and finished a unit of work; each reader, writer and allocator has
 * completed an op), so the measurement never sees the fault-in.  If that takes longer than
 * WARMUP_LIMIT_S (default 600), simoop prints "warmup incomplete: ..." (how many of each kind had
 * done work) and exits with status 3: there is nothing to measure yet.
 *
 * Latencies are CLOCK_MONOTONIC in microseconds, collected in log-linear histograms (32 sub-buckets
 * per power of two, ~3% resolution; values under 64 us exact) that are drained every interval.
 * Output: "warmup complete seconds <s>", then per interval:
 *   interval <n> seconds <s>
 *   Read latency usec: (p50: a) (p95: b) (p99: c) (max: d) count <n>
 *   Write latency usec: ...
 *   Allocation latency usec: ...
 *   rates work/s <x> stalls/s <y>
 * and at the end "done intervals <n>".  An op type with no completed op in an interval prints
 * count 0 and -1 for its percentiles.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define SUB_BITS 5
#define SUB (1 << SUB_BITS)
#define LINEAR 64
#define NBUCKETS (LINEAR + 40 * SUB)

enum { OP_READ, OP_WRITE, OP_ALLOC, NOPS };
static const char *op_names[NOPS] = { "Read", "Write", "Allocation" };

struct hist {
	uint64_t b[NBUCKETS];
	uint64_t max;
};

static struct hist hists[NOPS];
static uint64_t work_done, stalls;
static volatile int stop;
static int ready_workers, ready_ops;	/* threads that have done work (warm-up) */

static const char *dir = NULL;
static uint64_t wss = 64 << 20, file_bytes = 32 << 20, read_bytes = 1 << 20, write_bytes = 1 << 20;
static uint64_t alloc_bytes = 16 << 20;
static int workers = 2, readers = 2, writers = 2, allocators = 1, nfiles = 4, pages_per_op = 256;
static double runtime = 30, warmup = 5, warmup_limit = 600, interval = 1;
static uint64_t stall_us = 10000;
static long pagesize;

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int bucket_of(uint64_t us)
{
	if (us < LINEAR)
		return (int)us;
	int e = 63 - __builtin_clzll(us); /* e >= 6 */
	int sub = (int)((us >> (e - SUB_BITS)) & (SUB - 1));
	int idx = LINEAR + (e - 6) * SUB + sub;
	return idx < NBUCKETS ? idx : NBUCKETS - 1;
}

static double bucket_mid(int idx)
{
	if (idx < LINEAR)
		return idx;
	int e = (idx - LINEAR) / SUB + 6, sub = (idx - LINEAR) % SUB;
	double lo = (double)(1ULL << e) + (double)sub * (double)(1ULL << (e - SUB_BITS));
	return lo + (double)(1ULL << (e - SUB_BITS)) / 2.0;
}

static void record(int op, uint64_t ns)
{
	uint64_t us = ns / 1000;
	__atomic_fetch_add(&hists[op].b[bucket_of(us)], 1, __ATOMIC_RELAXED);
	uint64_t m = __atomic_load_n(&hists[op].max, __ATOMIC_RELAXED);
	while (us > m && !__atomic_compare_exchange_n(&hists[op].max, &m, us, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Drain the histogram of op into out (bucket by bucket, atomically). */
static void drain(int op, struct hist *out)
{
	for (int i = 0; i < NBUCKETS; i++)
		out->b[i] = __atomic_exchange_n(&hists[op].b[i], 0, __ATOMIC_RELAXED);
	out->max = __atomic_exchange_n(&hists[op].max, 0, __ATOMIC_RELAXED);
}

static double percentile(const struct hist *h, uint64_t total, double p)
{
	uint64_t rank = (uint64_t)(p * (double)total + 0.999999), seen = 0;
	if (rank < 1)
		rank = 1;
	for (int i = 0; i < NBUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			double v = bucket_mid(i);
			return v > (double)h->max ? (double)h->max : v;
		}
	}
	return (double)h->max;
}

static void *worker(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL * ((uintptr_t)arg + 1);
	uint64_t size = wss / (uint64_t)workers;
	size = (size / pagesize) * pagesize;
	if (size < (uint64_t)pagesize)
		size = pagesize;
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("simoop: worker mmap");
		exit(1);
	}
	uint64_t npages = size / pagesize;
	for (uint64_t i = 0; i < npages && !stop; i++)
		mem[i * pagesize] = (char)i;
	volatile uint64_t sink = 0;
	int ready = 0;
	while (!stop) {
		uint64_t t0 = now_ns(), sum = 0;
		for (int k = 0; k < pages_per_op; k++) {
			uint64_t pg = rnd(&seed) % npages;
			uint64_t *line = (uint64_t *)(mem + pg * pagesize + (rnd(&seed) % (pagesize / 64)) * 64);
			for (int j = 0; j < 8; j++)
				sum += line[j];
			line[0] = sum;
		}
		sink += sum;
		uint64_t dt = now_ns() - t0;
		__atomic_fetch_add(&work_done, 1, __ATOMIC_RELAXED);
		if (dt / 1000 > stall_us)
			__atomic_fetch_add(&stalls, 1, __ATOMIC_RELAXED);
		if (!ready) {
			ready = 1;
			__atomic_fetch_add(&ready_workers, 1, __ATOMIC_RELAXED);
		}
	}
	munmap(mem, size);
	return NULL;
}

static char *file_name(int i)
{
	static __thread char buf[4096];
	snprintf(buf, sizeof(buf), "%s/simoop-%d.dat", dir, i);
	return buf;
}

static void *io_thread(void *arg)
{
	int write_mode = ((uintptr_t)arg) & 1;
	uint64_t seed = 0xd1b54a32d192ed03ULL * (((uintptr_t)arg) + 7);
	uint64_t len = write_mode ? write_bytes : read_bytes;
	char *buf = NULL;
	if (posix_memalign((void **)&buf, 4096, len)) {
		fprintf(stderr, "simoop: out of memory for the IO buffer\n");
		exit(1);
	}
	memset(buf, 0x5a, len);
	int *fds = mmb_xcalloc(nfiles, sizeof(int));
	for (int i = 0; i < nfiles; i++) {
		fds[i] = open(file_name(i), write_mode ? O_RDWR : O_RDONLY);
		if (fds[i] < 0) {
			perror("simoop: open");
			exit(1);
		}
	}
	uint64_t slots = file_bytes / len;
	if (slots < 1)
		slots = 1;
	int ready = 0;
	while (!stop) {
		int f = (int)(rnd(&seed) % (uint64_t)nfiles);
		off_t off = (off_t)((rnd(&seed) % slots) * len);
		uint64_t t0 = now_ns();
		ssize_t r = write_mode ? pwrite(fds[f], buf, len, off) : pread(fds[f], buf, len, off);
		uint64_t dt = now_ns() - t0;
		if (r < 0) {
			perror(write_mode ? "simoop: pwrite" : "simoop: pread");
			exit(1);
		}
		record(write_mode ? OP_WRITE : OP_READ, dt);
		if (!ready) {
			ready = 1;
			__atomic_fetch_add(&ready_ops, 1, __ATOMIC_RELAXED);
		}
	}
	for (int i = 0; i < nfiles; i++)
		close(fds[i]);
	free(fds);
	free(buf);
	return NULL;
}

static void *allocator(void *arg)
{
	(void)arg;
	int ready = 0;
	while (!stop) {
		uint64_t t0 = now_ns();
		char *p = mmap(NULL, alloc_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("simoop: allocation mmap");
			exit(1);
		}
		for (uint64_t off = 0; off < alloc_bytes; off += pagesize)
			p[off] = 1;
		record(OP_ALLOC, now_ns() - t0);
		munmap(p, alloc_bytes);
		if (!ready) {
			ready = 1;
			__atomic_fetch_add(&ready_ops, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void setup_files(void)
{
	uint64_t t0 = now_ns();
	size_t chunk = 1 << 20;
	char *buf = mmb_xmalloc(chunk);
	uint64_t seed = 12345;
	for (size_t i = 0; i < chunk / 8; i++)
		((uint64_t *)buf)[i] = rnd(&seed);
	for (int i = 0; i < nfiles; i++) {
		int fd = open(file_name(i), O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd < 0) {
			perror("simoop: create");
			exit(1);
		}
		for (uint64_t done = 0; done < file_bytes;) {
			size_t n = file_bytes - done < chunk ? (size_t)(file_bytes - done) : chunk;
			ssize_t w = write(fd, buf, n);
			if (w <= 0) {
				perror("simoop: write");
				exit(1);
			}
			done += (uint64_t)w;
		}
		close(fd);
	}
	free(buf);
	printf("setup files %d size %llu seconds %.3f\n", nfiles, (unsigned long long)file_bytes,
	       (now_ns() - t0) / 1e9);
}

static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { (time_t)(deadline / 1000000000ULL), (long)(deadline % 1000000000ULL) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int main(int argc, char **argv)
{
	int c;
	pagesize = sysconf(_SC_PAGESIZE);
	while ((c = getopt(argc, argv, "d:w:t:r:W:a:n:f:R:X:M:T:u:L:i:s:p:")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'w': wss = mmb_u64(optarg, "-w"); break;
		case 't': workers = mmb_int(optarg, "-t", 0, 4096); break;
		case 'r': readers = mmb_int(optarg, "-r", 0, 4096); break;
		case 'W': writers = mmb_int(optarg, "-W", 0, 4096); break;
		case 'a': allocators = mmb_int(optarg, "-a", 0, 4096); break;
		case 'n': nfiles = mmb_int(optarg, "-n", 0, 1000000); break;
		case 'f': file_bytes = mmb_u64(optarg, "-f"); break;
		case 'R': read_bytes = mmb_u64(optarg, "-R"); break;
		case 'X': write_bytes = mmb_u64(optarg, "-X"); break;
		case 'M': alloc_bytes = mmb_u64(optarg, "-M"); break;
		case 'T': runtime = mmb_double(optarg, "-T", 0); break;
		case 'u': warmup = mmb_double(optarg, "-u", 0); break;
		case 'L': warmup_limit = mmb_double(optarg, "-L", 0); break;
		case 'i': interval = mmb_double(optarg, "-i", 0.001); break;
		case 's': stall_us = mmb_u64(optarg, "-s"); break;
		case 'p': pages_per_op = mmb_int(optarg, "-p", 1, 1 << 20); break;
		default:
			fprintf(stderr, "usage: see the comment at the top of simoop.c\n");
			return 2;
		}
	}
	if (!dir || workers < 0 || readers < 0 || writers < 0 || allocators < 0 || nfiles < 1 ||
	    !file_bytes || !read_bytes || !write_bytes || !alloc_bytes || interval <= 0 || runtime <= 0 ||
	    pages_per_op < 1) {
		fprintf(stderr, "simoop: bad arguments (need -d DIR and positive sizes/times)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((readers || writers))
		setup_files();
	else
		nfiles = 0;

	int nthreads = workers + readers + writers + allocators;
	pthread_t *th = mmb_xcalloc(nthreads, sizeof(pthread_t));
	int k = 0;
	for (int i = 0; i < workers; i++)
		mmb_pt(pthread_create(&th[k++], NULL, worker, (void *)(uintptr_t)i), "pthread_create");
	for (int i = 0; i < readers; i++)
		mmb_pt(pthread_create(&th[k++], NULL, io_thread, (void *)(uintptr_t)(2 * i)), "pthread_create");
	for (int i = 0; i < writers; i++)
		mmb_pt(pthread_create(&th[k++], NULL, io_thread, (void *)(uintptr_t)(2 * i + 1)), "pthread_create");
	for (int i = 0; i < allocators; i++)
		mmb_pt(pthread_create(&th[k++], NULL, allocator, NULL), "pthread_create");

	uint64_t start = now_ns();
	sleep_until(start + (uint64_t)(warmup * 1e9));
	/* the warm-up lasts until every thread has done work: the workers' fault-in is not measured */
	int others = readers + writers + allocators;
	while (__atomic_load_n(&ready_workers, __ATOMIC_RELAXED) < workers ||
	       __atomic_load_n(&ready_ops, __ATOMIC_RELAXED) < others) {
		uint64_t t = now_ns();
		if ((t - start) / 1e9 > (warmup_limit > warmup ? warmup_limit : warmup)) {
			printf("warmup incomplete: %d of %d workers and %d of %d readers/writers/allocators had done "
			       "work after %.1f s (limit %.0f s)\n",
			       __atomic_load_n(&ready_workers, __ATOMIC_RELAXED), workers,
			       __atomic_load_n(&ready_ops, __ATOMIC_RELAXED), others, (t - start) / 1e9, warmup_limit);
			fflush(stdout);
			_exit(3);
		}
		sleep_until(t + 100000000ULL);
	}
	struct hist h;
	for (int op = 0; op < NOPS; op++)
		drain(op, &h);
	__atomic_exchange_n(&work_done, 0, __ATOMIC_RELAXED);
	__atomic_exchange_n(&stalls, 0, __ATOMIC_RELAXED);
	printf("warmup complete seconds %.3f\n", (now_ns() - start) / 1e9);

	int nint = (int)(runtime / interval + 0.5);
	if (nint < 1)
		nint = 1;
	uint64_t t_prev = now_ns(), t_base = t_prev;
	for (int n = 1; n <= nint; n++) {
		sleep_until(t_base + (uint64_t)(n * interval * 1e9));
		uint64_t t = now_ns();
		double secs = (t - t_prev) / 1e9;
		t_prev = t;
		printf("interval %d seconds %.6f\n", n, secs);
		for (int op = 0; op < NOPS; op++) {
			drain(op, &h);
			uint64_t total = 0;
			for (int i = 0; i < NBUCKETS; i++)
				total += h.b[i];
			if (total == 0) {
				printf("%s latency usec: (p50: -1) (p95: -1) (p99: -1) (max: -1) count 0\n", op_names[op]);
				continue;
			}
			printf("%s latency usec: (p50: %.0f) (p95: %.0f) (p99: %.0f) (max: %llu) count %llu\n", op_names[op],
			       percentile(&h, total, 0.50), percentile(&h, total, 0.95), percentile(&h, total, 0.99),
			       (unsigned long long)h.max, (unsigned long long)total);
		}
		uint64_t w = __atomic_exchange_n(&work_done, 0, __ATOMIC_RELAXED);
		uint64_t s = __atomic_exchange_n(&stalls, 0, __ATOMIC_RELAXED);
		printf("rates work/s %.3f stalls/s %.3f\n", w / secs, s / secs);
	}
	stop = 1;
	for (int i = 0; i < nthreads; i++)
		mmb_pt(pthread_join(th[i], NULL), "pthread_join");
	printf("done intervals %d\n", nint);
	return 0;
}
