//! CSV rows as every mocc output writes them (RFC 4180): a text cell holding a comma, quote or
//! line break is quoted with its quotes doubled, so a policy or network named `a,b` stays in
//! its column; an undefined number (None, NaN, infinite) is an empty cell, never 0.

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
        let row = [
            cell("copa,v2"),
            3.to_string(),
            number(Some(0.5)),
            number(Some(f64::NAN)),
            number(None),
            number(Some(f64::INFINITY)),
        ]
        .join(",")
            + "\n";
        assert_eq!(row, "\"copa,v2\",3,0.5,,,\n");
    }

    #[test]
    fn a_written_row_splits_back_into_its_cells() {
        let names = ["a,b", "say \"hi\"", "", "plain"];
        let row: Vec<String> = names.iter().map(|n| cell(n)).collect();
        assert_eq!(split_line(&(row.join(",") + "\n")), names);
    }
}
