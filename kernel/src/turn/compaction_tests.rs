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
fn a_refusal_teaches_the_window_the_server_says_in_superpis_count() {
    // The server says its window: taken as it is when it counted no more than superpi did.
    assert_eq!(learned_window(32_768, 9_000, Some(8_000), Some(8_900)), 8_000);
    assert_eq!(learned_window(32_768, 9_000, Some(8_000), None), 8_000);
    // It counted more than superpi: its window in superpi's count, so estimates keep under it.
    assert_eq!(learned_window(32_768, 9_000, Some(8_000), Some(10_000)), 7_200);
    // By half at most.
    assert_eq!(learned_window(32_768, 700, Some(8_000), Some(9_000)), 4_000);
    // No figure: three quarters of what was refused, never below the floor.
    assert_eq!(learned_window(128_000, 40_000, None, None), 30_000);
    assert_eq!(learned_window(128_000, 1_000, None, None), MIN_LEARNED_WINDOW);
    // Never above what was known.
    assert_eq!(learned_window(4_000, 9_000, Some(8_000), None), 4_000);
}
