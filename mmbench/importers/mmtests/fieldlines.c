/*
 * fieldlines: the fast path of import-mmtests for logs with a line per sample (thpscale's
 * "fault <tid> <huge|base> <latency_us> <sec.usec> <local>", millions of lines a tree).
 *
 * Usage: fieldlines PREFIX KINDCOL VALUECOL[,VALUECOL...] KIND... < log
 * Reads stdin; a line that starts with PREFIX is a sample (as the Python reader and MMTests'
 * ExtractThpscale.pm /^fault/ take it): field KINDCOL
 * (counted from 0) must be one of the KINDs and each field VALUECOL a finite number (strtod).
 * Writes to stdout, in native byte order: u64 n, n bytes (each sample's KIND index), then for each
 * VALUECOL in turn n float64 (its values): one pass over a log for every column a reader needs.
 * Exit 0; 2 with "line N: ..." on stderr at the first sample line it cannot read (the caller's
 * line-by-line reader then names the line in its own words).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXV 8

static char *slurp(size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;
	if (!buf) { perror("fieldlines: malloc"); exit(1); }
	while ((r = read(0, buf + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			if (!buf) { perror("fieldlines: realloc"); exit(1); }
		}
	}
	if (r < 0) { perror("fieldlines: read"); exit(1); }
	buf[n] = 0;
	*len = n;
	return buf;
}

static inline int is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: fieldlines PREFIX KINDCOL VALUECOL[,VALUECOL...] KIND...\n");
		return 1;
	}
	const char *prefix = argv[1];
	size_t plen = strlen(prefix);
	int kcol = atoi(argv[2]), vcol[MAXV], nv = 0, maxcol = kcol;
	for (char *c = argv[3]; c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL) {
		int v = atoi(c);
		if (nv == MAXV || v < 1 || v > 62) {
			nv = 0;              /* a bad column: refuse the whole list */
			break;
		}
		vcol[nv++] = v;
		if (v > maxcol)
			maxcol = v;
	}
	int nkinds = argc - 4;
	if (kcol < 1 || kcol > 62 || nv == 0 || nkinds > 255) {
		fprintf(stderr, "fieldlines: bad arguments\n");
		return 1;
	}
	size_t len;
	char *buf = slurp(&len);
	size_t cap = len / 16 + 16, n = 0;
	uint8_t *kinds = malloc(cap);
	double *vals = malloc(cap * nv * sizeof(double));      /* n rows of nv values */
	if (!kinds || !vals) { perror("fieldlines: malloc"); return 1; }
	char *p = buf, *end = buf + len;
	unsigned long long line = 0;
	while (p < end) {
		line++;
		char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		char *q = p;
		if ((size_t)(eol - q) >= plen && !memcmp(q, prefix, plen)) {
			/* split into fields */
			char *f[64];
			int nf = 0;
			char *x = q;
			while (x < eol && nf < 64) {
				while (x < eol && is_space(*x))
					x++;
				if (x >= eol)
					break;
				f[nf++] = x;
				while (x < eol && !is_space(*x))
					x++;
				*x = 0;        /* eol is '\n' or the terminating 0: writable */
				x++;
			}
			if (nf <= maxcol) {
				fprintf(stderr, "line %llu: %d fields\n", line, nf);
				return 2;
			}
			int k = -1;
			for (int i = 0; i < nkinds; i++)
				if (!strcmp(f[kcol], argv[4 + i]))
					k = i;
			if (n == cap) {
				cap *= 2;
				kinds = realloc(kinds, cap);
				vals = realloc(vals, cap * nv * sizeof(double));
				if (!kinds || !vals) { perror("fieldlines: realloc"); return 1; }
			}
			for (int j = 0; j < nv; j++) {
				char *e;
				double v = strtod(f[vcol[j]], &e);
				if (k < 0 || *e || e == f[vcol[j]] || !isfinite(v)) {
					fprintf(stderr, "line %llu: not a sample line\n", line);
					return 2;
				}
				vals[n * nv + j] = v;
			}
			kinds[n] = (uint8_t)k;
			n++;
		}
		p = eol + 1;
	}
	uint64_t nn = n;
	if (fwrite(&nn, 8, 1, stdout) != 1 || (n && fwrite(kinds, 1, n, stdout) != n)) {
		perror("fieldlines: write");
		return 1;
	}
	double *col = malloc((n ? n : 1) * sizeof(double));
	if (!col) { perror("fieldlines: malloc"); return 1; }
	for (int j = 0; j < nv; j++) {           /* column by column */
		for (size_t i = 0; i < n; i++)
			col[i] = vals[i * nv + j];
		if (n && fwrite(col, sizeof(double), n, stdout) != n) {
			perror("fieldlines: write");
			return 1;
		}
	}
	return fflush(stdout) ? 1 : 0;
}
