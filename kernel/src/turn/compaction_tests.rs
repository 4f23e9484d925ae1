use superpi_proto::{ContentBlock, Entry};

use super::*;

fn entry(seq: u64, kind: EntryKind, message: Message) -> Entry {
    Entry { seq, kind, turn_id: None, message, created_at_ms: 0 }
}

fn turn(seq: u64, bytes: usize) -> [Entry; 2] {
    let answer =
        Message { role: Role::Assistant, content: vec![ContentBlock::text("ok")], usage: None, stop_reason: None };
    [entry(seq, EntryKind::User, Message::user_text("x".repeat(bytes))), entry(seq + 1, EntryKind::Assistant, answer)]
}

#[test]
fn the_cut_keeps_the_recent_turns_that_fit_a_share_of_the_window() {
    let limits = ModelLimits { context_window: 1_000, max_output_tokens: 100 };
    // Four turns of about 110 tokens each: the last two fit 30 % of the window.
    let entries: Vec<Entry> = (0..4).flat_map(|t| turn(t * 2 + 1, 300)).collect();
    let ctx = Context { entries, ..Context::default() };
    assert_eq!(choose_cut(&ctx, limits), Some(4));

    // Prompts bigger than the share: the last answer alone fits.
    let entries: Vec<Entry> = (0..3).flat_map(|t| turn(t * 2 + 1, 1_500)).collect();
    let ctx = Context { entries, ..Context::default() };
    assert_eq!(choose_cut(&ctx, limits), Some(5));
    // Nothing fits: keep nothing (the summary stands for everything).
    let mut entries: Vec<Entry> = (0..3).flat_map(|t| turn(t * 2 + 1, 1_500)).collect();
    entries.push(entry(7, EntryKind::User, Message::user_text("y".repeat(1_500))));
    let ctx = Context { entries, ..Context::default() };
    assert_eq!(choose_cut(&ctx, limits), Some(7));

    // A lone prompt: nothing before it to summarise.
    let ctx = Context { entries: vec![entry(1, EntryKind::User, Message::user_text("hi"))], ..Context::default() };
    assert_eq!(choose_cut(&ctx, limits), None);
}

#[test]
fn the_summary_request_leaves_out_the_oldest_entries_when_they_do_not_fit() {
    let limits = ModelLimits { context_window: 1_000, max_output_tokens: 100 };
    let entries: Vec<Entry> = (0..6).flat_map(|t| turn(t * 2 + 1, 600)).collect();
    let ctx = Context { entries, ..Context::default() };
    let frame = Frame { model: "mock", effort: None, system: Some("sys"), tools: &[], limits };
    let request = summary_request(&ctx, 12, &frame);
    assert!(superpi_providers::tokens::request(&request) <= context::request_limit(limits));
    assert_eq!(request.messages.last().map(Message::text).as_deref(), Some(SUMMARY_PROMPT));
    assert!(request.messages.len() < 13 && request.messages.len() > 2, "{}", request.messages.len());
    assert_eq!(request.system.as_deref(), Some("sys"));
}
