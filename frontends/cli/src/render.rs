//! The terminal's renderer: kernel events into answer text (stdout) and one line of activity
//! per tool call, notice or failure (stderr). Pure: tested without a terminal.

use superpi_proto::{Event, EventBody};

use crate::style::Tone;

/// What the terminal prints for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Answer(String),
    Activity(Tone, String),
}

#[derive(Debug, Default)]
pub struct TerminalRenderer {
    answer_open: bool,
}

impl TerminalRenderer {
    pub fn render(&mut self, event: &Event) -> Vec<Out> {
        let mut out = Vec::new();
        match &event.body {
            EventBody::TextDelta { delta, .. } => {
                self.answer_open = true;
                out.push(Out::Answer(delta.clone()));
            }
            EventBody::ThinkingDelta { .. } | EventBody::ToolcallDelta { .. } | EventBody::ToolOutput { .. } => {}
            EventBody::ToolStarted { name, arguments, .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Tool, format!("→ {name} {}", compact(arguments))));
            }
            EventBody::ToolBlocked { name, reason, .. } => {
                out.push(Out::Activity(Tone::Failed, format!("✗ {name} blocked: {reason}")))
            }
            EventBody::ToolCompleted { name, is_error, output, .. } => {
                let text = output.as_str().map(str::to_string).unwrap_or_else(|| output.to_string());
                let first = text.lines().next().unwrap_or("").chars().take(120).collect::<String>();
                let (mark, tone) = if *is_error { ("✗", Tone::Failed) } else { ("✓", Tone::Done) };
                out.push(Out::Activity(tone, format!("{mark} {name}: {first}")));
            }
            EventBody::PermissionRequest { tool_name, reason, .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Ask, format!("? permission for {tool_name}: {reason}")));
            }
            EventBody::Notice { level, message } => out.push(Out::Activity(Tone::Info, format!("[{level}] {message}"))),
            EventBody::StreamReset { retry_in_ms } => {
                out.push(Out::Activity(Tone::Info, format!("(provider busy; retrying in {retry_in_ms} ms)")))
            }
            EventBody::TurnError { error } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Error, format!("error: {error}")));
            }
            EventBody::TurnCancelled {} => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Info, "cancelled".into()));
            }
            EventBody::TurnCompleted { .. } => self.close_answer(&mut out),
            EventBody::CompactionCompleted { .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Info, "context compacted: the model summarised the earlier turns".into()));
            }
            EventBody::PlanUpdated { entries } => {
                self.close_answer(&mut out);
                let items: Vec<String> =
                    entries.iter().map(|e| format!("  [{}] {}", if e.completed { "x" } else { " " }, e.text)).collect();
                out.push(Out::Activity(Tone::Info, format!("plan:\n{}", items.join("\n"))));
            }
            _ => {}
        }
        out
    }

    fn close_answer(&mut self, out: &mut Vec<Out>) {
        if self.answer_open {
            self.answer_open = false;
            out.push(Out::Answer("\n".into()));
        }
    }
}

fn compact(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 120 { format!("{}…", text.chars().take(120).collect::<String>()) } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answer_text_goes_to_stdout_and_activity_to_stderr() {
        let mut r = TerminalRenderer::default();
        assert_eq!(r.render(&Event::text_delta(1, Some(1), 0, "Hel")), vec![Out::Answer("Hel".into())]);
        assert_eq!(
            r.render(&Event::tool_started(1, Some(1), "c1", "ls", json!({"path": "."}), vec![])),
            vec![Out::Answer("\n".into()), Out::Activity(Tone::Tool, "→ ls {\"path\":\".\"}".into())]
        );
        assert_eq!(
            r.render(&Event::tool_completed(1, Some(1), "c1", "ls", false, json!("a\nb"))),
            vec![Out::Activity(Tone::Done, "✓ ls: a".into())]
        );
        assert_eq!(r.render(&Event::turn_completed(1, 1, None, "end_turn")), vec![]);
        assert_eq!(r.render(&Event::turn_error(1, 1, "boom")), vec![Out::Activity(Tone::Error, "error: boom".into())]);
    }

    #[test]
    fn a_plan_shows_as_a_checklist_and_a_compaction_as_a_line() {
        use superpi_proto::event::PlanEntry;
        let mut r = TerminalRenderer::default();
        let plan = vec![
            PlanEntry { id: "1".into(), text: "read the code".into(), completed: true },
            PlanEntry { id: "2".into(), text: "fix the bug".into(), completed: false },
        ];
        assert_eq!(
            r.render(&Event::plan_updated(1, Some(1), plan)),
            vec![Out::Activity(Tone::Info, "plan:\n  [x] read the code\n  [ ] fix the bug".into())]
        );
        assert_eq!(
            r.render(&Event::compaction_completed(1, None, json!(4), Some("s".into()))),
            vec![Out::Activity(Tone::Info, "context compacted: the model summarised the earlier turns".into())]
        );
    }
}
