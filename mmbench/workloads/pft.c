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
 *
 * Process mode cannot hang when a client fails: the parent never blocks on the shared barriers
 * itself; a helper thread does, while the parent reaps children.  A child that exits before the
 * clients are done (mmap failed, OOM-killed) makes the parent kill the others and exit 1.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define PAGE MMB_PAGE

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
	mmb_pt(pthread_barrier_wait(&sh->start), "pthread_barrier_wait");
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (uint64_t off = 0; off < chunk; off += PAGE)
		p[off] = 1;
	sh->cpu_ns[idx] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	mmb_pt(pthread_barrier_wait(&sh->done), "pthread_barrier_wait");
	munmap(p, chunk);
}

static void *thread_main(void *arg)
{
	client((int)(intptr_t)arg);
	return NULL;
}

/* The parent's side of one repeat in process mode: a helper thread waits on the two barriers
 * and times the repeat; the parent meanwhile reaps children.  A child that ends before the
 * helper has passed the "done" barrier failed (it never reaches the barrier the others wait on):
 * the others are killed and the helper, stuck on the barrier, goes with the process. */
struct timer {
	uint64_t wall;
	int finished;
};

static void *timer_main(void *arg)
{
	struct timer *t = arg;
	mmb_pt(pthread_barrier_wait(&sh->start), "pthread_barrier_wait");
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	mmb_pt(pthread_barrier_wait(&sh->done), "pthread_barrier_wait");
	t->wall = clock_ns(CLOCK_MONOTONIC) - t0;
	__atomic_store_n(&t->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t timed_wait_processes(pid_t *pids, int n, int *failed)
{
	struct timer t = { 0, 0 };
	pthread_t th;
	mmb_pt(pthread_create(&th, NULL, timer_main, &t), "pthread_create");
	int left = n;
	while (left > 0) {
		int st;
		pid_t pid = waitpid(-1, &st, __atomic_load_n(&t.finished, __ATOMIC_ACQUIRE) ? 0 : WNOHANG);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			perror("waitpid");
			exit(1);
		}
		if (pid == 0) { /* nothing ended yet: look again in 1 ms */
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		int idx = -1;
		for (int i = 0; i < n; i++)
			if (pids[i] == pid)
				idx = i;
		if (idx < 0)
			continue;
		pids[idx] = 0;
		left--;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue; /* only a client past the "done" barrier exits 0 */
		if (WIFSIGNALED(st))
			fprintf(stderr, "pft: client %d was killed by signal %d\n", idx, WTERMSIG(st));
		else
			fprintf(stderr, "pft: client %d exited with status %d\n", idx, WEXITSTATUS(st));
		mmb_kill_tasks(pids, n);
		*failed = 1;
		exit(1);
	}
	mmb_pt(pthread_join(th, NULL), "pthread_join");
	return t.wall;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s SIZE_BYTES CLIENTS threads|processes REPEAT THP(0|1)\n", argv[0]);
		return 2;
	}
	uint64_t size = mmb_u64_range(argv[1], "SIZE_BYTES", 1ULL << 50);
	int n = mmb_int(argv[2], "CLIENTS", 1, 4096);
	if (strcmp(argv[3], "processes") && strcmp(argv[3], "threads"))
		mmb_die_usage("MODE: expected threads or processes, got '%s'", argv[3]);
	int procs = !strcmp(argv[3], "processes");
	int repeat = mmb_int(argv[4], "REPEAT", 1, 1000000);
	thp = mmb_int(argv[5], "THP", 0, 1);
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
	mmb_pt(pthread_barrierattr_init(&attr), "pthread_barrierattr_init");
	mmb_pt(pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), "pthread_barrierattr_setpshared");
	pthread_t *tids = mmb_xcalloc(n, sizeof(*tids));
	pid_t *pids = mmb_xcalloc(n, sizeof(*pids));
	for (int r = 0; r < repeat; r++) {
		mmb_pt(pthread_barrier_init(&sh->start, &attr, n + 1), "pthread_barrier_init");
		mmb_pt(pthread_barrier_init(&sh->done, &attr, n + 1), "pthread_barrier_init");
		memset(sh->cpu_ns, 0, n * sizeof(uint64_t));
		if (procs)
			mmb_fork_tasks(pids, n, client);
		else
			for (int i = 0; i < n; i++)
				mmb_pt(pthread_create(&tids[i], NULL, thread_main, (void *)(intptr_t)i), "pthread_create");
		uint64_t wall;
		int failed = 0;
		if (procs) {
			wall = timed_wait_processes(pids, n, &failed);
		} else {
			mmb_pt(pthread_barrier_wait(&sh->start), "pthread_barrier_wait");
			uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
			mmb_pt(pthread_barrier_wait(&sh->done), "pthread_barrier_wait");
			wall = clock_ns(CLOCK_MONOTONIC) - t0;
			for (int i = 0; i < n; i++)
				mmb_pt(pthread_join(tids[i], NULL), "pthread_join");
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
		pthread_barrier_destroy(&sh->start);
		pthread_barrier_destroy(&sh->done);
	}
	free(tids);
	free(pids);
	return 0;
}
