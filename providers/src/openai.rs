//! OpenAI Chat Completions, streaming (and every compatible server: vLLM, Ollama, llama.cpp,
//! LiteLLM): the request body and the reading of its chunks.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Value, json};
use superpi_proto::{ContentBlock, Effort, Role};

use crate::assemble::{BlockKind, StreamBuilder};
use crate::config::{OPENAI_API_KEY, OPENAI_BASE_URL, ProviderKind};
use crate::history;
use crate::openai_wire::{CallDelta, read_chunk};
use crate::route::Route;
use crate::sse::SseEvent;
use crate::stream::{ModelRequest, ProviderError, StopReason};
use crate::wire::{fresh_call_id, joined_text, object_schema, plain_name};
use crate::wire_api::{WireApi, WireParser, WireRequest, parser_of, refusals_stand};

/// The endpoint when the settings name none.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

const PROVIDER: &str = "openai";

/// The longest tool-call id the API takes.
const MAX_ID_LEN: usize = 40;

/// A tool-call id as this API takes it: ids from other providers longer than 40 characters
/// are replaced by a stable hash, the same for the call and its result.
pub(crate) fn wire_id(id: &str) -> String {
    if id.len() <= MAX_ID_LEN {
        return id.to_string();
    }
    format!("call_{:016x}", crate::wire::short_hash(id))
}

/// A user message's content: its text, or, when it holds images, an array of `text` and
/// `image_url` parts (the images as data URLs).
fn user_content(content: &[ContentBlock]) -> Value {
    if !content.iter().any(|b| matches!(b, ContentBlock::Image { data: Some(_), .. })) {
        return Value::String(joined_text(content));
    }
    let parts = content.iter().filter_map(|block| match block {
        ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
        ContentBlock::Image { media_type, data: Some(data), .. } => {
            Some(json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}}))
        }
        _ => None,
    });
    Value::Array(parts.collect())
}

/// The Chat Completions request for `request`, sent to `route`. The history is paired first
/// ([`crate::history::paired`]): every `tool_calls` message is answered by `tool` messages.
pub fn build_request(route: &Route, request: &ModelRequest) -> WireRequest {
    let paired = history::paired(&request.messages);
    let mut messages = Vec::new();
    let system = request.system.iter().filter(|s| !s.trim().is_empty()).chain(&paired.system);
    for text in system {
        messages.push(json!({"role": "system", "content": text}));
    }
    for message in &paired.messages {
        match message.role {
            Role::User | Role::System => {
                messages.push(json!({"role": "user", "content": user_content(&message.content)}));
            }
            Role::Tool => {
                for block in &message.content {
                    if let ContentBlock::ToolResult { tool_call_id, output, .. } = block {
                        messages
                            .push(json!({"role": "tool", "tool_call_id": wire_id(tool_call_id), "content": output}));
                    }
                }
            }
            Role::Assistant => {
                let text = joined_text(&message.content);
                let calls: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolCall { id, name, arguments } => Some(json!({
                            "id": wire_id(id),
                            "type": "function",
                            "function": {"name": plain_name(name), "arguments": arguments.to_string()},
                        })),
                        _ => None,
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut out = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
                if !calls.is_empty() {
                    out["tool_calls"] = Value::Array(calls);
                }
                messages.push(out);
            }
        }
    }
    if !messages.iter().any(|m| m["role"] != "system") {
        messages.push(json!({"role": "user", "content": history::CONTINUE}));
    }
    let mut body = json!({
        "model": route.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": plain_name(&tool.name), "description": tool.description, "parameters": object_schema(&tool.input_schema),
                }})
            })
            .collect();
    }
    if let Some(output) = &request.output_schema {
        let strict = crate::wire::strict_schema(&output.schema);
        body["response_format"] = json!({"type": "json_schema", "json_schema": {
            "name": output.name, "schema": output.schema, "strict": strict,
        }});
    }
    if let Some(max) = request.max_tokens {
        body[if route.reasoning { "max_completion_tokens" } else { "max_tokens" }] = json!(max.max(1));
    }
    let effort = match request.effort.and_then(|e| e.nearest_in(efforts(&route.model, route.reasoning))) {
        Some(effort) => Some(reasoning_effort(effort)),
        None => route.reasoning_effort.as_deref().filter(|_| route.reasoning),
    };
    if let Some(effort) = effort {
        body["reasoning_effort"] = json!(effort);
    }
    if takes_prompt_cache_key(&route.base_url) {
        body["prompt_cache_key"] = json!(prompt_cache_key(request));
    }
    WireRequest {
        url: format!("{}/chat/completions", route.base_url.trim_end_matches('/')),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
        ],
        body: body.to_string().into_bytes(),
    }
}

