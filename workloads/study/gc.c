/* gc.c -- a mutator on a mark-sweep heap whose reference stores carry profile tag 1: the
 * guest of the RPA paper's concurrent-GC application (Figure 2c, §5). Every store of a
 * reference into a root or an object field goes through OUTCROP_STORE_REF (one tagged `sd`),
 * so the query
 *
 *     for opSTORE 1 always collect op1 op2 op3;
 *     if op1 <> 0 then send 3 stop else stop;
 *
 * sees every non-null reference store, and a collector on a service thread can keep its own
 * picture of the heap without a software store barrier. The guest also collects for itself
 * (stop-the-world mark-sweep when its free list runs out), which keeps it honest as a
 * program: it prints what it allocated, collected and what is live at the end.
 *
 * Heap layout (what `outcrop run --gc-heap gc_arena:gc_roots:64` tells the collector):
 * `gc_arena`, 4096 objects of 64 bytes (a header word, then 7 reference slots), and
 * `gc_roots`, 32 root slots. Usage: gc [OPS [zero]] (default 400000 mutator operations).
 * With `zero`, a new object's fields are cleared by plain stores, as a JVM's allocator
 * zeroes memory, instead of by null reference stores through the tagged barrier (the
 * collector needs neither: a cleared field holds no reference).
 * Study program of docs/rpa.md; runs unchanged under qemu (the tags are a non-allocated
 * section). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../outcrop.h"

#define OBJECTS 4096
#define FIELDS 7
#define ROOTS 32

typedef struct Obj {
    uint64_t header; /* bit 0 marked, bit 1 allocated; payload in the upper bits */
    struct Obj *f[FIELDS];
} Obj;

Obj gc_arena[OBJECTS] __attribute__((aligned(64)));
Obj *gc_roots[ROOTS];

static Obj *free_list;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned long allocated, collections, freed_total, ref_stores;
static int plain_zeroing;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void store_ref(Obj **slot, Obj *value) {
    OUTCROP_STORE_REF(slot, value, 1);
    ref_stores++;
}

static void mark(Obj *o) {
    /* explicit stack: the heap can be a long chain */
    static Obj *stack[OBJECTS];
    int top = 0;
    if (!o || (o->header & 1)) return;
    o->header |= 1;
    stack[top++] = o;
    while (top) {
        Obj *x = stack[--top];
        for (int i = 0; i < FIELDS; i++) {
            Obj *y = x->f[i];
            if (y && !(y->header & 1)) {
                y->header |= 1;
                stack[top++] = y;
            }
        }
    }
}

static void collect(void) {
    for (int r = 0; r < ROOTS; r++) mark(gc_roots[r]);
    for (int i = OBJECTS - 1; i >= 0; i--) {
        Obj *o = &gc_arena[i];
        if (o->header & 1) {
            o->header &= ~1ull;
        } else if (o->header & 2) {
            o->header = 0;
            o->f[0] = free_list; /* the free list is not a reference store: untagged */
            free_list = o;
            freed_total++;
        }
    }
    collections++;
}

static Obj *alloc(void) {
    if (!free_list) collect();
    if (!free_list) {
        /* everything is live: drop a root and try again */
        store_ref(&gc_roots[next() % ROOTS], 0);
        collect();
        if (!free_list) {
            fprintf(stderr, "gc: heap exhausted\n");
            exit(1);
        }
    }
    Obj *o = free_list;
    free_list = o->f[0];
    o->header = 2 | (allocated << 2);
    if (plain_zeroing) {
        /* untagged: the compiler must not merge this into a tagged store */
        for (int i = 0; i < FIELDS; i++) ((volatile uintptr_t *)o->f)[i] = 0;
    } else {
        for (int i = 0; i < FIELDS; i++) store_ref(&o->f[i], 0);
    }
    allocated++;
    return o;
}

/* An object reachable from root r, a few fields down (or the root itself, or NULL). */
static Obj *walk(int r) {
    Obj *o = gc_roots[r];
    for (int d = next() % 4; o && d > 0; d--) {
        Obj *n = o->f[next() % FIELDS];
        if (!n) break;
        o = n;
    }
    return o;
}

int main(int argc, char **argv) {
    long ops = argc > 1 ? atol(argv[1]) : 400000;
    plain_zeroing = argc > 2 && argv[2][0] == 'z';
    for (int i = OBJECTS - 1; i >= 0; i--) {
        gc_arena[i].f[0] = free_list;
        free_list = &gc_arena[i];
    }
    for (long n = 0; n < ops; n++) {
        uint64_t op = next() % 16;
        int r = next() % ROOTS;
        if (op < 6) { /* allocate, and hang it off a root or an object */
            Obj *o = alloc();
            Obj *p = walk(r);
            if (p && (op & 1))
                store_ref(&p->f[next() % FIELDS], o);
            else
                store_ref(&gc_roots[r], o);
        } else if (op < 13) { /* link two reachable objects */
            Obj *a = walk(r), *b = walk(next() % ROOTS);
            if (a) store_ref(&a->f[next() % FIELDS], b);
        } else if (op < 15) { /* clear a field */
            Obj *a = walk(r);
            if (a) store_ref(&a->f[next() % FIELDS], 0);
        } else { /* drop a root */
            store_ref(&gc_roots[r], 0);
        }
    }
    collect();
    unsigned long live = 0, sum = 0;
    for (int i = 0; i < OBJECTS; i++)
        if (gc_arena[i].header & 2) {
            live++;
            sum = sum * 31 + (gc_arena[i].header >> 2);
        }
    printf("gc: %ld ops, %lu reference stores, %lu allocated, %lu collections, %lu freed, %lu live, checksum %016lx\n",
           ops, ref_stores, allocated, collections, freed_total, live, sum);
    return 0;
}
