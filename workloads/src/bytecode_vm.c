/* bytecode_vm: a small stack-based bytecode interpreter (switch dispatch).
 *
 * A tiny assembler with labels builds five programs -- an arithmetic loop,
 * recursive Fibonacci through CALL/RET, Collatz step counts, a prime sieve in
 * global memory, and a GCD/division mix calling a function -- and the VM runs
 * them. Each result is compared with the same computation written in C.
 * Values are 64-bit; immediates are 32-bit little-endian. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op {
    OP_HALT, OP_PUSH, OP_POP, OP_DUP, OP_SWAP, OP_OVER,
    OP_LOAD, OP_STORE, OP_GLOAD, OP_GSTORE,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_NEG,
    OP_AND, OP_OR, OP_XOR, OP_SHL, OP_SHR,
    OP_LT, OP_LE, OP_EQ, OP_NE, OP_NOT,
    OP_JMP, OP_JZ, OP_JNZ, OP_CALL, OP_RET, OP_EMIT,
    OP_COUNT
};

/* ---------- assembler ---------- */

#define CODE_CAP 4096
#define MAX_LABELS 64
#define MAX_FIXUPS 256

struct assembler {
    unsigned char code[CODE_CAP];
    int len;
    int label_at[MAX_LABELS];
    int nlabels;
    int fixup_pos[MAX_FIXUPS], fixup_label[MAX_FIXUPS];
    int nfixups;
};

static void emit_byte(struct assembler *a, int b)
{
    if (a->len >= CODE_CAP) exit(2);
    a->code[a->len++] = (unsigned char)b;
}

static void emit_imm(struct assembler *a, int v)
{
    unsigned u = (unsigned)v;
    for (int i = 0; i < 4; i++) emit_byte(a, (int)((u >> (8 * i)) & 0xffu));
}

static void op(struct assembler *a, enum op o) { emit_byte(a, o); }

static void push(struct assembler *a, int v)
{
    emit_byte(a, OP_PUSH);
    emit_imm(a, v);
}

static void local(struct assembler *a, enum op o, int slot)
{
    emit_byte(a, o);
    emit_byte(a, slot);
}

static int new_label(struct assembler *a)
{
    a->label_at[a->nlabels] = -1;
    return a->nlabels++;
}

static void place(struct assembler *a, int label) { a->label_at[label] = a->len; }

static void jump(struct assembler *a, enum op o, int label)
{
    emit_byte(a, o);
    a->fixup_pos[a->nfixups] = a->len;
    a->fixup_label[a->nfixups++] = label;
    emit_imm(a, 0);
}

static void call(struct assembler *a, int label, int nargs)
{
    jump(a, OP_CALL, label);
    emit_byte(a, nargs);
}

static void resolve_labels(struct assembler *a)
{
    for (int i = 0; i < a->nfixups; i++) {
        int target = a->label_at[a->fixup_label[i]];
        if (target < 0) exit(3);
        unsigned u = (unsigned)target;
        for (int k = 0; k < 4; k++)
            a->code[a->fixup_pos[i] + k] = (unsigned char)((u >> (8 * k)) & 0xffu);
    }
}

/* ---------- virtual machine ---------- */

#define STACK_CAP 1024
#define FRAME_CAP 512
#define NLOCALS 8
#define GLOBALS 65536

struct frame {
    long locals[NLOCALS];
    int ret_pc;
};

struct vm {
    long stack[STACK_CAP];
    struct frame frames[FRAME_CAP];
    long globals[GLOBALS];
    unsigned long long emitted;
    long nemitted;
    long steps;
};

static int read_imm(const unsigned char *c, int pc)
{
    unsigned u = (unsigned)c[pc] | (unsigned)c[pc + 1] << 8 | (unsigned)c[pc + 2] << 16 |
                 (unsigned)c[pc + 3] << 24;
    return (int)u;
}

