//! Fuzz target: the RPA query language — `outcrop_rpa::parse` and `assemble` on arbitrary
//! text, then the encoding of what assembled.
//!
//! Parsing returns a program or a diagnostic whose span lies inside the input (it is
//! rendered, which must not panic); an assembled program's instructions survive
//! encode → decode unchanged, and the engine runs every query on a record of the input's
//! bytes without panicking.

#![no_main]

use libfuzzer_sys::fuzz_target;
use outcrop_rpa::isa::QueryInsn;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let p = match outcrop_rpa::parse(src) {
        Ok(p) => p,
        Err(d) => {
            assert!(d.span.start <= src.len() && d.span.end <= src.len());
            let _ = outcrop_rpa::render(&d, "fuzz.rpa", src);
            return;
        }
    };
    let a = match outcrop_rpa::assemble(&p) {
        Ok(a) => a,
        Err(d) => {
            let _ = outcrop_rpa::render(&d, "fuzz.rpa", src);
            return;
        }
    };
    for i in &a.insns {
        assert_eq!(QueryInsn::decode(i.encode()), Ok(*i));
    }
    let Ok(mut e) = outcrop_rpa::Engine::new(&a.insns, &Default::default()) else {
        return;
    };
    let record: Vec<u32> = data.chunks(4).take(7).map(|c| c.iter().fold(0u32, |w, &b| w << 8 | u32::from(b))).collect();
    for q in &a.queries {
        let out = e.run(q.first, &record);
        assert!(out.steps as usize <= outcrop_rpa::isa::ARRAY);
    }
});
