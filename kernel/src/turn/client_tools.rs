//! Client tools: tools a frontend offers with its prompt (`session.submit` `client_tools`) and
//! runs itself, in the person's front end rather than on this machine. The turn offers them
//! to its model beside the harness's tools (a name the harness already uses is skipped, with
//! a notice); a call is announced like any (`tool_started`), asked of the frontends as a
//! `ui_request` of kind `client_tool`, and waits for `ui.respond` with `{"content", "is_error"}`,
//! the question timeout or the turn's cancel; then its result is stored like any call's. The
//! policy does not decide them: nothing runs here, and the frontend that offered one is the
//! person's own. Kept protocol-neutral: no frontend's names or shapes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use superpi_proto::Event;
use superpi_proto::method::ClientTool;
use superpi_proto::tool::{ToolCallResult, ToolDef, ToolKind, ToolUi};
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::sync::lock;
use crate::turn::pipeline::PlannedCall;
use crate::turn::put_question::ask_ui;

/// The `kind` of a client tool's `ui_request`.
pub(crate) const KIND: &str = "client_tool";

/// At most this many client tools with one prompt.
const MAX_TOOLS: usize = 128;

/// Checks a prompt's client tools: names of 1 to 64 of `a-z A-Z 0-9 _ -`, each once, object
/// schemas.
pub(crate) fn check(tools: &[ClientTool]) -> Result<(), String> {
    if tools.len() > MAX_TOOLS {
        return Err(format!("client_tools: at most {MAX_TOOLS} tools, not {}", tools.len()));
    }
    let mut seen = BTreeSet::new();
    for tool in tools {
        let name = &tool.name;
        let valid =
            (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!("client_tools: `{name}` is not a tool name (1 to 64 of a-z A-Z 0-9 _ -)"));
        }
        if !seen.insert(name.as_str()) {
            return Err(format!("client_tools: `{name}` is named twice"));
        }
        if !tool.input_schema.is_object() {
            return Err(format!("client_tools: the input_schema of `{name}` is not a JSON object"));
        }
    }
    Ok(())
}

/// Adds the client tools submitted with this turn to its tools; returns their names.
pub(crate) fn offer(kernel: &Kernel, conv: &Conversation, turn_id: i64, tools: &mut Vec<ToolDef>) -> BTreeSet<String> {
    let offered = lock(&conv.client_tools).remove(&turn_id).unwrap_or_default();
    let mut names = BTreeSet::new();
    for tool in offered {
        if tools.iter().any(|t| t.name == tool.name) {
            let notice =
                format!("the client's tool `{}` is not offered: the harness has a tool of that name", tool.name);
            conv.emit(kernel, Event::notice(conv.id, Some(turn_id), "warning", notice));
            continue;
        }
        names.insert(tool.name.clone());
        tools.push(def(tool));
    }
    names
}

fn def(tool: ClientTool) -> ToolDef {
    ToolDef {
        name: tool.name,
        description: tool.description,
        input_schema: tool.input_schema,
        ui: ToolUi { kind: ToolKind::Other, ..ToolUi::default() },
        turn_only: true,
        ..ToolDef::default()
    }
}

/// One call of a client tool: announced, asked of the frontends, its answer stored.
pub(crate) async fn execute(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    call: PlannedCall,
    cancel: &CancellationToken,
) {
    let started =
        Event::tool_started(conv.id, Some(turn_id), &call.call_id, &call.name, call.arguments.clone(), vec![]);
    conv.emit(kernel, started);
    let timeout = lock(&conv.policy).as_ref().map(|p| p.question_timeout()).unwrap_or(Duration::from_secs(120));
    let result = ask(kernel, conv, turn_id, &call, timeout, cancel).await;
    super::complete_call(kernel, conv, turn_id, &call, result);
}

async fn ask(
    kernel: &Arc<Kernel>,
    conv: &Arc<Conversation>,
    turn_id: i64,
    call: &PlannedCall,
    timeout: Duration,
    cancel: &CancellationToken,
) -> ToolCallResult {
    let mut request = serde_json::Map::new();
    request.insert("kind".into(), json!(KIND));
    request.insert("tool_call_id".into(), json!(call.call_id));
    request.insert("name".into(), json!(call.name));
    request.insert("arguments".into(), call.arguments.clone());
    let Some((request_id, answer)) = ask_ui(kernel, conv, turn_id, request, timeout, cancel).await else {
        return ToolCallResult::error("the client's tool could not be asked for (no random id)");
    };
    let (outcome, result) = match answer {
        Some(answer) => ("answered", answered(&answer)),
        None if cancel.is_cancelled() => ("cancelled", ToolCallResult::error("cancelled")),
        None => ("timeout", ToolCallResult::error(format!("the client did not answer within {} s", timeout.as_secs()))),
    };
    conv.emit(kernel, Event::ui_resolved(conv.id, Some(turn_id), &request_id, json!({"outcome": outcome})));
    result
}

/// The result a frontend answered: `content` (text, or any JSON as its text) and `is_error`.
fn answered(answer: &Value) -> ToolCallResult {
    let output = match answer.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => return ToolCallResult::error("the client answered without `content`"),
    };
    let is_error = answer.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    ToolCallResult { output, is_error, structured: None, details: None, images: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> ClientTool {
        ClientTool { name: name.into(), description: String::new(), input_schema: schema }
    }

    #[test]
    fn client_tools_need_plain_names_once_and_object_schemas() {
        let schema = json!({"type": "object"});
        assert_eq!(check(&[tool("confirm_step", schema.clone()), tool("pick-colour", schema.clone())]), Ok(()));
        for (tools, needle) in [
            (vec![tool("", schema.clone())], "not a tool name"),
            (vec![tool("a b", schema.clone())], "not a tool name"),
            (vec![tool("x", schema.clone()), tool("x", schema.clone())], "named twice"),
            (vec![tool("x", json!("object"))], "not a JSON object"),
        ] {
            let err = check(&tools).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn an_answer_is_the_calls_result() {
        let ok = answered(&json!({"content": "blue"}));
        assert_eq!((ok.output.as_str(), ok.is_error), ("blue", false));
        let failed = answered(&json!({"content": {"why": "no"}, "is_error": true}));
        assert_eq!((failed.output.as_str(), failed.is_error), ("{\"why\":\"no\"}", true));
        assert!(answered(&json!({})).is_error);
    }
}
