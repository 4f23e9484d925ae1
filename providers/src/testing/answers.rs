//! Scripted answers for the fakes, written in each vendor's documented stream format: OpenAI
//! `chat.completion.chunk`s ending in `[DONE]`, Anthropic's `message_start` ...
//! `message_stop` events, Responses API `response.created` ... `response.completed` events
//! (each item announced by `response.output_item.added` before its deltas), Gemini `GenerateContentResponse` chunks (SSE with `alt=sse`, one JSON
//! object for `generateContent`).

use serde_json::{Value, json};

use super::Reply;
use super::rules::Vendor;
use super::rules::tool_search::{self, Catalog};

/// What a fake knows of the request it answers, for the usage it reports.
#[derive(Debug, Clone, Default)]
pub(crate) struct Served {
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, the part read from the cache (a prefix seen before under the same
    /// `prompt_cache_key`, or at an Anthropic breakpoint) and the part written to it.
    pub cached_tokens: u64,
    pub cache_written_tokens: u64,
    /// A reasoning summary to answer with first (the Responses API), and whether the request
    /// asked for the item's encrypted content.
    pub reasoning: Option<(String, bool)>,
    /// The request's deferred tools and search tool, for the vendor's built-in tool search.
    pub catalog: Option<Catalog>,
    /// What the answer searches them for first ([`Answer::ToolSearch`]).
    pub search: Option<String>,
    /// The answer pauses after its search's call, before the search runs ([`Answer::Paused`]).
    pub paused: bool,
    /// A paused search the request sends back (its id and query): the answer goes on with its
    /// result first, as the vendor runs it when a paused turn is continued.
    pub pending: Option<(String, String)>,
}

/// What a fake says to a valid request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Text, streamed a word per delta.
    Text(String),
    /// Optional text, then tool calls (name, arguments), ending with the tool-use stop reason.
    ToolCalls { text: String, calls: Vec<(String, Value)> },
    /// Sent as is: a recorded stream, an error status, a cut or held stream.
    Reply(Reply),
    /// Text deltas, then the stream stays open without its end until the client goes away:
    /// a model still answering (for cancelling a turn mid-stream).
    Held(String),
    /// The vendor's built-in tool search for `query` over the request's deferred tools (its
    /// blocks or items, run by the vendor), then tool calls: what a model does with tool search
    /// on (Anthropic and the Responses API; other vendors answer the calls alone).
    ToolSearch { query: String, calls: Vec<(String, Value)> },
    /// Anthropic's built-in tool search for `query`, paused before it runs: the search's call,
    /// then the `pause_turn` stop reason. The request that continues it gets its result first
    /// (other vendors never pause: they answer the search alone).
    Paused { query: String },
}

impl Answer {
    pub fn text(text: impl Into<String>) -> Self {
        Answer::Text(text.into())
    }

