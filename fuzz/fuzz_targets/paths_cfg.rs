//! CFG construction, loops and regions from arbitrary code bytes (as if a function's text
//! section held them): never a panic, and the region invariants hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_paths::{Cfg, Regions};

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let limit = u64::from(data[0] % 64) + 2;
    let code = &data[1..];
    let base = 0x10000u64;
    let end = base + code.len() as u64;
    let mid = base + (code.len() as u64 / 2 & !1);
    let funcs = vec![("f".to_string(), base, mid), ("g".to_string(), mid, end)];
    let cfg = Cfg::from_code(&[(base, code)], &funcs);
    let regions = Regions::new(&cfg, limit);
    for (i, r) in regions.regions.iter().enumerate() {
        assert!(r.paths < limit);
        for id in 0..r.paths {
            let p = regions.decode(i as u32, id).unwrap();
            assert_eq!(regions.id_of(&p), Some((i as u32, id)));
        }
    }
});
