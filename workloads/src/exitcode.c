/* exitcode: writes to both stdout and stderr, then exits with status 3.
 * Used to test that the machine reports the guest's exit status and keeps
 * the two output streams apart. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    unsigned sum = 0;
    for (unsigned i = 1; i <= 1000; i++)
        sum = sum * 31u + i;
    printf("exitcode: this line goes to stdout\n");
    fprintf(stderr, "exitcode: this line goes to stderr\n");
    printf("checksum exitcode %08x\n", sum);
    fflush(stdout);
    fprintf(stderr, "exitcode: exiting with status 3\n");
    exit(3);
}
