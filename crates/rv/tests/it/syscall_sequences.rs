//! Random system-call sequences against the kernel layer (the `syscalls` fuzz target's driver,
//! run here on proptest's inputs so every CI run tries a few hundred): no panic, bounded host
//! memory, and a bounded time per sequence.

#[path = "../common/syscall_driver.rs"]
mod driver;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn syscall_sequences_never_panic_hang_or_exhaust(data in proptest::collection::vec(any::<u8>(), 256..1200)) {
        let t = std::time::Instant::now();
        driver::run(&data);
        prop_assert!(t.elapsed() < std::time::Duration::from_secs(2), "took {:?}", t.elapsed());
    }
}

/// Inputs the fuzzer or a probe found, kept as named regressions.
#[test]
fn regressions() {
    // munmap(scratch, 2^62): used to walk 2^50 page numbers
    let mut d = vec![0u8; 256];
    d.extend_from_slice(&[
        14, // munmap (NUMBERS[14] = 215)
        1, 8,  // scratch + 8*64 - 512 = scratch
        55, // EDGES[11] = 2^62
        2, 0, 2, 0, 2, 0, 2, 0,
    ]);
    assert_eq!(driver::run(&d), 1);
    // mremap(scratch, 32 GiB, 64 KiB, MAYMOVE): used to allocate 32 GiB first
    let mut d = vec![0u8; 256];
    // mremap = NUMBERS[15]; old length EDGES[8] = 32 GiB, new EDGES[4] = 1 MiB, flags 1
    d.extend_from_slice(&[15, 1, 8, 40, 20, 2, 1, 2, 0, 2, 0]);
    assert_eq!(driver::run(&d), 1);
}
