/*
 * vmscale: cases in the style of the vm-scalability suite, one case per invocation, TASKS
 * processes each doing BYTES/TASKS at the same time.
 *
 *   anon-w-seq          write every byte of an anonymous mapping in address order
 *   anon-w-rand         write every page of an anonymous mapping once, in a random page order
 *   anon-lru            write an anonymous mapping twice in order: sized above the memcg limit it
 *                       is reclaimed (swapped) and refaulted (needs swap, else the OOM killer)
 *   lru-file-mmap-read  read one word per page of MAP_SHARED mappings of sparse files
 *   lru-file-readonce   read(2) sparse files once, 1 MiB at a time
 *
 * The file cases use sparse files (created in DIR and unlinked at once): reading a hole still
 * allocates and charges a page-cache page, so sized above the memcg limit they reclaim clean
 * page cache without waiting for the disk, as vm-scalability's sparse-file cases do.
 *
 * Usage: vmscale CASE TASKS BYTES DIR MEMORY_STAT|/proc/vmstat|-
 * Output: result bytes <n> ns <ns> pgscan <n> pgsteal <n> pgpgout <n>
 *         tasks <ns of task 0> <ns of task 1> ...
 * ns: from releasing the tasks until the last is done (setup and teardown outside it); a task's
 * ns: from its seeing the release until its own work is done (vm-scalability sums the rates
 * each task measures on its own);
 * pgscan/pgsteal (cgroup v2) and pgpgout (v1) are MEMORY_STAT deltas over the same window, taken
 * while every task still holds its memory; -1 where the file lacks the field (or MEMORY_STAT is -).
 * With /proc/vmstat (whole-machine mode) pgscan/pgsteal are the machine's, summed over kswapd,
 * direct reclaim and khugepaged, and pgpgout is -1.
 *
 * No barriers: the parent polls counters in shared memory and reaps children with WNOHANG, so a
 * task that fails (mmap failed, OOM-killed) makes the parent kill the rest and exit 1.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define PAGE 4096UL
#define READ_CHUNK (1UL << 20)

enum vcase { ANON_W_SEQ, ANON_W_RAND, ANON_LRU, FILE_MMAP_READ, FILE_READONCE };
static const char *const case_names[] = { "anon-w-seq", "anon-w-rand", "anon-lru", "lru-file-mmap-read",
					  "lru-file-readonce" };

#define MAX_TASKS 4096

struct shared {
	int ready, go, done, leave;
	uint64_t sink;
	uint64_t task_ns[MAX_TASKS];
};

static struct shared *sh;
static int my_idx;          /* in a task: its index */
static uint64_t my_start;   /* in a task: when it saw the release */
static enum vcase vc;
static uint64_t share;
static const char *dir;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void fail(int idx, const char *what)
{
	fprintf(stderr, "vmscale: task %d: %s: %s\n", idx, what, strerror(errno));
	exit(1);
}

static int sparse_file(int idx)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/vmscale-%d-%d", dir, (int)getpid(), idx);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		fail(idx, "open");
	unlink(path);
	if (ftruncate(fd, (off_t)share) < 0)
		fail(idx, "ftruncate");
	return fd;
}

/* xorshift64: a cheap per-task generator for the random page order. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Setup is done: report ready and wait for the parent's go (the clock starts at go). */
static void start_gate(void)
{
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	my_start = now_ns();
}

/* Work done: hold the memory until the parent has read memory.stat (exit frees would otherwise
 * count as v1 pgpgout inside the window). */
static void end_gate(uint64_t sink)
{
	sh->task_ns[my_idx] = now_ns() - my_start;
	__atomic_add_fetch(&sh->sink, sink, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sh->done, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&sh->leave, __ATOMIC_ACQUIRE))
		sleep_ms(1);
}

static char *map_anon(int idx)
{
	char *p = mmap(NULL, share, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail(idx, "mmap anon");
	return p;
}

static void anon_write(int idx, int passes)
{
	char *p = map_anon(idx);
	start_gate();
	/* A distinct value per pass, so a later pass really rewrites every page. */
	for (int pass = 1; pass <= passes; pass++)
		memset(p, idx + pass, share);
	end_gate(0);
	munmap(p, share);
}

static void anon_write_rand(int idx)
{
	uint64_t npages = share / PAGE;
	char *p = map_anon(idx);
	/* The permutation (Fisher-Yates) is made before the clock starts. */
	uint32_t *order = mmb_xcalloc(npages, sizeof(*order));
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)idx << 32 | (uint64_t)idx);
	for (uint64_t i = 0; i < npages; i++)
		order[i] = (uint32_t)i;
	for (uint64_t i = npages - 1; i > 0; i--) {
		uint64_t j = next_rand(&seed) % (i + 1);
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	start_gate();
	for (uint64_t i = 0; i < npages; i++)
		memset(p + (uint64_t)order[i] * PAGE, idx + 1, PAGE);
	end_gate(0);
	free(order);
	munmap(p, share);
}

