//! Prints every 16-bit parcel and its 32-bit expansion (or `-`), for checking against binutils:
//! `cargo run -p outcrop-rv --example expand_all > all.txt` (see tests/fixtures/README.md).
fn main() {
    for h in 0..=u16::MAX {
        if h & 3 == 3 {
            continue;
        }
        match outcrop_rv::compressed::expand(h) {
            Some(w) => println!("{h:04x} {w:08x}"),
            None => println!("{h:04x} -"),
        }
    }
}
