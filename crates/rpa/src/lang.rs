//! The RPA assembly language (the paper's §3.1 and Figure 2): tokens,
//! the syntax tree, and a parser whose errors carry a span, what was expected and a hint.
//!
//! ```text
//! program := query*
//! query   := 'for' class+ ('every' N | 'always') 'collect' item+ ';' clause*
//! class   := opCLASS tag | evEVENT              tag := '*' | 0..3
//! clause  := [label ':'] (actions | 'if' cond 'then' actions ['else' actions]) ';'
//! actions := action+         action := 'send' Q | 'count' | 'interrupt' ['sync'|'async']
//!                                    | 'stop' | 'goto' label
//! cond    := cmp [('and' | 'or') cmp]
//! cmp     := field ('='|'<>'|'<'|'<='|'>'|'>=') imm | field ('bset'|'bclr') imm
//!          | 'filter' (2|4|16|256) | 'true' | 'false'
//! field   := item ['.' ('h0'|'h1'|'b0'|'b1'|'b2'|'b3')]       imm := 0..65535
//! ```
//! Comments run from `#` or `//` to the end of the line. Keywords are case-insensitive;
//! class, event and item names are matched exactly as the paper writes them.

use crate::names::{self, Class};
use serde::Serialize;
use std::ops::Range;

/// A byte range in the source.
pub type Span = Range<usize>;

/// A token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A name or keyword.
    Ident(String),
    /// A number (decimal or `0x` hexadecimal), with its value if it fits 64 bits.
    Num(Option<u64>),
    /// `*`
    Star,
    /// `;`
    Semi,
    /// `:`
    Colon,
    /// `.`
    Dot,
    /// A comparison operator.
    Op(RelOp),
    /// A character that starts no token.
    Bad(char),
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Num(_) => write!(f, "a number"),
            Tok::Star => write!(f, "`*`"),
            Tok::Semi => write!(f, "`;`"),
            Tok::Colon => write!(f, "`:`"),
            Tok::Dot => write!(f, "`.`"),
            Tok::Op(o) => write!(f, "`{}`", o.text()),
            Tok::Bad(c) => write!(f, "`{c}`"),
        }
    }
}

/// Unsigned magnitude comparisons (Table 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RelOp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl RelOp {
    /// Its spelling.
    pub fn text(self) -> &'static str {
        match self {
            RelOp::Eq => "=",
            RelOp::Ne => "<>",
            RelOp::Lt => "<",
            RelOp::Le => "<=",
            RelOp::Gt => ">",
            RelOp::Ge => ">=",
        }
    }
}

/// Splits `src` into tokens with their spans (a character no token starts with becomes
/// [`Tok::Bad`], for the parser to report). Twelve token kinds need no parser generator; the
/// lexer is hand-written (docs/rpa.md says so).
pub fn lex(src: &str) -> Vec<(Tok, Span)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    // a UTF-8 byte order mark (editors on Windows write one) is not part of the text
    let mut i = if src.starts_with('\u{feff}') { 3 } else { 0 };
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' || (c == b'/' && b.get(i + 1) == Some(&b'/')) {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        let tok = if c.is_ascii_digit() {
            let hex = c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X'));
            if hex {
                i += 2;
            }
            let digits = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let text = &src[digits..i];
            Tok::Num(if hex {
                u64::from_str_radix(text, 16).ok()
            } else {
                text.parse().ok()
            })
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            Tok::Ident(src[start..i].to_string())
        } else {
            let two = src.get(i..i + 2).unwrap_or("");
            let (t, n) = match (two, c) {
                ("<>", _) => (Tok::Op(RelOp::Ne), 2),
                ("<=", _) => (Tok::Op(RelOp::Le), 2),
                (">=", _) => (Tok::Op(RelOp::Ge), 2),
                (_, b'<') => (Tok::Op(RelOp::Lt), 1),
                (_, b'>') => (Tok::Op(RelOp::Gt), 1),
                (_, b'=') => (Tok::Op(RelOp::Eq), 1),
                (_, b'*') => (Tok::Star, 1),
                (_, b';') => (Tok::Semi, 1),
                (_, b':') => (Tok::Colon, 1),
                (_, b'.') => (Tok::Dot, 1),
                _ => {
                    let ch = src[i..].chars().next().unwrap_or(' ');
                    (Tok::Bad(ch), ch.len_utf8())
                }
            };
            i += n;
            t
        };
        out.push((tok, start..i));
    }
    out
}

