/* outcrop.h -- reserved for Outcrop's guest-side ISA extensions.
 *
 * This header will hold the macros that guest programs use to talk to the
 * Outcrop machine directly: for example a "branch-on-random" instruction
 * (sampling decided by the machine, encoded in a custom opcode space) and tag
 * macros that mark regions or events in the instruction stream for the
 * profiler. None of this exists yet; the workloads in src/ do not include this
 * file, and they must keep running unchanged under qemu-riscv64-static.
 */
#ifndef OUTCROP_H
#define OUTCROP_H

#endif /* OUTCROP_H */
