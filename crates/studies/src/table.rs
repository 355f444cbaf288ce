//! Tables as data: a study fills a [`Table`] (column titles, their alignment, rows of cells
//! already formatted) and this module renders it, so every table in the docs is written by
//! one renderer. Markdown (GitHub's pipe tables) is the one format today.
//!
//! ```
//! use outcrop_studies::table::Table;
//! let mut t = Table::new().left("workload").right("MIPS");
//! t.row(["lz", "812"]);
//! assert_eq!(t.to_string(), "| workload | MIPS |\n|---|---:|\n| lz | 812 |\n");
//! ```

use std::fmt;

/// How a column's cells sit: text left, numbers right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// `---` in Markdown.
    Left,
    /// `---:` in Markdown.
    Right,
}

/// A table: titled, aligned columns and rows of cells.
///
/// A row shorter than the header is padded with empty cells when rendered; a longer one keeps
/// its extra cells (Markdown renderers drop them), so no value is ever lost silently.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    columns: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table without columns or rows.
    pub fn new() -> Table {
        Table::default()
    }

    /// The table with one more left-aligned column.
    pub fn left(mut self, title: impl Into<String>) -> Table {
        self.columns.push((title.into(), Align::Left));
        self
    }

    /// The table with one more right-aligned column.
    pub fn right(mut self, title: impl Into<String>) -> Table {
        self.columns.push((title.into(), Align::Right));
        self
    }

    /// The table with one more right-aligned column for each title.
    pub fn rights<S: Into<String>>(self, titles: impl IntoIterator<Item = S>) -> Table {
        titles.into_iter().fold(self, Table::right)
    }

    /// Adds a column to a table being filled.
    pub fn push_column(&mut self, title: impl Into<String>, align: Align) {
        self.columns.push((title.into(), align));
    }

    /// Appends a row of cells.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows' cells, as given.
    pub fn rows(&self) -> &[Vec<String>] {
        &self.rows
    }
}

/// GitHub Markdown: the header, the alignment row, one line per row, each ending in `\n`.
impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("|")?;
        for (title, _) in &self.columns {
            write!(f, " {title} |")?;
        }
        f.write_str("\n|")?;
        for (_, align) in &self.columns {
            f.write_str(match align {
                Align::Left => "---|",
                Align::Right => "---:|",
            })?;
        }
        f.write_str("\n")?;
        for row in &self.rows {
            f.write_str("|")?;
            let width = row.len().max(self.columns.len());
            for i in 0..width {
                match row.get(i).map(String::as_str) {
                    // an empty cell is written as the docs always wrote it: `| |`
                    Some("") | None => f.write_str(" |")?,
                    Some(cell) => write!(f, " {cell} |")?,
                }
            }
            f.write_str("\n")?;
        }
        Ok(())
    }
}

/// A row's cells from expressions that are [`Display`](std::fmt::Display) (each `to_string`'d):
/// `cells![name, n, format!("{x:.2}")]`.
#[macro_export]
macro_rules! cells {
    ($($c:expr),* $(,)?) => { vec![$(::std::string::ToString::to_string(&$c)),*] };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn renders_header_alignment_and_rows() {
        let mut t = Table::new().left("a").rights(["b", "c"]);
        t.row(cells!["x", 1, format!("{:.2}", 0.5)]);
        t.row(cells!["**all**", "", 2]);
        assert_eq!(
            t.to_string(),
            "| a | b | c |\n|---|---:|---:|\n| x | 1 | 0.50 |\n| **all** | | 2 |\n"
        );
    }

    #[test]
    fn short_rows_are_padded_and_long_rows_keep_their_cells() {
        let mut t = Table::new().left("a").left("b");
        t.row(["only"]);
        t.row(["1", "2", "3"]);
        assert_eq!(
            t.to_string(),
            "| a | b |\n|---|---|\n| only | |\n| 1 | 2 | 3 |\n"
        );
    }

    proptest! {
        /// Every row renders as one line with one cell per column (at least), and the
        /// header and alignment rows agree with the columns.
        #[test]
        fn every_row_is_one_line_with_its_cells(
            cols in proptest::collection::vec(("[a-z]{1,6}", any::<bool>()), 1..6),
            rows in proptest::collection::vec(proptest::collection::vec("[a-z0-9.]{0,5}", 0..8), 0..10),
        ) {
            let mut t = Table::new();
            for (title, right) in &cols {
                t.push_column(title.clone(), if *right { Align::Right } else { Align::Left });
            }
            for r in &rows {
                t.row(r.clone());
            }
            let text = t.to_string();
            let lines: Vec<&str> = text.lines().collect();
            prop_assert_eq!(lines.len(), 2 + rows.len());
            prop_assert_eq!(lines[1].matches('|').count(), cols.len() + 1);
            for (line, r) in lines[2..].iter().zip(&rows) {
                prop_assert_eq!(line.matches('|').count(), r.len().max(cols.len()) + 1);
                for cell in r.iter().filter(|c| !c.is_empty()) {
                    prop_assert!(line.contains(cell.as_str()));
                }
            }
        }
    }
}