/// How often a query's classes are sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Rate {
    /// Every instruction (or event).
    Always,
    /// One in N at random (N a power of two, 2 to 65,536).
    Every(u32),
}

/// Which part of a record word a comparison reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Part {
    /// The whole 32-bit word.
    Word,
    /// A 16-bit half, 0 (low) or 1.
    Half(u8),
    /// A byte, 0 (low) to 3.
    Byte(u8),
}

/// A record field a comparison reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Field {
    /// Index in [`names::ITEMS`].
    pub item: u8,
    /// The part of its word.
    pub part: Part,
    /// Where it is written.
    pub span: Span,
}

/// A comparison (Table 3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Cmp {
    /// `field OP imm`
    Rel(Field, RelOp, u16),
    /// `field bset mask`: all bits under the mask set.
    BitsSet(Field, u16),
    /// `field bclr mask`: all bits under the mask clear.
    BitsClear(Field, u16),
    /// `filter N`: succeeds once in N (2, 4, 16 or 256) at random.
    Filter(u16),
    /// `true`
    True,
    /// `false`
    False,
}

/// How two comparisons combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Join {
    /// Both must match.
    And,
    /// Either must match.
    Or,
}

/// A clause's condition: one or two comparisons.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cond {
    /// The first comparison.
    pub a: Cmp,
    /// The second, and how it joins the first.
    pub b: Option<(Join, Cmp)>,
}

/// An action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Action {
    /// `send Q`: copy the record into message queue Q.
    Send(u8, Span),
    /// `count`: increment the clause's counter.
    Count(Span),
    /// `interrupt [sync|async]`.
    Interrupt {
        /// Synchronous (the next instruction waits for the query).
        sync: bool,
        /// Where.
        span: Span,
    },
    /// `stop`: the query is done with this record.
    Stop(Span),
    /// `goto label`.
    Goto(String, Span),
}

/// What a clause does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Body {
    /// Unconditional actions.
    Do(Vec<Action>),
    /// `if cond then … [else …]`.
    If {
        /// The condition.
        cond: Cond,
        /// Actions when it matches.
        then: Vec<Action>,
        /// Actions when it does not.
        els: Option<Vec<Action>>,
    },
}

/// A query clause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Clause {
    /// Its label, if any.
    pub label: Option<(String, Span)>,
    /// What it does.
    pub body: Body,
    /// The whole clause.
    pub span: Span,
}

/// A query: its header and clauses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Query {
    /// Profiled classes, with where each is written.
    pub classes: Vec<(Class, Span)>,
    /// Sampling rate.
    pub rate: Rate,
    /// Collected items (indices in [`names::ITEMS`]), as written.
    pub items: Vec<(u8, Span)>,
    /// Its clauses.
    pub clauses: Vec<Clause>,
    /// The header.
    pub header: Span,
}

/// A parsed program.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Program {
    /// Its queries, in order.
    pub queries: Vec<Query>,
}

/// A problem in a query, with where it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What is wrong.
    pub message: String,
    /// Where (a byte range of the source).
    pub span: Span,
    /// The label under the caret (what was expected, what was found).
    pub label: String,
    /// How to fix it, if we can tell.
    pub hint: Option<String>,
}

impl Diagnostic {
    fn new(message: impl Into<String>, span: Span, label: impl Into<String>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
            label: label.into(),
            hint: None,
        }
    }

    fn hint(mut self, h: impl Into<String>) -> Diagnostic {
        self.hint = Some(h.into());
        self
    }
}

