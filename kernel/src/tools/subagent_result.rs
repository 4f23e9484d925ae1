//! What a `subagent` call answers: the wait policy that decides when, and the result made
//! from the children's ends (pure: tested without a kernel).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use superpi_proto::tool::ToolCallResult;

/// When a call with several children answers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum WaitPolicy {
    /// When every child has ended.
    #[default]
    All,
    /// When the first child ends, however it ended.
    Any,
    /// When the first child completes (or all have ended without one).
    FirstSuccess,
}

impl WaitPolicy {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            WaitPolicy::All => "all",
            WaitPolicy::Any => "any",
            WaitPolicy::FirstSuccess => "first_success",
        }
    }

    /// Whether the call answers now that `end` came.
    pub(super) fn satisfied_by(self, end: &ChildEnd) -> bool {
        match self {
            WaitPolicy::All => false,
            WaitPolicy::Any => true,
            WaitPolicy::FirstSuccess => end.status == "completed",
        }
    }
}

/// How a child's turn ended: its status (`completed`, `error`, `cancelled`, `timed_out`) and
/// its final text or error.
pub(super) struct ChildEnd {
    pub status: &'static str,
    pub text: Option<String>,
}

/// A child's end as the call reports it.
pub(super) struct Reported {
    pub child: Option<i64>,
    pub harness: String,
    pub mode: &'static str,
    pub end: ChildEnd,
}

/// The result of the single form (one `task`): the child's answer itself.
pub(super) fn single_result(report: Reported, timeout: Duration) -> ToolCallResult {
    let details = json!({"child_conversation_id": report.child, "harness": report.harness, "mode": report.mode});
    let output = match (report.end.status, report.end.text) {
        ("completed", Some(text)) if !text.trim().is_empty() => text,
        ("completed", _) => "The subagent finished without an answer.".to_string(),
        ("cancelled", _) => "The subagent was cancelled.".to_string(),
        ("timed_out", _) => format!("The subagent did not finish within {} s and was cancelled.", timeout.as_secs()),
        (_, text) => format!("The subagent failed: {}", text.unwrap_or_default()),
    };
    ToolCallResult {
        is_error: report.end.status != "completed",
        output,
        structured: None,
        details: Some(details),
        images: Vec::new(),
    }
}

/// The result of several children: each one's end and answer, in the order asked, under a
/// line saying what the call waited for. An error when no child completed (for `any`: when
/// the first to end did not).
pub(super) fn summary_result(
    tasks: &[&str],
    reports: &[Reported],
    wait: WaitPolicy,
    answered_by: Option<usize>,
    timeout: Duration,
) -> ToolCallResult {
    let completed = reports.iter().filter(|r| r.end.status == "completed").count();
    let is_error = match (wait, answered_by) {
        (WaitPolicy::Any, Some(first)) => reports.get(first).is_none_or(|r| r.end.status != "completed"),
        _ => completed == 0,
    };
    let mut output = format!(
        "{} {}, waiting for {}: {completed} completed.\n",
        reports.len(),
        if reports.len() == 1 { "subagent" } else { "subagents" },
        match wait {
            WaitPolicy::All => "all",
            WaitPolicy::Any => "the first to end",
            WaitPolicy::FirstSuccess => "the first to complete",
        }
    );
    for (index, (task, report)) in tasks.iter().zip(reports).enumerate() {
        let conversation = report.child.map(|id| format!(", conversation {id}")).unwrap_or_default();
        let (status, text) = match (report.end.status, report.end.text.as_deref()) {
            ("completed", Some(text)) if !text.trim().is_empty() => ("completed", text.to_string()),
            ("completed", _) => ("completed", "(no answer)".to_string()),
            ("timed_out", _) => ("timed out", format!("did not finish within {} s", timeout.as_secs())),
            ("cancelled", Some("not started")) => ("not started", "not needed once the call had its answer".into()),
            ("cancelled", _) => ("cancelled", "cancelled before it finished".into()),
            (_, text) => ("failed", text.unwrap_or_default().to_string()),
        };
        output.push_str(&format!("\n[{}] {} ({}{conversation}): {status}\n{text}\n", index + 1, task, report.harness));
    }
    let children: Vec<_> = reports
        .iter()
        .map(
            |r| json!({"child_conversation_id": r.child, "harness": r.harness, "mode": r.mode, "status": r.end.status}),
        )
        .collect();
    ToolCallResult {
        is_error,
        output,
        structured: None,
        details: Some(json!({"wait": wait.as_str(), "children": children})),
        images: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported(child: Option<i64>, status: &'static str, text: Option<&str>) -> Reported {
        let end = ChildEnd { status, text: text.map(str::to_string) };
        Reported { child, harness: "superpi-planner".into(), mode: "plan", end }
    }

    #[test]
    fn a_summary_names_each_childs_end_in_the_order_asked() {
        let reports = [
            reported(Some(7), "completed", Some("found it in a.rs")),
            reported(Some(8), "timed_out", None),
            reported(None, "cancelled", Some("not started")),
        ];
        let result =
            summary_result(&["find", "look", "check"], &reports, WaitPolicy::All, None, Duration::from_secs(5));
        assert!(!result.is_error, "one completed");
        let lines: Vec<&str> =
            result.output.lines().filter(|l| l.starts_with('[') || l.contains("subagents")).collect();
        assert_eq!(
            lines,
            [
                "3 subagents, waiting for all: 1 completed.",
                "[1] find (superpi-planner, conversation 7): completed",
                "[2] look (superpi-planner, conversation 8): timed out",
                "[3] check (superpi-planner): not started",
            ]
        );
        assert!(result.output.contains("found it in a.rs\n") && result.output.contains("did not finish within 5 s"));
        let details = result.details.unwrap();
        assert_eq!(details["wait"], "all");
        assert_eq!(details["children"][1]["status"], "timed_out");
    }

    #[test]
    fn which_end_makes_a_call_an_error() {
        let failed_then_done = [reported(Some(1), "error", Some("boom")), reported(Some(2), "completed", Some("ok"))];
        let any = summary_result(&["a", "b"], &failed_then_done, WaitPolicy::Any, Some(0), Duration::from_secs(1));
        assert!(any.is_error, "`any` answers with the first to end, which failed");
        let first =
            summary_result(&["a", "b"], &failed_then_done, WaitPolicy::FirstSuccess, Some(1), Duration::from_secs(1));
        assert!(!first.is_error && first.output.contains("[1] a (superpi-planner, conversation 1): failed\nboom"));
        let none = [reported(Some(1), "error", None), reported(Some(2), "cancelled", None)];
        assert!(summary_result(&["a", "b"], &none, WaitPolicy::All, None, Duration::from_secs(1)).is_error);
        assert!(WaitPolicy::FirstSuccess.satisfied_by(&failed_then_done[1].end));
        assert!(!WaitPolicy::FirstSuccess.satisfied_by(&failed_then_done[0].end));
        assert!(!WaitPolicy::All.satisfied_by(&failed_then_done[1].end));
        let single = single_result(reported(Some(3), "timed_out", None), Duration::from_secs(9));
        assert!(single.is_error && single.output.contains("within 9 s"));
    }
}
