/* lz, built for RV64GC with the B extension (-march=rv64gc_zba_zbb_zbs, see build.sh): the
 * bundled workload whose code uses sh1add/sh2add/sh3add, zext.h, bset, andn and the other
 * Zba/Zbb/Zbs instructions a distribution built for RVA22 contains. Same output as lz. */
#include "lz.c"
