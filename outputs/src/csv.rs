//! CSV rows as every mocc output writes them (RFC 4180): a text cell holding a comma, quote or
//! line break is quoted with its quotes doubled, so a policy or network named `a,b` stays in
//! its column; an undefined number (None, NaN, infinite) is an empty cell, never 0.

use std::fmt::Display;

/// A text cell: quoted (with quotes doubled) when it holds a comma, quote or line break.
pub fn cell(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A number cell: empty where the value is undefined (None or not finite).
pub fn number(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => v.to_string(),
        _ => String::new(),
    }
}

/// One CSV line built cell by cell: text quoted as [`cell`] does, numbers as they print.
#[derive(Debug, Default, Clone)]
pub struct CsvRow {
    line: String,
    cells: usize,
}

impl CsvRow {
    /// An empty row.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, text: &str) {
        if self.cells > 0 {
            self.line.push(',');
        }
        self.line.push_str(text);
        self.cells += 1;
    }

    /// Adds a text cell (a name, a label, a path).
    pub fn text(mut self, text: &str) -> Self {
        self.push(&cell(text));
        self
    }

    /// Adds a value that prints without commas or quotes (an integer, a flag).
    pub fn value(mut self, v: impl Display) -> Self {
        let text = v.to_string();
        self.push(&cell(&text));
        self
    }

    /// Adds a number; an undefined one (NaN, infinite) is an empty cell.
    pub fn num(self, x: f64) -> Self {
        self.opt(Some(x))
    }

    /// Adds a number that may be undefined (None, NaN, infinite: an empty cell).
    pub fn opt(mut self, x: Option<f64>) -> Self {
        self.push(&number(x));
        self
    }

    /// The line, with its line break.
    pub fn line(&self) -> String {
        format!("{}\n", self.line)
    }
}

/// Splits one CSV line into its cells, undoing [`cell`]'s quoting.
pub fn split_line(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.trim_end_matches(['\n', '\r']).chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(s) = cells.last_mut() {
                    s.push('"');
                }
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            _ => {
                if let Some(s) = cells.last_mut() {
                    s.push(c);
                }
            }
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_quoted_only_when_it_must_be() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn undefined_numbers_are_empty_cells() {
        let row = CsvRow::new()
            .text("copa,v2")
            .value(3)
            .num(0.5)
            .num(f64::NAN)
            .opt(None)
            .num(f64::INFINITY);
        assert_eq!(row.line(), "\"copa,v2\",3,0.5,,,\n");
    }

    #[test]
    fn a_written_row_splits_back_into_its_cells() {
        let names = ["a,b", "say \"hi\"", "", "plain"];
        let mut row = CsvRow::new();
        for n in names {
            row = row.text(n);
        }
        assert_eq!(split_line(&row.line()), names);
    }
}