/* Returns 0 on HALT, a negative code on a VM fault. */
static int run(struct vm *vm, const unsigned char *code)
{
    int pc = 0, sp = 0, fp = 0;
    long steps = 0;
    memset(&vm->frames[0], 0, sizeof vm->frames[0]);
    for (;;) {
        steps++;
        int o = code[pc++];
        switch (o) {
        case OP_HALT:
            vm->steps += steps;
            return 0;
        case OP_PUSH:
            vm->stack[sp++] = read_imm(code, pc);
            pc += 4;
            break;
        case OP_POP: sp--; break;
        case OP_DUP: vm->stack[sp] = vm->stack[sp - 1]; sp++; break;
        case OP_SWAP: {
            long t = vm->stack[sp - 1];
            vm->stack[sp - 1] = vm->stack[sp - 2];
            vm->stack[sp - 2] = t;
            break;
        }
        case OP_OVER: vm->stack[sp] = vm->stack[sp - 2]; sp++; break;
        case OP_LOAD: vm->stack[sp++] = vm->frames[fp].locals[code[pc++]]; break;
        case OP_STORE: vm->frames[fp].locals[code[pc++]] = vm->stack[--sp]; break;
        case OP_GLOAD: {
            unsigned long i = (unsigned long)vm->stack[sp - 1];
            if (i >= GLOBALS) return -1;
            vm->stack[sp - 1] = vm->globals[i];
            break;
        }
        case OP_GSTORE: {
            long v = vm->stack[--sp];
            unsigned long i = (unsigned long)vm->stack[--sp];
            if (i >= GLOBALS) return -1;
            vm->globals[i] = v;
            break;
        }
#define BINARY(OPC, EXPR)                        \
        case OPC: {                              \
            long b = vm->stack[--sp];            \
            long a = vm->stack[sp - 1];          \
            vm->stack[sp - 1] = (EXPR);          \
            break;                               \
        }
        BINARY(OP_ADD, (long)((unsigned long)a + (unsigned long)b))
        BINARY(OP_SUB, (long)((unsigned long)a - (unsigned long)b))
        BINARY(OP_MUL, (long)((unsigned long)a * (unsigned long)b))
        BINARY(OP_AND, a & b)
        BINARY(OP_OR, a | b)
        BINARY(OP_XOR, a ^ b)
        BINARY(OP_SHL, (long)((unsigned long)a << (b & 63)))
        BINARY(OP_SHR, a >> (b & 63))
        BINARY(OP_LT, a < b)
        BINARY(OP_LE, a <= b)
        BINARY(OP_EQ, a == b)
        BINARY(OP_NE, a != b)
#undef BINARY
        case OP_DIV:
        case OP_MOD: {
            long b = vm->stack[--sp];
            long a = vm->stack[sp - 1];
            if (b == 0) return -2;
            vm->stack[sp - 1] = o == OP_DIV ? a / b : a % b;
            break;
        }
        case OP_NEG: vm->stack[sp - 1] = (long)(0ul - (unsigned long)vm->stack[sp - 1]); break;
        case OP_NOT: vm->stack[sp - 1] = !vm->stack[sp - 1]; break;
        case OP_JMP: pc = read_imm(code, pc); break;
        case OP_JZ: pc = vm->stack[--sp] == 0 ? read_imm(code, pc) : pc + 4; break;
        case OP_JNZ: pc = vm->stack[--sp] != 0 ? read_imm(code, pc) : pc + 4; break;
        case OP_CALL: {
            int target = read_imm(code, pc);
            int nargs = code[pc + 4];
            if (fp + 1 >= FRAME_CAP) return -3;
            struct frame *f = &vm->frames[++fp];
            for (int i = nargs - 1; i >= 0; i--) f->locals[i] = vm->stack[--sp];
            f->ret_pc = pc + 5;
            pc = target;
            break;
        }
        case OP_RET:
            pc = vm->frames[fp--].ret_pc;
            break;
        case OP_EMIT:
            vm->emitted = vm->emitted * 0x100000001b3ull ^ (unsigned long long)vm->stack[--sp];
            vm->nemitted++;
            break;
        default:
            return -4;
        }
        if (sp < 0 || sp >= STACK_CAP - 1) return -5;
    }
}

/* ---------- programs ---------- */

