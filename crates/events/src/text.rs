//! Text value streams: one integer per line.
//!
//! The grammar, line by line:
//!
//! - a value is decimal (`4096`) or hexadecimal with a `0x`/`0X` prefix (`0x1000`, `0XfF`);
//!   it must fit in a `u64`; no sign, no `_` digit separators, leading zeros are fine;
//! - `#` starts a comment, for the whole line or after a value;
//! - whitespace around the value is ignored, blank lines are skipped;
//! - lines end in `\n` or `\r\n`; the last line may lack its line ending;
//! - a line longer than [`MAX_LINE_BYTES`] or not valid UTF-8 is an error.
//!
//! Any bad line is an [`Error::BadLine`] with its 1-based line number, the line's text
//! (truncated to 80 characters) and the reason.

use std::io::{self, BufRead};

use crate::{Error, ValueReader};

/// Longest line accepted, in bytes, not counting the line ending.
///
/// Bounds the memory a malformed input (say, a binary file with no newlines) can make the
/// reader allocate.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Characters of a bad line quoted in [`Error::BadLine`].
const QUOTED_CHARS: usize = 80;

/// Reads a text value stream (see the [module docs](self) for the grammar).
#[derive(Debug)]
pub struct TextReader<R: BufRead> {
    inner: R,
    /// Bytes of the line being parsed, including its line ending.
    line_buf: Vec<u8>,
    /// Lines read so far (the 1-based number of the last line read).
    line: u64,
    bytes_read: u64,
    failed: bool,
}

impl<R: BufRead> TextReader<R> {
    /// Wraps a buffered reader.
    pub fn new(r: R) -> Self {
        TextReader {
            inner: r,
            line_buf: Vec::new(),
            line: 0,
            bytes_read: 0,
            failed: false,
        }
    }

    /// Number of lines read so far, including blank and comment lines.
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// Gives back the wrapped reader.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Reads the next line into `line_buf`; `false` at end of input.
    fn next_line(&mut self) -> Result<bool, Error> {
        self.line_buf.clear();
        loop {
            let available = match self.inner.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(Error::Io { source }),
            };
            if available.is_empty() {
                break;
            }
            let (take, ends_line) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            // Never hold more than the limit (plus a line ending) in memory.
            let room = (MAX_LINE_BYTES + 2).saturating_sub(self.line_buf.len());
            let take = take.min(room);
            self.line_buf
                .extend_from_slice(available.get(..take).unwrap_or(available));
            self.inner.consume(take);
            self.bytes_read += take as u64;
            if ends_line || self.line_buf.len() > MAX_LINE_BYTES + 1 {
                break;
            }
        }
        if self.line_buf.is_empty() {
            return Ok(false);
        }
        self.line += 1;
        Ok(true)
    }

    fn read_values_inner(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        let mut appended = 0;
        while appended < max {
            if !self.next_line()? {
                break;
            }
            match parse_line(&self.line_buf) {
                Ok(Some(value)) => {
                    out.push(value);
                    appended += 1;
                }
                Ok(None) => {}
                Err(reason) => {
                    return Err(Error::BadLine {
                        line: self.line,
                        text: quote_line(&self.line_buf),
                        reason,
                    })
                }
            }
        }
        Ok(appended)
    }
}

