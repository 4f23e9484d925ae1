//! The Responses renderer: the chat renderer's chunks of one turn ([`crate::render`]: answer text,
//! the reasoning channel, the finish, usage, a failure) into the Responses API's streaming events
//! and its `response` object. A synchronous state machine (`start`, `chunks`, `end`), no I/O.
//!
//! Output items follow each other, one open at a time, as the API streams them: a stretch of
//! answer text is a `message` item (one `output_text` part), a stretch of the reasoning channel
//! (thinking, and the agent's tool activity as the chat route shows it: `[tool] ls {...}`,
//! `[tool] ls done`, notices, `[error] ...`) a `reasoning` item with one `summary_text` part.
//! The agent's tool calls ran in the kernel: no `function_call` item is ever sent, so a client
//! has nothing to run and nothing to answer. Every event carries `type` and `sequence_number`
//! (0, 1, ...). The end is `response.completed`, `response.incomplete` (the model hit its output
//! limit) or `response.failed` (the turn failed; its error's `code` is `server_error`, the one
//! value of the API's list that fits).

use serde_json::{Map, Value, json};

use crate::render::Failure;
use crate::wire::{Chunk, Usage};

/// What every event and the `response` object of one answer share.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseMeta {
    /// `resp_<conversation>_<turn>`.
    pub id: String,
    pub created_at: i64,
    pub model: String,
    pub instructions: Option<String>,
    pub previous_response_id: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// The request's `text.format`, echoed (`{"type": "text"}` when it had none).
    pub text_format: Option<Value>,
}

/// One streaming event: its `type` (the SSE `event:` name) and its whole JSON (`type` and
/// `sequence_number` included).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    pub kind: &'static str,
    pub data: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Reasoning,
}

/// The output item being streamed.
#[derive(Debug)]
struct Open {
    kind: Kind,
    id: String,
    index: usize,
    text: String,
}

/// How the answer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Completed,
    /// The model hit its output limit (`finish_reason: length`).
    Incomplete,
    Failed(Failure),
}

#[derive(Debug)]
pub struct ResponsesRenderer {
    meta: ResponseMeta,
    sequence: u64,
    /// The items closed so far, as `response.output_item.done` sent them.
    output: Vec<Value>,
    open: Option<Open>,
    finish: Option<&'static str>,
    usage: Option<Usage>,
    ending: Option<Ending>,
}

impl ResponsesRenderer {
    pub fn new(meta: ResponseMeta) -> Self {
        ResponsesRenderer { meta, sequence: 0, output: Vec::new(), open: None, finish: None, usage: None, ending: None }
    }

    /// Set once [`ResponsesRenderer::end`] ran.
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    fn event(&mut self, kind: &'static str, mut data: Value) -> StreamEvent {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        StreamEvent { kind, data }
    }

    /// The `response` object as it stands (`status` one of the API's).
    pub fn response(&self, status: &str) -> Value {
        let mut output = self.output.clone();
        if let Some(open) = &self.open {
            output.push(item(open, "in_progress"));
        }
        let error = match &self.ending {
            Some(Ending::Failed(failure)) => json!({"code": "server_error", "message": failure.message}),
            _ => Value::Null,
        };
        let incomplete = match &self.ending {
            Some(Ending::Incomplete) => json!({"reason": "max_output_tokens"}),
            _ => Value::Null,
        };
        let usage = match self.usage {
            Some(u) => json!({
                "input_tokens": u.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": u.completion_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": u.total_tokens,
            }),
            None => Value::Null,
        };
        let m = &self.meta;
        json!({
            "id": m.id,
            "object": "response",
            "created_at": m.created_at,
            "completed_at": if status == "completed" { json!(superpi_proto::event::now_ms() / 1000) } else { Value::Null },
            "status": status,
            "background": false,
            "error": error,
            "incomplete_details": incomplete,
            "instructions": m.instructions,
            "max_output_tokens": null,
            "metadata": m.metadata.clone().unwrap_or_default(),
            "model": m.model,
            "output": output,
            "parallel_tool_calls": false,
            "previous_response_id": m.previous_response_id,
            "reasoning": null,
            "store": true,
            "temperature": null,
            "text": {"format": m.text_format.clone().unwrap_or_else(|| json!({"type": "text"}))},
            "tool_choice": "auto",
            "tools": [],
            "top_p": null,
            "truncation": "disabled",
            "usage": usage,
        })
    }

