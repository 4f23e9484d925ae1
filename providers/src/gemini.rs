//! Gemini `streamGenerateContent` over SSE: the request body and the reading of its chunks.
//!
//! Gemini gives function calls no ids (or ids of its own), so calls without one get
//! `NAME_RESPONSEID_N` (unique per response, deterministic for a recorded stream).
//! A part's `thoughtSignature` travels as a thinking block with an empty text and the
//! signature (marked [`SIGNATURE_PREFIX`] so that no other API is sent it), placed right before
//! the part it belongs to, and is put back on that part when the conversation is sent again.

use serde_json::{Map, Value, json};
use superpi_proto::{ContentBlock, Effort, Role};

use crate::assemble::StreamBuilder;
use std::borrow::Cow;

use crate::config::{GEMINI_API_KEY, GEMINI_BASE_URL, ProviderKind};
use crate::history;
use crate::route::Route;
use crate::sse::SseEvent;
use crate::stream::{ModelRequest, ProviderError, StopReason};
use crate::wire::{arguments_object, fresh_call_id, json_chunk, str_field, stream_error};
use crate::wire_api::{
    WireApi, WireParser, WireRequest, no_reasoning_settings, parser_of, refusals_stand, serves_every_model,
};

/// The endpoint when the settings name none.
pub const DEFAULT_GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

const PROVIDER: &str = "gemini";
/// Marks a thinking block's signature as Gemini's.
pub const SIGNATURE_PREFIX: &str = "gemini:";

/// A function name as Gemini takes it (`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`).
fn function_name(name: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-');
    let mut out: String = name.chars().map(|c| if valid(c) { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out.chars().take(64).collect()
}

fn parts_for(content: &[ContentBlock]) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut signature: Option<&str> = None;
    for block in content {
        let mut part = match block {
            ContentBlock::Thinking { thinking, signature: sig, .. } => {
                if thinking.is_empty() {
                    signature = sig.as_deref().and_then(|sig| sig.strip_prefix(SIGNATURE_PREFIX));
                }
                continue;
            }
            ContentBlock::Text { text } if !text.is_empty() => json!({"text": text}),
            ContentBlock::Image { media_type, data: Some(data), .. } => {
                json!({"inline_data": {"mime_type": media_type, "data": data}})
            }
            ContentBlock::ToolCall { name, arguments, .. } => {
                json!({"functionCall": {"name": function_name(name), "args": arguments_object(arguments)}})
            }
            ContentBlock::ToolResult { name, output, is_error, .. } => {
                let key = if *is_error { "error" } else { "output" };
                json!({"functionResponse": {"name": function_name(name), "response": {key: output}}})
            }
            _ => continue,
        };
        if let Some(sig) = signature.take() {
            part["thoughtSignature"] = json!(sig);
        }
        parts.push(part);
    }
    parts
}

/// Gemini 3 refuses function calls of the turn in progress without their thought signature
/// (the first call part of each model step); a history from another provider, or from before
/// signatures were kept, has none. Google documents this value for such calls.
pub const DUMMY_SIGNATURE: &str = "skip_thought_signature_validator";

fn sign_calls_in_progress(contents: &mut [Value]) {
    let is_user_text = |c: &Value| {
        c["role"] == "user"
            && c["parts"].as_array().is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_none()))
    };
    let start = contents.iter().rposition(is_user_text).map_or(0, |i| i + 1);
    for content in &mut contents[start..] {
        let Some(parts) = content["parts"].as_array_mut() else { continue };
        if let Some(first_call) = parts.iter_mut().find(|p| p.get("functionCall").is_some())
            && first_call.get("thoughtSignature").is_none()
        {
            first_call["thoughtSignature"] = json!(DUMMY_SIGNATURE);
        }
    }
}

/// A thinking budget within the model's range: 2.5 Pro thinks always (128 to 32768), 2.5
/// Flash takes 0 to 24576, 2.5 Flash-Lite 0 or 512 to 24576.
fn thinking_budget(model: &str, budget: u32) -> u32 {
    if model.starts_with("gemini-2.5-pro") {
        budget.clamp(128, 32_768)
    } else if model.starts_with("gemini-2.5-flash-lite") {
        if budget == 0 { 0 } else { budget.clamp(512, 24_576) }
    } else if model.starts_with("gemini-2.5-flash") {
        budget.min(24_576)
    } else {
        budget
    }
}

