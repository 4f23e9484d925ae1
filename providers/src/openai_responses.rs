//! OpenAI's Responses API (`POST /responses`), streaming: the request body and the reading of its
//! events. It serves the models OpenAI offers only there ([`crate::openai::served_by_responses`])
//! and any `[[providers.models]]` entry with `wire_api = "responses"`.
//!
//! Stateless (`store: false`): each request carries the whole conversation as input items. A
//! reasoning model's reasoning items come back encrypted (`include:
//! ["reasoning.encrypted_content"]`) and travel in the history as thinking blocks (the summary,
//! and the encrypted content as the signature, marked [`SIGNATURE_PREFIX`] so that no other API
//! is sent it), where the item was; the next request sends each back before the message or calls
//! it led to, so the model goes on from its reasoning instead of reasoning again.
//!
//! Over 500 lines: the request body and the event parser of one wire API belong together, as
//! in the other providers' files.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Role};

use crate::assemble::{BlockKind, StreamBuilder};
use crate::config::{OPENAI_API_KEY, OPENAI_BASE_URL, ProviderKind};
use crate::history::{self, Paired};
use crate::openai::{
    DEFAULT_OPENAI_BASE_URL, efforts, is_reasoning_model, prompt_cache_key, reasoning_effort, wire_id,
};
use crate::route::Route;
use crate::sse::SseEvent;
use crate::stream::{ModelRequest, ProviderError, StopReason};
use crate::tool_search;
use crate::wire::{arguments_object, fresh_call_id, json_chunk, object_schema, plain_name, str_field};
use crate::wire_api::{WireApi, WireParser, WireRequest, parser_of, serves_every_model};

const PROVIDER: &str = "openai";

/// Marks a thinking block's signature as an encrypted reasoning item of the Responses API.
pub const SIGNATURE_PREFIX: &str = "openai:";

/// The Responses API, the row [`crate::vendor::wire_for`] picks for the routes that need it
/// (its vendor's facts are Chat Completions' row's).
pub static RESPONSES: WireApi = WireApi {
    kind: ProviderKind::Openai,
    key_var: OPENAI_API_KEY,
    base_url_var: OPENAI_BASE_URL,
    default_base_url: DEFAULT_OPENAI_BASE_URL,
    name_prefixes: &[],
    builtin_models: &[],
    key_header: ("authorization", "Bearer "),
    keyless_with_base_url: true,
    unsupported: serves_every_model,
    is_reasoning_model,
    efforts,
    tool_name: plain_name,
    build_request,
    structured_output: true,
    tool_search: crate::tool_search::responses_has,
    adjust,
    parser: parser_of::<Parser>,
};

/// Endpoints whose organisation was refused reasoning summaries (not verified): later requests
/// there ask for none.
static NO_SUMMARIES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn summaries_refused(base_url: &str) -> bool {
    NO_SUMMARIES.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|b| b == base_url)
}

fn user_item(content: &[ContentBlock]) -> Value {
    let parts: Vec<Value> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(json!({"type": "input_text", "text": text})),
            ContentBlock::Image { media_type, data: Some(data), .. } => Some(json!({
                "type": "input_image", "image_url": format!("data:{media_type};base64,{data}"), "detail": "auto",
            })),
            _ => None,
        })
        .collect();
    json!({"type": "message", "role": "user", "content": parts})
}

