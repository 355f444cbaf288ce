//! Readable names for mangled symbols: C++ (the Itanium ABI, as GCC and Clang mangle), and Rust
//! (v0 `_R…` and legacy `_ZN…17h<hash>E`), through the `cpp_demangle` and `rustc-demangle`
//! crates.
//!
//! [`demangle`] gives what `c++filt` prints for a C++ name (`_ZL6workerii` →
//! `worker(int, int)`, GCC's clones as `f(int) [clone .constprop.0]`), and what `rustfilt`
//! prints for a Rust name (the hash left off: `core::ptr::drop_in_place<alloc::string::String>`).
//! A name that is not mangled, or does not parse, is `None`: callers keep it as it is.
//!
//! A symbol name is untrusted text from a file. A short mangled name can expand
//! exponentially through back-references (each `S_` repeats an earlier component), so the
//! output is written through a writer that stops at [`MAX_DEMANGLED`] bytes, the parse is
//! bounded by a recursion limit, and names longer than [`MAX_MANGLED`] are not parsed. A name
//! over a bound keeps its mangled form.

use std::fmt::{self, Write as _};

/// Longest mangled name parsed (bytes).
pub const MAX_MANGLED: usize = 16 << 10;

/// Longest demangled name produced (bytes); a longer one keeps its mangled form.
pub const MAX_DEMANGLED: usize = 64 << 10;

/// Deepest nesting the C++ demangler follows, parsing and printing.
const RECURSION_LIMIT: u32 = 256;

/// A `String` that refuses to grow past [`MAX_DEMANGLED`].
struct Bounded(String);

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.0.len() + s.len() > MAX_DEMANGLED {
            return Err(fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// The readable form of the mangled symbol name `raw`, or `None` when it is not a C++ or
/// Rust mangled name (a C function's `memcpy`), does not parse, or is over a bound.
pub fn demangle(raw: &[u8]) -> Option<String> {
    if raw.len() > MAX_MANGLED {
        return None;
    }
    let text = std::str::from_utf8(raw).ok()?;
    // Rust first: a legacy Rust name is also a valid Itanium name (with the hash as a
    // component), and rustc-demangle knows to leave the hash off
    if text.starts_with("_R") || text.starts_with("_ZN") || text.starts_with("__ZN") {
        if let Ok(d) = rustc_demangle::try_demangle(text) {
            let mut out = Bounded(String::new());
            if write!(out, "{d:#}").is_ok() && is_rust_legacy_or_v0(text, &d) {
                return Some(out.0);
            }
        }
    }
    if !text.starts_with("_Z") {
        return None;
    }
    let parse = cpp_demangle::ParseOptions::default().recursion_limit(RECURSION_LIMIT);
    let symbol = cpp_demangle::Symbol::new_with_options(raw, &parse).ok()?;
    let options = cpp_demangle::DemangleOptions::new().recursion_limit(RECURSION_LIMIT);
    let mut out = Bounded(String::new());
    symbol.structured_demangle(&mut out, &options).ok()?;
    Some(out.0)
}

/// Whether rustc-demangle's reading is the right one: always for v0 (`_R`); for the legacy
/// scheme only when the last component is Rust's `h<16 hex digits>` hash (a C++ name such as
/// `_ZN5space3fooEibc` also parses as a legacy Rust path, wrongly).
fn is_rust_legacy_or_v0(text: &str, d: &rustc_demangle::Demangle<'_>) -> bool {
    if text.starts_with("_R") {
        return true;
    }
    // `{:#}` dropped the hash; the plain form keeps it as `::h0123456789abcdef`
    let full = d.to_string();
    full.rsplit_once("::h")
        .is_some_and(|(_, hash)| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Option<String> {
        demangle(s.as_bytes())
    }

    #[test]
    fn c_names_stay() {
        assert_eq!(d("main"), None);
        assert_eq!(d("memcpy"), None);
        assert_eq!(d("_start"), None);
        assert_eq!(d("_Z"), None);
    }

    #[test]
    fn cpp_names_read_as_cxxfilt_prints_them() {
        assert_eq!(d("_ZL6workerii").as_deref(), Some("worker(int, int)"));
        assert_eq!(
            d("_ZN5space3fooEibc").as_deref(),
            Some("space::foo(int, bool, char)")
        );
        assert_eq!(
            d("_ZNSt6vectorIiSaIiEE9push_backERKi").as_deref(),
            Some("std::vector<int, std::allocator<int> >::push_back(int const&)")
        );
        assert_eq!(
            d("_ZL6workerii.constprop.0").as_deref(),
            Some("worker(int, int) [clone .constprop.0]")
        );
    }

    #[test]
    fn rust_names_lose_their_hash() {
        assert_eq!(
            d("_ZN4core3ptr13drop_in_place17h0123456789abcdefE").as_deref(),
            Some("core::ptr::drop_in_place")
        );
        assert_eq!(
            d("_RNvCs1234_7mycrate3foo").as_deref(),
            Some("mycrate::foo")
        );
    }

    #[test]
    fn a_back_reference_bomb_keeps_its_mangled_form() {
        // each parameter is A<previous, previous>, by back-reference: 2^40 bytes if printed
        let seq = |k: u32| char::from_digit(k, 36).map(|c| c.to_ascii_uppercase());
        let mut name = String::from("_Z1f1AIiiE");
        for k in 0..34 {
            let s = seq(k).expect("a base-36 digit");
            name.push_str(&format!("S_IS{s}_S{s}_E"));
        }
        assert!(name.len() < 400);
        // printing stops at the bound rather than exhausting memory
        assert_eq!(d(&name), None);
        // a few levels print in full
        assert_eq!(
            d("_Z1f1AIiiES_IS0_S0_E").as_deref(),
            Some("f(A<int, int>, A<A<int, int>, A<int, int> >)")
        );
        assert_eq!(d(&"_Z".repeat(MAX_MANGLED)), None);
    }
}
