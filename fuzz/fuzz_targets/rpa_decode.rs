//! Fuzz target: the query-instruction decoder and the engine on raw instruction words (a
//! hostile encoding): decoding refuses or re-encodes exactly; the engine runs any decoded
//! array on any record within its step bound.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rpa::isa::{QueryInsn, ARRAY};

fuzz_target!(|data: &[u8]| {
    let mut insns = Vec::new();
    for c in data.chunks_exact(8).take(ARRAY) {
        let w = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        if let Ok(i) = QueryInsn::decode(w) {
            assert_eq!(i.encode(), w);
            let _ = i.text(None);
            insns.push(i);
        }
    }
    let Ok(mut e) = outcrop_rpa::Engine::new(&insns, &Default::default()) else {
        return;
    };
    let record: Vec<u32> = data.iter().take(7).map(|&b| u32::from(b) * 0x0101_0101).collect();
    for qpc in 0..insns.len().min(8) as u8 {
        assert!(e.run(qpc, &record).steps as usize <= ARRAY);
    }
});
