//! Plain-text reports: aligned tables for terminals and logs, as the `tessera` CLI and the
//! benches print them.

/// Renders rows under headers; columns whose header is in `right` are right-aligned (numbers).
/// Columns are as wide as their widest cell (in characters) and two spaces apart; the last
/// column of a left-aligned row is not padded.
///
/// ```
/// let rows = vec![vec!["uniform-b4".to_string(), "312.5".to_string()]];
/// let text = tessera::report::table(&["set", "GB/s"], &["GB/s"], &rows);
/// assert_eq!(text, "set          GB/s\nuniform-b4  312.5\n");
/// ```
pub fn table(headers: &[&str], right: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w.saturating_sub(cell.chars().count());
            if right.contains(&headers[i]) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s
    };
    let mut out = line(headers.to_vec());
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn tables_align() {
        let t = table(
            &["name", "n"],
            &["n"],
            &[
                vec!["a".into(), "100".into()],
                vec!["bbb".into(), "2".into()],
            ],
        );
        assert_eq!(t, "name    n\na     100\nbbb     2\n");
    }
}