/// Line and column (1-based, columns in characters) of byte `at` in `src`.
pub fn line_col(src: &str, at: usize) -> (usize, usize) {
    let at = at.min(src.len());
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Renders `d` as a compiler would: `file:line:column`, the line with a caret under the span,
/// the label and the hint (with `ariadne`, no colours).
pub fn render(d: &Diagnostic, file: &str, src: &str) -> String {
    use ariadne::{Config, Label, Report, ReportKind, Source};
    let (line, col) = line_col(src, d.span.start);
    let span =
        d.span.start.min(src.len())..d.span.end.min(src.len()).max(d.span.start.min(src.len()));
    let mut report = Report::build(ReportKind::Error, (file, span.clone()))
        // spans are byte offsets (ariadne counts characters unless told)
        .with_config(
            Config::default()
                .with_color(false)
                .with_index_type(ariadne::IndexType::Byte),
        )
        .with_message(format!("{file}:{line}:{col}: {}", d.message))
        .with_label(Label::new((file, span)).with_message(&d.label));
    if let Some(h) = &d.hint {
        report = report.with_help(h);
    }
    let mut out = Vec::new();
    let _ = report.finish().write((file, Source::from(src)), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

struct Parser<'s> {
    toks: Vec<(Tok, Span)>,
    pos: usize,
    end: usize,
    _src: &'s str,
}

fn kw(t: &Tok, k: &str) -> bool {
    matches!(t, Tok::Ident(s) if s.eq_ignore_ascii_case(k))
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn span(&self) -> Span {
        self.toks
            .get(self.pos)
            .map_or(self.end..self.end, |t| t.1.clone())
    }

    fn found(&self) -> String {
        self.peek()
            .map_or("the end of the file".to_string(), |t| t.to_string())
    }

    fn next(&mut self) -> Option<(Tok, Span)> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn expected(&self, what: &str) -> Diagnostic {
        Diagnostic::new(
            format!("expected {what}, found {}", self.found()),
            self.span(),
            format!("expected {what}"),
        )
    }

    fn is_kw(&self, k: &str) -> bool {
        self.peek().is_some_and(|t| kw(t, k))
    }

    fn expect_kw(&mut self, k: &str) -> Result<Span, Diagnostic> {
        if self.is_kw(k) {
            Ok(self.next().map(|t| t.1).unwrap_or_default())
        } else {
            Err(self.expected(&format!("`{k}`")))
        }
    }

    fn number(&mut self, what: &str, max: u64) -> Result<(u64, Span), Diagnostic> {
        match self.peek() {
            Some(Tok::Num(v)) => {
                let v = *v;
                let span = self.span();
                self.pos += 1;
                let text = self._src.get(span.clone()).unwrap_or("");
                let (digits, radix) = match text.strip_prefix("0x").or(text.strip_prefix("0X")) {
                    Some(hex) => (hex, 16),
                    None => (text, 10),
                };
                let malformed = digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix));
                match v {
                    Some(v) if v <= max => Ok((v, span)),
                    None if malformed => Err(Diagnostic::new(
                        format!("`{text}` is not a number"),
                        span,
                        if radix == 16 {
                            "hex digits expected after `0x`"
                        } else {
                            "decimal digits, or `0x` and hex digits"
                        }
                        .to_string(),
                    )),
                    _ => Err(Diagnostic::new(
                        format!("{what} out of range"),
                        span,
                        format!("at most {max}"),
                    )),
                }
            }
            _ => Err(self.expected(what)),
        }
    }

    fn query(&mut self) -> Result<Query, Diagnostic> {
        let start = self.span().start;
        self.expect_kw("for")?;
        let mut classes = Vec::new();
        while let Some(Tok::Ident(name)) = self.peek().cloned() {
            if kw(&Tok::Ident(name.clone()), "every") || kw(&Tok::Ident(name.clone()), "always") {
                break;
            }
            let span = self.span();
            self.pos += 1;
            if let Some(c) = names::OP_CLASSES.iter().position(|n| *n == name) {
                let tag = match self.peek() {
                    Some(Tok::Star) => {
                        self.pos += 1;
                        None
                    }
                    Some(Tok::Num(_)) => Some(self.number("a profile tag (0 to 3)", 3)?.0 as u8),
                    _ => {
                        return Err(self.expected("a profile tag (`*` or 0 to 3)").hint(format!(
                            "write `{name} *` for every tag, or `{name} 1` for tag 1"
                        )))
                    }
                };
                let end = self.toks[self.pos - 1].1.end;
                for t in 0..4u8 {
                    if tag.is_none_or(|x| x == t) {
                        classes.push((
                            Class::Op {
                                class: c as u8,
                                tag: t,
                            },
                            span.start..end,
                        ));
                    }
                }
            } else if let Some(e) = names::EVENTS.iter().position(|n| *n == name) {
                if matches!(self.peek(), Some(Tok::Star)) {
                    self.pos += 1; // events have no tag; `*` is accepted as in Figure 2b
                }
                classes.push((Class::Event(e as u8), span));
            } else {
                let mut all: Vec<&str> = names::OP_CLASSES.to_vec();
                all.extend(names::EVENTS);
                let d = Diagnostic::new(
                    format!("unknown instruction class or event `{name}`"),
                    span,
                    "not a class (Table 1) or an event",
                );
                return Err(match names::closest(&name, &all) {
                    Some(c) => d.hint(format!("did you mean `{c}`?")),
                    None => d.hint(format!(
                        "classes: {}; events: {}",
                        names::OP_CLASSES.join(" "),
                        names::EVENTS.join(" ")
                    )),
                });
            }
        }
        if classes.is_empty() {
            return Err(self
                .expected("an instruction class or event")
                .hint("e.g. `for opBRANCH * every 256 collect pc misc;`"));
        }
        let rate = if self.is_kw("always") {
            self.pos += 1;
            Rate::Always
        } else if self.is_kw("every") {
            self.pos += 1;
            let (n, span) = self.number("a sampling interval", 65_536)?;
            if !n.is_power_of_two() || n < 2 {
                return Err(Diagnostic::new(
                    "the sampling interval must be a power of two from 2 to 65536",
                    span,
                    format!("{n} is not"),
                )
                .hint("random sampling ANDs LFSR bits, so it samples one in 2^k; use `always` for every record"));
            }
            Rate::Every(n as u32)
        } else {
            return Err(self.expected("`every N` or `always`"));
        };
        self.expect_kw("collect")?;
        let mut items: Vec<(u8, Span)> = Vec::new();
        while let Some(Tok::Ident(name)) = self.peek().cloned() {
            let span = self.span();
            let Some(it) = names::item(&name) else {
                let d = Diagnostic::new(
                    format!("unknown record item `{name}`"),
                    span,
                    "not an item of Table 2",
                );
                return Err(match names::closest(&name, &names::ITEMS) {
                    Some(c) => d.hint(format!("did you mean `{c}`?")),
                    None => d.hint(format!("items: {}", names::ITEMS.join(" "))),
                });
            };
            if let Some((_, first)) = items.iter().find(|(i, _)| *i == it) {
                let (l, c) = line_col(self._src, first.start);
                return Err(Diagnostic::new(
                    format!("`{name}` is collected twice"),
                    span,
                    "again here",
                )
                .hint(format!("it is already collected at {l}:{c}")));
            }
            self.pos += 1;
            items.push((it, span));
        }
        if items.is_empty() {
            return Err(self
                .expected("a record item to collect")
                .hint(format!("items: {}", names::ITEMS.join(" "))));
        }
        if items.len() > 7 {
            let span = items[7].1.start..items[items.len() - 1].1.end;
            return Err(Diagnostic::new(
                format!(
                    "a record holds at most 7 words; this query collects {}",
                    items.len()
                ),
                span,
                "beyond the seventh word",
            )
            .hint("split the query in two, or drop items (each item is one 32-bit word)"));
        }
        if !matches!(self.peek(), Some(Tok::Semi)) {
            return Err(self.expected("`;` after the header"));
        }
        let header = start..self.span().end;
        self.pos += 1;
        let mut clauses = Vec::new();
        while self.peek().is_some() && !self.is_kw("for") {
            clauses.push(self.clause()?);
        }
        Ok(Query {
            classes,
            rate,
            items,
            clauses,
            header,
        })
    }

    fn clause(&mut self) -> Result<Clause, Diagnostic> {
        let start = self.span().start;
        let mut label = None;
        if let (Some(Tok::Ident(name)), Some((Tok::Colon, _))) =
            (self.peek().cloned(), self.toks.get(self.pos + 1))
        {
            label = Some((name, self.span()));
            self.pos += 2;
        }
        let body = if self.is_kw("if") {
            self.pos += 1;
            let cond = self.cond()?;
            self.expect_kw("then")?;
            let then = self.actions()?;
            let els = if self.is_kw("else") {
                self.pos += 1;
                Some(self.actions()?)
            } else {
                None
            };
            Body::If { cond, then, els }
        } else {
            Body::Do(self.actions()?)
        };
        if !matches!(self.peek(), Some(Tok::Semi)) {
            return Err(self.expected("`;` at the end of the clause"));
        }
        let end = self.span().end;
        self.pos += 1;
        Ok(Clause {
            label,
            body,
            span: start..end,
        })
    }

    fn actions(&mut self) -> Result<Vec<Action>, Diagnostic> {
        let mut v = Vec::new();
        loop {
            let span = self.span();
            if self.is_kw("send") {
                self.pos += 1;
                let (q, s) = self.number("a queue number (0 to 15)", 15)?;
                v.push(Action::Send(q as u8, span.start..s.end));
            } else if self.is_kw("count") {
                self.pos += 1;
                v.push(Action::Count(span));
            } else if self.is_kw("interrupt") {
                self.pos += 1;
                let mut sync = false;
                let mut end = span.end;
                if self.is_kw("sync") || self.is_kw("async") {
                    sync = self.is_kw("sync");
                    end = self.span().end;
                    self.pos += 1;
                }
                v.push(Action::Interrupt {
                    sync,
                    span: span.start..end,
                });
            } else if self.is_kw("stop") {
                self.pos += 1;
                v.push(Action::Stop(span));
            } else if self.is_kw("goto") {
                self.pos += 1;
                match self.next() {
                    Some((Tok::Ident(l), s)) => v.push(Action::Goto(l, span.start..s.end)),
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("a label after `goto`"));
                    }
                }
            } else {
                break;
            }
        }
        if v.is_empty() {
            return Err(
                self.expected("an action (`send Q`, `count`, `interrupt`, `stop` or `goto L`)")
            );
        }
        Ok(v)
    }

    fn cond(&mut self) -> Result<Cond, Diagnostic> {
        let a = self.cmp()?;
        let b = if self.is_kw("and") || self.is_kw("or") {
            let j = if self.is_kw("and") {
                Join::And
            } else {
                Join::Or
            };
            self.pos += 1;
            Some((j, self.cmp()?))
        } else {
            None
        };
        if self.is_kw("and") || self.is_kw("or") {
            return Err(Diagnostic::new(
                "a clause makes at most two comparisons",
                self.span(),
                "a third comparison",
            )
            .hint("chain clauses with `goto` (or if/else) for longer conditions"));
        }
        Ok(Cond { a, b })
    }

    fn cmp(&mut self) -> Result<Cmp, Diagnostic> {
        if self.is_kw("true") {
            self.pos += 1;
            return Ok(Cmp::True);
        }
        if self.is_kw("false") {
            self.pos += 1;
            return Ok(Cmp::False);
        }
        if self.is_kw("filter") {
            self.pos += 1;
            let (n, s) = self.number("a filter rate (2, 4, 16 or 256)", 256)?;
            if ![2, 4, 16, 256].contains(&n) {
                return Err(Diagnostic::new(
                    "a filter succeeds once in 2, 4, 16 or 256",
                    s,
                    format!("{n} is not one of them"),
                )
                .hint("Table 3 offers FILTER 2/4/16/256; for other rates sample in the header (`every N`)"));
            }
            return Ok(Cmp::Filter(n as u16));
        }
        let field = self.field()?;
        if self.is_kw("bset") || self.is_kw("bclr") {
            let set = self.is_kw("bset");
            self.pos += 1;
            let (m, _) = self.number("a 16-bit mask", 0xffff)?;
            return Ok(if set {
                Cmp::BitsSet(field, m as u16)
            } else {
                Cmp::BitsClear(field, m as u16)
            });
        }
        let op = match self.peek() {
            Some(Tok::Op(o)) => *o,
            _ => {
                return Err(self
                    .expected("a comparison (`=`, `<>`, `<`, `<=`, `>`, `>=`, `bset` or `bclr`)"))
            }
        };
        self.pos += 1;
        let (v, _) = self.number("a 16-bit immediate (0 to 65535)", 0xffff).map_err(|d| {
            d.hint("comparisons take a 16-bit immediate (the query instruction's one immediate field)")
        })?;
        Ok(Cmp::Rel(field, op, v as u16))
    }

    fn field(&mut self) -> Result<Field, Diagnostic> {
        let span = self.span();
        let Some(Tok::Ident(name)) = self.peek().cloned() else {
            return Err(self.expected("a record item, `filter N`, `true` or `false`"));
        };
        let Some(item) = names::item(&name) else {
            let d = Diagnostic::new(
                format!("unknown record item `{name}`"),
                span,
                "not an item of Table 2",
            );
            return Err(match names::closest(&name, &names::ITEMS) {
                Some(c) => d.hint(format!("did you mean `{c}`?")),
                None => d,
            });
        };
        self.pos += 1;
        let mut part = Part::Word;
        let mut end = span.end;
        if matches!(self.peek(), Some(Tok::Dot)) {
            self.pos += 1;
            let s = self.span();
            let p = match self.peek() {
                Some(Tok::Ident(p)) => match p.to_ascii_lowercase().as_str() {
                    "h0" => Some(Part::Half(0)),
                    "h1" => Some(Part::Half(1)),
                    "b0" => Some(Part::Byte(0)),
                    "b1" => Some(Part::Byte(1)),
                    "b2" => Some(Part::Byte(2)),
                    "b3" => Some(Part::Byte(3)),
                    _ => None,
                },
                _ => None,
            };
            let Some(p) = p else {
                return Err(Diagnostic::new(
                    "expected a part of the word: h0, h1 (16-bit halves) or b0 to b3 (bytes)",
                    s,
                    "not a part",
                ));
            };
            part = p;
            end = s.end;
            self.pos += 1;
        }
        Ok(Field {
            item,
            part,
            span: span.start..end,
        })
    }
}

