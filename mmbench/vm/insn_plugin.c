/*
 * insn_plugin.c: a QEMU TCG plugin that counts the instructions each guest vCPU executes, in user
 * mode, in kernel mode and per group of kernel functions, and logs the counts whenever the guest
 * asks for them.
 *
 * Loaded by mmbench's VM runner (vm/qemu.py) as
 *     -plugin insn_plugin.so,out=LOG[,symbols=RANGES][,marks=0xADDR]
 * LOG gets one line per request and one at exit (format below); RANGES is the kernel's function
 * groups (kbuild/symbols.py writes it from the built kernel: "# groups G", then "GROUP START END"
 * per line, hex addresses, GROUP 1..G, G <= 15).  The guest asks for counts by executing code at MARKS + 16 * ID
 * (ID 0..4095) in user mode: monitors/insn_count.py maps a page of `ret` instructions there, so
 * the request costs the guest one call, and the ID says which request a line answers.
 *
 * Counting is per translation block: when a block starts, its instruction count is added to the
 * vCPU's counters (user or kernel by the block's address: x86-64 Linux runs the kernel in the
 * upper half of the address space), and for kernel blocks to the groups its instructions belong
 * to.  A block cut short by an exception (a page fault in the middle of it) has counted the
 * instructions after the faulting one too: deterministic, and a few per fault.
 *
 * Log lines (all numbers decimal):
 *     mmbench-insn 1 groups=G
 *     mark ID VCPU N  U0 K0 g1..gG  U1 K1 g1..gG ...    (N vCPUs, each: user, kernel, G groups)
 *     end N  U0 K0 g1..gG ...  overflow=M               (at QEMU's exit)
 *
 * Written against QEMU's documented plugin API (docs/devel/tcg-plugins.rst, version 1: QEMU 4.2
 * to 8.x, Debian 12's 7.2).  QEMU installs no header for it, so the few declarations used are
 * here.  Build: mmbench builds it as a shared library (run/build.py library_for).
 */

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MMB_PLUGIN_API
#define MMB_PLUGIN_API 1
#endif

typedef uint64_t mmb_plugin_id;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef void (*mmb_tb_trans_fn)(mmb_plugin_id id, struct qemu_plugin_tb *tb);
typedef void (*mmb_exec_fn)(unsigned int vcpu, void *udata);
typedef void (*mmb_vcpu_fn)(mmb_plugin_id id, unsigned int vcpu);
typedef void (*mmb_atexit_fn)(mmb_plugin_id id, void *udata);

void qemu_plugin_register_vcpu_tb_trans_cb(mmb_plugin_id id, mmb_tb_trans_fn cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, mmb_exec_fn cb, int flags, void *udata);
void qemu_plugin_register_vcpu_init_cb(mmb_plugin_id id, mmb_vcpu_fn cb);
void qemu_plugin_register_atexit_cb(mmb_plugin_id id, mmb_atexit_fn cb, void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

__attribute__((visibility("default"))) int qemu_plugin_version = MMB_PLUGIN_API;

#define MAX_VCPUS 256
#define MAX_GROUPS 15            /* group numbers 1..15: 4 bits in a block's packed counts */
#define KERNEL_START 0xffff800000000000ULL
#define MARK_STRIDE 16
#define MARK_SLOTS 4096
#define NO_REGS 0

struct vcpu_counts {
    uint64_t user;
    uint64_t kernel;
    uint64_t group[MAX_GROUPS + 1];
};

struct range {
    uint64_t start, end;
    unsigned group;
};

static struct vcpu_counts counts[MAX_VCPUS];
static unsigned n_vcpus;
static unsigned n_groups;
static struct range *ranges;
static size_t n_ranges;
static uint64_t mark_base;
static uint64_t overflow;       /* instructions of blocks spanning more groups than a block packs */
static FILE *out;

/* A block's counts packed into its callback's user data, so nothing is allocated per block:
 * bit 63 kernel, bits 0-9 the block's instructions (TCG blocks hold at most 512), then up to
 * three (group:4, count:10) slots from bit 10; instructions in no group are kernel, ungrouped. */
#define PACK_KERNEL (1ULL << 63)
#define PACK_SLOTS 3

static unsigned group_of(uint64_t pc)
{
    size_t lo = 0, hi = n_ranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pc < ranges[mid].start)
            hi = mid;
        else if (pc >= ranges[mid].end)
            lo = mid + 1;
        else
            return ranges[mid].group;
    }
    return 0;
}

static void count_block(unsigned int vcpu, void *udata)
{
    uint64_t packed = (uint64_t)(uintptr_t)udata;
    unsigned n = packed & 0x3ff;
    if (vcpu >= MAX_VCPUS)
        return;
    struct vcpu_counts *c = &counts[vcpu];
    if (!(packed & PACK_KERNEL)) {
        c->user += n;
        return;
    }
    c->kernel += n;
    for (int s = 0; s < PACK_SLOTS; s++) {
        unsigned slot = (packed >> (10 + 14 * s)) & 0x3fff;
        if (!slot)
            break;
        c->group[slot >> 10] += slot & 0x3ff;
    }
}

