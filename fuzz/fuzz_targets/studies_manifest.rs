//! The workload manifest (`workloads/manifest.toml`, `outcrop_studies::Manifest`): never a
//! panic; whatever it accepts names unique plain workloads whose paths stay inside its root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_studies::Manifest;
use std::path::{Component, Path};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(m) = Manifest::parse(text, Path::new("/w")) else {
        return;
    };
    let mut names = std::collections::BTreeSet::new();
    for w in &m.workloads {
        assert!(names.insert(w.name.clone()), "duplicate {}", w.name);
        for p in std::iter::once(w.binary()).chain(w.reads.iter().cloned()) {
            assert!(
                p.components().all(|c| matches!(c, Component::Normal(_))),
                "{} leaves the root",
                p.display()
            );
        }
    }
});
