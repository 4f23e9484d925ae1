//! Properties of the renderer over generated turns: whatever the kernel sends (deltas split
//! anywhere, deltas lost to a lagged subscription, other turns' events interleaved), a client
//! reads one id, the role first, the whole answer text once, exactly one finish_reason, and
//! usage once when asked.

use proptest::prelude::*;
use superpi_proto::{ContentBlock, Event, Role, Usage as KUsage};

use super::{RenderOptions, Renderer};

const C: i64 = 3;
const T: i64 = 9;

/// One model call: its thinking and text, how the text is split into deltas, which deltas the
/// subscription loses, and whether a tool runs after it.
#[derive(Debug, Clone)]
struct Call {
    thinking: String,
    text: String,
    cuts: Vec<usize>,
    lost: Vec<bool>,
    tool: bool,
}

#[derive(Debug, Clone, Copy)]
enum End {
    Completed,
    MaxTokens,
    Error,
    Cancelled,
}

fn call() -> impl Strategy<Value = Call> {
    (
        "[a-z ]{0,12}",
        "[a-zA-Z .é]{0,40}",
        proptest::collection::vec(0usize..40, 0..6),
        proptest::collection::vec(any::<bool>(), 8),
        any::<bool>(),
    )
        .prop_map(|(thinking, text, cuts, lost, tool)| Call { thinking, text, cuts, lost, tool })
}

fn end() -> impl Strategy<Value = End> {
    prop_oneof![Just(End::Completed), Just(End::MaxTokens), Just(End::Error), Just(End::Cancelled)]
}

/// Splits `text` at char boundaries near the given byte offsets.
fn split(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> =
        cuts.iter().map(|c| (*c).min(text.len())).filter(|c| text.is_char_boundary(*c)).collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points.windows(2).map(|w| text[w[0]..w[1]].to_string()).filter(|s| !s.is_empty()).collect()
}

/// An event, or the subscription's note that it lagged (deltas were lost).
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // test data
enum Step {
    Event(Event),
    Lagged,
}

fn events(calls: &[Call], end: End, noise: bool) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut push = |event: Event| out.push(Step::Event(event));
    push(Event::message_completed(C, Some(T), Role::User, vec![ContentBlock::text("prompt")], None));
    push(Event::turn_started(C, T));
    let mut steps = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        if !call.thinking.is_empty() {
            steps.push(Step::Event(Event::thinking_delta(C, Some(T), 0, call.thinking.clone())));
        }
        for (j, piece) in split(&call.text, &call.cuts).into_iter().enumerate() {
            if call.lost[j % call.lost.len()] {
                steps.push(Step::Lagged);
            } else {
                steps.push(Step::Event(Event::text_delta(C, Some(T), 1, piece)));
            }
            if noise {
                steps.push(Step::Event(Event::text_delta(C, Some(T + 1), 0, "other turn")));
            }
        }
        let mut content = Vec::new();
        if !call.thinking.is_empty() {
            content.push(ContentBlock::Thinking { thinking: call.thinking.clone(), signature: None, redacted: false });
        }
        if !call.text.is_empty() {
            content.push(ContentBlock::text(call.text.clone()));
        }
        steps.push(Step::Event(Event::message_completed(C, Some(T), Role::Assistant, content, None)));
        steps.push(Step::Event(Event::usage_updated(
            C,
            Some(T),
            KUsage { input_tokens: 10, output_tokens: 2, ..Default::default() },
            KUsage { input_tokens: 0, output_tokens: 0, ..Default::default() },
        )));
        if call.tool {
            let id = format!("call-{i}");
            let args = serde_json::json!({"path": "."});
            steps.push(Step::Event(Event::tool_started(C, Some(T), id.clone(), "ls", args, vec![])));
            steps.push(Step::Event(Event::tool_completed(C, Some(T), id, "ls", false, serde_json::json!("a"))));
        }
    }
    steps.push(Step::Event(match end {
        End::Completed => Event::turn_completed(C, T, None, "end_turn"),
        End::MaxTokens => Event::turn_completed(C, T, None, "max_tokens"),
        End::Error => Event::turn_error(C, T, "boom"),
        End::Cancelled => Event::turn_cancelled(C, T),
    }));
    if noise {
        steps.push(Step::Event(Event::turn_completed(C, T + 1, None, "end_turn")));
    }
    out.extend(steps);
    out
}

