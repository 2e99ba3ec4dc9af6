/*
 * bgload: background memory/IO load used by several workloads (thpavail, thpfault, highalloc,
 * stutter).  Run inside the sandbox, so all page cache and anon memory it creates is charged
 * to the sandbox's memory cgroup.
 *
 *   bgload mkfile PATH BYTES          write BYTES of incompressible data (not sparse)
 *   bgload read PATH                  stream PATH to nowhere, from the start again at EOF, forever
 *   bgload write DIR BYTES SYNC       write zeros into DIR/bgload-zeros (up to BYTES or ENOSPC),
 *                                     fdatasync every SYNC bytes (0: never), unlink, repeat forever
 *   bgload copy SRC DST               copy SRC to DST, unlink DST, repeat forever
 *   bgload hog BYTES PAUSE_MS         fault in BYTES of anon memory, print "ready", then keep
 *                                     rewriting one word per page, pausing PAUSE_MS between passes
 *   bgload mkfiles DIR N SIZE         create N files of SIZE bytes of incompressible data
 *   bgload randread DIR N PASSES      read the N files in random order PASSES times, print "done"
 *
 * Sizes are 64-bit throughout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

#define CHUNK (1UL << 20)

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill_random(char *buf, size_t len)
{
	uint64_t *w = (uint64_t *)buf;
	for (size_t i = 0; i < len / 8; i++)
		w[i] = xorshift();
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

static int mkfile(const char *path, uint64_t bytes, char *buf, size_t chunk)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	uint64_t done = 0, synced = 0;
	while (done < bytes) {
		size_t len = bytes - done < chunk ? bytes - done : chunk;
		fill_random(buf, len);
		if (write_all(fd, buf, len) < 0) {
			perror("write");
			close(fd);
			return 1;
		}
		done += len;
		/* start writeback as we go: keeps dirty pages from piling up in the memcg */
		if (done - synced >= (64UL << 20)) {
			sync_file_range(fd, synced, done - synced, SYNC_FILE_RANGE_WRITE);
			synced = done;
		}
	}
	fdatasync(fd);
	close(fd);
	return 0;
}

static int stream_read(const char *path, char *buf)
{
	for (;;) {
		int fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		ssize_t n;
		while ((n = read(fd, buf, CHUNK)) > 0)
			;
		close(fd);
		if (n < 0) {
			perror("read");
			return 1;
		}
	}
}

static int stream_write(const char *dir, uint64_t bytes, uint64_t sync_every, char *buf)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/bgload-zeros", dir);
	memset(buf, 0, CHUNK);
	for (;;) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		uint64_t done = 0, since = 0;
		while (done < bytes) {
			if (write_all(fd, buf, CHUNK) < 0) {
				if (errno == ENOSPC)
					break;
				perror("write");
				return 1;
			}
			done += CHUNK;
			since += CHUNK;
			if (sync_every && since >= sync_every) {
				fdatasync(fd);
				since = 0;
			}
		}
		close(fd);
		unlink(path);
	}
}

static int copy_loop(const char *src, const char *dst, char *buf)
{
	for (;;) {
		int in = open(src, O_RDONLY);
		int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0) {
			perror("open");
			return 1;
		}
		ssize_t n;
		while ((n = read(in, buf, CHUNK)) > 0)
			if (write_all(out, buf, n) < 0) {
				perror("write");
				return 1;
			}
		close(in);
		close(out);
		unlink(dst);
	}
}

static int hog(uint64_t bytes, long pause_ms)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (uint64_t off = 0; off < bytes; off += MMB_PAGE)
		*(uint64_t *)(p + off) = xorshift();
	printf("ready\n");
	fflush(stdout);
	struct timespec ts = { pause_ms / 1000, (pause_ms % 1000) * 1000000L };
	for (uint64_t pass = 1;; pass++) {
		for (uint64_t off = 0; off < bytes; off += MMB_PAGE)
			*(uint64_t *)(p + off) += pass;
		if (pause_ms > 0)
			nanosleep(&ts, NULL);
	}
}

static int mkfiles(const char *dir, long n, uint64_t size, char *buf)
{
	char path[4096];
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%06ld", dir, i);
		if (mkfile(path, size, buf, CHUNK))
			return 1;
	}
	return 0;
}

static int randread(const char *dir, long n, long passes, char *buf)
{
	char path[4096];
	long *order = mmb_xcalloc((size_t)n, sizeof(*order));
	for (long i = 0; i < n; i++)
		order[i] = i;
	for (long pass = 0; pass < passes; pass++) {
		for (long i = n - 1; i > 0; i--) {
			long j = xorshift() % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/f%06ld", dir, order[i]);
			int fd = open(path, O_RDONLY);
			if (fd < 0) {
				perror(path);
				free(order);
				return 1;
			}
			while (read(fd, buf, CHUNK) > 0)
				;
			close(fd);
		}
	}
	free(order);
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: see the comment at the top of bgload.c\n");
		return 2;
	}
	rng ^= (uint64_t)getpid() << 20;
	char *buf = mmb_xmalloc(CHUNK);
	const char *mode = argv[1];
	if (!strcmp(mode, "mkfile") && argc == 4)
		return mkfile(argv[2], mmb_u64(argv[3], "BYTES"), buf, CHUNK);
	if (!strcmp(mode, "read") && argc == 3)
		return stream_read(argv[2], buf);
	if (!strcmp(mode, "write") && argc == 5)
		return stream_write(argv[2], mmb_u64(argv[3], "BPS"), mmb_u64(argv[4], "SYNC_EVERY"), buf);
	if (!strcmp(mode, "copy") && argc == 4)
		return copy_loop(argv[2], argv[3], buf);
	if (!strcmp(mode, "hog") && argc == 4)
		return hog(mmb_u64(argv[2], "BYTES"), mmb_long(argv[3], "PAUSE_MS", 0, LONG_MAX));
	if (!strcmp(mode, "mkfiles") && argc == 5)
		return mkfiles(argv[2], mmb_long(argv[3], "N", 0, 999999), mmb_u64(argv[4], "BYTES"), buf);
	if (!strcmp(mode, "randread") && argc == 5)
		return randread(argv[2], mmb_long(argv[3], "N", 1, 999999), mmb_long(argv[4], "PASSES", 0, LONG_MAX), buf);
	fprintf(stderr, "bgload: bad arguments for mode %s\n", mode);
	return 2;
}
