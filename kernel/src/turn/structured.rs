//! Structured output (`session.submit` `output_schema`, seed 003's StructuredOutput): a turn's
//! final answer must be the JSON text of a value its JSON Schema accepts.
//!
//! A provider with a structured-output mode (OpenAI's `response_format`, the Responses API's
//! `text.format`, the mock) gets the schema with every request of the turn and answers in
//! text; any other is offered a `respond` tool whose parameters are the schema, and its call's
//! arguments are the answer. Either way the kernel checks the answer here: a refused one is
//! told to the model once with the errors (a user message after a text answer, the call's error
//! result after a `respond` call), and a second refusal fails the turn with them. The turn's
//! `result` is the accepted value's JSON text.

use std::sync::Arc;

use serde_json::Value;
use superpi_proto::method::OUTPUT_SCHEMA_FAILED;
use superpi_proto::tool::ToolCallResult;
use superpi_proto::{ContentBlock, EntryKind, Event, Message, Role};
use superpi_providers::{OutputSchema, ToolSpec};

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::turn::pipeline::PlannedCall;

/// The tool a model without a structured-output mode answers through.
pub(crate) const RESPOND_TOOL: &str = "respond";

/// The name the schema goes by in a vendor's request.
const SCHEMA_NAME: &str = "final_answer";

/// A schema's text past this is refused: it goes with every request of the turn.
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// At most this many of an answer's errors are told (to the model, in the turn's error).
const MAX_ERRORS: usize = 10;

/// How many refused answers a turn survives: the first is told to the model, with its errors.
const RETRIES: u32 = 1;

/// A turn's output schema, checked and compiled.
pub(crate) struct Structured {
    schema: Value,
    validator: jsonschema::Validator,
    /// Answers refused so far.
    refused: u32,
}

/// What the turn does with a final answer.
pub(crate) enum Verdict {
    /// The answer's value as JSON text: the turn's result.
    Accepted(String),
    /// Asked again: the errors, for the model.
    Retry(String),
    /// Refused again: the turn's error.
    Failed(String),
}

impl Structured {
    /// Checks a submitted schema: an object schema that compiles, of bounded size.
    pub(crate) fn new(schema: Value) -> Result<Self, String> {
        let size = schema.to_string().len();
        if size > MAX_SCHEMA_BYTES {
            return Err(format!("output_schema: {size} bytes, more than the {MAX_SCHEMA_BYTES} taken"));
        }
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("output_schema: the schema must be an object schema (`\"type\": \"object\"`)".into());
        }
        let validator = jsonschema::validator_for(&schema).map_err(|err| format!("output_schema: {err}"))?;
        Ok(Structured { schema, validator, refused: 0 })
    }

    /// The schema for a provider's structured-output mode.
    pub(crate) fn for_provider(&self) -> OutputSchema {
        OutputSchema { name: SCHEMA_NAME.into(), schema: self.schema.clone() }
    }

    /// The `respond` tool for a provider without one.
    pub(crate) fn respond_tool(&self) -> ToolSpec {
        ToolSpec {
            name: RESPOND_TOOL.into(),
            description: "Give the final answer: call this once, last, with the answer as the arguments. \
                          Nothing else is read as the answer."
                .into(),
            input_schema: self.schema.clone(),
            deferred: false,
        }
    }

    /// Judges a final answer given as text (a provider's structured-output mode).
    pub(crate) fn judge_text(&mut self, text: &str) -> Verdict {
        match serde_json::from_str::<Value>(text.trim()) {
            Ok(value) => self.judge(&value),
            Err(err) => self.refuse(vec![format!("the answer is not JSON: {err}")]),
        }
    }

    /// Judges a text answer where a `respond` call was wanted.
    pub(crate) fn judge_missing_call(&mut self) -> Verdict {
        self.refuse(vec![format!("the answer must be given by calling the `{RESPOND_TOOL}` tool, not as text")])
    }

    /// Judges a value (a `respond` call's arguments, a parsed text answer).
    pub(crate) fn judge(&mut self, value: &Value) -> Verdict {
        let errors: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(MAX_ERRORS)
            .map(|err| match err.instance_path().as_str() {
                "" => err.to_string(),
                at => format!("at {at}: {err}"),
            })
            .collect();
        match errors.is_empty() {
            true => Verdict::Accepted(value.to_string()),
            false => self.refuse(errors),
        }
    }

    /// Another model of a cascade takes over: it gets a retry of its own.
    pub(crate) fn second_chance(&mut self) {
        self.refused = 0;
    }

    fn refuse(&mut self, errors: Vec<String>) -> Verdict {
        self.refused += 1;
        let listed = errors.join("; ");
        match self.refused > RETRIES {
            true => Verdict::Failed(format!("{OUTPUT_SCHEMA_FAILED}, after {RETRIES} retry: {listed}")),
            false => Verdict::Retry(format!(
                "Your answer does not match the required JSON Schema: {listed}. Answer again with only \
                 a JSON value that the schema accepts."
            )),
        }
    }
}

/// Tells the model why its text answer was refused: a user message in its history, shown to
/// watchers as a `notice` (the person did not write it).
pub(crate) fn tell(kernel: &Kernel, conv: &Conversation, turn_id: i64, told: &str) {
    let message = Message { role: Role::User, content: vec![ContentBlock::text(told)], usage: None, stop_reason: None };
    let event = Event::notice(conv.id, Some(turn_id), "warning", told);
    if let Err(err) = conv.publish(kernel, event, Some((EntryKind::User, &message))) {
        tracing::error!("storing a structured-output retry of turn {turn_id}: {err}");
    }
}

/// A `respond` call: judged, its result stored like any call's. The turn's answer (its
/// result, or why it fails), or `None` when the model is asked again.
pub(crate) fn respond(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    call: &PlannedCall,
    structured: &mut Structured,
) -> Option<Result<String, String>> {
    let started =
        Event::tool_started(conv.id, Some(turn_id), &call.call_id, &call.name, call.arguments.clone(), vec![]);
    conv.emit(kernel, started);
    let (result, answer) = match structured.judge(&call.arguments) {
        Verdict::Accepted(value) => {
            let recorded = ToolCallResult {
                output: "recorded".into(),
                is_error: false,
                structured: None,
                details: None,
                images: vec![],
            };
            (recorded, Some(Ok(value)))
        }
        Verdict::Retry(told) => (ToolCallResult::error(told), None),
        Verdict::Failed(why) => (ToolCallResult::error(why.clone()), Some(Err(why))),
    };
    super::complete_call(kernel, conv, turn_id, call, result);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structured {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        Structured::new(schema).unwrap()
    }

    #[test]
    fn a_valid_answer_is_accepted_as_its_json_text() {
        let mut s = schema();
        assert!(matches!(s.judge_text(" {\"n\": 3} "), Verdict::Accepted(text) if text == r#"{"n":3}"#));
    }

    #[test]
    fn a_refused_answer_is_retried_once_then_fails_with_its_errors() {
        let mut s = schema();
        let Verdict::Retry(told) = s.judge_text("not json") else { panic!("no retry") };
        assert!(told.contains("not JSON"), "{told}");
        let Verdict::Failed(why) = s.judge(&json!({"n": "three"})) else { panic!("no failure") };
        assert!(why.contains("at /n") && why.contains("integer"), "{why}");
    }

    #[test]
    fn only_object_schemas_that_compile_are_taken() {
        assert!(Structured::new(json!({"type": "array"})).is_err());
        assert!(Structured::new(json!({"type": "object", "properties": {"n": {"type": 5}}})).is_err());
        assert!(Structured::new(json!({"type": "object"})).is_ok());
    }
}
