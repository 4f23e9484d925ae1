//! The model's questions (`ui_request` of kind `question`) in the editor: an
//! `elicitation/create` form (ACP's form mode, tied to the session and the asking tool call)
//! when the editor declared `elicitation.form`, and the editor's answer back through
//! `ui.respond`. An editor without forms gets no question: the kernel is told it cannot be
//! asked here (`unavailable`), and the model reads that as the call's error. Permission
//! questions stay `session/request_permission`.
//!
//! A login's URL (`ui_request` of kind `url`, an MCP server's OAuth) goes out as a URL-mode
//! `elicitation/create` to an editor that declared `elicitation.url` (its id the request's),
//! the person's consent back as the action; `elicitation/complete` follows the login.
//!
//! Pure conversions; the session's pump sends the request.

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, ElicitationAction, ElicitationContentValue,
    ElicitationFormMode, ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode, SessionId, ToolCallId,
};
use serde_json::{Map, Value, json};
use superpi_proto::question::{KIND, QuestionAnswer, QuestionRequest, URL_KIND};

/// What the kernel is told when the editor takes no forms.
pub const NO_FORMS: &str = "the editor did not declare ACP elicitation (form mode), so it cannot show questions";

/// The `ui_request` as a question; `None` for any other kind.
pub fn question_request(request: &Map<String, Value>) -> Option<QuestionRequest> {
    if request.get("kind").and_then(Value::as_str) != Some(KIND) {
        return None;
    }
    serde_json::from_value(Value::Object(request.clone())).ok()
}

/// The `elicitation/create` request for a question: one form field per question. `None` when
/// a schema is not one ACP's forms take.
pub fn elicitation(session: &SessionId, request: &QuestionRequest) -> Option<CreateElicitationRequest> {
    let schema: ElicitationSchema = serde_json::from_value(request.form_schema()).ok()?;
    let scope =
        ElicitationSessionScope::new(session.clone()).tool_call_id(ToolCallId::new(request.tool_call_id.clone()));
    Some(CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), request.message()))
}

/// The URL and message of a `ui_request` of kind `url`; `None` for any other.
pub fn url_request(request: &Map<String, Value>) -> Option<(String, String)> {
    if request.get("kind").and_then(Value::as_str) != Some(URL_KIND) {
        return None;
    }
    let url = request.get("url")?.as_str()?.to_string();
    let message = request.get("message").and_then(Value::as_str).unwrap_or("Open this URL").to_string();
    Some((url, message))
}

/// The URL-mode `elicitation/create` of a login, its elicitation id the kernel's request id.
pub fn url_elicitation(session: &SessionId, request_id: &str, url: &str, message: &str) -> CreateElicitationRequest {
    let mode = ElicitationUrlMode::new(ElicitationSessionScope::new(session.clone()), request_id.to_string(), url);
    CreateElicitationRequest::new(mode, message)
}

/// The kernel's outcome for the editor's answer to a URL (accept: the person opens it).
pub fn url_outcome(answer: Option<CreateElicitationResponse>) -> Value {
    match answer.map(|a| a.action) {
        Some(ElicitationAction::Accept(_)) => json!({"action": "accept"}),
        Some(ElicitationAction::Decline) => json!({"action": "decline"}),
        _ => json!({"action": "cancel"}),
    }
}

/// The kernel's outcome for the editor's answer (a failed request, or an unknown action, is
/// a dismissed question).
pub fn outcome(answer: Option<CreateElicitationResponse>) -> Value {
    let answer = match answer.map(|a| a.action) {
        Some(ElicitationAction::Accept(accept)) => QuestionAnswer::Accept(content(accept.content.unwrap_or_default())),
        Some(ElicitationAction::Decline) => QuestionAnswer::Decline,
        _ => QuestionAnswer::Cancel,
    };
    answer.to_outcome()
}

fn content(fields: BTreeMap<String, ElicitationContentValue>) -> Map<String, Value> {
    fields.into_iter().filter_map(|(k, v)| Some((k, serde_json::to_value(v).ok()?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::ElicitationAcceptAction;
    use serde_json::json;

    fn request() -> Map<String, Value> {
        json!({
            "kind": "question", "tool_call_id": "call-1",
            "questions": [
                {"id": "db", "question": "Which database?", "options": [{"label": "sqlite"}, {"label": "postgres"}],
                 "schema": {"type": "string", "enum": ["sqlite", "postgres"]}},
                {"id": "port", "question": "Port?", "schema": {"type": "integer", "minimum": 1}}
            ]
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn a_question_is_a_form_tied_to_its_tool_call_and_the_answer_goes_back() {
        let q = question_request(&request()).unwrap();
        let sent = serde_json::to_value(elicitation(&SessionId::new("1"), &q).unwrap()).unwrap();
        assert_eq!(sent["mode"], "form");
        assert_eq!((sent["sessionId"].clone(), sent["toolCallId"].clone()), (json!("1"), json!("call-1")));
        assert_eq!(sent["requestedSchema"]["required"], json!(["db", "port"]));
        assert_eq!(sent["requestedSchema"]["properties"]["db"]["enum"], json!(["sqlite", "postgres"]));
        assert_eq!(sent["message"], "2 questions");

        let fields = BTreeMap::from([
            ("db".to_string(), ElicitationContentValue::from("postgres")),
            ("port".to_string(), ElicitationContentValue::Integer(5432)),
        ]);
        let accepted = CreateElicitationResponse::new(ElicitationAcceptAction::new().content(fields));
        assert_eq!(outcome(Some(accepted)), json!({"action": "accept", "answers": {"db": "postgres", "port": 5432}}));
        assert_eq!(
            outcome(Some(CreateElicitationResponse::new(ElicitationAction::Decline))),
            json!({"action": "decline"})
        );
        assert_eq!(outcome(None), json!({"action": "cancel"}));
        assert!(question_request(json!({"kind": "read_text_file"}).as_object().unwrap()).is_none());
    }
}
