//! Who consents to a call the kernel would ask about (`superpi mcp --approval`). The MCP
//! specification puts consent on the host: a host obtains its user's consent before it calls a
//! tool. So by default (`host`) a `tools/call` is a consented call (the kernel's `tool.call`
//! `consented`) and `harness_task`'s questions are answered `allow_once`; `elicit` asks the
//! user through MCP elicitation instead, when the client declared it; `refuse` lets nothing
//! askable run. Whatever the setting, the kernel decides within the mode and keeps every
//! refusal that is never askable (deny list, workspace, protected paths, network policy, plan).

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
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

    /// Whether askable calls get an answer on this connection at all: `elicit` only with a
    /// client that can be asked.
    pub(crate) fn answers(self, peer: &Peer<RoleServer>) -> bool {
        match self {
            Approval::Host => true,
            Approval::Elicit => can_elicit(peer),
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
    fn only_host_consents_up_front() {
        assert!(Approval::Host.consents());
        assert!(!Approval::Elicit.consents() && !Approval::Refuse.consents());
        assert_eq!(Approval::default(), Approval::Host);
    }
}