/* acc = sum over i < n of ((i*i) % 7 ^ i) */
static void prog_loop(struct assembler *a, int n)
{
    int top = new_label(a), end = new_label(a);
    push(a, 0); local(a, OP_STORE, 0);
    push(a, 0); local(a, OP_STORE, 1);
    place(a, top);
    local(a, OP_LOAD, 0); push(a, n); op(a, OP_LT); jump(a, OP_JZ, end);
    local(a, OP_LOAD, 1);
    local(a, OP_LOAD, 0); op(a, OP_DUP); op(a, OP_MUL); push(a, 7); op(a, OP_MOD);
    local(a, OP_LOAD, 0); op(a, OP_XOR); op(a, OP_ADD); local(a, OP_STORE, 1);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 0);
    jump(a, OP_JMP, top);
    place(a, end);
    local(a, OP_LOAD, 1); op(a, OP_EMIT); op(a, OP_HALT);
}

static long native_loop(int n)
{
    long acc = 0;
    for (long i = 0; i < n; i++) acc += ((i * i) % 7) ^ i;
    return acc;
}

static void prog_fib(struct assembler *a, int n)
{
    int fib = new_label(a), rec = new_label(a);
    push(a, n); call(a, fib, 1); op(a, OP_EMIT); op(a, OP_HALT);
    place(a, fib);
    local(a, OP_LOAD, 0); push(a, 2); op(a, OP_LT); jump(a, OP_JZ, rec);
    local(a, OP_LOAD, 0); op(a, OP_RET);
    place(a, rec);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_SUB); call(a, fib, 1);
    local(a, OP_LOAD, 0); push(a, 2); op(a, OP_SUB); call(a, fib, 1);
    op(a, OP_ADD); op(a, OP_RET);
}

static long native_fib(int n) { return n < 2 ? n : native_fib(n - 1) + native_fib(n - 2); }

/* For n in 1..limit: steps to reach 1; emits the total and the maximum. */
static void prog_collatz(struct assembler *a, int limit)
{
    int outer = new_label(a), inner = new_label(a), even = new_label(a), next = new_label(a);
    int done = new_label(a), keep = new_label(a), end = new_label(a);
    push(a, 1); local(a, OP_STORE, 0);           /* n */
    push(a, 0); local(a, OP_STORE, 3);           /* max */
    push(a, 0); local(a, OP_STORE, 4);           /* total */
    place(a, outer);
    local(a, OP_LOAD, 0); push(a, limit); op(a, OP_LE); jump(a, OP_JZ, end);
    local(a, OP_LOAD, 0); local(a, OP_STORE, 1); /* x = n */
    push(a, 0); local(a, OP_STORE, 2);           /* steps = 0 */
    place(a, inner);
    local(a, OP_LOAD, 1); push(a, 1); op(a, OP_NE); jump(a, OP_JZ, done);
    local(a, OP_LOAD, 1); push(a, 2); op(a, OP_MOD); jump(a, OP_JZ, even);
    local(a, OP_LOAD, 1); push(a, 3); op(a, OP_MUL); push(a, 1); op(a, OP_ADD);
    local(a, OP_STORE, 1); jump(a, OP_JMP, next);
    place(a, even);
    local(a, OP_LOAD, 1); push(a, 1); op(a, OP_SHR); local(a, OP_STORE, 1);
    place(a, next);
    local(a, OP_LOAD, 2); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 2);
    jump(a, OP_JMP, inner);
    place(a, done);
    local(a, OP_LOAD, 4); local(a, OP_LOAD, 2); op(a, OP_ADD); local(a, OP_STORE, 4);
    local(a, OP_LOAD, 2); local(a, OP_LOAD, 3); op(a, OP_LE); jump(a, OP_JNZ, keep);
    local(a, OP_LOAD, 2); local(a, OP_STORE, 3);
    place(a, keep);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 0);
    jump(a, OP_JMP, outer);
    place(a, end);
    local(a, OP_LOAD, 4); op(a, OP_EMIT);
    local(a, OP_LOAD, 3); op(a, OP_EMIT);
    op(a, OP_HALT);
}

