/*
 * pfscale: page-fault scalability in the style of will-it-scale's page_fault1/2/3, one rung of the
 * task ladder per invocation.  TASKS threads (one mm) or processes each loop until told to stop:
 * map MAP_BYTES, write one byte per 4 KiB page, unmap.
 *
 *   case 1: anonymous private mapping               (do_anonymous_page)
 *   case 2: private mapping of a file, written      (do_cow_fault: page cache read + COW copy)
 *   case 3: shared mapping of a file, written       (do_shared_fault + page_mkwrite)
 *
 * Each task has its own file for cases 2 and 3 (created in DIR, unlinked at once so nothing is left
 * behind if the run is killed) and counts its own pages touched.  The parent releases the tasks,
 * lets them run WARMUP_S, then opens and closes the measured window of DURATION_S by bumping an
 * epoch; every task notices at its next page and records its pages touched and its own minor
 * faults (getrusage RUSAGE_THREAD) for that epoch.
 *
 * Pages touched and faults differ: since Linux 6.x finish_fault() can map a whole large page-cache
 * folio on one fault, so a shared file mapping of a filesystem with large folios (ext4 since 6.16)
 * takes fewer faults than pages (measured on 6.18: about 3 pages per fault in case 3).  Both are
 * reported.
 *
 * Usage: pfscale CASE(1|2|3) MODE(threads|processes) TASKS MAP_BYTES WARMUP_S DURATION_S DIR THP(0|1) [SAMPLE_S]
 * Output: result tasks <n> faults <n> pages <n> ns <ns>   (within the measured window)
 *         sample ns <ns> pages <n>   (with SAMPLE_S > 0: one line per SAMPLE_S of the window, the
 *         pages all tasks wrote in it, read from their live counters as will-it-scale's main loop
 *         reads its tasks' counters once a second; the last sample may be shorter)
 *
 * No deadlock when a task fails: there are no barriers; tasks poll shared flags and the parent
 * polls counts, and in process mode reaps children with WNOHANG all the while (a child that ends
 * early makes the parent kill the rest and exit 1).  A failing thread exits the process.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define PAGE 4096UL

/* One cache line per task: only that task writes it. */
struct slot {
	uint64_t pages;
	uint64_t snap_pages[3], snap_faults[3]; /* at epochs 1 and 2 */
	int acked;                              /* last epoch recorded */
	char pad[64 - 7 * sizeof(uint64_t) - sizeof(int)];
};

struct shared {
	int ready, go, stop, epoch;
	char pad[64 - 4 * sizeof(int)];
	struct slot slot[];
};

static struct shared *sh;
static int pcase, thp;
static uint64_t map_bytes;
static const char *dir;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int task_file(int idx)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/pfscale-%d-%d", dir, (int)getpid(), idx);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		fprintf(stderr, "pfscale: open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	unlink(path);
	if (ftruncate(fd, (off_t)map_bytes) < 0) {
		fprintf(stderr, "pfscale: ftruncate %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static uint64_t own_minflt(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) < 0) {
		perror("pfscale: getrusage");
		exit(1);
	}
	return (uint64_t)ru.ru_minflt;
}

/* Record this task's counts for every epoch the parent has started since the last look. */
static void take_snapshots(struct slot *sl, int epoch)
{
	while (sl->acked < epoch && sl->acked < 2) {
		int e = ++sl->acked;
		sl->snap_pages[e] = __atomic_load_n(&sl->pages, __ATOMIC_RELAXED);
		sl->snap_faults[e] = own_minflt();
		__atomic_store_n(&sl->acked, e, __ATOMIC_RELEASE);
	}
}

static void task(int idx)
{
	int fd = pcase == 1 ? -1 : task_file(idx);
	int flags = pcase == 1 ? MAP_PRIVATE | MAP_ANONYMOUS : pcase == 2 ? MAP_PRIVATE : MAP_SHARED;
	struct slot *sl = &sh->slot[idx];

	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		char *p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, flags, fd, 0);
		if (p == MAP_FAILED) {
			fprintf(stderr, "pfscale: task %d: mmap %llu bytes: %s\n", idx,
				(unsigned long long)map_bytes, strerror(errno));
			exit(1);
		}
		/* Base-page faults unless THP is wanted (only anonymous memory gets THPs here). */
		if (pcase == 1 && !thp)
			madvise(p, map_bytes, MADV_NOHUGEPAGE);
		for (uint64_t off = 0; off < map_bytes; off += PAGE) {
			/* The epoch's cache line is read-mostly: a load per page costs next to nothing. */
			int epoch = __atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE);
			if (epoch > sl->acked)
				take_snapshots(sl, epoch);
			p[off] = 1;
			/* Only this task writes its slot: a relaxed store, no locked instruction. */
			__atomic_store_n(&sl->pages, sl->pages + 1, __ATOMIC_RELAXED);
		}
		if (munmap(p, map_bytes) < 0) {
			fprintf(stderr, "pfscale: task %d: munmap: %s\n", idx, strerror(errno));
			exit(1);
		}
	}
	if (fd >= 0)
		close(fd);
}

static void *thread_main(void *arg)
{
	task((int)(intptr_t)arg);
	return NULL;
}

static pid_t *pids;
static int ntasks, procs;

