/*
 * trace_decode: mm-trace's raw ring-buffer pages (per_cpu/cpuN/trace_pipe_raw copies) walked
 * in C, at memory speed: event counts, lost events per CPU, extfrag counts, high-order counts
 * (kswapd wake-ups by allocation order), workload tasks
 * followed through forks, begin/end stall pairs per pid written as stalls.tsv, and (for tests)
 * every record's numeric fields.  The pure-Python reader (ringbuffer.py, stalls.py) is the
 * reference this program must match record for record; decode.py writes the spec it reads.
 *
 *   trace_decode SPEC
 *
 * SPEC, one item per line (whitespace separated; paths last on their line):
 *   page PAGE_SIZE DATA_OFFSET COMMIT_SIZE     from events/header_page
 *   pid OFFSET SIZE                             common_pid
 *   pageblock_order N
 *   kind K RECLAIM NAME                         stall kinds (RECLAIM 1: direct/memcg/node reclaim)
 *   who PREFIX                                  kernel-thread comm prefixes, in order
 *   event ID ORDER MINLEN ROLE KIND NF [OFF SIZE SIGNED]*NF
 *        ROLE 0 count, 1 begin, 2 end [nr_reclaimed], 3 lru_shrink_inactive [nr_scanned],
 *        4 throttled [usec_delayed], 5 extfrag [change_ownership fallback_order] (OFF -1: absent),
 *        6 fork [parent_pid child_pid], 7 dump only
 *   order ID OFF SIZE SIGNED [GOFF GSIZE SET CLEAR]
 *                                               count event ID's records whose field there (its
 *                                               format's `order`) is above 0 (after its event line);
 *                                               with the gfp part, also those of them whose field at
 *                                               GOFF has every SET bit and no CLEAR bit
 *   comms PATH        "pid<TAB>comm" lines            workload PATH   one pid a line
 *   cpu N PATH        a per-CPU capture file           stalls PATH     where stalls.tsv goes
 *   dump DIR          write DIR/evORDER.bin: int64 rows (ts, cpu, pid, fields...) of every event
 *   stats PATH        counts, per-CPU record kinds and losses, unpaired pairs ("key values" lines)
 *   table PATH        the stalls for the stall table: 16-byte rows (int64 dur_ns, u8 kind, u8 who
 *                     (the who lines' index, then workload, other), u8 lost, 5 bytes zero)
 *
 * Page layout (kernel/trace/ring_buffer.c): u64 time stamp, local_t commit (bits 0-26 the data
 * size, bit 31 events lost before this page, bit 30 their count stored after the data), then
 * records with a 32-bit header: type_len (5 bits) and time delta (27 bits).
 *
 * Memory: the files are read 256 pages at a time; only the events the pairing needs (begin, end,
 * lru_shrink_inactive, throttled, fork) are kept, 32 bytes each, so a capture's counted-only
 * events cost nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COMMIT_MASK ((1u << 27) - 1)
#define MISSED_EVENTS (1ull << 31)
#define MISSED_STORED (1ull << 30)
#define MAX_LOST (1ull << 48)          /* a stored count above this is damage, not a count */
#define MAXF 64
#define MAXKIND 32
#define MAXWHO 16
#define MAXEV 4096
#define CHUNK_PAGES 256

enum { R_COUNT, R_BEGIN, R_END, R_LRU, R_THROTTLED, R_EXTFRAG, R_FORK, R_DUMP };

struct field { int off, size, sgn; };
struct event {
	int id, order, minlen, role, kind, nf;
	struct field f[MAXF];
	struct field ord;            /* the `order` field of an "order" line */
	struct field gfp;            /* its optional gfp_flags field and masks */
	int has_ord, has_gfp;
	unsigned long long gfp_set, gfp_clear;
	long long count, high, spec; /* records; with order > 0; of those, gfp & set == set, gfp & clear == 0 */
	FILE *dump;
};
struct rel {                     /* an event the pairing needs, 24 bytes */
	uint64_t ts;
	int64_t val;
	int32_t pid;
	uint16_t ev;                 /* index into events[]: role, kind and the order of its format */
	uint16_t cpu;
};
/* The reference's order: time, then the event's format order, then the record's position in the
   per-CPU files (CPU by CPU): here the position in rels[], which is filled in that order and only
   ever sorted stably. */
struct fork { uint64_t ts, seq; int64_t parent, child; int cpu; };
struct thr { uint64_t ts; int64_t usec; int32_t pid; };
struct stall { int64_t start, dur, reclaimed, scanned, seq; int32_t pid; uint8_t kind, lost; };
struct win { uint64_t lo, hi; };
struct cpustat {
	int cpu;
	char *path;
	long long pages, records, padding, extend, abs_ts, big, lost_pages, lost_events, lost_unstored;
	size_t rel_begin, rel_end;
};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "trace_decode: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory", NULL);
	return q;
}