/// OpenAI Chat Completions, its row in the [`crate::vendor::WIRE_APIS`] table.
pub static OPENAI: WireApi = WireApi {
    kind: ProviderKind::Openai,
    key_var: OPENAI_API_KEY,
    base_url_var: OPENAI_BASE_URL,
    default_base_url: DEFAULT_OPENAI_BASE_URL,
    // codex- and computer-use- route here too: the router sends the models OpenAI serves only
    // through the Responses API there ([`served_by_responses`]).
    name_prefixes: &[
        ("openai/", true),
        ("gpt-", false),
        ("o1", false),
        ("o3", false),
        ("o4", false),
        ("chatgpt-", false),
        ("codex-", false),
        ("computer-use-", false),
    ],
    builtin_models: &["gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini", "gpt-5", "gpt-5-mini"],
    key_header: ("authorization", "Bearer "),
    keyless_with_base_url: true,
    unsupported,
    is_reasoning_model,
    efforts,
    tool_name: plain_name,
    build_request,
    structured_output: true,
    tool_search: crate::tool_search::none,
    adjust: refusals_stand,
    parser: parser_of::<Parser>,
};

/// Whether OpenAI serves the model only through the Responses API (the `-pro` reasoning
/// models, the codex family, deep research, computer use), so that the router sends it there
/// unless its entry names a `wire_api`.
pub fn served_by_responses(model: &str) -> bool {
    let id = model.rsplit('/').next().unwrap_or(model);
    let pro = ["o1-pro", "o3-pro", "gpt-5"].iter().any(|family| id.starts_with(family)) && id.contains("-pro");
    pro || id.starts_with("codex-")
        || id.contains("-codex")
        || id.contains("deep-research")
        || id.starts_with("computer-use")
}

/// Why a model cannot be served at all: the computer-use model acts only through OpenAI's
/// computer tool, which drives a screen superpi does not have.
fn unsupported(model: &str) -> Option<String> {
    model.rsplit('/').next().unwrap_or(model).starts_with("computer-use").then(|| {
        "it acts only through OpenAI's computer-use tool (a screen and mouse), which superpi does not \
         provide; use gpt-5, gpt-5-codex or o3"
            .to_string()
    })
}

/// Whether requests to `base_url` may carry `prompt_cache_key`: OpenAI's own endpoint only,
/// since compatible servers (Groq, NVIDIA, Azure) refuse a field they do not know.
pub(crate) fn takes_prompt_cache_key(base_url: &str) -> bool {
    let host = base_url.split("://").nth(1).unwrap_or(base_url).split(['/', ':']).next().unwrap_or("");
    host == "api.openai.com" || host.ends_with(".api.openai.com")
}

/// A `prompt_cache_key` for a conversation: OpenAI routes requests with the same key to the
/// same cache. The requests carry no conversation id, so the key is made from what stays
/// the same from one request of a conversation to the next: the system prompt and the first
/// message (a fork and the compaction of the same history share it, and their prefix).
pub(crate) fn prompt_cache_key(request: &ModelRequest) -> String {
    let mut seed = request.system.clone().unwrap_or_default();
    if let Some(first) = request.messages.first() {
        seed.push('\u{0}');
        seed.push_str(first.role.as_str());
        seed.push_str(&serde_json::to_string(&first.content).unwrap_or_default());
    }
    format!("superpi-{:016x}", crate::wire::short_hash(&seed))
}

/// Whether the model takes reasoning settings (the o-series, gpt-5 and the codex family).
pub(crate) fn is_reasoning_model(model: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5", "codex-"].iter().any(|prefix| model.starts_with(prefix))
}

/// The thinking efforts of a reasoning model: gpt-5 also reasons `minimal` (our `off`), its
/// codex models do not, gpt-5-pro reasons `high` only and deep research `medium`; the o-series
/// take `low`, `medium` and `high`; other models none.
pub(crate) fn efforts(model: &str, reasoning: bool) -> &'static [Effort] {
    let id = model.rsplit('/').next().unwrap_or(model);
    match reasoning {
        false => &[],
        true if id.contains("deep-research") => &[Effort::Medium],
        true if id.starts_with("gpt-5") && id.contains("-pro") => &[Effort::High],
        true if id.starts_with("gpt-5") && !id.contains("codex") => &Effort::ALL,
        true => &[Effort::Low, Effort::Medium, Effort::High],
    }
}

/// `reasoning_effort` (the Responses API's `reasoning.effort`) for a level.
pub(crate) fn reasoning_effort(effort: Effort) -> &'static str {
    match effort {
        Effort::Off => "minimal",
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
    }
}

#[derive(Debug, Default)]
struct PendingCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
}

/// Reads Chat Completions chunks. Tool calls are keyed by their wire index: the first streams
/// live; one that starts while the live call's arguments are still incomplete JSON (interleaved
/// indexes) is held and emitted whole when the answer finishes, so blocks never interleave.
#[derive(Debug, Default)]
pub struct Parser {
    finish: Option<StopReason>,
    live: Option<u64>,
    closed_calls: Vec<u64>,
    pending: BTreeMap<u64, PendingCall>,
    calls: u32,
    refused: bool,
    response_id: Option<String>,
}

