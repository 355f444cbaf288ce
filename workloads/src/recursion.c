/* recursion: deep and branchy recursion (call/return heavy code).
 *
 * - Ackermann A(2, n) and A(3, n) for small n (deep recursion, bounded),
 * - n-queens by backtracking with arrays, and again with bitmasks,
 * - naive doubly recursive Fibonacci (no memo) beside a memoised one,
 * - mutual recursion (even/odd), recursive tree building and folding,
 * - recursive binary GCD and integer power with 32-bit arithmetic. */
#include <stdio.h>
#include <stdlib.h>

static long calls;

__attribute__((noinline)) static unsigned long ackermann(unsigned long m, unsigned long n)
{
    calls++;
    if (m == 0) return n + 1;
    if (n == 0) return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

static int queen_col[16];

static int safe(int row, int col)
{
    for (int r = 0; r < row; r++) {
        int c = queen_col[r];
        if (c == col || c - col == r - row || c - col == row - r) return 0;
    }
    return 1;
}

__attribute__((noinline)) static long queens_array(int row, int n)
{
    if (row == n) return 1;
    long count = 0;
    for (int col = 0; col < n; col++)
        if (safe(row, col)) {
            queen_col[row] = col;
            count += queens_array(row + 1, n);
        }
    return count;
}

__attribute__((noinline)) static long queens_bits(unsigned cols, unsigned diag1, unsigned diag2,
                                                  unsigned all)
{
    if (cols == all) return 1;
    long count = 0;
    unsigned free_ = all & ~(cols | diag1 | diag2);
    while (free_) {
        unsigned bit = free_ & -free_;
        free_ -= bit;
        count += queens_bits(cols | bit, (diag1 | bit) << 1, (diag2 | bit) >> 1, all);
    }
    return count;
}

__attribute__((noinline)) static long fib_naive(int n)
{
    return n < 2 ? n : fib_naive(n - 1) + fib_naive(n - 2);
}

static long memo[100];

__attribute__((noinline)) static long fib_memo(int n)
{
    if (n < 2) return n;
    if (memo[n]) return memo[n];
    return memo[n] = fib_memo(n - 1) + fib_memo(n - 2);
}

__attribute__((noinline)) static int is_odd(unsigned n);

__attribute__((noinline)) static int is_even(unsigned n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) static int is_odd(unsigned n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

struct tree {
    struct tree *left, *right;
    int value;
};

__attribute__((noinline)) static struct tree *build_tree(int depth, unsigned *seed)
{
    struct tree *t = malloc(sizeof *t);
    *seed = *seed * 1103515245u + 12345u;
    t->value = (int)((*seed >> 16) % 1000u) - 500;
    if (depth > 0) {
        t->left = build_tree(depth - 1, seed);
        t->right = build_tree(depth - 1, seed);
    } else {
        t->left = t->right = NULL;
    }
    return t;
}

__attribute__((noinline)) static long tree_fold(const struct tree *t, int level)
{
    if (!t) return 0;
    /* Alternating sign by level; signed 32-bit remainder. */
    long here = (level & 1) ? -(long)t->value : (long)(t->value % 97);
    return here + tree_fold(t->left, level + 1) + tree_fold(t->right, level + 1);
}

__attribute__((noinline)) static int tree_height(const struct tree *t)
{
    if (!t) return 0;
    int a = tree_height(t->left), b = tree_height(t->right);
    return 1 + (a > b ? a : b);
}

static void tree_free(struct tree *t)
{
    if (!t) return;
    tree_free(t->left);
    tree_free(t->right);
    free(t);
}

__attribute__((noinline)) static unsigned gcd_rec(unsigned a, unsigned b)
{
    return b == 0 ? a : gcd_rec(b, a % b);
}

__attribute__((noinline)) static unsigned pow_mod(unsigned base, unsigned exp, unsigned mod)
{
    if (exp == 0) return 1u % mod;
    unsigned half = pow_mod(base, exp / 2, mod);
    unsigned long long sq = (unsigned long long)half * half % mod;
    return exp & 1 ? (unsigned)(sq * base % mod) : (unsigned)sq;
}

int main(void)
{
    unsigned long long check = 0;

    for (unsigned long n = 1; n <= 7; n++) {
        calls = 0;
        unsigned long a = ackermann(n <= 4 ? 2 : 3, n);
        printf("ackermann(%lu, %lu) = %lu in %ld calls\n", n <= 4 ? 2ul : 3ul, n, a, calls);
        check = check * 31 + a + (unsigned long long)calls;
    }

    for (int n = 4; n <= 9; n++) {
        long a = queens_array(0, n);
        long b = queens_bits(0, 0, 0, (1u << n) - 1);
        printf("queens %d: %ld (bitmask %ld)\n", n, a, b);
        check = check * 31 + (unsigned long long)(a * 2 + (a != b));
    }
    long q12 = queens_bits(0, 0, 0, (1u << 11) - 1);
    printf("queens 11 (bitmask): %ld\n", q12);
    check = check * 31 + (unsigned long long)q12;

    long f = fib_naive(27);
    long fm = fib_memo(90);
    printf("fib(27) naive = %ld, fib(90) memo = %ld\n", f, fm);
    check = check * 31 + (unsigned long long)f + (unsigned long long)fm;

    int parity = 0;
    for (unsigned n = 1000; n < 1100; n++) parity += is_even(n) * 2 + is_odd(n);
    printf("parity sum %d\n", parity);
    check = check * 31 + (unsigned long long)parity;

    unsigned seed = 42;
    long fold = 0;
    int height = 0;
    for (int round = 0; round < 4; round++) {
        struct tree *t = build_tree(15, &seed);
        fold += tree_fold(t, 0);
        height += tree_height(t);
        tree_free(t);
    }
    printf("tree fold %ld height sum %d\n", fold, height);
    check = check * 31 + (unsigned long long)fold + (unsigned long long)height;

    unsigned g = 0, p = 0;
    for (unsigned i = 1; i <= 10000; i++) {
        g += gcd_rec(i * 2654435761u, i * 40503u + 7u);
        p ^= pow_mod(i, 1000003u + i, 2147483647u);
    }
    printf("gcd sum %u pow xor %08x\n", g, p);
    check = check * 31 + g + ((unsigned long long)p << 32);

    printf("checksum recursion %016llx\n", check);
    return 0;
}
