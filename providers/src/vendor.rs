//! The one place the HTTP layer and the router learn about wire APIs: each vendor module
//! has its row, a [`WireApi`] (`wire_api.rs`), listed in [`WIRE_APIS`]. Adding a provider is a module with its
//! request builder, parser and row, its line in the table, and its `ProviderKind` and
//! `[providers.NAME]` settings; `http.rs` and `router.rs` need no change.

use crate::config::ProviderKind;
pub use crate::wire_api::WireApi;
use crate::{anthropic, gemini, openai};

/// Every wire API, in the order `superpi models` lists them and defaults are chosen.
pub static WIRE_APIS: &[&WireApi] = &[&openai::OPENAI, &anthropic::ANTHROPIC, &gemini::GEMINI];

/// The wire API of `kind`; Chat Completions for anything without one of its own (the mock's
/// recorded streams are OpenAI's).
pub fn wire_api(kind: ProviderKind) -> &'static WireApi {
    WIRE_APIS.iter().copied().find(|api| api.kind == kind).unwrap_or(&openai::OPENAI)
}
