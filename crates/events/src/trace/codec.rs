//! The value encoding inside a trace chunk, before zstd: delta, zigzag, LEB128.
//!
//! The first value of a chunk is written as an unsigned LEB128 varint of the value itself.
//! Every later value `v[i]` is written as the varint of `zigzag(v[i] - v[i-1])`, where the
//! subtraction wraps modulo 2^64 and the difference is read as an `i64`. Zigzag maps small
//! negative and positive deltas to small unsigned numbers (0, -1, 1, -2, … → 0, 1, 2, 3, …), so
//! nearby addresses take one or two bytes whichever way they move.
//!
//! Varints are canonical: at most 10 bytes, no trailing zero groups, no bits beyond the 64th.
//! The decoder rejects anything else, so each value stream has exactly one encoding.

/// Longest LEB128 encoding of a `u64`.
pub(crate) const MAX_VARINT_BYTES: usize = 10;

/// Maps a wrapping difference to an unsigned number, small magnitudes to small numbers.
#[inline]
pub(crate) fn zigzag(delta: u64) -> u64 {
    let signed = delta as i64;
    ((signed << 1) ^ (signed >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(encoded: u64) -> u64 {
    (encoded >> 1) ^ (encoded & 1).wrapping_neg()
}

/// Appends the LEB128 encoding of `value` (7 bits per byte, low bits first, high bit = more).
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends the encoding of value `value` that follows `previous` in a chunk
/// (`None` for the first value of a chunk).
#[inline]
pub(crate) fn put_value(out: &mut Vec<u8>, previous: Option<u64>, value: u64) {
    match previous {
        None => put_varint(out, value),
        Some(previous) => put_varint(out, zigzag(value.wrapping_sub(previous))),
    }
}

/// Decodes one canonical varint from `bytes` at `*pos`, advancing `*pos`.
#[inline]
fn get_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, String> {
    let start = *pos;
    let mut value = 0u64;
    for i in 0..MAX_VARINT_BYTES {
        let Some(&byte) = bytes.get(start + i) else {
            return Err(format!(
                "payload ends inside the varint at payload byte {start}"
            ));
        };
        let group = u64::from(byte & 0x7f);
        if i == MAX_VARINT_BYTES - 1 && byte > 1 {
            return Err(format!(
                "varint at payload byte {start} does not fit in 64 bits"
            ));
        }
        value |= group << (7 * i);
        if byte & 0x80 == 0 {
            if byte == 0 && i > 0 {
                return Err(format!(
                    "varint at payload byte {start} is not in canonical form (trailing zero byte)"
                ));
            }
            *pos = start + i + 1;
            return Ok(value);
        }
    }
    // Unreachable in practice: the tenth byte either ends the varint or fails the check above.
    Err(format!(
        "varint at payload byte {start} is longer than {MAX_VARINT_BYTES} bytes"
    ))
}

/// Decodes a whole chunk payload holding exactly `count` values, appending them to `out`.
///
/// Fails (with a reason naming the payload byte) if the payload ends early, holds bytes after
/// the last value, or contains a non-canonical varint.
pub(crate) fn decode_chunk(payload: &[u8], count: usize, out: &mut Vec<u64>) -> Result<(), String> {
    let mut pos = 0;
    let mut previous: Option<u64> = None;
    for _ in 0..count {
        let raw = get_varint(payload, &mut pos)?;
        let value = match previous {
            None => raw,
            Some(previous) => previous.wrapping_add(unzigzag(raw)),
        };
        out.push(value);
        previous = Some(value);
    }
    if pos != payload.len() {
        return Err(format!(
            "{} byte(s) left over after the last of {count} values, at payload byte {pos}",
            payload.len() - pos
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(values: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut previous = None;
        for &v in values {
            put_value(&mut out, previous, v);
            previous = Some(v);
        }
        out
    }

    #[test]
    fn zigzag_maps_small_magnitudes_to_small_numbers() {
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(u64::MAX), 1); // -1
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(u64::MAX - 1), 3); // -2
        assert_eq!(zigzag(i64::MAX as u64), u64::MAX - 1);
        assert_eq!(zigzag(i64::MIN as u64), u64::MAX);
        for d in [0, 1, 2, 63, 64, u64::MAX, u64::MAX / 2, 1 << 63, 12345] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
    }

    #[test]
    fn varint_lengths() {
        for (value, len) in [
            (0u64, 1),
            (127, 1),
            (128, 2),
            (16383, 2),
            (16384, 3),
            (u64::MAX, 10),
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), len, "{value}");
            let mut pos = 0;
            assert_eq!(get_varint(&out, &mut pos), Ok(value));
            assert_eq!(pos, len);
        }
    }

    #[test]
    fn round_trip_extremes() {
        let values = [
            0,
            u64::MAX,
            0,
            u64::MAX,
            u64::MAX,
            1,
            0,
            1 << 63,
            0x10000,
            0x10004,
        ];
        let bytes = encode(&values);
        let mut out = Vec::new();
        decode_chunk(&bytes, values.len(), &mut out).unwrap();
        assert_eq!(out, values);
    }

    #[test]
    fn rejects_malformed_payloads() {
        let mut out = Vec::new();
        // Ends inside a varint.
        assert!(decode_chunk(&[0x80], 1, &mut out)
            .unwrap_err()
            .contains("ends inside"));
        // Too few values.
        assert!(decode_chunk(&[1], 2, &mut out)
            .unwrap_err()
            .contains("ends inside"));
        // Leftover bytes.
        assert!(decode_chunk(&[1, 2], 1, &mut out)
            .unwrap_err()
            .contains("left over"));
        // Non-canonical: 0 written as two bytes.
        assert!(decode_chunk(&[0x80, 0x00], 1, &mut out)
            .unwrap_err()
            .contains("canonical"));
        // Eleven-byte varint / 64-bit overflow in the tenth byte.
        let mut long = vec![0xff; 9];
        long.push(0x02);
        assert!(decode_chunk(&long, 1, &mut out)
            .unwrap_err()
            .contains("64 bits"));
        let mut long = vec![0xff; 10];
        long.push(0x01);
        assert!(decode_chunk(&long, 1, &mut out)
            .unwrap_err()
            .contains("64 bits"));
    }
}