    /// `response.created` and `response.in_progress`.
    pub fn start(&mut self) -> Vec<StreamEvent> {
        let response = self.response("in_progress");
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    /// The events for some of the chat renderer's chunks.
    pub fn chunks(&mut self, chunks: &[Chunk]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for chunk in chunks {
            for choice in &chunk.choices {
                if let Some(text) = choice.delta.reasoning_content.as_deref() {
                    self.text(Kind::Reasoning, text, &mut out);
                }
                if let Some(text) = choice.delta.content.as_deref() {
                    self.text(Kind::Message, text, &mut out);
                }
                self.finish = choice.finish_reason.or(self.finish);
            }
            if let Some(usage) = chunk.usage {
                self.usage = Some(usage);
            }
        }
        out
    }

    /// Text for an item of `kind`: appended to the open item of that kind, else the open item is
    /// closed and a new one starts. A new reasoning item does not start with line breaks (the
    /// chat renderer's, which end a line of that channel after the answer text began), nor a later
    /// message with the chat renderer's paragraph break (here that text is an item of its own);
    /// what is left of such text may be nothing, which opens no item.
    fn text(&mut self, kind: Kind, text: &str, out: &mut Vec<StreamEvent>) {
        let continuing = self.open.as_ref().is_some_and(|o| o.kind == kind);
        let text = match kind {
            _ if continuing => text,
            Kind::Reasoning => text.trim_start_matches('\n'),
            Kind::Message if self.output.iter().any(|i| i["type"] == "message") => {
                text.strip_prefix("\n\n").unwrap_or(text)
            }
            Kind::Message => text,
        };
        if text.is_empty() {
            return;
        }
        if !continuing {
            self.close("completed", out);
            self.open_item(kind, out);
        }
        let Some(open) = self.open.as_mut() else { return };
        open.text.push_str(text);
        let (id, index) = (open.id.clone(), open.index);
        let event = match kind {
            Kind::Message => self.event(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []}),
            ),
            Kind::Reasoning => self.event(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": text}),
            ),
        };
        out.push(event);
    }

    fn open_item(&mut self, kind: Kind, out: &mut Vec<StreamEvent>) {
        let index = self.output.len();
        let prefix = match kind {
            Kind::Message => "msg",
            Kind::Reasoning => "rs",
        };
        // Unique within the response, and across responses: the response id is.
        let id = format!("{prefix}_{}_{index}", self.meta.id.trim_start_matches(super::request::RESPONSE_PREFIX));
        let open = Open { kind, id: id.clone(), index, text: String::new() };
        let added = self
            .event("response.output_item.added", json!({"output_index": index, "item": item(&open, "in_progress")}));
        out.push(added);
        let part = match kind {
            Kind::Message => self.event(
                "response.content_part.added",
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": output_text("")}),
            ),
            Kind::Reasoning => self.event(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": 0, "part": summary_text("")}),
            ),
        };
        out.push(part);
        self.open = Some(open);
    }

    /// Closes the open item, if any, with `status`.
    fn close(&mut self, status: &str, out: &mut Vec<StreamEvent>) {
        let Some(open) = self.open.take() else { return };
        let (id, index, text) = (open.id.as_str(), open.index, open.text.as_str());
        match open.kind {
            Kind::Message => {
                let done =
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []});
                out.push(self.event("response.output_text.done", done));
                let part = json!({"item_id": id, "output_index": index, "content_index": 0, "part": output_text(text)});
                out.push(self.event("response.content_part.done", part));
            }
            Kind::Reasoning => {
                let done = json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text});
                out.push(self.event("response.reasoning_summary_text.done", done));
                let part =
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "part": summary_text(text)});
                out.push(self.event("response.reasoning_summary_part.done", part));
            }
        }
        let done = item(&open, status);
        out.push(self.event("response.output_item.done", json!({"output_index": index, "item": done})));
        self.output.push(done);
    }

    /// The answer is over (`failure`: the turn failed): the open item closes and the last event
    /// carries the whole response.
    pub fn end(&mut self, failure: Option<Failure>) -> Vec<StreamEvent> {
        if self.ending.is_some() {
            return Vec::new();
        }
        let ending = match failure {
            Some(failure) => Ending::Failed(failure),
            None if self.finish == Some("length") => Ending::Incomplete,
            None => Ending::Completed,
        };
        let mut out = Vec::new();
        let item_status = if ending == Ending::Completed { "completed" } else { "incomplete" };
        self.close(item_status, &mut out);
        let (kind, status) = match ending {
            Ending::Completed => ("response.completed", "completed"),
            Ending::Incomplete => ("response.incomplete", "incomplete"),
            Ending::Failed(_) => ("response.failed", "failed"),
        };
        self.ending = Some(ending);
        let response = self.response(status);
        out.push(self.event(kind, json!({"response": response})));
        out
    }

    /// The whole response once [`ResponsesRenderer::end`] ran (what a request without `stream`
    /// gets).
    pub fn finished(&self) -> Value {
        let status = match &self.ending {
            Some(Ending::Completed) => "completed",
            Some(Ending::Incomplete) => "incomplete",
            Some(Ending::Failed(_)) => "failed",
            None => "in_progress",
        };
        self.response(status)
    }
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn summary_text(text: &str) -> Value {
    json!({"type": "summary_text", "text": text})
}

/// An output item as it stands.
fn item(open: &Open, status: &str) -> Value {
    match open.kind {
        Kind::Message => {
            let content = if status == "in_progress" && open.text.is_empty() {
                json!([])
            } else {
                json!([output_text(&open.text)])
            };
            json!({"type": "message", "id": open.id, "status": status, "role": "assistant", "content": content})
        }
        Kind::Reasoning => {
            let summary = if status == "in_progress" && open.text.is_empty() {
                json!([])
            } else {
                json!([summary_text(&open.text)])
            };
            json!({"type": "reasoning", "id": open.id, "status": status, "summary": summary})
        }
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
