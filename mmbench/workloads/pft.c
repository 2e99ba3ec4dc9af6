/*
 * pft: anonymous page-fault scalability.  CLIENTS threads or processes each fault their share of
 * SIZE bytes (one write per 4 KiB page) at the same time; repeated REPEAT times.
 *
 * Usage: pft SIZE_BYTES CLIENTS MODE(threads|processes) REPEAT THP(0|1)
 * Output per repeat:
 *   result clients <n> repeat <r> wall_ns <ns> faults <n> cpu_ns <ns>
 * wall_ns: CLOCK_MONOTONIC from releasing the clients (a barrier) until the last one is done;
 * cpu_ns: the sum of every client's own CPU time (CLOCK_THREAD_CPUTIME_ID) over its touch loop;
 * faults: pages touched (each is one anonymous fault).  Mapping and unmapping are outside both.
 * THP=0 madvises MADV_NOHUGEPAGE so every fault is a base-page fault.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

struct shared {
	pthread_barrier_t start, done;
	uint64_t cpu_ns[];
};

static struct shared *sh;
static uint64_t chunk;
static int thp;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void client(int idx)
{
	char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	if (!thp)
		madvise(p, chunk, MADV_NOHUGEPAGE);
	pthread_barrier_wait(&sh->start);
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (uint64_t off = 0; off < chunk; off += PAGE)
		p[off] = 1;
	sh->cpu_ns[idx] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	pthread_barrier_wait(&sh->done);
	munmap(p, chunk);
}

static void *thread_main(void *arg)
{
	client((int)(intptr_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s SIZE_BYTES CLIENTS threads|processes REPEAT THP(0|1)\n", argv[0]);
		return 2;
	}
	uint64_t size = strtoull(argv[1], NULL, 0);
	int n = atoi(argv[2]);
	int procs = !strcmp(argv[3], "processes");
	int repeat = atoi(argv[4]);
	thp = atoi(argv[5]);
	if (n < 1 || repeat < 1) {
		fprintf(stderr, "CLIENTS and REPEAT must be positive\n");
		return 2;
	}
	chunk = (size / n) & ~(PAGE - 1);
	if (!chunk) {
		fprintf(stderr, "size too small for %d clients\n", n);
		return 2;
	}
	size_t shsize = sizeof(struct shared) + n * sizeof(uint64_t);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap shared");
		return 1;
	}
	pthread_barrierattr_t attr;
	pthread_barrierattr_init(&attr);
	pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_t *tids = calloc(n, sizeof(*tids));
	pid_t *pids = calloc(n, sizeof(*pids));
	for (int r = 0; r < repeat; r++) {
		pthread_barrier_init(&sh->start, &attr, n + 1);
		pthread_barrier_init(&sh->done, &attr, n + 1);
		memset(sh->cpu_ns, 0, n * sizeof(uint64_t));
		for (int i = 0; i < n; i++) {
			if (procs) {
				pids[i] = fork();
				if (pids[i] < 0) {
					perror("fork");
					return 1;
				}
				if (pids[i] == 0) {
					client(i);
					_exit(0);
				}
			} else if (pthread_create(&tids[i], NULL, thread_main, (void *)(intptr_t)i)) {
				perror("pthread_create");
				return 1;
			}
		}
		pthread_barrier_wait(&sh->start);
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
		pthread_barrier_wait(&sh->done);
		uint64_t wall = clock_ns(CLOCK_MONOTONIC) - t0;
		int failed = 0;
		for (int i = 0; i < n; i++) {
			if (procs) {
				int st;
				waitpid(pids[i], &st, 0);
				failed |= !WIFEXITED(st) || WEXITSTATUS(st);
			} else {
				pthread_join(tids[i], NULL);
			}
		}
		if (failed) {
			fprintf(stderr, "a client failed\n");
			return 1;
		}
		uint64_t cpu = 0;
		for (int i = 0; i < n; i++)
			cpu += sh->cpu_ns[i];
		printf("result clients %d repeat %d wall_ns %llu faults %llu cpu_ns %llu\n", n, r,
		       (unsigned long long)wall, (unsigned long long)(chunk / PAGE * n), (unsigned long long)cpu);
		fflush(stdout);
	}
	return 0;
}
