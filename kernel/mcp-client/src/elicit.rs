//! Questions a server asks during a call: MCP elicitation (`elicitation/create` from a 2025
//! server, or a 2026-07-28 `input_required` round, which rmcp turns into the same request).
//! The call's caller hands an [`Asker`] (the kernel's puts the question to the person, as
//! `ask_question` does); a call with none (a `tool.call`), or a form nobody answers, is
//! declined. The form is a server's flat object schema of string, number, integer, boolean
//! and enum fields; a URL elicitation is declined (superpi declares forms only).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

/// What a server asks: its name, its message, and the JSON Schema of the answer (an object).
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    pub server: String,
    pub message: String,
    pub schema: serde_json::Value,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    Accept(serde_json::Map<String, serde_json::Value>),
    Decline,
    Cancel,
}

/// Puts a server's question to whoever can answer for the call's caller.
pub trait Asker: Send + Sync {
    fn ask(&self, question: Elicitation) -> Pin<Box<dyn Future<Output = Elicited> + Send + '_>>;
}

/// The askers of a server's calls in flight, latest last: a question goes to the latest
/// (a server's question names no call; one call at a time is the common case).
#[derive(Clone, Default)]
pub(crate) struct Askers(Arc<Mutex<Vec<InFlight>>>);

/// A call in flight (by a number of its own) and its asker.
type InFlight = (u64, Arc<dyn Asker>);

/// Removes its asker when the call ends.
pub(crate) struct Asking(Askers, u64);

impl Drop for Asking {
    fn drop(&mut self) {
        crate::lock(&self.0.0).retain(|(id, _)| *id != self.1);
    }
}

impl Askers {
    pub fn push(&self, asker: Option<Arc<dyn Asker>>) -> Option<Asking> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let asker = asker?;
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        crate::lock(&self.0).push((id, asker));
        Some(Asking(self.clone(), id))
    }

    /// The answer to a server's request.
    pub async fn answer(&self, server: &str, request: ElicitRequestParams) -> ElicitResult {
        let declined = ElicitResult::new(ElicitationAction::Decline);
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            tracing::info!(server, "a URL elicitation is declined");
            return declined;
        };
        let Some(asker) = crate::lock(&self.0).last().map(|(_, a)| a.clone()) else {
            tracing::info!(server, "a question with no call that can ask the person is declined");
            return declined;
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let question = Elicitation { server: server.to_string(), message, schema };
        match asker.ask(question).await {
            Elicited::Accept(content) => ElicitResult::new(ElicitationAction::Accept).with_content(content.into()),
            Elicited::Decline => declined,
            Elicited::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}
