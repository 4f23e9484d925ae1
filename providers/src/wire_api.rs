//! What a wire API is ([`WireApi`]): a vendor module's facts (its variables, endpoint, name
//! prefixes, models), the request it builds ([`WireRequest`]) and the parser of its event
//! stream ([`WireParser`]), as one table row. The HTTP layer drives these; the table of every wire API is
//! `vendor.rs`.

use std::borrow::Cow;

use crate::assemble::StreamBuilder;
use crate::config::ProviderKind;
use crate::route::Route;
use crate::sse::SseEvent;
use crate::stream::{ModelRequest, ProviderError};
use superpi_proto::Effort;

/// A model API spoken over HTTP with an event stream: one table row per vendor module, its
/// facts as data and its behaviour as functions.
pub struct WireApi {
    pub kind: ProviderKind,
    /// The variable holding its key (`OPENAI_API_KEY`).
    pub key_var: &'static str,
    /// The variable overriding its endpoint (`OPENAI_BASE_URL`).
    pub base_url_var: &'static str,
    pub default_base_url: &'static str,
    /// Model name prefixes routed to it, and whether the prefix is stripped from the id sent
    /// upstream (`openai/` is, `gpt-` is not).
    pub name_prefixes: &'static [(&'static str, bool)],
    /// What `superpi models` lists when the settings name none.
    pub builtin_models: &'static [&'static str],
    /// The header carrying a key, and what stands before the key in it (`Bearer `).
    pub key_header: (&'static str, &'static str),
    /// Whether an endpoint without a key configures it (a local compatible server).
    pub keyless_with_base_url: bool,
    /// Why an upstream model id cannot be served, when it cannot.
    pub unsupported: fn(&str) -> Option<String>,
    /// Whether the model takes reasoning settings (OpenAI's o-series and gpt-5).
    pub is_reasoning_model: fn(&str) -> bool,
    /// The thinking efforts an upstream model id takes, from the least (`reasoning`: it is a
    /// reasoning model by [`WireApi::is_reasoning_model`] or by its entry); none without a
    /// thinking setting.
    pub efforts: fn(&str, bool) -> &'static [Effort],
    /// A tool name as this API takes it (the HTTP layer maps calls back to the original);
    /// `crate::wire::plain_name` (`^[a-zA-Z0-9_-]{1,64}$`) for OpenAI and Anthropic.
    pub tool_name: for<'a> fn(&'a str) -> Cow<'a, str>,
    pub build_request: fn(&Route, &ModelRequest) -> WireRequest,
    /// Whether `build_request` sends [`ModelRequest::output_schema`] in the API's own
    /// structured-output mode (OpenAI's `response_format`, the Responses API's `text.format`).
    pub structured_output: bool,
    /// Whether the API's built-in tool search serves an upstream model id
    /// ([`crate::tool_search`]).
    pub tool_search: fn(&str) -> bool,
    /// The request to send once instead of one the API refused (before streaming) for
    /// something the account lacks rather than a mistake (OpenAI's reasoning summaries for an
    /// organisation that is not verified); `None` when the refusal stands.
    pub adjust: fn(&WireRequest, &ProviderError) -> Option<WireRequest>,
    /// A parser for one response's event stream.
    pub parser: fn() -> Box<dyn WireParser>,
}

impl WireApi {
    /// The header and value that carry `key`.
    pub fn key_header(&self, key: &str) -> (&'static str, String) {
        let (name, scheme) = self.key_header;
        (name, format!("{scheme}{key}"))
    }
}

/// For [`WireApi::parser`]: a fresh `P`.
pub fn parser_of<P: WireParser + Default + 'static>() -> Box<dyn WireParser> {
    Box::new(P::default())
}

/// For [`WireApi::unsupported`] of an API that serves every id it is routed.
pub fn serves_every_model(_model: &str) -> Option<String> {
    None
}

/// For [`WireApi::adjust`] of an API whose refusals always stand.
pub fn refusals_stand(_request: &WireRequest, _error: &ProviderError) -> Option<WireRequest> {
    None
}

/// For [`WireApi::is_reasoning_model`] of an API without reasoning settings.
pub fn no_reasoning_settings(_model: &str) -> bool {
    false
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
