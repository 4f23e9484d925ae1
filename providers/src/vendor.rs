//! The one place the HTTP layer and the router learn about wire APIs: each vendor module
//! implements [`WireApi`] and is listed in [`WIRE_APIS`]. Adding a provider is a module with its
//! request builder, parser and this trait, its line in the table, and its `ProviderKind` and
//! `[providers.NAME]` settings; `http.rs` and `router.rs` need no change.

use std::borrow::Cow;

use crate::config::ProviderKind;
use crate::http::{WireParser, WireRequest};
use crate::router::Route;
use crate::stream::ModelRequest;
use crate::{anthropic, gemini, openai};

/// A model API spoken over HTTP with an event stream.
pub trait WireApi: Send + Sync {
    fn kind(&self) -> ProviderKind;
    /// The variable holding its key (`OPENAI_API_KEY`).
    fn key_var(&self) -> &'static str;
    /// The variable overriding its endpoint (`OPENAI_BASE_URL`).
    fn base_url_var(&self) -> &'static str;
    fn default_base_url(&self) -> &'static str;
    /// Model name prefixes routed to it, and whether the prefix is stripped from the id sent
    /// upstream (`openai/` is, `gpt-` is not).
    fn name_prefixes(&self) -> &'static [(&'static str, bool)];
    /// What `superpi models` lists when the settings name none.
    fn builtin_models(&self) -> &'static [&'static str];
    /// Whether an endpoint without a key configures it (a local compatible server).
    fn keyless_with_base_url(&self) -> bool {
        false
    }
    /// Why an upstream model id cannot be served, when it cannot.
    fn unsupported(&self, _model: &str) -> Option<String> {
        None
    }
    /// Whether the model takes reasoning settings (OpenAI's o-series and gpt-5).
    fn is_reasoning_model(&self, _model: &str) -> bool {
        false
    }
    /// The header carrying a key.
    fn key_header(&self, key: &str) -> (&'static str, String);
    /// A tool name as this API takes it (the HTTP layer maps calls back to the original);
    /// by default `^[a-zA-Z0-9_-]{1,64}$`, as OpenAI and Anthropic take them.
    fn tool_name<'a>(&self, name: &'a str) -> Cow<'a, str> {
        crate::wire::plain_name(name)
    }
    fn build_request(&self, route: &Route, request: &ModelRequest) -> WireRequest;
    fn parser(&self) -> Box<dyn WireParser>;
}

/// Every wire API, in the order `superpi models` lists them and defaults are chosen.
pub static WIRE_APIS: &[&dyn WireApi] = &[&openai::OpenAi, &anthropic::Anthropic, &gemini::Gemini];

/// The wire API of `kind`; Chat Completions for anything without one of its own (the mock's
/// recorded streams are OpenAI's).
pub fn wire_api(kind: ProviderKind) -> &'static dyn WireApi {
    WIRE_APIS.iter().copied().find(|api| api.kind() == kind).unwrap_or(&openai::OpenAi)
}
