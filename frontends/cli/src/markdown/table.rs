//! A markdown table (`| a | b |` rows, the second `|---|:--:|`), laid out in aligned columns
//! with box-drawing separators: the header row bold, the delimiter row a rule. Rows that are no
//! table (no delimiter row second) are shown as lines of text.

use anstyle::Style;

use super::{inline, paint, quiet};

/// How a column's cells sit in it, from its delimiter cell.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Align {
    Left,
    Center,
    Right,
}

/// The cells of a row: between the pipes, trimmed (`\|` is a pipe inside a cell).
fn cells(row: &str) -> Vec<String> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').filter(|r| !r.ends_with('\\')).unwrap_or(row);
    let mut out = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                if let Some(cell) = out.last_mut() {
                    cell.push('|');
                }
            }
            '|' => out.push(String::new()),
            c => {
                if let Some(cell) = out.last_mut() {
                    cell.push(c);
                }
            }
        }
    }
    out.into_iter().map(|cell| cell.trim().to_owned()).collect()
}

/// The alignments of a delimiter row, or `None` when the row is none.
fn delimiter(row: &str) -> Option<Vec<Align>> {
    cells(row)
        .iter()
        .map(|cell| {
            let dashes = cell.trim_start_matches(':').trim_end_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|c| c == '-') {
                return None;
            }
            Some(match (cell.starts_with(':'), cell.ends_with(':')) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

/// What a terminal shows of styled text: its characters without the escape sequences.
fn width(styled: &str) -> usize {
    anstream::adapter::strip_str(styled).to_string().chars().count()
}

fn pad(text: &str, to: usize, align: Align) -> String {
    let room = to.saturating_sub(width(text));
    let (left, right) = match align {
        Align::Left => (0, room),
        Align::Right => (room, 0),
        Align::Center => (room / 2, room - room / 2),
    };
    format!("{}{text}{}", " ".repeat(left), " ".repeat(right))
}

/// The table's lines (without newlines).
pub(super) fn render(rows: &[String]) -> Vec<String> {
    let Some(aligns) = rows.get(1).and_then(|row| delimiter(row)) else {
        return rows.iter().map(|row| inline(row.trim_start())).collect();
    };
    let header: Vec<String> = cells(&rows[0]).iter().map(|c| paint(Style::new().bold(), &inline(c))).collect();
    let body: Vec<Vec<String>> = rows[2..].iter().map(|row| cells(row).iter().map(|c| inline(c)).collect()).collect();
    let columns = aligns.len().max(header.len());
    let mut widths = vec![1usize; columns];
    for row in std::iter::once(&header).chain(&body) {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(width(cell));
        }
    }
    let line = |row: &[String]| {
        let shown: Vec<String> = (0..columns)
            .map(|i| {
                let cell = row.get(i).map_or("", String::as_str);
                pad(cell, widths[i], aligns.get(i).copied().unwrap_or(Align::Left))
            })
            .collect();
        shown.join(&paint(quiet(), " │ ")).trim_end().to_owned()
    };
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    let mut out = vec![line(&header), paint(quiet(), &rule.join("─┼─"))];
    out.extend(body.iter().map(|row| line(row)));
    out
}
