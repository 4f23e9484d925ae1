//! Rows of the result table, and how a script's stdout becomes rows.
//!
//! A script reports one check per stdout line: `{"check": NAME, "ok": true}`,
//! `{"check": NAME, "ok": false, "reason": TEXT}`, `{"check": NAME, "skip": TEXT}` (does not
//! apply to this target) or `{"check": NAME, "blocked": TEXT}` (cannot run because an earlier
//! check failed).
//! Other lines are ignored.

use serde::Deserialize;

use crate::proc::ScriptOutput;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
    /// Could not run because an earlier check failed (that one is counted): shown, not counted.
    NotRun(String),
    /// A failure listed in expected-failures.txt: shown, not counted.
    Known(String),
}

#[derive(Debug, Clone)]
pub struct Row {
    pub protocol: &'static str,
    pub check: String,
    pub outcome: Outcome,
}

#[derive(Deserialize)]
struct Line {
    check: String,
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    skip: Option<String>,
    #[serde(default)]
    blocked: Option<String>,
}

/// The rows of one script run, plus a failed row when the script itself failed (a crash, a
/// timeout, a non-zero exit that no failed check explains, no check at all).
pub fn rows_of(protocol: &'static str, out: &ScriptOutput) -> Vec<Row> {
    let mut rows: Vec<Row> = out
        .stdout
        .iter()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .map(|l| Row {
            protocol,
            check: l.check,
            outcome: match (l.skip, l.blocked, l.ok) {
                (Some(why), _, _) => Outcome::Skip(why),
                (None, Some(why), _) => Outcome::NotRun(why),
                (None, None, true) => Outcome::Pass,
                (None, None, false) => Outcome::Fail(l.reason.unwrap_or_else(|| "failed".into())),
            },
        })
        .collect();
    let any_failed = rows.iter().any(|r| matches!(r.outcome, Outcome::Fail(_)));
    let tail = || {
        let t = out.stderr_tail.join("\n");
        if t.is_empty() { String::new() } else { format!("; stderr:\n{t}") }
    };
    match out.status {
        None => rows.push(Row {
            protocol,
            check: "script finishes in time".into(),
            outcome: Outcome::Fail(format!("killed at the deadline{}", tail())),
        }),
        Some(status) if !status.success() && !any_failed => rows.push(Row {
            protocol,
            check: "script runs to its end".into(),
            outcome: Outcome::Fail(format!("exited with {status}{}", tail())),
        }),
        Some(_) if rows.is_empty() => rows.push(Row {
            protocol,
            check: "script reports checks".into(),
            outcome: Outcome::Fail(format!("no check reported{}", tail())),
        }),
        Some(_) => {}
    }
    rows
}

/// The expected failures of superpi's own frontends: (protocol, check, finding).
pub fn parse_expected(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut parts = l.splitn(3, '|').map(str::trim);
            Some((parts.next()?.to_owned(), parts.next()?.to_owned(), parts.next().unwrap_or("").to_owned()))
        })
        .collect()
}

/// Marks the listed failures of `protocol` as known; a listed check that passes fails (the
/// list is stale).
pub fn apply_expected(rows: &mut [Row], expected: &[(String, String, String)]) {
    for row in rows {
        let Some((_, _, finding)) = expected.iter().find(|(p, c, _)| p == row.protocol && *c == row.check) else {
            continue;
        };
        row.outcome = match std::mem::replace(&mut row.outcome, Outcome::Pass) {
            Outcome::Fail(why) => Outcome::Known(format!("FINDINGS.md {finding}: {why}")),
            Outcome::Pass => {
                Outcome::Fail(format!("listed in expected-failures.txt ({finding}) but passes: remove the line"))
            }
            other => other,
        };
    }
}

