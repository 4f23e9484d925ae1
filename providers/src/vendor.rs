//! The one place the HTTP layer and the router learn about wire APIs: each vendor module
//! has its row, a [`WireApi`] (`wire_api.rs`), listed in [`WIRE_APIS`]; a vendor's second API
//! (OpenAI's Responses API) is a row of its own that [`wire_for`] picks for the routes that need
//! it. Adding a provider is a module with its
//! request builder, parser and row, its line in the table, and its `ProviderKind` and
//! `[providers.NAME]` settings; `http.rs` and `router.rs` need no change.

use crate::config::ProviderKind;
use crate::route::Route;
pub use crate::wire_api::WireApi;
use crate::{anthropic, gemini, openai, openai_responses};

/// Every wire API, in the order `superpi models` lists them and defaults are chosen.
pub static WIRE_APIS: &[&WireApi] = &[&openai::OPENAI, &anthropic::ANTHROPIC, &gemini::GEMINI];

/// The wire API of `kind`; Chat Completions for anything without one of its own (the mock's
/// recorded streams are OpenAI's).
pub fn wire_api(kind: ProviderKind) -> &'static WireApi {
    WIRE_APIS.iter().copied().find(|api| api.kind == kind).unwrap_or(&openai::OPENAI)
}

/// The wire API a route's requests speak: OpenAI's Responses API for the routes that need it
/// ([`Route::responses`]), otherwise its vendor's own.
pub fn wire_for(route: &Route) -> &'static WireApi {
    if route.responses { &openai_responses::RESPONSES } else { wire_api(route.kind) }
}
