/* qemu-icount: counts the guest instructions that qemu-user executed, from its
 * "-d in_asm,exec,nochain" log. Used to measure the instruction counts quoted in
 * ../README.md; not part of the build.
 *
 *   cc -O2 -o /tmp/qemu-icount tools/qemu-icount.c
 *   env -i qemu-riscv64-static -d in_asm,exec,nochain -D /dev/fd/3 bin/lz \
 *       3>&1 >/dev/null 2>&1 | /tmp/qemu-icount
 *
 * With "nochain" every execution of a translation block logs one "Trace" line
 * naming the block's host address; the block's guest instructions were listed
 * by "in_asm" when it was translated, just before its first Trace line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define TABLE_SIZE (1u << 22)

static uint64_t keys[TABLE_SIZE];
static uint32_t counts[TABLE_SIZE];

static uint32_t slot_of(uint64_t key)
{
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (TABLE_SIZE - 1);
    while (keys[h] && keys[h] != key) h = (h + 1) & (TABLE_SIZE - 1);
    return h;
}

int main(void)
{
    static char line[4096];
    uint32_t block_len = 0;
    int in_block = 0;
    unsigned long long total = 0, unknown = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "IN:", 3) == 0) {
            in_block = 1;
            block_len = 0;
        } else if (in_block && strncmp(line, "0x", 2) == 0) {
            block_len++;
        } else if (strncmp(line, "Trace ", 6) == 0) {
            char *colon = strchr(line, ':');
            if (!colon) continue;
            uint64_t key = strtoull(colon + 2, NULL, 16);
            uint32_t s = slot_of(key);
            if (in_block) {
                keys[s] = key;
                counts[s] = block_len;
                in_block = 0;
            }
            if (keys[s] == key)
                total += counts[s];
            else
                unknown++;
        }
    }
    printf("%llu instructions", total);
    if (unknown) printf(" (%llu block executions not accounted for)", unknown);
    printf("\n");
    return 0;
}