/// Prints the table; returns (passed, failed). Skipped, not-run and known rows are shown, not
/// counted.
pub fn print_table(rows: &[Row]) -> (usize, usize) {
    let pw = rows.iter().map(|r| r.protocol.len()).max().unwrap_or(8).max(8);
    let cw = rows.iter().map(|r| r.check.chars().count()).max().unwrap_or(5).clamp(5, 72);
    println!("{:<pw$}  {:<cw$}  result", "protocol", "check");
    println!("{}  {}  {}", "-".repeat(pw), "-".repeat(cw), "-".repeat(6));
    let (mut passed, mut failed) = (0, 0);
    for row in rows {
        let result = match &row.outcome {
            Outcome::Pass => {
                passed += 1;
                "pass".to_owned()
            }
            Outcome::Fail(why) => {
                failed += 1;
                format!("FAIL: {}", indent(why, pw + cw + 4))
            }
            Outcome::Skip(why) => format!("skip: {why}"),
            Outcome::NotRun(why) => format!("not run: {why}"),
            Outcome::Known(why) => format!("known failure: {}", indent(why, pw + cw + 4)),
        };
        println!("{:<pw$}  {:<cw$}  {result}", row.protocol, row.check);
    }
    (passed, failed)
}

fn indent(text: &str, by: usize) -> String {
    text.lines().collect::<Vec<_>>().join(&format!("\n{}", " ".repeat(by)))
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::*;

    fn output(lines: &[&str], status: Option<i32>) -> ScriptOutput {
        ScriptOutput {
            stdout: lines.iter().map(|l| (*l).to_owned()).collect(),
            stderr_tail: vec!["boom".into()],
            status: status.map(|code| ExitStatus::from_raw(code << 8)),
        }
    }

    fn outcomes(rows: &[Row]) -> Vec<(String, Outcome)> {
        rows.iter().map(|r| (r.check.clone(), r.outcome.clone())).collect()
    }

    #[test]
    fn script_lines_become_rows_and_noise_is_ignored() {
        let out = output(
            &[
                r#"{"check":"a","ok":true}"#,
                "some log line",
                r#"{"check":"b","ok":false,"reason":"why"}"#,
                r#"{"check":"c","skip":"not here"}"#,
                r#"{"check":"d","blocked":"session/new failed"}"#,
                r#"{"not a check":1}"#,
            ],
            Some(1),
        );
        assert_eq!(
            outcomes(&rows_of("x", &out)),
            vec![
                ("a".into(), Outcome::Pass),
                ("b".into(), Outcome::Fail("why".into())),
                ("c".into(), Outcome::Skip("not here".into())),
                ("d".into(), Outcome::NotRun("session/new failed".into())),
            ]
        );
    }

    #[test]
    fn a_failing_script_without_failed_checks_is_a_failure() {
        let rows = rows_of("x", &output(&[r#"{"check":"a","ok":true}"#], Some(3)));
        assert_eq!(rows.len(), 2);
        assert!(matches!(&rows[1].outcome, Outcome::Fail(why) if why.contains("boom")));
    }

    #[test]
    fn expected_failures_are_known_and_stale_entries_fail() {
        let expected = parse_expected("# comment\nx | b | F1\nx | a | F2\ny | b | F3\n");
        let mut rows =
            rows_of("x", &output(&[r#"{"check":"a","ok":true}"#, r#"{"check":"b","ok":false,"reason":"r"}"#], Some(1)));
        apply_expected(&mut rows, &expected);
        assert_eq!(
            outcomes(&rows),
            vec![
                ("a".into(), Outcome::Fail("listed in expected-failures.txt (F2) but passes: remove the line".into())),
                ("b".into(), Outcome::Known("FINDINGS.md F1: r".into())),
            ]
        );
    }

    #[test]
    fn a_timeout_and_silence_are_failures() {
        let rows = rows_of("x", &output(&[], None));
        assert_eq!(rows[0].check, "script finishes in time");
        let rows = rows_of("x", &output(&[], Some(0)));
        assert_eq!(rows[0].check, "script reports checks");
    }
}