static void native_collatz(int limit, long *total, long *max)
{
    *total = 0;
    *max = 0;
    for (long n = 1; n <= limit; n++) {
        long x = n, steps = 0;
        while (x != 1) {
            x = x % 2 ? 3 * x + 1 : x >> 1;
            steps++;
        }
        *total += steps;
        if (steps > *max) *max = steps;
    }
}

/* Sieve of Eratosthenes in globals[0..n); emits the prime count and sum. */
static void prog_sieve(struct assembler *a, int n)
{
    int clear = new_label(a), cleared = new_label(a), outer = new_label(a);
    int inner = new_label(a), skip = new_label(a), sieved = new_label(a);
    int count = new_label(a), notprime = new_label(a), end = new_label(a);
    push(a, 0); local(a, OP_STORE, 0);
    place(a, clear);
    local(a, OP_LOAD, 0); push(a, n); op(a, OP_LT); jump(a, OP_JZ, cleared);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_GSTORE);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 0);
    jump(a, OP_JMP, clear);
    place(a, cleared);
    push(a, 2); local(a, OP_STORE, 0);                    /* p = 2 */
    place(a, outer);
    local(a, OP_LOAD, 0); op(a, OP_DUP); op(a, OP_MUL); push(a, n); op(a, OP_LT);
    jump(a, OP_JZ, sieved);
    local(a, OP_LOAD, 0); op(a, OP_GLOAD); jump(a, OP_JZ, skip);
    local(a, OP_LOAD, 0); op(a, OP_DUP); op(a, OP_MUL); local(a, OP_STORE, 1); /* m = p*p */
    place(a, inner);
    local(a, OP_LOAD, 1); push(a, n); op(a, OP_LT); jump(a, OP_JZ, skip);
    local(a, OP_LOAD, 1); push(a, 0); op(a, OP_GSTORE);
    local(a, OP_LOAD, 1); local(a, OP_LOAD, 0); op(a, OP_ADD); local(a, OP_STORE, 1);
    jump(a, OP_JMP, inner);
    place(a, skip);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 0);
    jump(a, OP_JMP, outer);
    place(a, sieved);
    push(a, 0); local(a, OP_STORE, 2);                    /* count */
    push(a, 0); local(a, OP_STORE, 3);                    /* sum */
    push(a, 2); local(a, OP_STORE, 0);
    place(a, count);
    local(a, OP_LOAD, 0); push(a, n); op(a, OP_LT); jump(a, OP_JZ, end);
    local(a, OP_LOAD, 0); op(a, OP_GLOAD); jump(a, OP_JZ, notprime);
    local(a, OP_LOAD, 2); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 2);
    local(a, OP_LOAD, 3); local(a, OP_LOAD, 0); op(a, OP_ADD); local(a, OP_STORE, 3);
    place(a, notprime);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 0);
    jump(a, OP_JMP, count);
    place(a, end);
    local(a, OP_LOAD, 2); op(a, OP_EMIT);
    local(a, OP_LOAD, 3); op(a, OP_EMIT);
    op(a, OP_HALT);
}

static void native_sieve(int n, long *count, long *sum)
{
    unsigned char *s = malloc((size_t)n);
    memset(s, 1, (size_t)n);
    for (long p = 2; p * p < n; p++)
        if (s[p])
            for (long m = p * p; m < n; m += p) s[m] = 0;
    *count = 0;
    *sum = 0;
    for (long i = 2; i < n; i++)
        if (s[i]) {
            (*count)++;
            *sum += i;
        }
    free(s);
}