/// Parses a program; the first error is returned as a [`Diagnostic`].
pub fn parse(src: &str) -> Result<Program, Diagnostic> {
    let toks = lex(src);
    if let Some((t, s)) = toks.iter().find(|(t, _)| matches!(t, Tok::Bad(_))) {
        return Err(Diagnostic::new(
            format!("unexpected character {t}"),
            s.clone(),
            "not part of the language",
        ));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        end: src.len(),
        _src: src,
    };
    let mut program = Program::default();
    while p.peek().is_some() {
        program.queries.push(p.query()?);
    }
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's Figure 2, verbatim.
    pub const FIGURE_2: &str = "for opBRANCH * every 256 collect pc misc ;
send 1 stop;
for evL2DMISS * always collect pc res2 ;
send 2 stop;
for opSTORE 1 always collect op1 op2 op3;
if op1 <> 0 then send 3 stop else stop;
for opJMP * opBRANCH * opLOAD *
opSTORE * opALU * opMULT *
opFLOAT * opSYS *
every 1024 collect pc rrate;
send 4 stop;
";

    #[test]
    fn figure_2_parses_verbatim() {
        let p = parse(FIGURE_2).unwrap();
        assert_eq!(p.queries.len(), 4);
        assert_eq!(p.queries[0].classes.len(), 4);
        assert_eq!(p.queries[0].rate, Rate::Every(256));
        let (c, span) = &p.queries[1].classes[0];
        assert_eq!(
            (*c, &FIGURE_2[span.clone()]),
            (Class::Event(0), "evL2DMISS")
        );
        assert_eq!(p.queries[2].classes.len(), 1);
        assert_eq!(p.queries[3].classes.len(), 32);
        match &p.queries[2].clauses[0].body {
            Body::If { cond, then, els } => {
                assert!(matches!(&cond.a, Cmp::Rel(f, RelOp::Ne, 0) if f.item == 2));
                assert_eq!(then.len(), 2);
                assert_eq!(els.as_ref().map(Vec::len), Some(1));
            }
            b => panic!("{b:?}"),
        }
    }

    #[test]
    fn errors_point_at_the_token_and_say_what_was_expected() {
        let e = parse("for opBRANCH * every 256 collect pc misc\nsend 1 stop;").unwrap_err();
        assert_eq!(
            line_col(
                "for opBRANCH * every 256 collect pc misc\nsend 1 stop;",
                e.span.start
            ),
            (2, 1)
        );
        assert!(e.message.contains("unknown record item `send`"), "{e:?}");
        let e = parse("for opBRANCHES * always collect pc; stop;").unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("did you mean `opBRANCH`?"));
        let e = parse("for opLOAD * always collect pc thread op1 op1up op2 op2up op3 res1; stop;")
            .unwrap_err();
        assert!(
            e.message.contains("at most 7 words; this query collects 8"),
            "{e:?}"
        );
        let e = parse("for opLOAD * every 100 collect pc; stop;").unwrap_err();
        assert!(e.message.contains("power of two"));
        let e = parse("for opLOAD * always collect pc; if pc < 70000 then stop;").unwrap_err();
        assert!(e.message.contains("out of range"), "{e:?}");
        let e = parse("for opLOAD * always collect pc pc; stop;").unwrap_err();
        assert!(e.message.contains("collected twice"));
        let e = parse("for opLOAD * always collect pc; send 1 stop").unwrap_err();
        assert!(e
            .message
            .contains("expected `;` at the end of the clause, found the end"));
        let e = parse("for opLOAD * always collect pc; if filter 3 then stop;").unwrap_err();
        assert!(e.message.contains("2, 4, 16 or 256"));
        let e = parse("for opLOAD * always collect pc; @").unwrap_err();
        assert!(e.message.contains("unexpected character `@`"));
    }

    #[test]
    fn rendered_diagnostics_have_file_line_column_caret_and_hint() {
        let src = "for opBRANCH * every 256\n  collect pc mics;\nsend 1 stop;\n";
        let e = parse(src).unwrap_err();
        let r = render(&e, "q.rpa", src);
        assert!(r.contains("q.rpa:2:14: unknown record item `mics`"), "{r}");
        assert!(r.contains("did you mean `misc`?"), "{r}");
        assert!(r.contains('^') || r.contains('─'), "{r}");
    }

    #[test]
    fn comments_labels_parts_and_two_comparisons() {
        let src = "# edges\nfor opBRANCH 2 always collect pc misc op1; // tag 2 only\n\
                   a: if misc.b0 bset 1 and op1.h1 >= 0x10 then count goto b;\n\
                   b: if filter 16 or false then send 0 interrupt sync stop;\n";
        let p = parse(src).unwrap();
        let q = &p.queries[0];
        assert_eq!(q.classes.len(), 1);
        assert_eq!(q.clauses[0].label.as_ref().unwrap().0, "a");
        match &q.clauses[0].body {
            Body::If { cond, .. } => {
                assert!(matches!(&cond.a, Cmp::BitsSet(f, 1) if f.part == Part::Byte(0)));
                assert!(
                    matches!(&cond.b, Some((Join::And, Cmp::Rel(f, RelOp::Ge, 16))) if f.part == Part::Half(1))
                );
            }
            b => panic!("{b:?}"),
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_reports_a_span_inside_it(s in "[ -~\\n]{0,200}") {
            match parse(&s) {
                Ok(_) => {}
                Err(d) => proptest::prop_assert!(d.span.start <= s.len() && d.span.end <= s.len()),
            }
        }
    }
}
