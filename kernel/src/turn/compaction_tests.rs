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

/// A compaction cut that summarises the vendor's tool search away and keeps a later call of
/// the tool it found: the kept part still makes a request each vendor's rules accept (the
/// fake refuses a call of a deferred tool no search in the history loaded).
#[test]
fn a_cut_past_the_search_keeps_the_found_tool_callable() {
    use serde_json::json;
    use superpi_providers::ProviderKind;
    use superpi_providers::route::{Auth, Route};
    use superpi_providers::testing::rules;
    let call = |id: &str| ContentBlock::ToolCall { id: id.into(), name: "mcp__fix__echo".into(), arguments: json!({}) };
    let answer = |content| Message { role: Role::Assistant, content, usage: None, stop_reason: None };
    let result = |id: &str| Message {
        role: Role::Tool,
        content: vec![ContentBlock::tool_result(id, "mcp__fix__echo", "ok")],
        usage: None,
        stop_reason: None,
    };
    let anthropic = |block| ContentBlock::Hosted { provider: "anthropic".into(), block };
    let responses = |block| ContentBlock::Hosted { provider: "openai-responses".into(), block };
    let searched = vec![
        anthropic(
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "echo"}}),
        ),
        anthropic(
            json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "mcp__fix__echo"}]}}),
        ),
        responses(
            json!({"type": "tool_search_call", "id": "tsc_1", "call_id": "call_s", "status": "completed", "arguments": {"query": "echo"}, "execution": "server"}),
        ),
        responses(
            json!({"type": "tool_search_output", "id": "tso_1", "call_id": "call_s", "status": "completed", "execution": "server", "tools": [{"type": "function", "name": "mcp__fix__echo", "parameters": {"type": "object"}, "defer_loading": true}]}),
        ),
        call("call_1"),
    ];
    let entries = vec![
        entry(1, EntryKind::User, Message::user_text("x".repeat(1_500))),
        entry(2, EntryKind::Assistant, answer(searched)),
        entry(3, EntryKind::ToolResult, result("call_1")),
        entry(4, EntryKind::Assistant, answer(vec![ContentBlock::text("found")])),
        entry(5, EntryKind::User, Message::user_text("again")),
        entry(6, EntryKind::Assistant, answer(vec![call("call_2")])),
        entry(7, EntryKind::ToolResult, result("call_2")),
    ];
    let limits = ModelLimits { context_window: 1_000, max_output_tokens: 100 };
    let ctx = Context { entries, ..Context::default() };
    let cut = choose_cut(&ctx, limits).expect("a cut");
    assert_eq!(cut, 4, "the search in the summary, the later call kept");
    let kept = Context {
        summary: Some(Message::user_text("(summary)")),
        entries: ctx.entries[cut..].to_vec(),
        ..Context::default()
    };
    let tool = |name: &str| ToolSpec {
        name: name.into(),
        description: "echo".into(),
        input_schema: json!({"type": "object"}),
        deferred: true,
    };
    for (kind, model, responses) in
        [(ProviderKind::Anthropic, "claude-sonnet-4-5", false), (ProviderKind::Openai, "gpt-5.4", true)]
    {
        let route = Route {
            kind,
            name: model.into(),
            model: model.into(),
            base_url: "http://127.0.0.1:9".into(),
            auth: Auth::Key("k".into()),
            thinking_budget: None,
            reasoning_effort: None,
            reasoning: false,
            responses,
            tool_search: true,
        };
        let request = ModelRequest {
            model: model.into(),
            messages: kept.messages(),
            tools: vec![tool("mcp__fix__echo"), tool("mcp__fix__other")],
            max_tokens: Some(100),
            ..Default::default()
        };
        let wire = (superpi_providers::vendor::wire_for(&route).build_request)(&route, &request);
        let body: serde_json::Value = serde_json::from_slice(&wire.body).unwrap();
        let checked = if responses { rules::responses::check(&body) } else { rules::anthropic::check(&body) };
        assert_eq!(checked, Ok(()), "{model}: {body}");
    }
}
