/*
 * allocfree: the page allocator's per-page cost, measured from user space in batches.
 *
 * Usage: allocfree -m MODE -b BATCH_PAGES -T SECONDS -r ROUNDS
 *
 * Modes (each a loop of batches of BATCH_PAGES pages; timed with CLOCK_MONOTONIC):
 *   pipe  order-0 allocation and free with almost nothing else: a packet-mode pipe
 *         (pipe2(O_DIRECT)) sized to BATCH_PAGES buffers is filled with 1-byte writes, each of
 *         which allocates a page of its own (pipe_write: alloc_page(GFP_HIGHUSER | __GFP_ACCOUNT),
 *         no zeroing; packets are never merged), then drained with 1-byte reads, each of which
 *         frees its page (anon_pipe_buf_release; one page per batch is kept as the pipe's
 *         tmp_page and reused).  Per page: two short syscalls, one allocation, one free.
 *   anon  order-0 anonymous pages: mmap BATCH_PAGES, MADV_NOHUGEPAGE, MADV_POPULATE_WRITE
 *         (Linux 5.14; every page allocated, zeroed, charged and mapped, without a fault
 *         exception per page), munmap (every page freed).  The zeroing is part of the cost.
 *
 * For ROUNDS rounds of SECONDS/ROUNDS each it prints
 *   round <n> mode <mode> pages <pages> seconds <s> ns_per_page <x>
 * and at the end "done rounds <n>".  Errors go to stderr with exit status 1 (2: usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mmbench_util.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14: include/uapi/asm-generic/mman-common.h */
#endif

static long pagesize;

/* One batch through a packet-mode pipe: BATCH page allocations, then BATCH frees. */
static void pipe_batch(int fd[2], long batch)
{
	char c = 1;
	for (long i = 0; i < batch; i++)
		if (write(fd[1], &c, 1) != 1) {
			perror("allocfree: pipe write");
			exit(1);
		}
	for (long i = 0; i < batch; i++)
		if (read(fd[0], &c, 1) != 1) {
			perror("allocfree: pipe read");
			exit(1);
		}
}

static int populate_works = 1;

static void anon_batch(long batch)
{
	size_t len = (size_t)batch * (size_t)pagesize;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("allocfree: mmap");
		exit(1);
	}
	madvise(p, len, MADV_NOHUGEPAGE);
	if (populate_works && madvise(p, len, MADV_POPULATE_WRITE) != 0) {
		if (errno != EINVAL) {
			perror("allocfree: madvise(MADV_POPULATE_WRITE)");
			exit(1);
		}
		populate_works = 0; /* before Linux 5.14: fault every page instead */
		fprintf(stderr, "allocfree: no MADV_POPULATE_WRITE (kernel before 5.14): faulting each page\n");
	}
	if (!populate_works)
		for (size_t off = 0; off < len; off += (size_t)pagesize)
			p[off] = 1;
	if (munmap(p, len) != 0) {
		perror("allocfree: munmap");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *mode = NULL;
	long batch = 256;
	double seconds = 10;
	int rounds = 10, c;
	pagesize = sysconf(_SC_PAGESIZE);
	while ((c = getopt(argc, argv, "m:b:T:r:")) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 'b': batch = mmb_long(optarg, "-b", 1, 1L << 24); break;
		case 'T': seconds = mmb_double(optarg, "-T", 0.001); break;
		case 'r': rounds = mmb_int(optarg, "-r", 1, 100000); break;
		default:
			fprintf(stderr, "usage: see the comment at the top of allocfree.c\n");
			return 2;
		}
	}
	if (!mode || (strcmp(mode, "pipe") && strcmp(mode, "anon"))) {
		fprintf(stderr, "allocfree: -m pipe or -m anon\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int fd[2] = { -1, -1 };
	if (!strcmp(mode, "pipe")) {
		if (pipe2(fd, O_DIRECT) != 0) {
			perror("allocfree: pipe2(O_DIRECT)");
			return 1;
		}
		/* the pipe must hold a whole batch of one-page packets */
		int got = fcntl(fd[1], F_SETPIPE_SZ, (int)(batch * pagesize));
		if (got < 0) {
			perror("allocfree: F_SETPIPE_SZ (batch larger than /proc/sys/fs/pipe-max-size?)");
			return 1;
		}
		if (got / pagesize < batch) {
			fprintf(stderr, "allocfree: the pipe holds %ld pages, fewer than the batch of %ld\n",
				got / pagesize, batch);
			return 1;
		}
	}
	/* one batch untimed: the pipe's ring, page tables and per-CPU lists are set up */
	if (fd[0] >= 0)
		pipe_batch(fd, batch);
	else
		anon_batch(batch);
	double per_round = seconds / rounds;
	for (int r = 1; r <= rounds; r++) {
		uint64_t t0 = now_ns(), t, pages = 0;
		do {
			if (fd[0] >= 0)
				pipe_batch(fd, batch);
			else
				anon_batch(batch);
			pages += (uint64_t)batch;
			t = now_ns();
		} while ((t - t0) / 1e9 < per_round);
		printf("round %d mode %s pages %llu seconds %.6f ns_per_page %.1f\n", r, mode,
		       (unsigned long long)pages, (t - t0) / 1e9, (double)(t - t0) / (double)pages);
	}
	printf("done rounds %d\n", rounds);
	return 0;
}
