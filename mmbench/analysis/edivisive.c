/*
 * edivisive: the largest E-Divisive split statistic Q of each of many arrangements of one series,
 * for history's permutation test (mmbench/analysis/changepoint.py).
 *
 * numpy computes every split of a series from its n x n distance matrix, O(n^2) per arrangement:
 * 6 s for the 999 permutations of a 1,000-point series.  Here the sums of |x - y| over the pairs
 * before each split come from a Fenwick tree over the values' ranks (the count and the sum of the
 * earlier values below each new one), O(n log n) per arrangement.
 *
 * stdin, native byte order:
 *   i32 n, i32 nseg, i32 rows, i32 observed, i32 nwords, i32 pending, u32 pending_value
 *   i32 bounds[nseg + 1]          segment s is positions bounds[s] .. bounds[s+1]-1
 *   f64 sorted[n]                 each segment's values in ascending order, segment after segment
 *   i32 base[n]                   per position of the series: the rank of its value in its segment
 *   u64 words[nwords]             the next outputs of numpy's PCG64 generator (random_raw)
 * Each permutation shuffles each segment in turn exactly as numpy's Generator.permutation does
 * (numpy 1.17 to 2.x, random_interval): for i from its length - 1 down to 1, j is the next
 * 32-bit draw masked to the smallest 2^b - 1 >= i, drawn again while j > i, and positions i and j
 * swap; the 32-bit draws are each word's low half, then its high half (PCG64's next_uint32; a half
 * left over from before is ``pending``).  So the permutations are those numpy would draw.
 * stdout: for the series itself when observed is 1, then for each permutation:
 *         f64 best[] (the largest Q over segments and splits, -inf when no split is allowed),
 *         i32 where[] (the absolute index of the first value after that split, -1 if none);
 *         then i32 words used, i32 pending, u32 pending_value, i32 1 (0: the words ran out).
 * A segment keeps at least MIN_SIZE values on each side of a split (argv[1]).
 * Exit 0; 2 with a line on stderr for malformed input.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void need(FILE *f, void *p, size_t size, size_t n)
{
	if (n && fread(p, size, n, f) != n) {
		fprintf(stderr, "edivisive: short input\n");
		exit(2);
	}
}

static void *alloc(size_t n)
{
	void *p = calloc(n ? n : 1, 1);
	if (!p) {
		fprintf(stderr, "edivisive: out of memory\n");
		exit(2);
	}
	return p;
}

static int g_n, g_nseg, g_rows, g_min;
static const int32_t *g_bounds, *g_perm;
static const double *g_val, *g_rowsum, *g_total, *g_cf;
static double *best;
static int32_t *where;

struct job { int first, step; };
struct node { double sum; int64_t cnt; };

/* The largest Q over the segments and splits of the arrangements first, first + step, ...: the
 * pairs before each split from a Fenwick tree over ranks (count and sum of the earlier, lower ones). */
static void *score_rows(void *arg)
{
	const struct job *job = arg;
	struct node *tree = alloc(sizeof(struct node) * (g_n + 1));
	for (int row = job->first; row < g_rows; row += job->step) {
		const int32_t *rank = g_perm + (size_t)g_n * row;
		best[row] = -INFINITY;
		where[row] = -1;
		for (int s = 0; s < g_nseg; s++) {
			int a = g_bounds[s], len = g_bounds[s + 1] - a;
			if (len < 2 * g_min)
				continue;
			memset(tree, 0, sizeof(struct node) * (len + 1));
			double within = 0, lead = 0, before = 0, A = g_total[s];
			for (int j = 0; j < len; j++) {
				int r = rank[a + j];
				double v = g_val[a + r];
				int64_t c = 0;
				double lower = 0;
				for (int i = r; i > 0; i -= i & -i) {   /* earlier values of lower rank */
					c += tree[i].cnt;
					lower += tree[i].sum;
				}
				within += v * c - lower + (before - lower) - v * (j - c);
				for (int i = r + 1; i <= len; i += i & -i) {
					tree[i].cnt++;
					tree[i].sum += v;
				}
				lead += g_rowsum[a + r];
				before += v;
				int t = j + 1;                          /* split before position a + t */
				if (t < g_min || t > len - g_min)
					continue;
				const double *cq = g_cf + 4 * (a + t);
				double left = 2 * within;               /* ordered pairs within the first t */
				double cross = lead - left;             /* pairs with one value each side */
				double right = A - 2 * lead + left;     /* ordered pairs within the rest */
				double q = cq[0] * (cq[1] * cross - cq[2] * left - cq[3] * right);
				if (q > best[row]) {
					best[row] = q;
					where[row] = a + t;
				}
			}
		}
	}
	free(tree);
	return NULL;
}