static void kill_all(void)
{
	mmb_kill_tasks(pids, ntasks);
}

/* Process mode: any child that has ended before the parent said stop has failed. */
static void check_children(void)
{
	if (procs)
		mmb_check_tasks(pids, ntasks, "pfscale");
}

static void watch(double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	while (now_ns() < end) {
		check_children();
		sleep_ms(5);
	}
}

/* The pages all tasks have written so far (each slot's live counter, written by its task only). */
static uint64_t live_pages(void)
{
	uint64_t sum = 0;
	for (int i = 0; i < ntasks; i++)
		sum += __atomic_load_n(&sh->slot[i].pages, __ATOMIC_RELAXED);
	return sum;
}

/* Wait until every task has recorded epoch e (process mode: watching for dead children). */
static void wait_acked(int e)
{
	for (int i = 0; i < ntasks; i++)
		while (__atomic_load_n(&sh->slot[i].acked, __ATOMIC_ACQUIRE) < e) {
			check_children();
			sleep_ms(1);
		}
}

int main(int argc, char **argv)
{
	if (argc != 9 && argc != 10)
		mmb_die_usage("usage: pfscale CASE(1|2|3) threads|processes TASKS MAP_BYTES WARMUP_S DURATION_S DIR THP(0|1) [SAMPLE_S]");
	pcase = mmb_int(argv[1], "CASE", 1, 3);
	if (strcmp(argv[2], "processes") && strcmp(argv[2], "threads"))
		mmb_die_usage("MODE: expected threads or processes, got '%s'", argv[2]);
	procs = !strcmp(argv[2], "processes");
	ntasks = mmb_int(argv[3], "TASKS", 1, 4096);
	map_bytes = mmb_u64_range(argv[4], "MAP_BYTES", 1ULL << 44);
	if (map_bytes < PAGE || map_bytes % PAGE)
		mmb_die_usage("MAP_BYTES: %s is not a positive multiple of %lu", argv[4], PAGE);
	double warmup = mmb_double(argv[5], "WARMUP_S", 0);
	double duration = mmb_double(argv[6], "DURATION_S", 0.001);
	dir = argv[7];
	struct stat dst;
	if (stat(dir, &dst) < 0 || !S_ISDIR(dst.st_mode))
		mmb_die_usage("DIR: '%s' is not a directory", dir);
	thp = mmb_int(argv[8], "THP", 0, 1);
	double sample = argc == 10 ? mmb_double(argv[9], "SAMPLE_S", 0) : 0;

	size_t shsize = sizeof(struct shared) + (size_t)ntasks * sizeof(struct slot);
	sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("pfscale: mmap shared");
		return 1;
	}
	pids = mmb_xcalloc(ntasks, sizeof(*pids));
	pthread_t *tids = mmb_xcalloc(ntasks, sizeof(*tids));
	if (procs)
		mmb_fork_tasks(pids, ntasks, task);
	else
		for (int i = 0; i < ntasks; i++)
			mmb_pt(pthread_create(&tids[i], NULL, thread_main, (void *)(intptr_t)i), "pthread_create");
	/* Every task set up (files created) before the clock starts. */
	uint64_t deadline = now_ns() + 60ULL * 1000000000ULL;
	while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < ntasks) {
		check_children();
		if (now_ns() > deadline) {
			fprintf(stderr, "pfscale: tasks not ready after 60 s\n");
			if (procs)
				kill_all();
			return 1;
		}
		sleep_ms(1);
	}
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	watch(warmup);
	uint64_t t0 = now_ns();
	__atomic_store_n(&sh->epoch, 1, __ATOMIC_RELEASE);
	if (sample > 0) {
		uint64_t prev_t = t0, prev_p = live_pages(), end = t0 + (uint64_t)(duration * 1e9);
		while (prev_t < end) {
			double left = (double)(end - prev_t) / 1e9;
			watch(left < sample ? left : sample);
			uint64_t t = now_ns(), pg = live_pages();
			printf("sample ns %llu pages %llu\n", (unsigned long long)(t - prev_t),
			       (unsigned long long)(pg - prev_p));
			prev_t = t;
			prev_p = pg;
		}
	} else {
		watch(duration);
	}
	uint64_t t1 = now_ns();
	__atomic_store_n(&sh->epoch, 2, __ATOMIC_RELEASE);
	wait_acked(2);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < ntasks; i++) {
		if (procs) {
			int failed = mmb_reap(pids[i], i, "after the measurement");
			pids[i] = 0;
			if (failed) {
				kill_all();
				return 1;
			}
		} else {
			mmb_pt(pthread_join(tids[i], NULL), "pthread_join");
		}
	}
	uint64_t pages = 0, faults = 0;
	for (int i = 0; i < ntasks; i++) {
		pages += sh->slot[i].snap_pages[2] - sh->slot[i].snap_pages[1];
		faults += sh->slot[i].snap_faults[2] - sh->slot[i].snap_faults[1];
	}
	printf("result tasks %d faults %llu pages %llu ns %llu\n", ntasks, (unsigned long long)faults,
	       (unsigned long long)pages, (unsigned long long)(t1 - t0));
	free(tids);
	free(pids);
	munmap(sh, shsize);
	return 0;
}