proptest! {
    #[test]
    fn every_turn_reads_as_one_well_formed_answer(
        calls in proptest::collection::vec(call(), 0..4),
        end in end(),
        include_usage in any::<bool>(),
        noise in any::<bool>(),
    ) {
        let mut r = Renderer::new(RenderOptions {
            id: "chatcmpl-x".into(),
            created: 1,
            model: "m".into(),
            include_usage,
            turn_id: T,
        });
        let mut chunks = r.start();
        for step in events(&calls, end, noise) {
            match step {
                Step::Event(event) => chunks.extend(r.render(&event)),
                Step::Lagged => r.lagged(),
            }
        }
        chunks.extend(r.flush());
        prop_assert!(r.is_finished());

        prop_assert!(chunks.iter().all(|c| c.id == "chatcmpl-x"));
        prop_assert_eq!(chunks[0].choices[0].delta.role, Some("assistant"));
        prop_assert_eq!(chunks.iter().filter(|c| c.choices.iter().any(|ch| ch.delta.role.is_some())).count(), 1);

        let finishes: Vec<(usize, &'static str)> = chunks
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.choices.iter().filter_map(move |ch| ch.finish_reason.map(|f| (i, f))))
            .collect();
        let want = match end {
            End::Completed | End::Cancelled => "stop",
            End::MaxTokens => "length",
            End::Error => {
                // A failure has no finishing chunk (nor usage): the caller sends an error.
                prop_assert!(finishes.is_empty());
                prop_assert!(chunks.iter().all(|c| c.usage.is_none()));
                prop_assert_eq!(r.failure().map(|f| f.message.as_str()), Some("boom"));
                return Ok(());
            }
        };
        prop_assert_eq!(r.failure(), None);
        prop_assert_eq!(finishes.len(), 1);
        prop_assert_eq!(finishes[0].1, want);

        let usages: Vec<usize> = chunks.iter().enumerate().filter(|(_, c)| c.usage.is_some()).map(|(i, _)| i).collect();
        if include_usage {
            prop_assert_eq!(usages.clone(), vec![chunks.len() - 1]);
            prop_assert_eq!(finishes[0].0, chunks.len() - 2);
            prop_assert!(chunks[chunks.len() - 1].choices.is_empty());
            let usage = chunks[chunks.len() - 1].usage.unwrap_or_default();
            prop_assert_eq!(usage.prompt_tokens, 10 * calls.len() as u64);
            prop_assert_eq!(usage.completion_tokens, 2 * calls.len() as u64);
        } else {
            prop_assert!(usages.is_empty());
            prop_assert_eq!(finishes[0].0, chunks.len() - 1);
        }

        let content: String = chunks.iter().flat_map(|c| c.choices.iter()).filter_map(|ch| ch.delta.content.clone()).collect();
        let texts: Vec<&str> = calls.iter().map(|c| c.text.as_str()).filter(|t| !t.is_empty()).collect();
        prop_assert_eq!(content, texts.join("\n\n"));

        let reasoning: String =
            chunks.iter().flat_map(|c| c.choices.iter()).filter_map(|ch| ch.delta.reasoning_content.clone()).collect();
        for call in &calls {
            prop_assert!(reasoning.contains(call.thinking.as_str()));
        }
        prop_assert_eq!(reasoning.matches("[tool] ls done").count(), calls.iter().filter(|c| c.tool).count());
    }
}