fn finish_reason(reason: &str) -> StopReason {
    match reason {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

impl Parser {
    /// An id for a call the server sent without one: from the response id when there is one.
    fn synthetic_id(&self) -> String {
        match &self.response_id {
            Some(response) => format!("call_{response}_{}", self.calls),
            None => fresh_call_id("call"),
        }
    }

    /// Leaves the live tool call before other content is streamed.
    fn leave_tool(&mut self) {
        if let Some(live) = self.live.take() {
            self.closed_calls.push(live);
        }
    }

    fn tool_delta(&mut self, call: CallDelta<'_>, position: usize, out: &mut StreamBuilder) {
        let wire = call.index.unwrap_or(position as u64);
        let id = call.id.filter(|s| !s.is_empty()).map(Cow::into_owned);
        let name = call.name.filter(|s| !s.is_empty()).map(Cow::into_owned);
        let arguments = call.arguments.as_deref().unwrap_or("");
        if self.live == Some(wire) && out.open_kind() == Some(BlockKind::ToolCall) {
            out.tool_delta(arguments, id, name);
            return;
        }
        if self.closed_calls.contains(&wire) {
            tracing::warn!(index = wire, "openai: a delta for a tool call already closed is dropped");
            return;
        }
        if let Some(pending) = self.pending.get_mut(&wire) {
            pending.id = pending.id.take().or(id);
            pending.name = pending.name.take().or(name);
            pending.arguments.push_str(arguments);
            return;
        }
        let live_complete = match self.live {
            None => true,
            Some(_) => out.open_tool_arguments().is_none_or(|args| serde_json::from_str::<Value>(args).is_ok()),
        };
        if self.pending.is_empty() && live_complete {
            self.leave_tool();
            self.live = Some(wire);
            self.calls += 1;
            let id = id.or_else(|| Some(self.synthetic_id()));
            out.tool_start(id, name);
            out.tool_delta(arguments, None, None);
        } else {
            self.pending.insert(wire, PendingCall { id, name, arguments: arguments.to_string() });
        }
    }

    /// Closes the live call and emits the held ones, in wire order.
    fn flush_calls(&mut self, out: &mut StreamBuilder) {
        if self.live.is_some() && out.open_kind() == Some(BlockKind::ToolCall) {
            out.close();
        }
        self.leave_tool();
        for (wire, pending) in std::mem::take(&mut self.pending) {
            self.calls += 1;
            let id = pending.id.unwrap_or_else(|| self.synthetic_id());
            out.tool_start(Some(id), pending.name);
            out.tool_delta(&pending.arguments, None, None);
            out.close();
            self.closed_calls.push(wire);
        }
    }

    fn complete(&mut self, out: &mut StreamBuilder) {
        self.flush_calls(out);
        let mut stop = self.finish.unwrap_or(StopReason::EndTurn);
        if self.calls > 0 && stop == StopReason::EndTurn {
            stop = StopReason::ToolUse;
        }
        if self.refused && stop == StopReason::EndTurn {
            stop = StopReason::Refusal;
        }
        out.done(stop);
    }
}

impl WireParser for Parser {
    fn event(&mut self, event: &SseEvent, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.complete(out);
            return Ok(());
        }
        let chunk = read_chunk(data)?;
        if let Some(id) = chunk.id.as_deref().filter(|id| !id.is_empty()) {
            out.set_response_id(id.to_string());
            if self.response_id.is_none() {
                self.response_id = Some(id.to_string());
            }
        }
        let totals = out.usage_mut();
        totals.input_tokens = chunk.prompt_tokens.unwrap_or(totals.input_tokens);
        totals.output_tokens = chunk.completion_tokens.unwrap_or(totals.output_tokens);
        totals.cached_input_tokens = chunk.cached_tokens.unwrap_or(totals.cached_input_tokens);
        let details = out.details_mut();
        details.reasoning_tokens = chunk.reasoning_tokens.unwrap_or(details.reasoning_tokens);
        for reasoning in chunk.reasoning.iter().flatten().filter(|s| !s.is_empty()) {
            self.leave_tool();
            out.thinking_delta(reasoning);
        }
        if let Some(text) = chunk.content.as_deref().filter(|s| !s.is_empty()) {
            self.leave_tool();
            out.text_delta(text);
        }
        if let Some(text) = chunk.refusal.as_deref().filter(|s| !s.is_empty()) {
            self.leave_tool();
            self.refused = true;
            out.text_delta(text);
        }
        for (position, call) in chunk.tool_calls.into_iter().enumerate() {
            self.tool_delta(call, position, out);
        }
        if let Some(reason) = chunk.finish_reason.as_deref() {
            self.finish = Some(finish_reason(reason));
        }
        Ok(())
    }

    fn end(&mut self, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        if self.finish.is_some() {
            // Some compatible servers end without `[DONE]` once the answer has finished.
            self.complete(out);
            return Ok(());
        }
        Err(ProviderError::Transport {
            provider: PROVIDER.to_string(),
            message: "the stream ended before the answer finished".to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_ids_are_hashed_the_same_for_call_and_result() {
        let long = "x".repeat(60);
        assert_eq!(wire_id("call_abc"), "call_abc");
        assert_eq!(wire_id(&long), wire_id(&long));
        assert!(wire_id(&long).len() <= MAX_ID_LEN);
        assert_ne!(wire_id(&long), wire_id(&"y".repeat(60)));
    }
}
