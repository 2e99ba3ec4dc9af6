/*
 * mmbench_util.h: helpers shared by the C workload programs (header-only, static functions).
 *
 * now_ns()            CLOCK_MONOTONIC in nanoseconds: every timed region uses it.
 * map_aligned()       anonymous mapping aligned to the THP size (a THP needs the alignment).
 * unit_is_huge()      is the page at addr part of a THP: /proc/self/pagemap + /proc/kpageflags
 *                     (KPF_THP); 1, 0, or -1 when unknowable (no CAP_SYS_ADMIN hides PFNs).
 * slurp()             a whole /proc file in one growing buffer: never a fixed-size buffer
 *                     (MMTests' thpavail read /proc/vmstat into 4 KiB, which modern kernels overflow).
 * vmstat_field()      one counter from /proc/vmstat text, -1 when the kernel lacks it.
 * smaps_anon_huge_kb() AnonHugePages of the mapping containing addr, from /proc/self/smaps.
 * mmb_u64/mmb_long/mmb_int/mmb_double()  strict argument parsing: the whole string must be a
 *                     number in range, else "PROG: NAME: ..." on stderr and exit 2 (garbage is
 *                     an error, never 0).
 * mmb_xmalloc/mmb_xcalloc/mmb_xrealloc()  allocation that exits 1 with a message when it fails.
 * mmb_pt()            check a pthread_* return value (they return the error, not -1/errno).
 * mmb_fork_tasks/mmb_kill_tasks/mmb_check_tasks/mmb_reap()  a program's child tasks: started,
 *                     killed, checked for an early end, reaped.
 *
 * the C builder (mmbench/cbuild) hashes this header with each program, so an edit here rebuilds them all.
 */
#ifndef MMBENCH_UTIL_H
#define MMBENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>

/*
 * Kernel geometry, read from the running kernel (never assumed): the base page size and the
 * PMD-sized THP ("unit"), hpage_pmd_size since 4.17, else 2 MiB (x86-64 and arm64 with 4 KiB
 * pages).  The C side of mmbench/model/kernel.py.
 */
static uint64_t mmb_page_size(void)
{
	static uint64_t ps;
	if (!ps) {
		long v = sysconf(_SC_PAGESIZE);
		ps = v > 0 ? (uint64_t)v : 4096;
	}
	return ps;
}

static uint64_t mmb_thp_size(void)
{
	static uint64_t sz;
	if (!sz) {
		unsigned long long v = 0;
		FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
		if (f) {
			if (fscanf(f, "%llu", &v) != 1)
				v = 0;
			fclose(f);
		}
		sz = v ? v : 2UL << 20;
	}
	return sz;
}

#define MMB_PAGE mmb_page_size()
#define MMB_UNIT mmb_thp_size()

/*
 * Kernel ABI constants the C library headers may lack, with the kernel that added them (the C
 * side of mmbench/model/quirks.py).
 */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1: include/uapi/asm-generic/mman-common.h */
#endif
#define MMB_KPF_THP 22 /* /proc/kpageflags THP bit, Linux 2.6.31: include/uapi/linux/kernel-page-flags.h */

extern const char *__progname; /* glibc: the program's name, for messages */

/* Wait for child ``pid`` (retrying on EINTR); 0 when it exited 0, else 1 with a message naming
 * task ``i`` and ``when`` it failed.  The caller kills the other tasks. */
static inline int mmb_reap(pid_t pid, int i, const char *when)
{
	int st;
	pid_t got;
	while ((got = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (got < 0) {
		fprintf(stderr, "%s: waitpid: %s\n", __progname, strerror(errno));
		return 1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "%s: task %d failed %s\n", __progname, i, when);
		return 1;
	}
	return 0;
}

/* Kill and reap every task of pids[0..n) still there (0: already reaped). */
static inline void mmb_kill_tasks(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

/* Fork n tasks, task i running fn(i) and then exiting 0; their pids in pids[0..n).  A fork that
 * fails is a message, the tasks already started are killed, and the program exits 1. */
static inline void mmb_fork_tasks(pid_t *pids, int n, void (*fn)(int))
{
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "%s: fork: %s\n", __progname, strerror(errno));
			mmb_kill_tasks(pids, i);
			exit(1);
		}
		if (pid == 0) {
			fn(i);
			_exit(0);
		}
		pids[i] = pid;
	}
}

/* Before the parent says stop, a task that has ended has failed: say how (``who`` names the
 * program), kill the others and exit 1.  Returns while every task is alive. */
