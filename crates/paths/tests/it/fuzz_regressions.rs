//! Inputs the fuzz targets found, kept as named regressions.

use outcrop_paths::{Cfg, Regions};
use std::time::{Duration, Instant};

/// `paths_cfg` timeout (fuzz campaign of 2026-11-23): half a megabyte of arbitrary bytes (the
/// probe fixture's ELF file) taken as the code of two functions. Loop analysis was quadratic —
/// a `contains` over the DFS roots per block, a fresh visited array per back edge, dominance
/// by walking the dominator chain — and took 2 s here (minutes under the fuzzer's sanitizers); it now takes about 0.1 s.
#[test]
fn paths_cfg_half_a_megabyte_of_arbitrary_code_is_not_quadratic() {
    let data = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../outcrop/tests/fixtures/guest/probe"),
    )
    .unwrap();
    // exactly what fuzz/fuzz_targets/paths_cfg.rs does with the input
    let limit = u64::from(data[0] % 64) + 2;
    let code = &data[1..];
    let base = 0x10000u64;
    let end = base + code.len() as u64;
    let mid = base + ((code.len() as u64 / 2) & !1);
    let funcs = vec![("f".to_string(), base, mid), ("g".to_string(), mid, end)];
    let t = Instant::now();
    let cfg = Cfg::from_code(&[(base, code)], &funcs);
    let regions = Regions::new(&cfg, limit);
    let took = t.elapsed();
    assert!(!regions.regions.is_empty());
    assert!(took < Duration::from_secs(1), "took {took:?}");
}
