#![allow(clippy::unwrap_used, reason = "tests")]

use serde_json::{Value, json};

use super::*;

const MARK: &str = r#"{"type": "ephemeral"}"#;

fn mark() -> Value {
    serde_json::from_str(MARK).unwrap()
}

/// A text of about `tokens` tokens as the fakes count them.
fn words(tokens: usize, seed: &str) -> String {
    format!("{seed} {}", "word ".repeat(tokens * 4 / 5))
}

/// A request with a system prompt of about `system` tokens, marked, and `turns` messages, the
/// last (and the one before it, when `both`) marked.
fn request(model: &str, system: &str, turns: &[&str], both: bool) -> Value {
    let last = turns.len() - 1;
    let messages: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut block = json!({"type": "text", "text": text});
            if i == last || (both && i + 2 == turns.len()) {
                block["cache_control"] = mark();
            }
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": [block]})
        })
        .collect();
    json!({"model": model, "max_tokens": 100,
           "system": [{"type": "text", "text": system, "cache_control": mark()}], "messages": messages})
}

fn tokens(body: &Value) -> u64 {
    counted_tokens(body.to_string().as_bytes())
}

#[test]
fn a_prefix_written_at_a_breakpoint_is_read_by_the_next_request() {
    let mut caches = PromptCaches::default();
    let system = words(2000, "system");
    let first = request("claude-sonnet-4-5", &system, &["walk the tree"], false);
    let used = caches.anthropic(&first, tokens(&first));
    assert_eq!(used.read, 0, "a cold cache");
    assert!(used.written >= 2000 && used.written <= tokens(&first), "{used:?}");

    let second = request("claude-sonnet-4-5", &system, &["walk the tree", "walking", "go on"], true);
    let again = caches.anthropic(&second, tokens(&second));
    assert!(again.read >= used.written, "the first request's whole prefix is read: {again:?} after {used:?}");
    assert!(again.written > 0 && again.read + again.written <= tokens(&second), "{again:?}");

    // Another model has its own cache; another system prompt voids every entry after it.
    let other = request("claude-opus-4-1", &system, &["walk the tree"], false);
    assert_eq!(caches.anthropic(&other, tokens(&other)).read, 0);
    let changed = request("claude-sonnet-4-5", &words(2000, "other"), &["walk the tree"], false);
    assert_eq!(caches.anthropic(&changed, tokens(&changed)).read, 0);
}

#[test]
fn a_prefix_under_the_models_minimum_is_neither_written_nor_read() {
    let mut caches = PromptCaches::default();
    let short = request("claude-sonnet-4-5", "Be brief.", &["hi"], false);
    assert_eq!(caches.anthropic(&short, tokens(&short)), CacheUse::default());
    assert_eq!(caches.anthropic(&short, tokens(&short)), CacheUse::default());
    // 2,000 tokens are enough for Sonnet, not for Haiku 4.5 (4,096).
    let system = words(2000, "system");
    let haiku = request("claude-haiku-4-5", &system, &["hi"], false);
    assert_eq!(caches.anthropic(&haiku, tokens(&haiku)), CacheUse::default());
    assert_eq!(caches.anthropic(&haiku, tokens(&haiku)), CacheUse::default());
}

#[test]
fn an_entry_more_than_twenty_blocks_before_every_breakpoint_is_not_found() {
    let system = words(2000, "system");
    let turns: Vec<String> = (0..25).map(|i| format!("step {i}")).collect();
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    // Written at the first message ...
    let mut caches = PromptCaches::default();
    let first = request("claude-sonnet-4-5", &system, &turns[..1], false);
    let written = caches.anthropic(&first, tokens(&first)).written;
    // ... it is not found from a breakpoint 24 blocks on (only the system prompt's entry is) ...
    let far = request("claude-sonnet-4-5", &system, &turns, false);
    let read = caches.anthropic(&far, tokens(&far)).read;
    assert!(read > 0 && read < written, "{read} of {written}");
    // ... but is from one 20 blocks on.
    let mut caches = PromptCaches::default();
    caches.anthropic(&first, tokens(&first));
    let near = request("claude-sonnet-4-5", &system, &turns[..21], false);
    assert_eq!(caches.anthropic(&near, tokens(&near)).read, written);
}

#[test]
fn a_change_of_the_thinking_setting_voids_the_messages_entries_only() {
    let mut caches = PromptCaches::default();
    let system = words(2000, "system");
    let plain = request("claude-sonnet-4-5", &system, &[&words(1000, "prompt")], false);
    let written = caches.anthropic(&plain, tokens(&plain)).written;
    let mut thinking = plain.clone();
    thinking["thinking"] = json!({"type": "enabled", "budget_tokens": 2048});
    let read = caches.anthropic(&thinking, tokens(&thinking)).read;
    assert!(read >= 2000 && read < written, "the system prompt's entry only: {read} of {written}");
}

#[test]
fn openai_reads_the_longest_prefix_seen_under_its_key_in_steps() {
    let mut caches = PromptCaches::default();
    let body = |turns: usize| {
        let messages: Vec<Value> =
            (0..turns).map(|i| json!({"role": "user", "content": words(600, &format!("turn {i}"))})).collect();
        json!({"model": "gpt-4o", "messages": messages})
    };
    let (one, three) = (body(1), body(3));
    assert_eq!(caches.openai("k".into(), &one, tokens(&one)).read, 0);
    let read = caches.openai("k".into(), &three, tokens(&three)).read;
    assert_eq!(read, 0, "600 tokens shared: under the 1,024 minimum");
    let read = caches.openai("k".into(), &body(4), tokens(&body(4))).read;
    assert!(read >= 1024 && read % 128 == 0, "{read}");
    assert_eq!(caches.openai("other".into(), &three, tokens(&three)).read, 0, "another key");
}
