//! The model's questions (`ui_request` of kind `question`) during a `harness_task`: asked of
//! the user through MCP form elicitation (`elicitation/create`, one field per question) when
//! the client declared it, the answer handed to `ui.respond`; a client without elicitation is
//! not asked, and the kernel hears that nobody can answer here. A small module of its own, so
//! the server's protocol revisions change around it.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value};
use superpi_client::KernelClient;
use superpi_proto::question::{KIND, QuestionAnswer, QuestionRequest};

/// What the kernel is told when the client takes no forms.
pub const NO_ELICITATION: &str = "the MCP client did not declare elicitation, so it cannot show questions";

/// The `ui_request` as a question; `None` for any other kind.
pub fn question_request(request: &Map<String, Value>) -> Option<QuestionRequest> {
    if request.get("kind").and_then(Value::as_str) != Some(KIND) {
        return None;
    }
    serde_json::from_value(Value::Object(request.clone())).ok()
}

/// The form elicitation for a question; `None` when a schema is not one MCP forms take.
pub fn elicitation(request: &QuestionRequest) -> Option<ElicitRequestParams> {
    let requested_schema: ElicitationSchema = serde_json::from_value(request.form_schema()).ok()?;
    Some(ElicitRequestParams::FormElicitationParams { meta: None, message: request.message(), requested_schema })
}

/// The kernel's outcome for the user's answer (an error is a dismissed question).
pub fn outcome(result: Option<ElicitResult>) -> Value {
    let answer = match result {
        Some(ElicitResult { action: ElicitationAction::Accept, content, .. }) => {
            QuestionAnswer::Accept(content.and_then(|c| c.as_object().cloned()).unwrap_or_default())
        }
        Some(ElicitResult { action: ElicitationAction::Decline, .. }) => QuestionAnswer::Decline,
        _ => QuestionAnswer::Cancel,
    };
    answer.to_outcome()
}

/// Asks the user and answers the kernel (spawned by the task; the kernel's question timeout
/// bounds the wait).
pub async fn answer(kernel: KernelClient, peer: Peer<RoleServer>, request_id: String, request: QuestionRequest) {
    let form = crate::approval::can_elicit(&peer).then(|| elicitation(&request)).flatten();
    let outcome = match form {
        Some(form) => match peer.create_elicitation(form).await {
            Ok(result) => outcome(Some(result)),
            Err(err) => {
                tracing::info!(request_id, "elicitation failed, the question is dismissed: {err}");
                outcome(None)
            }
        },
        None => QuestionAnswer::Unavailable(NO_ELICITATION.into()).to_outcome(),
    };
    if let Err(err) = kernel.respond_ui(&request_id, outcome).await {
        tracing::debug!(request_id, "ui.respond: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_is_a_form_and_the_users_answer_goes_back() {
        let request = json!({
            "kind": "question", "tool_call_id": "c1",
            "questions": [{"id": "db", "question": "Which database?", "options": [{"label": "sqlite"}],
                           "schema": {"type": "string", "enum": ["sqlite"]}}]
        });
        let q = question_request(request.as_object().unwrap()).unwrap();
        let form = serde_json::to_value(elicitation(&q).unwrap()).unwrap();
        assert_eq!(form["message"], "Which database?");
        assert_eq!(form["requestedSchema"]["properties"]["db"]["enum"], json!(["sqlite"]));
        assert_eq!(form["requestedSchema"]["required"], json!(["db"]));
        let accepted: ElicitResult =
            serde_json::from_value(json!({"action": "accept", "content": {"db": "sqlite"}})).unwrap();
        assert_eq!(outcome(Some(accepted)), json!({"action": "accept", "answers": {"db": "sqlite"}}));
        let declined: ElicitResult = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert_eq!(outcome(Some(declined)), json!({"action": "decline"}));
        assert_eq!(outcome(None), json!({"action": "cancel"}));
    }
}