    /// One tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Answer::ToolCalls { text: String::new(), calls: vec![(name.into(), arguments)] }
    }

    /// Several tool calls in one answer.
    pub fn tool_calls(calls: impl IntoIterator<Item = (String, Value)>) -> Self {
        Answer::ToolCalls { text: String::new(), calls: calls.into_iter().collect() }
    }

    /// A built-in tool search for `query`, then a call of `name`.
    pub fn tool_search(query: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Answer::ToolSearch { query: query.into(), calls: vec![(name.into(), arguments)] }
    }

    /// The recorded stream `name` (see [`super::recorded`]), in pieces of `piece` bytes.
    pub fn recorded(name: &str, piece: usize) -> std::io::Result<Self> {
        Ok(Answer::Reply(Reply::stream(&super::recorded(name)?, piece)))
    }

    /// The reply for `vendor`. `serial` makes response and call ids unique per fake; `sse`
    /// is false only for Gemini's non-streaming `generateContent` (and a stream without
    /// `alt=sse`), which is answered with JSON; `served` has the usage to report.
    pub(crate) fn reply(&self, vendor: Vendor, model: &str, serial: u64, sse: bool, served: &Served) -> Reply {
        let prompt_tokens = served.prompt_tokens;
        let (text, calls) = match self {
            Answer::Reply(reply) => return reply.clone(),
            Answer::Held(text) => return held(vendor, model, serial, &split_words(text), served),
            Answer::Text(text) => (text.as_str(), &[][..]),
            Answer::ToolCalls { text, calls } => (text.as_str(), calls.as_slice()),
            Answer::ToolSearch { query, calls } => {
                let served = Served { search: Some(query.clone()), ..served.clone() };
                let calls = Answer::ToolCalls { text: String::new(), calls: calls.clone() };
                return calls.reply(vendor, model, serial, sse, &served);
            }
            Answer::Paused { query } => {
                let paused = vendor == Vendor::Anthropic;
                let served = Served { search: Some(query.clone()), paused, ..served.clone() };
                return Answer::text("").reply(vendor, model, serial, sse, &served);
            }
        };
        let words = split_words(text);
        match vendor {
            Vendor::Openai => Reply::stream(&openai(model, serial, &words, calls, served), 4096),
            Vendor::OpenaiResponses => Reply::stream(&responses(model, serial, &words, calls, served), 4096),
            Vendor::Anthropic => Reply::stream(&anthropic(model, serial, &words, calls, served), 4096),
            Vendor::Gemini if sse => Reply::stream(&gemini_sse(model, serial, &words, calls, prompt_tokens), 4096),
            Vendor::Gemini => Reply {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                chunks: vec![gemini_json(model, serial, &words, calls, prompt_tokens)],
                ..Default::default()
            },
        }
    }
}

/// A text stream cut before its first closing event, held open.
fn held(vendor: Vendor, model: &str, serial: u64, words: &[String], served: &Served) -> Reply {
    let prompt = served.prompt_tokens;
    let (body, end): (Vec<u8>, &[u8]) = match vendor {
        Vendor::Openai => (openai(model, serial, words, &[], served), b"\"finish_reason\":\"stop\""),
        Vendor::OpenaiResponses => (responses(model, serial, words, &[], served), b"event: response.output_text.done"),
        Vendor::Anthropic => (anthropic(model, serial, words, &[], served), b"event: content_block_stop"),
        Vendor::Gemini => (gemini_sse(model, serial, words, &[], prompt), b"\"finishReason\""),
    };
    let at = body.windows(end.len()).position(|w| w == end).unwrap_or(body.len());
    // A marker inside a `data:` line cuts at that line's start.
    let cut =
        if end.starts_with(b"event:") { at } else { body[..at].windows(6).rposition(|w| w == b"data: ").unwrap_or(at) };
    Reply { hold: true, ..Reply::stream(&body[..cut], 4096) }
}

/// Words with their following space kept, so that the deltas join to the text.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        current.push(c);
        if c == ' ' {
            words.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Arguments streamed in two deltas, cut at a character boundary near the middle.
fn halves(text: &str) -> (&str, &str) {
    let mut at = text.len() / 2;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    text.split_at(at)
}

fn sse(out: &mut Vec<u8>, event: Option<&str>, data: &Value) {
    if let Some(event) = event {
        out.extend_from_slice(format!("event: {event}\n").as_bytes());
    }
    out.extend_from_slice(format!("data: {data}\n\n").as_bytes());
}

fn openai(model: &str, serial: u64, words: &[String], calls: &[(String, Value)], served: &Served) -> Vec<u8> {
    let prompt = served.prompt_tokens;
    let id = format!("chatcmpl-fake{serial}");
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut out = Vec::new();
    sse(&mut out, None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null));
    for word in words {
        sse(&mut out, None, &chunk(json!({"content": word}), Value::Null));
    }
    for (index, (name, arguments)) in calls.iter().enumerate() {
        let arguments = arguments.to_string();
        let (head, tail) = halves(&arguments);
        let start = json!({"tool_calls": [{"index": index, "id": format!("call_fake{serial}_{index}"), "type": "function",
                           "function": {"name": name, "arguments": head}}]});
        sse(&mut out, None, &chunk(start, Value::Null));
        sse(
            &mut out,
            None,
            &chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}), Value::Null),
        );
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    sse(&mut out, None, &chunk(json!({}), json!(finish)));
    let usage = json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model, "choices": [],
                       "usage": {"prompt_tokens": prompt, "completion_tokens": words.len() + calls.len(), "total_tokens": prompt as usize + words.len() + calls.len(),
                                 "prompt_tokens_details": {"cached_tokens": served.cached_tokens},
                                 "completion_tokens_details": {"reasoning_tokens": 0}}});
    sse(&mut out, None, &usage);
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

