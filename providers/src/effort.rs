//! Thinking effort per model: which levels a model takes (each wire API's
//! [`crate::wire_api::WireApi::efforts`], read here by model name). A conversation's effort
//! ([`crate::ModelRequest::effort`]) wins over the provider settings' `reasoning_effort` and
//! `thinking_budget`; each request builder sends a level the model lacks as its nearest one.

pub use superpi_proto::Effort;

use crate::config::{ProviderKind, ProvidersConfig};
use crate::router::model_parts;
use crate::vendor::wire_api;

/// The levels `model` takes, from the least; none for a model without a thinking setting.
/// The mock takes every level (and says which it was sent).
pub fn levels(model: &str, config: &ProvidersConfig) -> &'static [Effort] {
    let (kind, upstream, entry) = model_parts(model, config);
    if kind == ProviderKind::Mock {
        return &Effort::ALL;
    }
    let api = wire_api(kind);
    let reasoning = entry.is_some_and(|e| e.reasoning_effort.is_some()) || (api.is_reasoning_model)(&upstream);
    (api.efforts)(&upstream, reasoning)
}

/// Why `model` cannot be set to `effort`, or `None` when it can.
pub fn refusal(model: &str, effort: Effort, config: &ProvidersConfig) -> Option<String> {
    let levels = levels(model, config);
    if levels.contains(&effort) {
        return None;
    }
    if levels.is_empty() {
        return Some(format!("model `{model}` has no thinking effort setting"));
    }
    let names: Vec<&str> = levels.iter().map(|l| l.as_str()).collect();
    Some(format!("model `{model}` takes the thinking efforts {}, not `{effort}`", names.join(", ")))
}