int main(int argc, char **argv)
{
	int32_t hdr[7];
	int min_size = argc > 1 ? atoi(argv[1]) : 2;
	need(stdin, hdr, sizeof(int32_t), 7);
	int32_t n = hdr[0], nseg = hdr[1], observed = hdr[3] != 0, rows = hdr[2] + observed, nwords = hdr[4];
	int pending = hdr[5] != 0;
	uint32_t pending_value = (uint32_t)hdr[6];
	if (n < 0 || nseg < 1 || hdr[2] < 0 || nwords < 0 || min_size < 1) {
		fprintf(stderr, "edivisive: bad header\n");
		return 2;
	}
	int32_t *bounds = alloc(sizeof(int32_t) * (nseg + 1));
	need(stdin, bounds, sizeof(int32_t), nseg + 1);
	for (int s = 0; s < nseg; s++)
		if (bounds[s] < 0 || bounds[s] > bounds[s + 1] || bounds[s + 1] > n) {
			fprintf(stderr, "edivisive: bad segment bounds\n");
			return 2;
		}
	double *sorted = alloc(sizeof(double) * n);
	need(stdin, sorted, sizeof(double), n);
	int32_t *base = alloc(sizeof(int32_t) * n);
	need(stdin, base, sizeof(int32_t), n);
	for (int s = 0; s < nseg; s++)
		for (int i = bounds[s]; i < bounds[s + 1]; i++)
			if (base[i] < 0 || base[i] >= bounds[s + 1] - bounds[s]) {
				fprintf(stderr, "edivisive: rank out of range\n");
				return 2;
			}
	uint64_t *words = alloc(sizeof(uint64_t) * nwords);
	need(stdin, words, sizeof(uint64_t), nwords);
	int32_t used = 0, enough = 1;

	/* Per segment, centred on its middle value (Q does not change under a shift; the sums keep
	 * their precision): each rank's value and its row sum, the sum of |x - y| over the segment. */
	double *val = alloc(sizeof(double) * n), *rowsum = alloc(sizeof(double) * n);
	double *total = alloc(sizeof(double) * nseg);
	for (int s = 0; s < nseg; s++) {
		int a = bounds[s], len = bounds[s + 1] - a;
		if (len == 0)
			continue;
		double mid = sorted[a + len / 2], all = 0, below = 0;
		for (int r = 0; r < len; r++)
			all += val[a + r] = sorted[a + r] - mid;
		for (int r = 0; r < len; r++) {
			double v = val[a + r];
			rowsum[a + r] = v * r - below + (all - below - v) - v * (len - 1 - r);
			below += v;
			total[s] += rowsum[a + r];
		}
	}

	/* Per segment and split, Q's coefficients (no division in the loop over arrangements):
	 * Q = mk/(m+k) * (2 cross/(mk) - left/(m(m-1)) - right/(k(k-1))) */
	double *cf = alloc(sizeof(double) * 4 * (n + 1));
	for (int s = 0; s < nseg; s++) {
		int a = bounds[s], len = bounds[s + 1] - a;
		for (int t = min_size; t <= len - min_size; t++) {
			double m = t, k = len - t, *c = cf + 4 * (a + t);
			c[0] = m * k / (m + k);
			c[1] = 2 / (m * k);
			c[2] = 1 / (m * (m - 1));
			c[3] = 1 / (k * (k - 1));
		}
	}

	/* The shuffles, in order (they share the generator's stream) ... */
	int32_t *perm = alloc(sizeof(int32_t) * (size_t)n * rows);
	best = alloc(sizeof(double) * rows);
	where = alloc(sizeof(int32_t) * rows);
	for (int row = 0; row < rows && enough; row++) {
		int32_t *rank = perm + (size_t)n * row;
		memcpy(rank, base, sizeof(int32_t) * n);
		if (row < observed)
			continue;
		for (int s = 0; s < nseg && enough; s++)
			for (int a = bounds[s], i = bounds[s + 1] - a - 1; i > 0; i--) {
				uint32_t mask = i, j;
				mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
				mask |= mask >> 8; mask |= mask >> 16;
				do {
					if (pending) {
						pending = 0;
						j = pending_value;
					} else if (used < nwords) {
						uint64_t w = words[used++];
						j = (uint32_t)w;
						pending = 1;
						pending_value = (uint32_t)(w >> 32);
					} else {
						enough = 0;
						break;
					}
					j &= mask;
				} while (j > (uint32_t)i);
				if (!enough)
					break;
				int32_t swap = rank[a + i];
				rank[a + i] = rank[a + j];
				rank[a + j] = swap;
			}
	}
	/* ... then the statistics, on two threads when there are many (the rows are independent) */
	g_n = n; g_nseg = nseg; g_rows = enough ? rows : 0; g_min = min_size; g_bounds = bounds;
	g_val = val; g_rowsum = rowsum; g_total = total; g_cf = cf; g_perm = perm;
	struct job jobs[2] = { { 0, rows >= 64 ? 2 : 1 }, { 1, 2 } };
	pthread_t helper;
	int threaded = rows >= 64 && pthread_create(&helper, NULL, score_rows, &jobs[1]) == 0;
	if (!threaded)
		jobs[0].step = 1;
	score_rows(&jobs[0]);
	if (threaded)
		pthread_join(helper, NULL);
	int32_t trailer[4] = { used, pending, (int32_t)pending_value, enough };
	if (fwrite(best, sizeof(double), rows, stdout) != (size_t)rows ||
	    fwrite(where, sizeof(int32_t), rows, stdout) != (size_t)rows ||
	    fwrite(trailer, sizeof(int32_t), 4, stdout) != 4 || fflush(stdout)) {
		fprintf(stderr, "edivisive: cannot write the result\n");
		return 2;
	}
	return 0;
}