fn responses(model: &str, serial: u64, words: &[String], calls: &[(String, Value)], served: &Served) -> Vec<u8> {
    let prompt = served.prompt_tokens;
    let id = format!("resp_fake{serial}");
    let mut sequence = 0u64;
    let mut out = Vec::new();
    let mut event = |out: &mut Vec<u8>, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        sse(out, Some(kind), &data);
    };
    let response = |status: &str, output: &[Value]| {
        json!({"id": id, "object": "response", "created_at": 1_700_000_000u64, "status": status, "model": model,
               "output": output})
    };
    event(&mut out, "response.created", json!({"response": response("in_progress", &[])}));
    let mut output: Vec<Value> = Vec::new();
    let mut reasoning_tokens = 0u64;
    if let Some((summary, encrypted)) = &served.reasoning {
        let item_id = format!("rs_fake{serial}");
        let item = |summary: Value, encrypted: Option<String>| json!({"type": "reasoning", "id": item_id, "summary": summary, "encrypted_content": encrypted});
        event(&mut out, "response.output_item.added", json!({"output_index": 0, "item": item(json!([]), None)}));
        let at = json!({"item_id": item_id, "output_index": 0, "summary_index": 0});
        let with = |key: &str, value: Value| {
            let mut at = at.clone();
            at[key] = value;
            at
        };
        let part = |text: &str| json!({"type": "summary_text", "text": text});
        event(&mut out, "response.reasoning_summary_part.added", with("part", part("")));
        let thought = split_words(summary);
        for word in &thought {
            event(&mut out, "response.reasoning_summary_text.delta", with("delta", json!(word)));
        }
        event(&mut out, "response.reasoning_summary_text.done", with("text", json!(summary)));
        event(&mut out, "response.reasoning_summary_part.done", with("part", part(summary)));
        let done =
            item(json!([part(summary)]), encrypted.then(|| super::rules::responses::encrypted_reasoning(&item_id)));
        event(&mut out, "response.output_item.done", json!({"output_index": 0, "item": done}));
        output.push(done);
        reasoning_tokens = 4 * thought.len() as u64;
    }
    if let (Some(query), Some(catalog)) = (&served.search, &served.catalog) {
        // Run by OpenAI's servers: each item comes whole. The call's `arguments` are the
        // fake's own (superpi keeps the item as it is).
        let call = json!({"type": "tool_search_call", "id": format!("tsc_fake{serial}"), "call_id": null,
            "execution": "server", "status": "completed", "arguments": {"query": query}});
        let found: Vec<Value> = catalog.search(query).into_iter().map(|(_, _, tool)| tool.clone()).collect();
        let loaded = json!({"type": "tool_search_output", "id": format!("tso_fake{serial}"), "call_id": null,
            "execution": "server", "status": "completed", "tools": found});
        for item in [call, loaded] {
            let index = output.len();
            event(&mut out, "response.output_item.added", json!({"output_index": index, "item": item}));
            event(&mut out, "response.output_item.done", json!({"output_index": index, "item": item}));
            output.push(item);
        }
    }
    if !words.is_empty() {
        let (index, item_id) = (output.len(), format!("msg_fake{serial}"));
        let item = |status: &str, content: Value| json!({"type": "message", "id": item_id, "role": "assistant", "status": status, "content": content});
        event(
            &mut out,
            "response.output_item.added",
            json!({"output_index": index, "item": item("in_progress", json!([]))}),
        );
        let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
        let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
        let with = |mut at: Value, key: &str, value: Value| {
            at[key] = value;
            at
        };
        event(&mut out, "response.content_part.added", with(at.clone(), "part", part("")));
        for word in words {
            event(&mut out, "response.output_text.delta", with(at.clone(), "delta", json!(word)));
        }
        let text = words.concat();
        event(&mut out, "response.output_text.done", with(at.clone(), "text", json!(text)));
        event(&mut out, "response.content_part.done", with(at, "part", part(&text)));
        let done = item("completed", json!([part(&text)]));
        event(&mut out, "response.output_item.done", json!({"output_index": index, "item": done}));
        output.push(done);
    }
    for (n, (name, arguments)) in calls.iter().enumerate() {
        let (index, item_id, call_id) =
            (output.len(), format!("fc_fake{serial}_{n}"), format!("call_fake{serial}_{n}"));
        let arguments = arguments.to_string();
        let item = |status: &str, arguments: &str| {
            json!({"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments,
                   "status": status})
        };
        event(&mut out, "response.output_item.added", json!({"output_index": index, "item": item("in_progress", "")}));
        let (head, tail) = halves(&arguments);
        for part in [head, tail] {
            let delta = json!({"item_id": item_id, "output_index": index, "delta": part});
            event(&mut out, "response.function_call_arguments.delta", delta);
        }
        let done = json!({"item_id": item_id, "output_index": index, "arguments": arguments});
        event(&mut out, "response.function_call_arguments.done", done);
        let done = item("completed", &arguments);
        event(&mut out, "response.output_item.done", json!({"output_index": index, "item": done}));
        output.push(done);
    }
    let produced = (words.len() + calls.len()) as u64 + reasoning_tokens;
    let mut completed = response("completed", &output);
    completed["usage"] = json!({"input_tokens": prompt, "input_tokens_details": {"cached_tokens": served.cached_tokens},
        "output_tokens": produced, "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": prompt + produced});
    event(&mut out, "response.completed", json!({"response": completed}));
    out
}