/// An assistant message's items, in its blocks' order. A reasoning item goes only where an item
/// it led to follows it in the same message (a reasoning item alone is of no use to the model).
/// `search`: the request sends the `tool_search` tool (the search's items go only with it).
fn assistant_items(content: &[ContentBlock], search: bool, items: &mut Vec<Value>) {
    for (at, block) in content.iter().enumerate() {
        match block {
            ContentBlock::Thinking { thinking, signature: Some(signature), .. } => {
                let Some(encrypted) = signature.strip_prefix(SIGNATURE_PREFIX) else { continue };
                let leads = content[at + 1..]
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Text { .. } | ContentBlock::ToolCall { .. }));
                if !leads {
                    continue;
                }
                let summary: Vec<Value> = std::iter::once(thinking)
                    .filter(|t| !t.is_empty())
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect();
                items.push(json!({"type": "reasoning", "summary": summary, "encrypted_content": encrypted}));
            }
            ContentBlock::Text { text } => items.push(json!({
                "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}],
            })),
            ContentBlock::ToolCall { id, name, arguments } => items.push(json!({
                "type": "function_call", "call_id": wire_id(id), "name": plain_name(name),
                "arguments": arguments_object(arguments).to_string(),
            })),
            // The built-in tool search's call and output, as the API gave them.
            ContentBlock::Hosted { provider, block } if search && provider == tool_search::RESPONSES => {
                items.push(block.clone())
            }
            _ => {}
        }
    }
}

/// The `input` items of a paired history: messages, calls and their outputs paired by
/// `call_id`, reasoning items before what they led to.
fn input_items(paired: &Paired, search: bool) -> Vec<Value> {
    let mut items = Vec::new();
    for message in &paired.messages {
        match message.role {
            Role::User | Role::System => items.push(user_item(&message.content)),
            Role::Assistant => assistant_items(&message.content, search, &mut items),
            Role::Tool => {
                for block in &message.content {
                    if let ContentBlock::ToolResult { tool_call_id, output, .. } = block {
                        items.push(
                            json!({"type": "function_call_output", "call_id": wire_id(tool_call_id), "output": output}),
                        );
                    }
                }
            }
        }
    }
    if !items.iter().any(|item| item["role"] == "user") {
        items.insert(
            0,
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": history::CONTINUE}]}),
        );
    }
    items
}

/// The Responses request for `request`, sent to `route`. The history is paired first
/// ([`crate::history::paired`]): every `function_call` is answered by its output.
pub fn build_request(route: &Route, request: &ModelRequest) -> WireRequest {
    let paired = history::paired(&request.messages);
    let mut body = json!({
        "model": route.model,
        "input": input_items(&paired, request.tools.iter().any(|t| t.deferred)),
        "stream": true,
        "store": false,
        "prompt_cache_key": prompt_cache_key(request),
    });
    if let Some(system) = paired.system_prompt(request.system.as_deref()) {
        body["instructions"] = json!(system);
    }
    // Deferred tools the history calls though no search in it loaded them go loaded.
    let called = tool_search::called_unloaded(request, tool_search::RESPONSES);
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            // `strict` is the API's default, and refuses most schemas: tools here are checked
            // by superpi when called, not by the model's decoder.
            let mut function = json!({"type": "function", "name": plain_name(&tool.name), "description": tool.description,
                   "parameters": object_schema(&tool.input_schema), "strict": false});
            if tool.deferred && !called.contains(&tool.name) {
                function["defer_loading"] = json!(true);
            }
            function
        })
        .collect();
    if request.tools.iter().any(|t| t.deferred) {
        tools.push(tool_search::responses_tool());
    }
    if route.model.contains("deep-research") {
        // Deep research searches the web itself and takes no function tools.
        tools = vec![json!({"type": "web_search_preview"})];
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(output) = &request.output_schema {
        let strict = crate::wire::strict_schema(&output.schema);
        body["text"] = json!({"format": {
            "type": "json_schema", "name": output.name, "schema": output.schema, "strict": strict,
        }});
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max.max(16));
    }
    if route.reasoning {
        let effort = match request.effort.and_then(|e| e.nearest_in(efforts(&route.model, true))) {
            Some(effort) => Some(reasoning_effort(effort)),
            None => route.reasoning_effort.as_deref(),
        };
        let mut reasoning = json!({});
        if let Some(effort) = effort {
            reasoning["effort"] = json!(effort);
        }
        if !summaries_refused(&route.base_url) {
            reasoning["summary"] = json!("auto");
        }
        body["reasoning"] = reasoning;
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    WireRequest {
        url: format!("{}/responses", route.base_url.trim_end_matches('/')),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
        ],
        body: body.to_string().into_bytes(),
    }
}

