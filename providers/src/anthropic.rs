//! Anthropic Messages, streaming: the request body and the reading of its events.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Effort, Role};

use crate::assemble::{BlockKind, StreamBuilder};
use crate::config::{ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ProviderKind};
use crate::history;
use crate::route::Route;
use crate::sse::SseEvent;
use crate::stream::{ModelRequest, ProviderError, StopReason};
use crate::tool_search;
use crate::wire::{arguments_object, json_chunk, object_schema, plain_name, str_field};
use crate::wire_api::{
    WireApi, WireParser, WireRequest, no_reasoning_settings, parser_of, refusals_stand, serves_every_model,
};

/// The endpoint when the settings name none.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

const PROVIDER: &str = "anthropic";
pub const API_VERSION: &str = "2023-06-01";
/// Sent when the request names no limit (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Tool-use ids must match `[a-zA-Z0-9_-]+`; ids from other providers are made to, with a
/// hash of the original so that two ids never clean up to the same one.
fn tool_id(id: &str) -> String {
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return id.to_string();
    }
    let cleaned: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    format!("{cleaned}_{:08x}", crate::wire::short_hash(id) as u32)
}

/// `search`: the names of the request's tools (as sent) when it sends the search tool.
fn blocks_for(role: Role, content: &[ContentBlock], search: Option<&BTreeSet<String>>) -> Vec<Value> {
    let mut out = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text } if !text.trim().is_empty() => out.push(json!({"type": "text", "text": text})),
            ContentBlock::Image { media_type, data: Some(data), .. } if role == Role::User => out.push(json!({
                "type": "image", "source": {"type": "base64", "media_type": media_type, "data": data},
            })),
            // Gemini's and OpenAI's signatures travel as thinking blocks too: never Anthropic's.
            ContentBlock::Thinking { thinking, signature: Some(signature), redacted }
                if role == Role::Assistant
                    && !signature.starts_with(crate::gemini::SIGNATURE_PREFIX)
                    && !signature.starts_with(crate::openai_responses::SIGNATURE_PREFIX) =>
            {
                if *redacted {
                    out.push(json!({"type": "redacted_thinking", "data": signature}));
                } else {
                    out.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
                }
            }
            ContentBlock::ToolCall { id, name, arguments } if role == Role::Assistant => out.push(json!({
                "type": "tool_use", "id": tool_id(id), "name": plain_name(name), "input": arguments_object(arguments),
            })),
            ContentBlock::ToolResult { tool_call_id, output, is_error, .. } => {
                // An empty content is refused for an error result; say so instead.
                let output = if output.trim().is_empty() { "(no output)" } else { output.as_str() };
                out.push(json!({
                    "type": "tool_result", "tool_use_id": tool_id(tool_call_id), "content": output, "is_error": is_error,
                }));
            }
            // The built-in tool search's call and result, as the API gave them.
            ContentBlock::Hosted { provider, block }
                if role == Role::Assistant && provider == tool_search::ANTHROPIC =>
            {
                if let Some(offered) = search {
                    out.push(tool_search::without_dangling(block, offered));
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether the request ends inside a tool loop whose assistant turn does not open with a
/// thinking block: with thinking on, the API refuses that (a history from another provider,
/// or from before thinking was turned on), so thinking is left off for this request.
fn tool_loop_without_thinking(turns: &[(bool, Vec<Value>)]) -> bool {
    let [.., (true, assistant), (false, user)] = turns else { return false };
    let in_loop = user.iter().any(|b| b["type"] == "tool_result");
    let opens_with_thinking =
        assistant.first().is_some_and(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking");
    in_loop && !opens_with_thinking
}

/// The models with extended thinking: every Claude since 3.7 Sonnet.
fn efforts(model: &str, _reasoning: bool) -> &'static [Effort] {
    let id = model.rsplit('/').next().unwrap_or(model);
    let before_thinking =
        ["claude-2", "claude-instant", "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-3-5"];
    if before_thinking.iter().any(|prefix| id.starts_with(prefix)) { &[] } else { &Effort::ALL }
}

/// The thinking budget of a level (`off`: no thinking).
fn thinking_budget(effort: Effort) -> Option<u32> {
    match effort {
        Effort::Off => None,
        Effort::Low => Some(2048),
        Effort::Medium => Some(8192),
        Effort::High => Some(24_576),
    }
}

/// A cache breakpoint: Anthropic caches a prompt's prefix only up to a block marked so (tools,
/// then system, then messages), at most four a request, with the default 5-minute lifetime.
fn breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// At most this many blocks of a request may carry `cache_control`.
const MAX_BREAKPOINTS: usize = 4;

/// Whether a block may carry `cache_control`: a thinking block may not (it is cached as part of
/// its turn), nor an empty text block.
fn cacheable(block: &Value) -> bool {
    match block["type"].as_str() {
        // The built-in tool search's blocks go back unchanged.
        Some("thinking" | "redacted_thinking" | "server_tool_use" | "tool_search_tool_result") | None => false,
        Some("text") => block["text"].as_str().is_some_and(|text| !text.trim().is_empty()),
        Some(_) => true,
    }
}

/// Marks the moving end of the history, at most `budget` breakpoints: the last message's last
/// cacheable block, where this request's prefix is written for the next step, and the previous
/// user turn's, where the last step wrote its own (a lookup walks back only 20 blocks from a
/// breakpoint, which a step of many calls and results passes).
fn mark_history(messages: &mut [Value], budget: usize) {
    let Some(last) = messages.len().checked_sub(1) else { return };
    let previous_user = messages[..last].iter().rposition(|m| m["role"] == "user");
    let marks = [Some(last), previous_user].into_iter().flatten().take(budget);
    for at in marks {
        let blocks = messages[at]["content"].as_array_mut();
        if let Some(block) = blocks.and_then(|blocks| blocks.iter_mut().rev().find(|b| cacheable(b))) {
            block["cache_control"] = breakpoint();
        }
    }
}

/// The Messages request for `request`, sent to `route`. The history is paired first
/// ([`crate::history::paired`]), then turns of one role are merged so that roles alternate.
pub fn build_request(route: &Route, request: &ModelRequest) -> WireRequest {
    let paired = history::paired(&request.messages);
    let system = paired.system_prompt(request.system.as_deref());
    // With the search tool (any deferred tool), the tools its results may name.
    let search = request.tools.iter().any(|t| t.deferred).then(|| {
        let names = request.tools.iter().map(|t| plain_name(&t.name).into_owned());
        names.chain([tool_search::ANTHROPIC_NAME.to_string()]).collect::<BTreeSet<String>>()
    });
    let turns = history::alternating(
        paired.messages.iter().map(|m| (m.role == Role::Assistant, blocks_for(m.role, &m.content, search.as_ref()))),
        json!({"type": "text", "text": history::CONTINUE}),
    );
    let thinking_allowed = !tool_loop_without_thinking(&turns);
    let mut messages: Vec<Value> = turns
        .into_iter()
        .map(|(assistant, blocks)| json!({"role": if assistant { "assistant" } else { "user" }, "content": blocks}))
        .collect();
    let mut max_tokens = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).max(1);
    let mut body = json!({"model": route.model, "stream": true});
    let budget = match request.effort.and_then(|e| e.nearest_in(efforts(&route.model, route.reasoning))) {
        Some(effort) => thinking_budget(effort),
        // The settings' budget, for a model that thinks (older ones refuse `thinking`).
        None => route.thinking_budget.filter(|_| !efforts(&route.model, false).is_empty()),
    };
    if let Some(budget) = budget.filter(|b| *b > 0 && thinking_allowed) {
        // The API's floor is 1024; the budget counts inside max_tokens, which the model's output
        // limit caps, and the answer needs room beside it.
        let cap = crate::limits::builtin(ProviderKind::Anthropic, &route.model).max_output_tokens;
        let cap = u32::try_from(cap).unwrap_or(u32::MAX).max(2048);
        let budget = budget.clamp(1024, cap - 1024);
        max_tokens = max_tokens.max(budget.saturating_add(1024)).min(cap);
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    body["max_tokens"] = json!(max_tokens);
    // Breakpoints where the prefix stays put across a conversation's requests (the tools, then
    // the system prompt) and at its moving end.
    let mut breakpoints = 0;
    if let Some(system) = system.filter(|s| !s.trim().is_empty()) {
        body["system"] = json!([{"type": "text", "text": system, "cache_control": breakpoint()}]);
        breakpoints += 1;
    }
    if !request.tools.is_empty() {
        let tool = |tool: &crate::ToolSpec| json!({"name": plain_name(&tool.name), "description": tool.description, "input_schema": object_schema(&tool.input_schema)});
        let mut tools: Vec<Value> = request.tools.iter().filter(|t| !t.deferred).map(tool).collect();
        // Deferred tools follow the search tool, past the breakpoint: the prefix the cache
        // keeps holds only what every request loads. Those the history calls though no search
        // in it loaded them go loaded.
        let called = tool_search::called_unloaded(request, tool_search::ANTHROPIC);
        let deferred: Vec<Value> = request
            .tools
            .iter()
            .filter(|t| t.deferred)
            .map(|t| {
                let mut deferred = tool(t);
                if !called.contains(&t.name) {
                    deferred["defer_loading"] = json!(true);
                }
                deferred
            })
            .collect();
        if !deferred.is_empty() {
            tools.push(tool_search::anthropic_tool());
        }
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = breakpoint();
            breakpoints += 1;
        }
        tools.extend(deferred);
        body["tools"] = Value::Array(tools);
    }
    mark_history(&mut messages, MAX_BREAKPOINTS - breakpoints);
    body["messages"] = Value::Array(messages);
    WireRequest {
        url: format!("{}/v1/messages", route.base_url.trim_end_matches('/')),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
            ("anthropic-version".into(), API_VERSION.into()),
        ],
        body: body.to_string().into_bytes(),
    }
}