/// The thinking efforts of a model: Gemini 3 Pro takes the levels `low` and `high`, Gemini 3
/// Flash four levels (`minimal` is our `off`); 2.5 Pro a budget but never none, 2.5 Flash and
/// Flash-Lite a budget or none; older models do not think.
fn efforts(model: &str, _reasoning: bool) -> &'static [Effort] {
    let id = model.rsplit('/').next().unwrap_or(model);
    if id.starts_with("gemini-3") {
        if id.contains("-pro") { &[Effort::Low, Effort::High] } else { &Effort::ALL }
    } else if id.starts_with("gemini-2.5-pro") {
        &[Effort::Low, Effort::Medium, Effort::High]
    } else if id.starts_with("gemini-2.5") {
        &Effort::ALL
    } else {
        &[]
    }
}

/// The `thinkingConfig` a request to `model` carries for `effort` (the nearest level the model
/// takes); none for a model without a thinking setting. Also what superpi gives Gemini CLI
/// (superpi-backends) for a conversation's effort.
pub fn thinking_config_for(model: &str, effort: Effort) -> Option<Value> {
    effort.nearest_in(efforts(model, false)).map(|level| thinking_config(model, level))
}

/// `thinkingConfig` for a level the model takes: Gemini 3's `thinkingLevel` (its models refuse
/// a level and a budget together), 2.5's `thinkingBudget` within the model's range.
fn thinking_config(model: &str, effort: Effort) -> Value {
    if model.rsplit('/').next().unwrap_or(model).starts_with("gemini-3") {
        let level = match effort {
            Effort::Off => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        };
        return json!({"includeThoughts": true, "thinkingLevel": level});
    }
    let budget = match effort {
        Effort::Off => 0,
        Effort::Low => 1024,
        Effort::Medium => 8192,
        Effort::High => 32_768,
    };
    let budget = thinking_budget(model, budget);
    json!({"includeThoughts": budget > 0, "thinkingBudget": budget})
}

/// The request for `request`, sent to `route`. The history is paired first
/// ([`crate::history::paired`]): a `functionCall` turn is answered by as many
/// `functionResponse` parts in the next turn; turns of one role are merged.
pub fn build_request(route: &Route, request: &ModelRequest) -> WireRequest {
    let paired = history::paired(&request.messages);
    let turns = history::alternating(
        paired.messages.iter().map(|m| (m.role == Role::Assistant, parts_for(&m.content))),
        json!({"text": history::CONTINUE}),
    );
    let mut contents: Vec<Value> = turns
        .into_iter()
        .map(|(model, parts)| json!({"role": if model { "model" } else { "user" }, "parts": parts}))
        .collect();
    if route.model.starts_with("gemini-3") {
        sign_calls_in_progress(&mut contents);
    }
    // Newer models refuse a request whose last turn is the model's (no prefill).
    if contents.last().is_some_and(|c| c["role"] == "model") {
        contents.push(json!({"role": "user", "parts": [{"text": history::CONTINUE}]}));
    }
    let system = paired.system_prompt(request.system.as_deref());
    let mut body = json!({"contents": contents});
    if let Some(system) = system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let mut declaration = json!({"name": function_name(&tool.name), "description": tool.description});
                if let Some(parameters) = crate::gemini_schema::parameters(&tool.input_schema) {
                    declaration["parameters"] = parameters;
                }
                declaration
            })
            .collect();
        body["tools"] = json!([{"functionDeclarations": declarations}]);
    }
    let mut generation = Map::new();
    if let Some(max) = request.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max.max(1)));
    }
    if let Some(effort) = request.effort.and_then(|e| e.nearest_in(efforts(&route.model, route.reasoning))) {
        generation.insert("thinkingConfig".into(), thinking_config(&route.model, effort));
    } else if let Some(budget) = route.thinking_budget {
        let budget = thinking_budget(&route.model, budget);
        generation.insert("thinkingConfig".into(), json!({"includeThoughts": budget > 0, "thinkingBudget": budget}));
    } else if route.model.contains("2.5") || route.model.starts_with("gemini-3") {
        generation.insert("thinkingConfig".into(), json!({"includeThoughts": true}));
    }
    if !generation.is_empty() {
        body["generationConfig"] = Value::Object(generation);
    }
    let base = route.base_url.trim_end_matches('/');
    let versioned =
        if base.ends_with("/v1beta") || base.ends_with("/v1") { base.to_string() } else { format!("{base}/v1beta") };
    WireRequest {
        url: format!("{versioned}/models/{}:streamGenerateContent?alt=sse", route.model),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
        ],
        body: body.to_string().into_bytes(),
    }
}

