//! A statement-level reader of GNU assembler source as GCC writes it for RISC-V: labels,
//! directives and instructions with their operands, comments removed, strings respected.
//! It reads only what the rewriter needs; every line it does not change is copied verbatim.

/// One statement of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt<'a> {
    /// `name:`
    Label(&'a str),
    /// `.name args`
    Directive {
        /// The directive, with its dot (`.section`).
        name: &'a str,
        /// Everything after it, trimmed.
        args: &'a str,
    },
    /// `mnemonic op, op, ...`
    Insn {
        /// The mnemonic (`beq`, `addi`, `.insn` is a directive).
        mnemonic: &'a str,
        /// The operands, split at top-level commas and trimmed.
        ops: Vec<&'a str>,
    },
}

/// One source line: its text, its statements, and whether it marks inline assembly.
#[derive(Clone, Debug)]
pub struct Line<'a> {
    /// 1-based line number.
    pub no: usize,
    /// The line as written (without its line ending).
    pub text: &'a str,
    /// Its statements, in order.
    pub stmts: Vec<Stmt<'a>>,
    /// `#APP` (start of inline assembly) or `#NO_APP` (end).
    pub app: Option<bool>,
}

/// Splits `text` at `sep` outside double-quoted strings (with backslash escapes), stopping
/// at a `#` comment outside strings.
fn split_code(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let (mut start, mut in_str, mut escaped) = (0, false, false);
    let mut end = bytes.len();
    for (i, &b) in bytes.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'#' => {
                end = i;
                break;
            }
            b';' => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..end]);
    parts
}

/// Is `c` a character of a symbol name?
pub fn symbol_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$'
}

/// Reads one statement's leading labels and its directive or instruction.
fn parse_stmt<'a>(mut s: &'a str, out: &mut Vec<Stmt<'a>>) {
    loop {
        s = s.trim();
        if s.is_empty() {
            return;
        }
        let len = s.find(|c: char| !symbol_char(c)).unwrap_or(s.len());
        if len > 0 && s[len..].starts_with(':') {
            out.push(Stmt::Label(&s[..len]));
            s = &s[len + 1..];
            continue;
        }
        break;
    }
    let (head, rest) = match s.find(|c: char| c.is_whitespace()) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    };
    if head.starts_with('.') {
        out.push(Stmt::Directive {
            name: head,
            args: rest,
        });
    } else {
        let ops = if rest.is_empty() {
            Vec::new()
        } else {
            split_operands(rest)
        };
        out.push(Stmt::Insn {
            mnemonic: head,
            ops,
        });
    }
}

/// Operands split at commas outside parentheses and strings, trimmed.
fn split_operands(s: &str) -> Vec<&str> {
    let mut ops = Vec::new();
    let (mut depth, mut start, mut in_str) = (0i32, 0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '(' if !in_str => depth += 1,
            ')' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                ops.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    ops.push(s[start..].trim());
    ops
}

/// Reads every line of `src`.
pub fn parse(src: &str) -> Vec<Line<'_>> {
    src.lines()
        .enumerate()
        .map(|(i, text)| {
            let trimmed = text.trim();
            let app = match trimmed {
                "#APP" => Some(true),
                "#NO_APP" => Some(false),
                _ => None,
            };
            let mut stmts = Vec::new();
            for part in split_code(text) {
                parse_stmt(part, &mut stmts);
            }
            Line {
                no: i + 1,
                text,
                stmts,
                app,
            }
        })
        .collect()
}

/// The symbol-name tokens of an operand (`%pcrel_lo(.L3)` gives `.L3`; `8(sp)` gives `sp`).
pub fn tokens(op: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = op.char_indices().peekable();
    std::iter::from_fn(move || loop {
        let (start, c) = rest.next()?;
        if (c.is_ascii_digit() || !symbol_char(c)) && c != '%' {
            if c.is_ascii_digit() {
                // a number or a numeric label reference: skip its characters
                while rest.peek().is_some_and(|&(_, c)| symbol_char(c)) {
                    rest.next();
                }
            }
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, c)) = rest.peek() {
            if symbol_char(c) {
                end = i + c.len_utf8();
                rest.next();
            } else {
                break;
            }
        }
        if c == '%' {
            continue; // a relocation operator such as %pcrel_lo
        }
        return Some((start, &op[start..end]));
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_labels_directives_and_operands() {
        let lines = parse("main: addi sp,sp,-16 # frame\n\t.string \"a;b#c\"\n.L3:\n\tbne\ta0,zero,.L3 ; ret\n#APP\n");
        assert_eq!(
            lines[0].stmts,
            vec![
                Stmt::Label("main"),
                Stmt::Insn {
                    mnemonic: "addi",
                    ops: vec!["sp", "sp", "-16"]
                }
            ]
        );
        assert_eq!(
            lines[1].stmts,
            vec![Stmt::Directive {
                name: ".string",
                args: "\"a;b#c\""
            }]
        );
        assert_eq!(lines[2].stmts, vec![Stmt::Label(".L3")]);
        assert_eq!(lines[3].stmts.len(), 2);
        assert_eq!(lines[4].app, Some(true));
        assert!(lines[4].stmts.is_empty());
    }

    #[test]
    fn operand_tokens_skip_numbers_and_relocation_operators() {
        let t: Vec<&str> = tokens("%pcrel_lo(.L3)").map(|t| t.1).collect();
        assert_eq!(t, vec![".L3"]);
        let t: Vec<&str> = tokens("-16(sp)").map(|t| t.1).collect();
        assert_eq!(t, vec!["sp"]);
        let t: Vec<&str> = tokens("1f").map(|t| t.1).collect();
        assert!(t.is_empty());
        let t: Vec<&str> = tokens(".LC0+8").map(|t| t.1).collect();
        assert_eq!(t, vec![".LC0"]);
    }
}