static void file_mmap_read(int idx)
{
	int fd = sparse_file(idx);
	char *p = mmap(NULL, share, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fail(idx, "mmap file");
	uint64_t sink = 0;
	start_gate();
	for (uint64_t off = 0; off < share; off += PAGE)
		sink += *(volatile uint64_t *)(p + off);
	end_gate(sink);
	munmap(p, share);
	close(fd);
}

static void file_readonce(int idx)
{
	int fd = sparse_file(idx);
	char *buf = mmb_xmalloc(READ_CHUNK);
	uint64_t sink = 0;
	start_gate();
	for (uint64_t off = 0; off < share;) {
		ssize_t n = pread(fd, buf, READ_CHUNK, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail(idx, "pread");
		sink += (uint8_t)buf[0];
		off += (uint64_t)n;
	}
	end_gate(sink);
	free(buf);
	close(fd);
}

static void task(int idx)
{
	my_idx = idx;
	switch (vc) {
	case ANON_W_SEQ:
		anon_write(idx, 1);
		break;
	case ANON_LRU:
		anon_write(idx, 2);
		break;
	case ANON_W_RAND:
		anon_write_rand(idx);
		break;
	case FILE_MMAP_READ:
		file_mmap_read(idx);
		break;
	case FILE_READONCE:
		file_readonce(idx);
		break;
	}
}

static pid_t *pids;
static int ntasks;

static void kill_all(void)
{
	mmb_kill_tasks(pids, ntasks);
}

/* Before the parent says leave, a child that has ended has failed. */
static void check_children(void)
{
	mmb_check_tasks(pids, ntasks, "vmscale");
}

static void wait_count(int *counter)
{
	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < ntasks) {
		check_children();
		sleep_ms(1);
	}
}

static void read_stat(const char *path, long long v[3])
{
	v[0] = v[1] = v[2] = -1;
	if (!strcmp(path, "-"))
		return;
	char *text = slurp(path);
	if (!text) {
		fprintf(stderr, "vmscale: cannot read %s: %s\n", path, strerror(errno));
		exit(1);
	}
	if (!strcmp(path, "/proc/vmstat")) {
		/* Whole-machine mode: the kernel's counters are per reclaimer (pgsteal_khugepaged split
		 * from _direct in 6.3, absent before: -1, not added); its pgpgout counts KiB written
		 * to block devices, not folios uncharged, so it is not reported. */
		v[0] = v[1] = 0;
		const char *who[] = { "kswapd", "direct", "khugepaged" };
		for (int i = 0; i < 3; i++) {
			char name[32];
			long long n;
			snprintf(name, sizeof(name), "pgscan_%s", who[i]);
			if ((n = vmstat_field(text, name)) > 0)
				v[0] += n;
			snprintf(name, sizeof(name), "pgsteal_%s", who[i]);
			if ((n = vmstat_field(text, name)) > 0)
				v[1] += n;
		}
		free(text);
		return;
	}
	v[0] = vmstat_field(text, "pgscan");
	v[1] = vmstat_field(text, "pgsteal");
	v[2] = vmstat_field(text, "pgpgout");
	free(text);
}

int main(int argc, char **argv)
{
	if (argc != 6)
		mmb_die_usage("usage: vmscale CASE TASKS BYTES DIR MEMORY_STAT|-");
	int found = -1;
	for (int i = 0; i < (int)(sizeof(case_names) / sizeof(case_names[0])); i++)
		if (!strcmp(argv[1], case_names[i]))
			found = i;
	if (found < 0)
		mmb_die_usage("CASE: unknown case '%s' (anon-w-seq, anon-w-rand, anon-lru, lru-file-mmap-read, "
			      "lru-file-readonce)", argv[1]);
	vc = (enum vcase)found;
	ntasks = mmb_int(argv[2], "TASKS", 1, MAX_TASKS);
	uint64_t bytes = mmb_u64_range(argv[3], "BYTES", 1ULL << 46);
	share = bytes / (uint64_t)ntasks / PAGE * PAGE;
	if (!share)
		mmb_die_usage("BYTES: %s is less than a page per task", argv[3]);
	if (share / PAGE > UINT32_MAX)
		mmb_die_usage("BYTES: %s is too large per task", argv[3]);
	dir = argv[4];
	struct stat dst;
	if (stat(dir, &dst) < 0 || !S_ISDIR(dst.st_mode))
		mmb_die_usage("DIR: '%s' is not a directory", dir);
	const char *statpath = argv[5];
	if (strcmp(statpath, "-") && access(statpath, R_OK) < 0)
		mmb_die_usage("MEMORY_STAT: cannot read '%s'", statpath);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("vmscale: mmap shared");
		return 1;
	}
	pids = mmb_xcalloc(ntasks, sizeof(*pids));
	mmb_fork_tasks(pids, ntasks, task);
	wait_count(&sh->ready);
	long long s0[3], s1[3];
	read_stat(statpath, s0);
	uint64_t t0 = now_ns();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	wait_count(&sh->done);
	uint64_t t1 = now_ns();
	read_stat(statpath, s1);
	__atomic_store_n(&sh->leave, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < ntasks; i++) {
		int failed = mmb_reap(pids[i], i, "while cleaning up");
		pids[i] = 0;
		if (failed) {
			kill_all();
			return 1;
		}
	}
	long long d[3];
	for (int i = 0; i < 3; i++)
		d[i] = s0[i] < 0 || s1[i] < 0 ? -1 : s1[i] - s0[i];
	printf("result bytes %llu ns %llu pgscan %lld pgsteal %lld pgpgout %lld\n",
	       (unsigned long long)(share * (uint64_t)ntasks * (vc == ANON_LRU ? 2 : 1)),
	       (unsigned long long)(t1 - t0), d[0], d[1], d[2]);
	printf("tasks");
	for (int i = 0; i < ntasks; i++)
		printf(" %llu", (unsigned long long)sh->task_ns[i]);
	printf("\n");
	free(pids);
	return 0;
}
