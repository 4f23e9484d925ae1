//! The record of conformance/THIRD_PARTY.md: per protocol, a table of every check against
//! each implementation (superpi first), then why each check that did not pass did not. The
//! runner writes it between two marker lines (`--write-record`) and otherwise compares the
//! tables with a fresh run; the reasons are shown, not compared (they hold ports and paths).

use crate::report::{Outcome, Row};

pub const BEGIN: &str = "<!-- record: begin (written by `cargo run -p superpi-conformance -- --third-party --write-record`; edit the text around it, not this) -->";
pub const END: &str = "<!-- record: end -->";
const WHY: &str = "### Why a check did not pass";

/// One implementation's results: its heading (name and version) and its rows.
pub struct Column {
    pub heading: String,
    pub rows: Vec<Row>,
}

/// One protocol's table.
pub struct Table {
    pub protocol: &'static str,
    pub columns: Vec<Column>,
}

/// The cell of a check in one column: the worst of its rows (a suite can report one check
/// name more than once).
fn cell<'a>(outcomes: impl Iterator<Item = &'a Outcome>) -> &'static str {
    let rank = |o: &Outcome| match o {
        Outcome::Pass => 1,
        Outcome::Skip(_) => 2,
        Outcome::Known(_) => 3,
        Outcome::NotRun(_) => 4,
        Outcome::Fail(_) => 5,
    };
    match outcomes.max_by_key(|o| rank(o)) {
        Some(Outcome::Pass) => "pass",
        Some(Outcome::Fail(_)) => "FAIL",
        Some(Outcome::Skip(_)) => "skip",
        Some(Outcome::NotRun(_)) => "not run",
        Some(Outcome::Known(_)) => "known failure",
        None => "-",
    }
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The first line of a reason, at most 240 characters.
fn short(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.chars().count() > 240 {
        format!("{}…", line.chars().take(240).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// The block between the markers (without them).
pub fn render(tables: &[Table]) -> String {
    let mut out = String::new();
    for table in tables {
        out.push_str(&format!("\n### {}\n\n| check |", table.protocol));
        for column in &table.columns {
            out.push_str(&format!(" {} |", escape(&column.heading)));
        }
        out.push_str(&format!("\n| --- |{}\n", " --- |".repeat(table.columns.len())));
        let mut checks: Vec<&str> = Vec::new();
        for row in table.columns.iter().flat_map(|c| &c.rows) {
            if !checks.contains(&row.check.as_str()) {
                checks.push(&row.check);
            }
        }
        for check in checks {
            out.push_str(&format!("| {} |", escape(check)));
            for column in &table.columns {
                let outcomes = column.rows.iter().filter(|r| r.check == check).map(|r| &r.outcome);
                out.push_str(&format!(" {} |", cell(outcomes)));
            }
            out.push('\n');
        }
    }
    out.push_str(&format!("\n{WHY}\n"));
    for table in tables {
        for column in &table.columns {
            let notes: Vec<String> = column
                .rows
                .iter()
                .filter_map(|r| {
                    let (kind, why) = match &r.outcome {
                        Outcome::Pass => return None,
                        Outcome::Fail(why) => ("FAIL", why),
                        Outcome::Skip(why) => ("skip", why),
                        Outcome::NotRun(why) => ("not run", why),
                        Outcome::Known(why) => ("known failure", why),
                    };
                    Some(format!("- {}: {kind}: {}\n", r.check, short(why)))
                })
                .collect();
            if !notes.is_empty() {
                out.push_str(&format!("\n#### {} ({})\n\n{}", column.heading, table.protocol, notes.concat()));
            }
        }
    }
    out.push('\n');
    out
}

/// The table lines of a block: what a run must reproduce.
fn table_lines(block: &str) -> Vec<&str> {
    block.lines().take_while(|l| *l != WHY).filter(|l| l.starts_with("| ") || l.starts_with("### ")).collect()
}

/// The block of `file` between the markers, if it has them.
pub fn block_of(file: &str) -> Option<&str> {
    let start = file.find(BEGIN)? + BEGIN.len();
    let end = file[start..].find(END)? + start;
    Some(&file[start..end])
}

/// `file` with its block replaced by `block` (appended, with the markers, when it has none).
pub fn with_block(file: &str, block: &str) -> String {
    match (file.find(BEGIN), file.find(END)) {
        (Some(start), Some(end)) if end > start => {
            format!("{}{BEGIN}{block}{}", &file[..start], &file[end..])
        }
        _ => format!("{file}\n{BEGIN}{block}{END}\n"),
    }
}

/// The table lines that differ between the recorded block and this run's: (recorded, now),
/// each missing on one side as `None`.
pub fn differences(recorded: &str, now: &str) -> Vec<(Option<String>, Option<String>)> {
    let (old, new) = (table_lines(recorded), table_lines(now));
    let mut diff: Vec<(Option<String>, Option<String>)> = Vec::new();
    for line in &old {
        if !new.contains(line) {
            diff.push((Some((*line).to_owned()), None));
        }
    }
    for line in &new {
        if !old.contains(line) {
            diff.push((None, Some((*line).to_owned())));
        }
    }
    diff
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
