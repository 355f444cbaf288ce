//! Untrusted text made safe for where it goes. Names in a profile (symbols, DWARF file names,
//! site names, source lines) come from files strangers wrote; written raw, they could forge
//! lines of a line-based export or send escape sequences to a terminal. Each function here
//! escapes what its destination gives meaning to as `\xNN` (an ASCII character) or `\u{N}`
//! (another), and borrows when there is nothing to escape (the common case). The escapes are
//! for people and for keeping a line one line; they are not meant to be decoded, so a
//! backslash stays as it is. docs/formats.md, "Names in files and on the terminal".

use std::borrow::Cow;
use std::fmt::Write as _;

/// Escapes the characters `escape(c)` selects.
fn escape_if(s: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !escape(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// A control character: C0 (newline and tab included), DEL, or C1 (U+0080–U+009F, which
/// some terminals read as escape sequence introducers).
pub fn is_control(c: char) -> bool {
    c.is_control()
}

/// Text for a terminal or a one-line message: control characters escaped, so no escape
/// sequence reaches the terminal and no name spans lines.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape_if(s, is_control)
}

/// A text report or message for a terminal: control characters escaped but for the newlines
/// and tabs that lay it out, so no escape sequence reaches the terminal. (A name that should
/// not span lines is escaped with [`terminal`] where it is placed.)
pub fn text(s: &str) -> Cow<'_, str> {
    escape_if(s, |c| is_control(c) && c != '\n' && c != '\t')
}

/// A frame of a folded-stacks line (`a;b;c 123`): `;` (the frame separator) and control
/// characters (a newline would start a forged line) escaped. Spaces stay: readers split the
/// count off at the last space.
pub fn folded_frame(s: &str) -> Cow<'_, str> {
    escape_if(s, |c| c == ';' || is_control(c))
}

/// A name in a whitespace-separated line format (BOLT `.fdata`, sites files): whitespace and
/// control characters escaped, so the name stays one field.
pub fn field(s: &str) -> Cow<'_, str> {
    escape_if(s, |c| c.is_whitespace() || is_control(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn escaped_text_holds_nothing_its_destination_reads(s in "\\PC*|[\\x00-\\x{a0};\\\\ a-z]*") {
            prop_assert!(!terminal(&s).chars().any(is_control));
            prop_assert!(!text(&s).chars().any(|c| is_control(c) && c != '\n' && c != '\t'));
            let f = folded_frame(&s);
            prop_assert!(!f.chars().any(|c| c == ';' || is_control(c)));
            prop_assert!(!field(&s).chars().any(|c| c.is_whitespace() || is_control(c)));
            // nothing else changes: text without those characters is returned as it is
            if !s.chars().any(|c| c == ';' || is_control(c)) {
                prop_assert_eq!(f.as_ref(), s.as_str());
            }
        }
    }

    #[test]
    fn each_destination_escapes_what_it_gives_meaning_to() {
        let evil = "evil;fake_frame 999999999\nmain;injected\x1b[31m\u{9b}";
        assert_eq!(
            terminal(evil),
            "evil;fake_frame 999999999\\x0amain;injected\\x1b[31m\\u{9b}"
        );
        assert_eq!(
            folded_frame(evil),
            "evil\\x3bfake_frame 999999999\\x0amain\\x3binjected\\x1b[31m\\u{9b}"
        );
        assert_eq!(
            field(evil),
            "evil;fake_frame\\x20999999999\\x0amain;injected\\x1b[31m\\u{9b}"
        );
        assert!(matches!(terminal("plain_name"), Cow::Borrowed(_)));
        assert_eq!(
            text("a\tb\n\x1b]0;title\x07\r"),
            "a\tb\n\\x1b]0;title\\x07\\x0d"
        );
        assert!(matches!(folded_frame("ns::f<int> (x)"), Cow::Borrowed(_)));
        assert_eq!(field("\u{a0}"), "\\u{a0}"); // non-breaking space: whitespace
    }
}