impl<R: BufRead> ValueReader for TextReader<R> {
    /// Appends up to `max` values; on error, values of earlier lines read by this call stay
    /// appended to `out`, and every later call returns [`Error::Stopped`].
    fn read_values(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, Error> {
        if self.failed {
            return Err(Error::Stopped {
                offset: self.bytes_read,
            });
        }
        let result = self.read_values_inner(out, max);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn bytes_read(&self) -> u64 {
        self.bytes_read
    }
}

/// Strips one `\n` or `\r\n` line ending.
fn strip_line_ending(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The line as quoted in errors: without its ending, lossily decoded, at most 80 characters.
fn quote_line(line: &[u8]) -> String {
    String::from_utf8_lossy(strip_line_ending(line))
        .chars()
        .take(QUOTED_CHARS)
        .collect()
}

/// Parses one line (with or without its line ending): `Ok(None)` for blank and comment
/// lines, `Err(reason)` for anything that is not exactly one value.
pub(crate) fn parse_line(line: &[u8]) -> Result<Option<u64>, String> {
    let line = strip_line_ending(line);
    if line.len() > MAX_LINE_BYTES {
        return Err(format!("line is longer than {MAX_LINE_BYTES} bytes"));
    }
    let text = std::str::from_utf8(line).map_err(|e| {
        format!(
            "line is not valid UTF-8 (bad byte at column {})",
            e.valid_up_to() + 1
        )
    })?;
    let text = match text.find('#') {
        Some(hash) => text.get(..hash).unwrap_or(text),
        None => text,
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    parse_integer(text).map(Some)
}

/// Parses a trimmed, non-empty decimal or `0x`-prefixed hexadecimal `u64`.
fn parse_integer(text: &str) -> Result<u64, String> {
    let (digits, radix, radix_name) =
        match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            Some(rest) => (rest, 16, "hexadecimal"),
            None => (text, 10, "decimal"),
        };
    if digits.is_empty() {
        return Err("missing hexadecimal digits after the 0x prefix".to_string());
    }
    if let Some(bad) = digits.chars().find(|c| !c.is_digit(radix)) {
        return Err(match bad {
            '_' => "'_' digit separators are not accepted".to_string(),
            '-' | '+' => format!("a sign ({bad:?}) is not allowed; values are unsigned"),
            c if c.is_whitespace() => "expected one value per line".to_string(),
            c => format!("invalid {radix_name} digit {c:?}"),
        });
    }
    // All digits are valid, so the only possible failure left is overflow.
    u64::from_str_radix(digits, radix)
        .map_err(|_| format!("value does not fit in 64 bits (largest is {})", u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_all;

    fn read(input: &str) -> Result<Vec<u64>, Error> {
        read_all(&mut TextReader::new(input.as_bytes()))
    }

    fn bad_line(input: &[u8]) -> (u64, String, String) {
        match read_all(&mut TextReader::new(input)) {
            Err(Error::BadLine { line, text, reason }) => (line, text, reason),
            other => panic!("expected BadLine, got {other:?}"),
        }
    }

    #[test]
    fn decimal() {
        assert_eq!(read("0\n1\n42\n007\n").unwrap(), vec![0, 1, 42, 7]);
        assert_eq!(read("18446744073709551615").unwrap(), vec![u64::MAX]);
    }

    #[test]
    fn hex() {
        assert_eq!(
            read("0x0\n0x10\n0XfF\n0xFFFFFFFFFFFFFFFF\n").unwrap(),
            vec![0, 16, 255, u64::MAX]
        );
    }

    #[test]
    fn comments_whitespace_and_blank_lines() {
        let input = "# header\n\n  12  \n\t0x10 # trailing comment\n   \n#\n3#no space\n";
        assert_eq!(read(input).unwrap(), vec![12, 16, 3]);
    }

    #[test]
    fn crlf_and_missing_final_newline() {
        assert_eq!(read("1\r\n2\r\n\r\n3").unwrap(), vec![1, 2, 3]);
        assert_eq!(read("").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn overflow_is_a_bad_line() {
        let (line, text, reason) = bad_line(b"1\n18446744073709551616\n");
        assert_eq!(line, 2);
        assert_eq!(text, "18446744073709551616");
        assert!(reason.contains("64 bits"), "{reason}");
        let (line, _, reason) = bad_line(b"0x1_0000_0000_0000_0000\n");
        assert_eq!(line, 1);
        assert!(reason.contains("'_'"), "{reason}");
        let (_, _, reason) = bad_line(b"0x10000000000000000\n");
        assert!(reason.contains("64 bits"), "{reason}");
    }

    #[test]
    fn garbage_names_the_right_line() {
        let (line, text, reason) = bad_line(b"# c\n1\n\n2 # ok\nbanana\n3\n");
        assert_eq!(line, 5);
        assert_eq!(text, "banana");
        assert_eq!(reason, "invalid decimal digit 'b'");
    }

    #[test]
    fn rejected_spellings() {
        for (input, needle) in [
            ("1_000", "'_'"),
            ("-1", "sign"),
            ("+1", "sign"),
            ("0x", "missing hexadecimal digits"),
            ("0xg", "hexadecimal digit 'g'"),
            ("1 2", "one value per line"),
            ("1.5", "decimal digit '.'"),
            ("0b101", "decimal digit 'b'"),
        ] {
            let (line, _, reason) = bad_line(input.as_bytes());
            assert_eq!(line, 1, "{input}");
            assert!(reason.contains(needle), "{input}: {reason}");
        }
    }

    #[test]
    fn non_utf8_is_a_bad_line() {
        let (line, text, reason) = bad_line(b"1\n2\x80\n");
        assert_eq!(line, 2);
        assert_eq!(text, "2\u{fffd}");
        assert!(reason.contains("UTF-8"), "{reason}");
    }

    #[test]
    fn quoted_text_is_truncated_to_80_chars() {
        let long = "x".repeat(200);
        let (_, text, _) = bad_line(long.as_bytes());
        assert_eq!(text.chars().count(), 80);
    }

    #[test]
    fn overlong_line_is_rejected_without_reading_it_all() {
        let mut input = vec![b'1'; MAX_LINE_BYTES * 4];
        input.push(b'\n');
        let mut reader = TextReader::new(&input[..]);
        let err = read_all(&mut reader).unwrap_err();
        assert!(err.to_string().contains("longer than"), "{err}");
        assert!(reader.bytes_read() <= (MAX_LINE_BYTES + 2) as u64);
        // A line of exactly the limit (here, many leading zeros) is accepted.
        let mut input = vec![b'0'; MAX_LINE_BYTES];
        input.extend_from_slice(b"\r\n");
        assert_eq!(read_all(&mut TextReader::new(&input[..])).unwrap(), vec![0]);
    }

    #[test]
    fn reader_stops_after_an_error_and_counts_bytes() {
        let mut reader = TextReader::new(&b"1\nx\n2\n"[..]);
        let mut out = Vec::new();
        assert!(reader.read_values(&mut out, 10).is_err());
        assert_eq!(out, vec![1]);
        assert!(matches!(
            reader.read_values(&mut out, 10),
            Err(Error::Stopped { offset: 4 })
        ));
        assert_eq!(reader.lines_read(), 2);
    }

    #[test]
    fn respects_max_and_reports_end() {
        let mut reader = TextReader::new(&b"1\n2\n3\n"[..]);
        let mut out = Vec::new();
        assert_eq!(reader.read_values(&mut out, 2).unwrap(), 2);
        assert_eq!(reader.read_values(&mut out, 0).unwrap(), 0);
        assert_eq!(reader.read_values(&mut out, 2).unwrap(), 1);
        assert_eq!(reader.read_values(&mut out, 2).unwrap(), 0);
        assert_eq!(reader.read_values(&mut out, 2).unwrap(), 0);
        assert_eq!(out, vec![1, 2, 3]);
        assert_eq!(reader.bytes_read(), 6);
    }
}