/// Anthropic Messages, its row in the [`crate::vendor::WIRE_APIS`] table.
pub static ANTHROPIC: WireApi = WireApi {
    kind: ProviderKind::Anthropic,
    key_var: ANTHROPIC_API_KEY,
    base_url_var: ANTHROPIC_BASE_URL,
    default_base_url: DEFAULT_ANTHROPIC_BASE_URL,
    name_prefixes: &[("anthropic/", true), ("claude-", false)],
    builtin_models: &["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"],
    key_header: ("x-api-key", ""),
    keyless_with_base_url: false,
    unsupported: serves_every_model,
    is_reasoning_model: no_reasoning_settings,
    efforts,
    tool_name: plain_name,
    build_request,
    structured_output: false,
    tool_search: crate::tool_search::anthropic_has,
    adjust: refusals_stand,
    parser: parser_of::<Parser>,
};

/// Reads Messages events: `message_start`, `content_block_start/delta/stop`, `message_delta`,
/// `message_stop`, `ping`, `error`.
#[derive(Debug, Default)]
pub struct Parser {
    stop: Option<StopReason>,
    /// The wire index of the open block (the API streams one block at a time).
    open_wire: Option<u64>,
    /// The open block of the built-in tool search (as it started, and its input's JSON so far).
    hosted: Option<(Value, String)>,
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        // A long turn of the built-in tool search, paused: the caller sends it back to go on.
        "pause_turn" => StopReason::Paused,
        _ => StopReason::EndTurn,
    }
}

