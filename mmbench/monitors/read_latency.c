/* read-latency: time to read 1 MiB of a 100 MiB file after dropping it from the page cache.
 *
 * usage: read_latency FILE OUT.tsv [file_mb=100] [interval_ms=1500] [read_kb=1024]
 * Creates FILE if it is short, then every interval: posix_fadvise(DONTNEED) the whole file,
 * pread read_kb at the next offset (cycling through the file) and append
 * "<seconds since start>\t<latency ms>\n" to OUT.tsv.  Stops on SIGTERM/SIGINT.  A short read
 * or one cut short by a signal is not a sample (it did not read read_kb): it is skipped.
 * Arguments are parsed strictly (mmbench_util.h): garbage is an error, exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mmbench_util.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s FILE OUT.tsv [file_mb] [interval_ms] [read_kb]\n", argv[0]);
		return 2;
	}
	if (argc > 6) {
		fprintf(stderr, "usage: %s FILE OUT.tsv [file_mb] [interval_ms] [read_kb]\n", argv[0]);
		return 2;
	}
	long file_mb = argc > 3 ? mmb_long(argv[3], "file_mb", 1, 1L << 20) : 100;
	long interval_ms = argc > 4 ? mmb_long(argv[4], "interval_ms", 1, 86400000L) : 1500;
	long read_kb = argc > 5 ? mmb_long(argv[5], "read_kb", 4, 1L << 20) : 1024;
	if ((off_t)read_kb << 10 > (off_t)file_mb << 20) {
		fprintf(stderr, "%s: read_kb %ld is larger than the file (%ld MiB)\n", argv[0], read_kb, file_mb);
		return 2;
	}
	off_t size = (off_t)file_mb << 20;
	size_t chunk = (size_t)read_kb << 10;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0) { perror(argv[1]); return 1; }
	char *buf = mmb_xmalloc(chunk);
	memset(buf, 0x5a, chunk);
	if (lseek(fd, 0, SEEK_END) < size) {
		for (off_t off = 0; off < size; off += chunk)
			if (pwrite(fd, buf, chunk, off) != (ssize_t)chunk) { perror("pwrite"); return 1; }
		fdatasync(fd);
	}
	FILE *out = fopen(argv[2], "w");
	if (!out) { perror(argv[2]); return 1; }
	fprintf(out, "time\tlatency_ms\n");
	fflush(out);
	double t0 = now();
	off_t off = 0;
	while (!stop) {
		posix_fadvise(fd, 0, size, POSIX_FADV_DONTNEED);
		double a = now();
		ssize_t got = pread(fd, buf, chunk, off);
		double b = now();
		if (got < 0 && errno != EINTR) { perror("pread"); return 1; }
		if (got == (ssize_t)chunk) { /* short or interrupted reads are not samples */
			fprintf(out, "%.3f\t%.4f\n", a - t0, (b - a) * 1e3);
			fflush(out);
		}
		off += chunk;
		if (off + (off_t)chunk > size)
			off = 0;
		struct timespec ts = { interval_ms / 1000, (interval_ms % 1000) * 1000000L };
		while (!stop && nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	fclose(out);
	return 0;
}
