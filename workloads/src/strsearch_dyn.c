/* strsearch, dynamically linked as the cross toolchain builds by default (a PIE that loads
 * ld-linux-riscv64-lp64d.so.1 and libc.so.6 from /usr/riscv64-linux-gnu; see build.sh): the
 * bundled workload whose strlen, memcpy and printf run in a shared library. Same output as
 * strsearch. */
#include "strsearch.c"