#define PUSH(arr, n, cap, item) do { \
	if ((n) == (cap)) { (cap) = (cap) ? (cap) * 2 : 4096; (arr) = xrealloc((arr), (cap) * sizeof(*(arr))); } \
	(arr)[(n)++] = (item); } while (0)

/* ---- hash map: u64 key → two int64, linear probing, backward-shift deletion ---- */
struct hent { uint64_t key; int64_t a, b; };
struct hmap { struct hent *t; uint8_t *used; size_t cap, n; };

static size_t hh(uint64_t k, size_t mask) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & mask; }

static void hinit(struct hmap *m, size_t cap)
{
	m->cap = cap;
	m->n = 0;
	m->t = xrealloc(NULL, cap * sizeof(*m->t));
	m->used = calloc(cap, 1);
	if (!m->used)
		die("out of memory", NULL);
}

static size_t hfind(const struct hmap *m, uint64_t k)
{
	size_t mask = m->cap - 1, i = hh(k, mask);
	while (m->used[i] && m->t[i].key != k)
		i = (i + 1) & mask;
	return i;
}

static struct hent *hget(const struct hmap *m, uint64_t k)
{
	size_t i = hfind(m, k);
	return m->used[i] ? &m->t[i] : NULL;
}

static struct hent *hput(struct hmap *m, uint64_t k, int *existed)
{
	if (2 * (m->n + 1) > m->cap) {
		struct hmap g;
		hinit(&g, m->cap * 2);
		for (size_t i = 0; i < m->cap; i++)
			if (m->used[i]) {
				size_t j = hfind(&g, m->t[i].key);
				g.used[j] = 1;
				g.t[j] = m->t[i];
				g.n++;
			}
		free(m->t);
		free(m->used);
		*m = g;
	}
	size_t i = hfind(m, k);
	*existed = m->used[i];
	if (!m->used[i]) {
		m->used[i] = 1;
		m->t[i].key = k;
		m->t[i].a = m->t[i].b = 0;
		m->n++;
	}
	return &m->t[i];
}

static void hdel(struct hmap *m, struct hent *e)
{
	size_t mask = m->cap - 1, i = (size_t)(e - m->t), j = i;
	m->n--;
	for (;;) {
		m->used[i] = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (!m->used[j])
				return;
			size_t k = hh(m->t[j].key, mask);
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		m->t[i] = m->t[j];
		m->used[i] = 1;
		i = j;
	}
}

/* ---- spec ---- */
static struct event events[MAXEV];
static int nevents;
static int16_t ev_of_id[65536];
static int page_size = 4096, data_offset = 16, commit_size = 8, pid_off = 4, pid_size = 4;
static int pageblock_order = 9;
static char *kind_name[MAXKIND];
static int kind_reclaim[MAXKIND];
static char *who_prefix[MAXWHO];
static size_t who_len[MAXWHO];
static int nwho;
static struct cpustat *cpus;
static int ncpus;
static char *comms_path, *wl_path, *stalls_path, *dump_dir, *stats_path, *table_path;
static int have_scanned;

static char *dupstr(const char *s)
{
	char *d = strdup(s);
	if (!d)
		die("out of memory", NULL);
	return d;
}

