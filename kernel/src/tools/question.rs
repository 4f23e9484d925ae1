//! The question tool (`ask_question`): the model asks the person one or more questions, each
//! with options to choose from or a free answer, and each answer of a JSON Schema
//! (`superpi_proto::question`). The call publishes a `ui_request` of kind `question` and waits
//! for `ui.respond`, the question timeout (as for permission questions) or the turn's cancel;
//! the answers, checked against their schemas, are the call's result. Where nobody can answer
//! (no interactive watcher, a schedule's run, an unattended harness, settings that ask no one)
//! the call fails at once, saying so. Like the plan tool it runs in the kernel's process, is
//! `turn_only` and reads nothing: its effect is `read`.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use superpi_proto::question::{KIND, Question, QuestionOption, QuestionRequest};
use superpi_proto::tool::{Effect, ToolCallResult, ToolDef, ToolKind, ToolUi};
use superpi_sandbox::{RunFuture, ToolCall, ToolRunner};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::kernel::KernelSlot;
use crate::sync::lock;
use crate::turn::put_question::{Put, put};

/// The tool's name.
pub(crate) const NAME: &str = "ask_question";

/// At most this many questions in one call, and options in one question.
const MAX_QUESTIONS: usize = 8;
const MAX_OPTIONS: usize = 20;

/// The tool's facts.
pub(crate) fn def() -> ToolDef {
    ToolDef {
        name: NAME.into(),
        description: "Ask the person one or more questions and wait for the answers, when you need a \
                      decision or a fact only they have. Give each question an `id` (its answer's key), \
                      the `question`, and `options` to choose from (`multiple`: several may be chosen), \
                      or no options for a free answer whose JSON Schema `schema` may give (a string, \
                      number, integer or boolean; default a string). The result is the answers by id, or \
                      says the person declined. Do not ask what you can find out yourself."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "What the questions are about, in a few words"},
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_QUESTIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "The answer's key: a-z, 0-9, _"},
                            "question": {"type": "string"},
                            "options": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {"label": {"type": "string"}, "description": {"type": "string"}},
                                    "required": ["label"]
                                }
                            },
                            "multiple": {"type": "boolean"},
                            "schema": {"type": "object", "description": "The JSON Schema of a free answer"}
                        },
                        "required": ["id", "question"]
                    }
                }
            },
            "required": ["questions"]
        }),
        effects: vec![Effect::Read],
        ui: ToolUi { kind: ToolKind::Other, title: Some("Ask: {title}||Ask the person".into()), ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    title: Option<String>,
    questions: Vec<ArgQuestion>,
}

#[derive(Deserialize)]
struct ArgQuestion {
    id: String,
    question: String,
    #[serde(default)]
    options: Vec<ArgOption>,
    #[serde(default)]
    multiple: bool,
    #[serde(default)]
    schema: Option<Value>,
}

/// An option as an object, or only its label.
#[derive(Deserialize)]
#[serde(untagged)]
enum ArgOption {
    Label(String),
    Full { label: String, description: Option<String> },
}

/// The request a call's arguments make, or why they make none.
pub(crate) fn request(tool_call_id: &str, arguments: &Value) -> Result<QuestionRequest, String> {
    let args: Args = serde_json::from_value(arguments.clone()).map_err(|e| format!("not questions: {e}"))?;
    if args.questions.is_empty() || args.questions.len() > MAX_QUESTIONS {
        return Err(format!("ask 1 to {MAX_QUESTIONS} questions, not {}", args.questions.len()));
    }
    let mut questions: Vec<Question> = Vec::new();
    for q in args.questions {
        let id_ok = (1..=64).contains(&q.id.len())
            && q.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !id_ok || questions.iter().any(|other| other.id == q.id) {
            return Err(format!("`{}` is not a fresh id of a-z, 0-9 and _", q.id));
        }
        if q.question.trim().is_empty() {
            return Err(format!("question `{}` asks nothing", q.id));
        }
        let options: Vec<QuestionOption> = q
            .options
            .into_iter()
            .map(|o| match o {
                ArgOption::Label(label) => QuestionOption { label, description: None },
                ArgOption::Full { label, description } => QuestionOption { label, description },
            })
            .collect();
        if options.len() > MAX_OPTIONS || options.iter().any(|o| o.label.trim().is_empty()) {
            return Err(format!("question `{}`: at most {MAX_OPTIONS} options, each with a label", q.id));
        }
        let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
        let schema = match (&options[..], q.schema) {
            ([], None) => json!({"type": "string"}),
            ([], Some(schema)) => free_schema(&q.id, schema)?,
            (_, _) if q.multiple => json!({"type": "array", "items": {"type": "string", "enum": labels}}),
            (_, _) => json!({"type": "string", "enum": labels}),
        };
        questions.push(Question { id: q.id, question: q.question, options, multiple: q.multiple, schema });
    }
    Ok(QuestionRequest {
        kind: KIND.into(),
        tool_call_id: tool_call_id.into(),
        title: args.title.filter(|t| !t.trim().is_empty()),
        questions,
    })
}

