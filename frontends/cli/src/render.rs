//! The terminal's renderer: kernel events into answer text (stdout) and one line of activity
//! per tool call, notice or failure (stderr). Pure: tested without a terminal.

use std::collections::{HashMap, HashSet};

use superpi_proto::{ContentBlock, Event, EventBody, Role};

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
    /// Permission questions asked, by request id: the call each is about.
    asked: HashMap<String, String>,
    /// How each question about a call was settled (`you answered no`), by call id.
    answered: HashMap<String, String>,
    /// Calls whose refusal was printed: their error result is not printed again.
    blocked: HashSet<String>,
    /// The answer text printed from deltas since the last completed message.
    streamed: String,
}

impl TerminalRenderer {
    pub fn render(&mut self, event: &Event) -> Vec<Out> {
        let mut out = Vec::new();
        match &event.body {
            EventBody::TextDelta { delta, .. } => {
                self.answer_open = true;
                self.streamed.push_str(delta);
                out.push(Out::Answer(delta.clone()));
            }
            // Deltas are not stored: a watcher that caught up from the store (or lost the
            // live stream between kernels) gets the completed message without them. What it
            // did not print of the message's text, it prints from the message, so an answer
            // is never silently empty.
            EventBody::MessageCompleted { role: Role::Assistant, content, .. } => {
                let text: String = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let streamed = std::mem::take(&mut self.streamed);
                if let Some(rest) = text.strip_prefix(streamed.as_str()).filter(|rest| !rest.is_empty()) {
                    self.answer_open = true;
                    out.push(Out::Answer(rest.to_string()));
                }
            }
            EventBody::ThinkingDelta { .. } | EventBody::ToolcallDelta { .. } | EventBody::ToolOutput { .. } => {}
            EventBody::ToolStarted { name, arguments, .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Tool, format!("→ {name} {}", compact(arguments))));
            }
            EventBody::ToolBlocked { tool_call_id, name, reason } => {
                self.close_answer(&mut out);
                self.blocked.insert(tool_call_id.clone());
                let line = match self.answered.remove(tool_call_id) {
                    Some(answer) => format!("✗ {name} refused: {answer}"),
                    None => format!("✗ {name} blocked: {reason}"),
                };
                out.push(Out::Activity(Tone::Failed, line))
            }
            // A refusal is printed once, by its `tool_blocked`.
            EventBody::ToolCompleted { tool_call_id, .. } if self.blocked.remove(tool_call_id) => {}
            EventBody::ToolCompleted { name, is_error, output, .. } => {
                self.close_answer(&mut out);
                let text = output.as_str().map(str::to_string).unwrap_or_else(|| output.to_string());
                let first = text.lines().next().unwrap_or("").chars().take(120).collect::<String>();
                let (mark, tone) = if *is_error { ("✗", Tone::Failed) } else { ("✓", Tone::Done) };
                out.push(Out::Activity(tone, format!("{mark} {name}: {first}")));
            }
            EventBody::PermissionRequest { request_id, tool_call_id, tool_name, arguments, reason, .. } => {
                self.close_answer(&mut out);
                self.asked.insert(request_id.clone(), tool_call_id.clone());
                let mut line = format!("? permission for {tool_name}: {reason}");
                // The call exactly as it would run (a command line with its redirections).
                for (key, value) in arguments.as_object().into_iter().flatten() {
                    let text = value.as_str().map(str::to_string).unwrap_or_else(|| value.to_string());
                    line.push_str(&format!("\n  {key}: {}", text.replace('\n', "\n    ")));
                }
                out.push(Out::Activity(Tone::Ask, line));
            }
            EventBody::UiResolved { request_id, outcome } => {
                if let Some(call) = self.asked.remove(request_id) {
                    self.answered.insert(call, answer_of(outcome));
                }
            }
            EventBody::Notice { level, message } => {
                // On a line of its own, never glued to the answer's last line.
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Info, format!("[{level}] {message}")))
            }
            EventBody::Handoff { from, to, .. } => {
                self.close_answer(&mut out);
                out.push(Out::Activity(Tone::Info, format!("[handoff] {from} → {to}")))
            }
            EventBody::StreamReset { retry_in_ms } => {
                self.close_answer(&mut out);
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

/// How a permission question was settled, in words (`ui_resolved`'s outcome).
fn answer_of(outcome: &serde_json::Value) -> String {
    let option = outcome["option_id"].as_str().unwrap_or_default();
    match outcome["outcome"].as_str().unwrap_or_default() {
        "selected" if option.starts_with("reject") => "you answered no".into(),
        "selected" => format!("answered {option}"),
        "timeout" => "nobody answered in time".into(),
        "cancelled" => "the turn was cancelled before an answer".into(),
        other => format!("no valid answer ({other})"),
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
    fn a_refusal_prints_once_and_names_the_persons_answer() {
        let mut r = TerminalRenderer::default();
        let blocked = |id| Event::tool_blocked(1, Some(1), id, "bash", "`curl` is not in the allow list");
        let result = |id| Event::tool_completed(1, Some(1), id, "bash", true, json!("blocked: not in the allow list"));
        // Refused by a rule: one line, the rule's reason; its error result is not a second line.
        assert_eq!(
            r.render(&blocked("c1")),
            vec![Out::Activity(Tone::Failed, "✗ bash blocked: `curl` is not in the allow list".into())]
        );
        assert_eq!(r.render(&result("c1")), vec![]);
        // Asked, and the person said no: the line says so, not the rule.
        let asked = Event::new(
            1,
            Some(1),
            EventBody::PermissionRequest {
                request_id: "q1".into(),
                tool_call_id: "c2".into(),
                tool_name: "bash".into(),
                arguments: json!({"command": "echo hi > out.txt; cat out.txt"}),
                reason: "`echo hi; cat out.txt` is not in the allow list".into(),
                risk: None,
                options: vec![],
            },
        );
        assert_eq!(
            r.render(&asked),
            vec![Out::Activity(
                Tone::Ask,
                "? permission for bash: `echo hi; cat out.txt` is not in the allow list\n  command: echo hi > out.txt; cat out.txt"
                    .into()
            )]
        );
        let resolved = Event::new(
            1,
            Some(1),
            EventBody::UiResolved {
                request_id: "q1".into(),
                outcome: json!({"outcome": "selected", "option_id": "reject_once"}),
            },
        );
        assert_eq!(r.render(&resolved), vec![]);
        assert_eq!(
            r.render(&blocked("c2")),
            vec![Out::Activity(Tone::Failed, "✗ bash refused: you answered no".into())]
        );
        assert_eq!(r.render(&result("c2")), vec![]);
        // A failing call that was not refused still prints its result.
        let failed = Event::tool_completed(1, Some(1), "c3", "bash", true, json!("exit 1"));
        assert_eq!(r.render(&failed), vec![Out::Activity(Tone::Failed, "✗ bash: exit 1".into())]);
    }

    #[test]
    fn a_completed_message_prints_what_its_deltas_did_not() {
        let message = |text: &str| {
            Event::new(
                1,
                Some(1),
                EventBody::MessageCompleted {
                    role: Role::Assistant,
                    content: vec![ContentBlock::Text { text: text.into() }],
                    usage: None,
                },
            )
        };
        let mut r = TerminalRenderer::default();
        // Streamed whole: nothing more.
        r.render(&Event::text_delta(1, Some(1), 0, "Hello"));
        assert_eq!(r.render(&message("Hello")), vec![]);
        // No delta came (caught up from the store): the whole text.
        assert_eq!(r.render(&message("from the store")), vec![Out::Answer("from the store".into())]);
        // Deltas lost half way: the rest.
        r.render(&Event::text_delta(1, Some(1), 0, "Hel"));
        assert_eq!(r.render(&message("Hello")), vec![Out::Answer("lo".into())]);
        // A stream that started again (its deltas are no prefix): nothing guessed.
        r.render(&Event::text_delta(1, Some(1), 0, "Hi Hi"));
        assert_eq!(r.render(&message("Hi there")), vec![]);
        // A message without text prints nothing.
        assert_eq!(r.render(&message("")), vec![]);
    }

    #[test]
    fn a_notice_after_answer_text_starts_on_a_line_of_its_own() {
        let mut r = TerminalRenderer::default();
        r.render(&Event::text_delta(1, Some(1), 0, "done."));
        assert_eq!(
            r.render(&Event::notice(1, Some(1), "info", "committed abc123")),
            vec![Out::Answer("\n".into()), Out::Activity(Tone::Info, "[info] committed abc123".into())]
        );
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