fn anthropic(model: &str, serial: u64, words: &[String], calls: &[(String, Value)], served: &Served) -> Vec<u8> {
    let mut out = Vec::new();
    // `input_tokens` is what neither was read from the cache nor written to it.
    let (read, written) = (served.cached_tokens, served.cache_written_tokens);
    let usage = json!({"input_tokens": served.prompt_tokens.saturating_sub(read + written), "cache_creation_input_tokens": written,
                       "cache_read_input_tokens": read, "output_tokens": 1});
    let start = json!({"type": "message_start", "message": {"id": format!("msg_fake{serial}"), "type": "message",
        "role": "assistant", "content": [], "model": model, "stop_reason": null, "stop_sequence": null,
        "usage": usage}});
    sse(&mut out, Some("message_start"), &start);
    let mut index = 0;
    let search_result = |out: &mut Vec<u8>, index: &mut u32, catalog: &Catalog, id: &str, query: &str| {
        let result = tool_search::anthropic_result(&catalog.search(query));
        let block = json!({"type": "content_block_start", "index": *index, "content_block":
            {"type": "tool_search_tool_result", "tool_use_id": id, "content": result}});
        sse(out, Some("content_block_start"), &block);
        sse(out, Some("content_block_stop"), &json!({"type": "content_block_stop", "index": *index}));
        *index += 1;
    };
    // A paused turn sent back: its search runs now.
    if let (Some((id, query)), Some(catalog)) = (&served.pending, &served.catalog) {
        search_result(&mut out, &mut index, catalog, id, query);
    }
    if let (Some(query), Some(catalog)) = (&served.search, &served.catalog) {
        let id = format!("srvtoolu_fake{serial}");
        let name = catalog.search.clone().unwrap_or_default();
        let block = json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "server_tool_use", "id": id, "name": name, "input": {}}});
        sse(&mut out, Some("content_block_start"), &block);
        let input = json!({"query": query}).to_string();
        let delta = json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": input}});
        sse(&mut out, Some("content_block_delta"), &delta);
        sse(&mut out, Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}));
        index += 1;
        if !served.paused {
            search_result(&mut out, &mut index, catalog, &id, query);
        }
    }
    if !words.is_empty() {
        let block =
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}});
        sse(&mut out, Some("content_block_start"), &block);
        for word in words {
            let delta =
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": word}});
            sse(&mut out, Some("content_block_delta"), &delta);
        }
        sse(&mut out, Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for (n, (name, arguments)) in calls.iter().enumerate() {
        let block = json!({"type": "content_block_start", "index": index, "content_block":
            {"type": "tool_use", "id": format!("toolu_fake{serial}_{n}"), "name": name, "input": {}}});
        sse(&mut out, Some("content_block_start"), &block);
        let arguments = arguments.to_string();
        let (head, tail) = halves(&arguments);
        for part in [head, tail] {
            let delta = json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}});
            sse(&mut out, Some("content_block_delta"), &delta);
        }
        sse(&mut out, Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = match (served.paused, calls.is_empty()) {
        (true, _) => "pause_turn",
        (false, true) => "end_turn",
        (false, false) => "tool_use",
    };
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                       "usage": {"output_tokens": words.len() + calls.len()}});
    sse(&mut out, Some("message_delta"), &delta);
    sse(&mut out, Some("message_stop"), &json!({"type": "message_stop"}));
    out
}

