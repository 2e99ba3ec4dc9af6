/*
 * samplecsv: the fast path of `mmbench import` for CSV sample files (mmbench/importers/samples.py).
 *
 * Reads FILE in 1 MiB chunks (a header line, then one sample per line, NCOLS comma-separated
 * fields, no quoting)
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
#include <sys/stat.h>
#include <unistd.h>

struct run { uint64_t row, line; char *p; uint32_t len; };
struct col { struct run *runs; size_t n, cap; const char *last; uint32_t lastlen; };

/* A new run when the field differs from the last one; its text is copied (the file is read in
 * chunks that are reused). */
static void add_run(struct col *c, uint64_t row, uint64_t line, const char *p, uint32_t len)
{
	if (c->last && c->lastlen == len && memcmp(c->last, p, len) == 0)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->runs = realloc(c->runs, c->cap * sizeof(*c->runs));
		if (!c->runs) { perror("samplecsv: realloc"); exit(1); }
	}
	char *copy = malloc(len + 1);
	if (!copy) { perror("samplecsv: malloc"); exit(1); }
	memcpy(copy, p, len);
	c->runs[c->n++] = (struct run){ row, line, copy, len };
	c->last = copy;
	c->lastlen = len;
}

/* Exact powers of ten: every one up to 1e22 is a double. */
static const double pow10_exact[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* The decimal [+-]digits[.digits][e[+-]digits] in a..b when its digits make an integer m <= 2^53
 * and its scale is 10^k with |k| <= 22: then m and 10^|k| are exact doubles and m * 10^k or
 * m / 10^-k is one IEEE operation, correctly rounded, the value strtod gives (Clinger 1990).
 * Returns 0 for anything else (more digits, hex, inf, junk): strtod then reads it, or refuses. */
static int decimal_fast(const char *a, const char *b, double *out)
{
	int neg = 0, digits = 0, scale = 0;
	uint64_t m = 0;
	if (a < b && (*a == '+' || *a == '-'))
		neg = *a++ == '-';
	for (; a < b && *a >= '0' && *a <= '9'; a++, digits++) {
		if (m > (UINT64_C(1) << 53) / 10)
			return 0;
		m = m * 10 + (uint64_t)(*a - '0');
	}
	if (a < b && *a == '.') {
		for (a++; a < b && *a >= '0' && *a <= '9'; a++, digits++, scale--) {
			if (m > (UINT64_C(1) << 53) / 10)
				return 0;
			m = m * 10 + (uint64_t)(*a - '0');
		}
	}
	if (digits == 0 || m > (UINT64_C(1) << 53))
		return 0;
	if (a < b && (*a == 'e' || *a == 'E')) {
		int eneg = 0, e = 0, edigits = 0;
		a++;
		if (a < b && (*a == '+' || *a == '-'))
			eneg = *a++ == '-';
		for (; a < b && *a >= '0' && *a <= '9' && e < 1000; a++, edigits++)
			e = e * 10 + (*a - '0');
		if (edigits == 0)
			return 0;
		scale += eneg ? -e : e;
	}
	if (a != b || scale < -22 || scale > 22)
		return 0;
	double v = (double)m;
	v = scale < 0 ? v / pow10_exact[-scale] : v * pow10_exact[scale];
	*out = neg ? -v : v;
	return 1;
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
	/* read in chunks (not mmap): only the values stay in memory, not the file */
	size_t bufcap = 1 << 20, have = 0;
	char *buf = malloc(bufcap);
	size_t cap = (size_t)st.st_size / 24 + 16, rows = 0;
	double *values = malloc(cap * sizeof(double));
	struct col cols[64];
	memset(cols, 0, sizeof(cols));
	if (!buf || !values) { perror("samplecsv: malloc"); return 1; }
	uint64_t line = 1;
	int header = 1, eof = 0;
	while (!eof || have) {
		if (!eof) {
			if (have == bufcap) {            /* a line longer than the buffer */
				bufcap *= 2;
				buf = realloc(buf, bufcap);
				if (!buf) { perror("samplecsv: realloc"); return 1; }
			}
			ssize_t r = read(fd, buf + have, bufcap - have);
			if (r < 0) { perror(argv[1]); return 1; }
			if (memchr(buf + have, '"', (size_t)r))
				return 4;
			if (r == 0)
				eof = 1;
			have += (size_t)r;
		}
		char *p = buf, *end = buf + have;
		for (;;) {
			char *eol = memchr(p, '\n', (size_t)(end - p));
			if (!eol) {
				if (!eof || p == end)
					break;
				eol = end;                   /* the last line has no newline */
			}
			if (header) {                    /* the header: Python read it */
				header = 0;
				p = eol + (eol < end);
				continue;
			}
			line++;
			/* a blank line (only spaces and commas) is skipped, as the csv path skips it */
			const char *q = p;
			while (q < eol && (is_space(*q) || *q == ','))
				q++;
			if (q == eol) { p = eol + (eol < end); continue; }
			if (rows == cap) {
				cap *= 2;
				values = realloc(values, cap * sizeof(double));
				if (!values) { perror("samplecsv: realloc"); return 1; }
			}
			const char *f = p;
			for (int c = 0; c < ncols; c++) {
				const char *fe = c == ncols - 1 ? eol : memchr(f, ',', (size_t)(eol - f));
				if (!fe || (c == ncols - 1 && memchr(f, ',', (size_t)(eol - f)))) {
					int n = 1;
					for (const char *x = p; x < eol; x++)
						n += *x == ',';
					fprintf(stderr, "line %llu: %d fields, the header has %d\n", (unsigned long long)line, n, ncols);
					return 2;
				}
				const char *a = f, *b = fe;      /* fields are stripped, like the csv path */
				while (a < b && is_space(*a)) a++;
				while (b > a && is_space(b[-1])) b--;
				for (const char *x = a; x < b; x++)
					if ((unsigned char)*x < 32) {
						fprintf(stderr, "line %llu: column %d: contains a control character\n", (unsigned long long)line, c);
						return 2;
					}
				if (c == vcol && decimal_fast(a, b, &values[rows])) {
					/* the common case, without strtod's copy and its general algorithm */
				} else if (c == vcol) {
					char tmp[64];
					size_t n = (size_t)(b - a);
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
			p = eol + (eol < end);
		}
		have = (size_t)(end - p);           /* keep the partial last line */
		memmove(buf, p, have);
		if (eof && have == 0)
			break;
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