/// Gemini, its row in the [`crate::vendor::WIRE_APIS`] table.
pub static GEMINI: WireApi = WireApi {
    kind: ProviderKind::Gemini,
    key_var: GEMINI_API_KEY,
    base_url_var: GEMINI_BASE_URL,
    default_base_url: DEFAULT_GEMINI_BASE_URL,
    name_prefixes: &[("google/", true), ("gemini/", true), ("gemini-", false)],
    builtin_models: &["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite"],
    key_header: ("x-goog-api-key", ""),
    keyless_with_base_url: false,
    unsupported: serves_every_model,
    is_reasoning_model: no_reasoning_settings,
    efforts,
    tool_name: declared_name,
    build_request,
    structured_output: false,
    tool_search: crate::tool_search::none,
    adjust: refusals_stand,
    parser: parser_of::<Parser>,
};

/// A tool name as a function declaration takes it, borrowed when it already does.
fn declared_name(name: &str) -> Cow<'_, str> {
    match function_name(name) {
        same if same == name => Cow::Borrowed(name),
        cleaned => Cow::Owned(cleaned),
    }
}

/// Reads `GenerateContentResponse` chunks.
#[derive(Debug, Default)]
pub struct Parser {
    finish: Option<StopReason>,
    calls: u32,
    response_id: Option<String>,
}

fn finish_reason(reason: &str) -> StopReason {
    match reason {
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

impl Parser {
    fn part(&mut self, part: &Value, out: &mut StreamBuilder) {
        let signature = str_field(part, "thoughtSignature").map(|sig| format!("{SIGNATURE_PREFIX}{sig}"));
        let signature = signature.as_deref();
        let thought = part.get("thought").and_then(Value::as_bool).unwrap_or(false);
        if let Some(call) = part.get("functionCall") {
            if let Some(signature) = signature {
                out.thinking_start(false);
                out.thinking_signature(signature);
                out.close();
            }
            self.calls += 1;
            let name = str_field(call, "name").unwrap_or("").to_string();
            let id =
                str_field(call, "id").filter(|id| !id.is_empty()).map(str::to_string).unwrap_or_else(|| {
                    match &self.response_id {
                        Some(response) => format!("{name}_{response}_{}", self.calls),
                        None => fresh_call_id(&format!("{name}_")),
                    }
                });
            let args = call.get("args").map(arguments_object).unwrap_or_else(|| json!({}));
            out.tool_start(Some(id), Some(name));
            out.tool_delta(&args.to_string(), None, None);
            out.close();
            return;
        }
        let Some(text) = str_field(part, "text") else {
            if let Some(signature) = signature {
                out.thinking_start(false);
                out.thinking_signature(signature);
                out.close();
            }
            return;
        };
        if thought {
            out.thinking_delta(text);
            if let Some(signature) = signature {
                out.thinking_signature(signature);
            }
        } else {
            if let Some(signature) = signature {
                out.thinking_start(false);
                out.thinking_signature(signature);
                out.close();
            }
            out.text_delta(text);
        }
    }
}

impl WireParser for Parser {
    fn event(&mut self, event: &SseEvent, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let chunk = json_chunk(PROVIDER, data)?;
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(PROVIDER, error));
        }
        if let Some(id) = str_field(&chunk, "responseId").filter(|id| !id.is_empty()) {
            out.set_response_id(id.to_string());
            self.response_id.get_or_insert_with(|| id.to_string());
        }
        if let Some(usage) = chunk.get("usageMetadata") {
            let read = |key| usage.get(key).and_then(Value::as_u64);
            let totals = out.usage_mut();
            totals.input_tokens = read("promptTokenCount").unwrap_or(totals.input_tokens);
            // Implicit caching: a part of the prompt's count.
            totals.cached_input_tokens = read("cachedContentTokenCount").unwrap_or(totals.cached_input_tokens);
            if let Some(output) = read("candidatesTokenCount") {
                totals.output_tokens = output + read("thoughtsTokenCount").unwrap_or(0);
                out.details_mut().reasoning_tokens = read("thoughtsTokenCount").unwrap_or(0);
            }
        }
        if let Some(reason) = chunk.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
            return Err(ProviderError::Http {
                provider: PROVIDER.into(),
                status: 400,
                message: format!("the prompt was blocked: {reason}"),
            });
        }
        let Some(candidate) = chunk.get("candidates").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(());
        };
        if let Some(parts) = candidate.pointer("/content/parts").and_then(Value::as_array) {
            for part in parts {
                self.part(part, out);
            }
        }
        if let Some(reason) = str_field(candidate, "finishReason") {
            self.finish = Some(finish_reason(reason));
        }
        Ok(())
    }

    fn end(&mut self, out: &mut StreamBuilder) -> Result<(), ProviderError> {
        let Some(mut stop) = self.finish else {
            return Err(ProviderError::Transport {
                provider: PROVIDER.to_string(),
                message: "the stream ended before a finishReason".to_string(),
            });
        };
        if self.calls > 0 && stop == StopReason::EndTurn {
            stop = StopReason::ToolUse;
        }
        out.done(stop);
        Ok(())
    }
}