static inline void mmb_check_tasks(pid_t *pids, int n, const char *who)
{
	int st;
	pid_t pid = waitpid(-1, &st, WNOHANG);
	if (pid <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			pids[i] = 0;
	if (WIFSIGNALED(st))
		fprintf(stderr, "%s: a task was killed by signal %d%s\n", who, WTERMSIG(st),
			WTERMSIG(st) == SIGKILL ? " (OOM killer?)" : "");
	else
		fprintf(stderr, "%s: a task exited early with status %d\n", who, WEXITSTATUS(st));
	mmb_kill_tasks(pids, n);
	exit(1);
}

__attribute__((noreturn, format(printf, 1, 2))) static inline void mmb_die_usage(const char *fmt, ...);

static inline void mmb_die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", __progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

/* A whole non-negative number (decimal, or 0x hex), at most max; name says which argument. */
static inline unsigned long long mmb_u64_range(const char *s, const char *name, unsigned long long max)
{
	char *end;
	if (!s || !*s)
		mmb_die_usage("%s: expected a whole number, got an empty string", name);
	const char *p = s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-' || *p == '+')
		mmb_die_usage("%s: expected a whole number without a sign, got '%s'", name, s);
	errno = 0;
	unsigned long long v = strtoull(p, &end, 0);
	if (end == p || *end)
		mmb_die_usage("%s: expected a whole number, got '%s'", name, s);
	if (errno == ERANGE || v > max)
		mmb_die_usage("%s: %s is out of range (at most %llu)", name, s, max);
	return v;
}

static inline uint64_t mmb_u64(const char *s, const char *name)
{
	return mmb_u64_range(s, name, ULLONG_MAX);
}

/* A whole number in [min, max], sign allowed. */
static inline long mmb_long(const char *s, const char *name, long min, long max)
{
	char *end;
	if (!s || !*s)
		mmb_die_usage("%s: expected a whole number, got an empty string", name);
	errno = 0;
	long v = strtol(s, &end, 0);
	if (end == s || *end)
		mmb_die_usage("%s: expected a whole number, got '%s'", name, s);
	if (errno == ERANGE || v < min || v > max)
		mmb_die_usage("%s: %s is out of range (%ld to %ld)", name, s, min, max);
	return v;
}

static inline int mmb_int(const char *s, const char *name, int min, int max)
{
	return (int)mmb_long(s, name, min, max);
}

/* A finite number >= min (seconds, ratios). */
static inline double mmb_double(const char *s, const char *name, double min)
{
	char *end;
	if (!s || !*s)
		mmb_die_usage("%s: expected a number, got an empty string", name);
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end)
		mmb_die_usage("%s: expected a number, got '%s'", name, s);
	if (errno == ERANGE || !isfinite(v) || v < min)
		mmb_die_usage("%s: %s is out of range (a finite number >= %g)", name, s, min);
	return v;
}

static inline void *mmb_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "%s: out of memory allocating %zu bytes\n", __progname, n);
		exit(1);
	}
	return p;
}

static inline void *mmb_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "%s: out of memory allocating %zu x %zu bytes\n", __progname, n, size);
		exit(1);
	}
	return p;
}

static inline void *mmb_xrealloc(void *old, size_t n)
{
	void *p = realloc(old, n ? n : 1);
	if (!p) {
		fprintf(stderr, "%s: out of memory growing a buffer to %zu bytes\n", __progname, n);
		free(old);
		exit(1);
	}
	return p;
}

/* pthread_* calls return the error number: any failure is fatal, with what failed. */
static inline void mmb_pt(int rc, const char *what)
{
	if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
		fprintf(stderr, "%s: %s: %s\n", __progname, what, strerror(rc));
		exit(1);
	}
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline char *map_aligned(uint64_t size)
{
	/* Over-allocate by one unit so the region can start on a 2 MiB boundary. */
	char *raw = mmap(NULL, size + MMB_UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	return (char *)(((uintptr_t)raw + MMB_UNIT - 1) & ~(MMB_UNIT - 1));
}

static inline int unit_is_huge(int pagemap, int kpageflags, uintptr_t addr)
{
	uint64_t entry, flags;
	if (pagemap < 0 || kpageflags < 0 || pread(pagemap, &entry, 8, (addr / MMB_PAGE) * 8) != 8)
		return -1;
	if (!(entry & (1ULL << 63)))
		return 0;
	uint64_t pfn = entry & ((1ULL << 55) - 1);
	if (!pfn || pread(kpageflags, &flags, 8, pfn * 8) != 8)
		return -1;
	return (flags >> MMB_KPF_THP) & 1;
}

static inline char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 16384, len = 0;
	char *buf = mmb_xmalloc(cap);
	for (;;) {
		if (len + 1 >= cap) {
			cap *= 2;
			buf = mmb_xrealloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

static inline long long vmstat_field(const char *text, const char *name)
{
	size_t nl = strlen(name);
	const char *p = text;
	while (p && *p) {
		if (!strncmp(p, name, nl) && p[nl] == ' ')
			return atoll(p + nl + 1);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

static inline long smaps_anon_huge_kb(uintptr_t addr)
{
	char *text = slurp("/proc/self/smaps");
	long kb = -1;
	int in = 0;
	if (!text)
		return -1;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long lo, hi;
		char *dash = strchr(line, '-'), *sp = strchr(line, ' ');
		if (dash && sp && dash < sp && sscanf(line, "%lx-%lx", &lo, &hi) == 2) {
			in = addr >= lo && addr < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	free(text);
	return kb;
}

#endif