static void write_counts(void)
{
    fprintf(out, " %u", n_vcpus);
    for (unsigned v = 0; v < n_vcpus; v++) {
        fprintf(out, "  %" PRIu64 " %" PRIu64, counts[v].user, counts[v].kernel);
        for (unsigned g = 1; g <= n_groups; g++)
            fprintf(out, " %" PRIu64, counts[v].group[g]);
    }
}

static void on_mark(unsigned int vcpu, void *udata)
{
    fprintf(out, "mark %u %u", (unsigned)(uintptr_t)udata - 1, vcpu);
    write_counts();
    fputc('\n', out);
    fflush(out);
}

static void on_vcpu_init(mmb_plugin_id id, unsigned int vcpu)
{
    (void)id;
    if (vcpu < MAX_VCPUS && vcpu + 1 > n_vcpus)
        n_vcpus = vcpu + 1;
}

static void on_translate(mmb_plugin_id id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t pc = qemu_plugin_tb_vaddr(tb);
    uint64_t packed = n & 0x3ff;

    if (pc >= KERNEL_START) {
        unsigned per_group[MAX_GROUPS + 1] = {0};
        packed |= PACK_KERNEL;
        if (n_ranges) {
            for (size_t i = 0; i < n; i++)
                per_group[group_of(qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i)))]++;
            int s = 0;
            for (unsigned g = 1; g <= n_groups; g++) {
                if (!per_group[g])
                    continue;
                if (s == PACK_SLOTS) {
                    overflow += per_group[g];
                    continue;
                }
                packed |= (uint64_t)((g << 10) | (per_group[g] & 0x3ff)) << (10 + 14 * s);
                s++;
            }
        }
    } else if (mark_base && pc >= mark_base && pc < mark_base + (uint64_t)MARK_STRIDE * MARK_SLOTS
               && (pc - mark_base) % MARK_STRIDE == 0) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, NO_REGS,
                                             (void *)(uintptr_t)((pc - mark_base) / MARK_STRIDE + 1));
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, count_block, NO_REGS, (void *)(uintptr_t)packed);
}

static void at_qemu_exit(mmb_plugin_id id, void *udata)
{
    (void)id;
    (void)udata;
    fprintf(out, "end");
    write_counts();
    fprintf(out, " overflow=%" PRIu64 "\n", overflow);
    fclose(out);
    out = NULL;
}

static int by_start(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Errors go to QEMU's stderr, which mmbench keeps with the guest's console (qemu_plugin_outs()
 * writes only to QEMU's log, off by default). */
static void say(const char *what, const char *arg)
{
    fprintf(stderr, "mmbench insn plugin: %s%s\n", what, arg);
}

static int load_ranges(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[256];
    size_t cap = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned g;
        uint64_t s, e;
        if (sscanf(line, "# groups %u", &g) == 1 && g <= MAX_GROUPS) {
            n_groups = g;
            continue;
        }
        if (line[0] == '#' || sscanf(line, "%u %" SCNx64 " %" SCNx64, &g, &s, &e) != 3)
            continue;
        if (g < 1 || g > MAX_GROUPS || e <= s)
            continue;
        if (n_ranges == cap) {
            cap = cap ? cap * 2 : 1024;
            struct range *r = realloc(ranges, cap * sizeof *r);
            if (!r) {
                fclose(f);
                return -1;
            }
            ranges = r;
        }
        ranges[n_ranges++] = (struct range){s, e, g};
        if (g > n_groups)
            n_groups = g;
    }
    fclose(f);
    qsort(ranges, n_ranges, sizeof *ranges, by_start);
    return 0;
}

__attribute__((visibility("default")))
int qemu_plugin_install(mmb_plugin_id id, const void *info, int argc, char **argv)
{
    const char *out_path = NULL;
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "out=", 4))
            out_path = argv[i] + 4;
        else if (!strncmp(argv[i], "symbols=", 8)) {
            if (load_ranges(argv[i] + 8)) {
                say("cannot read the symbols file ", argv[i] + 8);
                return -1;
            }
        } else if (!strncmp(argv[i], "marks=", 6))
            mark_base = strtoull(argv[i] + 6, NULL, 0);
        else {
            say("unknown argument ", argv[i]);
            return -1;
        }
    }
    if (!out_path) {
        say("needs out=FILE", "");
        return -1;
    }
    out = fopen(out_path, "w");
    if (!out) {
        say("cannot write ", out_path);
        return -1;
    }
    fprintf(out, "mmbench-insn 1 groups=%u\n", n_groups);
    fflush(out);
    qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, at_qemu_exit, NULL);
    return 0;
}
