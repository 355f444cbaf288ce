//! Text and raw readers through the [`ValueReader`] trait, against the values that produced
//! their input.

use outcrop_events::raw::U64LeReader;
use outcrop_events::text::TextReader;
use outcrop_events::{read_all, Error, ValueReader};
use proptest::prelude::*;

proptest! {
    #[test]
    fn text_round_trip(
        lines in proptest::collection::vec(
            (any::<u64>(), 0u8..6, proptest::bool::ANY), 0..300),
    ) {
        let mut input = String::new();
        let mut expected = Vec::new();
        for (value, style, crlf) in &lines {
            let line = match style {
                0 => format!("{value}"),
                1 => format!("{value:#x}"),
                2 => format!("  0X{value:X}\t# comment {value}"),
                3 => format!("# {value}"),
                4 => String::new(),
                _ => format!("{value:020}#"),
            };
            if *style != 3 && *style != 4 {
                expected.push(*value);
            }
            input.push_str(&line);
            input.push_str(if *crlf { "\r\n" } else { "\n" });
        }
        let mut reader = TextReader::new(input.as_bytes());
        prop_assert_eq!(read_all(&mut reader).unwrap(), expected);
        prop_assert_eq!(reader.bytes_read(), input.len() as u64);
        prop_assert_eq!(reader.lines_read(), lines.len() as u64);
    }

    #[test]
    fn text_reader_never_panics(input in proptest::collection::vec(any::<u8>(), 0..400)) {
        match read_all(&mut TextReader::new(&input[..])) {
            Ok(_) => {}
            Err(Error::BadLine { line, text, .. }) => {
                prop_assert!(line >= 1);
                prop_assert!(text.chars().count() <= 80);
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }

    #[test]
    fn raw_round_trip(values in proptest::collection::vec(any::<u64>(), 0..2000), tail in 0usize..8) {
        let mut bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        bytes.extend(std::iter::repeat_n(0x5a, tail));
        let result = read_all(&mut U64LeReader::new(&bytes[..]));
        if tail == 0 {
            prop_assert_eq!(result.unwrap(), values);
        } else {
            let err = result.unwrap_err();
            prop_assert_eq!(err.offset(), Some(8 * values.len() as u64));
        }
    }
}

#[test]
fn readers_behind_a_trait_object() {
    let raw: Vec<u8> = [1u64, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut readers: Vec<Box<dyn ValueReader + '_>> = vec![
        Box::new(TextReader::new(&b"1\n0x2\n3\n"[..])),
        Box::new(U64LeReader::new(&raw[..])),
    ];
    for reader in &mut readers {
        assert_eq!(read_all(reader).unwrap(), vec![1, 2, 3]);
    }
}
