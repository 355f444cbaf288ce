//! The samples-file parser (`outcrop paths report`), and reconstruction of whatever it
//! accepts over a small synthetic CFG: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_paths::{analyze, Cfg, IndexCache, Options, Regions, Samples, Weighting};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(s) = Samples::parse(text) {
        assert_eq!(Samples::parse(&s.to_text()).ok(), Some(s.clone()));
        let cfg = Cfg::synthetic(6, &[(0, 1), (0, 2), (1, 3), (2, 3), (3, 1), (3, 4), (4, 5)]);
        let regions = Regions::new(&cfg, 8);
        for stitch in [false, true] {
            let opts = Options {
                stitch,
                ..Options::default()
            };
            let _ = analyze(&cfg, &regions, &s, opts, Weighting::Edges, &mut IndexCache::default());
        }
    }
});
