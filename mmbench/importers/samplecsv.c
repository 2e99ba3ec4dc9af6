/*
 * samplecsv: the fast path of `mmbench import` for CSV sample files (mmbench/importers/samples.py).
 *
 * Reads FILE (a header line, then one sample per line, NCOLS comma-separated fields, no quoting)
 * and writes to stdout, in native byte order:
 *   u64 rows
 *   per column c != VALUECOL: u64 runs, then per run: u64 first row, u64 its line number, u32 length,
 *     the field's bytes
 *     (a run = consecutive rows with the same text in that column: the names are validated once
 *     per run, not once per sample)
 *   f64 values[rows] (column VALUECOL, strtod, finite)
 * Exit 0; 2 with "line N: ..." on stderr for a malformed line (wrong field count, a value that is
 * not a finite number, a control character); 4 when a field is quoted (the caller then uses
 * Python's csv module, which knows the quoting rules).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct run { uint64_t row, line; const char *p; uint32_t len; };
struct col { struct run *runs; size_t n, cap; const char *last; uint32_t lastlen; };

static void add_run(struct col *c, uint64_t row, uint64_t line, const char *p, uint32_t len)
{
	if (c->last && c->lastlen == len && memcmp(c->last, p, len) == 0)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->runs = realloc(c->runs, c->cap * sizeof(*c->runs));
		if (!c->runs) { perror("samplecsv: realloc"); exit(1); }
	}
	c->runs[c->n++] = (struct run){ row, line, p, len };
	c->last = p;
	c->lastlen = len;
}

static void put(const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, stdout) != n) { perror("samplecsv: write"); exit(1); }
}

static inline int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; }

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: samplecsv FILE NCOLS VALUECOL\n");
		return 1;
	}
	int ncols = atoi(argv[2]), vcol = atoi(argv[3]);
	if (ncols < 2 || ncols > 64 || vcol < 0 || vcol >= ncols) {
		fprintf(stderr, "samplecsv: bad column arguments\n");
		return 1;
	}
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) { perror(argv[1]); return 1; }
	size_t size = st.st_size;
	const char *buf = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : "";
	if (buf == MAP_FAILED) { perror("samplecsv: mmap"); return 1; }
	if (size)
		madvise((void *)buf, size, MADV_SEQUENTIAL);
	if (memchr(buf, '"', size))
		return 4;
	const char *p = buf, *end = buf + size;
	const char *nl = memchr(p, '\n', size);          /* the header: Python read it */
	p = nl ? nl + 1 : end;
	size_t cap = size / 8 + 16, rows = 0;
	double *values = malloc(cap * sizeof(double));
	struct col cols[64];
	memset(cols, 0, sizeof(cols));
	uint64_t line = 1;
	while (p < end) {
		line++;
		const char *eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		/* a blank line (only spaces) is skipped, as the csv path skips it */
		const char *q = p;
		while (q < eol && (is_space(*q) || *q == ','))
			q++;
		if (q == eol) { p = eol + 1; continue; }
		if (rows == cap) {
			cap *= 2;
			values = realloc(values, cap * sizeof(double));
			if (!values) { perror("samplecsv: realloc"); return 1; }
		}
		const char *f = p;
		for (int c = 0; c < ncols; c++) {
			const char *fe = c == ncols - 1 ? eol : memchr(f, ',', eol - f);
			if (!fe || (c == ncols - 1 && memchr(f, ',', eol - f))) {
				int n = 1;
				for (const char *x = p; x < eol; x++)
					n += *x == ',';
				fprintf(stderr, "line %llu: %d fields, the header has %d\n", (unsigned long long)line, n, ncols);
				return 2;
			}
			const char *a = f, *b = fe;           /* fields are stripped, like the csv path */
			while (a < b && is_space(*a)) a++;
			while (b > a && is_space(b[-1])) b--;
			for (const char *x = a; x < b; x++)
				if ((unsigned char)*x < 32) {
					fprintf(stderr, "line %llu: column %d: contains a control character\n", (unsigned long long)line, c);
					return 2;
				}
			if (c == vcol) {
				char tmp[64];
				size_t n = b - a;
				char *e;
				if (n == 0 || n >= sizeof(tmp)) {
					fprintf(stderr, "line %llu: column %d: is '%.*s', expected a number\n", (unsigned long long)line, c, (int)(n < 60 ? n : 60), a);
					return 2;
				}
				memcpy(tmp, a, n);
				tmp[n] = 0;
				errno = 0;
				double v = strtod(tmp, &e);
				if (*e || !isfinite(v)) {
					fprintf(stderr, "line %llu: column %d: is '%s', expected a finite number\n", (unsigned long long)line, c, tmp);
					return 2;
				}
				values[rows] = v;
			} else {
				add_run(&cols[c], rows, line, a, (uint32_t)(b - a));
			}
			f = fe + 1;
		}
		rows++;
		p = eol + 1;
	}
	uint64_t r = rows;
	put(&r, 8);
	for (int c = 0; c < ncols; c++) {
		if (c == vcol)
			continue;
		uint64_t n = cols[c].n;
		put(&n, 8);
		for (size_t i = 0; i < cols[c].n; i++) {
			put(&cols[c].runs[i].row, 8);
			put(&cols[c].runs[i].line, 8);
			put(&cols[c].runs[i].len, 4);
			put(cols[c].runs[i].p, cols[c].runs[i].len);
		}
	}
	put(values, rows * sizeof(double));
	return fflush(stdout) ? 1 : 0;
}
