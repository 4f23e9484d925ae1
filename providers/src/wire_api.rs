//! What a wire API is ([`WireApi`]): a vendor module's facts (its variables, endpoint, name
//! prefixes, models), the request it builds ([`WireRequest`]) and the parser of its event
//! stream ([`WireParser`]). The HTTP layer drives these; the table of every wire API is
//! `vendor.rs`.

use std::borrow::Cow;

use crate::assemble::StreamBuilder;
use crate::config::ProviderKind;
use crate::route::Route;
use crate::sse::SseEvent;
use crate::stream::{ModelRequest, ProviderError};

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

/// A vendor's reading of its event stream.
pub trait WireParser: Send {
    /// One server-sent event.
    fn event(&mut self, event: &SseEvent, out: &mut StreamBuilder) -> Result<(), ProviderError>;
    /// The body ended: emit `Done` if the answer was complete, or return the cut as an error.
    fn end(&mut self, out: &mut StreamBuilder) -> Result<(), ProviderError>;
}

/// A request ready to send (auth headers are added by the provider).
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}
