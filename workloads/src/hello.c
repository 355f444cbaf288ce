/* hello: the smallest useful guest program, for measuring startup cost.
 * Exercises: C runtime start-up, one buffered printf, exit_group. */
#include <stdio.h>

int main(void)
{
    printf("hello, outcrop\n");
    printf("checksum hello 0\n");
    return 0;
}