fn gemini_chunks(model: &str, serial: u64, words: &[String], calls: &[(String, Value)], prompt: u64) -> Vec<Value> {
    let response_id = format!("fake-{serial}");
    let chunk = |parts: Vec<Value>, finish: bool| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        let mut chunk = json!({"candidates": [], "modelVersion": model, "responseId": response_id});
        if finish {
            candidate["finishReason"] = json!("STOP");
            chunk["usageMetadata"] = json!({"promptTokenCount": prompt, "candidatesTokenCount": words.len() + calls.len(),
                                            "totalTokenCount": prompt as usize + words.len() + calls.len()});
        }
        chunk["candidates"] = json!([candidate]);
        chunk
    };
    // The last chunk carries the last word, the calls and the finish reason, as Gemini's do.
    let (last, leading) = match words.split_last() {
        Some((last, leading)) => (vec![json!({"text": last})], leading),
        None => (Vec::new(), words),
    };
    let mut chunks: Vec<Value> = leading.iter().map(|word| chunk(vec![json!({"text": word})], false)).collect();
    let mut parts = last;
    parts.extend(calls.iter().map(|(name, arguments)| json!({"functionCall": {"name": name, "args": arguments}})));
    chunks.push(chunk(parts, true));
    chunks
}

fn gemini_sse(model: &str, serial: u64, words: &[String], calls: &[(String, Value)], prompt: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in gemini_chunks(model, serial, words, calls, prompt) {
        out.extend_from_slice(format!("data: {chunk}\r\n\r\n").as_bytes());
    }
    out
}

/// The whole answer as one `GenerateContentResponse`.
fn gemini_json(model: &str, serial: u64, words: &[String], calls: &[(String, Value)], prompt: u64) -> Vec<u8> {
    let mut parts: Vec<Value> = Vec::new();
    if !words.is_empty() {
        parts.push(json!({"text": words.concat()}));
    }
    parts.extend(calls.iter().map(|(name, arguments)| json!({"functionCall": {"name": name, "args": arguments}})));
    json!({"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
           "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": words.len() + calls.len()},
           "modelVersion": model, "responseId": format!("fake-{serial}")})
    .to_string()
    .into_bytes()
}
