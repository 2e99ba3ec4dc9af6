/*
 * pagealloc: a workload dominated by page allocation and freeing (seed 004, the fair zone
 * allocation policy tests).
 *
 * Usage: pagealloc -d DIR -s TOTAL_BYTES [-j JOBS] [-b BLOCK_BYTES] [-A ANON_THREADS]
 *                  [-c CHUNK_BYTES] [-p READ_PASSES]
 *
 * JOBS threads each write their own file of TOTAL/JOBS bytes with buffered write()s of BLOCK
 * bytes, then (after all writers are done) read them back sequentially READ_PASSES times.  With
 * TOTAL larger than the memory budget the page cache turns over continuously: every new page is
 * an allocation, and reclaim frees old ones.  Meanwhile ANON_THREADS threads map CHUNK bytes of
 * anonymous memory, write every page and unmap it, over and over, until both phases are done.
 *
 * Output (CLOCK_MONOTONIC):
 *   write bytes <n> seconds <s>
 *   read bytes <n> seconds <s>
 *   anon bytes <n> seconds <s>
 *   total bytes <n> seconds <s>
 */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

static const char *dir;
static uint64_t total = 1ULL << 30, block = 1 << 20, chunk = 8 << 20;
static int jobs = 2, anon_threads = 1, passes = 1;
static volatile int stop;
static uint64_t anon_bytes;
static long pagesize;

static void path_of(int i, char *buf, size_t len) { snprintf(buf, len, "%s/pagealloc-%d.dat", dir, i); }

static void *writer(void *arg)
{
	int i = (int)(uintptr_t)arg;
	char path[4096];
	path_of(i, path, sizeof(path));
	char *buf = mmb_xmalloc(block);
	for (uint64_t k = 0; k < block; k++)
		buf[k] = (char)(k * 31 + i);
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0) {
		perror("pagealloc: create");
		exit(1);
	}
	uint64_t size = total / jobs;
	for (uint64_t done = 0; done < size;) {
		size_t n = size - done < block ? (size_t)(size - done) : (size_t)block;
		ssize_t w = write(fd, buf, n);
		if (w <= 0) {
			perror("pagealloc: write");
			exit(1);
		}
		done += (uint64_t)w;
	}
	close(fd);
	free(buf);
	return NULL;
}

static void *reader(void *arg)
{
	int i = (int)(uintptr_t)arg;
	char path[4096];
	path_of(i, path, sizeof(path));
	char *buf = mmb_xmalloc(block);
	for (int pass = 0; pass < passes; pass++) {
		int fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror("pagealloc: open");
			exit(1);
		}
		ssize_t r;
		while ((r = read(fd, buf, block)) > 0)
			;
		if (r < 0) {
			perror("pagealloc: read");
			exit(1);
		}
		close(fd);
	}
	free(buf);
	return NULL;
}

static void *anon(void *arg)
{
	(void)arg;
	while (!stop) {
		char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("pagealloc: mmap");
			exit(1);
		}
		for (uint64_t off = 0; off < chunk; off += pagesize)
			p[off] = 1;
		munmap(p, chunk);
		__atomic_fetch_add(&anon_bytes, chunk, __ATOMIC_RELAXED);
	}
	return NULL;
}

static double run_phase(void *(*fn)(void *))
{
	pthread_t *th = mmb_xcalloc(jobs, sizeof(pthread_t));
	uint64_t t0 = now_ns();
	for (int i = 0; i < jobs; i++)
		mmb_pt(pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i), "pthread_create");
	for (int i = 0; i < jobs; i++)
		mmb_pt(pthread_join(th[i], NULL), "pthread_join");
	free(th);
	return (now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	int c;
	pagesize = sysconf(_SC_PAGESIZE);
	while ((c = getopt(argc, argv, "d:s:j:b:A:c:p:")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 's': total = mmb_u64(optarg, "-s"); break;
		case 'j': jobs = mmb_int(optarg, "-j", 1, 4096); break;
		case 'b': block = mmb_u64_range(optarg, "-b", 1ULL << 40); break;
		case 'A': anon_threads = mmb_int(optarg, "-A", 0, 4096); break;
		case 'c': chunk = mmb_u64(optarg, "-c"); break;
		case 'p': passes = mmb_int(optarg, "-p", 0, 1000000); break;
		default:
			fprintf(stderr, "usage: see the comment at the top of pagealloc.c\n");
			return 2;
		}
	}
	if (!dir || jobs < 1 || !block || !chunk || anon_threads < 0 || passes < 0 || total < (uint64_t)jobs) {
		fprintf(stderr, "pagealloc: bad arguments\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_t *at = mmb_xcalloc(anon_threads ? anon_threads : 1, sizeof(pthread_t));
	uint64_t t0 = now_ns();
	for (int i = 0; i < anon_threads; i++)
		mmb_pt(pthread_create(&at[i], NULL, anon, NULL), "pthread_create");
	uint64_t file_bytes = (total / jobs) * jobs;
	double ws = run_phase(writer);
	printf("write bytes %llu seconds %.6f\n", (unsigned long long)file_bytes, ws);
	double rs = passes ? run_phase(reader) : 0;
	printf("read bytes %llu seconds %.6f\n", (unsigned long long)(file_bytes * passes), rs);
	stop = 1;
	for (int i = 0; i < anon_threads; i++)
		mmb_pt(pthread_join(at[i], NULL), "pthread_join");
	double el = (now_ns() - t0) / 1e9;
	printf("anon bytes %llu seconds %.6f\n", (unsigned long long)anon_bytes, el);
	printf("total bytes %llu seconds %.6f\n",
	       (unsigned long long)(file_bytes * (1 + passes) + anon_bytes), el);
	free(at);
	return 0;
}