/// OpenAI refuses reasoning summaries to an organisation it has not verified: the request goes
/// again without them, and so do the later ones to that endpoint.
fn adjust(request: &WireRequest, error: &ProviderError) -> Option<WireRequest> {
    let ProviderError::Http { status: 400, message, .. } = error else { return None };
    if !message.contains("reasoning summaries") {
        return None;
    }
    let mut body: Value = serde_json::from_slice(&request.body).ok()?;
    body.get_mut("reasoning")?.as_object_mut()?.remove("summary")?;
    if let Some(base) = request.url.strip_suffix("/responses") {
        NO_SUMMARIES.lock().unwrap_or_else(|p| p.into_inner()).push(base.to_string());
    }
    Some(WireRequest { body: body.to_string().into_bytes(), ..request.clone() })
}

/// The status a stream's error code stands for (the retryable ones as the HTTP layer knows them).
fn status_of(code: &str) -> u16 {
    match code {
        "rate_limit_exceeded" | "insufficient_quota" => 429,
        "server_is_overloaded" | "slow_down" => 503,
        "server_error" => 500,
        _ if code.starts_with("invalid") || code.contains("exceeded") || code.contains("unsupported") => 400,
        _ => 500,
    }
}

/// An error object of `response.failed` or an `error` event.
fn failure(error: &Value) -> ProviderError {
    let message = str_field(error, "message").unwrap_or("the response failed").to_string();
    let status = match error.get("code") {
        Some(Value::String(code)) => status_of(code),
        Some(Value::Number(n)) => n.as_u64().filter(|c| (400..600).contains(c)).map_or(500, |c| c as u16),
        _ => 500,
    };
    ProviderError::Http { provider: PROVIDER.into(), status, message }
}

/// Reads Responses events: `response.created`, each item's `output_item.added`, its deltas
/// (text, refusal, reasoning summary, call arguments) and `output_item.done`, then
/// `response.completed`, `response.incomplete` or `response.failed`; or an `error` event.
#[derive(Debug, Default)]
pub struct Parser {
    /// The item the open block belongs to.
    open_item: Option<String>,
    /// The summary part the open thinking block is in.
    summary_part: u64,
    /// Arguments of calls not announced (yet), by item id.
    held: HashMap<String, String>,
    /// The item ids of the calls whose block was opened.
    announced: HashSet<String>,
    calls: u32,
    refused: bool,
    response_id: Option<String>,
}

impl Parser {
    /// Opens a block for `item` unless the open block is of that kind and item.
    fn enter(&mut self, item: &str, kind: BlockKind, out: &mut StreamBuilder) -> bool {
        let same = self.open_item.as_deref() == Some(item) && out.open_kind() == Some(kind);
        if !same {
            out.close();
            self.open_item = Some(item.to_string());
            self.summary_part = 0;
        }
        !same
    }

    fn text(&mut self, item: &str, delta: &str, out: &mut StreamBuilder) {
        self.enter(item, BlockKind::Text, out);
        out.text_delta(delta);
    }

    fn reasoning(&mut self, item: &str, part: u64, delta: &str, out: &mut StreamBuilder) {
        if self.enter(item, BlockKind::Thinking, out) {
            out.thinking_start(false);
        } else if part != self.summary_part {
            out.thinking_delta("\n\n");
        }
        self.summary_part = part;
        out.thinking_delta(delta);
    }

    fn arguments(&mut self, item: &str, delta: &str, out: &mut StreamBuilder) {
        if self.open_item.as_deref() == Some(item) && out.open_kind() == Some(BlockKind::ToolCall) {
            out.tool_delta(delta, None, None);
        } else if !self.announced.contains(item) {
            self.held.entry(item.to_string()).or_default().push_str(delta);
        }
    }