/* sum over i in 1..n of gcd(u, v) + u / (v % 13 + 1), with gcd a VM function. */
static void prog_gcd(struct assembler *a, int n)
{
    int gcd = new_label(a), gloop = new_label(a), gdone = new_label(a);
    int top = new_label(a), end = new_label(a);
    push(a, 1); local(a, OP_STORE, 0);
    push(a, 0); local(a, OP_STORE, 1);
    place(a, top);
    local(a, OP_LOAD, 0); push(a, n); op(a, OP_LE); jump(a, OP_JZ, end);
    /* u = i * 7919 % 10007 + 1 -> local 2; v = i * 104729 % 10009 + 1 -> local 3 */
    local(a, OP_LOAD, 0); push(a, 7919); op(a, OP_MUL); push(a, 10007); op(a, OP_MOD);
    push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 2);
    local(a, OP_LOAD, 0); push(a, 104729); op(a, OP_MUL); push(a, 10009); op(a, OP_MOD);
    push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 3);
    local(a, OP_LOAD, 1);
    local(a, OP_LOAD, 2); local(a, OP_LOAD, 3); call(a, gcd, 2); op(a, OP_ADD);
    local(a, OP_LOAD, 2); local(a, OP_LOAD, 3); push(a, 13); op(a, OP_MOD); push(a, 1);
    op(a, OP_ADD); op(a, OP_DIV); op(a, OP_ADD);
    local(a, OP_STORE, 1);
    local(a, OP_LOAD, 0); push(a, 1); op(a, OP_ADD); local(a, OP_STORE, 0);
    jump(a, OP_JMP, top);
    place(a, end);
    local(a, OP_LOAD, 1); op(a, OP_EMIT); op(a, OP_HALT);
    /* gcd(a, b): while b != 0: (a, b) = (b, a % b) */
    place(a, gcd);
    place(a, gloop);
    local(a, OP_LOAD, 1); jump(a, OP_JZ, gdone);
    local(a, OP_LOAD, 1); local(a, OP_LOAD, 0); local(a, OP_LOAD, 1); op(a, OP_MOD);
    local(a, OP_STORE, 1); local(a, OP_STORE, 0);
    jump(a, OP_JMP, gloop);
    place(a, gdone);
    local(a, OP_LOAD, 0); op(a, OP_RET);
}

static long native_gcd_sum(int n)
{
    long sum = 0;
    for (long i = 1; i <= n; i++) {
        long u = i * 7919 % 10007 + 1, v = i * 104729 % 10009 + 1;
        long x = u, y = v;
        while (y) {
            long t = x % y;
            x = y;
            y = t;
        }
        sum += x + u / (v % 13 + 1);
    }
    return sum;
}

static struct vm machine;

static int run_program(const char *name, void (*build)(struct assembler *, int), int arg,
                       const long *expect, int nexpect, unsigned long long *check)
{
    static struct assembler a;
    memset(&a, 0, sizeof a);
    build(&a, arg);
    resolve_labels(&a);
    unsigned long long expect_hash = 0;
    for (int i = 0; i < nexpect; i++)
        expect_hash = expect_hash * 0x100000001b3ull ^ (unsigned long long)expect[i];
    machine.emitted = 0;
    machine.nemitted = 0;
    long before = machine.steps;
    int rc = run(&machine, a.code);
    int ok = rc == 0 && machine.nemitted == nexpect && machine.emitted == expect_hash;
    printf("%-8s arg %6d: %4d bytes of code, %9ld steps, result %ld, %s\n", name, arg, a.len,
           machine.steps - before, expect[0], ok ? "matches C" : "MISMATCH");
    *check = *check * 0x9e3779b97f4a7c15ull + machine.emitted;
    return ok;
}

int main(void)
{
    unsigned long long check = 0;
    int ok = 1;
    long e[2];

    e[0] = native_loop(60000);
    ok &= run_program("loop", prog_loop, 60000, e, 1, &check);
    e[0] = native_fib(22);
    ok &= run_program("fib", prog_fib, 22, e, 1, &check);
    native_collatz(1000, &e[0], &e[1]);
    ok &= run_program("collatz", prog_collatz, 1000, e, 2, &check);
    native_sieve(25000, &e[0], &e[1]);
    ok &= run_program("sieve", prog_sieve, 25000, e, 2, &check);
    e[0] = native_gcd_sum(10000);
    ok &= run_program("gcd", prog_gcd, 10000, e, 1, &check);

    printf("total steps %ld\n", machine.steps);
    printf("checksum bytecode_vm %016llx\n", check);
    return ok ? 0 : 1;
}