/// Anthropic's `input_tokens` leaves out the tokens read from the cache and those written to
/// it: the usage's input is the sum of the three, its cached part the tokens read, its
/// cache-write part the tokens written.
fn read_usage(usage: &Value, out: &mut StreamBuilder) {
    let totals = out.usage_mut();
    let read = |key: &str| usage.get(key).and_then(Value::as_u64);
    if let Some(input) = read("input_tokens") {
        let (cache_read, cache_written) =
            (read("cache_read_input_tokens").unwrap_or(0), read("cache_creation_input_tokens").unwrap_or(0));
        totals.input_tokens = input + cache_read + cache_written;
        totals.cached_input_tokens = cache_read;
        totals.cache_write_tokens = cache_written;
    }
    if let Some(output) = read("output_tokens") {
        totals.output_tokens = output;
    }
}

impl WireParser for Parser {
    fn event(&mut self, event: &SseEvent, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        let value = json_chunk(PROVIDER, &event.data)?;
        let kind = str_field(&value, "type").unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                let message = value.get("message").unwrap_or(&Value::Null);
                if let Some(id) = str_field(message, "id") {
                    out.set_response_id(id.to_string());
                }
                if let Some(usage) = message.get("usage") {
                    read_usage(usage, out);
                }
            }
            "content_block_start" => {
                let block = value.get("content_block").unwrap_or(&Value::Null);
                self.open_wire = value.get("index").and_then(Value::as_u64);
                match str_field(block, "type").unwrap_or("") {
                    "text" => {
                        out.close();
                        if let Some(text) = str_field(block, "text") {
                            out.text_delta(text);
                        }
                    }
                    "thinking" => {
                        out.thinking_start(false);
                        if let Some(thinking) = str_field(block, "thinking") {
                            out.thinking_delta(thinking);
                        }
                    }
                    "redacted_thinking" => {
                        out.thinking_start(true);
                        out.thinking_signature(str_field(block, "data").unwrap_or(""));
                    }
                    // The built-in tool search's call and result: kept whole, sent back as they are.
                    "server_tool_use" | "tool_search_tool_result" => {
                        out.close();
                        self.hosted = Some((block.clone(), String::new()));
                    }
                    "tool_use" => {
                        let id = str_field(block, "id").map(str::to_string);
                        let name = str_field(block, "name").map(str::to_string);
                        out.tool_start(id, name);
                        // `input` is `{}` here; the arguments come as input_json_delta.
                    }
                    other => tracing::debug!(block = other, "anthropic: content block type ignored"),
                }
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                match str_field(delta, "type").unwrap_or("") {
                    "text_delta" => out.text_delta(str_field(delta, "text").unwrap_or("")),
                    "thinking_delta" => out.thinking_delta(str_field(delta, "thinking").unwrap_or("")),
                    "signature_delta" => out.thinking_signature(str_field(delta, "signature").unwrap_or("")),
                    "input_json_delta" => {
                        if let Some((_, input)) = &mut self.hosted {
                            input.push_str(str_field(delta, "partial_json").unwrap_or(""));
                        } else if out.open_kind() == Some(BlockKind::ToolCall) {
                            out.tool_delta(str_field(delta, "partial_json").unwrap_or(""), None, None);
                        }
                    }
                    other => tracing::debug!(delta = other, "anthropic: delta type ignored"),
                }
            }
            "content_block_stop" => {
                out.close();
                if let Some((mut block, input)) = self.hosted.take() {
                    if !input.trim().is_empty() {
                        block["input"] = crate::assemble::parse_arguments(&input);
                    }
                    out.hosted(tool_search::ANTHROPIC, block);
                }
                self.open_wire = None;
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = value.get("usage") {
                    read_usage(usage, out);
                }
            }
            "message_stop" => out.done(self.stop.unwrap_or(StopReason::EndTurn)),
            "error" => {
                let error = value.get("error").unwrap_or(&Value::Null);
                let status = match str_field(error, "type").unwrap_or("") {
                    "overloaded_error" => 529,
                    "rate_limit_error" => 429,
                    "invalid_request_error" => 400,
                    "authentication_error" => 401,
                    "permission_error" => 403,
                    "not_found_error" => 404,
                    "request_too_large" => 413,
                    _ => 500,
                };
                let message = str_field(error, "message").unwrap_or("unknown error").to_string();
                return Err(ProviderError::Http { provider: PROVIDER.into(), status, message });
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        if let Some(stop) = self.stop.filter(|_| self.open_wire.is_none()) {
            out.done(stop);
            return Ok(());
        }
        Err(ProviderError::Transport {
            provider: PROVIDER.to_string(),
            message: "the stream ended before message_stop".to_string(),
        })
    }
}