/// A free answer's schema as the model gave it: one of the types a form can ask for.
fn free_schema(id: &str, schema: Value) -> Result<Value, String> {
    let ty = schema.get("type").and_then(Value::as_str);
    match ty {
        Some("string" | "number" | "integer" | "boolean") => Ok(schema),
        _ => Err(format!("question `{id}`: a schema's type is string, number, integer or boolean")),
    }
}

/// The runner: asks the person through the conversation's frontends.
pub(crate) struct QuestionTool {
    pub kernel: KernelSlot,
}

impl ToolRunner for QuestionTool {
    fn run<'a>(
        &'a self,
        call: &'a ToolCall,
        cancel: CancellationToken,
        _: Option<mpsc::Sender<String>>,
    ) -> RunFuture<'a> {
        Box::pin(async move {
            let request = match request(&call.call_id, &call.arguments) {
                Ok(request) => request,
                Err(why) => return ToolCallResult::error(why),
            };
            let conv = self.kernel.get().and_then(|kernel| Some((kernel.live.get(call.conversation_id)?, kernel)));
            let Some((conv, kernel)) = conv else {
                return ToolCallResult::error(format!("`{NAME}` is called by a model during a turn"));
            };
            let Some(turn_id) = *lock(&conv.running) else {
                return ToolCallResult::error(format!("`{NAME}` is called by a model during a turn"));
            };
            match put(&kernel, &conv, turn_id, request, &cancel).await {
                Put::Answered(answers) => answered(answers),
                Put::Declined(what) => declined(&what),
                Put::Dismissed => declined("dismissed the question"),
                Put::Cancelled => ToolCallResult::error("cancelled"),
                Put::Refused(why) => ToolCallResult::error(why),
            }
        })
    }
}

fn answered(answers: Map<String, Value>) -> ToolCallResult {
    let answers = Value::Object(answers);
    ToolCallResult {
        output: answers.to_string(),
        is_error: false,
        structured: Some(json!({"answers": answers})),
        details: None,
        images: Vec::new(),
    }
}

/// No answer: not the tool's failure, the person's choice (the model goes on without it).
fn declined(what: &str) -> ToolCallResult {
    ToolCallResult {
        output: format!("The person {what}."),
        is_error: false,
        structured: None,
        details: None,
        images: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_free_answers_and_schemas_make_a_request() {
        let r = request(
            "c1",
            &json!({"questions": [
                {"id": "db", "question": "Which database?", "options": ["sqlite", {"label": "postgres", "description": "shared"}]},
                {"id": "tags", "question": "Which tags?", "options": ["a", "b"], "multiple": true},
                {"id": "port", "question": "Which port?", "schema": {"type": "integer", "minimum": 1}},
                {"id": "why", "question": "Why?"}
            ]}),
        )
        .unwrap();
        let schemas: Vec<&Value> = r.questions.iter().map(|q| &q.schema).collect();
        assert_eq!(
            schemas,
            [
                &json!({"type": "string", "enum": ["sqlite", "postgres"]}),
                &json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}),
                &json!({"type": "integer", "minimum": 1}),
                &json!({"type": "string"}),
            ]
        );
        assert_eq!(r.questions[0].options[1].description.as_deref(), Some("shared"));
        for (bad, why) in [
            (json!({"questions": []}), "1 to 8"),
            (json!({"questions": [{"id": "A", "question": "x"}]}), "fresh id"),
            (json!({"questions": [{"id": "a", "question": "x"}, {"id": "a", "question": "y"}]}), "fresh id"),
            (json!({"questions": [{"id": "a", "question": " "}]}), "asks nothing"),
            (json!({"questions": [{"id": "a", "question": "x", "schema": {"type": "object"}}]}), "schema's type"),
        ] {
            let err = request("c", &bad).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        assert!(def().turn_only && def().is_read_only());
    }
}
