//! The house rules of docs/architecture.md ("House rules"), checked on the sources: no
//! non-test function longer than 150 lines, the binary and xtask no larger than their
//! bounds, and no Markdown table written outside its renderer (`outcrop_studies::table`). The functions and sizes listed below predate the rule: each may shrink, none may
//! grow, and no other may join them (a ratchet toward none).

use crate::util::root;
use std::path::{Path, PathBuf};

/// The longest a function may be, in lines from its `fn` to its closing brace.
const MAX_FN_LINES: usize = 150;

/// Functions longer than [`MAX_FN_LINES`] when the rule was made: (file, name, their length
/// then, which they may not exceed).
/// None is left: the last two, the interpreter's `step` and the block engine's `exec_block`,
/// were split with `#[inline(always)]` helpers (issue 49).
const OLDER: &[(&str, &str, usize)] = &[];

/// The most lines of Rust the binary's and xtask's sources may have: both only turn
/// arguments into configurations and results into files (the libraries do the rest).
const BINARY_LINES: usize = 3_000;
const XTASK_LINES: usize = 1_500;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if !["tests", "benches", "examples", "target", "fixtures"].contains(&name.as_str()) {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// A function's name if `line` starts one (`fn`, with any visibility and qualifiers).
fn fn_name(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace().peekable();
    while let Some(w) = words.next() {
        match w {
            "fn" => {
                let name = words.next()?;
                let end = name.find(['(', '<']).unwrap_or(name.len());
                return Some(&name[..end]);
            }
            "pub" | "const" | "async" | "unsafe" | "extern" | "\"C\"" | "default" => {}
            w if w.starts_with("pub(") => {}
            _ => return None,
        }
    }
    None
}

/// A line without its `//` comment, string literals and character literals (whose braces
/// are not the code's). Strings spanning lines are rare enough in these sources that a count
/// off by one would show as a test failure to look at, not pass silently.
fn code_of(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                // to the closing quote, skipping escapes
                while let Some(d) = chars.next() {
                    match d {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                // a character literal ('{', '\\'') or a lifetime ('a): skip a literal only
                let rest: String = chars.clone().take(3).collect();
                let mut it = rest.chars();
                match (it.next(), it.next(), it.next()) {
                    (Some('\\'), Some(_), Some('\'')) => {
                        chars.nth(2);
                    }
                    (Some(_), Some('\''), _) => {
                        chars.nth(1);
                    }
                    _ => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// (name, first line, length) of each function in `text`, up to its `#[cfg(test)] mod`.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        let Some(name) = fn_name(lines[i]) else {
            i += 1;
            continue;
        };
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < end {
            let code = code_of(lines[j]);
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (started && depth <= 0) || (!started && code.trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        out.push((name.to_string(), i + 1, j - i + 1));
        i = if started { j + 1 } else { i + 1 };
    }
    out
}

#[test]
fn no_function_grows_past_150_lines() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("xtask"), &mut files);
    let mut long = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        for (name, line, len) in functions(&std::fs::read_to_string(f).unwrap()) {
            if len <= MAX_FN_LINES {
                continue;
            }
            match OLDER.iter().find(|(p, n, _)| *p == rel && *n == name) {
                Some(&(_, _, was)) if len <= was => {}
                Some(&(_, _, was)) => long.push(format!(
                    "{rel}:{line}: `{name}` grew to {len} lines (was {was}; the bound is {MAX_FN_LINES})"
                )),
                None => long.push(format!(
                    "{rel}:{line}: `{name}` is {len} lines, over {MAX_FN_LINES}: split it"
                )),
            }
        }
    }
    // an older function now short enough, renamed or gone leaves the list
    for (p, n, _) in OLDER {
        let text = std::fs::read_to_string(root.join(p)).unwrap_or_default();
        if !functions(&text)
            .iter()
            .any(|(name, _, len)| name == n && *len > MAX_FN_LINES)
        {
            long.push(format!(
                "{p}: `{n}` is no longer over {MAX_FN_LINES} lines: remove it from OLDER"
            ));
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}

fn lines_in(dir: &Path) -> usize {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum()
}

#[test]
fn the_binary_and_xtask_stay_within_their_bounds() {
    let root = root();
    for (dir, bound) in [
        ("crates/outcrop/src", BINARY_LINES),
        ("xtask/src", XTASK_LINES),
    ] {
        let n = lines_in(&root.join(dir));
        assert!(
            n <= bound,
            "{dir} has {n} lines, more than its bound of {bound}: move what is not argument \
             parsing, dispatch or the terminal into a library (outcrop-cli, run, report, lab)"
        );
    }
}

/// The studies and benchmarks fill `outcrop_studies::table::Table`s; a table's header,
/// alignment row and pipes are written by its `Display` alone.
#[test]
fn studies_and_benchmarks_write_tables_only_through_the_renderer() {
    let root = root();
    let mut files = Vec::new();
    for dir in ["crates/lab/src", "xtask/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // unit tests may hold rendered rows as expectations
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in code.lines().enumerate() {
            // a Markdown alignment row or a row's opening pipe inside a string literal
            if line.contains("|---") || line.contains("\"| ") || line.contains("\\n| ") {
                found.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "Markdown tables written by hand (fill a studies::table::Table instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn functions_are_measured_from_fn_to_their_closing_brace() {
    let text = "pub(crate) fn a(x: u8) -> u8 {\n    if x > 0 { 1 } else { 0 } // }\n}\nfn b();\nimpl X {\n    pub async fn c<'a>(s: &'a str) {\n        let _ = (\"{\", '{', b'}', '\\'');\n    }\n}\n#[cfg(test)]\nmod tests {\n    fn d() {}\n}\n";
    let f: Vec<(String, usize, usize)> = functions(text);
    assert_eq!(
        f,
        [("a".into(), 1, 3), ("b".into(), 4, 1), ("c".into(), 6, 3)]
    );
}
