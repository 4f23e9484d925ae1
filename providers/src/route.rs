//! Where a model name leads ([`Route`]) and how its requests authenticate ([`Auth`]): the
//! router's answer, which the HTTP layer and every wire API read.

use std::time::Duration;

use crate::config::{CommandRunner, ProviderKind};

/// How a request is authenticated.
#[derive(Debug, Clone, PartialEq)]
pub enum Auth {
    /// No credentials (a local compatible server).
    None,
    Key(String),
    /// A program prints a bearer token (cached, see [`crate::config::VendorConfig::auth_command`]).
    Command {
        argv: Vec<String>,
        timeout: Duration,
        runner: CommandRunner,
    },
}

/// Where a model name leads.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub kind: ProviderKind,
    /// The name the user gave.
    pub name: String,
    /// The id sent upstream.
    pub model: String,
    /// The endpoint's base (without the per-API path).
    pub base_url: String,
    pub auth: Auth,
    /// See [`crate::config::VendorConfig::thinking_budget`].
    pub thinking_budget: Option<u32>,
    /// See [`crate::config::VendorConfig::reasoning_effort`].
    pub reasoning_effort: Option<String>,
    /// An OpenAI reasoning model: takes `max_completion_tokens` (and `reasoning_effort`)
    /// instead of `max_tokens`.
    pub reasoning: bool,
    /// Served through OpenAI's Responses API rather than the vendor's own
    /// ([`crate::vendor::wire_for`]).
    pub responses: bool,
    /// The vendor's built-in tool search may be used where it serves the model (off with
    /// `builtin_tool_search = false` in the vendor's or the model's settings).
    pub tool_search: bool,
}