    fn call_id(&self, item: &Value) -> String {
        match str_field(item, "call_id").filter(|id| !id.is_empty()) {
            Some(id) => id.to_string(),
            None => match &self.response_id {
                Some(response) => format!("call_{response}_{}", self.calls),
                None => fresh_call_id("call"),
            },
        }
    }

    fn item_added(&mut self, item: &Value, out: &mut StreamBuilder) {
        if str_field(item, "type") != Some("function_call") {
            return;
        }
        let id = str_field(item, "id").unwrap_or("").to_string();
        out.close();
        self.calls += 1;
        let call_id = self.call_id(item);
        out.tool_start(Some(call_id), str_field(item, "name").map(str::to_string));
        out.tool_delta(str_field(item, "arguments").unwrap_or(""), None, None);
        self.announced.insert(id.clone());
        self.open_item = Some(id);
    }

    fn item_done(&mut self, item: &Value, out: &mut StreamBuilder) {
        let id = str_field(item, "id").unwrap_or("");
        let open = self.open_item.as_deref() == Some(id) && out.open_kind().is_some();
        match str_field(item, "type").unwrap_or("") {
            "function_call" => {
                let arguments = str_field(item, "arguments").unwrap_or("");
                if open && out.open_kind() == Some(BlockKind::ToolCall) {
                    if out.open_tool_arguments().is_some_and(str::is_empty) {
                        out.tool_delta(arguments, None, None);
                    }
                } else if self.announced.contains(id) {
                    tracing::warn!(item = id, "openai: the rest of a call whose block another item closed is dropped");
                } else {
                    // Never announced: the call whole, with any arguments that came before.
                    let held = self.held.remove(id).filter(|h| !h.is_empty());
                    out.close();
                    self.calls += 1;
                    let call_id = self.call_id(item);
                    out.tool_start(Some(call_id), str_field(item, "name").map(str::to_string));
                    out.tool_delta(held.as_deref().unwrap_or(arguments), None, None);
                }
                out.close();
            }
            "message" if !open => {
                // Nothing streamed for it: its parts whole.
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match str_field(part, "type") {
                        Some("output_text") => self.text(id, str_field(part, "text").unwrap_or(""), out),
                        Some("refusal") => {
                            self.refused = true;
                            self.text(id, str_field(part, "refusal").unwrap_or(""), out);
                        }
                        _ => {}
                    }
                }
                out.close();
            }
            "message" => out.close(),
            // The built-in tool search, run by OpenAI: kept whole, sent back as it is.
            "tool_search_call" | "tool_search_output" => {
                out.close();
                out.hosted(tool_search::RESPONSES, item.clone());
            }
            "reasoning" => {
                let encrypted = str_field(item, "encrypted_content").filter(|e| !e.is_empty());
                if !(open && out.open_kind() == Some(BlockKind::Thinking)) {
                    let summary: Vec<&str> = item
                        .get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|part| str_field(part, "text"))
                        .collect();
                    if summary.is_empty() && encrypted.is_none() {
                        return;
                    }
                    out.thinking_start(false);
                    out.thinking_delta(&summary.join("\n\n"));
                }
                if let Some(encrypted) = encrypted {
                    out.thinking_signature(&format!("{SIGNATURE_PREFIX}{encrypted}"));
                }
                out.close();
            }
            _ => {}
        }
        self.open_item = None;
    }

    fn finish(&mut self, response: &Value, out: &mut StreamBuilder) {
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            let read = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64);
            let totals = out.usage_mut();
            totals.input_tokens = read("/input_tokens").unwrap_or(totals.input_tokens);
            totals.output_tokens = read("/output_tokens").unwrap_or(totals.output_tokens);
            totals.cached_input_tokens = read("/input_tokens_details/cached_tokens").unwrap_or(0);
            let details = out.details_mut();
            details.reasoning_tokens = read("/output_tokens_details/reasoning_tokens").unwrap_or(0);
        }
        let incomplete = response.pointer("/incomplete_details/reason").and_then(Value::as_str);
        let stop = match (str_field(response, "status"), incomplete) {
            (_, Some("content_filter")) => StopReason::Refusal,
            (Some("incomplete"), _) | (_, Some(_)) => StopReason::MaxTokens,
            _ if self.calls > 0 => StopReason::ToolUse,
            _ if self.refused => StopReason::Refusal,
            _ => StopReason::EndTurn,
        };
        out.done(stop);
    }

    /// An event whose data is read as a whole object.
    fn event_value(&mut self, kind: &str, value: &Value, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        let item_id = str_field(value, "item_id").unwrap_or("");
        match kind {
            "response.created" | "response.in_progress" => {
                if let Some(id) = value.pointer("/response/id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
                    out.set_response_id(id.to_string());
                    self.response_id.get_or_insert_with(|| id.to_string());
                }
            }
            "response.output_item.added" => self.item_added(value.get("item").unwrap_or(&Value::Null), out),
            "response.output_item.done" => self.item_done(value.get("item").unwrap_or(&Value::Null), out),
            _ if DELTAS.contains(&kind) => {
                let delta = str_field(value, "delta").unwrap_or("");
                let part = value.get("summary_index").and_then(Value::as_u64).unwrap_or(0);
                self.delta(kind, item_id, part, delta, out);
            }
            "response.function_call_arguments.done" => {
                let open = self.open_item.as_deref() == Some(item_id);
                if open && out.open_tool_arguments().is_some_and(str::is_empty) {
                    out.tool_delta(str_field(value, "arguments").unwrap_or(""), None, None);
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finish(value.get("response").unwrap_or(&Value::Null), out);
            }
            "response.failed" => {
                return Err(failure(value.pointer("/response/error").unwrap_or(&Value::Null)));
            }
            "error" => return Err(failure(value.get("error").filter(|e| e.is_object()).unwrap_or(value))),
            _ => {}
        }
        Ok(())
    }

    fn delta(&mut self, kind: &str, item: &str, part: u64, delta: &str, out: &mut StreamBuilder) {
        match kind {
            "response.output_text.delta" => self.text(item, delta, out),
            "response.refusal.delta" => {
                self.refused = true;
                self.text(item, delta, out);
            }
            "response.function_call_arguments.delta" => self.arguments(item, delta, out),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.reasoning(item, part, delta, out)
            }
            _ => {}
        }
    }
}

/// The fields of a delta event, read without building a `Value` (the hot path).
#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(borrow, rename = "type")]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    item_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<u64>,
}

/// The delta events the parser reads.
const DELTAS: &[&str] = &[
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
];

impl WireParser for Parser {
    fn event(&mut self, event: &SseEvent, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        if let Ok(typed) = serde_json::from_str::<Delta<'_>>(data)
            && DELTAS.contains(&typed.kind.as_ref())
            && let Some(delta) = typed.delta
        {
            let item = typed.item_id.as_deref().unwrap_or("");
            self.delta(&typed.kind, item, typed.summary_index.unwrap_or(0), &delta, out);
            return Ok(());
        }
        let value = json_chunk(PROVIDER, data)?;
        let kind = str_field(&value, "type").unwrap_or(event.event.as_str()).to_string();
        self.event_value(&kind, &value, out)
    }

    fn end(&mut self, _out: &mut StreamBuilder) -> Result<(), ProviderError> {
        Err(ProviderError::Transport {
            provider: PROVIDER.to_string(),
            message: "the stream ended before response.completed".to_string(),
        })
    }
}

#[cfg(test)]
#[path = "openai_responses_tests.rs"]
mod tests;
