//! Who consents to a call the kernel would ask about (`superpi mcp --approval`). The MCP
//! specification puts consent on the host: a host obtains its user's consent before it calls a
//! tool. So by default (`host`) a `tools/call` is a consented call (the kernel's `tool.call`
//! `consented`) and `harness_task`'s questions are answered `allow_once`; `elicit` asks the
//! user through MCP elicitation instead, when the client declared it; `refuse` lets nothing
//! askable run. Whatever the setting, the kernel decides within the mode and keeps every
//! refusal that is never askable (deny list, workspace, protected paths, network policy, plan).

use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer};
use serde_json::Value;
use superpi_client::KernelClient;

/// How long an elicitation waits for the user before the call is refused.
const ASK_TIMEOUT: Duration = Duration::from_secs(300);

/// How many characters of a call's arguments a question shows.
const SHOWN_ARGUMENTS: usize = 400;

/// Who answers for a call the kernel would ask about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Approval {
    /// The MCP host asked its user before calling: askable calls run (within the mode).
    #[default]
    Host,
    /// Ask the user through MCP elicitation when the client declared it; refuse otherwise.
    Elicit,
    /// Refuse every askable call.
    Refuse,
}

impl Approval {
    /// Whether a call reaches the kernel already consented.
    pub fn consents(self) -> bool {
        self == Approval::Host
    }

    /// Whether askable calls of a whole turn get an answer at all: `elicit` only with a client
    /// that can be asked while the request runs, which 2026-07-28 forbids (its questions come
    /// back as `input_required` rounds, which a turn inside one `tools/call` cannot wait on; a
    /// turn run as a task can: see `tasks.rs`).
    pub(crate) fn answers(self, context: &RequestContext<RoleServer>, modern: bool) -> bool {
        match self {
            Approval::Host => true,
            Approval::Elicit => !modern && can_elicit(&context.peer),
            Approval::Refuse => false,
        }
    }
}

/// Whether the client declared form elicitation in `initialize`.
pub(crate) fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
}

/// What the user is asked: the tool, its arguments (shortened), why the kernel asks and how risky
/// it says the call is.
pub fn question(tool: &str, arguments: &Value, reason: &str, risk: Option<&str>) -> String {
    let mut shown = arguments.to_string();
    if shown.chars().count() > SHOWN_ARGUMENTS {
        shown = shown.chars().take(SHOWN_ARGUMENTS).collect::<String>() + "…";
    }
    let risk = risk.map(|r| format!(" (risk: {r})")).unwrap_or_default();
    format!(
        "superpi asks to run the tool `{tool}` with {shown}\nWhy it asks: {reason}{risk}\n\
         Accept to allow this call once; decline to refuse it."
    )
}

/// Answers one of a `harness_task` turn's questions (`permission.respond`): `allow_once` for
/// `host`, the user's answer for `elicit`, `reject_once` otherwise.
pub(crate) async fn answer(
    kernel: KernelClient,
    peer: Peer<RoleServer>,
    approval: Approval,
    request_id: String,
    question: String,
) {
    let allowed = match approval {
        Approval::Host => true,
        Approval::Elicit => elicit(&peer, question).await,
        Approval::Refuse => false,
    };
    let option = if allowed { "allow_once" } else { "reject_once" };
    tracing::info!(request_id, option, ?approval, "answering a harness_task question");
    if let Err(err) = kernel.respond_permission(&request_id, option).await {
        // The question may be gone already (timeout, cancel): it failed closed.
        tracing::debug!(request_id, "permission.respond: {err}");
    }
}

/// The key of the consent question in an `input_required` round (2026-07-28).
pub const CONSENT_INPUT: &str = "superpi.consent";

/// Whether a 2026-07-28 request's client declared form elicitation in its `_meta`: the
/// capabilities travel with each request, not with a handshake.
pub(crate) fn can_elicit_inline(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().and_then(|caps| caps.elicitation).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The `input_required` round that asks the user about one call (a form with no fields).
pub(crate) fn input_required(message: String) -> InputRequiredResult {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: ElicitationSchema::new(Default::default()),
    };
    let ask = InputRequest::Elicitation(ElicitRequest::new(params));
    InputRequiredResult::from_input_requests(InputRequests::from([(CONSENT_INPUT.to_string(), ask)]))
}

/// The user's answer in a repeated call's `inputResponses`: `Some(true)` only for `accept`,
/// `Some(false)` for any other answer, `None` when the call carries none (ask first).
pub(crate) fn inline_answer(responses: Option<&InputResponses>) -> Option<bool> {
    let answer = responses?.get(CONSENT_INPUT)?;
    let action = answer.get("action").cloned().and_then(|a| serde_json::from_value::<ElicitationAction>(a).ok());
    Some(action == Some(ElicitationAction::Accept))
}

/// Asks the user through elicitation (a form with no fields: accept or decline). True only
/// when the user accepted; a decline, a dismissal, an error or the timeout refuse.
pub(crate) async fn elicit(peer: &Peer<RoleServer>, message: String) -> bool {
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: ElicitationSchema::new(Default::default()),
    };
    match peer.create_elicitation_with_timeout(params, Some(ASK_TIMEOUT)).await {
        Ok(result) => result.action == ElicitationAction::Accept,
        Err(err) => {
            tracing::info!("elicitation failed, the call is refused: {err}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_question_names_the_call_and_why() {
        let q = question("bash", &json!({"command": "touch a"}), "`touch` is not in the allow list", Some("medium"));
        assert_eq!(
            q,
            "superpi asks to run the tool `bash` with {\"command\":\"touch a\"}\n\
             Why it asks: `touch` is not in the allow list (risk: medium)\n\
             Accept to allow this call once; decline to refuse it."
        );
        let long = question("write", &json!({"content": "x".repeat(1000)}), "r", None);
        assert!(long.contains("x…\nWhy it asks: r\n"), "{long}");
        assert!(long.len() < 600);
    }

    #[test]
    fn an_inline_answer_allows_only_on_accept() {
        assert_eq!(inline_answer(None), None);
        let answer = |v: Value| InputResponses::from([(CONSENT_INPUT.to_string(), v)]);
        assert_eq!(inline_answer(Some(&answer(json!({"action": "accept", "content": {}})))), Some(true));
        assert_eq!(inline_answer(Some(&answer(json!({"action": "decline"})))), Some(false));
        assert_eq!(inline_answer(Some(&answer(json!({"action": "maybe"})))), Some(false));
        assert_eq!(inline_answer(Some(&answer(json!("accept")))), Some(false));
        assert_eq!(
            inline_answer(Some(&InputResponses::from([("other".to_string(), json!({"action": "accept"}))]))),
            None
        );
        let round = serde_json::to_value(input_required("may I?".into())).unwrap();
        assert_eq!(round["resultType"], "input_required");
        assert_eq!(round["inputRequests"][CONSENT_INPUT]["method"], "elicitation/create");
        assert_eq!(round["inputRequests"][CONSENT_INPUT]["params"]["message"], "may I?");
    }

    #[test]
    fn only_host_consents_up_front() {
        assert!(Approval::Host.consents());
        assert!(!Approval::Elicit.consents() && !Approval::Refuse.consents());
        assert_eq!(Approval::default(), Approval::Host);
    }
}
