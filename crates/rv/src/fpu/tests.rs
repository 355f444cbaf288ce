//! Unit tests for the spec's corner cases; the exhaustive checks are the golden-data and
//! property tests in `crates/rv/tests/fpu_*.rs`.