static char *rest_of(char *line, int skip)
{
	/* the text after the first `skip` whitespace-separated words (a path may hold spaces) */
	char *p = line;
	for (int i = 0; i < skip; i++) {
		while (*p == ' ' || *p == '\t')
			p++;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	p[strcspn(p, "\n")] = 0;
	return p;
}

static void read_spec(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	if (!f)
		die("cannot open the spec", path);
	memset(ev_of_id, 0xff, sizeof(ev_of_id));
	while (fgets(line, sizeof(line), f)) {
		char key[32];
		int used = 0;
		if (sscanf(line, "%31s%n", key, &used) != 1)
			continue;
		char *a = line + used;
		if (!strcmp(key, "page")) {
			if (sscanf(a, "%d %d %d", &page_size, &data_offset, &commit_size) != 3)
				die("bad page line", line);
		} else if (!strcmp(key, "pid")) {
			if (sscanf(a, "%d %d", &pid_off, &pid_size) != 2)
				die("bad pid line", line);
		} else if (!strcmp(key, "pageblock_order")) {
			pageblock_order = atoi(a);
		} else if (!strcmp(key, "kind")) {
			int k, r;
			if (sscanf(a, "%d %d", &k, &r) != 2 || k < 0 || k >= MAXKIND)
				die("bad kind line", line);
			kind_reclaim[k] = r;
			kind_name[k] = dupstr(rest_of(line, 3));
		} else if (!strcmp(key, "who")) {
			if (nwho == MAXWHO)
				die("too many who lines", NULL);
			who_prefix[nwho] = dupstr(rest_of(line, 1));
			who_len[nwho] = strlen(who_prefix[nwho]);
			nwho++;
		} else if (!strcmp(key, "event")) {
			struct event *e = &events[nevents];
			int n = 0;
			if (nevents == MAXEV)
				die("too many events", NULL);
			if (sscanf(a, "%d %d %d %d %d %d%n", &e->id, &e->order, &e->minlen, &e->role, &e->kind, &e->nf,
				   &n) != 6 || e->id < 0 || e->id > 65535 || e->nf < 0 || e->nf > MAXF)
				die("bad event line", line);
			a += n;
			for (int i = 0; i < e->nf; i++) {
				if (sscanf(a, "%d %d %d%n", &e->f[i].off, &e->f[i].size, &e->f[i].sgn, &n) != 3)
					die("bad event fields", line);
				a += n;
			}
			if (e->role == R_LRU && e->nf == 1)
				have_scanned = 1;
			ev_of_id[e->id] = (int16_t)nevents++;
		} else if (!strcmp(key, "order")) {
			int id, ei, n;
			struct field o, g = {0, 0, 0};
			unsigned long long set = 0, clear = 0;
			n = sscanf(a, "%d %d %d %d %d %d %llu %llu", &id, &o.off, &o.size, &o.sgn, &g.off, &g.size, &set,
				   &clear);
			if ((n != 4 && n != 8) || id < 0 || id > 65535 || (ei = ev_of_id[id]) < 0 || o.off < 0 ||
			    o.off + o.size > events[ei].minlen ||
			    (n == 8 && (g.off < 0 || g.off + g.size > events[ei].minlen)))
				die("bad order line", line);
			events[ei].ord = o;
			events[ei].has_ord = 1;
			if (n == 8) {
				events[ei].gfp = g;
				events[ei].has_gfp = 1;
				events[ei].gfp_set = set;
				events[ei].gfp_clear = clear;
			}
		} else if (!strcmp(key, "comms")) {
			comms_path = dupstr(rest_of(line, 1));
		} else if (!strcmp(key, "workload")) {
			wl_path = dupstr(rest_of(line, 1));
		} else if (!strcmp(key, "stalls")) {
			stalls_path = dupstr(rest_of(line, 1));
		} else if (!strcmp(key, "dump")) {
			dump_dir = dupstr(rest_of(line, 1));
		} else if (!strcmp(key, "stats")) {
			stats_path = dupstr(rest_of(line, 1));
		} else if (!strcmp(key, "table")) {
			table_path = dupstr(rest_of(line, 1));
		} else if (!strcmp(key, "cpu")) {
			cpus = xrealloc(cpus, (ncpus + 1) * sizeof(*cpus));
			memset(&cpus[ncpus], 0, sizeof(*cpus));
			cpus[ncpus].cpu = atoi(a);
			cpus[ncpus].path = dupstr(rest_of(line, 2));
			ncpus++;
		} else {
			die("unknown spec line", line);
		}
	}
	fclose(f);
	for (int k = 0; k < MAXKIND; k++)
		if (!kind_name[k])
			kind_name[k] = dupstr("?");
	for (int i = 0; i < nevents; i++)
		if (events[i].kind < 0 || events[i].kind >= MAXKIND)
			die("an event's kind is out of range", NULL);
	if (page_size < 64 || (commit_size != 4 && commit_size != 8) || data_offset < 8 + commit_size || data_offset >= page_size)
		die("bad page layout", NULL);
}

/* ---- reading fields ---- */
static inline int64_t rd(const uint8_t *p, int size, int sgn)
{
	switch (size) {
	case 1: return sgn ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
	case 2: { uint16_t v; memcpy(&v, p, 2); return sgn ? (int64_t)(int16_t)v : (int64_t)v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return sgn ? (int64_t)(int32_t)v : (int64_t)v; }
	default: { int64_t v; memcpy(&v, p, 8); return v; }   /* u64 keeps its bits */
	}
}

static inline uint32_t u32at(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t u64at(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ---- the walk ---- */
static struct rel *rels;
static size_t nrels, caprels;
static struct fork *forks;
static size_t nforks, capforks;
static struct thr *thrs;
static size_t nthrs, capthrs;
static struct win *wins;
static size_t nwins, capwins;
static long long unknown, truncated, extfrag_n, extfrag_change, extfrag_frag;
static uint64_t seq;
static double t_walk, t_pair, t_write;     /* seconds per phase, for bench/trace-measure */

static void record(struct cpustat *cs, uint64_t ts, const uint8_t *p, int64_t length)
{
	if (length < 8)
		return;
	uint16_t eid;
	memcpy(&eid, p, 2);
	int ei = ev_of_id[eid];
	if (ei < 0) {
		unknown++;
		return;
	}
	struct event *e = &events[ei];
	if (e->minlen > length)
		return;
	int64_t pid = rd(p + pid_off, pid_size, 1);
	e->count++;
	if (e->has_ord && rd(p + e->ord.off, e->ord.size, e->ord.sgn) > 0) {
		e->high++;
		if (e->has_gfp) {
			uint64_t g = (uint64_t)rd(p + e->gfp.off, e->gfp.size, 0);
			if ((g & e->gfp_set) == e->gfp_set && !(g & e->gfp_clear))
				e->spec++;
		}
	}
	cs->records++;
	seq++;
	if (e->dump) {
		int64_t row[3 + MAXF];
		row[0] = (int64_t)ts;
		row[1] = cs->cpu;
		row[2] = pid;
		for (int i = 0; i < e->nf; i++)
			row[3 + i] = rd(p + e->f[i].off, e->f[i].size, e->f[i].sgn);
		if (fwrite(row, sizeof(int64_t), 3 + e->nf, e->dump) != (size_t)(3 + e->nf))
			die("cannot write a dump file", strerror(errno));
	}
	switch (e->role) {
	case R_BEGIN: case R_END: case R_LRU: {
		if (e->role == R_LRU && !have_scanned)
			break;
		struct rel r = { ts, 0, (int32_t)pid, (uint16_t)ei, (uint16_t)cs->cpu };
		r.val = e->nf ? rd(p + e->f[0].off, e->f[0].size, e->f[0].sgn) : -1;
		PUSH(rels, nrels, caprels, r);
		break;
	}
	case R_THROTTLED:
		if (e->nf == 1) {
			struct thr t = { ts, rd(p + e->f[0].off, e->f[0].size, e->f[0].sgn), (int32_t)pid };
			PUSH(thrs, nthrs, capthrs, t);
		}
		break;
	case R_EXTFRAG:
		extfrag_n++;
		if (e->nf >= 1 && e->f[0].off >= 0 && rd(p + e->f[0].off, e->f[0].size, e->f[0].sgn))
			extfrag_change++;
		if (e->nf >= 2 && e->f[1].off >= 0 && rd(p + e->f[1].off, e->f[1].size, e->f[1].sgn) < pageblock_order)
			extfrag_frag++;
		break;
	case R_FORK:
		if (e->nf == 2) {
			struct fork fk = { ts, seq, rd(p + e->f[0].off, e->f[0].size, e->f[0].sgn),
					   rd(p + e->f[1].off, e->f[1].size, e->f[1].sgn), cs->cpu };
			PUSH(forks, nforks, capforks, fk);
		}
		break;
	}
}

static void walk_cpu(struct cpustat *cs)
{
	FILE *f = fopen(cs->path, "rb");
	if (!f)
		die("cannot open a capture file", cs->path);
	size_t chunk = (size_t)page_size * CHUNK_PAGES;
	uint8_t *buf = xrealloc(NULL, chunk);
	int have_last = 0;
	uint64_t last_ts = 0;
	cs->rel_begin = nrels;
	for (;;) {
		size_t got = fread(buf, 1, chunk, f);
		for (size_t off = 0; off + (size_t)page_size <= got; off += page_size) {
			const uint8_t *pg = buf + off;
			uint64_t ts = u64at(pg);
			uint64_t commit = commit_size == 8 ? u64at(pg + 8) : u32at(pg + 8);
			cs->pages++;
			if (commit & MISSED_EVENTS) {
				size_t at = (size_t)data_offset + (commit & COMMIT_MASK);
				cs->lost_pages++;
				if ((commit & MISSED_STORED) && at + 8 <= (size_t)page_size && u64at(pg + at) <= MAX_LOST)
					cs->lost_events += (long long)u64at(pg + at);
				else
					cs->lost_unstored++;
				struct win w = { have_last ? last_ts : 0, ts };
				PUSH(wins, nwins, capwins, w);
			}
			int64_t pos = data_offset;
			int64_t end = data_offset + (int64_t)(commit & COMMIT_MASK);
			if (end > page_size)
				end = page_size;
			while (pos + 4 <= end) {
				uint32_t hdr = u32at(pg + pos);
				uint32_t tl = hdr & 31, delta = hdr >> 5;
				if (tl >= 1 && tl <= 28) {
					int64_t length = (int64_t)tl << 2;
					ts += delta;
					last_ts = ts;
					have_last = 1;
					if (pos + 4 + length <= page_size)
						record(cs, ts, pg + pos + 4, length);
					else if (length >= 8)
						truncated++;
					pos += 4 + length;
					continue;
				}
				if (pos + 8 > page_size)
					break;
				uint32_t arr = u32at(pg + pos + 4);
				if (tl == 0) {
					int64_t length = ((int64_t)arr - 4 + 3) & ~(int64_t)3;
					ts += delta;
					last_ts = ts;
					have_last = 1;
					cs->big++;
					if (pos + 8 + length <= page_size)
						record(cs, ts, pg + pos + 8, length);
					else if (length >= 8)
						truncated++;
					pos += 8 + length;
				} else if (tl == 29) {
					if (delta == 0)
						break;
					cs->padding++;
					pos += 4 + (int64_t)arr;
				} else if (tl == 30) {
					ts += ((uint64_t)arr << 27) + delta;
					cs->extend++;
					pos += 8;
				} else {
					uint64_t abs_ts = ((uint64_t)arr << 27) | delta;
					ts = abs_ts | (ts & ~((1ull << 59) - 1));
					cs->abs_ts++;
					pos += 8;
				}
			}
		}
		if (got < chunk)
			break;
	}
	if (ferror(f))
		die("cannot read a capture file", cs->path);
	fclose(f);
	free(buf);
	cs->rel_end = nrels;
}

/* ---- order ---- */
static int fork_cmp(const void *a, const void *b)
{
	const struct fork *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* stalls by (start, seq): the keys are unique, so an in-place introsort gives the reference's
   stable order without glibc qsort's temporary copy of the whole array */
static inline int stall_less(const struct stall *x, const struct stall *y)
{
	return x->start < y->start || (x->start == y->start && x->seq < y->seq);
}

static void stall_swap(struct stall *a, struct stall *b)
{
	struct stall t = *a;
	*a = *b;
	*b = t;
}

static void stall_heapify(struct stall *a, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && stall_less(&a[m], &a[l]))
			m = l;
		if (r < n && stall_less(&a[m], &a[r]))
			m = r;
		if (m == i)
			return;
		stall_swap(&a[i], &a[m]);
		i = m;
	}
}

static void sort_stalls(struct stall *a, size_t n, int depth)
{
	while (n > 16) {
		if (depth-- == 0) {     /* heapsort: no quadratic case */
			for (size_t i = n / 2; i-- > 0;)
				stall_heapify(a, n, i);
			for (size_t i = n - 1; i > 0; i--) {
				stall_swap(&a[0], &a[i]);
				stall_heapify(a, i, 0);
			}
			return;
		}
		size_t mid = n / 2;
		if (stall_less(&a[mid], &a[0]))
			stall_swap(&a[mid], &a[0]);
		if (stall_less(&a[n - 1], &a[0]))
			stall_swap(&a[n - 1], &a[0]);
		if (stall_less(&a[n - 1], &a[mid]))
			stall_swap(&a[n - 1], &a[mid]);
		struct stall pivot = a[mid];
		size_t i = 0, j = n - 1;
		for (;;) {
			while (stall_less(&a[i], &pivot))
				i++;
			while (stall_less(&pivot, &a[j]))
				j--;
			if (i >= j)
				break;
			stall_swap(&a[i], &a[j]);
			i++;
			j--;
		}
		/* [0, j] <= pivot <= [j + 1, n): recurse into the smaller side */
		if (j + 1 < n - j - 1) {
			sort_stalls(a, j + 1, depth);
			a += j + 1;
			n -= j + 1;
		} else {
			sort_stalls(a + j + 1, n - j - 1, depth);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && stall_less(&a[k], &a[k - 1]); k--)
			stall_swap(&a[k], &a[k - 1]);
}

static int win_cmp(const void *a, const void *b)
{
	const struct win *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static inline int rel_less(const struct rel *x, const struct rel *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	int ox = events[x->ev].order, oy = events[y->ev].order;
	return ox != oy ? ox < oy : x < y;
}

/* key order without the position: what a stable sort sorts by */
static inline int rel_key_less(const struct rel *x, const struct rel *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return events[x->ev].order < events[y->ev].order;
}

/* a segment whose time stamps go backwards: sorted stably (bottom-up merge sort) */
static void stable_sort(struct rel *a, size_t n)
{
	struct rel *tmp = xrealloc(NULL, n * sizeof(*a)), *src = a, *dst = tmp;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				dst[k++] = rel_key_less(&src[j], &src[i]) ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		struct rel *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
	free(tmp);
}

/* k-way merge of the per-CPU segments (each sorted first, if it is not already) */
struct seg { size_t i, end; };
static struct seg *heap;
static int nheap;

static void sift_down(int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < nheap && rel_less(&rels[heap[l].i], &rels[heap[m].i]))
			m = l;
		if (r < nheap && rel_less(&rels[heap[r].i], &rels[heap[m].i]))
			m = r;
		if (m == i)
			return;
		struct seg t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

static struct rel *merge_next(void)
{
	if (!nheap)
		return NULL;
	struct rel *r = &rels[heap[0].i];
	if (++heap[0].i == heap[0].end)
		heap[0] = heap[--nheap];
	sift_down(0);
	return r;
}

/* ---- windows of lost events ---- */
static struct win *merged;
static size_t nmerged;

static void merge_windows(void)
{
	for (size_t i = 0; i < nwins; i++)
		if (wins[i].hi < wins[i].lo) {
			uint64_t t = wins[i].lo;
			wins[i].lo = wins[i].hi;
			wins[i].hi = t;
		}
	qsort(wins, nwins, sizeof(*wins), win_cmp);
	merged = xrealloc(NULL, (nwins + 1) * sizeof(*merged));
	for (size_t i = 0; i < nwins; i++) {
		if (nmerged && wins[i].lo <= merged[nmerged - 1].hi) {
			if (wins[i].hi > merged[nmerged - 1].hi)
				merged[nmerged - 1].hi = wins[i].hi;
		} else {
			merged[nmerged++] = wins[i];
		}
	}
}

static int overlaps_loss(int64_t start, int64_t end)
{
	/* the last window with lo < end; it overlaps when its hi > start (windows are u64 stamps,
	   times int64: compared exactly, as the reference's integers are) */
	typedef __int128 i128;
	size_t lo = 0, hi = nmerged;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((i128)merged[mid].lo < (i128)end || ((i128)merged[mid].lo == (i128)end && (i128)merged[mid].hi < (i128)end))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && (i128)merged[lo - 1].hi > (i128)start;
}

/* ---- output ---- */
struct obuf { FILE *f; char *b; size_t n; };
#define OBUF 65536

static void oflush(struct obuf *o)
{
	if (o->n && fwrite(o->b, 1, o->n, o->f) != o->n)
		die("cannot write stalls", strerror(errno));
	o->n = 0;
}

static void oput(struct obuf *o, const char *s, size_t n)
{
	if (o->n + n > OBUF)
		oflush(o);
	if (n > OBUF) {
		if (fwrite(s, 1, n, o->f) != n)
			die("cannot write stalls", strerror(errno));
		return;
	}
	memcpy(o->b + o->n, s, n);
	o->n += n;
}

/* ---- tasks ---- */
static struct hmap comm_of;      /* pid → offset into pool */
static char *pool;
static size_t npool, cappool;
static struct hmap wl;

static void read_comms(void)
{
	hinit(&comm_of, 1024);
	if (!comms_path)
		return;
	FILE *f = fopen(comms_path, "r");
	char line[512];
	if (!f)
		die("cannot open the comms file", comms_path);
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = 0;
		char *c = tab + 1;
		c[strcspn(c, "\n")] = 0;
		int existed;
		struct hent *h = hput(&comm_of, (uint64_t)(uint32_t)atoi(line), &existed);
		size_t n = strlen(c) + 1;
		if (npool + n > cappool) {
			cappool = (npool + n) * 2;
			pool = xrealloc(pool, cappool);
		}
		memcpy(pool + npool, c, n);
		h->a = (int64_t)npool;
		npool += n;
	}
	fclose(f);
}

static void read_workload(void)
{
	hinit(&wl, 1024);
	if (!wl_path)
		return;
	FILE *f = fopen(wl_path, "r");
	long long pid;
	int existed;
	if (!f)
		die("cannot open the workload file", wl_path);
	while (fscanf(f, "%lld", &pid) == 1)
		hput(&wl, (uint64_t)(uint32_t)pid, &existed);
	fclose(f);
}

static void follow_forks(void)
{
	int existed;
	qsort(forks, nforks, sizeof(*forks), fork_cmp);
	for (size_t i = 0; i < nforks; i++)
		if (hget(&wl, (uint64_t)(uint32_t)forks[i].parent))
			hput(&wl, (uint64_t)(uint32_t)forks[i].child, &existed);
}

static const char *comm(int32_t pid)
{
	struct hent *h = hget(&comm_of, (uint64_t)(uint32_t)pid);
	return h ? pool + h->a : "";
}

static int who_code(int32_t pid, const char *c)
{
	for (int i = 0; i < nwho; i++)
		if (!strncmp(c, who_prefix[i], who_len[i]))
			return i;
	return hget(&wl, (uint64_t)(uint32_t)pid) ? nwho : nwho + 1;
}

static const char *who_name(int code)
{
	return code < nwho ? who_prefix[code] : code == nwho ? "workload" : "other";
}

/* ---- pairing (stalls.py find_stalls, the reference) ---- */
static struct stall *stalls;
static size_t nstalls, capstalls;
static long long unpaired_begins, unpaired_ends;

static void pair(void)
{
	struct hmap open, reclaim;    /* (kind, pid) → start, scanned;  pid → kind + 1 */
	hinit(&open, 1024);
	hinit(&reclaim, 1024);
	heap = xrealloc(NULL, (ncpus + 1) * sizeof(*heap));
	for (int c = 0; c < ncpus; c++) {
		struct cpustat *cs = &cpus[c];
		size_t b = cs->rel_begin, e = cs->rel_end;
		for (size_t i = b + 1; i < e; i++)
			if (rel_key_less(&rels[i], &rels[i - 1])) {
				stable_sort(rels + b, e - b);
				break;
			}
		if (b < e) {
			heap[nheap].i = b;
			heap[nheap].end = e;
			nheap++;
		}
	}
	for (int i = nheap / 2 - 1; i >= 0; i--)
		sift_down(i);
	int64_t sseq = 0;
	struct rel *r;
	while ((r = merge_next())) {
		uint64_t pid = (uint64_t)(uint32_t)r->pid;
		int existed, role = events[r->ev].role, kind = events[r->ev].kind;
		if (role == R_LRU) {
			struct hent *k = hget(&reclaim, pid);
			if (k) {
				struct hent *o = hget(&open, ((uint64_t)(k->a - 1) << 32) | pid);
				if (o)
					o->b += r->val;
			}
			continue;
		}
		uint64_t key = ((uint64_t)kind << 32) | pid;
		if (role == R_BEGIN) {
			struct hent *o = hput(&open, key, &existed);
			unpaired_begins += existed;
			o->a = (int64_t)r->ts;
			o->b = 0;
			if (kind_reclaim[kind]) {
				struct hent *k = hput(&reclaim, pid, &existed);
				k->a = kind + 1;
			}
			continue;
		}
		struct hent *o = hget(&open, key);
		if (!o) {
			unpaired_ends++;
			continue;
		}
		int64_t start = o->a, scanned = o->b, end = (int64_t)r->ts;
		hdel(&open, o);
		if (kind_reclaim[kind]) {
			struct hent *k = hget(&reclaim, pid);
			if (k && k->a == kind + 1)
				hdel(&reclaim, k);
		}
		struct stall s = { start, (int64_t)(r->ts - (uint64_t)start), r->val,
				   kind_reclaim[kind] && have_scanned ? scanned : -1, sseq++, r->pid, kind,
				   (uint8_t)overlaps_loss(start, end) };
		PUSH(stalls, nstalls, capstalls, s);
	}
	unpaired_begins += (long long)open.n;
	int tk = -1;
	for (int k = 0; k < MAXKIND; k++)
		if (kind_name[k] && !strcmp(kind_name[k], "throttled"))
			tk = k;
	if (tk >= 0)
		for (size_t i = 0; i < nthrs; i++) {
			int64_t start = (int64_t)(thrs[i].ts - (uint64_t)(thrs[i].usec * 1000));
			struct stall s = { start, thrs[i].usec * 1000, -1, -1, sseq++, thrs[i].pid, (uint8_t)tk,
					   (uint8_t)overlaps_loss(start, (int64_t)thrs[i].ts) };
			PUSH(stalls, nstalls, capstalls, s);
		}
	free(rels);
	rels = NULL;
	sort_stalls(stalls, nstalls, 2 * 64);
}

/* digits of v at p (backwards from p): returns the new start */
static inline char *fmt_int(char *p, int64_t v)
{
	static const char d2[201] =
		"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
		"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	while (u >= 100) {
		unsigned r = (unsigned)(u % 100);
		u /= 100;
		p -= 2;
		memcpy(p, d2 + 2 * r, 2);
	}
	if (u >= 10) {
		p -= 2;
		memcpy(p, d2 + 2 * u, 2);
	} else {
		*--p = (char)('0' + u);
	}
	if (v < 0)
		*--p = '-';
	return p;
}

static inline char *put_int(char *q, int64_t v)
{
	char tmp[24], *p = fmt_int(tmp + sizeof(tmp), v);
	size_t n = (size_t)(tmp + sizeof(tmp) - p);
	memcpy(q, p, n);
	return q + n;
}

/* "who<TAB>pid<TAB>comm<TAB>" of a pid, made once per pid */
static struct hmap pidline;     /* pid → offset into lines, (length << 8) | who code */
static char *lines;
static size_t nlines, caplines;

static const char *pid_prefix(int32_t pid, size_t *len, int *wc)
{
	int existed;
	struct hent *h = hput(&pidline, (uint64_t)(uint32_t)pid, &existed);
	if (!existed) {
		const char *c = comm(pid);
		int code = who_code(pid, c);
		const char *w = who_name(code);
		size_t need = strlen(w) + strlen(c) + 40;
		if (nlines + need > caplines) {
			caplines = (nlines + need) * 2;
			lines = xrealloc(lines, caplines);
		}
		char *q = lines + nlines;
		memcpy(q, w, strlen(w));
		q += strlen(w);
		*q++ = '\t';
		q = put_int(q, pid);
		*q++ = '\t';
		if (!*c)
			*q++ = '-';
		for (; *c; c++)
			*q++ = (*c == '\t' || *c == '\n') ? ' ' : *c;
		*q++ = '\t';
		h->a = (int64_t)nlines;
		h->b = (int64_t)((size_t)(q - (lines + nlines)) << 8) | code;
		nlines = (size_t)(q - lines);
	}
	*len = (size_t)h->b >> 8;
	*wc = (int)(h->b & 0xff);
	return lines + h->a;
}

static void write_stalls(void)
{
	FILE *f = fopen(stalls_path, "w"), *t = NULL;
	if (!f)
		die("cannot write", stalls_path);
	if (table_path && !(t = fopen(table_path, "wb")))
		die("cannot write", table_path);
	struct obuf o = { f, xrealloc(NULL, OBUF), 0 };
	struct obuf ot = { t, t ? xrealloc(NULL, OBUF) : NULL, 0 };
	static const char header[] = "kind\twho\tpid\tcomm\tstart_ns\tdur_ns\treclaimed\tscanned\tlost\n";
	size_t klen[MAXKIND];
	for (int k = 0; k < MAXKIND; k++)
		klen[k] = kind_name[k] ? strlen(kind_name[k]) : 0;
	hinit(&pidline, 1024);
	oput(&o, header, sizeof(header) - 1);
	for (size_t i = 0; i < nstalls; i++) {
		struct stall *s = &stalls[i];
		size_t plen;
		int wc;
		const char *pre = pid_prefix(s->pid, &plen, &wc);
		if (t) {
			uint8_t row[16] = { 0 };
			memcpy(row, &s->dur, 8);
			row[8] = s->kind;
			row[9] = (uint8_t)wc;
			row[10] = s->lost;
			oput(&ot, (const char *)row, 16);
		}
		if (o.n + plen + klen[s->kind] + 128 > OBUF)
			oflush(&o);
		if (plen + klen[s->kind] + 128 > OBUF)
			die("a comm too long for a stalls line", NULL);
		char *q = o.b + o.n;
		memcpy(q, kind_name[s->kind], klen[s->kind]);
		q += klen[s->kind];
		*q++ = '\t';
		memcpy(q, pre, plen);
		q += plen;
		q = put_int(q, s->start);
		*q++ = '\t';
		q = put_int(q, s->dur);
		*q++ = '\t';
		q = put_int(q, s->reclaimed);
		*q++ = '\t';
		q = put_int(q, s->scanned);
		*q++ = '\t';
		*q++ = s->lost ? '1' : '0';
		*q++ = '\n';
		o.n = (size_t)(q - o.b);
	}
	oflush(&o);
	if (fclose(f))
		die("cannot write", stalls_path);
	free(o.b);
	if (t) {
		oflush(&ot);
		if (fclose(t))
			die("cannot write", table_path);
		free(ot.b);
	}
}

static void write_stats(void)
{
	FILE *f = stats_path ? fopen(stats_path, "w") : stdout;
	long long lost_stalls = 0;
	if (!f)
		die("cannot write", stats_path);
	for (size_t i = 0; i < nstalls; i++)
		lost_stalls += stalls[i].lost;
	for (int i = 0; i < nevents; i++)
		fprintf(f, "event %d %lld\n", events[i].order, events[i].count);
	fprintf(f, "unknown %lld\ntruncated %lld\n", unknown, truncated);
	for (int c = 0; c < ncpus; c++) {
		struct cpustat *s = &cpus[c];
		fprintf(f, "cpu %d pages %lld records %lld padding %lld time_extend %lld abs_timestamp %lld "
			"big_records %lld lost_pages %lld lost_events %lld lost_unstored %lld\n", s->cpu, s->pages,
			s->records, s->padding, s->extend, s->abs_ts, s->big, s->lost_pages, s->lost_events,
			s->lost_unstored);
	}
	for (size_t i = 0; i < nwins; i++)
		fprintf(f, "window %llu %llu\n", (unsigned long long)wins[i].lo, (unsigned long long)wins[i].hi);
	fprintf(f, "extfrag %lld %lld %lld\n", extfrag_n, extfrag_change, extfrag_frag);
	for (int i = 0; i < nevents; i++)
		if (events[i].has_gfp)
			fprintf(f, "high_order %d %lld %lld\n", events[i].order, events[i].high, events[i].spec);
		else if (events[i].has_ord)
			fprintf(f, "high_order %d %lld\n", events[i].order, events[i].high);
	fprintf(f, "unpaired %lld %lld\n", unpaired_begins, unpaired_ends);
	fprintf(f, "stalls %zu %lld\n", nstalls, lost_stalls);
	fprintf(f, "kept %zu %zu %zu\n", nrels, nforks, nthrs);
	fprintf(f, "seconds %.6f %.6f %.6f\n", t_walk, t_pair, t_write);
	/* this program's own peak RSS (VmHWM is per address space: getrusage's maxrss would include
	   the parent's pages from before exec) */
	FILE *st = fopen("/proc/self/status", "r");
	char line[256];
	while (st && fgets(line, sizeof(line), st))
		if (!strncmp(line, "VmHWM:", 6))
			fprintf(f, "peak_rss_kb %lld\n", atoll(line + 6));
	if (st)
		fclose(st);
	if (f != stdout && fclose(f))
		die("cannot write", stats_path);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		die("usage: trace_decode SPEC", NULL);
	read_spec(argv[1]);
	if (dump_dir)
		for (int i = 0; i < nevents; i++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/ev%d.bin", dump_dir, events[i].order);
			events[i].dump = fopen(path, "wb");
			if (!events[i].dump)
				die("cannot write", path);
		}
	read_comms();
	read_workload();
	double t0 = now();
	for (int c = 0; c < ncpus; c++)
		walk_cpu(&cpus[c]);
	t_walk = now() - t0;
	for (int i = 0; i < nevents; i++)
		if (events[i].dump && fclose(events[i].dump))
			die("cannot write a dump file", strerror(errno));
	t0 = now();
	follow_forks();
	merge_windows();
	pair();
	t_pair = now() - t0;
	t0 = now();
	if (stalls_path)
		write_stalls();
	t_write = now() - t0;
	write_stats();
	return 0;
}
